//! Reading agent transcripts into conversations.
//!
//! A parser turns one file's text into [`Conversation`]s — human and
//! assistant messages in order, tool calls summarised on one line, tool
//! results trimmed, CLI wrappers and injected reminders stripped — and
//! counts what it skipped; it never fails a whole file for one bad record.
//! [`units`] turns a conversation into the drawers the miner files: a
//! header (title, directory, date) and its exchanges (`core::exchange`).
//!
//! Formats: Claude Code session JSONL (and its `{"loglines": …}` export),
//! Codex CLI rollout JSONL. Parsing is pure: no I/O here.

pub mod claude_code;
mod clean;
pub mod codex;

use mempalace_core::exchange::{Exchange, Turn, exchanges};

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The human.
    User,
    /// The agent.
    Assistant,
}

impl Role {
    /// The speaker name written in drawers.
    pub fn speaker(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// One message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// Its text, cleaned.
    pub text: String,
    /// When (RFC 3339 text, as the transcript gives it).
    pub timestamp: Option<String>,
    /// Its id in the transcript (uuid, line number).
    pub id: String,
}

/// One conversation.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conversation {
    /// Session id.
    pub session_id: String,
    /// Title (user-set, generated, or the first prompt).
    pub title: Option<String>,
    /// Working directory.
    pub cwd: Option<String>,
    /// When it started.
    pub started_at: Option<String>,
    /// Messages in order.
    pub messages: Vec<Message>,
}

/// What a parser read from one file.
#[derive(Debug, Clone, Default)]
pub struct Parsed {
    /// Conversations found.
    pub conversations: Vec<Conversation>,
    /// Records skipped (unknown, malformed, not part of the visible talk).
    pub skipped: usize,
    /// Malformed records (a subset of `skipped`), with their line numbers.
    pub malformed: Vec<usize>,
}

/// Transcript formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Claude Code session JSONL.
    ClaudeCode,
    /// Codex CLI rollout JSONL.
    Codex,
}

impl Format {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
        }
    }
}

/// Recognises a transcript from its first records; `None` when it is
/// neither format.
pub fn detect(text: &str) -> Option<Format> {
    if text.trim_start().starts_with("{\"loglines\"") {
        return Some(Format::ClaudeCode);
    }
    for line in text.lines().take(50) {
        let Ok(serde_json::Value::Object(record)) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        if record.contains_key("payload")
            && matches!(
                record.get("type").and_then(|t| t.as_str()),
                Some("session_meta" | "response_item" | "event_msg" | "turn_context")
            )
        {
            return Some(Format::Codex);
        }
        if record.contains_key("message") && record.contains_key("type") {
            return Some(Format::ClaudeCode);
        }
    }
    None
}

/// Parses a transcript of a known format; `fallback_id` names sessions
/// that carry no id (the file stem).
pub fn parse(format: Format, text: &str, fallback_id: &str) -> Parsed {
    match format {
        Format::ClaudeCode => claude_code::parse(text, fallback_id),
        Format::Codex => codex::parse(text, fallback_id),
    }
}

/// The synthetic header that makes title, directory and date searchable.
pub fn header(conversation: &Conversation) -> String {
    let mut lines = vec![format!("Conversation: {}", conversation.title.as_deref().unwrap_or("(untitled)"))];
    if let Some(cwd) = &conversation.cwd {
        lines.push(format!("Project directory: {cwd}"));
    }
    if let Some(started) = &conversation.started_at {
        lines.push(format!("Date: {}", started.get(..10).unwrap_or(started)));
    }
    lines.push(format!("Session: {}", conversation.session_id));
    lines.join("\n")
}

/// The drawer texts of a conversation: consecutive messages of one role
/// are joined into one turn; turns pair into exchanges (user turn + reply,
/// split at 800 characters). Each unit names the message ids it holds.
pub fn units(conversation: &Conversation) -> Vec<Exchange> {
    let mut turns: Vec<Turn> = Vec::new();
    for message in &conversation.messages {
        match turns.last_mut() {
            Some(last) if last.speaker == message.role.speaker() => {
                last.text.push('\n');
                last.text.push_str(&message.text);
            }
            _ => turns.push(Turn {
                speaker: message.role.speaker().to_string(),
                text: message.text.clone(),
                id: message.id.clone(),
            }),
        }
    }
    exchanges(&turns)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Any text (JSON-ish or not) parses without panicking, in both
        /// formats, and its units stay within a drawer.
        #[test]
        fn any_text_parses(text in "(\\{\"type\":\"(user|assistant|response_item|session_meta)\",\"message\":\\{\"content\":\"[^\"]{0,40}\"\\},\"payload\":\\{\"type\":\"message\",\"role\":\"user\"\\}\\}\n|\\PC{0,80}\n){0,12}") {
            for format in [Format::ClaudeCode, Format::Codex] {
                for conversation in parse(format, &text, "f").conversations {
                    for unit in units(&conversation) {
                        proptest::prop_assert!(unit.text.chars().count() <= mempalace_core::chunk::CHUNK_SIZE);
                    }
                }
            }
            let _ = detect(&text);
        }
    }
}
