//! The benchmark harness on real data: LongMemEval metrics against values
//! computed by hand on the real instance, and LoCoMo end to end on one
//! conversation through the real filing and search path (the full dev
//! split runs as a benchmark, see BENCHMARKS.md).

// Tests take their setup (model directory, shared data, servers) from the
// environment that scripts/test.sh prepares.
#![allow(clippy::disallowed_methods)]

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use mempalace_core::WorkspaceId;
use mempalace_engine::Palace;
use mempalace_eval::{locomo, longmemeval};
use mempalace_sqlite::{SqliteOptions, SqliteStore};

fn shared() -> PathBuf {
    std::env::var_os("MEMPALACE_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn longmemeval_variants_match_hand_computed_values_on_the_real_instance() {
    let instances = longmemeval::load(&shared().join("bench/longmemeval/longmemeval_s_single_e47becba.json")).unwrap();
    assert_eq!(instances.len(), 1);
    let instance = &instances[0];
    assert_eq!(instance.sessions.len(), 53);
    assert_eq!(instance.answer_sessions, vec!["answer_280352e9".to_string()]);
    // The gold user turn is the 5th turn (index 4) of session 51.
    assert_eq!(instance.gold_turns().into_iter().collect::<Vec<_>>(), vec!["answer_280352e9_5".to_string()]);

    // A ranking by hand: sessions newest first, each with its user turns in
    // order. Session 52 (6 user turns) comes first, then the answer session
    // (user turns _1, _3, _5, …), so the answer session ranks 2nd and the
    // gold turn 6 + 3 = 9th.
    let ranked: Vec<String> = instance
        .sessions
        .iter()
        .rev()
        .flat_map(|s| {
            s.turns.iter().enumerate().filter(|(_, t)| t.0 == "user").map(move |(i, _)| format!("{}_{}", s.id, i + 1))
        })
        .collect();
    assert_eq!(ranked.iter().position(|t| t == "answer_280352e9_5"), Some(8));

    let ours: BTreeMap<String, f64> =
        longmemeval::question_metrics(instance, &ranked, true).unwrap().into_iter().collect();
    assert_eq!(ours["session_recall_any@1"], 0.0);
    assert_eq!(ours["session_recall_any@3"], 1.0);
    assert!(close(ours["session_ndcg@10"], 1.0 / 3f64.log2()), "{ours:?}");

    let official: BTreeMap<String, f64> =
        longmemeval::question_metrics(instance, &ranked, false).unwrap().into_iter().collect();
    assert_eq!(official["session_recall_all@1"], 0.0);
    assert_eq!(official["session_recall_all@3"], 1.0);
    assert!(close(official["session_ndcg_any@5"], 1.0 / 3f64.log2()));
    assert_eq!(official["turn_recall_all@5"], 0.0);
    assert_eq!(official["turn_recall_all@10"], 1.0);
    assert!(close(official["turn_ndcg_any@10"], 1.0 / 10f64.log2()), "{official:?}");

    // The official variant skips abstention questions.
    let mut abstention = instance.clone();
    abstention.id.push_str("_abs");
    assert!(longmemeval::question_metrics(&abstention, &ranked, false).is_none());
    assert!(longmemeval::question_metrics(&abstention, &ranked, true).is_some());
}

fn static_palace(dir: &tempfile::TempDir, n: &mut usize) -> Result<Palace, String> {
    *n += 1;
    let store = SqliteStore::open(
        &dir.path().join(format!("palace-{n}.db")),
        SqliteOptions { create: true, ..SqliteOptions::default() },
    )
    .map_err(|e| e.to_string())?;
    let models = PathBuf::from(
        std::env::var_os("MEMPALACE_MODEL_DIR")
            .expect("MEMPALACE_MODEL_DIR is not set; run ./scripts/test.sh (it fetches and distills the models)"),
    );
    let model = mempalace_embed::static_model::StaticModel::load(&mempalace_embed::files::static_dir(&models))
        .map_err(|e| e.to_string())?;
    Ok(Palace::new(Arc::new(store), WorkspaceId::default_workspace()).with_embedder(Arc::new(model)))
}

#[test]
fn locomo_runs_end_to_end_on_one_conversation() {
    let dir = shared().join("bench/locomo");
    let samples = locomo::load(&dir.join("locomo-dev.json")).unwrap();
    assert_eq!(samples.len(), 5);
    assert_eq!(samples.iter().map(|s| s.questions.len()).sum::<usize>(), 1_020);
    let corrections = locomo::load_corrections(&dir.join("locomo-audit-errors-dev.json")).unwrap();
    assert!(corrections.len() >= 30, "{}", corrections.len());
    let first = &samples[..1];
    assert_eq!(first[0].id, "conv-26");
    assert_eq!(first[0].sessions.len(), 19);
    assert!(first[0].sessions.iter().all(|s| s.date.is_some()), "every session is dated");

    let tmp = tempfile::tempdir().unwrap();
    let mut n = 0;
    let mut factory = || static_palace(&tmp, &mut n);
    let report = locomo::run(
        first,
        &corrections,
        &mut factory,
        &locomo::Options { ks: vec![1, 5, 10], fusion: mempalace_engine::Fusion::default() },
        &mut |_| {},
    )
    .unwrap();
    let overall = &report["overall"];
    let value = |key: &str| overall[key].as_f64().unwrap_or_else(|| panic!("{key} missing: {report}"));
    assert_eq!(report["questions"], 197, "199 questions, 2 without evidence: {report}");
    // Sanity bounds, not targets: recall grows with k, all <= session recall.
    assert!(value("turn_recall_any@1") <= value("turn_recall_any@5"));
    assert!(value("turn_recall_any@5") <= value("turn_recall_any@10"));
    assert!(value("turn_recall_all@10") <= value("turn_recall_any@10"));
    assert!(value("turn_recall_any@10") <= value("session_recall_any@10"));
    assert!(value("turn_recall_any@10") > 0.4, "{report}");
    assert!(value("chars_per_query") > 0.0 && value("mrr") > 0.0 && value("ndcg@10") > 0.0);
    for key in ["turn_recall_any@3000c", "session_recall_any@3000c", "turn_evidence_recall@10"] {
        value(key);
    }
    let categories: HashMap<String, u64> = report["by_category"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v["questions"].as_u64().unwrap()))
        .collect();
    assert_eq!(categories.values().sum::<u64>(), 197);
    assert_eq!(report["corrected"]["overall"]["questions"], 197);
    assert!(report["latency_ms"]["p50"].as_f64().unwrap() > 0.0);
}
