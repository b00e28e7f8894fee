//! `daemon` and `palace`: Python MemPalace verbs with nothing to do here,
//! accepted with their arguments so a script that calls them gets one line
//! saying what to use instead (exit 2).
//!
//! The Python daemon queues writes because ChromaDB needs one writer; here
//! every process writes the palace safely (SQLite transactions with retries,
//! or PostgreSQL), and `serve` is the long-lived server. `palace
//! set-embedder` records a palace-wide embedder identity; here every vector
//! carries its model's id, so switching models is `--embedder` plus
//! `reembed`.

use anyhow::Result;
use clap::Args;

use super::UserError;

/// `daemon …` (any action and flags).
#[derive(Debug, Args)]
pub struct DaemonArgs {
    /// The Python MemPalace's action and flags (start, stop, status, jobs, wait); accepted, nothing runs.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    args: Vec<String>,
}

/// `palace …` (any action and flags).
#[derive(Debug, Args)]
pub struct PalaceArgs {
    /// The Python MemPalace's action and flags (set-embedder [--model M] [--force]); accepted, nothing changes.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    args: Vec<String>,
}

/// Explains that no daemon is needed.
pub fn daemon(_args: DaemonArgs) -> Result<()> {
    Err(UserError(
        "mempalace-rs needs no daemon: every process writes the palace safely, so mine, sweep, sync and hooks run \
         directly; `mempalace serve --mcp-http ADDR` is the long-lived server (MCP over HTTP and the background jobs), \
         `mempalace work` runs the jobs alone"
            .into(),
    )
    .into())
}

/// Explains where the embedder identity lives.
pub fn palace(_args: PalaceArgs) -> Result<()> {
    Err(UserError(
        "a mempalace-rs palace has no embedder identity to set: every vector carries its model's id; choose the model \
         with --embedder (or `embedder` in config.json), run `mempalace reembed` to give every drawer a vector of it, \
         and see what is configured with `mempalace model status`"
            .into(),
    )
    .into())
}
