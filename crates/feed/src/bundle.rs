//! Export bundles: what users download from Claude.ai, ChatGPT, Slack or
//! Google Takeout, mined whole — unpacked into a folder or as the zip
//! itself.
//!
//! * Conversations files are read by their own parsers (`mempalace-mine`).
//! * Claude.ai `projects.json`: each project's description and custom
//!   instructions become a drawer in room `project`, each knowledge
//!   document drawers in room `documents` (chunked by the engine), in the
//!   project's wing (its normalised name) unless a wing is given.
//! * Claude.ai `memories.json`: Claude's memory of the user becomes
//!   drawers in room `memories` of the conversations' wing, and each
//!   project memory in that project's wing (named through the
//!   `projects.json` beside it).
//! * Account files (`users.json`, `user.json`, feedback and sharing
//!   records) are reported as skipped with what they hold.
//! * A zip archive's entries are sources of their own (`ARCHIVE.zip#ENTRY`):
//!   an entry whose size and CRC-32 are unchanged since the last run is not
//!   even decompressed, a changed one replaces its drawers, and the drawers
//!   of entries gone from the archive are removed. Slack exports inside an
//!   archive are mined per channel as from a folder.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufReader, Read};
use std::path::Path;

use mempalace_core::name::normalize_wing_name;
use mempalace_core::time::{DayEdge, parse_timestamp};
use mempalace_core::{Room, Wing};
use mempalace_engine::drawers::SourceFiling;
use mempalace_engine::{IngestRequest, Palace};
use mempalace_mine::bundle::{AccountMemory, Companion, MemoryScope, Project, claude_memories, claude_projects};
use serde_json::{Value, json};

use crate::convos::{
    SlackChannel, SourceFile, SourceRead, TranscriptOptions, TranscriptOutcome, default_wing, file_slack, is_candidate,
    is_day_file_name, mine_source,
};
use crate::error::FeedResult;
use crate::files::source_name;

/// Largest archive entry read, decompressed: a guard against archives
/// that expand without bound.
pub const MAX_ENTRY_BYTES: u64 = 1 << 30;

/// The file names of bundle files that are not conversation exports.
const COMPANION_NAMES: &[&str] = &[
    "projects.json",
    "memories.json",
    "users.json",
    "user.json",
    "message_feedback.json",
    "shared_conversations.json",
    "model_comparisons.json",
];

/// Whether a path names a zip archive.
pub(crate) fn is_zip_name(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| e.eq_ignore_ascii_case("zip"))
}

/// Reads a bundle file that is not a conversation export: `None` when
/// `file_name` is not one (the caller reads it as a transcript),
/// `Some(Err(reason))` for a file that holds no conversation.
pub(crate) fn companion(
    source: &str,
    file_name: &str,
    text: &str,
    sibling: &dyn Fn(&str) -> Option<Vec<u8>>,
    options: &TranscriptOptions,
) -> FeedResult<Option<Result<SourceRead, String>>> {
    if !COMPANION_NAMES.contains(&file_name) {
        return Ok(None);
    }
    let Ok(document) = serde_json::from_str::<Value>(text) else { return Ok(None) };
    Ok(match mempalace_mine::bundle::companion(file_name, &document) {
        None => None,
        Some(Companion::NotConversations(reason)) => Some(Err(reason.to_string())),
        Some(Companion::ClaudeProjects) => Some(Ok(projects_read(source, &document, options)?)),
        Some(Companion::ClaudeMemories) => {
            let names: HashMap<String, String> = sibling("projects.json")
                .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
                .map(|projects| claude_projects(&projects).0.into_iter().map(|p| (p.uuid, p.name)).collect())
                .unwrap_or_default();
            Some(Ok(memories_read(source, &document, &names, options)?))
        }
    })
}

/// The wing of a project's drawers: the one asked for, else the
/// project's normalised name.
fn project_wing(options: &TranscriptOptions, name: &str) -> Wing {
    options.wing.clone().or_else(|| Wing::parse(&normalize_wing_name(name)).ok()).unwrap_or_else(default_wing)
}

fn room(name: &str) -> Room {
    Room::parse(name).expect("a valid room name")
}

/// A drawer of a bundle file, verbatim, with its provenance in context.
fn request(
    source: &str,
    wing: &Wing,
    room: &Room,
    text: String,
    at: Option<&str>,
    options: &TranscriptOptions,
) -> IngestRequest {
    let mut request = IngestRequest::new(wing.clone(), room.clone(), text, options.agent.as_str());
    request.raw = true;
    request.source_file = Some(source.to_string());
    request.filed_at = at.and_then(|t| parse_timestamp(t, "timestamp", DayEdge::Start).ok());
    request.context.insert("format".into(), json!("claude-ai"));
    request
}

fn projects_read(source: &str, document: &Value, options: &TranscriptOptions) -> FeedResult<SourceRead> {
    let (projects, skipped) = claude_projects(document);
    let mut read = SourceRead { records_skipped: skipped, ..SourceRead::default() };
    for project in &projects {
        let wing = project_wing(options, &project.name);
        read.wing.get_or_insert_with(|| wing.clone());
        read.requests.push(project_drawer(source, &wing, project, options));
        for doc in &project.docs {
            let mut drawer =
                request(source, &wing, &room("documents"), doc.content.clone(), doc.created_at.as_deref(), options);
            drawer.context.insert("unit".into(), json!("project_doc"));
            drawer.context.insert("project".into(), json!(project.name));
            drawer.context.insert("project_uuid".into(), json!(project.uuid));
            drawer.context.insert("filename".into(), json!(doc.filename));
            drawer.context.insert("doc_uuid".into(), json!(doc.uuid));
            read.requests.push(drawer);
        }
    }
    Ok(read)
}

/// A project's name, description and custom instructions as one drawer.
fn project_drawer(source: &str, wing: &Wing, project: &Project, options: &TranscriptOptions) -> IngestRequest {
    let mut lines = vec![format!("Project: {}", project.name)];
    if let Some(description) = &project.description {
        lines.push(format!("Description: {description}"));
    }
    if let Some(instructions) = &project.prompt_template {
        lines.push(format!("Instructions:\n{instructions}"));
    }
    if !project.docs.is_empty() {
        let names: Vec<&str> = project.docs.iter().map(|d| d.filename.as_str()).collect();
        lines.push(format!("Documents: {}", names.join(", ")));
    }
    let mut drawer = request(source, wing, &room("project"), lines.join("\n"), project.created_at.as_deref(), options);
    drawer.context.insert("unit".into(), json!("project"));
    drawer.context.insert("project".into(), json!(project.name));
    drawer.context.insert("project_uuid".into(), json!(project.uuid));
    drawer
}

fn memories_read(
    source: &str,
    document: &Value,
    project_names: &HashMap<String, String>,
    options: &TranscriptOptions,
) -> FeedResult<SourceRead> {
    let (memories, skipped) = claude_memories(document);
    let mut read = SourceRead { records_skipped: skipped, ..SourceRead::default() };
    for AccountMemory { scope, text } in memories {
        let (wing, scope_name, project) = match &scope {
            MemoryScope::Account => (options.wing.clone().unwrap_or_else(default_wing), "account", None),
            MemoryScope::Project(uuid) => {
                let name = project_names.get(uuid);
                let wing = match name {
                    Some(name) => project_wing(options, name),
                    None => options.wing.clone().unwrap_or_else(default_wing),
                };
                (wing, "project", Some((uuid.clone(), name.cloned())))
            }
        };
        read.wing.get_or_insert_with(|| wing.clone());
        let mut drawer = request(source, &wing, &room("memories"), text, None, options);
        drawer.context.insert("unit".into(), json!("claude_memory"));
        drawer.context.insert("scope".into(), json!(scope_name));
        if let Some((uuid, name)) = project {
            drawer.context.insert("project_uuid".into(), json!(uuid));
            if let Some(name) = name {
                drawer.context.insert("project".into(), json!(name));
            }
        }
        read.requests.push(drawer);
    }
    Ok(read)
}

/// Whether an archive entry is an operating-system artefact or hidden
/// (`__MACOSX/…`, `.DS_Store`): left out without a word.
fn is_artefact(name: &str) -> bool {
    name.split('/').any(|part| part.starts_with('.') || part == "__MACOSX")
}

/// The folder of an archive entry (`a/b/` for `a/b/c.json`, `` at the root).
fn folder_of(name: &str) -> &str {
    name.rfind('/').map_or("", |at| &name[..=at])
}

/// The folders of Slack exports inside an archive: each holds
/// `channels.json`, or `users.json` beside channel folders of day files;
/// a folder inside another export's is that export's.
fn slack_prefixes(names: &BTreeSet<String>) -> Vec<String> {
    let mut candidates: Vec<&str> = names
        .iter()
        .filter(|n| {
            let file = n.rsplit('/').next().unwrap_or(n);
            file == "channels.json" || file == "users.json"
        })
        .map(|n| folder_of(n))
        .filter(|folder| {
            names.contains(&format!("{folder}channels.json"))
                || names.iter().any(|n| {
                    n.strip_prefix(*folder)
                        .and_then(|rest| rest.split_once('/'))
                        .is_some_and(|(_, day)| !day.contains('/') && is_day_file_name(day))
                })
        })
        .collect();
    candidates.sort_by_key(|folder| folder.len());
    candidates.dedup();
    let mut prefixes: Vec<String> = Vec::new();
    for folder in candidates {
        if !prefixes.iter().any(|outer| folder.starts_with(outer.as_str())) {
            prefixes.push(folder.to_string());
        }
    }
    prefixes
}

/// Mines a zip archive: each entry a source, a Slack export inside it per
/// channel; one outcome per entry, with the name shown in reports.
pub(crate) fn mine_zip(
    palace: &Palace,
    path: &Path,
    options: &TranscriptOptions,
) -> FeedResult<Vec<(String, TranscriptOutcome)>> {
    let shown = path.display().to_string();
    let zip_source = source_name(path);
    let archive = std::fs::File::open(path)
        .map_err(|error| error.to_string())
        .and_then(|file| zip::ZipArchive::new(BufReader::new(file)).map_err(|error| error.to_string()));
    let mut archive = match archive {
        Ok(archive) => archive,
        Err(error) => {
            return Ok(vec![(shown, TranscriptOutcome::Failed(format!("not a readable zip archive: {error}")))]);
        }
    };
    let mut outcomes = Vec::new();
    let mut names: BTreeSet<String> = BTreeSet::new();
    for name in archive.file_names() {
        match name {
            Ok(name) if !name.ends_with('/') => {
                names.insert(name.into_owned());
            }
            Ok(_) => {}
            Err(error) => {
                outcomes.push((shown.clone(), TranscriptOutcome::Failed(format!("an entry's name: {error}"))))
            }
        }
    }
    let mut seen: BTreeSet<String> = BTreeSet::new();

    let slack = slack_prefixes(&names);
    for prefix in &slack {
        let mut channels: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for name in names.iter().filter(|n| n.starts_with(prefix.as_str()) && !is_artefact(n)) {
            let Some((channel, day)) = name[prefix.len()..].split_once('/') else { continue };
            if day.contains('/') || !is_day_file_name(day) {
                continue;
            }
            let text = match read_entry(&mut archive, name) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(error) => {
                    outcomes.push((format!("{shown}#{name}"), TranscriptOutcome::Failed(error)));
                    continue;
                }
            };
            channels.entry(channel.to_string()).or_default().push((day.to_string(), text));
        }
        let users = read_entry(&mut archive, &format!("{prefix}users.json"))
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default();
        let channels: Vec<SlackChannel> = channels
            .into_iter()
            .map(|(name, days)| {
                let source = format!("{zip_source}#{prefix}{name}");
                seen.insert(source.clone());
                SlackChannel { name, source, days }
            })
            .collect();
        let export_name = prefix
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .or_else(|| path.file_stem().and_then(|s| s.to_str()).map(str::to_string))
            .unwrap_or_else(|| "slack".to_string());
        outcomes.push((format!("{shown}#{prefix}"), file_slack(palace, channels, &users, &export_name, options)?));
    }

    // The projects.json beside each memories.json, read up front.
    let mut projects: HashMap<String, Vec<u8>> = HashMap::new();
    for name in names.iter().filter(|n| n.ends_with("memories.json")) {
        let beside = format!("{}projects.json", folder_of(name));
        if names.contains(&beside)
            && let Ok(bytes) = read_entry(&mut archive, &beside)
        {
            projects.insert(folder_of(name).to_string(), bytes);
        }
    }

    for name in &names {
        if is_artefact(name) || slack.iter().any(|prefix| name.starts_with(prefix.as_str())) {
            continue;
        }
        let entry_shown = format!("{shown}#{name}");
        let file_name = name.rsplit('/').next().unwrap_or(name).to_string();
        if is_zip_name(Path::new(&file_name)) {
            outcomes.push((
                entry_shown,
                TranscriptOutcome::NotTranscript("an archive inside the archive: unpack it and mine the folder".into()),
            ));
            continue;
        }
        if !is_candidate(&file_name) {
            let reason = match file_name.rsplit_once('.') {
                Some((_, extension)) => format!("not a transcript format (.{}): not read", extension.to_lowercase()),
                None => "not a transcript format (no .json, .jsonl or .txt extension): not read".to_string(),
            };
            outcomes.push((entry_shown, TranscriptOutcome::NotTranscript(reason)));
            continue;
        }
        let (size, crc) = match archive.by_name(name) {
            Ok(entry) => (entry.size(), entry.crc32()),
            Err(error) => {
                outcomes.push((entry_shown, TranscriptOutcome::Failed(error.to_string())));
                continue;
            }
        };
        let source = format!("{zip_source}#{name}");
        seen.insert(source.clone());
        if size > MAX_ENTRY_BYTES {
            outcomes.push((
                entry_shown,
                TranscriptOutcome::Failed(format!(
                    "{size} bytes unpacked, more than the {MAX_ENTRY_BYTES} an archive entry may have: unpack the \
                     archive and mine the folder"
                )),
            ));
            continue;
        }
        let file = SourceFile { source, file_name, size, stamp: Some(i64::from(crc)), path: None };
        let folder = folder_of(name).to_string();
        let sibling = |wanted: &str| if wanted == "projects.json" { projects.get(&folder).cloned() } else { None };
        let read = || read_entry(&mut archive, name).map_err(std::io::Error::other);
        outcomes.push((entry_shown, mine_source(palace, &file, read, &sibling, options)?));
    }

    if !options.selection.is_active() {
        let removed = remove_gone_entries(palace, &zip_source, &seen, options.dry_run)?;
        if removed.removed > 0 {
            outcomes.push((
                format!("{shown} (entries gone from the archive)"),
                TranscriptOutcome::Mined {
                    filing: removed,
                    records_skipped: 0,
                    conversations_skipped: 0,
                    human_messages: 0,
                    last_human: None,
                    wing: default_wing(),
                },
            ));
        }
    }
    Ok(outcomes)
}

/// Removes (or, in a dry run, counts) the drawers of an archive's entries
/// that are no longer in it.
fn remove_gone_entries(
    palace: &Palace,
    zip_source: &str,
    seen: &BTreeSet<String>,
    dry_run: bool,
) -> FeedResult<SourceFiling> {
    let prefix = format!("{zip_source}#");
    let mut total = SourceFiling::default();
    for source in palace.sources(None)?.into_keys() {
        if !source.starts_with(&prefix) || seen.contains(&source) {
            continue;
        }
        if dry_run {
            total += palace.plan_source(&source, &[])?;
        } else {
            total += palace.file_source(&source, Vec::new())?.filing;
            palace.set_source_cursor(&source, None)?;
        }
    }
    Ok(total)
}

/// The bytes of one archive entry, at most [`MAX_ENTRY_BYTES`]; the
/// archive's checksum is verified as it is read.
fn read_entry<R: Read + std::io::Seek>(archive: &mut zip::ZipArchive<R>, name: &str) -> Result<Vec<u8>, String> {
    let entry = archive.by_name(name).map_err(|error| error.to_string())?;
    let mut bytes = Vec::new();
    entry.take(MAX_ENTRY_BYTES + 1).read_to_end(&mut bytes).map_err(|error| format!("unreadable entry: {error}"))?;
    if bytes.len() as u64 > MAX_ENTRY_BYTES {
        return Err(format!("more than {MAX_ENTRY_BYTES} bytes unpacked: unpack the archive and mine the folder"));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slack_exports_are_found_at_the_root_or_in_folders() {
        let set = |names: &[&str]| names.iter().map(|n| (*n).to_string()).collect::<BTreeSet<String>>();
        assert_eq!(slack_prefixes(&set(&["channels.json", "users.json", "general/2024-01-31.json"])), vec![""]);
        assert_eq!(slack_prefixes(&set(&["acme/users.json", "acme/general/2024-01-31.json"])), vec!["acme/"]);
        assert_eq!(
            slack_prefixes(&set(&[
                "a/channels.json",
                "a/general/2024-01-31.json",
                "a/general/users.json",
                "b/x/channels.json"
            ])),
            vec!["a/", "b/x/"],
            "two exports; a users.json inside an export's channel is not another"
        );
        // A Claude.ai bundle has a users.json but no channel folders.
        assert!(slack_prefixes(&set(&["users.json", "conversations.json", "projects.json"])).is_empty());
    }

    #[test]
    fn artefacts_and_folders() {
        assert!(is_artefact("__MACOSX/._conversations.json"));
        assert!(is_artefact("export/.DS_Store"));
        assert!(!is_artefact("export/conversations.json"));
        assert_eq!(folder_of("a/b/c.json"), "a/b/");
        assert_eq!(folder_of("c.json"), "");
    }
}
