//! The conformance suite every backend must pass.
//!
//! Each `check_*` function takes a fresh, empty store and panics (like a
//! test assertion) when the backend breaks a promise of the traits. A
//! backend's test module only builds stores and calls [`run_all`] or the
//! individual checks; the checks themselves never know which backend runs.
//!
//! [`conformance_suite!`](crate::conformance_suite) makes one `#[test]` of
//! every check for a backend, so no backend can miss one.

use std::sync::Arc;

use mempalace_core::centroid::{Centroid, RoomCentroid};
use mempalace_core::coordination::{Artifact, Event, EventDraft, EventStatus, StoredEvent};
use mempalace_core::kg::{Entity, Triple, entity_id};
use mempalace_core::session::{EpisodicSummary, Session, SessionStatus};
use mempalace_core::time::{DayEdge, parse_timestamp};
use mempalace_core::tunnel::{Place, Tunnel};
use mempalace_core::{
    Confidence, Content, Drawer, DrawerId, DrawerState, DrawerStatus, DrawerTag, Embedding, Hall, Identity, Importance,
    MemoryType, Perception, PerceptionType, PipelineTier, Room, TagSource, Timestamp, Wing, WorkspaceId,
};
use serde_json::json;

use crate::{
    AppendOutcome, DrawerFilter, EventFilter, IdentityRecord, JobRun, PalaceRecord, PipelineCounts, PutOutcome, Store,
};

/// One `#[test]` per conformance check, each on a fresh store from
/// `$fresh`: a function returning `Option<(guard, Arc<dyn Store>)>` (the
/// guard keeps the store's file or schema alive; `None` skips the test,
/// for a backend whose server was deliberately left out).
#[macro_export]
macro_rules! conformance_suite {
    ($fresh:path) => {
        $crate::conformance_suite!(@each $fresh;
            check_drawer_round_trip,
            check_put_is_idempotent,
            check_taxonomy_follows_writes,
            check_workspace_isolation,
            check_identity,
            check_scan_pages_through_everything,
            check_import_round_trip,
            check_verify_and_rebuild,
            check_embedding_lookup_and_backfill,
            check_lexical_search_and_filters,
            check_term_frequencies,
            check_vector_change_feed,
            check_listings_and_access,
            check_knowledge_graph,
            check_mentions_halls_and_tunnels,
            check_pages_replacement_and_sessions,
            check_source_cursors,
            check_put_and_remove,
            check_claims,
            check_periodic_jobs,
            check_pipeline_counts,
            check_maintenance,
            check_consolidation,
            check_events_round_trip_and_filters,
            check_event_artifacts_and_references,
            check_entity_merge_and_unmerge,
            check_centroids,
            check_directory,
            check_usage_and_audit,
        );

        #[test]
        fn check_concurrent_writers() {
            if let Some((_guard, store)) = $fresh() {
                $crate::conformance::check_concurrent_writers(store);
            }
        }

        #[test]
        fn check_event_cursor_under_concurrent_appends() {
            if let Some((_guard, store)) = $fresh() {
                $crate::conformance::check_event_cursor_under_concurrent_appends(store);
            }
        }
    };
    (@each $fresh:path; $($name:ident),+ $(,)?) => {
        $(
            #[test]
            fn $name() {
                if let Some((_guard, store)) = $fresh() {
                    $crate::conformance::$name(store.as_ref());
                }
            }
        )+
    };
}

fn at(text: &str) -> Timestamp {
    parse_timestamp(text, "test time", DayEdge::Start).expect("test timestamps are valid")
}

fn workspace(name: &str) -> WorkspaceId {
    WorkspaceId::parse(name).expect("test workspace ids are valid")
}

/// A minimal active drawer.
pub fn drawer(ws: &WorkspaceId, wing: &str, room: &str, text: &str) -> Drawer {
    Drawer::new(
        ws.clone(),
        Wing::parse(wing).expect("test wing"),
        Room::parse(room).expect("test room"),
        Content::parse(text).expect("test text"),
        "conformance",
        at("2025-03-01T10:00:00Z"),
    )
}

/// A drawer with every optional field set, to catch a column that is not
/// stored or not read back.
pub fn full_drawer(ws: &WorkspaceId) -> Drawer {
    let mut drawer = drawer(ws, "lab", "gripper", "The gripper works best at 12.5 N — 数据库 notes.");
    drawer.hall = Some(Hall::parse("hall_facts").expect("test hall"));
    drawer.embedding = Some(Embedding { model: "test-model".into(), vector: vec![0.5, -0.25, 0.125, 1.0e-7] });
    drawer.importance = Importance::new(4.5).expect("test importance");
    drawer.memory_type = Some(MemoryType::Decision);
    drawer.pipeline_tier = PipelineTier::Heuristic;
    drawer.state = DrawerState::Processed;
    drawer.summary = Some("gripper force".into());
    drawer.source_file = Some("/home/alex/notes.md".into());
    drawer.added_by_agent = Some("agent-7".into());
    drawer.owner_user_id = Some("alex".into());
    drawer.updated_at = at("2025-03-02T11:00:00.123456Z");
    drawer.last_accessed_at = Some(at("2025-03-03T12:00:00Z"));
    drawer.access_count = 7;
    drawer.superseded_by = Some(DrawerId::parse("drawer_lab_gripper_newer").expect("test id"));
    drawer.cluster_id = Some(DrawerId::parse("drawer_lab_gripper_canonical").expect("test id"));
    drawer.retry_count = 2;
    drawer.entity_count = 3;
    drawer.triple_count = 1;
    drawer.confidence = Confidence::new(0.75).expect("test confidence");
    drawer.decay_rate = 0.02;
    drawer.status_reason = Some("kept for review".into());
    drawer.session_id = Some("session-1".into());
    drawer.context = json!({"spatial": {"x": 1.5, "y": -2}, "task": "grasp"}).as_object().cloned().expect("object");
    drawer.tags = vec![
        DrawerTag { tag: "debug".into(), source: TagSource::Auto },
        DrawerTag { tag: "gotcha".into(), source: TagSource::User },
    ];
    drawer.perception = Some(Perception {
        perception_type: PerceptionType::Tactile,
        data: Some(vec![0, 1, 2, 255]),
        metadata: Some("{\"units\":\"N\"}".into()),
    });
    drawer.source_mtime = Some(1_795_306_322.990_698);
    drawer.chunk_index = Some(22);
    drawer.line_start = Some(336);
    drawer.line_end = Some(356);
    drawer.content_date = Some("2026-11-22".into());
    drawer.entities = vec!["Alice".into(), "Gripper".into()];
    drawer
}

/// Every record kind, for import/export checks.
pub fn sample_records(ws: &WorkspaceId) -> Vec<PalaceRecord> {
    let created = at("2025-01-01T00:00:00Z");
    let backend = entity_id("Crawbl Backend");
    let mongo = entity_id("MongoDB");
    let place = |wing: &str, room: &str| Place {
        wing: Wing::parse(wing).expect("test wing"),
        room: Room::parse(room).expect("test room"),
    };
    let (a, b) = Tunnel::ordered(place("lab", "gripper"), place("lab_notes", "general"));
    let tunnel_id = Tunnel::make_id(&a, &b);
    let valid_from = at("2024-06-01");
    vec![
        PalaceRecord::Drawer(Box::new(full_drawer(ws))),
        PalaceRecord::Identity(IdentityRecord {
            workspace_id: ws.clone(),
            identity: Identity::parse("I am Atlas.").expect("test identity"),
            updated_at: created,
        }),
        PalaceRecord::Entity(Entity {
            workspace_id: ws.clone(),
            id: backend.clone(),
            name: "Crawbl Backend".into(),
            entity_type: "service".into(),
            properties: json!({"team": "core"}).as_object().cloned().expect("object"),
            embedding: None,
            created_at: created,
        }),
        PalaceRecord::Entity(Entity {
            workspace_id: ws.clone(),
            id: mongo.clone(),
            name: "MongoDB".into(),
            entity_type: "technology".into(),
            properties: Default::default(),
            embedding: Some(Embedding { model: "m".into(), vector: vec![1.0, 0.0] }),
            created_at: created,
        }),
        PalaceRecord::Triple(Triple {
            workspace_id: ws.clone(),
            id: Triple::make_id(&backend, "uses", &mongo, Some(&valid_from)),
            subject: backend.clone(),
            predicate: "uses".into(),
            object: mongo.clone(),
            valid_from: Some(valid_from),
            valid_to: Some(parse_timestamp("2025-01-14", "t", DayEdge::End).expect("date")),
            confidence: Confidence::new(0.9).expect("confidence"),
            source_drawer_id: None,
            source: Some("cli".into()),
            created_at: created,
        }),
        PalaceRecord::EntityAlias(Box::new(crate::AliasRecord {
            alias: mempalace_core::kg::EntityAlias {
                alias: Entity {
                    workspace_id: ws.clone(),
                    id: entity_id("Mongo"),
                    name: "Mongo".into(),
                    entity_type: "technology".into(),
                    properties: json!({"spelled": "short"}).as_object().cloned().expect("object"),
                    embedding: Some(Embedding { model: "m".into(), vector: vec![0.5, 0.5] }),
                    created_at: created,
                },
                canonical_id: mongo.clone(),
                reason: "abbreviation".into(),
                merged_at: at("2025-01-02T00:00:00Z"),
                moved_triples: 1,
                moved_mentions: 0,
            },
            moves: vec![crate::AliasMove {
                kind: crate::AliasMoveKind::Object,
                ref_id: Triple::make_id(&backend, "uses", &mongo, Some(&valid_from)),
            }],
        })),
        PalaceRecord::Session(Session {
            workspace_id: ws.clone(),
            id: "session-1".into(),
            agent: Some("atlas".into()),
            user_id: Some("alex".into()),
            context: json!({"task": "grasp"}).as_object().cloned().expect("object"),
            status: SessionStatus::Ended,
            outcome_score: Some(0.8),
            session_count: 1,
            started_at: created,
            ended_at: Some(at("2025-01-01T01:00:00Z")),
        }),
        PalaceRecord::EpisodicSummary(EpisodicSummary {
            workspace_id: ws.clone(),
            id: "episode-1".into(),
            session_id: "session-1".into(),
            source_id: Some("session-1:0".into()),
            agent: Some("atlas".into()),
            user_id: None,
            summary: "Calibrated the gripper.".into(),
            l0_abstract: "Calibrated the gripper.".into(),
            key_topics: vec!["Gripper".into()],
            created_at: created,
            expires_at: Some(at("2025-04-01T00:00:00Z")),
            promoted_at: None,
        }),
        PalaceRecord::Tunnel(Tunnel {
            workspace_id: ws.clone(),
            id: tunnel_id,
            a,
            b,
            label: Some("gripper docs".into()),
            created_by: Some("atlas".into()),
            created_at: created,
        }),
        PalaceRecord::Centroid(Centroid {
            workspace_id: ws.clone(),
            memory_type: MemoryType::Fact,
            embedding: Embedding { model: "m".into(), vector: vec![0.1, 0.2] },
            sample_count: 64,
            computed_at: created,
            source_hash: "abc".into(),
        }),
        PalaceRecord::Artifact(Box::new(artifact(ws, "art_20250101T000000_00000000000a", "--- a\r\n+++ b\n"))),
        PalaceRecord::Event(Box::new(full_event(
            ws,
            "evt_20250101T000000_00000000000b",
            &["art_20250101T000000_00000000000a"],
        ))),
    ]
}

/// A patch artifact made at a fixed time.
pub fn artifact(ws: &WorkspaceId, id: &str, content: &str) -> Artifact {
    Artifact::parse(
        ws.clone(),
        id.into(),
        at("2025-01-01T00:00:00Z"),
        "patch",
        content.into(),
        "agent-a",
        Some(json!({"branch": "main", "lines": [1, 2]})),
    )
    .expect("test artifact")
}

/// An event of `draft` made at `created`.
pub fn coordination_event(ws: &WorkspaceId, id: &str, created: &str, draft: EventDraft) -> Event {
    Event::parse(ws.clone(), id.into(), at(created), draft).expect("test event")
}

/// A minimal event: `kind` in `stream`/`room` from `from` to `to`.
pub fn event(ws: &WorkspaceId, id: &str, kind: &str, from: &str, to: Option<&str>) -> Event {
    coordination_event(
        ws,
        id,
        "2025-01-01T00:00:00Z",
        EventDraft {
            event_type: kind.into(),
            stream: "project/demo".into(),
            room: "delegation".into(),
            from_agent: from.into(),
            to_agent: to.map(str::to_string),
            ..EventDraft::default()
        },
    )
}

/// An event with every optional field set (artifact ids in the sorted
/// order listings return).
pub fn full_event(ws: &WorkspaceId, id: &str, artifact_ids: &[&str]) -> Event {
    coordination_event(
        ws,
        id,
        "2025-01-01T00:00:00Z",
        EventDraft {
            event_type: "patch.ready".into(),
            stream: "project/mempalace".into(),
            room: "patches".into(),
            topic: Some("auth-v2".into()),
            from_agent: "windows:codex:mempalace".into(),
            to_agent: Some("mac-codex".into()),
            correlation_id: Some("task_fix_it_0a1b2c3d".into()),
            branch: Some("fix/search".into()),
            base_commit: Some("0123abc".into()),
            status: Some("ready".into()),
            body: Some("Ready: ünïcode — 数据库\r\nsecond line\n".into()),
            metadata: Some(json!({"ack_of": null, "nested": {"n": 1.5, "list": ["x", true]}})),
            artifact_ids: Some(json!(artifact_ids)),
        },
    )
}

fn appended(outcome: AppendOutcome, event: &Event) -> StoredEvent {
    match outcome {
        AppendOutcome::Appended(seq) => StoredEvent { seq, event: event.clone() },
        AppendOutcome::UnknownArtifact(id) => panic!("the event's artifacts exist, yet {id} was reported unknown"),
    }
}

fn ids(events: &[StoredEvent]) -> Vec<&str> {
    events.iter().map(|stored| stored.event.id.as_str()).collect()
}

/// A drawer stored with every field comes back identical.
pub fn check_drawer_round_trip(store: &dyn Store) {
    let ws = workspace("default");
    let drawer = full_drawer(&ws);
    assert_eq!(store.put_drawers(std::slice::from_ref(&drawer)).expect("put"), vec![PutOutcome::Inserted]);
    let mut back = store.drawer(&ws, &drawer.id).expect("get").expect("stored drawer is found");
    back.tags.sort();
    assert_eq!(back, drawer);
}

/// Writing the same id twice stores it once and leaves the first version.
pub fn check_put_is_idempotent(store: &dyn Store) {
    let ws = workspace("default");
    let first = drawer(&ws, "project", "notes", "same text");
    let mut second = first.clone();
    second.importance = Importance::new(1.0).expect("importance");
    let outcomes = store.put_drawers(&[first.clone(), second]).expect("put");
    assert_eq!(outcomes, vec![PutOutcome::Inserted, PutOutcome::Existing]);
    assert_eq!(store.put_drawers(std::slice::from_ref(&first)).expect("put"), vec![PutOutcome::Existing]);
    assert_eq!(store.drawer(&ws, &first.id).expect("get").expect("found").importance.get(), 3.0);
    assert_eq!(store.taxonomy(&ws).expect("taxonomy").total_drawers, 1);
}

/// Counts follow inserts, soft deletes, restores and hard deletes.
pub fn check_taxonomy_follows_writes(store: &dyn Store) {
    let ws = workspace("default");
    let drawers = vec![
        drawer(&ws, "alpha", "one", "a1"),
        drawer(&ws, "alpha", "one", "a2"),
        drawer(&ws, "alpha", "two", "a3"),
        drawer(&ws, "beta", "one", "b1"),
    ];
    store.put_drawers(&drawers).expect("put");
    let taxonomy = store.taxonomy(&ws).expect("taxonomy");
    assert_eq!(taxonomy.total_drawers, 4);
    assert_eq!(taxonomy.wings["alpha"].drawers, 3);
    assert_eq!(taxonomy.wings["alpha"].rooms["one"], 2);
    assert_eq!(taxonomy.wings["beta"].rooms["one"], 1);
    assert_eq!(taxonomy.room_count(), 3);

    let now = at("2025-05-01T00:00:00Z");
    assert!(store.set_drawer_status(&ws, &drawers[3].id, DrawerStatus::Invalidated, Some("wrong"), now).expect("soft"));
    let taxonomy = store.taxonomy(&ws).expect("taxonomy");
    assert_eq!(taxonomy.total_drawers, 3);
    assert!(!taxonomy.wings.contains_key("beta"), "an emptied wing disappears: {taxonomy:?}");
    let soft = store.drawer(&ws, &drawers[3].id).expect("get").expect("soft-deleted drawer is kept");
    assert_eq!(soft.status, DrawerStatus::Invalidated);
    assert_eq!(soft.status_reason.as_deref(), Some("wrong"));

    assert!(store.set_drawer_status(&ws, &drawers[3].id, DrawerStatus::Active, None, now).expect("restore"));
    assert_eq!(store.taxonomy(&ws).expect("taxonomy").total_drawers, 4);

    assert!(store.delete_drawer(&ws, &drawers[0].id).expect("delete"));
    assert!(!store.delete_drawer(&ws, &drawers[0].id).expect("delete twice"));
    assert!(store.drawer(&ws, &drawers[0].id).expect("get").is_none());
    let taxonomy = store.taxonomy(&ws).expect("taxonomy");
    assert_eq!(taxonomy.total_drawers, 3);
    assert_eq!(taxonomy.wings["alpha"].rooms["one"], 1);
    let missing = DrawerId::parse("drawer_nope").expect("id");
    assert!(!store.set_drawer_status(&ws, &missing, DrawerStatus::Invalidated, None, now).expect("soft missing"));
    assert_all_healthy(store);
}

/// Nothing written in one workspace is visible from another.
pub fn check_workspace_isolation(store: &dyn Store) {
    let team_a = workspace("team-a");
    let team_b = workspace("team-b");
    let secret = drawer(&team_a, "private", "plans", "the launch date is March 3");
    store.put_drawers(std::slice::from_ref(&secret)).expect("put");
    store
        .set_identity(&team_a, &Identity::parse("I am A").expect("identity"), at("2025-01-01T00:00:00Z"))
        .expect("identity");
    store.import(&sample_records(&team_a)).expect("import");

    assert!(store.drawer(&team_b, &secret.id).expect("get").is_none());
    assert!(store.drawers(&team_b, std::slice::from_ref(&secret.id)).expect("get").is_empty());
    assert!(store.scan_drawers(&team_b, None, 100).expect("scan").is_empty());
    assert_eq!(store.taxonomy(&team_b).expect("taxonomy").total_drawers, 0);
    assert!(store.identity(&team_b).expect("identity").is_none());
    assert!(store.entities(&team_b).expect("entities").is_empty());
    assert!(store.triples(&team_b).expect("triples").is_empty());
    assert!(store.sessions(&team_b).expect("sessions").is_empty());
    assert!(store.episodic_summaries(&team_b).expect("episodes").is_empty());
    assert!(store.tunnels(&team_b).expect("tunnels").is_empty());
    assert!(store.centroids(&team_b).expect("centroids").is_empty());
    assert!(!store.delete_drawer(&team_b, &secret.id).expect("delete"));
    assert!(store.drawer(&team_a, &secret.id).expect("get").is_some());

    // The same id may exist in both workspaces independently.
    let mut twin = secret.clone();
    twin.workspace_id = team_b.clone();
    assert_eq!(store.put_drawers(&[twin]).expect("put"), vec![PutOutcome::Inserted]);
    assert!(store.delete_drawer(&team_b, &secret.id).expect("delete"));
    assert!(store.drawer(&team_a, &secret.id).expect("get").is_some());
    let workspaces = store.workspaces().expect("workspaces");
    assert!(workspaces.contains(&team_a) && workspaces.contains(&team_b), "{workspaces:?}");
}

/// Identity is set, read back and replaced.
pub fn check_identity(store: &dyn Store) {
    let ws = workspace("default");
    assert!(store.identity(&ws).expect("identity").is_none());
    store.set_identity(&ws, &Identity::parse("first").expect("id"), at("2025-01-01T00:00:00Z")).expect("set");
    store.set_identity(&ws, &Identity::parse("second").expect("id"), at("2025-01-02T00:00:00Z")).expect("set");
    let record = store.identity(&ws).expect("identity").expect("identity set");
    assert_eq!(record.identity.as_str(), "second");
    assert_eq!(record.updated_at, at("2025-01-02T00:00:00Z"));
}

/// Scans page through every drawer exactly once, in id order, whatever its status.
pub fn check_scan_pages_through_everything(store: &dyn Store) {
    let ws = workspace("default");
    let drawers: Vec<Drawer> = (0..57).map(|i| drawer(&ws, "w", "r", &format!("drawer number {i}"))).collect();
    store.put_drawers(&drawers).expect("put");
    store
        .set_drawer_status(&ws, &drawers[5].id, DrawerStatus::Superseded, None, at("2025-06-01T00:00:00Z"))
        .expect("supersede");
    let mut seen = Vec::new();
    let mut after: Option<DrawerId> = None;
    loop {
        let page = store.scan_drawers(&ws, after.as_ref(), 10).expect("scan");
        if page.is_empty() {
            break;
        }
        after = page.last().map(|d| d.id.clone());
        seen.extend(page.into_iter().map(|d| d.id));
    }
    let mut expected: Vec<DrawerId> = drawers.iter().map(|d| d.id.clone()).collect();
    expected.sort();
    assert_eq!(seen, expected);
}

/// Importing inserts absent keys and leaves present ones; every kind round-trips.
pub fn check_import_round_trip(store: &dyn Store) {
    let ws = workspace("default");
    let records = sample_records(&ws);
    let counts = store.import(&records).expect("import");
    assert_eq!((counts.inserted, counts.existing), (records.len() as u64, 0));
    let again = store.import(&records).expect("import again");
    assert_eq!((again.inserted, again.existing), (0, records.len() as u64));

    for record in &records {
        match record {
            PalaceRecord::Drawer(expected) => {
                let mut back = store.drawer(&ws, &expected.id).expect("get").expect("found");
                back.tags.sort();
                assert_eq!(&back, expected.as_ref());
            }
            PalaceRecord::Identity(expected) => {
                assert_eq!(&store.identity(&ws).expect("identity").expect("set"), expected)
            }
            PalaceRecord::Entity(expected) => {
                assert!(store.entities(&ws).expect("entities").contains(expected), "{expected:?}")
            }
            PalaceRecord::Triple(expected) => {
                assert!(store.triples(&ws).expect("triples").contains(expected), "{expected:?}")
            }
            PalaceRecord::Session(expected) => {
                assert!(store.sessions(&ws).expect("sessions").contains(expected), "{expected:?}")
            }
            PalaceRecord::EpisodicSummary(expected) => {
                assert!(store.episodic_summaries(&ws).expect("episodes").contains(expected), "{expected:?}")
            }
            PalaceRecord::Tunnel(expected) => {
                assert!(store.tunnels(&ws).expect("tunnels").contains(expected), "{expected:?}")
            }
            PalaceRecord::Centroid(expected) => {
                assert!(store.centroids(&ws).expect("centroids").contains(expected), "{expected:?}")
            }
            PalaceRecord::Artifact(expected) => {
                assert_eq!(&store.artifact(&ws, &expected.id).expect("artifact").expect("found"), expected.as_ref())
            }
            PalaceRecord::Event(expected) => {
                assert_eq!(&store.event(&ws, &expected.id).expect("event").expect("found").event, expected.as_ref())
            }
            PalaceRecord::EntityAlias(expected) => {
                assert_eq!(store.alias_records(&ws).expect("aliases"), vec![expected.as_ref().clone()])
            }
        }
    }
    assert_all_healthy(store);
    // What the merge moved came along: unmerging moves the fact's object
    // back to the alias, as it would have in the exporting palace.
    let unmerged = store.unmerge_entity(&ws, &entity_id("Mongo")).expect("unmerge").expect("an alias");
    assert_eq!(unmerged.triples, 1, "{unmerged:?}");
    let triples = store.triples(&ws).expect("triples");
    assert_eq!(triples.iter().filter(|t| t.object == entity_id("Mongo")).count(), 1, "{triples:?}");
    assert!(store.entities(&ws).expect("entities").iter().any(|e| e.name == "Mongo"));
    assert_all_healthy(store);
}

/// A fresh store and a store after writes pass every check; a rebuild keeps
/// every drawer.
pub fn check_verify_and_rebuild(store: &dyn Store) {
    assert_all_healthy(store);
    let ws = workspace("default");
    let drawers: Vec<Drawer> =
        (0..20).map(|i| drawer(&ws, "w", &format!("r{}", i % 3), &format!("text {i}"))).collect();
    store.put_drawers(&drawers).expect("put");
    store.delete_drawer(&ws, &drawers[0].id).expect("delete");
    assert_all_healthy(store);
    let checks = store.rebuild_derived().expect("rebuild");
    assert!(checks.iter().all(|c| c.ok), "{checks:?}");
    assert_eq!(store.taxonomy(&ws).expect("taxonomy").total_drawers, 19);
    assert_eq!(store.scan_drawers(&ws, None, 100).expect("scan").len(), 19);
}

/// Writers on several threads at once lose nothing.
pub fn check_concurrent_writers(store: Arc<dyn Store>) {
    let ws = workspace("default");
    let threads: Vec<_> = (0..4)
        .map(|thread| {
            let store = Arc::clone(&store);
            let ws = ws.clone();
            std::thread::spawn(move || {
                for i in 0..100 {
                    let d = drawer(&ws, "w", &format!("t{thread}"), &format!("thread {thread} drawer {i}"));
                    assert_eq!(store.put_drawers(&[d]).expect("put"), vec![PutOutcome::Inserted]);
                    assert!(store.taxonomy(&ws).expect("taxonomy").total_drawers > i);
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().expect("writer thread panicked");
    }
    assert_eq!(store.taxonomy(&ws).expect("taxonomy").total_drawers, 400);
    assert_all_healthy(store.as_ref());
}

/// Vectors are found by content hash (drawers first, then the cache), and
/// re-embedding sees exactly the drawers that lack the model's vector.
pub fn check_embedding_lookup_and_backfill(store: &dyn Store) {
    let ws = workspace("default");
    let other = workspace("other");
    let mut with_vector = drawer(&ws, "w", "r", "has a vector");
    with_vector.embedding = Some(Embedding { model: "m1".into(), vector: vec![0.6, 0.8] });
    let without = drawer(&ws, "w", "r", "has no vector");
    store.put_drawers(&[with_vector.clone(), without.clone()]).expect("put");
    let hashes = vec![with_vector.content_hash.clone(), without.content_hash.clone()];
    let found = store.embeddings_by_hash(&ws, "m1", &hashes).expect("lookup");
    assert_eq!(found.len(), 1);
    assert_eq!(found[&with_vector.content_hash], vec![0.6, 0.8]);
    assert!(store.embeddings_by_hash(&ws, "m2", &hashes).expect("lookup").is_empty(), "models never mix");
    assert!(store.embeddings_by_hash(&other, "m1", &hashes).expect("lookup").is_empty(), "workspaces never mix");

    let missing = store.drawers_missing_embedding(&ws, "m1", 10).expect("missing");
    assert_eq!(missing.iter().map(|(id, _)| id.clone()).collect::<Vec<_>>(), vec![without.id.clone()]);
    assert_eq!(missing[0].1, without.content);
    assert_eq!(store.drawers_missing_embedding(&ws, "m2", 10).expect("missing").len(), 2);
    assert_eq!(store.drawers_missing_embedding(&ws, "m2", 1).expect("missing").len(), 1);

    let updated = store
        .set_embeddings(&ws, &[(without.id.clone(), Embedding { model: "m1".into(), vector: vec![1.0, 0.0] })])
        .expect("set");
    assert_eq!(updated, 1);
    assert!(store.drawers_missing_embedding(&ws, "m1", 10).expect("missing").is_empty());
    assert_eq!(store.embedding_models(&ws).expect("models"), vec![(Some("m1".to_string()), 2)]);
    let back = store.drawer(&ws, &without.id).expect("get").expect("found");
    assert_eq!(back.embedding.expect("vector").vector, vec![1.0, 0.0]);

    let loose = mempalace_core::ContentHash::of("a text that is not a drawer");
    store.cache_embeddings(&ws, "m1", &[(loose.clone(), vec![0.0, 1.0])], at("2025-01-01T00:00:00Z")).expect("cache");
    store.cache_embeddings(&ws, "m1", &[(loose.clone(), vec![0.0, -1.0])], at("2025-01-02T00:00:00Z")).expect("cache");
    let found = store.embeddings_by_hash(&ws, "m1", std::slice::from_ref(&loose)).expect("lookup");
    assert_eq!(found[&loose], vec![0.0, -1.0]);
    assert!(store.embeddings_by_hash(&other, "m1", &[loose]).expect("lookup").is_empty());

    // A vector made in context (the drawer names the one before it) is not
    // the vector of its content: it is never handed to the same text.
    let mut in_context = drawer(&ws, "w", "convo", "Bob: Lisbon, with my sister.");
    in_context.context.insert(mempalace_core::exchange::PRECEDED_BY.into(), "some-earlier-drawer".into());
    in_context.embedding = Some(Embedding { model: "m1".into(), vector: vec![0.8, 0.6] });
    store.put_drawers(std::slice::from_ref(&in_context)).expect("put");
    let hash = std::slice::from_ref(&in_context.content_hash);
    assert!(store.embeddings_by_hash(&ws, "m1", hash).expect("lookup").is_empty(), "a vector in context is not reused");
    let mut plain = drawer(&ws, "w", "notes", "Bob: Lisbon, with my sister.");
    plain.embedding = Some(Embedding { model: "m1".into(), vector: vec![0.0, 1.0] });
    store.put_drawers(std::slice::from_ref(&plain)).expect("put");
    assert_eq!(store.embeddings_by_hash(&ws, "m1", hash).expect("lookup")[&plain.content_hash], vec![0.0, 1.0]);
}

/// BM25 finds drawers by words, ranks the better match first, honours
/// every filter and never crosses workspaces.
pub fn check_lexical_search_and_filters(store: &dyn Store) {
    let ws = workspace("default");
    let mut decision =
        drawer(&ws, "project", "decisions", "We chose PostgreSQL over MongoDB for the backend database.");
    decision.memory_type = Some(MemoryType::Decision);
    decision.tags = vec![DrawerTag { tag: "database".into(), source: TagSource::User }];
    decision.filed_at = at("2025-01-10T00:00:00Z");
    let mut gripper = drawer(&ws, "lab", "gripper", "The gripper force sensor was recalibrated; error E4471 is gone.");
    gripper.filed_at = at("2025-03-10T00:00:00Z");
    gripper.confidence = Confidence::new(0.4).expect("confidence");
    let mut private = drawer(&ws, "project", "notes", "Alex privately notes the PostgreSQL password rotation.");
    private.owner_user_id = Some("alex".into());
    let mention = drawer(&ws, "project", "notes", "Someone mentioned databases once.");
    let chinese = drawer(&ws, "project", "notes", "我们决定使用数据库来保存记忆");
    let other = drawer(&workspace("other"), "project", "decisions", "PostgreSQL in another workspace.");
    store
        .put_drawers(&[decision.clone(), gripper.clone(), private.clone(), mention, chinese.clone(), other])
        .expect("put");
    let search = |terms: &[&str], filter: &DrawerFilter| -> Vec<DrawerId> {
        let terms: Vec<String> = terms.iter().map(|t| t.to_string()).collect();
        store.lexical_search(&ws, &terms, filter, 10).expect("search").into_iter().map(|(id, _)| id).collect()
    };
    let all = DrawerFilter::default();
    assert_eq!(search(&["postgresql"], &all), vec![decision.id.clone()], "owned drawers are hidden from others");
    assert_eq!(search(&["e4471"], &all), vec![gripper.id.clone()], "exact codes match");
    assert_eq!(search(&["数据库"], &all), vec![chinese.id.clone()], "two-character Chinese words match");
    assert_eq!(search(&["databases"], &all).len(), 2, "porter stemming: database ~ databases");
    let ranked = store.lexical_search(&ws, &["postgresql".into(), "backend".into()], &all, 10).expect("search");
    assert!(ranked[0].1 > 0.0, "scores are higher-is-better");
    let viewer = DrawerFilter { viewer: Some("alex".into()), ..DrawerFilter::default() };
    assert_eq!(search(&["postgresql"], &viewer).len(), 2, "the owner sees their drawer");
    let by_wing = DrawerFilter { wings: vec!["lab".into()], ..DrawerFilter::default() };
    assert!(search(&["postgresql"], &by_wing).is_empty());
    let by_type = DrawerFilter { memory_types: vec![MemoryType::Decision], ..DrawerFilter::default() };
    assert_eq!(search(&["database", "gripper"], &by_type), vec![decision.id.clone()]);
    let by_tag = DrawerFilter { tags: vec!["database".into()], ..DrawerFilter::default() };
    assert_eq!(search(&["database", "gripper"], &by_tag), vec![decision.id.clone()]);
    let by_time = DrawerFilter { filed_after: Some(at("2025-03-05T00:00:00Z")), ..DrawerFilter::default() };
    assert_eq!(search(&["database", "gripper"], &by_time), vec![gripper.id.clone()]);
    let by_confidence = DrawerFilter { min_confidence: Some(0.5), ..DrawerFilter::default() };
    assert_eq!(search(&["gripper"], &by_confidence), Vec::<DrawerId>::new());
    assert!(search(&["\"NEAR(", "*"], &all).is_empty(), "terms are never read as FTS syntax");
    assert_eq!(store.filtered_ids(&ws, &by_wing).expect("ids"), vec![gripper.id.clone()]);
    store
        .set_drawer_status(&ws, &decision.id, DrawerStatus::Superseded, None, at("2025-04-01T00:00:00Z"))
        .expect("supersede");
    assert!(search(&["postgresql"], &all).is_empty(), "superseded drawers are hidden");
    let hidden = DrawerFilter { include_hidden: true, ..DrawerFilter::default() };
    assert_eq!(search(&["postgresql"], &hidden), vec![decision.id]);
}

/// Document frequencies count the drawers holding a term (stemmed like the
/// lexical index), exactly up to the caller's bound of the palace's size;
/// above it, any number above the bound.
pub fn check_term_frequencies(store: &dyn Store) {
    let ws = workspace("default");
    let mut drawers: Vec<Drawer> = (0..7)
        .map(|i| drawer(&ws, "lab", "gripper", &format!("The gripper number {i} was recalibrated after the drop.")))
        .collect();
    drawers.push(drawer(&ws, "lab", "errors", "Firmware error E4471 came back on the second gripper."));
    drawers.push(drawer(&ws, "lab", "errors", "E4471 again, after the firmware update."));
    drawers.extend((0..3).map(|i| drawer(&ws, "home", "notes", &format!("Groceries for week {i}: apples and bread."))));
    store.put_drawers(&drawers).expect("put");
    let terms: Vec<String> = ["grippers", "e4471", "absent"].map(String::from).to_vec();
    let (documents, counts) = store.term_frequencies(&terms, |_| 100).expect("frequencies");
    assert_eq!(documents, 12);
    assert_eq!(counts, vec![8, 2, 0], "exact under the bound; porter stemming: grippers ~ gripper");
    // The bound is a function of the palace's size: 12 / 4 = 3 here.
    let (documents, counts) = store.term_frequencies(&terms, |documents| documents / 4).expect("frequencies");
    assert_eq!(documents, 12);
    assert!(counts[0] > 3, "a term above the bound reports more than the bound: {counts:?}");
    assert_eq!(&counts[1..], &[2, 0], "terms under the bound stay exact");
}

/// The change feed gives an index every insert, vector change, hide and
/// delete after a revision, in order.
pub fn check_vector_change_feed(store: &dyn Store) {
    let ws = workspace("default");
    let start = store.revision().expect("revision");
    let mut a = drawer(&ws, "w", "r", "alpha");
    a.embedding = Some(Embedding { model: "m".into(), vector: vec![1.0, 0.0] });
    let b = drawer(&ws, "w", "r", "beta");
    store.put_drawers(&[a.clone(), b.clone()]).expect("put");
    let changes = store.vector_changes(&ws, "m", start, 100).expect("changes");
    assert_eq!(changes.len(), 2);
    assert_eq!(changes[0].id, a.id);
    assert_eq!(changes[0].vector, Some(vec![1.0, 0.0]));
    assert_eq!((changes[0].wing.as_str(), changes[0].room.as_str()), ("w", "r"), "the place comes with the vector");
    assert_eq!(changes[1].vector, None, "no vector of this model yet");
    assert!(changes[0].rev > start && changes[1].rev > changes[0].rev);
    let after_insert = store.revision().expect("revision");
    assert_eq!(after_insert, changes[1].rev);
    assert!(store.vector_changes(&ws, "other-model", start, 100).expect("changes").iter().all(|c| c.vector.is_none()));

    // A first access reinforces the drawer's importance: a change.
    store.touch_access(&ws, std::slice::from_ref(&b.id), at("2025-01-31T00:00:00Z")).expect("touch");
    store.set_embeddings(&ws, &[(b.id.clone(), Embedding { model: "m".into(), vector: vec![0.0, 1.0] })]).expect("set");
    store.set_drawer_status(&ws, &a.id, DrawerStatus::Invalidated, None, at("2025-02-01T00:00:00Z")).expect("hide");
    let hidden = store.revision().expect("revision");
    store.touch_access(&ws, std::slice::from_ref(&b.id), at("2025-01-31T01:00:00Z")).expect("touch");
    assert_eq!(store.revision().expect("revision"), hidden, "access tracking without reinforcement is not a change");
    let changes = store.vector_changes(&ws, "m", after_insert, 100).expect("changes");
    let summary: Vec<(DrawerId, bool)> = changes.iter().map(|c| (c.id.clone(), c.vector.is_some())).collect();
    assert_eq!(summary, vec![(b.id.clone(), true), (a.id.clone(), false)], "one entry per drawer, latest change last");

    let before_delete = store.revision().expect("revision");
    store.delete_drawer(&ws, &b.id).expect("delete");
    let changes = store.vector_changes(&ws, "m", before_delete, 100).expect("changes");
    assert_eq!(changes.len(), 1);
    assert_eq!((changes[0].id.clone(), changes[0].vector.clone()), (b.id.clone(), None), "deletes leave tombstones");
    // A drawer moved to another place in place (same id) is a change with its new place.
    let before_move = store.revision().expect("revision");
    let mut moved = a.clone();
    moved.wing = Wing::parse("elsewhere").expect("wing");
    moved.room = Room::parse("attic").expect("room");
    moved.status = DrawerStatus::Active;
    assert!(store.replace_drawer(&moved).expect("replace"));
    let changes = store.vector_changes(&ws, "m", before_move, 100).expect("changes");
    let places: Vec<(&str, &str, bool)> =
        changes.iter().map(|c| (c.wing.as_str(), c.room.as_str(), c.vector.is_some())).collect();
    assert_eq!(places, vec![("elsewhere", "attic", true)], "a move carries the new place");
    assert!(store.vector_changes(&workspace("other"), "m", start, 100).expect("changes").is_empty());
    // Limits page through the feed.
    assert_eq!(store.vector_changes(&ws, "m", start, 1).expect("changes").len(), 1);
}

/// L1 and L2 listings, and access tracking.
pub fn check_listings_and_access(store: &dyn Store) {
    let ws = workspace("default");
    let mut low = drawer(&ws, "lab", "gripper", "low importance");
    low.importance = Importance::new(1.0).expect("importance");
    let mut high = drawer(&ws, "lab", "sensors", "high importance");
    high.importance = Importance::new(5.0).expect("importance");
    let mut other_wing = drawer(&ws, "home", "garden", "middle importance elsewhere");
    other_wing.importance = Importance::new(3.0).expect("importance");
    other_wing.filed_at = at("2025-06-01T00:00:00Z");
    store.put_drawers(&[low.clone(), high.clone(), other_wing.clone()]).expect("put");
    let top: Vec<DrawerId> = store.top_drawers(&ws, None, 10).expect("top").into_iter().map(|d| d.id).collect();
    assert_eq!(top, vec![high.id.clone(), other_wing.id.clone(), low.id.clone()]);
    assert_eq!(store.top_drawers(&ws, Some("lab"), 1).expect("top")[0].id, high.id);
    let place: Vec<DrawerId> =
        store.place_drawers(&ws, "lab", None, 10).expect("place").into_iter().map(|d| d.id).collect();
    assert_eq!(place.len(), 2);
    assert_eq!(store.place_drawers(&ws, "lab", Some("gripper"), 10).expect("place")[0].id, low.id);
    let when = at("2025-07-01T12:00:00Z");
    assert_eq!(store.touch_access(&ws, &[low.id.clone(), high.id.clone()], when).expect("touch"), 2);
    store.touch_access(&ws, std::slice::from_ref(&low.id), when).expect("touch");
    let touched = store.drawer(&ws, &low.id).expect("get").expect("found");
    assert_eq!((touched.access_count, touched.last_accessed_at), (2, Some(when)));
    assert_eq!(store.touch_access(&workspace("other"), &[low.id], when).expect("touch"), 0);
}

/// Pages of drawers (newest first, filters, offset), in-place replacement
/// with its index entries, and sessions saved then updated.
pub fn check_pages_replacement_and_sessions(store: &dyn Store) {
    let ws = workspace("default");
    let mut drawers = Vec::new();
    for i in 0..5 {
        let mut d = drawer(&ws, if i < 3 { "lab" } else { "home" }, "notes", &format!("page drawer {i} zebra"));
        d.filed_at = at(&format!("2025-03-0{}T10:00:00Z", i + 1));
        drawers.push(d);
    }
    store.put_drawers(&drawers).expect("put");
    let ids = |page: Vec<Drawer>| page.into_iter().map(|d| d.id).collect::<Vec<_>>();
    let all = ids(store.page_drawers(&ws, None, None, 0, 10).expect("page"));
    let newest_first: Vec<DrawerId> = drawers.iter().rev().map(|d| d.id.clone()).collect();
    assert_eq!(all, newest_first);
    assert_eq!(ids(store.page_drawers(&ws, None, None, 1, 2).expect("page")), newest_first[1..3].to_vec());
    assert_eq!(store.page_drawers(&ws, Some("lab"), Some("notes"), 0, 10).expect("page").len(), 3);
    assert_eq!(store.page_drawers(&ws, None, Some("nowhere"), 0, 10).expect("page").len(), 0);
    assert!(store.page_drawers(&workspace("other"), None, None, 0, 10).expect("page").is_empty());

    let mut changed = store.drawer(&ws, &drawers[0].id).expect("get").expect("found");
    changed.content = Content::parse("rewritten text about giraffes").expect("content");
    changed.content_hash = mempalace_core::ContentHash::of(changed.content.as_str());
    changed.wing = Wing::parse("home").expect("wing");
    assert!(store.replace_drawer(&changed).expect("replace"));
    let read = store.drawer(&ws, &changed.id).expect("get").expect("found");
    assert_eq!((read.content.as_str(), read.wing.as_str()), ("rewritten text about giraffes", "home"));
    let taxonomy = store.taxonomy(&ws).expect("taxonomy");
    assert_eq!(taxonomy.wings.get("lab").map(|w| w.drawers), Some(2), "counts follow the move");
    assert_eq!(taxonomy.wings.get("home").map(|w| w.drawers), Some(3));
    let hits = |term: &str| {
        store.lexical_search(&ws, &[term.to_string()], &DrawerFilter::default(), 10).expect("lexical").len()
    };
    assert_eq!(hits("giraffes"), 1, "the new text is indexed");
    assert_eq!(hits("zebra"), 4, "the old text is not");
    let mut missing = changed.clone();
    missing.id = DrawerId::parse("drawer_nowhere_notes_000000000000000000000000").expect("id");
    assert!(!store.replace_drawer(&missing).expect("replace"));
    assert!(store.drawer(&ws, &missing.id).expect("get").is_none());

    let mut session = Session {
        workspace_id: ws.clone(),
        id: "episode-1".into(),
        agent: Some("arm-01".into()),
        user_id: None,
        context: serde_json::Map::new(),
        status: SessionStatus::Active,
        outcome_score: None,
        session_count: 1,
        started_at: at("2025-03-01T10:00:00Z"),
        ended_at: None,
    };
    store.save_session(&session).expect("save");
    session.status = SessionStatus::Ended;
    session.outcome_score = Some(0.75);
    session.ended_at = Some(at("2025-03-01T11:00:00Z"));
    store.save_session(&session).expect("save again");
    assert_eq!(store.sessions(&ws).expect("sessions"), vec![session]);
    assert!(store.sessions(&workspace("other")).expect("sessions").is_empty());
}

/// Source cursors are kept per workspace and source, replaced, and forgotten.
pub fn check_source_cursors(store: &dyn Store) {
    let ws = workspace("default");
    let other = workspace("other");
    let source = "/home/u/.claude/projects/p/session.jsonl";
    assert_eq!(store.source_cursor(&ws, source).expect("read"), None);
    store.set_source_cursor(&ws, source, Some(r#"{"offset":10}"#), at("2025-03-01T10:00:00Z")).expect("set");
    store.set_source_cursor(&ws, source, Some(r#"{"offset":20}"#), at("2025-03-01T10:05:00Z")).expect("replace");
    store.set_source_cursor(&other, source, Some("other's"), at("2025-03-01T10:05:00Z")).expect("set other");
    assert_eq!(store.source_cursor(&ws, source).expect("read").as_deref(), Some(r#"{"offset":20}"#));
    assert_eq!(store.source_cursor(&other, source).expect("read").as_deref(), Some("other's"));
    assert_eq!(store.source_cursor(&ws, "/another/file").expect("read"), None);
    store.set_source_cursor(&ws, source, None, at("2025-03-01T10:06:00Z")).expect("forget");
    assert_eq!(store.source_cursor(&ws, source).expect("read"), None);
    assert_eq!(store.source_cursor(&other, source).expect("read").as_deref(), Some("other's"));
}

/// A source's new version replaces its old drawers in one step: inserts
/// and removals together, other workspaces untouched.
pub fn check_put_and_remove(store: &dyn Store) {
    let ws = workspace("default");
    let old: Vec<Drawer> = (0..3).map(|i| drawer(&ws, "w", "r", &format!("old version, part {i}"))).collect();
    store.put_drawers(&old).expect("put");
    let mut elsewhere = old[0].clone();
    elsewhere.workspace_id = workspace("other");
    store.put_drawers(&[elsewhere.clone()]).expect("put other");
    let new = vec![old[0].clone(), drawer(&ws, "w", "r", "new version, part 1")];
    let remove = vec![old[1].id.clone(), old[2].id.clone(), DrawerId::parse("drawer_w_r_missing").expect("id")];
    let (outcomes, removed) = store.put_and_remove_drawers(&ws, &new, &remove).expect("replace");
    assert_eq!(outcomes, vec![PutOutcome::Existing, PutOutcome::Inserted]);
    assert_eq!(removed, 2, "the missing id is not counted");
    assert_eq!(store.taxonomy(&ws).expect("taxonomy").total_drawers, 2);
    assert!(store.drawer(&workspace("other"), &elsewhere.id).expect("read").is_some());
    assert_all_healthy(store);
}

/// Cold-path claims: raw drawers only, oldest first, never two live claims
/// on one drawer, expired claims taken over, completion only by the holder.
pub fn check_claims(store: &dyn Store) {
    let ws = workspace("default");
    let mut raw: Vec<Drawer> = (0..5)
        .map(|i| {
            let mut d = drawer(&ws, "w", "r", &format!("raw drawer {i}"));
            d.filed_at = at(&format!("2025-03-01T10:0{i}:00Z"));
            d
        })
        .collect();
    let mut done = drawer(&ws, "w", "r", "already processed");
    done.state = DrawerState::Processed;
    raw.push(done);
    store.put_drawers(&raw).expect("put");
    store.put_drawers(&[drawer(&workspace("other"), "w", "r", "raw in another workspace")]).expect("put other");
    let now = at("2025-03-02T10:00:00Z");
    let until = at("2025-03-02T10:05:00Z");
    let first = store.claim_raw_drawers(&ws, "worker-a", 3, now, until).expect("claim");
    let texts: Vec<&str> = first.iter().map(|d| d.content.as_str()).collect();
    assert_eq!(texts, vec!["raw drawer 0", "raw drawer 1", "raw drawer 2"], "oldest raw drawers first");
    let second = store.claim_raw_drawers(&ws, "worker-b", 10, now, until).expect("claim");
    let texts: Vec<&str> = second.iter().map(|d| d.content.as_str()).collect();
    assert_eq!(texts, vec!["raw drawer 3", "raw drawer 4"], "live claims are skipped; processed drawers never claimed");
    assert!(store.claim_raw_drawers(&ws, "worker-c", 10, now, until).expect("claim").is_empty());

    // worker-a completes two; its third claim expires and worker-c takes it.
    let mut finished = first[0].clone();
    finished.state = DrawerState::Processed;
    finished.pipeline_tier = PipelineTier::Heuristic;
    finished.memory_type = Some(MemoryType::Fact);
    finished.entities = vec!["PostgreSQL".into()];
    finished.entity_count = 1;
    finished.updated_at = at("2025-03-02T10:01:00Z");
    let mut failed_once = first[1].clone();
    failed_once.retry_count = 1;
    let completed = store.complete_claims(&ws, "worker-a", &[finished.clone(), failed_once]).expect("complete");
    assert_eq!(completed, vec![first[0].id.clone(), first[1].id.clone()]);
    let stored = store.drawer(&ws, &first[0].id).expect("read").expect("present");
    assert_eq!(
        (stored.state, stored.memory_type, stored.entity_count),
        (DrawerState::Processed, Some(MemoryType::Fact), 1)
    );
    assert_eq!(stored.entities, vec!["PostgreSQL".to_string()]);
    assert_eq!(
        store.drawers_mentioning(&ws, &[entity_id("PostgreSQL")], 5).expect("mentions"),
        vec![(first[0].id.clone(), 1)]
    );
    let later = at("2025-03-02T10:06:00Z");
    let retaken = store.claim_raw_drawers(&ws, "worker-c", 10, later, at("2025-03-02T10:11:00Z")).expect("claim");
    let ids: Vec<&DrawerId> = retaken.iter().map(|d| &d.id).collect();
    assert!(ids.contains(&&first[1].id), "a released raw drawer is claimable again");
    assert!(ids.contains(&&first[2].id), "an expired claim is taken over");
    assert_eq!(store.drawer(&ws, &first[1].id).expect("read").expect("present").retry_count, 1);
    assert!(
        store.complete_claims(&ws, "worker-a", &[first[2].clone()]).expect("complete").is_empty(),
        "the old holder can no longer complete a claim it lost"
    );
    assert!(store.claim_raw_drawers(&workspace("other"), "worker-a", 10, now, until).expect("claim").len() == 1);
    assert_all_healthy(store);
}

/// Maintenance: decay of old, idle drawers (with its floor), and expiry
/// of episodic summaries past their TTL; other workspaces untouched.
pub fn check_maintenance(store: &dyn Store) {
    let ws = workspace("default");
    let mut old_idle = drawer(&ws, "w", "r", "old and never read");
    old_idle.filed_at = at("2025-01-01T00:00:00Z");
    old_idle.importance = Importance::new(4.0).expect("importance");
    let mut old_read = drawer(&ws, "w", "r", "old but read yesterday");
    old_read.filed_at = at("2025-01-01T00:00:00Z");
    old_read.last_accessed_at = Some(at("2025-03-01T00:00:00Z"));
    let mut at_floor = drawer(&ws, "w", "r", "old and already at the floor");
    at_floor.filed_at = at("2025-01-01T00:00:00Z");
    at_floor.importance = Importance::new(0.3).expect("importance");
    let recent = drawer(&ws, "w", "r", "filed recently");
    let mut elsewhere = old_idle.clone();
    elsewhere.workspace_id = workspace("other");
    store
        .put_drawers(&[old_idle.clone(), old_read.clone(), at_floor.clone(), recent.clone(), elsewhere.clone()])
        .expect("put");
    let (filed_before, idle_since) = (at("2025-02-01T00:00:00Z"), at("2025-02-22T00:00:00Z"));
    assert_eq!(store.decay_importance(&ws, filed_before, idle_since, 0.98, 0.3).expect("decay"), 1);
    let importance =
        |d: &Drawer| store.drawer(&d.workspace_id, &d.id).expect("read").expect("present").importance.get();
    assert!((importance(&old_idle) - 3.92).abs() < 1e-9);
    assert!((importance(&old_read) - 3.0).abs() < 1e-9 && (importance(&recent) - 3.0).abs() < 1e-9);
    assert!((importance(&at_floor) - 0.3).abs() < 1e-9 && (importance(&elsewhere) - 4.0).abs() < 1e-9);

    let summary = |id: &str, expires: Option<&str>| EpisodicSummary {
        workspace_id: ws.clone(),
        id: id.into(),
        session_id: "s".into(),
        source_id: None,
        agent: None,
        user_id: None,
        summary: "summary".into(),
        l0_abstract: "abstract".into(),
        key_topics: Vec::new(),
        created_at: at("2025-01-01T00:00:00Z"),
        expires_at: expires.map(at),
        promoted_at: None,
    };
    let records = vec![
        PalaceRecord::EpisodicSummary(summary("expired", Some("2025-02-01T00:00:00Z"))),
        PalaceRecord::EpisodicSummary(summary("current", Some("2025-06-01T00:00:00Z"))),
        PalaceRecord::EpisodicSummary(summary("forever", None)),
    ];
    store.import(&records).expect("import");
    assert_eq!(store.expire_episodic_summaries(&ws, at("2025-03-01T00:00:00Z")).expect("expire"), 1);
    let left: Vec<String> = store.episodic_summaries(&ws).expect("read").into_iter().map(|s| s.id).collect();
    assert_eq!(left, vec!["current".to_string(), "forever".to_string()]);
    assert_all_healthy(store);
}

/// Consolidation's store operations: session activity grouped from the
/// drawers (idle sessions only, active drawers only, a wing left out),
/// summaries saved again in place and promoted once, access that
/// reinforces once a day, and prune candidates that leave `keep` drawers
/// and skip the accessed, the recent and the important; an archived
/// drawer leaves searches and counts and comes back on restore.
pub fn check_consolidation(store: &dyn Store) {
    let ws = workspace("default");
    let in_session = |text: &str, session: &str, filed: &str| {
        let mut d = drawer(&ws, "chat", "r", text);
        d.session_id = Some(session.into());
        d.filed_at = at(filed);
        d.owner_user_id = Some("alex".into());
        d
    };
    let mut memory = in_session("a memory read from session one", "one", "2025-03-01T12:00:00Z");
    memory.wing = Wing::parse("memories").expect("wing");
    let mut gone = in_session("a deleted line of session one", "one", "2025-03-01T13:00:00Z");
    gone.status = DrawerStatus::Invalidated;
    let drawers = vec![
        in_session("first line of session one", "one", "2025-03-01T10:00:00Z"),
        in_session("second line of session one", "one", "2025-03-01T10:05:00Z"),
        in_session("session two is still going", "two", "2025-03-01T11:50:00Z"),
        memory,
        gone,
        drawer(&ws, "notes", "r", "no session at all"),
    ];
    store.put_drawers(&drawers).expect("put");
    let idle = store.session_activity(&ws, at("2025-03-01T11:30:00Z"), Some("memories")).expect("activity");
    assert_eq!(idle.len(), 1, "session two is not idle yet: {idle:?}");
    assert_eq!(
        (idle[0].session_id.as_str(), idle[0].drawers, idle[0].owner_user_id.as_deref()),
        ("one", 2, Some("alex"))
    );
    assert_eq!(
        (idle[0].first_filed_at, idle[0].last_filed_at),
        (at("2025-03-01T10:00:00Z"), at("2025-03-01T10:05:00Z"))
    );
    let all = store.session_activity(&ws, at("2025-03-02T00:00:00Z"), None).expect("activity");
    let counts: Vec<(&str, u64)> = all.iter().map(|a| (a.session_id.as_str(), a.drawers)).collect();
    assert_eq!(
        counts,
        vec![("two", 1), ("one", 3)],
        "least recently active first; the memory counts without the filter"
    );
    assert!(
        store.session_activity(&workspace("other"), at("2025-03-02T00:00:00Z"), None).expect("activity").is_empty()
    );

    let mut summary = EpisodicSummary {
        workspace_id: ws.clone(),
        id: "episode_one".into(),
        session_id: "one".into(),
        source_id: Some("one:2".into()),
        agent: None,
        user_id: Some("alex".into()),
        summary: "first".into(),
        l0_abstract: "first".into(),
        key_topics: vec!["Alex".into()],
        created_at: at("2025-03-01T12:00:00Z"),
        expires_at: Some(at("2025-06-01T12:00:00Z")),
        promoted_at: None,
    };
    store.save_episodic_summary(&summary).expect("save");
    summary.summary = "first, then more".into();
    summary.source_id = Some("one:3".into());
    store.save_episodic_summary(&summary).expect("save again");
    assert_eq!(store.episodic_summaries(&ws).expect("read"), vec![summary.clone()], "saved in place");
    let ids = vec!["episode_one".to_string(), "no_such_episode".to_string()];
    assert_eq!(store.mark_episodes_promoted(&ws, &ids, at("2025-03-02T00:00:00Z")).expect("promote"), 1);
    assert_eq!(store.mark_episodes_promoted(&ws, &ids, at("2025-03-03T00:00:00Z")).expect("promote"), 0, "once");
    let promoted = store.episodic_summaries(&ws).expect("read");
    assert_eq!(promoted[0].promoted_at, Some(at("2025-03-02T00:00:00Z")));
    assert_eq!(store.mark_episodes_promoted(&workspace("other"), &ids, at("2025-03-04T00:00:00Z")).expect("p"), 0);

    let read = &drawers[0];
    let importance = |id: &DrawerId| store.drawer(&ws, id).expect("read").expect("present").importance.get();
    store.touch_access(&ws, std::slice::from_ref(&read.id), at("2025-03-05T10:00:00Z")).expect("touch");
    assert!((importance(&read.id) - (3.0 + crate::REINFORCE_STEP)).abs() < 1e-9, "a first access reinforces");
    store.touch_access(&ws, std::slice::from_ref(&read.id), at("2025-03-05T18:00:00Z")).expect("touch");
    assert!((importance(&read.id) - (3.0 + crate::REINFORCE_STEP)).abs() < 1e-9, "once a day");
    store.touch_access(&ws, std::slice::from_ref(&read.id), at("2025-03-06T19:00:00Z")).expect("touch");
    assert!((importance(&read.id) - (3.0 + 2.0 * crate::REINFORCE_STEP)).abs() < 1e-9, "the next day again");

    let prune_ws = workspace("prune");
    let mut faded: Vec<Drawer> = (0..5)
        .map(|i| {
            let mut d = drawer(&prune_ws, "w", "r", &format!("faded note number {i}"));
            d.importance = Importance::new(0.3 + f64::from(i) * 0.01).expect("importance");
            d
        })
        .collect();
    faded[4].access_count = 3;
    let mut recent = drawer(&prune_ws, "w", "r", "a faded note filed recently");
    recent.importance = Importance::new(0.3).expect("importance");
    recent.filed_at = at("2025-03-20T00:00:00Z");
    let strong = drawer(&prune_ws, "w", "r", "an important note");
    store.put_drawers(&faded).expect("put");
    store.put_drawers(&[recent, strong]).expect("put");
    let before = at("2025-03-10T00:00:00Z");
    let candidates = store.prune_candidates(&prune_ws, 0.5, 3, before, 2).expect("candidates");
    let found: Vec<&DrawerId> = candidates.iter().map(|c| &c.id).collect();
    assert_eq!(
        found,
        faded[..4].iter().map(|d| &d.id).collect::<Vec<_>>(),
        "least important first; no accessed, recent or strong"
    );
    assert!((candidates[0].importance - 0.3).abs() < 1e-9);
    let kept = store.prune_candidates(&prune_ws, 0.5, 3, before, 5).expect("candidates");
    assert_eq!(kept.len(), 2, "7 active drawers, keep 5: two may go");
    assert!(store.prune_candidates(&prune_ws, 0.5, 3, before, 7).expect("candidates").is_empty());

    let archived = &faded[0].id;
    assert!(store.set_drawer_status(&prune_ws, archived, DrawerStatus::Archived, Some("pruned"), before).expect("s"));
    let stored = store.drawer(&prune_ws, archived).expect("read").expect("kept whole");
    assert_eq!((stored.status, stored.status_reason.as_deref()), (DrawerStatus::Archived, Some("pruned")));
    assert_eq!(stored.content, faded[0].content);
    let in_rooms = |store: &dyn Store| -> u64 { store.taxonomy(&prune_ws).expect("taxonomy").total_drawers };
    assert_eq!(in_rooms(store), 6, "an archived drawer leaves the counts");
    let hits = store.lexical_search(&prune_ws, &["faded".to_string()], &DrawerFilter::default(), 10).expect("search");
    assert!(hits.iter().all(|(id, _)| id != archived), "and the searches");
    let counts = store.pipeline_counts(&prune_ws, before).expect("counts");
    assert!(counts.by_status.contains(&(DrawerStatus::Archived, 1)));
    assert!(store.set_drawer_status(&prune_ws, archived, DrawerStatus::Active, None, before).expect("restore"));
    assert_eq!(in_rooms(store), 7, "restored");
    assert_all_healthy(store);
}

/// Periodic jobs: one run per tick, one holder at a time, a lease that
/// ends a dead holder's lock (for backends that need one).
pub fn check_periodic_jobs(store: &dyn Store) {
    let minute = std::time::Duration::from_secs(60);
    let now = at("2025-03-02T10:00:00Z");
    assert!(store.try_start_job("maintain", 100, "p1", minute, now).expect("start"));
    assert!(!store.try_start_job("maintain", 100, "p2", minute, now).expect("start"), "the tick is taken");
    assert!(!store.try_start_job("maintain", 101, "p2", minute, now).expect("start"), "p1 still runs the job");
    assert!(store.try_start_job("process", 100, "p2", minute, now).expect("start"), "other jobs are independent");
    store.finish_job("maintain", "p1").expect("finish");
    assert!(!store.try_start_job("maintain", 100, "p2", minute, now).expect("start"), "a tick runs once");
    assert!(store.try_start_job("maintain", 101, "p2", minute, now).expect("start"), "the next tick");
    store.finish_job("maintain", "p2").expect("finish");
    store.finish_job("process", "p2").expect("finish");
    store.finish_job("process", "nobody").expect("finishing a job one does not hold is a no-op");
}

/// The cold path's counts: every status counted per state, tier and
/// status (zeros included, vocabulary order), only live claims of raw
/// drawers, active memories, the latest run per job with whether it
/// finished; nothing from another workspace.
pub fn check_pipeline_counts(store: &dyn Store) {
    let ws = workspace("default");
    let t0 = at("2025-03-02T10:00:00Z");
    let empty = store.pipeline_counts(&ws, t0).expect("counts of an empty palace");
    assert_eq!(empty, PipelineCounts::default(), "an empty palace has every count, all zero, and no runs");

    let with = |wing: &str, text: &str, state: DrawerState, tier: PipelineTier, status: DrawerStatus| {
        let mut d = drawer(&ws, wing, "r", text);
        (d.state, d.pipeline_tier, d.status) = (state, tier, status);
        d
    };
    use DrawerState::{Failed, Merged, Processed, Raw};
    use DrawerStatus::{Active, Archived, Invalidated, Superseded};
    use PipelineTier::{Centroid as ByCentroid, Heuristic, Llm};
    let mut raw: Vec<Drawer> = (0..4)
        .map(|i| {
            let mut d = with("w", &format!("raw drawer {i}"), Raw, Llm, Active);
            d.filed_at = at(&format!("2025-03-01T10:0{i}:00Z"));
            d
        })
        .collect();
    raw.extend([
        with("w", "processed by centroid", Processed, ByCentroid, Active),
        with("w", "processed, then superseded", Processed, Heuristic, Superseded),
        with("w", "merged into its cluster", Merged, Llm, Active),
        with("w", "failed and hidden", Failed, Llm, Invalidated),
        with("memories", "user prefers tea", Processed, Llm, Active),
        with("memories", "user works in Lisbon", Processed, Llm, Active),
        with("memories", "user works in Porto", Processed, Llm, Superseded),
    ]);
    store.put_drawers(&raw).expect("put");
    let other = workspace("other");
    let mut elsewhere = drawer(&other, "memories", "r", "another tenant's memory");
    elsewhere.state = Processed;
    store.put_drawers(&[elsewhere, drawer(&other, "w", "r", "another tenant's raw drawer")]).expect("put other");
    assert_eq!(
        store.claim_raw_drawers(&other, "worker-x", 10, t0, at("2025-03-02T11:00:00Z")).expect("claim").len(),
        1
    );

    // raw 0: a claim that expires before the count; raw 1 and 2: live
    // claims, raw 2 then completed (processed, heuristic); raw 3 unclaimed.
    let expired = store.claim_raw_drawers(&ws, "worker-a", 1, t0, at("2025-03-02T10:01:00Z")).expect("claim");
    assert_eq!(expired[0].content.as_str(), "raw drawer 0");
    let live = store.claim_raw_drawers(&ws, "worker-b", 2, t0, at("2025-03-02T10:10:00Z")).expect("claim");
    let texts: Vec<&str> = live.iter().map(|d| d.content.as_str()).collect();
    assert_eq!(texts, vec!["raw drawer 1", "raw drawer 2"]);
    let mut done = live[1].clone();
    (done.state, done.pipeline_tier) = (Processed, Heuristic);
    assert_eq!(store.complete_claims(&ws, "worker-b", &[done]).expect("complete").len(), 1);

    // Jobs are palace-wide: maintain ran at ticks 100 (finished) and 101
    // (still running); process ran at tick 7 and finished.
    let lease = std::time::Duration::from_secs(600);
    assert!(store.try_start_job("maintain", 100, "p1", lease, t0).expect("start"));
    store.finish_job("maintain", "p1").expect("finish");
    let later = at("2025-03-02T10:02:00Z");
    assert!(store.try_start_job("maintain", 101, "p2", lease, later).expect("start"));
    assert!(store.try_start_job("process", 7, "p1", lease, t0).expect("start"));
    store.finish_job("process", "p1").expect("finish");

    let counts = store.pipeline_counts(&ws, at("2025-03-02T10:05:00Z")).expect("counts");
    let expected = PipelineCounts {
        by_state: vec![(Raw, 3), (Processed, 6), (Merged, 1), (Failed, 1)],
        by_tier: vec![(Heuristic, 2), (ByCentroid, 1), (Llm, 8)],
        by_status: vec![(Active, 8), (Superseded, 2), (Invalidated, 1), (Archived, 0)],
        claimed: 1,
        memories: 2,
        last_runs: vec![
            JobRun { job: "maintain".into(), tick: 101, holder: "p2".into(), started_at: later, finished: false },
            JobRun { job: "process".into(), tick: 7, holder: "p1".into(), started_at: t0, finished: true },
        ],
    };
    assert_eq!(counts, expected);
    assert_eq!((counts.state(Raw), counts.tier(Llm), counts.status(Superseded)), (3, 8, 2));

    store.finish_job("maintain", "p2").expect("finish");
    let counts = store.pipeline_counts(&ws, at("2025-03-02T10:05:00Z")).expect("counts");
    assert!(counts.last_runs.iter().all(|run| run.finished), "a finished run says so");
    let counts = store.pipeline_counts(&ws, at("2025-03-02T10:20:00Z")).expect("counts");
    assert_eq!(counts.claimed, 0, "expired claims are not live");
    let theirs = store.pipeline_counts(&other, at("2025-03-02T10:05:00Z")).expect("counts");
    assert_eq!(
        (theirs.state(Raw), theirs.state(Processed), theirs.claimed, theirs.memories, theirs.last_runs.len()),
        (1, 1, 1, 1, 2)
    );
    assert_all_healthy(store);
}

fn entity(ws: &WorkspaceId, name: &str, kind: &str) -> Entity {
    Entity {
        workspace_id: ws.clone(),
        id: entity_id(name),
        name: name.into(),
        entity_type: kind.into(),
        properties: serde_json::Map::new(),
        embedding: None,
        created_at: at("2025-01-01T00:00:00Z"),
    }
}

fn fact(
    ws: &WorkspaceId,
    subject: &str,
    predicate: &str,
    object: &str,
    from: Option<&str>,
    to: Option<&str>,
) -> Triple {
    let (subject, object) = (entity_id(subject), entity_id(object));
    let valid_from = from.map(at);
    Triple {
        workspace_id: ws.clone(),
        id: Triple::make_id(&subject, predicate, &object, valid_from.as_ref()),
        subject,
        predicate: predicate.into(),
        object,
        valid_from,
        valid_to: to.map(at),
        confidence: Confidence::new(1.0).expect("confidence"),
        source_drawer_id: None,
        source: None,
        created_at: at("2025-02-01T00:00:00Z"),
    }
}

fn added(outcome: crate::TripleOutcome) -> String {
    match outcome {
        crate::TripleOutcome::Added(id) => id,
        other => panic!("expected a new fact, got {other:?}"),
    }
}

/// Entities and temporal facts: directions, oldest-first order, the
/// identical-open-fact rule, ending and re-stating, statistics, deletion,
/// rejected windows and dangling entities, workspace isolation.
pub fn check_knowledge_graph(store: &dyn Store) {
    use crate::{Direction, TripleOutcome};
    let ws = workspace("default");
    let names = ["Crawbl Backend", "MySQL", "PostgreSQL", "Alice"];
    let entities: Vec<Entity> = names.iter().map(|n| entity(&ws, n, "technology")).collect();
    assert_eq!(store.add_entities(&entities).expect("entities"), 4);
    assert_eq!(store.add_entities(&entities[..1]).expect("entities again"), 0, "entities are stored once");
    let mut stored_names = store.entity_names(&ws).expect("names");
    stored_names.sort();
    assert_eq!(stored_names, vec!["Alice", "Crawbl Backend", "MySQL", "PostgreSQL"]);
    let found = store.entities_by_id(&ws, &[entity_id("mysql"), entity_id("nobody")]).expect("by id");
    assert_eq!(found.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), vec!["MySQL"]);

    let old = fact(&ws, "Crawbl Backend", "uses", "MySQL", Some("2024-06-01T00:00:00Z"), Some("2025-01-14T23:59:59Z"));
    let new = fact(&ws, "Crawbl Backend", "uses", "PostgreSQL", Some("2025-01-15T00:00:00Z"), None);
    let owner = fact(&ws, "Alice", "owns", "Crawbl Backend", None, None);
    let old_id = added(store.add_triple(&old).expect("old fact"));
    let new_id = added(store.add_triple(&new).expect("new fact"));
    let owner_id = added(store.add_triple(&owner).expect("owner fact"));

    // An identical open fact, even with another start, is the existing one.
    let mut again = new.clone();
    again.valid_from = Some(at("2025-03-01T00:00:00Z"));
    again.id = Triple::make_id(&again.subject, &again.predicate, &again.object, again.valid_from.as_ref());
    assert_eq!(store.add_triple(&again).expect("again"), TripleOutcome::Existing(new_id.clone()));
    assert_eq!(store.add_triple(&old).expect("closed again"), TripleOutcome::Existing(old_id.clone()));

    let ids = |triples: Vec<Triple>| triples.into_iter().map(|t| t.id).collect::<Vec<_>>();
    let backend = entity_id("Crawbl Backend");
    assert_eq!(
        ids(store.triples_about(&ws, &backend, Direction::Outgoing).expect("out")),
        vec![old_id.clone(), new_id.clone()],
        "oldest first"
    );
    assert_eq!(ids(store.triples_about(&ws, &backend, Direction::Incoming).expect("in")), vec![owner_id.clone()]);
    let both = ids(store.triples_about(&ws, &backend, Direction::Both).expect("both"));
    assert_eq!(both.len(), 3);
    assert_eq!(both[0], owner_id, "a fact without a start sorts first");
    assert_eq!(
        ids(store.triples_about(&ws, &entity_id("postgresql"), Direction::Both).expect("pg")),
        vec![new_id.clone()]
    );

    // Temporal windows.
    let about = store.triples_about(&ws, &backend, Direction::Outgoing).expect("out");
    let holding =
        |when: &str| about.iter().filter(|t| t.holds_at(&at(when))).map(|t| t.object.clone()).collect::<Vec<_>>();
    assert!(holding("2024-01-01T00:00:00Z").is_empty(), "before either window");
    assert_eq!(holding("2024-09-01T00:00:00Z"), vec![entity_id("MySQL")]);
    assert_eq!(holding("2025-01-14T23:59:59Z"), vec![entity_id("MySQL")], "the end is inclusive");
    assert_eq!(holding("2025-06-01T00:00:00Z"), vec![entity_id("PostgreSQL")]);

    // Ending, then stating again.
    let ended = at("2025-05-01T00:00:00Z");
    assert_eq!(store.invalidate_triples(&ws, &entity_id("Alice"), "owns", &backend, ended).expect("end"), 1);
    assert_eq!(store.invalidate_triples(&ws, &entity_id("Alice"), "owns", &backend, ended).expect("end"), 0);
    let ended_owner = store.triples_about(&ws, &entity_id("Alice"), Direction::Outgoing).expect("alice");
    assert_eq!(ended_owner[0].valid_to, Some(ended));
    let restated = added(store.add_triple(&owner).expect("restated"));
    assert_ne!(restated, owner_id, "a re-stated fact is a new fact");
    let alice = store.triples_about(&ws, &entity_id("Alice"), Direction::Outgoing).expect("alice");
    assert_eq!(alice.len(), 2);
    assert_eq!(alice.iter().filter(|t| t.valid_to.is_none()).count(), 1);
    // Ending before the start clamps to the start, never inverting a window.
    assert_eq!(
        store
            .invalidate_triples(&ws, &backend, "uses", &entity_id("PostgreSQL"), at("2020-01-01T00:00:00Z"))
            .expect("end"),
        1
    );
    let pg = store.triples_about(&ws, &entity_id("PostgreSQL"), Direction::Incoming).expect("pg");
    assert_eq!(pg[0].valid_to, pg[0].valid_from);

    let stats = store.kg_stats(&ws).expect("stats");
    assert_eq!((stats.entities, stats.triples, stats.current, stats.expired), (4, 4, 1, 3));
    assert_eq!(stats.predicates, vec![("owns".to_string(), 2), ("uses".to_string(), 2)]);

    // Bad facts are refused and leave nothing behind.
    let inverted = fact(&ws, "Alice", "uses", "MySQL", Some("2025-02-01T00:00:00Z"), Some("2025-01-01T00:00:00Z"));
    assert!(matches!(store.add_triple(&inverted), Err(crate::StoreError::InvalidData { .. })), "inverted window");
    let dangling = fact(&ws, "Alice", "uses", "Nobody", None, None);
    assert!(matches!(store.add_triple(&dangling), Err(crate::StoreError::InvalidData { .. })), "unknown entity");
    assert_eq!(store.kg_stats(&ws).expect("stats").triples, 4);

    assert!(store.delete_triple(&ws, &restated).expect("delete"));
    assert!(!store.delete_triple(&ws, &restated).expect("delete again"));
    assert_eq!(store.kg_stats(&ws).expect("stats").triples, 3);

    let other = workspace("other");
    assert!(store.entity_names(&other).expect("names").is_empty());
    assert!(store.triples_about(&other, &backend, Direction::Both).expect("other").is_empty());
    assert!(!store.delete_triple(&other, &old_id).expect("other delete"));
    assert_eq!(store.invalidate_triples(&other, &backend, "uses", &entity_id("MySQL"), ended).expect("other end"), 0);
    assert_eq!(store.kg_stats(&other).expect("other stats").triples, 0);
}

/// Entity mentions follow drawers (ranked by how many of the asked
/// entities each mentions; deleted drawers drop out), hall counts follow
/// writes, and explicit tunnels are stored once per pair of places.
pub fn check_mentions_halls_and_tunnels(store: &dyn Store) {
    let ws = workspace("default");
    let mut both = drawer(&ws, "lab", "db", "Alice moved the backend to PostgreSQL.");
    both.entities = vec!["Alice".into(), "PostgreSQL".into()];
    both.hall = Some(Hall::parse("hall_facts").expect("hall"));
    let mut one = drawer(&ws, "lab", "db", "PostgreSQL tuning notes.");
    one.entities = vec!["PostgreSQL".into()];
    one.hall = Some(Hall::parse("hall_facts").expect("hall"));
    let mut none = drawer(&ws, "home", "db", "Nothing named here.");
    none.hall = Some(Hall::parse("hall_events").expect("hall"));
    store.put_drawers(&[both.clone(), one.clone(), none.clone()]).expect("put");
    let asked = [entity_id("alice"), entity_id("postgresql")];
    let ranked = store.drawers_mentioning(&ws, &asked, 10).expect("mentions");
    assert_eq!(ranked, vec![(both.id.clone(), 2), (one.id.clone(), 1)]);
    assert_eq!(store.drawers_mentioning(&ws, &asked, 1).expect("limit").len(), 1);
    assert!(store.drawers_mentioning(&workspace("other"), &asked, 10).expect("other").is_empty());

    let halls = |store: &dyn Store| {
        let mut counts: Vec<(String, String, String, u64)> =
            store.hall_counts(&ws).expect("halls").into_iter().map(|h| (h.wing, h.room, h.hall, h.drawers)).collect();
        counts.sort();
        counts
    };
    assert_eq!(
        halls(store),
        vec![
            ("home".into(), "db".into(), "hall_events".into(), 1),
            ("lab".into(), "db".into(), "hall_facts".into(), 2),
        ]
    );
    assert!(store.delete_drawer(&ws, &both.id).expect("delete"));
    assert_eq!(store.drawers_mentioning(&ws, &asked, 10).expect("after delete"), vec![(one.id.clone(), 1)]);
    assert_eq!(halls(store)[1].3, 1, "a deleted drawer leaves the hall count");

    let place = |wing: &str, room: &str| Place {
        wing: Wing::parse(wing).expect("wing"),
        room: Room::parse(room).expect("room"),
    };
    let (a, b) = Tunnel::ordered(place("lab", "db"), place("home", "db"));
    let tunnel = Tunnel {
        workspace_id: ws.clone(),
        id: Tunnel::make_id(&a, &b),
        a,
        b,
        label: Some("same database".into()),
        created_by: Some("conformance".into()),
        created_at: at("2025-04-01T00:00:00Z"),
    };
    assert!(store.put_tunnel(&tunnel).expect("tunnel"));
    assert!(!store.put_tunnel(&tunnel).expect("tunnel again"));
    assert_eq!(store.tunnels(&ws).expect("tunnels"), vec![tunnel.clone()]);
    assert!(store.tunnels(&workspace("other")).expect("other").is_empty());
    assert!(!store.delete_tunnel(&workspace("other"), &tunnel.id).expect("other delete"));
    assert!(store.delete_tunnel(&ws, &tunnel.id).expect("delete"));
    assert!(!store.delete_tunnel(&ws, &tunnel.id).expect("delete again"));
    assert!(store.tunnels(&ws).expect("tunnels").is_empty());
}

/// Coordination events come back exactly as appended (artifact ids
/// sorted), in append order, and every filter of a listing holds.
pub fn check_events_round_trip_and_filters(store: &dyn Store) {
    let ws = workspace("default");
    let all = |filter: EventFilter| store.events(&ws, &EventFilter { limit: 100, ..filter }).expect("events");
    assert!(all(EventFilter::default()).is_empty());
    let (a1, a2) = (artifact(&ws, "art_1", "one\n"), artifact(&ws, "art_2", "two\n"));
    let full = full_event(&ws, "evt_full", &["art_2", "art_1"]);
    let stored = appended(store.append_event(&full, &[a1, a2]).expect("append"), &full);
    assert_eq!(stored.event, full, "append returns the event as given");
    let mut sorted = full.clone();
    sorted.artifact_ids.sort();
    let back = store.event(&ws, "evt_full").expect("event").expect("found");
    assert_eq!((back.seq, &back.event), (stored.seq, &sorted), "every field round-trips; artifact ids sorted");
    assert!(store.event(&ws, "evt_missing").expect("event").is_none());

    let later = |id: &str, created: &str, draft: EventDraft| {
        let event = coordination_event(&ws, id, created, draft);
        appended(store.append_event(&event, &[]).expect("append"), &event)
    };
    let draft = |kind: &str, from: &str, to: Option<&str>| EventDraft {
        event_type: kind.into(),
        stream: "project/demo".into(),
        room: "delegation".into(),
        from_agent: from.into(),
        to_agent: to.map(str::to_string),
        ..EventDraft::default()
    };
    let broadcast = later("evt_all", "2025-01-02T00:00:00Z", draft("status.update", "bob", Some("*")));
    let to_alice = later(
        "evt_alice",
        "2025-01-03T00:00:00Z",
        EventDraft {
            status: Some("open".into()),
            correlation_id: Some("task_1".into()),
            ..draft("task.request", "bob", Some("alice"))
        },
    );
    let to_carol = later(
        "evt_carol",
        "2025-01-03T12:00:00Z",
        EventDraft {
            topic: Some("ui".into()),
            room: "reviews".into(),
            ..draft("task.request", "alice", Some("carol"))
        },
    );
    let seqs = [stored.seq, broadcast.seq, to_alice.seq, to_carol.seq];
    assert!(seqs.windows(2).all(|pair| pair[0] < pair[1]), "seq grows in append order: {seqs:?}");

    assert_eq!(ids(&all(EventFilter::default())), ["evt_full", "evt_all", "evt_alice", "evt_carol"]);
    assert_eq!(
        ids(&all(EventFilter { newest_first: true, ..Default::default() })),
        ["evt_carol", "evt_alice", "evt_all", "evt_full"]
    );
    assert_eq!(
        ids(&store.events(&ws, &EventFilter { limit: 2, ..Default::default() }).expect("events")),
        ["evt_full", "evt_all"]
    );
    assert_eq!(
        ids(&store.events(&ws, &EventFilter { limit: 2, newest_first: true, ..Default::default() }).expect("events")),
        ["evt_carol", "evt_alice"]
    );
    assert!(store.events(&ws, &EventFilter::default()).expect("events").is_empty(), "limit 0 returns nothing");
    let some = |value: &str| Some(value.to_string());
    assert_eq!(
        ids(&all(EventFilter { to_agent: some("alice"), ..Default::default() })),
        ["evt_all", "evt_alice"],
        "an inbox includes broadcasts"
    );
    assert_eq!(ids(&all(EventFilter { to_agent: some("mac-codex"), ..Default::default() })), ["evt_full", "evt_all"]);
    assert_eq!(ids(&all(EventFilter { writer: some("bob"), ..Default::default() })), ["evt_all", "evt_alice"]);
    assert_eq!(ids(&all(EventFilter { stream: some("project/mempalace"), ..Default::default() })), ["evt_full"]);
    assert_eq!(ids(&all(EventFilter { room: some("reviews"), ..Default::default() })), ["evt_carol"]);
    assert_eq!(ids(&all(EventFilter { topic: some("ui"), ..Default::default() })), ["evt_carol"]);
    assert_eq!(
        ids(&all(EventFilter { event_type: some("task.request"), ..Default::default() })),
        ["evt_alice", "evt_carol"]
    );
    assert_eq!(ids(&all(EventFilter { correlation_id: some("task_1"), ..Default::default() })), ["evt_alice"]);
    assert_eq!(ids(&all(EventFilter { status: Some(EventStatus::Ready), ..Default::default() })), ["evt_full"]);
    assert_eq!(
        ids(&all(EventFilter { created_since: Some(at("2025-01-03T00:00:00Z")), ..Default::default() })),
        ["evt_alice", "evt_carol"],
        "the bound is inclusive"
    );
    assert_eq!(
        ids(&all(EventFilter { after_seq: Some(broadcast.seq), ..Default::default() })),
        ["evt_alice", "evt_carol"]
    );
    assert_eq!(
        ids(&all(EventFilter { before_seq: Some(to_alice.seq), ..Default::default() })),
        ["evt_full", "evt_all"]
    );
    assert_eq!(
        ids(&all(EventFilter {
            after_seq: Some(stored.seq),
            before_seq: Some(to_carol.seq),
            event_type: some("task.request"),
            ..Default::default()
        })),
        ["evt_alice"],
        "filters combine"
    );
    let listed = all(EventFilter { correlation_id: some("task_fix_it_0a1b2c3d"), ..Default::default() });
    assert_eq!(listed, vec![back], "a listed event is the stored one");
}

/// Artifacts are stored once and read back exactly; an event referencing
/// an artifact its workspace lacks is refused whole; workspaces never mix.
pub fn check_event_artifacts_and_references(store: &dyn Store) {
    let ws = workspace("team-a");
    let other = workspace("team-b");
    let patch = artifact(&ws, "art_patch", "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n");
    assert_eq!(store.put_artifact(&patch).expect("put"), PutOutcome::Inserted);
    let mut changed = patch.clone();
    changed.created_by = mempalace_core::coordination::Routing::parse("created_by", "someone-else").expect("routing");
    assert_eq!(store.put_artifact(&changed).expect("put again"), PutOutcome::Existing);
    assert_eq!(store.artifact(&ws, "art_patch").expect("get"), Some(patch.clone()), "the first version stays");
    assert!(store.artifact(&ws, "art_missing").expect("get").is_none());

    let request = event(&ws, "evt_1", "patch.ready", "a", Some("b"));
    let refused =
        Event { artifact_ids: vec!["art_new".into(), "art_nope".into(), "art_patch".into()], ..request.clone() };
    let new_artifact = artifact(&ws, "art_new", "new\n");
    assert_eq!(
        store.append_event(&refused, std::slice::from_ref(&new_artifact)).expect("append"),
        AppendOutcome::UnknownArtifact("art_nope".into())
    );
    assert!(store.event(&ws, "evt_1").expect("event").is_none(), "a refused event is not stored");
    assert!(store.artifact(&ws, "art_new").expect("get").is_none(), "nor are the artifacts sent with it");

    let accepted = Event { artifact_ids: vec!["art_patch".into(), "art_new".into()], ..request.clone() };
    let stored =
        appended(store.append_event(&accepted, std::slice::from_ref(&new_artifact)).expect("append"), &accepted);
    assert_eq!(stored.event.artifact_ids, ["art_patch", "art_new"]);
    assert_eq!(store.event(&ws, "evt_1").expect("event").expect("found").event.artifact_ids, ["art_new", "art_patch"]);
    assert_eq!(store.artifact(&ws, "art_new").expect("get"), Some(new_artifact.clone()));

    // Another workspace sees none of it, and cannot reference it.
    assert!(store.artifact(&other, "art_patch").expect("get").is_none());
    assert!(store.event(&other, "evt_1").expect("event").is_none());
    assert!(store.events(&other, &EventFilter { limit: 10, ..Default::default() }).expect("events").is_empty());
    assert!(store.scan_artifacts(&other, None, 10).expect("scan").is_empty());
    let foreign = Event { workspace_id: other.clone(), artifact_ids: vec!["art_patch".into()], ..request.clone() };
    assert_eq!(store.append_event(&foreign, &[]).expect("append"), AppendOutcome::UnknownArtifact("art_patch".into()));
    let twin = Event { workspace_id: other.clone(), ..request.clone() };
    appended(store.append_event(&twin, &[]).expect("the same id in another workspace"), &twin);
    assert_eq!(store.events(&ws, &EventFilter { limit: 10, ..Default::default() }).expect("events").len(), 1);

    // Scans page through artifacts in id order.
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = store.scan_artifacts(&ws, after.as_deref(), 1).expect("scan");
        let Some(last) = page.last() else { break };
        after = Some(last.id.clone());
        seen.extend(page.into_iter().map(|artifact| artifact.id));
    }
    assert_eq!(seen, ["art_new", "art_patch"]);

    // An import appends after what is there, keeps ids, and refuses an
    // event whose artifact it has not been given.
    let imported = event(&ws, "evt_imported", "task.request", "c", None);
    assert_eq!(store.import(&[PalaceRecord::Event(Box::new(imported.clone()))]).expect("import").inserted, 1);
    let listed = store.events(&ws, &EventFilter { limit: 10, ..Default::default() }).expect("events");
    assert_eq!(ids(&listed), ["evt_1", "evt_imported"]);
    assert_eq!(store.import(&[PalaceRecord::Event(Box::new(imported))]).expect("import").existing, 1);
    let dangling = Event { id: "evt_dangling".into(), artifact_ids: vec!["art_absent".into()], ..request };
    let error = store.import(&[PalaceRecord::Event(Box::new(dangling))]).expect_err("a dangling reference is refused");
    assert!(matches!(error, crate::StoreError::InvalidData { .. }), "{error:?}");
    assert!(error.to_string().contains("art_absent"), "{error}");
    assert!(store.event(&ws, "evt_dangling").expect("event").is_none());
    assert_all_healthy(store);
}

/// Four writers append while a reader follows a cursor (`after_seq` of the
/// last event it saw): the reader sees every event exactly once, each batch
/// in increasing `seq`. A backend whose `seq` order differed from its
/// commit order would make the reader skip an event committed late.
pub fn check_event_cursor_under_concurrent_appends(store: Arc<dyn Store>) {
    const WRITERS: usize = 4;
    const EACH: usize = 40;
    let ws = workspace("default");
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let store = Arc::clone(&store);
            let ws = ws.clone();
            std::thread::spawn(move || {
                for i in 0..EACH {
                    let id = format!("evt_w{writer}_{i}");
                    let event = event(&ws, &id, "status.update", &format!("w{writer}"), None);
                    appended(store.append_event(&event, &[]).expect("append"), &event);
                }
            })
        })
        .collect();
    let mut seen: Vec<String> = Vec::new();
    let mut cursor: Option<i64> = None;
    let started = std::time::Instant::now();
    loop {
        assert!(started.elapsed() < std::time::Duration::from_secs(120), "the writers did not finish in two minutes");
        // Read once more after the writers finished, to catch the tail.
        let writers_done = writers.iter().all(|writer| writer.is_finished());
        let batch =
            store.events(&ws, &EventFilter { after_seq: cursor, limit: 7, ..Default::default() }).expect("events");
        let seqs: Vec<i64> = batch.iter().map(|stored| stored.seq).collect();
        assert!(seqs.windows(2).all(|pair| pair[0] < pair[1]), "a batch is in seq order: {seqs:?}");
        if writers_done && batch.is_empty() {
            break;
        }
        if let Some(last) = batch.last() {
            cursor = Some(last.seq);
        }
        seen.extend(batch.into_iter().map(|stored| stored.event.id));
    }
    for writer in writers {
        writer.join().expect("writer thread panicked");
    }
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), seen.len(), "no event was seen twice");
    let everything = store.events(&ws, &EventFilter { limit: 1_000, ..Default::default() }).expect("events");
    assert_eq!(everything.len(), WRITERS * EACH);
    assert_eq!(
        ids(&everything),
        seen.iter().map(String::as_str).collect::<Vec<_>>(),
        "the reader saw the log in its order, nothing skipped"
    );
}

/// Panics unless every health check passes.
pub fn assert_all_healthy(store: &dyn Store) {
    let checks = store.verify().expect("verify");
    assert!(!checks.is_empty());
    assert!(checks.iter().all(|c| c.ok), "unhealthy: {checks:?}");
}

/// Runs every check, each on a fresh store from `fresh`.
pub fn run_all(mut fresh: impl FnMut() -> Arc<dyn Store>) {
    check_drawer_round_trip(fresh().as_ref());
    check_put_is_idempotent(fresh().as_ref());
    check_taxonomy_follows_writes(fresh().as_ref());
    check_workspace_isolation(fresh().as_ref());
    check_identity(fresh().as_ref());
    check_scan_pages_through_everything(fresh().as_ref());
    check_import_round_trip(fresh().as_ref());
    check_verify_and_rebuild(fresh().as_ref());
    check_embedding_lookup_and_backfill(fresh().as_ref());
    check_lexical_search_and_filters(fresh().as_ref());
    check_term_frequencies(fresh().as_ref());
    check_vector_change_feed(fresh().as_ref());
    check_listings_and_access(fresh().as_ref());
    check_knowledge_graph(fresh().as_ref());
    check_mentions_halls_and_tunnels(fresh().as_ref());
    check_pages_replacement_and_sessions(fresh().as_ref());
    check_events_round_trip_and_filters(fresh().as_ref());
    check_event_artifacts_and_references(fresh().as_ref());
    check_concurrent_writers(fresh());
    check_event_cursor_under_concurrent_appends(fresh());
}

/// Entity aliases (issue 18): a merge moves the alias's facts and mentions
/// to the canonical entity and records them; later writes naming the alias
/// land on the canonical entity; verify and rebuild agree with the merged
/// state; a second merge is a no-op; unmerge moves exactly the recorded
/// facts back and derives the mentions again; workspaces stay apart.
pub fn check_entity_merge_and_unmerge(store: &dyn Store) {
    use crate::{Direction, EntityUsage, MergeOutcome, Unmerged};
    let ws = workspace("default");
    let names = ["PostgreSQL", "Postgres", "Alice", "Redis", "Bob"];
    store.add_entities(&names.iter().map(|n| entity(&ws, n, "technology")).collect::<Vec<_>>()).expect("entities");
    let (pg, alias, alice, redis) =
        (entity_id("PostgreSQL"), entity_id("Postgres"), entity_id("Alice"), entity_id("Redis"));
    let uses = added(store.add_triple(&fact(&ws, "Alice", "uses", "Postgres", None, None)).expect("fact"));
    let replaced = added(store.add_triple(&fact(&ws, "Postgres", "replaced", "Redis", None, None)).expect("fact"));
    let likes = added(store.add_triple(&fact(&ws, "Alice", "likes", "PostgreSQL", None, None)).expect("fact"));
    let mut d1 = drawer(&ws, "lab", "db", "We run Postgres.");
    d1.entities = vec!["Postgres".into()];
    let mut d2 = drawer(&ws, "lab", "db", "Postgres, also called PostgreSQL.");
    d2.entities = vec!["Postgres".into(), "PostgreSQL".into()];
    let mut d3 = drawer(&ws, "lab", "db", "PostgreSQL 16 notes.");
    d3.entities = vec!["PostgreSQL".into()];
    store.put_drawers(&[d1.clone(), d2.clone(), d3.clone()]).expect("drawers");
    let usage = store.entity_usage(&ws).expect("usage");
    assert!(usage.contains(&EntityUsage { id: alias.clone(), triples: 2, mentions: 2 }), "{usage:?}");
    assert!(usage.contains(&EntityUsage { id: pg.clone(), triples: 1, mentions: 2 }), "{usage:?}");

    let merged_at = at("2025-05-01T00:00:00Z");
    assert_eq!(
        store.merge_entity(&ws, &alias, &pg, "abbreviation", merged_at).expect("merge"),
        MergeOutcome::Merged { triples: 2, mentions: 2 }
    );
    assert_eq!(store.merge_entity(&ws, &alias, &pg, "again", merged_at).expect("again"), MergeOutcome::AlreadyMerged);
    assert_eq!(
        store.merge_entity(&ws, &alias, &redis, "elsewhere", merged_at).expect("elsewhere"),
        MergeOutcome::MergedElsewhere { canonical_id: pg.clone() }
    );
    assert_eq!(
        store.merge_entity(&ws, &entity_id("nobody"), &pg, "missing", merged_at).expect("missing"),
        MergeOutcome::Missing { id: entity_id("nobody") }
    );
    assert_eq!(
        store.merge_entity(&ws, &pg, &pg, "itself", merged_at).expect("itself"),
        MergeOutcome::Missing { id: pg.clone() }
    );
    assert!(store.entities_by_id(&ws, std::slice::from_ref(&alias)).expect("by id").is_empty(), "the alias left");
    let aliases = store.entity_aliases(&ws).expect("aliases");
    assert_eq!(aliases.len(), 1);
    assert_eq!((aliases[0].alias.name.as_str(), aliases[0].canonical_id.as_str()), ("Postgres", pg.as_str()));
    assert_eq!((aliases[0].reason.as_str(), aliases[0].merged_at), ("abbreviation", merged_at));
    assert_eq!((aliases[0].moved_triples, aliases[0].moved_mentions), (2, 2));
    let resolved = store.resolve_entities(&ws, &[alias.clone(), alice.clone()]).expect("resolve");
    assert_eq!(resolved, std::collections::HashMap::from([(alias.clone(), pg.clone())]));
    assert!(store.resolve_entities(&workspace("other"), std::slice::from_ref(&alias)).expect("other").is_empty());
    assert_eq!(store.triples_about(&ws, &pg, Direction::Both).expect("about").len(), 3);
    assert!(store.triples_about(&ws, &alias, Direction::Both).expect("about alias").is_empty());
    let mentioning = |ids: &[String]| {
        let mut found: Vec<(DrawerId, u32)> = store.drawers_mentioning(&ws, ids, 10).expect("mentions");
        found.sort();
        found
    };
    let mut all_three = vec![(d1.id.clone(), 1), (d2.id.clone(), 1), (d3.id.clone(), 1)];
    all_three.sort();
    assert_eq!(mentioning(std::slice::from_ref(&pg)), all_three);
    assert!(store.entity_names(&ws).expect("names").contains(&"Postgres".to_string()), "aliases stay known names");

    // Writes naming the alias land on the canonical entity.
    assert_eq!(store.add_entities(&[entity(&ws, "Postgres", "technology")]).expect("again"), 0);
    let later = added(store.add_triple(&fact(&ws, "Bob", "uses", "Postgres", None, None)).expect("later fact"));
    let stored = store.triples(&ws).expect("triples");
    assert_eq!(stored.iter().find(|t| t.id == later).map(|t| t.object.clone()), Some(pg.clone()));
    let mut d4 = drawer(&ws, "lab", "db", "Postgres again, after the merge.");
    d4.entities = vec!["Postgres".into()];
    store.put_drawers(std::slice::from_ref(&d4)).expect("later drawer");
    assert_eq!(store.drawers_mentioning(&ws, std::slice::from_ref(&pg), 10).expect("m").len(), 4);
    for check in store.verify().expect("verify") {
        assert!(check.ok, "{check:?}");
    }
    store.rebuild_derived().expect("rebuild");
    assert_eq!(store.drawers_mentioning(&ws, std::slice::from_ref(&pg), 10).expect("m").len(), 4, "rebuild agrees");
    assert!(store.drawers_mentioning(&ws, std::slice::from_ref(&alias), 10).expect("m").is_empty());

    // Unmerge: exactly the recorded facts move back; mentions are derived again.
    assert_eq!(
        store.unmerge_entity(&ws, &alias).expect("unmerge"),
        Some(Unmerged { canonical_id: pg.clone(), triples: 2, mentions: 3 })
    );
    assert_eq!(store.unmerge_entity(&ws, &alias).expect("unmerge again"), None);
    assert!(store.entity_aliases(&ws).expect("aliases").is_empty());
    let restored = store.entities_by_id(&ws, std::slice::from_ref(&alias)).expect("restored");
    assert_eq!(restored, vec![entity(&ws, "Postgres", "technology")], "the alias's own record comes back");
    let by_id: std::collections::HashMap<String, Triple> =
        store.triples(&ws).expect("triples").into_iter().map(|t| (t.id.clone(), t)).collect();
    assert_eq!(by_id[&uses].object, alias);
    assert_eq!(by_id[&replaced].subject, alias);
    assert_eq!(by_id[&likes].object, pg);
    assert_eq!(by_id[&later].object, pg, "a fact added after the merge stays with the canonical entity");
    let mut alias_drawers = vec![(d1.id.clone(), 1), (d2.id.clone(), 1), (d4.id.clone(), 1)];
    alias_drawers.sort();
    assert_eq!(mentioning(std::slice::from_ref(&alias)), alias_drawers);
    let mut pg_drawers = vec![(d2.id.clone(), 1), (d3.id.clone(), 1)];
    pg_drawers.sort();
    assert_eq!(mentioning(std::slice::from_ref(&pg)), pg_drawers);
    for check in store.verify().expect("verify") {
        assert!(check.ok, "{check:?}");
    }

    // Merging into an alias's alias chain: aliases of the alias follow it.
    let k8s = entity_id("k8s");
    store
        .add_entities(&[
            entity(&ws, "k8s", "technology"),
            entity(&ws, "Kubernetes", "technology"),
            entity(&ws, "kube", "technology"),
        ])
        .expect("more");
    store.merge_entity(&ws, &entity_id("kube"), &k8s, "manual", merged_at).expect("kube into k8s");
    store.merge_entity(&ws, &k8s, &entity_id("Kubernetes"), "manual", merged_at).expect("k8s into kubernetes");
    let resolved = store.resolve_entities(&ws, &[entity_id("kube"), k8s.clone()]).expect("resolve chain");
    assert_eq!(resolved.get(&entity_id("kube")), Some(&entity_id("Kubernetes")));
    assert_eq!(resolved.get(&k8s), Some(&entity_id("Kubernetes")));
}

/// Centroids: a memory-type centroid is replaced only for another source
/// hash; a room centroid says whether its vector changed and keeps the
/// room size; samples are the newest active vectors of one model that the
/// selection allows (for types: LLM-labelled, processed, recent enough).
pub fn check_centroids(store: &dyn Store) {
    use crate::CentroidSamples;
    let ws = workspace("default");
    let centroid = Centroid {
        workspace_id: ws.clone(),
        memory_type: MemoryType::Decision,
        embedding: Embedding { model: "m".into(), vector: vec![0.5, 0.5, 0.0] },
        sample_count: 60,
        computed_at: at("2025-05-01T00:00:00Z"),
        source_hash: "h1".into(),
    };
    assert!(store.put_centroid(&centroid).expect("put"));
    let same_hash = Centroid { sample_count: 61, ..centroid.clone() };
    assert!(!store.put_centroid(&same_hash).expect("same hash"));
    assert_eq!(store.centroids(&ws).expect("centroids"), vec![centroid.clone()]);
    let next = Centroid { source_hash: "h2".into(), sample_count: 70, ..centroid.clone() };
    assert!(store.put_centroid(&next).expect("next"));
    assert_eq!(store.centroids(&ws).expect("centroids"), vec![next.clone()]);

    let room = RoomCentroid {
        workspace_id: ws.clone(),
        wing: "lab".into(),
        room: "db".into(),
        embedding: Embedding { model: "m".into(), vector: vec![1.0, 0.0, 0.0] },
        sample_count: 12,
        room_drawers: 12,
        computed_at: at("2025-05-01T00:00:00Z"),
        source_hash: "r1".into(),
    };
    assert!(store.put_room_centroid(&room).expect("room"));
    let grown = RoomCentroid { room_drawers: 13, computed_at: at("2025-05-02T00:00:00Z"), ..room.clone() };
    assert!(!store.put_room_centroid(&grown).expect("same samples"));
    assert_eq!(store.room_centroids(&ws).expect("rooms"), vec![grown.clone()]);
    let moved = RoomCentroid {
        source_hash: "r2".into(),
        embedding: Embedding { model: "m".into(), vector: vec![0.0, 1.0, 0.0] },
        ..grown.clone()
    };
    assert!(store.put_room_centroid(&moved).expect("new samples"));
    assert_eq!(store.room_centroids(&ws).expect("rooms"), vec![moved]);
    assert!(store.room_centroids(&workspace("other")).expect("other").is_empty());
    assert!(!store.delete_room_centroid(&workspace("other"), "lab", "db").expect("other"));
    assert!(store.delete_room_centroid(&ws, "lab", "db").expect("delete"));
    assert!(!store.delete_room_centroid(&ws, "lab", "db").expect("delete again"));

    let with_vector = |text: &str, room: &str, model: &str, filed: &str, vector: Vec<f32>| {
        let mut d = drawer(&ws, "lab", room, text);
        d.filed_at = at(filed);
        d.embedding = Some(Embedding { model: model.into(), vector });
        d.memory_type = Some(MemoryType::Decision);
        d.state = DrawerState::Processed;
        d.pipeline_tier = PipelineTier::Llm;
        d
    };
    let old = with_vector("old decision", "db", "m", "2025-01-01T00:00:00Z", vec![1.0, 0.0, 0.0]);
    let new = with_vector("new decision", "db", "m", "2025-04-01T00:00:00Z", vec![0.0, 1.0, 0.0]);
    let other_model = with_vector("other model", "db", "n", "2025-04-02T00:00:00Z", vec![0.0, 0.0, 1.0]);
    let mut by_centroid = with_vector("centroid labelled", "db", "m", "2025-04-03T00:00:00Z", vec![0.5, 0.5, 0.0]);
    by_centroid.pipeline_tier = PipelineTier::Centroid;
    let gone = with_vector("invalidated", "db", "m", "2025-04-04T00:00:00Z", vec![0.1, 0.1, 0.0]);
    let elsewhere = with_vector("another room", "ui", "m", "2025-04-05T00:00:00Z", vec![0.2, 0.2, 0.0]);
    store
        .put_drawers(&[old.clone(), new.clone(), other_model, by_centroid.clone(), gone.clone(), elsewhere.clone()])
        .expect("drawers");
    store
        .set_drawer_status(&ws, &gone.id, DrawerStatus::Invalidated, Some("test"), at("2025-04-06T00:00:00Z"))
        .expect("status");
    let ids = |samples: Vec<(DrawerId, Vec<f32>)>| samples.into_iter().map(|(id, _)| id).collect::<Vec<_>>();
    let room_samples = |limit| {
        store
            .centroid_samples(&ws, "m", &CentroidSamples::Room { wing: "lab".into(), room: "db".into() }, limit)
            .expect("room samples")
    };
    assert_eq!(ids(room_samples(10)), vec![by_centroid.id.clone(), new.id.clone(), old.id.clone()]);
    assert_eq!(ids(room_samples(1)), vec![by_centroid.id.clone()]);
    assert_eq!(room_samples(10)[1].1, vec![0.0, 1.0, 0.0], "vectors come back as stored");
    let typed = |since: &str| {
        ids(store
            .centroid_samples(
                &ws,
                "m",
                &CentroidSamples::MemoryType { memory_type: MemoryType::Decision, since: at(since) },
                10,
            )
            .expect("type samples"))
    };
    assert_eq!(typed("2024-01-01T00:00:00Z"), vec![elsewhere.id.clone(), new.id.clone(), old.id.clone()]);
    assert_eq!(typed("2025-02-01T00:00:00Z"), vec![elsewhere.id, new.id], "too old drawers are left out");
    assert!(
        store
            .centroid_samples(
                &workspace("other"),
                "m",
                &CentroidSamples::Room { wing: "lab".into(), room: "db".into() },
                10
            )
            .expect("other")
            .is_empty()
    );
}

fn principal(id: &str, kind: mempalace_core::tenancy::PrincipalKind) -> mempalace_core::tenancy::Principal {
    mempalace_core::tenancy::Principal {
        id: mempalace_core::tenancy::PrincipalId::parse(id).expect("test principal ids are valid"),
        kind,
        display_name: Some(format!("{id} (test)")),
        admin: false,
        created_at: at("2026-01-01T00:00:00Z"),
        disabled_at: None,
    }
}

/// Principals, tokens, teams, grants and limits round-trip; changes report
/// whether they changed anything.
pub fn check_directory(store: &dyn Store) {
    use mempalace_core::tenancy::{Grant, Limits, Member, PrincipalKind, Role, Team, TeamId, issue_token};

    assert!(!store.has_principals().expect("has principals"));
    let alice = principal("alice", PrincipalKind::User);
    let bob = principal("bob", PrincipalKind::User);
    let bot = mempalace_core::tenancy::Principal { admin: true, ..principal("ci-bot", PrincipalKind::Agent) };
    for p in [&alice, &bob, &bot] {
        assert!(store.put_principal(p).expect("put principal"));
    }
    assert!(!store.put_principal(&alice).expect("put again"), "an id is taken once");
    assert!(store.has_principals().expect("has principals"));
    assert_eq!(store.principal(&bot.id).expect("principal"), Some(bot.clone()));
    let ids: Vec<String> = store.principals().expect("principals").into_iter().map(|p| p.id.to_string()).collect();
    assert_eq!(ids, ["alice", "bob", "ci-bot"]);
    let off = at("2026-01-02T00:00:00Z");
    assert!(store.set_principal_disabled(&bob.id, Some(off)).expect("disable"));
    assert_eq!(store.principal(&bob.id).expect("principal").expect("bob").disabled_at, Some(off));
    assert!(store.set_principal_disabled(&bob.id, None).expect("enable"));
    let ghost = mempalace_core::tenancy::PrincipalId::parse("ghost").expect("id");
    assert!(!store.set_principal_disabled(&ghost, Some(off)).expect("disable nobody"));
    assert!(store.principal(&ghost).expect("principal").is_none());

    // Tokens: stored by hash, listed newest first, revoked once.
    let (first, secret) = issue_token(&alice.id, "laptop", [1u8; 32], at("2026-01-01T00:00:00Z"), None);
    let (second, _) =
        issue_token(&alice.id, "ci", [2u8; 32], at("2026-01-03T00:00:00Z"), Some(at("2027-01-01T00:00:00Z")));
    let (bobs, _) = issue_token(&bob.id, "", [3u8; 32], at("2026-01-02T00:00:00Z"), None);
    for t in [&first, &second, &bobs] {
        store.put_token(t).expect("put token");
    }
    let stored = store.token(&first.id).expect("token").expect("stored");
    assert_eq!(stored, first);
    assert!(stored.verify(secret.expose(), at("2026-01-05T00:00:00Z")).is_ok());
    let mine: Vec<String> = store.tokens(Some(&alice.id)).expect("tokens").iter().map(|t| t.label.clone()).collect();
    assert_eq!(mine, ["ci", "laptop"]);
    assert_eq!(store.tokens(None).expect("tokens").len(), 3);
    assert!(store.put_token(&first).is_err(), "a token id is stored once");
    let revoked_at = at("2026-01-04T00:00:00Z");
    assert!(store.revoke_token(&first.id, revoked_at).expect("revoke"));
    assert!(!store.revoke_token(&first.id, revoked_at).expect("revoke again"));
    assert_eq!(store.token(&first.id).expect("token").expect("stored").revoked_at, Some(revoked_at));
    store.touch_token(&second.id, revoked_at).expect("touch");
    assert_eq!(store.token(&second.id).expect("token").expect("stored").last_used_at, Some(revoked_at));

    // Teams: the leader is not listed among the members; the leader cannot
    // be removed; a new leader keeps the old one as a member.
    let eng = TeamId::parse("eng").expect("team id");
    let team = Team { id: eng.clone(), leader: alice.id.clone(), members: vec![bob.id.clone()], created_at: off };
    assert!(store.put_team(&team).expect("put team"));
    assert!(!store.put_team(&team).expect("put team again"));
    assert_eq!(store.team(&eng).expect("team"), Some(team.clone()));
    assert!(!store.set_team_member(&eng, &alice.id, false).expect("remove leader"));
    assert!(store.set_team_member(&eng, &bot.id, true).expect("add"));
    assert!(!store.set_team_member(&eng, &bot.id, true).expect("add again"));
    assert!(store.set_team_member(&eng, &bot.id, false).expect("remove"));
    assert!(store.set_team_leader(&eng, &bob.id).expect("new leader"));
    let now_team = store.team(&eng).expect("team").expect("eng");
    assert_eq!((now_team.leader.as_str(), now_team.members.clone()), ("bob", vec![alice.id.clone()]));
    assert_eq!(store.teams().expect("teams").len(), 1);
    assert!(!store.set_team_member(&TeamId::parse("nope").expect("id"), &bob.id, true).expect("no team"));

    // Grants: one per (workspace, member), replaced in place.
    let ws = workspace("team-ws");
    store.ensure_workspace(&ws, off).expect("ensure");
    store.ensure_workspace(&ws, off).expect("ensure twice");
    assert!(store.workspaces().expect("workspaces").contains(&ws));
    let grant = |member: Member, role| Grant {
        workspace: ws.clone(),
        member,
        role,
        granted_at: off,
        granted_by: "local".into(),
    };
    store.put_grant(&grant(Member::Team(eng.clone()), Role::Writer)).expect("grant team");
    store.put_grant(&grant(Member::Principal(bot.id.clone()), Role::Reader)).expect("grant bot");
    store.put_grant(&grant(Member::Principal(bot.id.clone()), Role::Owner)).expect("regrant bot");
    store
        .put_grant(&Grant { workspace: workspace("other"), ..grant(Member::Principal(alice.id.clone()), Role::Reader) })
        .expect("grant elsewhere");
    let here = store.grants(Some(&ws)).expect("grants");
    assert_eq!(here.len(), 2);
    assert_eq!(here.iter().find(|g| g.member == Member::Principal(bot.id.clone())).map(|g| g.role), Some(Role::Owner));
    assert_eq!(store.grants(None).expect("all grants").len(), 3);
    let for_alice =
        store.grants_for(&[Member::Principal(alice.id.clone()), Member::Team(eng.clone())]).expect("grants for");
    assert_eq!(for_alice.len(), 2, "{for_alice:?}");
    assert!(store.delete_grant(&ws, &Member::Principal(bot.id.clone())).expect("revoke"));
    assert!(!store.delete_grant(&ws, &Member::Principal(bot.id.clone())).expect("revoke again"));
    assert!(store.delete_team(&eng).expect("delete team"));
    assert!(store.team(&eng).expect("team").is_none());
    assert!(store.grants(Some(&ws)).expect("grants").is_empty(), "a deleted team's grants go with it");

    // Limits.
    assert_eq!(store.limits(&ws).expect("limits"), None);
    let limits = Limits { drawers: Some(3), bytes: Some(1_000), ..Limits::SHARED_DEFAULT };
    store.set_limits(&ws, &limits).expect("set limits");
    assert_eq!(store.limits(&ws).expect("limits"), Some(limits));
    store.set_limits(&ws, &Limits::default()).expect("clear limits");
    assert_eq!(store.limits(&ws).expect("limits"), Some(Limits::default()));
}

/// Usage follows writes (drawers and their bytes by status, entities,
/// triples) without a scan; the audit trail lists newest first and filters.
pub fn check_usage_and_audit(store: &dyn Store) {
    use mempalace_core::tenancy::{AuditEntry, AuditFilter};

    let ws = workspace("usage");
    let other = workspace("usage-other");
    let a = drawer(&ws, "w", "r", "héllo");
    let b = drawer(&ws, "w", "r2", "twelve bytes");
    store.put_drawers(&[a.clone(), b.clone(), drawer(&other, "w", "r", "elsewhere")]).expect("put");
    let usage = store.usage(&ws).expect("usage");
    assert_eq!((usage.drawers, usage.bytes), (2, 6 + 12));
    store
        .set_drawer_status(&ws, &a.id, DrawerStatus::Invalidated, Some("test"), at("2026-01-01T00:00:00Z"))
        .expect("invalidate");
    assert_eq!(store.usage(&ws).expect("usage").bytes, 12);
    let mut longer = b.clone();
    longer.content = mempalace_core::Content::parse("now twenty-four bytes!!!").expect("content");
    assert!(store.replace_drawer(&longer).expect("replace"));
    assert_eq!(store.usage(&ws).expect("usage").bytes, 24);
    store.delete_drawer(&ws, &b.id).expect("delete");
    assert_eq!(store.usage(&ws).expect("usage"), mempalace_core::tenancy::Usage::default());
    assert_eq!(store.usage(&other).expect("usage").bytes, 9);
    store.add_entities(&[entity(&ws, "Alice", "person")]).expect("entity");
    assert_eq!(store.usage(&ws).expect("usage").entities, 1);
    assert!(store.verify().expect("verify").iter().all(|c| c.ok), "{:?}", store.verify());

    let entry = |ws: &str, actor: &str, action: &str, at_text: &str| AuditEntry {
        seq: 0,
        at: at(at_text),
        workspace: ws.to_string(),
        actor: actor.to_string(),
        action: action.to_string(),
        target: "x".to_string(),
        count: 1,
    };
    let first = store.append_audit(&entry("usage", "alice", "drawer.add", "2026-01-01T00:00:00Z")).expect("audit");
    let second = store.append_audit(&entry("usage", "bob", "drawer.delete", "2026-01-02T00:00:00Z")).expect("audit");
    store.append_audit(&entry("usage-other", "alice", "kg.add", "2026-01-03T00:00:00Z")).expect("audit");
    assert!(second > first);
    let all = store.audit(&AuditFilter { limit: 10, ..AuditFilter::default() }).expect("audit");
    assert_eq!(all.iter().map(|e| e.action.as_str()).collect::<Vec<_>>(), ["kg.add", "drawer.delete", "drawer.add"]);
    let filters = [
        AuditFilter { workspace: Some("usage".into()), limit: 10, ..AuditFilter::default() },
        AuditFilter { actor: Some("alice".into()), limit: 10, ..AuditFilter::default() },
        AuditFilter { action: Some("drawer.".into()), limit: 10, ..AuditFilter::default() },
        AuditFilter { since: Some(at("2026-01-02T00:00:00Z")), limit: 10, ..AuditFilter::default() },
        AuditFilter { before_seq: Some(second), limit: 10, ..AuditFilter::default() },
        AuditFilter { limit: 1, ..AuditFilter::default() },
    ];
    for filter in filters {
        let got = store.audit(&filter).expect("audit");
        let want: Vec<&AuditEntry> = all.iter().filter(|e| filter.matches(e)).take(filter.limit).collect();
        assert_eq!(got.iter().collect::<Vec<_>>(), want, "{filter:?}");
    }
}
