//! Names of places in the palace (wing, room, hall) and of agents.
//!
//! The rule is the Python MemPalace's `sanitize_name`, so names that worked
//! there work here and agent instructions stay valid: 1–128 characters after
//! trimming, a letter or digit at both ends, and in between only letters,
//! digits, `_`, space, `.`, `'` and `-`; never `..`, `/`, `\` or NUL. A name
//! is stored exactly as accepted (trimmed); [`normalize_wing_name`] is the
//! separate rule that turns a directory name into a default wing.

use std::fmt;

use crate::error::ValidationError;

/// Longest name (MemPalace `MAX_NAME_LENGTH`).
pub const MAX_NAME_CHARS: usize = 128;

fn check_name(what: &'static str, raw: &str) -> Result<String, ValidationError> {
    let name = raw.trim();
    let refuse = |reason: &str| ValidationError::BadName { what, value: raw.to_string(), reason: reason.to_string() };
    if name.is_empty() {
        return Err(refuse("it is empty; give a short name such as \"project\" or \"decisions\""));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(refuse("it is longer than 128 characters"));
    }
    if name.contains('\0') {
        return Err(refuse("it contains a NUL byte"));
    }
    if name.contains("..") || name.contains('/') || name.contains('\\') {
        return Err(refuse("it contains a path character (`/`, `\\` or `..`)"));
    }
    let first = name.chars().next().expect("name is not empty");
    let last = name.chars().next_back().expect("name is not empty");
    if !first.is_alphanumeric() || !last.is_alphanumeric() {
        return Err(refuse("it must start and end with a letter or digit"));
    }
    if let Some(bad) = name.chars().find(|c| !(c.is_alphanumeric() || matches!(c, '_' | ' ' | '.' | '\'' | '-'))) {
        return Err(refuse(&format!("{bad:?} is not allowed; use letters, digits, `_`, space, `.`, `'` and `-`")));
    }
    Ok(name.to_string())
}

macro_rules! place_name {
    ($(#[$meta:meta])* $name:ident, $what:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(String);

        impl $name {
            /// Checks and wraps a name (see the module rule).
            pub fn parse(raw: &str) -> Result<Self, ValidationError> {
                check_name($what, raw).map(Self)
            }

            /// The name.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

place_name! {
    /// The broadest category of the palace, like a department or a project.
    Wing, "wing"
}

place_name! {
    /// A topic within a wing.
    Room, "room"
}

place_name! {
    /// An optional finer grouping within a room; for diaries, the agent.
    Hall, "hall"
}

place_name! {
    /// The name of an agent (diary owner, `added_by`).
    AgentName, "agent name"
}

/// Turns a directory or project name into a default wing name, as the
/// Python MemPalace does: lowercased, spaces and `-` become `_`, leading and
/// trailing `_` dropped. The result still has to pass [`Wing::parse`].
pub fn normalize_wing_name(name: &str) -> String {
    name.trim().to_lowercase().replace([' ', '-'], "_").trim_matches('_').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn accepts_mempalace_style_names() {
        for ok in ["project", "daaain__claude-code-log", "wing_atlas", "Q4 plans", "v1.2", "O'Brien", "数据库"] {
            assert_eq!(Wing::parse(ok).unwrap().as_str(), ok);
        }
        assert_eq!(Room::parse("  general ").unwrap().as_str(), "general");
    }

    #[test]
    fn refuses_odd_names_with_a_reason() {
        for bad in ["", "   ", "_leading", "trailing-", "a/b", "a..b", "a\\b", "semi;colon", "tab\there", "x\0y"] {
            let err = Wing::parse(bad).unwrap_err();
            assert!(matches!(err, ValidationError::BadName { .. }), "{bad:?}");
            assert!(err.to_string().starts_with("wing "), "{err}");
        }
        assert!(Room::parse(&"r".repeat(129)).is_err());
        assert!(Room::parse(&"r".repeat(128)).is_ok());
    }

    #[test]
    fn directory_names_normalise_to_wings() {
        assert_eq!(normalize_wing_name("My Project"), "my_project");
        assert_eq!(normalize_wing_name("claude-code-log"), "claude_code_log");
        assert_eq!(normalize_wing_name("-lab-notes-"), "lab_notes");
    }

    proptest! {
        #[test]
        fn parse_never_panics_and_accepted_names_reparse(raw in ".{0,160}") {
            if let Ok(wing) = Wing::parse(&raw) {
                prop_assert_eq!(Wing::parse(wing.as_str()).unwrap(), wing);
            }
        }
    }
}
