//! Mining throughput: a synthetic corpus of Claude Code transcripts
//! (files × messages, realistic sizes) mined by the real binary with each
//! embedder, peak RSS of the miner, and a re-run with nothing changed.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use serde_json::{Value, json};

use crate::corpus::drawer_text;

/// Writes `files` transcripts of `messages` messages each (alternating
/// user and assistant) under `dir`.
fn write_corpus(dir: &Path, files: usize, messages: usize) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut index = 0_u64;
    for file in 0..files {
        let mut out = std::io::BufWriter::new(std::fs::File::create(dir.join(format!("session-{file:05}.jsonl")))?);
        for message in 0..messages {
            index += 1;
            let text = drawer_text(index);
            let (kind, body) = if message % 2 == 0 {
                ("user", json!(text.chars().take(300).collect::<String>()))
            } else {
                ("assistant", json!([{"type": "text", "text": text}]))
            };
            let parent = (message > 0).then(|| format!("f{file}-m{}", message - 1));
            let line = json!({"type": kind, "uuid": format!("f{file}-m{message}"), "parentUuid": parent,
                "sessionId": format!("session-{file}"),
                "cwd": "/home/bench/project", "timestamp": "2025-06-01T10:00:00Z",
                "message": {"id": format!("msg-{file}-{message}"), "role": kind, "content": body}});
            writeln!(out, "{line}")?;
        }
    }
    Ok(())
}

/// Rewrites every file with its own bytes (a new modification time).
fn touch_all(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let bytes = std::fs::read(&path)?;
        std::fs::write(&path, bytes)?;
    }
    Ok(())
}

/// Appends a user message and its reply to every transcript.
fn append_exchange(dir: &Path, files: usize, messages: usize) -> Result<()> {
    for file in 0..files {
        let path = dir.join(format!("session-{file:05}.jsonl"));
        let mut out = std::fs::OpenOptions::new().append(true).open(&path)?;
        let mut parent = format!("f{file}-m{}", messages - 1);
        for (kind, body) in [
            ("user", json!(format!("Follow-up {file}: what changed in the deployment since last week?"))),
            ("assistant", json!([{"type": "text", "text": drawer_text(1_000_000 + file as u64)}])),
        ] {
            let uuid = format!("f{file}-{kind}-grown");
            let line = json!({"type": kind, "uuid": uuid, "parentUuid": parent, "sessionId": format!("session-{file}"),
                "cwd": "/home/bench/project", "timestamp": "2025-06-02T10:00:00Z",
                "message": {"id": format!("msg-{file}-{kind}-grown"), "role": kind, "content": body}});
            writeln!(out, "{line}")?;
            parent = uuid;
        }
    }
    Ok(())
}

/// Runs the miner, polling its peak RSS; returns (seconds, summary, peak MB).
fn mine(binary: &Path, models: &Path, embedder: &str, palace: &Path, corpus: &Path) -> Result<(f64, Value, f64)> {
    let started = Instant::now();
    let mut child = Command::new(binary)
        .args(["--model-dir"])
        .arg(models)
        .args(["--embedder", embedder, "--palace"])
        .arg(palace)
        .args(["mine"])
        .arg(corpus)
        .args(["--mode", "convos", "--json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting mempalace mine")?;
    let status_file = PathBuf::from(format!("/proc/{}/status", child.id()));
    let mut peak_kb = 0_u64;
    loop {
        if let Ok(status) = std::fs::read_to_string(&status_file)
            && let Some(kb) = status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        {
            peak_kb = peak_kb.max(kb);
        }
        if child.try_wait()?.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output()?;
    if !output.status.success() {
        bail!("mempalace mine failed");
    }
    let seconds = started.elapsed().as_secs_f64();
    let summary: Value = serde_json::from_slice(&output.stdout).context("mine --json output")?;
    Ok((seconds, summary, peak_kb as f64 / 1024.0))
}

/// The benchmark.
pub fn run(
    binary: &Path,
    models: &Path,
    files: usize,
    messages: usize,
    embedders: &[String],
) -> Result<(Value, Value)> {
    let scratch = std::env::temp_dir().join(format!("mempalace-bench-mine-{}", std::process::id()));
    let mut results = Vec::new();
    for embedder in embedders {
        let corpus = scratch.join(format!("corpus-{embedder}"));
        write_corpus(&corpus, files, messages)?;
        let palace = scratch.join(format!("palace-{embedder}"));
        let (seconds, summary, peak_mb) = mine(binary, models, embedder, &palace, &corpus)?;
        let drawers = summary["drawers_added"].as_u64().unwrap_or(0);
        let (rerun_seconds, rerun, _) = mine(binary, models, embedder, &palace, &corpus)?;
        // Every file touched (new modification time, same bytes): each is
        // read and hashed, nothing is filed.
        touch_all(&corpus)?;
        let (touched_seconds, touched, _) = mine(binary, models, embedder, &palace, &corpus)?;
        // Every transcript grows by one exchange: only the tails are read.
        append_exchange(&corpus, files, messages)?;
        let (grown_seconds, grown, grown_peak_mb) = mine(binary, models, embedder, &palace, &corpus)?;
        results.push(json!({
            "embedder": embedder,
            "files": files,
            "messages": files * messages,
            "drawers": drawers,
            "seconds": seconds,
            "drawers_per_second": drawers as f64 / seconds,
            "peak_rss_mb": peak_mb.max(grown_peak_mb),
            "rerun_seconds": rerun_seconds,
            "rerun_drawers_added": rerun["drawers_added"],
            "touched_seconds": touched_seconds,
            "touched_drawers_added": touched["drawers_added"],
            "grown_seconds": grown_seconds,
            "grown_drawers_added": grown["drawers_added"],
            "grown_drawers_removed": grown["drawers_removed"],
        }));
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok((json!({"runs": results}), json!({})))
}
