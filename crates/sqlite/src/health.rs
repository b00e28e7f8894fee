//! Verification of the file and of every derived structure, and their
//! rebuild from the rows.
//!
//! User data (drawers, entities, triples, identity, sessions, tunnels) is
//! only ever read here. The derived structures are the FTS5 lexical index
//! the `room_counts` and `hall_counts` aggregates and the entity mentions;
//! all are recomputed from `drawers`.

use mempalace_core::lexical;
use mempalace_store::{HealthCheck, StoreResult};
use rusqlite::{Connection, Transaction, params};

use crate::error::Context;
use crate::schema::{APPLICATION_ID, SCHEMA_VERSION};

fn check(name: &str, ok: bool, derived: bool, detail: String) -> HealthCheck {
    HealthCheck { name: name.to_string(), ok, derived, detail }
}

fn count(conn: &Connection, sql: &str) -> StoreResult<i64> {
    conn.query_row(sql, [], |row| row.get(0)).ctx("counting rows")
}

/// Runs FTS5's own structural check. It is spelled as an INSERT, so it needs
/// the writer connection, but it changes nothing.
pub(crate) fn fts_structure_ok(tx: &Transaction<'_>) -> StoreResult<bool> {
    match tx.execute("INSERT INTO drawers_fts (drawers_fts, rank) VALUES ('integrity-check', 0)", []) {
        Ok(_) => Ok(true),
        Err(error) if crate::error::is_busy(&error) => Err(crate::error::map("checking the lexical index", error)),
        Err(error) => {
            tracing::warn!(%error, "FTS5 integrity-check failed");
            Ok(false)
        }
    }
}

/// Runs every check on a read snapshot. `fts_structure_ok` is the result of
/// [`fts_structure_ok`] when the store could run it (not when read-only).
pub(crate) fn verify(conn: &Connection, fts_structure_ok: Option<bool>) -> StoreResult<Vec<HealthCheck>> {
    let mut checks = Vec::new();

    let messages: Vec<String> = conn
        .prepare("PRAGMA integrity_check")
        .and_then(|mut stmt| stmt.query_map([], |row| row.get(0))?.collect())
        .ctx("running integrity_check")?;
    let intact = messages.len() == 1 && messages[0] == "ok";
    checks.push(check("integrity", intact, false, messages.join("; ")));

    let violations = count(conn, "SELECT count(*) FROM pragma_foreign_key_check")?;
    checks.push(check("foreign_keys", violations == 0, false, format!("{violations} rows refer to missing parents")));

    let version: i64 = conn.query_row("PRAGMA user_version", [], |row| row.get(0)).ctx("reading user_version")?;
    let application_id: i64 =
        conn.query_row("PRAGMA application_id", [], |row| row.get(0)).ctx("reading application_id")?;
    checks.push(check(
        "schema",
        version == i64::from(SCHEMA_VERSION) && application_id == i64::from(APPLICATION_ID),
        false,
        format!("schema version {version} (this build: {SCHEMA_VERSION})"),
    ));

    let drawers = count(conn, "SELECT count(*) FROM drawers")?;
    let indexed = count(conn, "SELECT count(*) FROM drawers_fts")?;
    let unindexed = count(conn, "SELECT count(*) FROM drawers WHERE seq NOT IN (SELECT rowid FROM drawers_fts)")?;
    let fts_ok = fts_structure_ok.unwrap_or(true);
    checks.push(check(
        "lexical_index",
        drawers == indexed && unindexed == 0 && fts_ok,
        true,
        format!(
            "{drawers} drawers, {indexed} indexed, {unindexed} missing{}",
            if fts_ok { "" } else { ", FTS5 integrity-check failed" }
        ),
    ));

    let mismatched = count(
        conn,
        "WITH actual AS (SELECT workspace_id, wing, room, count(*) AS n FROM drawers WHERE status = 'active' \
                         GROUP BY workspace_id, wing, room) \
         SELECT (SELECT count(*) FROM actual a LEFT JOIN room_counts c USING (workspace_id, wing, room) \
                 WHERE c.drawers IS NOT a.n) \
              + (SELECT count(*) FROM room_counts c LEFT JOIN actual a USING (workspace_id, wing, room) \
                 WHERE a.n IS NULL)",
    )?;
    let active = count(conn, "SELECT count(*) FROM drawers WHERE status = 'active'")?;
    let counted = count(conn, "SELECT coalesce(sum(drawers), 0) FROM room_counts")?;
    checks.push(check(
        "room_counts",
        mismatched == 0,
        true,
        format!("{active} active drawers, {counted} counted, {mismatched} rooms differ"),
    ));

    let halls_mismatched = count(
        conn,
        "WITH actual AS (SELECT workspace_id, wing, room, hall, count(*) AS n FROM drawers \
                         WHERE status = 'active' AND hall IS NOT NULL GROUP BY workspace_id, wing, room, hall) \
         SELECT (SELECT count(*) FROM actual a LEFT JOIN hall_counts c USING (workspace_id, wing, room, hall) \
                 WHERE c.drawers IS NOT a.n) \
              + (SELECT count(*) FROM hall_counts c LEFT JOIN actual a USING (workspace_id, wing, room, hall) \
                 WHERE a.n IS NULL)",
    )?;
    checks.push(check("hall_counts", halls_mismatched == 0, true, format!("{halls_mismatched} halls differ")));

    let bytes_mismatched = count(
        conn,
        "WITH actual AS (SELECT workspace_id, sum(length(CAST(content AS BLOB))) AS n FROM drawers \
                         WHERE status = 'active' GROUP BY workspace_id) \
         SELECT (SELECT count(*) FROM actual a LEFT JOIN workspace_bytes b USING (workspace_id) \
                 WHERE b.bytes IS NOT a.n) \
              + (SELECT count(*) FROM workspace_bytes b LEFT JOIN actual a USING (workspace_id) \
                 WHERE a.n IS NULL AND b.bytes <> 0)",
    )?;
    checks.push(check("workspace_bytes", bytes_mismatched == 0, true, format!("{bytes_mismatched} workspaces differ")));

    let (expected_mentions, stored_mentions) = crate::kg::mention_counts(conn)?;
    checks.push(check(
        "entity_mentions",
        expected_mentions == stored_mentions,
        true,
        format!("{expected_mentions} mentions in drawers, {stored_mentions} indexed"),
    ));
    Ok(checks)
}

/// Recomputes the lexical index and the room counts from `drawers`.
pub(crate) fn rebuild(tx: &Transaction<'_>) -> StoreResult<()> {
    // Drop and recreate from the stored definition rather than FTS5's
    // 'delete-all': on a contentless-delete table, 'delete-all' followed by
    // re-inserts leaves segments that PRAGMA integrity_check reports as
    // corrupt (SQLite 3.54). A new table is clean by construction.
    let definition: String = tx
        .query_row("SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'drawers_fts'", [], |row| row.get(0))
        .ctx("reading the lexical index definition")?;
    tx.execute_batch(&format!("DROP TABLE drawers_fts; {definition};")).ctx("recreating the lexical index")?;
    {
        let mut select = tx.prepare("SELECT seq, content FROM drawers ORDER BY seq").ctx("reading drawers")?;
        let mut insert =
            tx.prepare("INSERT INTO drawers_fts (rowid, body) VALUES (?1, ?2)").ctx("rebuilding the lexical index")?;
        let mut rows = select.query([]).ctx("reading drawers")?;
        let mut n_indexed = 0_u64;
        while let Some(row) = rows.next().ctx("reading drawers")? {
            let seq: i64 = row.get(0).ctx("reading drawers")?;
            let content: String = row.get(1).ctx("reading drawers")?;
            insert.execute(params![seq, lexical::index_text(&content).as_ref()]).ctx("rebuilding the lexical index")?;
            n_indexed += 1;
        }
        tracing::info!(n_indexed, "lexical index rebuilt");
    }
    tx.execute_batch(
        "DELETE FROM room_counts;
         INSERT INTO room_counts (workspace_id, wing, room, drawers)
             SELECT workspace_id, wing, room, count(*) FROM drawers WHERE status = 'active'
             GROUP BY workspace_id, wing, room;
         DELETE FROM hall_counts;
         INSERT INTO hall_counts (workspace_id, wing, room, hall, drawers)
             SELECT workspace_id, wing, room, hall, count(*) FROM drawers WHERE status = 'active' AND hall IS NOT NULL
             GROUP BY workspace_id, wing, room, hall;
         DELETE FROM workspace_bytes;
         INSERT INTO workspace_bytes (workspace_id, bytes)
             SELECT workspace_id, sum(length(CAST(content AS BLOB))) FROM drawers WHERE status = 'active'
             GROUP BY workspace_id;",
    )
    .ctx("rebuilding room counts")?;
    crate::kg::rebuild_mentions(tx)?;
    Ok(())
}
