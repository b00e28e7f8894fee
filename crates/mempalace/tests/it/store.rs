//! The binary on both stores (issue 9): background workers in separate
//! processes processing every raw drawer exactly once and running a
//! periodic job exactly once per tick, `migrate-store` copying a palace to
//! PostgreSQL and back without losing a byte, and the everyday commands
//! against PostgreSQL.
//!
//! PostgreSQL comes from `MEMPALACE_TEST_DATABASE_URL` (scripts/test.sh
//! starts a throwaway cluster): these tests fail without it, unless
//! `MEMPALACE_TEST_POSTGRES=skip` asks to skip them.

use std::collections::HashSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

use crate::harness::{Sandbox, Store, on_both};

/// A palace on `store` with the static embedding model.
fn place(store: Store) -> Sandbox {
    Sandbox::on(store).with_static_model()
}

/// A PostgreSQL palace; `None` when PostgreSQL tests are deliberately skipped.
fn postgres() -> Option<Sandbox> {
    mempalace_postgres::testing::server().map(|_| place(Store::Postgres))
}

/// A Claude Code transcript of `exchanges` exchanges (each a raw drawer when mined).
fn transcript(dir: &Path, exchanges: usize) -> PathBuf {
    let path = dir.join("work-session.jsonl");
    let mut out = std::fs::File::create(&path).unwrap();
    let mut parent: Option<String> = None;
    for n in 0..exchanges {
        for (kind, text) in [
            ("user", format!("Question {n}: should service {n} move from MongoDB to PostgreSQL this quarter?")),
            ("assistant", format!("Answer {n}: yes, the Billing Service switched from MongoDB to PostgreSQL.")),
        ] {
            let uuid = format!("{kind}-{n}");
            let content = if kind == "user" {
                serde_json::json!(text)
            } else {
                serde_json::json!([{"type": "text", "text": text}])
            };
            let line = serde_json::json!({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "work",
                "cwd": "/srv/platform", "timestamp": "2025-05-01T09:00:00Z",
                "message": {"id": format!("m-{uuid}"), "role": kind, "content": content}});
            writeln!(out, "{line}").unwrap();
            parent = Some(uuid);
        }
    }
    path
}

/// Three worker processes at once: every raw drawer processed by exactly
/// one of them; the daily job run by exactly one.
fn workers_share_the_backlog(store: Store) {
    let place = place(store);
    let file = transcript(place.dir(), 240);
    let mined = place.json(&["mine", file.to_str().unwrap(), "--mode", "convos", "--json"]);
    let total = mined["drawers_added"].as_u64().unwrap();
    assert_eq!(total, 241, "a header and 240 exchanges, all raw");
    // Maintenance runs once a UTC day: a run across midnight may rightly
    // run it twice, so its checks hold only when the day did not change.
    let utc_day = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() / 86_400;
    let first_day = utc_day();
    let workers: Vec<_> = (0..3)
        .map(|n| {
            place
                .cmd(&["work", "--once", "--jobs", "process,maintain", "--json", "--worker", &format!("w{n}")])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn a worker")
        })
        .collect();
    let mut seen: HashSet<String> = HashSet::new();
    let mut maintained = 0;
    for worker in workers {
        let output = worker.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let summary: Value = serde_json::from_slice(&output.stdout).unwrap();
        for run in summary["runs"].as_array().unwrap() {
            match run["job"].as_str().unwrap() {
                "process" => {
                    assert_eq!(run["report"]["lost"], 0);
                    for id in run["report"]["processed"].as_array().unwrap() {
                        let id = id.as_str().unwrap().to_string();
                        assert!(seen.insert(id.clone()), "{id} was processed twice");
                    }
                }
                _ => maintained += usize::from(run["ran"] == true),
            }
        }
    }
    assert_eq!(seen.len() as u64, total, "every raw drawer processed once");
    let again = place.json(&["work", "--once", "--json"]);
    assert_eq!(again["runs"][0]["report"]["claimed"], 0, "nothing left: {again}");
    let maintain = again["runs"].as_array().unwrap().iter().find(|run| run["job"] == "maintain").unwrap();
    if utc_day() == first_day {
        assert_eq!(maintained, 1, "the day's maintenance ran in exactly one worker");
        assert_eq!(maintain["ran"], false, "today's tick is taken");
    }
    // Processing extracted the facts the mined drawers state.
    let facts = place.json(&["kg", "query", "PostgreSQL", "--json"]);
    assert!(!facts["facts"].as_array().unwrap().is_empty(), "{facts}");
    assert_eq!(place.json(&["doctor", "--check-only", "--json"])["healthy"], true);
}

on_both!(workers_share_the_backlog);

/// The records of an export, without its header (which names the store).
fn records(place: &Sandbox) -> Vec<String> {
    let output = place.run(&["export"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let mut lines: Vec<String> = String::from_utf8(output.stdout).unwrap().lines().skip(1).map(String::from).collect();
    lines.sort();
    lines
}

/// A palace with every kind of record goes to PostgreSQL and back
/// unchanged, and a second run copies nothing.
#[test]
fn migrate_store_round_trips_a_palace_through_postgres() {
    let Some(postgres) = postgres() else { return };
    let (source, back) = (place(Store::Sqlite), place(Store::Sqlite));
    let file = transcript(source.dir(), 20);
    source.json(&["mine", file.to_str().unwrap(), "--mode", "convos", "--json"]);
    for args in [
        vec!["add", "--wing", "lab", "--room", "gripper", "--type", "decision", "We set the gripper to 12.5 N."],
        vec!["identity", "set", "I am Atlas, the lab's assistant."],
        vec!["kg", "add", "Lab Arm", "uses", "PostgreSQL", "--valid-from", "2025-01-15"],
        vec!["kg", "add", "Lab Arm", "uses", "MongoDB", "--valid-from", "2024-01-01", "--valid-to", "2025-01-14"],
        vec!["graph", "tunnel", "create", "lab/gripper", "platform/conversations", "--label", "gripper talk"],
        vec!["artifact", "put", "--kind", "log", "--created-by", "atlas", "--content", "calibrated at 12.5 N\n"],
        vec![
            "logstream",
            "append",
            "--type",
            "status.update",
            "--stream",
            "lab",
            "--room",
            "status",
            "--from-agent",
            "atlas",
        ],
    ] {
        let output = source.run(&args);
        assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    }
    source.json(&["work", "--once", "--jobs", "process", "--json"]);
    let original = records(&source);
    assert!(original.len() > 25, "{}", original.len());

    let to_pg = source.json(&["migrate-store", "--from", &source.location(), "--to", &postgres.location(), "--json"]);
    assert_eq!(to_pg["inserted"].as_u64().unwrap() as usize, original.len(), "{to_pg}");
    assert_eq!(records(&postgres), original, "PostgreSQL holds exactly the same records");
    let again = source.json(&["migrate-store", "--from", &source.location(), "--to", &postgres.location(), "--json"]);
    assert_eq!((again["inserted"].as_u64(), again["already_present"].as_u64()), (Some(0), Some(original.len() as u64)));

    source.json(&["migrate-store", "--from", &postgres.location(), "--to", &back.location(), "--json"]);
    assert_eq!(records(&back), original, "and back to SQLite, byte for byte");
    let hits = back.json(&["search", "gripper force", "--json"]);
    assert!(hits["results"][0]["text"].as_str().unwrap().contains("12.5 N"), "{hits}");
}

/// The everyday commands against PostgreSQL, and clear errors for a
/// server that is not there or a URL that is not PostgreSQL.
#[test]
fn everyday_commands_run_on_postgres() {
    let Some(place) = postgres() else { return };
    let id = place.run(&["add", "--wing", "demo", "--room", "hello", "mempalace runs on PostgreSQL with pgvector"]);
    assert!(id.status.success(), "{}", String::from_utf8_lossy(&id.stderr));
    let id = String::from_utf8(id.stdout).unwrap().trim().to_string();
    let status = place.json(&["status", "--json"]);
    assert_eq!(status["total_drawers"], 1);
    let hits = place.json(&["search", "does it work on postgres?", "--json"]);
    assert_eq!(hits["results"][0]["id"].as_str(), Some(id.as_str()), "{hits}");
    assert_eq!(place.json(&["get", &id, "--json"])["wing"], "demo");
    assert_eq!(place.json(&["doctor", "--json"])["healthy"], true);
    let output = place.bare(&["--store", "postgres://nobody:secret@127.0.0.1:9/none", "status"]).output().unwrap();
    assert_eq!(output.status.code(), Some(8), "unavailable");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot reach the palace database") && !stderr.contains("secret"), "{stderr}");
}
