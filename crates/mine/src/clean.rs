//! Cleaning message text: CLI wrappers and injected reminders out, tool
//! calls on one line, tool results trimmed.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

/// Longest tool result kept, in characters.
pub const TOOL_RESULT_CHARS: usize = 300;
/// Longest tool-call summary, in characters.
const TOOL_CALL_CHARS: usize = 160;

fn wrappers() -> &'static Regex {
    static WRAPPERS: OnceLock<Regex> = OnceLock::new();
    WRAPPERS.get_or_init(|| {
        Regex::new(
            r"(?s)<system-reminder>.*?</system-reminder>|<local-command-stdout>.*?</local-command-stdout>|<local-command-stderr>.*?</local-command-stderr>|<command-message>.*?</command-message>|<command-name>.*?</command-name>|<environment_context>.*?</environment_context>|<user_instructions>.*?</user_instructions>",
        )
        .expect("built-in pattern")
    })
}

/// Human text without CLI wrappers and reminders; slash-command arguments
/// are kept as text. Empty when nothing human is left.
pub fn human_text(text: &str) -> String {
    let text = wrappers().replace_all(text, "");
    let text = text.replace("<command-args>", "").replace("</command-args>", "");
    let text =
        text.replace("[Request interrupted by user for tool use]", "").replace("[Request interrupted by user]", "");
    text.trim().to_string()
}

fn cut(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_string();
    }
    format!("{}…", text.chars().take(max).collect::<String>().trim_end())
}

/// A tool call on one line: `[tool: Name key=value …]`.
pub fn tool_call(name: &str, input: &Value) -> String {
    let args = match input {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| {
                let value = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                format!("{k}={}", value.replace('\n', " "))
            })
            .collect::<Vec<_>>()
            .join(" "),
        Value::String(s) => s.replace('\n', " "),
        Value::Null => String::new(),
        other => other.to_string(),
    };
    let line = if args.is_empty() { format!("[tool: {name}]") } else { format!("[tool: {name} {args}]") };
    cut(&line, TOOL_CALL_CHARS)
}

/// A tool result, trimmed: `[result: …]`.
pub fn tool_result(content: &Value) -> Option<String> {
    let text = match content {
        Value::String(s) => s.clone(),
        Value::Array(items) => items.iter().filter_map(|i| i["text"].as_str()).collect::<Vec<_>>().join("\n"),
        Value::Null => return None,
        other => other.to_string(),
    };
    let text = text.trim();
    (!text.is_empty()).then(|| format!("[result: {}]", cut(&text.replace('\n', " "), TOOL_RESULT_CHARS)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappers_and_reminders_go() {
        let text = "<command-name>/review</command-name><command-message>review</command-message><command-args>the auth module</command-args>\n<system-reminder>be nice</system-reminder>";
        assert_eq!(human_text(text), "the auth module");
        assert_eq!(human_text("[Request interrupted by user]"), "");
    }

    #[test]
    fn tools_fit_on_one_line() {
        let call = tool_call("Read", &serde_json::json!({"file_path": "/a/b.rs"}));
        assert_eq!(call, "[tool: Read file_path=/a/b.rs]");
        let long = tool_result(&Value::String("x\n".repeat(1000))).unwrap();
        assert!(long.chars().count() < TOOL_RESULT_CHARS + 20 && !long.contains('\n'));
        assert_eq!(tool_result(&Value::String("  ".into())), None);
    }
}
