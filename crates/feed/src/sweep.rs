//! The sweeper (`mempalace sweep`): files every user and assistant message
//! of Claude Code session JSONL as a drawer of its own, catching what the
//! exchange miner leaves out (tool output in full, sidechains, rewound
//! branches), as the Python MemPalace's `sweeper.py` does.
//!
//! Per session, the cursor is the newest `timestamp` of the drawers the
//! sweeper filed for that session before; messages strictly older are
//! skipped (equal ones are not: several messages can share a timestamp).
//! Each message is filed raw through the engine under the Python id
//! `sweep_{session}_{uuid}`, so re-running files nothing twice and a
//! message already present is counted, not rewritten. The text is
//! `USER: …` or `ASSISTANT: …`; a message longer than a drawer holds is
//! split, the first part keeping the id and the others `ID_part_002`, ….
//! Wing: the normalised name of the session's working directory, else
//! `sweep`; room `sweep`. Drawers carry the session id, and in their
//! context the message's `timestamp`, `message_uuid`, `role` and
//! `ingest_mode: "sweep"`.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use mempalace_core::name::normalize_wing_name;
use mempalace_core::time::{DayEdge, parse_timestamp};
use mempalace_core::{Content, Room, Wing};
use mempalace_engine::{ChunkOutcome, IngestRequest, Palace};
use mempalace_mine::sweep::{Message, parse};
use serde::Serialize;
use serde_json::{Value, json};

use crate::FileProblem;
use crate::error::{FeedError, FeedResult};

/// Messages filed per engine call.
const BATCH: usize = 64;
/// Room every swept message goes to.
pub const SWEEP_ROOM: &str = "sweep";
/// Wing of sessions without a working directory.
pub const SWEEP_WING: &str = "sweep";

/// What sweeping one file did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FileSweep {
    /// The file.
    pub file: String,
    /// Drawers that did not exist before.
    pub added: u64,
    /// Messages whose drawer was already there.
    pub already_present: u64,
    /// Messages older than their session's cursor.
    pub skipped: u64,
}

/// What sweeping a folder did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SweepReport {
    /// `.jsonl` files found.
    pub files_attempted: u64,
    /// Files swept without error.
    pub files_succeeded: u64,
    /// Drawers added in all.
    pub drawers_added: u64,
    /// Messages already present in all.
    pub drawers_already_present: u64,
    /// Messages skipped by cursors in all.
    pub drawers_skipped: u64,
    /// Per file.
    pub per_file: Vec<FileSweep>,
    /// Files that failed, with the reason.
    pub failures: Vec<FileProblem>,
    /// Paths that are not regular files (FIFOs, devices): not swept, not failures.
    pub not_regular: Vec<String>,
}

/// The newest `timestamp` among the drawers the sweeper filed for a session.
fn cursor(palace: &Palace, session_id: &str) -> FeedResult<Option<String>> {
    Ok(palace
        .session_drawers(session_id)?
        .iter()
        .filter(|drawer| drawer.context.get("ingest_mode").and_then(Value::as_str) == Some("sweep"))
        .filter_map(|drawer| drawer.context.get("timestamp").and_then(Value::as_str).map(str::to_string))
        .max())
}

/// A text cut into pieces a drawer holds, preferring line breaks.
fn parts(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = text;
    while rest.chars().count() > Content::MAX_CHARS {
        let limit = rest.char_indices().nth(Content::MAX_CHARS).map_or(rest.len(), |(at, _)| at);
        let cut = rest[..limit].rfind('\n').filter(|&at| at > limit / 2).map_or(limit, |at| at + 1);
        parts.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    if !rest.trim().is_empty() || parts.is_empty() {
        parts.push(rest);
    }
    parts
}

/// The requests filing one message (one per part).
fn requests(message: &Message, wing: &Wing, source: &str) -> FeedResult<Vec<IngestRequest>> {
    let text = format!("{}: {}", message.role.to_uppercase(), message.content);
    let id = mempalace_core::id::sweep_drawer_id(&message.session_id, &message.uuid)?;
    let pieces = parts(&text);
    let total = pieces.len();
    let mut out = Vec::with_capacity(total);
    for (index, piece) in pieces.into_iter().enumerate() {
        let mut request = IngestRequest::new(wing.clone(), Room::parse(SWEEP_ROOM)?, piece, "sweep");
        request.raw = true;
        request.id = Some(if index == 0 {
            id.clone()
        } else {
            mempalace_core::DrawerId::parse(&format!("{id}_part_{:03}", index + 1))?
        });
        request.session_id = Some(message.session_id.clone());
        request.source_file = Some(source.to_string());
        request.filed_at = parse_timestamp(&message.timestamp, "timestamp", DayEdge::Start).ok();
        let mut context = json!({
            "timestamp": message.timestamp,
            "message_uuid": message.uuid,
            "role": message.role,
            "ingest_mode": "sweep",
        });
        if total > 1 {
            context["part"] = json!(index + 1);
            context["parts"] = json!(total);
        }
        if let Value::Object(map) = context {
            request.context = map;
        }
        out.push(request);
    }
    Ok(out)
}

/// Files the messages of one transcript not yet in the palace. `source` is
/// the name its drawers carry (its absolute path).
pub fn sweep_file(palace: &Palace, path: &Path, source: &str) -> FeedResult<FileSweep> {
    let meta = std::fs::metadata(path).map_err(|error| match error.kind() {
        std::io::ErrorKind::NotFound => FeedError::NotFound { what: "transcript", path: path.to_path_buf() },
        _ => FeedError::Unreadable { path: path.to_path_buf(), detail: error.to_string() },
    })?;
    if !meta.is_file() {
        return Err(FeedError::Invalid(format!(
            "{} is not a regular file; give a .jsonl transcript or a folder of them",
            path.display()
        )));
    }
    let bytes = std::fs::read(path)
        .map_err(|error| FeedError::Unreadable { path: path.to_path_buf(), detail: error.to_string() })?;
    let text = String::from_utf8_lossy(&bytes);
    let messages = parse(&text);

    let mut session_wing: HashMap<&str, Wing> = HashMap::new();
    for message in &messages {
        if let Some(cwd) = &message.cwd
            && !session_wing.contains_key(message.session_id.as_str())
            && let Some(name) = Path::new(cwd).file_name().and_then(|n| n.to_str())
            && let Ok(wing) = Wing::parse(&normalize_wing_name(name))
        {
            session_wing.insert(&message.session_id, wing);
        }
    }
    let default_wing = Wing::parse(SWEEP_WING)?;
    let mut cursors: HashMap<&str, Option<String>> = HashMap::new();
    let mut report = FileSweep { file: source.to_string(), ..FileSweep::default() };
    // A rewritten transcript can hold a message twice: the last one counts.
    let mut chosen: Vec<&Message> = Vec::new();
    let mut position: HashMap<(&str, &str), usize> = HashMap::new();
    for message in &messages {
        if !cursors.contains_key(message.session_id.as_str()) {
            cursors.insert(&message.session_id, cursor(palace, &message.session_id)?);
        }
        if let Some(Some(at)) = cursors.get(message.session_id.as_str())
            && message.timestamp.as_str() < at.as_str()
        {
            report.skipped += 1;
            continue;
        }
        match position.get(&(message.session_id.as_str(), message.uuid.as_str())) {
            Some(&at) => chosen[at] = message,
            None => {
                position.insert((&message.session_id, &message.uuid), chosen.len());
                chosen.push(message);
            }
        }
    }
    for batch in chosen.chunks(BATCH) {
        let mut requests_of: Vec<usize> = Vec::new();
        let mut all = Vec::new();
        for (index, message) in batch.iter().enumerate() {
            let wing = session_wing.get(message.session_id.as_str()).unwrap_or(&default_wing);
            for request in requests(message, wing, source)? {
                requests_of.push(index);
                all.push(request);
            }
        }
        let mut added = vec![false; batch.len()];
        for (result, index) in palace.ingest_batch(all).into_iter().zip(requests_of) {
            let outcome = result?;
            if outcome
                .chunks
                .iter()
                .any(|chunk| matches!(chunk, ChunkOutcome::Filed(_) | ChunkOutcome::FiledNear { .. }))
            {
                added[index] = true;
            }
        }
        let new = added.iter().filter(|a| **a).count() as u64;
        report.added += new;
        report.already_present += batch.len() as u64 - new;
    }
    Ok(report)
}

/// The `.jsonl` files under a folder, recursively, sorted (symbolic links
/// to folders are not followed).
fn transcripts(dir: &Path, found: &mut Vec<PathBuf>, problems: &mut Vec<FileProblem>) {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) => {
            problems.push(FileProblem { file: dir.display().to_string(), error: error.to_string() });
            return;
        }
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
        if is_dir {
            transcripts(&path, found, problems);
        } else if path.extension().is_some_and(|ext| ext == "jsonl") {
            found.push(path);
        }
    }
}

/// Sweeps a transcript file, or every `.jsonl` under a folder. A file
/// that fails is reported and the rest are swept; a path that is not a
/// regular file is listed and skipped.
pub fn sweep(palace: &Palace, target: &Path) -> FeedResult<SweepReport> {
    let mut report = SweepReport::default();
    if !target.is_dir() {
        let one = sweep_file(palace, target, &crate::files::source_name(target))?;
        report.files_attempted = 1;
        report.files_succeeded = 1;
        report.drawers_added = one.added;
        report.drawers_already_present = one.already_present;
        report.drawers_skipped = one.skipped;
        report.per_file.push(one);
        return Ok(report);
    }
    let mut files = Vec::new();
    transcripts(target, &mut files, &mut report.failures);
    files.sort();
    report.files_attempted = files.len() as u64;
    let mut by_file: BTreeMap<String, FileSweep> = BTreeMap::new();
    for file in files {
        match std::fs::metadata(&file) {
            Err(error) => {
                report.failures.push(FileProblem { file: file.display().to_string(), error: error.to_string() });
                continue;
            }
            Ok(meta) if !meta.is_file() => {
                report.not_regular.push(file.display().to_string());
                continue;
            }
            Ok(_) => {}
        }
        let source = crate::files::source_name(&file);
        match sweep_file(palace, &file, &source) {
            Ok(one) => {
                report.files_succeeded += 1;
                report.drawers_added += one.added;
                report.drawers_already_present += one.already_present;
                report.drawers_skipped += one.skipped;
                by_file.insert(source, one);
            }
            Err(FeedError::Engine(error)) if !matches!(error, mempalace_engine::EngineError::Invalid(_)) => {
                return Err(FeedError::Engine(error));
            }
            Err(error) => {
                report.failures.push(FileProblem { file: file.display().to_string(), error: error.to_string() })
            }
        }
    }
    report.per_file = by_file.into_values().collect();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_split_at_line_breaks_into_drawer_sized_parts() {
        let line = "x".repeat(99) + "\n";
        let text = line.repeat(250);
        let pieces = parts(&text);
        assert_eq!(pieces.len(), 3);
        assert!(pieces.iter().all(|p| p.chars().count() <= Content::MAX_CHARS && p.ends_with('\n')));
        assert_eq!(pieces.concat(), text);
        assert_eq!(parts("short"), ["short"]);
    }
}
