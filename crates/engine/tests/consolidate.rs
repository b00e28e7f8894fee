//! Consolidation on a real palace (SQLite and PostgreSQL), without a
//! language model: sessions become episodes once idle and are summarised
//! again when they grow; what two episodes both say becomes a semantic
//! memory with its knowledge-graph fact, once; episodes are searched and
//! drill down to their drawers; dreaming digests five episodes once;
//! prune archives faded drawers (a dry run changes nothing, 100 are kept)
//! and restore brings one back. The model path is tested through the real
//! client against a local protocol server in the binary's tests.

// Tests take their setup (model directory, servers) from the environment
// that scripts/test.sh prepares.
#![allow(clippy::disallowed_methods)]

mod common;

use common::{Backend, Fixture, minilm, set_now, test_clock};
use mempalace_core::{DrawerId, DrawerStatus, Importance, Room, Wing, WorkspaceId};
use mempalace_engine::memories::MEMORY_WING;
use mempalace_engine::work::JobSettings;
use mempalace_engine::{IngestRequest, Palace};
use mempalace_store::Direction;

fn palace(backend: Backend, jobs: JobSettings) -> (Fixture, Palace) {
    let (fixture, store) = common::store(backend).expect("PostgreSQL tests skipped");
    let palace = Palace::new(store, WorkspaceId::default_workspace())
        .with_embedder(minilm())
        .with_clock(test_clock)
        .with_jobs(jobs);
    (fixture, palace)
}

fn say(palace: &Palace, session: &str, text: &str) -> DrawerId {
    let mut request = IngestRequest::new(Wing::parse("chat").unwrap(), Room::parse("general").unwrap(), text, "hook");
    request.session_id = Some(session.to_string());
    request.owner_user_id = Some("alex".into());
    palace.ingest(request).unwrap().drawer_ids()[0].clone()
}

fn sessions_become_episodes_and_what_recurs_is_promoted(backend: Backend) {
    let (_fixture, palace) = palace(backend, JobSettings::default());
    set_now("2026-03-01T10:00:00Z");
    say(&palace, "s1", "> I prefer tabs over spaces for indentation in every project.\nNoted, tabs it is.");
    set_now("2026-03-01T10:01:00Z");
    say(&palace, "s1", "> We are migrating the billing service to PostgreSQL this week.\nGood plan, I will help.");

    set_now("2026-03-01T10:20:00Z");
    let report = palace.consolidate_all().unwrap();
    assert_eq!(report.episodes, 0, "a session active 20 minutes ago has not ended");

    set_now("2026-03-01T10:40:00Z");
    let report = palace.consolidate_all().unwrap();
    assert_eq!((report.episodes, report.abstractive, report.promoted), (1, 0, 0));
    assert_eq!(report.model_fallback.as_deref(), Some("no language model is configured"));
    let episodes = palace.episodes(Some("alex")).unwrap();
    assert_eq!(episodes.len(), 1);
    let first = &episodes[0];
    assert_eq!((first.session_id.as_str(), first.user_id.as_deref()), ("s1", Some("alex")));
    assert!(first.summary.contains("tabs over spaces") && first.summary.contains("billing service"), "{first:?}");
    assert!(
        first.l0_abstract.starts_with("I prefer tabs over spaces") && first.l0_abstract.chars().count() <= 200,
        "{first:?}"
    );
    assert!(first.key_topics.iter().any(|t| t == "PostgreSQL"), "{:?}", first.key_topics);
    assert!(palace.episodes(Some("sam")).unwrap().is_empty(), "another user's episode stays theirs");
    assert_eq!(palace.consolidate_all().unwrap().episodes, 0, "a current episode is not written again");

    set_now("2026-03-02T09:00:00Z");
    say(&palace, "s2", "> Remember that I prefer tabs over spaces for indentation in every project.\nWill do.");
    set_now("2026-03-02T10:00:00Z");
    let report = palace.consolidate_all().unwrap();
    assert_eq!((report.episodes, report.promoted), (1, 1), "the preference recurs in two episodes");
    let semantic: Vec<_> = palace
        .memories(Some("alex"))
        .unwrap()
        .into_iter()
        .filter(|m| m.drawer.context["memory"]["tier"] == "semantic")
        .collect();
    assert_eq!(semantic.len(), 1, "{semantic:?}");
    let promoted = &semantic[0].drawer;
    assert!(promoted.content.as_str().contains("tabs"), "{}", promoted.content.as_str());
    assert_eq!(promoted.owner_user_id.as_deref(), Some("alex"));
    assert_eq!(promoted.wing.as_str(), MEMORY_WING);
    assert!(promoted.importance.get() >= 4.0);
    let sessions = promoted.context["memory"]["sessions"].as_array().unwrap();
    assert_eq!(sessions.len(), 2, "provenance: both sessions");
    assert_eq!(promoted.context["memory"]["episodes"].as_array().unwrap().len(), 2);
    let facts = palace.kg_query("alex", None, Direction::Outgoing).unwrap();
    let fact = facts.iter().find(|f| f.predicate == "has_preference").expect("a fact about alex");
    assert_eq!(fact.source_drawer_id.as_ref(), Some(&promoted.id), "the fact points at the memory");
    assert_eq!(palace.consolidate_all().unwrap().promoted, 0, "promoted once");

    // A session that grows is summarised again, in place.
    set_now("2026-03-02T11:00:00Z");
    let late = say(&palace, "s1", "> The billing migration finished; PostgreSQL now serves every invoice.\nGreat.");
    set_now("2026-03-02T12:00:00Z");
    assert_eq!(palace.consolidate_all().unwrap().episodes, 1);
    let detail = palace.episode("s1").unwrap();
    assert_eq!(detail.episode.id, first.id, "same episode");
    assert_eq!(detail.drawers.len(), 3);
    assert_eq!(detail.drawers.last().map(|d| &d.id), Some(&late), "drill-down in filing order");
    assert_eq!(palace.episodes(None).unwrap().len(), 2);

    let hits = palace.search_episodes("how did the invoice database move go", None, Some("alex"), 5, 0.0).unwrap();
    assert_eq!(hits.first().map(|h| h.episode.session_id.as_str()), Some("s1"), "{hits:?}");
    assert!(hits[0].score > hits.get(1).map_or(0.0, |h| h.score));
    assert!(palace.episode("no-such-episode").is_err());
}

fn dreaming_digests_five_episodes_once(backend: Backend) {
    let jobs = JobSettings { dreaming: true, ..JobSettings::default() };
    let (_fixture, palace) = palace(backend, jobs);
    let topics =
        ["the robot arm calibration", "the nightly backup", "the release notes", "the GPU cluster", "the CI cache"];
    for (day, topic) in topics.iter().enumerate() {
        set_now(&format!("2026-04-0{}T10:00:00Z", day + 1));
        say(&palace, &format!("day{day}"), &format!("> Today we fixed {topic}. It works now.\nGood."));
    }
    set_now("2026-04-05T10:10:00Z");
    let report = palace.consolidate_all().unwrap();
    assert_eq!(
        (report.episodes, report.insights, report.dreamt_episodes),
        (4, 0, 0),
        "four ended: not enough to dream"
    );
    set_now("2026-04-05T11:00:00Z");
    let report = palace.consolidate_all().unwrap();
    assert_eq!((report.episodes, report.insights, report.dreamt_episodes), (1, 5, 5));
    let dreams: Vec<_> =
        palace.memories(Some("alex")).unwrap().into_iter().filter(|m| m.drawer.room.as_str() == "dreaming").collect();
    assert_eq!(dreams.len(), 5);
    assert!(dreams.iter().any(|m| m.drawer.content.as_str() == "2026-04-05: Today we fixed the release notes."));
    assert_eq!(dreams[0].drawer.source_file.as_deref(), Some("_system/dreaming/20260405-consolidated.md"));
    assert!(palace.episodes(None).unwrap().iter().all(|e| e.promoted_at.is_some()));
    assert_eq!(palace.consolidate_all().unwrap().insights, 0, "each episode is dreamt once");

    let off = palace.clone().with_jobs(JobSettings { consolidation: false, ..JobSettings::default() });
    let report = off.consolidate_all().unwrap();
    assert!(report.skipped.is_some() && report.episodes == 0, "the kill switch");
}

fn prune_archives_faded_drawers_and_restore_brings_one_back(backend: Backend) {
    let (_fixture, palace) = palace(backend, JobSettings::default());
    set_now("2025-01-01T00:00:00Z");
    let mut faded = Vec::new();
    for i in 0..105 {
        let text = format!("Old note {i}: the parking garage on level {i} was repainted in a pale shade of green.");
        let mut request = IngestRequest::new(Wing::parse("notes").unwrap(), Room::parse("misc").unwrap(), text, "t");
        request.importance = Some(Importance::new(if i < 6 { 0.35 } else { 3.0 }).unwrap());
        request.raw = true;
        faded.push(palace.ingest(request).unwrap().drawer_ids()[0].clone());
    }
    set_now("2026-03-01T00:00:00Z");
    let preview = palace.prune(true).unwrap();
    assert_eq!(preview.drawers.len(), 5, "105 active, 100 kept");
    assert!(preview.drawers.iter().all(|c| faded[..6].contains(&c.id)));
    assert!(palace.archived(10).unwrap().is_empty(), "a dry run changes nothing");

    let report = palace.maintain_all().unwrap();
    assert_eq!(report.archived, 5, "maintain prunes");
    let archived = palace.archived(10).unwrap();
    assert_eq!(archived.len(), 5);
    let gone = archived[0].clone();
    assert_eq!(gone.status, DrawerStatus::Archived);
    assert!(gone.status_reason.as_deref().unwrap().starts_with("pruned: importance 0.3"), "{:?}", gone.status_reason);
    let hits = palace
        .search(&mempalace_engine::SearchRequest {
            query: gone.content.as_str().to_string(),
            limit: mempalace_core::layers::ResultLimit::constant(10),
            ..Default::default()
        })
        .unwrap()
        .hits;
    assert!(hits.iter().all(|h| h.drawer.id != gone.id), "an archived drawer is not found");
    assert_eq!(palace.prune(false).unwrap().drawers.len(), 0, "the workspace is at its floor of 100");

    let back = palace.restore(&gone.id).unwrap();
    assert_eq!((back.status, back.importance.get()), (DrawerStatus::Active, 1.0));
    assert_eq!(palace.archived(10).unwrap().len(), 4);
    let hits = palace
        .search(&mempalace_engine::SearchRequest {
            query: gone.content.as_str().to_string(),
            limit: mempalace_core::layers::ResultLimit::constant(3),
            ..Default::default()
        })
        .unwrap()
        .hits;
    assert_eq!(hits.first().map(|h| &h.drawer.id), Some(&gone.id), "found again");
    assert!(palace.restore(&DrawerId::parse("drawer_notes_misc_000000000000000000000000").unwrap()).is_err());
}

on_both!(
    sessions_become_episodes_and_what_recurs_is_promoted,
    dreaming_digests_five_episodes_once,
    prune_archives_faded_drawers_and_restore_brings_one_back
);
