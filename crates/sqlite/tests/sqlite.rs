//! The SQLite backend against the conformance suite, plus what only a file
//! backend has: several handles on one file, reopening, foreign files.

use std::path::Path;
use std::sync::Arc;

use mempalace_core::WorkspaceId;
use mempalace_sqlite::{SqliteOptions, SqliteStore};
use mempalace_store::conformance::drawer;
use mempalace_store::{Store, StoreError, StoreRead, StoreWrite};

fn open(path: &Path) -> SqliteStore {
    SqliteStore::open(path, SqliteOptions { create: true, ..SqliteOptions::default() }).expect("open palace")
}

fn fresh() -> Option<(tempfile::TempDir, Arc<dyn Store>)> {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(&dir.path().join("palace.db"));
    Some((dir, Arc::new(store)))
}

mempalace_store::conformance_suite!(fresh);

#[test]
fn a_second_handle_sees_writes_on_its_next_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("palace.db");
    let writer = open(&path);
    let reader = open(&path);
    let ws = WorkspaceId::default_workspace();
    assert_eq!(reader.taxonomy(&ws).unwrap().total_drawers, 0);
    let d = drawer(&ws, "w", "r", "written by the other handle");
    writer.put_drawers(std::slice::from_ref(&d)).unwrap();
    assert_eq!(reader.taxonomy(&ws).unwrap().total_drawers, 1);
    assert!(reader.drawer(&ws, &d.id).unwrap().is_some());
}

#[test]
fn data_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("palace.db");
    let ws = WorkspaceId::default_workspace();
    let d = drawer(&ws, "w", "r", "persisted");
    open(&path).put_drawers(std::slice::from_ref(&d)).unwrap();
    let again = SqliteStore::open(&path, SqliteOptions::default()).unwrap();
    assert_eq!(again.drawer(&ws, &d.id).unwrap().unwrap(), d);
    let read_only = SqliteStore::open(&path, SqliteOptions { read_only: true, ..SqliteOptions::default() }).unwrap();
    assert_eq!(read_only.taxonomy(&ws).unwrap().total_drawers, 1);
    assert!(read_only.put_drawers(&[drawer(&ws, "w", "r", "nope")]).is_err());
}

#[test]
fn missing_palaces_are_not_created_unless_asked() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("palace.db");
    let err = SqliteStore::open(&path, SqliteOptions::default()).unwrap_err();
    assert!(matches!(err, StoreError::Missing { .. }), "{err}");
    assert!(!path.exists());
}

#[test]
fn foreign_files_are_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("palace.db");
    let garbage: Vec<u8> = (0..4096u32).map(|i| (i * 7 + 3) as u8).collect();
    std::fs::write(&path, &garbage).unwrap();
    let err = SqliteStore::open(&path, SqliteOptions { create: true, ..SqliteOptions::default() }).unwrap_err();
    assert!(matches!(err, StoreError::NotAPalace { .. }), "{err}");
    assert_eq!(std::fs::read(&path).unwrap(), garbage);
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 1, "no -wal or -shm files were created: {names:?}");
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("palace.db");
    drop(open(&path));
    let conn = rusqlite_bump(&path);
    drop(conn);
    let err = SqliteStore::open(&path, SqliteOptions::default()).unwrap_err();
    assert!(matches!(err, StoreError::SchemaTooNew { .. }), "{err}");
}

fn rusqlite_bump(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.pragma_update(None, "user_version", mempalace_sqlite::SCHEMA_VERSION + 1).unwrap();
    conn
}

#[test]
fn damaged_derived_data_is_detected_and_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("palace.db");
    let store = open(&path);
    let ws = WorkspaceId::default_workspace();
    let drawers: Vec<_> = (0..10).map(|i| drawer(&ws, "w", "r", &format!("drawer {i}"))).collect();
    store.put_drawers(&drawers).unwrap();
    {
        let conn = rusqlite::Connection::open(&path).unwrap();
        conn.execute_batch("UPDATE room_counts SET drawers = 99; DELETE FROM drawers_fts WHERE rowid = 3;").unwrap();
    }
    let checks = store.verify().unwrap();
    let failing: Vec<_> = checks.iter().filter(|c| !c.ok).map(|c| c.name.as_str()).collect();
    assert_eq!(failing, vec!["lexical_index", "room_counts"], "{checks:?}");
    assert!(checks.iter().filter(|c| !c.ok).all(|c| c.derived));
    let after = store.rebuild_derived().unwrap();
    assert!(after.iter().all(|c| c.ok), "{after:?}");
    assert_eq!(store.taxonomy(&ws).unwrap().total_drawers, 10);
}

/// Regression (issue 2 benchmark): when a read-only connection closed last,
/// the WAL stayed full and every later process scanned it on open (status
/// took 25 ms instead of 3 at 100,000 drawers). Closing a store must leave
/// no WAL behind.
#[test]
fn closing_a_store_checkpoints_and_removes_the_wal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("palace.db");
    let store = open(&path);
    let ws = WorkspaceId::default_workspace();
    let drawers: Vec<_> =
        (0..2_000).map(|i| drawer(&ws, "w", "r", &format!("drawer {i} {}", "x".repeat(300)))).collect();
    store.put_drawers(&drawers).unwrap();
    assert_eq!(store.taxonomy(&ws).unwrap().total_drawers, 2_000, "a read leaves a reader connection in the pool");
    drop(store);
    assert!(!dir.path().join("palace.db-wal").exists(), "the WAL was left behind");
}

/// STYLE §7: a palace written by each released schema opens and migrates.
/// `fixtures/palace-v1.db` was written by schema version 1 (the CLI at
/// revision 592306e).
#[test]
fn a_schema_v1_palace_migrates_and_keeps_its_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("palace.db");
    std::fs::copy(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/palace-v1.db"), &path).unwrap();
    let store = SqliteStore::open(&path, SqliteOptions::default()).expect("v1 palace opens");
    assert_eq!(store.info().unwrap().schema_version, mempalace_sqlite::SCHEMA_VERSION);
    let ws = WorkspaceId::default_workspace();
    let taxonomy = store.taxonomy(&ws).unwrap();
    assert_eq!(taxonomy.total_drawers, 2);
    assert_eq!(taxonomy.wings["project"].rooms["decisions"], 1);
    assert_eq!(store.identity(&ws).unwrap().unwrap().identity.as_str(), "I am the v1 fixture.");
    let all = store.scan_drawers(&ws, None, 10).unwrap();
    assert_eq!(all.len(), 3);
    assert!(all.iter().any(|d| d.status_reason.as_deref() == Some("fixture")));
    assert_eq!(store.drawers_missing_embedding(&ws, "any-model", 10).unwrap().len(), 3);
    // Migration 3 numbered the existing drawers, so an index sees all of them.
    assert_eq!(store.revision().unwrap(), 3);
    assert_eq!(store.vector_changes(&ws, "any-model", 0, 10).unwrap().len(), 3);
    let checks = store.verify().unwrap();
    assert!(checks.iter().all(|c| c.ok), "{checks:?}");
}
