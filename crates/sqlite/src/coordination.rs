//! Coordination events and artifacts (schema version 7): listings in
//! append order, appends with their artifact references checked in the
//! same transaction, artifacts, and their import.
//!
//! `seq` is the table's integer key; SQLite's single writer makes its order
//! the commit order. Rows are turned back into core values through core's
//! own parsers, so a row edited by hand into something the rules refuse is
//! reported as invalid data, never returned.

use mempalace_core::coordination::{Artifact, CoordinationError, Event, EventDraft, StoredEvent};
use mempalace_core::{Timestamp, WorkspaceId};
use mempalace_store::{AppendOutcome, EventFilter, PutOutcome, StoreError, StoreResult};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Row, Transaction, params, params_from_iter};
use serde_json::Value;

use crate::error::Context;
use crate::records::ensure_workspace;
use crate::row::{parse_ts, to_json_text, ts};

/// Columns of an event read, `e` being `events`.
const EVENT_COLUMNS: &str = "e.seq, e.id, e.type, e.stream, e.room, e.topic, e.from_agent, e.to_agent, \
     e.correlation_id, e.branch, e.base_commit, e.status, e.body, e.metadata, e.created_at, \
     (SELECT json_group_array(a.artifact_id) FROM event_artifacts a \
      WHERE a.workspace_id = e.workspace_id AND a.event_id = e.id)";

fn event_from_row(workspace: &WorkspaceId, row: &Row<'_>) -> StoreResult<StoredEvent> {
    let c = "reading an event";
    let id: String = row.get(1).ctx(c)?;
    let what = format!("event {id}");
    let json = |index: usize| -> StoreResult<Value> {
        let text: String = row.get(index).ctx(c)?;
        serde_json::from_str(&text).map_err(|e| StoreError::invalid(format!("{what}: column {index} is not JSON: {e}")))
    };
    let mut artifact_ids = json(15)?;
    if let Value::Array(ids) = &mut artifact_ids {
        ids.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    }
    let draft = EventDraft {
        event_type: row.get(2).ctx(c)?,
        stream: row.get(3).ctx(c)?,
        room: row.get(4).ctx(c)?,
        topic: row.get(5).ctx(c)?,
        from_agent: row.get(6).ctx(c)?,
        to_agent: row.get(7).ctx(c)?,
        correlation_id: row.get(8).ctx(c)?,
        branch: row.get(9).ctx(c)?,
        base_commit: row.get(10).ctx(c)?,
        status: row.get(11).ctx(c)?,
        body: Some(row.get(12).ctx(c)?),
        metadata: Some(json(13)?),
        artifact_ids: Some(artifact_ids),
    };
    let created_at = parse_ts(&row.get::<_, String>(14).ctx(c)?, &what)?;
    let event = Event::parse(workspace.clone(), id, created_at, draft)
        .map_err(|e: CoordinationError| StoreError::invalid(format!("{what}: {e}")))?;
    Ok(StoredEvent { seq: row.get(0).ctx(c)?, event })
}

pub(crate) fn events(
    conn: &Connection,
    workspace: &WorkspaceId,
    filter: &EventFilter,
) -> StoreResult<Vec<StoredEvent>> {
    if filter.limit == 0 {
        return Ok(Vec::new());
    }
    let mut sql = format!("SELECT {EVENT_COLUMNS} FROM events e WHERE e.workspace_id = ?");
    let mut values: Vec<SqlValue> = vec![SqlValue::Text(workspace.as_str().to_string())];
    let mut equal = |column: &str, value: Option<&str>| {
        if let Some(value) = value {
            sql.push_str(&format!(" AND e.{column} = ?"));
            values.push(SqlValue::Text(value.to_string()));
        }
    };
    equal("stream", filter.stream.as_deref());
    equal("room", filter.room.as_deref());
    equal("topic", filter.topic.as_deref());
    equal("type", filter.event_type.as_deref());
    equal("from_agent", filter.writer.as_deref());
    equal("correlation_id", filter.correlation_id.as_deref());
    equal("status", filter.status.map(|status| status.as_str()));
    if let Some(to_agent) = &filter.to_agent {
        sql.push_str(" AND (e.to_agent = ? OR e.to_agent = '*')");
        values.push(SqlValue::Text(to_agent.clone()));
    }
    if let Some(since) = &filter.created_since {
        sql.push_str(" AND e.created_at >= ?");
        values.push(SqlValue::Text(ts(since)));
    }
    if let Some(after) = filter.after_seq {
        sql.push_str(" AND e.seq > ?");
        values.push(SqlValue::Integer(after));
    }
    if let Some(before) = filter.before_seq {
        sql.push_str(" AND e.seq < ?");
        values.push(SqlValue::Integer(before));
    }
    sql.push_str(if filter.newest_first { " ORDER BY e.seq DESC LIMIT ?" } else { " ORDER BY e.seq ASC LIMIT ?" });
    values.push(SqlValue::Integer(i64::try_from(filter.limit).unwrap_or(i64::MAX)));
    let c = "listing events";
    let mut stmt = conn.prepare_cached(&sql).ctx(c)?;
    let mut rows = stmt.query(params_from_iter(values)).ctx(c)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx(c)? {
        out.push(event_from_row(workspace, row)?);
    }
    Ok(out)
}

pub(crate) fn event(conn: &Connection, workspace: &WorkspaceId, id: &str) -> StoreResult<Option<StoredEvent>> {
    let c = "reading an event";
    let sql = format!("SELECT {EVENT_COLUMNS} FROM events e WHERE e.workspace_id = ?1 AND e.id = ?2");
    let mut stmt = conn.prepare_cached(&sql).ctx(c)?;
    let mut rows = stmt.query(params![workspace.as_str(), id]).ctx(c)?;
    rows.next().ctx(c)?.map(|row| event_from_row(workspace, row)).transpose()
}

const ARTIFACT_COLUMNS: &str = "id, kind, content, created_by, created_at, metadata";

fn artifact_from_row(workspace: &WorkspaceId, row: &Row<'_>) -> StoreResult<Artifact> {
    let c = "reading an artifact";
    let id: String = row.get(0).ctx(c)?;
    let what = format!("artifact {id}");
    let kind: String = row.get(1).ctx(c)?;
    let created_by: String = row.get(3).ctx(c)?;
    let created_at: Timestamp = parse_ts(&row.get::<_, String>(4).ctx(c)?, &what)?;
    let metadata: String = row.get(5).ctx(c)?;
    let metadata: Value = serde_json::from_str(&metadata)
        .map_err(|e| StoreError::invalid(format!("{what}: metadata is not JSON: {e}")))?;
    Artifact::parse(workspace.clone(), id, created_at, &kind, row.get(2).ctx(c)?, &created_by, Some(metadata))
        .map_err(|e| StoreError::invalid(format!("{what}: {e}")))
}

pub(crate) fn artifact(conn: &Connection, workspace: &WorkspaceId, id: &str) -> StoreResult<Option<Artifact>> {
    let c = "reading an artifact";
    let sql = format!("SELECT {ARTIFACT_COLUMNS} FROM artifacts WHERE workspace_id = ?1 AND id = ?2");
    let mut stmt = conn.prepare_cached(&sql).ctx(c)?;
    let mut rows = stmt.query(params![workspace.as_str(), id]).ctx(c)?;
    rows.next().ctx(c)?.map(|row| artifact_from_row(workspace, row)).transpose()
}

pub(crate) fn scan_artifacts(
    conn: &Connection,
    workspace: &WorkspaceId,
    after: Option<&str>,
    limit: usize,
) -> StoreResult<Vec<Artifact>> {
    let c = "scanning artifacts";
    let sql = format!(
        "SELECT {ARTIFACT_COLUMNS} FROM artifacts WHERE workspace_id = ?1 AND (?2 IS NULL OR id > ?2) \
         ORDER BY id LIMIT ?3"
    );
    let mut stmt = conn.prepare_cached(&sql).ctx(c)?;
    let mut rows = stmt.query(params![workspace.as_str(), after, i64::try_from(limit).unwrap_or(i64::MAX)]).ctx(c)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx(c)? {
        out.push(artifact_from_row(workspace, row)?);
    }
    Ok(out)
}

pub(crate) fn put_artifact(tx: &Transaction<'_>, artifact: &Artifact) -> StoreResult<PutOutcome> {
    ensure_workspace(tx, &artifact.workspace_id, &artifact.created_at)?;
    let inserted = tx
        .prepare_cached(
            "INSERT INTO artifacts (workspace_id, id, kind, sha256, size_bytes, created_by, created_at, metadata, \
             content) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (workspace_id, id) DO NOTHING",
        )
        .and_then(|mut stmt| {
            stmt.execute(params![
                artifact.workspace_id.as_str(),
                artifact.id,
                artifact.kind.as_str(),
                artifact.sha256(),
                i64::try_from(artifact.size_bytes()).unwrap_or(i64::MAX),
                artifact.created_by.as_str(),
                ts(&artifact.created_at),
                to_json_text(artifact.metadata.as_map()),
                artifact.content.as_str(),
            ])
        })
        .ctx("storing an artifact")?;
    Ok(if inserted == 0 { PutOutcome::Existing } else { PutOutcome::Inserted })
}

fn artifact_exists(tx: &Transaction<'_>, workspace: &WorkspaceId, id: &str) -> StoreResult<bool> {
    tx.prepare_cached("SELECT 1 FROM artifacts WHERE workspace_id = ?1 AND id = ?2")
        .and_then(|mut stmt| stmt.query_row(params![workspace.as_str(), id], |_| Ok(())).optional())
        .map(|found| found.is_some())
        .ctx("looking up an artifact")
}

/// Inserts the event row and its artifact links; the caller has checked
/// that the artifacts exist. Returns its `seq`, or `None` when its id is
/// already taken in the workspace.
fn insert_event(tx: &Transaction<'_>, event: &Event) -> StoreResult<Option<i64>> {
    ensure_workspace(tx, &event.workspace_id, &event.created_at)?;
    let opt = |value: &Option<mempalace_core::coordination::Routing>| value.as_ref().map(|v| v.as_str().to_string());
    let seq = tx
        .prepare_cached(
            "INSERT INTO events (workspace_id, id, type, stream, room, topic, from_agent, to_agent, correlation_id, \
             branch, base_commit, status, body, metadata, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15) \
             ON CONFLICT (workspace_id, id) DO NOTHING RETURNING seq",
        )
        .and_then(|mut stmt| {
            stmt.query_row(
                params![
                    event.workspace_id.as_str(),
                    event.id,
                    event.event_type.as_str(),
                    event.stream.as_str(),
                    event.room.as_str(),
                    opt(&event.topic),
                    event.from_agent.as_str(),
                    opt(&event.to_agent),
                    opt(&event.correlation_id),
                    opt(&event.branch),
                    opt(&event.base_commit),
                    event.status.map(|status| status.as_str()),
                    event.body.as_str(),
                    to_json_text(event.metadata.as_map()),
                    ts(&event.created_at),
                ],
                |row| row.get::<_, i64>(0),
            )
            .optional()
        })
        .ctx("appending an event")?;
    let Some(seq) = seq else { return Ok(None) };
    let mut link = tx
        .prepare_cached(
            "INSERT OR IGNORE INTO event_artifacts (workspace_id, event_id, artifact_id) VALUES (?1, ?2, ?3)",
        )
        .ctx("linking an event's artifacts")?;
    for artifact_id in &event.artifact_ids {
        link.execute(params![event.workspace_id.as_str(), event.id, artifact_id])
            .ctx("linking an event's artifacts")?;
    }
    Ok(Some(seq))
}

pub(crate) fn append_event(tx: &Transaction<'_>, event: &Event, artifacts: &[Artifact]) -> StoreResult<AppendOutcome> {
    // References are checked before anything is written: a refused event
    // leaves no trace, not even the artifacts sent along with it.
    for id in &event.artifact_ids {
        let sent = artifacts.iter().any(|a| a.workspace_id == event.workspace_id && &a.id == id);
        if !sent && !artifact_exists(tx, &event.workspace_id, id)? {
            return Ok(AppendOutcome::UnknownArtifact(id.clone()));
        }
    }
    for artifact in artifacts {
        put_artifact(tx, artifact)?;
    }
    match insert_event(tx, event)? {
        Some(seq) => Ok(AppendOutcome::Appended(seq)),
        None => Err(StoreError::invalid(format!(
            "event id {} is already taken in workspace {}; append it again (a new id is drawn)",
            event.id, event.workspace_id
        ))),
    }
}

/// Imports one event: appended after what the workspace holds (a new
/// `seq`), unless its id is present. Its artifacts must be there already
/// (an export writes them before the events).
pub(crate) fn import_event(tx: &Transaction<'_>, event: &Event) -> StoreResult<bool> {
    let present = tx
        .prepare_cached("SELECT 1 FROM events WHERE workspace_id = ?1 AND id = ?2")
        .and_then(|mut stmt| stmt.query_row(params![event.workspace_id.as_str(), event.id], |_| Ok(())).optional())
        .ctx("looking up an event")?;
    if present.is_some() {
        return Ok(false);
    }
    for id in &event.artifact_ids {
        if !artifact_exists(tx, &event.workspace_id, id)? {
            return Err(StoreError::invalid(format!(
                "event {} references artifact {id}, which is neither in the palace nor earlier in the import; \
                 import the artifact's line first",
                event.id
            )));
        }
    }
    Ok(insert_event(tx, event)?.is_some())
}
