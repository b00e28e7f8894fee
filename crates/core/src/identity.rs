//! The L0 identity text of a workspace (SPEC §2, seed 0 §5 "L0").
//!
//! One text per workspace, at most 2,000 characters. Rendering it into the
//! wake-up context (the 400-character L0 budget) belongs to the engine.

use crate::error::ValidationError;

/// Identity text: non-empty, at most [`Identity::MAX_CHARS`] characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity(String);

impl Identity {
    /// Longest identity text (seed 0 §6 "Identity (L0) length").
    pub const MAX_CHARS: usize = 2_000;

    /// Checks and wraps an identity text, trimming surrounding whitespace.
    pub fn parse(text: impl Into<String>) -> Result<Self, ValidationError> {
        let text = text.into();
        let text = text.trim();
        if text.is_empty() {
            return Err(ValidationError::Empty {
                what: "identity text",
                hint: "pass the text as an argument, or `-` to read it from stdin",
            });
        }
        let len = text.chars().count();
        if len > Self::MAX_CHARS {
            return Err(ValidationError::TooLong {
                what: "identity text",
                len,
                max: Self::MAX_CHARS,
                hint: "Keep the identity to who the agent is and what it cares about; file details as drawers.",
            });
        }
        Ok(Self(text.to_string()))
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_is_trimmed_and_bounded() {
        assert_eq!(Identity::parse("  I am Atlas.\n").unwrap().as_str(), "I am Atlas.");
        assert!(Identity::parse(" ").is_err());
        assert!(Identity::parse("x".repeat(2_000)).is_ok());
        assert!(Identity::parse("x".repeat(2_001)).is_err());
    }
}
