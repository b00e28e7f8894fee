//! `hallways`: the entity pairs that drawers of a wing mention together
//! (the Python MemPalace's hallways), strongest first.
//!
//! Hallways are computed from the drawers whenever they are asked for, so
//! `--rebuild` only recounts and reports; `--prune-spellings` finds pairs of
//! two spellings of one name ("Postgres" ↔ "postgres") and, with `--yes`,
//! hides them.

use anyhow::Result;
use clap::Args;
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

/// A name with case, spacing and punctuation left out.
fn spelling_key(name: &str) -> String {
    name.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

fn is_spelling_artifact(hallway: &Hallway) -> bool {
    spelling_key(&hallway.entity_a) == spelling_key(&hallway.entity_b)
}

/// Runs the command.
pub fn run(palace: &Palace, args: HallwaysArgs) -> Result<()> {
    let hallways = palace.hallways(args.wing.as_deref())?;
    if args.prune_spellings {
        let artifacts: Vec<&Hallway> = hallways.iter().filter(|h| is_spelling_artifact(h)).collect();
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
            "  {} of {} hallways are spelling artifacts (two spellings of one name).",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_spellings_of_one_name_are_artifacts() {
        let hallway = |a: &str, b: &str| Hallway {
            id: "h".into(),
            wing: "w".into(),
            entity_a: a.into(),
            entity_b: b.into(),
            co_occurrence_count: 2,
            rooms: vec!["r".into()],
        };
        assert!(is_spelling_artifact(&hallway("Postgres", "postgres")));
        assert!(is_spelling_artifact(&hallway("Crawbl Backend", "crawbl-backend")));
        assert!(!is_spelling_artifact(&hallway("Alice", "Bob")));
    }
}
