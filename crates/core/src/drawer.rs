//! The drawer: one verbatim memory chunk filed at wing → room → hall.
//!
//! This module holds the record and the small value types whose invariants
//! are checked once, at construction (`Content`, `Importance`, `Confidence`),
//! plus the closed vocabularies (memory type, pipeline tier, state, status,
//! perception type). How a drawer is stored, indexed or rendered belongs to
//! the store and the surfaces, not here.

use std::fmt;

use serde_json::{Map, Value};

use crate::error::ValidationError;
use crate::id::{ContentHash, DrawerId, WorkspaceId};
use crate::name::{Hall, Room, Wing};
use crate::time::Timestamp;

/// Drawer text: non-empty (after trimming) and at most
/// [`Content::MAX_CHARS`] characters. SPEC §2, seed 0 §6 "Workspace limits".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Content(String);

impl Content {
    /// Longest drawer text, in characters (seed 0 §6).
    pub const MAX_CHARS: usize = 10_000;

    /// Checks and wraps drawer text. The text is kept verbatim (no trimming):
    /// a drawer stores exactly what was said.
    pub fn parse(text: impl Into<String>) -> Result<Self, ValidationError> {
        let text = text.into();
        if text.trim().is_empty() {
            return Err(ValidationError::Empty {
                what: "drawer text",
                hint: "pass the memory text as an argument, or `-` to read it from stdin",
            });
        }
        let len = text.chars().count();
        if len > Self::MAX_CHARS {
            return Err(ValidationError::TooLong {
                what: "drawer text",
                len,
                max: Self::MAX_CHARS,
                hint: "Split it into several drawers, or file a whole document with `mempalace mine`.",
            });
        }
        Ok(Self(text))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Consumes the wrapper.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for Content {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Priority of a memory, 0–5 (seed 0 §2; default 3.0, `MaxImportance` 5.0).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Importance(f64);

impl Importance {
    /// The importance a drawer gets when nobody says otherwise (seed 0 §10).
    pub const DEFAULT: Importance = Importance(3.0);
    /// Upper bound (seed 0 §10 `MaxImportance`).
    pub const MAX: f64 = 5.0;

    /// Checks the range 0–5.
    pub fn new(value: f64) -> Result<Self, ValidationError> {
        if !(0.0..=Self::MAX).contains(&value) {
            return Err(ValidationError::OutOfRange { what: "importance", value, min: 0.0, max: Self::MAX });
        }
        Ok(Self(value))
    }

    /// The value.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl Default for Importance {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// Confidence in a memory or fact, 0–1 (robotmem; default 1.0 for text a
/// user or agent filed explicitly).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Confidence(f64);

impl Confidence {
    /// Full confidence.
    pub const CERTAIN: Confidence = Confidence(1.0);

    /// Checks the range 0–1.
    pub fn new(value: f64) -> Result<Self, ValidationError> {
        if !(0.0..=1.0).contains(&value) {
            return Err(ValidationError::OutOfRange { what: "confidence", value, min: 0.0, max: 1.0 });
        }
        Ok(Self(value))
    }

    /// The value.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl Default for Confidence {
    fn default() -> Self {
        Self::CERTAIN
    }
}

vocabulary! {
    /// What kind of memory a drawer holds (seed 0 §4).
    MemoryType, "memory type" {
        /// Architecture choices, technology picks, trade-offs.
        Decision => "decision",
        /// Personal or team style rules.
        Preference => "preference",
        /// Achievements, breakthroughs, completed work.
        Milestone => "milestone",
        /// Bugs, errors, root causes and their fixes.
        Problem => "problem",
        /// Personal feelings, team morale moments.
        Emotional => "emotional",
        /// Factual statements about the user, project or domain.
        Fact => "fact",
        /// Pending or in-progress work items.
        Task => "task",
    }
}

vocabulary! {
    /// Which classifier made the final type decision (seed 0 §4).
    PipelineTier, "pipeline tier" {
        /// Regex confidence above the high gate.
        Heuristic => "heuristic",
        /// Nearest type centroid above cosine 0.85.
        Centroid => "centroid",
        /// Left for (or decided by) the cold LLM pass.
        Llm => "llm",
    }
}

vocabulary! {
    /// Where a drawer is in the cold pipeline (seed 0 §2 state machine).
    DrawerState, "drawer state" {
        /// Waiting for the cold path.
        Raw => "raw",
        /// Classified; done.
        Processed => "processed",
        /// Absorbed by a cluster canonical (`cluster_id`).
        Merged => "merged",
        /// The cold path gave up after its retries.
        Failed => "failed",
    }
}

vocabulary! {
    /// Visibility of a drawer (robotmem). Only `active` drawers are shown by
    /// default; the others are kept for history and review.
    DrawerStatus, "drawer status" {
        /// Shown in searches and counts.
        Active => "active",
        /// Replaced by a newer drawer (`superseded_by`).
        Superseded => "superseded",
        /// Soft-deleted, with a reason.
        Invalidated => "invalidated",
        /// Pruned: importance decayed below the floor with few accesses
        /// (kept whole, restorable with `restore`).
        Archived => "archived",
    }
}

vocabulary! {
    /// The sense a perception drawer records (robotmem `save_perception`).
    PerceptionType, "perception type" {
        /// Camera or other image data.
        Visual => "visual",
        /// Touch and force sensing.
        Tactile => "tactile",
        /// Sound.
        Auditory => "auditory",
        /// Joint positions and body state.
        Proprioceptive => "proprioceptive",
        /// A recorded procedure or trajectory.
        Procedural => "procedural",
    }
}

vocabulary! {
    /// Who attached a tag to a drawer.
    TagSource, "tag source" {
        /// Inferred by the classifier.
        Auto => "auto",
        /// Set by a user or agent.
        User => "user",
    }
}

/// A tag on a drawer.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DrawerTag {
    /// Tag name, from the taxonomy or user-defined.
    pub tag: String,
    /// Who attached it.
    pub source: TagSource,
}

/// Raw sensor data attached to a perception drawer.
#[derive(Debug, Clone, PartialEq)]
pub struct Perception {
    /// Which sense.
    pub perception_type: PerceptionType,
    /// Raw bytes, opaque to us.
    pub data: Option<Vec<u8>>,
    /// Format and units, free text or JSON.
    pub metadata: Option<String>,
}

/// An embedding vector and the model that made it. Vectors of different
/// models are never compared (SPEC §4).
#[derive(Debug, Clone, PartialEq)]
pub struct Embedding {
    /// The model id, e.g. `all-MiniLM-L6-v2`.
    pub model: String,
    /// The vector, L2-normalised by the provider.
    pub vector: Vec<f32>,
}

/// One verbatim memory chunk with everything we know about it (SPEC §2).
#[derive(Debug, Clone, PartialEq)]
pub struct Drawer {
    /// Tenant; every key includes it.
    pub workspace_id: WorkspaceId,
    /// Deterministic id (see [`crate::id::drawer_id`]).
    pub id: DrawerId,
    /// Top-level category.
    pub wing: Wing,
    /// Topic within the wing.
    pub room: Room,
    /// Optional finer grouping (for diaries: the agent name).
    pub hall: Option<Hall>,
    /// The verbatim text.
    pub content: Content,
    /// SHA-256 of the text, for dedup and the embedding cache.
    pub content_hash: ContentHash,
    /// The vector, when one has been computed.
    pub embedding: Option<Embedding>,
    /// 0–5.
    pub importance: Importance,
    /// `None` until a classifier has decided.
    pub memory_type: Option<MemoryType>,
    /// Which classifier decided.
    pub pipeline_tier: PipelineTier,
    /// Cold-pipeline state.
    pub state: DrawerState,
    /// One-line summary (cold path or extractive).
    pub summary: Option<String>,
    /// Where the text came from (file path, URL, tool).
    pub source_file: Option<String>,
    /// Who filed it ("cli", "mempalace", an agent name, "auto-ingest").
    pub added_by: String,
    /// Agent id for affinity ranking.
    pub added_by_agent: Option<String>,
    /// When set, only this user sees the drawer (Platypus user scope).
    pub owner_user_id: Option<String>,
    /// When it was filed.
    pub filed_at: Timestamp,
    /// Last change of any field other than access tracking.
    pub updated_at: Timestamp,
    /// Last time a retrieval returned it.
    pub last_accessed_at: Option<Timestamp>,
    /// How many retrievals returned it.
    pub access_count: u64,
    /// The newer drawer that replaced this one.
    pub superseded_by: Option<DrawerId>,
    /// Canonical drawer of the cluster this one was merged into.
    pub cluster_id: Option<DrawerId>,
    /// Cold-path failures so far (max 3).
    pub retry_count: u32,
    /// Entities linked from this drawer.
    pub entity_count: u32,
    /// Triples extracted from this drawer.
    pub triple_count: u32,
    /// 0–1.
    pub confidence: Confidence,
    /// Per-day decay rate (robotmem, default 0.01).
    pub decay_rate: f64,
    /// Visibility.
    pub status: DrawerStatus,
    /// Why it was superseded or invalidated.
    pub status_reason: Option<String>,
    /// Session that produced it.
    pub session_id: Option<String>,
    /// Free-form JSON object (robotmem context: params, spatial, robot, task;
    /// also any metadata key we have no column for).
    pub context: Map<String, Value>,
    /// Tags with their source.
    pub tags: Vec<DrawerTag>,
    /// Sensor data, for perception drawers.
    pub perception: Option<Perception>,
    /// Modification time of `source_file` when mined, in Unix seconds.
    pub source_mtime: Option<f64>,
    /// Position of this chunk within its source.
    pub chunk_index: Option<u32>,
    /// First line of the chunk in its source (1-based).
    pub line_start: Option<u32>,
    /// Last line of the chunk in its source (1-based, inclusive).
    pub line_end: Option<u32>,
    /// The date the content is about (e.g. a conversation's date), free text
    /// as given, normally `YYYY-MM-DD`.
    pub content_date: Option<String>,
    /// Entity names mentioned.
    pub entities: Vec<String>,
}

impl Drawer {
    /// Default per-day decay (robotmem `decay_rate`).
    pub const DEFAULT_DECAY_RATE: f64 = 0.01;

    /// A new active drawer with defaults for everything not given: importance
    /// 3.0, confidence 1.0, state raw / tier llm (the seed's defaults: the cold
    /// path may still classify it), no embedding.
    pub fn new(
        workspace_id: WorkspaceId,
        wing: Wing,
        room: Room,
        content: Content,
        added_by: impl Into<String>,
        now: Timestamp,
    ) -> Self {
        let id = crate::id::drawer_id(&wing, &room, &content);
        let content_hash = ContentHash::of(content.as_str());
        Self {
            workspace_id,
            id,
            wing,
            room,
            hall: None,
            content,
            content_hash,
            embedding: None,
            importance: Importance::DEFAULT,
            memory_type: None,
            pipeline_tier: PipelineTier::Llm,
            state: DrawerState::Raw,
            summary: None,
            source_file: None,
            added_by: added_by.into(),
            added_by_agent: None,
            owner_user_id: None,
            filed_at: now,
            updated_at: now,
            last_accessed_at: None,
            access_count: 0,
            superseded_by: None,
            cluster_id: None,
            retry_count: 0,
            entity_count: 0,
            triple_count: 0,
            confidence: Confidence::CERTAIN,
            decay_rate: Self::DEFAULT_DECAY_RATE,
            status: DrawerStatus::Active,
            status_reason: None,
            session_id: None,
            context: Map::new(),
            tags: Vec::new(),
            perception: None,
            source_mtime: None,
            chunk_index: None,
            line_start: None,
            line_end: None,
            content_date: None,
            entities: Vec::new(),
        }
    }

    /// Whether searches and counts show this drawer by default. `status`
    /// alone decides: superseding a drawer also sets its status.
    pub fn is_visible(&self) -> bool {
        self.status == DrawerStatus::Active
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_refuses_blank_text() {
        assert!(matches!(Content::parse("  \n\t"), Err(ValidationError::Empty { .. })));
        assert!(matches!(Content::parse(""), Err(ValidationError::Empty { .. })));
    }

    #[test]
    fn content_limit_counts_characters_not_bytes() {
        let exactly = "é".repeat(Content::MAX_CHARS);
        assert!(exactly.len() > Content::MAX_CHARS);
        assert!(Content::parse(exactly).is_ok());
        let over = "a".repeat(Content::MAX_CHARS + 1);
        let err = Content::parse(over).unwrap_err();
        assert!(err.to_string().contains("10001 characters"), "{err}");
    }

    #[test]
    fn content_is_kept_verbatim() {
        let text = "  leading and trailing space stays \n";
        assert_eq!(Content::parse(text).unwrap().as_str(), text);
    }

    #[test]
    fn importance_and_confidence_enforce_their_ranges() {
        assert!(Importance::new(0.0).is_ok());
        assert!(Importance::new(5.0).is_ok());
        assert!(Importance::new(5.01).is_err());
        assert!(Importance::new(-0.1).is_err());
        assert!(Importance::new(f64::NAN).is_err());
        assert!(Confidence::new(1.0).is_ok());
        assert!(Confidence::new(1.5).is_err());
        assert_eq!(Importance::default().get(), 3.0);
    }

    #[test]
    fn vocabularies_round_trip_and_list_alternatives() {
        for memory_type in MemoryType::ALL {
            assert_eq!(memory_type.as_str().parse::<MemoryType>().unwrap(), *memory_type);
        }
        assert_eq!(" Decision ".parse::<MemoryType>().unwrap(), MemoryType::Decision);
        let err = "idea".parse::<MemoryType>().unwrap_err().to_string();
        assert!(err.contains("idea") && err.contains("decision"), "{err}");
        assert_eq!(MemoryType::ALL.len(), 7);
    }
}
