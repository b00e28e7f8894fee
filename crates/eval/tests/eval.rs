//! The benchmark harness, in two layers. On the repository's synthetic
//! LoCoMo- and LongMemEval-shaped sets (`fixtures/bench/`, written for these
//! tests): loading (dates, image captions, evidence repair, corrections),
//! metrics against values computed by hand, and both benchmarks end to end
//! through the real filing and search path with exact question counts. On
//! the real data (`real_data`: the LongMemEval instance and one LoCoMo
//! conversation of `MEMPALACE_SHARED_DIR`/bench) in addition; the full dev
//! split runs as a benchmark, see BENCHMARKS.md.

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

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

fn bench(name: &str) -> PathBuf {
    mempalace_testdata::fixture(&format!("bench/{name}"))
}

#[test]
fn longmemeval_variants_match_hand_computed_values() {
    let instances = longmemeval::load(&bench("longmemeval-mini.json")).unwrap();
    assert_eq!(instances.len(), 2);
    let instance = &instances[0];
    assert_eq!(instance.sessions.len(), 4);
    assert_eq!(instance.sessions[1].date, "2024/06/08 (Sat) 16:40");
    assert_eq!(instance.answer_sessions, vec!["answer_mini_2".to_string()]);
    // The gold user turn is the 3rd turn (index 2) of the answer session.
    assert_eq!(instance.gold_turns().into_iter().collect::<Vec<_>>(), vec!["answer_mini_2_3".to_string()]);

    // A ranking by hand: sessions newest first, each with its user turns in
    // order: mini_s4 (_1, _3), mini_s3 (_1), answer_mini_2 (_1, _3, _5),
    // mini_s1 (_1, _3). The answer session ranks 3rd, the gold turn 5th.
    let ranked: Vec<String> = instance
        .sessions
        .iter()
        .rev()
        .flat_map(|s| {
            s.turns.iter().enumerate().filter(|(_, t)| t.0 == "user").map(move |(i, _)| format!("{}_{}", s.id, i + 1))
        })
        .collect();
    assert_eq!(ranked.iter().position(|t| t == "answer_mini_2_3"), Some(4));

    let ours: BTreeMap<String, f64> =
        longmemeval::question_metrics(instance, &ranked, true).unwrap().into_iter().collect();
    assert_eq!(ours["session_recall_any@1"], 0.0);
    assert_eq!(ours["session_recall_any@3"], 1.0);
    assert!(close(ours["session_ndcg@10"], 1.0 / 4f64.log2()), "{ours:?}");

    let official: BTreeMap<String, f64> =
        longmemeval::question_metrics(instance, &ranked, false).unwrap().into_iter().collect();
    assert_eq!(official["session_recall_all@1"], 0.0);
    assert_eq!(official["session_recall_all@3"], 1.0);
    assert!(close(official["session_ndcg_any@5"], 1.0 / 4f64.log2()));
    assert_eq!(official["turn_recall_all@3"], 0.0);
    assert_eq!(official["turn_recall_all@5"], 1.0);
    assert!(close(official["turn_ndcg_any@10"], 1.0 / 6f64.log2()), "{official:?}");

    // The official variant skips abstention questions (the second one).
    let abstention = &instances[1];
    assert!(abstention.id.ends_with("_abs"));
    assert!(abstention.gold_turns().is_empty());
    assert!(longmemeval::question_metrics(abstention, &ranked, false).is_none());
    assert!(longmemeval::question_metrics(abstention, &ranked, true).is_some());
}

/// A fresh SQLite palace with the static model, for each conversation.
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
fn longmemeval_runs_end_to_end_on_the_mini_set() {
    let instances = longmemeval::load(&bench("longmemeval-mini.json")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut n = 0;
    let mut factory = || static_palace(&tmp, &mut n);
    let report = longmemeval::run(&instances, &mut factory, &mut |_| {}).unwrap();
    assert_eq!(n, 2, "one fresh palace per question");
    assert_eq!(report["questions"], 2);
    assert_eq!(report["mempalace"]["questions"], 2);
    assert_eq!(report["official"]["questions"], 1, "the abstention question is skipped");
    // Each haystack has at most 8 user turns (one drawer each), fewer than
    // the 50 results asked for: every session and turn is retrieved.
    assert_eq!(report["mempalace"]["session_recall_any@50"], 1.0, "{report}");
    assert_eq!(report["official"]["turn_recall_all@50"], 1.0, "{report}");
    let at = |k: usize| report["mempalace"][format!("session_recall_any@{k}")].as_f64().unwrap();
    assert!(at(1) <= at(3) && at(3) <= at(5) && at(5) <= at(50), "{report}");
    // Both questions are of one type: its rows are the overall ones.
    let types = report["by_type"].as_object().unwrap();
    assert_eq!(types.keys().collect::<Vec<_>>(), ["single-session-user"], "{report}");
    assert_eq!(types["single-session-user"]["mempalace"], report["mempalace"]);
    assert_eq!(types["single-session-user"]["official"], report["official"]);
}

#[test]
fn locomo_loads_and_runs_end_to_end_on_the_mini_set() {
    let samples = locomo::load(&bench("locomo-mini.json")).unwrap();
    assert_eq!(
        samples.iter().map(|s| (s.id.as_str(), s.questions.len())).collect::<Vec<_>>(),
        [("conv-a", 8), ("conv-b", 3)]
    );
    let a = &samples[0];
    assert_eq!(a.sessions.iter().map(|s| s.number).collect::<Vec<_>>(), [1, 2, 3]);
    assert!(a.sessions.iter().all(|s| s.date.is_some()), "every session is dated");
    assert_eq!(a.sessions[0].date.unwrap().to_rfc3339(), "2024-03-03T10:15:00+00:00");
    // An image turn is its text and its caption.
    assert_eq!(
        a.sessions[0].turns[4].text,
        "Look at her first walk. [shares an image: a photo of a grey dog on a leash in a green park]"
    );
    // Evidence: "D1:4; D2:1" split, "D:3:1" repaired, "D9:9" names no turn (dropped).
    assert_eq!(a.questions[3].evidence, ["D1:4", "D2:1"]);
    assert_eq!(a.questions[4].evidence, ["D3:1"]);
    assert_eq!(a.questions[6].evidence, ["D1:3"]);
    assert!(a.questions[5].evidence.is_empty());
    assert_eq!((a.dropped_evidence, samples[1].dropped_evidence), (1, 0));
    let corrections = locomo::load_corrections(&bench("locomo-mini-audit-errors.json")).unwrap();
    assert_eq!(corrections.len(), 2, "an entry without corrected evidence is no correction");
    assert_eq!(corrections[&("conv-a".to_string(), 7)], ["D1:5"]);
    assert_eq!(corrections[&("conv-b".to_string(), 2)], ["D2:2"]);

    let tmp = tempfile::tempdir().unwrap();
    let mut n = 0;
    let mut factory = || static_palace(&tmp, &mut n);
    let hits_path = tmp.path().join("hits.jsonl");
    let options = locomo::Options {
        ks: vec![1, 5, 10],
        fusion: mempalace_engine::Fusion::default(),
        consolidate: false,
        hits: Some(hits_path.clone()),
    };
    let report = locomo::run(&samples, &corrections, &mut factory, &options, &mut |_| {}).unwrap();
    // conv-a: 3 + 2 + 1 exchanges; conv-b: 2 + 1.
    assert_eq!(report["drawers"], 9, "{report}");
    assert_eq!(report["conversations"], 2);
    // 11 questions: one without evidence and no correction is skipped, one
    // without evidence but with a correction counts in the corrected set only.
    assert_eq!(report["questions"], 9, "{report}");
    assert_eq!(report["questions_without_evidence"], 1);
    assert_eq!(report["evidence_ids_dropped"], 1);
    assert_eq!(report["corrected"]["overall"]["questions"], 10);
    let categories: HashMap<String, u64> = report["by_category"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v["questions"].as_u64().unwrap()))
        .collect();
    assert_eq!(categories, HashMap::from([("1".into(), 1), ("2".into(), 1), ("4".into(), 7)]));
    let overall = &report["overall"];
    let value = |key: &str| overall[key].as_f64().unwrap_or_else(|| panic!("{key} missing: {report}"));
    // A conversation has at most 6 drawers, fewer than k = 10: every
    // evidence turn (and session) is among the first ten results.
    for key in ["turn_recall_any@10", "turn_recall_all@10", "session_recall_any@10"] {
        assert_eq!(value(key), 1.0, "{key}: {report}");
    }
    assert!(value("turn_recall_any@1") <= value("turn_recall_any@5"));
    assert!(value("turn_recall_all@5") <= value("turn_recall_any@5"));
    assert!(value("mrr") > 0.0 && value("ndcg@10") > 0.0 && value("chars_per_query") > 0.0);
    assert_eq!(report["corrected"]["by_category"]["2"]["questions"], 2);
    assert!(report["latency_ms"]["p50"].is_number(), "{report}");

    // The ranked hits of every question asked, for offline study: the
    // question without evidence but with a correction is there too.
    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&hits_path).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(lines.len(), 10, "{lines:?}");
    let question = |conversation: &str, index: u64| {
        lines.iter().find(|l| l["conversation"] == conversation && l["question"] == index).unwrap()
    };
    assert_eq!(question("conv-b", 2)["evidence"], serde_json::json!([]));
    assert_eq!(question("conv-b", 2)["corrected"], serde_json::json!(["D2:2"]));
    assert_eq!(question("conv-a", 7)["evidence"], serde_json::json!(["D1:6"]));
    assert_eq!(question("conv-a", 7)["corrected"], serde_json::json!(["D1:5"]));
    assert_eq!(question("conv-a", 0)["corrected"], serde_json::Value::Null);
    assert!(lines.iter().all(|l| l["conversation"] != "conv-a" || l["question"] != 5), "skipped: no evidence at all");
    let conversation_a_turns = ["D1:", "D2:", "D3:"];
    for line in &lines {
        let hits = line["hits"].as_array().unwrap();
        // At most 10 results (the deepest k), each a drawer of this conversation with its turns.
        assert!(!hits.is_empty() && hits.len() <= 10, "{line}");
        let scores: Vec<f64> = hits.iter().map(|h| h["score"].as_f64().unwrap()).collect();
        assert!(scores.windows(2).all(|w| w[0] >= w[1]), "ranked by score: {line}");
        for hit in hits {
            assert!(hit["chars"].as_u64().unwrap() > 0, "{line}");
            let turns = hit["turns"].as_array().unwrap();
            assert!(!turns.is_empty(), "{line}");
            if line["conversation"] == "conv-a" {
                assert!(turns.iter().all(|t| conversation_a_turns.iter().any(|p| t.as_str().unwrap().starts_with(p))));
            }
        }
    }
    // Recall recomputed from the file agrees with the report.
    let any_at_1 = lines
        .iter()
        .filter(|l| !l["evidence"].as_array().unwrap().is_empty())
        .map(|l| {
            let evidence = l["evidence"].as_array().unwrap();
            let first = l["hits"][0]["turns"].as_array().unwrap();
            f64::from(u8::from(first.iter().any(|t| evidence.contains(t))))
        })
        .sum::<f64>()
        / 9.0;
    assert!((any_at_1 - value("turn_recall_any@1")).abs() < 1e-4, "{any_at_1} vs {report}");
}

/// The same on the real data.
mod real_data {
    use std::collections::{BTreeMap, HashMap};

    use mempalace_eval::{locomo, longmemeval};

    use super::{close, static_palace};

    #[test]
    fn longmemeval_variants_match_hand_computed_values_on_the_real_instance() {
        let instances =
            longmemeval::load(&mempalace_testdata::shared("bench/longmemeval/longmemeval_s_single_e47becba.json"))
                .unwrap();
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
                s.turns
                    .iter()
                    .enumerate()
                    .filter(|(_, t)| t.0 == "user")
                    .map(move |(i, _)| format!("{}_{}", s.id, i + 1))
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

    #[test]
    fn locomo_runs_end_to_end_on_one_conversation() {
        let dir = mempalace_testdata::shared("bench/locomo");
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
            &locomo::Options {
                ks: vec![1, 5, 10],
                fusion: mempalace_engine::Fusion::default(),
                consolidate: false,
                hits: None,
            },
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
}
