//! The coordination verbs of the real binary (`logstream`, `task`,
//! `artifact`) on both stores: a task handed over and closed with a patch
//! whose bytes survive stdin and stdout exactly, a waiting process woken by
//! another process's append, a watcher with its cursor file, every refusal
//! with its exit code (and MemPalace's `{"error"}` under `--json`), export
//! and import, and a task launched into a clean Git checkout.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{Sandbox, Store, code, on_both, text};

fn task(sandbox: &Sandbox, to: &str, base_commit: &str) -> Value {
    sandbox.json(&[
        "task",
        "create",
        "--project",
        "Demo Project!",
        "--from-agent",
        "mac-codex",
        "--to-agent",
        to,
        "--goal",
        "Fix search echo ranking",
        "--branch",
        "main",
        "--base-commit",
        base_commit,
        "--done",
        "cargo test passes",
        "--json",
    ])
}

/// task create → the worker's inbox → ack → artifact put (CRLF bytes from
/// stdin) → an event referencing it → artifact get, byte for byte.
fn a_task_goes_from_inbox_to_patch(store: Store) {
    let sandbox = Sandbox::on(store);
    let created = task(&sandbox, "win-codex", "ABCDEF1");
    let request = &created["task"];
    let correlation = request["correlation_id"].as_str().unwrap().to_string();
    assert!(created.get("success").is_none(), "the CLI prints MemPalace's {{task, handoff}}: {created}");
    assert_eq!(request["stream"], "project/demo_project");
    assert_eq!(request["base_commit"], "abcdef1");
    assert!(
        created["handoff"].as_str().unwrap().starts_with(&format!("Open MemPalace task {correlation} as win-codex."))
    );

    let text_out = sandbox.ok(&[
        "task",
        "create",
        "--project",
        "p",
        "--from-agent",
        "a",
        "--to-agent",
        "b",
        "--goal",
        "Do it.",
        "--branch",
        "main",
        "--base-commit",
        "0123abc",
        "--done",
        "Done.",
    ]);
    let lines: Vec<&str> = text_out.lines().collect();
    assert!(lines[0].starts_with("Task created: task_do_it_") && lines[1].starts_with("Event: evt_"), "{text_out}");
    assert_eq!(&lines[2..5], ["To: b", "", "Ready to paste:"]);

    let inbox = sandbox.json(&["logstream", "list", "--to-agent", "win-codex", "--json"]);
    assert_eq!(inbox["count"], 1, "{inbox}");
    assert_eq!(inbox["events"][0]["id"], request["id"]);
    let listed = sandbox.ok(&["logstream", "list", "--to-agent", "win-codex"]);
    assert!(listed.starts_with("1 event(s):\n  evt_"), "{listed}");
    assert!(listed.contains("  task.request  project/demo_project/delegation  mac-codex->win-codex [open] corr=task_"));
    assert!(
        listed.contains(" :: Goal: Fix search echo ranking  Definition of done: cargo test passes  Deliver...\n"),
        "{listed}"
    );

    let ack = sandbox.json(&[
        "logstream",
        "ack",
        request["id"].as_str().unwrap(),
        "--from-agent",
        "win-codex",
        "--status",
        "claimed",
        "--json",
    ]);
    assert_eq!((ack["type"].as_str(), ack["to_agent"].as_str()), (Some("event.ack"), Some("mac-codex")));
    assert_eq!(ack["correlation_id"].as_str(), Some(correlation.as_str()));
    assert!(
        sandbox
            .ok(&["logstream", "ack", request["id"].as_str().unwrap(), "--from-agent", "x"])
            .starts_with("Acknowledged:\n  evt_")
    );

    let patch = b"--- a/search.rs\r\n+++ b/search.rs\r\n@@ -1 +1 @@\r\n-old\r\n+new";
    let put =
        sandbox.run_with_stdin(&["artifact", "put", "--kind", "patch", "--created-by", "win-codex", "--json"], patch);
    assert!(put.status.success(), "{}", text(&put.stderr));
    let stored: Value = serde_json::from_slice(&put.stdout).unwrap();
    assert_eq!(stored["size_bytes"], patch.len());
    assert_eq!(stored["warnings"].as_array().unwrap().len(), 2, "no trailing newline, CRLF: {stored}");
    assert!(text(&put.stderr).contains("Warning: patch content does not end with a trailing newline"));
    let artifact_id = stored["id"].as_str().unwrap();

    let ready = sandbox.json(&[
        "logstream",
        "append",
        "--type",
        "patch.ready",
        "--stream",
        "project/demo_project",
        "--room",
        "patches",
        "--from-agent",
        "win-codex",
        "--to-agent",
        "mac-codex",
        "--correlation-id",
        &correlation,
        "--status",
        "ready",
        "--artifact-id",
        artifact_id,
        "--artifact-id",
        artifact_id,
        "--metadata",
        r#"{"tests": "green"}"#,
        "--json",
    ]);
    assert_eq!(ready["artifact_ids"], serde_json::json!([artifact_id]), "duplicates dropped");
    assert_eq!(ready["metadata"]["tests"], "green");

    let raw = sandbox.run(&["artifact", "get", artifact_id]);
    assert!(raw.status.success());
    assert_eq!(raw.stdout, patch, "stdout carries the exact bytes, for `| git apply`");
    let out = sandbox.path("fetched.diff");
    let wrote = sandbox.ok(&["artifact", "get", artifact_id, "--out", out.to_str().unwrap()]);
    assert!(wrote.starts_with(&format!("Wrote {} bytes to ", patch.len())), "{wrote}");
    assert_eq!(std::fs::read(&out).unwrap(), patch);
    let meta = sandbox.json(&["artifact", "get", artifact_id, "--out", out.to_str().unwrap(), "--json"]);
    assert!(meta.get("content").is_none() && meta["content_written_to"] == out.to_str().unwrap(), "{meta}");
    assert_eq!(sandbox.json(&["artifact", "get", artifact_id, "--json"])["sha256"], stored["sha256"]);

    let thread = sandbox.json(&["logstream", "list", "--correlation-id", &correlation, "--json"]);
    let types: Vec<&str> = thread["events"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["task.request", "event.ack", "event.ack", "patch.ready"], "the CLI lists oldest first");
    let newest = sandbox.json(&["logstream", "list", "--order", "desc", "--limit", "1", "--json"]);
    assert_eq!(newest["events"][0]["type"], "patch.ready");
    let body_file = sandbox.path("body.txt");
    std::fs::write(&body_file, "line one\r\nline two\n").unwrap();
    let appended = sandbox.json(&[
        "logstream",
        "append",
        "--type",
        "note",
        "--stream",
        "s",
        "--room",
        "r",
        "--from-agent",
        "a",
        "--body-file",
        body_file.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(appended["body"], "line one\r\nline two\n", "a body file is read byte for byte");
}

/// A `logstream wait` process started after the last event it saw wakes
/// when another process appends a matching event, with exactly that event.
fn a_waiting_process_wakes_when_another_appends(store: Store) {
    let sandbox = Sandbox::on(store);
    let created = task(&sandbox, "win-codex", "abcdef1");
    let since = created["task"]["id"].as_str().unwrap().to_string();
    let started = Instant::now();
    let waiter = sandbox
        .cmd(&[
            "logstream",
            "wait",
            "--to-agent",
            "mac-codex",
            "--since-event-id",
            &since,
            "--timeout-ms",
            "30000",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the waiter");
    std::thread::sleep(Duration::from_millis(1_500));
    sandbox.ok(&[
        "logstream",
        "append",
        "--type",
        "task.reply",
        "--stream",
        "s",
        "--room",
        "r",
        "--from-agent",
        "w",
        "--to-agent",
        "other",
    ]);
    let reply = sandbox.json(&[
        "logstream",
        "append",
        "--type",
        "task.reply",
        "--stream",
        "s",
        "--room",
        "r",
        "--from-agent",
        "win-codex",
        "--to-agent",
        "mac-codex",
        "--json",
    ]);
    let output = waiter.wait_with_output().expect("the waiter ends");
    let waited = started.elapsed();
    assert_eq!(code(&output), 0, "{}", text(&output.stderr));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["timed_out"], false);
    assert_eq!(result["count"], 1, "{result}");
    assert_eq!(result["events"][0]["id"], reply["id"]);
    assert!(waited >= Duration::from_millis(1_400) && waited < Duration::from_secs(20), "{waited:?}");
}

/// A wait that sees nothing says so and exits 2 (MemPalace's convention).
fn a_wait_that_times_out_exits_2(store: Store) {
    let sandbox = Sandbox::on(store);
    sandbox.ok(&["logstream", "append", "--type", "x", "--stream", "s", "--room", "r", "--from-agent", "a"]);
    let started = Instant::now();
    let output = sandbox.run(&["logstream", "wait", "--correlation-id", "nothing", "--timeout-ms", "500"]);
    assert_eq!(code(&output), 2);
    assert!(started.elapsed() >= Duration::from_millis(500));
    assert_eq!(text(&output.stdout), "Timed out; no matching events.\n");
    assert!(output.stderr.is_empty(), "{}", text(&output.stderr));
    let output = sandbox.run(&["logstream", "wait", "--correlation-id", "nothing", "--timeout-ms", "0", "--json"]);
    assert_eq!(code(&output), 2);
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result, serde_json::json!({"timed_out": true, "events": [], "count": 0}));
}

/// `watch --agent` starts at the tip, keeps its cursor in a state file,
/// ignores the agent's own broadcasts, wakes for what is addressed to it,
/// and exits 2 on idle.
fn a_watcher_wakes_for_its_agent_and_keeps_its_cursor(store: Store) {
    let sandbox = Sandbox::on(store);
    let append = |from: &str, to: &str| {
        sandbox.json(&[
            "logstream",
            "append",
            "--type",
            "status.update",
            "--stream",
            "s",
            "--room",
            "r",
            "--from-agent",
            from,
            "--to-agent",
            to,
            "--json",
        ])
    };
    let old = append("boss", "me");
    let idle = sandbox.run(&["logstream", "watch", "--agent", "me", "--idle-exit-ms", "400"]);
    assert_eq!(code(&idle), 2, "history is not replayed: {}", text(&idle.stdout));
    assert_eq!(text(&idle.stdout), "Idle timeout; no matching events.\n");
    assert!(text(&idle.stderr).contains(&format!("Starting at the tip ({})", old["id"].as_str().unwrap())));
    let state_file = sandbox.home().join(".mempalace/watch/me.json");
    let state: Value = serde_json::from_str(&std::fs::read_to_string(&state_file).unwrap()).unwrap();
    assert_eq!((state["cursor"].as_str(), state["agent"].as_str()), (old["id"].as_str(), Some("me")));

    let watcher = sandbox
        .cmd(&["logstream", "watch", "--agent", "me", "--idle-exit-ms", "30000", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the watcher");
    std::thread::sleep(Duration::from_millis(1_000));
    append("me", "*");
    let wanted = append("boss", "*");
    let output = watcher.wait_with_output().expect("the watcher ends");
    assert_eq!(code(&output), 0, "{}", text(&output.stderr));
    let batch: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(batch["count"], 1, "its own broadcast does not wake it: {batch}");
    assert_eq!(batch["events"][0]["id"], wanted["id"]);
    assert_eq!(batch["cursor"], wanted["id"]);
    let state: Value = serde_json::from_str(&std::fs::read_to_string(&state_file).unwrap()).unwrap();
    assert_eq!(state["cursor"], wanted["id"], "the cursor moved past what it printed");

    let replay = sandbox.json(&[
        "logstream",
        "watch",
        "--from-start",
        "--state-file",
        "",
        "--to-agent",
        "me",
        "--limit",
        "1",
        "--json",
    ]);
    assert_eq!(replay["events"][0]["id"], old["id"], "--from-start without state replays the log");
    let bad = sandbox.run(&[
        "logstream",
        "watch",
        "--since-event-id",
        "evt_nope",
        "--state-file",
        sandbox.path("s.json").to_str().unwrap(),
    ]);
    assert_eq!(code(&bad), 2, "a bad flag value");
    assert!(text(&bad.stderr).contains("since_event_id 'evt_nope' not found. Nothing was written to the state file."));
    assert!(!sandbox.path("s.json").exists());
}

/// Refusals: MemPalace's message on stderr, or `{"error": …}` on stdout
/// with `--json`; exit 2 for a bad value, 3 for what does not exist.
fn refusals_name_the_value_and_exit_with_our_codes(store: Store) {
    let sandbox = Sandbox::on(store);
    let append = ["logstream", "append", "--stream", "s", "--room", "r", "--from-agent", "a"];
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (
            [&append[..], &["--type", "Task.Request"]].concat(),
            2,
            "type='Task.Request' is not a valid event type (lowercase letters, digits, '.', '_', '-'; max 64 chars)",
        ),
        (
            [&append[..], &["--type", "x", "--status", "done"]].concat(),
            2,
            "status='done' is not one of: applied, blocked, claimed, failed, open, ready, superseded",
        ),
        ([&append[..], &["--type", "x", "--metadata", "[1]"]].concat(), 2, "--metadata must be a JSON object"),
        ([&append[..], &["--type", "x", "--metadata", "{nope"]].concat(), 2, "--metadata is not valid JSON"),
        (
            [&append[..], &["--type", "x", "--artifact-id", "art_missing"]].concat(),
            2,
            "artifact_ids references unknown artifact 'art_missing'",
        ),
        (
            [&append[..], &["--type", "x", "--body", "b", "--body-file", "f"]].concat(),
            2,
            "pass inline text or a file, not both",
        ),
        (vec!["logstream", "list", "--limit", "0"], 2, "limit must be a positive integer"),
        (vec!["logstream", "list", "--since-event-id", "evt_nope"], 3, "since_event_id 'evt_nope' not found"),
        (vec!["logstream", "list", "--before-event-id", "evt_nope"], 3, "before_event_id 'evt_nope' not found"),
        (
            vec!["logstream", "list", "--since-created-at", "2026-11-26T17:50:17"],
            2,
            "since_created_at='2026-11-26T17:50:17' is not a valid ISO-8601 date or UTC datetime",
        ),
        (vec!["logstream", "wait", "--timeout-ms", "-5"], 2, "timeout_ms must be a non-negative number"),
        (vec!["logstream", "ack", "evt_nope", "--from-agent", "b"], 3, "event 'evt_nope' not found"),
        (
            vec!["logstream", "watch", "--poll-timeout-ms", "0"],
            2,
            "--poll-timeout-ms must be a positive number of milliseconds",
        ),
        (vec!["logstream", "watch", "--limit", "0"], 2, "--limit must be a positive integer"),
        (
            vec!["logstream", "watch", "--idle-exit-ms", "-1"],
            2,
            "--idle-exit-ms must be zero (wait forever) or a positive number",
        ),
        (vec!["logstream", "watch", "--type", "ok", "--type", "Bad"], 2, "type='Bad' is not a valid event type"),
        (
            vec!["artifact", "put", "--kind", "binary", "--created-by", "a", "--content", "x"],
            2,
            "kind='binary' is not one of: file, json, log, note, patch",
        ),
        (
            vec!["artifact", "put", "--kind", "note", "--created-by", "a", "--content", ""],
            2,
            "content must be a non-empty string",
        ),
        (vec!["artifact", "get", "art_nope"], 3, "artifact 'art_nope' not found"),
        (
            vec![
                "task",
                "create",
                "--project",
                "p",
                "--from-agent",
                "a",
                "--to-agent",
                "b",
                "--goal",
                "g",
                "--branch",
                "main",
                "--base-commit",
                "main",
                "--done",
                "d",
            ],
            2,
            "task base commit must be a hexadecimal Git object id (at least 7 characters), not a branch or tag",
        ),
        (
            vec![
                "task",
                "create",
                "--project",
                " ",
                "--from-agent",
                "a",
                "--to-agent",
                "b",
                "--goal",
                "g",
                "--branch",
                "main",
                "--base-commit",
                "abcdef1",
                "--done",
                "d",
            ],
            2,
            "task project must not be empty",
        ),
        (vec!["logstream", "sync", "--peer", "http://peer:8080"], 2, "share one palace instead"),
    ];
    for (args, exit, message) in &cases {
        let output = sandbox.run(args);
        assert_eq!(code(&output), *exit, "{args:?}: {}", text(&output.stderr));
        let stderr = text(&output.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        let with_json = sandbox.run(&[&args[..], &["--json"]].concat());
        assert_eq!(code(&with_json), *exit, "{args:?} --json");
        let shape: Value = serde_json::from_slice(&with_json.stdout)
            .unwrap_or_else(|e| panic!("{args:?} --json: {e}: {}", text(&with_json.stdout)));
        assert!(shape["error"].as_str().unwrap().contains(message), "{args:?}: {shape}");
        assert_eq!(shape.as_object().unwrap().len(), 1);
        assert!(with_json.stderr.is_empty(), "{args:?}: {}", text(&with_json.stderr));
    }
}

/// Events and artifacts travel in the export and come back identical.
fn export_and_import_carry_the_log(store: Store) {
    let source = Sandbox::on(store);
    let artifact = source.json(&[
        "artifact",
        "put",
        "--kind",
        "log",
        "--created-by",
        "a",
        "--content",
        "ran 12 tests\n",
        "--json",
    ]);
    let id = artifact["id"].as_str().unwrap();
    source.ok(&[
        "logstream",
        "append",
        "--type",
        "x",
        "--stream",
        "s",
        "--room",
        "r",
        "--from-agent",
        "a",
        "--artifact-id",
        id,
    ]);
    task(&source, "b", "abcdef1");
    let export = source.path("export.jsonl");
    source.ok(&["export", "--out", export.to_str().unwrap()]);
    let lines = std::fs::read_to_string(&export).unwrap();
    assert!(lines.lines().next().unwrap().contains("\"version\":3"), "{lines}");
    assert_eq!(lines.lines().filter(|l| l.contains("\"type\":\"event\"")).count(), 2);
    assert_eq!(lines.lines().filter(|l| l.contains("\"type\":\"artifact\"")).count(), 1);

    let target = Sandbox::on(store);
    assert!(target.ok(&["import", export.to_str().unwrap()]).contains("imported 3 records (0 already present)"));
    let listed = |sandbox: &Sandbox| {
        let mut list = sandbox.json(&["logstream", "list", "--json"]);
        for event in list["events"].as_array_mut().unwrap() {
            let event = event.as_object_mut().unwrap();
            event.remove("seq");
            event.remove("origin_seq");
        }
        list
    };
    assert_eq!(listed(&target), listed(&source));
    assert_eq!(target.run(&["artifact", "get", id]).stdout, b"ran 12 tests\n");
}

/// `task launch` checks the checkout (branch, base commit, clean tree) and
/// runs the headless agent with the handoff line, exiting with its status.
#[test]
fn task_launch_runs_the_agent_in_a_clean_checkout() {
    let sandbox = Sandbox::new();
    let repo = sandbox.path("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| {
        let output = std::process::Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
            .args(args)
            .output()
            .expect("git");
        assert!(output.status.success(), "git {args:?}: {}", text(&output.stderr));
        text(&output.stdout).trim().to_string()
    };
    git(&["init", "-q", "-b", "main"]);
    git(&["commit", "-q", "--allow-empty", "-m", "start"]);
    let head = git(&["rev-parse", "HEAD"]);
    let bin = sandbox.path("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let runner = bin.join("codex");
    std::fs::write(&runner, "#!/bin/sh\necho \"ran: $*\"\nexit 7\n").unwrap();
    std::fs::set_permissions(&runner, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let created = task(&sandbox, "win-codex", &head[..12]);
    let correlation = created["task"]["correlation_id"].as_str().unwrap();
    let launch = |extra: &[&str]| {
        let mut args = vec!["task", "launch", "--runner", "codex", "--workdir", repo.to_str().unwrap()];
        args.extend_from_slice(extra);
        sandbox.cmd(&args).env("PATH", &path).output().expect("launch")
    };
    let ran = launch(&[correlation]);
    assert_eq!(code(&ran), 7, "the agent's own status: {}", text(&ran.stderr));
    let stdout = text(&ran.stdout);
    assert!(stdout.starts_with(&format!("Launching {correlation} with codex as win-codex\n")), "{stdout}");
    assert!(
        stdout.contains(&format!("ran: exec --cd {} Open MemPalace task {correlation} as win-codex.", repo.display())),
        "{stdout}"
    );

    let file = sandbox.path("task.json");
    std::fs::write(&file, created["task"].to_string()).unwrap();
    assert_eq!(code(&launch(&["--task-file", file.to_str().unwrap()])), 7, "the task as MCP returned it");

    let refused = |extra: &[&str], message: &str| {
        let output = launch(extra);
        assert_eq!(code(&output), 2, "{extra:?}: {}", text(&output.stdout));
        assert!(text(&output.stderr).contains(message), "{extra:?}: {}", text(&output.stderr));
        assert!(!text(&output.stdout).contains("ran:"), "the agent did not run");
    };
    refused(&[correlation, "--agent", "other-codex"], "task is addressed to 'win-codex', not 'other-codex'");
    refused(&["task_nope"], "task 'task_nope' not found");
    std::fs::write(repo.join("dirty.txt"), "x").unwrap();
    refused(&[correlation], "workspace has uncommitted changes; controlled launch requires a clean checkout");
    std::fs::remove_file(repo.join("dirty.txt")).unwrap();
    git(&["checkout", "-q", "-b", "feature"]);
    refused(&[correlation], "workspace branch is 'feature'; task requires 'main'");
    let claude = sandbox
        .cmd(&["task", "launch", correlation, "--runner", "claude", "--workdir", repo.to_str().unwrap()])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(text(&claude.stderr).contains("runner claude does not match addressed identity 'win-codex'"));
}

on_both!(
    a_task_goes_from_inbox_to_patch,
    a_waiting_process_wakes_when_another_appends,
    a_wait_that_times_out_exits_2,
    a_watcher_wakes_for_its_agent_and_keeps_its_cursor,
    refusals_name_the_value_and_exit_with_our_codes,
    export_and_import_carry_the_log,
);
