//! The scale-out backend: a palace in PostgreSQL with pgvector.
//!
//! The same data model and semantics as the embedded SQLite backend (one
//! conformance suite checks both), for many stateless `mempalace`
//! processes on one database: drawers keyed by `(workspace_id, id)`, the
//! lexical index as a `tsvector` column with a GIN index (BM25 computed in
//! SQL over the matching rows, with the palace's document statistics),
//! vectors in pgvector columns searched through one HNSW index (cosine) per
//! embedding model, counts kept by triggers in aggregates.
//!
//! Concurrency: every write is one transaction at READ COMMITTED; a write
//! that changes what a derived index cares about takes the palace revision
//! (one counter row), which orders those writes the way SQLite's single
//! writer does. Cold-path claims use `FOR UPDATE SKIP LOCKED`; periodic
//! jobs use session advisory locks plus a `(job, tick)` row (see `work`).
//!
//! The store's methods are synchronous like the trait: each runs its SQL
//! on the store's own tokio runtime. Call them from ordinary threads (or
//! tokio's blocking pool), never from inside an async task.
//!
//! Not here: ranking, embedding, chunking (engine and core).

mod alias;
mod centroid;
mod coordination;
mod directory;
mod error;
mod health;
mod kg;
mod query;
mod records;
mod row;
mod schema;
#[cfg(feature = "testing")]
pub mod testing;
mod vectors;
mod work;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Transaction};
use mempalace_core::centroid::{Centroid, RoomCentroid};
use mempalace_core::coordination::{Artifact, Event, StoredEvent};
use mempalace_core::kg::{Entity, EntityAlias, Triple};
use mempalace_core::session::{EpisodicSummary, Session};
use mempalace_core::tenancy::{
    AuditEntry, AuditFilter, Grant, Limits, Member, Principal, PrincipalId, Team, TeamId, TokenId, TokenRecord, Usage,
};
use mempalace_core::tunnel::Tunnel;
use mempalace_core::{
    Content, ContentHash, Drawer, DrawerId, DrawerStatus, Embedding, Identity, Timestamp, WorkspaceId,
};
use mempalace_store::{
    AliasRecord, AppendOutcome, CentroidSamples, Direction, Directory, DrawerFilter, EntityUsage, EventFilter,
    HallCount, HealthCheck, IdentityRecord, KgStats, MergeOutcome, PalaceRecord, PipelineCounts, PruneCandidate,
    PutOutcome, RecordCounts, SessionActivity, StorageInfo, StoreError, StoreRead, StoreResult, StoreWrite, Taxonomy,
    TripleOutcome, Unmerged, VectorChange,
};

use crate::error::Context;

pub use schema::SCHEMA_VERSION;

/// How to connect.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// Most connections this process opens.
    pub max_connections: usize,
    /// How long to wait for a connection (the server, or a free one in the pool).
    pub connect_timeout: Duration,
    /// How long a write keeps retrying deadlocks and serialization
    /// failures before reporting `Busy`.
    pub max_write_wait: Duration,
}

impl Default for PgOptions {
    fn default() -> Self {
        Self { max_connections: 16, connect_timeout: Duration::from_secs(10), max_write_wait: Duration::from_secs(60) }
    }
}

/// A palace in a PostgreSQL database (the schema named by the URL's
/// `search_path`, `public` by default).
pub struct PgStore {
    // Field order is drop order: connections (the job locks' and the pool's)
    // close while the runtime that drives them still runs.
    job_locks: Mutex<HashMap<String, deadpool_postgres::Object>>,
    pool: Pool,
    runtime: StoreRuntime,
    location: String,
    options: PgOptions,
    /// Embedding models whose HNSW index is known to exist.
    vector_indexes: Mutex<HashSet<String>>,
}

/// The store's own runtime. Dropped inside another runtime's context (a
/// server whose last handle on the store goes away in an async task), it
/// shuts down in the background instead of blocking, which tokio forbids
/// there.
struct StoreRuntime(Option<tokio::runtime::Runtime>);

impl StoreRuntime {
    fn get(&self) -> &tokio::runtime::Runtime {
        self.0.as_ref().expect("the runtime lives until the store is dropped")
    }
}

impl Drop for StoreRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            if tokio::runtime::Handle::try_current().is_ok() {
                runtime.shutdown_background();
            } else {
                drop(runtime);
            }
        }
    }
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgStore").field("location", &self.location).finish_non_exhaustive()
    }
}

pub use mempalace_store::location::{is_postgres_url, redact};

impl PgStore {
    /// Connects to the database at `url` (`postgres://user:pass@host:port/db`,
    /// libpq-style parameters accepted, e.g. `?options=-csearch_path%3Dteam`)
    /// and applies pending migrations.
    pub fn open(url: &str, options: PgOptions) -> StoreResult<Self> {
        let location = redact(url);
        let unreachable = |detail: String| StoreError::Unreachable { location: location.clone(), detail };
        let mut config = tokio_postgres::Config::from_str(url)
            .map_err(|error| unreachable(format!("not a PostgreSQL URL ({error})")))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(options.connect_timeout);
        }
        if config.get_application_name().is_none() {
            config.application_name("mempalace");
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("mempalace-pg")
            .enable_all()
            .build()
            .map_err(|error| StoreError::backend("starting the database runtime", error))?;
        let manager = Manager::from_config(
            config,
            tokio_postgres::NoTls,
            ManagerConfig { recycling_method: RecyclingMethod::Fast },
        );
        let pool = Pool::builder(manager)
            .max_size(options.max_connections.max(2))
            .runtime(deadpool_postgres::Runtime::Tokio1)
            .wait_timeout(Some(options.connect_timeout))
            .create_timeout(Some(options.connect_timeout))
            .build()
            .map_err(|error| StoreError::backend("building the connection pool", error))?;
        let store = Self {
            job_locks: Mutex::new(HashMap::new()),
            pool,
            runtime: StoreRuntime(Some(runtime)),
            location,
            options,
            vector_indexes: Mutex::new(HashSet::new()),
        };
        store.run(async {
            let mut client = store.client().await?;
            schema::migrate(&mut client).await
        })?;
        Ok(store)
    }

    /// The server and database (password removed).
    pub fn location(&self) -> &str {
        &self.location
    }

    /// Runs a future on the store's runtime, blocking this thread.
    fn run<T>(&self, future: impl Future<Output = StoreResult<T>>) -> StoreResult<T> {
        self.runtime.get().block_on(future)
    }

    /// A pooled connection.
    async fn client(&self) -> StoreResult<deadpool_postgres::Object> {
        self.pool.get().await.map_err(|error| match error {
            deadpool_postgres::PoolError::Backend(error) => {
                StoreError::Unreachable { location: self.location.clone(), detail: error::describe(&error) }
            }
            other => StoreError::Unreachable { location: self.location.clone(), detail: other.to_string() },
        })
    }

    /// Runs `work` in one transaction; retries deadlocks and serialization
    /// failures with backoff until `max_write_wait`.
    async fn write<T>(&self, mut work: impl AsyncFnMut(&Transaction<'_>) -> StoreResult<T>) -> StoreResult<T> {
        let started = Instant::now();
        let mut backoff = Duration::from_millis(5);
        let mut client = self.client().await?;
        loop {
            let tx = client.transaction().await.ctx("starting a write")?;
            let attempt = match work(&tx).await {
                Ok(value) => tx.commit().await.ctx("committing").map(|()| value),
                Err(error) => Err(error),
            };
            match attempt {
                Err(StoreError::Busy { .. }) if started.elapsed() < self.options.max_write_wait => {
                    tracing::debug!(waited_ms = started.elapsed().as_millis() as u64, "write conflict, retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(250));
                }
                Err(StoreError::Busy { .. }) => {
                    return Err(StoreError::Busy { waited_ms: started.elapsed().as_millis() as u64 });
                }
                other => return other,
            }
        }
    }

    /// Runs `work` in one read-only transaction (one snapshot).
    async fn read<T>(&self, work: impl AsyncFnOnce(&Transaction<'_>) -> StoreResult<T>) -> StoreResult<T> {
        let mut client = self.client().await?;
        let tx = client
            .build_transaction()
            .read_only(true)
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .start()
            .await
            .ctx("starting a read")?;
        let value = work(&tx).await?;
        tx.commit().await.ctx("ending a read")?;
        Ok(value)
    }
}

impl StoreRead for PgStore {
    fn info(&self) -> StoreResult<StorageInfo> {
        self.run(self.read(async |tx| {
            let version = schema::current_version(tx).await?;
            let row = tx
                .query_one(
                    "SELECT current_database(), current_schema(), \
                     (SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c \
                      JOIN pg_namespace n ON n.oid = c.relnamespace \
                      WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'm'))",
                    &[],
                )
                .await
                .ctx("reading the database size")?;
            let database: String = row.get(0);
            let schema: String = row.get(1);
            let size: i64 = row.get(2);
            Ok(StorageInfo {
                backend: "postgres",
                location: format!("{} (database {database}, schema {schema})", self.location),
                schema_version: version,
                size_bytes: u64::try_from(size).ok(),
            })
        }))
    }

    fn workspaces(&self) -> StoreResult<Vec<WorkspaceId>> {
        self.run(self.read(async |tx| records::workspaces(tx).await))
    }

    fn drawer(&self, workspace: &WorkspaceId, id: &DrawerId) -> StoreResult<Option<Drawer>> {
        self.run(self.read(async |tx| Ok(records::drawers_by_id(tx, workspace, std::slice::from_ref(id)).await?.pop())))
    }

    fn drawers(&self, workspace: &WorkspaceId, ids: &[DrawerId]) -> StoreResult<Vec<Drawer>> {
        self.run(self.read(async |tx| records::drawers_by_id(tx, workspace, ids).await))
    }

    fn scan_drawers(
        &self,
        workspace: &WorkspaceId,
        after: Option<&DrawerId>,
        limit: usize,
    ) -> StoreResult<Vec<Drawer>> {
        self.run(self.read(async |tx| records::scan_drawers(tx, workspace, after, limit).await))
    }

    fn taxonomy(&self, workspace: &WorkspaceId) -> StoreResult<Taxonomy> {
        self.run(self.read(async |tx| records::taxonomy(tx, workspace).await))
    }

    fn identity(&self, workspace: &WorkspaceId) -> StoreResult<Option<IdentityRecord>> {
        self.run(self.read(async |tx| records::identity(tx, workspace).await))
    }

    fn entities(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Entity>> {
        self.run(self.read(async |tx| kg::entities_where(tx, workspace, "", &[]).await))
    }

    fn triples(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Triple>> {
        self.run(self.read(async |tx| kg::triples_where(tx, workspace, "", &[]).await))
    }

    fn sessions(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Session>> {
        self.run(self.read(async |tx| records::sessions(tx, workspace).await))
    }

    fn episodic_summaries(&self, workspace: &WorkspaceId) -> StoreResult<Vec<EpisodicSummary>> {
        self.run(self.read(async |tx| records::episodic_summaries(tx, workspace).await))
    }

    fn tunnels(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Tunnel>> {
        self.run(self.read(async |tx| records::tunnels(tx, workspace).await))
    }

    fn centroids(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Centroid>> {
        self.run(self.read(async |tx| records::centroids(tx, workspace).await))
    }

    fn entity_aliases(&self, workspace: &WorkspaceId) -> StoreResult<Vec<EntityAlias>> {
        self.run(self.read(async |tx| alias::entity_aliases(tx, workspace).await))
    }

    fn resolve_entities(&self, workspace: &WorkspaceId, ids: &[String]) -> StoreResult<HashMap<String, String>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        self.run(self.read(async |tx| alias::resolve_entities(tx, workspace, ids).await))
    }

    fn entity_usage(&self, workspace: &WorkspaceId) -> StoreResult<Vec<EntityUsage>> {
        self.run(self.read(async |tx| alias::entity_usage(tx, workspace).await))
    }

    fn alias_records(&self, workspace: &WorkspaceId) -> StoreResult<Vec<AliasRecord>> {
        self.run(self.read(async |tx| alias::alias_records(tx, workspace).await))
    }

    fn room_centroids(&self, workspace: &WorkspaceId) -> StoreResult<Vec<RoomCentroid>> {
        self.run(self.read(async |tx| centroid::room_centroids(tx, workspace).await))
    }

    fn centroid_samples(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        which: &CentroidSamples,
        limit: usize,
    ) -> StoreResult<Vec<(DrawerId, Vec<f32>)>> {
        self.run(self.read(async |tx| centroid::centroid_samples(tx, workspace, model, which, limit).await))
    }

    fn embeddings_by_hash(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        hashes: &[ContentHash],
    ) -> StoreResult<HashMap<ContentHash, Vec<f32>>> {
        self.run(self.read(async |tx| records::embeddings_by_hash(tx, workspace, model, hashes).await))
    }

    fn drawers_missing_embedding(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        limit: usize,
    ) -> StoreResult<Vec<(DrawerId, Content)>> {
        self.run(self.read(async |tx| records::drawers_missing_embedding(tx, workspace, model, limit).await))
    }

    fn embedding_models(&self, workspace: &WorkspaceId) -> StoreResult<Vec<(Option<String>, u64)>> {
        self.run(self.read(async |tx| records::embedding_models(tx, workspace).await))
    }

    fn lexical_search(
        &self,
        workspace: &WorkspaceId,
        terms: &[String],
        filter: &DrawerFilter,
        limit: usize,
    ) -> StoreResult<Vec<(DrawerId, f64)>> {
        self.run(self.read(async |tx| query::lexical_search(tx, workspace, terms, filter, limit).await))
    }

    fn term_frequencies(&self, terms: &[String], bound: fn(u64) -> u64) -> StoreResult<(u64, Vec<u64>)> {
        self.run(self.read(async |tx| query::term_frequencies(tx, terms, bound).await))
    }

    fn filtered_ids(&self, workspace: &WorkspaceId, filter: &DrawerFilter) -> StoreResult<Vec<DrawerId>> {
        self.run(self.read(async |tx| query::filtered_ids(tx, workspace, filter).await))
    }

    fn revision(&self) -> StoreResult<i64> {
        self.run(async {
            let client = self.client().await?;
            let row = client
                .query_one("SELECT rev FROM palace_counters WHERE id = 1", &[])
                .await
                .ctx("reading the revision")?;
            Ok(row.get(0))
        })
    }

    fn vector_changes(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        after: i64,
        limit: usize,
    ) -> StoreResult<Vec<VectorChange>> {
        self.run(self.read(async |tx| query::vector_changes(tx, workspace, model, after, limit).await))
    }

    fn top_drawers(&self, workspace: &WorkspaceId, wing: Option<&str>, limit: usize) -> StoreResult<Vec<Drawer>> {
        self.run(self.read(async |tx| query::top_drawers(tx, workspace, wing, limit).await))
    }

    fn entities_by_id(&self, workspace: &WorkspaceId, ids: &[String]) -> StoreResult<Vec<Entity>> {
        let ids = ids.to_vec();
        self.run(self.read(async |tx| kg::entities_where(tx, workspace, "AND id = ANY($2)", &[&ids]).await))
    }

    fn entity_names(&self, workspace: &WorkspaceId) -> StoreResult<Vec<String>> {
        self.run(self.read(async |tx| kg::entity_names(tx, workspace).await))
    }

    fn triples_about(
        &self,
        workspace: &WorkspaceId,
        entity_id: &str,
        direction: Direction,
    ) -> StoreResult<Vec<Triple>> {
        self.run(self.read(async |tx| kg::triples_about(tx, workspace, entity_id, direction).await))
    }

    fn kg_stats(&self, workspace: &WorkspaceId) -> StoreResult<KgStats> {
        self.run(self.read(async |tx| kg::kg_stats(tx, workspace).await))
    }

    fn drawers_mentioning(
        &self,
        workspace: &WorkspaceId,
        entity_ids: &[String],
        limit: usize,
    ) -> StoreResult<Vec<(DrawerId, u32)>> {
        self.run(self.read(async |tx| kg::drawers_mentioning(tx, workspace, entity_ids, limit).await))
    }

    fn hall_counts(&self, workspace: &WorkspaceId) -> StoreResult<Vec<HallCount>> {
        self.run(self.read(async |tx| kg::hall_counts(tx, workspace).await))
    }

    fn place_drawers(
        &self,
        workspace: &WorkspaceId,
        wing: &str,
        room: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<Drawer>> {
        self.run(self.read(async |tx| query::place_drawers(tx, workspace, wing, room, limit).await))
    }

    fn page_drawers(
        &self,
        workspace: &WorkspaceId,
        wing: Option<&str>,
        room: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> StoreResult<Vec<Drawer>> {
        self.run(self.read(async |tx| query::page_drawers(tx, workspace, wing, room, offset, limit).await))
    }

    fn source_cursor(&self, workspace: &WorkspaceId, source: &str) -> StoreResult<Option<String>> {
        self.run(self.read(async |tx| records::source_cursor(tx, workspace, source).await))
    }

    fn events(&self, workspace: &WorkspaceId, filter: &EventFilter) -> StoreResult<Vec<StoredEvent>> {
        self.run(self.read(async |tx| coordination::events(tx, workspace, filter).await))
    }

    fn event(&self, workspace: &WorkspaceId, id: &str) -> StoreResult<Option<StoredEvent>> {
        self.run(self.read(async |tx| coordination::event(tx, workspace, id).await))
    }

    fn artifact(&self, workspace: &WorkspaceId, id: &str) -> StoreResult<Option<Artifact>> {
        self.run(self.read(async |tx| coordination::artifact(tx, workspace, id).await))
    }

    fn scan_artifacts(&self, workspace: &WorkspaceId, after: Option<&str>, limit: usize) -> StoreResult<Vec<Artifact>> {
        self.run(self.read(async |tx| coordination::scan_artifacts(tx, workspace, after, limit).await))
    }

    fn pipeline_counts(&self, workspace: &WorkspaceId, now: Timestamp) -> StoreResult<PipelineCounts> {
        self.run(self.read(async |tx| work::pipeline_counts(tx, workspace, &now).await))
    }

    fn session_activity(
        &self,
        workspace: &WorkspaceId,
        idle_before: Timestamp,
        except_wing: Option<&str>,
    ) -> StoreResult<Vec<SessionActivity>> {
        self.run(self.read(async |tx| work::session_activity(tx, workspace, &idle_before, except_wing).await))
    }

    fn prune_candidates(
        &self,
        workspace: &WorkspaceId,
        below: f64,
        max_accesses: u64,
        filed_before: Timestamp,
        keep: u64,
    ) -> StoreResult<Vec<PruneCandidate>> {
        self.run(
            self.read(async |tx| work::prune_candidates(tx, workspace, below, max_accesses, &filed_before, keep).await),
        )
    }

    fn vector_search(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        query: &[f32],
        filter: &DrawerFilter,
        limit: usize,
    ) -> StoreResult<Option<Vec<(DrawerId, f32)>>> {
        self.run(async {
            let mut client = self.client().await?;
            let tx = client.transaction().await.ctx("starting a vector search")?;
            let hits = vectors::search(&tx, workspace, model, query, filter, limit).await?;
            tx.commit().await.ctx("ending a vector search")?;
            Ok(Some(hits))
        })
    }
}

impl Directory for PgStore {
    fn put_principal(&self, principal: &Principal) -> StoreResult<bool> {
        self.run(self.write(async |tx| directory::put_principal(tx, principal).await))
    }

    fn principal(&self, id: &PrincipalId) -> StoreResult<Option<Principal>> {
        self.run(self.read(async |tx| directory::principal(tx, id).await))
    }

    fn principals(&self) -> StoreResult<Vec<Principal>> {
        self.run(self.read(async |tx| directory::principals(tx).await))
    }

    fn set_principal_disabled(&self, id: &PrincipalId, at: Option<Timestamp>) -> StoreResult<bool> {
        self.run(self.write(async |tx| directory::set_principal_disabled(tx, id, at).await))
    }

    fn has_principals(&self) -> StoreResult<bool> {
        self.run(self.read(async |tx| directory::has_principals(tx).await))
    }

    fn put_token(&self, token: &TokenRecord) -> StoreResult<()> {
        self.run(self.write(async |tx| directory::put_token(tx, token).await))
    }

    fn token(&self, id: &TokenId) -> StoreResult<Option<TokenRecord>> {
        self.run(self.read(async |tx| directory::token(tx, id).await))
    }

    fn tokens(&self, principal: Option<&PrincipalId>) -> StoreResult<Vec<TokenRecord>> {
        self.run(self.read(async |tx| directory::tokens(tx, principal).await))
    }

    fn revoke_token(&self, id: &TokenId, at: Timestamp) -> StoreResult<bool> {
        self.run(self.write(async |tx| directory::revoke_token(tx, id, &at).await))
    }

    fn touch_token(&self, id: &TokenId, at: Timestamp) -> StoreResult<()> {
        self.run(self.write(async |tx| directory::touch_token(tx, id, &at).await))
    }

    fn put_team(&self, team: &Team) -> StoreResult<bool> {
        self.run(self.write(async |tx| directory::put_team(tx, team).await))
    }

    fn team(&self, id: &TeamId) -> StoreResult<Option<Team>> {
        self.run(self.read(async |tx| directory::team(tx, id).await))
    }

    fn teams(&self) -> StoreResult<Vec<Team>> {
        self.run(self.read(async |tx| directory::teams(tx).await))
    }

    fn set_team_member(&self, team: &TeamId, member: &PrincipalId, add: bool) -> StoreResult<bool> {
        self.run(self.write(async |tx| directory::set_team_member(tx, team, member, add).await))
    }

    fn set_team_leader(&self, team: &TeamId, leader: &PrincipalId) -> StoreResult<bool> {
        self.run(self.write(async |tx| directory::set_team_leader(tx, team, leader).await))
    }

    fn delete_team(&self, team: &TeamId) -> StoreResult<bool> {
        self.run(self.write(async |tx| directory::delete_team(tx, team).await))
    }

    fn ensure_workspace(&self, workspace: &WorkspaceId, at: Timestamp) -> StoreResult<()> {
        self.run(self.write(async |tx| records::ensure_workspace(tx, workspace, &at).await))
    }

    fn put_grant(&self, grant: &Grant) -> StoreResult<()> {
        self.run(self.write(async |tx| directory::put_grant(tx, grant).await))
    }

    fn delete_grant(&self, workspace: &WorkspaceId, member: &Member) -> StoreResult<bool> {
        self.run(self.write(async |tx| directory::delete_grant(tx, workspace, member).await))
    }

    fn grants(&self, workspace: Option<&WorkspaceId>) -> StoreResult<Vec<Grant>> {
        self.run(self.read(async |tx| directory::grants(tx, workspace).await))
    }

    fn grants_for(&self, members: &[Member]) -> StoreResult<Vec<Grant>> {
        if members.is_empty() {
            return Ok(Vec::new());
        }
        self.run(self.read(async |tx| directory::grants_for(tx, members).await))
    }

    fn limits(&self, workspace: &WorkspaceId) -> StoreResult<Option<Limits>> {
        self.run(self.read(async |tx| directory::limits(tx, workspace).await))
    }

    fn set_limits(&self, workspace: &WorkspaceId, limits: &Limits) -> StoreResult<()> {
        self.run(self.write(async |tx| directory::set_limits(tx, workspace, limits).await))
    }

    fn usage(&self, workspace: &WorkspaceId) -> StoreResult<Usage> {
        self.run(self.read(async |tx| directory::usage(tx, workspace).await))
    }

    fn append_audit(&self, entry: &AuditEntry) -> StoreResult<i64> {
        self.run(self.write(async |tx| directory::append_audit(tx, entry).await))
    }

    fn audit(&self, filter: &AuditFilter) -> StoreResult<Vec<AuditEntry>> {
        self.run(self.read(async |tx| directory::audit(tx, filter).await))
    }
}

impl StoreWrite for PgStore {
    fn put_drawers(&self, drawers: &[Drawer]) -> StoreResult<Vec<PutOutcome>> {
        self.run(async {
            self.ensure_vector_indexes(drawers.iter().filter_map(|d| d.embedding.as_ref())).await?;
            self.write(async |tx| {
                let mut outcomes = Vec::with_capacity(drawers.len());
                for drawer in drawers {
                    outcomes.push(records::insert_drawer(tx, drawer).await?);
                }
                Ok(outcomes)
            })
            .await
        })
    }

    fn put_and_remove_drawers(
        &self,
        workspace: &WorkspaceId,
        drawers: &[Drawer],
        remove: &[DrawerId],
    ) -> StoreResult<(Vec<PutOutcome>, usize)> {
        self.run(async {
            self.ensure_vector_indexes(drawers.iter().filter_map(|d| d.embedding.as_ref())).await?;
            self.write(async |tx| {
                let mut outcomes = Vec::with_capacity(drawers.len());
                for drawer in drawers {
                    outcomes.push(records::insert_drawer(tx, drawer).await?);
                }
                let mut removed = 0;
                for id in remove {
                    removed += usize::from(records::delete_drawer(tx, workspace, id).await?);
                }
                Ok((outcomes, removed))
            })
            .await
        })
    }

    fn set_drawer_status(
        &self,
        workspace: &WorkspaceId,
        id: &DrawerId,
        status: DrawerStatus,
        reason: Option<&str>,
        at: Timestamp,
    ) -> StoreResult<bool> {
        self.run(self.write(async |tx| records::set_drawer_status(tx, workspace, id, status, reason, &at).await))
    }

    fn replace_drawer(&self, drawer: &Drawer) -> StoreResult<bool> {
        self.run(async {
            self.ensure_vector_indexes(drawer.embedding.as_ref()).await?;
            self.write(async |tx| {
                if !records::delete_drawer(tx, &drawer.workspace_id, &drawer.id).await? {
                    return Ok(false);
                }
                records::insert_drawer(tx, drawer).await?;
                Ok(true)
            })
            .await
        })
    }

    fn save_session(&self, session: &Session) -> StoreResult<()> {
        self.run(self.write(async |tx| records::write_session(tx, session, true).await.map(|_| ())))
    }

    fn delete_drawer(&self, workspace: &WorkspaceId, id: &DrawerId) -> StoreResult<bool> {
        self.run(self.write(async |tx| records::delete_drawer(tx, workspace, id).await))
    }

    fn set_embeddings(&self, workspace: &WorkspaceId, vectors: &[(DrawerId, Embedding)]) -> StoreResult<usize> {
        self.run(async {
            self.ensure_vector_indexes(vectors.iter().map(|(_, e)| e)).await?;
            self.write(async |tx| records::set_embeddings(tx, workspace, vectors).await).await
        })
    }

    fn cache_embeddings(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        vectors: &[(ContentHash, Vec<f32>)],
        at: Timestamp,
    ) -> StoreResult<()> {
        self.run(self.write(async |tx| records::cache_embeddings(tx, workspace, model, vectors, &at).await))
    }

    fn touch_access(&self, workspace: &WorkspaceId, ids: &[DrawerId], at: Timestamp) -> StoreResult<usize> {
        if ids.is_empty() {
            return Ok(0);
        }
        self.run(self.write(async |tx| query::touch_access(tx, workspace, ids, &at).await))
    }

    fn add_entities(&self, entities: &[Entity]) -> StoreResult<usize> {
        if entities.is_empty() {
            return Ok(0);
        }
        self.run(self.write(async |tx| kg::add_entities(tx, entities).await))
    }

    fn add_triple(&self, triple: &Triple) -> StoreResult<TripleOutcome> {
        self.run(self.write(async |tx| kg::add_triple(tx, triple).await))
    }

    fn invalidate_triples(
        &self,
        workspace: &WorkspaceId,
        subject: &str,
        predicate: &str,
        object: &str,
        ended: Timestamp,
    ) -> StoreResult<usize> {
        self.run(self.write(async |tx| kg::invalidate_triples(tx, workspace, subject, predicate, object, &ended).await))
    }

    fn delete_triple(&self, workspace: &WorkspaceId, id: &str) -> StoreResult<bool> {
        self.run(self.write(async |tx| kg::delete_triple(tx, workspace, id).await))
    }

    fn put_tunnel(&self, tunnel: &Tunnel) -> StoreResult<bool> {
        let record = PalaceRecord::Tunnel(tunnel.clone());
        self.run(self.write(async |tx| Ok(records::import_record(tx, &record).await?.inserted > 0)))
    }

    fn delete_tunnel(&self, workspace: &WorkspaceId, id: &str) -> StoreResult<bool> {
        self.run(self.write(async |tx| kg::delete_tunnel(tx, workspace, id).await))
    }

    fn set_source_cursor(
        &self,
        workspace: &WorkspaceId,
        source: &str,
        cursor: Option<&str>,
        at: Timestamp,
    ) -> StoreResult<()> {
        self.run(self.write(async |tx| records::set_source_cursor(tx, workspace, source, cursor, &at).await))
    }

    fn put_artifact(&self, artifact: &Artifact) -> StoreResult<PutOutcome> {
        self.run(self.write(async |tx| coordination::put_artifact(tx, artifact).await))
    }

    fn append_event(&self, event: &Event, artifacts: &[Artifact]) -> StoreResult<AppendOutcome> {
        self.run(self.write(async |tx| coordination::append_event(tx, event, artifacts).await))
    }

    fn claim_raw_drawers(
        &self,
        workspace: &WorkspaceId,
        worker: &str,
        limit: usize,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<Vec<Drawer>> {
        self.run(self.write(async |tx| work::claim_raw_drawers(tx, workspace, worker, limit, &now, &until).await))
    }

    fn complete_claims(&self, workspace: &WorkspaceId, worker: &str, drawers: &[Drawer]) -> StoreResult<Vec<DrawerId>> {
        self.run(self.write(async |tx| work::complete_claims(tx, workspace, worker, drawers).await))
    }

    fn decay_importance(
        &self,
        workspace: &WorkspaceId,
        filed_before: Timestamp,
        idle_since: Timestamp,
        factor: f64,
        floor: f64,
    ) -> StoreResult<usize> {
        self.run(
            self.write(async |tx| {
                work::decay_importance(tx, workspace, &filed_before, &idle_since, factor, floor).await
            }),
        )
    }

    fn expire_episodic_summaries(&self, workspace: &WorkspaceId, now: Timestamp) -> StoreResult<usize> {
        self.run(self.write(async |tx| work::expire_episodic_summaries(tx, workspace, &now).await))
    }

    fn save_episodic_summary(&self, summary: &EpisodicSummary) -> StoreResult<()> {
        self.run(self.write(async |tx| work::save_episodic_summary(tx, summary).await))
    }

    fn mark_episodes_promoted(&self, workspace: &WorkspaceId, ids: &[String], at: Timestamp) -> StoreResult<usize> {
        if ids.is_empty() {
            return Ok(0);
        }
        self.run(self.write(async |tx| work::mark_episodes_promoted(tx, workspace, ids, &at).await))
    }

    fn merge_entity(
        &self,
        workspace: &WorkspaceId,
        alias: &str,
        canonical: &str,
        reason: &str,
        at: Timestamp,
    ) -> StoreResult<MergeOutcome> {
        self.run(self.write(async |tx| alias::merge_entity(tx, workspace, alias, canonical, reason, &at).await))
    }

    fn unmerge_entity(&self, workspace: &WorkspaceId, alias: &str) -> StoreResult<Option<Unmerged>> {
        self.run(self.write(async |tx| alias::unmerge_entity(tx, workspace, alias).await))
    }

    fn put_centroid(&self, centroid: &Centroid) -> StoreResult<bool> {
        self.run(self.write(async |tx| centroid::put_centroid(tx, centroid).await))
    }

    fn put_room_centroid(&self, centroid: &RoomCentroid) -> StoreResult<bool> {
        self.run(self.write(async |tx| centroid::put_room_centroid(tx, centroid).await))
    }

    fn delete_room_centroid(&self, workspace: &WorkspaceId, wing: &str, room: &str) -> StoreResult<bool> {
        self.run(self.write(async |tx| centroid::delete_room_centroid(tx, workspace, wing, room).await))
    }

    fn try_start_job(&self, job: &str, tick: i64, holder: &str, _lease: Duration, now: Timestamp) -> StoreResult<bool> {
        self.run(async {
            let client = self.client().await?;
            match work::try_start_job(&client, job, tick, holder, &now).await? {
                true => {
                    let previous =
                        self.job_locks.lock().expect("job lock map poisoned").insert(job.to_string(), client);
                    if let Some(previous) = previous {
                        work::release_job(previous, job).await;
                    }
                    Ok(true)
                }
                false => Ok(false),
            }
        })
    }

    fn finish_job(&self, job: &str, holder: &str) -> StoreResult<()> {
        let held = self.job_locks.lock().expect("job lock map poisoned").remove(job);
        self.run(async {
            // Marked before the lock is released, so a reader never sees a
            // released job whose run still looks unfinished.
            let marked = match &held {
                Some(client) => work::mark_finished(client, job, holder).await,
                None => work::mark_finished(&self.client().await?, job, holder).await,
            };
            if let Some(client) = held {
                work::release_job(client, job).await;
            }
            marked
        })
    }

    fn set_identity(&self, workspace: &WorkspaceId, identity: &Identity, at: Timestamp) -> StoreResult<()> {
        self.run(self.write(async |tx| records::set_identity(tx, workspace, identity, &at).await))
    }

    fn import(&self, batch: &[PalaceRecord]) -> StoreResult<RecordCounts> {
        self.run(async {
            self.ensure_vector_indexes(batch.iter().filter_map(|record| match record {
                PalaceRecord::Drawer(drawer) => drawer.embedding.as_ref(),
                _ => None,
            }))
            .await?;
            self.write(async |tx| {
                let mut counts = RecordCounts::default();
                for record in batch {
                    counts += records::import_record(tx, record).await?;
                }
                Ok(counts)
            })
            .await
        })
    }

    fn verify(&self) -> StoreResult<Vec<HealthCheck>> {
        self.run(self.read(async |tx| health::verify(tx).await))
    }

    fn rebuild_derived(&self) -> StoreResult<Vec<HealthCheck>> {
        self.run(self.write(async |tx| health::rebuild(tx).await))?;
        self.vector_indexes.lock().expect("vector index set poisoned").clear();
        self.verify()
    }
}

impl PgStore {
    /// Creates the HNSW index of each embedding model not seen yet.
    async fn ensure_vector_indexes<'a>(&self, embeddings: impl IntoIterator<Item = &'a Embedding>) -> StoreResult<()> {
        let mut wanted: Vec<(String, usize)> = Vec::new();
        {
            let known = self.vector_indexes.lock().expect("vector index set poisoned");
            for embedding in embeddings {
                if !known.contains(&embedding.model) && !wanted.iter().any(|(model, _)| *model == embedding.model) {
                    wanted.push((embedding.model.clone(), embedding.vector.len()));
                }
            }
        }
        for (model, dim) in wanted {
            let mut client = self.client().await?;
            vectors::ensure_index(&mut client, &model, dim).await?;
            self.vector_indexes.lock().expect("vector index set poisoned").insert(model);
        }
        Ok(())
    }
}
