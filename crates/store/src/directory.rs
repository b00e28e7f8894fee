//! The palace's directory: principals, tokens, teams, workspace grants,
//! limits and the audit trail (docs/tenancy.md). Kept by the same store as
//! the memories, so a team palace is one database to back up.
//!
//! The store only keeps records; who may do what is decided by core's
//! `tenancy` rules and enforced by the engine's access guard.

use mempalace_core::tenancy::{
    AuditEntry, AuditFilter, Grant, Limits, Member, Principal, PrincipalId, Team, TeamId, TokenId, TokenRecord, Usage,
};
use mempalace_core::{Timestamp, WorkspaceId};

use crate::StoreResult;

/// Principals, tokens, teams, grants, limits and audit entries.
pub trait Directory: Send + Sync {
    /// Adds a principal; false when the id is taken (nothing changes).
    fn put_principal(&self, principal: &Principal) -> StoreResult<bool>;

    /// One principal.
    fn principal(&self, id: &PrincipalId) -> StoreResult<Option<Principal>>;

    /// Every principal, by id.
    fn principals(&self) -> StoreResult<Vec<Principal>>;

    /// Disables (`Some(at)`) or enables (`None`) a principal; false when
    /// there is no such principal.
    fn set_principal_disabled(&self, id: &PrincipalId, at: Option<Timestamp>) -> StoreResult<bool>;

    /// Whether the palace has any principal (a palace without one is a
    /// single-user palace and needs no token anywhere).
    fn has_principals(&self) -> StoreResult<bool>;

    /// Stores a new token record.
    fn put_token(&self, token: &TokenRecord) -> StoreResult<()>;

    /// One token record.
    fn token(&self, id: &TokenId) -> StoreResult<Option<TokenRecord>>;

    /// The tokens of one principal, or of all, newest first.
    fn tokens(&self, principal: Option<&PrincipalId>) -> StoreResult<Vec<TokenRecord>>;

    /// Revokes a token; false when there is none or it was revoked already.
    fn revoke_token(&self, id: &TokenId, at: Timestamp) -> StoreResult<bool>;

    /// Records that a token was presented (callers throttle this).
    fn touch_token(&self, id: &TokenId, at: Timestamp) -> StoreResult<()>;

    /// Creates a team (leader and members); false when the id is taken.
    fn put_team(&self, team: &Team) -> StoreResult<bool>;

    /// One team with its members.
    fn team(&self, id: &TeamId) -> StoreResult<Option<Team>>;

    /// Every team with its members, by id.
    fn teams(&self) -> StoreResult<Vec<Team>>;

    /// Adds (`true`) or removes a member; false when nothing changed. The
    /// leader cannot be removed (make someone else leader first).
    fn set_team_member(&self, team: &TeamId, member: &PrincipalId, add: bool) -> StoreResult<bool>;

    /// Makes `leader` the team's leader (the old leader stays a member);
    /// false when there is no such team.
    fn set_team_leader(&self, team: &TeamId, leader: &PrincipalId) -> StoreResult<bool>;

    /// Deletes a team and its grants; false when there is none.
    fn delete_team(&self, team: &TeamId) -> StoreResult<bool>;

    /// Registers a workspace (idempotent; its drawers may come later).
    fn ensure_workspace(&self, workspace: &WorkspaceId, at: Timestamp) -> StoreResult<()>;

    /// Sets (inserts or replaces) a member's role in a workspace.
    fn put_grant(&self, grant: &Grant) -> StoreResult<()>;

    /// Removes a member's grant; false when there was none.
    fn delete_grant(&self, workspace: &WorkspaceId, member: &Member) -> StoreResult<bool>;

    /// The grants of one workspace, or of every workspace.
    fn grants(&self, workspace: Option<&WorkspaceId>) -> StoreResult<Vec<Grant>>;

    /// The grants naming any of `members`.
    fn grants_for(&self, members: &[Member]) -> StoreResult<Vec<Grant>>;

    /// A workspace's stored limits (`None`: none stored, the configured
    /// defaults apply).
    fn limits(&self, workspace: &WorkspaceId) -> StoreResult<Option<Limits>>;

    /// Stores a workspace's limits.
    fn set_limits(&self, workspace: &WorkspaceId, limits: &Limits) -> StoreResult<()>;

    /// What a workspace holds: active drawers and their bytes, entities,
    /// triples — from aggregates, never a scan of the drawers.
    fn usage(&self, workspace: &WorkspaceId) -> StoreResult<Usage>;

    /// Appends to the audit trail; returns the entry's position.
    fn append_audit(&self, entry: &AuditEntry) -> StoreResult<i64>;

    /// Audit entries passing `filter`, newest first.
    fn audit(&self, filter: &AuditFilter) -> StoreResult<Vec<AuditEntry>>;
}
