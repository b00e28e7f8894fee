//! Sessions and their episodic summaries (SPEC §2; robotmem sessions,
//! GoClaw episodic tier).
//!
//! Only the records live here; summarising a session and expiring summaries
//! are engine jobs.

use serde_json::{Map, Value};

use crate::id::WorkspaceId;
use crate::time::Timestamp;

vocabulary! {
    /// Whether a session is still running.
    SessionStatus, "session status" {
        /// Started and not yet ended.
        Active => "active",
        /// Ended; eligible for consolidation.
        Ended => "ended",
    }
}

/// One agent session (a conversation, an episode of a robot task).
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// Tenant.
    pub workspace_id: WorkspaceId,
    /// External id, as the harness names the session.
    pub id: String,
    /// Agent that ran it.
    pub agent: Option<String>,
    /// User it ran for.
    pub user_id: Option<String>,
    /// Context JSON object (at most [`Session::MAX_CONTEXT_BYTES`] serialised).
    pub context: Map<String, Value>,
    /// Active or ended.
    pub status: SessionStatus,
    /// Episode success score, 0–1, when reported.
    pub outcome_score: Option<f64>,
    /// How many times the session id was reused (robotmem `session_count`).
    pub session_count: u32,
    /// Start time.
    pub started_at: Timestamp,
    /// End time, when ended.
    pub ended_at: Option<Timestamp>,
}

impl Session {
    /// Largest serialised context (robotmem: 64 KB).
    pub const MAX_CONTEXT_BYTES: usize = 64 * 1024;
}

/// The summary of one ended session (GoClaw episodic tier).
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodicSummary {
    /// Tenant.
    pub workspace_id: WorkspaceId,
    /// Stable id.
    pub id: String,
    /// Session summarised.
    pub session_id: String,
    /// Dedup key (`session:compaction`), so a session is summarised once.
    pub source_id: Option<String>,
    /// Agent of the session.
    pub agent: Option<String>,
    /// User of the session.
    pub user_id: Option<String>,
    /// The summary text.
    pub summary: String,
    /// One extractive sentence, about 200 characters, for fast injection.
    pub l0_abstract: String,
    /// Capitalised proper-noun phrases, for lexical boosting.
    pub key_topics: Vec<String>,
    /// Creation time.
    pub created_at: Timestamp,
    /// TTL end (default 90 days after creation).
    pub expires_at: Option<Timestamp>,
    /// When the dreaming pass folded it into a long-term note.
    pub promoted_at: Option<Timestamp>,
}
