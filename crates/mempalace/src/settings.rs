//! Startup settings: compiled-in defaults, `~/.mempalace/config.json`, the
//! environment and CLI flags, in that order of precedence (last wins).
//!
//! This is the only place that reads configuration files or environment
//! variables; library crates receive plain values. An unknown key or a bad
//! value stops startup with a message naming it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use mempalace_core::WorkspaceId;
use mempalace_engine::kg::{DEFAULT_MAX_ENTITIES, DEFAULT_MAX_TRIPLES};
use serde_json::Value;

pub use mempalace_core::config::{ConfigFile, LlmFile};

/// Flags that override everything else.
#[derive(Debug, Default, Clone)]
pub struct Overrides {
    /// `--palace`.
    pub palace: Option<PathBuf>,
    /// `--store`: a PostgreSQL URL, or a palace path (as `--palace`).
    pub store: Option<String>,
    /// `--workspace`.
    pub workspace: Option<String>,
    /// `--model-dir`.
    pub model_dir: Option<PathBuf>,
    /// `--embedder`.
    pub embedder: Option<EmbedderKind>,
    /// `--llm-base-url`.
    pub llm_base_url: Option<String>,
    /// `--llm-model`.
    pub llm_model: Option<String>,
    /// `--llm-provider`.
    pub llm_provider: Option<String>,
    /// `--no-llm`.
    pub no_llm: bool,
    /// `--token`.
    pub token: Option<String>,
}

/// Which embedding provider to use (`--embedder`, `MEMPALACE_EMBEDDER`,
/// `embedder` in config.json; the same spellings everywhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EmbedderKind {
    /// all-MiniLM-L6-v2 in-process (the default): bf16 on the AMX unit where the CPU has one, f32 elsewhere;
    /// the same vectors either way (cosine ≥ 0.9999).
    #[value(name = "minilm", aliases = ["all-minilm-l6-v2", "local"])]
    MiniLm,
    /// The same model in f32 on every CPU (the reference path; same model id as `minilm`).
    #[value(name = "minilm-f32")]
    MiniLmF32,
    /// What `minilm` becomes in a process that embeds one short text
    /// (`add`, `search`, `inject`): f32 with the weights read in place,
    /// which loads about 40 ms faster. Not a user's choice.
    #[value(skip)]
    MiniLmOneText,
    /// The same model with int8 dense layers (AVX-512 VNNI), about twice as fast.
    #[value(name = "minilm-int8", alias = "int8")]
    MiniLmInt8,
    /// all-mpnet-base-v2 in-process (bf16 products on the AMX unit where the CPU has one, else f32;
    /// the same vectors): 768 dimensions, about eight times MiniLM's work per text, for palaces that
    /// favour retrieval quality over filing speed (`mempalace model fetch --model mpnet`).
    #[value(name = "mpnet", alias = "all-mpnet-base-v2")]
    Mpnet,
    /// What `mpnet` becomes in a process that embeds one short text: f32 with the weights read in
    /// place (no copy of 340 MB at load). Not a user's choice.
    #[value(skip)]
    MpnetOneText,
    /// The static model distilled from MiniLM: thousands of times faster, less precise.
    Static,
    /// An OpenAI-compatible endpoint (MEMPALACE_EMBED_BASE_URL).
    #[value(name = "openai", alias = "openai-compatible")]
    OpenAi,
    /// An Ollama endpoint (MEMPALACE_EMBED_BASE_URL).
    Ollama,
    /// No vectors: keyword search only.
    #[value(alias = "off")]
    None,
}

impl EmbedderKind {
    fn parse(text: &str, origin: &str) -> Result<Self> {
        <Self as clap::ValueEnum>::from_str(text.trim(), true).map_err(|_| {
            let names: Vec<String> = <Self as clap::ValueEnum>::value_variants()
                .iter()
                .filter_map(|kind| clap::ValueEnum::to_possible_value(kind).map(|value| value.get_name().to_string()))
                .collect();
            anyhow::anyhow!("{origin}: embedder {text:?} is not known; use one of {}", names.join(", "))
        })
    }
}

/// Settings of a remote embedding endpoint.
#[derive(Clone, PartialEq)]
pub struct RemoteEmbedSettings {
    /// Base URL.
    pub base_url: String,
    /// API key (never printed).
    pub api_key: Option<String>,
    /// Model name.
    pub model: String,
}

impl std::fmt::Debug for RemoteEmbedSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteEmbedSettings")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("model", &self.model)
            .finish()
    }
}

/// Resolved settings.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The user's home directory (`$HOME`), when set.
    pub home: Option<PathBuf>,
    /// The memory root holding `MEMORY.md` and `memory/*.md`
    /// (`$MEMPALACE_MEMORY_DIR`, `memory_dir`; else the current folder,
    /// decided where it is used: docs/memory-files.md).
    pub memory_dir: Option<PathBuf>,
    /// Where `model fetch` downloads from: the Hugging Face hub or a mirror
    /// (`$HF_ENDPOINT`, `model_hub_url`).
    pub model_hub_url: String,
    /// `$HF_HUB_OFFLINE=1`: `model fetch` skips the hub.
    pub model_hub_offline: bool,
    /// The SQLite file inside it.
    pub palace_file: PathBuf,
    /// A PostgreSQL palace (`postgres://…`), used instead of the file.
    pub database_url: Option<String>,
    /// Workspace to work on.
    pub workspace: WorkspaceId,
    /// SQLite busy timeout.
    pub busy_timeout_ms: u64,
    /// Where model files live.
    pub model_dir: PathBuf,
    /// The embedding provider.
    pub embedder: EmbedderKind,
    /// The remote endpoint, when one is configured.
    pub remote_embed: Option<RemoteEmbedSettings>,
    /// Phase gates of the tier decision (`CRAWBL_MEM_HEURISTIC_HIGH/LOW`).
    pub heuristic_high: f64,
    /// See `heuristic_high`.
    pub heuristic_low: f64,
    /// Knowledge-graph limits per workspace: (entities, facts).
    pub kg_limits: (u64, u64),
    /// Bearer token of the MCP HTTP endpoint (`$MEMPALACE_MCP_HTTP_TOKEN`).
    pub mcp_http_token: Option<mempalace_mcp::http::Token>,
    /// The caller's API token (`--token`, else `$MEMPALACE_TOKEN`): every
    /// command then acts as that user or agent (docs/tenancy.md).
    pub token: Option<mempalace_core::secret::Secret>,
    /// The MCP server's ingestion pool (`CRAWBL_AUTOINGEST_WORKERS`,
    /// `CRAWBL_AUTOINGEST_CAPACITY`, or their `MEMPALACE_` spellings).
    pub ingest_pool: mempalace_engine::pool::PoolConfig,
    /// The background jobs' batch sizes and periods (`MEMPALACE_PROCESS_BATCH`,
    /// `MEMPALACE_LLM_BATCH`, `MEMPALACE_{PROCESS,ENRICH,MAINTAIN}_EVERY_S`).
    pub jobs: mempalace_engine::work::JobSettings,
    /// The language model (docs/llm.md).
    pub llm: LlmSetting,
    /// The kill-switch marker `llm.off`: in the palace directory, or for a
    /// PostgreSQL palace in `~/.mempalace`.
    pub llm_marker: Option<PathBuf>,
}

/// Whether and how a language model is used.
#[derive(Debug, Clone)]
pub enum LlmSetting {
    /// No base URL configured (the default): every job runs deterministic.
    NotConfigured,
    /// Switched off by a setting; names it (`MEMPALACE_LLM=off`, …).
    Off(String),
    /// A client to build.
    On(Box<mempalace_llm::LlmConfig>),
}

impl Settings {
    /// Where the palace is, for messages: the PostgreSQL server (without
    /// its password) or the palace file.
    pub fn location(&self) -> String {
        match &self.database_url {
            Some(url) => mempalace_store::location::redact(url),
            None => self.palace_file.display().to_string(),
        }
    }
}

impl Settings {
    /// A folder beside the palace for the files maintenance commands keep
    /// for review (room sets, split plans): the SQLite palace's own folder,
    /// or for PostgreSQL `~/.mempalace/postgres/<12 hex of the URL without
    /// its password>`; a workspace other than the default gets a subfolder.
    pub fn side_dir(&self) -> Result<PathBuf> {
        let base = match &self.database_url {
            Some(url) => {
                let digest = mempalace_core::ContentHash::of(&mempalace_store::location::redact(url));
                self.home
                    .as_ref()
                    .context("HOME is not set, and a PostgreSQL palace keeps its review files under ~/.mempalace")?
                    .join(".mempalace")
                    .join("postgres")
                    .join(&digest.as_str()[..12])
            }
            None => self.palace_file.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from(".")),
        };
        Ok(if self.workspace.as_str() == WorkspaceId::DEFAULT { base } else { base.join(self.workspace.as_str()) })
    }
}

/// The people `mempalace split` looks for: `~/.mempalace/known_names.json`
/// (the Python MemPalace's file: a list of names, or `{"names": [...],
/// "username_map": {"jdoe": "John"}}`); none when the file is missing.
pub fn known_names(home: Option<&Path>) -> Result<mempalace_core::megafile::KnownNames> {
    let mut known = mempalace_core::megafile::KnownNames::default();
    let Some(path) = home.map(|home| home.join(".mempalace").join("known_names.json")) else { return Ok(known) };
    if !path.is_file() {
        return Ok(known);
    }
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let value: Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not valid JSON; fix it or move it aside", path.display()))?;
    let strings = |value: Option<&Value>| -> Vec<String> {
        value
            .and_then(Value::as_array)
            .map_or_else(Vec::new, |items| items.iter().filter_map(Value::as_str).map(str::to_string).collect())
    };
    match &value {
        Value::Array(_) => known.names = strings(Some(&value)),
        Value::Object(map) => {
            known.names = strings(map.get("names"));
            if let Some(Value::Object(users)) = map.get("username_map") {
                known.username_map =
                    users.iter().filter_map(|(user, name)| Some((user.clone(), name.as_str()?.to_string()))).collect();
            }
        }
        _ => bail!("{} must hold a list of names or {{\"names\": [...]}}", path.display()),
    }
    Ok(known)
}

/// Writes `entity_languages` into `~/.mempalace/config.json` (created when
/// missing; other keys kept), as the Python MemPalace's `init --lang` does.
/// Returns the file written.
pub fn save_entity_languages(home: Option<&Path>, languages: &[String]) -> Result<PathBuf> {
    let dir =
        home.context("HOME is not set, so there is no ~/.mempalace/config.json to keep --lang in")?.join(".mempalace");
    let path = dir.join("config.json");
    let mut map = match std::fs::read_to_string(&path) {
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(map)) => map,
            _ => bail!("{} is not a JSON object; fix it before saving --lang", path.display()),
        },
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => serde_json::Map::new(),
        Err(error) => return Err(error).with_context(|| format!("reading {}", path.display())),
    };
    map.insert("entity_languages".into(), Value::from(languages.to_vec()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let partial = dir.join("config.json.partial");
    let text = serde_json::to_string_pretty(&Value::Object(map)).context("writing config.json")?;
    std::fs::write(&partial, text + "\n").with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, &path).with_context(|| format!("replacing {}", path.display()))?;
    Ok(path)
}

/// Where the palace file lives for a palace path: an existing file, or a
/// path ending in `.db`/`.sqlite`/`.sqlite3` is the file itself; anything
/// else is a directory holding `palace.db`.
pub fn palace_file(palace: &Path) -> PathBuf {
    if palace.is_file() {
        return palace.to_path_buf();
    }
    let is_db_name =
        palace.extension().and_then(|ext| ext.to_str()).is_some_and(|ext| matches!(ext, "db" | "sqlite" | "sqlite3"));
    if is_db_name && !palace.is_dir() { palace.to_path_buf() } else { palace.join("palace.db") }
}

/// Expands a leading `~` with `home`.
fn expand_home(path: &Path, home: Option<&Path>) -> PathBuf {
    match (path.strip_prefix("~"), home) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => path.to_path_buf(),
    }
}

/// A snapshot of the process environment: the one place that reads it
/// (every other module receives values from [`Settings`]).
#[allow(clippy::disallowed_methods)] // the settings module is where the environment is read
pub fn environment() -> BTreeMap<String, String> {
    std::env::vars_os().filter_map(|(key, value)| Some((key.into_string().ok()?, value.into_string().ok()?))).collect()
}

/// The variables a scheduled job keeps from the environment it was
/// installed in: every `MEMPALACE_*` and `CRAWBL_*` setting (the palace,
/// the model folder, the embedder, limits), except the MCP server's token
/// and the test suite's own variables. A scheduler starts jobs with an
/// almost empty environment, so the job would otherwise find another
/// palace or no model.
pub fn job_environment(env: &BTreeMap<String, String>) -> Vec<(String, String)> {
    env.iter()
        .filter(|(key, _)| key.starts_with("MEMPALACE_") || key.starts_with("CRAWBL_"))
        .filter(|(key, _)| !key.starts_with("MEMPALACE_TEST_") && key.as_str() != "MEMPALACE_MCP_HTTP_TOKEN")
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// The home directory named by `HOME` in an environment snapshot.
pub fn home(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    env.get("HOME").filter(|home| !home.is_empty()).map(PathBuf::from)
}

/// The log filter: `$MEMPALACE_LOG` (an env-filter directive such as
/// `mempalace=debug,warn`) when set, else warnings, raised by each `-v`.
/// A directive that does not parse stops startup instead of being ignored.
pub fn log_filter(env: &BTreeMap<String, String>, verbose: u8) -> Result<tracing_subscriber::EnvFilter> {
    use tracing_subscriber::EnvFilter;
    match env.get("MEMPALACE_LOG").map(|value| value.trim()).filter(|value| !value.is_empty()) {
        Some(directives) => EnvFilter::builder().parse(directives).map_err(|error| {
            anyhow::anyhow!(
                "MEMPALACE_LOG={directives:?} is not a log filter ({error}); use a level such as `debug`, \
                 or per-module levels such as `mempalace=debug,warn`"
            )
        }),
        None => Ok(EnvFilter::new(match verbose {
            0 => "warn",
            1 => "info",
            2 => "debug",
            _ => "trace",
        })),
    }
}

/// Resolves settings from `env` (a snapshot of the environment), the config
/// file under `home`, and the flags.
pub fn resolve(env: &BTreeMap<String, String>, home: Option<&Path>, flags: &Overrides) -> Result<Settings> {
    let config_path = home.map(|home| home.join(".mempalace").join("config.json"));
    let config = match &config_path {
        Some(path) if path.is_file() => {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            let config = ConfigFile::parse(&text, path)?;
            for key in &config.ignored {
                tracing::debug!(key, "config key of the Python MemPalace has no effect here");
            }
            config
        }
        _ => ConfigFile::default(),
    };
    let env_palace = env
        .get("MEMPALACE_PALACE_PATH")
        .or_else(|| env.get("MEMPAL_PALACE_PATH"))
        .filter(|value| !value.is_empty())
        .map(PathBuf::from);
    // `--store` names either a PostgreSQL palace or a file palace.
    let store_flag = flags.store.as_deref().filter(|s| !s.is_empty());
    let store_path = store_flag.filter(|s| !mempalace_store::location::is_postgres_url(s)).map(PathBuf::from);
    let database_url = match store_flag {
        Some(url) if mempalace_store::location::is_postgres_url(url) => Some(url.to_string()),
        Some(_) => None,
        None if flags.palace.is_some() => None,
        None => env
            .get("MEMPALACE_DATABASE_URL")
            .filter(|value| !value.is_empty())
            .cloned()
            .or_else(|| if env_palace.is_some() { None } else { config.database_url.clone() }),
    };
    if let Some(url) = &database_url
        && !mempalace_store::location::is_postgres_url(url)
    {
        bail!(
            "MEMPALACE_DATABASE_URL / database_url must be a postgres:// URL, not {:?}; \
             for a palace file use --palace or MEMPALACE_PALACE_PATH",
            mempalace_store::location::redact(url)
        );
    }
    let palace = store_path
        .or(flags.palace.clone())
        .or(env_palace)
        .or(config.palace_path.clone())
        .or_else(|| home.map(|home| home.join(".mempalace").join("palace")))
        .context("cannot find the palace: HOME is not set; pass --palace DIR or set MEMPALACE_PALACE_PATH")?;
    let palace = expand_home(&palace, home);
    let palace = if palace.is_relative() {
        std::env::current_dir().context("reading the current directory")?.join(palace)
    } else {
        palace
    };

    let workspace_text = flags
        .workspace
        .clone()
        .or_else(|| env.get("MEMPALACE_WORKSPACE").cloned())
        .or(config.workspace.clone())
        .unwrap_or_else(|| WorkspaceId::DEFAULT.to_string());
    let workspace = WorkspaceId::parse(&workspace_text)?;
    let busy_timeout_ms = match env.get("MEMPALACE_BUSY_TIMEOUT_MS") {
        Some(text) => text
            .parse()
            .with_context(|| format!("MEMPALACE_BUSY_TIMEOUT_MS={text:?} is not a whole number of milliseconds"))?,
        None => config.busy_timeout_ms.unwrap_or(5_000),
    };
    let first = |names: &[&str]| names.iter().find_map(|name| env.get(*name).filter(|v| !v.is_empty()).cloned());
    let model_dir = flags
        .model_dir
        .clone()
        .or_else(|| first(&["MEMPALACE_MODEL_DIR"]).map(PathBuf::from))
        .or(config.model_dir.clone())
        .map(|dir| expand_home(&dir, home))
        .or_else(|| first(&["XDG_DATA_HOME"]).map(|data| PathBuf::from(data).join("mempalace").join("models")))
        .or_else(|| home.map(|home| home.join(".local").join("share").join("mempalace").join("models")))
        .context("cannot find the model directory: HOME is not set; pass --model-dir DIR")?;
    let base_url = first(&["MEMPALACE_EMBED_BASE_URL", "CRAWBL_EMBED_BASE_URL"]).or(config.embed_base_url.clone());
    let embedder = match (&flags.embedder, first(&["MEMPALACE_EMBEDDER"]), &config.embedder) {
        (Some(flag), _, _) => *flag,
        (None, Some(env_value), _) => EmbedderKind::parse(&env_value, "MEMPALACE_EMBEDDER")?,
        (None, None, Some(configured)) => EmbedderKind::parse(configured, "config.json embedder")?,
        // A configured endpoint (seed 0 §9) means "use it".
        (None, None, None) if base_url.is_some() => EmbedderKind::OpenAi,
        (None, None, None) => EmbedderKind::MiniLm,
    };
    let remote_embed = base_url.map(|base_url| RemoteEmbedSettings {
        base_url,
        api_key: first(&["MEMPALACE_EMBED_API_KEY", "CRAWBL_EMBED_API_KEY"]).or(config.embed_api_key.clone()),
        model: first(&["MEMPALACE_EMBED_MODEL", "CRAWBL_EMBED_MODEL"])
            .or(config.embed_model.clone())
            .unwrap_or_else(|| "text-embedding-3-small".to_string()),
    });
    if matches!(embedder, EmbedderKind::OpenAi | EmbedderKind::Ollama) && remote_embed.is_none() {
        let name = clap::ValueEnum::to_possible_value(&embedder).map(|v| v.get_name().to_string()).unwrap_or_default();
        bail!("the {name} embedder needs an endpoint: set MEMPALACE_EMBED_BASE_URL (or embed_base_url in config.json)");
    }
    let number = |names: &[&str], default: f64| -> Result<f64> {
        match names.iter().find_map(|name| env.get(*name).filter(|v| !v.is_empty()).map(|v| (name, v))) {
            Some((name, value)) => {
                value.trim().parse::<f64>().with_context(|| format!("{name}={value:?} is not a number"))
            }
            None => Ok(default),
        }
    };
    let whole = |name: &str, configured: Option<u64>, default: u64| -> Result<u64> {
        match env.get(name).filter(|v| !v.is_empty()) {
            Some(value) => {
                value.trim().parse::<u64>().with_context(|| format!("{name}={value:?} is not a whole number"))
            }
            None => Ok(configured.unwrap_or(default)),
        }
    };
    use mempalace_engine::pool::{DEFAULT_CAPACITY, DEFAULT_WORKERS};
    let pool_size = |names: &[&str], default: usize, most: usize| -> Result<usize> {
        match names.iter().find_map(|name| env.get(*name).filter(|v| !v.is_empty()).map(|v| (name, v))) {
            Some((name, value)) => match value.trim().parse::<usize>() {
                Ok(n) if (1..=most).contains(&n) => Ok(n),
                _ => bail!("{name}={value:?} must be a whole number from 1 to {most}"),
            },
            None => Ok(default),
        }
    };
    let model_hub_url = first(&["HF_ENDPOINT"])
        .or(config.model_hub_url.clone())
        .unwrap_or_else(|| mempalace_embed::files::DEFAULT_HUB_URL.to_string());
    if !(model_hub_url.starts_with("https://") || model_hub_url.starts_with("http://")) {
        bail!("the model hub URL {model_hub_url:?} (HF_ENDPOINT / model_hub_url) must start with https:// or http://");
    }
    let model_hub_offline = match first(&["HF_HUB_OFFLINE"]).as_deref().map(str::trim) {
        None | Some("0" | "false" | "no" | "off") => false,
        Some("1" | "true" | "yes" | "on") => true,
        Some(other) => bail!("HF_HUB_OFFLINE={other:?} is not understood; use 1 (skip the hub) or 0"),
    };
    let llm_marker = match &database_url {
        Some(_) => home.map(|home| home.join(".mempalace").join("llm.off")),
        None => palace_file(&palace).parent().map(|dir| dir.join("llm.off")),
    };
    let llm = resolve_llm(env, &config.llm, flags, llm_marker.clone())?;
    let memory_dir = first(&["MEMPALACE_MEMORY_DIR"])
        .map(PathBuf::from)
        .or(config.memory_dir.clone())
        .map(|dir| expand_home(&dir, home));
    Ok(Settings {
        home: home.map(Path::to_path_buf),
        memory_dir,
        model_hub_url,
        model_hub_offline,
        palace_file: palace_file(&palace),
        database_url,
        workspace,
        busy_timeout_ms,
        model_dir,
        embedder,
        remote_embed,
        heuristic_high: number(&["MEMPALACE_MEM_HEURISTIC_HIGH", "CRAWBL_MEM_HEURISTIC_HIGH"], 999.0)?,
        heuristic_low: number(&["MEMPALACE_MEM_HEURISTIC_LOW", "CRAWBL_MEM_HEURISTIC_LOW"], 999.0)?,
        kg_limits: (
            whole("MEMPALACE_MAX_ENTITIES", config.max_entities, DEFAULT_MAX_ENTITIES)?,
            whole("MEMPALACE_MAX_TRIPLES", config.max_triples, DEFAULT_MAX_TRIPLES)?,
        ),
        mcp_http_token: env.get("MEMPALACE_MCP_HTTP_TOKEN").cloned().and_then(mempalace_mcp::http::Token::new),
        token: flags
            .token
            .clone()
            .or_else(|| env.get("MEMPALACE_TOKEN").cloned())
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty())
            .map(mempalace_core::secret::Secret::new),
        ingest_pool: mempalace_engine::pool::PoolConfig {
            workers: pool_size(&["MEMPALACE_AUTOINGEST_WORKERS", "CRAWBL_AUTOINGEST_WORKERS"], DEFAULT_WORKERS, 256)?,
            capacity: pool_size(
                &["MEMPALACE_AUTOINGEST_CAPACITY", "CRAWBL_AUTOINGEST_CAPACITY"],
                DEFAULT_CAPACITY,
                1 << 20,
            )?,
        },
        jobs: {
            let defaults = mempalace_engine::work::JobSettings::default();
            let seconds = |name: &str, default: std::time::Duration| -> Result<std::time::Duration> {
                Ok(std::time::Duration::from_secs(pool_size(&[name], default.as_secs() as usize, 7 * 86_400)? as u64))
            };
            let on_off = |name: &str, default: bool| -> Result<bool> {
                env.get(name).map_or(Ok(default), |value| switch(value, name))
            };
            mempalace_engine::work::JobSettings {
                process_batch: pool_size(&["MEMPALACE_PROCESS_BATCH"], defaults.process_batch, 10_000)?,
                llm_batch: pool_size(&["MEMPALACE_LLM_BATCH"], defaults.llm_batch, 256)?,
                process_every: seconds("MEMPALACE_PROCESS_EVERY_S", defaults.process_every)?,
                enrich_every: seconds("MEMPALACE_ENRICH_EVERY_S", defaults.enrich_every)?,
                maintain_every: seconds("MEMPALACE_MAINTAIN_EVERY_S", defaults.maintain_every)?,
                consolidate_every: seconds("MEMPALACE_CONSOLIDATE_EVERY_S", defaults.consolidate_every)?,
                episode_idle: seconds("MEMPALACE_EPISODE_IDLE_S", defaults.episode_idle)?,
                consolidation: on_off("MEMPALACE_CONSOLIDATION", defaults.consolidation)?,
                dreaming: on_off("MEMPALACE_DREAMING", defaults.dreaming)?,
                prune: on_off("MEMPALACE_PRUNE", defaults.prune)?,
                entity_dedup: on_off("MEMPALACE_ENTITY_DEDUP", defaults.entity_dedup)?,
                centroids: on_off("MEMPALACE_CENTROIDS", defaults.centroids)?,
            }
        },
        llm,
        llm_marker,
    })
}

/// Reads an on/off switch.
fn switch(text: &str, origin: &str) -> Result<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "on" | "true" | "1" | "yes" => Ok(true),
        "off" | "false" | "0" | "no" => Ok(false),
        other => bail!("{origin} is {other:?}; use \"on\" or \"off\""),
    }
}

/// Resolves the language model: `--no-llm`, `MEMPALACE_LLM`, `llm` decide
/// whether; the base URL decides whether one is configured at all (flag,
/// `MEMPALACE_LLM_BASE_URL`, `CRAWBL_LLM_BASE_URL`, `llm_base_url`, then
/// `CRAWBL_EMBED_BASE_URL`); the rest fills the client's settings. The seed's
/// `CRAWBL_EMBED_API_KEY` is sent only to a base URL that came from a
/// `CRAWBL_` variable.
fn resolve_llm(
    env: &BTreeMap<String, String>,
    file: &LlmFile,
    flags: &Overrides,
    marker: Option<PathBuf>,
) -> Result<LlmSetting> {
    use mempalace_core::llm::Task;
    use mempalace_llm::{LlmConfig, Prices, Provider, Secret};
    let var = |name: &str| {
        env.get(name).map(|v| v.trim()).filter(|v| !v.is_empty()).map(|v| (name.to_string(), v.to_string()))
    };
    if flags.no_llm {
        return Ok(LlmSetting::Off("--no-llm".into()));
    }
    if let Some((name, value)) = var("MEMPALACE_LLM") {
        if !switch(&value, &name)? {
            return Ok(LlmSetting::Off(format!("{name}={value}")));
        }
    } else if let Some(value) = &file.switch
        && !switch(value, "config.json llm")?
    {
        return Ok(LlmSetting::Off(format!("llm = {value:?} in config.json")));
    }
    let flag = |value: &Option<String>, name: &str| {
        value.as_deref().map(str::trim).filter(|v| !v.is_empty()).map(|v| (name.to_string(), v.to_string()))
    };
    let from_file = |value: &Option<String>, key: &str| flag(value, &format!("{key} in config.json"));
    let base = flag(&flags.llm_base_url, "--llm-base-url")
        .or_else(|| var("MEMPALACE_LLM_BASE_URL"))
        .or_else(|| var("CRAWBL_LLM_BASE_URL"))
        .or_else(|| from_file(&file.base_url, "llm_base_url"))
        .or_else(|| var("CRAWBL_EMBED_BASE_URL"));
    let Some((base_origin, base_url)) = base else { return Ok(LlmSetting::NotConfigured) };
    let from_seed = base_origin.starts_with("CRAWBL_");
    let provider = match flag(&flags.llm_provider, "--llm-provider")
        .or_else(|| var("MEMPALACE_LLM_PROVIDER"))
        .or_else(|| from_file(&file.provider, "llm_provider"))
    {
        Some((origin, name)) => Provider::parse(&name)
            .with_context(|| format!("{origin} is {name:?}; the LLM provider is openai or ollama"))?,
        None => Provider::OpenAi,
    };
    let model = flag(&flags.llm_model, "--llm-model")
        .or_else(|| var("MEMPALACE_LLM_MODEL"))
        .or_else(|| from_file(&file.model, "llm_model"))
        .map(|(_, model)| model)
        .or_else(|| from_seed.then(|| "gpt-4o-mini".to_string()))
        .with_context(|| {
            format!(
                "a language model is configured ({base_origin}) but not which model to ask: set MEMPALACE_LLM_MODEL \
                 or llm_model in config.json (e.g. gpt-4o-mini, or llama3.2 on Ollama), or --no-llm to go without"
            )
        })?;
    let mut config = LlmConfig::new(provider, base_url, model);
    config.api_key = var("MEMPALACE_LLM_API_KEY")
        .or_else(|| var("CRAWBL_LLM_API_KEY"))
        .or_else(|| from_file(&file.api_key, "llm_api_key"))
        .or_else(|| if from_seed { var("CRAWBL_EMBED_API_KEY") } else { None })
        .map(|(_, key)| Secret::new(key));
    for task in Task::ALL {
        let name = format!("MEMPALACE_LLM_{}_MODEL", task.as_str().to_ascii_uppercase());
        let model = var(&name)
            .or_else(|| if *task == Task::Classify { var("CRAWBL_CLASSIFY_MODEL") } else { None })
            .map(|(_, model)| model)
            .or_else(|| file.models.get(task).cloned());
        if let Some(model) = model {
            config.models.insert(*task, model);
        }
    }
    let number = |name: &str, configured: Option<f64>| -> Result<Option<(String, f64)>> {
        match var(name) {
            Some((name, value)) => match value.parse::<f64>() {
                Ok(number) if number.is_finite() && number >= 0.0 => Ok(Some((name, number))),
                _ => bail!("{name}={value:?} is not a number of zero or more"),
            },
            None => Ok(configured.map(|number| {
                (format!("{} in config.json", name.trim_start_matches("MEMPALACE_").to_ascii_lowercase()), number)
            })),
        }
    };
    if let Some((origin, seconds)) = number("MEMPALACE_LLM_TIMEOUT_S", file.timeout_s)? {
        if !(seconds > 0.0 && seconds <= 3600.0) {
            bail!("{origin} is {seconds}; the LLM timeout is a number of seconds above 0 and at most 3600");
        }
        config.timeout = std::time::Duration::from_secs_f64(seconds);
        config.connect_timeout = config.connect_timeout.min(config.timeout);
    }
    if let Some((origin, most)) = number("MEMPALACE_LLM_MAX_CONCURRENCY", file.max_concurrency.map(|n| n as f64))? {
        if !((1.0..=256.0).contains(&most) && most.fract() == 0.0) {
            bail!("{origin} is {most}; calls in flight are a whole number from 1 to 256");
        }
        config.max_concurrency = most as usize;
    }
    let input = number("MEMPALACE_LLM_PRICE_INPUT_PER_MTOK", file.price_input_per_mtok)?;
    let output = number("MEMPALACE_LLM_PRICE_OUTPUT_PER_MTOK", file.price_output_per_mtok)?;
    config.prices = match (input, output) {
        (Some((_, input_per_mtok)), Some((_, output_per_mtok))) => Some(Prices { input_per_mtok, output_per_mtok }),
        (None, None) => None,
        (Some((origin, _)), None) | (None, Some((origin, _))) => bail!(
            "{origin} is set without its pair: set both llm_price_input_per_mtok and llm_price_output_per_mtok \
             (MEMPALACE_LLM_PRICE_INPUT_PER_MTOK, MEMPALACE_LLM_PRICE_OUTPUT_PER_MTOK)"
        ),
    };
    config.budget_usd = number("MEMPALACE_LLM_BUDGET_USD", file.budget_usd)?.map(|(_, budget)| budget);
    config.kill_switch = marker;
    config.check().map_err(|problem| anyhow::anyhow!("{problem} ({base_origin} configured the language model)"))?;
    Ok(LlmSetting::On(Box::new(config)))
}

/// The user's files beside the palace: `hooks` in `config.json` and the
/// hooks' last checkpoint (`hook_state/last_checkpoint`), the Python
/// MemPalace's places for both. The MCP server reaches them through this
/// (its `Host`); the hook command writes the checkpoint.
#[derive(Debug, Clone)]
pub struct UserFiles {
    dir: PathBuf,
}

impl UserFiles {
    /// The files under `~/.mempalace` of `home`.
    pub fn new(home: &Path) -> Self {
        Self { dir: home.join(".mempalace") }
    }

    fn config_path(&self) -> PathBuf {
        self.dir.join("config.json")
    }

    fn checkpoint_path(&self) -> PathBuf {
        self.dir.join("hook_state").join("last_checkpoint")
    }

    fn config_object(&self) -> Result<serde_json::Map<String, Value>, String> {
        let path = self.config_path();
        match std::fs::read_to_string(&path) {
            Ok(text) => match serde_json::from_str::<Value>(&text) {
                Ok(Value::Object(map)) => Ok(map),
                _ => Err(format!("{} is not a JSON object; fix it or move it aside", path.display())),
            },
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(serde_json::Map::new()),
            Err(error) => Err(format!("cannot read {}: {error}", path.display())),
        }
    }

    /// Writes a file whole or not at all (a temporary file renamed over it).
    fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
        let dir = path.parent().ok_or_else(|| format!("{} has no folder", path.display()))?;
        std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let staging = dir.join(format!(".{}.tmp", path.file_name().and_then(|n| n.to_str()).unwrap_or("file")));
        std::fs::write(&staging, text).map_err(|e| format!("cannot write {}: {e}", staging.display()))?;
        std::fs::rename(&staging, path).map_err(|e| format!("cannot replace {}: {e}", path.display()))
    }

    /// Records a checkpoint the hook saved (`{"msgs", "ts"}`), for
    /// `mempalace_memories_filed_away` to report once.
    pub fn record_checkpoint(&self, messages: u64, at: &str) -> Result<(), String> {
        Self::write_atomically(&self.checkpoint_path(), &serde_json::json!({"msgs": messages, "ts": at}).to_string())
    }
}

impl mempalace_mcp::context::Host for UserFiles {
    fn hook_settings(&self) -> Result<mempalace_mcp::context::HookSettings, String> {
        let config = self.config_object()?;
        let hooks = config.get("hooks").and_then(Value::as_object);
        let flag =
            |key: &str, default: bool| hooks.and_then(|h| h.get(key)).and_then(Value::as_bool).unwrap_or(default);
        Ok(mempalace_mcp::context::HookSettings {
            silent_save: flag("silent_save", true),
            desktop_toast: flag("desktop_toast", false),
        })
    }

    fn set_hook_settings(&self, settings: mempalace_mcp::context::HookSettings) -> Result<(), String> {
        let mut config = self.config_object()?;
        let mut hooks = config.get("hooks").and_then(Value::as_object).cloned().unwrap_or_default();
        hooks.insert("silent_save".into(), Value::Bool(settings.silent_save));
        hooks.insert("desktop_toast".into(), Value::Bool(settings.desktop_toast));
        config.insert("hooks".into(), Value::Object(hooks));
        let text = serde_json::to_string_pretty(&Value::Object(config)).map_err(|e| e.to_string())?;
        Self::write_atomically(&self.config_path(), &(text + "\n"))
    }

    fn take_last_checkpoint(&self) -> Result<Option<mempalace_mcp::context::HookCheckpoint>, String> {
        let path = self.checkpoint_path();
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error.to_string()),
        };
        // Reported once: forgotten whatever it held (as MemPalace does).
        let _ = std::fs::remove_file(&path);
        let value: Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        Ok(Some(mempalace_mcp::context::HookCheckpoint {
            messages: value.get("msgs").and_then(Value::as_u64).unwrap_or(0),
            timestamp: value.get("ts").and_then(Value::as_str).map(str::to_string),
        }))
    }
}

#[cfg(test)]
mod user_file_tests {
    use super::*;
    use mempalace_mcp::context::{HookSettings, Host};

    #[test]
    fn hook_settings_round_trip_and_keep_the_rest_of_the_config() {
        let home = tempfile::tempdir().unwrap();
        let files = UserFiles::new(home.path());
        assert_eq!(files.hook_settings().unwrap(), HookSettings::default());
        std::fs::create_dir_all(home.path().join(".mempalace")).unwrap();
        std::fs::write(home.path().join(".mempalace/config.json"), r#"{"palace_path": "~/p", "hooks": {"x": 1}}"#)
            .unwrap();
        files.set_hook_settings(HookSettings { silent_save: false, desktop_toast: true }).unwrap();
        assert_eq!(files.hook_settings().unwrap(), HookSettings { silent_save: false, desktop_toast: true });
        let text = std::fs::read_to_string(home.path().join(".mempalace/config.json")).unwrap();
        let config = ConfigFile::parse(&text, Path::new("config.json")).unwrap();
        assert_eq!(config.palace_path, Some(PathBuf::from("~/p")), "other keys stay");
        assert!(text.contains("\"x\": 1"), "{text}");

        assert_eq!(files.take_last_checkpoint().unwrap(), None);
        files.record_checkpoint(7, "2026-11-26T17:00:00Z").unwrap();
        let checkpoint = files.take_last_checkpoint().unwrap().unwrap();
        assert_eq!((checkpoint.messages, checkpoint.timestamp.as_deref()), (7, Some("2026-11-26T17:00:00Z")));
        assert_eq!(files.take_last_checkpoint().unwrap(), None, "reported once");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn precedence_is_flag_then_env_then_config_then_default() {
        let home = tempfile::tempdir().unwrap();
        let dot = home.path().join(".mempalace");
        std::fs::create_dir_all(&dot).unwrap();
        let default = resolve(&env(&[]), Some(home.path()), &Overrides::default()).unwrap();
        assert_eq!(default.palace_file, dot.join("palace").join("palace.db"));
        assert_eq!(default.workspace.as_str(), "default");

        std::fs::write(dot.join("config.json"), r#"{"palace_path": "~/from-config", "collection_name": "x"}"#).unwrap();
        let from_config = resolve(&env(&[]), Some(home.path()), &Overrides::default()).unwrap();
        assert_eq!(from_config.palace_file, home.path().join("from-config").join("palace.db"));

        let from_env =
            resolve(&env(&[("MEMPALACE_PALACE_PATH", "/tmp/env-palace")]), Some(home.path()), &Overrides::default())
                .unwrap();
        assert_eq!(from_env.palace_file, PathBuf::from("/tmp/env-palace/palace.db"));

        let flags = Overrides {
            palace: Some(PathBuf::from("/tmp/flag.db")),
            workspace: Some("team-a".into()),
            ..Overrides::default()
        };
        let from_flag = resolve(&env(&[("MEMPALACE_PALACE_PATH", "/tmp/env")]), Some(home.path()), &flags).unwrap();
        assert_eq!(from_flag.palace_file, PathBuf::from("/tmp/flag.db"));
        assert_eq!(from_flag.workspace.as_str(), "team-a");
        assert_eq!(from_flag.database_url, None);
    }

    #[test]
    fn the_store_is_postgres_from_flag_env_or_config_and_a_palace_flag_wins_over_the_env() {
        let home = tempfile::tempdir().unwrap();
        let dot = home.path().join(".mempalace");
        std::fs::create_dir_all(&dot).unwrap();
        let url = "postgres://team:secret@db.internal:5432/palace";
        let flag = Overrides { store: Some(url.into()), ..Overrides::default() };
        let from_flag = resolve(&env(&[]), Some(home.path()), &flag).unwrap();
        assert_eq!(from_flag.database_url.as_deref(), Some(url));
        assert_eq!(from_flag.location(), "postgres://team:***@db.internal:5432/palace");
        let from_env = resolve(&env(&[("MEMPALACE_DATABASE_URL", url)]), Some(home.path()), &Overrides::default());
        assert_eq!(from_env.unwrap().database_url.as_deref(), Some(url));
        let file_flag = Overrides { palace: Some(PathBuf::from("/tmp/p")), ..Overrides::default() };
        let file = resolve(&env(&[("MEMPALACE_DATABASE_URL", url)]), Some(home.path()), &file_flag).unwrap();
        assert_eq!((file.database_url, file.palace_file), (None, PathBuf::from("/tmp/p/palace.db")));
        let store_path = Overrides { store: Some("/tmp/other.db".into()), ..Overrides::default() };
        let file = resolve(&env(&[("MEMPALACE_DATABASE_URL", url)]), Some(home.path()), &store_path).unwrap();
        assert_eq!((file.database_url, file.palace_file), (None, PathBuf::from("/tmp/other.db")));
        std::fs::write(dot.join("config.json"), format!(r#"{{"database_url": "{url}"}}"#)).unwrap();
        let from_config = resolve(&env(&[]), Some(home.path()), &Overrides::default()).unwrap();
        assert_eq!(from_config.database_url.as_deref(), Some(url));
        let err = resolve(&env(&[("MEMPALACE_DATABASE_URL", "mysql://x")]), Some(home.path()), &Overrides::default());
        assert!(err.unwrap_err().to_string().contains("postgres://"));
    }

    #[test]
    fn unknown_or_mistyped_config_keys_stop_startup_with_their_name() {
        let origin = Path::new("/home/x/.mempalace/config.json");
        let err = ConfigFile::parse(r#"{"palace_pth": "/x"}"#, origin).unwrap_err().to_string();
        assert!(err.contains("palace_pth") && err.contains("palace_path"), "{err}");
        let err = ConfigFile::parse(r#"{"busy_timeout_ms": "soon"}"#, origin).unwrap_err().to_string();
        assert!(err.contains("busy_timeout_ms") && err.contains("milliseconds"), "{err}");
        assert!(ConfigFile::parse("[1]", origin).is_err());
        assert!(ConfigFile::parse("{not json", origin).is_err());
    }

    #[test]
    fn entity_languages_are_saved_beside_the_other_keys_and_known_names_read_both_shapes() {
        let home = tempfile::tempdir().unwrap();
        let dot = home.path().join(".mempalace");
        std::fs::create_dir_all(&dot).unwrap();
        std::fs::write(dot.join("config.json"), r#"{"palace_path": "/p"}"#).unwrap();
        save_entity_languages(Some(home.path()), &["en".into(), "pt-br".into()]).unwrap();
        let config: Value = serde_json::from_str(&std::fs::read_to_string(dot.join("config.json")).unwrap()).unwrap();
        assert_eq!(config["entity_languages"], serde_json::json!(["en", "pt-br"]));
        assert_eq!(config["palace_path"], "/p");
        assert!(ConfigFile::parse(&config.to_string(), &dot.join("config.json")).is_ok(), "still a valid config");

        assert_eq!(known_names(Some(home.path())).unwrap(), mempalace_core::megafile::KnownNames::default());
        std::fs::write(dot.join("known_names.json"), r#"["Alice"]"#).unwrap();
        assert_eq!(known_names(Some(home.path())).unwrap().names, ["Alice"]);
        std::fs::write(dot.join("known_names.json"), r#"{"names": ["Bob"], "username_map": {"jd": "John"}}"#).unwrap();
        let known = known_names(Some(home.path())).unwrap();
        assert_eq!((known.names, known.username_map["jd"].as_str()), (vec!["Bob".to_string()], "John"));
        std::fs::write(dot.join("known_names.json"), "7").unwrap();
        assert!(known_names(Some(home.path())).is_err());
    }

    #[test]
    fn db_named_paths_are_files_and_others_are_directories() {
        assert_eq!(palace_file(Path::new("/nowhere/p.db")), PathBuf::from("/nowhere/p.db"));
        assert_eq!(palace_file(Path::new("/nowhere/palace")), PathBuf::from("/nowhere/palace/palace.db"));
    }
}

#[cfg(test)]
mod embedder_tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_embedder_defaults_to_minilm_and_follows_a_configured_endpoint() {
        let home = tempfile::tempdir().unwrap();
        let plain = resolve(&env(&[]), Some(home.path()), &Overrides::default()).unwrap();
        assert_eq!(plain.embedder, EmbedderKind::MiniLm);
        assert_eq!(plain.model_dir, home.path().join(".local/share/mempalace/models"));
        assert!(plain.remote_embed.is_none());

        let crawbl = env(&[("CRAWBL_EMBED_BASE_URL", "https://api.example/v1"), ("CRAWBL_EMBED_API_KEY", "sk-x")]);
        let remote = resolve(&crawbl, Some(home.path()), &Overrides::default()).unwrap();
        assert_eq!(remote.embedder, EmbedderKind::OpenAi);
        let endpoint = remote.remote_embed.unwrap();
        assert_eq!(endpoint.model, "text-embedding-3-small");
        assert!(!format!("{endpoint:?}").contains("sk-x"), "the key never reaches Debug output");

        let flags =
            Overrides { embedder: Some(EmbedderKind::Static), model_dir: Some("/m".into()), ..Overrides::default() };
        let chosen = resolve(&crawbl, Some(home.path()), &flags).unwrap();
        assert_eq!((chosen.embedder, chosen.model_dir), (EmbedderKind::Static, PathBuf::from("/m")));

        let err = resolve(&env(&[("MEMPALACE_EMBEDDER", "bert")]), Some(home.path()), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("bert") && err.contains("minilm, minilm-f32, minilm-int8, mpnet, static"), "{err}");
        let err = resolve(&env(&[("MEMPALACE_EMBEDDER", "ollama")]), Some(home.path()), &Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("MEMPALACE_EMBED_BASE_URL"), "{err}");
    }
}

#[cfg(test)]
mod llm_tests {
    use super::*;
    use mempalace_core::llm::Task;
    use mempalace_llm::Provider;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn llm(pairs: &[(&str, &str)], home: &Path, flags: &Overrides) -> Result<LlmSetting> {
        resolve(&env(pairs), Some(home), flags).map(|settings| settings.llm)
    }

    fn on(setting: LlmSetting) -> mempalace_llm::LlmConfig {
        match setting {
            LlmSetting::On(config) => *config,
            other => panic!("expected a configured model, got {other:?}"),
        }
    }

    #[test]
    fn no_base_url_means_no_model_and_the_marker_sits_beside_the_palace() {
        let home = tempfile::tempdir().unwrap();
        let settings = resolve(&env(&[]), Some(home.path()), &Overrides::default()).unwrap();
        assert!(matches!(settings.llm, LlmSetting::NotConfigured));
        assert_eq!(settings.llm_marker, Some(home.path().join(".mempalace/palace/llm.off")));
        let flags = Overrides { store: Some("postgres://u:p@h/db".into()), ..Overrides::default() };
        let postgres = resolve(&env(&[]), Some(home.path()), &flags).unwrap();
        assert_eq!(postgres.llm_marker, Some(home.path().join(".mempalace/llm.off")));
    }

    #[test]
    fn our_settings_configure_provider_models_limits_and_prices() {
        let home = tempfile::tempdir().unwrap();
        let config = on(llm(
            &[
                ("MEMPALACE_LLM_BASE_URL", "http://localhost:11434"),
                ("MEMPALACE_LLM_PROVIDER", "ollama"),
                ("MEMPALACE_LLM_MODEL", "llama3.2"),
                ("MEMPALACE_LLM_EXTRACT_MODEL", "qwen2.5:14b"),
                ("MEMPALACE_LLM_API_KEY", "sk-ours"),
                ("MEMPALACE_LLM_TIMEOUT_S", "12.5"),
                ("MEMPALACE_LLM_PRICE_INPUT_PER_MTOK", "0.15"),
                ("MEMPALACE_LLM_PRICE_OUTPUT_PER_MTOK", "0.6"),
                ("MEMPALACE_LLM_BUDGET_USD", "2"),
            ],
            home.path(),
            &Overrides::default(),
        )
        .unwrap());
        assert_eq!(config.provider, Provider::Ollama);
        assert_eq!((config.model_for(Task::Classify), config.model_for(Task::Extract)), ("llama3.2", "qwen2.5:14b"));
        assert_eq!(config.api_key.as_ref().map(|k| k.expose()), Some("sk-ours"));
        assert_eq!(config.timeout, std::time::Duration::from_millis(12_500));
        assert_eq!(config.budget_usd, Some(2.0));
        assert!(config.prices.is_some());
        assert_eq!(config.kill_switch, Some(home.path().join(".mempalace/palace/llm.off")));
        assert!(!format!("{config:?}").contains("sk-ours"));

        let dot = home.path().join(".mempalace");
        std::fs::create_dir_all(&dot).unwrap();
        std::fs::write(
            dot.join("config.json"),
            r#"{"llm_base_url": "https://api.example/v1", "llm_model": "m-small", "llm_models": {"extract": "m-big"},
                "llm_max_concurrency": 8, "llm_api_key": "sk-file"}"#,
        )
        .unwrap();
        let config = on(llm(&[("CRAWBL_EMBED_API_KEY", "sk-embed")], home.path(), &Overrides::default()).unwrap());
        assert_eq!((config.base_url.as_str(), config.model.as_str()), ("https://api.example/v1", "m-small"));
        assert_eq!((config.model_for(Task::Extract), config.max_concurrency), ("m-big", 8));
        assert_eq!(config.api_key.as_ref().map(|k| k.expose()), Some("sk-file"));

        let flags = Overrides {
            llm_base_url: Some("http://flag:1".into()),
            llm_model: Some("flag-model".into()),
            llm_provider: Some("openai".into()),
            ..Overrides::default()
        };
        let config = on(llm(&[("MEMPALACE_LLM_MODEL", "env-model")], home.path(), &flags).unwrap());
        assert_eq!((config.base_url.as_str(), config.model.as_str()), ("http://flag:1", "flag-model"));
    }

    #[test]
    fn the_seeds_variables_configure_gpt_4o_mini_and_keep_the_embed_key_to_their_own_endpoint() {
        let home = tempfile::tempdir().unwrap();
        let seed = [("CRAWBL_EMBED_BASE_URL", "https://api.openai.com/v1"), ("CRAWBL_EMBED_API_KEY", "sk-seed")];
        let config = on(llm(&seed, home.path(), &Overrides::default()).unwrap());
        assert_eq!((config.provider, config.model_for(Task::Classify)), (Provider::OpenAi, "gpt-4o-mini"));
        assert_eq!(config.api_key.as_ref().map(|k| k.expose()), Some("sk-seed"));

        let seed = [
            ("CRAWBL_LLM_BASE_URL", "https://llm.example/v1"),
            ("CRAWBL_EMBED_BASE_URL", "https://embed.example/v1"),
            ("CRAWBL_LLM_API_KEY", "sk-llm"),
            ("CRAWBL_CLASSIFY_MODEL", "gpt-4.1-nano"),
        ];
        let config = on(llm(&seed, home.path(), &Overrides::default()).unwrap());
        assert_eq!(config.base_url, "https://llm.example/v1");
        assert_eq!(
            (config.model_for(Task::Classify), config.model_for(Task::Extract)),
            ("gpt-4.1-nano", "gpt-4o-mini")
        );
        assert_eq!(config.api_key.as_ref().map(|k| k.expose()), Some("sk-llm"));

        // Our own base URL never gets the seed's embedding key.
        let ours = [
            ("MEMPALACE_LLM_BASE_URL", "http://local:8000/v1"),
            ("MEMPALACE_LLM_MODEL", "m"),
            ("CRAWBL_EMBED_API_KEY", "sk-seed"),
        ];
        assert!(on(llm(&ours, home.path(), &Overrides::default()).unwrap()).api_key.is_none());
    }

    #[test]
    fn the_model_is_switched_off_by_setting_env_or_flag() {
        let home = tempfile::tempdir().unwrap();
        let configured = [("MEMPALACE_LLM_BASE_URL", "http://x:1"), ("MEMPALACE_LLM_MODEL", "m")];
        let mut off = configured.to_vec();
        off.push(("MEMPALACE_LLM", "off"));
        let LlmSetting::Off(reason) = llm(&off, home.path(), &Overrides::default()).unwrap() else { panic!() };
        assert_eq!(reason, "MEMPALACE_LLM=off");
        let flags = Overrides { no_llm: true, ..Overrides::default() };
        assert!(matches!(llm(&configured, home.path(), &flags).unwrap(), LlmSetting::Off(_)));
        let dot = home.path().join(".mempalace");
        std::fs::create_dir_all(&dot).unwrap();
        std::fs::write(dot.join("config.json"), r#"{"llm": false}"#).unwrap();
        assert!(matches!(llm(&configured, home.path(), &Overrides::default()).unwrap(), LlmSetting::Off(_)));
        let mut on_again = configured.to_vec();
        on_again.push(("MEMPALACE_LLM", "on"));
        assert!(matches!(llm(&on_again, home.path(), &Overrides::default()).unwrap(), LlmSetting::On(_)));
    }

    #[test]
    fn malformed_settings_stop_startup_saying_what_to_fix() {
        let home = tempfile::tempdir().unwrap();
        let flags = Overrides::default();
        let error = |pairs: &[(&str, &str)]| llm(pairs, home.path(), &flags).unwrap_err().to_string();
        let base = ("MEMPALACE_LLM_BASE_URL", "http://x:1/v1");
        let model = ("MEMPALACE_LLM_MODEL", "m");
        assert!(error(&[base]).contains("MEMPALACE_LLM_MODEL"));
        assert!(error(&[("MEMPALACE_LLM", "maybe")]).contains("\"on\" or \"off\""));
        assert!(error(&[base, model, ("MEMPALACE_LLM_PROVIDER", "claude")]).contains("openai or ollama"));
        assert!(error(&[base, model, ("MEMPALACE_LLM_TIMEOUT_S", "soon")]).contains("MEMPALACE_LLM_TIMEOUT_S"));
        assert!(error(&[base, model, ("MEMPALACE_LLM_TIMEOUT_S", "0")]).contains("above 0"));
        assert!(error(&[base, model, ("MEMPALACE_LLM_MAX_CONCURRENCY", "0")]).contains("1 to 256"));
        assert!(error(&[base, model, ("MEMPALACE_LLM_PRICE_INPUT_PER_MTOK", "1")]).contains("without its pair"));
        assert!(error(&[base, model, ("MEMPALACE_LLM_BUDGET_USD", "5")]).contains("prices"));
        assert!(error(&[("MEMPALACE_LLM_BASE_URL", "localhost:1"), model]).contains("http://"));
        let origin = Path::new("config.json");
        let bad = ConfigFile::parse(r#"{"llm_models": {"summarise": "m"}}"#, origin).unwrap_err().to_string();
        assert!(bad.contains("llm_models") && bad.contains("classify"), "{bad}");
        assert!(ConfigFile::parse(r#"{"llm_timeout_s": "60"}"#, origin).is_err());
    }
}
