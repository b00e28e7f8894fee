//! Retrieval metrics for the benchmarks, defined once.
//!
//! A ranked result is a list of hits; each hit carries the ids of the units
//! it covers (turn ids, session ids) and its size in characters. Gold is a
//! set of ids. Definitions:
//!
//! * `recall_any@k` — 1 when any gold id is covered by the top k hits;
//! * `recall_all@k` — 1 when every gold id is;
//! * `evidence_recall@k` — the covered fraction of the gold ids;
//! * the same at a character budget: hits are taken in rank order while
//!   their total size stays within the budget (so larger hits cannot buy
//!   recall);
//! * `ndcg@k` — binary relevance (a hit is relevant when it covers a gold
//!   id), ideal ranking = `min(k, relevant hits in the corpus)` relevant
//!   hits first;
//! * `mrr` — 1 / rank of the first relevant hit among those returned, else 0.

use std::collections::HashSet;

/// One returned hit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// Ids of the units it covers.
    pub ids: Vec<String>,
    /// Characters returned for it.
    pub chars: usize,
}

/// How many of the top hits fit in `budget` characters.
pub fn within_budget(hits: &[Hit], budget: usize) -> usize {
    let mut used = 0;
    for (taken, hit) in hits.iter().enumerate() {
        if used + hit.chars > budget {
            return taken;
        }
        used += hit.chars;
    }
    hits.len()
}

fn covered(hits: &[Hit], n: usize) -> HashSet<&str> {
    hits.iter().take(n).flat_map(|h| h.ids.iter().map(String::as_str)).collect()
}

/// 1.0 when any gold id is covered by the first `n` hits.
pub fn recall_any(hits: &[Hit], gold: &HashSet<String>, n: usize) -> f64 {
    let seen = covered(hits, n);
    f64::from(u8::from(gold.iter().any(|g| seen.contains(g.as_str()))))
}

/// 1.0 when every gold id is covered by the first `n` hits (and gold is
/// not empty).
pub fn recall_all(hits: &[Hit], gold: &HashSet<String>, n: usize) -> f64 {
    let seen = covered(hits, n);
    f64::from(u8::from(!gold.is_empty() && gold.iter().all(|g| seen.contains(g.as_str()))))
}

/// The fraction of gold ids covered by the first `n` hits.
pub fn evidence_recall(hits: &[Hit], gold: &HashSet<String>, n: usize) -> f64 {
    if gold.is_empty() {
        return 0.0;
    }
    let seen = covered(hits, n);
    gold.iter().filter(|g| seen.contains(g.as_str())).count() as f64 / gold.len() as f64
}

fn relevant(hit: &Hit, gold: &HashSet<String>) -> bool {
    hit.ids.iter().any(|id| gold.contains(id))
}

/// Binary-relevance nDCG at `k`; `relevant_in_corpus` is how many units of
/// the whole corpus are relevant (for the ideal ranking).
pub fn ndcg(hits: &[Hit], gold: &HashSet<String>, k: usize, relevant_in_corpus: usize) -> f64 {
    let dcg: f64 = hits
        .iter()
        .take(k)
        .enumerate()
        .filter(|(_, h)| relevant(h, gold))
        .map(|(i, _)| 1.0 / (i as f64 + 2.0).log2())
        .sum();
    let ideal: f64 = (0..relevant_in_corpus.min(k)).map(|i| 1.0 / (i as f64 + 2.0).log2()).sum();
    if ideal == 0.0 { 0.0 } else { dcg / ideal }
}

/// Reciprocal rank of the first relevant hit, or 0.
pub fn mrr(hits: &[Hit], gold: &HashSet<String>) -> f64 {
    hits.iter().position(|h| relevant(h, gold)).map_or(0.0, |i| 1.0 / (i as f64 + 1.0))
}

/// Percentile (nearest rank) of a sample, `p` in 0–100.
pub fn percentile(values: &[f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(ids: &[&str], chars: usize) -> Hit {
        Hit { ids: ids.iter().map(|s| s.to_string()).collect(), chars }
    }

    fn gold(ids: &[&str]) -> HashSet<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn recalls_by_rank_and_budget() {
        let hits = [hit(&["a", "b"], 1000), hit(&["c"], 1500), hit(&["d", "e"], 900)];
        let g = gold(&["c", "e"]);
        assert_eq!(recall_any(&hits, &g, 1), 0.0);
        assert_eq!(recall_any(&hits, &g, 2), 1.0);
        assert_eq!(recall_all(&hits, &g, 2), 0.0);
        assert_eq!(recall_all(&hits, &g, 3), 1.0);
        assert_eq!(evidence_recall(&hits, &g, 2), 0.5);
        assert_eq!(within_budget(&hits, 3000), 2);
        assert_eq!(within_budget(&hits, 999), 0);
        assert_eq!(within_budget(&hits, 10_000), 3);
        assert_eq!(recall_all(&hits, &gold(&[]), 3), 0.0);
    }

    #[test]
    fn ndcg_and_mrr_match_hand_computed_values() {
        let hits = [hit(&["x"], 1), hit(&["c"], 1), hit(&["y"], 1), hit(&["e"], 1)];
        let g = gold(&["c", "e"]);
        // DCG = 1/log2(3) + 1/log2(5); IDCG (2 relevant) = 1 + 1/log2(3).
        let expected = (1.0 / 3f64.log2() + 1.0 / 5f64.log2()) / (1.0 + 1.0 / 3f64.log2());
        assert!((ndcg(&hits, &g, 10, 2) - expected).abs() < 1e-12);
        assert_eq!(mrr(&hits, &g), 0.5);
        assert_eq!(mrr(&hits, &gold(&["zzz"])), 0.0);
        assert_eq!(ndcg(&hits, &gold(&["zzz"]), 10, 0), 0.0);
        assert_eq!(percentile(&[5.0, 1.0, 3.0, 2.0, 4.0], 50.0), 3.0);
        assert_eq!(percentile(&[5.0, 1.0, 3.0, 2.0, 4.0], 95.0), 5.0);
    }
}
