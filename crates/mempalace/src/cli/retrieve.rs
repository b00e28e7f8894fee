//! `search`, `wake-up`, `recall` and `inject`: the retrieval layers.
//!
//! Text output follows the Python MemPalace layout where it has the command
//! (`search`, `wake-up`); `--json` gives the documented shapes.

use anyhow::Result;
use clap::Args;
use mempalace_core::MemoryType;
use mempalace_core::time::{DayEdge, format_timestamp, parse_timestamp};
use mempalace_engine::{Palace, SearchMode, SearchOutcome, SearchRequest};
use mempalace_store::DrawerFilter;
use serde_json::json;

use super::UserError;
use super::values::FusionArg;
use crate::output;

/// Arguments of `search`.
#[derive(Debug, Args)]
pub struct SearchArgs {
    /// What to look for, in your own words (or an exact code).
    pub query: String,
    /// Only this wing.
    #[arg(long)]
    pub wing: Option<String>,
    /// Only this room.
    #[arg(long)]
    pub room: Option<String>,
    /// Only this memory type.
    #[arg(long = "type", value_name = "TYPE", value_parser = super::values::memory_type())]
    pub memory_type: Option<MemoryType>,
    /// Only drawers with this tag (repeatable: any of them).
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Only drawers filed on or after this date (YYYY-MM-DD or RFC 3339).
    #[arg(long)]
    pub since: Option<String>,
    /// Only drawers filed on or before this date.
    #[arg(long)]
    pub before: Option<String>,
    /// Number of results (1–100).
    #[arg(long, default_value = "5", value_parser = super::values::result_limit)]
    pub results: mempalace_core::layers::ResultLimit,
    /// How keyword and vector matches are combined.
    #[arg(long, value_enum, default_value_t)]
    pub fusion: FusionArg,
    /// Leave out the knowledge-graph signal (drawers naming entities the
    /// query names).
    #[arg(long)]
    pub no_graph: bool,
    /// Search as this user: their own drawers too, ranked 1.2× higher (and replacing a shared copy).
    #[arg(long)]
    pub user: Option<String>,
    /// With --user: answer from the user's own relevant drawers only, else from the shared pool.
    #[arg(long, requires = "user")]
    pub user_first: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `wake-up`.
#[derive(Debug, Args)]
pub struct WakeUpArgs {
    /// Only this wing's essential story.
    #[arg(long)]
    pub wing: Option<String>,
    /// Print {"text": …, "tokens": n}.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `recall`.
#[derive(Debug, Args)]
pub struct RecallArgs {
    /// Wing.
    #[arg(long)]
    pub wing: String,
    /// Room.
    #[arg(long)]
    pub room: Option<String>,
}

/// Arguments of `inject`.
#[derive(Debug, Args)]
pub struct InjectArgs {
    /// The user's message.
    pub message: String,
    /// Whose memories to offer (their own and the workspace's).
    #[arg(long)]
    pub user: Option<String>,
    /// Print {"section": …|null, "trivial": bool, "match_count": n, "top_score": x}.
    #[arg(long)]
    pub json: bool,
}

fn source_name(source: Option<&str>) -> String {
    source.and_then(|s| s.rsplit(['/', '\\']).next()).unwrap_or("").to_string()
}

pub fn search(palace: &Palace, args: SearchArgs) -> Result<()> {
    if args.query.trim().is_empty() {
        return Err(UserError("the query is empty; say what to look for".into()).into());
    }
    let filter = DrawerFilter {
        wings: args.wing.iter().cloned().collect(),
        rooms: args.room.iter().cloned().collect(),
        memory_types: args.memory_type.into_iter().collect(),
        tags: args.tags.clone(),
        filed_after: args.since.as_deref().map(|d| parse_timestamp(d, "--since", DayEdge::Start)).transpose()?,
        filed_before: args.before.as_deref().map(|d| parse_timestamp(d, "--before", DayEdge::End)).transpose()?,
        viewer: args.user.clone().filter(|u| !u.trim().is_empty()),
        ..DrawerFilter::default()
    };
    let request = SearchRequest {
        query: args.query.clone(),
        limit: args.results,
        filter,
        fusion: args.fusion.into(),
        skip_graph: args.no_graph,
        user_first: args.user_first,
        ..SearchRequest::default()
    };
    let outcome = palace.search(&request)?;
    if args.json {
        return Ok(output::json(&search_json(&args, &outcome))?);
    }
    let rule = "=".repeat(60);
    let mut text = format!("\n{rule}\n  Results for: \"{}\"\n", args.query);
    if let Some(wing) = &args.wing {
        text.push_str(&format!("  Wing: {wing}\n"));
    }
    if let Some(room) = &args.room {
        text.push_str(&format!("  Room: {room}\n"));
    }
    if let SearchMode::LexicalOnly(reason) = &outcome.mode {
        text.push_str(&format!("  ! keyword search only: {reason}\n"));
    }
    text.push_str(&format!("{rule}\n\n"));
    if outcome.hits.is_empty() {
        let mut empty = format!("\n  No results found for: \"{}\"\n", args.query);
        if let SearchMode::LexicalOnly(reason) = &outcome.mode {
            empty.push_str(&format!("  ! keyword search only: {reason}\n"));
        }
        return Ok(output::text(empty)?);
    }
    for (index, hit) in outcome.hits.iter().enumerate() {
        let drawer = &hit.drawer;
        text.push_str(&format!("  [{}] {} / {}\n", index + 1, drawer.wing, drawer.room));
        text.push_str(&format!("      Source: {}\n", source_name(drawer.source_file.as_deref())));
        let mut matched = format!("score={:.3}", hit.score);
        if let Some(similarity) = hit.similarity {
            matched.push_str(&format!("  cosine={similarity:.3}"));
        }
        if let Some(bm25) = hit.bm25 {
            matched.push_str(&format!("  bm25={bm25:.2}"));
        }
        text.push_str(&format!("      Match:  {matched}\n      Id:     {}\n\n", drawer.id));
        for line in drawer.content.as_str().trim().lines() {
            text.push_str(&format!("      {line}\n"));
        }
        text.push_str(&format!("\n  {}\n", "─".repeat(56)));
    }
    text.push('\n');
    Ok(output::text(text)?)
}

fn search_json(args: &SearchArgs, outcome: &SearchOutcome) -> serde_json::Value {
    let (mode, reason) = match &outcome.mode {
        SearchMode::Hybrid => ("hybrid", None),
        SearchMode::LexicalOnly(reason) => ("lexical", Some(reason.as_str())),
    };
    json!({
        "query": args.query,
        "mode": mode,
        "degraded_reason": reason,
        "filters": {"wing": args.wing, "room": args.room},
        "candidates": outcome.candidates,
        "results": outcome.hits.iter().map(|hit| json!({
            "id": hit.drawer.id.as_str(),
            "wing": hit.drawer.wing.as_str(),
            "room": hit.drawer.room.as_str(),
            "hall": hit.drawer.hall.as_ref().map(|h| h.as_str()),
            "score": hit.score,
            "similarity": hit.similarity,
            "bm25": hit.bm25,
            "text": hit.drawer.content.as_str(),
            "memory_type": hit.drawer.memory_type.map(|t| t.as_str()),
            "source_file": hit.drawer.source_file,
            "filed_at": format_timestamp(&hit.drawer.filed_at),
        })).collect::<Vec<_>>(),
    })
}

pub fn wake_up(palace: &Palace, args: WakeUpArgs) -> Result<()> {
    let text = palace.wake_up(args.wing.as_deref())?;
    let tokens = text.chars().count() / 4;
    if args.json {
        return Ok(output::json(&json!({"text": text, "tokens": tokens}))?);
    }
    Ok(output::text(format!("Wake-up text (~{tokens} tokens):\n{}\n{text}\n", "=".repeat(50)))?)
}

pub fn recall(palace: &Palace, args: RecallArgs) -> Result<()> {
    Ok(output::line(palace.recall(&args.wing, args.room.as_deref())?)?)
}

pub fn inject(palace: &Palace, args: InjectArgs) -> Result<()> {
    let injection = palace.inject_for(&args.message, args.user.as_deref())?;
    if args.json {
        return Ok(output::json(&json!({
            "section": injection.section,
            "trivial": injection.trivial,
            "match_count": injection.match_count,
            "top_score": injection.top_score,
        }))?);
    }
    if let Some(section) = injection.section {
        output::line(section)?;
    }
    Ok(())
}
