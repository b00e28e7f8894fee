//! Remote embedding providers over HTTP: OpenAI-compatible
//! (`POST …/embeddings`) and Ollama (`POST /api/embed`).
//!
//! Each call is split into batches of at most `max_batch` texts. A batch
//! that gets HTTP 429 or 5xx, or times out, is retried with exponential
//! backoff (honouring `Retry-After`, capped), up to `max_retries` times;
//! other failures are returned at once. Vectors are L2-normalised here,
//! whatever the server does. The model id is prefixed with the provider
//! (`openai:…`, `ollama:…`) so remote vectors never mix with local ones.
//! Cooldown after repeated failures is the job of `resilient::Resilient`.

use std::sync::OnceLock;
use std::time::Duration;

use mempalace_core::vector::normalize;
use serde::Deserialize;
use serde_json::json;

use crate::{EmbedError, EmbedResult, Embedder};

pub use mempalace_core::secret::Secret;

/// Which protocol an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `POST {base}/embeddings` with `{"model", "input": [...]}`.
    OpenAi,
    /// `POST {base}/api/embed` with `{"model", "input": [...]}`.
    Ollama,
}

/// Settings of a remote provider.
#[derive(Debug, Clone)]
pub struct RemoteConfig {
    /// Protocol.
    pub protocol: Protocol,
    /// Base URL, e.g. `https://api.openai.com/v1` or `http://localhost:11434`.
    pub base_url: String,
    /// Bearer token, if the endpoint needs one.
    pub api_key: Option<Secret>,
    /// Model name as the endpoint knows it.
    pub model: String,
    /// Whole-request timeout.
    pub timeout: Duration,
    /// Retries of one batch on 429/5xx/timeouts.
    pub max_retries: u32,
    /// First backoff; doubles per retry.
    pub initial_backoff: Duration,
    /// Most texts per request.
    pub max_batch: usize,
}

impl RemoteConfig {
    /// Defaults for a protocol: 30 s timeout, 3 retries from 500 ms, 256
    /// texts per request (OpenAI accepts 2,048; smaller keeps requests short).
    pub fn new(protocol: Protocol, base_url: impl Into<String>, model: impl Into<String>) -> Self {
        Self {
            protocol,
            base_url: base_url.into(),
            api_key: None,
            model: model.into(),
            timeout: Duration::from_secs(30),
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_batch: 256,
        }
    }
}

/// Longest wait honoured from a `Retry-After` header.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);

/// A remote embedding endpoint.
pub struct RemoteEmbedder {
    config: RemoteConfig,
    agent: ureq::Agent,
    url: String,
    model_id: String,
    dim: OnceLock<usize>,
}

#[derive(Deserialize)]
struct OpenAiResponse {
    data: Vec<OpenAiItem>,
}

#[derive(Deserialize)]
struct OpenAiItem {
    embedding: Vec<f32>,
    #[serde(default)]
    index: Option<usize>,
}

#[derive(Deserialize)]
struct OllamaResponse {
    embeddings: Vec<Vec<f32>>,
}

/// The request URL for a base URL and protocol.
pub fn endpoint_url(protocol: Protocol, base_url: &str) -> String {
    let base = base_url.trim_end_matches('/');
    match protocol {
        Protocol::OpenAi if base.ends_with("/embeddings") => base.to_string(),
        Protocol::OpenAi => {
            // A bare host gets the standard /v1 prefix; a base with a path is used as given.
            let has_path = base.split("://").nth(1).is_some_and(|rest| rest.contains('/'));
            if has_path { format!("{base}/embeddings") } else { format!("{base}/v1/embeddings") }
        }
        Protocol::Ollama if base.ends_with("/api/embed") => base.to_string(),
        Protocol::Ollama => format!("{base}/api/embed"),
    }
}

enum Attempt {
    Done(Vec<Vec<f32>>),
    Retry { reason: String, after: Option<Duration> },
    Fail(String),
}

impl RemoteEmbedder {
    /// A provider for `config`.
    pub fn new(config: RemoteConfig) -> Self {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(config.timeout))
            .http_status_as_error(false)
            .build()
            .into();
        let prefix = match config.protocol {
            Protocol::OpenAi => "openai",
            Protocol::Ollama => "ollama",
        };
        Self {
            url: endpoint_url(config.protocol, &config.base_url),
            model_id: format!("{prefix}:{}", config.model),
            agent,
            config,
            dim: OnceLock::new(),
        }
    }

    fn attempt(&self, texts: &[&str]) -> Attempt {
        let body = json!({"model": self.config.model, "input": texts});
        let mut request = self.agent.post(&self.url).header("Content-Type", "application/json");
        if let Some(key) = &self.config.api_key {
            request = request.header("Authorization", format!("Bearer {}", key.expose()));
        }
        let mut response = match request.send_json(&body) {
            Ok(response) => response,
            Err(ureq::Error::Timeout(_)) => return Attempt::Retry { reason: "timed out".into(), after: None },
            Err(ureq::Error::Io(error)) => return Attempt::Retry { reason: error.to_string(), after: None },
            Err(error) => return Attempt::Fail(format!("{}: {error}", self.url)),
        };
        let status = response.status().as_u16();
        if status == 429 || status >= 500 {
            let after = response
                .headers()
                .get("retry-after")
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.trim().parse::<u64>().ok())
                .map(|secs| Duration::from_secs(secs).min(MAX_RETRY_AFTER));
            return Attempt::Retry { reason: format!("HTTP {status}"), after };
        }
        let text = match response.body_mut().read_to_string() {
            Ok(text) => text,
            Err(error) => return Attempt::Retry { reason: format!("reading the response: {error}"), after: None },
        };
        if status != 200 {
            let snippet: String = text.chars().take(300).collect();
            return Attempt::Fail(format!("{} answered HTTP {status}: {snippet}", self.url));
        }
        let vectors = match self.config.protocol {
            Protocol::OpenAi => serde_json::from_str::<OpenAiResponse>(&text).map(|parsed| {
                let mut items: Vec<(usize, Vec<f32>)> = parsed
                    .data
                    .into_iter()
                    .enumerate()
                    .map(|(position, item)| (item.index.unwrap_or(position), item.embedding))
                    .collect();
                items.sort_by_key(|(index, _)| *index);
                items.into_iter().map(|(_, vector)| vector).collect::<Vec<_>>()
            }),
            Protocol::Ollama => serde_json::from_str::<OllamaResponse>(&text).map(|parsed| parsed.embeddings),
        };
        match vectors {
            Ok(vectors) if vectors.len() == texts.len() => Attempt::Done(vectors),
            Ok(vectors) => {
                Attempt::Fail(format!("{} returned {} vectors for {} texts", self.url, vectors.len(), texts.len()))
            }
            Err(error) => Attempt::Fail(format!("{} returned an unexpected body: {error}", self.url)),
        }
    }

    fn embed_chunk(&self, texts: &[&str]) -> EmbedResult<Vec<Vec<f32>>> {
        let mut backoff = self.config.initial_backoff;
        let mut retries = 0;
        loop {
            match self.attempt(texts) {
                Attempt::Done(mut vectors) => {
                    for vector in &mut vectors {
                        normalize(vector);
                    }
                    if let Some(first) = vectors.first() {
                        let dim = *self.dim.get_or_init(|| first.len());
                        if vectors.iter().any(|v| v.len() != dim) {
                            return Err(EmbedError::Provider(format!(
                                "{} returned vectors of differing dimension (expected {dim})",
                                self.url
                            )));
                        }
                    }
                    return Ok(vectors);
                }
                Attempt::Retry { reason, after } if retries < self.config.max_retries => {
                    retries += 1;
                    let wait = after.unwrap_or(backoff);
                    tracing::info!(
                        url = self.url,
                        reason,
                        retry = retries,
                        wait_ms = wait.as_millis() as u64,
                        "retrying embedding request"
                    );
                    std::thread::sleep(wait);
                    backoff *= 2;
                }
                Attempt::Retry { reason, .. } => {
                    return Err(EmbedError::Provider(format!(
                        "{} failed after {} retries: {reason}",
                        self.url, self.config.max_retries
                    )));
                }
                Attempt::Fail(message) => return Err(EmbedError::Provider(message)),
            }
        }
    }
}

impl Embedder for RemoteEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    /// The dimension, known after the first successful call (0 before).
    fn dim(&self) -> usize {
        self.dim.get().copied().unwrap_or(0)
    }

    fn embed_batch(&self, texts: &[&str]) -> EmbedResult<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.config.max_batch.max(1)) {
            out.extend(self.embed_chunk(chunk)?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_urls_follow_each_protocol() {
        assert_eq!(endpoint_url(Protocol::OpenAi, "https://api.openai.com/v1"), "https://api.openai.com/v1/embeddings");
        assert_eq!(endpoint_url(Protocol::OpenAi, "http://localhost:8080"), "http://localhost:8080/v1/embeddings");
        assert_eq!(endpoint_url(Protocol::OpenAi, "http://h/x/embeddings/"), "http://h/x/embeddings");
        assert_eq!(endpoint_url(Protocol::Ollama, "http://localhost:11434/"), "http://localhost:11434/api/embed");
    }

    #[test]
    fn secrets_do_not_leak_into_debug_output() {
        let mut config = RemoteConfig::new(Protocol::OpenAi, "http://x", "m");
        config.api_key = Some(Secret::new("sk-very-secret"));
        assert!(!format!("{config:?}").contains("sk-very-secret"));
    }
}
