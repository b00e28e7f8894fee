//! Slack exports: a folder with `users.json` / `channels.json` and one
//! folder per channel of per-day JSON arrays, or a single day array.
//!
//! Every author is a speaker of their own (named through `users.json`:
//! display name, real name, then user name; bots by their user name), so
//! exchanges pair a message with the next author's reply. Join, leave,
//! topic and purpose messages are left out; `<@U…>` mentions are resolved,
//! `<url|label>` links reduced to their label, `&amp;` entities decoded.
//! One channel is one conversation, its days in order.

use std::collections::HashMap;

use serde_json::Value;

use crate::{Conversation, Message, Role};

/// Subtypes that are not speech.
const SKIPPED_SUBTYPES: &[&str] =
    &["channel_join", "channel_leave", "channel_topic", "channel_purpose", "channel_name", "bot_add", "tombstone"];

/// `users.json` → id → display name.
pub fn users(text: &str) -> HashMap<String, String> {
    let Ok(Value::Array(users)) = serde_json::from_str::<Value>(text) else { return HashMap::new() };
    users
        .iter()
        .filter_map(|user| {
            let id = user["id"].as_str()?;
            let name =
                [&user["profile"]["display_name"], &user["profile"]["real_name"], &user["real_name"], &user["name"]]
                    .into_iter()
                    .filter_map(Value::as_str)
                    .find(|n| !n.trim().is_empty())?;
            Some((id.to_string(), name.to_string()))
        })
        .collect()
}

/// Whether a text is a Slack day file: an array of `message` objects with `ts`.
pub fn is_day_file(text: &str) -> bool {
    matches!(serde_json::from_str::<Value>(text), Ok(Value::Array(items))
        if !items.is_empty() && items.iter().all(|m| m["type"] == "message" && m["ts"].is_string()))
}

fn resolve(text: &str, users: &HashMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find('<') {
        out.push_str(&rest[..start]);
        let Some(end) = rest[start..].find('>') else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let inner = &rest[start + 1..start + end];
        let replacement = if let Some(id) = inner.strip_prefix('@') {
            let id = id.split('|').next().unwrap_or(id);
            format!("@{}", users.get(id).map_or(id, String::as_str))
        } else if let Some(channel) = inner.strip_prefix('#') {
            format!("#{}", channel.split('|').nth(1).unwrap_or(channel))
        } else {
            inner.split('|').nth(1).unwrap_or(inner).to_string()
        };
        out.push_str(&replacement);
        rest = &rest[start + end + 1..];
    }
    out.push_str(rest);
    out.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

/// One channel's conversation from its day files (name, text), in any
/// order; malformed days are counted in the second value.
pub fn channel(name: &str, days: &[(String, String)], users: &HashMap<String, String>) -> (Conversation, usize) {
    let mut days: Vec<&(String, String)> = days.iter().collect();
    days.sort_by(|a, b| a.0.cmp(&b.0));
    let mut conversation =
        Conversation { session_id: name.to_string(), title: Some(format!("#{name}")), ..Conversation::default() };
    let mut bad = 0;
    for (_, text) in days {
        let Ok(Value::Array(messages)) = serde_json::from_str::<Value>(text) else {
            bad += 1;
            continue;
        };
        for message in &messages {
            if message["type"] != "message"
                || message["subtype"].as_str().is_some_and(|s| SKIPPED_SUBTYPES.contains(&s))
            {
                continue;
            }
            let text = resolve(message["text"].as_str().unwrap_or(""), users);
            if text.trim().is_empty() {
                continue;
            }
            let author = message["user"]
                .as_str()
                .map(|id| users.get(id).cloned().unwrap_or_else(|| id.to_string()))
                .or_else(|| message["username"].as_str().map(str::to_string))
                .or_else(|| message["bot_profile"]["name"].as_str().map(str::to_string))
                .unwrap_or_else(|| "unknown".to_string());
            let ts = message["ts"].as_str().unwrap_or_default();
            let timestamp = ts
                .parse::<f64>()
                .ok()
                .and_then(mempalace_core::time::timestamp_from_unix)
                .map(|t| mempalace_core::time::format_timestamp(&t));
            if conversation.started_at.is_none() {
                conversation.started_at = timestamp.clone();
            }
            conversation.messages.push(Message {
                role: Role::User,
                text: text.trim().to_string(),
                timestamp,
                id: ts.to_string(),
                speaker: Some(author),
                line: 0,
            });
        }
    }
    (conversation, bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_links_and_entities_read_as_text() {
        let users: HashMap<String, String> = [("U1".to_string(), "hamza".to_string())].into_iter().collect();
        assert_eq!(
            resolve("<@U1> see <https://x.io|the docs> &amp; <#C9|general>", &users),
            "@hamza see the docs & #general"
        );
        let days = vec![(
            "2016-01-15.json".to_string(),
            r#"[{"type":"message","user":"U1","text":"hi <@U2>","ts":"1452845865.000008"},
               {"type":"message","subtype":"channel_join","user":"U2","text":"joined","ts":"1452845866.0"}]"#
                .to_string(),
        )];
        let (conversation, bad) = channel("dev", &days, &users);
        assert_eq!(bad, 0);
        assert_eq!(conversation.messages.len(), 1);
        assert_eq!(conversation.messages[0].speaker.as_deref(), Some("hamza"));
        assert_eq!(conversation.messages[0].text, "hi @U2");
    }
}
