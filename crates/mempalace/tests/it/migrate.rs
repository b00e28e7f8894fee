//! Issue 10: `migrate-from-python` on palaces written by the Python
//! MemPalace 3.3.6 (`../shared/fixtures/mempalace-python/`): expected counts,
//! every drawer's exact text and metadata, the knowledge graph, identity
//! and tunnels, a damaged vector index, and a second run that adds nothing.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

fn fixture(name: &str) -> PathBuf {
    let shared = std::env::var_os("MEMPALACE_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    let dir = shared.join("fixtures/mempalace-python").join(name).join("dot-mempalace");
    assert!(dir.is_dir(), "{} is missing; set MEMPALACE_SHARED_DIR to the shared data folder", dir.display());
    dir
}

struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        Self { dir: tempfile::tempdir().expect("tempdir") }
    }

    fn palace(&self) -> PathBuf {
        self.dir.path().join("palace")
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mempalace"));
        command
            .env_clear()
            .env("HOME", self.dir.path().join("home"))
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("MEMPALACE_EMBEDDER", "static")
            .arg("--palace")
            .arg(self.palace())
            .args(args)
            .stdin(Stdio::null());
        if let Some(models) = std::env::var_os("MEMPALACE_MODEL_DIR") {
            command.env("MEMPALACE_MODEL_DIR", models);
        }
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run mempalace")
    }

    fn json(&self, args: &[&str]) -> Value {
        let output = self.run(args);
        assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice(&output.stdout).expect("JSON output")
    }
}

/// Every drawer of the Chroma file: id → (text, metadata), read with SQLite.
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
    drawers
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
    let sandbox = Sandbox::new();
    let source = fixture("alex");
    let report = sandbox.json(&["migrate-from-python", "--source", source.to_str().unwrap(), "--dry-run", "--json"]);
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

    let missing = sandbox.run(&["migrate-from-python", "--source", sandbox.dir.path().to_str().unwrap(), "--dry-run"]);
    assert_eq!(missing.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("chroma.sqlite3"));
}

#[test]
fn a_palace_without_its_vector_index_comes_over_whole_and_exact() {
    let sandbox = Sandbox::new();
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
    assert_eq!(seen, 277);

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
    assert!(identity["identity"].as_str().unwrap().starts_with("I am Atlas, the assistant of a small robotics lab."));
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
