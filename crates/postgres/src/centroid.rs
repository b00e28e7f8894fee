//! Centroids (schema version 5 for rooms): storing memory-type and room
//! prototypes, and reading the vectors they average — the SQLite store's
//! semantics.
//!
//! Not here: averaging, hashing and the schedule (core's `centroid`, the
//! engine's `centroids`).

use deadpool_postgres::Transaction;
use mempalace_core::centroid::{Centroid, RoomCentroid};
use mempalace_core::{DrawerId, Embedding, WorkspaceId};
use mempalace_store::{CentroidSamples, StoreResult};

use crate::error::Context;
use crate::records::ensure_workspace;
use crate::row::{drawer_id, limit};

pub(crate) async fn room_centroids(tx: &Transaction<'_>, workspace: &WorkspaceId) -> StoreResult<Vec<RoomCentroid>> {
    let rows = tx
        .query(
            "SELECT wing, room, embedding_model, vector, sample_count, room_drawers, computed_at, source_hash \
             FROM room_centroids WHERE workspace_id = $1 ORDER BY wing, room",
            &[&workspace.as_str()],
        )
        .await
        .ctx("reading room centroids")?;
    Ok(rows
        .iter()
        .map(|row| RoomCentroid {
            workspace_id: workspace.clone(),
            wing: row.get(0),
            room: row.get(1),
            embedding: Embedding { model: row.get(2), vector: row.get::<_, pgvector::Vector>(3).to_vec() },
            sample_count: u32::try_from(row.get::<_, i32>(4)).unwrap_or(0),
            room_drawers: u64::try_from(row.get::<_, i64>(5)).unwrap_or(0),
            computed_at: row.get(6),
            source_hash: row.get(7),
        })
        .collect())
}

pub(crate) async fn centroid_samples(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    model: &str,
    which: &CentroidSamples,
    count: usize,
) -> StoreResult<Vec<(DrawerId, Vec<f32>)>> {
    let base = "SELECT id, embedding FROM drawers WHERE workspace_id = $1 AND status = 'active' \
                AND embedding_model = $2 AND embedding IS NOT NULL AND ";
    let order = " ORDER BY filed_at DESC, id LIMIT $5";
    let rows = match which {
        CentroidSamples::MemoryType { memory_type, since } => {
            let sql = format!(
                "{base}memory_type = $3 AND pipeline_tier = 'llm' AND state = 'processed' AND filed_at >= $4{order}"
            );
            tx.query(&sql, &[&workspace.as_str(), &model, &memory_type.as_str(), since, &limit(count)]).await
        }
        CentroidSamples::Room { wing, room } => {
            let sql = format!("{base}wing = $3 AND room = $4{order}");
            tx.query(&sql, &[&workspace.as_str(), &model, wing, room, &limit(count)]).await
        }
    }
    .ctx("reading centroid samples")?;
    rows.iter().map(|row| Ok((drawer_id(row.get(0))?, row.get::<_, pgvector::Vector>(1).to_vec()))).collect()
}

pub(crate) async fn put_centroid(tx: &Transaction<'_>, centroid: &Centroid) -> StoreResult<bool> {
    Ok(write_centroid(tx, centroid, true).await? > 0)
}

/// Inserts a memory-type centroid; an existing one is left alone (import)
/// or replaced when its source hash differs (`replace`). Returns the rows
/// written.
pub(crate) async fn write_centroid(tx: &Transaction<'_>, centroid: &Centroid, replace: bool) -> StoreResult<u64> {
    ensure_workspace(tx, &centroid.workspace_id, &centroid.computed_at).await?;
    let conflict = if replace {
        "ON CONFLICT (workspace_id, memory_type) DO UPDATE SET embedding_model = excluded.embedding_model, \
         vector = excluded.vector, sample_count = excluded.sample_count, computed_at = excluded.computed_at, \
         source_hash = excluded.source_hash WHERE centroids.source_hash <> excluded.source_hash"
    } else {
        "ON CONFLICT DO NOTHING"
    };
    tx.execute(
        &format!(
            "INSERT INTO centroids (workspace_id, memory_type, embedding_model, vector, sample_count, computed_at, \
             source_hash) VALUES ($1, $2, $3, $4, $5, $6, $7) {conflict}"
        ),
        &[
            &centroid.workspace_id.as_str(),
            &centroid.memory_type.as_str(),
            &centroid.embedding.model,
            &pgvector::Vector::from(centroid.embedding.vector.clone()),
            &i32::try_from(centroid.sample_count).unwrap_or(i32::MAX),
            &centroid.computed_at,
            &centroid.source_hash,
        ],
    )
    .await
    .ctx("storing a centroid")
}

pub(crate) async fn put_room_centroid(tx: &Transaction<'_>, centroid: &RoomCentroid) -> StoreResult<bool> {
    let c = "storing a room centroid";
    ensure_workspace(tx, &centroid.workspace_id, &centroid.computed_at).await?;
    let ws = centroid.workspace_id.as_str();
    let drawers = i64::try_from(centroid.room_drawers).unwrap_or(i64::MAX);
    // The row is locked first, so concurrent trainers of one room take turns.
    let previous: Option<String> = tx
        .query_opt(
            "SELECT source_hash FROM room_centroids WHERE workspace_id = $1 AND wing = $2 AND room = $3 FOR UPDATE",
            &[&ws, &centroid.wing, &centroid.room],
        )
        .await
        .ctx(c)?
        .map(|row| row.get(0));
    tx.execute(
        "INSERT INTO room_centroids (workspace_id, wing, room, embedding_model, vector, sample_count, \
             room_drawers, computed_at, source_hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
         ON CONFLICT (workspace_id, wing, room) DO UPDATE SET \
             embedding_model = excluded.embedding_model, vector = excluded.vector, \
             sample_count = excluded.sample_count, room_drawers = excluded.room_drawers, \
             computed_at = excluded.computed_at, source_hash = excluded.source_hash",
        &[
            &ws,
            &centroid.wing,
            &centroid.room,
            &centroid.embedding.model,
            &pgvector::Vector::from(centroid.embedding.vector.clone()),
            &i32::try_from(centroid.sample_count).unwrap_or(i32::MAX),
            &drawers,
            &centroid.computed_at,
            &centroid.source_hash,
        ],
    )
    .await
    .ctx(c)?;
    Ok(previous.as_deref() != Some(centroid.source_hash.as_str()))
}

pub(crate) async fn delete_room_centroid(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    wing: &str,
    room: &str,
) -> StoreResult<bool> {
    Ok(tx
        .execute(
            "DELETE FROM room_centroids WHERE workspace_id = $1 AND wing = $2 AND room = $3",
            &[&workspace.as_str(), &wing, &room],
        )
        .await
        .ctx("forgetting a room centroid")?
        > 0)
}
