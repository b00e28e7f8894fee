//! Entity aliases (schema version 5, issue 18's entity dedup): merging an
//! entity into another and undoing it, resolving aliases, and how much
//! each entity is used — the SQLite store's semantics.
//!
//! Merges of one workspace are decided one at a time (a transaction-scoped
//! advisory lock), so two workers deduplicating at once never record one
//! alias twice. Mentions stay derived from drawer names, resolved through
//! `entity_aliases` when written. Not here: deciding what is a duplicate
//! (core's `alias`) and which entity is kept (the engine).

use std::collections::{BTreeSet, HashMap};

use deadpool_postgres::Transaction;
use mempalace_core::kg::{Entity, EntityAlias};
use mempalace_core::{Embedding, Timestamp, WorkspaceId};
use mempalace_store::{
    AliasMove, AliasMoveKind, AliasRecord, EntityUsage, MergeOutcome, StoreError, StoreResult, Unmerged,
};
use serde_json::Value;

use crate::error::Context;
use crate::kg::entities_where;
use crate::row::{drawer_id, json_object};

/// The canonical id of `id` when it is an alias, else `id` itself.
pub(crate) async fn resolve_one(tx: &Transaction<'_>, workspace: &WorkspaceId, id: &str) -> StoreResult<String> {
    let row = tx
        .query_opt(
            "SELECT canonical_id FROM entity_aliases WHERE workspace_id = $1 AND alias_id = $2",
            &[&workspace.as_str(), &id],
        )
        .await
        .ctx("resolving an alias")?;
    Ok(row.map_or_else(|| id.to_string(), |row| row.get(0)))
}

pub(crate) async fn resolve_entities(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    ids: &[String],
) -> StoreResult<HashMap<String, String>> {
    let rows = tx
        .query(
            "SELECT alias_id, canonical_id FROM entity_aliases WHERE workspace_id = $1 AND alias_id = ANY($2)",
            &[&workspace.as_str(), &ids],
        )
        .await
        .ctx("resolving aliases")?;
    Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
}

pub(crate) async fn entity_aliases(tx: &Transaction<'_>, workspace: &WorkspaceId) -> StoreResult<Vec<EntityAlias>> {
    let c = "reading entity aliases";
    let rows = tx
        .query(
            "SELECT a.alias_id, a.canonical_id, a.name, a.entity_type, a.properties, a.embedding_model, a.embedding, \
                    a.created_at, a.reason, a.merged_at, \
                    (SELECT count(*) FROM entity_alias_moves m WHERE m.workspace_id = a.workspace_id \
                        AND m.alias_id = a.alias_id AND m.kind IN ('subject', 'object')), \
                    (SELECT count(*) FROM entity_alias_moves m WHERE m.workspace_id = a.workspace_id \
                        AND m.alias_id = a.alias_id AND m.kind = 'mention') \
             FROM entity_aliases a WHERE a.workspace_id = $1 ORDER BY a.alias_id",
            &[&workspace.as_str()],
        )
        .await
        .ctx(c)?;
    let mut out = Vec::new();
    for row in rows {
        let id: String = row.get(0);
        let what = format!("entity alias {id}");
        let embedding = match (row.get::<_, Option<String>>(5), row.get::<_, Option<pgvector::Vector>>(6)) {
            (Some(model), Some(vector)) => Some(Embedding { model, vector: vector.to_vec() }),
            _ => None,
        };
        out.push(EntityAlias {
            canonical_id: row.get(1),
            alias: Entity {
                workspace_id: workspace.clone(),
                name: row.get(2),
                entity_type: row.get(3),
                properties: json_object(row.get(4), &what)?,
                embedding,
                created_at: row.get(7),
                id,
            },
            reason: row.get(8),
            merged_at: row.get(9),
            moved_triples: u64::try_from(row.get::<_, i64>(10)).unwrap_or(0),
            moved_mentions: u64::try_from(row.get::<_, i64>(11)).unwrap_or(0),
        });
    }
    Ok(out)
}

pub(crate) async fn entity_usage(tx: &Transaction<'_>, workspace: &WorkspaceId) -> StoreResult<Vec<EntityUsage>> {
    let rows = tx
        .query(
            "SELECT e.id, \
                (SELECT count(*) FROM triples t WHERE t.workspace_id = e.workspace_id \
                    AND (t.subject = e.id OR t.object = e.id)), \
                (SELECT count(*) FROM entity_mentions m WHERE m.workspace_id = e.workspace_id AND m.entity_id = e.id) \
             FROM entities e WHERE e.workspace_id = $1 ORDER BY e.id",
            &[&workspace.as_str()],
        )
        .await
        .ctx("counting entity use")?;
    Ok(rows
        .iter()
        .map(|row| EntityUsage {
            id: row.get(0),
            triples: u64::try_from(row.get::<_, i64>(1)).unwrap_or(0),
            mentions: u64::try_from(row.get::<_, i64>(2)).unwrap_or(0),
        })
        .collect())
}

async fn lock_merges(tx: &Transaction<'_>, workspace: &WorkspaceId) -> StoreResult<()> {
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '/entity-merge/' || $1))",
        &[&workspace.as_str()],
    )
    .await
    .ctx("locking entity merges")?;
    Ok(())
}

async fn entity(tx: &Transaction<'_>, workspace: &WorkspaceId, id: &str) -> StoreResult<Option<Entity>> {
    Ok(entities_where(tx, workspace, "AND id = $2", &[&id]).await?.pop())
}

pub(crate) async fn merge_entity(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    alias: &str,
    canonical: &str,
    reason: &str,
    at: &Timestamp,
) -> StoreResult<MergeOutcome> {
    let c = "merging an entity";
    let ws = workspace.as_str();
    lock_merges(tx, workspace).await?;
    let merged_into = tx
        .query_opt("SELECT canonical_id FROM entity_aliases WHERE workspace_id = $1 AND alias_id = $2", &[&ws, &alias])
        .await
        .ctx(c)?;
    if let Some(row) = merged_into {
        let current: String = row.get(0);
        return Ok(if current == canonical {
            MergeOutcome::AlreadyMerged
        } else {
            MergeOutcome::MergedElsewhere { canonical_id: current }
        });
    }
    if alias == canonical || entity(tx, workspace, canonical).await?.is_none() {
        return Ok(MergeOutcome::Missing { id: canonical.to_string() });
    }
    let Some(record) = entity(tx, workspace, alias).await? else {
        return Ok(MergeOutcome::Missing { id: alias.to_string() });
    };
    insert_alias(tx, &record, canonical, reason, at).await.ctx(c)?;
    // Aliases of the alias now stand for the canonical entity.
    tx.execute(
        "UPDATE entity_aliases SET canonical_id = $3 WHERE workspace_id = $1 AND canonical_id = $2",
        &[&ws, &alias, &canonical],
    )
    .await
    .ctx(c)?;
    for column in ["subject", "object"] {
        tx.execute(
            &format!(
                "INSERT INTO entity_alias_moves (workspace_id, alias_id, kind, ref_id) \
                 SELECT $1, $2, '{column}', id FROM triples WHERE workspace_id = $1 AND {column} = $2"
            ),
            &[&ws, &alias],
        )
        .await
        .ctx(c)?;
        tx.execute(
            &format!("UPDATE triples SET {column} = $3 WHERE workspace_id = $1 AND {column} = $2"),
            &[&ws, &alias, &canonical],
        )
        .await
        .ctx(c)?;
    }
    let mentions = tx
        .execute(
            "INSERT INTO entity_alias_moves (workspace_id, alias_id, kind, ref_id) \
             SELECT $1, $2, 'mention', drawer_id FROM entity_mentions WHERE workspace_id = $1 AND entity_id = $2",
            &[&ws, &alias],
        )
        .await
        .ctx(c)?;
    tx.execute(
        "INSERT INTO entity_mentions (workspace_id, entity_id, drawer_id) \
         SELECT $1, $3, drawer_id FROM entity_mentions WHERE workspace_id = $1 AND entity_id = $2 \
         ON CONFLICT DO NOTHING",
        &[&ws, &alias, &canonical],
    )
    .await
    .ctx(c)?;
    tx.execute("DELETE FROM entity_mentions WHERE workspace_id = $1 AND entity_id = $2", &[&ws, &alias])
        .await
        .ctx(c)?;
    tx.execute("DELETE FROM entities WHERE workspace_id = $1 AND id = $2", &[&ws, &alias]).await.ctx(c)?;
    let triples: i64 = tx
        .query_one(
            "SELECT count(DISTINCT ref_id) FROM entity_alias_moves WHERE workspace_id = $1 AND alias_id = $2 \
             AND kind IN ('subject', 'object')",
            &[&ws, &alias],
        )
        .await
        .ctx(c)?
        .get(0);
    Ok(MergeOutcome::Merged { triples: u64::try_from(triples).unwrap_or(0), mentions })
}

pub(crate) async fn unmerge_entity(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    alias: &str,
) -> StoreResult<Option<Unmerged>> {
    let c = "unmerging an entity";
    let ws = workspace.as_str();
    lock_merges(tx, workspace).await?;
    let Some(record) = entity_aliases(tx, workspace).await?.into_iter().find(|a| a.alias.id == alias) else {
        return Ok(None);
    };
    let canonical = record.canonical_id.clone();
    let mut moved: HashMap<String, Vec<String>> = HashMap::new();
    for row in tx
        .query("SELECT kind, ref_id FROM entity_alias_moves WHERE workspace_id = $1 AND alias_id = $2", &[&ws, &alias])
        .await
        .ctx(c)?
    {
        moved.entry(row.get(0)).or_default().push(row.get(1));
    }
    // The alias row goes first (its moves with it): the restored entity is
    // no longer resolved away, and the mentions are derived without it.
    tx.execute("DELETE FROM entity_aliases WHERE workspace_id = $1 AND alias_id = $2", &[&ws, &alias]).await.ctx(c)?;
    crate::kg::add_entities(tx, std::slice::from_ref(&record.alias)).await?;
    let mut restored = BTreeSet::new();
    for column in ["subject", "object"] {
        let ids = moved.get(column).cloned().unwrap_or_default();
        let rows = tx
            .query(
                &format!(
                    "UPDATE triples SET {column} = $2 WHERE workspace_id = $1 AND {column} = $3 AND id = ANY($4) \
                     RETURNING id"
                ),
                &[&ws, &alias, &canonical, &ids],
            )
            .await
            .ctx(c)?;
        restored.extend(rows.iter().map(|row| row.get::<_, String>(0)));
    }
    // Mentions are derived from drawer names: the recorded drawers, and any
    // drawer filed since that names the alias, are derived again.
    let mut again: BTreeSet<String> = moved.remove("mention").unwrap_or_default().into_iter().collect();
    for row in tx
        .query("SELECT drawer_id FROM entity_mentions WHERE workspace_id = $1 AND entity_id = $2", &[&ws, &canonical])
        .await
        .ctx(c)?
    {
        again.insert(row.get(0));
    }
    for drawer in again {
        let Some(row) = tx
            .query_opt("SELECT entities FROM drawers WHERE workspace_id = $1 AND id = $2", &[&ws, &drawer])
            .await
            .ctx(c)?
        else {
            continue;
        };
        let names: Vec<String> = serde_json::from_value(row.get(0)).unwrap_or_default();
        tx.execute("DELETE FROM entity_mentions WHERE workspace_id = $1 AND drawer_id = $2", &[&ws, &drawer])
            .await
            .ctx(c)?;
        crate::kg::write_mentions(tx, workspace, &drawer_id(&drawer)?, &names).await?;
    }
    let mentions: i64 = tx
        .query_one("SELECT count(*) FROM entity_mentions WHERE workspace_id = $1 AND entity_id = $2", &[&ws, &alias])
        .await
        .ctx(c)?
        .get(0);
    Ok(Some(Unmerged {
        canonical_id: canonical,
        triples: restored.len() as u64,
        mentions: u64::try_from(mentions).unwrap_or(0),
    }))
}

/// The workspace's aliases with what each merge moved (the export's
/// `entity_alias` lines).
pub(crate) async fn alias_records(tx: &Transaction<'_>, workspace: &WorkspaceId) -> StoreResult<Vec<AliasRecord>> {
    let rows = tx
        .query(
            "SELECT alias_id, kind, ref_id FROM entity_alias_moves WHERE workspace_id = $1 \
             ORDER BY alias_id, kind, ref_id",
            &[&workspace.as_str()],
        )
        .await
        .ctx("reading what merges moved")?;
    let mut by_alias: HashMap<String, Vec<AliasMove>> = HashMap::new();
    for row in rows {
        let (alias, kind, ref_id): (String, String, String) = (row.get(0), row.get(1), row.get(2));
        let kind = AliasMoveKind::parse(&kind)
            .ok_or_else(|| StoreError::invalid(format!("entity alias {alias}: a moved record of kind {kind:?}")))?;
        by_alias.entry(alias).or_default().push(AliasMove { kind, ref_id });
    }
    Ok(entity_aliases(tx, workspace)
        .await?
        .into_iter()
        .map(|alias| {
            let moves = by_alias.remove(&alias.alias.id).unwrap_or_default();
            AliasRecord { alias, moves }
        })
        .collect())
}

/// Imports an alias as exported (the SQLite store's rule): its row and its
/// moves unless the alias is known (as an alias or a live entity); refused
/// when its canonical entity is missing.
pub(crate) async fn import_alias(tx: &Transaction<'_>, record: &AliasRecord) -> StoreResult<bool> {
    let alias = &record.alias;
    let entity_record = &alias.alias;
    let workspace = &entity_record.workspace_id;
    let ws = workspace.as_str();
    let c = "importing an entity alias";
    lock_merges(tx, workspace).await?;
    let known: bool = tx
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM entity_aliases WHERE workspace_id = $1 AND alias_id = $2) \
                 OR EXISTS (SELECT 1 FROM entities WHERE workspace_id = $1 AND id = $2)",
            &[&ws, &entity_record.id],
        )
        .await
        .ctx(c)?
        .get(0);
    if known {
        return Ok(false);
    }
    if entity(tx, workspace, &alias.canonical_id).await?.is_none() {
        return Err(StoreError::invalid(format!(
            "entity alias {} names the entity {} it was merged into, which the import has not brought; \
             import the entity lines before the alias lines",
            entity_record.id, alias.canonical_id
        )));
    }
    insert_alias(tx, entity_record, &alias.canonical_id, &alias.reason, &alias.merged_at).await.ctx(c)?;
    for moved in &record.moves {
        tx.execute(
            "INSERT INTO entity_alias_moves (workspace_id, alias_id, kind, ref_id) VALUES ($1, $2, $3, $4) \
             ON CONFLICT DO NOTHING",
            &[&ws, &entity_record.id, &moved.kind.as_str(), &moved.ref_id],
        )
        .await
        .ctx("importing what a merge moved")?;
    }
    Ok(true)
}

/// Stores `entity`'s own record as an alias of `canonical`: the one writer
/// of an `entity_aliases` row (a merge, an import).
async fn insert_alias(
    tx: &Transaction<'_>,
    entity: &Entity,
    canonical: &str,
    reason: &str,
    merged_at: &Timestamp,
) -> Result<u64, tokio_postgres::Error> {
    tx.execute(
        "INSERT INTO entity_aliases (workspace_id, alias_id, canonical_id, name, entity_type, properties, \
         embedding_model, embedding, created_at, reason, merged_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        &[
            &entity.workspace_id.as_str(),
            &entity.id,
            &canonical,
            &entity.name,
            &entity.entity_type,
            &Value::Object(entity.properties.clone()),
            &entity.embedding.as_ref().map(|e| e.model.clone()),
            &entity.embedding.as_ref().map(|e| pgvector::Vector::from(e.vector.clone())),
            &entity.created_at,
            &reason,
            merged_at,
        ],
    )
    .await
}
