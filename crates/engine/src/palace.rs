//! The palace handle: filing, reading and deleting drawers, the identity,
//! status, whole-palace export and import, and the doctor.
//!
//! Retrieval layers, ingestion pipelines, the knowledge graph and workers get
//! their own modules; this one holds the basic record operations they build on.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mempalace_core::classify::TierGates;

use mempalace_core::{
    Confidence, Content, Drawer, DrawerId, DrawerState, DrawerStatus, DrawerTag, Hall, Identity, Importance,
    MemoryType, PipelineTier, Room, Timestamp, Wing, WorkspaceId,
};
use mempalace_store::{
    HealthCheck, IdentityRecord, PalaceRecord, PipelineCounts, PutOutcome, RecordCounts, StorageInfo, Store, Taxonomy,
};

use mempalace_core::embedder::Embedder;
use mempalace_core::llm::Llm;

use crate::error::{EngineError, EngineResult};
use crate::graph::GraphCache;
use crate::ingest::EventBus;
use crate::vector_index::{Restriction, VectorIndex};

/// Reads the wall clock.
pub type Clock = fn() -> Timestamp;

/// Builds an embedding provider; `Ok(None)` means "no vectors" (no model).
pub type EmbedderLoader = Box<dyn FnOnce() -> Result<Option<Arc<dyn Embedder>>, String> + Send>;

/// Where a palace's embedder lives: set at once, or filled by a loader on
/// its own thread (a model takes a few hundred milliseconds to read; a
/// server answers before that). Reading it waits until it is set.
#[derive(Default)]
pub struct EmbedderCell(std::sync::OnceLock<Option<Arc<dyn Embedder>>>);

impl EmbedderCell {
    /// A cell that already holds its embedder (or none).
    pub fn ready(embedder: Option<Arc<dyn Embedder>>) -> Self {
        let cell = Self::default();
        let _ = cell.0.set(embedder);
        cell
    }

    /// A cell filled by `loader` on a thread of its own; a failed load
    /// leaves it empty (no vectors), with a warning.
    pub fn load_in_background(loader: EmbedderLoader) -> Arc<Self> {
        let cell = Arc::new(Self::default());
        let filling = Arc::clone(&cell);
        let spawned = std::thread::Builder::new().name("embedder-load".into()).spawn(move || {
            let started = std::time::Instant::now();
            let embedder = loader().unwrap_or_else(|error| {
                tracing::warn!(%error, "embedding provider failed to load; searches run on keywords only");
                None
            });
            tracing::info!(
                ms = started.elapsed().as_millis() as u64,
                loaded = embedder.is_some(),
                "embedding provider ready"
            );
            let _ = filling.0.set(embedder);
        });
        if let Err(error) = spawned {
            tracing::warn!(%error, "cannot start the embedder thread; working without vectors");
            let _ = cell.0.set(None);
        }
        cell
    }

    /// The embedder, waiting for the load to finish. A wait is logged
    /// (debug, with its length): in a one-text process's timeline it
    /// tells whether loading the model was on the critical path.
    pub fn get(&self) -> Option<&Arc<dyn Embedder>> {
        if let Some(embedder) = self.0.get() {
            return embedder.as_ref();
        }
        let started = std::time::Instant::now();
        let embedder = self.0.wait().as_ref();
        tracing::debug!(ms = started.elapsed().as_secs_f64() * 1e3, "waited for the embedding provider");
        embedder
    }

    /// Whether the load has finished (successfully or not).
    pub fn settled(&self) -> bool {
        self.0.get().is_some()
    }
}

fn system_clock() -> Timestamp {
    chrono::Utc::now()
}

/// A handle on one workspace of a palace. Cheap to clone; safe to share
/// between threads.
#[derive(Clone)]
pub struct Palace {
    store: Arc<dyn Store>,
    workspace: WorkspaceId,
    clock: Clock,
    embedder: Option<Arc<EmbedderCell>>,
    indexes: Arc<Mutex<HashMap<String, Arc<VectorIndex>>>>,
    events: Arc<EventBus>,
    gates: TierGates,
    /// Cosine to the nearest type centroid that settles a drawer in the
    /// centroid band (seed 0: 0.85).
    centroid_threshold: f64,
    kg_limits: (u64, u64),
    graph_cache: Arc<GraphCache>,
    hallway_cache: Arc<crate::hallways::HallwayCache>,
    llm: Option<Arc<dyn Llm>>,
    jobs: crate::work::JobSettings,
    /// The caller this handle is scoped to (`Tenancy::scope`); `None` for
    /// an unguarded handle (a single-user palace, the local operator).
    access: Option<Arc<crate::guard::Access>>,
    /// The caller's personal workspace, searched with this one (personal
    /// hits first among equals: they get the per-user boost).
    personal: Option<Arc<Palace>>,
}

impl std::fmt::Debug for EmbedderCell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbedderCell").field("settled", &self.settled()).finish()
    }
}

impl std::fmt::Debug for Palace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Palace").field("workspace", &self.workspace).finish_non_exhaustive()
    }
}

/// A drawer to file, as a caller describes it. Everything not given gets the
/// domain defaults (importance 3, confidence 1, active).
#[derive(Debug, Clone)]
pub struct NewDrawer {
    /// Wing.
    pub wing: Wing,
    /// Room.
    pub room: Room,
    /// Optional hall.
    pub hall: Option<Hall>,
    /// The verbatim text.
    pub content: Content,
    /// A type decided by the caller; `None` leaves it to the classifiers.
    pub memory_type: Option<MemoryType>,
    /// Importance; default 3.
    pub importance: Option<Importance>,
    /// Confidence; default 1.
    pub confidence: Option<Confidence>,
    /// Where the text came from.
    pub source_file: Option<String>,
    /// Who files it.
    pub added_by: String,
    /// Tags set by the caller.
    pub tags: Vec<String>,
}

/// Result of filing a drawer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddOutcome {
    /// A new drawer was stored.
    Added(DrawerId),
    /// The same text was already filed in the same place; nothing changed.
    AlreadyExists(DrawerId),
}

impl AddOutcome {
    /// The drawer id either way.
    pub fn id(&self) -> &DrawerId {
        match self {
            AddOutcome::Added(id) | AddOutcome::AlreadyExists(id) => id,
        }
    }
}

/// How to delete a drawer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeleteMode {
    /// Hide it (status `invalidated`) and keep it for review, with a reason.
    Soft {
        /// Why; kept with the drawer.
        reason: Option<String>,
    },
    /// Remove the row and everything derived from it.
    Hard,
}

/// What `status` reports.
#[derive(Debug, Clone, PartialEq)]
pub struct PalaceStatus {
    /// Backend, location, schema version, size.
    pub storage: StorageInfo,
    /// The workspace reported on.
    pub workspace: WorkspaceId,
    /// Visible drawers per wing and room.
    pub taxonomy: Taxonomy,
    /// Where the drawers are in the cold path, and the periodic jobs' last
    /// runs.
    pub pipeline: PipelineCounts,
}

/// What `doctor` found and did.
#[derive(Debug, Clone, PartialEq)]
pub struct DoctorReport {
    /// Backend, location, schema version, size.
    pub storage: StorageInfo,
    /// Checks before any repair.
    pub checks: Vec<HealthCheck>,
    /// Whether derived data was rebuilt.
    pub repaired: bool,
    /// Checks after the repair, when one ran.
    pub checks_after_repair: Option<Vec<HealthCheck>>,
    /// Drawers in the palace (all workspaces, all statuses) — unchanged by
    /// the doctor by construction.
    pub drawers_before: u64,
    /// The same count after the doctor ran.
    pub drawers_after: u64,
}

impl DoctorReport {
    /// Whether the palace is healthy now (after any repair).
    pub fn healthy(&self) -> bool {
        self.checks_after_repair.as_ref().unwrap_or(&self.checks).iter().all(|check| check.ok)
    }
}

impl Palace {
    /// A handle on `workspace` of `store`.
    pub fn new(store: Arc<dyn Store>, workspace: WorkspaceId) -> Self {
        Self {
            store,
            workspace,
            clock: system_clock,
            embedder: None,
            indexes: Arc::default(),
            events: Arc::default(),
            gates: TierGates::default(),
            centroid_threshold: TierGates::CENTROID_THRESHOLD,
            kg_limits: (crate::kg::DEFAULT_MAX_ENTITIES, crate::kg::DEFAULT_MAX_TRIPLES),
            graph_cache: Arc::default(),
            hallway_cache: Arc::default(),
            llm: None,
            jobs: crate::work::JobSettings::default(),
            access: None,
            personal: None,
        }
    }

    /// The same palace (store, embedder, clock, settings) on another
    /// workspace, with its own derived indexes and caches.
    pub fn for_workspace(&self, workspace: WorkspaceId) -> Self {
        if workspace == self.workspace {
            return self.clone();
        }
        Self {
            store: Arc::clone(&self.store),
            workspace,
            clock: self.clock,
            embedder: self.embedder.clone(),
            indexes: Arc::default(),
            events: Arc::clone(&self.events),
            gates: self.gates,
            centroid_threshold: self.centroid_threshold,
            kg_limits: self.kg_limits,
            graph_cache: Arc::default(),
            hallway_cache: Arc::default(),
            llm: self.llm.clone(),
            jobs: self.jobs,
            access: self.access.clone(),
            personal: None,
        }
    }

    /// This handle seen through `access`: every store call checked and
    /// audited by the guard (`crate::guard`). Derived indexes stay shared
    /// with `self`.
    pub(crate) fn guarded(&self, raw: &Arc<dyn Store>, access: Arc<crate::guard::Access>) -> Self {
        let mut palace = self.clone();
        palace.store = Arc::new(crate::guard::GuardedStore::new(Arc::clone(raw), Arc::clone(&access), self.clock));
        palace.access = Some(access);
        palace.personal = None;
        palace
    }

    /// Also searches `personal` (the caller's personal workspace).
    pub(crate) fn with_personal(mut self, personal: Palace) -> Self {
        self.personal = Some(Arc::new(personal));
        self
    }

    /// The personal workspace searched with this one, if any, with this
    /// handle's embedder (which may have been attached after scoping).
    pub fn personal(&self) -> Option<Palace> {
        self.personal.as_deref().map(|personal| {
            let mut personal = personal.clone();
            personal.embedder = self.embedder.clone();
            personal
        })
    }

    /// Who this handle acts for: `None` when unguarded (a single-user
    /// palace or the local operator without a team).
    pub fn caller(&self) -> Option<&mempalace_core::tenancy::Caller> {
        self.access.as_deref().map(crate::guard::Access::caller)
    }

    /// The principal this handle acts for, if any.
    pub fn principal_id(&self) -> Option<&str> {
        self.caller().and_then(|c| c.principal()).map(|p| p.id.as_str())
    }

    /// Sets the knowledge-graph limits of the workspace (entities, triples).
    pub fn with_kg_limits(mut self, entities: u64, triples: u64) -> Self {
        self.kg_limits = (entities, triples);
        self
    }

    /// The knowledge-graph limits (entities, triples).
    pub fn kg_limits(&self) -> (u64, u64) {
        self.kg_limits
    }

    pub(crate) fn graph_cache(&self) -> &GraphCache {
        &self.graph_cache
    }

    pub(crate) fn hallway_cache(&self) -> &crate::hallways::HallwayCache {
        &self.hallway_cache
    }

    /// Sets the two phase gates of the tier decision.
    pub fn with_tier_gates(mut self, gates: TierGates) -> Self {
        self.gates = gates;
        self
    }

    /// Sets the cosine to the nearest memory-type centroid that settles a
    /// drawer in the centroid band (default seed 0's 0.85, tuned for
    /// 1536-dimension OpenAI vectors; MiniLM drawers score 0.55–0.7 against
    /// their own type's centroid, see docs/entities-and-centroids.md).
    pub fn with_centroid_threshold(mut self, threshold: f64) -> Self {
        self.centroid_threshold = threshold;
        self
    }

    /// The centroid band's cosine threshold in force.
    pub fn centroid_threshold(&self) -> f64 {
        self.centroid_threshold
    }

    /// The tier gates in force.
    pub fn tier_gates(&self) -> TierGates {
        self.gates
    }

    /// The ingestion event bus.
    pub fn events(&self) -> &Arc<EventBus> {
        &self.events
    }

    /// The vector index of `model` for this workspace (created empty and
    /// loaded on its first refresh).
    pub fn vector_index(&self, model: &str) -> Arc<VectorIndex> {
        let mut indexes = self.indexes.lock().expect("index registry poisoned");
        Arc::clone(
            indexes
                .entry(model.to_string())
                .or_insert_with(|| Arc::new(VectorIndex::new(self.workspace.clone(), model))),
        )
    }

    /// The drawers nearest to `query` among `model`'s vectors that pass
    /// `filter`, best first, with their cosine similarity: from the
    /// backend's own vector index when it keeps one (PostgreSQL: HNSW),
    /// else from this process's derived index (caught up first; quantised,
    /// so similarities are approximate; a filter's `viewer` is not applied
    /// there, so callers check the owners of what they get).
    pub fn nearest(
        &self,
        model: &str,
        query: &[f32],
        filter: &mempalace_store::DrawerFilter,
        k: usize,
    ) -> crate::EngineResult<Vec<(mempalace_core::DrawerId, f32)>> {
        if let Some(hits) = self.store().vector_search(&self.workspace, model, query, filter, k)? {
            return Ok(hits);
        }
        let index = self.vector_index(model);
        index.refresh(self.store().as_ref())?;
        // Ownership alone does not restrict the derived index (listing a
        // workspace's ids per call would cost as much as the search):
        // callers check the owner on the drawers they get. The index holds
        // active drawers only, so `include_hidden` adds nothing to it, and
        // it knows each drawer's place, so wings and rooms need no list of
        // ids from the store.
        let places = mempalace_store::DrawerFilter {
            viewer: None,
            include_hidden: false,
            wings: Vec::new(),
            rooms: Vec::new(),
            ..filter.clone()
        };
        if places == mempalace_store::DrawerFilter::default() {
            let restriction = if filter.wings.is_empty() && filter.rooms.is_empty() {
                Restriction::None
            } else {
                Restriction::Places { wings: &filter.wings, rooms: &filter.rooms }
            };
            return Ok(index.search(query, k, restriction));
        }
        let allowed: std::collections::HashSet<mempalace_core::DrawerId> =
            self.store().filtered_ids(&self.workspace, filter)?.into_iter().collect();
        Ok(index.search(query, k, Restriction::Ids(&allowed)))
    }

    /// Uses `embedder` for new drawers and queries.
    pub fn with_embedder(mut self, embedder: Arc<dyn Embedder>) -> Self {
        self.embedder = Some(Arc::new(EmbedderCell::ready(Some(embedder))));
        self
    }

    /// Uses the embedder that `cell` will hold once it has loaded (see
    /// [`EmbedderCell::load_in_background`]): the palace works at once, and
    /// only the calls that need vectors wait for the load. Every surface
    /// holds this one handle, so none can pick a palace without the
    /// embedder by mistake.
    pub fn with_deferred_embedder(mut self, cell: Arc<EmbedderCell>) -> Self {
        self.embedder = Some(cell);
        self
    }

    /// The configured embedder, if any; waits for a deferred one to load.
    pub fn embedder(&self) -> Option<&Arc<dyn Embedder>> {
        self.embedder.as_ref().and_then(|cell| cell.get())
    }

    /// Asks `llm` where a job can use a language model (the cold path's
    /// classification, conflicts and enrichment; memory extraction). Without
    /// one, every job runs its deterministic path.
    pub fn with_llm(mut self, llm: Arc<dyn Llm>) -> Self {
        self.llm = Some(llm);
        self
    }

    /// Runs the background jobs with these batch sizes and periods.
    pub fn with_jobs(mut self, jobs: crate::work::JobSettings) -> Self {
        self.jobs = jobs;
        self
    }

    /// The jobs' batch sizes and periods.
    pub fn jobs(&self) -> &crate::work::JobSettings {
        &self.jobs
    }

    /// The language model, when one is configured.
    pub fn llm(&self) -> Option<&Arc<dyn Llm>> {
        self.llm.as_ref()
    }

    /// Uses another clock (tests, replays).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The workspace this handle works on.
    pub fn workspace(&self) -> &WorkspaceId {
        &self.workspace
    }

    /// The underlying store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// This palace's clock.
    pub fn clock(&self) -> Clock {
        self.clock
    }

    /// The current time by this palace's clock.
    pub fn now(&self) -> Timestamp {
        (self.clock)()
    }

    /// Files one drawer verbatim. Filing the same text in the same place
    /// again is a no-op that returns the existing id.
    pub fn add_drawer(&self, new: NewDrawer) -> EngineResult<AddOutcome> {
        let now = self.now();
        let mut drawer = Drawer::new(self.workspace.clone(), new.wing, new.room, new.content, new.added_by, now);
        drawer.hall = new.hall;
        drawer.source_file = new.source_file;
        if let Some(importance) = new.importance {
            drawer.importance = importance;
        }
        if let Some(confidence) = new.confidence {
            drawer.confidence = confidence;
        }
        if let Some(memory_type) = new.memory_type {
            // A type stated by the caller is a decision already made: nothing
            // is left for the cold path to classify.
            drawer.memory_type = Some(memory_type);
            drawer.state = DrawerState::Processed;
            drawer.pipeline_tier = PipelineTier::Heuristic;
        }
        let mut tags = new.tags;
        tags.sort();
        tags.dedup();
        drawer.tags = tags.into_iter().map(|tag| DrawerTag { tag, source: mempalace_core::TagSource::User }).collect();
        let id = drawer.id.clone();
        if self.store.drawer(&self.workspace, &id)?.is_some() {
            return Ok(AddOutcome::AlreadyExists(id));
        }
        let embedded = self.embed_texts(&[drawer.content.as_str()])?;
        drawer.embedding = embedded.embedding(0);
        let outcome = self.store.put_drawers(std::slice::from_ref(&drawer))?;
        Ok(match outcome.first() {
            Some(PutOutcome::Inserted) => AddOutcome::Added(id),
            _ => AddOutcome::AlreadyExists(id),
        })
    }

    /// One drawer by id, whatever its status.
    pub fn drawer(&self, id: &DrawerId) -> EngineResult<Drawer> {
        self.store
            .drawer(&self.workspace, id)?
            .ok_or_else(|| EngineError::NotFound { what: "drawer", id: id.to_string() })
    }

    /// Deletes a drawer softly (hidden, kept) or for good.
    pub fn delete_drawer(&self, id: &DrawerId, mode: DeleteMode) -> EngineResult<()> {
        let found = match mode {
            DeleteMode::Soft { reason } => self.store.set_drawer_status(
                &self.workspace,
                id,
                DrawerStatus::Invalidated,
                reason.as_deref(),
                self.now(),
            )?,
            DeleteMode::Hard => self.store.delete_drawer(&self.workspace, id)?,
        };
        if found { Ok(()) } else { Err(EngineError::NotFound { what: "drawer", id: id.to_string() }) }
    }

    /// Counts per wing and room, from the aggregate, and the cold path's
    /// counts (see [`Palace::pipeline_counts`]).
    pub fn status(&self) -> EngineResult<PalaceStatus> {
        Ok(PalaceStatus {
            storage: self.store.info()?,
            workspace: self.workspace.clone(),
            taxonomy: self.store.taxonomy(&self.workspace)?,
            pipeline: self.pipeline_counts()?,
        })
    }

    /// Visible drawers per wing and room, from the aggregate (what
    /// [`Palace::status`] reports, without the storage and cold-path reads).
    pub fn taxonomy(&self) -> EngineResult<Taxonomy> {
        Ok(self.store.taxonomy(&self.workspace)?)
    }

    /// Where the workspace's drawers are in the cold path (per state, tier
    /// and status; claims live now; active memories) and the latest run of
    /// each periodic job.
    pub fn pipeline_counts(&self) -> EngineResult<PipelineCounts> {
        Ok(self.store.pipeline_counts(&self.workspace, self.now())?)
    }

    /// The workspace's identity, if set.
    pub fn identity(&self) -> EngineResult<Option<IdentityRecord>> {
        Ok(self.store.identity(&self.workspace)?)
    }

    /// Sets the workspace's identity.
    pub fn set_identity(&self, identity: &Identity) -> EngineResult<()> {
        Ok(self.store.set_identity(&self.workspace, identity, self.now())?)
    }

    /// Streams every record of every workspace to `sink`: per workspace,
    /// identity, entities (before the triples that refer to them), triples,
    /// sessions, episodic summaries, tunnels, centroids, coordination
    /// artifacts (before the events that refer to them), events in append
    /// order, then drawers in pages. Returns how many records were written.
    pub fn export_all<E>(&self, sink: &mut dyn FnMut(PalaceRecord) -> Result<(), E>) -> Result<u64, ExportError<E>> {
        const PAGE: usize = 1_000;
        let mut written = 0_u64;
        let mut emit = |record: PalaceRecord| -> Result<(), ExportError<E>> {
            written += 1;
            sink(record).map_err(ExportError::Sink)
        };
        let store = &self.store;
        for workspace in store.workspaces().map_err(EngineError::from)? {
            if let Some(identity) = store.identity(&workspace).map_err(EngineError::from)? {
                emit(PalaceRecord::Identity(identity))?;
            }
            for entity in store.entities(&workspace).map_err(EngineError::from)? {
                emit(PalaceRecord::Entity(entity))?;
            }
            for triple in store.triples(&workspace).map_err(EngineError::from)? {
                emit(PalaceRecord::Triple(triple))?;
            }
            // After the entities and facts they name, before the drawers
            // whose mentions they resolve.
            for alias in store.alias_records(&workspace).map_err(EngineError::from)? {
                emit(PalaceRecord::EntityAlias(Box::new(alias)))?;
            }
            for session in store.sessions(&workspace).map_err(EngineError::from)? {
                emit(PalaceRecord::Session(session))?;
            }
            for summary in store.episodic_summaries(&workspace).map_err(EngineError::from)? {
                emit(PalaceRecord::EpisodicSummary(summary))?;
            }
            for tunnel in store.tunnels(&workspace).map_err(EngineError::from)? {
                emit(PalaceRecord::Tunnel(tunnel))?;
            }
            for centroid in store.centroids(&workspace).map_err(EngineError::from)? {
                emit(PalaceRecord::Centroid(centroid))?;
            }
            // Artifacts are up to 4 MiB each: small pages.
            let mut after_artifact: Option<String> = None;
            loop {
                let page =
                    store.scan_artifacts(&workspace, after_artifact.as_deref(), 64).map_err(EngineError::from)?;
                let Some(last) = page.last() else { break };
                after_artifact = Some(last.id.clone());
                for artifact in page {
                    emit(PalaceRecord::Artifact(Box::new(artifact)))?;
                }
            }
            let mut after_seq: Option<i64> = None;
            loop {
                let filter = mempalace_store::EventFilter { after_seq, limit: PAGE, ..Default::default() };
                let page = store.events(&workspace, &filter).map_err(EngineError::from)?;
                let Some(last) = page.last() else { break };
                after_seq = Some(last.seq);
                for stored in page {
                    emit(PalaceRecord::Event(Box::new(stored.event)))?;
                }
            }
            let mut after: Option<DrawerId> = None;
            loop {
                let page = store.scan_drawers(&workspace, after.as_ref(), PAGE).map_err(EngineError::from)?;
                let Some(last) = page.last() else { break };
                after = Some(last.id.clone());
                for drawer in page {
                    emit(PalaceRecord::Drawer(Box::new(drawer)))?;
                }
            }
        }
        Ok(written)
    }

    /// Writes one batch of exported records in one transaction (absent keys
    /// inserted, present keys left alone). Callers stream a file in batches
    /// and may report each returned count as committed.
    pub fn import_batch(&self, records: &[PalaceRecord]) -> EngineResult<RecordCounts> {
        Ok(self.store.import(records)?)
    }

    /// Verifies the palace and, with `repair`, rebuilds derived data that
    /// failed its check. User data is never modified: the drawer count before
    /// and after is part of the report.
    pub fn doctor(&self, repair: bool) -> EngineResult<DoctorReport> {
        let drawers_before = self.count_all_drawers()?;
        let checks = self.store.verify()?;
        let derived_broken = checks.iter().any(|check| !check.ok && check.derived);
        let (repaired, checks_after_repair) = if repair && derived_broken {
            tracing::warn!("derived data differs from the rows; rebuilding it");
            (true, Some(self.store.rebuild_derived()?))
        } else {
            (false, None)
        };
        Ok(DoctorReport {
            storage: self.store.info()?,
            checks,
            repaired,
            checks_after_repair,
            drawers_before,
            drawers_after: self.count_all_drawers()?,
        })
    }

    /// Every drawer row of the palace, any workspace or status (a scan; only
    /// the doctor uses it).
    fn count_all_drawers(&self) -> EngineResult<u64> {
        let mut total = 0_u64;
        for workspace in self.store.workspaces()? {
            let mut after: Option<DrawerId> = None;
            loop {
                let page = self.store.scan_drawers(&workspace, after.as_ref(), 5_000)?;
                let Some(last) = page.last() else { break };
                after = Some(last.id.clone());
                total += page.len() as u64;
            }
        }
        Ok(total)
    }
}

/// An export failed in the store or in the sink.
#[derive(Debug)]
pub enum ExportError<E> {
    /// Reading the palace failed.
    Engine(EngineError),
    /// Writing a record failed.
    Sink(E),
}

impl<E: std::fmt::Display> std::fmt::Display for ExportError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Engine(error) => write!(f, "reading the palace failed: {error}"),
            Self::Sink(error) => write!(f, "writing the export failed: {error}"),
        }
    }
}

impl<E> From<EngineError> for ExportError<E> {
    fn from(error: EngineError) -> Self {
        Self::Engine(error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mempalace_sqlite::{SqliteOptions, SqliteStore};

    fn palace() -> (tempfile::TempDir, Palace) {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(
            &dir.path().join("palace.db"),
            SqliteOptions { create: true, ..SqliteOptions::default() },
        )
        .unwrap();
        (dir, Palace::new(Arc::new(store), WorkspaceId::default_workspace()))
    }

    fn new_drawer(text: &str) -> NewDrawer {
        NewDrawer {
            wing: Wing::parse("project").unwrap(),
            room: Room::parse("decisions").unwrap(),
            hall: None,
            content: Content::parse(text).unwrap(),
            memory_type: None,
            importance: None,
            confidence: None,
            source_file: None,
            added_by: "test".into(),
            tags: vec!["b".into(), "a".into(), "a".into()],
        }
    }

    #[test]
    fn filing_twice_returns_the_same_id_without_a_second_row() {
        let (_dir, palace) = palace();
        let first = palace.add_drawer(new_drawer("We chose PostgreSQL.")).unwrap();
        let second = palace.add_drawer(new_drawer("We chose PostgreSQL.")).unwrap();
        assert!(matches!(first, AddOutcome::Added(_)));
        assert_eq!(second, AddOutcome::AlreadyExists(first.id().clone()));
        assert_eq!(palace.status().unwrap().taxonomy.total_drawers, 1);
        let tags: Vec<_> = palace.drawer(first.id()).unwrap().tags.into_iter().map(|t| t.tag).collect();
        assert_eq!(tags, vec!["a", "b"]);
    }

    #[test]
    fn a_stated_type_marks_the_drawer_processed() {
        let (_dir, palace) = palace();
        let mut new = new_drawer("Ship on Friday.");
        new.memory_type = Some(MemoryType::Task);
        let drawer = palace.drawer(palace.add_drawer(new).unwrap().id()).unwrap();
        assert_eq!(drawer.memory_type, Some(MemoryType::Task));
        assert_eq!(drawer.state, DrawerState::Processed);
    }

    #[test]
    fn soft_delete_hides_and_hard_delete_removes() {
        let (_dir, palace) = palace();
        let id = palace.add_drawer(new_drawer("temporary")).unwrap().id().clone();
        palace.delete_drawer(&id, DeleteMode::Soft { reason: Some("outdated".into()) }).unwrap();
        assert_eq!(palace.status().unwrap().taxonomy.total_drawers, 0);
        assert_eq!(palace.drawer(&id).unwrap().status, DrawerStatus::Invalidated);
        palace.delete_drawer(&id, DeleteMode::Hard).unwrap();
        assert!(matches!(palace.drawer(&id), Err(EngineError::NotFound { .. })));
        assert!(matches!(palace.delete_drawer(&id, DeleteMode::Hard), Err(EngineError::NotFound { .. })));
    }

    #[test]
    fn export_then_import_reproduces_every_record() {
        let (_dir, source) = palace();
        source.add_drawer(new_drawer("one")).unwrap();
        source.add_drawer(new_drawer("two")).unwrap();
        source.import_batch(&mempalace_store::conformance::sample_records(source.workspace())).unwrap();
        source.set_identity(&Identity::parse("I am Atlas").unwrap()).unwrap();
        let mut records = Vec::new();
        let written = source
            .export_all(&mut |record| {
                records.push(record);
                Ok::<_, std::convert::Infallible>(())
            })
            .unwrap();
        assert_eq!(written as usize, records.len());

        let (_dir2, target) = palace();
        let counts = target.import_batch(&records).unwrap();
        assert_eq!(counts.inserted as usize, records.len());
        let mut again = Vec::new();
        target
            .export_all(&mut |record| {
                again.push(record);
                Ok::<_, std::convert::Infallible>(())
            })
            .unwrap();
        assert_eq!(again, records);
    }

    #[test]
    fn doctor_repairs_derived_data_and_keeps_every_drawer() {
        let (dir, palace) = palace();
        for i in 0..5 {
            palace.add_drawer(new_drawer(&format!("drawer {i}"))).unwrap();
        }
        let clean = palace.doctor(true).unwrap();
        assert!(clean.healthy() && !clean.repaired);
        let conn = rusqlite_open(&dir.path().join("palace.db"));
        conn.execute_batch("DELETE FROM room_counts").unwrap();
        let report = palace.doctor(true).unwrap();
        assert!(report.repaired && report.healthy(), "{report:?}");
        assert_eq!((report.drawers_before, report.drawers_after), (5, 5));
        assert_eq!(palace.status().unwrap().taxonomy.total_drawers, 5);
    }

    fn rusqlite_open(path: &std::path::Path) -> rusqlite::Connection {
        rusqlite::Connection::open(path).unwrap()
    }
}
