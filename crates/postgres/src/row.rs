//! Conversion between PostgreSQL rows and domain records.
//!
//! The drawer column list and parameter order are defined once here; every
//! query that reads or writes a whole drawer uses them. Stored values that
//! no longer satisfy the domain rules are reported as `InvalidData` naming
//! the row, never unwrapped.

use std::str::FromStr;

use mempalace_core::{
    Confidence, Content, ContentHash, Drawer, DrawerId, Embedding, Hall, Importance, Perception, Room, Timestamp, Wing,
    WorkspaceId,
};
use mempalace_store::{StoreError, StoreResult};
use serde_json::{Map, Value};
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

pub(crate) use mempalace_store::sql::DRAWER_COLUMNS;

/// [`DRAWER_COLUMNS`] qualified with table alias `d.`.
pub(crate) fn drawer_columns_of(alias: &str) -> String {
    DRAWER_COLUMNS.split(", ").map(|column| format!("{alias}.{}", column.trim())).collect::<Vec<_>>().join(", ")
}

pub(crate) use mempalace_store::sql::DRAWER_COLUMN_COUNT;

/// An owned query parameter.
pub(crate) type Param = Box<dyn ToSql + Sync + Send>;

/// Borrows owned parameters for a query call.
pub(crate) fn refs(params: &[Param]) -> Vec<&(dyn ToSql + Sync)> {
    params.iter().map(|p| p.as_ref() as &(dyn ToSql + Sync)).collect()
}

fn int(value: u32) -> i32 {
    i32::try_from(value).unwrap_or(i32::MAX)
}

/// The bound values of a drawer, in [`DRAWER_COLUMNS`] order.
pub(crate) fn drawer_params(drawer: &Drawer) -> Vec<Param> {
    let perception = drawer.perception.as_ref();
    vec![
        Box::new(drawer.workspace_id.as_str().to_string()),
        Box::new(drawer.id.as_str().to_string()),
        Box::new(drawer.wing.as_str().to_string()),
        Box::new(drawer.room.as_str().to_string()),
        Box::new(drawer.hall.as_ref().map(|h| h.as_str().to_string())),
        Box::new(drawer.content.as_str().to_string()),
        Box::new(drawer.content_hash.as_str().to_string()),
        Box::new(drawer.importance.get()),
        Box::new(drawer.memory_type.map(|t| t.as_str().to_string())),
        Box::new(drawer.pipeline_tier.as_str().to_string()),
        Box::new(drawer.state.as_str().to_string()),
        Box::new(drawer.summary.clone()),
        Box::new(drawer.source_file.clone()),
        Box::new(drawer.added_by.clone()),
        Box::new(drawer.added_by_agent.clone()),
        Box::new(drawer.owner_user_id.clone()),
        Box::new(drawer.filed_at),
        Box::new(drawer.updated_at),
        Box::new(drawer.last_accessed_at),
        Box::new(i64::try_from(drawer.access_count).unwrap_or(i64::MAX)),
        Box::new(drawer.superseded_by.as_ref().map(|id| id.as_str().to_string())),
        Box::new(drawer.cluster_id.as_ref().map(|id| id.as_str().to_string())),
        Box::new(int(drawer.retry_count)),
        Box::new(int(drawer.entity_count)),
        Box::new(int(drawer.triple_count)),
        Box::new(drawer.confidence.get()),
        Box::new(drawer.decay_rate),
        Box::new(drawer.status.as_str().to_string()),
        Box::new(drawer.status_reason.clone()),
        Box::new(drawer.session_id.clone()),
        Box::new(Value::Object(drawer.context.clone())),
        Box::new(perception.map(|p| p.perception_type.as_str().to_string())),
        Box::new(perception.and_then(|p| p.data.clone())),
        Box::new(perception.and_then(|p| p.metadata.clone())),
        Box::new(drawer.source_mtime),
        Box::new(drawer.chunk_index.map(int)),
        Box::new(drawer.line_start.map(int)),
        Box::new(drawer.line_end.map(int)),
        Box::new(drawer.content_date.clone()),
        Box::new(Value::Array(drawer.entities.iter().cloned().map(Value::String).collect())),
        Box::new(drawer.embedding.as_ref().map(|e| e.model.clone())),
        Box::new(drawer.embedding.as_ref().map(|e| pgvector::Vector::from(e.vector.clone()))),
    ]
}

/// A column value, with the row named on failure.
fn get<'a, T: tokio_postgres::types::FromSql<'a>>(row: &'a Row, index: usize, what: &str) -> StoreResult<T> {
    row.try_get(index).map_err(|error| StoreError::invalid(format!("{what}: {error}")))
}

pub(crate) fn vocab<T: FromStr<Err = mempalace_core::ValidationError>>(text: &str, what: &str) -> StoreResult<T> {
    text.parse::<T>().map_err(|error| StoreError::invalid(format!("{what}: {error}")))
}

fn count(value: i32, what: &str) -> StoreResult<u32> {
    u32::try_from(value).map_err(|_| StoreError::invalid(format!("{what}: count {value} out of range")))
}

/// A JSON object column.
pub(crate) fn json_object(value: Value, what: &str) -> StoreResult<Map<String, Value>> {
    match value {
        Value::Object(map) => Ok(map),
        _ => Err(StoreError::invalid(format!("{what}: JSON is not an object"))),
    }
}

/// A JSON array-of-strings column.
pub(crate) fn json_strings(value: Value, what: &str) -> StoreResult<Vec<String>> {
    serde_json::from_value(value).map_err(|error| StoreError::invalid(format!("{what}: {error}")))
}

/// Reads a drawer from a row whose first columns are [`DRAWER_COLUMNS`]
/// (from `offset`); tags are filled in by the caller.
pub(crate) fn drawer_from_row(row: &Row, offset: usize) -> StoreResult<Drawer> {
    let id_text: String = get(row, offset + 1, "drawer id")?;
    let what = |column: &str| format!("drawer {id_text} column {column}");
    let at = |index: usize, column: &str| -> StoreResult<Timestamp> { get(row, offset + index, &what(column)) };
    let text = |index: usize, column: &str| -> StoreResult<String> { get(row, offset + index, &what(column)) };
    let opt_text =
        |index: usize, column: &str| -> StoreResult<Option<String>> { get(row, offset + index, &what(column)) };
    let invalid = |column: &str, error: mempalace_core::ValidationError| {
        StoreError::invalid(format!("{}: {error}", what(column)))
    };
    let drawer_id_opt = |index: usize, column: &str| -> StoreResult<Option<DrawerId>> {
        opt_text(index, column)?.map(|text| DrawerId::parse(&text)).transpose().map_err(|e| invalid(column, e))
    };
    let opt_count = |index: usize, column: &str| -> StoreResult<Option<u32>> {
        get::<Option<i32>>(row, offset + index, &what(column))?.map(|v| count(v, &what(column))).transpose()
    };
    let perception = match opt_text(31, "perception_type")? {
        Some(kind) => Some(Perception {
            perception_type: vocab(&kind, &what("perception_type"))?,
            data: get(row, offset + 32, &what("perception_data"))?,
            metadata: opt_text(33, "perception_metadata")?,
        }),
        None => None,
    };
    let embedding = match (
        opt_text(40, "embedding_model")?,
        get::<Option<pgvector::Vector>>(row, offset + 41, &what("embedding"))?,
    ) {
        (Some(model), Some(vector)) => Some(Embedding { model, vector: vector.to_vec() }),
        _ => None,
    };
    Ok(Drawer {
        workspace_id: WorkspaceId::parse(&text(0, "workspace_id")?).map_err(|e| invalid("workspace_id", e))?,
        id: DrawerId::parse(&id_text).map_err(|e| invalid("id", e))?,
        wing: Wing::parse(&text(2, "wing")?).map_err(|e| invalid("wing", e))?,
        room: Room::parse(&text(3, "room")?).map_err(|e| invalid("room", e))?,
        hall: opt_text(4, "hall")?.map(|h| Hall::parse(&h)).transpose().map_err(|e| invalid("hall", e))?,
        content: Content::parse(text(5, "content")?).map_err(|e| invalid("content", e))?,
        content_hash: ContentHash::parse(&text(6, "content_hash")?).map_err(|e| invalid("content_hash", e))?,
        embedding,
        importance: Importance::new(get(row, offset + 7, &what("importance"))?)
            .map_err(|e| invalid("importance", e))?,
        memory_type: opt_text(8, "memory_type")?.map(|t| vocab(&t, &what("memory_type"))).transpose()?,
        pipeline_tier: vocab(&text(9, "pipeline_tier")?, &what("pipeline_tier"))?,
        state: vocab(&text(10, "state")?, &what("state"))?,
        summary: opt_text(11, "summary")?,
        source_file: opt_text(12, "source_file")?,
        added_by: text(13, "added_by")?,
        added_by_agent: opt_text(14, "added_by_agent")?,
        owner_user_id: opt_text(15, "owner_user_id")?,
        filed_at: at(16, "filed_at")?,
        updated_at: at(17, "updated_at")?,
        last_accessed_at: get(row, offset + 18, &what("last_accessed_at"))?,
        access_count: u64::try_from(get::<i64>(row, offset + 19, &what("access_count"))?).unwrap_or(0),
        superseded_by: drawer_id_opt(20, "superseded_by")?,
        cluster_id: drawer_id_opt(21, "cluster_id")?,
        retry_count: count(get(row, offset + 22, &what("retry_count"))?, &what("retry_count"))?,
        entity_count: count(get(row, offset + 23, &what("entity_count"))?, &what("entity_count"))?,
        triple_count: count(get(row, offset + 24, &what("triple_count"))?, &what("triple_count"))?,
        confidence: Confidence::new(get(row, offset + 25, &what("confidence"))?)
            .map_err(|e| invalid("confidence", e))?,
        decay_rate: get(row, offset + 26, &what("decay_rate"))?,
        status: vocab(&text(27, "status")?, &what("status"))?,
        status_reason: opt_text(28, "status_reason")?,
        session_id: opt_text(29, "session_id")?,
        context: json_object(get(row, offset + 30, &what("context"))?, &what("context"))?,
        tags: Vec::new(),
        perception,
        source_mtime: get(row, offset + 34, &what("source_mtime"))?,
        chunk_index: opt_count(35, "chunk_index")?,
        line_start: opt_count(36, "line_start")?,
        line_end: opt_count(37, "line_end")?,
        content_date: opt_text(38, "content_date")?,
        entities: json_strings(get(row, offset + 39, &what("entities"))?, &what("entities"))?,
    })
}

/// Parses a stored drawer id.
pub(crate) fn drawer_id(text: &str) -> StoreResult<DrawerId> {
    DrawerId::parse(text).map_err(|e| StoreError::invalid(format!("drawer {text}: {e}")))
}

/// Clamps a count for a `LIMIT`/`OFFSET` parameter.
pub(crate) fn limit(value: usize) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_columns_keep_the_order() {
        let qualified = drawer_columns_of("d");
        assert!(qualified.starts_with("d.workspace_id, d.id, d.wing"), "{qualified}");
        assert_eq!(qualified.split(", ").count(), DRAWER_COLUMN_COUNT);
    }
}
