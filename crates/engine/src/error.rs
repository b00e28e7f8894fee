//! Errors of engine operations.
//!
//! Input the caller can fix (`Invalid`, `NotFound`) stays apart from
//! storage conditions, which keep their own classification (`StoreError`).

use mempalace_core::ValidationError;
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
    /// A capability the call needs is not configured or not working.
    #[error("{0}")]
    Unavailable(String),
    /// The store refused or failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}
