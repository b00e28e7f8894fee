//! `hallways`: the entity pairs that drawers of a wing mention together
//! (the Python MemPalace's hallways), strongest first.
//!
//! Hallways are computed from the drawers whenever they are asked for, so
//! `--rebuild` only recounts and reports; `--prune-spellings` finds the
//! spelling artefacts the audit counts — pairs of two spellings of one name
//! ("Postgres" ↔ "postgres") and pairs linked again under other spellings
//! (the strongest is kept) — and, with `--yes`, hides them.

use anyhow::Result;
use clap::Args;
use mempalace_core::audit::{HallwayInput, hallway_artifacts};
use mempalace_engine::Palace;
use mempalace_engine::hallways::Hallway;
use serde_json::json;

use crate::output;

/// `hallways`.
#[derive(Debug, Args)]
pub struct HallwaysArgs {
    /// Only this wing.
    #[arg(long)]
    wing: Option<String>,
    /// At most this many.
    #[arg(long, default_value_t = 50)]
    limit: usize,
    /// Recount the hallways of the wing (or every wing) and report them per wing.
    #[arg(long)]
    rebuild: bool,
    /// Find hallways between two spellings of one name; hide them with --yes.
    #[arg(long)]
    prune_spellings: bool,
    /// With --prune-spellings: hide what was found.
    #[arg(long)]
    yes: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// The hallways that are spelling artefacts (self-links and duplicates,
/// as the audit counts them), strongest first.
fn spelling_artifacts(hallways: &[Hallway]) -> Vec<&Hallway> {
    let inputs: Vec<HallwayInput> = hallways
        .iter()
        .map(|h| HallwayInput {
            id: h.id.clone(),
            wing: h.wing.clone(),
            entity_a: h.entity_a.clone(),
            entity_b: h.entity_b.clone(),
            count: h.co_occurrence_count as u64,
        })
        .collect();
    let (self_links, duplicates) = hallway_artifacts(&inputs);
    hallways
        .iter()
        .enumerate()
        .filter(|(i, _)| self_links.contains(i) || duplicates.contains(i))
        .map(|(_, h)| h)
        .collect()
}

/// Runs the command.
pub fn run(palace: &Palace, args: HallwaysArgs) -> Result<()> {
    let hallways = palace.hallways(args.wing.as_deref())?;
    if args.prune_spellings {
        let artifacts = spelling_artifacts(&hallways);
        let mut removed = 0;
        if args.yes {
            for hallway in &artifacts {
                removed += usize::from(palace.delete_hallway(&hallway.id)?);
            }
        }
        if args.json {
            let ids: Vec<&str> = artifacts.iter().map(|h| h.id.as_str()).collect();
            return Ok(output::json(&json!({"total": hallways.len(), "spelling_artifacts": ids, "removed": removed}))?);
        }
        output::line(format!(
            "  {} of {} hallways are spelling artifacts (two spellings of one name, or a pair linked again).",
            artifacts.len(),
            hallways.len()
        ))?;
        for hallway in artifacts.iter().take(10) {
            output::line(format!("    {}", hallway.label()))?;
        }
        if args.yes {
            output::line(format!("  Removed {removed}."))?;
        } else if !artifacts.is_empty() {
            output::line("  Dry run. Re-run with --yes to remove them.")?;
        }
        return Ok(());
    }
    if args.rebuild {
        let mut per_wing: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
        for hallway in &hallways {
            *per_wing.entry(hallway.wing.as_str()).or_default() += 1;
        }
        if args.json {
            return Ok(output::json(&json!({"wings": per_wing, "total": hallways.len()}))?);
        }
        for (wing, count) in &per_wing {
            output::line(format!("  {wing:36} {count:7} hallways"))?;
        }
        output::line(format!("  Rebuilt {} hallways across {} wing(s).", hallways.len(), per_wing.len()))?;
        return Ok(());
    }
    let shown: Vec<&Hallway> = hallways.iter().take(args.limit).collect();
    if args.json {
        let list: Vec<_> = shown
            .iter()
            .map(|h| {
                json!({"id": h.id, "wing": h.wing, "entity_a": h.entity_a, "entity_b": h.entity_b,
                    "co_occurrence_count": h.co_occurrence_count, "rooms": h.rooms, "label": h.label()})
            })
            .collect();
        return Ok(output::json(&json!({"hallways": list, "total": hallways.len()}))?);
    }
    if hallways.is_empty() {
        output::line(
            "No hallways yet -- they are built from the entities drawers mention (run `mempalace work` after mining).",
        )?;
        return Ok(());
    }
    output::line(format!("  {} hallway(s):", hallways.len()))?;
    for hallway in shown {
        output::line(format!("    {}", hallway.label()))?;
    }
    Ok(())
}
