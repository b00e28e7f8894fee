//! `split DIR`: cuts plain-text transcript "mega-files" holding several
//! Claude Code sessions into one file per session (the rules are
//! `mempalace_core::megafile`), so `mine --mode convos` sees each session
//! on its own. Scans DIR's `*.txt` (not recursively), writes the parts to
//! `--output-dir` or beside the original, and renames the original to
//! `NAME.mega_backup`, as the Python MemPalace does; `--dry-run` writes and
//! renames nothing. People in file names come from
//! `~/.mempalace/known_names.json`.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use clap::Args;
use mempalace_core::megafile::{self, KnownNames};

use super::UserError;
use crate::output;
use crate::settings::{self, Settings};

/// Files larger than this are skipped (Python's 500 MB safety limit).
const MAX_BYTES: u64 = 500 * 1024 * 1024;

/// `split`.
#[derive(Debug, Args)]
pub struct SplitArgs {
    /// Folder holding the transcript .txt files.
    dir: PathBuf,
    /// Write the parts here (default: beside each original).
    #[arg(long, value_name = "DIR")]
    output_dir: Option<PathBuf>,
    /// Show what would be split; write and rename nothing.
    #[arg(long)]
    dry_run: bool,
    /// Only split files holding at least N sessions.
    #[arg(long, value_name = "N", default_value_t = 2)]
    min_sessions: usize,
}

/// A mega-file found in the folder.
struct Mega {
    path: PathBuf,
    text: String,
    sessions: usize,
    bytes: u64,
}

fn scan(dir: &Path, min_sessions: usize) -> Result<Vec<Mega>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("listing {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "txt"))
        .collect();
    files.sort();
    let mut megas = Vec::new();
    for path in files {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let meta = std::fs::metadata(&path).with_context(|| format!("reading {}", path.display()))?;
        if !meta.is_file() {
            output::line(format!("  SKIP: {name} (not a regular file)"))?;
            continue;
        }
        if meta.len() > MAX_BYTES {
            output::line(format!("  SKIP: {name} exceeds {} MB limit", MAX_BYTES / (1024 * 1024)))?;
            continue;
        }
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let sessions = megafile::session_starts(&megafile::lines_of(&text)).len();
        if sessions >= min_sessions {
            megas.push(Mega { path, text, sessions, bytes: meta.len() });
        }
    }
    Ok(megas)
}

/// Writes (or in a dry run lists) one mega-file's sessions; returns how
/// many files it wrote or would write.
fn split_one(mega: &Mega, output_dir: Option<&Path>, dry_run: bool, known: &KnownNames) -> Result<usize> {
    let stem = mega.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    let sessions = megafile::split(&stem, &mega.text, known);
    let out_dir = output_dir.map(Path::to_path_buf).or_else(|| mega.path.parent().map(Path::to_path_buf));
    let out_dir = out_dir.unwrap_or_else(|| PathBuf::from("."));
    let mut written = 0;
    for session in &sessions {
        let out = out_dir.join(&session.name);
        if dry_run {
            output::line(format!("  [{}/{}] {}  ({} lines)", session.index, session.of, session.name, session.lines))?;
        } else {
            if std::fs::symlink_metadata(&out).is_ok_and(|meta| !meta.is_file()) {
                output::line(format!("  SKIP: {} (not a regular file)", session.name))?;
                continue;
            }
            std::fs::write(&out, &session.text).with_context(|| format!("writing {}", out.display()))?;
            output::line(format!("  + {}  ({} lines)", session.name, session.lines))?;
        }
        written += 1;
    }
    Ok(written)
}

/// Runs the command.
pub fn run(settings: &Settings, args: SplitArgs) -> Result<()> {
    if !args.dir.is_dir() {
        return Err(UserError(format!(
            "{} is not a directory; give the folder holding the transcript .txt files",
            args.dir.display()
        ))
        .into());
    }
    let dir = args.dir.canonicalize().with_context(|| format!("resolving {}", args.dir.display()))?;
    let known = settings::known_names(settings.home.as_deref())?;
    let megas = scan(&dir, args.min_sessions)?;
    if megas.is_empty() {
        output::line(format!("No mega-files found in {} (min {} sessions).", dir.display(), args.min_sessions))?;
        return Ok(());
    }
    if let Some(out) = &args.output_dir
        && !args.dry_run
    {
        std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    }
    let rule = "=".repeat(60);
    let thin = "-".repeat(60);
    output::line(format!("\n{rule}"))?;
    output::line(format!("  Mega-file splitter -- {}", if args.dry_run { "DRY RUN" } else { "SPLITTING" }))?;
    output::line(&rule)?;
    output::line(format!("  Source:      {}", dir.display()))?;
    output::line(format!(
        "  Output:      {}",
        args.output_dir.as_ref().map_or("same dir as source".to_string(), |d| d.display().to_string())
    ))?;
    output::line(format!("  Mega-files:  {}", megas.len()))?;
    output::line(format!("{thin}\n"))?;
    let mut total = 0;
    for mega in &megas {
        let name = mega.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        output::line(format!("  {name}  ({} sessions, {}KB)", mega.sessions, mega.bytes / 1024))?;
        let written = split_one(mega, args.output_dir.as_deref(), args.dry_run, &known)?;
        total += written;
        if !args.dry_run && written > 0 {
            let backup = mega.path.with_extension("mega_backup");
            std::fs::rename(&mega.path, &backup)
                .with_context(|| format!("renaming {} to {}", mega.path.display(), backup.display()))?;
            let backup_name = backup.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            output::line(format!("  -> Original renamed to {backup_name}\n"))?;
        } else {
            output::line("")?;
        }
    }
    output::line(&thin)?;
    if args.dry_run {
        output::line(format!("  DRY RUN -- would create {total} files from {} mega-files", megas.len()))?;
    } else {
        output::line(format!("  Done -- created {total} files from {} mega-files", megas.len()))?;
    }
    output::line("")?;
    Ok(())
}
