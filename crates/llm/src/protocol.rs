//! The two chat protocols on the wire: request bodies and answers.
//!
//! OpenAI-compatible: `{"model", "messages", "temperature", "max_tokens",
//! "response_format"?}`, the answer in `choices[0].message.content`, tokens
//! in `usage.prompt_tokens` / `usage.completion_tokens`. Ollama: `{"model",
//! "messages", "stream": false, "format"?, "options": {"temperature",
//! "num_predict"}}`, the answer in `message.content`, tokens in
//! `prompt_eval_count` / `eval_count`. Nothing here trusts the answer's
//! shape beyond "there is text": callers validate it.

use mempalace_core::llm::{ChatRequest, ChatResponse, LlmError, Usage};
use serde_json::{Value, json};

use crate::config::Provider;

/// How an OpenAI-compatible server is asked for JSON: strict schema,
/// JSON mode, or not at all (for servers that refuse `response_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum StructuredMode {
    /// `{"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}`.
    JsonSchema,
    /// `{"type": "json_object"}`.
    JsonObject,
    /// No `response_format`.
    Plain,
}

impl StructuredMode {
    /// The next weaker mode, if any.
    pub fn weaker(self) -> Option<Self> {
        match self {
            StructuredMode::JsonSchema => Some(StructuredMode::JsonObject),
            StructuredMode::JsonObject => Some(StructuredMode::Plain),
            StructuredMode::Plain => None,
        }
    }

    /// The name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            StructuredMode::JsonSchema => "json_schema",
            StructuredMode::JsonObject => "json_object",
            StructuredMode::Plain => "none",
        }
    }
}

/// The request body for `request` sent to `model`.
pub fn request_body(provider: Provider, model: &str, request: &ChatRequest, mode: StructuredMode) -> Value {
    let messages: Vec<Value> =
        request.messages.iter().map(|m| json!({"role": m.role.as_str(), "content": m.content})).collect();
    match provider {
        Provider::OpenAi => {
            let mut body = json!({
                "model": model,
                "messages": messages,
                "temperature": request.temperature,
                "max_tokens": request.max_tokens,
            });
            if let Some(schema) = &request.schema {
                let format = match mode {
                    StructuredMode::JsonSchema => Some(json!({
                        "type": "json_schema",
                        "json_schema": {"name": schema.name, "schema": schema.schema, "strict": true},
                    })),
                    StructuredMode::JsonObject => Some(json!({"type": "json_object"})),
                    StructuredMode::Plain => None,
                };
                if let Some(format) = format {
                    body["response_format"] = format;
                }
            }
            body
        }
        Provider::Ollama => {
            let mut body = json!({
                "model": model,
                "messages": messages,
                "stream": false,
                "options": {"temperature": request.temperature, "num_predict": request.max_tokens},
            });
            if let Some(schema) = &request.schema {
                body["format"] = schema.schema.clone();
            }
            body
        }
    }
}

/// Reads a successful answer's body.
pub fn parse_answer(provider: Provider, requested_model: &str, text: &str) -> Result<ChatResponse, LlmError> {
    let shown = || text.chars().take(200).collect::<String>();
    let body: Value = serde_json::from_str(text)
        .map_err(|error| LlmError::Malformed(format!("the response body is not JSON ({error}): {:?}", shown())))?;
    let count = |value: &Value| value.as_u64().unwrap_or(0);
    let (content, usage, finish) = match provider {
        Provider::OpenAi => {
            let choice = &body["choices"][0];
            let usage = Usage {
                prompt_tokens: count(&body["usage"]["prompt_tokens"]),
                completion_tokens: count(&body["usage"]["completion_tokens"]),
            };
            (choice["message"]["content"].as_str(), usage, choice["finish_reason"].as_str())
        }
        Provider::Ollama => {
            let usage = Usage {
                prompt_tokens: count(&body["prompt_eval_count"]),
                completion_tokens: count(&body["eval_count"]),
            };
            (body["message"]["content"].as_str(), usage, body["done_reason"].as_str())
        }
    };
    let content = content.filter(|content| !content.trim().is_empty()).ok_or_else(|| {
        let why = finish.map(|reason| format!(" (finish reason: {reason})")).unwrap_or_default();
        LlmError::Malformed(format!("the response holds no answer text{why}: {:?}", shown()))
    })?;
    let model = body["model"].as_str().filter(|m| !m.is_empty()).unwrap_or(requested_model).to_string();
    Ok(ChatResponse { text: content.to_string(), model, usage })
}

/// The server's own words from an error body: OpenAI's `error.message`,
/// Ollama's `error`, else the start of the body.
pub fn error_message(text: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(text).ok();
    let message = parsed.as_ref().and_then(|body| {
        body["error"]["message"].as_str().or_else(|| body["error"].as_str()).or_else(|| body["message"].as_str())
    });
    match message {
        Some(message) => message.chars().take(500).collect(),
        None => text.trim().chars().take(300).collect(),
    }
}

/// Whether a 400 answer says the server does not take the `response_format`
/// asked for (so a weaker one is tried).
pub fn refuses_response_format(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    message.contains("response_format") || message.contains("json_schema") || message.contains("json_object")
}

#[cfg(test)]
mod tests {
    use super::*;
    use mempalace_core::llm::{AnswerSchema, Message, Task};

    fn request(schema: bool) -> ChatRequest {
        ChatRequest {
            task: Task::Classify,
            messages: vec![Message::system("be brief"), Message::user("hi")],
            schema: schema.then(|| AnswerSchema { name: "answer", schema: json!({"type": "object"}) }),
            temperature: 0.0,
            max_tokens: 64,
        }
    }

    #[test]
    fn openai_bodies_carry_the_schema_in_the_mode_asked() {
        let body = request_body(Provider::OpenAi, "m", &request(true), StructuredMode::JsonSchema);
        assert_eq!(body["response_format"]["json_schema"]["name"], "answer");
        assert_eq!(body["response_format"]["json_schema"]["strict"], true);
        assert_eq!(body["messages"][1], json!({"role": "user", "content": "hi"}));
        assert_eq!(body["max_tokens"], 64);
        let body = request_body(Provider::OpenAi, "m", &request(true), StructuredMode::JsonObject);
        assert_eq!(body["response_format"], json!({"type": "json_object"}));
        let body = request_body(Provider::OpenAi, "m", &request(true), StructuredMode::Plain);
        assert!(body.get("response_format").is_none());
        let body = request_body(Provider::OpenAi, "m", &request(false), StructuredMode::JsonSchema);
        assert!(body.get("response_format").is_none());
    }

    #[test]
    fn ollama_bodies_put_the_schema_in_format_and_limits_in_options() {
        let body = request_body(Provider::Ollama, "llama3.2", &request(true), StructuredMode::JsonSchema);
        assert_eq!(body["format"], json!({"type": "object"}));
        assert_eq!(body["stream"], false);
        assert_eq!(body["options"], json!({"temperature": 0.0, "num_predict": 64}));
        assert!(
            request_body(Provider::Ollama, "m", &request(false), StructuredMode::JsonSchema).get("format").is_none()
        );
    }

    #[test]
    fn answers_without_text_are_malformed() {
        let empty = r#"{"choices": [{"message": {"content": ""}, "finish_reason": "length"}]}"#;
        let LlmError::Malformed(why) = parse_answer(Provider::OpenAi, "m", empty).unwrap_err() else { panic!() };
        assert!(why.contains("length"), "{why}");
        assert!(parse_answer(Provider::OpenAi, "m", r#"{"choices": []}"#).is_err());
        assert!(parse_answer(Provider::Ollama, "m", r#"{"message": {"content": null}}"#).is_err());
        assert!(parse_answer(Provider::Ollama, "m", "<html>").is_err());
        let ok = parse_answer(Provider::Ollama, "m", r#"{"message": {"content": "x"}, "eval_count": 3}"#).unwrap();
        assert_eq!((ok.model.as_str(), ok.usage.completion_tokens), ("m", 3));
    }

    #[test]
    fn error_messages_are_the_servers_own_words() {
        assert_eq!(error_message(r#"{"error": {"message": "bad model"}}"#), "bad model");
        assert_eq!(error_message(r#"{"error": "model not found"}"#), "model not found");
        assert_eq!(error_message("  plain text  "), "plain text");
        assert!(refuses_response_format("Invalid parameter: 'response_format' of type 'json_schema'"));
        assert!(!refuses_response_format("model not found"));
    }
}
