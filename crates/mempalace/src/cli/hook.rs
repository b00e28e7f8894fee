//! `hook run`: what Claude Code and Codex call at session start, stop and
//! before compaction.
//!
//! Reads the harness's JSON on stdin (`session_id`, `transcript_path`,
//! `cwd`, `stop_hook_active`), mines the transcript's new tail, writes a
//! diary checkpoint every 15 new human messages, and prints the harness's
//! JSON reply — at session start, the wake-up text as additional context.
//! It never fails the harness's session: every problem is logged to stderr
//! and answered with the plain reply, and it answers before the harness's
//! timeout (the work goes on in a thread that is abandoned at the deadline;
//! every batch it committed stays committed).

use std::io::Read as _;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use anyhow::Result;
use clap::{Args, ValueEnum};
use mempalace_core::{Content, Hall, Room};
use mempalace_engine::Palace;
use mempalace_engine::drawers::DiaryEntry;
use serde_json::{Value, json};

use crate::output;
use crate::settings::Settings;
use mempalace_feed::{TranscriptOptions, TranscriptOutcome, mine_transcript};

/// Human messages between two diary checkpoints.
pub const CHECKPOINT_EVERY: usize = 15;
/// The diary's author.
const HOOK_AGENT: &str = "session-hook";

/// Which hook fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum HookKind {
    /// A session starts.
    SessionStart,
    /// The agent stops (end of a turn).
    Stop,
    /// The context is about to be compacted.
    Precompact,
    /// The session ends (Claude Code `SessionEnd`): its episode is written now.
    SessionEnd,
}

impl HookKind {
    fn deadline(self) -> Duration {
        match self {
            Self::SessionStart => Duration::from_secs(10),
            Self::Stop => Duration::from_secs(25),
            Self::Precompact => Duration::from_secs(80),
            Self::SessionEnd => Duration::from_secs(50),
        }
    }

    fn event(self) -> &'static str {
        match self {
            Self::SessionStart => "SessionStart",
            Self::Stop => "Stop",
            Self::Precompact => "PreCompact",
            Self::SessionEnd => "SessionEnd",
        }
    }
}

/// Which agent harness calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Harness {
    /// Claude Code.
    ClaudeCode,
    /// Codex CLI.
    Codex,
    /// opencode, through the plugin `hook install --harness opencode` writes.
    Opencode,
}

/// `hook run`.
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The hook.
    #[arg(long, value_enum)]
    hook: HookKind,
    /// The harness.
    #[arg(long, value_enum)]
    harness: Harness,
}

/// `hook` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum HookCommand {
    /// Handle one hook call (JSON on stdin, JSON reply on stdout).
    Run(HookArgs),
    /// Install the opencode plugin that calls `hook run` (Claude Code and Codex take the JSON
    /// lines of docs/cli.md in their settings instead).
    Install {
        /// The harness: opencode.
        #[arg(long, value_enum)]
        harness: Harness,
        /// The plugin folder (default ~/.config/opencode/plugins).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Print the plugin instead of writing it.
        #[arg(long)]
        print: bool,
    },
}

/// The opencode plugin; `__MEMPALACE__` becomes this program's path.
const OPENCODE_PLUGIN: &str = include_str!("opencode-plugin.js");

/// The plugin's file name.
const OPENCODE_PLUGIN_FILE: &str = "mempalace.js";

/// What the work produced for the reply.
#[derive(Debug, Default)]
struct Work {
    context: Option<String>,
    /// Ask the agent to save (silent saving off, a checkpoint due).
    block: Option<String>,
    summary: Value,
}

/// Cold-path batches a hook runs for what it filed, at most.
const HOOK_PROCESS_BATCHES: usize = 4;

fn work(
    palace: &Palace,
    input: &Value,
    harness: Harness,
    hook: HookKind,
    home: Option<&std::path::Path>,
) -> Result<Work> {
    use mempalace_mcp::context::Host as _;
    let mut result = Work::default();
    let files = home.map(crate::settings::UserFiles::new);
    let settings = files.as_ref().map(|f| f.hook_settings()).transpose().unwrap_or_else(|error| {
        tracing::warn!(%error, "cannot read the hook settings; saving silently");
        None
    });
    let mode = settings.map_or(SaveMode { silent: true, toast: false }, |s| SaveMode {
        silent: s.silent_save,
        toast: s.desktop_toast,
    });
    let mut mined = json!(null);
    let options = TranscriptOptions::new(Room::parse("conversations")?, "hook");
    let outcome = match (harness, input["transcript_path"].as_str().filter(|p| !p.is_empty())) {
        (Harness::Opencode, _) => match input["session_id"].as_str().filter(|s| !s.is_empty()) {
            Some(session) => {
                let db = match (input["db_path"].as_str(), home) {
                    (Some(path), _) => PathBuf::from(shellexpand_home(path, home)),
                    (None, Some(home)) => mempalace_feed::default_opencode_db(home),
                    (None, None) => anyhow::bail!("HOME is not set and the hook input names no db_path"),
                };
                Some(mempalace_feed::mine_opencode_session(palace, &db, session, &options)?)
            }
            None => None,
        },
        (_, Some(path)) => {
            let path = PathBuf::from(shellexpand_home(path, home));
            if path.is_file() { Some(mine_transcript(palace, &path, &options)?) } else { None }
        }
        (_, None) => None,
    };
    if let Some(TranscriptOutcome::Mined { filing, human_messages, last_human, wing, .. }) = outcome {
        mined = json!({"added": filing.added, "unchanged": filing.unchanged, "removed": filing.removed});
        let session = input["session_id"].as_str().unwrap_or("unknown").to_string();
        match checkpoint(palace, &wing, &session, human_messages, last_human.as_deref(), mode)? {
            Checkpointed::NotDue => {}
            Checkpointed::Written(covered) => {
                if let Some(files) = &files {
                    let at = mempalace_core::time::format_timestamp(&palace.now());
                    if let Err(error) = files.record_checkpoint(covered as u64, &at) {
                        tracing::warn!(%error, "cannot record the checkpoint for memories_filed_away");
                    }
                }
            }
            Checkpointed::Asked => {
                result.block = Some(format!("{STOP_BLOCK_REASON} Write diary entry to wing={wing}."));
            }
        }
        // The cold path for what was filed: without a language model it is
        // fast and runs here (classification, halls, conflicts, memories
        // extracted by the rules); with one, `serve` or `work` runs it, so
        // the hook never waits for the model.
        // A backlog (after an import, say) is left to `work`: a few batches at most.
        if filing.added > 0 && palace.llm().is_none() {
            let (mut processed, mut memories) = (0, 0);
            for _ in 0..HOOK_PROCESS_BATCHES {
                let report = palace.process_batch("hook", palace.jobs().process_batch)?;
                processed += report.processed.len();
                memories += report.memories.0;
                if report.claimed == 0 {
                    break;
                }
            }
            mined["processed"] = json!(processed);
            mined["memories_added"] = json!(memories);
        }
    }
    if hook == HookKind::SessionStart {
        let text = palace.wake_up(None)?;
        result.context = Some(text);
    }
    // The session is over: its episode now, rather than after 30 idle
    // minutes (the drawers carry the transcript's session id, which for
    // Claude Code is the hook's).
    if hook == HookKind::SessionEnd
        && let Some(session) = input["session_id"].as_str().filter(|s| !s.is_empty())
        && let Some(episode) = palace.write_episode(session)?
    {
        mined["episode"] = json!(episode.id);
    }
    result.summary = json!({"mined": mined});
    Ok(result)
}

fn shellexpand_home(path: &str, home: Option<&std::path::Path>) -> String {
    match (path.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest).display().to_string(),
        _ => path.to_string(),
    }
}

/// What the agent is told when the hooks do not save by themselves
/// (`hooks.silent_save: false`), as the Python MemPalace words it.
const STOP_BLOCK_REASON: &str = "MemPalace auto-save checkpoint. Use mempalace_diary_write (session summary) and \
mempalace_add_drawer (quotes, decisions, code) to save session content. Do NOT use native auto-memory files.";

/// How a due checkpoint is saved.
#[derive(Debug, Clone, Copy)]
struct SaveMode {
    /// Write it here (else ask the agent to save).
    silent: bool,
    /// Show a desktop notification when written.
    toast: bool,
}

/// What a checkpoint did.
enum Checkpointed {
    /// Not due yet.
    NotDue,
    /// Written: the messages it covered.
    Written(usize),
    /// Due, left to the agent (silent saving is off).
    Asked,
}

/// Writes `CHECKPOINT:date|session:id|msgs:n|recent:…` to the hook's diary
/// when at least [`CHECKPOINT_EVERY`] human messages came since the last one
/// (or, with silent saving off, says the agent should save).
fn checkpoint(
    palace: &Palace,
    wing: &mempalace_core::Wing,
    session: &str,
    messages: usize,
    last: Option<&str>,
    mode: SaveMode,
) -> Result<Checkpointed> {
    let page = palace.diary_read(HOOK_AGENT, Some(wing.as_str()), Some("diary"), 100)?;
    let done = page
        .entries
        .iter()
        .filter(|d| d.context.get("session").and_then(Value::as_str) == Some(session))
        .filter_map(|d| d.context.get("msgs").and_then(Value::as_u64))
        .max()
        .unwrap_or(0) as usize;
    if messages < done + CHECKPOINT_EVERY {
        return Ok(Checkpointed::NotDue);
    }
    if !mode.silent {
        return Ok(Checkpointed::Asked);
    }
    let recent: String = last.unwrap_or("").replace('\n', " ").chars().take(80).collect();
    let text =
        format!("CHECKPOINT:{}|session:{session}|msgs:{messages}|recent:{recent}", palace.now().format("%Y-%m-%d"));
    let id = palace.diary_write(DiaryEntry {
        agent: HOOK_AGENT.into(),
        text: Content::parse(text)?,
        topic: "checkpoint".into(),
        wing: wing.clone(),
        room: Room::parse("diary")?,
        hall: Some(Hall::parse("hall_diary")?),
        // The session and count, for the next call.
        context: [("session".to_string(), json!(session)), ("msgs".to_string(), json!(messages))].into_iter().collect(),
    })?;
    tracing::info!(%id, messages, "diary checkpoint written");
    if mode.toast {
        notify(&format!("Checkpoint saved — {} messages archived", messages - done));
    }
    Ok(Checkpointed::Written(messages - done))
}

/// A desktop notification through `notify-send`, when there is one; a
/// failure is only logged (the hook must never fail the session).
fn notify(body: &str) {
    let shown = std::process::Command::new("notify-send")
        .args(["--app-name=MemPalace", "MemPalace", body])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if let Err(error) = shown {
        tracing::debug!(%error, "no desktop notification");
    }
}

fn reply(harness: Harness, hook: HookKind, context: Option<String>, block: Option<String>) -> Value {
    if let (Some(reason), HookKind::Stop | HookKind::Precompact) = (block, hook) {
        return json!({"decision": "block", "reason": reason});
    }
    match (harness, hook, context) {
        (Harness::ClaudeCode, HookKind::SessionStart, Some(text)) if !text.trim().is_empty() => json!({
            "hookSpecificOutput": {"hookEventName": hook.event(), "additionalContext": text}
        }),
        _ => json!({}),
    }
}

/// Runs one hook call. Always succeeds from the harness's point of view.
pub fn run(settings: &Settings, command: HookCommand) -> Result<()> {
    let args = match command {
        HookCommand::Run(args) => args,
        HookCommand::Install { harness, dir, print } => return install(settings, harness, dir, print),
    };
    let mut stdin = String::new();
    let input: Value = match std::io::stdin().read_to_string(&mut stdin) {
        Ok(_) => serde_json::from_str(&stdin).unwrap_or_else(|error| {
            tracing::warn!(%error, "hook input is not JSON; answering without mining");
            Value::Null
        }),
        Err(error) => {
            tracing::warn!(%error, "cannot read the hook input");
            Value::Null
        }
    };
    let stop_hook_active = matches!(&input["stop_hook_active"], Value::Bool(true))
        || input["stop_hook_active"]
            .as_str()
            .is_some_and(|s| matches!(s.to_lowercase().as_str(), "true" | "1" | "yes"));
    let (sender, receiver) = mpsc::channel();
    let settings = settings.clone();
    let (hook, harness) = (args.hook, args.harness);
    std::thread::spawn(move || {
        let outcome = super::open_with_embedder(&settings, super::Access::Create)
            .and_then(|palace| work(&palace, &input, harness, hook, settings.home.as_deref()));
        let _ = sender.send(outcome);
    });
    let (context, block) = match receiver.recv_timeout(hook.deadline()) {
        Ok(Ok(work)) => {
            tracing::info!(summary = %work.summary, "hook done");
            (work.context, work.block)
        }
        Ok(Err(error)) => {
            tracing::warn!(error = format!("{error:#}"), "hook work failed; the session goes on");
            (None, None)
        }
        Err(_) => {
            tracing::warn!(
                seconds = hook.deadline().as_secs(),
                "hook work still running at the deadline; answering now"
            );
            (None, None)
        }
    };
    // A session asked to save already is not asked again (the harness sets
    // `stop_hook_active` while it acts on a block).
    let block = block.filter(|_| !stop_hook_active);
    output::json(&reply(args.harness, hook, context, block))?;
    Ok(())
}

/// Writes (or prints) the opencode plugin.
fn install(settings: &Settings, harness: Harness, dir: Option<PathBuf>, print: bool) -> Result<()> {
    if harness != Harness::Opencode {
        anyhow::bail!(super::UserError(
            "Claude Code and Codex call hooks from their settings: add the JSON lines of docs/cli.md (`hook run`) to \
             ~/.claude/settings.json or ~/.codex/hooks.json; `hook install` writes opencode's plugin"
                .into()
        ));
    }
    let program = std::env::current_exe()?;
    let plugin = OPENCODE_PLUGIN.replace("__MEMPALACE__", &serde_json::to_string(&program.display().to_string())?);
    if print {
        output::line(plugin.trim_end())?;
        return Ok(());
    }
    let dir = match (dir, &settings.home) {
        (Some(dir), _) => dir,
        (None, Some(home)) => home.join(".config").join("opencode").join("plugins"),
        (None, None) => anyhow::bail!(super::UserError("HOME is not set: give the plugin folder with --dir".into())),
    };
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(OPENCODE_PLUGIN_FILE);
    std::fs::write(&path, plugin)?;
    output::line(format!(
        "Wrote {}: opencode files each session into the palace when it goes idle and before compaction (restart \
         opencode to load it).",
        path.display()
    ))?;
    Ok(())
}
