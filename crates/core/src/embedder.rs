//! The embedding-provider boundary: the [`Embedder`] trait and its error.
//!
//! It lives in core, below every crate that needs vectors, so the engine,
//! the MCP surface and the stores see one small trait and never compile an
//! inference engine. The providers themselves (the in-process MiniLM, the
//! static model, HTTP endpoints) are in `mempalace-embed`; the binary picks
//! one at startup and hands it down as `Arc<dyn Embedder>`.
//!
//! Not here: caching by content hash, cooldowns after failures, loading
//! model files (all need I/O or a clock).

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

    /// The end of `context` that can go before `text` in one input
    /// ([`crate::exchange::in_context`]) without pushing any of `text` out
    /// of what the model reads: a model that reads a fixed number of tokens
    /// from the start drops the rest, and a long context would leave a
    /// drawer's own text out of its vector. The default keeps all of it,
    /// for models that read far more than a drawer and its context.
    fn context_that_fits<'a>(&self, context: &'a str, text: &str) -> &'a str {
        let _ = text;
        context
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

    fn embed_one(&self, text: &str) -> EmbedResult<Vec<f32>> {
        (**self).embed_one(text)
    }

    fn context_that_fits<'a>(&self, context: &'a str, text: &str) -> &'a str {
        (**self).context_that_fits(context, text)
    }
}

/// The pause after `consecutive_failures` failures in a row (≥ 1) of a
/// provider that talks to something that can fail (a remote endpoint, an
/// LLM): 60 s, then doubling, at most 300 s (SPEC §4, robotmem's "Service
/// Cooldown"). Pure, so every provider shares one schedule.
pub fn cooldown_after(consecutive_failures: u32) -> std::time::Duration {
    const FIRST: std::time::Duration = std::time::Duration::from_secs(60);
    const MAX: std::time::Duration = std::time::Duration::from_secs(300);
    let doublings = consecutive_failures.saturating_sub(1).min(16);
    (FIRST * 2_u32.pow(doublings)).min(MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cooldown_doubles_from_sixty_seconds_up_to_five_minutes() {
        let seconds: Vec<u64> = (1..=6).map(|n| cooldown_after(n).as_secs()).collect();
        assert_eq!(seconds, [60, 120, 240, 300, 300, 300]);
        assert_eq!(cooldown_after(0).as_secs(), 60);
        assert_eq!(cooldown_after(u32::MAX).as_secs(), 300);
    }
}
