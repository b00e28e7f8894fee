//! The heuristic memory classifier, the noise filter and the tier decision
//! of the ingestion hot path (seed 0 §3 steps 1, 3 and 6; §4).
//!
//! Marker patterns, sentiment words and noise rules are data, compiled into
//! the binary from `config/classify_patterns.json` and
//! `config/noise_patterns.json`:
//!
//! * every marker of a type that matches a segment scores one point;
//! * `length_bonus` is +2 above 500 characters, +1 above 200;
//! * `confidence = min(1, (best + length_bonus) / 5)`;
//! * a "problem" that carries resolution cues with non-negative sentiment
//!   is a "milestone" (the fix is the news); ties go to the earlier type in
//!   [`PRIORITY`]; no marker at all is a low-confidence "fact".
//!
//! The tier decision applies the two kill-switch gates (both 999.0 = off
//! by default, so every drawer waits for the cold path).

use std::sync::OnceLock;

use regex_automata::util::syntax;
use regex_automata::{Input, MatchKind, PatternSet, meta};
use serde::Deserialize;

use crate::drawer::{DrawerState, MemoryType, PipelineTier};

/// Tie-break order between types with the same score.
pub const PRIORITY: [MemoryType; 7] = [
    MemoryType::Decision,
    MemoryType::Problem,
    MemoryType::Milestone,
    MemoryType::Preference,
    MemoryType::Task,
    MemoryType::Emotional,
    MemoryType::Fact,
];

#[derive(Deserialize)]
struct PatternFile {
    types: std::collections::BTreeMap<String, Vec<String>>,
    sentiment: SentimentWords,
    resolution_cues: Vec<String>,
}

#[derive(Deserialize)]
struct SentimentWords {
    positive: Vec<String>,
    negative: Vec<String>,
}

#[derive(Deserialize)]
struct NoiseFile {
    min_chars: usize,
    min_words: usize,
    patterns: Vec<String>,
}

/// The patterns, compiled once per process into two sets: one for the
/// markers of every type (`marker_types[i]` is the type of pattern `i`),
/// one for noise. A set compiles in about half the time of its patterns
/// one by one (11 against 21 ms for all of them, measured), which a
/// one-text process such as a hook's `mempalace add` pays in full, and
/// matches as fast.
struct Compiled {
    markers: Set,
    marker_types: Vec<usize>,
    positive: Vec<String>,
    negative: Vec<String>,
    resolution: Vec<String>,
    noise: Set,
    noise_min_chars: usize,
    noise_min_words: usize,
}

/// Case-insensitive patterns matched together, as `regex::RegexSet`
/// matches them (every pattern that matches anywhere), built by the engine
/// under it without a literal prefilter: the prefilter's literal
/// extraction was half of the 10 ms the 58 markers took to build (measured
/// in one process, alternating), and it speeds nothing up on texts of a
/// few hundred characters.
struct Set {
    regex: meta::Regex,
}

impl Set {
    fn matches(&self, text: &str) -> PatternSet {
        let mut found = PatternSet::new(self.regex.pattern_len());
        self.regex.which_overlapping_matches(&Input::new(text), &mut found);
        found
    }

    fn is_match(&self, text: &str) -> bool {
        self.regex.is_match(text)
    }
}

fn compile(patterns: &[String]) -> Set {
    let regex = meta::Regex::builder()
        .configure(meta::Config::new().match_kind(MatchKind::All).auto_prefilter(false))
        .syntax(syntax::Config::new().case_insensitive(true))
        .build_many(patterns)
        .unwrap_or_else(|error| panic!("built-in patterns {patterns:?} must compile: {error}"));
    Set { regex }
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let patterns: PatternFile = serde_json::from_str(include_str!("../config/classify_patterns.json"))
            .expect("the built-in classify_patterns.json is valid");
        let noise: NoiseFile = serde_json::from_str(include_str!("../config/noise_patterns.json"))
            .expect("the built-in noise_patterns.json is valid");
        let mut markers: Vec<String> = Vec::new();
        let mut marker_types = Vec::new();
        for (index, memory_type) in PRIORITY.iter().enumerate() {
            for pattern in patterns.types.get(memory_type.as_str()).into_iter().flatten() {
                markers.push(pattern.clone());
                marker_types.push(index);
            }
        }
        let noise_patterns: Vec<String> = noise.patterns.iter().map(|p| format!("^(?:{p})$")).collect();
        Compiled {
            markers: compile(&markers),
            marker_types,
            positive: patterns.sentiment.positive,
            negative: patterns.sentiment.negative,
            resolution: patterns.resolution_cues,
            noise: compile(&noise_patterns),
            noise_min_chars: noise.min_chars,
            noise_min_words: noise.min_words,
        }
    })
}

/// Compiles the classifier's and noise filter's patterns now (they are
/// compiled once per process, on first use): a one-text process calls it
/// on a thread of its own while it opens the palace.
pub fn prepare() {
    compiled();
}

/// Whether a message is noise not worth filing: too short, too few words,
/// or a greeting/acknowledgement (noise_patterns.json).
pub fn is_noise(text: &str) -> bool {
    let rules = compiled();
    let trimmed = text.trim();
    if trimmed.chars().count() < rules.noise_min_chars || trimmed.split_whitespace().count() < rules.noise_min_words {
        return true;
    }
    let lowered = trimmed.to_lowercase();
    rules.noise.is_match(&lowered)
}

/// What the classifier concluded.
#[derive(Debug, Clone, PartialEq)]
pub struct Classification {
    /// The chosen type.
    pub memory_type: MemoryType,
    /// `min(1, (best + length_bonus) / 5)`.
    pub confidence: f64,
    /// Marker hits per type, in [`PRIORITY`] order.
    pub scores: [u32; 7],
    /// Positive minus negative sentiment words.
    pub sentiment: i32,
    /// Whether the disambiguation rule changed the raw winner.
    pub disambiguated: bool,
}

/// The length bonus of seed 0 §4.
pub fn length_bonus(chars: usize) -> u32 {
    if chars > 500 {
        2
    } else if chars > 200 {
        1
    } else {
        0
    }
}

fn count_words(lowered: &str, words: &[String]) -> i32 {
    lowered.split(|c: char| !c.is_alphanumeric() && c != '\'').filter(|word| words.iter().any(|w| w == word)).count()
        as i32
}

/// Classifies one segment.
pub fn classify(text: &str) -> Classification {
    let rules = compiled();
    let mut scores = [0_u32; 7];
    for pattern in rules.markers.matches(text).iter() {
        scores[rules.marker_types[pattern.as_usize()]] += 1;
    }
    let lowered = text.to_lowercase();
    let sentiment = count_words(&lowered, &rules.positive) - count_words(&lowered, &rules.negative);
    let best_index = (0..PRIORITY.len()).fold(0, |best, index| if scores[index] > scores[best] { index } else { best });
    let best = scores[best_index];
    let mut memory_type = if best == 0 { MemoryType::Fact } else { PRIORITY[best_index] };
    let mut disambiguated = false;
    if memory_type == MemoryType::Problem
        && sentiment >= 0
        && rules.resolution.iter().any(|cue| lowered.contains(cue.as_str()))
    {
        memory_type = MemoryType::Milestone;
        disambiguated = true;
    }
    let confidence = (f64::from(best + length_bonus(text.chars().count())) / 5.0).min(1.0);
    Classification { memory_type, confidence, scores, sentiment, disambiguated }
}

/// The two phase gates (seed 0 §3 "Kill switches"): heuristic trust at or
/// above `high`; centroid band from `low` up to `high`. 999.0 disables a gate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TierGates {
    /// `CRAWBL_MEM_HEURISTIC_HIGH`.
    pub high: f64,
    /// `CRAWBL_MEM_HEURISTIC_LOW`.
    pub low: f64,
}

impl TierGates {
    /// The disabled value of both gates.
    pub const DISABLED: f64 = 999.0;
    /// Cosine to the nearest centroid needed in the centroid band (seed 0 §10).
    pub const CENTROID_THRESHOLD: f64 = 0.85;
}

impl Default for TierGates {
    fn default() -> Self {
        Self { high: Self::DISABLED, low: Self::DISABLED }
    }
}

/// Seed 0 `pickTier`: which classifier's decision stands, and whether the
/// cold path still has to look. `centroid_similarity` is the cosine to the
/// nearest usable centroid, when there is one.
pub fn pick_tier(confidence: f64, gates: TierGates, centroid_similarity: Option<f64>) -> (DrawerState, PipelineTier) {
    pick_tier_with(confidence, gates, centroid_similarity, TierGates::CENTROID_THRESHOLD)
}

/// [`pick_tier`] with another centroid threshold than seed 0's 0.85 (which
/// was set for 1536-dimension OpenAI vectors; a smaller model's drawers sit
/// further from their type's mean).
pub fn pick_tier_with(
    confidence: f64,
    gates: TierGates,
    centroid_similarity: Option<f64>,
    centroid_threshold: f64,
) -> (DrawerState, PipelineTier) {
    if confidence >= gates.high {
        return (DrawerState::Processed, PipelineTier::Heuristic);
    }
    if confidence >= gates.low && centroid_similarity.is_some_and(|s| s > centroid_threshold) {
        return (DrawerState::Processed, PipelineTier::Centroid);
    }
    (DrawerState::Raw, PipelineTier::Llm)
}

/// The halls a drawer can be filed in by kind of content, as the Python
/// MemPalace routes them (`miner.detect_hall`); `general` when no keyword
/// matches. The cold path's model picks from the same list.
pub const HALLS: [&str; 8] =
    ["emotions", "consciousness", "memory", "technical", "identity", "family", "creative", "general"];

/// MemPalace 3.11's default hall keywords (`DEFAULT_HALL_KEYWORDS`), in its order.
const HALL_KEYWORDS: [(&str, &[&str]); 7] = [
    ("emotions", &["scared", "afraid", "worried", "happy", "sad", "love", "hate", "feel", "cry", "tears"]),
    ("consciousness", &["consciousness", "conscious", "aware", "real", "genuine", "soul", "exist", "alive"]),
    ("memory", &["memory", "remember", "forget", "recall", "archive", "palace", "store"]),
    ("technical", &["code", "python", "script", "bug", "error", "function", "api", "database", "server"]),
    ("identity", &["identity", "name", "who am i", "persona", "self"]),
    ("family", &["family", "kids", "children", "daughter", "son", "parent", "mother", "father"]),
    ("creative", &["game", "gameplay", "player", "app", "design", "art", "music", "story"]),
];

/// The hall for `text` by keyword count over its first 3,000 characters
/// (substring matches, as MemPalace counts them; ties go to the earlier hall).
pub fn detect_hall(text: &str) -> &'static str {
    let head: String = text.chars().take(3_000).collect::<String>().to_lowercase();
    let mut best = ("general", 0);
    for (hall, keywords) in HALL_KEYWORDS {
        let score = keywords.iter().filter(|keyword| head.contains(*keyword)).count();
        if score > best.1 {
            best = (hall, score);
        }
    }
    best.0
}

#[cfg(test)]
mod tests {
    /// The sets built without a prefilter match exactly what
    /// `regex::RegexSet` matches with the same patterns and flags.
    #[test]
    fn the_pattern_sets_match_as_a_regex_set_does() {
        let patterns: super::PatternFile =
            serde_json::from_str(include_str!("../config/classify_patterns.json")).unwrap();
        let markers: Vec<String> = patterns.types.values().flatten().cloned().collect();
        let noise: super::NoiseFile = serde_json::from_str(include_str!("../config/noise_patterns.json")).unwrap();
        let noise: Vec<String> = noise.patterns.iter().map(|p| format!("^(?:{p})$")).collect();
        let texts = [
            "We decided to use PostgreSQL instead of MongoDB because of transactions.",
            "I PREFER dark mode; we Chose tabs. The bug was fixed after the crash!",
            "Ich habe beschlossen: wir nehmen Café-Bücher. Ça marche, résumé prêt.",
            "thanks!",
            "ok",
            "",
            "I'm so happy and proud, but worried about the deadline we agreed on yesterday.",
        ];
        for patterns in [&markers, &noise] {
            let ours = super::compile(patterns);
            let theirs = regex::RegexSetBuilder::new(patterns.iter()).case_insensitive(true).build().unwrap();
            for text in texts {
                let got: Vec<usize> = ours.matches(text).iter().map(|p| p.as_usize()).collect();
                let want: Vec<usize> = theirs.matches(text).into_iter().collect();
                assert_eq!(got, want, "{text:?}");
                assert_eq!(ours.is_match(text), theirs.is_match(text), "{text:?}");
            }
        }
    }

    use super::*;

    #[test]
    fn labelled_examples_get_their_type() {
        let cases = [
            ("We decided to use PostgreSQL instead of MongoDB because transactions are simpler.", MemoryType::Decision),
            ("I really prefer dark mode and always use tabs over spaces.", MemoryType::Preference),
            ("We finally shipped version 2.0 to all customers today!", MemoryType::Milestone),
            ("The deploy failed with error E4471 and the service crashed on startup.", MemoryType::Problem),
            ("I feel so frustrated and exhausted by these flaky tests.", MemoryType::Emotional),
            ("Alice works at Acme and lives in Berlin.", MemoryType::Fact),
            ("TODO: need to fix the login page before Friday.", MemoryType::Task),
        ];
        for (text, expected) in cases {
            assert_eq!(classify(text).memory_type, expected, "{text}");
        }
    }

    #[test]
    fn a_resolved_problem_is_a_milestone() {
        let raw = classify("The login bug crashed the app.");
        assert_eq!(raw.memory_type, MemoryType::Problem);
        let resolved =
            classify("The login bug is fixed: the root cause was a stale cache, it works now and I'm happy.");
        assert_eq!(resolved.memory_type, MemoryType::Milestone);
        assert!(resolved.disambiguated);
    }

    #[test]
    fn confidence_follows_the_formula() {
        let text = "We decided to use PostgreSQL instead of MongoDB.";
        let result = classify(text);
        let best = *result.scores.iter().max().unwrap();
        assert_eq!(result.confidence, (f64::from(best) / 5.0).min(1.0));
        assert_eq!(length_bonus(200), 0);
        assert_eq!(length_bonus(201), 1);
        assert_eq!(length_bonus(501), 2);
        let long = format!("{text} {}", "filler words here ".repeat(40));
        let boosted = classify(&long);
        assert_eq!(boosted.confidence, (f64::from(best + 2) / 5.0).min(1.0));
        let nothing = classify("Zebras graze quietly near the river bank today");
        assert_eq!((nothing.memory_type, nothing.confidence), (MemoryType::Fact, 0.0));
    }

    #[test]
    fn noise_is_greetings_acknowledgements_and_fragments() {
        for noise in
            ["hi", "Hello there!", "thanks so much", "ok", "sounds good", "lol", "good morning!", "   ", "yes."]
        {
            assert!(is_noise(noise), "{noise:?}");
        }
        for signal in ["We moved the gripper test to Tuesday.", "thanks, the fix in config.yaml solved the timeout"] {
            assert!(!is_noise(signal), "{signal:?}");
        }
    }

    #[test]
    fn tier_gates_are_off_by_default_and_applied_when_set() {
        let off = TierGates::default();
        assert_eq!(pick_tier(1.0, off, Some(0.99)), (DrawerState::Raw, PipelineTier::Llm));
        let on = TierGates { high: 0.8, low: 0.5 };
        assert_eq!(pick_tier(0.8, on, None), (DrawerState::Processed, PipelineTier::Heuristic));
        assert_eq!(pick_tier(0.6, on, Some(0.86)), (DrawerState::Processed, PipelineTier::Centroid));
        assert_eq!(pick_tier(0.6, on, Some(0.85)), (DrawerState::Raw, PipelineTier::Llm));
        assert_eq!(pick_tier(0.4, on, Some(0.99)), (DrawerState::Raw, PipelineTier::Llm));
        // Phase 2 alone off: low = high collapses the band.
        let no_band = TierGates { high: 0.8, low: 0.8 };
        assert_eq!(pick_tier(0.7, no_band, Some(0.99)), (DrawerState::Raw, PipelineTier::Llm));
    }

    #[test]
    fn halls_are_routed_by_keyword_count_as_mempalace_does() {
        assert_eq!(detect_hall("The server returned an error from the database API"), "technical");
        // family 2, creative 2: the earlier hall wins, as with Python's max() over its dict.
        assert_eq!(detect_hall("My daughter and my son love the story game"), "family");
        assert_eq!(detect_hall("I feel worried"), "emotions");
        assert_eq!(detect_hall("Lunch at noon."), "general");
        assert!(HALLS.contains(&detect_hall("whatever")));
    }
}
