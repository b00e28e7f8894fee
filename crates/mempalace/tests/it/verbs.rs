//! The Python MemPalace 3.11 verbs added for users switching over (issue
//! 15), driven through the real binary on both stores: `instructions`,
//! `rules`, `sweep`, `compress`, `split`, `repair-status`, `migrate`,
//! `migrate-wings`, `audit`, `rooms`, `wings split`, `update`, `daemon`,
//! `palace` and `init`'s added flags.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::harness::{Sandbox, Store, code, on_both, text};

fn add(sandbox: &Sandbox, wing: &str, room: &str, words: &str) -> String {
    sandbox.ok(&["add", "--raw", "--wing", wing, "--room", room, words]).trim().to_string()
}

fn stdout_and_code(sandbox: &Sandbox, args: &[&str]) -> (String, String, i32) {
    let output = sandbox.run(args);
    (text(&output.stdout), text(&output.stderr), code(&output))
}

#[test]
fn instructions_list_and_print_our_guides() {
    let sandbox = Sandbox::new();
    let list = sandbox.ok(&["instructions"]);
    for name in ["init", "search", "mine", "help", "status", "audit"] {
        assert!(list.contains(&format!("  {name} ")), "{list}");
    }
    let audit = sandbox.ok(&["instructions", "audit"]);
    assert!(audit.starts_with("# MemPalace Audit"), "{audit}");
    assert!(audit.contains("mempalace audit --json") && audit.contains("mempalace rooms propose"));
    assert!(sandbox.ok(&["instructions", "init"]).contains("mempalace init --yes"));
    let (_, stderr, status) = stdout_and_code(&sandbox, &["instructions", "nonsense"]);
    assert_eq!(status, 2, "{stderr}");
}

#[test]
fn rules_render_the_marked_block_and_refuse_bad_identities() {
    let sandbox = Sandbox::new();
    let block = sandbox.ok(&["rules", "--host", "mac", "--harness", "claude", "--project", "mempalace"]);
    assert!(block.starts_with("<!-- mempalace-shared-brain:start (canonical source:"), "{block}");
    assert!(block.trim_end().ends_with("<!-- mempalace-shared-brain:end -->"));
    assert!(block.contains("mac:claude:<project>") && block.contains("mempalace_search"));
    let light = sandbox.run(&["rules", "--host", "mac", "--harness", "claude", "--project", "p", "--mcp", "light"]);
    assert!(light.status.success());
    assert!(
        text(&light.stdout).contains("no light MCP server") && text(&light.stdout).contains("mempalace_add_drawer")
    );
    assert!(text(&light.stderr).contains("full tool names"));
    let (_, stderr, status) =
        stdout_and_code(&sandbox, &["rules", "--host", "Mac", "--harness", "c", "--project", "p"]);
    assert_eq!(status, 2);
    assert!(stderr.contains("--host must be a stable lowercase token"), "{stderr}");
}

#[test]
fn update_daemon_palace_and_migrate_explain_what_to_use() {
    let sandbox = Sandbox::new();
    let check = sandbox.json(&["update", "check"]);
    assert_eq!(check["installed"], env!("CARGO_PKG_VERSION"));
    assert_eq!(check["checked"], false);
    assert!(check["how_to_update"].as_str().unwrap().contains("cargo build --release"));
    for (args, says) in [
        (vec!["update", "configure", "--enable", "--installer", "pip"], "nothing to configure"),
        (vec!["update", "plan"], "does not plan or run upgrades"),
        (vec!["daemon", "start", "--foreground"], "needs no daemon"),
        (vec!["daemon"], "mempalace serve"),
        (vec!["palace", "set-embedder", "--model", "x", "--force"], "mempalace reembed"),
        (vec!["migrate", "--dry-run", "--yes"], "migrate-from-python"),
    ] {
        let (stdout, stderr, status) = stdout_and_code(&sandbox, &args);
        assert_eq!(status, 2, "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}: {stdout}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    }
    // A Python palace where ours would be: migrate names the folder to bring over.
    let python_home = sandbox.path("py");
    std::fs::create_dir_all(python_home.join("palace")).unwrap();
    std::fs::write(python_home.join("palace/chroma.sqlite3"), b"").unwrap();
    let output = sandbox.bare(&["--palace", python_home.join("palace").to_str().unwrap(), "migrate"]).output().unwrap();
    assert_eq!(code(&output), 2);
    assert!(text(&output.stderr).contains(&format!("--source {}", python_home.display())), "{}", text(&output.stderr));
}

/// A Claude Code message record.
fn message(session: &str, uuid: &str, at: &str, role: &str, content: Value) -> String {
    json!({"type": role, "uuid": uuid, "sessionId": session, "timestamp": at, "cwd": "/home/me/dev/Acme-App",
           "message": {"role": role, "content": content}})
    .to_string()
}

fn write_lines(path: &Path, lines: &[String]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

fn sweep_files_every_message_once_and_resumes_from_its_cursor(store: Store) {
    let sandbox = Sandbox::on(store);
    let file = sandbox.path("transcripts/s1.jsonl");
    let long = "y".repeat(12_000);
    let mut lines = vec![
        message("s1", "u1", "2026-01-01T10:00:00Z", "user", json!("Why does the login fail?")),
        message(
            "s1",
            "a1",
            "2026-01-01T10:00:05Z",
            "assistant",
            json!([
                {"type": "text", "text": "Checking the session store."},
                {"type": "tool_use", "name": "Read", "input": {"file_path": "/src/auth.rs"}}
            ]),
        ),
        message("s1", "u2", "2026-01-01T10:00:09Z", "user", json!([{"type": "tool_result", "content": long}])),
        r#"{"type":"summary","summary":"not a message"}"#.to_string(),
        "{broken".to_string(),
    ];
    write_lines(&file, &lines);
    let first = sandbox.ok(&["sweep", file.to_str().unwrap()]);
    assert!(first.contains("+3 new, 0 already present, 0 skipped (< cursor)."), "{first}");
    let user = sandbox.json(&["get", "sweep_s1_u1", "--json"]);
    assert_eq!(user["content"], "USER: Why does the login fail?");
    assert_eq!((user["wing"].as_str(), user["room"].as_str()), (Some("acme_app"), Some("sweep")));
    assert_eq!(user["context"]["timestamp"], "2026-01-01T10:00:00Z");
    assert_eq!(user["context"]["ingest_mode"], "sweep");
    let assistant = sandbox.json(&["get", "sweep_s1_a1", "--json"]);
    assert_eq!(
        assistant["content"],
        "ASSISTANT: Checking the session store.\n[tool_use: Read input={\"file_path\": \"/src/auth.rs\"}]"
    );
    // 12,000 characters of tool output: two drawers, nothing lost.
    let first_part = sandbox.json(&["get", "sweep_s1_u2", "--json"]);
    let second_part = sandbox.json(&["get", "sweep_s1_u2_part_002", "--json"]);
    let joined = format!("{}{}", first_part["content"].as_str().unwrap(), second_part["content"].as_str().unwrap());
    assert_eq!(joined, format!("USER: [tool_result: \"{long}\"]"));
    assert_eq!(sandbox.total(), 4);

    let again = sandbox.ok(&["sweep", file.to_str().unwrap()]);
    assert!(again.contains("+0 new, 1 already present, 2 skipped (< cursor)."), "{again}");
    assert_eq!(sandbox.total(), 4, "re-running adds nothing");

    lines.push(message("s1", "a2", "2026-01-01T10:01:00Z", "assistant", json!("Fixed.")));
    write_lines(&file, &lines);
    let other = sandbox.path("transcripts/nested/s2.jsonl");
    write_lines(&other, &[message("s2", "v1", "2026-02-01T08:00:00Z", "user", json!("Second session here"))]);
    let folder = sandbox.ok(&["sweep", sandbox.path("transcripts").to_str().unwrap()]);
    assert!(folder.contains("Swept 2/2 files from"), "{folder}");
    assert!(folder.contains("+2 new, 1 already present, 2 skipped (< cursor)."), "{folder}");

    let missing = sandbox.run(&["sweep", sandbox.path("nowhere/x.jsonl").to_str().unwrap()]);
    assert_eq!(code(&missing), 3, "{}", text(&missing.stderr));
}

fn compress_keeps_aaak_summaries_in_the_drawer_context(store: Store) {
    let sandbox = Sandbox::on(store);
    let id = add(
        &sandbox,
        "app",
        "decisions",
        "We decided to use GraphQL instead of REST because the mobile app needs flexible queries.",
    );
    add(&sandbox, "ops", "notes", "Alice moved the staging database to a bigger server on Monday.");
    let dry = sandbox.ok(&["compress", "--dry-run"]);
    assert!(dry.contains("Compressing 2 drawers..."), "{dry}");
    assert!(dry.contains("  [app/decisions] ?\n"), "{dry}");
    assert!(dry.contains("    app|decisions|?|?\n0:???|graphql_rest_decided|"), "{dry}");
    assert!(dry.contains("  Total: ") && dry.contains("(dry run -- nothing stored)"), "{dry}");
    assert!(sandbox.json(&["get", &id, "--json"])["context"].get("aaak").is_none(), "a dry run stores nothing");

    let stored = sandbox.ok(&["compress", "--wing", "app"]);
    assert!(stored.contains("Stored 1 AAAK summaries in the drawers' context"), "{stored}");
    let drawer = sandbox.json(&["get", &id, "--json"]);
    let aaak = drawer["context"]["aaak"].as_str().unwrap();
    assert!(aaak.starts_with("app|decisions|?|?\n0:???|graphql_rest_decided|"), "{aaak}");
    assert!(aaak.ends_with("|determ|DECISION"), "{aaak}");
    assert!(drawer["content"].as_str().unwrap().starts_with("We decided"), "the text is unchanged");
    assert_eq!(drawer["id"], id.as_str());
    let again = sandbox.ok(&["compress", "--wing", "app"]);
    assert!(again.contains("Stored 0 AAAK summaries") && again.contains("1 were already current"), "{again}");

    let config = sandbox.path("entities.json");
    std::fs::write(&config, r#"{"entities": {"Alice": "ALC"}}"#).unwrap();
    let coded = sandbox.ok(&["compress", "--wing", "ops", "--dry-run", "--config", config.to_str().unwrap()]);
    assert!(coded.contains("Loaded entity config") && coded.contains("0:ALC|"), "{coded}");
    assert!(sandbox.ok(&["compress", "--wing", "nowhere"]).contains("No drawers found in wing 'nowhere'."));
    let bad = sandbox.run(&["compress", "--config", sandbox.path("missing.json").to_str().unwrap()]);
    assert_eq!(code(&bad), 2);
}

fn repair_status_shows_the_derived_checks_and_vector_coverage(store: Store) {
    let sandbox = Sandbox::on(store);
    add(&sandbox, "w", "r", "a drawer without any vector");
    let status = sandbox.ok(&["repair-status"]);
    assert!(status.contains("MemPalace Repair — Status"), "{status}");
    assert!(status.contains("  [lexical_index]\n    status:  OK"), "{status}");
    assert!(status.contains("  [room_counts]"), "{status}");
    assert!(status.contains("(no vector)") && status.contains("1 drawers"), "{status}");
    assert!(status.contains("nothing to repair") && status.contains("mempalace reembed"), "{status}");
}

fn migrate_wings_normalises_names_keeping_ids_and_tunnels(store: Store) {
    let sandbox = Sandbox::on(store);
    let legacy = add(&sandbox, "My-Project", "notes", "a note filed under the legacy wing spelling");
    add(&sandbox, "my_project", "notes", "a note filed under the normalised spelling");
    add(&sandbox, "other", "x", "another wing entirely");
    sandbox.ok(&["graph", "tunnel", "create", "My-Project/notes", "other/x"]);

    let plan = sandbox.ok(&["migrate-wings", "--dry-run"]);
    assert!(plan.contains("\"My-Project\" -> \"my_project\": 1 drawer(s)  (MERGE into existing wing)"), "{plan}");
    assert!(plan.contains("DRY RUN -- no changes made."), "{plan}");
    let unasked = sandbox.run(&["migrate-wings"]);
    assert_eq!(code(&unasked), 2, "stdin is not a terminal: nothing is applied");
    assert!(text(&unasked.stderr).contains("--yes"), "{}", text(&unasked.stderr));
    assert_eq!(sandbox.json(&["status", "--json"])["wings"]["My-Project"], 1);

    let applied = sandbox.ok(&["migrate-wings", "--yes"]);
    assert!(applied.contains("Migrated 1 drawer(s), 1 tunnel(s)."), "{applied}");
    let drawer = sandbox.json(&["get", &legacy, "--json"]);
    assert_eq!((drawer["id"].as_str(), drawer["wing"].as_str()), (Some(legacy.as_str()), Some("my_project")));
    let status = sandbox.json(&["status", "--json"]);
    assert_eq!(status["wings"], json!({"my_project": 2, "other": 1}));
    let tunnels = sandbox.json(&["graph", "tunnel", "list", "--json"]);
    assert_eq!(tunnels.as_array().unwrap().len(), 1);
    assert!(tunnels.to_string().contains("my_project") && !tunnels.to_string().contains("My-Project"), "{tunnels}");
    assert!(sandbox.ok(&["migrate-wings"]).contains("already normalized -- nothing to migrate"));
}

fn audit_scores_the_palace_and_fails_under_a_threshold(store: Store) {
    let sandbox = Sandbox::on(store);
    for i in 0..3 {
        add(&sandbox, "acme-app", "technical", &format!("generic drawer number {i}"));
    }
    add(&sandbox, "acme_app", "auth", "the login flow uses signed cookies");
    sandbox.ok(&["kg", "add", "acme", "uses", "postgres"]);
    sandbox.ok(&["kg", "add", "acme", "uses", "redis"]);
    let report = sandbox.json(&["audit", "--json"]);
    assert_eq!(report["scores"]["rooms"], 25, "{report}");
    assert_eq!(report["scores"]["naming"], 90, "{report}");
    assert_eq!(report["scores"]["knowledge_graph"], 50, "{report}");
    assert_eq!(report["scores"]["tunnels"], Value::Null);
    assert_eq!(report["scores"]["hallways"], Value::Null);
    assert_eq!(report["scores"]["overall"], 55);
    assert_eq!(report["hallways"]["total"], 0, "no entity pairs yet: the layer is not scored");
    assert_eq!(report["naming"]["wing_drift"], json!([["acme-app", "acme_app"]]));
    let findings = report["findings"].as_array().unwrap();
    assert!(findings.iter().any(|f| f["layer"] == "rooms"), "{report}");
    assert!(findings.iter().any(|f| f["text"].as_str().unwrap().contains("one wing spelled two ways")));
    let human = sandbox.ok(&["audit"]);
    assert!(human.contains("MemPalace audit: ") && human.contains("  overall           55  ######...."), "{human}");
    assert!(human.contains("  NAMING\n    - acme-app / acme_app: one wing spelled two ways."), "{human}");
    let failing = sandbox.run(&["audit", "--quiet", "--fail-under", "60"]);
    assert_eq!(code(&failing), 2);
    assert!(text(&failing.stderr).contains("below --fail-under 60"), "{}", text(&failing.stderr));
    assert!(sandbox.run(&["audit", "--fail-under", "50"]).status.success());
}

/// The file a command says it saved (`Saved to PATH.` / `Plan saved to PATH.`).
fn saved_path(stdout: &str) -> PathBuf {
    let at = stdout.find("aved to ").expect("a saved path") + "aved to ".len();
    let rest = &stdout[at..];
    PathBuf::from(&rest[..rest.find(". ").unwrap()])
}

fn rooms_propose_a_keyword_set_and_apply_it_by_vector(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    for i in 0..5 {
        add(
            &sandbox,
            "ops",
            "technical",
            &format!("kubernetes pod {i} crashed and the kubernetes deployment restarted"),
        );
        add(&sandbox, "ops", "general", &format!("invoice {i} was sent to the billing provider; billing retried it"));
    }
    add(&sandbox, "ops", "decisions", "We keep invoices for seven years");
    let proposed = sandbox.ok(&["rooms", "propose", "--wing", "ops"]);
    assert!(proposed.contains("Read 11 drawers of ops") && proposed.contains("no LLM"), "{proposed}");
    assert!(
        proposed.contains("    billing ")
            && proposed.contains("    kubernetes ")
            && proposed.contains("    decisions ")
    );
    let path = saved_path(&proposed);
    let set: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(set["wing"], "ops");
    assert_eq!(set["schema_version"], 1);

    let dry = sandbox.ok(&["rooms", "apply", "--wing", "ops", "--show", "1"]);
    assert!(dry.contains("ops: 11 drawers; 10 would move"), "{dry}");
    assert!(dry.contains("Dry run. Re-run with --yes"), "{dry}");
    assert_eq!(sandbox.json(&["status", "--json"])["taxonomy"]["ops"]["technical"], 5, "a dry run moves nothing");
    let applied = sandbox.ok(&["rooms", "apply", "--wing", "ops", "--yes"]);
    assert!(applied.contains("Moved 10 drawers"), "{applied}");
    let taxonomy = sandbox.json(&["status", "--json"])["taxonomy"]["ops"].clone();
    assert_eq!(taxonomy, json!({"billing": 5, "kubernetes": 5, "decisions": 1}), "{taxonomy}");
    assert!(sandbox.ok(&["rooms", "apply", "--wing", "ops", "--yes"]).contains("Nothing to change."));

    let unknown = sandbox.run(&["rooms", "apply", "--wing", "elsewhere"]);
    assert_eq!(code(&unknown), 2);
    assert!(text(&unknown.stderr).contains("rooms propose --wing elsewhere"), "{}", text(&unknown.stderr));
    let empty = sandbox.run(&["rooms", "propose", "--wing", "elsewhere"]);
    assert_eq!(code(&empty), 2, "{}", text(&empty.stderr));
}

fn rooms_apply_needs_an_embedding_model(store: Store) {
    let sandbox = Sandbox::on(store);
    for i in 0..4 {
        add(&sandbox, "w", "general", &format!("gardening note {i} about tomatoes and gardening"));
        add(&sandbox, "w", "general", &format!("cooking recipe {i} with pasta and more cooking"));
    }
    sandbox.ok(&["rooms", "propose", "--wing", "w"]);
    let output = sandbox.run(&["--embedder", "none", "rooms", "apply", "--wing", "w"]);
    assert_eq!(code(&output), 8, "{}", text(&output.stderr));
    assert!(text(&output.stderr).contains("model fetch"), "{}", text(&output.stderr));
}

/// A Claude Code session in project folder `cwd`.
fn session_file(sandbox: &Sandbox, name: &str, session: &str, cwd: &str) -> PathBuf {
    let lines: Vec<String> =
        [("user", "u", "How do we deploy project"), ("assistant", "a", "With the deploy script of")]
            .iter()
            .map(|(role, id, words)| {
                let words = format!("{words} {name}?");
                json!({"type": role, "uuid": format!("{session}-{id}"), "parentUuid": null, "sessionId": session,
                   "cwd": cwd, "timestamp": "2025-03-01T10:00:00Z",
                   "message": {"role": role, "content": words}})
                .to_string()
            })
            .collect();
    let path = sandbox.path(&format!("convos/{name}.jsonl"));
    write_lines(&path, &lines);
    path
}

fn wings_split_moves_a_transcript_wing_into_project_wings(store: Store) {
    let sandbox = Sandbox::on(store);
    add(&sandbox, "billing_api", "notes", "the billing api wing exists already");
    session_file(&sandbox, "one", "one", "/home/me/dev/billing-api");
    session_file(&sandbox, "two", "two", "/home/me/dev/Web Shop");
    let mined = sandbox.json(&[
        "mine",
        sandbox.path("convos").to_str().unwrap(),
        "--mode",
        "convos",
        "--wing",
        "claude",
        "--json",
    ]);
    let filed = mined["drawers_added"].as_u64().unwrap();
    assert_eq!(filed, 4, "a header and an exchange per session: {mined}");
    let plan = sandbox.ok(&["wings", "split", "--wing", "claude"]);
    assert!(plan.contains("claude: 2 source projects"), "{plan}");
    assert!(plan.contains("billing_api") && plan.contains("(existing)"), "{plan}");
    assert!(plan.contains("web_shop") && plan.contains("(derived)"), "{plan}");
    let path = saved_path(&plan);
    let mut saved: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(sandbox.json(&["status", "--json"])["wings"]["claude"], filed, "planning moves nothing");
    // The user renames a derived target in the plan before applying it.
    saved["projects"]["/home/me/dev/Web Shop"]["target"] = json!("shop");
    std::fs::write(&path, saved.to_string()).unwrap();
    let applied = sandbox.ok(&["wings", "split", "--wing", "claude", "--yes"]);
    assert!(applied.contains(&format!("Moved {filed} drawers into 2 wings")), "{applied}");
    let wings = sandbox.json(&["status", "--json"])["wings"].clone();
    assert!(wings.get("claude").is_none(), "{wings}");
    assert_eq!(wings["billing_api"].as_u64().unwrap() + wings["shop"].as_u64().unwrap(), filed + 1, "{wings}");
    let again = sandbox.ok(&["wings", "split", "--wing", "shop"]);
    assert!(again.contains("shop: 1 source projects"), "{again}");
}

fn init_takes_the_python_flags(store: Store) {
    let sandbox = Sandbox::on(store);
    let project = sandbox.path("acme");
    std::fs::create_dir_all(project.join("docs")).unwrap();
    std::fs::write(project.join("README.md"), "# Acme\n\nAcme keeps its deployment runbook in docs.\n").unwrap();
    std::fs::write(project.join("docs/runbook.md"), "Deploy with the blue-green script, then watch the dashboards.\n")
        .unwrap();
    let output = sandbox.run(&[
        "init",
        project.to_str().unwrap(),
        "--yes",
        "--lang",
        "en, pt-br,",
        "--llm-provider",
        "ollama",
        "--backend",
        "chroma",
        "--direct",
        "--auto-mine",
    ]);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    assert!(stdout.contains("languages: en, pt-br"), "{stdout}");
    assert!(stdout.contains("wrote ") && stdout.contains("mined "), "{stdout}");
    assert!(stderr.contains("no LLM path") && stderr.contains("--backend chroma is ignored"), "{stderr}");
    let config: Value =
        serde_json::from_str(&std::fs::read_to_string(sandbox.home().join(".mempalace/config.json")).unwrap()).unwrap();
    assert_eq!(config["entity_languages"], json!(["en", "pt-br"]));
    assert!(sandbox.total() >= 2, "the project was mined");
    assert!(project.join("mempalace.yaml").is_file());
    let lonely = sandbox.run(&["init", "--auto-mine"]);
    assert_eq!(code(&lonely), 2);
    // The saved languages keep config.json valid for every later command.
    assert!(sandbox.run(&["status"]).status.success());
}

on_both!(
    sweep_files_every_message_once_and_resumes_from_its_cursor,
    compress_keeps_aaak_summaries_in_the_drawer_context,
    repair_status_shows_the_derived_checks_and_vector_coverage,
    migrate_wings_normalises_names_keeping_ids_and_tunnels,
    audit_scores_the_palace_and_fails_under_a_threshold,
    rooms_propose_a_keyword_set_and_apply_it_by_vector,
    rooms_apply_needs_an_embedding_model,
    wings_split_moves_a_transcript_wing_into_project_wings,
    init_takes_the_python_flags,
);

/// A mega-file session: header, prompt, timestamp, filler lines.
fn session_text(prompt: &str, stamp: &str) -> String {
    let mut out = format!("╭────╮\n│ ✻ Welcome to Claude Code v1.0.0 │\n╰────╯\n\n> {prompt}\n\n{stamp}\n");
    for i in 0..10 {
        out.push_str(&format!("line {i}: Alice reviewed the change\n"));
    }
    out
}

#[test]
fn split_cuts_mega_files_into_sessions_and_keeps_the_original() {
    let sandbox = Sandbox::new();
    let dir = sandbox.path("transcripts");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(sandbox.home().join(".mempalace")).unwrap();
    std::fs::write(sandbox.home().join(".mempalace/known_names.json"), r#"["Alice"]"#).unwrap();
    let mega = format!(
        "{}{}",
        session_text("Fix the login bug", "⏺ 9:41 AM Monday, March 30, 2026"),
        session_text("Write the release notes", "⏺ 2:05 PM Tuesday, March 31, 2026")
    );
    std::fs::write(dir.join("all.txt"), &mega).unwrap();
    std::fs::write(dir.join("single.txt"), session_text("Only one session", "")).unwrap();
    let dir_arg = dir.to_str().unwrap();

    let dry = sandbox.ok(&["split", dir_arg, "--dry-run"]);
    assert!(dry.contains("Mega-file splitter -- DRY RUN") && dry.contains("Mega-files:  1"), "{dry}");
    assert!(dry.contains("  [1/2] all_2026-03-30_941AM_Alice_Fix-the-login-bug.txt  (18 lines)"), "{dry}");
    assert!(dry.contains("DRY RUN -- would create 2 files from 1 mega-files"), "{dry}");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 2, "a dry run writes nothing");

    let done = sandbox.ok(&["split", dir_arg]);
    assert!(done.contains("  + all_2026-03-31_205PM_Alice_Write-the-release-notes.txt  (16 lines)"), "{done}");
    assert!(done.contains("-> Original renamed to all.mega_backup") && done.contains("Done -- created 2 files"));
    let first = std::fs::read_to_string(dir.join("all_2026-03-30_941AM_Alice_Fix-the-login-bug.txt")).unwrap();
    let second = std::fs::read_to_string(dir.join("all_2026-03-31_205PM_Alice_Write-the-release-notes.txt")).unwrap();
    assert_eq!(first + &second, mega, "the sessions are the original, cut");
    assert_eq!(std::fs::read_to_string(dir.join("all.mega_backup")).unwrap(), mega);
    assert!(!dir.join("all.txt").exists());
    assert!(dir.join("single.txt").exists(), "one session is not a mega-file");
    assert!(sandbox.ok(&["split", dir_arg]).contains("No mega-files found in"));

    let out_dir = sandbox.path("parts");
    std::fs::write(dir.join("again.txt"), &mega).unwrap();
    sandbox.ok(&["split", dir_arg, "--output-dir", out_dir.to_str().unwrap()]);
    assert_eq!(std::fs::read_dir(&out_dir).unwrap().count(), 2);
    let missing = sandbox.run(&["split", sandbox.path("nowhere").to_str().unwrap()]);
    assert_eq!(code(&missing), 2);
}
