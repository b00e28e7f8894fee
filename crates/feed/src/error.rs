//! What can stop a mining or sync run. Problems with single files never
//! do: they are reported per file and the run goes on.

use std::path::PathBuf;

use mempalace_engine::EngineError;

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub enum FeedError {
    /// The path to mine does not exist.
    #[error("{what} {} does not exist; check the path", path.display())]
    NotFound {
        /// What was looked for ("project folder", "path", "opencode database").
        what: &'static str,
        /// Where.
        path: PathBuf,
    },
    /// The request cannot be done as given; the message says what to do.
    #[error("{0}")]
    Invalid(String),
    /// A folder or database could not be read at all.
    #[error("cannot read {}: {detail}", path.display())]
    Unreadable {
        /// What.
        path: PathBuf,
        /// The cause.
        detail: String,
    },
    /// Nothing could be mined: every file failed or none was of a known format.
    #[error("nothing could be mined: {0}")]
    NothingMined(String),
    /// The palace refused.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl From<mempalace_core::ValidationError> for FeedError {
    fn from(error: mempalace_core::ValidationError) -> Self {
        Self::Engine(error.into())
    }
}

/// A result of this crate.
pub type FeedResult<T> = Result<T, FeedError>;
