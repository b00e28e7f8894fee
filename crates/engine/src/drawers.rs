//! Drawer management beyond filing: pages of drawers, in-place updates,
//! similarity lookups, agent diaries and sessions.
//!
//! An update keeps the drawer's id (agent notes cite it) even though the id
//! recipe hashes the original text; the content hash, vector, index entries
//! and counts all follow the new text and place in one transaction.

use std::collections::HashSet;

use mempalace_core::classify::classify;
use mempalace_core::session::{Session, SessionStatus};
use mempalace_core::{Confidence, Content, ContentHash, Drawer, DrawerId, Embedding, Hall, Room, Timestamp, Wing};
use serde_json::{Map, Value};

use crate::error::{EngineError, EngineResult};
use crate::ingest::IngestRequest;
use crate::palace::Palace;

/// Room every diary entry is filed in.
pub const DIARY_ROOM: &str = "diary";
/// Hall of diary entries filed the Python MemPalace way.
pub const DIARY_HALL: &str = "hall_diary";
/// Most diary entries read in one call.
pub const DIARY_MAX_READ: usize = 100;
/// Most drawers a diary read looks through.
const DIARY_SCAN: usize = 10_000;

/// What to change in a drawer; `None` keeps the current value.
#[derive(Debug, Clone, Default)]
pub struct DrawerUpdate {
    /// New text.
    pub content: Option<Content>,
    /// New wing.
    pub wing: Option<Wing>,
    /// New room.
    pub room: Option<Room>,
    /// Re-run the classifier on the new text (type and confidence).
    pub reclassify: bool,
    /// New confidence.
    pub confidence: Option<Confidence>,
    /// Keys to set in the drawer's context.
    pub context: Map<String, Value>,
}

/// A page of drawers and how many match in all.
#[derive(Debug, Clone)]
pub struct DrawerPage {
    /// The drawers of this page, newest first.
    pub drawers: Vec<Drawer>,
    /// Visible drawers matching the filter.
    pub total: u64,
}

/// One diary entry to file.
#[derive(Debug, Clone)]
pub struct DiaryEntry {
    /// The agent writing (kept as given, compared case-insensitively).
    pub agent: String,
    /// The text.
    pub text: Content,
    /// A topic tag.
    pub topic: String,
    /// Where it goes.
    pub wing: Wing,
    /// Room (normally [`DIARY_ROOM`]).
    pub room: Room,
    /// Hall.
    pub hall: Option<Hall>,
    /// More context keys to keep with the entry.
    pub context: Map<String, Value>,
}

/// Diary entries read back.
#[derive(Debug, Clone)]
pub struct DiaryPage {
    /// Newest first.
    pub entries: Vec<Drawer>,
    /// All entries of the agent at that place.
    pub total: usize,
}

/// What ending a session did.
#[derive(Debug, Clone)]
pub struct SessionEnd {
    /// The session as stored now.
    pub session: Session,
    /// Drawers filed in the session, by memory type / room.
    pub drawers: Vec<Drawer>,
    /// Drawers superseded by consolidation.
    pub superseded: Vec<(DrawerId, DrawerId)>,
    /// Groups merged.
    pub merged_groups: usize,
    /// The episodic summary written, when the session had drawers.
    pub summary: Option<mempalace_core::session::EpisodicSummary>,
    /// Drawers of other sessions related to this one.
    pub related: Vec<Drawer>,
}

impl Palace {
    /// A page of visible drawers, optionally of one wing and/or room,
    /// newest first.
    pub fn page_drawers(
        &self,
        wing: Option<&str>,
        room: Option<&str>,
        offset: usize,
        limit: usize,
    ) -> EngineResult<DrawerPage> {
        let drawers = self.store().page_drawers(self.workspace(), wing, room, offset, limit)?;
        let taxonomy = self.store().taxonomy(self.workspace())?;
        let total = taxonomy
            .wings
            .iter()
            .filter(|(name, _)| wing.is_none_or(|w| w == name.as_str()))
            .map(|(_, counts)| match room {
                Some(room) => counts.rooms.get(room).copied().unwrap_or(0),
                None => counts.drawers,
            })
            .sum();
        Ok(DrawerPage { drawers, total })
    }

    /// A page of visible drawers of one wing and/or room filed in a time
    /// window (`since` inclusive, `before` exclusive), newest first.
    pub fn page_drawers_between(
        &self,
        wing: Option<&str>,
        room: Option<&str>,
        since: Option<Timestamp>,
        before: Option<Timestamp>,
        offset: usize,
        limit: usize,
    ) -> EngineResult<DrawerPage> {
        if since.is_none() && before.is_none() {
            return self.page_drawers(wing, room, offset, limit);
        }
        let filter = mempalace_store::DrawerFilter {
            wings: wing.iter().map(|w| w.to_string()).collect(),
            rooms: room.iter().map(|r| r.to_string()).collect(),
            filed_after: since,
            filed_before: before.map(mempalace_core::time::just_before),
            ..Default::default()
        };
        let ids = self.store().filtered_ids(self.workspace(), &filter)?;
        let mut drawers = self.store().drawers(self.workspace(), &ids)?;
        drawers.sort_by(|a, b| b.filed_at.cmp(&a.filed_at).then_with(|| a.id.cmp(&b.id)));
        let total = drawers.len() as u64;
        let drawers = drawers.into_iter().skip(offset).take(limit).collect();
        Ok(DrawerPage { drawers, total })
    }

    /// Changes a drawer's text and/or place, keeping its id. A new text is
    /// re-embedded (when an embedder is configured) and re-indexed.
    pub fn update_drawer(&self, id: &DrawerId, update: DrawerUpdate) -> EngineResult<Drawer> {
        let mut drawer = self.drawer(id)?;
        if let Some(wing) = update.wing {
            drawer.wing = wing;
        }
        if let Some(room) = update.room {
            drawer.room = room;
        }
        if let Some(content) = update.content
            && content.as_str() != drawer.content.as_str()
        {
            drawer.content_hash = ContentHash::of(content.as_str());
            drawer.content = content;
            // A vector in context stays in context (`embedding_inputs`).
            let input = self.embedding_inputs(&[&drawer])?.remove(0);
            let embedded = self.embed_texts(&[input.as_str()])?;
            drawer.embedding = match (embedded.model, embedded.vectors.into_iter().next().flatten()) {
                (Some(model), Some(vector)) => Some(Embedding { model, vector }),
                _ => None,
            };
            if update.reclassify {
                let classification = classify(drawer.content.as_str());
                drawer.memory_type = Some(classification.memory_type);
                drawer.confidence = Confidence::new(classification.confidence)?;
            }
        }
        if let Some(confidence) = update.confidence {
            drawer.confidence = confidence;
        }
        for (key, value) in update.context {
            drawer.context.insert(key, value);
        }
        drawer.updated_at = self.now();
        if !self.store().replace_drawer(&drawer)? {
            return Err(EngineError::NotFound { what: "drawer", id: id.to_string() });
        }
        Ok(drawer)
    }

    /// The visible drawers most similar to `text` by vector, best first,
    /// with their cosine similarity. Empty without an embedder.
    pub fn similar(&self, text: &str, limit: usize) -> EngineResult<Vec<(Drawer, f32)>> {
        let embedded = self.embed_texts(&[text])?;
        let (Some(model), Some(vector)) = (embedded.model, embedded.vectors.into_iter().next().flatten()) else {
            return Ok(Vec::new());
        };
        // The in-process index is quantised: over-fetch, then rank by the stored vectors.
        let candidates = self.nearest(
            &model,
            &vector,
            &mempalace_store::DrawerFilter::default(),
            limit.saturating_mul(3).max(limit),
        )?;
        let ids: Vec<DrawerId> = candidates.into_iter().map(|(id, _)| id).collect();
        let mut scored: Vec<(Drawer, f32)> = self
            .store()
            .drawers(self.workspace(), &ids)?
            .into_iter()
            .filter(|d| d.status == mempalace_core::DrawerStatus::Active && d.owner_user_id.is_none())
            .filter_map(|d| {
                let similarity = d
                    .embedding
                    .as_ref()
                    .filter(|e| e.model == model)
                    .map(|e| mempalace_core::vector::cosine(&vector, &e.vector))?;
                Some((d, similarity))
            })
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored.truncate(limit);
        Ok(scored)
    }

    /// Files a diary entry verbatim; returns the new drawer's id.
    pub fn diary_write(&self, entry: DiaryEntry) -> EngineResult<DrawerId> {
        let now = self.now();
        let agent = entry.agent.to_lowercase();
        let mut request = IngestRequest::new(entry.wing, entry.room, entry.text.as_str(), agent.clone());
        request.raw = true;
        request.hall = entry.hall;
        request.added_by_agent = Some(agent.clone());
        let mut context = Map::new();
        context.insert("agent".into(), Value::from(agent));
        context.insert("topic".into(), Value::from(entry.topic));
        context.insert("type".into(), Value::from("diary_entry"));
        context.insert("date".into(), Value::from(now.format("%Y-%m-%d").to_string()));
        context.extend(entry.context);
        request.context = context;
        let report = self.ingest(request)?;
        match report.chunks.first() {
            Some(outcome) => Ok(outcome.drawer_id().clone()),
            None => Err(EngineError::Unavailable("the diary entry was empty after cleaning".into())),
        }
    }

    /// The newest diary entries of `agent` (case-insensitive) in `wing`
    /// (every wing when `None`) and `room` (any when `None`), at most
    /// `last_n`.
    pub fn diary_read(
        &self,
        agent: &str,
        wing: Option<&str>,
        room: Option<&str>,
        last_n: usize,
    ) -> EngineResult<DiaryPage> {
        let agent = agent.to_lowercase();
        let drawers = self.store().page_drawers(self.workspace(), wing, room, 0, DIARY_SCAN)?;
        let mut entries: Vec<Drawer> = drawers
            .into_iter()
            .filter(|d| {
                d.context.get("agent").and_then(Value::as_str).map(str::to_lowercase).as_deref() == Some(agent.as_str())
                    || d.hall.as_ref().is_some_and(|h| h.as_str().eq_ignore_ascii_case(&agent))
            })
            .collect();
        let total = entries.len();
        entries.truncate(last_n.min(DIARY_MAX_READ));
        Ok(DiaryPage { entries, total })
    }

    /// Starts a session (an episode); returns it.
    pub fn start_session(&self, agent: Option<String>, context: Map<String, Value>) -> EngineResult<Session> {
        let now = self.now();
        let id = session_id(&now, self.workspace().as_str());
        let session = Session {
            workspace_id: self.workspace().clone(),
            id,
            agent,
            user_id: None,
            context,
            status: SessionStatus::Active,
            outcome_score: None,
            session_count: 1,
            started_at: now,
            ended_at: None,
        };
        self.store().save_session(&session)?;
        Ok(session)
    }

    /// Ends a session: marks it ended with its outcome, merges its
    /// near-identical insights (robotmem consolidation), writes the
    /// extractive episodic summary, and finds related drawers of other
    /// sessions. Ending an ended session again only updates the outcome.
    pub fn end_session(&self, id: &str, outcome: Option<f64>) -> EngineResult<SessionEnd> {
        use mempalace_core::episode::{Candidate, consolidation_groups};
        let mut session = self.session(id)?;
        let now = self.now();
        let filter = mempalace_store::DrawerFilter { session_id: Some(id.to_string()), ..Default::default() };
        let ids = self.store().filtered_ids(self.workspace(), &filter)?;
        let mut drawers = self.store().drawers(self.workspace(), &ids)?;
        drawers.retain(|d| d.status == mempalace_core::DrawerStatus::Active);
        drawers.sort_by(|a, b| a.filed_at.cmp(&b.filed_at).then_with(|| a.id.cmp(&b.id)));
        let categories: Vec<String> = drawers
            .iter()
            .map(|d| d.context.get("category").and_then(Value::as_str).unwrap_or(d.room.as_str()).to_string())
            .collect();
        let candidates: Vec<Candidate<'_>> = drawers
            .iter()
            .zip(&categories)
            .filter(|(d, _)| d.perception.is_none())
            .map(|(d, category)| Candidate { category, text: d.content.as_str(), confidence: d.confidence.get() })
            .collect();
        // Indexes of `candidates` map back to drawers without perception.
        let plain: Vec<&Drawer> = drawers.iter().filter(|d| d.perception.is_none()).collect();
        let groups = consolidation_groups(&candidates);
        let mut superseded = Vec::new();
        for group in &groups {
            let keeper = group
                .iter()
                .copied()
                .max_by(|&a, &b| {
                    let (a, b) = (plain[a], plain[b]);
                    a.confidence
                        .get()
                        .total_cmp(&b.confidence.get())
                        .then(a.access_count.cmp(&b.access_count))
                        .then(a.filed_at.cmp(&b.filed_at))
                })
                .map(|i| plain[i].id.clone())
                .expect("groups are not empty");
            for &member in group {
                let member = &plain[member].id;
                if *member == keeper {
                    continue;
                }
                let reason = format!("consolidated into {keeper} at the end of session {id}");
                self.store().set_drawer_status(
                    self.workspace(),
                    member,
                    mempalace_core::DrawerStatus::Superseded,
                    Some(&reason),
                    now,
                )?;
                superseded.push((member.clone(), keeper.clone()));
            }
        }
        // The episode as the consolidation job would write it (so the job
        // finds it current): from the session's active drawers, the merged
        // insights' keepers only.
        let summary = self.write_episode_as(id, session.agent.clone(), session.user_id.clone())?;
        let mut related = Vec::new();
        if let Some(latest) = drawers.iter().rev().find(|d| !superseded.iter().any(|(s, _)| *s == d.id)) {
            let outcome = self.search(&crate::search::SearchRequest {
                query: latest.content.as_str().chars().take(500).collect(),
                limit: mempalace_core::layers::ResultLimit::constant(10),
                skip_access_tracking: true,
                ..Default::default()
            })?;
            related = outcome
                .hits
                .into_iter()
                .map(|h| h.drawer)
                .filter(|d| d.session_id.as_deref() != Some(id))
                .take(5)
                .collect();
        }
        session.status = SessionStatus::Ended;
        if outcome.is_some() {
            session.outcome_score = outcome;
        }
        session.ended_at = Some(session.ended_at.unwrap_or(now));
        self.store().save_session(&session)?;
        Ok(SessionEnd { session, drawers, merged_groups: groups.len(), superseded, summary, related })
    }

    /// The stored session with this id.
    pub fn session(&self, id: &str) -> EngineResult<Session> {
        self.store()
            .sessions(self.workspace())?
            .into_iter()
            .find(|s| s.id == id)
            .ok_or_else(|| EngineError::NotFound { what: "session", id: id.to_string() })
    }
}

/// A new session id: time-ordered and unique per process.
fn session_id(now: &Timestamp, salt: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let seed = format!("{}:{}:{}:{}", now.timestamp_nanos_opt().unwrap_or_default(), std::process::id(), n, salt);
    let hash = ContentHash::of(&seed);
    format!("session_{}_{}", now.format("%Y%m%d_%H%M%S"), &hash.as_str()[..12])
}

/// What filing one source (a file) did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SourceFiling {
    /// Drawers new to the palace.
    pub added: usize,
    /// Drawers already present (unchanged text).
    pub unchanged: usize,
    /// Drawers of an earlier version of the source that were removed.
    pub removed: usize,
}

impl std::ops::AddAssign for SourceFiling {
    fn add_assign(&mut self, other: Self) {
        self.added += other.added;
        self.unchanged += other.unchanged;
        self.removed += other.removed;
    }
}

/// What filing a source did, and the drawers of each request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceFiled {
    /// Counts.
    pub filing: SourceFiling,
    /// The drawers filed or found for each request, in request order.
    pub drawers: Vec<Vec<DrawerId>>,
}

impl SourceFiled {
    /// How many distinct drawers the source has now.
    pub fn distinct_drawers(&self) -> usize {
        self.drawers.iter().flatten().collect::<HashSet<_>>().len()
    }
}

impl Palace {
    /// Files the drawers of one source (`requests` all name it as their
    /// `source_file`) and removes that source's earlier drawers that the new
    /// version no longer has, in one transaction: a changed file's drawers
    /// are replaced atomically (no reader sees both versions, a crash leaves
    /// the old one), an unchanged one files nothing and embeds nothing.
    pub fn file_source(&self, source_file: &str, requests: Vec<IngestRequest>) -> EngineResult<SourceFiled> {
        let owner = requests.first().and_then(|r| r.owner_user_id.clone());
        self.file_source_for(source_file, owner.as_deref(), requests)
    }

    /// [`Palace::file_source`] for a source whose drawers `owner` owns (a
    /// user's memory file): the earlier drawers it replaces are those that
    /// user sees — theirs and the shared ones — even when `requests` is
    /// empty (the source is gone).
    pub fn file_source_for(
        &self,
        source_file: &str,
        owner: Option<&str>,
        requests: Vec<IngestRequest>,
    ) -> EngineResult<SourceFiled> {
        let filter = mempalace_store::DrawerFilter {
            source_file: Some(source_file.to_string()),
            viewer: owner.map(str::to_string),
            ..Default::default()
        };
        let before: HashSet<DrawerId> = self.store().filtered_ids(self.workspace(), &filter)?.into_iter().collect();
        self.file_requests(requests, &before)
    }

    /// Files the drawers read from the end of a growing source, keeping the
    /// source's earlier drawers except those of `reread`: the drawers an
    /// earlier run filed from the part read again, which the new filing
    /// removes unless it files them again (an exchange completed by its
    /// reply replaces its one-turn drawer). Atomic like [`Palace::file_source`].
    pub fn file_source_tail(&self, requests: Vec<IngestRequest>, reread: &[DrawerId]) -> EngineResult<SourceFiled> {
        self.file_requests(requests, &reread.iter().cloned().collect())
    }

    /// What [`Palace::file_source`] would do with `requests` — drawers new,
    /// unchanged and removed — without writing anything (a dry run). Exact
    /// for verbatim (`raw`) requests, which is what the miners file; other
    /// requests are counted as if every chunk were filed, since their noise
    /// and duplicate checks need the embedder.
    pub fn plan_source(&self, source_file: &str, requests: &[IngestRequest]) -> EngineResult<SourceFiling> {
        let filter = mempalace_store::DrawerFilter { source_file: Some(source_file.to_string()), ..Default::default() };
        let before: HashSet<DrawerId> = self.store().filtered_ids(self.workspace(), &filter)?.into_iter().collect();
        let mut ids: Vec<DrawerId> = Vec::new();
        let mut seen: HashSet<DrawerId> = HashSet::new();
        for request in requests {
            for text in crate::ingest::chunk_texts(request) {
                let content = mempalace_core::Content::parse(text)?;
                let id = match &request.id {
                    Some(id) => id.clone(),
                    None => mempalace_core::id::drawer_id(&request.wing, &request.room, &content),
                };
                if seen.insert(id.clone()) {
                    ids.push(id);
                }
            }
        }
        let present: HashSet<DrawerId> =
            self.store().drawers(self.workspace(), &ids)?.into_iter().map(|d| d.id).collect();
        let wanted: HashSet<&DrawerId> = ids.iter().collect();
        Ok(SourceFiling {
            added: ids.iter().filter(|id| !present.contains(id)).count(),
            unchanged: ids.iter().filter(|id| present.contains(id)).count(),
            removed: before.iter().filter(|id| !wanted.contains(id)).count(),
        })
    }

    /// The miner's cursor of a source (see `StoreRead::source_cursor`).
    pub fn source_cursor(&self, source: &str) -> EngineResult<Option<String>> {
        Ok(self.store().source_cursor(self.workspace(), source)?)
    }

    /// Stores or forgets the miner's cursor of a source.
    pub fn set_source_cursor(&self, source: &str, cursor: Option<&str>) -> EngineResult<()> {
        Ok(self.store().set_source_cursor(self.workspace(), source, cursor, self.now())?)
    }

    /// Files `requests` and removes, in the same transaction, the drawers
    /// of `replace` they do not file again.
    fn file_requests(&self, requests: Vec<IngestRequest>, replace: &HashSet<DrawerId>) -> EngineResult<SourceFiled> {
        let mut filed = SourceFiled::default();
        let (reports, removed) = self.ingest_replacing(requests, Some(replace));
        for report in reports {
            let mut ids = Vec::new();
            for outcome in report?.chunks {
                if outcome.is_new() {
                    filed.filing.added += 1;
                } else {
                    filed.filing.unchanged += 1;
                }
                ids.push(outcome.drawer_id().clone());
            }
            filed.drawers.push(ids);
        }
        filed.filing.removed = removed?;
        Ok(filed)
    }
}

impl Palace {
    /// Every source file named by a visible drawer (of one wing, or all),
    /// with its drawers. Reads every drawer: a maintenance call.
    pub fn sources(&self, wing: Option<&str>) -> EngineResult<std::collections::BTreeMap<String, Vec<DrawerId>>> {
        let mut sources: std::collections::BTreeMap<String, Vec<DrawerId>> = std::collections::BTreeMap::new();
        let mut after: Option<DrawerId> = None;
        loop {
            let page = self.store().scan_drawers(self.workspace(), after.as_ref(), 1_000)?;
            let Some(last) = page.last() else { break };
            after = Some(last.id.clone());
            for drawer in page {
                if drawer.status != mempalace_core::DrawerStatus::Active
                    || wing.is_some_and(|w| drawer.wing.as_str() != w)
                {
                    continue;
                }
                if let Some(source) = drawer.source_file {
                    sources.entry(source).or_default().push(drawer.id);
                }
            }
        }
        Ok(sources)
    }
}
