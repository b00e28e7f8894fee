//! Vectors for drawers: the embedding cache in front of the provider, and
//! re-embedding a palace with another model.
//!
//! A text whose vector of the current model is already known (in a drawer
//! or in the store's embedding cache, by content hash) is never embedded
//! again. A provider failure never loses a drawer: it is stored without a
//! vector (lexical search still finds it) and `reembed` fills it in later.
//!
//! A drawer whose vector carries the text before it (a conversation
//! exchange filed with `IngestRequest::preceding`) names that drawer in its
//! context (`exchange::PRECEDED_BY`): its vector is rebuilt from both
//! drawers' contents ([`Palace::embedding_inputs`]), and the store never
//! hands it out by content hash, since it is not the vector of the content
//! alone. When the preceding drawer is gone, the vector is of the content.

use std::collections::HashMap;
use std::time::Instant;

use mempalace_core::embedder::Embedder;
use mempalace_core::exchange::{PRECEDED_BY, in_context};
use mempalace_core::{ContentHash, Drawer, DrawerId, Embedding};

use crate::error::EngineResult;
use crate::palace::Palace;

/// Texts per provider call.
pub const EMBED_BATCH: usize = 64;

/// Vectors for a list of texts.
#[derive(Debug, Clone, Default)]
pub struct EmbeddedTexts {
    /// One entry per input text; `None` when no vector could be had.
    pub vectors: Vec<Option<Vec<f32>>>,
    /// The model of every vector, when an embedder is configured.
    pub model: Option<String>,
    /// Texts sent to the provider.
    pub computed: usize,
    /// Texts whose vector came from the cache.
    pub cached: usize,
    /// Why some vectors are missing (no embedder, provider failing).
    pub degraded: Option<String>,
}

impl EmbeddedTexts {
    /// The vector of text `index` as an `Embedding`, if there is one.
    pub fn embedding(&self, index: usize) -> Option<Embedding> {
        let model = self.model.as_ref()?;
        let vector = self.vectors.get(index)?.as_ref()?;
        Some(Embedding { model: model.clone(), vector: vector.clone() })
    }
}

/// Progress of a re-embedding run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReembedProgress {
    /// Drawers given a vector so far.
    pub done: u64,
    /// Of those, how many reused a known vector.
    pub reused: u64,
}

/// What `reembed` did.
#[derive(Debug, Clone, PartialEq)]
pub struct ReembedReport {
    /// Target model.
    pub model: String,
    /// Drawers given a vector of the model.
    pub embedded: u64,
    /// Of those, vectors reused from drawers or the cache.
    pub reused: u64,
    /// Drawers still without one (0 unless the provider failed).
    pub remaining: u64,
    /// Wall time.
    pub seconds: f64,
}

impl Palace {
    /// Vectors for `texts` with the configured embedder, reusing known
    /// vectors. Never fails because of the provider: failures are reported
    /// in `degraded` and leave `None` entries.
    pub fn embed_texts(&self, texts: &[&str]) -> EngineResult<EmbeddedTexts> {
        let Some(embedder) = self.embedder() else {
            return Ok(EmbeddedTexts {
                vectors: vec![None; texts.len()],
                degraded: Some("no embedding model is configured".to_string()),
                ..EmbeddedTexts::default()
            });
        };
        let model = embedder.model_id().to_string();
        let hashes: Vec<ContentHash> = texts.iter().map(|text| ContentHash::of(text)).collect();
        let known = self.store().embeddings_by_hash(self.workspace(), &model, &hashes)?;
        let mut vectors: Vec<Option<Vec<f32>>> = hashes.iter().map(|hash| known.get(hash).cloned()).collect();
        let cached = vectors.iter().filter(|v| v.is_some()).count();
        // Each distinct missing text is embedded once.
        let mut pending: HashMap<&ContentHash, Vec<usize>> = HashMap::new();
        let mut order: Vec<&ContentHash> = Vec::new();
        for (index, hash) in hashes.iter().enumerate() {
            if vectors[index].is_none() {
                let slots = pending.entry(hash).or_default();
                if slots.is_empty() {
                    order.push(hash);
                }
                slots.push(index);
            }
        }
        let mut computed = 0;
        let mut degraded = None;
        for chunk in order.chunks(EMBED_BATCH) {
            if !embedder.available() {
                degraded = Some(format!("embedding provider {model} is unavailable (cooling down after failures)"));
                break;
            }
            let batch: Vec<&str> = chunk.iter().map(|hash| texts[pending[hash][0]]).collect();
            let started = std::time::Instant::now();
            match embedder.embed_batch(&batch) {
                Ok(results) => {
                    tracing::debug!(texts = batch.len(), ms = started.elapsed().as_secs_f64() * 1e3, "embedded");
                    computed += batch.len();
                    for (hash, vector) in chunk.iter().zip(results) {
                        for &slot in &pending[hash] {
                            vectors[slot] = Some(vector.clone());
                        }
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, model, "embedding failed; storing without vectors");
                    degraded = Some(error.to_string());
                    break;
                }
            }
        }
        Ok(EmbeddedTexts { vectors, model: Some(model), computed, cached, degraded })
    }

    /// The text a drawer's vector is made from when `preceding` is its
    /// context: as much of the context's end as the embedder reads beside
    /// the whole of `text` ([`Embedder::context_that_fits`]), then `text`.
    pub(crate) fn text_in_context(&self, preceding: &str, text: &str) -> String {
        let context = self.embedder().map_or(preceding, |embedder| embedder.context_that_fits(preceding, text));
        in_context(context, text)
    }

    /// The text each drawer's vector is made from: its content, after the
    /// content of the drawer it names as preceding it, when that drawer
    /// still exists.
    pub fn embedding_inputs(&self, drawers: &[&Drawer]) -> EngineResult<Vec<String>> {
        let before = |drawer: &Drawer| -> Option<DrawerId> {
            drawer.context.get(PRECEDED_BY)?.as_str().and_then(|id| DrawerId::parse(id).ok())
        };
        let wanted: Vec<DrawerId> = drawers.iter().filter_map(|d| before(d)).collect();
        let found: HashMap<DrawerId, Drawer> = if wanted.is_empty() {
            HashMap::new()
        } else {
            self.store().drawers(self.workspace(), &wanted)?.into_iter().map(|d| (d.id.clone(), d)).collect()
        };
        Ok(drawers
            .iter()
            .map(|drawer| match before(drawer).and_then(|id| found.get(&id)) {
                Some(previous) => self.text_in_context(previous.content.as_str(), drawer.content.as_str()),
                None => drawer.content.as_str().to_string(),
            })
            .collect())
    }

    /// Gives every drawer of the workspace a vector of the configured
    /// model, in batches, reusing known vectors. Safe to interrupt: the next
    /// run continues with what is still missing. Search keeps working
    /// meanwhile (lexically for drawers not yet done).
    pub fn reembed(&self, batch: usize, progress: &mut dyn FnMut(ReembedProgress)) -> EngineResult<ReembedReport> {
        let started = Instant::now();
        let Some(embedder) = self.embedder() else {
            return Err(crate::EngineError::Unavailable(
                "no embedding model is configured; choose one with --embedder or run `mempalace model fetch`".into(),
            ));
        };
        let model = embedder.model_id().to_string();
        let mut state = ReembedProgress::default();
        let mut failed: Option<String> = None;
        loop {
            let missing = self.store().drawers_missing_embedding(self.workspace(), &model, batch.max(1))?;
            if missing.is_empty() {
                break;
            }
            // Vectors in context need the drawers' contexts and the drawers
            // before them.
            let ids: Vec<DrawerId> = missing.iter().map(|(id, _)| id.clone()).collect();
            let stored: HashMap<DrawerId, Drawer> =
                self.store().drawers(self.workspace(), &ids)?.into_iter().map(|d| (d.id.clone(), d)).collect();
            let in_order: Vec<&Drawer> = missing.iter().filter_map(|(id, _)| stored.get(id)).collect();
            let inputs: HashMap<&DrawerId, String> =
                in_order.iter().map(|d| &d.id).zip(self.embedding_inputs(&in_order)?).collect();
            let texts: Vec<&str> =
                missing.iter().map(|(id, content)| inputs.get(id).map_or(content.as_str(), String::as_str)).collect();
            let embedded = self.embed_texts(&texts)?;
            let vectors: Vec<(DrawerId, Embedding)> = missing
                .iter()
                .enumerate()
                .filter_map(|(index, (id, _))| embedded.embedding(index).map(|embedding| (id.clone(), embedding)))
                .collect();
            self.store().set_embeddings(self.workspace(), &vectors)?;
            state.done += vectors.len() as u64;
            state.reused += embedded.cached as u64;
            progress(state);
            if let Some(reason) = embedded.degraded {
                failed = Some(reason);
                break;
            }
        }
        let remaining: u64 = self
            .store()
            .embedding_models(self.workspace())?
            .into_iter()
            .filter(|(stored, _)| stored.as_deref() != Some(model.as_str()))
            .map(|(_, count)| count)
            .sum();
        if let Some(reason) = failed {
            tracing::warn!(reason, remaining, "re-embedding stopped early; run it again to continue");
        }
        Ok(ReembedReport {
            model,
            embedded: state.done,
            reused: state.reused,
            remaining,
            seconds: started.elapsed().as_secs_f64(),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use mempalace_core::embedder::{EmbedError, EmbedResult, Embedder};
    use mempalace_core::{Content, Room, Wing, WorkspaceId};
    use mempalace_sqlite::{SqliteOptions, SqliteStore};

    use crate::palace::{NewDrawer, Palace};

    /// A deterministic embedder that counts the texts it is asked to embed
    /// and can be told to fail.
    #[derive(Default)]
    struct Counting {
        texts: AtomicUsize,
        fail_after: Option<usize>,
        failing: AtomicBool,
    }

    impl Embedder for Counting {
        fn model_id(&self) -> &str {
            "counting"
        }
        fn dim(&self) -> usize {
            3
        }
        fn embed_batch(&self, texts: &[&str]) -> EmbedResult<Vec<Vec<f32>>> {
            let before = self.texts.fetch_add(texts.len(), Ordering::SeqCst);
            if self.failing.load(Ordering::SeqCst) || self.fail_after.is_some_and(|limit| before >= limit) {
                return Err(EmbedError::Provider("HTTP 500".into()));
            }
            Ok(texts.iter().map(|t| vec![t.len() as f32, 1.0, 0.0]).collect())
        }
    }

    fn palace_with(embedder: Arc<Counting>) -> (tempfile::TempDir, Palace) {
        let dir = tempfile::tempdir().unwrap();
        let store =
            SqliteStore::open(&dir.path().join("p.db"), SqliteOptions { create: true, ..SqliteOptions::default() })
                .unwrap();
        let palace = Palace::new(Arc::new(store), WorkspaceId::default_workspace()).with_embedder(embedder);
        (dir, palace)
    }

    fn new(room: &str, text: &str) -> NewDrawer {
        NewDrawer {
            wing: Wing::parse("w").unwrap(),
            room: Room::parse(room).unwrap(),
            hall: None,
            content: Content::parse(text).unwrap(),
            memory_type: None,
            importance: None,
            confidence: None,
            source_file: None,
            added_by: "test".into(),
            tags: vec![],
        }
    }

    #[test]
    fn a_second_ingest_of_the_same_text_makes_no_embedding_call() {
        let counting = Arc::new(Counting::default());
        let (_dir, palace) = palace_with(Arc::clone(&counting));
        let first = palace.add_drawer(new("a", "the same words")).unwrap();
        assert_eq!(counting.texts.load(Ordering::SeqCst), 1);
        palace.add_drawer(new("a", "the same words")).unwrap();
        palace.add_drawer(new("b", "the same words")).unwrap();
        assert_eq!(counting.texts.load(Ordering::SeqCst), 1, "same text: the stored vector is reused");
        let stored = palace.drawer(first.id()).unwrap().embedding.unwrap();
        assert_eq!(stored.model, "counting");
        let batch = palace.embed_texts(&["x", "x", "the same words"]).unwrap();
        assert_eq!((batch.computed, batch.cached), (1, 1), "duplicates within a batch are embedded once");
        assert_eq!(counting.texts.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_failing_provider_stores_the_drawer_without_a_vector() {
        let counting = Arc::new(Counting::default());
        counting.failing.store(true, Ordering::SeqCst);
        let (_dir, palace) = palace_with(Arc::clone(&counting));
        let id = palace.add_drawer(new("a", "kept anyway")).unwrap().id().clone();
        assert!(palace.drawer(&id).unwrap().embedding.is_none());
        counting.failing.store(false, Ordering::SeqCst);
        let report = palace.reembed(10, &mut |_| {}).unwrap();
        assert_eq!((report.embedded, report.remaining), (1, 0));
        assert!(palace.drawer(&id).unwrap().embedding.is_some());
    }

    #[test]
    fn reembed_is_resumable_after_a_failure() {
        let counting = Arc::new(Counting { fail_after: Some(25), ..Counting::default() });
        let (_dir, palace) = {
            let (dir, palace) =
                palace_with(Arc::new(Counting { failing: AtomicBool::new(true), ..Counting::default() }));
            for i in 0..60 {
                palace.add_drawer(new("r", &format!("drawer number {i}"))).unwrap();
            }
            let store = Arc::clone(palace.store());
            (
                dir,
                Palace::new(store, WorkspaceId::default_workspace())
                    .with_embedder(Arc::clone(&counting) as Arc<dyn Embedder>),
            )
        };
        let mut batches = 0;
        let first = palace.reembed(10, &mut |_| batches += 1).unwrap();
        assert_eq!(first.embedded, 30, "three batches of 10 before the provider failed");
        assert_eq!(first.remaining, 30);
        let fixed = Arc::new(Counting::default());
        let palace = Palace::new(Arc::clone(palace.store()), WorkspaceId::default_workspace())
            .with_embedder(Arc::clone(&fixed) as Arc<dyn Embedder>);
        let second = palace.reembed(10, &mut |_| {}).unwrap();
        assert_eq!((second.embedded, second.remaining), (30, 0));
        assert_eq!(fixed.texts.load(Ordering::SeqCst), 30, "only the missing drawers were embedded");
        assert!(batches >= 3);
    }
}
