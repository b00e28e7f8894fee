//! The Python MemPalace's `mempalace_*` tools: the same names, parameter
//! names and result JSON, so agent instructions written for MemPalace keep
//! working. Where MemPalace is lax and the issue is strict (unknown,
//! missing, mistyped or out-of-range parameters), parameters are refused
//! with `-32602`; conditions the caller cannot see in advance (a drawer
//! that does not exist) come back in MemPalace's `{"error": …}` or
//! `{"success": false, "error": …}` shapes, flagged `isError`.

use std::collections::BTreeMap;

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
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{
    as_write_failure, basename, content, date, drawer_id, failure, opt_room, opt_wing, preview, reply, required_text,
    room, ts, wing, within,
};
use crate::context::Backend;
use crate::registry::{Family, ToolError, ToolResult, ToolSpec};
use crate::shapes::{
    self, DiaryWritten, DrawerAdded, DrawerShape, DuplicateMatch, FactShape, GraphStatsShape, KgStatsShape, Noise,
    ReachedShape, TaxonomyTree, TunnelRoomShape, TunnelShape,
};
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

/// `mempalace_status`: counts, the memory protocol and the AAAK spec.
#[derive(Serialize)]
struct PalaceStatus {
    aaak_dialect: &'static str,
    palace_path: String,
    protocol: &'static str,
    rooms: BTreeMap<String, u64>,
    total_drawers: u64,
    wings: BTreeMap<String, u64>,
}

fn status(backend: &Backend, _: NoParams) -> ToolResult {
    let taxonomy = backend.palace().taxonomy()?;
    let (wings, rooms) = shapes::wing_and_room_counts(&taxonomy);
    reply(PalaceStatus {
        aaak_dialect: AAAK_SPEC,
        palace_path: backend.location().to_string(),
        protocol: PALACE_PROTOCOL,
        rooms,
        total_drawers: taxonomy.total_drawers,
        wings,
    })
}

/// `mempalace_list_wings`: drawers per wing.
#[derive(Serialize)]
struct WingCounts {
    wings: BTreeMap<String, u64>,
}

fn list_wings(backend: &Backend, _: NoParams) -> ToolResult {
    let taxonomy = backend.palace().taxonomy()?;
    reply(WingCounts { wings: shapes::wing_and_room_counts(&taxonomy).0 })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListRooms {
    /// Wing to list rooms for (optional)
    #[serde(default)]
    wing: Option<String>,
}

/// `mempalace_list_rooms`: drawers per room of a wing (or of all).
#[derive(Serialize)]
struct RoomCounts {
    rooms: BTreeMap<String, u64>,
    wing: String,
}

fn list_rooms(backend: &Backend, p: ListRooms) -> ToolResult {
    let wing = opt_wing("wing", p.wing.as_deref())?;
    let taxonomy = backend.palace().taxonomy()?;
    reply(RoomCounts {
        rooms: shapes::room_counts(&taxonomy, wing.as_ref().map(|w| w.as_str())),
        wing: wing.as_ref().map_or("all", |w| w.as_str()).to_string(),
    })
}

fn get_taxonomy(backend: &Backend, _: NoParams) -> ToolResult {
    reply(TaxonomyTree::of(&backend.palace().taxonomy()?))
}

/// `mempalace_get_aaak_spec`.
#[derive(Serialize)]
struct AaakSpec {
    aaak_spec: &'static str,
}

fn get_aaak_spec(_: &Backend, _: NoParams) -> ToolResult {
    reply(AaakSpec { aaak_spec: AAAK_SPEC })
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
    reply(KgFacts {
        as_of: p.as_of.filter(|t| !t.trim().is_empty()),
        count: facts.len(),
        entity: entity.to_string(),
        facts: facts.iter().map(FactShape::of).collect(),
    })
}

/// `mempalace_kg_query`: an entity's facts.
#[derive(Serialize)]
struct KgFacts {
    as_of: Option<String>,
    count: usize,
    entity: String,
    facts: Vec<FactShape>,
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
    reply(FactAdded {
        dated: match &outcome {
            TripleOutcome::Dated { replaced, .. } => Some(replaced.clone()),
            _ => None,
        },
        existing: matches!(outcome, TripleOutcome::Existing(_)),
        fact: format!("{subject} → {predicate} → {object}"),
        success: true,
        triple_id: outcome.id().to_string(),
    })
}

/// `mempalace_kg_add`: the fact stored (or found).
#[derive(Serialize)]
struct FactAdded {
    /// The undated fact this one replaced, when it replaced one.
    #[serde(skip_serializing_if = "Option::is_none")]
    dated: Option<String>,
    existing: bool,
    fact: String,
    success: bool,
    triple_id: String,
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
    reply(FactEnded {
        count, ended: ts(&ended), fact: format!("{subject} → {predicate} → {object}"), success: true
    })
}

/// `mempalace_kg_invalidate`: the facts ended.
#[derive(Serialize)]
struct FactEnded {
    count: usize,
    ended: String,
    fact: String,
    success: bool,
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
    let timeline: Vec<FactShape> = facts.iter().skip(offset).take(limit).map(FactShape::of).collect();
    reply(TimelinePage {
        count: timeline.len(),
        entity: entity.unwrap_or("all").to_string(),
        limit,
        offset,
        timeline,
        total: facts.len(),
    })
}

/// `mempalace_kg_timeline`: a page of facts in time order.
#[derive(Serialize)]
struct TimelinePage {
    count: usize,
    entity: String,
    limit: usize,
    offset: usize,
    timeline: Vec<FactShape>,
    total: usize,
}

pub(crate) fn kg_stats(backend: &Backend, _: NoParams) -> ToolResult {
    reply(KgStatsShape::of(&backend.palace().kg_stats()?))
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
    reply(reached.iter().map(ReachedShape::of).collect::<Vec<_>>())
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
    reply(rooms.iter().map(TunnelRoomShape::of).collect::<Vec<_>>())
}

pub(crate) fn graph_stats(backend: &Backend, _: NoParams) -> ToolResult {
    reply(GraphStatsShape::of(&backend.palace().graph_stats()?))
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
    let mut shape = TunnelShape::of(&tunnel);
    shape.source.drawer_id = p.source_drawer_id.filter(|i| !i.trim().is_empty());
    shape.target.drawer_id = p.target_drawer_id.filter(|i| !i.trim().is_empty());
    shape.created = Some(created);
    reply(shape)
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
    reply(tunnels.iter().map(TunnelShape::of).collect::<Vec<_>>())
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
    reply(TunnelDeleted { deleted: id.to_string() })
}

/// `mempalace_delete_tunnel`: the id deleted.
#[derive(Serialize)]
struct TunnelDeleted {
    deleted: String,
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
        let latest = latest.first();
        out.push(FollowedTunnel {
            connected_room: other.room.as_str().to_string(),
            connected_wing: other.wing.as_str().to_string(),
            direction: if outgoing { "outgoing" } else { "incoming" },
            drawer_id: latest.map(|d| d.id.as_str().to_string()),
            drawer_preview: latest.map(|d| d.content.as_str().chars().take(300).collect()),
            label: tunnel.label.clone().unwrap_or_default(),
            tunnel_id: tunnel.id,
        });
    }
    reply(out)
}

/// A `mempalace_follow_tunnels` item: the place at a tunnel's other end.
#[derive(Serialize)]
struct FollowedTunnel {
    connected_room: String,
    connected_wing: String,
    /// `outgoing` when the room is the tunnel's first end.
    direction: &'static str,
    /// The other place's latest drawer.
    drawer_id: Option<String>,
    /// Its first 300 characters; absent without a drawer.
    #[serde(skip_serializing_if = "Option::is_none")]
    drawer_preview: Option<String>,
    label: String,
    tunnel_id: String,
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
    let results = outcome
        .hits
        .iter()
        .map(|hit| {
            let d = &hit.drawer;
            let distance = hit.similarity.map(|s| round(1.0 - f64::from(s), 4));
            SearchResult {
                bm25_score: hit.bm25.map(|b| round(b, 3)),
                closet_boost: 0.0,
                content_date: d.content_date.clone(),
                created_at: ts(&d.filed_at),
                distance,
                drawer_id: d.id.as_str().to_string(),
                effective_distance: distance,
                filed_at: ts(&d.filed_at),
                matched_via: if hit.similarity.is_some() { "drawer" } else { "bm25" },
                room: d.room.as_str().to_string(),
                score: round(hit.score, 4),
                similarity: hit.similarity.map(|s| round(f64::from(s), 3)),
                source_file: d.source_file.as_deref().map_or_else(|| "?".to_string(), basename),
                source_path: d.source_file.clone().unwrap_or_default(),
                text: d.content.as_str().to_string(),
                wing: d.wing.as_str().to_string(),
            }
        })
        .collect();
    let given = |text: Option<&str>| text.map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
    let fallback = match &outcome.mode {
        SearchMode::LexicalOnly(reason) => Some(reason.clone()),
        SearchMode::Hybrid => None,
    };
    reply(SearchAnswer {
        context_received: p.context.is_some_and(|c| !c.trim().is_empty()).then_some(true),
        fallback: fallback.as_ref().map(|_| "bm25_only"),
        fallback_reason: fallback.clone(),
        filters: SearchFilters {
            before: given(p.before.as_deref()),
            room: room.as_ref().map(|r| r.as_str().to_string()),
            since: given(p.since.as_deref()),
            source_file: source_file.map(str::to_string),
            wing: wing.as_ref().map(|w| w.as_str().to_string()),
        },
        query_sanitized: sanitized.changed().then_some(true),
        sanitizer: sanitized.changed().then(|| Sanitizer {
            clean_length: sanitized.clean.chars().count(),
            clean_query: sanitized.clean.clone(),
            method: sanitized.method.as_str(),
            original_length: sanitized.original_chars,
        }),
        query: sanitized.clean,
        results,
        total_before_filter: outcome.candidates,
        vector_disabled: fallback.as_ref().map(|_| true),
        vector_disabled_reason: fallback,
    })
}

/// `mempalace_search`: the hits, the filters applied, and how the search
/// ran.
#[derive(Serialize)]
struct SearchAnswer {
    /// True when background context was given (it is not searched).
    #[serde(skip_serializing_if = "Option::is_none")]
    context_received: Option<bool>,
    /// `bm25_only` when vectors could not be used.
    #[serde(skip_serializing_if = "Option::is_none")]
    fallback: Option<&'static str>,
    /// Why vectors could not be used.
    #[serde(skip_serializing_if = "Option::is_none")]
    fallback_reason: Option<String>,
    filters: SearchFilters,
    query: String,
    /// True when the query was reduced from a pasted prompt.
    #[serde(skip_serializing_if = "Option::is_none")]
    query_sanitized: Option<bool>,
    results: Vec<SearchResult>,
    /// How the query was reduced, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    sanitizer: Option<Sanitizer>,
    total_before_filter: usize,
    /// True when vectors could not be used.
    #[serde(skip_serializing_if = "Option::is_none")]
    vector_disabled: Option<bool>,
    /// Why vectors could not be used.
    #[serde(skip_serializing_if = "Option::is_none")]
    vector_disabled_reason: Option<String>,
}

/// The filters of a `mempalace_search` (null: not given).
#[derive(Serialize)]
struct SearchFilters {
    before: Option<String>,
    room: Option<String>,
    since: Option<String>,
    source_file: Option<String>,
    wing: Option<String>,
}

/// How a pasted prompt was reduced to a query.
#[derive(Serialize)]
struct Sanitizer {
    clean_length: usize,
    clean_query: String,
    method: &'static str,
    original_length: usize,
}

/// A `mempalace_search` hit.
#[derive(Serialize)]
struct SearchResult {
    bm25_score: Option<f64>,
    /// Always 0 (no closets here).
    closet_boost: f64,
    content_date: Option<String>,
    created_at: String,
    distance: Option<f64>,
    drawer_id: String,
    effective_distance: Option<f64>,
    filed_at: String,
    /// `drawer` (found by meaning) or `bm25` (by keywords only).
    matched_via: &'static str,
    room: String,
    score: f64,
    similarity: Option<f64>,
    /// The source's file name (`?`: none).
    source_file: String,
    /// The source's full path (empty: none).
    source_path: String,
    text: String,
    wing: String,
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
        return reply(DuplicateCheck::NoVectors {
            hint: "duplicate detection needs vectors; run `mempalace model fetch`, then `mempalace reembed`",
            is_duplicate: false,
            matches: Vec::new(),
            vector_disabled: true,
            vector_disabled_reason: "no embedding model is available",
        });
    }
    // A match is a duplicate only when the text adds nothing to it (the
    // same rule as filing: a changed number, name or path is a new fact).
    let mut is_duplicate = false;
    let matches: Vec<CheckedMatch> = palace
        .similar(text, 5)?
        .into_iter()
        .filter(|(_, similarity)| f64::from(*similarity) >= threshold)
        .map(|(d, similarity)| {
            let differs = match judge(text, d.content.as_str()) {
                Verdict::Duplicate => Vec::new(),
                Verdict::Distinct(differs) => differs,
            };
            is_duplicate |= differs.is_empty();
            CheckedMatch { adds_nothing: differs.is_empty(), differs, found: duplicate_match(&d, similarity) }
        })
        .collect();
    reply(DuplicateCheck::Checked { is_duplicate, matches })
}

/// A resembling drawer as a duplicate check lists it.
pub(crate) fn duplicate_match(d: &mempalace_core::Drawer, similarity: f32) -> DuplicateMatch {
    DuplicateMatch {
        content: preview(d.content.as_str(), 200),
        id: d.id.as_str().to_string(),
        room: d.room.as_str().to_string(),
        similarity: round(f64::from(similarity), 3),
        wing: d.wing.as_str().to_string(),
    }
}

/// `mempalace_check_duplicate`: the resembling drawers, or why there are
/// none to look at.
#[derive(Serialize)]
#[serde(untagged)]
enum DuplicateCheck {
    /// Resembling drawers at or above the threshold.
    Checked { is_duplicate: bool, matches: Vec<CheckedMatch> },
    /// No vectors: nothing could be compared.
    NoVectors {
        hint: &'static str,
        is_duplicate: bool,
        matches: Vec<CheckedMatch>,
        vector_disabled: bool,
        vector_disabled_reason: &'static str,
    },
}

/// A `mempalace_check_duplicate` match: the drawer and what the text adds
/// to it.
#[derive(Serialize)]
struct CheckedMatch {
    /// True when the text says nothing the drawer does not.
    adds_nothing: bool,
    /// The text's words the drawer lacks.
    differs: Vec<String>,
    #[serde(flatten)]
    found: DuplicateMatch,
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
        return reply(DrawerAdded::Noise(Noise::new(
            "the content looks like tool output or chatter, not something to remember; nothing was filed",
        )));
    }
    let ids: Vec<String> = report.chunks.iter().map(|c| c.drawer_id().to_string()).collect();
    let first = ids.first().cloned().unwrap_or_default();
    if !report.chunks.iter().any(ChunkOutcome::is_new) {
        let similarity = report.chunks.iter().find_map(|c| match c {
            ChunkOutcome::Duplicate { similarity, .. } => Some(round(f64::from(*similarity), 3)),
            _ => None,
        });
        return reply(DrawerAdded::AlreadyExists {
            drawer_id: first,
            reason: "already_exists",
            similarity,
            success: true,
        });
    }
    reply(DrawerAdded::Filed {
        chunks: ids.len(),
        chunk_ids: (ids.len() > 1).then_some(ids),
        drawer_id: first,
        room: room.as_str().to_string(),
        success: true,
        vector_disabled_reason: report.degraded,
        wing: wing.as_str().to_string(),
    })
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
        Ok(()) => reply(DrawerDeleted { drawer_id: id.as_str().to_string(), success: true }),
        Err(FeedError::Engine(EngineError::NotFound { .. })) => Err(as_write_failure(not_found(id.as_str()))),
        Err(other) => Err(as_write_failure(other.into())),
    }
}

/// `mempalace_delete_drawer`: the drawer deleted.
#[derive(Serialize)]
struct DrawerDeleted {
    drawer_id: String,
    success: bool,
}

fn get_drawer(backend: &Backend, p: DrawerIdParam) -> ToolResult {
    let id = drawer_id("drawer_id", &p.drawer_id)?;
    match backend.palace().drawer(&id) {
        Ok(d) => reply(DrawerShape::of(&d)),
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
    let drawers = page
        .drawers
        .iter()
        .map(|d| DrawerListed {
            content_preview: preview(d.content.as_str(), 200),
            drawer_id: d.id.as_str().to_string(),
            filed_at: ts(&d.filed_at),
            room: d.room.as_str().to_string(),
            wing: d.wing.as_str().to_string(),
        })
        .collect();
    reply(DrawerList { count: page.drawers.len(), drawers, limit, offset, total: page.total })
}

/// `mempalace_list_drawers`: a page of drawers, newest first.
#[derive(Serialize)]
struct DrawerList {
    count: usize,
    drawers: Vec<DrawerListed>,
    limit: usize,
    offset: usize,
    /// Matching drawers in all.
    total: u64,
}

/// A `mempalace_list_drawers` item.
#[derive(Serialize)]
struct DrawerListed {
    content_preview: String,
    drawer_id: String,
    filed_at: String,
    room: String,
    wing: String,
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
        return reply(DrawerUpdated::Noop { drawer_id: id.as_str().to_string(), noop: true, success: true });
    }
    // A paragraph of a memory file is rewritten in its file too.
    match mempalace_feed::memory::update_drawer(palace, &id, update) {
        Ok(d) => reply(DrawerUpdated::Updated {
            drawer_id: d.id.as_str().to_string(),
            room: d.room.as_str().to_string(),
            success: true,
            wing: d.wing.as_str().to_string(),
        }),
        Err(FeedError::Engine(EngineError::NotFound { .. })) => Err(as_write_failure(not_found(id.as_str()))),
        Err(other) => Err(as_write_failure(other.into())),
    }
}

/// `mempalace_update_drawer`: the drawer as it is now.
#[derive(Serialize)]
#[serde(untagged)]
enum DrawerUpdated {
    /// Changed: its place now.
    Updated { drawer_id: String, room: String, success: bool, wing: String },
    /// Nothing to change.
    Noop { drawer_id: String, noop: bool, success: bool },
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
    reply(DiaryWritten::new(agent, &id, topic, &palace.now()))
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
        return reply(DiaryEntries::Empty { agent, entries: Vec::new(), message: "No diary entries yet." });
    }
    let entries = page
        .entries
        .iter()
        .map(|d| DiaryLine {
            content: d.content.as_str().to_string(),
            date: d.context.get("date").cloned().unwrap_or_else(|| d.filed_at.format("%Y-%m-%d").to_string().into()),
            entry_id: d.id.as_str().to_string(),
            timestamp: ts(&d.filed_at),
            topic: d.context.get("topic").cloned().unwrap_or_else(|| "general".into()),
        })
        .collect();
    reply(DiaryEntries::Page { agent, entries, showing: page.entries.len(), total: page.total })
}

/// `mempalace_diary_read`: the newest entries, or a note that there are
/// none.
#[derive(Serialize)]
#[serde(untagged)]
enum DiaryEntries {
    /// Entries, newest first.
    Page { agent: String, entries: Vec<DiaryLine>, showing: usize, total: usize },
    /// No entry yet.
    Empty { agent: String, entries: Vec<DiaryLine>, message: &'static str },
}

/// A `mempalace_diary_read` entry.
#[derive(Serialize)]
struct DiaryLine {
    content: String,
    /// The entry's `date` (as written), else its filing day.
    date: Value,
    entry_id: String,
    timestamp: String,
    /// The entry's `topic` (as written), else `general`.
    topic: Value,
}

/// `mempalace_reconnect`: the drawer count now.
#[derive(Serialize)]
struct Reconnected {
    drawers: u64,
    message: &'static str,
    success: bool,
    vector_disabled: bool,
    /// Always empty.
    vector_disabled_reason: &'static str,
}

fn reconnect(backend: &Backend, _: NoParams) -> ToolResult {
    let palace = backend.palace();
    let drawers = palace.taxonomy()?.total_drawers;
    reply(Reconnected {
        drawers,
        message: "Reconnected to palace",
        success: true,
        vector_disabled: backend.embedder_settled() && backend.palace().embedder().is_none(),
        vector_disabled_reason: "",
    })
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
    reply(WakeUpText { tokens: text.len().div_ceil(4), text })
}

/// `mempalace_wake_up`: L0 and L1 as one text, with a token estimate.
#[derive(Serialize)]
struct WakeUpText {
    text: String,
    /// Characters / 4, rounded up.
    tokens: usize,
}
