//! The retrieval layers as text (seed 0 §5): wake-up (L0 + L1), recall
//! (L2), the auto-injector (seed 2), and robotmem's `learn`.
//!
//! Choosing drawers happens here (store queries, search); their rendering
//! within budgets is `core::layers`.

use mempalace_core::layers::{
    INJECT_MAX_TOKENS, INJECT_THRESHOLD, L1_MAX_DRAWERS, L2_MAX_DRAWERS, Snippet, is_trivial, render_injection,
    render_l0, render_l1, render_l2,
};
use mempalace_core::learn::analyze;
use mempalace_core::{Confidence, Drawer, Room, Wing};
use serde_json::Value;

use crate::error::EngineResult;
use crate::ingest::{IngestReport, IngestRequest};
use crate::palace::Palace;
use crate::search::{SearchMode, SearchRequest};

fn snippets(drawers: &[Drawer]) -> Vec<Snippet<'_>> {
    drawers
        .iter()
        .map(|d| Snippet {
            wing: d.wing.as_str(),
            room: d.room.as_str(),
            text: d.content.as_str(),
            source: d.source_file.as_deref(),
        })
        .collect()
}

/// What the auto-injector decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Injection {
    /// The section to add to the prompt, or `None`.
    pub section: Option<String>,
    /// Whether the message was trivial (no lookup was made).
    pub trivial: bool,
    /// Memories above the threshold.
    pub match_count: usize,
    /// Best relevance seen.
    pub top_score: f64,
}

/// Episodic summaries the injector considers (the most recent).
pub const INJECT_EPISODES: usize = 20;

struct Relevance {
    memories: Vec<f64>,
    abstracts: Vec<f64>,
}

/// What `learn` filed.
#[derive(Debug, Clone, PartialEq)]
pub struct Learned {
    /// The pipeline's report.
    pub report: IngestReport,
    /// The inferred category.
    pub category: &'static str,
    /// The estimated confidence.
    pub confidence: f64,
    /// Tags attached.
    pub tags: Vec<String>,
}

impl Palace {
    /// L0 + L1: the identity and the essential story, optionally of one wing.
    pub fn wake_up(&self, wing: Option<&str>) -> EngineResult<String> {
        let identity = self.identity()?;
        let top = self.store().top_drawers(self.workspace(), wing, L1_MAX_DRAWERS)?;
        Ok(format!("{}\n\n{}", render_l0(identity.as_ref().map(|r| r.identity.as_str())), render_l1(&snippets(&top))))
    }

    /// L2: the latest drawers of a wing (and room).
    pub fn recall(&self, wing: &str, room: Option<&str>) -> EngineResult<String> {
        let drawers = self.store().place_drawers(self.workspace(), wing, room, L2_MAX_DRAWERS)?;
        Ok(render_l2(wing, room, &snippets(&drawers)))
    }

    /// The auto-injector for anyone (see [`Palace::inject_for`]).
    pub fn inject(&self, message: &str) -> EngineResult<Injection> {
        self.inject_for(message, None)
    }

    /// The auto-injector (seeds 2 and 4): a ≤ 200-token section of what is
    /// relevant to `message` (relevance ≥ 0.3), or nothing; trivial
    /// messages skip the lookup. It offers, in this order: the extracted
    /// memories `user` sees (their own first, then the workspace's), the
    /// abstracts of episodic summaries, then drawers found by search.
    /// Relevance is the cosine similarity when vectors are available, else
    /// the BM25 score scaled by `s / (s + 5)` for drawers and the share of
    /// the message's words a memory or abstract holds.
    pub fn inject_for(&self, message: &str, user: Option<&str>) -> EngineResult<Injection> {
        if is_trivial(message) {
            return Ok(Injection { section: None, trivial: true, match_count: 0, top_score: 0.0 });
        }
        let outcome = self.search(&SearchRequest {
            query: message.to_string(),
            limit: mempalace_core::layers::ResultLimit::constant(10),
            skip_access_tracking: true,
            filter: mempalace_store::DrawerFilter { viewer: user.map(str::to_string), ..Default::default() },
            ..SearchRequest::default()
        })?;
        let lexical_only = matches!(outcome.mode, SearchMode::LexicalOnly(_));
        let memories = self.memories(user)?;
        let mut episodes = self.store().episodic_summaries(self.workspace())?;
        episodes.retain(|e| e.user_id.is_none() || e.user_id.as_deref() == user);
        episodes.sort_by_key(|e| std::cmp::Reverse(e.created_at));
        episodes.truncate(INJECT_EPISODES);
        let abstracts: Vec<&str> =
            episodes.iter().map(|e| e.l0_abstract.as_str()).filter(|a| !a.trim().is_empty()).collect();
        let relevance = self.relevance_to(message, outcome.query_vector.as_ref(), &memories, &abstracts)?;
        let mut remembered: Vec<(bool, &str, f64)> = memories
            .iter()
            .zip(&relevance.memories)
            .map(|(m, score)| (m.drawer.owner_user_id.is_some(), m.drawer.content.as_str(), *score))
            .collect();
        remembered.sort_by(|a, b| b.0.cmp(&a.0).then(b.2.total_cmp(&a.2)));
        let mut recalled: Vec<(&str, f64)> =
            abstracts.iter().copied().zip(relevance.abstracts.iter().copied()).collect();
        recalled.sort_by(|a, b| b.1.total_cmp(&a.1));
        let shown: std::collections::HashSet<&str> = memories.iter().map(|m| m.drawer.id.as_str()).collect();
        let mut found: Vec<(&str, f64)> = outcome
            .hits
            .iter()
            .filter(|hit| !shown.contains(hit.drawer.id.as_str()))
            .map(|hit| {
                let relevance = match (hit.similarity, lexical_only) {
                    (Some(similarity), _) => f64::from(similarity),
                    (None, true) => hit.bm25.map_or(0.0, |s| s / (s + 5.0)),
                    (None, false) => 0.0,
                };
                (hit.drawer.content.as_str(), relevance)
            })
            .collect();
        found.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut scored: Vec<(&str, f64)> = remembered.iter().map(|(_, text, score)| (*text, *score)).collect();
        scored.extend(recalled);
        scored.extend(found);
        let match_count = scored.iter().filter(|(_, s)| *s >= INJECT_THRESHOLD).count();
        let top_score = scored.iter().map(|(_, s)| *s).fold(0.0, f64::max);
        let section = render_injection(&scored, INJECT_THRESHOLD, INJECT_MAX_TOKENS);
        if section.is_some() {
            let ids: Vec<_> = outcome.hits.iter().map(|h| h.drawer.id.clone()).collect();
            let _ = self.store().touch_access(self.workspace(), &ids, self.now());
        }
        Ok(Injection { section, trivial: false, match_count, top_score })
    }

    /// How relevant each memory and abstract is to `message`: cosine with
    /// the search's query vector when it had one (memories by their stored
    /// vectors; abstracts embedded once and kept in the embedding cache, so
    /// later messages reuse them), else the share of words they have in
    /// common.
    fn relevance_to(
        &self,
        message: &str,
        query: Option<&(String, Vec<f32>)>,
        memories: &[crate::memories::StoredMemory],
        abstracts: &[&str],
    ) -> EngineResult<Relevance> {
        let words = |text: &str| -> std::collections::HashSet<String> {
            text.split(|c: char| !c.is_alphanumeric())
                .map(str::to_lowercase)
                .filter(|w| w.chars().count() >= 3 && !mempalace_core::layers::is_stopword(w))
                .collect()
        };
        let asked = words(message);
        // The shared words over the shorter side: a short memory whose
        // words a long message holds is as relevant as the other way round.
        let lexical = |text: &str| {
            let theirs = words(text);
            let shorter = asked.len().min(theirs.len());
            if shorter == 0 {
                return 0.0;
            }
            asked.iter().filter(|w| theirs.contains(*w)).count() as f64 / shorter as f64
        };
        let cosine = |vector: Option<&Vec<f32>>| -> Option<f64> {
            Some(f64::from(mempalace_core::vector::cosine(&query?.1, vector?)))
        };
        let memories = memories
            .iter()
            .map(|m| {
                let vector =
                    m.drawer.embedding.as_ref().filter(|e| Some(&e.model) == query.map(|q| &q.0)).map(|e| &e.vector);
                cosine(vector).unwrap_or_else(|| lexical(m.drawer.content.as_str()))
            })
            .collect();
        let vectors = match query {
            Some((model, _)) if !abstracts.is_empty() => self.cached_vectors(model, abstracts)?,
            _ => vec![None; abstracts.len()],
        };
        let abstracts = abstracts
            .iter()
            .zip(&vectors)
            .map(|(text, vector)| cosine(vector.as_ref()).unwrap_or_else(|| lexical(text)))
            .collect();
        Ok(Relevance { memories, abstracts })
    }

    /// Vectors of `texts` by `model`, keeping the ones computed in the
    /// embedding cache (texts that belong to no drawer, such as episode
    /// abstracts, are embedded once, not at every call).
    pub(crate) fn cached_vectors(&self, model: &str, texts: &[&str]) -> EngineResult<Vec<Option<Vec<f32>>>> {
        let embedded = self.embed_texts(texts)?;
        if embedded.model.as_deref() != Some(model) {
            return Ok(vec![None; texts.len()]);
        }
        if embedded.computed > 0 {
            let fresh: Vec<(mempalace_core::ContentHash, Vec<f32>)> = texts
                .iter()
                .zip(&embedded.vectors)
                .filter_map(|(text, vector)| Some((mempalace_core::ContentHash::of(text), vector.clone()?)))
                .collect();
            // A cache that cannot be written only costs the next call a recomputation.
            if let Err(error) = self.store().cache_embeddings(self.workspace(), model, &fresh, self.now()) {
                tracing::warn!(%error, "caching abstract vectors failed");
            }
        }
        Ok(embedded.vectors)
    }

    /// robotmem `learn`: files a short insight with its inferred category
    /// (the room), confidence, scope and tags, in `collection` (the wing),
    /// as part of `session` when given.
    pub fn learn(
        &self,
        insight: &str,
        collection: &Wing,
        context: Option<&Value>,
        session: Option<&str>,
    ) -> EngineResult<Learned> {
        let analysis = analyze(insight);
        let room = Room::parse(analysis.category)?;
        let mut request = IngestRequest::new(collection.clone(), room, insight, "learn");
        request.raw = true;
        request.session_id = session.map(str::to_string);
        request.confidence = Some(Confidence::new(analysis.confidence)?);
        request.tags = analysis.tags.clone();
        if let Some(Value::Object(map)) = context {
            request.context = map.clone();
        }
        request.context.insert("category".into(), Value::from(analysis.category));
        request.context.insert("scope_files".into(), Value::from(analysis.scope_files.clone()));
        request.context.insert("scope_entities".into(), Value::from(analysis.scope_entities.clone()));
        let report = self.ingest(request)?;
        Ok(Learned { report, category: analysis.category, confidence: analysis.confidence, tags: analysis.tags })
    }
}
