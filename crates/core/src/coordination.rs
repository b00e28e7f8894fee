//! Agent coordination: the rules of events and artifacts (MemPalace 3.11's
//! logstream, RFC 003).
//!
//! Agents that share a palace delegate work, wait for replies and hand
//! each other exact patches through two record kinds: an [`Event`] (an
//! immutable, routed message — `task.request`, `patch.ready`, `event.ack`)
//! and an [`Artifact`] (verbatim text an event can reference). This module
//! holds their values and every validation rule, written so that a caller
//! who breaks one gets the Python MemPalace's message word for word
//! ([`CoordinationError`]): agent instructions and scripts written against
//! MemPalace keep matching. Rules are checked in MemPalace's order, so the
//! first problem reported is the same one.
//!
//! Pure, like the rest of core: ids are built from a time and random bits
//! the caller passes in, and the wait's backoff schedule takes its jitter as
//! an argument. Storage (the order `seq`), the clock, the poll loop and the
//! result JSON belong to the store, the engine and the surfaces.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::id::WorkspaceId;
use crate::time::Timestamp;

/// Longest routing field (stream, room, agent, ids), in characters.
pub const MAX_ROUTING_CHARS: usize = 256;
/// Largest event body, in bytes of UTF-8 (RFC 003's suggested default).
pub const MAX_BODY_BYTES: usize = 256 * 1024;
/// Largest artifact content, in bytes of UTF-8.
pub const MAX_CONTENT_BYTES: usize = 4 * 1024 * 1024;
/// Largest metadata object, in bytes of its JSON text as MemPalace encodes
/// it (sorted keys, `", "` and `": "` separators, UTF-8 unescaped).
pub const MAX_METADATA_BYTES: usize = 64 * 1024;
/// Events a listing returns when the caller does not say.
pub const DEFAULT_LIST_LIMIT: usize = 50;
/// Most events one listing returns; larger limits are clamped to it.
pub const MAX_LIST_LIMIT: usize = 500;
/// How long a wait lasts when the caller does not say.
pub const DEFAULT_WAIT: Duration = Duration::from_millis(60_000);
/// Longest wait; longer timeouts are clamped to it.
pub const MAX_WAIT: Duration = Duration::from_millis(300_000);
/// Characters of a body a preview keeps.
pub const PREVIEW_BODY_CHARS: usize = 200;

/// The type of an acknowledgement event.
pub const ACK_TYPE: &str = "event.ack";
/// The type of the event announcing a patch.
pub const PATCH_READY_TYPE: &str = "patch.ready";
/// The type of a task request.
pub const TASK_REQUEST_TYPE: &str = "task.request";
/// The room patches go to unless the caller names another.
pub const PATCH_ROOM: &str = "patches";
/// The room task requests go to.
pub const TASK_ROOM: &str = "delegation";

/// A coordination call broke a rule. The messages are MemPalace's, word for
/// word (values quoted the way Python's `repr` quotes them), because agents
/// and scripts written for MemPalace read them.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CoordinationError {
    /// A required routing field (or the event type) is empty or blank, or an
    /// optional one is blank.
    #[error("{field} must be a non-empty string")]
    Empty {
        /// The parameter.
        field: &'static str,
    },
    /// A routing field is longer than [`MAX_ROUTING_CHARS`].
    #[error("{field} exceeds maximum length of 256 characters")]
    TooLong {
        /// The parameter.
        field: &'static str,
    },
    /// A routing field holds a control character.
    #[error("{field} contains control characters")]
    ControlCharacters {
        /// The parameter.
        field: &'static str,
    },
    /// An event type outside `^[a-z0-9][a-z0-9_.-]{0,63}$`.
    #[error("type={0} is not a valid event type (lowercase letters, digits, '.', '_', '-'; max 64 chars)")]
    BadType(
        /// The value, quoted.
        String,
    ),
    /// A status outside the vocabulary.
    #[error("status={0} is not one of: applied, blocked, claimed, failed, open, ready, superseded")]
    BadStatus(
        /// The value, quoted.
        String,
    ),
    /// A body or content holds a NUL character.
    #[error("{field} contains null bytes")]
    NullBytes {
        /// The parameter.
        field: &'static str,
    },
    /// A body or content is over its size limit.
    #[error("{field} is {size} bytes; maximum is {max} bytes")]
    TooLarge {
        /// The parameter.
        field: &'static str,
        /// Its size in bytes of UTF-8.
        size: usize,
        /// The limit.
        max: usize,
    },
    /// Metadata that is not a JSON object.
    #[error("metadata must be an object")]
    MetadataNotObject,
    /// Metadata over [`MAX_METADATA_BYTES`].
    #[error("metadata exceeds maximum size of 65536 bytes")]
    MetadataTooLarge,
    /// `artifact_ids` that is not a list of non-empty strings.
    #[error("artifact_ids must be a list of artifact id strings")]
    ArtifactIdsMalformed,
    /// An event references an artifact the workspace does not hold.
    #[error("artifact_ids references unknown artifact {0}")]
    UnknownArtifact(
        /// The id, quoted.
        String,
    ),
    /// An artifact kind outside the vocabulary.
    #[error("kind={0} is not one of: file, json, log, note, patch")]
    BadKind(
        /// The value, quoted.
        String,
    ),
    /// Empty artifact content.
    #[error("content must be a non-empty string")]
    EmptyContent,
    /// A task field is blank.
    #[error("task {what} must not be empty")]
    TaskFieldEmpty {
        /// The field as MemPalace names it ("project", "requesting agent", …).
        what: &'static str,
    },
    /// A task's base commit that is not a hexadecimal object id.
    #[error("task base commit must be a hexadecimal Git object id (at least 7 characters), not a branch or tag")]
    BadBaseCommit,
    /// A time filter that is neither `YYYY-MM-DD` nor `YYYY-MM-DDTHH:MM:SSZ`.
    #[error(
        "{field}={value} is not a valid ISO-8601 date or UTC datetime (expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ)"
    )]
    BadTime {
        /// The parameter.
        field: &'static str,
        /// The value, quoted.
        value: String,
    },
    /// An order other than asc or desc.
    #[error("order={0} must be 'asc' or 'desc'")]
    BadOrder(
        /// The value, quoted.
        String,
    ),
    /// A limit below 1.
    #[error("limit must be a positive integer")]
    BadLimit,
    /// A negative timeout.
    #[error("timeout_ms must be a non-negative number")]
    BadTimeout,
    /// A cursor (`since_event_id`, `before_event_id`) names no event of the
    /// workspace.
    #[error("{field} {id} not found")]
    AnchorNotFound {
        /// The parameter.
        field: &'static str,
        /// The id, quoted.
        id: String,
    },
    /// The event to acknowledge does not exist.
    #[error("event {0} not found")]
    EventNotFound(
        /// The id, quoted.
        String,
    ),
    /// The artifact asked for does not exist.
    #[error("artifact {0} not found")]
    ArtifactNotFound(
        /// The id, quoted.
        String,
    ),
}

impl CoordinationError {
    /// Whether the error says that something asked for does not exist (as
    /// opposed to a malformed value).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::AnchorNotFound { .. } | Self::EventNotFound(_) | Self::ArtifactNotFound(_))
    }

    /// The event `id` does not exist.
    pub fn event_not_found(id: &str) -> Self {
        Self::EventNotFound(py_repr(id))
    }

    /// The artifact `id` does not exist.
    pub fn artifact_not_found(id: &str) -> Self {
        Self::ArtifactNotFound(py_repr(id))
    }

    /// The event references the unknown artifact `id`.
    pub fn unknown_artifact(id: &str) -> Self {
        Self::UnknownArtifact(py_repr(id))
    }

    /// The cursor `field` names the unknown event `id`.
    pub fn anchor_not_found(field: &'static str, id: &str) -> Self {
        Self::AnchorNotFound { field, id: py_repr(id) }
    }
}

type Checked<T> = std::result::Result<T, CoordinationError>;

/// `text` quoted as Python's `repr` quotes a string, so messages read as
/// MemPalace's do (`type='Task.Request'`).
pub fn py_repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for ch in text.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || (0x7f..0xa0).contains(&(c as u32)) => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// A routing field (stream, room, topic, agent, correlation id, branch,
/// base commit, an id): trimmed, 1–256 characters, no control characters.
/// Streams may contain `/` (`project/mempalace`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Routing(String);

impl Routing {
    /// A required routing field named `field`.
    pub fn parse(field: &'static str, raw: &str) -> Checked<Self> {
        Self::parse_opt(field, Some(raw))?.ok_or(CoordinationError::Empty { field })
    }

    /// An optional routing field: absent or `""` is none, but a blank value
    /// is refused (MemPalace's rule: whitespace is not "absent").
    pub fn parse_opt(field: &'static str, raw: Option<&str>) -> Checked<Option<Self>> {
        let Some(raw) = raw.filter(|raw| !raw.is_empty()) else { return Ok(None) };
        let value = raw.trim();
        if value.is_empty() {
            return Err(CoordinationError::Empty { field });
        }
        if value.chars().count() > MAX_ROUTING_CHARS {
            return Err(CoordinationError::TooLong { field });
        }
        if value.chars().any(|c| (c as u32) < 0x20 || c == '\x7f') {
            return Err(CoordinationError::ControlCharacters { field });
        }
        Ok(Some(Self(value.to_string())))
    }

    /// The value.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Routing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// An event type: a dotted lowercase identifier such as `task.request`
/// (`^[a-z0-9][a-z0-9_.-]{0,63}$` after trimming).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EventType(String);

impl EventType {
    /// Checks and wraps a type.
    pub fn parse(raw: &str) -> Checked<Self> {
        let value = raw.trim();
        if value.is_empty() {
            return Err(CoordinationError::Empty { field: "type" });
        }
        let mut chars = value.chars();
        let first_ok = chars.next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        let rest_ok = chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '.' | '-'));
        if !first_ok || !rest_ok || value.len() > 64 {
            return Err(CoordinationError::BadType(py_repr(value)));
        }
        Ok(Self(value.to_string()))
    }

    /// A type filter: absent or `""` is none.
    pub fn parse_filter(raw: Option<&str>) -> Checked<Option<Self>> {
        raw.filter(|raw| !raw.is_empty()).map(Self::parse).transpose()
    }

    /// The type.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

vocabulary! {
    /// Where the work an event is about stands.
    EventStatus, "event status" {
        /// Requested, nobody has taken it.
        Open => "open",
        /// An agent took it.
        Claimed => "claimed",
        /// Done and waiting to be applied (a patch).
        Ready => "ready",
        /// Applied by the requester.
        Applied => "applied",
        /// Cannot go on without help.
        Blocked => "blocked",
        /// Given up, with evidence.
        Failed => "failed",
        /// Replaced by a later event.
        Superseded => "superseded",
    }
}

impl EventStatus {
    /// A status as given (exact spelling; absent or `""` is none).
    pub fn parse_opt(raw: Option<&str>) -> Checked<Option<Self>> {
        let Some(raw) = raw.filter(|raw| !raw.is_empty()) else { return Ok(None) };
        Self::ALL
            .iter()
            .copied()
            .find(|status| status.as_str() == raw)
            .map(Some)
            .ok_or_else(|| CoordinationError::BadStatus(py_repr(raw)))
    }
}

vocabulary! {
    /// What an artifact holds.
    ArtifactKind, "artifact kind" {
        /// A unified diff for `git apply`.
        Patch => "patch",
        /// A whole file.
        File => "file",
        /// Log output.
        Log => "log",
        /// A JSON document.
        Json => "json",
        /// Free text.
        Note => "note",
    }
}

impl ArtifactKind {
    /// A kind as given (exact spelling).
    pub fn parse_exact(raw: &str) -> Checked<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|kind| kind.as_str() == raw)
            .ok_or_else(|| CoordinationError::BadKind(py_repr(raw)))
    }
}

/// Verbatim event text: at most [`MAX_BODY_BYTES`], no NUL, never trimmed
/// or truncated.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Body(String);

impl Body {
    /// Checks a body; absent is the empty body.
    pub fn parse(raw: Option<String>) -> Checked<Self> {
        let text = raw.unwrap_or_default();
        if text.contains('\0') {
            return Err(CoordinationError::NullBytes { field: "body" });
        }
        if text.len() > MAX_BODY_BYTES {
            return Err(CoordinationError::TooLarge { field: "body", size: text.len(), max: MAX_BODY_BYTES });
        }
        Ok(Self(text))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first [`PREVIEW_BODY_CHARS`] characters and the length in
    /// characters, when the body is longer than that; `None` when it is
    /// short enough to show whole.
    pub fn preview(&self) -> Option<(&str, usize)> {
        let (cut, _) = self.0.char_indices().nth(PREVIEW_BODY_CHARS)?;
        Some((&self.0[..cut], self.0.chars().count()))
    }
}

/// Extra structured fields of an event or artifact: a JSON object whose
/// encoding is at most [`MAX_METADATA_BYTES`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Metadata(Map<String, Value>);

impl Metadata {
    /// Checks metadata; absent (or JSON null) is the empty object.
    pub fn parse(raw: Option<Value>) -> Checked<Self> {
        let map = match raw {
            None | Some(Value::Null) => return Ok(Self::default()),
            Some(Value::Object(map)) => map,
            Some(_) => return Err(CoordinationError::MetadataNotObject),
        };
        if python_json_len(&map) > MAX_METADATA_BYTES {
            return Err(CoordinationError::MetadataTooLarge);
        }
        Ok(Self(map))
    }

    /// The object.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }

    /// One field.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }
}

/// Bytes of `json.dumps(map, ensure_ascii=False, sort_keys=True)`: what
/// MemPalace measures against the metadata limit, so an object it accepts
/// is accepted here. (serde_json's map is ordered by key, as `sort_keys`.)
fn python_json_len(map: &Map<String, Value>) -> usize {
    struct PythonSeparators;
    impl serde_json::ser::Formatter for PythonSeparators {
        fn begin_array_value<W: ?Sized + std::io::Write>(
            &mut self,
            writer: &mut W,
            first: bool,
        ) -> std::io::Result<()> {
            if first { Ok(()) } else { writer.write_all(b", ") }
        }
        fn begin_object_key<W: ?Sized + std::io::Write>(&mut self, writer: &mut W, first: bool) -> std::io::Result<()> {
            if first { Ok(()) } else { writer.write_all(b", ") }
        }
        fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, writer: &mut W) -> std::io::Result<()> {
            writer.write_all(b": ")
        }
    }
    let mut bytes = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut bytes, PythonSeparators);
    match serde::Serialize::serialize(map, &mut serializer) {
        Ok(()) => bytes.len(),
        // A map of JSON values always serialises; count a failure as too large.
        Err(_) => usize::MAX,
    }
}

/// The artifacts an event references: non-empty strings, duplicates
/// dropped (first occurrence kept). Absent or JSON null is none.
pub fn parse_artifact_ids(raw: Option<&Value>) -> Checked<Vec<String>> {
    let items = match raw {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(CoordinationError::ArtifactIdsMalformed),
    };
    let mut ids: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::String(id) if !id.is_empty() => {
                if !ids.contains(id) {
                    ids.push(id.clone());
                }
            }
            _ => return Err(CoordinationError::ArtifactIdsMalformed),
        }
    }
    Ok(ids)
}

/// Verbatim artifact text: non-empty, no NUL, at most [`MAX_CONTENT_BYTES`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArtifactContent(String);

impl ArtifactContent {
    /// Checks content.
    pub fn parse(raw: String) -> Checked<Self> {
        if raw.is_empty() {
            return Err(CoordinationError::EmptyContent);
        }
        if raw.contains('\0') {
            return Err(CoordinationError::NullBytes { field: "content" });
        }
        if raw.len() > MAX_CONTENT_BYTES {
            return Err(CoordinationError::TooLarge { field: "content", size: raw.len(), max: MAX_CONTENT_BYTES });
        }
        Ok(Self(raw))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The server-made id of a new event or artifact: `prefix_` + the UTC
/// second it was made (`YYYYmmddTHHMMSS`) + `_` + 12 hex digits of
/// `random`. Uniqueness comes from the random part; order comes from the
/// store's `seq`, never from the id.
pub fn new_id(prefix: &str, at: &Timestamp, random: u64) -> String {
    format!("{prefix}_{}_{:012x}", at.format("%Y%m%dT%H%M%S"), random & 0xffff_ffff_ffff)
}

/// `at` as coordination records show it: UTC, whole seconds,
/// `YYYY-MM-DDTHH:MM:SSZ`.
pub fn format_second(at: &Timestamp) -> String {
    at.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `at` cut to the whole second (records keep second precision, as
/// MemPalace's do, so a `since_created_at` bound compares like with like).
pub fn whole_second(at: Timestamp) -> Timestamp {
    use chrono::SubsecRound;
    at.trunc_subsecs(0)
}

/// One coordination event: an immutable, routed message. Corrections are
/// new events that refer to older ones; nothing here is ever updated.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Tenant.
    pub workspace_id: WorkspaceId,
    /// `evt_…` (see [`new_id`]).
    pub id: String,
    /// What kind of message, e.g. `task.request`.
    pub event_type: EventType,
    /// Logical stream, e.g. `project/mempalace`.
    pub stream: Routing,
    /// Sub-channel, e.g. `delegation`, `patches`.
    pub room: Routing,
    /// Topic grouping related work.
    pub topic: Option<Routing>,
    /// Who wrote it.
    pub from_agent: Routing,
    /// Who it is for; `*` for everyone.
    pub to_agent: Option<Routing>,
    /// The task or conversation it belongs to.
    pub correlation_id: Option<Routing>,
    /// Git branch.
    pub branch: Option<Routing>,
    /// Git commit the work started from.
    pub base_commit: Option<Routing>,
    /// Where the work stands.
    pub status: Option<EventStatus>,
    /// Verbatim text.
    pub body: Body,
    /// Extra fields.
    pub metadata: Metadata,
    /// Artifacts it references, in the order given (the store keeps them;
    /// listings return them sorted).
    pub artifact_ids: Vec<String>,
    /// When it was appended (whole seconds).
    pub created_at: Timestamp,
}

/// An event as a caller describes it, before any check: raw values, the
/// way they come from a tool call or a command line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventDraft {
    /// Event type (required).
    pub event_type: String,
    /// Stream (required).
    pub stream: String,
    /// Room (required).
    pub room: String,
    /// Topic.
    pub topic: Option<String>,
    /// Writer (required).
    pub from_agent: String,
    /// Recipient or `*`.
    pub to_agent: Option<String>,
    /// Correlation id.
    pub correlation_id: Option<String>,
    /// Git branch.
    pub branch: Option<String>,
    /// Git commit.
    pub base_commit: Option<String>,
    /// Status.
    pub status: Option<String>,
    /// Body (absent is empty).
    pub body: Option<String>,
    /// Metadata (must be an object).
    pub metadata: Option<Value>,
    /// Referenced artifact ids (must be a list of strings).
    pub artifact_ids: Option<Value>,
}

impl Event {
    /// Checks `draft` in MemPalace's order (type, stream, room, topic,
    /// from_agent, to_agent, correlation_id, branch, base_commit, status,
    /// body, metadata, artifact_ids) and makes the event `id`, appended at
    /// `created_at`. Whether the referenced artifacts exist is the store's
    /// to check, in the appending transaction.
    pub fn parse(workspace_id: WorkspaceId, id: String, created_at: Timestamp, draft: EventDraft) -> Checked<Self> {
        Ok(Self {
            workspace_id,
            id,
            event_type: EventType::parse(&draft.event_type)?,
            stream: Routing::parse("stream", &draft.stream)?,
            room: Routing::parse("room", &draft.room)?,
            topic: Routing::parse_opt("topic", draft.topic.as_deref())?,
            from_agent: Routing::parse("from_agent", &draft.from_agent)?,
            to_agent: Routing::parse_opt("to_agent", draft.to_agent.as_deref())?,
            correlation_id: Routing::parse_opt("correlation_id", draft.correlation_id.as_deref())?,
            branch: Routing::parse_opt("branch", draft.branch.as_deref())?,
            base_commit: Routing::parse_opt("base_commit", draft.base_commit.as_deref())?,
            status: EventStatus::parse_opt(draft.status.as_deref())?,
            body: Body::parse(draft.body)?,
            metadata: Metadata::parse(draft.metadata)?,
            artifact_ids: parse_artifact_ids(draft.artifact_ids.as_ref())?,
            created_at: whole_second(created_at),
        })
    }

    /// The acknowledgement of this event by `from_agent`: an `event.ack` in
    /// the same stream and room, routed back to this event's writer, in its
    /// conversation (its correlation id, else its id), on `topic` when
    /// given, else on this event's topic. `metadata` records what it
    /// acknowledges. The event itself is never changed.
    pub fn ack_draft(
        &self,
        from_agent: String,
        status: Option<String>,
        body: Option<String>,
        topic: Option<String>,
    ) -> EventDraft {
        let mut metadata = Map::new();
        metadata.insert("ack_of".into(), Value::String(self.id.clone()));
        EventDraft {
            event_type: ACK_TYPE.to_string(),
            stream: self.stream.as_str().to_string(),
            room: self.room.as_str().to_string(),
            topic: topic.or_else(|| self.topic.as_ref().map(|t| t.as_str().to_string())),
            from_agent,
            to_agent: Some(self.from_agent.as_str().to_string()),
            correlation_id: Some(self.correlation_id.as_ref().map_or(self.id.as_str(), Routing::as_str).to_string()),
            status,
            body,
            metadata: Some(Value::Object(metadata)),
            ..EventDraft::default()
        }
    }
}

/// An event with its place in the palace's order.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    /// The palace's append order: increasing, usable as a cursor; assigned
    /// by the store and renumbered by an import (ids are kept).
    pub seq: i64,
    /// The event.
    pub event: Event,
}

/// Exact text handed from one agent to another (a patch, a file, a log).
#[derive(Debug, Clone, PartialEq)]
pub struct Artifact {
    /// Tenant.
    pub workspace_id: WorkspaceId,
    /// `art_…` (see [`new_id`]).
    pub id: String,
    /// What it holds.
    pub kind: ArtifactKind,
    /// The verbatim text.
    pub content: ArtifactContent,
    /// Who stored it.
    pub created_by: Routing,
    /// When (whole seconds).
    pub created_at: Timestamp,
    /// Extra fields.
    pub metadata: Metadata,
}

impl Artifact {
    /// Checks the raw values in MemPalace's order (kind, created_by,
    /// content, metadata) and makes the artifact `id`, stored at `created_at`.
    pub fn parse(
        workspace_id: WorkspaceId,
        id: String,
        created_at: Timestamp,
        kind: &str,
        content: String,
        created_by: &str,
        metadata: Option<Value>,
    ) -> Checked<Self> {
        Ok(Self {
            workspace_id,
            id,
            kind: ArtifactKind::parse_exact(kind)?,
            created_by: Routing::parse("created_by", created_by)?,
            content: ArtifactContent::parse(content)?,
            metadata: Metadata::parse(metadata)?,
            created_at: whole_second(created_at),
        })
    }

    /// Hex SHA-256 of the content's UTF-8 bytes (what a receiver verifies).
    pub fn sha256(&self) -> String {
        hex::encode(Sha256::digest(self.content.as_str().as_bytes()))
    }

    /// Size of the content in bytes.
    pub fn size_bytes(&self) -> usize {
        self.content.as_str().len()
    }

    /// Advice about a patch `git apply` would reject (MemPalace's wording).
    /// The content is stored verbatim regardless.
    pub fn warnings(&self) -> Vec<&'static str> {
        if self.kind != ArtifactKind::Patch {
            return Vec::new();
        }
        let content = self.content.as_str();
        let mut warnings = Vec::new();
        if !content.ends_with('\n') {
            warnings.push(
                "patch content does not end with a trailing newline; git apply will reject the final hunk as \
                 corrupt — store the diff byte-exactly including its trailing newline",
            );
        }
        if content.contains('\r') {
            warnings.push(
                "patch content contains carriage returns (CRLF line endings); git apply often rejects CRLF diffs \
                 — generate the diff with LF endings",
            );
        }
        warnings
    }
}

/// Which end of the order a listing starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// Oldest first.
    Asc,
    /// Newest first.
    Desc,
}

impl Order {
    /// An order as given (case and surrounding space ignored); absent is
    /// oldest first.
    pub fn parse(raw: Option<&str>) -> Checked<Self> {
        let Some(raw) = raw else { return Ok(Self::Asc) };
        match raw.trim().to_lowercase().as_str() {
            "asc" => Ok(Self::Asc),
            "desc" => Ok(Self::Desc),
            other => Err(CoordinationError::BadOrder(py_repr(other))),
        }
    }

    /// MemPalace's MCP default: oldest first when resuming from a cursor
    /// (events replay forward without a gap), else newest first (an inbox
    /// sweep sees recent events, not ancient ones).
    pub fn default_for_cursor(since_event_id: Option<&str>) -> Self {
        if since_event_id.is_some_and(|since| !since.is_empty()) { Self::Asc } else { Self::Desc }
    }
}

/// A listing of events as a caller describes it, before any check.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventQueryDraft {
    /// Stream.
    pub stream: Option<String>,
    /// Room.
    pub room: Option<String>,
    /// Topic.
    pub topic: Option<String>,
    /// Event type (`""` is no filter).
    pub event_type: Option<String>,
    /// Recipient; also matches events to `*`.
    pub to_agent: Option<String>,
    /// Writer (MemPalace calls this filter `from_agent` inside its log).
    pub writer: Option<String>,
    /// Correlation id.
    pub correlation_id: Option<String>,
    /// Status.
    pub status: Option<String>,
    /// Only events after this one in append order.
    pub since_event_id: Option<String>,
    /// Only events before this one in append order.
    pub before_event_id: Option<String>,
    /// Only events created at or after this time.
    pub since_created_at: Option<String>,
    /// `asc` or `desc`; absent is `asc`.
    pub order: Option<String>,
    /// Most events; absent is [`DEFAULT_LIST_LIMIT`].
    pub limit: Option<i64>,
}

/// A checked listing of events: every filter is an equality, all must hold.
#[derive(Debug, Clone, PartialEq)]
pub struct EventQuery {
    /// Stream.
    pub stream: Option<Routing>,
    /// Room.
    pub room: Option<Routing>,
    /// Topic.
    pub topic: Option<Routing>,
    /// Event type.
    pub event_type: Option<EventType>,
    /// Recipient (events to `*` match too).
    pub to_agent: Option<Routing>,
    /// Writer.
    pub writer: Option<Routing>,
    /// Correlation id.
    pub correlation_id: Option<Routing>,
    /// Status.
    pub status: Option<EventStatus>,
    /// Cursor: strictly after this event.
    pub since_event_id: Option<Routing>,
    /// Strictly before this event.
    pub before_event_id: Option<Routing>,
    /// Created at or after.
    pub since_created_at: Option<Timestamp>,
    /// Direction.
    pub order: Order,
    /// Most events, 1–[`MAX_LIST_LIMIT`].
    pub limit: usize,
}

impl EventQuery {
    /// Checks `draft` in MemPalace's order. The writer filter is reported
    /// as `from_agent`, the name MemPalace's log gives it.
    pub fn parse(draft: EventQueryDraft) -> Checked<Self> {
        Ok(Self {
            stream: Routing::parse_opt("stream", draft.stream.as_deref())?,
            room: Routing::parse_opt("room", draft.room.as_deref())?,
            topic: Routing::parse_opt("topic", draft.topic.as_deref())?,
            event_type: EventType::parse_filter(draft.event_type.as_deref())?,
            to_agent: Routing::parse_opt("to_agent", draft.to_agent.as_deref())?,
            writer: Routing::parse_opt("from_agent", draft.writer.as_deref())?,
            correlation_id: Routing::parse_opt("correlation_id", draft.correlation_id.as_deref())?,
            status: EventStatus::parse_opt(draft.status.as_deref())?,
            since_event_id: Routing::parse_opt("since_event_id", draft.since_event_id.as_deref())?,
            before_event_id: Routing::parse_opt("before_event_id", draft.before_event_id.as_deref())?,
            since_created_at: parse_since("since_created_at", draft.since_created_at.as_deref())?,
            order: Order::parse(draft.order.as_deref())?,
            limit: list_limit(draft.limit)?,
        })
    }
}

/// A listing limit: absent is [`DEFAULT_LIST_LIMIT`]; below 1 is refused;
/// above [`MAX_LIST_LIMIT`] is clamped.
pub fn list_limit(raw: Option<i64>) -> Checked<usize> {
    match raw {
        None => Ok(DEFAULT_LIST_LIMIT),
        Some(limit) if limit < 1 => Err(CoordinationError::BadLimit),
        Some(limit) => Ok(usize::try_from(limit).unwrap_or(usize::MAX).min(MAX_LIST_LIMIT)),
    }
}

/// A wait's timeout in milliseconds: absent is [`DEFAULT_WAIT`]; negative
/// is refused; above [`MAX_WAIT`] is clamped.
pub fn wait_timeout(raw: Option<i64>) -> Checked<Duration> {
    match raw {
        None => Ok(DEFAULT_WAIT),
        Some(ms) if ms < 0 => Err(CoordinationError::BadTimeout),
        Some(ms) => Ok(Duration::from_millis(ms.unsigned_abs()).min(MAX_WAIT)),
    }
}

/// How long a wait sleeps before poll number `attempt + 1`: 250 ms growing
/// ×1.5 per attempt up to 1 s, times a jitter factor in [0.75, 1]
/// (`jitter` in [0, 1] picks it), so waiters that started together spread
/// out. MemPalace's schedule (RFC 003: a poll every 250–1000 ms).
pub fn poll_delay(attempt: u32, jitter: f64) -> Duration {
    let base = (0.25 * 1.5_f64.powi(attempt.min(16) as i32)).min(1.0);
    Duration::from_secs_f64(base * (0.75 + jitter.clamp(0.0, 1.0) * 0.25))
}

/// A `since_created_at` bound: `YYYY-MM-DD` (the start of that day, UTC),
/// `YYYY-MM-DDTHH:MM:SSZ` or `…+00:00`; absent or `""` is none.
pub fn parse_since(field: &'static str, raw: Option<&str>) -> Checked<Option<Timestamp>> {
    use chrono::{NaiveDate, NaiveDateTime, TimeZone, Utc};
    let Some(raw) = raw.filter(|raw| !raw.is_empty()) else { return Ok(None) };
    let value = raw.trim();
    let bad = || CoordinationError::BadTime { field, value: py_repr(value) };
    let digits = |text: &str, positions: &[usize]| positions.iter().all(|&i| text.as_bytes()[i].is_ascii_digit());
    let bytes = value.as_bytes();
    if bytes.len() == 10 && digits(value, &[0, 1, 2, 3, 5, 6, 8, 9]) && bytes[4] == b'-' && bytes[7] == b'-' {
        let date = NaiveDate::parse_from_str(value, "%Y-%m-%d").map_err(|_| bad())?;
        return Ok(Some(Utc.from_utc_datetime(&date.and_time(chrono::NaiveTime::MIN))));
    }
    let naive = value.strip_suffix('Z').or_else(|| value.strip_suffix("+00:00")).ok_or_else(bad)?;
    let shape = naive.len() == 19
        && digits(naive, &[0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18])
        && naive.as_bytes()[4] == b'-'
        && naive.as_bytes()[7] == b'-'
        && naive.as_bytes()[10] == b'T'
        && naive.as_bytes()[13] == b':'
        && naive.as_bytes()[16] == b':';
    if !shape {
        return Err(bad());
    }
    let time = NaiveDateTime::parse_from_str(naive, "%Y-%m-%dT%H:%M:%S").map_err(|_| bad())?;
    Ok(Some(Utc.from_utc_datetime(&time)))
}

/// What a watcher wakes for, as given on a command line: every field may
/// be repeated (any of the values matches); blank values are dropped, so a
/// stray empty flag cannot make a watcher match nothing forever.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WatchDraft {
    /// Streams.
    pub streams: Vec<String>,
    /// Rooms.
    pub rooms: Vec<String>,
    /// Topics.
    pub topics: Vec<String>,
    /// Event types.
    pub types: Vec<String>,
    /// Statuses.
    pub statuses: Vec<String>,
    /// Recipients (events to `*` match any of them).
    pub to_agents: Vec<String>,
    /// Writers.
    pub from_agents: Vec<String>,
    /// Writers whose events never match, whatever else they match.
    pub exclude_from_agents: Vec<String>,
    /// Correlation ids.
    pub correlation_ids: Vec<String>,
}

/// A checked watch filter: each field `None` (any) or a set of values.
/// A listing can only test single values for equality, so a watcher asks
/// the store for what it can ([`WatchFilter::pushdown`]) and tests the rest
/// on each event ([`WatchFilter::matches`]) — MemPalace's split.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WatchFilter {
    streams: Option<Vec<String>>,
    rooms: Option<Vec<String>>,
    topics: Option<Vec<String>>,
    types: Option<Vec<String>>,
    statuses: Option<Vec<String>>,
    to_agents: Option<Vec<String>>,
    from_agents: Option<Vec<String>>,
    exclude_from_agents: Option<Vec<String>>,
    correlation_ids: Option<Vec<String>>,
}

impl WatchFilter {
    /// Checks every value with the rules a listing applies, so one value
    /// and several are refused alike (MemPalace's order: routing fields,
    /// then types, then statuses).
    pub fn parse(draft: WatchDraft) -> Checked<Self> {
        fn set(values: Vec<String>, check: impl Fn(&str) -> Checked<String>) -> Checked<Option<Vec<String>>> {
            let mut out: Vec<String> = Vec::new();
            for value in values.iter().filter(|value| !value.is_empty()) {
                let value = check(value)?;
                if !out.contains(&value) {
                    out.push(value);
                }
            }
            Ok(if out.is_empty() { None } else { Some(out) })
        }
        let routing =
            |field: &'static str| move |value: &str| Routing::parse(field, value).map(|v| v.as_str().to_string());
        let streams = set(draft.streams, routing("stream"))?;
        let rooms = set(draft.rooms, routing("room"))?;
        let topics = set(draft.topics, routing("topic"))?;
        let to_agents = set(draft.to_agents, routing("to_agent"))?;
        let from_agents = set(draft.from_agents, routing("from_agent"))?;
        let exclude_from_agents = set(draft.exclude_from_agents, routing("exclude_from_agent"))?;
        let correlation_ids = set(draft.correlation_ids, routing("correlation_id"))?;
        let types = set(draft.types, |value| EventType::parse(value).map(|t| t.as_str().to_string()))?;
        let statuses = set(draft.statuses, |value| {
            EventStatus::parse_opt(Some(value)).map(|s| s.map_or_else(String::new, |s| s.as_str().to_string()))
        })?;
        Ok(Self {
            streams,
            rooms,
            topics,
            types,
            statuses,
            to_agents,
            from_agents,
            exclude_from_agents,
            correlation_ids,
        })
    }

    /// The part of the filter a listing can evaluate: every field with one
    /// value, as an equality (a narrower query, never a looser result —
    /// [`WatchFilter::matches`] checks each event again).
    pub fn pushdown(&self) -> EventQueryDraft {
        let single = |values: &Option<Vec<String>>| match values.as_deref() {
            Some([one]) => Some(one.clone()),
            _ => None,
        };
        EventQueryDraft {
            stream: single(&self.streams),
            room: single(&self.rooms),
            topic: single(&self.topics),
            event_type: single(&self.types),
            status: single(&self.statuses),
            correlation_id: single(&self.correlation_ids),
            to_agent: single(&self.to_agents),
            writer: single(&self.from_agents),
            ..EventQueryDraft::default()
        }
    }

    /// Whether `event` is one to wake for. An excluded writer never
    /// matches; a recipient filter also matches events to `*`.
    pub fn matches(&self, event: &Event) -> bool {
        let has = |values: &Option<Vec<String>>, actual: Option<&str>| -> bool {
            values.as_ref().is_none_or(|values| actual.is_some_and(|actual| values.iter().any(|v| v == actual)))
        };
        fn text(value: &Option<Routing>) -> Option<&str> {
            value.as_ref().map(Routing::as_str)
        }
        if self
            .exclude_from_agents
            .as_ref()
            .is_some_and(|excluded| excluded.iter().any(|a| a == event.from_agent.as_str()))
        {
            return false;
        }
        let to_agent = text(&event.to_agent);
        has(&self.streams, Some(event.stream.as_str()))
            && has(&self.rooms, Some(event.room.as_str()))
            && has(&self.topics, text(&event.topic))
            && has(&self.types, Some(event.event_type.as_str()))
            && has(&self.statuses, event.status.map(|s| s.as_str()))
            && has(&self.correlation_ids, text(&event.correlation_id))
            && has(&self.from_agents, Some(event.from_agent.as_str()))
            && (has(&self.to_agents, to_agent) || (self.to_agents.is_some() && to_agent == Some("*")))
    }

    /// The recipients watched for, in the order given.
    pub fn to_agents(&self) -> &[String] {
        self.to_agents.as_deref().unwrap_or_default()
    }
}

/// A task's base commit: an abbreviated or full hexadecimal Git object id
/// (7–64 hex digits), lowercased. Branch and tag names are refused: a task
/// must name the exact state the worker starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseCommit(String);

impl BaseCommit {
    /// Checks a base commit.
    pub fn parse(raw: &str) -> Checked<Self> {
        let value = raw.trim();
        if value.is_empty() {
            return Err(CoordinationError::TaskFieldEmpty { what: "base commit" });
        }
        if !(7..=64).contains(&value.len()) || !value.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(CoordinationError::BadBaseCommit);
        }
        Ok(Self(value.to_ascii_lowercase()))
    }

    /// The id, lowercase.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A short routing-safe label for task ids and project streams: lowercase,
/// every run of other characters replaced by `_`, at most 40 characters,
/// `fallback` when nothing is left (MemPalace's `task_slug`).
pub fn slug(value: &str, fallback: &str) -> String {
    let lower = value.to_lowercase();
    let mut slug = String::with_capacity(lower.len());
    let mut in_gap = false;
    for c in lower.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            slug.push(c);
            in_gap = false;
        } else if !in_gap {
            slug.push('_');
            in_gap = true;
        }
    }
    let trimmed: String = slug.trim_matches('_').chars().take(40).collect();
    let trimmed = trimmed.trim_end_matches('_');
    if trimmed.is_empty() { fallback.to_string() } else { trimmed.to_string() }
}

/// A task request as a caller describes it, before any check.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TaskDraft {
    /// Project routing name.
    pub project: String,
    /// The requesting agent.
    pub from_agent: String,
    /// The worker agent.
    pub to_agent: String,
    /// Verbatim goal.
    pub goal: String,
    /// Git branch for the work.
    pub branch: String,
    /// Hexadecimal commit the worker starts from.
    pub base_commit: String,
    /// Verbatim definition of done.
    pub done: String,
}

impl TaskDraft {
    /// Checks the task in MemPalace's order and turns it into the
    /// `task.request` event it appends: stream `project/<slug>`, room
    /// `delegation`, status `open`, correlation id
    /// `task_<slug of the goal>_<8 hex of random>`, and the canonical body.
    /// The event's own rules (lengths, control characters, body size) are
    /// checked when it is parsed.
    pub fn into_event_draft(self, random: u32) -> Checked<EventDraft> {
        let required = |value: &str, what: &'static str| -> Checked<String> {
            let value = value.trim();
            if value.is_empty() { Err(CoordinationError::TaskFieldEmpty { what }) } else { Ok(value.to_string()) }
        };
        let project = required(&self.project, "project")?;
        let from_agent = required(&self.from_agent, "requesting agent")?;
        let to_agent = required(&self.to_agent, "destination agent")?;
        let branch = required(&self.branch, "branch")?;
        let base_commit = BaseCommit::parse(&self.base_commit)?;
        required(&self.goal, "goal")?;
        required(&self.done, "definition of done")?;
        let correlation_id = format!("task_{}_{random:08x}", slug(&self.goal, "work"));
        let body = format!(
            "Goal:\n{}\n\nDefinition of done:\n{}\n\nDelivery:\nClose the loop through MemPalace: claim the request, \
             then submit a patch with mempalace_patch_submit or reply with blocked/failed evidence.",
            self.goal, self.done
        );
        Ok(EventDraft {
            event_type: TASK_REQUEST_TYPE.to_string(),
            stream: format!("project/{}", slug(&project, "project")),
            room: TASK_ROOM.to_string(),
            from_agent,
            to_agent: Some(to_agent),
            correlation_id: Some(correlation_id),
            branch: Some(branch),
            base_commit: Some(base_commit.as_str().to_string()),
            status: Some(EventStatus::Open.as_str().to_string()),
            body: Some(body),
            ..EventDraft::default()
        })
    }
}

/// The one-line prompt that wakes a worker for a stored task.
pub fn task_handoff(correlation_id: &str, agent: &str) -> String {
    format!(
        "Open MemPalace task {correlation_id} as {agent}. Claim it, follow its exact definition of done, and deliver \
         through the logstream."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(text: &str) -> Timestamp {
        crate::time::parse_timestamp(text, "test", crate::time::DayEdge::Start).unwrap()
    }

    fn draft() -> EventDraft {
        EventDraft {
            event_type: "task.request".into(),
            stream: "project/mempalace".into(),
            room: "delegation".into(),
            from_agent: "mac-codex".into(),
            ..EventDraft::default()
        }
    }

    fn parse(draft: EventDraft) -> Checked<Event> {
        Event::parse(WorkspaceId::default_workspace(), "evt_x".into(), at("2026-01-02T03:04:05.678Z"), draft)
    }

    fn message(result: Checked<impl std::fmt::Debug>) -> String {
        result.expect_err("the value is refused").to_string()
    }

    #[test]
    fn every_event_rule_answers_with_mempalaces_message() {
        let cases: Vec<(EventDraft, &str)> = vec![
            (
                EventDraft { event_type: "Task.Request".into(), ..draft() },
                "type='Task.Request' is not a valid event type (lowercase letters, digits, '.', '_', '-'; max 64 chars)",
            ),
            (EventDraft { event_type: "  ".into(), ..draft() }, "type must be a non-empty string"),
            (EventDraft { event_type: "a".repeat(65), ..draft() }, "is not a valid event type"),
            (EventDraft { stream: "".into(), ..draft() }, "stream must be a non-empty string"),
            (EventDraft { room: "   ".into(), ..draft() }, "room must be a non-empty string"),
            (EventDraft { topic: Some(" ".into()), ..draft() }, "topic must be a non-empty string"),
            (
                EventDraft { from_agent: "x".repeat(257), ..draft() },
                "from_agent exceeds maximum length of 256 characters",
            ),
            (EventDraft { to_agent: Some("a\u{7f}b".into()), ..draft() }, "to_agent contains control characters"),
            (
                EventDraft { correlation_id: Some("a\nb".into()), ..draft() },
                "correlation_id contains control characters",
            ),
            (
                EventDraft { status: Some("done".into()), ..draft() },
                "status='done' is not one of: applied, blocked, claimed, failed, open, ready, superseded",
            ),
            (EventDraft { body: Some("a\0b".into()), ..draft() }, "body contains null bytes"),
            (
                EventDraft { body: Some("é".repeat(131_073)), ..draft() },
                "body is 262146 bytes; maximum is 262144 bytes",
            ),
            (EventDraft { metadata: Some(json!([1])), ..draft() }, "metadata must be an object"),
            (
                EventDraft { metadata: Some(json!({"k": "x".repeat(65_530)})), ..draft() },
                "metadata exceeds maximum size of 65536 bytes",
            ),
            (
                EventDraft { artifact_ids: Some(json!("art_1")), ..draft() },
                "artifact_ids must be a list of artifact id strings",
            ),
            (
                EventDraft { artifact_ids: Some(json!(["art_1", ""])), ..draft() },
                "artifact_ids must be a list of artifact id strings",
            ),
        ];
        for (draft, expected) in cases {
            let got = message(parse(draft.clone()));
            assert!(got.contains(expected), "{draft:?}: {got}");
        }
    }

    #[test]
    fn the_first_broken_rule_in_mempalaces_order_is_reported() {
        let broken = EventDraft { event_type: "BAD".into(), stream: "".into(), status: Some("x".into()), ..draft() };
        assert!(message(parse(broken)).starts_with("type="));
        let broken = EventDraft { stream: "".into(), room: "".into(), ..draft() };
        assert_eq!(message(parse(broken)), "stream must be a non-empty string");
    }

    #[test]
    fn events_keep_text_verbatim_trim_routing_and_deduplicate_artifacts() {
        let event = parse(EventDraft {
            stream: "  project/x  ".into(),
            to_agent: Some("".into()),
            status: Some("claimed".into()),
            body: Some("  line one\r\nline two  ".into()),
            metadata: Some(json!({"b": 1, "a": [1, 2]})),
            artifact_ids: Some(json!(["art_2", "art_1", "art_2"])),
            ..draft()
        })
        .unwrap();
        assert_eq!(event.stream.as_str(), "project/x");
        assert_eq!(event.to_agent, None, "an empty optional field is absent");
        assert_eq!(event.status, Some(EventStatus::Claimed));
        assert_eq!(event.body.as_str(), "  line one\r\nline two  ");
        assert_eq!(event.artifact_ids, vec!["art_2", "art_1"]);
        assert_eq!(format_second(&event.created_at), "2026-01-02T03:04:05Z");
        assert_eq!(event.created_at, at("2026-01-02T03:04:05Z"), "records keep whole seconds");
        // Exactly at the limits is accepted.
        parse(EventDraft { body: Some("x".repeat(MAX_BODY_BYTES)), ..draft() }).unwrap();
        parse(EventDraft { from_agent: "é".repeat(256), ..draft() }).unwrap();
        parse(EventDraft { event_type: "a".repeat(64), ..draft() }).unwrap();
    }

    #[test]
    fn metadata_size_is_measured_as_mempalace_encodes_it() {
        // {"k": "…"} with Python's separators: 2 + 3 + 2 + 2 + n + 2 bytes.
        let fits = |n: usize| Metadata::parse(Some(json!({"k": "x".repeat(n)}))).is_ok();
        let overhead = "{\"k\": \"\"}".len();
        assert!(fits(MAX_METADATA_BYTES - overhead));
        assert!(!fits(MAX_METADATA_BYTES - overhead + 1));
        assert_eq!(
            python_json_len(json!({"a": [1, 2], "b": {"c": null}}).as_object().unwrap()),
            "{\"a\": [1, 2], \"b\": {\"c\": null}}".len()
        );
    }

    #[test]
    fn artifact_rules_and_patch_warnings() {
        let artifact = |kind: &str, content: &str, by: &str| {
            Artifact::parse(
                WorkspaceId::default_workspace(),
                "art_x".into(),
                at("2026-01-02T03:04:05Z"),
                kind,
                content.into(),
                by,
                None,
            )
        };
        assert_eq!(message(artifact("binary", "x", "a")), "kind='binary' is not one of: file, json, log, note, patch");
        assert_eq!(message(artifact("Patch", "x", "a")), "kind='Patch' is not one of: file, json, log, note, patch");
        assert_eq!(message(artifact("patch", "", "a")), "content must be a non-empty string");
        assert_eq!(
            message(artifact("patch", "x", " ")),
            "created_by must be a non-empty string",
            "created_by is checked before content"
        );
        assert_eq!(message(artifact("note", "a\0", "a")), "content contains null bytes");
        let big = "x".repeat(MAX_CONTENT_BYTES + 1);
        assert_eq!(message(artifact("log", &big, "a")), "content is 4194305 bytes; maximum is 4194304 bytes");
        let clean = artifact("patch", "--- a\n+++ b\n", "a").unwrap();
        assert!(clean.warnings().is_empty());
        assert_eq!(clean.size_bytes(), 12);
        assert_eq!(clean.sha256(), hex::encode(Sha256::digest(b"--- a\n+++ b\n")));
        let crlf = artifact("patch", "--- a\r\n+++ b", "a").unwrap();
        assert_eq!(crlf.warnings().len(), 2);
        assert!(crlf.warnings()[0].starts_with("patch content does not end with a trailing newline"));
        assert!(crlf.warnings()[1].starts_with("patch content contains carriage returns"));
        assert!(artifact("note", "no newline", "a").unwrap().warnings().is_empty(), "only patches are checked");
    }

    #[test]
    fn listing_rules() {
        let query = |draft: EventQueryDraft| EventQuery::parse(draft);
        assert_eq!(query(EventQueryDraft::default()).unwrap().limit, DEFAULT_LIST_LIMIT);
        assert_eq!(query(EventQueryDraft::default()).unwrap().order, Order::Asc);
        assert_eq!(query(EventQueryDraft { limit: Some(10_000), ..Default::default() }).unwrap().limit, MAX_LIST_LIMIT);
        assert_eq!(
            message(query(EventQueryDraft { limit: Some(0), ..Default::default() })),
            "limit must be a positive integer"
        );
        assert_eq!(
            message(query(EventQueryDraft { order: Some(" Sideways ".into()), ..Default::default() })),
            "order='sideways' must be 'asc' or 'desc'"
        );
        assert_eq!(
            query(EventQueryDraft { order: Some(" DESC".into()), ..Default::default() }).unwrap().order,
            Order::Desc
        );
        assert_eq!(
            message(query(EventQueryDraft { writer: Some("\u{1}".into()), ..Default::default() })),
            "from_agent contains control characters"
        );
        assert_eq!(
            query(EventQueryDraft { event_type: Some("".into()), ..Default::default() }).unwrap().event_type,
            None
        );
        assert_eq!(
            message(query(EventQueryDraft { event_type: Some(" ".into()), ..Default::default() })),
            "type must be a non-empty string"
        );
        assert_eq!(
            message(query(EventQueryDraft {
                since_created_at: Some("2026-11-26T17:50:17".into()),
                ..Default::default()
            })),
            "since_created_at='2026-11-26T17:50:17' is not a valid ISO-8601 date or UTC datetime (expected YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ)"
        );
        for bad in ["2026-02-30", "2026-1-05", "2026-01-05T24:00:00Z", "yesterday"] {
            assert!(parse_since("since_created_at", Some(bad)).is_err(), "{bad}");
        }
        assert_eq!(parse_since("s", Some("2026-11-26")).unwrap(), Some(at("2026-11-26T00:00:00Z")));
        assert_eq!(parse_since("s", Some("2026-11-26T17:50:17Z")).unwrap(), Some(at("2026-11-26T17:50:17Z")));
        assert_eq!(parse_since("s", Some("2026-11-26T17:50:17+00:00")).unwrap(), Some(at("2026-11-26T17:50:17Z")));
        assert_eq!(Order::default_for_cursor(Some("evt_1")), Order::Asc);
        assert_eq!(Order::default_for_cursor(Some("")), Order::Desc);
        assert_eq!(Order::default_for_cursor(None), Order::Desc);
    }

    #[test]
    fn waits_are_clamped_and_back_off_with_jitter() {
        assert_eq!(wait_timeout(None).unwrap(), DEFAULT_WAIT);
        assert_eq!(wait_timeout(Some(10_000_000)).unwrap(), MAX_WAIT);
        assert_eq!(wait_timeout(Some(0)).unwrap(), Duration::ZERO);
        assert_eq!(message(wait_timeout(Some(-1))), "timeout_ms must be a non-negative number");
        assert_eq!(poll_delay(0, 1.0), Duration::from_millis(250));
        assert_eq!(poll_delay(0, 0.0), Duration::from_secs_f64(0.1875));
        assert_eq!(poll_delay(1, 1.0), Duration::from_secs_f64(0.375));
        assert_eq!(poll_delay(40, 1.0), Duration::from_secs(1), "capped at one second");
    }

    #[test]
    fn tasks_follow_mempalaces_envelope() {
        let task = TaskDraft {
            project: "Demo Project!".into(),
            from_agent: " a ".into(),
            to_agent: "b".into(),
            goal: "Do it.".into(),
            branch: "main".into(),
            base_commit: "ABCDEF1".into(),
            done: "Tests pass.".into(),
        };
        let event = task.clone().into_event_draft(0xf5d3_2429).unwrap();
        assert_eq!(event.stream, "project/demo_project");
        assert_eq!(event.correlation_id.as_deref(), Some("task_do_it_f5d32429"));
        assert_eq!(event.base_commit.as_deref(), Some("abcdef1"));
        assert_eq!(event.from_agent, "a");
        assert_eq!(event.status.as_deref(), Some("open"));
        assert_eq!(
            event.body.as_deref(),
            Some(
                "Goal:\nDo it.\n\nDefinition of done:\nTests pass.\n\nDelivery:\nClose the loop through MemPalace: claim the request, then submit a patch with mempalace_patch_submit or reply with blocked/failed evidence."
            )
        );
        let refused = |change: fn(&mut TaskDraft)| {
            let mut task = task.clone();
            change(&mut task);
            message(task.into_event_draft(1))
        };
        assert_eq!(refused(|t| t.project = " ".into()), "task project must not be empty");
        assert_eq!(refused(|t| t.from_agent = "".into()), "task requesting agent must not be empty");
        assert_eq!(refused(|t| t.to_agent = "".into()), "task destination agent must not be empty");
        assert_eq!(refused(|t| t.branch = "".into()), "task branch must not be empty");
        assert_eq!(refused(|t| t.base_commit = "".into()), "task base commit must not be empty");
        assert_eq!(
            refused(|t| t.base_commit = "main".into()),
            "task base commit must be a hexadecimal Git object id (at least 7 characters), not a branch or tag"
        );
        assert_eq!(
            refused(|t| t.base_commit = "abc123".into()),
            "task base commit must be a hexadecimal Git object id (at least 7 characters), not a branch or tag"
        );
        assert_eq!(refused(|t| t.goal = "\n".into()), "task goal must not be empty");
        assert_eq!(refused(|t| t.done = "".into()), "task definition of done must not be empty");
        assert_eq!(slug("!!!", "project"), "project");
        assert_eq!(slug(&format!("{}_tail", "a".repeat(39)), "x"), "a".repeat(39));
        assert_eq!(slug("Ünïcode Goal", "work"), "n_code_goal");
        assert_eq!(
            task_handoff("task_x_1", "b"),
            "Open MemPalace task task_x_1 as b. Claim it, follow its exact definition of done, and deliver through the logstream."
        );
    }

    #[test]
    fn acks_route_back_to_the_writer_in_the_same_conversation() {
        let mut target = parse(EventDraft { topic: Some("auth".into()), ..draft() }).unwrap();
        let ack = target.ack_draft("b".into(), Some("claimed".into()), None, None);
        assert_eq!((ack.event_type.as_str(), ack.to_agent.as_deref()), (ACK_TYPE, Some("mac-codex")));
        assert_eq!(ack.correlation_id.as_deref(), Some("evt_x"), "the target's id when it has no correlation id");
        assert_eq!(ack.topic.as_deref(), Some("auth"));
        assert_eq!(ack.metadata, Some(json!({"ack_of": "evt_x"})));
        target.correlation_id = Some(Routing::parse("c", "task_1").unwrap());
        let ack = target.ack_draft("b".into(), None, None, Some("other".into()));
        assert_eq!((ack.correlation_id.as_deref(), ack.topic.as_deref()), (Some("task_1"), Some("other")));
    }

    #[test]
    fn watch_filters_push_single_values_down_and_check_the_rest() {
        let watch = |draft: WatchDraft| WatchFilter::parse(draft);
        let agent = watch(WatchDraft {
            to_agents: vec!["me".into()],
            exclude_from_agents: vec!["me".into()],
            types: vec!["task.request".into(), "patch.ready".into(), "".into()],
            ..Default::default()
        })
        .unwrap();
        let pushed = agent.pushdown();
        assert_eq!((pushed.to_agent.as_deref(), pushed.event_type), (Some("me"), None), "two types stay client-side");
        let event = |kind: &str, from: &str, to: Option<&str>| {
            parse(EventDraft {
                event_type: kind.into(),
                from_agent: from.into(),
                to_agent: to.map(str::to_string),
                ..draft()
            })
            .unwrap()
        };
        assert!(agent.matches(&event("task.request", "boss", Some("me"))));
        assert!(agent.matches(&event("patch.ready", "boss", Some("*"))), "broadcasts reach everyone");
        assert!(!agent.matches(&event("patch.ready", "me", Some("*"))), "never one's own broadcasts");
        assert!(!agent.matches(&event("status.update", "boss", Some("me"))));
        assert!(!agent.matches(&event("task.request", "boss", Some("you"))));
        assert!(!agent.matches(&event("task.request", "boss", None)));
        assert!(
            WatchFilter::parse(WatchDraft::default()).unwrap().matches(&event("x", "a", None)),
            "no filter, every event"
        );
        let refused = |draft: WatchDraft| message(watch(draft));
        assert_eq!(
            refused(WatchDraft { types: vec!["patch.ready".into(), "Task.Request".into()], ..Default::default() }),
            "type='Task.Request' is not a valid event type (lowercase letters, digits, '.', '_', '-'; max 64 chars)"
        );
        assert_eq!(
            refused(WatchDraft { statuses: vec!["done".into()], ..Default::default() }),
            "status='done' is not one of: applied, blocked, claimed, failed, open, ready, superseded"
        );
        assert_eq!(
            refused(WatchDraft { exclude_from_agents: vec![" ".into()], ..Default::default() }),
            "exclude_from_agent must be a non-empty string"
        );
    }

    #[test]
    fn ids_previews_and_quoting() {
        let t = at("2026-01-02T03:04:05.9Z");
        assert_eq!(new_id("evt", &t, 0xdead_beef_0000_0001), "evt_20260102T030405_beef00000001");
        let long = Body::parse(Some("é".repeat(250))).unwrap();
        let (head, length) = long.preview().unwrap();
        assert_eq!((head.chars().count(), length), (200, 250));
        assert!(Body::parse(Some("x".repeat(200))).unwrap().preview().is_none());
        assert_eq!(py_repr("it's"), "\"it's\"");
        assert_eq!(py_repr("a\tb\\"), "'a\\tb\\\\'");
        assert_eq!(py_repr("\u{1}"), "'\\x01'");
    }
}
