//! `sync [DIR…] [--wing W] [--root R]… [--apply]`: find the drawers of
//! mined files that are gone or now ignored by git; remove them only with
//! `--apply` (a plain run previews, as in the Python MemPalace). The work
//! is `mempalace_feed::sync`; this module parses flags and prints.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use mempalace_engine::Palace;
use mempalace_feed::sync::{SyncOptions, SyncReport, sync};

use crate::output;

/// `sync`.
#[derive(Debug, Args)]
pub struct SyncArgs {
    /// Project folders to check (their .gitignore rules decide what is ignored); default: every
    /// mined file, each in its own project.
    dirs: Vec<PathBuf>,
    /// A project folder to check (same as giving it as DIR; repeatable).
    #[arg(long = "root", value_name = "DIR")]
    roots: Vec<PathBuf>,
    /// Only drawers of this wing.
    #[arg(long)]
    wing: Option<String>,
    /// Remove the drawers of gitignored and missing files (without it, sync only previews).
    #[arg(long, conflicts_with = "dry_run")]
    apply: bool,
    /// Preview only (the default; kept for scripts written for the Python MemPalace).
    #[arg(long)]
    dry_run: bool,
    /// Accepted for the Python MemPalace's write routing; no effect here.
    #[arg(long, hide = true)]
    daemon: bool,
    /// Accepted for the Python MemPalace's write routing; no effect here.
    #[arg(long, hide = true)]
    direct: bool,
    /// Accepted for the Python MemPalace; no effect here.
    #[arg(long, hide = true)]
    background: bool,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs the command.
pub fn run(palace: &Palace, args: SyncArgs) -> Result<()> {
    let mut roots = args.dirs;
    roots.extend(args.roots);
    let options = SyncOptions { wing: args.wing, roots, apply: args.apply };
    let report = sync(palace, &options)?;
    if args.json {
        output::json(&report)?;
    } else {
        print(&options, &report)?;
    }
    Ok(())
}

fn print(options: &SyncOptions, report: &SyncReport) -> Result<()> {
    let mode = if report.dry_run { "preview (nothing removed; --apply removes)" } else { "apply" };
    let mut scope: Vec<String> = options.roots.iter().map(|r| format!("project {}", r.display())).collect();
    if let Some(wing) = &options.wing {
        scope.push(format!("wing {wing}"));
    }
    let scope = if scope.is_empty() { "every mined file".to_string() } else { scope.join(", ") };
    let removal = if report.dry_run { "would remove" } else { "removed" };
    output::line(format!("sync of {scope}: {mode}"))?;
    output::line(format!(
        "  {} drawers scanned: {} kept, {} gitignored ({removal}), {} missing ({removal}), {} unresolved (kept), \
         {} without a source file, {} out of scope",
        report.scanned,
        report.kept,
        report.gitignored,
        report.missing,
        report.unresolved,
        report.no_source,
        report.out_of_scope
    ))?;
    let mut sources: Vec<(&String, &usize)> = report.by_source.iter().collect();
    sources.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (source, count) in sources.iter().take(5) {
        output::line(format!("    {source}  ({count})"))?;
    }
    if sources.len() > 5 {
        output::line(format!("    and {} more source files", sources.len() - 5))?;
    }
    if report.unresolved > 0 {
        output::line("  unresolved drawers are kept: nothing here shows their source file is gone")?;
    }
    if report.dry_run && report.gitignored + report.missing > 0 {
        let hint = if options.wing.is_none() && options.roots.is_empty() {
            "re-run with --apply and --wing W or a project folder to remove them"
        } else {
            "re-run with --apply to remove them"
        };
        output::line(format!("  {hint}"))?;
    }
    if !report.dry_run {
        output::line(format!("  removed {} drawers", report.removed_drawers))?;
    }
    Ok(())
}
