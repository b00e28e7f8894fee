//! `mine PATH --mode convos`: file conversations (agent transcripts, chat
//! exports) as drawers of whole exchanges plus a header per conversation.
//!
//! Each file is one source: re-mining an unchanged file files and embeds
//! nothing; a file that grew or changed gets its new drawers and loses the
//! ones its earlier version had and this one does not. One unreadable or
//! malformed file is reported and skipped; the run fails only when nothing
//! could be mined.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use mempalace_core::name::normalize_wing_name;
use mempalace_core::time::{DayEdge, parse_timestamp};
use mempalace_core::{Room, Wing};
use mempalace_engine::drawers::SourceFiling;
use mempalace_engine::{IngestRequest, Palace};
use mempalace_mine::cursor::{self, Cursor, TailCursor, check_digest, check_ranges, line_start};
use mempalace_mine::{Conversation, Format, detect, detect_plain_text, header, parse, parse_from, units};
use serde_json::{Value, json};

use super::UserError;
use crate::output;

/// What to mine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// A project tree: documents first (code with --include-code), rooms from mempalace.yaml.
    Projects,
    /// Conversations: Claude Code, Codex CLI and Gemini CLI sessions, ChatGPT and Claude.ai exports,
    /// plain text with `>` user lines.
    Convos,
    /// opencode sessions, read from its SQLite database.
    Opencode,
}

/// `mine`.
#[derive(Debug, Args)]
pub struct MineArgs {
    /// A transcript file, or a folder searched for *.jsonl / *.json / *.txt transcripts
    /// (not used with --mode opencode).
    path: Option<PathBuf>,
    /// What the files are.
    #[arg(long, value_enum, default_value = "projects")]
    mode: Mode,
    /// Projects: mine files that .gitignore excludes too.
    #[arg(long)]
    no_gitignore: bool,
    /// Projects: mine this ignored path anyway (repeatable; relative to the project).
    #[arg(long = "include-ignored", value_name = "PATH")]
    include_ignored: Vec<PathBuf>,
    /// Projects: mine source code as well as documents.
    #[arg(long)]
    include_code: bool,
    /// Wing for every drawer (default: the conversation's project directory name, else "conversations").
    #[arg(long)]
    wing: Option<String>,
    /// Room for conversations (default "conversations"; projects route files by mempalace.yaml).
    #[arg(long, default_value = "conversations")]
    room: String,
    /// Who files them (default "mine").
    #[arg(long, default_value = "mine")]
    agent: String,
    /// Only the first N files (sessions with --mode opencode).
    #[arg(long)]
    limit: Option<usize>,
    /// opencode's database (default ~/.local/share/opencode/opencode.db).
    #[arg(long)]
    db: Option<PathBuf>,
    /// opencode: skip sessions with fewer messages.
    #[arg(long, default_value_t = 3)]
    min_messages: usize,
    /// opencode: only sessions updated since this date (YYYY-MM-DD).
    #[arg(long)]
    since: Option<String>,
    /// opencode: only this session.
    #[arg(long)]
    session: Option<String>,
    /// Show what would be filed; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

/// The wing of a conversation: the one asked for, else its directory's
/// normalised name, else `conversations`.
fn wing_for(fixed: Option<&Wing>, conversation: &Conversation) -> Result<Wing> {
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
        None => Wing::parse("conversations")?,
    })
}

/// A Slack export folder: it holds `users.json` or `channels.json`.
fn is_slack_export(dir: &Path) -> bool {
    dir.join("users.json").is_file() || dir.join("channels.json").is_file()
}

fn transcripts(path: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    if path.is_file() || is_slack_export(path) {
        out.push(path.to_path_buf());
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
        } else if name.ends_with(".jsonl") || name.ends_with(".json") || name.ends_with(".txt") {
            out.push(entry);
        }
    }
    Ok(())
}

/// The drawers of a conversation: its header (unless `with_header` is
/// false: a tail read files exchanges only) and its exchanges.
fn requests(
    conversation: &Conversation,
    source: &str,
    wing: &Wing,
    room: &Room,
    agent: &str,
    format: &str,
    with_header: bool,
) -> Vec<IngestRequest> {
    let started = conversation.started_at.as_deref().and_then(|t| parse_timestamp(t, "timestamp", DayEdge::Start).ok());
    let base = |text: String, ids: Vec<String>, kind: &str, at: Option<&str>| {
        let mut request = IngestRequest::new(wing.clone(), room.clone(), text, agent);
        request.raw = true;
        request.source_file = Some(source.to_string());
        request.session_id = Some(conversation.session_id.clone());
        request.filed_at = at.and_then(|t| parse_timestamp(t, "timestamp", DayEdge::Start).ok()).or(started);
        request.context.insert("unit".into(), json!(kind));
        request.context.insert("format".into(), json!(format));
        request.context.insert("message_ids".into(), json!(ids));
        if let Some(title) = &conversation.title {
            request.context.insert("title".into(), json!(title));
        }
        if let Some(cwd) = &conversation.cwd {
            request.context.insert("cwd".into(), json!(cwd));
        }
        request
    };
    let mut out = Vec::new();
    if with_header {
        out.push(base(header(conversation), Vec::new(), "header", conversation.started_at.as_deref()));
    }
    for unit in units(conversation) {
        let at = conversation
            .messages
            .iter()
            .find(|m| unit.turn_ids.first() == Some(&m.id))
            .and_then(|m| m.timestamp.clone());
        out.push(base(unit.text, unit.turn_ids, "exchange", at.as_deref()));
    }
    out
}

/// How one file is filed.
pub struct FileOptions<'a> {
    /// Wing for every drawer, else derived from the conversation.
    pub wing: Option<&'a Wing>,
    /// Room.
    pub room: &'a Room,
    /// Who files.
    pub agent: &'a str,
    /// Count only.
    pub dry_run: bool,
}

/// What mining one file did.
pub enum FileOutcome {
    /// Read and filed (or counted, in a dry run).
    Mined {
        /// Drawers filed, unchanged, removed.
        filing: SourceFiling,
        /// Drawers a dry run would file.
        would_file: usize,
        /// Records skipped inside the file.
        records_skipped: usize,
        /// Human messages in the file.
        human_messages: usize,
        /// The last human message.
        last_human: Option<String>,
        /// The wing of its first conversation.
        wing: Wing,
    },
    /// Not a transcript of a known format.
    NotTranscript,
    /// Unreadable.
    Failed(String),
}

/// Mines a Slack export folder: one conversation per channel folder.
fn mine_slack(palace: &Palace, dir: &Path, options: &FileOptions<'_>) -> Result<FileOutcome> {
    let root = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let users = mempalace_mine::slack::users(&std::fs::read_to_string(root.join("users.json")).unwrap_or_default());
    let mut channels: Vec<PathBuf> =
        std::fs::read_dir(&root)?.filter_map(Result::ok).map(|e| e.path()).filter(|p| p.is_dir()).collect();
    channels.sort();
    let wing = match options.wing {
        Some(wing) => wing.clone(),
        None => root
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| Wing::parse(&normalize_wing_name(n)).ok())
            .unwrap_or(Wing::parse("slack")?),
    };
    let mut total = SourceFiling::default();
    let (mut would_file, mut bad_days, mut human_messages) = (0, 0, 0);
    for channel in channels {
        let name = channel.file_name().and_then(|n| n.to_str()).unwrap_or("channel").to_string();
        let mut days = Vec::new();
        for day in std::fs::read_dir(&channel)?.filter_map(Result::ok).map(|e| e.path()) {
            if day.extension().is_some_and(|e| e == "json") {
                days.push((
                    day.file_name().and_then(|n| n.to_str()).unwrap_or("").to_string(),
                    std::fs::read_to_string(&day).unwrap_or_default(),
                ));
            }
        }
        let (conversation, bad) = mempalace_mine::slack::channel(&name, &days, &users);
        bad_days += bad;
        if conversation.messages.is_empty() {
            continue;
        }
        human_messages += conversation.messages.len();
        let source = channel.display().to_string();
        let units = requests(&conversation, &source, &wing, options.room, options.agent, "slack", true);
        would_file += units.len();
        if !options.dry_run {
            total += palace.file_source(&source, units)?.filing;
        }
    }
    Ok(FileOutcome::Mined {
        filing: total,
        would_file,
        records_skipped: bad_days,
        human_messages,
        last_human: None,
        wing,
    })
}

/// A file's size and modification time (nanoseconds since the epoch).
fn stat(file: &Path) -> std::io::Result<(u64, Option<i64>)> {
    let meta = std::fs::metadata(file)?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_nanos()).ok());
    Ok((meta.len(), mtime))
}

/// Bytes `from..to` of a file (fewer when it is shorter); `to = u64::MAX`
/// reads to the end.
fn read_range(file: &Path, from: u64, to: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut handle = std::fs::File::open(file)?;
    handle.seek(SeekFrom::Start(from))?;
    let mut bytes = Vec::new();
    handle.take(to.saturating_sub(from)).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The check digest of a file read up to `size`, resuming at `resume_at`.
fn tail_check(file: &Path, resume_at: u64, size: u64) -> std::io::Result<String> {
    let [head, before, region] = check_ranges(resume_at, size);
    Ok(check_digest(
        &read_range(file, head.0, head.1)?,
        &read_range(file, before.0, before.1)?,
        &read_range(file, region.0, region.1)?,
    ))
}

/// The text of bytes read from a line start; an incomplete character at
/// the end (a writer caught mid-line) is left for the next read.
fn text_prefix(bytes: &[u8]) -> Option<&str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Some(text),
        Err(error) if error.error_len().is_none() => std::str::from_utf8(&bytes[..error.valid_up_to()]).ok(),
        Err(_) => None,
    }
}

/// Where the next read of a line-per-record transcript resumes: at the
/// start of its last exchange (the part later lines can still change).
/// `text` starts at byte `base_offset` of the file, at line `base_line`;
/// `unit_drawers` are the drawers filed for each unit of `conversation`.
struct TailBase<'a> {
    format: Format,
    text: &'a str,
    base_offset: u64,
    base_line: usize,
    links: &'a [mempalace_mine::Link],
    humans_before: usize,
    before_uuid: Option<String>,
}

fn next_tail(
    base: &TailBase<'_>,
    conversation: &Conversation,
    unit_drawers: &[Vec<mempalace_core::DrawerId>],
) -> Option<TailCursor> {
    let units = units(conversation);
    let last = units.last()?.turn_ids.first()?.clone();
    let first_unit = units.iter().position(|u| u.turn_ids.first() == Some(&last))?;
    let line = conversation.messages.iter().find(|m| m.id == last)?.line;
    let offset = line.checked_sub(base.base_line).and_then(|n| line_start(base.text, n + 1))?;
    let humans = conversation.messages.iter().filter(|m| m.role == mempalace_mine::Role::User && m.line < line).count();
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

/// The filing parameters a cursor is valid for.
fn cursor_key(options: &FileOptions<'_>) -> String {
    format!("convos|{}|{}|{}", options.wing.map_or("-", |w| w.as_str()), options.room, options.agent)
}

/// Mines the end of a transcript from its cursor; `None` when it must be
/// read whole (rewritten, rewound, retitled, or not readable from there).
fn mine_tail(
    palace: &Palace,
    file: &Path,
    source: &str,
    cursor: &Cursor,
    tail: &TailCursor,
    mtime_ns: Option<i64>,
    options: &FileOptions<'_>,
) -> Result<Option<FileOutcome>> {
    let format = match tail.format.as_str() {
        "claude-code" => Format::ClaudeCode,
        "codex" => Format::Codex,
        _ => return Ok(None),
    };
    let Some(old_region) = cursor.size.checked_sub(tail.resume_at) else { return Ok(None) };
    let [head, before, _] = check_ranges(tail.resume_at, cursor.size);
    let region = read_range(file, tail.resume_at, u64::MAX)?;
    if (region.len() as u64) < old_region
        || check_digest(
            &read_range(file, head.0, head.1)?,
            &read_range(file, before.0, before.1)?,
            &region[..old_region as usize],
        ) != tail.check
    {
        tracing::debug!(file = %source, "transcript rewritten since the last read; reading it whole");
        return Ok(None);
    }
    let Some(text) = text_prefix(&region) else { return Ok(None) };
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("transcript");
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
    let wing = match &cursor.wing {
        Some(wing) => Wing::parse(wing)?,
        None => wing_for(options.wing, &conversation)?,
    };
    let units = requests(&conversation, source, &wing, options.room, options.agent, format.as_str(), false);
    let reread: Vec<mempalace_core::DrawerId> =
        tail.tail_ids.iter().filter_map(|id| mempalace_core::DrawerId::parse(id).ok()).collect();
    let filed = palace.file_source_tail(units, &reread)?;
    let humans_here: Vec<&mempalace_mine::Message> =
        conversation.messages.iter().filter(|m| m.role == mempalace_mine::Role::User).collect();
    let human_messages = tail.humans_before + humans_here.len();
    let last_human = humans_here.last().map(|m| m.text.clone()).or_else(|| cursor.last_human.clone());
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
            next.check = tail_check(file, next.resume_at, size)?;
            Some(next)
        }
        None => None,
    };
    let updated = Cursor {
        v: cursor::VERSION,
        key: cursor.key.clone(),
        size,
        mtime_ns,
        hash: None,
        drawers: (cursor.drawers + filed.filing.added).saturating_sub(filed.filing.removed),
        humans: human_messages,
        last_human: last_human.clone(),
        wing: Some(wing.to_string()),
        tail: next,
    };
    palace.set_source_cursor(source, Some(&updated.to_json()))?;
    tracing::debug!(file = %source, from = tail.resume_at, added = filed.filing.added, "transcript tail mined");
    Ok(Some(FileOutcome::Mined {
        filing: filed.filing,
        would_file: 0,
        records_skipped: parsed.skipped,
        human_messages,
        last_human,
        wing,
    }))
}

/// Mines one file (or a Slack export folder). Uses and updates the file's
/// cursor: an unchanged file is not read, a grown transcript is read from
/// where the last run left off.
pub fn mine_file(palace: &Palace, file: &Path, options: &FileOptions<'_>) -> Result<FileOutcome> {
    if file.is_dir() {
        return mine_slack(palace, file, options);
    }
    let source = file.canonicalize().unwrap_or_else(|_| file.to_path_buf()).display().to_string();
    let (size, mtime_ns) = match stat(file) {
        Ok(stat) => stat,
        Err(error) => return Ok(FileOutcome::Failed(error.to_string())),
    };
    let key = cursor_key(options);
    let stored = if options.dry_run {
        None
    } else {
        palace.source_cursor(&source)?.and_then(|text| Cursor::from_json(&text)).filter(|c| c.key == key)
    };
    if let Some(cursor) = &stored {
        if cursor.unchanged(&key, size, mtime_ns) {
            return Ok(unchanged(cursor));
        }
        if let Some(tail) = &cursor.tail
            && size >= cursor.size
            && let Some(outcome) = mine_tail(palace, file, &source, cursor, tail, mtime_ns, options)?
        {
            return Ok(outcome);
        }
    }
    let bytes = match std::fs::read(file) {
        Ok(bytes) => bytes,
        Err(error) => return Ok(FileOutcome::Failed(error.to_string())),
    };
    let hash = cursor::digest(&[&bytes]);
    if let Some(cursor) = &stored
        && cursor.hash.as_deref() == Some(hash.as_str())
    {
        let refreshed = Cursor { size, mtime_ns, ..cursor.clone() };
        palace.set_source_cursor(&source, Some(&refreshed.to_json()))?;
        return Ok(unchanged(cursor));
    }
    let Ok(text) = String::from_utf8(bytes) else { return Ok(FileOutcome::Failed("not UTF-8 text".into())) };
    let is_text = file.extension().is_some_and(|e| e == "txt");
    let stem = file.file_stem().and_then(|s| s.to_str()).unwrap_or("transcript");
    let (parsed, format) = match detect(&text) {
        Some(format) => (parse(format, &text, stem), Some(format)),
        None if is_text && detect_plain_text(&text) => (parse(Format::PlainText, &text, stem), Some(Format::PlainText)),
        None if mempalace_mine::slack::is_day_file(&text) => {
            let (conversation, bad) = mempalace_mine::slack::channel(
                stem,
                &[(stem.to_string(), text.clone())],
                &std::collections::HashMap::new(),
            );
            (mempalace_mine::Parsed { conversations: vec![conversation], skipped: bad, ..Default::default() }, None)
        }
        None => return Ok(FileOutcome::NotTranscript),
    };
    let format_name = format.map_or("slack", Format::as_str);
    if !parsed.malformed.is_empty() {
        let shown: Vec<usize> = parsed.malformed.iter().copied().take(10).collect();
        tracing::warn!(file = %source, count = parsed.malformed.len(), first = ?shown, "malformed records skipped");
    }
    let mut requests_for_file = Vec::new();
    let mut first_wing = None;
    let (mut human_messages, mut last_human) = (0, None);
    for conversation in &parsed.conversations {
        let wing = wing_for(options.wing, conversation)?;
        for message in conversation.messages.iter().filter(|m| m.role == mempalace_mine::Role::User) {
            human_messages += 1;
            last_human = Some(message.text.clone());
        }
        first_wing.get_or_insert_with(|| wing.clone());
        requests_for_file.extend(requests(
            conversation,
            &source,
            &wing,
            options.room,
            options.agent,
            format_name,
            true,
        ));
    }
    let wing = first_wing.unwrap_or(Wing::parse("conversations")?);
    let would_file = requests_for_file.len();
    if options.dry_run {
        return Ok(FileOutcome::Mined {
            filing: SourceFiling::default(),
            would_file,
            records_skipped: parsed.skipped,
            human_messages,
            last_human,
            wing,
        });
    }
    let filed = match palace.file_source(&source, requests_for_file) {
        Ok(filed) => filed,
        Err(error) => return Ok(FileOutcome::Failed(error.to_string())),
    };
    // A transcript appended to record by record resumes from its last
    // exchange next time; other files are re-read only when they change.
    let tail = match (format, parsed.conversations.as_slice()) {
        (Some(format), [conversation]) if mempalace_mine::line_per_record(format, &text) => {
            let base = TailBase {
                format,
                text: &text,
                base_offset: 0,
                base_line: 1,
                links: &parsed.links,
                humans_before: 0,
                before_uuid: None,
            };
            match next_tail(&base, conversation, filed.drawers.get(1..).unwrap_or_default()) {
                Some(mut next) => {
                    next.check = tail_check(file, next.resume_at, text.len() as u64)?;
                    Some(next)
                }
                None => None,
            }
        }
        _ => None,
    };
    let cursor = Cursor {
        v: cursor::VERSION,
        key,
        size: text.len() as u64,
        mtime_ns,
        hash: tail.is_none().then_some(hash),
        drawers: filed.distinct_drawers(),
        humans: human_messages,
        last_human: last_human.clone(),
        wing: Some(wing.to_string()),
        tail,
    };
    palace.set_source_cursor(&source, Some(&cursor.to_json()))?;
    Ok(FileOutcome::Mined {
        filing: filed.filing,
        would_file,
        records_skipped: parsed.skipped,
        human_messages,
        last_human,
        wing,
    })
}

/// The outcome of a file whose cursor says nothing changed.
fn unchanged(cursor: &Cursor) -> FileOutcome {
    FileOutcome::Mined {
        filing: SourceFiling { unchanged: cursor.drawers, ..SourceFiling::default() },
        would_file: 0,
        records_skipped: 0,
        human_messages: cursor.humans,
        last_human: cursor.last_human.clone(),
        wing: cursor.wing.as_deref().and_then(|w| Wing::parse(w).ok()).unwrap_or_else(default_wing),
    }
}

fn default_wing() -> Wing {
    Wing::parse("conversations").expect("a valid wing name")
}

/// `mine --mode opencode`.
fn run_opencode(palace: &Palace, args: &MineArgs, home: Option<&Path>) -> Result<()> {
    let started = Instant::now();
    let db = match &args.db {
        Some(db) => db.clone(),
        None => {
            let home = home.ok_or_else(|| UserError("HOME is not set; pass --db".into()))?;
            home.join(".local/share/opencode/opencode.db")
        }
    };
    if !db.is_file() {
        bail!(mempalace_engine::EngineError::NotFound { what: "opencode database", id: db.display().to_string() });
    }
    let since_ms = args
        .since
        .as_deref()
        .map(|d| parse_timestamp(d, "--since", DayEdge::Start).map(|t| t.timestamp_millis()))
        .transpose()?;
    let selection = mempalace_mine::opencode::Selection {
        min_messages: args.min_messages,
        since_ms,
        session: args.session.clone(),
    };
    let read = mempalace_mine::opencode::read_db(&db, &selection).map_err(UserError)?;
    let room = Room::parse(&args.room)?;
    let fixed_wing = args.wing.as_deref().map(Wing::parse).transpose()?;
    let db_name = db.canonicalize().unwrap_or(db.clone()).display().to_string();
    let (mut total, mut would_file) = (SourceFiling::default(), 0);
    let conversations = read.conversations.iter().take(args.limit.unwrap_or(usize::MAX));
    let mut sessions = 0;
    for conversation in conversations {
        sessions += 1;
        let wing = wing_for(fixed_wing.as_ref(), conversation)?;
        let source = format!("opencode:{db_name}#{}", conversation.session_id);
        let units = requests(conversation, &source, &wing, &room, &args.agent, "opencode", true);
        would_file += units.len();
        if !args.dry_run {
            total += palace.file_source(&source, units)?.filing;
        }
    }
    let summary = json!({
        "sessions": sessions, "sessions_skipped": read.skipped_sessions,
        "drawers_added": total.added, "drawers_unchanged": total.unchanged, "drawers_removed": total.removed,
        "dry_run": args.dry_run, "would_file": would_file, "seconds": started.elapsed().as_secs_f64(),
    });
    if args.json {
        output::json(&summary)?;
    } else {
        output::line(format!(
            "{sessions} opencode sessions ({} skipped); drawers {} added, {} unchanged, {} replaced",
            read.skipped_sessions,
            if args.dry_run { would_file } else { total.added },
            total.unchanged,
            total.removed
        ))?;
    }
    Ok(())
}

/// `mine DIR` (projects mode).
fn run_project(palace: &Palace, args: &MineArgs) -> Result<()> {
    use mempalace_core::chunk::chunk_lines;
    use mempalace_core::project::{ProjectConfig, room_for_folder};
    let started = Instant::now();
    let Some(root) = args.path.clone() else {
        bail!(UserError("give the project folder to mine, e.g. `mempalace mine ~/projects/lab-notes`".into()));
    };
    if !root.is_dir() {
        bail!(mempalace_engine::EngineError::NotFound { what: "project folder", id: root.display().to_string() });
    }
    let root = root.canonicalize()?;
    let config = match std::fs::read_to_string(root.join("mempalace.yaml")) {
        Ok(text) => Some(ProjectConfig::parse(&text).map_err(|e| {
            UserError(format!(
                "{}: {e}; fix it or run `mempalace init {}` to write a new one",
                root.join("mempalace.yaml").display(),
                root.display()
            ))
        })?),
        Err(_) => None,
    };
    let wing = match (&args.wing, &config) {
        (Some(wing), _) => Wing::parse(wing)?,
        (None, Some(config)) => Wing::parse(&config.wing)?,
        (None, None) => {
            Wing::parse(&normalize_wing_name(root.file_name().and_then(|n| n.to_str()).unwrap_or("project")))?
        }
    };
    let options = mempalace_mine::project::WalkOptions {
        gitignore: !args.no_gitignore,
        include_ignored: args.include_ignored.clone(),
        include_code: args.include_code,
    };
    let mut files = mempalace_mine::project::walk(&root, &options);
    if let Some(limit) = args.limit {
        files.truncate(limit);
    }
    let (mut read, mut failed) = (0, Vec::<Value>::new());
    let (mut total, mut would_file) = (SourceFiling::default(), 0);
    // A file is re-read only when its size or time changed, and re-filed
    // only when its content did, under the same settings.
    let key = format!(
        "projects|{wing}|{}|{}",
        args.agent,
        cursor::digest(&[std::fs::read(root.join("mempalace.yaml")).unwrap_or_default().as_slice()])
    );
    let progress = output::Progress::new(files.len());
    for (done, file) in files.iter().enumerate() {
        progress.update(done, total.added);
        let source = file.display().to_string();
        let (size, mtime_ns) = match stat(file) {
            Ok(stat) => stat,
            Err(error) => {
                failed.push(json!({"file": source, "error": error.to_string()}));
                continue;
            }
        };
        let stored = if args.dry_run {
            None
        } else {
            palace.source_cursor(&source)?.and_then(|text| Cursor::from_json(&text)).filter(|c| c.key == key)
        };
        if let Some(cursor) = &stored
            && cursor.unchanged(&key, size, mtime_ns)
        {
            read += 1;
            total.unchanged += cursor.drawers;
            continue;
        }
        let text = match std::fs::read(file).map(String::from_utf8) {
            Ok(Ok(text)) if !text.contains('\0') => text,
            Ok(_) => {
                failed.push(json!({"file": source, "error": "not UTF-8 text"}));
                continue;
            }
            Err(error) => {
                failed.push(json!({"file": source, "error": error.to_string()}));
                continue;
            }
        };
        read += 1;
        let hash = cursor::digest(&[text.as_bytes()]);
        if let Some(cursor) = &stored
            && cursor.hash.as_deref() == Some(hash.as_str())
        {
            total.unchanged += cursor.drawers;
            let refreshed = Cursor { size, mtime_ns, ..cursor.clone() };
            palace.set_source_cursor(&source, Some(&refreshed.to_json()))?;
            continue;
        }
        let relative = file.strip_prefix(&root).unwrap_or(file).display().to_string();
        let room_name = match &config {
            Some(config) => config.room_for(&relative, &text),
            None => relative
                .split('/')
                .rev()
                .skip(1)
                .last()
                .and_then(room_for_folder)
                .unwrap_or_else(|| "general".to_string()),
        };
        let room = Room::parse(&room_name).unwrap_or(Room::parse("general")?);
        let mtime = std::fs::metadata(file).and_then(|m| m.modified()).ok();
        let requests: Vec<IngestRequest> = chunk_lines(&text)
            .into_iter()
            .enumerate()
            .map(|(index, chunk)| {
                let mut request = IngestRequest::new(wing.clone(), room.clone(), chunk.text, args.agent.clone());
                request.raw = true;
                request.source_file = Some(source.clone());
                request.lines = Some((chunk.line_start, chunk.line_end));
                request.chunk_index = Some(index as u32);
                request.filed_at = mtime.map(mempalace_core::Timestamp::from);
                request.context.insert("relative_path".into(), json!(relative));
                request
            })
            .collect();
        would_file += requests.len();
        if args.dry_run {
            continue;
        }
        match palace.file_source(&source, requests) {
            Ok(filed) => {
                total += filed.filing;
                let cursor = Cursor {
                    v: cursor::VERSION,
                    key: key.clone(),
                    size,
                    mtime_ns,
                    hash: Some(hash),
                    drawers: filed.distinct_drawers(),
                    humans: 0,
                    last_human: None,
                    wing: Some(wing.to_string()),
                    tail: None,
                };
                palace.set_source_cursor(&source, Some(&cursor.to_json()))?;
            }
            Err(error) => failed.push(json!({"file": source, "error": error.to_string()})),
        }
    }
    progress.finish();
    let summary = json!({
        "files": files.len(), "read": read, "failed": failed, "wing": wing.as_str(),
        "drawers_added": total.added, "drawers_unchanged": total.unchanged, "drawers_removed": total.removed,
        "dry_run": args.dry_run, "would_file": would_file, "seconds": started.elapsed().as_secs_f64(),
    });
    if args.json {
        output::json(&summary)?;
    } else {
        output::line(format!(
            "{} files in wing {wing}: {read} read, {} failed; drawers {} added, {} unchanged, {} replaced ({:.1} s)",
            files.len(),
            failed.len(),
            if args.dry_run { would_file } else { total.added },
            total.unchanged,
            total.removed,
            started.elapsed().as_secs_f64()
        ))?;
    }
    if read == 0 && !files.is_empty() {
        bail!(UserError("nothing could be mined: no file was readable text".into()));
    }
    Ok(())
}

/// Runs the command.
pub fn run(palace: &Palace, args: MineArgs, home: Option<&Path>) -> Result<()> {
    if args.mode == Mode::Opencode {
        return run_opencode(palace, &args, home);
    }
    if args.mode == Mode::Projects {
        return run_project(palace, &args);
    }
    let started = Instant::now();
    let Some(path) = args.path.clone() else {
        bail!(UserError(
            "give the transcript file or folder to mine, e.g. `mempalace mine ~/.claude/projects --mode convos`".into()
        ));
    };
    if !path.exists() {
        bail!(mempalace_engine::EngineError::NotFound { what: "path", id: path.display().to_string() });
    }
    let mut files = Vec::new();
    transcripts(&path, &mut files).map_err(|e| UserError(format!("cannot read {}: {e}", path.display())))?;
    if let Some(limit) = args.limit {
        files.truncate(limit);
    }
    let room = Room::parse(&args.room)?;
    let fixed_wing = args.wing.as_deref().map(Wing::parse).transpose()?;
    let options = FileOptions { wing: fixed_wing.as_ref(), room: &room, agent: &args.agent, dry_run: args.dry_run };
    let (mut read, mut skipped, mut failed) = (0, 0, Vec::<Value>::new());
    let (mut total, mut would_file, mut records_skipped) = (SourceFiling::default(), 0, 0);
    let progress = output::Progress::new(files.len());
    for (done, file) in files.iter().enumerate() {
        progress.update(done, total.added);
        let source = file.display().to_string();
        match mine_file(palace, file, &options)? {
            FileOutcome::Mined { filing, would_file: count, records_skipped: bad, .. } => {
                read += 1;
                total += filing;
                would_file += count;
                records_skipped += bad;
                tracing::info!(file = %source, added = filing.added, unchanged = filing.unchanged, replaced = filing.removed, "mined");
            }
            FileOutcome::NotTranscript => {
                skipped += 1;
                tracing::info!(file = %source, "not a transcript of a known format; skipped");
            }
            FileOutcome::Failed(error) => failed.push(json!({"file": source, "error": error})),
        }
    }
    progress.finish();
    let summary = json!({
        "files": files.len(), "read": read, "skipped": skipped, "failed": failed,
        "drawers_added": total.added, "drawers_unchanged": total.unchanged, "drawers_removed": total.removed,
        "records_skipped": records_skipped, "dry_run": args.dry_run, "would_file": would_file,
        "seconds": started.elapsed().as_secs_f64(),
    });
    if args.json {
        output::json(&summary)?;
    } else {
        output::line(format!(
            "{} files: {read} read, {skipped} not transcripts, {} failed; drawers {} added, {} unchanged, {} replaced ({:.1} s)",
            files.len(),
            failed.len(),
            if args.dry_run { would_file } else { total.added },
            total.unchanged,
            total.removed,
            started.elapsed().as_secs_f64()
        ))?;
        for failure in &failed {
            output::note(format!(
                "failed: {} — {}",
                failure["file"].as_str().unwrap_or(""),
                failure["error"].as_str().unwrap_or("")
            ));
        }
    }
    if read == 0 && !files.is_empty() {
        bail!(UserError("nothing could be mined: no file was a readable transcript of a known format".into()));
    }
    Ok(())
}
