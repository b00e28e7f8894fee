//! Background work that every process on a palace shares (SPEC §6, seed
//! 0's cold path, seed 4's scheduling).
//!
//! **process** — the cold path without an LLM: a worker claims a batch of
//! raw drawers (the store guarantees no two live claims on one drawer,
//! across processes), gives each a memory type when it has none
//! (heuristic classifier), extracts entities and facts when none were
//! extracted at ingestion (mined and raw drawers), and completes the claim
//! as `processed` (tier `heuristic`). A failure puts the drawer back as
//! raw with one more retry, and after [`MAX_RETRIES`] marks it `failed`.
//! Any number of processes may run it at once: claims split the work.
//!
//! **Periodic jobs** run once per wall-clock tick across all processes:
//! ticks are counted from the Unix epoch in whole periods, so every
//! process computes the same tick at the same moment whenever it started,
//! and [`Palace::run_periodic`] lets exactly one of them run each tick's
//! job (the store's job lock). `maintain` (daily) decays the importance of
//! old, idle drawers and expires episodic summaries past their TTL.

use std::time::Duration;

use mempalace_core::classify::{classify, detect_hall};
use mempalace_core::extract::{EntityKind, ExtractedEntity, ExtractedTriple, Extraction, KnownNames};
use mempalace_core::llm::{LlmError, Task, read_json};
use mempalace_core::memory::{Speaker, contradicts, turns_from_text};
use mempalace_core::prompts::{
    Classified, Pair, check_classification, check_conflicts, classify_request, conflict_request,
};
use mempalace_core::{Drawer, DrawerId, DrawerState, DrawerStatus, Hall, Importance, PipelineTier, Timestamp};

use crate::error::EngineResult;
use crate::memories::{ExtractOptions, ExtractPath, MEMORY_WING};
use crate::palace::Palace;

/// Raw drawers claimed per batch.
pub const PROCESS_BATCH: usize = 64;
/// Drawers classified per model call (seed 0: one structured call per
/// batch, single calls when the batch's answer cannot be read).
pub const LLM_BATCH: usize = 16;
/// Neighbours above this cosine join a drawer's cluster (and are merged
/// into it when they add nothing).
pub const CLUSTER_COSINE: f32 = 0.85;
/// Neighbours from this cosine up are checked for a contradiction. Seed 0
/// uses 0.75 with OpenAI's embeddings; with MiniLM a changed value sits
/// lower ("Production runs on AWS." / "Production runs on GCP now." is
/// 0.63), and both judges — the model, or the slot rule — decide on the
/// texts, not the cosine.
pub const CONFLICT_COSINE: f32 = 0.6;
/// Neighbours looked at per processed drawer.
const NEIGHBOURS: usize = 5;

/// The older neighbours of each drawer a batch processed (see
/// `older_neighbours`), found once for clustering and conflicts.
type Neighbours = std::collections::HashMap<DrawerId, Vec<(Drawer, f32)>>;
/// How long a claim lasts; a worker that dies loses its claims after this.
pub const CLAIM_LEASE: Duration = Duration::from_secs(300);
/// Attempts before a drawer is marked `failed`.
pub const MAX_RETRIES: u32 = 3;
/// Decay factor per `maintain` run (seed 0: about a two-month half-life).
pub const DECAY_FACTOR: f64 = 0.98;
/// Importance never decays below this.
pub const DECAY_FLOOR: f64 = 0.3;
/// Only drawers filed longer ago than this decay.
pub const DECAY_AGE: Duration = Duration::from_secs(30 * 86_400);
/// …and not accessed within this.
pub const DECAY_IDLE: Duration = Duration::from_secs(7 * 86_400);

/// How the jobs run: batch sizes, periods and switches (settings may
/// change the defaults: `MEMPALACE_PROCESS_BATCH`, `MEMPALACE_LLM_BATCH`,
/// `MEMPALACE_{PROCESS,ENRICH,MAINTAIN,CONSOLIDATE}_EVERY_S`,
/// `MEMPALACE_EPISODE_IDLE_S`, `MEMPALACE_CONSOLIDATION`,
/// `MEMPALACE_DREAMING`, `MEMPALACE_PRUNE`, `MEMPALACE_ENTITY_DEDUP`,
/// `MEMPALACE_CENTROIDS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobSettings {
    /// Raw drawers claimed per `process` batch.
    pub process_batch: usize,
    /// Drawers per model call (classification, conflicts, enrichment).
    pub llm_batch: usize,
    /// `process`'s period.
    pub process_every: Duration,
    /// `enrich`'s period.
    pub enrich_every: Duration,
    /// `maintain`'s period.
    pub maintain_every: Duration,
    /// `consolidate`'s period.
    pub consolidate_every: Duration,
    /// A session with no new drawer for this long has ended (its episode
    /// is written by the next `consolidate`).
    pub episode_idle: Duration,
    /// Whether `consolidate` runs at all (the kill switch of episodes,
    /// promotion and dreaming; GoClaw `consolidation_enabled`).
    pub consolidation: bool,
    /// Whether `consolidate` dreams (off unless asked: it writes new
    /// memories, and with a model it costs tokens).
    pub dreaming: bool,
    /// Whether `maintain` prunes faded drawers to the archive.
    pub prune: bool,
    /// Whether `consolidate` merges duplicate entities.
    pub entity_dedup: bool,
    /// Whether `maintain` trains the centroids.
    pub centroids: bool,
}

impl Default for JobSettings {
    fn default() -> Self {
        Self {
            process_batch: PROCESS_BATCH,
            llm_batch: LLM_BATCH,
            process_every: PROCESS.every,
            enrich_every: ENRICH.every,
            maintain_every: MAINTAIN.every,
            consolidate_every: crate::consolidate::CONSOLIDATE.every,
            episode_idle: crate::consolidate::EPISODE_IDLE,
            consolidation: true,
            dreaming: false,
            prune: true,
            entity_dedup: true,
            centroids: true,
        }
    }
}

impl JobSettings {
    /// `job` with this palace's period.
    pub fn periodic(&self, job: &PeriodicJob) -> PeriodicJob {
        let every = match job.name {
            "process" => self.process_every,
            "enrich" => self.enrich_every,
            "maintain" => self.maintain_every,
            "consolidate" => self.consolidate_every,
            _ => job.every,
        };
        PeriodicJob { name: job.name, every }
    }
}

/// A job run on wall-clock-aligned ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeriodicJob {
    /// Its name (the lock and tick key).
    pub name: &'static str,
    /// Its period.
    pub every: Duration,
}

/// The cold path, every minute (every process takes part through claims).
pub const PROCESS: PeriodicJob = PeriodicJob { name: "process", every: Duration::from_secs(60) };
/// Entities and facts for important drawers the model never read, every
/// ten minutes (one process per tick).
pub const ENRICH: PeriodicJob = PeriodicJob { name: "enrich", every: Duration::from_secs(600) };
/// Drawers enriched per run, at most (seed 0).
pub const ENRICH_BATCH: usize = 100;
/// Drawers looked at per run while searching for candidates.
const ENRICH_SCAN: usize = 2_000;
/// Where `enrich` remembers how far it scanned (a source cursor).
const ENRICH_CURSOR: &str = "job:enrich";

/// Decay and TTL, daily at midnight UTC (one process per day).
pub const MAINTAIN: PeriodicJob = PeriodicJob { name: "maintain", every: Duration::from_secs(86_400) };

/// The tick `at` falls in: whole periods since the Unix epoch.
pub fn tick_of(at: Timestamp, every: Duration) -> i64 {
    let period = i64::try_from(every.as_millis()).unwrap_or(i64::MAX).max(1);
    at.timestamp_millis().div_euclid(period)
}

/// When tick `tick` starts.
pub fn tick_start(tick: i64, every: Duration) -> Timestamp {
    let period = i64::try_from(every.as_millis()).unwrap_or(i64::MAX).max(1);
    Timestamp::from_timestamp_millis(tick.saturating_mul(period)).unwrap_or(Timestamp::MAX_UTC)
}

/// What one `process` pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessReport {
    /// Drawers claimed.
    pub claimed: usize,
    /// Drawers processed and completed by this worker.
    pub processed: Vec<DrawerId>,
    /// Drawers put back as raw after a failure (another retry to come).
    pub retried: usize,
    /// Drawers marked failed after their last retry.
    pub failed: usize,
    /// Claims that expired and went to another worker before completion.
    pub lost: usize,
    /// Drawers the language model classified.
    pub by_model: usize,
    /// Why some or all drawers were classified without the model.
    pub model_fallback: Option<String>,
    /// Drawers merged into an older one they add nothing to.
    pub merged: usize,
    /// Drawers linked to a cluster of related ones.
    pub clustered: usize,
    /// Older drawers superseded by a processed one that contradicts them.
    pub superseded: Vec<(DrawerId, DrawerId)>,
    /// Facts ended because a newer drawer contradicts their source.
    pub facts_ended: usize,
    /// Memories extracted from the processed conversations: added,
    /// updated, retracted.
    pub memories: (usize, usize, usize),
}

impl ProcessReport {
    fn absorb(&mut self, other: ProcessReport) {
        self.claimed += other.claimed;
        self.processed.extend(other.processed);
        self.retried += other.retried;
        self.failed += other.failed;
        self.lost += other.lost;
        self.by_model += other.by_model;
        self.model_fallback = self.model_fallback.take().or(other.model_fallback);
        self.merged += other.merged;
        self.clustered += other.clustered;
        self.superseded.extend(other.superseded);
        self.facts_ended += other.facts_ended;
        self.memories.0 += other.memories.0;
        self.memories.1 += other.memories.1;
        self.memories.2 += other.memories.2;
    }
}

/// What one `enrich` run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnrichReport {
    /// Drawers looked at.
    pub examined: usize,
    /// Candidates sent to the model.
    pub asked: usize,
    /// Drawers that got entities or facts.
    pub enriched: usize,
    /// Why nothing was asked, when nothing was.
    pub skipped: Option<String>,
}

/// What one `maintain` run did in a workspace.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaintainReport {
    /// Drawers whose importance decayed.
    pub decayed: usize,
    /// Episodic summaries removed at the end of their TTL.
    pub expired: usize,
    /// Drawers moved to the archive (see [`crate::consolidate`]).
    pub archived: usize,
    /// Memory-type and room centroids trained (see [`crate::centroids`]).
    pub centroids_trained: usize,
}

impl Palace {
    /// One batch of the cold path in this workspace (see the module doc).
    pub fn process_batch(&self, worker: &str, limit: usize) -> EngineResult<ProcessReport> {
        let now = self.now();
        let until = now + chrono::TimeDelta::from_std(CLAIM_LEASE).unwrap_or(chrono::TimeDelta::MAX);
        let claimed = self.store().claim_raw_drawers(self.workspace(), worker, limit, now, until)?;
        let mut report = ProcessReport { claimed: claimed.len(), ..ProcessReport::default() };
        if claimed.is_empty() {
            return Ok(report);
        }
        let known = KnownNames::new(self.store().entity_names(self.workspace())?);
        let mut classified = self.classify_with_model(&claimed, &mut report);
        let mut outcomes: Vec<(Drawer, DrawerState)> = Vec::with_capacity(claimed.len());
        for (at, mut drawer) in claimed.into_iter().enumerate() {
            let result = match classified[at].take() {
                Some(found) => self.apply_classification(&mut drawer, found),
                None => self.process_one(&mut drawer, &known),
            };
            let state = match result {
                Ok(()) => DrawerState::Processed,
                Err(error) => {
                    drawer.retry_count += 1;
                    tracing::warn!(%error, drawer = %drawer.id, retry = drawer.retry_count, "processing a drawer failed");
                    if drawer.retry_count >= MAX_RETRIES { DrawerState::Failed } else { DrawerState::Raw }
                }
            };
            drawer.state = state;
            drawer.updated_at = now;
            outcomes.push((drawer, state));
        }
        let mut neighbours = Neighbours::new();
        for (drawer, state) in &outcomes {
            if *state == DrawerState::Processed {
                neighbours.insert(drawer.id.clone(), self.older_neighbours(drawer)?);
            }
        }
        self.review_neighbours(&mut outcomes, &neighbours, &mut report)?;
        let drawers: Vec<Drawer> = outcomes.iter().map(|(d, _)| d.clone()).collect();
        let completed: std::collections::HashSet<DrawerId> =
            self.store().complete_claims(self.workspace(), worker, &drawers)?.into_iter().collect();
        let mut done: Vec<Drawer> = Vec::new();
        for (drawer, state) in outcomes {
            if !completed.contains(&drawer.id) {
                report.lost += 1;
                continue;
            }
            match state {
                DrawerState::Processed | DrawerState::Merged => {
                    report.processed.push(drawer.id.clone());
                    done.push(drawer);
                }
                DrawerState::Failed => report.failed += 1,
                _ => report.retried += 1,
            }
        }
        self.supersede_contradicted(&done, &neighbours, &mut report)?;
        self.extract_from_conversations(&done, &mut report)?;
        Ok(report)
    }

    /// Classification of `drawers` by the language model, batch by batch:
    /// `None` for each drawer it did not classify (then the heuristic path
    /// runs). A batch whose answer cannot be read is asked again drawer
    /// by drawer; any other model error stops asking for this pass.
    fn classify_with_model(&self, drawers: &[Drawer], report: &mut ProcessReport) -> Vec<Option<Classified>> {
        let mut out: Vec<Option<Classified>> = vec![None; drawers.len()];
        let Some(llm) = self.llm() else {
            report.model_fallback = Some("no language model is configured".into());
            return out;
        };
        let ask = |texts: &[&str]| -> Result<Vec<Option<Classified>>, LlmError> {
            let response = llm.chat(&classify_request(Task::Classify, texts))?;
            Ok(check_classification(&read_json(&response.text)?, texts.len())?.items)
        };
        let mut start = 0;
        while start < drawers.len() {
            let end = (start + self.jobs().llm_batch.max(1)).min(drawers.len());
            let texts: Vec<&str> = drawers[start..end].iter().map(|d| d.content.as_str()).collect();
            let answer = match ask(&texts) {
                Err(LlmError::Malformed(why)) if texts.len() > 1 => {
                    tracing::warn!(%why, "a classification batch could not be read; asking drawer by drawer");
                    Ok(vec![None; texts.len()])
                }
                other => other,
            };
            match answer {
                Ok(items) => {
                    for (offset, item) in items.into_iter().enumerate() {
                        let item = match item {
                            Some(item) => Some(item),
                            None if texts.len() > 1 => {
                                ask(&texts[offset..=offset]).ok().and_then(|mut one| one.pop().flatten())
                            }
                            None => None,
                        };
                        if item.is_some() {
                            report.by_model += 1;
                        }
                        out[start + offset] = item;
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "classification fell back to the heuristic path");
                    report.model_fallback = Some(error.to_string());
                    break;
                }
            }
            start = end;
        }
        out
    }

    fn apply_classification(&self, drawer: &mut Drawer, found: Classified) -> EngineResult<()> {
        drawer.memory_type = Some(found.memory_type);
        if drawer.hall.is_none() {
            drawer.hall = Hall::parse(found.hall).ok();
        }
        drawer.importance = Importance::new(found.importance.clamp(0.0, 5.0))?;
        drawer.summary = found.summary.or(drawer.summary.take());
        drawer.pipeline_tier = PipelineTier::Llm;
        let extraction = Extraction {
            entities: found
                .entities
                .iter()
                .map(|name| ExtractedEntity { name: name.clone(), kind: EntityKind::Unknown })
                .collect(),
            triples: found
                .triples
                .iter()
                .map(|t| ExtractedTriple {
                    subject: t.subject.clone(),
                    predicate: t.predicate.clone(),
                    object: t.object.clone(),
                    replaces: None,
                })
                .collect(),
        };
        let mut entities = extraction.entities.clone();
        for triple in &extraction.triples {
            for name in [&triple.subject, &triple.object] {
                if !entities.iter().any(|e| e.name.eq_ignore_ascii_case(name)) {
                    entities.push(ExtractedEntity { name: name.clone(), kind: EntityKind::Unknown });
                }
            }
        }
        let extraction = Extraction { entities, ..extraction };
        drawer.entities = extraction.entities.iter().map(|e| e.name.clone()).collect();
        drawer.entity_count = drawer.entities.len() as u32;
        drawer.triple_count = extraction.triples.len() as u32;
        self.record_extraction(drawer, &extraction)
    }

    /// Clusters: a processed drawer with an older neighbour above
    /// [`CLUSTER_COSINE`] joins the neighbour's cluster, and is merged
    /// into it when it adds nothing (`core::dedup`).
    fn review_neighbours(
        &self,
        outcomes: &mut [(Drawer, DrawerState)],
        neighbours: &Neighbours,
        report: &mut ProcessReport,
    ) -> EngineResult<()> {
        for (drawer, state) in outcomes.iter_mut() {
            if *state != DrawerState::Processed || drawer.cluster_id.is_some() {
                continue;
            }
            let near = neighbours.get(&drawer.id).and_then(|found| found.iter().find(|(_, s)| *s >= CLUSTER_COSINE));
            let Some((near, _)) = near else {
                continue;
            };
            drawer.cluster_id = Some(near.cluster_id.clone().unwrap_or_else(|| near.id.clone()));
            if mempalace_core::dedup::judge(drawer.content.as_str(), near.content.as_str()).is_duplicate() {
                *state = DrawerState::Merged;
                drawer.state = DrawerState::Merged;
                report.merged += 1;
            } else {
                report.clustered += 1;
            }
        }
        Ok(())
    }

    /// Active drawers of the same wing and owner filed before `drawer` (or
    /// at the same moment with a smaller id: the same mining run) whose
    /// vectors are at least [`CONFLICT_COSINE`] similar to its own, most
    /// similar first, with that similarity. Searched once per processed
    /// drawer, for clustering and for conflicts.
    fn older_neighbours(&self, drawer: &Drawer) -> EngineResult<Vec<(Drawer, f32)>> {
        let Some(embedding) = &drawer.embedding else {
            return Ok(Vec::new());
        };
        // The whole workspace is searched and the wing checked on what comes
        // back: a wing filter would make the in-process index list the
        // wing's ids for every processed drawer.
        let filter = mempalace_store::DrawerFilter {
            viewer: drawer.owner_user_id.clone(),
            ..mempalace_store::DrawerFilter::default()
        };
        let hits: Vec<(DrawerId, f32)> = self
            .nearest(&embedding.model, &embedding.vector, &filter, 4 * NEIGHBOURS)?
            .into_iter()
            .filter(|(id, similarity)| *id != drawer.id && *similarity >= CONFLICT_COSINE)
            .collect();
        let ids: Vec<DrawerId> = hits.iter().map(|(id, _)| id.clone()).collect();
        let similarity: std::collections::HashMap<&DrawerId, f32> = hits.iter().map(|(id, s)| (id, *s)).collect();
        // In the order of `ids` (most similar first); a drawer gone meanwhile is left out.
        let mut found: Vec<(Drawer, f32)> = self
            .store()
            .drawers(self.workspace(), &ids)?
            .into_iter()
            .map(|d| {
                let s = similarity.get(&d.id).copied().unwrap_or(0.0);
                (d, s)
            })
            .collect();
        found.retain(|(d, _)| {
            d.status == DrawerStatus::Active
                && d.wing == drawer.wing
                && (d.filed_at, &d.id) < (drawer.filed_at, &drawer.id)
                && d.owner_user_id == drawer.owner_user_id
        });
        Ok(found)
    }

    /// Conflicts: older neighbours from [`CONFLICT_COSINE`] up that a
    /// processed drawer contradicts (the model's verdict, else
    /// `core::memory::contradicts`) are marked superseded by it, and the
    /// facts extracted from them whose subject and relation the newer
    /// drawer restates are ended. Nothing is deleted.
    fn supersede_contradicted(
        &self,
        done: &[Drawer],
        neighbours: &Neighbours,
        report: &mut ProcessReport,
    ) -> EngineResult<()> {
        let mut pairs: Vec<(Drawer, Drawer)> = Vec::new();
        for drawer in done.iter().filter(|d| d.state == DrawerState::Processed) {
            // Only what was filed strictly before: the order of two
            // statements of one mining run says nothing about which came later.
            let earlier =
                neighbours.get(&drawer.id).into_iter().flatten().filter(|(d, _)| d.filed_at < drawer.filed_at);
            for (older, _) in earlier {
                if !mempalace_core::dedup::judge(drawer.content.as_str(), older.content.as_str()).is_duplicate()
                    && !pairs.iter().any(|(o, _)| o.id == older.id)
                {
                    pairs.push((older.clone(), drawer.clone()));
                }
            }
        }
        if pairs.is_empty() {
            return Ok(());
        }
        let verdicts = self.judge_conflicts(&pairs, report);
        for ((older, newer), verdict) in pairs.iter().zip(verdicts) {
            let Some(reason) = verdict else {
                continue;
            };
            if self.supersede(&older.id, &newer.id, &format!("contradicted by {}: {reason}", newer.id))? {
                report.facts_ended += self.end_contradicted_facts(older, newer)?;
                report.superseded.push((older.id.clone(), newer.id.clone()));
            }
        }
        Ok(())
    }

    /// One reason per contradicting pair, `None` for the others.
    fn judge_conflicts(&self, pairs: &[(Drawer, Drawer)], report: &mut ProcessReport) -> Vec<Option<String>> {
        let by_rules = |pairs: &[(Drawer, Drawer)]| -> Vec<Option<String>> {
            pairs
                .iter()
                .map(|(older, newer)| {
                    contradicts(older.content.as_str(), newer.content.as_str())
                        .map(|slot| format!("another {slot} (rules)"))
                })
                .collect()
        };
        let Some(llm) = self.llm() else {
            return by_rules(pairs);
        };
        let mut out = Vec::with_capacity(pairs.len());
        for chunk in pairs.chunks(self.jobs().llm_batch.max(1)) {
            let asked: Vec<Pair<'_>> =
                chunk.iter().map(|(o, n)| Pair { older: o.content.as_str(), newer: n.content.as_str() }).collect();
            let answer = llm
                .chat(&conflict_request(&asked))
                .and_then(|response| check_conflicts(&read_json(&response.text)?, asked.len()));
            match answer {
                Ok(checked) => {
                    let rules = by_rules(chunk);
                    for (verdict, fallback) in checked.items.into_iter().zip(rules) {
                        out.push(match verdict {
                            Some(v) if v.contradicts => {
                                Some(if v.reason.is_empty() { "the model".into() } else { v.reason })
                            }
                            Some(_) => None,
                            None => fallback,
                        });
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "conflict check fell back to the rules");
                    report.model_fallback.get_or_insert_with(|| error.to_string());
                    out.extend(by_rules(chunk));
                }
            }
        }
        out
    }

    /// Ends the open facts cited from `older` whose subject and relation
    /// a fact cited from `newer` restates with another object.
    fn end_contradicted_facts(&self, older: &Drawer, newer: &Drawer) -> EngineResult<usize> {
        // A fact's subject is among its drawer's entities: read the facts
        // about those subjects, not the whole graph.
        let mut subjects: Vec<String> = newer.entities.iter().map(|name| mempalace_core::kg::entity_id(name)).collect();
        subjects.sort();
        subjects.dedup();
        let mut ended = 0;
        for subject in subjects {
            let facts = self.store().triples_about(self.workspace(), &subject, mempalace_store::Direction::Outgoing)?;
            let open_from = |drawer: &Drawer| -> Vec<&mempalace_core::kg::Triple> {
                facts
                    .iter()
                    .filter(|t| t.source_drawer_id.as_ref() == Some(&drawer.id) && t.valid_to.is_none())
                    .collect()
            };
            let new_facts = open_from(newer);
            for old in open_from(older) {
                if new_facts.iter().any(|n| n.predicate == old.predicate && n.object != old.object) {
                    ended += self.store().invalidate_triples(
                        self.workspace(),
                        &old.subject,
                        &old.predicate,
                        &old.object,
                        newer.filed_at,
                    )?;
                }
            }
        }
        Ok(ended)
    }

    /// Memory extraction over the conversations among `done` (drawers whose
    /// text has a user's turns), one extraction per conversation (session,
    /// else source file), in filing order. Memories themselves are not
    /// read again.
    fn extract_from_conversations(&self, done: &[Drawer], report: &mut ProcessReport) -> EngineResult<()> {
        let mut groups: Vec<(String, Option<String>, Vec<&Drawer>)> = Vec::new();
        for drawer in done {
            if drawer.wing.as_str() == MEMORY_WING || drawer.added_by == crate::memories::EXTRACTOR {
                continue;
            }
            let key = drawer
                .session_id
                .clone()
                .or_else(|| drawer.source_file.clone())
                .unwrap_or_else(|| drawer.id.as_str().to_string());
            match groups.iter_mut().find(|(k, owner, _)| *k == key && *owner == drawer.owner_user_id) {
                Some((_, _, members)) => members.push(drawer),
                None => groups.push((key, drawer.owner_user_id.clone(), vec![drawer])),
            }
        }
        for (key, owner, mut members) in groups {
            members.sort_by(|a, b| (a.filed_at, a.chunk_index, &a.id).cmp(&(b.filed_at, b.chunk_index, &b.id)));
            let turns: Vec<_> = members.iter().flat_map(|d| turns_from_text(d.content.as_str(), &[])).collect();
            if !turns.iter().any(|t| t.speaker == Speaker::User) {
                continue;
            }
            let options = ExtractOptions {
                user: owner,
                source: members[0].source_file.clone(),
                session: members[0].session_id.clone(),
                ..ExtractOptions::default()
            };
            let extracted = self.extract_memories(&turns, &options)?;
            if let ExtractPath::Rules(why) = &extracted.path {
                tracing::debug!(conversation = %key, %why, "memories extracted by the rules");
            }
            for applied in &extracted.applied {
                match applied.decision {
                    mempalace_core::memory::Decision::Add(_) if applied.filed.is_some() => report.memories.0 += 1,
                    mempalace_core::memory::Decision::Update { .. } if applied.filed.is_some() => {
                        report.memories.1 += 1
                    }
                    mempalace_core::memory::Decision::Delete { .. } => report.memories.2 += 1,
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Processes raw drawers in every workspace of the palace until none is
    /// left unclaimed.
    pub fn process_all(&self, worker: &str) -> EngineResult<ProcessReport> {
        self.process_while(worker, &|| true)
    }

    /// [`Palace::process_all`], checking `go_on` before each batch: a
    /// worker asked to stop finishes the batch it holds (its claims
    /// completed) and claims no more.
    pub fn process_while(&self, worker: &str, go_on: &dyn Fn() -> bool) -> EngineResult<ProcessReport> {
        let mut total = ProcessReport::default();
        for workspace in self.store().workspaces()? {
            let palace = self.for_workspace(workspace);
            loop {
                if !go_on() {
                    return Ok(total);
                }
                let report = palace.process_batch(worker, self.jobs().process_batch)?;
                let done = report.claimed == 0;
                total.absorb(report);
                if done {
                    break;
                }
            }
        }
        Ok(total)
    }

    fn process_one(&self, drawer: &mut Drawer, known: &KnownNames) -> EngineResult<()> {
        if drawer.memory_type.is_none() {
            drawer.memory_type = Some(classify(drawer.content.as_str()).memory_type);
        }
        if drawer.hall.is_none() {
            drawer.hall = Hall::parse(detect_hall(drawer.content.as_str())).ok();
        }
        drawer.pipeline_tier = PipelineTier::Heuristic;
        if drawer.entities.is_empty() {
            let extraction = self.extract_for(drawer, known);
            self.record_extraction(drawer, &extraction)?;
        }
        Ok(())
    }

    /// `enrich` in every workspace (seed 0 `memory_enrich`): processed
    /// drawers of importance ≥ 3 that no model classified and that have no
    /// entities get the model's entities and facts. Without a model there
    /// is nothing to add (`process` already ran the deterministic
    /// extraction) and the run says so. The scan resumes where the last
    /// run stopped and wraps around.
    pub fn enrich_all(&self) -> EngineResult<EnrichReport> {
        let mut report = EnrichReport::default();
        let Some(llm) = self.llm().cloned() else {
            report.skipped =
                Some("no language model is configured; process already extracted entities without one".into());
            return Ok(report);
        };
        for workspace in self.store().workspaces()? {
            let palace = self.for_workspace(workspace);
            let after = palace
                .store()
                .source_cursor(palace.workspace(), ENRICH_CURSOR)?
                .and_then(|id| DrawerId::parse(&id).ok());
            let page = palace.store().scan_drawers(palace.workspace(), after.as_ref(), ENRICH_SCAN)?;
            let next = if page.len() < ENRICH_SCAN { None } else { page.last().map(|d| d.id.as_str().to_string()) };
            report.examined += page.len();
            let mut candidates: Vec<Drawer> = page
                .into_iter()
                .filter(|d| {
                    d.state == DrawerState::Processed
                        && d.status == DrawerStatus::Active
                        && d.pipeline_tier != PipelineTier::Llm
                        && d.entity_count == 0
                        && d.importance.get() >= 3.0
                        && !d.context.contains_key("enriched_by")
                })
                .take(ENRICH_BATCH.saturating_sub(report.asked))
                .collect();
            for chunk in candidates.chunks_mut(self.jobs().llm_batch.max(1)) {
                let texts: Vec<&str> = chunk.iter().map(|d| d.content.as_str()).collect();
                report.asked += texts.len();
                let answer = llm
                    .chat(&classify_request(Task::Enrich, &texts))
                    .and_then(|response| check_classification(&read_json(&response.text)?, texts.len()));
                let checked = match answer {
                    Ok(checked) => checked,
                    Err(error) => {
                        tracing::warn!(%error, "enrich stopped: the model failed");
                        report.skipped = Some(error.to_string());
                        return Ok(report);
                    }
                };
                let model = llm.model_for(Task::Enrich);
                for (drawer, found) in chunk.iter_mut().zip(checked.items) {
                    let Some(found) = found else { continue };
                    let kept = (drawer.pipeline_tier, drawer.hall.clone(), drawer.importance, drawer.memory_type);
                    palace.apply_classification(drawer, found)?;
                    // Enrichment adds entities, facts and a missing summary;
                    // the classification stands.
                    (drawer.pipeline_tier, drawer.hall, drawer.importance, drawer.memory_type) = kept;
                    drawer.context.insert("enriched_by".into(), serde_json::Value::from(format!("llm:{model}")));
                    drawer.updated_at = palace.now();
                    if palace.store().replace_drawer(drawer)? && drawer.entity_count > 0 {
                        report.enriched += 1;
                    }
                }
            }
            palace.store().set_source_cursor(palace.workspace(), ENRICH_CURSOR, next.as_deref(), palace.now())?;
        }
        Ok(report)
    }

    /// Decay, TTL, prune and centroid training in every workspace (see
    /// [`MAINTAIN`]).
    pub fn maintain_all(&self) -> EngineResult<MaintainReport> {
        let now = self.now();
        let ago = |d: Duration| now - chrono::TimeDelta::from_std(d).unwrap_or(chrono::TimeDelta::MAX);
        let mut report = MaintainReport::default();
        for workspace in self.store().workspaces()? {
            report.decayed += self.store().decay_importance(
                &workspace,
                ago(DECAY_AGE),
                ago(DECAY_IDLE),
                DECAY_FACTOR,
                DECAY_FLOOR,
            )?;
            report.expired += self.store().expire_episodic_summaries(&workspace, now)?;
            let palace = self.for_workspace(workspace);
            if self.jobs().prune {
                report.archived += palace.prune(false)?.drawers.len();
            }
            if self.jobs().centroids {
                let trained = palace.recompute_centroids()?;
                report.centroids_trained += trained.types_trained.len() + trained.rooms_trained.len();
            }
        }
        Ok(report)
    }

    /// Runs `work` now, whoever else runs it this tick, and records the run
    /// as `job`'s for the tick when this process is the first to start one
    /// (for jobs every worker takes part in, such as `process`, so that
    /// `status` can say when one last ran).
    pub fn run_recorded<T>(
        &self,
        job: &PeriodicJob,
        holder: &str,
        work: impl FnOnce(&Palace) -> EngineResult<T>,
    ) -> EngineResult<T> {
        let job = &self.jobs().periodic(job);
        let now = self.now();
        let lease = job.every.max(Duration::from_secs(600));
        let recorded = self.store().try_start_job(job.name, tick_of(now, job.every), holder, lease, now)?;
        let outcome = work(self);
        if recorded && let Err(error) = self.store().finish_job(job.name, holder) {
            tracing::warn!(%error, job = job.name, "recording the end of the run failed (its lease expires by itself)");
        }
        outcome
    }

    /// Runs `work` as `job`'s run for the current tick when this process
    /// wins it: `Ok(None)` when another process runs or ran this tick.
    /// The job's lock is released however `work` ends.
    pub fn run_periodic<T>(
        &self,
        job: &PeriodicJob,
        holder: &str,
        work: impl FnOnce(&Palace) -> EngineResult<T>,
    ) -> EngineResult<Option<T>> {
        let job = &self.jobs().periodic(job);
        let now = self.now();
        let tick = tick_of(now, job.every);
        // The lease outlives any sane run; it only matters when the holder dies.
        let lease = job.every.max(Duration::from_secs(600));
        if !self.store().try_start_job(job.name, tick, holder, lease, now)? {
            return Ok(None);
        }
        tracing::info!(job = job.name, tick, holder, "periodic job started");
        let outcome = work(self);
        if let Err(error) = self.store().finish_job(job.name, holder) {
            tracing::warn!(%error, job = job.name, "releasing the job lock failed (it expires by itself)");
        }
        outcome.map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_aligned_to_the_wall_clock() {
        let at = |text: &str| chrono::DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&chrono::Utc);
        let minute = Duration::from_secs(60);
        assert_eq!(tick_of(at("2026-11-23T10:00:00Z"), minute), tick_of(at("2026-11-23T10:00:59.999Z"), minute));
        assert_eq!(tick_of(at("2026-11-23T10:01:00Z"), minute), tick_of(at("2026-11-23T10:00:00Z"), minute) + 1);
        let tick = tick_of(at("2026-11-23T10:00:30Z"), minute);
        assert_eq!(tick_start(tick, minute), at("2026-11-23T10:00:00Z"));
        let day = Duration::from_secs(86_400);
        assert_eq!(tick_start(tick_of(at("2026-11-23T17:45:00Z"), day), day), at("2026-11-23T00:00:00Z"));
        assert_eq!(tick_of(at("1969-12-31T23:59:59Z"), minute), -1, "before the epoch, ticks still floor");
    }
}
