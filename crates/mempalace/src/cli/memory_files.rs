//! `memory-files sync|list|get|add|edit`: GoClaw's memory files
//! (`MEMORY.md`, `memory/*.md`, and `users/USER/…` for one user's own) as
//! memory. The work is `mempalace_feed::memory`; this module picks the
//! memory root (DIR, else `memory_dir`/`$MEMPALACE_MEMORY_DIR`, else the
//! current folder), parses flags and prints (docs/memory-files.md).

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use mempalace_core::{Content, DrawerId, Wing};
use mempalace_engine::Palace;
use mempalace_engine::drawers::DrawerUpdate;
use mempalace_feed::memory::{self, MemoryNote, MemorySyncOptions, NoteTarget};

use super::Access;
use crate::output;
use crate::settings::Settings;

/// `memory-files`.
#[derive(Debug, Subcommand)]
pub enum MemoryFilesCommand {
    /// File the memory files of DIR: changed files re-filed paragraph by paragraph, drawers of removed
    /// paragraphs and files dropped, unchanged files skipped.
    Sync(SyncArgs),
    /// List the memory files of DIR and whether the palace is up to date with each.
    List(ListArgs),
    /// Print a memory file, or lines of it, by its path under the memory root (a user's own file first).
    Get(GetArgs),
    /// Append a memory to MEMORY.md (or today's memory/YYYY-MM-DD.md, or another memory file) and file it.
    Add(AddArgs),
    /// Change a memory-file drawer's text: its paragraph is rewritten in the file, the drawer keeps its id.
    Edit(EditArgs),
}

/// Where the memory files are.
#[derive(Debug, Args)]
pub struct RootArg {
    /// The memory root: the project or agent folder holding MEMORY.md and memory/ [default: memory_dir
    /// from config.json or $MEMPALACE_MEMORY_DIR, else the current folder]
    #[arg(long = "dir", value_name = "DIR")]
    dir: Option<PathBuf>,
}

/// `memory-files sync`.
#[derive(Debug, Args)]
pub struct SyncArgs {
    /// The memory root [default: memory_dir, else the current folder].
    dir: Option<PathBuf>,
    /// Wing of the drawers [default: the folder's mempalace.yaml wing, else its name].
    #[arg(long)]
    wing: Option<String>,
    /// Count what would change; write nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// `memory-files list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    /// The memory root [default: memory_dir, else the current folder].
    dir: Option<PathBuf>,
    /// Print the list as JSON.
    #[arg(long)]
    json: bool,
}

/// `memory-files get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// The file under the memory root: MEMORY.md, memory.md or memory/NAME.
    path: String,
    /// First line to print, from 1.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    from: Option<u64>,
    /// How many lines to print [default: to the end].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    lines: Option<u64>,
    /// Read this user's own file (users/USER/PATH) when it exists, else the shared one.
    #[arg(long)]
    user: Option<String>,
    #[command(flatten)]
    root: RootArg,
    /// Print the result (path, scope, lines, text) as JSON.
    #[arg(long)]
    json: bool,
}

/// `memory-files add`.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// The memory (Markdown; `-` reads it from stdin).
    text: String,
    /// Append to today's memory/YYYY-MM-DD.md instead of MEMORY.md.
    #[arg(long, conflicts_with = "file")]
    daily: bool,
    /// Append to this memory file instead: MEMORY.md, memory.md or memory/NAME.md.
    #[arg(long, value_name = "PATH")]
    file: Option<String>,
    /// Add to this user's own memory (users/USER/…), owned by them.
    #[arg(long)]
    user: Option<String>,
    /// Wing of a file the palace has not filed yet [default: as `sync`].
    #[arg(long)]
    wing: Option<String>,
    #[command(flatten)]
    root: RootArg,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

/// `memory-files edit`.
#[derive(Debug, Args)]
pub struct EditArgs {
    /// The drawer (a paragraph of a memory file; other drawers are changed in the palace only).
    id: String,
    /// Its new text (`-` reads it from stdin).
    text: String,
    /// Print the drawer's id, file and lines as JSON.
    #[arg(long)]
    json: bool,
}

/// The memory root when none is given: `memory_dir`, else the current folder.
pub(crate) fn default_root(settings: &Settings) -> Option<PathBuf> {
    settings.memory_dir.clone().or_else(|| std::env::current_dir().ok())
}

fn root(dir: Option<PathBuf>, settings: &Settings) -> Result<PathBuf> {
    dir.or_else(|| default_root(settings))
        .context("no memory root: give DIR, set memory_dir in config.json or $MEMPALACE_MEMORY_DIR")
}

fn text_arg(text: String) -> Result<String> {
    if text != "-" {
        return Ok(text);
    }
    let mut read = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut read).context("reading the text from stdin")?;
    Ok(read)
}

fn wing(text: Option<String>) -> Result<Option<Wing>> {
    Ok(text.map(|w| Wing::parse(&w)).transpose()?)
}

/// Runs the command; `open` opens the palace (with the embedder) as asked.
pub fn run(settings: &Settings, command: MemoryFilesCommand, open: impl Fn(Access) -> Result<Palace>) -> Result<()> {
    match command {
        MemoryFilesCommand::Sync(args) => {
            let root = root(args.dir, settings)?;
            let options = MemorySyncOptions { wing: wing(args.wing)?, dry_run: args.dry_run, ..Default::default() };
            let palace = open(if args.dry_run { Access::Read } else { Access::Create })?;
            let report = memory::sync(&palace, &root, &options)?;
            if args.json {
                return Ok(output::json(&report)?);
            }
            let mode = if report.dry_run { " (dry run: nothing written)" } else { "" };
            output::line(format!("memory files of {} (wing {}){mode}", report.root, report.wing))?;
            output::line(format!(
                "  {} files, {} re-filed, {} gone; drawers: {} added, {} unchanged, {} removed",
                report.files,
                report.refiled,
                report.removed_files,
                report.drawers_added,
                report.drawers_unchanged,
                report.drawers_removed
            ))?;
            for problem in &report.failed {
                output::line(format!("  failed: {}: {}", problem.file, problem.error))?;
            }
            Ok(())
        }
        MemoryFilesCommand::List(args) => {
            let root = root(args.dir, settings)?;
            let files = memory::list(&open(Access::Read)?, &root)?;
            if args.json {
                return Ok(output::json(&files)?);
            }
            if files.is_empty() {
                output::line(format!("no memory files in {} (MEMORY.md, memory.md, memory/*.md)", root.display()))?;
            }
            for file in files {
                let owner = file.owner.map(|o| format!("  [user {o}]")).unwrap_or_default();
                output::line(format!(
                    "{}  {}: {} paragraphs, {} drawers{owner}",
                    file.path, file.state, file.paragraphs, file.drawers
                ))?;
            }
            Ok(())
        }
        MemoryFilesCommand::Get(args) => {
            let root = root(args.root.dir, settings)?;
            let to_usize = |n: Option<u64>| n.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
            let read =
                memory::read(&root, &args.path, args.user.as_deref(), to_usize(args.from), to_usize(args.lines))?;
            if args.json {
                return Ok(output::json(&read)?);
            }
            Ok(output::text(&read.text)?)
        }
        MemoryFilesCommand::Add(args) => {
            let root = root(args.root.dir, settings)?;
            let target = match (args.daily, args.file) {
                (true, _) => NoteTarget::Daily,
                (false, Some(file)) => NoteTarget::File(file),
                (false, None) => NoteTarget::Main,
            };
            let note = MemoryNote {
                text: text_arg(args.text)?,
                target,
                user: args.user,
                wing: wing(args.wing)?,
                agent: "cli".into(),
            };
            let added = memory::add(&open(Access::Create)?, &root, &note)?;
            if args.json {
                return Ok(output::json(&added)?);
            }
            output::line(format!("added to {}", added.path))?;
            for id in &added.drawer_ids {
                output::line(format!("  {id}"))?;
            }
            Ok(())
        }
        MemoryFilesCommand::Edit(args) => {
            let id = DrawerId::parse(&args.id)?;
            let content = Content::parse(text_arg(args.text)?.trim())?;
            let palace = open(Access::Update)?;
            let update = DrawerUpdate { content: Some(content), ..DrawerUpdate::default() };
            let drawer = memory::update_drawer(&palace, &id, update)?;
            let place = match (&drawer.source_file, drawer.line_start, drawer.line_end) {
                (Some(file), Some(start), Some(end)) if memory::is_memory_file_drawer(&drawer) => {
                    format!("{file}:{start}-{end}")
                }
                _ => "the palace only (not a memory-file drawer)".to_string(),
            };
            if args.json {
                return Ok(output::json(&serde_json::json!({
                    "drawer_id": drawer.id.as_str(),
                    "source_file": drawer.source_file,
                    "line_start": drawer.line_start,
                    "line_end": drawer.line_end,
                }))?);
            }
            output::line(format!("updated {} in {place}", drawer.id))?;
            Ok(())
        }
    }
}
