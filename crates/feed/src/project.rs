//! Projects: the documents of a folder (code too on request), honouring
//! `.gitignore`, routed to rooms by the project's `mempalace.yaml`, cut
//! into line-ranged chunks. A file is re-read only when its size or time
//! changed, and re-filed only when its content did. The project's memory
//! files (`MEMORY.md`, `memory/*.md`) are filed as memory instead, one
//! drawer per paragraph (`crate::memory`).

use std::path::Path;

use mempalace_core::chunk::chunk_lines;
use mempalace_core::name::normalize_wing_name;
use mempalace_core::project::{ProjectConfig, room_for_folder};
use mempalace_core::{Room, Wing};
use mempalace_engine::{IngestRequest, Palace};
use mempalace_mine::cursor::{self, Cursor};
use serde_json::json;

use crate::error::{FeedError, FeedResult};
use crate::files::{modified, stat};
use crate::{FileProblem, MineOptions, MineReport, Progress};

/// Mines the project at `root`.
pub(crate) fn mine(
    palace: &Palace,
    root: &Path,
    options: &MineOptions,
    progress: Progress<'_>,
) -> FeedResult<MineReport> {
    if !root.is_dir() {
        return Err(FeedError::NotFound { what: "project folder", path: root.to_path_buf() });
    }
    let root = root
        .canonicalize()
        .map_err(|error| FeedError::Unreadable { path: root.to_path_buf(), detail: error.to_string() })?;
    let config_path = mempalace_core::project::CONFIG_FILE_NAMES
        .iter()
        .map(|name| root.join(name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| root.join("mempalace.yaml"));
    let config_bytes = std::fs::read(&config_path).ok();
    let config = match &config_bytes {
        Some(bytes) => Some(ProjectConfig::parse(&String::from_utf8_lossy(bytes)).map_err(|error| {
            FeedError::Invalid(format!(
                "{}: {error}; fix it or run `mempalace init {}` to write a new one",
                config_path.display(),
                root.display()
            ))
        })?),
        None => None,
    };
    let wing = match (&options.wing, &config) {
        (Some(wing), _) => wing.clone(),
        (None, Some(config)) => Wing::parse(&config.wing)?,
        (None, None) => {
            Wing::parse(&normalize_wing_name(root.file_name().and_then(|n| n.to_str()).unwrap_or("project")))?
        }
    };
    let walk = mempalace_mine::project::WalkOptions {
        gitignore: options.gitignore,
        include_ignored: options.include_ignored.clone(),
        include_code: options.include_code,
        exclude: config.as_ref().map(|c| c.exclude_patterns.clone()).unwrap_or_default(),
    };
    let mut files = mempalace_mine::project::walk(&root, &walk).map_err(FeedError::Invalid)?;
    // Memory files are filed as memory, paragraph by paragraph (crate::memory).
    let memory_files: std::collections::HashSet<std::path::PathBuf> =
        crate::memory::memory_files(&root)?.into_iter().map(|file| file.path).collect();
    files.retain(|file| !memory_files.contains(file));
    if let Some(limit) = options.limit {
        files.truncate(limit);
    }
    let mut report = MineReport { files: files.len(), wing: Some(wing.to_string()), ..MineReport::default() };
    // A file is re-read only when its size or time changed, and re-filed
    // only when its content did, under the same settings.
    let key =
        format!("projects|{wing}|{}|{}", options.agent, cursor::digest(&[config_bytes.as_deref().unwrap_or_default()]));
    for (done, file) in files.iter().enumerate() {
        progress(done, files.len(), report.drawers_added);
        let source = file.display().to_string();
        let (size, mtime_ns) = match stat(file) {
            Ok(stat) => stat,
            Err(error) => {
                report.failed.push(FileProblem { file: source, error: error.to_string() });
                continue;
            }
        };
        let stored = palace.source_cursor(&source)?.and_then(|text| Cursor::from_json(&text)).filter(|c| c.key == key);
        if let Some(cursor) = &stored
            && cursor.unchanged(&key, size, mtime_ns)
        {
            report.read += 1;
            report.drawers_unchanged += cursor.drawers;
            continue;
        }
        let text = match std::fs::read(file).map(String::from_utf8) {
            Ok(Ok(text)) if !text.contains('\0') => text,
            Ok(_) => {
                report.failed.push(FileProblem { file: source, error: "not UTF-8 text".into() });
                continue;
            }
            Err(error) => {
                report.failed.push(FileProblem { file: source, error: error.to_string() });
                continue;
            }
        };
        report.read += 1;
        let hash = cursor::digest(&[text.as_bytes()]);
        if let Some(cursor) = &stored
            && cursor.hash.as_deref() == Some(hash.as_str())
        {
            report.drawers_unchanged += cursor.drawers;
            if !options.dry_run {
                let refreshed = Cursor { size, mtime_ns, ..cursor.clone() };
                palace.set_source_cursor(&source, Some(&refreshed.to_json()))?;
            }
            continue;
        }
        let relative = file.strip_prefix(&root).unwrap_or(file).display().to_string();
        let folder_room = || relative.split('/').rev().skip(1).last().and_then(room_for_folder);
        let (room_name, fell_back) = match &config {
            Some(config) => (config.room_for(&relative, &text), false),
            None => match folder_room() {
                Some(room) => (room, false),
                None => ("general".to_string(), true),
            },
        };
        let mut room = Room::parse(&room_name).unwrap_or(Room::parse("general")?);
        // No configuration and no folder names the room: the wing's room
        // prototypes may (docs/entities-and-centroids.md), for the whole
        // file, so its chunks stay together.
        let mut suggested = None;
        if fell_back
            && let Some(suggestion) = palace.suggest_room(&wing, &text)?
            && let Ok(chosen) = Room::parse(&suggestion.room)
        {
            suggested = Some(json!({"default": room.as_str(), "similarity": suggestion.similarity}));
            room = chosen;
        }
        let mtime = modified(file);
        let requests: Vec<IngestRequest> = chunk_lines(&text)
            .into_iter()
            .enumerate()
            .map(|(index, chunk)| {
                let mut request = IngestRequest::new(wing.clone(), room.clone(), chunk.text, options.agent.clone());
                request.raw = true;
                request.source_file = Some(source.clone());
                request.lines = Some((chunk.line_start, chunk.line_end));
                request.chunk_index = Some(index as u32);
                request.filed_at = mtime;
                request.context.insert("relative_path".into(), json!(relative));
                if let Some(suggested) = &suggested {
                    request.context.insert("room_suggested".into(), suggested.clone());
                }
                request
            })
            .collect();
        if options.dry_run {
            let plan = palace.plan_source(&source, &requests)?;
            report.add_filing(plan);
            continue;
        }
        match palace.file_source(&source, requests) {
            Ok(filed) => {
                report.add_filing(filed.filing);
                let cursor = Cursor {
                    v: cursor::VERSION,
                    key: key.clone(),
                    size,
                    mtime_ns,
                    hash: Some(hash),
                    drawers: filed.distinct_drawers(),
                    humans: 0,
                    last_human: None,
                    wing: Some(wing.to_string()),
                    tail: None,
                };
                palace.set_source_cursor(&source, Some(&cursor.to_json()))?;
            }
            Err(error) => report.failed.push(FileProblem { file: source, error: error.to_string() }),
        }
    }
    let memory_options = crate::memory::MemorySyncOptions {
        wing: Some(wing.clone()),
        agent: options.agent.clone(),
        dry_run: options.dry_run,
    };
    let memory = crate::memory::sync(palace, &root, &memory_options)?;
    report.files += memory.files;
    report.read += memory.files - memory.failed.len();
    report.drawers_added += memory.drawers_added;
    report.drawers_unchanged += memory.drawers_unchanged;
    report.drawers_removed += memory.drawers_removed;
    report.failed.extend(memory.failed);
    progress(files.len(), files.len(), report.drawers_added);
    if report.read == 0 && !files.is_empty() {
        return Err(FeedError::NothingMined("no file was readable text".into()));
    }
    Ok(report)
}
