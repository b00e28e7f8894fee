//! `user`, `token`, `team` and `workspace`: the directory of a team palace
//! (docs/tenancy.md). Each command acts as this run's caller (the token of
//! `$MEMPALACE_TOKEN` / `--token-file`, else the local operator); the
//! engine's `Tenancy` decides what that caller may do.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use clap::Subcommand;
use mempalace_core::WorkspaceId;
use mempalace_core::tenancy::{AuditFilter, Caller, Limits, Member, PrincipalId, PrincipalKind, Role, TeamId, TokenId};
use mempalace_core::time::{DayEdge, format_timestamp, parse_timestamp};
use mempalace_engine::tenancy::Tenancy;
use mempalace_web::directory as views;
use serde_json::json;

use super::{Access, UserError, open_unscoped};
use crate::output;
use crate::settings::Settings;

/// `user …`.
#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Add a user (a person; gets the personal workspace personal.NAME) or, with --agent, an agent.
    /// The first user of a palace makes it a team palace: from then on writes are audited and
    /// every token's caller is held to its roles.
    Add {
        /// Id: 1–48 lowercase letters, digits, `_`, `-`, `.`.
        name: String,
        /// An agent (a program) rather than a person.
        #[arg(long)]
        agent: bool,
        /// May manage users, teams, grants and limits everywhere.
        #[arg(long)]
        admin: bool,
        /// A name to show.
        #[arg(long, value_name = "TEXT")]
        display_name: Option<String>,
    },
    /// List users and agents.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Disable a user or agent: its tokens stop working at once; its memories stay.
    Disable {
        /// Id.
        name: String,
    },
    /// Enable a disabled user or agent again.
    Enable {
        /// Id.
        name: String,
    },
    /// Who this run acts as, and its workspaces and roles.
    Whoami {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `token …`.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create an API token; it is printed once (or written to --out) and stored only as a hash.
    Create {
        /// Whose token (default: the caller's own; admins may name anyone).
        #[arg(long, value_name = "NAME")]
        user: Option<String>,
        /// What it is for ("laptop", "ci").
        #[arg(long, default_value = "")]
        label: String,
        /// When it stops working: a duration (90d, 12h, 30m) or a date (2027-01-31).
        #[arg(long, value_name = "WHEN")]
        expires: Option<String>,
        /// Write the token to this file (mode 0600) instead of printing it.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// List tokens (never their secrets).
    List {
        /// Whose tokens (default: your own; admins: everyone's).
        #[arg(long, value_name = "NAME")]
        user: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token at once, by the id `token list` shows.
    Revoke {
        /// Token id (16 hex digits).
        id: String,
    },
}

/// `team …`.
#[derive(Debug, Subcommand)]
pub enum TeamCommand {
    /// Create a team: in the workspaces granted to it, its leader gets the grant's role and its
    /// members read.
    Create {
        /// Team id.
        team: String,
        /// The member who writes for the team.
        #[arg(long, value_name = "NAME")]
        leader: String,
        /// Members (repeatable).
        #[arg(long = "member", value_name = "NAME")]
        members: Vec<String>,
    },
    /// List teams.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Add a member.
    Add {
        /// Team id.
        team: String,
        /// User or agent id.
        name: String,
    },
    /// Remove a member.
    Remove {
        /// Team id.
        team: String,
        /// User or agent id.
        name: String,
    },
    /// Make a member the leader (the old leader stays a member).
    Leader {
        /// Team id.
        team: String,
        /// User or agent id.
        name: String,
    },
    /// Delete a team and its grants.
    Delete {
        /// Team id.
        team: String,
    },
}

/// `workspace …`.
#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// Create a shared workspace with the default limits (10,000 drawers, 5,000 entities, 50,000
    /// facts, 600 requests a minute); a user who creates one owns it.
    Create {
        /// Workspace id.
        workspace: String,
        /// No limits at all.
        #[arg(long)]
        unlimited: bool,
    },
    /// Workspaces this caller may use, with its role in each.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Give a user, agent or team (team:NAME) a role: reader, writer or owner.
    Grant {
        /// Workspace id.
        workspace: String,
        /// A user or agent id, or team:NAME.
        member: String,
        /// reader, writer or owner.
        role: String,
    },
    /// Take a member's role away.
    Revoke {
        /// Workspace id.
        workspace: String,
        /// A user or agent id, or team:NAME.
        member: String,
    },
    /// List a workspace's members and their roles.
    Members {
        /// Workspace id.
        workspace: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a workspace's limits and use, or change them with --set NAME=VALUE.
    Limits {
        /// Workspace id.
        workspace: String,
        /// drawers, entities, triples, requests_per_minute or bytes = a number or `none` (repeatable).
        #[arg(long = "set", value_name = "NAME=VALUE")]
        set: Vec<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The audit trail of writes and deletes, newest first.
    Log {
        /// Only this workspace (owners see theirs; admins see everything).
        workspace: Option<String>,
        /// Only this actor (`local` or a user or agent id).
        #[arg(long)]
        actor: Option<String>,
        /// Only actions starting with this (drawer., drawer.delete, grant.).
        #[arg(long)]
        action: Option<String>,
        /// Only entries at or after (a date or RFC 3339 time).
        #[arg(long)]
        since: Option<String>,
        /// Only entries before this position (to page back).
        #[arg(long, value_name = "SEQ")]
        before: Option<i64>,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Print JSON lines.
        #[arg(long)]
        json: bool,
    },
}

/// The directory and this run's caller.
fn open(settings: &Settings, access: Access) -> Result<(Tenancy, Caller)> {
    let tenancy = Tenancy::new(open_unscoped(settings, access)?);
    let caller = super::caller(settings, &tenancy)?;
    Ok((tenancy, caller))
}

fn principal_id(text: &str) -> Result<PrincipalId> {
    Ok(PrincipalId::parse(text.trim())?)
}

fn workspace_id(text: &str) -> Result<WorkspaceId> {
    Ok(WorkspaceId::parse(text.trim())?)
}

/// `alice` or `team:eng`.
fn member(text: &str) -> Result<Member> {
    Ok(Member::parse(text)?)
}

fn when(text: Option<&String>) -> String {
    text.cloned().unwrap_or_else(|| "-".into())
}

fn ts(at: Option<mempalace_core::Timestamp>) -> Option<String> {
    at.as_ref().map(format_timestamp)
}

/// A duration (`90d`, `12h`, `30m`, `2w`) from `now`, or a date or time.
fn expiry(text: &str, now: mempalace_core::Timestamp) -> Result<mempalace_core::Timestamp> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    if !number.is_empty()
        && let Ok(n) = number.parse::<i64>()
    {
        let delta = match unit {
            "m" | "min" => chrono::TimeDelta::try_minutes(n),
            "h" => chrono::TimeDelta::try_hours(n),
            "d" => chrono::TimeDelta::try_days(n),
            "w" => chrono::TimeDelta::try_weeks(n),
            _ => None,
        };
        if let Some(delta) = delta {
            return Ok(now + delta);
        }
    }
    parse_timestamp(text, "--expires", DayEdge::End).map_err(|_| {
        UserError(format!("--expires {text:?}: give a duration such as 90d, 12h or 30m, or a date such as 2027-01-31"))
            .into()
    })
}

/// Writes the token where only its owner can read it.
fn write_secret(path: &Path, text: &str) -> Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(path).with_context(|| format!("cannot write {}", path.display()))?;
    writeln!(file, "{text}").with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// `user …`.
pub fn user(settings: &Settings, command: UserCommand) -> Result<()> {
    match command {
        UserCommand::Add { name, agent, admin, display_name } => {
            let (tenancy, caller) = open(settings, Access::Create)?;
            let kind = if agent { PrincipalKind::Agent } else { PrincipalKind::User };
            let first = !tenancy.is_shared()?;
            let p = tenancy.add_principal(&caller, principal_id(&name)?, kind, display_name, admin)?;
            output::line(format!(
                "added {} {}{}{}",
                kind.as_str(),
                p.id,
                if admin { " (admin)" } else { "" },
                if kind == PrincipalKind::User {
                    format!("; personal workspace {}", p.id.personal_workspace())
                } else {
                    String::new()
                }
            ))?;
            if first {
                output::note("this palace now has users: writes are audited, and tokens act within their roles");
            }
            output::note(format!("create a token for it with `mempalace token create --user {}`", p.id));
        }
        UserCommand::List { json } => {
            let (tenancy, caller) = open(settings, Access::Read)?;
            let principals = tenancy.principals(&caller)?;
            if json {
                output::json(&views::Users { users: principals.iter().map(views::UserView::from).collect() })?;
            } else if principals.is_empty() {
                output::note("no users: this is a single-user palace (`mempalace user add NAME` starts a team)");
            } else {
                for p in principals {
                    output::line(format!(
                        "{:<24} {:<5} {}{}{}",
                        p.id,
                        p.kind.as_str(),
                        p.display_name.as_deref().unwrap_or(""),
                        if p.admin { " [admin]" } else { "" },
                        if p.disabled_at.is_some() { " [disabled]" } else { "" }
                    ))?;
                }
            }
        }
        UserCommand::Disable { name } => {
            let (tenancy, caller) = open(settings, Access::Update)?;
            tenancy.set_disabled(&caller, &principal_id(&name)?, true)?;
            output::line(format!("disabled {name}: its tokens no longer work"))?;
        }
        UserCommand::Enable { name } => {
            let (tenancy, caller) = open(settings, Access::Update)?;
            tenancy.set_disabled(&caller, &principal_id(&name)?, false)?;
            output::line(format!("enabled {name}"))?;
        }
        UserCommand::Whoami { json } => {
            let (tenancy, caller) = open(settings, Access::Read)?;
            let who = tenancy.whoami(&caller)?;
            if json {
                output::json(&views::WhoAmI::from(&who))?;
            } else {
                match &who.workspaces {
                    None => output::line("local (the palace's operator: every workspace)")?,
                    Some(list) => {
                        output::line(format!("{}{}", caller.actor(), if caller.is_admin() { " (admin)" } else { "" }))?;
                        for (workspace, role) in list {
                            output::line(format!("  {workspace:<32} {role}"))?;
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// `token …`.
pub fn token(settings: &Settings, command: TokenCommand) -> Result<()> {
    match command {
        TokenCommand::Create { user, label, expires, out } => {
            let (tenancy, caller) = open(settings, Access::Update)?;
            let whose = match (user, caller.principal()) {
                (Some(name), _) => principal_id(&name)?,
                (None, Some(p)) => p.id.clone(),
                (None, None) => {
                    return Err(UserError("say whose token: --user NAME".into()).into());
                }
            };
            let now = chrono::Utc::now();
            let expires_at = expires.as_deref().map(|text| expiry(text, now)).transpose()?;
            let (record, secret) = tenancy.issue_token(&caller, &whose, &label, expires_at)?;
            let until = ts(record.expires_at).map(|t| format!(", expires {t}")).unwrap_or_default();
            match out {
                Some(path) => {
                    write_secret(&path, secret.expose())?;
                    output::line(format!("token {} for {whose} written to {}{until}", record.id, path.display()))?;
                }
                None => {
                    output::line(secret.expose())?;
                    output::note(format!(
                        "token {} for {whose}{until}: shown once, stored only as a hash; use it as \
                         MEMPALACE_TOKEN or `Authorization: Bearer …`",
                        record.id
                    ));
                }
            }
        }
        TokenCommand::List { user, json } => {
            let (tenancy, caller) = open(settings, Access::Read)?;
            let user = user.as_deref().map(principal_id).transpose()?;
            let tokens = tenancy.tokens(&caller, user.as_ref())?;
            let now = chrono::Utc::now();
            if json {
                output::json(&views::Tokens {
                    tokens: tokens.iter().map(|t| views::TokenView::new(t, now)).collect(),
                })?;
            } else if tokens.is_empty() {
                output::note("no tokens");
            } else {
                for t in tokens {
                    let state = if t.revoked_at.is_some() {
                        "revoked"
                    } else if t.active(now) {
                        "active"
                    } else {
                        "expired"
                    };
                    output::line(format!(
                        "{}  {:<16} {:<8} {:<12} created {}  expires {}  last used {}",
                        t.id,
                        t.principal,
                        state,
                        t.label,
                        format_timestamp(&t.created_at),
                        when(ts(t.expires_at).as_ref()),
                        when(ts(t.last_used_at).as_ref())
                    ))?;
                }
            }
        }
        TokenCommand::Revoke { id } => {
            let (tenancy, caller) = open(settings, Access::Update)?;
            let id = TokenId::parse(id.trim())?;
            tenancy.revoke_token(&caller, &id)?;
            output::line(format!("revoked token {id}"))?;
        }
    }
    Ok(())
}

/// `team …`.
pub fn team(settings: &Settings, command: TeamCommand) -> Result<()> {
    let access = if matches!(command, TeamCommand::List { .. }) { Access::Read } else { Access::Update };
    let (tenancy, caller) = open(settings, access)?;
    match command {
        TeamCommand::Create { team, leader, members } => {
            let members = members.iter().map(|m| principal_id(m)).collect::<Result<Vec<_>>>()?;
            let team = tenancy.create_team(&caller, TeamId::parse(team.trim())?, principal_id(&leader)?, members)?;
            output::line(format!("created team {} (leader {}, {} members)", team.id, team.leader, team.members.len()))?;
            output::note(format!(
                "grant it a workspace with `mempalace workspace grant WORKSPACE team:{} writer`",
                team.id
            ));
        }
        TeamCommand::List { json } => {
            let teams = tenancy.teams(&caller)?;
            if json {
                output::json(&views::Teams { teams: teams.iter().map(views::TeamView::from).collect() })?;
            } else if teams.is_empty() {
                output::note("no teams");
            } else {
                for t in teams {
                    let members: Vec<&str> = t.members.iter().map(PrincipalId::as_str).collect();
                    output::line(format!("{:<20} leader {:<16} members {}", t.id, t.leader, members.join(", ")))?;
                }
            }
        }
        TeamCommand::Add { team, name } => {
            let changed =
                tenancy.set_team_member(&caller, &TeamId::parse(team.trim())?, &principal_id(&name)?, true)?;
            output::line(if changed {
                format!("{name} joined {team}")
            } else {
                format!("{name} was already in {team}")
            })?;
        }
        TeamCommand::Remove { team, name } => {
            let changed =
                tenancy.set_team_member(&caller, &TeamId::parse(team.trim())?, &principal_id(&name)?, false)?;
            output::line(if changed { format!("{name} left {team}") } else { format!("{name} was not in {team}") })?;
        }
        TeamCommand::Leader { team, name } => {
            tenancy.set_team_leader(&caller, &TeamId::parse(team.trim())?, &principal_id(&name)?)?;
            output::line(format!("{name} now leads {team}"))?;
        }
        TeamCommand::Delete { team } => {
            tenancy.delete_team(&caller, &TeamId::parse(team.trim())?)?;
            output::line(format!("deleted team {team} and its grants"))?;
        }
    }
    Ok(())
}

fn limit_text(value: Option<u64>) -> String {
    value.map_or_else(|| "unlimited".to_string(), |v| v.to_string())
}

/// `workspace …`.
pub fn workspace(settings: &Settings, command: WorkspaceCommand) -> Result<()> {
    let access = match &command {
        WorkspaceCommand::Create { .. } => Access::Create,
        WorkspaceCommand::Grant { .. } | WorkspaceCommand::Revoke { .. } => Access::Update,
        WorkspaceCommand::Limits { set, .. } if !set.is_empty() => Access::Update,
        _ => Access::Read,
    };
    let (tenancy, caller) = open(settings, access)?;
    match command {
        WorkspaceCommand::Create { workspace, unlimited } => {
            let workspace = workspace_id(&workspace)?;
            let limits = if unlimited { Limits::default() } else { Limits::SHARED_DEFAULT };
            tenancy.create_workspace(&caller, &workspace, limits)?;
            output::line(format!("created workspace {workspace}"))?;
            output::note(format!(
                "give people a role with `mempalace workspace grant {workspace} NAME writer`; use it with --workspace {workspace}"
            ));
        }
        WorkspaceCommand::List { json } => {
            let who = tenancy.whoami(&caller)?;
            let list: Vec<(String, Option<Role>)> = match who.workspaces {
                Some(list) => list.into_iter().map(|(w, r)| (w.to_string(), Some(r))).collect(),
                None => open_unscoped(settings, Access::Read)?
                    .store()
                    .workspaces()?
                    .into_iter()
                    .map(|w| (w.to_string(), Some(Role::Owner)))
                    .collect(),
            };
            if json {
                let list: Vec<_> =
                    list.iter().map(|(w, r)| json!({"workspace": w, "role": r.map(Role::as_str)})).collect();
                output::json(&json!({ "workspaces": list }))?;
            } else {
                for (workspace, role) in list {
                    output::line(format!("{workspace:<32} {}", role.map_or("-", Role::as_str)))?;
                }
            }
        }
        WorkspaceCommand::Grant { workspace, member: who, role } => {
            let workspace = workspace_id(&workspace)?;
            let grant = tenancy.grant(&caller, &workspace, member(&who)?, Role::parse(&role)?)?;
            output::line(format!("{} is now {} in {workspace}", grant.member, grant.role))?;
        }
        WorkspaceCommand::Revoke { workspace, member: who } => {
            let workspace = workspace_id(&workspace)?;
            tenancy.revoke(&caller, &workspace, &member(&who)?)?;
            output::line(format!("{who} has no role in {workspace} now"))?;
        }
        WorkspaceCommand::Members { workspace, json } => {
            let workspace = workspace_id(&workspace)?;
            let grants = tenancy.members(&caller, &workspace)?;
            if json {
                output::json(&views::Members {
                    workspace: workspace.to_string(),
                    members: grants.iter().map(views::MemberView::from).collect(),
                })?;
            } else if grants.is_empty() {
                output::note(format!("nobody has a role in {workspace} (the local operator and admins always do)"));
            } else {
                for g in grants {
                    output::line(format!(
                        "{:<24} {:<7} granted {} by {}",
                        g.member,
                        g.role,
                        format_timestamp(&g.granted_at),
                        g.granted_by
                    ))?;
                }
            }
        }
        WorkspaceCommand::Limits { workspace, set, json } => {
            let workspace = workspace_id(&workspace)?;
            if !set.is_empty() {
                let mut limits = tenancy.limits(&caller, &workspace)?.limits;
                for pair in &set {
                    let (name, value) = pair
                        .split_once('=')
                        .ok_or_else(|| UserError(format!("--set {pair:?}: use NAME=VALUE, e.g. drawers=20000")))?;
                    limits.set(name.trim(), value)?;
                }
                tenancy.set_limits(&caller, &workspace, limits)?;
            }
            let report = tenancy.limits(&caller, &workspace)?;
            if json {
                output::json(&views::limits_view(&workspace, &report))?;
            } else {
                for (name, used, limit) in report.limits.rows(&report.usage) {
                    let used = used.map_or_else(|| "-".to_string(), |u| u.to_string());
                    output::line(format!("{name:<20} {used:>12} of {}", limit_text(limit)))?;
                }
            }
        }
        WorkspaceCommand::Log { workspace, actor, action, since, before, limit, json } => {
            let filter = AuditFilter {
                workspace: workspace.map(|w| workspace_id(&w).map(|w| w.to_string())).transpose()?,
                actor,
                action,
                since: since.as_deref().map(|s| parse_timestamp(s, "--since", DayEdge::Start)).transpose()?,
                before_seq: before,
                limit: limit.clamp(1, 10_000),
            };
            let entries = tenancy.audit_log(&caller, &filter)?;
            for e in &entries {
                if json {
                    output::json_line(&views::AuditView::from(e))?;
                } else {
                    output::line(format!(
                        "{:>6}  {}  {:<16} {:<14} {:<20} {}{}",
                        e.seq,
                        format_timestamp(&e.at),
                        if e.workspace.is_empty() { "-" } else { &e.workspace },
                        e.actor,
                        e.action,
                        e.target,
                        if e.count > 1 { format!(" ({} records)", e.count) } else { String::new() }
                    ))?;
                }
            }
            if entries.is_empty() && !json {
                output::note(
                    "no audit entries (a single-user palace keeps none; the first `user add` starts the trail)",
                );
            }
        }
    }
    Ok(())
}
