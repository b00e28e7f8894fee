//! The `mempalace_*` tools MemPalace 3.11 added around the palace's
//! upkeep: bulk drawer reads and deletes, deleting a mined source, mining
//! and syncing, one-call session checkpoints, superseding a fact, hallways,
//! the mesh snapshot, and the hooks' settings and checkpoint notice.
//!
//! Parameters, result keys and error texts follow the Python MemPalace
//! (see docs/mcp.md for where they differ on purpose). Results are typed
//! structs serialised to MemPalace's JSON shapes.

use std::path::PathBuf;

use mempalace_core::time::DayEdge;
use mempalace_engine::drawers::{DIARY_HALL, DIARY_ROOM, DiaryEntry};
use mempalace_engine::{DeleteMode, EngineError, IngestRequest};
use mempalace_feed::{Extract, MineOptions, Mode};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{as_write_failure, date, failure, opt_wing, preview, required_text, ts};
use crate::context::Backend;
use crate::registry::{Family, ToolError, ToolResult, ToolSpec};
use crate::shapes;

const F: Family = Family::Mempalace;

/// Most ids a bulk call takes (MemPalace's `_BULK_DRAWER_MAX_IDS`).
const BULK_MAX_IDS: usize = 500;

/// The tools of this module.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "mempalace_kg_supersede",
            F,
            "Atomically replace a fact with its successor at a shared boundary. Use when a single-valued fact \
             changes (model, employer, address) instead of separate kg_invalidate + kg_add — a point-in-time query \
             at the boundary then returns only the new value.",
            kg_supersede,
        ),
        ToolSpec::new(
            "mempalace_mesh_peers",
            F,
            "Mesh estate snapshot: this palace's identity and profile. This server does not replicate between \
             machines (several machines share one PostgreSQL palace instead), so the peer list is always empty.",
            mesh_peers,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_list_hallways",
            F,
            "List within-wing hallway records (entity-to-entity co-occurrence links), strongest first, paged. \
             Optionally filter by wing. Returns {hallways, total, count, offset, limit}.",
            list_hallways,
        ),
        ToolSpec::new(
            "mempalace_delete_hallway",
            F,
            "Delete a hallway record by its ID. Returns {deleted: bool}.",
            delete_hallway,
        ),
        ToolSpec::new(
            "mempalace_checkpoint",
            F,
            "Save a whole session in one call: checks each item against the palace, files the ones that are not \
             duplicates as drawers, then writes one diary entry. Use this instead of many separate \
             check_duplicate/add_drawer/diary_write calls.",
            checkpoint,
        ),
        ToolSpec::new(
            "mempalace_delete_drawers",
            F,
            "Delete many drawers by ID in one call — the bulk form of mempalace_delete_drawer. Irreversible. A \
             missing ID is an item in `results` with an error; the others are still deleted.",
            delete_drawers,
        ),
        ToolSpec::new(
            "mempalace_mine",
            F,
            "Mine a directory into the palace — the MCP equivalent of `mempalace mine`. mode='projects' (default) \
             files documents of a project; mode='convos' files chat transcripts and exports (a folder or one file). \
             Unchanged files are skipped; a grown transcript adds only its new part.",
            mine,
        ),
        ToolSpec::new(
            "mempalace_delete_by_source",
            F,
            "Bulk-delete every drawer mined from one source_file (exact match). Returns a dry-run match count and \
             sample by default; pass dry_run=false to commit. Irreversible.",
            delete_by_source,
        ),
        ToolSpec::new(
            "mempalace_sync",
            F,
            "Prune drawers whose source files are gitignored or deleted. Returns a dry-run report by default; pass \
             apply=true (with a wing or project_dir) to commit deletions.",
            sync,
        ),
        ToolSpec::new(
            "mempalace_get_drawers",
            F,
            "Fetch many drawers by ID in one call — the bulk form of mempalace_get_drawer. Each ID returns the same \
             payload as the singular tool; a missing ID is an item with an error.",
            get_drawers,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_hook_settings",
            F,
            "Get or set hook behavior. silent_save: True = save directly (no MCP clutter), False = ask the agent to \
             save through the MCP tools. desktop_toast: True = show a desktop notification. Call with no args to \
             view.",
            hook_settings,
        ),
        ToolSpec::new(
            "mempalace_memories_filed_away",
            F,
            "Check if a recent palace checkpoint was saved by the hooks. Returns message count and timestamp.",
            memories_filed_away,
        ),
    ]
}

fn ok<T: Serialize>(value: &T) -> ToolResult {
    serde_json::to_value(value).map_err(|error| ToolError::Internal(error.to_string()))
}

/// A write-style failure `{"success": false, "error": …}`.
fn write_failure(message: impl std::fmt::Display) -> ToolError {
    as_write_failure(failure(message))
}

// --- kg_supersede -----------------------------------------------------------

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct KgSupersede {
    /// The entity whose fact is changing
    subject: String,
    /// The relationship type (e.g. 'uses_model', 'works_at')
    predicate: String,
    /// The value being replaced
    old_object: String,
    /// The new value
    new_object: String,
    /// Boundary instant (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, optional; defaults to now UTC)
    #[serde(default)]
    at: Option<String>,
}

#[derive(Serialize)]
struct Superseded {
    success: bool,
    triple_id: String,
    fact: String,
    superseded: String,
    /// Old facts ended (0: there was none current; the call was an add).
    ended: usize,
    at: String,
}

fn kg_supersede(backend: &Backend, p: KgSupersede) -> ToolResult {
    let at = date("at", p.at.as_deref(), DayEdge::Start)?;
    let subject = required_text("subject", &p.subject)?;
    let predicate = required_text("predicate", &p.predicate)?;
    let (old, new) = (required_text("old_object", &p.old_object)?, required_text("new_object", &p.new_object)?);
    let done =
        backend.palace().kg_supersede(subject, predicate, old, new, at).map_err(|e| as_write_failure(e.into()))?;
    ok(&Superseded {
        success: true,
        triple_id: done.triple_id,
        fact: format!("{subject} → {predicate} → {new}"),
        superseded: old.to_string(),
        ended: done.ended,
        at: ts(&done.boundary),
    })
}

// --- mesh_peers -------------------------------------------------------------

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoParams {}

fn mesh_peers(backend: &Backend, _p: NoParams) -> ToolResult {
    let status = backend.palace().status()?;
    let replica = format!("rep_{}", &mempalace_core::ContentHash::of(backend.location()).as_str()[..32]);
    Ok(json!({
        "self": {
            "replica_id": replica, "name": backend.location(), "version_vector": {},
            "profile": {"roles": ["replica"], "drawers": status.taxonomy.total_drawers,
                        "store": status.storage.backend},
        },
        "peers": [], "unnamed_origins": [], "origin_profiles": {}, "sync_interval_s": null,
        "estate_source": {"in_process": true, "published_at": null, "writer_alive": true},
        "note": "no mesh replication here: several machines share one palace on PostgreSQL (`--store postgres://…`)",
    }))
}

// --- hallways ---------------------------------------------------------------

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListHallways {
    /// Filter hallways by wing
    #[serde(default)]
    wing: Option<String>,
    /// Page size (default 100, max 500)
    #[serde(default)]
    #[schemars(range(min = 1, max = 500))]
    limit: Option<i64>,
    /// Offset for pagination (default 0)
    #[serde(default)]
    #[schemars(range(min = 0))]
    offset: Option<i64>,
}

#[derive(Serialize)]
struct HallwayRecord {
    id: String,
    wing: String,
    entity_a: String,
    entity_b: String,
    co_occurrence_count: usize,
    rooms: Vec<String>,
    label: String,
    created_by: &'static str,
}

#[derive(Serialize)]
struct HallwayPage {
    hallways: Vec<HallwayRecord>,
    total: usize,
    count: usize,
    offset: usize,
    limit: usize,
}

fn list_hallways(backend: &Backend, p: ListHallways) -> ToolResult {
    let wing = opt_wing("wing", p.wing.as_deref())?;
    // MemPalace clamps these rather than refusing them.
    let limit = p.limit.unwrap_or(100).clamp(1, 500) as usize;
    let offset = p.offset.unwrap_or(0).max(0) as usize;
    let all = backend.palace().hallways(wing.as_ref().map(|w| w.as_str()))?;
    let hallways: Vec<HallwayRecord> = all
        .iter()
        .skip(offset)
        .take(limit)
        .map(|h| HallwayRecord {
            id: h.id.clone(),
            wing: h.wing.clone(),
            entity_a: h.entity_a.clone(),
            entity_b: h.entity_b.clone(),
            co_occurrence_count: h.co_occurrence_count,
            rooms: h.rooms.clone(),
            label: h.label(),
            created_by: "auto",
        })
        .collect();
    ok(&HallwayPage { count: hallways.len(), hallways, total: all.len(), offset, limit })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DeleteHallway {
    /// Hallway ID to delete
    hallway_id: String,
}

fn delete_hallway(backend: &Backend, p: DeleteHallway) -> ToolResult {
    let id = p.hallway_id.trim();
    if id.is_empty() {
        return Err(failure("hallway_id is required"));
    }
    Ok(json!({"deleted": backend.palace().delete_hallway(id)?}))
}

// --- get_drawers / delete_drawers --------------------------------------------

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DrawerIds {
    /// One or more drawer IDs (max 500)
    drawer_ids: Vec<String>,
}

fn check_ids(ids: &[String], verb: &str) -> Result<(), ToolError> {
    if ids.is_empty() {
        return Err(failure("drawer_ids must not be empty"));
    }
    if ids.len() > BULK_MAX_IDS {
        return Err(failure(format!(
            "drawer_ids holds {} ids, but the bulk {verb} accepts at most {BULK_MAX_IDS} per call",
            ids.len()
        )));
    }
    Ok(())
}

fn get_drawers(backend: &Backend, p: DrawerIds) -> ToolResult {
    check_ids(&p.drawer_ids, "fetch")?;
    let (mut results, mut errors) = (Vec::new(), 0);
    for raw in &p.drawer_ids {
        let found = mempalace_core::DrawerId::parse(raw.trim()).ok().map(|id| backend.palace().drawer(&id));
        match found {
            Some(Ok(d)) => results.push(json!({
                "drawer_id": d.id.as_str(), "content": d.content.as_str(), "wing": d.wing.as_str(),
                "room": d.room.as_str(), "metadata": shapes::drawer_metadata(&d),
            })),
            Some(Err(EngineError::NotFound { .. })) | None => {
                errors += 1;
                results.push(json!({"drawer_id": raw, "error": format!("Drawer not found: {raw}")}));
            }
            Some(Err(other)) => return Err(other.into()),
        }
    }
    Ok(json!({"count": results.len(), "results": results, "errors": errors}))
}

fn delete_drawers(backend: &Backend, p: DrawerIds) -> ToolResult {
    check_ids(&p.drawer_ids, "delete")?;
    let (mut results, mut deleted, mut errors) = (Vec::new(), 0, 0);
    for raw in &p.drawer_ids {
        let outcome = mempalace_core::DrawerId::parse(raw.trim())
            .ok()
            .map(|id| backend.palace().delete_drawer(&id, DeleteMode::Hard));
        match outcome {
            Some(Ok(())) => {
                deleted += 1;
                results
                    .push(json!({"drawer_id": raw, "deleted_ids": [raw], "chunks_deleted": 1, "closets_deleted": 0}));
            }
            Some(Err(EngineError::NotFound { .. })) | None => {
                errors += 1;
                results.push(json!({"drawer_id": raw, "error": format!("Drawer not found: {raw}")}));
            }
            Some(Err(other)) => return Err(as_write_failure(other.into())),
        }
    }
    Ok(json!({"count": results.len(), "deleted": deleted, "errors": errors, "results": results}))
}

// --- delete_by_source ---------------------------------------------------------

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DeleteBySource {
    /// Exact source_file metadata value to remove (e.g. the full path that was mined)
    source_file: String,
    /// Preview the match count without deleting; default true. Pass false to actually delete.
    #[serde(default)]
    dry_run: Option<bool>,
}

fn delete_by_source(backend: &Backend, p: DeleteBySource) -> ToolResult {
    let source = p.source_file.trim();
    if source.is_empty() {
        return Err(write_failure("source_file must be a non-empty string"));
    }
    let palace = backend.palace();
    let filter = mempalace_store::DrawerFilter { source_file: Some(source.to_string()), ..Default::default() };
    let ids = palace.store().filtered_ids(palace.workspace(), &filter).map_err(EngineError::from)?;
    let dry_run = p.dry_run.unwrap_or(true);
    if dry_run {
        let mut sample: Vec<Value> = Vec::new();
        for drawer in palace.store().drawers(palace.workspace(), &ids).map_err(EngineError::from)? {
            let place = json!({"wing": drawer.wing.as_str(), "room": drawer.room.as_str()});
            if sample.len() < 5 && !sample.contains(&place) {
                sample.push(place);
            }
        }
        let hint = if ids.is_empty() {
            "No drawers match this source_file.".to_string()
        } else {
            format!("No drawers were deleted. Re-run with dry_run=false to remove these {} drawer(s).", ids.len())
        };
        return Ok(json!({"success": true, "dry_run": true, "source_file": source, "match_count": ids.len(),
            "closet_match_count": 0, "sample": sample, "hint": hint}));
    }
    for id in &ids {
        palace.delete_drawer(id, DeleteMode::Hard).map_err(|e| as_write_failure(e.into()))?;
    }
    palace.set_source_cursor(source, None).map_err(|e| as_write_failure(e.into()))?;
    Ok(json!({"success": true, "dry_run": false, "source_file": source, "deleted": ids.len(), "closets_deleted": 0}))
}

// --- mine / sync --------------------------------------------------------------

#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum MineMode {
    Projects,
    Convos,
    Extract,
}

#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum ExtractMode {
    Exchange,
    General,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Mine {
    /// Directory to mine, or one conversation file with mode='convos'.
    source: String,
    /// Ingest mode: projects (documents, default), convos (chat transcripts and exports), extract (office
    /// documents: not supported here).
    #[serde(default)]
    mode: Option<MineMode>,
    /// Target wing (default: the project's, or the conversation's directory name).
    #[serde(default)]
    wing: Option<String>,
    /// Recorded on every drawer (default: mempalace).
    #[serde(default)]
    agent: Option<String>,
    /// Max files to process (0 = all). Default: 0.
    #[serde(default)]
    #[schemars(range(min = 0))]
    limit: Option<i64>,
    /// Report what would be filed without writing. Default: false.
    #[serde(default)]
    dry_run: Option<bool>,
    /// Convos extraction strategy: exchange (default) or general. Ignored by other modes.
    #[serde(default)]
    extract: Option<ExtractMode>,
    /// Project-relative paths to scan even if ignored. Projects mode only; default: [].
    #[serde(default)]
    include_ignored: Option<Vec<String>>,
    /// Also mine Claude Code sub-agent transcripts. Convos mode only. Accepted; sub-agent lines are always left
    /// out of the conversation they belong to.
    #[serde(default)]
    include_subagents: Option<bool>,
}

fn mine(backend: &Backend, p: Mine) -> ToolResult {
    let mode = match p.mode.unwrap_or(MineMode::Projects) {
        MineMode::Projects => Mode::Projects,
        MineMode::Convos => Mode::Convos,
        MineMode::Extract => {
            return Err(write_failure(
                "mode 'extract' (office documents) is not supported: save them as text or markdown and mine the folder",
            ));
        }
    };
    let include_ignored: Vec<PathBuf> = p.include_ignored.unwrap_or_default().into_iter().map(PathBuf::from).collect();
    if !include_ignored.is_empty() && mode != Mode::Projects {
        return Err(write_failure("include_ignored is supported only in projects mode"));
    }
    let _ = p.include_subagents;
    let source = PathBuf::from(p.source.trim());
    if p.source.trim().is_empty() || !source.exists() {
        return Err(write_failure(format!("source not found: {:?}", p.source)));
    }
    let mut options = MineOptions::new(mode);
    options.wing = opt_wing("wing", p.wing.as_deref())?;
    options.agent = p.agent.filter(|a| !a.trim().is_empty()).unwrap_or_else(|| "mempalace".into());
    options.limit = p.limit.filter(|n| *n > 0).map(|n| n as usize);
    options.dry_run = p.dry_run.unwrap_or(false);
    options.extract = match p.extract.unwrap_or(ExtractMode::Exchange) {
        ExtractMode::Exchange => Extract::Exchange,
        ExtractMode::General => Extract::General,
    };
    options.include_ignored = include_ignored;
    let report = mempalace_feed::mine(backend.palace(), Some(&source), None, &options, &mut |_, _, _| {})
        .map_err(|error| write_failure(error.to_string()))?;
    let output = format!(
        "{} files: {} read, {} skipped, {} failed; drawers {} {}added, {} unchanged, {} {}replaced",
        report.files,
        report.read,
        report.skipped.len(),
        report.failed.len(),
        report.drawers_added,
        if report.dry_run { "would be " } else { "" },
        report.drawers_unchanged,
        report.drawers_removed,
        if report.dry_run { "would be " } else { "" },
    );
    let mode_name = mode.as_str();
    Ok(json!({"success": report.failed.is_empty(), "mode": mode_name, "dry_run": report.dry_run,
        "output": output, "report": report}))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Sync {
    /// Project root to scope the sync (optional; each file's own project when omitted)
    #[serde(default)]
    project_dir: Option<String>,
    /// Limit to one wing (optional)
    #[serde(default)]
    wing: Option<String>,
    /// Actually delete drawers; default is dry-run preview
    #[serde(default)]
    apply: Option<bool>,
}

fn sync(backend: &Backend, p: Sync) -> ToolResult {
    let roots: Vec<PathBuf> =
        p.project_dir.map(|d| d.trim().to_string()).filter(|d| !d.is_empty()).map(PathBuf::from).into_iter().collect();
    let options = mempalace_feed::sync::SyncOptions {
        wing: opt_wing("wing", p.wing.as_deref())?.map(|w| w.to_string()),
        roots,
        apply: p.apply.unwrap_or(false),
    };
    let report =
        mempalace_feed::sync::sync(backend.palace(), &options).map_err(|error| write_failure(error.to_string()))?;
    let mut value = serde_json::to_value(&report).map_err(|e| ToolError::Internal(e.to_string()))?;
    if let Value::Object(map) = &mut value {
        map.insert("success".into(), Value::Bool(true));
    }
    Ok(value)
}

// --- checkpoint ----------------------------------------------------------------

#[derive(Deserialize, JsonSchema)]
struct CheckpointItem {
    /// Wing (project name)
    #[serde(default)]
    wing: Option<String>,
    /// Room (short topic: decisions, backend...)
    #[serde(default)]
    room: Option<String>,
    /// Verbatim content to store
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct CheckpointDiary {
    /// Agent name (e.g. cursor-ide)
    #[serde(default)]
    agent_name: Option<String>,
    /// Diary entry in AAAK format
    #[serde(default)]
    entry: Option<String>,
    /// Alias of entry
    #[serde(default)]
    content: Option<String>,
    /// Topic tag (optional)
    #[serde(default)]
    topic: Option<String>,
    /// Target wing (optional)
    #[serde(default)]
    wing: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Checkpoint {
    /// Verbatim items to file. Each is {wing, room, content} — content is the exact words, never summarized.
    items: Vec<Value>,
    /// Optional diary entry written after filing: {agent_name, entry, topic?, wing?}. entry is AAAK-format.
    #[serde(default)]
    #[schemars(with = "Option<CheckpointDiary>")]
    diary: Option<Value>,
    /// Similarity threshold 0-1 for the per-item duplicate check (default 0.9)
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    dedup_threshold: Option<f64>,
    /// Who is filing these drawers. An explicit value takes precedence; otherwise the diary agent_name, else
    /// 'checkpoint'.
    #[serde(default)]
    added_by: Option<String>,
}

fn checkpoint(backend: &Backend, p: Checkpoint) -> ToolResult {
    let threshold = super::within("dedup_threshold", p.dedup_threshold.unwrap_or(0.9), 0.0, 1.0)?;
    let diary: Option<CheckpointDiary> = p.diary.as_ref().and_then(|d| serde_json::from_value(d.clone()).ok());
    let added_by = p
        .added_by
        .filter(|a| !a.trim().is_empty())
        .or_else(|| diary.as_ref().and_then(|d| d.agent_name.clone()).filter(|a| !a.trim().is_empty()))
        .unwrap_or_else(|| "checkpoint".into());
    let palace = backend.palace();
    let (mut added, mut duplicates, mut errors) = (Vec::new(), Vec::new(), Vec::new());
    for raw in &p.items {
        let Ok(item) = serde_json::from_value::<CheckpointItem>(raw.clone()) else {
            errors.push(json!({"item": raw, "error": "item must be an object"}));
            continue;
        };
        let (Some(wing), Some(room), Some(content)) = (
            item.wing.filter(|s| !s.trim().is_empty()),
            item.room.filter(|s| !s.trim().is_empty()),
            item.content.filter(|s| !s.trim().is_empty()),
        ) else {
            errors.push(json!({"item": raw, "error": "wing, room, content must be non-empty strings"}));
            continue;
        };
        let (wing, room) = match (mempalace_core::Wing::parse(wing.trim()), mempalace_core::Room::parse(room.trim())) {
            (Ok(wing), Ok(room)) => (wing, room),
            (Err(error), _) | (_, Err(error)) => {
                errors.push(json!({"success": false, "error": error.to_string()}));
                continue;
            }
        };
        // The duplicate check: the same rule as filing (a new number, name,
        // date … is a new fact), at the caller's similarity threshold.
        let matches: Vec<Value> = palace
            .similar(&content, 5)?
            .into_iter()
            .filter(|(d, similarity)| {
                f64::from(*similarity) >= threshold
                    && mempalace_core::dedup::judge(&content, d.content.as_str()).is_duplicate()
            })
            .map(|(d, similarity)| {
                json!({"id": d.id.as_str(), "wing": d.wing.as_str(), "room": d.room.as_str(),
                    "similarity": super::mempalace::round(f64::from(similarity), 3),
                    "content": preview(d.content.as_str(), 200)})
            })
            .collect();
        if !matches.is_empty() {
            duplicates.push(json!({"room": room.as_str(), "matches": matches}));
            continue;
        }
        let mut request = IngestRequest::new(wing.clone(), room.clone(), content, added_by.clone());
        request.added_by_agent = Some(added_by.clone());
        match palace.ingest(request) {
            Ok(report) if report.noise => errors.push(json!({"success": false, "reason": "noise",
                "error": "the content looks like tool output or chatter; nothing was filed"})),
            Ok(report) => {
                let ids: Vec<String> = report.chunks.iter().map(|c| c.drawer_id().to_string()).collect();
                let first = ids.first().cloned().unwrap_or_default();
                if report.chunks.iter().any(mempalace_engine::ChunkOutcome::is_new) {
                    added.push(json!({"success": true, "drawer_id": first, "wing": wing.as_str(),
                        "room": room.as_str(), "chunks": ids.len()}));
                } else {
                    added.push(json!({"success": true, "reason": "already_exists", "drawer_id": first}));
                }
            }
            Err(error) => errors.push(json!({"success": false, "error": error.to_string()})),
        }
    }
    let diary_written = match &p.diary {
        None => None,
        Some(raw) => write_checkpoint_diary(backend, raw, diary, &mut errors)?,
    };
    let mut out = json!({"added": added, "duplicates": duplicates, "errors": errors});
    if let Some(written) = diary_written {
        out["diary"] = written;
    }
    Ok(out)
}

/// The diary entry of a checkpoint: its result, or `None` (and an item in
/// `errors`) when the entry given cannot be written.
fn write_checkpoint_diary(
    backend: &Backend,
    raw: &Value,
    diary: Option<CheckpointDiary>,
    errors: &mut Vec<Value>,
) -> Result<Option<Value>, ToolError> {
    let Some(diary) = diary.filter(|_| raw.is_object()) else {
        errors.push(json!({"diary": raw, "error": "diary must be an object"}));
        return Ok(None);
    };
    let Some(entry) = diary.entry.or(diary.content).filter(|e| !e.trim().is_empty()) else {
        errors.push(json!({"diary": raw, "error": "diary entry must be a non-empty string"}));
        return Ok(None);
    };
    let palace = backend.palace();
    let agent = diary.agent_name.unwrap_or_else(|| "cursor-ide".into()).to_lowercase();
    let topic = diary.topic.filter(|t| !t.trim().is_empty()).unwrap_or_else(|| "session-checkpoint".into());
    let wing = match opt_wing("diary.wing", diary.wing.as_deref())? {
        Some(wing) => wing,
        None => super::wing("agent_name", &format!("wing_{}", agent.replace(' ', "_")))?,
    };
    let text = super::content("diary.entry", &entry)?;
    let written = palace.diary_write(DiaryEntry {
        agent: agent.clone(),
        text,
        topic: topic.clone(),
        wing,
        room: super::room("room", DIARY_ROOM)?,
        hall: Some(mempalace_core::Hall::parse(DIARY_HALL).map_err(|e| ToolError::Internal(e.to_string()))?),
        context: serde_json::Map::new(),
    });
    Ok(Some(match written {
        Ok(id) => json!({"success": true, "entry_id": id.as_str(), "agent": agent, "topic": topic,
            "timestamp": ts(&palace.now()), "chunks": 1}),
        Err(error) => json!({"success": false, "error": error.to_string()}),
    }))
}

// --- hooks ---------------------------------------------------------------------

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct HookSettings {
    /// True = silent direct save, False = blocking MCP calls
    #[serde(default)]
    silent_save: Option<bool>,
    /// True = show desktop toast via notify-send
    #[serde(default)]
    desktop_toast: Option<bool>,
}

fn hook_settings(backend: &Backend, p: HookSettings) -> ToolResult {
    let Some(host) = backend.host() else {
        return Err(write_failure("hook settings live in the mempalace configuration, which this server cannot reach"));
    };
    let before = host.hook_settings().map_err(write_failure)?;
    let mut updated = Vec::new();
    let mut after = before;
    if let Some(value) = p.silent_save
        && value != before.silent_save
    {
        after.silent_save = value;
        updated.push(format!("silent_save → {}", python_bool(value)));
    }
    if let Some(value) = p.desktop_toast
        && value != before.desktop_toast
    {
        after.desktop_toast = value;
        updated.push(format!("desktop_toast → {}", python_bool(value)));
    }
    if !updated.is_empty() {
        host.set_hook_settings(after).map_err(write_failure)?;
    }
    let mut value = json!({"success": true, "settings": {"silent_save": after.silent_save,
        "desktop_toast": after.desktop_toast}});
    if !updated.is_empty() {
        value["updated"] = json!(updated);
    }
    Ok(value)
}

/// MemPalace prints booleans the Python way in `updated`.
fn python_bool(value: bool) -> &'static str {
    if value { "True" } else { "False" }
}

fn memories_filed_away(backend: &Backend, _p: NoParams) -> ToolResult {
    let Some(host) = backend.host() else {
        return Ok(json!({"status": "quiet", "message": "No recent journal entry", "count": 0, "timestamp": null}));
    };
    Ok(match host.take_last_checkpoint() {
        Ok(None) => json!({"status": "quiet", "message": "No recent journal entry", "count": 0, "timestamp": null}),
        Ok(Some(checkpoint)) => json!({"status": "ok",
            "message": format!("✦ {} messages tucked into drawers", checkpoint.messages),
            "count": checkpoint.messages, "timestamp": checkpoint.timestamp}),
        Err(_) => json!({"status": "error", "message": "✦ Journal entry filed in the palace", "count": 0,
            "timestamp": null}),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_limits_name_the_count() {
        let ids: Vec<String> = (0..501).map(|i| format!("drawer_w_r_{i}")).collect();
        let Err(ToolError::Failed(value)) = check_ids(&ids, "fetch") else { panic!("refused") };
        assert_eq!(value["error"], "drawer_ids holds 501 ids, but the bulk fetch accepts at most 500 per call");
        assert!(check_ids(&[], "delete").is_err());
        assert!(check_ids(&ids[..500], "delete").is_ok());
    }
}
