//! `identity set` and `identity show`: the L0 text of the workspace.

use anyhow::Result;
use clap::Subcommand;
use mempalace_core::Identity;

use super::{Access, open_palace};
use crate::output;
use crate::settings::Settings;

/// Identity subcommands.
#[derive(Debug, Subcommand)]
pub enum IdentityCommand {
    /// Set the identity text (at most 2,000 characters), or `-` to read stdin.
    Set {
        /// The text.
        #[arg(value_name = "TEXT|-", allow_hyphen_values = true)]
        text: String,
    },
    /// Print the identity text.
    Show {
        /// Print {"identity": …, "updated_at": …} (null when unset).
        #[arg(long)]
        json: bool,
    },
}

pub fn run(settings: &Settings, command: IdentityCommand) -> Result<()> {
    match command {
        IdentityCommand::Set { text } => {
            let identity = Identity::parse(super::drawer::read_text(text)?)?;
            open_palace(settings, Access::Create)?.set_identity(&identity)?;
            output::line("identity set")?;
        }
        IdentityCommand::Show { json } => {
            let record = open_palace(settings, Access::Read)?.identity()?;
            if json {
                output::json(&serde_json::json!({
                    "identity": record.as_ref().map(|r| r.identity.as_str()),
                    "updated_at": record.as_ref().map(|r| mempalace_core::time::format_timestamp(&r.updated_at)),
                }))?;
            } else {
                match record {
                    Some(record) => output::line(record.identity.as_str())?,
                    None => output::note("no identity set; set one with `mempalace identity set \"I am …\"`"),
                }
            }
        }
    }
    Ok(())
}
