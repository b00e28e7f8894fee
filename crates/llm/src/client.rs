//! [`LlmClient`]: one configured endpoint behind core's `Llm` trait.
//!
//! A call goes: kill switch (the marker file, checked at most once a
//! second) → cooldown → budget → a permit of the concurrency cap (callers
//! beyond it wait) → the request, retried with exponential backoff on 429,
//! 5xx, timeouts and connection errors (honouring `Retry-After`, capped) →
//! accounting. Refusals before the request cost no network call. A call
//! that fails after its retries starts or lengthens the cooldown (60 s,
//! doubling, at most 300 s), unless the server refused the request itself
//! (400, 413, 422: the next request may be fine) or answered something
//! unreadable; a success ends it.
//!
//! An OpenAI-compatible server that refuses `response_format` with a 400
//! is asked again at once with JSON mode, then with no format; the client
//! remembers what the server took, so later calls start there.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use mempalace_core::embedder::cooldown_after;
use mempalace_core::llm::{ChatRequest, ChatResponse, Llm, LlmError, LlmResult, Task};

use crate::config::{LlmConfig, Provider};
use crate::protocol::{StructuredMode, error_message, parse_answer, refuses_response_format, request_body};
use crate::usage::{PriceReport, TaskUsage, UsageReport};

/// A clock, replaceable in tests.
pub type Clock = Arc<dyn Fn() -> Instant + Send + Sync>;

/// How often the kill-switch marker file is looked at, at most.
const MARKER_CHECK_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug)]
struct State {
    consecutive_failures: u32,
    unavailable_until: Option<Instant>,
    usage: BTreeMap<Task, TaskUsage>,
    spent_usd: f64,
    /// When the marker was last looked at, and whether it was there.
    marker: Option<(Instant, bool)>,
    mode: StructuredMode,
}

/// A duration in whole seconds, rounded up (a cooldown of 59.9 s left is
/// reported as 60).
fn whole_seconds(duration: Duration) -> u64 {
    duration.as_secs() + u64::from(duration.subsec_nanos() > 0)
}

/// The concurrency cap: a counting semaphore.
#[derive(Debug)]
struct Gate {
    in_flight: Mutex<usize>,
    freed: Condvar,
    max: usize,
}

struct Permit<'a>(&'a Gate);

impl Gate {
    fn acquire(&self) -> Permit<'_> {
        let mut in_flight = self.in_flight.lock().unwrap_or_else(PoisonError::into_inner);
        while *in_flight >= self.max {
            in_flight = self.freed.wait(in_flight).unwrap_or_else(PoisonError::into_inner);
        }
        *in_flight += 1;
        Permit(self)
    }

    fn in_flight(&self) -> usize {
        *self.in_flight.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut in_flight = self.0.in_flight.lock().unwrap_or_else(PoisonError::into_inner);
        *in_flight = in_flight.saturating_sub(1);
        self.0.freed.notify_one();
    }
}

/// What one attempt came to.
enum Attempt {
    Done(ChatResponse),
    /// Worth retrying: 429, 5xx, a timeout, a connection error.
    Retry {
        reason: String,
        after: Option<Duration>,
        unreachable: bool,
    },
    /// A 400 that names `response_format`: ask again with a weaker mode.
    FormatRefused(String),
    /// Final; `cools` says whether it counts toward the cooldown.
    Fail {
        error: LlmError,
        cools: bool,
    },
}

/// A language-model client for one endpoint.
pub struct LlmClient {
    config: LlmConfig,
    url: String,
    shown_url: String,
    agent: ureq::Agent,
    clock: Clock,
    state: Mutex<State>,
    gate: Gate,
}

impl std::fmt::Debug for LlmClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmClient").field("config", &self.config).finish_non_exhaustive()
    }
}

impl LlmClient {
    /// A client for `config` (checked first: see [`LlmConfig::check`]).
    pub fn new(config: LlmConfig) -> Result<Self, String> {
        Self::with_clock(config, Arc::new(Instant::now))
    }

    /// A client with a given clock (tests move time for the cooldown and the
    /// marker check).
    pub fn with_clock(config: LlmConfig, clock: Clock) -> Result<Self, String> {
        config.check()?;
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(config.timeout))
            .timeout_connect(Some(config.connect_timeout))
            .http_status_as_error(false)
            .build()
            .into();
        let shown_url = LlmConfig { base_url: config.endpoint_url(), ..config.clone() }.shown_base_url();
        Ok(Self {
            url: config.endpoint_url(),
            shown_url,
            agent,
            clock,
            state: Mutex::new(State {
                consecutive_failures: 0,
                unavailable_until: None,
                usage: BTreeMap::new(),
                spent_usd: 0.0,
                marker: None,
                mode: StructuredMode::JsonSchema,
            }),
            gate: Gate { in_flight: Mutex::new(0), freed: Condvar::new(), max: config.max_concurrency.max(1) },
            config,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &LlmConfig {
        &self.config
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The kill switch's marker file when it is present (looked at no more
    /// than once a second).
    pub fn switched_off(&self) -> Option<&Path> {
        let path = self.config.kill_switch.as_deref()?;
        let now = (self.clock)();
        let mut state = self.state();
        let present = match state.marker {
            Some((checked, present)) if now.saturating_duration_since(checked) < MARKER_CHECK_EVERY => present,
            _ => {
                let present = path.exists();
                if present != state.marker.is_some_and(|(_, was)| was) {
                    if present {
                        tracing::warn!(marker = %path.display(), "the language model is switched off");
                    } else if state.marker.is_some() {
                        tracing::info!(marker = %path.display(), "the language model is switched back on");
                    }
                }
                state.marker = Some((now, present));
                present
            }
        };
        present.then_some(path)
    }

    /// Cooldown left, if cooling down.
    pub fn cooldown_remaining(&self) -> Option<Duration> {
        let now = (self.clock)();
        let state = self.state();
        state.unavailable_until.and_then(|until| until.checked_duration_since(now)).filter(|left| !left.is_zero())
    }

    fn budget_error(&self) -> Option<LlmError> {
        let budget = self.config.budget_usd?;
        let spent = self.state().spent_usd;
        (spent >= budget).then(|| {
            LlmError::Budget(format!(
                "${spent:.4} spent of this process's ${budget:.2} (llm_budget_usd / MEMPALACE_LLM_BUDGET_USD); \
                 raise it or restart the process"
            ))
        })
    }

    /// Why a call would be refused now without a request, if it would.
    fn refusal(&self) -> Option<LlmError> {
        if let Some(marker) = self.switched_off() {
            return Some(LlmError::Disabled(format!("{} exists", marker.display())));
        }
        if let Some(left) = self.cooldown_remaining() {
            return Some(LlmError::CoolingDown { remaining_s: whole_seconds(left) });
        }
        self.budget_error()
    }

    /// What this client has done so far, with its configuration.
    pub fn usage(&self) -> UsageReport {
        let cooling_down_s = self.cooldown_remaining().map(whole_seconds);
        let disabled = self.config.kill_switch.is_some() && self.switched_off().is_some();
        let state = self.state();
        let mut total = TaskUsage::default();
        for usage in state.usage.values() {
            total.add(usage);
        }
        UsageReport {
            provider: self.config.provider.as_str().to_string(),
            base_url: self.config.shown_base_url(),
            model: self.config.model.clone(),
            models: Task::ALL
                .iter()
                .map(|task| (task.as_str().to_string(), self.config.model_for(*task).to_string()))
                .collect(),
            max_concurrency: self.gate.max,
            in_flight: self.gate.in_flight(),
            kill_switch: self.config.kill_switch.as_ref().map(|path| path.display().to_string()),
            disabled,
            cooling_down_s,
            consecutive_failures: state.consecutive_failures,
            structured_output: match self.config.provider {
                Provider::OpenAi => state.mode.as_str().to_string(),
                Provider::Ollama => "format".to_string(),
            },
            tasks: state.usage.iter().map(|(task, usage)| (task.as_str().to_string(), usage.clone())).collect(),
            total,
            prices: self
                .config
                .prices
                .map(|p| PriceReport { input_per_mtok: p.input_per_mtok, output_per_mtok: p.output_per_mtok }),
            budget_usd: self.config.budget_usd,
            spent_usd: state.spent_usd,
        }
    }

    fn redact(&self, text: String) -> String {
        match &self.config.api_key {
            Some(key) => key.redact(&text),
            None => text,
        }
    }

    fn attempt(&self, model: &str, request: &ChatRequest, mode: StructuredMode) -> Attempt {
        let body = request_body(self.config.provider, model, request, mode);
        let mut call = self.agent.post(&self.url).header("Content-Type", "application/json");
        if let Some(key) = &self.config.api_key {
            call = call.header("Authorization", format!("Bearer {}", key.expose()));
        }
        let mut response = match call.send_json(&body) {
            Ok(response) => response,
            Err(ureq::Error::Timeout(what)) => {
                return Attempt::Retry { reason: format!("timed out ({what})"), after: None, unreachable: true };
            }
            Err(
                error @ (ureq::Error::Io(_)
                | ureq::Error::ConnectionFailed
                | ureq::Error::HostNotFound
                | ureq::Error::BodyStalled),
            ) => return Attempt::Retry { reason: error.to_string(), after: None, unreachable: true },
            Err(error) => {
                let error = LlmError::Unreachable(self.redact(format!("{}: {error}", self.shown_url)));
                return Attempt::Fail { error, cools: true };
            }
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<f64>().ok())
            .filter(|secs| secs.is_finite() && *secs >= 0.0)
            .map(|secs| Duration::from_secs_f64(secs).min(self.config.max_retry_after));
        let text = match response.body_mut().read_to_string() {
            Ok(text) => text,
            Err(ureq::Error::Timeout(what)) => {
                return Attempt::Retry { reason: format!("timed out ({what})"), after: None, unreachable: true };
            }
            Err(error) => {
                return Attempt::Retry {
                    reason: format!("reading the answer: {error}"),
                    after: None,
                    unreachable: status == 200,
                };
            }
        };
        if status == 429 || status >= 500 {
            let reason = self.redact(format!("HTTP {status}: {}", error_message(&text)));
            return Attempt::Retry { reason, after: retry_after, unreachable: false };
        }
        if !(200..300).contains(&status) {
            let message = self.redact(error_message(&text));
            if status == 400
                && self.config.provider == Provider::OpenAi
                && request.schema.is_some()
                && refuses_response_format(&message)
            {
                return Attempt::FormatRefused(message);
            }
            let error = LlmError::Provider(format!("{} answered HTTP {status}: {message}", self.shown_url));
            return Attempt::Fail { error, cools: !matches!(status, 400 | 413 | 422) };
        }
        match parse_answer(self.config.provider, model, &text) {
            Ok(answer) => Attempt::Done(answer),
            Err(LlmError::Malformed(why)) => {
                Attempt::Fail { error: LlmError::Malformed(self.redact(why)), cools: false }
            }
            Err(error) => Attempt::Fail { error, cools: false },
        }
    }

    /// One call with its retries; the error and whether it cools.
    fn call(&self, model: &str, request: &ChatRequest) -> Result<ChatResponse, (LlmError, bool)> {
        let mut backoff = self.config.initial_backoff;
        let mut retries = 0;
        loop {
            let mode = self.state().mode;
            match self.attempt(model, request, mode) {
                Attempt::Done(answer) => return Ok(answer),
                Attempt::FormatRefused(message) => {
                    let Some(weaker) = mode.weaker() else {
                        let error = LlmError::Provider(format!("{} answered HTTP 400: {message}", self.shown_url));
                        return Err((error, false));
                    };
                    tracing::info!(
                        url = self.shown_url,
                        refused = mode.as_str(),
                        next = weaker.as_str(),
                        message,
                        "the server refused the response format; asking with a weaker one"
                    );
                    let mut state = self.state();
                    state.mode = state.mode.max(weaker);
                }
                Attempt::Retry { reason, after, .. } if retries < self.config.max_retries => {
                    retries += 1;
                    let wait = after.unwrap_or(backoff);
                    tracing::info!(
                        url = self.shown_url,
                        task = %request.task,
                        reason,
                        retry = retries,
                        wait_ms = wait.as_millis() as u64,
                        "retrying the language-model call"
                    );
                    std::thread::sleep(wait);
                    backoff = backoff.saturating_mul(2);
                    if let Some(marker) = self.switched_off() {
                        return Err((LlmError::Disabled(format!("{} exists", marker.display())), false));
                    }
                }
                Attempt::Retry { reason, unreachable, .. } => {
                    let message = format!("{}: {reason} (after {retries} retries)", self.shown_url);
                    let error = if unreachable { LlmError::Unreachable(message) } else { LlmError::Provider(message) };
                    return Err((error, true));
                }
                Attempt::Fail { error, cools } => return Err((error, cools)),
            }
        }
    }

    fn count(&self, task: Task, update: impl FnOnce(&mut TaskUsage)) {
        update(self.state().usage.entry(task).or_default());
    }
}

impl Llm for LlmClient {
    fn model_for(&self, task: Task) -> String {
        self.config.model_for(task).to_string()
    }

    fn available(&self) -> bool {
        self.refusal().is_none()
    }

    fn chat(&self, request: &ChatRequest) -> LlmResult<ChatResponse> {
        if let Some(refused) = self.refusal() {
            self.count(request.task, |usage| usage.refused += 1);
            tracing::debug!(task = %request.task, %refused, "language-model call refused");
            return Err(refused);
        }
        let model = self.config.model_for(request.task).to_string();
        let _permit = self.gate.acquire();
        let started = Instant::now();
        let result = self.call(&model, request);
        let elapsed_ms = started.elapsed().as_millis() as u64;
        match result {
            Ok(answer) => {
                let cost = self
                    .config
                    .prices
                    .map_or(0.0, |prices| prices.cost(answer.usage.prompt_tokens, answer.usage.completion_tokens));
                let mut state = self.state();
                if state.consecutive_failures > 0 {
                    tracing::info!(url = self.shown_url, "the language model recovered");
                }
                state.consecutive_failures = 0;
                state.unavailable_until = None;
                state.spent_usd += cost;
                let usage = state.usage.entry(request.task).or_default();
                usage.calls += 1;
                usage.prompt_tokens += answer.usage.prompt_tokens;
                usage.completion_tokens += answer.usage.completion_tokens;
                usage.cost_usd += cost;
                tracing::debug!(
                    task = %request.task,
                    model = answer.model,
                    elapsed_ms,
                    prompt_tokens = answer.usage.prompt_tokens,
                    completion_tokens = answer.usage.completion_tokens,
                    "language-model call"
                );
                Ok(answer)
            }
            Err((error, cools)) => {
                let now = (self.clock)();
                let mut state = self.state();
                let usage = state.usage.entry(request.task).or_default();
                usage.calls += 1;
                usage.failures += 1;
                if cools {
                    state.consecutive_failures += 1;
                    let pause = cooldown_after(state.consecutive_failures);
                    state.unavailable_until = Some(now + pause);
                    tracing::warn!(
                        task = %request.task,
                        failures = state.consecutive_failures,
                        cooldown_s = pause.as_secs(),
                        %error,
                        "language-model call failed; cooling down"
                    );
                } else {
                    tracing::warn!(task = %request.task, elapsed_ms, %error, "language-model call failed");
                }
                Err(error)
            }
        }
    }

    fn usage_report(&self) -> Option<serde_json::Value> {
        serde_json::to_value(self.usage()).ok()
    }
}
