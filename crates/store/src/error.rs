//! The one error type every backend maps its driver conditions into.
//!
//! Variants separate what the user can act on (not a palace, too new,
//! locked, limit) from our own faults (corruption, I/O, backend bugs). The
//! surfaces map each variant to an exit code, HTTP status or JSON-RPC code in
//! one exhaustive `match`.

use std::path::PathBuf;

use thiserror::Error;

/// Result alias for store operations.
pub type StoreResult<T> = Result<T, StoreError>;

/// Why a store operation failed.
#[derive(Debug, Error)]
pub enum StoreError {
    /// No palace exists at the location and the caller did not ask to create one.
    #[error("no palace at {location}; create one with `mempalace init`, or pass --palace DIR")]
    Missing {
        /// Where we looked.
        location: PathBuf,
    },
    /// The location holds something that is not a mempalace palace.
    #[error("{location} is not a mempalace palace ({reason}); pass another --palace, or move the file aside")]
    NotAPalace {
        /// The file.
        location: PathBuf,
        /// What we found instead.
        reason: String,
    },
    /// The palace was written by a newer mempalace.
    #[error("palace schema version {found} is newer than this mempalace supports ({supported}); upgrade mempalace")]
    SchemaTooNew {
        /// Version in the file.
        found: u32,
        /// Highest version this build knows.
        supported: u32,
    },
    /// Another writer held the palace longer than the busy timeout, even after retries.
    #[error("the palace is locked by another writer (waited {waited_ms} ms); retry, or raise busy_timeout_ms")]
    Busy {
        /// How long we waited in total.
        waited_ms: u64,
    },
    /// A workspace limit would be exceeded.
    #[error(
        "workspace {workspace} already holds {limit} {what}, its limit; delete some, or raise `max_{what}` in config.json (or $MEMPALACE_MAX_{what_upper})", what_upper = what.to_ascii_uppercase()
    )]
    Limit {
        /// Workspace id.
        workspace: String,
        /// What is limited ("drawers", "entities", "triples").
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// A stored row does not satisfy the domain rules: the file was edited by
    /// hand or damaged.
    #[error("stored data is invalid: {detail}; run `mempalace doctor`")]
    InvalidData {
        /// Which row and why.
        detail: String,
    },
    /// The storage engine reports damage.
    #[error(
        "the palace file is damaged: {detail}; run `mempalace doctor`, and restore from an export if it cannot repair it"
    )]
    Corrupt {
        /// What the engine said.
        detail: String,
    },
    /// The database server cannot be reached, or refused us.
    #[error(
        "cannot reach the palace database at {location}: {detail}; check the URL (--store or $MEMPALACE_DATABASE_URL) and that the server is running"
    )]
    Unreachable {
        /// The server (URL without its password).
        location: String,
        /// What failed.
        detail: String,
    },
    /// The disk refused (full, read-only, permissions).
    #[error("cannot write the palace: {detail}; check free space and permissions")]
    Io {
        /// What failed.
        detail: String,
    },
    /// The caller may not do this (tenancy: no role in the workspace, a
    /// reader writing, someone else's private drawer, an admin-only call).
    #[error("access denied: {detail}")]
    Denied {
        /// What was refused and what would allow it.
        detail: String,
    },
    /// A write would pass one of the workspace's limits.
    #[error(transparent)]
    OverLimit(#[from] mempalace_core::tenancy::LimitExceeded),
    /// Anything else the backend reported: our fault.
    #[error("internal storage error: {message}")]
    Backend {
        /// Summary.
        message: String,
        /// The driver error.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl StoreError {
    /// A backend error with its driver cause.
    pub fn backend(message: impl Into<String>, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Backend { message: message.into(), source: Some(Box::new(source)) }
    }

    /// A refused call.
    pub fn denied(detail: impl Into<String>) -> Self {
        Self::Denied { detail: detail.into() }
    }

    /// A stored row that failed validation.
    pub fn invalid(detail: impl Into<String>) -> Self {
        Self::InvalidData { detail: detail.into() }
    }
}
