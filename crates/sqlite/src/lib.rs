//! The embedded backend: one SQLite file per palace.
//!
//! The file is the single source of truth. It runs in WAL mode so readers
//! never block the writer and every new read sees every committed write, by
//! any process. Writes are short `BEGIN IMMEDIATE` transactions: a writer
//! that finds the file locked waits (`busy_timeout`), then retries with
//! backoff until `max_write_wait`, and only then reports `Busy`. Derived
//! structures (the FTS5 lexical index, the per-room counts) change inside the
//! same transaction as the rows, so they cannot drift; `verify` compares them
//! with the rows and `rebuild_derived` recomputes them.
//!
//! Opening never writes to a file that is not already a palace: the
//! application id and the tables are checked first.
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
mod snapshot;
mod work;

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use mempalace_core::centroid::{Centroid, RoomCentroid};
use mempalace_core::coordination::{Artifact, Event, StoredEvent};
use mempalace_core::kg::{Entity, EntityAlias, Triple};
use mempalace_core::session::{EpisodicSummary, Session};
use mempalace_core::tunnel::Tunnel;
use std::collections::HashMap;

use mempalace_core::tenancy::{
    AuditEntry, AuditFilter, Grant, Limits, Member, Principal, PrincipalId, Team, TeamId, TokenId, TokenRecord, Usage,
};
use mempalace_core::{
    Content, ContentHash, Drawer, DrawerId, DrawerStatus, Embedding, Identity, Timestamp, WorkspaceId,
};
use mempalace_store::{
    AliasRecord, AppendOutcome, CentroidSamples, Direction, Directory, DrawerFilter, EntityUsage, EventFilter,
    HallCount, HealthCheck, IdentityRecord, KgStats, MergeOutcome, PalaceRecord, PipelineCounts, PruneCandidate,
    PutOutcome, RecordCounts, SessionActivity, StorageInfo, StoreError, StoreRead, StoreResult, StoreWrite, Taxonomy,
    TripleOutcome, Unmerged, VectorChange, VectorSnapshot,
};
use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

use crate::error::{Context, is_busy};

pub use schema::SCHEMA_VERSION;

/// How to open a palace file.
#[derive(Debug, Clone)]
pub struct SqliteOptions {
    /// Create the file (and its schema) when it does not exist.
    pub create: bool,
    /// How long one statement waits for a lock before SQLite gives up.
    pub busy_timeout: Duration,
    /// How long a write keeps retrying, in total, before reporting `Busy`.
    pub max_write_wait: Duration,
    /// Open read-only (no migrations, no writes).
    pub read_only: bool,
    /// Reads use the writer connection while it is free, instead of
    /// opening a reader connection (each new connection parses the whole
    /// schema first, about a millisecond). A read never waits for a write:
    /// when the writer is busy a reader is opened as usual. A write can
    /// wait for a read running on the writer, so this is for a process
    /// that uses the store from one thread at a time, such as one CLI
    /// command; servers leave it off.
    pub share_writer: bool,
}

impl Default for SqliteOptions {
    fn default() -> Self {
        Self {
            create: false,
            busy_timeout: Duration::from_millis(5_000),
            max_write_wait: Duration::from_secs(60),
            read_only: false,
            share_writer: false,
        }
    }
}

/// Readers kept open for reuse; more are opened on demand when busy.
const MAX_IDLE_READERS: usize = 8;

/// A palace in one SQLite file.
pub struct SqliteStore {
    path: PathBuf,
    options: SqliteOptions,
    // Field order is drop order: readers close before the writer, so the
    // last connection to close is the writable one, which checkpoints the
    // WAL and removes it. A read-only connection closing last would leave a
    // full WAL that every later process must scan on open.
    readers: Mutex<Vec<Connection>>,
    writer: Mutex<Option<Connection>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("path", &self.path).finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (and with `options.create`, creates) the palace file at `path`,
    /// applying pending migrations.
    pub fn open(path: &Path, options: SqliteOptions) -> StoreResult<Self> {
        let exists = path.exists();
        if !exists && !options.create {
            return Err(StoreError::Missing { location: path.to_path_buf() });
        }
        if path.is_dir() {
            return Err(StoreError::NotAPalace {
                location: path.to_path_buf(),
                reason: "it is a directory".to_string(),
            });
        }
        if exists {
            schema::check_existing(path, options.create)?;
        }
        let store =
            Self { path: path.to_path_buf(), options, writer: Mutex::new(None), readers: Mutex::new(Vec::new()) };
        if !store.options.read_only {
            let mut conn = store.connect(true)?;
            schema::migrate(&mut conn, &store.options)?;
            *store.writer.lock().expect("writer mutex poisoned") = Some(conn);
        } else {
            let conn = store.connect(false)?;
            let version = schema::current_version(&conn)?;
            if version > SCHEMA_VERSION {
                return Err(StoreError::SchemaTooNew { found: version, supported: SCHEMA_VERSION });
            }
            store.readers.lock().expect("reader mutex poisoned").push(conn);
        }
        Ok(store)
    }

    /// The palace file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn connect(&self, write: bool) -> StoreResult<Connection> {
        let mut flags = OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
        if write {
            flags |= OpenFlags::SQLITE_OPEN_READ_WRITE;
            if self.options.create {
                flags |= OpenFlags::SQLITE_OPEN_CREATE;
            }
        } else {
            flags |= OpenFlags::SQLITE_OPEN_READ_ONLY;
        }
        let conn = Connection::open_with_flags(&self.path, flags).ctx("opening the palace file")?;
        conn.busy_timeout(self.options.busy_timeout).ctx("setting busy_timeout")?;
        schema::configure(&conn, write)?;
        Ok(conn)
    }

    /// Runs `work` in one write transaction, waiting and retrying while
    /// another writer holds the lock.
    fn write<T>(&self, work: impl FnMut(&Transaction<'_>) -> StoreResult<T>) -> StoreResult<T> {
        if self.options.read_only {
            return Err(StoreError::Io { detail: "the palace was opened read-only".to_string() });
        }
        let mut guard = self.writer.lock().expect("writer mutex poisoned");
        let conn = guard.as_mut().expect("a writable store always has its writer connection");
        write_with_retry(conn, self.options.max_write_wait, work)
    }

    /// Runs `work` inside one read transaction ([`read_in_transaction`]) on
    /// an idle reader connection, on the writer when `share_writer` is set
    /// and it is free, else on a new reader.
    fn read<T>(&self, work: impl FnOnce(&Connection) -> StoreResult<T>) -> StoreResult<T> {
        let pooled = self.readers.lock().expect("reader mutex poisoned").pop();
        if pooled.is_none() && self.options.share_writer {
            // `try_lock`: a busy writer (or a read already on it) sends
            // this read to a reader connection instead of waiting.
            if let Ok(mut guard) = self.writer.try_lock()
                && let Some(conn) = guard.as_mut()
                && conn.is_autocommit()
            {
                return read_in_transaction(conn, work);
            }
        }
        let conn = match pooled {
            Some(conn) => conn,
            None => self.connect(false)?,
        };
        let result = read_in_transaction(&conn, work);
        let mut readers = self.readers.lock().expect("reader mutex poisoned");
        if readers.len() < MAX_IDLE_READERS && conn.is_autocommit() {
            readers.push(conn);
        }
        result
    }
}

impl StoreRead for SqliteStore {
    fn info(&self) -> StoreResult<StorageInfo> {
        self.read(|conn| {
            let schema_version = schema::current_version(conn)?;
            let page_count: i64 = conn.query_row("PRAGMA page_count", [], |row| row.get(0)).ctx("page_count")?;
            let page_size: i64 = conn.query_row("PRAGMA page_size", [], |row| row.get(0)).ctx("page_size")?;
            let wal = std::fs::metadata(wal_path(&self.path)).map(|meta| meta.len()).unwrap_or(0);
            Ok(StorageInfo {
                backend: "sqlite",
                location: self.path.display().to_string(),
                schema_version,
                size_bytes: Some((page_count * page_size) as u64 + wal),
            })
        })
    }

    fn workspaces(&self) -> StoreResult<Vec<WorkspaceId>> {
        self.read(records::workspaces)
    }

    fn drawer(&self, workspace: &WorkspaceId, id: &DrawerId) -> StoreResult<Option<Drawer>> {
        self.read(|conn| Ok(records::drawers_by_id(conn, workspace, std::slice::from_ref(id))?.pop()))
    }

    fn drawers(&self, workspace: &WorkspaceId, ids: &[DrawerId]) -> StoreResult<Vec<Drawer>> {
        self.read(|conn| records::drawers_by_id(conn, workspace, ids))
    }

    fn scan_drawers(
        &self,
        workspace: &WorkspaceId,
        after: Option<&DrawerId>,
        limit: usize,
    ) -> StoreResult<Vec<Drawer>> {
        self.read(|conn| records::scan_drawers(conn, workspace, after, limit))
    }

    fn taxonomy(&self, workspace: &WorkspaceId) -> StoreResult<Taxonomy> {
        self.read(|conn| records::taxonomy(conn, workspace))
    }

    fn identity(&self, workspace: &WorkspaceId) -> StoreResult<Option<IdentityRecord>> {
        self.read(|conn| records::identity(conn, workspace))
    }

    fn entities(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Entity>> {
        self.read(|conn| records::entities(conn, workspace))
    }

    fn triples(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Triple>> {
        self.read(|conn| records::triples(conn, workspace))
    }

    fn sessions(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Session>> {
        self.read(|conn| records::sessions(conn, workspace))
    }

    fn episodic_summaries(&self, workspace: &WorkspaceId) -> StoreResult<Vec<EpisodicSummary>> {
        self.read(|conn| records::episodic_summaries(conn, workspace))
    }

    fn tunnels(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Tunnel>> {
        self.read(|conn| records::tunnels(conn, workspace))
    }

    fn centroids(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Centroid>> {
        self.read(|conn| records::centroids(conn, workspace))
    }

    fn entity_aliases(&self, workspace: &WorkspaceId) -> StoreResult<Vec<EntityAlias>> {
        self.read(|conn| alias::entity_aliases(conn, workspace))
    }

    fn resolve_entities(&self, workspace: &WorkspaceId, ids: &[String]) -> StoreResult<HashMap<String, String>> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        self.read(|conn| alias::resolve_entities(conn, workspace, ids))
    }

    fn entity_usage(&self, workspace: &WorkspaceId) -> StoreResult<Vec<EntityUsage>> {
        self.read(|conn| alias::entity_usage(conn, workspace))
    }

    fn alias_records(&self, workspace: &WorkspaceId) -> StoreResult<Vec<AliasRecord>> {
        self.read(|conn| alias::alias_records(conn, workspace))
    }

    fn room_centroids(&self, workspace: &WorkspaceId) -> StoreResult<Vec<RoomCentroid>> {
        self.read(|conn| centroid::room_centroids(conn, workspace))
    }

    fn centroid_samples(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        which: &CentroidSamples,
        limit: usize,
    ) -> StoreResult<Vec<(DrawerId, Vec<f32>)>> {
        self.read(|conn| centroid::centroid_samples(conn, workspace, model, which, limit))
    }

    fn embeddings_by_hash(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        hashes: &[ContentHash],
    ) -> StoreResult<HashMap<ContentHash, Vec<f32>>> {
        self.read(|conn| records::embeddings_by_hash(conn, workspace, model, hashes))
    }

    fn drawers_missing_embedding(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        limit: usize,
    ) -> StoreResult<Vec<(DrawerId, Content)>> {
        self.read(|conn| records::drawers_missing_embedding(conn, workspace, model, limit))
    }

    fn embedding_models(&self, workspace: &WorkspaceId) -> StoreResult<Vec<(Option<String>, u64)>> {
        self.read(|conn| records::embedding_models(conn, workspace))
    }

    fn lexical_search(
        &self,
        workspace: &WorkspaceId,
        terms: &[String],
        filter: &DrawerFilter,
        limit: usize,
    ) -> StoreResult<Vec<(DrawerId, f64)>> {
        self.read(|conn| query::lexical_search(conn, workspace, terms, filter, limit))
    }

    fn term_frequencies(&self, terms: &[String], bound: fn(u64) -> u64) -> StoreResult<(u64, Vec<u64>)> {
        self.read(|conn| query::term_frequencies(conn, terms, bound))
    }

    fn filtered_ids(&self, workspace: &WorkspaceId, filter: &DrawerFilter) -> StoreResult<Vec<DrawerId>> {
        self.read(|conn| query::filtered_ids(conn, workspace, filter))
    }

    fn revision(&self) -> StoreResult<i64> {
        self.read(query::revision)
    }

    fn vector_changes(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        after: i64,
        limit: usize,
    ) -> StoreResult<Vec<VectorChange>> {
        self.read(|conn| query::vector_changes(conn, workspace, model, after, limit))
    }

    fn vector_snapshot(&self, workspace: &WorkspaceId, model: &str) -> StoreResult<Option<VectorSnapshot>> {
        self.read(|conn| snapshot::load(conn, &self.path, workspace, model))
    }

    fn save_vector_snapshot(&self, workspace: &WorkspaceId, model: &str, rev: i64, bytes: &[u8]) -> StoreResult<bool> {
        if self.options.read_only {
            return Ok(false);
        }
        let (name, token) = snapshot::write_file(&self.path, workspace, model, rev, bytes)?;
        self.write(|tx| snapshot::name_snapshot(tx, &name, token, rev))?;
        Ok(true)
    }

    fn entities_by_id(&self, workspace: &WorkspaceId, ids: &[String]) -> StoreResult<Vec<Entity>> {
        self.read(|conn| kg::entities_by_id(conn, workspace, ids))
    }

    fn entity_names(&self, workspace: &WorkspaceId) -> StoreResult<Vec<String>> {
        self.read(|conn| kg::entity_names(conn, workspace))
    }

    fn triples_about(
        &self,
        workspace: &WorkspaceId,
        entity_id: &str,
        direction: Direction,
    ) -> StoreResult<Vec<Triple>> {
        self.read(|conn| kg::triples_about(conn, workspace, entity_id, direction))
    }

    fn kg_stats(&self, workspace: &WorkspaceId) -> StoreResult<KgStats> {
        self.read(|conn| kg::kg_stats(conn, workspace))
    }

    fn drawers_mentioning(
        &self,
        workspace: &WorkspaceId,
        entity_ids: &[String],
        limit: usize,
    ) -> StoreResult<Vec<(DrawerId, u32)>> {
        self.read(|conn| kg::drawers_mentioning(conn, workspace, entity_ids, limit))
    }

    fn hall_counts(&self, workspace: &WorkspaceId) -> StoreResult<Vec<HallCount>> {
        self.read(|conn| kg::hall_counts(conn, workspace))
    }

    fn top_drawers(&self, workspace: &WorkspaceId, wing: Option<&str>, limit: usize) -> StoreResult<Vec<Drawer>> {
        self.read(|conn| query::top_drawers(conn, workspace, wing, limit))
    }

    fn place_drawers(
        &self,
        workspace: &WorkspaceId,
        wing: &str,
        room: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<Drawer>> {
        self.read(|conn| query::place_drawers(conn, workspace, wing, room, limit))
    }

    fn page_drawers(
        &self,
        workspace: &WorkspaceId,
        wing: Option<&str>,
        room: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> StoreResult<Vec<Drawer>> {
        self.read(|conn| query::page_drawers(conn, workspace, wing, room, offset, limit))
    }

    fn source_cursor(&self, workspace: &WorkspaceId, source: &str) -> StoreResult<Option<String>> {
        self.read(|conn| records::source_cursor(conn, workspace, source))
    }

    fn events(&self, workspace: &WorkspaceId, filter: &EventFilter) -> StoreResult<Vec<StoredEvent>> {
        self.read(|conn| coordination::events(conn, workspace, filter))
    }

    fn event(&self, workspace: &WorkspaceId, id: &str) -> StoreResult<Option<StoredEvent>> {
        self.read(|conn| coordination::event(conn, workspace, id))
    }

    fn artifact(&self, workspace: &WorkspaceId, id: &str) -> StoreResult<Option<Artifact>> {
        self.read(|conn| coordination::artifact(conn, workspace, id))
    }

    fn scan_artifacts(&self, workspace: &WorkspaceId, after: Option<&str>, limit: usize) -> StoreResult<Vec<Artifact>> {
        self.read(|conn| coordination::scan_artifacts(conn, workspace, after, limit))
    }

    fn pipeline_counts(&self, workspace: &WorkspaceId, now: Timestamp) -> StoreResult<PipelineCounts> {
        self.read(|conn| work::pipeline_counts(conn, workspace, &now))
    }

    fn session_activity(
        &self,
        workspace: &WorkspaceId,
        idle_before: Timestamp,
        except_wing: Option<&str>,
    ) -> StoreResult<Vec<SessionActivity>> {
        self.read(|conn| work::session_activity(conn, workspace, &idle_before, except_wing))
    }

    fn prune_candidates(
        &self,
        workspace: &WorkspaceId,
        below: f64,
        max_accesses: u64,
        filed_before: Timestamp,
        keep: u64,
    ) -> StoreResult<Vec<PruneCandidate>> {
        self.read(|conn| work::prune_candidates(conn, workspace, below, max_accesses, &filed_before, keep))
    }
}

impl Directory for SqliteStore {
    fn put_principal(&self, principal: &Principal) -> StoreResult<bool> {
        self.write(|tx| directory::put_principal(tx, principal))
    }

    fn principal(&self, id: &PrincipalId) -> StoreResult<Option<Principal>> {
        self.read(|conn| directory::principal(conn, id))
    }

    fn principals(&self) -> StoreResult<Vec<Principal>> {
        self.read(directory::principals)
    }

    fn set_principal_disabled(&self, id: &PrincipalId, at: Option<Timestamp>) -> StoreResult<bool> {
        self.write(|tx| directory::set_principal_disabled(tx, id, at))
    }

    fn has_principals(&self) -> StoreResult<bool> {
        self.read(directory::has_principals)
    }

    fn put_token(&self, token: &TokenRecord) -> StoreResult<()> {
        self.write(|tx| directory::put_token(tx, token))
    }

    fn token(&self, id: &TokenId) -> StoreResult<Option<TokenRecord>> {
        self.read(|conn| directory::token(conn, id))
    }

    fn tokens(&self, principal: Option<&PrincipalId>) -> StoreResult<Vec<TokenRecord>> {
        self.read(|conn| directory::tokens(conn, principal))
    }

    fn revoke_token(&self, id: &TokenId, at: Timestamp) -> StoreResult<bool> {
        self.write(|tx| directory::revoke_token(tx, id, at))
    }

    fn touch_token(&self, id: &TokenId, at: Timestamp) -> StoreResult<()> {
        self.write(|tx| directory::touch_token(tx, id, at))
    }

    fn put_team(&self, team: &Team) -> StoreResult<bool> {
        self.write(|tx| directory::put_team(tx, team))
    }

    fn team(&self, id: &TeamId) -> StoreResult<Option<Team>> {
        self.read(|conn| directory::team(conn, id))
    }

    fn teams(&self) -> StoreResult<Vec<Team>> {
        self.read(directory::teams)
    }

    fn set_team_member(&self, team: &TeamId, member: &PrincipalId, add: bool) -> StoreResult<bool> {
        self.write(|tx| directory::set_team_member(tx, team, member, add))
    }

    fn set_team_leader(&self, team: &TeamId, leader: &PrincipalId) -> StoreResult<bool> {
        self.write(|tx| directory::set_team_leader(tx, team, leader))
    }

    fn delete_team(&self, team: &TeamId) -> StoreResult<bool> {
        self.write(|tx| directory::delete_team(tx, team))
    }

    fn ensure_workspace(&self, workspace: &WorkspaceId, at: Timestamp) -> StoreResult<()> {
        self.write(|tx| directory::ensure_workspace(tx, workspace, at))
    }

    fn put_grant(&self, grant: &Grant) -> StoreResult<()> {
        self.write(|tx| directory::put_grant(tx, grant))
    }

    fn delete_grant(&self, workspace: &WorkspaceId, member: &Member) -> StoreResult<bool> {
        self.write(|tx| directory::delete_grant(tx, workspace, member))
    }

    fn grants(&self, workspace: Option<&WorkspaceId>) -> StoreResult<Vec<Grant>> {
        self.read(|conn| directory::grants(conn, workspace))
    }

    fn grants_for(&self, members: &[Member]) -> StoreResult<Vec<Grant>> {
        self.read(|conn| directory::grants_for(conn, members))
    }

    fn limits(&self, workspace: &WorkspaceId) -> StoreResult<Option<Limits>> {
        self.read(|conn| directory::limits(conn, workspace))
    }

    fn set_limits(&self, workspace: &WorkspaceId, limits: &Limits) -> StoreResult<()> {
        self.write(|tx| directory::set_limits(tx, workspace, limits))
    }

    fn usage(&self, workspace: &WorkspaceId) -> StoreResult<Usage> {
        self.read(|conn| directory::usage(conn, workspace))
    }

    fn append_audit(&self, entry: &AuditEntry) -> StoreResult<i64> {
        self.write(|tx| directory::append_audit(tx, entry))
    }

    fn audit(&self, filter: &AuditFilter) -> StoreResult<Vec<AuditEntry>> {
        self.read(|conn| directory::audit(conn, filter))
    }
}

impl StoreWrite for SqliteStore {
    fn put_drawers(&self, drawers: &[Drawer]) -> StoreResult<Vec<PutOutcome>> {
        self.write(|tx| drawers.iter().map(|drawer| records::insert_drawer(tx, drawer)).collect())
    }

    fn put_and_remove_drawers(
        &self,
        workspace: &WorkspaceId,
        drawers: &[Drawer],
        remove: &[DrawerId],
    ) -> StoreResult<(Vec<PutOutcome>, usize)> {
        self.write(|tx| {
            let outcomes =
                drawers.iter().map(|drawer| records::insert_drawer(tx, drawer)).collect::<StoreResult<_>>()?;
            let mut removed = 0;
            for id in remove {
                removed += usize::from(records::delete_drawer(tx, workspace, id)?);
            }
            Ok((outcomes, removed))
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
        self.write(|tx| records::set_drawer_status(tx, workspace, id, status, reason, &at))
    }

    fn delete_drawer(&self, workspace: &WorkspaceId, id: &DrawerId) -> StoreResult<bool> {
        self.write(|tx| records::delete_drawer(tx, workspace, id))
    }

    fn replace_drawer(&self, drawer: &Drawer) -> StoreResult<bool> {
        self.write(|tx| {
            if !records::delete_drawer(tx, &drawer.workspace_id, &drawer.id)? {
                return Ok(false);
            }
            records::insert_drawer(tx, drawer)?;
            Ok(true)
        })
    }

    fn save_session(&self, session: &Session) -> StoreResult<()> {
        self.write(|tx| records::save_session(tx, session))
    }

    fn set_embeddings(&self, workspace: &WorkspaceId, vectors: &[(DrawerId, Embedding)]) -> StoreResult<usize> {
        self.write(|tx| records::set_embeddings(tx, workspace, vectors))
    }

    fn cache_embeddings(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        vectors: &[(ContentHash, Vec<f32>)],
        at: Timestamp,
    ) -> StoreResult<()> {
        self.write(|tx| records::cache_embeddings(tx, workspace, model, vectors, &at))
    }

    fn touch_access(&self, workspace: &WorkspaceId, ids: &[DrawerId], at: Timestamp) -> StoreResult<usize> {
        if ids.is_empty() {
            return Ok(0);
        }
        self.write(|tx| query::touch_access(tx, workspace, ids, &at))
    }

    fn add_entities(&self, entities: &[Entity]) -> StoreResult<usize> {
        if entities.is_empty() {
            return Ok(0);
        }
        self.write(|tx| kg::add_entities(tx, entities))
    }

    fn add_triple(&self, triple: &Triple) -> StoreResult<TripleOutcome> {
        self.write(|tx| kg::add_triple(tx, triple))
    }

    fn invalidate_triples(
        &self,
        workspace: &WorkspaceId,
        subject: &str,
        predicate: &str,
        object: &str,
        ended: Timestamp,
    ) -> StoreResult<usize> {
        self.write(|tx| kg::invalidate_triples(tx, workspace, subject, predicate, object, &ended))
    }

    fn delete_triple(&self, workspace: &WorkspaceId, id: &str) -> StoreResult<bool> {
        self.write(|tx| kg::delete_triple(tx, workspace, id))
    }

    fn put_tunnel(&self, tunnel: &Tunnel) -> StoreResult<bool> {
        self.write(|tx| kg::put_tunnel(tx, tunnel))
    }

    fn delete_tunnel(&self, workspace: &WorkspaceId, id: &str) -> StoreResult<bool> {
        self.write(|tx| kg::delete_tunnel(tx, workspace, id))
    }

    fn set_source_cursor(
        &self,
        workspace: &WorkspaceId,
        source: &str,
        cursor: Option<&str>,
        at: Timestamp,
    ) -> StoreResult<()> {
        self.write(|tx| records::set_source_cursor(tx, workspace, source, cursor, &at))
    }

    fn put_artifact(&self, artifact: &Artifact) -> StoreResult<PutOutcome> {
        self.write(|tx| coordination::put_artifact(tx, artifact))
    }

    fn append_event(&self, event: &Event, artifacts: &[Artifact]) -> StoreResult<AppendOutcome> {
        self.write(|tx| coordination::append_event(tx, event, artifacts))
    }

    fn claim_raw_drawers(
        &self,
        workspace: &WorkspaceId,
        worker: &str,
        limit: usize,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<Vec<Drawer>> {
        self.write(|tx| work::claim_raw_drawers(tx, workspace, worker, limit, &now, &until))
    }

    fn complete_claims(&self, workspace: &WorkspaceId, worker: &str, drawers: &[Drawer]) -> StoreResult<Vec<DrawerId>> {
        self.write(|tx| work::complete_claims(tx, workspace, worker, drawers))
    }

    fn decay_importance(
        &self,
        workspace: &WorkspaceId,
        filed_before: Timestamp,
        idle_since: Timestamp,
        factor: f64,
        floor: f64,
    ) -> StoreResult<usize> {
        self.write(|tx| work::decay_importance(tx, workspace, &filed_before, &idle_since, factor, floor))
    }

    fn expire_episodic_summaries(&self, workspace: &WorkspaceId, now: Timestamp) -> StoreResult<usize> {
        self.write(|tx| work::expire_episodic_summaries(tx, workspace, &now))
    }

    fn save_episodic_summary(&self, summary: &EpisodicSummary) -> StoreResult<()> {
        self.write(|tx| work::save_episodic_summary(tx, summary))
    }

    fn mark_episodes_promoted(&self, workspace: &WorkspaceId, ids: &[String], at: Timestamp) -> StoreResult<usize> {
        if ids.is_empty() {
            return Ok(0);
        }
        self.write(|tx| work::mark_episodes_promoted(tx, workspace, ids, &at))
    }

    fn merge_entity(
        &self,
        workspace: &WorkspaceId,
        alias: &str,
        canonical: &str,
        reason: &str,
        at: Timestamp,
    ) -> StoreResult<MergeOutcome> {
        self.write(|tx| alias::merge_entity(tx, workspace, alias, canonical, reason, &at))
    }

    fn unmerge_entity(&self, workspace: &WorkspaceId, alias: &str) -> StoreResult<Option<Unmerged>> {
        self.write(|tx| alias::unmerge_entity(tx, workspace, alias))
    }

    fn put_centroid(&self, centroid: &Centroid) -> StoreResult<bool> {
        self.write(|tx| centroid::put_centroid(tx, centroid))
    }

    fn put_room_centroid(&self, centroid: &RoomCentroid) -> StoreResult<bool> {
        self.write(|tx| centroid::put_room_centroid(tx, centroid))
    }

    fn delete_room_centroid(&self, workspace: &WorkspaceId, wing: &str, room: &str) -> StoreResult<bool> {
        self.write(|tx| centroid::delete_room_centroid(tx, workspace, wing, room))
    }

    fn try_start_job(&self, job: &str, tick: i64, holder: &str, lease: Duration, now: Timestamp) -> StoreResult<bool> {
        let expires = chrono::TimeDelta::from_std(lease)
            .ok()
            .and_then(|lease| now.checked_add_signed(lease))
            .unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC);
        self.write(|tx| work::try_start_job(tx, job, tick, holder, &now, &expires))
    }

    fn finish_job(&self, job: &str, holder: &str) -> StoreResult<()> {
        self.write(|tx| work::finish_job(tx, job, holder))
    }

    fn set_identity(&self, workspace: &WorkspaceId, identity: &Identity, at: Timestamp) -> StoreResult<()> {
        self.write(|tx| records::set_identity(tx, workspace, identity, &at))
    }

    fn import(&self, batch: &[PalaceRecord]) -> StoreResult<RecordCounts> {
        self.write(|tx| {
            let mut counts = RecordCounts::default();
            for record in batch {
                counts += records::import_record(tx, record)?;
            }
            Ok(counts)
        })
    }

    fn verify(&self) -> StoreResult<Vec<HealthCheck>> {
        let fts_structure_ok = if self.options.read_only { None } else { Some(self.write(health::fts_structure_ok)?) };
        self.read(|conn| health::verify(conn, fts_structure_ok))
    }

    fn rebuild_derived(&self) -> StoreResult<Vec<HealthCheck>> {
        self.write(health::rebuild)?;
        self.verify()
    }
}

/// Runs `work` inside one read transaction on `conn`, so multi-statement
/// reads see one snapshot; the transaction always ends, so the connection
/// is back in autocommit mode afterwards whatever `work` returned.
fn read_in_transaction<T>(conn: &Connection, work: impl FnOnce(&Connection) -> StoreResult<T>) -> StoreResult<T> {
    let result = (|| {
        conn.execute_batch("BEGIN DEFERRED").ctx("starting a read")?;
        let result = work(conn);
        // A read transaction has nothing to commit; ending it releases the
        // snapshot so the next read sees newer writes.
        conn.execute_batch("COMMIT").ctx("ending a read")?;
        result
    })();
    if result.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    result
}

/// Runs `work` in a `BEGIN IMMEDIATE` transaction on `conn`. While the
/// palace is locked by another writer (after SQLite's own `busy_timeout`
/// wait), retries with exponential backoff until `max_wait` has passed.
pub(crate) fn write_with_retry<T>(
    conn: &mut Connection,
    max_wait: Duration,
    mut work: impl FnMut(&Transaction<'_>) -> StoreResult<T>,
) -> StoreResult<T> {
    let started = Instant::now();
    let mut backoff = Duration::from_millis(5);
    loop {
        let attempt = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|error| (is_busy(&error), error::map("starting a write", error)))
            .and_then(|tx| {
                let value = work(&tx).map_err(|error| (matches!(error, StoreError::Busy { .. }), error))?;
                tx.commit().map_err(|error| (is_busy(&error), error::map("committing", error)))?;
                Ok(value)
            });
        match attempt {
            Ok(value) => return Ok(value),
            Err((true, _)) if started.elapsed() < max_wait => {
                tracing::debug!(waited_ms = started.elapsed().as_millis() as u64, "palace busy, retrying write");
                thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_millis(250));
            }
            Err((true, _)) => return Err(StoreError::Busy { waited_ms: started.elapsed().as_millis() as u64 }),
            Err((false, error)) => return Err(error),
        }
    }
}

fn wal_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push("-wal");
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

    fn store(dir: &Path, share_writer: bool) -> SqliteStore {
        let options = SqliteOptions { create: true, share_writer, ..SqliteOptions::default() };
        SqliteStore::open(&dir.join("palace.db"), options).unwrap()
    }

    fn idle_readers(store: &SqliteStore) -> usize {
        store.readers.lock().unwrap().len()
    }

    #[test]
    fn reads_use_the_free_writer_when_shared_and_a_reader_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let shared = store(dir.path(), true);
        shared.workspaces().unwrap();
        shared.info().unwrap();
        assert_eq!(idle_readers(&shared), 0, "no reader connection was opened");
        assert!(shared.writer.lock().unwrap().as_ref().unwrap().is_autocommit(), "the read ended its transaction");
        drop(shared);
        let separate = store(dir.path(), false);
        separate.workspaces().unwrap();
        assert_eq!(idle_readers(&separate), 1);
    }

    #[test]
    fn a_shared_writer_never_makes_a_read_wait_for_a_write() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path(), true);
        let (started, writing) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let store = &store;
        std::thread::scope(|scope| {
            let writer = scope.spawn(move || {
                store.write(|_| {
                    started.send(()).unwrap();
                    released.recv().unwrap();
                    Ok(())
                })
            });
            writing.recv().unwrap();
            // The writer is inside its transaction until released: the read
            // goes to a reader connection and returns meanwhile.
            let (read, done) = mpsc::channel();
            scope.spawn(move || read.send(store.workspaces().map(|_| ())).unwrap());
            let outcome = done.recv_timeout(std::time::Duration::from_secs(30));
            release.send(()).unwrap();
            writer.join().unwrap().unwrap();
            outcome.expect("the read waited for the write").unwrap();
            assert_eq!(idle_readers(store), 1);
        });
        // A failed read on the shared writer leaves it usable.
        let failed = store.read(|conn| conn.execute_batch("SELECT * FROM no_such_table").ctx("reading"));
        assert!(failed.is_err());
        assert!(store.writer.lock().unwrap().as_ref().unwrap().is_autocommit());
        store.write(|_| Ok(())).unwrap();
    }
}
