//! `mine --mode convos` on the real transcript samples
//! (`../shared/fixtures/formats/`): every sample mines, phrases are found,
//! re-mining adds nothing, a grown transcript adds only its tail, and bad
//! files are reported and skipped.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn formats() -> PathBuf {
    let shared = std::env::var_os("MEMPALACE_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    shared.join("fixtures/formats")
}

struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        Self { dir: tempfile::tempdir().expect("tempdir") }
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mempalace"));
        command
            .env_clear()
            .env("HOME", self.dir.path().join("home"))
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("MEMPALACE_EMBEDDER", "static")
            .arg("--palace")
            .arg(self.dir.path().join("palace"))
            .args(args)
            .stdin(Stdio::null());
        if let Some(models) = std::env::var_os("MEMPALACE_MODEL_DIR") {
            command.env("MEMPALACE_MODEL_DIR", models);
        }
        command.output().expect("run mempalace")
    }

    fn json(&self, args: &[&str]) -> Value {
        let output = self.run(args);
        assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
        serde_json::from_slice(&output.stdout).expect("JSON")
    }

    fn mine(&self, path: &std::path::Path) -> Value {
        self.json(&["mine", path.to_str().unwrap(), "--mode", "convos", "--json"])
    }

    fn top(&self, query: &str) -> Value {
        self.json(&["search", query, "--results", "3", "--json"])["results"].clone()
    }
}

#[test]
fn samples_mine_and_re_mining_adds_nothing() {
    let sandbox = Sandbox::new();
    for format in ["claude-code", "codex"] {
        let summary = sandbox.mine(&formats().join(format));
        assert_eq!(summary["failed"], serde_json::json!([]), "{format}: {summary}");
        assert!(summary["drawers_added"].as_u64().unwrap() > 10, "{format}: {summary}");
    }
    // A phrase of each format is found, in a drawer of its file.
    let found = sandbox.top("read the config file");
    assert!(
        found.as_array().unwrap().iter().any(|r| r["source_file"].as_str().unwrap().ends_with("claude_golden.jsonl")),
        "{found}"
    );
    let found = sandbox.top("list the files in the current directory");
    assert!(
        found.as_array().unwrap().iter().any(|r| r["source_file"].as_str().unwrap().ends_with("codex_golden.jsonl")),
        "{found}"
    );
    // Tool calls are one line, results trimmed; the header names the project.
    let golden = sandbox.json(&["search", "golden-project", "--results", "10", "--json"]);
    let texts: Vec<&str> = golden["results"].as_array().unwrap().iter().map(|r| r["text"].as_str().unwrap()).collect();
    assert!(texts.iter().any(|t| t.contains("Project directory: /home/testuser/golden-project")), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("[tool: Read file_path=")), "{texts:?}");

    // The chat exports and Gemini chats.
    for format in ["gemini", "chatgpt", "claude-ai", "slack"] {
        let summary = sandbox.mine(&formats().join(format));
        assert_eq!(summary["failed"], serde_json::json!([]), "{format}: {summary}");
        assert!(summary["drawers_added"].as_u64().unwrap() >= 4, "{format}: {summary}");
    }
    for (query, file) in [
        ("read the package.json file", "gemini_golden.json"),
        ("rollback hazards of the storage migration plan", "chatgpt_conversations.json"),
        ("migration risks before the release candidate", "claude_ai_privacy_export.json"),
        ("simple Python function to add two numbers", "sample_session.json"),
        ("what should setup.py do for the docker executor", "enrique"),
    ] {
        let found = sandbox.top(query);
        assert!(
            found.as_array().unwrap().iter().any(|r| r["source_file"].as_str().unwrap().ends_with(file)),
            "{query} → {file}: {found}"
        );
    }
    let plain = sandbox.dir.path().join("notes.txt");
    std::fs::write(&plain, "> how do I reset the lab router?\nHold the button for ten seconds.\n").unwrap();
    assert_eq!(sandbox.mine(&plain)["drawers_added"], 2, "a header and one exchange");

    let before = sandbox.json(&["status", "--json"])["total_drawers"].clone();
    for format in ["claude-code", "codex", "gemini", "chatgpt", "claude-ai", "slack"] {
        let again = sandbox.mine(&formats().join(format));
        assert_eq!((again["drawers_added"].clone(), again["drawers_removed"].clone()), (0.into(), 0.into()), "{again}");
    }
    assert_eq!(sandbox.json(&["status", "--json"])["total_drawers"], before);
}

#[test]
fn a_grown_transcript_adds_only_its_tail() {
    let sandbox = Sandbox::new();
    let file = sandbox.dir.path().join("session.jsonl");
    std::fs::copy(formats().join("claude-code/kvsankar__agent-history/claude_golden.jsonl"), &file).unwrap();
    let first = sandbox.mine(&file);
    let total = sandbox.json(&["status", "--json"])["total_drawers"].as_u64().unwrap();
    assert_eq!(first["drawers_added"].as_u64().unwrap(), total);
    let mut out = std::fs::OpenOptions::new().append(true).open(&file).unwrap();
    for (kind, id, text) in [
        ("user", "x1", "Now switch the staging database to PostgreSQL 16"),
        ("assistant", "x2", "Switched staging to PostgreSQL 16 and ran the migrations."),
        ("user", "x3", "Great, note the zebra-crossing test plan too"),
    ] {
        let content =
            if kind == "user" { serde_json::json!(text) } else { serde_json::json!([{"type": "text", "text": text}]) };
        let line = serde_json::json!({"type": kind, "uuid": id, "sessionId": "golden-claude-001",
            "timestamp": "2025-01-03T11:00:00.000Z", "message": {"id": format!("m-{id}"), "role": kind, "content": content}});
        writeln!(out, "{line}").unwrap();
    }
    drop(out);
    let second = sandbox.mine(&file);
    let added = second["drawers_added"].as_u64().unwrap();
    let removed = second["drawers_removed"].as_u64().unwrap();
    assert!((1..=3).contains(&added), "{second}");
    assert!(removed <= 1, "at most the old last, unpaired exchange is replaced: {second}");
    assert!(second["drawers_unchanged"].as_u64().unwrap() >= total - 1, "{second}");
    assert_eq!(sandbox.json(&["status", "--json"])["total_drawers"].as_u64().unwrap(), total + added - removed);
    assert!(sandbox.top("zebra-crossing test plan").as_array().unwrap()[0]["text"].as_str().unwrap().contains("zebra"));
}

#[test]
fn bad_files_are_reported_and_skipped() {
    let sandbox = Sandbox::new();
    let dir = sandbox.dir.path().join("exports");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("empty.jsonl"), "").unwrap();
    std::fs::write(dir.join("garbage.jsonl"), [0xff_u8, 0xfe, 0x00, 0x81, 0x9f].repeat(200)).unwrap();
    let good =
        std::fs::read_to_string(formats().join("claude-code/kvsankar__agent-history/claude_golden.jsonl")).unwrap();
    let cut = &good[..good.len() - 40];
    std::fs::write(dir.join("truncated.jsonl"), cut).unwrap();
    std::fs::write(
        dir.join("huge.jsonl"),
        format!("{{\"type\":\"user\",\"message\":{{\"content\":\"{}\"", "a".repeat(50 << 20)),
    )
    .unwrap();
    let summary = sandbox.mine(&dir);
    let failed = summary["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{summary}");
    assert!(failed[0]["file"].as_str().unwrap().ends_with("garbage.jsonl"));
    assert!(summary["drawers_added"].as_u64().unwrap() > 0, "the truncated file still mines: {summary}");

    let only_bad = sandbox.dir.path().join("only-bad");
    std::fs::create_dir_all(&only_bad).unwrap();
    std::fs::write(only_bad.join("garbage.jsonl"), [0xff_u8, 0x00].repeat(10)).unwrap();
    let output = sandbox.run(&["mine", only_bad.to_str().unwrap(), "--mode", "convos"]);
    assert_eq!(output.status.code(), Some(2), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stderr).contains("nothing could be mined"));
}

/// Issue 7: opencode's database (schema of its first migration), with a
/// sub-agent session and a short one left out.
#[test]
fn opencode_sessions_mine_from_the_database() {
    let sandbox = Sandbox::new();
    let db = sandbox.dir.path().join("opencode.db");
    {
        let conn = rusqlite::Connection::open(&db).unwrap();
        conn.execute_batch(
            "CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, parent_id TEXT, slug TEXT NOT NULL,
                directory TEXT NOT NULL, title TEXT NOT NULL, version TEXT NOT NULL, time_created INTEGER NOT NULL,
                time_updated INTEGER NOT NULL);
             CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT NOT NULL, time_created INTEGER NOT NULL,
                time_updated INTEGER NOT NULL, data TEXT NOT NULL);
             CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT NOT NULL, session_id TEXT NOT NULL,
                time_created INTEGER NOT NULL, time_updated INTEGER NOT NULL, data TEXT NOT NULL);
             INSERT INTO session VALUES ('ses_a', 'p', NULL, 's', '/home/alex/rover', 'Wheel calibration', '1.2.0', 1750000000000, 1750000500000);
             INSERT INTO session VALUES ('ses_sub', 'p', 'ses_a', 's', '/home/alex/rover', 'Task agent', '1.2.0', 1750000100000, 1750000100000);
             INSERT INTO session VALUES ('ses_short', 'p', NULL, 's', '/home/alex/rover', 'New session - 2025', '1.2.0', 1750000200000, 1750000200000);
             INSERT INTO message VALUES ('msg_1', 'ses_a', 1750000001000, 1750000001000, '{\"role\":\"user\",\"time\":{\"created\":1750000001000}}');
             INSERT INTO message VALUES ('msg_2', 'ses_a', 1750000002000, 1750000002000, '{\"role\":\"assistant\",\"time\":{\"created\":1750000002000}}');
             INSERT INTO message VALUES ('msg_3', 'ses_a', 1750000003000, 1750000003000, '{\"role\":\"user\",\"time\":{\"created\":1750000003000}}');
             INSERT INTO message VALUES ('msg_9', 'ses_short', 1750000200000, 1750000200000, '{\"role\":\"user\"}');
             INSERT INTO part VALUES ('prt_1', 'msg_1', 'ses_a', 1, 1, '{\"type\":\"text\",\"text\":\"Calibrate the left wheel encoder of the rover\"}');
             INSERT INTO part VALUES ('prt_2', 'msg_1', 'ses_a', 1, 1, '{\"type\":\"text\",\"text\":\"<file contents>\",\"synthetic\":true}');
             INSERT INTO part VALUES ('prt_3', 'msg_2', 'ses_a', 1, 1, '{\"type\":\"step-start\",\"snapshot\":\"abc\"}');
             INSERT INTO part VALUES ('prt_4', 'msg_2', 'ses_a', 1, 1, '{\"type\":\"text\",\"text\":\"The encoder offset was 12 ticks; fixed.\"}');
             INSERT INTO part VALUES ('prt_5', 'msg_2', 'ses_a', 1, 1, '{\"type\":\"tool\",\"tool\":\"bash\",\"callID\":\"c\",\"state\":{\"status\":\"completed\",\"input\":{\"command\":\"calib --left\"},\"output\":\"ok\"}}');
             INSERT INTO part VALUES ('prt_6', 'msg_3', 'ses_a', 1, 1, '{\"type\":\"text\",\"text\":\"Thanks, log it\"}');
             INSERT INTO part VALUES ('prt_9', 'msg_9', 'ses_short', 1, 1, '{\"type\":\"text\",\"text\":\"hi\"}');",
        )
        .unwrap();
    }
    let db_arg = db.to_str().unwrap();
    let summary = sandbox.json(&["mine", "--mode", "opencode", "--db", db_arg, "--json"]);
    assert_eq!((summary["sessions"].clone(), summary["sessions_skipped"].clone()), (1.into(), 2.into()), "{summary}");
    assert_eq!(summary["drawers_added"], 3, "a header, one exchange, the last turn: {summary}");
    let found = sandbox.top("left wheel encoder calibration");
    let text = found[0]["text"].as_str().unwrap();
    assert!(
        text.contains("encoder offset was 12 ticks") && text.contains("[tool: bash command=calib --left]"),
        "{found}"
    );
    assert!(!text.contains("<file contents>"), "synthetic parts are left out");
    assert_eq!(found[0]["wing"], "rover");
    let again = sandbox.json(&["mine", "--mode", "opencode", "--db", db_arg, "--json"]);
    assert_eq!(again["drawers_added"], 0);
    let none = sandbox.json(&["mine", "--mode", "opencode", "--db", db_arg, "--session", "ses_other", "--json"]);
    assert_eq!(none["sessions"], 0);
    let missing = sandbox.run(&["mine", "--mode", "opencode", "--db", "/nonexistent/opencode.db"]);
    assert_eq!(missing.status.code(), Some(3));
}

/// Issue 7: projects mode — documents first, .gitignore (nested too),
/// rooms from mempalace.yaml, line ranges, incremental, and `sync`.
#[test]
fn projects_mine_documents_first_and_sync_removes_deleted_files() {
    let sandbox = Sandbox::new();
    let root = sandbox.dir.path().join("lab-notes");
    let write = |path: &str, text: &str| {
        let file = root.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    };
    write(
        "mempalace.yaml",
        "wing: lab\nrooms:\n- name: hardware\n  description: Robot parts\n  keywords: [gripper, servo]\n- name: general\n  description: Other\n  keywords: []\n",
    );
    write("README.md", "# Lab notes\n\nEverything about the lab robots lives here.\n");
    let long: String = (0..12)
        .map(|i| format!("Section {i}: the centrifuge must be balanced before each run, checked twice.\n\n"))
        .collect();
    write("docs/procedures.md", &long);
    write("docs/.gitignore", "draft.md\n");
    write("docs/draft.md", "unfinished draft about zeppelins\n");
    write("notes/gripper-tuning.md", "Tuned the force limit to 12.5 N after the sensor recalibration.\n");
    write("secret/keys.md", "private keys notes\n");
    write(".gitignore", "secret/\n");
    write("src/main.rs", "fn main() { println!(\"quasar\"); }\n");
    write("node_modules/pkg/readme.md", "dependency readme about nebulas\n");
    write("Cargo.lock", "# lock\n");
    let root_arg = root.to_str().unwrap();

    let first = sandbox.json(&["mine", root_arg, "--json"]);
    assert_eq!(first["failed"], serde_json::json!([]));
    assert_eq!(first["files"], 3, "README, procedures, gripper notes: {first}");
    assert_eq!(first["wing"], "lab");
    let status = sandbox.json(&["status", "--json"]);
    assert_eq!(status["taxonomy"]["lab"]["hardware"], 1, "{status}");
    assert!(status["taxonomy"]["lab"]["general"].as_u64().unwrap() >= 3, "the long file is chunked: {status}");
    for absent in ["zeppelins", "private keys", "quasar", "nebulas"] {
        assert!(
            sandbox.json(&["search", absent, "--json"])["results"]
                .as_array()
                .unwrap()
                .iter()
                .all(|r| !r["text"].as_str().unwrap().contains(absent)),
            "{absent}"
        );
    }
    let hit = &sandbox.top("centrifuge balanced section 11")[0];
    let drawer = sandbox.json(&["get", hit["id"].as_str().unwrap(), "--json"]);
    assert!(
        drawer["line_start"].as_u64().unwrap() >= 1
            && drawer["line_end"].as_u64().unwrap() >= drawer["line_start"].as_u64().unwrap(),
        "{drawer}"
    );

    let again = sandbox.json(&["mine", root_arg, "--json"]);
    assert_eq!((again["drawers_added"].clone(), again["drawers_removed"].clone()), (0.into(), 0.into()), "{again}");

    write("notes/gripper-tuning.md", "Tuned the force limit to 14 N: the new servo is stronger.\n");
    let changed = sandbox.json(&["mine", root_arg, "--json"]);
    assert_eq!(
        (changed["drawers_added"].clone(), changed["drawers_removed"].clone()),
        (1.into(), 1.into()),
        "{changed}"
    );

    let with_code = sandbox.json(&["mine", root_arg, "--include-code", "--no-gitignore", "--dry-run", "--json"]);
    assert_eq!(with_code["files"], 6, "code, the ignored secret and draft too: {with_code}");

    std::fs::remove_file(root.join("docs/procedures.md")).unwrap();
    let preview = sandbox.json(&["sync", "--dry-run", "--json"]);
    assert_eq!(preview["missing"].as_array().unwrap().len(), 1, "{preview}");
    let before = sandbox.json(&["status", "--json"])["total_drawers"].as_u64().unwrap();
    assert_eq!(
        sandbox.json(&["status", "--json"])["total_drawers"].as_u64().unwrap(),
        before,
        "a dry run removes nothing"
    );
    let synced = sandbox.json(&["sync", "--json"]);
    let removed = synced["drawers_removed"].as_u64().unwrap();
    assert!(removed >= 3, "{synced}");
    assert_eq!(sandbox.json(&["status", "--json"])["total_drawers"].as_u64().unwrap(), before - removed);
}

/// Exact counts for the golden samples, worked out by reading them: one
/// header per conversation plus one drawer per exchange (a user turn and
/// the reply, consecutive assistant lines being one reply).
#[test]
fn golden_samples_give_exact_drawer_counts() {
    let sandbox = Sandbox::new();
    for (file, expected) in [
        // user → 3 assistant lines (text, tool calls, results): 1 exchange.
        ("claude-code/kvsankar__agent-history/claude_golden.jsonl", 2),
        // user → reply with a shell call; "Thanks!" → reply: 2 exchanges.
        ("codex/kvsankar__agent-history/codex_golden.jsonl", 3),
        // user → gemini (tool call); user → gemini: 2 exchanges.
        ("gemini/kvsankar__agent-history/gemini_golden.json", 3),
    ] {
        let summary = sandbox.mine(&formats().join(file));
        assert_eq!(summary["drawers_added"], expected, "{file}: {summary}");
    }
}

/// Two processes mining the same transcripts at once file each drawer once.
#[test]
fn concurrent_miners_do_not_duplicate() {
    let single = Sandbox::new();
    let expected = single.mine(&formats().join("claude-code"))["drawers_added"].as_u64().unwrap();
    let sandbox = std::sync::Arc::new(Sandbox::new());
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let sandbox = std::sync::Arc::clone(&sandbox);
            std::thread::spawn(move || sandbox.mine(&formats().join("claude-code")))
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    assert_eq!(sandbox.json(&["status", "--json"])["total_drawers"].as_u64().unwrap(), expected);
    assert_eq!(sandbox.json(&["doctor", "--check-only", "--json"])["healthy"], true);
}

/// A Claude Code record in a `parentUuid` chain.
fn claude_line(kind: &str, uuid: &str, parent: Option<&str>, text: &str) -> String {
    let content =
        if kind == "user" { serde_json::json!(text) } else { serde_json::json!([{"type": "text", "text": text}]) };
    serde_json::json!({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "grow-1",
        "cwd": "/work/grow", "timestamp": "2025-02-01T09:00:00.000Z",
        "message": {"id": format!("m-{uuid}"), "role": kind, "content": content}})
    .to_string()
}

fn append(file: &std::path::Path, lines: &[String]) {
    let mut out = std::fs::OpenOptions::new().append(true).open(file).unwrap();
    for line in lines {
        writeln!(out, "{line}").unwrap();
    }
}

fn counts(summary: &Value) -> (u64, u64, u64) {
    let n = |key: &str| summary[key].as_u64().unwrap();
    (n("drawers_added"), n("drawers_removed"), n("drawers_unchanged"))
}

/// Issue 7: a transcript that grows is read from where the last run left
/// off. The proof: bytes changed in the middle of the file after the first
/// run are not read again by the second (only a rewind or a rewrite makes
/// the miner read the file whole), while the appended exchanges are filed,
/// an exchange completed by its reply replaces its one-turn drawer, and a
/// rewind to an earlier prompt drops the abandoned branch.
#[test]
fn a_growing_transcript_is_read_from_its_cursor() {
    let sandbox = Sandbox::new();
    let file = sandbox.dir.path().join("grow-1.jsonl");
    let filler = "The calibration log lists every torque reading of the arm, one per line, with its time. ".repeat(4);
    let mut lines = Vec::new();
    let mut parent: Option<String> = None;
    for n in 0..30 {
        let (u, a) = (format!("u{n}"), format!("a{n}"));
        let topic = if n == 10 { "alpha".to_string() } else { format!("topic{n}") };
        lines.push(claude_line("user", &u, parent.as_deref(), &format!("Question {n} about {topic}: {filler}")));
        lines.push(claude_line("assistant", &a, Some(&u), &format!("Answer {n} on {topic}. {filler}")));
        parent = Some(a);
    }
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    assert_eq!(counts(&sandbox.mine(&file)), (31, 0, 0), "a header and 30 exchanges");
    assert_eq!(counts(&sandbox.mine(&file)), (0, 0, 31), "unchanged: nothing read, nothing filed");

    // Change exchange 10 in place (same length), far from the head and the end.
    let text = std::fs::read_to_string(&file).unwrap().replace("about alpha", "about omega");
    std::fs::write(&file, &text).unwrap();
    append(
        &file,
        &[
            claude_line("user", "x1", Some("a29"), "Now switch the staging database to PostgreSQL 16"),
            claude_line("assistant", "x2", Some("x1"), "Switched staging to PostgreSQL 16 and ran the migrations."),
            claude_line("user", "x3", Some("x2"), "Great, note the zebra-crossing test plan too"),
        ],
    );
    let (added, removed, _) = counts(&sandbox.mine(&file));
    assert_eq!((added, removed), (2, 0), "the new exchange and the unanswered prompt");
    assert!(
        sandbox.top("omega").as_array().unwrap().iter().all(|hit| !hit["text"].as_str().unwrap().contains("omega"))
    );
    assert!(sandbox.top("zebra-crossing test plan").as_array().unwrap()[0]["text"].as_str().unwrap().contains("zebra"));

    append(&file, &[claude_line("assistant", "x4", Some("x3"), "Noted the zebra-crossing plan in TESTING.md.")]);
    let (added, removed, _) = counts(&sandbox.mine(&file));
    assert_eq!((added, removed), (1, 1), "the answered prompt replaces its one-turn drawer");
    let total = sandbox.json(&["status", "--json"])["total_drawers"].as_u64().unwrap();
    assert_eq!(total, 33);

    // A rewind: a new prompt answers exchange 29 again; the branch x1..x4 is
    // abandoned, so the file is read whole (the changed exchange 10 too).
    append(&file, &[claude_line("user", "y1", Some("a29"), "Forget staging; what about the gripper firmware?")]);
    let (added, removed, _) = counts(&sandbox.mine(&file));
    assert_eq!((added, removed), (2, 3), "the y1 prompt and exchange 10 in; x1+x2, x3+x4 and the old exchange 10 out");
    assert!(
        sandbox
            .top("zebra-crossing")
            .as_array()
            .unwrap()
            .iter()
            .all(|h| !h["text"].as_str().unwrap().contains("zebra"))
    );
    assert!(sandbox.top("omega").as_array().unwrap()[0]["text"].as_str().unwrap().contains("omega"));

    // A rewritten (shorter) file is read whole: its drawers are those of the new text.
    std::fs::write(&file, lines[..4].join("\n") + "\n").unwrap();
    let (added, removed, unchanged) = counts(&sandbox.mine(&file));
    assert_eq!((added, unchanged), (0, 3), "the header and two exchanges were there");
    assert_eq!(removed, 29, "exchanges 2..29 and the y1 prompt are gone");
    assert_eq!(sandbox.json(&["status", "--json"])["total_drawers"], 3);
}

/// Issue 7: in a branched Claude Code session (a prompt edited or
/// rewound), only the branch the user last saw is mined.
#[test]
fn a_forked_session_keeps_the_branch_the_user_saw() {
    let sandbox = Sandbox::new();
    let summary = sandbox.mine(&formats().join("claude-code/kvsankar__agent-history/claude_forked_session.jsonl"));
    // Header + (sorting request, reply) + (MergeSort, reply) + (type hints, reply).
    assert_eq!(summary["drawers_added"], 4, "{summary}");
    let hits = sandbox.json(&["search", "QuickSort implementation middle element", "--results", "10", "--json"]);
    for hit in hits["results"].as_array().unwrap() {
        assert!(!hit["text"].as_str().unwrap().contains("Let's go with QuickSort"), "{hit}");
    }
    assert!(
        sandbox.top("stable sorting MergeSort").as_array().unwrap()[0]["text"].as_str().unwrap().contains("MergeSort")
    );
}
