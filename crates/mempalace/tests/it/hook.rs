//! `hook run`: JSON in, the harness's JSON out, the transcript's tail
//! mined, diary checkpoints every 15 human messages, and never a failure
//! the harness could see; on both stores.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::harness::{Sandbox, Store, on_both};

fn hook(sandbox: &Sandbox, hook: &str, input: &[u8]) -> Value {
    let output = sandbox.run_with_stdin(&["hook", "run", "--hook", hook, "--harness", "claude-code"], input);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("a JSON reply")
}

fn diary_checkpoints(sandbox: &Sandbox) -> Vec<String> {
    let output = sandbox.run(&["search", "CHECKPOINT session", "--results", "20", "--json"]);
    let found: Value = serde_json::from_slice(&output.stdout).unwrap_or(json!({"results": []}));
    found["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["text"].as_str())
        .filter(|t| t.starts_with("CHECKPOINT:"))
        .map(str::to_string)
        .collect()
}

fn append_turns(path: &Path, from: usize, count: usize) {
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    for i in from..from + count {
        let user = json!({"type": "user", "uuid": format!("u{i}"), "sessionId": "sess-1", "cwd": "/home/alex/rover",
            "timestamp": "2025-06-01T10:00:00Z", "message": {"role": "user", "content": format!("Question {i} about the rover wheel motor")}});
        let assistant = json!({"type": "assistant", "uuid": format!("a{i}"), "sessionId": "sess-1",
            "message": {"id": format!("m{i}"), "role": "assistant", "content": [{"type": "text", "text": format!("Answer {i}: check the torque limit")}]}});
        writeln!(file, "{user}\n{assistant}").unwrap();
    }
}

fn stop_hooks_mine_the_tail_and_checkpoint_the_diary(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let transcript: PathBuf = sandbox.dir().join("sess-1.jsonl");
    append_turns(&transcript, 0, 10);
    let input = json!({"session_id": "sess-1", "transcript_path": transcript, "hook_event_name": "Stop",
                       "stop_hook_active": false})
    .to_string();
    let reply = hook(&sandbox, "stop", input.as_bytes());
    assert_eq!(reply, json!({}));
    assert!(diary_checkpoints(&sandbox).is_empty(), "10 human messages: no checkpoint yet");

    append_turns(&transcript, 10, 6);
    hook(&sandbox, "stop", input.as_bytes());
    let checkpoints = diary_checkpoints(&sandbox);
    assert_eq!(checkpoints.len(), 1, "{checkpoints:?}");
    assert!(checkpoints[0].contains("session:sess-1|msgs:16|recent:Question 15"), "{checkpoints:?}");

    hook(&sandbox, "stop", input.as_bytes());
    assert_eq!(diary_checkpoints(&sandbox).len(), 1, "no new messages, no new checkpoint");
    append_turns(&transcript, 16, 15);
    hook(&sandbox, "precompact", input.as_bytes());
    assert_eq!(diary_checkpoints(&sandbox).len(), 2);

    let found = sandbox.json(&["search", "Question 30 rover wheel", "--results", "1", "--json"]);
    assert!(found["results"][0]["text"].as_str().unwrap().contains("Question 30"), "the tail was mined: {found}");
    assert_eq!(found["results"][0]["wing"], "rover", "wing from the session's directory");
    // Without a language model the hook runs the cold path for what it filed.
    let pipeline = &sandbox.json(&["status", "--json"])["pipeline"];
    assert_eq!(pipeline["by_state"]["raw"], 0, "nothing left raw: {pipeline}");
    assert!(pipeline["by_state"]["processed"].as_u64().unwrap() > 0, "{pipeline}");
}

fn session_start_injects_the_wake_up_context(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    sandbox.ok(&["identity", "set", "I am Atlas, the lab assistant."]);
    let reply = hook(&sandbox, "session-start", br#"{"session_id": "s", "hook_event_name": "SessionStart"}"#);
    assert_eq!(reply["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(reply["hookSpecificOutput"]["additionalContext"].as_str().unwrap().contains("I am Atlas"), "{reply}");
}

fn bad_input_never_fails_the_harness(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    for input in [&b"not json"[..], b"", br#"{"transcript_path": "/nonexistent/x.jsonl"}"#, &[0xff, 0xfe, 0x00]] {
        let reply = hook(&sandbox, "stop", input);
        assert_eq!(reply, json!({}));
    }
}

/// Issue 22: opencode's hook — the session named in the input is read
/// from opencode's database (the default under HOME, or `db_path`) and
/// filed; unknown sessions and missing databases never fail the harness.
fn opencode_hooks_file_the_session(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let data = sandbox.home().join(".local/share/opencode");
    std::fs::create_dir_all(&data).unwrap();
    mempalace_testdata::opencode_db(&data);
    let run = |input: Value| {
        let output = sandbox
            .run_with_stdin(&["hook", "run", "--hook", "stop", "--harness", "opencode"], input.to_string().as_bytes());
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice::<Value>(&output.stdout).expect("a JSON reply")
    };
    assert_eq!(run(json!({"session_id": "ses_rover", "cwd": "/home/alex/rover"})), json!({}));
    let rover = sandbox.json(&["status", "--json"])["wings"]["rover"].as_u64().unwrap_or(0);
    assert!(rover >= 2, "the session's header and exchanges: {rover}");
    run(json!({"session_id": "ses_rover"}));
    assert_eq!(sandbox.json(&["status", "--json"])["wings"]["rover"].as_u64().unwrap(), rover, "filed once");
    for input in [
        json!({"session_id": "ses_task"}),
        json!({"session_id": "ses_nowhere"}),
        json!({"session_id": "ses_rover", "db_path": "/nonexistent/opencode.db"}),
        json!({}),
    ] {
        assert_eq!(run(input), json!({}));
    }
    assert_eq!(sandbox.json(&["status", "--json"])["wings"]["rover"].as_u64().unwrap(), rover);
}

/// Issue 22: the opencode plugin `hook install` writes, loaded by Node as
/// opencode loads plugins and handed opencode's `session.idle` event,
/// runs the hook, which files the session; other events do nothing, and
/// a missing binary does not throw.
#[test]
fn the_opencode_plugin_runs_the_hook() {
    let sandbox = Sandbox::new().with_static_model();
    let data = sandbox.home().join(".local/share/opencode");
    std::fs::create_dir_all(&data).unwrap();
    mempalace_testdata::opencode_db(&data);
    let plugins = sandbox.dir().join("plugins");
    let written = sandbox.ok(&["hook", "install", "--harness", "opencode", "--dir", plugins.to_str().unwrap()]);
    assert!(written.contains("mempalace.js"), "{written}");
    let plugin = std::fs::read_to_string(plugins.join("mempalace.js")).unwrap();
    assert!(plugin.contains(&serde_json::to_string(env!("CARGO_BIN_EXE_mempalace")).unwrap()), "{plugin}");
    let refused = sandbox.run(&["hook", "install", "--harness", "claude-code"]);
    assert_eq!(crate::harness::code(&refused), 2);

    // Node reads ES modules from .mjs; opencode (Bun) takes the .js as is.
    std::fs::write(plugins.join("mempalace.mjs"), &plugin).unwrap();
    let driver = r#"
        const { MemPalace } = await import(process.argv[1]);
        const hooks = await MemPalace({ directory: "/home/alex/rover" });
        await hooks.event({ event: { type: "message.updated", properties: { sessionID: "ses_rover" } } });
        await hooks.event({ event: { type: "session.idle", properties: { sessionID: "ses_rover" } } });
        process.env.MEMPALACE_BIN = "/nonexistent/mempalace";
        const broken = await MemPalace({ directory: "/tmp" });
        await broken.event({ event: { type: "session.idle", properties: { sessionID: "x" } } });
        // opencode lives on after an event; this driver would exit at once
        // and could drop the hook's input still in the pipe (seen under load).
        await new Promise((done) => setTimeout(done, 1000));
        console.log("events handed over");
    "#;
    let mut node = std::process::Command::new("node");
    node.arg("--input-type=module").arg("-e").arg(driver).arg(plugins.join("mempalace.mjs"));
    node.env_clear().envs(sandbox.envs()).env("MEMPALACE_PALACE_PATH", sandbox.palace());
    let output = node.output().expect("node runs the plugin (Debian: apt-get install nodejs; .ci/run installs it)");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).contains("events handed over"));
    // The hook runs detached: wait for its drawers.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let status = sandbox.run(&["status", "--json"]);
        let filed = serde_json::from_slice::<Value>(&status.stdout)
            .ok()
            .and_then(|s| s["wings"]["rover"].as_u64())
            .unwrap_or(0);
        if filed >= 2 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the plugin's hook filed nothing in 30 s");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

on_both!(
    stop_hooks_mine_the_tail_and_checkpoint_the_diary,
    opencode_hooks_file_the_session,
    session_start_injects_the_wake_up_context,
    bad_input_never_fails_the_harness,
);
