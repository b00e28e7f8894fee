//! `entities` (duplicate entities merged into one, reversibly: dedup,
//! merge, unmerge, aliases) and `centroids` (the memory-type and room
//! prototypes: recompute, list), over `engine::entities` and
//! `engine::centroids` (docs/entities-and-centroids.md).

use anyhow::Result;
use clap::Subcommand;
use mempalace_engine::Palace;
use mempalace_mcp::shapes;
use mempalace_store::MergeOutcome;
use serde_json::{Value, json};

use crate::output;

/// `entities`.
#[derive(Debug, Subcommand)]
pub enum EntitiesCommand {
    /// Merge entities whose names are one thing (spelling, generic suffix, known abbreviation); --dry-run shows them.
    Dedup {
        /// Only show what would merge, and the pairs flagged for review.
        #[arg(long)]
        dry_run: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Merge ALIAS into CANONICAL by hand (its facts and mentions move; `unmerge` moves them back).
    Merge {
        /// The entity that becomes an alias.
        alias: String,
        /// The entity kept.
        canonical: String,
    },
    /// Undo a merge: ALIAS is an entity of its own again, with the facts the merge moved.
    Unmerge {
        /// The alias.
        alias: String,
    },
    /// The aliases (of ENTITY, named by itself or an alias; else all).
    Aliases {
        /// Entity name.
        entity: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `centroids`.
#[derive(Debug, Subcommand)]
pub enum CentroidsCommand {
    /// Train the centroids that are due now (what `maintain` does daily).
    Recompute {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The stored centroids: per memory type and per room, with their sample counts.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

fn canonical_name(palace: &Palace, id: &str) -> Result<Option<String>> {
    Ok(palace.store().entities_by_id(palace.workspace(), &[id.to_string()])?.pop().map(|e| e.name))
}

/// Runs `entities`.
pub fn entities(palace: &Palace, command: EntitiesCommand) -> Result<()> {
    match command {
        EntitiesCommand::Dedup { dry_run, json } => {
            let report = palace.dedup_entities(dry_run)?;
            if json {
                return Ok(output::json(&shapes::DedupReportShape::of(&report))?);
            }
            let verb = if report.applied { "merged" } else { "would merge" };
            let aliases: usize = report.groups.iter().map(|g| g.aliases.len()).sum();
            output::line(format!(
                "{} entities looked at; {verb} {aliases} into {} ({} facts and {} mentions moved); {} pairs flagged",
                report.entities,
                report.groups.len(),
                report.moved_triples,
                report.moved_mentions,
                report.flagged.len()
            ))?;
            for group in &report.groups {
                let names: Vec<String> = group.aliases.iter().map(|(name, why)| format!("{name} ({why})")).collect();
                output::line(format!("  {} ← {}", group.canonical, names.join(", ")))?;
            }
            for pair in &report.flagged {
                output::line(format!(
                    "  ? {} / {} ({}): `entities merge` if they are one",
                    pair.a, pair.b, pair.reason
                ))?;
            }
        }
        EntitiesCommand::Merge { alias, canonical } => match palace.merge_entities(&alias, &canonical)? {
            MergeOutcome::Merged { triples, mentions } => output::line(format!(
                "merged {alias} into {canonical}: {triples} facts and {mentions} mentions moved (`entities unmerge {alias}` undoes it)"
            ))?,
            MergeOutcome::AlreadyMerged => output::line(format!("{alias} is already an alias of {canonical}"))?,
            other => output::line(format!("{other:?}"))?,
        },
        EntitiesCommand::Unmerge { alias } => {
            let back = palace.unmerge_entity(&alias)?;
            let from = canonical_name(palace, &back.canonical_id)?.unwrap_or(back.canonical_id);
            output::line(format!(
                "{alias} is its own entity again: {} facts moved back from {from}, {} drawers mention it",
                back.triples, back.mentions
            ))?;
        }
        EntitiesCommand::Aliases { entity, json } => {
            let aliases = palace.entity_aliases(entity.as_deref())?;
            let mut items = Vec::new();
            for alias in &aliases {
                items
                    .push(shapes::EntityAliasShape::of(alias, canonical_name(palace, &alias.canonical_id)?.as_deref()));
            }
            if json {
                return Ok(output::json(&json!({"count": items.len(), "aliases": items}))?);
            }
            if items.is_empty() {
                output::line("No aliases.")?;
            }
            for item in &items {
                output::line(format!(
                    "{} → {} ({}, {})",
                    item.alias,
                    item.canonical.as_deref().unwrap_or(&item.canonical_id),
                    item.reason,
                    item.merged_at
                ))?;
            }
        }
    }
    Ok(())
}

/// Runs `centroids`.
pub fn centroids(palace: &Palace, command: CentroidsCommand) -> Result<()> {
    match command {
        CentroidsCommand::Recompute { json } => {
            let report = palace.recompute_centroids()?;
            if json {
                return Ok(output::json(&shapes::CentroidReportShape::of(&report))?);
            }
            if report.model.is_none() {
                output::line("No embedding model: centroids need vectors (`mempalace model fetch`).")?;
                return Ok(());
            }
            output::line(format!(
                "memory types: {} trained, {} unchanged, {} with too few samples; rooms: {} trained, {} unchanged, \
                 {} not due, {} with too few drawers, {} forgotten",
                report.types_trained.len(),
                report.types_unchanged.len(),
                report.types_too_few.len(),
                report.rooms_trained.len(),
                report.rooms_unchanged.len(),
                report.rooms_not_due,
                report.rooms_too_few,
                report.rooms_forgotten.len()
            ))?;
        }
        CentroidsCommand::List { json } => {
            let types = palace.store().centroids(palace.workspace())?;
            let rooms = palace.store().room_centroids(palace.workspace())?;
            let ts = |t: &mempalace_core::Timestamp| mempalace_core::time::format_timestamp(t);
            let types: Vec<Value> = types
                .iter()
                .map(|c| {
                    json!({"memory_type": c.memory_type.as_str(), "model": c.embedding.model,
                    "samples": c.sample_count, "computed_at": ts(&c.computed_at)})
                })
                .collect();
            let rooms: Vec<Value> = rooms
                .iter()
                .map(|c| {
                    json!({"wing": c.wing, "room": c.room, "model": c.embedding.model, "samples": c.sample_count,
                    "room_drawers": c.room_drawers, "computed_at": ts(&c.computed_at)})
                })
                .collect();
            if json {
                return Ok(output::json(&json!({"memory_types": types, "rooms": rooms}))?);
            }
            output::line(format!("{} memory-type centroids, {} room centroids", types.len(), rooms.len()))?;
            for c in &types {
                output::line(format!(
                    "  type {:<10} {} samples",
                    c["memory_type"].as_str().unwrap_or_default(),
                    c["samples"]
                ))?;
            }
            for c in &rooms {
                output::line(format!(
                    "  room {}/{}  {} samples of {} drawers",
                    c["wing"].as_str().unwrap_or_default(),
                    c["room"].as_str().unwrap_or_default(),
                    c["samples"],
                    c["room_drawers"]
                ))?;
            }
        }
    }
    Ok(())
}
