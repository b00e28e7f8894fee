//! MemPalace 3.11's coordination tools (RFC 003): agents delegate work,
//! wait for replies and hand over exact patches through the palace —
//! `mempalace_event_append`, `_event_list`, `_event_wait`, `_event_ack`,
//! `_task_create`, `_artifact_put`, `_artifact_get`, `_patch_submit`.
//!
//! Names, parameters and result shapes are MemPalace's, so agent
//! instructions written for it keep working; the result shapes are
//! `Serialize` types here, also printed by the CLI's `--json`. A rule the
//! call breaks comes back as MemPalace's result — `{"success": false,
//! "error": …}` from the writers, `{"error": …}` from list, wait and
//! artifact_get — flagged `isError`; JSON-RPC errors are left for
//! parameters that do not fit the schema (missing, unknown, mistyped).
//! List, wait and artifact_get only read (`readOnlyHint`); on stdio a
//! write sent after a wait therefore runs when the wait has ended.

use mempalace_core::coordination::{
    Artifact, EventDraft, EventQueryDraft, Order, Routing, StoredEvent, TaskDraft, format_second,
};
use mempalace_engine::coordination::{AckDraft, ArtifactDraft, PatchDraft, WaitOutcome};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{as_write_failure, reply};
use crate::context::Backend;
use crate::registry::{Family, ToolError, ToolResult, ToolSpec};

const F: Family = Family::Mempalace;

/// The tools of this family, in `tools/list` order.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "mempalace_event_append",
            F,
            "Append an immutable agent-coordination event to the logstream (RFC 003). Use for delegating work \
             (task.request), replying (task.reply), and announcing artifacts (patch.ready). Events are append-only; \
             corrections are new events.",
            event_append,
        ),
        ToolSpec::new(
            "mempalace_event_list",
            F,
            "List agent-coordination events with structured filters. Defaults to order='desc' (newest events first) \
             when since_event_id is omitted (e.g. for sweeping recent inbox or inspecting recent history); defaults \
             to order='asc' (chronological forward order) when resuming from since_event_id. Explicit order always \
             overrides this default. Use since_event_id as the resume cursor: it means strictly AFTER that event in \
             append order, so it cannot skip anything. For reverse/historical paging, use before_event_id. Do NOT \
             resume with since_created_at — agents on other machines stamp events with their own clocks, so an \
             event can arrive after a later timestamp and be missed permanently; since_created_at is a time window \
             ('what happened today'), not a cursor. Pass preview=true when sweeping a busy stream. to_agent=<you> \
             also matches '*' broadcasts. writer=<agent> filters by who wrote an event; from_agent is your identity \
             and never filters. To wait for future events, use mempalace_event_wait.",
            event_list,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_event_wait",
            F,
            "Block until a matching coordination event exists or the timeout expires (default 60s, max 5 minutes). \
             Returns {timed_out: true, events: []} on timeout — a normal result, not an error. This is the right \
             tool for actively waiting on a correlation_id you delegated or claimed. It already backs off \
             internally, so do not wrap it in a tight retry loop: on timeout just call it again with since_event_id \
             updated to the last event you processed. For long-lived consumers (daemons) prefer the CLI's \
             `mempalace logstream watch`, which keeps its cursor in a state file.",
            event_wait,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_event_ack",
            F,
            "Acknowledge a coordination event: appends a new event.ack routed back to the original writer with the \
             correlation id copied. Never mutates the target event.",
            event_ack,
        ),
        ToolSpec::new(
            "mempalace_task_create",
            F,
            "Create a complete immutable task.request for another agent and return its exact stored event plus one \
             short ready-to-paste handoff line. Use this instead of assembling raw task fields, especially when \
             connected to a remote shared palace. The caller must preview the exact task with the user before this \
             append.",
            task_create,
        ),
        ToolSpec::new(
            "mempalace_artifact_put",
            F,
            "Store exact artifact content (unified diff patch, file, log, json, note) for agent handoffs. Returns \
             id, sha256, and size_bytes. UTF-8 text only, max 4 MiB.",
            artifact_put,
        ),
        ToolSpec::new(
            "mempalace_artifact_get",
            F,
            "Fetch a coordination artifact by id — exact content plus sha256 for verification.",
            artifact_get,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_patch_submit",
            F,
            "Convenience: store a patch artifact and append its patch.ready event in one call. Use when handing \
             completed work to another agent.",
            patch_submit,
        ),
    ]
}

/// Said when a caller passes `from_agent` to list or wait without `writer`
/// (MemPalace's wording): it is their identity, not a filter.
pub const FROM_AGENT_NOTE: &str = "from_agent is your identity and does not filter event_list/event_wait. Filter by \
who wrote an event with writer=<agent>; for your inbox use to_agent=<you>.";

/// An event as MemPalace returns it (keys in its order; MCP sorts them).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EventShape {
    /// `evt_…`.
    pub id: String,
    /// The palace's append order, the cursor.
    pub seq: i64,
    /// MemPalace's replica of origin: always null (one shared palace, no
    /// replicas).
    pub origin_replica: Option<String>,
    /// MemPalace's per-replica counter: the `seq` here.
    pub origin_seq: i64,
    /// MemPalace's hybrid logical clock: always null.
    pub hlc: Option<String>,
    /// Event type.
    #[serde(rename = "type")]
    pub event_type: String,
    /// Stream.
    pub stream: String,
    /// Room.
    pub room: String,
    /// Topic.
    pub topic: Option<String>,
    /// Writer.
    pub from_agent: String,
    /// Recipient or `*`.
    pub to_agent: Option<String>,
    /// Conversation.
    pub correlation_id: Option<String>,
    /// Git branch.
    pub branch: Option<String>,
    /// Git commit.
    pub base_commit: Option<String>,
    /// Status.
    pub status: Option<&'static str>,
    /// Referenced artifacts.
    pub artifact_ids: Vec<String>,
    /// Verbatim body (cut to 200 characters in a preview).
    pub body: String,
    /// `YYYY-MM-DDTHH:MM:SSZ`.
    pub created_at: String,
    /// Extra fields.
    pub metadata: Map<String, Value>,
    /// In a preview, when the body was cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_truncated: Option<bool>,
    /// In a preview, the whole body's length in characters, when cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_length: Option<usize>,
}

fn text(value: &Option<Routing>) -> Option<String> {
    value.as_ref().map(|v| v.as_str().to_string())
}

impl EventShape {
    /// The whole event.
    pub fn of(stored: &StoredEvent) -> Self {
        let event = &stored.event;
        Self {
            id: event.id.clone(),
            seq: stored.seq,
            origin_replica: None,
            origin_seq: stored.seq,
            hlc: None,
            event_type: event.event_type.as_str().to_string(),
            stream: event.stream.as_str().to_string(),
            room: event.room.as_str().to_string(),
            topic: text(&event.topic),
            from_agent: event.from_agent.as_str().to_string(),
            to_agent: text(&event.to_agent),
            correlation_id: text(&event.correlation_id),
            branch: text(&event.branch),
            base_commit: text(&event.base_commit),
            status: event.status.map(|status| status.as_str()),
            artifact_ids: event.artifact_ids.clone(),
            body: event.body.as_str().to_string(),
            created_at: format_second(&event.created_at),
            metadata: event.metadata.as_map().clone(),
            body_truncated: None,
            body_length: None,
        }
    }

    /// The event with a body longer than 200 characters cut to them,
    /// marked `body_truncated` with the whole `body_length`.
    pub fn preview(stored: &StoredEvent) -> Self {
        let mut shape = Self::of(stored);
        if let Some((head, length)) = stored.event.body.preview() {
            shape.body = head.to_string();
            shape.body_truncated = Some(true);
            shape.body_length = Some(length);
        }
        shape
    }
}

/// A stored artifact as `artifact_put` reports it (no content).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArtifactRecordShape {
    /// `art_…`.
    pub id: String,
    /// Kind.
    pub kind: &'static str,
    /// Hex SHA-256 of the content.
    pub sha256: String,
    /// Bytes of the content.
    pub size_bytes: usize,
    /// Who stored it.
    pub created_by: String,
    /// `YYYY-MM-DDTHH:MM:SSZ`.
    pub created_at: String,
    /// Always null (no replicas).
    pub origin_replica: Option<String>,
    /// Why `git apply` may balk at a patch; absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<&'static str>,
}

impl ArtifactRecordShape {
    /// The record of `artifact`.
    pub fn of(artifact: &Artifact) -> Self {
        Self {
            id: artifact.id.clone(),
            kind: artifact.kind.as_str(),
            sha256: artifact.sha256(),
            size_bytes: artifact.size_bytes(),
            created_by: artifact.created_by.as_str().to_string(),
            created_at: format_second(&artifact.created_at),
            origin_replica: None,
            warnings: artifact.warnings(),
        }
    }
}

/// A whole artifact as `artifact_get` returns it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArtifactShape {
    /// `art_…`.
    pub id: String,
    /// Kind.
    pub kind: &'static str,
    /// Hex SHA-256 of the content.
    pub sha256: String,
    /// Bytes of the content.
    pub size_bytes: usize,
    /// The verbatim content.
    pub content: String,
    /// Who stored it.
    pub created_by: String,
    /// `YYYY-MM-DDTHH:MM:SSZ`.
    pub created_at: String,
    /// Always null (no replicas).
    pub origin_replica: Option<String>,
    /// Extra fields.
    pub metadata: Map<String, Value>,
}

impl ArtifactShape {
    /// The whole `artifact`.
    pub fn of(artifact: &Artifact) -> Self {
        Self {
            id: artifact.id.clone(),
            kind: artifact.kind.as_str(),
            sha256: artifact.sha256(),
            size_bytes: artifact.size_bytes(),
            content: artifact.content.as_str().to_string(),
            created_by: artifact.created_by.as_str().to_string(),
            created_at: format_second(&artifact.created_at),
            origin_replica: None,
            metadata: artifact.metadata.as_map().clone(),
        }
    }
}

/// `{"success": true, "event": …}` (append, ack).
#[derive(Debug, Serialize)]
pub struct EventWritten {
    /// Always true.
    pub success: bool,
    /// The stored event.
    pub event: EventShape,
}

/// `{"events": […], "count": n[, "note"]}` (list).
#[derive(Debug, Serialize)]
pub struct EventListing {
    /// The events.
    pub events: Vec<EventShape>,
    /// How many.
    pub count: usize,
    /// [`FROM_AGENT_NOTE`] when it applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<&'static str>,
}

/// `{"timed_out": …, "events": […], "count": n[, "note"]}` (wait).
#[derive(Debug, Serialize)]
pub struct EventWaited {
    /// Whether the wait ended with nothing.
    pub timed_out: bool,
    /// The events (none on a timeout).
    pub events: Vec<EventShape>,
    /// How many.
    pub count: usize,
    /// [`FROM_AGENT_NOTE`] when it applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<&'static str>,
}

impl EventWaited {
    /// The shape of a wait's outcome.
    pub fn of(outcome: &WaitOutcome, note: Option<&'static str>) -> Self {
        let events: Vec<EventShape> = match outcome {
            WaitOutcome::Events(events) => events.iter().map(EventShape::of).collect(),
            WaitOutcome::TimedOut => Vec::new(),
        };
        Self { timed_out: matches!(outcome, WaitOutcome::TimedOut), count: events.len(), events, note }
    }
}

/// `{"success": true, "task": …, "handoff": …}`.
#[derive(Debug, Serialize)]
pub struct TaskCreated {
    /// Always true.
    pub success: bool,
    /// The `task.request` event.
    pub task: EventShape,
    /// The line to paste to the worker.
    pub handoff: String,
}

/// `{"success": true, "artifact": …}`.
#[derive(Debug, Serialize)]
pub struct ArtifactStored {
    /// Always true.
    pub success: bool,
    /// The stored artifact (no content).
    pub artifact: ArtifactRecordShape,
}

/// `{"artifact": …}`.
#[derive(Debug, Serialize)]
pub struct ArtifactFetched {
    /// The whole artifact.
    pub artifact: ArtifactShape,
}

/// `{"success": true, "artifact": …, "event": …}`.
#[derive(Debug, Serialize)]
pub struct PatchSubmitted {
    /// Always true.
    pub success: bool,
    /// The stored patch (no content).
    pub artifact: ArtifactRecordShape,
    /// Its `patch.ready` event.
    pub event: EventShape,
}

/// A writer's refusal: `{"success": false, "error": …}`.
fn refused(error: mempalace_engine::EngineError) -> ToolError {
    as_write_failure(ToolError::from(error))
}

/// The note MemPalace adds when `from_agent` is given without `writer`.
fn from_agent_note(from_agent: Option<&str>, writer: Option<&str>) -> Option<&'static str> {
    let given = |value: Option<&str>| value.is_some_and(|v| !v.is_empty());
    (given(from_agent) && !given(writer)).then_some(FROM_AGENT_NOTE)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EventAppend {
    /// Event type, e.g. 'task.request', 'task.reply', 'patch.ready'
    #[serde(rename = "type")]
    event_type: String,
    /// Logical stream, e.g. 'project/mempalace' or 'shared_agent_brain'
    stream: String,
    /// Sub-channel, e.g. 'delegation', 'patches', 'reviews', 'status'
    room: String,
    /// Topic to group related work/sub-team, e.g. 'auth-v2', 'ui-redesign' (optional)
    #[serde(default)]
    topic: Option<String>,
    /// Writer agent identity
    from_agent: String,
    /// Target agent, or '*' for broadcast (optional)
    #[serde(default)]
    to_agent: Option<String>,
    /// Task/conversation id tying request and reply events (optional)
    #[serde(default)]
    correlation_id: Option<String>,
    /// Git branch, when relevant (optional)
    #[serde(default)]
    branch: Option<String>,
    /// Git commit the work started from (optional)
    #[serde(default)]
    base_commit: Option<String>,
    /// One of: open, claimed, ready, applied, blocked, failed, superseded (optional)
    #[serde(default)]
    status: Option<String>,
    /// Verbatim human-readable content (optional, max 256 KiB)
    #[serde(default)]
    body: Option<String>,
    /// Extra structured fields, stored verbatim (optional)
    #[serde(default)]
    #[schemars(with = "Option<Map<String, Value>>")]
    metadata: Option<Value>,
    /// Ids of already-stored artifacts to reference (optional)
    #[serde(default)]
    #[schemars(with = "Option<Vec<String>>")]
    artifact_ids: Option<Value>,
}

fn event_append(backend: &Backend, p: EventAppend) -> ToolResult {
    let stored = backend
        .palace()
        .append_event(EventDraft {
            event_type: p.event_type,
            stream: p.stream,
            room: p.room,
            topic: p.topic,
            from_agent: p.from_agent,
            to_agent: p.to_agent,
            correlation_id: p.correlation_id,
            branch: p.branch,
            base_commit: p.base_commit,
            status: p.status,
            body: p.body,
            metadata: p.metadata,
            artifact_ids: p.artifact_ids,
        })
        .map_err(refused)?;
    reply(EventWritten { success: true, event: EventShape::of(&stored) })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EventList {
    /// Filter by stream (optional)
    #[serde(default)]
    stream: Option<String>,
    /// Filter by room (optional)
    #[serde(default)]
    room: Option<String>,
    /// Filter by topic (optional)
    #[serde(default)]
    topic: Option<String>,
    /// Filter by event type (optional)
    #[serde(default, rename = "type")]
    event_type: Option<String>,
    /// Filter by target agent; also matches '*' broadcasts (optional)
    #[serde(default)]
    to_agent: Option<String>,
    /// Your agent identity (optional). NOT a filter: it never narrows the result. To filter by who wrote an event use writer.
    #[serde(default)]
    from_agent: Option<String>,
    /// Filter by the agent that wrote the event (optional)
    #[serde(default)]
    writer: Option<String>,
    /// Filter by correlation id (optional)
    #[serde(default)]
    correlation_id: Option<String>,
    /// Filter by status (optional)
    #[serde(default)]
    status: Option<String>,
    /// Return only events strictly after this event id in append order (optional)
    #[serde(default)]
    since_event_id: Option<String>,
    /// Return only events strictly before this event id in append order (optional)
    #[serde(default)]
    before_event_id: Option<String>,
    /// Time window filter, inclusive: events created at or after this time (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, optional). NOT a resume cursor — use since_event_id for that. Dedup by id when using this.
    #[serde(default)]
    since_created_at: Option<String>,
    /// Max events to return (default 50, at most 500)
    #[serde(default)]
    limit: Option<i64>,
    /// 'desc' (newest first, default without cursor) or 'asc' (chronological forward, default with since_event_id, optional)
    #[serde(default)]
    order: Option<String>,
    /// Truncate each event body to a short excerpt (marks body_truncated + body_length) so scanning many events stays cheap. since_event_id is strictly AFTER that id, so do not pass the truncated event's own id to re-fetch it — repeat the original filters with preview=false (default false)
    #[serde(default)]
    preview: Option<bool>,
}

fn event_list(backend: &Backend, p: EventList) -> ToolResult {
    let note = from_agent_note(p.from_agent.as_deref(), p.writer.as_deref());
    let order = p.order.unwrap_or_else(|| match Order::default_for_cursor(p.since_event_id.as_deref()) {
        Order::Asc => "asc".to_string(),
        Order::Desc => "desc".to_string(),
    });
    let events = backend.palace().list_events(EventQueryDraft {
        stream: p.stream,
        room: p.room,
        topic: p.topic,
        event_type: p.event_type,
        to_agent: p.to_agent,
        writer: p.writer,
        correlation_id: p.correlation_id,
        status: p.status,
        since_event_id: p.since_event_id,
        before_event_id: p.before_event_id,
        since_created_at: p.since_created_at,
        order: Some(order),
        limit: p.limit,
    })?;
    let shape = if p.preview.unwrap_or(false) { EventShape::preview } else { EventShape::of };
    let events: Vec<EventShape> = events.iter().map(shape).collect();
    reply(EventListing { count: events.len(), events, note })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EventWait {
    /// Filter by stream (optional)
    #[serde(default)]
    stream: Option<String>,
    /// Filter by room (optional)
    #[serde(default)]
    room: Option<String>,
    /// Filter by topic (optional)
    #[serde(default)]
    topic: Option<String>,
    /// Filter by event type (optional)
    #[serde(default, rename = "type")]
    event_type: Option<String>,
    /// Filter by target agent; also matches '*' broadcasts (optional)
    #[serde(default)]
    to_agent: Option<String>,
    /// Your agent identity (optional). NOT a filter: it never narrows the result. To filter by who wrote an event use writer.
    #[serde(default)]
    from_agent: Option<String>,
    /// Filter by the agent that wrote the event (optional)
    #[serde(default)]
    writer: Option<String>,
    /// Filter by correlation id (optional)
    #[serde(default)]
    correlation_id: Option<String>,
    /// Filter by status (optional)
    #[serde(default)]
    status: Option<String>,
    /// Only match events strictly after this event id (optional)
    #[serde(default)]
    since_event_id: Option<String>,
    /// Time window filter, inclusive (optional). NOT a resume cursor — use since_event_id, which cannot skip an event.
    #[serde(default)]
    since_created_at: Option<String>,
    /// How long to wait in milliseconds (default 60000, max 300000)
    #[serde(default)]
    timeout_ms: Option<i64>,
    /// Max events to return when matches exist (default 50)
    #[serde(default)]
    limit: Option<i64>,
}

fn event_wait(backend: &Backend, p: EventWait) -> ToolResult {
    let note = from_agent_note(p.from_agent.as_deref(), p.writer.as_deref());
    let outcome = backend.palace().wait_events(
        EventQueryDraft {
            stream: p.stream,
            room: p.room,
            topic: p.topic,
            event_type: p.event_type,
            to_agent: p.to_agent,
            writer: p.writer,
            correlation_id: p.correlation_id,
            status: p.status,
            since_event_id: p.since_event_id,
            since_created_at: p.since_created_at,
            limit: p.limit,
            ..EventQueryDraft::default()
        },
        p.timeout_ms,
    )?;
    reply(EventWaited::of(&outcome, note))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EventAck {
    /// Id of the event to acknowledge
    event_id: String,
    /// Acknowledging agent identity
    from_agent: String,
    /// One of: open, claimed, ready, applied, blocked, failed, superseded (optional)
    #[serde(default)]
    status: Option<String>,
    /// Verbatim ack notes (optional)
    #[serde(default)]
    body: Option<String>,
    /// Topic override (defaults to target event's topic, optional)
    #[serde(default)]
    topic: Option<String>,
}

fn event_ack(backend: &Backend, p: EventAck) -> ToolResult {
    let stored = backend
        .palace()
        .ack_event(AckDraft {
            event_id: p.event_id,
            from_agent: p.from_agent,
            status: p.status,
            body: p.body,
            topic: p.topic,
        })
        .map_err(refused)?;
    reply(EventWritten { success: true, event: EventShape::of(&stored) })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct TaskCreate {
    /// Project routing name
    project: String,
    /// Requesting agent identity
    from_agent: String,
    /// Worker agent identity
    to_agent: String,
    /// Exact verbatim task goal
    goal: String,
    /// Git branch for the work
    branch: String,
    /// Immutable hexadecimal commit id the worker must start from; branches and tags are rejected
    base_commit: String,
    /// Exact verbatim definition of done
    done: String,
}

fn task_create(backend: &Backend, p: TaskCreate) -> ToolResult {
    let created = backend
        .palace()
        .create_task(TaskDraft {
            project: p.project,
            from_agent: p.from_agent,
            to_agent: p.to_agent,
            goal: p.goal,
            branch: p.branch,
            base_commit: p.base_commit,
            done: p.done,
        })
        .map_err(refused)?;
    reply(TaskCreated { success: true, task: EventShape::of(&created.task), handoff: created.handoff })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ArtifactPut {
    /// One of: patch, file, log, json, note
    kind: String,
    /// Exact artifact content
    content: String,
    /// Writer agent identity
    created_by: String,
    /// Extra structured fields, e.g. branch/base_commit (optional)
    #[serde(default)]
    #[schemars(with = "Option<Map<String, Value>>")]
    metadata: Option<Value>,
}

fn artifact_put(backend: &Backend, p: ArtifactPut) -> ToolResult {
    let artifact = backend
        .palace()
        .put_artifact(ArtifactDraft {
            kind: p.kind,
            content: p.content,
            created_by: p.created_by,
            metadata: p.metadata,
        })
        .map_err(refused)?;
    reply(ArtifactStored { success: true, artifact: ArtifactRecordShape::of(&artifact) })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ArtifactGet {
    /// Artifact id to fetch
    artifact_id: String,
}

fn artifact_get(backend: &Backend, p: ArtifactGet) -> ToolResult {
    let artifact = backend.palace().artifact(&p.artifact_id)?;
    reply(ArtifactFetched { artifact: ArtifactShape::of(&artifact) })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PatchSubmit {
    /// Unified diff content
    content: String,
    /// Submitting agent identity
    from_agent: String,
    /// Logical stream, e.g. 'project/mempalace'
    stream: String,
    /// Sub-channel (default 'patches')
    #[serde(default)]
    room: Option<String>,
    /// Topic name (optional)
    #[serde(default)]
    topic: Option<String>,
    /// Target agent or '*' (optional)
    #[serde(default)]
    to_agent: Option<String>,
    /// Task id tying this patch to its request (optional)
    #[serde(default)]
    correlation_id: Option<String>,
    /// Git branch (optional)
    #[serde(default)]
    branch: Option<String>,
    /// Git commit the patch applies to (optional)
    #[serde(default)]
    base_commit: Option<String>,
    /// Verbatim notes (optional)
    #[serde(default)]
    body: Option<String>,
    /// Extra structured fields (optional)
    #[serde(default)]
    #[schemars(with = "Option<Map<String, Value>>")]
    metadata: Option<Value>,
}

fn patch_submit(backend: &Backend, p: PatchSubmit) -> ToolResult {
    let submitted = backend
        .palace()
        .submit_patch(PatchDraft {
            content: p.content,
            from_agent: p.from_agent,
            stream: p.stream,
            room: p.room,
            to_agent: p.to_agent,
            correlation_id: p.correlation_id,
            branch: p.branch,
            base_commit: p.base_commit,
            body: p.body,
            metadata: p.metadata,
            topic: p.topic,
        })
        .map_err(refused)?;
    reply(PatchSubmitted {
        success: true,
        artifact: ArtifactRecordShape::of(&submitted.artifact),
        event: EventShape::of(&submitted.event),
    })
}
