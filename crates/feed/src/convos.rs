//! Conversations: agent transcripts (Claude Code, Codex CLI, Gemini CLI),
//! chat exports (ChatGPT, Claude.ai, Slack) and plain text with `>` user
//! lines, filed as drawers of whole exchanges plus a header per
//! conversation, or (`Extract::General`) as the memories picked out of them.
//!
//! Each file is one source. Re-mining an unchanged file opens nothing; a
//! transcript that grew is read from the start of its last exchange (the
//! cursor); a file that changed otherwise is read whole and its drawers are
//! replaced in one transaction. A filtered run (`Selection`) files what it
//! selects and removes nothing.

use std::path::{Path, PathBuf};

use mempalace_core::name::normalize_wing_name;
use mempalace_core::time::{DayEdge, parse_timestamp};
use mempalace_core::{DrawerId, Room, Timestamp, Wing};
use mempalace_engine::drawers::SourceFiling;
use mempalace_engine::{IngestRequest, Palace};
use mempalace_mine::cursor::{self, Cursor, TailCursor, check_digest, check_ranges, line_start};
use mempalace_mine::{Conversation, Format, Role, detect, detect_plain_text, header, parse, parse_from, units};
use serde_json::json;

use crate::error::{FeedError, FeedResult};
use crate::files::{read_range, source_name, stat, tail_check, text_prefix};
use crate::{Extract, FileProblem, MineOptions, MineReport, Progress, Selection};

/// How one transcript is filed.
#[derive(Debug, Clone)]
pub struct TranscriptOptions {
    /// Wing for every drawer, else derived from the conversation.
    pub wing: Option<Wing>,
    /// Room (exchange mode).
    pub room: Room,
    /// Who files.
    pub agent: String,
    /// Count only.
    pub dry_run: bool,
    /// Exchanges or extracted memories.
    pub extract: Extract,
    /// Which conversations.
    pub selection: Selection,
}

impl TranscriptOptions {
    /// Exchanges in `room`, filed by `agent`, every conversation.
    pub fn new(room: Room, agent: impl Into<String>) -> Self {
        Self {
            wing: None,
            room,
            agent: agent.into(),
            dry_run: false,
            extract: Extract::Exchange,
            selection: Selection::default(),
        }
    }

    pub(crate) fn from_mine(options: &MineOptions) -> Self {
        Self {
            wing: options.wing.clone(),
            room: options.room.clone(),
            agent: options.agent.clone(),
            dry_run: options.dry_run,
            extract: options.extract,
            selection: options.selection.clone(),
        }
    }

    /// The filing parameters a cursor is valid for.
    fn cursor_key(&self) -> String {
        let mut key = format!("convos|{}|{}|{}", self.wing.as_ref().map_or("-", Wing::as_str), self.room, self.agent);
        if self.extract == Extract::General {
            key.push_str("|general");
        }
        key
    }
}

/// What mining one transcript did.
#[derive(Debug, Clone, PartialEq)]
pub enum TranscriptOutcome {
    /// Read and filed (or, in a dry run, planned).
    Mined {
        /// Drawers filed (would be filed), unchanged, removed.
        filing: SourceFiling,
        /// Records skipped inside the file.
        records_skipped: usize,
        /// Conversations the selection left out.
        conversations_skipped: usize,
        /// Human messages in the file.
        human_messages: usize,
        /// The last human message.
        last_human: Option<String>,
        /// The wing of its first conversation.
        wing: Wing,
    },
    /// Not a transcript of a known format: why.
    NotTranscript(String),
    /// Unreadable: why.
    Failed(String),
}

/// What a conversations run finds under its path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Item {
    /// A transcript, chat export or bundle file.
    File(PathBuf),
    /// A Slack export folder, mined as one source per channel.
    SlackFolder(PathBuf),
    /// An export bundle as downloaded: a zip archive.
    Zip(PathBuf),
    /// A file of a kind no conversation comes in (an image, a PDF).
    Other(PathBuf),
}

/// Mines a file or folder of conversations.
pub(crate) fn mine(
    palace: &Palace,
    path: &Path,
    options: &MineOptions,
    progress: Progress<'_>,
) -> FeedResult<MineReport> {
    if !path.exists() {
        return Err(FeedError::NotFound { what: "path", path: path.to_path_buf() });
    }
    let mut items = Vec::new();
    transcripts(path, &mut items)
        .map_err(|error| FeedError::Unreadable { path: path.to_path_buf(), detail: error.to_string() })?;
    if let Some(limit) = options.limit {
        items.truncate(limit);
    }
    let transcript_options = TranscriptOptions::from_mine(options);
    let mut report = MineReport::default();
    for (done, item) in items.iter().enumerate() {
        progress(done, items.len(), report.drawers_added);
        let outcomes = match item {
            Item::File(file) | Item::SlackFolder(file) => {
                vec![(file.display().to_string(), mine_transcript(palace, file, &transcript_options)?)]
            }
            Item::Zip(file) => crate::bundle::mine_zip(palace, file, &transcript_options)?,
            Item::Other(file) => {
                vec![(file.display().to_string(), TranscriptOutcome::NotTranscript(other_reason(file)))]
            }
        };
        for (shown, outcome) in outcomes {
            report.files += 1;
            match outcome {
                TranscriptOutcome::Mined { filing, records_skipped, conversations_skipped, .. } => {
                    report.read += 1;
                    report.add_filing(filing);
                    report.records_skipped += records_skipped;
                    report.conversations_skipped += conversations_skipped;
                    tracing::info!(file = %shown, added = filing.added, unchanged = filing.unchanged, replaced = filing.removed, "mined");
                }
                TranscriptOutcome::NotTranscript(reason) => {
                    tracing::info!(file = %shown, %reason, "skipped");
                    report.skipped.push(FileProblem { file: shown, error: reason });
                }
                TranscriptOutcome::Failed(error) => report.failed.push(FileProblem { file: shown, error }),
            }
        }
    }
    progress(items.len(), items.len(), report.drawers_added);
    if report.read == 0 && report.files > 0 {
        return Err(FeedError::NothingMined(format!(
            "none of the {} files was a readable transcript of a known format ({} skipped, {} failed; -v lists them)",
            report.files,
            report.skipped.len(),
            report.failed.len()
        )));
    }
    Ok(report)
}

/// Why a file of another kind is not read.
fn other_reason(file: &Path) -> String {
    match file.extension().and_then(|e| e.to_str()) {
        Some(extension) => format!("not a transcript format (.{}): not read", extension.to_lowercase()),
        None => "not a transcript format (no .json, .jsonl or .txt extension): not read".to_string(),
    }
}

/// Whether a file name can hold a conversation (`.jsonl`, `.json`, `.txt`).
pub(crate) fn is_candidate(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.ends_with(".jsonl") || lower.ends_with(".json") || lower.ends_with(".txt")
}

/// A Slack export folder: `channels.json`, or `users.json` beside channel
/// folders of day files (`2024-01-31.json`).
fn is_slack_export(dir: &Path) -> bool {
    if dir.join("channels.json").is_file() {
        return true;
    }
    dir.join("users.json").is_file()
        && std::fs::read_dir(dir).into_iter().flatten().filter_map(Result::ok).any(|entry| {
            entry.path().is_dir()
                && std::fs::read_dir(entry.path())
                    .into_iter()
                    .flatten()
                    .filter_map(Result::ok)
                    .any(|day| is_day_file_name(&day.file_name().to_string_lossy()))
        })
}

/// `YYYY-MM-DD.json`.
pub(crate) fn is_day_file_name(name: &str) -> bool {
    let Some(stem) = name.strip_suffix(".json") else { return false };
    let bytes = stem.as_bytes();
    bytes.len() == 10
        && bytes.iter().enumerate().all(|(i, b)| if i == 4 || i == 7 { *b == b'-' } else { b.is_ascii_digit() })
}

/// What to mine under `path`: the file itself (a zip archive as a
/// bundle), a Slack export folder as one item, else everything below,
/// sorted (hidden files and folders, `node_modules` and `target` left
/// out): transcripts and chat exports, zip archives, and other files,
/// which are reported as not read.
fn transcripts(path: &Path, out: &mut Vec<Item>) -> std::io::Result<()> {
    if path.is_file() {
        out.push(if crate::bundle::is_zip_name(path) {
            Item::Zip(path.to_path_buf())
        } else {
            Item::File(path.to_path_buf())
        });
        return Ok(());
    }
    if is_slack_export(path) {
        out.push(Item::SlackFolder(path.to_path_buf()));
        return Ok(());
    }
    let mut entries: Vec<_> = std::fs::read_dir(path)?.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for entry in entries {
        let name = entry.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with('.') || name == "node_modules" || name == "target" {
            continue;
        }
        if entry.is_dir() {
            transcripts(&entry, out)?;
        } else if crate::bundle::is_zip_name(&entry) {
            out.push(Item::Zip(entry));
        } else if is_candidate(name) {
            out.push(Item::File(entry));
        } else {
            out.push(Item::Other(entry));
        }
    }
    Ok(())
}

/// The wing of a conversation: the one asked for, else its directory's
/// normalised name, else `conversations`.
pub(crate) fn wing_for(fixed: Option<&Wing>, conversation: &Conversation) -> FeedResult<Wing> {
    if let Some(wing) = fixed {
        return Ok(wing.clone());
    }
    let from_cwd = conversation
        .cwd
        .as_deref()
        .and_then(|cwd| Path::new(cwd).file_name().and_then(|n| n.to_str()))
        .and_then(|name| Wing::parse(&normalize_wing_name(name)).ok());
    Ok(match from_cwd {
        Some(wing) => wing,
        None => default_wing(),
    })
}

pub(crate) fn default_wing() -> Wing {
    Wing::parse("conversations").expect("a valid wing name")
}

/// Whether a conversation passes the selection.
fn selected(conversation: &Conversation, selection: &Selection) -> bool {
    if let Some(session) = &selection.session
        && &conversation.session_id != session
    {
        return false;
    }
    if let Some(min) = selection.min_messages
        && conversation.messages.len() < min
    {
        return false;
    }
    if let Some(since) = &selection.since {
        let newest = conversation
            .messages
            .iter()
            .filter_map(|m| m.timestamp.as_deref())
            .chain(conversation.started_at.as_deref())
            .filter_map(|t| parse_timestamp(t, "timestamp", DayEdge::Start).ok())
            .max();
        if newest.is_none_or(|newest| newest < *since) {
            return false;
        }
    }
    true
}

/// Everything a conversation's drawers share.
pub(crate) struct Place<'a> {
    /// The source they are filed under.
    pub source: &'a str,
    /// Their wing.
    pub wing: &'a Wing,
    /// Room, agent and extraction mode.
    pub options: &'a TranscriptOptions,
    /// The format name kept in their context.
    pub format: &'a str,
}

/// The drawers of a conversation: its header (unless `with_header` is
/// false: a tail read files exchanges only) and its exchanges, or, with
/// `Extract::General`, its memories.
pub(crate) fn requests(conversation: &Conversation, place: &Place<'_>, with_header: bool) -> Vec<IngestRequest> {
    let started: Option<Timestamp> =
        conversation.started_at.as_deref().and_then(|t| parse_timestamp(t, "timestamp", DayEdge::Start).ok());
    let base = |room: &Room, text: String, ids: Vec<String>, kind: &str, at: Option<&str>| {
        let mut request = IngestRequest::new(place.wing.clone(), room.clone(), text, place.options.agent.as_str());
        request.raw = true;
        request.source_file = Some(place.source.to_string());
        request.session_id = Some(conversation.session_id.clone());
        request.filed_at = at.and_then(|t| parse_timestamp(t, "timestamp", DayEdge::Start).ok()).or(started);
        request.context.insert("unit".into(), json!(kind));
        request.context.insert("format".into(), json!(place.format));
        request.context.insert("message_ids".into(), json!(ids));
        if let Some(title) = &conversation.title {
            request.context.insert("title".into(), json!(title));
        }
        if let Some(cwd) = &conversation.cwd {
            request.context.insert("cwd".into(), json!(cwd));
        }
        request
    };
    let first_time = |ids: &[String]| {
        conversation.messages.iter().find(|m| ids.first() == Some(&m.id)).and_then(|m| m.timestamp.clone())
    };
    let mut out = Vec::new();
    if place.options.extract == Extract::General {
        for memory in crate::general::memories(conversation) {
            let at = first_time(&memory.message_ids);
            let room = Room::parse(memory.memory_type.as_str()).expect("memory types are valid room names");
            let mut request = base(&room, memory.text, memory.message_ids, "memory", at.as_deref());
            request.memory_type = Some(memory.memory_type);
            out.push(request);
        }
        return out;
    }
    if with_header {
        out.push(base(
            &place.options.room,
            header(conversation),
            Vec::new(),
            "header",
            conversation.started_at.as_deref(),
        ));
    }
    // Each exchange's vector carries the exchange before it (what a reply
    // answers); the first of a read has none (a tail read's first unit is
    // the exchange already filed last time).
    let mut preceding: Option<String> = None;
    for unit in units(conversation) {
        let at = first_time(&unit.turn_ids);
        let text = unit.text.clone();
        let mut request = base(&place.options.room, unit.text, unit.turn_ids, "exchange", at.as_deref());
        request.preceding = preceding.replace(text);
        out.push(request);
    }
    out
}

/// Files (or plans, in a dry run) the drawers of one source. A filtered
/// run adds what it selected and removes nothing.
fn file(
    palace: &Palace,
    source: &str,
    requests: Vec<IngestRequest>,
    options: &TranscriptOptions,
) -> FeedResult<SourceFiled> {
    let filtered = options.selection.is_active();
    if options.dry_run {
        let mut plan = palace.plan_source(source, &requests)?;
        if filtered {
            plan.removed = 0;
        }
        return Ok(SourceFiled { filing: plan, drawers: Vec::new() });
    }
    if filtered {
        let mut filed = SourceFiled::default();
        for report in palace.ingest_batch(requests) {
            let report = report?;
            for chunk in &report.chunks {
                if chunk.is_new() {
                    filed.filing.added += 1;
                } else {
                    filed.filing.unchanged += 1;
                }
            }
            filed.drawers.push(report.chunks.iter().map(|c| c.drawer_id().clone()).collect());
        }
        return Ok(filed);
    }
    let filed = palace.file_source(source, requests)?;
    Ok(SourceFiled { filing: filed.filing, drawers: filed.drawers })
}

/// What filing a source did, and the drawers of each request.
#[derive(Debug, Default)]
struct SourceFiled {
    filing: SourceFiling,
    drawers: Vec<Vec<DrawerId>>,
}

/// Mines a Slack export folder: one conversation per channel folder.
fn mine_slack(palace: &Palace, dir: &Path, options: &TranscriptOptions) -> FeedResult<TranscriptOutcome> {
    let root = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let users = std::fs::read_to_string(root.join("users.json")).unwrap_or_default();
    let unreadable = |error: std::io::Error| FeedError::Unreadable { path: root.clone(), detail: error.to_string() };
    let mut folders: Vec<PathBuf> = std::fs::read_dir(&root)
        .map_err(unreadable)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    folders.sort();
    let mut channels = Vec::new();
    for folder in folders {
        let name = folder.file_name().and_then(|n| n.to_str()).unwrap_or("channel").to_string();
        let mut days = Vec::new();
        let entries = std::fs::read_dir(&folder).map_err(unreadable)?;
        for day in entries.filter_map(Result::ok).map(|e| e.path()) {
            if day.extension().is_some_and(|e| e == "json") {
                days.push((
                    day.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string(),
                    std::fs::read_to_string(&day).unwrap_or_default(),
                ));
            }
        }
        channels.push(SlackChannel { name, source: folder.display().to_string(), days });
    }
    let folder_name = root.file_name().and_then(|n| n.to_str()).unwrap_or("slack").to_string();
    file_slack(palace, channels, &users, &folder_name, options)
}

/// One channel of a Slack export: its name, the source its drawers carry,
/// and its day files (name, text).
pub(crate) struct SlackChannel {
    pub name: String,
    pub source: String,
    pub days: Vec<(String, String)>,
}

/// Files the channels of a Slack export, each a source of its own; the
/// wing is the one asked for, else the export's normalised name.
pub(crate) fn file_slack(
    palace: &Palace,
    channels: Vec<SlackChannel>,
    users: &str,
    export_name: &str,
    options: &TranscriptOptions,
) -> FeedResult<TranscriptOutcome> {
    let users = mempalace_mine::slack::users(users);
    let wing = match &options.wing {
        Some(wing) => wing.clone(),
        None => Wing::parse(&normalize_wing_name(export_name)).or_else(|_| Wing::parse("slack"))?,
    };
    let (mut total, mut bad_days, mut human_messages, mut left_out) = (SourceFiling::default(), 0, 0, 0);
    for channel in channels {
        let (conversation, bad) = mempalace_mine::slack::channel(&channel.name, &channel.days, &users);
        bad_days += bad;
        if conversation.messages.is_empty() {
            continue;
        }
        if !selected(&conversation, &options.selection) {
            left_out += 1;
            continue;
        }
        human_messages += conversation.messages.len();
        let place = Place { source: &channel.source, wing: &wing, options, format: "slack" };
        total += file(palace, &channel.source, requests(&conversation, &place, true), options)?.filing;
    }
    Ok(TranscriptOutcome::Mined {
        filing: total,
        records_skipped: bad_days,
        conversations_skipped: left_out,
        human_messages,
        last_human: None,
        wing,
    })
}

/// Where the next read of a line-per-record transcript resumes: at the
/// start of its last exchange (the part later lines can still change).
/// `text` starts at byte `base_offset` of the file, at line `base_line`.
struct TailBase<'a> {
    format: Format,
    text: &'a str,
    base_offset: u64,
    base_line: usize,
    links: &'a [mempalace_mine::Link],
    humans_before: usize,
    before_uuid: Option<String>,
}

/// The tail cursor after filing `conversation`, whose units gave
/// `unit_drawers`.
fn next_tail(base: &TailBase<'_>, conversation: &Conversation, unit_drawers: &[Vec<DrawerId>]) -> Option<TailCursor> {
    let units = units(conversation);
    let last = units.last()?.turn_ids.first()?.clone();
    let first_unit = units.iter().position(|u| u.turn_ids.first() == Some(&last))?;
    let line = conversation.messages.iter().find(|m| m.id == last)?.line;
    let offset = line.checked_sub(base.base_line).and_then(|n| line_start(base.text, n + 1))?;
    let humans = conversation.messages.iter().filter(|m| m.role == Role::User && m.line < line).count();
    Some(TailCursor {
        format: base.format.as_str().to_string(),
        resume_at: base.base_offset + offset as u64,
        resume_line: line,
        check: String::new(),
        before_uuid: base
            .links
            .iter()
            .rfind(|l| l.line < line)
            .map(|l| l.uuid.clone())
            .or_else(|| base.before_uuid.clone()),
        tail_ids: unit_drawers.get(first_unit..)?.iter().flatten().map(ToString::to_string).collect(),
        humans_before: base.humans_before + humans,
        session_id: conversation.session_id.clone(),
        title: conversation.title.clone(),
        cwd: conversation.cwd.clone(),
        started_at: conversation.started_at.clone(),
    })
}

/// Mines the end of a transcript from its cursor; `None` when it must be
/// read whole (rewritten, rewound, retitled, or not readable from there).
fn mine_tail(
    palace: &Palace,
    path: &Path,
    source: &str,
    stored: &Cursor,
    tail: &TailCursor,
    mtime_ns: Option<i64>,
    options: &TranscriptOptions,
) -> FeedResult<Option<TranscriptOutcome>> {
    let io = |error: std::io::Error| FeedError::Unreadable { path: path.to_path_buf(), detail: error.to_string() };
    let format = match tail.format.as_str() {
        "claude-code" => Format::ClaudeCode,
        "codex" => Format::Codex,
        _ => return Ok(None),
    };
    let Some(old_region) = stored.size.checked_sub(tail.resume_at) else { return Ok(None) };
    let [head, before, _] = check_ranges(tail.resume_at, stored.size);
    let region = read_range(path, tail.resume_at, u64::MAX).map_err(io)?;
    if (region.len() as u64) < old_region
        || check_digest(
            &read_range(path, head.0, head.1).map_err(io)?,
            &read_range(path, before.0, before.1).map_err(io)?,
            &region[..old_region as usize],
        ) != tail.check
    {
        tracing::debug!(file = %source, "transcript rewritten since the last read; reading it whole");
        return Ok(None);
    }
    let Some(text) = text_prefix(&region) else { return Ok(None) };
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("transcript");
    let Some(mut parsed) = parse_from(format, text, stem, tail.resume_line) else { return Ok(None) };
    let known: std::collections::HashSet<&str> = parsed.links.iter().map(|l| l.uuid.as_str()).collect();
    let rewound = parsed.links.iter().any(|link| match &link.parent {
        None => true,
        Some(parent) => !known.contains(parent.as_str()) && Some(parent) != tail.before_uuid.as_ref(),
    });
    if parsed.titled || parsed.conversations.len() > 1 || rewound {
        tracing::debug!(file = %source, rewound, titled = parsed.titled, "transcript changed before its end; reading it whole");
        return Ok(None);
    }
    let mut conversation = parsed.conversations.pop().unwrap_or_default();
    conversation.session_id.clone_from(&tail.session_id);
    conversation.title.clone_from(&tail.title);
    conversation.cwd.clone_from(&tail.cwd);
    conversation.started_at.clone_from(&tail.started_at);
    let wing = match &stored.wing {
        Some(wing) => Wing::parse(wing)?,
        None => wing_for(options.wing.as_ref(), &conversation)?,
    };
    let place = Place { source, wing: &wing, options, format: format.as_str() };
    let reread: Vec<DrawerId> = tail.tail_ids.iter().filter_map(|id| DrawerId::parse(id).ok()).collect();
    let filed = palace.file_source_tail(requests(&conversation, &place, false), &reread)?;
    let humans_here: Vec<&mempalace_mine::Message> =
        conversation.messages.iter().filter(|m| m.role == Role::User).collect();
    let human_messages = tail.humans_before + humans_here.len();
    let last_human = humans_here.last().map(|m| m.text.clone()).or_else(|| stored.last_human.clone());
    let size = tail.resume_at + text.len() as u64;
    let base = TailBase {
        format,
        text,
        base_offset: tail.resume_at,
        base_line: tail.resume_line,
        links: &parsed.links,
        humans_before: tail.humans_before,
        before_uuid: tail.before_uuid.clone(),
    };
    let next = match next_tail(&base, &conversation, &filed.drawers) {
        Some(mut next) => {
            next.check = tail_check(path, next.resume_at, size).map_err(io)?;
            Some(next)
        }
        None => None,
    };
    let updated = Cursor {
        v: cursor::VERSION,
        key: stored.key.clone(),
        size,
        mtime_ns,
        hash: None,
        drawers: (stored.drawers + filed.filing.added).saturating_sub(filed.filing.removed),
        humans: human_messages,
        last_human: last_human.clone(),
        wing: Some(wing.to_string()),
        tail: next,
    };
    palace.set_source_cursor(source, Some(&updated.to_json()))?;
    tracing::debug!(file = %source, from = tail.resume_at, added = filed.filing.added, "transcript tail mined");
    Ok(Some(TranscriptOutcome::Mined {
        filing: filed.filing,
        records_skipped: parsed.skipped,
        conversations_skipped: 0,
        human_messages,
        last_human,
        wing,
    }))
}

/// Mines one transcript file (or a Slack export folder), one call per file;
/// hooks call it for the session they saw end. Uses and updates the file's
/// cursor: an unchanged file is not read, a grown transcript is read from
/// where the last run left off. A dry run reads the cursor and plans
/// exactly what a real run would file, writing nothing.
pub fn mine_transcript(palace: &Palace, path: &Path, options: &TranscriptOptions) -> FeedResult<TranscriptOutcome> {
    if path.is_dir() {
        return mine_slack(palace, path, options);
    }
    let (size, stamp) = match stat(path) {
        Ok(stat) => stat,
        Err(error) => return Ok(TranscriptOutcome::Failed(error.to_string())),
    };
    let file = SourceFile {
        source: source_name(path),
        file_name: path.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string(),
        size,
        stamp,
        path: Some(path),
    };
    let sibling = |name: &str| std::fs::read(path.with_file_name(name)).ok();
    mine_source(palace, &file, || std::fs::read(path), &sibling, options)
}

/// A file to mine as one source: a file on disk, or an entry of a zip
/// archive.
pub(crate) struct SourceFile<'a> {
    /// The source its drawers carry (absolute path; `ARCHIVE.zip#ENTRY`).
    pub source: String,
    /// Its file name (the format and bundle files are recognised by it).
    pub file_name: String,
    /// Its size in bytes.
    pub size: u64,
    /// What changes when it changes without its size changing: the
    /// modification time of a file, the CRC-32 of an archive entry.
    pub stamp: Option<i64>,
    /// The file on disk, when it is one: a transcript appended to record
    /// by record is then read from where the last run left off.
    pub path: Option<&'a Path>,
}

/// Mines one source: `read` gives its bytes when they must be read,
/// `sibling` the bytes of a file beside it (a bundle's `projects.json`).
pub(crate) fn mine_source(
    palace: &Palace,
    file: &SourceFile<'_>,
    read: impl FnOnce() -> std::io::Result<Vec<u8>>,
    sibling: &dyn Fn(&str) -> Option<Vec<u8>>,
    options: &TranscriptOptions,
) -> FeedResult<TranscriptOutcome> {
    let source = file.source.as_str();
    let (size, mtime_ns) = (file.size, file.stamp);
    let key = options.cursor_key();
    // A filtered run sees only part of the file: it neither trusts nor
    // writes the cursor of a whole read.
    let use_cursor = !options.selection.is_active();
    let stored = if use_cursor {
        palace.source_cursor(source)?.and_then(|text| Cursor::from_json(&text)).filter(|c| c.key == key)
    } else {
        None
    };
    if let Some(cursor) = &stored {
        if cursor.unchanged(&key, size, mtime_ns) {
            return Ok(unchanged(cursor));
        }
        if !options.dry_run
            && let Some(path) = file.path
            && let Some(tail) = &cursor.tail
            && size >= cursor.size
            && let Some(outcome) = mine_tail(palace, path, source, cursor, tail, mtime_ns, options)?
        {
            return Ok(outcome);
        }
    }
    let bytes = match read() {
        Ok(bytes) => bytes,
        Err(error) => return Ok(TranscriptOutcome::Failed(error.to_string())),
    };
    let hash = cursor::digest(&[&bytes]);
    if let Some(cursor) = &stored
        && cursor.hash.as_deref() == Some(hash.as_str())
    {
        if !options.dry_run {
            let refreshed = Cursor { size, mtime_ns, ..cursor.clone() };
            palace.set_source_cursor(source, Some(&refreshed.to_json()))?;
        }
        return Ok(unchanged(cursor));
    }
    let Ok(text) = String::from_utf8(bytes) else {
        return Ok(TranscriptOutcome::Failed("not UTF-8 text".into()));
    };
    let is_text = file.file_name.to_ascii_lowercase().ends_with(".txt");
    let stem = file.file_name.rsplit_once('.').map_or(file.file_name.as_str(), |(stem, _)| stem);
    let stem = if stem.is_empty() { "transcript" } else { stem };
    let mut read = match crate::bundle::companion(source, &file.file_name, &text, sibling, options)? {
        Some(Ok(read)) => read,
        Some(Err(reason)) => return Ok(TranscriptOutcome::NotTranscript(reason)),
        None => match conversations_read(source, stem, is_text, &text, options)? {
            Ok(read) => read,
            Err(reason) => return Ok(TranscriptOutcome::NotTranscript(reason)),
        },
    };
    let filed = self::file(palace, source, std::mem::take(&mut read.requests), options)?;
    let wing = read.wing.clone().unwrap_or_else(default_wing);
    let outcome = |filing| TranscriptOutcome::Mined {
        filing,
        records_skipped: read.records_skipped,
        conversations_skipped: read.left_out,
        human_messages: read.human_messages,
        last_human: read.last_human.clone(),
        wing: wing.clone(),
    };
    if options.dry_run || !use_cursor {
        return Ok(outcome(filed.filing));
    }
    // A transcript appended to record by record resumes from its last
    // exchange next time; other files are re-read only when they change.
    let tail = match (file.path, read.format, read.parsed.as_ref().map(|p| p.conversations.as_slice())) {
        (Some(path), Some(format), Some([conversation]))
            if options.extract == Extract::Exchange && mempalace_mine::line_per_record(format, &text) =>
        {
            let links = read.parsed.as_ref().map_or(&[][..], |p| p.links.as_slice());
            let base = TailBase {
                format,
                text: &text,
                base_offset: 0,
                base_line: 1,
                links,
                humans_before: 0,
                before_uuid: None,
            };
            match next_tail(&base, conversation, filed.drawers.get(1..).unwrap_or_default()) {
                Some(mut next) => {
                    next.check = tail_check(path, next.resume_at, text.len() as u64).map_err(|error| {
                        FeedError::Unreadable { path: path.to_path_buf(), detail: error.to_string() }
                    })?;
                    Some(next)
                }
                None => None,
            }
        }
        _ => None,
    };
    let distinct: std::collections::HashSet<&DrawerId> = filed.drawers.iter().flatten().collect();
    let cursor = Cursor {
        v: cursor::VERSION,
        key,
        size: text.len() as u64,
        mtime_ns,
        hash: tail.is_none().then_some(hash),
        drawers: distinct.len(),
        humans: read.human_messages,
        last_human: read.last_human.clone(),
        wing: Some(wing.to_string()),
        tail,
    };
    palace.set_source_cursor(source, Some(&cursor.to_json()))?;
    Ok(outcome(filed.filing))
}

/// What reading one source gave: the drawers to file and what the report
/// says about it.
#[derive(Default)]
pub(crate) struct SourceRead {
    /// The drawers.
    pub requests: Vec<IngestRequest>,
    /// The wing of its first conversation (or document).
    pub wing: Option<Wing>,
    /// Records left out inside it.
    pub records_skipped: usize,
    /// Conversations the selection left out.
    pub left_out: usize,
    /// Human messages.
    pub human_messages: usize,
    /// The last human message.
    pub last_human: Option<String>,
    /// The transcript format (none for Slack day files and bundle files).
    pub format: Option<Format>,
    /// The parsed conversations (for the tail cursor).
    pub parsed: Option<mempalace_mine::Parsed>,
}

/// The conversations of a transcript or chat export, as drawers to file;
/// `Err(reason)` when it is none of the known formats.
fn conversations_read(
    source: &str,
    stem: &str,
    is_text: bool,
    text: &str,
    options: &TranscriptOptions,
) -> FeedResult<Result<SourceRead, String>> {
    let (parsed, format) = match detect(text) {
        Some(format) => (parse(format, text, stem), Some(format)),
        None if is_text && detect_plain_text(text) => (parse(Format::PlainText, text, stem), Some(Format::PlainText)),
        None if mempalace_mine::slack::is_day_file(text) => {
            let (conversation, bad) = mempalace_mine::slack::channel(
                stem,
                &[(stem.to_string(), text.to_string())],
                &std::collections::HashMap::new(),
            );
            (mempalace_mine::Parsed { conversations: vec![conversation], skipped: bad, ..Default::default() }, None)
        }
        None => return Ok(Err(not_transcript_reason(is_text, text))),
    };
    let format_name = format.map_or("slack", Format::as_str);
    if !parsed.malformed.is_empty() {
        let shown: Vec<usize> = parsed.malformed.iter().copied().take(10).collect();
        tracing::warn!(file = %source, count = parsed.malformed.len(), first = ?shown, "malformed records skipped");
    }
    let mut read = SourceRead { records_skipped: parsed.skipped, format, ..SourceRead::default() };
    for conversation in &parsed.conversations {
        if !selected(conversation, &options.selection) {
            read.left_out += 1;
            continue;
        }
        let wing = wing_for(options.wing.as_ref(), conversation)?;
        for message in conversation.messages.iter().filter(|m| m.role == Role::User) {
            read.human_messages += 1;
            read.last_human = Some(message.text.clone());
        }
        read.wing.get_or_insert_with(|| wing.clone());
        let place = Place { source, wing: &wing, options, format: format_name };
        read.requests.extend(requests(conversation, &place, true));
    }
    read.parsed = Some(parsed);
    Ok(Ok(read))
}

/// Why a file is not read as a transcript.
fn not_transcript_reason(is_text: bool, text: &str) -> String {
    if text.trim().is_empty() {
        "empty file".to_string()
    } else if is_text {
        "plain text without `>` user lines (mine it as a project document instead)".to_string()
    } else {
        "not a transcript or chat export of a known format".to_string()
    }
}

/// The outcome of a file whose cursor says nothing changed.
fn unchanged(cursor: &Cursor) -> TranscriptOutcome {
    TranscriptOutcome::Mined {
        filing: SourceFiling { unchanged: cursor.drawers, ..SourceFiling::default() },
        records_skipped: 0,
        conversations_skipped: 0,
        human_messages: cursor.humans,
        last_human: cursor.last_human.clone(),
        wing: cursor.wing.as_deref().and_then(|w| Wing::parse(w).ok()).unwrap_or_else(default_wing),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_file_names() {
        assert!(is_day_file_name("2024-01-31.json"));
        assert!(!is_day_file_name("users.json"));
        assert!(!is_day_file_name("2024-1-31.json"));
        assert!(!is_day_file_name("2024-01-31.jsonl"));
    }
}
