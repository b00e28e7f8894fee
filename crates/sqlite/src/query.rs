//! Retrieval queries: BM25 over FTS5, filtered id sets, change feeds for
//! vector indexes, the L1/L2 listings and access tracking.
//!
//! Filters become SQL `WHERE` clauses with bound parameters (never
//! interpolated text); every query is bound to one workspace.

use mempalace_core::{Drawer, DrawerId, Timestamp, WorkspaceId};
use mempalace_store::{DrawerFilter, StoreError, StoreResult, VectorChange};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Transaction, params, params_from_iter};

use crate::error::Context;
use crate::row::{DRAWER_COLUMNS, blob_to_vector, drawer_from_row, ts};

/// `WHERE` fragments and their parameters for a filter on table alias `d`.
fn filter_sql(workspace: &WorkspaceId, filter: &DrawerFilter) -> (String, Vec<SqlValue>) {
    let mut clauses = vec!["d.workspace_id = ?".to_string()];
    let mut values = vec![SqlValue::Text(workspace.to_string())];
    let any_of = |column: &str, items: Vec<String>, clauses: &mut Vec<String>, values: &mut Vec<SqlValue>| {
        if !items.is_empty() {
            clauses.push(format!("{column} IN ({})", vec!["?"; items.len()].join(", ")));
            values.extend(items.into_iter().map(SqlValue::Text));
        }
    };
    any_of("d.wing", filter.wings.clone(), &mut clauses, &mut values);
    any_of("d.room", filter.rooms.clone(), &mut clauses, &mut values);
    any_of("d.hall", filter.halls.clone(), &mut clauses, &mut values);
    any_of(
        "d.memory_type",
        filter.memory_types.iter().map(|t| t.as_str().to_string()).collect(),
        &mut clauses,
        &mut values,
    );
    if !filter.tags.is_empty() {
        clauses.push(format!(
            "EXISTS (SELECT 1 FROM drawer_tags t WHERE t.workspace_id = d.workspace_id AND t.drawer_id = d.id \
             AND t.tag IN ({}))",
            vec!["?"; filter.tags.len()].join(", ")
        ));
        values.extend(filter.tags.iter().cloned().map(SqlValue::Text));
    }
    if let Some(after) = &filter.filed_after {
        clauses.push("d.filed_at >= ?".into());
        values.push(SqlValue::Text(ts(after)));
    }
    if let Some(before) = &filter.filed_before {
        clauses.push("d.filed_at <= ?".into());
        values.push(SqlValue::Text(ts(before)));
    }
    if let Some(min) = filter.min_confidence {
        clauses.push("d.confidence >= ?".into());
        values.push(SqlValue::Real(min));
    }
    match &filter.viewer {
        Some(user) => {
            clauses.push("(d.owner_user_id IS NULL OR d.owner_user_id = ?)".into());
            values.push(SqlValue::Text(user.clone()));
        }
        None => clauses.push("d.owner_user_id IS NULL".into()),
    }
    for (column, value) in
        [("d.added_by", &filter.added_by), ("d.session_id", &filter.session_id), ("d.source_file", &filter.source_file)]
    {
        if let Some(value) = value {
            clauses.push(format!("{column} = ?"));
            values.push(SqlValue::Text(value.clone()));
        }
    }
    if !filter.include_hidden {
        clauses.push("d.status = 'active'".into());
    }
    (clauses.join(" AND "), values)
}

/// An FTS5 query matching any of the terms, each quoted (so no term can be
/// read as FTS5 syntax).
fn match_expression(terms: &[String]) -> Option<String> {
    let quoted: Vec<String> = terms
        .iter()
        .map(|term| term.replace('"', ""))
        .filter(|term| !term.trim().is_empty())
        .map(|term| format!("\"{term}\""))
        .collect();
    (!quoted.is_empty()).then(|| quoted.join(" OR "))
}

pub(crate) fn lexical_search(
    conn: &Connection,
    workspace: &WorkspaceId,
    terms: &[String],
    filter: &DrawerFilter,
    limit: usize,
) -> StoreResult<Vec<(DrawerId, f64)>> {
    let Some(expression) = match_expression(terms) else { return Ok(Vec::new()) };
    let (clauses, mut values) = filter_sql(workspace, filter);
    let sql = format!(
        "SELECT d.id, bm25(drawers_fts) AS score FROM drawers_fts JOIN drawers d ON d.seq = drawers_fts.rowid \
         WHERE drawers_fts MATCH ? AND {clauses} ORDER BY score LIMIT ?"
    );
    let mut all = vec![SqlValue::Text(expression)];
    all.append(&mut values);
    all.push(SqlValue::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
    let mut stmt = conn.prepare_cached(&sql).ctx("preparing a lexical search")?;
    let rows: Vec<(String, f64)> = stmt
        .query_map(params_from_iter(all), |row| Ok((row.get(0)?, row.get(1)?)))
        .and_then(Iterator::collect)
        .ctx("running a lexical search")?;
    rows.into_iter()
        .map(|(id, score)| {
            // FTS5's bm25() is lower-is-better; flip it.
            Ok((DrawerId::parse(&id).map_err(|e| StoreError::invalid(format!("drawer {id}: {e}")))?, -score))
        })
        .collect()
}

/// Counts stop one row past `bound(documents)`: counting walks a term's
/// whole posting list (about 0.17 µs a row, 150 ms for a term in most of a
/// million drawers), and a term above the bound is left out of the BM25
/// query whatever its exact count.
pub(crate) fn term_frequencies(
    conn: &Connection,
    terms: &[String],
    bound: fn(u64) -> u64,
) -> StoreResult<(u64, Vec<u64>)> {
    let c = "counting term frequencies";
    let documents: i64 =
        conn.query_row("SELECT coalesce(sum(drawers), 0) FROM room_counts", [], |row| row.get(0)).ctx(c)?;
    let documents = u64::try_from(documents).unwrap_or(0);
    let limit = i64::try_from(bound(documents)).unwrap_or(i64::MAX - 1) + 1;
    let mut stmt = conn
        .prepare_cached("SELECT count(*) FROM (SELECT 1 FROM drawers_fts WHERE drawers_fts MATCH ?1 LIMIT ?2)")
        .ctx(c)?;
    let mut counts = Vec::with_capacity(terms.len());
    for term in terms {
        let count: i64 = match match_expression(std::slice::from_ref(term)) {
            Some(expression) => stmt.query_row(params![expression, limit], |row| row.get(0)).ctx(c)?,
            None => 0,
        };
        counts.push(u64::try_from(count).unwrap_or(0));
    }
    Ok((documents, counts))
}

pub(crate) fn filtered_ids(
    conn: &Connection,
    workspace: &WorkspaceId,
    filter: &DrawerFilter,
) -> StoreResult<Vec<DrawerId>> {
    let (clauses, values) = filter_sql(workspace, filter);
    let sql = format!("SELECT d.id FROM drawers d WHERE {clauses}");
    let mut stmt = conn.prepare_cached(&sql).ctx("filtering drawers")?;
    let ids: Vec<String> = stmt
        .query_map(params_from_iter(values), |row| row.get(0))
        .and_then(Iterator::collect)
        .ctx("filtering drawers")?;
    ids.iter().map(|id| DrawerId::parse(id).map_err(|e| StoreError::invalid(format!("drawer {id}: {e}")))).collect()
}

pub(crate) fn revision(conn: &Connection) -> StoreResult<i64> {
    let value: Option<String> = conn
        .query_row("SELECT value FROM palace_meta WHERE key = 'rev'", [], |row| row.get(0))
        .optional()
        .ctx("reading the revision")?;
    Ok(value.and_then(|v| v.parse().ok()).unwrap_or(0))
}

pub(crate) fn vector_changes(
    conn: &Connection,
    workspace: &WorkspaceId,
    model: &str,
    after: i64,
    limit: usize,
) -> StoreResult<Vec<VectorChange>> {
    let c = "reading vector changes";
    let limit_value = i64::try_from(limit).unwrap_or(i64::MAX);
    let mut changes: Vec<VectorChange> = Vec::new();
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, rev, CASE WHEN status = 'active' AND embedding_model = ?2 THEN embedding END, wing, room \
             FROM drawers WHERE workspace_id = ?1 AND rev > ?3 ORDER BY rev LIMIT ?4",
        )
        .ctx(c)?;
    let mut rows = stmt.query(params![workspace.as_str(), model, after, limit_value]).ctx(c)?;
    while let Some(row) = rows.next().ctx(c)? {
        let id: String = row.get(0).ctx(c)?;
        let blob: Option<Vec<u8>> = row.get(2).ctx(c)?;
        changes.push(VectorChange {
            id: DrawerId::parse(&id).map_err(|e| StoreError::invalid(format!("drawer {id}: {e}")))?,
            rev: row.get(1).ctx(c)?,
            vector: blob.map(|b| blob_to_vector(&b, "indexed vector")).transpose()?,
            wing: row.get(3).ctx(c)?,
            room: row.get(4).ctx(c)?,
        });
    }
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, rev FROM drawer_tombstones WHERE workspace_id = ?1 AND rev > ?2 ORDER BY rev LIMIT ?3",
        )
        .ctx(c)?;
    let tombstones: Vec<(String, i64)> = stmt
        .query_map(params![workspace.as_str(), after, limit_value], |row| Ok((row.get(0)?, row.get(1)?)))
        .and_then(Iterator::collect)
        .ctx(c)?;
    for (id, rev) in tombstones {
        changes.push(VectorChange {
            id: DrawerId::parse(&id).map_err(|e| StoreError::invalid(format!("tombstone {id}: {e}")))?,
            rev,
            vector: None,
            wing: String::new(),
            room: String::new(),
        });
    }
    changes.sort_by_key(|change| change.rev);
    changes.truncate(limit);
    Ok(changes)
}

fn drawers_where(
    conn: &Connection,
    sql_tail: &str,
    values: Vec<SqlValue>,
    workspace: &WorkspaceId,
) -> StoreResult<Vec<Drawer>> {
    let sql = format!("SELECT seq, {DRAWER_COLUMNS} FROM drawers {sql_tail}");
    let mut stmt = conn.prepare_cached(&sql).ctx("listing drawers")?;
    let mut rows = stmt.query(params_from_iter(values)).ctx("listing drawers")?;
    let mut drawers = Vec::new();
    while let Some(row) = rows.next().ctx("listing drawers")? {
        drawers.push(drawer_from_row(row)?.1);
    }
    crate::records::attach_tags(conn, workspace, &mut drawers)?;
    Ok(drawers)
}

pub(crate) fn top_drawers(
    conn: &Connection,
    workspace: &WorkspaceId,
    wing: Option<&str>,
    limit: usize,
) -> StoreResult<Vec<Drawer>> {
    let mut values = vec![SqlValue::Text(workspace.to_string())];
    let wing_clause = match wing {
        Some(wing) => {
            values.push(SqlValue::Text(wing.to_string()));
            " AND wing = ?"
        }
        None => "",
    };
    values.push(SqlValue::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
    drawers_where(
        conn,
        &format!(
            "INDEXED BY drawers_importance WHERE workspace_id = ? AND status = 'active' AND owner_user_id IS NULL\
             {wing_clause} ORDER BY importance DESC, filed_at DESC LIMIT ?"
        ),
        values,
        workspace,
    )
}

pub(crate) fn place_drawers(
    conn: &Connection,
    workspace: &WorkspaceId,
    wing: &str,
    room: Option<&str>,
    limit: usize,
) -> StoreResult<Vec<Drawer>> {
    let mut values = vec![SqlValue::Text(workspace.to_string()), SqlValue::Text(wing.to_string())];
    let room_clause = match room {
        Some(room) => {
            values.push(SqlValue::Text(room.to_string()));
            " AND room = ?"
        }
        None => "",
    };
    values.push(SqlValue::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
    drawers_where(
        conn,
        &format!(
            "WHERE workspace_id = ? AND wing = ?{room_clause} AND status = 'active' AND owner_user_id IS NULL \
             ORDER BY filed_at DESC LIMIT ?"
        ),
        values,
        workspace,
    )
}

pub(crate) fn page_drawers(
    conn: &Connection,
    workspace: &WorkspaceId,
    wing: Option<&str>,
    room: Option<&str>,
    offset: usize,
    limit: usize,
) -> StoreResult<Vec<Drawer>> {
    let mut values = vec![SqlValue::Text(workspace.to_string())];
    let mut clauses = String::new();
    for (column, value) in [("wing", wing), ("room", room)] {
        if let Some(value) = value {
            values.push(SqlValue::Text(value.to_string()));
            clauses.push_str(&format!(" AND {column} = ?"));
        }
    }
    values.push(SqlValue::Integer(i64::try_from(limit).unwrap_or(i64::MAX)));
    values.push(SqlValue::Integer(i64::try_from(offset).unwrap_or(i64::MAX)));
    drawers_where(
        conn,
        &format!(
            "WHERE workspace_id = ?{clauses} AND status = 'active' AND owner_user_id IS NULL \
             ORDER BY filed_at DESC, id LIMIT ? OFFSET ?"
        ),
        values,
        workspace,
    )
}

pub(crate) fn touch_access(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    ids: &[DrawerId],
    at: &Timestamp,
) -> StoreResult<usize> {
    let mut touched = 0;
    for chunk in ids.chunks(500) {
        let sql = format!(
            "UPDATE drawers SET last_accessed_at = ?, access_count = access_count + 1 \
             WHERE workspace_id = ? AND id IN ({})",
            vec!["?"; chunk.len()].join(", ")
        );
        // Reinforcement first, as its own statement: it reads the previous
        // access time, and only the drawers it raises count as changed
        // (the revision trigger fires on any UPDATE naming `importance`).
        let reinforce = format!(
            "UPDATE drawers SET importance = min(importance + ?, 5.0) WHERE workspace_id = ? \
             AND (last_accessed_at IS NULL OR last_accessed_at < ?) AND importance < 5.0 AND id IN ({})",
            vec!["?"; chunk.len()].join(", ")
        );
        let ids = chunk.iter().map(|id| SqlValue::Text(id.to_string()));
        let mut values = vec![
            SqlValue::Real(mempalace_store::REINFORCE_STEP),
            SqlValue::Text(workspace.to_string()),
            SqlValue::Text(ts(&(*at - mempalace_store::REINFORCE_EVERY))),
        ];
        values.extend(ids.clone());
        tx.prepare_cached(&reinforce).and_then(|mut s| s.execute(params_from_iter(values))).ctx("reinforcing")?;
        let mut values = vec![SqlValue::Text(ts(at)), SqlValue::Text(workspace.to_string())];
        values.extend(ids);
        touched +=
            tx.prepare_cached(&sql).and_then(|mut s| s.execute(params_from_iter(values))).ctx("tracking access")?;
    }
    Ok(touched)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn match_expressions_quote_every_term() {
        assert_eq!(match_expression(&["gripper".into(), "force".into()]).unwrap(), "\"gripper\" OR \"force\"");
        assert_eq!(match_expression(&["a\"b".into()]).unwrap(), "\"ab\"");
        assert!(match_expression(&[]).is_none());
        assert!(match_expression(&["\"".into()]).is_none());
    }
}
