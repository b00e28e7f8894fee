//! `migrate-from-python` on palaces written by the Python MemPalace, in two
//! layers. The repository's palace (`fixtures/mempalace-python/`, SQL text
//! of ChromaDB's real schema, built into a temporary folder) runs on both
//! stores: expected counts, every drawer's exact text and metadata (a
//! write still in ChromaDB's queue replayed), the knowledge graph with its
//! windows, identity and tunnels, a missing vector index, and a second run
//! that adds nothing. The real-data layer (`real_data`) does the same on
//! palaces the Python MemPalace 3.3.6 wrote (`MEMPALACE_SHARED_DIR`/fixtures/mempalace-python).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;

use mempalace_testdata::{VectorIndex, python_palace};
use serde_json::{Value, json};

use crate::harness::{Sandbox, Store, on_both};

/// Every drawer of the Chroma file: id → (text, metadata), read with SQLite
/// from the drawers' metadata segment, plus the adds still in the write queue
/// after the segment's `max_seq_id` (written, never applied).
fn chroma_drawers(source: &std::path::Path) -> BTreeMap<String, (String, BTreeMap<String, Value>)> {
    let uri = format!("file:{}?immutable=1", source.join("palace/chroma.sqlite3").display());
    let conn = rusqlite::Connection::open_with_flags(
        uri,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
    )
    .expect("open chroma.sqlite3");
    let mut statement = conn
        .prepare(
            "SELECT e.embedding_id, m.key, m.string_value, m.int_value, m.float_value FROM embeddings e \
             JOIN segments s ON s.id = e.segment_id JOIN collections c ON c.id = s.collection \
             JOIN embedding_metadata m ON m.id = e.id WHERE c.name = 'mempalace_drawers'",
        )
        .unwrap();
    let mut drawers: BTreeMap<String, (String, BTreeMap<String, Value>)> = BTreeMap::new();
    let rows = statement
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<i64>>(3)?,
                r.get::<_, Option<f64>>(4)?,
            ))
        })
        .unwrap();
    for row in rows {
        let (id, key, text, int, float) = row.unwrap();
        let entry = drawers.entry(id).or_default();
        if key == "chroma:document" {
            entry.0 = text.unwrap_or_default();
        } else if let Some(value) = text.map(Value::from).or(int.map(Value::from)).or(float.map(Value::from)) {
            entry.1.insert(key, value);
        }
    }
    let mut queued = conn
        .prepare(
            "SELECT q.id, q.metadata FROM embeddings_queue q JOIN collections c ON q.topic LIKE '%' || c.id \
             JOIN segments s ON s.collection = c.id AND s.scope = 'METADATA' JOIN max_seq_id m ON m.segment_id = s.id \
             WHERE c.name = 'mempalace_drawers' AND q.operation = 0 AND q.seq_id > m.seq_id",
        )
        .unwrap();
    let rows = queued.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))).unwrap();
    for row in rows {
        let (id, metadata) = row.unwrap();
        let mut metadata: BTreeMap<String, Value> = serde_json::from_str(&metadata).unwrap();
        let text = metadata.remove("chroma:document").and_then(|t| t.as_str().map(str::to_string)).unwrap();
        drawers.insert(id, (text, metadata));
    }
    drawers
}

/// Every exported drawer matches its source drawer: same id, exact text,
/// place, provenance, dates, and unknown keys kept in the context.
fn assert_drawers_match(sandbox: &Sandbox, expected: &BTreeMap<String, (String, BTreeMap<String, Value>)>) {
    let export = sandbox.run(&["export"]);
    assert!(export.status.success());
    let mut seen = 0;
    for line in String::from_utf8(export.stdout).unwrap().lines() {
        let record: Value = serde_json::from_str(line).unwrap();
        if record["type"] != "drawer" {
            continue;
        }
        seen += 1;
        let id = record["id"].as_str().unwrap();
        let (text, meta) = expected.get(id).unwrap_or_else(|| panic!("{id} is not a MemPalace id"));
        assert_eq!(record["content"].as_str().unwrap(), text, "{id}");
        assert_eq!(record["wing"], meta["wing"], "{id}");
        assert_eq!(record["room"], meta["room"], "{id}");
        if let Some(hall) = meta.get("hall") {
            assert_eq!(&record["hall"], hall, "{id}");
        }
        if let Some(file) = meta.get("source_file").filter(|f| f.as_str() != Some("")) {
            assert_eq!(&record["source_file"], file, "{id}");
        }
        for key in ["chunk_index", "line_start", "line_end", "content_date"] {
            if let Some(value) = meta.get(key) {
                assert_eq!(&record[key], value, "{id} {key}");
            }
        }
        if let Some(mtime) = meta.get("source_mtime") {
            assert_eq!(record["source_mtime"].as_f64(), mtime.as_f64(), "{id}");
        }
        assert!(record["filed_at"].as_str().unwrap().starts_with(&meta["filed_at"].as_str().unwrap()[..19]), "{id}");
        for key in ["extract_mode", "ingest_mode", "normalize_version", "topic", "type", "agent", "date"] {
            if let Some(value) = meta.get(key) {
                assert_eq!(&record["context"][key], value, "{id}: unknown keys are kept in the context");
            }
        }
    }
    assert_eq!(seen, expected.len());
}

/// The repository's palace by wing: rover 2 (a Claude Code export),
/// greenhouse 1 (a Gemini chat), lab_notes 2 (a project document's chunks),
/// lab 1 (added through MCP), wing_orion 1 (the diary entry still in the
/// write queue). The drawer added and deleted again is not there.
const FIXTURE_WINGS: &[(&str, &str, u64)] = &[
    ("greenhouse", "irrigation", 1),
    ("lab", "gripper", 1),
    ("lab_notes", "general", 2),
    ("rover", "planning", 2),
    ("wing_orion", "diary", 1),
];
const GRIPPER: &str = "drawer_lab_gripper_3e5a7c9b1d2f4e6a8c0b2d4f";
const DIARY: &str = "diary_wing_orion_20261120_174206481153_2c4e6a8b0d1f";

fn dry_run_reports_counts_and_writes_nothing(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let source = python_palace(sandbox.dir(), VectorIndex::Present);
    let report = sandbox.json(&["migrate-from-python", "--source", source.to_str().unwrap(), "--dry-run", "--json"]);
    assert_eq!(report["drawers"], 7, "{report}");
    for (wing, room, count) in FIXTURE_WINGS {
        assert_eq!(report["wings"][wing], json!({ *room: count }), "{wing}: {report}");
    }
    assert_eq!((report["entities"].clone(), report["triples"].clone()), (json!(5), json!(4)));
    assert_eq!((report["tunnels"].clone(), report["identity"].clone()), (json!(1), json!(true)));
    assert_eq!(report["closets_skipped"], 1, "the closet is derived and skipped");
    assert_eq!(report["config_keys"], json!(["collection_name", "hall_keywords", "palace_path", "topic_wings"]));
    let problems = report["problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(problems[0]["detail"].as_str().unwrap().contains("1 queued writes had not reached the metadata segment"));
    let text = sandbox.run(&["migrate-from-python", "--source", source.to_str().unwrap(), "--dry-run"]);
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.contains("WING lab_notes: 2") && stdout.contains("5 entities, 4 facts"), "{stdout}");
    match store {
        Store::Sqlite => {
            assert_eq!(sandbox.run(&["status"]).status.code(), Some(3), "no palace");
            assert!(!sandbox.palace().exists(), "a dry run creates nothing");
        }
        Store::Postgres => assert_eq!(sandbox.total(), 0, "a dry run writes nothing"),
    }

    let missing = sandbox.run(&["migrate-from-python", "--source", sandbox.home().to_str().unwrap(), "--dry-run"]);
    assert_eq!(missing.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("chroma.sqlite3"));
}

fn a_palace_without_its_vector_index_comes_over_whole_and_exact(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let source = python_palace(sandbox.dir(), VectorIndex::Missing);
    let report = sandbox.json(&["migrate-from-python", "--source", source.to_str().unwrap(), "--json"]);
    assert_eq!(report["written"]["drawers_new"], 7, "{report}");
    for (wing, _, count) in FIXTURE_WINGS {
        assert_eq!(report["comparison"]["wings"][wing], json!({"source": count, "palace": count}), "{wing}");
    }
    assert_eq!(report["comparison"]["triples"], json!({"source": 4, "palace": 4}));
    let problems = report["problems"].as_array().unwrap();
    assert!(
        problems.iter().any(|p| p["detail"].as_str().unwrap().contains("vector index folder is missing")),
        "the damage is reported: {problems:?}"
    );
    assert_eq!(report["embedding"]["remaining"], 0, "every drawer got a vector: {report}");

    // Every drawer: same id, exact text, place and provenance; the queued
    // diary entry too.
    let expected = chroma_drawers(&source);
    assert_eq!(expected.len(), 7);
    assert!(expected.contains_key(DIARY));
    assert_drawers_match(&sandbox, &expected);
    let diary = sandbox.json(&["get", DIARY, "--json"]);
    assert_eq!(diary["content"], "Zeroed the gripper force sensor with Alice; the egg test passes at 3.5 N.");
    assert_eq!((diary["wing"].as_str(), diary["room"].as_str()), (Some("wing_orion"), Some("diary")));
    let gripper = sandbox.json(&["get", GRIPPER, "--json"]);
    assert_eq!(gripper["added_by"], "orion");
    assert_eq!(
        gripper["content"],
        "The gripper holds eggs without cracking them at 3.5 N, measured after the force sensor was zeroed on Monday."
    );
    assert_eq!(
        sandbox.run(&["get", "drawer_lab_scratch_aa11bb22cc33dd44ee55ff66"]).status.code(),
        Some(3),
        "a drawer deleted in the source stays deleted"
    );

    // The knowledge graph with its windows, fact ids and provenance.
    let at = |date: &str| -> Vec<String> {
        let result = sandbox.json(&["kg", "query", "Rover Arm", "--as-of", date, "--direction", "out", "--json"]);
        result["facts"].as_array().unwrap().iter().map(|f| f["object"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(at("2024-06-01"), vec!["ROS 1"]);
    assert_eq!(at("2025-02-28"), vec!["ROS 1"], "the last day of the window is inside it");
    assert_eq!(at("2025-06-01"), vec!["ROS 2"]);
    assert!(at("2023-01-01").is_empty());
    let stats = sandbox.json(&["kg", "stats", "--json"]);
    assert_eq!(
        (stats["entities"].clone(), stats["current_facts"].clone(), stats["expired_facts"].clone()),
        (json!(5), json!(3), json!(1))
    );
    let alice = sandbox.json(&["kg", "query", "Alice", "--json"]);
    assert_eq!(alice["facts"][0]["object"], "Gripper");
    assert_eq!(alice["facts"][0]["id"], "t_alice_maintains_gripper_0a1b2c3d4e5f", "fact ids are kept");
    let extracted = sandbox.json(&["kg", "query", "Gripper", "--direction", "out", "--json"]);
    assert_eq!(extracted["facts"][0]["source_drawer_id"], "drawer_lab_notes_general_7c6d5e4f3a2b1c0d9e8f7a6b");
    let identity = sandbox.json(&["identity", "show", "--json"]);
    assert!(identity["identity"].as_str().unwrap().starts_with("I am Orion, the assistant of a small rover workshop."));
    let tunnels = sandbox.json(&["graph", "tunnel", "list", "--json"]);
    assert_eq!(tunnels.as_array().unwrap().len(), 1);
    assert_eq!(tunnels[0]["id"], "5c1e9a7b3d2f4e60");
    assert_eq!(tunnels[0]["label"], "gripper notes");
    let found = sandbox.json(&["search", "gripper holds eggs without cracking them", "--results", "1", "--json"]);
    assert_eq!(found["mode"], "hybrid");
    assert_eq!(found["results"][0]["id"], GRIPPER);

    // Running it again adds nothing: an interrupted migration is resumed.
    let again = sandbox.json(&["migrate-from-python", "--source", source.to_str().unwrap(), "--json"]);
    assert_eq!(again["written"]["drawers_new"], 0);
    assert_eq!(again["written"]["drawers_already_present"], 7);
    assert_eq!(sandbox.total(), 7);

    // A reader that stops early is a normal end for `export`.
    let mut child = sandbox.cmd(&["export"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    assert!(first.contains("\"header\""));
    assert!(status.success() && !stderr.contains("error"), "{status:?} {stderr}");
}

on_both!(dry_run_reports_counts_and_writes_nothing, a_palace_without_its_vector_index_comes_over_whole_and_exact);

/// The same on the palaces the Python MemPalace 3.3.6 wrote.
mod real_data {
    use std::io::{BufRead, BufReader, Read};
    use std::path::PathBuf;
    use std::process::Stdio;

    use serde_json::json;

    use super::{assert_drawers_match, chroma_drawers};
    use crate::harness::Sandbox;

    fn fixture(name: &str) -> PathBuf {
        mempalace_testdata::shared("fixtures/mempalace-python").join(name).join("dot-mempalace")
    }

    const EXPECTED_WINGS: &[(&str, u64)] = &[
        ("daaain__claude-code-log", 14),
        ("gemini", 96),
        ("kvsankar__agent-history", 17),
        ("lab", 1),
        ("lab_notes", 148),
        ("wing_atlas", 1),
    ];

    #[test]
    fn dry_run_reports_counts_and_writes_nothing() {
        let sandbox = Sandbox::new().with_static_model();
        let source = fixture("alex");
        let report =
            sandbox.json(&["migrate-from-python", "--source", source.to_str().unwrap(), "--dry-run", "--json"]);
        assert_eq!(report["drawers"], 277);
        for (wing, count) in EXPECTED_WINGS {
            let total: u64 = report["wings"][wing].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
            assert_eq!(total, *count, "{wing}");
        }
        assert_eq!(report["wings"]["wing_atlas"], json!({"diary": 1}));
        assert_eq!((report["entities"].clone(), report["triples"].clone()), (json!(5), json!(3)));
        assert_eq!((report["tunnels"].clone(), report["identity"].clone()), (json!(1), json!(true)));
        assert_eq!(report["closets_skipped"], 7, "closets are derived and skipped");
        assert_eq!(report["problems"], json!([]));
        assert!(!sandbox.palace().exists(), "a dry run creates nothing");

        let text = sandbox.run(&["migrate-from-python", "--source", source.to_str().unwrap(), "--dry-run"]);
        let stdout = String::from_utf8_lossy(&text.stdout);
        assert!(stdout.contains("WING lab_notes: 148") && stdout.contains("5 entities, 3 facts"), "{stdout}");

        let missing = sandbox.run(&["migrate-from-python", "--source", sandbox.dir().to_str().unwrap(), "--dry-run"]);
        assert_eq!(missing.status.code(), Some(3));
        assert!(String::from_utf8_lossy(&missing.stderr).contains("chroma.sqlite3"));
    }

    #[test]
    fn a_palace_without_its_vector_index_comes_over_whole_and_exact() {
        let sandbox = Sandbox::new().with_static_model();
        let source = fixture("alex-no-index");
        let report = sandbox.json(&["migrate-from-python", "--source", source.to_str().unwrap(), "--json"]);
        assert_eq!(report["written"]["drawers_new"], 277, "{report}");
        for (wing, count) in EXPECTED_WINGS {
            assert_eq!(report["comparison"]["wings"][wing], json!({"source": count, "palace": count}), "{wing}");
        }
        assert_eq!(report["comparison"]["triples"], json!({"source": 3, "palace": 3}));
        let problems = report["problems"].as_array().unwrap();
        assert!(
            problems.iter().any(|p| p["detail"].as_str().unwrap().contains("vector index folder is missing")),
            "the damage is reported: {problems:?}"
        );
        assert_eq!(report["embedding"]["remaining"], 0, "every drawer got a vector: {report}");

        // Every drawer: same id, exact text, place and provenance.
        let expected = chroma_drawers(&source);
        assert_eq!(expected.len(), 277);
        assert_drawers_match(&sandbox, &expected);

        let gripper = sandbox.json(&["get", "drawer_lab_gripper_858f95377cf37d14ab1d69fa", "--json"]);
        assert_eq!(gripper["added_by"], "atlas");
        assert_eq!(
            gripper["content"],
            "The gripper works best at 12.5 N because the force sensor was recalibrated on Tuesday."
        );
        let before = sandbox.json(&["kg", "query", "Crawbl Backend", "--as-of", "2024-12-01", "--json"]);
        let objects: Vec<&str> =
            before["facts"].as_array().unwrap().iter().map(|f| f["object"].as_str().unwrap()).collect();
        assert_eq!(objects, vec!["MongoDB"]);
        let stats = sandbox.json(&["kg", "stats", "--json"]);
        assert_eq!(
            (stats["entities"].clone(), stats["current_facts"].clone(), stats["expired_facts"].clone()),
            (json!(5), json!(2), json!(1))
        );
        let owner = sandbox.json(&["kg", "query", "Alice", "--json"]);
        assert_eq!(owner["facts"][0]["object"], "Auth Module");
        assert_eq!(owner["facts"][0]["id"], "t_alice_owns_auth_module_394821ef0348", "fact ids are kept");
        let identity = sandbox.json(&["identity", "show", "--json"]);
        assert!(
            identity["identity"].as_str().unwrap().starts_with("I am Atlas, the assistant of a small robotics lab.")
        );
        let tunnels = sandbox.json(&["graph", "tunnel", "list", "--json"]);
        assert_eq!(tunnels.as_array().unwrap().len(), 1);
        assert_eq!(tunnels[0]["id"], "3b9151a18a76dc94");
        assert_eq!(tunnels[0]["label"], "gripper docs");
        let found = sandbox.json(&["search", "gripper force sensor", "--results", "1", "--json"]);
        assert_eq!(found["mode"], "hybrid");
        assert_eq!(found["results"][0]["id"], "drawer_lab_gripper_858f95377cf37d14ab1d69fa");

        // Running it again adds nothing: an interrupted migration is resumed.
        let again = sandbox.json(&["migrate-from-python", "--source", source.to_str().unwrap(), "--json"]);
        assert_eq!(again["written"]["drawers_new"], 0);
        assert_eq!(again["written"]["drawers_already_present"], 277);
        assert_eq!(sandbox.json(&["status", "--json"])["total_drawers"], 277);

        // A reader that stops early is a normal end for `export`.
        let mut child = sandbox.cmd(&["export"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
        let mut stderr = String::new();
        child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
        let status = child.wait().unwrap();
        assert!(first.contains("\"header\""));
        assert!(status.success() && !stderr.contains("error"), "{status:?} {stderr}");
    }
}
