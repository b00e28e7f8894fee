//! `update {configure,check,plan}`: mempalace-rs never checks for or
//! installs updates itself. `check` prints the installed version (the
//! Python MemPalace's JSON keys, `latest` unknown, no network) and how to
//! update; `configure` and `plan` explain that in one line and exit 2.

use anyhow::Result;
use clap::{Args, Subcommand};
use serde_json::json;

use super::UserError;
use crate::output;

const HOW_TO_UPDATE: &str = "rebuild from the repository (`git pull && cargo build --release`) or update through \
                             the package manager that installed mempalace";

/// `update`.
#[derive(Debug, Subcommand)]
pub enum UpdateCommand {
    /// Accepted for the Python MemPalace: there are no periodic checks to configure here.
    Configure(ConfigureArgs),
    /// Print the installed version and how to update (no network).
    Check,
    /// Accepted for the Python MemPalace: upgrades are not planned or run here.
    Plan(PlanArgs),
}

/// `update configure`.
#[derive(Debug, Args)]
pub struct ConfigureArgs {
    /// Accepted; nothing to enable.
    #[arg(long, conflicts_with = "disable")]
    enable: bool,
    /// Accepted; nothing to disable.
    #[arg(long)]
    disable: bool,
    /// Accepted; ignored.
    #[arg(long)]
    interval_days: Option<u32>,
    /// Accepted; ignored.
    #[arg(long)]
    installer: Option<String>,
}

/// `update plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Accepted; ignored.
    #[arg(long)]
    installer: Option<String>,
}

/// Runs `update`.
pub fn run(command: UpdateCommand) -> Result<()> {
    match command {
        UpdateCommand::Check => {
            output::json(&json!({
                "installed": env!("CARGO_PKG_VERSION"),
                "latest": null,
                "available": null,
                "checked": false,
                "enabled": false,
                "how_to_update": format!("mempalace-rs does not check for updates over the network; {HOW_TO_UPDATE}"),
            }))?;
            Ok(())
        }
        UpdateCommand::Configure(_) => Err(UserError(format!(
            "mempalace-rs never checks for updates by itself, so there is nothing to configure; to update, {HOW_TO_UPDATE}"
        ))
        .into()),
        UpdateCommand::Plan(_) => Err(UserError(format!(
            "mempalace-rs does not plan or run upgrades; {HOW_TO_UPDATE} (`mempalace update check` prints the installed \
             version)"
        ))
        .into()),
    }
}
