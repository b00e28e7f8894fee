//! Memory-extraction quality on a labelled set (`crates/core/tests/data/
//! memory_extraction*.json`): each case is a conversation, the user's
//! existing memories and the decisions a careful reader expects. An
//! extractor — the rules or a model — is run on every case and scored.
//!
//! Matching is one-to-one within a case. An expected addition is met by a
//! predicted addition of the same scope whose observation contains every
//! `must_contain` string (case-insensitive); an expected update by an
//! update of the same memory whose observation contains them; an expected
//! deletion by a deletion of the same memory. Every prediction left over is
//! a false positive (so is any prediction in a case that expects nothing).
//! The entity type is reported as a secondary accuracy over matched
//! additions.

use std::path::Path;

use mempalace_core::memory::{Decision, EntityType, ExistingMemory, MemoryScope, Speaker, Turn};
use serde_json::Value;

use crate::EvalError;

/// One expected decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expected {
    /// A new memory.
    Add {
        /// Its type (secondary).
        entity_type: EntityType,
        /// Its scope.
        scope: MemoryScope,
        /// Strings its observation must contain.
        must_contain: Vec<String>,
    },
    /// A changed memory.
    Update {
        /// The memory.
        id: String,
        /// Strings the new observation must contain.
        must_contain: Vec<String>,
    },
    /// A retracted memory.
    Delete {
        /// The memory.
        id: String,
    },
}

/// One labelled case.
#[derive(Debug, Clone)]
pub struct Case {
    /// Its name.
    pub id: String,
    /// The user's memories before the conversation.
    pub existing: Vec<ExistingMemory>,
    /// The conversation.
    pub conversation: Vec<Turn>,
    /// What should be decided.
    pub expected: Vec<Expected>,
}

/// Reads a labelled set.
pub fn load(path: &Path) -> Result<Vec<Case>, EvalError> {
    let bad = |detail: &str| EvalError::Data { what: path.display().to_string(), detail: detail.to_string() };
    let text = std::fs::read_to_string(path).map_err(|e| bad(&e.to_string()))?;
    let root: Value = serde_json::from_str(&text).map_err(|e| bad(&e.to_string()))?;
    let str_of = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let strings = |v: &Value| -> Vec<String> {
        v.get("must_contain")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    };
    let mut cases = Vec::new();
    for case in root.get("cases").and_then(Value::as_array).ok_or_else(|| bad("no cases"))? {
        let id = str_of(case, "id").ok_or_else(|| bad("a case without an id"))?;
        let mut existing = Vec::new();
        for memory in case.get("existing").and_then(Value::as_array).into_iter().flatten() {
            existing.push(ExistingMemory {
                id: str_of(memory, "id").ok_or_else(|| bad(&format!("{id}: a memory without id")))?,
                entity_type: str_of(memory, "entity_type")
                    .and_then(|t| t.parse().ok())
                    .ok_or_else(|| bad(&format!("{id}: entity_type")))?,
                entity_name: str_of(memory, "entity_name").unwrap_or_default(),
                observation: str_of(memory, "observation").unwrap_or_default(),
                scope: str_of(memory, "scope")
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| bad(&format!("{id}: scope")))?,
            });
        }
        let conversation = case
            .get("conversation")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|turn| Turn {
                speaker: if str_of(turn, "role").as_deref() == Some("user") {
                    Speaker::User
                } else {
                    Speaker::Assistant
                },
                text: str_of(turn, "text").unwrap_or_default(),
            })
            .collect();
        let mut expected = Vec::new();
        for item in case.get("expected").and_then(Value::as_array).into_iter().flatten() {
            let decision = str_of(item, "decision").unwrap_or_default();
            expected.push(match decision.as_str() {
                "add" => Expected::Add {
                    entity_type: str_of(item, "entity_type")
                        .and_then(|t| t.parse().ok())
                        .ok_or_else(|| bad(&format!("{id}: entity_type")))?,
                    scope: str_of(item, "scope")
                        .and_then(|s| s.parse().ok())
                        .ok_or_else(|| bad(&format!("{id}: scope")))?,
                    must_contain: strings(item),
                },
                "update" => Expected::Update {
                    id: str_of(item, "id").ok_or_else(|| bad(&format!("{id}: update without id")))?,
                    must_contain: strings(item),
                },
                "delete" => {
                    Expected::Delete { id: str_of(item, "id").ok_or_else(|| bad(&format!("{id}: delete without id")))? }
                }
                other => return Err(bad(&format!("{id}: unknown decision {other:?}"))),
            });
        }
        cases.push(Case { id, existing, conversation, expected });
    }
    Ok(cases)
}

/// Counts for one decision kind or overall.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Predictions that met an expectation.
    pub true_positives: usize,
    /// Predictions that met none.
    pub false_positives: usize,
    /// Expectations no prediction met.
    pub false_negatives: usize,
}

impl Counts {
    /// Matched predictions over predictions (1 when nothing was predicted).
    pub fn precision(&self) -> f64 {
        let predicted = self.true_positives + self.false_positives;
        if predicted == 0 { 1.0 } else { self.true_positives as f64 / predicted as f64 }
    }

    /// Met expectations over expectations (1 when nothing was expected).
    pub fn recall(&self) -> f64 {
        let expected = self.true_positives + self.false_negatives;
        if expected == 0 { 1.0 } else { self.true_positives as f64 / expected as f64 }
    }

    /// Harmonic mean of precision and recall.
    pub fn f1(&self) -> f64 {
        let (p, r) = (self.precision(), self.recall());
        if p + r == 0.0 { 0.0 } else { 2.0 * p * r / (p + r) }
    }
}

/// How an extractor did on a set.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// All decisions.
    pub overall: Counts,
    /// Additions, updates, deletions.
    pub by_kind: [(&'static str, Counts); 3],
    /// Matched additions whose entity type was the expected one.
    pub entity_type_right: usize,
    /// Matched additions.
    pub entity_type_of: usize,
    /// Cases the extractor could not run on (a model error), by id.
    pub errors: Vec<(String, String)>,
    /// One line per false positive and false negative, for reading.
    pub misses: Vec<String>,
}

/// Runs `extract` on every case and scores it.
pub fn score<F>(cases: &[Case], mut extract: F) -> Report
where
    F: FnMut(&Case) -> Result<Vec<Decision>, String>,
{
    let mut report = Report {
        by_kind: [("add", Counts::default()), ("update", Counts::default()), ("delete", Counts::default())],
        ..Report::default()
    };
    let kind_at = |kind: &str| match kind {
        "add" => 0,
        "update" => 1,
        _ => 2,
    };
    for case in cases {
        let predicted = match extract(case) {
            Ok(predicted) => predicted,
            Err(error) => {
                report.errors.push((case.id.clone(), error));
                Vec::new()
            }
        };
        let mut used = vec![false; predicted.len()];
        for expected in &case.expected {
            let found = predicted.iter().enumerate().position(|(at, decision)| !used[at] && meets(decision, expected));
            let kind = match expected {
                Expected::Add { .. } => "add",
                Expected::Update { .. } => "update",
                Expected::Delete { .. } => "delete",
            };
            match found {
                Some(at) => {
                    used[at] = true;
                    report.overall.true_positives += 1;
                    report.by_kind[kind_at(kind)].1.true_positives += 1;
                    if let (Expected::Add { entity_type, .. }, Decision::Add(memory)) = (expected, &predicted[at]) {
                        report.entity_type_of += 1;
                        report.entity_type_right += usize::from(memory.entity_type == *entity_type);
                    }
                }
                None => {
                    report.overall.false_negatives += 1;
                    report.by_kind[kind_at(kind)].1.false_negatives += 1;
                    report.misses.push(format!("{}: missed {expected:?}", case.id));
                }
            }
        }
        for (at, decision) in predicted.iter().enumerate() {
            if !used[at] {
                report.overall.false_positives += 1;
                report.by_kind[kind_at(decision.kind())].1.false_positives += 1;
                report.misses.push(format!("{}: extra {decision:?}", case.id));
            }
        }
    }
    report
}

fn contains_all(text: &str, needles: &[String]) -> bool {
    let text = text.to_lowercase();
    needles.iter().all(|needle| text.contains(&needle.to_lowercase()))
}

fn meets(decision: &Decision, expected: &Expected) -> bool {
    match (decision, expected) {
        (Decision::Add(memory), Expected::Add { scope, must_contain, .. }) => {
            memory.scope == *scope && contains_all(&memory.observation, must_contain)
        }
        (Decision::Update { id, observation }, Expected::Update { id: wanted, must_contain }) => {
            id == wanted && contains_all(observation, must_contain)
        }
        (Decision::Delete { id, .. }, Expected::Delete { id: wanted }) => id == wanted,
        _ => false,
    }
}

/// The report as text: one line per kind and overall, then the misses.
pub fn render(report: &Report, with_misses: bool) -> String {
    let line = |name: &str, c: &Counts| {
        format!(
            "{name:<8} precision {:.3}  recall {:.3}  f1 {:.3}  (tp {}, fp {}, fn {})\n",
            c.precision(),
            c.recall(),
            c.f1(),
            c.true_positives,
            c.false_positives,
            c.false_negatives
        )
    };
    let mut out = line("overall", &report.overall);
    for (name, counts) in &report.by_kind {
        out.push_str(&line(name, counts));
    }
    out.push_str(&format!(
        "entity type right on {}/{} matched additions\n",
        report.entity_type_right, report.entity_type_of
    ));
    for (case, error) in &report.errors {
        out.push_str(&format!("error in {case}: {error}\n"));
    }
    if with_misses {
        for miss in &report.misses {
            out.push_str(miss);
            out.push('\n');
        }
    }
    out
}
