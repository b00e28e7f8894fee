//! `sweep TARGET`: the command line over `mempalace_feed::sweep::sweep` —
//! every Claude Code message of a transcript (or of every `.jsonl` under a
//! folder) filed as a drawer of its own, once. Prints the Python
//! MemPalace's summary line; a folder in which some files failed exits 2
//! after sweeping the rest.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use clap::Args;
use mempalace_engine::Palace;

use super::UserError;
use crate::output;

/// `sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// A .jsonl transcript file, or a folder to scan recursively.
    target: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    routing: super::values::WriteRouting,
}

/// The target with its folders resolved (the file keeps its own name, as
/// in Python, so a symbolic link is filed under the name given).
fn resolve(target: &Path) -> Result<PathBuf> {
    if target.as_os_str().is_empty() {
        return Err(UserError("the sweep target is empty; give a .jsonl transcript or a folder".into()).into());
    }
    let name = target.file_name();
    match (target.parent(), name) {
        (Some(parent), Some(name)) if name != "." && name != ".." => {
            let parent = if parent.as_os_str().is_empty() { Path::new(".") } else { parent };
            let parent = parent.canonicalize().with_context(|| format!("{} does not exist", parent.display()))?;
            Ok(parent.join(name))
        }
        _ => target.canonicalize().with_context(|| format!("{} does not exist", target.display())),
    }
}

/// Runs the command.
pub fn run(palace: &Palace, args: SweepArgs) -> Result<()> {
    args.routing.note_ignored();
    let target = resolve(&args.target)?;
    let report = mempalace_feed::sweep::sweep(palace, &target)?;
    for path in &report.not_regular {
        let name = Path::new(path).file_name().map_or(path.clone(), |n| n.to_string_lossy().into_owned());
        output::note(format!("  SKIP: {name} (not a regular file)"));
    }
    for failure in &report.failures {
        output::note(format!("  WARNING: sweep failed on {}: {}", failure.file, failure.error));
    }
    if args.json {
        output::json(&report)?;
    } else if target.is_dir() {
        output::line(format!(
            "  Swept {}/{} files from {}: +{} new, {} already present, {} skipped (< cursor).",
            report.files_succeeded,
            report.files_attempted,
            target.display(),
            report.drawers_added,
            report.drawers_already_present,
            report.drawers_skipped
        ))?;
    } else {
        output::line(format!(
            "  Swept {}: +{} new, {} already present, {} skipped (< cursor).",
            target.display(),
            report.drawers_added,
            report.drawers_already_present,
            report.drawers_skipped
        ))?;
    }
    if !report.failures.is_empty() {
        return Err(UserError(format!(
            "{} file(s) failed to sweep (listed above); the others were swept — fix or remove those and sweep again",
            report.failures.len()
        ))
        .into());
    }
    Ok(())
}
