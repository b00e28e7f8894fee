//! The engine's tests run on both backends: each test takes a [`Backend`]
//! and [`on_both!`] makes a `sqlite::…` and a `postgres::…` test of it, so
//! one suite states the engine's behaviour (search, filters, knowledge
//! graph, counts, isolation, drawers) and both stores must meet it.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock};

use mempalace_core::Timestamp;
use mempalace_core::time::{DayEdge, parse_timestamp};
use mempalace_embed::Embedder;
use mempalace_embed::minilm::MiniLm;
use mempalace_postgres::testing::TestSchema;
use mempalace_sqlite::{SqliteOptions, SqliteStore};
use mempalace_store::Store;

/// The MiniLM model in `MEMPALACE_MODEL_DIR` (scripts/test.sh fetches
/// it), loaded once per test binary.
#[allow(dead_code, clippy::disallowed_methods)]
pub fn minilm() -> Arc<dyn Embedder> {
    static MODEL: OnceLock<Arc<MiniLm>> = OnceLock::new();
    let root = std::env::var_os("MEMPALACE_MODEL_DIR")
        .map(std::path::PathBuf::from)
        .expect("MEMPALACE_MODEL_DIR is not set; run ./scripts/test.sh (it fetches the models)");
    MODEL
        .get_or_init(|| Arc::new(MiniLm::load(&mempalace_embed::files::minilm_dir(&root)).expect("load MiniLM")))
        .clone()
}

thread_local! {
    /// Seconds since the epoch that [`test_clock`] reports on this test's
    /// thread; each test sets it (tests run in parallel).
    static NOW: AtomicI64 = const { AtomicI64::new(0) };
}

/// A palace clock the test sets with [`set_now`].
#[allow(dead_code)]
pub fn test_clock() -> Timestamp {
    Timestamp::from_timestamp(NOW.with(|now| now.load(Ordering::SeqCst)), 0).expect("test clock in range")
}

/// Sets [`test_clock`] on this thread.
#[allow(dead_code)]
pub fn set_now(text: &str) {
    NOW.with(|now| now.store(parse_timestamp(text, "now", DayEdge::Start).unwrap().timestamp(), Ordering::SeqCst));
}

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

#[allow(dead_code)]
/// 165 distinct distractor sentences from varied templates.
pub fn distractors() -> Vec<String> {
    let subjects = [
        "The finance team",
        "Our QA lead",
        "The data pipeline group",
        "Marco",
        "The design review board",
        "The mobile squad",
        "Priya",
        "The support desk",
        "The research group",
        "Our landlord",
        "The legal department",
    ];
    let verbs = [
        "scheduled a workshop about",
        "wrote a long report on",
        "is still evaluating",
        "complained loudly about",
        "presented early results on",
        "ordered new equipment for",
        "updated the wiki page on",
        "is hiring someone for",
        "cancelled the session on",
        "proposed a small budget for",
        "asked for volunteers to help with",
        "published a newsletter about",
        "opened a discussion thread on",
        "drafted a policy for",
        "ran a survey about",
    ];
    let objects = [
        "accessibility audits",
        "the onboarding checklist",
        "quarterly revenue forecasts",
        "solar panels for the roof",
        "the sales dashboard",
        "keyboard shortcuts",
        "the winter party",
        "vendor contracts",
        "password rotation rules",
        "the podcast launch",
        "bicycle parking",
        "translation memory tools",
        "the internship program",
        "office plants",
        "load balancer settings",
    ];
    let mut out = Vec::new();
    for i in 0..165 {
        let s = subjects[i % subjects.len()];
        // Every (subject, verb) pair once: 165 distinct facts, not a few
        // templates repeated with another week (which a correct duplicate
        // check files as distinct drawers anyway).
        let v = verbs[(i / subjects.len()) % verbs.len()];
        let o = objects[(i * 7 + i / 11) % objects.len()];
        out.push(format!("{s} {v} {o} during week {} of the project.", i % 52 + 1));
    }
    out.sort();
    out.dedup();
    out
}
