//! Mining and sync through the library, one file per call, on a real
//! SQLite palace (no embedder: miners file verbatim text, so vectors are
//! not needed to check what is filed, kept and removed). The binary's
//! tests (`crates/mempalace/tests/it/mine.rs`) cover the same on both
//! stores through the command line.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mempalace_core::exchange::PRECEDED_BY;
use mempalace_core::{MemoryType, Room, Timestamp, WorkspaceId};
use mempalace_engine::Palace;
use mempalace_engine::drawers::SourceFiling;
use mempalace_feed::sync::{SyncOptions, sync};
use mempalace_feed::{
    Extract, FeedError, MineOptions, Mode, Selection, TranscriptOptions, TranscriptOutcome, mine, mine_transcript,
};
use mempalace_sqlite::{SqliteOptions, SqliteStore};
use serde_json::json;

fn palace(dir: &Path) -> Palace {
    let store = SqliteStore::open(&dir.join("palace.db"), SqliteOptions { create: true, ..SqliteOptions::default() })
        .expect("open the palace");
    Palace::new(Arc::new(store), WorkspaceId::default_workspace())
}

fn transcript_options() -> TranscriptOptions {
    TranscriptOptions::new(Room::parse("conversations").unwrap(), "test")
}

fn filing(outcome: &TranscriptOutcome) -> SourceFiling {
    match outcome {
        TranscriptOutcome::Mined { filing, .. } => *filing,
        other => panic!("not mined: {other:?}"),
    }
}

fn total(palace: &Palace) -> u64 {
    palace.status().unwrap().taxonomy.total_drawers
}

/// A Claude Code record in a `parentUuid` chain.
fn claude_line(kind: &str, uuid: &str, parent: Option<&str>, text: &str) -> String {
    let content = if kind == "user" { json!(text) } else { json!([{"type": "text", "text": text}]) };
    json!({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "feed-1",
        "cwd": "/home/sam/feed", "timestamp": "2025-02-01T09:00:00.000Z",
        "message": {"id": format!("m-{uuid}"), "role": kind, "content": content}})
    .to_string()
}

fn session(file: &Path, exchanges: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut parent: Option<String> = None;
    for n in 0..exchanges {
        let (u, a) = (format!("u{n}"), format!("a{n}"));
        lines.push(claude_line(
            "user",
            &u,
            parent.as_deref(),
            &format!("Question {n}: how is the rover's arm {n} tuned?"),
        ));
        lines.push(claude_line("assistant", &a, Some(&u), &format!("Answer {n}: arm {n} runs at torque {n}0 Nm.")));
        parent = Some(a);
    }
    std::fs::write(file, lines.join("\n") + "\n").unwrap();
    lines
}

fn append(file: &Path, lines: &[String]) {
    let mut out = std::fs::OpenOptions::new().append(true).open(file).unwrap();
    for line in lines {
        writeln!(out, "{line}").unwrap();
    }
}

/// One file per call: filed once, unchanged after, its tail later; a dry
/// run first says exactly what the real run then does.
#[test]
fn a_transcript_is_filed_once_then_only_its_tail() {
    let dir = tempfile::tempdir().unwrap();
    let palace = palace(dir.path());
    let file = dir.path().join("feed-1.jsonl");
    session(&file, 5);
    let dry = TranscriptOptions { dry_run: true, ..transcript_options() };
    let planned = filing(&mine_transcript(&palace, &file, &dry).unwrap());
    assert_eq!(planned, SourceFiling { added: 6, unchanged: 0, removed: 0 }, "a header and five exchanges");
    assert_eq!(total(&palace), 0, "a dry run writes nothing");
    let first = filing(&mine_transcript(&palace, &file, &transcript_options()).unwrap());
    assert_eq!(first, planned, "the run does what the dry run said");
    let again = filing(&mine_transcript(&palace, &file, &transcript_options()).unwrap());
    assert_eq!(again, SourceFiling { added: 0, unchanged: 6, removed: 0 });
    assert_eq!(filing(&mine_transcript(&palace, &file, &dry).unwrap()), again, "a dry run reads the cursor too");

    append(
        &file,
        &[
            claude_line("user", "n1", Some("a4"), "Log the new gripper firmware version 2.4.1 please"),
            claude_line("assistant", "n2", Some("n1"), "Logged gripper firmware 2.4.1 in the maintenance notes."),
        ],
    );
    let planned = filing(&mine_transcript(&palace, &file, &dry).unwrap());
    let grown = filing(&mine_transcript(&palace, &file, &transcript_options()).unwrap());
    assert_eq!((grown.added, grown.removed), (1, 0), "only the new exchange");
    assert_eq!((planned.added, planned.removed), (grown.added, grown.removed), "planned as filed");
    assert_eq!(total(&palace), 7);

    // Each exchange names the exchange before it (its vector is made from
    // both; the engine's tests check the vectors), the tail's too; the
    // header and the first exchange name none.
    let page = palace.page_drawers(None, None, 0, 500).unwrap();
    let by_text = |start: &str| page.drawers.iter().find(|d| d.content.as_str().starts_with(start)).unwrap();
    let preceded = |start: &str| by_text(start).context.get(PRECEDED_BY).and_then(|v| v.as_str()).map(str::to_string);
    assert_eq!(preceded("user: Question 0:"), None);
    assert_eq!(preceded("Conversation: "), None, "the header is not an exchange");
    for n in 1..5 {
        let before = by_text(&format!("user: Question {}:", n - 1)).id.to_string();
        assert_eq!(preceded(&format!("user: Question {n}:")), Some(before), "exchange {n}");
    }
    let last = by_text("user: Question 4:").id.to_string();
    assert_eq!(preceded("user: Log the new gripper"), Some(last), "the tail's exchange");
}

/// A changed file's drawers are replaced; the dry run says so first.
#[test]
fn a_rewritten_transcript_is_replaced_and_the_dry_run_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let palace = palace(dir.path());
    let file = dir.path().join("feed-1.jsonl");
    let lines = session(&file, 4);
    mine_transcript(&palace, &file, &transcript_options()).unwrap();
    let mut changed = lines.clone();
    changed[3] = claude_line("assistant", "a1", Some("u1"), "Answer 1 corrected: arm 1 runs at torque 12 Nm.");
    std::fs::write(&file, changed.join("\n") + "\n").unwrap();
    let dry = TranscriptOptions { dry_run: true, ..transcript_options() };
    let planned = filing(&mine_transcript(&palace, &file, &dry).unwrap());
    assert_eq!(planned, SourceFiling { added: 1, unchanged: 4, removed: 1 });
    assert_eq!(filing(&mine_transcript(&palace, &file, &transcript_options()).unwrap()), planned);
    assert_eq!(total(&palace), 5);
}

/// `--session`, `--since` and `--min-messages` pick conversations; a
/// filtered run files what it picked and removes nothing.
#[test]
fn a_selection_files_what_it_picks_and_removes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let palace = palace(dir.path());
    let file = dir.path().join("conversations.json");
    std::fs::copy(mempalace_testdata::fixture("transcripts/chatgpt/conversations.json"), &file).unwrap();
    let only = |selection: Selection| TranscriptOptions { selection, ..transcript_options() };
    let heater =
        only(Selection { session: Some("67863a2e-1c4b-8008-a1f2-9b3c5d7e1f20".into()), ..Selection::default() });
    let picked = mine_transcript(&palace, &file, &heater).unwrap();
    let TranscriptOutcome::Mined { filing, conversations_skipped, .. } = picked else { panic!("{picked:?}") };
    // The export's third record has no messages and is no conversation.
    assert_eq!((filing.added, conversations_skipped), (3, 1), "the heater conversation: a header and two exchanges");
    let whole = filing_of(mine_transcript(&palace, &file, &transcript_options()).unwrap());
    assert_eq!((whole.added, whole.unchanged), (2, 3), "the packing list joins; the heater drawers were there");
    let again = filing_of(mine_transcript(&palace, &file, &heater).unwrap());
    assert_eq!((again.added, again.removed), (0, 0), "a filtered run removes nothing");
    let future = only(Selection { since: Some(ts("2099-01-01T00:00:00Z")), ..Selection::default() });
    let none = mine_transcript(&palace, &file, &future).unwrap();
    let TranscriptOutcome::Mined { conversations_skipped, .. } = none else { panic!("{none:?}") };
    assert_eq!(conversations_skipped, 2);
    let long = only(Selection { min_messages: Some(1000), ..Selection::default() });
    assert_eq!(filing_of(mine_transcript(&palace, &file, &long).unwrap()).added, 0);
    assert_eq!(total(&palace), 5);
}

fn filing_of(outcome: TranscriptOutcome) -> SourceFiling {
    filing(&outcome)
}

fn ts(text: &str) -> Timestamp {
    mempalace_core::time::parse_timestamp(text, "t", mempalace_core::time::DayEdge::Start).unwrap()
}

/// `--extract general` files the decisions and problems of a conversation
/// in rooms named by their type.
#[test]
fn general_extraction_files_memories_by_type() {
    let dir = tempfile::tempdir().unwrap();
    let palace = palace(dir.path());
    let file = dir.path().join("chat.txt");
    std::fs::write(
        &file,
        "> We decided to go with PostgreSQL instead of MongoDB because we need transactions.\n\
         Good call; PostgreSQL handles that well.\n\n\
         > The deploy keeps failing with a timeout error in the health check.\n\
         The root cause is the load balancer probing the wrong port.\n",
    )
    .unwrap();
    let options = MineOptions { extract: Extract::General, ..MineOptions::new(Mode::Convos) };
    let report = mine(&palace, Some(&file), None, &options, &mut |_, _, _| {}).unwrap();
    assert!(report.drawers_added >= 2, "{report:?}");
    let taxonomy = palace.status().unwrap().taxonomy;
    let rooms: Vec<String> = taxonomy.wings.values().flat_map(|wing| wing.rooms.keys().cloned()).collect();
    assert!(rooms.contains(&"decision".to_string()) && rooms.contains(&"problem".to_string()), "{rooms:?}");
    let page = palace.page_drawers(None, None, 0, 10).unwrap();
    assert!(page.drawers.iter().all(|d| d.memory_type.is_some_and(|t| t != MemoryType::Fact)), "{page:?}");
}

/// Files that are not transcripts are listed with the reason; a run of
/// nothing but such files fails.
#[test]
fn skipped_files_are_reported_with_their_reason() {
    let dir = tempfile::tempdir().unwrap();
    let palace = palace(dir.path());
    let folder = dir.path().join("mixed");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("notes.txt"), "just some notes without any markers at all").unwrap();
    std::fs::write(folder.join("settings.json"), r#"{"theme": "dark"}"#).unwrap();
    session(&folder.join("feed-1.jsonl"), 2);
    let report = mine(&palace, Some(&folder), None, &MineOptions::new(Mode::Convos), &mut |_, _, _| {}).unwrap();
    assert_eq!((report.files, report.read, report.drawers_added), (3, 1, 3), "{report:?}");
    let skipped: Vec<&str> = report.skipped.iter().map(|s| s.error.as_str()).collect();
    assert_eq!(skipped.len(), 2, "{report:?}");
    assert!(skipped.iter().any(|reason| reason.contains("`>` user lines")), "{skipped:?}");
    std::fs::remove_file(folder.join("feed-1.jsonl")).unwrap();
    let error = mine(&palace, Some(&folder), None, &MineOptions::new(Mode::Convos), &mut |_, _, _| {}).unwrap_err();
    assert!(matches!(error, FeedError::NothingMined(_)), "{error}");
}

fn write(root: &Path, relative: &str, text: &str) -> PathBuf {
    let file = root.join(relative);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, text).unwrap();
    file
}

/// `sync` previews unless told to apply; applying needs a wing or a
/// project; gitignored and deleted files go, files of a vanished folder
/// and hand-filed drawers stay.
#[test]
fn sync_previews_by_default_and_applies_only_when_scoped() {
    let dir = tempfile::tempdir().unwrap();
    let palace = palace(dir.path());
    let root = dir.path().join("lab");
    write(&root, ".gitignore", "secret/\n");
    write(&root, "README.md", "# Lab\n\nThe lab keeps its robots here.\n");
    write(&root, "docs/procedures.md", "Balance the centrifuge before each run.\n");
    write(&root, "docs/old/notes.md", "Old notes about the first robot arm.\n");
    write(&root, "build.log.md", "A build log that will be ignored later.\n");
    let report = mine(&palace, Some(&root), None, &MineOptions::new(Mode::Projects), &mut |_, _, _| {}).unwrap();
    assert_eq!(report.drawers_added, 4, "{report:?}");
    let by_hand = mempalace_engine::IngestRequest::new(
        mempalace_core::Wing::parse("lab").unwrap(),
        Room::parse("notes").unwrap(),
        "A note filed by hand, with no source file.",
        "test",
    );
    palace.ingest(by_hand).unwrap();

    std::fs::remove_file(root.join("docs/procedures.md")).unwrap();
    std::fs::remove_dir_all(root.join("docs/old")).unwrap();
    write(&root, ".gitignore", "secret/\n*.log.md\n");

    let preview = sync(&palace, &SyncOptions::default()).unwrap();
    assert!(preview.dry_run);
    assert_eq!(
        (preview.scanned, preview.kept, preview.gitignored, preview.missing, preview.unresolved),
        (5, 1, 1, 1, 1),
        "{preview:?}"
    );
    assert_eq!(preview.no_source, 1, "the hand-filed drawer");
    assert_eq!(preview.removed_drawers, 0);
    assert_eq!(total(&palace), 5, "a preview removes nothing");

    let unscoped = sync(&palace, &SyncOptions { apply: true, ..SyncOptions::default() }).unwrap_err();
    assert!(unscoped.to_string().contains("--wing"), "{unscoped}");

    let elsewhere = dir.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let out = sync(&palace, &SyncOptions { roots: vec![elsewhere], apply: true, ..SyncOptions::default() }).unwrap();
    assert_eq!((out.out_of_scope, out.removed_drawers), (4, 0), "{out:?}");

    let applied =
        sync(&palace, &SyncOptions { roots: vec![root.clone()], apply: true, ..SyncOptions::default() }).unwrap();
    assert_eq!(applied.removed_drawers, 2, "{applied:?}");
    assert_eq!(applied.by_source.len(), 2);
    assert_eq!(total(&palace), 3, "the README, the unresolved notes and the hand-filed note stay");
}

/// Issue 15: `mempalace.yaml` is read by a YAML parser into strict structs:
/// quoted commas and inline comments are read as YAML says, an unknown key
/// is an error naming it, `exclude_patterns` leave files out, and the
/// Python MemPalace's other file names are found.
#[test]
fn project_config_is_parsed_strictly_and_exclude_patterns_apply() {
    let dir = tempfile::tempdir().unwrap();
    let palace = palace(dir.path());
    let root = dir.path().join("lab");
    write(
        &root,
        "mempalace.yml",
        "wing: lab # the lab's wing\nrooms:\n  - name: hardware\n    keywords: ['gripper, arm', servo]\n  - name: general\nexclude_patterns:\n  - \"*.log.md\"\n  - drafts/\n",
    );
    write(&root, "notes/gripper, arm tuning.md", "Tuned the force limit to 12.5 N.\n");
    write(&root, "notes/run.log.md", "A build log nobody wants filed.\n");
    write(&root, "drafts/idea.md", "A half-written idea.\n");
    write(&root, "README.md", "# Lab\n\nThe lab keeps its robots here.\n");
    let report = mine(&palace, Some(&root), None, &MineOptions::new(Mode::Projects), &mut |_, _, _| {}).unwrap();
    assert_eq!((report.files, report.wing.as_deref()), (2, Some("lab")), "{report:?}");
    let taxonomy = palace.status().unwrap().taxonomy;
    assert_eq!(taxonomy.wings["lab"].rooms.get("hardware"), Some(&1), "a quoted comma stays in the keyword");

    write(&root, "mempalace.yml", "wing: lab\nroms:\n  - name: hardware\n");
    let error = mine(&palace, Some(&root), None, &MineOptions::new(Mode::Projects), &mut |_, _, _| {}).unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("roms") && message.contains("mempalace.yml") && message.contains("mempalace init"),
        "{message}"
    );
}

/// Every drawer: (wing, room, content).
fn drawers(palace: &Palace) -> Vec<(String, String, String)> {
    let page = palace.page_drawers(None, None, 0, 500).unwrap();
    page.drawers.iter().map(|d| (d.wing.to_string(), d.room.to_string(), d.content.as_str().to_string())).collect()
}

fn mine_convos(palace: &Palace, path: &Path) -> mempalace_feed::MineReport {
    mine(palace, Some(path), None, &MineOptions::new(Mode::Convos), &mut |_, _, _| {}).unwrap()
}

/// Zips a folder as an export download does (entries relative to it),
/// plus the extra entries given.
fn zip_folder(folder: &Path, into: &Path, extra: &[(&str, &[u8])]) {
    let file = std::fs::File::create(into).unwrap();
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    let mut files = Vec::new();
    let mut stack = vec![folder.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() { stack.push(path) } else { files.push(path) }
        }
    }
    files.sort();
    for path in files {
        let name = path.strip_prefix(folder).unwrap().to_string_lossy().replace('\\', "/");
        zip.start_file(name, options).unwrap();
        zip.write_all(&std::fs::read(&path).unwrap()).unwrap();
    }
    for (name, bytes) in extra {
        zip.start_file(*name, options).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
}

const CLAUDE_BUNDLE: &str = "bundles/claude-ai-2025-07";

/// Issue 22: a Claude.ai export unpacked as its zip unpacks
/// (`conversations.json`, `projects.json`, `users.json`, `memories.json`)
/// is mined whole: every conversation, each project's instructions and
/// documents in the project's wing, Claude's memories; the account file is
/// reported as skipped with what it holds; thinking stays out.
#[test]
fn a_claude_ai_bundle_folder_is_mined_whole() {
    let dir = tempfile::tempdir().unwrap();
    let palace = palace(dir.path());
    let report = mine_convos(&palace, &mempalace_testdata::fixture(CLAUDE_BUNDLE));
    assert_eq!((report.files, report.read), (4, 3), "{report:?}");
    assert_eq!(report.skipped.len(), 1, "{report:?}");
    assert!(report.skipped[0].file.ends_with("users.json") && report.skipped[0].error.contains("account details"));
    // Conversations: header + 2 and header + 1 (as mined alone); the
    // project: its instructions and two documents (the empty starter
    // project is left out); memories: the account's and two projects'.
    assert_eq!(report.drawers_added, 5 + 3 + 3, "{report:?}");
    assert_eq!(report.records_skipped, 1 + 1, "the empty conversation and the empty starter project");

    let all = drawers(&palace);
    let find = |needle: &str| {
        all.iter().find(|(_, _, text)| text.contains(needle)).unwrap_or_else(|| panic!("{needle}: {all:#?}"))
    };
    let project = find("Instructions:\nAnswer in metric units.");
    assert_eq!((project.0.as_str(), project.1.as_str()), ("greenhouse_automation", "project"));
    assert!(project.2.starts_with("Project: Greenhouse automation\nDescription: Irrigation controller"));
    assert!(project.2.contains("Documents: valve-wiring.md, watering-log.csv"));
    let doc = find("Zone 1 (tomatoes) is relay 3");
    assert_eq!((doc.0.as_str(), doc.1.as_str()), ("greenhouse_automation", "documents"));
    let account = find("prefers metric units");
    assert_eq!((account.0.as_str(), account.1.as_str()), ("conversations", "memories"));
    let project_memory = find("waters zone 1 every morning");
    assert_eq!((project_memory.0.as_str(), project_memory.1.as_str()), ("greenhouse_automation", "memories"));
    let orphan = find("no longer exists");
    assert_eq!(orphan.0, "conversations", "a memory of an unknown project stays with the conversations");
    assert!(all.iter().all(|(_, _, text)| !text.contains("six bags in full sun")), "thinking is never filed: {all:#?}");
    assert!(all.iter().all(|(_, _, text)| !text.contains("robin@example.org")), "account details are not filed");

    // Again: nothing new, nothing read twice.
    let again = mine_convos(&palace, &mempalace_testdata::fixture(CLAUDE_BUNDLE));
    assert_eq!((again.drawers_added, again.drawers_removed, again.drawers_unchanged), (0, 0, 11), "{again:?}");
}

/// Issue 22: the same bundle as the downloaded zip files the same drawers;
/// unchanged entries are not read again; an entry gone from a new
/// download takes its drawers with it; `sync` judges entries by their
/// archive; OS artefacts are left out and other files listed.
#[test]
fn a_bundle_zip_is_mined_like_its_folder_and_incrementally() {
    let dir = tempfile::tempdir().unwrap();
    let palace = palace(dir.path());
    let bundle = mempalace_testdata::fixture(CLAUDE_BUNDLE);
    let downloads = dir.path().join("downloads");
    std::fs::create_dir_all(&downloads).unwrap();
    let archive = downloads.join("data-2025-07-03-10-11-12.zip");
    zip_folder(&bundle, &archive, &[("__MACOSX/._conversations.json", b"\0\x05\x16\x07"), ("avatar.png", b"\x89PNG")]);

    let report = mine_convos(&palace, &archive);
    assert_eq!((report.read, report.drawers_added), (3, 11), "{report:?}");
    let skipped: Vec<(&str, &str)> =
        report.skipped.iter().map(|s| (s.file.rsplit('#').next().unwrap(), s.error.as_str())).collect();
    assert_eq!(skipped.len(), 2, "{skipped:?}");
    assert!(skipped.contains(&("avatar.png", "not a transcript format (.png): not read")), "{skipped:?}");
    assert!(skipped.iter().any(|(file, why)| *file == "users.json" && why.contains("account details")));
    let sources = palace.sources(None).unwrap();
    assert!(sources.keys().all(|s| s.contains(".zip#")), "{:?}", sources.keys());

    let again = mine_convos(&palace, &downloads);
    assert_eq!((again.drawers_added, again.drawers_unchanged), (0, 11), "{again:?}");

    // A newer download without memories.json.
    let trimmed = dir.path().join("trimmed");
    std::fs::create_dir_all(&trimmed).unwrap();
    for name in ["conversations.json", "projects.json", "users.json"] {
        std::fs::copy(bundle.join(name), trimmed.join(name)).unwrap();
    }
    zip_folder(&trimmed, &archive, &[]);
    let plan = mine(
        &palace,
        Some(&archive),
        None,
        &MineOptions { dry_run: true, ..MineOptions::new(Mode::Convos) },
        &mut |_, _, _| {},
    )
    .unwrap();
    assert_eq!((plan.drawers_added, plan.drawers_removed), (0, 3), "{plan:?}");
    assert_eq!(total(&palace), 11, "a dry run removes nothing");
    let newer = mine_convos(&palace, &archive);
    assert_eq!((newer.drawers_added, newer.drawers_removed), (0, 3), "{newer:?}");
    assert_eq!(total(&palace), 8);

    let kept = sync(&palace, &SyncOptions::default()).unwrap();
    assert_eq!((kept.kept, kept.missing, kept.unresolved), (8, 0, 0), "{kept:?}");
    std::fs::remove_file(&archive).unwrap();
    let gone = sync(&palace, &SyncOptions::default()).unwrap();
    assert_eq!(gone.missing, 8, "{gone:?}");
}

/// Issue 22: a Slack export and a Google Takeout of Gemini Apps activity,
/// each as its zip; a broken archive is reported, not fatal.
#[test]
fn slack_and_takeout_zips_and_a_broken_archive() {
    let dir = tempfile::tempdir().unwrap();
    let palace = palace(dir.path());
    let downloads = dir.path().join("downloads");
    std::fs::create_dir_all(&downloads).unwrap();
    zip_folder(&mempalace_testdata::fixture("transcripts/slack"), &downloads.join("slack.zip"), &[]);
    zip_folder(&mempalace_testdata::fixture("bundles/google-takeout"), &downloads.join("takeout-20250913.zip"), &[]);
    std::fs::write(downloads.join("broken.zip"), b"PK\x03\x04 this is not really an archive").unwrap();

    let report = mine_convos(&palace, &downloads);
    assert_eq!(report.failed.len(), 1, "{report:?}");
    assert!(report.failed[0].file.ends_with("broken.zip") && report.failed[0].error.contains("not a readable zip"));
    let all = drawers(&palace);
    // Slack as from its folder: 6 drawers in the export's wing.
    let slack: Vec<_> = all.iter().filter(|(wing, _, _)| wing == "greenhouse_team").collect();
    assert_eq!(slack.len(), 6, "{all:#?}");
    // Takeout: two days with prompts (feedback skipped): header + 1 and
    // header + 2, answers as text (the regenerated answer, lists, entities).
    let texts: Vec<&str> = all.iter().map(|(_, _, text)| text.as_str()).collect();
    for expected in [
        "user: Best way to clean oxo coffee maker\nassistant: Descaling\n\n- Fill the tank with equal parts white vinegar \
         & water.\n- Run a full brew cycle.\n\nWipe the shower head with a damp cloth.",
        "user: how long should the descaler soak?\nassistant: Let it soak for 15–20 minutes, then run two cycles of plain \
         water.",
        "user: what is a flyback diode for?\nassistant: It gives the coil's current a path when the relay switches off, so \
         the voltage spike does not destroy the transistor.",
        "Conversation: Gemini Apps, 2025-09-12\nDate: 2025-09-12\nSession: MyActivity-2025-09-12",
    ] {
        assert!(texts.contains(&expected), "{expected}\nnot in {texts:#?}");
    }
    assert!(report.skipped.iter().any(|s| s.file.ends_with("relay_board-1e98.png")), "{report:?}");
    assert_eq!(report.drawers_added, 6 + 5, "{report:?}");
}

/// Adds an exchange (a user and an assistant message with a text part
/// each) to an opencode session.
fn opencode_exchange(conn: &rusqlite::Connection, session: &str, n: usize) {
    let at = 1_760_000_000_000_i64 + n as i64 * 1000;
    for (role, text) in
        [("user", format!("Question {n} about the arm")), ("assistant", format!("Answer {n}: recalibrate"))]
    {
        let id = format!("msg_{session}_{n}_{role}");
        conn.execute(
            "INSERT INTO message VALUES (?1, ?2, ?3, ?3, ?4)",
            rusqlite::params![id, session, at, json!({"role": role}).to_string()],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO part VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
            rusqlite::params![format!("prt_{id}"), id, session, at, json!({"type": "text", "text": text}).to_string()],
        )
        .unwrap();
    }
}

/// Issue 22: opencode's database is read while opencode writes to it (WAL
/// mode): an open write transaction hides its session without blocking
/// the read; a writer committing exchanges in a loop never makes a read
/// fail, and each read sees a consistent, growing session.
#[test]
fn opencode_sessions_are_read_while_opencode_writes() {
    let dir = tempfile::tempdir().unwrap();
    let palace = palace(dir.path());
    let db = mempalace_testdata::opencode_db(dir.path());
    let writer = rusqlite::Connection::open(&db).unwrap();
    let mode: String = writer.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)).unwrap();
    assert_eq!(mode, "wal");
    let options = transcript_options();

    writer.execute_batch("BEGIN IMMEDIATE").unwrap();
    writer
        .execute(
            "INSERT INTO session (id, project_id, slug, directory, title, version, time_created, time_updated) \
             VALUES ('ses_live', 'prj_4f1c', 'live-arm', '/home/alex/arm', 'Arm tuning', '1.2.3', 1760000000000, 1760000000000)",
            [],
        )
        .unwrap();
    for n in 0..2 {
        opencode_exchange(&writer, "ses_live", n);
    }
    let rover = mempalace_feed::mine_opencode_session(&palace, &db, "ses_rover", &options).unwrap();
    assert!(filing(&rover).added > 0, "{rover:?}");
    let hidden = mempalace_feed::mine_opencode_session(&palace, &db, "ses_live", &options).unwrap();
    assert!(matches!(hidden, TranscriptOutcome::NotTranscript(_)), "uncommitted: {hidden:?}");
    writer.execute_batch("COMMIT").unwrap();
    let live = mempalace_feed::mine_opencode_session(&palace, &db, "ses_live", &options).unwrap();
    assert_eq!(filing(&live).added, 3, "header and two exchanges: {live:?}");

    let db_for_writer = db.clone();
    // Reads done so far: the writer waits for one every 16 commits, so at
    // least five reads overlap the writes however the threads are scheduled.
    let reads = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let reads_seen = std::sync::Arc::clone(&reads);
    let writing = std::thread::spawn(move || {
        let conn = rusqlite::Connection::open(&db_for_writer).unwrap();
        conn.busy_timeout(std::time::Duration::from_secs(10)).unwrap();
        for n in 2..80 {
            if (n - 2) % 16 == 0 {
                while reads_seen.load(std::sync::atomic::Ordering::SeqCst) < (n - 2) / 16 + 1 {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
            conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            opencode_exchange(&conn, "ses_live", n);
            conn.execute_batch("COMMIT").unwrap();
            if n % 10 == 0 {
                conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
            }
            // An agent's pace: reads interleave with the commits.
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
    });
    let mut seen = Vec::new();
    while !writing.is_finished() {
        match mempalace_feed::mine_opencode_session(&palace, &db, "ses_live", &options).unwrap() {
            TranscriptOutcome::Mined { human_messages, .. } => seen.push(human_messages),
            other => panic!("{other:?}"),
        }
        reads.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
    writing.join().unwrap();
    assert!(seen.len() >= 5, "reads overlapped the writes: {seen:?}");
    assert!(seen.windows(2).all(|w| w[0] <= w[1]), "a growing session: {seen:?}");
    let TranscriptOutcome::Mined { human_messages, filing, .. } =
        mempalace_feed::mine_opencode_session(&palace, &db, "ses_live", &options).unwrap()
    else {
        panic!("the session is there")
    };
    assert_eq!(human_messages, 80);
    let stored = palace
        .sources(None)
        .unwrap()
        .iter()
        .filter(|(s, _)| s.ends_with("#ses_live"))
        .map(|(_, d)| d.len())
        .sum::<usize>();
    assert_eq!(stored, 81, "a header and 80 exchanges, each once: {filing:?}");
}

/// The team's real export samples (`fixtures/formats/` of the shared
/// data) as downloads: each format's folder zipped and mined files exactly
/// what the folder files, and mining the archive again files nothing.
mod real_data {
    use super::*;

    #[test]
    fn real_exports_mine_the_same_from_a_zip_as_from_their_folder() {
        for format in ["claude-ai", "chatgpt", "slack"] {
            let folder = mempalace_testdata::shared("fixtures/formats").join(format);
            let dir = tempfile::tempdir().unwrap();
            for side in ["a", "b"] {
                std::fs::create_dir_all(dir.path().join(side)).unwrap();
            }
            let unpacked = palace(&dir.path().join("a"));
            let from_folder = mine_convos(&unpacked, &folder);
            let archive = dir.path().join(format!("{format}-export.zip"));
            zip_folder(&folder, &archive, &[]);
            let zipped = palace(&dir.path().join("b"));
            let from_zip = mine_convos(&zipped, &archive);
            assert!(from_folder.drawers_added > 0, "{format}: {from_folder:?}");
            assert_eq!(
                (from_zip.drawers_added, from_zip.read, from_zip.failed.len()),
                (from_folder.drawers_added, from_folder.read, from_folder.failed.len()),
                "{format}: the zip files what the folder files\nfolder {from_folder:?}\nzip {from_zip:?}"
            );
            let texts = |p: &Palace| {
                let mut t: Vec<String> = drawers(p).into_iter().map(|(_, _, text)| text).collect();
                t.sort();
                t
            };
            assert_eq!(texts(&zipped), texts(&unpacked), "{format}: the same drawers");
            let again = mine_convos(&zipped, &archive);
            assert_eq!(again.drawers_added, 0, "{format}: {again:?}");
        }
    }
}

/// Issue 18: GoClaw memory files (`MEMORY.md`, `memory/*.md`) as memory,
/// kept in sync both ways, on both stores.
mod memory_files {
    use std::path::Path;
    use std::sync::Arc;

    use mempalace_core::{Content, DrawerStatus, WorkspaceId};
    use mempalace_engine::drawers::DrawerUpdate;
    use mempalace_engine::{DeleteMode, EngineError, Palace};
    use mempalace_feed::memory::{self, MemoryNote, MemorySyncOptions, NoteTarget};
    use mempalace_feed::{FeedError, MineOptions, Mode, mine};
    use mempalace_store::DrawerFilter;

    /// Keeps a palace's directory or schema alive.
    #[allow(dead_code)]
    enum Fixture {
        Dir(tempfile::TempDir),
        Schema(mempalace_postgres::testing::TestSchema),
    }

    fn palace(postgres: bool) -> Option<(Fixture, Palace)> {
        let (fixture, store): (Fixture, Arc<dyn mempalace_store::Store>) = if postgres {
            let schema = mempalace_postgres::testing::TestSchema::on_test_server()?;
            let store = schema.open();
            (Fixture::Schema(schema), Arc::new(store))
        } else {
            let dir = tempfile::tempdir().unwrap();
            let options = mempalace_sqlite::SqliteOptions { create: true, ..Default::default() };
            let store = mempalace_sqlite::SqliteStore::open(&dir.path().join("palace.db"), options).unwrap();
            (Fixture::Dir(dir), Arc::new(store))
        };
        Some((fixture, Palace::new(store, WorkspaceId::default_workspace())))
    }

    macro_rules! on_both {
        ($($name:ident),+ $(,)?) => {
            mod sqlite { $( #[test] fn $name() { super::$name(false) } )+ }
            mod postgres {
                $( #[test] fn $name() {
                    if mempalace_postgres::testing::server().is_some() { super::$name(true) }
                } )+
            }
        };
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
        // A later write must change the time the sync compares, whatever the
        // file system's clock granularity.
        let when = std::time::SystemTime::now() + std::time::Duration::from_secs(rand_offset(path));
        std::fs::File::options().write(true).open(path).unwrap().set_modified(when).unwrap();
    }

    /// A different modification time for each write of a file.
    fn rand_offset(path: &Path) -> u64 {
        use std::sync::atomic::{AtomicU64, Ordering};
        static COUNTER: AtomicU64 = AtomicU64::new(1);
        COUNTER.fetch_add(1, Ordering::Relaxed) + path.as_os_str().len() as u64
    }

    fn sync(palace: &Palace, root: &Path) -> memory::MemorySyncReport {
        memory::sync(palace, root, &MemorySyncOptions::default()).expect("sync")
    }

    /// The memory drawers of a file, in file order: (id, text, lines).
    fn drawers_of(palace: &Palace, file: &Path) -> Vec<(String, String, (u32, u32))> {
        drawers_seen_by(palace, file, None)
    }

    fn drawers_seen_by(palace: &Palace, file: &Path, viewer: Option<&str>) -> Vec<(String, String, (u32, u32))> {
        let source = file.canonicalize().unwrap().display().to_string();
        let viewer = viewer.map(str::to_string);
        let filter = DrawerFilter { source_file: Some(source), viewer, ..Default::default() };
        let ids = palace.store().filtered_ids(palace.workspace(), &filter).unwrap();
        let mut drawers = palace.store().drawers(palace.workspace(), &ids).unwrap();
        drawers.sort_by_key(|d| d.chunk_index);
        drawers
            .into_iter()
            .map(|d| (d.id.to_string(), d.content.as_str().to_string(), (d.line_start.unwrap(), d.line_end.unwrap())))
            .collect()
    }

    const MAIN: &str = "# Memory\nThe user prefers dark mode.\n\nDeploys happen on Friday mornings.\n\nThe staging database is called orca.\n";

    fn memory_files_are_filed_by_paragraph_and_hand_edits_are_picked_up(postgres: bool) {
        let Some((_fixture, palace)) = palace(postgres) else { return };
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("agent-one");
        write(&root.join("MEMORY.md"), MAIN);
        write(&root.join("memory.md"), "Shadowed by MEMORY.md.\n");
        write(&root.join("memory/2026-03-23.md"), "Flushed fact one.\n\nFlushed fact two.\n");
        write(&root.join("memory/index.json"), "{\"not\": \"indexed\"}");
        write(&root.join("users/alice/MEMORY.md"), "Alice drinks her coffee black.\n");

        let report = sync(&palace, &root);
        assert_eq!((report.files, report.refiled, report.drawers_added), (3, 3, 6), "{report:?}");
        assert_eq!(report.wing, "agent_one");
        let main = drawers_of(&palace, &root.join("MEMORY.md"));
        let texts: Vec<&str> = main.iter().map(|d| d.1.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "# Memory\nThe user prefers dark mode.",
                "Deploys happen on Friday mornings.",
                "The staging database is called orca."
            ]
        );
        assert_eq!(main.iter().map(|d| d.2).collect::<Vec<_>>(), vec![(1, 2), (4, 4), (6, 6)]);
        let drawer = palace.drawer(&mempalace_core::DrawerId::parse(&main[1].0).unwrap()).unwrap();
        assert_eq!((drawer.wing.as_str(), drawer.room.as_str()), ("agent_one", "memory"));
        assert_eq!(drawer.context["memory_file"], "MEMORY.md");
        assert!(drawer.owner_user_id.is_none());
        assert!(drawers_of(&palace, &root.join("users/alice/MEMORY.md")).is_empty(), "private to alice");
        let alice = drawers_seen_by(&palace, &root.join("users/alice/MEMORY.md"), Some("alice"));
        let alice = palace.drawer(&mempalace_core::DrawerId::parse(&alice[0].0).unwrap()).unwrap();
        assert_eq!(alice.owner_user_id.as_deref(), Some("alice"));
        assert_eq!(alice.context["memory_file"], "users/alice/MEMORY.md");

        let again = sync(&palace, &root);
        assert_eq!((again.refiled, again.drawers_added, again.drawers_unchanged), (0, 0, 6), "{again:?}");

        // A hand edit: one paragraph changed, one removed, one added.
        write(
            &root.join("MEMORY.md"),
            "# Memory\nThe user prefers dark mode.\n\nDeploys happen on Tuesday mornings.\n\nNew: the CI runs on GitHub.\n",
        );
        let edited = sync(&palace, &root);
        assert_eq!((edited.refiled, edited.drawers_added, edited.drawers_removed), (1, 2, 2), "{edited:?}");
        let after = drawers_of(&palace, &root.join("MEMORY.md"));
        assert_eq!(after[0].0, main[0].0, "an unchanged paragraph keeps its id");
        assert_eq!(after[1].1, "Deploys happen on Tuesday mornings.");
        assert_eq!(after[2].1, "New: the CI runs on GitHub.");
        let gone = palace.drawer(&mempalace_core::DrawerId::parse(&main[2].0).unwrap());
        assert!(matches!(gone, Err(EngineError::NotFound { .. })), "the removed paragraph's drawer is gone");

        // A file deleted by hand takes its drawers along.
        std::fs::remove_file(root.join("memory/2026-03-23.md")).unwrap();
        let removed = sync(&palace, &root);
        assert_eq!((removed.removed_files, removed.drawers_removed), (1, 2), "{removed:?}");
        // A user's file edited by hand: the removed paragraph's drawer goes too.
        write(&root.join("users/alice/MEMORY.md"), "Alice drinks tea now.\n");
        let changed = sync(&palace, &root);
        assert_eq!((changed.drawers_added, changed.drawers_removed), (1, 1), "{changed:?}");
        std::fs::remove_file(root.join("users/alice/MEMORY.md")).unwrap();
        let removed = sync(&palace, &root);
        assert_eq!((removed.removed_files, removed.drawers_removed), (1, 1), "a user's file too: {removed:?}");
        let source = format!("{}/memory/2026-03-23.md", root.canonicalize().unwrap().display());
        let filter = DrawerFilter { source_file: Some(source), ..Default::default() };
        assert!(palace.store().filtered_ids(palace.workspace(), &filter).unwrap().is_empty());
    }

    fn palace_edits_are_written_back_to_the_file_and_keep_ids(postgres: bool) {
        let Some((_fixture, palace)) = palace(postgres) else { return };
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        let file = root.join("MEMORY.md");
        write(&file, MAIN);
        sync(&palace, &root);
        let before = drawers_of(&palace, &file);
        let id = mempalace_core::DrawerId::parse(&before[1].0).unwrap();

        let update = DrawerUpdate {
            content: Some(Content::parse("Deploys happen on Monday evenings.").unwrap()),
            ..DrawerUpdate::default()
        };
        let updated = memory::update_drawer(&palace, &id, update).expect("edit written back");
        assert_eq!(updated.id, id, "the drawer keeps its id");
        assert_eq!(updated.content.as_str(), "Deploys happen on Monday evenings.");
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            MAIN.replace("Friday mornings", "Monday evenings"),
            "the paragraph was rewritten in place"
        );
        let after = drawers_of(&palace, &file);
        assert_eq!(after.iter().map(|d| &d.0).collect::<Vec<_>>(), before.iter().map(|d| &d.0).collect::<Vec<_>>());
        assert_eq!(sync(&palace, &root).refiled, 0, "the palace already has the file as written");
        // Touched but unchanged bytes: read again, nothing filed, ids kept.
        write(&file, &std::fs::read_to_string(&file).unwrap());
        let touched = sync(&palace, &root);
        assert_eq!((touched.drawers_added, touched.drawers_removed), (0, 0), "{touched:?}");

        // Moving a paragraph's drawer out of its file's room is refused.
        let moving =
            DrawerUpdate { room: Some(mempalace_core::Room::parse("elsewhere").unwrap()), ..Default::default() };
        let refused = memory::update_drawer(&palace, &id, moving).unwrap_err();
        assert!(refused.to_string().contains("stays in wing"), "{refused}");

        // Delete: soft keeps the drawer hidden for review, the paragraph leaves the file.
        memory::delete_drawer(&palace, &id, DeleteMode::Soft { reason: Some("outdated".into()) }).unwrap();
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            "# Memory\nThe user prefers dark mode.\n\nThe staging database is called orca.\n"
        );
        assert_eq!(palace.drawer(&id).unwrap().status, DrawerStatus::Invalidated);
        let last = mempalace_core::DrawerId::parse(&before[2].0).unwrap();
        memory::delete_drawer(&palace, &last, DeleteMode::Hard).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "# Memory\nThe user prefers dark mode.\n");
        assert!(matches!(palace.drawer(&last), Err(EngineError::NotFound { .. })));
        assert_eq!(drawers_of(&palace, &file).len(), 1);
        assert_eq!(sync(&palace, &root).refiled, 0);
    }

    fn a_hand_edit_not_yet_synced_is_never_overwritten(postgres: bool) {
        let Some((_fixture, palace)) = palace(postgres) else { return };
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        let file = root.join("MEMORY.md");
        write(&file, MAIN);
        sync(&palace, &root);
        let id = mempalace_core::DrawerId::parse(&drawers_of(&palace, &file)[1].0).unwrap();
        let hand = format!("{MAIN}\nWritten by hand meanwhile.\n");
        write(&file, &hand);
        let update =
            DrawerUpdate { content: Some(Content::parse("From the palace.").unwrap()), ..DrawerUpdate::default() };
        let error = memory::update_drawer(&palace, &id, update.clone()).unwrap_err();
        assert!(matches!(error, FeedError::Invalid(_)), "{error:?}");
        let message = error.to_string();
        assert!(message.contains("changed since the palace last read it") && message.contains("memory-files sync"));
        let refused = memory::delete_drawer(&palace, &id, DeleteMode::Hard).unwrap_err();
        assert!(refused.to_string().contains("changed since"), "{refused}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), hand, "the hand edit is intact");
        assert_eq!(palace.drawer(&id).unwrap().content.as_str(), "Deploys happen on Friday mornings.");
        let leftovers: Vec<_> = std::fs::read_dir(&root).unwrap().filter_map(Result::ok).collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left behind");
        // After a sync the same edit goes through, and the hand edit stays.
        sync(&palace, &root);
        memory::update_drawer(&palace, &id, update).unwrap();
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(text.contains("From the palace.") && text.contains("Written by hand meanwhile."), "{text}");
    }

    fn memories_are_added_to_memory_md_daily_files_and_user_files(postgres: bool) {
        let Some((_fixture, palace)) = palace(postgres) else { return };
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("proj");
        std::fs::create_dir_all(&root).unwrap();
        let note = |text: &str, target: NoteTarget, user: Option<&str>| MemoryNote {
            text: text.into(),
            target,
            user: user.map(str::to_string),
            wing: None,
            agent: "test".into(),
        };
        let first = memory::add(&palace, &root, &note("The user prefers tabs.", NoteTarget::Main, None)).unwrap();
        assert_eq!(first.path, "MEMORY.md");
        assert_eq!(std::fs::read_to_string(root.join("MEMORY.md")).unwrap(), "The user prefers tabs.\n");
        let second = memory::add(&palace, &root, &note("  Lunch is at noon.\n", NoteTarget::Main, None)).unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("MEMORY.md")).unwrap(),
            "The user prefers tabs.\n\nLunch is at noon.\n"
        );
        assert_eq!(second.drawer_ids.len(), 1);
        let drawer = palace.drawer(&mempalace_core::DrawerId::parse(&second.drawer_ids[0]).unwrap()).unwrap();
        assert_eq!(drawer.content.as_str(), "Lunch is at noon.");
        assert_eq!(
            palace.drawer(&mempalace_core::DrawerId::parse(&first.drawer_ids[0]).unwrap()).unwrap().room.as_str(),
            "memory"
        );

        // The day is read before and after: the note may be filed either side of midnight.
        let day_before = palace.now().format("%Y-%m-%d").to_string();
        let daily = memory::add(&palace, &root, &note("Flushed at compaction.", NoteTarget::Daily, None)).unwrap();
        let today = palace.now().format("%Y-%m-%d").to_string();
        assert!(
            [format!("memory/{day_before}.md"), format!("memory/{today}.md")].contains(&daily.path),
            "{}",
            daily.path
        );
        let own = memory::add(&palace, &root, &note("Bob works nights.", NoteTarget::Main, Some("bob"))).unwrap();
        assert_eq!(own.path, "users/bob/MEMORY.md");
        let bob = palace.drawer(&mempalace_core::DrawerId::parse(&own.drawer_ids[0]).unwrap()).unwrap();
        assert_eq!(bob.owner_user_id.as_deref(), Some("bob"));
        // Everything added is what a sync finds: nothing to file again.
        let report = sync(&palace, &root);
        assert_eq!((report.files, report.refiled), (3, 0), "{report:?}");

        for (target, needle) in [
            (NoteTarget::File("notes.txt".into()), "not a memory file"),
            (NoteTarget::File("memory/deep/x.md".into()), "not a memory file that is indexed"),
            (NoteTarget::File("../MEMORY.md".into()), "leaves the memory root"),
        ] {
            let error = memory::add(&palace, &root, &note("x", target, None)).unwrap_err();
            assert!(error.to_string().contains(needle), "{error}");
        }
        let error = memory::add(&palace, &root, &note("x", NoteTarget::Main, Some("../eve"))).unwrap_err();
        assert!(error.to_string().contains("cannot name a memory folder"), "{error}");
    }

    fn mine_files_a_projects_memory_files_as_memory(postgres: bool) {
        let Some((_fixture, palace)) = palace(postgres) else { return };
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("lab");
        write(&root.join("README.md"), "# Lab\n\nA project about lab notes and their memory.\n");
        write(&root.join("MEMORY.md"), MAIN);
        write(&root.join("memory/2026-01-02.md"), "A daily note.\n");
        let report = mine(&palace, Some(&root), None, &MineOptions::new(Mode::Projects), &mut |_, _, _| {}).unwrap();
        assert_eq!(report.files, 3, "{report:?}");
        let main = drawers_of(&palace, &root.join("MEMORY.md"));
        assert_eq!(main.len(), 3, "one drawer per paragraph");
        let drawer = palace.drawer(&mempalace_core::DrawerId::parse(&main[0].0).unwrap()).unwrap();
        assert_eq!((drawer.wing.as_str(), drawer.room.as_str()), ("lab", "memory"));
        let again = mine(&palace, Some(&root), None, &MineOptions::new(Mode::Projects), &mut |_, _, _| {}).unwrap();
        assert_eq!(again.drawers_added, 0, "{again:?}");
        assert_eq!(drawers_of(&palace, &root.join("memory/2026-01-02.md")).len(), 1);
    }

    on_both!(
        memory_files_are_filed_by_paragraph_and_hand_edits_are_picked_up,
        palace_edits_are_written_back_to_the_file_and_keep_ids,
        a_hand_edit_not_yet_synced_is_never_overwritten,
        memories_are_added_to_memory_md_daily_files_and_user_files,
        mine_files_a_projects_memory_files_as_memory,
    );

    #[test]
    fn read_serves_line_ranges_the_users_own_file_first_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("agent");
        std::fs::create_dir_all(root.join("memory")).unwrap();
        std::fs::write(root.join("memory.md"), "one\ntwo\nthree\nfour\n").unwrap();
        std::fs::write(root.join("memory/2026-03-23.md"), "shared day\n").unwrap();
        std::fs::write(root.join("memory/index.json"), "{}").unwrap();
        std::fs::create_dir_all(root.join("users/alice/memory")).unwrap();
        std::fs::write(root.join("users/alice/memory/2026-03-23.md"), "alice day\n").unwrap();
        std::fs::write(dir.path().join("secret.md"), "outside\n").unwrap();

        let all = memory::read(&root, "MEMORY.md", None, None, None).unwrap();
        assert_eq!((all.path.as_str(), all.scope, all.total_lines), ("memory.md", "shared", 4), "MEMORY.md falls back");
        assert_eq!(all.text, "one\ntwo\nthree\nfour\n");
        let range = memory::read(&root, "./memory.md", None, Some(2), Some(2)).unwrap();
        assert_eq!((range.from, range.to, range.text.as_str()), (2, 3, "two\nthree\n"));
        let tail = memory::read(&root, "memory.md", None, Some(4), Some(10)).unwrap();
        assert_eq!((tail.to, tail.text.as_str()), (4, "four\n"));
        let past = memory::read(&root, "memory.md", None, Some(9), None).unwrap_err();
        assert!(past.to_string().contains("past the end of memory.md, which has 4 lines"), "{past}");
        assert!(memory::read(&root, "memory.md", None, Some(0), None).is_err());
        assert_eq!(
            memory::read(&root, "memory/index.json", None, None, None).unwrap().text,
            "{}",
            "stored, not indexed"
        );

        let own = memory::read(&root, "memory/2026-03-23.md", Some("alice"), None, None).unwrap();
        assert_eq!((own.scope, own.text.as_str()), ("user", "alice day\n"));
        let fallback = memory::read(&root, "memory/2026-03-23.md", Some("bob"), None, None).unwrap();
        assert_eq!((fallback.scope, fallback.text.as_str()), ("shared", "shared day\n"));

        let missing = memory::read(&root, "memory/nope.md", Some("bob"), None, None).unwrap_err();
        assert!(matches!(missing, FeedError::NotFound { .. }), "{missing:?}");
        assert!(missing.to_string().contains("users/bob/memory/nope.md nor memory/nope.md"), "{missing}");
        for escape in ["../secret.md", "memory/../../secret.md", "/etc/passwd"] {
            let error = memory::read(&root, escape, None, None, None).unwrap_err();
            assert!(error.to_string().contains("leaves the memory root"), "{escape}: {error}");
        }
        let other = memory::read(&root, "users/alice/MEMORY.md", None, None, None).unwrap_err();
        assert!(other.to_string().contains("not a memory file"), "{other}");
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(dir.path().join("secret.md"), root.join("memory/link.md")).unwrap();
            let error = memory::read(&root, "memory/link.md", None, None, None).unwrap_err();
            assert!(error.to_string().contains("leaves the memory root"), "{error}");
        }
    }
}

/// A project file that no configuration or folder names a room for goes to
/// the wing's room whose prototype (centroid) it is clearly nearest, with
/// the default room kept in its context; a folder's room is never changed.
#[test]
fn a_file_without_a_room_goes_to_its_nearest_room_prototype() {
    #![allow(clippy::disallowed_methods)]
    let Some(models) = std::env::var_os("MEMPALACE_MODEL_DIR") else {
        panic!("MEMPALACE_MODEL_DIR is not set; run ./scripts/test.sh (it fetches the models)");
    };
    let model =
        mempalace_embed::minilm::MiniLm::load(&mempalace_embed::files::minilm_dir(std::path::Path::new(&models)))
            .expect("load MiniLM");
    let dir = tempfile::tempdir().unwrap();
    let palace = palace(dir.path()).with_embedder(Arc::new(model));
    let wing = mempalace_core::Wing::parse("greenhouse").unwrap();
    let rooms = [
        ("irrigation", ["drip lines", "rain tank", "soil moisture", "sprinkler", "water pump", "hose"]),
        ("lighting", ["grow lamps", "LED panels", "light timer", "lamp dimmer", "daylight sensor", "bulbs"]),
    ];
    for (room, subjects) in rooms {
        let mut requests = Vec::new();
        for (i, subject) in subjects.iter().enumerate() {
            for when in ["in the morning", "at night"] {
                let text = format!("Checked the {subject} of bed {i} {when}: the {room} works as planned.");
                let mut request =
                    mempalace_engine::IngestRequest::new(wing.clone(), Room::parse(room).unwrap(), text, "t");
                request.raw = true;
                requests.push(request);
            }
        }
        for report in palace.ingest_batch(requests) {
            report.unwrap();
        }
    }
    let trained = palace.recompute_centroids().unwrap();
    assert_eq!(trained.rooms_trained.len(), 2, "{trained:?}");
    let root = dir.path().join("greenhouse");
    write(&root, "pump-notes.md", "The drip lines and the water pump now run from the rain tank every morning.\n");
    write(&root, "lighting/schedule.md", "The drip lines run every morning.\n");
    let options = MineOptions { wing: Some(wing.clone()), ..MineOptions::new(Mode::Projects) };
    mine(&palace, Some(&root), None, &options, &mut |_, _, _| {}).unwrap();
    let filed: Vec<(String, String, String)> = drawers(&palace)
        .into_iter()
        .filter(|(_, _, text)| text.contains("drip lines") && !text.contains("bed"))
        .collect();
    let room_of =
        |needle: &str| filed.iter().find(|(_, _, text)| text.contains(needle)).map(|(_, room, _)| room.clone());
    assert_eq!(room_of("water pump").as_deref(), Some("irrigation"), "{filed:?}");
    assert_eq!(room_of("run every morning.").as_deref(), Some("lighting"), "a folder's room stays: {filed:?}");
}
