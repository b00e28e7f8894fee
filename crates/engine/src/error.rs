//! Errors of engine operations.
//!
//! Input the caller can fix (`Invalid`, `NotFound`) stays apart from
//! storage conditions, which keep their own classification (`StoreError`).

use mempalace_core::ValidationError;
use mempalace_core::coordination::CoordinationError;
use mempalace_store::StoreError;
use thiserror::Error;

/// Result alias for engine operations.
pub type EngineResult<T> = Result<T, EngineError>;

/// Why an engine operation failed.
#[derive(Debug, Error)]
pub enum EngineError {
    /// An argument broke a domain rule.
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    /// The thing asked for does not exist.
    #[error("{what} not found: {id}")]
    NotFound {
        /// What kind of thing ("drawer").
        what: &'static str,
        /// Its id as given.
        id: String,
    },
    /// A room the palace graph does not hold, with the closest names.
    #[error("room not found: {room}{}", suggestion_text(.suggestions))]
    RoomNotFound {
        /// The room asked for.
        room: String,
        /// Rooms whose names contain it (or one of its words).
        suggestions: Vec<String>,
    },
    /// A coordination call broke a rule, or named an event or artifact
    /// that does not exist (MemPalace's messages, see `core::coordination`).
    #[error(transparent)]
    Coordination(#[from] CoordinationError),
    /// A capability the call needs is not configured or not working.
    #[error("{0}")]
    Unavailable(String),
    /// The request contradicts what the palace holds (a fact's end before
    /// its start, an earlier start than the one recorded); the message says
    /// what to do instead.
    #[error("{0}")]
    Conflict(String),
    /// The store refused or failed (`StoreError::Denied`: the caller's
    /// role does not allow the call).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The caller's token was refused (docs/tenancy.md).
    #[error(transparent)]
    Unauthenticated(#[from] mempalace_core::tenancy::TokenRejection),
    /// The workspace's request rate limit is reached for this minute.
    #[error(
        "workspace {workspace} allows {limit} requests a minute and has used them; retry in {retry_after_s} s, or ask a workspace owner to raise `requests_per_minute`"
    )]
    RateLimited {
        /// The workspace.
        workspace: String,
        /// Its limit.
        limit: u64,
        /// Seconds until the next minute's allowance.
        retry_after_s: u64,
    },
}

impl EngineError {
    /// Whether the caller was refused by tenancy (a role, a private drawer,
    /// an admin-only call) rather than by a bad request or a failure.
    pub fn is_denied(&self) -> bool {
        matches!(self, Self::Store(StoreError::Denied { .. }))
    }
}

fn suggestion_text(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        "; `mempalace graph stats` lists the rooms".to_string()
    } else {
        format!("; did you mean {}?", suggestions.join(", "))
    }
}
