//! Embedding providers: text in, L2-normalised vectors out.
//!
//! Every provider implements [`Embedder`]. Each vector is tagged with the
//! provider's [`Embedder::model_id`], and vectors of two models are never
//! compared. Providers:
//!
//! * [`minilm::MiniLm`] — all-MiniLM-L6-v2 run in-process by our own BERT
//!   encoder (the model the Python MemPalace and ChromaDB use, so results
//!   are comparable);
//! * [`mpnet::Mpnet`] — all-mpnet-base-v2 on the same encoder (relative
//!   position bias added): larger and slower, a choice for quality;
//! * [`static_model::StaticModel`] — a static token-embedding table distilled
//!   from MiniLM by our own code ([`static_model::distill`]): a lookup and a
//!   mean, thousands of times faster;
//! * `remote::{OpenAiCompatible, Ollama}` (feature `remote`) — HTTP endpoints.
//!
//! [`resilient::Resilient`] wraps any provider with the cooldown of SPEC §4
//! (60 s → 120 s → 240 s → 300 s max), so a failing provider turns
//! unavailable instead of failing every call.
//!
//! The [`Embedder`] trait and its error live in `mempalace-core` (re-exported
//! here), so crates that only use vectors never compile this one.
//!
//! Not here: caching by content hash and storing vectors (engine and store),
//! choosing a provider from configuration (the binary).

pub mod amx;
pub mod bert;
pub mod files;
pub mod kept;
pub mod kernels;
mod mapped;
pub mod minilm;
pub mod mpnet;
pub mod pca;
pub mod resilient;
pub mod static_model;
pub mod weights;
pub mod wordpiece;

#[cfg(feature = "remote")]
pub mod remote;

pub use mempalace_core::embedder::{EmbedError, EmbedResult, Embedder};
