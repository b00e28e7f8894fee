//! AAAK, the Python MemPalace's symbolic summary dialect: a drawer's text
//! reduced to one line of entity codes, topic words, a key sentence,
//! emotion codes and flags (`0:ALC+BOB|graphql_schema_api|"We decided…"|determ|DECISION`),
//! with a `wing|room|date|source` header line when the drawer has a place.
//!
//! This is a port of `Dialect.compress` (MemPalace 3.11 `dialect.py`),
//! deterministic and lossy: the text cannot be rebuilt from it. It is a
//! summary for an agent's context window, never a replacement for the
//! drawer, which stays verbatim. Token counts are the Python estimates
//! (1.3 per whitespace word for one text, characters / 3.8 for a total).
//!
//! Not here: reading the entity config file (the binary reads it and passes
//! the pairs), storing summaries (the engine), the zettel-file encoder and
//! the layer-1 generator of `dialect.py` (no command of ours uses them).

/// Keywords whose presence (as a lowercase substring) signals an emotion,
/// in `dialect.py`'s order (the first three found are kept).
const EMOTION_SIGNALS: &[(&str, &str)] = &[
    ("decided", "determ"),
    ("prefer", "convict"),
    ("worried", "anx"),
    ("excited", "excite"),
    ("frustrated", "frust"),
    ("confused", "confuse"),
    ("love", "love"),
    ("hate", "rage"),
    ("hope", "hope"),
    ("fear", "fear"),
    ("trust", "trust"),
    ("happy", "joy"),
    ("sad", "grief"),
    ("surprised", "surprise"),
    ("grateful", "grat"),
    ("curious", "curious"),
    ("wonder", "wonder"),
    ("anxious", "anx"),
    ("relieved", "relief"),
    ("satisf", "satis"),
    ("disappoint", "grief"),
    ("concern", "anx"),
];

/// Keywords whose presence signals a flag, in `dialect.py`'s order.
const FLAG_SIGNALS: &[(&str, &str)] = &[
    ("decided", "DECISION"),
    ("chose", "DECISION"),
    ("switched", "DECISION"),
    ("migrated", "DECISION"),
    ("replaced", "DECISION"),
    ("instead of", "DECISION"),
    ("because", "DECISION"),
    ("founded", "ORIGIN"),
    ("created", "ORIGIN"),
    ("started", "ORIGIN"),
    ("born", "ORIGIN"),
    ("launched", "ORIGIN"),
    ("first time", "ORIGIN"),
    ("core", "CORE"),
    ("fundamental", "CORE"),
    ("essential", "CORE"),
    ("principle", "CORE"),
    ("belief", "CORE"),
    ("always", "CORE"),
    ("never forget", "CORE"),
    ("turning point", "PIVOT"),
    ("changed everything", "PIVOT"),
    ("realized", "PIVOT"),
    ("breakthrough", "PIVOT"),
    ("epiphany", "PIVOT"),
    ("api", "TECHNICAL"),
    ("database", "TECHNICAL"),
    ("architecture", "TECHNICAL"),
    ("deploy", "TECHNICAL"),
    ("infrastructure", "TECHNICAL"),
    ("algorithm", "TECHNICAL"),
    ("framework", "TECHNICAL"),
    ("server", "TECHNICAL"),
    ("config", "TECHNICAL"),
];

/// Words that make a sentence the key one (each found adds 2).
const DECISION_WORDS: &[&str] = &[
    "decided",
    "because",
    "instead",
    "prefer",
    "switched",
    "chose",
    "realized",
    "important",
    "key",
    "critical",
    "discovered",
    "learned",
    "conclusion",
    "solution",
    "reason",
    "why",
    "breakthrough",
    "insight",
];

/// Filler words left out of topics and name detection (`dialect.py`'s list).
pub const STOP_WORDS: &[&str] = &[
    "the", "a", "an", "is", "are", "was", "were", "be", "been", "being", "have", "has", "had", "do", "does", "did",
    "will", "would", "could", "should", "may", "might", "shall", "can", "to", "of", "in", "for", "on", "with", "at",
    "by", "from", "as", "into", "about", "between", "through", "during", "before", "after", "above", "below", "up",
    "down", "out", "off", "over", "under", "again", "further", "then", "once", "here", "there", "when", "where", "why",
    "how", "all", "each", "every", "both", "few", "more", "most", "other", "some", "such", "no", "nor", "not", "only",
    "own", "same", "so", "than", "too", "very", "just", "don", "now", "and", "but", "or", "if", "while", "that",
    "this", "these", "those", "it", "its", "i", "we", "you", "he", "she", "they", "me", "him", "her", "us", "them",
    "my", "your", "his", "our", "their", "what", "which", "who", "whom", "also", "much", "many", "like", "because",
    "since", "get", "got", "use", "used", "using", "make", "made", "thing", "things", "way", "well", "really", "want",
    "need",
];

fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word)
}

/// Where a drawer sits, for the header line. Empty strings mean unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Place<'a> {
    /// The source file (only its stem is shown).
    pub source_file: &'a str,
    /// Wing.
    pub wing: &'a str,
    /// Room.
    pub room: &'a str,
    /// The date the text is about.
    pub date: &'a str,
}

/// The AAAK encoder with its known entities (`entities.json`'s
/// `{"entities": {"Alice": "ALC"}}`).
#[derive(Debug, Clone, Default)]
pub struct Dialect {
    /// Full name → short code, in the order given.
    entities: Vec<(String, String)>,
}

/// Size of a text before and after, in the Python estimates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// Estimated tokens of the original ([`count_tokens`]).
    pub original_tokens: u64,
    /// Estimated tokens of the summary.
    pub summary_tokens: u64,
    /// `original_tokens / summary_tokens`, rounded to one decimal.
    pub ratio: f64,
    /// Characters of the original.
    pub original_chars: u64,
    /// Characters of the summary.
    pub summary_chars: u64,
}

impl Dialect {
    /// An encoder knowing `entities` (full name, code). Names written in
    /// lowercase only are ignored when detecting entities, as in Python
    /// (they exist there as lookup aliases).
    pub fn new(entities: impl IntoIterator<Item = (String, String)>) -> Self {
        Self { entities: entities.into_iter().collect() }
    }

    /// Number of known entities.
    pub fn entity_count(&self) -> usize {
        self.entities.len()
    }

    /// The AAAK summary of `text`: a header line when `place` names a wing
    /// or source, then the content line.
    pub fn compress(&self, text: &str, place: &Place<'_>) -> String {
        let entities = self.detect_entities(text);
        let entity_part = if entities.is_empty() {
            "???".to_string()
        } else {
            entities.iter().take(3).cloned().collect::<Vec<_>>().join("+")
        };
        let topics = extract_topics(text, 3);
        let topic_part = if topics.is_empty() { "misc".to_string() } else { topics.join("_") };
        let quote = key_sentence(text);
        let emotions = detect(text, EMOTION_SIGNALS);
        let flags = detect(text, FLAG_SIGNALS);

        let mut lines = Vec::with_capacity(2);
        if !place.source_file.is_empty() || !place.wing.is_empty() {
            let or_unknown = |value: &str| if value.is_empty() { "?".to_string() } else { value.to_string() };
            let source =
                if place.source_file.is_empty() { "?".to_string() } else { path_stem(place.source_file).to_string() };
            lines.push([or_unknown(place.wing), or_unknown(place.room), or_unknown(place.date), source].join("|"));
        }
        let mut parts = vec![format!("0:{entity_part}"), topic_part];
        if !quote.is_empty() {
            parts.push(format!("\"{quote}\""));
        }
        if !emotions.is_empty() {
            parts.push(emotions.join("+"));
        }
        if !flags.is_empty() {
            parts.push(flags.join("+"));
        }
        lines.push(parts.join("|"));
        lines.join("\n")
    }

    /// Known entities found in the text (codes, in the order given), else
    /// up to three capitalised words that look like names (first three
    /// letters, uppercased).
    fn detect_entities(&self, text: &str) -> Vec<String> {
        let lowered = text.to_lowercase();
        let mut found: Vec<String> = Vec::new();
        for (name, code) in &self.entities {
            if !is_lower(name) && lowered.contains(&name.to_lowercase()) && !found.contains(code) {
                found.push(code.clone());
            }
        }
        if !found.is_empty() {
            return found;
        }
        for (index, word) in text.split_whitespace().enumerate() {
            let clean: String = word.chars().filter(char::is_ascii_alphabetic).collect();
            let mut chars = clean.chars();
            let Some(first) = chars.next() else { continue };
            let rest = chars.as_str();
            if clean.len() >= 2
                && first.is_ascii_uppercase()
                && rest.chars().all(|c| c.is_ascii_lowercase())
                && index > 0
                && !is_stop_word(&clean.to_ascii_lowercase())
            {
                let code: String = clean.chars().take(3).collect::<String>().to_ascii_uppercase();
                if !found.contains(&code) {
                    found.push(code);
                }
                if found.len() >= 3 {
                    break;
                }
            }
        }
        found
    }
}

/// Python's `str.islower()`: at least one cased character, all of them lowercase.
fn is_lower(text: &str) -> bool {
    let mut cased = false;
    for c in text.chars() {
        if c.is_uppercase() {
            return false;
        }
        if c.is_lowercase() {
            cased = true;
        }
    }
    cased
}

/// The last path component without its last extension (Python's `Path.stem`).
fn path_stem(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    match name.rfind('.') {
        Some(0) | None => name,
        Some(dot) => &name[..dot],
    }
}

/// Codes of the signals present in the text, each once, at most three.
fn detect(text: &str, signals: &[(&str, &'static str)]) -> Vec<&'static str> {
    let lowered = text.to_lowercase();
    let mut found: Vec<&'static str> = Vec::new();
    for (keyword, code) in signals {
        if lowered.contains(keyword) && !found.contains(code) {
            found.push(code);
        }
    }
    found.truncate(3);
    found
}

/// Words of `[a-zA-Z][a-zA-Z_-]{2,}` (the Python pattern), in order.
fn topic_words(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut words = Vec::new();
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index].is_ascii_alphabetic() {
            let start = index;
            index += 1;
            while index < bytes.len() && (bytes[index].is_ascii_alphabetic() || matches!(bytes[index], b'_' | b'-')) {
                index += 1;
            }
            if index - start >= 3 {
                words.push(&text[start..index]);
            }
        } else {
            index += 1;
        }
    }
    words
}

/// The `max` most frequent topic words, lowercased; capitalised words and
/// identifiers (`snake_case`, `kebab-case`, `camelCase`) count extra. Ties
/// keep the order of first appearance.
pub fn extract_topics(text: &str, max: usize) -> Vec<String> {
    let words = topic_words(text);
    let mut order: Vec<String> = Vec::new();
    let mut counts: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
    for word in &words {
        let lowered = word.to_ascii_lowercase();
        if is_stop_word(&lowered) || lowered.len() < 3 {
            continue;
        }
        let count = counts.entry(lowered.clone()).or_insert(0);
        if *count == 0 {
            order.push(lowered);
        }
        *count += 1;
    }
    for word in &words {
        let lowered = word.to_ascii_lowercase();
        if is_stop_word(&lowered) {
            continue;
        }
        let Some(count) = counts.get_mut(&lowered) else { continue };
        if word.as_bytes()[0].is_ascii_uppercase() {
            *count += 2;
        }
        if word.contains(['_', '-']) || word.bytes().skip(1).any(|b| b.is_ascii_uppercase()) {
            *count += 2;
        }
    }
    // A stable sort by count keeps first appearance among equals.
    order.sort_by_key(|word| std::cmp::Reverse(counts[word]));
    order.truncate(max);
    order
}

/// The sentence (split at `.`, `!`, `?` and line ends; longer than 10
/// characters) with the most decision words, short ones preferred; cut to
/// 52 characters and `...` beyond 55.
fn key_sentence(text: &str) -> String {
    let sentences: Vec<&str> =
        text.split(['.', '!', '?', '\n']).map(str::trim).filter(|s| s.chars().count() > 10).collect();
    let mut best: Option<(i64, &str)> = None;
    for sentence in sentences {
        let lowered = sentence.to_lowercase();
        let length = sentence.chars().count();
        let mut score: i64 = DECISION_WORDS.iter().filter(|w| lowered.contains(*w)).count() as i64 * 2;
        if length < 80 {
            score += 1;
        }
        if length < 40 {
            score += 1;
        }
        if length > 150 {
            score -= 2;
        }
        if best.is_none_or(|(top, _)| score > top) {
            best = Some((score, sentence));
        }
    }
    let Some((_, sentence)) = best else { return String::new() };
    if sentence.chars().count() > 55 {
        let cut: String = sentence.chars().take(52).collect();
        format!("{cut}...")
    } else {
        sentence.to_string()
    }
}

/// Estimated tokens of a text: 1.3 per whitespace-separated word, at least 1.
pub fn count_tokens(text: &str) -> u64 {
    ((text.split_whitespace().count() as f64 * 1.3) as u64).max(1)
}

/// Estimated tokens of a character total (the Python summary line: 3.8
/// characters per token), at least 1.
pub fn tokens_from_chars(chars: u64) -> u64 {
    ((chars as f64 / 3.8) as u64).max(1)
}

/// Sizes of a text and its summary.
pub fn stats(original: &str, summary: &str) -> Stats {
    let original_tokens = count_tokens(original);
    let summary_tokens = count_tokens(summary);
    Stats {
        original_tokens,
        summary_tokens,
        ratio: (original_tokens as f64 / summary_tokens.max(1) as f64 * 10.0).round() / 10.0,
        original_chars: original.chars().count() as u64,
        summary_chars: summary.chars().count() as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected strings are the output of MemPalace 3.11's
    // `Dialect().compress(text, metadata)` for the same input.
    #[test]
    fn plain_text_compresses_like_the_python_dialect() {
        let dialect = Dialect::default();
        let decision = "We decided to use GraphQL instead of REST because the mobile app needs flexible queries. \
                        Alice prefers Postgres for the database.";
        assert_eq!(
            dialect.compress(decision, &Place::default()),
            "0:ALI+POS|graphql_rest_alice|\"We decided to use GraphQL instead of REST because th...\"|determ+convict|DECISION+TECHNICAL"
        );
        let exchange = "USER: The deploy failed again on staging. I'm worried the Kubernetes config is wrong; Bob said \
                        the API server rejects the token.\nASSISTANT: I checked kube-apiserver logs. The service_account \
                        token expired, so we switched to projected tokens. Breakthrough: the CronJob now rotates them!";
        let place = Place { source_file: "/x/y/session-1.jsonl", wing: "ops", room: "incidents", date: "2026-01-02" };
        assert_eq!(
            dialect.compress(exchange, &place),
            "ops|incidents|2026-01-02|session-1\n0:IM+KUB+BOB|user_api_assistant|\"The service_account token expired, so we \
             switched to...\"|anx|DECISION+PIVOT+TECHNICAL"
        );
        let long = "This sentence is decidedly long enough that it will need to be cut short by the encoder";
        assert_eq!(
            dialect.compress(long, &Place::default()),
            "0:???|sentence_decidedly_long|\"This sentence is decidedly long enough that it will ...\"|determ|DECISION"
        );
        assert_eq!(dialect.compress("", &Place::default()), "0:???|misc");
    }

    #[test]
    fn the_header_names_wing_room_date_and_source_stem() {
        let place = Place { source_file: "/home/a/notes/plan.v2.md", wing: "proj", room: "", date: "" };
        assert_eq!(Dialect::default().compress("short", &place), "proj|?|?|plan.v2\n0:???|short");
    }

    #[test]
    fn known_entities_win_over_capitalised_guesses_and_lowercase_aliases_are_ignored() {
        let dialect = Dialect::new([("Alice".to_string(), "ALC".to_string()), ("bob".to_string(), "BOB".to_string())]);
        assert_eq!(
            dialect.compress("Then alice met Bob and Carol at the Lab today.", &Place::default()),
            "0:ALC|bob_carol_lab|\"Then alice met Bob and Carol at the Lab today\""
        );
    }

    #[test]
    fn topics_skip_stop_words_and_prefer_identifiers() {
        assert_eq!(
            extract_topics("the vector_index and the vector_index again, then cache", 3),
            ["vector_index", "cache"]
        );
        assert!(extract_topics("a an the", 3).is_empty());
    }

    #[test]
    fn token_estimates_follow_the_python_heuristics() {
        assert_eq!(count_tokens("one two three four five six seven eight nine ten"), 13);
        assert_eq!(count_tokens(""), 1);
        assert_eq!(tokens_from_chars(38), 10);
        let s = stats("one two three four five six seven eight nine ten", "one two");
        assert_eq!((s.original_tokens, s.summary_tokens, s.ratio), (13, 2, 6.5));
    }

    #[test]
    fn stems_are_python_path_stems() {
        assert_eq!(path_stem("/a/b/c.txt"), "c");
        assert_eq!(path_stem("/a/.bashrc"), ".bashrc");
        assert_eq!(path_stem("noext"), "noext");
        assert_eq!(path_stem("x.tar.gz"), "x.tar");
    }
}
