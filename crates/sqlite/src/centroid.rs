//! Centroids (schema version 10 for rooms): storing memory-type and room
//! prototypes, and reading the vectors they average.
//!
//! Not here: averaging, hashing and the schedule (core's `centroid`, the
//! engine's `centroids`).

use mempalace_core::centroid::{Centroid, RoomCentroid};
use mempalace_core::{DrawerId, Embedding, WorkspaceId};
use mempalace_store::{CentroidSamples, StoreError, StoreResult};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Transaction, params, params_from_iter};

use crate::error::Context;
use crate::row::{blob_to_vector, parse_ts, ts, vector_to_blob};

pub(crate) fn room_centroids(conn: &Connection, workspace: &WorkspaceId) -> StoreResult<Vec<RoomCentroid>> {
    let c = "reading room centroids";
    let mut stmt = conn
        .prepare_cached(
            "SELECT wing, room, embedding_model, vector, sample_count, room_drawers, computed_at, source_hash \
             FROM room_centroids WHERE workspace_id = ?1 ORDER BY wing, room",
        )
        .ctx(c)?;
    let mut rows = stmt.query(params![workspace.as_str()]).ctx(c)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx(c)? {
        let (wing, room): (String, String) = (row.get(0).ctx(c)?, row.get(1).ctx(c)?);
        let what = format!("room centroid {wing}/{room}");
        out.push(RoomCentroid {
            workspace_id: workspace.clone(),
            embedding: Embedding {
                model: row.get(2).ctx(c)?,
                vector: blob_to_vector(&row.get::<_, Vec<u8>>(3).ctx(c)?, &what)?,
            },
            sample_count: u32::try_from(row.get::<_, i64>(4).ctx(c)?).unwrap_or(0),
            room_drawers: u64::try_from(row.get::<_, i64>(5).ctx(c)?).unwrap_or(0),
            computed_at: parse_ts(&row.get::<_, String>(6).ctx(c)?, &what)?,
            source_hash: row.get(7).ctx(c)?,
            wing,
            room,
        });
    }
    Ok(out)
}

pub(crate) fn centroid_samples(
    conn: &Connection,
    workspace: &WorkspaceId,
    model: &str,
    which: &CentroidSamples,
    limit: usize,
) -> StoreResult<Vec<(DrawerId, Vec<f32>)>> {
    let mut values = vec![SqlValue::Text(workspace.to_string()), SqlValue::Text(model.to_string())];
    let clause = match which {
        CentroidSamples::MemoryType { memory_type, since } => {
            values.push(SqlValue::Text(memory_type.as_str().to_string()));
            values.push(SqlValue::Text(ts(since)));
            "memory_type = ?3 AND pipeline_tier = 'llm' AND state = 'processed' AND filed_at >= ?4"
        }
        CentroidSamples::Room { wing, room } => {
            values.push(SqlValue::Text(wing.clone()));
            values.push(SqlValue::Text(room.clone()));
            "wing = ?3 AND room = ?4"
        }
    };
    values.push(SqlValue::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
    let sql = format!(
        "SELECT id, embedding FROM drawers WHERE workspace_id = ?1 AND status = 'active' AND embedding_model = ?2 \
         AND embedding IS NOT NULL AND {clause} ORDER BY filed_at DESC, id LIMIT ?5"
    );
    let rows: Vec<(String, Vec<u8>)> = conn
        .prepare_cached(&sql)
        .and_then(|mut stmt| stmt.query_map(params_from_iter(values), |row| Ok((row.get(0)?, row.get(1)?)))?.collect())
        .ctx("reading centroid samples")?;
    rows.into_iter()
        .map(|(id, blob)| {
            let vector = blob_to_vector(&blob, &format!("drawer {id}"))?;
            let id = DrawerId::parse(&id).map_err(|e| StoreError::invalid(format!("drawer {id}: {e}")))?;
            Ok((id, vector))
        })
        .collect()
}

pub(crate) fn put_centroid(tx: &Transaction<'_>, centroid: &Centroid) -> StoreResult<bool> {
    Ok(write_centroid(tx, centroid, true)? > 0)
}

/// Inserts a memory-type centroid; an existing one is left alone (import)
/// or replaced when its source hash differs (`replace`). Returns the rows
/// written.
pub(crate) fn write_centroid(tx: &Transaction<'_>, centroid: &Centroid, replace: bool) -> StoreResult<usize> {
    crate::records::ensure_workspace(tx, &centroid.workspace_id, &centroid.computed_at)?;
    let conflict = if replace {
        "ON CONFLICT (workspace_id, memory_type) DO UPDATE SET embedding_model = excluded.embedding_model, \
         vector = excluded.vector, sample_count = excluded.sample_count, computed_at = excluded.computed_at, \
         source_hash = excluded.source_hash WHERE centroids.source_hash <> excluded.source_hash"
    } else {
        "ON CONFLICT DO NOTHING"
    };
    tx.prepare_cached(&format!(
        "INSERT INTO centroids (workspace_id, memory_type, embedding_model, vector, sample_count, computed_at, \
         source_hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) {conflict}"
    ))
    .and_then(|mut stmt| {
        stmt.execute(params![
            centroid.workspace_id.as_str(),
            centroid.memory_type.as_str(),
            centroid.embedding.model,
            vector_to_blob(&centroid.embedding.vector),
            centroid.sample_count,
            ts(&centroid.computed_at),
            centroid.source_hash,
        ])
    })
    .ctx("storing a centroid")
}

pub(crate) fn put_room_centroid(tx: &Transaction<'_>, centroid: &RoomCentroid) -> StoreResult<bool> {
    let c = "storing a room centroid";
    crate::records::ensure_workspace(tx, &centroid.workspace_id, &centroid.computed_at)?;
    let stored: Option<String> = tx
        .prepare_cached("SELECT source_hash FROM room_centroids WHERE workspace_id = ?1 AND wing = ?2 AND room = ?3")
        .and_then(|mut stmt| {
            stmt.query_row(params![centroid.workspace_id.as_str(), centroid.wing, centroid.room], |row| row.get(0))
                .optional()
        })
        .ctx(c)?;
    if stored.as_deref() == Some(centroid.source_hash.as_str()) {
        tx.execute(
            "UPDATE room_centroids SET room_drawers = ?4, computed_at = ?5 \
             WHERE workspace_id = ?1 AND wing = ?2 AND room = ?3",
            params![
                centroid.workspace_id.as_str(),
                centroid.wing,
                centroid.room,
                i64::try_from(centroid.room_drawers).unwrap_or(i64::MAX),
                ts(&centroid.computed_at)
            ],
        )
        .ctx(c)?;
        return Ok(false);
    }
    tx.execute(
        "INSERT OR REPLACE INTO room_centroids (workspace_id, wing, room, embedding_model, vector, sample_count, \
         room_drawers, computed_at, source_hash) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        params![
            centroid.workspace_id.as_str(),
            centroid.wing,
            centroid.room,
            centroid.embedding.model,
            vector_to_blob(&centroid.embedding.vector),
            centroid.sample_count,
            i64::try_from(centroid.room_drawers).unwrap_or(i64::MAX),
            ts(&centroid.computed_at),
            centroid.source_hash,
        ],
    )
    .ctx(c)?;
    Ok(true)
}

pub(crate) fn delete_room_centroid(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    wing: &str,
    room: &str,
) -> StoreResult<bool> {
    Ok(tx
        .execute(
            "DELETE FROM room_centroids WHERE workspace_id = ?1 AND wing = ?2 AND room = ?3",
            params![workspace.as_str(), wing, room],
        )
        .ctx("forgetting a room centroid")?
        > 0)
}
