//! Consolidation's commands over `engine::consolidate`: `episodes` (list,
//! show with drawers, search, write now), `prune` (archive faded drawers,
//! or preview with --dry-run) and `archive` (list, restore).

use anyhow::Result;
use clap::{Args, Subcommand};
use mempalace_core::DrawerId;
use mempalace_engine::Palace;
use mempalace_mcp::shapes;
use serde_json::{Value, json};

use crate::output;

/// `episodes`.
#[derive(Debug, Subcommand)]
pub enum EpisodesCommand {
    /// The episodic summaries, newest first.
    List {
        /// Only what this user sees (theirs and shared ones).
        #[arg(long)]
        user: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 20)]
        limit: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// One episode (by its id or its session id) with the drawers it summarises.
    Show {
        /// Episode id or session id.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The episodes most relevant to a query.
    Search {
        /// What to look for.
        query: String,
        /// Only what this user sees.
        #[arg(long)]
        user: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 5)]
        limit: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Summarise ended sessions now (what the `consolidate` job does every 10 minutes).
    Write {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// `prune`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// Only show which drawers would be archived.
    #[arg(long)]
    dry_run: bool,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

/// `archive`.
#[derive(Debug, Subcommand)]
pub enum ArchiveCommand {
    /// The archived drawers, oldest first.
    List {
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Bring an archived (or deleted) drawer back.
    Restore {
        /// The drawer's id.
        id: String,
    },
}

fn episode_line(e: &mempalace_core::session::EpisodicSummary) -> String {
    let day = e.created_at.format("%Y-%m-%d %H:%M");
    let who = e.user_id.as_deref().map(|u| format!(" [{u}]")).unwrap_or_default();
    format!("{}  {day}{who}  {}", e.id, e.l0_abstract)
}

/// Runs `episodes`.
pub fn episodes(palace: &Palace, command: EpisodesCommand) -> Result<()> {
    match command {
        EpisodesCommand::List { user, limit, json } => {
            let mut episodes = palace.episodes(user.as_deref())?;
            episodes.truncate(limit);
            if json {
                let items: Vec<_> = episodes.iter().map(shapes::EpisodeShape::of).collect();
                return Ok(output::json(&json!({"count": items.len(), "episodes": items}))?);
            }
            if episodes.is_empty() {
                output::line(
                    "No episodes yet: a session is summarised once it has been idle for 30 minutes \
                     (`mempalace work`, or `mempalace episodes write`).",
                )?;
            }
            for e in &episodes {
                output::line(episode_line(e))?;
            }
        }
        EpisodesCommand::Show { id, json } => {
            let detail = palace.episode(&id)?;
            if json {
                return Ok(output::json(&shapes::EpisodeShape::detail(&detail))?);
            }
            output::line(episode_line(&detail.episode))?;
            output::line(format!("  session {}", detail.episode.session_id))?;
            if !detail.episode.key_topics.is_empty() {
                output::line(format!("  topics: {}", detail.episode.key_topics.join(", ")))?;
            }
            output::line(format!("\n{}\n", detail.episode.summary))?;
            output::line(format!("{} drawer(s):", detail.drawers.len()))?;
            for d in &detail.drawers {
                let first = d.content.as_str().lines().next().unwrap_or_default();
                let first: String = first.chars().take(100).collect();
                output::line(format!("  {}  {first}", d.id))?;
            }
        }
        EpisodesCommand::Search { query, user, limit, json } => {
            let hits = palace.search_episodes(&query, None, user.as_deref(), limit, 0.0)?;
            if json {
                let items: Vec<_> = hits.iter().map(shapes::EpisodeShape::hit).collect();
                return Ok(output::json(&json!({"query": query, "count": items.len(), "episodes": items}))?);
            }
            if hits.is_empty() {
                output::line("No episode matches.")?;
            }
            for hit in &hits {
                output::line(format!("{:.3}  {}", hit.score, episode_line(&hit.episode)))?;
            }
        }
        EpisodesCommand::Write { json } => {
            let report = palace.write_episodes()?;
            if json {
                return Ok(output::json(&super::work::consolidate_json(&report))?);
            }
            let by = match &report.model_fallback {
                Some(why) => format!("{} by the language model, the rest extractive ({why})", report.abstractive),
                None => format!("{} by the language model", report.abstractive),
            };
            output::line(format!("{} episode(s) written ({by})", report.episodes))?;
        }
    }
    Ok(())
}

/// Runs `prune`.
pub fn prune(palace: &Palace, args: PruneArgs) -> Result<()> {
    let report = palace.prune(args.dry_run)?;
    if args.json {
        return Ok(output::json(&shapes::PruneReportShape::of(&report))?);
    }
    let verb = if report.dry_run { "would archive" } else { "archived" };
    output::line(format!(
        "{verb} {} drawer(s): importance below {} with fewer than {} accesses, keeping at least {} active{}",
        report.drawers.len(),
        mempalace_engine::consolidate::PRUNE_BELOW,
        mempalace_engine::consolidate::PRUNE_MAX_ACCESSES,
        mempalace_engine::consolidate::PRUNE_KEEP,
        if report.dry_run || report.drawers.is_empty() {
            ""
        } else {
            " (`mempalace archive restore ID` brings one back)"
        }
    ))?;
    for c in &report.drawers {
        output::line(format!("  {}  importance {:.2}, {} accesses", c.id, c.importance, c.access_count))?;
    }
    Ok(())
}

/// Runs `archive`.
pub fn archive(palace: &Palace, command: ArchiveCommand) -> Result<()> {
    match command {
        ArchiveCommand::List { limit, json } => {
            let drawers = palace.archived(limit)?;
            if json {
                let items: Vec<Value> = drawers
                    .iter()
                    .map(|d| json!({"id": d.id.as_str(), "content": d.content.as_str(), "reason": d.status_reason, "metadata": shapes::drawer_metadata(d)}))
                    .collect();
                return Ok(output::json(&json!({"count": items.len(), "drawers": items}))?);
            }
            if drawers.is_empty() {
                output::line("The archive is empty.")?;
            }
            for d in &drawers {
                let first: String = d.content.as_str().chars().take(80).collect();
                output::line(format!("{}  {}/{}  {first}", d.id, d.wing, d.room))?;
            }
        }
        ArchiveCommand::Restore { id } => {
            let id = DrawerId::parse(&id).map_err(|e| super::UserError(format!("{id:?} is not a drawer id: {e}")))?;
            let drawer = palace.restore(&id)?;
            output::line(format!(
                "restored {} to {}/{} (importance {:.2})",
                drawer.id,
                drawer.wing,
                drawer.room,
                drawer.importance.get()
            ))?;
        }
    }
    Ok(())
}
