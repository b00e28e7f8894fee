//! `audit`: how navigable the palace is — scores for rooms, naming,
//! tunnels and the knowledge graph with findings to act on (the engine's
//! `Palace::audit`, scored by `mempalace_core::audit`). Read-only; takes no
//! lock. `--json` prints the whole report (keys sorted, as in Python);
//! `--fail-under SCORE` exits 2 when the overall score is below it.

use std::io::IsTerminal;

use anyhow::Result;
use clap::Args;
use mempalace_engine::Palace;

use super::UserError;
use crate::output;
use crate::settings::Settings;

/// Width findings are wrapped to.
const WIDTH: usize = 80;

/// `audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Print the full report as JSON.
    #[arg(long)]
    json: bool,
    /// No progress line on stderr.
    #[arg(long)]
    quiet: bool,
    /// Exit 2 when the overall score is below SCORE (for CI or cron checks).
    #[arg(long, value_name = "SCORE")]
    fail_under: Option<f64>,
}

/// Runs the command.
pub fn run(palace: &Palace, settings: &Settings, args: AuditArgs) -> Result<()> {
    if !args.json && !args.quiet && std::io::stderr().is_terminal() {
        output::note("  reading drawers, tunnels and the knowledge graph...");
    }
    let report = palace.audit()?;
    let location = settings.location();
    if args.json {
        let mut value = serde_json::to_value(&report)?;
        value["palace"] = serde_json::Value::String(location);
        value["workspace"] = serde_json::Value::String(settings.workspace.to_string());
        // A serde_json map keeps its keys sorted.
        output::json(&value)?;
    } else {
        output::text(mempalace_core::audit::render(&report, &location, WIDTH) + "\n")?;
    }
    if let (Some(threshold), Some(overall)) = (args.fail_under, report.scores.overall)
        && f64::from(overall) < threshold
    {
        return Err(UserError(format!("the overall score {overall} is below --fail-under {threshold}")).into());
    }
    Ok(())
}
