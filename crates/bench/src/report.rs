//! Where and how results are recorded: `bench/results/<date>-<machine>/`
//! with a README (command, git revision, machine), the raw samples and a
//! summary, as STYLE §8 asks.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, Result};
use serde_json::{Value, json};

/// Percentile of sorted samples (nearest rank).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// p50/p95/min/max of samples in milliseconds.
pub fn summarize(samples_ms: &[f64]) -> Value {
    let mut sorted = samples_ms.to_vec();
    sorted.sort_by(f64::total_cmp);
    json!({
        "n": sorted.len(),
        "p50_ms": percentile(&sorted, 50.0),
        "p95_ms": percentile(&sorted, 95.0),
        "min_ms": sorted.first(),
        "max_ms": sorted.last(),
    })
}

fn command_output(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string())
        .unwrap_or_default()
}

/// A description of this machine and build.
pub fn machine() -> Value {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_default();
    json!({
        "cpu": cpu,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
        "kernel": command_output("uname", &["-r"]),
        "rustc": command_output("rustc", &["--version"]),
        "git_revision": command_output("git", &["rev-parse", "--short", "HEAD"]),
        "git_dirty": !command_output("git", &["status", "--porcelain", "--untracked-files=no"]).is_empty(),
    })
}

/// The command line as a results folder records it, without this
/// machine's layout: paths inside the checkout relative to it, the value of
/// `--models` as `"$MEMPALACE_MODEL_DIR"`, any other absolute path as
/// `…/` and its last component.
pub fn portable_command(args: &[String], checkout: &Path) -> String {
    let mut out = Vec::with_capacity(args.len());
    let mut after_models = false;
    for arg in args {
        let (flag, value) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (Some(flag), value),
            _ => (None, arg.as_str()),
        };
        let models = after_models || flag == Some("--models");
        after_models = arg == "--models";
        let path = Path::new(value);
        let portable = if !path.is_absolute() {
            value.to_string()
        } else if models {
            "\"$MEMPALACE_MODEL_DIR\"".to_string()
        } else if let Ok(inside) = path.strip_prefix(checkout) {
            inside.display().to_string()
        } else {
            format!("…/{}", path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default())
        };
        out.push(match flag {
            Some(flag) => format!("{flag}={portable}"),
            None => portable,
        });
    }
    out.join(" ")
}

/// The checkout the benchmark runs in: git's top level, else the current
/// directory.
pub fn checkout() -> PathBuf {
    let top = command_output("git", &["rev-parse", "--show-toplevel"]);
    if top.is_empty() { std::env::current_dir().unwrap_or_default() } else { PathBuf::from(top) }
}

/// Writes `summary.json`, `samples.json` and `README.md` into a new
/// directory `root/<date>-<host>-<name>/` (`…-2`, `…-3` when a run of the
/// same day is there already: recorded results are never overwritten) and
/// returns it.
pub fn write(root: &Path, name: &str, command_line: &str, summary: &Value, samples: &Value) -> Result<PathBuf> {
    let host = command_output("hostname", &[]);
    let date = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let dir = new_run_dir(root, &format!("{date}-{}-{name}", if host.is_empty() { "machine" } else { &host }))?;
    let machine = machine();
    std::fs::write(dir.join("summary.json"), serde_json::to_string_pretty(summary)? + "\n")?;
    std::fs::write(dir.join("samples.json"), serde_json::to_string(samples)? + "\n")?;
    let readme = format!(
        "# {name} benchmark run\n\n- date: {date}\n- command: `{command_line}`\n- machine: {}\n\n## Summary\n\n```json\n{}\n```\n",
        serde_json::to_string(&machine)?,
        serde_json::to_string_pretty(summary)?
    );
    std::fs::write(dir.join("README.md"), readme)?;
    Ok(dir)
}

/// Creates `root/base`, or the first of `root/base-2`, `root/base-3` …
/// that does not exist yet (created, not just looked at, so two runs never
/// share one).
fn new_run_dir(root: &Path, base: &str) -> Result<PathBuf> {
    std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    let mut attempt = 1;
    loop {
        let dir = if attempt == 1 { root.join(base) } else { root.join(format!("{base}-{attempt}")) };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => attempt += 1,
            Err(error) => return Err(error).with_context(|| format!("creating {}", dir.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_run_of_the_day_gets_a_directory_of_its_own() {
        let root = tempfile::tempdir().unwrap();
        let first =
            write(root.path(), "add", "mempalace-bench add", &serde_json::json!({"run": 1}), &Value::Null).unwrap();
        let second =
            write(root.path(), "add", "mempalace-bench add", &serde_json::json!({"run": 2}), &Value::Null).unwrap();
        assert_ne!(first, second);
        assert_eq!(
            second.file_name().unwrap().to_string_lossy(),
            format!("{}-2", first.file_name().unwrap().to_string_lossy())
        );
        let summary = |dir: &Path| std::fs::read_to_string(dir.join("summary.json")).unwrap();
        assert!(summary(&first).contains("\"run\": 1"), "the first run's results are kept");
        assert!(summary(&second).contains("\"run\": 2"));
    }

    #[test]
    fn recorded_commands_name_no_machine_paths() {
        let args: Vec<String> = [
            "/srv/checkout/target/release/mempalace-bench",
            "soak",
            "--models",
            "/srv/checkout/target/test-models",
            "--results=/tmp/runs/results",
            "--database-url",
            "postgres://postgres@127.0.0.1:54330/soak",
            "--models=/opt/models",
            "--duration",
            "3m",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            portable_command(&args, Path::new("/srv/checkout")),
            "target/release/mempalace-bench soak --models \"$MEMPALACE_MODEL_DIR\" --results=…/results \
             --database-url postgres://postgres@127.0.0.1:54330/soak --models=\"$MEMPALACE_MODEL_DIR\" --duration 3m"
        );
    }
}
