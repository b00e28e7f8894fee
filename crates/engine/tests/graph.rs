//! The knowledge graph and the palace graph end to end on a real palace
//! (SQLite and PostgreSQL) (issue 5): temporal facts, extraction at ingestion, the graph
//! signal in search, and the room graph with explicit tunnels.

mod common;

use common::{Backend, Fixture, set_now, test_clock};

use mempalace_core::time::{DayEdge, Timestamp, parse_timestamp};
use mempalace_core::tunnel::Place;
use mempalace_core::{DrawerId, Hall, Room, Wing, WorkspaceId};
use mempalace_engine::kg::parse_date;
use mempalace_engine::{EngineError, IngestRequest, Palace, SearchRequest};
use mempalace_store::{Direction, StoreError, TripleOutcome};

fn palace(backend: Backend) -> (Fixture, Palace) {
    let (fixture, store) = common::store(backend).expect("PostgreSQL tests skipped");
    (fixture, Palace::new(store, WorkspaceId::default_workspace()))
}

fn day(text: &str, edge: DayEdge) -> Option<Timestamp> {
    parse_date(Some(text), "test date", edge).unwrap()
}

fn fact_day(fact: &mempalace_engine::kg::Fact) -> Option<String> {
    fact.valid_from.map(|t| t.format("%Y-%m-%d").to_string())
}

fn objects(palace: &Palace, entity: &str, as_of: &str) -> Vec<String> {
    palace
        .kg_query(entity, day(as_of, DayEdge::End), Direction::Outgoing)
        .unwrap()
        .into_iter()
        .map(|f| f.object)
        .collect()
}

fn ingest(palace: &Palace, wing: &str, room: &str, text: &str) -> DrawerId {
    let request = IngestRequest::new(Wing::parse(wing).unwrap(), Room::parse(room).unwrap(), text, "test");
    let report = palace.ingest(request).expect("ingest");
    report.drawer_ids()[0].clone()
}

/// As-of before, during and after a window; "what did we use before
/// PostgreSQL?" from the timeline; ending and re-stating; the identical
/// open fact; inverted windows; directions; statistics.
fn temporal_facts_answer_what_held_when(backend: Backend) {
    let (_dir, palace) = palace(backend);
    let backend = "Crawbl Backend";
    let mysql = palace
        .kg_add(
            backend,
            "uses",
            "MySQL",
            day("2024-06-01", DayEdge::Start),
            day("2025-01-14", DayEdge::End),
            None,
            None,
            None,
        )
        .unwrap();
    let postgres = palace
        .kg_add(backend, "uses", "PostgreSQL", day("2025-01-15", DayEdge::Start), None, None, None, None)
        .unwrap();
    assert!(matches!(mysql, TripleOutcome::Added(_)) && matches!(postgres, TripleOutcome::Added(_)));

    assert!(objects(&palace, backend, "2024-05-31").is_empty(), "before any window");
    assert_eq!(objects(&palace, backend, "2024-09-01"), vec!["MySQL"]);
    assert_eq!(objects(&palace, backend, "2025-01-14"), vec!["MySQL"], "a date-only end lasts the whole day");
    assert_eq!(objects(&palace, backend, "2025-01-15"), vec!["PostgreSQL"]);
    assert_eq!(objects(&palace, backend, "2030-01-01"), vec!["PostgreSQL"]);

    // "What database did we use before PostgreSQL?"
    let timeline = palace.kg_timeline(Some(backend)).unwrap();
    let switch = timeline.iter().find(|f| f.object == "PostgreSQL").unwrap().valid_from.unwrap();
    let before: Vec<&str> = timeline
        .iter()
        .filter(|f| f.predicate == "uses" && f.valid_to.is_some_and(|to| to < switch))
        .map(|f| f.object.as_str())
        .collect();
    assert_eq!(before, vec!["MySQL"]);

    // The same current fact is not stored twice: a later start is covered
    // by the known one; an earlier one is refused, not dropped (issue 15).
    let again = palace.kg_add(backend, "USES", "postgresql", day("2025-03-01", DayEdge::Start), None, None, None, None);
    assert_eq!(again.unwrap(), TripleOutcome::Existing(postgres.id().to_string()));
    let earlier =
        palace.kg_add(backend, "uses", "PostgreSQL", day("2024-12-01", DayEdge::Start), None, None, None, None);
    let message = earlier.unwrap_err().to_string();
    assert!(message.contains("current since 2025-01-15") && message.contains("kg invalidate"), "{message}");
    // An end before the fact began is refused, not clamped (issue 15).
    let message =
        palace.kg_invalidate(backend, "uses", "PostgreSQL", day("2024-12-31", DayEdge::End)).unwrap_err().to_string();
    assert!(message.contains("before the fact began (2025-01-15"), "{message}");
    assert_eq!(objects(&palace, backend, "2025-02-01"), vec!["PostgreSQL"], "still current");

    // Ending, then stating again: two facts, the new one current.
    assert_eq!(palace.kg_invalidate(backend, "uses", "PostgreSQL", day("2025-06-30", DayEdge::End)).unwrap(), 1);
    assert_eq!(palace.kg_invalidate(backend, "uses", "PostgreSQL", None).unwrap(), 0, "nothing current to end");
    assert!(objects(&palace, backend, "2025-07-01").is_empty());
    let restated = palace
        .kg_add(backend, "uses", "PostgreSQL", day("2025-08-01", DayEdge::Start), None, None, None, None)
        .unwrap();
    assert!(matches!(&restated, TripleOutcome::Added(id) if id != postgres.id()));
    assert_eq!(objects(&palace, backend, "2025-07-15"), Vec::<String>::new());
    assert_eq!(objects(&palace, backend, "2025-09-01"), vec!["PostgreSQL"]);
    assert_eq!(objects(&palace, backend, "2025-03-01"), vec!["PostgreSQL"], "the ended window still answers");

    // Timeline: in time order, old windows first.
    let timeline = palace.kg_timeline(Some(backend)).unwrap();
    let order: Vec<(String, bool)> = timeline.iter().map(|f| (f.object.clone(), f.valid_to.is_some())).collect();
    assert_eq!(
        order,
        vec![("MySQL".to_string(), true), ("PostgreSQL".to_string(), true), ("PostgreSQL".to_string(), false)]
    );

    // A start given for an undated (auto-extracted) fact dates it, and says
    // so (issue 15: the date was dropped).
    let undated = palace.kg_add("Rover", "uses", "ROS 2", None, None, None, None, Some("auto".into())).unwrap();
    let dated = palace.kg_add("Rover", "uses", "ROS 2", day("2024-03-01", DayEdge::Start), None, None, None, None);
    match dated.unwrap() {
        TripleOutcome::Dated { replaced, id } => {
            assert_eq!(replaced, undated.id());
            assert_ne!(id, replaced);
        }
        other => panic!("{other:?}"),
    }
    let facts = palace.kg_query("Rover", None, Direction::Outgoing).unwrap();
    assert_eq!(facts.len(), 1, "one fact, now dated: {facts:?}");
    assert_eq!(fact_day(&facts[0]), Some("2024-03-01".to_string()));
    assert!(objects(&palace, "Rover", "2024-02-01").is_empty());

    // Inverted windows are refused and store nothing.
    let inverted = palace.kg_add(
        "Alice",
        "uses",
        "Vim",
        day("2025-02-01", DayEdge::Start),
        day("2025-01-01", DayEdge::End),
        None,
        None,
        None,
    );
    let message = inverted.unwrap_err().to_string();
    assert!(message.contains("before valid_from"), "{message}");
    assert!(palace.kg_query("Alice", None, Direction::Both).unwrap().is_empty());

    // Directions.
    let incoming = palace.kg_query("MySQL", None, Direction::Incoming).unwrap();
    assert_eq!(incoming.len(), 1);
    assert_eq!((incoming[0].direction, incoming[0].subject.as_str()), ("incoming", backend));
    assert!(palace.kg_query("MySQL", None, Direction::Outgoing).unwrap().is_empty());

    let stats = palace.kg_stats().unwrap();
    // Three entities and facts of the backend's story, and the dated Rover fact.
    assert_eq!((stats.entities, stats.triples, stats.current, stats.expired), (5, 4, 2, 2));
    assert_eq!(stats.predicates, vec![("uses".to_string(), 4)]);

    // Bad names and predicates say what to do.
    let error = palace.kg_add(" ", "uses", "x", None, None, None, None, None).unwrap_err().to_string();
    assert!(error.contains("1–128 characters"), "{error}");
    assert!(palace.kg_add("a", "uses", "b", None, None, Some(1.5), None, None).is_err(), "confidence above 1");
}

/// Limits per workspace refuse new entities and facts with a clear error.
fn knowledge_graph_limits_are_enforced(backend: Backend) {
    let (_dir, palace) = palace(backend);
    let palace = palace.with_kg_limits(3, 2);
    palace.kg_add("A", "uses", "B", None, None, None, None, None).unwrap();
    palace.kg_add("A", "owns", "B", None, None, None, None, None).unwrap();
    let error = palace.kg_add("A", "maintains", "B", None, None, None, None, None).unwrap_err();
    assert!(matches!(error, EngineError::Store(StoreError::Limit { what: "triples", limit: 2, .. })), "{error}");
    let palace = palace.with_kg_limits(3, 10);
    palace.kg_add("A", "manages", "C", None, None, None, None, None).unwrap();
    let error = palace.kg_add("A", "manages", "D", None, None, None, None, None).unwrap_err();
    assert!(error.to_string().contains("entities"), "{error}");
    assert_eq!(palace.kg_stats().unwrap().entities, 3);
}

/// Ingestion extracts entities and facts, dated by the drawer and citing
/// it; a switch ends the old fact; counts land on the drawer; a wrong
/// extraction can be deleted by id.
fn ingestion_extracts_facts_citing_their_drawer(backend: Backend) {
    let (_dir, palace) = palace(backend);
    let palace = palace.with_clock(test_clock);
    set_now("2025-01-10T09:00:00Z");
    let first = ingest(&palace, "crawbl", "decisions", "Crawbl Backend uses MySQL for the billing tables.");
    let drawer = palace.drawer(&first).unwrap();
    assert_eq!((drawer.entity_count, drawer.triple_count), (2, 1));
    assert!(drawer.entities.contains(&"MySQL".to_string()), "{:?}", drawer.entities);

    set_now("2025-03-01T09:00:00Z");
    let second = ingest(
        &palace,
        "crawbl",
        "decisions",
        "Crawbl Backend migrated from MySQL to Postgres last week, after the benchmark results came in.",
    );
    let facts = palace.kg_timeline(Some("Crawbl Backend")).unwrap();
    type Window = (Option<Timestamp>, Option<Timestamp>);
    let summary: Vec<(String, Option<DrawerId>, Window)> =
        facts.iter().map(|f| (f.object.clone(), f.source_drawer_id.clone(), (f.valid_from, f.valid_to))).collect();
    let jan = parse_timestamp("2025-01-10T09:00:00Z", "t", DayEdge::Start).unwrap();
    let mar = parse_timestamp("2025-03-01T09:00:00Z", "t", DayEdge::Start).unwrap();
    assert_eq!(
        summary,
        vec![
            ("MySQL".to_string(), Some(first.clone()), (Some(jan), Some(mar))),
            ("PostgreSQL".to_string(), Some(second.clone()), (Some(mar), None)),
        ]
    );

    // Names the palace knows are recognised in later text, whatever the case.
    set_now("2025-03-02T09:00:00Z");
    let third = ingest(&palace, "crawbl", "ops", "the crawbl backend was slow this morning, nothing else to report.");
    assert!(palace.drawer(&third).unwrap().entities.contains(&"Crawbl Backend".to_string()));

    // Review: a wrong fact is deleted by id; the drawer stays.
    let wrong = facts[1].id.clone();
    palace.kg_delete(&wrong).unwrap();
    assert!(matches!(palace.kg_delete(&wrong), Err(EngineError::NotFound { .. })));
    assert!(palace.drawer(&second).is_ok());
    assert_eq!(palace.kg_timeline(Some("Crawbl Backend")).unwrap().len(), 1);
}

fn rank_of(palace: &Palace, query: &str, skip_graph: bool, target: &DrawerId) -> Option<usize> {
    let request = SearchRequest {
        query: query.into(),
        limit: mempalace_core::layers::ResultLimit::constant(10),
        skip_access_tracking: true,
        skip_graph,
        ..Default::default()
    };
    palace.search(&request).unwrap().hits.iter().position(|hit| &hit.drawer.id == target)
}

/// A query naming an entity ranks drawers linked to it higher with the
/// graph signal than without: directly mentioning drawers, and drawers
/// about an entity a current fact links to it.
fn naming_an_entity_ranks_linked_drawers_higher(backend: Backend) {
    let (_dir, palace) = palace(backend);
    palace.kg_add("Alice", "owns", "Auth Module", None, None, None, None, None).unwrap();
    let linked = ingest(&palace, "work", "auth", "The auth module token refresh bug was fixed on Tuesday.");
    let mentions = ingest(&palace, "work", "people", "Alice booked the team lunch for Friday at noon.");
    let direct = ingest(&palace, "work", "people", "Status of the Alice handover: done.");
    let unlinked = ingest(&palace, "work", "misc", "The handover document for the status dashboard is in the wiki.");
    for text in [
        "The status page shows every service as healthy.",
        "Status meetings moved to Thursday mornings.",
        "What is the status of the printer on the third floor?",
    ] {
        ingest(&palace, "work", "misc", text);
    }
    assert!(palace.drawer(&linked).unwrap().entities.contains(&"Auth Module".to_string()));

    // The linked drawer shares no word with the question: only the graph finds it.
    let question = "What is Alice working on these days?";
    assert_eq!(rank_of(&palace, question, true, &linked), None);
    let with_graph = rank_of(&palace, question, false, &linked);
    assert!(with_graph.is_some(), "the drawer about Alice's module is found through the graph");
    assert!(rank_of(&palace, question, false, &mentions) < with_graph, "direct mentions stay ahead of linked ones");

    // A drawer naming the entity beats ones sharing only other words.
    let query = "status of the Alice handover";
    let without = rank_of(&palace, query, true, &direct).unwrap();
    let with = rank_of(&palace, query, false, &direct).unwrap();
    assert!(with <= without, "with graph {with}, without {without}");
    assert_eq!(with, 0);
    // Scores are absolute evidence: the graph raises the drawer naming the
    // entity and leaves one sharing only the other words where it was, so
    // the gap between them grows.
    let scores = |skip_graph| {
        let request = SearchRequest {
            query: query.into(),
            limit: mempalace_core::layers::ResultLimit::constant(10),
            skip_access_tracking: true,
            skip_graph,
            ..Default::default()
        };
        let hits = palace.search(&request).unwrap().hits;
        assert_eq!(hits[0].drawer.id, direct);
        let unlinked = hits.iter().find(|hit| hit.drawer.id == unlinked).expect("shares two words").score;
        (hits[0].score, unlinked)
    };
    let ((direct_without, unlinked_without), (direct_with, unlinked_with)) = (scores(true), scores(false));
    assert!(direct_with > direct_without, "the graph adds evidence: {direct_with} vs {direct_without}");
    assert!((unlinked_with - unlinked_without).abs() < 1e-9, "{unlinked_with} vs {unlinked_without}");
    assert!(direct_with - unlinked_with > direct_without - unlinked_without);
}

fn file(palace: &Palace, wing: &str, room: &str, hall: &str, text: &str) {
    let mut request = IngestRequest::new(Wing::parse(wing).unwrap(), Room::parse(room).unwrap(), text, "test");
    request.hall = Some(Hall::parse(hall).unwrap());
    request.raw = true;
    palace.ingest(request).unwrap();
}

fn place(wing: &str, room: &str) -> Place {
    Place { wing: Wing::parse(wing).unwrap(), room: Room::parse(room).unwrap() }
}

/// Traverse, tunnels and stats on a palace of known structure return
/// exactly the expected rooms; the cache follows writes; explicit tunnels
/// are symmetric and followable.
fn palace_graph_on_a_known_structure(backend: Backend) {
    let (_dir, palace) = palace(backend);
    // wing_code: auth, deploy, testing; wing_project: auth, roadmap;
    // wing_home: garden, roadmap; wing_lab: sensors (isolated); general everywhere.
    for (wing, room, hall, n) in [
        ("wing_code", "auth", "hall_facts", 3),
        ("wing_code", "deploy", "hall_events", 2),
        ("wing_code", "testing", "hall_facts", 1),
        ("wing_project", "auth", "hall_events", 1),
        ("wing_project", "roadmap", "hall_facts", 2),
        ("wing_home", "garden", "hall_events", 1),
        ("wing_home", "roadmap", "hall_advice", 1),
        ("wing_lab", "sensors", "hall_facts", 4),
        ("wing_code", "general", "hall_facts", 1),
        ("wing_lab", "general", "hall_facts", 1),
    ] {
        for i in 0..n {
            file(&palace, wing, room, hall, &format!("{wing} {room} note number {i}"));
        }
    }

    let rooms = |reached: Vec<mempalace_engine::graph::Reached>| {
        reached.into_iter().map(|r| (r.room, r.hop)).collect::<Vec<_>>()
    };
    let one_hop = palace.traverse("deploy", Some(1)).unwrap();
    assert_eq!(one_hop[1].connected_via, vec!["wing_code"]);
    assert_eq!(
        rooms(one_hop),
        vec![("deploy".into(), 0), ("auth".into(), 1), ("testing".into(), 1)],
        "one hop: rooms of wing_code, largest first"
    );
    assert_eq!(
        rooms(palace.traverse("deploy", None).unwrap()),
        vec![("deploy".into(), 0), ("auth".into(), 1), ("testing".into(), 1), ("roadmap".into(), 2)]
    );
    assert_eq!(
        rooms(palace.traverse("deploy", Some(10)).unwrap()),
        vec![
            ("deploy".into(), 0),
            ("auth".into(), 1),
            ("testing".into(), 1),
            ("roadmap".into(), 2),
            ("garden".into(), 3)
        ],
        "sensors is in no shared wing and general is not a node"
    );
    match palace.traverse("auht", None) {
        Err(EngineError::RoomNotFound { suggestions, .. }) => assert!(suggestions.is_empty()),
        other => panic!("{other:?}"),
    }
    match palace.traverse("road", None) {
        Err(EngineError::RoomNotFound { suggestions, .. }) => assert_eq!(suggestions, vec!["roadmap"]),
        other => panic!("{other:?}"),
    }

    let tunnel_rooms = |a: Option<&str>, b: Option<&str>| {
        palace.find_tunnels(a, b).unwrap().into_iter().map(|t| (t.room, t.wings, t.count)).collect::<Vec<_>>()
    };
    assert_eq!(
        tunnel_rooms(None, None),
        vec![
            ("auth".into(), vec!["wing_code".to_string(), "wing_project".into()], 4),
            ("roadmap".into(), vec!["wing_home".to_string(), "wing_project".into()], 3),
        ]
    );
    assert_eq!(tunnel_rooms(Some("wing-home"), None).len(), 1, "wing names are normalised");
    assert_eq!(tunnel_rooms(Some("wing_code"), Some("wing_project"))[0].0, "auth");
    assert!(tunnel_rooms(Some("wing_code"), Some("wing_home")).is_empty());

    let stats = palace.graph_stats().unwrap();
    assert_eq!((stats.total_rooms, stats.total_room_instances, stats.tunnel_rooms), (6, 8, 2));
    // auth: 1 wing pair × 2 halls; roadmap: 1 pair × 2 halls.
    assert_eq!(stats.total_edges, 4);
    assert_eq!(
        stats.rooms_per_wing,
        vec![("wing_code".into(), 3), ("wing_home".into(), 2), ("wing_project".into(), 2), ("wing_lab".into(), 1)]
    );

    // The cache follows writes: a new room in wing_lab joins it to wing_code.
    file(&palace, "wing_lab", "testing", "hall_facts", "lab testing note");
    assert_eq!(palace.graph_stats().unwrap().tunnel_rooms, 3);
    let reached = rooms(palace.traverse("sensors", Some(1)).unwrap());
    assert_eq!(reached, vec![("sensors".into(), 0), ("testing".into(), 1)]);

    // Explicit tunnels: symmetric ids, listed, followed, walked, deleted.
    let (tunnel, created) = palace
        .create_tunnel(place("wing_home", "garden"), place("wing_lab", "sensors"), Some("soil probes".into()), None)
        .unwrap();
    assert!(created);
    let (same, created_again) =
        palace.create_tunnel(place("wing_lab", "sensors"), place("wing_home", "garden"), None, None).unwrap();
    assert_eq!((same.id.clone(), created_again), (tunnel.id.clone(), false));
    assert_eq!(palace.list_tunnels(Some("wing_lab")).unwrap().len(), 1);
    assert!(palace.list_tunnels(Some("wing_code")).unwrap().is_empty());
    let followed = palace.follow_tunnels(&Wing::parse("wing_lab").unwrap(), &Room::parse("sensors").unwrap()).unwrap();
    assert_eq!(followed.len(), 1);
    assert_eq!(followed[0].1, place("wing_home", "garden"));
    let walk = palace.traverse("garden", Some(1)).unwrap();
    let via_tunnel = walk.iter().find(|r| r.room == "sensors").expect("the tunnel is walked");
    assert_eq!(via_tunnel.connected_via, vec!["tunnel:soil probes"]);
    assert_eq!(palace.graph_stats().unwrap().explicit_tunnels, 1);
    palace.delete_tunnel(&tunnel.id).unwrap();
    assert!(matches!(palace.delete_tunnel(&tunnel.id), Err(EngineError::NotFound { .. })));
    assert!(palace.traverse("garden", Some(1)).unwrap().iter().all(|r| r.room != "sensors"));
}

on_both!(
    temporal_facts_answer_what_held_when,
    knowledge_graph_limits_are_enforced,
    ingestion_extracts_facts_citing_their_drawer,
    naming_an_entity_ranks_linked_drawers_higher,
    palace_graph_on_a_known_structure,
);
