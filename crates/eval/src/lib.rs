//! Retrieval-quality benchmarks run through the product's own path: each
//! conversation is filed as the conversation miner files a transcript
//! (exchanges, verbatim, dated by their session) into a fresh palace, and
//! each question goes through the default search. Metrics are defined in
//! `mempalace_core::eval`.
//!
//! * [`locomo`] — LoCoMo (original and audit-corrected evidence);
//! * [`longmemeval`] — LongMemEval, MemPalace's variant and the official one.
//!
//! The caller supplies fresh palaces (with the embedder it wants), so this
//! crate names no backend and no provider.

pub mod extraction;
pub mod locomo;
pub mod longmemeval;
mod metrics;

use mempalace_engine::Palace;

/// Makes a fresh, empty palace for one conversation.
pub type PalaceFactory<'a> = &'a mut dyn FnMut() -> Result<Palace, String>;

/// Why a benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The data file could not be read or parsed.
    #[error("cannot read {what}: {detail}")]
    Data {
        /// Which file.
        what: String,
        /// Why.
        detail: String,
    },
    /// Filing or searching failed.
    #[error(transparent)]
    Engine(#[from] mempalace_engine::EngineError),
    /// The palace factory failed.
    #[error("cannot create a palace: {0}")]
    Palace(String),
}

pub use metrics::Accumulator;
