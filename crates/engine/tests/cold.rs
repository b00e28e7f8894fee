//! The cold path and memory extraction on a real palace (SQLite and
//! PostgreSQL) without a language model: `process` classifies and files
//! raw drawers in their hall, merges a repeat into its cluster, supersedes
//! an older drawer a newer one contradicts (ending the older one's fact),
//! and extracts memories from conversations, user-scoped to their owner;
//! extraction updates and retracts stored memories without deleting any;
//! the injector offers episode abstracts, embedding each once.
//! The model path is tested through the real client against a local
//! protocol server in the binary's tests.

// Tests take their setup (model directory, servers) from the environment
// that scripts/test.sh prepares.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{Backend, Fixture, minilm};
use mempalace_core::memory::{Decision, MemoryScope, Speaker, Turn};
use mempalace_core::{DrawerState, DrawerStatus, PipelineTier, Room, Wing, WorkspaceId};
use mempalace_embed::Embedder;
use mempalace_engine::memories::{ExtractOptions, ExtractPath, MEMORY_WING};
use mempalace_engine::{IngestRequest, Palace};

fn palace(backend: Backend) -> (Fixture, Palace) {
    let (fixture, store) = common::store(backend).expect("PostgreSQL tests skipped");
    (fixture, Palace::new(store, WorkspaceId::default_workspace()).with_embedder(minilm()))
}

fn file(
    palace: &Palace,
    wing: &str,
    text: &str,
    session: Option<&str>,
    owner: Option<&str>,
) -> mempalace_core::DrawerId {
    let mut request = IngestRequest::new(Wing::parse(wing).unwrap(), Room::parse("notes").unwrap(), text, "test");
    request.raw = true;
    request.session_id = session.map(str::to_string);
    request.owner_user_id = owner.map(str::to_string);
    palace.ingest(request).unwrap().drawer_ids()[0].clone()
}

fn the_cold_path_classifies_clusters_and_supersedes(backend: Backend) {
    let (_fixture, palace) = palace(backend);
    let old = file(&palace, "infra", "Production runs on AWS.", None, None);
    palace.process_all("first").unwrap();
    let first = palace.drawer(&old).unwrap();
    assert_eq!((first.state, first.pipeline_tier), (DrawerState::Processed, PipelineTier::Heuristic));
    assert_eq!(first.hall.as_ref().map(|h| h.as_str()), Some("general"), "no hall keyword");
    let new = file(&palace, "infra", "Production runs on GCP now.", None, None);
    let report = palace.process_all("second").unwrap();
    assert_eq!(report.model_fallback.as_deref(), Some("no language model is configured"));
    assert_eq!(report.superseded, vec![(old.clone(), new.clone())], "{report:?}");
    let older = palace.drawer(&old).unwrap();
    assert_eq!((older.status, older.superseded_by.as_ref()), (DrawerStatus::Superseded, Some(&new)));
    assert!(older.status_reason.unwrap().contains("cloud"), "the rules say which slot changed");
    // Nothing is deleted: the superseded drawer is still there, hidden.
    assert_eq!(palace.drawer(&new).unwrap().status, DrawerStatus::Active);
}

fn conversations_yield_scoped_memories_that_later_ones_update(backend: Backend) {
    let (_fixture, palace) = palace(backend);
    let talk = "user: I live in Berlin and I always use pnpm.\nassistant: Noted!\nuser: In this repo we use Vitest for tests.\nassistant: Got it.";
    file(&palace, "chat", talk, Some("s1"), Some("alex"));
    let report = palace.process_all("worker").unwrap();
    assert_eq!(report.memories, (3, 0, 0), "{report:?}");
    let alex = palace.memories(Some("alex")).unwrap();
    let scopes: Vec<(MemoryScope, Option<&str>)> =
        alex.iter().map(|m| (m.memory.scope, m.drawer.owner_user_id.as_deref())).collect();
    assert_eq!(
        scopes,
        vec![(MemoryScope::User, Some("alex")), (MemoryScope::User, Some("alex")), (MemoryScope::Workspace, None)],
        "personal memories first, owned by the user; the workspace one shared"
    );
    assert!(alex.iter().all(|m| m.drawer.wing.as_str() == MEMORY_WING));
    let others = palace.memories(Some("sam")).unwrap();
    assert_eq!(others.len(), 1, "another user sees only the workspace memory");
    assert_eq!(others[0].memory.scope, MemoryScope::Workspace);

    let later = [
        Turn { speaker: Speaker::User, text: "Big news: I moved to Lisbon last month.".into() },
        Turn { speaker: Speaker::User, text: "I don't touch pnpm anymore, forget that.".into() },
    ];
    let options = ExtractOptions { user: Some("alex".into()), ..ExtractOptions::default() };
    let dry = palace.extract_memories(&later, &ExtractOptions { dry_run: true, ..options.clone() }).unwrap();
    assert_eq!(dry.applied.len(), 2);
    assert_eq!(palace.memories(Some("alex")).unwrap().len(), 3, "a dry run writes nothing");
    let done = palace.extract_memories(&later, &options).unwrap();
    assert!(matches!(done.path, ExtractPath::Rules(_)));
    let kinds: Vec<&str> = done.applied.iter().map(|a| a.decision.kind()).collect();
    assert_eq!(kinds, vec!["update", "delete"], "{done:?}");
    let Decision::Update { id: berlin, .. } = &done.applied[0].decision else { unreachable!() };
    let old = palace.drawer(&mempalace_core::DrawerId::parse(berlin).unwrap()).unwrap();
    assert_eq!(old.status, DrawerStatus::Superseded);
    assert_eq!(old.superseded_by, done.applied[0].filed);
    let now: Vec<String> = palace.memories(Some("alex")).unwrap().into_iter().map(|m| m.memory.observation).collect();
    assert!(
        now.iter().any(|o| o.contains("Lisbon")) && !now.iter().any(|o| o.contains("Berlin") || o.contains("pnpm")),
        "{now:?}"
    );
}

fn a_contradicted_drawer_s_facts_end(backend: Backend) {
    let (_fixture, palace) = palace(backend);
    let old = file(&palace, "shop", "Order Service uses PostgreSQL for its tables.", None, None);
    palace.process_all("first").unwrap();
    let open = |object: &str| {
        palace
            .kg_query("Order Service", None, mempalace_store::Direction::Outgoing)
            .unwrap()
            .iter()
            .any(|fact| fact.object.eq_ignore_ascii_case(object) && fact.current)
    };
    assert!(open("PostgreSQL"), "the older drawer's fact");
    let new = file(&palace, "shop", "Order Service uses MySQL for its tables now.", None, None);
    let report = palace.process_all("second").unwrap();
    assert_eq!(report.superseded, vec![(old, new)], "{report:?}");
    assert_eq!(report.facts_ended, 1, "{report:?}");
    assert!(!open("PostgreSQL") && open("MySQL"), "the old fact ended, the new one holds");
}

fn the_injector_offers_episode_abstracts_and_embeds_them_once(backend: Backend) {
    let (_fixture, palace) = palace(backend);
    let session = palace.start_session(None, serde_json::Map::new()).unwrap();
    file(
        &palace,
        "lab",
        "The conveyor belt jams when the humidity rises above 80 percent. We dried the room and it ran again.",
        Some(&session.id),
        None,
    );
    let abstract_ = palace.end_session(&session.id, None).unwrap().summary.expect("a summary").l0_abstract;
    assert_eq!(abstract_, "The conveyor belt jams when the humidity rises above 80 percent.");
    let cached = || {
        let hash = mempalace_core::ContentHash::of(&abstract_);
        palace.store().embeddings_by_hash(palace.workspace(), minilm().model_id(), &[hash]).unwrap().len()
    };
    assert_eq!(cached(), 0, "an abstract is no drawer's text");
    let injected = palace.inject_for("Why does the conveyor belt keep jamming when it is humid?", None).unwrap();
    let section = injected.section.expect("a section");
    assert!(section.lines().any(|line| line == format!("- {abstract_}")), "the abstract on its own line: {section}");
    assert_eq!(cached(), 1, "its vector is kept for the next message");
}

on_both!(
    the_cold_path_classifies_clusters_and_supersedes,
    conversations_yield_scoped_memories_that_later_ones_update,
    the_injector_offers_episode_abstracts_and_embeds_them_once,
    a_contradicted_drawer_s_facts_end
);
