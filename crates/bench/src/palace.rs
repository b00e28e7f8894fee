//! The store benchmark (issue 2): `status` latency on a large palace and
//! `import` throughput, both measured through the real `mempalace` binary
//! (process start included), plus the in-process aggregate read for
//! comparison. No embedding is involved.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use mempalace_core::{Content, Drawer, Room, Wing, WorkspaceId};
use mempalace_sqlite::{SqliteOptions, SqliteStore};
use mempalace_store::{StoreRead, StoreWrite};
use serde_json::{Value, json};

use crate::corpus;
use crate::report::summarize;

/// Parameters of one run.
pub struct PalaceBench {
    /// The `mempalace` binary to drive.
    pub binary: PathBuf,
    /// Drawers in the palace `status` runs on.
    pub status_drawers: u64,
    /// `status` runs to time.
    pub status_runs: usize,
    /// Drawers in the timed import.
    pub import_drawers: u64,
    /// Timed imports (each into a fresh palace).
    pub import_runs: usize,
    /// Keep the palaces in this directory instead of a temporary one.
    pub scratch: Option<PathBuf>,
}

fn drawer(index: u64, now: mempalace_core::Timestamp) -> Drawer {
    let ws = WorkspaceId::default_workspace();
    let wing = Wing::parse(&format!("wing{}", index % 20)).expect("bench wing");
    let room = Room::parse(&format!("room{}", index % 37)).expect("bench room");
    Drawer::new(ws, wing, room, Content::parse(corpus::drawer_text(index)).expect("bench text"), "bench", now)
}

/// Fills a new palace at `file` with `n` drawers in-process (fast path; not timed).
fn fill(file: &Path, n: u64) -> Result<()> {
    let store = SqliteStore::open(file, SqliteOptions { create: true, ..SqliteOptions::default() })?;
    let now = chrono::Utc::now();
    let mut index = 0;
    while index < n {
        let batch: Vec<Drawer> = (index..(index + 5_000).min(n)).map(|i| drawer(i, now)).collect();
        store.put_drawers(&batch)?;
        index += batch.len() as u64;
    }
    let total = store.taxonomy(&WorkspaceId::default_workspace())?.total_drawers;
    if total != n {
        bail!("filled palace holds {total} drawers, expected {n}");
    }
    Ok(())
}

fn mempalace(binary: &Path, palace: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(binary);
    command.arg("--palace").arg(palace).args(args).stdin(Stdio::null()).stderr(Stdio::inherit());
    command
}

fn timed(mut command: Command) -> Result<(f64, Vec<u8>)> {
    let started = Instant::now();
    let output = command.output().context("running mempalace")?;
    let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    if !output.status.success() {
        bail!("mempalace failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    Ok((elapsed_ms, output.stdout))
}

/// Runs the benchmark; returns (summary, samples).
pub fn run(bench: &PalaceBench) -> Result<(Value, Value)> {
    let temporary = tempfile::tempdir()?;
    let scratch_dir = bench.scratch.clone().unwrap_or_else(|| temporary.path().to_path_buf());
    std::fs::create_dir_all(&scratch_dir)?;

    // status on a large palace.
    let big = scratch_dir.join("big.db");
    eprintln_note(&format!("filling a palace with {} drawers", bench.status_drawers));
    fill(&big, bench.status_drawers)?;
    let warm = mempalace(&bench.binary, &big, &["status", "--json"]).output()?;
    let status: Value = serde_json::from_slice(&warm.stdout).context("status --json output")?;
    if status["total_drawers"].as_u64() != Some(bench.status_drawers) {
        bail!("status reported {} drawers", status["total_drawers"]);
    }
    let mut status_ms = Vec::with_capacity(bench.status_runs);
    for _ in 0..bench.status_runs {
        status_ms.push(timed(mempalace(&bench.binary, &big, &["status"]))?.0);
    }
    let store = SqliteStore::open(&big, SqliteOptions::default())?;
    let store: Arc<dyn mempalace_store::Store> = Arc::new(store);
    let mut taxonomy_ms = Vec::new();
    for _ in 0..200 {
        let started = Instant::now();
        store.taxonomy(&WorkspaceId::default_workspace())?;
        taxonomy_ms.push(started.elapsed().as_secs_f64() * 1e3);
    }

    // import throughput: export a palace of import_drawers, import it into fresh palaces.
    let source = scratch_dir.join("source.db");
    fill(&source, bench.import_drawers)?;
    let export = scratch_dir.join("export.jsonl");
    let output =
        mempalace(&bench.binary, &source, &["export", "--out", export.to_str().context("utf-8 path")?]).output()?;
    if !output.status.success() {
        bail!("export failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let mut import_ms = Vec::with_capacity(bench.import_runs);
    for run in 0..bench.import_runs {
        let target = scratch_dir.join(format!("import-{run}.db"));
        let (elapsed, _) =
            timed(mempalace(&bench.binary, &target, &["import", export.to_str().context("utf-8 path")?]))?;
        import_ms.push(elapsed);
    }
    let mut sorted_import = import_ms.clone();
    sorted_import.sort_by(f64::total_cmp);
    let median_import_ms = crate::report::percentile(&sorted_import, 50.0);

    let summary = json!({
        "status_process": summarize(&status_ms),
        "status_drawers": bench.status_drawers,
        "taxonomy_in_process": summarize(&taxonomy_ms),
        "import": summarize(&import_ms),
        "import_drawers": bench.import_drawers,
        "import_drawers_per_s": bench.import_drawers as f64 / (median_import_ms / 1e3),
        "palace_bytes_at_status_drawers": std::fs::metadata(&big)?.len(),
    });
    let samples = json!({"status_ms": status_ms, "taxonomy_ms": taxonomy_ms, "import_ms": import_ms});
    Ok((summary, samples))
}

#[allow(clippy::print_stderr)]
fn eprintln_note(text: &str) {
    eprintln!("{text}");
}
