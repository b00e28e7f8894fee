//! Token and cost accounting: counters per task and the report a client
//! gives to `status`, `llm status` and metrics.

use std::collections::BTreeMap;

use serde::Serialize;

/// Counters of one task (or of all, in [`UsageReport::total`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TaskUsage {
    /// Calls that went out to the server (each with its retries).
    pub calls: u64,
    /// Calls that went out and failed after their retries.
    pub failures: u64,
    /// Calls refused without a request: switched off, cooling down, budget spent.
    pub refused: u64,
    /// Prompt tokens of successful calls, as the server reported them.
    pub prompt_tokens: u64,
    /// Completion tokens of successful calls.
    pub completion_tokens: u64,
    /// Their cost in US dollars (0 without prices).
    pub cost_usd: f64,
}

impl TaskUsage {
    pub(crate) fn add(&mut self, other: &TaskUsage) {
        self.calls += other.calls;
        self.failures += other.failures;
        self.refused += other.refused;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cost_usd += other.cost_usd;
    }
}

/// Prices as reported.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PriceReport {
    /// US dollars per million prompt tokens.
    pub input_per_mtok: f64,
    /// US dollars per million completion tokens.
    pub output_per_mtok: f64,
}

/// A client's configuration and what it has done in this process.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageReport {
    /// `openai` or `ollama`.
    pub provider: String,
    /// The base URL, without credentials.
    pub base_url: String,
    /// The model of tasks without their own.
    pub model: String,
    /// The model of every task.
    pub models: BTreeMap<String, String>,
    /// Calls allowed in flight at once.
    pub max_concurrency: usize,
    /// Calls in flight now.
    pub in_flight: usize,
    /// The kill-switch marker file, if any.
    pub kill_switch: Option<String>,
    /// Whether the marker file was present at the last check.
    pub disabled: bool,
    /// Seconds of cooldown left, if cooling down.
    pub cooling_down_s: Option<u64>,
    /// Failed calls in a row.
    pub consecutive_failures: u32,
    /// How JSON is asked of an OpenAI-compatible server now (`json_schema`,
    /// `json_object` or `none`, after the server refused the stronger ones).
    pub structured_output: String,
    /// Counters per task (tasks that were asked at least once).
    pub tasks: BTreeMap<String, TaskUsage>,
    /// Counters of all tasks.
    pub total: TaskUsage,
    /// Prices, when configured.
    pub prices: Option<PriceReport>,
    /// The spending cap of this process, when configured.
    pub budget_usd: Option<f64>,
    /// Dollars spent in this process (0 without prices).
    pub spent_usd: f64,
}
