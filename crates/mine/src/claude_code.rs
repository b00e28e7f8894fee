//! Claude Code session JSONL (`~/.claude/projects/<cwd>/<session>.jsonl`),
//! and the `{"loglines": [...]}` export of the same lines.
//!
//! Human text: `user` lines that are not meta, sidechain (sub-agent) or
//! compaction summaries, from a string or `text` blocks. Assistant text:
//! `text` blocks, with `tool_use` blocks summarised on one line; one reply
//! split over several lines (same `message.id`) is one message. Tool
//! results (user lines holding only `tool_result` blocks) are trimmed and
//! kept with the reply that asked for them. File order is the order, except
//! in a branched session (the user rewound or edited a prompt: two prompts
//! share a parent): there only the branch of the last record is kept, by
//! following `parentUuid` (or `logicalParentUuid` across a compaction) back
//! from it. Every record's place in that tree is reported in
//! [`Parsed::links`], so a tail read can tell an append from a rewind.

use serde_json::Value;

use crate::clean::{human_text, tool_call, tool_result};
use std::collections::{HashMap, HashSet};

use crate::{Conversation, Link, Message, Parsed, Role};

#[derive(Default)]
struct State {
    conversation: Conversation,
    custom_title: Option<String>,
    ai_title: Option<String>,
    summary: Option<String>,
    last_message_id: Option<String>,
}

/// Parses one file's text.
pub fn parse(text: &str, fallback_id: &str) -> Parsed {
    parse_from(text, fallback_id, 1)
}

/// Parses the lines of a file from line `first_line` (1-based) on: `text`
/// starts at that line, so ids and line numbers match a whole read.
pub fn parse_from(text: &str, fallback_id: &str, first_line: usize) -> Parsed {
    let mut parsed = Parsed::default();
    let mut state = State::default();
    if let Some(document) = export_document(text) {
        for (n, record) in document["loglines"].as_array().into_iter().flatten().enumerate() {
            record_into(record, n + 1, &mut state, &mut parsed);
        }
    } else {
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let number = n + first_line;
            match serde_json::from_str::<Value>(line) {
                Ok(record) => record_into(&record, number, &mut state, &mut parsed),
                Err(_) => {
                    parsed.skipped += 1;
                    parsed.malformed.push(number);
                }
            }
        }
    }
    let mut conversation = state.conversation;
    parsed.skipped += keep_last_branch(&mut conversation.messages, &parsed.links);
    parsed.titled = state.custom_title.is_some() || state.ai_title.is_some() || state.summary.is_some();
    if conversation.session_id.is_empty() {
        conversation.session_id = fallback_id.to_string();
    }
    let first_prompt = crate::first_prompt(&conversation);
    conversation.title = state.custom_title.or(state.ai_title).or(state.summary).or(first_prompt);
    if !conversation.messages.is_empty() {
        parsed.conversations.push(conversation);
    }
    parsed
}

/// The `{"loglines": [...]}` export (one JSON document), if `text` is one.
fn export_document(text: &str) -> Option<Value> {
    text.trim_start()
        .starts_with('{')
        .then(|| serde_json::from_str::<Value>(text).ok())
        .flatten()
        .filter(|document| document.get("loglines").is_some())
}

/// Whether `text` is the `{"loglines": [...]}` export rather than session JSONL.
pub fn is_export(text: &str) -> bool {
    export_document(text).is_some()
}

fn text_of(value: &Value) -> Option<String> {
    value.as_str().map(str::to_string).filter(|s| !s.trim().is_empty())
}

fn record_into(record: &Value, line: usize, state: &mut State, parsed: &mut Parsed) {
    let Some(object) = record.as_object() else {
        parsed.skipped += 1;
        return;
    };
    let kind = object.get("type").and_then(Value::as_str).unwrap_or("");
    // Only records that state their place in the tree are linked (some
    // third-party shapes carry a uuid and no parent at all).
    if let Some(uuid) = record["uuid"].as_str()
        && record["isSidechain"].as_bool() != Some(true)
        && (object.contains_key("parentUuid") || object.contains_key("logicalParentUuid"))
    {
        let parent = record["parentUuid"].as_str().or(record["logicalParentUuid"].as_str());
        parsed.links.push(Link { line, uuid: uuid.to_string(), parent: parent.map(str::to_string) });
    }
    match kind {
        "custom-title" => state.custom_title = text_of(&record["customTitle"]).or(state.custom_title.take()),
        "ai-title" => state.ai_title = text_of(&record["aiTitle"]).or(state.ai_title.take()),
        "summary" => state.summary = state.summary.take().or_else(|| text_of(&record["summary"])),
        "user" | "assistant" => {
            let conversation = &mut state.conversation;
            if conversation.session_id.is_empty()
                && let Some(id) = record["sessionId"].as_str()
            {
                conversation.session_id = id.to_string();
            }
            if conversation.cwd.is_none() {
                conversation.cwd = text_of(&record["cwd"]).or_else(|| text_of(&record["project"]));
            }
            if conversation.started_at.is_none() {
                conversation.started_at = text_of(&record["timestamp"]);
            }
            let skip = [&record["isMeta"], &record["isSidechain"], &record["isCompactSummary"]]
                .iter()
                .any(|flag| flag.as_bool() == Some(true));
            if skip {
                parsed.skipped += 1;
                return;
            }
            let id = record["uuid"].as_str().map_or_else(|| format!("line-{line}"), str::to_string);
            let timestamp = text_of(&record["timestamp"]);
            if kind == "user" {
                user(record, id, timestamp, line, state, parsed);
            } else {
                assistant(record, id, timestamp, line, state, parsed);
            }
        }
        _ => parsed.skipped += 1,
    }
}

fn user(record: &Value, id: String, timestamp: Option<String>, line: usize, state: &mut State, parsed: &mut Parsed) {
    let content = &record["message"]["content"];
    let mut texts = Vec::new();
    let mut results = Vec::new();
    match content {
        Value::String(text) => texts.push(text.clone()),
        Value::Array(blocks) => {
            for block in blocks {
                match block["type"].as_str() {
                    Some("text") => texts.extend(block["text"].as_str().map(str::to_string)),
                    Some("tool_result") => results.extend(tool_result(&block["content"])),
                    _ => {}
                }
            }
        }
        _ => {}
    }
    if !results.is_empty()
        && let Some(last) = state.conversation.messages.last_mut().filter(|m| m.role == Role::Assistant)
    {
        for result in &results {
            last.text.push('\n');
            last.text.push_str(result);
        }
    }
    let text = human_text(&texts.join("\n"));
    if text.is_empty() {
        if results.is_empty() {
            parsed.skipped += 1;
        }
        return;
    }
    state.last_message_id = None;
    state.conversation.messages.push(Message { role: Role::User, text, timestamp, id, speaker: None, line });
}

fn assistant(
    record: &Value,
    id: String,
    timestamp: Option<String>,
    line: usize,
    state: &mut State,
    parsed: &mut Parsed,
) {
    let message = &record["message"];
    let mut parts = Vec::new();
    match &message["content"] {
        Value::String(text) => parts.push(text.trim().to_string()),
        Value::Array(blocks) => {
            for block in blocks {
                match block["type"].as_str() {
                    Some("text") => parts.extend(block["text"].as_str().map(|t| t.trim().to_string())),
                    Some("tool_use") => {
                        parts.push(tool_call(block["name"].as_str().unwrap_or("tool"), &block["input"]))
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    parts.retain(|p| !p.is_empty());
    if parts.is_empty() {
        parsed.skipped += 1;
        return;
    }
    let text = parts.join("\n");
    let reply_id = message["id"].as_str().map(str::to_string);
    let messages = &mut state.conversation.messages;
    if let (Some(reply), Some(last)) = (&reply_id, messages.last_mut())
        && state.last_message_id.as_ref() == Some(reply)
        && last.role == Role::Assistant
    {
        last.text.push('\n');
        last.text.push_str(&text);
        return;
    }
    state.last_message_id = reply_id;
    messages.push(Message { role: Role::Assistant, text, timestamp, id, speaker: None, line });
}

/// In a branched session, drops the messages of abandoned branches and
/// returns how many it dropped. A branch starts where two human prompts
/// share a parent (an edit or a rewind); the live branch is the one that
/// holds the last record. Forks of other records (parallel tool results)
/// are not branches and keep file order.
fn keep_last_branch(messages: &mut Vec<Message>, links: &[Link]) -> usize {
    let prompts: HashSet<&str> = messages.iter().filter(|m| m.role == Role::User).map(|m| m.id.as_str()).collect();
    let mut children: HashMap<&str, Vec<&str>> = HashMap::new();
    for link in links {
        if let Some(parent) = &link.parent {
            children.entry(parent.as_str()).or_default().push(link.uuid.as_str());
        }
    }
    let forks: Vec<&Vec<&str>> =
        children.values().filter(|kids| kids.iter().filter(|kid| prompts.contains(*kid)).count() > 1).collect();
    let Some(leaf) = links.last() else { return 0 };
    if forks.is_empty() {
        return 0;
    }
    let parents: HashMap<&str, Option<&str>> =
        links.iter().map(|link| (link.uuid.as_str(), link.parent.as_deref())).collect();
    let mut live: HashSet<&str> = HashSet::new();
    let mut at = Some(leaf.uuid.as_str());
    while let Some(uuid) = at {
        if !live.insert(uuid) {
            break; // a cycle in a damaged file
        }
        at = parents.get(uuid).copied().flatten();
    }
    let mut dead: HashSet<&str> = HashSet::new();
    let mut queue: Vec<&str> = forks
        .iter()
        .flat_map(|kids| kids.iter().copied())
        .filter(|kid| prompts.contains(kid) && !live.contains(kid))
        .collect();
    while let Some(uuid) = queue.pop() {
        if dead.insert(uuid) {
            queue.extend(children.get(uuid).into_iter().flatten().copied());
        }
    }
    let before = messages.len();
    messages.retain(|m| !dead.contains(m.id.as_str()));
    before - messages.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_session_reads_in_order() {
        let text = r#"{"type":"summary","summary":"Config work","leafUuid":"x"}
{"type":"user","uuid":"u1","sessionId":"s1","timestamp":"2025-01-03T10:00:00Z","cwd":"/p","message":{"role":"user","content":"Read the config"}}
{"type":"assistant","uuid":"a1","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":"Reading it."}]}}
{"type":"assistant","uuid":"a2","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/p/c.json"}}]}}
{"type":"user","uuid":"u2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"{\"port\": 8080}"}]}}
{"type":"user","uuid":"u3","isMeta":true,"message":{"role":"user","content":"Caveat: local commands"}}
not json at all
42
{"type":"user","uuid":"u4","message":{"role":"user","content":"<system-reminder>x</system-reminder>Thanks"}}"#;
        let parsed = parse(text, "file");
        let c = &parsed.conversations[0];
        assert_eq!(
            (c.session_id.as_str(), c.cwd.as_deref(), c.title.as_deref()),
            ("s1", Some("/p"), Some("Config work"))
        );
        let texts: Vec<&str> = c.messages.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(
            texts,
            vec![
                "Read the config",
                "Reading it.\n[tool: Read file_path=/p/c.json]\n[result: {\"port\": 8080}]",
                "Thanks"
            ]
        );
        assert_eq!(parsed.malformed, vec![7]);
        assert_eq!(parsed.skipped, 3, "the meta line, the garbage line and 42");
    }
}
