//! When is a new text a duplicate of a filed drawer? One rule for every
//! place that deduplicates (ingestion, `check_duplicate`, the `memory_*`
//! tools, session consolidation).
//!
//! A duplicate adds nothing: it means the same as the drawer (cosine above
//! [`NEAR_DUPLICATE_COSINE`], decided by the caller, who has the vectors)
//! **and** it carries no distinguishing token the drawer lacks. Embeddings
//! place "valve 101 was replaced on shift 1" and "valve 102 was replaced on
//! shift 2" at cosine 0.94, yet for an agent they are two facts; dropping the
//! second loses a memory. Distinguishing tokens are the ones that make a fact
//! specific:
//!
//! - numbers and anything holding a digit: amounts, dates, times, versions,
//!   ticket and part numbers (`101`, `2025-01-15`, `v1.2.3`, `ERR-42`), and
//!   number words (`three`, `twelve`);
//! - identifiers: `snake_case`, `camelCase`, `Type::path`, `--flags`,
//!   channels, tags and handles (`#ops-alerts`, `@dana`);
//! - paths, file names with an extension, URLs, e-mail addresses;
//! - code spans between backticks;
//! - proper names: capitalised words inside a sentence, acronyms, and a
//!   sentence's capitalised first word unless it is a common function word
//!   or looks like an inflected verb or adverb (`Decided`, `Using`, `Finally`);
//! - negation (`not`, `never`, `no`, `without`, `…n't`): a text that negates
//!   what the drawer asserts, or the reverse, says something new;
//! - a word of a closed set standing where the drawer has another member of
//!   it: colours, sides, states and their opposites (`enabled`/`disabled`,
//!   `passed`/`failed`), environments, periods — "the blue cube" is not "the
//!   red cube".
//!
//! Comparison is case-insensitive and ignores the punctuation around a
//! token, so a reformatted copy (case, spacing, punctuation, backticks) of a
//! drawer is still its duplicate. A new text that only *lacks* details the
//! drawer has (a shorter restatement) is a duplicate too.
//!
//! The rule errs towards filing: a paraphrase that names a new thing is filed
//! (one extra drawer), never a distinct fact dropped. Measured on the
//! labelled pairs in `tests/data/dedup_pairs.json` (see BENCHMARKS.md).

use std::collections::BTreeSet;

use crate::layers::is_stopword;

/// Cosine similarity above which two texts may be duplicates (seed 0's
/// `AutoIngestDupThreshold`); below it they are never duplicates.
pub const NEAR_DUPLICATE_COSINE: f32 = 0.85;

/// What a new text is, next to a filed drawer it resembles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// It adds nothing the drawer lacks.
    Duplicate,
    /// It carries these distinguishing tokens the drawer lacks (lowercase,
    /// in order of appearance; `not` stands for a difference in negation).
    Distinct(Vec<String>),
}

impl Verdict {
    /// Whether the text is a duplicate.
    pub fn is_duplicate(&self) -> bool {
        matches!(self, Verdict::Duplicate)
    }
}

/// The verdict on a new text against a drawer whose meaning it shares
/// (the caller has checked the cosine).
pub fn judge(new: &str, existing: &str) -> Verdict {
    let differs = distinguishing_tokens(new, existing);
    if differs.is_empty() { Verdict::Duplicate } else { Verdict::Distinct(differs) }
}

/// The verdict from a similarity and the two texts: `None` when they are
/// not even near (cosine at or below [`NEAR_DUPLICATE_COSINE`]).
pub fn judge_near(similarity: f32, new: &str, existing: &str) -> Option<Verdict> {
    (similarity > NEAR_DUPLICATE_COSINE).then(|| judge(new, existing))
}

/// Whether two texts are the same once case, spacing and punctuation are
/// ignored (a near-exact repeat).
pub fn same_text(a: &str, b: &str) -> bool {
    normalized_words(a).eq(normalized_words(b))
}

/// The distinguishing tokens of `new` that `existing` lacks, in order of
/// appearance, each once.
///
/// A token is lacking when the drawer does not hold it at all, holds it
/// fewer times ("valve 7 on shift 7" against "valve 3 on shift 7"), or
/// holds another token where the new text has this one after the same word
/// ("valve 7, shift 3" against "valve 3, shift 7").
pub fn distinguishing_tokens(new: &str, existing: &str) -> Vec<String> {
    let (new, have) = (Scan::of(new), Scan::of(existing));
    let mut out: Vec<String> = Vec::new();
    for marker in &new.markers {
        let novel = match &marker.kind {
            Kind::Negation => !have.negated(),
            Kind::Code => !have.contains_phrase(&marker.text),
            Kind::Word => {
                !(have.covers(&marker.text)
                    || have.contains_phrase(&marker.text)
                    || (marker.text.contains('-') && have.contains_phrase(&marker.text.replace('-', " "))))
                    || (have.count(&marker.text) > 0 && new.count(&marker.text) > have.count(&marker.text))
                    || have.displaced(marker)
            }
        };
        if novel && !out.contains(&marker.text) {
            out.push(marker.text.clone());
        }
    }
    // A word that replaces another of its closed set (a colour, a side, a
    // state and its opposite): "the blue cube" is not "the red cube".
    for word in &new.order {
        let replaced = EXCLUSIVE.iter().filter(|set| in_set(word, set)).any(|set| {
            !have.covers(word) && have.order.iter().any(|other| in_set(other, set) && !same_word(other, word))
        });
        if replaced && !out.contains(word) {
            out.push(word.clone());
        }
    }
    // A drawer that negates what the new text asserts: the new one says the
    // opposite, which is new.
    if have.negated() && !new.negated() && !out.iter().any(|t| t == "not") {
        out.push("not".to_string());
    }
    out
}

/// What kind of distinguishing token a marker is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A word-like token: number, identifier, path, URL, name.
    Word,
    /// The inside of a code span, spacing collapsed.
    Code,
    /// A negation (its text is `not`).
    Negation,
}

/// A distinguishing token found in a text: lowercase, with the word before
/// it on its line.
#[derive(Debug, Clone)]
struct Marker {
    kind: Kind,
    text: String,
    prev: Option<String>,
}

/// Closed sets of words that exclude each other: one of them in place of
/// another changes the fact (colours, sides, states and their opposites,
/// environments, periods). A word counts only when the drawer holds
/// another member of its set and not the word itself.
const EXCLUSIVE: &[&[&str]] = &[
    &[
        "red", "orange", "yellow", "green", "blue", "purple", "violet", "pink", "brown", "black", "white", "grey",
        "gray", "silver", "gold",
    ],
    &["up", "down"],
    &["left", "right"],
    &["top", "bottom", "middle"],
    &["upper", "lower"],
    &["front", "back", "rear"],
    &["north", "south", "east", "west"],
    &["inside", "outside"],
    &["above", "below"],
    &["on", "off"],
    &["enabled", "disabled"],
    &["enable", "disable"],
    &["open", "opened", "closed", "shut"],
    &["true", "false"],
    &["pass", "fail"],
    &["passed", "failed"],
    &["passes", "fails"],
    &["passing", "failing"],
    &["success", "failure"],
    &["succeeded", "failed"],
    &["allowed", "denied", "blocked", "forbidden"],
    &["accept", "reject"],
    &["accepted", "rejected", "declined"],
    &["approved", "rejected", "declined"],
    &["increase", "decrease"],
    &["increased", "decreased", "reduced"],
    &["higher", "lower"],
    &["more", "less", "fewer"],
    &["before", "after"],
    &["min", "max", "minimum", "maximum"],
    &["start", "stop"],
    &["started", "stopped"],
    &["input", "output"],
    &["read", "write"],
    &["import", "export"],
    &["add", "remove", "delete"],
    &["added", "removed", "deleted"],
    &["include", "exclude"],
    &["included", "excluded"],
    &["first", "last"],
    &["early", "late"],
    &["earlier", "later"],
    &["hot", "cold", "warm"],
    &["public", "private"],
    &["internal", "external"],
    &["sync", "async"],
    &["synchronous", "asynchronous"],
    &["lock", "unlock"],
    &["locked", "unlocked"],
    &["online", "offline"],
    &["valid", "invalid"],
    &["install", "uninstall"],
    &["installed", "uninstalled"],
    &["like", "dislike"],
    &["likes", "dislikes"],
    &["love", "hate"],
    &["loves", "hates"],
    &["buy", "sell"],
    &["bought", "sold"],
    &["win", "lose"],
    &["won", "lost"],
    &["small", "medium", "large"],
    &["light", "dark"],
    &["dev", "development", "staging", "prod", "production"],
    &["debug", "release"],
    &["client", "server"],
    &["frontend", "backend"],
    &["hourly", "daily", "weekly", "monthly", "quarterly", "yearly", "annually"],
    &["morning", "afternoon", "evening", "night"],
    &["am", "pm"],
    &["upstream", "downstream"],
    &["manual", "automatic"],
    &["manually", "automatically"],
    &["mandatory", "optional"],
    &["required", "optional"],
    // Units: the same number of another unit is another amount.
    &["millisecond", "ms", "second", "sec", "minute", "min", "hour", "hr", "day", "week", "month", "year"],
    &[
        "mm",
        "millimeter",
        "cm",
        "centimeter",
        "m",
        "meter",
        "km",
        "kilometer",
        "inch",
        "foot",
        "feet",
        "ft",
        "yard",
        "mile",
    ],
    &["mg", "milligram", "g", "gram", "kg", "kilogram", "lb", "pound", "ounce", "oz", "ton", "tonne"],
    &["ml", "milliliter", "l", "liter", "gallon", "quart", "pint", "cup", "tablespoon", "teaspoon"],
    &["byte", "kb", "kib", "mb", "mib", "gb", "gib", "tb", "tib", "kilobyte", "megabyte", "gigabyte", "terabyte"],
    &["celsius", "fahrenheit", "kelvin"],
    &["usd", "eur", "gbp", "jpy", "chf", "dollar", "euro", "pound", "yen", "franc", "cent", "penny", "pence"],
    &["hz", "khz", "mhz", "ghz"],
    &["w", "watt", "kw", "kilowatt", "mw", "megawatt", "kwh"],
];

/// Whether a word (or its plural) is a member of a closed set.
fn in_set(word: &str, set: &[&str]) -> bool {
    set.contains(&word) || word.strip_suffix('s').is_some_and(|singular| singular.len() >= 2 && set.contains(&singular))
}

/// The spelling a word is compared in: number words as digits ("two" and
/// "2" are one amount) and British spellings as American ones ("colour",
/// "organisation", "litre" are "color", "organization", "liter").
fn canonical(lower: &str) -> String {
    if lower.contains('-') {
        return lower.split('-').map(canonical).collect::<Vec<_>>().join("-");
    }
    if let Some(index) = NUMBER_WORDS.iter().position(|w| *w == lower)
        && index <= 20
    {
        return index.to_string();
    }
    // (British ending, American ending, shortest stem): "flour", "hour"
    // and "four" keep their "our".
    const SPELLINGS: [(&str, &str, usize); 10] = [
        ("isation", "ization", 3),
        ("isations", "izations", 3),
        ("yse", "yze", 3),
        ("ysed", "yzed", 3),
        ("ogue", "og", 3),
        ("our", "or", 3),
        ("ours", "ors", 3),
        ("oured", "ored", 3),
        ("tre", "ter", 2),
        ("tres", "ters", 2),
    ];
    for (british, american, shortest) in SPELLINGS {
        if let Some(stem) = lower.strip_suffix(british)
            && stem.chars().count() >= shortest
            && stem.chars().all(char::is_alphabetic)
        {
            return format!("{stem}{american}");
        }
    }
    lower.to_string()
}

/// A text read for deduplication.
struct Scan {
    /// Its words in order, lowercase, decoration trimmed.
    order: Vec<String>,
    /// Its markers, in order.
    markers: Vec<Marker>,
    /// Its words and the parts of its paths, lowercase, decoration trimmed.
    words: BTreeSet<String>,
    /// Its words joined by single spaces, padded, for phrase lookups.
    joined: String,
}

impl Scan {
    fn of(text: &str) -> Self {
        let list: Vec<String> = normalized_words(text).collect();
        let joined = format!(" {} ", list.join(" "));
        // The parts of a path count as words ("src/main.rs" covers "main.rs").
        let mut words: BTreeSet<String> = list.iter().cloned().collect();
        for word in &list {
            words.extend(word.split(['/', '\\']).filter(|p| !p.is_empty() && p != word).map(str::to_string));
        }
        Self { markers: markers(text), words, joined, order: list }
    }

    /// Whether the text holds a word, or, for a word of letters, its
    /// singular or plural ("Tuesdays" and "Tuesday" name one day).
    fn covers(&self, word: &str) -> bool {
        self.words.contains(word) || self.words.iter().any(|w| same_word(w, word))
    }

    fn negated(&self) -> bool {
        self.markers.iter().any(|m| m.kind == Kind::Negation)
    }

    /// How often a word (or its singular or plural) occurs.
    fn count(&self, word: &str) -> usize {
        self.order.iter().filter(|w| same_word(w, word)).count()
    }

    /// Whether a (possibly multi-word) lowercase phrase appears whole.
    fn contains_phrase(&self, phrase: &str) -> bool {
        let words: Vec<String> = normalized_words(phrase).collect();
        words.is_empty() || self.joined.contains(&format!(" {} ", words.join(" ")))
    }

    /// Whether this text has another word-marker after `marker`'s previous
    /// word, and never `marker` itself there.
    fn displaced(&self, marker: &Marker) -> bool {
        let Some(prev) = &marker.prev else { return false };
        if self.contains_phrase(&format!("{prev} {}", marker.text)) {
            return false;
        }
        let after: Vec<&Marker> =
            self.markers.iter().filter(|m| m.kind == Kind::Word && m.prev.as_ref() == Some(prev)).collect();
        !after.is_empty() && after.iter().all(|m| !same_word(&m.text, &marker.text))
    }
}

/// Whether two lowercase words are one, or, for words of letters, one's
/// plural the other's singular.
fn same_word(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let (short, long) = if a.len() < b.len() { (a, b) } else { (b, a) };
    short.len() >= 3 && long.strip_suffix('s') == Some(short) && long.chars().all(char::is_alphabetic)
}

/// Trims what decorates a token rather than distinguishes it: punctuation
/// and symbols around it (`$40` and `40` are one amount), a possessive `'s`;
/// a leading `-` stays (flags, negative numbers).
fn trim_token(raw: &str) -> &str {
    let decoration = |c: char| !c.is_alphanumeric() && !matches!(c, '/' | '\\' | '~' | '_');
    let word = raw.trim_end_matches(decoration).trim_start_matches(|c: char| decoration(c) && c != '-');
    let word = word.strip_suffix("'s").or_else(|| word.strip_suffix("’s")).unwrap_or(word);
    // "~12" is about twelve: the tilde approximates, it does not name a path.
    let word = match word.strip_prefix('~') {
        Some(rest) if rest.starts_with(|c: char| c.is_ascii_digit()) => rest,
        _ => word,
    };
    if word.chars().any(char::is_alphanumeric) { word } else { "" }
}

/// A text's words: split at whitespace and backticks, trimmed, lowercase,
/// empties dropped.
fn normalized_words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| c.is_whitespace() || c == '`')
        .map(|w| canonical(&trim_token(w).to_lowercase()))
        .filter(|w| !w.is_empty())
}

/// The markers of a text, in order: code spans, then words line by line.
fn markers(text: &str) -> Vec<Marker> {
    let mut out = Vec::new();
    // Pieces at odd positions lie between two backticks.
    let pieces: Vec<&str> = text.split('`').collect();
    for piece in pieces.iter().skip(1).step_by(2).take(pieces.len().saturating_sub(1) / 2) {
        let span: Vec<String> = normalized_words(piece).collect();
        if !span.is_empty() {
            out.push(Marker { kind: Kind::Code, text: span.join(" "), prev: None });
        }
    }
    for line in text.lines() {
        let mut sentence_start = true;
        let mut prev: Option<String> = None;
        for raw in line.split(|c: char| c.is_whitespace() || c == '`').filter(|w| !w.is_empty()) {
            let starts_sentence = sentence_start;
            sentence_start = raw.ends_with(['.', '!', '?', ':', ';', '。', '！', '？']);
            let word = trim_token(raw);
            if word.is_empty() {
                continue;
            }
            let lower = canonical(&word.to_lowercase());
            // A channel, tag or handle (#ops-alerts, @dana).
            let tagged = raw.trim_start_matches(['(', '[', '"', '\'']).starts_with(['#', '@'])
                && word.starts_with(char::is_alphabetic);
            if is_negation(&lower) {
                out.push(Marker { kind: Kind::Negation, text: "not".into(), prev: prev.clone() });
            } else if tagged || is_distinguishing(word, &lower, starts_sentence) {
                out.push(Marker { kind: Kind::Word, text: lower.clone(), prev: prev.clone() });
            }
            prev = Some(lower);
        }
    }
    out
}

/// Negation words (after lowercasing and trimming).
fn is_negation(lower: &str) -> bool {
    const WORDS: &[&str] =
        &["not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "without", "cannot", "nowhere"];
    WORDS.contains(&lower) || lower.ends_with("n't") || lower.ends_with("n’t")
}

/// Number words: a changed count is a changed fact.
const NUMBER_WORDS: &[&str] = &[
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
    "thirty",
    "forty",
    "fifty",
    "sixty",
    "seventy",
    "eighty",
    "ninety",
    "hundred",
    "thousand",
    "million",
    "billion",
    "first",
    "second",
    "third",
    "fourth",
    "fifth",
    "half",
    "twice",
    "dozen",
];

/// Capitalised words that open sentences without naming anything.
const COMMON_OPENERS: &[&str] = &[
    "also",
    "after",
    "again",
    "all",
    "always",
    "any",
    "as",
    "because",
    "before",
    "both",
    "each",
    "every",
    "finally",
    "first",
    "for",
    "here",
    "however",
    "in",
    "instead",
    "later",
    "maybe",
    "most",
    "much",
    "now",
    "often",
    "once",
    "only",
    "other",
    "our",
    "perhaps",
    "since",
    "some",
    "still",
    "such",
    "then",
    "there",
    "therefore",
    "though",
    "thus",
    "today",
    "tomorrow",
    "until",
    "we've",
    "we're",
    "i'm",
    "i've",
    "it's",
    "that's",
    "there's",
    "while",
    "yesterday",
    "yet",
    "note",
    "update",
    "remember",
    "decision",
    "fact",
    "todo",
    "tip",
];

/// Whether a word (`lower` is its lowercase form) distinguishes a fact.
fn is_distinguishing(word: &str, lower: &str, starts_sentence: bool) -> bool {
    if word.chars().any(|c| c.is_ascii_digit()) || lower.chars().any(|c| c.is_ascii_digit()) {
        return true; // numbers (in digits or words), dates, times, versions, codes
    }
    if NUMBER_WORDS.contains(&lower) {
        return !(starts_sentence && COMMON_OPENERS.contains(&lower)); // "First, …" is discourse
    }
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("www.") {
        return true;
    }
    if word.contains(['/', '\\', '@', '_']) || word.contains("::") || word.starts_with('~') {
        return true; // paths, e-mail addresses, identifiers
    }
    if word.starts_with("--") || (word.starts_with('-') && word.len() > 1) {
        return true; // command-line flags
    }
    if let Some((stem, extension)) = word.rsplit_once('.')
        && !stem.is_empty()
        && (1..=5).contains(&extension.len())
        && extension.chars().all(|c| c.is_ascii_alphanumeric())
        && stem.chars().any(char::is_alphanumeric)
    {
        return true; // file names, dotted names (main.rs, os.path)
    }
    // "I'm", "It's": the word before the apostrophe decides.
    let base = lower.split(['\'', '’']).next().unwrap_or(lower);
    if is_stopword(base) {
        return false;
    }
    if let Some((left, right)) = lower.split_once('-')
        && left.chars().any(char::is_alphanumeric)
        && right.chars().any(char::is_alphanumeric)
    {
        return true; // hyphenated names and identifiers (db-replica, on-call)
    }
    let mut letters = word.chars().filter(|c| c.is_alphabetic());
    let Some(first) = letters.next() else { return false };
    let rest: Vec<char> = letters.collect();
    if first.is_uppercase() && !rest.is_empty() && rest.iter().all(|c| c.is_uppercase()) {
        return true; // acronyms (API, SQL)
    }
    if rest.iter().any(|c| c.is_uppercase()) && word.chars().next().is_some_and(char::is_alphabetic) {
        return true; // camelCase, PostgreSQL, iPhone
    }
    if !first.is_uppercase() {
        return false;
    }
    if !starts_sentence {
        return true; // a capitalised word inside a sentence: a name
    }
    // A capitalised sentence opener: a name unless it is a common word or
    // reads as an inflected verb or adverb (names rarely end so).
    let inflected = ["ed", "ing", "ly"].iter().any(|suffix| base.len() > suffix.len() + 2 && base.ends_with(suffix));
    !(COMMON_OPENERS.contains(&lower) || inflected)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_changed_number_is_a_different_fact() {
        let first = "client 1 fact 1: the valve 101 was replaced on shift 1";
        let second = "client 1 fact 2: the valve 102 was replaced on shift 2";
        assert_eq!(judge(second, first), Verdict::Distinct(vec!["2".into(), "102".into()]));
    }

    #[test]
    fn reformatted_copies_are_duplicates() {
        let filed = "We decided to use PostgreSQL instead of MongoDB because of transactions.";
        for copy in [
            "we decided to use postgresql instead of mongodb because of transactions",
            "We  decided to use PostgreSQL, instead of MongoDB -- because of transactions!",
            "WE DECIDED TO USE POSTGRESQL INSTEAD OF MONGODB BECAUSE OF TRANSACTIONS.",
            "We decided to use `PostgreSQL` instead of `MongoDB` because of transactions",
        ] {
            assert_eq!(judge(copy, filed), Verdict::Duplicate, "{copy}");
        }
        assert!(same_text(filed, "we decided to use postgresql, instead of mongodb because of transactions"));
        assert!(!same_text(filed, "We decided to use MySQL instead of MongoDB because of transactions."));
    }

    #[test]
    fn a_paraphrase_without_new_specifics_is_a_duplicate() {
        let filed = "The team chose PostgreSQL over MongoDB because it needs transactions.";
        assert!(judge("We picked PostgreSQL over MongoDB since transactions are needed.", filed).is_duplicate());
        // A shorter restatement lacks details; it adds none.
        assert!(judge("The team chose PostgreSQL.", filed).is_duplicate());
    }

    #[test]
    fn each_kind_of_specific_distinguishes() {
        let cases = [
            ("Alice approved the budget for the lab.", "Bob approved the budget for the lab.", "bob"),
            ("Upgrade to version 1.2.3 tonight.", "Upgrade to version 1.2.4 tonight.", "1.2.4"),
            ("The config lives in src/config.rs now.", "The config lives in src/settings.rs now.", "src/settings.rs"),
            (
                "Docs are at https://a.example/docs today.",
                "Docs are at https://b.example/docs today.",
                "https://b.example/docs",
            ),
            ("Run `cargo test` before merging.", "Run `cargo bench` before merging.", "cargo bench"),
            ("The deploy uses the max_retries setting.", "The deploy uses the retry_limit setting.", "retry_limit"),
            ("We will use Redis for the cache.", "We will not use Redis for the cache.", "not"),
            ("We will not use Redis for the cache.", "We will use Redis for the cache.", "not"),
            ("The meeting moved to Tuesday.", "The meeting moved to Friday.", "friday"),
            ("Paid $40 for the sensor.", "Paid $45 for the sensor.", "45"),
            ("We have three gripper arms.", "We have four gripper arms.", "4"),
            ("Set the timeout with --timeout in the CLI.", "Set the timeout with --deadline in the CLI.", "--deadline"),
            ("The bug is in parseHeader.", "The bug is in parseFooter.", "parsefooter"),
            ("Mail ops@lab.example about it.", "Mail dev@lab.example about it.", "dev@lab.example"),
        ];
        for (filed, new, token) in cases {
            match judge(new, filed) {
                Verdict::Distinct(tokens) => assert!(tokens.contains(&token.to_string()), "{new}: {tokens:?}"),
                Verdict::Duplicate => panic!("{new} dropped as a duplicate of {filed}"),
            }
        }
    }

    #[test]
    fn a_repeated_or_moved_number_is_noticed() {
        // Same numbers, but one more occurrence.
        assert!(!judge("the valve 7 was replaced on shift 7", "the valve 3 was replaced on shift 7").is_duplicate());
        // Same numbers in swapped places.
        assert!(!judge("the valve 7 was replaced on shift 3", "the valve 3 was replaced on shift 7").is_duplicate());
        // Same pairs in another order of clauses.
        assert!(judge("on shift 3 the valve 7 was replaced", "the valve 7 was replaced on shift 3").is_duplicate());
    }

    #[test]
    fn contractions_and_possessives_are_not_names() {
        let filed = "Alice said the gripper force is set too high.";
        assert!(judge("Alice's note: I'm sure the gripper force is set too high.", filed).is_duplicate());
    }

    #[test]
    fn a_word_replaced_by_another_of_its_set_is_new() {
        let filed = "The gripper force for the red cube is 12.5 N.";
        assert_eq!(
            judge("The gripper force for the blue cube is 12.5 N.", filed),
            Verdict::Distinct(vec!["blue".into()])
        );
        assert!(
            !judge("The nightly tests failed on the build server.", "The nightly tests passed on the build server.")
                .is_duplicate()
        );
        assert!(!judge("Dark mode is disabled for new users.", "Dark mode is enabled for new users.").is_duplicate());
        // A set word the drawer has no rival for is ordinary text.
        assert!(
            judge(
                "The gripper force for the cube is 12.5 N, red or not.",
                "The gripper force for the cube is 12.5 N, red or not."
            )
            .is_duplicate()
        );
        assert!(judge("We meet in the morning about the red cube.", "We meet about the red cube.").is_duplicate());
    }

    #[test]
    fn units_spellings_and_number_words() {
        assert!(!judge("The tank holds 200 gallons.", "The tank holds 200 litres.").is_duplicate());
        assert!(!judge("The limit is 500 requests per hour.", "The limit is 500 requests per minute.").is_duplicate());
        assert!(!judge("Sensor S-12 reads 4 degrees lower.", "Sensor S-12 reads 4 degrees higher.").is_duplicate());
        assert!(!judge("Legal rejected the privacy text.", "Legal approved the privacy text.").is_duplicate());
        assert!(!judge("the build server is back up again", "the build server is down again").is_duplicate());
        assert!(!judge("Set max_connections on db-replica.", "Set max_connections on db-primary.").is_duplicate());
        assert!(
            judge(
                "Organisation policy: all laptops use encryption.",
                "Organization policy: all laptops use encryption."
            )
            .is_duplicate()
        );
        assert!(judge("The team favours colour-coded labels.", "The team favors color-coded labels.").is_duplicate());
        assert!(
            judge("Mix two cups of flour and one cup of sugar.", "Mix 2 cups of flour and 1 cup of sugar.")
                .is_duplicate()
        );
        assert!(judge("CI takes ~12 minutes.", "CI takes about 12 minutes.").is_duplicate());
        assert!(
            judge(
                "The vacuum gets stuck under the living-room sofa.",
                "The vacuum gets stuck under the living room sofa."
            )
            .is_duplicate()
        );
        assert!(judge("The flour bin holds four kilograms.", "The flour bin holds 4 kilograms.").is_duplicate());
    }

    #[test]
    fn sentence_openers_are_not_names() {
        let filed = "We switched the CI runner to the larger machine.";
        assert!(judge("Switched the CI runner to the larger machine.", filed).is_duplicate());
        assert!(judge("Finally we switched the CI runner to the larger machine.", filed).is_duplicate());
        assert!(judge("Then we switched the CI runner to the larger machine.", filed).is_duplicate());
    }

    #[test]
    fn plurals_of_names_are_the_same_name() {
        assert!(
            judge("Deploys happen on Tuesdays after the standup.", "Deploys happen on Tuesday after the standup.")
                .is_duplicate()
        );
        assert!(
            !judge("Deploys happen on Thursdays after the standup.", "Deploys happen on Tuesday after the standup.")
                .is_duplicate()
        );
    }

    #[test]
    fn negation_in_both_is_not_new() {
        assert!(judge("We never use Redis for the cache.", "We do not use Redis for the cache.").is_duplicate());
    }

    #[test]
    fn near_needs_the_cosine_first() {
        assert_eq!(judge_near(0.80, "valve 102", "valve 101"), None);
        assert_eq!(judge_near(0.90, "valve 101 replaced", "valve 101 replaced"), Some(Verdict::Duplicate));
    }

    #[test]
    fn odd_text_does_not_panic() {
        for text in ["", "`", "``", "` `", "a`b`c`", "...", "—", "日本語のテキスト", "n't", "-", "--", ".rs", "a.", "/"]
        {
            let _ = judge(text, "something filed");
            let _ = judge("something new", text);
            let _ = same_text(text, text);
        }
    }

    fn fact() -> impl Strategy<Value = (String, String)> {
        let subject = prop::sample::select(vec!["valve", "pump", "sensor", "motor", "gripper"]);
        let verb = prop::sample::select(vec!["was replaced", "was inspected", "failed", "was recalibrated"]);
        (subject, 1u32..10_000, verb, 1u32..40)
            .prop_map(|(s, n, v, shift)| (format!("the {s} {n} {v} on shift {shift}"), format!("{s} {n}")))
    }

    proptest! {
        /// A fact and its variant with one changed number both survive.
        #[test]
        fn one_changed_number_survives((text, _) in fact(), delta in 1u32..500) {
            let number: u32 = text.split_whitespace().nth(2).unwrap().parse().unwrap();
            let changed = text.replacen(&number.to_string(), &(number + delta).to_string(), 1);
            prop_assert!(!judge(&changed, &text).is_duplicate(), "{changed} vs {text}");
        }

        /// A fact and its variant with one changed name both survive.
        #[test]
        fn one_changed_name_survives((text, _) in fact(), names in prop::sample::subsequence(
            vec!["Alice", "Bob", "Carol", "Dmitri", "Esther", "Farid"], 2)) {
            let first = format!("{text}, signed off by {}", names[0]);
            let second = format!("{text}, signed off by {}", names[1]);
            prop_assert!(!judge(&second, &first).is_duplicate());
        }

        /// A reformatted copy (case, spacing, punctuation) is a duplicate.
        #[test]
        fn a_reformatted_copy_is_a_duplicate((text, _) in fact(), upper in any::<bool>(), spaces in 1usize..4,
            end in prop::sample::select(vec!["", ".", "!", " ."])) {
            let mut copy = text.split(' ').collect::<Vec<_>>().join(&" ".repeat(spaces));
            if upper { copy = copy.to_uppercase(); }
            copy.push_str(end);
            prop_assert!(judge(&copy, &text).is_duplicate(), "{copy}");
            prop_assert!(same_text(&copy, &text));
        }

        /// Never panics, whatever the text.
        #[test]
        fn never_panics(a in ".{0,80}", b in ".{0,80}") {
            let _ = judge(&a, &b);
            let _ = same_text(&a, &b);
        }
    }
}
