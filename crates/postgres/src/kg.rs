//! Knowledge-graph and palace-graph storage: entities, temporal triples,
//! entity mentions, hall counts and explicit tunnels.

use deadpool_postgres::Transaction;
use mempalace_core::kg::{Entity, Triple, entity_id};
use mempalace_core::{DrawerId, Embedding, Timestamp, WorkspaceId};
use mempalace_store::{Direction, HallCount, KgStats, StoreError, StoreResult, TripleOutcome};
use serde_json::Value;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;

use crate::error::Context;
use crate::records::{confidence, ensure_workspace};
use crate::row::{drawer_id, json_object, limit};

/// Writes the mentions of one drawer (its `entities` names), each name
/// resolved to its canonical entity when it is an alias.
pub(crate) async fn write_mentions(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    drawer: &DrawerId,
    names: &[String],
) -> StoreResult<()> {
    if names.is_empty() {
        return Ok(());
    }
    let ids: Vec<String> = names.iter().map(|name| entity_id(name)).collect();
    let stmt = tx
        .prepare_cached(
            "INSERT INTO entity_mentions (workspace_id, entity_id, drawer_id) \
             SELECT $1, coalesce(a.canonical_id, e), $2 FROM unnest($3::text[]) AS e \
             LEFT JOIN entity_aliases a ON a.workspace_id = $1 AND a.alias_id = e ON CONFLICT DO NOTHING",
        )
        .await
        .ctx("recording mentions")?;
    tx.execute(&stmt, &[&workspace.as_str(), &drawer.as_str(), &ids]).await.ctx("recording mentions")?;
    Ok(())
}

/// Entities of the workspace matching extra conditions (`$2`… bound to
/// `extra`), in id order.
pub(crate) async fn entities_where(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    condition: &str,
    extra: &[&(dyn ToSql + Sync)],
) -> StoreResult<Vec<Entity>> {
    let c = "reading entities";
    let sql = format!(
        "SELECT id, name, entity_type, properties, embedding_model, embedding, created_at \
         FROM entities WHERE workspace_id = $1 {condition} ORDER BY id"
    );
    let stmt = tx.prepare_cached(&sql).await.ctx(c)?;
    let workspace_text = workspace.as_str();
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&workspace_text];
    params.extend_from_slice(extra);
    let mut out = Vec::new();
    for row in tx.query(&stmt, &params).await.ctx(c)? {
        let id: String = row.get(0);
        let what = format!("entity {id}");
        let embedding = match (row.get::<_, Option<String>>(4), row.get::<_, Option<pgvector::Vector>>(5)) {
            (Some(model), Some(vector)) => Some(Embedding { model, vector: vector.to_vec() }),
            _ => None,
        };
        out.push(Entity {
            workspace_id: workspace.clone(),
            name: row.get(1),
            entity_type: row.get(2),
            properties: json_object(row.get(3), &what)?,
            embedding,
            created_at: row.get(6),
            id,
        });
    }
    Ok(out)
}

/// Triples of the workspace matching extra conditions, in id order.
pub(crate) async fn triples_where(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    condition: &str,
    extra: &[&(dyn ToSql + Sync)],
) -> StoreResult<Vec<Triple>> {
    let c = "reading triples";
    let sql = format!(
        "SELECT id, subject, predicate, object, valid_from, valid_to, confidence, source_drawer_id, source, \
         created_at FROM triples WHERE workspace_id = $1 {condition} ORDER BY id"
    );
    let stmt = tx.prepare_cached(&sql).await.ctx(c)?;
    let workspace_text = workspace.as_str();
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&workspace_text];
    params.extend_from_slice(extra);
    let mut out = Vec::new();
    for row in tx.query(&stmt, &params).await.ctx(c)? {
        let id: String = row.get(0);
        let what = format!("triple {id}");
        out.push(Triple {
            workspace_id: workspace.clone(),
            subject: row.get(1),
            predicate: row.get(2),
            object: row.get(3),
            valid_from: row.get(4),
            valid_to: row.get(5),
            confidence: confidence(row.get(6), &what)?,
            source_drawer_id: row.get::<_, Option<String>>(7).map(|id| drawer_id(&id)).transpose()?,
            source: row.get(8),
            created_at: row.get(9),
            id,
        });
    }
    Ok(out)
}

/// Names of the entities and of their aliases (so the extractor still
/// recognises "Postgres" once it is an alias of "PostgreSQL").
pub(crate) async fn entity_names(tx: &Transaction<'_>, workspace: &WorkspaceId) -> StoreResult<Vec<String>> {
    let stmt = tx
        .prepare_cached(
            "SELECT name FROM entities WHERE workspace_id = $1 \
             UNION SELECT name FROM entity_aliases WHERE workspace_id = $1 ORDER BY name",
        )
        .await
        .ctx("listing entity names")?;
    Ok(tx.query(&stmt, &[&workspace.as_str()]).await.ctx("listing entity names")?.iter().map(|r| r.get(0)).collect())
}

pub(crate) async fn triples_about(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    entity: &str,
    direction: Direction,
) -> StoreResult<Vec<Triple>> {
    let condition = match direction {
        Direction::Outgoing => "AND subject = $2",
        Direction::Incoming => "AND object = $2",
        Direction::Both => "AND (subject = $2 OR object = $2)",
    };
    let mut triples = triples_where(tx, workspace, condition, &[&entity]).await?;
    triples.sort_by(|a, b| a.valid_from.cmp(&b.valid_from).then(a.created_at.cmp(&b.created_at)).then(a.id.cmp(&b.id)));
    Ok(triples)
}

pub(crate) async fn kg_stats(tx: &Transaction<'_>, workspace: &WorkspaceId) -> StoreResult<KgStats> {
    let c = "counting the knowledge graph";
    let row = tx
        .query_one(
            "SELECT (SELECT count(*) FROM entities WHERE workspace_id = $1), \
                    (SELECT count(*) FROM triples WHERE workspace_id = $1), \
                    (SELECT count(*) FROM triples WHERE workspace_id = $1 AND valid_to IS NULL)",
            &[&workspace.as_str()],
        )
        .await
        .ctx(c)?;
    let n = |index: usize| u64::try_from(row.get::<_, i64>(index)).unwrap_or(0);
    let (entities, triples, current) = (n(0), n(1), n(2));
    let predicates = tx
        .query(
            "SELECT predicate, count(*) AS n FROM triples WHERE workspace_id = $1 \
             GROUP BY predicate ORDER BY n DESC, predicate",
            &[&workspace.as_str()],
        )
        .await
        .ctx(c)?
        .iter()
        .map(|row| (row.get::<_, String>(0), u64::try_from(row.get::<_, i64>(1)).unwrap_or(0)))
        .collect();
    Ok(KgStats { entities, triples, current, expired: triples - current, predicates })
}

pub(crate) async fn drawers_mentioning(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    entity_ids: &[String],
    count: usize,
) -> StoreResult<Vec<(DrawerId, u32)>> {
    if entity_ids.is_empty() {
        return Ok(Vec::new());
    }
    let stmt = tx
        .prepare_cached(
            "SELECT m.drawer_id, count(*) AS n FROM entity_mentions m JOIN drawers d \
             ON d.workspace_id = m.workspace_id AND d.id = m.drawer_id \
             WHERE m.workspace_id = $1 AND m.entity_id = ANY($2) AND d.status = 'active' \
             AND d.owner_user_id IS NULL \
             GROUP BY m.drawer_id, d.filed_at ORDER BY n DESC, d.filed_at DESC LIMIT $3",
        )
        .await
        .ctx("finding mentioning drawers")?;
    tx.query(&stmt, &[&workspace.as_str(), &entity_ids, &limit(count)])
        .await
        .ctx("finding mentioning drawers")?
        .iter()
        .map(|row| Ok((drawer_id(&row.get::<_, String>(0))?, u32::try_from(row.get::<_, i64>(1)).unwrap_or(0))))
        .collect()
}

pub(crate) async fn hall_counts(tx: &Transaction<'_>, workspace: &WorkspaceId) -> StoreResult<Vec<HallCount>> {
    let stmt = tx
        .prepare_cached(
            "SELECT wing, room, hall, drawers FROM hall_counts WHERE workspace_id = $1 ORDER BY wing, room, hall",
        )
        .await
        .ctx("reading hall counts")?;
    Ok(tx
        .query(&stmt, &[&workspace.as_str()])
        .await
        .ctx("reading hall counts")?
        .iter()
        .map(|row| HallCount {
            wing: row.get(0),
            room: row.get(1),
            hall: row.get(2),
            drawers: u64::try_from(row.get::<_, i64>(3)).unwrap_or(0),
        })
        .collect())
}

pub(crate) async fn add_entities(tx: &Transaction<'_>, entities: &[Entity]) -> StoreResult<usize> {
    let stmt = tx
        .prepare_cached(
            "INSERT INTO entities (workspace_id, id, name, entity_type, properties, embedding_model, embedding, \
             created_at) SELECT $1, $2, $3, $4, $5, $6, $7, $8 WHERE NOT EXISTS \
             (SELECT 1 FROM entity_aliases WHERE workspace_id = $1 AND alias_id = $2) ON CONFLICT DO NOTHING",
        )
        .await
        .ctx("adding an entity")?;
    let mut inserted = 0;
    for entity in entities {
        ensure_workspace(tx, &entity.workspace_id, &entity.created_at).await?;
        inserted += tx
            .execute(
                &stmt,
                &[
                    &entity.workspace_id.as_str(),
                    &entity.id,
                    &entity.name,
                    &entity.entity_type,
                    &Value::Object(entity.properties.clone()),
                    &entity.embedding.as_ref().map(|e| e.model.clone()),
                    &entity.embedding.as_ref().map(|e| pgvector::Vector::from(e.vector.clone())),
                    &entity.created_at,
                ],
            )
            .await
            .ctx("adding an entity")?;
    }
    Ok(usize::try_from(inserted).unwrap_or(usize::MAX))
}

/// Inserts a triple under `id` unless the id is taken; returns the rows
/// inserted. A missing entity is the caller's mistake, said as such.
pub(crate) async fn insert_triple(tx: &Transaction<'_>, triple: &Triple, id: &str) -> StoreResult<u64> {
    let stmt = tx
        .prepare_cached(
            "INSERT INTO triples (workspace_id, id, subject, predicate, object, valid_from, valid_to, confidence, \
             source_drawer_id, source, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
             ON CONFLICT DO NOTHING",
        )
        .await
        .ctx("adding a fact")?;
    tx.execute(
        &stmt,
        &[
            &triple.workspace_id.as_str(),
            &id,
            &triple.subject,
            &triple.predicate,
            &triple.object,
            &triple.valid_from,
            &triple.valid_to,
            &triple.confidence.get(),
            &triple.source_drawer_id.as_ref().map(DrawerId::as_str),
            &triple.source,
            &triple.created_at,
        ],
    )
    .await
    .map_err(|error| match error.code() {
        Some(code) if *code == SqlState::FOREIGN_KEY_VIOLATION => StoreError::invalid(format!(
            "fact {} → {} → {} refers to an entity that does not exist; add the entities first",
            triple.subject, triple.predicate, triple.object
        )),
        _ => crate::error::map("adding a fact", error),
    })
}

pub(crate) async fn add_triple(tx: &Transaction<'_>, triple: &Triple) -> StoreResult<TripleOutcome> {
    Triple::check_interval(triple.valid_from, triple.valid_to)
        .map_err(|error| StoreError::invalid(error.to_string()))?;
    // A fact naming an alias is about its canonical entity.
    let resolved = Triple {
        subject: crate::alias::resolve_one(tx, &triple.workspace_id, &triple.subject).await?,
        object: crate::alias::resolve_one(tx, &triple.workspace_id, &triple.object).await?,
        ..triple.clone()
    };
    let triple = &resolved;
    // Facts about one subject and predicate are decided one writer at a time,
    // so two processes stating the same open fact store it once.
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '/fact/' || $1 || '/' || $2 || '/' || $3))",
        &[&triple.workspace_id.as_str(), &triple.subject, &triple.predicate],
    )
    .await
    .ctx("locking a fact")?;
    let existing = tx
        .query_opt(
            "SELECT id FROM triples WHERE workspace_id = $1 AND subject = $2 AND predicate = $3 AND object = $4 \
             AND valid_to IS NULL LIMIT 1",
            &[&triple.workspace_id.as_str(), &triple.subject, &triple.predicate, &triple.object],
        )
        .await
        .ctx("looking for an open fact")?;
    if triple.valid_to.is_none()
        && let Some(row) = existing
    {
        return Ok(TripleOutcome::Existing(row.get(0)));
    }
    if insert_triple(tx, triple, &triple.id).await? > 0 {
        return Ok(TripleOutcome::Added(triple.id.clone()));
    }
    // The id is taken: the same fact (same window) is reported as existing;
    // a different fact with the same deterministic id (one without a start,
    // ended and now stated again) gets a fresh id.
    let same_window: bool = tx
        .query_one(
            "SELECT valid_from IS NOT DISTINCT FROM $3 AND valid_to IS NOT DISTINCT FROM $4 FROM triples \
             WHERE workspace_id = $1 AND id = $2",
            &[&triple.workspace_id.as_str(), &triple.id, &triple.valid_from, &triple.valid_to],
        )
        .await
        .ctx("comparing a fact")?
        .get(0);
    if same_window {
        return Ok(TripleOutcome::Existing(triple.id.clone()));
    }
    let id = triple.reissued_id();
    Ok(if insert_triple(tx, triple, &id).await? > 0 { TripleOutcome::Added(id) } else { TripleOutcome::Existing(id) })
}

pub(crate) async fn invalidate_triples(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    subject: &str,
    predicate: &str,
    object: &str,
    ended: &Timestamp,
) -> StoreResult<usize> {
    let subject = crate::alias::resolve_one(tx, workspace, subject).await?;
    let object = crate::alias::resolve_one(tx, workspace, object).await?;
    // An end before the start would invert the window: such facts end at their start.
    let changed = tx
        .execute(
            "UPDATE triples SET valid_to = greatest(coalesce(valid_from, $5), $5) \
             WHERE workspace_id = $1 AND subject = $2 AND predicate = $3 AND object = $4 AND valid_to IS NULL",
            &[&workspace.as_str(), &subject, &predicate, &object, ended],
        )
        .await
        .ctx("ending a fact")?;
    Ok(usize::try_from(changed).unwrap_or(usize::MAX))
}

pub(crate) async fn delete_triple(tx: &Transaction<'_>, workspace: &WorkspaceId, id: &str) -> StoreResult<bool> {
    Ok(tx
        .execute("DELETE FROM triples WHERE workspace_id = $1 AND id = $2", &[&workspace.as_str(), &id])
        .await
        .ctx("deleting a fact")?
        > 0)
}

pub(crate) async fn delete_tunnel(tx: &Transaction<'_>, workspace: &WorkspaceId, id: &str) -> StoreResult<bool> {
    Ok(tx
        .execute("DELETE FROM tunnels WHERE workspace_id = $1 AND id = $2", &[&workspace.as_str(), &id])
        .await
        .ctx("deleting a tunnel")?
        > 0)
}
