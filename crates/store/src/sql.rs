//! What the SQL backends share about the schema: the drawer columns, in
//! the one order every whole-drawer query of SQLite and PostgreSQL reads and
//! binds them (each backend maps the values to its own types).

/// Columns of `drawers` holding a [`mempalace_core::Drawer`], in binding order.
pub const DRAWER_COLUMNS: &str = "workspace_id, id, wing, room, hall, content, content_hash, importance, \
     memory_type, pipeline_tier, state, summary, source_file, added_by, added_by_agent, owner_user_id, \
     filed_at, updated_at, last_accessed_at, access_count, superseded_by, cluster_id, retry_count, \
     entity_count, triple_count, confidence, decay_rate, status, status_reason, session_id, context, \
     perception_type, perception_data, perception_metadata, source_mtime, chunk_index, line_start, line_end, \
     content_date, entities, embedding_model, embedding";

/// Number of columns in [`DRAWER_COLUMNS`].
pub const DRAWER_COLUMN_COUNT: usize = 42;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_count_matches_the_column_list() {
        assert_eq!(DRAWER_COLUMNS.split(',').count(), DRAWER_COLUMN_COUNT);
    }
}
