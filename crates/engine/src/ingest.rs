//! The ingestion hot path (seed 0 §3): noise filter → chunk → heuristic
//! classification → embed → dedup → tier decision → idempotent persist →
//! event.
//!
//! [`Palace::ingest_batch`] runs the pipeline for several texts at once so
//! that their chunks share embedding calls (the pool feeds it whatever is
//! queued). A chunk whose vector is within cosine 0.85 of an existing drawer
//! of the workspace (or of an earlier chunk of the same batch) and that adds
//! no distinguishing token to it (a number, date, name, path, … — the rule
//! of [`mempalace_core::dedup`]) is not filed; the report names the drawer
//! it duplicates. A resembling chunk that says something new is filed and
//! joins the other's cluster (`cluster_id`). Raw requests skip the noise
//! filter, the classifier and dedup: the text is filed verbatim.

use std::sync::Arc;
use std::sync::mpsc::SyncSender;

use mempalace_core::chunk::chunk_text;
use mempalace_core::classify::{TierGates, classify, is_noise, pick_tier};
use mempalace_core::dedup::{Verdict, judge};
use mempalace_core::exchange::PRECEDED_BY;
use mempalace_core::extract::KnownNames;
use mempalace_core::{
    Confidence, Content, Drawer, DrawerId, DrawerState, DrawerTag, Embedding, Hall, Importance, MemoryType,
    PipelineTier, Room, TagSource, Wing, vector,
};
use serde_json::{Map, Value};

use crate::error::{EngineError, EngineResult};
use crate::palace::Palace;

/// Cosine above which a chunk may be a duplicate (seed 0 §10
/// `AutoIngestDupThreshold`); it is one only when it also adds no
/// distinguishing token ([`mempalace_core::dedup`]).
pub const DEDUP_THRESHOLD: f32 = mempalace_core::dedup::NEAR_DUPLICATE_COSINE;
/// Longest text one request may carry (it is chunked into drawers).
pub const MAX_INPUT_CHARS: usize = 1_000_000;

/// A text to file, as a caller describes it.
#[derive(Debug, Clone)]
pub struct IngestRequest {
    /// Wing.
    pub wing: Wing,
    /// Room.
    pub room: Room,
    /// Optional hall.
    pub hall: Option<Hall>,
    /// The text (chunked when longer than 800 characters).
    pub text: String,
    /// A type stated by the caller (overrides the classifier).
    pub memory_type: Option<MemoryType>,
    /// Importance; default 3.
    pub importance: Option<Importance>,
    /// Confidence; default: the classifier's, or 1 for raw text.
    pub confidence: Option<Confidence>,
    /// Where the text came from.
    pub source_file: Option<String>,
    /// Who files it.
    pub added_by: String,
    /// Agent id, for affinity ranking.
    pub added_by_agent: Option<String>,
    /// Only this user sees it.
    pub owner_user_id: Option<String>,
    /// Session that produced it.
    pub session_id: Option<String>,
    /// Context JSON object.
    pub context: Map<String, Value>,
    /// Tags set by the caller.
    pub tags: Vec<String>,
    /// File verbatim: no noise filter, classifier or dedup.
    pub raw: bool,
    /// Sensor data filed with the text (robotmem perceptions).
    pub perception: Option<mempalace_core::Perception>,
    /// When the text was written (a transcript's date); default: now.
    pub filed_at: Option<mempalace_core::Timestamp>,
    /// Lines of the source the text spans (a document chunk).
    pub lines: Option<(u32, u32)>,
    /// Position of this text among its source's chunks.
    pub chunk_index: Option<u32>,
    /// An id the source chose instead of the content-derived one (the
    /// sweeper's `sweep_{session}_{uuid}`): the text is then filed as one
    /// drawer, so it must be raw and at most 10,000 characters.
    pub id: Option<DrawerId>,
    /// The room is a default the caller fell back to, not a choice: the
    /// text may be filed in the wing's room whose prototype is nearest
    /// instead ([`Palace::suggest_room`]), noted in the drawer's context
    /// as `room_suggested`. False (the default) files in `room`, always.
    pub room_is_default: bool,
    /// The text just before this one in its source (a conversation's
    /// previous exchange), when the drawer's vector should carry it: the
    /// vector is then made from both texts
    /// ([`mempalace_core::exchange::in_context`]) and the drawer names the
    /// drawer of that text in its context
    /// ([`mempalace_core::exchange::PRECEDED_BY`]), so re-embedding
    /// rebuilds the same vector. Content, hash and id stay this text's own.
    /// A text chunked into several drawers: each later chunk carries the
    /// chunk before it.
    pub preceding: Option<String>,
}

impl IngestRequest {
    /// A request with defaults for everything but place, text and author.
    pub fn new(wing: Wing, room: Room, text: impl Into<String>, added_by: impl Into<String>) -> Self {
        Self {
            wing,
            room,
            hall: None,
            text: text.into(),
            memory_type: None,
            importance: None,
            confidence: None,
            source_file: None,
            added_by: added_by.into(),
            added_by_agent: None,
            owner_user_id: None,
            session_id: None,
            context: Map::new(),
            tags: Vec::new(),
            raw: false,
            perception: None,
            filed_at: None,
            lines: None,
            chunk_index: None,
            id: None,
            room_is_default: false,
            preceding: None,
        }
    }
}

/// What happened to one chunk.
#[derive(Debug, Clone, PartialEq)]
pub enum ChunkOutcome {
    /// Filed as a new drawer.
    Filed(DrawerId),
    /// The same text was already filed in the same place.
    AlreadyFiled(DrawerId),
    /// A near-duplicate of an existing drawer that adds nothing to it
    /// (cosine above 0.85 and no distinguishing token the drawer lacks):
    /// not filed.
    Duplicate {
        /// The existing drawer.
        existing: DrawerId,
        /// Their cosine similarity.
        similarity: f32,
    },
    /// Filed as a new drawer although it resembles an existing one (cosine
    /// above 0.85), because it says something the other does not; linked
    /// to it by `cluster_id` so the cold path can decide supersede or keep.
    FiledNear {
        /// The new drawer.
        id: DrawerId,
        /// The drawer it resembles most.
        near: DrawerId,
        /// Their cosine similarity.
        similarity: f32,
        /// The distinguishing tokens the other drawer lacks.
        differs: Vec<String>,
    },
}

impl ChunkOutcome {
    /// The drawer that holds this chunk's text: the new one, or the one it
    /// duplicates.
    pub fn drawer_id(&self) -> &DrawerId {
        match self {
            ChunkOutcome::Filed(id) | ChunkOutcome::AlreadyFiled(id) | ChunkOutcome::FiledNear { id, .. } => id,
            ChunkOutcome::Duplicate { existing, .. } => existing,
        }
    }

    /// Whether a new drawer was stored.
    pub fn is_new(&self) -> bool {
        matches!(self, ChunkOutcome::Filed(_) | ChunkOutcome::FiledNear { .. })
    }
}

/// What happened to one request.
#[derive(Debug, Clone, PartialEq)]
pub struct IngestReport {
    /// True when the whole text was dropped as noise.
    pub noise: bool,
    /// One outcome per chunk, in order.
    pub chunks: Vec<ChunkOutcome>,
    /// Why vectors are missing, when they are.
    pub degraded: Option<String>,
}

impl IngestReport {
    /// Ids of drawers filed or found, in chunk order.
    pub fn drawer_ids(&self) -> Vec<&DrawerId> {
        self.chunks.iter().map(ChunkOutcome::drawer_id).collect()
    }
}

/// Published after each filed drawer.
#[derive(Debug, Clone, PartialEq)]
pub struct IngestEvent {
    /// Workspace.
    pub workspace: String,
    /// The new drawer.
    pub drawer_id: DrawerId,
    /// Its place.
    pub wing: String,
    /// Its room.
    pub room: String,
    /// Classifier's type.
    pub memory_type: Option<MemoryType>,
    /// Cold-path state.
    pub state: DrawerState,
}

/// Subscribers of ingestion events. Publishing never blocks: a subscriber
/// whose buffer is full misses the event (and it is counted).
#[derive(Default)]
pub struct EventBus {
    subscribers: std::sync::Mutex<Vec<SyncSender<IngestEvent>>>,
    missed: std::sync::atomic::AtomicU64,
}

impl EventBus {
    /// A new subscription with a buffer of `capacity` events.
    pub fn subscribe(&self, capacity: usize) -> std::sync::mpsc::Receiver<IngestEvent> {
        let (sender, receiver) = std::sync::mpsc::sync_channel(capacity);
        self.subscribers.lock().expect("event bus poisoned").push(sender);
        receiver
    }

    /// Events a subscriber missed because its buffer was full.
    pub fn missed(&self) -> u64 {
        self.missed.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn publish(&self, event: &IngestEvent) {
        let mut subscribers = self.subscribers.lock().expect("event bus poisoned");
        subscribers.retain(|subscriber| match subscriber.try_send(event.clone()) {
            Ok(()) => true,
            Err(std::sync::mpsc::TrySendError::Full(_)) => {
                self.missed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                true
            }
            Err(std::sync::mpsc::TrySendError::Disconnected(_)) => false,
        });
    }
}

/// One chunk on its way through the pipeline.
struct Pending {
    request: usize,
    raw: bool,
    drawer: Drawer,
    extraction: Option<mempalace_core::extract::Extraction>,
    /// The classifier's confidence when it falls in the centroid band
    /// (between the two gates): the nearest type centroid may then settle it.
    band: Option<f64>,
    /// The text embedded instead of the content, when the vector carries
    /// the preceding text too (`IngestRequest::preceding`).
    embed_input: Option<String>,
}

impl Palace {
    /// Files one text through the pipeline.
    pub fn ingest(&self, request: IngestRequest) -> EngineResult<IngestReport> {
        self.ingest_batch(vec![request]).pop().expect("one report per request")
    }

    /// Files several texts; their chunks share embedding calls. One result
    /// per request, in order.
    pub fn ingest_batch(&self, requests: Vec<IngestRequest>) -> Vec<EngineResult<IngestReport>> {
        self.ingest_replacing(requests, None).0
    }

    /// Files several texts and, when `replace` is given, removes in the same
    /// transaction the drawers of `replace` that the new texts do not file
    /// again (a source's new version replacing its old one atomically).
    /// Nothing is removed when a request fails. Returns the reports and how
    /// many drawers were removed (an error when only the removal failed).
    pub(crate) fn ingest_replacing(
        &self,
        requests: Vec<IngestRequest>,
        replace: Option<&std::collections::HashSet<DrawerId>>,
    ) -> (Vec<EngineResult<IngestReport>>, EngineResult<usize>) {
        let mut reports: Vec<EngineResult<IngestReport>> = Vec::with_capacity(requests.len());
        let mut pending: Vec<Pending> = Vec::new();
        let now = self.now();
        let gates = self.tier_gates();
        // Names the palace knows, so the extractor recognises them in text.
        let known = if requests.iter().any(|r| !r.raw) {
            KnownNames::new(self.store().entity_names(self.workspace()).unwrap_or_default())
        } else {
            KnownNames::default()
        };
        let requests = self.route_default_rooms(requests);
        for (index, request) in requests.into_iter().enumerate() {
            match self.prepare(index, request, now, gates, &known) {
                Ok(Some(chunks)) => {
                    pending.extend(chunks);
                    reports.push(Ok(IngestReport { noise: false, chunks: Vec::new(), degraded: None }));
                }
                Ok(None) => reports.push(Ok(IngestReport { noise: true, chunks: Vec::new(), degraded: None })),
                Err(error) => reports.push(Err(error)),
            }
        }
        let replace = replace.filter(|_| reports.iter().all(Result::is_ok));
        if pending.is_empty() {
            let removed = match replace {
                Some(stale) if !stale.is_empty() => {
                    let stale: Vec<DrawerId> = stale.iter().cloned().collect();
                    self.store()
                        .put_and_remove_drawers(self.workspace(), &[], &stale)
                        .map(|(_, n)| n)
                        .map_err(Into::into)
                }
                _ => Ok(0),
            };
            return (reports, removed);
        }
        let mut removed = 0;
        if let Err(error) = self.embed_and_file(&mut pending, &mut reports, replace, &mut removed) {
            // A storage failure fails every request that had chunks in flight.
            let message = error.to_string();
            let mut first = Some(error);
            let failed: std::collections::HashSet<usize> = pending.iter().map(|p| p.request).collect();
            for (index, report) in reports.iter_mut().enumerate() {
                if failed.contains(&index) && report.is_ok() {
                    *report = Err(first.take().unwrap_or_else(|| EngineError::Unavailable(message.clone())));
                }
            }
        }
        (reports, Ok(removed))
    }

    /// Noise filter, chunking and classification of one request; `None` for noise.
    fn prepare(
        &self,
        index: usize,
        request: IngestRequest,
        now: mempalace_core::Timestamp,
        gates: TierGates,
        known: &KnownNames,
    ) -> EngineResult<Option<Vec<Pending>>> {
        let length = request.text.chars().count();
        if length > MAX_INPUT_CHARS {
            return Err(mempalace_core::ValidationError::TooLong {
                what: "text",
                len: length,
                max: MAX_INPUT_CHARS,
                hint: "File large documents with `mempalace mine`.",
            }
            .into());
        }
        if request.text.trim().is_empty() {
            // Content::parse gives the standard message.
            Content::parse(request.text.clone())?;
        }
        if !request.raw && is_noise(&request.text) {
            return Ok(None);
        }
        let chunks = chunk_texts(&request);
        let total = chunks.len();
        if request.id.is_some() && (!request.raw || total != 1) {
            return Err(mempalace_core::ValidationError::TooLong {
                what: "text filed under a chosen id",
                len: length,
                max: Content::MAX_CHARS,
                hint: "A chosen id names one raw drawer; split the text and give each part its own id.",
            }
            .into());
        }
        let mut out = Vec::with_capacity(total);
        let mut preceding = request.preceding.clone().filter(|text| !text.trim().is_empty());
        for (chunk_index, text) in chunks.into_iter().enumerate() {
            let content = Content::parse(text)?;
            // The drawer before this one: the caller's preceding text for
            // the first chunk, the previous chunk for the others (only when
            // the caller asked for vectors in context).
            let before = preceding.take();
            if request.preceding.is_some() {
                preceding = Some(content.as_str().to_string());
            }
            let mut drawer = Drawer::new(
                self.workspace().clone(),
                request.wing.clone(),
                request.room.clone(),
                content,
                request.added_by.clone(),
                request.filed_at.unwrap_or(now),
            );
            drawer.updated_at = now;
            if let Some(id) = &request.id {
                drawer.id = id.clone();
            }
            drawer.hall = request.hall.clone();
            if let Some(date) = request.filed_at {
                drawer.content_date = Some(date.format("%Y-%m-%d").to_string());
            }
            drawer.source_file = request.source_file.clone();
            drawer.added_by_agent = request.added_by_agent.clone();
            drawer.owner_user_id = request.owner_user_id.clone();
            drawer.session_id = request.session_id.clone();
            drawer.context = request.context.clone();
            let embed_input = match before.as_deref().map(Content::parse) {
                Some(Ok(previous)) => {
                    let id = mempalace_core::id::drawer_id(&request.wing, &request.room, &previous);
                    drawer.context.insert(PRECEDED_BY.into(), Value::from(id.as_str()));
                    Some(self.text_in_context(previous.as_str(), drawer.content.as_str()))
                }
                // A preceding text no drawer could hold is not context.
                _ => {
                    drawer.context.remove(PRECEDED_BY);
                    None
                }
            };
            drawer.perception = request.perception.clone();
            if total > 1 {
                drawer.chunk_index = Some(chunk_index as u32);
            }
            if let Some(index) = request.chunk_index {
                drawer.chunk_index = Some(index);
            }
            if let Some((start, end)) = request.lines {
                drawer.line_start = Some(start);
                drawer.line_end = Some(end);
            }
            if let Some(importance) = request.importance {
                drawer.importance = importance;
            }
            let mut band = None;
            let mut tags: Vec<String> = request.tags.clone();
            tags.sort();
            tags.dedup();
            drawer.tags = tags.into_iter().map(|tag| DrawerTag { tag, source: TagSource::User }).collect();
            if request.raw {
                drawer.memory_type = request.memory_type;
                if request.memory_type.is_some() {
                    drawer.state = DrawerState::Processed;
                    drawer.pipeline_tier = PipelineTier::Heuristic;
                }
                if let Some(confidence) = request.confidence {
                    drawer.confidence = confidence;
                }
            } else {
                let classification = classify(drawer.content.as_str());
                match request.memory_type {
                    Some(stated) => {
                        drawer.memory_type = Some(stated);
                        drawer.state = DrawerState::Processed;
                        drawer.pipeline_tier = PipelineTier::Heuristic;
                    }
                    None => {
                        drawer.memory_type = Some(classification.memory_type);
                        // The centroid band (seed 0 Phase 2) needs the
                        // vector: settled after embedding, in `embed_and_file`.
                        let (state, tier) = pick_tier(classification.confidence, gates, None);
                        drawer.state = state;
                        drawer.pipeline_tier = tier;
                        band = (state == DrawerState::Raw
                            && classification.confidence >= gates.low
                            && classification.confidence < gates.high)
                            .then_some(classification.confidence);
                    }
                }
                drawer.confidence = match request.confidence {
                    Some(confidence) => confidence,
                    None => Confidence::new(classification.confidence.max(0.3)).unwrap_or_default(),
                };
            }
            let extraction = (!request.raw).then(|| self.extract_for(&mut drawer, known));
            out.push(Pending { request: index, raw: request.raw, drawer, extraction, band, embed_input });
        }
        Ok(Some(out))
    }

    /// Embeds every pending chunk (one batched call), dedups, files and
    /// publishes; fills each request's report.
    fn embed_and_file(
        &self,
        pending: &mut [Pending],
        reports: &mut [EngineResult<IngestReport>],
        replace: Option<&std::collections::HashSet<DrawerId>>,
        removed: &mut usize,
    ) -> EngineResult<()> {
        // Chunks already filed in their place keep their id and cost nothing.
        let ids: Vec<DrawerId> = pending.iter().map(|p| p.drawer.id.clone()).collect();
        let existing: std::collections::HashSet<DrawerId> =
            self.store().drawers(self.workspace(), &ids)?.into_iter().map(|d| d.id).collect();
        let texts: Vec<&str> = pending
            .iter()
            .filter(|p| !existing.contains(&p.drawer.id))
            .map(|p| p.embed_input.as_deref().unwrap_or(p.drawer.content.as_str()))
            .collect();
        let embedded = self.embed_texts(&texts)?;
        let mut vectors = embedded.vectors.into_iter();

        // Chunks of this batch already accepted, for dedup within the batch.
        let mut accepted: Vec<(DrawerId, Vec<f32>, String)> = Vec::new();
        let mut to_file: Vec<(usize, Drawer)> = Vec::new();
        let extractions: Vec<Option<mempalace_core::extract::Extraction>> =
            pending.iter_mut().map(|p| p.extraction.take()).collect();
        let mut outcomes: Vec<Option<ChunkOutcome>> = vec![None; pending.len()];
        // The workspace's type centroids, read once per batch when a chunk
        // falls in the centroid band.
        let mut type_centroids: Option<Vec<mempalace_core::centroid::Centroid>> = None;
        let mut nears: Vec<Option<Near>> = vec![None; pending.len()];
        for (position, item) in pending.iter_mut().enumerate() {
            if existing.contains(&item.drawer.id) {
                outcomes[position] = Some(ChunkOutcome::AlreadyFiled(item.drawer.id.clone()));
                continue;
            }
            let vector = vectors.next().flatten();
            let mut near: Option<Near> = None;
            if let (Some(vector), false, Some(model)) = (&vector, item.raw, embedded.model.as_deref()) {
                match self.near_duplicates(&item.drawer, vector, model, &accepted)? {
                    Resemblance::Duplicate { existing, similarity } => {
                        outcomes[position] = Some(ChunkOutcome::Duplicate { existing, similarity });
                        continue;
                    }
                    Resemblance::Near(found) => near = Some(found),
                    Resemblance::None => {}
                }
            }
            if let Some(near) = &near {
                item.drawer.cluster_id = Some(near.cluster.clone());
            }
            if let (Some(confidence), Some(vector), Some(model)) = (item.band, &vector, embedded.model.as_deref()) {
                let centroids = match &type_centroids {
                    Some(loaded) => loaded,
                    None => type_centroids.insert(self.store().centroids(self.workspace())?),
                };
                // The centroid settles a drawer only when its nearest type
                // agrees with the classifier's (seed 0 Phase 2, kept
                // conservative: a disagreement goes to the cold path).
                if let Some((memory_type, similarity)) =
                    mempalace_core::centroid::nearest_type(vector, model, centroids)
                    && item.drawer.memory_type == Some(memory_type)
                {
                    let (state, tier) = mempalace_core::classify::pick_tier_with(
                        confidence,
                        self.tier_gates(),
                        Some(f64::from(similarity)),
                        self.centroid_threshold(),
                    );
                    item.drawer.state = state;
                    item.drawer.pipeline_tier = tier;
                }
            }
            if let (Some(model), Some(vector)) = (&embedded.model, vector) {
                item.drawer.embedding = Some(Embedding { model: model.clone(), vector: vector.clone() });
                accepted.push((item.drawer.id.clone(), vector, item.drawer.content.as_str().to_string()));
            }
            nears[position] = near;
            to_file.push((position, item.drawer.clone()));
        }
        let drawers: Vec<Drawer> = to_file.iter().map(|(_, d)| d.clone()).collect();
        let results = match replace {
            Some(old) => {
                let mut kept: std::collections::HashSet<&DrawerId> = drawers.iter().map(|d| &d.id).collect();
                for outcome in outcomes.iter().flatten() {
                    kept.insert(outcome.drawer_id());
                }
                let stale: Vec<DrawerId> = old.iter().filter(|id| !kept.contains(id)).cloned().collect();
                let (results, count) = self.store().put_and_remove_drawers(self.workspace(), &drawers, &stale)?;
                *removed = count;
                results
            }
            None => self.store().put_drawers(&drawers)?,
        };
        for ((position, drawer), result) in to_file.into_iter().zip(results) {
            outcomes[position] = Some(match result {
                mempalace_store::PutOutcome::Inserted => {
                    if let Some(Some(extraction)) = extractions.get(position)
                        && let Err(error) = self.record_extraction(&drawer, extraction)
                    {
                        // The drawer is stored; a failed extraction must not undo that.
                        tracing::warn!(%error, drawer = %drawer.id, "recording extracted facts failed");
                    }
                    self.events().publish(&IngestEvent {
                        workspace: self.workspace().to_string(),
                        drawer_id: drawer.id.clone(),
                        wing: drawer.wing.to_string(),
                        room: drawer.room.to_string(),
                        memory_type: drawer.memory_type,
                        state: drawer.state,
                    });
                    match nears[position].take() {
                        Some(near) => ChunkOutcome::FiledNear {
                            id: drawer.id,
                            near: near.id,
                            similarity: near.similarity,
                            differs: near.differs,
                        },
                        None => ChunkOutcome::Filed(drawer.id),
                    }
                }
                mempalace_store::PutOutcome::Existing => ChunkOutcome::AlreadyFiled(drawer.id),
            });
        }
        for (item, outcome) in pending.iter().zip(outcomes) {
            if let (Some(Ok(report)), Some(outcome)) = (reports.get_mut(item.request), outcome) {
                report.chunks.push(outcome);
                report.degraded.clone_from(&embedded.degraded);
            }
        }
        Ok(())
    }

    /// How a new drawer relates to the drawers its owner sees and to the
    /// chunks of its batch accepted so far: the rule of
    /// [`mempalace_core::dedup`] applied to every candidate above the
    /// cosine threshold, most similar first.
    fn near_duplicates(
        &self,
        drawer: &Drawer,
        vector: &[f32],
        model: &str,
        accepted: &[(DrawerId, Vec<f32>, String)],
    ) -> EngineResult<Resemblance> {
        let scope = mempalace_store::DrawerFilter {
            viewer: drawer.owner_user_id.clone(),
            ..mempalace_store::DrawerFilter::default()
        };
        let mut candidates: Vec<(DrawerId, f32, Option<String>)> = self
            .nearest(model, vector, &scope, NEAR_CANDIDATES)?
            .into_iter()
            .filter(|(_, similarity)| *similarity > DEDUP_THRESHOLD - INDEX_SLACK)
            .map(|(id, similarity)| (id, similarity, None))
            .collect();
        for (id, other, text) in accepted {
            let similarity = vector::cosine(vector, other);
            if similarity > DEDUP_THRESHOLD {
                candidates.push((id.clone(), similarity, Some(text.clone())));
            }
        }
        let mut near: Vec<(DrawerId, f32, String, Option<DrawerId>)> = Vec::new();
        for (id, approximate, text) in candidates {
            let (similarity, text, cluster) = match text {
                Some(text) => (approximate, text, None),
                // The index is quantised; confirm with the stored vector.
                None => match self.stored_similarity(&id, vector, model, drawer.owner_user_id.as_deref())? {
                    Some(found) => found,
                    None => continue,
                },
            };
            if similarity > DEDUP_THRESHOLD {
                near.push((id, similarity, text, cluster));
            }
        }
        near.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut closest: Option<Near> = None;
        for (id, similarity, text, cluster) in near {
            match judge(drawer.content.as_str(), &text) {
                Verdict::Duplicate => return Ok(Resemblance::Duplicate { existing: id, similarity }),
                Verdict::Distinct(differs) => {
                    if closest.is_none() {
                        let cluster = cluster.unwrap_or_else(|| id.clone());
                        closest = Some(Near { id, similarity, differs, cluster });
                    }
                }
            }
        }
        Ok(closest.map_or(Resemblance::None, Resemblance::Near))
    }

    /// A stored drawer's similarity to `vector` (from its stored vector of
    /// `model`), its text and its cluster; `None` for a drawer that is gone,
    /// has no vector of the model, or is another user's private drawer
    /// (which a new drawer of `owner` never duplicates).
    fn stored_similarity(
        &self,
        id: &DrawerId,
        vector: &[f32],
        model: &str,
        owner: Option<&str>,
    ) -> EngineResult<Option<(f32, String, Option<DrawerId>)>> {
        let Some(drawer) = self.store().drawer(self.workspace(), id)? else { return Ok(None) };
        if drawer.owner_user_id.is_some() && drawer.owner_user_id.as_deref() != owner {
            return Ok(None);
        }
        let Some(embedding) = drawer.embedding.filter(|e| e.model == model) else { return Ok(None) };
        Ok(Some((vector::cosine(vector, &embedding.vector), drawer.content.as_str().to_string(), drawer.cluster_id)))
    }
}

/// How many nearest drawers the dedup check reads.
const NEAR_CANDIDATES: usize = 5;
/// How far below the threshold an index similarity (int8-quantised) may be
/// and still be confirmed against the stored vector.
const INDEX_SLACK: f32 = 0.02;

/// A resembling drawer that does not make the new one a duplicate.
#[derive(Debug, Clone)]
struct Near {
    id: DrawerId,
    similarity: f32,
    differs: Vec<String>,
    /// The cluster the new drawer joins: the other's, else the other itself.
    cluster: DrawerId,
}

/// What the dedup check found.
enum Resemblance {
    /// Nothing above the threshold.
    None,
    /// A drawer the new one adds nothing to.
    Duplicate { existing: DrawerId, similarity: f32 },
    /// Resembling drawers, none of which it duplicates; the closest.
    Near(Near),
}

/// The texts of the drawers a request files: verbatim text up to
/// [`Content::MAX_CHARS`] as one, anything else cut into chunks.
pub(crate) fn chunk_texts(request: &IngestRequest) -> Vec<String> {
    if request.raw && request.text.chars().count() <= Content::MAX_CHARS {
        vec![request.text.clone()]
    } else {
        chunk_text(&request.text)
    }
}

/// Shared handle type for the event bus.
pub type SharedEvents = Arc<EventBus>;
