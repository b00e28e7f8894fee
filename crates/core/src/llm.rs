//! The language-model boundary: the [`Llm`] trait, the chat values it
//! exchanges, its error, and the tolerant reading of a JSON answer.
//!
//! An LLM is optional everywhere (SPEC §6): every job that asks one has a
//! deterministic path, and an error from the model sends the job down that
//! path instead of turning into "nothing found". The trait lives in core,
//! like [`crate::embedder::Embedder`], so the engine and the surfaces see one
//! small interface; the HTTP clients (OpenAI-compatible chat completions,
//! Ollama) are in `mempalace-llm`. What each job asks and how its answer is
//! checked is in [`crate::prompts`].

use serde_json::Value;
use thiserror::Error;

/// The jobs that ask a model; each may be given its own model, and usage is
/// counted per task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Task {
    /// Type, hall, importance, summary, entities and triples of raw drawers.
    Classify,
    /// Whether a newer drawer contradicts an older one.
    Conflict,
    /// Entities and triples for drawers that skipped the model.
    Enrich,
    /// Memories from a conversation (ADD / UPDATE / DELETE / NONE).
    Extract,
    /// The episodic summary of an ended session.
    Summarize,
    /// Long-term insights across recent episodes (dreaming).
    Dream,
    /// A connectivity check (`mempalace llm test`).
    Probe,
}

impl Task {
    /// Every task, in declaration order.
    pub const ALL: &'static [Task] =
        &[Task::Classify, Task::Conflict, Task::Enrich, Task::Extract, Task::Summarize, Task::Dream, Task::Probe];

    /// The task's name in settings, logs and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Task::Classify => "classify",
            Task::Conflict => "conflict",
            Task::Enrich => "enrich",
            Task::Extract => "extract",
            Task::Summarize => "summarize",
            Task::Dream => "dream",
            Task::Probe => "probe",
        }
    }
}

impl std::fmt::Display for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Task {
    type Err = crate::error::ValidationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Task::ALL.iter().copied().find(|task| task.as_str() == text.trim()).ok_or_else(|| {
            crate::error::ValidationError::NotOneOf {
                what: "LLM task",
                value: text.to_string(),
                allowed: "classify conflict enrich extract probe",
            }
        })
    }
}

/// Who speaks a chat message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Instructions.
    System,
    /// The question.
    User,
    /// A model's earlier answer.
    Assistant,
}

impl Role {
    /// The protocol's spelling (the same for OpenAI and Ollama).
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

/// One chat message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Speaker.
    pub role: Role,
    /// Text.
    pub content: String,
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self { role: Role::System, content: content.into() }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self { role: Role::User, content: content.into() }
    }
}

/// A JSON Schema the answer must follow, sent as structured output where
/// the server supports it (OpenAI `response_format: json_schema`, Ollama
/// `format`). The answer is validated here whatever the server did.
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerSchema {
    /// A short name (`[a-z_]+`), required by the OpenAI protocol.
    pub name: &'static str,
    /// The schema.
    pub schema: Value,
}

/// One chat completion request.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    /// Which job asks (model choice and accounting).
    pub task: Task,
    /// The conversation sent.
    pub messages: Vec<Message>,
    /// The answer's shape, when a JSON answer is wanted.
    pub schema: Option<AnswerSchema>,
    /// Sampling temperature (0 for classification, 0.3 for extraction).
    pub temperature: f32,
    /// Upper bound on the answer's length in tokens.
    pub max_tokens: u32,
}

/// Tokens a call used, as the server reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Tokens sent.
    pub prompt_tokens: u64,
    /// Tokens generated.
    pub completion_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
    }
}

/// A model's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatResponse {
    /// The answer's text (a JSON document when a schema was asked for,
    /// though possibly wrapped in prose or a code fence).
    pub text: String,
    /// The model that answered, as the server named it.
    pub model: String,
    /// Tokens used.
    pub usage: Usage,
}

/// Why a model call failed. Every variant sends the caller down its
/// deterministic path.
#[derive(Debug, Clone, Error, PartialEq, Eq)]
pub enum LlmError {
    /// No model is configured.
    #[error("no language model is configured")]
    NotConfigured,
    /// The kill switch is on.
    #[error("the language model is switched off ({0}); `mempalace llm on` switches it back on")]
    Disabled(String),
    /// The provider is cooling down after repeated failures.
    #[error("the language model is unavailable for {remaining_s} more seconds after repeated failures")]
    CoolingDown {
        /// Seconds left.
        remaining_s: u64,
    },
    /// The server could not be reached or did not answer in time.
    #[error("the language model could not be reached: {0}")]
    Unreachable(String),
    /// The server answered with an error.
    #[error("the language model answered with an error: {0}")]
    Provider(String),
    /// The answer could not be read as the JSON asked for.
    #[error("the language model's answer is not the JSON asked for: {0}")]
    Malformed(String),
    /// A spending limit for this process was reached.
    #[error("the language model's budget is spent: {0}")]
    Budget(String),
}

/// Result alias for model calls.
pub type LlmResult<T> = Result<T, LlmError>;

/// A chat model.
pub trait Llm: Send + Sync {
    /// The model a task's requests go to (for reports and drawer context).
    fn model_for(&self, task: Task) -> String;

    /// Whether a call is expected to go out now (false while cooling down or
    /// switched off).
    fn available(&self) -> bool {
        true
    }

    /// Sends one request.
    fn chat(&self, request: &ChatRequest) -> LlmResult<ChatResponse>;

    /// What the model has cost this process so far (calls, tokens, dollars
    /// per task), as JSON for `status` and metrics; `None` when not counted.
    fn usage_report(&self) -> Option<Value> {
        None
    }
}

impl<L: Llm + ?Sized> Llm for std::sync::Arc<L> {
    fn model_for(&self, task: Task) -> String {
        (**self).model_for(task)
    }

    fn available(&self) -> bool {
        (**self).available()
    }

    fn chat(&self, request: &ChatRequest) -> LlmResult<ChatResponse> {
        (**self).chat(request)
    }

    fn usage_report(&self) -> Option<Value> {
        (**self).usage_report()
    }
}

/// Reads the JSON document in a model's answer, tolerating what models
/// wrap around it: prose before or after, a Markdown code fence, a byte
/// order mark, trailing commas. Returns the first complete object or array.
pub fn read_json(text: &str) -> Result<Value, LlmError> {
    let text = text.trim_start_matches('\u{feff}').trim();
    if let Ok(value) = serde_json::from_str::<Value>(text)
        && (value.is_object() || value.is_array())
    {
        return Ok(value);
    }
    let mut offset = 0;
    while let Some(start) = text[offset..].find(['{', '[']).map(|at| at + offset) {
        if let Some(end) = balanced_end(&text[start..]) {
            let candidate = &text[start..start + end];
            if let Ok(value) = serde_json::from_str::<Value>(candidate) {
                return Ok(value);
            }
            if let Ok(value) = serde_json::from_str::<Value>(&without_trailing_commas(candidate)) {
                return Ok(value);
            }
        }
        offset = start + 1;
    }
    let shown: String = text.chars().take(120).collect();
    Err(LlmError::Malformed(format!("no JSON object in the answer (it begins {shown:?})")))
}

/// Where a scan of JSON text is with respect to strings.
#[derive(Default)]
struct Strings {
    inside: bool,
    escaped: bool,
}

impl Strings {
    /// Moves past `c`; true when `c` is part of a string (quotes included).
    fn step(&mut self, c: char) -> bool {
        if self.inside {
            match c {
                _ if self.escaped => self.escaped = false,
                '\\' => self.escaped = true,
                '"' => self.inside = false,
                _ => {}
            }
            return true;
        }
        self.inside = c == '"';
        self.inside
    }
}

/// The length of the balanced object or array `text` starts with, honouring
/// strings and escapes; `None` when it never closes.
fn balanced_end(text: &str) -> Option<usize> {
    let mut depth = 0_usize;
    let mut strings = Strings::default();
    for (at, c) in text.char_indices() {
        if strings.step(c) {
            continue;
        }
        match c {
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(at + c.len_utf8());
                }
            }
            _ => {}
        }
    }
    None
}

/// `text` without commas that directly precede a closing bracket (outside
/// strings).
fn without_trailing_commas(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut strings = Strings::default();
    for (at, &c) in chars.iter().enumerate() {
        if !strings.step(c) && c == ',' {
            let next = chars[at + 1..].iter().find(|n| !n.is_whitespace());
            if matches!(next, Some('}' | ']')) {
                continue;
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn plain_fenced_and_wrapped_answers_are_read() {
        assert_eq!(read_json(r#"{"a": 1}"#).unwrap(), json!({"a": 1}));
        assert_eq!(read_json("```json\n{\"a\": [1, 2]}\n```").unwrap(), json!({"a": [1, 2]}));
        assert_eq!(read_json("Sure! Here it is:\n{\"a\": \"}\"}\nHope that helps.").unwrap(), json!({"a": "}"}));
        assert_eq!(read_json("\u{feff}[{\"x\": 1},]").unwrap(), json!([{"x": 1}]));
        assert_eq!(read_json(r#"{"items": [{"a": 1,}, ],}"#).unwrap(), json!({"items": [{"a": 1}]}));
        assert_eq!(read_json(r#"note {broken} then {"ok": true}"#).unwrap(), json!({"ok": true}));
        assert_eq!(read_json(r#"{"s": "a, }"}"#).unwrap(), json!({"s": "a, }"}), "commas in strings are kept");
    }

    #[test]
    fn answers_without_json_are_malformed() {
        for text in ["", "no", "42", "\"just a string\"", "{\"unterminated\": ", "}{"] {
            assert!(matches!(read_json(text), Err(LlmError::Malformed(_))), "{text:?}");
        }
    }

    #[test]
    fn tasks_round_trip_through_their_names() {
        for task in Task::ALL {
            assert_eq!(task.as_str().parse::<Task>().unwrap(), *task);
        }
        assert!("classification".parse::<Task>().is_err());
    }

    proptest! {
        #[test]
        fn reading_never_panics(text in ".{0,200}") {
            let _ = read_json(&text);
        }

        #[test]
        fn any_object_survives_any_wrapping(
            key in "[a-z]{1,8}",
            value in ".{0,20}",
            before in "[^{\\[]{0,30}",
            after in ".{0,30}",
        ) {
            let object = json!({ key: value });
            let text = format!("{before}{object}{after}");
            prop_assert_eq!(read_json(&text).unwrap(), object);
        }
    }
}
