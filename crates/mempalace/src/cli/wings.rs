//! `wings split --wing W [--yes]`: splits a machine-level transcript wing
//! into one wing per source project (the engine's `plan_wing_split` /
//! `apply_wing_split`; the project of a drawer is its `cwd`, else the
//! Claude Code project folder in its source path). Without `--yes` the
//! plan is written to `<palace folder>/wings/split-<wing>.json` (the
//! Python format) for review — targets may be edited there; with `--yes`
//! the saved plan is applied (or, when there is none, the plan computed
//! now). Drawers keep their ids, rooms and text; re-running moves what is
//! left.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use mempalace_core::Wing;
use mempalace_core::origin::How;
use mempalace_engine::Palace;
use mempalace_engine::layout::{SplitPlan, SplitProject};
use serde_json::{Value, json};

use super::UserError;
use crate::output;
use crate::settings::Settings;

/// `wings`.
#[derive(Debug, Subcommand)]
pub enum WingsCommand {
    /// Re-key a transcript wing into one wing per source project (plan file first; --yes applies).
    Split(SplitArgs),
}

/// `wings split`.
#[derive(Debug, Args)]
pub struct SplitArgs {
    /// Wing to split.
    #[arg(long)]
    wing: String,
    /// Apply the saved plan (<palace folder>/wings/split-<wing>.json), or the one computed now.
    #[arg(long, short = 'y')]
    yes: bool,
}

fn plan_path(settings: &Settings, wing: &Wing) -> Result<PathBuf> {
    Ok(settings.side_dir()?.join("wings").join(format!("split-{wing}.json")))
}

fn plan_json(plan: &SplitPlan, planned_at: &str) -> Value {
    let projects: serde_json::Map<String, Value> = plan
        .projects
        .iter()
        .map(|p| (p.key.clone(), json!({"target": p.target, "how": p.how.as_str(), "drawers": p.drawers})))
        .collect();
    json!({"schema_version": 1, "wing": plan.wing, "planned_at": planned_at, "projects": projects, "unresolved": plan.unresolved})
}

/// Reads a saved plan, checking it is for `wing` and every target is a wing name.
fn read_plan(text: &str, wing: &Wing) -> Result<SplitPlan, String> {
    let value: Value = serde_json::from_str(text).map_err(|error| format!("not JSON ({error})"))?;
    if value.get("wing").and_then(Value::as_str) != Some(wing.as_str()) {
        return Err(format!(
            "it is for wing {}, not {wing}; re-run without --yes",
            value.get("wing").unwrap_or(&Value::Null)
        ));
    }
    let projects = value.get("projects").and_then(Value::as_object).filter(|p| !p.is_empty());
    let projects = projects.ok_or("it lists no projects")?;
    let mut out = Vec::new();
    for (key, entry) in projects {
        let target = entry.get("target").and_then(Value::as_str).ok_or(format!("project {key:?} has no target"))?;
        let target = Wing::parse(target).map_err(|error| format!("project {key:?}: {error}"))?;
        let how =
            if entry.get("how").and_then(Value::as_str) == Some("existing") { How::Existing } else { How::Derived };
        let drawers = entry.get("drawers").and_then(Value::as_u64).unwrap_or(0);
        out.push(SplitProject { key: key.clone(), target: target.to_string(), how, drawers });
    }
    out.sort_by(|a, b| b.drawers.cmp(&a.drawers).then(a.key.cmp(&b.key)));
    Ok(SplitPlan {
        wing: wing.to_string(),
        projects: out,
        unresolved: value.get("unresolved").and_then(Value::as_u64).unwrap_or(0),
    })
}

fn report(plan: &SplitPlan) -> Result<()> {
    let keyed: u64 = plan.projects.iter().map(|p| p.drawers).sum();
    output::line(format!(
        "  {}: {} source projects, {keyed} drawers with a project key, {} without one (stay).",
        plan.wing,
        plan.projects.len(),
        plan.unresolved
    ))?;
    let mut targets: BTreeMap<&str, (u64, Vec<&str>)> = BTreeMap::new();
    for project in &plan.projects {
        let entry = targets.entry(&project.target).or_default();
        entry.0 += project.drawers;
        if !entry.1.contains(&project.how.as_str()) {
            entry.1.push(project.how.as_str());
        }
    }
    let mut ranked: Vec<(&str, (u64, Vec<&str>))> = targets.into_iter().collect();
    ranked.sort_by(|a, b| b.1.0.cmp(&a.1.0).then(a.0.cmp(b.0)));
    output::line("  Targets:")?;
    for (target, (n, hows)) in ranked.iter().take(25) {
        output::line(format!("    {target:<32} {n:>7}  ({})", hows.join(", ")))?;
    }
    if ranked.len() > 25 {
        output::line(format!("    ... {} more targets in the plan file", ranked.len() - 25))?;
    }
    Ok(())
}

/// Runs `wings`.
pub fn run(palace: &Palace, settings: &Settings, command: WingsCommand) -> Result<()> {
    let WingsCommand::Split(args) = command;
    let wing = Wing::parse(&args.wing)?;
    let path = plan_path(settings, &wing)?;
    if !args.yes {
        let plan = palace.plan_wing_split(&wing)?;
        if plan.projects.is_empty() {
            output::line(format!("  No drawer in {wing} carries a project key; nothing to split."))?;
            return Ok(());
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let planned_at = mempalace_core::time::format_timestamp(&palace.now());
        let partial = path.with_extension("json.partial");
        std::fs::write(&partial, serde_json::to_string_pretty(&plan_json(&plan, &planned_at))? + "\n")
            .with_context(|| format!("writing {}", partial.display()))?;
        std::fs::rename(&partial, &path).with_context(|| format!("writing {}", path.display()))?;
        report(&plan)?;
        output::line(format!("\n  Plan saved to {}. Edit targets there, then re-run with --yes.", path.display()))?;
        return Ok(());
    }
    let plan = match std::fs::read_to_string(&path) {
        Ok(text) => read_plan(&text, &wing)
            .map_err(|reason| UserError(format!("the plan at {} is invalid: {reason}", path.display())))?,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            output::note(format!("no saved plan at {}; applying the plan computed now", path.display()));
            palace.plan_wing_split(&wing)?
        }
        Err(error) => return Err(error).with_context(|| format!("reading {}", path.display())),
    };
    if plan.projects.is_empty() {
        output::line(format!("  No drawer in {wing} carries a project key; nothing to split."))?;
        return Ok(());
    }
    report(&plan)?;
    let targets: BTreeMap<String, Wing> = plan
        .projects
        .iter()
        .map(|p| Ok((p.key.clone(), Wing::parse(&p.target)?)))
        .collect::<Result<_, mempalace_core::ValidationError>>()?;
    let result = palace.apply_wing_split(&wing, &targets)?;
    output::line(format!(
        "\n  Moved {} drawers into {} wings; {} skipped (no project key, or already in place).",
        result.moved,
        result.per_target.len(),
        result.skipped
    ))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_plans_round_trip_and_edits_are_checked() {
        let plan = SplitPlan {
            wing: "claude".into(),
            projects: vec![SplitProject { key: "-h-dev-a".into(), target: "a".into(), how: How::Derived, drawers: 3 }],
            unresolved: 1,
        };
        let wing = Wing::parse("claude").unwrap();
        let text = plan_json(&plan, "2026-01-01T00:00:00Z").to_string();
        assert_eq!(read_plan(&text, &wing).unwrap(), plan);
        assert!(read_plan(&text, &Wing::parse("other").unwrap()).unwrap_err().contains("not other"));
        let edited = text.replace("\"target\":\"a\"", "\"target\":\"a/b\"");
        assert!(read_plan(&edited, &wing).is_err());
        assert!(read_plan(r#"{"wing": "claude", "projects": {}}"#, &wing).is_err());
    }
}
