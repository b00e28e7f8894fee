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
use serde::Deserialize;
use serde_json::{Value, json};

use super::mempalace::{FindTunnels, NoParams, direction, graph_stats, kg_stats, room_not_found, round, tunnel_rooms};
use super::{content, date, drawer_id, failure, opt_room, opt_wing, preview, required_text, room, ts, wing, within};
use crate::context::Backend;
use crate::registry::{Family, ToolError, ToolResult, ToolSpec};
use crate::shapes;

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

fn wings(taxonomy: &Taxonomy) -> Vec<Value> {
    taxonomy.wings.iter().map(|(w, c)| json!({"wing": w, "count": c.drawers})).collect()
}

fn rooms(taxonomy: &Taxonomy, only: Option<&str>) -> Vec<Value> {
    taxonomy
        .wings
        .iter()
        .filter(|(w, _)| only.is_none_or(|o| o == w.as_str()))
        .flat_map(|(w, c)| c.rooms.iter().map(move |(r, n)| json!({"wing": w, "room": r, "count": n})))
        .collect()
}

fn status(backend: &Backend, _: NoParams) -> ToolResult {
    let status = backend.palace().status()?;
    let taxonomy = &status.taxonomy;
    let mut out = json!({"total_drawers": taxonomy.total_drawers, "wings": wings(taxonomy), "rooms": rooms(taxonomy, None),
        "pipeline": shapes::pipeline(&status.pipeline)});
    if let Some(queue) = backend.queue_status() {
        out["ingest_queue"] = json!(queue);
    }
    if let Some(usage) = backend.palace().llm().and_then(|llm| llm.usage_report()) {
        out["llm"] = usage;
    }
    Ok(out)
}

fn list_wings(backend: &Backend, _: NoParams) -> ToolResult {
    Ok(json!({"wings": wings(&backend.palace().status()?.taxonomy)}))
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
    Ok(json!({"rooms": rooms(&taxonomy, wing.as_ref().map(|w| w.as_str()))}))
}

fn get_taxonomy(backend: &Backend, _: NoParams) -> ToolResult {
    Ok(json!({"taxonomy": shapes::taxonomy(&backend.palace().status()?.taxonomy)}))
}

fn brief(hit: &SearchHit) -> Value {
    let d = &hit.drawer;
    json!({
        "id": d.id.as_str(), "wing": d.wing.as_str(), "room": d.room.as_str(), "content": d.content.as_str(),
        "memory_type": d.memory_type.map(|t| t.as_str()), "importance": d.importance.get(),
        "similarity": hit.similarity.map(|s| round(f64::from(s), 4)), "score": round(hit.score, 4),
        "filed_at": ts(&d.filed_at),
    })
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
    let results: Vec<Value> = outcome.hits.iter().map(brief).collect();
    let (mode, reason) = match &outcome.mode {
        SearchMode::Hybrid => ("hybrid", None),
        SearchMode::LexicalOnly(reason) => ("lexical", Some(reason.clone())),
    };
    let mut answer = json!({"results": results, "count": outcome.hits.len(), "mode": mode, "degraded_reason": reason});
    if p.include_episodes {
        let user = viewer.as_deref();
        let hits = backend.palace().search_episodes(
            query,
            outcome.query_vector.as_ref(),
            user,
            EPISODES_IN_SEARCH,
            EPISODE_RELEVANCE,
        )?;
        answer["episodes"] = hits.iter().map(crate::shapes::episode_hit).collect();
    }
    Ok(answer)
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
        let mut entry = json!({
            "id": d.id.as_str(), "wing": d.wing.as_str(), "room": d.room.as_str(),
            "content": preview(d.content.as_str(), 200), "memory_type": d.memory_type.map(|t| t.as_str()),
            "importance": d.importance.get(), "similarity": round(f64::from(s), 4), "filed_at": ts(&d.filed_at),
        });
        match mempalace_core::dedup::judge(text, d.content.as_str()) {
            mempalace_core::dedup::Verdict::Duplicate => duplicates.push(entry),
            mempalace_core::dedup::Verdict::Distinct(differs) => {
                entry["differs"] = json!(differs);
                similar.push(entry);
            }
        }
    }
    let mut value = json!({"has_duplicate": !duplicates.is_empty(), "duplicates": duplicates, "similar": similar});
    if palace.embedder().is_none() {
        value["degraded_reason"] = json!("no embedding model is available; similarity cannot be checked");
    }
    Ok(value)
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
    Ok(json!({"rooms": reached.iter().map(shapes::reached).collect::<Vec<_>>(), "count": reached.len()}))
}

fn find_tunnels(backend: &Backend, p: FindTunnels) -> ToolResult {
    let rooms = tunnel_rooms(backend, p)?;
    let tunnels: Vec<Value> =
        rooms.iter().map(|r| json!({"room": r.room, "wings": r.wings, "halls": r.halls, "count": r.count})).collect();
    Ok(json!({"tunnels": tunnels, "count": rooms.len()}))
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
        Ok(()) => Ok(json!({"success": true, "queued": true, "ingest_queue": backend.queue_status()})),
        Err(SubmitError::QueueFull) => Err(ToolError::Failed(json!({
            "success": false,
            "queued": false,
            "error": "the ingestion queue is full: nothing was filed; retry later, or file without background",
            "ingest_queue": backend.queue_status(),
        }))),
        Err(SubmitError::ShutDown) => Err(failure("the server is shutting down: nothing was filed")),
    })
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
    Ok(json!({"drawer_id": id.as_str(), "memory_type": memory_type, "chunks": report.chunks.len(), "info": info}))
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
    request.context.insert("unit".into(), json!("exchange"));
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
        Ok(()) => Ok(json!({"deleted": true, "info": "drawer deleted"})),
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
    Ok(json!({"info": "identity set"}))
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
    Ok(json!({"entity": entity, "results": facts.iter().map(shapes::fact).collect::<Vec<_>>(), "count": facts.len()}))
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
    Ok(json!({"triple_id": outcome.id(), "info": info}))
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
    Ok(json!({"info": "triple invalidated", "count": count}))
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
    Ok(json!({"events": facts.iter().map(shapes::fact).collect::<Vec<_>>(), "count": facts.len()}))
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
    Ok(json!({"drawer_id": id.as_str(), "info": "diary entry written"}))
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
    let entries: Vec<Value> = page
        .entries
        .iter()
        .map(|d| {
            json!({"id": d.id.as_str(), "content": d.content.as_str(), "hall": d.hall.as_ref().map(|h| h.as_str()),
                   "topic": d.room.as_str(), "filed_at": ts(&d.filed_at)})
        })
        .collect();
    Ok(json!({"entries": entries, "count": page.entries.len(), "total": page.total}))
}
