//! Cooldown after failures (SPEC §4, robotmem "Service Cooldown").
//!
//! After a failed call the provider is unavailable for 60 s; each further
//! consecutive failure doubles the pause (120 s, 240 s) up to 300 s. While
//! unavailable, calls fail fast with `CoolingDown` and `available()` is
//! false, so search degrades to BM25-only instead of waiting on a dead
//! endpoint. The first success resets the schedule.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::{EmbedError, EmbedResult, Embedder};

pub use mempalace_core::embedder::cooldown_after;

#[derive(Debug, Default)]
struct State {
    consecutive_failures: u32,
    unavailable_until: Option<Instant>,
}

/// A clock, replaceable in tests.
pub type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

/// Wraps a provider with the cooldown schedule.
pub struct Resilient<E> {
    inner: E,
    state: Mutex<State>,
    clock: Clock,
}

impl<E: Embedder> Resilient<E> {
    /// Wraps `inner`, using the real clock.
    pub fn new(inner: E) -> Self {
        Self::with_clock(inner, Arc::new(Instant::now))
    }

    /// Wraps `inner` with a given clock.
    pub fn with_clock(inner: E, clock: Clock) -> Self {
        Self { inner, state: Mutex::new(State::default()), clock }
    }

    /// The wrapped provider.
    pub fn inner(&self) -> &E {
        &self.inner
    }

    /// Seconds of cooldown left, if cooling down.
    pub fn cooldown_remaining(&self) -> Option<Duration> {
        let now = (self.clock)();
        let state = self.state.lock().expect("cooldown state poisoned");
        state.unavailable_until.and_then(|until| until.checked_duration_since(now)).filter(|left| !left.is_zero())
    }
}

impl<E: Embedder> Embedder for Resilient<E> {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn available(&self) -> bool {
        self.cooldown_remaining().is_none() && self.inner.available()
    }

    fn context_that_fits<'a>(&self, context: &'a str, text: &str) -> &'a str {
        self.inner.context_that_fits(context, text)
    }

    fn embed_batch(&self, texts: &[&str]) -> EmbedResult<Vec<Vec<f32>>> {
        if let Some(left) = self.cooldown_remaining() {
            return Err(EmbedError::CoolingDown { remaining_s: left.as_secs().max(1) });
        }
        match self.inner.embed_batch(texts) {
            Ok(vectors) => {
                let mut state = self.state.lock().expect("cooldown state poisoned");
                if state.consecutive_failures > 0 {
                    tracing::info!(model = self.inner.model_id(), "embedding provider recovered");
                }
                *state = State::default();
                Ok(vectors)
            }
            Err(error) => {
                let mut state = self.state.lock().expect("cooldown state poisoned");
                state.consecutive_failures += 1;
                let pause = cooldown_after(state.consecutive_failures);
                state.unavailable_until = Some((self.clock)() + pause);
                tracing::warn!(
                    model = self.inner.model_id(),
                    failures = state.consecutive_failures,
                    cooldown_s = pause.as_secs(),
                    %error,
                    "embedding provider failed; cooling down"
                );
                Err(error)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

    struct Flaky {
        fail: AtomicBool,
        calls: AtomicU64,
    }

    impl Embedder for Flaky {
        fn model_id(&self) -> &str {
            "flaky"
        }
        fn dim(&self) -> usize {
            1
        }
        fn embed_batch(&self, texts: &[&str]) -> EmbedResult<Vec<Vec<f32>>> {
            self.calls.fetch_add(1, Ordering::SeqCst);
            if self.fail.load(Ordering::SeqCst) {
                Err(EmbedError::Provider("HTTP 500".into()))
            } else {
                Ok(texts.iter().map(|_| vec![1.0]).collect())
            }
        }
    }

    #[test]
    fn failures_pause_the_provider_and_success_resets_it() {
        let base = Instant::now();
        let offset = Arc::new(AtomicU64::new(0));
        let clock_offset = Arc::clone(&offset);
        let clock: Clock = Arc::new(move || base + Duration::from_secs(clock_offset.load(Ordering::SeqCst)));
        let flaky = Flaky { fail: AtomicBool::new(true), calls: AtomicU64::new(0) };
        let provider = Resilient::with_clock(flaky, clock);

        assert!(provider.embed_one("x").is_err());
        assert!(!provider.available());
        // While cooling down, calls fail fast without reaching the provider.
        assert!(matches!(provider.embed_one("x"), Err(EmbedError::CoolingDown { remaining_s: 60 })));
        assert_eq!(provider.inner().calls.load(Ordering::SeqCst), 1);

        offset.store(61, Ordering::SeqCst);
        assert!(provider.available());
        assert!(provider.embed_one("x").is_err());
        assert_eq!(provider.cooldown_remaining().map(|d| d.as_secs()), Some(120));

        offset.store(61 + 121, Ordering::SeqCst);
        provider.inner().fail.store(false, Ordering::SeqCst);
        assert_eq!(provider.embed_one("x").unwrap(), vec![1.0]);
        assert!(provider.available());
        provider.inner().fail.store(true, Ordering::SeqCst);
        assert!(provider.embed_one("x").is_err());
        assert_eq!(provider.cooldown_remaining().map(|d| d.as_secs()), Some(60), "success reset the schedule");
    }
}
