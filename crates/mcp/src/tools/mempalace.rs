//! The Python MemPalace's `mempalace_*` tools: the same names, parameter
//! names and result JSON, so agent instructions written for MemPalace keep
//! working. Where MemPalace is lax and the issue is strict (unknown,
//! missing, mistyped or out-of-range parameters), parameters are refused
//! with `-32602`; conditions the caller cannot see in advance (a drawer
//! that does not exist) come back in MemPalace's `{"error": …}` or
//! `{"success": false, "error": …}` shapes, flagged `isError`.

use mempalace_core::dedup::{Verdict, judge};
use mempalace_core::layers::ResultLimit;
use mempalace_core::query::sanitize_query;
use mempalace_core::time::DayEdge;
use mempalace_core::tunnel::Place;
use mempalace_engine::drawers::{DIARY_HALL, DIARY_ROOM, DiaryEntry, DrawerUpdate};
use mempalace_engine::graph::TunnelRoom;
use mempalace_engine::{ChunkOutcome, DeleteMode, EngineError, IngestRequest, SearchMode, SearchRequest};
use mempalace_feed::FeedError;
use mempalace_store::{Direction, DrawerFilter, TripleOutcome};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{
    as_write_failure, basename, content, date, drawer_id, failure, opt_room, opt_wing, preview, required_text, room,
    ts, wing, within,
};
use crate::context::Backend;
use crate::registry::{Family, ToolError, ToolResult, ToolSpec};
use crate::shapes;
use crate::texts::{AAAK_SPEC, PALACE_PROTOCOL};

const F: Family = Family::Mempalace;

/// The tools of this family.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "mempalace_status",
            F,
            "Palace overview — total drawers, wing and room counts, and the memory protocol (when to search, \
             when to write the diary, how to update facts). Call this first in every session.",
            status,
        )
        .read_only(),
        ToolSpec::new("mempalace_list_wings", F, "List all wings with drawer counts", list_wings).read_only(),
        ToolSpec::new(
            "mempalace_list_rooms",
            F,
            "List rooms within a wing (or all rooms if no wing given)",
            list_rooms,
        )
        .read_only(),
        ToolSpec::new("mempalace_get_taxonomy", F, "Full taxonomy: wing → room → drawer count", get_taxonomy)
            .read_only(),
        ToolSpec::new(
            "mempalace_get_aaak_spec",
            F,
            "Get the AAAK specification — the compact note style for diary entries and summaries. Call this if \
             you need to read or write AAAK notes.",
            get_aaak_spec,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_kg_query",
            F,
            "Query the knowledge graph for an entity's relationships. Returns typed facts with temporal validity, \
             e.g. 'Crawbl Backend' → uses → PostgreSQL since 2025-01-15. Filter by date with as_of to see what was \
             true at a point in time.",
            kg_query,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_kg_add",
            F,
            "Add a fact to the knowledge graph: subject → predicate → object, with an optional time window, \
             e.g. ('Max', 'started_school', 'Year 7', valid_from='2026-09-01'). Pass valid_to to backfill a fact \
             that already ended. Entities are created as needed; an identical current fact is not duplicated.",
            kg_add,
        ),
        ToolSpec::new(
            "mempalace_kg_invalidate",
            F,
            "Mark a fact as no longer true (job ended, moved house, switched database). The fact stays in the \
             timeline with its end date.",
            kg_invalidate,
        ),
        ToolSpec::new(
            "mempalace_kg_timeline",
            F,
            "Chronological timeline of facts. Shows the story of an entity (or everything) in order — e.g. which \
             database a project used before the current one.",
            kg_timeline,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_kg_stats",
            F,
            "Knowledge graph overview: entities, triples, current vs expired facts, relationship types.",
            kg_stats,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_traverse",
            F,
            "Walk the palace graph from a room. Shows connected ideas across wings: rooms that share a wing with \
             the start, then theirs, and rooms joined by explicit tunnels.",
            traverse,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_find_tunnels",
            F,
            "Find rooms that bridge two wings — the same topic filed in different domains. E.g. what topics \
             connect wing_code to wing_team?",
            find_tunnels,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_graph_stats",
            F,
            "Palace graph overview: total rooms, tunnel connections, edges between wings.",
            graph_stats,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_create_tunnel",
            F,
            "Create a tunnel linking two palace locations in any wings. Use when content in one project relates to \
             another — e.g. an API design in project_api and a database schema in project_database. Linking the \
             same two places again keeps one tunnel.",
            create_tunnel,
        ),
        ToolSpec::new(
            "mempalace_list_tunnels",
            F,
            "List all explicit tunnels. Optionally filter by wing.",
            list_tunnels,
        )
        .read_only(),
        ToolSpec::new("mempalace_delete_tunnel", F, "Delete an explicit tunnel by its ID.", delete_tunnel),
        ToolSpec::new(
            "mempalace_follow_tunnels",
            F,
            "Follow tunnels from a room to see what it connects to in other wings. Returns connected rooms with a \
             preview of their latest drawer.",
            follow_tunnels,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_search",
            F,
            "Hybrid search (keywords + meaning + knowledge graph) over every drawer. Returns verbatim drawer \
             content with scores. IMPORTANT: 'query' must contain ONLY search keywords or a short question; put \
             background in 'context'. Results with cosine distance > max_distance are dropped.",
            search,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_check_duplicate",
            F,
            "Check if content already exists in the palace before filing. Returns drawers at least 'threshold' \
             similar by meaning.",
            check_duplicate,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_add_drawer",
            F,
            "File verbatim content into the palace. Long content is split into drawers of whole sentences; an \
             exact or near-exact copy of an existing drawer is not filed again (its id is returned).",
            add_drawer,
        ),
        ToolSpec::new("mempalace_delete_drawer", F, "Delete a drawer by ID. Irreversible.", delete_drawer),
        ToolSpec::new(
            "mempalace_get_drawer",
            F,
            "Fetch a single drawer by ID — returns full content and metadata.",
            get_drawer,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_list_drawers",
            F,
            "List drawers with pagination, newest first. Optional wing/room filter. Returns IDs, wings, rooms, \
             content previews, and the total matching count for pagination.",
            list_drawers,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_update_drawer",
            F,
            "Update an existing drawer's content and/or place (wing, room). The ID stays the same. Returns an \
             error if the drawer does not exist.",
            update_drawer,
        ),
        ToolSpec::new(
            "mempalace_diary_write",
            F,
            "Write to your personal agent diary: what you worked on, what you learned, what matters next. Each \
             agent has its own diary with full history. AAAK keeps entries short — e.g. \
             'SESSION:2026-04-04|built.palace.graph+diary.tools|★★★'.",
            diary_write,
        ),
        ToolSpec::new(
            "mempalace_diary_read",
            F,
            "Read your recent diary entries, newest first. See what past sessions of yourself recorded.",
            diary_read,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_reconnect",
            F,
            "Re-read the palace after external scripts or CLI commands changed it. Searches already see other \
             processes' writes; this also reports the current drawer count.",
            reconnect,
        )
        .read_only(),
        ToolSpec::new(
            "mempalace_wake_up",
            F,
            "Wake-up context: the identity (L0) and the essential story (L1, the most important drawers grouped \
             by room). Call at the start of a session; pass wing to focus on one project.",
            wake_up,
        )
        .read_only(),
    ]
}

/// No parameters.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoParams {}

fn status(backend: &Backend, _: NoParams) -> ToolResult {
    let taxonomy = backend.palace().taxonomy()?;
    let (wings, rooms) = shapes::wing_and_room_counts(&taxonomy);
    Ok(json!({
        "total_drawers": taxonomy.total_drawers,
        "wings": wings,
        "rooms": rooms,
        "palace_path": backend.location(),
        "protocol": PALACE_PROTOCOL,
        "aaak_dialect": AAAK_SPEC,
    }))
}

fn list_wings(backend: &Backend, _: NoParams) -> ToolResult {
    let taxonomy = backend.palace().taxonomy()?;
    Ok(json!({"wings": shapes::wing_and_room_counts(&taxonomy).0}))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListRooms {
    /// Wing to list rooms for (optional)
    #[serde(default)]
    wing: Option<String>,
}

fn list_rooms(backend: &Backend, p: ListRooms) -> ToolResult {
    let wing = opt_wing("wing", p.wing.as_deref())?;
    let taxonomy = backend.palace().taxonomy()?;
    let mut rooms = Map::new();
    for (name, counts) in &taxonomy.wings {
        if wing.as_ref().is_some_and(|w| w.as_str() != name) {
            continue;
        }
        for (room, n) in &counts.rooms {
            let total = rooms.get(room).and_then(Value::as_u64).unwrap_or(0) + n;
            rooms.insert(room.clone(), json!(total));
        }
    }
    Ok(json!({"wing": wing.as_ref().map_or("all", |w| w.as_str()), "rooms": rooms}))
}

fn get_taxonomy(backend: &Backend, _: NoParams) -> ToolResult {
    let taxonomy = backend.palace().taxonomy()?;
    Ok(json!({"taxonomy": shapes::taxonomy(&taxonomy)}))
}

fn get_aaak_spec(_: &Backend, _: NoParams) -> ToolResult {
    Ok(json!({"aaak_spec": AAAK_SPEC}))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct KgQuery {
    /// Entity to query (e.g. 'Max', 'MyProject', 'Alice')
    entity: String,
    /// Date/datetime filter — only facts valid at this time (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, optional)
    #[serde(default)]
    as_of: Option<String>,
    /// outgoing (entity→?), incoming (?→entity), or both (default: both)
    #[serde(default)]
    direction: Option<String>,
}

pub(crate) fn direction(text: Option<&str>) -> Result<Direction, ToolError> {
    match text.map(str::trim).unwrap_or("both") {
        "outgoing" => Ok(Direction::Outgoing),
        "incoming" => Ok(Direction::Incoming),
        "both" | "" => Ok(Direction::Both),
        other => Err(ToolError::param("direction", format!("{other:?} is not known; use outgoing, incoming or both"))),
    }
}

fn kg_query(backend: &Backend, p: KgQuery) -> ToolResult {
    let entity = required_text("entity", &p.entity)?;
    let as_of = date("as_of", p.as_of.as_deref(), DayEdge::Start)?;
    let facts = backend.palace().kg_query(entity, as_of, direction(p.direction.as_deref())?)?;
    Ok(json!({
        "entity": entity,
        "as_of": p.as_of.filter(|t| !t.trim().is_empty()),
        "facts": facts.iter().map(shapes::fact).collect::<Vec<_>>(),
        "count": facts.len(),
    }))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct KgAdd {
    /// The entity doing/being something
    subject: String,
    /// The relationship type (e.g. 'loves', 'works_on', 'daughter_of')
    predicate: String,
    /// The entity being connected to
    object: String,
    /// When this became true (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, optional)
    #[serde(default)]
    valid_from: Option<String>,
    /// When this stopped being true (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, optional). Use for backfilling already-ended historical facts.
    #[serde(default)]
    valid_to: Option<String>,
    /// Closet ID where this fact appears (optional; kept as the fact's source)
    #[serde(default)]
    source_closet: Option<String>,
    /// Source file path the fact was extracted from (optional)
    #[serde(default)]
    source_file: Option<String>,
    /// Drawer ID the fact was extracted from (optional)
    #[serde(default)]
    source_drawer_id: Option<String>,
}

fn kg_add(backend: &Backend, p: KgAdd) -> ToolResult {
    let subject = required_text("subject", &p.subject)?;
    let predicate = required_text("predicate", &p.predicate)?;
    let object = required_text("object", &p.object)?;
    let from = date("valid_from", p.valid_from.as_deref(), DayEdge::Start)?;
    let to = date("valid_to", p.valid_to.as_deref(), DayEdge::End)?;
    let source_drawer = p
        .source_drawer_id
        .as_deref()
        .filter(|t| !t.trim().is_empty())
        .map(|t| drawer_id("source_drawer_id", t))
        .transpose()?;
    let source = p.source_file.or(p.source_closet).or_else(|| Some("mcp".into()));
    let outcome = backend
        .palace()
        .kg_add(subject, predicate, object, from, to, None, source_drawer, source)
        .map_err(ToolError::from)
        .map_err(as_write_failure)?;
    let mut value = json!({
        "success": true,
        "triple_id": outcome.id(),
        "fact": format!("{subject} → {predicate} → {object}"),
        "existing": matches!(outcome, TripleOutcome::Existing(_)),
    });
    if let TripleOutcome::Dated { replaced, .. } = &outcome {
        value["dated"] = json!(replaced);
    }
    Ok(value)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct KgInvalidate {
    /// Entity
    subject: String,
    /// Relationship
    predicate: String,
    /// Connected entity
    object: String,
    /// When it stopped being true (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, default: now)
    #[serde(default)]
    ended: Option<String>,
}

fn kg_invalidate(backend: &Backend, p: KgInvalidate) -> ToolResult {
    let subject = required_text("subject", &p.subject)?;
    let predicate = required_text("predicate", &p.predicate)?;
    let object = required_text("object", &p.object)?;
    let ended = date("ended", p.ended.as_deref(), DayEdge::End)?;
    let palace = backend.palace();
    let ended = ended.unwrap_or_else(|| palace.now());
    let count = palace
        .kg_invalidate(subject, predicate, object, Some(ended))
        .map_err(ToolError::from)
        .map_err(as_write_failure)?;
    if count == 0 {
        return Err(as_write_failure(failure(format!(
            "no current fact {subject} → {predicate} → {object} to end; check it with mempalace_kg_query"
        ))));
    }
    Ok(json!({
        "success": true,
        "fact": format!("{subject} → {predicate} → {object}"),
        "ended": ts(&ended),
        "count": count,
    }))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct KgTimeline {
    /// Entity to get timeline for (optional — omit for full timeline)
    #[serde(default)]
    entity: Option<String>,
    /// Facts per page (default 100, 1–100)
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    limit: Option<i64>,
    /// Offset for pagination (default 0)
    #[serde(default)]
    #[schemars(range(min = 0))]
    offset: Option<i64>,
}

fn kg_timeline(backend: &Backend, p: KgTimeline) -> ToolResult {
    let entity = p.entity.as_deref().map(str::trim).filter(|e| !e.is_empty());
    let limit = within("limit", p.limit.unwrap_or(100), 1, 100)? as usize;
    let offset = within("offset", p.offset.unwrap_or(0), 0, i64::from(u32::MAX))? as usize;
    let facts = backend.palace().kg_timeline(entity)?;
    let page: Vec<Value> = facts.iter().skip(offset).take(limit).map(shapes::fact).collect();
    Ok(json!({
        "entity": entity.unwrap_or("all"),
        "count": page.len(),
        "timeline": page,
        "total": facts.len(),
        "offset": offset,
        "limit": limit,
    }))
}

pub(crate) fn kg_stats(backend: &Backend, _: NoParams) -> ToolResult {
    Ok(shapes::kg_stats(&backend.palace().kg_stats()?))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Traverse {
    /// Room to start from (e.g. 'chromadb-setup', 'riley-school')
    start_room: String,
    /// How many connections to follow (default: 2, at most 10)
    #[serde(default)]
    max_hops: Option<i64>,
}

pub(crate) fn room_not_found(error: EngineError) -> ToolError {
    match error {
        EngineError::RoomNotFound { room, suggestions } => {
            ToolError::Failed(json!({"error": format!("Room '{room}' not found"), "suggestions": suggestions}))
        }
        other => other.into(),
    }
}

fn traverse(backend: &Backend, p: Traverse) -> ToolResult {
    let start = required_text("start_room", &p.start_room)?;
    let hops = p.max_hops.map(|h| within("max_hops", h, 1, 10)).transpose()?.map(|h| h as usize);
    let reached = backend.palace().traverse(start, hops).map_err(room_not_found)?;
    Ok(Value::Array(reached.iter().map(shapes::reached).collect()))
}

/// A wing pair, both optional.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct FindTunnels {
    /// First wing (optional)
    #[serde(default)]
    wing_a: Option<String>,
    /// Second wing (optional)
    #[serde(default)]
    wing_b: Option<String>,
}

/// Rooms bridging the (optional) wing pair.
pub(crate) fn tunnel_rooms(backend: &Backend, p: FindTunnels) -> Result<Vec<TunnelRoom>, ToolError> {
    let a = p.wing_a.as_deref().map(str::trim).filter(|w| !w.is_empty());
    let b = p.wing_b.as_deref().map(str::trim).filter(|w| !w.is_empty());
    Ok(backend.palace().find_tunnels(a, b)?)
}

fn find_tunnels(backend: &Backend, p: FindTunnels) -> ToolResult {
    let rooms = tunnel_rooms(backend, p)?;
    Ok(Value::Array(rooms.iter().map(shapes::tunnel_room).collect()))
}

pub(crate) fn graph_stats(backend: &Backend, _: NoParams) -> ToolResult {
    Ok(shapes::graph_stats(&backend.palace().graph_stats()?))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CreateTunnel {
    /// Wing of the source
    source_wing: String,
    /// Room in the source wing
    source_room: String,
    /// Wing of the target
    target_wing: String,
    /// Room in the target wing
    target_room: String,
    /// Description of the connection
    #[serde(default)]
    label: Option<String>,
    /// Optional specific drawer ID at the source
    #[serde(default)]
    source_drawer_id: Option<String>,
    /// Optional specific drawer ID at the target
    #[serde(default)]
    target_drawer_id: Option<String>,
}

fn create_tunnel(backend: &Backend, p: CreateTunnel) -> ToolResult {
    let from = Place { wing: wing("source_wing", &p.source_wing)?, room: room("source_room", &p.source_room)? };
    let to = Place { wing: wing("target_wing", &p.target_wing)?, room: room("target_room", &p.target_room)? };
    let palace = backend.palace();
    let taxonomy = palace.taxonomy()?;
    for (end, place) in [("Source", &from), ("Target", &to)] {
        let exists = taxonomy.wings.get(place.wing.as_str()).is_some_and(|w| w.rooms.contains_key(place.room.as_str()));
        if !exists {
            return Err(failure(format!("{end} room '{}' does not exist in wing '{}'", place.room, place.wing)));
        }
    }
    let label = p.label.filter(|l| !l.trim().is_empty());
    let (tunnel, created) = palace.create_tunnel(from, to, label, Some("mcp".into()))?;
    let mut value = shapes::tunnel(&tunnel);
    for (end, id) in [("source", p.source_drawer_id), ("target", p.target_drawer_id)] {
        if let Some(id) = id.filter(|i| !i.trim().is_empty()) {
            value[end]["drawer_id"] = json!(id);
        }
    }
    value["created"] = json!(created);
    Ok(value)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListTunnels {
    /// Filter tunnels by wing (shows tunnels where wing is source or target)
    #[serde(default)]
    wing: Option<String>,
}

fn list_tunnels(backend: &Backend, p: ListTunnels) -> ToolResult {
    let wing = opt_wing("wing", p.wing.as_deref())?;
    let tunnels = backend.palace().list_tunnels(wing.as_ref().map(|w| w.as_str()))?;
    Ok(Value::Array(tunnels.iter().map(shapes::tunnel).collect()))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DeleteTunnel {
    /// Tunnel ID to delete
    tunnel_id: String,
}

fn delete_tunnel(backend: &Backend, p: DeleteTunnel) -> ToolResult {
    let id = required_text("tunnel_id", &p.tunnel_id)?;
    backend.palace().delete_tunnel(id)?;
    Ok(json!({"deleted": id}))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct FollowTunnels {
    /// Wing to start from
    wing: String,
    /// Room to follow tunnels from
    room: String,
}

fn follow_tunnels(backend: &Backend, p: FollowTunnels) -> ToolResult {
    let (wing, room) = (wing("wing", &p.wing)?, room("room", &p.room)?);
    let palace = backend.palace();
    let mut out = Vec::new();
    for (tunnel, other) in palace.follow_tunnels(&wing, &room)? {
        let outgoing = tunnel.a.wing == wing && tunnel.a.room == room;
        let latest = palace.page_drawers(Some(other.wing.as_str()), Some(other.room.as_str()), 0, 1)?.drawers;
        let mut value = json!({
            "direction": if outgoing { "outgoing" } else { "incoming" },
            "connected_wing": other.wing.as_str(),
            "connected_room": other.room.as_str(),
            "label": tunnel.label.clone().unwrap_or_default(),
            "drawer_id": latest.first().map(|d| d.id.as_str()),
            "tunnel_id": tunnel.id,
        });
        if let Some(drawer) = latest.first() {
            value["drawer_preview"] = json!(drawer.content.as_str().chars().take(300).collect::<String>());
        }
        out.push(value);
    }
    Ok(Value::Array(out))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Search {
    /// Short search query ONLY — keywords or a question. Max 250 chars (a longer pasted prompt is reduced to
    /// its last question).
    #[schemars(length(max = 250))]
    query: String,
    /// Max results (default 5)
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    limit: Option<i64>,
    /// Filter by wing (optional)
    #[serde(default)]
    wing: Option<String>,
    /// Filter by room (optional)
    #[serde(default)]
    room: Option<String>,
    /// Filter to one exact source_file (optional). Matches the full stored path exactly (leading/trailing
    /// whitespace trimmed); no glob or basename matching. Pass the value from a result's 'source_path' field; the
    /// displayed 'source_file' is only a basename.
    #[serde(default)]
    source_file: Option<String>,
    /// Only drawers filed on/after this ISO date or datetime (inclusive), e.g. '2026-04-01' or
    /// '2026-04-01T09:30:00'.
    #[serde(default)]
    since: Option<String>,
    /// Only drawers filed strictly before this ISO date or datetime (exclusive). Same rules as 'since'.
    #[serde(default)]
    before: Option<String>,
    /// Max cosine distance threshold (0=identical, 2=opposite). Results further than this are dropped. Lower =
    /// stricter. Default 1.5. Set to 0 to disable.
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 2.0))]
    max_distance: Option<f64>,
    /// Candidate source strategy. Accepted for compatibility: this palace always merges keyword (BM25), vector
    /// and knowledge-graph candidates before ranking.
    #[serde(default)]
    candidate_strategy: Option<CandidateStrategy>,
    /// Accepted for compatibility (the Python MemPalace's CLI forwarder); no effect here.
    #[serde(default)]
    cli_compatible: Option<bool>,
    /// Media search (images, audio, video): not supported by this palace, which stores text only.
    #[serde(default)]
    include_media: Option<bool>,
    /// Task prompt of the Python MemPalace's EmbeddingGemma model: 'search' (default) or 'code'. Accepted; this
    /// palace's embedder has no task prompts.
    #[serde(default)]
    query_task: Option<QueryTask>,
    /// Background context for the search (optional). Not embedded; recorded only.
    #[serde(default)]
    context: Option<String>,
}

#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum CandidateStrategy {
    Vector,
    Union,
}

#[derive(Deserialize, JsonSchema, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum QueryTask {
    Search,
    Code,
}

fn search(backend: &Backend, p: Search) -> ToolResult {
    let limit = ResultLimit::new(p.limit.unwrap_or(5)).map_err(|e| ToolError::param("limit", e))?;
    let max_distance = within("max_distance", p.max_distance.unwrap_or(1.5), 0.0, 2.0)?;
    let wing = opt_wing("wing", p.wing.as_deref())?;
    let room = opt_room("room", p.room.as_deref())?;
    let source_file = p.source_file.as_deref().map(str::trim).filter(|s| !s.is_empty());
    if source_file.is_some_and(|s| s.contains('\0') || s.chars().count() > 4096) {
        return Err(ToolError::param("source_file", "must be a path of at most 4096 characters without NUL"));
    }
    let since = date("since", p.since.as_deref(), DayEdge::Start)?;
    let before = date("before", p.before.as_deref(), DayEdge::Start)?;
    if let (Some(since), Some(before)) = (since, before)
        && since >= before
    {
        return Err(ToolError::param("since", "must be earlier than before"));
    }
    if p.include_media == Some(true) {
        return Err(failure("include_media is not supported: this palace stores text only; search without it"));
    }
    let (_, _, _) = (p.candidate_strategy, p.cli_compatible, p.query_task);
    let sanitized = sanitize_query(&p.query);
    if sanitized.clean.is_empty() {
        return Err(ToolError::param("query", "must not be empty"));
    }
    let filter = DrawerFilter {
        wings: wing.iter().map(|w| w.as_str().to_string()).collect(),
        rooms: room.iter().map(|r| r.as_str().to_string()).collect(),
        source_file: source_file.map(str::to_string),
        filed_after: since,
        // `before` is exclusive; the filter's bound is inclusive.
        filed_before: before.map(mempalace_core::time::just_before),
        ..DrawerFilter::default()
    };
    let palace = backend.palace();
    let outcome = palace.search(&SearchRequest {
        query: sanitized.clean.clone(),
        limit,
        filter,
        max_distance: Some(max_distance),
        ..SearchRequest::default()
    })?;
    let results: Vec<Value> = outcome
        .hits
        .iter()
        .map(|hit| {
            let d = &hit.drawer;
            let similarity = hit.similarity.map(|s| round(f64::from(s), 3));
            let distance = hit.similarity.map(|s| round(1.0 - f64::from(s), 4));
            json!({
                "drawer_id": d.id.as_str(),
                "text": d.content.as_str(),
                "wing": d.wing.as_str(),
                "room": d.room.as_str(),
                "source_file": d.source_file.as_deref().map_or_else(|| "?".to_string(), basename),
                "source_path": d.source_file.as_deref().unwrap_or(""),
                "created_at": ts(&d.filed_at),
                "filed_at": ts(&d.filed_at),
                "content_date": d.content_date,
                "similarity": similarity,
                "distance": distance,
                "effective_distance": distance,
                "closet_boost": 0.0,
                "matched_via": if hit.similarity.is_some() { "drawer" } else { "bm25" },
                "bm25_score": hit.bm25.map(|b| round(b, 3)),
                "score": round(hit.score, 4),
            })
        })
        .collect();
    let mut value = json!({
        "query": sanitized.clean,
        "filters": {
            "wing": wing.as_ref().map(|w| w.as_str()), "room": room.as_ref().map(|r| r.as_str()),
            "source_file": source_file, "since": p.since.as_deref().map(str::trim).filter(|s| !s.is_empty()),
            "before": p.before.as_deref().map(str::trim).filter(|s| !s.is_empty()),
        },
        "total_before_filter": outcome.candidates,
        "results": results,
    });
    if let SearchMode::LexicalOnly(reason) = &outcome.mode {
        value["fallback"] = json!("bm25_only");
        value["fallback_reason"] = json!(reason);
        value["vector_disabled"] = json!(true);
        value["vector_disabled_reason"] = json!(reason);
    }
    if sanitized.changed() {
        value["query_sanitized"] = json!(true);
        value["sanitizer"] = json!({
            "method": sanitized.method.as_str(),
            "original_length": sanitized.original_chars,
            "clean_length": sanitized.clean.chars().count(),
            "clean_query": sanitized.clean,
        });
    }
    if p.context.is_some_and(|c| !c.trim().is_empty()) {
        value["context_received"] = json!(true);
    }
    Ok(value)
}

pub(crate) fn round(value: f64, places: i32) -> f64 {
    let factor = 10_f64.powi(places);
    (value * factor).round() / factor
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CheckDuplicate {
    /// Content to check
    content: String,
    /// Similarity threshold 0-1 (default 0.9)
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    threshold: Option<f64>,
}

fn check_duplicate(backend: &Backend, p: CheckDuplicate) -> ToolResult {
    let text = required_text("content", &p.content)?;
    let threshold = within("threshold", p.threshold.unwrap_or(0.9), 0.0, 1.0)?;
    let palace = backend.palace();
    if palace.embedder().is_none_or(|e| !e.available()) {
        return Ok(json!({
            "is_duplicate": false, "matches": [], "vector_disabled": true,
            "vector_disabled_reason": "no embedding model is available",
            "hint": "duplicate detection needs vectors; run `mempalace model fetch`, then `mempalace reembed`",
        }));
    }
    // A match is a duplicate only when the text adds nothing to it (the
    // same rule as filing: a changed number, name or path is a new fact).
    let mut is_duplicate = false;
    let matches: Vec<Value> = palace
        .similar(text, 5)?
        .into_iter()
        .filter(|(_, similarity)| f64::from(*similarity) >= threshold)
        .map(|(d, similarity)| {
            let differs = match judge(text, d.content.as_str()) {
                Verdict::Duplicate => Vec::new(),
                Verdict::Distinct(differs) => differs,
            };
            is_duplicate |= differs.is_empty();
            json!({
                "id": d.id.as_str(), "wing": d.wing.as_str(), "room": d.room.as_str(),
                "similarity": round(f64::from(similarity), 3), "content": preview(d.content.as_str(), 200),
                "adds_nothing": differs.is_empty(), "differs": differs,
            })
        })
        .collect();
    Ok(json!({"is_duplicate": is_duplicate, "matches": matches}))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AddDrawer {
    /// Wing (project name)
    wing: String,
    /// Room (aspect: backend, decisions, meetings...)
    room: String,
    /// Verbatim content to store — exact words, never summarized
    content: String,
    /// Where this came from (optional)
    #[serde(default)]
    source_file: Option<String>,
    /// Who is filing this (default: mcp)
    #[serde(default)]
    added_by: Option<String>,
}

fn add_drawer(backend: &Backend, p: AddDrawer) -> ToolResult {
    let (wing, room) = (wing("wing", &p.wing)?, room("room", &p.room)?);
    let text = content("content", &p.content)?;
    let mut request =
        IngestRequest::new(wing.clone(), room.clone(), text.as_str(), p.added_by.unwrap_or_else(|| "mcp".into()));
    request.source_file = p.source_file.filter(|s| !s.trim().is_empty());
    let report = backend.palace().ingest(request).map_err(|e| as_write_failure(e.into()))?;
    if report.noise {
        return Ok(json!({
            "success": false, "reason": "noise",
            "error": "the content looks like tool output or chatter, not something to remember; nothing was filed",
        }));
    }
    let ids: Vec<String> = report.chunks.iter().map(|c| c.drawer_id().to_string()).collect();
    let first = ids.first().cloned().unwrap_or_default();
    if !report.chunks.iter().any(ChunkOutcome::is_new) {
        let similarity = report.chunks.iter().find_map(|c| match c {
            ChunkOutcome::Duplicate { similarity, .. } => Some(round(f64::from(*similarity), 3)),
            _ => None,
        });
        let mut value = json!({"success": true, "reason": "already_exists", "drawer_id": first});
        if let Some(similarity) = similarity {
            value["similarity"] = json!(similarity);
        }
        return Ok(value);
    }
    let mut value = json!({
        "success": true, "drawer_id": first, "wing": wing.as_str(), "room": room.as_str(), "chunks": ids.len(),
    });
    if ids.len() > 1 {
        value["chunk_ids"] = json!(ids);
    }
    if let Some(reason) = report.degraded {
        value["vector_disabled_reason"] = json!(reason);
    }
    Ok(value)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DrawerIdParam {
    /// ID of the drawer
    drawer_id: String,
}

fn not_found(id: &str) -> ToolError {
    failure(format!("Drawer not found: {id}"))
}

fn delete_drawer(backend: &Backend, p: DrawerIdParam) -> ToolResult {
    let id = drawer_id("drawer_id", &p.drawer_id)?;
    // A paragraph of a memory file leaves its file too.
    match mempalace_feed::memory::delete_drawer(backend.palace(), &id, DeleteMode::Hard) {
        Ok(()) => Ok(json!({"success": true, "drawer_id": id.as_str()})),
        Err(FeedError::Engine(EngineError::NotFound { .. })) => Err(as_write_failure(not_found(id.as_str()))),
        Err(other) => Err(as_write_failure(other.into())),
    }
}

fn get_drawer(backend: &Backend, p: DrawerIdParam) -> ToolResult {
    let id = drawer_id("drawer_id", &p.drawer_id)?;
    match backend.palace().drawer(&id) {
        Ok(d) => Ok(json!({
            "drawer_id": d.id.as_str(),
            "content": d.content.as_str(),
            "wing": d.wing.as_str(),
            "room": d.room.as_str(),
            "metadata": shapes::drawer_metadata(&d),
        })),
        Err(EngineError::NotFound { .. }) => Err(not_found(id.as_str())),
        Err(other) => Err(other.into()),
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListDrawers {
    /// Filter by wing (optional)
    #[serde(default)]
    wing: Option<String>,
    /// Filter by room (optional)
    #[serde(default)]
    room: Option<String>,
    /// Only drawers filed on or after this ISO date/time, inclusive (e.g. '2026-04-01'). Optional.
    #[serde(default)]
    since: Option<String>,
    /// Only drawers filed before this ISO date/time, exclusive (e.g. '2026-05-01'). Optional.
    #[serde(default)]
    before: Option<String>,
    /// Max results per page (default 20, max 100)
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    limit: Option<i64>,
    /// Offset for pagination (default 0)
    #[serde(default)]
    #[schemars(range(min = 0))]
    offset: Option<i64>,
}

fn list_drawers(backend: &Backend, p: ListDrawers) -> ToolResult {
    let wing = opt_wing("wing", p.wing.as_deref())?;
    let room = opt_room("room", p.room.as_deref())?;
    let limit = within("limit", p.limit.unwrap_or(20), 1, 100)? as usize;
    let offset = within("offset", p.offset.unwrap_or(0), 0, i64::from(u32::MAX))? as usize;
    let since = date("since", p.since.as_deref(), DayEdge::Start)?;
    let before = date("before", p.before.as_deref(), DayEdge::Start)?;
    let page = backend.palace().page_drawers_between(
        wing.as_ref().map(|w| w.as_str()),
        room.as_ref().map(|r| r.as_str()),
        since,
        before,
        offset,
        limit,
    )?;
    let drawers: Vec<Value> = page
        .drawers
        .iter()
        .map(|d| {
            json!({
                "drawer_id": d.id.as_str(), "wing": d.wing.as_str(), "room": d.room.as_str(),
                "content_preview": preview(d.content.as_str(), 200), "filed_at": ts(&d.filed_at),
            })
        })
        .collect();
    Ok(json!({"drawers": drawers, "total": page.total, "count": page.drawers.len(), "offset": offset, "limit": limit}))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UpdateDrawer {
    /// ID of the drawer to update
    drawer_id: String,
    /// New content (optional — omit to keep existing)
    #[serde(default)]
    content: Option<String>,
    /// New wing (optional — omit to keep existing)
    #[serde(default)]
    wing: Option<String>,
    /// New room (optional — omit to keep existing)
    #[serde(default)]
    room: Option<String>,
}

fn update_drawer(backend: &Backend, p: UpdateDrawer) -> ToolResult {
    let id = drawer_id("drawer_id", &p.drawer_id)?;
    let update = DrawerUpdate {
        content: p.content.as_deref().map(|c| content("content", c)).transpose()?,
        wing: p.wing.as_deref().map(|w| wing("wing", w)).transpose()?,
        room: p.room.as_deref().map(|r| room("room", r)).transpose()?,
        ..DrawerUpdate::default()
    };
    let palace = backend.palace();
    if update.content.is_none() && update.wing.is_none() && update.room.is_none() {
        palace.drawer(&id).map_err(|_| as_write_failure(not_found(id.as_str())))?;
        return Ok(json!({"success": true, "drawer_id": id.as_str(), "noop": true}));
    }
    // A paragraph of a memory file is rewritten in its file too.
    match mempalace_feed::memory::update_drawer(palace, &id, update) {
        Ok(d) => {
            Ok(json!({"success": true, "drawer_id": d.id.as_str(), "wing": d.wing.as_str(), "room": d.room.as_str()}))
        }
        Err(FeedError::Engine(EngineError::NotFound { .. })) => Err(as_write_failure(not_found(id.as_str()))),
        Err(other) => Err(as_write_failure(other.into())),
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DiaryWrite {
    /// Your name — each agent gets their own diary
    agent_name: String,
    /// Your diary entry (AAAK keeps it short)
    #[serde(default)]
    entry: Option<String>,
    /// Alias of entry (entry wins when both are given)
    #[serde(default)]
    content: Option<String>,
    /// Topic tag (optional, default: general)
    #[serde(default)]
    topic: Option<String>,
    /// Target wing for this diary entry (optional). If omitted, uses wing_{agent_name}. Use this to write diary entries to a project wing instead of an agent-specific wing.
    #[serde(default)]
    wing: Option<String>,
}

fn agent_wing(agent: &str) -> Result<mempalace_core::Wing, ToolError> {
    wing("agent_name", &format!("wing_{}", agent.to_lowercase().replace(' ', "_")))
}

fn diary_write(backend: &Backend, p: DiaryWrite) -> ToolResult {
    let agent = required_text("agent_name", &p.agent_name)?.to_lowercase();
    let Some(entry) = p.entry.as_deref().or(p.content.as_deref()) else {
        return Err(ToolError::InvalidParams(
            "Missing required parameter 'entry' for tool mempalace_diary_write".into(),
        ));
    };
    let text = content("entry", entry)?;
    let topic = p.topic.as_deref().map(str::trim).filter(|t| !t.is_empty()).unwrap_or("general").to_string();
    let wing = match opt_wing("wing", p.wing.as_deref())? {
        Some(wing) => wing,
        None => agent_wing(&agent)?,
    };
    let palace = backend.palace();
    let id = palace
        .diary_write(DiaryEntry {
            agent: agent.clone(),
            text,
            topic: topic.clone(),
            wing,
            room: room("room", DIARY_ROOM)?,
            hall: Some(mempalace_core::Hall::parse(DIARY_HALL).map_err(|e| ToolError::Internal(e.to_string()))?),
            context: serde_json::Map::new(),
        })
        .map_err(|e| as_write_failure(e.into()))?;
    Ok(json!({
        "success": true, "entry_id": id.as_str(), "agent": agent, "topic": topic,
        "timestamp": ts(&palace.now()), "chunks": 1,
    }))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DiaryRead {
    /// Your name — each agent gets their own diary
    agent_name: String,
    /// Number of recent entries to read (default: 10, at most 100)
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    last_n: Option<i64>,
    /// Wing to read diary entries from (optional). If omitted, reads the agent's entries in every wing.
    #[serde(default)]
    wing: Option<String>,
}

fn diary_read(backend: &Backend, p: DiaryRead) -> ToolResult {
    let agent = required_text("agent_name", &p.agent_name)?.to_lowercase();
    let last_n = within("last_n", p.last_n.unwrap_or(10), 1, 100)? as usize;
    let wing = opt_wing("wing", p.wing.as_deref())?;
    let page = backend.palace().diary_read(&agent, wing.as_ref().map(|w| w.as_str()), Some(DIARY_ROOM), last_n)?;
    if page.total == 0 {
        return Ok(json!({"agent": agent, "entries": [], "message": "No diary entries yet."}));
    }
    let entries: Vec<Value> = page
        .entries
        .iter()
        .map(|d| {
            json!({
                "date": d.context.get("date").cloned().unwrap_or_else(|| json!(d.filed_at.format("%Y-%m-%d").to_string())),
                "timestamp": ts(&d.filed_at),
                "topic": d.context.get("topic").cloned().unwrap_or_else(|| json!("general")),
                "content": d.content.as_str(),
                "entry_id": d.id.as_str(),
            })
        })
        .collect();
    Ok(json!({"agent": agent, "entries": entries, "total": page.total, "showing": page.entries.len()}))
}

fn reconnect(backend: &Backend, _: NoParams) -> ToolResult {
    let palace = backend.palace();
    let drawers = palace.taxonomy()?.total_drawers;
    Ok(json!({
        "success": true, "message": "Reconnected to palace", "drawers": drawers,
        "vector_disabled": backend.embedder_settled() && backend.palace().embedder().is_none(),
        "vector_disabled_reason": "",
    }))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WakeUp {
    /// Only this wing's essential story (optional)
    #[serde(default)]
    wing: Option<String>,
}

fn wake_up(backend: &Backend, p: WakeUp) -> ToolResult {
    let wing = opt_wing("wing", p.wing.as_deref())?;
    let text = backend.palace().wake_up(wing.as_ref().map(|w| w.as_str()))?;
    Ok(json!({"text": text, "tokens": text.len().div_ceil(4)}))
}
