//! GoClaw's memory files over MCP (seed 2, "Memory File Variants" and
//! "Team Memory Sharing"): `memory_get` reads `MEMORY.md` or a
//! `memory/*.md` file, whole or a line range, the user's own copy first;
//! `memory_append` saves a memory as a new paragraph of one. Both work in
//! the server's memory root (`Backend::with_memory_root`); the files and
//! the palace are kept in step by `mempalace_feed::memory`, so what is
//! appended is searchable at once.

use mempalace_feed::memory::{self, MemoryNote, NoteTarget};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{failure, reply, required_text};
use crate::context::Backend;
use crate::registry::{Family, ToolError, ToolResult, ToolSpec};

const F: Family = Family::Memory;

/// The tools of this family.
pub fn tools() -> Vec<ToolSpec> {
    vec![
        ToolSpec::new(
            "memory_get",
            F,
            "Read a memory file — MEMORY.md, memory.md or a file under memory/ (e.g. memory/2026-03-23.md) — \
             whole or a range of lines, by its path relative to the memory root. With user_id, that user's own \
             file is read when it exists, else the shared one. Use it to read around a memory_search hit.",
            get,
        )
        .read_only(),
        ToolSpec::new(
            "memory_append",
            F,
            "Save a memory to the memory files: appended as a new paragraph to MEMORY.md (default), to today's \
             memory/YYYY-MM-DD.md (daily: true), or to a named memory/NAME.md file; indexed and searchable at \
             once. With user_id, it goes to that user's own memory.",
            append,
        ),
    ]
}

fn root(backend: &Backend) -> Result<&std::path::Path, ToolError> {
    backend.memory_root().ok_or_else(|| {
        failure(
            "this server has no memory root; start it in the agent's or project's folder, or set memory_dir \
             (config.json) or MEMPALACE_MEMORY_DIR",
        )
    })
}

fn user(text: Option<String>) -> Option<String> {
    text.map(|u| u.trim().to_string()).filter(|u| !u.is_empty())
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Get {
    /// Path of the memory file relative to the memory root, e.g. MEMORY.md or memory/2026-03-23.md
    path: String,
    /// First line to read, counted from 1 (default 1)
    #[serde(default)]
    #[schemars(range(min = 1))]
    from: Option<i64>,
    /// How many lines to read from there (default: to the end of the file)
    #[serde(default)]
    #[schemars(range(min = 1))]
    lines: Option<i64>,
    /// Read this user's own memory file first, else the shared one (optional)
    #[serde(default)]
    user_id: Option<String>,
}

fn positive(field: &str, value: Option<i64>) -> Result<Option<usize>, ToolError> {
    value
        .map(|n| {
            usize::try_from(n).ok().filter(|n| *n >= 1).ok_or_else(|| ToolError::param(field, "must be 1 or more"))
        })
        .transpose()
}

fn get(backend: &Backend, p: Get) -> ToolResult {
    let path = required_text("path", &p.path)?;
    let from = positive("from", p.from)?;
    let lines = positive("lines", p.lines)?;
    let read = memory::read(root(backend)?, path, user(p.user_id).as_deref(), from, lines)?;
    reply(MemoryText {
        from: read.from,
        path: read.path,
        scope: read.scope,
        text: read.text,
        to: read.to,
        total_lines: read.total_lines,
    })
}

/// `memory_get`: a memory file, or lines of it.
#[derive(Serialize)]
struct MemoryText {
    /// First line returned (1-based).
    from: usize,
    /// The file, as asked.
    path: String,
    /// `user` or `shared`: whose file answered.
    scope: &'static str,
    /// The lines, verbatim.
    text: String,
    /// Last line returned.
    to: usize,
    /// Lines in the file.
    total_lines: usize,
}

#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Append {
    /// The memory to save, in Markdown (one or more paragraphs)
    content: String,
    /// Append to today's memory/YYYY-MM-DD.md instead of MEMORY.md (optional)
    #[serde(default)]
    daily: Option<bool>,
    /// Append to this memory file instead: MEMORY.md, memory.md or memory/NAME.md (optional)
    #[serde(default)]
    file: Option<String>,
    /// Save to this user's own memory instead of the shared one (optional)
    #[serde(default)]
    user_id: Option<String>,
}

fn append(backend: &Backend, p: Append) -> ToolResult {
    let content = required_text("content", &p.content)?;
    let file = p.file.map(|f| f.trim().to_string()).filter(|f| !f.is_empty());
    let target = match (p.daily.unwrap_or(false), file) {
        (true, Some(_)) => return Err(ToolError::param("file", "give either daily or file, not both")),
        (true, None) => NoteTarget::Daily,
        (false, Some(file)) => NoteTarget::File(file),
        (false, None) => NoteTarget::Main,
    };
    let note = MemoryNote { text: content.to_string(), target, user: user(p.user_id), wing: None, agent: "mcp".into() };
    let added = memory::add(backend.palace(), root(backend)?, &note)
        .map_err(|error| super::as_write_failure(ToolError::from(error)))?;
    reply(Appended { drawer_ids: added.drawer_ids, path: added.path, success: true })
}

/// `memory_append`: the file appended to and the paragraphs' drawers.
#[derive(Serialize)]
struct Appended {
    drawer_ids: Vec<String>,
    /// The file, under the memory root.
    path: String,
    success: bool,
}
