//! Codex CLI rollout JSONL (`~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl`):
//! lines `{"timestamp", "type", "payload"}`.
//!
//! The transcript is the `response_item` lines: `message` items of the
//! user (environment and instruction blocks stripped) and the assistant,
//! function and custom tool calls summarised on one line, their outputs
//! trimmed; reasoning, developer/system messages and the `event_msg` UI
//! stream (a copy of the same talk) are left out. The first `session_meta`
//! gives the session id, directory and start.

use serde_json::Value;

use crate::clean::{human_text, tool_call, tool_result};
use crate::{Conversation, Message, Parsed, Role};

/// Parses one file's text.
pub fn parse(text: &str, fallback_id: &str) -> Parsed {
    parse_from(text, fallback_id, 1)
}

/// Parses the lines of a file from line `first_line` (1-based) on: `text`
/// starts at that line, so ids and line numbers match a whole read.
pub fn parse_from(text: &str, fallback_id: &str, first_line: usize) -> Parsed {
    let mut parsed = Parsed::default();
    let mut conversation = Conversation::default();
    let mut title: Option<String> = None;
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record = match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(record)) => record,
            Ok(_) => {
                parsed.skipped += 1;
                continue;
            }
            Err(_) => {
                parsed.skipped += 1;
                parsed.malformed.push(n + first_line);
                continue;
            }
        };
        let payload = record.get("payload").cloned().unwrap_or(Value::Null);
        let timestamp = record.get("timestamp").and_then(Value::as_str).map(str::to_string);
        let number = n + first_line;
        let id = format!("line-{number}");
        match record.get("type").and_then(Value::as_str) {
            Some("session_meta") => {
                if conversation.session_id.is_empty() {
                    conversation.session_id = payload["id"].as_str().unwrap_or_default().to_string();
                    conversation.started_at = payload["timestamp"].as_str().map(str::to_string).or(timestamp);
                }
                if conversation.cwd.is_none() {
                    conversation.cwd = payload["cwd"].as_str().map(str::to_string);
                }
            }
            Some("turn_context") => {
                if conversation.cwd.is_none() {
                    conversation.cwd = payload["cwd"].as_str().map(str::to_string);
                }
            }
            Some("event_msg") if payload["type"] == "thread_name_updated" => {
                title = payload["thread_name"].as_str().or(payload["name"].as_str()).map(str::to_string).or(title);
            }
            Some("response_item") => {
                if let Some(message) = item(&payload, id, timestamp, number) {
                    push(&mut conversation.messages, message);
                } else {
                    parsed.skipped += 1;
                }
            }
            _ => parsed.skipped += 1,
        }
    }
    if conversation.session_id.is_empty() {
        conversation.session_id = fallback_id.to_string();
    }
    let first_prompt = crate::first_prompt(&conversation);
    parsed.titled = title.is_some();
    conversation.title = title.or(first_prompt);
    if !conversation.messages.is_empty() {
        parsed.conversations.push(conversation);
    }
    parsed
}

/// Tool lines join the assistant message before them.
fn push(messages: &mut Vec<Message>, message: Message) {
    if message.text.starts_with('[')
        && message.role == Role::Assistant
        && let Some(last) = messages.last_mut().filter(|m| m.role == Role::Assistant)
    {
        last.text.push('\n');
        last.text.push_str(&message.text);
        return;
    }
    messages.push(message);
}

fn texts(content: &Value) -> String {
    content.as_array().into_iter().flatten().filter_map(|block| block["text"].as_str()).collect::<Vec<_>>().join("\n")
}

fn item(payload: &Value, id: String, timestamp: Option<String>, line: usize) -> Option<Message> {
    let (role, text) = match payload["type"].as_str()? {
        "message" => match payload["role"].as_str()? {
            "user" => (Role::User, human_text(&texts(&payload["content"]))),
            "assistant" => (Role::Assistant, texts(&payload["content"]).trim().to_string()),
            _ => return None,
        },
        "function_call" | "custom_tool_call" => {
            let name = payload["name"].as_str().unwrap_or("tool");
            let input = match (&payload["arguments"], &payload["input"]) {
                (Value::String(args), _) => serde_json::from_str(args).unwrap_or(Value::String(args.clone())),
                (Value::Null, input) => input.clone(),
                (args, _) => args.clone(),
            };
            (Role::Assistant, tool_call(name, &input))
        }
        "local_shell_call" => (Role::Assistant, tool_call("shell", &payload["action"])),
        "function_call_output" | "custom_tool_call_output" => (Role::Assistant, tool_result(&payload["output"])?),
        _ => return None,
    };
    (!text.is_empty()).then_some(Message { role, text, timestamp, id, speaker: None, line })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rollout_reads_as_talk_with_tools_on_one_line() {
        let text = r#"{"timestamp":"2025-01-04T09:00:00Z","type":"session_meta","payload":{"id":"c1","timestamp":"2025-01-04T09:00:00Z","cwd":"/proj"}}
{"timestamp":"2025-01-04T09:00:01Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd</environment_context>"}]}}
{"timestamp":"2025-01-04T09:00:02Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"List the files"}]}}
{"timestamp":"2025-01-04T09:00:03Z","type":"response_item","payload":{"type":"reasoning","summary":[]}}
{"timestamp":"2025-01-04T09:00:04Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Listing."}]}}
{"timestamp":"2025-01-04T09:00:05Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\": \"ls\"}","call_id":"x"}}
{"timestamp":"2025-01-04T09:00:06Z","type":"response_item","payload":{"type":"function_call_output","call_id":"x","output":"README.md"}}
{"timestamp":"2025-01-04T09:00:07Z","type":"event_msg","payload":{"type":"agent_message","message":"Listing."}}"#;
        let parsed = parse(text, "file");
        let c = &parsed.conversations[0];
        assert_eq!(
            (c.session_id.as_str(), c.cwd.as_deref(), c.title.as_deref()),
            ("c1", Some("/proj"), Some("List the files"))
        );
        let texts: Vec<&str> = c.messages.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, vec!["List the files", "Listing.\n[tool: shell command=ls]\n[result: README.md]"]);
    }
}
