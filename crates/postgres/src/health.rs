//! Verification of every derived structure against the rows, and its
//! rebuild from them.
//!
//! User data (drawers, entities, triples, identity, sessions, tunnels) is
//! only ever read here. Derived: the lexical entries and the lexical
//! statistics, `room_counts`, `hall_counts` and `workspace_bytes`, entity
//! mentions, the palace revision (never behind the rows), and the HNSW
//! and place indexes of the vectors.

use deadpool_postgres::Transaction;
use mempalace_core::kg::entity_id;
use mempalace_core::lexical;
use mempalace_store::{HealthCheck, StoreResult};

use crate::error::Context;
use crate::schema::{SCHEMA_VERSION, current_version};

fn check(name: &str, ok: bool, derived: bool, detail: String) -> HealthCheck {
    HealthCheck { name: name.to_string(), ok, derived, detail }
}

async fn count(tx: &Transaction<'_>, sql: &str) -> StoreResult<i64> {
    Ok(tx.query_one(sql, &[]).await.ctx("counting rows")?.get(0))
}

/// Mentions the drawers imply (distinct entity ids per drawer, aliases
/// resolved to their canonical entity).
async fn expected_mentions(tx: &Transaction<'_>) -> StoreResult<Vec<(String, String, String)>> {
    let aliases: std::collections::HashMap<(String, String), String> = tx
        .query("SELECT workspace_id, alias_id, canonical_id FROM entity_aliases", &[])
        .await
        .ctx("reading entity aliases")?
        .iter()
        .map(|row| ((row.get(0), row.get(1)), row.get(2)))
        .collect();
    let rows = tx
        .query("SELECT workspace_id, id, entities FROM drawers WHERE jsonb_array_length(entities) > 0", &[])
        .await
        .ctx("reading drawer entities")?;
    let mut out = Vec::new();
    for row in rows {
        let (workspace, id): (String, String) = (row.get(0), row.get(1));
        let names: Vec<String> = serde_json::from_value(row.get(2)).unwrap_or_default();
        let mut ids: Vec<String> = names
            .iter()
            .map(|n| {
                let id = entity_id(n);
                aliases.get(&(workspace.clone(), id.clone())).cloned().unwrap_or(id)
            })
            .collect();
        ids.sort();
        ids.dedup();
        out.extend(ids.into_iter().map(|entity| (workspace.clone(), entity, id.clone())));
    }
    Ok(out)
}

pub(crate) async fn verify(tx: &Transaction<'_>) -> StoreResult<Vec<HealthCheck>> {
    let mut checks = Vec::new();
    let version = current_version(tx).await?;
    checks.push(check(
        "schema",
        version == SCHEMA_VERSION,
        false,
        format!("schema version {version} (this build: {SCHEMA_VERSION})"),
    ));

    let drawers = count(tx, "SELECT count(*) FROM drawers").await?;
    let unindexed = count(tx, "SELECT count(*) FROM drawers WHERE lexemes IS NULL").await?;
    let stats_off = count(
        tx,
        "SELECT count(*) FROM palace_counters c WHERE c.id = 1 AND ( \
            c.lexical_docs <> (SELECT count(*) FROM drawers WHERE lexemes IS NOT NULL) \
            OR c.lexical_tokens <> (SELECT coalesce(sum(lex_len), 0) FROM drawers) \
            OR EXISTS (SELECT 1 FROM drawers WHERE lex_len <> coalesce(mempalace_token_count(lexemes), 0)))",
    )
    .await?;
    checks.push(check(
        "lexical_index",
        unindexed == 0 && stats_off == 0,
        true,
        format!(
            "{drawers} drawers, {unindexed} missing{}",
            if stats_off == 0 { "" } else { ", document statistics differ from the rows" }
        ),
    ));

    let mismatched = count(
        tx,
        "WITH actual AS (SELECT workspace_id, wing, room, count(*) AS n FROM drawers WHERE status = 'active' \
                         GROUP BY workspace_id, wing, room) \
         SELECT (SELECT count(*) FROM actual a LEFT JOIN room_counts c USING (workspace_id, wing, room) \
                 WHERE c.drawers IS DISTINCT FROM a.n) \
              + (SELECT count(*) FROM room_counts c LEFT JOIN actual a USING (workspace_id, wing, room) \
                 WHERE a.n IS NULL)",
    )
    .await?;
    let active = count(tx, "SELECT count(*) FROM drawers WHERE status = 'active'").await?;
    let counted = count(tx, "SELECT coalesce(sum(drawers), 0)::bigint FROM room_counts").await?;
    checks.push(check(
        "room_counts",
        mismatched == 0,
        true,
        format!("{active} active drawers, {counted} counted, {mismatched} rooms differ"),
    ));

    let halls_mismatched = count(
        tx,
        "WITH actual AS (SELECT workspace_id, wing, room, hall, count(*) AS n FROM drawers \
                         WHERE status = 'active' AND hall IS NOT NULL GROUP BY workspace_id, wing, room, hall) \
         SELECT (SELECT count(*) FROM actual a LEFT JOIN hall_counts c USING (workspace_id, wing, room, hall) \
                 WHERE c.drawers IS DISTINCT FROM a.n) \
              + (SELECT count(*) FROM hall_counts c LEFT JOIN actual a USING (workspace_id, wing, room, hall) \
                 WHERE a.n IS NULL)",
    )
    .await?;
    checks.push(check("hall_counts", halls_mismatched == 0, true, format!("{halls_mismatched} halls differ")));

    let bytes_mismatched = count(
        tx,
        "WITH actual AS (SELECT workspace_id, sum(octet_length(content))::bigint AS n FROM drawers \
                         WHERE status = 'active' GROUP BY workspace_id) \
         SELECT (SELECT count(*) FROM actual a LEFT JOIN workspace_bytes b USING (workspace_id) \
                 WHERE b.bytes IS DISTINCT FROM a.n) \
              + (SELECT count(*) FROM workspace_bytes b LEFT JOIN actual a USING (workspace_id) \
                 WHERE a.n IS NULL AND b.bytes <> 0)",
    )
    .await?;
    checks.push(check("workspace_bytes", bytes_mismatched == 0, true, format!("{bytes_mismatched} workspaces differ")));

    let expected = expected_mentions(tx).await?.len() as i64;
    let stored = count(tx, "SELECT count(*) FROM entity_mentions").await?;
    checks.push(check(
        "entity_mentions",
        expected == stored,
        true,
        format!("{expected} mentions in drawers, {stored} indexed"),
    ));

    let behind = count(
        tx,
        "SELECT count(*) FROM palace_counters c WHERE c.id = 1 AND c.rev < greatest( \
            (SELECT coalesce(max(rev), 0) FROM drawers), (SELECT coalesce(max(rev), 0) FROM drawer_tombstones))",
    )
    .await?;
    checks.push(check("revision", behind == 0, true, "the palace revision is not behind any row".to_string()));

    // Every model with vectors has an HNSW index, and those whose vectors
    // fit a place index's entry have one too (schema 8): one pass over the
    // vectors counts both.
    let row = tx
        .query_one(
            "SELECT count(*), count(*) FILTER (WHERE dims <= $1) FROM (SELECT max(vector_dims(embedding)) AS dims \
             FROM drawers WHERE embedding IS NOT NULL GROUP BY embedding_model) models",
            &[&i32::try_from(crate::vectors::PLACE_INDEX_MAX_DIM).unwrap_or(i32::MAX)],
        )
        .await
        .ctx("counting embedding models")?;
    let (models, narrow): (i64, i64) = (row.get(0), row.get(1));
    let indexed = count(
        tx,
        "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'drawers' \
         AND indexname LIKE 'drawers_hnsw_%'",
    )
    .await?;
    let placed = count(
        tx,
        "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'drawers' \
         AND indexname LIKE 'drawers_place_vec_%'",
    )
    .await?;
    checks.push(check(
        "vector_indexes",
        indexed >= models && placed >= narrow,
        true,
        format!("{models} embedding models, {indexed} HNSW indexes, {placed} place indexes ({narrow} needed)"),
    ));
    Ok(checks)
}

/// Recomputes every derived structure from the rows.
pub(crate) async fn rebuild(tx: &Transaction<'_>) -> StoreResult<()> {
    let c = "rebuilding the lexical index";
    let rows = tx.query("SELECT seq, content FROM drawers ORDER BY seq", &[]).await.ctx(c)?;
    let update = tx.prepare("UPDATE drawers SET lexemes = to_tsvector('mempalace', $2) WHERE seq = $1").await.ctx(c)?;
    for row in &rows {
        let (seq, content): (i64, String) = (row.get(0), row.get(1));
        tx.execute(&update, &[&seq, &lexical::index_text(&content).as_ref()]).await.ctx(c)?;
    }
    tracing::info!(n_indexed = rows.len(), "lexical index rebuilt");
    tx.batch_execute(
        "UPDATE drawers SET lex_len = coalesce(mempalace_token_count(lexemes), 0)
             WHERE lex_len <> coalesce(mempalace_token_count(lexemes), 0);
         UPDATE palace_counters SET
             lexical_docs = (SELECT count(*) FROM drawers WHERE lexemes IS NOT NULL),
             lexical_tokens = (SELECT coalesce(sum(lex_len), 0) FROM drawers),
             rev = greatest(rev, (SELECT coalesce(max(rev), 0) FROM drawers),
                            (SELECT coalesce(max(rev), 0) FROM drawer_tombstones))
             WHERE id = 1;
         DELETE FROM room_counts;
         INSERT INTO room_counts (workspace_id, wing, room, drawers)
             SELECT workspace_id, wing, room, count(*) FROM drawers WHERE status = 'active'
             GROUP BY workspace_id, wing, room;
         DELETE FROM hall_counts;
         INSERT INTO hall_counts (workspace_id, wing, room, hall, drawers)
             SELECT workspace_id, wing, room, hall, count(*) FROM drawers WHERE status = 'active' AND hall IS NOT NULL
             GROUP BY workspace_id, wing, room, hall;
         DELETE FROM workspace_bytes;
         INSERT INTO workspace_bytes (workspace_id, bytes)
             SELECT workspace_id, sum(octet_length(content))::bigint FROM drawers WHERE status = 'active'
             GROUP BY workspace_id;
         DELETE FROM entity_mentions;",
    )
    .await
    .ctx("rebuilding counts")?;
    let mentions = expected_mentions(tx).await?;
    let insert = tx
        .prepare("INSERT INTO entity_mentions (workspace_id, entity_id, drawer_id) VALUES ($1, $2, $3)")
        .await
        .ctx("rebuilding mentions")?;
    for (workspace, entity, drawer) in &mentions {
        tx.execute(&insert, &[workspace, entity, drawer]).await.ctx("rebuilding mentions")?;
    }
    crate::vectors::create_missing_indexes(tx).await
}
