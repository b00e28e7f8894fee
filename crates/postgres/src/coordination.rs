//! Coordination events and artifacts (schema version 2): listings in
//! append order, appends with their artifact references checked in the
//! same transaction, artifacts, and their import.
//!
//! An identity value is drawn at insert time, not at commit, so appends to
//! one workspace take a transaction-scoped advisory lock first
//! ([`lock_appends`]): the lock is held until commit, so the `seq` each
//! append draws follows commit order, and a reader's cursor (the last
//! `seq` it saw) never passes an event that commits later. Rows are turned
//! back into core values through core's own parsers, so a row edited by
//! hand into something the rules refuse is reported as invalid data.

use deadpool_postgres::Transaction;
use mempalace_core::coordination::{Artifact, Event, EventDraft, Routing, StoredEvent};
use mempalace_core::{Timestamp, WorkspaceId};
use mempalace_store::{AppendOutcome, EventFilter, PutOutcome, StoreError, StoreResult};
use serde_json::Value;
use tokio_postgres::Row;

use crate::error::Context;
use crate::records::ensure_workspace;
use crate::row::{Param, limit, refs};

/// Columns of an event read, `e` being `events`.
const EVENT_COLUMNS: &str = "e.seq, e.id, e.type, e.stream, e.room, e.topic, e.from_agent, e.to_agent, \
     e.correlation_id, e.branch, e.base_commit, e.status, e.body, e.metadata, e.created_at, \
     ARRAY(SELECT a.artifact_id FROM event_artifacts a \
           WHERE a.workspace_id = e.workspace_id AND a.event_id = e.id ORDER BY a.artifact_id)";

fn event_from_row(workspace: &WorkspaceId, row: &Row) -> StoreResult<StoredEvent> {
    let id: String = row.get(1);
    let what = format!("event {id}");
    let artifact_ids: Vec<String> = row.get(15);
    let draft = EventDraft {
        event_type: row.get(2),
        stream: row.get(3),
        room: row.get(4),
        topic: row.get(5),
        from_agent: row.get(6),
        to_agent: row.get(7),
        correlation_id: row.get(8),
        branch: row.get(9),
        base_commit: row.get(10),
        status: row.get(11),
        body: Some(row.get(12)),
        metadata: Some(row.get::<_, Value>(13)),
        artifact_ids: Some(Value::Array(artifact_ids.into_iter().map(Value::String).collect())),
    };
    let created_at: Timestamp = row.get(14);
    let event = Event::parse(workspace.clone(), id, created_at, draft)
        .map_err(|e| StoreError::invalid(format!("{what}: {e}")))?;
    Ok(StoredEvent { seq: row.get(0), event })
}

pub(crate) async fn events(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    filter: &EventFilter,
) -> StoreResult<Vec<StoredEvent>> {
    if filter.limit == 0 {
        return Ok(Vec::new());
    }
    let mut sql = format!("SELECT {EVENT_COLUMNS} FROM events e WHERE e.workspace_id = $1");
    let mut params: Vec<Param> = vec![Box::new(workspace.as_str().to_string())];
    let equal = |column: &str, value: Option<&str>, sql: &mut String, params: &mut Vec<Param>| {
        if let Some(value) = value {
            params.push(Box::new(value.to_string()));
            sql.push_str(&format!(" AND e.{column} = ${}", params.len()));
        }
    };
    equal("stream", filter.stream.as_deref(), &mut sql, &mut params);
    equal("room", filter.room.as_deref(), &mut sql, &mut params);
    equal("topic", filter.topic.as_deref(), &mut sql, &mut params);
    equal("type", filter.event_type.as_deref(), &mut sql, &mut params);
    equal("from_agent", filter.writer.as_deref(), &mut sql, &mut params);
    equal("correlation_id", filter.correlation_id.as_deref(), &mut sql, &mut params);
    equal("status", filter.status.map(|status| status.as_str()), &mut sql, &mut params);
    if let Some(to_agent) = &filter.to_agent {
        params.push(Box::new(to_agent.clone()));
        sql.push_str(&format!(" AND e.to_agent IN (${}, '*')", params.len()));
    }
    if let Some(since) = filter.created_since {
        params.push(Box::new(since));
        sql.push_str(&format!(" AND e.created_at >= ${}", params.len()));
    }
    if let Some(after) = filter.after_seq {
        params.push(Box::new(after));
        sql.push_str(&format!(" AND e.seq > ${}", params.len()));
    }
    if let Some(before) = filter.before_seq {
        params.push(Box::new(before));
        sql.push_str(&format!(" AND e.seq < ${}", params.len()));
    }
    params.push(Box::new(limit(filter.limit)));
    let direction = if filter.newest_first { "DESC" } else { "ASC" };
    sql.push_str(&format!(" ORDER BY e.seq {direction} LIMIT ${}", params.len()));
    let c = "listing events";
    let stmt = tx.prepare_cached(&sql).await.ctx(c)?;
    let rows = tx.query(&stmt, &refs(&params)).await.ctx(c)?;
    rows.iter().map(|row| event_from_row(workspace, row)).collect()
}

pub(crate) async fn event(tx: &Transaction<'_>, workspace: &WorkspaceId, id: &str) -> StoreResult<Option<StoredEvent>> {
    let c = "reading an event";
    let sql = format!("SELECT {EVENT_COLUMNS} FROM events e WHERE e.workspace_id = $1 AND e.id = $2");
    let stmt = tx.prepare_cached(&sql).await.ctx(c)?;
    let row = tx.query_opt(&stmt, &[&workspace.as_str(), &id]).await.ctx(c)?;
    row.map(|row| event_from_row(workspace, &row)).transpose()
}

const ARTIFACT_COLUMNS: &str = "id, kind, content, created_by, created_at, metadata";

fn artifact_from_row(workspace: &WorkspaceId, row: &Row) -> StoreResult<Artifact> {
    let id: String = row.get(0);
    let what = format!("artifact {id}");
    let kind: String = row.get(1);
    let created_by: String = row.get(3);
    Artifact::parse(workspace.clone(), id, row.get(4), &kind, row.get(2), &created_by, Some(row.get::<_, Value>(5)))
        .map_err(|e| StoreError::invalid(format!("{what}: {e}")))
}

pub(crate) async fn artifact(tx: &Transaction<'_>, workspace: &WorkspaceId, id: &str) -> StoreResult<Option<Artifact>> {
    let c = "reading an artifact";
    let sql = format!("SELECT {ARTIFACT_COLUMNS} FROM artifacts WHERE workspace_id = $1 AND id = $2");
    let stmt = tx.prepare_cached(&sql).await.ctx(c)?;
    let row = tx.query_opt(&stmt, &[&workspace.as_str(), &id]).await.ctx(c)?;
    row.map(|row| artifact_from_row(workspace, &row)).transpose()
}

pub(crate) async fn scan_artifacts(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    after: Option<&str>,
    count: usize,
) -> StoreResult<Vec<Artifact>> {
    let c = "scanning artifacts";
    let sql = format!(
        "SELECT {ARTIFACT_COLUMNS} FROM artifacts WHERE workspace_id = $1 AND ($2::text IS NULL OR id > $2) \
         ORDER BY id LIMIT $3"
    );
    let stmt = tx.prepare_cached(&sql).await.ctx(c)?;
    let rows = tx.query(&stmt, &[&workspace.as_str(), &after, &limit(count)]).await.ctx(c)?;
    rows.iter().map(|row| artifact_from_row(workspace, row)).collect()
}

pub(crate) async fn put_artifact(tx: &Transaction<'_>, artifact: &Artifact) -> StoreResult<PutOutcome> {
    ensure_workspace(tx, &artifact.workspace_id, &artifact.created_at).await?;
    let c = "storing an artifact";
    let stmt = tx
        .prepare_cached(
            "INSERT INTO artifacts (workspace_id, id, kind, sha256, size_bytes, created_by, created_at, metadata, \
             content) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (workspace_id, id) DO NOTHING",
        )
        .await
        .ctx(c)?;
    let inserted = tx
        .execute(
            &stmt,
            &[
                &artifact.workspace_id.as_str(),
                &artifact.id,
                &artifact.kind.as_str(),
                &artifact.sha256(),
                &i64::try_from(artifact.size_bytes()).unwrap_or(i64::MAX),
                &artifact.created_by.as_str(),
                &artifact.created_at,
                &Value::Object(artifact.metadata.as_map().clone()),
                &artifact.content.as_str(),
            ],
        )
        .await
        .ctx(c)?;
    Ok(if inserted == 0 { PutOutcome::Existing } else { PutOutcome::Inserted })
}

/// Queues this transaction behind every other append to `workspace` until
/// it ends (see the module doc). Taken before the `seq` is drawn.
async fn lock_appends(tx: &Transaction<'_>, workspace: &WorkspaceId) -> StoreResult<()> {
    tx.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '/mempalace/events/' || $1, 0))",
        &[&workspace.as_str()],
    )
    .await
    .ctx("waiting for other appends")?;
    Ok(())
}

async fn missing_artifacts(tx: &Transaction<'_>, workspace: &WorkspaceId, ids: &[&str]) -> StoreResult<Vec<String>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let c = "looking up artifacts";
    let stmt = tx
        .prepare_cached(
            "SELECT wanted FROM unnest($2::text[]) WITH ORDINALITY AS w (wanted, position) \
             WHERE NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.workspace_id = $1 AND a.id = w.wanted) \
             ORDER BY position",
        )
        .await
        .ctx(c)?;
    let rows = tx.query(&stmt, &[&workspace.as_str(), &ids]).await.ctx(c)?;
    Ok(rows.iter().map(|row| row.get(0)).collect())
}

/// Inserts the event row and its artifact links (the caller holds the
/// append lock and has checked the artifacts). Returns its `seq`, or `None`
/// when its id is already taken in the workspace.
async fn insert_event(tx: &Transaction<'_>, event: &Event) -> StoreResult<Option<i64>> {
    ensure_workspace(tx, &event.workspace_id, &event.created_at).await?;
    let c = "appending an event";
    let opt = |value: &Option<Routing>| value.as_ref().map(|v| v.as_str().to_string());
    let stmt = tx
        .prepare_cached(
            "INSERT INTO events (workspace_id, id, type, stream, room, topic, from_agent, to_agent, correlation_id, \
             branch, base_commit, status, body, metadata, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) \
             ON CONFLICT (workspace_id, id) DO NOTHING RETURNING seq",
        )
        .await
        .ctx(c)?;
    let row = tx
        .query_opt(
            &stmt,
            &[
                &event.workspace_id.as_str(),
                &event.id,
                &event.event_type.as_str(),
                &event.stream.as_str(),
                &event.room.as_str(),
                &opt(&event.topic),
                &event.from_agent.as_str(),
                &opt(&event.to_agent),
                &opt(&event.correlation_id),
                &opt(&event.branch),
                &opt(&event.base_commit),
                &event.status.map(|status| status.as_str()),
                &event.body.as_str(),
                &Value::Object(event.metadata.as_map().clone()),
                &event.created_at,
            ],
        )
        .await
        .ctx(c)?;
    let Some(row) = row else { return Ok(None) };
    if !event.artifact_ids.is_empty() {
        tx.execute(
            "INSERT INTO event_artifacts (workspace_id, event_id, artifact_id) \
             SELECT $1, $2, unnest($3::text[]) ON CONFLICT DO NOTHING",
            &[&event.workspace_id.as_str(), &event.id, &event.artifact_ids],
        )
        .await
        .ctx("linking an event's artifacts")?;
    }
    Ok(Some(row.get(0)))
}

pub(crate) async fn append_event(
    tx: &Transaction<'_>,
    event: &Event,
    artifacts: &[Artifact],
) -> StoreResult<AppendOutcome> {
    // References are checked before anything is written: a refused event
    // leaves no trace, not even the artifacts sent along with it.
    let unsent: Vec<&str> = event
        .artifact_ids
        .iter()
        .map(String::as_str)
        .filter(|id| !artifacts.iter().any(|a| a.workspace_id == event.workspace_id && a.id == *id))
        .collect();
    if let Some(missing) = missing_artifacts(tx, &event.workspace_id, &unsent).await?.into_iter().next() {
        return Ok(AppendOutcome::UnknownArtifact(missing));
    }
    for artifact in artifacts {
        put_artifact(tx, artifact).await?;
    }
    lock_appends(tx, &event.workspace_id).await?;
    match insert_event(tx, event).await? {
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
pub(crate) async fn import_event(tx: &Transaction<'_>, event: &Event) -> StoreResult<bool> {
    let present = tx
        .query_opt(
            "SELECT 1 FROM events WHERE workspace_id = $1 AND id = $2",
            &[&event.workspace_id.as_str(), &event.id],
        )
        .await
        .ctx("looking up an event")?;
    if present.is_some() {
        return Ok(false);
    }
    let ids: Vec<&str> = event.artifact_ids.iter().map(String::as_str).collect();
    if let Some(missing) = missing_artifacts(tx, &event.workspace_id, &ids).await?.into_iter().next() {
        return Err(StoreError::invalid(format!(
            "event {} references artifact {missing}, which is neither in the palace nor earlier in the import; \
             import the artifact's line first",
            event.id
        )));
    }
    lock_appends(tx, &event.workspace_id).await?;
    Ok(insert_event(tx, event).await?.is_some())
}
