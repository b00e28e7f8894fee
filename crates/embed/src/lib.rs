//! Embedding providers: text in, L2-normalised vectors out.
//!
//! Every provider implements [`Embedder`]. Each vector is tagged with the
//! provider's [`Embedder::model_id`], and vectors of two models are never
//! compared. Providers:
//!
//! * [`minilm::MiniLm`] — all-MiniLM-L6-v2 run in-process with candle (the
//!   model the Python MemPalace and ChromaDB use, so results are comparable);
//! * [`static_model::StaticModel`] — a static token-embedding table distilled
//!   from MiniLM by our own code ([`static_model::distill`]): a lookup and a
//!   mean, thousands of times faster;
//! * `remote::{OpenAiCompatible, Ollama}` (feature `remote`) — HTTP endpoints.
//!
//! [`resilient::Resilient`] wraps any provider with the cooldown of SPEC §4
//! (60 s → 120 s → 240 s → 300 s max), so a failing provider turns
//! unavailable instead of failing every call.
//!
//! Not here: caching by content hash and storing vectors (engine and store),
//! choosing a provider from configuration (the binary).

pub mod bert;
pub mod files;
pub mod kernels;
pub mod minilm;
pub mod pca;
pub mod resilient;
pub mod static_model;
pub mod wordpiece;

#[cfg(feature = "remote")]
pub mod remote;

use thiserror::Error;

/// Why an embedding call failed.
#[derive(Debug, Error)]
pub enum EmbedError {
    /// Model files are missing or unreadable.
    #[error("embedding model not available: {0}")]
    ModelMissing(String),
    /// A model file is present but wrong (checksum, shape, format).
    #[error("embedding model files are invalid: {0}")]
    ModelInvalid(String),
    /// Inference failed.
    #[error("embedding inference failed: {0}")]
    Inference(String),
    /// A remote provider answered with an error or an unexpected body.
    #[error("embedding provider error: {0}")]
    Provider(String),
    /// The provider is cooling down after failures; try again later.
    #[error("embedding provider unavailable for {remaining_s} more seconds after repeated failures")]
    CoolingDown {
        /// Seconds left in the cooldown.
        remaining_s: u64,
    },
}

/// Result alias for embedding calls.
pub type EmbedResult<T> = Result<T, EmbedError>;

/// A source of text embeddings.
pub trait Embedder: Send + Sync {
    /// Identifier stored with every vector, e.g. `all-MiniLM-L6-v2`.
    fn model_id(&self) -> &str;

    /// Vector length.
    fn dim(&self) -> usize;

    /// Whether a call is expected to succeed now (false while cooling down).
    fn available(&self) -> bool {
        true
    }

    /// Embeds several texts; one L2-normalised vector per text, in order.
    fn embed_batch(&self, texts: &[&str]) -> EmbedResult<Vec<Vec<f32>>>;

    /// Embeds one text.
    fn embed_one(&self, text: &str) -> EmbedResult<Vec<f32>> {
        self.embed_batch(&[text])?
            .pop()
            .ok_or_else(|| EmbedError::Inference("the provider returned no vector".to_string()))
    }
}

impl<E: Embedder + ?Sized> Embedder for std::sync::Arc<E> {
    fn model_id(&self) -> &str {
        (**self).model_id()
    }

    fn dim(&self) -> usize {
        (**self).dim()
    }

    fn available(&self) -> bool {
        (**self).available()
    }

    fn embed_batch(&self, texts: &[&str]) -> EmbedResult<Vec<Vec<f32>>> {
        (**self).embed_batch(texts)
    }
}
