//! `logstream …`, `task …` and `artifact …`: the Python MemPalace 3.11
//! coordination verbs (RFC 003), thin over the engine's coordination calls.
//!
//! Flags, text output and `--json` shapes are MemPalace's (the JSON shapes
//! are the MCP tools', from `mempalace_mcp::tools::coordination`). With
//! `--json`, a refusal is printed on stdout as `{"error": …}`, as MemPalace
//! does; without it, on stderr. Exit codes follow our table (docs/cli.md),
//! not MemPalace's blanket 1; `logstream wait` and `watch` exit 2 when they
//! time out, as MemPalace's do. Replication between replicas
//! (`logstream sync`) has no place here — agents share one palace — and
//! says so.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use clap::{ArgGroup, Args, Subcommand};
use mempalace_core::coordination::{
    BaseCommit, EventDraft, EventQueryDraft, StoredEvent, TASK_REQUEST_TYPE, TaskDraft, WatchDraft, WatchFilter,
    format_second, py_repr, task_handoff,
};
use mempalace_engine::coordination::{AckDraft, ArtifactDraft, WaitOutcome};
use mempalace_engine::{EngineError, Palace};
use mempalace_mcp::tools::coordination::{ArtifactRecordShape, ArtifactShape, EventListing, EventShape, EventWaited};
use serde::Serialize;
use serde_json::{Map, Value, json};

use super::{Access, Silent, UserError, open_palace};
use crate::output;
use crate::settings::Settings;

/// `logstream` subcommands.
#[derive(Debug, Subcommand)]
pub enum LogstreamCommand {
    /// Append a coordination event.
    Append(AppendArgs),
    /// List events (oldest first unless --order desc).
    List(ListArgs),
    /// Block until a matching event exists (exit 2 on timeout).
    Wait(WaitArgs),
    /// Background watcher: block until interesting events arrive, then wake (exit 2 on idle).
    Watch(WatchArgs),
    /// Acknowledge an event (appends event.ack, never mutates).
    Ack(AckArgs),
    /// MemPalace's replica sync; not needed here: agents share one palace (exit 2).
    Sync(SyncArgs),
}

/// `task` subcommands.
#[derive(Debug, Subcommand)]
pub enum TaskCommand {
    /// Create a canonical task.request and print a pasteable handoff.
    Create(TaskCreateArgs),
    /// Run an existing task through a supported headless coding agent.
    Launch(TaskLaunchArgs),
}

/// `artifact` subcommands.
#[derive(Debug, Subcommand)]
pub enum ArtifactCommand {
    /// Store exact artifact content.
    Put(PutArgs),
    /// Fetch exact artifact content (stdout pipes into git apply).
    Get(GetArgs),
}

/// `logstream append`.
#[derive(Debug, Args)]
pub struct AppendArgs {
    /// Event type, e.g. task.request.
    #[arg(long = "type")]
    event_type: String,
    /// Stream, e.g. project/mempalace.
    #[arg(long)]
    stream: String,
    /// Room, e.g. delegation.
    #[arg(long)]
    room: String,
    /// Topic name, e.g. auth-v2.
    #[arg(long)]
    topic: Option<String>,
    /// Writer agent identity.
    #[arg(long)]
    from_agent: String,
    /// Target agent or '*'.
    #[arg(long)]
    to_agent: Option<String>,
    /// Task/conversation id.
    #[arg(long)]
    correlation_id: Option<String>,
    /// Git branch.
    #[arg(long)]
    branch: Option<String>,
    /// Git commit work started from.
    #[arg(long)]
    base_commit: Option<String>,
    /// open|claimed|ready|applied|blocked|failed|superseded.
    #[arg(long)]
    status: Option<String>,
    /// Verbatim body text.
    #[arg(long, allow_hyphen_values = true)]
    body: Option<String>,
    /// Read body from file ('-' for stdin), byte for byte.
    #[arg(long, value_name = "FILE")]
    body_file: Option<String>,
    /// Extra fields as a JSON object.
    #[arg(long)]
    metadata: Option<String>,
    /// Reference an already-stored artifact (repeatable).
    #[arg(long = "artifact-id", value_name = "ARTIFACT_ID")]
    artifact_ids: Vec<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

/// Filters shared by `list` and `wait`.
#[derive(Debug, Args)]
pub struct Filters {
    /// Stream, e.g. project/mempalace.
    #[arg(long)]
    stream: Option<String>,
    /// Room, e.g. delegation, patches.
    #[arg(long)]
    room: Option<String>,
    /// Topic, e.g. auth-v2.
    #[arg(long)]
    topic: Option<String>,
    /// Event type, e.g. task.request.
    #[arg(long = "type")]
    event_type: Option<String>,
    /// Target agent (also matches '*').
    #[arg(long)]
    to_agent: Option<String>,
    /// Writer agent (filters by who wrote the event).
    #[arg(long)]
    from_agent: Option<String>,
    /// Task/conversation id.
    #[arg(long)]
    correlation_id: Option<String>,
    /// open|claimed|ready|applied|blocked|failed|superseded.
    #[arg(long)]
    status: Option<String>,
    /// Only events strictly after this id.
    #[arg(long)]
    since_event_id: Option<String>,
    /// Only events at/after this time (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ).
    #[arg(long)]
    since_created_at: Option<String>,
}

impl Filters {
    fn draft(self) -> EventQueryDraft {
        EventQueryDraft {
            stream: self.stream,
            room: self.room,
            topic: self.topic,
            event_type: self.event_type,
            to_agent: self.to_agent,
            writer: self.from_agent,
            correlation_id: self.correlation_id,
            status: self.status,
            since_event_id: self.since_event_id,
            since_created_at: self.since_created_at,
            ..EventQueryDraft::default()
        }
    }
}

/// `logstream list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    filters: Filters,
    /// Only events strictly before this id in append order.
    #[arg(long)]
    before_event_id: Option<String>,
    /// asc (oldest first, default) or desc (newest first).
    #[arg(long, default_value = "asc", value_parser = ["asc", "desc"])]
    order: String,
    /// Max events (default 50, at most 500).
    #[arg(long, default_value_t = 50, allow_negative_numbers = true)]
    limit: i64,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

/// `logstream wait`.
#[derive(Debug, Args)]
pub struct WaitArgs {
    #[command(flatten)]
    filters: Filters,
    /// How long to wait in ms (default 60000, max 300000).
    #[arg(long, default_value_t = 60_000, allow_negative_numbers = true)]
    timeout_ms: i64,
    /// Max events to return on match (default 50).
    #[arg(long, default_value_t = 50, allow_negative_numbers = true)]
    limit: i64,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

/// `logstream watch`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Your identity. Shorthand for --to-agent <id> --exclude-from-agent <id>: wake for what is addressed to you
    /// (broadcasts included) but never for your own events.
    #[arg(long)]
    agent: Option<String>,
    /// Stream (repeatable; matches any).
    #[arg(long)]
    stream: Vec<String>,
    /// Room (repeatable; matches any).
    #[arg(long)]
    room: Vec<String>,
    /// Topic (repeatable; matches any).
    #[arg(long)]
    topic: Vec<String>,
    /// Event type (repeatable; matches any).
    #[arg(long = "type")]
    event_type: Vec<String>,
    /// Status (repeatable; matches any).
    #[arg(long)]
    status: Vec<String>,
    /// Target agent (repeatable; '*' matches).
    #[arg(long)]
    to_agent: Vec<String>,
    /// Writer agent (repeatable).
    #[arg(long)]
    from_agent: Vec<String>,
    /// Never wake for events written by this agent (repeatable).
    #[arg(long)]
    exclude_from_agent: Vec<String>,
    /// Correlation id (repeatable).
    #[arg(long)]
    correlation_id: Vec<String>,
    /// Start strictly after this event id (overrides --state-file).
    #[arg(long)]
    since_event_id: Option<String>,
    /// Persist the cursor here so a restart resumes exactly where it stopped. When omitted with --agent, defaults
    /// to ~/.mempalace/watch/<agent>.json with '_' doubled and ':' sanitized to '_'; "" keeps no state.
    #[arg(long)]
    state_file: Option<String>,
    /// Replay the log from the beginning when there is no cursor (default: start at the tip).
    #[arg(long)]
    from_start: bool,
    /// Keep watching after a match instead of exiting on the first one.
    #[arg(long)]
    follow: bool,
    /// Give up after this long with no match (0 = wait forever).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    idle_exit_ms: i64,
    /// Long-poll length per iteration (default 300000, the maximum).
    #[arg(long, default_value_t = 300_000, allow_negative_numbers = true)]
    poll_timeout_ms: i64,
    /// Max events per poll (default 50).
    #[arg(long, default_value_t = 50, allow_negative_numbers = true)]
    limit: i64,
    /// Machine-readable output (NDJSON under --follow).
    #[arg(long)]
    json: bool,
}

/// `logstream ack`.
#[derive(Debug, Args)]
pub struct AckArgs {
    /// Event id to acknowledge.
    event_id: String,
    /// Acknowledging agent identity.
    #[arg(long)]
    from_agent: String,
    /// open|claimed|ready|applied|blocked|failed|superseded.
    #[arg(long)]
    status: Option<String>,
    /// Topic override (defaults to target event's topic).
    #[arg(long)]
    topic: Option<String>,
    /// Verbatim ack notes.
    #[arg(long, allow_hyphen_values = true)]
    body: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

/// `logstream sync` (accepted for MemPalace's command lines; not needed).
#[derive(Debug, Args)]
pub struct SyncArgs {
    /// Peer base URL (MemPalace replication; not used here).
    #[arg(long)]
    peer: Option<String>,
    /// Bearer token for --peer (not used here).
    #[arg(long)]
    token: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

/// `task create`.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("goal_text").required(true).args(["goal", "goal_file"])))]
#[command(group(ArgGroup::new("done_text").required(true).args(["done", "done_file"])))]
pub struct TaskCreateArgs {
    /// Project name for routing.
    #[arg(long)]
    project: String,
    /// Requesting agent identity.
    #[arg(long)]
    from_agent: String,
    /// Worker agent identity.
    #[arg(long)]
    to_agent: String,
    /// Verbatim task goal.
    #[arg(long, allow_hyphen_values = true)]
    goal: Option<String>,
    /// Read the task goal from a file ('-' for stdin).
    #[arg(long, value_name = "FILE")]
    goal_file: Option<String>,
    /// Git branch for the work.
    #[arg(long)]
    branch: String,
    /// Immutable hexadecimal commit id the worker must start from (not a branch or tag).
    #[arg(long)]
    base_commit: String,
    /// Verbatim definition of done.
    #[arg(long, allow_hyphen_values = true)]
    done: Option<String>,
    /// Read the definition of done from a file ('-' for stdin).
    #[arg(long, value_name = "FILE")]
    done_file: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

/// `task launch`.
#[derive(Debug, Args)]
pub struct TaskLaunchArgs {
    /// Task correlation id.
    correlation_id: Option<String>,
    /// Exact task.request event JSON fetched through remote MCP.
    #[arg(long, value_name = "FILE")]
    task_file: Option<PathBuf>,
    /// Headless agent runner.
    #[arg(long, value_parser = ["codex", "claude"])]
    runner: String,
    /// Trusted Git checkout to run in (MemPalace's --workspace; here --workspace names the palace workspace).
    #[arg(long, value_name = "DIR")]
    workdir: PathBuf,
    /// Worker identity (required for broadcasts; must match addressed tasks).
    #[arg(long)]
    agent: Option<String>,
    /// Machine-readable errors.
    #[arg(long)]
    json: bool,
}

/// `artifact put`.
#[derive(Debug, Args)]
pub struct PutArgs {
    /// patch|file|log|json|note.
    #[arg(long)]
    kind: String,
    /// Writer agent identity.
    #[arg(long)]
    created_by: String,
    /// Inline content.
    #[arg(long, allow_hyphen_values = true)]
    content: Option<String>,
    /// Read content from file ('-' for stdin; default stdin), byte for byte.
    #[arg(long, value_name = "FILE")]
    file: Option<String>,
    /// Extra fields as a JSON object.
    #[arg(long)]
    metadata: Option<String>,
    /// Machine-readable output.
    #[arg(long)]
    json: bool,
}

/// `artifact get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// Artifact id.
    artifact_id: String,
    /// Write content to this file instead.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Metadata as JSON (content omitted with --out).
    #[arg(long)]
    json: bool,
}

/// Runs a `logstream` subcommand.
pub fn run_logstream(settings: &Settings, command: LogstreamCommand) -> Result<()> {
    match command {
        LogstreamCommand::Append(args) => {
            answering(args.json, || append(&open_palace(settings, Access::Create)?, args))
        }
        LogstreamCommand::List(args) => answering(args.json, || list(&open_palace(settings, Access::Read)?, args)),
        LogstreamCommand::Wait(args) => answering(args.json, || wait(&open_palace(settings, Access::Read)?, args)),
        LogstreamCommand::Watch(args) => {
            answering(args.json, || watch(&open_palace(settings, Access::Read)?, settings, args))
        }
        LogstreamCommand::Ack(args) => answering(args.json, || ack(&open_palace(settings, Access::Update)?, args)),
        LogstreamCommand::Sync(args) => answering(args.json, || {
            let _ = (args.peer, args.token);
            Err(UserError(
                "logstream sync copies events between MemPalace replicas; mempalace-rs agents share one palace \
                 instead: point every agent at the same PostgreSQL palace (--store postgres://… or \
                 $MEMPALACE_DATABASE_URL) and each sees the others' events on its next read"
                    .to_string(),
            )
            .into())
        }),
    }
}

/// Runs a `task` subcommand.
pub fn run_task(settings: &Settings, command: TaskCommand) -> Result<()> {
    match command {
        TaskCommand::Create(args) => {
            answering(args.json, || task_create(&open_palace(settings, Access::Create)?, args))
        }
        TaskCommand::Launch(args) => answering(args.json, || task_launch(settings, args)),
    }
}

/// Runs an `artifact` subcommand.
pub fn run_artifact(settings: &Settings, command: ArtifactCommand) -> Result<()> {
    match command {
        ArtifactCommand::Put(args) => answering(args.json, || put(&open_palace(settings, Access::Create)?, args)),
        ArtifactCommand::Get(args) => answering(args.json, || get(&open_palace(settings, Access::Read)?, args)),
    }
}

/// Runs `body`; with `--json`, a failure is printed as `{"error": …}` on
/// stdout (MemPalace's shape) and the command ends with its exit code and
/// nothing on stderr.
fn answering(json: bool, body: impl FnOnce() -> Result<()>) -> Result<()> {
    match body() {
        Err(error) if json && !error.is::<Silent>() && !crate::is_broken_pipe(&error) => {
            output::json(&json!({"error": format!("{error:#}")}))?;
            Err(Silent(super::exit_code(&error) as u8).into())
        }
        other => other,
    }
}

/// Text from `--X` or `--X-file` (`-` is stdin), read byte for byte: no
/// newline translation, so a patch keeps its exact bytes (and sha256).
fn text_arg(inline: Option<String>, file: Option<&str>) -> Result<Option<String>> {
    match (inline, file) {
        (Some(_), Some(_)) => Err(UserError("pass inline text or a file, not both".to_string()).into()),
        (Some(text), None) => Ok(Some(text)),
        (None, Some(file)) => Ok(Some(read_exact(file)?)),
        (None, None) => Ok(None),
    }
}

fn read_exact(file: &str) -> Result<String> {
    let (bytes, source) = if file == "-" {
        let mut bytes = Vec::new();
        std::io::stdin().lock().read_to_end(&mut bytes).context("reading stdin")?;
        (bytes, "stdin".to_string())
    } else {
        (std::fs::read(file).with_context(|| format!("reading {file}"))?, file.to_string())
    };
    String::from_utf8(bytes).map_err(|error| {
        UserError(format!(
            "{source} is not UTF-8 text (first bad byte at offset {}); artifacts and bodies are text",
            error.utf8_error().valid_up_to()
        ))
        .into()
    })
}

fn metadata_arg(raw: Option<&str>) -> Result<Option<Value>> {
    let Some(raw) = raw else { return Ok(None) };
    match serde_json::from_str::<Value>(raw) {
        Ok(value @ Value::Object(_)) => Ok(Some(value)),
        Ok(_) => Err(UserError("--metadata must be a JSON object".to_string()).into()),
        Err(error) => Err(UserError(format!("--metadata is not valid JSON: {error}")).into()),
    }
}

/// MemPalace's one-line view of an event.
fn event_line(stored: &StoredEvent) -> String {
    let event = &stored.event;
    let mut line = format!(
        "  {}  {}  {}  {}/{}  {}->{}",
        event.id,
        format_second(&event.created_at),
        event.event_type.as_str(),
        event.stream,
        event.room,
        event.from_agent,
        event.to_agent.as_ref().map_or("*", |to| to.as_str())
    );
    if let Some(status) = event.status {
        line.push_str(&format!(" [{status}]"));
    }
    if let Some(topic) = &event.topic {
        line.push_str(&format!(" topic={topic}"));
    }
    if let Some(correlation_id) = &event.correlation_id {
        line.push_str(&format!(" corr={correlation_id}"));
    }
    if !event.artifact_ids.is_empty() {
        line.push_str(&format!(" artifacts={}", event.artifact_ids.len()));
    }
    let body = event.body.as_str().replace('\n', " ");
    if !body.is_empty() {
        let body =
            if body.chars().count() > 80 { format!("{}...", body.chars().take(77).collect::<String>()) } else { body };
        line.push_str(&format!(" :: {body}"));
    }
    line
}

fn print_events(events: &[StoredEvent]) -> Result<()> {
    output::line(format!("{} event(s):", events.len()))?;
    for stored in events {
        output::line(event_line(stored))?;
    }
    Ok(())
}

fn append(palace: &Palace, args: AppendArgs) -> Result<()> {
    let body = text_arg(args.body, args.body_file.as_deref())?;
    let artifact_ids = (!args.artifact_ids.is_empty())
        .then(|| Value::Array(args.artifact_ids.into_iter().map(Value::String).collect()));
    let stored = palace.append_event(EventDraft {
        event_type: args.event_type,
        stream: args.stream,
        room: args.room,
        topic: args.topic,
        from_agent: args.from_agent,
        to_agent: args.to_agent,
        correlation_id: args.correlation_id,
        branch: args.branch,
        base_commit: args.base_commit,
        status: args.status,
        body,
        metadata: metadata_arg(args.metadata.as_deref())?,
        artifact_ids,
    })?;
    if args.json {
        output::json(&EventShape::of(&stored))?;
    } else {
        output::line("Appended:")?;
        output::line(event_line(&stored))?;
    }
    Ok(())
}

fn list(palace: &Palace, args: ListArgs) -> Result<()> {
    let events = palace.list_events(EventQueryDraft {
        before_event_id: args.before_event_id,
        order: Some(args.order),
        limit: Some(args.limit),
        ..args.filters.draft()
    })?;
    if args.json {
        let shapes: Vec<EventShape> = events.iter().map(EventShape::of).collect();
        output::json(&EventListing { count: shapes.len(), events: shapes, note: None })?;
    } else if events.is_empty() {
        output::line("No matching events.")?;
    } else {
        print_events(&events)?;
    }
    Ok(())
}

fn wait(palace: &Palace, args: WaitArgs) -> Result<()> {
    let outcome = palace
        .wait_events(EventQueryDraft { limit: Some(args.limit), ..args.filters.draft() }, Some(args.timeout_ms))?;
    if args.json {
        output::json(&EventWaited::of(&outcome, None))?;
    }
    match outcome {
        WaitOutcome::Events(events) => {
            if !args.json {
                print_events(&events)?;
            }
            Ok(())
        }
        WaitOutcome::TimedOut => {
            if !args.json {
                output::line("Timed out; no matching events.")?;
            }
            Err(Silent(2).into())
        }
    }
}

fn ack(palace: &Palace, args: AckArgs) -> Result<()> {
    let stored = palace.ack_event(AckDraft {
        event_id: args.event_id,
        from_agent: args.from_agent,
        status: args.status,
        body: args.body,
        topic: args.topic,
    })?;
    if args.json {
        output::json(&EventShape::of(&stored))?;
    } else {
        output::line("Acknowledged:")?;
        output::line(event_line(&stored))?;
    }
    Ok(())
}

/// What a watcher's state file says.
#[derive(Debug, Clone, PartialEq, Eq)]
enum WatchState {
    /// No file: a genuine first run, which may start at the tip.
    Absent,
    /// Resume strictly after this event.
    Cursor(String),
    /// The watcher started on an empty log and has seen nothing yet: not a
    /// first run (starting at the tip would skip what arrived meanwhile).
    Empty,
    /// Unreadable: replay rather than skip.
    Corrupt,
}

/// `~/.mempalace/watch/<agent>.json`, the agent's `_` doubled and `:`, `/`,
/// `\` turned into `_` (MemPalace's naming, so two identities never share a
/// file and none escapes the folder).
fn default_state_file(agent: &str, home: Option<&Path>) -> Result<PathBuf> {
    let agent = agent.trim();
    if agent.is_empty() {
        return Err(UserError("agent identity is required to name a watch state file".to_string()).into());
    }
    let safe = agent.replace('_', "__").replace([':', '/', '\\'], "_");
    if safe == "." || safe == ".." {
        return Err(UserError("agent identity sanitizes to an empty state-file name".to_string()).into());
    }
    let home = home.ok_or_else(|| {
        UserError("no home directory ($HOME) to keep the watch state in; pass --state-file FILE".to_string())
    })?;
    Ok(home.join(".mempalace").join("watch").join(format!("{safe}.json")))
}

fn read_state(path: &Path) -> WatchState {
    // No exists() check first: "cannot reach the file" must read as corrupt
    // (a replay), never as absent (a jump to the tip).
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return WatchState::Absent,
        Err(_) => return WatchState::Corrupt,
    };
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(state)) => match state.get("cursor") {
            Some(Value::String(cursor)) if !cursor.is_empty() => WatchState::Cursor(cursor.clone()),
            Some(_) => WatchState::Empty,
            None => WatchState::Corrupt,
        },
        _ => WatchState::Corrupt,
    }
}

/// Writes the cursor to a temporary file and renames it into place, so a
/// crash never leaves a half-written (older-looking) cursor.
fn write_state(path: &Path, cursor: Option<&str>, agent: Option<&str>, at: &mempalace_core::Timestamp) -> Result<()> {
    let mut state = Map::new();
    state.insert("cursor".into(), cursor.map_or(Value::Null, |c| Value::String(c.to_string())));
    state.insert("updated_at".into(), Value::String(format_second(at)));
    if let Some(agent) = agent {
        state.insert("agent".into(), Value::String(agent.to_string()));
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(".tmp");
    let temporary = PathBuf::from(temporary);
    std::fs::write(&temporary, serde_json::to_vec(&Value::Object(state))?)
        .with_context(|| format!("writing {}", temporary.display()))?;
    std::fs::rename(&temporary, path).with_context(|| format!("renaming {} into place", temporary.display()))
}

/// One batch a watcher reports.
#[derive(Serialize)]
struct WatchBatch<'a> {
    events: Vec<EventShape>,
    count: usize,
    cursor: Option<&'a str>,
    timed_out: bool,
}

fn print_watch(batch: &WatchBatch<'_>, follow: bool) -> Result<()> {
    // A single document is pretty; under --follow, one compact line per
    // batch (NDJSON), so a stream of them stays machine-readable.
    if follow {
        output::json_line(batch)?
    } else {
        output::json(batch)?
    }
    Ok(())
}

fn watch(palace: &Palace, settings: &Settings, args: WatchArgs) -> Result<()> {
    let refuse = |message: &str| -> Result<()> { Err(UserError(message.to_string()).into()) };
    if args.poll_timeout_ms <= 0 {
        // Zero would spin without ever polling.
        return refuse("--poll-timeout-ms must be a positive number of milliseconds");
    }
    if args.limit < 1 {
        return refuse("--limit must be a positive integer");
    }
    if args.idle_exit_ms < 0 {
        return refuse("--idle-exit-ms must be zero (wait forever) or a positive number of milliseconds");
    }
    let state_file = match args.state_file.as_deref() {
        Some("") => None,
        Some(path) => Some(PathBuf::from(path)),
        None => args.agent.as_deref().map(|agent| default_state_file(agent, settings.home.as_deref())).transpose()?,
    };
    let mut to_agents = args.to_agent;
    let mut exclude = args.exclude_from_agent;
    if let Some(agent) = &args.agent {
        // Broadcasts reach everyone, one's own included: without the
        // exclusion a watcher would wake itself with every status it posts.
        to_agents.push(agent.clone());
        exclude.push(agent.clone());
    }
    let filter = WatchFilter::parse(WatchDraft {
        streams: args.stream,
        rooms: args.room,
        topics: args.topic,
        types: args.event_type,
        statuses: args.status,
        to_agents,
        from_agents: args.from_agent,
        exclude_from_agents: exclude,
        correlation_ids: args.correlation_id,
    })?;

    let state = state_file.as_deref().map_or(WatchState::Absent, read_state);
    let stored = match &state {
        WatchState::Cursor(cursor) => Some(cursor.clone()),
        _ => None,
    };
    let mut cursor = args.since_event_id.clone().or(stored);
    let mut skipped_from = None;
    if cursor.is_none() && !args.from_start && state == WatchState::Absent {
        // A watcher is for what arrives from now on; the backlog is an inbox
        // sweep's job (`logstream list`). Said on stderr, never silent.
        cursor = palace.latest_event()?.map(|latest| latest.event.id);
        skipped_from = cursor.clone();
    }
    if let Some(anchor) = cursor.clone() {
        let probe = EventQueryDraft { since_event_id: Some(anchor.clone()), limit: Some(1), ..Default::default() };
        match palace.list_events(probe) {
            Ok(_) => {}
            Err(EngineError::Coordination(error)) if error.is_not_found() => {
                if args.since_event_id.is_some() {
                    return refuse(&format!("{error}. Nothing was written to the state file."));
                }
                output::note(format!(
                    "Stored cursor {anchor} no longer exists in this log; replaying from the start rather than \
                     refusing to run."
                ));
                cursor = None;
            }
            Err(other) => return Err(other.into()),
        }
    }
    if let Some(path) = &state_file
        && state == WatchState::Absent
    {
        // Without this first checkpoint, a restart would look like a first
        // run and skip everything that arrived in between.
        write_state(path, cursor.as_deref(), args.agent.as_deref(), &palace.now()).map_err(|error| {
            UserError(format!(
                "could not write the initial checkpoint to {}: {error:#}. Refusing to start: without it a restart \
                 would skip every event that arrives before then.",
                path.display()
            ))
        })?;
    }
    if !args.json {
        let watched = match &args.agent {
            Some(agent) => agent.clone(),
            None if filter.to_agents().is_empty() => "everything".to_string(),
            None => {
                let mut agents = filter.to_agents().to_vec();
                agents.sort();
                agents.join(", ")
            }
        };
        output::note(format!("Watching {watched} from {}; Ctrl-C to stop.", cursor.as_deref().unwrap_or("now")));
    }
    if let Some(tip) = &skipped_from {
        output::note(format!(
            "Starting at the tip ({tip}); earlier events are not replayed. Use --from-start to replay them, or sweep \
             with `mempalace logstream list`."
        ));
    }
    if state == WatchState::Corrupt {
        output::note(format!(
            "State file {} is unreadable; replaying from the start rather than skipping to the tip, so nothing \
             since the last good checkpoint is lost.",
            state_file.as_deref().map(Path::display).map(|d| d.to_string()).unwrap_or_default()
        ));
    }

    let checkpoint = |cursor: Option<&str>| {
        if let Some(path) = &state_file
            && let Err(error) = write_state(path, cursor, args.agent.as_deref(), &palace.now())
        {
            // Losing an ordinary checkpoint costs a replay; stopping the
            // watcher would cost every later event.
            tracing::debug!(error = format!("{error:#}"), "could not persist the watch cursor");
        }
    };
    let idle = u64::try_from(args.idle_exit_ms).ok().filter(|ms| *ms > 0).map(Duration::from_millis);
    let mut deadline = idle.map(|idle| Instant::now() + idle);
    let mut matched_any = false;
    let pushdown = filter.pushdown();
    loop {
        let poll_ms = match deadline {
            None => args.poll_timeout_ms,
            Some(deadline) => {
                let remaining = deadline.saturating_duration_since(Instant::now()).as_millis();
                args.poll_timeout_ms.min(i64::try_from(remaining).unwrap_or(i64::MAX))
            }
        };
        let outcome = if poll_ms <= 0 {
            WaitOutcome::TimedOut
        } else {
            palace.wait_events(
                EventQueryDraft { since_event_id: cursor.clone(), limit: Some(args.limit), ..pushdown.clone() },
                Some(poll_ms),
            )?
        };
        if let WaitOutcome::Events(events) = outcome {
            // The cursor moves past every event examined, matched or not.
            cursor = events.last().map(|last| last.event.id.clone());
            let matched: Vec<StoredEvent> = events.into_iter().filter(|e| filter.matches(&e.event)).collect();
            if !matched.is_empty() {
                matched_any = true;
                if let Some(idle) = idle {
                    deadline = Some(Instant::now() + idle);
                }
                if args.json {
                    let shapes: Vec<EventShape> = matched.iter().map(EventShape::of).collect();
                    let batch =
                        WatchBatch { count: shapes.len(), events: shapes, cursor: cursor.as_deref(), timed_out: false };
                    print_watch(&batch, args.follow)?;
                } else {
                    print_events(&matched)?;
                }
                // After stdout: a kill between the two replays the batch
                // rather than skipping it.
                checkpoint(cursor.as_deref());
                if !args.follow {
                    return Ok(());
                }
                continue;
            }
        }
        checkpoint(cursor.as_deref());
        if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
            if args.json {
                let batch = WatchBatch { events: Vec::new(), count: 0, cursor: cursor.as_deref(), timed_out: true };
                print_watch(&batch, args.follow)?;
            } else {
                output::line("Idle timeout; no matching events.")?;
            }
            return if matched_any { Ok(()) } else { Err(Silent(2).into()) };
        }
    }
}

/// `task create --json`: MemPalace's `{"task", "handoff"}`.
#[derive(Serialize)]
struct TaskJson {
    task: EventShape,
    handoff: String,
}

fn task_create(palace: &Palace, args: TaskCreateArgs) -> Result<()> {
    let goal = text_arg(args.goal, args.goal_file.as_deref())?.unwrap_or_default();
    let done = text_arg(args.done, args.done_file.as_deref())?.unwrap_or_default();
    let created = palace.create_task(TaskDraft {
        project: args.project,
        from_agent: args.from_agent,
        to_agent: args.to_agent.clone(),
        goal,
        branch: args.branch,
        base_commit: args.base_commit,
        done,
    })?;
    if args.json {
        output::json(&TaskJson { task: EventShape::of(&created.task), handoff: created.handoff })?;
    } else {
        let correlation_id = created.task.event.correlation_id.as_ref().map(|c| c.to_string()).unwrap_or_default();
        output::line(format!("Task created: {correlation_id}"))?;
        output::line(format!("Event: {}", created.task.event.id))?;
        output::line(format!("To: {}", args.to_agent))?;
        output::line("")?;
        output::line("Ready to paste:")?;
        output::line(created.handoff)?;
    }
    Ok(())
}

/// The fields of a task request a launch relies on.
struct LaunchTask {
    correlation_id: String,
    to_agent: Option<String>,
    branch: String,
    base_commit: String,
}

/// Checks a task request (an event as MCP returns it) the way MemPalace's
/// controlled launcher does.
fn launch_task(task: &Value, source: &str) -> Result<LaunchTask> {
    let refuse = |message: String| -> anyhow::Error { UserError(message).into() };
    let object = task
        .as_object()
        .filter(|object| object.get("type").and_then(Value::as_str) == Some(TASK_REQUEST_TYPE))
        .ok_or_else(|| refuse(format!("{source} must contain one task.request event object")))?;
    let missing: Vec<&str> = ["correlation_id", "to_agent", "branch", "base_commit"]
        .into_iter()
        .filter(|field| !object.contains_key(*field))
        .collect();
    if !missing.is_empty() {
        return Err(refuse(format!("{source} is missing required field(s): {}", missing.join(", "))));
    }
    let required = |field: &str, what: &str| -> Result<String> {
        match object.get(field).and_then(Value::as_str).map(str::trim) {
            Some(value) if !value.is_empty() => Ok(value.to_string()),
            _ => Err(refuse(format!("task {what} must not be empty"))),
        }
    };
    let correlation_id = required("correlation_id", "correlation id")?;
    let branch = required("branch", "branch")?;
    let base_commit = BaseCommit::parse(object.get("base_commit").and_then(Value::as_str).unwrap_or_default())?;
    let to_agent = match object.get("to_agent") {
        Some(Value::Null) => None,
        _ => Some(required("to_agent", "destination agent")?),
    };
    Ok(LaunchTask { correlation_id, to_agent, branch, base_commit: base_commit.as_str().to_string() })
}

/// Proves the checkout is on the task's branch, at its exact base commit,
/// with a clean tree.
fn check_workdir(workdir: &Path, task: &LaunchTask) -> Result<()> {
    let git = |arguments: &[&str]| -> Result<String> {
        let output = std::process::Command::new("git")
            .arg("-C")
            .arg(workdir)
            .args(arguments)
            .output()
            .map_err(|error| UserError(format!("workspace Git validation failed: cannot run git: {error}")))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
            let stdout = String::from_utf8_lossy(&output.stdout).trim().to_string();
            let detail = if !stderr.is_empty() {
                stderr
            } else if !stdout.is_empty() {
                stdout
            } else {
                "git command failed".into()
            };
            return Err(UserError(format!("workspace Git validation failed: {detail}")).into());
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
    };
    let branch = git(&["branch", "--show-current"])?;
    if branch != task.branch {
        let shown = if branch.is_empty() { "(detached)".to_string() } else { branch };
        return Err(UserError(format!(
            "workspace branch is {}; task requires {}",
            py_repr(&shown),
            py_repr(&task.branch)
        ))
        .into());
    }
    let expected = git(&["rev-parse", "--verify", &format!("{}^{{commit}}", task.base_commit)]).map_err(|_| {
        UserError(format!("task base commit {} does not resolve in the workspace", py_repr(&task.base_commit)))
    })?;
    let head = git(&["rev-parse", "HEAD"])?;
    if head != expected {
        return Err(UserError(format!("workspace base commit is {head}; task requires {expected}")).into());
    }
    if !git(&["status", "--porcelain"])?.is_empty() {
        return Err(UserError(
            "workspace has uncommitted changes; controlled launch requires a clean checkout".to_string(),
        )
        .into());
    }
    Ok(())
}

fn task_launch(settings: &Settings, args: TaskLaunchArgs) -> Result<()> {
    let refuse = |message: String| -> anyhow::Error { UserError(message).into() };
    let task = match &args.task_file {
        Some(file) => {
            let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
            let value: Value = serde_json::from_str(&text)
                .map_err(|error| refuse(format!("{} is not JSON: {error}", file.display())))?;
            launch_task(&value, "--task-file")?
        }
        None => {
            let correlation_id = args
                .correlation_id
                .clone()
                .ok_or_else(|| refuse("name the task: a correlation id, or --task-file FILE".to_string()))?;
            let palace = open_palace(settings, Access::Read)?;
            let found = palace.list_events(EventQueryDraft {
                event_type: Some(TASK_REQUEST_TYPE.to_string()),
                correlation_id: Some(correlation_id.clone()),
                limit: Some(2),
                ..Default::default()
            })?;
            let source = format!("task {}", py_repr(&correlation_id));
            match found.as_slice() {
                [] => return Err(refuse(format!("{source} not found"))),
                [one] => launch_task(&serde_json::to_value(EventShape::of(one))?, &source)?,
                _ => return Err(refuse(format!("{source} has multiple requests; refusing to guess"))),
            }
        }
    };
    if let (Some(agent), Some(addressed)) = (&args.agent, &task.to_agent)
        && addressed != "*"
        && addressed != agent
    {
        return Err(refuse(format!("task is addressed to {}, not {}", py_repr(addressed), py_repr(agent))));
    }
    let agent = args.agent.clone().or(task.to_agent.clone()).filter(|agent| !agent.is_empty() && agent != "*");
    let agent = agent.ok_or_else(|| refuse("broadcast tasks require --agent for a concrete worker identity".into()))?;
    let expected_suffix = format!("-{}", args.runner);
    if let Some(actual) = ["-codex", "-claude"].into_iter().find(|suffix| agent.ends_with(suffix))
        && actual != expected_suffix
    {
        return Err(refuse(format!("runner {} does not match addressed identity {}", args.runner, py_repr(&agent))));
    }
    let workdir = std::fs::canonicalize(&args.workdir)
        .ok()
        .filter(|dir| dir.is_dir())
        .ok_or_else(|| refuse(format!("workspace is not a directory: {}", args.workdir.display())))?;
    check_workdir(&workdir, &task)?;

    let prompt = task_handoff(&task.correlation_id, &agent);
    let mut command = std::process::Command::new(&args.runner);
    if args.runner == "codex" {
        command.arg("exec").arg("--cd").arg(&workdir).arg(&prompt);
    } else {
        command.arg("--print").arg(&prompt).current_dir(&workdir);
    }
    output::line(format!("Launching {} with {} as {agent}", task.correlation_id, args.runner))?;
    let status = command.status().map_err(|error| refuse(format!("could not start {}: {error}", args.runner)))?;
    match status.code() {
        Some(0) => Ok(()),
        Some(code) => Err(Silent(u8::try_from(code).unwrap_or(1)).into()),
        // Killed by a signal: 128 + its number, the shell's convention.
        None => Err(Silent(exit_signal(&status)).into()),
    }
}

#[cfg(unix)]
fn exit_signal(status: &std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    status.signal().map_or(1, |signal| u8::try_from(128 + signal).unwrap_or(1))
}

#[cfg(not(unix))]
fn exit_signal(_: &std::process::ExitStatus) -> u8 {
    1
}

fn put(palace: &Palace, args: PutArgs) -> Result<()> {
    let content = match text_arg(args.content, args.file.as_deref())? {
        Some(content) => content,
        None => read_exact("-")?,
    };
    let artifact = palace.put_artifact(ArtifactDraft {
        kind: args.kind,
        content,
        created_by: args.created_by,
        metadata: metadata_arg(args.metadata.as_deref())?,
    })?;
    if args.json {
        output::json(&ArtifactRecordShape::of(&artifact))?;
    } else {
        output::line(format!("Stored {}  kind={}", artifact.id, artifact.kind))?;
        output::line(format!("  sha256={}", artifact.sha256()))?;
        output::line(format!("  size={} bytes", artifact.size_bytes()))?;
    }
    // On stderr in both modes: `--json | jq` stays clean, a person still sees them.
    for warning in artifact.warnings() {
        output::note(format!("Warning: {warning}"));
    }
    Ok(())
}

/// `artifact get --out F --json`: the artifact without its content, and
/// where the content went.
#[derive(Serialize)]
struct ArtifactWritten {
    id: String,
    kind: &'static str,
    sha256: String,
    size_bytes: usize,
    created_by: String,
    created_at: String,
    origin_replica: Option<String>,
    metadata: Map<String, Value>,
    content_written_to: String,
}

fn get(palace: &Palace, args: GetArgs) -> Result<()> {
    let artifact = palace.artifact(&args.artifact_id)?;
    if let Some(out) = &args.out {
        std::fs::write(out, artifact.content.as_str().as_bytes())
            .with_context(|| format!("writing {}", out.display()))?;
    }
    let shape = ArtifactShape::of(&artifact);
    match (&args.out, args.json) {
        (Some(out), true) => output::json(&ArtifactWritten {
            id: shape.id,
            kind: shape.kind,
            sha256: shape.sha256,
            size_bytes: shape.size_bytes,
            created_by: shape.created_by,
            created_at: shape.created_at,
            origin_replica: shape.origin_replica,
            metadata: shape.metadata,
            content_written_to: out.display().to_string(),
        })?,
        (None, true) => output::json(&shape)?,
        (Some(out), false) => {
            output::line(format!("Wrote {} bytes to {}", shape.size_bytes, out.display()))?;
            output::line(format!("  sha256={}", shape.sha256))?;
        }
        // The exact bytes and nothing else, so `artifact get ID | git apply` works.
        (None, false) => output::text(artifact.content.as_str())?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_files_never_share_a_name_or_leave_the_folder() {
        let home = Path::new("/home/a");
        let path = |agent: &str| default_state_file(agent, Some(home)).unwrap();
        assert_eq!(path("windows:grok:mempalace"), home.join(".mempalace/watch/windows_grok_mempalace.json"));
        assert_ne!(path("a:b_c:proj"), path("a_b:c:proj"));
        assert_eq!(path("../x"), home.join(".mempalace/watch/.._x.json"));
        assert!(default_state_file(" ", Some(home)).is_err());
        assert!(default_state_file("a", None).is_err());
    }

    #[test]
    fn state_files_tell_a_first_run_from_an_empty_log_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("state.json");
        assert_eq!(read_state(&file), WatchState::Absent);
        let at =
            mempalace_core::time::parse_timestamp("2026-01-01", "t", mempalace_core::time::DayEdge::Start).unwrap();
        write_state(&file, None, Some("me"), &at).unwrap();
        assert_eq!(read_state(&file), WatchState::Empty);
        write_state(&file, Some("evt_1"), None, &at).unwrap();
        assert_eq!(read_state(&file), WatchState::Cursor("evt_1".into()));
        std::fs::write(&file, "{\"curs").unwrap();
        assert_eq!(read_state(&file), WatchState::Corrupt);
        std::fs::write(&file, "[1]").unwrap();
        assert_eq!(read_state(&file), WatchState::Corrupt);
        std::fs::write(&file, "{\"updated_at\": \"x\"}").unwrap();
        assert_eq!(read_state(&file), WatchState::Corrupt);
        assert_eq!(read_state(dir.path()), WatchState::Corrupt, "a directory in the way replays");
    }

    #[test]
    fn task_requests_for_a_launch_are_checked_like_mempalace() {
        let task = json!({"type": "task.request", "correlation_id": "task_x_1", "to_agent": "b-codex",
                          "branch": "main", "base_commit": "ABCDEF1"});
        let checked = launch_task(&task, "--task-file").unwrap();
        assert_eq!((checked.base_commit.as_str(), checked.to_agent.as_deref()), ("abcdef1", Some("b-codex")));
        let refused = |value: Value| launch_task(&value, "--task-file").err().unwrap().to_string();
        assert_eq!(refused(json!({"type": "task.reply"})), "--task-file must contain one task.request event object");
        assert_eq!(
            refused(json!({"type": "task.request", "branch": "m"})),
            "--task-file is missing required field(s): correlation_id, to_agent, base_commit"
        );
        let mut blank = task.clone();
        blank["branch"] = json!(" ");
        assert_eq!(refused(blank), "task branch must not be empty");
        let mut broadcast = task.clone();
        broadcast["to_agent"] = Value::Null;
        assert_eq!(launch_task(&broadcast, "x").unwrap().to_agent, None);
    }

    #[test]
    fn event_lines_follow_mempalaces_layout() {
        let event = mempalace_store::conformance::full_event(
            &mempalace_core::WorkspaceId::default_workspace(),
            "evt_1",
            &["art_a"],
        );
        let line = event_line(&StoredEvent { seq: 1, event });
        assert_eq!(
            line,
            "  evt_1  2025-01-01T00:00:00Z  patch.ready  project/mempalace/patches  windows:codex:mempalace->mac-codex \
             [ready] topic=auth-v2 corr=task_fix_it_0a1b2c3d artifacts=1 :: Ready: ünïcode — 数据库\r second line "
        );
    }
}
