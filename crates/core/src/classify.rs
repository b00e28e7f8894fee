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

use std::borrow::Cow;
use std::sync::OnceLock;

use regex_automata::nfa::thompson::WhichCaptures;
use regex_automata::util::syntax;
use regex_automata::{Input, MatchKind, PatternSet, meta};
use regex_syntax::hir::{Class, HirKind};
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
    stand_ins: StandIns,
}

/// Case-insensitive patterns matched together, as `regex::RegexSet`
/// matches them with Unicode rules (every pattern that matches anywhere),
/// built by the engine under it without a literal prefilter (the
/// prefilter's literal extraction was half of the 10 ms the 58 markers
/// took to build, and it speeds nothing up on texts of a few hundred
/// characters) and ASCII-only: a set reads a text through its
/// [`StandIns`], which give the same matches.
///
/// Why ASCII: the patterns' `\b` is Unicode's word boundary, which the
/// lazy DFA cannot follow past a non-ASCII byte, so on any text holding
/// one (a "—" or a "’" is enough) the regex fell back to the PikeVM: 12–17
/// ms for the first such text in a process and about 2 ms per 800
/// characters after it, against 22 µs on ASCII (measured in one process).
/// A hook's `add` of such a text took 65 instead of 51 ms. Compiled
/// ASCII-only, a set never falls back, and it builds in about 2 ms instead
/// of 4–5.
struct Set {
    regex: meta::Regex,
}

impl Set {
    fn matches(&self, text: &Ascii<'_>) -> PatternSet {
        let mut found = PatternSet::new(self.regex.pattern_len());
        self.regex.which_overlapping_matches(&Input::new(text.0.as_ref()), &mut found);
        found
    }

    fn is_match(&self, text: &Ascii<'_>) -> bool {
        self.regex.is_match(text.0.as_ref())
    }
}

fn compile(patterns: &[String]) -> Set {
    let regex = meta::Regex::builder()
        .configure(
            meta::Config::new().match_kind(MatchKind::All).auto_prefilter(false).which_captures(WhichCaptures::None),
        )
        .syntax(syntax::Config::new().case_insensitive(true).unicode(false).utf8(false))
        .build_many(patterns)
        .unwrap_or_else(|error| panic!("built-in patterns {patterns:?} must compile: {error}"));
    Set { regex }
}

/// A text as the pattern sets read it: ASCII only, one character for each
/// character of the original. Made by [`StandIns::apply`] alone.
struct Ascii<'a>(Cow<'a, str>);

/// The ASCII character that stands in for each non-ASCII one, chosen so
/// that every pattern matches the stand-in text exactly where it matches
/// the original under Unicode rules.
///
/// The patterns are built from ASCII literals matched case-insensitively,
/// `.`, `\b`, the classes `\d` `\w` `\s` and their negations, anchors
/// and classes of ASCII literals (a test holds both pattern files to
/// that). Under Unicode rules a non-ASCII character matches an ASCII
/// literal only as one of its simple case folds (the Kelvin sign is a `k`,
/// the long s an `s`); otherwise it matches `.` and exactly those of `\d`,
/// `\w` and `\s` its Unicode classes say, and nothing else. So it is
/// replaced by its ASCII fold, or by [`StandIns::DIGIT`],
/// [`StandIns::WORD`], [`StandIns::SPACE`] or [`StandIns::OTHER`], which
/// match the same: no pattern names one of them (a test walks every
/// pattern to check). Word boundaries fall where they fell, and as one
/// character stands for one, `.{0,40}` counts the same.
/// The classes are regex's own tables, read through regex-syntax.
struct StandIns {
    /// Non-ASCII characters and the ASCII letter they fold to, sorted.
    folds: Vec<(char, char)>,
    digits: Vec<(char, char)>,
    words: Vec<(char, char)>,
    spaces: Vec<(char, char)>,
}

/// The ranges of a Unicode class, as regex reads `pattern`.
fn unicode_class(pattern: &str) -> Vec<(char, char)> {
    let hir = regex_syntax::parse(pattern).unwrap_or_else(|error| panic!("{pattern} is a valid class: {error}"));
    match hir.kind() {
        HirKind::Class(Class::Unicode(class)) => {
            class.ranges().iter().map(|range| (range.start(), range.end())).collect()
        }
        other => panic!("{pattern} is a Unicode class, not {other:?}"),
    }
}

/// Whether `c` is in one of the sorted, disjoint `ranges`.
fn within(ranges: &[(char, char)], c: char) -> bool {
    let next = ranges.partition_point(|&(_, end)| end < c);
    ranges.get(next).is_some_and(|&(start, _)| start <= c)
}

impl StandIns {
    /// For a decimal digit.
    const DIGIT: char = '9';
    /// For another word character.
    const WORD: char = 'z';
    /// For white space.
    const SPACE: char = '\u{c}';
    /// For anything else.
    const OTHER: char = '\u{1}';

    fn new() -> StandIns {
        let mut folds: Vec<(char, char)> = ('a'..='z')
            .flat_map(|letter| {
                unicode_class(&format!("(?i){letter}"))
                    .into_iter()
                    .flat_map(|(start, end)| start..=end)
                    .filter(|c| !c.is_ascii())
                    .map(move |c| (c, letter))
            })
            .collect();
        folds.sort_unstable();
        StandIns { folds, digits: unicode_class(r"\d"), words: unicode_class(r"\w"), spaces: unicode_class(r"\s") }
    }

    fn of(&self, c: char) -> char {
        if let Ok(index) = self.folds.binary_search_by_key(&c, |&(from, _)| from) {
            self.folds[index].1
        } else if within(&self.digits, c) {
            Self::DIGIT
        } else if within(&self.words, c) {
            Self::WORD
        } else if within(&self.spaces, c) {
            Self::SPACE
        } else {
            Self::OTHER
        }
    }

    fn apply<'a>(&self, text: &'a str) -> Ascii<'a> {
        if text.is_ascii() {
            Ascii(Cow::Borrowed(text))
        } else {
            Ascii(Cow::Owned(text.chars().map(|c| if c.is_ascii() { c } else { self.of(c) }).collect()))
        }
    }
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
            stand_ins: StandIns::new(),
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
    rules.noise.is_match(&rules.stand_ins.apply(&lowered))
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
    for pattern in rules.markers.matches(&rules.stand_ins.apply(text)).iter() {
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
    use std::sync::LazyLock;

    use proptest::prelude::*;

    /// The marker and noise patterns as the pattern files give them (noise
    /// anchored as the filter anchors it).
    fn pattern_lists() -> [Vec<String>; 2] {
        let patterns: super::PatternFile =
            serde_json::from_str(include_str!("../config/classify_patterns.json")).unwrap();
        let noise: super::NoiseFile = serde_json::from_str(include_str!("../config/noise_patterns.json")).unwrap();
        [
            patterns.types.values().flatten().cloned().collect(),
            noise.patterns.iter().map(|p| format!("^(?:{p})$")).collect(),
        ]
    }

    /// Each list as our ASCII set and as `regex::RegexSet` with Unicode
    /// rules, the reference.
    static SETS: LazyLock<Vec<(super::Set, regex::RegexSet)>> = LazyLock::new(|| {
        pattern_lists()
            .iter()
            .map(|patterns| {
                let theirs = regex::RegexSetBuilder::new(patterns.iter()).case_insensitive(true).build().unwrap();
                (super::compile(patterns), theirs)
            })
            .collect()
    });

    fn same_matches(text: &str) -> Result<(), TestCaseError> {
        let stand_in = super::compiled().stand_ins.apply(text);
        prop_assert!(stand_in.0.is_ascii(), "{:?}", stand_in.0);
        prop_assert_eq!(stand_in.0.chars().count(), text.chars().count());
        for (ours, theirs) in SETS.iter() {
            let got: Vec<usize> = ours.matches(&stand_in).iter().map(|p| p.as_usize()).collect();
            let want: Vec<usize> = theirs.matches(text).into_iter().collect();
            prop_assert_eq!(got, want, "{:?} read as {:?}", text, stand_in.0);
            prop_assert_eq!(ours.is_match(&stand_in), theirs.is_match(text), "{:?}", text);
        }
        Ok(())
    }

    /// The ASCII sets, reading texts through their stand-ins, match
    /// exactly what `regex::RegexSet` matches in the original texts with
    /// the same patterns, case-insensitive, under Unicode rules.
    #[test]
    fn the_pattern_sets_match_as_a_unicode_regex_set_does() {
        let texts = [
            "We decided to use PostgreSQL instead of MongoDB because of transactions.",
            "We decided to use PostgreSQL instead of MongoDB because of transactions — it’s safer.",
            "I PREFER dark mode; we Chose tabs. The bug was fixed after the crash!",
            "Ich habe beschlossen: wir nehmen Café-Bücher. Ça marche, résumé prêt.",
            "We \u{212A}EEP tabs; the \u{17F}tyle is set. Version v\u{663}.\u{664} is out, error E\u{FF14}\u{FF15}.",
            "we\u{a0}decided to go; we decided\u{2009}to stay; décided to; we decidedé to",
            "thanks!",
            "thanks！",
            "ok",
            "—",
            "",
            "I'm so happy and proud, but worried about the deadline we agreed on yesterday.",
        ];
        for text in texts {
            same_matches(text).unwrap();
            same_matches(&text.to_lowercase()).unwrap();
        }
    }

    fn piece() -> impl Strategy<Value = String> {
        let phrases = vec![
            "we decided to",
            "decided on",
            "picked Rust over",
            "switched from",
            "let's use",
            "trade-off",
            "rather than",
            "because it is faster",
            "i prefer",
            "my favourite",
            "always use",
            "dark mode",
            "we shipped",
            "v2.0 is out",
            "error E4471",
            "http 503",
            "2024-01-02",
            "- [ ] ",
            "1. ",
            "the bug",
            "it crashed",
            "fixed",
            "thanks!",
            "ok",
            "hello there",
            "todo",
            "need to",
            "assigned to",
            "issue #12",
            "happy",
            "frustrated",
        ];
        let characters = vec![
            'K', '\u{212A}', 's', '\u{17F}', '\u{663}', '\u{FF13}', 'é', 'ß', '中', '\u{301}', '\u{216B}', '\u{a0}',
            '\u{2009}', '\u{3000}', '—', '’', '🙂', '²', 'İ', 'ı', '\n', '_', ' ', '-', '.', '!', '9', 'z',
        ];
        prop_oneof![
            3 => prop::sample::select(phrases).prop_map(String::from),
            3 => prop::sample::select(characters).prop_map(String::from),
            2 => any::<char>().prop_map(String::from),
            2 => "[a-zA-Z ]{1,8}",
        ]
    }

    proptest! {
        #[test]
        fn stand_ins_keep_every_match(pieces in prop::collection::vec(piece(), 0..24)) {
            let text = pieces.concat();
            same_matches(&text)?;
            same_matches(&text.to_lowercase())?;
        }
    }

    /// The stand-ins' premise, checked on the patterns themselves: every
    /// literal is ASCII and no stand-in, and every class holds a stand-in
    /// exactly when it holds the non-ASCII characters it stands for.
    #[test]
    fn no_pattern_names_a_stand_in() {
        use super::StandIns;
        use regex_syntax::hir::{Class, Hir, HirKind};

        let kinds: [(char, &[char]); 4] = [
            (StandIns::DIGIT, &['\u{663}', '\u{FF13}', '\u{966}']),
            (StandIns::WORD, &['é', 'ß', '中', '\u{301}', '\u{216B}', '\u{3b1}']),
            (StandIns::SPACE, &['\u{a0}', '\u{2009}', '\u{3000}', '\u{85}']),
            (StandIns::OTHER, &['—', '’', '🙂', '²', '\u{ff01}']),
        ];
        fn walk(hir: &Hir, pattern: &str, kinds: &[(char, &[char]); 4]) {
            match hir.kind() {
                HirKind::Literal(literal) => {
                    let text = std::str::from_utf8(&literal.0).unwrap();
                    assert!(text.is_ascii(), "{pattern}: a non-ASCII literal {text:?}");
                    for (stand_in, _) in kinds {
                        assert!(!text.contains(*stand_in), "{pattern} names the stand-in {stand_in:?}: choose another");
                    }
                }
                HirKind::Class(Class::Unicode(class)) => {
                    let holds = |c: char| class.ranges().iter().any(|r| r.start() <= c && c <= r.end());
                    for (stand_in, stood_for) in kinds {
                        for c in *stood_for {
                            assert_eq!(
                                holds(*stand_in),
                                holds(*c),
                                "{pattern}: a class holds {stand_in:?} but not {c:?}, or the reverse"
                            );
                        }
                    }
                }
                HirKind::Class(Class::Bytes(_)) => panic!("{pattern}: a byte class"),
                HirKind::Repetition(repetition) => walk(&repetition.sub, pattern, kinds),
                HirKind::Capture(capture) => walk(&capture.sub, pattern, kinds),
                HirKind::Concat(hirs) | HirKind::Alternation(hirs) => {
                    hirs.iter().for_each(|hir| walk(hir, pattern, kinds))
                }
                HirKind::Empty | HirKind::Look(_) => {}
            }
        }
        for pattern in pattern_lists().iter().flatten() {
            assert!(pattern.is_ascii(), "{pattern} is not ASCII");
            let hir = regex_syntax::ParserBuilder::new().case_insensitive(true).build().parse(pattern).unwrap();
            walk(&hir, pattern, &kinds);
        }
    }

    #[test]
    fn a_stand_in_is_what_the_character_is_to_a_pattern() {
        let stand_ins = super::StandIns::new();
        for (c, want) in [
            ('\u{212A}', 'k'),
            ('\u{17F}', 's'),
            ('\u{663}', '9'),
            ('é', 'z'),
            ('\u{301}', 'z'),
            ('\u{a0}', '\u{c}'),
            ('—', '\u{1}'),
            ('²', '\u{1}'),
        ] {
            assert_eq!(stand_ins.of(c), want, "{c:?}");
        }
        assert!(matches!(stand_ins.apply("plain ASCII").0, std::borrow::Cow::Borrowed(_)));
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
