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
use serde_json::{Map, Value};

use super::mempalace::duplicate_match;
use super::{as_write_failure, date, failure, opt_wing, reply, required_text, ts};
use crate::context::Backend;
use crate::registry::{Family, ToolError, ToolResult, ToolSpec};
use crate::shapes::{DiaryWritten, DrawerAdded, DrawerShape, DuplicateMatch, Noise, WriteFailure};

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

/// `mempalace_kg_supersede`: the successor fact and the boundary.
#[derive(Serialize)]
struct Superseded {
    /// The boundary: when the old fact ended and the new one began.
    at: String,
    /// Old facts ended (0: there was none current; the call was an add).
    ended: usize,
    fact: String,
    success: bool,
    /// The old object.
    superseded: String,
    triple_id: String,
}

fn kg_supersede(backend: &Backend, p: KgSupersede) -> ToolResult {
    let at = date("at", p.at.as_deref(), DayEdge::Start)?;
    let subject = required_text("subject", &p.subject)?;
    let predicate = required_text("predicate", &p.predicate)?;
    let (old, new) = (required_text("old_object", &p.old_object)?, required_text("new_object", &p.new_object)?);
    let done =
        backend.palace().kg_supersede(subject, predicate, old, new, at).map_err(|e| as_write_failure(e.into()))?;
    reply(Superseded {
        at: ts(&done.boundary),
        ended: done.ended,
        fact: format!("{subject} → {predicate} → {new}"),
        success: true,
        superseded: old.to_string(),
        triple_id: done.triple_id,
    })
}

// --- mesh_peers -------------------------------------------------------------

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoParams {}

fn mesh_peers(backend: &Backend, _p: NoParams) -> ToolResult {
    let status = backend.palace().status()?;
    let replica = format!("rep_{}", &mempalace_core::ContentHash::of(backend.location()).as_str()[..32]);
    reply(MeshSnapshot {
        estate_source: EstateSource { in_process: true, published_at: None, writer_alive: true },
        note: "no mesh replication here: several machines share one palace on PostgreSQL (`--store postgres://…`)",
        origin_profiles: Map::new(),
        peers: Vec::new(),
        replica: Replica {
            name: backend.location().to_string(),
            profile: ReplicaProfile {
                drawers: status.taxonomy.total_drawers,
                roles: vec!["replica"],
                store: status.storage.backend,
            },
            replica_id: replica,
            version_vector: Map::new(),
        },
        sync_interval_s: None,
        unnamed_origins: Vec::new(),
    })
}

/// `mempalace_mesh_peers`: MemPalace's estate snapshot, for a palace that
/// does not replicate (no peers, no origins).
#[derive(Serialize)]
struct MeshSnapshot {
    estate_source: EstateSource,
    note: &'static str,
    /// Always empty.
    origin_profiles: Map<String, Value>,
    /// Always empty.
    peers: Vec<Value>,
    #[serde(rename = "self")]
    replica: Replica,
    /// Always null.
    sync_interval_s: Option<u64>,
    /// Always empty.
    unnamed_origins: Vec<Value>,
}

/// Where the snapshot comes from: this process.
#[derive(Serialize)]
struct EstateSource {
    in_process: bool,
    /// Always null.
    published_at: Option<String>,
    writer_alive: bool,
}

/// This palace as a mesh replica.
#[derive(Serialize)]
struct Replica {
    /// The palace's location.
    name: String,
    profile: ReplicaProfile,
    /// `rep_` and a hash of the location.
    replica_id: String,
    /// Always empty.
    version_vector: Map<String, Value>,
}

/// What this replica holds.
#[derive(Serialize)]
struct ReplicaProfile {
    drawers: u64,
    roles: Vec<&'static str>,
    /// The storage backend.
    store: &'static str,
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

/// A `mempalace_list_hallways` item: two entities that occur together.
#[derive(Serialize)]
struct HallwayRecord {
    co_occurrence_count: usize,
    /// Always `auto`.
    created_by: &'static str,
    entity_a: String,
    entity_b: String,
    id: String,
    label: String,
    rooms: Vec<String>,
    wing: String,
}

/// `mempalace_list_hallways`: a page of hallways, strongest first.
#[derive(Serialize)]
struct HallwayPage {
    count: usize,
    hallways: Vec<HallwayRecord>,
    limit: usize,
    offset: usize,
    total: usize,
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
            co_occurrence_count: h.co_occurrence_count,
            created_by: "auto",
            entity_a: h.entity_a.clone(),
            entity_b: h.entity_b.clone(),
            id: h.id.clone(),
            label: h.label(),
            rooms: h.rooms.clone(),
            wing: h.wing.clone(),
        })
        .collect();
    reply(HallwayPage { count: hallways.len(), hallways, total: all.len(), offset, limit })
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
    reply(HallwayDeleted { deleted: backend.palace().delete_hallway(id)? })
}

/// `mempalace_delete_hallway`: whether there was one to delete.
#[derive(Serialize)]
struct HallwayDeleted {
    deleted: bool,
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
            Some(Ok(d)) => results.push(Fetched::Found(DrawerShape::of(&d))),
            Some(Err(EngineError::NotFound { .. })) | None => {
                errors += 1;
                results.push(Fetched::Missing(DrawerMissing::new(raw)));
            }
            Some(Err(other)) => return Err(other.into()),
        }
    }
    reply(Batch { count: results.len(), deleted: None, errors, results })
}

/// `mempalace_get_drawers` and `_delete_drawers`: an item per id asked
/// for, in order.
#[derive(Serialize)]
struct Batch<T> {
    count: usize,
    /// Delete only: drawers deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    deleted: Option<usize>,
    /// Ids not found.
    errors: usize,
    results: Vec<T>,
}

/// A `mempalace_get_drawers` item.
#[derive(Serialize)]
#[serde(untagged)]
enum Fetched {
    /// The drawer, as `get_drawer` returns it.
    Found(DrawerShape),
    /// No such drawer.
    Missing(DrawerMissing),
}

/// A `mempalace_delete_drawers` item.
#[derive(Serialize)]
#[serde(untagged)]
enum Deleted {
    /// Deleted (MemPalace's keys; one drawer, no closets).
    Done { chunks_deleted: u32, closets_deleted: u32, deleted_ids: Vec<String>, drawer_id: String },
    /// No such drawer.
    Missing(DrawerMissing),
}

/// An id of a bulk call that names no drawer.
#[derive(Serialize)]
struct DrawerMissing {
    /// The id as given.
    drawer_id: String,
    error: String,
}

impl DrawerMissing {
    fn new(raw: &str) -> Self {
        Self { drawer_id: raw.to_string(), error: format!("Drawer not found: {raw}") }
    }
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
                results.push(Deleted::Done {
                    chunks_deleted: 1,
                    closets_deleted: 0,
                    deleted_ids: vec![raw.clone()],
                    drawer_id: raw.clone(),
                });
            }
            Some(Err(EngineError::NotFound { .. })) | None => {
                errors += 1;
                results.push(Deleted::Missing(DrawerMissing::new(raw)));
            }
            Some(Err(other)) => return Err(as_write_failure(other.into())),
        }
    }
    reply(Batch { count: results.len(), deleted: Some(deleted), errors, results })
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
        let mut sample: Vec<Place> = Vec::new();
        for drawer in palace.store().drawers(palace.workspace(), &ids).map_err(EngineError::from)? {
            let place = Place { room: drawer.room.as_str().to_string(), wing: drawer.wing.as_str().to_string() };
            if sample.len() < 5 && !sample.contains(&place) {
                sample.push(place);
            }
        }
        let hint = if ids.is_empty() {
            "No drawers match this source_file.".to_string()
        } else {
            format!("No drawers were deleted. Re-run with dry_run=false to remove these {} drawer(s).", ids.len())
        };
        return reply(SourceDeletion::Preview {
            closet_match_count: 0,
            dry_run: true,
            hint,
            match_count: ids.len(),
            sample,
            source_file: source.to_string(),
            success: true,
        });
    }
    for id in &ids {
        palace.delete_drawer(id, DeleteMode::Hard).map_err(|e| as_write_failure(e.into()))?;
    }
    palace.set_source_cursor(source, None).map_err(|e| as_write_failure(e.into()))?;
    reply(SourceDeletion::Deleted {
        closets_deleted: 0,
        deleted: ids.len(),
        dry_run: false,
        source_file: source.to_string(),
        success: true,
    })
}

/// `mempalace_delete_by_source`: what matches (a dry run) or what was
/// deleted.
#[derive(Serialize)]
#[serde(untagged)]
enum SourceDeletion {
    /// Nothing deleted: the matches and where they are.
    Preview {
        /// Always 0 (no closets here).
        closet_match_count: u32,
        dry_run: bool,
        hint: String,
        match_count: usize,
        /// Up to 5 distinct places of the matches.
        sample: Vec<Place>,
        source_file: String,
        success: bool,
    },
    /// The source's drawers deleted.
    Deleted {
        /// Always 0 (no closets here).
        closets_deleted: u32,
        deleted: usize,
        dry_run: bool,
        source_file: String,
        success: bool,
    },
}

/// A wing and room.
#[derive(Serialize, PartialEq)]
struct Place {
    room: String,
    wing: String,
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
    reply(Mined { dry_run: report.dry_run, mode: mode.as_str(), output, success: report.failed.is_empty(), report })
}

/// `mempalace_mine`: a one-line summary and the whole report.
#[derive(Serialize)]
struct Mined {
    dry_run: bool,
    mode: &'static str,
    output: String,
    report: mempalace_feed::MineReport,
    /// False when a file failed.
    success: bool,
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
    reply(Synced { report, success: true })
}

/// `mempalace_sync`: the sync report, marked a success.
#[derive(Serialize)]
struct Synced {
    #[serde(flatten)]
    report: mempalace_feed::sync::SyncReport,
    success: bool,
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
            errors.push(CheckpointError::Item { error: "item must be an object", item: raw.clone() });
            continue;
        };
        let (Some(wing), Some(room), Some(content)) = (
            item.wing.filter(|s| !s.trim().is_empty()),
            item.room.filter(|s| !s.trim().is_empty()),
            item.content.filter(|s| !s.trim().is_empty()),
        ) else {
            errors.push(CheckpointError::Item {
                error: "wing, room, content must be non-empty strings",
                item: raw.clone(),
            });
            continue;
        };
        let (wing, room) = match (mempalace_core::Wing::parse(wing.trim()), mempalace_core::Room::parse(room.trim())) {
            (Ok(wing), Ok(room)) => (wing, room),
            (Err(error), _) | (_, Err(error)) => {
                errors.push(CheckpointError::Failed(WriteFailure::new(error)));
                continue;
            }
        };
        // The duplicate check: the same rule as filing (a new number, name,
        // date … is a new fact), at the caller's similarity threshold.
        let matches: Vec<DuplicateMatch> = palace
            .similar(&content, 5)?
            .into_iter()
            .filter(|(d, similarity)| {
                f64::from(*similarity) >= threshold
                    && mempalace_core::dedup::judge(&content, d.content.as_str()).is_duplicate()
            })
            .map(|(d, similarity)| duplicate_match(&d, similarity))
            .collect();
        if !matches.is_empty() {
            duplicates.push(CheckpointDuplicate { matches, room: room.as_str().to_string() });
            continue;
        }
        let mut request = IngestRequest::new(wing.clone(), room.clone(), content, added_by.clone());
        request.added_by_agent = Some(added_by.clone());
        match palace.ingest(request) {
            Ok(report) if report.noise => errors.push(CheckpointError::Noise(Noise::new(
                "the content looks like tool output or chatter; nothing was filed",
            ))),
            Ok(report) => {
                let ids: Vec<String> = report.chunks.iter().map(|c| c.drawer_id().to_string()).collect();
                let first = ids.first().cloned().unwrap_or_default();
                if report.chunks.iter().any(mempalace_engine::ChunkOutcome::is_new) {
                    added.push(DrawerAdded::Filed {
                        chunk_ids: None,
                        chunks: ids.len(),
                        drawer_id: first,
                        room: room.as_str().to_string(),
                        success: true,
                        vector_disabled_reason: None,
                        wing: wing.as_str().to_string(),
                    });
                } else {
                    added.push(DrawerAdded::AlreadyExists {
                        drawer_id: first,
                        reason: "already_exists",
                        similarity: None,
                        success: true,
                    });
                }
            }
            Err(error) => errors.push(CheckpointError::Failed(WriteFailure::new(error))),
        }
    }
    let diary = match &p.diary {
        None => None,
        Some(raw) => write_checkpoint_diary(backend, raw, diary, &mut errors)?,
    };
    reply(CheckpointSaved { added, diary, duplicates, errors })
}

/// `mempalace_checkpoint`: what became of each item and of the diary
/// entry.
#[derive(Serialize)]
struct CheckpointSaved {
    /// Items filed (or found filed already).
    added: Vec<DrawerAdded>,
    /// The diary entry's result; absent when none was given or it could
    /// not be written (then it is in `errors`).
    #[serde(skip_serializing_if = "Option::is_none")]
    diary: Option<CheckpointDiaryWritten>,
    /// Items not filed because the palace holds them.
    duplicates: Vec<CheckpointDuplicate>,
    errors: Vec<CheckpointError>,
}

/// An item the palace holds already, with the drawers that hold it.
#[derive(Serialize)]
struct CheckpointDuplicate {
    matches: Vec<DuplicateMatch>,
    room: String,
}

/// A checkpoint item or diary entry that was not filed, and why.
#[derive(Serialize)]
#[serde(untagged)]
enum CheckpointError {
    /// A malformed item, as given.
    Item { error: &'static str, item: Value },
    /// A malformed diary entry, as given.
    Diary { diary: Value, error: &'static str },
    /// An item that is noise.
    Noise(Noise),
    /// An item the palace refused.
    Failed(WriteFailure),
}

/// A checkpoint's diary entry: written, or refused by the palace.
#[derive(Serialize)]
#[serde(untagged)]
enum CheckpointDiaryWritten {
    /// Written.
    Written(DiaryWritten),
    /// Refused.
    Failed(WriteFailure),
}

/// The diary entry of a checkpoint: its result, or `None` (and an item in
/// `errors`) when the entry given cannot be written.
fn write_checkpoint_diary(
    backend: &Backend,
    raw: &Value,
    diary: Option<CheckpointDiary>,
    errors: &mut Vec<CheckpointError>,
) -> Result<Option<CheckpointDiaryWritten>, ToolError> {
    let Some(diary) = diary.filter(|_| raw.is_object()) else {
        errors.push(CheckpointError::Diary { diary: raw.clone(), error: "diary must be an object" });
        return Ok(None);
    };
    let Some(entry) = diary.entry.or(diary.content).filter(|e| !e.trim().is_empty()) else {
        errors.push(CheckpointError::Diary { diary: raw.clone(), error: "diary entry must be a non-empty string" });
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
        Ok(id) => CheckpointDiaryWritten::Written(DiaryWritten::new(agent, &id, topic, &palace.now())),
        Err(error) => CheckpointDiaryWritten::Failed(WriteFailure::new(error)),
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
    reply(HookSettingsShown {
        settings: HookFlags { desktop_toast: after.desktop_toast, silent_save: after.silent_save },
        success: true,
        updated: (!updated.is_empty()).then_some(updated),
    })
}

/// `mempalace_hook_settings`: the settings now, and what changed.
#[derive(Serialize)]
struct HookSettingsShown {
    settings: HookFlags,
    success: bool,
    /// `name → True/False` per setting changed; absent when none was.
    #[serde(skip_serializing_if = "Option::is_none")]
    updated: Option<Vec<String>>,
}

/// The hooks' two settings.
#[derive(Serialize)]
struct HookFlags {
    desktop_toast: bool,
    silent_save: bool,
}

/// MemPalace prints booleans the Python way in `updated`.
fn python_bool(value: bool) -> &'static str {
    if value { "True" } else { "False" }
}

fn memories_filed_away(backend: &Backend, _p: NoParams) -> ToolResult {
    let quiet = || FiledAway { count: 0, message: "No recent journal entry".into(), status: "quiet", timestamp: None };
    let Some(host) = backend.host() else {
        return reply(quiet());
    };
    reply(match host.take_last_checkpoint() {
        Ok(None) => quiet(),
        Ok(Some(checkpoint)) => FiledAway {
            count: checkpoint.messages,
            message: format!("✦ {} messages tucked into drawers", checkpoint.messages),
            status: "ok",
            timestamp: checkpoint.timestamp,
        },
        Err(_) => FiledAway {
            count: 0,
            message: "✦ Journal entry filed in the palace".into(),
            status: "error",
            timestamp: None,
        },
    })
}

/// `mempalace_memories_filed_away`: the hooks' last checkpoint, if any.
#[derive(Serialize)]
struct FiledAway {
    /// Messages saved.
    count: u64,
    message: String,
    /// `ok`, `quiet` (none) or `error`.
    status: &'static str,
    timestamp: Option<String>,
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
