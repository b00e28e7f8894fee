//! `mine` on transcripts of every format, on both stores, in two layers.
//!
//! The repository's fixtures (`fixtures/transcripts/`, written in each
//! format's real shape) give exact drawer counts, worked out by reading
//! them: one header per conversation, then one drawer per exchange (a turn
//! and the reply to it; consecutive lines of one speaker are one turn).
//! Re-mining adds nothing, a grown transcript adds only its tail, a branched
//! session keeps the branch the user saw, bad files are reported and
//! skipped. The real-data layer (`real_data`) mines the team's real samples
//! (`MEMPALACE_SHARED_DIR`/fixtures/formats) in addition.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use serde_json::{Value, json};

use crate::harness::{Sandbox, Store, on_both};

/// A file or folder of `fixtures/transcripts/`.
fn transcript(relative: &str) -> PathBuf {
    mempalace_testdata::fixture(&format!("transcripts/{relative}"))
}

const TELEMETRY: &str = "claude-code/5f0c2a8e-telemetry.jsonl";
const FORKED: &str = "claude-code/b7d41c09-tiles-forked.jsonl";
const CODEX: &str = "codex/rollout-2025-06-10T16-20-00-0199c3f4-7a21-7c60-9d55-3f1e0a2b4c6d.jsonl";

/// Every fixture file (or Slack export folder) with its exact drawer count.
const EXACT_COUNTS: &[(&str, u64)] = &[
    // Meta caveat, /clear wrapper, thinking line, sidechain lines, the
    // system line and an interrupted prompt are left out: two prompts with
    // their replies (a reply split over three lines with the same message
    // id, plus a tool result and a second reply message) → header + 2.
    (TELEMETRY, 3),
    // Branched: the rewound branch (LRU cache) is dropped; the first prompt,
    // the disk-cache prompt and the eviction-log prompt with their replies
    // → header + 3.
    (FORKED, 4),
    // The {"loglines": […]} export: two prompts, two replies → header + 2.
    ("claude-code/web-session-export.json", 3),
    // A sub-agent file: every line is a sidechain → nothing.
    ("claude-code/agent-1f2e3d4c.jsonl", 0),
    // Instructions and environment context are not human text; event_msg
    // copies are not read twice: two prompts and their replies (with the
    // tool calls) → header + 2.
    (CODEX, 3),
    // Legacy Gemini JSON: an info message is skipped; two prompts, two
    // replies (the first reply in two messages) → header + 2.
    ("gemini/session-2025-10-05T08-12-6c2d9e41.json", 3),
    // Gemini JSONL: a message rewritten by id counts once, the rewind drops
    // a prompt and its reply → header + 2.
    ("gemini/session-2026-04-18T19-05-a4e8c1f0.jsonl", 3),
    // ChatGPT: conversation 1 on its current branch (system and custom
    // instructions hidden, the regenerated answer dropped; a tool call and
    // its output join the reply) → header + 2; conversation 2 without
    // current_node (newest leaf) → header + 1; a record without mapping → 0.
    ("chatgpt/conversations.json", 5),
    // Claude.ai: new-style blocks (thinking left out, tool use and result
    // kept) → header + 2; old-style text only → header + 1; no messages → 0.
    ("claude-ai/conversations.json", 5),
    // Slack export: #general (purpose message skipped) carla.m → ana:
    // header + 1; #irrigation over two days (join skipped): ana → Benedikt,
    // sensorbot → Benedikt, ana → header + 3.
    ("slack/greenhouse-team", 6),
    // Plain text: two `>` questions with their answers → header + 2.
    ("text/supplier-call.txt", 3),
];

/// Every drawer of the palace: text → wing (from `export`).
fn drawer_texts(sandbox: &Sandbox) -> BTreeMap<String, String> {
    let output = sandbox.run(&["export"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["type"] == "drawer")
        .map(|record| (record["content"].as_str().unwrap().to_string(), record["wing"].as_str().unwrap().to_string()))
        .collect()
}

fn every_format_mines_to_its_exact_drawers(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    for (file, expected) in EXACT_COUNTS {
        let summary = sandbox.mine(&transcript(file));
        assert_eq!(summary["failed"], json!([]), "{file}: {summary}");
        assert_eq!(summary["drawers_added"], *expected, "{file}: {summary}");
    }
    let total: u64 = EXACT_COUNTS.iter().map(|(_, n)| n).sum();
    assert_eq!(sandbox.total(), total);
    // Wings from each conversation's directory (basename, normalised), the
    // Slack export's folder name, else `conversations`.
    let status = sandbox.json(&["status", "--json"]);
    assert_eq!(
        status["wings"],
        json!({"rover_telemetry": 3, "map_tiles": 4, "firmware_ci": 3, "irrigation_controller": 3,
               "greenhouse_team": 6, "conversations": 19}),
        "{status}"
    );

    // A phrase of each file is found in a drawer of that file.
    for (query, file) in [
        ("battery voltage chart on the rover dashboard", "5f0c2a8e-telemetry.jsonl"),
        ("disk cache with a 2 GB cap evicting tiles", "b7d41c09-tiles-forked.jsonl"),
        ("count the lines of every log file", "web-session-export.json"),
        ("cross linker missing on the arm64 runner", "3f1e0a2b4c6d.jsonl"),
        ("soil moisture readings bed 3", "session-2025-10-05T08-12-6c2d9e41.json"),
        ("skip watering when the rain sensor reports rain", "session-2026-04-18T19-05-a4e8c1f0.jsonl"),
        ("watts of heating for a greenhouse in winter", "chatgpt/conversations.json"),
        ("how often to water tomatoes in grow bags", "claude-ai/conversations.json"),
        ("drip line clogged flush with vinegar", "greenhouse-team/irrigation"),
        ("pressure-compensating emitters for raised beds", "supplier-call.txt"),
    ] {
        let found = sandbox.top(query);
        assert!(
            found.as_array().unwrap().iter().any(|r| r["source_file"].as_str().unwrap().ends_with(file)),
            "{query} → {file}: {found}"
        );
    }

    // What the drawers say, and what they leave out.
    let drawers = drawer_texts(&sandbox);
    let all: Vec<&str> = drawers.keys().map(String::as_str).collect();
    let has = |needle: &str| all.iter().filter(|t| t.contains(needle)).count();
    for (needle, count) in [
        // Headers: title (custom > generated > first prompt), directory, date, session.
        (
            "Conversation: Rover telemetry dashboard\nProject directory: /home/sam/rover-telemetry\nDate: 2025-03-14\nSession: 5f0c2a8e-telemetry",
            1,
        ),
        ("Conversation: arm64 cross linker in CI\nProject directory: /home/sam/firmware-ci", 1),
        ("Conversation: Irrigation schedule and rain check\nProject directory: /home/sam/irrigation-controller", 1),
        ("Conversation: Greenhouse heater sizing", 1),
        ("Conversation: Field trip packing list", 1),
        ("Conversation: Watering schedule for tomatoes", 1),
        ("Conversation: Which compost ratio of greens to browns avoids a smelly heap?", 1),
        ("Conversation: #irrigation", 1),
        ("Conversation: #general", 1),
        // Tool calls on one line, results trimmed onto one line, in the reply.
        ("[tool: Read file_path=/home/sam/rover-telemetry/telemetry.csv limit=3]", 1),
        ("[result: timestamp,battery_v,motor_temp_c 2025-03-13T10:00:00Z,12.4,31.0", 1),
        ("[tool: apply_patch *** Begin Patch", 1),
        ("[result: Success. Updated the following files: M ci/Dockerfile]", 1),
        ("[tool: python area_m2 = 12 print(area_m2 * 75)]\n[result: 900]", 1),
        ("[tool: create_event", 1),
        ("[result: Created event 'Water tomatoes' (daily until 31 July).]", 1),
        ("[result: Successfully modified file: schedule.toml (1 replacements).]", 1),
        // One reply split over lines is one turn; its copies are read once.
        ("assistant: I'll read telemetry.csv first to see which columns it has.", 1),
        ("Let me look at the end of the CI log.", 1),
        // Slack: authors by display name, then real name; mentions, links and entities resolved.
        ("ana: @Benedikt Krause the drip line in bed 3 is clogged again", 1),
        ("Benedikt Krause: I'll flush it with vinegar tomorrow morning & check the filter", 1),
        ("sensorbot: Soil moisture bed 3: 18%", 1),
        ("ana: Thanks! Logged it in the greenhouse wiki", 1),
        ("carla.m: Who has the key to the seed storage cabinet?", 1),
        // Plain text: consecutive `>` lines are one turn.
        (
            "user: How often should the emitter filter be cleaned?\nWe have hard water here.\nassistant: Every two weeks",
            1,
        ),
        // Left out: CLI meta and wrappers, thinking, sidechains, injected
        // context, hidden and abandoned branches, rewound messages, joins.
        ("Caveat: The messages below", 0),
        ("/clear", 0),
        ("I need the column names", 0),
        ("Sidechain answer", 0),
        ("csv_reader.py", 0),
        ("Request interrupted", 0),
        ("environment_context", 0),
        ("make check", 0),
        ("Checking the CI log", 0),
        ("500 W fan heater", 0),
        ("metric units", 0),
        ("full sun, so daily watering", 0),
        ("Deleting cron", 0),
        ("has joined the channel", 0),
        ("Everything else", 0),
        ("Request cancelled", 0),
        ("LRU", 0),
    ] {
        assert_eq!(has(needle), count, "{needle:?} in {all:#?}");
    }

    // Mining again adds and removes nothing.
    for (file, _) in EXACT_COUNTS {
        let again = sandbox.mine(&transcript(file));
        assert_eq!((again["drawers_added"].clone(), again["drawers_removed"].clone()), (json!(0), json!(0)), "{again}");
    }
    let folders = sandbox.mine(&transcript("claude-code"));
    assert_eq!((folders["files"].clone(), folders["drawers_added"].clone()), (json!(4), json!(0)), "{folders}");
    assert_eq!(sandbox.total(), total);
}

/// A transcript appended to since the last run: the complete last exchange
/// stays, the appended exchange and the unanswered prompt are filed.
fn a_grown_transcript_adds_only_its_tail(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let file = sandbox.path("session.jsonl");
    std::fs::copy(transcript(TELEMETRY), &file).unwrap();
    assert_eq!(sandbox.mine(&file)["drawers_added"], 3);
    let mut out = std::fs::OpenOptions::new().append(true).open(&file).unwrap();
    for (kind, id, text) in [
        ("user", "x1", "Now switch the staging database to PostgreSQL 16"),
        ("assistant", "x2", "Switched staging to PostgreSQL 16 and ran the migrations."),
        ("user", "x3", "Great, note the zebra-crossing test plan too"),
    ] {
        let content = if kind == "user" { json!(text) } else { json!([{"type": "text", "text": text}]) };
        let line = json!({"type": kind, "uuid": id, "sessionId": "5f0c2a8e-telemetry",
            "timestamp": "2025-03-14T11:00:00.000Z", "message": {"id": format!("m-{id}"), "role": kind, "content": content}});
        writeln!(out, "{line}").unwrap();
    }
    drop(out);
    let second = sandbox.mine(&file);
    assert_eq!(
        (second["drawers_added"].clone(), second["drawers_removed"].clone()),
        (json!(2), json!(0)),
        "the new exchange and the unanswered prompt: {second}"
    );
    assert_eq!(sandbox.total(), 5);
    assert!(sandbox.top("zebra-crossing test plan").as_array().unwrap()[0]["text"].as_str().unwrap().contains("zebra"));
}

/// Empty, binary, truncated and oversized files: only the unreadable one
/// fails; a folder of nothing readable is an error.
fn bad_files_are_reported_and_skipped(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let dir = sandbox.path("exports");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("empty.jsonl"), "").unwrap();
    std::fs::write(dir.join("garbage.jsonl"), [0xff_u8, 0xfe, 0x00, 0x81, 0x9f].repeat(200)).unwrap();
    let good = std::fs::read_to_string(transcript(TELEMETRY)).unwrap();
    // Cut inside the last line (the custom title): the title falls back to
    // the summary line, every exchange is still there.
    std::fs::write(dir.join("truncated.jsonl"), &good[..good.len() - 40]).unwrap();
    std::fs::write(
        dir.join("huge.jsonl"),
        format!("{{\"type\":\"user\",\"message\":{{\"content\":\"{}\"", "a".repeat(50 << 20)),
    )
    .unwrap();
    let summary = sandbox.mine(&dir);
    let failed = summary["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{summary}");
    assert!(failed[0]["file"].as_str().unwrap().ends_with("garbage.jsonl"));
    assert_eq!(summary["drawers_added"], 3, "the truncated file still mines whole: {summary}");
    let headers: Vec<String> = drawer_texts(&sandbox).into_keys().filter(|t| t.starts_with("Conversation:")).collect();
    assert_eq!(headers.len(), 1, "{headers:?}");
    assert!(headers[0].starts_with("Conversation: Battery chart on the dashboard\n"), "{headers:?}");

    let only_bad = sandbox.path("only-bad");
    std::fs::create_dir_all(&only_bad).unwrap();
    std::fs::write(only_bad.join("garbage.jsonl"), [0xff_u8, 0x00].repeat(10)).unwrap();
    let output = sandbox.run(&["mine", only_bad.to_str().unwrap(), "--mode", "convos"]);
    assert_eq!(output.status.code(), Some(2), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stderr).contains("nothing could be mined"));
}

/// opencode's database, built from `fixtures/transcripts/opencode/opencode.sql`
/// (the tables of opencode's first migration): a sub-agent session and a
/// short one are left out, synthetic parts and step markers dropped.
fn opencode_sessions_mine_from_the_database(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let db = mempalace_testdata::opencode_db(sandbox.dir());
    let db_arg = db.to_str().unwrap();
    let summary = sandbox.json(&["mine", "--mode", "opencode", "--db", db_arg, "--json"]);
    assert_eq!((summary["files"].clone(), summary["conversations_skipped"].clone()), (1.into(), 2.into()), "{summary}");
    assert_eq!(summary["drawers_added"], 3, "a header, one exchange, the last turn: {summary}");
    let found = sandbox.top("left wheel encoder calibration");
    let text = found[0]["text"].as_str().unwrap();
    assert!(
        text.contains("encoder offset was 12 ticks") && text.contains("[tool: bash command=calib --left]"),
        "{found}"
    );
    assert!(!text.contains("<file contents"), "synthetic parts are left out: {text}");
    assert!(!text.contains("4b825dc6") && !text.contains("0.0123"), "step markers are left out: {text}");
    assert_eq!(found[0]["wing"], "rover");
    let again = sandbox.json(&["mine", "--mode", "opencode", "--db", db_arg, "--json"]);
    assert_eq!(again["drawers_added"], 0);
    let none = sandbox.json(&["mine", "--mode", "opencode", "--db", db_arg, "--session", "ses_other", "--json"]);
    assert_eq!(none["files"], 0);
    let missing = sandbox.run(&["mine", "--mode", "opencode", "--db", "/nonexistent/opencode.db"]);
    assert_eq!(missing.status.code(), Some(3));
}

/// Issue 7: projects mode — documents first, .gitignore (nested too),
/// rooms from mempalace.yaml, line ranges, incremental, and `sync`.
fn projects_mine_documents_first_and_sync_removes_deleted_files(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let root = sandbox.dir().join("lab-notes");
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

    // Issue 15: `sync` previews unless told to apply, as in the Python
    // MemPalace; applying needs a scope.
    std::fs::remove_file(root.join("docs/procedures.md")).unwrap();
    let before = sandbox.json(&["status", "--json"])["total_drawers"].as_u64().unwrap();
    for preview in [sandbox.json(&["sync", "--json"]), sandbox.json(&["sync", "--dry-run", "--json"])] {
        assert_eq!(preview["dry_run"], true, "{preview}");
        assert_eq!(preview["by_source"].as_object().unwrap().len(), 1, "{preview}");
        assert!(preview["missing"].as_u64().unwrap() >= 3, "the chunks of the deleted file: {preview}");
        assert_eq!(preview["removed_drawers"], 0);
    }
    assert_eq!(
        sandbox.json(&["status", "--json"])["total_drawers"].as_u64().unwrap(),
        before,
        "a preview removes nothing"
    );
    let unscoped = sandbox.run(&["sync", "--apply"]);
    assert_eq!(unscoped.status.code(), Some(2), "{}", String::from_utf8_lossy(&unscoped.stderr));
    assert!(String::from_utf8_lossy(&unscoped.stderr).contains("--wing"));
    assert_eq!(sandbox.json(&["status", "--json"])["total_drawers"].as_u64().unwrap(), before);
    let synced = sandbox.json(&["sync", root_arg, "--apply", "--json"]);
    let removed = synced["removed_drawers"].as_u64().unwrap();
    assert!(removed >= 3, "{synced}");
    assert_eq!(sandbox.json(&["status", "--json"])["total_drawers"].as_u64().unwrap(), before - removed);
}

/// A Claude Code record in a `parentUuid` chain.
fn claude_line(kind: &str, uuid: &str, parent: Option<&str>, text: &str) -> String {
    let content =
        if kind == "user" { serde_json::json!(text) } else { serde_json::json!([{"type": "text", "text": text}]) };
    serde_json::json!({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "grow-1",
        "cwd": "/home/sam/grow", "timestamp": "2025-02-01T09:00:00.000Z",
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
fn a_growing_transcript_is_read_from_its_cursor(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let file = sandbox.dir().join("grow-1.jsonl");
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

/// Two processes mining the same transcripts at once file each drawer once.
fn concurrent_miners_do_not_duplicate(store: Store) {
    let sandbox = std::sync::Arc::new(Sandbox::on(store).with_static_model());
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let sandbox = std::sync::Arc::clone(&sandbox);
            std::thread::spawn(move || sandbox.mine(&transcript("claude-code")))
        })
        .collect();
    for worker in workers {
        worker.join().unwrap();
    }
    // The folder's files: 3 + 4 + 3 + 0 drawers (see EXACT_COUNTS).
    assert_eq!(sandbox.total(), 10);
    assert_eq!(sandbox.json(&["doctor", "--check-only", "--json"])["healthy"], true);
}

/// In a branched Claude Code session (a prompt rewound and asked again),
/// only the branch the user saw last is mined.
fn a_forked_session_keeps_the_branch_the_user_saw(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let summary = sandbox.mine(&transcript(FORKED));
    assert_eq!(summary["drawers_added"], 4, "{summary}");
    let drawers = drawer_texts(&sandbox);
    assert!(drawers.keys().all(|t| !t.contains("LRU") && !t.contains("512 tiles")), "{drawers:#?}");
    assert!(drawers.keys().any(|t| t.contains("keep the tiles on disk") && t.contains("2 GB cap")), "{drawers:#?}");
    assert!(drawers.values().all(|wing| wing == "map_tiles"));
    let hit = &sandbox.top("eviction log line tile key")[0];
    assert!(hit["text"].as_str().unwrap().contains("evicted tile z/x/y"), "{hit}");
}

/// Issue 15: `--session`, `--since` and `--min-messages` select
/// conversations in convos mode (they were ignored), and `--dry-run` says
/// exactly what a run would file (it reported unchanged files as added).
fn convos_selection_and_dry_runs_tell_the_truth(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let dir = sandbox.path("exports");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(transcript("chatgpt/conversations.json"), dir.join("conversations.json")).unwrap();
    let file = dir.join("conversations.json");
    let file_arg = file.to_str().unwrap();
    let mine = |extra: &[&str]| {
        let mut args = vec!["mine", file_arg, "--mode", "convos", "--json"];
        args.extend_from_slice(extra);
        sandbox.json(&args)
    };
    let heater = mine(&["--session", "67863a2e-1c4b-8008-a1f2-9b3c5d7e1f20", "--dry-run"]);
    assert_eq!(
        (heater["drawers_added"].clone(), heater["conversations_skipped"].clone()),
        (3.into(), 1.into()),
        "{heater}"
    );
    assert_eq!(sandbox.total(), 0, "a dry run writes nothing");
    let picked = mine(&["--session", "67863a2e-1c4b-8008-a1f2-9b3c5d7e1f20"]);
    assert_eq!(picked["drawers_added"], 3, "{picked}");
    assert_eq!(mine(&["--since", "2099-01-01"])["conversations_skipped"], 2);
    assert_eq!(mine(&["--min-messages", "500"])["drawers_added"], 0);
    let planned = mine(&["--dry-run"]);
    assert_eq!(
        (planned["drawers_added"].clone(), planned["drawers_unchanged"].clone()),
        (2.into(), 3.into()),
        "{planned}"
    );
    let whole = mine(&[]);
    assert_eq!((whole["drawers_added"].clone(), whole["drawers_unchanged"].clone()), (2.into(), 3.into()), "{whole}");
    let again = mine(&["--dry-run"]);
    assert_eq!((again["drawers_added"].clone(), again["drawers_unchanged"].clone()), (0.into(), 5.into()), "{again}");
    let general = sandbox.json(&["mine", file_arg, "--mode", "convos", "--extract", "general", "--dry-run", "--json"]);
    assert_eq!(general["dry_run"], true, "{general}");
    let office = sandbox.run(&["mine", file_arg, "--mode", "extract"]);
    assert_eq!(office.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&office.stderr).contains("not supported"));
}

on_both!(
    convos_selection_and_dry_runs_tell_the_truth,
    every_format_mines_to_its_exact_drawers,
    a_grown_transcript_adds_only_its_tail,
    bad_files_are_reported_and_skipped,
    opencode_sessions_mine_from_the_database,
    projects_mine_documents_first_and_sync_removes_deleted_files,
    concurrent_miners_do_not_duplicate,
    a_growing_transcript_is_read_from_its_cursor,
    a_forked_session_keeps_the_branch_the_user_saw,
);

/// The same on the team's real transcript samples (`fixtures/formats/` of
/// the shared data): every sample mines, phrases are found, re-mining adds
/// nothing, a grown transcript adds only its tail.
mod real_data {
    use std::io::Write;
    use std::path::PathBuf;

    use crate::harness::Sandbox;

    fn formats(relative: &str) -> PathBuf {
        mempalace_testdata::shared("fixtures/formats").join(relative)
    }

    #[test]
    fn samples_mine_and_re_mining_adds_nothing() {
        let sandbox = Sandbox::new().with_static_model();
        for format in ["claude-code", "codex"] {
            let summary = sandbox.mine(&formats(format));
            assert_eq!(summary["failed"], serde_json::json!([]), "{format}: {summary}");
            assert!(summary["drawers_added"].as_u64().unwrap() > 10, "{format}: {summary}");
        }
        // A phrase of each format is found, in a drawer of its file.
        let found = sandbox.top("read the config file");
        assert!(
            found
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["source_file"].as_str().unwrap().ends_with("claude_golden.jsonl")),
            "{found}"
        );
        let found = sandbox.top("list the files in the current directory");
        assert!(
            found
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["source_file"].as_str().unwrap().ends_with("codex_golden.jsonl")),
            "{found}"
        );
        // Tool calls are one line, results trimmed; the header names the project.
        let golden = sandbox.json(&["search", "golden-project", "--results", "10", "--json"]);
        let texts: Vec<&str> =
            golden["results"].as_array().unwrap().iter().map(|r| r["text"].as_str().unwrap()).collect();
        assert!(texts.iter().any(|t| t.contains("Project directory: /home/testuser/golden-project")), "{texts:?}");
        assert!(texts.iter().any(|t| t.contains("[tool: Read file_path=")), "{texts:?}");

        // The chat exports and Gemini chats.
        for format in ["gemini", "chatgpt", "claude-ai", "slack"] {
            let summary = sandbox.mine(&formats(format));
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
        let plain = sandbox.dir().join("notes.txt");
        std::fs::write(&plain, "> how do I reset the lab router?\nHold the button for ten seconds.\n").unwrap();
        assert_eq!(sandbox.mine(&plain)["drawers_added"], 2, "a header and one exchange");

        let before = sandbox.json(&["status", "--json"])["total_drawers"].clone();
        for format in ["claude-code", "codex", "gemini", "chatgpt", "claude-ai", "slack"] {
            let again = sandbox.mine(&formats(format));
            assert_eq!(
                (again["drawers_added"].clone(), again["drawers_removed"].clone()),
                (0.into(), 0.into()),
                "{again}"
            );
        }
        assert_eq!(sandbox.json(&["status", "--json"])["total_drawers"], before);
    }

    #[test]
    fn a_grown_transcript_adds_only_its_tail() {
        let sandbox = Sandbox::new().with_static_model();
        let file = sandbox.dir().join("session.jsonl");
        std::fs::copy(formats("claude-code/kvsankar__agent-history/claude_golden.jsonl"), &file).unwrap();
        let first = sandbox.mine(&file);
        let total = sandbox.json(&["status", "--json"])["total_drawers"].as_u64().unwrap();
        assert_eq!(first["drawers_added"].as_u64().unwrap(), total);
        let mut out = std::fs::OpenOptions::new().append(true).open(&file).unwrap();
        for (kind, id, text) in [
            ("user", "x1", "Now switch the staging database to PostgreSQL 16"),
            ("assistant", "x2", "Switched staging to PostgreSQL 16 and ran the migrations."),
            ("user", "x3", "Great, note the zebra-crossing test plan too"),
        ] {
            let content = if kind == "user" {
                serde_json::json!(text)
            } else {
                serde_json::json!([{"type": "text", "text": text}])
            };
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
        assert!(
            sandbox.top("zebra-crossing test plan").as_array().unwrap()[0]["text"].as_str().unwrap().contains("zebra")
        );
    }

    /// Exact counts for the golden samples, worked out by reading them: one
    /// header per conversation plus one drawer per exchange (a user turn and
    /// the reply, consecutive assistant lines being one reply).
    #[test]
    fn golden_samples_give_exact_drawer_counts() {
        let sandbox = Sandbox::new().with_static_model();
        for (file, expected) in [
            // user → 3 assistant lines (text, tool calls, results): 1 exchange.
            ("claude-code/kvsankar__agent-history/claude_golden.jsonl", 2),
            // user → reply with a shell call; "Thanks!" → reply: 2 exchanges.
            ("codex/kvsankar__agent-history/codex_golden.jsonl", 3),
            // user → gemini (tool call); user → gemini: 2 exchanges.
            ("gemini/kvsankar__agent-history/gemini_golden.json", 3),
        ] {
            let summary = sandbox.mine(&formats(file));
            assert_eq!(summary["drawers_added"], expected, "{file}: {summary}");
        }
    }

    /// Two processes mining the same transcripts at once file each drawer once.
    #[test]
    fn concurrent_miners_do_not_duplicate() {
        let single = Sandbox::new().with_static_model();
        let expected = single.mine(&formats("claude-code"))["drawers_added"].as_u64().unwrap();
        let sandbox = std::sync::Arc::new(Sandbox::new().with_static_model());
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let sandbox = std::sync::Arc::clone(&sandbox);
                std::thread::spawn(move || sandbox.mine(&formats("claude-code")))
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        assert_eq!(sandbox.json(&["status", "--json"])["total_drawers"].as_u64().unwrap(), expected);
        assert_eq!(sandbox.json(&["doctor", "--check-only", "--json"])["healthy"], true);
    }

    /// Issue 7: in a branched Claude Code session (a prompt edited or
    /// rewound), only the branch the user last saw is mined.
    #[test]
    fn a_forked_session_keeps_the_branch_the_user_saw() {
        let sandbox = Sandbox::new().with_static_model();
        let summary = sandbox.mine(&formats("claude-code/kvsankar__agent-history/claude_forked_session.jsonl"));
        // Header + (sorting request, reply) + (MergeSort, reply) + (type hints, reply).
        assert_eq!(summary["drawers_added"], 4, "{summary}");
        let hits = sandbox.json(&["search", "QuickSort implementation middle element", "--results", "10", "--json"]);
        for hit in hits["results"].as_array().unwrap() {
            assert!(!hit["text"].as_str().unwrap().contains("Let's go with QuickSort"), "{hit}");
        }
        assert!(
            sandbox.top("stable sorting MergeSort").as_array().unwrap()[0]["text"]
                .as_str()
                .unwrap()
                .contains("MergeSort")
        );
    }
}

/// The Python MemPalace's write-routing flags are accepted by `mine` and
/// `sweep`, change nothing and say so; `--daemon` with `--direct` is a
/// usage error, as in MemPalace.
#[test]
fn write_routing_flags_are_accepted_and_explained() {
    let sandbox = Sandbox::new();
    let project = sandbox.dir().join("notes");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("plan.md"), "# Plan\n\nThe pump is serviced every March.\n").unwrap();
    let project = project.display().to_string();
    let mined = sandbox.run(&["mine", &project, "--daemon"]);
    assert!(mined.status.success(), "{}", crate::harness::text(&mined.stderr));
    assert!(crate::harness::text(&mined.stderr).contains("--daemon/--background have no effect here"));
    let swept = sandbox.run(&["sweep", &project, "--background"]);
    assert!(crate::harness::text(&swept.stderr).contains("--daemon/--background have no effect here"));
    let both = sandbox.run(&["mine", &project, "--daemon", "--direct"]);
    assert_eq!(crate::harness::code(&both), 2, "{}", crate::harness::text(&both.stderr));
}
