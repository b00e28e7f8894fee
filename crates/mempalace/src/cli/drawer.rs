//! `add`, `get` and `delete`: one drawer at a time.

use std::io::Read;

use anyhow::Result;
use clap::Args;
use mempalace_core::{Content, DrawerId, Hall, Importance, MemoryType, Room, Wing};
use mempalace_engine::{ChunkOutcome, DeleteMode, IngestRequest, Palace};

use super::UserError;
use crate::output;
use mempalace_web::wire;

/// Arguments of `add`.
#[derive(Debug, Args)]
pub struct AddArgs {
    /// Wing (top-level category), e.g. the project.
    #[arg(long)]
    pub wing: String,
    /// Room (topic within the wing).
    #[arg(long)]
    pub room: String,
    /// Hall (optional finer grouping).
    #[arg(long)]
    pub hall: Option<String>,
    /// Memory type: decision, preference, milestone, problem, emotional, fact or task.
    #[arg(long = "type", value_name = "TYPE", value_parser = super::values::memory_type())]
    pub memory_type: Option<MemoryType>,
    /// Importance from 0 to 5 (default 3).
    #[arg(long)]
    pub importance: Option<f64>,
    /// Where the text came from.
    #[arg(long, value_name = "F")]
    pub source_file: Option<String>,
    /// Who files it (default "cli").
    #[arg(long, default_value = "cli")]
    pub added_by: String,
    /// A tag to attach (repeatable).
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// File the text verbatim: no noise filter, classification, chunking
    /// (up to 10,000 characters) or near-duplicate check.
    #[arg(long)]
    pub raw: bool,
    /// Print {"drawer_ids": […], "chunks": […]} instead of the bare ids.
    #[arg(long)]
    pub json: bool,
    /// The memory text, verbatim, or `-` to read it from stdin.
    #[arg(value_name = "TEXT|-", allow_hyphen_values = true)]
    pub text: String,
}

/// Arguments of `get`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// Drawer id, as printed by `add` or `search`.
    pub id: String,
    /// Print every field as JSON (the drawer line of the export format).
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `delete`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// Drawer id.
    pub id: String,
    /// Why (kept with a soft-deleted drawer).
    #[arg(long)]
    pub reason: Option<String>,
    /// Remove the drawer for good instead of hiding it.
    #[arg(long)]
    pub hard: bool,
}

/// Reads the drawer text from the argument, or stdin for `-`.
pub(super) fn read_text(text: String) -> Result<String> {
    if text != "-" {
        return Ok(text);
    }
    let mut bytes = Vec::new();
    std::io::stdin().lock().read_to_end(&mut bytes)?;
    String::from_utf8(bytes).map_err(|error| {
        UserError(format!(
            "stdin is not valid UTF-8 (first bad byte at offset {}); convert it first, e.g. `iconv -f latin1 -t utf-8`",
            error.utf8_error().valid_up_to()
        ))
        .into()
    })
}

/// Files `text` (the argument, or stdin when it is `-`, already read by
/// the caller: its length chooses the embedder's precision).
pub fn add(palace: &Palace, args: AddArgs, text: String) -> Result<()> {
    let mut request =
        IngestRequest::new(Wing::parse(&args.wing)?, Room::parse(&args.room)?, text.clone(), args.added_by);
    request.hall = args.hall.as_deref().map(Hall::parse).transpose()?;
    request.memory_type = args.memory_type;
    request.importance = args.importance.map(Importance::new).transpose()?;
    request.source_file = args.source_file;
    request.tags = args.tags;
    request.raw = args.raw;
    if args.raw {
        // Raw text is one drawer: the same limit as any drawer.
        Content::parse(text.clone())?;
    }
    let report = palace.ingest(request)?;
    if report.noise {
        let shown: String = text.chars().take(40).collect();
        return Err(UserError(format!(
            "not filed: {shown:?} looks like chat noise (a greeting, an acknowledgement or fewer than three words); \
             pass --raw to file it verbatim"
        ))
        .into());
    }
    if let Some(reason) = &report.degraded {
        tracing::debug!(reason, "filed without vectors");
    }
    if args.json {
        let chunks: Vec<serde_json::Value> = report
            .chunks
            .iter()
            .map(|chunk| match chunk {
                ChunkOutcome::Filed(id) => serde_json::json!({"drawer_id": id.as_str(), "outcome": "filed"}),
                ChunkOutcome::AlreadyFiled(id) => {
                    serde_json::json!({"drawer_id": id.as_str(), "outcome": "already_filed"})
                }
                ChunkOutcome::Duplicate { existing, similarity } => serde_json::json!({
                    "drawer_id": existing.as_str(), "outcome": "duplicate", "similarity": similarity}),
                ChunkOutcome::FiledNear { id, near, similarity, differs } => serde_json::json!({
                    "drawer_id": id.as_str(), "outcome": "filed", "near": near.as_str(),
                    "similarity": similarity, "differs": differs}),
            })
            .collect();
        let ids: Vec<&str> = report.drawer_ids().iter().map(|id| id.as_str()).collect();
        return Ok(output::json(&serde_json::json!({"drawer_ids": ids, "chunks": chunks}))?);
    }
    for chunk in &report.chunks {
        match chunk {
            ChunkOutcome::Filed(id) => output::line(id.as_str())?,
            ChunkOutcome::AlreadyFiled(id) => {
                output::note("already filed: the same text is in this wing and room");
                output::line(id.as_str())?;
            }
            ChunkOutcome::Duplicate { existing, similarity } => {
                output::note(format!(
                    "not filed again: it repeats an existing drawer (cosine {similarity:.2}) and adds nothing to it"
                ));
                output::line(existing.as_str())?;
            }
            ChunkOutcome::FiledNear { id, near, similarity, differs } => {
                tracing::info!(%near, similarity, ?differs, "filed beside a similar drawer it adds to");
                output::line(id.as_str())?;
            }
        }
    }
    Ok(())
}

fn or_dash(value: Option<&str>) -> &str {
    value.unwrap_or("-")
}

pub fn get(palace: &Palace, args: GetArgs) -> Result<()> {
    let drawer = palace.drawer(&DrawerId::parse(&args.id)?)?;
    if args.json {
        return Ok(output::json(&wire::drawer_line(&drawer))?);
    }
    let tags: Vec<String> = drawer.tags.iter().map(|t| format!("{} ({})", t.tag, t.source)).collect();
    let ts = mempalace_core::time::format_timestamp;
    let mut text = String::new();
    let mut field = |name: &str, value: &str| {
        text.push_str(&format!("{name:<12} {value}\n"));
    };
    field("id:", drawer.id.as_str());
    field("wing:", drawer.wing.as_str());
    field("room:", drawer.room.as_str());
    field("hall:", or_dash(drawer.hall.as_ref().map(Hall::as_str)));
    field(
        "type:",
        &format!(
            "{} (state {}, tier {})",
            drawer.memory_type.map_or("unclassified", |t| t.as_str()),
            drawer.state,
            drawer.pipeline_tier
        ),
    );
    field("importance:", &format!("{:.2}", drawer.importance.get()));
    field("confidence:", &format!("{:.2}", drawer.confidence.get()));
    let status = match &drawer.status_reason {
        Some(reason) => format!("{} ({reason})", drawer.status),
        None => drawer.status.to_string(),
    };
    field("status:", &status);
    field("source:", or_dash(drawer.source_file.as_deref()));
    field("added by:", &drawer.added_by);
    field("filed at:", &ts(&drawer.filed_at));
    field("accessed:", &format!("{} times", drawer.access_count));
    field("tags:", &if tags.is_empty() { "-".to_string() } else { tags.join(", ") });
    text.push('\n');
    text.push_str(drawer.content.as_str());
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(output::text(text)?)
}

pub fn delete(palace: &Palace, args: DeleteArgs) -> Result<()> {
    let id = DrawerId::parse(&args.id)?;
    // A paragraph of a memory file leaves its file too (docs/memory-files.md).
    if args.hard {
        mempalace_feed::memory::delete_drawer(palace, &id, DeleteMode::Hard)?;
        output::line(format!("deleted {id}"))?;
    } else {
        mempalace_feed::memory::delete_drawer(palace, &id, DeleteMode::Soft { reason: args.reason })?;
        output::line(format!("invalidated {id} (hidden; `mempalace get` still shows it, --hard removes it)"))?;
    }
    Ok(())
}
