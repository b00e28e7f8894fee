//! What the miner remembers about a source between runs, so that an
//! unchanged file is not read again and a growing transcript is read from
//! where the last run left off.
//!
//! A [`Cursor`] is kept by the store as opaque JSON per (workspace,
//! source). Every cursor records the filing parameters (`key`), the file's
//! size and modification time, and how many drawers it gave. A file whose
//! key, size and time are unchanged is skipped without being opened; one
//! whose content hash is unchanged is not filed again.
//!
//! Line-per-record transcripts (Claude Code, Codex) also get a
//! [`TailCursor`]: the byte offset and line of the start of the last
//! exchange — the one part of the transcript that later lines can still
//! change (a reply arriving, a tool result joining it) — and the ids of
//! the drawers filed from there. The next run checks that the bytes it
//! read before are still there ([`check_digest`]), re-reads only from that
//! offset, files the new exchanges and removes the earlier drawers of the
//! re-read part that are gone. A file that shrank, was rewritten, was
//! rewound to an earlier prompt, or gained a title is read whole again.
//!
//! Pure: the caller reads the bytes.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Bytes at the head of a file, and before the resume offset, whose hash
/// tells an appended file from a rewritten one.
pub const WINDOW: u64 = 4096;

/// The cursor format this build writes; others are ignored (read whole).
pub const VERSION: u32 = 1;

/// What the miner keeps about one source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    /// [`VERSION`].
    pub v: u32,
    /// The filing parameters (mode, wing, room, agent, project settings):
    /// a run with other parameters reads the file whole again.
    pub key: String,
    /// File size when read.
    pub size: u64,
    /// Modification time (nanoseconds since the epoch) when read.
    pub mtime_ns: Option<i64>,
    /// SHA-256 of the whole content (whole-file sources only).
    pub hash: Option<String>,
    /// Drawers the source gave.
    pub drawers: usize,
    /// Human messages in the transcript.
    pub humans: usize,
    /// The last human message.
    pub last_human: Option<String>,
    /// The wing its drawers went to.
    pub wing: Option<String>,
    /// Where a growing transcript resumes.
    pub tail: Option<TailCursor>,
}

/// Where a line-per-record transcript resumes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TailCursor {
    /// The format (`claude-code`, `codex`).
    pub format: String,
    /// Byte offset of the line where the last exchange starts.
    pub resume_at: u64,
    /// That line's number (1-based).
    pub resume_line: usize,
    /// [`check_digest`] of the bytes read before.
    pub check: String,
    /// Claude Code: the uuid of the last record before `resume_at`, the
    /// only parent outside the re-read part an appended record may name.
    pub before_uuid: Option<String>,
    /// Drawers filed from `resume_at` on.
    pub tail_ids: Vec<String>,
    /// Human messages before `resume_at`.
    pub humans_before: usize,
    /// The conversation's session id, title, directory and start, as the
    /// whole read found them (the re-read part may not carry them).
    pub session_id: String,
    /// Title.
    pub title: Option<String>,
    /// Working directory.
    pub cwd: Option<String>,
    /// Start.
    pub started_at: Option<String>,
}

impl Cursor {
    /// Reads a stored cursor; `None` for anything this build did not write.
    pub fn from_json(text: &str) -> Option<Self> {
        serde_json::from_str::<Self>(text).ok().filter(|cursor| cursor.v == VERSION)
    }

    /// The text to store.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Whether a file with this key, size and time needs no reading at all.
    pub fn unchanged(&self, key: &str, size: u64, mtime_ns: Option<i64>) -> bool {
        self.key == key && self.size == size && mtime_ns.is_some() && self.mtime_ns == mtime_ns
    }
}

/// SHA-256 (hex) of the parts, in order, each length-prefixed.
pub fn digest(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    hex::encode(hasher.finalize())
}

/// The byte ranges a tail check hashes, for a file read up to `size` and
/// resuming at `resume_at`: its head, the window before `resume_at`, and
/// the part from `resume_at` to `size`.
pub fn check_ranges(resume_at: u64, size: u64) -> [(u64, u64); 3] {
    [(0, resume_at.min(WINDOW)), (resume_at.saturating_sub(WINDOW), resume_at), (resume_at, size)]
}

/// The check of [`TailCursor::check`]: the digest of the bytes of
/// [`check_ranges`], in order.
pub fn check_digest(head: &[u8], before: &[u8], region: &[u8]) -> String {
    digest(&[head, before, region])
}

/// Byte offset where line `line` (1-based, numbered as `str::lines` does)
/// starts in `text`; `None` past the last line.
pub fn line_start(text: &str, line: usize) -> Option<usize> {
    if line == 0 {
        return None;
    }
    if line == 1 {
        return Some(0);
    }
    text.bytes()
        .enumerate()
        .filter(|(_, b)| *b == b'\n')
        .nth(line - 2)
        .map(|(i, _)| i + 1)
        .filter(|&start| start < text.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_starts_follow_str_lines() {
        let text = "a\nbb\r\n\nccc";
        let lines: Vec<&str> = text.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            let start = line_start(text, n + 1).unwrap();
            assert!(text[start..].starts_with(line), "line {}", n + 1);
        }
        assert_eq!(line_start(text, lines.len() + 1), None);
        assert_eq!(line_start(text, 0), None);
        assert_eq!(line_start("a\n", 2), None, "no line after the final newline");
    }

    #[test]
    fn check_ranges_cover_head_window_and_region() {
        assert_eq!(check_ranges(100, 150), [(0, 100), (0, 100), (100, 150)]);
        assert_eq!(check_ranges(10_000, 12_000), [(0, WINDOW), (10_000 - WINDOW, 10_000), (10_000, 12_000)]);
        assert_ne!(check_digest(b"ab", b"", b"c"), check_digest(b"a", b"b", b"c"), "parts are delimited");
    }

    #[test]
    fn cursors_round_trip_and_foreign_text_is_ignored() {
        let cursor = Cursor {
            v: VERSION,
            key: "convos|-|conversations|mine".into(),
            size: 10,
            mtime_ns: Some(5),
            hash: None,
            drawers: 3,
            humans: 2,
            last_human: Some("thanks".into()),
            wing: Some("proj".into()),
            tail: Some(TailCursor {
                format: "claude-code".into(),
                resume_at: 4,
                resume_line: 2,
                check: "x".into(),
                before_uuid: Some("u1".into()),
                tail_ids: vec!["d".into()],
                humans_before: 1,
                session_id: "s".into(),
                title: None,
                cwd: None,
                started_at: None,
            }),
        };
        assert_eq!(Cursor::from_json(&cursor.to_json()), Some(cursor.clone()));
        assert!(cursor.unchanged("convos|-|conversations|mine", 10, Some(5)));
        assert!(!cursor.unchanged("convos|-|conversations|mine", 11, Some(5)));
        assert!(!cursor.unchanged("other", 10, Some(5)));
        assert!(!cursor.unchanged("convos|-|conversations|mine", 10, None));
        assert_eq!(Cursor::from_json("{\"offset\": 3}"), None);
        assert_eq!(Cursor::from_json(&cursor.to_json().replace("\"v\":1", "\"v\":99")), None);
    }
}
