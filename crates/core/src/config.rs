//! `~/.mempalace/config.json`: its text parsed into checked values. The
//! binary reads the file and layers the result under the environment and
//! its flags (crates/mempalace/src/settings.rs); here is only the parsing,
//! text in and values or a named error out, so the fuzzer can reach it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Why a config file was refused; each message names the file, the key and
/// what is accepted.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Not JSON at all.
    #[error("{origin} is not valid JSON; fix it or move it aside")]
    NotJson {
        /// The file.
        origin: String,
        /// The parser's complaint (line and column).
        source: serde_json::Error,
    },
    /// JSON, but not an object.
    #[error("{origin} must hold a JSON object such as {{\"palace_path\": \"~/.mempalace/palace\"}}")]
    NotObject {
        /// The file.
        origin: String,
    },
    /// A known key with a value of the wrong kind.
    #[error("{origin}: key {key:?} has value {value}; expected {expected}")]
    BadValue {
        /// The file.
        origin: String,
        /// The key.
        key: String,
        /// The value as JSON.
        value: String,
        /// What the key takes.
        expected: String,
    },
    /// A key neither we nor the Python MemPalace know.
    #[error(
        "{origin}: unknown key {key:?}; accepted keys are {} (and the Python MemPalace's: {})",
        OUR_KEYS.join(", "),
        MEMPALACE_KEYS.join(", ")
    )]
    UnknownKey {
        /// The file.
        origin: String,
        /// The key.
        key: String,
    },
}

/// Keys of `config.json` we act on.
pub const OUR_KEYS: &[&str] = &[
    "palace_path",
    "database_url",
    "workspace",
    "busy_timeout_ms",
    "model_dir",
    "memory_dir",
    "embedder",
    "embed_base_url",
    "embed_api_key",
    "embed_model",
    "max_entities",
    "max_triples",
    "model_hub_url",
    "llm",
    "llm_provider",
    "llm_base_url",
    "llm_api_key",
    "llm_model",
    "llm_models",
    "llm_timeout_s",
    "llm_max_concurrency",
    "llm_price_input_per_mtok",
    "llm_price_output_per_mtok",
    "llm_budget_usd",
];

/// Keys the Python MemPalace writes or reads. Accepted so an existing config
/// keeps working; those with no meaning here are ignored.
pub const MEMPALACE_KEYS: &[&str] = &[
    "collection_name",
    "topic_wings",
    "hall_keywords",
    "chunk_size",
    "chunk_overlap",
    "min_chunk_size",
    "entity_languages",
    "embedding_device",
    "topic_tunnel_min_count",
    "hooks",
    "people_map",
    "backend",
    "embedding_model",
    "max_backups",
    "embeddinggemma_batch_size",
    "embedding_threads",
];

/// Values from `config.json`, checked.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ConfigFile {
    /// `palace_path`.
    pub palace_path: Option<PathBuf>,
    /// `database_url`: a PostgreSQL palace.
    pub database_url: Option<String>,
    /// `workspace`.
    pub workspace: Option<String>,
    /// `busy_timeout_ms`.
    pub busy_timeout_ms: Option<u64>,
    /// `model_dir`.
    pub model_dir: Option<PathBuf>,
    /// `memory_dir`: the memory root of `memory-files` and MCP `memory_get`.
    pub memory_dir: Option<PathBuf>,
    /// `embedder`.
    pub embedder: Option<String>,
    /// `embed_base_url`.
    pub embed_base_url: Option<String>,
    /// `embed_api_key`.
    pub embed_api_key: Option<String>,
    /// `embed_model`.
    pub embed_model: Option<String>,
    /// `max_entities`: knowledge-graph entities per workspace.
    pub max_entities: Option<u64>,
    /// `max_triples`: knowledge-graph facts per workspace.
    pub max_triples: Option<u64>,
    /// `model_hub_url`: the Hugging Face hub or a mirror, for `model fetch`.
    pub model_hub_url: Option<String>,
    /// The language model's keys (`llm`, `llm_*`).
    pub llm: LlmFile,
    /// Keys of the Python MemPalace present in the file that have no effect
    /// here (the binary logs them).
    pub ignored: Vec<String>,
}

/// The `llm*` keys of `config.json`.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct LlmFile {
    /// `llm`: "on" or "off".
    pub switch: Option<String>,
    /// `llm_provider`.
    pub provider: Option<String>,
    /// `llm_base_url`.
    pub base_url: Option<String>,
    /// `llm_api_key`.
    pub api_key: Option<String>,
    /// `llm_model`.
    pub model: Option<String>,
    /// `llm_models`: task → model.
    pub models: BTreeMap<crate::llm::Task, String>,
    /// `llm_timeout_s`.
    pub timeout_s: Option<f64>,
    /// `llm_max_concurrency`.
    pub max_concurrency: Option<u64>,
    /// `llm_price_input_per_mtok`.
    pub price_input_per_mtok: Option<f64>,
    /// `llm_price_output_per_mtok`.
    pub price_output_per_mtok: Option<f64>,
    /// `llm_budget_usd`.
    pub budget_usd: Option<f64>,
}

impl ConfigFile {
    /// Parses the text of a config file. `origin` names it in errors.
    pub fn parse(text: &str, origin: &Path) -> Result<Self, ConfigError> {
        let value: Value = serde_json::from_str(text)
            .map_err(|source| ConfigError::NotJson { origin: origin.display().to_string(), source })?;
        let Value::Object(map) = value else {
            return Err(ConfigError::NotObject { origin: origin.display().to_string() });
        };
        let mut config = ConfigFile::default();
        for (key, value) in &map {
            let bad_value = |expected: &str| ConfigError::BadValue {
                origin: origin.display().to_string(),
                key: key.clone(),
                value: value.to_string(),
                expected: expected.to_string(),
            };
            match key.as_str() {
                "palace_path" => {
                    let text = value.as_str().ok_or_else(|| bad_value("a path string"))?;
                    config.palace_path = Some(PathBuf::from(text));
                }
                "database_url" => {
                    let text = value.as_str().ok_or_else(|| bad_value("a postgres:// URL string"))?;
                    config.database_url = Some(text.to_string());
                }
                "workspace" => {
                    let text = value.as_str().ok_or_else(|| bad_value("a workspace id string"))?;
                    config.workspace = Some(text.to_string());
                }
                "model_dir" => {
                    config.model_dir = Some(PathBuf::from(value.as_str().ok_or_else(|| bad_value("a path string"))?));
                }
                "memory_dir" => {
                    config.memory_dir = Some(PathBuf::from(value.as_str().ok_or_else(|| bad_value("a path string"))?));
                }
                "model_hub_url" => {
                    let text = value.as_str().ok_or_else(|| bad_value("an http(s) URL string"))?;
                    config.model_hub_url = Some(text.to_string());
                }
                "embedder" | "embed_base_url" | "embed_api_key" | "embed_model" => {
                    let text = value.as_str().ok_or_else(|| bad_value("a string"))?.to_string();
                    match key.as_str() {
                        "embedder" => config.embedder = Some(text),
                        "embed_base_url" => config.embed_base_url = Some(text),
                        "embed_api_key" => config.embed_api_key = Some(text),
                        _ => config.embed_model = Some(text),
                    }
                }
                "busy_timeout_ms" => {
                    config.busy_timeout_ms =
                        Some(value.as_u64().ok_or_else(|| bad_value("a whole number of milliseconds"))?);
                }
                "max_entities" => {
                    config.max_entities = Some(value.as_u64().ok_or_else(|| bad_value("a whole number"))?);
                }
                "max_triples" => {
                    config.max_triples = Some(value.as_u64().ok_or_else(|| bad_value("a whole number"))?);
                }
                "llm" | "llm_provider" | "llm_base_url" | "llm_api_key" | "llm_model" => {
                    // `llm` also takes a boolean.
                    let text = match value {
                        Value::Bool(on) if key == "llm" => if *on { "on" } else { "off" }.to_string(),
                        _ => value.as_str().ok_or_else(|| bad_value("a string"))?.to_string(),
                    };
                    match key.as_str() {
                        "llm" => config.llm.switch = Some(text),
                        "llm_provider" => config.llm.provider = Some(text),
                        "llm_base_url" => config.llm.base_url = Some(text),
                        "llm_api_key" => config.llm.api_key = Some(text),
                        _ => config.llm.model = Some(text),
                    }
                }
                "llm_models" => {
                    let expected = "an object of task → model, tasks being classify, conflict, enrich, extract, probe";
                    let map = value.as_object().ok_or_else(|| bad_value(expected))?;
                    for (task, model) in map {
                        let task = task.parse::<crate::llm::Task>().map_err(|_| bad_value(expected))?;
                        let model = model.as_str().ok_or_else(|| bad_value(expected))?;
                        config.llm.models.insert(task, model.to_string());
                    }
                }
                "llm_timeout_s" | "llm_price_input_per_mtok" | "llm_price_output_per_mtok" | "llm_budget_usd" => {
                    let number = value.as_f64().ok_or_else(|| bad_value("a number"))?;
                    match key.as_str() {
                        "llm_timeout_s" => config.llm.timeout_s = Some(number),
                        "llm_price_input_per_mtok" => config.llm.price_input_per_mtok = Some(number),
                        "llm_price_output_per_mtok" => config.llm.price_output_per_mtok = Some(number),
                        _ => config.llm.budget_usd = Some(number),
                    }
                }
                "llm_max_concurrency" => {
                    config.llm.max_concurrency = Some(value.as_u64().ok_or_else(|| bad_value("a whole number"))?);
                }
                known if MEMPALACE_KEYS.contains(&known) => config.ignored.push(known.to_string()),
                unknown => {
                    return Err(ConfigError::UnknownKey {
                        origin: origin.display().to_string(),
                        key: unknown.to_string(),
                    });
                }
            }
        }
        Ok(config)
    }
}
