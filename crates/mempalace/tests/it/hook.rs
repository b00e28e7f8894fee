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

on_both!(
    stop_hooks_mine_the_tail_and_checkpoint_the_diary,
    session_start_injects_the_wake_up_context,
    bad_input_never_fails_the_harness,
);
