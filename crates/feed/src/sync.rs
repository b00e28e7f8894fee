//! `sync`: find the drawers of mined files that are gone or now ignored by
//! git, and, only when asked to apply, remove them. As in the Python
//! MemPalace, a plain run previews: nobody loses drawers by typing `sync`.
//!
//! Each source (a file path that drawers name as `source_file`) is one of:
//!
//! - **kept**: the file is there and not ignored;
//! - **gitignored**: the file is there, but the `.gitignore` rules of its
//!   project now exclude it (removed on apply);
//! - **missing**: the file is gone and its folder is still there (removed
//!   on apply);
//! - **unresolved**: the file cannot be checked (its whole folder is gone —
//!   an unmounted drive or a moved project looks the same — or it cannot be
//!   read); kept, because nothing shows it was deleted;
//! - **no source**: drawers filed by hand, over MCP or from opencode's
//!   database (no file path); never touched;
//!
//! An entry of a mined zip archive (`ARCHIVE.zip#ENTRY`) is judged by its
//! archive.
//! - **out of scope**: under none of the project folders given; kept.
//!
//! Counts are in drawers, as the Python MemPalace reports them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mempalace_engine::{DeleteMode, Palace};
use mempalace_mine::project::{ignored_by_git, project_root};
use serde::Serialize;

use crate::error::{FeedError, FeedResult};

/// What to check and whether to remove.
#[derive(Debug, Clone, Default)]
pub struct SyncOptions {
    /// Only drawers of this wing.
    pub wing: Option<String>,
    /// Only sources under these project folders; their `.gitignore` files
    /// decide what is ignored (else each file's own project: the deepest
    /// folder above it holding `.git` or a `.gitignore`).
    pub roots: Vec<PathBuf>,
    /// Remove the gitignored and missing sources' drawers (otherwise only
    /// report them).
    pub apply: bool,
}

/// What a sync found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SyncReport {
    /// Drawers looked at.
    pub scanned: usize,
    /// Drawers of present, not ignored files.
    pub kept: usize,
    /// Drawers of files the project's `.gitignore` now excludes.
    pub gitignored: usize,
    /// Drawers of files that are gone.
    pub missing: usize,
    /// Drawers of files that could not be checked (kept).
    pub unresolved: usize,
    /// Drawers without a file path as their source (kept).
    pub no_source: usize,
    /// Drawers of files outside the given project folders (kept).
    pub out_of_scope: usize,
    /// Drawers removed (0 in a preview).
    pub removed_drawers: usize,
    /// Compressed index entries removed: always 0 (this palace keeps none;
    /// the key is MemPalace's).
    pub removed_closets: usize,
    /// Whether this was a preview.
    pub dry_run: bool,
    /// Sources whose drawers are (or would be) removed, with their counts.
    pub by_source: BTreeMap<String, usize>,
    /// Sources that could not be checked, with their counts.
    pub unresolved_by_source: BTreeMap<String, usize>,
}

/// What one source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Kept,
    Gitignored,
    Missing,
    Unresolved,
    NoSource,
    OutOfScope,
}

fn judge(source: &str, roots: &[PathBuf]) -> Verdict {
    // An entry of a mined archive (`ARCHIVE.zip#ENTRY`) stands or falls
    // with its archive; entries gone from it are removed by mining it again.
    let archive = source.to_ascii_lowercase().find(".zip#").map(|at| &source[..at + 4]);
    let path = Path::new(archive.unwrap_or(source));
    if !path.is_absolute() {
        return Verdict::NoSource;
    }
    let root = if roots.is_empty() {
        project_root(path)
    } else {
        match roots.iter().find(|root| path.starts_with(root)) {
            Some(root) => Some(root.clone()),
            None => return Verdict::OutOfScope,
        }
    };
    match std::fs::symlink_metadata(path) {
        Ok(_) => {
            if root.is_some_and(|root| ignored_by_git(&root, path)) {
                Verdict::Gitignored
            } else {
                Verdict::Kept
            }
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            // Its folder must still be there to show the file was deleted.
            if path.parent().is_some_and(Path::is_dir) { Verdict::Missing } else { Verdict::Unresolved }
        }
        Err(_) => Verdict::Unresolved,
    }
}

/// Checks the palace's mined sources; with `apply`, removes the drawers of
/// gitignored and missing ones (and forgets their cursors).
pub fn sync(palace: &Palace, options: &SyncOptions) -> FeedResult<SyncReport> {
    if options.apply && options.wing.is_none() && options.roots.is_empty() {
        return Err(FeedError::Invalid(
            "sync --apply needs a wing (--wing W) or a project folder (`mempalace sync DIR --apply`), so one run \
             cannot prune every wing of a palace shared by several projects"
                .into(),
        ));
    }
    let roots: Vec<PathBuf> =
        options.roots.iter().map(|root| root.canonicalize().unwrap_or_else(|_| root.clone())).collect();
    let sources = palace.sources(options.wing.as_deref())?;
    let mut report = SyncReport { dry_run: !options.apply, ..SyncReport::default() };
    // Drawers without any source (filed by hand or over MCP) count as "no
    // source" too, as the Python MemPalace counts them.
    let taxonomy = palace.taxonomy()?;
    let visible: u64 = match &options.wing {
        Some(wing) => taxonomy.wings.get(wing).map_or(0, |w| w.drawers),
        None => taxonomy.total_drawers,
    };
    let with_source: usize = sources.values().map(Vec::len).sum();
    let without = usize::try_from(visible).unwrap_or(usize::MAX).saturating_sub(with_source);
    report.scanned += without;
    report.no_source += without;
    for (source, drawers) in &sources {
        let count = drawers.len();
        report.scanned += count;
        let verdict = judge(source, &roots);
        match verdict {
            Verdict::Kept => report.kept += count,
            Verdict::NoSource => report.no_source += count,
            Verdict::OutOfScope => report.out_of_scope += count,
            Verdict::Unresolved => {
                report.unresolved += count;
                report.unresolved_by_source.insert(source.clone(), count);
            }
            Verdict::Gitignored | Verdict::Missing => {
                if verdict == Verdict::Gitignored {
                    report.gitignored += count;
                } else {
                    report.missing += count;
                }
                report.by_source.insert(source.clone(), count);
                if options.apply {
                    for id in drawers {
                        palace.delete_drawer(id, DeleteMode::Hard)?;
                        report.removed_drawers += 1;
                    }
                    palace.set_source_cursor(source, None)?;
                }
            }
        }
    }
    tracing::info!(
        scanned = report.scanned,
        gitignored = report.gitignored,
        missing = report.missing,
        removed = report.removed_drawers,
        "sync"
    );
    Ok(report)
}
