//! `hook run`: JSON in, the harness's JSON out, the transcript's tail
//! mined, diary checkpoints every 15 human messages, and never a failure
//! the harness could see.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        Self { dir: tempfile::tempdir().expect("tempdir") }
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mempalace"));
        command
            .env_clear()
            .env("HOME", self.dir.path().join("home"))
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("MEMPALACE_EMBEDDER", "static")
            .arg("--palace")
            .arg(self.dir.path().join("palace"))
            .args(args);
        if let Some(models) = std::env::var_os("MEMPALACE_MODEL_DIR") {
            command.env("MEMPALACE_MODEL_DIR", models);
        }
        command
    }

    fn hook(&self, hook: &str, input: &[u8]) -> (Output, Value) {
        let mut child = self
            .cmd(&["hook", "run", "--hook", hook, "--harness", "claude-code"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        child.stdin.take().unwrap().write_all(input).unwrap();
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let reply = serde_json::from_slice(&output.stdout).expect("a JSON reply");
        (output, reply)
    }

    fn checkpoints(&self) -> Vec<String> {
        let output = self.cmd(&["search", "CHECKPOINT session", "--results", "20", "--json"]).output().unwrap();
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

#[test]
fn stop_hooks_mine_the_tail_and_checkpoint_the_diary() {
    let sandbox = Sandbox::new();
    let transcript: PathBuf = sandbox.dir.path().join("sess-1.jsonl");
    append_turns(&transcript, 0, 10);
    let input = json!({"session_id": "sess-1", "transcript_path": transcript, "hook_event_name": "Stop",
                       "stop_hook_active": false})
    .to_string();
    let (_, reply) = sandbox.hook("stop", input.as_bytes());
    assert_eq!(reply, json!({}));
    assert!(sandbox.checkpoints().is_empty(), "10 human messages: no checkpoint yet");

    append_turns(&transcript, 10, 6);
    sandbox.hook("stop", input.as_bytes());
    let checkpoints = sandbox.checkpoints();
    assert_eq!(checkpoints.len(), 1, "{checkpoints:?}");
    assert!(checkpoints[0].contains("session:sess-1|msgs:16|recent:Question 15"), "{checkpoints:?}");

    sandbox.hook("stop", input.as_bytes());
    assert_eq!(sandbox.checkpoints().len(), 1, "no new messages, no new checkpoint");
    append_turns(&transcript, 16, 15);
    sandbox.hook("precompact", input.as_bytes());
    assert_eq!(sandbox.checkpoints().len(), 2);

    let found = sandbox.cmd(&["search", "Question 30 rover wheel", "--results", "1", "--json"]).output().unwrap();
    let found: Value = serde_json::from_slice(&found.stdout).unwrap();
    assert!(found["results"][0]["text"].as_str().unwrap().contains("Question 30"), "the tail was mined: {found}");
    assert_eq!(found["results"][0]["wing"], "rover", "wing from the session's directory");
}

#[test]
fn session_start_injects_the_wake_up_context() {
    let sandbox = Sandbox::new();
    let set = sandbox.cmd(&["identity", "set", "I am Atlas, the lab assistant."]).output().unwrap();
    assert!(set.status.success(), "{}", String::from_utf8_lossy(&set.stderr));
    let (_, reply) = sandbox.hook("session-start", br#"{"session_id": "s", "hook_event_name": "SessionStart"}"#);
    assert_eq!(reply["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(reply["hookSpecificOutput"]["additionalContext"].as_str().unwrap().contains("I am Atlas"), "{reply}");
}

#[test]
fn bad_input_never_fails_the_harness() {
    let sandbox = Sandbox::new();
    for input in [&b"not json"[..], b"", br#"{"transcript_path": "/nonexistent/x.jsonl"}"#, &[0xff, 0xfe, 0x00]] {
        let (_, reply) = sandbox.hook("stop", input);
        assert_eq!(reply, json!({}));
    }
}
