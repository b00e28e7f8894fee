//! Agent coordination on a palace (MemPalace 3.11's logstream): appending
//! and listing events, waiting for one, acknowledging, storing and reading
//! artifacts, submitting patches and creating tasks.
//!
//! Agents on several machines coordinate through one palace (on
//! PostgreSQL, or one SQLite file on a shared machine): everything is in
//! the store, so any process's append is seen by every other process's
//! next read. The rules live in `core::coordination`; the order (`seq`)
//! and the atomicity of an append live in the store; here are the clock,
//! the ids and the wait. Like the rest of the engine, this knows no
//! transport: the surfaces turn the typed results into JSON or text.

use std::time::{Duration, Instant};

use mempalace_core::coordination::{
    Artifact, CoordinationError, Event, EventDraft, EventQuery, EventQueryDraft, PATCH_READY_TYPE, PATCH_ROOM, Routing,
    StoredEvent, TaskDraft, new_id, poll_delay, task_handoff, wait_timeout,
};
use mempalace_store::{AppendOutcome, EventFilter};
use serde_json::Value;

use crate::error::{EngineError, EngineResult};
use crate::palace::Palace;

/// An artifact to store, as the caller gives it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ArtifactDraft {
    /// `patch`, `file`, `log`, `json` or `note`.
    pub kind: String,
    /// The verbatim text.
    pub content: String,
    /// Who stores it.
    pub created_by: String,
    /// Extra fields (an object).
    pub metadata: Option<Value>,
}

/// An acknowledgement, as the caller gives it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AckDraft {
    /// The event acknowledged.
    pub event_id: String,
    /// Who acknowledges.
    pub from_agent: String,
    /// The status the acknowledger reports.
    pub status: Option<String>,
    /// Notes.
    pub body: Option<String>,
    /// Topic; absent keeps the acknowledged event's.
    pub topic: Option<String>,
}

/// A patch handed to another agent, as the caller gives it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PatchDraft {
    /// The unified diff, verbatim.
    pub content: String,
    /// Who submits it.
    pub from_agent: String,
    /// Stream.
    pub stream: String,
    /// Room; absent is `patches`.
    pub room: Option<String>,
    /// Recipient or `*`.
    pub to_agent: Option<String>,
    /// The task it answers.
    pub correlation_id: Option<String>,
    /// Git branch.
    pub branch: Option<String>,
    /// Git commit the patch applies to.
    pub base_commit: Option<String>,
    /// Notes.
    pub body: Option<String>,
    /// Extra fields, kept on both the artifact and the event.
    pub metadata: Option<Value>,
    /// Topic.
    pub topic: Option<String>,
}

/// What a submitted patch became.
#[derive(Debug, Clone, PartialEq)]
pub struct PatchSubmission {
    /// The stored patch (its `warnings()` say whether `git apply` would
    /// balk).
    pub artifact: Artifact,
    /// The `patch.ready` event referencing it.
    pub event: StoredEvent,
}

/// A created task.
#[derive(Debug, Clone, PartialEq)]
pub struct CreatedTask {
    /// The `task.request` event.
    pub task: StoredEvent,
    /// The one-line prompt that wakes the worker.
    pub handoff: String,
}

/// How a wait ended.
#[derive(Debug, Clone, PartialEq)]
pub enum WaitOutcome {
    /// Matching events (at least one), oldest first.
    Events(Vec<StoredEvent>),
    /// None arrived before the deadline.
    TimedOut,
}

impl Palace {
    /// Appends one event, checked by the coordination rules.
    pub fn append_event(&self, draft: EventDraft) -> EngineResult<StoredEvent> {
        let now = self.now();
        let event = Event::parse(self.workspace().clone(), new_id("evt", &now, random_u64()), now, draft)?;
        self.append(&event, &[])
    }

    fn append(&self, event: &Event, artifacts: &[Artifact]) -> EngineResult<StoredEvent> {
        match self.store().append_event(event, artifacts)? {
            AppendOutcome::Appended(seq) => Ok(StoredEvent { seq, event: event.clone() }),
            AppendOutcome::UnknownArtifact(id) => Err(CoordinationError::unknown_artifact(&id).into()),
        }
    }

    /// Events matching `query`, in its order (oldest first unless it says
    /// `desc`). A cursor that names no event of the workspace is an error.
    pub fn list_events(&self, query: EventQueryDraft) -> EngineResult<Vec<StoredEvent>> {
        let query = EventQuery::parse(query)?;
        let filter = self.event_filter(&query)?;
        Ok(self.store().events(self.workspace(), &filter)?)
    }

    /// Waits until at least one event matches `query`, or `timeout_ms`
    /// (default 60 s, at most 300 s) passes. Without a `since_event_id`
    /// cursor, events already there match at once (oldest first), as in
    /// MemPalace; with one, only later events do.
    ///
    /// The store is polled, 250 ms apart at first and backing off to 1 s
    /// with jitter (`core::coordination::poll_delay`): every process sees
    /// every other process's commits on its next read, so polling needs no
    /// channel between processes. The deadline is measured on the monotonic
    /// clock, not the palace's wall clock: a clock set in a test, or a wall
    /// clock stepped by NTP, must not stretch or cut a wait.
    pub fn wait_events(&self, query: EventQueryDraft, timeout_ms: Option<i64>) -> EngineResult<WaitOutcome> {
        let timeout = wait_timeout(timeout_ms)?;
        let deadline = Instant::now() + timeout;
        let query = EventQuery::parse(query)?;
        let filter = self.event_filter(&query)?;
        let mut attempt = 0;
        loop {
            let events = self.store().events(self.workspace(), &filter)?;
            if !events.is_empty() {
                return Ok(WaitOutcome::Events(events));
            }
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Ok(WaitOutcome::TimedOut);
            }
            std::thread::sleep(poll_delay(attempt, jitter()).min(remaining));
            attempt += 1;
        }
    }

    /// The newest event of the workspace (where a watcher that starts at
    /// the tip begins).
    pub fn latest_event(&self) -> EngineResult<Option<StoredEvent>> {
        let filter = EventFilter { newest_first: true, limit: 1, ..EventFilter::default() };
        Ok(self.store().events(self.workspace(), &filter)?.pop())
    }

    /// Acknowledges an event: appends an `event.ack` routed back to its
    /// writer in the same conversation (see `Event::ack_draft`). The
    /// acknowledged event is never changed.
    pub fn ack_event(&self, ack: AckDraft) -> EngineResult<StoredEvent> {
        let event_id = Routing::parse("event_id", &ack.event_id)?;
        let target = self
            .store()
            .event(self.workspace(), event_id.as_str())?
            .ok_or_else(|| CoordinationError::event_not_found(event_id.as_str()))?;
        self.append_event(target.event.ack_draft(ack.from_agent, ack.status, ack.body, ack.topic))
    }

    /// Stores an artifact verbatim. Its `warnings()` tell the caller when a
    /// patch would not apply.
    pub fn put_artifact(&self, draft: ArtifactDraft) -> EngineResult<Artifact> {
        let now = self.now();
        let artifact = Artifact::parse(
            self.workspace().clone(),
            new_id("art", &now, random_u64()),
            now,
            &draft.kind,
            draft.content,
            &draft.created_by,
            draft.metadata,
        )?;
        self.store().put_artifact(&artifact)?;
        Ok(artifact)
    }

    /// One artifact, exact content included.
    pub fn artifact(&self, id: &str) -> EngineResult<Artifact> {
        let wanted = Routing::parse("artifact_id", id)?;
        self.store()
            .artifact(self.workspace(), wanted.as_str())?
            .ok_or_else(|| CoordinationError::artifact_not_found(id).into())
    }

    /// Stores a patch and appends the `patch.ready` event that references
    /// it, in one transaction (MemPalace writes them in two, and can leave
    /// the artifact behind when the event is refused). The rules are checked
    /// in MemPalace's order: the artifact's first (`from_agent` is its
    /// `created_by`), then the event's.
    pub fn submit_patch(&self, draft: PatchDraft) -> EngineResult<PatchSubmission> {
        let now = self.now();
        let artifact = Artifact::parse(
            self.workspace().clone(),
            new_id("art", &now, random_u64()),
            now,
            "patch",
            draft.content,
            &draft.from_agent,
            draft.metadata.clone(),
        )?;
        let event = Event::parse(
            self.workspace().clone(),
            new_id("evt", &now, random_u64()),
            now,
            EventDraft {
                event_type: PATCH_READY_TYPE.to_string(),
                stream: draft.stream,
                room: draft.room.unwrap_or_else(|| PATCH_ROOM.to_string()),
                topic: draft.topic,
                from_agent: draft.from_agent,
                to_agent: draft.to_agent,
                correlation_id: draft.correlation_id,
                branch: draft.branch,
                base_commit: draft.base_commit,
                status: Some("ready".to_string()),
                body: draft.body,
                metadata: draft.metadata,
                artifact_ids: Some(Value::Array(vec![Value::String(artifact.id.clone())])),
            },
        )?;
        let stored = self.append(&event, std::slice::from_ref(&artifact))?;
        Ok(PatchSubmission { artifact, event: stored })
    }

    /// Appends a canonical `task.request` (see `TaskDraft`) and returns it
    /// with the handoff line for the worker.
    pub fn create_task(&self, draft: TaskDraft) -> EngineResult<CreatedTask> {
        let event = draft.into_event_draft((random_u64() >> 32) as u32)?;
        let task = self.append_event(event)?;
        let correlation_id = task.event.correlation_id.as_ref().map(Routing::as_str).unwrap_or_default();
        let agent = task.event.to_agent.as_ref().map(Routing::as_str).unwrap_or_default();
        let handoff = task_handoff(correlation_id, agent);
        Ok(CreatedTask { task, handoff })
    }

    /// The store's filter for a checked query: cursors resolved to `seq`
    /// (since first, then before, as MemPalace reports them).
    fn event_filter(&self, query: &EventQuery) -> EngineResult<EventFilter> {
        let anchor = |field: &'static str, id: Option<&Routing>| -> EngineResult<Option<i64>> {
            let Some(id) = id else { return Ok(None) };
            match self.store().event(self.workspace(), id.as_str())? {
                Some(stored) => Ok(Some(stored.seq)),
                None => Err(EngineError::from(CoordinationError::anchor_not_found(field, id.as_str()))),
            }
        };
        let text = |value: &Option<Routing>| value.as_ref().map(|v| v.as_str().to_string());
        Ok(EventFilter {
            after_seq: anchor("since_event_id", query.since_event_id.as_ref())?,
            before_seq: anchor("before_event_id", query.before_event_id.as_ref())?,
            stream: text(&query.stream),
            room: text(&query.room),
            topic: text(&query.topic),
            event_type: query.event_type.as_ref().map(|t| t.as_str().to_string()),
            to_agent: text(&query.to_agent),
            writer: text(&query.writer),
            correlation_id: text(&query.correlation_id),
            status: query.status,
            created_since: query.since_created_at,
            newest_first: query.order == mempalace_core::coordination::Order::Desc,
            limit: query.limit,
        })
    }
}

/// 64 random bits for ids and jitter. The standard library's `RandomState`
/// is seeded from the operating system's generator; a process-wide counter
/// and the time make every call differ. Ids need uniqueness, not secrecy,
/// so this spares a random-number crate; the store's key on
/// `(workspace_id, id)` catches the astronomically unlikely collision.
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(CALLS.fetch_add(1, Ordering::Relaxed));
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or(Duration::ZERO);
    hasher.write_u128(since_epoch.as_nanos());
    hasher.write_u32(std::process::id());
    hasher.finish()
}

/// A uniform number in [0, 1].
fn jitter() -> f64 {
    (random_u64() >> 11) as f64 / (1_u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_bits_differ_between_calls_and_jitter_stays_in_range() {
        let draws: std::collections::HashSet<u64> = (0..1_000).map(|_| random_u64()).collect();
        assert_eq!(draws.len(), 1_000);
        assert!((0..1_000).map(|_| jitter()).all(|j| (0.0..=1.0).contains(&j)));
    }
}
