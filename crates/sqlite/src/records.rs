//! Reads and writes of palace records inside a given connection or
//! transaction.
//!
//! Each function is one statement or a short group of statements; the caller
//! (`SqliteStore`) owns the transaction. Drawer writes keep the lexical index
//! in step in the same transaction (the room counts are kept by triggers).

use std::collections::HashMap;

use mempalace_core::centroid::Centroid;
use mempalace_core::kg::{Entity, Triple};
use mempalace_core::lexical;
use mempalace_core::session::{EpisodicSummary, Session};
use mempalace_core::tunnel::{Place, Tunnel};
use mempalace_core::{
    Confidence, ContentHash, Drawer, DrawerId, DrawerStatus, DrawerTag, Embedding, Identity, Room, Timestamp, Wing,
    WorkspaceId,
};
use mempalace_store::{IdentityRecord, PalaceRecord, PutOutcome, RecordCounts, StoreError, StoreResult, Taxonomy};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Transaction, params, params_from_iter};

use crate::error::Context;
use crate::row::{
    DRAWER_COLUMNS, blob_to_vector, drawer_from_row, drawer_values, json_object, json_strings, opt_ts, parse_opt_ts,
    parse_ts, to_json_text, ts, vector_to_blob,
};

pub(crate) fn ensure_workspace(tx: &Transaction<'_>, workspace: &WorkspaceId, at: &Timestamp) -> StoreResult<()> {
    tx.prepare_cached("INSERT OR IGNORE INTO workspaces (id, created_at) VALUES (?1, ?2)")
        .and_then(|mut stmt| stmt.execute(params![workspace.as_str(), ts(at)]))
        .ctx("recording the workspace")?;
    Ok(())
}

pub(crate) fn workspaces(conn: &Connection) -> StoreResult<Vec<WorkspaceId>> {
    let mut stmt = conn.prepare_cached("SELECT id FROM workspaces ORDER BY id").ctx("listing workspaces")?;
    let ids: Vec<String> =
        stmt.query_map([], |row| row.get(0)).and_then(Iterator::collect).ctx("listing workspaces")?;
    ids.iter()
        .map(|id| WorkspaceId::parse(id).map_err(|e| StoreError::invalid(format!("workspace {id:?}: {e}"))))
        .collect()
}

/// Inserts one drawer if its id is new, with its tags and its lexical-index row.
pub(crate) fn insert_drawer(tx: &Transaction<'_>, drawer: &Drawer) -> StoreResult<PutOutcome> {
    ensure_workspace(tx, &drawer.workspace_id, &drawer.filed_at)?;
    let placeholders = vec!["?"; crate::row::DRAWER_COLUMN_COUNT].join(", ");
    let sql = format!(
        "INSERT INTO drawers ({DRAWER_COLUMNS}) VALUES ({placeholders}) ON CONFLICT (workspace_id, id) DO NOTHING"
    );
    let inserted = tx
        .prepare_cached(&sql)
        .and_then(|mut stmt| stmt.execute(params_from_iter(drawer_values(drawer))))
        .ctx("inserting a drawer")?;
    if inserted == 0 {
        return Ok(PutOutcome::Existing);
    }
    let seq = tx.last_insert_rowid();
    tx.prepare_cached("INSERT INTO drawers_fts (rowid, body) VALUES (?1, ?2)")
        .and_then(|mut stmt| stmt.execute(params![seq, lexical::index_text(drawer.content.as_str()).as_ref()]))
        .ctx("indexing a drawer")?;
    crate::kg::write_mentions(tx, &drawer.workspace_id, &drawer.id, &drawer.entities)?;
    for tag in &drawer.tags {
        tx.prepare_cached(
            "INSERT OR IGNORE INTO drawer_tags (workspace_id, drawer_id, tag, source) VALUES (?1, ?2, ?3, ?4)",
        )
        .and_then(|mut stmt| {
            stmt.execute(params![drawer.workspace_id.as_str(), drawer.id.as_str(), tag.tag, tag.source.as_str()])
        })
        .ctx("tagging a drawer")?;
    }
    Ok(PutOutcome::Inserted)
}

pub(crate) fn set_drawer_status(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    id: &DrawerId,
    status: DrawerStatus,
    reason: Option<&str>,
    at: &Timestamp,
) -> StoreResult<bool> {
    let changed = tx
        .prepare_cached(
            "UPDATE drawers SET status = ?3, status_reason = ?4, updated_at = ?5 WHERE workspace_id = ?1 AND id = ?2",
        )
        .and_then(|mut stmt| stmt.execute(params![workspace.as_str(), id.as_str(), status.as_str(), reason, ts(at)]))
        .ctx("changing a drawer's status")?;
    Ok(changed > 0)
}

pub(crate) fn delete_drawer(tx: &Transaction<'_>, workspace: &WorkspaceId, id: &DrawerId) -> StoreResult<bool> {
    let seq: Option<i64> = tx
        .prepare_cached("SELECT seq FROM drawers WHERE workspace_id = ?1 AND id = ?2")
        .and_then(|mut stmt| stmt.query_row(params![workspace.as_str(), id.as_str()], |row| row.get(0)).optional())
        .ctx("finding a drawer")?;
    let Some(seq) = seq else { return Ok(false) };
    tx.prepare_cached("DELETE FROM drawers_fts WHERE rowid = ?1")
        .and_then(|mut stmt| stmt.execute(params![seq]))
        .ctx("unindexing a drawer")?;
    tx.prepare_cached("DELETE FROM drawers WHERE seq = ?1")
        .and_then(|mut stmt| stmt.execute(params![seq]))
        .ctx("deleting a drawer")?;
    Ok(true)
}

pub(crate) fn save_session(tx: &Transaction<'_>, session: &Session) -> StoreResult<()> {
    write_session(tx, session, true).map(|_| ())
}

/// Inserts a session; an existing one is updated (`upsert`) or kept.
/// Returns the rows changed.
fn write_session(tx: &Transaction<'_>, session: &Session, upsert: bool) -> StoreResult<usize> {
    ensure_workspace(tx, &session.workspace_id, &session.started_at)?;
    let on_conflict = if upsert {
        "ON CONFLICT (workspace_id, id) DO UPDATE SET agent = excluded.agent, user_id = excluded.user_id, \
         context = excluded.context, status = excluded.status, outcome_score = excluded.outcome_score, \
         session_count = excluded.session_count, ended_at = excluded.ended_at"
    } else {
        "ON CONFLICT DO NOTHING"
    };
    tx.prepare_cached(&format!(
        "INSERT INTO sessions (workspace_id, id, agent, user_id, context, status, outcome_score, \
         session_count, started_at, ended_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) {on_conflict}"
    ))
    .and_then(|mut stmt| {
        stmt.execute(params![
            session.workspace_id.as_str(),
            session.id,
            session.agent,
            session.user_id,
            to_json_text(&session.context),
            session.status.as_str(),
            session.outcome_score,
            session.session_count,
            ts(&session.started_at),
            opt_ts(session.ended_at.as_ref()),
        ])
    })
    .ctx("saving a session")
}

pub(crate) fn attach_tags(conn: &Connection, workspace: &WorkspaceId, drawers: &mut [Drawer]) -> StoreResult<()> {
    if drawers.is_empty() {
        return Ok(());
    }
    let mut by_id: HashMap<String, usize> = HashMap::with_capacity(drawers.len());
    for (index, drawer) in drawers.iter().enumerate() {
        by_id.insert(drawer.id.as_str().to_string(), index);
    }
    for chunk in drawers.iter().map(|d| d.id.as_str().to_string()).collect::<Vec<_>>().chunks(500) {
        let placeholders = vec!["?"; chunk.len()].join(", ");
        let sql = format!(
            "SELECT drawer_id, tag, source FROM drawer_tags WHERE workspace_id = ? AND drawer_id IN ({placeholders}) \
             ORDER BY drawer_id, tag"
        );
        let mut stmt = conn.prepare_cached(&sql).ctx("reading tags")?;
        let mut values: Vec<SqlValue> = vec![SqlValue::Text(workspace.as_str().to_string())];
        values.extend(chunk.iter().map(|id| SqlValue::Text(id.clone())));
        let rows: Vec<(String, String, String)> = stmt
            .query_map(params_from_iter(values), |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .and_then(Iterator::collect)
            .ctx("reading tags")?;
        for (drawer_id, tag, source) in rows {
            let source =
                source.parse().map_err(|e| StoreError::invalid(format!("tag {tag:?} of drawer {drawer_id}: {e}")))?;
            if let Some(&index) = by_id.get(&drawer_id) {
                drawers[index].tags.push(DrawerTag { tag, source });
            }
        }
    }
    Ok(())
}

pub(crate) fn drawers_by_id(conn: &Connection, workspace: &WorkspaceId, ids: &[DrawerId]) -> StoreResult<Vec<Drawer>> {
    let mut found: HashMap<String, Drawer> = HashMap::with_capacity(ids.len());
    for chunk in ids.chunks(500) {
        let placeholders = vec!["?"; chunk.len()].join(", ");
        let sql =
            format!("SELECT seq, {DRAWER_COLUMNS} FROM drawers WHERE workspace_id = ? AND id IN ({placeholders})");
        let mut stmt = conn.prepare_cached(&sql).ctx("reading drawers")?;
        let mut values: Vec<SqlValue> = vec![SqlValue::Text(workspace.as_str().to_string())];
        values.extend(chunk.iter().map(|id| SqlValue::Text(id.as_str().to_string())));
        let mut rows = stmt.query(params_from_iter(values)).ctx("reading drawers")?;
        while let Some(row) = rows.next().ctx("reading drawers")? {
            let (_, drawer) = drawer_from_row(row)?;
            found.insert(drawer.id.as_str().to_string(), drawer);
        }
    }
    let mut ordered: Vec<Drawer> = ids.iter().filter_map(|id| found.remove(id.as_str())).collect();
    attach_tags(conn, workspace, &mut ordered)?;
    Ok(ordered)
}

pub(crate) fn scan_drawers(
    conn: &Connection,
    workspace: &WorkspaceId,
    after: Option<&DrawerId>,
    limit: usize,
) -> StoreResult<Vec<Drawer>> {
    let sql =
        format!("SELECT seq, {DRAWER_COLUMNS} FROM drawers WHERE workspace_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3");
    let mut stmt = conn.prepare_cached(&sql).ctx("scanning drawers")?;
    let after = after.map_or("", DrawerId::as_str);
    let mut rows = stmt
        .query(params![workspace.as_str(), after, i64::try_from(limit).unwrap_or(i64::MAX)])
        .ctx("scanning drawers")?;
    let mut drawers = Vec::new();
    while let Some(row) = rows.next().ctx("scanning drawers")? {
        drawers.push(drawer_from_row(row)?.1);
    }
    attach_tags(conn, workspace, &mut drawers)?;
    Ok(drawers)
}

pub(crate) fn taxonomy(conn: &Connection, workspace: &WorkspaceId) -> StoreResult<Taxonomy> {
    let mut stmt = conn
        .prepare_cached("SELECT wing, room, drawers FROM room_counts WHERE workspace_id = ?1 ORDER BY wing, room")
        .ctx("reading room counts")?;
    let mut rows = stmt.query(params![workspace.as_str()]).ctx("reading room counts")?;
    let mut taxonomy = Taxonomy::default();
    while let Some(row) = rows.next().ctx("reading room counts")? {
        let wing: String = row.get(0).ctx("reading room counts")?;
        let room: String = row.get(1).ctx("reading room counts")?;
        let count: i64 = row.get(2).ctx("reading room counts")?;
        taxonomy.add(&wing, &room, u64::try_from(count).unwrap_or(0));
    }
    Ok(taxonomy)
}

pub(crate) fn source_cursor(conn: &Connection, workspace: &WorkspaceId, source: &str) -> StoreResult<Option<String>> {
    conn.prepare_cached("SELECT cursor FROM source_cursors WHERE workspace_id = ?1 AND source = ?2")
        .and_then(|mut stmt| stmt.query_row(params![workspace.as_str(), source], |row| row.get(0)).optional())
        .ctx("reading a source cursor")
}

pub(crate) fn set_source_cursor(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    source: &str,
    cursor: Option<&str>,
    at: &Timestamp,
) -> StoreResult<()> {
    let c = "writing a source cursor";
    match cursor {
        Some(cursor) => tx
            .prepare_cached(
                "INSERT INTO source_cursors (workspace_id, source, cursor, updated_at) VALUES (?1, ?2, ?3, ?4) \
                 ON CONFLICT (workspace_id, source) DO UPDATE SET cursor = excluded.cursor, \
                 updated_at = excluded.updated_at",
            )
            .and_then(|mut stmt| stmt.execute(params![workspace.as_str(), source, cursor, ts(at)]))
            .ctx(c)?,
        None => tx
            .prepare_cached("DELETE FROM source_cursors WHERE workspace_id = ?1 AND source = ?2")
            .and_then(|mut stmt| stmt.execute(params![workspace.as_str(), source]))
            .ctx(c)?,
    };
    Ok(())
}

pub(crate) fn identity(conn: &Connection, workspace: &WorkspaceId) -> StoreResult<Option<IdentityRecord>> {
    let row: Option<(String, String)> = conn
        .prepare_cached("SELECT text, updated_at FROM identities WHERE workspace_id = ?1")
        .and_then(|mut stmt| {
            stmt.query_row(params![workspace.as_str()], |row| Ok((row.get(0)?, row.get(1)?))).optional()
        })
        .ctx("reading the identity")?;
    row.map(|(text, updated_at)| {
        Ok(IdentityRecord {
            workspace_id: workspace.clone(),
            identity: Identity::parse(text).map_err(|e| StoreError::invalid(format!("identity: {e}")))?,
            updated_at: parse_ts(&updated_at, "identity updated_at")?,
        })
    })
    .transpose()
}

pub(crate) fn set_identity(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    identity: &Identity,
    at: &Timestamp,
) -> StoreResult<()> {
    ensure_workspace(tx, workspace, at)?;
    tx.prepare_cached(
        "INSERT INTO identities (workspace_id, text, updated_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT (workspace_id) DO UPDATE SET text = excluded.text, updated_at = excluded.updated_at",
    )
    .and_then(|mut stmt| stmt.execute(params![workspace.as_str(), identity.as_str(), ts(at)]))
    .ctx("setting the identity")?;
    Ok(())
}

pub(crate) fn embedding_from(
    model: Option<String>,
    blob: Option<Vec<u8>>,
    what: &str,
) -> StoreResult<Option<Embedding>> {
    match (model, blob) {
        (Some(model), Some(blob)) => Ok(Some(Embedding { model, vector: blob_to_vector(&blob, what)? })),
        _ => Ok(None),
    }
}

fn confidence(value: f64, what: &str) -> StoreResult<Confidence> {
    Confidence::new(value).map_err(|e| StoreError::invalid(format!("{what}: {e}")))
}

pub(crate) fn entities(conn: &Connection, workspace: &WorkspaceId) -> StoreResult<Vec<Entity>> {
    entities_where(conn, workspace, "workspace_id = ?", vec![SqlValue::Text(workspace.to_string())])
}

/// Entities matching a `WHERE` clause (its first parameter binds the workspace), in id order.
pub(crate) fn entities_where(
    conn: &Connection,
    workspace: &WorkspaceId,
    clause: &str,
    values: Vec<SqlValue>,
) -> StoreResult<Vec<Entity>> {
    let sql = format!(
        "SELECT id, name, entity_type, properties, embedding_model, embedding, created_at \
         FROM entities WHERE {clause} ORDER BY id"
    );
    let mut stmt = conn.prepare_cached(&sql).ctx("reading entities")?;
    let mut rows = stmt.query(params_from_iter(values)).ctx("reading entities")?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx("reading entities")? {
        let id: String = row.get(0).ctx("reading entities")?;
        let what = format!("entity {id}");
        out.push(Entity {
            workspace_id: workspace.clone(),
            name: row.get(1).ctx("reading entities")?,
            entity_type: row.get(2).ctx("reading entities")?,
            properties: json_object(&row.get::<_, String>(3).ctx("reading entities")?, &what)?,
            embedding: embedding_from(row.get(4).ctx("reading entities")?, row.get(5).ctx("reading entities")?, &what)?,
            created_at: parse_ts(&row.get::<_, String>(6).ctx("reading entities")?, &what)?,
            id,
        });
    }
    Ok(out)
}

pub(crate) fn triples(conn: &Connection, workspace: &WorkspaceId) -> StoreResult<Vec<Triple>> {
    triples_where(conn, workspace, "workspace_id = ?", vec![SqlValue::Text(workspace.to_string())])
}

/// Triples matching a `WHERE` clause (its first parameter binds the workspace), in id order.
pub(crate) fn triples_where(
    conn: &Connection,
    workspace: &WorkspaceId,
    clause: &str,
    values: Vec<SqlValue>,
) -> StoreResult<Vec<Triple>> {
    let sql = format!(
        "SELECT id, subject, predicate, object, valid_from, valid_to, confidence, source_drawer_id, source, \
         created_at FROM triples WHERE {clause} ORDER BY id"
    );
    let mut stmt = conn.prepare_cached(&sql).ctx("reading triples")?;
    let mut rows = stmt.query(params_from_iter(values)).ctx("reading triples")?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx("reading triples")? {
        let id: String = row.get(0).ctx("reading triples")?;
        let what = format!("triple {id}");
        let source_drawer_id: Option<String> = row.get(7).ctx("reading triples")?;
        out.push(Triple {
            workspace_id: workspace.clone(),
            subject: row.get(1).ctx("reading triples")?,
            predicate: row.get(2).ctx("reading triples")?,
            object: row.get(3).ctx("reading triples")?,
            valid_from: parse_opt_ts(row.get(4).ctx("reading triples")?, &what)?,
            valid_to: parse_opt_ts(row.get(5).ctx("reading triples")?, &what)?,
            confidence: confidence(row.get(6).ctx("reading triples")?, &what)?,
            source_drawer_id: source_drawer_id
                .map(|id| DrawerId::parse(&id))
                .transpose()
                .map_err(|e| StoreError::invalid(format!("{what}: {e}")))?,
            source: row.get(8).ctx("reading triples")?,
            created_at: parse_ts(&row.get::<_, String>(9).ctx("reading triples")?, &what)?,
            id,
        });
    }
    Ok(out)
}

pub(crate) fn sessions(conn: &Connection, workspace: &WorkspaceId) -> StoreResult<Vec<Session>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, agent, user_id, context, status, outcome_score, session_count, started_at, ended_at \
             FROM sessions WHERE workspace_id = ?1 ORDER BY id",
        )
        .ctx("reading sessions")?;
    let mut rows = stmt.query(params![workspace.as_str()]).ctx("reading sessions")?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx("reading sessions")? {
        let id: String = row.get(0).ctx("reading sessions")?;
        let what = format!("session {id}");
        let status: String = row.get(4).ctx("reading sessions")?;
        out.push(Session {
            workspace_id: workspace.clone(),
            agent: row.get(1).ctx("reading sessions")?,
            user_id: row.get(2).ctx("reading sessions")?,
            context: json_object(&row.get::<_, String>(3).ctx("reading sessions")?, &what)?,
            status: status.parse().map_err(|e| StoreError::invalid(format!("{what}: {e}")))?,
            outcome_score: row.get(5).ctx("reading sessions")?,
            session_count: u32::try_from(row.get::<_, i64>(6).ctx("reading sessions")?).unwrap_or(0),
            started_at: parse_ts(&row.get::<_, String>(7).ctx("reading sessions")?, &what)?,
            ended_at: parse_opt_ts(row.get(8).ctx("reading sessions")?, &what)?,
            id,
        });
    }
    Ok(out)
}

pub(crate) fn episodic_summaries(conn: &Connection, workspace: &WorkspaceId) -> StoreResult<Vec<EpisodicSummary>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, session_id, source_id, agent, user_id, summary, l0_abstract, key_topics, created_at, \
             expires_at, promoted_at FROM episodic_summaries WHERE workspace_id = ?1 ORDER BY id",
        )
        .ctx("reading episodic summaries")?;
    let mut rows = stmt.query(params![workspace.as_str()]).ctx("reading episodic summaries")?;
    let mut out = Vec::new();
    let c = "reading episodic summaries";
    while let Some(row) = rows.next().ctx(c)? {
        let id: String = row.get(0).ctx(c)?;
        let what = format!("episodic summary {id}");
        out.push(EpisodicSummary {
            workspace_id: workspace.clone(),
            session_id: row.get(1).ctx(c)?,
            source_id: row.get(2).ctx(c)?,
            agent: row.get(3).ctx(c)?,
            user_id: row.get(4).ctx(c)?,
            summary: row.get(5).ctx(c)?,
            l0_abstract: row.get(6).ctx(c)?,
            key_topics: json_strings(&row.get::<_, String>(7).ctx(c)?, &what)?,
            created_at: parse_ts(&row.get::<_, String>(8).ctx(c)?, &what)?,
            expires_at: parse_opt_ts(row.get(9).ctx(c)?, &what)?,
            promoted_at: parse_opt_ts(row.get(10).ctx(c)?, &what)?,
            id,
        });
    }
    Ok(out)
}

pub(crate) fn tunnels(conn: &Connection, workspace: &WorkspaceId) -> StoreResult<Vec<Tunnel>> {
    let c = "reading tunnels";
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, wing_a, room_a, wing_b, room_b, label, created_by, created_at \
             FROM tunnels WHERE workspace_id = ?1 ORDER BY id",
        )
        .ctx(c)?;
    let mut rows = stmt.query(params![workspace.as_str()]).ctx(c)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx(c)? {
        let id: String = row.get(0).ctx(c)?;
        let what = format!("tunnel {id}");
        let bad = |e: mempalace_core::ValidationError| StoreError::invalid(format!("{what}: {e}"));
        let place = |wing: String, room: String| -> StoreResult<Place> {
            Ok(Place { wing: Wing::parse(&wing).map_err(bad)?, room: Room::parse(&room).map_err(bad)? })
        };
        out.push(Tunnel {
            workspace_id: workspace.clone(),
            a: place(row.get(1).ctx(c)?, row.get(2).ctx(c)?)?,
            b: place(row.get(3).ctx(c)?, row.get(4).ctx(c)?)?,
            label: row.get(5).ctx(c)?,
            created_by: row.get(6).ctx(c)?,
            created_at: parse_ts(&row.get::<_, String>(7).ctx(c)?, &what)?,
            id,
        });
    }
    Ok(out)
}

pub(crate) fn centroids(conn: &Connection, workspace: &WorkspaceId) -> StoreResult<Vec<Centroid>> {
    let c = "reading centroids";
    let mut stmt = conn
        .prepare_cached(
            "SELECT memory_type, embedding_model, vector, sample_count, computed_at, source_hash \
             FROM centroids WHERE workspace_id = ?1 ORDER BY memory_type",
        )
        .ctx(c)?;
    let mut rows = stmt.query(params![workspace.as_str()]).ctx(c)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().ctx(c)? {
        let memory_type: String = row.get(0).ctx(c)?;
        let what = format!("centroid {memory_type}");
        out.push(Centroid {
            workspace_id: workspace.clone(),
            memory_type: memory_type.parse().map_err(|e| StoreError::invalid(format!("{what}: {e}")))?,
            embedding: Embedding {
                model: row.get(1).ctx(c)?,
                vector: blob_to_vector(&row.get::<_, Vec<u8>>(2).ctx(c)?, &what)?,
            },
            sample_count: u32::try_from(row.get::<_, i64>(3).ctx(c)?).unwrap_or(0),
            computed_at: parse_ts(&row.get::<_, String>(4).ctx(c)?, &what)?,
            source_hash: row.get(5).ctx(c)?,
        });
    }
    Ok(out)
}

fn counted(changed: usize) -> RecordCounts {
    if changed > 0 { RecordCounts { inserted: 1, existing: 0 } } else { RecordCounts { inserted: 0, existing: 1 } }
}

/// Inserts one exported record if its key is absent.
pub(crate) fn import_record(tx: &Transaction<'_>, record: &PalaceRecord) -> StoreResult<RecordCounts> {
    match record {
        PalaceRecord::Drawer(drawer) => Ok(match insert_drawer(tx, drawer)? {
            PutOutcome::Inserted => RecordCounts { inserted: 1, existing: 0 },
            PutOutcome::Existing => RecordCounts { inserted: 0, existing: 1 },
        }),
        PalaceRecord::Identity(record) => {
            ensure_workspace(tx, &record.workspace_id, &record.updated_at)?;
            let changed = tx
                .prepare_cached(
                    "INSERT INTO identities (workspace_id, text, updated_at) VALUES (?1, ?2, ?3) \
                     ON CONFLICT DO NOTHING",
                )
                .and_then(|mut stmt| {
                    stmt.execute(params![
                        record.workspace_id.as_str(),
                        record.identity.as_str(),
                        ts(&record.updated_at)
                    ])
                })
                .ctx("importing an identity")?;
            Ok(counted(changed))
        }
        PalaceRecord::Entity(entity) => Ok(counted(crate::kg::add_entities(tx, std::slice::from_ref(entity))?)),
        PalaceRecord::EntityAlias(record) => {
            ensure_workspace(tx, &record.alias.alias.workspace_id, &record.alias.merged_at)?;
            Ok(counted(usize::from(crate::alias::import_alias(tx, record)?)))
        }
        PalaceRecord::Triple(triple) => {
            ensure_workspace(tx, &triple.workspace_id, &triple.created_at)?;
            let changed = tx
                .prepare_cached(
                    "INSERT INTO triples (workspace_id, id, subject, predicate, object, valid_from, valid_to, \
                     confidence, source_drawer_id, source, created_at) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) ON CONFLICT DO NOTHING",
                )
                .and_then(|mut stmt| {
                    stmt.execute(params![
                        triple.workspace_id.as_str(),
                        triple.id,
                        triple.subject,
                        triple.predicate,
                        triple.object,
                        opt_ts(triple.valid_from.as_ref()),
                        opt_ts(triple.valid_to.as_ref()),
                        triple.confidence.get(),
                        triple.source_drawer_id.as_ref().map(DrawerId::as_str),
                        triple.source,
                        ts(&triple.created_at),
                    ])
                })
                .ctx("importing a triple")?;
            Ok(counted(changed))
        }
        PalaceRecord::Session(session) => Ok(counted(write_session(tx, session, false)?)),
        PalaceRecord::EpisodicSummary(summary) => Ok(counted(write_episodic_summary(tx, summary, false)?)),
        PalaceRecord::Tunnel(tunnel) => {
            ensure_workspace(tx, &tunnel.workspace_id, &tunnel.created_at)?;
            let changed = tx
                .prepare_cached(
                    "INSERT INTO tunnels (workspace_id, id, wing_a, room_a, wing_b, room_b, label, created_by, \
                     created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING",
                )
                .and_then(|mut stmt| {
                    stmt.execute(params![
                        tunnel.workspace_id.as_str(),
                        tunnel.id,
                        tunnel.a.wing.as_str(),
                        tunnel.a.room.as_str(),
                        tunnel.b.wing.as_str(),
                        tunnel.b.room.as_str(),
                        tunnel.label,
                        tunnel.created_by,
                        ts(&tunnel.created_at),
                    ])
                })
                .ctx("importing a tunnel")?;
            Ok(counted(changed))
        }
        PalaceRecord::Centroid(centroid) => Ok(counted(crate::centroid::write_centroid(tx, centroid, false)?)),
        PalaceRecord::Artifact(artifact) => Ok(match crate::coordination::put_artifact(tx, artifact)? {
            PutOutcome::Inserted => RecordCounts { inserted: 1, existing: 0 },
            PutOutcome::Existing => RecordCounts { inserted: 0, existing: 1 },
        }),
        PalaceRecord::Event(event) => Ok(counted(usize::from(crate::coordination::import_event(tx, event)?))),
    }
}

pub(crate) fn embeddings_by_hash(
    conn: &Connection,
    workspace: &WorkspaceId,
    model: &str,
    hashes: &[ContentHash],
) -> StoreResult<HashMap<ContentHash, Vec<f32>>> {
    let mut found = HashMap::with_capacity(hashes.len());
    let c = "looking up cached vectors";
    let mut from_drawers = conn
        .prepare_cached(
            "SELECT embedding FROM drawers WHERE workspace_id = ?1 AND embedding_model = ?2 AND content_hash = ?3 \
             AND embedding IS NOT NULL AND json_extract(context, '$.preceded_by') IS NULL LIMIT 1",
        )
        .ctx(c)?;
    let mut from_cache = conn
        .prepare_cached(
            "SELECT vector FROM embedding_cache WHERE workspace_id = ?1 AND model = ?2 AND content_hash = ?3",
        )
        .ctx(c)?;
    for hash in hashes {
        if found.contains_key(hash) {
            continue;
        }
        let key = params![workspace.as_str(), model, hash.as_str()];
        let blob: Option<Vec<u8>> = match from_drawers.query_row(key, |row| row.get(0)).optional().ctx(c)? {
            Some(blob) => Some(blob),
            None => from_cache.query_row(key, |row| row.get(0)).optional().ctx(c)?,
        };
        if let Some(blob) = blob {
            found.insert(hash.clone(), blob_to_vector(&blob, "cached vector")?);
        }
    }
    Ok(found)
}

pub(crate) fn drawers_missing_embedding(
    conn: &Connection,
    workspace: &WorkspaceId,
    model: &str,
    limit: usize,
) -> StoreResult<Vec<(DrawerId, mempalace_core::Content)>> {
    let c = "finding drawers without vectors";
    let mut stmt = conn
        .prepare_cached(
            "SELECT id, content FROM drawers WHERE workspace_id = ?1 \
             AND (embedding_model IS NULL OR embedding_model <> ?2 OR embedding IS NULL) ORDER BY id LIMIT ?3",
        )
        .ctx(c)?;
    let rows: Vec<(String, String)> = stmt
        .query_map(params![workspace.as_str(), model, i64::try_from(limit).unwrap_or(i64::MAX)], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
        .and_then(Iterator::collect)
        .ctx(c)?;
    rows.into_iter()
        .map(|(id, content)| {
            let bad = |e: mempalace_core::ValidationError| StoreError::invalid(format!("drawer {id}: {e}"));
            Ok((DrawerId::parse(&id).map_err(bad)?, mempalace_core::Content::parse(content).map_err(bad)?))
        })
        .collect()
}

pub(crate) fn embedding_models(conn: &Connection, workspace: &WorkspaceId) -> StoreResult<Vec<(Option<String>, u64)>> {
    let c = "counting vectors per model";
    let mut stmt = conn
        .prepare_cached(
            "SELECT CASE WHEN embedding IS NULL THEN NULL ELSE embedding_model END AS model, count(*) \
             FROM drawers WHERE workspace_id = ?1 GROUP BY model ORDER BY model",
        )
        .ctx(c)?;
    let rows: Vec<(Option<String>, i64)> = stmt
        .query_map(params![workspace.as_str()], |row| Ok((row.get(0)?, row.get(1)?)))
        .and_then(Iterator::collect)
        .ctx(c)?;
    Ok(rows.into_iter().map(|(model, count)| (model, u64::try_from(count).unwrap_or(0))).collect())
}

pub(crate) fn set_embeddings(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    vectors: &[(DrawerId, Embedding)],
) -> StoreResult<usize> {
    let mut updated = 0;
    for (id, embedding) in vectors {
        updated += tx
            .prepare_cached(
                "UPDATE drawers SET embedding_model = ?3, embedding = ?4 WHERE workspace_id = ?1 AND id = ?2",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    workspace.as_str(),
                    id.as_str(),
                    embedding.model,
                    vector_to_blob(&embedding.vector)
                ])
            })
            .ctx("storing a vector")?;
    }
    Ok(updated)
}

pub(crate) fn cache_embeddings(
    tx: &Transaction<'_>,
    workspace: &WorkspaceId,
    model: &str,
    vectors: &[(ContentHash, Vec<f32>)],
    at: &Timestamp,
) -> StoreResult<()> {
    for (hash, vector) in vectors {
        tx.prepare_cached(
            "INSERT INTO embedding_cache (workspace_id, model, content_hash, vector, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO UPDATE SET vector = excluded.vector, created_at = excluded.created_at",
        )
        .and_then(|mut stmt| stmt.execute(params![workspace.as_str(), model, hash.as_str(), vector_to_blob(vector), ts(at)]))
        .ctx("caching a vector")?;
    }
    Ok(())
}

/// Inserts an episodic summary; an existing one with the same id is left
/// alone (import) or replaced, every field (`replace`). Returns the rows
/// written.
pub(crate) fn write_episodic_summary(
    tx: &Transaction<'_>,
    summary: &mempalace_core::session::EpisodicSummary,
    replace: bool,
) -> StoreResult<usize> {
    ensure_workspace(tx, &summary.workspace_id, &summary.created_at)?;
    let conflict = if replace {
        "ON CONFLICT (workspace_id, id) DO UPDATE SET session_id = excluded.session_id, \
         source_id = excluded.source_id, agent = excluded.agent, user_id = excluded.user_id, \
         summary = excluded.summary, l0_abstract = excluded.l0_abstract, key_topics = excluded.key_topics, \
         created_at = excluded.created_at, expires_at = excluded.expires_at, promoted_at = excluded.promoted_at"
    } else {
        "ON CONFLICT DO NOTHING"
    };
    tx.prepare_cached(&format!(
        "INSERT INTO episodic_summaries (workspace_id, id, session_id, source_id, agent, user_id, summary, \
         l0_abstract, key_topics, created_at, expires_at, promoted_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) {conflict}"
    ))
    .and_then(|mut stmt| {
        stmt.execute(params![
            summary.workspace_id.as_str(),
            summary.id,
            summary.session_id,
            summary.source_id,
            summary.agent,
            summary.user_id,
            summary.summary,
            summary.l0_abstract,
            to_json_text(&summary.key_topics),
            ts(&summary.created_at),
            opt_ts(summary.expires_at.as_ref()),
            opt_ts(summary.promoted_at.as_ref()),
        ])
    })
    .ctx("writing an episodic summary")
}
