//! Mapping of SQLite conditions onto `StoreError`.
//!
//! Busy and locked become `Busy` (after the caller's retries), damage becomes
//! `Corrupt`, disk and permission failures become `Io`; everything else is
//! our fault and keeps its driver cause.

use mempalace_store::StoreError;
use rusqlite::ErrorCode;

/// Whether an error means "another connection holds the lock".
pub(crate) fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(error.sqlite_error_code(), Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked))
}

/// Maps a driver error; `context` says what we were doing.
pub(crate) fn map(context: &str, error: rusqlite::Error) -> StoreError {
    match error.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => StoreError::Busy { waited_ms: 0 },
        Some(ErrorCode::DatabaseCorrupt) | Some(ErrorCode::NotADatabase) => {
            StoreError::Corrupt { detail: format!("{context}: {error}") }
        }
        // The detail says which of the two the user has to fix.
        Some(ErrorCode::DiskFull) => {
            StoreError::Io { detail: format!("{context}: {error} (the disk is full: free space, then run it again)") }
        }
        Some(ErrorCode::ReadOnly) | Some(ErrorCode::PermissionDenied) => StoreError::Io {
            detail: format!(
                "{context}: {error} (palace.db or its directory is read-only for this user: make both writable, or \
                 run as their owner)"
            ),
        },
        Some(ErrorCode::CannotOpen) | Some(ErrorCode::SystemIoFailure) => {
            StoreError::Io { detail: format!("{context}: {error}") }
        }
        _ => StoreError::backend(context.to_string(), error),
    }
}

/// Extension to attach context to driver results.
pub(crate) trait Context<T> {
    /// Maps the error with [`map`].
    fn ctx(self, context: &str) -> Result<T, StoreError>;
}

impl<T> Context<T> for Result<T, rusqlite::Error> {
    fn ctx(self, context: &str) -> Result<T, StoreError> {
        self.map_err(|error| map(context, error))
    }
}
