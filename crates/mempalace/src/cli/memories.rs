//! `extract` and `memories`: memories extracted from conversations
//! (seed 4), with the palace's language model when one is configured and
//! the rules otherwise.
//!
//! `extract` reads a conversation — a transcript in any format `mine`
//! reads (each conversation in it is extracted on its own), or plain text
//! with `user:` / `assistant:` lines — decides against the memories the
//! user already has, and applies the decisions (or, with `--dry-run`,
//! only shows them). `memories` lists what a user sees.

use std::io::Read;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use mempalace_core::memory::{Decision, Speaker, Turn, turns_from_text};
use mempalace_engine::Palace;
use mempalace_engine::memories::{ExtractOptions, ExtractPath};
use serde_json::{Value, json};

use crate::cli::UserError;
use crate::output;

/// Arguments of `extract`.
#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// The conversation: a transcript file (Claude Code, Codex, ChatGPT, Claude.ai, Gemini, plain text) or - for stdin.
    pub input: PathBuf,
    /// The user the conversation is with: their personal memories are theirs alone.
    #[arg(long)]
    pub user: Option<String>,
    /// Speaker names in plain text that mean the user (besides user/human/me), comma-separated.
    #[arg(long, value_delimiter = ',')]
    pub user_names: Vec<String>,
    /// Decide and show, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Use the rules even when a language model is configured.
    #[arg(long)]
    pub rules: bool,
    /// Print the decisions as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `memories`.
#[derive(Debug, Args)]
pub struct MemoriesArgs {
    /// Show this user's memories (their own and the workspace's); without it, the workspace's and unowned ones.
    #[arg(long)]
    pub user: Option<String>,
    /// Print them as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The conversations of the input, each with its session id.
fn conversations(args: &ExtractArgs) -> Result<Vec<(Option<String>, Vec<Turn>)>> {
    let (text, name) = if args.input.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("reading the conversation from stdin")?;
        (text, "stdin".to_string())
    } else {
        let bytes = std::fs::read(&args.input).map_err(|e| {
            UserError(format!("cannot read {}: {e}; give a transcript file, or - for stdin", args.input.display()))
        })?;
        let text = String::from_utf8(bytes)
            .map_err(|_| UserError(format!("{} is not UTF-8 text; give a transcript file", args.input.display())))?;
        let stem = args.input.file_stem().and_then(|s| s.to_str()).unwrap_or("conversation").to_string();
        (text, stem)
    };
    let user_names: Vec<&str> = args.user_names.iter().map(String::as_str).collect();
    let plain = turns_from_text(&text, &user_names);
    let detected =
        mempalace_mine::detect(&text).filter(|f| *f != mempalace_mine::Format::PlainText || plain.is_empty());
    let found: Vec<(Option<String>, Vec<Turn>)> = match detected {
        Some(format) => mempalace_mine::parse(format, &text, &name)
            .conversations
            .into_iter()
            .map(|conversation| {
                let turns = conversation
                    .messages
                    .into_iter()
                    .map(|m| Turn {
                        speaker: match m.role {
                            mempalace_mine::Role::User => Speaker::User,
                            mempalace_mine::Role::Assistant => Speaker::Assistant,
                        },
                        text: m.text,
                    })
                    .collect();
                (Some(conversation.session_id), turns)
            })
            .collect(),
        None => vec![(None, plain)],
    };
    let found: Vec<_> =
        found.into_iter().filter(|(_, turns)| turns.iter().any(|t| t.speaker == Speaker::User)).collect();
    if found.is_empty() {
        return Err(UserError(format!(
            "no conversation with a user's turn in {}; give a transcript, or text with `user:` and `assistant:` lines \
             (--user-names for other speaker names)",
            args.input.display()
        ))
        .into());
    }
    Ok(found)
}

/// Runs `extract`.
pub fn extract(palace: &Palace, args: ExtractArgs) -> Result<()> {
    let mut reports = Vec::new();
    for (session, turns) in conversations(&args)? {
        let options = ExtractOptions {
            user: args.user.clone(),
            source: (args.input.as_os_str() != "-").then(|| args.input.display().to_string()),
            session: session.clone(),
            dry_run: args.dry_run,
            rules_only: args.rules,
        };
        let report = palace.extract_memories(&turns, &options)?;
        reports.push((session, report));
    }
    if args.json {
        let runs: Vec<Value> = reports
            .iter()
            .map(|(session, report)| {
                let mut value = json!(mempalace_mcp::shapes::ExtractReportShape::of(report));
                value["session"] = json!(session);
                value
            })
            .collect();
        return Ok(output::json(&json!({"conversations": runs}))?);
    }
    for (session, report) in &reports {
        let by = match &report.path {
            ExtractPath::Model(model) => format!("decided by the language model ({model})"),
            ExtractPath::Rules(why) => format!("decided by the rules ({why})"),
        };
        let heading = session.as_deref().map(|s| format!("Conversation {s}: ")).unwrap_or_default();
        output::line(format!(
            "{heading}{} decision(s), {by}{}",
            report.applied.len(),
            if report.dry_run { ", dry run" } else { "" }
        ))?;
        for applied in &report.applied {
            let line = match &applied.decision {
                Decision::Add(m) => format!("  + [{} {}] {}: {}", m.scope, m.entity_type, m.entity_name, m.observation),
                Decision::Update { id, observation } => format!("  ~ {id}: {observation}"),
                Decision::Delete { id, reason } => format!("  - {id}: {reason}"),
            };
            output::line(format!("{line}  ({})", applied.outcome))?;
        }
    }
    Ok(())
}

/// Runs `memories`.
pub fn list(palace: &Palace, args: MemoriesArgs) -> Result<()> {
    let memories = palace.memories(args.user.as_deref())?;
    if args.json {
        let items: Vec<_> = memories.iter().map(mempalace_mcp::shapes::MemoryShape::of).collect();
        return Ok(output::json(&json!({"count": items.len(), "memories": items}))?);
    }
    if memories.is_empty() {
        output::line("No memories yet: `mempalace extract` or `mempalace work` files them from conversations.")?;
    }
    for m in &memories {
        output::line(format!(
            "[{} {}] {}: {}  ({})",
            m.memory.scope, m.memory.entity_type, m.memory.entity_name, m.memory.observation, m.drawer.id
        ))?;
    }
    Ok(())
}
