//! Agent coordination end to end on a real palace (SQLite and PostgreSQL):
//! a task handed from one agent to another and closed with a patch, a
//! waiter woken by another handle's append (another process, as far as the
//! store can tell), timeouts, every refusal, and export → import.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Backend, Fixture};
use mempalace_core::WorkspaceId;
use mempalace_core::coordination::{EventDraft, EventQueryDraft, EventStatus, TaskDraft};
use mempalace_engine::coordination::{AckDraft, ArtifactDraft, PatchDraft, WaitOutcome};
use mempalace_engine::{EngineError, Palace};
use mempalace_store::Store;
use serde_json::json;

fn palace(backend: Backend) -> Option<(Fixture, Palace)> {
    let (fixture, store) = common::store(backend)?;
    Some((fixture, Palace::new(store, WorkspaceId::default_workspace())))
}

/// Another handle on the same palace: a second SQLite connection set on the
/// file, or a second pool on the schema — what another process would open.
fn second_handle(fixture: &Fixture) -> Palace {
    let store: Arc<dyn Store> = match fixture {
        Fixture::Dir(dir) => Arc::new(
            mempalace_sqlite::SqliteStore::open(&dir.path().join("palace.db"), Default::default()).expect("reopen"),
        ),
        Fixture::Schema(schema) => Arc::new(schema.open()),
    };
    Palace::new(store, WorkspaceId::default_workspace())
}

fn message(error: EngineError) -> String {
    match error {
        EngineError::Coordination(error) => error.to_string(),
        other => panic!("expected a coordination refusal, got {other:?}"),
    }
}

fn draft(kind: &str, from: &str, to: Option<&str>) -> EventDraft {
    EventDraft {
        event_type: kind.into(),
        stream: "project/demo".into(),
        room: "delegation".into(),
        from_agent: from.into(),
        to_agent: to.map(str::to_string),
        ..EventDraft::default()
    }
}

fn ids(events: &[mempalace_core::coordination::StoredEvent]) -> Vec<&str> {
    events.iter().map(|stored| stored.event.id.as_str()).collect()
}

/// task_create → the worker's inbox → ack → patch_submit → artifact_get.
fn a_task_goes_from_request_to_applied_patch(backend: Backend) {
    let Some((_fixture, palace)) = palace(backend) else { return };
    let created = palace
        .create_task(TaskDraft {
            project: "Demo Project!".into(),
            from_agent: "mac-codex".into(),
            to_agent: "windows-codex".into(),
            goal: "Fix search echo ranking".into(),
            branch: "fix/search".into(),
            base_commit: "0123ABCD".into(),
            done: "cargo test passes".into(),
        })
        .expect("task");
    let task = &created.task.event;
    let correlation = task.correlation_id.as_ref().expect("a task has a correlation id").to_string();
    assert!(correlation.starts_with("task_fix_search_echo_ranking_") && correlation.len() == 37, "{correlation}");
    assert_eq!(task.stream.as_str(), "project/demo_project");
    assert_eq!(task.base_commit.as_ref().map(|c| c.as_str()), Some("0123abcd"));
    assert!(task.id.starts_with("evt_") && task.id.len() == 32, "{}", task.id);
    assert_eq!(
        created.handoff,
        format!(
            "Open MemPalace task {correlation} as windows-codex. Claim it, follow its exact definition of done, and deliver through the logstream."
        )
    );

    // The worker sweeps its inbox, which also holds broadcasts.
    palace.append_event(draft("status.update", "mac-claude", Some("*"))).expect("broadcast");
    palace.append_event(draft("task.request", "mac-codex", Some("someone-else"))).expect("other task");
    let inbox = palace
        .list_events(EventQueryDraft { to_agent: Some("windows-codex".into()), ..Default::default() })
        .expect("inbox");
    assert_eq!(inbox.len(), 2, "the task and the broadcast: {:?}", ids(&inbox));
    assert_eq!(inbox[0].event.id, task.id, "oldest first by default");

    let ack = palace
        .ack_event(AckDraft {
            event_id: task.id.clone(),
            from_agent: "windows-codex".into(),
            status: Some("claimed".into()),
            ..Default::default()
        })
        .expect("ack");
    assert_eq!(ack.event.event_type.as_str(), "event.ack");
    assert_eq!(ack.event.to_agent.as_ref().map(|a| a.as_str()), Some("mac-codex"));
    assert_eq!(ack.event.correlation_id.as_ref().map(|c| c.to_string()), Some(correlation.clone()));
    assert_eq!(ack.event.metadata.get("ack_of"), Some(&json!(task.id)));
    assert_eq!(ack.event.status, Some(EventStatus::Claimed));
    assert!(ack.seq > created.task.seq);

    let patch = "--- a/search.rs\n+++ b/search.rs\n@@ -1 +1 @@\n-old\n+new\n";
    let submitted = palace
        .submit_patch(PatchDraft {
            content: patch.into(),
            from_agent: "windows-codex".into(),
            stream: "project/demo_project".into(),
            to_agent: Some("mac-codex".into()),
            correlation_id: Some(correlation.clone()),
            metadata: Some(json!({"tests": "green"})),
            ..Default::default()
        })
        .expect("patch");
    assert!(submitted.artifact.warnings().is_empty());
    assert_eq!(submitted.event.event.room.as_str(), "patches");
    assert_eq!(submitted.event.event.status, Some(EventStatus::Ready));
    assert_eq!(submitted.event.event.artifact_ids, vec![submitted.artifact.id.clone()]);

    // The requester finds the conversation by its id, and gets the exact bytes.
    let thread =
        palace.list_events(EventQueryDraft { correlation_id: Some(correlation), ..Default::default() }).expect("list");
    assert_eq!(ids(&thread), [task.id.as_str(), ack.event.id.as_str(), submitted.event.event.id.as_str()]);
    let fetched = palace.artifact(&submitted.event.event.artifact_ids[0]).expect("artifact");
    assert_eq!(fetched.content.as_str(), patch);
    assert_eq!(fetched.sha256(), submitted.artifact.sha256());
    assert_eq!(fetched.metadata.get("tests"), Some(&json!("green")));
}

/// An agent waits after the last event it saw; another handle appends; the
/// waiter wakes with exactly that event, long before its timeout.
fn a_waiter_wakes_when_another_handle_appends(backend: Backend) {
    let Some((fixture, palace)) = palace(backend) else { return };
    let seen = palace.append_event(draft("task.request", "a", Some("b"))).expect("append");
    let other = second_handle(&fixture);
    let since = seen.event.id.clone();
    // Timed from before the spawn: the appends come 600 ms after it,
    // however late the thread starts.
    let started = Instant::now();
    let waiter = std::thread::spawn(move || {
        let outcome = palace
            .wait_events(
                EventQueryDraft { since_event_id: Some(since), to_agent: Some("a".into()), ..Default::default() },
                Some(30_000),
            )
            .expect("wait");
        (outcome, started.elapsed())
    });
    std::thread::sleep(Duration::from_millis(600));
    other.append_event(draft("task.reply", "b", Some("someone-else"))).expect("not for a");
    let reply = other.append_event(draft("task.reply", "b", Some("a"))).expect("reply");
    let (outcome, waited) = waiter.join().expect("waiter");
    match outcome {
        WaitOutcome::Events(events) => assert_eq!(ids(&events), [reply.event.id.as_str()]),
        WaitOutcome::TimedOut => panic!("the waiter timed out"),
    }
    assert!(waited >= Duration::from_millis(500) && waited < Duration::from_secs(10), "{waited:?}");
}

/// A wait with nothing to match ends at its timeout; without a cursor,
/// events already there match at once, oldest first.
fn waits_time_out_or_answer_from_history(backend: Backend) {
    let Some((_fixture, palace)) = palace(backend) else { return };
    let started = Instant::now();
    let outcome = palace
        .wait_events(EventQueryDraft { to_agent: Some("nobody".into()), ..Default::default() }, Some(700))
        .expect("wait");
    let waited = started.elapsed();
    assert_eq!(outcome, WaitOutcome::TimedOut);
    assert!(waited >= Duration::from_millis(700) && waited < Duration::from_millis(2_500), "{waited:?}");

    let first = palace.append_event(draft("status.update", "a", None)).expect("append");
    palace.append_event(draft("status.update", "a", None)).expect("append");
    let started = Instant::now();
    let outcome =
        palace.wait_events(EventQueryDraft { limit: Some(1), ..Default::default() }, Some(60_000)).expect("wait");
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(outcome, WaitOutcome::Events(vec![first]));
    assert_eq!(
        palace.wait_events(EventQueryDraft::default(), Some(0)).map(|o| o != WaitOutcome::TimedOut).ok(),
        Some(true)
    );
}

/// Listings: cursors both ways, order, limits, the time window, previews.
fn listings_page_with_cursors(backend: Backend) {
    let Some((_fixture, palace)) = palace(backend) else { return };
    let events: Vec<_> =
        (0..5).map(|i| palace.append_event(draft("status.update", &format!("w{i}"), None)).expect("append")).collect();
    let all_ids: Vec<&str> = events.iter().map(|e| e.event.id.as_str()).collect();
    let list = |query: EventQueryDraft| palace.list_events(query).expect("list");
    assert_eq!(
        ids(&list(EventQueryDraft { since_event_id: Some(all_ids[1].into()), ..Default::default() })),
        &all_ids[2..]
    );
    assert_eq!(
        ids(&list(EventQueryDraft { before_event_id: Some(all_ids[2].into()), ..Default::default() })),
        &all_ids[..2]
    );
    assert_eq!(
        ids(&list(EventQueryDraft { order: Some("DESC".into()), limit: Some(2), ..Default::default() })),
        [all_ids[4], all_ids[3]]
    );
    assert_eq!(ids(&list(EventQueryDraft { writer: Some("w3".into()), ..Default::default() })), [all_ids[3]]);
    assert_eq!(list(EventQueryDraft { since_created_at: Some("2000-01-01".into()), ..Default::default() }).len(), 5);
    assert!(
        list(EventQueryDraft { since_created_at: Some("2999-01-01T00:00:00Z".into()), ..Default::default() })
            .is_empty()
    );
}

/// Every refusal the engine adds to core's rules, with MemPalace's words;
/// a refused patch stores nothing.
fn refusals_name_the_value(backend: Backend) {
    let Some((_fixture, palace)) = palace(backend) else { return };
    let cursor = |field: &str| EventQueryDraft {
        since_event_id: (field == "since").then(|| "evt_nope".to_string()),
        before_event_id: (field == "before").then(|| "evt_nope".to_string()),
        ..Default::default()
    };
    assert_eq!(message(palace.list_events(cursor("since")).unwrap_err()), "since_event_id 'evt_nope' not found");
    assert_eq!(message(palace.list_events(cursor("before")).unwrap_err()), "before_event_id 'evt_nope' not found");
    assert_eq!(
        message(palace.wait_events(cursor("since"), Some(10)).unwrap_err()),
        "since_event_id 'evt_nope' not found"
    );
    assert_eq!(
        message(palace.wait_events(cursor("since"), Some(-1)).unwrap_err()),
        "timeout_ms must be a non-negative number"
    );
    let ack = |id: &str| AckDraft { event_id: id.into(), from_agent: "b".into(), ..Default::default() };
    assert_eq!(message(palace.ack_event(ack("evt_nope")).unwrap_err()), "event 'evt_nope' not found");
    assert_eq!(message(palace.ack_event(ack(" ")).unwrap_err()), "event_id must be a non-empty string");
    assert_eq!(message(palace.artifact("art_nope").unwrap_err()), "artifact 'art_nope' not found");
    assert_eq!(message(palace.artifact("").unwrap_err()), "artifact_id must be a non-empty string");
    let referencing = EventDraft { artifact_ids: Some(json!(["art_missing"])), ..draft("patch.ready", "a", None) };
    assert_eq!(
        message(palace.append_event(referencing).unwrap_err()),
        "artifact_ids references unknown artifact 'art_missing'"
    );
    let put =
        |kind: &str| ArtifactDraft { kind: kind.into(), content: "x".into(), created_by: "a".into(), metadata: None };
    assert_eq!(
        message(palace.put_artifact(put("binary")).unwrap_err()),
        "kind='binary' is not one of: file, json, log, note, patch"
    );

    let patch = |stream: &str, from: &str| PatchDraft {
        content: "--- a\r\n+++ b".into(),
        from_agent: from.into(),
        stream: stream.into(),
        ..Default::default()
    };
    assert_eq!(message(palace.submit_patch(patch("s", " ")).unwrap_err()), "created_by must be a non-empty string");
    assert_eq!(message(palace.submit_patch(patch("", "a")).unwrap_err()), "stream must be a non-empty string");
    assert!(palace.store().scan_artifacts(palace.workspace(), None, 10).expect("scan").is_empty(), "nothing stored");
    let stored = palace.submit_patch(patch("s", "a")).expect("a patch with warnings is still stored");
    assert_eq!(stored.artifact.warnings().len(), 2);
    assert_eq!(palace.artifact(&stored.artifact.id).expect("artifact").content.as_str(), "--- a\r\n+++ b");
}

/// Export then import into another palace keeps every event, artifact,
/// id and the order.
fn export_and_import_keep_the_log(backend: Backend) {
    let Some((_fixture, source)) = palace(backend) else { return };
    let put = source
        .put_artifact(ArtifactDraft {
            kind: "log".into(),
            content: "line\n".into(),
            created_by: "a".into(),
            metadata: None,
        })
        .expect("artifact");
    for i in 0..3 {
        let artifact_ids = if i == 1 { Some(json!([put.id])) } else { None };
        source
            .append_event(EventDraft { artifact_ids, ..draft("status.update", &format!("w{i}"), None) })
            .expect("append");
    }
    let mut records = Vec::new();
    source
        .export_all(&mut |record| {
            records.push(record);
            Ok::<_, std::convert::Infallible>(())
        })
        .expect("export");
    let Some((_fixture2, target)) = palace(backend) else { return };
    target.append_event(draft("already.here", "z", None)).expect("append");
    assert_eq!(target.import_batch(&records).expect("import").inserted, 4);
    let listed = target.list_events(EventQueryDraft::default()).expect("list");
    let source_listed = source.list_events(EventQueryDraft::default()).expect("list");
    assert_eq!(listed.len(), 4);
    assert_eq!(
        listed[1..].iter().map(|e| &e.event).collect::<Vec<_>>(),
        source_listed.iter().map(|e| &e.event).collect::<Vec<_>>(),
        "imported events follow what was there, in their order"
    );
    assert_eq!(target.artifact(&put.id).expect("artifact"), put);
}

on_both!(
    a_task_goes_from_request_to_applied_patch,
    a_waiter_wakes_when_another_handle_appends,
    waits_time_out_or_answer_from_history,
    listings_page_with_cursors,
    refusals_name_the_value,
    export_and_import_keep_the_log,
);
