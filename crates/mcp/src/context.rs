//! What every tool call works on: the palace, and the embedding provider
//! that loads in the background.
//!
//! The server answers `initialize` before the embedding model is read (a
//! MiniLM load takes a few hundred milliseconds; a remote provider may take
//! longer to answer). Tools that need vectors wait for the load to finish;
//! when it failed they run without vectors, and searches say they ran
//! lexically. Tools that never embed (status, taxonomy, the knowledge graph)
//! never wait.

use std::sync::{Arc, Condvar, Mutex};

use mempalace_core::embedder::Embedder;
use mempalace_engine::Palace;

/// Builds the embedding provider; `Ok(None)` means "no vectors" (no model).
pub type EmbedderLoader = Box<dyn FnOnce() -> Result<Option<Arc<dyn Embedder>>, String> + Send>;

#[derive(Default)]
struct Slot {
    /// `None` while loading.
    state: Mutex<Option<Option<Arc<dyn Embedder>>>>,
    ready: Condvar,
}

/// The palace a server works on, shared by all its sessions.
#[derive(Clone)]
pub struct Backend {
    palace: Palace,
    slot: Arc<Slot>,
    location: String,
}

impl Backend {
    /// A backend whose embedder comes from `loader`, run on its own thread.
    /// `location` is what status reports as the palace path.
    pub fn new(palace: Palace, location: String, loader: Option<EmbedderLoader>) -> Self {
        let slot = Arc::new(Slot::default());
        match loader {
            None => *lock(&slot.state) = Some(None),
            Some(loader) => {
                let loading = Arc::clone(&slot);
                let spawned = std::thread::Builder::new().name("embedder-load".into()).spawn(move || {
                    let started = std::time::Instant::now();
                    let embedder = match loader() {
                        Ok(embedder) => embedder,
                        Err(error) => {
                            tracing::warn!(%error, "embedding provider failed to load; searches run on keywords only");
                            None
                        }
                    };
                    tracing::info!(
                        ms = started.elapsed().as_millis() as u64,
                        loaded = embedder.is_some(),
                        "embedding provider ready"
                    );
                    *lock(&loading.state) = Some(embedder);
                    loading.ready.notify_all();
                });
                if let Err(error) = spawned {
                    tracing::warn!(%error, "cannot start the embedder thread; working without vectors");
                    *lock(&slot.state) = Some(None);
                }
            }
        }
        Self { palace, slot, location }
    }

    /// The palace without waiting for the embedder (for tools that never
    /// embed).
    pub fn palace(&self) -> &Palace {
        &self.palace
    }

    /// The palace with the embedder, waiting for it to load first.
    pub fn embedding_palace(&self) -> Palace {
        let mut state = lock(&self.slot.state);
        while state.is_none() {
            state = self.slot.ready.wait(state).unwrap_or_else(std::sync::PoisonError::into_inner);
        }
        match state.as_ref().and_then(Option::as_ref) {
            Some(embedder) => self.palace.clone().with_embedder(Arc::clone(embedder)),
            None => self.palace.clone(),
        }
    }

    /// Whether the embedder has finished loading (successfully or not).
    pub fn embedder_settled(&self) -> bool {
        lock(&self.slot.state).is_some()
    }

    /// Where the palace lives, as status reports it.
    pub fn location(&self) -> &str {
        &self.location
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
