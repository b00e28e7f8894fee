//! Tenancy on a real palace (SQLite and PostgreSQL): the isolation matrix.
//! Every read and write path of the store is tried through a scoped handle
//! with the wrong user, the wrong team, a revoked token, an expired token
//! and a forged workspace id: nothing leaks, nothing is written, and what
//! is allowed works, is limited and is audited.

#![allow(clippy::disallowed_methods)]

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use common::{Backend, Fixture, minilm, set_now, test_clock};
use mempalace_core::kg::entity_id;
use mempalace_core::layers::ResultLimit;
use mempalace_core::tenancy::{
    AuditFilter, Caller, Limits, Member, PrincipalId, PrincipalKind, Role, TeamId, TokenRejection,
};
use mempalace_core::time::{DayEdge, parse_timestamp};
use mempalace_core::{Content, DrawerId, DrawerStatus, Identity, Room, Wing, WorkspaceId};
use mempalace_engine::tenancy::Tenancy;
use mempalace_engine::{EngineError, IngestRequest, Palace, SearchRequest};
use mempalace_store::{DrawerFilter, EventFilter, StoreError, StoreResult};

fn ws(id: &str) -> WorkspaceId {
    WorkspaceId::parse(id).unwrap()
}

fn pid(id: &str) -> PrincipalId {
    PrincipalId::parse(id).unwrap()
}

fn at(text: &str) -> mempalace_core::Timestamp {
    parse_timestamp(text, "t", DayEdge::Start).unwrap()
}

struct Team {
    _fixture: Fixture,
    base: Palace,
    tenancy: Tenancy,
    tokens: HashMap<&'static str, String>,
}

fn file(palace: &Palace, text: &str, owner: Option<&str>) -> EngineResultId {
    let mut request = IngestRequest::new(Wing::parse("notes").unwrap(), Room::parse("general").unwrap(), text, "test");
    request.owner_user_id = owner.map(str::to_string);
    palace.ingest(request).map(|r| r.drawer_ids()[0].clone())
}

type EngineResultId = Result<DrawerId, EngineError>;

fn denied<T: std::fmt::Debug>(result: Result<T, EngineError>, what: &str) {
    match result {
        Err(error) if error.is_denied() => {}
        other => panic!("{what}: expected access denied, got {other:?}"),
    }
}

fn store_denied<T: std::fmt::Debug>(result: StoreResult<T>, what: &str) {
    match result {
        Err(StoreError::Denied { .. }) => {}
        other => panic!("{what}: expected access denied, got {other:?}"),
    }
}

/// A team palace: admin `root`, users alice (leads eng), bob (eng member),
/// mallory (leads ops), carol (reader by direct grant), agent bot (writer
/// by direct grant); workspaces team-ws (eng writes) and ops-ws (ops).
fn team(backend: Backend) -> Team {
    let (fixture, store) = common::store(backend).expect("PostgreSQL tests skipped");
    set_now("2026-05-01T09:00:00Z");
    let base = Palace::new(store, ws("team-ws")).with_embedder(minilm()).with_clock(test_clock);
    let tenancy = Tenancy::new(base.clone());
    let local = Caller::Local;
    assert!(!tenancy.is_shared().unwrap());
    for (name, kind, admin) in [
        ("root", PrincipalKind::User, true),
        ("alice", PrincipalKind::User, false),
        ("bob", PrincipalKind::User, false),
        ("mallory", PrincipalKind::User, false),
        ("carol", PrincipalKind::User, false),
        ("bot", PrincipalKind::Agent, false),
    ] {
        tenancy.add_principal(&local, pid(name), kind, None, admin).unwrap();
    }
    assert!(tenancy.is_shared().unwrap());
    tenancy.create_team(&local, TeamId::parse("eng").unwrap(), pid("alice"), vec![pid("bob")]).unwrap();
    tenancy.create_team(&local, TeamId::parse("ops").unwrap(), pid("mallory"), vec![]).unwrap();
    tenancy.create_workspace(&local, &ws("team-ws"), Limits::default()).unwrap();
    tenancy.create_workspace(&local, &ws("ops-ws"), Limits::default()).unwrap();
    tenancy.grant(&local, &ws("team-ws"), Member::Team(TeamId::parse("eng").unwrap()), Role::Writer).unwrap();
    tenancy.grant(&local, &ws("team-ws"), Member::Principal(pid("carol")), Role::Reader).unwrap();
    tenancy.grant(&local, &ws("team-ws"), Member::Principal(pid("bot")), Role::Writer).unwrap();
    tenancy.grant(&local, &ws("ops-ws"), Member::Team(TeamId::parse("ops").unwrap()), Role::Writer).unwrap();

    let mut tokens = HashMap::new();
    for name in ["root", "alice", "bob", "mallory", "carol", "bot"] {
        let (_, secret) = tenancy.issue_token(&local, &pid(name), "test", None).unwrap();
        tokens.insert(name, secret.expose().to_string());
    }
    let (revoked, secret) = tenancy.issue_token(&local, &pid("alice"), "old", None).unwrap();
    tenancy.revoke_token(&local, &revoked.id).unwrap();
    tokens.insert("revoked", secret.expose().to_string());
    let (_, secret) = tenancy.issue_token(&local, &pid("alice"), "short", Some(at("2026-05-01T10:00:00Z"))).unwrap();
    tokens.insert("expired", secret.expose().to_string());
    Team { _fixture: fixture, base, tenancy, tokens }
}

impl Team {
    fn caller(&self, who: &str) -> Caller {
        self.tenancy.authenticate(&self.tokens[who]).unwrap()
    }

    fn palace(&self, who: &str) -> Palace {
        self.tenancy.scope(&self.caller(who), None).unwrap()
    }

    /// Everything stored, read around the guard: drawers per workspace,
    /// entities, triples, identity.
    fn snapshot(&self) -> Vec<String> {
        let store = self.base.store();
        let mut out = Vec::new();
        for workspace in store.workspaces().unwrap() {
            let mut after = None;
            loop {
                let page = store.scan_drawers(&workspace, after.as_ref(), 500).unwrap();
                let Some(last) = page.last() else { break };
                after = Some(last.id.clone());
                out.extend(
                    page.iter().map(|d| format!("{workspace} {} {} {:?}", d.id, d.status.as_str(), d.owner_user_id)),
                );
            }
            out.extend(store.entities(&workspace).unwrap().iter().map(|e| format!("{workspace} entity {}", e.id)));
            out.extend(store.triples(&workspace).unwrap().iter().map(|t| format!("{workspace} triple {}", t.id)));
            out.extend(
                store.identity(&workspace).unwrap().map(|i| format!("{workspace} identity {}", i.identity.as_str())),
            );
            out.extend(store.tunnels(&workspace).unwrap().iter().map(|t| format!("{workspace} tunnel {}", t.id)));
        }
        out.sort();
        out
    }
}

fn search(palace: &Palace, query: &str) -> Vec<String> {
    palace
        .search(&SearchRequest { query: query.into(), limit: ResultLimit::constant(10), ..SearchRequest::default() })
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.drawer.content.as_str().to_string())
        .collect()
}

fn tokens_are_checked_and_single_user_palaces_need_none(backend: Backend) {
    let (_fixture, store) = common::store(backend).expect("PostgreSQL tests skipped");
    set_now("2026-05-01T09:00:00Z");
    let base = Palace::new(store, WorkspaceId::default_workspace()).with_clock(test_clock);
    let single = Tenancy::new(base.clone());
    // A palace without users: the local operator's handle is the plain one.
    let plain = single.scope(&Caller::Local, None).unwrap();
    assert!(plain.caller().is_none());
    file(&plain, "a single-user note about tabs", None).unwrap();
    assert!(base.store().audit(&AuditFilter { limit: 10, ..AuditFilter::default() }).unwrap().is_empty());

    let team = team(backend);
    let t = &team.tenancy;
    assert!(matches!(t.authenticate(&team.tokens["alice"]).unwrap(), Caller::Principal(p) if p.id.as_str() == "alice"));
    let rejected = |token: &str| match t.authenticate(token) {
        Err(EngineError::Unauthenticated(rejection)) => rejection,
        other => panic!("{token}: expected a refused token, got {other:?}"),
    };
    assert!(matches!(rejected(&team.tokens["revoked"]), TokenRejection::Revoked(_)));
    assert!(matches!(rejected(&team.tokens["bob"][..20]), TokenRejection::Malformed));
    assert!(matches!(rejected("not-a-token"), TokenRejection::Malformed));
    // The id of a real token with another secret.
    let real = &team.tokens["bob"];
    let forged = format!("{}{}", &real[..real.len() - 4], if real.ends_with("0000") { "1111" } else { "0000" });
    assert_eq!(rejected(&forged), TokenRejection::Invalid);
    // Expired once its time passes (the token worked before).
    assert!(t.authenticate(&team.tokens["expired"]).is_ok());
    set_now("2026-05-01T10:00:01Z");
    assert!(matches!(rejected(&team.tokens["expired"]), TokenRejection::Expired(_)));
    // A disabled user's tokens stop at once; enabled again, they work.
    t.set_disabled(&Caller::Local, &pid("bob"), true).unwrap();
    assert!(matches!(rejected(&team.tokens["bob"]), TokenRejection::Disabled(_)));
    t.set_disabled(&Caller::Local, &pid("bob"), false).unwrap();
    assert!(t.authenticate(&team.tokens["bob"]).is_ok());
    // Secrets are never stored.
    for record in t.tokens(&Caller::Local, None).unwrap() {
        assert!(team.tokens.values().all(|secret| !secret.contains(&record.hash)) && record.hash.len() == 64);
    }
    // Only admins and the token's owner manage tokens.
    let bob = team.caller("bob");
    denied(t.issue_token(&bob, &pid("alice"), "x", None).map(|_| ()), "bob creating alice's token");
    let alices = t.tokens(&team.caller("alice"), None).unwrap();
    assert!(alices.iter().all(|r| r.principal.as_str() == "alice") && alices.len() == 3, "{alices:?}");
    denied(t.tokens(&bob, Some(&pid("alice"))), "bob listing alice's tokens");
    denied(t.revoke_token(&bob, &alices[0].id), "bob revoking alice's token");
    denied(t.add_principal(&bob, pid("eve"), PrincipalKind::User, None, true).map(|_| ()), "bob adding an admin");
    assert!(t.add_principal(&team.caller("root"), pid("eve"), PrincipalKind::User, None, false).is_ok());
    let (_, own) = t.issue_token(&bob, &pid("bob"), "mine", None).unwrap();
    assert!(t.authenticate(own.expose()).is_ok());
}

fn roles_private_drawers_and_personal_workspaces_hold(backend: Backend) {
    let team = team(backend);
    let alice = team.palace("alice");
    let shared = file(&alice, "The launch code for the Orion release is 4721.", None).unwrap();
    let private = file(&alice, "Alice's private note: I am interviewing with another company.", Some("alice")).unwrap();
    let personal = team.tenancy.scope(&team.caller("alice"), Some(&ws("personal.alice"))).unwrap();
    file(&personal, "Alice's personal reminder: the Orion launch slides are in my drive.", None).unwrap();
    let before = team.snapshot();

    // A team member reads the shared drawer, never alice's private one.
    let bob = team.palace("bob");
    assert!(search(&bob, "Orion launch code").iter().any(|t| t.contains("4721")));
    assert!(search(&bob, "interviewing with another company").iter().all(|t| !t.contains("interviewing")));
    assert!(search(&bob, "Orion launch slides").iter().all(|t| !t.contains("personal reminder")));
    assert!(matches!(bob.drawer(&private), Err(EngineError::NotFound { .. })));
    assert!(bob.drawer(&shared).is_ok());
    // Alice sees her own private drawer and her personal workspace's note,
    // unioned into the team search.
    let hits = search(&alice, "Orion launch");
    assert!(
        hits.iter().any(|t| t.contains("personal reminder")) && hits.iter().any(|t| t.contains("4721")),
        "{hits:?}"
    );
    assert!(search(&alice, "interviewing with another company").iter().any(|t| t.contains("interviewing")));

    // A member reads but cannot write: nothing is written.
    denied(file(&bob, "bob was here", None), "a team member filing");
    denied(bob.delete_drawer(&shared, mempalace_engine::DeleteMode::Soft { reason: None }), "a member deleting");
    denied(bob.set_identity(&Identity::parse("I am bob").unwrap()), "a member setting the identity");
    denied(
        bob.kg_add("Orion", "launches_on", "2026-06-01", None, None, None, None, None).map(|_| ()),
        "a member adding a fact",
    );
    // carol is a reader by a direct grant: the same.
    let carol = team.palace("carol");
    assert!(search(&carol, "launch code").iter().any(|t| t.contains("4721")));
    denied(file(&carol, "carol was here", None), "a reader filing");
    // The agent writes (direct writer grant) but cannot touch alice's
    // private drawer, nor file one in her name.
    let bot = team.palace("bot");
    denied(bot.delete_drawer(&private, mempalace_engine::DeleteMode::Hard), "deleting another user's private drawer");
    denied(file(&bot, "planted in alice's name", Some("alice")), "filing a drawer private to someone else");
    // The wrong user and the wrong team: no role, no handle.
    for (who, workspace) in
        [("mallory", "team-ws"), ("bob", "ops-ws"), ("bob", "personal.alice"), ("bot", "personal.bot")]
    {
        denied(team.tenancy.scope(&team.caller(who), Some(&ws(workspace))), &format!("{who} in {workspace}"));
    }
    // Forged workspace ids: unknown ones, another tenant's, through the
    // handle's own store calls.
    for forged in ["nope", "ops-ws", "personal.alice"] {
        denied(team.tenancy.scope(&team.caller("bob"), Some(&ws(forged))), forged);
    }
    assert_eq!(before, team.snapshot(), "refused calls wrote nothing");
    assert!(
        bot.delete_drawer(&shared, mempalace_engine::DeleteMode::Soft { reason: None }).is_ok(),
        "a writer deletes a shared drawer"
    );
    let after = team.snapshot();
    assert_ne!(before, after);
    let status = |id: &DrawerId| team.base.store().drawer(&ws("team-ws"), id).unwrap().unwrap().status;
    assert_eq!(status(&shared), DrawerStatus::Invalidated);
}

/// Every store call through a scoped handle, with a workspace the caller
/// has no role in: each is refused. Then every write call as a reader.
fn every_store_path_refuses_a_forged_workspace_and_a_reader_cannot_write(backend: Backend) {
    let team = team(backend);
    let alice = team.palace("alice");
    let id = file(&alice, "Quarterly numbers for ops are confidential.", None).unwrap();
    let ops = team.tenancy.scope(&team.caller("mallory"), Some(&ws("ops-ws"))).unwrap();
    let ops_id = file(&ops, "Ops runbook: restart the ingest daemon at midnight.", None).unwrap();
    let before = team.snapshot();
    let now = at("2026-05-01T09:00:00Z");
    let drawer = team.base.store().drawer(&ws("team-ws"), &id).unwrap().unwrap();
    let forged_drawer = mempalace_core::Drawer { workspace_id: ws("ops-ws"), ..drawer.clone() };
    let entity = mempalace_core::kg::Entity {
        workspace_id: ws("ops-ws"),
        id: entity_id("Orion"),
        name: "Orion".into(),
        entity_type: "project".into(),
        properties: serde_json::Map::new(),
        embedding: None,
        created_at: now,
    };

    let store = alice.store();
    let other = ws("ops-ws");
    let filter = DrawerFilter::default();
    let reads: Vec<(&str, StoreResult<()>)> = vec![
        ("drawer", store.drawer(&other, &ops_id).map(drop)),
        ("drawers", store.drawers(&other, std::slice::from_ref(&ops_id)).map(drop)),
        ("scan_drawers", store.scan_drawers(&other, None, 10).map(drop)),
        ("taxonomy", store.taxonomy(&other).map(drop)),
        ("identity", store.identity(&other).map(drop)),
        ("entities", store.entities(&other).map(drop)),
        ("triples", store.triples(&other).map(drop)),
        ("sessions", store.sessions(&other).map(drop)),
        ("episodic_summaries", store.episodic_summaries(&other).map(drop)),
        ("tunnels", store.tunnels(&other).map(drop)),
        ("centroids", store.centroids(&other).map(drop)),
        ("embeddings_by_hash", store.embeddings_by_hash(&other, "m", &[]).map(drop)),
        ("drawers_missing_embedding", store.drawers_missing_embedding(&other, "m", 10).map(drop)),
        ("embedding_models", store.embedding_models(&other).map(drop)),
        ("lexical_search", store.lexical_search(&other, &["ops".into()], &filter, 10).map(drop)),
        ("filtered_ids", store.filtered_ids(&other, &filter).map(drop)),
        ("vector_changes", store.vector_changes(&other, "m", 0, 10).map(drop)),
        ("top_drawers", store.top_drawers(&other, None, 10).map(drop)),
        ("entities_by_id", store.entities_by_id(&other, &[]).map(drop)),
        ("entity_names", store.entity_names(&other).map(drop)),
        ("triples_about", store.triples_about(&other, "x", mempalace_store::Direction::Both).map(drop)),
        ("kg_stats", store.kg_stats(&other).map(drop)),
        ("drawers_mentioning", store.drawers_mentioning(&other, &[], 10).map(drop)),
        ("hall_counts", store.hall_counts(&other).map(drop)),
        ("place_drawers", store.place_drawers(&other, "notes", None, 10).map(drop)),
        ("page_drawers", store.page_drawers(&other, None, None, 0, 10).map(drop)),
        ("source_cursor", store.source_cursor(&other, "x").map(drop)),
        ("events", store.events(&other, &EventFilter::default()).map(drop)),
        ("event", store.event(&other, "x").map(drop)),
        ("artifact", store.artifact(&other, "x").map(drop)),
        ("scan_artifacts", store.scan_artifacts(&other, None, 10).map(drop)),
        ("pipeline_counts", store.pipeline_counts(&other, now).map(drop)),
        ("session_activity", store.session_activity(&other, now, None).map(drop)),
        ("prune_candidates", store.prune_candidates(&other, 1.0, 0, now, 0).map(drop)),
        ("entity_aliases", store.entity_aliases(&other).map(drop)),
        ("resolve_entities", store.resolve_entities(&other, &[]).map(drop)),
        ("entity_usage", store.entity_usage(&other).map(drop)),
        ("room_centroids", store.room_centroids(&other).map(drop)),
        ("vector_search", store.vector_search(&other, "m", &[0.0; 4], &filter, 10).map(drop)),
        ("usage", store.usage(&other).map(drop)),
        ("limits", store.limits(&other).map(drop)),
        ("grants", store.grants(Some(&other)).map(drop)),
    ];
    for (name, result) in reads {
        store_denied(result, &format!("{name} on a forged workspace"));
    }
    // The handle lists only the caller's workspaces.
    let listed = store.workspaces().unwrap();
    assert!(listed.contains(&ws("team-ws")) && listed.contains(&ws("personal.alice")), "{listed:?}");
    assert!(!listed.contains(&other), "{listed:?}");

    let place = |wing: &str| mempalace_core::tunnel::Place {
        wing: Wing::parse(wing).unwrap(),
        room: Room::parse("general").unwrap(),
    };
    let tunnel = mempalace_core::tunnel::Tunnel {
        workspace_id: other.clone(),
        id: mempalace_core::tunnel::Tunnel::make_id(&place("a"), &place("b")),
        a: place("a"),
        b: place("b"),
        label: None,
        created_by: None,
        created_at: now,
    };
    let writes = |store: &Arc<dyn mempalace_store::Store>, target: &WorkspaceId, drawer: &mempalace_core::Drawer| {
        let entity = mempalace_core::kg::Entity { workspace_id: target.clone(), ..entity.clone() };
        let mut edited = drawer.clone();
        edited.content = Content::parse("edited by someone without the right").unwrap();
        let session = mempalace_core::session::Session {
            workspace_id: target.clone(),
            id: "s-forged".into(),
            agent: None,
            user_id: None,
            context: serde_json::Map::new(),
            status: mempalace_core::session::SessionStatus::Active,
            outcome_score: None,
            session_count: 1,
            started_at: now,
            ended_at: None,
        };
        vec![
            ("put_drawers", store.put_drawers(std::slice::from_ref(drawer)).map(drop)),
            (
                "put_and_remove_drawers",
                store.put_and_remove_drawers(target, &[], std::slice::from_ref(&drawer.id)).map(drop),
            ),
            (
                "set_drawer_status",
                store.set_drawer_status(target, &drawer.id, DrawerStatus::Invalidated, None, now).map(drop),
            ),
            ("replace_drawer", store.replace_drawer(&edited).map(drop)),
            ("save_session", store.save_session(&session).map(drop)),
            ("delete_drawer", store.delete_drawer(target, &drawer.id).map(drop)),
            ("set_embeddings", store.set_embeddings(target, &[]).map(drop)),
            ("add_entities", store.add_entities(std::slice::from_ref(&entity)).map(drop)),
            ("invalidate_triples", store.invalidate_triples(target, "a", "b", "c", now).map(drop)),
            ("delete_triple", store.delete_triple(target, "t").map(drop)),
            (
                "put_tunnel",
                store
                    .put_tunnel(&mempalace_core::tunnel::Tunnel { workspace_id: target.clone(), ..tunnel.clone() })
                    .map(drop),
            ),
            ("delete_tunnel", store.delete_tunnel(target, "t").map(drop)),
            ("set_source_cursor", store.set_source_cursor(target, "s", Some("c"), now).map(drop)),
            ("claim_raw_drawers", store.claim_raw_drawers(target, "w", 10, now, now).map(drop)),
            ("decay_importance", store.decay_importance(target, now, now, 0.5, 0.1).map(drop)),
            ("expire_episodic_summaries", store.expire_episodic_summaries(target, now).map(drop)),
            ("mark_episodes_promoted", store.mark_episodes_promoted(target, &["e".into()], now).map(drop)),
            ("merge_entity", store.merge_entity(target, "a", "b", "r", now).map(drop)),
            ("unmerge_entity", store.unmerge_entity(target, "a").map(drop)),
            ("delete_room_centroid", store.delete_room_centroid(target, "w", "r").map(drop)),
            ("set_identity", store.set_identity(target, &Identity::parse("forged").unwrap(), now).map(drop)),
            ("import", store.import(&[mempalace_store::PalaceRecord::Drawer(Box::new(drawer.clone()))]).map(drop)),
            ("set_limits", store.set_limits(target, &Limits::default()).map(drop)),
            (
                "put_grant",
                store
                    .put_grant(&mempalace_core::tenancy::Grant {
                        workspace: target.clone(),
                        member: Member::Principal(pid("bob")),
                        role: Role::Owner,
                        granted_at: now,
                        granted_by: "x".into(),
                    })
                    .map(drop),
            ),
            ("verify", store.verify().map(drop)),
            ("rebuild_derived", store.rebuild_derived().map(drop)),
            ("try_start_job", store.try_start_job("j", 1, "h", std::time::Duration::from_secs(1), now).map(drop)),
            (
                "append_audit",
                store
                    .append_audit(&mempalace_core::tenancy::AuditEntry {
                        seq: 0,
                        at: now,
                        workspace: target.to_string(),
                        actor: "forged".into(),
                        action: "x".into(),
                        target: "x".into(),
                        count: 1,
                    })
                    .map(drop),
            ),
        ]
    };
    // alice writes to team-ws, but not to ops-ws.
    for (name, result) in writes(alice.store(), &other, &forged_drawer) {
        store_denied(result, &format!("{name} on a forged workspace"));
    }
    // bob reads team-ws but writes nothing there.
    let bob = team.palace("bob");
    for (name, result) in writes(bob.store(), &ws("team-ws"), &drawer) {
        store_denied(result, &format!("{name} as a reader"));
    }
    assert_eq!(before, team.snapshot(), "nothing refused was written");
}

fn limits_rates_and_the_audit_trail(backend: Backend) {
    let team = team(backend);
    let alice = team.palace("alice");
    let local = Caller::Local;
    let workspace = ws("team-ws");
    file(&alice, "The first shared note about the roadmap.", None).unwrap();
    let used = team.tenancy.limits(&team.caller("bob"), &workspace).unwrap().usage;
    assert_eq!(used.drawers, 1);
    // Owners set limits; a writer may not.
    denied(team.tenancy.set_limits(&team.caller("alice"), &workspace, Limits::default()), "a writer setting limits");
    let limits = Limits { drawers: Some(2), ..Limits::default() };
    team.tenancy.set_limits(&local, &workspace, limits).unwrap();
    let alice = team.palace("alice");
    file(&alice, "The second shared note about hiring.", None).unwrap();
    let before = team.snapshot();
    match file(&alice, "A third note would pass the limit.", None) {
        Err(EngineError::Store(StoreError::OverLimit(exceeded))) => {
            assert_eq!((exceeded.what, exceeded.limit, exceeded.wanted), ("drawers", 2, 3));
        }
        other => panic!("expected the drawer limit, got {other:?}"),
    }
    assert_eq!(before, team.snapshot(), "a refused write leaves nothing");
    let report = team.tenancy.limits(&team.caller("carol"), &workspace).unwrap();
    assert!(report.stored && report.limits.drawers == Some(2) && report.usage.drawers == 2);

    // The request rate: a window of two requests a minute.
    team.tenancy.set_limits(&local, &workspace, Limits { requests_per_minute: Some(2), ..Limits::default() }).unwrap();
    set_now("2026-05-01T09:30:00Z");
    let bob = team.caller("bob");
    team.tenancy.scope(&bob, None).unwrap();
    team.tenancy.scope(&bob, None).unwrap();
    match team.tenancy.scope(&bob, None) {
        Err(EngineError::RateLimited { limit: 2, retry_after_s, .. }) => assert_eq!(retry_after_s, 60),
        other => panic!("expected the rate limit, got {other:?}"),
    }
    set_now("2026-05-01T09:31:00Z");
    assert!(team.tenancy.scope(&bob, None).is_ok(), "a new minute, a new allowance");

    // The trail: who filed what, grants and limits; refused calls absent;
    // owners read their workspace's trail, others cannot.
    let filter = AuditFilter { workspace: Some("team-ws".into()), limit: 100, ..AuditFilter::default() };
    let trail = team.tenancy.audit_log(&local, &filter).unwrap();
    let actions: Vec<(String, String)> = trail.iter().map(|e| (e.actor.clone(), e.action.clone())).collect();
    assert_eq!(actions.iter().filter(|(who, what)| who == "alice" && what == "drawer.put").count(), 2, "{actions:?}");
    assert!(actions.contains(&("local".into(), "limits.set".into())), "{actions:?}");
    assert!(actions.contains(&("local".into(), "grant.set".into())), "{actions:?}");
    assert!(trail.windows(2).all(|w| w[0].seq > w[1].seq), "newest first");
    denied(team.tenancy.audit_log(&team.caller("alice"), &filter), "a writer reading the trail");
    team.tenancy.grant(&local, &workspace, Member::Principal(pid("carol")), Role::Owner).unwrap();
    assert!(!team.tenancy.audit_log(&team.caller("carol"), &filter).unwrap().is_empty(), "owners read theirs");
    let all = AuditFilter { limit: 100, ..AuditFilter::default() };
    denied(team.tenancy.audit_log(&team.caller("carol"), &all), "an owner reading everyone's trail");
    assert!(team.tenancy.audit_log(&team.caller("root"), &all).unwrap().iter().any(|e| e.action == "user.add"));
}

on_both!(
    tokens_are_checked_and_single_user_palaces_need_none,
    roles_private_drawers_and_personal_workspaces_hold,
    every_store_path_refuses_a_forged_workspace_and_a_reader_cannot_write,
    limits_rates_and_the_audit_trail
);
