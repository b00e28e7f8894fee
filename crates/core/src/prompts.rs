//! What each job asks a language model, and how its answer is checked
//! (SPEC §6; seed 0 §3 for classification and conflicts, seed 4 for
//! extraction). docs/llm.md shows these prompts as they are sent.
//!
//! Every answer is validated here whatever the server promised: a reply
//! that is not the asked-for JSON is [`LlmError::Malformed`]; an item that
//! breaks a rule (unknown type, id not asked about, empty text) is dropped
//! and counted, so one bad item never costs the others. Callers fall back
//! to the deterministic path for whatever is missing.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::classify::HALLS;
use crate::drawer::MemoryType;
use crate::llm::{AnswerSchema, ChatRequest, LlmError, Message, Task};
use crate::memory::{Decision, EntityType, ExistingMemory, MemoryScope, NewMemory, Turn};

/// Characters of one drawer's text sent for classification.
pub const CLASSIFY_TEXT_CHARS: usize = 2_000;
/// Characters of a conversation sent for extraction (its most recent part).
pub const EXTRACT_CONVERSATION_CHARS: usize = 24_000;
/// Entities and triples kept per item.
pub const MAX_ITEMS_PER_TEXT: usize = 20;
/// Longest summary kept, in characters.
pub const SUMMARY_CHARS: usize = 200;
/// Longest observation kept, in characters.
pub const OBSERVATION_CHARS: usize = 500;

/// The classification instructions (seed 0 `memory_process`).
pub const CLASSIFY_SYSTEM: &str = "You classify memories kept by an AI agent. For each numbered text, give:\n\
- memory_type: decision (an architecture or technology choice, a trade-off), preference (a personal or team style rule), \
milestone (something achieved or completed), problem (a bug, an error, a root cause and its fix), emotional (feelings, morale), \
fact (a statement about the user, a project or the world), task (pending or in-progress work);\n\
- hall: the kind of content, one of emotions, consciousness, memory, technical, identity, family, creative, general;\n\
- importance: from 0 (trivia) to 1 (must never be forgotten);\n\
- summary: one sentence of at most 150 characters, in the text's language;\n\
- entities: the people, projects, organisations, places and tools the text names, spelled as in the text;\n\
- triples: facts the text states, as subject, predicate (a short snake_case verb phrase such as works_at, uses, prefers, \
lives_in, decided) and object, using the entity names; an empty list when it states none.\n\
Answer with JSON only, following the schema: {\"items\": [{\"id\": …, …}]}, one item per text.";

/// The conflict instructions (seed 0: conflict detection in the cosine band).
pub const CONFLICT_SYSTEM: &str = "You compare pairs of memories kept by an AI agent. For each numbered pair, decide \
whether the NEWER text contradicts or replaces the OLDER one: the same subject with a changed value (a reversed decision, \
a moved date, a changed preference, a new address, a different number). A newer text that adds detail, repeats the older \
one, or talks about something else does not. Answer with JSON only: {\"pairs\": [{\"id\": …, \"contradicts\": true or \
false, \"reason\": \"a short phrase\"}]}, one item per pair.";

/// The extraction instructions (seed 4's prompt, with retractions).
pub const EXTRACT_SYSTEM: &str = "You are a memory extraction assistant. Analyze the conversation and extract \
persistent facts about the user that should be remembered for future conversations.\n\n\
The user's existing memories are provided below. You MUST:\n\
- NOT re-extract information that already exists in the current memories\n\
- If the conversation reveals updated information that contradicts an existing memory, include the existing memory's id \
in the \"updates\" array with the corrected observation\n\
- If the user retracts an existing memory or says it is no longer true, with nothing to replace it, include its id in the \
\"deletes\" array with a short reason\n\
- Only return genuinely NEW information not covered by existing memories\n\
- Ignore questions, hypotheticals, passing moods and states of the moment, and anything the assistant said that the user \
did not confirm\n\n\
Entity types: \"preference\", \"fact\", \"goal\", \"constraint\", \"style\", \"person\"\n\n\
Scope determination:\n\
- \"user\": Personal facts, general preferences, identity (applies across all workspaces)\n\
- \"workspace\": Project-specific context, workspace preferences, user's role in this workspace\n\n\
Write each observation as one self-contained sentence about the user or the project. Answer with JSON only: \
{\"new\": [{\"entity_type\", \"entity_name\", \"observation\", \"scope\"}], \"updates\": [{\"id\", \"observation\"}], \
\"deletes\": [{\"id\", \"reason\"}]}; empty arrays when there is nothing to remember.";

/// The episodic-summary instructions (seed 2 `episodic_worker`).
pub const SUMMARIZE_SYSTEM: &str = "You summarise one session of work between a user and an AI agent, for the agent to \
remember later. Write what happened: the goal, what was decided and why, what was done, problems met and how they were \
solved, what is left open, and anything learned about the user. Keep names, numbers, paths and dates exactly as written. \
Do not invent anything the session does not say. At most 1,000 characters, in the session's language, plain prose. \
Also list up to 10 key topics (people, projects, tools, places), spelled as in the session. Answer with JSON only: \
{\"summary\": \"…\", \"key_topics\": [\"…\"]}.";

/// The dreaming instructions (seed 2 `dreaming_worker`).
pub const DREAM_SYSTEM: &str = "You consolidate an AI agent's recent session summaries into long-term memory. Read the \
numbered episodes and write the insights worth keeping for every future session: the user's preferences, facts about \
the projects, recurring patterns and problems, and key decisions with their reasons. Each insight is one self-contained \
sentence that holds without the episodes; merge what several episodes say; leave out one-off details and anything that \
was later reversed. Cite the episodes each insight comes from. Answer with JSON only: {\"insights\": [{\"kind\": \
\"preference\" | \"fact\" | \"pattern\" | \"decision\", \"text\": \"…\", \"episodes\": [1, 2]}]}; an empty list when \
nothing is worth keeping.";

/// Characters of a session sent for its summary (its beginning and its
/// end when longer).
pub const SUMMARIZE_SESSION_CHARS: usize = 24_000;
/// Longest abstractive summary kept, in characters.
pub const EPISODE_SUMMARY_CHARS: usize = 1_200;
/// Key topics kept per summary.
pub const MAX_KEY_TOPICS: usize = 10;

/// The request for a session's summary: its texts in filing order, the
/// middle left out when the whole is longer than
/// [`SUMMARIZE_SESSION_CHARS`].
pub fn summarize_request(texts: &[&str]) -> ChatRequest {
    let joined = texts.iter().map(|t| t.trim()).filter(|t| !t.is_empty()).collect::<Vec<_>>().join("\n\n");
    let total = joined.chars().count();
    let body = if total <= SUMMARIZE_SESSION_CHARS {
        joined
    } else {
        let half = SUMMARIZE_SESSION_CHARS / 2;
        let head: String = joined.chars().take(half).collect();
        let tail: String = joined.chars().skip(total - half).collect();
        format!("{head}\n\n[… {} characters left out …]\n\n{tail}", total - 2 * half)
    };
    let schema = json!({
        "type": "object",
        "properties": {
            "summary": {"type": "string"},
            "key_topics": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["summary", "key_topics"],
        "additionalProperties": false
    });
    ChatRequest {
        task: Task::Summarize,
        messages: vec![Message::system(SUMMARIZE_SYSTEM), Message::user(format!("Session:\n{body}"))],
        schema: Some(AnswerSchema { name: "episode_summary", schema }),
        temperature: 0.2,
        max_tokens: 1_024,
    }
}

/// Checks a summary answer: a non-empty summary (cut to
/// [`EPISODE_SUMMARY_CHARS`]) and up to [`MAX_KEY_TOPICS`] distinct,
/// non-empty topics.
pub fn check_summary(answer: &Value) -> Result<(String, Vec<String>), LlmError> {
    let summary = answer.get("summary").and_then(Value::as_str).map(str::trim).unwrap_or_default();
    if summary.is_empty() {
        return Err(LlmError::Malformed("the answer has no summary".into()));
    }
    let mut topics: Vec<String> = Vec::new();
    for topic in answer.get("key_topics").and_then(Value::as_array).into_iter().flatten() {
        let Some(topic) = topic.as_str().map(str::trim).filter(|t| !t.is_empty() && t.chars().count() <= 100) else {
            continue;
        };
        if topics.len() < MAX_KEY_TOPICS && !topics.iter().any(|known| known.eq_ignore_ascii_case(topic)) {
            topics.push(topic.to_string());
        }
    }
    Ok((clip(summary, EPISODE_SUMMARY_CHARS), topics))
}

/// One insight of a dreaming pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Insight {
    /// preference, fact, pattern or decision.
    pub kind: &'static str,
    /// One self-contained sentence.
    pub text: String,
    /// The episodes it comes from, as indexes into the episodes sent.
    pub episodes: Vec<usize>,
}

/// The kinds of insight dreaming writes.
pub const INSIGHT_KINDS: &[&str] = &["preference", "fact", "pattern", "decision"];

/// The request for a dreaming pass over `episodes` (their summaries,
/// oldest first, numbered from 1).
pub fn dream_request(episodes: &[&str]) -> ChatRequest {
    let body: Vec<String> = episodes
        .iter()
        .enumerate()
        .map(|(at, text)| format!("[{}] {}", at + 1, clip(text.trim(), EPISODE_SUMMARY_CHARS)))
        .collect();
    let schema = json!({
        "type": "object",
        "properties": {
            "insights": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": INSIGHT_KINDS},
                    "text": {"type": "string"},
                    "episodes": {"type": "array", "items": {"type": "integer"}}
                },
                "required": ["kind", "text", "episodes"],
                "additionalProperties": false
            }}
        },
        "required": ["insights"],
        "additionalProperties": false
    });
    ChatRequest {
        task: Task::Dream,
        messages: vec![Message::system(DREAM_SYSTEM), Message::user(format!("Episodes:\n{}", body.join("\n")))],
        schema: Some(AnswerSchema { name: "dream_insights", schema }),
        temperature: 0.3,
        max_tokens: 4_096,
    }
}

/// Checks a dreaming answer against the `count` episodes sent: an insight
/// of an unknown kind, without text, or citing no episode that was sent
/// is dropped and counted; citations are turned into 0-based indexes.
pub fn check_dream(answer: &Value, count: usize) -> Result<Checked<Insight>, LlmError> {
    let items = answer
        .get("insights")
        .and_then(Value::as_array)
        .ok_or_else(|| LlmError::Malformed("the answer has no \"insights\" list".into()))?;
    let mut checked = Checked { items: Vec::new(), rejected: 0 };
    for item in items {
        let kind = item
            .get("kind")
            .and_then(Value::as_str)
            .and_then(|k| INSIGHT_KINDS.iter().copied().find(|known| *known == k.trim()));
        let text = item.get("text").and_then(Value::as_str).map(str::trim).filter(|t| !t.is_empty());
        let mut episodes: Vec<usize> = item
            .get("episodes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_u64)
            .filter_map(|n| usize::try_from(n).ok())
            .filter(|&n| n >= 1 && n <= count)
            .map(|n| n - 1)
            .collect();
        episodes.sort_unstable();
        episodes.dedup();
        match (kind, text) {
            (Some(kind), Some(text)) if !episodes.is_empty() => {
                checked.items.push(Some(Insight { kind, text: clip(text, OBSERVATION_CHARS), episodes }))
            }
            _ => checked.rejected += 1,
        }
    }
    Ok(checked)
}

/// What classification says of one text.
#[derive(Debug, Clone, PartialEq)]
pub struct Classified {
    /// The memory type.
    pub memory_type: MemoryType,
    /// One of [`HALLS`].
    pub hall: &'static str,
    /// 0–5 (the model answers 0–1; answers on a 0–5 scale are accepted).
    pub importance: f64,
    /// One line, at most [`SUMMARY_CHARS`].
    pub summary: Option<String>,
    /// Entity names, deduplicated.
    pub entities: Vec<String>,
    /// Facts.
    pub triples: Vec<LlmTriple>,
}

/// A fact as a model stated it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LlmTriple {
    /// Subject name.
    pub subject: String,
    /// Relation, snake_case.
    pub predicate: String,
    /// Object name.
    pub object: String,
}

/// A checked answer to a batch: one entry per text asked about (`None`
/// where the model gave no valid item), and how many items were dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked<T> {
    /// By the index of the text or pair asked about.
    pub items: Vec<Option<T>>,
    /// Items that broke a rule and were dropped.
    pub rejected: usize,
}

/// The request classifying `texts` (index = item id).
pub fn classify_request(task: Task, texts: &[&str]) -> ChatRequest {
    let mut body = String::new();
    for (id, text) in texts.iter().enumerate() {
        body.push_str(&format!("<text id=\"{id}\">\n{}\n</text>\n", clip(text, CLASSIFY_TEXT_CHARS)));
    }
    let triple = json!({
        "type": "object",
        "properties": {"subject": {"type": "string"}, "predicate": {"type": "string"}, "object": {"type": "string"}},
        "required": ["subject", "predicate", "object"],
        "additionalProperties": false
    });
    let item = json!({
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "memory_type": {"type": "string", "enum": MemoryType::ALL.iter().map(|t| t.as_str()).collect::<Vec<_>>()},
            "hall": {"type": "string", "enum": HALLS},
            "importance": {"type": "number"},
            "summary": {"type": "string"},
            "entities": {"type": "array", "items": {"type": "string"}},
            "triples": {"type": "array", "items": triple}
        },
        "required": ["id", "memory_type", "hall", "importance", "summary", "entities", "triples"],
        "additionalProperties": false
    });
    ChatRequest {
        task,
        messages: vec![Message::system(CLASSIFY_SYSTEM), Message::user(body)],
        schema: Some(AnswerSchema { name: "classification", schema: items_schema("items", item) }),
        temperature: 0.0,
        max_tokens: 400 * texts.len().max(1) as u32,
    }
}

/// Checks a classification answer for `count` texts.
pub fn check_classification(answer: &Value, count: usize) -> Result<Checked<Classified>, LlmError> {
    let list = answer_list(answer, "items")?;
    let mut checked = Checked { items: vec![None; count], rejected: 0 };
    for item in list {
        match classified(item, count) {
            Some((id, value)) if checked.items[id].is_none() => checked.items[id] = Some(value),
            _ => checked.rejected += 1,
        }
    }
    Ok(checked)
}

fn classified(item: &Value, count: usize) -> Option<(usize, Classified)> {
    let id = item_id(item, count)?;
    let memory_type: MemoryType = item.get("memory_type")?.as_str()?.parse().ok()?;
    let hall = item
        .get("hall")
        .and_then(Value::as_str)
        .and_then(|hall| HALLS.iter().find(|known| known.eq_ignore_ascii_case(hall.trim())))
        .copied()
        .unwrap_or("general");
    let raw = item.get("importance")?.as_f64()?;
    let importance = match raw {
        x if (0.0..=1.0).contains(&x) => x * 5.0,
        x if x > 1.0 && x <= 5.0 => x,
        _ => return None,
    };
    let summary =
        item.get("summary").and_then(Value::as_str).map(|s| clip(s.trim(), SUMMARY_CHARS)).filter(|s| !s.is_empty());
    let mut seen = HashSet::new();
    let entities = item
        .get("entities")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|name| clip(name.trim(), 80))
        .filter(|name| !name.is_empty() && seen.insert(name.to_lowercase()))
        .take(MAX_ITEMS_PER_TEXT)
        .collect();
    let triples = item
        .get("triples")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(triple)
        .take(MAX_ITEMS_PER_TEXT)
        .collect();
    Some((id, Classified { memory_type, hall, importance, summary, entities, triples }))
}

fn triple(value: &Value) -> Option<LlmTriple> {
    let part = |key: &str| value.get(key).and_then(Value::as_str).map(|s| clip(s.trim(), 80)).filter(|s| !s.is_empty());
    let predicate = snake_case(&part("predicate")?);
    if predicate.is_empty() {
        return None;
    }
    Some(LlmTriple { subject: part("subject")?, predicate, object: part("object")? })
}

/// A predicate as a snake_case word: `Works At` → `works_at`.
pub fn snake_case(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.is_empty() && !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_end_matches('_').chars().take(60).collect()
}

/// One pair for the conflict check: the older and the newer text.
#[derive(Debug, Clone, Copy)]
pub struct Pair<'a> {
    /// The drawer filed first.
    pub older: &'a str,
    /// The drawer filed later.
    pub newer: &'a str,
}

/// A conflict verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the newer text contradicts or replaces the older.
    pub contradicts: bool,
    /// The model's reason, short.
    pub reason: String,
}

/// The request asking which pairs contradict.
pub fn conflict_request(pairs: &[Pair<'_>]) -> ChatRequest {
    let mut body = String::new();
    for (id, pair) in pairs.iter().enumerate() {
        body.push_str(&format!(
            "<pair id=\"{id}\">\n<older>\n{}\n</older>\n<newer>\n{}\n</newer>\n</pair>\n",
            clip(pair.older, CLASSIFY_TEXT_CHARS),
            clip(pair.newer, CLASSIFY_TEXT_CHARS)
        ));
    }
    let item = json!({
        "type": "object",
        "properties": {"id": {"type": "integer"}, "contradicts": {"type": "boolean"}, "reason": {"type": "string"}},
        "required": ["id", "contradicts", "reason"],
        "additionalProperties": false
    });
    ChatRequest {
        task: Task::Conflict,
        messages: vec![Message::system(CONFLICT_SYSTEM), Message::user(body)],
        schema: Some(AnswerSchema { name: "conflicts", schema: items_schema("pairs", item) }),
        temperature: 0.0,
        max_tokens: 60 * pairs.len().max(1) as u32,
    }
}

/// Checks a conflict answer for `count` pairs.
pub fn check_conflicts(answer: &Value, count: usize) -> Result<Checked<Verdict>, LlmError> {
    let list = answer_list(answer, "pairs")?;
    let mut checked = Checked { items: vec![None; count], rejected: 0 };
    for item in list {
        let verdict = item_id(item, count).and_then(|id| {
            let contradicts = item.get("contradicts")?.as_bool()?;
            let reason = item.get("reason").and_then(Value::as_str).map(|r| clip(r.trim(), 200)).unwrap_or_default();
            Some((id, Verdict { contradicts, reason }))
        });
        match verdict {
            Some((id, verdict)) if checked.items[id].is_none() => checked.items[id] = Some(verdict),
            _ => checked.rejected += 1,
        }
    }
    Ok(checked)
}

/// The request extracting memories from `conversation` given `existing`
/// (listed to the model under the aliases `m1`, `m2`, …).
pub fn extract_request(conversation: &[Turn], existing: &[ExistingMemory]) -> ChatRequest {
    let mut memories = String::new();
    for (at, memory) in existing.iter().enumerate() {
        memories.push_str(&format!(
            "[m{}] ({}, {}) {}: {}\n",
            at + 1,
            memory.entity_type,
            memory.scope,
            memory.entity_name,
            memory.observation
        ));
    }
    let mut lines: Vec<String> =
        conversation.iter().map(|turn| format!("{}: {}", turn.speaker.as_str(), turn.text.trim())).collect();
    // The most recent part of a long conversation.
    let mut total = 0;
    let keep = lines.iter().rev().take_while(|line| {
        total += line.chars().count() + 1;
        total <= EXTRACT_CONVERSATION_CHARS
    });
    let keep = keep.count().max(1);
    let lines = lines.split_off(lines.len().saturating_sub(keep));
    let body = format!(
        "<existing_memories>\n{memories}</existing_memories>\n\nConversation:\n{}",
        clip(&lines.join("\n"), EXTRACT_CONVERSATION_CHARS)
    );
    let entity_types: Vec<&str> = EntityType::ALL.iter().map(|t| t.as_str()).collect();
    let schema = json!({
        "type": "object",
        "properties": {
            "new": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "entity_type": {"type": "string", "enum": entity_types},
                    "entity_name": {"type": "string"},
                    "observation": {"type": "string"},
                    "scope": {"type": "string", "enum": ["user", "workspace"]}
                },
                "required": ["entity_type", "entity_name", "observation", "scope"],
                "additionalProperties": false
            }},
            "updates": {"type": "array", "items": {
                "type": "object",
                "properties": {"id": {"type": "string"}, "observation": {"type": "string"}},
                "required": ["id", "observation"],
                "additionalProperties": false
            }},
            "deletes": {"type": "array", "items": {
                "type": "object",
                "properties": {"id": {"type": "string"}, "reason": {"type": "string"}},
                "required": ["id", "reason"],
                "additionalProperties": false
            }}
        },
        "required": ["new", "updates", "deletes"],
        "additionalProperties": false
    });
    ChatRequest {
        task: Task::Extract,
        messages: vec![Message::system(EXTRACT_SYSTEM), Message::user(body)],
        schema: Some(AnswerSchema { name: "memory_extraction", schema }),
        temperature: 0.3,
        max_tokens: 1_500,
    }
}

/// Checks an extraction answer against the memories it was given: ids are
/// the aliases `m1`… (or the memories' own ids); the first decision about
/// an existing memory wins; an addition that restates a memory the model
/// was shown, or another addition, word for word, is dropped.
pub fn check_extraction(answer: &Value, existing: &[ExistingMemory]) -> Result<Checked<Decision>, LlmError> {
    let object = answer.as_object().ok_or_else(|| malformed("an object with new, updates and deletes"))?;
    if !["new", "updates", "deletes"].iter().any(|key| object.contains_key(*key)) {
        return Err(malformed("an object with new, updates and deletes"));
    }
    let list = |key: &str| object.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
    let resolve = |alias: &str| -> Option<usize> {
        let alias = alias.trim().trim_start_matches('[').trim_end_matches(']');
        alias
            .strip_prefix('m')
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| (1..=existing.len()).contains(n))
            .map(|n| n - 1)
            .or_else(|| existing.iter().position(|m| m.id == alias))
    };
    let mut decided: HashSet<usize> = HashSet::new();
    let mut known: HashSet<String> = existing.iter().map(|m| fold(&m.observation)).collect();
    let mut checked = Checked { items: Vec::new(), rejected: 0 };
    for item in list("new") {
        let memory = (|| {
            let entity_type: EntityType = item.get("entity_type")?.as_str()?.parse().ok()?;
            let scope: MemoryScope = item.get("scope")?.as_str()?.parse().ok()?;
            let observation = text_field(&item, "observation", OBSERVATION_CHARS)?;
            let entity_name = text_field(&item, "entity_name", 80).unwrap_or_else(|| entity_type.as_str().to_string());
            known.insert(fold(&observation)).then_some(NewMemory { entity_type, entity_name, observation, scope })
        })();
        match memory {
            Some(memory) => checked.items.push(Some(Decision::Add(memory))),
            None => checked.rejected += 1,
        }
    }
    for item in list("updates") {
        let decision = (|| {
            let at = resolve(item.get("id")?.as_str()?)?;
            let observation = text_field(&item, "observation", OBSERVATION_CHARS)?;
            if fold(&observation) == fold(&existing[at].observation) || !decided.insert(at) {
                return None;
            }
            Some(Decision::Update { id: existing[at].id.clone(), observation })
        })();
        match decision {
            Some(decision) => checked.items.push(Some(decision)),
            None => checked.rejected += 1,
        }
    }
    for item in list("deletes") {
        let decision = (|| {
            let at = resolve(item.get("id")?.as_str()?)?;
            if !decided.insert(at) {
                return None;
            }
            let reason = text_field(&item, "reason", 200).unwrap_or_else(|| "retracted in conversation".into());
            Some(Decision::Delete { id: existing[at].id.clone(), reason })
        })();
        match decision {
            Some(decision) => checked.items.push(Some(decision)),
            None => checked.rejected += 1,
        }
    }
    Ok(checked)
}

fn text_field(item: &Value, key: &str, max: usize) -> Option<String> {
    item.get(key).and_then(Value::as_str).map(|s| clip(s.trim(), max)).filter(|s| !s.is_empty())
}

/// Lowercase letters and digits only: two texts that fold alike say the
/// same words.
fn fold(text: &str) -> String {
    text.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

fn items_schema(key: &str, item: Value) -> Value {
    json!({
        "type": "object",
        "properties": {key: {"type": "array", "items": item}},
        "required": [key],
        "additionalProperties": false
    })
}

/// The list under `key`, or a bare list (some models drop the wrapper).
fn answer_list<'a>(answer: &'a Value, key: &str) -> Result<&'a Vec<Value>, LlmError> {
    match answer {
        Value::Array(list) => Ok(list),
        Value::Object(map) => {
            map.get(key).and_then(Value::as_array).ok_or_else(|| malformed(&format!("a list under {key:?}")))
        }
        _ => Err(malformed(&format!("a list under {key:?}"))),
    }
}

fn item_id(item: &Value, count: usize) -> Option<usize> {
    let id = match item.get("id")? {
        Value::Number(n) => n.as_u64()?,
        Value::String(s) => s.trim().parse().ok()?,
        _ => return None,
    };
    usize::try_from(id).ok().filter(|id| *id < count)
}

fn malformed(wanted: &str) -> LlmError {
    LlmError::Malformed(format!("expected {wanted}"))
}

/// At most `max` characters of `text`.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => text[..at].to_string(),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Speaker;

    fn memory(id: &str, observation: &str) -> ExistingMemory {
        ExistingMemory {
            id: id.into(),
            entity_type: EntityType::Preference,
            entity_name: "editor".into(),
            observation: observation.into(),
            scope: MemoryScope::User,
        }
    }

    #[test]
    fn a_classification_batch_is_checked_item_by_item() {
        let answer = json!({"items": [
            {"id": 1, "memory_type": "decision", "hall": "Technical", "importance": 0.8, "summary": " Chose Postgres. ",
             "entities": ["Postgres", "postgres", ""], "triples": [{"subject": "team", "predicate": "Decided To Use", "object": "Postgres"}]},
            {"id": 0, "memory_type": "gossip", "hall": "general", "importance": 0.1, "summary": "", "entities": [], "triples": []},
            {"id": 7, "memory_type": "fact", "hall": "general", "importance": 0.5, "summary": "x", "entities": [], "triples": []},
            {"id": "2", "memory_type": "fact", "hall": "nowhere", "importance": 4, "summary": "", "entities": [], "triples": [{"subject": "a"}]},
            {"id": 1, "memory_type": "fact", "hall": "general", "importance": 0.5, "summary": "dup", "entities": [], "triples": []}
        ]});
        let checked = check_classification(&answer, 3).unwrap();
        assert_eq!(checked.rejected, 3, "unknown type, id out of range, repeated id");
        assert!(checked.items[0].is_none());
        let first = checked.items[1].as_ref().unwrap();
        assert_eq!((first.memory_type, first.hall, first.importance), (MemoryType::Decision, "technical", 4.0));
        assert_eq!(first.summary.as_deref(), Some("Chose Postgres."));
        assert_eq!(first.entities, vec!["Postgres".to_string()]);
        assert_eq!(first.triples[0].predicate, "decided_to_use");
        let third = checked.items[2].as_ref().unwrap();
        assert_eq!((third.hall, third.importance, third.summary.as_deref()), ("general", 4.0, None));
        assert!(third.triples.is_empty(), "an incomplete triple is dropped");
        assert!(check_classification(&json!({"nothing": []}), 1).is_err());
        assert_eq!(check_classification(&json!([]), 2).unwrap().items, vec![None, None], "a bare list is accepted");
    }

    #[test]
    fn the_classification_request_carries_every_text_and_a_schema() {
        let request = classify_request(Task::Classify, &["alpha", "beta"]);
        let body = &request.messages[1].content;
        assert!(body.contains("<text id=\"0\">\nalpha") && body.contains("<text id=\"1\">\nbeta"));
        let schema = &request.schema.as_ref().unwrap().schema;
        assert_eq!(schema["properties"]["items"]["items"]["properties"]["hall"]["enum"], json!(HALLS));
        assert_eq!(request.temperature, 0.0);
    }

    #[test]
    fn extraction_decisions_name_only_memories_the_model_was_shown() {
        let existing =
            vec![memory("drawer_a", "Prefers Vim for editing."), memory("drawer_b", "Uses a standing desk.")];
        let request = extract_request(&[Turn { speaker: Speaker::User, text: "I use Helix now".into() }], &existing);
        assert!(request.messages[1].content.contains("[m1] (preference, user) editor: Prefers Vim for editing."));
        assert!(request.messages[1].content.ends_with("user: I use Helix now"));
        let answer = json!({
            "new": [
                {"entity_type": "preference", "entity_name": "editor", "observation": "prefers vim for editing", "scope": "user"},
                {"entity_type": "goal", "entity_name": "marathon", "observation": "Training for the Berlin marathon.", "scope": "user"},
                {"entity_type": "mood", "entity_name": "x", "observation": "Tired.", "scope": "user"}
            ],
            "updates": [{"id": "m1", "observation": "Uses Helix for editing."}, {"id": "m9", "observation": "?"}],
            "deletes": [{"id": "[m1]", "reason": "double"}, {"id": "drawer_b", "reason": "sold the desk"}]
        });
        let checked = check_extraction(&answer, &existing).unwrap();
        let decisions: Vec<Decision> = checked.items.into_iter().flatten().collect();
        assert_eq!(checked.rejected, 4, "restated memory, unknown type, unknown id, second decision on m1");
        assert!(
            matches!(&decisions[0], Decision::Add(m) if m.entity_name == "marathon" && m.scope == MemoryScope::User)
        );
        assert_eq!(
            decisions[1],
            Decision::Update { id: "drawer_a".into(), observation: "Uses Helix for editing.".into() }
        );
        assert_eq!(decisions[2], Decision::Delete { id: "drawer_b".into(), reason: "sold the desk".into() });
        assert!(check_extraction(&json!({"memories": []}), &existing).is_err());
        assert!(check_extraction(&json!({"new": []}), &existing).unwrap().items.is_empty(), "nothing to remember");
    }

    #[test]
    fn conflict_verdicts_are_checked() {
        let request = conflict_request(&[Pair { older: "Deploy to us-east-1.", newer: "Deploy to eu-west-2." }]);
        assert!(request.messages[1].content.contains("<older>\nDeploy to us-east-1.\n</older>"));
        let checked = check_conflicts(
            &json!({"pairs": [{"id": 0, "contradicts": true, "reason": "region changed"}, {"id": 0}]}),
            1,
        )
        .unwrap();
        assert_eq!(checked.items[0], Some(Verdict { contradicts: true, reason: "region changed".into() }));
        assert_eq!(checked.rejected, 1);
    }

    #[test]
    fn long_conversations_send_their_most_recent_part() {
        let turns: Vec<Turn> = (0..2_000)
            .map(|i| Turn { speaker: Speaker::User, text: format!("message number {i} with some words") })
            .collect();
        let request = extract_request(&turns, &[]);
        let body = &request.messages[1].content;
        assert!(body.contains("message number 1999 ") && !body.contains("message number 0 "));
        assert!(body.chars().count() <= EXTRACT_CONVERSATION_CHARS + 100);
    }

    #[test]
    fn summaries_are_checked_and_long_sessions_keep_both_ends() {
        let (summary, topics) = check_summary(&json!({
            "summary": "  Moved the API to PostgreSQL 16.  ",
            "key_topics": ["PostgreSQL", "postgresql", "", 7, "API"]
        }))
        .unwrap();
        assert_eq!(summary, "Moved the API to PostgreSQL 16.");
        assert_eq!(topics, vec!["PostgreSQL", "API"], "duplicates, empties and non-strings dropped");
        assert!(matches!(check_summary(&json!({"summary": " "})), Err(LlmError::Malformed(_))));
        assert!(
            check_summary(&json!({"summary": "x".repeat(5_000)})).unwrap().0.chars().count() == EPISODE_SUMMARY_CHARS
        );

        let long = format!("START {} END", "word ".repeat(10_000));
        let request = summarize_request(&[long.as_str(), "  ", "last words"]);
        let body = &request.messages[1].content;
        assert!(body.contains("START") && body.contains("last words") && body.contains("characters left out"));
        assert!(body.chars().count() < SUMMARIZE_SESSION_CHARS + 200);
        assert_eq!((request.task, request.max_tokens), (Task::Summarize, 1_024));
    }

    #[test]
    fn dream_insights_cite_episodes_that_were_sent() {
        let checked = check_dream(
            &json!({"insights": [
                {"kind": "preference", "text": "The user prefers small commits.", "episodes": [1, 3, 3]},
                {"kind": "gossip", "text": "Unknown kind.", "episodes": [1]},
                {"kind": "fact", "text": "Cites nothing sent.", "episodes": [0, 9]},
                {"kind": "fact", "text": "  ", "episodes": [2]}
            ]}),
            3,
        )
        .unwrap();
        let insights: Vec<Insight> = checked.items.into_iter().flatten().collect();
        assert_eq!(
            insights,
            vec![Insight { kind: "preference", text: "The user prefers small commits.".into(), episodes: vec![0, 2] }]
        );
        assert_eq!(checked.rejected, 3);
        assert!(matches!(check_dream(&json!({"nothing": []}), 3), Err(LlmError::Malformed(_))));
        let request = dream_request(&["first episode", "second episode"]);
        assert!(request.messages[1].content.contains("[2] second episode"));
    }
}
