//! The sweeper's reading of a Claude Code session JSONL: every user and
//! assistant message on its own, verbatim, with its session, uuid and
//! timestamp (MemPalace 3.11 `sweeper.parse_claude_jsonl`).
//!
//! Unlike [`crate::claude_code`], which builds exchanges for the miner
//! (tool results trimmed, reminders and wrappers out, one branch), the
//! sweeper keeps every message record as it is: text blocks verbatim,
//! `[tool_use: NAME input=JSON]`, `[tool_result: JSON]` and
//! `[TYPE: JSON]` for other blocks, in full. A record needs `type` and
//! `message.role` of user or assistant, a `timestamp`, a `uuid` and a
//! `sessionId` (or `session_id`); anything else, malformed lines included,
//! is skipped silently, as in Python. JSON is written with Python's
//! separators and ASCII escapes; object keys come out in sorted order
//! (Python keeps the file's order).

use serde_json::Value;

/// One message of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The session (`sessionId`).
    pub session_id: String,
    /// The message's `uuid`.
    pub uuid: String,
    /// Its `timestamp`, as written (ISO 8601; compared as text).
    pub timestamp: String,
    /// `user` or `assistant`.
    pub role: String,
    /// The flattened content.
    pub content: String,
    /// The record's working directory, when it has one.
    pub cwd: Option<String>,
}

/// The messages of a session file's text, in file order.
pub fn parse(text: &str) -> Vec<Message> {
    text.lines().filter_map(|line| message(line.trim())).collect()
}

fn message(line: &str) -> Option<Message> {
    if line.is_empty() {
        return None;
    }
    let record: Value = serde_json::from_str(line).ok()?;
    let kind = record.get("type")?.as_str()?;
    if kind != "user" && kind != "assistant" {
        return None;
    }
    let body = record.get("message")?.as_object()?;
    let role = body.get("role")?.as_str()?;
    if role != "user" && role != "assistant" {
        return None;
    }
    let text_of = |key: &str| record.get(key).and_then(Value::as_str).filter(|v| !v.is_empty()).map(str::to_string);
    let timestamp = text_of("timestamp")?;
    let uuid = text_of("uuid")?;
    let session_id = text_of("sessionId").or_else(|| text_of("session_id"))?;
    let content = flatten(body.get("content").unwrap_or(&Value::String(String::new())));
    if content.trim().is_empty() {
        return None;
    }
    Some(Message { session_id, uuid, timestamp, role: role.to_string(), content, cwd: text_of("cwd") })
}

/// A message's content as one text: blocks joined by newlines.
fn flatten(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(Value::as_object)
            .map(|block| {
                let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
                match kind {
                    "text" => block.get("text").map_or(String::new(), |text| match text {
                        Value::String(text) => text.clone(),
                        other => python_str(other),
                    }),
                    "tool_use" => format!(
                        "[tool_use: {} input={}]",
                        block.get("name").map_or("?".to_string(), python_str),
                        python_json(block.get("input").unwrap_or(&Value::Object(serde_json::Map::new())))
                    ),
                    "tool_result" => format!(
                        "[tool_result: {}]",
                        python_json(block.get("content").unwrap_or(&Value::String(String::new())))
                    ),
                    other => format!("[{other}: {}]", python_json(&Value::Object(block.clone()))),
                }
            })
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join("\n"),
        other => python_str(other),
    }
}

/// A value as Python's `str()` shows it in an f-string (strings bare).
fn python_str(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => python_json(other),
    }
}

/// `json.dumps(value)` with Python's defaults: `", "` and `": "`
/// separators, non-ASCII as `\uXXXX`.
pub fn python_json(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

fn write_json(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(flag) => out.push_str(if *flag { "true" } else { "false" }),
        Value::Number(number) => out.push_str(&number.to_string()),
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_json(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (index, (key, item)) in map.iter().enumerate() {
                if index > 0 {
                    out.push_str(", ");
                }
                write_string(key, out);
                out.push_str(": ");
                write_json(item, out);
            }
            out.push('}');
        }
    }
}

fn write_string(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut units = [0_u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn messages_keep_every_block_verbatim_and_skip_what_is_not_a_message() {
        let text = [
            r#"{"type":"user","uuid":"u1","sessionId":"s1","timestamp":"2026-01-01T10:00:00Z","cwd":"/home/me/acme","message":{"role":"user","content":"Fix the login bug"}}"#,
            r#"{"type":"assistant","uuid":"a1","sessionId":"s1","timestamp":"2026-01-01T10:00:05Z","message":{"role":"assistant","content":[{"type":"text","text":"Looking."},{"type":"tool_use","name":"Read","input":{"file_path":"/a/é.rs"}},{"type":"thinking","thinking":"hm"}]}}"#,
            r#"{"type":"user","uuid":"u2","session_id":"s1","timestamp":"2026-01-01T10:00:06Z","message":{"role":"user","content":[{"type":"tool_result","content":"ok"}]}}"#,
            r#"{"type":"summary","uuid":"x","sessionId":"s1","timestamp":"t","message":{"role":"user","content":"no"}}"#,
            r#"{"type":"user","sessionId":"s1","timestamp":"t","message":{"role":"user","content":"no uuid"}}"#,
            r#"{"type":"user","uuid":"e","sessionId":"s1","timestamp":"t","message":{"role":"user","content":"   "}}"#,
            "not json",
            "",
        ]
        .join("\n");
        let messages = parse(&text);
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert_eq!(messages[0].content, "Fix the login bug");
        assert_eq!(messages[0].cwd.as_deref(), Some("/home/me/acme"));
        assert_eq!(
            messages[1].content,
            "Looking.\n[tool_use: Read input={\"file_path\": \"/a/\\u00e9.rs\"}]\n[thinking: {\"thinking\": \"hm\", \"type\": \"thinking\"}]"
        );
        assert_eq!(messages[2].content, "[tool_result: \"ok\"]");
        assert_eq!((messages[2].session_id.as_str(), messages[2].role.as_str()), ("s1", "user"));
    }

    #[test]
    fn json_is_written_as_python_writes_it() {
        let value: Value = serde_json::from_str(r#"{"b": [1, 2.5, null, true], "a": "x\"\n😀"}"#).unwrap();
        assert_eq!(python_json(&value), r#"{"a": "x\"\n\ud83d\ude00", "b": [1, 2.5, null, true]}"#);
    }

    proptest! {
        #[test]
        fn parsing_never_panics(text in "\\PC{0,400}") {
            let _ = parse(&text);
        }
    }
}
