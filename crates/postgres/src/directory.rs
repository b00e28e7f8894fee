//! The directory (schema version 6): principals, tokens, teams, grants,
//! limits, usage and the audit trail (docs/tenancy.md) — the SQLite
//! store's semantics.
//!
//! Changes to one team lock its row first (a leader change exclusively, a
//! member change shared), so they take turns as under SQLite's single
//! writer. Rows are turned back into core values through core's parsers,
//! so a row edited by hand into something the rules refuse is reported as
//! invalid data. Not here: who may do what (core's `tenancy`, the engine's
//! guard).

use deadpool_postgres::Transaction;
use mempalace_core::tenancy::{
    AuditEntry, AuditFilter, Grant, Limits, Member, Principal, PrincipalId, PrincipalKind, Role, Team, TeamId, TokenId,
    TokenRecord, Usage,
};
use mempalace_core::{Timestamp, WorkspaceId};
use mempalace_store::{StoreError, StoreResult};
use tokio_postgres::Row;

use crate::error::Context;
use crate::row::{Param, limit, refs};

fn invalid(what: &str, error: impl std::fmt::Display) -> StoreError {
    StoreError::invalid(format!("{what}: {error}"))
}

fn principal_id(text: &str, what: &str) -> StoreResult<PrincipalId> {
    PrincipalId::parse(text).map_err(|e| invalid(what, e))
}

/// A stored count or limit (never negative unless edited by hand).
fn count(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn stored(value: Option<u64>) -> Option<i64> {
    value.map(|v| i64::try_from(v).unwrap_or(i64::MAX))
}

const PRINCIPAL_COLUMNS: &str = "id, kind, display_name, admin, created_at, disabled_at";

fn principal_from(row: &Row) -> StoreResult<Principal> {
    let id: String = row.get(0);
    let kind: String = row.get(1);
    let what = format!("principal {id}");
    Ok(Principal {
        id: principal_id(&id, &what)?,
        kind: PrincipalKind::parse(&kind).ok_or_else(|| invalid(&what, format!("kind {kind:?}")))?,
        display_name: row.get(2),
        admin: row.get(3),
        created_at: row.get(4),
        disabled_at: row.get(5),
    })
}

pub(crate) async fn put_principal(tx: &Transaction<'_>, p: &Principal) -> StoreResult<bool> {
    let n = tx
        .execute(
            "INSERT INTO principals (id, kind, display_name, admin, created_at, disabled_at) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING",
            &[&p.id.as_str(), &p.kind.as_str(), &p.display_name, &p.admin, &p.created_at, &p.disabled_at],
        )
        .await
        .ctx("adding a user or agent")?;
    Ok(n == 1)
}

pub(crate) async fn principal(tx: &Transaction<'_>, id: &PrincipalId) -> StoreResult<Option<Principal>> {
    tx.query_opt(&format!("SELECT {PRINCIPAL_COLUMNS} FROM principals WHERE id = $1"), &[&id.as_str()])
        .await
        .ctx("reading a user or agent")?
        .as_ref()
        .map(principal_from)
        .transpose()
}

pub(crate) async fn principals(tx: &Transaction<'_>) -> StoreResult<Vec<Principal>> {
    tx.query(&format!("SELECT {PRINCIPAL_COLUMNS} FROM principals ORDER BY id"), &[])
        .await
        .ctx("listing users and agents")?
        .iter()
        .map(principal_from)
        .collect()
}

pub(crate) async fn has_principals(tx: &Transaction<'_>) -> StoreResult<bool> {
    Ok(tx.query_one("SELECT EXISTS (SELECT 1 FROM principals)", &[]).await.ctx("reading the directory")?.get(0))
}

pub(crate) async fn set_principal_disabled(
    tx: &Transaction<'_>,
    id: &PrincipalId,
    at: Option<Timestamp>,
) -> StoreResult<bool> {
    let n = tx
        .execute("UPDATE principals SET disabled_at = $2 WHERE id = $1", &[&id.as_str(), &at])
        .await
        .ctx("disabling a user or agent")?;
    Ok(n == 1)
}

const TOKEN_COLUMNS: &str = "id, principal_id, label, hash, created_at, expires_at, revoked_at, last_used_at";

fn token_from(row: &Row) -> StoreResult<TokenRecord> {
    let id: String = row.get(0);
    let what = format!("token {id}");
    Ok(TokenRecord {
        id: TokenId::parse(&id).map_err(|e| invalid(&what, e))?,
        principal: principal_id(row.get(1), &what)?,
        label: row.get(2),
        hash: row.get(3),
        created_at: row.get(4),
        expires_at: row.get(5),
        revoked_at: row.get(6),
        last_used_at: row.get(7),
    })
}

pub(crate) async fn put_token(tx: &Transaction<'_>, t: &TokenRecord) -> StoreResult<()> {
    tx.execute(
        &format!("INSERT INTO tokens ({TOKEN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"),
        &[
            &t.id.as_str(),
            &t.principal.as_str(),
            &t.label,
            &t.hash,
            &t.created_at,
            &t.expires_at,
            &t.revoked_at,
            &t.last_used_at,
        ],
    )
    .await
    .ctx("storing a token")?;
    Ok(())
}

pub(crate) async fn token(tx: &Transaction<'_>, id: &TokenId) -> StoreResult<Option<TokenRecord>> {
    tx.query_opt(&format!("SELECT {TOKEN_COLUMNS} FROM tokens WHERE id = $1"), &[&id.as_str()])
        .await
        .ctx("reading a token")?
        .as_ref()
        .map(token_from)
        .transpose()
}

pub(crate) async fn tokens(tx: &Transaction<'_>, principal: Option<&PrincipalId>) -> StoreResult<Vec<TokenRecord>> {
    tx.query(
        &format!(
            "SELECT {TOKEN_COLUMNS} FROM tokens WHERE $1::text IS NULL OR principal_id = $1 \
             ORDER BY created_at DESC, id"
        ),
        &[&principal.map(PrincipalId::as_str)],
    )
    .await
    .ctx("listing tokens")?
    .iter()
    .map(token_from)
    .collect()
}

pub(crate) async fn revoke_token(tx: &Transaction<'_>, id: &TokenId, at: &Timestamp) -> StoreResult<bool> {
    let n = tx
        .execute("UPDATE tokens SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL", &[&id.as_str(), at])
        .await
        .ctx("revoking a token")?;
    Ok(n == 1)
}

pub(crate) async fn touch_token(tx: &Transaction<'_>, id: &TokenId, at: &Timestamp) -> StoreResult<()> {
    tx.execute("UPDATE tokens SET last_used_at = $2 WHERE id = $1", &[&id.as_str(), at])
        .await
        .ctx("recording a token's use")?;
    Ok(())
}

pub(crate) async fn put_team(tx: &Transaction<'_>, team: &Team) -> StoreResult<bool> {
    let c = "creating a team";
    let n = tx
        .execute(
            "INSERT INTO teams (id, leader_id, created_at) VALUES ($1, $2, $3) ON CONFLICT (id) DO NOTHING",
            &[&team.id.as_str(), &team.leader.as_str(), &team.created_at],
        )
        .await
        .ctx(c)?;
    if n == 0 {
        return Ok(false);
    }
    let members: Vec<&str> = team.members.iter().map(PrincipalId::as_str).collect();
    tx.execute(
        "INSERT INTO team_members (team_id, principal_id) SELECT $1, m FROM unnest($2::text[]) AS m \
         ON CONFLICT DO NOTHING",
        &[&team.id.as_str(), &members],
    )
    .await
    .ctx("adding team members")?;
    Ok(true)
}

async fn load_teams(tx: &Transaction<'_>, only: Option<&TeamId>) -> StoreResult<Vec<Team>> {
    let c = "reading teams";
    let rows = tx
        .query(
            "SELECT t.id, t.leader_id, t.created_at, \
                    ARRAY(SELECT m.principal_id FROM team_members m \
                          WHERE m.team_id = t.id AND m.principal_id <> t.leader_id ORDER BY m.principal_id) \
             FROM teams t WHERE $1::text IS NULL OR t.id = $1 ORDER BY t.id",
            &[&only.map(TeamId::as_str)],
        )
        .await
        .ctx(c)?;
    rows.iter()
        .map(|row| {
            let id: String = row.get(0);
            let what = format!("team {id}");
            let members: Vec<String> = row.get(3);
            Ok(Team {
                id: TeamId::parse(&id).map_err(|e| invalid(&what, e))?,
                leader: principal_id(row.get(1), &what)?,
                members: members.iter().map(|m| principal_id(m, &what)).collect::<StoreResult<_>>()?,
                created_at: row.get(2),
            })
        })
        .collect()
}

pub(crate) async fn team(tx: &Transaction<'_>, id: &TeamId) -> StoreResult<Option<Team>> {
    Ok(load_teams(tx, Some(id)).await?.pop())
}

pub(crate) async fn teams(tx: &Transaction<'_>) -> StoreResult<Vec<Team>> {
    load_teams(tx, None).await
}

/// A team's leader, its row locked (`lock` is `FOR SHARE` or `FOR UPDATE`).
async fn locked_leader(tx: &Transaction<'_>, team: &TeamId, lock: &str) -> StoreResult<Option<String>> {
    Ok(tx
        .query_opt(&format!("SELECT leader_id FROM teams WHERE id = $1 {lock}"), &[&team.as_str()])
        .await
        .ctx("reading a team")?
        .map(|row| row.get(0)))
}

pub(crate) async fn set_team_member(
    tx: &Transaction<'_>,
    team: &TeamId,
    member: &PrincipalId,
    add: bool,
) -> StoreResult<bool> {
    let Some(leader) = locked_leader(tx, team, "FOR SHARE").await? else { return Ok(false) };
    if leader == member.as_str() {
        return Ok(false);
    }
    let sql = if add {
        "INSERT INTO team_members (team_id, principal_id) VALUES ($1, $2) ON CONFLICT DO NOTHING"
    } else {
        "DELETE FROM team_members WHERE team_id = $1 AND principal_id = $2"
    };
    let n = tx.execute(sql, &[&team.as_str(), &member.as_str()]).await.ctx("changing a team's members")?;
    Ok(n == 1)
}

pub(crate) async fn set_team_leader(tx: &Transaction<'_>, team: &TeamId, leader: &PrincipalId) -> StoreResult<bool> {
    let c = "changing a team's leader";
    let Some(old) = locked_leader(tx, team, "FOR UPDATE").await? else { return Ok(false) };
    tx.execute("UPDATE teams SET leader_id = $2 WHERE id = $1", &[&team.as_str(), &leader.as_str()]).await.ctx(c)?;
    tx.execute(
        "INSERT INTO team_members (team_id, principal_id) SELECT $1, m FROM unnest($2::text[]) AS m \
         ON CONFLICT DO NOTHING",
        &[&team.as_str(), &vec![old.as_str(), leader.as_str()]],
    )
    .await
    .ctx(c)?;
    Ok(true)
}

pub(crate) async fn delete_team(tx: &Transaction<'_>, team: &TeamId) -> StoreResult<bool> {
    let c = "deleting a team";
    tx.execute("DELETE FROM workspace_grants WHERE member_kind = 'team' AND member_id = $1", &[&team.as_str()])
        .await
        .ctx("deleting a team's grants")?;
    tx.execute("DELETE FROM team_members WHERE team_id = $1", &[&team.as_str()]).await.ctx(c)?;
    let n = tx.execute("DELETE FROM teams WHERE id = $1", &[&team.as_str()]).await.ctx(c)?;
    Ok(n == 1)
}

pub(crate) async fn put_grant(tx: &Transaction<'_>, g: &Grant) -> StoreResult<()> {
    tx.execute(
        "INSERT INTO workspace_grants (workspace_id, member_kind, member_id, role, granted_at, granted_by) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (workspace_id, member_kind, member_id) DO UPDATE SET \
             role = excluded.role, granted_at = excluded.granted_at, granted_by = excluded.granted_by",
        &[&g.workspace.as_str(), &g.member.kind(), &g.member.id(), &g.role.as_str(), &g.granted_at, &g.granted_by],
    )
    .await
    .ctx("granting a role")?;
    Ok(())
}

pub(crate) async fn delete_grant(tx: &Transaction<'_>, workspace: &WorkspaceId, member: &Member) -> StoreResult<bool> {
    let n = tx
        .execute(
            "DELETE FROM workspace_grants WHERE workspace_id = $1 AND member_kind = $2 AND member_id = $3",
            &[&workspace.as_str(), &member.kind(), &member.id()],
        )
        .await
        .ctx("revoking a role")?;
    Ok(n == 1)
}

const GRANT_COLUMNS: &str = "workspace_id, member_kind, member_id, role, granted_at, granted_by";

fn grant_from(row: &Row) -> StoreResult<Grant> {
    let (ws, kind, id, role): (String, String, String, String) = (row.get(0), row.get(1), row.get(2), row.get(3));
    let what = format!("grant of {ws} to {kind} {id}");
    Ok(Grant {
        workspace: WorkspaceId::parse(&ws).map_err(|e| invalid(&what, e))?,
        member: Member::from_parts(&kind, &id).map_err(|e| invalid(&what, e))?,
        role: Role::parse(&role).map_err(|e| invalid(&what, e))?,
        granted_at: row.get(4),
        granted_by: row.get(5),
    })
}

pub(crate) async fn grants(tx: &Transaction<'_>, workspace: Option<&WorkspaceId>) -> StoreResult<Vec<Grant>> {
    tx.query(
        &format!(
            "SELECT {GRANT_COLUMNS} FROM workspace_grants WHERE $1::text IS NULL OR workspace_id = $1 \
             ORDER BY workspace_id, member_kind, member_id"
        ),
        &[&workspace.map(WorkspaceId::as_str)],
    )
    .await
    .ctx("reading grants")?
    .iter()
    .map(grant_from)
    .collect()
}

/// The grants of each member in turn, each member's by workspace.
pub(crate) async fn grants_for(tx: &Transaction<'_>, members: &[Member]) -> StoreResult<Vec<Grant>> {
    let kinds: Vec<&str> = members.iter().map(Member::kind).collect();
    let ids: Vec<&str> = members.iter().map(Member::id).collect();
    tx.query(
        &format!(
            "SELECT {GRANT_COLUMNS} FROM workspace_grants g \
             JOIN unnest($1::text[], $2::text[]) WITH ORDINALITY AS m (kind, id, n) \
               ON g.member_kind = m.kind AND g.member_id = m.id \
             ORDER BY m.n, g.workspace_id"
        ),
        &[&kinds, &ids],
    )
    .await
    .ctx("reading grants")?
    .iter()
    .map(grant_from)
    .collect()
}

pub(crate) async fn limits(tx: &Transaction<'_>, workspace: &WorkspaceId) -> StoreResult<Option<Limits>> {
    let row = tx
        .query_opt(
            "SELECT drawers, entities, triples, requests_per_minute, bytes FROM workspace_limits \
             WHERE workspace_id = $1",
            &[&workspace.as_str()],
        )
        .await
        .ctx("reading a workspace's limits")?;
    Ok(row.map(|row| {
        let limit = |i: usize| row.get::<_, Option<i64>>(i).map(count);
        Limits {
            drawers: limit(0),
            entities: limit(1),
            triples: limit(2),
            requests_per_minute: limit(3),
            bytes: limit(4),
        }
    }))
}

pub(crate) async fn set_limits(tx: &Transaction<'_>, workspace: &WorkspaceId, l: &Limits) -> StoreResult<()> {
    tx.execute(
        "INSERT INTO workspace_limits (workspace_id, drawers, entities, triples, requests_per_minute, bytes) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (workspace_id) DO UPDATE SET drawers = excluded.drawers, entities = excluded.entities, \
             triples = excluded.triples, requests_per_minute = excluded.requests_per_minute, \
             bytes = excluded.bytes",
        &[
            &workspace.as_str(),
            &stored(l.drawers),
            &stored(l.entities),
            &stored(l.triples),
            &stored(l.requests_per_minute),
            &stored(l.bytes),
        ],
    )
    .await
    .ctx("setting a workspace's limits")?;
    Ok(())
}

/// From the aggregates (`room_counts`, `workspace_bytes`) and the keys of
/// entities and triples; never a scan of the drawers.
pub(crate) async fn usage(tx: &Transaction<'_>, workspace: &WorkspaceId) -> StoreResult<Usage> {
    let row = tx
        .query_one(
            "SELECT (SELECT coalesce(sum(drawers), 0)::bigint FROM room_counts WHERE workspace_id = $1), \
                    (SELECT count(*) FROM entities WHERE workspace_id = $1), \
                    (SELECT count(*) FROM triples WHERE workspace_id = $1), \
                    (SELECT coalesce(sum(bytes), 0)::bigint FROM workspace_bytes WHERE workspace_id = $1)",
            &[&workspace.as_str()],
        )
        .await
        .ctx("reading a workspace's usage")?;
    Ok(Usage {
        drawers: count(row.get(0)),
        entities: count(row.get(1)),
        triples: count(row.get(2)),
        bytes: count(row.get(3)),
    })
}

pub(crate) async fn append_audit(tx: &Transaction<'_>, e: &AuditEntry) -> StoreResult<i64> {
    Ok(tx
        .query_one(
            "INSERT INTO audit_log (at, workspace_id, actor, action, target, count) \
             VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq",
            &[&e.at, &e.workspace, &e.actor, &e.action, &e.target, &i64::try_from(e.count).unwrap_or(i64::MAX)],
        )
        .await
        .ctx("writing the audit trail")?
        .get(0))
}

pub(crate) async fn audit(tx: &Transaction<'_>, filter: &AuditFilter) -> StoreResult<Vec<AuditEntry>> {
    let mut clauses: Vec<String> = Vec::new();
    let mut params: Vec<Param> = Vec::new();
    let mut bind = |clause: &str, value: Param| {
        params.push(value);
        clauses.push(clause.replace('?', &format!("${}", params.len())));
    };
    if let Some(workspace) = &filter.workspace {
        bind("workspace_id = ?", Box::new(workspace.clone()));
    }
    if let Some(actor) = &filter.actor {
        bind("actor = ?", Box::new(actor.clone()));
    }
    if let Some(action) = &filter.action {
        bind("starts_with(action, ?)", Box::new(action.clone()));
    }
    if let Some(since) = filter.since {
        bind("at >= ?", Box::new(since));
    }
    if let Some(before) = filter.before_seq {
        bind("seq < ?", Box::new(before));
    }
    params.push(Box::new(limit(filter.limit.max(1))));
    let sql = format!(
        "SELECT seq, at, workspace_id, actor, action, target, count FROM audit_log {} ORDER BY seq DESC LIMIT ${}",
        if clauses.is_empty() { String::new() } else { format!("WHERE {}", clauses.join(" AND ")) },
        params.len()
    );
    let rows = tx.query(&sql, &refs(&params)).await.ctx("reading the audit trail")?;
    Ok(rows
        .iter()
        .map(|row| AuditEntry {
            seq: row.get(0),
            at: row.get(1),
            workspace: row.get(2),
            actor: row.get(3),
            action: row.get(4),
            target: row.get(5),
            count: count(row.get(6)),
        })
        .collect())
}
