//! Feeding a palace from files: project trees (documents first),
//! conversations (agent transcripts and chat exports), opencode sessions,
//! and `sync`, which removes the drawers of files that are gone.
//!
//! The parsers in `mempalace-mine` turn text into conversations; this crate
//! walks the files, decides what is new since the last run (each source's
//! cursor, kept by the store), files the drawers through
//! [`Palace::file_source`] (a changed file's drawers replaced in one
//! transaction) and reports what it read, skipped and filed, per file. The
//! CLI (`mine`, `sync`, hooks) and the MCP tools (`mempalace_mine`,
//! `mempalace_sync`) are thin over [`mine`], [`mine_transcript`] and
//! [`sync::sync`]; they differ only in how they print.
//!
//! A file that cannot be read or is not of a known format is reported and
//! skipped; a run fails only when nothing at all could be mined.

mod bundle;
mod convos;
mod error;
mod files;
mod general;
pub mod memory;
mod opencode;
mod project;
pub mod schedule;
pub mod sweep;
pub mod sync;

use std::path::{Path, PathBuf};

use mempalace_core::{Room, Timestamp, Wing};
use mempalace_engine::Palace;
use mempalace_engine::drawers::SourceFiling;
use serde::{Deserialize, Serialize};

pub use convos::{TranscriptOptions, TranscriptOutcome, mine_transcript};
pub use error::{FeedError, FeedResult};
pub use opencode::mine_opencode_session;

/// What the files are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// A project tree: documents first, rooms from `mempalace.yaml`.
    Projects,
    /// Conversations: agent transcripts, chat exports, plain text.
    Convos,
    /// opencode sessions, read from its SQLite database.
    Opencode,
}

impl Mode {
    /// The name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Projects => "projects",
            Self::Convos => "convos",
            Self::Opencode => "opencode",
        }
    }
}

/// How conversations become drawers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Extract {
    /// One drawer per exchange (a human turn and its reply), plus a header
    /// per conversation (title, directory, date).
    #[default]
    Exchange,
    /// Memories picked out of the conversation by the heuristic classifier
    /// (decisions, preferences, milestones, problems, emotional moments),
    /// each filed in the room named by its type.
    General,
}

impl Extract {
    /// The name used on the command line and in cursors.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Exchange => "exchange",
            Self::General => "general",
        }
    }
}

/// Which conversations to mine (all when empty).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// Only conversations with a message at or after this time.
    pub since: Option<Timestamp>,
    /// Only conversations with at least this many messages.
    pub min_messages: Option<usize>,
    /// Only the conversation with this session id.
    pub session: Option<String>,
}

impl Selection {
    /// Whether any filter is set. A filtered run files what it selects and
    /// removes nothing: it does not see the whole file.
    pub fn is_active(&self) -> bool {
        self.since.is_some() || self.min_messages.is_some() || self.session.is_some()
    }
}

/// How to mine.
#[derive(Debug, Clone)]
pub struct MineOptions {
    /// What the files are.
    pub mode: Mode,
    /// Wing for every drawer; default: the project's (mempalace.yaml or its
    /// folder name), else a conversation's directory name, else
    /// `conversations`.
    pub wing: Option<Wing>,
    /// Room for conversations.
    pub room: Room,
    /// Who files.
    pub agent: String,
    /// Only the first N files (sessions with opencode).
    pub limit: Option<usize>,
    /// Count what would be filed; write nothing.
    pub dry_run: bool,
    /// Conversations: exchanges or extracted memories.
    pub extract: Extract,
    /// Conversations and opencode sessions to mine.
    pub selection: Selection,
    /// Projects: honour `.gitignore`.
    pub gitignore: bool,
    /// Projects: mine these ignored paths anyway (relative to the project).
    pub include_ignored: Vec<PathBuf>,
    /// Projects: mine source code as well as documents.
    pub include_code: bool,
}

impl MineOptions {
    /// Defaults for a mode: room `conversations`, agent `mine`, gitignore honoured.
    pub fn new(mode: Mode) -> Self {
        Self {
            mode,
            wing: None,
            room: Room::parse("conversations").expect("a valid room name"),
            agent: "mine".to_string(),
            limit: None,
            dry_run: false,
            extract: Extract::Exchange,
            selection: Selection::default(),
            gitignore: true,
            include_ignored: Vec::new(),
            include_code: false,
        }
    }
}

/// A file (or session) that was not mined, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileProblem {
    /// The file, folder or session.
    pub file: String,
    /// Why.
    pub error: String,
}

/// What a mining run did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct MineReport {
    /// Files found (sessions with opencode).
    pub files: usize,
    /// Files read (unchanged ones included).
    pub read: usize,
    /// Files that are not of a known format, with the reason.
    pub skipped: Vec<FileProblem>,
    /// Files that could not be read, with the error.
    pub failed: Vec<FileProblem>,
    /// Drawers new to the palace (in a dry run: that would be).
    pub drawers_added: usize,
    /// Drawers already present.
    pub drawers_unchanged: usize,
    /// Drawers of earlier versions removed (in a dry run: that would be).
    pub drawers_removed: usize,
    /// Records skipped inside files (malformed lines, empty messages).
    pub records_skipped: usize,
    /// Conversations left out by the selection (or opencode sessions by
    /// its rules: sub-agents, too short).
    pub conversations_skipped: usize,
    /// Projects: the wing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wing: Option<String>,
    /// Whether nothing was written.
    pub dry_run: bool,
    /// Seconds the run took.
    pub seconds: f64,
}

impl MineReport {
    fn add_filing(&mut self, filing: SourceFiling) {
        self.drawers_added += filing.added;
        self.drawers_unchanged += filing.unchanged;
        self.drawers_removed += filing.removed;
    }
}

/// Where opencode keeps its database under a home folder.
pub fn default_opencode_db(home: &Path) -> PathBuf {
    home.join(".local/share/opencode/opencode.db")
}

/// Progress of a run: files done, files in all, drawers added so far.
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize, usize);

/// Mines `path` (a project folder, a transcript file or folder, an export;
/// for opencode, its database, or `None` for the default location under
/// `home`). Unchanged files cost nothing; a grown transcript is read from
/// where the last run stopped.
pub fn mine(
    palace: &Palace,
    path: Option<&Path>,
    home: Option<&Path>,
    options: &MineOptions,
    progress: Progress<'_>,
) -> FeedResult<MineReport> {
    let started = std::time::Instant::now();
    let mut report = match options.mode {
        Mode::Projects => {
            let Some(root) = path else {
                return Err(FeedError::Invalid(
                    "give the project folder to mine, e.g. `mempalace mine ~/projects/lab-notes`".into(),
                ));
            };
            project::mine(palace, root, options, progress)?
        }
        Mode::Convos => {
            let Some(path) = path else {
                return Err(FeedError::Invalid(
                    "give the transcript file or folder to mine, e.g. `mempalace mine ~/.claude/projects --mode convos`"
                        .into(),
                ));
            };
            convos::mine(palace, path, options, progress)?
        }
        Mode::Opencode => {
            let db =
                match path {
                    Some(path) => path.to_path_buf(),
                    None => default_opencode_db(home.ok_or_else(|| {
                        FeedError::Invalid("HOME is not set; give the opencode database's path".into())
                    })?),
                };
            opencode::mine(palace, &db, options)?
        }
    };
    report.dry_run = options.dry_run;
    report.seconds = started.elapsed().as_secs_f64();
    Ok(report)
}
