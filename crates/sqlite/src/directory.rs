//! The directory (schema version 11): principals, tokens, teams, grants,
//! limits, usage and the audit trail (docs/tenancy.md).
//!
//! Not here: who may do what (core's `tenancy`, the engine's guard).

use mempalace_core::tenancy::{
    AuditEntry, AuditFilter, Grant, Limits, Member, Principal, PrincipalId, PrincipalKind, Role, Team, TeamId, TokenId,
    TokenRecord, Usage,
};
use mempalace_core::{Timestamp, WorkspaceId};
use mempalace_store::{StoreError, StoreResult};
use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, OptionalExtension, Row, Transaction, params, params_from_iter};

use crate::error::Context;
use crate::row::{parse_ts, ts};

fn opt_ts(text: Option<String>, what: &str) -> StoreResult<Option<Timestamp>> {
    text.map(|t| parse_ts(&t, what)).transpose()
}

fn invalid(what: &str, error: impl std::fmt::Display) -> StoreError {
    StoreError::invalid(format!("{what}: {error}"))
}

const PRINCIPAL_COLUMNS: &str = "id, kind, display_name, admin, created_at, disabled_at";

type PrincipalRow = (String, String, Option<String>, bool, String, Option<String>);

fn principal_row(row: &Row<'_>) -> rusqlite::Result<PrincipalRow> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?))
}

fn principal_from(
    (id, kind, display_name, admin, created_at, disabled_at): (
        String,
        String,
        Option<String>,
        bool,
        String,
        Option<String>,
    ),
) -> StoreResult<Principal> {
    let what = format!("principal {id}");
    Ok(Principal {
        id: PrincipalId::parse(&id).map_err(|e| invalid(&what, e))?,
        kind: PrincipalKind::parse(&kind).ok_or_else(|| invalid(&what, format!("kind {kind:?}")))?,
        display_name,
        admin,
        created_at: parse_ts(&created_at, &what)?,
        disabled_at: opt_ts(disabled_at, &what)?,
    })
}

pub(crate) fn put_principal(tx: &Transaction<'_>, p: &Principal) -> StoreResult<bool> {
    let n = tx
        .execute(
            "INSERT OR IGNORE INTO principals (id, kind, display_name, admin, created_at, disabled_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                p.id.as_str(),
                p.kind.as_str(),
                p.display_name,
                p.admin,
                ts(&p.created_at),
                p.disabled_at.as_ref().map(ts)
            ],
        )
        .ctx("adding a user or agent")?;
    Ok(n == 1)
}

pub(crate) fn principal(conn: &Connection, id: &PrincipalId) -> StoreResult<Option<Principal>> {
    let row = conn
        .prepare_cached(&format!("SELECT {PRINCIPAL_COLUMNS} FROM principals WHERE id = ?1"))
        .and_then(|mut stmt| stmt.query_row(params![id.as_str()], principal_row).optional())
        .ctx("reading a user or agent")?;
    row.map(principal_from).transpose()
}

pub(crate) fn principals(conn: &Connection) -> StoreResult<Vec<Principal>> {
    let rows: Vec<_> = conn
        .prepare_cached(&format!("SELECT {PRINCIPAL_COLUMNS} FROM principals ORDER BY id"))
        .and_then(|mut stmt| stmt.query_map([], principal_row)?.collect::<Result<_, _>>())
        .ctx("listing users and agents")?;
    rows.into_iter().map(principal_from).collect()
}

pub(crate) fn has_principals(conn: &Connection) -> StoreResult<bool> {
    conn.query_row("SELECT EXISTS (SELECT 1 FROM principals)", [], |row| row.get(0)).ctx("reading the directory")
}

pub(crate) fn set_principal_disabled(
    tx: &Transaction<'_>,
    id: &PrincipalId,
    at: Option<Timestamp>,
) -> StoreResult<bool> {
    let n = tx
        .execute("UPDATE principals SET disabled_at = ?2 WHERE id = ?1", params![id.as_str(), at.as_ref().map(ts)])
        .ctx("disabling a user or agent")?;
    Ok(n == 1)
}

const TOKEN_COLUMNS: &str = "id, principal_id, label, hash, created_at, expires_at, revoked_at, last_used_at";

type TokenRow = (String, String, String, String, String, Option<String>, Option<String>, Option<String>);

fn token_row(row: &Row<'_>) -> rusqlite::Result<TokenRow> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?, row.get(6)?, row.get(7)?))
}

fn token_from((id, principal, label, hash, created, expires, revoked, used): TokenRow) -> StoreResult<TokenRecord> {
    let what = format!("token {id}");
    Ok(TokenRecord {
        id: TokenId::parse(&id).map_err(|e| invalid(&what, e))?,
        principal: PrincipalId::parse(&principal).map_err(|e| invalid(&what, e))?,
        label,
        hash,
        created_at: parse_ts(&created, &what)?,
        expires_at: opt_ts(expires, &what)?,
        revoked_at: opt_ts(revoked, &what)?,
        last_used_at: opt_ts(used, &what)?,
    })
}

pub(crate) fn put_token(tx: &Transaction<'_>, t: &TokenRecord) -> StoreResult<()> {
    tx.execute(
        &format!("INSERT INTO tokens ({TOKEN_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"),
        params![
            t.id.as_str(),
            t.principal.as_str(),
            t.label,
            t.hash,
            ts(&t.created_at),
            t.expires_at.as_ref().map(ts),
            t.revoked_at.as_ref().map(ts),
            t.last_used_at.as_ref().map(ts)
        ],
    )
    .ctx("storing a token")?;
    Ok(())
}

pub(crate) fn token(conn: &Connection, id: &TokenId) -> StoreResult<Option<TokenRecord>> {
    let row = conn
        .prepare_cached(&format!("SELECT {TOKEN_COLUMNS} FROM tokens WHERE id = ?1"))
        .and_then(|mut stmt| stmt.query_row(params![id.as_str()], token_row).optional())
        .ctx("reading a token")?;
    row.map(token_from).transpose()
}

pub(crate) fn tokens(conn: &Connection, principal: Option<&PrincipalId>) -> StoreResult<Vec<TokenRecord>> {
    let rows: Vec<TokenRow> = conn
        .prepare_cached(&format!(
            "SELECT {TOKEN_COLUMNS} FROM tokens WHERE ?1 IS NULL OR principal_id = ?1 ORDER BY created_at DESC, id"
        ))
        .and_then(|mut stmt| stmt.query_map(params![principal.map(PrincipalId::as_str)], token_row)?.collect())
        .ctx("listing tokens")?;
    rows.into_iter().map(token_from).collect()
}

pub(crate) fn revoke_token(tx: &Transaction<'_>, id: &TokenId, at: Timestamp) -> StoreResult<bool> {
    let n = tx
        .execute(
            "UPDATE tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
            params![id.as_str(), ts(&at)],
        )
        .ctx("revoking a token")?;
    Ok(n == 1)
}

pub(crate) fn touch_token(tx: &Transaction<'_>, id: &TokenId, at: Timestamp) -> StoreResult<()> {
    tx.execute("UPDATE tokens SET last_used_at = ?2 WHERE id = ?1", params![id.as_str(), ts(&at)])
        .ctx("recording a token's use")?;
    Ok(())
}

pub(crate) fn put_team(tx: &Transaction<'_>, team: &Team) -> StoreResult<bool> {
    let n = tx
        .execute(
            "INSERT OR IGNORE INTO teams (id, leader_id, created_at) VALUES (?1, ?2, ?3)",
            params![team.id.as_str(), team.leader.as_str(), ts(&team.created_at)],
        )
        .ctx("creating a team")?;
    if n == 0 {
        return Ok(false);
    }
    for member in &team.members {
        tx.execute(
            "INSERT OR IGNORE INTO team_members (team_id, principal_id) VALUES (?1, ?2)",
            params![team.id.as_str(), member.as_str()],
        )
        .ctx("adding a team member")?;
    }
    Ok(true)
}

fn load_teams(conn: &Connection, only: Option<&TeamId>) -> StoreResult<Vec<Team>> {
    let c = "reading teams";
    let rows: Vec<(String, String, String)> = conn
        .prepare_cached("SELECT id, leader_id, created_at FROM teams WHERE ?1 IS NULL OR id = ?1 ORDER BY id")
        .and_then(|mut stmt| {
            stmt.query_map(params![only.map(TeamId::as_str)], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?
                .collect()
        })
        .ctx(c)?;
    let mut teams = Vec::with_capacity(rows.len());
    for (id, leader, created) in rows {
        let what = format!("team {id}");
        let members: Vec<String> = conn
            .prepare_cached(
                "SELECT principal_id FROM team_members WHERE team_id = ?1 AND principal_id <> ?2 ORDER BY principal_id",
            )
            .and_then(|mut stmt| stmt.query_map(params![id, leader], |row| row.get(0))?.collect())
            .ctx(c)?;
        teams.push(Team {
            id: TeamId::parse(&id).map_err(|e| invalid(&what, e))?,
            leader: PrincipalId::parse(&leader).map_err(|e| invalid(&what, e))?,
            members: members
                .iter()
                .map(|m| PrincipalId::parse(m).map_err(|e| invalid(&what, e)))
                .collect::<StoreResult<_>>()?,
            created_at: parse_ts(&created, &what)?,
        });
    }
    Ok(teams)
}

pub(crate) fn team(conn: &Connection, id: &TeamId) -> StoreResult<Option<Team>> {
    Ok(load_teams(conn, Some(id))?.pop())
}

pub(crate) fn teams(conn: &Connection) -> StoreResult<Vec<Team>> {
    load_teams(conn, None)
}

pub(crate) fn set_team_member(
    tx: &Transaction<'_>,
    team: &TeamId,
    member: &PrincipalId,
    add: bool,
) -> StoreResult<bool> {
    let leader: Option<String> = tx
        .query_row("SELECT leader_id FROM teams WHERE id = ?1", params![team.as_str()], |row| row.get(0))
        .optional()
        .ctx("reading a team")?;
    let Some(leader) = leader else { return Ok(false) };
    if leader == member.as_str() {
        return Ok(false);
    }
    let n = if add {
        tx.execute(
            "INSERT OR IGNORE INTO team_members (team_id, principal_id) VALUES (?1, ?2)",
            params![team.as_str(), member.as_str()],
        )
    } else {
        tx.execute(
            "DELETE FROM team_members WHERE team_id = ?1 AND principal_id = ?2",
            params![team.as_str(), member.as_str()],
        )
    }
    .ctx("changing a team's members")?;
    Ok(n == 1)
}

pub(crate) fn set_team_leader(tx: &Transaction<'_>, team: &TeamId, leader: &PrincipalId) -> StoreResult<bool> {
    let old: Option<String> = tx
        .query_row("SELECT leader_id FROM teams WHERE id = ?1", params![team.as_str()], |row| row.get(0))
        .optional()
        .ctx("reading a team")?;
    let Some(old) = old else { return Ok(false) };
    tx.execute("UPDATE teams SET leader_id = ?2 WHERE id = ?1", params![team.as_str(), leader.as_str()])
        .ctx("changing a team's leader")?;
    for who in [old.as_str(), leader.as_str()] {
        tx.execute(
            "INSERT OR IGNORE INTO team_members (team_id, principal_id) VALUES (?1, ?2)",
            params![team.as_str(), who],
        )
        .ctx("changing a team's leader")?;
    }
    Ok(true)
}

pub(crate) fn delete_team(tx: &Transaction<'_>, team: &TeamId) -> StoreResult<bool> {
    tx.execute("DELETE FROM workspace_grants WHERE member_kind = 'team' AND member_id = ?1", params![team.as_str()])
        .ctx("deleting a team's grants")?;
    tx.execute("DELETE FROM team_members WHERE team_id = ?1", params![team.as_str()]).ctx("deleting a team")?;
    let n = tx.execute("DELETE FROM teams WHERE id = ?1", params![team.as_str()]).ctx("deleting a team")?;
    Ok(n == 1)
}

pub(crate) fn ensure_workspace(tx: &Transaction<'_>, workspace: &WorkspaceId, at: Timestamp) -> StoreResult<()> {
    tx.execute(
        "INSERT OR IGNORE INTO workspaces (id, created_at) VALUES (?1, ?2)",
        params![workspace.as_str(), ts(&at)],
    )
    .ctx("registering a workspace")?;
    Ok(())
}

pub(crate) fn put_grant(tx: &Transaction<'_>, g: &Grant) -> StoreResult<()> {
    tx.execute(
        "INSERT INTO workspace_grants (workspace_id, member_kind, member_id, role, granted_at, granted_by) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
         ON CONFLICT (workspace_id, member_kind, member_id) DO UPDATE SET \
             role = excluded.role, granted_at = excluded.granted_at, granted_by = excluded.granted_by",
        params![g.workspace.as_str(), g.member.kind(), g.member.id(), g.role.as_str(), ts(&g.granted_at), g.granted_by],
    )
    .ctx("granting a role")?;
    Ok(())
}

pub(crate) fn delete_grant(tx: &Transaction<'_>, workspace: &WorkspaceId, member: &Member) -> StoreResult<bool> {
    let n = tx
        .execute(
            "DELETE FROM workspace_grants WHERE workspace_id = ?1 AND member_kind = ?2 AND member_id = ?3",
            params![workspace.as_str(), member.kind(), member.id()],
        )
        .ctx("revoking a role")?;
    Ok(n == 1)
}

type GrantRow = (String, String, String, String, String, String);

fn grant_from((ws, kind, id, role, at, by): GrantRow) -> StoreResult<Grant> {
    let what = format!("grant of {ws} to {kind} {id}");
    Ok(Grant {
        workspace: WorkspaceId::parse(&ws).map_err(|e| invalid(&what, e))?,
        member: Member::from_parts(&kind, &id).map_err(|e| invalid(&what, e))?,
        role: Role::parse(&role).map_err(|e| invalid(&what, e))?,
        granted_at: parse_ts(&at, &what)?,
        granted_by: by,
    })
}

const GRANT_COLUMNS: &str = "workspace_id, member_kind, member_id, role, granted_at, granted_by";

fn grant_rows(conn: &Connection, sql: &str, values: Vec<SqlValue>) -> StoreResult<Vec<Grant>> {
    let rows: Vec<GrantRow> = conn
        .prepare_cached(sql)
        .and_then(|mut stmt| {
            stmt.query_map(params_from_iter(values), |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?))
            })?
            .collect()
        })
        .ctx("reading grants")?;
    rows.into_iter().map(grant_from).collect()
}

pub(crate) fn grants(conn: &Connection, workspace: Option<&WorkspaceId>) -> StoreResult<Vec<Grant>> {
    grant_rows(
        conn,
        &format!(
            "SELECT {GRANT_COLUMNS} FROM workspace_grants WHERE ?1 IS NULL OR workspace_id = ?1 \
             ORDER BY workspace_id, member_kind, member_id"
        ),
        vec![workspace.map_or(SqlValue::Null, |w| SqlValue::Text(w.to_string()))],
    )
}

pub(crate) fn grants_for(conn: &Connection, members: &[Member]) -> StoreResult<Vec<Grant>> {
    let mut out = Vec::new();
    for member in members {
        out.extend(grant_rows(
            conn,
            &format!(
                "SELECT {GRANT_COLUMNS} FROM workspace_grants WHERE member_kind = ?1 AND member_id = ?2 \
                 ORDER BY workspace_id"
            ),
            vec![SqlValue::Text(member.kind().into()), SqlValue::Text(member.id().into())],
        )?);
    }
    Ok(out)
}

fn count(value: Option<i64>) -> Option<u64> {
    value.map(|v| u64::try_from(v).unwrap_or(0))
}

fn stored(value: Option<u64>) -> Option<i64> {
    value.map(|v| i64::try_from(v).unwrap_or(i64::MAX))
}

pub(crate) fn limits(conn: &Connection, workspace: &WorkspaceId) -> StoreResult<Option<Limits>> {
    conn.prepare_cached(
        "SELECT drawers, entities, triples, requests_per_minute, bytes FROM workspace_limits WHERE workspace_id = ?1",
    )
    .and_then(|mut stmt| {
        stmt.query_row(params![workspace.as_str()], |row| {
            Ok(Limits {
                drawers: count(row.get(0)?),
                entities: count(row.get(1)?),
                triples: count(row.get(2)?),
                requests_per_minute: count(row.get(3)?),
                bytes: count(row.get(4)?),
            })
        })
        .optional()
    })
    .ctx("reading a workspace's limits")
}

pub(crate) fn set_limits(tx: &Transaction<'_>, workspace: &WorkspaceId, l: &Limits) -> StoreResult<()> {
    tx.execute(
        "INSERT OR REPLACE INTO workspace_limits (workspace_id, drawers, entities, triples, requests_per_minute, bytes) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            workspace.as_str(),
            stored(l.drawers),
            stored(l.entities),
            stored(l.triples),
            stored(l.requests_per_minute),
            stored(l.bytes)
        ],
    )
    .ctx("setting a workspace's limits")?;
    Ok(())
}

pub(crate) fn usage(conn: &Connection, workspace: &WorkspaceId) -> StoreResult<Usage> {
    let c = "reading a workspace's usage";
    let one = |sql: &str| -> StoreResult<u64> {
        let n: i64 = conn.query_row(sql, params![workspace.as_str()], |row| row.get(0)).ctx(c)?;
        Ok(u64::try_from(n).unwrap_or(0))
    };
    Ok(Usage {
        drawers: one("SELECT coalesce(sum(drawers), 0) FROM room_counts WHERE workspace_id = ?1")?,
        entities: one("SELECT count(*) FROM entities WHERE workspace_id = ?1")?,
        triples: one("SELECT count(*) FROM triples WHERE workspace_id = ?1")?,
        bytes: one("SELECT coalesce(sum(bytes), 0) FROM workspace_bytes WHERE workspace_id = ?1")?,
    })
}

pub(crate) fn append_audit(tx: &Transaction<'_>, e: &AuditEntry) -> StoreResult<i64> {
    tx.execute(
        "INSERT INTO audit_log (at, workspace_id, actor, action, target, count) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![ts(&e.at), e.workspace, e.actor, e.action, e.target, i64::try_from(e.count).unwrap_or(i64::MAX)],
    )
    .ctx("writing the audit trail")?;
    Ok(tx.last_insert_rowid())
}

pub(crate) fn audit(conn: &Connection, filter: &AuditFilter) -> StoreResult<Vec<AuditEntry>> {
    let mut clauses = Vec::new();
    let mut values = Vec::new();
    if let Some(workspace) = &filter.workspace {
        clauses.push("workspace_id = ?");
        values.push(SqlValue::Text(workspace.clone()));
    }
    if let Some(actor) = &filter.actor {
        clauses.push("actor = ?");
        values.push(SqlValue::Text(actor.clone()));
    }
    if let Some(action) = &filter.action {
        clauses.push("substr(action, 1, length(?)) = ?");
        values.push(SqlValue::Text(action.clone()));
        values.push(SqlValue::Text(action.clone()));
    }
    if let Some(since) = &filter.since {
        clauses.push("at >= ?");
        values.push(SqlValue::Text(ts(since)));
    }
    if let Some(before) = filter.before_seq {
        clauses.push("seq < ?");
        values.push(SqlValue::Integer(before));
    }
    let sql = format!(
        "SELECT seq, at, workspace_id, actor, action, target, count FROM audit_log {} ORDER BY seq DESC LIMIT ?",
        if clauses.is_empty() { String::new() } else { format!("WHERE {}", clauses.join(" AND ")) }
    );
    values.push(SqlValue::Integer(i64::try_from(filter.limit.max(1)).unwrap_or(i64::MAX)));
    let rows: Vec<(i64, String, String, String, String, String, i64)> = conn
        .prepare_cached(&sql)
        .and_then(|mut stmt| {
            stmt.query_map(params_from_iter(values), |row| {
                Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?, row.get(6)?))
            })?
            .collect()
        })
        .ctx("reading the audit trail")?;
    rows.into_iter()
        .map(|(seq, at, workspace, actor, action, target, count)| {
            Ok(AuditEntry {
                seq,
                at: parse_ts(&at, &format!("audit entry {seq}"))?,
                workspace,
                actor,
                action,
                target,
                count: u64::try_from(count).unwrap_or(0),
            })
        })
        .collect()
}
