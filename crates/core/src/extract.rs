//! Entity and fact extraction without an LLM (issue 5), tuned for
//! precision over recall: every extracted fact keeps its source drawer, so
//! a wrong one can be reviewed and deleted, but a wrong one should be rare.
//!
//! Entities are technologies from a small lexicon (with aliases:
//! "postgres" → PostgreSQL), names already known to the palace, file paths,
//! and capitalised phrases (a lone capitalised word opening a sentence only
//! counts when it is known, in the lexicon, or the subject of a relation).
//! Facts are read between two entity mentions of one sentence, from a fixed
//! set of connectors:
//!
//! * `X uses Y` (is using, runs on, relies on, depends on, is built on/with);
//! * `X switched/moved/migrated from Y to Z`, `X replaced Y with Z` —
//!   the old fact ends, the new one starts;
//! * `X owns Y` (is responsible for), `X maintains Y`;
//! * `X prefers Y` (the object may be a short noun phrase);
//! * `X works at Y` (works for, joined);
//! * `X manages Y`, `X is Y's manager`, `Y's manager is X`.
//!
//! "We"/"our team" as a subject stands for the caller's default subject
//! (the project a drawer belongs to), when given.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, MatchKind};
use regex::Regex;

use crate::kg::normalize_entity_name;

/// A technology name and the spellings that mean it.
const TECHNOLOGIES: &[(&str, &[&str])] = &[
    ("PostgreSQL", &["postgresql", "postgres", "psql"]),
    ("MySQL", &["mysql"]),
    ("MariaDB", &["mariadb"]),
    ("SQLite", &["sqlite"]),
    ("MongoDB", &["mongodb", "mongo"]),
    ("Redis", &["redis"]),
    ("Kafka", &["kafka"]),
    ("RabbitMQ", &["rabbitmq"]),
    ("NATS", &["nats"]),
    ("Elasticsearch", &["elasticsearch", "elastic search"]),
    ("ClickHouse", &["clickhouse"]),
    ("DynamoDB", &["dynamodb"]),
    ("Cassandra", &["cassandra"]),
    ("pgvector", &["pgvector"]),
    ("ChromaDB", &["chromadb", "chroma"]),
    ("Kubernetes", &["kubernetes", "k8s"]),
    ("Docker", &["docker"]),
    ("Terraform", &["terraform"]),
    ("Ansible", &["ansible"]),
    ("Nginx", &["nginx"]),
    ("Rust", &["rust"]),
    ("Python", &["python"]),
    ("Go", &["golang"]),
    ("TypeScript", &["typescript"]),
    ("JavaScript", &["javascript"]),
    ("Java", &["java"]),
    ("Kotlin", &["kotlin"]),
    ("Swift", &["swift"]),
    ("Ruby", &["ruby"]),
    ("React", &["react"]),
    ("Vue", &["vue", "vue.js"]),
    ("Angular", &["angular"]),
    ("Svelte", &["svelte"]),
    ("Node.js", &["node.js", "nodejs"]),
    ("Django", &["django"]),
    ("Flask", &["flask"]),
    ("FastAPI", &["fastapi"]),
    ("Rails", &["rails", "ruby on rails"]),
    ("GraphQL", &["graphql"]),
    ("gRPC", &["grpc"]),
    ("AWS", &["aws", "amazon web services"]),
    ("GCP", &["gcp", "google cloud"]),
    ("Azure", &["azure"]),
    ("Linux", &["linux"]),
    ("GitHub", &["github"]),
    ("GitLab", &["gitlab"]),
    ("Jenkins", &["jenkins"]),
    ("OpenAI", &["openai"]),
    ("Ollama", &["ollama"]),
    ("Stripe", &["stripe"]),
    ("Slack", &["slack"]),
    ("Jira", &["jira"]),
    ("Sentry", &["sentry"]),
    ("Grafana", &["grafana"]),
    ("Prometheus", &["prometheus"]),
    ("Datadog", &["datadog"]),
    ("WordPress", &["wordpress"]),
    ("ROS", &["ros", "ros2"]),
    ("OAuth", &["oauth"]),
    ("Vercel", &["vercel"]),
    ("Cloudflare", &["cloudflare"]),
];

/// Capitalised words that open sentences without naming anything.
const NOT_NAMES: &[&str] = &[
    "The",
    "A",
    "An",
    "We",
    "I",
    "It",
    "This",
    "That",
    "These",
    "Those",
    "Our",
    "My",
    "They",
    "He",
    "She",
    "There",
    "Then",
    "When",
    "After",
    "Before",
    "Today",
    "Yesterday",
    "Tomorrow",
    "Now",
    "So",
    "But",
    "And",
    "Also",
    "If",
    "In",
    "On",
    "At",
    "For",
    "With",
    "From",
    "By",
    "To",
    "Of",
    "As",
    "Since",
    "Because",
    "While",
    "Finally",
    "Yes",
    "No",
    "Please",
    "Thanks",
    "Remember",
    "Note",
    "Maybe",
    "Each",
    "Every",
    "All",
    "Some",
    "Any",
    "What",
    "Why",
    "How",
    "Who",
    "Where",
    "Which",
    "Let",
    "Let's",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
    "Last",
    "Next",
    "Everyone",
    "Nobody",
    "Team",
    "Both",
    "Once",
    "Not",
    "Most",
];

/// Entity names the palace already knows, found in text whatever their
/// case, as whole words (one automaton for all names, built once per batch
/// of drawers).
#[derive(Debug, Clone)]
pub struct KnownNames {
    names: Vec<String>,
    automaton: Option<AhoCorasick>,
}

impl Default for KnownNames {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl KnownNames {
    /// Names of two or more characters are matched; shorter ones would
    /// match inside ordinary words.
    pub fn new(names: Vec<String>) -> Self {
        let names: Vec<String> = names.into_iter().filter(|n| n.trim().chars().count() >= 2).collect();
        let patterns: Vec<String> = names.iter().map(|n| n.trim().to_lowercase()).collect();
        let automaton = if patterns.is_empty() {
            None
        } else {
            AhoCorasick::builder().match_kind(MatchKind::LeftmostLongest).build(&patterns).ok()
        };
        Self { names, automaton }
    }

    /// How many names.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// Whole-word occurrences in `text`: (start, end, name) with byte
    /// offsets into `text`.
    pub fn find<'a>(&'a self, text: &str) -> Vec<(usize, usize, &'a str)> {
        let Some(automaton) = &self.automaton else { return Vec::new() };
        // Lowercasing may change byte lengths ("İ" → "i̇"): keep, for every
        // byte of the lowered text, the offset of the character it came from.
        let mut lowered = String::with_capacity(text.len());
        let mut origin: Vec<usize> = Vec::with_capacity(text.len() + 1);
        for (offset, c) in text.char_indices() {
            for lower in c.to_lowercase() {
                lowered.push(lower);
                origin.resize(lowered.len(), offset);
            }
        }
        origin.push(text.len());
        let mut out = Vec::new();
        for m in automaton.find_iter(&lowered) {
            let (start, end) = (origin[m.start()], origin[m.end()]);
            // A match must cover whole characters of the original text.
            let splits_start = m.start() > 0 && origin[m.start() - 1] == start;
            let splits_end = origin[m.end() - 1] == end;
            if splits_start || splits_end || end <= start {
                continue;
            }
            let bounded = text[..start].chars().next_back().is_none_or(|c| !c.is_alphanumeric())
                && text[end..].chars().next().is_none_or(|c| !c.is_alphanumeric());
            if bounded {
                out.push((start, end, self.names[m.pattern().as_usize()].as_str()));
            }
        }
        out
    }
}

/// What kind of thing an entity is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntityKind {
    /// From the technology lexicon.
    Technology,
    /// A file path.
    File,
    /// Subject of works_at / manages / prefers (a person, as far as we know).
    Person,
    /// Object of works_at.
    Organization,
    /// Anything else.
    Unknown,
}

impl EntityKind {
    /// The stored spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EntityKind::Technology => "technology",
            EntityKind::File => "file",
            EntityKind::Person => "person",
            EntityKind::Organization => "organization",
            EntityKind::Unknown => "unknown",
        }
    }
}

/// An entity mentioned in a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractedEntity {
    /// Display name (canonical for technologies).
    pub name: String,
    /// Kind.
    pub kind: EntityKind,
}

/// A fact read from a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtractedTriple {
    /// Subject name.
    pub subject: String,
    /// Relation: uses, owns, maintains, prefers, works_at, manages.
    pub predicate: String,
    /// Object name.
    pub object: String,
    /// For a switch: the object whose fact ends (`subject predicate old`).
    pub replaces: Option<String>,
}

/// Everything extracted from one text.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Extraction {
    /// Entities mentioned, deduplicated by normalised name, in order.
    pub entities: Vec<ExtractedEntity>,
    /// Facts, in order.
    pub triples: Vec<ExtractedTriple>,
}

#[derive(Debug, Clone)]
struct Mention {
    start: usize,
    end: usize,
    name: String,
    kind: EntityKind,
    /// A lone sentence-initial capitalised word, not known: usable as a
    /// relation subject only.
    weak: bool,
}

struct Patterns {
    capitalised: Regex,
    path: Regex,
    /// Every alias of the lexicon, ASCII case-insensitive; the value of
    /// pattern `i` is `technology_names[i]`. One automaton instead of a
    /// regex per alias: building those cost 120 ms per process start.
    technologies: AhoCorasick,
    technology_names: Vec<&'static str>,
    we: Regex,
}

/// Builds the extractor's patterns now (they are built once per process,
/// on first use): a one-text process calls it on a thread of its own while
/// it opens the palace.
pub fn prepare() {
    patterns();
}

fn patterns() -> &'static Patterns {
    static PATTERNS: OnceLock<Patterns> = OnceLock::new();
    PATTERNS.get_or_init(|| Patterns {
        capitalised: Regex::new(
            r"\b[A-Z][a-zA-Z0-9]*(?:[-'][A-Z][a-zA-Z0-9]*)?(?:\s+(?:[A-Z][a-zA-Z0-9]*|of|de|van|von))*\b",
        )
        .expect("built-in pattern"),
        path: Regex::new(r"(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+\.[a-zA-Z0-9]{1,6}\b").expect("built-in pattern"),
        technologies: AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(TECHNOLOGIES.iter().flat_map(|(_, aliases)| aliases.iter()))
            .expect("built-in lexicon"),
        technology_names: TECHNOLOGIES.iter().flat_map(|(name, aliases)| aliases.iter().map(move |_| *name)).collect(),
        we: Regex::new(r"(?i)\b(?:we|our team|the team)\b").expect("built-in pattern"),
    })
}

fn sentence_start(text: &str, position: usize) -> bool {
    text[..position].trim_end().is_empty()
        || text[..position].trim_end().ends_with(['.', '!', '?', ':', ';', '\n', '"'])
}

fn mentions(sentence: &str, known: &KnownNames) -> Vec<Mention> {
    let p = patterns();
    let mut found: Vec<Mention> = Vec::new();
    let push = |found: &mut Vec<Mention>, mention: Mention| {
        if found.iter().any(|m| m.start < mention.end && mention.start < m.end) {
            return;
        }
        found.push(mention);
    };
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut technologies: Vec<(usize, usize, &'static str)> = p
        .technologies
        .find_overlapping_iter(sentence)
        .filter(|m| {
            !sentence[..m.start()].chars().next_back().is_some_and(|c| word(c) || c == '.')
                && !sentence[m.end()..].chars().next().is_some_and(word)
        })
        .map(|m| (m.start(), m.end(), p.technology_names[m.pattern().as_usize()]))
        .collect();
    // Leftmost first, and the longest alias where several start together.
    technologies.sort_by_key(|&(start, end, _)| (start, std::cmp::Reverse(end)));
    for (start, end, name) in technologies {
        push(&mut found, Mention { start, end, name: name.to_string(), kind: EntityKind::Technology, weak: false });
    }
    for m in p.path.find_iter(sentence) {
        push(
            &mut found,
            Mention {
                start: m.start(),
                end: m.end(),
                name: m.as_str().to_string(),
                kind: EntityKind::File,
                weak: false,
            },
        );
    }
    for (start, end, name) in known.find(sentence) {
        push(&mut found, Mention { start, end, name: name.to_string(), kind: EntityKind::Unknown, weak: false });
    }
    for m in p.capitalised.find_iter(sentence) {
        let mut text = m.as_str();
        let mut start = m.start();
        // Drop leading non-names ("The Crawbl Backend" → "Crawbl Backend").
        loop {
            let first = text.split_whitespace().next().unwrap_or("");
            if NOT_NAMES.contains(&first) && text.contains(' ') {
                let skip = text.find(' ').map_or(text.len(), |i| i + 1);
                start += skip;
                text = text[skip..].trim_start();
            } else {
                break;
            }
        }
        let text = text.trim_end_matches([' ', '\'']).trim_end_matches(" of");
        if text.is_empty() || NOT_NAMES.contains(&text) {
            continue;
        }
        let single = !text.contains(' ');
        let weak = single && sentence_start(sentence, start);
        push(
            &mut found,
            Mention { start, end: start + text.len(), name: text.to_string(), kind: EntityKind::Unknown, weak },
        );
    }
    found.sort_by_key(|m| m.start);
    found
}

/// A relation read from the text between two mentions.
fn connector(between: &str) -> Option<&'static str> {
    let mut between = between.trim().trim_matches(',').trim().to_lowercase();
    for prefix in ["now ", "also ", "still "] {
        if let Some(rest) = between.strip_prefix(prefix) {
            between = rest.to_string();
        }
    }
    for article in [" the", " a", " an", " our", " his", " her", " their"] {
        if let Some(rest) = between.strip_suffix(article) {
            between = rest.to_string();
        }
    }
    match between.as_str() {
        "uses" | "use" | "is using" | "are using" | "runs on" | "run on" | "relies on" | "rely on" | "depends on"
        | "depend on" | "is built on" | "is built with" | "is written in" | "switched to" | "moved to"
        | "migrated to" => Some("uses"),
        "owns" | "own" | "is the owner of" | "is responsible for" | "are responsible for" => Some("owns"),
        "maintains" | "maintain" | "is maintaining" | "is the maintainer of" => Some("maintains"),
        "prefers" | "prefer" => Some("prefers"),
        "works at" | "works for" | "worked at" | "is working at" | "joined" | "is employed at" | "is employed by" => {
            Some("works_at")
        }
        "manages" | "manage" | "is the manager of" | "leads" | "is the lead of" => Some("manages"),
        _ => None,
    }
}

fn subject_kind(predicate: &str) -> EntityKind {
    match predicate {
        "works_at" | "manages" | "prefers" => EntityKind::Person,
        _ => EntityKind::Unknown,
    }
}

/// A short noun phrase after "prefers": up to four words, stopping at
/// punctuation or a linking word.
fn preference_object(rest: &str) -> Option<String> {
    let mut words = Vec::new();
    for word in rest.split_whitespace() {
        let clean = word.trim_matches(|c: char| !c.is_alphanumeric() && c != '-');
        let lower = clean.to_lowercase();
        if !clean.chars().any(char::is_alphanumeric)
            || matches!(
                lower.as_str(),
                "over" | "instead" | "because" | "to" | "when" | "and" | "but" | "than" | "for" | "in" | "on" | "with"
            )
        {
            break;
        }
        words.push(clean.to_string());
        if word.ends_with([',', '.', ';', '!', '?']) || words.len() == 4 {
            break;
        }
    }
    let words: Vec<String> = words
        .into_iter()
        .skip_while(|w| matches!(w.to_lowercase().as_str(), "the" | "a" | "an" | "his" | "her" | "their"))
        .collect();
    (!words.is_empty()).then(|| words.join(" "))
}

/// Extracts entities and facts from a text. `known` are entity names the
/// palace already has; `default_subject` stands for "we".
pub fn extract(text: &str, known: &KnownNames, default_subject: Option<&str>) -> Extraction {
    let mut extraction = Extraction::default();
    let add_entity = |entities: &mut Vec<ExtractedEntity>, name: &str, kind: EntityKind| {
        let key = normalize_entity_name(name);
        if key.is_empty() {
            return;
        }
        match entities.iter_mut().find(|e| normalize_entity_name(&e.name) == key) {
            Some(existing) => {
                if existing.kind == EntityKind::Unknown {
                    existing.kind = kind;
                }
            }
            None => entities.push(ExtractedEntity { name: name.to_string(), kind }),
        }
    };
    for sentence in crate::chunk::sentences(text) {
        let sentence_facts = extraction.triples.len();
        let found = mentions(sentence, known);
        for mention in found.iter().filter(|m| !m.weak) {
            add_entity(&mut extraction.entities, &mention.name, mention.kind);
        }
        // "we …" stands for the default subject.
        let mut subjects: Vec<Mention> = found.clone();
        if let Some(subject) = default_subject {
            for m in patterns().we.find_iter(sentence) {
                if found.iter().any(|f| f.start < m.end() && m.start() < f.end) {
                    continue;
                }
                subjects.push(Mention {
                    start: m.start(),
                    end: m.end(),
                    name: subject.to_string(),
                    kind: EntityKind::Unknown,
                    weak: false,
                });
            }
            subjects.sort_by_key(|m| m.start);
        }
        for (index, subject) in subjects.iter().enumerate() {
            let Some(object) = subjects.get(index + 1) else { continue };
            if object.start < subject.end {
                continue;
            }
            let between = &sentence[subject.end..object.start];
            // Switches: "X switched [the backend] from Y to Z" / "X replaced Y with Z".
            if let Some(after) = subjects.get(index + 2).filter(|after| after.start >= object.end) {
                let link = sentence[object.end..after.start].trim().to_lowercase();
                let lead = between.trim().to_lowercase();
                let switch_verb =
                    ["switched", "moved", "migrated", "changed", "went"].iter().any(|v| lead.starts_with(v));
                if switch_verb && lead.ends_with("from") && link == "to" && !object.weak && !after.weak {
                    add_entity(&mut extraction.entities, &subject.name, EntityKind::Unknown);
                    add_entity(&mut extraction.entities, &object.name, object.kind);
                    add_entity(&mut extraction.entities, &after.name, after.kind);
                    extraction.triples.push(ExtractedTriple {
                        subject: subject.name.clone(),
                        predicate: "uses".into(),
                        object: after.name.clone(),
                        replaces: Some(object.name.clone()),
                    });
                    continue;
                }
                if lead == "replaced" && link == "with" && !object.weak && !after.weak {
                    add_entity(&mut extraction.entities, &subject.name, EntityKind::Unknown);
                    add_entity(&mut extraction.entities, &object.name, object.kind);
                    add_entity(&mut extraction.entities, &after.name, after.kind);
                    extraction.triples.push(ExtractedTriple {
                        subject: subject.name.clone(),
                        predicate: "uses".into(),
                        object: after.name.clone(),
                        replaces: Some(object.name.clone()),
                    });
                    continue;
                }
            }
            if object.weak {
                continue;
            }
            // "X is Y's manager".
            if between.trim().eq_ignore_ascii_case("is") {
                let rest = sentence[object.end..].trim_start();
                if rest.starts_with("'s manager") || rest.starts_with("’s manager") {
                    add_entity(&mut extraction.entities, &subject.name, EntityKind::Person);
                    add_entity(&mut extraction.entities, &object.name, EntityKind::Person);
                    extraction.triples.push(ExtractedTriple {
                        subject: subject.name.clone(),
                        predicate: "manages".into(),
                        object: object.name.clone(),
                        replaces: None,
                    });
                    continue;
                }
            }
            // "Y's manager is X".
            let tail = between.trim().to_lowercase();
            if tail == "'s manager is" || tail == "’s manager is" {
                add_entity(&mut extraction.entities, &subject.name, EntityKind::Person);
                add_entity(&mut extraction.entities, &object.name, EntityKind::Person);
                extraction.triples.push(ExtractedTriple {
                    subject: object.name.clone(),
                    predicate: "manages".into(),
                    object: subject.name.clone(),
                    replaces: None,
                });
                continue;
            }
            // "X owns A and maintains B": the second verb keeps X as subject.
            let (subject_name, predicate) =
                match connector(between) {
                    Some(predicate) => (subject.name.clone(), Some(predicate)),
                    None => match between.trim().strip_prefix("and ").and_then(connector) {
                        Some(predicate) => match extraction.triples.iter().rev().find(|t| {
                            sentence.contains(t.subject.as_str()) || default_subject == Some(t.subject.as_str())
                        }) {
                            Some(previous) => (previous.subject.clone(), Some(predicate)),
                            None => (subject.name.clone(), None),
                        },
                        None => (subject.name.clone(), None),
                    },
                };
            // Preferences are read as phrases below ("prefers the Android build").
            if let Some(predicate) = predicate.filter(|p| *p != "prefers") {
                let subject = Mention { name: subject_name, ..subject.clone() };
                add_entity(&mut extraction.entities, &subject.name, subject_kind(predicate));
                let object_kind = if predicate == "works_at" { EntityKind::Organization } else { object.kind };
                add_entity(&mut extraction.entities, &object.name, object_kind);
                extraction.triples.push(ExtractedTriple {
                    subject: subject.name.clone(),
                    predicate: predicate.to_string(),
                    object: object.name.clone(),
                    replaces: None,
                });
            }
        }
        // "X prefers <phrase>": the object need not be a name.
        // Only people prefer: not technologies or files.
        for mention in subjects.iter().filter(|m| matches!(m.kind, EntityKind::Unknown | EntityKind::Person)) {
            let mut rest = sentence[mention.end..].trim_start();
            // "X owns A and prefers B": the preference is X's.
            let mut subject_name = mention.name.clone();
            if let Some(after_and) =
                rest.get(..4).filter(|head| head.eq_ignore_ascii_case("and ")).map(|_| rest[4..].trim_start())
            {
                match extraction.triples[sentence_facts..].last() {
                    Some(previous) => {
                        subject_name = previous.subject.clone();
                        rest = after_and;
                    }
                    None => continue,
                }
            }
            let phrase = ["prefers ", "prefer "].iter().find_map(|verb| {
                rest.get(..verb.len()).filter(|head| head.eq_ignore_ascii_case(verb)).map(|_| &rest[verb.len()..])
            });
            if let Some(object) = phrase.and_then(preference_object) {
                if extraction.triples.iter().any(|t| t.subject == subject_name && t.predicate == "prefers") {
                    continue;
                }
                add_entity(&mut extraction.entities, &subject_name, EntityKind::Person);
                add_entity(&mut extraction.entities, &object, EntityKind::Unknown);
                extraction.triples.push(ExtractedTriple {
                    subject: subject_name,
                    predicate: "prefers".into(),
                    object,
                    replaces: None,
                });
            }
        }
    }
    extraction
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    type Fact = (String, String, String, Option<String>);

    fn key(name: &str) -> String {
        normalize_entity_name(name)
    }

    /// Precision and recall on the labelled sentences (issue 5: precision ≥ 0.9).
    #[test]
    fn labelled_sentences_precision_and_recall() {
        let data: serde_json::Value =
            serde_json::from_str(include_str!("../tests/data/extraction.json")).expect("labelled data");
        let default_subject = data["default_subject"].as_str();
        let cases = data["cases"].as_array().expect("cases");
        assert!(cases.len() >= 60, "{} labelled sentences", cases.len());
        let (mut predicted_total, mut expected_total, mut correct) = (0, 0, 0);
        let mut wrong = Vec::new();
        for case in cases {
            let text = case["text"].as_str().expect("text");
            let expected: BTreeSet<Fact> = case["facts"]
                .as_array()
                .expect("facts")
                .iter()
                .map(|f| {
                    let f = f.as_array().expect("fact");
                    (
                        key(f[0].as_str().unwrap()),
                        f[1].as_str().unwrap().to_string(),
                        key(f[2].as_str().unwrap()),
                        f.get(3).map(|r| key(r.as_str().unwrap())),
                    )
                })
                .collect();
            let predicted: BTreeSet<Fact> = extract(text, &KnownNames::default(), default_subject)
                .triples
                .iter()
                .map(|t| (key(&t.subject), t.predicate.to_string(), key(&t.object), t.replaces.as_deref().map(key)))
                .collect();
            predicted_total += predicted.len();
            expected_total += expected.len();
            correct += predicted.intersection(&expected).count();
            for fact in predicted.difference(&expected) {
                wrong.push(format!("{text} → {fact:?}"));
            }
        }
        let precision = correct as f64 / predicted_total.max(1) as f64;
        let recall = correct as f64 / expected_total.max(1) as f64;
        // Reported on purpose: the issue asks for both numbers.
        #[allow(clippy::print_stderr)]
        {
            eprintln!(
                "extraction precision {precision:.3} ({correct}/{predicted_total}), recall {recall:.3} ({correct}/{expected_total})"
            );
        }
        assert!(precision >= 0.9, "precision {precision:.3}; wrong facts: {wrong:#?}");
        assert!(recall >= 0.7, "recall {recall:.3}");
    }

    proptest::proptest! {
        /// Any text, with any known names (including ones whose lowercase
        /// form changes length, like "İ"), extracts without panicking, and
        /// every fact names entities that were extracted.
        #[test]
        fn any_text_extracts_consistently(
            text in "(?s)((Alice|İlker|We|Crawbl Backend|MySQL|postgres|Bob's|İSTANBUL) (prefers|PREFERS|Prefer|uses|owns|works at|switched from|to|is|manager is|and maintains) |[A-Za-zİıßÅé0-9 .,'/:;!?\\n-]{0,12}){0,20}|\\PC{0,200}",
            known in proptest::collection::vec("[A-Za-zİı ]{1,12}", 0..4),
        ) {
            let extraction = extract(&text, &KnownNames::new(known), Some("Default Project"));
            let names: Vec<String> = extraction.entities.iter().map(|e| normalize_entity_name(&e.name)).collect();
            for fact in &extraction.triples {
                proptest::prop_assert!(names.contains(&normalize_entity_name(&fact.subject)), "{fact:?} {names:?}");
                proptest::prop_assert!(names.contains(&normalize_entity_name(&fact.object)), "{fact:?} {names:?}");
            }
        }
    }

    #[test]
    fn known_names_match_whole_words_in_any_case_with_original_offsets() {
        let known = KnownNames::new(vec!["Auth Module".into(), "İlker".into(), "x".into(), "Ada".into()]);
        assert_eq!(known.len(), 3, "one-character names are left out");
        let text = "İSTANBUL: the AUTH module, ilker and İlker; Adam is not Ada.";
        let found: Vec<(&str, &str)> = known.find(text).into_iter().map(|(s, e, name)| (&text[s..e], name)).collect();
        assert_eq!(found, vec![("AUTH module", "Auth Module"), ("İlker", "İlker"), ("Ada", "Ada")]);
    }

    #[test]
    fn entities_come_from_the_lexicon_paths_known_names_and_capitals() {
        let extraction = extract(
            "We keep notes in docs/design.md about postgres and the Lab Notes project with Zed.",
            &KnownNames::new(vec!["zed".to_string()]),
            None,
        );
        let names: Vec<&str> = extraction.entities.iter().map(|e| e.name.as_str()).collect();
        assert!(names.contains(&"PostgreSQL"), "{names:?}");
        assert!(names.contains(&"docs/design.md"), "{names:?}");
        assert!(names.contains(&"Lab Notes"), "{names:?}");
        assert!(names.contains(&"zed"), "{names:?}");
        assert!(!names.contains(&"We"), "{names:?}");
        let kinds: Vec<EntityKind> = extraction.entities.iter().map(|e| e.kind).collect();
        assert!(kinds.contains(&EntityKind::Technology) && kinds.contains(&EntityKind::File));
    }
}
