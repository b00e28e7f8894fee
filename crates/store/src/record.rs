//! Values the store traits take and return besides the domain records.
//!
//! Wire formats (JSONL export lines, MCP and REST bodies) are not defined
//! here: the surfaces convert these values by hand.

use std::collections::BTreeMap;

use mempalace_core::centroid::Centroid;
use mempalace_core::coordination::{Artifact, Event, EventStatus};
use mempalace_core::kg::{Entity, Triple};
use mempalace_core::session::{EpisodicSummary, Session};
use mempalace_core::tunnel::Tunnel;
use mempalace_core::{Drawer, DrawerId, DrawerState, DrawerStatus, Identity, PipelineTier, Timestamp, WorkspaceId};

/// What happened to one drawer handed to `put_drawers`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutOutcome {
    /// It was new and is now stored.
    Inserted,
    /// A drawer with that id was already stored; nothing changed.
    Existing,
}

/// Visible drawers of one wing, with their rooms.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct WingCount {
    /// Drawers in the wing.
    pub drawers: u64,
    /// Drawers per room.
    pub rooms: BTreeMap<String, u64>,
}

/// The wing → room hierarchy with counts of visible drawers.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Taxonomy {
    /// Visible drawers in the workspace.
    pub total_drawers: u64,
    /// Per wing, in name order.
    pub wings: BTreeMap<String, WingCount>,
}

impl Taxonomy {
    /// Adds `count` drawers to a (wing, room) cell.
    pub fn add(&mut self, wing: &str, room: &str, count: u64) {
        if count == 0 {
            return;
        }
        self.total_drawers += count;
        let wing_count = self.wings.entry(wing.to_string()).or_default();
        wing_count.drawers += count;
        *wing_count.rooms.entry(room.to_string()).or_default() += count;
    }

    /// Number of distinct rooms (a room name in two wings counts twice).
    pub fn room_count(&self) -> usize {
        self.wings.values().map(|wing| wing.rooms.len()).sum()
    }
}

/// The identity text of a workspace and when it was set.
#[derive(Debug, Clone, PartialEq)]
pub struct IdentityRecord {
    /// Tenant.
    pub workspace_id: WorkspaceId,
    /// The text.
    pub identity: Identity,
    /// When it was last set.
    pub updated_at: Timestamp,
}

/// One record of a whole-palace export or import.
#[derive(Debug, Clone, PartialEq)]
pub enum PalaceRecord {
    /// A drawer, with tags, embedding and all metadata.
    Drawer(Box<Drawer>),
    /// A knowledge-graph entity.
    Entity(Entity),
    /// A knowledge-graph fact.
    Triple(Triple),
    /// A workspace's identity text.
    Identity(IdentityRecord),
    /// An agent session.
    Session(Session),
    /// The summary of an ended session.
    EpisodicSummary(EpisodicSummary),
    /// An explicit tunnel.
    Tunnel(Tunnel),
    /// A memory-type centroid.
    Centroid(Centroid),
    /// A coordination artifact (before the events that reference it).
    Artifact(Box<Artifact>),
    /// A coordination event. Its place in the order (`seq`) is not part of
    /// the record: an import appends events in the order it reads them.
    Event(Box<Event>),
    /// An entity merged into another, with what the merge moved (after the
    /// entities and facts it names, before the drawers whose mentions it
    /// resolves).
    EntityAlias(Box<AliasRecord>),
}

/// An entity alias as exported: the merge and exactly what it moved, so an
/// imported palace can unmerge it as the original could.
#[derive(Debug, Clone, PartialEq)]
pub struct AliasRecord {
    /// The merge.
    pub alias: mempalace_core::kg::EntityAlias,
    /// Facts and drawers the merge moved to the canonical entity.
    pub moves: Vec<AliasMove>,
}

/// One thing a merge moved.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct AliasMove {
    /// What moved.
    pub kind: AliasMoveKind,
    /// The fact's or drawer's id.
    pub ref_id: String,
}

/// What a merge moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AliasMoveKind {
    /// A fact whose subject was the alias.
    Subject,
    /// A fact whose object was the alias.
    Object,
    /// A drawer's mention of the alias.
    Mention,
}

impl AliasMoveKind {
    /// Stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Subject => "subject",
            Self::Object => "object",
            Self::Mention => "mention",
        }
    }

    /// Reads the stored form.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "subject" => Some(Self::Subject),
            "object" => Some(Self::Object),
            "mention" => Some(Self::Mention),
            _ => None,
        }
    }
}

/// How many records of each kind an import wrote or found already present.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecordCounts {
    /// Records inserted.
    pub inserted: u64,
    /// Records whose key was already present (left untouched).
    pub existing: u64,
}

impl std::ops::AddAssign for RecordCounts {
    fn add_assign(&mut self, other: Self) {
        self.inserted += other.inserted;
        self.existing += other.existing;
    }
}

/// Where a palace lives and how big it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorageInfo {
    /// Backend name ("sqlite", "postgres").
    pub backend: &'static str,
    /// File path or connection target (without password).
    pub location: String,
    /// Schema version applied.
    pub schema_version: u32,
    /// Bytes on disk (database plus write-ahead log), when known.
    pub size_bytes: Option<u64>,
}

/// One line of a `verify` / `doctor` report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HealthCheck {
    /// Short stable name, e.g. `integrity`, `lexical_index`, `room_counts`.
    pub name: String,
    /// Whether the check passed.
    pub ok: bool,
    /// Whether a failure concerns derived data only (and so can be rebuilt).
    pub derived: bool,
    /// Human-readable detail: counts compared, engine message.
    pub detail: String,
}

/// Which drawers a query may return. Empty lists mean "any"; by default
/// only active drawers are visible.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DrawerFilter {
    /// Any of these wings.
    pub wings: Vec<String>,
    /// Any of these rooms.
    pub rooms: Vec<String>,
    /// Any of these halls.
    pub halls: Vec<String>,
    /// Any of these memory types.
    pub memory_types: Vec<mempalace_core::MemoryType>,
    /// Carrying at least one of these tags.
    pub tags: Vec<String>,
    /// Filed at or after.
    pub filed_after: Option<Timestamp>,
    /// Filed at or before.
    pub filed_before: Option<Timestamp>,
    /// Confidence at least.
    pub min_confidence: Option<f64>,
    /// The user asking: drawers owned by another user are invisible to them
    /// (Platypus user scope). `None` sees only drawers without an owner.
    pub viewer: Option<String>,
    /// Filed by this agent or tool (`added_by`).
    pub added_by: Option<String>,
    /// From this session.
    pub session_id: Option<String>,
    /// From this source file.
    pub source_file: Option<String>,
    /// Also superseded and invalidated drawers.
    pub include_hidden: bool,
}

/// A change an in-memory vector index must apply.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorChange {
    /// The drawer.
    pub id: DrawerId,
    /// The revision of the change.
    pub rev: i64,
    /// Its vector of the asked model when it is active and has one; `None`
    /// means "not (or no longer) in the index".
    pub vector: Option<Vec<f32>>,
    /// The drawer's wing (empty for a deleted drawer), so an index can
    /// restrict a search to places without asking the store for ids.
    pub wing: String,
    /// The drawer's room (empty for a deleted drawer).
    pub room: String,
}

/// Which facts about an entity a query wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Facts where the entity is the subject.
    Outgoing,
    /// Facts where the entity is the object.
    Incoming,
    /// Both.
    Both,
}

/// Counts of the knowledge graph of a workspace.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KgStats {
    /// Entities.
    pub entities: u64,
    /// Facts.
    pub triples: u64,
    /// Facts without an end.
    pub current: u64,
    /// Facts that ended.
    pub expired: u64,
    /// Facts per predicate, most common first.
    pub predicates: Vec<(String, u64)>,
}

/// What `add_triple` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TripleOutcome {
    /// A new fact was stored under this id.
    Added(String),
    /// An identical open fact exists already; its id.
    Existing(String),
    /// An identical open fact without a start existed; it was replaced by
    /// this one, which carries the start given (the engine's outcome when a
    /// date is added to an undated, e.g. auto-extracted, fact).
    Dated {
        /// The new fact.
        id: String,
        /// The undated fact it replaced.
        replaced: String,
    },
}

impl TripleOutcome {
    /// The id of the fact that holds now.
    pub fn id(&self) -> &str {
        match self {
            TripleOutcome::Added(id) | TripleOutcome::Existing(id) | TripleOutcome::Dated { id, .. } => id,
        }
    }
}

/// Visible drawers of one (wing, room, hall) cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HallCount {
    /// Wing.
    pub wing: String,
    /// Room.
    pub room: String,
    /// Hall.
    pub hall: String,
    /// Drawers.
    pub drawers: u64,
}

/// Which coordination events a listing returns: every filter given must
/// hold (equality); the order is the store's append order (`seq`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct EventFilter {
    /// Stream.
    pub stream: Option<String>,
    /// Room.
    pub room: Option<String>,
    /// Topic.
    pub topic: Option<String>,
    /// Event type.
    pub event_type: Option<String>,
    /// Recipient: events to this agent or to everyone (`*`).
    pub to_agent: Option<String>,
    /// Writer (`from_agent`).
    pub writer: Option<String>,
    /// Correlation id.
    pub correlation_id: Option<String>,
    /// Status.
    pub status: Option<EventStatus>,
    /// Created at or after.
    pub created_since: Option<Timestamp>,
    /// Only events with a larger `seq` (a cursor).
    pub after_seq: Option<i64>,
    /// Only events with a smaller `seq`.
    pub before_seq: Option<i64>,
    /// Newest first instead of oldest first.
    pub newest_first: bool,
    /// Most events (0 returns none).
    pub limit: usize,
}

/// What `append_event` did.
#[derive(Debug, Clone, PartialEq)]
pub enum AppendOutcome {
    /// The event is stored with this `seq`; readers see it after every
    /// event with a smaller `seq` (in its workspace).
    Appended(i64),
    /// The event references an artifact the workspace does not hold (the
    /// first such id, in the event's order); nothing was written.
    UnknownArtifact(String),
}

/// A session as its drawers show it (`StoreRead::session_activity`): the
/// conversations consolidation summarises, whatever filed them (a hook, a
/// mined transcript, an MCP session).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionActivity {
    /// The drawers' `session_id`.
    pub session_id: String,
    /// Its active drawers.
    pub drawers: u64,
    /// When its first active drawer was filed.
    pub first_filed_at: Timestamp,
    /// When its latest active drawer was filed.
    pub last_filed_at: Timestamp,
    /// When one of its active drawers last changed in the palace
    /// (`updated_at`): a conversation mined today from an old export is
    /// recent by this, whatever its messages' dates.
    pub last_updated_at: Timestamp,
    /// The owner of its drawers (the greatest one when they differ).
    pub owner_user_id: Option<String>,
    /// The agent that filed them (the greatest one when they differ).
    pub agent: Option<String>,
}

/// A drawer `prune` would archive (`StoreRead::prune_candidates`).
#[derive(Debug, Clone, PartialEq)]
pub struct PruneCandidate {
    /// The drawer.
    pub id: DrawerId,
    /// Its importance now.
    pub importance: f64,
    /// How often it was returned.
    pub access_count: u64,
}

/// Where a workspace's drawers are in the cold path, and the latest run of
/// each periodic job (`StoreRead::pipeline_counts`).
///
/// Every drawer counts, whatever its status. Zero counts are included: each
/// list holds every value of its vocabulary once, in the vocabulary's
/// order (`ALL`), so the shape never depends on the data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineCounts {
    /// Drawers per cold-path state.
    pub by_state: Vec<(DrawerState, u64)>,
    /// Drawers per pipeline tier.
    pub by_tier: Vec<(PipelineTier, u64)>,
    /// Drawers per status.
    pub by_status: Vec<(DrawerStatus, u64)>,
    /// Raw drawers under a live claim (`claimed_until` not before the time
    /// asked about): what workers are processing now.
    pub claimed: u64,
    /// Active drawers in wing `memories` (extracted memories).
    pub memories: u64,
    /// The latest run (highest tick) of each periodic job, palace-wide, in
    /// job-name order. Jobs that never ran are absent.
    pub last_runs: Vec<JobRun>,
}

impl Default for PipelineCounts {
    fn default() -> Self {
        Self {
            by_state: DrawerState::ALL.iter().map(|state| (*state, 0)).collect(),
            by_tier: PipelineTier::ALL.iter().map(|tier| (*tier, 0)).collect(),
            by_status: DrawerStatus::ALL.iter().map(|status| (*status, 0)).collect(),
            claimed: 0,
            memories: 0,
            last_runs: Vec::new(),
        }
    }
}

impl PipelineCounts {
    /// Adds `count` drawers of one (state, tier, status) group: backends
    /// answer one `GROUP BY state, pipeline_tier, status` and fold it here.
    pub fn add_group(&mut self, state: DrawerState, tier: PipelineTier, status: DrawerStatus, count: u64) {
        fn bump<T: PartialEq>(list: &mut [(T, u64)], key: T, count: u64) {
            if let Some(entry) = list.iter_mut().find(|(k, _)| *k == key) {
                entry.1 += count;
            }
        }
        bump(&mut self.by_state, state, count);
        bump(&mut self.by_tier, tier, count);
        bump(&mut self.by_status, status, count);
    }

    /// Drawers in `state`.
    pub fn state(&self, state: DrawerState) -> u64 {
        self.by_state.iter().find(|(s, _)| *s == state).map_or(0, |(_, n)| *n)
    }

    /// Drawers of `tier`.
    pub fn tier(&self, tier: PipelineTier) -> u64 {
        self.by_tier.iter().find(|(t, _)| *t == tier).map_or(0, |(_, n)| *n)
    }

    /// Drawers with `status`.
    pub fn status(&self, status: DrawerStatus) -> u64 {
        self.by_status.iter().find(|(s, _)| *s == status).map_or(0, |(_, n)| *n)
    }
}

/// One recorded run of a periodic job (a `(job, tick)` row of
/// `StoreWrite::try_start_job`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRun {
    /// Job name (`maintain`, …).
    pub job: String,
    /// Wall-clock tick the run was for.
    pub tick: i64,
    /// Who ran it.
    pub holder: String,
    /// When it started.
    pub started_at: Timestamp,
    /// Whether its holder ended it with `StoreWrite::finish_job`. A run
    /// whose holder died stays unfinished.
    pub finished: bool,
}

/// What [`crate::StoreWrite::merge_entity`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    /// The alias is merged: its facts and mentions moved (and were
    /// recorded, so `unmerge_entity` can move exactly them back).
    Merged {
        /// Facts whose subject or object moved (a fact naming the alias on
        /// both sides counts once).
        triples: u64,
        /// Drawers whose mention moved.
        mentions: u64,
    },
    /// The alias was already merged into this canonical entity: nothing changed.
    AlreadyMerged,
    /// The alias is merged into another entity: unmerge it first.
    MergedElsewhere {
        /// Where it is merged now.
        canonical_id: String,
    },
    /// One of the two entities does not exist (or they are the same).
    Missing {
        /// The id that was not found.
        id: String,
    },
}

/// What [`crate::StoreWrite::unmerge_entity`] restored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmerged {
    /// The entity it had been merged into.
    pub canonical_id: String,
    /// Facts moved back to the restored entity.
    pub triples: u64,
    /// Drawers that mention the restored entity again (mentions are
    /// derived from drawer names, so drawers filed since the merge that
    /// name the alias count too).
    pub mentions: u64,
}

/// How much an entity is used (`StoreRead::entity_usage`): what decides
/// which of several duplicates is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntityUsage {
    /// Entity id.
    pub id: String,
    /// Facts naming it as subject or object.
    pub triples: u64,
    /// Drawers mentioning it.
    pub mentions: u64,
}

/// Which drawers train a centroid (`StoreRead::centroid_samples`).
#[derive(Debug, Clone, PartialEq)]
pub enum CentroidSamples {
    /// Active, processed drawers of this type labelled by the language
    /// model (`pipeline_tier = llm`, never `centroid`: seed 0's feedback
    /// loop guard), filed at or after `since`.
    MemoryType {
        /// The type.
        memory_type: mempalace_core::MemoryType,
        /// Oldest filing time included.
        since: Timestamp,
    },
    /// Active drawers of one room, whatever their tier.
    Room {
        /// Wing.
        wing: String,
        /// Room.
        room: String,
    },
}
