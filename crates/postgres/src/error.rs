//! Mapping of PostgreSQL conditions onto `StoreError`.
//!
//! Serialization failures and deadlocks become `Busy` (the write helper
//! retries them), lost or refused connections become `Io` with the
//! server's reason, constraint violations on data we were handed become
//! `InvalidData`; everything else is our fault and keeps its driver cause.

use mempalace_store::StoreError;
use tokio_postgres::error::SqlState;

/// Whether a failed transaction may simply be run again.
pub(crate) fn is_retryable(error: &tokio_postgres::Error) -> bool {
    matches!(error.code(), Some(code) if *code == SqlState::T_R_SERIALIZATION_FAILURE || *code == SqlState::T_R_DEADLOCK_DETECTED)
}

/// Maps a driver error; `context` says what we were doing.
pub(crate) fn map(context: &str, error: tokio_postgres::Error) -> StoreError {
    if is_retryable(&error) {
        return StoreError::Busy { waited_ms: 0 };
    }
    match error.code() {
        Some(code)
            if *code == SqlState::FOREIGN_KEY_VIOLATION
                || *code == SqlState::CHECK_VIOLATION
                || *code == SqlState::NOT_NULL_VIOLATION =>
        {
            StoreError::invalid(format!("{context}: {}", describe(&error)))
        }
        Some(code)
            if *code == SqlState::INSUFFICIENT_PRIVILEGE
                || *code == SqlState::INVALID_PASSWORD
                || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
                || *code == SqlState::INVALID_CATALOG_NAME
                || *code == SqlState::DISK_FULL
                || *code == SqlState::TOO_MANY_CONNECTIONS
                || *code == SqlState::ADMIN_SHUTDOWN
                || *code == SqlState::CANNOT_CONNECT_NOW =>
        {
            StoreError::Io { detail: format!("{context}: {}", describe(&error)) }
        }
        None if error.is_closed() || error.as_db_error().is_none() => {
            StoreError::Io { detail: format!("{context}: {}", describe(&error)) }
        }
        _ => StoreError::backend(context.to_string(), error),
    }
}

/// The server's message when there is one, else the driver's.
pub(crate) fn describe(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => match db.detail() {
            Some(detail) => format!("{} ({detail})", db.message()),
            None => db.message().to_string(),
        },
        None => {
            let mut text = error.to_string();
            let mut source = std::error::Error::source(error);
            while let Some(cause) = source {
                text.push_str(": ");
                text.push_str(&cause.to_string());
                source = cause.source();
            }
            text
        }
    }
}

/// Extension to attach context to driver results.
pub(crate) trait Context<T> {
    /// Maps the error with [`map`].
    fn ctx(self, context: &str) -> Result<T, StoreError>;
}

impl<T> Context<T> for Result<T, tokio_postgres::Error> {
    fn ctx(self, context: &str) -> Result<T, StoreError> {
        self.map_err(|error| map(context, error))
    }
}
