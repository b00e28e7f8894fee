//! `instructions NAME`: our skill guides for agents, printed to stdout —
//! how an agent sets up, mines, searches, checks and audits a palace with
//! *our* commands and tools, on the topics of the Python MemPalace's
//! `instructions`. The texts live beside this file in `instructions/*.md`,
//! compiled in; without a name the list is printed.

use anyhow::Result;
use clap::{Args, Subcommand};

use crate::output;

/// `instructions`.
#[derive(Debug, Args)]
pub struct InstructionsArgs {
    /// Which guide; without one, the list.
    #[command(subcommand)]
    name: Option<Guide>,
}

/// The guides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Subcommand)]
pub enum Guide {
    /// Install and set up mempalace.
    Init,
    /// Search the palace.
    Search,
    /// File projects and conversations.
    Mine,
    /// What mempalace is: tools, commands, layout.
    Help,
    /// Show the palace's state.
    Status,
    /// Measure the palace's organisation and repair it with the user.
    Audit,
}

impl Guide {
    pub(crate) const ALL: [Guide; 6] =
        [Guide::Init, Guide::Search, Guide::Mine, Guide::Help, Guide::Status, Guide::Audit];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Guide::Init => "init",
            Guide::Search => "search",
            Guide::Mine => "mine",
            Guide::Help => "help",
            Guide::Status => "status",
            Guide::Audit => "audit",
        }
    }

    fn summary(self) -> &'static str {
        match self {
            Guide::Init => "install and set up mempalace",
            Guide::Search => "search the palace",
            Guide::Mine => "file projects and conversations",
            Guide::Help => "what mempalace is: tools, commands, layout",
            Guide::Status => "show the palace's state",
            Guide::Audit => "measure the palace's organisation and repair it with the user",
        }
    }

    pub(crate) fn text(self) -> &'static str {
        match self {
            Guide::Init => include_str!("instructions/init.md"),
            Guide::Search => include_str!("instructions/search.md"),
            Guide::Mine => include_str!("instructions/mine.md"),
            Guide::Help => include_str!("instructions/help.md"),
            Guide::Status => include_str!("instructions/status.md"),
            Guide::Audit => include_str!("instructions/audit.md"),
        }
    }
}

/// Prints a guide, or the list of guides.
pub fn instructions(args: InstructionsArgs) -> Result<()> {
    match args.name {
        Some(guide) => output::text(guide.text())?,
        None => {
            output::line("Instructions for agents (mempalace instructions NAME):")?;
            for guide in Guide::ALL {
                output::line(format!("  {:<8} {}", guide.name(), guide.summary()))?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `mempalace VERB` a guide shows (in backticks or on a command
    /// line of a code block) is one of our commands.
    #[test]
    fn every_guide_names_only_commands_we_have() {
        use clap::CommandFactory;
        let command = super::super::Cli::command();
        let known: Vec<String> = command
            .get_subcommands()
            .flat_map(|sub| {
                std::iter::once(sub.get_name().to_string()).chain(sub.get_all_aliases().map(str::to_string))
            })
            .collect();
        for guide in Guide::ALL {
            let text = guide.text();
            assert!(text.starts_with("# MemPalace"), "{}", guide.name());
            let mut shown: Vec<&str> = text.match_indices("`mempalace ").map(|(at, _)| &text[at + 11..]).collect();
            shown.extend(text.lines().map(str::trim_start).filter_map(|line| line.strip_prefix("mempalace ")));
            for rest in shown {
                if rest.starts_with('-') {
                    continue; // a global flag such as --version
                }
                let verb: String = rest.chars().take_while(|c| c.is_ascii_lowercase() || *c == '-').collect();
                assert!(known.contains(&verb), "{} shows `mempalace {verb}`, which is not a command", guide.name());
            }
            for absent in ["mempalace-mcp", "pip install", "uv tool"] {
                assert!(!text.contains(absent), "{} mentions {absent}", guide.name());
            }
        }
    }
}
