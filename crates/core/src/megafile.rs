//! Splitting a "mega-file" — a plain-text transcript holding several
//! Claude Code sessions one after another — into one text per session,
//! as the Python MemPalace's `split_mega_files.py` does, so each session
//! can be mined as a conversation of its own.
//!
//! A session starts at a line containing `Claude Code v` unless one of that
//! line and the five after it mentions `Ctrl+E` or `previous messages`
//! (a context restore inside a session, not a new one). Each session is
//! named `SOURCE_DATE_TIME_PEOPLE_SUBJECT.txt` from its first `⏺` timestamp,
//! the known people it mentions and its first real prompt (`> …`), with
//! the Python file-name rules. Fragments of fewer than ten lines are left
//! out; lines before the first session start belong to the first session
//! (Python drops them), so the parts hold the whole file.
//!
//! Pure: the binary lists the folder, reads the files, loads the known
//! names (`~/.mempalace/known_names.json`), writes the parts and renames
//! the original.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

/// Fragments shorter than this many lines are not written.
pub const MIN_SESSION_LINES: usize = 10;

/// People to look for (`known_names.json`: a list of names, or
/// `{"names": [...], "username_map": {"jdoe": "John"}}`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KnownNames {
    /// Names matched as whole words, case-insensitively.
    pub names: Vec<String>,
    /// A `/Users/NAME/` path in the session maps NAME to a person.
    pub username_map: BTreeMap<String, String>,
}

/// One session cut out of a mega-file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Its 1-based position among the file's session starts.
    pub index: usize,
    /// How many session starts the file has.
    pub of: usize,
    /// The file name to write it under.
    pub name: String,
    /// Its text, verbatim.
    pub text: String,
    /// Its number of lines.
    pub lines: usize,
}

static TIMESTAMP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"⏺\s+(\d{1,2}:\d{2}\s+[AP]M)\s+\w+,\s+(\w+)\s+(\d{1,2}),\s+(\d{4})").expect("valid pattern")
});
static SHELL_PROMPT: LazyLock<Regex> = LazyLock::new(|| {
    // `./activate` keeps Python's unescaped dot (any character).
    Regex::new(r"^(\./|cd |ls |python|bash|git |cat |source |export |claude|./activate)").expect("valid pattern")
});
static NOT_SUBJECT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[^\w\s-]").expect("valid pattern"));
static SPACES: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\s+").expect("valid pattern"));
static NOT_STEM: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[^\w-]").expect("valid pattern"));
static NOT_NAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[^\w.\-]").expect("valid pattern"));
static UNDERSCORES: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"_+").expect("valid pattern"));
static USERNAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"/Users/(\w+)/").expect("valid pattern"));

/// The lines of a text with their line ends (`\n`, `\r\n` or `\r`).
pub fn lines_of(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut lines = Vec::new();
    let mut start = 0;
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'\n' => {
                lines.push(&text[start..=index]);
                start = index + 1;
            }
            b'\r' => {
                let end = if bytes.get(index + 1) == Some(&b'\n') { index + 1 } else { index };
                lines.push(&text[start..=end]);
                index = end;
                start = end + 1;
            }
            _ => {}
        }
        index += 1;
    }
    if start < text.len() {
        lines.push(&text[start..]);
    }
    lines
}

/// Indexes of the lines where a new session starts.
pub fn session_starts(lines: &[&str]) -> Vec<usize> {
    lines
        .iter()
        .enumerate()
        .filter(|(index, line)| {
            line.contains("Claude Code v") && {
                let nearby: String = lines[*index..(*index + 6).min(lines.len())].concat();
                !nearby.contains("Ctrl+E") && !nearby.contains("previous messages")
            }
        })
        .map(|(index, _)| index)
        .collect()
}

/// The sessions of a mega-file whose name without extension is `stem`;
/// empty when it holds fewer than two.
pub fn split(stem: &str, text: &str, known: &KnownNames) -> Vec<Session> {
    let lines = lines_of(text);
    let mut starts = session_starts(&lines);
    if starts.len() < 2 {
        return Vec::new();
    }
    let of = starts.len();
    starts.push(lines.len());
    let source = NOT_STEM.replace_all(stem, "_").chars().take(40).collect::<String>();
    let mut sessions = Vec::new();
    for (position, window) in starts.windows(2).enumerate() {
        // Lines before the first start (a banner's top border) stay with the
        // first session; Python drops them.
        let begin = if position == 0 { 0 } else { window[0] };
        let chunk = &lines[begin..window[1]];
        if chunk.len() < MIN_SESSION_LINES {
            continue;
        }
        let time = timestamp(chunk).unwrap_or_else(|| format!("part{:02}", position + 1));
        let people = people(chunk, known);
        let people = if people.is_empty() { "unknown".to_string() } else { people[..people.len().min(3)].join("-") };
        let name = format!("{source}__{time}_{people}_{}.txt", subject(chunk));
        let name = NOT_NAME.replace_all(&name, "_");
        let name = UNDERSCORES.replace_all(&name, "_").into_owned();
        sessions.push(Session { index: position + 1, of, name, text: chunk.concat(), lines: chunk.len() });
    }
    sessions
}

/// `YYYY-MM-DD_HMMAM` from the first `⏺ 9:41 AM Monday, March 30, 2026`
/// line among the first 50.
fn timestamp(lines: &[&str]) -> Option<String> {
    const MONTHS: [&str; 12] = [
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
    ];
    lines.iter().take(50).find_map(|line| {
        let found = TIMESTAMP.captures(line)?;
        let month = MONTHS.iter().position(|m| *m == &found[2]).map_or("00".to_string(), |i| format!("{:02}", i + 1));
        let day = format!("{:0>2}", &found[3]);
        let time = found[1].replace([':', ' '], "");
        Some(format!("{}-{month}-{day}_{time}", &found[4]))
    })
}

/// Known people named in the first 100 lines (whole words, any case), and
/// the person a `/Users/NAME/` path maps to; sorted.
fn people(lines: &[&str], known: &KnownNames) -> Vec<String> {
    let text: String = lines.iter().take(100).copied().collect();
    let mut found: Vec<String> = known
        .names
        .iter()
        .filter(|name| !name.is_empty())
        .filter(|name| {
            Regex::new(&format!(r"(?i)\b{}\b", regex::escape(name))).is_ok_and(|pattern| pattern.is_match(&text))
        })
        .cloned()
        .collect();
    if let Some(user) = USERNAME.captures(&text)
        && let Some(person) = known.username_map.get(&user[1])
    {
        found.push(person.clone());
    }
    found.sort();
    found.dedup();
    found
}

/// The first prompt (`> …`) that is not a shell command and is longer than
/// five characters, reduced to a file-name-safe slug of at most 60
/// characters; else `session`.
fn subject(lines: &[&str]) -> String {
    for line in lines {
        let Some(prompt) = line.strip_prefix("> ") else { continue };
        let prompt = prompt.trim();
        if !prompt.is_empty() && !SHELL_PROMPT.is_match(prompt) && prompt.chars().count() > 5 {
            let cleaned = NOT_SUBJECT.replace_all(prompt, "");
            let slug = SPACES.replace_all(cleaned.trim(), "-");
            return slug.chars().take(60).collect();
        }
    }
    "session".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn session(version: &str, stamp: &str, prompt: &str, filler: usize) -> String {
        let mut text = format!("╭───╮\n│ ✻ Welcome to Claude Code v{version} │\n╰───╯\n\n> {prompt}\n\n{stamp}\n");
        for i in 0..filler {
            text.push_str(&format!("line {i} of the conversation with Alice in /Users/jdoe/dev\n"));
        }
        text
    }

    #[test]
    fn sessions_are_cut_at_true_starts_and_named_like_python() {
        let known = KnownNames {
            names: vec!["Alice".into(), "Bob".into()],
            username_map: [("jdoe".to_string(), "John".to_string())].into(),
        };
        let restore = "Claude Code v1.0.3\n  ⎿ Ctrl+E to show 12 previous messages\n";
        let text = format!(
            "{}{restore}{}",
            session("1.0.1", "⏺ 9:41 AM Monday, March 30, 2026", "Fix the login bug, please!", 12),
            session("1.0.2", "no timestamp here", "cd project", 12),
        );
        let parts = split("my mega.file", &text, &known);
        assert_eq!(parts.len(), 2, "{parts:?}");
        assert_eq!(parts[0].name, "my_mega_file_2026-03-30_941AM_Alice-John_Fix-the-login-bug-please.txt");
        assert_eq!(parts[1].name, "my_mega_file_part02_Alice-John_session.txt");
        assert!(parts[0].text.contains("Ctrl+E"), "a context restore stays inside its session");
        assert_eq!(parts.iter().map(|p| p.text.as_str()).collect::<String>(), text, "nothing is lost");
        assert_eq!((parts[0].index, parts[0].of), (1, 2));
    }

    #[test]
    fn one_session_is_not_a_mega_file_and_short_fragments_are_dropped() {
        let one = session("1.0.1", "", "hello there friend", 12);
        assert!(split("a", &one, &KnownNames::default()).is_empty());
        let with_stub = format!("{}Claude Code v2\n{one}", one);
        let parts = split("a", &with_stub, &KnownNames::default());
        assert_eq!(parts.len(), 2, "the one-line fragment is dropped");
        assert_eq!(parts[1].index, 3);
    }

    #[test]
    fn lines_keep_their_ends() {
        assert_eq!(lines_of("a\nb\r\nc\rd"), ["a\n", "b\r\n", "c\r", "d"]);
        assert!(lines_of("").is_empty());
    }

    proptest! {
        #[test]
        fn splitting_never_panics_and_loses_only_short_fragments(text in "(Claude Code v1\n|> [a-z ]{0,12}\n|x\n|Ctrl\\+E\n|⏺ 1:00 PM Mon, May 1, 2020\n){0,60}") {
            let parts = split("s", &text, &KnownNames::default());
            let kept: usize = parts.iter().map(|p| p.lines).sum();
            prop_assert!(kept <= lines_of(&text).len());
            for part in &parts {
                prop_assert!(text.contains(&part.text));
                prop_assert!(part.lines >= MIN_SESSION_LINES);
                prop_assert!(!part.name.contains('/'));
            }
        }
    }
}
