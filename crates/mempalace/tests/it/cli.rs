//! Drives the real `mempalace` binary on temporary palaces, on both stores:
//! every command, bad input, several processes writing at once, and a writer
//! killed in the middle of an import; SQLite-file specifics (foreign files,
//! the palace chosen by config and environment) on SQLite only.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{Sandbox, Store, code, model_dir, on_both, text};

fn init_add_get_status_round_trip(store: Store) {
    let sandbox = Sandbox::on(store);
    assert!(sandbox.ok(&["init"]).contains("palace ready"));
    let id = sandbox
        .ok(&[
            "add",
            "--wing",
            "project",
            "--room",
            "decisions",
            "--type",
            "decision",
            "--importance",
            "4.5",
            "--tag",
            "database",
            "We chose PostgreSQL over MongoDB.",
        ])
        .trim()
        .to_string();
    assert!(id.starts_with("drawer_project_decisions_"), "{id}");
    let again = sandbox.run(&["add", "--wing", "project", "--room", "decisions", "We chose PostgreSQL over MongoDB."]);
    assert!(again.status.success());
    assert_eq!(text(&again.stdout).trim(), id, "the same text in the same place keeps its id");
    assert!(text(&again.stderr).contains("already filed"));

    let drawer = sandbox.json(&["get", &id, "--json"]);
    assert_eq!(drawer["content"], "We chose PostgreSQL over MongoDB.");
    assert_eq!(drawer["memory_type"], "decision");
    assert_eq!(drawer["importance"], 4.5);
    assert_eq!(drawer["tags"][0]["tag"], "database");
    assert_eq!(drawer["status"], "active");
    assert!(sandbox.ok(&["get", &id]).contains("We chose PostgreSQL over MongoDB."));

    let stdin_add = sandbox.run_with_stdin(
        &["add", "--wing", "project", "--room", "notes", "-"],
        "中文 数据库 notes about storage\n".as_bytes(),
    );
    assert!(stdin_add.status.success(), "{}", text(&stdin_add.stderr));

    let status = sandbox.json(&["status", "--json"]);
    assert_eq!(status["total_drawers"], 2);
    assert_eq!(status["wings"]["project"], 2);
    assert_eq!(status["rooms"]["decisions"], 1);
    assert_eq!(status["taxonomy"]["project"]["notes"], 1);
    assert_eq!(status["workspace"], "default");
    let schema_version = match store {
        Store::Sqlite => mempalace_sqlite::SCHEMA_VERSION,
        Store::Postgres => mempalace_postgres::SCHEMA_VERSION,
    };
    assert_eq!(status["schema_version"], schema_version);

    let human = sandbox.ok(&["status"]);
    assert!(human.contains("MemPalace Status — 2 drawers"), "{human}");
    assert!(human.contains("  WING: project\n"), "{human}");
    assert!(human.contains("    ROOM: decisions                1 drawers\n"), "{human}");

    let long_text: String =
        (0..40).map(|i| format!("Sentence {i} explains step {i} of the gripper calibration. ")).collect();
    let chunked = sandbox.ok(&["add", "--wing", "project", "--room", "manual", &long_text]);
    assert!(chunked.lines().count() >= 3, "long text is filed as several drawers: {chunked}");
}

fn soft_and_hard_delete(store: Store) {
    let sandbox = Sandbox::on(store);
    let id = sandbox.ok(&["add", "--wing", "w", "--room", "r", "to be deleted"]).trim().to_string();
    sandbox.ok(&["delete", &id, "--reason", "outdated"]);
    assert_eq!(sandbox.total(), 0);
    let drawer = sandbox.json(&["get", &id, "--json"]);
    assert_eq!(drawer["status"], "invalidated");
    assert_eq!(drawer["status_reason"], "outdated");
    sandbox.ok(&["delete", &id, "--hard"]);
    let missing = sandbox.run(&["get", &id]);
    assert_eq!(code(&missing), 3);
    assert!(text(&missing.stderr).contains("drawer not found"));
    assert_eq!(code(&sandbox.run(&["delete", &id, "--hard"])), 3);
}

/// `status` shows the cold path (issue 17): raw drawers before `work`,
/// none after, every drawer counted once per state, tier and status, the
/// daily job's run; the same in `--json` under `pipeline`.
fn status_shows_the_cold_path(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    for text in [
        "We decided to move the billing service to PostgreSQL next quarter.",
        "The gripper calibration failed at 12 N yesterday afternoon.",
        "I prefer short stand-up meetings in the morning.",
    ] {
        sandbox.ok(&["add", "--wing", "lab", "--room", "notes", text]);
    }
    let typed = sandbox.ok(&["add", "--wing", "lab", "--room", "notes", "--type", "decision", "We use 12.5 N."]);
    sandbox.ok(&["delete", typed.trim(), "--reason", "outdated"]);

    let before = sandbox.json(&["status", "--json"]);
    let pipeline = &before["pipeline"];
    assert_eq!(pipeline["by_state"], serde_json::json!({"raw": 3, "processed": 1, "merged": 0, "failed": 0}));
    assert_eq!(pipeline["by_tier"], serde_json::json!({"heuristic": 1, "centroid": 0, "llm": 3}));
    assert_eq!(
        pipeline["by_status"],
        serde_json::json!({"active": 3, "superseded": 0, "invalidated": 1, "archived": 0})
    );
    assert_eq!((pipeline["claimed"].as_u64(), pipeline["memories"].as_u64()), (Some(0), Some(0)));
    assert_eq!(pipeline["last_runs"], serde_json::json!([]));
    assert_eq!(before["total_drawers"], 3, "the existing keys are unchanged");
    let human = sandbox.ok(&["status"]);
    for line in [
        "  Cold path\n",
        "    raw           3 (0 claimed)\n",
        "    processed     1\n",
        "    merged        0\n",
        "    failed        0\n",
        "    by tier       heuristic 1, centroid 0, llm 3\n",
        "    superseded    0\n",
        "    invalidated   1\n",
        "    archived      0\n",
        "    memories      0\n",
        "    last runs     process     none recorded\n",
        "                  enrich      none recorded\n",
        "                  consolidate none recorded\n",
        "                  maintain    none recorded\n",
    ] {
        assert!(human.contains(line), "{line:?} missing from:\n{human}");
    }

    sandbox.ok(&["work", "--once", "--jobs", "process,maintain", "--worker", "tester"]);
    let after = sandbox.json(&["status", "--json"]);
    let pipeline = &after["pipeline"];
    let sum = |key: &str| pipeline[key].as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum::<u64>();
    let total = sum("by_state");
    assert!(total >= 4, "{pipeline}");
    assert_eq!((sum("by_tier"), sum("by_status")), (total, total), "every drawer counted once: {pipeline}");
    assert_eq!((pipeline["by_state"]["raw"].as_u64(), pipeline["claimed"].as_u64()), (Some(0), Some(0)), "{pipeline}");
    assert_eq!(pipeline["by_state"]["failed"], 0, "{pipeline}");
    assert_eq!(pipeline["by_status"]["active"], after["total_drawers"], "{pipeline}");
    assert_eq!(pipeline["memories"].as_u64(), Some(after["wings"]["memories"].as_u64().unwrap_or(0)), "{after}");
    let runs = pipeline["last_runs"].as_array().unwrap();
    let run =
        |job: &str| runs.iter().find(|run| run["job"] == job).unwrap_or_else(|| panic!("no {job} run: {pipeline}"));
    assert_eq!(runs.len(), 2, "the jobs that ran recorded their runs: {pipeline}");
    for job in ["process", "maintain"] {
        assert_eq!((&run(job)["holder"], &run(job)["finished"]), (&"tester".into(), &true.into()), "{pipeline}");
    }
    let (processed, maintained) =
        (run("process")["started_at"].as_str().unwrap(), run("maintain")["started_at"].as_str().unwrap());
    let human = sandbox.ok(&["status"]);
    for line in [
        "    raw           0 (0 claimed)\n".to_string(),
        format!("    last runs     process     {processed} by tester\n"),
        "                  enrich      none recorded\n".to_string(),
        format!("                  maintain    {maintained} by tester\n"),
    ] {
        assert!(human.contains(&line), "{line:?} missing from:\n{human}");
    }
}

fn identity_set_and_show(store: Store) {
    let sandbox = Sandbox::on(store);
    let empty = sandbox.run(&["identity", "show"]);
    match store {
        Store::Sqlite => assert_eq!(code(&empty), 3, "no palace yet"),
        // A PostgreSQL palace is its (empty) schema: it exists, without an identity.
        Store::Postgres => {
            assert_eq!(code(&empty), 0);
            assert!(text(&empty.stderr).contains("no identity set"), "{}", text(&empty.stderr));
            assert_eq!(sandbox.json(&["identity", "show", "--json"])["identity"], Value::Null);
        }
    }
    sandbox.ok(&["identity", "set", "I am Atlas, the lab assistant."]);
    assert_eq!(sandbox.ok(&["identity", "show"]).trim(), "I am Atlas, the lab assistant.");
    let json = sandbox.json(&["identity", "show", "--json"]);
    assert_eq!(json["identity"], "I am Atlas, the lab assistant.");
    let too_long = sandbox.run(&["identity", "set", &"x".repeat(2_001)]);
    assert_eq!(code(&too_long), 2);
    assert_eq!(sandbox.ok(&["identity", "show"]).trim(), "I am Atlas, the lab assistant.");
}

fn init_with_a_project_dir_writes_mempalace_yaml_once(store: Store) {
    let sandbox = Sandbox::on(store);
    let project = sandbox.path("My Lab-Notes");
    for folder in ["docs", "api", "node_modules", ".git", "experiments"] {
        std::fs::create_dir_all(project.join(folder)).unwrap();
    }
    let out = sandbox.ok(&["init", project.to_str().unwrap(), "--yes"]);
    assert!(out.contains("wrote"), "{out}");
    let yaml = std::fs::read_to_string(project.join("mempalace.yaml")).unwrap();
    assert!(yaml.starts_with("wing: \"my_lab_notes\"\n"), "{yaml}");
    for room in ["backend", "documentation", "experiments", "general"] {
        assert!(yaml.contains(&format!("- name: \"{room}\"")), "{room} missing from {yaml}");
    }
    assert!(!yaml.contains("node_modules") && !yaml.contains(".git"), "{yaml}");
    std::fs::write(project.join("mempalace.yaml"), "wing: mine\n").unwrap();
    assert!(sandbox.ok(&["init", project.to_str().unwrap(), "--yes"]).contains("kept existing"));
    assert_eq!(std::fs::read_to_string(project.join("mempalace.yaml")).unwrap(), "wing: mine\n");
}

fn export_import_is_lossless(store: Store) {
    let source = Sandbox::on(store);
    for i in 0..30 {
        source.ok(&[
            "add",
            "--wing",
            &format!("w{}", i % 3),
            "--room",
            "r",
            "--tag",
            "t",
            &format!("memory number {i}"),
        ]);
    }
    source.ok(&["identity", "set", "I am the source palace."]);
    let doomed =
        source.ok(&["add", "--wing", "w0", "--room", "r", "this drawer will be soft deleted"]).trim().to_string();
    source.ok(&["delete", &doomed, "--reason", "kept for review"]);
    let export = source.path("export.jsonl");
    source.ok(&["export", "--out", export.to_str().unwrap()]);

    let target = Sandbox::on(store);
    let summary = target.ok(&["import", export.to_str().unwrap()]);
    assert!(summary.contains("imported 32 records (0 already present)"), "{summary}");
    let again = target.ok(&["import", export.to_str().unwrap()]);
    assert!(again.contains("imported 0 records (32 already present)"), "{again}");

    let re_exported = target.ok(&["export"]);
    let original = std::fs::read_to_string(&export).unwrap();
    let body = |text: &str| text.lines().skip(1).map(str::to_string).collect::<Vec<_>>();
    assert_eq!(body(&re_exported), body(&original));
    assert_eq!(target.total(), 30);
    assert_eq!(target.json(&["get", &doomed, "--json"])["status_reason"], "kept for review");
}

fn a_malformed_import_file_writes_nothing(store: Store) {
    let sandbox = Sandbox::on(store);
    sandbox.ok(&["add", "--wing", "w", "--room", "r", "the seed drawer of this test"]);
    let export = sandbox.path("export.jsonl");
    sandbox.ok(&["export", "--out", export.to_str().unwrap()]);
    let mut lines: Vec<String> = std::fs::read_to_string(&export).unwrap().lines().map(str::to_string).collect();
    let good: Value = serde_json::from_str(&lines[1]).unwrap();
    // A valid new drawer first, then a truncated line: nothing may be written.
    let mut valid = good.clone();
    valid["id"] = Value::from("drawer_w_r_fresh");
    valid["content"] = Value::from("another drawer text");
    valid["content_hash"] = Value::from(sha256_local("another drawer text"));
    lines.push(valid.to_string());
    lines.push("{\"type\":\"drawer\",\"workspace_id\":".to_string());
    let broken = sandbox.path("broken.jsonl");
    std::fs::write(&broken, lines.join("\n")).unwrap();
    let output = sandbox.run(&["import", broken.to_str().unwrap()]);
    assert_eq!(code(&output), 2, "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("line 4"), "{}", text(&output.stderr));
    assert_eq!(sandbox.total(), 1);
    assert_eq!(code(&sandbox.run(&["get", "drawer_w_r_fresh"])), 3);

    let not_export = sandbox.path("plain.jsonl");
    std::fs::write(&not_export, "{\"hello\": 1}\n").unwrap();
    assert_eq!(code(&sandbox.run(&["import", not_export.to_str().unwrap()])), 2);
    assert_eq!(code(&sandbox.run(&["import", sandbox.path("absent.jsonl").to_str().unwrap()])), 3);
}

fn bad_input_gets_clear_errors_and_writes_nothing(store: Store) {
    let sandbox = Sandbox::on(store);
    sandbox.ok(&["init"]);

    let empty = sandbox.run(&["add", "--wing", "w", "--room", "r", "   "]);
    assert_eq!(code(&empty), 2);
    assert!(text(&empty.stderr).contains("drawer text is empty"), "{}", text(&empty.stderr));

    // Raw text is one drawer, so the drawer limit applies; other text is chunked.
    let long_raw = sandbox.run(&["add", "--raw", "--wing", "w", "--room", "r", &"a".repeat(10_001)]);
    assert_eq!(code(&long_raw), 2);
    assert!(text(&long_raw.stderr).contains("10001 characters; the limit is 10000"), "{}", text(&long_raw.stderr));
    let huge = sandbox.run_with_stdin(&["add", "--wing", "w", "--room", "r", "-"], "word ".repeat(200_001).as_bytes());
    assert_eq!(code(&huge), 2);
    assert!(text(&huge.stderr).contains("the limit is 1000000"), "{}", text(&huge.stderr));
    let noise = sandbox.run(&["add", "--wing", "w", "--room", "r", "thanks!"]);
    assert_eq!(code(&noise), 2);
    assert!(text(&noise.stderr).contains("looks like chat noise") && text(&noise.stderr).contains("--raw"));

    let binary = sandbox.run_with_stdin(&["add", "--wing", "w", "--room", "r", "-"], b"ok \xff\xfe not utf-8");
    assert_eq!(code(&binary), 2);
    assert!(text(&binary.stderr).contains("not valid UTF-8 (first bad byte at offset 3)"), "{}", text(&binary.stderr));

    for wing in ["a/b", "../up", "semi;colon", "-dash", "tab\there", ""] {
        let output = sandbox.run(&["add", "--wing", wing, "--room", "r", "a perfectly fine memory text"]);
        assert_eq!(code(&output), 2, "wing {wing:?}");
        assert!(text(&output.stderr).contains("wing"), "{}", text(&output.stderr));
    }
    let bad_type =
        sandbox.run(&["add", "--wing", "w", "--room", "r", "--type", "idea", "a perfectly fine memory text"]);
    assert_eq!(code(&bad_type), 2);
    assert!(text(&bad_type.stderr).contains("possible values: decision"), "{}", text(&bad_type.stderr));
    let bad_importance =
        sandbox.run(&["add", "--wing", "w", "--room", "r", "--importance", "9", "a perfectly fine memory text"]);
    assert!(text(&bad_importance.stderr).contains("importance must be between 0 and 5"));

    assert_eq!(sandbox.total(), 0);
    let doctor = sandbox.json(&["doctor", "--json"]);
    assert_eq!(doctor["healthy"], true);
    assert_eq!(doctor["drawers_before"], 0);
}

#[test]
fn foreign_palace_files_are_refused_untouched() {
    let sandbox = Sandbox::new();
    let garbage = sandbox.path("garbage.db");
    std::fs::write(&garbage, b"definitely not sqlite, just text").unwrap();
    let mut cmd = sandbox.cmd(&["status"]);
    cmd.arg("--palace").arg(&garbage);
    let output = cmd.output().unwrap();
    assert_eq!(code(&output), 5);
    assert!(text(&output.stderr).contains("not a mempalace palace (it is not an SQLite database)"));
    let mut cmd = sandbox.cmd(&["add", "--wing", "w", "--room", "r", "x"]);
    cmd.arg("--palace").arg(&garbage);
    assert_eq!(code(&cmd.output().unwrap()), 5);
    assert_eq!(std::fs::read(&garbage).unwrap(), b"definitely not sqlite, just text");

    // A Python MemPalace palace directory is recognised, not overwritten.
    let python = sandbox.path("python-palace");
    std::fs::create_dir_all(&python).unwrap();
    std::fs::write(python.join("chroma.sqlite3"), b"").unwrap();
    let mut cmd = sandbox.cmd(&["add", "--wing", "w", "--room", "r", "x"]);
    cmd.arg("--palace").arg(&python);
    let output = cmd.output().unwrap();
    assert_eq!(code(&output), 2);
    assert!(text(&output.stderr).contains("Python MemPalace"), "{}", text(&output.stderr));
    assert!(!python.join("palace.db").exists());

    // An SQLite file of another program.
    let other = sandbox.path("other.sqlite");
    let conn = rusqlite::Connection::open(&other).unwrap();
    conn.execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine');").unwrap();
    drop(conn);
    let mut cmd = sandbox.cmd(&["add", "--wing", "w", "--room", "r", "x"]);
    cmd.arg("--palace").arg(&other);
    let output = cmd.output().unwrap();
    assert_eq!(code(&output), 5);
    assert!(text(&output.stderr).contains("tables: notes"), "{}", text(&output.stderr));

    // A missing palace for a read command.
    let output = sandbox.run(&["status"]);
    assert_eq!(code(&output), 3);
    assert!(text(&output.stderr).contains("mempalace init"));
    assert!(!sandbox.palace().exists(), "a read command creates nothing");
}

#[test]
fn config_file_and_environment_choose_the_palace() {
    let sandbox = Sandbox::new();
    let dot = sandbox.home().join(".mempalace");
    std::fs::create_dir_all(&dot).unwrap();
    let configured = sandbox.path("configured");
    std::fs::write(dot.join("config.json"), format!("{{\"palace_path\": {:?}}}", configured.to_str().unwrap()))
        .unwrap();
    let run = |envs: &[(&str, &Path)], args: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mempalace"));
        command.env_clear().env("HOME", sandbox.home()).args(args).stdin(Stdio::null());
        for (key, value) in envs {
            command.env(key, value);
        }
        command.output().unwrap()
    };
    assert!(
        run(&[], &["add", "--wing", "w", "--room", "r", "this drawer lands in the configured palace"]).status.success()
    );
    assert!(configured.join("palace.db").exists());
    let env_palace = sandbox.path("from-env");
    assert!(run(&[("MEMPALACE_PALACE_PATH", &env_palace)], &["init"]).status.success());
    assert!(env_palace.join("palace.db").exists());

    std::fs::write(dot.join("config.json"), "{\"palace_pth\": \"/x\"}").unwrap();
    let output = run(&[], &["status"]);
    // A configuration mistake is the user's to fix: exit 2, not an internal error.
    assert_eq!(code(&output), 2);
    assert!(text(&output.stderr).contains("unknown key \"palace_pth\""), "{}", text(&output.stderr));
    assert!(!text(&output.stderr).contains("internal error"), "{}", text(&output.stderr));

    // An unreadable log filter stops startup before anything runs, naming the value and a fix.
    std::fs::remove_file(dot.join("config.json")).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_mempalace"));
    command.env_clear().env("HOME", sandbox.home()).env("MEMPALACE_LOG", "mempalace=loud[");
    let output = command.args(["init"]).stdin(Stdio::null()).output().unwrap();
    assert_eq!(code(&output), 2, "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("MEMPALACE_LOG=\"mempalace=loud[\""), "{}", text(&output.stderr));
    assert!(!sandbox.home().join(".mempalace/palace/palace.db").exists(), "nothing ran");
}

/// SPEC §3, issue 2: four processes each add 500 distinct drawers while a
/// fifth reads in a loop; no process sees an error and nothing is lost.
fn concurrent_writer_processes_lose_nothing(store: Store) {
    let sandbox = Arc::new(Sandbox::on(store));
    sandbox.ok(&["init"]);
    let first =
        sandbox.ok(&["add", "--wing", "seed", "--room", "r", "the seed drawer of this test"]).trim().to_string();
    let writing = Arc::new(AtomicBool::new(true));
    let reads = Arc::new(AtomicU64::new(0));
    let reader = {
        let (sandbox, writing, reads) = (Arc::clone(&sandbox), Arc::clone(&writing), Arc::clone(&reads));
        thread::spawn(move || {
            let mut last_total = 0;
            while writing.load(Ordering::SeqCst) {
                let total = sandbox.total();
                assert!(total >= last_total, "a reader saw the count go down: {last_total} → {total}");
                last_total = total;
                sandbox.ok(&["get", &first]);
                reads.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    let writers: Vec<_> = (0..4)
        .map(|writer| {
            let sandbox = Arc::clone(&sandbox);
            thread::spawn(move || {
                for i in 0..500 {
                    let output = sandbox.run(&[
                        "add",
                        "--wing",
                        &format!("writer{writer}"),
                        "--room",
                        &format!("room{}", i % 5),
                        &format!("writer {writer} drawer {i}"),
                    ]);
                    assert!(output.status.success(), "writer {writer} add {i}: {}", text(&output.stderr));
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().expect("writer thread");
    }
    writing.store(false, Ordering::SeqCst);
    reader.join().expect("reader thread");
    assert!(reads.load(Ordering::SeqCst) > 0);
    let status = sandbox.json(&["status", "--json"]);
    assert_eq!(status["total_drawers"], 2_001);
    for writer in 0..4 {
        assert_eq!(status["wings"][format!("writer{writer}")], 500);
    }
    let doctor = sandbox.json(&["doctor", "--json", "--check-only"]);
    assert_eq!(doctor["healthy"], true, "{doctor}");
}

/// Issue 2: a writer killed with SIGKILL in the middle of a large import
/// leaves a palace that opens, passes doctor, and holds every drawer whose
/// batch had been reported committed.
fn a_killed_import_keeps_every_acknowledged_drawer(store: Store) {
    let sandbox = Sandbox::on(store);
    let export = sandbox.path("big.jsonl");
    write_big_export(&export, 40_000);

    let mut child = sandbox
        .cmd(&["import", export.to_str().unwrap()])
        .env("MEMPALACE_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn import");
    let stderr = BufReader::new(child.stderr.take().expect("stderr"));
    let mut acknowledged = 0_u64;
    let started = Instant::now();
    for line in stderr.lines() {
        let line = line.expect("stderr line");
        if let Some(position) = line.find("records_committed=") {
            let digits: String = line[position + 18..].chars().take_while(char::is_ascii_digit).collect();
            acknowledged = digits.parse().expect("a count");
            if acknowledged >= 5_000 {
                break;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(120), "import too slow to test");
    }
    child.kill().expect("SIGKILL the importer");
    let status = child.wait().expect("reap");
    assert!(!status.success(), "the import was killed before it finished");
    assert!(acknowledged >= 5_000);

    let doctor = sandbox.json(&["doctor", "--json", "--check-only"]);
    assert_eq!(doctor["healthy"], true, "{doctor}");
    let total = sandbox.total();
    assert!(total >= acknowledged, "{total} drawers stored, {acknowledged} acknowledged");
    assert!(total < 40_000, "the import was interrupted");
    // Every acknowledged drawer, by id (the file's order is the commit order).
    for index in (0..acknowledged).step_by(997).chain([acknowledged - 1]) {
        let id = format!("drawer_bulk_r_{index:024}");
        let output = sandbox.run(&["get", &id]);
        assert!(output.status.success(), "acknowledged drawer {id} is missing");
    }
    // Running the import again completes it.
    let summary = sandbox.ok(&["import", export.to_str().unwrap()]);
    assert!(summary.contains(&format!("({total} already present)")), "{summary}");
    assert_eq!(sandbox.total(), 40_000);
}

/// Writes an export of `n` drawers with predictable ids.
fn write_big_export(path: &Path, n: u64) {
    let seed = Sandbox::new();
    seed.ok(&["add", "--wing", "bulk", "--room", "r", "the template drawer for the bulk export"]);
    let exported = seed.ok(&["export"]);
    let mut lines = exported.lines();
    let header = lines.next().expect("header").to_string();
    let template: Value = serde_json::from_str(lines.next().expect("drawer")).expect("json");
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).expect("create export"));
    writeln!(file, "{header}").unwrap();
    for index in 0..n {
        let content = format!("bulk drawer number {index} with some filler text to make the row realistic");
        let mut drawer = template.clone();
        drawer["id"] = Value::from(format!("drawer_bulk_r_{index:024}"));
        drawer["content"] = Value::from(content.clone());
        drawer["content_hash"] = Value::from(sha256_local(&content));
        writeln!(file, "{drawer}").unwrap();
    }
    file.flush().unwrap();
}

/// SHA-256 in hex, for building export lines by hand.
fn sha256_local(text: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

fn without_a_model_drawers_are_filed_without_vectors_after_one_warning(store: Store) {
    let sandbox = Sandbox::on(store);
    let output = sandbox.run(&["add", "--wing", "w", "--room", "r", "there is no embedding model here"]);
    assert!(output.status.success());
    let stderr = text(&output.stderr);
    assert_eq!(stderr.matches("mempalace model fetch").count(), 1, "one clear warning: {stderr}");
    let id = text(&output.stdout).trim().to_string();
    assert_eq!(sandbox.json(&["get", &id, "--json"])["embedding"], Value::Null);
    let status = sandbox.json(&["model", "status", "--json"]);
    assert_eq!(status["minilm"]["present"], false);
    assert_eq!(sandbox.run(&["reembed"]).status.code(), Some(8), "reembed needs a model");
}

fn vectors_are_stored_and_a_palace_moves_to_another_model(store: Store) {
    let sandbox = Sandbox::on(store);
    let models = model_dir();
    let models = models.to_str().unwrap();
    let mut ids = Vec::new();
    for text in
        ["We chose PostgreSQL for the backend.", "The gripper works best at 12.5 N.", "Alice prefers dark mode."]
    {
        ids.push(sandbox.ok(&["--model-dir", models, "add", "--wing", "w", "--room", "r", text]).trim().to_string());
    }
    let drawer = sandbox.json(&["get", &ids[0], "--json"]);
    assert_eq!(drawer["embedding"]["model"], "all-MiniLM-L6-v2");
    assert_eq!(drawer["embedding"]["dim"], 384);

    let moved = sandbox.json(&["--model-dir", models, "--embedder", "static", "reembed", "--json"]);
    assert_eq!(moved["embedded"], 3);
    assert_eq!(moved["remaining"], 0);
    assert_eq!(moved["model"], "all-MiniLM-L6-v2-static-d256");
    assert_eq!(sandbox.json(&["get", &ids[1], "--json"])["embedding"]["dim"], 256);
    let again = sandbox.json(&["--model-dir", models, "--embedder", "static", "reembed", "--json"]);
    assert_eq!(again["embedded"], 0, "nothing left to do");
    let status = sandbox.json(&["--model-dir", models, "model", "status", "--json"]);
    assert_eq!(status["minilm"]["present"], true);
    assert_eq!(status["static"]["model_id"], "all-MiniLM-L6-v2-static-d256");
}

/// `model fetch` of a model already in place writes the layouts of its
/// weights that the processes hooks start map (the transposed f32 weights,
/// and the f16 panels where the CPU has AVX-512; nothing else is left in
/// the folder), and such a process (`add` of one short text) then files
/// the vector f32 gives, under MiniLM's model id.
#[test]
fn model_fetch_keeps_the_weight_layouts_hooks_map() {
    let sandbox = Sandbox::new();
    let models = sandbox.path("models");
    let folder = models.join("all-MiniLM-L6-v2");
    std::fs::create_dir_all(&folder).unwrap();
    for name in ["model.safetensors", "tokenizer.json", "config.json"] {
        std::os::unix::fs::symlink(model_dir().join("all-MiniLM-L6-v2").join(name), folder.join(name)).unwrap();
    }
    let models = models.to_str().unwrap();
    let fetched = sandbox.ok(&["--model-dir", models, "model", "fetch"]);
    assert!(fetched.contains("already in"), "{fetched}");
    let mut kept: Vec<String> = std::fs::read_dir(&folder)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with('.'))
        .collect();
    kept.sort();
    let avx512 = mempalace_embed::kernels::has_avx512();
    assert_eq!(kept.len(), if avx512 { 2 } else { 1 }, "{kept:?}");
    assert!(kept.iter().any(|name| name.starts_with(".transposed-f32-") && name.ends_with(".safetensors")));
    assert_eq!(kept.iter().any(|name| name.starts_with(".panels-f16-") && name.ends_with(".safetensors")), avx512);

    let text = "We chose PostgreSQL for the backend because of transactions.";
    let id = sandbox.ok(&["--model-dir", models, "add", "--wing", "w", "--room", "r", text]).trim().to_string();
    let drawer = sandbox.json(&["get", &id, "--json"]);
    assert_eq!(drawer["embedding"]["model"], "all-MiniLM-L6-v2");
    let export = sandbox.path("export.jsonl");
    sandbox.ok(&["export", "--out", export.to_str().unwrap()]);
    let filed: Vec<f32> = std::fs::read_to_string(&export)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|record| record["id"] == id.as_str())
        .and_then(|record| record["embedding"]["base64"].as_str().map(str::to_string))
        .map(|encoded| {
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).unwrap();
            bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
        })
        .expect("the export carries the drawer's vector");
    let f32_model = mempalace_embed::minilm::MiniLm::load_with(
        &model_dir().join("all-MiniLM-L6-v2"),
        mempalace_embed::minilm::Precision::F32,
    )
    .unwrap();
    use mempalace_embed::Embedder as _;
    let exact = f32_model.embed_one(text).unwrap();
    let similarity = mempalace_core::vector::cosine(&filed, &exact);
    assert!(similarity >= 0.9999, "cosine {similarity} to the f32 vector");
}

/// Issue 16: the default MiniLM (bf16 on the AMX unit where the CPU has
/// one) and `minilm-f32` give the same vectors under one model id, so a
/// palace filed by the f32 path is searched by the default one by meaning,
/// and moving it to the default has nothing to re-embed.
fn a_palace_filed_with_f32_minilm_is_searched_by_the_default_one(store: Store) {
    let sandbox = Sandbox::on(store);
    let models = model_dir();
    let models = models.to_str().unwrap();
    let texts = [
        ("gripper", "The gripper works best at 12.5 N after the sensor recalibration."),
        ("codes", "Error code E4471 appears when the firmware overheats."),
        ("garden", "The tomatoes in the garden need water every morning."),
        ("db", "We chose PostgreSQL for the backend because of its JSON support."),
    ];
    for (room, text) in texts {
        sandbox.ok(&["--model-dir", models, "--embedder", "minilm-f32", "add", "--wing", "w", "--room", room, text]);
    }
    // Queries that share no word with their drawer: only the vectors find it.
    for (query, room) in [
        ("what force for the robot hand?", "gripper"),
        ("which plants need watering", "garden"),
        ("what database did we pick", "db"),
    ] {
        let found = sandbox.json(&["--model-dir", models, "search", query, "--json"]);
        assert_eq!(found["mode"], "hybrid", "{found}");
        assert_eq!(found["results"][0]["room"], room, "{query}: {found}");
    }
    let moved = sandbox.json(&["--model-dir", models, "reembed", "--json"]);
    assert_eq!((moved["model"].as_str(), moved["embedded"].as_u64()), (Some("all-MiniLM-L6-v2"), Some(0)), "{moved}");
}

fn search_wake_up_recall_and_inject_from_the_command_line(store: Store) {
    let sandbox = Sandbox::on(store);
    let models = model_dir();
    let models = models.to_str().unwrap();
    let with_model = |args: &[&str]| {
        let mut all = vec!["--model-dir", models];
        all.extend_from_slice(args);
        sandbox.ok(&all)
    };
    with_model(&["identity", "set", "I am Atlas, the lab assistant."]);
    with_model(&[
        "add",
        "--wing",
        "lab",
        "--room",
        "gripper",
        "--importance",
        "5",
        "The gripper works best at 12.5 N after the sensor recalibration.",
    ]);
    with_model(&["add", "--wing", "lab", "--room", "codes", "Error code E4471 appears when the firmware overheats."]);
    with_model(&["add", "--wing", "home", "--room", "garden", "The tomatoes in the garden need water every morning."]);

    let json: Value =
        serde_json::from_str(&with_model(&["search", "what force for the robot hand?", "--json"])).unwrap();
    assert_eq!(json["mode"], "hybrid");
    assert_eq!(json["results"][0]["room"], "gripper", "{json}");
    // Scores are absolute evidence in (0, 1), comparable across queries, never forced to 1.0.
    let score = json["results"][0]["score"].as_f64().unwrap();
    assert!(score > 0.0 && score < 1.0, "{json}");
    for key in ["id", "wing", "room", "score", "text", "source_file", "filed_at"] {
        assert!(json["results"][0].get(key).is_some(), "{key} missing: {json}");
    }
    let filtered: Value = serde_json::from_str(&with_model(&["search", "water", "--wing", "lab", "--json"])).unwrap();
    assert!(filtered["results"].as_array().unwrap().iter().all(|r| r["wing"] == "lab"));
    let text = with_model(&["search", "E4471"]);
    assert!(text.contains("Results for: \"E4471\"") && text.contains("[1] lab / codes"), "{text}");
    let lexical: Value =
        serde_json::from_str(&sandbox.ok(&["--embedder", "none", "search", "tomatoes", "--json"])).unwrap();
    assert_eq!(lexical["mode"], "lexical");
    assert_eq!(lexical["results"][0]["room"], "garden");

    let wake = sandbox.ok(&["wake-up"]);
    assert!(wake.contains("I am Atlas") && wake.contains("[gripper]"), "{wake}");
    let recall = sandbox.ok(&["recall", "--wing", "home"]);
    assert!(recall.contains("tomatoes") && !recall.contains("gripper"), "{recall}");
    let inject: Value =
        serde_json::from_str(&with_model(&["inject", "How much force should the gripper use?", "--json"])).unwrap();
    assert!(inject["section"].as_str().unwrap().contains("12.5 N"), "{inject}");
    let trivial: Value = serde_json::from_str(&with_model(&["inject", "thanks!", "--json"])).unwrap();
    assert_eq!(trivial["trivial"], true);
    assert_eq!(trivial["section"], Value::Null);
}

/// Issue 5 from the command line: facts with validity windows, as-of
/// queries, ending, the timeline, statistics, facts extracted from added
/// drawers, and the palace graph with explicit tunnels; bad input fails
/// with the documented exit codes and writes nothing.
fn knowledge_graph_and_palace_graph_from_the_command_line(store: Store) {
    let sandbox = Sandbox::on(store);
    sandbox.ok(&["init"]);
    let added = sandbox.json(&[
        "kg",
        "add",
        "Crawbl Backend",
        "uses",
        "MySQL",
        "--valid-from",
        "2024-06-01",
        "--valid-to",
        "2025-01-14",
        "--json",
    ]);
    assert_eq!(added["success"], true);
    assert_eq!(added["existing"], false);
    let pg = sandbox.ok(&["kg", "add", "Crawbl Backend", "uses", "PostgreSQL", "--valid-from", "2025-01-15"]);
    let again = sandbox.run(&["kg", "add", "crawbl backend", "USES", "postgresql"]);
    assert!(again.status.success());
    assert_eq!(text(&again.stdout), pg, "an identical current fact keeps its id");
    assert!(text(&again.stderr).contains("already known"));

    let at = |date: &str| {
        let result = sandbox.json(&["kg", "query", "Crawbl Backend", "--as-of", date, "--direction", "out", "--json"]);
        result["facts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["object"].as_str().unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(at("2024-09-01"), vec!["MySQL"]);
    assert_eq!(at("2025-01-14"), vec!["MySQL"]);
    assert_eq!(at("2025-02-01"), vec!["PostgreSQL"]);
    assert!(at("2024-01-01").is_empty());
    let query = sandbox.json(&["kg", "query", "PostgreSQL", "--json"]);
    assert_eq!(query["count"], 1);
    let fact = &query["facts"][0];
    assert_eq!((fact["direction"].as_str(), fact["subject"].as_str()), (Some("incoming"), Some("Crawbl Backend")));
    assert_eq!(fact["valid_from"], "2025-01-15T00:00:00.000000Z");
    assert_eq!(fact["current"], true);

    sandbox.ok(&["kg", "invalidate", "Crawbl Backend", "uses", "PostgreSQL", "--ended", "2025-06-30"]);
    let none_left = sandbox.run(&["kg", "invalidate", "Crawbl Backend", "uses", "PostgreSQL"]);
    assert_eq!(code(&none_left), 3);
    assert!(text(&none_left.stderr).contains("current fact not found"), "{}", text(&none_left.stderr));
    let timeline = sandbox.json(&["kg", "timeline", "Crawbl Backend", "--json"]);
    let windows: Vec<(String, Value)> = timeline["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["object"].as_str().unwrap().to_string(), f["valid_to"].clone()))
        .collect();
    assert_eq!(
        windows,
        vec![
            ("MySQL".to_string(), Value::from("2025-01-14T23:59:59.999999Z")),
            ("PostgreSQL".to_string(), Value::from("2025-06-30T23:59:59.999999Z")),
        ]
    );
    assert!(sandbox.ok(&["kg", "timeline", "Crawbl Backend"]).contains("Crawbl Backend → uses → MySQL"));

    // Bad input: an inverted window, an unknown direction, a bad date.
    for (args, needle) in [
        (
            vec!["kg", "add", "A", "uses", "B", "--valid-from", "2025-02-01", "--valid-to", "2025-01-01"],
            "before valid_from",
        ),
        (vec!["kg", "query", "A", "--direction", "sideways"], "use out, in or both"),
        (vec!["kg", "add", "A", "uses", "B", "--valid-from", "last tuesday"], "--valid-from"),
    ] {
        let output = sandbox.run(&args);
        assert_eq!(code(&output), 2, "{args:?}");
        assert!(text(&output.stderr).contains(needle), "{args:?}: {}", text(&output.stderr));
    }

    // Extraction from added drawers, cited by the facts.
    let drawer = sandbox
        .ok(&["add", "--wing", "crawbl", "--room", "team", "Alice owns the Auth Module and prefers dark mode."])
        .trim()
        .to_string();
    let alice = sandbox.json(&["kg", "query", "Alice", "--json"]);
    assert_eq!(alice["count"], 2);
    assert!(alice["facts"].as_array().unwrap().iter().all(|f| f["source_drawer_id"] == drawer.as_str()));
    let stats = sandbox.json(&["kg", "stats", "--json"]);
    assert_eq!(
        (stats["triples"].as_u64(), stats["current_facts"].as_u64(), stats["expired_facts"].as_u64()),
        (Some(4), Some(2), Some(2))
    );
    assert_eq!(stats["relationship_types"], serde_json::json!(["uses", "owns", "prefers"]));
    let wrong = alice["facts"].as_array().unwrap().iter().find(|f| f["predicate"] == "prefers").unwrap()["id"]
        .as_str()
        .unwrap()
        .to_string();
    sandbox.ok(&["kg", "delete", &wrong]);
    assert_eq!(code(&sandbox.run(&["kg", "delete", &wrong])), 3);

    // The palace graph: crawbl/team and home/team make `team` a tunnel room.
    sandbox.ok(&[
        "add",
        "--raw",
        "--wing",
        "home",
        "--room",
        "team",
        "--hall",
        "hall_events",
        "Weekend football team.",
    ]);
    sandbox.ok(&["add", "--raw", "--wing", "home", "--room", "garden", "Tomatoes need staking."]);
    let tunnels = sandbox.json(&["graph", "tunnels", "--json"]);
    assert_eq!(tunnels.as_array().unwrap().len(), 1);
    assert_eq!(tunnels[0]["room"], "team");
    assert_eq!(tunnels[0]["wings"], serde_json::json!(["crawbl", "home"]));
    assert!(
        sandbox
            .json(&["graph", "tunnels", "--wing-a", "crawbl", "--wing-b", "lab", "--json"])
            .as_array()
            .unwrap()
            .is_empty()
    );
    let walk = sandbox.json(&["graph", "traverse", "garden", "--json"]);
    let rooms: Vec<(&str, u64)> =
        walk.as_array().unwrap().iter().map(|r| (r["room"].as_str().unwrap(), r["hop"].as_u64().unwrap())).collect();
    assert_eq!(rooms, vec![("garden", 0), ("team", 1)]);
    assert_eq!(walk[1]["connected_via"], serde_json::json!(["home"]));
    let stats = sandbox.json(&["graph", "stats", "--json"]);
    assert_eq!((stats["total_rooms"].as_u64(), stats["tunnel_rooms"].as_u64()), (Some(2), Some(1)));
    assert_eq!(stats["rooms_per_wing"], serde_json::json!({"home": 2, "crawbl": 1}));
    let missing = sandbox.run(&["graph", "traverse", "gardn"]);
    assert_eq!(code(&missing), 3);
    assert!(text(&missing.stderr).contains("room not found: gardn"), "{}", text(&missing.stderr));

    let id = sandbox.ok(&["graph", "tunnel", "create", "home/garden", "crawbl/team", "--label", "weekend planning"]);
    let again = sandbox.run(&["graph", "tunnel", "create", "crawbl/team", "home/garden"]);
    assert_eq!(text(&again.stdout), id, "tunnel ids are symmetric");
    let listed = sandbox.json(&["graph", "tunnel", "list", "--json"]);
    assert_eq!(listed[0]["label"], "weekend planning");
    let followed = sandbox.json(&["graph", "tunnel", "follow", "crawbl/team", "--json"]);
    assert_eq!((followed[0]["wing"].as_str(), followed[0]["room"].as_str()), (Some("home"), Some("garden")));
    assert_eq!(code(&sandbox.run(&["graph", "tunnel", "create", "nowhere", "home/garden"])), 2);
    sandbox.ok(&["graph", "tunnel", "delete", id.trim()]);
    assert!(sandbox.json(&["graph", "tunnel", "list", "--json"]).as_array().unwrap().is_empty());

    // The workspace limits come from config or the environment and stop
    // with a message that says how to raise them.
    let stats = sandbox.json(&["kg", "stats", "--json"]);
    let entities = stats["entities"].as_u64().unwrap();
    let limited = sandbox
        .cmd(&["kg", "add", "Brand New Thing", "uses", "Another New Thing"])
        .env("MEMPALACE_MAX_ENTITIES", (entities + 1).to_string())
        .output()
        .unwrap();
    assert_eq!(limited.status.code(), Some(2), "{}", text(&limited.stderr));
    assert!(text(&limited.stderr).contains("MEMPALACE_MAX_ENTITIES"), "{}", text(&limited.stderr));
    assert_eq!(sandbox.json(&["kg", "stats", "--json"])["entities"], entities, "nothing half-written");
}

/// Issue 15: output cut short by its reader (`mempalace search --json |
/// head -c1`) is a normal end: exit 0 and no "internal error".
fn a_closed_stdout_is_a_normal_end(store: Store) {
    let sandbox = Sandbox::on(store);
    let texts: Vec<String> =
        (0..60).map(|i| format!("Closed pipe note {i}: {}", "long filler text ".repeat(40))).collect();
    for text in &texts {
        assert!(sandbox.run(&["add", "--raw", "--wing", "w", "--room", "r", text]).status.success());
    }
    for args in [
        &["search", "closed pipe note", "--json", "--results", "100"][..],
        &["export"][..],
        &["status", "--json"][..],
        &["recall", "--wing", "w"][..],
    ] {
        let mut child = sandbox
            .cmd(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start");
        drop(child.stdout.take()); // the reader goes away at once
        let output = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
        assert!(!stderr.contains("internal error") && !stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
}

/// Issue 15: `hallways` lists the entity pairs drawers of a wing mention
/// together (two drawers or more), per wing, as text and JSON; `--rebuild`
/// recounts per wing; `--prune-spellings` finds pairs of two spellings of
/// one name (as palaces written by the Python MemPalace carry) and hides
/// them only with `--yes`.
fn hallways_from_the_command_line(store: Store) {
    let sandbox = Sandbox::on(store);
    sandbox.ok(&["init"]);
    assert!(sandbox.ok(&["hallways"]).contains("No hallways yet"));
    for (room, text) in [
        ("arm", "Alice Moreau calibrated the Kestrel arm before the demo."),
        ("arm", "Alice Moreau and the Kestrel arm team met on Tuesday about torque limits."),
        ("logs", "Alice Moreau read the Kestrel logs after the outage."),
        ("arm", "The DataHub export and the Datahub import disagree on row counts."),
        ("arm", "Yesterday the Datahub dashboard and the DataHub API both timed out."),
    ] {
        sandbox.ok(&["add", "--wing", "lab", "--room", room, text]);
    }
    sandbox.ok(&["add", "--wing", "home", "--room", "garden", "Alice Moreau planted tomatoes with Kestrel."]);

    let listed = sandbox.json(&["hallways", "--json"]);
    assert_eq!(listed["total"], 1, "{listed}");
    let hallway = &listed["hallways"][0];
    assert_eq!(
        (hallway["wing"].as_str(), hallway["entity_a"].as_str(), hallway["entity_b"].as_str()),
        (Some("lab"), Some("Alice Moreau"), Some("Kestrel"))
    );
    assert_eq!(hallway["co_occurrence_count"], 3, "the home wing's one drawer is not counted");
    assert_eq!(hallway["rooms"], serde_json::json!(["arm", "logs"]));
    assert!(
        sandbox.ok(&["hallways"]).contains("Alice Moreau ↔ Kestrel (co-occur in 3 drawers across 2 rooms: arm, logs)")
    );
    assert_eq!(sandbox.json(&["hallways", "--wing", "home", "--json"])["total"], 0);
    let rebuilt = sandbox.json(&["hallways", "--rebuild", "--json"]);
    assert_eq!(rebuilt["wings"], serde_json::json!({"lab": 1}));

    // A palace whose drawers carry two spellings of one name (what an
    // import from the Python MemPalace brings along).
    let export = sandbox.ok(&["export"]);
    let edited: Vec<String> = export
        .lines()
        .map(|line| {
            let mut record: Value = serde_json::from_str(line).unwrap();
            if record["type"] == "drawer" && record["content"].as_str().unwrap().contains("Datahub") {
                record["entities"] = serde_json::json!(["DataHub", "Datahub"]);
            }
            record.to_string()
        })
        .collect();
    let other = Sandbox::on(store);
    other.ok(&["init"]);
    let file = other.path("edited.jsonl");
    std::fs::write(&file, edited.join("\n") + "\n").unwrap();
    other.ok(&["import", file.to_str().unwrap()]);
    assert_eq!(other.json(&["hallways", "--json"])["total"], 2);
    let dry = other.json(&["hallways", "--prune-spellings", "--json"]);
    assert_eq!(dry["spelling_artifacts"].as_array().map(Vec::len), Some(1), "{dry}");
    assert_eq!(dry["removed"], 0);
    assert!(other.ok(&["hallways", "--prune-spellings"]).contains("Re-run with --yes"));
    assert_eq!(other.json(&["hallways", "--json"])["total"], 2, "a dry run hides nothing");
    let pruned = other.json(&["hallways", "--prune-spellings", "--yes", "--json"]);
    assert_eq!(pruned["removed"], 1);
    let left = other.json(&["hallways", "--json"]);
    assert_eq!(left["total"], 1);
    assert_eq!(left["hallways"][0]["entity_b"], "Kestrel");
}

on_both!(
    a_closed_stdout_is_a_normal_end,
    hallways_from_the_command_line,
    init_add_get_status_round_trip,
    soft_and_hard_delete,
    status_shows_the_cold_path,
    identity_set_and_show,
    init_with_a_project_dir_writes_mempalace_yaml_once,
    export_import_is_lossless,
    a_malformed_import_file_writes_nothing,
    bad_input_gets_clear_errors_and_writes_nothing,
    concurrent_writer_processes_lose_nothing,
    a_killed_import_keeps_every_acknowledged_drawer,
    without_a_model_drawers_are_filed_without_vectors_after_one_warning,
    vectors_are_stored_and_a_palace_moves_to_another_model,
    a_palace_filed_with_f32_minilm_is_searched_by_the_default_one,
    search_wake_up_recall_and_inject_from_the_command_line,
    knowledge_graph_and_palace_graph_from_the_command_line,
);
