//! Consolidation: how memories mature (SPEC §6; seed 2's episodic,
//! semantic and dreaming workers; seed 0's prune).
//!
//! - **Episodes.** A session — drawers sharing a `session_id`, whatever
//!   filed them: a hook, a mined transcript, a sweep, an MCP session — has
//!   ended when no drawer joined it for [`EPISODE_IDLE`] (or when it is
//!   ended explicitly). `consolidate` then writes its episodic summary:
//!   abstractive when a language model answers, else extractive; an L0
//!   abstract (its first sentence) and key topics either way. A session
//!   that grows again is summarised again, in place. Summaries are
//!   searched ([`Palace::search_episodes`]), injected (their abstracts) and
//!   drill down to their drawers ([`Palace::episode`]).
//! - **Promotion.** What the rules extract from each recent episode's
//!   turns (preferences, facts, constraints, …) is compared across
//!   episodes; an item said in [`PROMOTE_MIN_EPISODES`] or more becomes a
//!   semantic memory (wing `memories`, `context.memory.tier = semantic`,
//!   with the episodes and sessions it came from) and a knowledge-graph
//!   fact sourced from that drawer. A memory already filed for it is
//!   promoted in place instead of filed twice.
//! - **Dreaming** (off unless enabled): once [`DREAM_MIN_EPISODES`]
//!   unpromoted episodes of a user have gathered, up to
//!   [`DREAM_MAX_EPISODES`] of them become long-term insights (the model's,
//!   else their abstracts as a digest), filed in `memories/dreaming`; the
//!   episodes are marked promoted, so each is dreamt once.
//! - **Prune** (in `maintain`): drawers whose importance decayed below
//!   [`PRUNE_BELOW`] with fewer than [`PRUNE_MAX_ACCESSES`] accesses move
//!   to the archive (status `archived`: kept whole, hidden, restorable),
//!   never leaving fewer than [`PRUNE_KEEP`] active drawers.
//!
//! - **Entity dedup** (`crate::entities`): names that are one entity
//!   ("Postgres", "PostgreSQL", "postgres db") become aliases of one
//!   canonical entity, reversibly.
//!
//! Every step is idempotent (deterministic ids, `source_id` per session
//! state, promoted marks), runs once per tick across processes, and stops
//! with `MEMPALACE_CONSOLIDATION=off`.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use mempalace_core::episode::{
    ABSTRACT_CHARS, EPISODIC_TTL_DAYS, extractive_summary, first_sentence, jaccard, word_set,
};
use mempalace_core::llm::{Task, read_json};
use mempalace_core::memory::{Decision, NewMemory, extract_by_rules, turns_from_text};
use mempalace_core::prompts::{check_dream, check_summary, dream_request, summarize_request};
use mempalace_core::session::EpisodicSummary;
use mempalace_core::{ContentHash, Drawer, DrawerId, DrawerStatus, Importance, Room, Wing};
use mempalace_store::{PruneCandidate, SessionActivity};
use serde_json::{Map, Value, json};

use crate::error::{EngineError, EngineResult};
use crate::ingest::{ChunkOutcome, IngestRequest};
use crate::memories::{MEMORY_WING, memory_type_of};
use crate::palace::Palace;
use crate::work::PeriodicJob;

/// Episodes, promotion and dreaming, every ten minutes (one process per
/// tick; GoClaw's dreaming debounce is the period).
pub const CONSOLIDATE: PeriodicJob = PeriodicJob { name: "consolidate", every: Duration::from_secs(600) };
/// A session with no new drawer for this long has ended.
pub const EPISODE_IDLE: Duration = Duration::from_secs(30 * 60);
/// Episodes an item must recur in to be promoted.
pub const PROMOTE_MIN_EPISODES: usize = 2;
/// The most recent episodes promotion compares.
pub const PROMOTE_WINDOW: usize = 50;
/// Word overlap (Jaccard of content words) from which two observations of
/// the same kind and name are the same item.
pub const PROMOTE_SIMILARITY: f64 = 0.4;
/// Importance of a semantic memory.
pub const SEMANTIC_IMPORTANCE: f64 = 4.0;
/// Unpromoted episodes of a user needed before dreaming (seed 2).
pub const DREAM_MIN_EPISODES: usize = 5;
/// Episodes one dream reads at most (seed 2).
pub const DREAM_MAX_EPISODES: usize = 10;
/// Where dreams are filed, in the memories wing.
pub const DREAM_ROOM: &str = "dreaming";
/// Prune archives drawers whose importance is below this (seed 0).
pub const PRUNE_BELOW: f64 = 0.5;
/// …and that were accessed fewer times than this (seed 0).
pub const PRUNE_MAX_ACCESSES: u64 = 3;
/// …never leaving fewer active drawers than this (seed 0).
pub const PRUNE_KEEP: u64 = 100;
/// Where promotion remembers the newest episode it read (a source cursor).
const PROMOTE_CURSOR: &str = "job:promote";
/// Who files promoted and dreamt memories.
pub const CONSOLIDATOR: &str = "consolidation";

/// What one `consolidate` run did in a workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsolidateReport {
    /// Episodic summaries written (new sessions and sessions that grew).
    pub episodes: usize,
    /// …of which the language model wrote.
    pub abstractive: usize,
    /// Items promoted to semantic memories (filed, or promoted in place).
    pub promoted: usize,
    /// Insights dreamt.
    pub insights: usize,
    /// Episodes folded into a dream.
    pub dreamt_episodes: usize,
    /// Duplicate entities merged into another (aliases made).
    pub entities_merged: usize,
    /// Why the model was not used, when it was not for some step.
    pub model_fallback: Option<String>,
    /// Why nothing ran, when nothing did.
    pub skipped: Option<String>,
}

impl std::ops::AddAssign for ConsolidateReport {
    fn add_assign(&mut self, other: Self) {
        self.episodes += other.episodes;
        self.abstractive += other.abstractive;
        self.promoted += other.promoted;
        self.insights += other.insights;
        self.dreamt_episodes += other.dreamt_episodes;
        self.entities_merged += other.entities_merged;
        self.model_fallback = self.model_fallback.take().or(other.model_fallback);
        self.skipped = self.skipped.take().or(other.skipped);
    }
}

/// A summary found by [`Palace::search_episodes`].
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeHit {
    /// The summary.
    pub episode: EpisodicSummary,
    /// Relevance 0–1: cosine with the query when both have vectors, else
    /// the share of the query's words the summary holds.
    pub score: f64,
}

/// An episode with the drawers it summarises.
#[derive(Debug, Clone)]
pub struct EpisodeDetail {
    /// The summary.
    pub episode: EpisodicSummary,
    /// Its session's drawers, in filing order (active ones).
    pub drawers: Vec<Drawer>,
}

/// What `prune` archived (or would, on a dry run).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PruneReport {
    /// The drawers, least important first.
    pub drawers: Vec<PruneCandidate>,
    /// Nothing was changed.
    pub dry_run: bool,
}

/// The id of a session's episode (one per session and workspace).
pub fn episode_id(workspace: &str, session: &str) -> String {
    format!("episode_{}", &ContentHash::of(&format!("{workspace}:{session}")).as_str()[..24])
}

/// What a session's episode was written from: its drawer count and latest
/// filing time. An episode whose `source_id` matches is current.
pub fn episode_source(activity: &SessionActivity) -> String {
    format!(
        "{}:{}:{}",
        activity.session_id,
        activity.drawers,
        mempalace_core::time::format_timestamp(&activity.last_filed_at)
    )
}

impl Palace {
    /// Episodes, promotion and dreaming in every workspace (see the module
    /// doc); nothing when consolidation is switched off.
    pub fn consolidate_all(&self) -> EngineResult<ConsolidateReport> {
        if !self.jobs().consolidation {
            return Ok(ConsolidateReport {
                skipped: Some("consolidation is switched off (MEMPALACE_CONSOLIDATION)".into()),
                ..ConsolidateReport::default()
            });
        }
        let mut report = ConsolidateReport::default();
        for workspace in self.store().workspaces()? {
            let palace = self.for_workspace(workspace);
            report += palace.write_episodes()?;
            report.promoted += palace.promote()?;
            // After promotion, whose facts may name an entity twice.
            if self.jobs().entity_dedup {
                report.entities_merged += palace.dedup_entities(false)?.merged;
            }
            if self.jobs().dreaming {
                report += palace.dream()?;
            }
        }
        Ok(report)
    }

    /// Writes the episodes of this workspace's ended sessions that have
    /// none, or whose summary is older than their last drawer.
    pub fn write_episodes(&self) -> EngineResult<ConsolidateReport> {
        let now = self.now();
        let idle = chrono::TimeDelta::from_std(self.jobs().episode_idle).unwrap_or(chrono::TimeDelta::MAX);
        let ttl = chrono::Duration::days(EPISODIC_TTL_DAYS);
        let sessions = self.store().session_activity(self.workspace(), now - idle, Some(MEMORY_WING))?;
        let written: HashMap<String, EpisodicSummary> =
            self.store().episodic_summaries(self.workspace())?.into_iter().map(|e| (e.session_id.clone(), e)).collect();
        let mut report = ConsolidateReport::default();
        for activity in &sessions {
            // A session the palace has not touched for longer than the TTL
            // stays without an episode once its summary expired (an old
            // export mined today is recent: its drawers were filed today).
            if activity.last_updated_at < now - ttl {
                continue;
            }
            let source = episode_source(activity);
            let existing = written.get(&activity.session_id);
            if existing.and_then(|e| e.source_id.as_deref()) == Some(source.as_str()) {
                continue;
            }
            let (_, fallback) = self.write_episode_of(activity, existing, None, None)?;
            report.episodes += 1;
            match fallback {
                None => report.abstractive += 1,
                Some(why) => report.model_fallback = report.model_fallback.or(Some(why)),
            }
        }
        Ok(report)
    }

    /// Writes the episode of `session` now, idle or not (a harness said the
    /// session ended). `None` when the session has no drawers; an episode
    /// already current is returned as it is.
    pub fn write_episode(&self, session: &str) -> EngineResult<Option<EpisodicSummary>> {
        self.write_episode_as(session, None, None)
    }

    /// [`Palace::write_episode`] for a session whose agent and user are
    /// known (an `end_session`): they stand before the ones its drawers
    /// name.
    pub(crate) fn write_episode_as(
        &self,
        session: &str,
        agent: Option<String>,
        user: Option<String>,
    ) -> EngineResult<Option<EpisodicSummary>> {
        let far = self.now() + chrono::Duration::days(1);
        let Some(activity) = self
            .store()
            .session_activity(self.workspace(), far, Some(MEMORY_WING))?
            .into_iter()
            .find(|a| a.session_id == session)
        else {
            return Ok(None);
        };
        let existing = self.store().episodic_summaries(self.workspace())?.into_iter().find(|e| e.session_id == session);
        if let Some(current) =
            existing.as_ref().filter(|e| e.source_id.as_deref() == Some(episode_source(&activity).as_str()))
        {
            return Ok(Some(current.clone()));
        }
        Ok(Some(self.write_episode_of(&activity, existing.as_ref(), agent, user)?.0))
    }

    /// Summarises the session `activity` describes and saves the episode
    /// (replacing `existing`); with why the model did not write it, when
    /// it did not.
    fn write_episode_of(
        &self,
        activity: &SessionActivity,
        existing: Option<&EpisodicSummary>,
        agent: Option<String>,
        user: Option<String>,
    ) -> EngineResult<(EpisodicSummary, Option<String>)> {
        let user = user.or_else(|| activity.owner_user_id.clone());
        let drawers = self.episode_drawers(&activity.session_id, user.as_deref())?;
        let agent = agent.or_else(|| activity.agent.clone());
        let (summary, fallback) =
            self.summarize(&activity.session_id, &drawers, agent, user, episode_source(activity), existing)?;
        self.store().save_episodic_summary(&summary)?;
        Ok((summary, fallback))
    }

    /// The active drawers of a session outside the memories wing, in
    /// filing order, as `viewer` (the session's user) sees them: their own
    /// and shared ones.
    pub(crate) fn episode_drawers(&self, session: &str, viewer: Option<&str>) -> EngineResult<Vec<Drawer>> {
        let filter = mempalace_store::DrawerFilter {
            session_id: Some(session.to_string()),
            viewer: viewer.map(str::to_string),
            ..mempalace_store::DrawerFilter::default()
        };
        let ids = self.store().filtered_ids(self.workspace(), &filter)?;
        let mut drawers = self.store().drawers(self.workspace(), &ids)?;
        drawers.retain(|d| {
            d.status == DrawerStatus::Active
                && d.wing.as_str() != MEMORY_WING
                && (d.owner_user_id.is_none() || d.owner_user_id.as_deref() == viewer)
        });
        drawers.sort_by(|a, b| (a.filed_at, a.chunk_index, &a.id).cmp(&(b.filed_at, b.chunk_index, &b.id)));
        Ok(drawers)
    }

    /// A session's episodic summary from its drawers: the model's when one
    /// is configured and answers (with why it was not otherwise), else
    /// extractive. Keeps a promoted mark the earlier summary had.
    fn summarize(
        &self,
        session: &str,
        drawers: &[Drawer],
        agent: Option<String>,
        user: Option<String>,
        source: String,
        existing: Option<&EpisodicSummary>,
    ) -> EngineResult<(EpisodicSummary, Option<String>)> {
        let texts: Vec<&str> = drawers.iter().map(|d| d.content.as_str()).collect();
        let asked = match self.llm() {
            None => Err("no language model is configured".to_string()),
            Some(llm) => llm
                .chat(&summarize_request(&texts))
                .and_then(|answer| check_summary(&read_json(&answer.text)?))
                .map_err(|error| {
                    tracing::warn!(%error, session, "the episode summary fell back to the extractive one");
                    error.to_string()
                }),
        };
        let (l0_abstract, summary, topics, fallback) = match asked {
            Ok((summary, topics)) => {
                let topics = if topics.is_empty() { key_topics(drawers) } else { topics };
                (first_sentence(&summary, ABSTRACT_CHARS), summary, topics, None)
            }
            Err(why) => {
                let plain: Vec<String> = drawers.iter().filter_map(said).collect();
                let plain: Vec<&str> = plain.iter().map(String::as_str).collect();
                let (summary, l0_abstract) = extractive_summary(&plain);
                (l0_abstract, summary, key_topics(drawers), Some(why))
            }
        };
        let now = self.now();
        let episode = EpisodicSummary {
            workspace_id: self.workspace().clone(),
            id: episode_id(self.workspace().as_str(), session),
            session_id: session.to_string(),
            source_id: Some(source),
            agent,
            user_id: user,
            l0_abstract,
            summary,
            key_topics: topics,
            created_at: now,
            expires_at: Some(now + chrono::Duration::days(EPISODIC_TTL_DAYS)),
            promoted_at: existing.and_then(|e| e.promoted_at),
        };
        Ok((episode, fallback))
    }

    /// Promotes what recurs across the recent episodes (see the module
    /// doc). Returns how many items were promoted this run.
    pub fn promote(&self) -> EngineResult<usize> {
        let mut episodes = self.store().episodic_summaries(self.workspace())?;
        // Promotion reads episodes only: with none written since the last
        // run (by this job, a hook or `end_session`), it would find what
        // that run found.
        let newest = episodes.iter().map(|e| mempalace_core::time::format_timestamp(&e.created_at)).max();
        let seen = self.store().source_cursor(self.workspace(), PROMOTE_CURSOR)?;
        if newest.is_none() || newest <= seen {
            return Ok(0);
        }
        episodes.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        let episodes: Vec<EpisodicSummary> =
            episodes.split_off(episodes.len().saturating_sub(PROMOTE_WINDOW)).into_iter().collect();
        let mut items: Vec<Item> = Vec::new();
        for (at, episode) in episodes.iter().enumerate() {
            let drawers = self.episode_drawers(&episode.session_id, episode.user_id.as_deref())?;
            let turns: Vec<_> = drawers.iter().flat_map(|d| turns_from_text(d.content.as_str(), &[])).collect();
            for decision in extract_by_rules(&turns, &[]) {
                if let Decision::Add(memory) = decision {
                    items.push(Item { episode: at, owner: episode.user_id.clone(), memory });
                }
            }
        }
        let mut promoted = 0;
        for group in recurring(&items) {
            let newest = &items[*group.last().expect("groups are not empty")];
            let mut episode_ids: Vec<&str> = group.iter().map(|&i| episodes[items[i].episode].id.as_str()).collect();
            episode_ids.dedup();
            let mut sessions: Vec<&str> =
                group.iter().map(|&i| episodes[items[i].episode].session_id.as_str()).collect();
            sessions.dedup();
            let provenance = json!({
                "tier": "semantic",
                "episodes": episode_ids,
                "sessions": sessions,
                "promoted_at": mempalace_core::time::format_timestamp(&self.now()),
            });
            if self.promote_item(newest, provenance)? {
                promoted += 1;
            }
        }
        let newest = episodes.iter().map(|e| mempalace_core::time::format_timestamp(&e.created_at)).max();
        self.store().set_source_cursor(self.workspace(), PROMOTE_CURSOR, newest.as_deref(), self.now())?;
        Ok(promoted)
    }

    /// Files `item` as a semantic memory, or promotes the memory already
    /// filed for it; adds its knowledge-graph fact. False when it was
    /// already promoted with the same provenance.
    fn promote_item(&self, item: &Item, provenance: Value) -> EngineResult<bool> {
        let memory = &item.memory;
        let words = word_set(&memory.observation);
        let known = self.memories(item.owner.as_deref())?.into_iter().find(|stored| {
            stored.drawer.owner_user_id == item.owner
                && stored.memory.entity_type == memory.entity_type
                && stored.memory.entity_name.eq_ignore_ascii_case(&memory.entity_name)
                && jaccard(&words, &word_set(&stored.memory.observation)) >= PROMOTE_SIMILARITY
        });
        let drawer_id = match known {
            Some(stored) => {
                let mut drawer = stored.drawer;
                let context = drawer.context.entry("memory").or_insert_with(|| Value::Object(Map::new()));
                let Some(context) = context.as_object_mut() else {
                    return Ok(false);
                };
                if context.get("episodes") == provenance.get("episodes") {
                    return Ok(false);
                }
                for (key, value) in provenance.as_object().into_iter().flatten() {
                    context.insert(key.clone(), value.clone());
                }
                if drawer.importance.get() < SEMANTIC_IMPORTANCE {
                    drawer.importance = Importance::new(SEMANTIC_IMPORTANCE)?;
                }
                drawer.updated_at = self.now();
                self.store().replace_drawer(&drawer)?;
                drawer.id
            }
            None => match self.file_semantic(memory, item.owner.clone(), provenance)? {
                Some(id) => id,
                None => return Ok(false),
            },
        };
        let subject = item.owner.clone().unwrap_or_else(|| "user".to_string());
        let predicate = format!("has_{}", memory.entity_type.as_str());
        if let Err(error) = self.kg_add(
            &subject,
            &predicate,
            &memory.entity_name,
            None,
            None,
            Some(0.8),
            Some(drawer_id.clone()),
            Some(CONSOLIDATOR.into()),
        ) {
            // The memory stands without its fact (a graph at its limit, a
            // name the graph refuses); the next run tries again.
            tracing::warn!(%error, drawer = %drawer_id, "a promoted memory's fact was not added");
        }
        Ok(true)
    }

    fn file_semantic(
        &self,
        memory: &NewMemory,
        owner: Option<String>,
        provenance: Value,
    ) -> EngineResult<Option<DrawerId>> {
        let mut request = IngestRequest::new(
            Wing::parse(MEMORY_WING)?,
            Room::parse(memory.entity_type.as_str())?,
            memory.observation.as_str(),
            CONSOLIDATOR,
        );
        request.memory_type = Some(memory_type_of(memory.entity_type));
        request.importance = Some(Importance::new(SEMANTIC_IMPORTANCE)?);
        request.raw = true;
        request.owner_user_id = owner;
        let mut context = Map::new();
        context.insert("entity_type".into(), json!(memory.entity_type.as_str()));
        context.insert("entity_name".into(), json!(memory.entity_name));
        context.insert("scope".into(), json!(memory.scope.as_str()));
        context.insert("extracted_by".into(), json!("rules"));
        for (key, value) in provenance.as_object().into_iter().flatten() {
            context.insert(key.clone(), value.clone());
        }
        request.context.insert("memory".into(), Value::Object(context));
        Ok(filed_id(self.ingest(request)?.chunks.first()))
    }

    /// One dreaming pass per user with enough unpromoted episodes (see the
    /// module doc).
    pub fn dream(&self) -> EngineResult<ConsolidateReport> {
        let mut report = ConsolidateReport::default();
        let mut by_user: std::collections::BTreeMap<Option<String>, Vec<EpisodicSummary>> = Default::default();
        for episode in self.store().episodic_summaries(self.workspace())? {
            if episode.promoted_at.is_none() {
                by_user.entry(episode.user_id.clone()).or_default().push(episode);
            }
        }
        for (user, mut episodes) in by_user {
            if episodes.len() < DREAM_MIN_EPISODES {
                continue;
            }
            episodes.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
            episodes.truncate(DREAM_MAX_EPISODES);
            let summaries: Vec<&str> = episodes.iter().map(|e| e.summary.as_str()).collect();
            let asked = match self.llm() {
                None => Err("no language model is configured".to_string()),
                Some(llm) => llm
                    .chat(&dream_request(&summaries))
                    .and_then(|answer| check_dream(&read_json(&answer.text)?, episodes.len()))
                    .map(|checked| checked.items.into_iter().flatten().collect::<Vec<_>>())
                    .map_err(|error| {
                        tracing::warn!(%error, "dreaming fell back to a digest of the episodes");
                        error.to_string()
                    }),
            };
            let (insights, by) = match asked {
                Ok(insights) => (
                    insights.into_iter().map(|i| (i.kind.to_string(), i.text, i.episodes)).collect::<Vec<_>>(),
                    format!("llm:{}", self.llm().map(|l| l.model_for(Task::Dream)).unwrap_or_default()),
                ),
                Err(why) => {
                    report.model_fallback = report.model_fallback.or(Some(why));
                    (digest(&episodes), "digest".to_string())
                }
            };
            let note = format!("_system/dreaming/{}-consolidated.md", self.now().format("%Y%m%d"));
            for (kind, text, cited) in &insights {
                let mut request = IngestRequest::new(
                    Wing::parse(MEMORY_WING)?,
                    Room::parse(DREAM_ROOM)?,
                    text.as_str(),
                    CONSOLIDATOR,
                );
                request.raw = true;
                request.owner_user_id = user.clone();
                request.source_file = Some(note.clone());
                request.importance = Some(Importance::new(SEMANTIC_IMPORTANCE)?);
                let ids: Vec<&str> = cited.iter().filter_map(|&i| episodes.get(i)).map(|e| e.id.as_str()).collect();
                request.context.insert(
                    "memory".into(),
                    json!({"entity_type": "fact", "entity_name": kind, "scope": if user.is_some() { "user" } else { "workspace" },
                           "tier": "dream", "episodes": ids, "extracted_by": by}),
                );
                if filed_id(self.ingest(request)?.chunks.first()).is_some() {
                    report.insights += 1;
                }
            }
            let ids: Vec<String> = episodes.iter().map(|e| e.id.clone()).collect();
            report.dreamt_episodes += self.store().mark_episodes_promoted(self.workspace(), &ids, self.now())?;
        }
        Ok(report)
    }

    /// The workspace's episodes `user` may see (theirs and unowned ones;
    /// every one when `user` is `None`), newest first.
    pub fn episodes(&self, user: Option<&str>) -> EngineResult<Vec<EpisodicSummary>> {
        let mut episodes = self.store().episodic_summaries(self.workspace())?;
        episodes.retain(|e| user.is_none() || e.user_id.is_none() || e.user_id.as_deref() == user);
        episodes.sort_by(|a, b| (b.created_at, &b.id).cmp(&(a.created_at, &a.id)));
        Ok(episodes)
    }

    /// An episode (by its id or its session's id) with its drawers.
    pub fn episode(&self, id: &str) -> EngineResult<EpisodeDetail> {
        let episode = self
            .store()
            .episodic_summaries(self.workspace())?
            .into_iter()
            .find(|e| e.id == id || e.session_id == id)
            .ok_or_else(|| EngineError::NotFound { what: "episode", id: id.to_string() })?;
        let drawers = self.episode_drawers(&episode.session_id, episode.user_id.as_deref())?;
        Ok(EpisodeDetail { episode, drawers })
    }

    /// The episodes most relevant to `query` that `user` may see, best
    /// first, at most `limit`, none below `min_score`.
    ///
    /// `embedded` is the query's vector (model, vector) when the caller has
    /// it already (a search it just ran: `SearchOutcome::query_vector`), so
    /// the query is not embedded twice.
    pub fn search_episodes(
        &self,
        query: &str,
        embedded: Option<&(String, Vec<f32>)>,
        user: Option<&str>,
        limit: usize,
        min_score: f64,
    ) -> EngineResult<Vec<EpisodeHit>> {
        let episodes = self.episodes(user)?;
        if episodes.is_empty() || query.trim().is_empty() {
            return Ok(Vec::new());
        }
        let texts: Vec<&str> = episodes.iter().map(|e| e.summary.as_str()).collect();
        let asked = match embedded {
            Some((model, vector)) => Some((model.clone(), vector.clone())),
            None => {
                let embedded = self.embed_texts(&[query])?;
                embedded.model.zip(embedded.vectors.into_iter().next().flatten())
            }
        };
        let scores: Vec<f64> = match asked {
            Some((model, asked)) => {
                let vectors = self.cached_vectors(&model, &texts)?;
                texts
                    .iter()
                    .zip(&vectors)
                    .map(|(text, vector)| match vector {
                        Some(vector) => f64::from(mempalace_core::vector::cosine(&asked, vector)),
                        None => word_share(query, text),
                    })
                    .collect()
            }
            _ => texts.iter().map(|text| word_share(query, text)).collect(),
        };
        let mut hits: Vec<EpisodeHit> = episodes
            .into_iter()
            .zip(scores)
            .filter(|(_, score)| *score >= min_score && *score > 0.0)
            .map(|(episode, score)| EpisodeHit { episode, score })
            .collect();
        hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.episode.id.cmp(&b.episode.id)));
        hits.truncate(limit);
        Ok(hits)
    }

    /// Archives this workspace's faded drawers (see the module doc); with
    /// `dry_run`, only says which.
    pub fn prune(&self, dry_run: bool) -> EngineResult<PruneReport> {
        let now = self.now();
        let age = chrono::TimeDelta::from_std(crate::work::DECAY_AGE).unwrap_or(chrono::TimeDelta::MAX);
        let drawers =
            self.store().prune_candidates(self.workspace(), PRUNE_BELOW, PRUNE_MAX_ACCESSES, now - age, PRUNE_KEEP)?;
        if !dry_run {
            for candidate in &drawers {
                let reason = format!(
                    "pruned: importance {:.2} below {PRUNE_BELOW} with {} accesses (restore with `mempalace restore {}`)",
                    candidate.importance, candidate.access_count, candidate.id
                );
                self.store().set_drawer_status(
                    self.workspace(),
                    &candidate.id,
                    DrawerStatus::Archived,
                    Some(&reason),
                    now,
                )?;
            }
        }
        Ok(PruneReport { drawers, dry_run })
    }

    /// Brings an archived (or soft-deleted) drawer back: active again,
    /// its importance lifted to the prune floor so the next prune does not
    /// take it straight back.
    pub fn restore(&self, id: &DrawerId) -> EngineResult<Drawer> {
        let mut drawer = self
            .store()
            .drawer(self.workspace(), id)?
            .ok_or_else(|| EngineError::NotFound { what: "drawer", id: id.to_string() })?;
        match drawer.status {
            DrawerStatus::Active => return Ok(drawer),
            DrawerStatus::Archived | DrawerStatus::Invalidated => {}
            DrawerStatus::Superseded => {
                return Err(EngineError::Conflict(format!(
                    "{id} was superseded by {}; restore that drawer's history by editing the newer one instead",
                    drawer.superseded_by.as_ref().map_or("a newer drawer".to_string(), |d| d.to_string())
                )));
            }
        }
        drawer.status = DrawerStatus::Active;
        drawer.status_reason = None;
        if drawer.importance.get() < PRUNE_BELOW * 2.0 {
            drawer.importance = Importance::new(PRUNE_BELOW * 2.0)?;
        }
        drawer.updated_at = self.now();
        self.store().replace_drawer(&drawer)?;
        Ok(drawer)
    }

    /// The archived drawers of this workspace, oldest filed first, at most
    /// `limit`.
    pub fn archived(&self, limit: usize) -> EngineResult<Vec<Drawer>> {
        let mut found = Vec::new();
        let mut after: Option<DrawerId> = None;
        loop {
            let page = self.store().scan_drawers(self.workspace(), after.as_ref(), 1_000)?;
            let Some(last) = page.last() else { break };
            after = Some(last.id.clone());
            found.extend(page.into_iter().filter(|d| d.status == DrawerStatus::Archived));
            if found.len() >= limit {
                break;
            }
        }
        found.sort_by(|a, b| (a.filed_at, &a.id).cmp(&(b.filed_at, &b.id)));
        found.truncate(limit);
        Ok(found)
    }
}

/// One extracted item of one episode.
struct Item {
    episode: usize,
    owner: Option<String>,
    memory: NewMemory,
}

/// Groups of items (indexes, in order) that say the same thing in at least
/// [`PROMOTE_MIN_EPISODES`] different episodes: same owner, kind and name
/// (case aside), and observations sharing [`PROMOTE_SIMILARITY`] of their
/// content words with the group's first.
fn recurring(items: &[Item]) -> Vec<Vec<usize>> {
    let words: Vec<BTreeSet<String>> = items.iter().map(|i| word_set(&i.memory.observation)).collect();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (at, item) in items.iter().enumerate() {
        let home = groups.iter_mut().find(|group| {
            let first = &items[group[0]];
            first.owner == item.owner
                && first.memory.entity_type == item.memory.entity_type
                && first.memory.entity_name.eq_ignore_ascii_case(&item.memory.entity_name)
                && jaccard(&words[group[0]], &words[at]) >= PROMOTE_SIMILARITY
        });
        match home {
            Some(group) => group.push(at),
            None => groups.push(vec![at]),
        }
    }
    groups.retain(|group| {
        let episodes: BTreeSet<usize> = group.iter().map(|&i| items[i].episode).collect();
        episodes.len() >= PROMOTE_MIN_EPISODES
    });
    groups
}

/// Dreaming without a model: one "pattern" per episode abstract, so the
/// episodes' gist outlives their TTL (cited episode = itself).
fn digest(episodes: &[EpisodicSummary]) -> Vec<(String, String, Vec<usize>)> {
    episodes
        .iter()
        .enumerate()
        .filter(|(_, e)| !e.l0_abstract.trim().is_empty())
        .map(|(at, e)| {
            let day = e.created_at.format("%Y-%m-%d");
            ("pattern".to_string(), format!("{day}: {}", e.l0_abstract.trim()), vec![at])
        })
        .collect()
}

/// What a drawer says, for an extractive summary: the user's turns of a
/// conversation (what the session was about, without `user:` labels or
/// `>` quoting), else its text; nothing for a mined conversation's header
/// (title, directory, date: no part of what was said).
fn said(drawer: &Drawer) -> Option<String> {
    if drawer.context.get("unit").and_then(Value::as_str) == Some("header") {
        return None;
    }
    let turns = turns_from_text(drawer.content.as_str(), &[]);
    let asked: Vec<&str> = turns
        .iter()
        .filter(|t| t.speaker == mempalace_core::memory::Speaker::User)
        .map(|t| t.text.trim())
        .filter(|t| !t.is_empty())
        .collect();
    Some(if asked.is_empty() { drawer.content.as_str().to_string() } else { asked.join("\n") })
}

/// Capitalised names the drawers mention (entity extraction without a
/// model), at most ten, first seen first.
fn key_topics(drawers: &[Drawer]) -> Vec<String> {
    let known = mempalace_core::extract::KnownNames::new(Vec::new());
    let mut topics: Vec<String> = Vec::new();
    for drawer in drawers {
        for entity in mempalace_core::extract::extract(drawer.content.as_str(), &known, None).entities {
            if topics.len() < mempalace_core::prompts::MAX_KEY_TOPICS && !topics.contains(&entity.name) {
                topics.push(entity.name);
            }
        }
    }
    topics
}

/// The share of the query's content words that `text` holds.
fn word_share(query: &str, text: &str) -> f64 {
    let asked = word_set(query);
    if asked.is_empty() {
        return 0.0;
    }
    let theirs = word_set(text);
    asked.iter().filter(|w| theirs.contains(*w)).count() as f64 / asked.len() as f64
}

/// The drawer an ingest filed (or found already filed, on a re-run).
fn filed_id(outcome: Option<&ChunkOutcome>) -> Option<DrawerId> {
    match outcome? {
        ChunkOutcome::Filed(id) | ChunkOutcome::FiledNear { id, .. } | ChunkOutcome::AlreadyFiled(id) => {
            Some(id.clone())
        }
        ChunkOutcome::Duplicate { existing, .. } => Some(existing.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mempalace_core::memory::{EntityType, MemoryScope};

    fn item(episode: usize, name: &str, observation: &str) -> Item {
        Item {
            episode,
            owner: None,
            memory: NewMemory {
                entity_type: EntityType::Preference,
                entity_name: name.into(),
                observation: observation.into(),
                scope: MemoryScope::User,
            },
        }
    }

    #[test]
    fn only_items_said_in_two_episodes_recur() {
        let items = vec![
            item(0, "editor", "The user prefers Vim as their editor."),
            item(0, "editor", "The user prefers Vim as their editor."),
            item(1, "Editor", "The user prefers vim as an editor."),
            item(1, "theme", "The user prefers a dark theme."),
            item(2, "editor", "The user likes Emacs keybindings for everything at work."),
        ];
        assert_eq!(recurring(&items), vec![vec![0, 1, 2]], "the same episode twice is not a recurrence");
    }
}
