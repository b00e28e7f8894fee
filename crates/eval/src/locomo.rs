//! LoCoMo: long conversations between two people, with questions whose
//! evidence is a set of turns (`dia_id`s such as `D3:7`).
//!
//! Each conversation is filed into a fresh palace as exchanges (a turn and
//! its reply, split at 800 characters; image turns as their
//! `blip_caption`), each drawer dated by its session and carrying its
//! turns' `dia_id`s in its context. A turn counts as retrieved when it lies
//! inside a returned drawer; a session when any of its turns does.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use mempalace_core::eval::{self, Hit};
use mempalace_core::exchange::{Turn, exchanges};
use mempalace_core::time::Timestamp;
use mempalace_core::{Room, Wing};
use mempalace_engine::{IngestRequest, SearchRequest};
use serde_json::{Value, json};

use crate::{Accumulator, EvalError, PalaceFactory};

/// Room the conversations are filed in.
const ROOM: &str = "conversations";
/// Character budget of the `@…c` metrics.
pub const BUDGET_CHARS: usize = 3_000;

/// One session of a conversation.
#[derive(Debug, Clone)]
pub struct Session {
    /// Its number (`session_<n>`).
    pub number: u32,
    /// When it took place, when the date parses.
    pub date: Option<Timestamp>,
    /// The turns, images as their captions.
    pub turns: Vec<Turn>,
}

/// One question.
#[derive(Debug, Clone)]
pub struct Question {
    /// Index in the sample's `qa` list.
    pub index: usize,
    /// The question.
    pub question: String,
    /// Raw category id (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial).
    pub category: u32,
    /// Evidence turns, normalised.
    pub evidence: Vec<String>,
}

/// One conversation with its questions.
#[derive(Debug, Clone)]
pub struct Sample {
    /// `conv-26`, …
    pub id: String,
    /// Sessions in order.
    pub sessions: Vec<Session>,
    /// Questions.
    pub questions: Vec<Question>,
    /// Evidence ids dropped because they name no turn.
    pub dropped_evidence: usize,
}

/// Parses a LoCoMo session date such as `1:56 pm on 8 May, 2023`.
pub fn parse_date(text: &str) -> Option<Timestamp> {
    let naive = chrono::NaiveDateTime::parse_from_str(text.trim(), "%I:%M %p on %d %B, %Y").ok()?;
    Some(naive.and_utc())
}

/// Splits and repairs an evidence list (`"D8:6; D9:17"`, `"D:11:26"`, …).
pub fn normalize_evidence(raw: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for value in raw {
        let Some(text) = value.as_str() else { continue };
        for token in text.split(|c: char| c == ';' || c == ',' || c.is_whitespace()).filter(|t| !t.is_empty()) {
            let token = token.strip_prefix("D:").map_or_else(|| token.to_string(), |rest| format!("D{rest}"));
            let valid = token.strip_prefix('D').and_then(|rest| rest.split_once(':')).is_some_and(|(s, t)| {
                !s.is_empty() && !t.is_empty() && s.parse::<u32>().is_ok() && t.parse::<u32>().is_ok()
            });
            if valid && !out.contains(&token) {
                out.push(token);
            }
        }
    }
    out
}

fn data_error(what: &Path, detail: impl std::fmt::Display) -> EvalError {
    EvalError::Data { what: what.display().to_string(), detail: detail.to_string() }
}

/// Reads a LoCoMo file (a JSON list of samples).
pub fn load(path: &Path) -> Result<Vec<Sample>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|e| data_error(path, e))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| data_error(path, e))?;
    let samples = value.as_array().ok_or_else(|| data_error(path, "expected a JSON list of samples"))?;
    samples.iter().map(|s| sample(s).map_err(|e| data_error(path, e))).collect()
}

fn sample(value: &Value) -> Result<Sample, String> {
    let id = value["sample_id"].as_str().ok_or("a sample has no sample_id")?.to_string();
    let conversation = value["conversation"].as_object().ok_or_else(|| format!("{id}: no conversation"))?;
    let mut sessions = Vec::new();
    for (key, turns) in conversation {
        let Some(number) = key.strip_prefix("session_").and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Some(turns) = turns.as_array() else { continue };
        let date =
            conversation.get(&format!("session_{number}_date_time")).and_then(Value::as_str).and_then(parse_date);
        let turns = turns
            .iter()
            .filter_map(|t| {
                let text = t["text"].as_str().unwrap_or("").trim();
                let caption = t["blip_caption"].as_str().map(|c| format!("[shares an image: {c}]"));
                let text = match (text.is_empty(), caption) {
                    (true, Some(caption)) => caption,
                    (false, Some(caption)) => format!("{text} {caption}"),
                    (_, None) => text.to_string(),
                };
                Some(Turn { speaker: t["speaker"].as_str()?.to_string(), text, id: t["dia_id"].as_str()?.to_string() })
            })
            .collect();
        sessions.push(Session { number, date, turns });
    }
    sessions.sort_by_key(|s| s.number);
    let known: HashSet<&str> = sessions.iter().flat_map(|s| s.turns.iter().map(|t| t.id.as_str())).collect();
    let mut dropped = 0;
    let questions = value["qa"]
        .as_array()
        .ok_or_else(|| format!("{id}: no qa list"))?
        .iter()
        .enumerate()
        .map(|(index, q)| {
            let raw = q["evidence"].as_array().cloned().unwrap_or_default();
            let normalized = normalize_evidence(&raw);
            let evidence: Vec<String> = normalized.iter().filter(|e| known.contains(e.as_str())).cloned().collect();
            dropped += normalized.len() - evidence.len();
            Question {
                index,
                question: q["question"].as_str().unwrap_or_default().to_string(),
                category: q["category"].as_u64().unwrap_or(0) as u32,
                evidence,
            }
        })
        .collect();
    Ok(Sample { id, sessions, questions, dropped_evidence: dropped })
}

/// Reads the audit's corrected evidence: (sample id, question index) →
/// corrected evidence.
pub fn load_corrections(path: &Path) -> Result<HashMap<(String, usize), Vec<String>>, EvalError> {
    let text = std::fs::read_to_string(path).map_err(|e| data_error(path, e))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| data_error(path, e))?;
    let mut out = HashMap::new();
    for entry in value.as_array().ok_or_else(|| data_error(path, "expected a JSON list"))? {
        let (Some(sample), Some(question)) = (entry["sample_id"].as_str(), entry["question_id"].as_str()) else {
            continue;
        };
        let Some(index) = question.rsplit_once("_qa").and_then(|(_, j)| j.parse::<usize>().ok()) else { continue };
        let evidence = normalize_evidence(entry["correct_evidence"].as_array().map_or(&[][..], Vec::as_slice));
        if !evidence.is_empty() {
            out.insert((sample.to_string(), index), evidence);
        }
    }
    Ok(out)
}

/// Options of a run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The k values to report.
    pub ks: Vec<usize>,
    /// Fusion (the product's default unless comparing variants).
    pub fusion: mempalace_engine::Fusion,
    /// Run consolidation after filing each conversation (episodes of its
    /// sessions, promotion) and report how episode search finds the
    /// evidence sessions (`episodes`), beside the drawers' metrics.
    pub consolidate: bool,
    /// Also write every question's ranked hits to this file, one JSON
    /// object a line (`scripts/bench/hits.py` reads it): the conversation,
    /// the question's index, text and category, its evidence (original and
    /// corrected) and, per hit, the turn ids, score and length, so ranking
    /// variants and misses can be studied without another run.
    pub hits: Option<PathBuf>,
}

/// What episode search adds to the drawers': the evidence sessions the
/// top-k episodes name (`episode_session_recall_any@k`), how often they
/// name one the drawers' top 10 missed (`episodes_add_session@k`), and,
/// for comparison, how often drawers 11 to 10 + k would
/// (`more_drawers_add_session@k`, k ≤ 10).
fn episode_metrics(episodes: &[Hit], drawers: &[Hit], evidence: &[String], ks: &[usize]) -> Vec<(String, f64)> {
    let gold: HashSet<String> = evidence.iter().map(|e| session_of(e)).collect();
    let drawer_sessions: HashSet<String> =
        drawers.iter().take(10).flat_map(|h| h.ids.iter().map(|i| session_of(i))).collect();
    let mut values = Vec::new();
    for &k in ks {
        values.push((format!("episode_session_recall_any@{k}"), eval::recall_any(episodes, &gold, k)));
        let added = episodes
            .iter()
            .take(k)
            .flat_map(|h| h.ids.iter())
            .any(|session| gold.contains(session) && !drawer_sessions.contains(session));
        values.push((format!("episodes_add_session@{k}"), if added { 1.0 } else { 0.0 }));
        // The same question asked of the next k drawers instead: what more
        // drawers would add, for comparison.
        if k <= 10 {
            let added = drawers
                .iter()
                .skip(10)
                .take(k)
                .flat_map(|h| h.ids.iter().map(|i| session_of(i)))
                .any(|session| gold.contains(&session) && !drawer_sessions.contains(&session));
            values.push((format!("more_drawers_add_session@{k}"), if added { 1.0 } else { 0.0 }));
        }
    }
    values
}

fn session_of(turn: &str) -> String {
    turn.split(':').next().unwrap_or(turn).to_string()
}

fn question_metrics(hits: &[Hit], evidence: &[String], ks: &[usize], relevant_units: usize) -> Vec<(String, f64)> {
    let gold: HashSet<String> = evidence.iter().cloned().collect();
    let gold_sessions: HashSet<String> = evidence.iter().map(|e| session_of(e)).collect();
    let session_hits: Vec<Hit> =
        hits.iter().map(|h| Hit { ids: h.ids.iter().map(|i| session_of(i)).collect(), chars: h.chars }).collect();
    let mut values = Vec::new();
    for &k in ks {
        values.push((format!("turn_recall_any@{k}"), eval::recall_any(hits, &gold, k)));
        values.push((format!("turn_recall_all@{k}"), eval::recall_all(hits, &gold, k)));
        values.push((format!("turn_evidence_recall@{k}"), eval::evidence_recall(hits, &gold, k)));
        values.push((format!("session_recall_any@{k}"), eval::recall_any(&session_hits, &gold_sessions, k)));
    }
    let budget = eval::within_budget(hits, BUDGET_CHARS);
    values.push((format!("turn_recall_any@{BUDGET_CHARS}c"), eval::recall_any(hits, &gold, budget)));
    values
        .push((format!("session_recall_any@{BUDGET_CHARS}c"), eval::recall_any(&session_hits, &gold_sessions, budget)));
    values.push(("ndcg@10".into(), eval::ndcg(hits, &gold, 10, relevant_units)));
    values.push(("mrr".into(), eval::mrr(hits, &gold)));
    values.push(("chars_per_query".into(), hits.iter().take(10).map(|h| h.chars as f64).sum()));
    values
}

/// Files every sample and asks every question; returns the report JSON.
pub fn run(
    samples: &[Sample],
    corrections: &HashMap<(String, usize), Vec<String>>,
    palaces: PalaceFactory<'_>,
    options: &Options,
    progress: &mut dyn FnMut(&str),
) -> Result<Value, EvalError> {
    let depth = options.ks.iter().copied().max().unwrap_or(10).max(10);
    let limit = mempalace_core::layers::ResultLimit::new(depth as i64).map_err(mempalace_engine::EngineError::from)?;
    let (mut overall, mut corrected) = (Accumulator::default(), Accumulator::default());
    let mut by_category: BTreeMap<u32, Accumulator> = BTreeMap::new();
    let mut corrected_by_category: BTreeMap<u32, Accumulator> = BTreeMap::new();
    let mut latencies = Vec::new();
    let (mut drawers_filed, mut skipped, mut dropped) = (0, 0, 0);
    let (mut episodes_overall, mut episodes_by_category) =
        (Accumulator::default(), BTreeMap::<u32, Accumulator>::new());
    let mut consolidated = mempalace_engine::consolidate::ConsolidateReport::default();
    let mut hits_file = match options.hits.as_deref() {
        Some(path) => {
            Some((std::io::BufWriter::new(std::fs::File::create(path).map_err(|e| data_error(path, e))?), path))
        }
        None => None,
    };
    let started = Instant::now();
    for sample in samples {
        let palace = palaces().map_err(EvalError::Palace)?;
        let wing = Wing::parse(&sample.id).map_err(mempalace_engine::EngineError::from)?;
        let room = Room::parse(ROOM).map_err(mempalace_engine::EngineError::from)?;
        let mut units: Vec<Vec<String>> = Vec::new();
        let mut requests = Vec::new();
        for session in &sample.sessions {
            // As the conversation miner files a transcript: each exchange's
            // vector carries the exchange before it.
            let mut preceding: Option<String> = None;
            for exchange in exchanges(&session.turns) {
                let mut request = IngestRequest::new(wing.clone(), room.clone(), exchange.text.clone(), "locomo");
                request.preceding = preceding.replace(exchange.text);
                request.raw = true;
                request.session_id = Some(format!("{}:S{}", sample.id, session.number));
                request.context.insert("dia_ids".into(), json!(exchange.turn_ids));
                request.context.insert("session".into(), json!(session.number));
                request.filed_at = session.date;
                units.push(exchange.turn_ids);
                requests.push(request);
            }
        }
        for chunk in requests.chunks(64) {
            for report in palace.ingest_batch(chunk.to_vec()) {
                drawers_filed += report?.drawer_ids().len();
            }
        }
        progress(&format!("{}: {} drawers filed, {} questions", sample.id, units.len(), sample.questions.len()));
        if options.consolidate {
            consolidated += palace.consolidate_all()?;
        }
        for question in &sample.questions {
            let fixed = corrections.get(&(sample.id.clone(), question.index));
            if question.evidence.is_empty() && fixed.is_none() {
                skipped += 1;
                continue;
            }
            let started = Instant::now();
            let outcome = palace.search(&SearchRequest {
                query: question.question.clone(),
                limit,
                fusion: options.fusion,
                skip_access_tracking: true,
                ..SearchRequest::default()
            })?;
            latencies.push(started.elapsed().as_secs_f64() * 1000.0);
            let hits: Vec<Hit> = outcome
                .hits
                .iter()
                .map(|h| Hit {
                    ids: h.drawer.context["dia_ids"]
                        .as_array()
                        .map(|ids| ids.iter().filter_map(Value::as_str).map(str::to_string).collect())
                        .unwrap_or_default(),
                    chars: h.drawer.content.as_str().chars().count(),
                })
                .collect();
            if let Some((file, path)) = hits_file.as_mut() {
                let line = json!({
                    "conversation": sample.id,
                    "question": question.index,
                    "text": question.question,
                    "category": question.category,
                    "evidence": question.evidence,
                    "corrected": fixed,
                    "hits": outcome.hits.iter().zip(&hits).map(|(found, hit)| json!({
                        "turns": hit.ids,
                        "score": found.score,
                        "chars": hit.chars,
                    })).collect::<Vec<_>>(),
                });
                writeln!(file, "{line}").map_err(|e| data_error(path, e))?;
            }
            let relevant =
                |evidence: &[String]| units.iter().filter(|u| u.iter().any(|id| evidence.contains(id))).count();
            if !question.evidence.is_empty() {
                let values = question_metrics(&hits, &question.evidence, &options.ks, relevant(&question.evidence));
                overall.add(&values);
                by_category.entry(question.category).or_default().add(&values);
            }
            if options.consolidate && !question.evidence.is_empty() {
                // `conv-26:S3` is LoCoMo's session D3.
                let found =
                    palace.search_episodes(&question.question, outcome.query_vector.as_ref(), None, depth, 0.0)?;
                let episodes: Vec<Hit> = found
                    .iter()
                    .map(|hit| {
                        let number = hit.episode.session_id.rsplit(":S").next().unwrap_or_default();
                        Hit { ids: vec![format!("D{number}")], chars: hit.episode.summary.chars().count() }
                    })
                    .collect();
                let values = episode_metrics(&episodes, &hits, &question.evidence, &options.ks);
                episodes_overall.add(&values);
                episodes_by_category.entry(question.category).or_default().add(&values);
            }
            let evidence = fixed.unwrap_or(&question.evidence);
            if !evidence.is_empty() {
                let values = question_metrics(&hits, evidence, &options.ks, relevant(evidence));
                corrected.add(&values);
                corrected_by_category.entry(question.category).or_default().add(&values);
            }
        }
        dropped += sample.dropped_evidence;
    }
    if let Some((mut file, path)) = hits_file {
        file.flush().map_err(|e| data_error(path, e))?;
    }
    let groups = |map: &BTreeMap<u32, Accumulator>| -> Value {
        Value::Object(map.iter().map(|(c, a)| (c.to_string(), a.to_json())).collect())
    };
    let episodes = options.consolidate.then(|| {
        json!({
            "overall": episodes_overall.to_json(),
            "by_category": groups(&episodes_by_category),
            "written": consolidated.episodes,
            "promoted": consolidated.promoted,
        })
    });
    Ok(json!({
        "episodes": episodes,
        "overall": overall.to_json(),
        "by_category": groups(&by_category),
        "corrected": {"overall": corrected.to_json(), "by_category": groups(&corrected_by_category)},
        "latency_ms": {"p50": eval::percentile(&latencies, 50.0), "p95": eval::percentile(&latencies, 95.0)},
        "questions": overall.count(),
        "questions_without_evidence": skipped,
        "evidence_ids_dropped": dropped,
        "conversations": samples.len(),
        "drawers": drawers_filed,
        "seconds": started.elapsed().as_secs_f64(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_lists_are_repaired() {
        let raw = [json!("D8:6; D9:17"), json!("D1:2 D1:3"), json!("D"), json!("D:11:26"), json!("D8:6")];
        assert_eq!(normalize_evidence(&raw), vec!["D8:6", "D9:17", "D1:2", "D1:3", "D11:26"]);
    }

    #[test]
    fn session_dates_parse() {
        let at = parse_date("1:56 pm on 8 May, 2023").unwrap();
        assert_eq!(at.format("%Y-%m-%d %H:%M").to_string(), "2023-05-08 13:56");
        assert!(parse_date("yesterday").is_none());
    }

    #[test]
    fn metrics_of_one_question() {
        let hits = vec![
            Hit { ids: vec!["D1:1".into(), "D1:2".into()], chars: 2_000 },
            Hit { ids: vec!["D3:5".into()], chars: 1_500 },
        ];
        let values: BTreeMap<String, f64> =
            question_metrics(&hits, &["D3:5".into(), "D3:9".into()], &[1, 2], 2).into_iter().collect();
        assert_eq!(values["turn_recall_any@1"], 0.0);
        assert_eq!(values["turn_recall_any@2"], 1.0);
        assert_eq!(values["turn_recall_all@2"], 0.0);
        assert_eq!(values["turn_evidence_recall@2"], 0.5);
        assert_eq!(values["session_recall_any@2"], 1.0);
        assert_eq!(values["turn_recall_any@3000c"], 0.0, "the second hit does not fit the budget");
        assert_eq!(values["mrr"], 0.5);
        assert_eq!(values["chars_per_query"], 3_500.0);
    }
}
