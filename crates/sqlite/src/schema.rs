//! Opening checks, connection settings and versioned migrations.
//!
//! A palace file carries our SQLite `application_id`; its `user_version` is
//! the schema version. Migrations are SQL files applied in order inside one
//! `BEGIN IMMEDIATE` transaction, after re-reading the version under the
//! lock, so several processes opening a new palace at once apply each
//! migration exactly once.

use std::path::Path;

use mempalace_store::{StoreError, StoreResult};
use rusqlite::{Connection, ErrorCode, OpenFlags};

use crate::SqliteOptions;
use crate::error::Context;

/// `application_id` of a palace file: "mplc".
pub(crate) const APPLICATION_ID: i32 = 0x6d70_6c63;

/// The highest schema version this build knows.
pub const SCHEMA_VERSION: u32 = 11;

/// Migrations, oldest first: (version reached, SQL).
const MIGRATIONS: &[(u32, &str)] = &[
    (1, include_str!("migrations/0001_palace.sql")),
    (2, include_str!("migrations/0002_embeddings.sql")),
    (3, include_str!("migrations/0003_revisions.sql")),
    (4, include_str!("migrations/0004_knowledge_graph.sql")),
    (5, include_str!("migrations/0005_source_cursors.sql")),
    (6, include_str!("migrations/0006_work.sql")),
    (7, include_str!("migrations/0007_coordination.sql")),
    (8, include_str!("migrations/0008_pipeline_counts.sql")),
    (9, include_str!("migrations/0009_archive.sql")),
    (10, include_str!("migrations/0010_entity_aliases_centroids.sql")),
    (11, include_str!("migrations/0011_tenancy.sql")),
];

/// Refuses a file that is not a palace, without writing to it. An empty
/// SQLite database (or empty file) is accepted only when creating.
pub(crate) fn check_existing(path: &Path, create: bool) -> StoreResult<()> {
    let not_a_palace = |reason: String| StoreError::NotAPalace { location: path.to_path_buf(), reason };
    if std::fs::metadata(path).map(|meta| meta.len()).unwrap_or(0) == 0 {
        return if create { Ok(()) } else { Err(not_a_palace("it is an empty file".to_string())) };
    }
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .ctx("opening the palace file")?;
    let application_id = match conn.query_row("PRAGMA application_id", [], |row| row.get::<_, i32>(0)) {
        Ok(id) => id,
        Err(error) if error.sqlite_error_code() == Some(ErrorCode::NotADatabase) => {
            return Err(not_a_palace("it is not an SQLite database".to_string()));
        }
        Err(error) => return Err(crate::error::map("reading the file header", error)),
    };
    if application_id == APPLICATION_ID {
        return Ok(());
    }
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name LIMIT 5")
        .and_then(|mut stmt| stmt.query_map([], |row| row.get(0))?.collect())
        .map_err(|error| match error.sqlite_error_code() {
            Some(ErrorCode::NotADatabase) | Some(ErrorCode::DatabaseCorrupt) => {
                not_a_palace("it is not an SQLite database".to_string())
            }
            _ => crate::error::map("listing tables", error),
        })?;
    if tables.is_empty() && application_id == 0 {
        return if create { Ok(()) } else { Err(not_a_palace("it is an empty database".to_string())) };
    }
    Err(not_a_palace(if tables.is_empty() {
        format!("it is an SQLite database of another program (application id {application_id:#x})")
    } else {
        format!("it is an SQLite database of another program (tables: {})", tables.join(", "))
    }))
}

/// Per-connection settings.
pub(crate) fn configure(conn: &Connection, write: bool) -> StoreResult<()> {
    if write {
        let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)).ctx("switching to WAL")?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Io {
                detail: format!("the palace file cannot use write-ahead logging (journal mode {mode})"),
            });
        }
        // NORMAL is durable against a crash of the process (what concurrent
        // writers and kill -9 exercise); only a power loss can roll back the
        // last commits, and never corrupts the file.
        // journal_size_limit truncates the WAL file after checkpoints, so a
        // burst of writes does not leave a large file behind.
        conn.execute_batch(
            "PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; PRAGMA journal_size_limit = 16777216;",
        )
        .ctx("setting pragmas")?;
    }
    conn.execute_batch("PRAGMA temp_store = MEMORY; PRAGMA cache_size = -16000;").ctx("setting pragmas")?;
    Ok(())
}

/// The schema version of an open palace.
pub(crate) fn current_version(conn: &Connection) -> StoreResult<u32> {
    let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0)).ctx("reading user_version")?;
    Ok(u32::try_from(version).unwrap_or(0))
}

/// Applies pending migrations. Takes the write lock only when something is
/// pending.
pub(crate) fn migrate(conn: &mut Connection, options: &SqliteOptions) -> StoreResult<()> {
    migrate_to(conn, options, SCHEMA_VERSION)
}

/// Applies the migrations up to `target` (the tests build palaces of every
/// earlier version this way).
fn migrate_to(conn: &mut Connection, options: &SqliteOptions, target_version: u32) -> StoreResult<()> {
    let version = current_version(conn)?;
    if version > SCHEMA_VERSION {
        return Err(StoreError::SchemaTooNew { found: version, supported: SCHEMA_VERSION });
    }
    if version >= target_version {
        return Ok(());
    }
    crate::write_with_retry(conn, options.max_write_wait, |tx| {
        // Another process may have migrated while we waited for the lock.
        let version = current_version(tx)?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::SchemaTooNew { found: version, supported: SCHEMA_VERSION });
        }
        let now = mempalace_core::time::format_timestamp(&chrono_now());
        for (target, sql) in MIGRATIONS.iter().filter(|(target, _)| *target > version && *target <= target_version) {
            tracing::info!(version = target, "applying palace migration");
            tx.execute_batch(sql).ctx("applying a migration")?;
            if *target == 4 {
                // Entity ids are hashes of normalised names: computed here, not in SQL.
                crate::kg::rebuild_mentions(tx)?;
            }
            if *target == 9 {
                allow_archived_status(tx)?;
            }
            tx.execute(
                "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, ?2)",
                rusqlite::params![target, now],
            )
            .ctx("recording a migration")?;
        }
        if version == 0 {
            tx.execute(
                "INSERT INTO palace_meta (key, value) VALUES ('created_at', ?1), ('created_by', ?2)",
                rusqlite::params![now, concat!("mempalace-rs ", env!("CARGO_PKG_VERSION"))],
            )
            .ctx("recording palace creation")?;
            tx.pragma_update(None, "application_id", APPLICATION_ID).ctx("setting application_id")?;
        }
        tx.pragma_update(None, "user_version", target_version).ctx("setting user_version")?;
        Ok(())
    })
}

/// Finishes migration 9, which rewrote the stored definition of `drawers`:
/// checks that the constraint now names 'archived', bumps `schema_version`
/// so every connection re-reads the schema, and has SQLite check the
/// rewritten schema before the transaction commits.
fn allow_archived_status(tx: &rusqlite::Transaction<'_>) -> StoreResult<()> {
    let sql: String = tx
        .query_row("SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'drawers'", [], |row| row.get(0))
        .ctx("reading the drawers table definition")?;
    if !sql.contains("'invalidated', 'archived'") {
        return Err(StoreError::Io {
            detail: "the drawers table of this palace has an unexpected definition; migration 9 (archive) cannot \
                     extend its status check. Export the palace and import it into a new one"
                .to_string(),
        });
    }
    let version: i64 = tx.query_row("PRAGMA schema_version", [], |row| row.get(0)).ctx("reading schema_version")?;
    tx.pragma_update(None, "schema_version", version + 1).ctx("bumping schema_version")?;
    let check: String = tx.query_row("PRAGMA quick_check", [], |row| row.get(0)).ctx("checking the schema")?;
    if check != "ok" {
        return Err(StoreError::Io { detail: format!("the palace failed its check after migration 9: {check}") });
    }
    Ok(())
}

/// The wall clock, for migration bookkeeping only (rows never get their
/// timestamps here: callers pass them in).
fn chrono_now() -> mempalace_core::Timestamp {
    std::time::SystemTime::now().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_ordered_and_end_at_the_schema_version() {
        let versions: Vec<u32> = MIGRATIONS.iter().map(|(version, _)| *version).collect();
        let mut sorted = versions.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(versions, sorted);
        assert_eq!(versions.last().copied(), Some(SCHEMA_VERSION));
    }

    #[test]
    fn a_fresh_file_migrates_once_and_is_recognised_afterwards() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("palace.db");
        let mut conn = Connection::open(&path).unwrap();
        configure(&conn, true).unwrap();
        let options = SqliteOptions { create: true, ..SqliteOptions::default() };
        migrate(&mut conn, &options).unwrap();
        migrate(&mut conn, &options).unwrap();
        assert_eq!(current_version(&conn).unwrap(), SCHEMA_VERSION);
        let applied: i64 = conn.query_row("SELECT count(*) FROM schema_migrations", [], |r| r.get(0)).unwrap();
        assert_eq!(applied, MIGRATIONS.len() as i64);
        drop(conn);
        check_existing(&path, false).unwrap();
    }

    #[test]
    fn a_palace_of_version_8_gains_the_archived_status_and_keeps_its_drawers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("palace.db");
        let mut conn = Connection::open(&path).unwrap();
        configure(&conn, true).unwrap();
        let tx = conn.transaction().unwrap();
        for (target, sql) in MIGRATIONS.iter().filter(|(target, _)| *target <= 8) {
            tx.execute_batch(sql).unwrap();
            tx.execute(
                "INSERT INTO schema_migrations (version, applied_at) VALUES (?1, '2026-01-01T00:00:00Z')",
                [target],
            )
            .unwrap();
        }
        tx.pragma_update(None, "user_version", 8).unwrap();
        tx.pragma_update(None, "application_id", APPLICATION_ID).unwrap();
        tx.execute_batch(
            "INSERT INTO workspaces (id, created_at) VALUES ('default', '2026-01-01T00:00:00Z');
             INSERT INTO drawers (workspace_id, id, wing, room, content, content_hash, added_by, filed_at, updated_at)
                 VALUES ('default', 'drawer_w_r_1', 'w', 'r', 'kept through the upgrade', 'h', 't',
                         '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z');",
        )
        .unwrap();
        tx.commit().unwrap();
        let refused = conn.execute("UPDATE drawers SET status = 'archived'", []);
        assert!(refused.is_err(), "version 8 knows no archive");

        let options = SqliteOptions::default();
        migrate(&mut conn, &options).unwrap();
        assert_eq!(current_version(&conn).unwrap(), SCHEMA_VERSION);
        // A second connection, opened before or after, sees the new constraint.
        let other = Connection::open(&path).unwrap();
        assert_eq!(other.execute("UPDATE drawers SET status = 'archived'", []).unwrap(), 1);
        assert!(other.execute("UPDATE drawers SET status = 'lost'", []).is_err(), "the check still holds");
        let content: String = conn.query_row("SELECT content FROM drawers", [], |r| r.get(0)).unwrap();
        assert_eq!(content, "kept through the upgrade");
        let check: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(check, "ok");
    }

    #[test]
    fn foreign_files_are_refused_without_being_touched() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage.db");
        std::fs::write(&garbage, b"this is not a database, just some text that is long enough").unwrap();
        let before = std::fs::read(&garbage).unwrap();
        let err = check_existing(&garbage, true).unwrap_err();
        assert!(err.to_string().contains("not an SQLite database"), "{err}");
        assert_eq!(std::fs::read(&garbage).unwrap(), before);

        let other = dir.path().join("other.db");
        Connection::open(&other).unwrap().execute_batch("CREATE TABLE notes (x)").unwrap();
        let err = check_existing(&other, true).unwrap_err();
        assert!(err.to_string().contains("tables: notes"), "{err}");
        assert!(!dir.path().join("other.db-wal").exists());
    }

    /// A palace of every earlier schema version — the v1 fixture written by
    /// the CLI at revision 592306e, migrated step by step to that version,
    /// as the build of the time left it — opens with this build, migrates,
    /// keeps its data and passes every check; then takes new writes.
    #[test]
    fn a_palace_at_every_earlier_version_opens_migrates_and_keeps_its_data() {
        use mempalace_store::{StoreRead as _, StoreWrite as _};
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/palace-v1.db");
        for version in 1..SCHEMA_VERSION {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("palace.db");
            std::fs::copy(&fixture, &path).unwrap();
            {
                let mut conn = Connection::open(&path).unwrap();
                configure(&conn, true).unwrap();
                migrate_to(&mut conn, &SqliteOptions::default(), version).unwrap();
                assert_eq!(current_version(&conn).unwrap(), version);
                let rows: i64 = conn.query_row("SELECT count(*) FROM drawers", [], |r| r.get(0)).unwrap();
                assert_eq!(rows, 3, "version {version} keeps the drawers");
            }
            let store = crate::SqliteStore::open(&path, SqliteOptions::default())
                .unwrap_or_else(|e| panic!("a version-{version} palace opens: {e}"));
            assert_eq!(store.info().unwrap().schema_version, SCHEMA_VERSION);
            let ws = mempalace_core::WorkspaceId::default_workspace();
            assert_eq!(store.taxonomy(&ws).unwrap().total_drawers, 2, "version {version}");
            assert_eq!(store.scan_drawers(&ws, None, 10).unwrap().len(), 3, "version {version}");
            assert_eq!(store.identity(&ws).unwrap().unwrap().identity.as_str(), "I am the v1 fixture.");
            let checks = store.verify().unwrap();
            assert!(checks.iter().all(|c| c.ok), "version {version}: {checks:?}");
            let drawer = mempalace_store::conformance::drawer(&ws, "after", "upgrade", "written after the upgrade");
            assert_eq!(store.put_drawers(&[drawer]).unwrap().len(), 1);
            assert_eq!(store.taxonomy(&ws).unwrap().total_drawers, 3);
        }
    }
}
