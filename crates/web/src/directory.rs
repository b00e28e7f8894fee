//! The REST API's side of tenancy (docs/tenancy.md): who is calling, users
//! and agents, API tokens, teams, workspace members and limits, and the
//! audit trail. Each route is one call into the engine's `Tenancy`, which
//! decides what the caller may do (admins, workspace owners, a team's
//! leader, a token's own user) — the same calls `mempalace user|token|team|workspace` make.

use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Extension, Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use mempalace_core::WorkspaceId;
use mempalace_core::tenancy::{
    AuditEntry, AuditFilter, Grant, Limits, Member, Principal, PrincipalId, PrincipalKind, Role, Team, TeamId, TokenId,
    TokenRecord,
};
use mempalace_core::time::{DayEdge, format_timestamp, parse_timestamp};
use mempalace_engine::tenancy::Tenancy;
use mempalace_mcp::Backend;
use mempalace_mcp::server::RequestScope;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::api::{ApiResult, body, query};
use crate::problem::Problem;

/// Runs `work` with the server's tenancy on the blocking pool.
async fn with_tenancy<T: Send + 'static>(
    backend: Backend,
    work: impl FnOnce(&Tenancy) -> ApiResult<T> + Send + 'static,
) -> ApiResult<T> {
    tokio::task::spawn_blocking(move || {
        let tenancy = backend.tenancy().ok_or_else(|| {
            Problem::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "Unavailable",
                "this server runs without tenancy",
            )
        })?;
        work(tenancy)
    })
    .await
    .map_err(Problem::internal)?
}

fn principal_id(text: &str) -> ApiResult<PrincipalId> {
    Ok(PrincipalId::parse(text.trim())?)
}

fn workspace_id(text: &str) -> ApiResult<WorkspaceId> {
    Ok(WorkspaceId::parse(text.trim())?)
}

fn member(text: &str) -> ApiResult<Member> {
    Ok(Member::parse(text)?)
}

fn ts(at: Option<mempalace_core::Timestamp>) -> Option<String> {
    at.as_ref().map(format_timestamp)
}

/// A workspace and the caller's role in it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WorkspaceRole {
    /// Workspace.
    pub workspace: String,
    /// reader, writer or owner.
    pub role: String,
}

/// `GET /api/v1/whoami`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WhoAmI {
    /// `local` or a user or agent id.
    pub caller: String,
    /// user or agent (null for the local operator).
    pub kind: Option<String>,
    /// Whether the caller manages everything.
    pub admin: bool,
    /// The caller's workspaces (null for the local operator: all).
    pub workspaces: Option<Vec<WorkspaceRole>>,
}

pub(crate) async fn whoami(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
) -> ApiResult<Json<WhoAmI>> {
    with_tenancy(backend, move |tenancy| Ok(Json(WhoAmI::from(&tenancy.whoami(&scope.caller)?)))).await
}

impl From<&mempalace_engine::tenancy::Identity> for WhoAmI {
    fn from(who: &mempalace_engine::tenancy::Identity) -> Self {
        Self {
            caller: who.caller.actor().to_string(),
            kind: who.caller.principal().map(|p| p.kind.as_str().to_string()),
            admin: who.caller.is_admin(),
            workspaces: who.workspaces.as_ref().map(|list| {
                list.iter().map(|(w, r)| WorkspaceRole { workspace: w.to_string(), role: r.to_string() }).collect()
            }),
        }
    }
}

/// A user or agent.
#[derive(Debug, Serialize, JsonSchema)]
pub struct UserView {
    /// Id.
    pub id: String,
    /// user or agent.
    pub kind: String,
    /// A name to show.
    pub display_name: Option<String>,
    /// Manages everything.
    pub admin: bool,
    /// Created.
    pub created_at: String,
    /// Disabled (its tokens refused).
    pub disabled_at: Option<String>,
}

impl From<&Principal> for UserView {
    fn from(p: &Principal) -> Self {
        Self {
            id: p.id.to_string(),
            kind: p.kind.as_str().to_string(),
            display_name: p.display_name.clone(),
            admin: p.admin,
            created_at: format_timestamp(&p.created_at),
            disabled_at: ts(p.disabled_at),
        }
    }
}

/// `GET /api/v1/users`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Users {
    /// By id.
    pub users: Vec<UserView>,
}

pub(crate) async fn users(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
) -> ApiResult<Json<Users>> {
    with_tenancy(backend, move |t| {
        Ok(Json(Users { users: t.principals(&scope.caller)?.iter().map(UserView::from).collect() }))
    })
    .await
}

/// Body of `POST /api/v1/users`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewUser {
    /// Id: 1–48 lowercase letters, digits, `_`, `-`, `.`.
    pub id: String,
    /// user (default) or agent.
    pub kind: Option<String>,
    /// Manages everything.
    #[serde(default)]
    pub admin: bool,
    /// A name to show.
    pub display_name: Option<String>,
}

pub(crate) async fn add_user(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    payload: Result<Json<NewUser>, JsonRejection>,
) -> ApiResult<Response> {
    let b = body(payload)?;
    let id = principal_id(&b.id)?;
    let kind = match b.kind.as_deref().unwrap_or("user") {
        "user" => PrincipalKind::User,
        "agent" => PrincipalKind::Agent,
        other => return Err(Problem::bad_request(format!("kind {other:?}: use user or agent"))),
    };
    with_tenancy(backend, move |t| {
        let added = t.add_principal(&scope.caller, id, kind, b.display_name, b.admin)?;
        Ok((StatusCode::CREATED, Json(UserView::from(&added))).into_response())
    })
    .await
}

pub(crate) async fn disable_user(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let id = principal_id(&id)?;
    with_tenancy(backend, move |t| {
        t.set_disabled(&scope.caller, &id, true)?;
        Ok(StatusCode::NO_CONTENT)
    })
    .await
}

pub(crate) async fn enable_user(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let id = principal_id(&id)?;
    with_tenancy(backend, move |t| {
        t.set_disabled(&scope.caller, &id, false)?;
        Ok(StatusCode::NO_CONTENT)
    })
    .await
}

/// A token as listed: never its secret.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TokenView {
    /// Public id (16 hex digits).
    pub id: String,
    /// Whose.
    pub user: String,
    /// What it is for.
    pub label: String,
    /// Issued.
    pub created_at: String,
    /// Stops working then.
    pub expires_at: Option<String>,
    /// Revoked then.
    pub revoked_at: Option<String>,
    /// Last presented.
    pub last_used_at: Option<String>,
    /// Whether presenting it now would work (not revoked, not expired).
    pub active: bool,
}

impl TokenView {
    /// The view of `t` as of `now`.
    pub fn new(t: &TokenRecord, now: mempalace_core::Timestamp) -> Self {
        Self {
            id: t.id.to_string(),
            user: t.principal.to_string(),
            label: t.label.clone(),
            created_at: format_timestamp(&t.created_at),
            expires_at: ts(t.expires_at),
            revoked_at: ts(t.revoked_at),
            last_used_at: ts(t.last_used_at),
            active: t.active(now),
        }
    }
}

/// Query of `GET /api/v1/tokens`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenQuery {
    /// Whose (default: the caller's own; admins: everyone's).
    pub user: Option<String>,
}

/// `GET /api/v1/tokens`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Tokens {
    /// Newest first.
    pub tokens: Vec<TokenView>,
}

pub(crate) async fn tokens(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    q: Result<Query<TokenQuery>, QueryRejection>,
) -> ApiResult<Json<Tokens>> {
    let user = query(q)?.user.as_deref().map(principal_id).transpose()?;
    with_tenancy(backend, move |t| {
        let now = t.now();
        let tokens = t.tokens(&scope.caller, user.as_ref())?;
        Ok(Json(Tokens { tokens: tokens.iter().map(|r| TokenView::new(r, now)).collect() }))
    })
    .await
}

/// Body of `POST /api/v1/tokens`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewToken {
    /// Whose (default: the caller's own; admins may name anyone).
    pub user: Option<String>,
    /// What it is for.
    #[serde(default)]
    pub label: String,
    /// When it stops working (a date or RFC 3339 time).
    pub expires_at: Option<String>,
}

/// `POST /api/v1/tokens`: the token, shown this once.
#[derive(Debug, Serialize, JsonSchema)]
pub struct IssuedToken {
    /// The token: send it as `Authorization: Bearer …`. Not retrievable later.
    pub token: String,
    /// Its record.
    pub record: TokenView,
}

pub(crate) async fn issue_token(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    payload: Result<Json<NewToken>, JsonRejection>,
) -> ApiResult<Response> {
    let b = body(payload)?;
    let user = match (b.user.as_deref(), scope.caller.principal()) {
        (Some(name), _) => principal_id(name)?,
        (None, Some(p)) => p.id.clone(),
        (None, None) => return Err(Problem::bad_request("say whose token: \"user\"")),
    };
    let expires = b.expires_at.as_deref().map(|t| parse_timestamp(t, "expires_at", DayEdge::End)).transpose()?;
    with_tenancy(backend, move |t| {
        let (record, secret) = t.issue_token(&scope.caller, &user, &b.label, expires)?;
        let issued = IssuedToken { token: secret.expose().to_string(), record: TokenView::new(&record, t.now()) };
        let mut response = (StatusCode::CREATED, Json(issued)).into_response();
        response
            .headers_mut()
            .insert(axum::http::header::CACHE_CONTROL, axum::http::HeaderValue::from_static("no-store"));
        Ok(response)
    })
    .await
}

pub(crate) async fn revoke_token(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    let id = TokenId::parse(id.trim())?;
    with_tenancy(backend, move |t| {
        t.revoke_token(&scope.caller, &id)?;
        Ok(StatusCode::NO_CONTENT)
    })
    .await
}

/// A team.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TeamView {
    /// Id.
    pub id: String,
    /// Writes for the team.
    pub leader: String,
    /// Read the team's workspaces.
    pub members: Vec<String>,
    /// Created.
    pub created_at: String,
}

impl From<&Team> for TeamView {
    fn from(t: &Team) -> Self {
        Self {
            id: t.id.to_string(),
            leader: t.leader.to_string(),
            members: t.members.iter().map(ToString::to_string).collect(),
            created_at: format_timestamp(&t.created_at),
        }
    }
}

/// `GET /api/v1/teams`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Teams {
    /// By id (for non-admins, the teams they are in).
    pub teams: Vec<TeamView>,
}

pub(crate) async fn teams(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
) -> ApiResult<Json<Teams>> {
    with_tenancy(backend, move |t| {
        Ok(Json(Teams { teams: t.teams(&scope.caller)?.iter().map(TeamView::from).collect() }))
    })
    .await
}

/// Body of `POST /api/v1/teams`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewTeam {
    /// Team id.
    pub id: String,
    /// The member who writes for the team.
    pub leader: String,
    /// Other members.
    #[serde(default)]
    pub members: Vec<String>,
}

pub(crate) async fn create_team(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    payload: Result<Json<NewTeam>, JsonRejection>,
) -> ApiResult<Response> {
    let b = body(payload)?;
    let id = TeamId::parse(b.id.trim())?;
    let leader = principal_id(&b.leader)?;
    let members = b.members.iter().map(|m| principal_id(m)).collect::<ApiResult<Vec<_>>>()?;
    with_tenancy(backend, move |t| {
        let team = t.create_team(&scope.caller, id, leader, members)?;
        Ok((StatusCode::CREATED, Json(TeamView::from(&team))).into_response())
    })
    .await
}

/// Body of `POST /api/v1/teams/{id}/members`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TeamMember {
    /// A user or agent id.
    pub user: String,
}

pub(crate) async fn add_team_member(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    Path(team): Path<String>,
    payload: Result<Json<TeamMember>, JsonRejection>,
) -> ApiResult<StatusCode> {
    let team = TeamId::parse(team.trim())?;
    let user = principal_id(&body(payload)?.user)?;
    with_tenancy(backend, move |t| {
        t.set_team_member(&scope.caller, &team, &user, true)?;
        Ok(StatusCode::NO_CONTENT)
    })
    .await
}

pub(crate) async fn remove_team_member(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    Path((team, user)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let team = TeamId::parse(team.trim())?;
    let user = principal_id(&user)?;
    with_tenancy(backend, move |t| {
        t.set_team_member(&scope.caller, &team, &user, false)?;
        Ok(StatusCode::NO_CONTENT)
    })
    .await
}

pub(crate) async fn delete_team(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    Path(team): Path<String>,
) -> ApiResult<StatusCode> {
    let team = TeamId::parse(team.trim())?;
    with_tenancy(backend, move |t| {
        t.delete_team(&scope.caller, &team)?;
        Ok(StatusCode::NO_CONTENT)
    })
    .await
}

/// Body of `POST /api/v1/workspaces`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewWorkspace {
    /// Workspace id.
    pub id: String,
    /// Store no limits (default: seed 0's — 10,000 drawers, 5,000 entities,
    /// 50,000 facts, 600 requests a minute).
    #[serde(default)]
    pub unlimited: bool,
}

pub(crate) async fn create_workspace(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    payload: Result<Json<NewWorkspace>, JsonRejection>,
) -> ApiResult<StatusCode> {
    let b = body(payload)?;
    let id = workspace_id(&b.id)?;
    let limits = if b.unlimited { Limits::default() } else { Limits::SHARED_DEFAULT };
    with_tenancy(backend, move |t| {
        t.create_workspace(&scope.caller, &id, limits)?;
        Ok(StatusCode::CREATED)
    })
    .await
}

/// A member's grant.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MemberView {
    /// A user or agent id, or `team:NAME`.
    pub member: String,
    /// principal or team.
    pub kind: String,
    /// reader, writer or owner.
    pub role: String,
    /// When.
    pub granted_at: String,
    /// By whom.
    pub granted_by: String,
}

impl From<&Grant> for MemberView {
    fn from(g: &Grant) -> Self {
        Self {
            member: g.member.to_string(),
            kind: g.member.kind().to_string(),
            role: g.role.to_string(),
            granted_at: format_timestamp(&g.granted_at),
            granted_by: g.granted_by.clone(),
        }
    }
}

/// `GET /api/v1/workspaces/{id}/members`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Members {
    /// The workspace.
    pub workspace: String,
    /// Its grants.
    pub members: Vec<MemberView>,
}

pub(crate) async fn members(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    Path(id): Path<String>,
) -> ApiResult<Json<Members>> {
    let id = workspace_id(&id)?;
    with_tenancy(backend, move |t| {
        let grants = t.members(&scope.caller, &id)?;
        Ok(Json(Members { workspace: id.to_string(), members: grants.iter().map(MemberView::from).collect() }))
    })
    .await
}

/// Body of `PUT /api/v1/workspaces/{id}/members/{member}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleBody {
    /// reader, writer or owner.
    pub role: String,
}

pub(crate) async fn grant(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    Path((id, who)): Path<(String, String)>,
    payload: Result<Json<RoleBody>, JsonRejection>,
) -> ApiResult<Json<MemberView>> {
    let id = workspace_id(&id)?;
    let who = member(&who)?;
    let role = Role::parse(&body(payload)?.role)?;
    with_tenancy(backend, move |t| Ok(Json(MemberView::from(&t.grant(&scope.caller, &id, who, role)?)))).await
}

pub(crate) async fn revoke(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    Path((id, who)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    let id = workspace_id(&id)?;
    let who = member(&who)?;
    with_tenancy(backend, move |t| {
        t.revoke(&scope.caller, &id, &who)?;
        Ok(StatusCode::NO_CONTENT)
    })
    .await
}

/// A limit and what is used.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LimitView {
    /// drawers, entities, triples, requests_per_minute or bytes.
    pub name: String,
    /// The limit (null: none).
    pub limit: Option<u64>,
    /// What the workspace uses (null for the request rate).
    pub used: Option<u64>,
}

/// `GET /api/v1/workspaces/{id}/limits`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LimitsView {
    /// The workspace.
    pub workspace: String,
    /// Whether limits are stored for it (else none apply).
    pub stored: bool,
    /// Each limit.
    pub limits: Vec<LimitView>,
}

/// The view of a workspace's limits and use.
pub fn limits_view(workspace: &WorkspaceId, report: &mempalace_engine::tenancy::LimitReport) -> LimitsView {
    LimitsView {
        workspace: workspace.to_string(),
        stored: report.stored,
        limits: report
            .limits
            .rows(&report.usage)
            .into_iter()
            .map(|(name, used, limit)| LimitView { name: name.to_string(), limit, used })
            .collect(),
    }
}

pub(crate) async fn limits(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    Path(id): Path<String>,
) -> ApiResult<Json<LimitsView>> {
    let id = workspace_id(&id)?;
    with_tenancy(backend, move |t| Ok(Json(limits_view(&id, &t.limits(&scope.caller, &id)?)))).await
}

/// Body of `PATCH /api/v1/workspaces/{id}/limits`: the limits to change,
/// each a number or null (no limit).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LimitsPatch {
    /// Active drawers.
    #[serde(default, deserialize_with = "double_option::deserialize")]
    #[schemars(with = "Option<u64>")]
    pub drawers: Option<Option<u64>>,
    /// Entities.
    #[serde(default, deserialize_with = "double_option::deserialize")]
    #[schemars(with = "Option<u64>")]
    pub entities: Option<Option<u64>>,
    /// Triples.
    #[serde(default, deserialize_with = "double_option::deserialize")]
    #[schemars(with = "Option<u64>")]
    pub triples: Option<Option<u64>>,
    /// Requests per minute.
    #[serde(default, deserialize_with = "double_option::deserialize")]
    #[schemars(with = "Option<u64>")]
    pub requests_per_minute: Option<Option<u64>>,
    /// Bytes of drawer text.
    #[serde(default, deserialize_with = "double_option::deserialize")]
    #[schemars(with = "Option<u64>")]
    pub bytes: Option<Option<u64>>,
}

/// A field that may be absent (keep), null (no limit) or a number.
mod double_option {
    use serde::{Deserialize, Deserializer};

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Option<u64>>, D::Error> {
        Option::<u64>::deserialize(deserializer).map(Some)
    }
}

pub(crate) async fn set_limits(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    Path(id): Path<String>,
    payload: Result<Json<LimitsPatch>, JsonRejection>,
) -> ApiResult<Json<LimitsView>> {
    let id = workspace_id(&id)?;
    let patch = body(payload)?;
    with_tenancy(backend, move |t| {
        let mut limits = t.limits(&scope.caller, &id)?.limits;
        for (slot, change) in [
            (&mut limits.drawers, patch.drawers),
            (&mut limits.entities, patch.entities),
            (&mut limits.triples, patch.triples),
            (&mut limits.requests_per_minute, patch.requests_per_minute),
            (&mut limits.bytes, patch.bytes),
        ] {
            if let Some(value) = change {
                *slot = value;
            }
        }
        t.set_limits(&scope.caller, &id, limits)?;
        Ok(Json(limits_view(&id, &t.limits(&scope.caller, &id)?)))
    })
    .await
}

/// Query of `GET /api/v1/audit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AuditQuery {
    /// Only this workspace (owners read theirs; admins everything).
    pub workspace: Option<String>,
    /// Only this actor.
    pub actor: Option<String>,
    /// Only actions starting with this (`drawer.`).
    pub action: Option<String>,
    /// Only entries at or after (a date or RFC 3339 time).
    pub since: Option<String>,
    /// Only entries before this position (paging back).
    pub before: Option<i64>,
    /// At most this many (1–1,000, default 100).
    pub limit: Option<usize>,
}

/// An audit entry.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AuditView {
    /// Position.
    pub seq: i64,
    /// When.
    pub at: String,
    /// The workspace (empty for palace-wide changes).
    pub workspace: String,
    /// Who.
    pub actor: String,
    /// What (`drawer.put`, `grant.set`, …).
    pub action: String,
    /// The ids acted on.
    pub target: String,
    /// How many records.
    pub count: u64,
}

impl From<&AuditEntry> for AuditView {
    fn from(e: &AuditEntry) -> Self {
        Self {
            seq: e.seq,
            at: format_timestamp(&e.at),
            workspace: e.workspace.clone(),
            actor: e.actor.clone(),
            action: e.action.clone(),
            target: e.target.clone(),
            count: e.count,
        }
    }
}

/// `GET /api/v1/audit`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AuditTrail {
    /// Newest first.
    pub entries: Vec<AuditView>,
}

pub(crate) async fn audit(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    q: Result<Query<AuditQuery>, QueryRejection>,
) -> ApiResult<Json<AuditTrail>> {
    let q = query(q)?;
    let filter = AuditFilter {
        workspace: q.workspace.as_deref().map(workspace_id).transpose()?.map(|w| w.to_string()),
        actor: q.actor,
        action: q.action,
        since: q.since.as_deref().map(|s| parse_timestamp(s, "since", DayEdge::Start)).transpose()?,
        before_seq: q.before,
        limit: q.limit.unwrap_or(100).clamp(1, 1_000),
    };
    with_tenancy(backend, move |t| {
        let entries = t.audit_log(&scope.caller, &filter)?;
        Ok(Json(AuditTrail { entries: entries.iter().map(AuditView::from).collect() }))
    })
    .await
}
