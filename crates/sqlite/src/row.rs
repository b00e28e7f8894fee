//! Conversion between SQLite rows and domain records.
//!
//! Column lists and parameter order are defined once here; every query that
//! reads or writes a whole drawer uses them. Stored text that no longer
//! satisfies the domain rules is reported as `InvalidData` naming the row,
//! never unwrapped.

use std::str::FromStr;

use mempalace_core::time::{DayEdge, format_timestamp, parse_timestamp};
use mempalace_core::{
    Confidence, Content, ContentHash, Drawer, DrawerId, Embedding, Hall, Importance, Perception, Room, Timestamp, Wing,
    WorkspaceId,
};
use mempalace_store::{StoreError, StoreResult};
use rusqlite::Row;
use rusqlite::types::Value as SqlValue;
use serde_json::{Map, Value};

pub(crate) use mempalace_store::sql::DRAWER_COLUMNS;

pub(crate) use mempalace_store::sql::DRAWER_COLUMN_COUNT;

/// Encodes a vector as little-endian f32 bytes.
pub(crate) fn vector_to_blob(vector: &[f32]) -> Vec<u8> {
    let mut blob = Vec::with_capacity(vector.len() * 4);
    for value in vector {
        blob.extend_from_slice(&value.to_le_bytes());
    }
    blob
}

/// Decodes little-endian f32 bytes.
pub(crate) fn blob_to_vector(blob: &[u8], what: &str) -> StoreResult<Vec<f32>> {
    if !blob.len().is_multiple_of(4) {
        return Err(StoreError::invalid(format!(
            "{what}: vector blob of {} bytes is not a whole number of f32",
            blob.len()
        )));
    }
    Ok(blob.chunks_exact(4).map(|bytes| f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])).collect())
}

pub(crate) fn ts(value: &Timestamp) -> String {
    format_timestamp(value)
}

pub(crate) fn opt_ts(value: Option<&Timestamp>) -> Option<String> {
    value.map(format_timestamp)
}

pub(crate) fn parse_ts(text: &str, what: &str) -> StoreResult<Timestamp> {
    parse_timestamp(text, "stored timestamp", DayEdge::Start)
        .map_err(|error| StoreError::invalid(format!("{what}: {error}")))
}

pub(crate) fn parse_opt_ts(text: Option<String>, what: &str) -> StoreResult<Option<Timestamp>> {
    text.map(|text| parse_ts(&text, what)).transpose()
}

pub(crate) fn json_object(text: &str, what: &str) -> StoreResult<Map<String, Value>> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(StoreError::invalid(format!("{what}: JSON is not an object"))),
        Err(error) => Err(StoreError::invalid(format!("{what}: {error}"))),
    }
}

pub(crate) fn json_strings(text: &str, what: &str) -> StoreResult<Vec<String>> {
    serde_json::from_str(text).map_err(|error| StoreError::invalid(format!("{what}: {error}")))
}

pub(crate) fn to_json_text(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("maps and string lists always serialise")
}

pub(crate) fn parse_vocab<T: FromStr<Err = mempalace_core::ValidationError>>(text: &str, what: &str) -> StoreResult<T> {
    text.parse::<T>().map_err(|error| StoreError::invalid(format!("{what}: {error}")))
}

fn count(value: i64, what: &str) -> StoreResult<u32> {
    u32::try_from(value).map_err(|_| StoreError::invalid(format!("{what}: count {value} out of range")))
}

fn opt_count(value: Option<i64>, what: &str) -> StoreResult<Option<u32>> {
    value.map(|value| count(value, what)).transpose()
}

/// The bound values of a drawer, in [`DRAWER_COLUMNS`] order.
pub(crate) fn drawer_values(drawer: &Drawer) -> Vec<SqlValue> {
    let text = |value: &str| SqlValue::Text(value.to_string());
    let opt_text = |value: Option<&str>| value.map_or(SqlValue::Null, |value| SqlValue::Text(value.to_string()));
    let opt_int = |value: Option<u32>| value.map_or(SqlValue::Null, |value| SqlValue::Integer(i64::from(value)));
    let perception = drawer.perception.as_ref();
    vec![
        text(drawer.workspace_id.as_str()),
        text(drawer.id.as_str()),
        text(drawer.wing.as_str()),
        text(drawer.room.as_str()),
        opt_text(drawer.hall.as_ref().map(Hall::as_str)),
        text(drawer.content.as_str()),
        text(drawer.content_hash.as_str()),
        SqlValue::Real(drawer.importance.get()),
        opt_text(drawer.memory_type.map(|value| value.as_str())),
        text(drawer.pipeline_tier.as_str()),
        text(drawer.state.as_str()),
        opt_text(drawer.summary.as_deref()),
        opt_text(drawer.source_file.as_deref()),
        text(&drawer.added_by),
        opt_text(drawer.added_by_agent.as_deref()),
        opt_text(drawer.owner_user_id.as_deref()),
        SqlValue::Text(ts(&drawer.filed_at)),
        SqlValue::Text(ts(&drawer.updated_at)),
        opt_ts(drawer.last_accessed_at.as_ref()).map_or(SqlValue::Null, SqlValue::Text),
        SqlValue::Integer(i64::try_from(drawer.access_count).unwrap_or(i64::MAX)),
        opt_text(drawer.superseded_by.as_ref().map(DrawerId::as_str)),
        opt_text(drawer.cluster_id.as_ref().map(DrawerId::as_str)),
        SqlValue::Integer(i64::from(drawer.retry_count)),
        SqlValue::Integer(i64::from(drawer.entity_count)),
        SqlValue::Integer(i64::from(drawer.triple_count)),
        SqlValue::Real(drawer.confidence.get()),
        SqlValue::Real(drawer.decay_rate),
        text(drawer.status.as_str()),
        opt_text(drawer.status_reason.as_deref()),
        opt_text(drawer.session_id.as_deref()),
        SqlValue::Text(to_json_text(&drawer.context)),
        opt_text(perception.map(|p| p.perception_type.as_str())),
        perception.and_then(|p| p.data.clone()).map_or(SqlValue::Null, SqlValue::Blob),
        opt_text(perception.and_then(|p| p.metadata.as_deref())),
        drawer.source_mtime.map_or(SqlValue::Null, SqlValue::Real),
        opt_int(drawer.chunk_index),
        opt_int(drawer.line_start),
        opt_int(drawer.line_end),
        opt_text(drawer.content_date.as_deref()),
        SqlValue::Text(to_json_text(&drawer.entities)),
        opt_text(drawer.embedding.as_ref().map(|e| e.model.as_str())),
        drawer.embedding.as_ref().map_or(SqlValue::Null, |e| SqlValue::Blob(vector_to_blob(&e.vector))),
    ]
}

/// Reads a drawer from a row of `SELECT seq, {DRAWER_COLUMNS}`; tags are
/// filled in by the caller.
pub(crate) fn drawer_from_row(row: &Row<'_>) -> StoreResult<(i64, Drawer)> {
    let get = |index: usize| -> StoreResult<SqlValue> {
        row.get::<_, SqlValue>(index).map_err(|error| StoreError::backend("reading a drawer row", error))
    };
    let seq: i64 = row.get(0).map_err(|error| StoreError::backend("reading drawer seq", error))?;
    let values: Vec<SqlValue> = (1..=DRAWER_COLUMN_COUNT).map(get).collect::<StoreResult<_>>()?;
    let id_text = as_text(&values[1]).unwrap_or_default();
    let what = |column: &str| format!("drawer {id_text} column {column}");
    let req_text = |index: usize, column: &str| -> StoreResult<String> {
        as_text(&values[index]).ok_or_else(|| StoreError::invalid(format!("{} is missing", what(column))))
    };
    let opt_text = |index: usize| as_text(&values[index]);
    let opt_i64 = |index: usize| match &values[index] {
        SqlValue::Integer(value) => Some(*value),
        _ => None,
    };
    let real = |index: usize, column: &str| -> StoreResult<f64> {
        match &values[index] {
            SqlValue::Real(value) => Ok(*value),
            SqlValue::Integer(value) => Ok(*value as f64),
            _ => Err(StoreError::invalid(format!("{} is not a number", what(column)))),
        }
    };
    let invalid = |column: &str, error: mempalace_core::ValidationError| {
        StoreError::invalid(format!("{}: {error}", what(column)))
    };

    let workspace_id = WorkspaceId::parse(&req_text(0, "workspace_id")?).map_err(|e| invalid("workspace_id", e))?;
    let id = DrawerId::parse(&req_text(1, "id")?).map_err(|e| invalid("id", e))?;
    let wing = Wing::parse(&req_text(2, "wing")?).map_err(|e| invalid("wing", e))?;
    let room = Room::parse(&req_text(3, "room")?).map_err(|e| invalid("room", e))?;
    let hall = opt_text(4).map(|hall| Hall::parse(&hall)).transpose().map_err(|e| invalid("hall", e))?;
    let content = Content::parse(req_text(5, "content")?).map_err(|e| invalid("content", e))?;
    let content_hash = ContentHash::parse(&req_text(6, "content_hash")?).map_err(|e| invalid("content_hash", e))?;
    let importance = Importance::new(real(7, "importance")?).map_err(|e| invalid("importance", e))?;
    let memory_type = opt_text(8).map(|text| parse_vocab(&text, &what("memory_type"))).transpose()?;
    let pipeline_tier = parse_vocab(&req_text(9, "pipeline_tier")?, &what("pipeline_tier"))?;
    let state = parse_vocab(&req_text(10, "state")?, &what("state"))?;
    let confidence = Confidence::new(real(25, "confidence")?).map_err(|e| invalid("confidence", e))?;
    let status = parse_vocab(&req_text(27, "status")?, &what("status"))?;
    let perception = match opt_text(31) {
        Some(kind) => Some(Perception {
            perception_type: parse_vocab(&kind, &what("perception_type"))?,
            data: match &values[32] {
                SqlValue::Blob(bytes) => Some(bytes.clone()),
                _ => None,
            },
            metadata: opt_text(33),
        }),
        None => None,
    };
    let embedding = match (opt_text(40), &values[41]) {
        (Some(model), SqlValue::Blob(blob)) => {
            Some(Embedding { model, vector: blob_to_vector(blob, &what("embedding"))? })
        }
        _ => None,
    };
    let drawer_id_opt = |index: usize, column: &str| -> StoreResult<Option<DrawerId>> {
        opt_text(index).map(|text| DrawerId::parse(&text)).transpose().map_err(|e| invalid(column, e))
    };
    let drawer = Drawer {
        workspace_id,
        id,
        wing,
        room,
        hall,
        content,
        content_hash,
        embedding,
        importance,
        memory_type,
        pipeline_tier,
        state,
        summary: opt_text(11),
        source_file: opt_text(12),
        added_by: req_text(13, "added_by")?,
        added_by_agent: opt_text(14),
        owner_user_id: opt_text(15),
        filed_at: parse_ts(&req_text(16, "filed_at")?, &what("filed_at"))?,
        updated_at: parse_ts(&req_text(17, "updated_at")?, &what("updated_at"))?,
        last_accessed_at: parse_opt_ts(opt_text(18), &what("last_accessed_at"))?,
        access_count: u64::try_from(opt_i64(19).unwrap_or(0)).unwrap_or(0),
        superseded_by: drawer_id_opt(20, "superseded_by")?,
        cluster_id: drawer_id_opt(21, "cluster_id")?,
        retry_count: count(opt_i64(22).unwrap_or(0), &what("retry_count"))?,
        entity_count: count(opt_i64(23).unwrap_or(0), &what("entity_count"))?,
        triple_count: count(opt_i64(24).unwrap_or(0), &what("triple_count"))?,
        confidence,
        decay_rate: real(26, "decay_rate")?,
        status,
        status_reason: opt_text(28),
        session_id: opt_text(29),
        context: json_object(&req_text(30, "context")?, &what("context"))?,
        tags: Vec::new(),
        perception,
        source_mtime: match &values[34] {
            SqlValue::Real(value) => Some(*value),
            SqlValue::Integer(value) => Some(*value as f64),
            _ => None,
        },
        chunk_index: opt_count(opt_i64(35), &what("chunk_index"))?,
        line_start: opt_count(opt_i64(36), &what("line_start"))?,
        line_end: opt_count(opt_i64(37), &what("line_end"))?,
        content_date: opt_text(38),
        entities: json_strings(&req_text(39, "entities")?, &what("entities"))?,
    };
    Ok((seq, drawer))
}

fn as_text(value: &SqlValue) -> Option<String> {
    match value {
        SqlValue::Text(text) => Some(text.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_round_trip_through_blobs() {
        let vector = vec![0.25_f32, -1.5, f32::MIN_POSITIVE, 3.0e7];
        assert_eq!(blob_to_vector(&vector_to_blob(&vector), "v").unwrap(), vector);
        assert!(blob_to_vector(&[1, 2, 3], "v").is_err());
    }
}
