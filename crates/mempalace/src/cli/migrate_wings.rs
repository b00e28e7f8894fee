//! `migrate-wings`: normalises wing names the Python MemPalace way
//! (lowercase; spaces and `-` become `_`; `_` trimmed at both ends), so
//! wings filed under older spellings (`My-Project`, `_notes_`) meet the
//! ones `init` and the miners name today. Prints the plan, asks before
//! applying unless `--yes` (a stdin that is not a terminal cannot answer:
//! nothing is applied, exit 2), and moves each drawer with the engine's
//! `rename_wing`, which keeps drawer ids and re-keys explicit tunnels.

use std::io::{BufRead, IsTerminal};

use anyhow::Result;
use clap::Args;
use mempalace_engine::Palace;

use super::UserError;
use crate::output;

/// `migrate-wings`.
#[derive(Debug, Args)]
pub struct MigrateWingsArgs {
    /// Show what would change; change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Apply without asking.
    #[arg(long, short = 'y')]
    yes: bool,
}

/// Asks a yes/no question on the terminal; `None` when stdin is not one.
pub(crate) fn confirm(question: &str) -> Result<Option<bool>> {
    if !std::io::stdin().is_terminal() {
        return Ok(None);
    }
    output::note(question);
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(Some(matches!(answer.trim().to_lowercase().as_str(), "y" | "yes")))
}

/// Runs the command.
pub fn run(palace: &Palace, args: MigrateWingsArgs) -> Result<()> {
    let plan = palace.plan_wing_names()?;
    for wing in &plan.unfixable {
        output::note(format!("  {wing:?} has no valid normalised name; it is left alone (rename it by hand)"));
    }
    if plan.renames.is_empty() {
        output::line("  All wing names are already normalized -- nothing to migrate.")?;
        return Ok(());
    }
    output::line("\n  Wing-name migration plan:")?;
    for rename in &plan.renames {
        output::line(format!(
            "    {:?} -> {:?}: {} drawer(s){}",
            rename.from,
            rename.to.as_str(),
            rename.drawers,
            if rename.merge { "  (MERGE into existing wing)" } else { "" }
        ))?;
    }
    if args.dry_run {
        output::line("\n  DRY RUN -- no changes made.\n")?;
        return Ok(());
    }
    if !args.yes {
        match confirm("  Apply this wing-name migration? [y/N] ")? {
            Some(true) => {}
            Some(false) => {
                output::line("  Aborted.")?;
                return Ok(());
            }
            None => {
                return Err(UserError(
                    "not applied: stdin is not a terminal, so nobody can confirm; re-run with --yes to apply the \
                     plan above, or --dry-run to only look"
                        .into(),
                )
                .into());
            }
        }
    }
    let (mut drawers, mut tunnels) = (0, 0);
    for rename in &plan.renames {
        let moved = palace.rename_wing(&rename.from, &rename.to)?;
        drawers += moved.drawers;
        tunnels += moved.tunnels;
    }
    let tunnel_part = if tunnels > 0 { format!(", {tunnels} tunnel(s)") } else { String::new() };
    output::line(format!("\n  Migrated {drawers} drawer(s){tunnel_part}.\n"))?;
    Ok(())
}
