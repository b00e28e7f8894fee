//! `rooms propose|apply --wing W`: a closed room set for a wing, reviewed
//! as a file, then applied by moving drawers to their nearest room.
//!
//! The Python MemPalace asks an LLM to propose the set; there is no LLM
//! path here, so `propose` is the engine's deterministic proposal (the
//! wing's purposeful rooms, plus rooms named after the words its generic
//! drawers share most — `mempalace_core::roomset`) and says so; its LLM
//! flags are accepted and ignored. The set is written to
//! `<palace folder>/rooms/<wing>.json` in the Python format, for a person to
//! rename, merge or delete rooms. `apply` compares each drawer's vector
//! with the rooms' prototypes (centroid of the exemplars' vectors, else
//! the embedded description) and is a dry run unless `--yes`; by default
//! only drawers of the generic rooms move.

use std::collections::BTreeSet;
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use mempalace_core::Wing;
use mempalace_core::roomset::{DEFAULT_MAX_ROOMS, DEFAULT_THRESHOLD, GENERIC_ROOMS, RoomSet};
use mempalace_engine::Palace;
use mempalace_engine::layout::RoomPlan;

use super::UserError;
use crate::output;
use crate::settings::Settings;

/// `rooms`.
#[derive(Debug, Subcommand)]
pub enum RoomsCommand {
    /// Propose a closed room set for a wing from its drawers (no LLM: keyword-based), saved for review.
    Propose(ProposeArgs),
    /// Move the wing's drawers to their nearest room of the set (dry run unless --yes).
    Apply(ApplyArgs),
}

/// `rooms propose`.
#[derive(Debug, Args)]
pub struct ProposeArgs {
    /// Wing to design rooms for.
    #[arg(long)]
    wing: String,
    /// Read N drawers chosen by --seed instead of the whole wing (0: the whole wing).
    #[arg(long, default_value_t = 0)]
    sample: usize,
    /// Sampling seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Upper bound on new rooms (the wing's existing purposeful rooms are kept besides).
    #[arg(long, default_value_t = DEFAULT_MAX_ROOMS)]
    max_rooms: usize,
    /// Accepted for the Python MemPalace; there is no LLM path here.
    #[arg(long, hide = true)]
    llm_provider: Option<String>,
    /// Accepted for the Python MemPalace; there is no LLM path here.
    #[arg(long, hide = true)]
    llm_model: Option<String>,
    /// Accepted for the Python MemPalace; there is no LLM path here.
    #[arg(long, hide = true)]
    llm_endpoint: Option<String>,
    /// Accepted for the Python MemPalace; there is no LLM path here.
    #[arg(long, hide = true)]
    llm_api_key: Option<String>,
    /// Accepted for the Python MemPalace; there is no LLM path here.
    #[arg(long, hide = true)]
    llm_timeout: Option<f64>,
    /// Accepted for the Python MemPalace; nothing leaves this machine here.
    #[arg(long, hide = true)]
    accept_external_llm: bool,
}

/// `rooms apply`.
#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// Wing whose room set to apply.
    #[arg(long)]
    wing: String,
    /// Minimum cosine similarity to move a drawer; below it the drawer keeps its room.
    #[arg(long, default_value_t = DEFAULT_THRESHOLD)]
    threshold: f32,
    /// Comma-separated rooms whose drawers may move (default: general,technical,architecture,planning,problems);
    /// 'all' reclassifies every drawer.
    #[arg(long = "from", value_name = "ROOMS")]
    from_rooms: Option<String>,
    /// On a dry run, print N example drawers per destination room.
    #[arg(long, value_name = "N", default_value_t = 0)]
    show: usize,
    /// Move the drawers.
    #[arg(long, short = 'y')]
    yes: bool,
}

/// Where a wing's room set is kept.
fn set_path(settings: &Settings, wing: &Wing) -> Result<PathBuf> {
    Ok(settings.side_dir()?.join("rooms").join(format!("{wing}.json")))
}

/// Runs `rooms`.
pub fn run(palace: &Palace, settings: &Settings, command: RoomsCommand) -> Result<()> {
    match command {
        RoomsCommand::Propose(args) => propose(palace, settings, args),
        RoomsCommand::Apply(args) => apply(palace, settings, args),
    }
}

fn propose(palace: &Palace, settings: &Settings, args: ProposeArgs) -> Result<()> {
    let wing = Wing::parse(&args.wing)?;
    if args.llm_provider.is_some()
        || args.llm_model.is_some()
        || args.llm_endpoint.is_some()
        || args.llm_api_key.is_some()
    {
        output::note("the --llm-* flags have no effect: mempalace-rs has no LLM path; the proposal is keyword-based");
    }
    let set = palace.propose_rooms(&wing, args.sample, args.seed, args.max_rooms)?;
    if set.sample_size == 0 {
        return Err(UserError(format!(
            "no drawers in wing {wing:?} of {}; `mempalace status` lists the wings",
            settings.location()
        ))
        .into());
    }
    output::line(format!(
        "  Read {} drawers of {wing}; proposing rooms from their words (no LLM here).",
        set.sample_size
    ))?;
    if set.rooms.is_empty() {
        output::line(format!(
            "  No room stands out: the wing's drawers share no word often enough; nothing saved. Name rooms by hand \
             in {} (the Python format) and run `mempalace rooms apply --wing {wing}`.",
            set_path(settings, &wing)?.display()
        ))?;
        return Ok(());
    }
    let path = set_path(settings, &wing)?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let partial = path.with_extension("json.partial");
    std::fs::write(&partial, serde_json::to_string_pretty(&set)? + "\n")
        .with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, &path).with_context(|| format!("writing {}", path.display()))?;
    output::line(format!("\n  Proposed {} rooms for {wing}:", set.rooms.len()))?;
    for room in &set.rooms {
        output::line(format!("    {:<28} ({:>2} exemplars) {}", room.name, room.exemplars.len(), room.description))?;
    }
    output::line(format!("\n  Saved to {}. Edit it, then: mempalace rooms apply --wing {wing}", path.display()))?;
    Ok(())
}

fn report(wing: &Wing, plan: &RoomPlan, from: Option<&BTreeSet<String>>, threshold: f32) -> Result<()> {
    let scope = from.map_or("all rooms".to_string(), |rooms| rooms.iter().cloned().collect::<Vec<_>>().join(", "));
    output::line(format!("  Reclassifying drawers currently in: {scope}"))?;
    output::line(format!(
        "  {wing}: {} drawers; {} would move, {} stay, {} below threshold {threshold:.2} (kept), {} without \
         embeddings (kept).",
        plan.total,
        plan.changes.len(),
        plan.kept,
        plan.below_threshold,
        plan.no_embedding
    ))?;
    for (room, n) in &plan.per_room {
        output::line(format!("    {room:<28} {n}"))?;
    }
    Ok(())
}

fn apply(palace: &Palace, settings: &Settings, args: ApplyArgs) -> Result<()> {
    let wing = Wing::parse(&args.wing)?;
    let path = set_path(settings, &wing)?;
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(UserError(format!(
                "no room set for {wing} ({} does not exist); run: mempalace rooms propose --wing {wing}",
                path.display()
            ))
            .into());
        }
        Err(error) => return Err(error).with_context(|| format!("reading {}", path.display())),
    };
    let set = RoomSet::parse(&text, wing.as_str())
        .map_err(|error| UserError(format!("the room set at {} is invalid: {error}", path.display())))?;
    let from: Option<BTreeSet<String>> = match args.from_rooms.as_deref().map(str::trim) {
        Some("all") => None,
        Some(list) => Some(list.split(',').map(str::trim).filter(|r| !r.is_empty()).map(str::to_string).collect()),
        None => Some(GENERIC_ROOMS.iter().map(|r| r.to_string()).collect()),
    };
    if !(0.0..=1.0).contains(&args.threshold) {
        return Err(UserError(format!("--threshold {} must be between 0 and 1", args.threshold)).into());
    }
    let plan = palace.plan_rooms(&wing, &set, args.threshold, from.as_ref())?;
    let sources: Vec<String> = plan.prototype_source.iter().map(|(name, how)| format!("{name} ({how})")).collect();
    output::line(format!("  Room prototypes: {}", sources.join(", ")))?;
    report(&wing, &plan, from.as_ref(), args.threshold)?;
    if !args.yes {
        if args.show > 0 && !plan.changes.is_empty() {
            output::line("\n  Examples of what would move (confidence, excerpt):")?;
            let mut rooms: Vec<&str> = plan.changes.iter().map(|c| c.to.as_str()).collect();
            rooms.sort_unstable();
            rooms.dedup();
            for room in rooms {
                output::line(format!("    -> {room}"))?;
                for change in plan.changes.iter().filter(|c| c.to == room).take(args.show) {
                    let text =
                        palace.drawer(&change.id)?.content.as_str().split_whitespace().collect::<Vec<_>>().join(" ");
                    let excerpt: String = text.chars().take(160).collect();
                    output::line(format!("       [{:.2}] {excerpt}", change.similarity))?;
                }
            }
        }
        if !plan.changes.is_empty() {
            output::line("\n  Dry run. Re-run with --yes to write the room changes.")?;
        }
        return Ok(());
    }
    if plan.changes.is_empty() {
        output::line("  Nothing to change.")?;
        return Ok(());
    }
    let moved = palace.apply_room_plan(&plan)?;
    output::line(format!("  Moved {moved} drawers (ids kept). Run `mempalace audit` to see the new rooms score."))?;
    Ok(())
}
