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
//! Codex CLI rollout JSONL, Gemini CLI chats (JSON and JSONL), ChatGPT and
//! Claude.ai `conversations.json`, plain text with `>` user lines. Parsing
//! is pure: no I/O here, except `opencode`, which reads opencode's SQLite
//! database (read-only).

pub mod bundle;
pub mod claude_code;
mod clean;
pub mod codex;
pub mod cursor;
pub mod documents;
pub mod html;
pub mod opencode;
pub mod project;
pub mod slack;
pub mod sweep;

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
    /// The author's name when there are more than two voices (Slack);
    /// otherwise the role names the speaker.
    pub speaker: Option<String>,
    /// The line (1-based) of a line-per-record transcript where the
    /// message starts; 0 in other formats.
    pub line: usize,
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
    /// Whether a record named the conversation (a user-set or generated
    /// title), as opposed to a title taken from the first prompt.
    pub titled: bool,
    /// Claude Code: every record with a `uuid`, in file order, with its
    /// parent (empty for other formats).
    pub links: Vec<Link>,
}

/// A record's place in a Claude Code conversation tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Its line (1-based).
    pub line: usize,
    /// Its `uuid`.
    pub uuid: String,
    /// `parentUuid`, else `logicalParentUuid` (across a compaction); `None`
    /// at a root.
    pub parent: Option<String>,
}

/// Transcript formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Claude Code session JSONL.
    ClaudeCode,
    /// Codex CLI rollout JSONL.
    Codex,
    /// Gemini CLI chat (`.json` or `.jsonl`).
    Gemini,
    /// ChatGPT export `conversations.json`.
    ChatGpt,
    /// Claude.ai export `conversations.json`.
    ClaudeAi,
    /// Google Takeout's Gemini Apps activity (`MyActivity.json`).
    GeminiApps,
    /// Plain text, `>` before the user's lines.
    PlainText,
}

impl Format {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::Gemini => "gemini",
            Self::ChatGpt => "chatgpt",
            Self::ClaudeAi => "claude-ai",
            Self::GeminiApps => "gemini-apps",
            Self::PlainText => "text",
        }
    }
}

/// Recognises a transcript from its content; `None` when it is none of the
/// JSON formats (plain text is recognised by [`detect_plain_text`]).
pub fn detect(text: &str) -> Option<Format> {
    let start = text.trim_start();
    let whole_document = start.starts_with('[')
        || start.starts_with('{') && !start.lines().nth(1).is_some_and(|l| l.trim_start().starts_with('{'));
    if whole_document && let Ok(document) = serde_json::from_str::<serde_json::Value>(start) {
        let first = match &document {
            serde_json::Value::Array(items) => items.first().cloned().unwrap_or_default(),
            other => other.clone(),
        };
        if first.get("loglines").is_some() {
            return Some(Format::ClaudeCode);
        }
        if first.get("mapping").is_some() {
            return Some(Format::ChatGpt);
        }
        if first.get("chat_messages").is_some() {
            return Some(Format::ClaudeAi);
        }
        if documents::is_gemini_activity(&first) {
            return Some(Format::GeminiApps);
        }
        if first.get("sessionId").is_some() && (first.get("messages").is_some() || first.get("history").is_some()) {
            return Some(Format::Gemini);
        }
        if document.is_array() {
            return None;
        }
    }
    for line in text.lines().take(50) {
        let Ok(serde_json::Value::Object(record)) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let kind = record.get("type").and_then(|t| t.as_str());
        if record.contains_key("payload")
            && matches!(kind, Some("session_meta" | "response_item" | "event_msg" | "turn_context"))
        {
            return Some(Format::Codex);
        }
        if record.contains_key("message") && kind.is_some() {
            return Some(Format::ClaudeCode);
        }
        if record.contains_key("sessionId") && (record.contains_key("projectHash") || record.contains_key("startTime"))
        {
            return Some(Format::Gemini);
        }
        if matches!(kind, Some("gemini")) {
            return Some(Format::Gemini);
        }
    }
    None
}

/// Whether a text looks like a plain-text transcript: some line starts
/// with `>` and some does not.
pub fn detect_plain_text(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines.iter().any(|l| l.starts_with('>')) && lines.iter().any(|l| !l.starts_with('>'))
}

/// Whether a transcript is one record per line, appended to as the
/// session goes on (Claude Code session JSONL, Codex rollouts), so that it
/// can be read from a line on ([`parse_from`]).
pub fn line_per_record(format: Format, text: &str) -> bool {
    match format {
        Format::ClaudeCode => !claude_code::is_export(text),
        Format::Codex => true,
        _ => false,
    }
}

/// Parses the lines of a [`line_per_record`] transcript from line
/// `first_line` (1-based) on: `text` starts at that line. `None` for
/// formats that must be read whole.
pub fn parse_from(format: Format, text: &str, fallback_id: &str, first_line: usize) -> Option<Parsed> {
    match format {
        Format::ClaudeCode => Some(claude_code::parse_from(text, fallback_id, first_line)),
        Format::Codex => Some(codex::parse_from(text, fallback_id, first_line)),
        _ => None,
    }
}

/// Parses a transcript of a known format; `fallback_id` names sessions
/// that carry no id (the file stem).
pub fn parse(format: Format, text: &str, fallback_id: &str) -> Parsed {
    let document = || serde_json::from_str::<serde_json::Value>(text.trim_start());
    match format {
        Format::ClaudeCode => claude_code::parse(text, fallback_id),
        Format::Codex => codex::parse(text, fallback_id),
        Format::Gemini => documents::gemini(text, fallback_id),
        Format::ChatGpt | Format::ClaudeAi | Format::GeminiApps => match document() {
            Ok(document) if format == Format::ChatGpt => documents::chatgpt(&document, fallback_id),
            Ok(document) if format == Format::GeminiApps => documents::gemini_apps(&document, fallback_id),
            Ok(document) => documents::claude_ai(&document, fallback_id),
            Err(_) => Parsed { skipped: 1, malformed: vec![1], ..Parsed::default() },
        },
        Format::PlainText => documents::plain_text(text, fallback_id),
    }
}

/// Longest title taken from a first prompt.
const TITLE_CHARS: usize = 80;

/// The first line of the first human message, as a fallback title.
pub(crate) fn first_prompt(conversation: &Conversation) -> Option<String> {
    conversation
        .messages
        .iter()
        .find(|m| m.role == Role::User)
        .map(|m| m.text.lines().next().unwrap_or("").chars().take(TITLE_CHARS).collect::<String>())
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
        let speaker = message.speaker.as_deref().unwrap_or(message.role.speaker());
        match turns.last_mut() {
            Some(last) if last.speaker == speaker => {
                last.text.push('\n');
                last.text.push_str(&message.text);
            }
            _ => turns.push(Turn { speaker: speaker.to_string(), text: message.text.clone(), id: message.id.clone() }),
        }
    }
    exchanges(&turns)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Claude Code session of alternating-or-not messages in one chain.
    fn session(messages: &[(bool, String)]) -> Vec<String> {
        let mut parent = serde_json::Value::Null;
        messages
            .iter()
            .enumerate()
            .map(|(n, (user, text))| {
                let (kind, content) = if *user {
                    ("user", serde_json::json!(text))
                } else {
                    ("assistant", serde_json::json!([{"type": "text", "text": text}]))
                };
                let uuid = format!("r{n}");
                let line = serde_json::json!({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": "s",
                    "message": {"id": format!("m{n}"), "role": kind, "content": content}});
                parent = serde_json::json!(uuid);
                line.to_string()
            })
            .collect()
    }

    proptest::proptest! {
        /// The premise of the tail cursor: for a transcript read up to some
        /// line and appended to since, the units of the whole are the units
        /// before the last exchange of the first read, followed by the units
        /// of a read from that exchange's first line.
        #[test]
        fn reading_from_the_last_exchange_equals_reading_whole(
            messages in proptest::collection::vec((proptest::bool::ANY, "[a-z]{1,12}( [a-z]{1,12}){0,60}"), 1..24),
            cut in 1usize..24,
        ) {
            let lines = session(&messages);
            let cut = cut.min(lines.len());
            let first = lines[..cut].join("\n") + "\n";
            let whole = lines.join("\n") + "\n";
            let read = parse(Format::ClaudeCode, &first, "s");
            let Some(conversation) = read.conversations.first() else { return Ok(()) };
            let before = units(conversation);
            let last = before.last().unwrap().turn_ids[0].clone();
            let keep = before.iter().position(|u| u.turn_ids[0] == last).unwrap();
            let line = conversation.messages.iter().find(|m| m.id == last).unwrap().line;
            let offset = cursor::line_start(&whole, line).unwrap();
            let tail = parse_from(Format::ClaudeCode, &whole[offset..], "s", line).unwrap();
            let mut joined = before[..keep].to_vec();
            joined.extend(units(&tail.conversations[0]));
            proptest::prop_assert_eq!(joined, units(&parse(Format::ClaudeCode, &whole, "s").conversations[0]));
        }
    }

    #[test]
    fn parallel_tool_results_are_not_branches_but_edited_prompts_are() {
        let line = |kind: &str, uuid: &str, parent: Option<&str>, content: serde_json::Value| {
            serde_json::json!({"type": kind, "uuid": uuid, "parentUuid": parent,
                "message": {"id": format!("m-{uuid}"), "role": kind, "content": content}})
            .to_string()
        };
        let tool =
            |id: &str| serde_json::json!([{"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": id}}]);
        let result = |id: &str| serde_json::json!([{"type": "tool_result", "tool_use_id": id, "content": "ok"}]);
        // Two tool results answering one assistant line: a fork of records,
        // not of prompts; everything stays.
        let text = [
            line("user", "u1", None, serde_json::json!("Read both files")),
            line("assistant", "a1", Some("u1"), tool("t1")),
            line("assistant", "a2", Some("a1"), tool("t2")),
            line("user", "r1", Some("a1"), result("t1")),
            line("user", "r2", Some("a2"), result("t2")),
            line("assistant", "a3", Some("r2"), serde_json::json!([{"type": "text", "text": "Both read."}])),
        ]
        .join("\n");
        let parsed = parse(Format::ClaudeCode, &text, "s");
        assert_eq!(parsed.conversations[0].messages.len(), 4, "{:?}", parsed.conversations[0].messages);
        assert_eq!(parsed.skipped, 0);
        // Two prompts without a shared parent (two roots): not a branch.
        let session = |root: Option<&str>| {
            [
                line("user", "u1", root, serde_json::json!("Use QuickSort")),
                line("assistant", "a1", Some("u1"), serde_json::json!([{"type": "text", "text": "QuickSort it is."}])),
                line("user", "u2", root, serde_json::json!("Use MergeSort")),
                line("assistant", "a2", Some("u2"), serde_json::json!([{"type": "text", "text": "MergeSort it is."}])),
            ]
            .join("\n")
        };
        let parsed = parse(Format::ClaudeCode, &session(None), "s");
        let texts: Vec<&str> = parsed.conversations[0].messages.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, vec!["Use QuickSort", "QuickSort it is.", "Use MergeSort", "MergeSort it is."]);
        // The second prompt edits the first (same parent): the first version's exchange is dropped.
        let parsed = parse(Format::ClaudeCode, &session(Some("p0")), "s");
        let texts: Vec<&str> = parsed.conversations[0].messages.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, vec!["Use MergeSort", "MergeSort it is."]);
        assert_eq!(parsed.conversations[0].title.as_deref(), Some("Use MergeSort"));
    }

    proptest::proptest! {
        /// Any text (JSON-ish or not) parses without panicking, in both
        /// formats, and its units stay within a drawer.
        #[test]
        fn any_text_parses(text in "(\\{\"type\":\"(user|assistant|response_item|session_meta)\",\"message\":\\{\"content\":\"[^\"]{0,40}\"\\},\"payload\":\\{\"type\":\"message\",\"role\":\"user\"\\}\\}\n|\\PC{0,80}\n){0,12}") {
            for format in [Format::ClaudeCode, Format::Codex, Format::Gemini, Format::ChatGpt, Format::ClaudeAi, Format::PlainText] {
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
