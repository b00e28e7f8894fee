//! Validation errors raised when a raw value is parsed into a domain type.
//!
//! Every message names the offending value (or its size), says what is
//! allowed, and where it helps, what to do next. Storage and transport errors
//! do not belong here: they live in `mempalace-store` and the surfaces.

use thiserror::Error;

/// A value a user (or an agent) handed us did not satisfy a domain rule.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ValidationError {
    /// A required text was empty or only whitespace.
    #[error("{what} is empty; {hint}")]
    Empty {
        /// Which value, e.g. "drawer text".
        what: &'static str,
        /// What to do instead.
        hint: &'static str,
    },
    /// A text is longer than its limit (measured in characters, not bytes).
    #[error("{what} is {len} characters; the limit is {max}. {hint}")]
    TooLong {
        /// Which value.
        what: &'static str,
        /// Its length in characters.
        len: usize,
        /// The limit in characters.
        max: usize,
        /// What to do instead.
        hint: &'static str,
    },
    /// A number is outside its allowed range.
    #[error("{what} must be between {min} and {max}, got {value}")]
    OutOfRange {
        /// Which value.
        what: &'static str,
        /// The value given.
        value: f64,
        /// Inclusive lower bound.
        min: f64,
        /// Inclusive upper bound.
        max: f64,
    },
    /// A name (wing, room, hall, agent, workspace) contains characters we do
    /// not accept.
    #[error("{what} {value:?} is not allowed: {reason}")]
    BadName {
        /// Which kind of name.
        what: &'static str,
        /// The name as given.
        value: String,
        /// Why it was refused and what is accepted.
        reason: String,
    },
    /// A value is not one of an enumerated set.
    #[error("{what} {value:?} is not recognised; expected one of: {allowed}")]
    NotOneOf {
        /// Which value.
        what: &'static str,
        /// The value given.
        value: String,
        /// The accepted spellings, comma separated.
        allowed: &'static str,
    },
    /// A date or timestamp could not be parsed, or an interval is inverted.
    #[error("{what}: {reason}")]
    BadTime {
        /// Which value.
        what: &'static str,
        /// The problem, including the value.
        reason: String,
    },
}
