//! Entity dedup without a model (seed 2 `dedup_worker`, issue 18): when two
//! entity names stand for one thing, and how the duplicates of a graph
//! group.
//!
//! Three deterministic rules say "the same": the names differ only in case,
//! spacing or punctuation ("Postgre SQL", "postgresql"); one is the other
//! plus a generic suffix ("postgres db", "Node.js", "Acme Inc"); or both
//! are spellings of one thing in the small [`ABBREVIATIONS`] table
//! ("Postgres"/"PostgreSQL", "k8s"/"Kubernetes"). A name that merely
//! *contains* another ("Crawbl" and "Crawbl Backend", "Python" and
//! "Python 3") or differs from it by one letter ("Kubernets") is
//! ambiguous: flagged for review, never merged. Anything else is distinct —
//! "Java" and "JavaScript" share a prefix, not a meaning.
//!
//! Only names and rules live here; which entity is kept (the canonical
//! one) and the stored merge belong to the engine and the store.

use std::collections::{BTreeMap, HashMap};

/// Trailing words that name the kind of a thing rather than the thing:
/// "postgres db" is Postgres, "Acme Inc" is Acme. Compared after
/// [`name_key`]'s folding, as whole words.
pub const GENERIC_SUFFIXES: &[&str] = &[
    "db",
    "database",
    "server",
    "inc",
    "corp",
    "ltd",
    "llc",
    "gmbh",
    "lib",
    "library",
    "js",
    "lang",
    "language",
    "framework",
];

/// Suffixes also recognised glued to a one-word name ("NodeJS", "MongoDB"):
/// only these two, whose glued forms are common and unambiguous.
const GLUED_SUFFIXES: &[&str] = &["js", "db"];

/// Spellings of one thing, canonical key first (keys as [`name_key`] folds
/// them). Kept short on purpose: each row is a claim that the names never
/// mean different things in a developer's notes.
pub const ABBREVIATIONS: &[&[&str]] = &[
    &["postgresql", "postgres", "postgre"],
    &["kubernetes", "k8s", "kube"],
    &["javascript", "js", "ecmascript"],
    &["typescript", "ts"],
    &["golang", "go"],
    &["mongodb", "mongo"],
    &["amazonwebservices", "aws"],
    &["googlecloudplatform", "gcp", "googlecloud"],
    &["microsoftsqlserver", "mssql", "sqlserver"],
    &["elasticsearch", "elastic"],
    &["rabbitmq", "rabbit"],
    &["csharp", "c#"],
];

/// How two names relate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameMatch {
    /// One thing: merge. The reason names the rule.
    Same(&'static str),
    /// Maybe one thing: flag for review, never merge.
    Ambiguous(&'static str),
    /// Different things.
    Distinct,
}

/// The words of a name: lowercase letters and digits, with `+` read as
/// "plus" and `#` as "sharp" so "C++", "C#" and "C" stay apart; every
/// other character separates words.
pub fn name_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut current = String::new();
    for c in name.chars() {
        if c.is_alphanumeric() {
            current.extend(c.to_lowercase());
        } else if c == '+' {
            current.push_str("plus");
        } else if c == '#' {
            current.push_str("sharp");
        } else if !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// A name folded for comparison: its words joined with nothing, so case,
/// spacing and punctuation differences vanish ("Postgre-SQL" →
/// "postgresql").
pub fn name_key(name: &str) -> String {
    name_words(name).concat()
}

/// The words without trailing generic suffixes (never all of them), and
/// without a glued `js`/`db` on a one-word name of at least 3 more letters.
fn core_words(name: &str) -> Vec<String> {
    let mut words = name_words(name);
    while words.len() > 1 && words.last().is_some_and(|w| GENERIC_SUFFIXES.contains(&w.as_str())) {
        words.pop();
    }
    if words.len() == 1 {
        let word = &words[0];
        for suffix in GLUED_SUFFIXES {
            if let Some(stem) = word.strip_suffix(suffix)
                && stem.chars().count() >= 3
                && stem.chars().all(char::is_alphabetic)
            {
                words[0] = stem.to_string();
                break;
            }
        }
    }
    words
}

/// The key of a name's abbreviation row, if it is in [`ABBREVIATIONS`].
fn abbreviation_of(key: &str) -> Option<&'static str> {
    ABBREVIATIONS.iter().find(|row| row.contains(&key)).map(|row| row[0])
}

/// The canonical form two names share when they are the same thing by
/// rule: the folded core after suffixes, mapped through the abbreviation
/// table. Equal forms mean [`NameMatch::Same`].
pub fn canonical_form(name: &str) -> String {
    let key = name_key(name);
    if let Some(row) = abbreviation_of(&key) {
        return row.to_string();
    }
    let core = core_words(name).concat();
    abbreviation_of(&core).map(str::to_string).unwrap_or(core)
}

/// Compares two entity names (see the module doc for the rules).
pub fn compare_names(a: &str, b: &str) -> NameMatch {
    let (key_a, key_b) = (name_key(a), name_key(b));
    if key_a.is_empty() || key_b.is_empty() {
        return NameMatch::Distinct;
    }
    if key_a == key_b {
        return NameMatch::Same("spelling");
    }
    if canonical_form(a) == canonical_form(b) {
        let abbreviated = [&key_a, &key_b, &core_words(a).concat(), &core_words(b).concat()]
            .iter()
            .any(|key| abbreviation_of(key).is_some());
        return NameMatch::Same(if abbreviated { "abbreviation" } else { "generic suffix" });
    }
    let (words_a, words_b) = (name_words(a), name_words(b));
    let contains = |small: &[String], large: &[String]| {
        small.len() < large.len() && large.windows(small.len()).any(|window| window == small)
    };
    if contains(&words_a, &words_b) || contains(&words_b, &words_a) {
        return NameMatch::Ambiguous("one name contains the other");
    }
    if key_a.chars().count() >= 6 && key_b.chars().count() >= 6 && one_letter_apart(&key_a, &key_b) {
        return NameMatch::Ambiguous("one letter apart");
    }
    NameMatch::Distinct
}

/// Whether two keys differ by exactly one inserted, deleted or replaced
/// letter that is not a digit ("python2"/"python3" are versions, not typos).
fn one_letter_apart(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let (short, long) = if a.len() <= b.len() { (&a, &b) } else { (&b, &a) };
    if long.len() - short.len() > 1 {
        return false;
    }
    let prefix = short.iter().zip(long.iter()).take_while(|(x, y)| x == y).count();
    if long.len() == short.len() {
        let rest_equal = short[prefix + 1..] == long[prefix + 1..];
        rest_equal && !short[prefix].is_ascii_digit() && !long[prefix].is_ascii_digit()
    } else {
        short[prefix..] == long[prefix + 1..] && !long[prefix].is_ascii_digit()
    }
}

/// What [`find_duplicates`] found among a graph's names.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Duplicates {
    /// Groups of indexes (into the input) of names that are one thing,
    /// each sorted, groups in order of their first index; singletons left out.
    pub groups: Vec<Vec<usize>>,
    /// Pairs of indexes that may be one thing, with the reason; never in
    /// one group.
    pub ambiguous: Vec<(usize, usize, &'static str)>,
}

/// Groups names that are the same thing by rule and lists ambiguous pairs.
/// Grouping joins names with the same [`name_key`] or [`canonical_form`],
/// transitively, whatever the input order; ambiguous pairs are looked for only
/// among names sharing a word or a five-letter key prefix, so a graph of
/// thousands of entities costs milliseconds.
pub fn find_duplicates(names: &[&str]) -> Duplicates {
    // Union-find over two keyings: the folded spelling and the canonical
    // form (they can disagree: "acme inc" and "acmeinc" fold alike, yet
    // only the first loses its suffix).
    let mut parent: Vec<usize> = (0..names.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut first_by_key: BTreeMap<String, usize> = BTreeMap::new();
    for (index, name) in names.iter().enumerate() {
        if name_key(name).is_empty() {
            continue;
        }
        for key in [format!("k:{}", name_key(name)), format!("f:{}", canonical_form(name))] {
            match first_by_key.get(&key) {
                Some(&first) => {
                    let (a, b) = (root(&mut parent, first), root(&mut parent, index));
                    if a != b {
                        parent[a.max(b)] = a.min(b);
                    }
                }
                None => {
                    first_by_key.insert(key, index);
                }
            }
        }
    }
    let mut members_of: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for index in 0..names.len() {
        let group = root(&mut parent, index);
        members_of.entry(group).or_default().push(index);
    }
    let mut group_of: HashMap<usize, usize> = HashMap::new();
    let groups: Vec<Vec<usize>> = members_of.into_values().filter(|members| members.len() > 1).collect();
    for (group, members) in groups.iter().enumerate() {
        for &member in members {
            group_of.insert(member, group);
        }
    }
    let mut buckets: HashMap<String, Vec<usize>> = HashMap::new();
    for (index, name) in names.iter().enumerate() {
        for word in name_words(name) {
            buckets.entry(format!("w:{word}")).or_default().push(index);
        }
        let prefix: String = name_key(name).chars().take(5).collect();
        if prefix.chars().count() == 5 {
            buckets.entry(format!("p:{prefix}")).or_default().push(index);
        }
    }
    let mut seen: std::collections::HashSet<(usize, usize)> = std::collections::HashSet::new();
    let mut ambiguous = Vec::new();
    let mut keys: Vec<&String> = buckets.keys().collect();
    keys.sort();
    for key in keys {
        let members = &buckets[key];
        if members.len() > 200 {
            // A word shared by hundreds of names ("service") says nothing.
            continue;
        }
        for (i, &a) in members.iter().enumerate() {
            for &b in &members[i + 1..] {
                let pair = (a.min(b), a.max(b));
                if pair.0 == pair.1 || !seen.insert(pair) {
                    continue;
                }
                if group_of.get(&pair.0).is_some_and(|g| group_of.get(&pair.1) == Some(g)) {
                    continue;
                }
                if let NameMatch::Ambiguous(reason) = compare_names(names[pair.0], names[pair.1]) {
                    ambiguous.push((pair.0, pair.1, reason));
                }
            }
        }
    }
    ambiguous.sort();
    Duplicates { groups, ambiguous }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn postgres_spellings_are_one_entity() {
        for (a, b) in [("Postgres", "PostgreSQL"), ("postgres db", "PostgreSQL"), ("Postgre-SQL", "postgresql")] {
            assert!(matches!(compare_names(a, b), NameMatch::Same(_)), "{a} / {b}");
        }
        let found = find_duplicates(&["Postgres", "PostgreSQL", "postgres db", "Redis"]);
        assert_eq!(found.groups, vec![vec![0, 1, 2]]);
        assert!(found.ambiguous.is_empty(), "{:?}", found.ambiguous);
    }

    #[test]
    fn abbreviations_and_suffixes_merge() {
        assert_eq!(compare_names("k8s", "Kubernetes"), NameMatch::Same("abbreviation"));
        assert_eq!(compare_names("Node.js", "Node"), NameMatch::Same("generic suffix"));
        assert_eq!(compare_names("NodeJS", "node"), NameMatch::Same("generic suffix"));
        assert_eq!(compare_names("MongoDB", "mongo"), NameMatch::Same("abbreviation"));
        assert_eq!(compare_names("Acme Inc", "ACME"), NameMatch::Same("generic suffix"));
        assert_eq!(compare_names("crawbl api", "Crawbl-API"), NameMatch::Same("spelling"));
    }

    #[test]
    fn java_and_javascript_stay_apart() {
        assert_eq!(compare_names("Java", "JavaScript"), NameMatch::Distinct);
        assert_eq!(compare_names("Java", "JS"), NameMatch::Distinct);
        assert_eq!(compare_names("C", "C++"), NameMatch::Distinct);
        assert_eq!(compare_names("C++", "C#"), NameMatch::Distinct);
        assert_eq!(compare_names("Python 2", "Python 3"), NameMatch::Distinct);
        assert_eq!(compare_names("python2", "python3"), NameMatch::Distinct);
        assert_eq!(compare_names("React", "Preact"), NameMatch::Distinct);
        let found = find_duplicates(&["Java", "JavaScript", "JS", "C", "C++", "C#"]);
        assert_eq!(found.groups, vec![vec![1, 2]], "JS is JavaScript; nothing else merges");
        assert!(found.ambiguous.is_empty(), "{:?}", found.ambiguous);
    }

    #[test]
    fn containment_and_typos_are_flagged_not_merged() {
        assert_eq!(compare_names("Crawbl", "Crawbl Backend"), NameMatch::Ambiguous("one name contains the other"));
        assert_eq!(compare_names("Python", "Python 3"), NameMatch::Ambiguous("one name contains the other"));
        assert_eq!(compare_names("Kubernets", "Kubernetes"), NameMatch::Ambiguous("one letter apart"));
        let found = find_duplicates(&["Crawbl", "Crawbl Backend", "Kubernetes", "Kubernets", "k8s"]);
        assert_eq!(found.groups, vec![vec![2, 4]]);
        assert_eq!(found.ambiguous, vec![(0, 1, "one name contains the other"), (2, 3, "one letter apart")]);
    }

    proptest! {
        #[test]
        fn comparison_is_reflexive_symmetric_and_total(a in "\\PC{0,24}", b in "\\PC{0,24}") {
            let ab = compare_names(&a, &b);
            prop_assert_eq!(&ab, &compare_names(&b, &a));
            if !name_key(&a).is_empty() {
                prop_assert!(matches!(compare_names(&a, &a), NameMatch::Same(_)));
            }
        }

        #[test]
        fn case_spacing_and_punctuation_never_separate(name in "[A-Za-z][A-Za-z0-9]{0,6}( [A-Za-z0-9]{1,6}){0,2}") {
            let shouted = name.to_uppercase();
            let dashed = name.replace(' ', "-");
            prop_assert!(matches!(compare_names(&name, &shouted), NameMatch::Same(_)));
            prop_assert!(matches!(compare_names(&name, &dashed), NameMatch::Same(_)));
        }

        #[test]
        fn groups_are_disjoint_and_never_hold_an_ambiguous_pair(names in proptest::collection::vec("[a-z]{1,6}( (db|js|inc|core|x))?", 0..12)) {
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let found = find_duplicates(&refs);
            let mut seen = std::collections::HashSet::new();
            for group in &found.groups {
                for member in group {
                    prop_assert!(seen.insert(*member));
                }
            }
            for (a, b, _) in &found.ambiguous {
                prop_assert!(!found.groups.iter().any(|g| g.contains(a) && g.contains(b)));
            }
        }
    }
}
