//! Chat exports that are one JSON document: ChatGPT's and Claude.ai's
//! `conversations.json` (an array of conversations, or one conversation)
//! and Gemini CLI chat files (legacy `.json` and current `.jsonl`).
//!
//! * ChatGPT — the visible branch: from `current_node` (else the newest
//!   leaf) up through `parent` links, reversed; system, hidden and
//!   `user_editable_context` messages and reasoning (`thoughts`,
//!   `reasoning_recap`) skipped; assistant messages to a
//!   tool are summarised on one line, tool messages trimmed.
//! * Claude.ai — `chat_messages` in order; `text` blocks of `content`
//!   (the flattened `text` only when there are no blocks: in new exports
//!   it mixes thinking and answer); tool use on one line, tool results
//!   trimmed; MemPalace's lenient `role`/`content` shape accepted.
//! * Gemini — `user` and `gemini` (or `model`) messages; the JSONL form
//!   rewrites a message by id (last write wins, first position kept),
//!   `$rewindTo` drops a message and all after it, a `$set` with
//!   `messages` replaces them.

use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::clean::{human_text, tool_call, tool_result};
use crate::{Conversation, Message, Parsed, Role};

fn items(document: &Value) -> Vec<&Value> {
    match document {
        Value::Array(items) => items.iter().collect(),
        other => vec![other],
    }
}

fn finish(mut conversation: Conversation, title: Option<String>, parsed: &mut Parsed) {
    let first_prompt = crate::first_prompt(&conversation);
    conversation.title = title.filter(|t| !t.trim().is_empty()).or(first_prompt);
    if conversation.messages.is_empty() {
        parsed.skipped += 1;
    } else {
        parsed.conversations.push(conversation);
    }
}

fn epoch(value: &Value) -> Option<String> {
    let seconds = value.as_f64()?;
    mempalace_core::time::timestamp_from_unix(seconds).map(|t| mempalace_core::time::format_timestamp(&t))
}

/// ChatGPT `conversations.json`.
pub fn chatgpt(document: &Value, fallback_id: &str) -> Parsed {
    let mut parsed = Parsed::default();
    for (index, item) in items(document).into_iter().enumerate() {
        let Some(mapping) = item["mapping"].as_object() else {
            parsed.skipped += 1;
            continue;
        };
        let id = item["conversation_id"]
            .as_str()
            .or(item["id"].as_str())
            .map_or_else(|| format!("{fallback_id}-{}", index + 1), str::to_string);
        let leaf =
            item["current_node"].as_str().filter(|n| mapping.contains_key(*n)).map(str::to_string).or_else(|| {
                mapping
                    .iter()
                    .filter(|(_, node)| node["children"].as_array().is_none_or(Vec::is_empty))
                    .max_by(|a, b| {
                        a.1["message"]["create_time"]
                            .as_f64()
                            .unwrap_or(0.0)
                            .total_cmp(&b.1["message"]["create_time"].as_f64().unwrap_or(0.0))
                    })
                    .map(|(id, _)| id.clone())
            });
        let mut chain = Vec::new();
        let mut cursor = leaf;
        while let Some(node_id) = cursor {
            if chain.len() > mapping.len() {
                break; // a cycle: stop rather than loop
            }
            let Some(node) = mapping.get(&node_id) else { break };
            chain.push(node);
            cursor = node["parent"].as_str().map(str::to_string);
        }
        chain.reverse();
        let created = epoch(&item["create_time"]);
        let mut conversation = Conversation { session_id: id, started_at: created.clone(), ..Conversation::default() };
        for node in chain {
            let message = &node["message"];
            if message.is_null() {
                continue;
            }
            let hidden = message["weight"].as_f64() == Some(0.0)
                || message["metadata"]["is_visually_hidden_from_conversation"].as_bool() == Some(true);
            let content = &message["content"];
            let kind = content["content_type"].as_str().unwrap_or("text");
            // Reasoning (`thoughts`, `reasoning_recap`) is the model's
            // scratch work, not what was said: never filed.
            if hidden || matches!(kind, "user_editable_context" | "thoughts" | "reasoning_recap") {
                continue;
            }
            let parts = || -> String {
                match (&content["parts"], &content["text"]) {
                    (Value::Array(parts), _) => parts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n"),
                    (_, Value::String(text)) => text.clone(),
                    _ => content.as_str().unwrap_or_default().to_string(),
                }
            };
            let role = message["author"]["role"].as_str().or(message["role"].as_str()).unwrap_or("");
            let recipient = message["recipient"].as_str().unwrap_or("all");
            let text = match role {
                "user" => Some((Role::User, human_text(&parts()))),
                "assistant" if recipient == "all" => Some((Role::Assistant, parts().trim().to_string())),
                "assistant" => Some((Role::Assistant, tool_call(recipient, &Value::String(parts())))),
                "tool" => tool_result(&Value::String(parts())).map(|t| (Role::Assistant, t)),
                _ => None,
            };
            if let Some((role, text)) = text.filter(|(_, t)| !t.is_empty()) {
                conversation.messages.push(Message {
                    role,
                    text,
                    timestamp: epoch(&message["create_time"]).or_else(|| created.clone()),
                    id: message["id"].as_str().or(node["id"].as_str()).unwrap_or_default().to_string(),
                    speaker: None,
                    line: 0,
                });
            }
        }
        let title = item["title"].as_str().map(str::to_string);
        finish(conversation, title, &mut parsed);
    }
    parsed
}

/// Claude.ai `conversations.json`.
pub fn claude_ai(document: &Value, fallback_id: &str) -> Parsed {
    let mut parsed = Parsed::default();
    for (index, item) in items(document).into_iter().enumerate() {
        let Some(messages) = item["chat_messages"].as_array() else {
            parsed.skipped += 1;
            continue;
        };
        let id = item["uuid"].as_str().map_or_else(|| format!("{fallback_id}-{}", index + 1), str::to_string);
        let mut conversation = Conversation {
            session_id: id,
            started_at: item["created_at"].as_str().map(str::to_string),
            ..Conversation::default()
        };
        for (n, message) in messages.iter().enumerate() {
            let sender = message["sender"].as_str().or(message["role"].as_str()).unwrap_or("");
            let role = match sender {
                "human" | "user" => Role::User,
                "assistant" => Role::Assistant,
                _ => continue,
            };
            let mut parts = Vec::new();
            match &message["content"] {
                Value::Array(blocks) if !blocks.is_empty() => {
                    for block in blocks {
                        match block["type"].as_str() {
                            Some("text") => parts.extend(block["text"].as_str().map(str::to_string)),
                            Some("tool_use") => {
                                parts.push(tool_call(block["name"].as_str().unwrap_or("tool"), &block["input"]));
                            }
                            Some("tool_result") => parts.extend(tool_result(&block["content"])),
                            _ => {}
                        }
                    }
                }
                Value::String(text) => parts.push(text.clone()),
                _ => parts.extend(message["text"].as_str().map(str::to_string)),
            }
            let joined = parts.join("\n");
            let text = if role == Role::User { human_text(&joined) } else { joined.trim().to_string() };
            if text.is_empty() {
                continue;
            }
            conversation.messages.push(Message {
                role,
                text,
                timestamp: message["created_at"].as_str().map(str::to_string),
                id: message["uuid"].as_str().map_or_else(|| format!("m{}", n + 1), str::to_string),
                speaker: None,
                line: 0,
            });
        }
        let title = item["name"].as_str().or(item["summary"].as_str()).map(str::to_string);
        finish(conversation, title, &mut parsed);
    }
    parsed
}

/// Whether a Google Takeout "My Activity" record is Gemini Apps activity.
pub fn is_gemini_activity(record: &Value) -> bool {
    let product = |value: &Value| value.as_str().is_some_and(|p| p.starts_with("Gemini"));
    record.get("time").is_some()
        && record.get("title").is_some()
        && (record.get("header").is_some_and(product)
            || record["products"].as_array().is_some_and(|products| products.iter().any(product)))
}

/// Google Takeout's Gemini Apps activity (`My Activity/Gemini Apps/
/// MyActivity.json`): one record per prompt, newest first, the prompt in
/// `title` after `Prompted `, the answer as HTML in `safeHtmlItem` (the
/// last one when it was regenerated). Takeout records no conversations,
/// so each UTC day's prompts form one, in time order; other activity
/// (feedback, drafts chosen, canvases) is skipped.
pub fn gemini_apps(document: &Value, fallback_id: &str) -> Parsed {
    let mut parsed = Parsed::default();
    let mut prompts: Vec<(String, String, Option<String>, usize)> = Vec::new();
    for (index, record) in items(document).into_iter().enumerate() {
        let prompt = record["title"].as_str().and_then(|t| t.strip_prefix("Prompted ")).map(str::trim);
        let (Some(prompt), Some(time)) = (prompt.filter(|p| !p.is_empty()), record["time"].as_str()) else {
            parsed.skipped += 1;
            continue;
        };
        let answer = record["safeHtmlItem"]
            .as_array()
            .and_then(|answers| answers.iter().rev().find_map(|a| a["html"].as_str()))
            .map(crate::html::html_text)
            .filter(|a| !a.is_empty());
        prompts.push((time.to_string(), human_text(prompt), answer, index));
    }
    prompts.sort_by(|a, b| a.0.cmp(&b.0).then(b.3.cmp(&a.3)));
    let mut days: Vec<Conversation> = Vec::new();
    for (time, prompt, answer, index) in prompts {
        let day = time.get(..10).unwrap_or(&time).to_string();
        if days.last().is_none_or(|c| c.started_at.as_deref().and_then(|s| s.get(..10)) != Some(day.as_str())) {
            days.push(Conversation {
                session_id: format!("{fallback_id}-{day}"),
                title: Some(format!("Gemini Apps, {day}")),
                started_at: Some(time.clone()),
                ..Conversation::default()
            });
        }
        let conversation = days.last_mut().expect("pushed above");
        let id = format!("a{}", index + 1);
        conversation.messages.push(Message {
            role: Role::User,
            text: prompt,
            timestamp: Some(time.clone()),
            id: format!("{id}-prompt"),
            speaker: None,
            line: 0,
        });
        if let Some(answer) = answer {
            conversation.messages.push(Message {
                role: Role::Assistant,
                text: answer,
                timestamp: Some(time),
                id: format!("{id}-answer"),
                speaker: None,
                line: 0,
            });
        }
    }
    parsed.titled = true;
    parsed.conversations = days.into_iter().filter(|c| !c.messages.is_empty()).collect();
    parsed
}

fn gemini_message(record: &Map<String, Value>) -> Option<Message> {
    let role = match record.get("type").and_then(Value::as_str)? {
        "user" => Role::User,
        "gemini" | "model" => Role::Assistant,
        _ => return None,
    };
    let mut parts = Vec::new();
    let content = record.get("content").cloned().unwrap_or(Value::Null);
    let blocks = match &content {
        Value::Array(blocks) => blocks.clone(),
        Value::Null => Vec::new(),
        other => vec![other.clone()],
    };
    for block in &blocks {
        match block {
            Value::String(text) => parts.push(text.clone()),
            Value::Object(part) => {
                if let Some(text) = part.get("text").and_then(Value::as_str) {
                    parts.push(text.to_string());
                }
            }
            _ => {}
        }
    }
    for call in record.get("toolCalls").and_then(Value::as_array).into_iter().flatten() {
        parts.push(tool_call(call["name"].as_str().unwrap_or("tool"), &call["args"]));
        let result = call["resultDisplay"].clone();
        if let Some(result) = tool_result(&if result.is_string() { result } else { call["result"].clone() }) {
            parts.push(result);
        }
    }
    let joined = parts.join("\n");
    let text = if role == Role::User { human_text(&joined) } else { joined.trim().to_string() };
    (!text.is_empty()).then(|| Message {
        role,
        text,
        timestamp: record.get("timestamp").and_then(Value::as_str).map(str::to_string),
        id: record.get("id").and_then(Value::as_str).unwrap_or_default().to_string(),
        speaker: None,
        line: 0,
    })
}

/// A Gemini CLI chat: the legacy document or the JSONL records.
pub fn gemini(text: &str, fallback_id: &str) -> Parsed {
    let mut parsed = Parsed::default();
    let mut meta = Map::new();
    let mut order: Vec<String> = Vec::new();
    let mut records: HashMap<String, Map<String, Value>> = HashMap::new();
    let add = |record: Map<String, Value>,
               order: &mut Vec<String>,
               records: &mut HashMap<String, Map<String, Value>>| {
        let id =
            record.get("id").and_then(Value::as_str).map_or_else(|| format!("m{}", order.len() + 1), str::to_string);
        if !records.contains_key(&id) {
            order.push(id.clone());
        }
        records.insert(id, record);
    };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(document)) => {
            for message in
                document.get("messages").or(document.get("history")).and_then(Value::as_array).into_iter().flatten()
            {
                if let Some(record) = message.as_object() {
                    add(record.clone(), &mut order, &mut records);
                }
            }
            meta = document;
        }
        _ => {
            for (n, line) in text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                let Ok(Value::Object(record)) = serde_json::from_str::<Value>(line) else {
                    parsed.skipped += 1;
                    parsed.malformed.push(n + 1);
                    continue;
                };
                if let Some(target) = record.get("$rewindTo").and_then(Value::as_str) {
                    if let Some(at) = order.iter().position(|id| id == target) {
                        for gone in order.drain(at..) {
                            records.remove(&gone);
                        }
                    }
                } else if let Some(Value::Object(set)) = record.get("$set") {
                    if let Some(messages) = set.get("messages").and_then(Value::as_array) {
                        order.clear();
                        records.clear();
                        for message in messages.iter().filter_map(Value::as_object) {
                            add(message.clone(), &mut order, &mut records);
                        }
                    }
                    for (key, value) in set {
                        if key != "messages" {
                            meta.insert(key.clone(), value.clone());
                        }
                    }
                } else if record.contains_key("type") && record.contains_key("id") {
                    add(record, &mut order, &mut records);
                } else if record.contains_key("sessionId") {
                    meta.extend(record);
                } else {
                    parsed.skipped += 1;
                }
            }
        }
    }
    let mut conversation = Conversation {
        session_id: meta.get("sessionId").and_then(Value::as_str).unwrap_or(fallback_id).to_string(),
        started_at: meta.get("startTime").or(meta.get("start_time")).and_then(Value::as_str).map(str::to_string),
        cwd: meta
            .get("directories")
            .and_then(Value::as_array)
            .and_then(|d| d.first())
            .and_then(Value::as_str)
            .map(str::to_string),
        ..Conversation::default()
    };
    for id in &order {
        match records.get(id).and_then(gemini_message) {
            Some(message) => conversation.messages.push(message),
            None => parsed.skipped += 1,
        }
    }
    let title = meta.get("summary").and_then(Value::as_str).map(str::to_string);
    finish(conversation, title, &mut parsed);
    parsed
}

/// Plain text with `>` marking the user's lines: each `>` block is a user
/// turn, the lines after it (up to the next `>`) the reply.
pub fn plain_text(text: &str, fallback_id: &str) -> Parsed {
    let mut parsed = Parsed::default();
    let mut conversation = Conversation { session_id: fallback_id.to_string(), ..Conversation::default() };
    for (n, line) in text.lines().enumerate() {
        let (role, content) = match line.strip_prefix('>') {
            Some(rest) => (Role::User, rest.trim()),
            None => (Role::Assistant, line.trim_end()),
        };
        match conversation.messages.last_mut() {
            Some(last) if last.role == role => {
                last.text.push('\n');
                last.text.push_str(content);
            }
            _ if content.trim().is_empty() => {}
            _ => conversation.messages.push(Message {
                role,
                text: content.to_string(),
                timestamp: None,
                id: format!("line-{}", n + 1),
                speaker: None,
                line: 0,
            }),
        }
    }
    for message in &mut conversation.messages {
        message.text = message.text.trim().to_string();
    }
    conversation.messages.retain(|m| !m.text.is_empty());
    finish(conversation, None, &mut parsed);
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn chatgpt_follows_the_visible_branch() {
        let document = json!([{
            "title": "Trip", "conversation_id": "c1", "current_node": "d",
            "mapping": {
                "r": {"id": "r", "message": null, "parent": null, "children": ["a"]},
                "a": {"id": "a", "parent": "r", "children": ["b", "x"], "message": {"id": "a", "author": {"role": "user"}, "content": {"content_type": "text", "parts": ["Plan a trip"]}}},
                "x": {"id": "x", "parent": "a", "children": [], "message": {"id": "x", "author": {"role": "assistant"}, "recipient": "all", "content": {"content_type": "text", "parts": ["old answer"]}}},
                "b": {"id": "b", "parent": "a", "children": ["c"], "message": {"id": "b", "author": {"role": "assistant"}, "recipient": "python", "content": {"content_type": "code", "text": "print(1)"}}},
                "c": {"id": "c", "parent": "b", "children": ["d"], "message": {"id": "c", "author": {"role": "tool"}, "content": {"content_type": "execution_output", "text": "1"}}},
                "d": {"id": "d", "parent": "c", "children": [], "message": {"id": "d", "author": {"role": "assistant"}, "recipient": "all", "content": {"content_type": "text", "parts": ["Go to Lisbon"]}}}
            }
        }]);
        let parsed = chatgpt(&document, "f");
        let c = &parsed.conversations[0];
        assert_eq!((c.session_id.as_str(), c.title.as_deref()), ("c1", Some("Trip")));
        let texts: Vec<&str> = c.messages.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, vec!["Plan a trip", "[tool: python print(1)]", "[result: 1]", "Go to Lisbon"]);
    }

    #[test]
    fn claude_ai_uses_text_blocks_not_the_flattened_text() {
        let document = json!([{"uuid": "u", "name": "", "chat_messages": [
            {"uuid": "1", "sender": "human", "text": "hi", "content": [{"type": "text", "text": "What is RRF?"}]},
            {"uuid": "2", "sender": "assistant", "text": "thinking... RRF is", "content": [
                {"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "Reciprocal rank fusion."}]}
        ]}, {"uuid": "empty"}]);
        let parsed = claude_ai(&document, "f");
        assert_eq!(parsed.conversations.len(), 1);
        let texts: Vec<&str> = parsed.conversations[0].messages.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, vec!["What is RRF?", "Reciprocal rank fusion."]);
        assert_eq!(parsed.conversations[0].title.as_deref(), Some("What is RRF?"));
    }

    #[test]
    fn gemini_jsonl_rewrites_and_rewinds() {
        let text = r#"{"sessionId":"g1","startTime":"2025-12-06T15:00:00Z"}
{"id":"1","type":"user","content":"Edit the port"}
{"id":"2","type":"gemini","content":""}
{"id":"2","type":"gemini","content":"Done, port is 9000."}
{"id":"3","type":"user","content":"oops"}
{"$rewindTo":"3"}
{"$set":{"summary":"Port change"}}"#;
        let parsed = gemini(text, "f");
        let c = &parsed.conversations[0];
        assert_eq!((c.session_id.as_str(), c.title.as_deref()), ("g1", Some("Port change")));
        let texts: Vec<&str> = c.messages.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, vec!["Edit the port", "Done, port is 9000."]);
    }

    #[test]
    fn plain_text_marks_the_user_with_angle_brackets() {
        let parsed =
            plain_text("> how do I reset?\n> the router\nUnplug it for ten seconds.\n\n> thanks\nAny time.", "notes");
        let texts: Vec<&str> = parsed.conversations[0].messages.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, vec!["how do I reset?\nthe router", "Unplug it for ten seconds.", "thanks", "Any time."]);
    }

    #[test]
    fn gemini_apps_activity_is_grouped_by_day_in_time_order() {
        let document = json!([
            {"header": "Gemini Apps", "title": "Gave feedback: Good response", "time": "2026-02-03T09:00:00.000Z",
             "products": ["Gemini Apps"]},
            {"header": "Gemini Apps", "title": "Prompted and how long should it soak?", "time": "2026-02-02T07:30:00.000Z",
             "products": ["Gemini Apps"], "safeHtmlItem": [{"html": "<p>First draft</p>"}, {"html": "<p>About <b>15 minutes</b>.</p>"}]},
            {"header": "Gemini Apps", "title": "Prompted best way to clean an oxo coffee maker", "time": "2026-02-02T07:24:02.806Z",
             "products": ["Gemini Apps"], "safeHtmlItem": [{"html": "<ul><li>Vinegar &amp; water</li><li>Run twice</li></ul>"}]},
            {"header": "Gemini Apps", "title": "Prompted what is RRF?", "time": "2026-01-30T12:00:00.000Z",
             "products": ["Gemini Apps"]}
        ]);
        assert_eq!(crate::detect(&document.to_string()), Some(crate::Format::GeminiApps));
        let parsed = gemini_apps(&document, "MyActivity");
        assert_eq!(parsed.skipped, 1, "feedback is not a prompt");
        let days: Vec<(&str, usize)> =
            parsed.conversations.iter().map(|c| (c.session_id.as_str(), c.messages.len())).collect();
        assert_eq!(days, vec![("MyActivity-2026-01-30", 1), ("MyActivity-2026-02-02", 4)]);
        let texts: Vec<&str> = parsed.conversations[1].messages.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "best way to clean an oxo coffee maker",
                "- Vinegar & water\n- Run twice",
                "and how long should it soak?",
                "About 15 minutes."
            ]
        );
    }

    #[test]
    fn chatgpt_reasoning_is_not_filed() {
        let document = json!({"conversation_id": "c1", "title": "t", "current_node": "a2", "mapping": {
            "u1": {"id": "u1", "parent": null, "message": {"id": "u1", "author": {"role": "user"},
                "content": {"content_type": "text", "parts": ["Why is the sky blue?"]}}},
            "a1": {"id": "a1", "parent": "u1", "message": {"id": "a1", "author": {"role": "assistant"}, "recipient": "all",
                "content": {"content_type": "thoughts", "thoughts": [{"summary": "Rayleigh", "content": "Scattering goes as 1/λ⁴", "text": "x"}], "text": "Scattering goes as 1/λ⁴"}}},
            "a2": {"id": "a2", "parent": "a1", "message": {"id": "a2", "author": {"role": "assistant"}, "recipient": "all",
                "content": {"content_type": "reasoning_recap", "content": "Thought for 4s", "text": "Thought for 4s"}}},
            "a3": {"id": "a3", "parent": "a2", "message": {"id": "a3", "author": {"role": "assistant"}, "recipient": "all",
                "content": {"content_type": "text", "parts": ["Rayleigh scattering."]}}}
        }});
        let mut document = document;
        document["current_node"] = json!("a3");
        let parsed = chatgpt(&document, "x");
        let texts: Vec<&str> = parsed.conversations[0].messages.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, vec!["Why is the sky blue?", "Rayleigh scattering."]);
    }
}
