//! Ranking arithmetic of hybrid search: the evidence fusion of the default
//! search (cosine similarity, BM25 and the knowledge graph combined as
//! independent evidence into one absolute 0–1 score), reciprocal rank
//! fusion (seed 1), the seed-0 score, recency, source weighting and
//! MaxScore normalisation.
//!
//! Only formulas over numbers live here; which candidates exist and how they
//! are fetched is the engine's business.

use std::collections::HashMap;
use std::hash::Hash;

/// RRF constant (seed 1: `rrf_k`, default 60).
pub const RRF_K: f64 = 60.0;
/// Multiplier for memories of real-world data (seed 1 "Source Weighting").
pub const REAL_WORLD_WEIGHT: f64 = 1.5;

/// Weight of a hit owned by the searching user (seed 2, "Searching Memory":
/// "results scoped to the current user get a 1.2× multiplier").
pub const OWNER_BOOST: f64 = 1.2;
/// Agent affinity boost of the seed-0 score.
pub const AGENT_AFFINITY_BOOST: f64 = 0.1;
/// Days over which recency halves (seed 0: `1 / (1 + days/30)`).
pub const RECENCY_DAYS: f64 = 30.0;

/// Reciprocal rank fusion of ranked lists (each best first, ranks 0-based):
/// `score(d) = Σ_lists weight / (k + rank + 1)`. Returns documents by
/// descending score; ties keep the order of first appearance.
pub fn rrf<T: Clone + Eq + Hash>(lists: &[(&[T], f64)], k: f64) -> Vec<(T, f64)> {
    let mut scores: HashMap<T, (f64, usize)> = HashMap::new();
    let mut order = 0;
    for (list, weight) in lists {
        for (rank, item) in list.iter().enumerate() {
            let entry = scores.entry(item.clone()).or_insert_with(|| {
                order += 1;
                (0.0, order)
            });
            entry.0 += weight / (k + rank as f64 + 1.0);
        }
    }
    let mut fused: Vec<(T, f64, usize)> =
        scores.into_iter().map(|(item, (score, first))| (item, score, first)).collect();
    fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
    fused.into_iter().map(|(item, score, _)| (item, score)).collect()
}

/// BM25's inverse document frequency as SQLite FTS5 computes it:
/// `ln((N − n + 0.5) / (n + 0.5))`, floored at 1e-6.
pub fn idf(documents: u64, containing: u64) -> f64 {
    let (n_docs, n) = (documents as f64, containing.min(documents) as f64);
    ((n_docs - n + 0.5) / (n + 0.5)).ln().max(1e-6)
}

/// BM25 points that count as about 63 % lexical evidence
/// ([`lexical_evidence`] = 1 − e⁻¹). A term found in one drawer of a few
/// hundred scores about 5–7 BM25 points in a sentence-long drawer, so one
/// such rare term (an error code, a name, a path) is strong evidence
/// (≈ 0.3), a whole query of them near-certain, while a moderately common
/// word shared in passing (≈ 3 points) stays below what a clearly better
/// semantic match gains. Chosen on the LoCoMo dev split, the paraphrase
/// set and the ranking cases of the engine tests (see BENCHMARKS.md): 12
/// lets one shared word outrank a clearly closer meaning, 25 loses exact
/// codes among near-identical neighbours.
pub const BM25_SCALE: f64 = 18.0;

/// A BM25 score as 0–1 evidence of relevance: `1 − exp(−bm25 / BM25_SCALE)`.
/// Absolute — it depends on the drawer, the query and the palace's term
/// statistics, never on the other hits — and saturating, so repeating a
/// word cannot outweigh meaning without limit.
pub fn lexical_evidence(bm25: f64) -> f64 {
    if bm25 <= 0.0 { 0.0 } else { 1.0 - (-bm25 / BM25_SCALE).exp() }
}

/// Combines independent 0–1 pieces of evidence (cosine similarity, lexical
/// evidence, weighted graph evidence) as a noisy-OR: `1 − Π (1 − eᵢ)`.
/// Each piece can only raise the score, none can push it past 1, and a
/// strong piece is not diluted by a missing one (a drawer found by meaning
/// alone keeps its cosine). Negative inputs count as no evidence.
pub fn combine_evidence(pieces: &[f64]) -> f64 {
    1.0 - pieces.iter().map(|e| 1.0 - e.clamp(0.0, 1.0)).product::<f64>()
}

/// Seed 0 recency factor: `1 / (1 + days_since_access / 30)`.
pub fn recency_factor(days_since_access: f64) -> f64 {
    1.0 / (1.0 + days_since_access.max(0.0) / RECENCY_DAYS)
}

/// Seed 0 ranking: `importance × recency × max(similarity, graph) + affinity`.
pub fn seed0_score(importance: f64, recency: f64, similarity: f64, graph_score: f64, same_agent: bool) -> f64 {
    importance * recency * similarity.max(graph_score) + if same_agent { AGENT_AFFINITY_BOOST } else { 0.0 }
}

/// MaxScore normalisation: divides every score by the best, so the best is
/// 1.0 (seed 1). Scores of an all-zero list stay zero.
pub fn max_normalize(scores: &mut [f64]) {
    let max = scores.iter().copied().fold(0.0_f64, f64::max);
    if max > 0.0 {
        for score in scores {
            *score /= max;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rrf_follows_the_formula() {
        let bm25 = ["a", "b", "c"];
        let vector = ["b", "d"];
        let fused = rrf(&[(&bm25[..], 1.0), (&vector[..], 1.0)], RRF_K);
        let score = |id: &str| fused.iter().find(|(d, _)| *d == id).unwrap().1;
        assert!((score("b") - (1.0 / 62.0 + 1.0 / 61.0)).abs() < 1e-12);
        assert!((score("a") - 1.0 / 61.0).abs() < 1e-12);
        assert!((score("d") - 1.0 / 62.0).abs() < 1e-12);
        assert_eq!(fused[0].0, "b", "present in both lists wins");
        assert_eq!(fused.len(), 4);
        // A weight scales a list's contribution.
        let weighted = rrf(&[(&bm25[..], 2.0)], RRF_K);
        assert!((weighted[0].1 - 2.0 / 61.0).abs() < 1e-12);
    }

    #[test]
    fn idf_and_lexical_evidence() {
        assert!((idf(200, 1) - (199.5_f64 / 1.5).ln()).abs() < 1e-12);
        assert_eq!(idf(10, 10), 1e-6, "a term in every document carries nothing");
        assert_eq!(lexical_evidence(0.0), 0.0);
        assert_eq!(lexical_evidence(-1.0), 0.0);
        assert!((lexical_evidence(BM25_SCALE) - (1.0 - (-1.0_f64).exp())).abs() < 1e-12);
        assert!(lexical_evidence(1e6) <= 1.0);
        assert!(lexical_evidence(6.0) > lexical_evidence(3.0), "monotone");
    }

    #[test]
    fn evidence_combines_as_a_noisy_or() {
        assert_eq!(combine_evidence(&[]), 0.0);
        assert!((combine_evidence(&[0.4]) - 0.4).abs() < 1e-12, "a missing piece dilutes nothing");
        assert!((combine_evidence(&[0.4, 0.5]) - 0.7).abs() < 1e-12);
        assert!((combine_evidence(&[0.4, 0.0, 0.0]) - 0.4).abs() < 1e-12);
        assert_eq!(combine_evidence(&[1.0, 0.3]), 1.0);
        assert!((combine_evidence(&[-0.2, 0.3]) - 0.3).abs() < 1e-12, "negative cosine is no evidence");
        assert!(combine_evidence(&[0.9, 0.9, 0.9]) <= 1.0);
    }

    #[test]
    fn recency_and_seed0_score() {
        assert_eq!(recency_factor(0.0), 1.0);
        assert!((recency_factor(30.0) - 0.5).abs() < 1e-12);
        assert!((recency_factor(90.0) - 0.25).abs() < 1e-12);
        assert_eq!(recency_factor(-5.0), 1.0, "future access clamps to now");
        assert!((seed0_score(3.0, 0.5, 0.8, 0.9, false) - 1.35).abs() < 1e-12);
        assert!((seed0_score(3.0, 0.5, 0.8, 0.1, true) - 1.3).abs() < 1e-12);
    }

    #[test]
    fn max_normalisation_puts_the_best_at_one() {
        let mut scores = vec![0.2, 0.5, 0.1];
        max_normalize(&mut scores);
        assert_eq!(scores, vec![0.4, 1.0, 0.2]);
        let mut zeros = vec![0.0, 0.0];
        max_normalize(&mut zeros);
        assert_eq!(zeros, vec![0.0, 0.0]);
    }
}
