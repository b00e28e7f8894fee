//! `mine`: the command line over `mempalace_feed::mine` — projects,
//! conversations (agent transcripts, chat exports) and opencode sessions,
//! incrementally. This module only parses flags and prints the report.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use mempalace_core::time::{DayEdge, parse_timestamp};
use mempalace_core::{Room, Wing};
use mempalace_engine::Palace;
use mempalace_feed::{Extract, MineOptions, MineReport, Mode, Selection};

use super::UserError;
use crate::output;

/// What to mine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModeArg {
    /// A project tree: documents first (code with --include-code), rooms from mempalace.yaml.
    Projects,
    /// Conversations: Claude Code, Codex CLI and Gemini CLI sessions, ChatGPT, Claude.ai and Slack exports,
    /// plain text with `>` user lines.
    Convos,
    /// opencode sessions, read from its SQLite database.
    Opencode,
    /// Office documents (the Python MemPalace's optional extra): not read here.
    Extract,
}

/// How conversations become drawers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExtractArg {
    /// One drawer per exchange, plus a header per conversation.
    Exchange,
    /// Decisions, preferences, milestones, problems and emotional moments picked out of the
    /// conversation, each in the room named by its type.
    General,
}

/// `mine`.
#[derive(Debug, Args)]
pub struct MineArgs {
    /// A project folder; a transcript file or a folder of transcripts and exports (--mode convos);
    /// opencode's database (--mode opencode, default ~/.local/share/opencode/opencode.db).
    path: Option<PathBuf>,
    /// What the files are.
    #[arg(long, value_enum, default_value = "projects")]
    mode: ModeArg,
    /// Conversations: one drawer per exchange, or extracted memories.
    #[arg(long, value_enum, default_value = "exchange")]
    extract: ExtractArg,
    /// Projects: mine files that .gitignore excludes too.
    #[arg(long)]
    no_gitignore: bool,
    /// Projects: mine this ignored path anyway (repeatable or comma-separated; relative to the project).
    #[arg(long = "include-ignored", value_name = "PATH", value_delimiter = ',')]
    include_ignored: Vec<PathBuf>,
    /// Projects: mine source code as well as documents.
    #[arg(long)]
    include_code: bool,
    /// Wing for every drawer (default: the project's, else a conversation's directory name,
    /// else "conversations").
    #[arg(long)]
    wing: Option<String>,
    /// Room for conversations (default "conversations"; projects route files by mempalace.yaml).
    #[arg(long, default_value = "conversations")]
    room: String,
    /// Who files them.
    #[arg(long, default_value = "mine")]
    agent: String,
    /// Only the first N files (sessions with --mode opencode); 0 means all.
    #[arg(long)]
    limit: Option<usize>,
    /// opencode's database (same as giving it as the path).
    #[arg(long)]
    db: Option<PathBuf>,
    /// Only conversations with at least this many messages (opencode default: 3).
    #[arg(long)]
    min_messages: Option<usize>,
    /// Only conversations with a message on or after this date (YYYY-MM-DD or RFC 3339).
    #[arg(long)]
    since: Option<String>,
    /// Only the conversation with this session id.
    #[arg(long)]
    session: Option<String>,
    /// Show what would be filed, added and removed; write nothing.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    routing: super::values::WriteRouting,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

impl MineArgs {
    fn options(&self) -> Result<MineOptions> {
        let mode = match self.mode {
            ModeArg::Projects => Mode::Projects,
            ModeArg::Convos => Mode::Convos,
            ModeArg::Opencode => Mode::Opencode,
            ModeArg::Extract => bail!(UserError(
                "--mode extract (office documents) is not supported: save them as text, markdown or PDF text and \
                 mine the folder as a project"
                    .into()
            )),
        };
        self.routing.note_ignored();
        let since = self.since.as_deref().map(|d| parse_timestamp(d, "--since", DayEdge::Start)).transpose()?;
        Ok(MineOptions {
            mode,
            wing: self.wing.as_deref().map(Wing::parse).transpose()?,
            room: Room::parse(&self.room)?,
            agent: self.agent.clone(),
            limit: self.limit.filter(|n| *n > 0),
            dry_run: self.dry_run,
            extract: match self.extract {
                ExtractArg::Exchange => Extract::Exchange,
                ExtractArg::General => Extract::General,
            },
            selection: Selection { since, min_messages: self.min_messages, session: self.session.clone() },
            gitignore: !self.no_gitignore,
            include_ignored: self.include_ignored.clone(),
            include_code: self.include_code,
        })
    }
}

/// Runs the command.
pub fn run(palace: &Palace, args: MineArgs, home: Option<&Path>) -> Result<()> {
    let options = args.options()?;
    let path = args.path.as_deref().or(args.db.as_deref());
    let mut bar: Option<output::Progress> = None;
    let report = mempalace_feed::mine(palace, path, home, &options, &mut |done, total, added| {
        bar.get_or_insert_with(|| output::Progress::new(total)).update(done, added);
    })?;
    if let Some(bar) = bar {
        bar.finish();
    }
    if args.json {
        output::json(&report)?;
    } else {
        print_summary(&options, &report)?;
    }
    Ok(())
}

fn print_summary(options: &MineOptions, report: &MineReport) -> Result<()> {
    let would = if report.dry_run { "would be " } else { "" };
    let what = match options.mode {
        Mode::Opencode => format!("{} opencode sessions ({} skipped)", report.files, report.conversations_skipped),
        Mode::Projects => format!(
            "{} files in wing {}: {} read, {} failed",
            report.files,
            report.wing.as_deref().unwrap_or("-"),
            report.read,
            report.failed.len()
        ),
        Mode::Convos => format!(
            "{} files: {} read, {} not transcripts, {} failed",
            report.files,
            report.read,
            report.skipped.len(),
            report.failed.len()
        ),
    };
    output::line(format!(
        "{what}; drawers {} {would}added, {} unchanged, {} {would}replaced ({:.1} s){}",
        report.drawers_added,
        report.drawers_unchanged,
        report.drawers_removed,
        report.seconds,
        if report.dry_run { "; dry run, nothing written" } else { "" }
    ))?;
    const SHOWN: usize = 10;
    for (label, list) in [("skipped", &report.skipped), ("failed", &report.failed)] {
        for problem in list.iter().take(SHOWN) {
            output::note(format!("{label}: {} — {}", problem.file, problem.error));
        }
        if list.len() > SHOWN {
            output::note(format!("… and {} more {label} (--json lists them all)", list.len() - SHOWN));
        }
    }
    Ok(())
}
