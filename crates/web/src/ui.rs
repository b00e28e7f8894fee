//! The web UI (docs/web-ui.md): one page and its script and style,
//! compiled into the binary — no CDN, works offline. The page calls the
//! REST API with the token the user gives it (kept in the tab's session
//! storage, sent as `Authorization: Bearer`, never in a URL).

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

const INDEX: &str = include_str!("ui/index.html");
const SCRIPT: &str = include_str!("ui/app.js");
const STYLE: &str = include_str!("ui/app.css");

/// Headers every UI file carries: no framing by other sites, no sniffing,
/// and a content security policy that allows only this server's own files.
fn secured(body: &'static str, kind: &'static str) -> Response {
    let mut response = (StatusCode::OK, body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; \
             frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
        ),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// `/`: the page.
pub async fn index() -> Response {
    secured(INDEX, "text/html; charset=utf-8")
}

/// `/ui/{file}`: the script and the style.
pub async fn asset(Path(file): Path<String>) -> Response {
    match file.as_str() {
        "app.js" => secured(SCRIPT, "text/javascript; charset=utf-8"),
        "app.css" => secured(STYLE, "text/css; charset=utf-8"),
        _ => (StatusCode::NOT_FOUND, "not found\n").into_response(),
    }
}
