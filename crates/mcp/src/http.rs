//! Streamable HTTP: the MCP service mounted at `/mcp` with axum.
//!
//! On a loopback address the endpoint is open to local clients, and only
//! loopback `Host` names are accepted (against DNS rebinding). Bound to any
//! other address it refuses to start without a bearer token, checks
//! `Authorization: Bearer …` on every request, and accepts the `Host` names
//! it is told to. A browser `Origin` must be one of the allowed origins
//! (none by default, so pages cannot call a local server).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use mempalace_core::tenancy::Caller;

use crate::server::McpServer;

/// A bearer token; never printed.
#[derive(Clone)]
pub struct Token(String);

impl Token {
    /// Wraps a token; an empty one is refused.
    pub fn new(token: String) -> Option<Self> {
        (!token.trim().is_empty()).then(|| Self(token.trim().to_string()))
    }
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)")
    }
}

/// How the HTTP endpoint is exposed.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen.
    pub addr: SocketAddr,
    /// Required off loopback.
    pub token: Option<Token>,
    /// Extra accepted `Host` names (besides loopback ones) off loopback.
    pub allowed_hosts: Vec<String>,
    /// Accepted browser origins (`scheme://host:port`).
    pub allowed_origins: Vec<String>,
    /// The palace has users whose tokens this server accepts (a team
    /// palace, docs/tenancy.md): then it may serve off loopback without
    /// an admin token.
    pub user_tokens: bool,
}

/// Why the HTTP server could not start.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// Off loopback without a token.
    #[error(
        "refusing to serve MCP on {0} without a token: set MEMPALACE_MCP_HTTP_TOKEN (clients send it as \
         `Authorization: Bearer …`), create users with tokens (docs/tenancy.md), or bind to 127.0.0.1"
    )]
    TokenRequired(SocketAddr),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}; choose another port or stop the other server")]
    Bind {
        /// Address.
        addr: SocketAddr,
        /// Cause.
        source: std::io::Error,
    },
    /// The server stopped with an I/O error.
    #[error("the HTTP server failed: {0}")]
    Serve(std::io::Error),
}

impl HttpOptions {
    /// Refuses a non-loopback address without a token.
    pub fn check(&self) -> Result<(), HttpError> {
        if !self.addr.ip().is_loopback() && self.token.is_none() && !self.user_tokens {
            return Err(HttpError::TokenRequired(self.addr));
        }
        Ok(())
    }
}

/// The `Host` names the server answers to: loopback names, and off
/// loopback the bind address and each `--allowed-host`.
pub fn allowed_hosts(options: &HttpOptions) -> Vec<String> {
    let mut hosts: Vec<String> = vec!["localhost".into(), "127.0.0.1".into(), "::1".into(), "[::1]".into()];
    if !options.addr.ip().is_loopback() {
        hosts.extend(options.allowed_hosts.iter().cloned());
        hosts.push(options.addr.ip().to_string());
    }
    hosts
}

/// The axum router serving MCP at `/mcp` (for embedding in a larger app).
pub fn router(server: McpServer, options: &HttpOptions) -> Result<Router, HttpError> {
    router_with(server, options, Router::new())
}

/// MCP at `/mcp` and `/metrics`, plus `extra` routes (the REST API and the
/// web UI), all behind one authorising layer: every request but the UI's
/// static files gets its caller, and is counted and logged.
pub fn router_with(server: McpServer, options: &HttpOptions, extra: Router) -> Result<Router, HttpError> {
    options.check()?;
    let loopback = options.addr.ip().is_loopback();
    let gate = Arc::new(Gate { admin: options.token.clone(), tenancy: server.backend().tenancy().cloned(), loopback });
    let mut config = StreamableHttpServerConfig::default().with_allowed_hosts(allowed_hosts(options));
    config = if options.allowed_origins.is_empty() {
        config.enforce_origin_validation()
    } else {
        config.with_allowed_origins(options.allowed_origins.clone())
    };
    let backend = server.backend().clone();
    let counted = server.backend().clone();
    let service =
        StreamableHttpService::new(move || Ok(server.clone()), Arc::new(LocalSessionManager::default()), config);
    Ok(Router::new()
        .route("/metrics", axum::routing::get(move || metrics(backend.clone())))
        .nest_service("/mcp", service)
        .merge(extra)
        .layer(middleware::from_fn(session_closed))
        .layer(middleware::from_fn(unreadable_messages))
        .layer(middleware::from_fn_with_state(gate, authorize))
        .layer(middleware::from_fn_with_state(counted, count_request)))
}

/// Counts and logs every request (route pattern, method, status, latency,
/// caller; never tokens, bodies or query strings).
async fn count_request(State(backend): State<crate::Backend>, request: Request, next: Next) -> Response {
    let started = std::time::Instant::now();
    let method = request.method().as_str().to_string();
    let route = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or_else(|| "unmatched".to_string(), |p| p.as_str().to_string());
    let response = next.run(request).await;
    let elapsed = started.elapsed();
    let status = response.status().as_u16();
    let actor = response.extensions().get::<crate::server::RequestScope>().map(|s| s.caller.actor().to_string());
    backend.metrics().record_request(&route, &method, status, elapsed);
    tracing::info!(
        target: "mempalace::http",
        %method,
        %route,
        status,
        elapsed_ms = elapsed.as_secs_f64() * 1000.0,
        actor = actor.as_deref().unwrap_or("-"),
        "request"
    );
    response
}

/// Paths served to anyone: the web UI's static files (they hold no data;
/// the UI asks for a token before calling the API off loopback).
fn is_public(path: &str) -> bool {
    path == "/" || path == "/favicon.ico" || path.starts_with("/ui/")
}

/// `/metrics`: the server's counters in Prometheus's text format — the
/// ingestion queue (depth, pending work, what was turned away) and whether
/// the embedding model has loaded.
async fn metrics(backend: crate::Backend) -> Response {
    let store_side = backend.clone();
    let store_text = tokio::task::spawn_blocking(move || store_metrics(&store_side)).await.unwrap_or_default();
    let mut text = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, value: u64| {
        text.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}\n"));
    };
    metric(
        "mempalace_embedder_settled",
        "gauge",
        "1 once the embedding model has loaded (or failed to).",
        u64::from(backend.embedder_settled()),
    );
    if let Some(queue) = backend.queue_status() {
        metric("mempalace_ingest_workers", "gauge", "Ingestion pool workers.", queue.workers as u64);
        metric("mempalace_ingest_capacity", "gauge", "Ingestion queue depth.", queue.capacity as u64);
        metric("mempalace_ingest_pending", "gauge", "Background writes accepted and not yet filed.", queue.pending);
        metric("mempalace_ingest_submitted_total", "counter", "Background writes accepted.", queue.submitted);
        metric(
            "mempalace_ingest_dropped_total",
            "counter",
            "Background writes refused because the queue was full.",
            queue.dropped,
        );
        metric("mempalace_ingest_processed_total", "counter", "Background writes filed or failed.", queue.processed);
        metric("mempalace_ingest_failed_total", "counter", "Background writes that failed.", queue.failed);
    }
    // The language model's usage, per task (the process's one client).
    if let Some(usage) = backend.palace().llm().and_then(|llm| llm.usage_report()) {
        let tasks = usage["tasks"].as_object().cloned().unwrap_or_default();
        for (name, help, key) in [
            ("mempalace_llm_calls_total", "Language-model requests sent, retries included.", "calls"),
            ("mempalace_llm_failures_total", "Language-model calls that failed after their retries.", "failures"),
            ("mempalace_llm_refused_total", "Calls refused without a request (off, cooling down, budget).", "refused"),
            ("mempalace_llm_prompt_tokens_total", "Prompt tokens the server reported.", "prompt_tokens"),
            ("mempalace_llm_completion_tokens_total", "Completion tokens the server reported.", "completion_tokens"),
        ] {
            text.push_str(&format!("# HELP {name} {help}\n# TYPE {name} counter\n"));
            for (task, counts) in &tasks {
                text.push_str(&format!("{name}{{task=\"{task}\"}} {}\n", counts[key].as_u64().unwrap_or(0)));
            }
        }
        let spent = usage["spent_usd"].as_f64().unwrap_or(0.0);
        text.push_str(&format!(
            "# HELP mempalace_llm_cost_usd_total Spent on the language model, from the configured prices.\n\
             # TYPE mempalace_llm_cost_usd_total counter\nmempalace_llm_cost_usd_total {spent}\n"
        ));
    }
    text.push_str(&store_text);
    backend.metrics().render(&mut text);
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

/// The store's size and the server workspace's drawers per cold-path state
/// and status, and each periodic job's last run.
fn store_metrics(backend: &crate::Backend) -> String {
    let palace = backend.palace();
    let mut text = String::new();
    match palace.store().info() {
        Ok(info) => {
            if let Some(size) = info.size_bytes {
                text.push_str(&format!(
                    "# HELP mempalace_store_size_bytes Bytes the palace takes on disk.\n\
                     # TYPE mempalace_store_size_bytes gauge\nmempalace_store_size_bytes {size}\n"
                ));
            }
        }
        Err(error) => tracing::warn!(%error, "metrics: reading the store's size failed"),
    }
    match palace.pipeline_counts() {
        Ok(counts) => {
            text.push_str("# HELP mempalace_drawers Drawers of the server's workspace by cold-path state.\n# TYPE mempalace_drawers gauge\n");
            for (state, n) in &counts.by_state {
                text.push_str(&format!("mempalace_drawers{{state=\"{}\"}} {n}\n", state.as_str()));
            }
            text.push_str("# HELP mempalace_drawers_by_status Drawers of the server's workspace by status.\n# TYPE mempalace_drawers_by_status gauge\n");
            for (status, n) in &counts.by_status {
                text.push_str(&format!("mempalace_drawers_by_status{{status=\"{}\"}} {n}\n", status.as_str()));
            }
            text.push_str(&format!(
                "# HELP mempalace_cold_path_claimed Raw drawers under a live claim.\n# TYPE mempalace_cold_path_claimed gauge\nmempalace_cold_path_claimed {}\n",
                counts.claimed
            ));
            text.push_str("# HELP mempalace_job_last_run_timestamp_seconds When each periodic job last started.\n# TYPE mempalace_job_last_run_timestamp_seconds gauge\n");
            for run in &counts.last_runs {
                text.push_str(&format!(
                    "mempalace_job_last_run_timestamp_seconds{{job=\"{}\"}} {}\n",
                    run.job,
                    run.started_at.timestamp()
                ));
            }
        }
        Err(error) => tracing::warn!(%error, "metrics: reading the cold path's counts failed"),
    }
    text
}

/// A closed session (HTTP `DELETE`) is answered `204 No Content`: the SDK
/// answers 202, which clients (the official Python SDK among them) log as
/// a failed termination, since the transport spec expects 200 or 204.
async fn session_closed(request: Request, next: Next) -> Response {
    let delete = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
        *response.body_mut() = axum::body::Body::empty();
    }
    response
}

/// A body the SDK could not read as a JSON-RPC message (invalid UTF-8, not
/// JSON, nested too deeply, not a message) is answered `400 Bad Request`
/// with a JSON-RPC error (`-32700` when the body is not JSON, `-32600` when
/// it is JSON but not a message) naming the place, instead of the SDK's
/// plain-text `415 Unsupported Media Type`, which blames the content type.
async fn unreadable_messages(request: Request, next: Next) -> Response {
    let mcp = request.method() == axum::http::Method::POST && request.uri().path().starts_with("/mcp");
    let response = next.run(request).await;
    if !mcp || response.status() != StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return response;
    }
    let (parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 64 * 1024).await else {
        return Response::from_parts(parts, axum::body::Body::empty());
    };
    let text = String::from_utf8_lossy(&bytes);
    let Some(detail) = text.strip_prefix("fail to deserialize request body ") else {
        // The content-type refusal: already says what to send.
        return Response::from_parts(parts, axum::body::Body::from(bytes));
    };
    let not_a_message = [
        "invalid type",
        "invalid value",
        "invalid length",
        "missing field",
        "unknown variant",
        "data did not match",
        "unrecognized",
    ]
    .iter()
    .any(|kind| detail.starts_with(kind));
    let (code, message) = if not_a_message {
        (-32600, format!("invalid request: the body is JSON but not a JSON-RPC message: {detail}"))
    } else {
        (-32700, format!("parse error: the body is not JSON (UTF-8, nested at most 128 deep): {detail}"))
    };
    let body = serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    (StatusCode::BAD_REQUEST, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

/// What the authorising layer needs: the server's admin token, tenancy
/// (to resolve user tokens) and whether the listener is loopback-only.
struct Gate {
    admin: Option<Token>,
    tenancy: Option<Arc<mempalace_engine::tenancy::Tenancy>>,
    loopback: bool,
}

/// The header naming the workspace a request works in (default: the
/// server's `--workspace`).
pub const WORKSPACE_HEADER: &str = "mempalace-workspace";

/// A refusal: RFC 9457 problem details on the REST API's paths (as every
/// other API error), plain text elsewhere.
fn refuse(path: &str, status: StatusCode, message: String) -> Response {
    let mut response = if path.starts_with("/api/") {
        let (kind, title) = match status {
            StatusCode::UNAUTHORIZED => ("unauthenticated", "Token refused"),
            StatusCode::BAD_REQUEST => ("invalid", "Invalid request"),
            StatusCode::SERVICE_UNAVAILABLE => ("unavailable", "Unavailable"),
            _ => ("internal", "Internal error"),
        };
        let body = serde_json::json!({
            "type": format!("/problems/{kind}"), "title": title, "status": status.as_u16(), "detail": message,
        });
        let mut response = (status, body.to_string()).into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, axum::http::HeaderValue::from_static("application/problem+json"));
        response
    } else {
        (status, format!("{message}\n")).into_response()
    };
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, axum::http::HeaderValue::from_static("Bearer"));
    }
    response
}

/// Resolves the caller of every request (docs/tenancy.md): the server's
/// admin token or, on loopback, no token at all is the local operator; a
/// user or agent token is checked against the palace's directory. The
/// caller and the workspace asked for travel with the request to the tool
/// call, where the engine's guard enforces them. Tokens never reach logs.
async fn authorize(State(gate): State<Arc<Gate>>, mut request: Request, next: Next) -> Response {
    if is_public(request.uri().path()) {
        return next.run(request).await;
    }
    let path = request.uri().path().to_string();
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|v| v.trim().to_string());
    let workspace = match request.headers().get(WORKSPACE_HEADER).map(|v| v.to_str().map(str::trim)) {
        None => None,
        Some(Ok(text)) => match mempalace_core::WorkspaceId::parse(text) {
            Ok(id) => Some(id),
            Err(error) => return refuse(&path, StatusCode::BAD_REQUEST, format!("{WORKSPACE_HEADER}: {error}")),
        },
        Some(Err(_)) => return refuse(&path, StatusCode::BAD_REQUEST, format!("{WORKSPACE_HEADER} is not ASCII text")),
    };
    let admin =
        |given: &str| gate.admin.as_ref().is_some_and(|Token(t)| constant_time_eq(given.as_bytes(), t.as_bytes()));
    let caller = match given {
        Some(given) if admin(&given) => Caller::Local,
        Some(given) => {
            let Some(tenancy) = gate.tenancy.clone() else {
                tracing::warn!(uri = %request.uri(), "MCP request with a wrong bearer token refused");
                return refuse(
                    &path,
                    StatusCode::UNAUTHORIZED,
                    "missing or wrong bearer token: send `Authorization: Bearer <MEMPALACE_MCP_HTTP_TOKEN>` or a user token".into(),
                );
            };
            match tokio::task::spawn_blocking(move || tenancy.authenticate(&given)).await {
                Ok(Ok(caller)) => caller,
                Ok(Err(error)) => {
                    tracing::warn!(uri = %request.uri(), %error, "MCP request with a refused token");
                    let status = if matches!(error, mempalace_engine::EngineError::Unauthenticated(_)) {
                        StatusCode::UNAUTHORIZED
                    } else {
                        StatusCode::SERVICE_UNAVAILABLE
                    };
                    return refuse(&path, status, error.to_string());
                }
                Err(join) => {
                    return refuse(&path, StatusCode::INTERNAL_SERVER_ERROR, format!("internal error: {join}"));
                }
            }
        }
        None if gate.loopback && gate.admin.is_none() => Caller::Local,
        None => {
            tracing::warn!(uri = %request.uri(), "MCP request without a bearer token refused");
            return refuse(
                &path,
                StatusCode::UNAUTHORIZED,
                "this server needs a token: send `Authorization: Bearer <token>` (`mempalace token create`)".into(),
            );
        }
    };
    let scope = crate::server::RequestScope { caller, workspace };
    request.extensions_mut().insert(scope.clone());
    let mut response = next.run(request).await;
    // For the request log: who asked (the layer outside this one reads it).
    response.extensions_mut().insert(scope);
    response
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Serves until `shutdown` resolves.
pub async fn serve(
    server: McpServer,
    options: HttpOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), HttpError> {
    serve_with(server, options, Router::new(), shutdown).await
}

/// Serves MCP and `extra` (see [`router_with`]) until `shutdown` resolves.
pub async fn serve_with(
    server: McpServer,
    options: HttpOptions,
    extra: Router,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), HttpError> {
    let app = router_with(server, &options, extra)?;
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|source| HttpError::Bind { addr: options.addr, source })?;
    let local = listener.local_addr().map_err(HttpError::Serve)?;
    // Without TCP_NODELAY an answer written in pieces (an SSE stream's
    // priming event, the message, the end) waits for the client's delayed
    // ACK: about 40 ms added to every MCP call over HTTP.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        if let Err(error) = tcp.set_nodelay(true) {
            tracing::debug!(%error, "could not set TCP_NODELAY");
        }
    });
    tracing::info!(addr = %local, "listening: MCP at /mcp, the REST API at /api/v1, the web UI at /");
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await.map_err(HttpError::Serve)
}
