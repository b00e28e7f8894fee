//! robotmem's tools for robots and other embodied agents: learn, recall
//! (with context filters and spatial ordering), perceptions, corrections
//! and sessions (episodes). A robotmem collection is a wing (default
//! `default`); memory ids are drawer ids.

use mempalace_core::filter::{ContextFilter, SpatialSort};
use mempalace_core::learn::analyze;
use mempalace_core::{Confidence, Perception, PerceptionType, Room, Wing};
use mempalace_engine::drawers::DrawerUpdate;
use mempalace_engine::{ChunkOutcome, DeleteMode, IngestRequest, SearchMode, SearchRequest};
use mempalace_store::DrawerFilter;
use schemars::JsonSchema;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::mempalace::round;
use super::{content, drawer_id, failure, json_object, preview, reply, required_text, ts, wing, within};
use crate::context::Backend;
use crate::registry::{Family, ToolError, ToolResult, ToolSpec};

const F: Family = Family::Robotmem;
/// Collection used when none is given.
const DEFAULT_COLLECTION: &str = "default";
/// Longest insight or correction, in characters.
const MAX_INSIGHT_CHARS: usize = 300;
/// Most context-filter conditions.
const MAX_FILTER_CONDITIONS: usize = 10;
/// Largest session context, in bytes.
const MAX_SESSION_CONTEXT_BYTES: usize = mempalace_core::session::Session::MAX_CONTEXT_BYTES;

/// The tools of this family.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "learn",
            F,
            "Record an experience or insight (declarative memory), e.g. 'grip_force=12.5N works best because the \
             sensor was calibrated'. Category, confidence, scope (files, entities) and tags are inferred; an exact \
             repeat is reported instead of stored twice.",
            learn,
        ),
        ToolSpec::new(
            "recall",
            F,
            "Retrieve experience: hybrid keyword + vector search. Narrow with min_confidence, session_id, \
             context_filter (JSON of dot paths, e.g. {\"task.success\": true} or {\"params.force.value\": \
             {\"$lt\": 15}}) and order by distance with spatial_sort ({\"field\": \"spatial.position\", \
             \"target\": [1.3, 0.7, 0.42], \"max_distance\": 0.1}).",
            recall,
        )
        .read_only(),
        ToolSpec::new(
            "save_perception",
            F,
            "Save a perception, trajectory or force reading (procedural memory): a description that is searched, \
             plus the raw data and its format kept with it.",
            save_perception,
        ),
        ToolSpec::new(
            "forget",
            F,
            "Delete a wrong memory (soft delete: hidden from recall, kept with the reason).",
            forget,
        ),
        ToolSpec::new(
            "update",
            F,
            "Correct a memory's content; category and confidence are inferred again and the vector rebuilt.",
            update,
        ),
        ToolSpec::new(
            "start_session",
            F,
            "Start a session (an episode), e.g. one pick-and-place run. Pass its id to learn/save_perception, \
             then end it with end_session.",
            start_session,
        ),
        ToolSpec::new(
            "end_session",
            F,
            "End a session: record the outcome, merge near-identical insights of the session, write an episodic \
             summary, and return related memories from other sessions.",
            end_session,
        ),
    ]
}

fn collection(text: Option<&str>) -> Result<Wing, ToolError> {
    wing("collection", text.map(str::trim).filter(|t| !t.is_empty()).unwrap_or(DEFAULT_COLLECTION))
}

fn bounded_text<'a>(field: &str, text: &'a str, min: usize, max: usize) -> Result<&'a str, ToolError> {
    let trimmed = text.trim();
    let n = trimmed.chars().count();
    if n < min || n > max {
        return Err(ToolError::param(field, format!("has {n} characters; use {min} to {max}")));
    }
    Ok(trimmed)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Learn {
    /// The insight, 1–300 characters
    insight: String,
    /// Context as a JSON object or a string holding one (e.g. {"task": {"success": true}})
    #[serde(default)]
    context: Option<Value>,
    /// Collection (default: default)
    #[serde(default)]
    collection: Option<String>,
    /// Session this belongs to (from start_session)
    #[serde(default)]
    session_id: Option<String>,
}

fn learn(backend: &Backend, p: Learn) -> ToolResult {
    let insight = bounded_text("insight", &p.insight, 1, MAX_INSIGHT_CHARS)?;
    let context = Value::Object(json_object("context", p.context.as_ref())?);
    let collection = collection(p.collection.as_deref())?;
    let session = p.session_id.as_deref().map(str::trim).filter(|s| !s.is_empty());
    let palace = backend.palace();
    if let Some(session) = session {
        palace.session(session)?;
    }
    let learned = palace.learn(insight, &collection, Some(&context), session)?;
    match learned.report.chunks.first() {
        Some(outcome @ (ChunkOutcome::Filed(id) | ChunkOutcome::FiledNear { id, .. })) => {
            let analysis = analyze(insight);
            reply(Learned::Created {
                auto_inferred: Inferred {
                    category: learned.category,
                    confidence: learned.confidence,
                    scope_entities: Some(analysis.scope_entities),
                    scope_files: Some(analysis.scope_files),
                    tags: Some(learned.tags),
                },
                memory_id: id.as_str().to_string(),
                similar_to: match outcome {
                    ChunkOutcome::FiledNear { near, similarity, differs, .. } => Some(SimilarTo {
                        differs: differs.clone(),
                        memory_id: near.as_str().to_string(),
                        similarity: round(f64::from(*similarity), 3),
                    }),
                    _ => None,
                },
                status: "created",
            })
        }
        Some(ChunkOutcome::AlreadyFiled(id)) => reply(Learned::Duplicate {
            existing_id: id.as_str().to_string(),
            method: "exact",
            similarity: 1.0,
            status: "duplicate",
        }),
        Some(ChunkOutcome::Duplicate { existing, similarity }) => reply(Learned::Duplicate {
            existing_id: existing.as_str().to_string(),
            method: "cosine",
            similarity: round(f64::from(*similarity), 3),
            status: "duplicate",
        }),
        None => Err(failure("nothing was filed")),
    }
}

/// `learn`: the memory filed, or the one it repeats.
#[derive(Serialize)]
#[serde(untagged)]
enum Learned {
    /// Filed as a new memory.
    Created {
        auto_inferred: Inferred,
        memory_id: String,
        /// A resembling memory it adds to; absent when there is none.
        #[serde(skip_serializing_if = "Option::is_none")]
        similar_to: Option<SimilarTo>,
        /// Always `created`.
        status: &'static str,
    },
    /// Not filed: it repeats a memory.
    Duplicate {
        existing_id: String,
        /// `exact` or `cosine`.
        method: &'static str,
        similarity: f64,
        /// Always `duplicate`.
        status: &'static str,
    },
}

/// What `learn` and `update` inferred from the text (the scope and tags in
/// `learn` only).
#[derive(Serialize)]
struct Inferred {
    category: &'static str,
    confidence: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    scope_entities: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    scope_files: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tags: Option<Vec<String>>,
}

/// A resembling memory a new one was filed beside.
#[derive(Serialize)]
struct SimilarTo {
    /// The new text's words it lacks.
    differs: Vec<String>,
    memory_id: String,
    similarity: f64,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Recall {
    /// What to recall
    query: String,
    /// Collection (default: all collections)
    #[serde(default)]
    collection: Option<String>,
    /// Results (default 5, 1–100)
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    n: Option<i64>,
    /// Lowest confidence returned (default 0.3)
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    min_confidence: Option<f64>,
    /// Only memories of this session
    #[serde(default)]
    session_id: Option<String>,
    /// JSON object of dot paths to conditions ($lt $lte $gt $gte $ne, or a value for equality), at most 10
    #[serde(default)]
    context_filter: Option<Value>,
    /// JSON object {"field": dot path, "target": [x, y, z], "max_distance": d}
    #[serde(default)]
    spatial_sort: Option<Value>,
}

fn recall(backend: &Backend, p: Recall) -> ToolResult {
    let query = required_text("query", &p.query)?;
    let n = mempalace_core::layers::ResultLimit::new(p.n.unwrap_or(5)).map_err(|e| ToolError::param("n", e))?;
    let min_confidence = within("min_confidence", p.min_confidence.unwrap_or(0.3), 0.0, 1.0)?;
    let wings = match p.collection.as_deref().map(str::trim).filter(|c| !c.is_empty()) {
        Some(c) => vec![wing("collection", c)?.as_str().to_string()],
        None => Vec::new(),
    };
    let context_filter = match p.context_filter.as_ref().filter(|v| !v.is_null()) {
        None => None,
        Some(value) => {
            let map = json_object("context_filter", Some(value))?;
            if map.len() > MAX_FILTER_CONDITIONS {
                return Err(ToolError::param(
                    "context_filter",
                    format!("has {} conditions; use at most {MAX_FILTER_CONDITIONS}", map.len()),
                ));
            }
            Some(ContextFilter::parse(&Value::Object(map)).map_err(|e| ToolError::param("context_filter", e))?)
        }
    };
    let spatial = match p.spatial_sort.as_ref().filter(|v| !v.is_null()) {
        None => None,
        Some(value) => {
            let map = json_object("spatial_sort", Some(value))?;
            Some(SpatialSort::parse(&Value::Object(map)).map_err(|e| ToolError::param("spatial_sort", e))?)
        }
    };
    let filter = DrawerFilter {
        wings,
        min_confidence: Some(min_confidence),
        session_id: p.session_id.filter(|s| !s.trim().is_empty()),
        ..DrawerFilter::default()
    };
    let outcome = backend.palace().search(&SearchRequest {
        query: query.to_string(),
        limit: n,
        filter,
        context_filter,
        spatial,
        ..SearchRequest::default()
    })?;
    let memories = outcome
        .hits
        .iter()
        .map(|hit| {
            let d = &hit.drawer;
            let context = |key: &str| d.context.get(key).cloned();
            Recalled {
                rrf_score: round(hit.score, 4),
                spatial_distance: hit.distance,
                access_count: d.access_count,
                category: context("category").unwrap_or_else(|| d.room.as_str().into()),
                collection: d.wing.as_str().to_string(),
                confidence: d.confidence.get(),
                content: d.content.as_str().to_string(),
                created_at: ts(&d.filed_at),
                id: d.id.as_str().to_string(),
                params: context("params"),
                perception_type: d.perception.as_ref().map(|p| p.perception_type.as_str().to_string()),
                robot: context("robot"),
                session_id: d.session_id.clone(),
                spatial: context("spatial"),
                tags: d.tags.iter().map(|t| t.tag.as_str().to_string()).collect(),
                task: context("task"),
            }
        })
        .collect();
    let mode = match outcome.mode {
        SearchMode::Hybrid => "hybrid",
        SearchMode::LexicalOnly(_) => "bm25_only",
    };
    reply(Recollection { memories, mode, total: outcome.hits.len() })
}

/// `recall`: the memories found.
#[derive(Serialize)]
struct Recollection {
    memories: Vec<Recalled>,
    /// `hybrid` or `bm25_only`.
    mode: &'static str,
    total: usize,
}

/// A memory `recall` found; the context's `params`, `spatial`, `robot` and
/// `task` are copied when present.
#[derive(Serialize)]
struct Recalled {
    #[serde(rename = "_rrf_score")]
    rrf_score: f64,
    /// Distance to the spatial sort's target, when sorting by it.
    #[serde(rename = "_spatial_distance", skip_serializing_if = "Option::is_none")]
    spatial_distance: Option<f64>,
    access_count: u64,
    /// The context's category, else the room.
    category: Value,
    collection: String,
    confidence: f64,
    content: String,
    created_at: String,
    id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<Value>,
    perception_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    robot: Option<Value>,
    session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    spatial: Option<Value>,
    tags: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    task: Option<Value>,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SavePerception {
    /// What was perceived (at least 5 characters); this is what recall searches
    description: String,
    /// visual, tactile, auditory, proprioceptive or procedural (default visual)
    #[serde(default)]
    perception_type: Option<String>,
    /// The raw data (e.g. a JSON trajectory), kept as given
    #[serde(default)]
    data: Option<String>,
    /// Format and units of the data (JSON text)
    #[serde(default)]
    metadata: Option<String>,
    /// Collection (default: default)
    #[serde(default)]
    collection: Option<String>,
    /// Session this belongs to
    #[serde(default)]
    session_id: Option<String>,
}

fn save_perception(backend: &Backend, p: SavePerception) -> ToolResult {
    let description = p.description.trim();
    if description.chars().count() < 5 {
        return Err(ToolError::param("description", "needs at least 5 characters"));
    }
    let kind: PerceptionType =
        p.perception_type.as_deref().unwrap_or("visual").parse().map_err(|e| ToolError::param("perception_type", e))?;
    let collection = collection(p.collection.as_deref())?;
    let palace = backend.palace();
    let session = p.session_id.filter(|s| !s.trim().is_empty());
    if let Some(session) = &session {
        palace.session(session)?;
    }
    let mut request = IngestRequest::new(
        collection.clone(),
        Room::parse("perception").map_err(|e| ToolError::Internal(e.to_string()))?,
        content("description", description)?.as_str(),
        "save_perception",
    );
    request.raw = true;
    request.session_id = session;
    request.confidence = Some(Confidence::new(0.9).map_err(|e| ToolError::Internal(e.to_string()))?);
    request.context.insert("category".into(), "observation".into());
    request.perception =
        Some(Perception { perception_type: kind, data: p.data.map(String::into_bytes), metadata: p.metadata });
    let report = palace.ingest(request)?;
    let id = match report.chunks.first() {
        Some(outcome) => outcome.drawer_id().clone(),
        None => return Err(failure("nothing was filed")),
    };
    reply(PerceptionSaved {
        collection: collection.as_str().to_string(),
        has_embedding: report.degraded.is_none(),
        memory_id: id.as_str().to_string(),
        perception_type: kind.as_str().to_string(),
    })
}

/// `save_perception`: the memory filed.
#[derive(Serialize)]
struct PerceptionSaved {
    collection: String,
    /// False when no vector could be made.
    has_embedding: bool,
    memory_id: String,
    perception_type: String,
}

fn active_drawer(backend: &Backend, id: &str, field: &str) -> Result<mempalace_core::Drawer, ToolError> {
    let id = drawer_id(field, id)?;
    let drawer = backend.palace().drawer(&id).map_err(|_| failure(format!("memory {id} does not exist")))?;
    if drawer.status != mempalace_core::DrawerStatus::Active {
        return Err(failure(format!("memory {id} is {}, not active; it cannot be changed", drawer.status.as_str())));
    }
    Ok(drawer)
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Forget {
    /// ID of the memory
    memory_id: String,
    /// Why it is wrong
    reason: String,
}

fn forget(backend: &Backend, p: Forget) -> ToolResult {
    let reason = required_text("reason", &p.reason)?;
    let drawer = active_drawer(backend, &p.memory_id, "memory_id")?;
    backend.palace().delete_drawer(&drawer.id, DeleteMode::Soft { reason: Some(reason.to_string()) })?;
    reply(Forgotten {
        content: drawer.content.as_str().chars().take(100).collect(),
        memory_id: drawer.id.as_str().to_string(),
        reason: reason.to_string(),
        status: "forgotten",
    })
}

/// `forget`: the memory hidden.
#[derive(Serialize)]
struct Forgotten {
    /// Its first 100 characters.
    content: String,
    memory_id: String,
    reason: String,
    /// Always `forgotten`.
    status: &'static str,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Update {
    /// ID of the memory
    memory_id: String,
    /// The corrected content, 1–300 characters
    new_content: String,
    /// Context for inferring the category again (optional)
    #[serde(default)]
    context: Option<Value>,
}

fn update(backend: &Backend, p: Update) -> ToolResult {
    let text = bounded_text("new_content", &p.new_content, 1, MAX_INSIGHT_CHARS)?;
    json_object("context", p.context.as_ref())?;
    let drawer = active_drawer(backend, &p.memory_id, "memory_id")?;
    let analysis = analyze(text);
    let mut context = Map::new();
    context.insert("category".into(), analysis.category.into());
    context.insert("scope_files".into(), analysis.scope_files.into());
    context.insert("scope_entities".into(), analysis.scope_entities.into());
    let updated = backend.palace().update_drawer(
        &drawer.id,
        DrawerUpdate {
            content: Some(content("new_content", text)?),
            confidence: Some(Confidence::new(analysis.confidence).map_err(|e| ToolError::Internal(e.to_string()))?),
            context,
            ..DrawerUpdate::default()
        },
    )?;
    reply(Corrected {
        auto_inferred: Inferred {
            category: analysis.category,
            confidence: analysis.confidence,
            scope_entities: None,
            scope_files: None,
            tags: None,
        },
        memory_id: updated.id.as_str().to_string(),
        new_content: preview(text, 100),
        old_content: preview(drawer.content.as_str(), 100),
        status: "updated",
    })
}

/// `update`: the memory corrected.
#[derive(Serialize)]
struct Corrected {
    auto_inferred: Inferred,
    memory_id: String,
    /// The first 100 characters of each.
    new_content: String,
    old_content: String,
    /// Always `updated`.
    status: &'static str,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct StartSession {
    /// Collection (default: default)
    #[serde(default)]
    collection: Option<String>,
    /// Context JSON (object or string), e.g. {"robot_id": "arm-01", "environment": "kitchen-3F"}; at most 64 KB
    #[serde(default)]
    context: Option<Value>,
}

fn start_session(backend: &Backend, p: StartSession) -> ToolResult {
    let collection = collection(p.collection.as_deref())?;
    let mut context = json_object("context", p.context.as_ref())?;
    let size = Value::Object(context.clone()).to_string().len();
    if size > MAX_SESSION_CONTEXT_BYTES {
        return Err(ToolError::param("context", format!("is {size} bytes; at most {MAX_SESSION_CONTEXT_BYTES}")));
    }
    context.insert("collection".into(), collection.as_str().into());
    let agent = context.get("robot_id").and_then(Value::as_str).map(str::to_string);
    let palace = backend.palace();
    let session = palace.start_session(agent, context)?;
    let taxonomy = palace.taxonomy()?;
    let active = taxonomy.wings.get(collection.as_str()).map_or(0, |w| w.drawers);
    reply(SessionStarted {
        active_memories_count: active,
        collection: collection.as_str().to_string(),
        session_id: session.id,
    })
}

/// `start_session`: the session, and how many memories its collection
/// holds.
#[derive(Serialize)]
struct SessionStarted {
    active_memories_count: u64,
    collection: String,
    session_id: String,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct EndSession {
    /// The id start_session returned
    session_id: String,
    /// How well the episode went, 0–1 (optional)
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 1.0))]
    outcome_score: Option<f64>,
}

fn end_session(backend: &Backend, p: EndSession) -> ToolResult {
    let id = required_text("session_id", &p.session_id)?;
    let outcome = p.outcome_score.map(|s| within("outcome_score", s, 0.0, 1.0)).transpose()?;
    let ended = backend.palace().end_session(id, outcome)?;
    let mut by_type = BTreeMap::new();
    let mut by_category = BTreeMap::new();
    for d in &ended.drawers {
        *by_type.entry(d.memory_type.map_or("fact", |t| t.as_str()).to_string()).or_insert(0) += 1;
        let category = d.context.get("category").and_then(Value::as_str).unwrap_or(d.room.as_str()).to_string();
        *by_category.entry(category).or_insert(0) += 1;
    }
    let total = ended.drawers.len();
    let superseded = ended.superseded.len();
    reply(SessionEnded {
        consolidated: Consolidated {
            compression_ratio: if total == 0 { 0.0 } else { round(superseded as f64 / total as f64, 3) },
            merged_groups: ended.merged_groups,
            superseded: ended
                .superseded
                .iter()
                .map(|(a, b)| SupersededPair { id: a.as_str().to_string(), kept: b.as_str().to_string() })
                .collect(),
            superseded_count: superseded,
        },
        decayed_count: 0,
        episodic_summary: ended.summary.as_ref().map(|s| EpisodeBrief {
            expires_at: s.expires_at.as_ref().map(ts),
            id: s.id.clone(),
            key_topics: s.key_topics.clone(),
            l0_abstract: s.l0_abstract.clone(),
            summary: s.summary.clone(),
        }),
        outcome_score: ended.session.outcome_score,
        related_memories: ended
            .related
            .iter()
            .map(|d| RelatedMemory {
                collection: d.wing.as_str().to_string(),
                content: preview(d.content.as_str(), 200),
                id: d.id.as_str().to_string(),
                session_id: d.session_id.clone(),
            })
            .collect(),
        session_id: ended.session.id,
        status: "ended",
        summary: SessionSummary { by_category, by_type, memory_count: total },
    })
}

/// `end_session`: what the session left and how it was consolidated.
#[derive(Serialize)]
struct SessionEnded {
    consolidated: Consolidated,
    /// Always 0 (nothing decays at session end here).
    decayed_count: u32,
    /// Null when no summary was written.
    episodic_summary: Option<EpisodeBrief>,
    outcome_score: Option<f64>,
    /// Memories of other sessions on the same topics.
    related_memories: Vec<RelatedMemory>,
    session_id: String,
    /// Always `ended`.
    status: &'static str,
    summary: SessionSummary,
}

/// The session's memories, counted.
#[derive(Serialize)]
struct SessionSummary {
    by_category: BTreeMap<String, u64>,
    by_type: BTreeMap<String, u64>,
    memory_count: usize,
}

/// What consolidation at session end did.
#[derive(Serialize)]
struct Consolidated {
    /// Superseded / memories, 3 places.
    compression_ratio: f64,
    merged_groups: usize,
    superseded: Vec<SupersededPair>,
    superseded_count: usize,
}

/// A memory superseded by another of the session.
#[derive(Serialize)]
struct SupersededPair {
    id: String,
    /// The memory kept.
    kept: String,
}

/// The session's episodic summary.
#[derive(Serialize)]
struct EpisodeBrief {
    expires_at: Option<String>,
    id: String,
    key_topics: Vec<String>,
    l0_abstract: String,
    summary: String,
}

/// A memory of another session on the same topics.
#[derive(Serialize)]
struct RelatedMemory {
    collection: String,
    /// Its first 200 characters.
    content: String,
    id: String,
    session_id: Option<String>,
}
