//! LongMemEval: one haystack of chat sessions per question.
//!
//! Each haystack is filed into a fresh palace: the user turns of every
//! session, verbatim (split at 800 characters), each drawer carrying its
//! turn id `<session_id>_<turn index + 1>` (the index among all turns of
//! the session, as the official code numbers them). The question goes
//! through the default search; the ranked drawers give a turn ranking and
//! a session ranking (sessions in order of their first turn).
//!
//! Two metric variants:
//! * **MemPalace's** — session-level `recall_any@k` and `ndcg@k` over all
//!   questions, gold = `answer_session_ids`;
//! * **official** (`run_retrieval.py`) — questions ending in `_abs` and
//!   questions with no user turn flagged `has_answer` are skipped; gold
//!   turns are the flagged user turns, gold sessions the sessions holding
//!   them; `recall_all@k` and `ndcg_any@k` at session and turn level.

use std::collections::{BTreeMap, HashSet};
use std::path::Path;

use mempalace_core::eval::{self, Hit};
use mempalace_core::exchange::{Turn, exchanges};
use mempalace_core::{Room, Wing};
use mempalace_engine::{IngestRequest, SearchRequest};
use serde_json::{Value, json};

use crate::{Accumulator, EvalError, PalaceFactory};

/// The k values reported.
pub const KS: &[usize] = &[1, 3, 5, 10, 30, 50];

/// One haystack session.
#[derive(Debug, Clone)]
pub struct HaystackSession {
    /// Its id.
    pub id: String,
    /// Its date text.
    pub date: String,
    /// Turns: (role, content, has_answer).
    pub turns: Vec<(String, String, bool)>,
}

/// One LongMemEval instance.
#[derive(Debug, Clone)]
pub struct Instance {
    /// Question id (`_abs` suffix: abstention).
    pub id: String,
    /// Question type.
    pub kind: String,
    /// The question.
    pub question: String,
    /// Gold sessions.
    pub answer_sessions: Vec<String>,
    /// The haystack.
    pub sessions: Vec<HaystackSession>,
}

impl Instance {
    /// Turn ids of user turns flagged `has_answer` (official gold).
    pub fn gold_turns(&self) -> HashSet<String> {
        self.sessions
            .iter()
            .flat_map(|s| {
                s.turns
                    .iter()
                    .enumerate()
                    .filter(|(_, (role, _, answer))| role == "user" && *answer)
                    .map(move |(i, _)| format!("{}_{}", s.id, i + 1))
            })
            .collect()
    }
}

/// Reads a LongMemEval file (a JSON list of instances).
pub fn load(path: &Path) -> Result<Vec<Instance>, EvalError> {
    let error = |detail: String| EvalError::Data { what: path.display().to_string(), detail };
    let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| error(e.to_string()))?;
    let items = value.as_array().ok_or_else(|| error("expected a JSON list of instances".into()))?;
    items
        .iter()
        .map(|item| {
            let strings = |key: &str| -> Vec<String> {
                item[key]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
                    .unwrap_or_default()
            };
            let ids = strings("haystack_session_ids");
            let dates = strings("haystack_dates");
            let sessions = item["haystack_sessions"].as_array().ok_or_else(|| error("no haystack_sessions".into()))?;
            if sessions.len() != ids.len() {
                return Err(error(format!("{} sessions but {} session ids", sessions.len(), ids.len())));
            }
            Ok(Instance {
                id: item["question_id"].as_str().unwrap_or_default().to_string(),
                kind: item["question_type"].as_str().unwrap_or_default().to_string(),
                question: item["question"].as_str().unwrap_or_default().to_string(),
                answer_sessions: strings("answer_session_ids"),
                sessions: sessions
                    .iter()
                    .zip(&ids)
                    .enumerate()
                    .map(|(i, (turns, id))| HaystackSession {
                        id: id.clone(),
                        date: dates.get(i).cloned().unwrap_or_default(),
                        turns: turns
                            .as_array()
                            .map(|turns| {
                                turns
                                    .iter()
                                    .map(|t| {
                                        (
                                            t["role"].as_str().unwrap_or_default().to_string(),
                                            t["content"].as_str().unwrap_or_default().to_string(),
                                            t["has_answer"].as_bool().unwrap_or(false),
                                        )
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                    })
                    .collect(),
            })
        })
        .collect()
}

fn session_of(turn: &str) -> &str {
    turn.rsplit_once('_').map_or(turn, |(session, _)| session)
}

/// Distinct ids in rank order, each as a one-id hit.
fn dedupe(ids: impl Iterator<Item = String>) -> Vec<Hit> {
    let mut seen = HashSet::new();
    ids.filter(|id| seen.insert(id.clone())).map(|id| Hit { ids: vec![id], chars: 0 }).collect()
}

/// The metric values of one question, from its ranked turn ids.
/// `mempalace` selects the variant; returns `None` when the official
/// variant skips the question.
pub fn question_metrics(instance: &Instance, ranked_turns: &[String], mempalace: bool) -> Option<Vec<(String, f64)>> {
    let turn_hits = dedupe(ranked_turns.iter().cloned());
    let session_hits = dedupe(ranked_turns.iter().map(|t| session_of(t).to_string()));
    let mut values = Vec::new();
    if mempalace {
        let gold: HashSet<String> = instance.answer_sessions.iter().cloned().collect();
        for &k in KS {
            values.push((format!("session_recall_any@{k}"), eval::recall_any(&session_hits, &gold, k)));
        }
        values.push(("session_ndcg@10".into(), eval::ndcg(&session_hits, &gold, 10, gold.len())));
        return Some(values);
    }
    if instance.id.ends_with("_abs") {
        return None;
    }
    let gold_turns = instance.gold_turns();
    if gold_turns.is_empty() {
        return None;
    }
    let gold_sessions: HashSet<String> = gold_turns.iter().map(|t| session_of(t).to_string()).collect();
    for &k in KS {
        values.push((format!("session_recall_all@{k}"), eval::recall_all(&session_hits, &gold_sessions, k)));
        values
            .push((format!("session_ndcg_any@{k}"), eval::ndcg(&session_hits, &gold_sessions, k, gold_sessions.len())));
        values.push((format!("turn_recall_all@{k}"), eval::recall_all(&turn_hits, &gold_turns, k)));
        values.push((format!("turn_ndcg_any@{k}"), eval::ndcg(&turn_hits, &gold_turns, k, gold_turns.len())));
    }
    Some(values)
}

/// Files each haystack and asks its question; returns the report JSON.
pub fn run(
    instances: &[Instance],
    palaces: PalaceFactory<'_>,
    progress: &mut dyn FnMut(&str),
) -> Result<Value, EvalError> {
    let (mut mempalace, mut official) = (Accumulator::default(), Accumulator::default());
    // The full set's six question types differ widely; each gets its own rows.
    let mut by_type: BTreeMap<&str, (Accumulator, Accumulator)> = BTreeMap::new();
    let mut latencies = Vec::new();
    for instance in instances {
        let palace = palaces().map_err(EvalError::Palace)?;
        let wing = Wing::parse("longmemeval").map_err(mempalace_engine::EngineError::from)?;
        let room = Room::parse("chats").map_err(mempalace_engine::EngineError::from)?;
        let mut requests = Vec::new();
        for session in &instance.sessions {
            let turns: Vec<Turn> = session
                .turns
                .iter()
                .enumerate()
                .filter(|(_, (role, content, _))| role == "user" && !content.trim().is_empty())
                .map(|(i, (_, content, _))| Turn {
                    speaker: "user".into(),
                    text: content.clone(),
                    id: format!("{}_{}", session.id, i + 1),
                })
                .collect();
            let mut preceding: Option<String> = None;
            for unit in exchanges(&turns) {
                let mut request = IngestRequest::new(wing.clone(), room.clone(), unit.text.clone(), "longmemeval");
                request.preceding = preceding.replace(unit.text);
                request.raw = true;
                request.session_id = Some(session.id.clone());
                request.context.insert("turn_ids".into(), json!(unit.turn_ids));
                request.filed_at = mempalace_core::time::parse_timestamp(
                    session.date.split(" (").next().unwrap_or("").replace('/', "-").as_str(),
                    "haystack date",
                    mempalace_core::time::DayEdge::Start,
                )
                .ok();
                requests.push(request);
            }
        }
        for chunk in requests.chunks(64) {
            for report in palace.ingest_batch(chunk.to_vec()) {
                report?;
            }
        }
        let started = std::time::Instant::now();
        let outcome = palace.search(&SearchRequest {
            query: instance.question.clone(),
            limit: mempalace_core::layers::ResultLimit::constant(50),
            skip_access_tracking: true,
            ..SearchRequest::default()
        })?;
        latencies.push(started.elapsed().as_secs_f64() * 1000.0);
        let ranked: Vec<String> = outcome
            .hits
            .iter()
            .flat_map(|h| {
                h.drawer.context["turn_ids"]
                    .as_array()
                    .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect::<Vec<_>>())
                    .unwrap_or_default()
            })
            .collect();
        let of_type = by_type.entry(instance.kind.as_str()).or_default();
        if let Some(values) = question_metrics(instance, &ranked, true) {
            mempalace.add(&values);
            of_type.0.add(&values);
        }
        if let Some(values) = question_metrics(instance, &ranked, false) {
            official.add(&values);
            of_type.1.add(&values);
        }
        progress(&format!("{}: {} drawers", instance.id, requests.len()));
    }
    Ok(json!({
        "mempalace": mempalace.to_json(),
        "official": official.to_json(),
        "by_type": by_type
            .iter()
            .map(|(kind, (mempalace, official))| {
                ((*kind).to_string(), json!({"mempalace": mempalace.to_json(), "official": official.to_json()}))
            })
            .collect::<serde_json::Map<String, Value>>(),
        "latency_ms": {"p50": eval::percentile(&latencies, 50.0), "p95": eval::percentile(&latencies, 95.0)},
        "questions": instances.len(),
    }))
}
