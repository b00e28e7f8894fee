//! The server in process, on a real SQLite palace and the real static
//! embedding model: cold start (tools that need no vectors never wait for
//! the model; a search that arrives first waits for it), a model that fails
//! to load, and parameter errors that never take the server down.

// Tests take their setup (model directory, shared data, servers) from the
// environment that scripts/test.sh prepares.
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use mempalace_core::WorkspaceId;
use mempalace_embed::Embedder;
use mempalace_engine::Palace;
use mempalace_mcp::{Backend, EmbedderLoader, McpServer, Profile};
use mempalace_sqlite::{SqliteOptions, SqliteStore};
use serde_json::{Map, Value, json};

fn model_dir() -> PathBuf {
    PathBuf::from(
        std::env::var_os("MEMPALACE_MODEL_DIR")
            .expect("MEMPALACE_MODEL_DIR is not set; run ./scripts/test.sh (it fetches and distills the models)"),
    )
}

fn palace(dir: &tempfile::TempDir) -> Palace {
    let options = SqliteOptions { create: true, ..SqliteOptions::default() };
    let store = SqliteStore::open(&dir.path().join("palace.db"), options).expect("open palace");
    Palace::new(Arc::new(store), WorkspaceId::default_workspace())
}

/// A loader that waits until the test releases it (a message on `release`
/// or its sender dropped), then loads the static model.
fn gated_static_loader(release: std::sync::mpsc::Receiver<()>) -> EmbedderLoader {
    Box::new(move || {
        let _ = release.recv();
        let model = mempalace_embed::static_model::StaticModel::load(&mempalace_embed::files::static_dir(&model_dir()))
            .map_err(|e| e.to_string())?;
        Ok(Some(Arc::new(model) as Arc<dyn Embedder>))
    })
}

fn args(value: Value) -> Option<Map<String, Value>> {
    value.as_object().cloned()
}

async fn call(server: &McpServer, name: &str, arguments: Value) -> Value {
    let result = server.call(name, args(arguments)).await.expect("tool call");
    assert_ne!(result.is_error, Some(true), "{name} failed: {result:?}");
    let text = match &result.content[0] {
        rmcp::model::ContentBlock::Text(text) => text.text.clone(),
        other => panic!("expected text content, got {other:?}"),
    };
    serde_json::from_str(&text).expect("JSON text")
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("runtime")
}

#[test]
fn tools_without_vectors_do_not_wait_and_a_first_search_waits_for_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let (release, gate) = std::sync::mpsc::channel();
    let backend = Backend::new(palace(&dir), "test".into(), Some(gated_static_loader(gate)));
    let server = McpServer::new(backend.clone(), Profile::All);
    runtime().block_on(async {
        // The model cannot load until released: these answer without it.
        let status = call(&server, "mempalace_status", json!({})).await;
        assert_eq!(status["total_drawers"], 0);
        call(&server, "mempalace_kg_add", json!({"subject": "A", "predicate": "uses", "object": "B"})).await;
        assert!(!backend.embedder_settled(), "the model is still loading");
        // Released 300 ms from now, while the search is already waiting.
        let released = Instant::now();
        let delay = Duration::from_millis(300);
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(delay);
            release.send(()).expect("the loader is waiting");
        });
        let found = call(&server, "mempalace_search", json!({"query": "anything at all"})).await;
        assert!(released.elapsed() >= delay, "the search waited for the model");
        assert!(found.get("fallback").is_none(), "the search used vectors once loaded: {found}");
        assert!(backend.embedder_settled());
        releaser.join().unwrap();
    });
}

#[test]
fn a_model_that_fails_to_load_leaves_keyword_search() {
    let dir = tempfile::tempdir().unwrap();
    let loader: EmbedderLoader = Box::new(|| Err("weights are corrupt".to_string()));
    let server = McpServer::new(Backend::new(palace(&dir), "test".into(), Some(loader)), Profile::Mempalace);
    runtime().block_on(async {
        call(
            &server,
            "mempalace_add_drawer",
            json!({"wing": "w", "room": "r", "content": "The ticket ERR-4417 was closed after the cache fix."}),
        )
        .await;
        let found = call(&server, "mempalace_search", json!({"query": "ERR-4417"})).await;
        assert_eq!(found["fallback"], "bm25_only", "{found}");
        assert_eq!(found["results"][0]["text"], "The ticket ERR-4417 was closed after the cache fix.");
        let duplicate = call(&server, "mempalace_check_duplicate", json!({"content": "anything"})).await;
        assert_eq!(duplicate["vector_disabled"], true, "{duplicate}");
    });
}

#[test]
fn parameter_errors_are_invalid_params_and_the_server_keeps_answering() {
    let dir = tempfile::tempdir().unwrap();
    let server = McpServer::new(Backend::new(palace(&dir), "test".into(), None), Profile::All);
    runtime().block_on(async {
        for (name, arguments, needle) in [
            ("mempalace_search", json!({"query": "x", "limit": 0}), "limit"),
            ("mempalace_search", json!({"query": "x", "max_distance": 3.5}), "max_distance"),
            ("mempalace_list_drawers", json!({"offset": -1}), "offset"),
            ("mempalace_kg_query", json!({"entity": "x", "direction": "sideways"}), "direction"),
            ("mempalace_add_drawer", json!({"wing": "a/b", "room": "r", "content": "text"}), "wing"),
            ("mempalace_diary_read", json!({"agent_name": "a", "last_n": 1000}), "last_n"),
            ("memory_traverse", json!({"start_room": "x", "max_hops": 9}), "max_hops"),
            ("recall", json!({"query": "x", "n": 0}), "n"),
            (
                "recall",
                json!({"query": "x", "context_filter": json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6,
                "g": 7, "h": 8, "i": 9, "j": 10, "k": 11}).to_string()}),
                "context_filter",
            ),
            ("learn", json!({"insight": "x".repeat(301)}), "insight"),
            ("end_session", json!({"session_id": "s", "outcome_score": 1.5}), "outcome_score"),
            (
                "save_perception",
                json!({"description": "a camera frame", "perception_type": "smell"}),
                "perception_type",
            ),
        ] {
            let error = server.call(name, args(arguments.clone())).await.expect_err("must be refused");
            assert_eq!(error.code, rmcp::model::ErrorCode::INVALID_PARAMS, "{name} {arguments}");
            assert!(error.message.contains(needle), "{name}: {}", error.message);
        }
        assert_eq!(call(&server, "mempalace_status", json!({})).await["total_drawers"], 0);
    });
}
