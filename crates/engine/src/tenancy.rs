//! Tenancy as the surfaces use it (docs/tenancy.md): resolving a caller
//! from a token, scoping a palace handle to that caller (role checks,
//! private drawers, limits and the audit trail then apply to every call,
//! through `crate::guard`), the request rate per workspace, and managing
//! users, tokens, teams, grants and limits.
//!
//! A palace without principals is a single-user palace: its local operator
//! gets the unguarded handle, exactly as before tenancy existed. Creating
//! the first user makes it a team palace: from then on every handle is
//! guarded (the local operator's too, so its writes are audited as
//! `local`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use mempalace_core::Timestamp;
use mempalace_core::WorkspaceId;
use mempalace_core::secret::Secret;
use mempalace_core::tenancy::{
    AuditEntry, AuditFilter, Caller, Grant, Limits, Member, Principal, PrincipalId, PrincipalKind, RateWindow, Role,
    Team, TeamId, TokenId, TokenRecord, TokenRejection, Usage, effective_role, issue_token, token_id,
};
use mempalace_store::{Store, StoreError};

use crate::guard::Access;
use crate::palace::{Clock, Palace};
use crate::{EngineError, EngineResult};

/// A token's last use is recorded at most this often per process.
const TOUCH_EVERY: chrono::TimeDelta = chrono::TimeDelta::minutes(1);

/// Handles smaller than this many workspaces are cached per process.
const CACHED_WORKSPACES: usize = 256;

/// Tenancy over one store, shared by a process's surfaces.
pub struct Tenancy {
    store: Arc<dyn Store>,
    base: Palace,
    clock: Clock,
    rates: Mutex<HashMap<WorkspaceId, RateWindow>>,
    touched: Mutex<HashMap<TokenId, Timestamp>>,
    palaces: Mutex<HashMap<WorkspaceId, Palace>>,
    /// Set once the palace is seen to have users: users are never deleted
    /// (only disabled), so a team palace stays one and later scopes skip
    /// the query.
    shared: AtomicBool,
}

impl std::fmt::Debug for Tenancy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tenancy").finish_non_exhaustive()
    }
}

/// What `whoami` answers.
#[derive(Debug, Clone)]
pub struct Identity {
    /// The caller.
    pub caller: Caller,
    /// Its workspaces and roles (`None`: the local operator, every one).
    pub workspaces: Option<Vec<(WorkspaceId, Role)>>,
}

/// A workspace's limits (stored, else none) and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitReport {
    /// The limits that apply.
    pub limits: Limits,
    /// Whether they are stored for this workspace (else none apply).
    pub stored: bool,
    /// What the workspace holds.
    pub usage: Usage,
}

impl Tenancy {
    /// Tenancy for the palace `base` works on (its store, clock and
    /// settings are the template of every scoped handle).
    pub fn new(base: Palace) -> Self {
        let store = Arc::clone(base.store());
        let clock = base.clock();
        Self {
            store,
            base,
            clock,
            rates: Mutex::default(),
            touched: Mutex::default(),
            palaces: Mutex::default(),
            shared: AtomicBool::new(false),
        }
    }

    /// The current time by the palace's clock.
    pub fn now(&self) -> Timestamp {
        (self.clock)()
    }

    /// Whether the palace has users (a team palace).
    pub fn is_shared(&self) -> EngineResult<bool> {
        if self.shared.load(Ordering::Relaxed) {
            return Ok(true);
        }
        let shared = self.store.has_principals()?;
        if shared {
            self.shared.store(true, Ordering::Relaxed);
        }
        Ok(shared)
    }

    /// The caller a token stands for: known, matching, not revoked or
    /// expired, and its principal not disabled.
    pub fn authenticate(&self, token: &str) -> EngineResult<Caller> {
        let id = token_id(token)?;
        let record = self.store.token(&id)?.ok_or(TokenRejection::Invalid)?;
        let now = self.now();
        record.verify(token, now)?;
        let principal = self.store.principal(&record.principal)?.ok_or(TokenRejection::Invalid)?;
        if principal.disabled_at.is_some() {
            return Err(TokenRejection::Disabled(principal.id.to_string()).into());
        }
        let due = {
            let mut touched = self.touched.lock().expect("token touch map poisoned");
            let due = touched.get(&id).is_none_or(|last| now - *last >= TOUCH_EVERY);
            if due {
                touched.insert(id.clone(), now);
            }
            due
        };
        if due && let Err(error) = self.store.touch_token(&id, now) {
            tracing::warn!(%error, token = %id, "could not record the token's use");
        }
        Ok(Caller::Principal(principal))
    }

    /// The caller's roles in every workspace it was granted (directly or
    /// through a team), plus a user's personal workspace.
    pub fn access(&self, caller: &Caller) -> EngineResult<Access> {
        let Caller::Principal(principal) = caller else {
            return Ok(Access::new(Caller::Local, HashMap::new()));
        };
        let teams: Vec<Team> = self.store.teams()?.into_iter().filter(|t| t.includes(&principal.id)).collect();
        let mut members = vec![Member::Principal(principal.id.clone())];
        members.extend(teams.iter().map(|t| Member::Team(t.id.clone())));
        let grants = self.store.grants_for(&members)?;
        let mut roles = HashMap::new();
        let mut workspaces: Vec<WorkspaceId> = grants.iter().map(|g| g.workspace.clone()).collect();
        if principal.kind == PrincipalKind::User {
            workspaces.push(principal.id.personal_workspace());
        }
        for workspace in workspaces {
            if let Some(role) = effective_role(&principal.id, principal.kind, &workspace, &grants, &teams) {
                roles.insert(workspace, role);
            }
        }
        Ok(Access::new(caller.clone(), roles))
    }

    /// Who the caller is and where it may work.
    pub fn whoami(&self, caller: &Caller) -> EngineResult<Identity> {
        let access = self.access(caller)?;
        Ok(Identity { caller: caller.clone(), workspaces: access.workspaces() })
    }

    /// The unguarded handle of `workspace`, cached so its derived indexes
    /// (the vector index above all) survive between requests.
    fn base_for(&self, workspace: &WorkspaceId) -> Palace {
        if workspace == self.base.workspace() {
            return self.base.clone();
        }
        let mut palaces = self.palaces.lock().expect("palace cache poisoned");
        if let Some(palace) = palaces.get(workspace) {
            return palace.clone();
        }
        if palaces.len() >= CACHED_WORKSPACES {
            palaces.clear();
        }
        let palace = self.base.for_workspace(workspace.clone());
        palaces.insert(workspace.clone(), palace.clone());
        palace
    }

    /// A handle on `workspace` (default: the base palace's) acting for
    /// `caller`. Refused when the caller has no role there or the
    /// workspace's request rate is used up. On a single-user palace the
    /// local operator gets the unguarded handle.
    pub fn scope(&self, caller: &Caller, workspace: Option<&WorkspaceId>) -> EngineResult<Palace> {
        let workspace = workspace.cloned().unwrap_or_else(|| self.base.workspace().clone());
        if matches!(caller, Caller::Local) && !self.is_shared()? {
            return Ok(self.base_for(&workspace));
        }
        let access = Arc::new(self.access(caller)?);
        access.need(&workspace, Role::Reader, "working")?;
        self.count_request(&workspace)?;
        let palace = self.base_for(&workspace).guarded(&self.store, Arc::clone(&access));
        if let Caller::Principal(principal) = caller
            && principal.kind == PrincipalKind::User
        {
            let personal = principal.id.personal_workspace();
            if personal != workspace {
                let mine = self.base_for(&personal).guarded(&self.store, access);
                return Ok(palace.with_personal(mine));
            }
        }
        Ok(palace)
    }

    /// Counts one request against the workspace's per-minute limit.
    fn count_request(&self, workspace: &WorkspaceId) -> EngineResult<()> {
        let Some(limit) = self.store.limits(workspace)?.and_then(|l| l.requests_per_minute) else {
            return Ok(());
        };
        let seconds = self.now().timestamp();
        let mut rates = self.rates.lock().expect("rate map poisoned");
        rates.entry(workspace.clone()).or_default().admit(seconds, limit).map_err(|retry_after_s| {
            EngineError::RateLimited { workspace: workspace.to_string(), limit, retry_after_s }
        })
    }

    fn audit(&self, caller: &Caller, workspace: &str, action: &str, target: &str) {
        let entry = AuditEntry {
            seq: 0,
            at: self.now(),
            workspace: workspace.to_string(),
            actor: caller.actor().to_string(),
            action: action.to_string(),
            target: target.to_string(),
            count: 1,
        };
        if let Err(error) = self.store.append_audit(&entry) {
            tracing::error!(%error, action, "the change committed but its audit entry could not be written");
        }
    }

    fn need_admin(caller: &Caller, doing: &str) -> EngineResult<()> {
        if caller.is_admin() {
            Ok(())
        } else {
            Err(StoreError::denied(format!(
                "{doing} is for admins; {} is not one (an admin can run `mempalace user add NAME --admin`)",
                caller.actor()
            ))
            .into())
        }
    }

    fn need_role(&self, caller: &Caller, workspace: &WorkspaceId, role: Role, doing: &str) -> EngineResult<()> {
        if caller.is_admin() {
            return Ok(());
        }
        Ok(self.access(caller)?.need(workspace, role, doing)?)
    }

    fn existing_principal(&self, id: &PrincipalId) -> EngineResult<Principal> {
        self.store.principal(id)?.ok_or_else(|| EngineError::NotFound { what: "user or agent", id: id.to_string() })
    }

    fn existing_team(&self, id: &TeamId) -> EngineResult<Team> {
        self.store.team(id)?.ok_or_else(|| EngineError::NotFound { what: "team", id: id.to_string() })
    }

    /// Adds a user or agent (admins; the local operator creates the first).
    pub fn add_principal(
        &self,
        caller: &Caller,
        id: PrincipalId,
        kind: PrincipalKind,
        display_name: Option<String>,
        admin: bool,
    ) -> EngineResult<Principal> {
        Self::need_admin(caller, "adding users and agents")?;
        let principal = Principal {
            id,
            kind,
            display_name: display_name.filter(|n| !n.trim().is_empty()),
            admin,
            created_at: self.now(),
            disabled_at: None,
        };
        if !self.store.put_principal(&principal)? {
            return Err(EngineError::Conflict(format!(
                "{} already exists; `mempalace user list` shows who is there",
                principal.id
            )));
        }
        if kind == PrincipalKind::User {
            self.store.ensure_workspace(&principal.id.personal_workspace(), principal.created_at)?;
        }
        self.audit(caller, "", &format!("{}.add", kind.as_str()), principal.id.as_str());
        Ok(principal)
    }

    /// Every user and agent (admins).
    pub fn principals(&self, caller: &Caller) -> EngineResult<Vec<Principal>> {
        Self::need_admin(caller, "listing users and agents")?;
        Ok(self.store.principals()?)
    }

    /// Disables (its tokens stop working at once) or enables a principal.
    pub fn set_disabled(&self, caller: &Caller, id: &PrincipalId, disabled: bool) -> EngineResult<()> {
        Self::need_admin(caller, "disabling users and agents")?;
        self.existing_principal(id)?;
        self.store.set_principal_disabled(id, disabled.then(|| self.now()))?;
        self.audit(caller, "", if disabled { "user.disable" } else { "user.enable" }, id.as_str());
        Ok(())
    }

    /// Issues a token for `principal` (an admin, or the principal itself):
    /// the stored record and the token text, which is shown once.
    pub fn issue_token(
        &self,
        caller: &Caller,
        principal: &PrincipalId,
        label: &str,
        expires_at: Option<Timestamp>,
    ) -> EngineResult<(TokenRecord, Secret)> {
        let own = caller.principal().is_some_and(|p| &p.id == principal);
        if !own {
            Self::need_admin(caller, "creating tokens for someone else")?;
        }
        let target = self.existing_principal(principal)?;
        if target.disabled_at.is_some() {
            return Err(EngineError::Conflict(format!(
                "{principal} is disabled; enable it first (`mempalace user enable {principal}`)"
            )));
        }
        let now = self.now();
        if let Some(at) = expires_at
            && at <= now
        {
            return Err(EngineError::Conflict("the expiry is in the past; give a later date or a duration".into()));
        }
        let mut random = [0u8; 32];
        getrandom::fill(&mut random)
            .map_err(|e| EngineError::Unavailable(format!("the system's random source failed: {e}")))?;
        let (record, secret) = issue_token(principal, label, random, now, expires_at);
        self.store.put_token(&record)?;
        self.audit(caller, "", "token.create", &format!("{} ({principal})", record.id));
        Ok((record, secret))
    }

    /// Tokens of `principal` (default: the caller's own), never secrets.
    pub fn tokens(&self, caller: &Caller, principal: Option<&PrincipalId>) -> EngineResult<Vec<TokenRecord>> {
        let own = caller.principal().map(|p| &p.id);
        match (principal, own) {
            (Some(asked), Some(mine)) if asked == mine => Ok(self.store.tokens(Some(mine))?),
            (None, Some(mine)) if !caller.is_admin() => Ok(self.store.tokens(Some(mine))?),
            (asked, _) => {
                Self::need_admin(caller, "listing other users' tokens")?;
                Ok(self.store.tokens(asked)?)
            }
        }
    }

    /// Revokes a token (an admin, or the token's own principal).
    pub fn revoke_token(&self, caller: &Caller, id: &TokenId) -> EngineResult<()> {
        let record =
            self.store.token(id)?.ok_or_else(|| EngineError::NotFound { what: "token", id: id.to_string() })?;
        if caller.principal().is_none_or(|p| p.id != record.principal) {
            Self::need_admin(caller, "revoking someone else's token")?;
        }
        if !self.store.revoke_token(id, self.now())? {
            return Err(EngineError::Conflict(format!("token {id} was already revoked")));
        }
        self.audit(caller, "", "token.revoke", &format!("{id} ({})", record.principal));
        Ok(())
    }

    /// Creates a team with its leader and members (admins).
    pub fn create_team(
        &self,
        caller: &Caller,
        id: TeamId,
        leader: PrincipalId,
        members: Vec<PrincipalId>,
    ) -> EngineResult<Team> {
        Self::need_admin(caller, "creating teams")?;
        for who in std::iter::once(&leader).chain(&members) {
            self.existing_principal(who)?;
        }
        let mut members: Vec<PrincipalId> = members.into_iter().filter(|m| *m != leader).collect();
        members.sort();
        members.dedup();
        let team = Team { id, leader, members, created_at: self.now() };
        if !self.store.put_team(&team)? {
            return Err(EngineError::Conflict(format!("team {} already exists", team.id)));
        }
        self.audit(caller, "", "team.create", team.id.as_str());
        Ok(team)
    }

    /// Every team (admins see all; others the teams they are in).
    pub fn teams(&self, caller: &Caller) -> EngineResult<Vec<Team>> {
        let teams = self.store.teams()?;
        Ok(match caller.principal() {
            Some(p) if !p.admin => teams.into_iter().filter(|t| t.includes(&p.id)).collect(),
            _ => teams,
        })
    }

    /// Adds or removes a member (an admin or the team's leader).
    pub fn set_team_member(
        &self,
        caller: &Caller,
        team: &TeamId,
        member: &PrincipalId,
        add: bool,
    ) -> EngineResult<bool> {
        let current = self.existing_team(team)?;
        if caller.principal().is_none_or(|p| p.id != current.leader) {
            Self::need_admin(caller, "changing a team you do not lead")?;
        }
        if add {
            self.existing_principal(member)?;
        } else if *member == current.leader {
            return Err(EngineError::Conflict(format!(
                "{member} leads {team}; make someone else leader first (`mempalace team leader {team} NAME`)"
            )));
        }
        let changed = self.store.set_team_member(team, member, add)?;
        if changed {
            let action = if add { "team.add" } else { "team.remove" };
            self.audit(caller, "", action, &format!("{team}:{member}"));
        }
        Ok(changed)
    }

    /// Makes `leader` the team's leader (an admin or the current leader).
    pub fn set_team_leader(&self, caller: &Caller, team: &TeamId, leader: &PrincipalId) -> EngineResult<()> {
        let current = self.existing_team(team)?;
        if caller.principal().is_none_or(|p| p.id != current.leader) {
            Self::need_admin(caller, "changing a team you do not lead")?;
        }
        self.existing_principal(leader)?;
        self.store.set_team_leader(team, leader)?;
        self.audit(caller, "", "team.leader", &format!("{team}:{leader}"));
        Ok(())
    }

    /// Deletes a team and its grants (admins).
    pub fn delete_team(&self, caller: &Caller, team: &TeamId) -> EngineResult<()> {
        Self::need_admin(caller, "deleting teams")?;
        if !self.store.delete_team(team)? {
            return Err(EngineError::NotFound { what: "team", id: team.to_string() });
        }
        self.audit(caller, "", "team.delete", team.as_str());
        Ok(())
    }

    /// Creates a shared workspace with seed 0's default limits (admins and
    /// users; the creating user becomes its owner). An existing workspace
    /// is refused: ask its owner for a role instead.
    pub fn create_workspace(&self, caller: &Caller, workspace: &WorkspaceId, limits: Limits) -> EngineResult<()> {
        if let Some(p) = caller.principal()
            && p.kind == PrincipalKind::Agent
            && !p.admin
        {
            return Err(StoreError::denied(format!("{} is an agent; agents cannot create workspaces", p.id)).into());
        }
        if workspace.as_str().starts_with(mempalace_core::tenancy::PERSONAL_PREFIX) {
            return Err(EngineError::Conflict(format!(
                "{workspace} is a personal workspace name (personal.USER); choose another id"
            )));
        }
        if self.store.workspaces()?.contains(workspace) {
            return Err(EngineError::Conflict(format!(
                "workspace {workspace} already exists; its owner can grant you a role \
                 (`mempalace workspace members {workspace}` lists them)"
            )));
        }
        let now = self.now();
        self.store.ensure_workspace(workspace, now)?;
        self.store.set_limits(workspace, &limits)?;
        if let Some(p) = caller.principal() {
            self.store.put_grant(&Grant {
                workspace: workspace.clone(),
                member: Member::Principal(p.id.clone()),
                role: Role::Owner,
                granted_at: now,
                granted_by: p.id.to_string(),
            })?;
        }
        self.audit(caller, workspace.as_str(), "workspace.create", workspace.as_str());
        Ok(())
    }

    /// Gives a member a role in a workspace (its owners and admins).
    pub fn grant(&self, caller: &Caller, workspace: &WorkspaceId, member: Member, role: Role) -> EngineResult<Grant> {
        self.need_role(caller, workspace, Role::Owner, "granting roles")?;
        match &member {
            Member::Principal(id) => {
                self.existing_principal(id)?;
            }
            Member::Team(id) => {
                self.existing_team(id)?;
            }
        }
        let grant = Grant {
            workspace: workspace.clone(),
            member,
            role,
            granted_at: self.now(),
            granted_by: caller.actor().to_string(),
        };
        self.store.ensure_workspace(workspace, grant.granted_at)?;
        self.store.put_grant(&grant)?;
        self.audit(caller, workspace.as_str(), "grant.set", &format!("{} {}", grant.member, role));
        Ok(grant)
    }

    /// Removes a member's role (its owners and admins).
    pub fn revoke(&self, caller: &Caller, workspace: &WorkspaceId, member: &Member) -> EngineResult<()> {
        self.need_role(caller, workspace, Role::Owner, "revoking roles")?;
        if !self.store.delete_grant(workspace, member)? {
            return Err(EngineError::NotFound { what: "grant", id: format!("{member} in {workspace}") });
        }
        self.audit(caller, workspace.as_str(), "grant.revoke", &member.to_string());
        Ok(())
    }

    /// The members of a workspace (anyone with a role there).
    pub fn members(&self, caller: &Caller, workspace: &WorkspaceId) -> EngineResult<Vec<Grant>> {
        self.need_role(caller, workspace, Role::Reader, "listing members")?;
        Ok(self.store.grants(Some(workspace))?)
    }

    /// A workspace's limits and use (anyone with a role there).
    pub fn limits(&self, caller: &Caller, workspace: &WorkspaceId) -> EngineResult<LimitReport> {
        self.need_role(caller, workspace, Role::Reader, "reading limits")?;
        let stored = self.store.limits(workspace)?;
        Ok(LimitReport {
            limits: stored.unwrap_or_default(),
            stored: stored.is_some(),
            usage: self.store.usage(workspace)?,
        })
    }

    /// Stores a workspace's limits (its owners and admins).
    pub fn set_limits(&self, caller: &Caller, workspace: &WorkspaceId, limits: Limits) -> EngineResult<()> {
        self.need_role(caller, workspace, Role::Owner, "setting limits")?;
        self.store.set_limits(workspace, &limits)?;
        let text: Vec<String> = limits
            .entries()
            .iter()
            .map(|(name, value)| format!("{name}={}", value.map_or("none".to_string(), |v| v.to_string())))
            .collect();
        self.audit(caller, workspace.as_str(), "limits.set", &text.join(" "));
        Ok(())
    }

    /// Audit entries: a workspace's for its owners, everything for admins.
    pub fn audit_log(&self, caller: &Caller, filter: &AuditFilter) -> EngineResult<Vec<AuditEntry>> {
        match filter.workspace.as_deref() {
            Some(workspace) if !caller.is_admin() => {
                let workspace = WorkspaceId::parse(workspace)?;
                self.need_role(caller, &workspace, Role::Owner, "reading the audit trail")?;
            }
            _ => Self::need_admin(caller, "reading the whole audit trail")?,
        }
        Ok(self.store.audit(filter)?)
    }
}
