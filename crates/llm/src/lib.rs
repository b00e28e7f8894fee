//! Language-model clients of mempalace behind core's
//! [`Llm`](mempalace_core::llm::Llm) trait: OpenAI-compatible chat
//! completions and Ollama's chat API over blocking HTTP (`ureq`).
//!
//! [`LlmClient`] adds what a process needs around the protocol: a model per
//! task, timeouts, retries with backoff (honouring `Retry-After`), the
//! shared cooldown after repeated failures, a cap on calls in flight, token
//! and cost accounting with an optional spending cap, and a kill switch (a
//! marker file checked at most once a second). Only the binary (and tests)
//! depend on this crate; the engine sees the trait in core.
//!
//! Build one from an [`LlmConfig`] (the binary's settings fill it) and hand
//! it to `Palace::with_llm` as `Arc<dyn Llm>`. Tests start a
//! [`testing::ScriptedServer`] (feature `testing`) and point a config at it.

pub mod client;
pub mod config;
pub mod protocol;
#[cfg(feature = "testing")]
pub mod testing;
pub mod usage;

pub use client::{Clock, LlmClient};
pub use config::{LlmConfig, Prices, Provider};
pub use mempalace_core::llm::{ChatRequest, ChatResponse, Llm, LlmError, LlmResult, Task};
pub use mempalace_core::secret::Secret;
pub use usage::{TaskUsage, UsageReport};
