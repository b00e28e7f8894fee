//! The REST API and the web UI of mempalace, served by `mempalace serve` on
//! the same port as MCP over HTTP (docs/rest-api.md, docs/web-ui.md), and
//! the JSONL export format they share with the CLI.
//!
//! * [`api`] — the handlers of `/api/v1`, each a thin call into the engine
//!   with the palace scoped to the request's caller;
//! * [`openapi`] — the route table and the OpenAPI document built from it;
//! * [`problem`] — errors as `application/problem+json`, one exhaustive map
//!   from engine and store errors to statuses;
//! * [`ui`] — the web UI's files, compiled into the binary;
//! * [`wire`] — the export format.
//!
//! Authentication (the caller of each request) is the MCP transport's
//! layer, which wraps these routes too; here every request also passes the
//! browser checks: a known `Host`, no foreign `Origin`, and JSON (never a
//! form) for anything that writes — so another site's page cannot make a
//! browser act on the palace (CSRF).

pub mod api;
pub mod directory;
pub mod openapi;
pub mod problem;
pub mod ui;
pub mod wire;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post, put};
use mempalace_mcp::Backend;

use crate::problem::Problem;

/// What the browser checks accept.
#[derive(Debug, Clone)]
pub struct BrowserPolicy {
    /// `Host` names served (the MCP transport's list).
    pub hosts: Vec<String>,
    /// Extra origins allowed besides the server's own.
    pub origins: Vec<String>,
}

/// The largest request body the REST API reads (axum's default, stated so
/// the refusal can name it).
pub const BODY_LIMIT: usize = 2 * 1024 * 1024;

/// The REST API and the UI over `backend`.
pub fn router(backend: Backend, policy: BrowserPolicy) -> Router {
    Router::new()
        .route("/api/v1/health", get(api::health))
        .route("/api/v1/openapi.json", get(|| async { axum::Json(openapi::document()) }))
        .route("/api/v1/taxonomy", get(api::taxonomy))
        .route("/api/v1/drawers", get(api::list_drawers).post(api::add_drawer))
        .route("/api/v1/drawers/{id}", get(api::get_drawer).patch(api::edit_drawer).delete(api::delete_drawer))
        .route("/api/v1/drawers/{id}/restore", post(api::restore_drawer))
        .route("/api/v1/search", get(api::search))
        .route("/api/v1/kg/entities", get(api::kg_entities))
        .route("/api/v1/kg/entities/{name}", get(api::kg_entity))
        .route("/api/v1/kg/timeline", get(api::kg_timeline))
        .route("/api/v1/kg/facts", post(api::kg_add))
        .route("/api/v1/kg/invalidate", post(api::kg_invalidate))
        .route("/api/v1/kg/stats", get(api::kg_stats))
        .route("/api/v1/graph", get(api::graph))
        .route("/api/v1/diaries/{agent}", get(api::diary))
        .route("/api/v1/sessions", get(api::sessions))
        .route("/api/v1/episodes", get(api::episodes))
        .route("/api/v1/episodes/{id}", get(api::episode))
        .route("/api/v1/jobs", get(api::jobs))
        .route("/api/v1/conflicts", get(api::conflicts))
        .route("/api/v1/export", get(api::export))
        .route("/api/v1/import", post(api::import))
        .route("/api/v1/whoami", get(directory::whoami))
        .route("/api/v1/users", get(directory::users).post(directory::add_user))
        .route("/api/v1/users/{id}/disable", post(directory::disable_user))
        .route("/api/v1/users/{id}/enable", post(directory::enable_user))
        .route("/api/v1/tokens", get(directory::tokens).post(directory::issue_token))
        .route("/api/v1/tokens/{id}", delete(directory::revoke_token))
        .route("/api/v1/teams", get(directory::teams).post(directory::create_team))
        .route("/api/v1/teams/{id}", delete(directory::delete_team))
        .route("/api/v1/teams/{id}/members", post(directory::add_team_member))
        .route("/api/v1/teams/{id}/members/{user}", delete(directory::remove_team_member))
        .route("/api/v1/workspaces", post(directory::create_workspace))
        .route("/api/v1/workspaces/{id}/members", get(directory::members))
        .route("/api/v1/workspaces/{id}/members/{member}", put(directory::grant).delete(directory::revoke))
        .route("/api/v1/workspaces/{id}/limits", get(directory::limits).patch(directory::set_limits))
        .route("/api/v1/audit", get(directory::audit))
        .route(
            "/api/{*rest}",
            axum::routing::any(|| async { Problem::not_found("no such API route; /api/v1/openapi.json lists them") }),
        )
        .route("/", get(ui::index))
        .route("/ui/{file}", get(ui::asset))
        .layer(middleware::from_fn_with_state(Arc::new(policy), browser_checks))
        .layer(axum::extract::DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(backend)
}

/// Refuses requests a browser could be tricked into sending: an unknown
/// `Host` (DNS rebinding), an `Origin` other than the server's own or an
/// allowed one, and writes whose body is not JSON (a cross-site form
/// cannot send `application/json` without a preflight, which this server
/// never grants).
async fn browser_checks(State(policy): State<Arc<BrowserPolicy>>, request: Request, next: Next) -> Response {
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    let name =
        host.rsplit_once(':').filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit())).map_or(host, |(n, _)| n);
    if !policy.hosts.iter().any(|h| h.eq_ignore_ascii_case(name)) {
        return Problem::new(
            StatusCode::FORBIDDEN,
            "host",
            "Unknown host",
            format!("Host {host:?} is not served here"),
        )
        .into_response();
    }
    if let Some(origin) = headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) {
        let own = [format!("http://{host}"), format!("https://{host}")];
        if !own.iter().any(|o| o == origin) && !policy.origins.iter().any(|o| o == origin) {
            return Problem::new(
                StatusCode::FORBIDDEN,
                "origin",
                "Foreign origin",
                format!("requests from {origin} are not allowed (--allowed-origin adds one)"),
            )
            .into_response();
        }
    }
    let writes = matches!(*request.method(), Method::POST | Method::PATCH | Method::PUT);
    let path = request.uri().path();
    if writes && path.starts_with("/api/") {
        let kind = headers.get(header::CONTENT_TYPE).and_then(|c| c.to_str().ok()).unwrap_or("");
        let expected = if path.ends_with("/import") { "application/x-ndjson" } else { "application/json" };
        let body_less = path.ends_with("/restore") || path.ends_with("/disable") || path.ends_with("/enable");
        if !body_less && !kind.split(';').next().unwrap_or("").trim().eq_ignore_ascii_case(expected) {
            return Problem::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "media-type",
                "Unsupported media type",
                format!("send the body as {expected} (Content-Type: {expected})"),
            )
            .into_response();
        }
        if body_less
            && headers.get(header::ORIGIN).is_none()
            && headers.get("x-requested-with").is_none()
            && headers.get(header::AUTHORIZATION).is_none()
        {
            // A body-less POST is a "simple" request a foreign form could
            // send: require a header no form can set.
            return Problem::new(
                StatusCode::FORBIDDEN,
                "csrf",
                "Missing request header",
                "send X-Requested-With: mempalace (or an Authorization header) with this request",
            )
            .into_response();
        }
    }
    next.run(request).await
}
