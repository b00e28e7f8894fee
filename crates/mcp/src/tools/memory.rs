//! Seed 0's `memory_*` tools (the Crawbl memory palace): the same names
//! and parameters, with lowercase result keys. Diary entries live in wing
//! `diary` with the agent as hall (SPEC §2); drawer deletion is soft, with
//! a reason, so a wrong delete can be reviewed.

use mempalace_core::time::DayEdge;
use mempalace_core::{Hall, Identity};
use mempalace_engine::drawers::DiaryEntry;
use mempalace_engine::{ChunkOutcome, DeleteMode, EngineError, IngestRequest, SearchHit, SearchMode, SearchRequest};
use mempalace_store::{DrawerFilter, Taxonomy};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::mempalace::{FindTunnels, NoParams, direction, graph_stats, kg_stats, room_not_found, round, tunnel_rooms};
use super::{
    content, date, drawer_id, failure, opt_room, opt_wing, preview, reply, required_text, room, ts, wing, within,
};
use crate::context::{Backend, QueueStatus};
use crate::registry::{Family, ToolError, ToolResult, ToolSpec};
use crate::shapes::{EpisodeShape, FactShape, PipelineShape, ReachedShape, TaxonomyTree, TunnelRoomShape};

const F: Family = Family::Memory;
/// Wing of every `memory_diary_write` entry.
const DIARY_WING: &str = "diary";

/// The tools of this family.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new("memory_status", F, "Get memory palace status: total drawer count, wings, and rooms.", status)
            .read_only(),
        ToolSpec::new(
            "memory_list_wings",
            F,
            "List all wings (top-level categories) in the memory palace with drawer counts.",
            list_wings,
        )
        .read_only(),
        ToolSpec::new(
            "memory_list_rooms",
            F,
            "List rooms in the memory palace, optionally filtered by wing.",
            list_rooms,
        )
        .read_only(),
        ToolSpec::new(
            "memory_get_taxonomy",
            F,
            "Get the full taxonomy tree: wings with their rooms and drawer counts.",
            get_taxonomy,
        )
        .read_only(),
        ToolSpec::new(
            "memory_search",
            F,
            "Search memory drawers by meaning and keywords. Returns the most relevant memories for a query.",
            search,
        )
        .read_only(),
        ToolSpec::new(
            "memory_check_duplicate",
            F,
            "Check if content already exists in memory by semantic similarity. Returns similar existing drawers \
             above the threshold (default 0.9).",
            check_duplicate,
        )
        .read_only(),
        ToolSpec::new(
            "memory_traverse",
            F,
            "Walk the memory palace graph from a starting room, discovering rooms connected through shared wings \
             and tunnels.",
            traverse,
        )
        .read_only(),
        ToolSpec::new(
            "memory_find_tunnels",
            F,
            "Find rooms that bridge two or more wings (cross-cutting concepts). Optionally filter by a wing pair.",
            find_tunnels,
        )
        .read_only(),
        ToolSpec::new(
            "memory_graph_stats",
            F,
            "Get palace graph statistics: total rooms, tunnel rooms, edges, and rooms per wing.",
            graph_stats,
        )
        .read_only(),
        ToolSpec::new(
            "memory_add_drawer",
            F,
            "Store a new memory in the palace. Specify wing and room for organization. Content is classified, \
             embedded for semantic search, and checked against near-duplicates.",
            add_drawer,
        ),
        ToolSpec::new(
            "memory_ingest_turn",
            F,
            "File one conversation turn (the user's message and the reply) as a memory without waiting: the \
             server's ingestion pool classifies, embeds and de-duplicates it. Chatter is dropped. Answers at once; \
             a full queue is refused (retry later).",
            ingest_turn,
        ),
        ToolSpec::new(
            "memory_delete_drawer",
            F,
            "Delete a memory drawer by its ID (hidden from search and kept for review, with the reason).",
            delete_drawer,
        ),
        ToolSpec::new(
            "memory_set_identity",
            F,
            "Set or update the workspace identity text. This is the L0 layer: a concise description of who the \
             user is and their core context.",
            set_identity,
        ),
        ToolSpec::new(
            "memory_kg_query",
            F,
            "Query the knowledge graph for all relationships of an entity. Returns incoming, outgoing, or both \
             directions, optionally as of a date.",
            kg_query,
        )
        .read_only(),
        ToolSpec::new(
            "memory_kg_add",
            F,
            "Add a relationship triple to the knowledge graph. Subject and object entities are auto-created if \
             they don't exist.",
            kg_add,
        ),
        ToolSpec::new(
            "memory_kg_invalidate",
            F,
            "Mark a knowledge graph relationship as no longer valid. Sets the end date on the triple.",
            kg_invalidate,
        ),
        ToolSpec::new(
            "memory_kg_timeline",
            F,
            "View knowledge graph facts in chronological order. Optionally filter by entity.",
            kg_timeline,
        )
        .read_only(),
        ToolSpec::new(
            "memory_kg_stats",
            F,
            "Get knowledge graph statistics: entity count, triple count, current vs expired facts, and \
             relationship types.",
            kg_stats,
        )
        .read_only(),
        ToolSpec::new(
            "memory_diary_write",
            F,
            "Write a diary entry for an agent: a private journal within the shared memory (wing 'diary', hall = \
             the agent).",
            diary_write,
        ),
        ToolSpec::new(
            "memory_diary_read",
            F,
            "Read recent diary entries for an agent. Returns entries newest-first.",
            diary_read,
        )
        .read_only(),
    ]
}

/// A wing and its drawer count.
#[derive(Serialize)]
struct WingCount {
    count: u64,
    wing: String,
}

/// A room of a wing and its drawer count.
#[derive(Serialize)]
struct RoomCount {
    count: u64,
    room: String,
    wing: String,
}

fn wings(taxonomy: &Taxonomy) -> Vec<WingCount> {
    taxonomy.wings.iter().map(|(w, c)| WingCount { count: c.drawers, wing: w.clone() }).collect()
}

fn rooms(taxonomy: &Taxonomy, only: Option<&str>) -> Vec<RoomCount> {
    taxonomy
        .wings
        .iter()
        .filter(|(w, _)| only.is_none_or(|o| o == w.as_str()))
        .flat_map(|(w, c)| c.rooms.iter().map(move |(r, n)| RoomCount { count: *n, room: r.clone(), wing: w.clone() }))
        .collect()
}

fn status(backend: &Backend, _: NoParams) -> ToolResult {
    let status = backend.palace().status()?;
    let taxonomy = &status.taxonomy;
    reply(MemoryStatus {
        ingest_queue: backend.queue_status(),
        llm: backend.palace().llm().and_then(|llm| llm.usage_report()),
        pipeline: PipelineShape::of(&status.pipeline),
        rooms: rooms(taxonomy, None),
        total_drawers: taxonomy.total_drawers,
        wings: wings(taxonomy),
    })
}

/// `memory_status`: counts, the cold path, the ingestion queue and the
/// language model's usage.
#[derive(Serialize)]
struct MemoryStatus {
    /// Absent without an ingestion pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    ingest_queue: Option<QueueStatus>,
    /// The model client's own report; absent without one.
    #[serde(skip_serializing_if = "Option::is_none")]
    llm: Option<Value>,
    pipeline: PipelineShape,
    rooms: Vec<RoomCount>,
    total_drawers: u64,
    wings: Vec<WingCount>,
}

/// `memory_list_wings`.
#[derive(Serialize)]
struct WingList {
    wings: Vec<WingCount>,
}

/// `memory_list_rooms`.
#[derive(Serialize)]
struct RoomList {
    rooms: Vec<RoomCount>,
}

fn list_wings(backend: &Backend, _: NoParams) -> ToolResult {
    reply(WingList { wings: wings(&backend.palace().status()?.taxonomy) })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListRooms {
    /// Optional wing filter
    #[serde(default)]
    wing: Option<String>,
}

fn list_rooms(backend: &Backend, p: ListRooms) -> ToolResult {
    let wing = opt_wing("wing", p.wing.as_deref())?;
    let taxonomy = backend.palace().status()?.taxonomy;
    reply(RoomList { rooms: rooms(&taxonomy, wing.as_ref().map(|w| w.as_str())) })
}

fn get_taxonomy(backend: &Backend, _: NoParams) -> ToolResult {
    reply(TaxonomyTree::of(&backend.palace().status()?.taxonomy))
}

/// A drawer as `memory_search` and `memory_check_duplicate` list it.
#[derive(Serialize)]
struct DrawerBrief {
    /// The text (its first 200 characters in a duplicate check).
    content: String,
    /// What the text checked adds to the drawer (duplicate checks, when it
    /// adds something).
    #[serde(skip_serializing_if = "Option::is_none")]
    differs: Option<Vec<String>>,
    filed_at: String,
    id: String,
    importance: f64,
    memory_type: Option<&'static str>,
    room: String,
    /// The search's score (searches only).
    #[serde(skip_serializing_if = "Option::is_none")]
    score: Option<f64>,
    /// Cosine similarity, 4 places (null: found by keywords only).
    similarity: Option<f64>,
    wing: String,
}

impl DrawerBrief {
    fn of(d: &mempalace_core::Drawer, content: String, similarity: Option<f32>) -> Self {
        Self {
            content,
            differs: None,
            filed_at: ts(&d.filed_at),
            id: d.id.as_str().to_string(),
            importance: d.importance.get(),
            memory_type: d.memory_type.map(|t| t.as_str()),
            room: d.room.as_str().to_string(),
            score: None,
            similarity: similarity.map(|s| round(f64::from(s), 4)),
            wing: d.wing.as_str().to_string(),
        }
    }
}

fn brief(hit: &SearchHit) -> DrawerBrief {
    let d = &hit.drawer;
    DrawerBrief {
        score: Some(round(hit.score, 4)),
        ..DrawerBrief::of(d, d.content.as_str().to_string(), hit.similarity)
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Search {
    /// What to look for: keywords or a short question
    query: String,
    /// Results to return (default 5, at most 100)
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    limit: Option<i64>,
    /// Only this wing (optional)
    #[serde(default)]
    wing: Option<String>,
    /// Only this room (optional)
    #[serde(default)]
    room: Option<String>,
    /// Search as this user: their private drawers and memories too, their own ranked 1.2× higher (optional)
    #[serde(default)]
    user_id: Option<String>,
    /// Also return the most relevant episodic summaries, each with its session to drill down (default false)
    #[serde(default)]
    include_episodes: bool,
    /// With user_id: answer from that user's own memory only, and from the shared memory when nothing of
    /// theirs matches (optional, default false)
    #[serde(default)]
    user_first: Option<bool>,
}

fn search(backend: &Backend, p: Search) -> ToolResult {
    let query = required_text("query", &p.query)?;
    let limit =
        mempalace_core::layers::ResultLimit::new(p.limit.unwrap_or(5)).map_err(|e| ToolError::param("limit", e))?;
    let wing = opt_wing("wing", p.wing.as_deref())?;
    let room = opt_room("room", p.room.as_deref())?;
    let viewer = p.user_id.clone().filter(|u| !u.trim().is_empty());
    let filter = DrawerFilter {
        wings: wing.iter().map(|w| w.as_str().to_string()).collect(),
        rooms: room.iter().map(|r| r.as_str().to_string()).collect(),
        viewer: viewer.clone(),
        ..DrawerFilter::default()
    };
    let outcome = backend.palace().search(&SearchRequest {
        query: query.to_string(),
        limit,
        filter,
        user_first: p.user_first.unwrap_or(false),
        ..SearchRequest::default()
    })?;
    let (mode, reason) = match &outcome.mode {
        SearchMode::Hybrid => ("hybrid", None),
        SearchMode::LexicalOnly(reason) => ("lexical", Some(reason.clone())),
    };
    let mut answer = MemorySearch {
        count: outcome.hits.len(),
        degraded_reason: reason,
        episodes: None,
        mode,
        results: outcome.hits.iter().map(brief).collect(),
    };
    if p.include_episodes {
        let user = viewer.as_deref();
        let hits = backend.palace().search_episodes(
            query,
            outcome.query_vector.as_ref(),
            user,
            EPISODES_IN_SEARCH,
            EPISODE_RELEVANCE,
        )?;
        answer.episodes = Some(hits.iter().map(EpisodeShape::hit).collect());
    }
    reply(answer)
}

/// `memory_search`: the hits, and how the search ran.
#[derive(Serialize)]
struct MemorySearch {
    count: usize,
    /// Why vectors could not be used (null: they were).
    degraded_reason: Option<String>,
    /// Related episodes, when asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    episodes: Option<Vec<EpisodeShape>>,
    /// `hybrid` or `lexical`.
    mode: &'static str,
    results: Vec<DrawerBrief>,
}

/// Episodes `memory_search` adds with `include_episodes`, at most.
const EPISODES_IN_SEARCH: usize = 3;
/// …and only from this relevance up (the auto-injector's threshold).
const EPISODE_RELEVANCE: f64 = 0.3;

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CheckDuplicate {
    /// Content to check
    content: String,
    /// Similarity threshold 0–1 (default 0.9)
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    threshold: Option<f64>,
}

fn check_duplicate(backend: &Backend, p: CheckDuplicate) -> ToolResult {
    let text = required_text("content", &p.content)?;
    let threshold = within("threshold", p.threshold.unwrap_or(0.9), 0.0, 1.0)?;
    let palace = backend.palace();
    // Resembling drawers the text adds something to are listed apart: it is
    // a new fact, not a duplicate (the rule filing uses).
    let (mut duplicates, mut similar) = (Vec::new(), Vec::new());
    for (d, s) in palace.similar(text, 5)?.into_iter().filter(|(_, s)| f64::from(*s) >= threshold) {
        let entry = DrawerBrief::of(&d, preview(d.content.as_str(), 200), Some(s));
        match mempalace_core::dedup::judge(text, d.content.as_str()) {
            mempalace_core::dedup::Verdict::Duplicate => duplicates.push(entry),
            mempalace_core::dedup::Verdict::Distinct(differs) => {
                similar.push(DrawerBrief { differs: Some(differs), ..entry });
            }
        }
    }
    reply(DuplicateReport {
        degraded_reason: palace
            .embedder()
            .is_none()
            .then_some("no embedding model is available; similarity cannot be checked"),
        has_duplicate: !duplicates.is_empty(),
        duplicates,
        similar,
    })
}

/// `memory_check_duplicate`: drawers the text adds nothing to, and
/// resembling ones it adds to.
#[derive(Serialize)]
struct DuplicateReport {
    /// Why nothing could be compared; absent when vectors were used.
    #[serde(skip_serializing_if = "Option::is_none")]
    degraded_reason: Option<&'static str>,
    duplicates: Vec<DrawerBrief>,
    has_duplicate: bool,
    similar: Vec<DrawerBrief>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Traverse {
    /// Room to start from
    start_room: String,
    /// Hops to follow (default 3, at most 5)
    #[serde(default)]
    #[schemars(range(min = 1, max = 5))]
    max_hops: Option<i64>,
}

fn traverse(backend: &Backend, p: Traverse) -> ToolResult {
    let start = required_text("start_room", &p.start_room)?;
    let hops = within("max_hops", p.max_hops.unwrap_or(3), 1, 5)? as usize;
    let reached = backend.palace().traverse(start, Some(hops)).map_err(room_not_found)?;
    reply(RoomsReached { count: reached.len(), rooms: reached.iter().map(ReachedShape::of).collect() })
}

/// `memory_traverse`: the rooms reached.
#[derive(Serialize)]
struct RoomsReached {
    count: usize,
    rooms: Vec<ReachedShape>,
}

fn find_tunnels(backend: &Backend, p: FindTunnels) -> ToolResult {
    let rooms = tunnel_rooms(backend, p)?;
    reply(TunnelRooms { count: rooms.len(), tunnels: rooms.iter().map(TunnelRoomShape::without_recent).collect() })
}

/// `memory_find_tunnels`: rooms bridging wings.
#[derive(Serialize)]
struct TunnelRooms {
    count: usize,
    tunnels: Vec<TunnelRoomShape>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct AddDrawer {
    /// Wing (top-level category, e.g. a project)
    wing: String,
    /// Room (topic within the wing)
    room: String,
    /// The memory, verbatim (at most 10,000 characters)
    content: String,
    /// Where it came from (optional)
    #[serde(default)]
    source_file: Option<String>,
    /// Who files it (optional)
    #[serde(default)]
    added_by: Option<String>,
    /// Queue it and answer at once (the server's ingestion pool files it;
    /// the answer cannot say whether it was a duplicate). Default false.
    #[serde(default)]
    background: bool,
}

/// Queues a request in the server's ingestion pool: `Some(answer)`, or
/// `None` when the server runs no pool (the caller files it at once).
fn queue(backend: &Backend, request: IngestRequest) -> Option<ToolResult> {
    use mempalace_engine::pool::SubmitError;
    let pool = backend.ingest_pool()?;
    Some(match pool.submit(request) {
        Ok(()) => reply(Queued { ingest_queue: backend.queue_status(), queued: true, success: true }),
        Err(SubmitError::QueueFull) => Err(ToolError::Failed(json!({
            "success": false,
            "queued": false,
            "error": "the ingestion queue is full: nothing was filed; retry later, or file without background",
            "ingest_queue": backend.queue_status(),
        }))),
        Err(SubmitError::ShutDown) => Err(failure("the server is shutting down: nothing was filed")),
    })
}

/// A text accepted by the ingestion pool (filed later).
#[derive(Serialize)]
struct Queued {
    ingest_queue: Option<QueueStatus>,
    queued: bool,
    success: bool,
}

fn add_drawer(backend: &Backend, p: AddDrawer) -> ToolResult {
    let text = content("content", &p.content)?;
    let mut request = IngestRequest::new(
        wing("wing", &p.wing)?,
        room("room", &p.room)?,
        text.as_str(),
        p.added_by.unwrap_or_else(|| "mcp".into()),
    );
    request.source_file = p.source_file.filter(|s| !s.trim().is_empty());
    if p.background {
        let unqueued = request.clone();
        if let Some(answer) = queue(backend, request) {
            return answer;
        }
        request = unqueued;
    }
    file_now(backend, request)
}

/// Files a request and answers with what became of its first chunk.
fn file_now(backend: &Backend, request: IngestRequest) -> ToolResult {
    let palace = backend.palace();
    let report = palace.ingest(request)?;
    if report.noise {
        return Err(failure("the content looks like tool output or chatter; nothing was filed"));
    }
    let Some(first) = report.chunks.first() else {
        return Err(failure("nothing to file"));
    };
    let (id, info) = match first {
        ChunkOutcome::Filed(id) => (id.clone(), "drawer added"),
        ChunkOutcome::FiledNear { id, .. } => {
            (id.clone(), "drawer added beside a similar one it adds to (linked by cluster_id)")
        }
        ChunkOutcome::AlreadyFiled(id) => (id.clone(), "drawer already present"),
        ChunkOutcome::Duplicate { existing, .. } => {
            (existing.clone(), "near-duplicate of an existing drawer; not filed")
        }
    };
    let memory_type = palace.drawer(&id).ok().and_then(|d| d.memory_type).map(|t| t.as_str());
    reply(FiledNow { chunks: report.chunks.len(), drawer_id: id.as_str().to_string(), info, memory_type })
}

/// A text filed at once (`memory_add_drawer`, `memory_ingest_turn`).
#[derive(Serialize)]
struct FiledNow {
    chunks: usize,
    /// The first drawer (or the one it duplicates).
    drawer_id: String,
    info: &'static str,
    memory_type: Option<&'static str>,
}

/// An acknowledgement: `{"info": …}` plus what it is about.
#[derive(Serialize)]
struct Done {
    /// `memory_kg_invalidate`: facts ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    count: Option<usize>,
    /// `memory_delete_drawer`: always true.
    #[serde(skip_serializing_if = "Option::is_none")]
    deleted: Option<bool>,
    /// `memory_diary_write`: the entry's drawer.
    #[serde(skip_serializing_if = "Option::is_none")]
    drawer_id: Option<String>,
    info: &'static str,
    /// `memory_kg_add`: the fact.
    #[serde(skip_serializing_if = "Option::is_none")]
    triple_id: Option<String>,
}

impl Done {
    fn info(info: &'static str) -> Self {
        Self { count: None, deleted: None, drawer_id: None, info, triple_id: None }
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct IngestTurn {
    /// Wing (e.g. the project or the agent's user)
    wing: String,
    /// Room (default "conversations")
    #[serde(default)]
    room: Option<String>,
    /// What the user said
    user: String,
    /// What the agent answered
    assistant: String,
    /// Who files it (default "mcp")
    #[serde(default)]
    agent: Option<String>,
    /// The conversation's id (kept with the drawer)
    #[serde(default)]
    session_id: Option<String>,
}

fn ingest_turn(backend: &Backend, p: IngestTurn) -> ToolResult {
    let user = required_text("user", &p.user)?;
    let assistant = required_text("assistant", &p.assistant)?;
    let text = format!("user: {}\nassistant: {}", user.trim(), assistant.trim());
    let text = content("user and assistant", &text)?;
    let room = match p.room.as_deref() {
        Some(name) => room("room", name)?,
        None => room("room", "conversations")?,
    };
    let mut request =
        IngestRequest::new(wing("wing", &p.wing)?, room, text.as_str(), p.agent.unwrap_or_else(|| "mcp".into()));
    request.session_id = p.session_id.filter(|s| !s.trim().is_empty());
    request.context.insert("unit".into(), "exchange".into());
    match queue(backend, request.clone()) {
        Some(answer) => answer,
        None => file_now(backend, request),
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DeleteDrawer {
    /// ID of the drawer
    drawer_id: String,
    /// Why it is deleted (kept with the drawer)
    #[serde(default)]
    reason: Option<String>,
}

fn delete_drawer(backend: &Backend, p: DeleteDrawer) -> ToolResult {
    let id = drawer_id("drawer_id", &p.drawer_id)?;
    // A paragraph of a memory file leaves its file too (the drawer is kept, hidden).
    match mempalace_feed::memory::delete_drawer(backend.palace(), &id, DeleteMode::Soft { reason: p.reason }) {
        Ok(()) => reply(Done { deleted: Some(true), ..Done::info("drawer deleted") }),
        Err(mempalace_feed::FeedError::Engine(EngineError::NotFound { .. })) => Err(ToolError::Failed(
            json!({"deleted": false, "error": format!("drawer not found: {id}"), "info": "failed to delete drawer"}),
        )),
        Err(other) => Err(other.into()),
    }
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SetIdentity {
    /// Who the user is and their core context (at most 2,000 characters)
    content: String,
}

fn set_identity(backend: &Backend, p: SetIdentity) -> ToolResult {
    let identity = Identity::parse(p.content.as_str()).map_err(|e| ToolError::param("content", e))?;
    backend.palace().set_identity(&identity)?;
    reply(Done::info("identity set"))
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct KgQuery {
    /// Entity name
    entity: String,
    /// Only facts valid at this date (YYYY-MM-DD or RFC 3339)
    #[serde(default)]
    as_of: Option<String>,
    /// outgoing, incoming or both (default both)
    #[serde(default)]
    direction: Option<String>,
}

fn kg_query(backend: &Backend, p: KgQuery) -> ToolResult {
    let entity = required_text("entity", &p.entity)?;
    let as_of = date("as_of", p.as_of.as_deref(), DayEdge::Start)?;
    let facts = backend.palace().kg_query(entity, as_of, direction(p.direction.as_deref())?)?;
    reply(EntityFacts {
        count: facts.len(),
        entity: entity.to_string(),
        results: facts.iter().map(FactShape::of).collect(),
    })
}

/// `memory_kg_query`: an entity's facts.
#[derive(Serialize)]
struct EntityFacts {
    count: usize,
    entity: String,
    results: Vec<FactShape>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct KgAdd {
    /// Subject entity
    subject: String,
    /// Relation, e.g. uses, works_at
    predicate: String,
    /// Object entity
    object: String,
    /// Start of validity (YYYY-MM-DD or RFC 3339)
    #[serde(default)]
    valid_from: Option<String>,
    /// Source drawer/closet ID (optional)
    #[serde(default)]
    source_closet: Option<String>,
}

fn kg_add(backend: &Backend, p: KgAdd) -> ToolResult {
    let from = date("valid_from", p.valid_from.as_deref(), DayEdge::Start)?;
    let source_drawer = p
        .source_closet
        .as_deref()
        .filter(|s| s.starts_with("drawer_"))
        .map(|s| drawer_id("source_closet", s))
        .transpose()?;
    let outcome = backend.palace().kg_add(
        required_text("subject", &p.subject)?,
        required_text("predicate", &p.predicate)?,
        required_text("object", &p.object)?,
        from,
        None,
        None,
        source_drawer,
        Some("mcp".into()),
    )?;
    let info = if matches!(outcome, mempalace_store::TripleOutcome::Existing(_)) {
        "triple already current"
    } else {
        "triple added"
    };
    reply(Done { triple_id: Some(outcome.id().to_string()), ..Done::info(info) })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct KgInvalidate {
    /// Subject entity
    subject: String,
    /// Relation
    predicate: String,
    /// Object entity
    object: String,
    /// When it ended (YYYY-MM-DD or RFC 3339; default now)
    #[serde(default)]
    ended: Option<String>,
}

fn kg_invalidate(backend: &Backend, p: KgInvalidate) -> ToolResult {
    let ended = date("ended", p.ended.as_deref(), DayEdge::End)?;
    let count = backend.palace().kg_invalidate(
        required_text("subject", &p.subject)?,
        required_text("predicate", &p.predicate)?,
        required_text("object", &p.object)?,
        ended,
    )?;
    if count == 0 {
        return Err(ToolError::Failed(json!({"info": "no current triple matched", "count": 0})));
    }
    reply(Done { count: Some(count), ..Done::info("triple invalidated") })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct KgTimeline {
    /// Entity (optional; all facts when omitted)
    #[serde(default)]
    entity: Option<String>,
}

fn kg_timeline(backend: &Backend, p: KgTimeline) -> ToolResult {
    let entity = p.entity.as_deref().map(str::trim).filter(|e| !e.is_empty());
    let facts = backend.palace().kg_timeline(entity)?;
    reply(FactEvents { count: facts.len(), events: facts.iter().map(FactShape::of).collect() })
}

/// `memory_kg_timeline`: facts in time order.
#[derive(Serialize)]
struct FactEvents {
    count: usize,
    events: Vec<FactShape>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DiaryWrite {
    /// The agent writing
    agent_name: String,
    /// The entry (at most 10,000 characters)
    entry: String,
    /// Topic tag (optional); becomes the room
    #[serde(default)]
    topic: Option<String>,
}

fn agent_hall(agent: &str) -> Result<Hall, ToolError> {
    Hall::parse(&agent.to_lowercase()).map_err(|e| ToolError::param("agent_name", e))
}

fn diary_write(backend: &Backend, p: DiaryWrite) -> ToolResult {
    let agent = required_text("agent_name", &p.agent_name)?.to_lowercase();
    let topic = p.topic.as_deref().map(str::trim).filter(|t| !t.is_empty()).unwrap_or("general").to_string();
    let id = backend.palace().diary_write(DiaryEntry {
        hall: Some(agent_hall(&agent)?),
        agent,
        text: content("entry", &p.entry)?,
        room: room("topic", &topic)?,
        topic,
        wing: wing("wing", DIARY_WING)?,
        context: serde_json::Map::new(),
    })?;
    reply(Done { drawer_id: Some(id.as_str().to_string()), ..Done::info("diary entry written") })
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct DiaryRead {
    /// The agent
    agent_name: String,
    /// Entries to return (default 10, at most 100)
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    last_n: Option<i64>,
}

fn diary_read(backend: &Backend, p: DiaryRead) -> ToolResult {
    let agent = required_text("agent_name", &p.agent_name)?;
    let last_n = within("last_n", p.last_n.unwrap_or(10), 1, 100)? as usize;
    let page = backend.palace().diary_read(agent, Some(DIARY_WING), None, last_n)?;
    let entries = page
        .entries
        .iter()
        .map(|d| DiaryLine {
            content: d.content.as_str().to_string(),
            filed_at: ts(&d.filed_at),
            hall: d.hall.as_ref().map(|h| h.as_str().to_string()),
            id: d.id.as_str().to_string(),
            topic: d.room.as_str().to_string(),
        })
        .collect();
    reply(DiaryPage { count: page.entries.len(), entries, total: page.total })
}

/// `memory_diary_read`: the newest entries.
#[derive(Serialize)]
struct DiaryPage {
    count: usize,
    entries: Vec<DiaryLine>,
    total: usize,
}

/// A `memory_diary_read` entry.
#[derive(Serialize)]
struct DiaryLine {
    content: String,
    filed_at: String,
    /// The agent.
    hall: Option<String>,
    id: String,
    /// The room it is filed in.
    topic: String,
}
