//! Knowledge-graph and palace-graph storage: entities, temporal triples,
//! entity mentions, hall counts and explicit tunnels.
//!
//! Entity mentions are derived from each drawer's `entities` list (entity
//! id = SHA-256 of the normalised name), written with the drawer and
//! rebuildable like every other derived structure.

use mempalace_core::kg::{Entity, Triple, entity_id};
use mempalace_core::tunnel::Tunnel;
use mempalace_core::{DrawerId, Timestamp, WorkspaceId};
use mempalace_store::{Direction, HallCount, KgStats, StoreError, StoreResult, TripleOutcome};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Transaction, params, params_from_iter};

use crate::error::Context;
use crate::records::{entities_where, triples_where};
use crate::row::{opt_ts, to_json_text, ts, vector_to_blob};

/// Writes the mentions of one drawer (its `entities` names), each name
/// resolved to its canonical entity when it is an alias.
pub(crate) fn write_mentions(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    drawer_id: &DrawerId,
    names: &[String],
) -> StoreResult<()> {
    for name in names {
        let id = entity_id(name);
        tx.prepare_cached(
            "INSERT OR IGNORE INTO entity_mentions (workspace_id, entity_id, drawer_id) VALUES (?1, \
             coalesce((SELECT canonical_id FROM entity_aliases WHERE workspace_id = ?1 AND alias_id = ?2), ?2), ?3)",
        )
        .and_then(|mut stmt| stmt.execute(params![workspace.as_str(), id, drawer_id.as_str()]))
        .ctx("recording a mention")?;
    }
    Ok(())
}

/// Recomputes every mention from the drawers.
pub(crate) fn rebuild_mentions(tx: &Transaction<'_>) -> StoreResult<()> {
    tx.execute("DELETE FROM entity_mentions", []).ctx("clearing mentions")?;
    let rows: Vec<(String, String, String)> = tx
        .prepare("SELECT workspace_id, id, entities FROM drawers WHERE entities <> '[]'")
        .and_then(|mut stmt| stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?.collect())
        .ctx("reading drawer entities")?;
    for (workspace, id, entities) in rows {
        let names: Vec<String> = serde_json::from_str(&entities).unwrap_or_default();
        let workspace = WorkspaceId::parse(&workspace).map_err(|e| StoreError::invalid(format!("drawer {id}: {e}")))?;
        let drawer_id = DrawerId::parse(&id).map_err(|e| StoreError::invalid(format!("drawer {id}: {e}")))?;
        write_mentions(tx, &workspace, &drawer_id, &names)?;
    }
    Ok(())
}

/// Mentions the drawers imply, and how many the table holds (for verify).
pub(crate) fn mention_counts(conn: &Connection) -> StoreResult<(u64, u64)> {
    let rows: Vec<(String, String)> = conn
        .prepare("SELECT workspace_id, entities FROM drawers WHERE entities <> '[]'")
        .and_then(|mut stmt| stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?)))?.collect())
        .ctx("reading drawer entities")?;
    let aliases: std::collections::HashMap<(String, String), String> = conn
        .prepare("SELECT workspace_id, alias_id, canonical_id FROM entity_aliases")
        .and_then(|mut stmt| stmt.query_map([], |row| Ok(((row.get(0)?, row.get(1)?), row.get(2)?)))?.collect())
        .ctx("reading entity aliases")?;
    let mut expected = 0_u64;
    for (workspace, entities) in rows {
        let names: Vec<String> = serde_json::from_str(&entities).unwrap_or_default();
        let mut ids: Vec<String> = names
            .iter()
            .map(|n| {
                let id = entity_id(n);
                aliases.get(&(workspace.clone(), id.clone())).cloned().unwrap_or(id)
            })
            .collect();
        ids.sort();
        ids.dedup();
        expected += ids.len() as u64;
    }
    let stored: i64 =
        conn.query_row("SELECT count(*) FROM entity_mentions", [], |row| row.get(0)).ctx("counting mentions")?;
    Ok((expected, u64::try_from(stored).unwrap_or(0)))
}

pub(crate) fn entities_by_id(conn: &Connection, workspace: &WorkspaceId, ids: &[String]) -> StoreResult<Vec<Entity>> {
    let mut out = Vec::new();
    for chunk in ids.chunks(500) {
        let placeholders = vec!["?"; chunk.len()].join(", ");
        let mut values = vec![SqlValue::Text(workspace.to_string())];
        values.extend(chunk.iter().map(|id| SqlValue::Text(id.clone())));
        out.extend(entities_where(conn, workspace, &format!("workspace_id = ? AND id IN ({placeholders})"), values)?);
    }
    Ok(out)
}

/// Names of the entities and of their aliases (so the extractor still
/// recognises "Postgres" once it is an alias of "PostgreSQL").
pub(crate) fn entity_names(conn: &Connection, workspace: &WorkspaceId) -> StoreResult<Vec<String>> {
    conn.prepare_cached(
        "SELECT name FROM entities WHERE workspace_id = ?1 UNION SELECT name FROM entity_aliases WHERE workspace_id = ?1 \
         ORDER BY name",
    )
        .and_then(|mut stmt| stmt.query_map(params![workspace.as_str()], |row| row.get(0))?.collect())
        .ctx("listing entity names")
}

pub(crate) fn triples_about(
    conn: &Connection,
    workspace: &WorkspaceId,
    entity: &str,
    direction: Direction,
) -> StoreResult<Vec<Triple>> {
    let clause = match direction {
        Direction::Outgoing => "workspace_id = ? AND subject = ?",
        Direction::Incoming => "workspace_id = ? AND object = ?",
        Direction::Both => "workspace_id = ? AND (subject = ?2 OR object = ?2)",
    };
    let clause = clause.replace("?2", "?");
    let values = match direction {
        Direction::Both => vec![
            SqlValue::Text(workspace.to_string()),
            SqlValue::Text(entity.to_string()),
            SqlValue::Text(entity.to_string()),
        ],
        _ => vec![SqlValue::Text(workspace.to_string()), SqlValue::Text(entity.to_string())],
    };
    let mut triples = triples_where(conn, workspace, &clause, values)?;
    triples.sort_by(|a, b| a.valid_from.cmp(&b.valid_from).then(a.created_at.cmp(&b.created_at)).then(a.id.cmp(&b.id)));
    Ok(triples)
}

pub(crate) fn kg_stats(conn: &Connection, workspace: &WorkspaceId) -> StoreResult<KgStats> {
    let c = "counting the knowledge graph";
    let count = |sql: &str| -> StoreResult<u64> {
        let n: i64 = conn.query_row(sql, params![workspace.as_str()], |row| row.get(0)).ctx(c)?;
        Ok(u64::try_from(n).unwrap_or(0))
    };
    let entities = count("SELECT count(*) FROM entities WHERE workspace_id = ?1")?;
    let triples = count("SELECT count(*) FROM triples WHERE workspace_id = ?1")?;
    let current = count("SELECT count(*) FROM triples WHERE workspace_id = ?1 AND valid_to IS NULL")?;
    let predicates: Vec<(String, i64)> = conn
        .prepare_cached(
            "SELECT predicate, count(*) AS n FROM triples WHERE workspace_id = ?1 GROUP BY predicate ORDER BY n DESC, predicate",
        )
        .and_then(|mut stmt| stmt.query_map(params![workspace.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))?.collect())
        .ctx(c)?;
    Ok(KgStats {
        entities,
        triples,
        current,
        expired: triples - current,
        predicates: predicates.into_iter().map(|(p, n)| (p, u64::try_from(n).unwrap_or(0))).collect(),
    })
}

pub(crate) fn drawers_mentioning(
    conn: &Connection,
    workspace: &WorkspaceId,
    entity_ids: &[String],
    limit: usize,
) -> StoreResult<Vec<(DrawerId, u32)>> {
    if entity_ids.is_empty() {
        return Ok(Vec::new());
    }
    let placeholders = vec!["?"; entity_ids.len()].join(", ");
    let sql = format!(
        "SELECT m.drawer_id, count(*) AS n FROM entity_mentions m JOIN drawers d \
         ON d.workspace_id = m.workspace_id AND d.id = m.drawer_id \
         WHERE m.workspace_id = ? AND m.entity_id IN ({placeholders}) AND d.status = 'active' AND d.owner_user_id IS NULL \
         GROUP BY m.drawer_id ORDER BY n DESC, d.filed_at DESC LIMIT ?"
    );
    let mut values = vec![SqlValue::Text(workspace.to_string())];
    values.extend(entity_ids.iter().map(|id| SqlValue::Text(id.clone())));
    values.push(SqlValue::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
    let rows: Vec<(String, i64)> = conn
        .prepare_cached(&sql)
        .and_then(|mut stmt| stmt.query_map(params_from_iter(values), |row| Ok((row.get(0)?, row.get(1)?)))?.collect())
        .ctx("finding mentioning drawers")?;
    rows.into_iter()
        .map(|(id, n)| {
            Ok((
                DrawerId::parse(&id).map_err(|e| StoreError::invalid(format!("drawer {id}: {e}")))?,
                u32::try_from(n).unwrap_or(0),
            ))
        })
        .collect()
}

pub(crate) fn hall_counts(conn: &Connection, workspace: &WorkspaceId) -> StoreResult<Vec<HallCount>> {
    let rows: Vec<(String, String, String, i64)> = conn
        .prepare_cached(
            "SELECT wing, room, hall, drawers FROM hall_counts WHERE workspace_id = ?1 ORDER BY wing, room, hall",
        )
        .and_then(|mut stmt| {
            stmt.query_map(params![workspace.as_str()], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))?
                .collect()
        })
        .ctx("reading hall counts")?;
    Ok(rows
        .into_iter()
        .map(|(wing, room, hall, n)| HallCount { wing, room, hall, drawers: u64::try_from(n).unwrap_or(0) })
        .collect())
}

pub(crate) fn add_entities(tx: &Transaction<'_>, entities: &[Entity]) -> StoreResult<usize> {
    let mut inserted = 0;
    for entity in entities {
        crate::records::ensure_workspace(tx, &entity.workspace_id, &entity.created_at)?;
        // An alias is never added again: it stands for its canonical entity.
        inserted += tx
            .prepare_cached(
                "INSERT INTO entities (workspace_id, id, name, entity_type, properties, embedding_model, embedding, \
                 created_at) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8 WHERE NOT EXISTS \
                 (SELECT 1 FROM entity_aliases WHERE workspace_id = ?1 AND alias_id = ?2) ON CONFLICT DO NOTHING",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    entity.workspace_id.as_str(),
                    entity.id,
                    entity.name,
                    entity.entity_type,
                    to_json_text(&entity.properties),
                    entity.embedding.as_ref().map(|e| e.model.clone()),
                    entity.embedding.as_ref().map(|e| vector_to_blob(&e.vector)),
                    ts(&entity.created_at),
                ])
            })
            .ctx("adding an entity")?;
    }
    Ok(inserted)
}

pub(crate) fn add_triple(tx: &Transaction<'_>, triple: &Triple) -> StoreResult<TripleOutcome> {
    Triple::check_interval(triple.valid_from, triple.valid_to)
        .map_err(|error| StoreError::invalid(error.to_string()))?;
    // A fact naming an alias is about its canonical entity.
    let resolved = Triple {
        subject: crate::alias::resolve_one(tx, &triple.workspace_id, &triple.subject)?,
        object: crate::alias::resolve_one(tx, &triple.workspace_id, &triple.object)?,
        ..triple.clone()
    };
    let triple = &resolved;
    let existing: Option<String> = tx
        .prepare_cached(
            "SELECT id FROM triples WHERE workspace_id = ?1 AND subject = ?2 AND predicate = ?3 AND object = ?4 \
             AND valid_to IS NULL LIMIT 1",
        )
        .and_then(|mut stmt| {
            stmt.query_row(
                params![triple.workspace_id.as_str(), triple.subject, triple.predicate, triple.object],
                |row| row.get(0),
            )
            .optional()
        })
        .ctx("looking for an open fact")?;
    if triple.valid_to.is_none()
        && let Some(id) = existing
    {
        return Ok(TripleOutcome::Existing(id));
    }
    let insert = |id: &str| {
        tx.prepare_cached(
            "INSERT INTO triples (workspace_id, id, subject, predicate, object, valid_from, valid_to, confidence, \
                 source_drawer_id, source, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
                 ON CONFLICT DO NOTHING",
        )
        .and_then(|mut stmt| {
            stmt.execute(params![
                triple.workspace_id.as_str(),
                id,
                triple.subject,
                triple.predicate,
                triple.object,
                opt_ts(triple.valid_from.as_ref()),
                opt_ts(triple.valid_to.as_ref()),
                triple.confidence.get(),
                triple.source_drawer_id.as_ref().map(DrawerId::as_str),
                triple.source,
                ts(&triple.created_at),
            ])
        })
        .map_err(|error| match error.sqlite_error_code() {
            Some(rusqlite::ErrorCode::ConstraintViolation) => StoreError::invalid(format!(
                "fact {} → {} → {} refers to an entity that does not exist; add the entities first",
                triple.subject, triple.predicate, triple.object
            )),
            _ => crate::error::map("adding a fact", error),
        })
    };
    if insert(&triple.id)? > 0 {
        return Ok(TripleOutcome::Added(triple.id.clone()));
    }
    // The id is taken: the same fact (same window) is reported as existing;
    // a different fact with the same deterministic id (one without a start,
    // ended and now stated again) gets a fresh id.
    let same_window: bool = tx
        .prepare_cached("SELECT valid_from IS ?3 AND valid_to IS ?4 FROM triples WHERE workspace_id = ?1 AND id = ?2")
        .and_then(|mut stmt| {
            stmt.query_row(
                params![
                    triple.workspace_id.as_str(),
                    triple.id,
                    opt_ts(triple.valid_from.as_ref()),
                    opt_ts(triple.valid_to.as_ref())
                ],
                |row| row.get(0),
            )
        })
        .ctx("comparing a fact")?;
    if same_window {
        return Ok(TripleOutcome::Existing(triple.id.clone()));
    }
    let id = triple.reissued_id();
    Ok(if insert(&id)? > 0 { TripleOutcome::Added(id) } else { TripleOutcome::Existing(id) })
}

pub(crate) fn invalidate_triples(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    subject: &str,
    predicate: &str,
    object: &str,
    ended: &Timestamp,
) -> StoreResult<usize> {
    let subject = crate::alias::resolve_one(tx, workspace, subject)?;
    let object = crate::alias::resolve_one(tx, workspace, object)?;
    // An end before the start would invert the window: such facts end at their start.
    tx.prepare_cached(
        "UPDATE triples SET valid_to = CASE WHEN valid_from IS NOT NULL AND valid_from > ?5 THEN valid_from ELSE ?5 END \
         WHERE workspace_id = ?1 AND subject = ?2 AND predicate = ?3 AND object = ?4 AND valid_to IS NULL",
    )
    .and_then(|mut stmt| stmt.execute(params![workspace.as_str(), subject, predicate, object, ts(ended)]))
    .ctx("ending a fact")
}

pub(crate) fn delete_triple(tx: &Transaction<'_>, workspace: &WorkspaceId, id: &str) -> StoreResult<bool> {
    Ok(tx
        .prepare_cached("DELETE FROM triples WHERE workspace_id = ?1 AND id = ?2")
        .and_then(|mut stmt| stmt.execute(params![workspace.as_str(), id]))
        .ctx("deleting a fact")?
        > 0)
}

pub(crate) fn put_tunnel(tx: &Transaction<'_>, tunnel: &Tunnel) -> StoreResult<bool> {
    let record = mempalace_store::PalaceRecord::Tunnel(tunnel.clone());
    Ok(crate::records::import_record(tx, &record)?.inserted > 0)
}

pub(crate) fn delete_tunnel(tx: &Transaction<'_>, workspace: &WorkspaceId, id: &str) -> StoreResult<bool> {
    Ok(tx
        .prepare_cached("DELETE FROM tunnels WHERE workspace_id = ?1 AND id = ?2")
        .and_then(|mut stmt| stmt.execute(params![workspace.as_str(), id]))
        .ctx("deleting a tunnel")?
        > 0)
}
