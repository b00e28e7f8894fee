//! Hybrid search over the whole workspace (L3): BM25 from the store's
//! lexical index and cosine similarity from the vector index, fused, then
//! filtered, re-weighted, cut to the limit and the 14,000-character cap.
//!
//! Pipeline (seed 1 with seed 0's ranking as an alternative):
//! 1. candidates: up to `CANDIDATES` from BM25 (query words, CJK segmented)
//!    and up to `CANDIDATES` from the vector index (query embedded with the
//!    configured model; skipped, and reported, when no embedder is
//!    available), both restricted by the structured filter, and the
//!    knowledge graph's; a query naming a day or a month (`core::when`:
//!    "on 4 December 2023", "in October 2023") adds a fourth list, the
//!    vector candidates among the drawers filed within three days of it;
//! 2. the head of the lists (reciprocal rank fusion, k = 60), plus the
//!    dated list's best, is fetched; context filter, spatial order and
//!    distance cut-offs apply;
//! 3. scoring (default): the drawer's cosine similarity, its lexical
//!    evidence `1 − exp(−BM25 / 18)`, 0.2 × its graph score and, for a
//!    query naming a date, [`DATE_WEIGHT`] when the drawer was filed then,
//!    combined as independent evidence, `1 − Π (1 − eᵢ)` — an absolute 0–1 score that
//!    depends on the drawer and the query only, never on the other hits
//!    (reciprocal rank fusion and the seed-0 score
//!    `importance × recency × max(similarity, graph) + agent affinity` are
//!    alternatives); real-world memories weigh × 1.5 and drawers owned by
//!    the searching user (`filter.viewer`) × 1.2 (seed 2's per-user boost;
//!    a shared drawer's score is the same whoever searches, and a user's
//!    own copy of a shared text replaces the shared hit);
//!    with `user_first`, only the user's own drawers scoring at least
//!    [`USER_MATCH_FLOOR`] (before the boost) are kept, unless there are
//!    none: then the shared pool answers (seed 2's fallback);
//! 4. top `limit` (1–100) within 14,000 characters; returned drawers get
//!    access tracking.

use std::collections::HashMap;

use mempalace_core::filter::{ContextFilter, SpatialSort};
use mempalace_core::fusion::{
    OWNER_BOOST, REAL_WORLD_WEIGHT, RRF_K, combine_evidence, lexical_evidence, recency_factor, rrf, seed0_score,
};
use mempalace_core::layers::{ResultLimit, l3_fit};
use mempalace_core::{Drawer, DrawerId, lexical, vector};
use mempalace_store::{Direction, DrawerFilter};

use crate::error::EngineResult;
use crate::palace::Palace;

/// Least score (before the owner boost) of a user's own hit for a
/// user-first search to answer from the user's memory rather than fall back
/// to the shared pool. Every drawer with a vector is a candidate, so "the
/// user's search found nothing" (seed 2) needs a floor: MiniLM scores
/// unrelated sentences 0.1–0.4 (0.37 for the unrelated pair of the engine
/// test) and paraphrases above 0.6.
pub const USER_MATCH_FLOOR: f64 = 0.5;

/// Candidates taken from each ranked list before fusion.
pub const CANDIDATES: usize = 100;

/// How lexical and vector candidates are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Fusion {
    /// Reciprocal rank fusion, k = 60 (robotmem); scores are rank-based
    /// (at most 3 / 61), not comparable with the other fusions'.
    Rrf,
    /// Evidence fusion: cosine similarity, lexical evidence
    /// `1 − exp(−BM25 / 18)` (`core::fusion::lexical_evidence`) and
    /// [`GRAPH_WEIGHT`] × the graph score combined as a noisy-OR
    /// (`core::fusion::combine_evidence`). Absolute: a drawer's score does
    /// not depend on the other hits, so thresholds mean the same for every
    /// query.
    #[default]
    Weighted,
    /// `importance × recency × max(similarity, graph) + agent affinity` (seed 0).
    Seed0,
}

/// Weight of the knowledge-graph signal in the weighted fusion: a drawer
/// that mentions every entity the query names gains this much.
pub const GRAPH_WEIGHT: f64 = 0.2;
/// Evidence a drawer gains for being filed on the days a query names
/// (within `core::when::SLACK_DAYS`). Chosen on the LoCoMo dev split,
/// where 130 of 1,018 questions name a date: 0.3 lifts turn recall@10 by
/// about 0.02 and session recall by 0.016; 0.1–0.4 all help (BENCHMARKS.md).
/// A drawer of the right day still needs some match of meaning or words
/// to rank: 0.3 alone is below a clear semantic match.
pub const DATE_WEIGHT: f64 = 0.3;
/// Longest span (days) a query may name for its filed-then drawers to be
/// fetched as candidates of their own: a year would list most of a palace.
const DATED_CHANNEL_DAYS: i64 = 31;
/// The dated list's best drawers always scored (see `search_here`).
const DATED_IN_HEAD: usize = 20;
/// Current facts followed from each entity a query names.
const GRAPH_NEIGHBOURS: usize = 20;
/// Share of the graph score a drawer gets for mentioning an entity one fact
/// away from a named one.
const NEIGHBOUR_SHARE: f64 = 0.5;

/// A search as callers describe it.
#[derive(Debug, Clone, Default)]
pub struct SearchRequest {
    /// The query text.
    pub query: String,
    /// Results wanted (1–100, default 5).
    pub limit: ResultLimit,
    /// Structured filter (wing, room, type, tags, time, owner, …).
    pub filter: DrawerFilter,
    /// robotmem `context_filter`.
    pub context_filter: Option<ContextFilter>,
    /// robotmem `spatial_sort`.
    pub spatial: Option<SpatialSort>,
    /// Drop hits whose cosine distance (1 − similarity) exceeds this
    /// (MemPalace `max_distance`; 0 or `None` = no cut).
    pub max_distance: Option<f64>,
    /// Fusion method.
    pub fusion: Fusion,
    /// The asking agent, for the seed-0 affinity boost.
    pub agent: Option<String>,
    /// Whether returned drawers get access tracking (default true).
    pub skip_access_tracking: bool,
    /// Leave the knowledge-graph signal out (to compare, or when entity
    /// names mislead).
    pub skip_graph: bool,
    /// Seed 2's per-user scope: with a `filter.viewer`, answer from the
    /// drawers that user owns that score at least [`USER_MATCH_FLOOR`], and
    /// only when none does, from the shared pool (drawers without an
    /// owner). Without a viewer it changes nothing.
    pub user_first: bool,
}

/// Why a search ran without vectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SearchMode {
    /// BM25 and vectors.
    Hybrid,
    /// BM25 only, with the reason.
    LexicalOnly(String),
}

/// One result.
#[derive(Debug, Clone)]
pub struct SearchHit {
    /// The drawer.
    pub drawer: Drawer,
    /// Final score: with the default fusion, 0–1 evidence of relevance
    /// (× 1.5 for real-world memories, × 1.2 for a drawer owned by the
    /// searching user), comparable across queries.
    pub score: f64,
    /// Cosine similarity to the query, when both have vectors of the model.
    pub similarity: Option<f32>,
    /// BM25 score (higher is better), when the drawer matched lexically.
    pub bm25: Option<f64>,
    /// Distance to the spatial target, when sorting spatially.
    pub distance: Option<f64>,
    /// Why this score: each signal and each multiplier.
    pub parts: ScoreParts,
}

/// The pieces of a hit's score, as the REST API and the web UI show them
/// ("why this result").
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScoreParts {
    /// The fusion that combined them.
    pub fusion: Fusion,
    /// Lexical evidence `1 − exp(−BM25 / 18)` (0 without a lexical match).
    pub lexical: f64,
    /// The knowledge-graph score before its weight (0–1).
    pub graph: f64,
    /// The graph score's share of the evidence ([`GRAPH_WEIGHT`] × graph).
    pub graph_weighted: f64,
    /// [`DATE_WEIGHT`] when the query names a date and the drawer was
    /// filed then (weighted fusion; 0 otherwise).
    pub date: f64,
    /// Seed 0's recency factor (seed-0 fusion only).
    pub recency: Option<f64>,
    /// The rank-fusion score (RRF only).
    pub rrf: Option<f64>,
    /// Score before the multipliers.
    pub base: f64,
    /// × 1.5 for a real-world (robot) memory.
    pub real_world: Option<f64>,
    /// × 1.2 for the searching user's own drawer or personal workspace.
    pub owner_boost: Option<f64>,
    /// A re-ranker's score, when one re-ranked the candidates (none yet).
    pub rerank: Option<f64>,
}

/// What a search returned.
#[derive(Debug, Clone)]
pub struct SearchOutcome {
    /// Hits, best first.
    pub hits: Vec<SearchHit>,
    /// Hybrid or lexical-only.
    pub mode: SearchMode,
    /// Distinct candidates considered before filtering and the limit.
    pub candidates: usize,
    /// The query's vector and its model, when the search had one (callers
    /// comparing other texts with the query reuse it).
    pub query_vector: Option<(String, Vec<f32>)>,
}

/// Words too common to help a BM25 query.
fn is_stopword(term: &str) -> bool {
    const STOPWORDS: &[&str] = &[
        "a", "an", "the", "and", "or", "but", "of", "to", "in", "on", "at", "by", "for", "with", "from", "is", "are",
        "was", "were", "be", "been", "do", "does", "did", "it", "its", "this", "that", "what", "which", "who", "whom",
        "how", "when", "where", "why", "i", "me", "my", "we", "our", "you", "your", "he", "she", "his", "her", "they",
        "them", "their", "have", "has", "had", "can", "could", "would", "should", "will", "about", "as", "into", "any",
        "some", "there", "so", "if", "than", "then", "too", "very", "just", "not", "no", "yes", "up", "out", "also",
    ];
    // A lone Latin letter is the tail of a contraction or possessive
    // ("what's", "don't") or an initial: it matches too much to help.
    let lone_letter = term.len() == 1 && term.chars().all(|c| c.is_ascii_alphabetic());
    lone_letter || STOPWORDS.contains(&term)
}

/// The BM25 terms of a query: its words minus stopwords (all of them when
/// every word is a stopword).
pub fn query_terms(query: &str) -> Vec<String> {
    let all = lexical::query_terms(query);
    let kept: Vec<String> = all.iter().filter(|term| !is_stopword(term)).cloned().collect();
    if kept.is_empty() { all } else { kept }
}

/// Most matching rows (summed over the kept terms) one BM25 query may
/// score, which bounds its time at about 12 ms on this machine.
pub const MAX_LEXICAL_POSTINGS: u64 = 6_000;

/// Most drawers a lexical term may occur in before it is left out of the
/// BM25 query: one in twenty, or 2,000 drawers in a small palace, and
/// never more than [`MAX_LEXICAL_POSTINGS`]. A common term carries little
/// IDF and would make BM25 score a large part of the palace (FTS5 scores
/// every matching row, about 2 µs each); the ceiling (reached from 120,000
/// drawers) keeps even a query's rarest term within the lexical budget.
pub fn max_term_frequency(documents: u64) -> u64 {
    (documents / 20).clamp(2_000, MAX_LEXICAL_POSTINGS)
}

/// The terms worth a BM25 query, rarest first: those occurring in at most
/// [`max_term_frequency`] drawers, while their postings add up to at most
/// [`MAX_LEXICAL_POSTINGS`] (the rarest term is always kept when under the
/// frequency cap). Terms in no drawer are dropped: they cannot match. When
/// every term is too common, the query is left to the vectors.
pub fn selective_terms(terms: &[String], frequencies: &[u64], documents: u64) -> Vec<String> {
    let cap = max_term_frequency(documents);
    let mut candidates: Vec<(&String, u64)> =
        terms.iter().zip(frequencies.iter().copied()).filter(|(_, n)| *n > 0 && *n <= cap).collect();
    candidates.sort_by_key(|(_, n)| *n);
    let mut kept = Vec::new();
    let mut postings = 0;
    for (term, n) in candidates {
        if !kept.is_empty() && postings + n > MAX_LEXICAL_POSTINGS {
            break;
        }
        postings += n;
        kept.push(term.clone());
    }
    kept
}

fn is_real_world(drawer: &Drawer) -> bool {
    drawer.perception.is_some()
        || drawer.context.get("source").and_then(|v| v.as_str()).is_some_and(|s| s == "real_world" || s == "real")
}

impl Palace {
    /// Runs a hybrid search (see the module doc). A handle scoped to a user
    /// (`Tenancy::scope`) also searches that user's personal workspace: its
    /// hits get the per-user boost, as the user's own drawers do, and the
    /// two lists are merged by score, personal first among equals.
    pub fn search(&self, request: &SearchRequest) -> EngineResult<SearchOutcome> {
        // A handle acting for a principal searches as that principal: their
        // private drawers and the shared ones (the guard holds the store's
        // filters to the same viewer).
        let scoped;
        let request = match self.principal_id() {
            Some(me) if request.filter.viewer.as_deref() != Some(me) => {
                let mut own = request.clone();
                own.filter.viewer = Some(me.to_string());
                scoped = own;
                &scoped
            }
            _ => request,
        };
        let mut outcome = self.search_here(request)?;
        let Some(personal) = self.personal() else { return Ok(outcome) };
        let mine = personal.search_here(request)?;
        if mine.hits.is_empty() {
            return Ok(outcome);
        }
        outcome.candidates += mine.candidates;
        let mut hits: Vec<(bool, SearchHit)> = mine
            .hits
            .into_iter()
            .map(|mut hit| {
                hit.score *= OWNER_BOOST;
                hit.parts.owner_boost = Some(hit.parts.owner_boost.unwrap_or(1.0) * OWNER_BOOST);
                (true, hit)
            })
            .chain(outcome.hits.into_iter().map(|hit| (false, hit)))
            .collect();
        match &request.spatial {
            Some(_) => hits.sort_by(|a, b| {
                a.1.distance.unwrap_or(f64::MAX).total_cmp(&b.1.distance.unwrap_or(f64::MAX)).then(b.0.cmp(&a.0))
            }),
            None => hits.sort_by(|a, b| b.1.score.total_cmp(&a.1.score).then(b.0.cmp(&a.0))),
        }
        hits.truncate(request.limit.get());
        let lengths: Vec<usize> = hits.iter().map(|(_, h)| h.drawer.content.as_str().chars().count()).collect();
        hits.truncate(l3_fit(&lengths));
        outcome.hits = hits.into_iter().map(|(_, hit)| hit).collect();
        Ok(outcome)
    }

    /// The search of this workspace alone.
    fn search_here(&self, request: &SearchRequest) -> EngineResult<SearchOutcome> {
        let limit = request.limit.get();
        // The query's embedding and the vector scan run beside the lexical
        // search: on two cores the search then costs the longer of the
        // two, not their sum.
        let (lexical, vectors) = std::thread::scope(|scope| {
            let vectors = scope.spawn(|| self.vector_candidates(&request.query, &request.filter));
            let lexical = self.lexical_candidates(&request.query, &request.filter);
            let vectors = vectors.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            (lexical, vectors)
        });
        let lexical = lexical?;
        let (vector_hits, query_vector, mode) = vectors?;
        let span = mempalace_core::when::named_span(&request.query);
        let dated_hits = match (&span, &query_vector) {
            (Some(span), Some((model, q))) if (span.last - span.first).num_days() < DATED_CHANNEL_DAYS => {
                let (start, end) = span.with_slack();
                let mut dated = request.filter.clone();
                dated.filed_after = Some(dated.filed_after.map_or(start, |after| after.max(start)));
                dated.filed_before = Some(dated.filed_before.map_or(end, |before| before.min(end)));
                self.nearest(model, q, &dated, CANDIDATES)?
            }
            _ => Vec::new(),
        };

        let graph_hits = if request.skip_graph { Vec::new() } else { self.graph_candidates(&request.query)? };
        let lexical_ids: Vec<DrawerId> = lexical.iter().map(|(id, _)| id.clone()).collect();
        let vector_ids: Vec<DrawerId> = vector_hits.iter().map(|(id, _)| id.clone()).collect();
        let graph_ids: Vec<DrawerId> = graph_hits.iter().map(|(id, _)| id.clone()).collect();
        let dated_ids: Vec<DrawerId> = dated_hits.iter().map(|(id, _)| id.clone()).collect();
        let graph: HashMap<&DrawerId, f64> = graph_hits.iter().map(|(id, score)| (id, *score)).collect();
        let bm25: HashMap<&DrawerId, f64> = lexical.iter().map(|(id, score)| (id, *score)).collect();
        let fused = rrf(
            &[(&lexical_ids[..], 1.0), (&vector_ids[..], 1.0), (&graph_ids[..], 1.0), (&dated_ids[..], 1.0)],
            RRF_K,
        );
        let candidates = fused.len();

        // The head of the fused list is fetched; post-filters may drop some.
        // Rank fusion puts every strong candidate of any list near the
        // head, whichever final scoring is used.
        // A user-first search looks through every candidate for the user's
        // own drawers, which may rank below the head among shared ones.
        let user_first = request.user_first && request.filter.viewer.is_some();
        let head_size = if user_first { fused.len() } else { (limit * 4).max(50) };
        let mut head_ids: Vec<DrawerId> = fused.iter().take(head_size).map(|(id, _)| id.clone()).collect();
        // The best drawers filed on a date the query names are scored even
        // when drawers found by two lists fill the head: they are what the
        // date asks for, and their date evidence is only known once scored.
        for id in dated_ids.iter().take(DATED_IN_HEAD) {
            if !head_ids.contains(id) {
                head_ids.push(id.clone());
            }
        }
        let drawers = self.store().drawers(self.workspace(), &head_ids)?;
        let by_id: HashMap<DrawerId, Drawer> = drawers.into_iter().map(|d| (d.id.clone(), d)).collect();
        let rrf_score: HashMap<&DrawerId, f64> = fused.iter().map(|(id, score)| (id, *score)).collect();
        let now = self.now();

        let mut hits: Vec<SearchHit> = Vec::new();
        for id in &head_ids {
            let Some(drawer) = by_id.get(id) else { continue };
            // A private drawer is shown to its owner only, whichever
            // channel found it.
            if drawer.owner_user_id.is_some() && drawer.owner_user_id != request.filter.viewer {
                continue;
            }
            if let Some(filter) = &request.context_filter
                && !filter.matches(&drawer.context)
            {
                continue;
            }
            let similarity = match (&query_vector, &drawer.embedding) {
                (Some((model, q)), Some(embedding)) if &embedding.model == model => {
                    Some(vector::cosine(q, &embedding.vector))
                }
                _ => None,
            };
            if let (Some(max), Some(sim)) = (request.max_distance.filter(|d| *d > 0.0), similarity)
                && 1.0 - f64::from(sim) > max
            {
                continue;
            }
            let distance = match &request.spatial {
                Some(spatial) => match spatial.distance(&drawer.context) {
                    Some(d) if spatial.max_distance.is_none_or(|max| d <= max) => Some(d),
                    _ => continue,
                },
                None => None,
            };
            let lexical_score = bm25.get(id).map_or(0.0, |s| lexical_evidence(*s));
            let graph_score = graph.get(id).copied().unwrap_or(0.0);
            let mut parts = ScoreParts {
                fusion: request.fusion,
                lexical: lexical_score,
                graph: graph_score,
                graph_weighted: GRAPH_WEIGHT * graph_score,
                ..ScoreParts::default()
            };
            let mut score = match request.fusion {
                Fusion::Rrf => {
                    let score = rrf_score.get(id).copied().unwrap_or(0.0);
                    parts.rrf = Some(score);
                    score
                }
                Fusion::Weighted => {
                    let cosine = f64::from(similarity.unwrap_or(0.0));
                    parts.date = if span.is_some_and(|span| span.covers(drawer.filed_at)) { DATE_WEIGHT } else { 0.0 };
                    combine_evidence(&[cosine, lexical_score, GRAPH_WEIGHT * graph_score, parts.date])
                }
                Fusion::Seed0 => {
                    let similarity = f64::from(similarity.unwrap_or(0.0)).max(lexical_score);
                    let last = drawer.last_accessed_at.unwrap_or(drawer.filed_at);
                    let days = (now - last).num_seconds() as f64 / 86_400.0;
                    let same_agent = request.agent.is_some() && request.agent == drawer.added_by_agent;
                    parts.recency = Some(recency_factor(days));
                    seed0_score(drawer.importance.get(), recency_factor(days), similarity, graph_score, same_agent)
                }
            };
            parts.base = score;
            if is_real_world(drawer) {
                score *= REAL_WORLD_WEIGHT;
                parts.real_world = Some(REAL_WORLD_WEIGHT);
            }
            if owned_by_viewer(drawer, &request.filter) {
                score *= OWNER_BOOST;
                parts.owner_boost = Some(OWNER_BOOST);
            }
            hits.push(SearchHit {
                drawer: drawer.clone(),
                score,
                similarity,
                bm25: bm25.get(id).copied(),
                distance,
                parts,
            });
        }
        if request.filter.viewer.is_some() {
            user_copies_win(&mut hits, &request.filter);
        }
        if user_first {
            // Every drawer with a vector is some candidate: the user's own
            // count as a match only when relevant (before the boost), else
            // the shared pool answers.
            let matches = |hit: &SearchHit| {
                owned_by_viewer(&hit.drawer, &request.filter) && hit.score >= USER_MATCH_FLOOR * OWNER_BOOST
            };
            if hits.iter().any(matches) {
                hits.retain(matches);
            } else {
                hits.retain(|hit| hit.drawer.owner_user_id.is_none());
            }
        }
        match &request.spatial {
            Some(_) => hits.sort_by(|a, b| a.distance.unwrap_or(f64::MAX).total_cmp(&b.distance.unwrap_or(f64::MAX))),
            None => hits.sort_by(|a, b| b.score.total_cmp(&a.score)),
        }
        hits.truncate(limit);
        if request.filter.viewer.is_some() {
            personal_memories_first(&mut hits);
        }
        let lengths: Vec<usize> = hits.iter().map(|h| h.drawer.content.as_str().chars().count()).collect();
        hits.truncate(l3_fit(&lengths));
        if !request.skip_access_tracking && !hits.is_empty() {
            let ids: Vec<DrawerId> = hits.iter().map(|h| h.drawer.id.clone()).collect();
            if let Err(error) = self.store().touch_access(self.workspace(), &ids, now) {
                // Access tracking must never fail a search.
                tracing::warn!(%error, "access tracking failed");
            }
        }
        Ok(SearchOutcome { hits, mode, candidates, query_vector })
    }

    /// BM25 candidates: the query's selective terms (see
    /// [`selective_terms`]) searched in the full-text index. Public so the
    /// search benchmark times this stage alone.
    pub fn lexical_candidates(&self, query: &str, filter: &DrawerFilter) -> EngineResult<Vec<(DrawerId, f64)>> {
        let all_terms = query_terms(query);
        let (documents, frequencies) = self.store().term_frequencies(&all_terms, max_term_frequency)?;
        let terms = selective_terms(&all_terms, &frequencies, documents);
        Ok(self.store().lexical_search(self.workspace(), &terms, filter, CANDIDATES)?)
    }

    /// Drawers linked to entities the query names (seed 0: query words of
    /// four or more characters; here also two- and three-word phrases, so
    /// "Auth Module" is found). A drawer mentioning a named entity scores
    /// the share of named entities it mentions; one mentioning an entity a
    /// current fact links to a named one ("Alice owns Auth Module" for a
    /// question about Alice) scores half that share.
    fn graph_candidates(&self, query: &str) -> EngineResult<Vec<(DrawerId, f64)>> {
        let words: Vec<&str> = query
            .split(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')))
            .map(|w| w.trim_matches('.'))
            .filter(|w| !w.is_empty())
            .collect();
        let mut phrases: Vec<String> = words.iter().filter(|w| w.chars().count() >= 4).map(|w| w.to_string()).collect();
        for size in [2, 3] {
            for window in words.windows(size) {
                phrases.push(window.join(" "));
            }
        }
        if phrases.is_empty() {
            return Ok(Vec::new());
        }
        // An alias ("Postgres") finds its canonical entity's drawers.
        let mut ids: Vec<String> =
            self.canonical_entity_ids(phrases.iter().map(|p| mempalace_core::kg::entity_id(p)).collect())?;
        ids.sort();
        ids.dedup();
        let named: Vec<String> =
            self.store().entities_by_id(self.workspace(), &ids)?.into_iter().map(|e| e.id).collect();
        if named.is_empty() {
            return Ok(Vec::new());
        }
        let mut related: Vec<String> = Vec::new();
        for id in &named {
            let facts = self.store().triples_about(self.workspace(), id, Direction::Both)?;
            let current = facts.iter().rev().filter(|t| t.valid_to.is_none());
            for fact in current.take(GRAPH_NEIGHBOURS) {
                let other = if &fact.subject == id { &fact.object } else { &fact.subject };
                if !named.contains(other) && !related.contains(other) {
                    related.push(other.clone());
                }
            }
        }
        let total = named.len() as f64;
        let mut scores: HashMap<DrawerId, f64> = HashMap::new();
        for (id, n) in self.store().drawers_mentioning(self.workspace(), &named, CANDIDATES)? {
            *scores.entry(id).or_default() += f64::from(n) / total;
        }
        if !related.is_empty() {
            for (id, n) in self.store().drawers_mentioning(self.workspace(), &related, CANDIDATES)? {
                let score = scores.entry(id).or_default();
                *score = (*score + NEIGHBOUR_SHARE * f64::from(n).min(total) / total).min(1.0);
            }
        }
        let mut ranked: Vec<(DrawerId, f64)> = scores.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        ranked.truncate(CANDIDATES);
        Ok(ranked)
    }

    /// Vector candidates for a query, the query vector (with its model) and
    /// the resulting mode.
    #[allow(clippy::type_complexity)]
    fn vector_candidates(
        &self,
        query: &str,
        filter: &DrawerFilter,
    ) -> EngineResult<(Vec<(DrawerId, f32)>, Option<(String, Vec<f32>)>, SearchMode)> {
        let Some(embedder) = self.embedder() else {
            return Ok((Vec::new(), None, SearchMode::LexicalOnly("no embedding model is configured".into())));
        };
        if !embedder.available() {
            return Ok((
                Vec::new(),
                None,
                SearchMode::LexicalOnly(format!(
                    "embedding provider {} is cooling down after failures",
                    embedder.model_id()
                )),
            ));
        }
        let query_vector = match embedder.embed_one(query) {
            Ok(vector) => vector,
            Err(error) => {
                tracing::warn!(%error, "query embedding failed; searching lexically");
                return Ok((Vec::new(), None, SearchMode::LexicalOnly(format!("query embedding failed: {error}"))));
            }
        };
        let model = embedder.model_id().to_string();
        let hits = self.nearest(&model, &query_vector, filter, CANDIDATES)?;
        // An unrestricted search that finds no vector at all: the palace may
        // hold none of this model (counted only then, so the count never
        // runs beside a working vector stage).
        let unrestricted =
            DrawerFilter { viewer: None, include_hidden: false, ..filter.clone() } == DrawerFilter::default();
        if hits.is_empty()
            && unrestricted
            && let Some(reason) = self.vectors_of_other_models(&model)?
        {
            return Ok((hits, Some((model, query_vector)), SearchMode::LexicalOnly(reason)));
        }
        Ok((hits, Some((model, query_vector)), SearchMode::Hybrid))
    }

    /// Why a search found no vector at all, when the palace has drawers but
    /// none with a vector of `model` (the embedder was switched, or the
    /// drawers were filed without one): the reason names what they have and
    /// what to run.
    fn vectors_of_other_models(&self, model: &str) -> EngineResult<Option<String>> {
        let counts = self.store().embedding_models(self.workspace())?;
        if counts.iter().any(|(other, count)| other.as_deref() == Some(model) && *count > 0) {
            return Ok(None);
        }
        let total: u64 = counts.iter().map(|(_, count)| count).sum();
        if total == 0 {
            return Ok(None);
        }
        let held: Vec<String> = counts
            .iter()
            .filter(|(_, count)| *count > 0)
            .map(|(other, count)| match other {
                Some(other) => format!("{count} with {other} vectors"),
                None => format!("{count} without a vector"),
            })
            .collect();
        Ok(Some(format!(
            "no drawer has a vector of {model}, the configured embedder ({}); `mempalace reembed` gives them one",
            held.join(", ")
        )))
    }
}

/// Whether the drawer is owned by the searching user.
fn owned_by_viewer(drawer: &Drawer, filter: &DrawerFilter) -> bool {
    drawer.owner_user_id.is_some() && drawer.owner_user_id == filter.viewer
}

/// Drops a shared hit whose text the user's own hits hold too (seed 2:
/// "if both user-scoped and global results match, user copy wins").
fn user_copies_win(hits: &mut Vec<SearchHit>, filter: &DrawerFilter) {
    let own: std::collections::HashSet<&str> = hits
        .iter()
        .filter(|hit| owned_by_viewer(&hit.drawer, filter))
        .map(|hit| hit.drawer.content_hash.as_str())
        .collect();
    if own.is_empty() {
        return;
    }
    let shared_copies: std::collections::HashSet<DrawerId> = hits
        .iter()
        .filter(|hit| hit.drawer.owner_user_id.is_none() && own.contains(hit.drawer.content_hash.as_str()))
        .map(|hit| hit.drawer.id.clone())
        .collect();
    hits.retain(|hit| !shared_copies.contains(&hit.drawer.id));
}

/// Among the hits that are extracted memories, the searching user's own
/// come before the workspace's (seed 4: both are visible, the personal one
/// first); every other hit keeps its place.
fn personal_memories_first(hits: &mut [SearchHit]) {
    let is_memory = |hit: &SearchHit| hit.drawer.wing.as_str() == crate::memories::MEMORY_WING;
    let places: Vec<usize> = (0..hits.len()).filter(|&at| is_memory(&hits[at])).collect();
    let mut memories: Vec<SearchHit> = places.iter().map(|&at| hits[at].clone()).collect();
    memories.sort_by_key(|hit| hit.drawer.owner_user_id.is_none());
    for (at, hit) in places.into_iter().zip(memories) {
        hits[at] = hit;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn very_common_terms_leave_the_bm25_query() {
        let terms: Vec<String> = ["robot", "gripper", "e4471", "absent"].map(String::from).to_vec();
        assert_eq!(selective_terms(&terms, &[90_000, 4_000, 3, 0], 100_000), vec!["e4471", "gripper"]);
        assert!(selective_terms(&terms[..2], &[90_000, 60_000], 100_000).is_empty(), "all too common: vectors only");
        assert_eq!(
            selective_terms(&terms, &[1_500, 1_900, 3, 0], 1_000),
            vec!["e4471", "robot", "gripper"],
            "small palaces keep terms up to 2,000 drawers"
        );
        assert_eq!(
            selective_terms(&terms, &[4_900, 3_000, 2_900, 0], 100_000),
            vec!["e4471", "gripper"],
            "postings budget"
        );
        assert!(selective_terms(&[], &[], 10).is_empty());
        assert_eq!(
            selective_terms(&terms, &[40_000, 9_000, 0, 0], 1_000_000),
            Vec::<String>::new(),
            "in a large palace even the rarest term stays within the postings budget"
        );
        assert_eq!(selective_terms(&terms, &[40_000, 5_500, 0, 0], 1_000_000), vec!["gripper"]);
        assert_eq!(max_term_frequency(10_000), 2_000);
        assert_eq!(max_term_frequency(100_000), 5_000);
        assert_eq!(max_term_frequency(1_000_000), MAX_LEXICAL_POSTINGS);
    }

    #[test]
    fn query_terms_drop_stopwords_unless_nothing_is_left() {
        assert_eq!(query_terms("What database did we choose?"), vec!["database", "choose"]);
        assert_eq!(query_terms("what is it"), vec!["what", "is", "it"]);
        assert_eq!(query_terms("what's the kid's password?"), vec!["kid", "password"]);
        assert_eq!(query_terms("错误 E4471 的原因"), vec!["错误", "e4471", "的", "原因"]);
    }
}
