//! What every tool call works on: one palace handle, whose embedding
//! provider loads in the background.
//!
//! The server answers `initialize` before the embedding model is read (a
//! MiniLM load takes a few hundred milliseconds; a remote provider may take
//! longer to answer). The palace holds the provider in a deferred cell
//! (`engine::EmbedderCell`): a call that needs vectors (a search, a filing,
//! a diary entry, a duplicate check) waits for the load, and when it failed
//! runs without vectors (searches say they ran lexically); calls that never
//! embed (status, taxonomy, the knowledge graph) never wait. There is one
//! handle, so no tool can reach the palace without its embedder.

use std::sync::Arc;

use mempalace_engine::{EmbedderCell, Palace};

pub use mempalace_engine::EmbedderLoader;

/// The palace a server works on, shared by all its sessions.
#[derive(Clone)]
pub struct Backend {
    palace: Palace,
    cell: Arc<EmbedderCell>,
    location: String,
}

impl Backend {
    /// A backend whose embedder comes from `loader`, run on its own thread
    /// (`None`: no vectors). `location` is what status reports as the
    /// palace path.
    pub fn new(palace: Palace, location: String, loader: Option<EmbedderLoader>) -> Self {
        let cell = match loader {
            Some(loader) => EmbedderCell::load_in_background(loader),
            None => Arc::new(EmbedderCell::ready(None)),
        };
        Self { palace: palace.with_deferred_embedder(Arc::clone(&cell)), cell, location }
    }

    /// The palace (its embedder loads on first use).
    pub fn palace(&self) -> &Palace {
        &self.palace
    }

    /// Whether the embedder has finished loading (successfully or not).
    pub fn embedder_settled(&self) -> bool {
        self.cell.settled()
    }

    /// Where the palace lives, as status reports it.
    pub fn location(&self) -> &str {
        &self.location
    }
}
