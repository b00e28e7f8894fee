//! Errors of the REST API as RFC 9457 problem details
//! (`application/problem+json`), with one exhaustive map from the engine's
//! and the store's errors to HTTP statuses.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use mempalace_engine::EngineError;
use mempalace_store::StoreError;
use schemars::JsonSchema;
use serde::Serialize;

/// A problem detail: what went wrong and what to do.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Problem {
    /// A stable identifier of the kind of problem (`/problems/not-found`).
    #[serde(rename = "type")]
    pub kind: String,
    /// A short summary of the kind.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// What happened and what to do about it.
    pub detail: String,
    /// Seconds to wait before retrying, for busy and rate-limited answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<u64>,
}

impl Problem {
    /// A request body over [`crate::BODY_LIMIT`].
    pub fn too_large() -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too-large",
            "Request body too large",
            format!(
                "request body over {} bytes, the server's limit: send less (a large export: split it, or \
                 `mempalace import FILE` on the server)",
                crate::BODY_LIMIT
            ),
        )
    }

    /// A problem of `kind` with `status`.
    pub fn new(status: StatusCode, kind: &str, title: &str, detail: impl Into<String>) -> Self {
        Self {
            kind: format!("/problems/{kind}"),
            title: title.to_string(),
            status: status.as_u16(),
            detail: detail.into(),
            retry_after: None,
        }
    }

    /// 400: the request itself is wrong.
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid", "Invalid request", detail)
    }

    /// 404.
    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not-found", "Not found", detail)
    }

    /// 500: our fault; the detail stays in the log.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        tracing::error!(%detail, "REST request failed");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "Internal error",
            "internal error; the server log has the details",
        )
    }
}

impl From<EngineError> for Problem {
    fn from(error: EngineError) -> Self {
        let detail = error.to_string();
        match &error {
            EngineError::Invalid(_) => Self::bad_request(detail),
            EngineError::NotFound { .. } | EngineError::RoomNotFound { .. } => Self::not_found(detail),
            EngineError::Coordination(e) if e.is_not_found() => Self::not_found(detail),
            EngineError::Coordination(_) | EngineError::Conflict(_) => {
                Self::new(StatusCode::CONFLICT, "conflict", "Conflict", detail)
            }
            EngineError::Unavailable(_) => {
                Self::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "Unavailable", detail)
            }
            EngineError::Unauthenticated(_) => {
                Self::new(StatusCode::UNAUTHORIZED, "unauthenticated", "Token refused", detail)
            }
            EngineError::RateLimited { retry_after_s, .. } => Self {
                retry_after: Some(*retry_after_s),
                ..Self::new(StatusCode::TOO_MANY_REQUESTS, "rate-limited", "Too many requests", detail)
            },
            EngineError::Store(store) => match store {
                StoreError::Denied { .. } => Self::new(StatusCode::FORBIDDEN, "denied", "Access denied", detail),
                StoreError::Limit { .. } | StoreError::OverLimit(_) => {
                    Self::new(StatusCode::CONFLICT, "over-limit", "Workspace limit reached", detail)
                }
                StoreError::Busy { .. } => Self {
                    retry_after: Some(1),
                    ..Self::new(StatusCode::SERVICE_UNAVAILABLE, "busy", "Palace busy", detail)
                },
                StoreError::Unreachable { .. } => {
                    Self::new(StatusCode::SERVICE_UNAVAILABLE, "unreachable", "Store unreachable", detail)
                }
                StoreError::Io { .. } => {
                    Self::new(StatusCode::INSUFFICIENT_STORAGE, "storage", "Storage refused the write", detail)
                }
                StoreError::Missing { .. }
                | StoreError::NotAPalace { .. }
                | StoreError::SchemaTooNew { .. }
                | StoreError::InvalidData { .. }
                | StoreError::Corrupt { .. } => {
                    Self::new(StatusCode::INTERNAL_SERVER_ERROR, "palace", "The palace cannot be used", detail)
                }
                StoreError::Backend { .. } => Self::internal(detail),
            },
        }
    }
}

impl From<mempalace_core::ValidationError> for Problem {
    fn from(error: mempalace_core::ValidationError) -> Self {
        Self::bad_request(error.to_string())
    }
}

impl From<StoreError> for Problem {
    fn from(error: StoreError) -> Self {
        EngineError::Store(error).into()
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let retry = self.retry_after;
        let mut response = (status, axum::Json(self)).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json"));
        if let Some(seconds) = retry
            && let Ok(value) = HeaderValue::from_str(&seconds.to_string())
        {
            headers.insert(header::RETRY_AFTER, value);
        }
        response
    }
}
