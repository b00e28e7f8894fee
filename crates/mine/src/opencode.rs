//! opencode's SQLite database (`~/.local/share/opencode/opencode.db`,
//! opencode ≥ 1.2): tables `session`, `message`, `part`, JSON in `data`.
//!
//! The one reader here that opens a file itself: the database, read-only,
//! in one read transaction (a consistent snapshot while opencode writes;
//! it keeps the database in WAL mode), waiting for its locks up to
//! [`BUSY_TIMEOUT`].
//! Columns are selected by name and missing ones tolerated (newer and
//! forked schemas add some). Sub-agent sessions (with a `parent_id`) are
//! left out. User text: `text` parts that are neither `synthetic` nor
//! `ignored`; assistant text: `text` parts; `tool` parts summarised on one
//! line with their output trimmed; reasoning, step markers, files,
//! snapshots and patches dropped.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

use crate::clean::{human_text, tool_call, tool_result};
use crate::{Conversation, Message, Role};

/// Which sessions to read.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    /// Sessions with fewer messages are skipped.
    pub min_messages: usize,
    /// Only sessions updated at or after this time (ms since the epoch).
    pub since_ms: Option<i64>,
    /// Only this session.
    pub session: Option<String>,
}

/// What was read.
#[derive(Debug, Default)]
pub struct Read {
    /// Conversations, one per session.
    pub conversations: Vec<Conversation>,
    /// Sessions left out (sub-agents, too short, filtered).
    pub skipped_sessions: usize,
}

/// id, parent, title, directory, created, updated.
type SessionRow = (String, Option<String>, Option<String>, Option<String>, Option<i64>, Option<i64>);

/// How long a read waits for opencode's writer (a WAL checkpoint, a
/// recovery after a crash) before giving up.
pub const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Opens the database read-only, waiting up to [`BUSY_TIMEOUT`] for a lock
/// opencode holds. opencode keeps it in WAL mode, so reads go on while it
/// writes; a database on a read-only medium (no `-shm` can be made) is
/// opened as immutable.
fn open(path: &Path) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags)
        .or_else(|_| Connection::open_with_flags(format!("file:{}?immutable=1", path.display()), flags))?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    Ok(conn)
}

fn columns(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    conn.prepare(&format!("PRAGMA table_info({table})"))?.query_map([], |r| r.get(1))?.collect()
}

fn ms_to_text(ms: Option<i64>) -> Option<String> {
    let ms = ms?;
    mempalace_core::time::timestamp_from_unix(ms as f64 / 1000.0).map(|t| mempalace_core::time::format_timestamp(&t))
}

/// Reads the sessions of an opencode database.
pub fn read_db(path: &Path, selection: &Selection) -> Result<Read, String> {
    let conn = open(path).map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    // One read transaction: sessions, messages and parts from one snapshot,
    // however much opencode commits meanwhile.
    conn.execute_batch("BEGIN").map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let session_columns = columns(&conn, "session").map_err(|e| e.to_string())?;
    if session_columns.is_empty() {
        return Err(format!("{} has no `session` table; is it opencode's database (opencode ≥ 1.2)?", path.display()));
    }
    let column =
        |name: &str| if session_columns.iter().any(|c| c == name) { name.to_string() } else { "NULL".to_string() };
    let sql = format!(
        "SELECT id, {}, {}, {}, {}, {} FROM session ORDER BY {}",
        column("parent_id"),
        column("title"),
        column("directory"),
        column("time_created"),
        column("time_updated"),
        if session_columns.iter().any(|c| c == "time_created") { "time_created, id" } else { "id" }
    );
    let mut statement = conn.prepare(&sql).map_err(|e| e.to_string())?;
    let sessions: Vec<SessionRow> = statement
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
        .and_then(Iterator::collect)
        .map_err(|e| e.to_string())?;
    let mut read = Read::default();
    for (id, parent, title, directory, created, updated) in sessions {
        let filtered_out = parent.is_some()
            || selection.session.as_ref().is_some_and(|s| *s != id)
            || selection.since_ms.is_some_and(|since| updated.or(created).unwrap_or(0) < since);
        if filtered_out {
            read.skipped_sessions += 1;
            continue;
        }
        let conversation = session(&conn, &id, title, directory, created).map_err(|e| e.to_string())?;
        if conversation.messages.len() < selection.min_messages.max(1) {
            read.skipped_sessions += 1;
            continue;
        }
        read.conversations.push(conversation);
    }
    Ok(read)
}

fn session(
    conn: &Connection,
    id: &str,
    title: Option<String>,
    directory: Option<String>,
    created: Option<i64>,
) -> rusqlite::Result<Conversation> {
    let mut parts: HashMap<String, Vec<Value>> = HashMap::new();
    let mut statement =
        conn.prepare("SELECT message_id, data FROM part WHERE session_id = ?1 ORDER BY message_id, id")?;
    let rows = statement.query_map([id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
    for row in rows {
        let (message, data) = row?;
        if let Ok(value) = serde_json::from_str::<Value>(&data) {
            parts.entry(message).or_default().push(value);
        }
    }
    let mut conversation = Conversation {
        session_id: id.to_string(),
        title: title.filter(|t| !t.starts_with("New session")),
        cwd: directory,
        started_at: ms_to_text(created),
        messages: Vec::new(),
    };
    let mut statement =
        conn.prepare("SELECT id, time_created, data FROM message WHERE session_id = ?1 ORDER BY time_created, id")?;
    let rows = statement
        .query_map([id], |r| Ok((r.get::<_, String>(0)?, r.get::<_, Option<i64>>(1)?, r.get::<_, String>(2)?)))?;
    for row in rows {
        let (message_id, time, data) = row?;
        let info: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
        let role = match info["role"].as_str() {
            Some("user") => Role::User,
            Some("assistant") => Role::Assistant,
            _ => continue,
        };
        let mut texts = Vec::new();
        for part in parts.get(&message_id).into_iter().flatten() {
            match part["type"].as_str() {
                Some("text") if part["synthetic"] != true && part["ignored"] != true => {
                    texts.extend(part["text"].as_str().map(str::to_string));
                }
                Some("tool") if role == Role::Assistant => {
                    let state = &part["state"];
                    texts.push(tool_call(part["tool"].as_str().unwrap_or("tool"), &state["input"]));
                    let output = if state["output"].is_null() { &state["error"] } else { &state["output"] };
                    texts.extend(tool_result(output));
                }
                _ => {}
            }
        }
        let joined = texts.join("\n");
        let text = if role == Role::User { human_text(&joined) } else { joined.trim().to_string() };
        if text.is_empty() {
            continue;
        }
        conversation.messages.push(Message {
            role,
            text,
            timestamp: ms_to_text(time),
            id: message_id,
            speaker: None,
            line: 0,
        });
    }
    if conversation.title.is_none() {
        conversation.title = crate::first_prompt(&conversation);
    }
    Ok(conversation)
}
