//! Golden result files: every tool of every family is called on a palace
//! built from a fixed script (fixed clock, the static embedding model), and
//! its JSON result must match `tests/golden/<tool>.json` — the keys, their
//! nesting and their values. A diff fails and names the tool; run with
//! `UPDATE_GOLDEN=1` to rewrite the files after a deliberate change (and
//! read the diff in review).
//!
//! Values that cannot be fixed are normalised before the comparison: the
//! temporary folder's path becomes `<tmp>`, non-integral numbers become
//! `"<number>"` (similarities and scores differ in their last digits between
//! CPUs' kernels), generated session and episode ids become `"<session>"`
//! and `"<episode>"`, coordination ids (random by design) `"<event>"`,
//! `"<artifact>"` and `"<task>"` (also inside a task's handoff line), and
//! run times `"<seconds>"`.

// Tests take their setup (model directory) from the environment that
// scripts/test.sh prepares; UPDATE_GOLDEN rewrites the files.
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mempalace_core::{Timestamp, WorkspaceId};
use mempalace_embed::Embedder;
use mempalace_engine::Palace;
use mempalace_mcp::{Backend, McpServer, Profile};
use mempalace_sqlite::{SqliteOptions, SqliteStore};
use serde_json::{Map, Value, json};

fn model_dir() -> PathBuf {
    PathBuf::from(
        std::env::var_os("MEMPALACE_MODEL_DIR")
            .expect("MEMPALACE_MODEL_DIR is not set; run ./scripts/test.sh (it fetches and distills the models)"),
    )
}

fn fixed_clock() -> Timestamp {
    mempalace_core::time::parse_timestamp("2026-11-26T12:00:00Z", "clock", mempalace_core::time::DayEdge::Start)
        .expect("a valid time")
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// Replaces what differs between runs and machines.
fn normalise(value: Value, tmp: &str, key: Option<&str>) -> Value {
    match value {
        Value::String(text) if text.starts_with("session_2") => Value::String("<session>".into()),
        Value::String(text) if text.starts_with("episode_") => Value::String("<episode>".into()),
        Value::String(text) if text.starts_with("evt_2") => Value::String("<event>".into()),
        Value::String(text) if text.starts_with("art_2") => Value::String("<artifact>".into()),
        Value::String(text) => Value::String(random_task_ids(&text.replace(tmp, "<tmp>"))),
        Value::Number(number) if key == Some("seconds") => {
            let _ = number;
            Value::String("<seconds>".into())
        }
        Value::Number(number) if number.is_f64() && number.as_f64().is_some_and(|f| f.fract() != 0.0) => {
            Value::String("<number>".into())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(|v| normalise(v, tmp, key)).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k.clone(), normalise(v, tmp, Some(&k)))).collect())
        }
        other => other,
    }
}

/// A task's correlation id ends in 8 random hex digits
/// (`task_<slug>_1a2b3c4d`): every such word becomes `<task>`.
fn random_task_ids(text: &str) -> String {
    let random = |word: &str| {
        word.starts_with("task_")
            && word
                .rsplit_once('_')
                .is_some_and(|(_, tail)| tail.len() == 8 && tail.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    text.split(' ').map(|word| if random(word) { "<task>" } else { word }).collect::<Vec<_>>().join(" ")
}

struct Recorder {
    server: McpServer,
    tmp: String,
    results: BTreeMap<String, Vec<Value>>,
}

impl Recorder {
    /// Calls a tool and records its result (or its error, as
    /// `{"json_rpc_error": code, "message": …}`).
    async fn call(&mut self, name: &str, arguments: Value) -> Value {
        let arguments: Option<Map<String, Value>> = arguments.as_object().cloned();
        let recorded = match self.server.call(name, arguments.clone()).await {
            Ok(result) => {
                let text = match &result.content[0] {
                    rmcp::model::ContentBlock::Text(text) => text.text.clone(),
                    other => panic!("{name}: expected text content, got {other:?}"),
                };
                let value: Value = serde_json::from_str(&text).expect("JSON text");
                json!({"arguments": arguments, "is_error": result.is_error == Some(true), "result": value})
            }
            Err(error) => json!({"arguments": arguments, "json_rpc_error": error.code.0, "message": error.message}),
        };
        let raw = recorded["result"].clone();
        self.results.entry(name.to_string()).or_default().push(normalise(recorded, &self.tmp, None));
        raw
    }
}

/// Writes a file dated 2026-11-01 (mined drawers carry their file's time).
fn write(root: &Path, relative: &str, text: &str) {
    let file = root.join(relative);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, text).unwrap();
    let fixed = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_793_491_200);
    std::fs::File::options().write(true).open(&file).unwrap().set_modified(fixed).unwrap();
}

#[test]
fn every_tool_result_matches_its_golden_file() {
    let dir = tempfile::tempdir().unwrap();
    let options = SqliteOptions { create: true, ..SqliteOptions::default() };
    let store = SqliteStore::open(&dir.path().join("palace.db"), options).expect("open palace");
    let model = mempalace_embed::static_model::StaticModel::load(&mempalace_embed::files::static_dir(&model_dir()))
        .expect("static model");
    let palace = Palace::new(Arc::new(store), WorkspaceId::default_workspace())
        .with_clock(fixed_clock)
        .with_embedder(Arc::new(model) as Arc<dyn Embedder>);
    let agent = dir.path().join("agent");
    std::fs::create_dir_all(&agent).unwrap();
    let backend = Backend::new(palace, "<palace>".into(), None).with_memory_root(agent.clone());
    let server = McpServer::new(backend, Profile::All);
    let tmp = dir.path().display().to_string();
    let mut r = Recorder { server: server.clone(), tmp, results: BTreeMap::new() };
    let project = dir.path().join("project");
    write(&project, "README.md", "# Greenhouse\n\nThe controller waters the tomatoes at dawn.\n");
    write(&project, "docs/pumps.md", "The pump schedule runs every four hours from the solar battery.\n");

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        // The mempalace_* family, in MemPalace's order.
        r.call("mempalace_status", json!({})).await;
        let added = r
            .call("mempalace_add_drawer", json!({"wing": "crawbl", "room": "database",
                "content": "We switched the Crawbl backend from MySQL to PostgreSQL on 2025-01-15 because we needed JSONB.",
                "source_file": "/notes/db.md"}))
            .await;
        let drawer = added["drawer_id"].as_str().unwrap().to_string();
        r.call("mempalace_add_drawer", json!({"wing": "crawbl", "room": "frontend",
            "content": "The dashboard is written in Svelte and talks to the API over HTTP."})).await;
        r.call("mempalace_add_drawer", json!({"wing": "robot", "room": "database",
            "content": "The robot logs sensor data to SQLite files on the arm controller."})).await;
        r.call("mempalace_add_drawer", json!({"wing": "w", "room": "r", "content": ""})).await;
        r.call("mempalace_list_wings", json!({})).await;
        r.call("mempalace_list_rooms", json!({"wing": "crawbl"})).await;
        r.call("mempalace_get_taxonomy", json!({})).await;
        r.call("mempalace_get_aaak_spec", json!({})).await;
        r.call("mempalace_kg_add", json!({"subject": "Crawbl Backend", "predicate": "uses", "object": "MySQL",
            "valid_from": "2023-03-01", "valid_to": "2025-01-14"})).await;
        r.call("mempalace_kg_add", json!({"subject": "Crawbl Backend", "predicate": "uses", "object": "PostgreSQL",
            "valid_from": "2025-01-15", "source_drawer_id": drawer})).await;
        r.call("mempalace_kg_query", json!({"entity": "Crawbl Backend"})).await;
        r.call("mempalace_kg_query", json!({"entity": "Crawbl Backend", "as_of": "2024-06-01"})).await;
        r.call("mempalace_kg_supersede", json!({"subject": "Crawbl Backend", "predicate": "uses",
            "old_object": "PostgreSQL", "new_object": "CockroachDB", "at": "2026-06-01"})).await;
        r.call("mempalace_kg_invalidate", json!({"subject": "Crawbl Backend", "predicate": "uses",
            "object": "CockroachDB", "ended": "2026-09-30"})).await;
        r.call("mempalace_kg_invalidate", json!({"subject": "Nobody", "predicate": "uses", "object": "Nothing"})).await;
        r.call("mempalace_kg_timeline", json!({"entity": "Crawbl Backend"})).await;
        r.call("mempalace_kg_stats", json!({})).await;
        r.call("mempalace_create_tunnel", json!({"source_wing": "crawbl", "source_room": "database",
            "target_wing": "robot", "target_room": "database", "label": "both store data"})).await;
        r.call("mempalace_traverse", json!({"start_room": "database"})).await;
        r.call("mempalace_find_tunnels", json!({})).await;
        r.call("mempalace_graph_stats", json!({})).await;
        r.call("mempalace_mesh_peers", json!({})).await;
        let tunnels = r.call("mempalace_list_tunnels", json!({})).await;
        r.call("mempalace_follow_tunnels", json!({"wing": "crawbl", "room": "database"})).await;
        if let Some(id) = tunnels[0]["id"].as_str() {
            r.call("mempalace_delete_tunnel", json!({"tunnel_id": id})).await;
        }
        for text in ["Alice Moreau calibrated the Kestrel arm before the demo.",
                     "Alice Moreau and the Kestrel arm team met on Tuesday about torque limits."] {
            r.call("mempalace_add_drawer", json!({"wing": "lab", "room": "arm", "content": text})).await;
        }
        let hallways = r.call("mempalace_list_hallways", json!({"wing": "lab"})).await;
        if let Some(id) = hallways["hallways"][0]["id"].as_str() {
            r.call("mempalace_delete_hallway", json!({"hallway_id": id})).await;
        }
        r.call("mempalace_search", json!({"query": "why did the backend switch to PostgreSQL", "limit": 3})).await;
        r.call("mempalace_search", json!({"query": "database", "wing": "robot", "since": "2020-01-01"})).await;
        r.call("mempalace_search", json!({"query": "x", "limit": 101})).await;
        r.call("mempalace_check_duplicate", json!({"content":
            "We switched the Crawbl backend from MySQL to PostgreSQL on 2025-01-15 because we needed JSONB."})).await;
        r.call("mempalace_checkpoint", json!({"items": [
            {"wing": "bulk", "room": "items", "content": "Crate 703 shipped to Bergen on the night ferry."},
            {"wing": "bulk"}], "diary": {"agent_name": "Tester", "entry": "SESSION:golden|filed a crate"}})).await;
        let bulk = r.call("mempalace_add_drawer", json!({"wing": "bulk", "room": "items",
            "content": "Crate 704 shipped to Tromsø with the spare gripper."})).await;
        r.call("mempalace_get_drawers", json!({"drawer_ids": [drawer, "drawer_missing_x_1"]})).await;
        r.call("mempalace_delete_drawers", json!({"drawer_ids": [bulk["drawer_id"], "drawer_missing_x_1"]})).await;
        r.call("mempalace_mine", json!({"source": project.display().to_string(), "wing": "greenhouse", "dry_run": true})).await;
        r.call("mempalace_mine", json!({"source": project.display().to_string(), "wing": "greenhouse"})).await;
        r.call("mempalace_sync", json!({"wing": "greenhouse"})).await;
        r.call("mempalace_delete_by_source", json!({"source_file": "/notes/db.md"})).await;
        r.call("mempalace_get_drawer", json!({"drawer_id": drawer})).await;
        r.call("mempalace_list_drawers", json!({"wing": "crawbl", "limit": 1})).await;
        r.call("mempalace_update_drawer", json!({"drawer_id": drawer, "room": "decisions"})).await;
        r.call("mempalace_diary_write", json!({"agent_name": "Claude", "entry": "SESSION:golden|moved db notes",
            "topic": "work"})).await;
        r.call("mempalace_diary_read", json!({"agent_name": "claude"})).await;
        r.call("mempalace_hook_settings", json!({})).await;
        r.call("mempalace_memories_filed_away", json!({})).await;
        r.call("mempalace_reconnect", json!({})).await;
        // Coordination (ids are random and normalised; seq and times are fixed).
        let appended = r
            .call("mempalace_event_append", json!({"type": "status.update", "stream": "project/greenhouse",
                "room": "status", "from_agent": "mac-codex", "to_agent": "*", "body": "Pumps checked.",
                "metadata": {"battery": 81}}))
            .await;
        r.call("mempalace_event_append", json!({"type": "Status", "stream": "s", "room": "r", "from_agent": "a"})).await;
        let task = r
            .call("mempalace_task_create", json!({"project": "Greenhouse", "from_agent": "mac-codex",
                "to_agent": "win-codex", "goal": "Water the tomatoes at dusk too.", "branch": "main",
                "base_commit": "0123ABC", "done": "The schedule lists dusk."}))
            .await;
        r.call("mempalace_task_create", json!({"project": "Greenhouse", "from_agent": "a", "to_agent": "b",
            "goal": "g", "branch": "main", "base_commit": "main", "done": "d"})).await;
        r.call("mempalace_event_list", json!({"to_agent": "win-codex", "from_agent": "win-codex"})).await;
        r.call("mempalace_event_list", json!({"since_event_id": appended["event"]["id"], "preview": true})).await;
        r.call("mempalace_event_list", json!({"order": "sideways"})).await;
        r.call("mempalace_event_wait", json!({"correlation_id": task["task"]["correlation_id"]})).await;
        r.call("mempalace_event_wait", json!({"correlation_id": "nothing", "timeout_ms": 0})).await;
        r.call("mempalace_event_ack", json!({"event_id": task["task"]["id"], "from_agent": "win-codex",
            "status": "claimed"})).await;
        r.call("mempalace_event_ack", json!({"event_id": "evt_missing", "from_agent": "win-codex"})).await;
        let artifact = r
            .call("mempalace_artifact_put", json!({"kind": "log", "content": "pump 1: ok\npump 2: ok\n",
                "created_by": "win-codex", "metadata": {"run": 1}}))
            .await;
        r.call("mempalace_artifact_put", json!({"kind": "binary", "content": "x", "created_by": "a"})).await;
        r.call("mempalace_artifact_get", json!({"artifact_id": artifact["artifact"]["id"]})).await;
        r.call("mempalace_artifact_get", json!({"artifact_id": "art_missing"})).await;
        r.call("mempalace_patch_submit", json!({"content": "--- a/schedule\n+++ b/schedule\n@@ -1 +1,2 @@\n dawn\n+dusk",
            "from_agent": "win-codex", "stream": "project/greenhouse", "to_agent": "mac-codex",
            "correlation_id": task["task"]["correlation_id"]})).await;
        r.call("mempalace_wake_up", json!({})).await;
        r.call("mempalace_delete_drawer", json!({"drawer_id": "drawer_missing_x_1"})).await;

        // The memory_* family.
        r.call("memory_status", json!({})).await;
        r.call("memory_set_identity", json!({"text": "I am Atlas, the lab's assistant."})).await;
        let memory = r.call("memory_add_drawer", json!({"wing": "lab", "room": "gripper",
            "content": "The gripper force limit is 12.5 N for the red cubes."})).await;
        // Without an ingestion pool (a library backend) a turn is filed at once.
        r.call("memory_ingest_turn", json!({"wing": "lab", "room": "wrist", "user": "What torque does the wrist take?",
            "assistant": "The wrist joint takes at most 4 Nm."})).await;
        r.call("memory_list_wings", json!({})).await;
        r.call("memory_list_rooms", json!({"wing": "lab"})).await;
        r.call("memory_get_taxonomy", json!({})).await;
        r.call("memory_search", json!({"query": "gripper force"})).await;
        r.call("memory_check_duplicate", json!({"content": "The gripper force limit is 12.5 N for the red cubes."})).await;
        r.call("memory_traverse", json!({"start_room": "gripper"})).await;
        r.call("memory_find_tunnels", json!({})).await;
        r.call("memory_graph_stats", json!({})).await;
        r.call("memory_kg_add", json!({"subject": "Gripper", "predicate": "limited_to", "object": "12.5 N"})).await;
        r.call("memory_kg_query", json!({"entity": "Gripper"})).await;
        r.call("memory_kg_invalidate", json!({"subject": "Gripper", "predicate": "limited_to", "object": "12.5 N"})).await;
        r.call("memory_kg_timeline", json!({"entity": "Gripper"})).await;
        r.call("memory_kg_stats", json!({})).await;
        r.call("memory_diary_write", json!({"agent": "atlas", "entry": "Tuned the gripper today.", "topic": "lab"})).await;
        r.call("memory_diary_read", json!({"agent": "atlas"})).await;
        // Extracted memories (the rules: a library backend has no model).
        r.call("memory_extract", json!({"conversation_text":
            "user: I live in Oslo and I always use pnpm.\nassistant: Noted.\nuser: In this repo we use Vitest.",
            "user_id": "alex", "dry_run": true})).await;
        r.call("memory_extract", json!({"turns": [{"role": "user", "text": "I live in Oslo and I always use pnpm."},
            {"role": "assistant", "text": "Noted."}, {"role": "user", "text": "In this repo we use Vitest."}],
            "user_id": "alex", "session_id": "s-1"})).await;
        r.call("memory_extract", json!({"turns": [{"role": "user", "text": "I moved to Bergen last month."}],
            "user_id": "alex"})).await;
        r.call("memory_extract", json!({"conversation_text": "assistant: hello"})).await;
        r.call("memory_list_memories", json!({"user_id": "alex"})).await;
        r.call("memory_list_memories", json!({})).await;
        r.call("memory_inject", json!({"message": "Which package manager should I use in Oslo?", "user_id": "alex"})).await;
        r.call("memory_inject", json!({"message": "ok thanks"})).await;
        r.call("memory_search", json!({"query": "pnpm", "user_id": "alex"})).await;
        if let Some(id) = memory["drawer_id"].as_str() {
            r.call("memory_delete_drawer", json!({"drawer_id": id, "reason": "test"})).await;
        }

        // GoClaw's memory files (issue 18).
        r.call("memory_append", json!({"content": "The greenhouse vents open above 28 °C."})).await;
        r.call("memory_append", json!({"content": "Flushed: the user checks humidity every morning.", "daily": true})).await;
        r.call("memory_append", json!({"content": "Alex waters by hand on Sundays.", "user_id": "alex"})).await;
        r.call("memory_append", json!({"content": "x", "daily": true, "file": "memory/x.md"})).await;
        r.call("memory_append", json!({"content": "x", "file": "../outside.md"})).await;
        r.call("memory_get", json!({"path": "MEMORY.md"})).await;
        r.call("memory_get", json!({"path": "MEMORY.md", "user_id": "alex"})).await;
        r.call("memory_get", json!({"path": "memory/2026-11-26.md", "user_id": "alex", "from": 1, "lines": 1})).await;
        r.call("memory_get", json!({"path": "memory/2026-11-26.md", "from": 5})).await;
        r.call("memory_get", json!({"path": "memory/missing.md"})).await;
        r.call("memory_get", json!({"path": "../palace.db"})).await;
        r.call("memory_get", json!({"path": "MEMORY.md", "from": 0})).await;
        r.call("memory_search", json!({"query": "when do the greenhouse vents open", "user_id": "alex",
            "user_first": true})).await;

        // robotmem's tools.
        let session = r.call("start_session", json!({"context": {"task": "sorting"}})).await;
        let session_id = session["session_id"].as_str().unwrap_or_default().to_string();
        let learned = r.call("learn", json!({"insight": "Red cubes slip when the gripper force is below 10 N.",
            "session_id": session_id})).await;
        r.call("recall", json!({"query": "red cubes slip", "n": 3})).await;
        r.call("save_perception", json!({"description": "Camera frame of the sorting table", "perception_type": "visual",
            "session_id": session_id})).await;
        if let Some(id) = learned["memory_id"].as_str() {
            r.call("update", json!({"memory_id": id, "new_content": "Red cubes slip below 11 N of gripper force."})).await;
            r.call("forget", json!({"memory_id": id, "reason": "superseded by a test"})).await;
        }
        r.call("end_session", json!({"session_id": session_id, "outcome_score": 0.8})).await;

        // Consolidation: the ended session's episode, the archive.
        r.call("memory_episodes", json!({})).await;
        r.call("memory_episodes", json!({"query": "sorting cubes with the gripper"})).await;
        r.call("memory_episodes", json!({"episode_id": session_id})).await;
        r.call("memory_episodes", json!({"episode_id": "no-such-session"})).await;
        r.call("memory_episodes", json!({"limit": 0})).await;
        r.call("memory_search", json!({"query": "camera frame of the sorting table", "include_episodes": true})).await;
        r.call("memory_prune", json!({})).await;
        r.call("memory_prune", json!({"dry_run": false})).await;
        if let Some(id) = learned["memory_id"].as_str() {
            r.call("memory_restore", json!({"drawer_id": id})).await;
        }
        r.call("memory_restore", json!({"drawer_id": "drawer_missing_x_1"})).await;
        // Duplicate entities: two spellings of one company.
        r.call("memory_kg_add", json!({"subject": "Acme Corp", "predicate": "hosts", "object": "tile index"})).await;
        r.call("memory_kg_add", json!({"subject": "Acme Inc", "predicate": "bills", "object": "the lab"})).await;
        r.call("memory_kg_dedup", json!({})).await;
        r.call("memory_kg_dedup", json!({"dry_run": false})).await;
        r.call("memory_kg_aliases", json!({})).await;
        r.call("memory_kg_unmerge", json!({"alias": "Acme Inc"})).await;
        r.call("memory_kg_unmerge", json!({"alias": "Acme Inc"})).await;
        r.call("memory_kg_merge", json!({"alias": "Acme Inc", "canonical": "Acme Corp"})).await;
        r.call("memory_kg_merge", json!({"alias": "Acme Inc", "canonical": "Acme Corp"})).await;
        r.call("memory_kg_aliases", json!({"entity": "Acme Inc"})).await;
        r.call("memory_kg_query", json!({"entity": "Acme Inc"})).await;
    });

    // Every offered tool was called.
    let offered: Vec<&str> = server.tool_names();
    let missing: Vec<&&str> = offered.iter().filter(|name| !r.results.contains_key(**name)).collect();
    assert!(missing.is_empty(), "tools without a golden file: {missing:?}");

    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let dir = golden_dir();
    let mut differing = Vec::new();
    for (tool, calls) in &r.results {
        let path = dir.join(format!("{tool}.json"));
        let text = serde_json::to_string_pretty(calls).unwrap() + "\n";
        if update {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&path).unwrap_or_default();
        if expected != text {
            differing.push((tool.clone(), expected, text));
        }
    }
    if let Some((tool, expected, actual)) = differing.first() {
        let first_line = expected.lines().zip(actual.lines()).position(|(a, b)| a != b).unwrap_or(0);
        panic!(
            "{} tool result(s) differ from tests/golden ({}); first: {tool} at line {}:\n  expected: {}\n  actual:   {}\n\
             Run `UPDATE_GOLDEN=1 cargo test -p mempalace-mcp --test golden` to accept a deliberate change.",
            differing.len(),
            differing.iter().map(|(t, _, _)| t.as_str()).collect::<Vec<_>>().join(", "),
            first_line + 1,
            expected.lines().nth(first_line).unwrap_or("<missing file>"),
            actual.lines().nth(first_line).unwrap_or("<end>"),
        );
    }
}
