//! The access guard: the one place tenancy is enforced (docs/tenancy.md).
//!
//! A palace handle scoped to a caller (`Tenancy::scope`) reaches storage
//! only through a [`GuardedStore`], which wraps the real store and checks
//! every call before passing it on:
//!
//! - every call naming a workspace needs a role there (reader to read,
//!   writer to write); a workspace the caller was not granted — including a
//!   forged id — is refused, nothing read or written;
//! - drawers private to another user (`owner_user_id`) are left out of
//!   every answer and cannot be edited, deleted or overwritten; filters
//!   searching on a principal's behalf always carry that principal as the
//!   viewer, whatever the caller asked;
//! - writes that would pass the workspace's stored limits are refused;
//! - palace-wide operations (integrity checks, rebuilds, job locks, the
//!   directory) need an admin;
//! - every write and delete that changed something is appended to the audit
//!   trail with the caller's name, after it committed.
//!
//! Derived and bookkeeping writes (embeddings, access counts, cursors,
//! claims, decay) are checked for the writer role but not audited.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use mempalace_core::centroid::{Centroid, RoomCentroid};
use mempalace_core::coordination::{Artifact, Event, StoredEvent};
use mempalace_core::kg::{Entity, EntityAlias, Triple};
use mempalace_core::session::{EpisodicSummary, Session};
use mempalace_core::tenancy::{
    AuditEntry, AuditFilter, Caller, Grant, Limits, Member, Principal, PrincipalId, Role, Team, TeamId, TokenId,
    TokenRecord, Usage,
};
use mempalace_core::tunnel::Tunnel;
use mempalace_core::{
    Content, ContentHash, Drawer, DrawerId, DrawerStatus, Embedding, Identity, Timestamp, WorkspaceId,
};
use mempalace_store::{
    AppendOutcome, CentroidSamples, Direction, Directory, DrawerFilter, EntityUsage, EventFilter, HallCount,
    HealthCheck, IdentityRecord, KgStats, MergeOutcome, PalaceRecord, PipelineCounts, PruneCandidate, PutOutcome,
    RecordCounts, SessionActivity, StorageInfo, Store, StoreError, StoreRead, StoreResult, StoreWrite, Taxonomy,
    TripleOutcome, Unmerged, VectorChange, VectorSnapshot,
};

use crate::palace::Clock;

/// What one caller may do: their role per workspace and the limits of the
/// workspaces they write to (read once per scope).
#[derive(Debug)]
pub struct Access {
    caller: Caller,
    /// Role per workspace; `None` for the local operator (owner everywhere).
    roles: Option<HashMap<WorkspaceId, Role>>,
    limits: Mutex<HashMap<WorkspaceId, Option<Limits>>>,
}

impl Access {
    /// Access for `caller` with `roles` (ignored for the local operator).
    pub fn new(caller: Caller, roles: HashMap<WorkspaceId, Role>) -> Self {
        let roles = match caller {
            Caller::Local => None,
            Caller::Principal(_) => Some(roles),
        };
        Self { caller, roles, limits: Mutex::default() }
    }

    /// Who is calling.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// The caller's role in `workspace`, if any.
    pub fn role(&self, workspace: &WorkspaceId) -> Option<Role> {
        match &self.roles {
            None => Some(Role::Owner),
            Some(roles) => roles.get(workspace).copied(),
        }
    }

    /// The workspaces the caller has a role in (`None`: all).
    pub fn workspaces(&self) -> Option<Vec<(WorkspaceId, Role)>> {
        self.roles.as_ref().map(|roles| {
            let mut list: Vec<_> = roles.iter().map(|(w, r)| (w.clone(), *r)).collect();
            list.sort();
            list
        })
    }

    /// Refuses unless the caller holds at least `role` in `workspace`.
    pub fn need(&self, workspace: &WorkspaceId, role: Role, doing: &str) -> StoreResult<()> {
        let actor = self.caller.actor();
        match self.role(workspace) {
            Some(held) if held >= role => Ok(()),
            Some(held) => Err(StoreError::denied(format!(
                "{actor} is a {held} in workspace {workspace}; {doing} needs the {role} role (a workspace owner can \
                 grant it: `mempalace workspace grant {workspace} {actor} {role}`)"
            ))),
            None => Err(StoreError::denied(format!(
                "{actor} has no role in workspace {workspace}; a workspace owner can grant one with \
                 `mempalace workspace grant {workspace} {actor} reader`"
            ))),
        }
    }

    /// Refuses a palace-wide call unless the caller is an admin.
    pub fn need_admin(&self, doing: &str) -> StoreResult<()> {
        if self.caller.is_admin() {
            Ok(())
        } else {
            Err(StoreError::denied(format!(
                "{doing} is for admins; {} is not one (`mempalace user add NAME --admin` makes one)",
                self.caller.actor()
            )))
        }
    }

    /// Whether the caller may see `drawer`: shared, or private to them.
    /// The local operator sees every drawer it asks for by id.
    pub fn may_see(&self, drawer: &Drawer) -> bool {
        match (&self.caller, &drawer.owner_user_id) {
            (_, None) | (Caller::Local, _) => true,
            (Caller::Principal(p), Some(owner)) => owner == p.id.as_str(),
        }
    }

    fn viewer(&self) -> Option<&PrincipalId> {
        self.caller.principal().map(|p| &p.id)
    }
}

/// A store seen through one caller's [`Access`].
pub struct GuardedStore {
    inner: Arc<dyn Store>,
    access: Arc<Access>,
    clock: Clock,
}

impl GuardedStore {
    /// Wraps `inner` for the caller of `access`.
    pub fn new(inner: Arc<dyn Store>, access: Arc<Access>, clock: Clock) -> Self {
        Self { inner, access, clock }
    }

    fn read(&self, workspace: &WorkspaceId) -> StoreResult<()> {
        self.access.need(workspace, Role::Reader, "reading")
    }

    fn write(&self, workspace: &WorkspaceId) -> StoreResult<()> {
        self.access.need(workspace, Role::Writer, "writing")
    }

    fn visible(&self, drawers: Vec<Drawer>) -> Vec<Drawer> {
        drawers.into_iter().filter(|d| self.access.may_see(d)).collect()
    }

    /// The filter as it runs for this caller: a principal is always the
    /// viewer (their own private drawers and the shared ones, never
    /// another user's).
    fn scoped<'f>(&self, filter: &'f DrawerFilter) -> Cow<'f, DrawerFilter> {
        match self.access.viewer() {
            Some(id) if filter.viewer.as_deref() != Some(id.as_str()) => {
                Cow::Owned(DrawerFilter { viewer: Some(id.to_string()), ..filter.clone() })
            }
            _ => Cow::Borrowed(filter),
        }
    }

    /// Refuses writing a drawer row that belongs to another user: the row
    /// stored under that id, or the new row's owner.
    fn may_write_drawer(&self, drawer: &Drawer) -> StoreResult<()> {
        if !self.access.may_see(drawer) {
            return Err(StoreError::denied(format!(
                "{} cannot file a drawer private to {}",
                self.access.caller.actor(),
                drawer.owner_user_id.as_deref().unwrap_or("another user")
            )));
        }
        Ok(())
    }

    fn may_touch(&self, workspace: &WorkspaceId, ids: &[DrawerId]) -> StoreResult<Vec<Drawer>> {
        let existing = self.inner.drawers(workspace, ids)?;
        if let Some(theirs) = existing.iter().find(|d| !self.access.may_see(d)) {
            return Err(StoreError::denied(format!(
                "drawer {} is private to another user; only its owner can change it",
                theirs.id
            )));
        }
        Ok(existing)
    }

    fn limits(&self, workspace: &WorkspaceId) -> StoreResult<Option<Limits>> {
        let mut cache = self.access.limits.lock().expect("limits cache poisoned");
        if let Some(limits) = cache.get(workspace) {
            return Ok(*limits);
        }
        let limits = self.inner.limits(workspace)?;
        cache.insert(workspace.clone(), limits);
        Ok(limits)
    }

    fn admit(&self, workspace: &WorkspaceId, add: Usage) -> StoreResult<()> {
        if add == Usage::default() {
            return Ok(());
        }
        let Some(limits) = self.limits(workspace)? else { return Ok(()) };
        let usage = self.inner.usage(workspace)?;
        limits.admit(workspace, &usage, &add)?;
        Ok(())
    }

    /// What storing `drawers` adds to their workspace: new rows, and when
    /// `replacing`, the bytes beyond the rows they replace (a plain put
    /// leaves an existing row as it is).
    fn growth(&self, workspace: &WorkspaceId, drawers: &[&Drawer], existing: &[Drawer], replacing: bool) -> Usage {
        let before: HashMap<&DrawerId, usize> = existing.iter().map(|d| (&d.id, d.content.as_str().len())).collect();
        let mut add = Usage::default();
        for drawer in drawers.iter().filter(|d| d.workspace_id == *workspace && d.status == DrawerStatus::Active) {
            let len = drawer.content.as_str().len() as u64;
            match before.get(&drawer.id) {
                Some(old) if replacing => add.bytes += len.saturating_sub(*old as u64),
                Some(_) => {}
                None => {
                    add.drawers += 1;
                    add.bytes += len;
                }
            }
        }
        add
    }

    fn check_drawers(&self, drawers: &[Drawer], replacing: bool) -> StoreResult<()> {
        let mut by_workspace: HashMap<&WorkspaceId, Vec<&Drawer>> = HashMap::new();
        for drawer in drawers {
            self.may_write_drawer(drawer)?;
            by_workspace.entry(&drawer.workspace_id).or_default().push(drawer);
        }
        for (workspace, group) in by_workspace {
            self.write(workspace)?;
            // The rows already stored matter for a principal (whose are
            // they?) and for a workspace with limits (what grows?); the
            // local operator's writes to an unlimited workspace skip the read.
            if self.access.caller.principal().is_none() && self.limits(workspace)?.is_none() {
                continue;
            }
            let ids: Vec<DrawerId> = group.iter().map(|d| d.id.clone()).collect();
            let existing = self.may_touch(workspace, &ids)?;
            self.admit(workspace, self.growth(workspace, &group, &existing, replacing))?;
        }
        Ok(())
    }

    /// Appends an audit entry for a write that changed `count` records.
    /// The write has committed: a failure here is logged, never reported
    /// as a failure of the write.
    fn audit<'a>(&self, workspace: &str, action: &str, targets: impl IntoIterator<Item = &'a str>, count: u64) {
        if count == 0 {
            return;
        }
        let mut target: Vec<&str> = targets.into_iter().take(AUDIT_TARGETS).collect();
        target.dedup();
        let entry = AuditEntry {
            seq: 0,
            at: (self.clock)(),
            workspace: workspace.to_string(),
            actor: self.access.caller.actor().to_string(),
            action: action.to_string(),
            target: target.join(","),
            count,
        };
        if let Err(error) = self.inner.append_audit(&entry) {
            tracing::error!(%error, action, workspace, "the write committed but its audit entry could not be written");
        }
    }
}

/// Ids an audit entry names at most (`count` says how many in all).
const AUDIT_TARGETS: usize = 20;

fn changed(outcomes: &[PutOutcome]) -> u64 {
    outcomes.iter().filter(|o| !matches!(o, PutOutcome::Existing)).count() as u64
}

fn record_workspace(record: &PalaceRecord) -> &WorkspaceId {
    match record {
        PalaceRecord::Drawer(d) => &d.workspace_id,
        PalaceRecord::Entity(e) => &e.workspace_id,
        PalaceRecord::Triple(t) => &t.workspace_id,
        PalaceRecord::Identity(i) => &i.workspace_id,
        PalaceRecord::Session(s) => &s.workspace_id,
        PalaceRecord::EpisodicSummary(s) => &s.workspace_id,
        PalaceRecord::Tunnel(t) => &t.workspace_id,
        PalaceRecord::Centroid(c) => &c.workspace_id,
        PalaceRecord::Artifact(a) => &a.workspace_id,
        PalaceRecord::Event(e) => &e.workspace_id,
        PalaceRecord::EntityAlias(a) => &a.alias.alias.workspace_id,
    }
}

impl StoreRead for GuardedStore {
    fn info(&self) -> StoreResult<StorageInfo> {
        self.inner.info()
    }

    fn workspaces(&self) -> StoreResult<Vec<WorkspaceId>> {
        let all = self.inner.workspaces()?;
        Ok(all.into_iter().filter(|w| self.access.role(w).is_some()).collect())
    }

    fn drawer(&self, workspace: &WorkspaceId, id: &DrawerId) -> StoreResult<Option<Drawer>> {
        self.read(workspace)?;
        Ok(self.inner.drawer(workspace, id)?.filter(|d| self.access.may_see(d)))
    }

    fn drawers(&self, workspace: &WorkspaceId, ids: &[DrawerId]) -> StoreResult<Vec<Drawer>> {
        self.read(workspace)?;
        Ok(self.visible(self.inner.drawers(workspace, ids)?))
    }

    fn scan_drawers(
        &self,
        workspace: &WorkspaceId,
        after: Option<&DrawerId>,
        limit: usize,
    ) -> StoreResult<Vec<Drawer>> {
        self.read(workspace)?;
        // A page shrinks when private drawers are left out; callers page on
        // by the last id they get, so only an empty page would end their
        // scan early: read on past pages that were private throughout.
        let mut after = after.cloned();
        loop {
            let page = self.inner.scan_drawers(workspace, after.as_ref(), limit)?;
            let Some(last) = page.last().map(|d| d.id.clone()) else { return Ok(Vec::new()) };
            let visible = self.visible(page);
            if !visible.is_empty() {
                return Ok(visible);
            }
            after = Some(last);
        }
    }

    fn taxonomy(&self, workspace: &WorkspaceId) -> StoreResult<Taxonomy> {
        self.read(workspace)?;
        self.inner.taxonomy(workspace)
    }

    fn identity(&self, workspace: &WorkspaceId) -> StoreResult<Option<IdentityRecord>> {
        self.read(workspace)?;
        self.inner.identity(workspace)
    }

    fn entities(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Entity>> {
        self.read(workspace)?;
        self.inner.entities(workspace)
    }

    fn triples(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Triple>> {
        self.read(workspace)?;
        self.inner.triples(workspace)
    }

    fn sessions(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Session>> {
        self.read(workspace)?;
        self.inner.sessions(workspace)
    }

    fn episodic_summaries(&self, workspace: &WorkspaceId) -> StoreResult<Vec<EpisodicSummary>> {
        self.read(workspace)?;
        self.inner.episodic_summaries(workspace)
    }

    fn tunnels(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Tunnel>> {
        self.read(workspace)?;
        self.inner.tunnels(workspace)
    }

    fn centroids(&self, workspace: &WorkspaceId) -> StoreResult<Vec<Centroid>> {
        self.read(workspace)?;
        self.inner.centroids(workspace)
    }

    fn embeddings_by_hash(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        hashes: &[ContentHash],
    ) -> StoreResult<HashMap<ContentHash, Vec<f32>>> {
        self.read(workspace)?;
        self.inner.embeddings_by_hash(workspace, model, hashes)
    }

    fn drawers_missing_embedding(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        limit: usize,
    ) -> StoreResult<Vec<(DrawerId, Content)>> {
        self.write(workspace)?;
        self.inner.drawers_missing_embedding(workspace, model, limit)
    }

    fn embedding_models(&self, workspace: &WorkspaceId) -> StoreResult<Vec<(Option<String>, u64)>> {
        self.read(workspace)?;
        self.inner.embedding_models(workspace)
    }

    fn lexical_search(
        &self,
        workspace: &WorkspaceId,
        terms: &[String],
        filter: &DrawerFilter,
        limit: usize,
    ) -> StoreResult<Vec<(DrawerId, f64)>> {
        self.read(workspace)?;
        self.inner.lexical_search(workspace, terms, &self.scoped(filter), limit)
    }

    fn term_frequencies(&self, terms: &[String], bound: fn(u64) -> u64) -> StoreResult<(u64, Vec<u64>)> {
        self.inner.term_frequencies(terms, bound)
    }

    fn filtered_ids(&self, workspace: &WorkspaceId, filter: &DrawerFilter) -> StoreResult<Vec<DrawerId>> {
        self.read(workspace)?;
        self.inner.filtered_ids(workspace, &self.scoped(filter))
    }

    fn revision(&self) -> StoreResult<i64> {
        self.inner.revision()
    }

    fn vector_changes(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        after: i64,
        limit: usize,
    ) -> StoreResult<Vec<VectorChange>> {
        self.read(workspace)?;
        self.inner.vector_changes(workspace, model, after, limit)
    }

    fn top_drawers(&self, workspace: &WorkspaceId, wing: Option<&str>, limit: usize) -> StoreResult<Vec<Drawer>> {
        self.read(workspace)?;
        Ok(self.visible(self.inner.top_drawers(workspace, wing, limit)?))
    }

    fn entities_by_id(&self, workspace: &WorkspaceId, ids: &[String]) -> StoreResult<Vec<Entity>> {
        self.read(workspace)?;
        self.inner.entities_by_id(workspace, ids)
    }

    fn entity_names(&self, workspace: &WorkspaceId) -> StoreResult<Vec<String>> {
        self.read(workspace)?;
        self.inner.entity_names(workspace)
    }

    fn triples_about(
        &self,
        workspace: &WorkspaceId,
        entity_id: &str,
        direction: Direction,
    ) -> StoreResult<Vec<Triple>> {
        self.read(workspace)?;
        self.inner.triples_about(workspace, entity_id, direction)
    }

    fn kg_stats(&self, workspace: &WorkspaceId) -> StoreResult<KgStats> {
        self.read(workspace)?;
        self.inner.kg_stats(workspace)
    }

    fn drawers_mentioning(
        &self,
        workspace: &WorkspaceId,
        entity_ids: &[String],
        limit: usize,
    ) -> StoreResult<Vec<(DrawerId, u32)>> {
        self.read(workspace)?;
        self.inner.drawers_mentioning(workspace, entity_ids, limit)
    }

    fn hall_counts(&self, workspace: &WorkspaceId) -> StoreResult<Vec<HallCount>> {
        self.read(workspace)?;
        self.inner.hall_counts(workspace)
    }

    fn place_drawers(
        &self,
        workspace: &WorkspaceId,
        wing: &str,
        room: Option<&str>,
        limit: usize,
    ) -> StoreResult<Vec<Drawer>> {
        self.read(workspace)?;
        Ok(self.visible(self.inner.place_drawers(workspace, wing, room, limit)?))
    }

    fn page_drawers(
        &self,
        workspace: &WorkspaceId,
        wing: Option<&str>,
        room: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> StoreResult<Vec<Drawer>> {
        self.read(workspace)?;
        Ok(self.visible(self.inner.page_drawers(workspace, wing, room, offset, limit)?))
    }

    fn source_cursor(&self, workspace: &WorkspaceId, source: &str) -> StoreResult<Option<String>> {
        self.read(workspace)?;
        self.inner.source_cursor(workspace, source)
    }

    fn events(&self, workspace: &WorkspaceId, filter: &EventFilter) -> StoreResult<Vec<StoredEvent>> {
        self.read(workspace)?;
        self.inner.events(workspace, filter)
    }

    fn event(&self, workspace: &WorkspaceId, id: &str) -> StoreResult<Option<StoredEvent>> {
        self.read(workspace)?;
        self.inner.event(workspace, id)
    }

    fn artifact(&self, workspace: &WorkspaceId, id: &str) -> StoreResult<Option<Artifact>> {
        self.read(workspace)?;
        self.inner.artifact(workspace, id)
    }

    fn scan_artifacts(&self, workspace: &WorkspaceId, after: Option<&str>, limit: usize) -> StoreResult<Vec<Artifact>> {
        self.read(workspace)?;
        self.inner.scan_artifacts(workspace, after, limit)
    }

    fn pipeline_counts(&self, workspace: &WorkspaceId, now: Timestamp) -> StoreResult<PipelineCounts> {
        self.read(workspace)?;
        self.inner.pipeline_counts(workspace, now)
    }

    fn session_activity(
        &self,
        workspace: &WorkspaceId,
        idle_before: Timestamp,
        except_wing: Option<&str>,
    ) -> StoreResult<Vec<SessionActivity>> {
        self.read(workspace)?;
        self.inner.session_activity(workspace, idle_before, except_wing)
    }

    fn prune_candidates(
        &self,
        workspace: &WorkspaceId,
        below: f64,
        max_accesses: u64,
        filed_before: Timestamp,
        keep: u64,
    ) -> StoreResult<Vec<PruneCandidate>> {
        self.write(workspace)?;
        self.inner.prune_candidates(workspace, below, max_accesses, filed_before, keep)
    }

    fn entity_aliases(&self, workspace: &WorkspaceId) -> StoreResult<Vec<EntityAlias>> {
        self.read(workspace)?;
        self.inner.entity_aliases(workspace)
    }

    fn alias_records(&self, workspace: &WorkspaceId) -> StoreResult<Vec<mempalace_store::AliasRecord>> {
        self.read(workspace)?;
        self.inner.alias_records(workspace)
    }

    fn resolve_entities(&self, workspace: &WorkspaceId, ids: &[String]) -> StoreResult<HashMap<String, String>> {
        self.read(workspace)?;
        self.inner.resolve_entities(workspace, ids)
    }

    fn entity_usage(&self, workspace: &WorkspaceId) -> StoreResult<Vec<EntityUsage>> {
        self.read(workspace)?;
        self.inner.entity_usage(workspace)
    }

    fn room_centroids(&self, workspace: &WorkspaceId) -> StoreResult<Vec<RoomCentroid>> {
        self.read(workspace)?;
        self.inner.room_centroids(workspace)
    }

    fn centroid_samples(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        which: &CentroidSamples,
        limit: usize,
    ) -> StoreResult<Vec<(DrawerId, Vec<f32>)>> {
        self.read(workspace)?;
        self.inner.centroid_samples(workspace, model, which, limit)
    }

    fn vector_search(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        query: &[f32],
        filter: &DrawerFilter,
        limit: usize,
    ) -> StoreResult<Option<Vec<(DrawerId, f32)>>> {
        self.read(workspace)?;
        self.inner.vector_search(workspace, model, query, &self.scoped(filter), limit)
    }

    fn vector_snapshot(&self, workspace: &WorkspaceId, model: &str) -> StoreResult<Option<VectorSnapshot>> {
        self.read(workspace)?;
        self.inner.vector_snapshot(workspace, model)
    }

    fn save_vector_snapshot(&self, workspace: &WorkspaceId, model: &str, rev: i64, bytes: &[u8]) -> StoreResult<bool> {
        self.read(workspace)?;
        self.inner.save_vector_snapshot(workspace, model, rev, bytes)
    }
}

impl StoreWrite for GuardedStore {
    fn put_drawers(&self, drawers: &[Drawer]) -> StoreResult<Vec<PutOutcome>> {
        self.check_drawers(drawers, false)?;
        let outcomes = self.inner.put_drawers(drawers)?;
        let mut by_workspace: HashMap<&str, Vec<&str>> = HashMap::new();
        for (drawer, outcome) in drawers.iter().zip(&outcomes) {
            if !matches!(outcome, PutOutcome::Existing) {
                by_workspace.entry(drawer.workspace_id.as_str()).or_default().push(drawer.id.as_str());
            }
        }
        for (workspace, ids) in by_workspace {
            self.audit(workspace, "drawer.put", ids.iter().copied(), ids.len() as u64);
        }
        Ok(outcomes)
    }

    fn put_and_remove_drawers(
        &self,
        workspace: &WorkspaceId,
        drawers: &[Drawer],
        remove: &[DrawerId],
    ) -> StoreResult<(Vec<PutOutcome>, usize)> {
        self.write(workspace)?;
        self.may_touch(workspace, remove)?;
        self.check_drawers(drawers, false)?;
        let (outcomes, removed) = self.inner.put_and_remove_drawers(workspace, drawers, remove)?;
        self.audit(workspace.as_str(), "drawer.put", drawers.iter().map(|d| d.id.as_str()), changed(&outcomes));
        self.audit(workspace.as_str(), "drawer.delete", remove.iter().map(DrawerId::as_str), removed as u64);
        Ok((outcomes, removed))
    }

    fn set_drawer_status(
        &self,
        workspace: &WorkspaceId,
        id: &DrawerId,
        status: DrawerStatus,
        reason: Option<&str>,
        at: Timestamp,
    ) -> StoreResult<bool> {
        self.write(workspace)?;
        let existing = self.may_touch(workspace, std::slice::from_ref(id))?;
        if status == DrawerStatus::Active
            && let Some(drawer) = existing.first()
            && drawer.status != DrawerStatus::Active
        {
            self.admit(
                workspace,
                Usage { drawers: 1, bytes: drawer.content.as_str().len() as u64, ..Usage::default() },
            )?;
        }
        let done = self.inner.set_drawer_status(workspace, id, status, reason, at)?;
        self.audit(workspace.as_str(), &format!("drawer.{}", status.as_str()), [id.as_str()], u64::from(done));
        Ok(done)
    }

    fn replace_drawer(&self, drawer: &Drawer) -> StoreResult<bool> {
        self.check_drawers(std::slice::from_ref(drawer), true)?;
        let done = self.inner.replace_drawer(drawer)?;
        self.audit(drawer.workspace_id.as_str(), "drawer.edit", [drawer.id.as_str()], u64::from(done));
        Ok(done)
    }

    fn save_session(&self, session: &Session) -> StoreResult<()> {
        self.write(&session.workspace_id)?;
        self.inner.save_session(session)?;
        self.audit(session.workspace_id.as_str(), "session.save", [session.id.as_str()], 1);
        Ok(())
    }

    fn delete_drawer(&self, workspace: &WorkspaceId, id: &DrawerId) -> StoreResult<bool> {
        self.write(workspace)?;
        self.may_touch(workspace, std::slice::from_ref(id))?;
        let done = self.inner.delete_drawer(workspace, id)?;
        self.audit(workspace.as_str(), "drawer.delete", [id.as_str()], u64::from(done));
        Ok(done)
    }

    fn set_embeddings(&self, workspace: &WorkspaceId, vectors: &[(DrawerId, Embedding)]) -> StoreResult<usize> {
        self.write(workspace)?;
        self.inner.set_embeddings(workspace, vectors)
    }

    fn cache_embeddings(
        &self,
        workspace: &WorkspaceId,
        model: &str,
        vectors: &[(ContentHash, Vec<f32>)],
        at: Timestamp,
    ) -> StoreResult<()> {
        // A reader's search caches its query's vector: bookkeeping, not a
        // change to the workspace's memories.
        self.read(workspace)?;
        self.inner.cache_embeddings(workspace, model, vectors, at)
    }

    fn touch_access(&self, workspace: &WorkspaceId, ids: &[DrawerId], at: Timestamp) -> StoreResult<usize> {
        // Access tracking follows reads, so readers may record it.
        self.read(workspace)?;
        self.inner.touch_access(workspace, ids, at)
    }

    fn add_entities(&self, entities: &[Entity]) -> StoreResult<usize> {
        let mut by_workspace: HashMap<&WorkspaceId, Vec<String>> = HashMap::new();
        for entity in entities {
            by_workspace.entry(&entity.workspace_id).or_default().push(entity.id.clone());
        }
        for (workspace, ids) in &by_workspace {
            self.write(workspace)?;
            let existing: HashSet<String> =
                self.inner.entities_by_id(workspace, ids)?.into_iter().map(|e| e.id).collect();
            let new = ids.iter().collect::<HashSet<_>>().into_iter().filter(|id| !existing.contains(*id)).count();
            self.admit(workspace, Usage { entities: new as u64, ..Usage::default() })?;
        }
        let added = self.inner.add_entities(entities)?;
        if let Some(workspace) = entities.first().map(|e| e.workspace_id.as_str()) {
            self.audit(workspace, "entity.add", entities.iter().map(|e| e.name.as_str()), added as u64);
        }
        Ok(added)
    }

    fn add_triple(&self, triple: &Triple) -> StoreResult<TripleOutcome> {
        self.write(&triple.workspace_id)?;
        self.admit(&triple.workspace_id, Usage { triples: 1, ..Usage::default() })?;
        let outcome = self.inner.add_triple(triple)?;
        let target = format!("{} {} {}", triple.subject, triple.predicate, triple.object);
        self.audit(triple.workspace_id.as_str(), "triple.add", [target.as_str()], 1);
        Ok(outcome)
    }

    fn invalidate_triples(
        &self,
        workspace: &WorkspaceId,
        subject: &str,
        predicate: &str,
        object: &str,
        ended: Timestamp,
    ) -> StoreResult<usize> {
        self.write(workspace)?;
        let n = self.inner.invalidate_triples(workspace, subject, predicate, object, ended)?;
        let target = format!("{subject} {predicate} {object}");
        self.audit(workspace.as_str(), "triple.invalidate", [target.as_str()], n as u64);
        Ok(n)
    }

    fn delete_triple(&self, workspace: &WorkspaceId, id: &str) -> StoreResult<bool> {
        self.write(workspace)?;
        let done = self.inner.delete_triple(workspace, id)?;
        self.audit(workspace.as_str(), "triple.delete", [id], u64::from(done));
        Ok(done)
    }

    fn put_tunnel(&self, tunnel: &Tunnel) -> StoreResult<bool> {
        self.write(&tunnel.workspace_id)?;
        let done = self.inner.put_tunnel(tunnel)?;
        self.audit(tunnel.workspace_id.as_str(), "tunnel.put", [tunnel.id.as_str()], u64::from(done));
        Ok(done)
    }

    fn delete_tunnel(&self, workspace: &WorkspaceId, id: &str) -> StoreResult<bool> {
        self.write(workspace)?;
        let done = self.inner.delete_tunnel(workspace, id)?;
        self.audit(workspace.as_str(), "tunnel.delete", [id], u64::from(done));
        Ok(done)
    }

    fn set_source_cursor(
        &self,
        workspace: &WorkspaceId,
        source: &str,
        cursor: Option<&str>,
        at: Timestamp,
    ) -> StoreResult<()> {
        self.write(workspace)?;
        self.inner.set_source_cursor(workspace, source, cursor, at)
    }

    fn put_artifact(&self, artifact: &Artifact) -> StoreResult<PutOutcome> {
        self.write(&artifact.workspace_id)?;
        let outcome = self.inner.put_artifact(artifact)?;
        self.audit(
            artifact.workspace_id.as_str(),
            "artifact.put",
            [artifact.id.as_str()],
            changed(std::slice::from_ref(&outcome)),
        );
        Ok(outcome)
    }

    fn append_event(&self, event: &Event, artifacts: &[Artifact]) -> StoreResult<AppendOutcome> {
        self.write(&event.workspace_id)?;
        for artifact in artifacts {
            self.write(&artifact.workspace_id)?;
        }
        let outcome = self.inner.append_event(event, artifacts)?;
        self.audit(event.workspace_id.as_str(), "event.append", [event.id.as_str()], 1);
        Ok(outcome)
    }

    fn claim_raw_drawers(
        &self,
        workspace: &WorkspaceId,
        worker: &str,
        limit: usize,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<Vec<Drawer>> {
        self.access.need_admin("claiming drawers for the cold path")?;
        self.inner.claim_raw_drawers(workspace, worker, limit, now, until)
    }

    fn complete_claims(&self, workspace: &WorkspaceId, worker: &str, drawers: &[Drawer]) -> StoreResult<Vec<DrawerId>> {
        self.access.need_admin("completing cold-path claims")?;
        self.inner.complete_claims(workspace, worker, drawers)
    }

    fn decay_importance(
        &self,
        workspace: &WorkspaceId,
        filed_before: Timestamp,
        idle_since: Timestamp,
        factor: f64,
        floor: f64,
    ) -> StoreResult<usize> {
        self.access.need_admin("decaying importance")?;
        self.inner.decay_importance(workspace, filed_before, idle_since, factor, floor)
    }

    fn expire_episodic_summaries(&self, workspace: &WorkspaceId, now: Timestamp) -> StoreResult<usize> {
        self.access.need_admin("expiring episodic summaries")?;
        self.inner.expire_episodic_summaries(workspace, now)
    }

    fn save_episodic_summary(&self, summary: &EpisodicSummary) -> StoreResult<()> {
        self.write(&summary.workspace_id)?;
        self.inner.save_episodic_summary(summary)?;
        self.audit(summary.workspace_id.as_str(), "episode.save", [summary.id.as_str()], 1);
        Ok(())
    }

    fn mark_episodes_promoted(&self, workspace: &WorkspaceId, ids: &[String], at: Timestamp) -> StoreResult<usize> {
        self.write(workspace)?;
        self.inner.mark_episodes_promoted(workspace, ids, at)
    }

    fn merge_entity(
        &self,
        workspace: &WorkspaceId,
        alias: &str,
        canonical: &str,
        reason: &str,
        at: Timestamp,
    ) -> StoreResult<MergeOutcome> {
        self.write(workspace)?;
        let outcome = self.inner.merge_entity(workspace, alias, canonical, reason, at)?;
        let target = format!("{alias} -> {canonical}");
        self.audit(workspace.as_str(), "entity.merge", [target.as_str()], 1);
        Ok(outcome)
    }

    fn unmerge_entity(&self, workspace: &WorkspaceId, alias: &str) -> StoreResult<Option<Unmerged>> {
        self.write(workspace)?;
        let outcome = self.inner.unmerge_entity(workspace, alias)?;
        self.audit(workspace.as_str(), "entity.unmerge", [alias], u64::from(outcome.is_some()));
        Ok(outcome)
    }

    fn put_centroid(&self, centroid: &Centroid) -> StoreResult<bool> {
        self.write(&centroid.workspace_id)?;
        self.inner.put_centroid(centroid)
    }

    fn put_room_centroid(&self, centroid: &RoomCentroid) -> StoreResult<bool> {
        self.write(&centroid.workspace_id)?;
        self.inner.put_room_centroid(centroid)
    }

    fn delete_room_centroid(&self, workspace: &WorkspaceId, wing: &str, room: &str) -> StoreResult<bool> {
        self.write(workspace)?;
        self.inner.delete_room_centroid(workspace, wing, room)
    }

    fn try_start_job(
        &self,
        job: &str,
        tick: i64,
        holder: &str,
        lease: std::time::Duration,
        now: Timestamp,
    ) -> StoreResult<bool> {
        self.access.need_admin("running background jobs")?;
        self.inner.try_start_job(job, tick, holder, lease, now)
    }

    fn finish_job(&self, job: &str, holder: &str) -> StoreResult<()> {
        self.access.need_admin("running background jobs")?;
        self.inner.finish_job(job, holder)
    }

    fn set_identity(&self, workspace: &WorkspaceId, identity: &Identity, at: Timestamp) -> StoreResult<()> {
        self.write(workspace)?;
        self.inner.set_identity(workspace, identity, at)?;
        self.audit(workspace.as_str(), "identity.set", [], 1);
        Ok(())
    }

    fn import(&self, records: &[PalaceRecord]) -> StoreResult<RecordCounts> {
        let mut workspaces: HashSet<&WorkspaceId> = HashSet::new();
        let mut drawers = Vec::new();
        for record in records {
            let workspace = record_workspace(record);
            if workspaces.insert(workspace) {
                self.write(workspace)?;
            }
            if let PalaceRecord::Drawer(drawer) = record {
                drawers.push(drawer.as_ref().clone());
            }
        }
        self.check_drawers(&drawers, false)?;
        let counts = self.inner.import(records)?;
        for workspace in workspaces {
            self.audit(workspace.as_str(), "import", [], counts.inserted);
        }
        Ok(counts)
    }

    fn verify(&self) -> StoreResult<Vec<HealthCheck>> {
        self.access.need_admin("checking the whole palace")?;
        self.inner.verify()
    }

    fn rebuild_derived(&self) -> StoreResult<Vec<HealthCheck>> {
        self.access.need_admin("rebuilding the palace's indexes")?;
        self.inner.rebuild_derived()
    }
}

/// The directory through the guard: usage and limits of readable
/// workspaces; everything else is managed through `Tenancy`, which checks
/// its own rules, so here it needs an admin.
impl Directory for GuardedStore {
    fn put_principal(&self, principal: &Principal) -> StoreResult<bool> {
        self.access.need_admin("adding users")?;
        self.inner.put_principal(principal)
    }

    fn principal(&self, id: &PrincipalId) -> StoreResult<Option<Principal>> {
        self.access.need_admin("reading users")?;
        self.inner.principal(id)
    }

    fn principals(&self) -> StoreResult<Vec<Principal>> {
        self.access.need_admin("listing users")?;
        self.inner.principals()
    }

    fn set_principal_disabled(&self, id: &PrincipalId, at: Option<Timestamp>) -> StoreResult<bool> {
        self.access.need_admin("disabling users")?;
        self.inner.set_principal_disabled(id, at)
    }

    fn has_principals(&self) -> StoreResult<bool> {
        self.inner.has_principals()
    }

    fn put_token(&self, token: &TokenRecord) -> StoreResult<()> {
        self.access.need_admin("storing tokens")?;
        self.inner.put_token(token)
    }

    fn token(&self, id: &TokenId) -> StoreResult<Option<TokenRecord>> {
        self.access.need_admin("reading tokens")?;
        self.inner.token(id)
    }

    fn tokens(&self, principal: Option<&PrincipalId>) -> StoreResult<Vec<TokenRecord>> {
        self.access.need_admin("listing tokens")?;
        self.inner.tokens(principal)
    }

    fn revoke_token(&self, id: &TokenId, at: Timestamp) -> StoreResult<bool> {
        self.access.need_admin("revoking tokens")?;
        self.inner.revoke_token(id, at)
    }

    fn touch_token(&self, id: &TokenId, at: Timestamp) -> StoreResult<()> {
        self.access.need_admin("recording token use")?;
        self.inner.touch_token(id, at)
    }

    fn put_team(&self, team: &Team) -> StoreResult<bool> {
        self.access.need_admin("creating teams")?;
        self.inner.put_team(team)
    }

    fn team(&self, id: &TeamId) -> StoreResult<Option<Team>> {
        self.access.need_admin("reading teams")?;
        self.inner.team(id)
    }

    fn teams(&self) -> StoreResult<Vec<Team>> {
        self.access.need_admin("listing teams")?;
        self.inner.teams()
    }

    fn set_team_member(&self, team: &TeamId, member: &PrincipalId, add: bool) -> StoreResult<bool> {
        self.access.need_admin("changing teams")?;
        self.inner.set_team_member(team, member, add)
    }

    fn set_team_leader(&self, team: &TeamId, leader: &PrincipalId) -> StoreResult<bool> {
        self.access.need_admin("changing teams")?;
        self.inner.set_team_leader(team, leader)
    }

    fn delete_team(&self, team: &TeamId) -> StoreResult<bool> {
        self.access.need_admin("deleting teams")?;
        self.inner.delete_team(team)
    }

    fn ensure_workspace(&self, workspace: &WorkspaceId, at: Timestamp) -> StoreResult<()> {
        self.write(workspace)?;
        self.inner.ensure_workspace(workspace, at)
    }

    fn put_grant(&self, grant: &Grant) -> StoreResult<()> {
        self.access.need(&grant.workspace, Role::Owner, "granting roles")?;
        self.inner.put_grant(grant)
    }

    fn delete_grant(&self, workspace: &WorkspaceId, member: &Member) -> StoreResult<bool> {
        self.access.need(workspace, Role::Owner, "revoking roles")?;
        self.inner.delete_grant(workspace, member)
    }

    fn grants(&self, workspace: Option<&WorkspaceId>) -> StoreResult<Vec<Grant>> {
        match workspace {
            Some(workspace) => self.access.need(workspace, Role::Reader, "listing members")?,
            None => self.access.need_admin("listing every grant")?,
        }
        self.inner.grants(workspace)
    }

    fn grants_for(&self, members: &[Member]) -> StoreResult<Vec<Grant>> {
        self.access.need_admin("listing grants")?;
        self.inner.grants_for(members)
    }

    fn limits(&self, workspace: &WorkspaceId) -> StoreResult<Option<Limits>> {
        self.read(workspace)?;
        self.inner.limits(workspace)
    }

    fn set_limits(&self, workspace: &WorkspaceId, limits: &Limits) -> StoreResult<()> {
        self.access.need(workspace, Role::Owner, "setting limits")?;
        self.inner.set_limits(workspace, limits)
    }

    fn usage(&self, workspace: &WorkspaceId) -> StoreResult<Usage> {
        self.read(workspace)?;
        self.inner.usage(workspace)
    }

    fn append_audit(&self, _entry: &AuditEntry) -> StoreResult<i64> {
        Err(StoreError::denied("the audit trail is written by the guard only"))
    }

    fn audit(&self, filter: &AuditFilter) -> StoreResult<Vec<AuditEntry>> {
        match filter.workspace.as_deref().map(WorkspaceId::parse) {
            Some(Ok(workspace)) => self.access.need(&workspace, Role::Owner, "reading the audit trail")?,
            _ => self.access.need_admin("reading the whole audit trail")?,
        }
        self.inner.audit(filter)
    }
}
