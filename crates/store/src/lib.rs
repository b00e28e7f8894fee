//! The storage abstraction of mempalace.
//!
//! A palace is stored by one backend (embedded SQLite, or PostgreSQL for
//! scale-out) behind two traits: [`StoreRead`] for queries and [`StoreWrite`]
//! for changes. The engine holds a `dyn Store`; searches get only the read
//! half. Every method is bound to one workspace (or says in its name that it
//! spans the palace), so no call can mix tenants.
//!
//! The store is the single source of truth. Derived structures (lexical
//! index, counts, vector indexes) are the backend's to keep in step inside
//! the same transaction, to verify with [`StoreWrite::verify`] and to rebuild
//! with [`StoreWrite::rebuild_derived`]; none of them ever holds data the rows
//! do not.
//!
//! Not here: ranking, chunking, classification (core and engine), transport
//! formats (the binary's surfaces).

pub mod directory;
pub mod error;
pub mod location;
pub mod record;
pub mod sql;

#[cfg(feature = "conformance")]
pub mod conformance;

pub use directory::Directory;
pub use error::{StoreError, StoreResult};
pub use record::{
    AliasMove, AliasMoveKind, AliasRecord, AppendOutcome, CentroidSamples, Direction, DrawerFilter, EntityUsage,
    EventFilter, HallCount, HealthCheck, IdentityRecord, JobRun, KgStats, MergeOutcome, PalaceRecord, PipelineCounts,
    PruneCandidate, PutOutcome, RecordCounts, SessionActivity, StorageInfo, Taxonomy, TripleOutcome, Unmerged,
    VectorChange, WingCount,
};

use mempalace_core::centroid::{Centroid, RoomCentroid};
use mempalace_core::coordination::{Artifact, Event, StoredEvent};
use mempalace_core::kg::{Entity, EntityAlias, Triple};
use mempalace_core::session::{EpisodicSummary, Session};
use mempalace_core::tunnel::Tunnel;
use std::collections::HashMap;

/// Importance an access adds (see [`StoreWrite::touch_access`]).
pub const REINFORCE_STEP: f64 = 0.1;
/// An access reinforces a drawer at most once in this long.
pub const REINFORCE_EVERY: chrono::TimeDelta = chrono::TimeDelta::days(1);

use mempalace_core::{
    Content, ContentHash, Drawer, DrawerId, DrawerStatus, Embedding, Identity, Timestamp, WorkspaceId,
};

/// Queries. Implementations answer from committed data only, and every call
/// sees every write committed before it started, by any process.
pub trait StoreRead: Send + Sync {
    /// Where the palace lives, its schema version and size.
    fn info(&self) -> StoreResult<StorageInfo>;

    /// Workspaces that hold any data, in id order.
    fn workspaces(&self) -> StoreResult<Vec<WorkspaceId>>;

    /// One drawer, whatever its status.
    fn drawer(&self, workspace: &WorkspaceId, id: &DrawerId) -> StoreResult<Option<Drawer>>;

    /// Several drawers, in the order of `ids`; missing ids are left out.
    fn drawers(&self, workspace: &WorkspaceId, ids: &[DrawerId]) -> StoreResult<Vec<Drawer>>;

    /// A page of drawers of any status in id order, starting after `after`.
    /// Used by export and migrations.
    fn scan_drawers(&self, workspace: &WorkspaceId, after: Option<&DrawerId>, limit: usize)
    -> StoreResult<Vec<Drawer>>;

    /// Counts of visible (active) drawers per wing and room, from the
    /// aggregate, never from a scan of the drawers.
    fn taxonomy(&self, workspace: &WorkspaceId) -> StoreResult<Taxonomy>;

    /// The workspace's identity text.
    fn identity(&self, workspace: &WorkspaceId) -> StoreResult<Option<IdentityRecord>>;

    /// Every entity of the workspace, in id order.
    fn entities(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Entity>>;

    /// Every triple of the workspace, in id order.
    fn triples(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Triple>>;

    /// Every session of the workspace, in id order.
    fn sessions(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Session>>;

    /// Every episodic summary of the workspace, in id order.
    fn episodic_summaries(&self, workspace: &WorkspaceId) -> StoreResult<Vec<EpisodicSummary>>;

    /// Every explicit tunnel of the workspace, in id order.
    fn tunnels(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Tunnel>>;

    /// Every memory-type centroid of the workspace.
    fn centroids(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Centroid>>;

    /// Known vectors of `model` for texts with these hashes: from drawers
    /// of the workspace first, then from the embedding cache. Hashes with no
    /// known vector are absent from the map. A drawer whose context names a
    /// preceding drawer (`exchange::PRECEDED_BY`) never answers: its vector
    /// was made from both texts, not from its content alone.
    fn embeddings_by_hash(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        hashes: &[ContentHash],
    ) -> StoreResult<HashMap<ContentHash, Vec<f32>>>;

    /// Up to `limit` drawers (any status) without a vector of `model`, in id
    /// order: what re-embedding still has to do.
    fn drawers_missing_embedding(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        limit: usize,
    ) -> StoreResult<Vec<(DrawerId, Content)>>;

    /// Drawers per embedding model (`None`: no vector yet), all statuses.
    fn embedding_models(&self, workspace: &WorkspaceId) -> StoreResult<Vec<(Option<String>, u64)>>;

    /// BM25 search over the lexical index: drawers matching any of `terms`
    /// (already segmented and lowercased, see `core::lexical`) that pass
    /// `filter`, best first, with a score where higher is better.
    fn lexical_search(
        &self,
        workspace: &WorkspaceId,
        terms: &[String],
        filter: &DrawerFilter,
        limit: usize,
    ) -> StoreResult<Vec<(DrawerId, f64)>>;

    /// Document frequencies for choosing BM25 terms: the number of indexed
    /// drawers in the palace, and for each term the number containing it.
    /// A count is exact up to `bound(documents)`; above it, a store may
    /// stop counting and report any number above the bound, so that a term
    /// in most of a million drawers costs no more to count than a rare one.
    fn term_frequencies(&self, terms: &[String], bound: fn(u64) -> u64) -> StoreResult<(u64, Vec<u64>)>;

    /// Ids of every drawer passing `filter` (for restricting vector search).
    fn filtered_ids(&self, workspace: &WorkspaceId, filter: &DrawerFilter) -> StoreResult<Vec<DrawerId>>;

    /// The palace-wide revision: it grows with every change an index cares
    /// about (see `VectorChange`).
    fn revision(&self) -> StoreResult<i64>;

    /// Up to `limit` changes after revision `after`, in revision order, for
    /// an index of `model`'s vectors.
    fn vector_changes(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        after: i64,
        limit: usize,
    ) -> StoreResult<Vec<VectorChange>>;

    /// Active drawers by importance (highest first, newest first on ties),
    /// optionally of one wing: the essential story (L1).
    fn top_drawers(&self, workspace: &WorkspaceId, wing: Option<&str>, limit: usize) -> StoreResult<Vec<Drawer>>;

    /// Entities by id (missing ids are left out).
    fn entities_by_id(&self, workspace: &WorkspaceId, ids: &[String]) -> StoreResult<Vec<Entity>>;

    /// Names of every entity of the workspace (the extractor's registry).
    fn entity_names(&self, workspace: &WorkspaceId) -> StoreResult<Vec<String>>;

    /// Facts about an entity, in the asked direction, oldest first.
    fn triples_about(&self, workspace: &WorkspaceId, entity_id: &str, direction: Direction)
    -> StoreResult<Vec<Triple>>;

    /// Counts of the knowledge graph.
    fn kg_stats(&self, workspace: &WorkspaceId) -> StoreResult<KgStats>;

    /// Drawers mentioning any of these entities, with how many of them each
    /// mentions, most first.
    fn drawers_mentioning(
        &self,
        workspace: &WorkspaceId,
        entity_ids: &[String],
        limit: usize,
    ) -> StoreResult<Vec<(DrawerId, u32)>>;

    /// Visible drawers per (wing, room, hall), from an aggregate.
    fn hall_counts(&self, workspace: &WorkspaceId) -> StoreResult<Vec<HallCount>>;

    /// Active drawers of a wing (and room), newest first (L2 recall).
    fn place_drawers(
        &self,
        workspace: &WorkspaceId,
        wing: &str,
        room: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<Drawer>>;
    /// A page of active drawers visible to everyone, optionally of one wing
    /// and/or room, newest first (ties by id), skipping `offset`.
    fn page_drawers(
        &self,
        workspace: &WorkspaceId,
        wing: Option<&str>,
        room: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> StoreResult<Vec<Drawer>>;

    /// The miners' bookkeeping for one source (a file, a session): opaque
    /// text the store keeps and never interprets; `None` when the source
    /// has none. A cache of mining progress, not user data: it is not
    /// exported, and losing it costs one full re-read of the source.
    fn source_cursor(&self, workspace: &WorkspaceId, source: &str) -> StoreResult<Option<String>>;

    /// Coordination events passing `filter`, in append order (`seq`),
    /// each with its referenced artifact ids sorted. Within a workspace a
    /// reader never sees an event appear with a smaller `seq` than one it
    /// has already seen, so the `seq` of the last event read is a cursor
    /// that skips nothing (see [`StoreWrite::append_event`]).
    fn events(&self, workspace: &WorkspaceId, filter: &EventFilter) -> StoreResult<Vec<StoredEvent>>;

    /// One coordination event by id.
    fn event(&self, workspace: &WorkspaceId, id: &str) -> StoreResult<Option<StoredEvent>>;

    /// One coordination artifact by id, content included.
    fn artifact(&self, workspace: &WorkspaceId, id: &str) -> StoreResult<Option<Artifact>>;

    /// A page of artifacts in id order, starting after `after` (export).
    fn scan_artifacts(&self, workspace: &WorkspaceId, after: Option<&str>, limit: usize) -> StoreResult<Vec<Artifact>>;

    /// Where the workspace's drawers are in the cold path: drawers of every
    /// status per state, tier and status (zeros included), raw drawers
    /// under a claim still live at `now`, active drawers in wing
    /// `memories`, and the latest run of each periodic job (palace-wide,
    /// like the job locks). Answered with grouped counts over an index
    /// (and the room-count aggregate for memories), one read transaction.
    fn pipeline_counts(&self, workspace: &WorkspaceId, now: Timestamp) -> StoreResult<PipelineCounts>;

    /// The sessions of the workspace's active drawers (`session_id` set,
    /// wing other than `except_wing`) whose latest drawer was filed before
    /// `idle_before`, least recently active first. One grouped read over
    /// the session index.
    fn session_activity(
        &self,
        workspace: &WorkspaceId,
        idle_before: Timestamp,
        except_wing: Option<&str>,
    ) -> StoreResult<Vec<SessionActivity>>;

    /// The active drawers `prune` would archive: importance below `below`,
    /// fewer than `max_accesses` accesses, filed before `filed_before`,
    /// least important (then oldest) first — at most as many as leave
    /// `keep` active drawers in the workspace.
    fn prune_candidates(
        &self,
        workspace: &WorkspaceId,
        below: f64,
        max_accesses: u64,
        filed_before: Timestamp,
        keep: u64,
    ) -> StoreResult<Vec<PruneCandidate>>;

    /// Every entity merged into another, in alias id order (issue 18).
    fn entity_aliases(&self, workspace: &WorkspaceId) -> StoreResult<Vec<EntityAlias>>;

    /// The workspace's aliases with what each merge moved, for the export.
    fn alias_records(&self, workspace: &WorkspaceId) -> StoreResult<Vec<AliasRecord>>;

    /// The canonical entity of each of `ids` that is an alias; ids that
    /// are not aliases are absent from the map.
    fn resolve_entities(&self, workspace: &WorkspaceId, ids: &[String]) -> StoreResult<HashMap<String, String>>;

    /// Every entity of the workspace with its facts and mentions, in id order.
    fn entity_usage(&self, workspace: &WorkspaceId) -> StoreResult<Vec<EntityUsage>>;

    /// Every room centroid of the workspace, by wing and room.
    fn room_centroids(&self, workspace: &WorkspaceId) -> StoreResult<Vec<RoomCentroid>>;

    /// Up to `limit` vectors of `model` of the drawers `which` selects,
    /// newest first (ties by id): what a centroid averages.
    fn centroid_samples(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        which: &CentroidSamples,
        limit: usize,
    ) -> StoreResult<Vec<(DrawerId, Vec<f32>)>>;

    /// The drawers nearest to `query` among the vectors of `model` that
    /// pass `filter`, by cosine similarity, best first — when the backend
    /// keeps a vector index of its own (PostgreSQL: pgvector HNSW). `None`
    /// when it keeps none: the engine then searches its derived in-memory
    /// index, kept in step through [`StoreRead::vector_changes`].
    fn vector_search(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        query: &[f32],
        filter: &DrawerFilter,
        limit: usize,
    ) -> StoreResult<Option<Vec<(DrawerId, f32)>>> {
        let _ = (workspace, model, query, filter, limit);
        Ok(None)
    }

    /// The saved copy of the engine's derived vector index of `model` in
    /// `workspace`, when this store keeps one and it is consistent with the
    /// store: the index then loads it and applies only the changes after
    /// its revision. `None` when there is none (the index is rebuilt from
    /// [`StoreRead::vector_changes`]). The bytes are the engine's; the
    /// store only keeps them.
    fn vector_snapshot(&self, workspace: &WorkspaceId, model: &str) -> StoreResult<Option<VectorSnapshot>> {
        let _ = (workspace, model);
        Ok(None)
    }

    /// Keeps `bytes`, the engine's derived vector index of `model` in
    /// `workspace` as of revision `rev`, replacing any older copy. Derived
    /// data, not a change of the palace: a store that answers
    /// [`StoreRead::vector_search`] itself keeps none and returns false.
    fn save_vector_snapshot(&self, workspace: &WorkspaceId, model: &str, rev: i64, bytes: &[u8]) -> StoreResult<bool> {
        let _ = (workspace, model, rev, bytes);
        Ok(false)
    }
}

/// A saved copy of a derived vector index (see
/// [`StoreRead::vector_snapshot`]).
pub struct VectorSnapshot {
    /// The store revision the copy reflects.
    pub rev: i64,
    /// Its bytes (memory-mapped where the store can).
    pub bytes: Box<dyn std::ops::Deref<Target = [u8]> + Send + Sync>,
}

impl std::fmt::Debug for VectorSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorSnapshot").field("rev", &self.rev).field("bytes", &self.bytes.len()).finish()
    }
}

/// Changes. Each call is one short transaction: it commits completely or not
/// at all, and waits (with retries) for other writers instead of failing.
pub trait StoreWrite: StoreRead {
    /// Inserts drawers whose `(workspace, id)` is not present yet; an
    /// existing id is left untouched. Returns one outcome per input, in order.
    fn put_drawers(&self, drawers: &[Drawer]) -> StoreResult<Vec<PutOutcome>>;

    /// Inserts `drawers` (as [`StoreWrite::put_drawers`]) and removes the
    /// drawers `remove` of `workspace` (as [`StoreWrite::delete_drawer`]) in
    /// one transaction: a source's new version replaces its old one
    /// atomically. Returns the put outcomes and how many were removed.
    fn put_and_remove_drawers(
        &self,
        workspace: &WorkspaceId,
        drawers: &[Drawer],
        remove: &[DrawerId],
    ) -> StoreResult<(Vec<PutOutcome>, usize)>;

    /// Sets a drawer's status (soft delete, supersede, restore) with a
    /// reason. Returns false when the drawer does not exist.
    fn set_drawer_status(
        &self,
        workspace: &WorkspaceId,
        id: &DrawerId,
        status: DrawerStatus,
        reason: Option<&str>,
        at: Timestamp,
    ) -> StoreResult<bool>;

    /// Replaces an existing drawer (same workspace and id) with `drawer`,
    /// index entries, tags and mentions included, in one transaction.
    /// Returns false, changing nothing, when no such drawer exists.
    fn replace_drawer(&self, drawer: &Drawer) -> StoreResult<bool>;
    /// Inserts a session or updates the stored one with the same id
    /// (status, outcome, end, context, count).
    fn save_session(&self, session: &Session) -> StoreResult<()>;
    /// Removes a drawer and everything derived from it. Returns false when
    /// it did not exist.
    fn delete_drawer(&self, workspace: &WorkspaceId, id: &DrawerId) -> StoreResult<bool>;

    /// Replaces the vectors of existing drawers; returns how many drawers
    /// were found.
    fn set_embeddings(&self, workspace: &WorkspaceId, vectors: &[(DrawerId, Embedding)]) -> StoreResult<usize>;

    /// Keeps vectors of texts that are not stored in a drawer, for later
    /// reuse (an existing entry is replaced).
    fn cache_embeddings(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        vectors: &[(ContentHash, Vec<f32>)],
        at: Timestamp,
    ) -> StoreResult<()>;

    /// Records that these drawers were returned to a caller: sets
    /// `last_accessed_at` and increments `access_count`, in one statement.
    /// Returns how many drawers were found.
    /// Access also reinforces: a drawer's importance rises by
    /// [`REINFORCE_STEP`] (up to 5) when it was not accessed in the
    /// [`REINFORCE_EVERY`] before `at`, so a drawer in use outlives the
    /// daily decay and a burst of searches counts once.
    fn touch_access(&self, workspace: &WorkspaceId, ids: &[DrawerId], at: Timestamp) -> StoreResult<usize>;

    /// Inserts entities whose id is new (an existing entity keeps its name
    /// and type). Returns how many were inserted.
    fn add_entities(&self, entities: &[Entity]) -> StoreResult<usize>;

    /// Stores a fact unless an identical open one (same subject, predicate
    /// and object, no end) exists. Both entities must exist.
    fn add_triple(&self, triple: &Triple) -> StoreResult<TripleOutcome>;

    /// Ends the open facts `subject predicate object` at `ended`; returns
    /// how many ended.
    fn invalidate_triples(
        &self,
        workspace: &WorkspaceId,
        subject: &str,
        predicate: &str,
        object: &str,
        ended: Timestamp,
    ) -> StoreResult<usize>;

    /// Removes one fact (for reviewing extracted ones). Returns false when absent.
    fn delete_triple(&self, workspace: &WorkspaceId, id: &str) -> StoreResult<bool>;

    /// Stores an explicit tunnel; false when one with its id exists.
    fn put_tunnel(&self, tunnel: &Tunnel) -> StoreResult<bool>;

    /// Removes an explicit tunnel; false when absent.
    fn delete_tunnel(&self, workspace: &WorkspaceId, id: &str) -> StoreResult<bool>;

    /// Stores (or with `None`, forgets) a source's cursor; see
    /// [`StoreRead::source_cursor`].
    fn set_source_cursor(
        &self,
        workspace: &WorkspaceId,
        source: &str,
        cursor: Option<&str>,
        at: Timestamp,
    ) -> StoreResult<()>;

    /// Stores an artifact whose `(workspace, id)` is new; an existing id is
    /// left untouched.
    fn put_artifact(&self, artifact: &Artifact) -> StoreResult<PutOutcome>;

    /// Appends a coordination event in one transaction: first `artifacts`
    /// (stored as [`StoreWrite::put_artifact`] does), then the event, once
    /// every artifact it references exists in its workspace. The event gets
    /// the next `seq`; the order `seq` gives is the order appends commit in,
    /// per workspace (SQLite: one writer at a time; PostgreSQL: appends to
    /// a workspace queue on a transaction-scoped lock taken before the
    /// `seq` is drawn), so a cursor never skips a slower concurrent append.
    fn append_event(&self, event: &Event, artifacts: &[Artifact]) -> StoreResult<AppendOutcome>;

    /// Claims up to `limit` raw drawers of the workspace (oldest first)
    /// that no worker holds, or whose claim expired before `now`, for
    /// `worker` until `until`. Concurrent callers, in any process, never
    /// receive the same drawer while its claim is live (PostgreSQL:
    /// `FOR UPDATE SKIP LOCKED`; SQLite: one writer at a time).
    fn claim_raw_drawers(
        &self,
        workspace: &WorkspaceId,
        worker: &str,
        limit: usize,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<Vec<Drawer>>;

    /// Completes claims `worker` holds: writes each drawer's processing
    /// outcome (state, pipeline tier, type, importance, confidence,
    /// summary, hall, cluster, entities and their mentions, entity and
    /// triple counts, retry count, updated time) and releases the claim. A drawer whose
    /// claim `worker` no longer holds (it expired and another worker took
    /// it) is left alone. Returns the ids completed.
    fn complete_claims(&self, workspace: &WorkspaceId, worker: &str, drawers: &[Drawer]) -> StoreResult<Vec<DrawerId>>;

    /// Daily decay (seed 0): sets `importance = max(importance × factor,
    /// floor)` on the workspace's active drawers filed before
    /// `filed_before` and not accessed since `idle_since` (never accessed
    /// counts as idle) whose importance is above `floor`. Returns how many
    /// changed.
    fn decay_importance(
        &self,
        workspace: &WorkspaceId,
        filed_before: Timestamp,
        idle_since: Timestamp,
        factor: f64,
        floor: f64,
    ) -> StoreResult<usize>;

    /// Removes the workspace's episodic summaries whose `expires_at` is
    /// before `now` (their TTL ran out). Returns how many.
    fn expire_episodic_summaries(&self, workspace: &WorkspaceId, now: Timestamp) -> StoreResult<usize>;

    /// Inserts an episodic summary or replaces the stored one with the same
    /// id (a session that grew is summarised again), every field included.
    fn save_episodic_summary(&self, summary: &EpisodicSummary) -> StoreResult<()>;

    /// Sets `promoted_at` on the workspace's episodic summaries `ids` that
    /// have none. Returns how many changed.
    fn mark_episodes_promoted(&self, workspace: &WorkspaceId, ids: &[String], at: Timestamp) -> StoreResult<usize>;

    /// Merges entity `alias` into entity `canonical` in one transaction:
    /// the facts naming the alias (as subject or object) and the drawers
    /// mentioning it move to the canonical entity, and what moved is
    /// recorded; the alias's own record leaves `entities` for the alias
    /// table, with `reason` and `at`; aliases of the alias become aliases
    /// of `canonical`. From then on the store resolves the alias on every
    /// write: adding the alias entity again is a no-op, facts and mentions
    /// naming it land on the canonical entity. Idempotent.
    fn merge_entity(
        &self,
        workspace: &WorkspaceId,
        alias: &str,
        canonical: &str,
        reason: &str,
        at: Timestamp,
    ) -> StoreResult<MergeOutcome>;

    /// Undoes [`StoreWrite::merge_entity`] in one transaction: the alias's
    /// record returns to `entities`, exactly the facts recorded as moved
    /// (and still naming the canonical entity) move back — facts added
    /// since stay with the canonical entity — and the mentions of the
    /// recorded drawers and of every drawer mentioning the canonical
    /// entity are derived again from their names. `None` when
    /// `alias` is not merged (so a second call is a no-op).
    fn unmerge_entity(&self, workspace: &WorkspaceId, alias: &str) -> StoreResult<Option<Unmerged>>;

    /// Stores a memory-type centroid, replacing the type's previous one,
    /// unless the stored one has the same source hash (then nothing
    /// changes and the answer is false).
    fn put_centroid(&self, centroid: &Centroid) -> StoreResult<bool>;

    /// Stores a room centroid, replacing the room's previous one. True
    /// when the vector changed (a new room or another source hash); with
    /// the same hash only the room size and time are updated.
    fn put_room_centroid(&self, centroid: &RoomCentroid) -> StoreResult<bool>;

    /// Forgets a room's centroid (the room emptied); false when it had none.
    fn delete_room_centroid(&self, workspace: &WorkspaceId, wing: &str, room: &str) -> StoreResult<bool>;

    /// Starts the palace-wide periodic `job` for wall-clock tick `tick`:
    /// true when this caller runs it — no other holder runs the job now
    /// and nobody ran this tick yet — false otherwise. The caller ends the
    /// run with [`StoreWrite::finish_job`]. A holder that dies releases the
    /// job by itself (PostgreSQL: its session's advisory lock ends with its
    /// connection; SQLite: the lock's lease of `lease` runs out).
    fn try_start_job(
        &self,
        job: &str,
        tick: i64,
        holder: &str,
        lease: std::time::Duration,
        now: Timestamp,
    ) -> StoreResult<bool>;

    /// Ends `holder`'s run of `job` (a no-op when it does not hold it).
    fn finish_job(&self, job: &str, holder: &str) -> StoreResult<()>;

    /// Sets the workspace's identity text.
    fn set_identity(&self, workspace: &WorkspaceId, identity: &Identity, at: Timestamp) -> StoreResult<()>;

    /// Writes records from an export in one transaction: each record whose
    /// key is absent is inserted, an existing key is left as it is (so an
    /// interrupted import can simply be run again).
    fn import(&self, records: &[PalaceRecord]) -> StoreResult<RecordCounts>;

    /// Checks the file and every derived structure against the rows.
    /// Read-only.
    fn verify(&self) -> StoreResult<Vec<HealthCheck>>;

    /// Rebuilds every derived structure from the rows. Never touches user
    /// data. Returns the checks after the rebuild.
    fn rebuild_derived(&self) -> StoreResult<Vec<HealthCheck>>;
}

/// A full backend: both halves and the directory.
pub trait Store: StoreWrite + Directory {}

impl<T: StoreWrite + Directory> Store for T {}
