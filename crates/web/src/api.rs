//! The REST API, version 1 (`/api/v1`): drawers, search with a score
//! breakdown per result, taxonomy, the knowledge graph, the palace graph,
//! diaries, sessions and episodes, jobs, conflicts, export and import, and
//! health — each a thin handler over one engine call, run on tokio's
//! blocking pool with the palace handle scoped to the request's caller
//! (docs/tenancy.md). docs/rest-api.md describes every route;
//! `/api/v1/openapi.json` is generated from the table in [`crate::openapi`].

use axum::Json;
use axum::body::Body;
use axum::extract::rejection::{JsonRejection, QueryRejection, StringRejection};
use axum::extract::{Extension, Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use mempalace_core::layers::ResultLimit;
use mempalace_core::time::{DayEdge, format_timestamp};
use mempalace_core::{Content, Drawer, DrawerId, DrawerStatus, Hall, Importance, Room, Wing};
use mempalace_engine::drawers::DrawerUpdate;
use mempalace_engine::{AddOutcome, DeleteMode, Fusion, NewDrawer, Palace, SearchRequest};
use mempalace_mcp::Backend;
use mempalace_mcp::server::RequestScope;
use mempalace_mcp::shapes::{EpisodeShape, GraphStatsShape, KgStatsShape, PipelineShape, TunnelShape};
use mempalace_store::{Direction, DrawerFilter};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::problem::Problem;

/// Result of a handler.
pub type ApiResult<T> = Result<T, Problem>;

/// Runs `work` on the blocking pool with the palace scoped to the caller.
async fn with_palace<T: Send + 'static>(
    backend: Backend,
    scope: RequestScope,
    work: impl FnOnce(&Palace) -> ApiResult<T> + Send + 'static,
) -> ApiResult<T> {
    tokio::task::spawn_blocking(move || {
        let backend = backend.scoped(&scope.caller, scope.workspace.as_ref())?;
        work(backend.palace())
    })
    .await
    .map_err(Problem::internal)?
}

pub(crate) fn query<T>(query: Result<Query<T>, QueryRejection>) -> ApiResult<T> {
    query.map(|Query(q)| q).map_err(|e| Problem::bad_request(format!("query string: {}", e.body_text())))
}

pub(crate) fn body<T>(body: Result<Json<T>, JsonRejection>) -> ApiResult<T> {
    body.map(|Json(b)| b).map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => Problem::too_large(),
        _ => Problem::bad_request(format!("request body: {}", e.body_text())),
    })
}

/// A text body (the JSONL import): over the limit or not UTF-8 is a problem
/// like any other.
fn text_body(text: Result<String, StringRejection>) -> ApiResult<String> {
    text.map_err(|e| match e.status() {
        StatusCode::PAYLOAD_TOO_LARGE => Problem::too_large(),
        _ => Problem::bad_request(format!("request body: {}; send UTF-8 JSON lines", e.body_text())),
    })
}

fn drawer_id(text: &str) -> ApiResult<DrawerId> {
    Ok(DrawerId::parse(text)?)
}

fn ts(at: Option<&mempalace_core::Timestamp>) -> Option<String> {
    at.map(format_timestamp)
}

/// A drawer as the API returns it (vectors left out).
#[derive(Debug, Serialize, JsonSchema)]
pub struct DrawerView {
    /// Id.
    pub id: String,
    /// Workspace.
    pub workspace: String,
    /// Wing.
    pub wing: String,
    /// Room.
    pub room: String,
    /// Hall.
    pub hall: Option<String>,
    /// The verbatim text.
    pub content: String,
    /// decision, preference, milestone, problem, emotional, fact or task.
    pub memory_type: Option<String>,
    /// 0–5.
    pub importance: f64,
    /// 0–1.
    pub confidence: f64,
    /// active, superseded, invalidated or archived.
    pub status: String,
    /// Why it is not active.
    pub status_reason: Option<String>,
    /// Cold-path state: raw, processed, merged, failed.
    pub state: String,
    /// Which tier classified it.
    pub pipeline_tier: String,
    /// The newer drawer that supersedes it.
    pub superseded_by: Option<String>,
    /// The cluster of near-duplicates it belongs to.
    pub cluster_id: Option<String>,
    /// Where it came from.
    pub source_file: Option<String>,
    /// Who filed it.
    pub added_by: String,
    /// The user it is private to, if any.
    pub owner: Option<String>,
    /// The session it was filed in.
    pub session_id: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Entities it mentions.
    pub entities: Vec<String>,
    /// Filed.
    pub filed_at: String,
    /// Last changed.
    pub updated_at: String,
    /// Last returned by a search.
    pub last_accessed_at: Option<String>,
    /// Times returned by searches.
    pub access_count: u64,
    /// Whether it carries a vector.
    pub embedded: bool,
    /// robotmem context.
    pub context: serde_json::Map<String, Value>,
}

impl From<&Drawer> for DrawerView {
    fn from(d: &Drawer) -> Self {
        Self {
            id: d.id.to_string(),
            workspace: d.workspace_id.to_string(),
            wing: d.wing.to_string(),
            room: d.room.to_string(),
            hall: d.hall.as_ref().map(|h| h.to_string()),
            content: d.content.as_str().to_string(),
            memory_type: d.memory_type.map(|t| t.as_str().to_string()),
            importance: d.importance.get(),
            confidence: d.confidence.get(),
            status: d.status.as_str().to_string(),
            status_reason: d.status_reason.clone(),
            state: d.state.as_str().to_string(),
            pipeline_tier: d.pipeline_tier.as_str().to_string(),
            superseded_by: d.superseded_by.as_ref().map(|id| id.to_string()),
            cluster_id: d.cluster_id.as_ref().map(|id| id.to_string()),
            source_file: d.source_file.clone(),
            added_by: d.added_by.clone(),
            owner: d.owner_user_id.clone(),
            session_id: d.session_id.clone(),
            tags: d.tags.iter().map(|t| t.tag.clone()).collect(),
            entities: d.entities.clone(),
            filed_at: format_timestamp(&d.filed_at),
            updated_at: format_timestamp(&d.updated_at),
            last_accessed_at: ts(d.last_accessed_at.as_ref()),
            access_count: d.access_count,
            embedded: d.embedding.is_some(),
            context: d.context.clone(),
        }
    }
}

/// `GET /api/v1/health`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Health {
    /// "ok".
    pub status: String,
    /// sqlite or postgres.
    pub backend: String,
    /// Schema version of the palace.
    pub schema_version: u32,
    /// The workspace answered for.
    pub workspace: String,
    /// Visible drawers in it.
    pub drawers: u64,
    /// Who is calling (`local` or a user or agent id).
    pub caller: String,
    /// This server's version.
    pub version: String,
}

pub(crate) async fn health(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
) -> ApiResult<Json<Health>> {
    let caller = scope.caller.actor().to_string();
    with_palace(backend, scope, move |palace| {
        let status = palace.status()?;
        Ok(Json(Health {
            status: "ok".into(),
            backend: status.storage.backend.to_string(),
            schema_version: status.storage.schema_version,
            workspace: status.workspace.to_string(),
            drawers: status.taxonomy.total_drawers,
            caller,
            version: env!("CARGO_PKG_VERSION").to_string(),
        }))
    })
    .await
}

/// A wing and its rooms with counts.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WingView {
    /// Wing.
    pub wing: String,
    /// Visible drawers in it.
    pub drawers: u64,
    /// Rooms, by name, with their counts.
    pub rooms: Vec<RoomCount>,
}

/// A room's count.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RoomCount {
    /// Room.
    pub room: String,
    /// Visible drawers in it.
    pub drawers: u64,
}

/// `GET /api/v1/taxonomy`: the palace map.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TaxonomyView {
    /// The workspace.
    pub workspace: String,
    /// Visible drawers.
    pub total_drawers: u64,
    /// Wings by name.
    pub wings: Vec<WingView>,
}

pub(crate) async fn taxonomy(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
) -> ApiResult<Json<TaxonomyView>> {
    with_palace(backend, scope, |palace| {
        let taxonomy = palace.taxonomy()?;
        Ok(Json(TaxonomyView {
            workspace: palace.workspace().to_string(),
            total_drawers: taxonomy.total_drawers,
            wings: taxonomy
                .wings
                .iter()
                .map(|(wing, counts)| WingView {
                    wing: wing.clone(),
                    drawers: counts.drawers,
                    rooms: counts.rooms.iter().map(|(room, n)| RoomCount { room: room.clone(), drawers: *n }).collect(),
                })
                .collect(),
        }))
    })
    .await
}

/// Query of `GET /api/v1/drawers`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DrawerListQuery {
    /// Only this wing.
    pub wing: Option<String>,
    /// Only this room.
    pub room: Option<String>,
    /// `active` (default) or `hidden` (superseded, invalidated and archived
    /// drawers: the trash and the history).
    pub status: Option<String>,
    /// Skip this many (default 0).
    pub offset: Option<usize>,
    /// At most this many (1–200, default 50).
    pub limit: Option<usize>,
}

/// `GET /api/v1/drawers`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DrawerList {
    /// This page, newest first.
    pub drawers: Vec<DrawerView>,
    /// Drawers matching in all (for `hidden`: those found, at most 1,000).
    pub total: u64,
    /// The offset of the next page, when there is one.
    pub next_offset: Option<usize>,
}

/// Most hidden drawers a listing looks at.
const HIDDEN_SCAN: usize = 1_000;

pub(crate) async fn list_drawers(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    q: Result<Query<DrawerListQuery>, QueryRejection>,
) -> ApiResult<Json<DrawerList>> {
    let q = query(q)?;
    let offset = q.offset.unwrap_or(0);
    let limit = q.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(Problem::bad_request(format!("limit {limit}: use 1 to 200")));
    }
    with_palace(backend, scope, move |palace| {
        let (drawers, total) = match q.status.as_deref().unwrap_or("active") {
            "active" => {
                let page = palace.page_drawers(q.wing.as_deref(), q.room.as_deref(), offset, limit)?;
                (page.drawers, page.total)
            }
            "hidden" => {
                let hidden = hidden_drawers(palace, q.wing.as_deref(), q.room.as_deref())?;
                let total = hidden.len() as u64;
                (hidden.into_iter().skip(offset).take(limit).collect(), total)
            }
            other => return Err(Problem::bad_request(format!("status {other:?}: use active or hidden"))),
        };
        let next = offset + drawers.len();
        Ok(Json(DrawerList {
            next_offset: (next < total as usize && !drawers.is_empty()).then_some(next),
            drawers: drawers.iter().map(DrawerView::from).collect(),
            total,
        }))
    })
    .await
}

/// Superseded, invalidated and archived drawers, newest change first.
fn hidden_drawers(palace: &Palace, wing: Option<&str>, room: Option<&str>) -> ApiResult<Vec<Drawer>> {
    let filter = DrawerFilter {
        wings: wing.iter().map(|w| w.to_string()).collect(),
        rooms: room.iter().map(|r| r.to_string()).collect(),
        include_hidden: true,
        ..DrawerFilter::default()
    };
    let ids = palace.store().filtered_ids(palace.workspace(), &filter)?;
    let mut hidden: Vec<Drawer> = Vec::new();
    for chunk in ids.chunks(500) {
        hidden.extend(
            palace.store().drawers(palace.workspace(), chunk)?.into_iter().filter(|d| d.status != DrawerStatus::Active),
        );
        if hidden.len() >= HIDDEN_SCAN {
            break;
        }
    }
    hidden.sort_by(|a, b| b.updated_at.cmp(&a.updated_at).then_with(|| a.id.cmp(&b.id)));
    hidden.truncate(HIDDEN_SCAN);
    Ok(hidden)
}

pub(crate) async fn get_drawer(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    Path(id): Path<String>,
) -> ApiResult<Json<DrawerView>> {
    let id = drawer_id(&id)?;
    with_palace(backend, scope, move |palace| {
        let drawer = palace
            .store()
            .drawer(palace.workspace(), &id)?
            .ok_or_else(|| Problem::not_found(format!("drawer not found: {id}")))?;
        Ok(Json(DrawerView::from(&drawer)))
    })
    .await
}

/// Body of `POST /api/v1/drawers`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewDrawerBody {
    /// Wing.
    pub wing: String,
    /// Room.
    pub room: String,
    /// The verbatim text (at most 10,000 characters).
    pub content: String,
    /// Hall.
    pub hall: Option<String>,
    /// decision, preference, milestone, problem, emotional, fact or task
    /// (default: the classifier decides).
    pub memory_type: Option<String>,
    /// 0–5 (default 3).
    pub importance: Option<f64>,
    /// Tags.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Where it came from.
    pub source_file: Option<String>,
}

/// `POST /api/v1/drawers`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Created {
    /// The drawer's id.
    pub id: String,
    /// False when the same text was already filed there (nothing changed).
    pub created: bool,
}

pub(crate) async fn add_drawer(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    payload: Result<Json<NewDrawerBody>, JsonRejection>,
) -> ApiResult<Response> {
    let b = body(payload)?;
    let added_by = format!("api:{}", scope.caller.actor());
    let new = NewDrawer {
        wing: Wing::parse(&b.wing)?,
        room: Room::parse(&b.room)?,
        hall: b.hall.as_deref().map(Hall::parse).transpose()?,
        content: Content::parse(&b.content)?,
        memory_type: b
            .memory_type
            .as_deref()
            .map(|t| {
                t.parse::<mempalace_core::MemoryType>()
                    .map_err(|_| Problem::bad_request(format!("memory_type {t:?} is not a memory type")))
            })
            .transpose()?,
        importance: b.importance.map(Importance::new).transpose()?,
        confidence: None,
        source_file: b.source_file,
        added_by,
        tags: b.tags,
    };
    with_palace(backend, scope, move |palace| {
        let outcome = palace.add_drawer(new)?;
        let created = matches!(outcome, AddOutcome::Added(_));
        let status = if created { StatusCode::CREATED } else { StatusCode::OK };
        Ok((status, Json(Created { id: outcome.id().to_string(), created })).into_response())
    })
    .await
}

/// Body of `PATCH /api/v1/drawers/{id}`: what to change.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DrawerPatch {
    /// New text (the id stays).
    pub content: Option<String>,
    /// Move to this wing.
    pub wing: Option<String>,
    /// Move to this room.
    pub room: Option<String>,
    /// New confidence, 0–1.
    pub confidence: Option<f64>,
    /// Re-run the classifier on the new text.
    #[serde(default)]
    pub reclassify: bool,
}

pub(crate) async fn edit_drawer(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    Path(id): Path<String>,
    payload: Result<Json<DrawerPatch>, JsonRejection>,
) -> ApiResult<Json<DrawerView>> {
    let id = drawer_id(&id)?;
    let p = body(payload)?;
    let update = DrawerUpdate {
        content: p.content.as_deref().map(Content::parse).transpose()?,
        wing: p.wing.as_deref().map(Wing::parse).transpose()?,
        room: p.room.as_deref().map(Room::parse).transpose()?,
        reclassify: p.reclassify,
        confidence: p.confidence.map(mempalace_core::Confidence::new).transpose()?,
        context: serde_json::Map::new(),
    };
    with_palace(backend, scope, move |palace| Ok(Json(DrawerView::from(&palace.update_drawer(&id, update)?)))).await
}

/// Query of `DELETE /api/v1/drawers/{id}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteQuery {
    /// Remove the row for good (default: hide it, restorable).
    #[serde(default)]
    pub hard: bool,
    /// Why (kept with a soft-deleted drawer).
    pub reason: Option<String>,
}

pub(crate) async fn delete_drawer(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    Path(id): Path<String>,
    q: Result<Query<DeleteQuery>, QueryRejection>,
) -> ApiResult<StatusCode> {
    let id = drawer_id(&id)?;
    let q = query(q)?;
    let mode = if q.hard { DeleteMode::Hard } else { DeleteMode::Soft { reason: q.reason } };
    with_palace(backend, scope, move |palace| {
        palace.delete_drawer(&id, mode)?;
        Ok(StatusCode::NO_CONTENT)
    })
    .await
}

pub(crate) async fn restore_drawer(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    Path(id): Path<String>,
) -> ApiResult<Json<DrawerView>> {
    let id = drawer_id(&id)?;
    with_palace(backend, scope, move |palace| Ok(Json(DrawerView::from(&palace.restore(&id)?)))).await
}

/// Query of `GET /api/v1/search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchQuery {
    /// The query.
    pub q: String,
    /// Results (1–100, default 10).
    pub limit: Option<usize>,
    /// Only this wing.
    pub wing: Option<String>,
    /// Only this room.
    pub room: Option<String>,
    /// weighted (default), rrf or seed0.
    pub fusion: Option<String>,
}

/// Why a result scored what it did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ScoreBreakdown {
    /// The fusion used (weighted, rrf, seed0).
    pub fusion: String,
    /// Cosine similarity of the query and the drawer (vector signal).
    pub vector: Option<f32>,
    /// BM25 score (keyword signal), when the drawer matched lexically.
    pub bm25: Option<f64>,
    /// BM25 as evidence, `1 − exp(−BM25 / 18)`.
    pub lexical: f64,
    /// Knowledge-graph score (0–1) and its weighted share.
    pub graph: f64,
    /// The graph score's share of the evidence (0.2 × graph).
    pub graph_weighted: f64,
    /// 0.3 when the query names a date and the drawer was filed within
    /// three days of it (weighted fusion), else 0.
    pub date: f64,
    /// Seed 0's recency factor (seed0 fusion).
    pub recency: Option<f64>,
    /// Rank-fusion score (rrf fusion).
    pub rrf: Option<f64>,
    /// A re-ranker's score (none configured).
    pub rerank: Option<f64>,
    /// Score before multipliers.
    pub base: f64,
    /// × 1.5 for a real-world memory.
    pub real_world: Option<f64>,
    /// × 1.2 for the caller's own drawer or personal workspace.
    pub owner_boost: Option<f64>,
    /// The final score.
    pub score: f64,
}

/// One search result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchResult {
    /// The drawer.
    pub drawer: DrawerView,
    /// Final score (weighted fusion: 0–1 evidence, comparable across queries).
    pub score: f64,
    /// Why.
    pub breakdown: ScoreBreakdown,
}

/// `GET /api/v1/search`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchResults {
    /// The query as searched.
    pub query: String,
    /// hybrid, or lexical with the reason vectors were not used.
    pub mode: String,
    /// Candidates considered.
    pub candidates: usize,
    /// Best first.
    pub results: Vec<SearchResult>,
}

pub(crate) async fn search(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    q: Result<Query<SearchQuery>, QueryRejection>,
) -> ApiResult<Json<SearchResults>> {
    let q = query(q)?;
    if q.q.trim().is_empty() {
        return Err(Problem::bad_request("q is empty; give the words to search for"));
    }
    let limit = ResultLimit::new(q.limit.unwrap_or(10) as i64)?;
    let fusion = match q.fusion.as_deref().unwrap_or("weighted") {
        "weighted" => Fusion::Weighted,
        "rrf" => Fusion::Rrf,
        "seed0" | "importance" => Fusion::Seed0,
        other => return Err(Problem::bad_request(format!("fusion {other:?}: use weighted, rrf or seed0"))),
    };
    let request = SearchRequest {
        query: q.q.clone(),
        limit,
        filter: DrawerFilter {
            wings: q.wing.iter().cloned().collect(),
            rooms: q.room.iter().cloned().collect(),
            ..DrawerFilter::default()
        },
        fusion,
        ..SearchRequest::default()
    };
    with_palace(backend, scope, move |palace| {
        let outcome = palace.search(&request)?;
        let fusion_name = |f: Fusion| match f {
            Fusion::Weighted => "weighted",
            Fusion::Rrf => "rrf",
            Fusion::Seed0 => "seed0",
        };
        Ok(Json(SearchResults {
            query: request.query.clone(),
            mode: match &outcome.mode {
                mempalace_engine::SearchMode::Hybrid => "hybrid".to_string(),
                mempalace_engine::SearchMode::LexicalOnly(why) => format!("lexical ({why})"),
            },
            candidates: outcome.candidates,
            results: outcome
                .hits
                .iter()
                .map(|hit| SearchResult {
                    drawer: DrawerView::from(&hit.drawer),
                    score: hit.score,
                    breakdown: ScoreBreakdown {
                        fusion: fusion_name(hit.parts.fusion).to_string(),
                        vector: hit.similarity,
                        bm25: hit.bm25,
                        lexical: hit.parts.lexical,
                        graph: hit.parts.graph,
                        graph_weighted: hit.parts.graph_weighted,
                        date: hit.parts.date,
                        recency: hit.parts.recency,
                        rrf: hit.parts.rrf,
                        rerank: hit.parts.rerank,
                        base: hit.parts.base,
                        real_world: hit.parts.real_world,
                        owner_boost: hit.parts.owner_boost,
                        score: hit.score,
                    },
                })
                .collect(),
        }))
    })
    .await
}

/// A knowledge-graph fact.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FactView {
    /// Id.
    pub id: String,
    /// outgoing or incoming, relative to the entity asked about.
    pub direction: String,
    /// Subject.
    pub subject: String,
    /// Relation.
    pub predicate: String,
    /// Object.
    pub object: String,
    /// Start (date or time), if known.
    pub valid_from: Option<String>,
    /// End; null while current.
    pub valid_to: Option<String>,
    /// Whether it holds now.
    pub current: bool,
    /// 0–1.
    pub confidence: f64,
    /// The drawer it came from.
    pub source_drawer_id: Option<String>,
}

impl From<&mempalace_engine::kg::Fact> for FactView {
    fn from(f: &mempalace_engine::kg::Fact) -> Self {
        Self {
            id: f.id.clone(),
            direction: f.direction.to_string(),
            subject: f.subject.clone(),
            predicate: f.predicate.clone(),
            object: f.object.clone(),
            valid_from: mempalace_engine::kg::fact_time(f.valid_from.as_ref()),
            valid_to: mempalace_engine::kg::fact_time(f.valid_to.as_ref()),
            current: f.current,
            confidence: f.confidence,
            source_drawer_id: f.source_drawer_id.as_ref().map(|id| id.to_string()),
        }
    }
}

/// Facts about an entity, or a timeline.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Facts {
    /// The entity asked about, if any.
    pub entity: Option<String>,
    /// The facts (a timeline: in time order).
    pub facts: Vec<FactView>,
}

/// Query of `GET /api/v1/kg/entities/{name}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityQuery {
    /// Facts true at this date (default: every fact, current or not).
    pub as_of: Option<String>,
    /// out, in or both (default both).
    pub direction: Option<String>,
}

pub(crate) async fn kg_entity(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    Path(name): Path<String>,
    q: Result<Query<EntityQuery>, QueryRejection>,
) -> ApiResult<Json<Facts>> {
    let q = query(q)?;
    let as_of = mempalace_engine::kg::parse_date(q.as_of.as_deref(), "as_of", DayEdge::End)?;
    let direction = match q.direction.as_deref().unwrap_or("both") {
        "out" | "outgoing" => Direction::Outgoing,
        "in" | "incoming" => Direction::Incoming,
        "both" => Direction::Both,
        other => return Err(Problem::bad_request(format!("direction {other:?}: use out, in or both"))),
    };
    with_palace(backend, scope, move |palace| {
        let facts = palace.kg_query(&name, as_of, direction)?;
        Ok(Json(Facts { entity: Some(name), facts: facts.iter().map(FactView::from).collect() }))
    })
    .await
}

/// Query of `GET /api/v1/kg/entities`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EntityListQuery {
    /// Only entities whose name contains this (case-insensitive).
    pub q: Option<String>,
    /// Skip this many (default 0).
    pub offset: Option<usize>,
    /// At most this many (1–500, default 100).
    pub limit: Option<usize>,
}

/// An entity with how much it is used.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EntityView {
    /// Id.
    pub id: String,
    /// Name.
    pub name: String,
    /// person, project, technology, …
    pub entity_type: String,
    /// Facts naming it.
    pub facts: u64,
    /// Drawers mentioning it.
    pub mentions: u64,
}

/// `GET /api/v1/kg/entities`: most used first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EntityList {
    /// This page.
    pub entities: Vec<EntityView>,
    /// Entities matching in all.
    pub total: u64,
    /// The offset of the next page, when there is one.
    pub next_offset: Option<usize>,
}

pub(crate) async fn kg_entities(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    q: Result<Query<EntityListQuery>, QueryRejection>,
) -> ApiResult<Json<EntityList>> {
    let q = query(q)?;
    let offset = q.offset.unwrap_or(0);
    let limit = q.limit.unwrap_or(100);
    if !(1..=500).contains(&limit) {
        return Err(Problem::bad_request(format!("limit {limit}: use 1 to 500")));
    }
    let needle = q.q.as_deref().map(str::to_lowercase).filter(|n| !n.trim().is_empty());
    with_palace(backend, scope, move |palace| {
        let store = palace.store();
        let usage: std::collections::HashMap<String, (u64, u64)> =
            store.entity_usage(palace.workspace())?.into_iter().map(|u| (u.id, (u.triples, u.mentions))).collect();
        let mut entities: Vec<EntityView> = store
            .entities(palace.workspace())?
            .into_iter()
            .filter(|e| needle.as_ref().is_none_or(|n| e.name.to_lowercase().contains(n.as_str())))
            .map(|e| {
                let (facts, mentions) = usage.get(&e.id).copied().unwrap_or((0, 0));
                EntityView { id: e.id, name: e.name, entity_type: e.entity_type, facts, mentions }
            })
            .collect();
        entities.sort_by(|a, b| (b.facts + b.mentions).cmp(&(a.facts + a.mentions)).then_with(|| a.name.cmp(&b.name)));
        let total = entities.len() as u64;
        let page: Vec<EntityView> = entities.into_iter().skip(offset).take(limit).collect();
        let next = offset + page.len();
        Ok(Json(EntityList {
            next_offset: (next < total as usize && !page.is_empty()).then_some(next),
            entities: page,
            total,
        }))
    })
    .await
}

/// Query of `GET /api/v1/kg/timeline`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimelineQuery {
    /// Only facts about this entity (default: the whole graph).
    pub entity: Option<String>,
}

pub(crate) async fn kg_timeline(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    q: Result<Query<TimelineQuery>, QueryRejection>,
) -> ApiResult<Json<Facts>> {
    let q = query(q)?;
    with_palace(backend, scope, move |palace| {
        let facts = palace.kg_timeline(q.entity.as_deref())?;
        Ok(Json(Facts { entity: q.entity, facts: facts.iter().map(FactView::from).collect() }))
    })
    .await
}

/// Body of `POST /api/v1/kg/facts`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewFact {
    /// Subject entity.
    pub subject: String,
    /// Relation (normalised to snake_case).
    pub predicate: String,
    /// Object entity or value.
    pub object: String,
    /// Start (date or RFC 3339).
    pub valid_from: Option<String>,
    /// End, if it already ended.
    pub valid_to: Option<String>,
    /// 0–1 (default 1).
    pub confidence: Option<f64>,
    /// The drawer it comes from.
    pub source_drawer_id: Option<String>,
}

/// What adding a fact did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FactAdded {
    /// The fact's id.
    pub id: String,
    /// False when the same fact was already recorded.
    pub created: bool,
}

pub(crate) async fn kg_add(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    payload: Result<Json<NewFact>, JsonRejection>,
) -> ApiResult<Response> {
    let f = body(payload)?;
    let from = mempalace_engine::kg::parse_date(f.valid_from.as_deref(), "valid_from", DayEdge::Start)?;
    let to = mempalace_engine::kg::parse_date(f.valid_to.as_deref(), "valid_to", DayEdge::End)?;
    let source = f.source_drawer_id.as_deref().map(drawer_id).transpose()?;
    with_palace(backend, scope, move |palace| {
        let outcome = palace.kg_add(&f.subject, &f.predicate, &f.object, from, to, f.confidence, source, None)?;
        let (id, created) = match outcome {
            mempalace_store::TripleOutcome::Added(id) => (id, true),
            mempalace_store::TripleOutcome::Existing(id) => (id, false),
            mempalace_store::TripleOutcome::Dated { id, .. } => (id, true),
        };
        let status = if created { StatusCode::CREATED } else { StatusCode::OK };
        Ok((status, Json(FactAdded { id, created })).into_response())
    })
    .await
}

/// Body of `POST /api/v1/kg/invalidate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Invalidate {
    /// Subject.
    pub subject: String,
    /// Relation.
    pub predicate: String,
    /// Object.
    pub object: String,
    /// When it stopped being true (default now).
    pub ended: Option<String>,
}

/// What invalidating did.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Invalidated {
    /// Current facts ended.
    pub invalidated: usize,
}

pub(crate) async fn kg_invalidate(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    payload: Result<Json<Invalidate>, JsonRejection>,
) -> ApiResult<Json<Invalidated>> {
    let i = body(payload)?;
    let ended = mempalace_engine::kg::parse_date(i.ended.as_deref(), "ended", DayEdge::Start)?;
    with_palace(backend, scope, move |palace| {
        let n = palace.kg_invalidate(&i.subject, &i.predicate, &i.object, ended)?;
        Ok(Json(Invalidated { invalidated: n }))
    })
    .await
}

pub(crate) async fn kg_stats(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
) -> ApiResult<Json<KgStatsShape>> {
    with_palace(backend, scope, |palace| Ok(Json(KgStatsShape::of(&palace.kg_stats()?)))).await
}

/// The palace graph: MemPalace's `graph_stats` shape plus the explicit
/// tunnels.
#[derive(Debug, Serialize)]
pub struct Graph {
    /// The statistics.
    #[serde(flatten)]
    pub stats: GraphStatsShape,
    /// Every explicit tunnel.
    pub tunnels: Vec<TunnelShape>,
}

pub(crate) async fn graph(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
) -> ApiResult<Json<Graph>> {
    with_palace(backend, scope, |palace| {
        let stats = GraphStatsShape::of(&palace.graph_stats()?);
        let tunnels = palace.list_tunnels(None)?.iter().map(TunnelShape::of).collect();
        Ok(Json(Graph { stats, tunnels }))
    })
    .await
}

/// Query of `GET /api/v1/diaries/{agent}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiaryQuery {
    /// Newest entries to return (1–200, default 20).
    pub last: Option<usize>,
}

/// An agent's diary.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Diary {
    /// The agent.
    pub agent: String,
    /// Entries in all.
    pub total: usize,
    /// Newest first.
    pub entries: Vec<DrawerView>,
}

pub(crate) async fn diary(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    Path(agent): Path<String>,
    q: Result<Query<DiaryQuery>, QueryRejection>,
) -> ApiResult<Json<Diary>> {
    let last = query(q)?.last.unwrap_or(20).clamp(1, 200);
    with_palace(backend, scope, move |palace| {
        let page = palace.diary_read(&agent, None, None, last)?;
        Ok(Json(Diary { agent, total: page.total, entries: page.entries.iter().map(DrawerView::from).collect() }))
    })
    .await
}

pub(crate) async fn sessions(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
) -> ApiResult<Json<Value>> {
    with_palace(backend, scope, |palace| {
        let mut sessions = palace.store().sessions(palace.workspace())?;
        sessions.sort_by_key(|s| std::cmp::Reverse(s.started_at));
        let list: Vec<Value> = sessions
            .iter()
            .map(|s| {
                serde_json::json!({
                    "id": s.id, "agent": s.agent, "user_id": s.user_id, "status": s.status.as_str(),
                    "started_at": format_timestamp(&s.started_at), "ended_at": ts(s.ended_at.as_ref()),
                    "outcome_score": s.outcome_score, "context": s.context,
                })
            })
            .collect();
        Ok(Json(serde_json::json!({ "sessions": list })))
    })
    .await
}

/// Query of `GET /api/v1/episodes`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EpisodeQuery {
    /// Rank by meaning against this query (default: newest first).
    pub q: Option<String>,
    /// At most this many (default 20).
    pub limit: Option<usize>,
}

pub(crate) async fn episodes(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    q: Result<Query<EpisodeQuery>, QueryRejection>,
) -> ApiResult<Json<Value>> {
    let q = query(q)?;
    let limit = q.limit.unwrap_or(20).clamp(1, 200);
    with_palace(backend, scope, move |palace| {
        let user = palace.principal_id().map(str::to_string);
        let list: Vec<EpisodeShape> = match q.q.as_deref().filter(|t| !t.trim().is_empty()) {
            Some(text) => {
                palace.search_episodes(text, None, user.as_deref(), limit, 0.0)?.iter().map(EpisodeShape::hit).collect()
            }
            None => palace.episodes(user.as_deref())?.iter().take(limit).map(EpisodeShape::of).collect(),
        };
        Ok(Json(serde_json::json!({ "episodes": list })))
    })
    .await
}

pub(crate) async fn episode(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    Path(id): Path<String>,
) -> ApiResult<Json<EpisodeShape>> {
    with_palace(backend, scope, move |palace| Ok(Json(EpisodeShape::detail(&palace.episode(&id)?)))).await
}

pub(crate) async fn jobs(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
) -> ApiResult<Json<PipelineShape>> {
    with_palace(backend, scope, |palace| Ok(Json(PipelineShape::of(&palace.pipeline_counts()?)))).await
}

/// `GET /api/v1/conflicts`: what the cold path set aside.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Conflicts {
    /// Drawers a newer one contradicted, with the newer one.
    pub superseded: Vec<ConflictPair>,
    /// Near-duplicates merged into a cluster, with the drawer kept.
    pub merged: Vec<ConflictPair>,
}

/// A set-aside drawer and the drawer that won.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ConflictPair {
    /// The older or repeated drawer.
    pub drawer: DrawerView,
    /// The drawer that replaced or absorbed it, when it is still there.
    pub kept: Option<DrawerView>,
}

pub(crate) async fn conflicts(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
) -> ApiResult<Json<Conflicts>> {
    with_palace(backend, scope, |palace| {
        let filter = DrawerFilter { include_hidden: true, ..DrawerFilter::default() };
        let ids = palace.store().filtered_ids(palace.workspace(), &filter)?;
        let (mut superseded, mut merged) = (Vec::new(), Vec::new());
        for chunk in ids.chunks(500) {
            for drawer in palace.store().drawers(palace.workspace(), chunk)? {
                if drawer.status == DrawerStatus::Superseded && superseded.len() < 200 {
                    superseded.push(drawer);
                } else if drawer.state == mempalace_core::DrawerState::Merged && merged.len() < 200 {
                    merged.push(drawer);
                }
            }
        }
        let pair = |drawer: &Drawer, kept: Option<&DrawerId>| -> ApiResult<ConflictPair> {
            let kept = match kept {
                Some(id) => palace.store().drawer(palace.workspace(), id)?.as_ref().map(DrawerView::from),
                None => None,
            };
            Ok(ConflictPair { drawer: DrawerView::from(drawer), kept })
        };
        Ok(Json(Conflicts {
            superseded: superseded.iter().map(|d| pair(d, d.superseded_by.as_ref())).collect::<ApiResult<_>>()?,
            merged: merged
                .iter()
                .map(|d| pair(d, d.cluster_id.as_ref().filter(|c| **c != d.id)))
                .collect::<ApiResult<_>>()?,
        }))
    })
    .await
}

/// `GET /api/v1/export`: the workspaces the caller may read, as the JSONL
/// export format (docs/export-format.md), streamed as it is read.
pub(crate) async fn export(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
) -> ApiResult<Response> {
    let (sender, receiver) = tokio::sync::mpsc::channel::<Result<String, std::io::Error>>(64);
    let first = sender.clone();
    let (palace, header) = tokio::task::spawn_blocking(move || -> ApiResult<(Palace, String)> {
        let palace = backend.scoped(&scope.caller, scope.workspace.as_ref())?.palace().clone();
        let info = palace.store().info()?;
        let header = crate::wire::Line::Header(crate::wire::HeaderLine {
            format: crate::wire::FORMAT.to_string(),
            version: crate::wire::VERSION,
            generator: concat!("mempalace-rs ", env!("CARGO_PKG_VERSION")).to_string(),
            schema_version: info.schema_version,
            exported_at: format_timestamp(&palace.now()),
        });
        Ok((palace, serde_json::to_string(&header).map_err(Problem::internal)? + "\n"))
    })
    .await
    .map_err(Problem::internal)??;
    tokio::task::spawn_blocking(move || {
        if first.blocking_send(Ok(header)).is_err() {
            return;
        }
        let result = palace.export_all(&mut |record| {
            let line = serde_json::to_string(&crate::wire::to_line(&record)).map_err(std::io::Error::other)? + "\n";
            first.blocking_send(Ok(line)).map_err(|_| std::io::Error::other("the client went away"))
        });
        if let Err(error) = result {
            tracing::warn!(%error, "the export stopped");
            let _ = first.blocking_send(Err(std::io::Error::other(error.to_string())));
        }
    });
    drop(sender);
    let stream = tokio_stream::wrappers::ReceiverStream::new(receiver);
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-ndjson"),
            (header::CONTENT_DISPOSITION, "attachment; filename=\"palace.jsonl\""),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}

/// `POST /api/v1/import`: what was imported.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Imported {
    /// Records written.
    pub inserted: u64,
    /// Records already present (left as they were).
    pub existing: u64,
}

pub(crate) async fn import(
    State(backend): State<Backend>,
    Extension(scope): Extension<RequestScope>,
    text: Result<String, StringRejection>,
) -> ApiResult<Json<Imported>> {
    let text = text_body(text)?;
    with_palace(backend, scope, move |palace| {
        let mut records = Vec::new();
        for (index, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let number = index + 1;
            let parsed: crate::wire::Line = serde_json::from_str(line)
                .map_err(|e| Problem::bad_request(format!("line {number}: not an export line: {e}")))?;
            if let crate::wire::Line::Header(header) = &parsed {
                if header.format != crate::wire::FORMAT || header.version > crate::wire::VERSION {
                    return Err(Problem::bad_request(format!(
                        "line {number}: not a {} file of version {} or older",
                        crate::wire::FORMAT,
                        crate::wire::VERSION
                    )));
                }
                continue;
            }
            if let Some(record) =
                crate::wire::from_line(&parsed).map_err(|e| Problem::bad_request(format!("line {number}: {e}")))?
            {
                records.push(record);
            }
        }
        let counts = palace.import_batch(&records)?;
        Ok(Json(Imported { inserted: counts.inserted, existing: counts.existing }))
    })
    .await
}
