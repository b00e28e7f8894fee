//! The JSONL export format (one JSON object per line) and its conversion to
//! and from the store's records.
//!
//! The first line is a header; every other line is one record with a
//! `type` field. Field names are part of the format: add fields only with a
//! new `version`, never rename. Unknown fields are refused, so an export
//! from a newer build cannot be imported here with silent loss. Vectors and
//! raw perception data are base64 (little-endian f32 for vectors), so the
//! round trip is bit-exact. `docs/export-format.md` documents every field.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use mempalace_core::centroid::Centroid;
use mempalace_core::coordination::{Artifact, CoordinationError, Event, EventDraft};
use mempalace_core::kg::{Entity, EntityAlias, Triple};
use mempalace_core::session::{EpisodicSummary, Session};
use mempalace_core::time::{DayEdge, format_timestamp, parse_timestamp};
use mempalace_core::tunnel::{Place, Tunnel};
use mempalace_core::{
    Confidence, Content, ContentHash, Drawer, DrawerId, DrawerTag, Embedding, Hall, Identity, Importance, Perception,
    Room, Timestamp, ValidationError, Wing, WorkspaceId,
};
use mempalace_store::{AliasMove, AliasMoveKind, AliasRecord, IdentityRecord, PalaceRecord};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Value of the header's `format` field.
pub const FORMAT: &str = "mempalace-rs export";
/// Current format version (2 added the coordination lines, `artifact`
/// and `event`; 3 added `entity_alias`; older files are still read).
pub const VERSION: u32 = 3;

/// One line of an export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line {
    /// First line: what the file is.
    Header(HeaderLine),
    /// A drawer.
    Drawer(Box<DrawerLine>),
    /// An identity text.
    Identity(IdentityLine),
    /// A knowledge-graph entity.
    Entity(EntityLine),
    /// A knowledge-graph fact.
    Triple(TripleLine),
    /// A session.
    Session(SessionLine),
    /// An episodic summary.
    EpisodicSummary(EpisodicSummaryLine),
    /// A tunnel.
    Tunnel(TunnelLine),
    /// A centroid.
    Centroid(CentroidLine),
    /// A coordination artifact.
    Artifact(Box<ArtifactLine>),
    /// A coordination event.
    Event(Box<EventLine>),
    /// An entity merged into another, with what the merge moved.
    EntityAlias(Box<EntityAliasLine>),
}

/// An entity alias: the merged entity's own record, the entity it was
/// merged into, why and when, and the facts and drawers the merge moved
/// (so the imported palace can unmerge it exactly).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct EntityAliasLine {
    pub workspace_id: String,
    pub id: String,
    pub name: String,
    pub entity_type: String,
    pub properties: Map<String, Value>,
    pub embedding: Option<VectorField>,
    pub created_at: String,
    pub canonical_id: String,
    pub reason: String,
    pub merged_at: String,
    pub moved: Vec<MovedLine>,
}

/// One fact or drawer a merge moved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct MovedLine {
    /// `subject`, `object` (a fact) or `mention` (a drawer).
    pub kind: String,
    pub id: String,
}

/// The header line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeaderLine {
    /// Always [`FORMAT`].
    pub format: String,
    /// Format version.
    pub version: u32,
    /// Program that wrote it.
    pub generator: String,
    /// Palace schema version at export time.
    pub schema_version: u32,
    /// When.
    pub exported_at: String,
}

/// A vector: model, dimension and base64 little-endian f32.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VectorField {
    /// Model that made it.
    pub model: String,
    /// Number of components.
    pub dim: usize,
    /// Base64 of the little-endian f32 components.
    pub base64: String,
}

/// A tag on a drawer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TagField {
    /// Tag name.
    pub tag: String,
    /// `auto` or `user`.
    pub source: String,
}

/// Perception data of a drawer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerceptionField {
    /// Sense.
    pub perception_type: String,
    /// Base64 of the raw bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_base64: Option<String>,
    /// Format and units.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<String>,
}

/// Every field of a drawer (see SPEC §2 for meanings).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct DrawerLine {
    pub workspace_id: String,
    pub id: String,
    pub wing: String,
    pub room: String,
    pub hall: Option<String>,
    pub content: String,
    pub content_hash: String,
    pub importance: f64,
    pub memory_type: Option<String>,
    pub pipeline_tier: String,
    pub state: String,
    pub summary: Option<String>,
    pub source_file: Option<String>,
    pub added_by: String,
    pub added_by_agent: Option<String>,
    pub owner_user_id: Option<String>,
    pub filed_at: String,
    pub updated_at: String,
    pub last_accessed_at: Option<String>,
    pub access_count: u64,
    pub superseded_by: Option<String>,
    pub cluster_id: Option<String>,
    pub retry_count: u32,
    pub entity_count: u32,
    pub triple_count: u32,
    pub confidence: f64,
    pub decay_rate: f64,
    pub status: String,
    pub status_reason: Option<String>,
    pub session_id: Option<String>,
    pub context: Map<String, Value>,
    pub tags: Vec<TagField>,
    pub perception: Option<PerceptionField>,
    pub source_mtime: Option<f64>,
    pub chunk_index: Option<u32>,
    pub line_start: Option<u32>,
    pub line_end: Option<u32>,
    pub content_date: Option<String>,
    pub entities: Vec<String>,
    pub embedding: Option<VectorField>,
}

/// An identity text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct IdentityLine {
    pub workspace_id: String,
    pub text: String,
    pub updated_at: String,
}

/// A knowledge-graph entity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct EntityLine {
    pub workspace_id: String,
    pub id: String,
    pub name: String,
    pub entity_type: String,
    pub properties: Map<String, Value>,
    pub embedding: Option<VectorField>,
    pub created_at: String,
}

/// A knowledge-graph fact.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct TripleLine {
    pub workspace_id: String,
    pub id: String,
    pub subject: String,
    pub predicate: String,
    pub object: String,
    pub valid_from: Option<String>,
    pub valid_to: Option<String>,
    pub confidence: f64,
    pub source_drawer_id: Option<String>,
    pub source: Option<String>,
    pub created_at: String,
}

/// A session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct SessionLine {
    pub workspace_id: String,
    pub id: String,
    pub agent: Option<String>,
    pub user_id: Option<String>,
    pub context: Map<String, Value>,
    pub status: String,
    pub outcome_score: Option<f64>,
    pub session_count: u32,
    pub started_at: String,
    pub ended_at: Option<String>,
}

/// An episodic summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct EpisodicSummaryLine {
    pub workspace_id: String,
    pub id: String,
    pub session_id: String,
    pub source_id: Option<String>,
    pub agent: Option<String>,
    pub user_id: Option<String>,
    pub summary: String,
    pub l0_abstract: String,
    pub key_topics: Vec<String>,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub promoted_at: Option<String>,
}

/// A tunnel between two places.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct TunnelLine {
    pub workspace_id: String,
    pub id: String,
    pub wing_a: String,
    pub room_a: String,
    pub wing_b: String,
    pub room_b: String,
    pub label: Option<String>,
    pub created_by: Option<String>,
    pub created_at: String,
}

/// A memory-type centroid.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct CentroidLine {
    pub workspace_id: String,
    pub memory_type: String,
    pub vector: VectorField,
    pub sample_count: u32,
    pub computed_at: String,
    pub source_hash: String,
}

/// A coordination artifact: its verbatim content and the SHA-256 an
/// import checks it against.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct ArtifactLine {
    pub workspace_id: String,
    pub id: String,
    pub kind: String,
    pub content: String,
    pub sha256: String,
    pub created_by: String,
    pub created_at: String,
    pub metadata: Map<String, Value>,
}

/// A coordination event. Its `seq` is not carried: an import appends
/// events in file order (the export's order), so cursors by id still work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct EventLine {
    pub workspace_id: String,
    pub id: String,
    pub event_type: String,
    pub stream: String,
    pub room: String,
    pub topic: Option<String>,
    pub from_agent: String,
    pub to_agent: Option<String>,
    pub correlation_id: Option<String>,
    pub branch: Option<String>,
    pub base_commit: Option<String>,
    pub status: Option<String>,
    pub body: String,
    pub metadata: Map<String, Value>,
    pub artifact_ids: Vec<String>,
    pub created_at: String,
}

fn ts(value: &Timestamp) -> String {
    format_timestamp(value)
}

fn opt_ts(value: Option<&Timestamp>) -> Option<String> {
    value.map(format_timestamp)
}

fn vector_field(embedding: &Embedding) -> VectorField {
    let mut bytes = Vec::with_capacity(embedding.vector.len() * 4);
    for component in &embedding.vector {
        bytes.extend_from_slice(&component.to_le_bytes());
    }
    VectorField { model: embedding.model.clone(), dim: embedding.vector.len(), base64: BASE64.encode(bytes) }
}

/// Converts a record to its line.
pub fn to_line(record: &PalaceRecord) -> Line {
    match record {
        PalaceRecord::Drawer(drawer) => Line::Drawer(Box::new(drawer_line(drawer))),
        PalaceRecord::Identity(record) => Line::Identity(IdentityLine {
            workspace_id: record.workspace_id.to_string(),
            text: record.identity.as_str().to_string(),
            updated_at: ts(&record.updated_at),
        }),
        PalaceRecord::Entity(entity) => Line::Entity(EntityLine {
            workspace_id: entity.workspace_id.to_string(),
            id: entity.id.clone(),
            name: entity.name.clone(),
            entity_type: entity.entity_type.clone(),
            properties: entity.properties.clone(),
            embedding: entity.embedding.as_ref().map(vector_field),
            created_at: ts(&entity.created_at),
        }),
        PalaceRecord::Triple(triple) => Line::Triple(TripleLine {
            workspace_id: triple.workspace_id.to_string(),
            id: triple.id.clone(),
            subject: triple.subject.clone(),
            predicate: triple.predicate.clone(),
            object: triple.object.clone(),
            valid_from: opt_ts(triple.valid_from.as_ref()),
            valid_to: opt_ts(triple.valid_to.as_ref()),
            confidence: triple.confidence.get(),
            source_drawer_id: triple.source_drawer_id.as_ref().map(DrawerId::to_string),
            source: triple.source.clone(),
            created_at: ts(&triple.created_at),
        }),
        PalaceRecord::Session(session) => Line::Session(SessionLine {
            workspace_id: session.workspace_id.to_string(),
            id: session.id.clone(),
            agent: session.agent.clone(),
            user_id: session.user_id.clone(),
            context: session.context.clone(),
            status: session.status.as_str().to_string(),
            outcome_score: session.outcome_score,
            session_count: session.session_count,
            started_at: ts(&session.started_at),
            ended_at: opt_ts(session.ended_at.as_ref()),
        }),
        PalaceRecord::EpisodicSummary(summary) => Line::EpisodicSummary(EpisodicSummaryLine {
            workspace_id: summary.workspace_id.to_string(),
            id: summary.id.clone(),
            session_id: summary.session_id.clone(),
            source_id: summary.source_id.clone(),
            agent: summary.agent.clone(),
            user_id: summary.user_id.clone(),
            summary: summary.summary.clone(),
            l0_abstract: summary.l0_abstract.clone(),
            key_topics: summary.key_topics.clone(),
            created_at: ts(&summary.created_at),
            expires_at: opt_ts(summary.expires_at.as_ref()),
            promoted_at: opt_ts(summary.promoted_at.as_ref()),
        }),
        PalaceRecord::Tunnel(tunnel) => Line::Tunnel(TunnelLine {
            workspace_id: tunnel.workspace_id.to_string(),
            id: tunnel.id.clone(),
            wing_a: tunnel.a.wing.to_string(),
            room_a: tunnel.a.room.to_string(),
            wing_b: tunnel.b.wing.to_string(),
            room_b: tunnel.b.room.to_string(),
            label: tunnel.label.clone(),
            created_by: tunnel.created_by.clone(),
            created_at: ts(&tunnel.created_at),
        }),
        PalaceRecord::Centroid(centroid) => Line::Centroid(CentroidLine {
            workspace_id: centroid.workspace_id.to_string(),
            memory_type: centroid.memory_type.as_str().to_string(),
            vector: vector_field(&centroid.embedding),
            sample_count: centroid.sample_count,
            computed_at: ts(&centroid.computed_at),
            source_hash: centroid.source_hash.clone(),
        }),
        PalaceRecord::Artifact(artifact) => Line::Artifact(Box::new(ArtifactLine {
            workspace_id: artifact.workspace_id.to_string(),
            id: artifact.id.clone(),
            kind: artifact.kind.as_str().to_string(),
            content: artifact.content.as_str().to_string(),
            sha256: artifact.sha256(),
            created_by: artifact.created_by.to_string(),
            created_at: ts(&artifact.created_at),
            metadata: artifact.metadata.as_map().clone(),
        })),
        PalaceRecord::Event(event) => {
            let text = |value: &Option<mempalace_core::coordination::Routing>| value.as_ref().map(|v| v.to_string());
            Line::Event(Box::new(EventLine {
                workspace_id: event.workspace_id.to_string(),
                id: event.id.clone(),
                event_type: event.event_type.as_str().to_string(),
                stream: event.stream.to_string(),
                room: event.room.to_string(),
                topic: text(&event.topic),
                from_agent: event.from_agent.to_string(),
                to_agent: text(&event.to_agent),
                correlation_id: text(&event.correlation_id),
                branch: text(&event.branch),
                base_commit: text(&event.base_commit),
                status: event.status.map(|status| status.as_str().to_string()),
                body: event.body.as_str().to_string(),
                metadata: event.metadata.as_map().clone(),
                artifact_ids: event.artifact_ids.clone(),
                created_at: ts(&event.created_at),
            }))
        }
        PalaceRecord::EntityAlias(record) => {
            let alias = &record.alias;
            let entity = &alias.alias;
            Line::EntityAlias(Box::new(EntityAliasLine {
                workspace_id: entity.workspace_id.to_string(),
                id: entity.id.clone(),
                name: entity.name.clone(),
                entity_type: entity.entity_type.clone(),
                properties: entity.properties.clone(),
                embedding: entity.embedding.as_ref().map(vector_field),
                created_at: ts(&entity.created_at),
                canonical_id: alias.canonical_id.clone(),
                reason: alias.reason.clone(),
                merged_at: ts(&alias.merged_at),
                moved: record
                    .moves
                    .iter()
                    .map(|m| MovedLine { kind: m.kind.as_str().to_string(), id: m.ref_id.clone() })
                    .collect(),
            }))
        }
    }
}

/// The line of one drawer (also `get --json`).
pub fn drawer_line(drawer: &Drawer) -> DrawerLine {
    DrawerLine {
        workspace_id: drawer.workspace_id.to_string(),
        id: drawer.id.to_string(),
        wing: drawer.wing.to_string(),
        room: drawer.room.to_string(),
        hall: drawer.hall.as_ref().map(Hall::to_string),
        content: drawer.content.as_str().to_string(),
        content_hash: drawer.content_hash.as_str().to_string(),
        importance: drawer.importance.get(),
        memory_type: drawer.memory_type.map(|t| t.as_str().to_string()),
        pipeline_tier: drawer.pipeline_tier.as_str().to_string(),
        state: drawer.state.as_str().to_string(),
        summary: drawer.summary.clone(),
        source_file: drawer.source_file.clone(),
        added_by: drawer.added_by.clone(),
        added_by_agent: drawer.added_by_agent.clone(),
        owner_user_id: drawer.owner_user_id.clone(),
        filed_at: ts(&drawer.filed_at),
        updated_at: ts(&drawer.updated_at),
        last_accessed_at: opt_ts(drawer.last_accessed_at.as_ref()),
        access_count: drawer.access_count,
        superseded_by: drawer.superseded_by.as_ref().map(DrawerId::to_string),
        cluster_id: drawer.cluster_id.as_ref().map(DrawerId::to_string),
        retry_count: drawer.retry_count,
        entity_count: drawer.entity_count,
        triple_count: drawer.triple_count,
        confidence: drawer.confidence.get(),
        decay_rate: drawer.decay_rate,
        status: drawer.status.as_str().to_string(),
        status_reason: drawer.status_reason.clone(),
        session_id: drawer.session_id.clone(),
        context: drawer.context.clone(),
        tags: drawer
            .tags
            .iter()
            .map(|tag| TagField { tag: tag.tag.clone(), source: tag.source.as_str().to_string() })
            .collect(),
        perception: drawer.perception.as_ref().map(|p| PerceptionField {
            perception_type: p.perception_type.as_str().to_string(),
            data_base64: p.data.as_ref().map(|data| BASE64.encode(data)),
            metadata: p.metadata.clone(),
        }),
        source_mtime: drawer.source_mtime,
        chunk_index: drawer.chunk_index,
        line_start: drawer.line_start,
        line_end: drawer.line_end,
        content_date: drawer.content_date.clone(),
        entities: drawer.entities.clone(),
        embedding: drawer.embedding.as_ref().map(vector_field),
    }
}

/// Why a line could not become a record.
#[derive(Debug)]
pub struct LineError(pub String);

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<CoordinationError> for LineError {
    fn from(error: CoordinationError) -> Self {
        Self(error.to_string())
    }
}

impl From<ValidationError> for LineError {
    fn from(error: ValidationError) -> Self {
        Self(error.to_string())
    }
}

fn when(text: &str, field: &'static str) -> Result<Timestamp, LineError> {
    Ok(parse_timestamp(text, field, DayEdge::Start)?)
}

fn opt_when(text: Option<&String>, field: &'static str) -> Result<Option<Timestamp>, LineError> {
    text.map(|text| when(text, field)).transpose()
}

fn vector(field: &VectorField) -> Result<Embedding, LineError> {
    let bytes = BASE64
        .decode(&field.base64)
        .map_err(|error| LineError(format!("vector of model {:?} is not valid base64: {error}", field.model)))?;
    // `dim` comes from the file: a huge one must not overflow the check.
    if field.dim.checked_mul(4) != Some(bytes.len()) {
        return Err(LineError(format!(
            "vector of model {:?} has {} bytes, expected dim {} × 4",
            field.model,
            bytes.len(),
            field.dim
        )));
    }
    let vector = bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    Ok(Embedding { model: field.model.clone(), vector })
}

fn workspace(text: &str) -> Result<WorkspaceId, LineError> {
    Ok(WorkspaceId::parse(text)?)
}

fn opt_drawer_id(text: Option<&String>) -> Result<Option<DrawerId>, LineError> {
    Ok(text.map(|text| DrawerId::parse(text)).transpose()?)
}

/// Converts a line to a record, checking every domain rule. The header is
/// not a record: `Ok(None)`.
pub fn from_line(line: &Line) -> Result<Option<PalaceRecord>, LineError> {
    let record = match line {
        Line::Header(_) => return Ok(None),
        Line::Drawer(line) => PalaceRecord::Drawer(Box::new(drawer_from_line(line)?)),
        Line::Identity(line) => PalaceRecord::Identity(IdentityRecord {
            workspace_id: workspace(&line.workspace_id)?,
            identity: Identity::parse(line.text.clone())?,
            updated_at: when(&line.updated_at, "updated_at")?,
        }),
        Line::Entity(line) => PalaceRecord::Entity(Entity {
            workspace_id: workspace(&line.workspace_id)?,
            id: line.id.clone(),
            name: line.name.clone(),
            entity_type: line.entity_type.clone(),
            properties: line.properties.clone(),
            embedding: line.embedding.as_ref().map(vector).transpose()?,
            created_at: when(&line.created_at, "created_at")?,
        }),
        Line::Triple(line) => {
            let valid_from = opt_when(line.valid_from.as_ref(), "valid_from")?;
            let valid_to = opt_when(line.valid_to.as_ref(), "valid_to")?;
            Triple::check_interval(valid_from, valid_to)?;
            PalaceRecord::Triple(Triple {
                workspace_id: workspace(&line.workspace_id)?,
                id: line.id.clone(),
                subject: line.subject.clone(),
                predicate: line.predicate.clone(),
                object: line.object.clone(),
                valid_from,
                valid_to,
                confidence: Confidence::new(line.confidence)?,
                source_drawer_id: opt_drawer_id(line.source_drawer_id.as_ref())?,
                source: line.source.clone(),
                created_at: when(&line.created_at, "created_at")?,
            })
        }
        Line::Session(line) => PalaceRecord::Session(Session {
            workspace_id: workspace(&line.workspace_id)?,
            id: line.id.clone(),
            agent: line.agent.clone(),
            user_id: line.user_id.clone(),
            context: line.context.clone(),
            status: line.status.parse()?,
            outcome_score: line.outcome_score,
            session_count: line.session_count,
            started_at: when(&line.started_at, "started_at")?,
            ended_at: opt_when(line.ended_at.as_ref(), "ended_at")?,
        }),
        Line::EpisodicSummary(line) => PalaceRecord::EpisodicSummary(EpisodicSummary {
            workspace_id: workspace(&line.workspace_id)?,
            id: line.id.clone(),
            session_id: line.session_id.clone(),
            source_id: line.source_id.clone(),
            agent: line.agent.clone(),
            user_id: line.user_id.clone(),
            summary: line.summary.clone(),
            l0_abstract: line.l0_abstract.clone(),
            key_topics: line.key_topics.clone(),
            created_at: when(&line.created_at, "created_at")?,
            expires_at: opt_when(line.expires_at.as_ref(), "expires_at")?,
            promoted_at: opt_when(line.promoted_at.as_ref(), "promoted_at")?,
        }),
        Line::Tunnel(line) => {
            let a = Place { wing: Wing::parse(&line.wing_a)?, room: Room::parse(&line.room_a)? };
            let b = Place { wing: Wing::parse(&line.wing_b)?, room: Room::parse(&line.room_b)? };
            PalaceRecord::Tunnel(Tunnel {
                workspace_id: workspace(&line.workspace_id)?,
                id: line.id.clone(),
                a,
                b,
                label: line.label.clone(),
                created_by: line.created_by.clone(),
                created_at: when(&line.created_at, "created_at")?,
            })
        }
        Line::Centroid(line) => PalaceRecord::Centroid(Centroid {
            workspace_id: workspace(&line.workspace_id)?,
            memory_type: line.memory_type.parse()?,
            embedding: vector(&line.vector)?,
            sample_count: line.sample_count,
            computed_at: when(&line.computed_at, "computed_at")?,
            source_hash: line.source_hash.clone(),
        }),
        Line::Artifact(line) => {
            let artifact = Artifact::parse(
                workspace(&line.workspace_id)?,
                line.id.clone(),
                when(&line.created_at, "created_at")?,
                &line.kind,
                line.content.clone(),
                &line.created_by,
                Some(Value::Object(line.metadata.clone())),
            )
            .map_err(|error| LineError(format!("artifact {}: {error}", line.id)))?;
            if artifact.sha256() != line.sha256 {
                return Err(LineError(format!(
                    "artifact {}: sha256 does not match the content (edited by hand?); recompute it or drop the line",
                    line.id
                )));
            }
            PalaceRecord::Artifact(Box::new(artifact))
        }
        Line::Event(line) => {
            let draft = EventDraft {
                event_type: line.event_type.clone(),
                stream: line.stream.clone(),
                room: line.room.clone(),
                topic: line.topic.clone(),
                from_agent: line.from_agent.clone(),
                to_agent: line.to_agent.clone(),
                correlation_id: line.correlation_id.clone(),
                branch: line.branch.clone(),
                base_commit: line.base_commit.clone(),
                status: line.status.clone(),
                body: Some(line.body.clone()),
                metadata: Some(Value::Object(line.metadata.clone())),
                artifact_ids: Some(Value::Array(line.artifact_ids.iter().cloned().map(Value::String).collect())),
            };
            let event = Event::parse(
                workspace(&line.workspace_id)?,
                line.id.clone(),
                when(&line.created_at, "created_at")?,
                draft,
            )
            .map_err(|error| LineError(format!("event {}: {error}", line.id)))?;
            PalaceRecord::Event(Box::new(event))
        }
        Line::EntityAlias(line) => {
            if line.id == line.canonical_id {
                return Err(LineError(format!("entity alias {}: an entity cannot be merged into itself", line.id)));
            }
            let moves = line
                .moved
                .iter()
                .map(|m| {
                    let kind = AliasMoveKind::parse(&m.kind).ok_or_else(|| {
                        LineError(format!(
                            "entity alias {}: moved kind {:?} is not subject, object or mention",
                            line.id, m.kind
                        ))
                    })?;
                    Ok(AliasMove { kind, ref_id: m.id.clone() })
                })
                .collect::<Result<Vec<_>, LineError>>()?;
            let moved_triples = moves.iter().filter(|m| m.kind != AliasMoveKind::Mention).count() as u64;
            let moved_mentions = moves.len() as u64 - moved_triples;
            PalaceRecord::EntityAlias(Box::new(AliasRecord {
                alias: EntityAlias {
                    alias: Entity {
                        workspace_id: workspace(&line.workspace_id)?,
                        id: line.id.clone(),
                        name: line.name.clone(),
                        entity_type: line.entity_type.clone(),
                        properties: line.properties.clone(),
                        embedding: line.embedding.as_ref().map(vector).transpose()?,
                        created_at: when(&line.created_at, "created_at")?,
                    },
                    canonical_id: line.canonical_id.clone(),
                    reason: line.reason.clone(),
                    merged_at: when(&line.merged_at, "merged_at")?,
                    moved_triples,
                    moved_mentions,
                },
                moves,
            }))
        }
    };
    Ok(Some(record))
}

fn drawer_from_line(line: &DrawerLine) -> Result<Drawer, LineError> {
    let content = Content::parse(line.content.clone())?;
    let content_hash = ContentHash::parse(&line.content_hash)?;
    if content_hash != ContentHash::of(content.as_str()) {
        return Err(LineError(format!(
            "drawer {}: content_hash does not match the content (edited by hand?); recompute it or drop the field's line",
            line.id
        )));
    }
    Ok(Drawer {
        workspace_id: workspace(&line.workspace_id)?,
        id: DrawerId::parse(&line.id)?,
        wing: Wing::parse(&line.wing)?,
        room: Room::parse(&line.room)?,
        hall: line.hall.as_deref().map(Hall::parse).transpose()?,
        content,
        content_hash,
        embedding: line.embedding.as_ref().map(vector).transpose()?,
        importance: Importance::new(line.importance)?,
        memory_type: line.memory_type.as_deref().map(str::parse).transpose()?,
        pipeline_tier: line.pipeline_tier.parse()?,
        state: line.state.parse()?,
        summary: line.summary.clone(),
        source_file: line.source_file.clone(),
        added_by: line.added_by.clone(),
        added_by_agent: line.added_by_agent.clone(),
        owner_user_id: line.owner_user_id.clone(),
        filed_at: when(&line.filed_at, "filed_at")?,
        updated_at: when(&line.updated_at, "updated_at")?,
        last_accessed_at: opt_when(line.last_accessed_at.as_ref(), "last_accessed_at")?,
        access_count: line.access_count,
        superseded_by: opt_drawer_id(line.superseded_by.as_ref())?,
        cluster_id: opt_drawer_id(line.cluster_id.as_ref())?,
        retry_count: line.retry_count,
        entity_count: line.entity_count,
        triple_count: line.triple_count,
        confidence: Confidence::new(line.confidence)?,
        decay_rate: line.decay_rate,
        status: line.status.parse()?,
        status_reason: line.status_reason.clone(),
        session_id: line.session_id.clone(),
        context: line.context.clone(),
        tags: line
            .tags
            .iter()
            .map(|tag| Ok(DrawerTag { tag: tag.tag.clone(), source: tag.source.parse()? }))
            .collect::<Result<_, LineError>>()?,
        perception: line
            .perception
            .as_ref()
            .map(|p| -> Result<Perception, LineError> {
                Ok(Perception {
                    perception_type: p.perception_type.parse()?,
                    data: p
                        .data_base64
                        .as_ref()
                        .map(|data| BASE64.decode(data))
                        .transpose()
                        .map_err(|error| LineError(format!("perception data is not valid base64: {error}")))?,
                    metadata: p.metadata.clone(),
                })
            })
            .transpose()?,
        source_mtime: line.source_mtime,
        chunk_index: line.chunk_index,
        line_start: line.line_start,
        line_end: line.line_end,
        content_date: line.content_date.clone(),
        entities: line.entities.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mempalace_store::conformance::sample_records;
    use proptest::prelude::*;

    #[test]
    fn every_record_kind_round_trips_through_json_text() {
        for record in sample_records(&WorkspaceId::default_workspace()) {
            let text = serde_json::to_string(&to_line(&record)).unwrap();
            let line: Line = serde_json::from_str(&text).unwrap();
            assert_eq!(from_line(&line).unwrap(), Some(record), "{text}");
        }
    }

    #[test]
    fn unknown_fields_and_tampered_content_are_refused() {
        let record = &sample_records(&WorkspaceId::default_workspace())[0];
        let mut value = serde_json::to_value(to_line(record)).unwrap();
        value["surprise"] = serde_json::json!(1);
        assert!(serde_json::from_value::<Line>(value.clone()).is_err());
        value.as_object_mut().unwrap().remove("surprise");
        value["content"] = serde_json::json!("edited");
        let line: Line = serde_json::from_value(value).unwrap();
        assert!(from_line(&line).unwrap_err().0.contains("content_hash"));
    }

    /// Found by the fuzzer: a `dim` near `usize::MAX` overflowed `dim × 4`.
    #[test]
    fn a_huge_vector_dimension_is_an_error_not_an_overflow() {
        let field = VectorField { model: "m".into(), dim: usize::MAX / 2, base64: BASE64.encode([0u8; 8]) };
        assert!(vector(&field).unwrap_err().0.contains("expected dim"));
        let field = VectorField { model: "m".into(), dim: (usize::MAX / 4) + 3, base64: BASE64.encode([0u8; 8]) };
        assert!(vector(&field).is_err(), "a dim whose × 4 wraps to the byte count is refused too");
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_panics_the_parser(text in ".{0,400}") {
            if let Ok(line) = serde_json::from_str::<Line>(&text) {
                let _ = from_line(&line);
            }
        }

        #[test]
        fn mutated_drawer_lines_never_panic(position in 0usize..2000, byte in any::<u8>()) {
            let record = &sample_records(&WorkspaceId::default_workspace())[0];
            let mut bytes = serde_json::to_vec(&to_line(record)).unwrap();
            let index = position % bytes.len();
            bytes[index] = byte;
            if let Ok(line) = serde_json::from_slice::<Line>(&bytes) {
                let _ = from_line(&line);
            }
        }
    }
}
