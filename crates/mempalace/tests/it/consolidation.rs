//! Consolidation end to end through the binary, on both stores: real
//! Claude Code transcripts replayed through `hook run` (stop hooks as the
//! session grows, then `session-end`) become episodes that drill down to
//! their drawers; a preference said in two sessions is promoted by
//! `work --jobs consolidate` to a semantic memory with its graph fact, and
//! two spellings of one company become one entity (unmerged and merged
//! again by hand);
//! then faded drawers of an old import are pruned to the archive (a dry
//! run first, the switch that stops it), listed, and one is restored and
//! found again; a small palace keeps its faded drawers. With a language
//! model (a local server speaking its protocol), the model writes the
//! summaries (an unreadable answer falls back to the extractive one) and
//! the dreams.

use std::path::{Path, PathBuf};

use mempalace_llm::testing::{Reply, ScriptedServer};
use serde_json::{Value, json};

use crate::harness::{Sandbox, Store, on_both};

fn repo_transcript(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/transcripts/claude-code").join(name)
}

fn hook(sandbox: &Sandbox, hook: &str, session: &str, transcript: &Path) -> Value {
    let input = json!({"session_id": session, "transcript_path": transcript, "hook_event_name": hook,
                       "stop_hook_active": false})
    .to_string();
    let output = sandbox.run_with_stdin(&["hook", "run", "--hook", hook, "--harness", "claude-code"], input.as_bytes());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("a JSON reply")
}

/// Replays a transcript as its session happened: a stop hook after the
/// first half of its lines, another after all of them, then the end.
fn replay(sandbox: &Sandbox, source: &Path, session: &str) {
    let text = std::fs::read_to_string(source).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let live = sandbox.dir().join(format!("{session}.jsonl"));
    std::fs::write(&live, lines[..lines.len() / 2].join("\n") + "\n").unwrap();
    assert_eq!(hook(sandbox, "stop", session, &live), json!({}));
    std::fs::write(&live, &text).unwrap();
    hook(sandbox, "stop", session, &live);
    assert_eq!(hook(sandbox, "session-end", session, &live), json!({}), "session-end answers the harness plainly");
}

/// A session in Claude Code's transcript shape where the user states a
/// preference (the real samples hold none twice).
fn preference_session(sandbox: &Sandbox, session: &str, opening: &str, host: &str) -> PathBuf {
    let path = sandbox.dir().join(format!("{session}.jsonl"));
    let turns = [
        (format!("{opening} I prefer tabs over spaces for indentation in every project."), "Understood."),
        (
            format!("Now add a unit test for the tile cache eviction; the tile index is served by {host}."),
            "Added the test to tiles_test.rs.",
        ),
    ];
    let mut text = String::new();
    for (i, (user, assistant)) in turns.iter().enumerate() {
        text += &json!({"type": "user", "uuid": format!("{session}-u{i}"), "sessionId": session,
            "cwd": "/home/alex/rover", "timestamp": "2025-06-01T10:00:00Z",
            "message": {"role": "user", "content": user}})
        .to_string();
        text.push('\n');
        text += &json!({"type": "assistant", "uuid": format!("{session}-a{i}"), "sessionId": session,
            "timestamp": "2025-06-01T10:00:05Z",
            "message": {"id": format!("{session}-m{i}"), "role": "assistant",
                        "content": [{"type": "text", "text": assistant}]}})
        .to_string();
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path
}

fn sessions_replayed_through_the_hook_mature(store: Store) {
    // A one-second period, so a second run is another tick.
    let sandbox = Sandbox::on(store).with_static_model().with_env("MEMPALACE_CONSOLIDATE_EVERY_S", "1");
    replay(&sandbox, &repo_transcript("5f0c2a8e-telemetry.jsonl"), "5f0c2a8e-telemetry");
    replay(&sandbox, &repo_transcript("b7d41c09-tiles-forked.jsonl"), "b7d41c09-tiles");

    let listed = sandbox.json(&["episodes", "list", "--json"]);
    assert_eq!(listed["count"], 2, "one episode per ended session: {listed}");
    let tiles = sandbox.json(&["episodes", "show", "b7d41c09-tiles", "--json"]);
    assert_eq!(tiles["session_id"], "b7d41c09-tiles");
    let drawers = tiles["drawers"].as_array().unwrap();
    assert!(!drawers.is_empty(), "{tiles}");
    let summary = tiles["summary"].as_str().unwrap();
    assert!(summary.contains("caching strategy for the map tiles"), "extractive, from the session: {summary}");
    assert!(drawers.iter().all(|d| d["metadata"]["session_id"] == "b7d41c09-tiles"));
    let found = sandbox.json(&["episodes", "search", "disk cache for map tiles", "--json"]);
    assert_eq!(found["episodes"][0]["session_id"], "b7d41c09-tiles", "{found}");
    // Ending again changes nothing: the episode is current.
    let live = sandbox.dir().join("b7d41c09-tiles.jsonl");
    hook(&sandbox, "session-end", "b7d41c09-tiles", &live);
    assert_eq!(sandbox.json(&["episodes", "list", "--json"])["count"], 2);

    for (session, opening, host) in [("pref-1", "Before we start:", "Acme Corp"), ("pref-2", "Reminder:", "Acme Inc")] {
        let path = preference_session(&sandbox, session, opening, host);
        hook(&sandbox, "stop", session, &path);
        hook(&sandbox, "session-end", session, &path);
    }
    assert_eq!(sandbox.json(&["episodes", "list", "--json"])["count"], 4);
    let run = sandbox.json(&["work", "--once", "--jobs", "consolidate", "--json"]);
    let report = &run["runs"][0]["report"];
    assert_eq!(report["episodes"], 0, "the hook wrote every episode already: {run}");
    assert_eq!(report["promoted"], 1, "{run}");
    let memories = sandbox.json(&["memories", "--json"]);
    let semantic: Vec<&Value> =
        memories["memories"].as_array().unwrap().iter().filter(|m| m["tier"] == "semantic").collect();
    assert_eq!(semantic.len(), 1, "{memories}");
    assert!(semantic[0]["observation"].as_str().unwrap().contains("tabs"), "{memories}");
    let sessions = semantic[0]["sessions"].as_array().unwrap();
    assert_eq!(sessions, &vec![json!("pref-1"), json!("pref-2")], "provenance: {memories}");
    let facts = sandbox.json(&["kg", "query", "user", "--json"]);
    assert!(facts.to_string().contains("has_preference"), "the promoted memory's fact: {facts}");
    std::thread::sleep(std::time::Duration::from_millis(1_100));
    let again = sandbox.json(&["work", "--once", "--jobs", "consolidate", "--json"]);
    assert_eq!(again["runs"][0]["ran"], true, "{again}");
    assert_eq!(again["runs"][0]["report"]["promoted"], 0, "promoted once: {again}");

    // The two spellings of the tile host are one entity, reversibly.
    assert_eq!(report["entities_merged"], 1, "{run}");
    let aliases = sandbox.json(&["entities", "aliases", "--json"]);
    assert_eq!(aliases["count"], 1, "{aliases}");
    let (alias, canonical) =
        (aliases["aliases"][0]["alias"].as_str().unwrap(), aliases["aliases"][0]["canonical"].as_str().unwrap());
    let mut pair = [alias, canonical];
    pair.sort_unstable();
    assert_eq!(pair, ["Acme Corp", "Acme Inc"], "{aliases}");
    assert_eq!(sandbox.json(&["entities", "aliases", alias, "--json"])["count"], 1, "named by the alias too");
    let unmerged = sandbox.ok(&["entities", "unmerge", alias]);
    assert!(unmerged.starts_with(&format!("{alias} is its own entity again")), "{unmerged}");
    assert_eq!(sandbox.json(&["entities", "aliases", "--json"])["count"], 0);
    let merged = sandbox.ok(&["entities", "merge", alias, canonical]);
    assert!(merged.starts_with(&format!("merged {alias} into {canonical}")), "{merged}");
    let status = sandbox.ok(&["status"]);
    assert!(status.contains("consolidate "), "status lists the job's last run:\n{status}");

    prune_and_restore(&sandbox);
    let status = sandbox.ok(&["status"]);
    assert!(status.contains("    archived      7\n"), "status counts the archive:\n{status}");
}

/// An export of `count` drawers filed in 2025 whose importance has faded.
fn old_faded_export(count: usize) -> String {
    let mut text = String::from(
        "{\"type\":\"header\",\"format\":\"mempalace-rs export\",\"version\":2,\"generator\":\"test\",\"schema_version\":9,\"exported_at\":\"2025-03-01T00:00:00Z\"}\n",
    );
    for i in 0..count {
        let content = format!(
            "Old note {i} (ticket PX{i:04}): the parking garage on level {i} was repainted in a pale shade of green."
        );
        let hash = mempalace_core::ContentHash::of(&content);
        let id = format!("drawer_notes_misc_{}", &hash.as_str()[..24]);
        let importance = if i < 8 { 0.35 } else { 3.0 };
        text += &json!({"type": "drawer", "workspace_id": "default", "id": id, "wing": "notes", "room": "misc",
            "hall": null, "content": content, "content_hash": hash.as_str(), "importance": importance,
            "memory_type": "fact", "pipeline_tier": "heuristic", "state": "processed", "summary": null,
            "source_file": null, "added_by": "import", "added_by_agent": null, "owner_user_id": null,
            "filed_at": "2025-01-01T00:00:00Z", "updated_at": "2025-01-01T00:00:00Z", "last_accessed_at": null,
            "access_count": 0, "superseded_by": null, "cluster_id": null, "retry_count": 0, "entity_count": 0,
            "triple_count": 0, "confidence": 0.5, "decay_rate": 0.01, "status": "active", "status_reason": null,
            "session_id": null, "context": {}, "tags": [], "perception": null, "source_mtime": null,
            "chunk_index": null, "line_start": null, "line_end": null, "content_date": null, "entities": [],
            "embedding": null})
        .to_string();
        text.push('\n');
    }
    text
}

/// Imports 106 drawers filed in 2025 (8 of them faded), prunes the palace
/// (a dry run first), and restores one archived drawer.
fn prune_and_restore(sandbox: &Sandbox) {
    let export = sandbox.dir().join("old.jsonl");
    std::fs::write(&export, old_faded_export(106)).unwrap();
    sandbox.ok(&["import", export.to_str().unwrap()]);
    sandbox.ok(&["reembed"]);
    let total = sandbox.total();
    assert!(total >= 106, "{total}");
    let expected = (total - 100).min(8);

    let preview = sandbox.json(&["prune", "--dry-run", "--json"]);
    assert_eq!((preview["dry_run"].as_bool(), preview["count"].as_u64()), (Some(true), Some(expected)), "{preview}");
    assert_eq!(sandbox.total(), total, "a dry run changes nothing");
    let text = sandbox.ok(&["prune", "--dry-run"]);
    assert!(text.starts_with(&format!("would archive {expected} drawer(s)")), "{text}");

    let off = sandbox
        .cmd(&["work", "--once", "--jobs", "maintain", "--json"])
        .env("MEMPALACE_PRUNE", "off")
        .output()
        .unwrap();
    assert!(off.status.success(), "{}", String::from_utf8_lossy(&off.stderr));
    let off: Value = serde_json::from_slice(&off.stdout).unwrap();
    assert_eq!(off["runs"][0]["archived"], 0, "the prune switch: {off}");
    assert_eq!(sandbox.total(), total);
    let archived = sandbox.json(&["prune", "--json"]);
    assert_eq!(archived["count"].as_u64(), Some(expected), "{archived}");
    assert_eq!(sandbox.total(), total - expected);
    let archived = sandbox.json(&["archive", "list", "--json"]);
    assert_eq!(archived["count"].as_u64(), Some(expected));
    let first = &archived["drawers"][0];
    let id = first["id"].as_str().unwrap().to_string();
    assert!(first["reason"].as_str().unwrap().starts_with("pruned: importance 0.3"), "{first}");
    let content = first["content"].as_str().unwrap().to_string();
    let ticket = content.split(['(', ')']).nth(1).unwrap().to_string();
    let hits = sandbox.json(&["search", &ticket, "--results", "20", "--json"]);
    assert!(hits["results"].as_array().unwrap().iter().all(|r| r["id"] != id.as_str()), "{hits}");

    let restored = sandbox.ok(&["archive", "restore", &id]);
    assert!(restored.starts_with(&format!("restored {id} to notes/misc")), "{restored}");
    assert_eq!(sandbox.total(), total - expected + 1);
    assert_eq!(sandbox.json(&["archive", "list", "--json"])["count"].as_u64(), Some(expected - 1));
    let hits = sandbox.json(&["search", &content, "--results", "3", "--json"]);
    assert_eq!(hits["results"][0]["id"], id.as_str(), "found again: {hits}");
    let missing = sandbox.run(&["archive", "restore", "drawer_notes_misc_000000000000000000000000"]);
    assert_eq!(crate::harness::code(&missing), 3, "not found: {}", String::from_utf8_lossy(&missing.stderr));
}

fn faded_drawers_of_a_small_palace_stay(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let export = sandbox.dir().join("old.jsonl");
    std::fs::write(&export, old_faded_export(40)).unwrap();
    sandbox.ok(&["import", export.to_str().unwrap()]);
    let run = sandbox.json(&["work", "--once", "--jobs", "maintain", "--json"]);
    assert_eq!(run["runs"][0]["archived"], 0, "fewer than 100 drawers: nothing is pruned: {run}");
    assert_eq!(sandbox.total(), 40);
}

fn a_model_summarises_the_sessions_and_dreams(store: Store) {
    let server = ScriptedServer::start();
    let sandbox = Sandbox::on(store)
        .with_static_model()
        .with_env("MEMPALACE_LLM_BASE_URL", &format!("{}/v1", server.url()))
        .with_env("MEMPALACE_LLM_MODEL", "small-model")
        .with_env("MEMPALACE_LLM_DREAM_MODEL", "big-model")
        .with_env("MEMPALACE_DREAMING", "on");
    for day in 0..5 {
        let session = format!("day-{day}");
        let path = preference_session(&sandbox, &session, &format!("On day {day} of the rover work:"), "Acme Corp");
        if day == 4 {
            server.push(Reply::openai("I would rather not summarise this."));
        } else {
            let summary = format!("On day {day} the user asked for a tile cache eviction test and restated tabs.");
            server.push(Reply::openai(&json!({"summary": summary, "key_topics": ["tiles_test.rs"]}).to_string()));
        }
        hook(&sandbox, "session-end", &session, &path);
    }
    let listed = sandbox.json(&["episodes", "list", "--limit", "10", "--json"]);
    let episodes = listed["episodes"].as_array().unwrap();
    assert_eq!(episodes.len(), 5, "{listed}");
    let by_model = episodes.iter().filter(|e| e["key_topics"] == json!(["tiles_test.rs"])).count();
    assert_eq!(by_model, 4, "{listed}");
    let fallback = episodes.iter().find(|e| e["session_id"] == "day-4").unwrap();
    assert!(
        fallback["summary"].as_str().unwrap().starts_with("On day 4 of the rover work: I prefer tabs"),
        "extractive: {fallback}"
    );
    let day0 = episodes.iter().find(|e| e["session_id"] == "day-0").unwrap();
    assert_eq!(day0["key_topics"], json!(["tiles_test.rs"]));
    assert!(day0["l0_abstract"].as_str().unwrap().starts_with("On day 0 the user asked"), "{day0}");

    server.push(Reply::openai(
        &json!({"insights": [
            {"kind": "preference", "text": "The user prefers tabs over spaces in every project.", "episodes": [1, 2, 5]},
            {"kind": "gossip", "text": "Not a kind we keep.", "episodes": [1]}
        ]})
        .to_string(),
    ));
    let run = sandbox.json(&["work", "--once", "--jobs", "consolidate", "--json"]);
    let report = &run["runs"][0]["report"];
    assert_eq!((report["insights"].as_u64(), report["dreamt_episodes"].as_u64()), (Some(1), Some(5)), "{run}");
    assert_eq!(report["promoted"], 1, "the tabs preference recurs in five episodes: {run}");
    let memories = sandbox.json(&["memories", "--json"]);
    let dreams: Vec<&Value> =
        memories["memories"].as_array().unwrap().iter().filter(|m| m["tier"] == "dream").collect();
    assert_eq!(dreams.len(), 1, "{memories}");
    assert_eq!(dreams[0]["observation"], "The user prefers tabs over spaces in every project.");
    assert_eq!(dreams[0]["episodes"].as_array().unwrap().len(), 3, "its episodes: {memories}");
    let asked = server.requests();
    let summarise = &asked[0].body;
    assert_eq!(summarise["model"], "small-model");
    assert_eq!(summarise["response_format"]["json_schema"]["name"], "episode_summary");
    assert!(
        summarise["messages"][1]["content"].as_str().unwrap().contains("On day 0 of the rover work: I prefer tabs")
    );
    let dream = &asked.last().unwrap().body;
    assert_eq!(dream["model"], "big-model", "dreaming has its own model");
    assert!(
        dream["messages"][1]["content"].as_str().unwrap().contains("[5] On day 4 of the rover work: I prefer tabs"),
        "{dream}"
    );
    assert!(
        sandbox.json(&["episodes", "list", "--json"])["episodes"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| !e["promoted_at"].is_null())
    );
}

on_both!(
    sessions_replayed_through_the_hook_mature,
    faded_drawers_of_a_small_palace_stay,
    a_model_summarises_the_sessions_and_dreams
);
