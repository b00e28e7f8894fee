//! The fuzz targets: one per kind of user-supplied data, each calling the
//! same code the product runs on it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mempalace_core::WorkspaceId;
use mempalace_core::time::{DayEdge, parse_timestamp};
use mempalace_engine::Palace;
use mempalace_mcp::server::RequestScope;
use mempalace_mcp::{Backend, McpServer, Profile};
use mempalace_mine::Format;
use mempalace_sqlite::{SqliteOptions, SqliteStore};
use serde_json::{Map, Value, json};

use crate::Target;

/// Every target, in run order.
pub fn all() -> Vec<Box<dyn Target>> {
    vec![
        Box::new(Transcripts),
        Box::new(Bundles),
        Box::new(ProjectYaml),
        Box::new(ConfigJson),
        Box::new(ExportLines),
        Box::new(Texts),
        Box::new(OpencodeDb::new()),
        Box::new(PythonPalace::new()),
        Box::new(McpArguments::new()),
        Box::new(RestRequests::new()),
    ]
}

fn fixture(relative: &str) -> PathBuf {
    mempalace_testdata::fixture(relative)
}

/// Every file under `dir`, recursively.
fn files(dir: &Path, out: &mut Vec<Vec<u8>>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            files(&path, out);
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push(bytes);
        }
    }
}

fn corpus(name: &str) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus").join(name), &mut out);
    out
}

const FORMATS: [Format; 7] = [
    Format::ClaudeCode,
    Format::Codex,
    Format::Gemini,
    Format::ChatGpt,
    Format::ClaudeAi,
    Format::GeminiApps,
    Format::PlainText,
];

/// Transcript files of every format (and Slack day files), parsed as each
/// format whatever their detection says, cut into exchange units.
struct Transcripts;

impl Target for Transcripts {
    fn name(&self) -> &'static str {
        "transcripts"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let mut seeds = Vec::new();
        files(&fixture("transcripts"), &mut seeds);
        seeds.extend(corpus("transcripts"));
        seeds
    }

    fn run(&mut self, input: &[u8]) {
        let text = String::from_utf8_lossy(input);
        let _ = mempalace_mine::detect(&text);
        let _ = mempalace_mine::detect_plain_text(&text);
        for format in FORMATS {
            let parsed = mempalace_mine::parse(format, &text, "fuzz");
            for conversation in parsed.conversations.iter().take(4) {
                let _ = mempalace_mine::header(conversation);
                let _ = mempalace_mine::units(conversation);
            }
            let _ = mempalace_mine::line_per_record(format, &text);
        }
        let users = mempalace_mine::slack::users(&text);
        if mempalace_mine::slack::is_day_file(&text) {
            let _ = mempalace_mine::slack::channel("general", &[("2025-01-01".into(), text.to_string())], &users);
        }
    }
}

/// Chat-export bundles (Claude.ai, Google Takeout): the JSON documents a
/// bundle holds.
struct Bundles;

impl Target for Bundles {
    fn name(&self) -> &'static str {
        "bundles"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let mut seeds = Vec::new();
        files(&fixture("bundles"), &mut seeds);
        seeds.retain(|s| s.first().is_some_and(|b| matches!(b, b'{' | b'[')));
        seeds
    }

    fn run(&mut self, input: &[u8]) {
        let Ok(document) = serde_json::from_slice::<Value>(input) else { return };
        for name in ["conversations.json", "projects.json", "memories.json", "users.json", "MyActivity.json"] {
            let _ = mempalace_mine::bundle::companion(name, &document);
        }
        let _ = mempalace_mine::bundle::claude_projects(&document);
        let _ = mempalace_mine::bundle::claude_memories(&document);
    }
}

/// `mempalace.yaml`.
struct ProjectYaml;

impl Target for ProjectYaml {
    fn name(&self) -> &'static str {
        "project-yaml"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        corpus("project-yaml")
    }

    fn run(&mut self, input: &[u8]) {
        if let Ok(text) = std::str::from_utf8(input) {
            let _ = mempalace_core::project::ProjectConfig::parse(text);
        }
    }
}

/// `~/.mempalace/config.json`, read by every command at startup; an error's
/// message is rendered too (it quotes the key and the value).
struct ConfigJson;

impl Target for ConfigJson {
    fn name(&self) -> &'static str {
        "config-json"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let mut seeds = corpus("config-json");
        files(&fixture("mempalace-python/dot-mempalace"), &mut seeds);
        seeds.retain(|s| s.first() == Some(&b'{'));
        seeds
    }

    fn run(&mut self, input: &[u8]) {
        let Ok(text) = std::str::from_utf8(input) else { return };
        match mempalace_core::config::ConfigFile::parse(text, Path::new("config.json")) {
            Ok(config) => {
                let _ = format!("{config:?}");
            }
            Err(error) => {
                let _ = error.to_string();
            }
        }
    }
}

/// Lines of the JSONL export (`import`, `POST /api/v1/import`).
struct ExportLines;

impl Target for ExportLines {
    fn name(&self) -> &'static str {
        "export-lines"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let records = mempalace_store::conformance::sample_records(&WorkspaceId::default_workspace());
        records.iter().map(|r| serde_json::to_vec(&mempalace_web::wire::to_line(r)).unwrap_or_default()).collect()
    }

    fn run(&mut self, input: &[u8]) {
        if let Ok(line) = serde_json::from_slice::<mempalace_web::wire::Line>(input) {
            let _ = mempalace_web::wire::from_line(&line);
        }
    }
}

/// Free text users type or paste: search queries (with pasted prompts),
/// the lexical index's text, chunking, memory-file paragraphs, dates.
struct Texts;

impl Target for Texts {
    fn name(&self) -> &'static str {
        "texts"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let mut seeds = corpus("texts");
        files(&fixture("transcripts/text"), &mut seeds);
        seeds
    }

    fn run(&mut self, input: &[u8]) {
        let text = String::from_utf8_lossy(input);
        let _ = mempalace_core::query::sanitize_query(&text);
        let _ = mempalace_core::lexical::query_terms(&text);
        let _ = mempalace_core::lexical::index_text(&text);
        let _ = mempalace_core::chunk::chunk_text(&text);
        let _ = mempalace_core::chunk::chunk_lines(&text);
        let paragraphs = mempalace_core::paragraph::paragraphs(&text);
        if let Some(first) = paragraphs.first() {
            let _ = mempalace_core::paragraph::replace_paragraph(&text, first, "replaced");
            let _ = mempalace_core::paragraph::remove_paragraph(&text, first);
        }
        let _ = mempalace_core::paragraph::append_paragraph(&text, &text);
        let _ = parse_timestamp(&text, "fuzz", DayEdge::Start);
        let _ = mempalace_core::megafile::split("fuzz", &text, &mempalace_core::megafile::KnownNames::default());
    }
}

/// opencode's SQLite database, its bytes mutated.
struct OpencodeDb {
    dir: tempfile::TempDir,
    seed: Vec<u8>,
}

impl OpencodeDb {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let seed = std::fs::read(mempalace_testdata::opencode_db(dir.path())).expect("read the built opencode.db");
        Self { dir, seed }
    }
}

impl Target for OpencodeDb {
    fn name(&self) -> &'static str {
        "opencode-db"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        vec![self.seed.clone()]
    }

    fn run(&mut self, input: &[u8]) {
        let path = self.dir.path().join("fuzz.db");
        let _ = std::fs::remove_file(self.dir.path().join("fuzz.db-wal"));
        let _ = std::fs::remove_file(self.dir.path().join("fuzz.db-shm"));
        if std::fs::write(&path, input).is_ok() {
            let selection = mempalace_mine::opencode::Selection { min_messages: 1, since_ms: None, session: None };
            let _ = mempalace_mine::opencode::read_db(&path, &selection);
        }
    }
}

/// A Python MemPalace home folder: one of its files replaced by the input
/// (which file: the input's length modulo the list), then read as
/// `migrate-from-python` reads it.
struct PythonPalace {
    _dir: tempfile::TempDir,
    home: PathBuf,
    originals: Vec<(PathBuf, Vec<u8>)>,
}

const PYTHON_FILES: [&str; 5] =
    ["config.json", "tunnels.json", "hallways.json", "identity.txt", "knowledge_graph.sqlite3"];

impl PythonPalace {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let home = mempalace_testdata::python_palace(dir.path(), mempalace_testdata::VectorIndex::Present);
        let originals = PYTHON_FILES
            .iter()
            .filter_map(|name| std::fs::read(home.join(name)).ok().map(|bytes| (home.join(name), bytes)))
            .collect();
        Self { _dir: dir, home, originals }
    }
}

impl Target for PythonPalace {
    fn name(&self) -> &'static str {
        "python-palace"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        self.originals.iter().map(|(_, bytes)| bytes.clone()).collect()
    }

    fn run(&mut self, input: &[u8]) {
        if self.originals.is_empty() {
            return;
        }
        let (path, original) = &self.originals[input.len() % self.originals.len()];
        if std::fs::write(path, input).is_ok() {
            let _ = mempalace_migrate::python::read(&self.home);
            let _ = std::fs::write(path, original);
        }
    }
}

/// A palace in a temporary folder with a server over it, for the targets
/// that call the product's surfaces.
fn backend() -> (tempfile::TempDir, Backend) {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let store =
        SqliteStore::open(&dir.path().join("palace.db"), SqliteOptions { create: true, ..SqliteOptions::default() })
            .expect("create a palace");
    let palace = Palace::new(Arc::new(store), WorkspaceId::default_workspace());
    (dir, Backend::new(palace, "fuzz".into(), None))
}

/// Tools the harness leaves out: they walk folders named in their
/// arguments (mine, sync) or wait on purpose (event_wait).
const SKIPPED_TOOLS: &[&str] = &["mempalace_mine", "mempalace_sync", "mempalace_event_wait"];

/// An example value of a JSON schema's type.
fn example(schema: &Value) -> Value {
    let kind = schema.get("type").cloned().unwrap_or(Value::Null);
    let kind = match &kind {
        Value::Array(kinds) => kinds.iter().find(|k| *k != "null").cloned().unwrap_or(Value::Null),
        other => other.clone(),
    };
    match kind.as_str() {
        Some("integer") => json!(3),
        Some("number") => json!(0.5),
        Some("boolean") => json!(false),
        Some("array") => json!(["fuzz"]),
        Some("object") => json!({}),
        _ => json!("fuzz"),
    }
}

/// MCP tool arguments: `{"tool": NAME, "arguments": {…}}`, each tool's
/// arguments mutated, through the same call path as stdio and HTTP.
struct McpArguments {
    _dir: tempfile::TempDir,
    server: McpServer,
    runtime: tokio::runtime::Runtime,
}

impl McpArguments {
    fn new() -> Self {
        let (dir, backend) = backend();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        Self { _dir: dir, server: McpServer::new(backend, Profile::All), runtime }
    }
}

impl Target for McpArguments {
    fn name(&self) -> &'static str {
        "mcp-arguments"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        use rmcp::ServerHandler as _;
        let mut seeds = Vec::new();
        for name in self.server.tool_names() {
            if SKIPPED_TOOLS.contains(&name) {
                continue;
            }
            let Some(tool) = self.server.get_tool(name) else { continue };
            let properties =
                tool.input_schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default();
            let arguments: Map<String, Value> = properties.iter().map(|(k, v)| (k.clone(), example(v))).collect();
            seeds.push(serde_json::to_vec(&json!({"tool": name, "arguments": arguments})).unwrap_or_default());
        }
        seeds
    }

    fn run(&mut self, input: &[u8]) {
        let Ok(Value::Object(call)) = serde_json::from_slice::<Value>(input) else { return };
        let Some(name) = call.get("tool").and_then(Value::as_str) else { return };
        if SKIPPED_TOOLS.contains(&name) {
            return;
        }
        let arguments = call.get("arguments").and_then(Value::as_object).cloned();
        let outcome = self.runtime.block_on(self.server.call(name, arguments));
        if let Err(error) = outcome
            && error.code == rmcp::model::ErrorCode::INTERNAL_ERROR
        {
            panic!("{name}: internal error: {}", error.message);
        }
    }
}

/// REST requests: `METHOD PATH\n` then the body, through the router with
/// its browser checks and every handler.
struct RestRequests {
    _dir: tempfile::TempDir,
    router: axum::Router,
    runtime: tokio::runtime::Runtime,
}

impl RestRequests {
    fn new() -> Self {
        let (dir, backend) = backend();
        let policy = mempalace_web::BrowserPolicy { hosts: vec!["127.0.0.1".into()], origins: Vec::new() };
        let scope = RequestScope { caller: mempalace_core::tenancy::Caller::Local, workspace: None };
        let router = mempalace_web::router(backend, policy).layer(axum::Extension(scope));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("a tokio runtime");
        Self { _dir: dir, router, runtime }
    }
}

impl Target for RestRequests {
    fn name(&self) -> &'static str {
        "rest-requests"
    }

    fn seeds(&self) -> Vec<Vec<u8>> {
        let drawer = "drawer_w_r_000000000000000000000000";
        [
            "GET /api/v1/health\n".to_string(),
            "GET /api/v1/taxonomy\n".into(),
            "GET /api/v1/drawers?wing=w&room=r&offset=0&limit=5&status=hidden\n".into(),
            "POST /api/v1/drawers\n{\"wing\":\"w\",\"room\":\"r\",\"content\":\"a note\",\"memory_type\":\"fact\",\"importance\":2,\"tags\":[\"t\"]}".into(),
            format!("GET /api/v1/drawers/{drawer}\n"),
            format!("PATCH /api/v1/drawers/{drawer}\n{{\"content\":\"edited\",\"wing\":\"w2\",\"confidence\":0.5}}"),
            format!("DELETE /api/v1/drawers/{drawer}?reason=x&hard=false\n"),
            format!("POST /api/v1/drawers/{drawer}/restore\n"),
            "GET /api/v1/search?q=a%20note&limit=3&fusion=rrf&wing=w\n".into(),
            "GET /api/v1/kg/entities/Orion?as_of=2026-01-01&direction=both\n".into(),
            "GET /api/v1/kg/timeline?entity=Orion\n".into(),
            "POST /api/v1/kg/facts\n{\"subject\":\"A\",\"predicate\":\"uses\",\"object\":\"B\",\"valid_from\":\"2025-01-01\"}".into(),
            "POST /api/v1/kg/invalidate\n{\"subject\":\"A\",\"predicate\":\"uses\",\"object\":\"B\",\"ended\":\"2025-02-01\"}".into(),
            "GET /api/v1/diaries/claude?last=3\n".into(),
            "GET /api/v1/episodes?q=x&limit=2\n".into(),
            "GET /api/v1/conflicts\n".into(),
            "POST /api/v1/import\n{\"type\":\"header\",\"format\":\"mempalace-rs export\",\"version\":3,\"generator\":\"x\",\"schema_version\":11,\"exported_at\":\"2025-01-01T00:00:00Z\"}\n".into(),
        ]
        .into_iter()
        .map(String::into_bytes)
        .collect()
    }

    fn run(&mut self, input: &[u8]) {
        use tower::ServiceExt as _;
        let split = input.iter().position(|b| *b == b'\n').unwrap_or(input.len());
        let head = String::from_utf8_lossy(&input[..split]).to_string();
        let body = input.get(split + 1..).unwrap_or_default().to_vec();
        let (method, path) = head.split_once(' ').unwrap_or(("GET", head.as_str()));
        let Ok(method) = axum::http::Method::from_bytes(method.as_bytes()) else { return };
        let content_type = if path.ends_with("/import") { "application/x-ndjson" } else { "application/json" };
        let Ok(request) = axum::http::Request::builder()
            .method(method)
            .uri(path)
            .header("host", "127.0.0.1")
            .header("content-type", content_type)
            .header("x-requested-with", "mempalace")
            .body(axum::body::Body::from(body))
        else {
            return;
        };
        let router = self.router.clone();
        let response = self.runtime.block_on(router.oneshot(request));
        let Ok(response) = response;
        if response.status() == axum::http::StatusCode::INTERNAL_SERVER_ERROR {
            let bytes = self.runtime.block_on(axum::body::to_bytes(response.into_body(), 1 << 20)).unwrap_or_default();
            panic!("{head}: 500: {}", String::from_utf8_lossy(&bytes));
        }
    }
}
