//! Session end without an LLM: robotmem's consolidation (near-identical
//! insights of one session merged into the most trusted one) and the
//! extractive episodic summary.
//!
//! Consolidation clusters greedily by Jaccard similarity of word sets
//! within one category: an item joins the first cluster whose every member
//! is more similar than the threshold and carries the same specifics
//! (numbers, names, paths, negation: the rule of [`crate::dedup`]), else
//! starts its own. Categories that
//! record hard-won knowledge (constraints, postmortems, gotchas) and
//! insights already near-certain are never merged.

use std::collections::BTreeSet;

use crate::layers::is_stopword;

/// Similarity above which two insights of a category are merged (robotmem
/// `CONSOLIDATION_JACCARD_THRESHOLD`).
pub const CONSOLIDATION_THRESHOLD: f64 = 0.5;
/// Fewer candidates than this: nothing is merged.
pub const CONSOLIDATION_MIN_ITEMS: usize = 3;
/// Insights at or above this confidence are kept as they are.
pub const CONSOLIDATION_MAX_CONFIDENCE: f64 = 0.95;
/// Categories never merged.
pub const PROTECTED_CATEGORIES: &[&str] = &["constraint", "postmortem", "gotcha"];
/// Longest L0 abstract, in characters.
pub const ABSTRACT_CHARS: usize = 200;
/// Longest summary, in characters.
pub const SUMMARY_CHARS: usize = 2_000;
/// Days an episodic summary lives before pruning.
pub const EPISODIC_TTL_DAYS: i64 = 90;

/// The lowercase content words of a text.
pub fn word_set(text: &str) -> BTreeSet<String> {
    text.split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase())
        .filter(|w| !w.is_empty() && !is_stopword(w))
        .collect()
}

/// Jaccard similarity of two word sets (0 when both are empty).
pub fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        return 0.0;
    }
    a.intersection(b).count() as f64 / union as f64
}

/// One consolidation candidate.
#[derive(Debug, Clone)]
pub struct Candidate<'a> {
    /// Category (merging never crosses categories).
    pub category: &'a str,
    /// The text.
    pub text: &'a str,
    /// Confidence 0–1.
    pub confidence: f64,
}

/// Whether either text could stand for the other: neither carries a
/// distinguishing token (number, name, path, negation, …) the other lacks,
/// so merging them into one representative loses nothing.
fn interchangeable(a: &str, b: &str) -> bool {
    crate::dedup::judge(a, b).is_duplicate() && crate::dedup::judge(b, a).is_duplicate()
}

/// Groups of candidate indexes to merge (each with two or more members),
/// in input order. Candidates in protected categories or with confidence
/// at or above [`CONSOLIDATION_MAX_CONFIDENCE`] are left out; with fewer
/// than [`CONSOLIDATION_MIN_ITEMS`] eligible candidates nothing merges.
pub fn consolidation_groups(candidates: &[Candidate<'_>]) -> Vec<Vec<usize>> {
    let eligible: Vec<usize> = (0..candidates.len())
        .filter(|&i| {
            !PROTECTED_CATEGORIES.contains(&candidates[i].category)
                && candidates[i].confidence < CONSOLIDATION_MAX_CONFIDENCE
        })
        .collect();
    if eligible.len() < CONSOLIDATION_MIN_ITEMS {
        return Vec::new();
    }
    let words: Vec<BTreeSet<String>> = candidates.iter().map(|c| word_set(c.text)).collect();
    let mut clusters: Vec<Vec<usize>> = Vec::new();
    for &i in &eligible {
        let home = clusters.iter_mut().find(|cluster| {
            candidates[cluster[0]].category == candidates[i].category
                && cluster.iter().all(|&j| {
                    jaccard(&words[i], &words[j]) > CONSOLIDATION_THRESHOLD
                        && interchangeable(candidates[i].text, candidates[j].text)
                })
        });
        match home {
            Some(cluster) => cluster.push(i),
            None => clusters.push(vec![i]),
        }
    }
    clusters.retain(|cluster| cluster.len() > 1);
    clusters
}

/// The first sentence of a text, cut at a character boundary to `max`
/// characters (with "…" when cut).
pub fn first_sentence(text: &str, max: usize) -> String {
    let trimmed = text.trim();
    let end = trimmed
        .char_indices()
        .find(|&(i, c)| matches!(c, '.' | '!' | '?' | '。' | '！' | '？' | '\n') && i > 0)
        .map_or(trimmed.len(), |(i, c)| i + c.len_utf8());
    let sentence = trimmed[..end].trim();
    if sentence.chars().count() <= max {
        return sentence.to_string();
    }
    let cut: String = sentence.chars().take(max.saturating_sub(1)).collect();
    format!("{}…", cut.trim_end())
}

/// The extractive summary of a session's texts (in filing order): the
/// first sentence of each, joined, within [`SUMMARY_CHARS`]; and the L0
/// abstract, the first sentence of the first text within
/// [`ABSTRACT_CHARS`].
pub fn extractive_summary(texts: &[&str]) -> (String, String) {
    let mut summary = String::new();
    for text in texts {
        let sentence = first_sentence(text, ABSTRACT_CHARS);
        if sentence.is_empty() {
            continue;
        }
        if summary.chars().count() + sentence.chars().count() + 1 > SUMMARY_CHARS {
            break;
        }
        if !summary.is_empty() {
            summary.push(' ');
        }
        summary.push_str(&sentence);
    }
    let abstract_ = texts.iter().map(|t| first_sentence(t, ABSTRACT_CHARS)).find(|s| !s.is_empty()).unwrap_or_default();
    (summary, abstract_)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c<'a>(category: &'a str, text: &'a str) -> Candidate<'a> {
        Candidate { category, text, confidence: 0.8 }
    }

    #[test]
    fn near_identical_insights_of_a_category_merge() {
        let items = [
            c("observation", "grip force 12.5 N works best on the red cube"),
            c("observation", "grip force 12.5 N works best on red cube"),
            c("observation", "the conveyor belt stalls when humidity rises"),
            c("root_cause", "grip force 12.5 N works best on the red cube"),
            c("observation", "grip force of 12.5 N works best on the red cube today"),
        ];
        assert_eq!(consolidation_groups(&items), vec![vec![0, 1, 4]]);
    }

    #[test]
    fn insights_with_different_specifics_never_merge() {
        let items = [
            c("observation", "grip force 12.5 N works best on the red cube"),
            c("observation", "grip force 14 N works best on the red cube"),
            c("observation", "grip force 12.5 N works best on the red cube"),
            c("observation", "grip force 12.5 N does not work best on the red cube"),
        ];
        assert_eq!(consolidation_groups(&items), vec![vec![0, 2]]);
    }

    #[test]
    fn protected_confident_and_small_sets_are_left_alone() {
        let same = "always wear gloves near the furnace door";
        assert!(consolidation_groups(&[c("gotcha", same), c("gotcha", same), c("gotcha", same)]).is_empty());
        let sure = Candidate { category: "observation", text: same, confidence: 0.99 };
        assert!(consolidation_groups(&[sure.clone(), sure.clone(), c("observation", same)]).is_empty());
        assert!(consolidation_groups(&[c("observation", same), c("observation", same)]).is_empty());
    }

    #[test]
    fn jaccard_counts_content_words() {
        let a = word_set("The robot arm moved the cube.");
        let b = word_set("robot ARM moved a CUBE");
        assert!((jaccard(&a, &b) - 1.0).abs() < 1e-9, "{a:?} {b:?}");
        assert_eq!(jaccard(&word_set("the a"), &word_set("an")), 0.0);
    }

    #[test]
    fn summaries_are_extractive_and_bounded() {
        let (summary, abstract_) = extractive_summary(&["Picked the cube. Then it fell.", "", "Arm recalibrated!"]);
        assert_eq!(summary, "Picked the cube. Arm recalibrated!");
        assert_eq!(abstract_, "Picked the cube.");
        let long = "x".repeat(500);
        let cut = first_sentence(&long, ABSTRACT_CHARS);
        assert_eq!(cut.chars().count(), ABSTRACT_CHARS);
        assert!(cut.ends_with('…'));
        assert_eq!(first_sentence("数据库很好。后来", 50), "数据库很好。");
    }
}
