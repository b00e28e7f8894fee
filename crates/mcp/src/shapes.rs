//! JSON shapes of the Python MemPalace's results, defined once as
//! `Serialize` types and used by the MCP tools, the CLI's `--json` output
//! (which mirrors them so scripts and agents read both alike) and the REST
//! API.
//!
//! Fields are declared in alphabetical order: serde_json is built without
//! `preserve_order`, so a result that passes through a `Value` (every MCP
//! result) has its keys sorted, and a shape printed directly (the CLI, the
//! REST API) comes out in the same order.

use std::collections::BTreeMap;

use mempalace_core::Drawer;
use mempalace_core::memory::Decision;
use mempalace_core::session::EpisodicSummary;
use mempalace_core::time::format_timestamp;
use mempalace_core::tunnel::{Place, Tunnel};
use mempalace_engine::centroids::CentroidReport;
use mempalace_engine::consolidate::{EpisodeDetail, EpisodeHit, PruneReport};
use mempalace_engine::entities::DedupReport;
use mempalace_engine::graph::{GraphStats, Reached, TunnelRoom};
use mempalace_engine::kg::{Fact, fact_time};
use mempalace_engine::memories::{ExtractPath, ExtractReport, StoredMemory};
use mempalace_store::{JobRun, KgStats, PipelineCounts, Taxonomy};
use serde::Serialize;
use serde_json::{Map, Value};

/// `{"wing": count}` and `{"room": count}` (a room summed over wings).
pub fn wing_and_room_counts(taxonomy: &Taxonomy) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
    let wings = taxonomy.wings.iter().map(|(name, wing)| (name.clone(), wing.drawers)).collect();
    (wings, room_counts(taxonomy, None))
}

/// `{"room": count}`, summed over the wings (or over one wing, `only`).
pub fn room_counts(taxonomy: &Taxonomy, only: Option<&str>) -> BTreeMap<String, u64> {
    let mut rooms = BTreeMap::new();
    for (name, wing) in &taxonomy.wings {
        if only.is_some_and(|o| o != name) {
            continue;
        }
        for (room, count) in &wing.rooms {
            *rooms.entry(room.clone()).or_insert(0) += count;
        }
    }
    rooms
}

/// `{"wing": {"room": count}}`.
pub fn taxonomy(taxonomy: &Taxonomy) -> BTreeMap<String, BTreeMap<String, u64>> {
    taxonomy.wings.iter().map(|(name, wing)| (name.clone(), wing.rooms.clone())).collect()
}

/// `{"taxonomy": {"wing": {"room": count}}}` (`mempalace_get_taxonomy`,
/// `memory_get_taxonomy`).
#[derive(Debug, Clone, Serialize)]
pub struct TaxonomyTree {
    /// [`taxonomy`].
    pub taxonomy: BTreeMap<String, BTreeMap<String, u64>>,
}

impl TaxonomyTree {
    /// The tree of `taxonomy`.
    pub fn of(taxonomy: &Taxonomy) -> Self {
        Self { taxonomy: self::taxonomy(taxonomy) }
    }
}

/// The cold path's counts (our own shape, not MemPalace's): `status --json`
/// and `memory_status` carry it as `pipeline`. Every state, tier and status
/// is present, zeros included; `last_runs` lists the latest run of each
/// periodic job that ever ran, by job name.
#[derive(Debug, Clone, Serialize)]
pub struct PipelineShape {
    /// Drawers per cold-path state.
    pub by_state: BTreeMap<&'static str, u64>,
    /// Drawers per status.
    pub by_status: BTreeMap<&'static str, u64>,
    /// Drawers per pipeline tier.
    pub by_tier: BTreeMap<&'static str, u64>,
    /// Raw drawers under a live claim.
    pub claimed: u64,
    /// The latest run of each periodic job.
    pub last_runs: Vec<JobRunShape>,
    /// Active extracted memories.
    pub memories: u64,
}

/// One periodic job's latest run (in [`PipelineShape`]).
#[derive(Debug, Clone, Serialize)]
pub struct JobRunShape {
    /// Whether its holder ended it.
    pub finished: bool,
    /// Who ran it.
    pub holder: String,
    /// Job name.
    pub job: String,
    /// When it started.
    pub started_at: String,
    /// Wall-clock tick the run was for.
    pub tick: i64,
}

impl PipelineShape {
    /// The shape of `counts`.
    pub fn of(counts: &PipelineCounts) -> Self {
        Self {
            by_state: counts.by_state.iter().map(|(state, n)| (state.as_str(), *n)).collect(),
            by_status: counts.by_status.iter().map(|(status, n)| (status.as_str(), *n)).collect(),
            by_tier: counts.by_tier.iter().map(|(tier, n)| (tier.as_str(), *n)).collect(),
            claimed: counts.claimed,
            last_runs: counts.last_runs.iter().map(JobRunShape::of).collect(),
            memories: counts.memories,
        }
    }
}

impl JobRunShape {
    fn of(run: &JobRun) -> Self {
        Self {
            finished: run.finished,
            holder: run.holder.clone(),
            job: run.job.clone(),
            started_at: format_timestamp(&run.started_at),
            tick: run.tick,
        }
    }
}

/// A fact (MemPalace `kg_query` item, plus its id and source drawer).
#[derive(Debug, Clone, Serialize)]
pub struct FactShape {
    /// Confidence.
    pub confidence: f64,
    /// Whether it holds now.
    pub current: bool,
    /// `outgoing` or `incoming`, seen from the queried entity.
    pub direction: &'static str,
    /// The fact's id.
    pub id: String,
    /// Object name.
    pub object: String,
    /// Relation.
    pub predicate: String,
    /// Drawer it was extracted from.
    pub source_drawer_id: Option<String>,
    /// Subject name.
    pub subject: String,
    /// Start.
    pub valid_from: Option<String>,
    /// End (null: current).
    pub valid_to: Option<String>,
}

impl FactShape {
    /// The shape of `fact`.
    pub fn of(fact: &Fact) -> Self {
        Self {
            confidence: fact.confidence,
            current: fact.current,
            direction: fact.direction,
            id: fact.id.clone(),
            object: fact.object.clone(),
            predicate: fact.predicate.clone(),
            source_drawer_id: fact.source_drawer_id.as_ref().map(|id| id.as_str().to_string()),
            subject: fact.subject.clone(),
            valid_from: fact_time(fact.valid_from.as_ref()),
            valid_to: fact_time(fact.valid_to.as_ref()),
        }
    }
}

/// Knowledge-graph statistics (MemPalace `kg_stats`, plus counts per
/// relation).
#[derive(Debug, Clone, Serialize)]
pub struct KgStatsShape {
    /// Facts without an end.
    pub current_facts: u64,
    /// Entities.
    pub entities: u64,
    /// Facts that ended.
    pub expired_facts: u64,
    /// Facts per relation.
    pub relationship_counts: BTreeMap<String, u64>,
    /// Relations, most common first.
    pub relationship_types: Vec<String>,
    /// Facts.
    pub triples: u64,
}

impl KgStatsShape {
    /// The shape of `stats`.
    pub fn of(stats: &KgStats) -> Self {
        Self {
            current_facts: stats.current,
            entities: stats.entities,
            expired_facts: stats.expired,
            relationship_counts: stats.predicates.iter().cloned().collect(),
            relationship_types: stats.predicates.iter().map(|(p, _)| p.clone()).collect(),
            triples: stats.triples,
        }
    }
}

/// A traversal step (MemPalace `traverse` item).
#[derive(Debug, Clone, Serialize)]
pub struct ReachedShape {
    /// Wings (or `tunnel:label`) shared with the room it was reached from;
    /// absent at the start room.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connected_via: Option<Vec<String>>,
    /// Its drawers.
    pub count: u64,
    /// Its halls.
    pub halls: Vec<String>,
    /// Hops from the start.
    pub hop: usize,
    /// Room name.
    pub room: String,
    /// Its wings.
    pub wings: Vec<String>,
}

impl ReachedShape {
    /// The shape of `reached`.
    pub fn of(reached: &Reached) -> Self {
        Self {
            connected_via: (reached.hop > 0).then(|| reached.connected_via.clone()),
            count: reached.count,
            halls: reached.halls.clone(),
            hop: reached.hop,
            room: reached.room.clone(),
            wings: reached.wings.clone(),
        }
    }
}

/// A room bridging wings (MemPalace `find_tunnels` item; `recent` only
/// there).
#[derive(Debug, Clone, Serialize)]
pub struct TunnelRoomShape {
    /// Its drawers.
    pub count: u64,
    /// Its halls.
    pub halls: Vec<String>,
    /// Always empty (MemPalace's latest drawer date).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recent: Option<&'static str>,
    /// Room name.
    pub room: String,
    /// Its wings.
    pub wings: Vec<String>,
}

impl TunnelRoomShape {
    /// MemPalace's `find_tunnels` item.
    pub fn of(room: &TunnelRoom) -> Self {
        Self { recent: Some(""), ..Self::without_recent(room) }
    }

    /// The item without `recent` (`memory_find_tunnels`).
    pub fn without_recent(room: &TunnelRoom) -> Self {
        Self {
            count: room.count,
            halls: room.halls.clone(),
            recent: None,
            room: room.room.clone(),
            wings: room.wings.clone(),
        }
    }
}

/// Palace-graph statistics (MemPalace `graph_stats`, plus explicit tunnels).
#[derive(Debug, Clone, Serialize)]
pub struct GraphStatsShape {
    /// Explicit tunnels.
    pub explicit_tunnels: usize,
    /// Rooms in two or more wings (MemPalace's newer name).
    pub passive_tunnel_rooms: usize,
    /// Rooms per wing.
    pub rooms_per_wing: BTreeMap<String, usize>,
    /// Rooms in the most wings.
    pub top_tunnels: Vec<TopTunnelShape>,
    /// Edges plus explicit tunnels.
    pub total_connections: usize,
    /// Wing pairs linked through shared rooms.
    pub total_edges: usize,
    /// (wing, room) placements.
    pub total_room_instances: usize,
    /// Distinct room names.
    pub total_rooms: usize,
    /// Rooms in two or more wings.
    pub tunnel_rooms: usize,
}

/// A room in the most wings (in [`GraphStatsShape`]).
#[derive(Debug, Clone, Serialize)]
pub struct TopTunnelShape {
    /// Its drawers.
    pub count: u64,
    /// Room name.
    pub room: String,
    /// Its wings.
    pub wings: Vec<String>,
}

impl GraphStatsShape {
    /// The shape of `stats`.
    pub fn of(stats: &GraphStats) -> Self {
        Self {
            explicit_tunnels: stats.explicit_tunnels,
            passive_tunnel_rooms: stats.tunnel_rooms,
            rooms_per_wing: stats.rooms_per_wing.iter().cloned().collect(),
            top_tunnels: stats
                .top_tunnels
                .iter()
                .map(|t| TopTunnelShape { count: t.count, room: t.room.clone(), wings: t.wings.clone() })
                .collect(),
            total_connections: stats.total_edges + stats.explicit_tunnels,
            total_edges: stats.total_edges,
            total_room_instances: stats.total_room_instances,
            total_rooms: stats.total_rooms,
            tunnel_rooms: stats.tunnel_rooms,
        }
    }
}

/// An explicit tunnel (MemPalace `create_tunnel` / `list_tunnels` item).
#[derive(Debug, Clone, Serialize)]
pub struct TunnelShape {
    /// `create_tunnel` only: whether it is new.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub created: Option<bool>,
    /// When.
    pub created_at: String,
    /// Who made the link.
    pub created_by: Option<String>,
    /// Its id.
    pub id: String,
    /// Always `explicit`.
    pub kind: &'static str,
    /// Why the places are linked (empty: no label).
    pub label: String,
    /// The end that sorts first.
    pub source: TunnelEndShape,
    /// The end that sorts second.
    pub target: TunnelEndShape,
}

/// One end of a tunnel (in [`TunnelShape`]).
#[derive(Debug, Clone, Serialize)]
pub struct TunnelEndShape {
    /// `create_tunnel` only: the drawer the caller named at this end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drawer_id: Option<String>,
    /// Room.
    pub room: String,
    /// Wing.
    pub wing: String,
}

impl TunnelShape {
    /// The shape of `tunnel`.
    pub fn of(tunnel: &Tunnel) -> Self {
        let end = |place: &Place| TunnelEndShape {
            drawer_id: None,
            room: place.room.as_str().to_string(),
            wing: place.wing.as_str().to_string(),
        };
        Self {
            created: None,
            created_at: format_timestamp(&tunnel.created_at),
            created_by: tunnel.created_by.clone(),
            id: tunnel.id.clone(),
            kind: "explicit",
            label: tunnel.label.clone().unwrap_or_default(),
            source: end(&tunnel.a),
            target: end(&tunnel.b),
        }
    }
}

/// A drawer's metadata (MemPalace `get_drawer` `metadata`): the place,
/// provenance and classification, plus the drawer's context keys.
pub fn drawer_metadata(d: &Drawer) -> Map<String, Value> {
    let mut meta = d.context.clone();
    let mut put = |key: &str, value: Value| {
        if !value.is_null() {
            meta.insert(key.to_string(), value);
        }
    };
    put("wing", d.wing.as_str().into());
    put("room", d.room.as_str().into());
    put("hall", d.hall.as_ref().map(|h| h.as_str()).into());
    put("source_file", d.source_file.as_deref().map(|s| s.rsplit(['/', '\\']).next().unwrap_or(s)).into());
    put("added_by", d.added_by.as_str().into());
    put("filed_at", format_timestamp(&d.filed_at).into());
    put("updated_at", format_timestamp(&d.updated_at).into());
    put("chunk_index", d.chunk_index.into());
    put("line_start", d.line_start.into());
    put("line_end", d.line_end.into());
    put("content_date", d.content_date.as_deref().into());
    put("memory_type", d.memory_type.map(|t| t.as_str()).into());
    put("importance", d.importance.get().into());
    put("confidence", d.confidence.get().into());
    put("status", d.status.as_str().into());
    put("session_id", d.session_id.as_deref().into());
    put("tags", d.tags.iter().map(|t| t.tag.as_str()).collect::<Vec<_>>().into());
    put("access_count", d.access_count.into());
    meta
}

/// A drawer with its metadata (MemPalace `get_drawer`, a `get_drawers`
/// item).
#[derive(Debug, Clone, Serialize)]
pub struct DrawerShape {
    /// The verbatim text.
    pub content: String,
    /// Its id.
    pub drawer_id: String,
    /// [`drawer_metadata`].
    pub metadata: Map<String, Value>,
    /// Room.
    pub room: String,
    /// Wing.
    pub wing: String,
}

impl DrawerShape {
    /// The shape of `d`.
    pub fn of(d: &Drawer) -> Self {
        Self {
            content: d.content.as_str().to_string(),
            drawer_id: d.id.as_str().to_string(),
            metadata: drawer_metadata(d),
            room: d.room.as_str().to_string(),
            wing: d.wing.as_str().to_string(),
        }
    }
}

/// What filing a text did (MemPalace `add_drawer`, a `checkpoint`
/// `added` item).
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum DrawerAdded {
    /// Filed as one or more new drawers.
    Filed {
        /// Every drawer's id, when there are several (`add_drawer` only).
        #[serde(skip_serializing_if = "Option::is_none")]
        chunk_ids: Option<Vec<String>>,
        /// How many drawers.
        chunks: usize,
        /// The first drawer's id.
        drawer_id: String,
        /// Room.
        room: String,
        /// Always true.
        success: bool,
        /// Why the drawers have no vectors, when they have none (`add_drawer` only).
        #[serde(skip_serializing_if = "Option::is_none")]
        vector_disabled_reason: Option<String>,
        /// Wing.
        wing: String,
    },
    /// Nothing new: an exact or near copy is filed already.
    AlreadyExists {
        /// The existing drawer.
        drawer_id: String,
        /// Always `already_exists`.
        reason: &'static str,
        /// A near copy's cosine similarity (`add_drawer` only).
        #[serde(skip_serializing_if = "Option::is_none")]
        similarity: Option<f64>,
        /// Always true.
        success: bool,
    },
    /// Not filed: the text is noise.
    Noise(Noise),
}

/// A text not filed because it is noise (tool output, chatter).
#[derive(Debug, Clone, Serialize)]
pub struct Noise {
    /// What the text looked like.
    pub error: &'static str,
    /// Always `noise`.
    pub reason: &'static str,
    /// Always false.
    pub success: bool,
}

impl Noise {
    /// Noise, described by `error`.
    pub fn new(error: &'static str) -> Self {
        Self { error, reason: "noise", success: false }
    }
}

/// A resembling drawer found by a duplicate check (MemPalace
/// `check_duplicate` and `checkpoint` match).
#[derive(Debug, Clone, Serialize)]
pub struct DuplicateMatch {
    /// Its first 200 characters.
    pub content: String,
    /// Its id.
    pub id: String,
    /// Room.
    pub room: String,
    /// Cosine similarity, 3 places.
    pub similarity: f64,
    /// Wing.
    pub wing: String,
}

/// A diary entry written (MemPalace `diary_write`, a `checkpoint`'s
/// diary).
#[derive(Debug, Clone, Serialize)]
pub struct DiaryWritten {
    /// The agent, lowercase.
    pub agent: String,
    /// Always 1.
    pub chunks: u32,
    /// The entry's drawer id.
    pub entry_id: String,
    /// Always true.
    pub success: bool,
    /// When.
    pub timestamp: String,
    /// Topic.
    pub topic: String,
}

impl DiaryWritten {
    /// The entry `id` of `agent` on `topic`, written at `at`.
    pub fn new(agent: String, id: &mempalace_core::DrawerId, topic: String, at: &mempalace_core::Timestamp) -> Self {
        Self {
            agent,
            chunks: 1,
            entry_id: id.as_str().to_string(),
            success: true,
            timestamp: format_timestamp(at),
            topic,
        }
    }
}

/// A write that did not happen, as a result: `{"success": false, "error": …}`.
#[derive(Debug, Clone, Serialize)]
pub struct WriteFailure {
    /// Why.
    pub error: String,
    /// Always false.
    pub success: bool,
}

impl WriteFailure {
    /// The failure `error`.
    pub fn new(error: impl std::fmt::Display) -> Self {
        Self { error: error.to_string(), success: false }
    }
}

/// A memory-extraction report (the `memory_extract` tool and `mempalace
/// extract --json`): which extractor decided and why, and each decision
/// with what became of it.
#[derive(Debug, Clone, Serialize)]
pub struct ExtractReportShape {
    /// Each decision.
    pub decisions: Vec<DecisionShape>,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// The model, when it decided.
    pub model: Option<String>,
    /// `model` or `rules`.
    pub path: &'static str,
    /// Items of the model's answer that were dropped.
    pub rejected: usize,
    /// Why the rules decided instead of a model.
    pub rules_because: Option<String>,
}

/// One extraction decision and what became of it (in
/// [`ExtractReportShape`]), tagged `decision`.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "decision", rename_all = "lowercase")]
pub enum DecisionShape {
    /// A new memory.
    Add {
        /// The short label.
        entity_name: String,
        /// The type.
        entity_type: &'static str,
        /// The drawer filed, when one was.
        filed: Option<String>,
        /// The sentence.
        observation: String,
        /// What happened.
        outcome: String,
        /// User or workspace.
        scope: &'static str,
    },
    /// A memory whose information changed.
    Update {
        /// The drawer filed, when one was.
        filed: Option<String>,
        /// The existing memory.
        id: String,
        /// The corrected sentence.
        observation: String,
        /// What happened.
        outcome: String,
    },
    /// A memory the user retracted.
    Delete {
        /// The drawer filed, when one was.
        filed: Option<String>,
        /// The existing memory.
        id: String,
        /// What happened.
        outcome: String,
        /// Why.
        reason: String,
    },
}

impl ExtractReportShape {
    /// The shape of `report`.
    pub fn of(report: &ExtractReport) -> Self {
        let (path, model, rules_because) = match &report.path {
            ExtractPath::Model(model) => ("model", Some(model.clone()), None),
            ExtractPath::Rules(why) => ("rules", None, Some(why.clone())),
        };
        let decisions = report
            .applied
            .iter()
            .map(|applied| {
                let filed = applied.filed.as_ref().map(|id| id.as_str().to_string());
                let outcome = applied.outcome.clone();
                match &applied.decision {
                    Decision::Add(m) => DecisionShape::Add {
                        entity_name: m.entity_name.clone(),
                        entity_type: m.entity_type.as_str(),
                        filed,
                        observation: m.observation.clone(),
                        outcome,
                        scope: m.scope.as_str(),
                    },
                    Decision::Update { id, observation } => {
                        DecisionShape::Update { filed, id: id.clone(), observation: observation.clone(), outcome }
                    }
                    Decision::Delete { id, reason } => {
                        DecisionShape::Delete { filed, id: id.clone(), outcome, reason: reason.clone() }
                    }
                }
            })
            .collect();
        Self { decisions, dry_run: report.dry_run, model, path, rejected: report.rejected, rules_because }
    }
}

/// One stored memory (`memory_list_memories`, `mempalace memories --json`).
#[derive(Debug, Clone, Serialize)]
pub struct MemoryShape {
    /// What it is about: the short label.
    pub entity_name: String,
    /// Its type.
    pub entity_type: &'static str,
    /// The episodes it came from (null: none recorded).
    pub episodes: Option<Value>,
    /// When it was filed.
    pub filed_at: String,
    /// Its drawer id.
    pub id: String,
    /// The sentence.
    pub observation: String,
    /// The user it belongs to.
    pub owner: Option<String>,
    /// User or workspace.
    pub scope: &'static str,
    /// The sessions it came from (null: none recorded).
    pub sessions: Option<Value>,
    /// `extracted` (from one conversation), `semantic` (promoted: said in
    /// several episodes) or `dream`.
    pub tier: String,
}

impl MemoryShape {
    /// The shape of `memory`.
    pub fn of(memory: &StoredMemory) -> Self {
        // A memory drawer edited by hand may lack its `memory` record: its
        // optional fields are then absent, never a panic.
        let meta = memory.drawer.context.get("memory").unwrap_or(&Value::Null);
        Self {
            entity_name: memory.memory.entity_name.clone(),
            entity_type: memory.memory.entity_type.as_str(),
            episodes: meta.get("episodes").cloned(),
            filed_at: format_timestamp(&memory.drawer.filed_at),
            id: memory.drawer.id.as_str().to_string(),
            observation: memory.memory.observation.clone(),
            owner: memory.drawer.owner_user_id.clone(),
            scope: memory.memory.scope.as_str(),
            sessions: meta.get("sessions").cloned(),
            tier: meta["tier"].as_str().unwrap_or("extracted").to_string(),
        }
    }
}

/// An episodic summary (the `memory_episodes` tool, `mempalace episodes
/// --json`, the REST API); a search hit adds its `score`, a drill-down its
/// `drawers`.
#[derive(Debug, Clone, Serialize)]
pub struct EpisodeShape {
    /// Agent of the session.
    pub agent: Option<String>,
    /// Creation time.
    pub created_at: String,
    /// Drill-down only: the session's drawers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drawers: Option<Vec<EpisodeDrawerShape>>,
    /// TTL end.
    pub expires_at: Option<String>,
    /// Stable id.
    pub id: String,
    /// Capitalised proper-noun phrases.
    pub key_topics: Vec<String>,
    /// One extractive sentence.
    pub l0_abstract: String,
    /// When it was folded into a long-term note.
    pub promoted_at: Option<String>,
    /// Search hits only: relevance 0–1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// Session summarised.
    pub session_id: String,
    /// The summary text.
    pub summary: String,
    /// User of the session.
    pub user_id: Option<String>,
}

/// A drawer of an episode's drill-down (in [`EpisodeShape`]).
#[derive(Debug, Clone, Serialize)]
pub struct EpisodeDrawerShape {
    /// The verbatim text.
    pub content: String,
    /// Its id.
    pub id: String,
    /// [`drawer_metadata`].
    pub metadata: Map<String, Value>,
}

impl EpisodeShape {
    /// The shape of `e`.
    pub fn of(e: &EpisodicSummary) -> Self {
        Self {
            agent: e.agent.clone(),
            created_at: format_timestamp(&e.created_at),
            drawers: None,
            expires_at: e.expires_at.as_ref().map(format_timestamp),
            id: e.id.clone(),
            key_topics: e.key_topics.clone(),
            l0_abstract: e.l0_abstract.clone(),
            promoted_at: e.promoted_at.as_ref().map(format_timestamp),
            score: None,
            session_id: e.session_id.clone(),
            summary: e.summary.clone(),
            user_id: e.user_id.clone(),
        }
    }

    /// An episode found by a search, with its relevance.
    pub fn hit(hit: &EpisodeHit) -> Self {
        Self { score: Some(hit.score), ..Self::of(&hit.episode) }
    }

    /// An episode with its drawers (drill-down).
    pub fn detail(detail: &EpisodeDetail) -> Self {
        let drawers = detail
            .drawers
            .iter()
            .map(|d| EpisodeDrawerShape {
                content: d.content.as_str().to_string(),
                id: d.id.as_str().to_string(),
                metadata: drawer_metadata(d),
            })
            .collect();
        Self { drawers: Some(drawers), ..Self::of(&detail.episode) }
    }
}

/// What `prune` archived or would archive.
#[derive(Debug, Clone, Serialize)]
pub struct PruneReportShape {
    /// How many drawers.
    pub count: usize,
    /// The drawers, least important first.
    pub drawers: Vec<PrunedShape>,
    /// Whether nothing was changed.
    pub dry_run: bool,
}

/// A drawer `prune` archived (in [`PruneReportShape`]).
#[derive(Debug, Clone, Serialize)]
pub struct PrunedShape {
    /// How often it was returned.
    pub access_count: u64,
    /// Its id.
    pub id: String,
    /// Its importance.
    pub importance: f64,
}

impl PruneReportShape {
    /// The shape of `report`.
    pub fn of(report: &PruneReport) -> Self {
        Self {
            count: report.drawers.len(),
            drawers: report
                .drawers
                .iter()
                .map(|c| PrunedShape {
                    access_count: c.access_count,
                    id: c.id.as_str().to_string(),
                    importance: c.importance,
                })
                .collect(),
            dry_run: report.dry_run,
        }
    }
}

/// What an entity dedup found and did (`memory_kg_dedup`, `mempalace
/// entities dedup --json`).
#[derive(Debug, Clone, Serialize)]
pub struct DedupReportShape {
    /// Whether anything was written.
    pub applied: bool,
    /// Entities looked at.
    pub entities: usize,
    /// Pairs that may be duplicates.
    pub flagged: Vec<FlaggedShape>,
    /// Groups merged (or that would be).
    pub groups: Vec<MergeGroupShape>,
    /// Aliases merged.
    pub merged: usize,
    /// Drawers whose mention moved.
    pub moved_mentions: u64,
    /// Facts moved.
    pub moved_triples: u64,
}

/// A group of entities merged into one (in [`DedupReportShape`]).
#[derive(Debug, Clone, Serialize)]
pub struct MergeGroupShape {
    /// The entities merged into it, each with the rule that matched.
    pub aliases: Vec<NameReasonShape>,
    /// The entity kept: its name.
    pub canonical: String,
    /// Its id.
    pub canonical_id: String,
}

/// A merged name and the rule that matched it (in [`MergeGroupShape`]).
#[derive(Debug, Clone, Serialize)]
pub struct NameReasonShape {
    /// The name.
    pub name: String,
    /// The rule.
    pub reason: &'static str,
}

/// Two names that may be one entity (in [`DedupReportShape`]).
#[derive(Debug, Clone, Serialize)]
pub struct FlaggedShape {
    /// One name.
    pub a: String,
    /// The other.
    pub b: String,
    /// Why they look alike.
    pub reason: &'static str,
}

impl DedupReportShape {
    /// The shape of `report`.
    pub fn of(report: &DedupReport) -> Self {
        Self {
            applied: report.applied,
            entities: report.entities,
            flagged: report
                .flagged
                .iter()
                .map(|f| FlaggedShape { a: f.a.clone(), b: f.b.clone(), reason: f.reason })
                .collect(),
            groups: report
                .groups
                .iter()
                .map(|g| MergeGroupShape {
                    aliases: g
                        .aliases
                        .iter()
                        .map(|(name, why)| NameReasonShape { name: name.clone(), reason: why })
                        .collect(),
                    canonical: g.canonical.clone(),
                    canonical_id: g.canonical_id.clone(),
                })
                .collect(),
            merged: report.merged,
            moved_mentions: report.moved_mentions,
            moved_triples: report.moved_triples,
        }
    }
}

/// One entity alias, with its canonical entity's name when known.
#[derive(Debug, Clone, Serialize)]
pub struct EntityAliasShape {
    /// The merged name.
    pub alias: String,
    /// Its entity id.
    pub alias_id: String,
    /// The canonical entity's name, when known.
    pub canonical: Option<String>,
    /// The canonical entity's id.
    pub canonical_id: String,
    /// When.
    pub merged_at: String,
    /// Drawers whose mention moved.
    pub moved_mentions: u64,
    /// Facts moved.
    pub moved_triples: u64,
    /// Why they were merged.
    pub reason: String,
}

impl EntityAliasShape {
    /// The shape of `alias`.
    pub fn of(alias: &mempalace_core::kg::EntityAlias, canonical: Option<&str>) -> Self {
        Self {
            alias: alias.alias.name.clone(),
            alias_id: alias.alias.id.clone(),
            canonical: canonical.map(str::to_string),
            canonical_id: alias.canonical_id.clone(),
            merged_at: format_timestamp(&alias.merged_at),
            moved_mentions: alias.moved_mentions,
            moved_triples: alias.moved_triples,
            reason: alias.reason.clone(),
        }
    }
}

/// What a centroid recompute did (`mempalace centroids recompute --json`).
#[derive(Debug, Clone, Serialize)]
pub struct CentroidReportShape {
    /// The model whose vectors were averaged.
    pub model: Option<String>,
    /// Rooms that emptied and lost their prototype.
    pub rooms_forgotten: Vec<String>,
    /// Rooms not due.
    pub rooms_not_due: usize,
    /// Rooms with too few drawers with vectors.
    pub rooms_too_few: usize,
    /// Rooms whose prototype changed.
    pub rooms_trained: Vec<RoomSamplesShape>,
    /// Rooms trained again whose samples were unchanged.
    pub rooms_unchanged: Vec<String>,
    /// Memory types with too few samples.
    pub types_too_few: Vec<TypeSamplesShape>,
    /// Memory types whose centroid was written.
    pub types_trained: Vec<TypeSamplesShape>,
    /// Memory types whose samples were unchanged.
    pub types_unchanged: Vec<&'static str>,
    /// The workspace.
    pub workspace: String,
}

/// A memory type and its sample count (in [`CentroidReportShape`]).
#[derive(Debug, Clone, Serialize)]
pub struct TypeSamplesShape {
    /// The type.
    pub memory_type: &'static str,
    /// Samples.
    pub samples: u32,
}

/// A room and its sample count (in [`CentroidReportShape`]).
#[derive(Debug, Clone, Serialize)]
pub struct RoomSamplesShape {
    /// `wing/room`.
    pub room: String,
    /// Samples.
    pub samples: u32,
}

impl CentroidReportShape {
    /// The shape of `report`.
    pub fn of(report: &CentroidReport) -> Self {
        let types = |list: &[(mempalace_core::MemoryType, u32)]| {
            list.iter().map(|(t, n)| TypeSamplesShape { memory_type: t.as_str(), samples: *n }).collect()
        };
        Self {
            model: report.model.clone(),
            rooms_forgotten: report.rooms_forgotten.clone(),
            rooms_not_due: report.rooms_not_due,
            rooms_too_few: report.rooms_too_few,
            rooms_trained: report
                .rooms_trained
                .iter()
                .map(|(r, n)| RoomSamplesShape { room: r.clone(), samples: *n })
                .collect(),
            rooms_unchanged: report.rooms_unchanged.clone(),
            types_too_few: types(&report.types_too_few),
            types_trained: types(&report.types_trained),
            types_unchanged: report.types_unchanged.iter().map(|t| t.as_str()).collect(),
            workspace: report.workspace.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use mempalace_core::memory::{EntityType, ExistingMemory, MemoryScope};
    use mempalace_core::{Content, Drawer, Room, Wing, WorkspaceId};
    use mempalace_engine::memories::StoredMemory;

    use super::MemoryShape;

    /// A memory drawer whose `memory` record was removed (an edit by hand,
    /// an import from elsewhere) is still shown, without its optional parts.
    #[test]
    fn a_memory_without_its_record_is_shown_not_a_panic() {
        let drawer = Drawer::new(
            WorkspaceId::default_workspace(),
            Wing::parse("memories").unwrap(),
            Room::parse("fact").unwrap(),
            Content::parse("Sam works on the rover arm.".to_string()).unwrap(),
            "test".to_string(),
            mempalace_core::time::parse_timestamp("2026-01-02", "date", mempalace_core::time::DayEdge::Start).unwrap(),
        );
        let memory = ExistingMemory {
            id: drawer.id.to_string(),
            entity_type: EntityType::Fact,
            entity_name: "Sam".into(),
            observation: "Sam works on the rover arm.".into(),
            scope: MemoryScope::Workspace,
        };
        let shape = MemoryShape::of(&StoredMemory { drawer, memory });
        assert_eq!(shape.tier, "extracted");
        assert!(shape.episodes.is_none() && shape.sessions.is_none());
    }
}
