//! Tenancy: principals (users and agents), their API tokens, teams,
//! workspace grants with roles, per-workspace limits, the audit trail, and
//! the rules that turn them into what one caller may do (docs/tenancy.md).
//!
//! Pure: tokens are issued from random bytes and a time passed in; the
//! store keeps the records and the engine enforces the decisions.

use std::cmp::Ordering;
use std::fmt;

use sha2::{Digest, Sha256};

use crate::error::ValidationError;
use crate::id::WorkspaceId;
use crate::secret::Secret;
use crate::time::Timestamp;

/// The actor name audit entries give the palace's local operator (the CLI
/// without a token, a loopback server without one, the server's admin token).
pub const LOCAL_ACTOR: &str = "local";

/// Prefix of every API token, so a leaked one is recognisable (and
/// secret scanners can be taught it).
pub const TOKEN_PREFIX: &str = "mpt_";

/// Workspace id prefix of a user's personal workspace.
pub const PERSONAL_PREFIX: &str = "personal.";

fn check_name(what: &'static str, raw: &str) -> Result<String, ValidationError> {
    let ok = !raw.is_empty()
        && raw.len() <= 48
        && raw.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && raw.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-' | '.'));
    if ok {
        Ok(raw.to_string())
    } else {
        Err(ValidationError::BadName {
            what,
            value: raw.to_string(),
            reason: "use 1–48 lowercase ASCII letters, digits, `_`, `-` or `.`, starting with a letter or digit"
                .to_string(),
        })
    }
}

/// The id of a user or an agent.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PrincipalId(String);

impl PrincipalId {
    /// Checks and wraps an id (`local` is reserved for the palace's operator).
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        let id = check_name("user or agent id", raw)?;
        if id == LOCAL_ACTOR {
            return Err(ValidationError::BadName {
                what: "user or agent id",
                value: id,
                reason: "`local` names the palace's own operator; choose another id".to_string(),
            });
        }
        Ok(Self(id))
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The user's personal workspace: their memories across every team,
    /// unioned into searches of the team workspaces they belong to.
    pub fn personal_workspace(&self) -> WorkspaceId {
        WorkspaceId::parse(&format!("{PERSONAL_PREFIX}{}", self.0)).expect("a principal id fits a workspace id")
    }
}

impl fmt::Display for PrincipalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The id of a team.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TeamId(String);

impl TeamId {
    /// Checks and wraps an id.
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        check_name("team id", raw).map(Self)
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TeamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A user (a person) or an agent (a program acting for a team).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrincipalKind {
    /// A person; has a personal workspace.
    User,
    /// A program; acts only in the workspaces it is granted.
    Agent,
}

impl PrincipalKind {
    /// Stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Agent => "agent",
        }
    }

    /// Reads the stored form.
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "user" => Some(Self::User),
            "agent" => Some(Self::Agent),
            _ => None,
        }
    }
}

/// A user or an agent known to the palace.
#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    /// Id.
    pub id: PrincipalId,
    /// User or agent.
    pub kind: PrincipalKind,
    /// A name to show.
    pub display_name: Option<String>,
    /// May manage users, teams, grants and limits everywhere.
    pub admin: bool,
    /// Created.
    pub created_at: Timestamp,
    /// Disabled (its tokens stop working; its memories stay).
    pub disabled_at: Option<Timestamp>,
}

/// A team: its leader writes to the workspaces granted to the team, its
/// members read them (GoClaw's team memory).
#[derive(Debug, Clone, PartialEq)]
pub struct Team {
    /// Id.
    pub id: TeamId,
    /// The member who writes for the team.
    pub leader: PrincipalId,
    /// Members besides the leader, sorted.
    pub members: Vec<PrincipalId>,
    /// Created.
    pub created_at: Timestamp,
}

impl Team {
    /// Whether `who` is the leader or a member.
    pub fn includes(&self, who: &PrincipalId) -> bool {
        &self.leader == who || self.members.contains(who)
    }
}

/// What a member may do in a workspace. Ordered: each role includes the
/// ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Search and read.
    Reader,
    /// Also file, edit and delete.
    Writer,
    /// Also grant roles and set the workspace's limits.
    Owner,
}

impl Role {
    /// Stored form.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Reader => "reader",
            Self::Writer => "writer",
            Self::Owner => "owner",
        }
    }

    /// Reads `reader`, `writer` or `owner`.
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "reader" | "read" => Ok(Self::Reader),
            "writer" | "write" => Ok(Self::Writer),
            "owner" => Ok(Self::Owner),
            _ => Err(ValidationError::BadName {
                what: "role",
                value: raw.to_string(),
                reason: "use reader, writer or owner".to_string(),
            }),
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who a grant is for.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Member {
    /// One user or agent.
    Principal(PrincipalId),
    /// A team: its leader gets the grant's role, its members at most reader.
    Team(TeamId),
}

impl Member {
    /// Stored kind (`principal` or `team`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Principal(_) => "principal",
            Self::Team(_) => "team",
        }
    }

    /// The member's id.
    pub fn id(&self) -> &str {
        match self {
            Self::Principal(id) => id.as_str(),
            Self::Team(id) => id.as_str(),
        }
    }

    /// Reads a member as people write it: a user or agent id, or `team:NAME`.
    pub fn parse(text: &str) -> Result<Self, ValidationError> {
        let text = text.trim();
        match text.strip_prefix("team:") {
            Some(team) => TeamId::parse(team).map(Self::Team),
            None => PrincipalId::parse(text).map(Self::Principal),
        }
    }

    /// Reads the stored pair.
    pub fn from_parts(kind: &str, id: &str) -> Result<Self, ValidationError> {
        match kind {
            "principal" => PrincipalId::parse(id).map(Self::Principal),
            "team" => TeamId::parse(id).map(Self::Team),
            _ => Err(ValidationError::BadName {
                what: "grant member kind",
                value: kind.to_string(),
                reason: "use principal or team".to_string(),
            }),
        }
    }
}

impl fmt::Display for Member {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Principal(id) => write!(f, "{id}"),
            Self::Team(id) => write!(f, "team:{id}"),
        }
    }
}

/// A role given to a member in one workspace.
#[derive(Debug, Clone, PartialEq)]
pub struct Grant {
    /// The workspace.
    pub workspace: WorkspaceId,
    /// Who.
    pub member: Member,
    /// What they may do.
    pub role: Role,
    /// When.
    pub granted_at: Timestamp,
    /// Who granted it (an actor name).
    pub granted_by: String,
}

/// The role `who` holds in `workspace` through `grants` (of that workspace)
/// and `teams` (the teams the grants name): the highest of a direct grant,
/// the role of a team it leads, and reader for a team it is a member of.
/// A user owns their personal workspace.
pub fn effective_role(
    who: &PrincipalId,
    kind: PrincipalKind,
    workspace: &WorkspaceId,
    grants: &[Grant],
    teams: &[Team],
) -> Option<Role> {
    if kind == PrincipalKind::User && *workspace == who.personal_workspace() {
        return Some(Role::Owner);
    }
    grants
        .iter()
        .filter(|grant| grant.workspace == *workspace)
        .filter_map(|grant| match &grant.member {
            Member::Principal(id) => (id == who).then_some(grant.role),
            Member::Team(team) => {
                let team = teams.iter().find(|t| &t.id == team)?;
                if &team.leader == who {
                    Some(grant.role)
                } else if team.members.contains(who) {
                    Some(grant.role.min(Role::Reader))
                } else {
                    None
                }
            }
        })
        .max()
}

/// Who is calling: the palace's local operator (file access, a loopback
/// server without a token, or the server's admin token) or a principal
/// who presented a token.
#[derive(Debug, Clone, PartialEq)]
pub enum Caller {
    /// The palace's operator: every workspace, every role; sees shared
    /// drawers (private ones only through export).
    Local,
    /// A user or agent authenticated by a token.
    Principal(Principal),
}

impl Caller {
    /// The name audit entries and logs use.
    pub fn actor(&self) -> &str {
        match self {
            Self::Local => LOCAL_ACTOR,
            Self::Principal(p) => p.id.as_str(),
        }
    }

    /// The principal, when one is calling.
    pub fn principal(&self) -> Option<&Principal> {
        match self {
            Self::Local => None,
            Self::Principal(p) => Some(p),
        }
    }

    /// Whether the caller may manage users, teams and every workspace.
    pub fn is_admin(&self) -> bool {
        match self {
            Self::Local => true,
            Self::Principal(p) => p.admin,
        }
    }
}

/// The public id of a token (16 hex digits), stored in clear to find the
/// token's record; the secret part is stored only as a hash.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TokenId(String);

impl TokenId {
    /// Checks and wraps a token id.
    pub fn parse(raw: &str) -> Result<Self, ValidationError> {
        if raw.len() == 16 && raw.chars().all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c)) {
            Ok(Self(raw.to_string()))
        } else {
            Err(ValidationError::BadName {
                what: "token id",
                value: raw.to_string(),
                reason: "a token id is 16 hexadecimal digits, as `token list` shows it".to_string(),
            })
        }
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TokenId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A token as stored: never the secret, only its SHA-256.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenRecord {
    /// Public id.
    pub id: TokenId,
    /// Whose token.
    pub principal: PrincipalId,
    /// What it is for ("laptop", "ci").
    pub label: String,
    /// Hex SHA-256 of the whole token text.
    pub hash: String,
    /// Issued.
    pub created_at: Timestamp,
    /// Stops working then.
    pub expires_at: Option<Timestamp>,
    /// Revoked then.
    pub revoked_at: Option<Timestamp>,
    /// Last presented (updated at most once a minute).
    pub last_used_at: Option<Timestamp>,
}

/// Why a presented token was refused. The messages never say whether an
/// unknown token's id exists.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenRejection {
    /// Not in the `mpt_<id>_<secret>` shape.
    #[error("the token is not a mempalace token (they look like mpt_…); copy it again from `mempalace token create`")]
    Malformed,
    /// No such token, or the secret does not match.
    #[error("the token is not valid; create a new one with `mempalace token create`")]
    Invalid,
    /// Revoked.
    #[error("the token {0} was revoked; create a new one with `mempalace token create`")]
    Revoked(String),
    /// Past its expiry.
    #[error("the token {0} expired; create a new one with `mempalace token create`")]
    Expired(String),
    /// Its principal is disabled.
    #[error("the user or agent {0} is disabled; an admin can enable it with `mempalace user enable {0}`")]
    Disabled(String),
}

/// Issues a token for `principal` from 32 random bytes: the record to store
/// and the token text, shown once.
pub fn issue_token(
    principal: &PrincipalId,
    label: &str,
    random: [u8; 32],
    now: Timestamp,
    expires_at: Option<Timestamp>,
) -> (TokenRecord, Secret) {
    let id = TokenId(hex::encode(&random[..8]));
    let text = format!("{TOKEN_PREFIX}{}_{}", id.as_str(), hex::encode(&random[8..]));
    let record = TokenRecord {
        id,
        principal: principal.clone(),
        label: label.trim().to_string(),
        hash: hash_token(&text),
        created_at: now,
        expires_at,
        revoked_at: None,
        last_used_at: None,
    };
    (record, Secret::new(text))
}

/// The hex SHA-256 a token is stored as.
pub fn hash_token(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

/// The id part of a presented token.
pub fn token_id(text: &str) -> Result<TokenId, TokenRejection> {
    let rest = text.trim().strip_prefix(TOKEN_PREFIX).ok_or(TokenRejection::Malformed)?;
    let (id, secret) = rest.split_once('_').ok_or(TokenRejection::Malformed)?;
    if secret.len() != 48 || !secret.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(TokenRejection::Malformed);
    }
    TokenId::parse(id).map_err(|_| TokenRejection::Malformed)
}

impl TokenRecord {
    /// Checks a presented token against this record at `now`: the secret
    /// (compared in constant time), revocation and expiry.
    pub fn verify(&self, presented: &str, now: Timestamp) -> Result<(), TokenRejection> {
        let presented = hash_token(presented.trim());
        let equal = presented.len() == self.hash.len()
            && presented.bytes().zip(self.hash.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0;
        if !equal {
            return Err(TokenRejection::Invalid);
        }
        if self.revoked_at.is_some() {
            return Err(TokenRejection::Revoked(self.id.to_string()));
        }
        if self.expires_at.is_some_and(|at| at <= now) {
            return Err(TokenRejection::Expired(self.id.to_string()));
        }
        Ok(())
    }

    /// Whether presenting it now would work (not revoked, not expired).
    pub fn active(&self, now: Timestamp) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|at| at > now)
    }
}

/// Per-workspace limits; `None` is unlimited.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Active drawers.
    pub drawers: Option<u64>,
    /// Knowledge-graph entities.
    pub entities: Option<u64>,
    /// Knowledge-graph triples.
    pub triples: Option<u64>,
    /// Requests per minute, across every surface of one server process.
    pub requests_per_minute: Option<u64>,
    /// Bytes of drawer text (UTF-8) in active drawers.
    pub bytes: Option<u64>,
}

impl Limits {
    /// Seed 0's defaults for a shared workspace: 10,000 drawers, 5,000
    /// entities, 50,000 triples, and 600 requests a minute.
    pub const SHARED_DEFAULT: Limits = Limits {
        drawers: Some(10_000),
        entities: Some(5_000),
        triples: Some(50_000),
        requests_per_minute: Some(600),
        bytes: None,
    };

    /// The limits as (name, value) pairs, in display order.
    pub fn entries(&self) -> [(&'static str, Option<u64>); 5] {
        [
            ("drawers", self.drawers),
            ("entities", self.entities),
            ("triples", self.triples),
            ("requests_per_minute", self.requests_per_minute),
            ("bytes", self.bytes),
        ]
    }

    /// Each limit with what `usage` holds against it: (name, used, limit);
    /// the request rate has no stored use.
    pub fn rows(&self, usage: &Usage) -> [(&'static str, Option<u64>, Option<u64>); 5] {
        let used = [Some(usage.drawers), Some(usage.entities), Some(usage.triples), None, Some(usage.bytes)];
        let entries = self.entries();
        std::array::from_fn(|i| (entries[i].0, used[i], entries[i].1))
    }

    /// Sets one limit by name (`none` or `unlimited` removes it).
    pub fn set(&mut self, name: &str, value: &str) -> Result<(), ValidationError> {
        let value = match value.trim().to_ascii_lowercase().as_str() {
            "none" | "unlimited" | "off" => None,
            text => Some(text.replace('_', "").parse::<u64>().map_err(|_| ValidationError::BadName {
                what: "limit",
                value: value.to_string(),
                reason: "use a whole number, or `none` for no limit".to_string(),
            })?),
        };
        let slot = match name {
            "drawers" => &mut self.drawers,
            "entities" => &mut self.entities,
            "triples" => &mut self.triples,
            "requests_per_minute" | "requests" | "rpm" => &mut self.requests_per_minute,
            "bytes" => &mut self.bytes,
            _ => {
                return Err(ValidationError::BadName {
                    what: "limit name",
                    value: name.to_string(),
                    reason: "use drawers, entities, triples, requests_per_minute or bytes".to_string(),
                });
            }
        };
        *slot = value;
        Ok(())
    }
}

/// What a workspace holds, against its limits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Active drawers.
    pub drawers: u64,
    /// Entities.
    pub entities: u64,
    /// Triples.
    pub triples: u64,
    /// Bytes of active drawers' text.
    pub bytes: u64,
}

/// A write refused because it would pass a limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "workspace {workspace} would hold {wanted} {what}, over its limit of {limit}; delete some, or ask a workspace owner to raise it (`mempalace workspace limits {workspace} --set {what}=N`)"
)]
pub struct LimitExceeded {
    /// The workspace.
    pub workspace: String,
    /// Which limit.
    pub what: &'static str,
    /// The limit.
    pub limit: u64,
    /// What the write would make it.
    pub wanted: u64,
}

impl Limits {
    /// Refuses adding `add` to `usage` when a stored limit would be passed.
    pub fn admit(&self, workspace: &WorkspaceId, usage: &Usage, add: &Usage) -> Result<(), LimitExceeded> {
        for (what, limit, used, more) in [
            ("drawers", self.drawers, usage.drawers, add.drawers),
            ("entities", self.entities, usage.entities, add.entities),
            ("triples", self.triples, usage.triples, add.triples),
            ("bytes", self.bytes, usage.bytes, add.bytes),
        ] {
            if let Some(limit) = limit
                && more > 0
                && used.saturating_add(more) > limit
            {
                return Err(LimitExceeded {
                    workspace: workspace.to_string(),
                    what,
                    limit,
                    wanted: used.saturating_add(more),
                });
            }
        }
        Ok(())
    }
}

/// A fixed one-minute window of requests for one workspace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RateWindow {
    minute: i64,
    count: u64,
}

impl RateWindow {
    /// Counts a request at `unix_seconds` under `per_minute`; refused with
    /// the seconds until the next window when the window is full.
    pub fn admit(&mut self, unix_seconds: i64, per_minute: u64) -> Result<(), u64> {
        let minute = unix_seconds.div_euclid(60);
        if minute != self.minute {
            *self = Self { minute, count: 0 };
        }
        if self.count >= per_minute {
            return Err((60 - unix_seconds.rem_euclid(60)) as u64);
        }
        self.count += 1;
        Ok(())
    }
}

/// One write or delete, as the audit trail keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditEntry {
    /// Position in the trail (assigned by the store; 0 before).
    pub seq: i64,
    /// When.
    pub at: Timestamp,
    /// The workspace written to (empty for palace-wide actions such as
    /// creating a user).
    pub workspace: String,
    /// Who (`local` or a principal id).
    pub actor: String,
    /// What, as `object.verb` (`drawer.add`, `drawer.delete`, `grant.set`…).
    pub action: String,
    /// The ids acted on (at most a few; `count` says how many in all).
    pub target: String,
    /// How many records the action touched.
    pub count: u64,
}

/// Which audit entries to list, newest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditFilter {
    /// Only this workspace.
    pub workspace: Option<String>,
    /// Only this actor.
    pub actor: Option<String>,
    /// Only actions starting with this (`drawer.`).
    pub action: Option<String>,
    /// Only entries at or after.
    pub since: Option<Timestamp>,
    /// Only entries before this position (paging backwards).
    pub before_seq: Option<i64>,
    /// At most this many.
    pub limit: usize,
}

impl AuditFilter {
    /// Whether `entry` passes the filter (for stores that filter in code).
    pub fn matches(&self, entry: &AuditEntry) -> bool {
        self.workspace.as_ref().is_none_or(|w| *w == entry.workspace)
            && self.actor.as_ref().is_none_or(|a| *a == entry.actor)
            && self.action.as_ref().is_none_or(|a| entry.action.starts_with(a.as_str()))
            && self.since.is_none_or(|s| entry.at.cmp(&s) != Ordering::Less)
            && self.before_seq.is_none_or(|b| entry.seq < b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        crate::time::parse_timestamp(text, "test time", crate::time::DayEdge::Start).unwrap()
    }

    fn id(raw: &str) -> PrincipalId {
        PrincipalId::parse(raw).unwrap()
    }

    #[test]
    fn ids_follow_one_rule_and_local_is_reserved() {
        assert!(PrincipalId::parse("alice").is_ok());
        assert!(PrincipalId::parse("ci-bot.2").is_ok());
        for bad in ["", "Alice", "-x", "a b", "local", &"x".repeat(49)] {
            assert!(PrincipalId::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(id("alice").personal_workspace().as_str(), "personal.alice");
        assert!(TeamId::parse("platform").is_ok());
    }

    #[test]
    fn team_leaders_get_the_grant_and_members_read() {
        let ws = WorkspaceId::parse("team-ws").unwrap();
        let now = at("2026-01-01T00:00:00Z");
        let team =
            Team { id: TeamId::parse("eng").unwrap(), leader: id("lead"), members: vec![id("bob")], created_at: now };
        let grant =
            |member, role| Grant { workspace: ws.clone(), member, role, granted_at: now, granted_by: "local".into() };
        let grants = vec![
            grant(Member::Team(team.id.clone()), Role::Writer),
            grant(Member::Principal(id("carol")), Role::Reader),
        ];
        let role = |who: &str| effective_role(&id(who), PrincipalKind::User, &ws, &grants, std::slice::from_ref(&team));
        assert_eq!(role("lead"), Some(Role::Writer));
        assert_eq!(role("bob"), Some(Role::Reader));
        assert_eq!(role("carol"), Some(Role::Reader));
        assert_eq!(role("mallory"), None);
        // A direct grant and a team membership: the higher wins.
        let mut more = grants.clone();
        more.push(grant(Member::Principal(id("bob")), Role::Owner));
        assert_eq!(
            effective_role(&id("bob"), PrincipalKind::User, &ws, &more, std::slice::from_ref(&team)),
            Some(Role::Owner)
        );
        // Grants of another workspace do not count.
        let other = WorkspaceId::parse("other").unwrap();
        assert_eq!(effective_role(&id("lead"), PrincipalKind::User, &other, &grants, &[team]), None);
        // A user owns their personal workspace; an agent has none.
        let personal = id("dave").personal_workspace();
        assert_eq!(effective_role(&id("dave"), PrincipalKind::User, &personal, &[], &[]), Some(Role::Owner));
        assert_eq!(effective_role(&id("dave"), PrincipalKind::Agent, &personal, &[], &[]), None);
        assert_eq!(effective_role(&id("erin"), PrincipalKind::User, &personal, &[], &[]), None);
    }

    #[test]
    fn a_token_verifies_only_with_its_secret_until_revoked_or_expired() {
        let now = at("2026-01-01T00:00:00Z");
        let (record, secret) = issue_token(&id("alice"), " laptop ", [7u8; 32], now, Some(at("2026-02-01T00:00:00Z")));
        assert!(secret.expose().starts_with("mpt_0707070707070707_"));
        assert_eq!(record.label, "laptop");
        assert_ne!(record.hash, secret.expose(), "the secret is not stored");
        assert_eq!(token_id(secret.expose()).unwrap(), record.id);
        assert_eq!(record.verify(secret.expose(), now), Ok(()));
        // Another secret under the same id.
        let forged = format!("mpt_{}_{}", record.id, "ab".repeat(24));
        assert_eq!(record.verify(&forged, now), Err(TokenRejection::Invalid));
        assert_eq!(
            record.verify(secret.expose(), at("2026-02-01T00:00:00Z")),
            Err(TokenRejection::Expired(record.id.to_string()))
        );
        let revoked = TokenRecord { revoked_at: Some(now), ..record.clone() };
        assert_eq!(revoked.verify(secret.expose(), now), Err(TokenRejection::Revoked(record.id.to_string())));
        assert!(!revoked.active(now));
        for bad in ["", "Bearer x", "mpt_", "mpt_zz_", "mpt_0707070707070707_short", "sk-0707"] {
            assert_eq!(token_id(bad), Err(TokenRejection::Malformed), "{bad:?}");
        }
    }

    #[test]
    fn limits_refuse_only_what_would_pass_them() {
        let ws = WorkspaceId::parse("w").unwrap();
        let limits = Limits { drawers: Some(10), bytes: Some(100), ..Limits::default() };
        let usage = Usage { drawers: 9, bytes: 50, ..Usage::default() };
        assert!(limits.admit(&ws, &usage, &Usage { drawers: 1, bytes: 50, ..Usage::default() }).is_ok());
        let error = limits.admit(&ws, &usage, &Usage { drawers: 2, ..Usage::default() }).unwrap_err();
        assert_eq!((error.what, error.limit, error.wanted), ("drawers", 10, 11));
        assert!(error.to_string().contains("mempalace workspace limits w --set drawers=N"));
        assert_eq!(limits.admit(&ws, &usage, &Usage { bytes: 51, ..Usage::default() }).unwrap_err().what, "bytes");
        // A workspace already over a lowered limit can still delete and edit.
        let over = Usage { drawers: 20, ..Usage::default() };
        assert!(limits.admit(&ws, &over, &Usage::default()).is_ok());
        let rows = limits.rows(&usage);
        assert_eq!(rows[0], ("drawers", Some(9), Some(10)));
        assert_eq!(rows[3], ("requests_per_minute", None, None));
        assert_eq!(rows[4], ("bytes", Some(50), Some(100)));
        let mut set = Limits::default();
        set.set("drawers", "1_000").unwrap();
        set.set("rpm", "60").unwrap();
        assert_eq!((set.drawers, set.requests_per_minute), (Some(1000), Some(60)));
        set.set("drawers", "none").unwrap();
        assert_eq!(set.drawers, None);
        assert!(set.set("widgets", "1").is_err());
        assert!(set.set("drawers", "-1").is_err());
    }

    #[test]
    fn the_rate_window_admits_per_minute_and_resets() {
        let mut window = RateWindow::default();
        let start = 1_800_000_000; // a whole minute (divisible by 60)
        assert!(window.admit(start, 2).is_ok());
        assert!(window.admit(start + 10, 2).is_ok());
        assert_eq!(window.admit(start + 15, 2), Err(45));
        assert!(window.admit(start + 60, 2).is_ok());
    }

    #[test]
    fn roles_are_ordered() {
        assert!(Role::Owner > Role::Writer && Role::Writer > Role::Reader);
        assert_eq!(Role::parse("Writer").unwrap(), Role::Writer);
        assert!(Role::parse("admin").is_err());
        assert_eq!(Member::from_parts("team", "eng").unwrap().to_string(), "team:eng");
        assert_eq!(Member::parse(" team:eng ").unwrap(), Member::Team(TeamId::parse("eng").unwrap()));
        assert_eq!(Member::parse("alice").unwrap(), Member::Principal(id("alice")));
        assert!(Member::parse("team:").is_err() && Member::parse("Team:x").is_err());
    }
}
