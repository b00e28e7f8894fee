//! A credential that never shows in `Debug` output, logs or error messages:
//! the API keys of remote embedding endpoints and language models.

use std::fmt;

/// A credential (an API key). `Debug` prints `Secret(***)`; the value is
/// reached only through [`Secret::expose`], at the one place that sends it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// `text` with every occurrence of the secret replaced by `***`, for
    /// messages that quote what a server answered (some servers echo the key).
    pub fn redact(&self, text: &str) -> String {
        if self.0.is_empty() { text.to_string() } else { text.replace(&self.0, "***") }
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_secret_stays_out_of_debug_output_and_redacted_text() {
        let secret = Secret::new("sk-very-secret");
        assert_eq!(format!("{secret:?}"), "Secret(***)");
        assert_eq!(secret.expose(), "sk-very-secret");
        assert_eq!(secret.redact("bad key sk-very-secret given"), "bad key *** given");
        assert_eq!(Secret::new("").redact("text"), "text");
    }
}
