//! Room sets: a closed list of rooms proposed for one wing, reviewed by a
//! person, then applied by moving drawers to their nearest room (`mempalace
//! rooms propose|apply`). The file format is the Python MemPalace's
//! (`<palace>/rooms/<wing>.json`, schema 1), so a set written by either
//! side can be edited and applied by the other.
//!
//! The Python MemPalace asks an LLM to read a sample and name the rooms.
//! There is no LLM here, so [`propose`] is deterministic: the wing's
//! existing purposeful rooms (anything but the miner's generic fall-backs)
//! are kept, and new rooms are cut from the drawers of the generic rooms by
//! a greedy cover over their most telling shared words — the word that
//! occurs in the most not-yet-covered drawers becomes a room (if it is in
//! at least three of them and in at most half of all), until the room limit.
//! It names topics, not intentions, and a person should read the set
//! before applying it.
//!
//! Not here: reading drawers, embeddings and the decision by cosine (the
//! engine), the file itself (the binary).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::aaak::STOP_WORDS;
use crate::error::ValidationError;
use crate::name::Room;

/// The room-set file's schema version.
pub const SCHEMA_VERSION: u32 = 1;
/// Rooms the transcript miner falls back to; `apply` only moves drawers out
/// of these unless told otherwise.
pub const GENERIC_ROOMS: &[&str] = &["general", "technical", "architecture", "planning", "problems"];
/// Default upper bound on proposed rooms (Python's `--max-rooms`).
pub const DEFAULT_MAX_ROOMS: usize = 12;
/// Default cosine a drawer needs to move (Python's `--threshold`).
pub const DEFAULT_THRESHOLD: f32 = 0.30;
/// Drawer ids kept per room as exemplars (their vectors make the room's prototype).
pub const EXEMPLARS_PER_ROOM: usize = 20;

/// Words too common in transcripts and notes to name a room.
const NOISE_WORDS: &[&str] = &[
    "user",
    "assistant",
    "tool",
    "tools",
    "result",
    "results",
    "file",
    "files",
    "line",
    "lines",
    "code",
    "would",
    "could",
    "should",
    "there",
    "their",
    "what",
    "which",
    "this",
    "that",
    "with",
    "have",
    "from",
    "into",
    "will",
    "been",
    "were",
    "when",
    "then",
    "than",
    "them",
    "they",
    "some",
    "more",
    "most",
    "other",
    "here",
    "only",
    "very",
    "need",
    "want",
    "make",
    "using",
    "used",
    "true",
    "false",
    "none",
    "null",
    "just",
    "also",
    "does",
    "done",
    "okay",
    "yes",
    "please",
    "thanks",
    "thank",
    "sure",
    "let",
    "lets",
    "now",
    "see",
    "look",
    "think",
    "know",
    "going",
    "can",
    "cannot",
    "don",
    "didn",
    "doesn",
    "isn",
    "wasn",
    "aren",
    "won",
    "still",
    "each",
    "after",
    "before",
    "about",
    "because",
    "where",
    "while",
    "your",
    "ours",
    "mine",
    "first",
    "next",
    "last",
    "same",
    "new",
    "old",
    "good",
    "right",
    "work",
    "working",
    "works",
    "like",
    "time",
    "thing",
    "things",
    "something",
    "anything",
    "everything",
    "nothing",
    "over",
    "under",
    "again",
    "back",
    "well",
    "much",
    "many",
    "such",
    "both",
    "either",
    "these",
    "those",
    "onto",
    "upon",
    "said",
    "says",
    "tell",
    "told",
    "call",
    "called",
    "read",
    "write",
    "find",
    "found",
    "check",
    "checked",
    "added",
    "change",
    "changes",
    "changed",
    "update",
    "updated",
    "made",
];

/// One room of a set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomSpec {
    /// The room's name (a valid room name).
    pub name: String,
    /// What belongs in it.
    #[serde(default)]
    pub description: String,
    /// Words that characterise it.
    #[serde(default)]
    pub keywords: Vec<String>,
    /// Drawers that belong in it; their vectors' centroid is the room's prototype.
    #[serde(default)]
    pub exemplars: Vec<String>,
}

impl RoomSpec {
    /// The text embedded for a room without exemplar vectors.
    pub fn prototype_text(&self) -> String {
        let name = self.name.replace('-', " ");
        let keywords = self.keywords.join(", ");
        [name.as_str(), self.description.as_str(), keywords.as_str()]
            .into_iter()
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join(". ")
    }
}

/// A closed set of rooms for one wing (the file's content).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoomSet {
    /// [`SCHEMA_VERSION`].
    #[serde(default = "schema_version")]
    pub schema_version: u32,
    /// The wing.
    pub wing: String,
    /// Who proposed it (`mempalace-rs keywords`, or the Python side's model).
    #[serde(default)]
    pub proposed_by: String,
    /// When (RFC 3339).
    #[serde(default)]
    pub proposed_at: String,
    /// Drawers read for the proposal.
    #[serde(default)]
    pub sample_size: u64,
    /// The rooms.
    pub rooms: Vec<RoomSpec>,
}

fn schema_version() -> u32 {
    SCHEMA_VERSION
}

impl RoomSet {
    /// Reads a set file's text and checks it: at least one room, every name
    /// a valid room name, no name twice, and it is the set of `wing`.
    pub fn parse(text: &str, wing: &str) -> Result<Self, ValidationError> {
        let invalid = |reason: String| ValidationError::BadName { what: "room set", value: wing.to_string(), reason };
        let set: RoomSet =
            serde_json::from_str(text).map_err(|error| invalid(format!("its file is not a room set ({error})")))?;
        if set.wing != wing {
            return Err(invalid(format!("its file is for wing {:?}; propose a set for this wing", set.wing)));
        }
        if set.rooms.is_empty() {
            return Err(invalid("its file lists no rooms".into()));
        }
        let mut seen = BTreeSet::new();
        for room in &set.rooms {
            Room::parse(&room.name)?;
            if !seen.insert(room.name.as_str()) {
                return Err(invalid(format!("its file lists room {:?} twice", room.name)));
            }
        }
        Ok(set)
    }

    /// The room names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.rooms.iter().map(|room| room.name.as_str()).collect()
    }
}

/// `Release Process` → `release-process` (Python's `slugify_room`): lower
/// case, runs of anything but letters, digits and dots become `-`, at most
/// 60 characters.
pub fn slugify(name: &str) -> String {
    let lowered = name.trim().to_lowercase();
    let mut slug = String::new();
    let mut dash = false;
    for c in lowered.chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' {
            if dash && !slug.is_empty() {
                slug.push('-');
            }
            dash = false;
            if c == '.' && slug.ends_with('.') {
                continue;
            }
            slug.push(c);
        } else {
            dash = true;
        }
    }
    slug.trim_matches(|c| c == '-' || c == '.').chars().take(60).collect::<String>().trim_end_matches(['-', '.']).into()
}

/// `n` of `ids` chosen by `seed`, deterministically (each id ranked by
/// `sha256(seed:id)`), in their original order; all of them when `n` is 0
/// or at least their number.
pub fn sample(ids: &[String], n: usize, seed: u64) -> Vec<usize> {
    if n == 0 || n >= ids.len() {
        return (0..ids.len()).collect();
    }
    let mut ranked: Vec<(String, usize)> = ids
        .iter()
        .enumerate()
        .map(|(index, id)| (hex::encode(Sha256::digest(format!("{seed}:{id}").as_bytes())), index))
        .collect();
    ranked.sort();
    let mut chosen: Vec<usize> = ranked.into_iter().take(n).map(|(_, index)| index).collect();
    chosen.sort_unstable();
    chosen
}

/// One drawer as the proposal sees it.
#[derive(Debug, Clone, Copy)]
pub struct Sample<'a> {
    /// Its id.
    pub id: &'a str,
    /// Its room now.
    pub room: &'a str,
    /// Its text.
    pub text: &'a str,
}

/// Telling words of a text with how often each occurs: lowercase runs of
/// letters, digits, `_` and `-` starting with a letter, at least four
/// characters, not a stop or noise word.
fn words(text: &str) -> BTreeMap<String, usize> {
    let mut found = BTreeMap::new();
    let mut current = String::new();
    let flush = |current: &mut String, found: &mut BTreeMap<String, usize>| {
        let word = current.trim_end_matches(['-', '_']);
        if word.chars().count() >= 4
            && word.chars().next().is_some_and(|c| c.is_alphabetic())
            && !STOP_WORDS.contains(&word)
            && !NOISE_WORDS.contains(&word)
            && !GENERIC_ROOMS.contains(&word)
        {
            *found.entry(word.to_string()).or_insert(0) += 1;
        }
        current.clear();
    };
    for c in text.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() || ((c == '_' || c == '-') && !current.is_empty()) {
            current.push(c);
        } else {
            flush(&mut current, &mut found);
        }
    }
    flush(&mut current, &mut found);
    found
}

/// The most frequent words among some drawers' word sets, most first
/// (ties alphabetical), leaving out `skip`.
fn top_words(sets: &[&BTreeMap<String, usize>], skip: &BTreeSet<&str>, n: usize) -> Vec<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for set in sets {
        for word in set.keys() {
            if !skip.contains(word.as_str()) {
                *counts.entry(word.as_str()).or_default() += 1;
            }
        }
    }
    let mut ranked: Vec<(&str, usize)> = counts.into_iter().filter(|(_, count)| *count >= 2).collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ranked.into_iter().take(n).map(|(word, _)| word.to_string()).collect()
}

/// Proposes a closed room set for `wing` from its drawers (see the module
/// doc): the existing non-generic rooms, then up to `max_rooms` keyword
/// rooms for the drawers of generic rooms. Deterministic.
pub fn propose(wing: &str, drawers: &[Sample<'_>], max_rooms: usize, proposed_at: &str) -> RoomSet {
    let word_sets: Vec<BTreeMap<String, usize>> = drawers.iter().map(|d| words(d.text)).collect();
    let mut rooms: Vec<RoomSpec> = Vec::new();
    let mut existing: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, drawer) in drawers.iter().enumerate() {
        if !GENERIC_ROOMS.contains(&drawer.room) {
            existing.entry(drawer.room).or_default().push(index);
        }
    }
    for (room, members) in &existing {
        let sets: Vec<&BTreeMap<String, usize>> = members.iter().map(|&i| &word_sets[i]).collect();
        rooms.push(RoomSpec {
            name: room.to_string(),
            description: format!("the existing room {room} ({} drawers)", members.len()),
            keywords: top_words(&sets, &BTreeSet::new(), 5),
            exemplars: members.iter().take(EXEMPLARS_PER_ROOM).map(|&i| drawers[i].id.to_string()).collect(),
        });
    }

    let generic: Vec<usize> = (0..drawers.len()).filter(|&i| GENERIC_ROOMS.contains(&drawers[i].room)).collect();
    let total = generic.len();
    let min_cover = 3.max(total / 50);
    // A word in more than half the drawers describes the wing, not a room.
    let max_share = (total / 2).max(min_cover);
    let mut document_frequency: BTreeMap<&str, usize> = BTreeMap::new();
    let mut occurrences: BTreeMap<&str, usize> = BTreeMap::new();
    for &i in &generic {
        for (word, count) in &word_sets[i] {
            *document_frequency.entry(word.as_str()).or_default() += 1;
            *occurrences.entry(word.as_str()).or_default() += count;
        }
    }
    let taken: BTreeSet<String> = rooms.iter().map(|room| room.name.clone()).collect();
    let mut candidates: Vec<&str> = document_frequency
        .iter()
        .filter(|(word, count)| **count >= min_cover && **count <= max_share && !taken.contains(&slugify(word)))
        .map(|(word, _)| *word)
        .collect();
    let mut covered = vec![false; drawers.len()];
    let mut proposed = 0;
    while proposed < max_rooms && !candidates.is_empty() {
        // The word in the most uncovered drawers; ties by how often it
        // occurs in all of them, then by name.
        let mut best: Option<(usize, usize, &str)> = None;
        for &word in &candidates {
            let uncovered = generic.iter().filter(|&&i| !covered[i] && word_sets[i].contains_key(word)).count();
            let key = (uncovered, occurrences[word], word);
            if best.is_none_or(|b| (key.0, key.1) > (b.0, b.1) || ((key.0, key.1) == (b.0, b.1) && key.2 < b.2)) {
                best = Some(key);
            }
        }
        let Some((uncovered, _, word)) = best else { break };
        if uncovered < min_cover {
            break;
        }
        candidates.retain(|candidate| *candidate != word);
        let name = slugify(word);
        if name.is_empty() || Room::parse(&name).is_err() || rooms.iter().any(|room| room.name == name) {
            continue;
        }
        let members: Vec<usize> =
            generic.iter().copied().filter(|&i| !covered[i] && word_sets[i].contains_key(word)).collect();
        for &i in &members {
            covered[i] = true;
        }
        let sets: Vec<&BTreeMap<String, usize>> = members.iter().map(|&i| &word_sets[i]).collect();
        let also = top_words(&sets, &BTreeSet::from([word]), 3);
        let description = if also.is_empty() {
            format!("drawers about {word}")
        } else {
            format!("drawers about {word} (often with {})", also.join(", "))
        };
        let mut keywords = vec![word.to_string()];
        keywords.extend(also);
        rooms.push(RoomSpec {
            name,
            description,
            keywords,
            exemplars: members.iter().take(EXEMPLARS_PER_ROOM).map(|&i| drawers[i].id.to_string()).collect(),
        });
        proposed += 1;
    }
    RoomSet {
        schema_version: SCHEMA_VERSION,
        wing: wing.to_string(),
        proposed_by: "mempalace-rs keywords (no LLM)".to_string(),
        proposed_at: proposed_at.to_string(),
        sample_size: drawers.len() as u64,
        rooms,
    }
}

/// The room whose prototype is nearest to `vector` by cosine, and that
/// cosine (at least 0); `None` without prototypes.
pub fn nearest_room<'a>(vector: &[f32], prototypes: &'a [(String, Vec<f32>)]) -> Option<(&'a str, f32)> {
    let mut best: Option<(&str, f32)> = None;
    for (name, prototype) in prototypes {
        let similarity = crate::vector::cosine(vector, prototype);
        if best.is_none_or(|(_, top)| similarity > top) {
            best = Some((name.as_str(), similarity));
        }
    }
    best.map(|(name, similarity)| (name, similarity.max(0.0)))
}

/// The mean of some vectors of one length; `None` when there are none.
pub fn centroid(vectors: &[&[f32]]) -> Option<Vec<f32>> {
    let first = vectors.first()?;
    let mut sum = vec![0.0_f32; first.len()];
    let mut n = 0_usize;
    for vector in vectors.iter().filter(|v| v.len() == first.len()) {
        for (total, value) in sum.iter_mut().zip(vector.iter()) {
            *total += value;
        }
        n += 1;
    }
    Some(sum.into_iter().map(|total| total / n as f32).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_the_python_rule() {
        assert_eq!(slugify("Release Process"), "release-process");
        assert_eq!(slugify("  release 3.6.0 "), "release-3.6.0");
        assert_eq!(slugify("..a...b--"), "a.b");
        assert_eq!(slugify("Ünïcode & stuff"), "n-code-stuff");
        assert!(slugify(&"x".repeat(80)).len() == 60);
    }

    #[test]
    fn a_proposal_keeps_purposeful_rooms_and_covers_generic_drawers_by_shared_words() {
        let mut texts: Vec<(String, &str, String)> = Vec::new();
        for i in 0..6 {
            texts.push((
                format!("k{i}"),
                "technical",
                format!("kubernetes pod {i} crashed; the kubernetes deployment restarted"),
            ));
            texts.push((
                format!("b{i}"),
                "general",
                format!("invoice {i} sent to the billing provider, billing retried"),
            ));
        }
        texts.push(("d0".into(), "decisions", "We chose Postgres for billing".into()));
        texts.push(("x0".into(), "general", "random unrelated musing".into()));
        let samples: Vec<Sample<'_>> = texts.iter().map(|(id, room, text)| Sample { id, room, text }).collect();
        let set = propose("ops", &samples, 12, "2026-01-01T00:00:00Z");
        let names = set.names();
        assert_eq!(names[0], "decisions", "existing purposeful rooms come first: {names:?}");
        assert!(names.contains(&"kubernetes") && names.contains(&"billing"), "{names:?}");
        assert!(!names.iter().any(|n| GENERIC_ROOMS.contains(n)), "{names:?}");
        let kube = set.rooms.iter().find(|r| r.name == "kubernetes").unwrap();
        assert_eq!(kube.exemplars.len(), 6);
        assert!(kube.exemplars.iter().all(|id| id.starts_with('k')));
        assert_eq!(propose("ops", &samples, 12, "2026-01-01T00:00:00Z"), set, "deterministic");
        assert_eq!(propose("ops", &samples, 1, "t").rooms.len(), 2, "max_rooms bounds the new rooms only");
    }

    #[test]
    fn sets_round_trip_and_bad_files_are_refused_with_a_reason() {
        let set = RoomSet {
            schema_version: 1,
            wing: "w".into(),
            proposed_by: "x".into(),
            proposed_at: "t".into(),
            sample_size: 1,
            rooms: vec![RoomSpec { name: "a".into(), description: "d".into(), keywords: vec![], exemplars: vec![] }],
        };
        let text = serde_json::to_string(&set).unwrap();
        assert_eq!(RoomSet::parse(&text, "w").unwrap(), set);
        assert!(RoomSet::parse(&text, "other").unwrap_err().to_string().contains("for wing"));
        assert!(RoomSet::parse(r#"{"wing": "w", "rooms": []}"#, "w").is_err());
        assert!(RoomSet::parse(r#"{"wing": "w", "rooms": [{"name": "a"}, {"name": "a"}]}"#, "w").is_err());
        assert!(RoomSet::parse(r#"{"wing": "w", "rooms": [{"name": "a/b"}]}"#, "w").is_err());
        // Python's own file (extra keys are kept out of the way, defaults filled in).
        let python = r#"{"schema_version": 1, "wing": "w", "rooms": [{"name": "auth", "description": "login"}]}"#;
        assert_eq!(RoomSet::parse(python, "w").unwrap().rooms[0].prototype_text(), "auth. login");
    }

    #[test]
    fn samples_are_seeded_subsets_in_order() {
        let ids: Vec<String> = (0..10).map(|i| format!("id{i}")).collect();
        let chosen = sample(&ids, 4, 0);
        assert_eq!(chosen.len(), 4);
        assert!(chosen.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(sample(&ids, 4, 0), chosen);
        assert_ne!(sample(&ids, 4, 1), chosen);
        assert_eq!(sample(&ids, 0, 0).len(), 10);
    }

    #[test]
    fn the_nearest_room_is_the_highest_cosine() {
        let prototypes = vec![("a".to_string(), vec![1.0, 0.0]), ("b".to_string(), vec![0.0, 1.0])];
        assert_eq!(nearest_room(&[0.2, 0.9], &prototypes).unwrap().0, "b");
        assert_eq!(nearest_room(&[-1.0, 0.0], &prototypes).unwrap().1, 0.0);
        assert!(nearest_room(&[1.0], &[]).is_none());
        assert_eq!(centroid(&[&[1.0, 0.0], &[0.0, 1.0]]).unwrap(), vec![0.5, 0.5]);
    }
}
