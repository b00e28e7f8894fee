//! Test support (feature `testing`): a schema of its own on the test
//! server for each test, dropped at the end, so tests run in parallel on
//! one throwaway cluster.
//!
//! The server comes from `MEMPALACE_TEST_DATABASE_URL` (scripts/test.sh
//! starts a cluster and sets it). Without it a test that asks for
//! PostgreSQL fails, naming what to do — it never passes without having
//! run — unless `MEMPALACE_TEST_POSTGRES=skip` asks to skip explicitly.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::{PgOptions, PgStore};

/// The test server's URL; `None` only when skipping was asked for.
#[allow(clippy::disallowed_methods)] // test support: the test run's environment names the server
pub fn server() -> Option<String> {
    match std::env::var("MEMPALACE_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("MEMPALACE_TEST_POSTGRES").as_deref() == Ok("skip") => {
            tracing::warn!("PostgreSQL tests skipped (MEMPALACE_TEST_POSTGRES=skip)");
            None
        }
        _ => panic!(
            "MEMPALACE_TEST_DATABASE_URL is not set: the PostgreSQL tests need a server. Run ./scripts/test.sh \
             (it starts one), or `scripts/postgres.sh start` and export the URL it prints \
             (MEMPALACE_TEST_POSTGRES=skip skips these tests deliberately)"
        ),
    }
}

/// A schema of its own on the test server; dropped with this value.
pub struct TestSchema {
    /// A URL whose `search_path` is the schema (then `public`, where the
    /// `vector` extension lives).
    pub url: String,
    /// The schema's name.
    pub name: String,
    admin: String,
}

impl TestSchema {
    /// A new, empty schema on the server at `admin`.
    pub fn new(admin: &str) -> Self {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let name = format!("t_{}_{}_{nanos}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
        execute(admin, &format!("DROP SCHEMA IF EXISTS {name} CASCADE; CREATE SCHEMA {name}"));
        let separator = if admin.contains('?') { '&' } else { '?' };
        let url = format!("{admin}{separator}options=-csearch_path%3D{name}%2Cpublic");
        Self { url, name, admin: admin.to_string() }
    }

    /// A new schema on the test server; `None` when skipping was asked for.
    pub fn on_test_server() -> Option<Self> {
        server().map(|admin| Self::new(&admin))
    }

    /// Opens a store on the schema (as one process would).
    pub fn open(&self) -> PgStore {
        PgStore::open(&self.url, PgOptions { max_connections: 8, ..PgOptions::default() })
            .expect("open the test palace on PostgreSQL")
    }

    /// Runs SQL on the server, outside any store.
    pub fn execute(&self, statements: &str) {
        execute(&self.admin, statements);
    }
}

impl Drop for TestSchema {
    fn drop(&mut self) {
        execute(&self.admin, &format!("DROP SCHEMA IF EXISTS {} CASCADE", self.name));
    }
}

/// Runs SQL on its own connection.
fn execute(url: &str, statements: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("test runtime");
    runtime.block_on(async {
        let (client, connection) =
            tokio_postgres::connect(url, tokio_postgres::NoTls).await.expect("connect to the test server");
        tokio::spawn(connection);
        client.batch_execute(statements).await.expect("run SQL on the test server");
    });
}
