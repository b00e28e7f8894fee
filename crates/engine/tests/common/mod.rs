//! The engine's tests run on both backends: each test takes a [`Backend`]
//! and [`on_both!`] makes a `sqlite::…` and a `postgres::…` test of it, so
//! one suite states the engine's behaviour (search, filters, knowledge
//! graph, counts, isolation, drawers) and both stores must meet it.

use std::sync::Arc;

use mempalace_postgres::testing::TestSchema;
use mempalace_sqlite::{SqliteOptions, SqliteStore};
use mempalace_store::Store;

/// Which store a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// One SQLite file in a temporary directory.
    Sqlite,
    /// A schema of its own on the test PostgreSQL server.
    Postgres,
}

/// Keeps a test's palace alive (its directory or schema) until dropped.
#[allow(dead_code)]
pub enum Fixture {
    /// The SQLite file's directory.
    Dir(tempfile::TempDir),
    /// The PostgreSQL schema.
    Schema(TestSchema),
}

/// A fresh, empty store; `None` when PostgreSQL tests are deliberately skipped.
pub fn store(backend: Backend) -> Option<(Fixture, Arc<dyn Store>)> {
    match backend {
        Backend::Sqlite => {
            let dir = tempfile::tempdir().expect("tempdir");
            let store = SqliteStore::open(
                &dir.path().join("palace.db"),
                SqliteOptions { create: true, ..SqliteOptions::default() },
            )
            .expect("open the SQLite palace");
            Some((Fixture::Dir(dir), Arc::new(store)))
        }
        Backend::Postgres => {
            let schema = TestSchema::on_test_server()?;
            let store = schema.open();
            Some((Fixture::Schema(schema), Arc::new(store)))
        }
    }
}

/// Makes `sqlite::NAME` and `postgres::NAME` tests of each `fn NAME(Backend)`.
#[macro_export]
macro_rules! on_both {
    ($($name:ident),+ $(,)?) => {
        mod sqlite {
            $( #[test] fn $name() { super::$name($crate::common::Backend::Sqlite) } )+
        }
        mod postgres {
            $(
                #[test]
                fn $name() {
                    if mempalace_postgres::testing::server().is_some() {
                        super::$name($crate::common::Backend::Postgres)
                    }
                }
            )+
        }
    };
}
