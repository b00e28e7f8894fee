//! Reading and writing whole records: drawers (with tags, lexical entry and
//! mentions), identity, sessions, summaries, tunnels, centroids, vectors
//! and their cache, imports, source cursors.

use std::collections::HashMap;

use deadpool_postgres::Transaction;
use mempalace_core::centroid::Centroid;
use mempalace_core::lexical;
use mempalace_core::session::{EpisodicSummary, Session};
use mempalace_core::tunnel::{Place, Tunnel};
use mempalace_core::{
    Confidence, ContentHash, Drawer, DrawerId, DrawerStatus, DrawerTag, Embedding, Identity, Room, Timestamp, Wing,
    WorkspaceId,
};
use mempalace_store::{IdentityRecord, PalaceRecord, PutOutcome, RecordCounts, StoreError, StoreResult, Taxonomy};
use serde_json::Value;

use crate::error::Context;
use crate::row::{
    DRAWER_COLUMN_COUNT, DRAWER_COLUMNS, drawer_from_row, drawer_id, drawer_params, json_object, json_strings, limit,
    refs,
};

pub(crate) async fn ensure_workspace(tx: &Transaction<'_>, workspace: &WorkspaceId, at: &Timestamp) -> StoreResult<()> {
    let stmt = tx
        .prepare_cached("INSERT INTO workspaces (id, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING")
        .await
        .ctx("recording the workspace")?;
    tx.execute(&stmt, &[&workspace.as_str(), at]).await.ctx("recording the workspace")?;
    Ok(())
}

pub(crate) async fn workspaces(tx: &Transaction<'_>) -> StoreResult<Vec<WorkspaceId>> {
    let rows = tx.query("SELECT id FROM workspaces ORDER BY id", &[]).await.ctx("listing workspaces")?;
    rows.iter()
        .map(|row| {
            let id: String = row.get(0);
            WorkspaceId::parse(&id).map_err(|e| StoreError::invalid(format!("workspace {id:?}: {e}")))
        })
        .collect()
}

/// Inserts one drawer if its id is new, with its tags, lexical entry and mentions.
pub(crate) async fn insert_drawer(tx: &Transaction<'_>, drawer: &Drawer) -> StoreResult<PutOutcome> {
    ensure_workspace(tx, &drawer.workspace_id, &drawer.filed_at).await?;
    let placeholders: Vec<String> = (1..=DRAWER_COLUMN_COUNT).map(|n| format!("${n}")).collect();
    let sql = format!(
        "INSERT INTO drawers ({DRAWER_COLUMNS}, lexemes) VALUES ({}, to_tsvector('mempalace', ${})) \
         ON CONFLICT (workspace_id, id) DO NOTHING",
        placeholders.join(", "),
        DRAWER_COLUMN_COUNT + 1
    );
    let stmt = tx.prepare_cached(&sql).await.ctx("inserting a drawer")?;
    let mut params = drawer_params(drawer);
    params.push(Box::new(lexical::index_text(drawer.content.as_str()).into_owned()));
    let inserted = tx.execute(&stmt, &refs(&params)).await.ctx("inserting a drawer")?;
    if inserted == 0 {
        return Ok(PutOutcome::Existing);
    }
    crate::kg::write_mentions(tx, &drawer.workspace_id, &drawer.id, &drawer.entities).await?;
    if !drawer.tags.is_empty() {
        let stmt = tx
            .prepare_cached(
                "INSERT INTO drawer_tags (workspace_id, drawer_id, tag, source) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT DO NOTHING",
            )
            .await
            .ctx("tagging a drawer")?;
        for tag in &drawer.tags {
            tx.execute(&stmt, &[&drawer.workspace_id.as_str(), &drawer.id.as_str(), &tag.tag, &tag.source.as_str()])
                .await
                .ctx("tagging a drawer")?;
        }
    }
    Ok(PutOutcome::Inserted)
}

pub(crate) async fn set_drawer_status(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    id: &DrawerId,
    status: DrawerStatus,
    reason: Option<&str>,
    at: &Timestamp,
) -> StoreResult<bool> {
    let stmt = tx
        .prepare_cached(
            "UPDATE drawers SET status = $3, status_reason = $4, updated_at = $5 WHERE workspace_id = $1 AND id = $2",
        )
        .await
        .ctx("changing a drawer's status")?;
    let changed = tx
        .execute(&stmt, &[&workspace.as_str(), &id.as_str(), &status.as_str(), &reason, at])
        .await
        .ctx("changing a drawer's status")?;
    Ok(changed > 0)
}

pub(crate) async fn delete_drawer(tx: &Transaction<'_>, workspace: &WorkspaceId, id: &DrawerId) -> StoreResult<bool> {
    let stmt =
        tx.prepare_cached("DELETE FROM drawers WHERE workspace_id = $1 AND id = $2").await.ctx("deleting a drawer")?;
    Ok(tx.execute(&stmt, &[&workspace.as_str(), &id.as_str()]).await.ctx("deleting a drawer")? > 0)
}

/// Inserts a session; an existing one is updated (`upsert`) or kept.
/// Returns the rows changed.
pub(crate) async fn write_session(tx: &Transaction<'_>, session: &Session, upsert: bool) -> StoreResult<u64> {
    ensure_workspace(tx, &session.workspace_id, &session.started_at).await?;
    let on_conflict = if upsert {
        "ON CONFLICT (workspace_id, id) DO UPDATE SET agent = excluded.agent, user_id = excluded.user_id, \
         context = excluded.context, status = excluded.status, outcome_score = excluded.outcome_score, \
         session_count = excluded.session_count, ended_at = excluded.ended_at"
    } else {
        "ON CONFLICT DO NOTHING"
    };
    let stmt = tx
        .prepare_cached(&format!(
            "INSERT INTO sessions (workspace_id, id, agent, user_id, context, status, outcome_score, \
             session_count, started_at, ended_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) {on_conflict}"
        ))
        .await
        .ctx("saving a session")?;
    tx.execute(
        &stmt,
        &[
            &session.workspace_id.as_str(),
            &session.id,
            &session.agent,
            &session.user_id,
            &Value::Object(session.context.clone()),
            &session.status.as_str(),
            &session.outcome_score,
            &i32::try_from(session.session_count).unwrap_or(i32::MAX),
            &session.started_at,
            &session.ended_at,
        ],
    )
    .await
    .ctx("saving a session")
}

pub(crate) async fn attach_tags(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    drawers: &mut [Drawer],
) -> StoreResult<()> {
    if drawers.is_empty() {
        return Ok(());
    }
    let ids: Vec<&str> = drawers.iter().map(|d| d.id.as_str()).collect();
    let by_id: HashMap<String, usize> =
        drawers.iter().enumerate().map(|(index, d)| (d.id.as_str().to_string(), index)).collect();
    let stmt = tx
        .prepare_cached(
            "SELECT drawer_id, tag, source FROM drawer_tags WHERE workspace_id = $1 AND drawer_id = ANY($2) \
             ORDER BY drawer_id, tag",
        )
        .await
        .ctx("reading tags")?;
    for row in tx.query(&stmt, &[&workspace.as_str(), &ids]).await.ctx("reading tags")? {
        let (drawer, tag, source): (String, String, String) = (row.get(0), row.get(1), row.get(2));
        let source = source.parse().map_err(|e| StoreError::invalid(format!("tag {tag:?} of drawer {drawer}: {e}")))?;
        if let Some(&index) = by_id.get(&drawer) {
            drawers[index].tags.push(DrawerTag { tag, source });
        }
    }
    Ok(())
}

/// Drawers read by a query whose first columns are [`DRAWER_COLUMNS`], with their tags.
pub(crate) async fn drawers_where(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    sql: &str,
    params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> StoreResult<Vec<Drawer>> {
    let stmt = tx.prepare_cached(sql).await.ctx("reading drawers")?;
    let rows = tx.query(&stmt, params).await.ctx("reading drawers")?;
    let mut drawers = rows.iter().map(|row| drawer_from_row(row, 0)).collect::<StoreResult<Vec<_>>>()?;
    attach_tags(tx, workspace, &mut drawers).await?;
    Ok(drawers)
}

pub(crate) async fn drawers_by_id(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    ids: &[DrawerId],
) -> StoreResult<Vec<Drawer>> {
    let texts: Vec<&str> = ids.iter().map(DrawerId::as_str).collect();
    let found = drawers_where(
        tx,
        workspace,
        &format!("SELECT {DRAWER_COLUMNS} FROM drawers WHERE workspace_id = $1 AND id = ANY($2)"),
        &[&workspace.as_str(), &texts],
    )
    .await?;
    let mut by_id: HashMap<String, Drawer> = found.into_iter().map(|d| (d.id.as_str().to_string(), d)).collect();
    Ok(ids.iter().filter_map(|id| by_id.remove(id.as_str())).collect())
}

pub(crate) async fn scan_drawers(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    after: Option<&DrawerId>,
    count: usize,
) -> StoreResult<Vec<Drawer>> {
    let after = after.map_or("", DrawerId::as_str);
    drawers_where(
        tx,
        workspace,
        &format!(
            "SELECT {DRAWER_COLUMNS} FROM drawers WHERE workspace_id = $1 AND id > $2 \
             ORDER BY id LIMIT $3"
        ),
        &[&workspace.as_str(), &after, &limit(count)],
    )
    .await
}

pub(crate) async fn taxonomy(tx: &Transaction<'_>, workspace: &WorkspaceId) -> StoreResult<Taxonomy> {
    let stmt = tx
        .prepare_cached("SELECT wing, room, drawers FROM room_counts WHERE workspace_id = $1 ORDER BY wing, room")
        .await
        .ctx("reading room counts")?;
    let mut taxonomy = Taxonomy::default();
    for row in tx.query(&stmt, &[&workspace.as_str()]).await.ctx("reading room counts")? {
        let (wing, room, count): (String, String, i64) = (row.get(0), row.get(1), row.get(2));
        taxonomy.add(&wing, &room, u64::try_from(count).unwrap_or(0));
    }
    Ok(taxonomy)
}

pub(crate) async fn source_cursor(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    source: &str,
) -> StoreResult<Option<String>> {
    let stmt = tx
        .prepare_cached("SELECT cursor FROM source_cursors WHERE workspace_id = $1 AND source = $2")
        .await
        .ctx("reading a source cursor")?;
    Ok(tx.query_opt(&stmt, &[&workspace.as_str(), &source]).await.ctx("reading a source cursor")?.map(|row| row.get(0)))
}

pub(crate) async fn set_source_cursor(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    source: &str,
    cursor: Option<&str>,
    at: &Timestamp,
) -> StoreResult<()> {
    let c = "writing a source cursor";
    match cursor {
        Some(cursor) => {
            let stmt = tx
                .prepare_cached(
                    "INSERT INTO source_cursors (workspace_id, source, cursor, updated_at) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (workspace_id, source) DO UPDATE SET cursor = excluded.cursor, \
                     updated_at = excluded.updated_at",
                )
                .await
                .ctx(c)?;
            tx.execute(&stmt, &[&workspace.as_str(), &source, &cursor, at]).await.ctx(c)?;
        }
        None => {
            let stmt =
                tx.prepare_cached("DELETE FROM source_cursors WHERE workspace_id = $1 AND source = $2").await.ctx(c)?;
            tx.execute(&stmt, &[&workspace.as_str(), &source]).await.ctx(c)?;
        }
    }
    Ok(())
}

pub(crate) async fn identity(tx: &Transaction<'_>, workspace: &WorkspaceId) -> StoreResult<Option<IdentityRecord>> {
    let stmt = tx
        .prepare_cached("SELECT text, updated_at FROM identities WHERE workspace_id = $1")
        .await
        .ctx("reading the identity")?;
    let row = tx.query_opt(&stmt, &[&workspace.as_str()]).await.ctx("reading the identity")?;
    row.map(|row| {
        Ok(IdentityRecord {
            workspace_id: workspace.clone(),
            identity: Identity::parse(row.get::<_, String>(0))
                .map_err(|e| StoreError::invalid(format!("identity: {e}")))?,
            updated_at: row.get(1),
        })
    })
    .transpose()
}

pub(crate) async fn set_identity(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    identity: &Identity,
    at: &Timestamp,
) -> StoreResult<()> {
    ensure_workspace(tx, workspace, at).await?;
    let stmt = tx
        .prepare_cached(
            "INSERT INTO identities (workspace_id, text, updated_at) VALUES ($1, $2, $3) \
             ON CONFLICT (workspace_id) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
        )
        .await
        .ctx("setting the identity")?;
    tx.execute(&stmt, &[&workspace.as_str(), &identity.as_str(), at]).await.ctx("setting the identity")?;
    Ok(())
}

pub(crate) fn confidence(value: f64, what: &str) -> StoreResult<Confidence> {
    Confidence::new(value).map_err(|e| StoreError::invalid(format!("{what}: {e}")))
}

pub(crate) async fn sessions(tx: &Transaction<'_>, workspace: &WorkspaceId) -> StoreResult<Vec<Session>> {
    let c = "reading sessions";
    let stmt = tx
        .prepare_cached(
            "SELECT id, agent, user_id, context, status, outcome_score, session_count, started_at, ended_at \
             FROM sessions WHERE workspace_id = $1 ORDER BY id",
        )
        .await
        .ctx(c)?;
    let mut out = Vec::new();
    for row in tx.query(&stmt, &[&workspace.as_str()]).await.ctx(c)? {
        let id: String = row.get(0);
        let what = format!("session {id}");
        let status: String = row.get(4);
        out.push(Session {
            workspace_id: workspace.clone(),
            agent: row.get(1),
            user_id: row.get(2),
            context: json_object(row.get(3), &what)?,
            status: status.parse().map_err(|e| StoreError::invalid(format!("{what}: {e}")))?,
            outcome_score: row.get(5),
            session_count: u32::try_from(row.get::<_, i32>(6)).unwrap_or(0),
            started_at: row.get(7),
            ended_at: row.get(8),
            id,
        });
    }
    Ok(out)
}

pub(crate) async fn episodic_summaries(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
) -> StoreResult<Vec<EpisodicSummary>> {
    let c = "reading episodic summaries";
    let stmt = tx
        .prepare_cached(
            "SELECT id, session_id, source_id, agent, user_id, summary, l0_abstract, key_topics, created_at, \
             expires_at, promoted_at FROM episodic_summaries WHERE workspace_id = $1 ORDER BY id",
        )
        .await
        .ctx(c)?;
    let mut out = Vec::new();
    for row in tx.query(&stmt, &[&workspace.as_str()]).await.ctx(c)? {
        let id: String = row.get(0);
        let what = format!("episodic summary {id}");
        out.push(EpisodicSummary {
            workspace_id: workspace.clone(),
            session_id: row.get(1),
            source_id: row.get(2),
            agent: row.get(3),
            user_id: row.get(4),
            summary: row.get(5),
            l0_abstract: row.get(6),
            key_topics: json_strings(row.get(7), &what)?,
            created_at: row.get(8),
            expires_at: row.get(9),
            promoted_at: row.get(10),
            id,
        });
    }
    Ok(out)
}

pub(crate) async fn tunnels(tx: &Transaction<'_>, workspace: &WorkspaceId) -> StoreResult<Vec<Tunnel>> {
    let c = "reading tunnels";
    let stmt = tx
        .prepare_cached(
            "SELECT id, wing_a, room_a, wing_b, room_b, label, created_by, created_at \
             FROM tunnels WHERE workspace_id = $1 ORDER BY id",
        )
        .await
        .ctx(c)?;
    let mut out = Vec::new();
    for row in tx.query(&stmt, &[&workspace.as_str()]).await.ctx(c)? {
        let id: String = row.get(0);
        let what = format!("tunnel {id}");
        let bad = |e: mempalace_core::ValidationError| StoreError::invalid(format!("{what}: {e}"));
        let place = |wing: String, room: String| -> StoreResult<Place> {
            Ok(Place { wing: Wing::parse(&wing).map_err(bad)?, room: Room::parse(&room).map_err(bad)? })
        };
        out.push(Tunnel {
            workspace_id: workspace.clone(),
            a: place(row.get(1), row.get(2))?,
            b: place(row.get(3), row.get(4))?,
            label: row.get(5),
            created_by: row.get(6),
            created_at: row.get(7),
            id,
        });
    }
    Ok(out)
}

pub(crate) async fn centroids(tx: &Transaction<'_>, workspace: &WorkspaceId) -> StoreResult<Vec<Centroid>> {
    let c = "reading centroids";
    let stmt = tx
        .prepare_cached(
            "SELECT memory_type, embedding_model, vector, sample_count, computed_at, source_hash \
             FROM centroids WHERE workspace_id = $1 ORDER BY memory_type",
        )
        .await
        .ctx(c)?;
    let mut out = Vec::new();
    for row in tx.query(&stmt, &[&workspace.as_str()]).await.ctx(c)? {
        let memory_type: String = row.get(0);
        let what = format!("centroid {memory_type}");
        out.push(Centroid {
            workspace_id: workspace.clone(),
            memory_type: memory_type.parse().map_err(|e| StoreError::invalid(format!("{what}: {e}")))?,
            embedding: Embedding { model: row.get(1), vector: row.get::<_, pgvector::Vector>(2).to_vec() },
            sample_count: u32::try_from(row.get::<_, i32>(3)).unwrap_or(0),
            computed_at: row.get(4),
            source_hash: row.get(5),
        });
    }
    Ok(out)
}

fn counted(changed: u64) -> RecordCounts {
    if changed > 0 { RecordCounts { inserted: 1, existing: 0 } } else { RecordCounts { inserted: 0, existing: 1 } }
}

/// Inserts one exported record if its key is absent.
pub(crate) async fn import_record(tx: &Transaction<'_>, record: &PalaceRecord) -> StoreResult<RecordCounts> {
    match record {
        PalaceRecord::Drawer(drawer) => Ok(match insert_drawer(tx, drawer).await? {
            PutOutcome::Inserted => RecordCounts { inserted: 1, existing: 0 },
            PutOutcome::Existing => RecordCounts { inserted: 0, existing: 1 },
        }),
        PalaceRecord::Identity(record) => {
            ensure_workspace(tx, &record.workspace_id, &record.updated_at).await?;
            let changed = tx
                .execute(
                    "INSERT INTO identities (workspace_id, text, updated_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                    &[&record.workspace_id.as_str(), &record.identity.as_str(), &record.updated_at],
                )
                .await
                .ctx("importing an identity")?;
            Ok(counted(changed))
        }
        PalaceRecord::Entity(entity) => {
            Ok(counted(crate::kg::add_entities(tx, std::slice::from_ref(entity)).await? as u64))
        }
        PalaceRecord::EntityAlias(record) => {
            ensure_workspace(tx, &record.alias.alias.workspace_id, &record.alias.merged_at).await?;
            Ok(counted(u64::from(crate::alias::import_alias(tx, record).await?)))
        }
        PalaceRecord::Triple(triple) => {
            ensure_workspace(tx, &triple.workspace_id, &triple.created_at).await?;
            Ok(counted(crate::kg::insert_triple(tx, triple, &triple.id).await?))
        }
        PalaceRecord::Session(session) => Ok(counted(write_session(tx, session, false).await?)),
        PalaceRecord::EpisodicSummary(summary) => Ok(counted(write_episodic_summary(tx, summary, false).await?)),
        PalaceRecord::Tunnel(tunnel) => {
            ensure_workspace(tx, &tunnel.workspace_id, &tunnel.created_at).await?;
            let changed = tx
                .execute(
                    "INSERT INTO tunnels (workspace_id, id, wing_a, room_a, wing_b, room_b, label, created_by, \
                     created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
                    &[
                        &tunnel.workspace_id.as_str(),
                        &tunnel.id,
                        &tunnel.a.wing.as_str(),
                        &tunnel.a.room.as_str(),
                        &tunnel.b.wing.as_str(),
                        &tunnel.b.room.as_str(),
                        &tunnel.label,
                        &tunnel.created_by,
                        &tunnel.created_at,
                    ],
                )
                .await
                .ctx("importing a tunnel")?;
            Ok(counted(changed))
        }
        PalaceRecord::Centroid(centroid) => Ok(counted(crate::centroid::write_centroid(tx, centroid, false).await?)),
        PalaceRecord::Artifact(artifact) => Ok(match crate::coordination::put_artifact(tx, artifact).await? {
            PutOutcome::Inserted => RecordCounts { inserted: 1, existing: 0 },
            PutOutcome::Existing => RecordCounts { inserted: 0, existing: 1 },
        }),
        PalaceRecord::Event(event) => Ok(counted(u64::from(crate::coordination::import_event(tx, event).await?))),
    }
}

pub(crate) async fn embeddings_by_hash(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    model: &str,
    hashes: &[ContentHash],
) -> StoreResult<HashMap<ContentHash, Vec<f32>>> {
    let c = "looking up cached vectors";
    let texts: Vec<&str> = hashes.iter().map(ContentHash::as_str).collect();
    let stmt = tx
        .prepare_cached(
            "SELECT DISTINCT ON (content_hash) content_hash, embedding FROM drawers \
             WHERE workspace_id = $1 AND embedding_model = $2 AND content_hash = ANY($3) AND embedding IS NOT NULL \
               AND context->'preceded_by' IS NULL \
             UNION ALL \
             SELECT content_hash, vector FROM embedding_cache \
             WHERE workspace_id = $1 AND model = $2 AND content_hash = ANY($3)",
        )
        .await
        .ctx(c)?;
    let mut found = HashMap::with_capacity(hashes.len());
    for row in tx.query(&stmt, &[&workspace.as_str(), &model, &texts]).await.ctx(c)? {
        let hash: String = row.get(0);
        let hash = ContentHash::parse(&hash).map_err(|e| StoreError::invalid(format!("cached vector {hash}: {e}")))?;
        // Drawers come first in the union: their vector wins.
        found.entry(hash).or_insert_with(|| row.get::<_, pgvector::Vector>(1).to_vec());
    }
    Ok(found)
}

pub(crate) async fn drawers_missing_embedding(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    model: &str,
    count: usize,
) -> StoreResult<Vec<(DrawerId, mempalace_core::Content)>> {
    let c = "finding drawers without vectors";
    let stmt = tx
        .prepare_cached(
            "SELECT id, content FROM drawers WHERE workspace_id = $1 \
             AND (embedding_model IS NULL OR embedding_model <> $2 OR embedding IS NULL) \
             ORDER BY id LIMIT $3",
        )
        .await
        .ctx(c)?;
    tx.query(&stmt, &[&workspace.as_str(), &model, &limit(count)])
        .await
        .ctx(c)?
        .iter()
        .map(|row| {
            let id: String = row.get(0);
            let bad = |e: mempalace_core::ValidationError| StoreError::invalid(format!("drawer {id}: {e}"));
            Ok((drawer_id(&id)?, mempalace_core::Content::parse(row.get::<_, String>(1)).map_err(bad)?))
        })
        .collect()
}

pub(crate) async fn embedding_models(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
) -> StoreResult<Vec<(Option<String>, u64)>> {
    let c = "counting vectors per model";
    let stmt = tx
        .prepare_cached(
            "SELECT CASE WHEN embedding IS NULL THEN NULL ELSE embedding_model END AS model, count(*) \
             FROM drawers WHERE workspace_id = $1 GROUP BY 1 ORDER BY 1 NULLS FIRST",
        )
        .await
        .ctx(c)?;
    Ok(tx
        .query(&stmt, &[&workspace.as_str()])
        .await
        .ctx(c)?
        .iter()
        .map(|row| (row.get::<_, Option<String>>(0), u64::try_from(row.get::<_, i64>(1)).unwrap_or(0)))
        .collect())
}

pub(crate) async fn set_embeddings(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    vectors: &[(DrawerId, Embedding)],
) -> StoreResult<usize> {
    let stmt = tx
        .prepare_cached("UPDATE drawers SET embedding_model = $3, embedding = $4 WHERE workspace_id = $1 AND id = $2")
        .await
        .ctx("storing a vector")?;
    let mut updated = 0;
    for (id, embedding) in vectors {
        let vector = pgvector::Vector::from(embedding.vector.clone());
        updated += tx
            .execute(&stmt, &[&workspace.as_str(), &id.as_str(), &embedding.model, &vector])
            .await
            .ctx("storing a vector")?;
    }
    Ok(usize::try_from(updated).unwrap_or(usize::MAX))
}

pub(crate) async fn cache_embeddings(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    model: &str,
    vectors: &[(ContentHash, Vec<f32>)],
    at: &Timestamp,
) -> StoreResult<()> {
    let stmt = tx
        .prepare_cached(
            "INSERT INTO embedding_cache (workspace_id, model, content_hash, vector, created_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (workspace_id, model, content_hash) \
             DO UPDATE SET vector = excluded.vector, created_at = excluded.created_at",
        )
        .await
        .ctx("caching a vector")?;
    for (hash, vector) in vectors {
        let vector = pgvector::Vector::from(vector.clone());
        tx.execute(&stmt, &[&workspace.as_str(), &model, &hash.as_str(), &vector, at]).await.ctx("caching a vector")?;
    }
    Ok(())
}

/// Inserts an episodic summary; an existing one with the same id is left
/// alone (import) or replaced, every field (`replace`). Returns the rows
/// written.
pub(crate) async fn write_episodic_summary(
    tx: &Transaction<'_>,
    summary: &mempalace_core::session::EpisodicSummary,
    replace: bool,
) -> StoreResult<u64> {
    ensure_workspace(tx, &summary.workspace_id, &summary.created_at).await?;
    let topics = Value::Array(summary.key_topics.iter().cloned().map(Value::String).collect());
    let conflict = if replace {
        "ON CONFLICT (workspace_id, id) DO UPDATE SET session_id = excluded.session_id, \
         source_id = excluded.source_id, agent = excluded.agent, user_id = excluded.user_id, \
         summary = excluded.summary, l0_abstract = excluded.l0_abstract, key_topics = excluded.key_topics, \
         created_at = excluded.created_at, expires_at = excluded.expires_at, promoted_at = excluded.promoted_at"
    } else {
        "ON CONFLICT DO NOTHING"
    };
    tx.execute(
        &format!(
            "INSERT INTO episodic_summaries (workspace_id, id, session_id, source_id, agent, user_id, summary, \
             l0_abstract, key_topics, created_at, expires_at, promoted_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) {conflict}"
        ),
        &[
            &summary.workspace_id.as_str(),
            &summary.id,
            &summary.session_id,
            &summary.source_id,
            &summary.agent,
            &summary.user_id,
            &summary.summary,
            &summary.l0_abstract,
            &topics,
            &summary.created_at,
            &summary.expires_at,
            &summary.promoted_at,
        ],
    )
    .await
    .ctx("writing an episodic summary")
}
