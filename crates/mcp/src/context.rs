//! What every tool call works on: one palace handle, whose embedding
//! provider loads in the background.
//!
//! The server answers `initialize` before the embedding model is read (a
//! MiniLM load takes a few hundred milliseconds; a remote provider may take
//! longer to answer). The palace holds the provider in a deferred cell
//! (`engine::EmbedderCell`): a call that needs vectors (a search, a filing,
//! a diary entry, a duplicate check) waits for the load, and when it failed
//! runs without vectors (searches say they ran lexically); calls that never
//! embed (status, taxonomy, the knowledge graph) never wait. There is one
//! handle, so no tool can reach the palace without its embedder.

use std::sync::Arc;

use mempalace_core::WorkspaceId;
use mempalace_core::tenancy::Caller;
use mempalace_engine::pool::{IngestPool, PoolConfig, PoolMetrics};
use mempalace_engine::tenancy::Tenancy;
use mempalace_engine::{EmbedderCell, EngineResult, Palace};

pub use mempalace_engine::EmbedderLoader;

/// How the hooks save (`hooks` in config.json, as the Python MemPalace
/// keeps it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookSettings {
    /// Save directly at a checkpoint (true, the default) or ask the agent to
    /// save through the MCP tools (false).
    pub silent_save: bool,
    /// Show a desktop notification when a checkpoint is saved.
    pub desktop_toast: bool,
}

impl Default for HookSettings {
    fn default() -> Self {
        Self { silent_save: true, desktop_toast: false }
    }
}

/// The last checkpoint the hooks saved, not yet reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookCheckpoint {
    /// Messages it covered.
    pub messages: u64,
    /// When (as the hook wrote it).
    pub timestamp: Option<String>,
}

/// What a server needs from the program hosting it beyond the palace: the
/// user's configuration and the hooks' state, which only the binary reads
/// and writes.
pub trait Host: Send + Sync {
    /// The hook settings.
    fn hook_settings(&self) -> Result<HookSettings, String>;
    /// Stores the hook settings.
    fn set_hook_settings(&self, settings: HookSettings) -> Result<(), String>;
    /// The last checkpoint not yet reported, forgotten once read.
    fn take_last_checkpoint(&self) -> Result<Option<HookCheckpoint>, String>;
}

/// The palace a server works on, shared by all its sessions.
#[derive(Clone)]
pub struct Backend {
    palace: Palace,
    cell: Arc<EmbedderCell>,
    location: String,
    host: Option<Arc<dyn Host>>,
    pool: Option<Arc<Pool>>,
    memory_root: Option<std::path::PathBuf>,
    tenancy: Option<Arc<Tenancy>>,
    metrics: Arc<crate::metrics::Metrics>,
}

/// The ingestion pool of a server and its sizing.
struct Pool {
    pool: IngestPool,
    config: PoolConfig,
}

/// The ingestion queue as status and metrics report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct QueueStatus {
    /// Worker threads.
    pub workers: usize,
    /// Queue depth.
    pub capacity: usize,
    /// Accepted and not yet filed (queued or in flight).
    pub pending: u64,
    /// Accepted in all.
    pub submitted: u64,
    /// Turned away because the queue was full.
    pub dropped: u64,
    /// Filed (or failed).
    pub processed: u64,
    /// Failed while filing.
    pub failed: u64,
}

impl Backend {
    /// A backend whose embedder comes from `loader`, run on its own thread
    /// (`None`: the palace's own, if it has one). `location` is what status
    /// reports as the palace path.
    pub fn new(palace: Palace, location: String, loader: Option<EmbedderLoader>) -> Self {
        // Without a loader the palace keeps the embedder it has (if any).
        let (palace, cell) = match loader {
            Some(loader) => {
                let cell = EmbedderCell::load_in_background(loader);
                (palace.with_deferred_embedder(Arc::clone(&cell)), cell)
            }
            None => (palace, Arc::new(EmbedderCell::ready(None))),
        };
        Self {
            palace,
            cell,
            location,
            host: None,
            pool: None,
            memory_root: None,
            tenancy: None,
            metrics: Arc::default(),
        }
    }

    /// Starts the bounded ingestion pool that background writes go
    /// through (seed 0's hot path): `config.workers` threads filing into
    /// this backend's palace.
    pub fn with_ingest_pool(mut self, config: PoolConfig) -> Self {
        let pool = IngestPool::start(self.palace.clone(), config, None);
        self.pool = Some(Arc::new(Pool { pool, config }));
        self
    }

    /// The ingestion pool, when the server runs one.
    pub fn ingest_pool(&self) -> Option<&IngestPool> {
        self.pool.as_deref().map(|p| &p.pool)
    }

    /// The ingestion queue's counters, when the server runs a pool.
    pub fn queue_status(&self) -> Option<QueueStatus> {
        let pool = self.pool.as_deref()?;
        let metrics: &PoolMetrics = pool.pool.metrics();
        let load = |counter: &std::sync::atomic::AtomicU64| counter.load(std::sync::atomic::Ordering::Relaxed);
        let (submitted, processed) = (load(&metrics.submitted), load(&metrics.processed));
        Some(QueueStatus {
            workers: pool.config.workers,
            capacity: pool.config.capacity,
            pending: submitted.saturating_sub(processed),
            submitted,
            dropped: load(&metrics.dropped),
            processed,
            failed: load(&metrics.failed),
        })
    }

    /// Stops taking background work and files everything queued: what a
    /// server does before it exits, so nothing accepted is lost.
    pub fn shutdown(&self) {
        if let Some(pool) = &self.pool {
            let pending = self.queue_status().map_or(0, |q| q.pending);
            if pending > 0 {
                tracing::info!(pending, "filing the queued background writes before exit");
            }
            pool.pool.shutdown();
        }
    }

    /// Gives the tools that need the user's configuration (hook settings)
    /// a way to reach it.
    pub fn with_host(mut self, host: Arc<dyn Host>) -> Self {
        self.host = Some(host);
        self
    }

    /// The hosting program's configuration access, when it gave one.
    pub fn host(&self) -> Option<&Arc<dyn Host>> {
        self.host.as_ref()
    }

    /// Sets the memory root `memory_get` and `memory_append` work in: the
    /// folder holding `MEMORY.md`, `memory/` and `users/` (docs/memory-files.md).
    pub fn with_memory_root(mut self, root: std::path::PathBuf) -> Self {
        self.memory_root = Some(root);
        self
    }

    /// The memory root, when the server was given one.
    pub fn memory_root(&self) -> Option<&std::path::Path> {
        self.memory_root.as_deref()
    }

    /// Scopes every call to its caller (docs/tenancy.md): tenancy over this
    /// backend's palace, its embedder included.
    pub fn with_tenancy(mut self) -> Self {
        self.tenancy = Some(Arc::new(Tenancy::new(self.palace.clone())));
        self
    }

    /// Tenancy, when calls are scoped.
    pub fn tenancy(&self) -> Option<&Arc<Tenancy>> {
        self.tenancy.as_ref()
    }

    /// This backend acting for `caller` in `workspace` (default: the
    /// palace's): its palace handle checked and audited by the guard. A
    /// guarded backend files background writes at once, through the guard,
    /// instead of through the shared ingestion pool.
    pub fn scoped(&self, caller: &Caller, workspace: Option<&WorkspaceId>) -> EngineResult<Self> {
        let Some(tenancy) = &self.tenancy else { return Ok(self.clone()) };
        let palace = tenancy.scope(caller, workspace)?;
        let pool = if palace.caller().is_some() { None } else { self.pool.clone() };
        Ok(Self { palace, pool, ..self.clone() })
    }

    /// The server's request and tool counters.
    pub fn metrics(&self) -> &crate::metrics::Metrics {
        &self.metrics
    }

    /// The palace (its embedder loads on first use).
    pub fn palace(&self) -> &Palace {
        &self.palace
    }

    /// Whether the embedder has finished loading (successfully or not).
    pub fn embedder_settled(&self) -> bool {
        self.cell.settled()
    }

    /// Where the palace lives, as status reports it.
    pub fn location(&self) -> &str {
        &self.location
    }
}
