//! `repair-status` and `migrate`: the Python MemPalace's vector-index
//! maintenance verbs, mapped onto a palace that has no ChromaDB.
//!
//! Our derived structures (lexical index, room and hall counts, entity
//! mentions; PostgreSQL's vector indexes) are checked and rebuilt by
//! `doctor`, so `repair-status` prints the doctor's derived-index checks
//! and how many drawers have a vector of each embedding model, read-only,
//! and always exits 0. `migrate` recovered a ChromaDB palace written by
//! another ChromaDB version; there is no ChromaDB here, so it explains and
//! points at `migrate-from-python` (exit 2). It does not run that
//! migration itself: bringing a Python palace over is a different, larger
//! operation with its own dry run, and should be asked for by name.

use std::path::Path;

use anyhow::Result;
use clap::Args;
use mempalace_engine::Palace;

use super::UserError;
use crate::output;
use crate::settings::Settings;

/// `repair-status`.
#[derive(Debug, Args)]
pub struct RepairStatusArgs {}

/// `migrate`.
#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// Accepted for the Python MemPalace; nothing is migrated here.
    #[arg(long)]
    dry_run: bool,
    /// Accepted for the Python MemPalace; nothing is migrated here.
    #[arg(long)]
    yes: bool,
}

/// Prints the status block.
pub fn repair_status(palace: &Palace, settings: &Settings, _args: RepairStatusArgs) -> Result<()> {
    let report = palace.doctor(false)?;
    let rule = "=".repeat(55);
    let mut text = format!("\n{rule}\n  MemPalace Repair — Status\n{rule}\n\n");
    text.push_str(&format!("  Palace:  {}\n", settings.location()));
    text.push_str(&format!("  Drawers: {} (every workspace and status)\n\n", report.drawers_before));
    let derived: Vec<_> = report.checks.iter().filter(|check| check.derived).collect();
    for check in &derived {
        text.push_str(&format!("  [{}]\n", check.name));
        text.push_str(&format!("    status:  {}\n", if check.ok { "OK" } else { "DIVERGED" }));
        text.push_str(&format!("    detail:  {}\n", check.detail));
    }
    text.push_str(&format!("  [vectors] (workspace {})\n", settings.workspace));
    let coverage = palace.embedding_coverage()?;
    if coverage.is_empty() {
        text.push_str("    no drawers\n");
    }
    for (model, count) in &coverage {
        text.push_str(&format!("    {:<28} {count} drawers\n", model.as_deref().unwrap_or("(no vector)")));
    }
    text.push('\n');
    if derived.iter().all(|check| check.ok) {
        text.push_str("  Every derived index matches the rows: nothing to repair.\n");
    } else {
        text.push_str("  Run `mempalace doctor` to rebuild what differs (it never changes drawers).\n");
    }
    if coverage.iter().any(|(model, _)| model.is_none()) {
        text.push_str("  Drawers without a vector are found by keywords only; `mempalace reembed` adds vectors.\n");
    }
    let others_ok = report.checks.iter().filter(|check| !check.derived).all(|check| check.ok);
    if !others_ok {
        text.push_str("  Integrity checks failed too: see `mempalace doctor --check-only`.\n");
    }
    text.push('\n');
    output::text(text)?;
    Ok(())
}

/// Explains why there is nothing to migrate.
pub fn migrate(settings: &Settings, _args: MigrateArgs) -> Result<()> {
    let mut hint = "bring a Python MemPalace palace over with `mempalace migrate-from-python --dry-run`, then \
                    without --dry-run"
        .to_string();
    if settings.database_url.is_none()
        && let Some(dir) = settings.palace_file.parent()
        && dir.join("chroma.sqlite3").is_file()
    {
        let source = match (dir.file_name(), dir.parent()) {
            (Some(name), Some(parent)) if name == "palace" => parent.display().to_string(),
            _ => format!("<the folder holding palace/chroma.sqlite3, as {}>", Path::new(dir).display()),
        };
        hint = format!(
            "{} holds a Python MemPalace palace; bring it over with `mempalace migrate-from-python --source {source} \
             --dry-run`, then without --dry-run",
            dir.display()
        );
    }
    Err(UserError(format!(
        "mempalace-rs stores palaces in SQLite or PostgreSQL, not ChromaDB, so there is no ChromaDB version to \
         migrate; {hint}"
    ))
    .into())
}
