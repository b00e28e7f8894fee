//! `sync`: remove the drawers of mined files that no longer exist.
//!
//! Only sources that are file paths are checked (transcripts and project
//! files); drawers filed by hand, through MCP or from opencode sessions
//! (`opencode:…`) are never touched.

use std::path::Path;

use anyhow::Result;
use clap::Args;
use mempalace_engine::{DeleteMode, Palace};
use serde_json::json;

use crate::output;

/// `sync`.
#[derive(Debug, Args)]
pub struct SyncArgs {
    /// Only drawers of this wing.
    #[arg(long)]
    wing: Option<String>,
    /// Show what would be removed; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs the command.
pub fn run(palace: &Palace, args: SyncArgs) -> Result<()> {
    let sources = palace.sources(args.wing.as_deref())?;
    let (mut kept, mut gone_files, mut removed) = (0, Vec::new(), 0);
    for (source, drawers) in &sources {
        let is_path = Path::new(source).is_absolute();
        if !is_path || Path::new(source).exists() {
            kept += 1;
            continue;
        }
        gone_files.push(json!({"file": source, "drawers": drawers.len()}));
        if !args.dry_run {
            for id in drawers {
                palace.delete_drawer(id, DeleteMode::Hard)?;
                removed += 1;
            }
            palace.set_source_cursor(source, None)?;
        } else {
            removed += drawers.len();
        }
    }
    let summary = json!({"sources": sources.len(), "kept": kept, "missing": gone_files, "drawers_removed": removed, "dry_run": args.dry_run});
    if args.json {
        output::json(&summary)?;
    } else {
        output::line(format!(
            "{} sources: {kept} present, {} missing; {removed} drawers {}",
            sources.len(),
            summary["missing"].as_array().map_or(0, Vec::len),
            if args.dry_run { "would be removed" } else { "removed" }
        ))?;
    }
    Ok(())
}
