//! Memory files as first-class memory (seed 2, GoClaw's L0 working memory):
//! `MEMORY.md` (or `memory.md` when there is no `MEMORY.md`) and
//! `memory/*.md` under a memory root — a project or agent folder — and the
//! same layout under `users/USER/` for one user's own memory.
//!
//! Each file is cut into paragraphs (`core::paragraph`, at most 1,000
//! characters) and each paragraph is a drawer in room [`MEMORY_ROOM`] of
//! the root's wing, with the file's absolute path as `source_file`, its
//! lines, and `memory_file` (the path under the root) and `memory_root` in
//! its context; a user's files are owned by that user. Drawers are filed
//! verbatim under ids that hash the file's path, the paragraph's text and
//! its occurrence, so an unchanged paragraph keeps its id whatever happens
//! around it; the file's cursor (kept by the store) remembers which id each
//! paragraph has, so a paragraph edited through the palace keeps its id too.
//!
//! Both ways: [`sync`] (and `mine`) re-files a file whose size, time or
//! bytes changed — the drawers of paragraphs that are gone are removed in
//! the same transaction — and drops the drawers of files that are gone;
//! [`update_drawer`], [`delete_drawer`] and [`add`] change the file first
//! (a temporary file renamed over it), then the palace. A file whose bytes
//! differ from what the palace last read is never written: the edit is
//! refused and the user told to sync, so a hand edit is never lost.
//! [`read`] serves MCP `memory_get`: a file or a line range of it, the
//! user's own file first, else the shared one.

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use mempalace_core::classify::{classify, detect_hall};
use mempalace_core::name::normalize_wing_name;
use mempalace_core::paragraph::{Paragraph, append_paragraph, paragraphs, remove_paragraph, replace_paragraph};
use mempalace_core::project::ProjectConfig;
use mempalace_core::{Content, ContentHash, Drawer, DrawerId, Hall, Room, Wing};
use mempalace_engine::drawers::{DrawerUpdate, SourceFiling};
use mempalace_engine::{DeleteMode, EngineError, IngestRequest, Palace};
use mempalace_mine::cursor::digest;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::FileProblem;
use crate::error::{FeedError, FeedResult};
use crate::files::stat;

/// Room of every memory-file drawer.
pub const MEMORY_ROOM: &str = "memory";
/// The curated memory file (GoClaw's primary file).
pub const MAIN_FILE: &str = "MEMORY.md";
/// Read instead of [`MAIN_FILE`] when that is absent.
pub const FALLBACK_FILE: &str = "memory.md";
/// Folder of further memory files (`memory/2026-03-23.md`, the daily notes).
pub const MEMORY_DIR: &str = "memory";
/// Folder of per-user memory: `users/USER/MEMORY.md`, `users/USER/memory/*.md`.
pub const USERS_DIR: &str = "users";
/// Context key holding a drawer's file path under its memory root.
pub const FILE_KEY: &str = "memory_file";
/// Context key holding a drawer's memory root.
pub const ROOT_KEY: &str = "memory_root";
/// Marks the cursors this module writes.
const CURSOR_KIND: &str = "memory_file";

/// One memory file under a root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryFile {
    /// Absolute path.
    pub path: PathBuf,
    /// Path under the memory root, `/`-separated (`users/alice/MEMORY.md`).
    pub relative: String,
    /// The user whose memory it is; `None` for the shared memory.
    pub owner: Option<String>,
}

/// The memory files under `root` (a canonical folder), shared ones first,
/// then each user's, in path order. Files of other extensions in `memory/`
/// are stored memory but not indexed (seed 2), so they are not listed.
pub fn memory_files(root: &Path) -> FeedResult<Vec<MemoryFile>> {
    let mut files = Vec::new();
    files_of(root, "", None, &mut files)?;
    let users = root.join(USERS_DIR);
    if users.is_dir() {
        let mut names: Vec<String> = read_dir_names(&users)?
            .into_iter()
            .filter(|name| users.join(name).is_dir() && valid_user(name).is_ok())
            .collect();
        names.sort();
        for name in names {
            files_of(&users.join(&name), &format!("{USERS_DIR}/{name}/"), Some(&name), &mut files)?;
        }
    }
    Ok(files)
}

/// The memory files of one folder's layout.
fn files_of(dir: &Path, prefix: &str, owner: Option<&str>, out: &mut Vec<MemoryFile>) -> FeedResult<()> {
    let file = |name: &str| MemoryFile {
        path: dir.join(name),
        relative: format!("{prefix}{name}"),
        owner: owner.map(str::to_string),
    };
    if dir.join(MAIN_FILE).is_file() {
        out.push(file(MAIN_FILE));
    } else if dir.join(FALLBACK_FILE).is_file() && has_exact_name(dir, FALLBACK_FILE) {
        out.push(file(FALLBACK_FILE));
    }
    let notes = dir.join(MEMORY_DIR);
    if notes.is_dir() {
        let mut names: Vec<String> = read_dir_names(&notes)?
            .into_iter()
            .filter(|name| is_markdown(name) && !name.starts_with('.') && notes.join(name).is_file())
            .collect();
        names.sort();
        for name in names {
            out.push(file(&format!("{MEMORY_DIR}/{name}")));
        }
    }
    Ok(())
}

/// Whether a folder holds an entry of exactly this name: on a
/// case-insensitive disk `memory.md` also answers for `MEMORY.md`.
fn has_exact_name(dir: &Path, name: &str) -> bool {
    read_dir_names(dir).is_ok_and(|names| names.iter().any(|n| n == name))
}

fn read_dir_names(dir: &Path) -> FeedResult<Vec<String>> {
    let entries = std::fs::read_dir(dir)
        .map_err(|error| FeedError::Unreadable { path: dir.to_path_buf(), detail: error.to_string() })?;
    Ok(entries.filter_map(Result::ok).filter_map(|entry| entry.file_name().to_str().map(str::to_string)).collect())
}

fn is_markdown(name: &str) -> bool {
    name.len() > 3 && name.to_ascii_lowercase().ends_with(".md")
}

/// Checks a user id used as a folder name under `users/`.
pub fn valid_user(user: &str) -> FeedResult<&str> {
    let ok = !user.is_empty()
        && user.len() <= 128
        && !user.starts_with('.')
        && user.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '@'));
    if ok {
        Ok(user)
    } else {
        Err(FeedError::Invalid(format!(
            "user id {user:?} cannot name a memory folder; use 1–128 ASCII letters, digits, `_`, `-`, `.` or `@`"
        )))
    }
}

/// The folder holding a user's memory files (or the shared ones).
fn scope_dir(root: &Path, user: Option<&str>) -> FeedResult<PathBuf> {
    Ok(match user {
        Some(user) => root.join(USERS_DIR).join(valid_user(user)?),
        None => root.to_path_buf(),
    })
}

/// A memory root given on the command line or to a tool, made canonical.
pub fn memory_root(root: &Path) -> FeedResult<PathBuf> {
    if !root.is_dir() {
        return Err(FeedError::NotFound { what: "memory folder", path: root.to_path_buf() });
    }
    root.canonicalize().map_err(|error| FeedError::Unreadable { path: root.to_path_buf(), detail: error.to_string() })
}

/// The wing of a root's memory: its `mempalace.yaml` wing, else its folder
/// name (the wing `mine` files the project in).
pub fn default_wing(root: &Path) -> FeedResult<Wing> {
    for name in mempalace_core::project::CONFIG_FILE_NAMES {
        if let Ok(text) = std::fs::read_to_string(root.join(name))
            && let Ok(config) = ProjectConfig::parse(&text)
        {
            return Ok(Wing::parse(&config.wing)?);
        }
    }
    Ok(Wing::parse(&normalize_wing_name(root.file_name().and_then(|n| n.to_str()).unwrap_or("project")))?)
}

/// What the palace remembers of a memory file between runs (the store's
/// opaque source cursor).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct FileCursor {
    kind: String,
    size: u64,
    mtime_ns: Option<i64>,
    /// Digest of the bytes last filed: an edit is refused unless the file
    /// still has them.
    hash: String,
    wing: String,
    /// The drawer of each paragraph, in file order.
    chunks: Vec<ChunkId>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct ChunkId {
    /// Content hash of the paragraph's text.
    hash: String,
    id: String,
}

fn load_cursor(palace: &Palace, source: &str) -> FeedResult<Option<FileCursor>> {
    Ok(palace
        .source_cursor(source)?
        .and_then(|text| serde_json::from_str::<FileCursor>(&text).ok())
        .filter(|cursor| cursor.kind == CURSOR_KIND))
}

/// How to sync.
#[derive(Debug, Clone)]
pub struct MemorySyncOptions {
    /// Wing of the drawers; default: [`default_wing`].
    pub wing: Option<Wing>,
    /// Who files (`added_by`).
    pub agent: String,
    /// Count what would change; write nothing.
    pub dry_run: bool,
}

impl Default for MemorySyncOptions {
    fn default() -> Self {
        Self { wing: None, agent: "memory-files".to_string(), dry_run: false }
    }
}

/// What a sync found and did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MemorySyncReport {
    /// The memory root.
    pub root: String,
    /// The wing.
    pub wing: String,
    /// Memory files found.
    pub files: usize,
    /// Files whose paragraphs were filed again (changed or new).
    pub refiled: usize,
    /// Files gone (or replaced by `MEMORY.md`) whose drawers were removed.
    pub removed_files: usize,
    /// Drawers new to the palace.
    pub drawers_added: usize,
    /// Drawers already present.
    pub drawers_unchanged: usize,
    /// Drawers of paragraphs (or files) that are gone, removed.
    pub drawers_removed: usize,
    /// Files that could not be read or filed, with the reason.
    pub failed: Vec<FileProblem>,
    /// Whether nothing was written.
    pub dry_run: bool,
}

impl MemorySyncReport {
    fn add(&mut self, filing: SourceFiling) {
        self.drawers_added += filing.added;
        self.drawers_unchanged += filing.unchanged;
        self.drawers_removed += filing.removed;
    }
}

/// Files the memory files of `root` into the palace and removes the
/// drawers of memory files that are gone (see the module doc). Unchanged
/// files cost one `stat`.
pub fn sync(palace: &Palace, root: &Path, options: &MemorySyncOptions) -> FeedResult<MemorySyncReport> {
    let root = memory_root(root)?;
    let wing = match &options.wing {
        Some(wing) => wing.clone(),
        None => default_wing(&root)?,
    };
    let files = memory_files(&root)?;
    let mut report = MemorySyncReport {
        root: root.display().to_string(),
        wing: wing.to_string(),
        files: files.len(),
        dry_run: options.dry_run,
        ..MemorySyncReport::default()
    };
    let mut current: HashSet<String> = HashSet::new();
    for file in &files {
        let source = file.path.display().to_string();
        current.insert(source.clone());
        match sync_file(palace, &root, &wing, &options.agent, file, options.dry_run) {
            Ok((refiled, filing)) => {
                report.refiled += usize::from(refiled);
                report.add(filing);
            }
            Err(FeedError::Engine(error)) if !is_file_problem(&error) => return Err(FeedError::Engine(error)),
            Err(error) => report.failed.push(FileProblem { file: source, error: error.to_string() }),
        }
    }
    // Memory files of this root that the palace has and the disk no longer
    // does (deleted, or `memory.md` now shadowed by a new `MEMORY.md`).
    // Only the room's drawers are read, as each owner sees them: the shared
    // ones and those of every user folder present (a whole user folder
    // removed leaves its drawers; `delete` them, or remove the files first).
    let root_text = root.display().to_string();
    let mut viewers: Vec<Option<String>> = vec![None];
    let users = root.join(USERS_DIR);
    if users.is_dir() {
        let mut names: Vec<String> =
            read_dir_names(&users)?.into_iter().filter(|name| valid_user(name).is_ok()).collect();
        names.sort();
        viewers.extend(names.into_iter().map(Some));
    }
    let mut gone: std::collections::BTreeMap<String, (Option<String>, usize)> = std::collections::BTreeMap::new();
    for viewer in viewers {
        let filter = mempalace_store::DrawerFilter {
            wings: vec![wing.to_string()],
            rooms: vec![MEMORY_ROOM.to_string()],
            viewer,
            ..Default::default()
        };
        let ids = palace.store().filtered_ids(palace.workspace(), &filter).map_err(EngineError::from)?;
        for page in ids.chunks(500) {
            for drawer in palace.store().drawers(palace.workspace(), page).map_err(EngineError::from)? {
                let Some(source) = drawer.source_file else { continue };
                let ours = drawer.context.get(ROOT_KEY).and_then(|v| v.as_str()) == Some(root_text.as_str());
                if ours && !current.contains(&source) {
                    gone.entry(source).or_insert_with(|| (drawer.owner_user_id.clone(), 0)).1 += 1;
                }
            }
        }
    }
    for (source, (owner, drawers)) in gone {
        report.removed_files += 1;
        if options.dry_run {
            report.drawers_removed += drawers;
            continue;
        }
        let filed = palace.file_source_for(&source, owner.as_deref(), Vec::new())?;
        report.drawers_removed += filed.filing.removed;
        palace.set_source_cursor(&source, None)?;
    }
    tracing::info!(
        root = %report.root,
        files = report.files,
        refiled = report.refiled,
        added = report.drawers_added,
        removed = report.drawers_removed,
        "memory files synced"
    );
    Ok(report)
}

/// Whether an engine error belongs to one file (its text refused) rather
/// than to the palace.
fn is_file_problem(error: &mempalace_engine::EngineError) -> bool {
    matches!(error, mempalace_engine::EngineError::Invalid(_))
}

/// Files one memory file when it changed since the palace read it (then
/// `true`, with what filing did); an unchanged one counts its drawers as
/// unchanged.
fn sync_file(
    palace: &Palace,
    root: &Path,
    wing: &Wing,
    agent: &str,
    file: &MemoryFile,
    dry_run: bool,
) -> FeedResult<(bool, SourceFiling)> {
    let source = file.path.display().to_string();
    let (size, mtime_ns) = stat(&file.path).map_err(|error| unreadable(&file.path, error))?;
    let cursor = load_cursor(palace, &source)?;
    if let Some(cursor) = &cursor
        && cursor.size == size
        && cursor.mtime_ns == mtime_ns
        && mtime_ns.is_some()
        && cursor.wing == wing.as_str()
    {
        return Ok((false, SourceFiling { unchanged: cursor.chunks.len(), ..SourceFiling::default() }));
    }
    let text = read_text(&file.path)?;
    let hash = digest(&[text.as_bytes()]);
    if let Some(cursor) = &cursor
        && cursor.hash == hash
        && cursor.wing == wing.as_str()
    {
        if !dry_run {
            let refreshed = FileCursor { size, mtime_ns, ..cursor.clone() };
            palace.set_source_cursor(&source, Some(&serde_json::to_string(&refreshed).unwrap_or_default()))?;
        }
        return Ok((false, SourceFiling { unchanged: cursor.chunks.len(), ..SourceFiling::default() }));
    }
    let previous = cursor.map(|c| c.chunks).unwrap_or_default();
    let plan = Plan { root, wing, agent, file, text: &text, previous: &previous, forced: &HashMap::new() };
    if dry_run {
        let requests = plan.requests()?;
        return Ok((true, palace.plan_source(&source, &requests)?));
    }
    Ok((true, plan.file(palace)?.filing))
}

/// Filing one memory file's text.
struct Plan<'a> {
    root: &'a Path,
    wing: &'a Wing,
    agent: &'a str,
    file: &'a MemoryFile,
    text: &'a str,
    /// The ids the file's paragraphs had, by paragraph text.
    previous: &'a [ChunkId],
    /// Ids chosen for paragraphs (by position): an edited paragraph keeps its drawer's.
    forced: &'a HashMap<usize, DrawerId>,
}

/// What filing a memory file did.
struct Filed {
    filing: SourceFiling,
    ids: Vec<DrawerId>,
    paragraphs: Vec<Paragraph>,
}

impl Plan<'_> {
    /// Each paragraph's id: the one chosen for it, else the one its text
    /// had before (in order of occurrence), else the recipe's.
    fn ids(&self, found: &[Paragraph], room: &Room) -> FeedResult<Vec<DrawerId>> {
        let mut earlier: HashMap<&str, std::collections::VecDeque<&str>> = HashMap::new();
        let forced: HashSet<&DrawerId> = self.forced.values().collect();
        for chunk in self.previous {
            earlier.entry(chunk.hash.as_str()).or_default().push_back(chunk.id.as_str());
        }
        let hashes: Vec<String> =
            found.iter().map(|p| ContentHash::of(p.text(self.text)).as_str().to_string()).collect();
        let mut ids: Vec<Option<DrawerId>> = vec![None; found.len()];
        let mut taken: HashSet<DrawerId> = HashSet::new();
        for (at, hash) in hashes.iter().enumerate() {
            if let Some(id) = self.forced.get(&at) {
                ids[at] = Some(id.clone());
                taken.insert(id.clone());
                continue;
            }
            while let Some(id) = earlier.get_mut(hash.as_str()).and_then(|queue| queue.pop_front()) {
                let id = DrawerId::parse(id)?;
                if !forced.contains(&id) && taken.insert(id.clone()) {
                    ids[at] = Some(id);
                    break;
                }
            }
        }
        let mut occurrences: HashMap<&str, u32> = HashMap::new();
        for (at, paragraph) in found.iter().enumerate() {
            if ids[at].is_some() {
                continue;
            }
            let content = Content::parse(paragraph.text(self.text))?;
            let occurrence = occurrences.entry(hashes[at].as_str()).or_default();
            // A chosen id may equal what the recipe gives another paragraph
            // (an edited paragraph keeps its old id; its old text may come back).
            let id = loop {
                let id = mempalace_core::id::memory_file_drawer_id(
                    self.wing,
                    room,
                    &self.file.relative,
                    *occurrence,
                    &content,
                );
                *occurrence += 1;
                if taken.insert(id.clone()) {
                    break id;
                }
            };
            ids[at] = Some(id);
        }
        Ok(ids.into_iter().flatten().collect())
    }

    fn requests_with(&self) -> FeedResult<(Vec<IngestRequest>, Vec<DrawerId>, Vec<Paragraph>)> {
        let room = Room::parse(MEMORY_ROOM)?;
        let found = paragraphs(self.text);
        let ids = self.ids(&found, &room)?;
        let source = self.file.path.display().to_string();
        let requests = found
            .iter()
            .zip(&ids)
            .enumerate()
            .map(|(index, (paragraph, id))| {
                let text = paragraph.text(self.text);
                let mut request = IngestRequest::new(self.wing.clone(), room.clone(), text, self.agent);
                request.raw = true;
                request.id = Some(id.clone());
                // A stated type files the drawer as processed: the cold
                // path never merges or supersedes a paragraph of a file.
                request.memory_type = Some(classify(text).memory_type);
                request.hall = Hall::parse(detect_hall(text)).ok();
                request.source_file = Some(source.clone());
                request.owner_user_id = self.file.owner.clone();
                request.lines = Some((paragraph.line_start, paragraph.line_end));
                request.chunk_index = Some(index as u32);
                // Filed when the palace first sees the paragraph: the
                // file's time dates its latest edit, of any paragraph.
                request.context.insert(FILE_KEY.into(), json!(self.file.relative));
                request.context.insert(ROOT_KEY.into(), json!(self.root.display().to_string()));
                request
            })
            .collect();
        Ok((requests, ids, found))
    }

    fn requests(&self) -> FeedResult<Vec<IngestRequest>> {
        Ok(self.requests_with()?.0)
    }

    /// Files the paragraphs (replacing the file's earlier drawers) and
    /// stores the cursor.
    fn file(&self, palace: &Palace) -> FeedResult<Filed> {
        let source = self.file.path.display().to_string();
        let (size, mtime_ns) = stat(&self.file.path).map_err(|error| unreadable(&self.file.path, error))?;
        let (requests, ids, found) = self.requests_with()?;
        let filed = palace.file_source_for(&source, self.file.owner.as_deref(), requests)?;
        let cursor = FileCursor {
            kind: CURSOR_KIND.to_string(),
            size,
            mtime_ns,
            hash: digest(&[self.text.as_bytes()]),
            wing: self.wing.to_string(),
            chunks: found
                .iter()
                .zip(&ids)
                .map(|(p, id)| ChunkId {
                    hash: ContentHash::of(p.text(self.text)).as_str().to_string(),
                    id: id.to_string(),
                })
                .collect(),
        };
        palace.set_source_cursor(&source, Some(&serde_json::to_string(&cursor).unwrap_or_default()))?;
        Ok(Filed { filing: filed.filing, ids, paragraphs: found })
    }
}

fn unreadable(path: &Path, error: std::io::Error) -> FeedError {
    if error.kind() == std::io::ErrorKind::NotFound {
        FeedError::NotFound { what: "memory file", path: path.to_path_buf() }
    } else {
        FeedError::Unreadable { path: path.to_path_buf(), detail: error.to_string() }
    }
}

fn read_text(path: &Path) -> FeedResult<String> {
    let bytes = std::fs::read(path).map_err(|error| unreadable(path, error))?;
    String::from_utf8(bytes)
        .map_err(|_| FeedError::Invalid(format!("{} is not UTF-8 text; memory files are Markdown", path.display())))
}

/// The refusal when a file differs from what the palace last read.
fn changed(path: &Path, root: &str) -> FeedError {
    FeedError::Invalid(format!(
        "memory file {} changed since the palace last read it (edited by hand?); nothing was written: \
         run `mempalace memory-files sync {root}` to pick the edit up, then retry",
        path.display()
    ))
}

/// Writes `text` to `path` through a temporary file in the same folder
/// renamed over it, unless the file no longer has the bytes the caller
/// read (`expected`: their digest, or `None` for a file that did not exist).
fn write_atomic(path: &Path, text: &str, expected: Option<&str>, root: &str) -> FeedResult<()> {
    let dir = path.parent().ok_or_else(|| FeedError::Invalid(format!("{} has no folder", path.display())))?;
    std::fs::create_dir_all(dir).map_err(|error| unreadable(dir, error))?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("memory.md");
    let temporary = dir.join(format!(".{name}.mempalace-{}.tmp", std::process::id()));
    let written = (|| -> std::io::Result<()> {
        let mut handle = std::fs::File::create(&temporary)?;
        handle.write_all(text.as_bytes())?;
        handle.sync_all()?;
        if let Ok(meta) = std::fs::metadata(path) {
            std::fs::set_permissions(&temporary, meta.permissions())?;
        }
        Ok(())
    })();
    if let Err(error) = written {
        let _ = std::fs::remove_file(&temporary);
        return Err(unreadable(&temporary, error));
    }
    // Last look before replacing: a hand edit saved since the caller read
    // the file must survive.
    let now = match std::fs::read(path) {
        Ok(bytes) => Some(digest(&[&bytes])),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(error) => {
            let _ = std::fs::remove_file(&temporary);
            return Err(unreadable(path, error));
        }
    };
    if now.as_deref() != expected {
        let _ = std::fs::remove_file(&temporary);
        return Err(changed(path, root));
    }
    std::fs::rename(&temporary, path).map_err(|error| {
        let _ = std::fs::remove_file(&temporary);
        unreadable(path, error)
    })
}

/// A drawer's memory file, when it is a paragraph of one.
struct Link {
    file: MemoryFile,
    root: PathBuf,
}

fn link(drawer: &Drawer) -> Option<Link> {
    let relative = drawer.context.get(FILE_KEY)?.as_str()?;
    let root = drawer.context.get(ROOT_KEY)?.as_str()?;
    let source = drawer.source_file.as_deref()?;
    (drawer.room.as_str() == MEMORY_ROOM).then(|| Link {
        file: MemoryFile {
            path: PathBuf::from(source),
            relative: relative.to_string(),
            owner: drawer.owner_user_id.clone(),
        },
        root: PathBuf::from(root),
    })
}

/// Whether a drawer is a paragraph of a memory file.
pub fn is_memory_file_drawer(drawer: &Drawer) -> bool {
    link(drawer).is_some()
}

enum Change<'a> {
    Replace(&'a str),
    Remove,
}

/// A memory file rewritten on disk, to be filed again.
struct Rewritten {
    text: String,
    previous: Vec<ChunkId>,
    forced: HashMap<usize, DrawerId>,
    wing: Wing,
}

impl Rewritten {
    /// Files the rewritten file (replacing its earlier drawers).
    fn file(&self, palace: &Palace, drawer: &Drawer, link: &Link) -> FeedResult<Filed> {
        Plan {
            root: &link.root,
            wing: &self.wing,
            agent: &drawer.added_by,
            file: &link.file,
            text: &self.text,
            previous: &self.previous,
            forced: &self.forced,
        }
        .file(palace)
    }
}

/// Rewrites the paragraph of `drawer` in its file, refusing when the file
/// is not what the palace last read.
fn rewrite(palace: &Palace, drawer: &Drawer, link: &Link, change: Change<'_>) -> FeedResult<Rewritten> {
    let root_text = link.root.display().to_string();
    let source = link.file.path.display().to_string();
    let text = match read_text(&link.file.path) {
        Err(FeedError::NotFound { .. }) => {
            return Err(FeedError::Invalid(format!(
                "memory file {source} is gone; run `mempalace memory-files sync {root_text}` to drop its drawers"
            )));
        }
        other => other?,
    };
    let cursor = load_cursor(palace, &source)?.ok_or_else(|| changed(&link.file.path, &root_text))?;
    let hash = digest(&[text.as_bytes()]);
    let found = paragraphs(&text);
    if cursor.hash != hash || cursor.chunks.len() != found.len() {
        return Err(changed(&link.file.path, &root_text));
    }
    let Some(index) = cursor.chunks.iter().position(|chunk| chunk.id == drawer.id.as_str()) else {
        return Err(FeedError::Invalid(format!(
            "drawer {} is no longer a paragraph of {source}; run `mempalace memory-files sync {root_text}`",
            drawer.id
        )));
    };
    let paragraph = found[index];
    let new_text = match change {
        Change::Replace(replacement) => replace_paragraph(&text, &paragraph, replacement),
        Change::Remove => remove_paragraph(&text, &paragraph),
    };
    write_atomic(&link.file.path, &new_text, Some(&hash), &root_text)?;
    let mut previous = cursor.chunks.clone();
    previous.remove(index);
    let mut forced = HashMap::new();
    if let Change::Replace(_) = change
        && let Some(first) = paragraphs(&new_text).iter().position(|p| p.start >= paragraph.start)
    {
        // The first paragraph of the replacement keeps the drawer's id.
        forced.insert(first, drawer.id.clone());
    }
    Ok(Rewritten { text: new_text, previous, forced, wing: Wing::parse(&cursor.wing)? })
}

/// Changes a drawer: a paragraph of a memory file is rewritten in its file
/// first (see the module doc); any other drawer is changed in the palace
/// only. A memory-file drawer stays in its wing and room: moving it is
/// refused (move the text between files instead).
pub fn update_drawer(palace: &Palace, id: &DrawerId, update: DrawerUpdate) -> FeedResult<Drawer> {
    let drawer = palace.drawer(id)?;
    let Some(link) = link(&drawer) else { return Ok(palace.update_drawer(id, update)?) };
    let moves = update.wing.as_ref().is_some_and(|w| w != &drawer.wing)
        || update.room.as_ref().is_some_and(|r| r != &drawer.room);
    if moves {
        return Err(FeedError::Invalid(format!(
            "drawer {id} is a paragraph of memory file {}; it stays in wing {} and room {MEMORY_ROOM} \
             (move the text to another file instead)",
            link.file.path.display(),
            drawer.wing
        )));
    }
    let DrawerUpdate { content, reclassify: _, confidence, context, wing: _, room: _ } = update;
    if let Some(content) = content
        && content.as_str().trim() != drawer.content.as_str()
    {
        let rewritten = rewrite(palace, &drawer, &link, Change::Replace(content.as_str()))?;
        if let Some((&at, _)) = rewritten.forced.iter().next() {
            // The drawer keeps its id, access counts and history: its text
            // is changed in place before the file is filed again.
            let text = paragraphs(&rewritten.text)[at].text(&rewritten.text).to_string();
            palace
                .update_drawer(id, DrawerUpdate { content: Some(Content::parse(text)?), ..DrawerUpdate::default() })?;
        }
        rewritten.file(palace, &drawer, &link)?;
    }
    if confidence.is_some() || !context.is_empty() {
        let mut context = context;
        // The link to the file is what makes the drawer a paragraph of it.
        context.remove(FILE_KEY);
        context.remove(ROOT_KEY);
        palace.update_drawer(id, DrawerUpdate { confidence, context, ..DrawerUpdate::default() })?;
    }
    Ok(palace.drawer(id)?)
}

/// Deletes a drawer: a paragraph of a memory file is removed from its file
/// first, then the drawer is deleted as asked (a soft delete keeps it
/// hidden, for review); any other drawer is deleted in the palace only.
pub fn delete_drawer(palace: &Palace, id: &DrawerId, mode: DeleteMode) -> FeedResult<()> {
    let drawer = palace.drawer(id)?;
    if let Some(link) = link(&drawer) {
        let rewritten = rewrite(palace, &drawer, &link, Change::Remove)?;
        // Deleted (or hidden) before the file is filed again, so a soft
        // delete keeps the drawer for review rather than removing it.
        palace.delete_drawer(id, mode)?;
        rewritten.file(palace, &drawer, &link)?;
        return Ok(());
    }
    Ok(palace.delete_drawer(id, mode)?)
}

/// Where [`add`] writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoteTarget {
    /// `MEMORY.md` (or an existing `memory.md` when there is no `MEMORY.md`).
    Main,
    /// Today's `memory/YYYY-MM-DD.md` (GoClaw's auto-flush file).
    Daily,
    /// A memory file by its path under the root: `MEMORY.md`, `memory.md`
    /// or `memory/NAME.md`.
    File(String),
}

/// A memory to add to a file.
#[derive(Debug, Clone)]
pub struct MemoryNote {
    /// The text (one or more paragraphs).
    pub text: String,
    /// Which file.
    pub target: NoteTarget,
    /// Add to this user's own memory (`users/USER/…`) instead of the shared one.
    pub user: Option<String>,
    /// Wing of a file the palace has not filed yet; default: [`default_wing`].
    pub wing: Option<Wing>,
    /// Who files.
    pub agent: String,
}

/// What [`add`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryAdded {
    /// The file, under the memory root (`memory/2026-03-23.md`).
    pub path: String,
    /// Its absolute path.
    pub file: String,
    /// The drawers of the added paragraphs.
    pub drawer_ids: Vec<String>,
    /// Drawers filed and removed in the file (a hand edit not yet synced is filed along).
    pub drawers_added: usize,
    /// Drawers of the file that were already present.
    pub drawers_unchanged: usize,
}

/// Appends a memory to a memory file (creating it and `memory/` as
/// needed) and files the file. Appending never loses a hand edit: the
/// file is read, extended and renamed into place only if it did not change
/// in between, and any unsynced edit is filed along.
pub fn add(palace: &Palace, root: &Path, note: &MemoryNote) -> FeedResult<MemoryAdded> {
    let root = memory_root(root)?;
    let root_text = root.display().to_string();
    let addition = Content::parse(note.text.trim())?;
    let dir = scope_dir(&root, note.user.as_deref())?;
    let name = match &note.target {
        NoteTarget::Main => {
            if !dir.join(MAIN_FILE).is_file()
                && dir.join(FALLBACK_FILE).is_file()
                && has_exact_name(&dir, FALLBACK_FILE)
            {
                FALLBACK_FILE.to_string()
            } else {
                MAIN_FILE.to_string()
            }
        }
        NoteTarget::Daily => format!("{MEMORY_DIR}/{}.md", palace.now().format("%Y-%m-%d")),
        NoteTarget::File(path) => {
            let path = memory_path(path)?;
            let indexed = path == MAIN_FILE
                || path == FALLBACK_FILE
                || (path.starts_with("memory/") && path.matches('/').count() == 1 && is_markdown(&path));
            if !indexed {
                return Err(FeedError::Invalid(format!(
                    "{path} is not a memory file that is indexed; add to MEMORY.md, memory.md or memory/NAME.md"
                )));
            }
            path
        }
    };
    let prefix = match &note.user {
        Some(user) => format!("{USERS_DIR}/{user}/"),
        None => String::new(),
    };
    let file = MemoryFile { path: dir.join(&name), relative: format!("{prefix}{name}"), owner: note.user.clone() };
    let source = file.path.display().to_string();
    let (before, expected) = match std::fs::read(&file.path) {
        Ok(bytes) => {
            let hash = digest(&[&bytes]);
            let text = String::from_utf8(bytes)
                .map_err(|_| FeedError::Invalid(format!("{source} is not UTF-8 text; memory files are Markdown")))?;
            (text, Some(hash))
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => (String::new(), None),
        Err(error) => return Err(unreadable(&file.path, error)),
    };
    let after = append_paragraph(&before, addition.as_str());
    write_atomic(&file.path, &after, expected.as_deref(), &root_text)?;
    let cursor = load_cursor(palace, &source)?;
    let wing = match (&cursor, &note.wing) {
        (Some(cursor), _) => Wing::parse(&cursor.wing)?,
        (None, Some(wing)) => wing.clone(),
        (None, None) => default_wing(&root)?,
    };
    let previous = cursor.map(|c| c.chunks).unwrap_or_default();
    let plan = Plan {
        root: &root,
        wing: &wing,
        agent: &note.agent,
        file: &file,
        text: &after,
        previous: &previous,
        forced: &HashMap::new(),
    };
    let filed = plan.file(palace)?;
    let kept = before.trim_end().len();
    let drawer_ids = filed
        .paragraphs
        .iter()
        .zip(&filed.ids)
        .filter(|(p, _)| p.start >= kept)
        .map(|(_, id)| id.to_string())
        .collect();
    Ok(MemoryAdded {
        path: file.relative,
        file: source,
        drawer_ids,
        drawers_added: filed.filing.added,
        drawers_unchanged: filed.filing.unchanged,
    })
}

/// A path under a memory root as given by a caller, checked: relative,
/// `/`-separated, without `..`, naming `MEMORY.md`, `memory.md` or a file
/// under `memory/`.
fn memory_path(path: &str) -> FeedResult<String> {
    let trimmed = path.trim();
    let parts: Vec<&str> = Path::new(trimmed)
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_str()),
            Component::CurDir => None,
            // `..`, a root or a drive prefix: recorded as an escape below.
            _ => Some(None),
        })
        .collect::<Option<Vec<&str>>>()
        .ok_or_else(|| escape(path))?;
    if trimmed.is_empty() || parts.is_empty() {
        return Err(FeedError::Invalid(
            "give the memory file's path, such as MEMORY.md or memory/2026-03-23.md".into(),
        ));
    }
    if trimmed.starts_with('/') || trimmed.starts_with('\\') {
        return Err(escape(path));
    }
    let joined = parts.join("/");
    let allowed = joined == MAIN_FILE || joined == FALLBACK_FILE || (parts.len() >= 2 && parts[0] == MEMORY_DIR);
    if !allowed {
        return Err(FeedError::Invalid(format!(
            "{path} is not a memory file; give MEMORY.md, memory.md or memory/NAME under the memory root \
             (a user's own files are read with the user, not by their users/ path)"
        )));
    }
    Ok(joined)
}

fn escape(path: &str) -> FeedError {
    FeedError::Invalid(format!(
        "path {path:?} leaves the memory root; give a path under it, such as MEMORY.md or memory/2026-03-23.md"
    ))
}

/// A memory file, or lines of it, as [`read`] returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryRead {
    /// The file under its scope's folder, as asked (`memory.md` when it
    /// answered for an absent `MEMORY.md`).
    pub path: String,
    /// `user` when the user's own file answered, else `shared`.
    pub scope: &'static str,
    /// First line returned (1-based).
    pub from: usize,
    /// Last line returned (`from - 1` when none was).
    pub to: usize,
    /// Lines in the file.
    pub total_lines: usize,
    /// The lines, verbatim.
    pub text: String,
}

/// Reads a memory file, or `lines` lines of it from line `from` (1-based),
/// by its path under the memory root: with a user, their own file
/// (`users/USER/PATH`) when it exists, else the shared one (seed 2, team
/// memory: "reads from the member's own memory first"). `MEMORY.md` falls
/// back to `memory.md`.
pub fn read(
    root: &Path,
    path: &str,
    user: Option<&str>,
    from: Option<usize>,
    lines: Option<usize>,
) -> FeedResult<MemoryRead> {
    let root = memory_root(root)?;
    let relative = memory_path(path)?;
    if from == Some(0) {
        return Err(FeedError::Invalid("from counts lines from 1; give 1 or more".into()));
    }
    if lines == Some(0) {
        return Err(FeedError::Invalid("lines must be 1 or more (leave it out to read to the end)".into()));
    }
    let mut scopes: Vec<(&'static str, PathBuf)> = Vec::new();
    if let Some(user) = user {
        scopes.push(("user", scope_dir(&root, Some(user))?));
    }
    scopes.push(("shared", root.clone()));
    for (scope, dir) in scopes {
        let mut names = vec![relative.clone()];
        if relative == MAIN_FILE {
            names.push(FALLBACK_FILE.to_string());
        }
        for name in names {
            let candidate = dir.join(&name);
            if !candidate.is_file() || (name == FALLBACK_FILE && !has_exact_name(&dir, FALLBACK_FILE)) {
                continue;
            }
            let real = candidate
                .canonicalize()
                .map_err(|error| FeedError::Unreadable { path: candidate.clone(), detail: error.to_string() })?;
            if !real.starts_with(&root) {
                return Err(escape(path));
            }
            let text = read_text(&real)?;
            return slice(name, scope, &text, from.unwrap_or(1), lines);
        }
    }
    let looked = match user {
        Some(user) => format!("{USERS_DIR}/{user}/{relative} nor {relative}"),
        None => relative.clone(),
    };
    Err(FeedError::NotFound { what: "memory file", path: root.join(looked) })
}

fn slice(path: String, scope: &'static str, text: &str, from: usize, lines: Option<usize>) -> FeedResult<MemoryRead> {
    let all: Vec<&str> = text.split_inclusive('\n').collect();
    let total_lines = all.len();
    if from > total_lines.max(1) {
        return Err(FeedError::Invalid(format!(
            "from {from} is past the end of {path}, which has {total_lines} lines"
        )));
    }
    let start = from - 1;
    let end = lines.map_or(total_lines, |n| start.saturating_add(n).min(total_lines));
    let text: String = all.get(start..end).map(|l| l.concat()).unwrap_or_default();
    Ok(MemoryRead { path, scope, from, to: end, total_lines, text })
}

/// One memory file and how it stands with the palace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryFileState {
    /// Path under the memory root.
    pub path: String,
    /// Its owner, for a user's file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Paragraphs in the file now.
    pub paragraphs: usize,
    /// Drawers the palace has of it.
    pub drawers: usize,
    /// `synced`, `changed` (edited since the last sync) or `new` (never synced).
    pub state: &'static str,
}

/// The memory files of `root` and whether the palace is up to date with each.
pub fn list(palace: &Palace, root: &Path) -> FeedResult<Vec<MemoryFileState>> {
    let root = memory_root(root)?;
    let mut out = Vec::new();
    for file in memory_files(&root)? {
        let text = read_text(&file.path)?;
        let cursor = load_cursor(palace, &file.path.display().to_string())?;
        let state = match &cursor {
            None => "new",
            Some(cursor) if cursor.hash == digest(&[text.as_bytes()]) => "synced",
            Some(_) => "changed",
        };
        out.push(MemoryFileState {
            path: file.relative,
            owner: file.owner,
            paragraphs: paragraphs(&text).len(),
            drawers: cursor.map_or(0, |c| c.chunks.len()),
            state,
        });
    }
    Ok(out)
}
