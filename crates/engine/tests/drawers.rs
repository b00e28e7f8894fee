//! Drawer management on a real palace (SQLite and
//! PostgreSQL): pages, in-place updates that keep the id, agent diaries, and sessions whose end merges near-identical
//! insights and writes the episodic summary.

mod common;

use common::{Backend, Fixture};

use mempalace_core::{Content, DrawerStatus, Hall, Room, Wing, WorkspaceId};
use mempalace_engine::drawers::{DiaryEntry, DrawerUpdate};
use mempalace_engine::{IngestRequest, Palace, SearchRequest};
use serde_json::{Map, json};

fn palace(backend: Backend) -> (Fixture, Palace) {
    let (fixture, store) = common::store(backend).expect("PostgreSQL tests skipped");
    (fixture, Palace::new(store, WorkspaceId::default_workspace()))
}

fn file(palace: &Palace, wing: &str, room: &str, text: &str) -> mempalace_core::DrawerId {
    let mut request = IngestRequest::new(Wing::parse(wing).unwrap(), Room::parse(room).unwrap(), text, "test");
    request.raw = true;
    palace.ingest(request).unwrap().drawer_ids()[0].clone()
}

fn updates_keep_the_id_and_move_text_index_and_counts(backend: Backend) {
    let (_dir, palace) = palace(backend);
    let id = file(&palace, "lab", "notes", "The centrifuge hums at 4000 rpm.");
    file(&palace, "lab", "notes", "Pipettes are calibrated every Monday.");
    let update = DrawerUpdate {
        content: Some(Content::parse("The centrifuge now rattles above 6000 rpm.").unwrap()),
        room: Some(Room::parse("incidents").unwrap()),
        ..DrawerUpdate::default()
    };
    let updated = palace.update_drawer(&id, update).unwrap();
    assert_eq!(updated.id, id);
    let hits = |q: &str| {
        palace
            .search(&SearchRequest { query: q.into(), ..SearchRequest::default() })
            .unwrap()
            .hits
            .into_iter()
            .map(|h| h.drawer.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(hits("rattles"), vec![id.clone()], "the new text is found");
    assert!(hits("hums").is_empty(), "the old text is not");
    let page = palace.page_drawers(Some("lab"), Some("incidents"), 0, 10).unwrap();
    assert_eq!((page.total, page.drawers.len()), (1, 1));
    assert_eq!(palace.page_drawers(Some("lab"), None, 0, 1).unwrap().total, 2);
    let missing = mempalace_core::DrawerId::parse("drawer_nowhere").unwrap();
    assert!(palace.update_drawer(&missing, DrawerUpdate::default()).is_err());
}

fn diaries_are_per_agent_and_newest_first(backend: Backend) {
    let (_dir, palace) = palace(backend);
    let entry = |agent: &str, text: &str| DiaryEntry {
        agent: agent.into(),
        text: Content::parse(text).unwrap(),
        topic: "work".into(),
        wing: Wing::parse("wing_claude").unwrap(),
        room: Room::parse("diary").unwrap(),
        hall: Some(Hall::parse("hall_diary").unwrap()),
        context: Map::new(),
    };
    palace.diary_write(entry("Claude", "first entry")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(5));
    palace.diary_write(entry("claude", "second entry")).unwrap();
    palace.diary_write(entry("codex", "someone else's")).unwrap();
    let page = palace.diary_read("CLAUDE", None, Some("diary"), 10).unwrap();
    assert_eq!(page.total, 2);
    let texts: Vec<&str> = page.entries.iter().map(|d| d.content.as_str()).collect();
    assert_eq!(texts, vec!["second entry", "first entry"]);
    assert_eq!(page.entries[0].context["topic"], "work");
    assert_eq!(palace.diary_read("claude", None, Some("diary"), 1).unwrap().entries.len(), 1);
}

fn ending_a_session_merges_near_identical_insights_and_summarises(backend: Backend) {
    let (_dir, palace) = palace(backend);
    let session = palace.start_session(Some("arm-01".into()), Map::new()).unwrap();
    let wing = Wing::parse("default").unwrap();
    let learn = |text: &str| {
        let learned = palace.learn(text, &wing, Some(&json!({"task": {"success": true}})), Some(&session.id)).unwrap();
        learned.report.drawer_ids()[0].clone()
    };
    let a = learn("the red cube slips when grip force is below 10 N");
    let b = learn("the red cube slips when the grip force is below 10 N today");
    let c = learn("red cube slips when grip force below 10 N");
    let other = learn("the conveyor stops whenever the humidity sensor reads above 80 percent");
    let ended = palace.end_session(&session.id, Some(0.7)).unwrap();
    assert_eq!(ended.merged_groups, 1, "{:?}", ended.superseded);
    assert_eq!(ended.superseded.len(), 2);
    let kept = &ended.superseded[0].1;
    assert!([&a, &b, &c].contains(&kept));
    for (gone, keeper) in &ended.superseded {
        assert_eq!(keeper, kept);
        let drawer = palace.drawer(gone).unwrap();
        assert_eq!(drawer.status, DrawerStatus::Superseded);
        assert!(drawer.status_reason.unwrap().contains(kept.as_str()));
    }
    assert_eq!(palace.drawer(&other).unwrap().status, DrawerStatus::Active);
    let summary = ended.summary.expect("a summary");
    // Written from what the session keeps: the merged insights' keeper.
    let keeper = palace.drawer(kept).unwrap();
    assert_eq!(summary.l0_abstract, keeper.content.as_str(), "{summary:?}");
    assert!(summary.summary.contains("conveyor stops"), "{summary:?}");
    assert!(summary.expires_at.is_some());
    assert_eq!(palace.store().episodic_summaries(palace.workspace()).unwrap().len(), 1);
    let stored = palace.session(&session.id).unwrap();
    assert_eq!((stored.status.as_str(), stored.outcome_score), ("ended", Some(0.7)));
    assert!(palace.end_session("no-such-session", None).is_err());
}

on_both!(
    updates_keep_the_id_and_move_text_index_and_counts,
    diaries_are_per_agent_and_newest_first,
    ending_a_session_merges_near_identical_insights_and_summarises,
);
