//! Entity aliases (schema version 10, issue 18's entity dedup): merging an
//! entity into another and undoing it, resolving aliases, and how much
//! each entity is used.
//!
//! Mentions stay derived from each drawer's `entities` names: a name is
//! resolved through `entity_aliases` when its mention is written
//! (`kg::write_mentions`), so a rebuild gives the same rows a merge left.
//! Not here: deciding what is a duplicate (core's `alias`) and which entity
//! is kept (the engine).

use std::collections::HashMap;

use mempalace_core::kg::{Entity, EntityAlias};
use mempalace_core::{DrawerId, Timestamp, WorkspaceId};
use mempalace_store::{
    AliasMove, AliasMoveKind, AliasRecord, EntityUsage, MergeOutcome, StoreError, StoreResult, Unmerged,
};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Transaction, params, params_from_iter};

use crate::error::Context;
use crate::records::{embedding_from, entities_where};
use crate::row::{json_object, parse_ts, to_json_text, ts, vector_to_blob};

/// The canonical id of `id` when it is an alias, else `id` itself.
pub(crate) fn resolve_one(conn: &Connection, workspace: &WorkspaceId, id: &str) -> StoreResult<String> {
    let canonical: Option<String> = conn
        .prepare_cached("SELECT canonical_id FROM entity_aliases WHERE workspace_id = ?1 AND alias_id = ?2")
        .and_then(|mut stmt| stmt.query_row(params![workspace.as_str(), id], |row| row.get(0)).optional())
        .ctx("resolving an alias")?;
    Ok(canonical.unwrap_or_else(|| id.to_string()))
}

pub(crate) fn resolve_entities(
    conn: &Connection,
    workspace: &WorkspaceId,
    ids: &[String],
) -> StoreResult<HashMap<String, String>> {
    let mut out = HashMap::new();
    for chunk in ids.chunks(500) {
        let placeholders = vec!["?"; chunk.len()].join(", ");
        let sql = format!(
            "SELECT alias_id, canonical_id FROM entity_aliases WHERE workspace_id = ? AND alias_id IN ({placeholders})"
        );
        let mut values = vec![SqlValue::Text(workspace.to_string())];
        values.extend(chunk.iter().map(|id| SqlValue::Text(id.clone())));
        let rows: Vec<(String, String)> = conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| {
                stmt.query_map(params_from_iter(values), |row| Ok((row.get(0)?, row.get(1)?)))?.collect()
            })
            .ctx("resolving aliases")?;
        out.extend(rows);
    }
    Ok(out)
}

pub(crate) fn entity_aliases(conn: &Connection, workspace: &WorkspaceId) -> StoreResult<Vec<EntityAlias>> {
    let c = "reading entity aliases";
    let mut stmt = conn
        .prepare_cached(
            "SELECT a.alias_id, a.canonical_id, a.name, a.entity_type, a.properties, a.embedding_model, a.embedding, \
                    a.created_at, a.reason, a.merged_at, \
                    (SELECT count(*) FROM entity_alias_moves m WHERE m.workspace_id = a.workspace_id \
                        AND m.alias_id = a.alias_id AND m.kind IN ('subject', 'object')), \
                    (SELECT count(*) FROM entity_alias_moves m WHERE m.workspace_id = a.workspace_id \
                        AND m.alias_id = a.alias_id AND m.kind = 'mention') \
             FROM entity_aliases a WHERE a.workspace_id = ?1 ORDER BY a.alias_id",
        )
        .ctx(c)?;
    let mut rows = stmt.query(params![workspace.as_str()]).ctx(c)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx(c)? {
        let id: String = row.get(0).ctx(c)?;
        let what = format!("entity alias {id}");
        out.push(EntityAlias {
            canonical_id: row.get(1).ctx(c)?,
            alias: Entity {
                workspace_id: workspace.clone(),
                name: row.get(2).ctx(c)?,
                entity_type: row.get(3).ctx(c)?,
                properties: json_object(&row.get::<_, String>(4).ctx(c)?, &what)?,
                embedding: embedding_from(row.get(5).ctx(c)?, row.get(6).ctx(c)?, &what)?,
                created_at: parse_ts(&row.get::<_, String>(7).ctx(c)?, &what)?,
                id,
            },
            reason: row.get(8).ctx(c)?,
            merged_at: parse_ts(&row.get::<_, String>(9).ctx(c)?, &what)?,
            moved_triples: u64::try_from(row.get::<_, i64>(10).ctx(c)?).unwrap_or(0),
            moved_mentions: u64::try_from(row.get::<_, i64>(11).ctx(c)?).unwrap_or(0),
        });
    }
    Ok(out)
}

pub(crate) fn entity_usage(conn: &Connection, workspace: &WorkspaceId) -> StoreResult<Vec<EntityUsage>> {
    let rows: Vec<(String, i64, i64)> = conn
        .prepare_cached(
            "SELECT e.id, \
                (SELECT count(*) FROM triples t WHERE t.workspace_id = e.workspace_id \
                    AND (t.subject = e.id OR t.object = e.id)), \
                (SELECT count(*) FROM entity_mentions m WHERE m.workspace_id = e.workspace_id AND m.entity_id = e.id) \
             FROM entities e WHERE e.workspace_id = ?1 ORDER BY e.id",
        )
        .and_then(|mut stmt| {
            stmt.query_map(params![workspace.as_str()], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?.collect()
        })
        .ctx("counting entity use")?;
    Ok(rows
        .into_iter()
        .map(|(id, triples, mentions)| EntityUsage {
            id,
            triples: u64::try_from(triples).unwrap_or(0),
            mentions: u64::try_from(mentions).unwrap_or(0),
        })
        .collect())
}

fn entity(tx: &Transaction<'_>, workspace: &WorkspaceId, id: &str) -> StoreResult<Option<Entity>> {
    Ok(entities_where(
        tx,
        workspace,
        "workspace_id = ? AND id = ?",
        vec![SqlValue::Text(workspace.to_string()), SqlValue::Text(id.to_string())],
    )?
    .pop())
}

pub(crate) fn merge_entity(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    alias: &str,
    canonical: &str,
    reason: &str,
    at: &Timestamp,
) -> StoreResult<MergeOutcome> {
    let c = "merging an entity";
    let ws = workspace.as_str();
    let merged_into: Option<String> = tx
        .prepare_cached("SELECT canonical_id FROM entity_aliases WHERE workspace_id = ?1 AND alias_id = ?2")
        .and_then(|mut stmt| stmt.query_row(params![ws, alias], |row| row.get(0)).optional())
        .ctx(c)?;
    if let Some(current) = merged_into {
        return Ok(if current == canonical {
            MergeOutcome::AlreadyMerged
        } else {
            MergeOutcome::MergedElsewhere { canonical_id: current }
        });
    }
    if alias == canonical || entity(tx, workspace, canonical)?.is_none() {
        return Ok(MergeOutcome::Missing { id: canonical.to_string() });
    }
    let Some(record) = entity(tx, workspace, alias)? else {
        return Ok(MergeOutcome::Missing { id: alias.to_string() });
    };
    insert_alias(tx, &record, canonical, reason, at).ctx(c)?;
    // Aliases of the alias now stand for the canonical entity: the
    // canonical entity of an alias is never itself an alias.
    tx.execute(
        "UPDATE entity_aliases SET canonical_id = ?3 WHERE workspace_id = ?1 AND canonical_id = ?2",
        params![ws, alias, canonical],
    )
    .ctx(c)?;
    for (kind, column) in [("subject", "subject"), ("object", "object")] {
        tx.execute(
            &format!(
                "INSERT INTO entity_alias_moves (workspace_id, alias_id, kind, ref_id) \
                 SELECT ?1, ?2, ?3, id FROM triples WHERE workspace_id = ?1 AND {column} = ?2"
            ),
            params![ws, alias, kind],
        )
        .ctx(c)?;
        tx.execute(
            &format!("UPDATE triples SET {column} = ?3 WHERE workspace_id = ?1 AND {column} = ?2"),
            params![ws, alias, canonical],
        )
        .ctx(c)?;
    }
    let mentions = tx
        .execute(
            "INSERT INTO entity_alias_moves (workspace_id, alias_id, kind, ref_id) \
             SELECT ?1, ?2, 'mention', drawer_id FROM entity_mentions WHERE workspace_id = ?1 AND entity_id = ?2",
            params![ws, alias],
        )
        .ctx(c)?;
    tx.execute(
        "INSERT OR IGNORE INTO entity_mentions (workspace_id, entity_id, drawer_id) \
         SELECT ?1, ?3, drawer_id FROM entity_mentions WHERE workspace_id = ?1 AND entity_id = ?2",
        params![ws, alias, canonical],
    )
    .ctx(c)?;
    tx.execute("DELETE FROM entity_mentions WHERE workspace_id = ?1 AND entity_id = ?2", params![ws, alias]).ctx(c)?;
    tx.execute("DELETE FROM entities WHERE workspace_id = ?1 AND id = ?2", params![ws, alias]).ctx(c)?;
    let triples: i64 = tx
        .query_row(
            "SELECT count(DISTINCT ref_id) FROM entity_alias_moves WHERE workspace_id = ?1 AND alias_id = ?2 \
             AND kind IN ('subject', 'object')",
            params![ws, alias],
            |row| row.get(0),
        )
        .ctx(c)?;
    Ok(MergeOutcome::Merged { triples: u64::try_from(triples).unwrap_or(0), mentions: mentions as u64 })
}

pub(crate) fn unmerge_entity(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    alias: &str,
) -> StoreResult<Option<Unmerged>> {
    let c = "unmerging an entity";
    let ws = workspace.as_str();
    let Some(record) = entity_aliases_one(tx, workspace, alias)? else { return Ok(None) };
    let canonical = record.canonical_id.clone();
    let moved = |kind: &str| -> StoreResult<Vec<String>> {
        tx.prepare_cached(
            "SELECT ref_id FROM entity_alias_moves WHERE workspace_id = ?1 AND alias_id = ?2 AND kind = ?3",
        )
        .and_then(|mut stmt| stmt.query_map(params![ws, alias, kind], |row| row.get(0))?.collect())
        .ctx(c)
    };
    let (subjects, objects, drawers) = (moved("subject")?, moved("object")?, moved("mention")?);
    // The alias row goes first (its moves with it): the restored entity is
    // no longer resolved away, and the mentions are derived without it.
    tx.execute("DELETE FROM entity_aliases WHERE workspace_id = ?1 AND alias_id = ?2", params![ws, alias]).ctx(c)?;
    crate::kg::add_entities(tx, std::slice::from_ref(&record.alias))?;
    let mut restored = std::collections::BTreeSet::new();
    for (column, ids) in [("subject", &subjects), ("object", &objects)] {
        for id in ids {
            let changed = tx
                .execute(
                    &format!("UPDATE triples SET {column} = ?2 WHERE workspace_id = ?1 AND {column} = ?3 AND id = ?4"),
                    params![ws, alias, canonical, id],
                )
                .ctx(c)?;
            if changed > 0 {
                restored.insert(id.clone());
            }
        }
    }
    let triples = restored.len() as u64;
    // Mentions are derived from drawer names: the recorded drawers, and
    // any drawer filed since that names the alias (its mention was resolved
    // to the canonical entity), are derived again now the alias is gone.
    let mut again: std::collections::BTreeSet<String> = drawers.into_iter().collect();
    let current: Vec<String> = tx
        .prepare_cached("SELECT drawer_id FROM entity_mentions WHERE workspace_id = ?1 AND entity_id = ?2")
        .and_then(|mut stmt| stmt.query_map(params![ws, canonical], |row| row.get(0))?.collect())
        .ctx(c)?;
    again.extend(current);
    for drawer in again {
        let names: Option<String> = tx
            .prepare_cached("SELECT entities FROM drawers WHERE workspace_id = ?1 AND id = ?2")
            .and_then(|mut stmt| stmt.query_row(params![ws, drawer], |row| row.get(0)).optional())
            .ctx(c)?;
        let Some(names) = names else { continue };
        let names: Vec<String> = serde_json::from_str(&names).unwrap_or_default();
        let drawer_id = DrawerId::parse(&drawer).map_err(|e| StoreError::invalid(format!("drawer {drawer}: {e}")))?;
        tx.execute("DELETE FROM entity_mentions WHERE workspace_id = ?1 AND drawer_id = ?2", params![ws, drawer])
            .ctx(c)?;
        crate::kg::write_mentions(tx, workspace, &drawer_id, &names)?;
    }
    let mentions: i64 = tx
        .query_row(
            "SELECT count(*) FROM entity_mentions WHERE workspace_id = ?1 AND entity_id = ?2",
            params![ws, alias],
            |row| row.get(0),
        )
        .ctx(c)?;
    let mentions = u64::try_from(mentions).unwrap_or(0);
    Ok(Some(Unmerged { canonical_id: canonical, triples, mentions }))
}

fn entity_aliases_one(tx: &Transaction<'_>, workspace: &WorkspaceId, alias: &str) -> StoreResult<Option<EntityAlias>> {
    // A workspace holds few aliases; reading them all keeps one reader of the row shape.
    Ok(entity_aliases(tx, workspace)?.into_iter().find(|a| a.alias.id == alias))
}

/// The workspace's aliases with what each merge moved (the export's
/// `entity_alias` lines).
pub(crate) fn alias_records(conn: &Connection, workspace: &WorkspaceId) -> StoreResult<Vec<AliasRecord>> {
    let c = "reading what merges moved";
    let moves: Vec<(String, String, String)> = conn
        .prepare_cached(
            "SELECT alias_id, kind, ref_id FROM entity_alias_moves WHERE workspace_id = ?1 ORDER BY alias_id, kind, ref_id",
        )
        .and_then(|mut stmt| {
            stmt.query_map(params![workspace.as_str()], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?.collect()
        })
        .ctx(c)?;
    let mut by_alias: HashMap<String, Vec<AliasMove>> = HashMap::new();
    for (alias, kind, ref_id) in moves {
        let kind = AliasMoveKind::parse(&kind)
            .ok_or_else(|| StoreError::invalid(format!("entity alias {alias}: a moved record of kind {kind:?}")))?;
        by_alias.entry(alias).or_default().push(AliasMove { kind, ref_id });
    }
    Ok(entity_aliases(conn, workspace)?
        .into_iter()
        .map(|alias| {
            let moves = by_alias.remove(&alias.alias.id).unwrap_or_default();
            AliasRecord { alias, moves }
        })
        .collect())
}

/// Imports an alias as exported: its row and its moves, unless the alias is
/// already known. An alias whose canonical entity is missing is refused
/// (the export lists entities first); an alias id that is a live entity
/// here is left alone (merge it by hand with `entities merge`).
pub(crate) fn import_alias(tx: &Transaction<'_>, record: &AliasRecord) -> StoreResult<bool> {
    let alias = &record.alias;
    let ws = alias.alias.workspace_id.as_str();
    let known: bool = tx
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM entity_aliases WHERE workspace_id = ?1 AND alias_id = ?2) \
                 OR EXISTS (SELECT 1 FROM entities WHERE workspace_id = ?1 AND id = ?2)",
            params![ws, alias.alias.id],
            |row| row.get(0),
        )
        .ctx("importing an entity alias")?;
    if known {
        return Ok(false);
    }
    if entity(tx, &alias.alias.workspace_id, &alias.canonical_id)?.is_none() {
        return Err(StoreError::invalid(format!(
            "entity alias {} names the entity {} it was merged into, which the import has not brought; \
             import the entity lines before the alias lines",
            alias.alias.id, alias.canonical_id
        )));
    }
    let entity = &alias.alias;
    insert_alias(tx, entity, &alias.canonical_id, &alias.reason, &alias.merged_at).ctx("importing an entity alias")?;
    for moved in &record.moves {
        tx.prepare_cached(
            "INSERT OR IGNORE INTO entity_alias_moves (workspace_id, alias_id, kind, ref_id) VALUES (?1, ?2, ?3, ?4)",
        )
        .and_then(|mut stmt| stmt.execute(params![ws, entity.id, moved.kind.as_str(), moved.ref_id]))
        .ctx("importing what a merge moved")?;
    }
    Ok(true)
}

/// Stores `entity`'s own record as an alias of `canonical`: the one writer
/// of an `entity_aliases` row (a merge, an import).
fn insert_alias(
    tx: &Transaction<'_>,
    entity: &Entity,
    canonical: &str,
    reason: &str,
    merged_at: &Timestamp,
) -> rusqlite::Result<usize> {
    tx.prepare_cached(
        "INSERT INTO entity_aliases (workspace_id, alias_id, canonical_id, name, entity_type, properties, \
         embedding_model, embedding, created_at, reason, merged_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        entity.workspace_id.as_str(),
        entity.id,
        canonical,
        entity.name,
        entity.entity_type,
        to_json_text(&entity.properties),
        entity.embedding.as_ref().map(|e| e.model.clone()),
        entity.embedding.as_ref().map(|e| vector_to_blob(&e.vector)),
        ts(&entity.created_at),
        reason,
        ts(merged_at),
    ])
}
