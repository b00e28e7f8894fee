//! What a client is built from: the provider, endpoint, models per task,
//! timeouts and retries, the concurrency cap, prices and budget, and the
//! kill-switch marker file. Plain values: the binary's settings fill them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use mempalace_core::llm::Task;
use mempalace_core::secret::Secret;

/// Which chat protocol an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    /// `POST {base}/chat/completions` (OpenAI, Azure-style gateways, vLLM,
    /// llama.cpp's server, LiteLLM, OpenRouter, …).
    OpenAi,
    /// `POST {base}/api/chat` (Ollama).
    Ollama,
}

impl Provider {
    /// The name in settings and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Provider::OpenAi => "openai",
            Provider::Ollama => "ollama",
        }
    }

    /// Reads a provider name (`openai`, `openai-compatible`, `ollama`).
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "openai" | "openai-compatible" => Some(Provider::OpenAi),
            "ollama" => Some(Provider::Ollama),
            _ => None,
        }
    }
}

impl std::fmt::Display for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Prices per million tokens, in US dollars.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prices {
    /// Per million prompt tokens.
    pub input_per_mtok: f64,
    /// Per million completion tokens.
    pub output_per_mtok: f64,
}

impl Prices {
    /// The cost of a call's tokens.
    pub fn cost(&self, prompt_tokens: u64, completion_tokens: u64) -> f64 {
        (prompt_tokens as f64 * self.input_per_mtok + completion_tokens as f64 * self.output_per_mtok) / 1e6
    }
}

/// Default whole-call timeout.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// Default connect timeout.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default retries of one call on 429, 5xx, timeouts and connection errors.
pub const DEFAULT_MAX_RETRIES: u32 = 2;
/// Default calls in flight per client.
pub const DEFAULT_MAX_CONCURRENCY: usize = 4;
/// Longest wait honoured from a `Retry-After` header by default.
pub const DEFAULT_MAX_RETRY_AFTER: Duration = Duration::from_secs(30);

/// Settings of one client.
#[derive(Debug, Clone)]
pub struct LlmConfig {
    /// Protocol.
    pub provider: Provider,
    /// Base URL, e.g. `https://api.openai.com/v1` or `http://localhost:11434`.
    pub base_url: String,
    /// Bearer token, if the endpoint needs one.
    pub api_key: Option<Secret>,
    /// The model of every task without its own.
    pub model: String,
    /// Models of particular tasks.
    pub models: BTreeMap<Task, String>,
    /// Whole-call timeout (connect, send, wait, read), per attempt.
    pub timeout: Duration,
    /// Connect timeout, per attempt.
    pub connect_timeout: Duration,
    /// Retries of one call on 429, 5xx, timeouts and connection errors.
    pub max_retries: u32,
    /// First backoff; doubles per retry.
    pub initial_backoff: Duration,
    /// Longest wait honoured from a `Retry-After` header.
    pub max_retry_after: Duration,
    /// Calls in flight at once; further callers wait (at least 1).
    pub max_concurrency: usize,
    /// Prices for the cost accounting (none: tokens are counted, cost is not).
    pub prices: Option<Prices>,
    /// Spending cap of this process in US dollars (needs prices).
    pub budget_usd: Option<f64>,
    /// The kill-switch marker: while this file exists every call returns
    /// `Disabled` (checked at most once a second).
    pub kill_switch: Option<PathBuf>,
}

impl LlmConfig {
    /// Defaults for a provider and endpoint: 60 s timeout (10 s to
    /// connect), 2 retries from 1 s, `Retry-After` honoured up to 30 s, 4
    /// calls in flight, no prices, no budget, no kill switch.
    pub fn new(provider: Provider, base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            provider,
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            models: BTreeMap::new(),
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            max_retries: DEFAULT_MAX_RETRIES,
            initial_backoff: Duration::from_secs(1),
            max_retry_after: DEFAULT_MAX_RETRY_AFTER,
            max_concurrency: DEFAULT_MAX_CONCURRENCY,
            prices: None,
            budget_usd: None,
            kill_switch: None,
        }
    }

    /// The model `task` uses.
    pub fn model_for(&self, task: Task) -> &str {
        self.models.get(&task).map_or(self.model.as_str(), String::as_str)
    }

    /// The request URL: for OpenAI `{base}/chat/completions` (a bare host
    /// gets the standard `/v1` prefix; a base already ending in
    /// `/chat/completions` is used as given), for Ollama `{base}/api/chat`.
    pub fn endpoint_url(&self) -> String {
        let base = self.base_url.trim().trim_end_matches('/');
        match self.provider {
            Provider::OpenAi if base.ends_with("/chat/completions") => base.to_string(),
            Provider::OpenAi => {
                let has_path = base.split("://").nth(1).is_some_and(|rest| rest.contains('/'));
                if has_path { format!("{base}/chat/completions") } else { format!("{base}/v1/chat/completions") }
            }
            Provider::Ollama if base.ends_with("/api/chat") => base.to_string(),
            Provider::Ollama => format!("{base}/api/chat"),
        }
    }

    /// The base URL as shown in reports: without user info (`user:pass@`)
    /// or a query string.
    pub fn shown_base_url(&self) -> String {
        let base = self.base_url.trim();
        let base = base.split(['?', '#']).next().unwrap_or(base);
        match base.split_once("://") {
            Some((scheme, rest)) => {
                let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
                let host = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
                format!("{scheme}://{host}{path}")
            }
            None => base.to_string(),
        }
    }

    /// Checks the values a client cannot work with: an empty or non-HTTP
    /// base URL, an empty model name, a zero timeout, a negative price or
    /// budget, a budget without prices. The message says what to fix.
    pub fn check(&self) -> Result<(), String> {
        let base = self.base_url.trim();
        if !(base.starts_with("http://") || base.starts_with("https://")) || base.len() <= "https://".len() {
            return Err(format!("the LLM base URL {:?} must be an http:// or https:// URL", self.shown_base_url()));
        }
        if self.model.trim().is_empty() {
            return Err("the LLM model name is empty".into());
        }
        if let Some((task, _)) = self.models.iter().find(|(_, model)| model.trim().is_empty()) {
            return Err(format!("the LLM model of the {task} task is empty"));
        }
        if self.timeout.is_zero() || self.connect_timeout.is_zero() {
            return Err("the LLM timeout must be above zero seconds".into());
        }
        if let Some(prices) = &self.prices
            && !(prices.input_per_mtok.is_finite()
                && prices.output_per_mtok.is_finite()
                && prices.input_per_mtok >= 0.0
                && prices.output_per_mtok >= 0.0)
        {
            return Err("LLM prices per million tokens must be numbers of zero or more".into());
        }
        if let Some(budget) = self.budget_usd {
            if !(budget.is_finite() && budget >= 0.0) {
                return Err(format!("the LLM budget {budget} must be a number of dollars, zero or more"));
            }
            if self.prices.is_none() {
                return Err("an LLM budget needs prices to count against: set the input and output prices per \
                            million tokens too"
                    .into());
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_urls_follow_each_protocol() {
        let url = |provider, base: &str| LlmConfig::new(provider, base, "m").endpoint_url();
        assert_eq!(url(Provider::OpenAi, "https://api.openai.com/v1"), "https://api.openai.com/v1/chat/completions");
        assert_eq!(url(Provider::OpenAi, "http://localhost:8080/"), "http://localhost:8080/v1/chat/completions");
        assert_eq!(url(Provider::OpenAi, "http://h/x/chat/completions"), "http://h/x/chat/completions");
        assert_eq!(url(Provider::Ollama, "http://localhost:11434/"), "http://localhost:11434/api/chat");
        assert_eq!(url(Provider::Ollama, "http://h/api/chat"), "http://h/api/chat");
    }

    #[test]
    fn tasks_fall_back_to_the_default_model_and_urls_are_shown_without_credentials() {
        let mut config = LlmConfig::new(Provider::OpenAi, "https://u:pw@gw.example/v1?key=abc", "small");
        config.models.insert(Task::Extract, "big".into());
        assert_eq!((config.model_for(Task::Classify), config.model_for(Task::Extract)), ("small", "big"));
        assert_eq!(config.shown_base_url(), "https://gw.example/v1");
        config.api_key = Some(Secret::new("sk-top-secret"));
        assert!(!format!("{config:?}").contains("sk-top-secret"));
    }

    #[test]
    fn unusable_values_are_refused_with_what_to_fix() {
        let good = LlmConfig::new(Provider::OpenAi, "http://localhost:1/v1", "m");
        assert_eq!(good.check(), Ok(()));
        let mut bad = good.clone();
        bad.base_url = "localhost:1".into();
        assert!(bad.check().unwrap_err().contains("http://"));
        let mut bad = good.clone();
        bad.budget_usd = Some(5.0);
        assert!(bad.check().unwrap_err().contains("prices"));
        bad.prices = Some(Prices { input_per_mtok: -1.0, output_per_mtok: 1.0 });
        assert!(bad.check().is_err());
        bad.prices = Some(Prices { input_per_mtok: 0.15, output_per_mtok: 0.6 });
        assert_eq!(bad.check(), Ok(()));
        assert!((Prices { input_per_mtok: 0.15, output_per_mtok: 0.6 }.cost(1_000_000, 500_000) - 0.45).abs() < 1e-9);
    }
}
