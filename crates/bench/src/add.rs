//! The `add` latency benchmark (issue 16): one `mempalace add` process,
//! spawn to exit, as a hook runs it, with each embedder named — by default
//! MiniLM, and `none` for the fixed cost without a model. Runs the binary
//! under test and, optionally, a baseline binary interleaved in the same
//! loop (this machine is shared and noisy; a ratio from one run is what
//! compares), each on a palace of its own with the same texts, and then
//! compares the vectors both filed (the export carries them as base64 of
//! the f32 bytes): how many are bit-identical, and the lowest cosine.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde_json::{Value, json};

use crate::corpus;
use crate::report::{percentile, summarize};

/// Parameters of one run.
pub struct AddBench {
    /// The `mempalace` binary under test.
    pub binary: PathBuf,
    /// A binary to compare with, run interleaved.
    pub baseline: Option<PathBuf>,
    /// Model directory (`--model-dir`).
    pub models: PathBuf,
    /// Embedders to time (`--embedder` values).
    pub embedders: Vec<String>,
    /// Timed adds per binary and embedder.
    pub runs: usize,
    /// Length of each text in characters (about).
    pub chars: usize,
}

/// Text `index` of about `chars` characters, cut at a word (unique: it names its index).
fn text(index: u64, chars: usize) -> String {
    let mut text = String::new();
    let mut part = 0;
    while text.len() < chars {
        text.push_str(&corpus::drawer_text(index * 1_000 + part));
        text.push(' ');
        part += 1;
    }
    let cut = text[..chars].rfind(' ').unwrap_or(chars);
    text.truncate(cut);
    text
}

fn mempalace(binary: &Path, palace: &Path, models: &Path, embedder: &str) -> Command {
    let mut command = Command::new(binary);
    command
        .arg("--palace")
        .arg(palace)
        .arg("--model-dir")
        .arg(models)
        .args(["--embedder", embedder])
        .env("HOME", palace)
        .env_remove("MEMPALACE_LOG")
        .stdin(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// Runs one `add`; its wall time in milliseconds.
fn add(binary: &Path, palace: &Path, models: &Path, embedder: &str, text: &str) -> Result<f64> {
    let mut command = mempalace(binary, palace, models, embedder);
    command.args(["add", "--wing", "bench", "--room", "latency", text]);
    let started = Instant::now();
    let output = command.output().with_context(|| format!("running {}", binary.display()))?;
    let elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    if !output.status.success() {
        bail!("{} add failed: {}", binary.display(), String::from_utf8_lossy(&output.stderr));
    }
    if !output.stderr.is_empty() {
        // A warning (a missing model) means the run measured something else.
        bail!("{} add warned: {}", binary.display(), String::from_utf8_lossy(&output.stderr));
    }
    Ok(elapsed_ms)
}

/// The vectors of a palace's drawers by id (base64 of the f32 bytes).
fn vectors(binary: &Path, palace: &Path, models: &Path) -> Result<BTreeMap<String, Vec<f32>>> {
    let file = palace.join("export.jsonl");
    let output = mempalace(binary, palace, models, "none")
        .args(["export", "--out"])
        .arg(&file)
        .output()
        .context("running export")?;
    if !output.status.success() {
        bail!("export failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let mut out = BTreeMap::new();
    for line in std::fs::read_to_string(&file)?.lines() {
        let record: Value = serde_json::from_str(line)?;
        if record["type"] == "drawer"
            && let (Some(id), Some(vector)) = (record["id"].as_str(), record["embedding"]["base64"].as_str())
        {
            let bytes = BASE64.decode(vector).with_context(|| format!("the vector of {id}"))?;
            out.insert(
                id.to_string(),
                bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect(),
            );
        }
    }
    Ok(out)
}

/// Runs the benchmark; returns (summary, samples).
pub fn run(bench: &AddBench) -> Result<(Value, Value)> {
    let scratch = tempfile::tempdir()?;
    let mut binaries: Vec<(&str, &Path)> = vec![("binary", &bench.binary)];
    if let Some(baseline) = &bench.baseline {
        binaries.push(("baseline", baseline));
    }
    let mut summary = serde_json::Map::new();
    let mut samples = serde_json::Map::new();
    for embedder in &bench.embedders {
        let mut times: Vec<Vec<f64>> = vec![Vec::with_capacity(bench.runs); binaries.len()];
        let palaces: Vec<PathBuf> =
            binaries.iter().map(|(role, _)| scratch.path().join(format!("{embedder}-{role}"))).collect();
        for (slot, (_, binary)) in binaries.iter().enumerate() {
            std::fs::create_dir_all(&palaces[slot])?;
            // Creates the palace and warms the page cache (model, binary).
            for warm in 0..2 {
                add(binary, &palaces[slot], &bench.models, embedder, &text(1_000_000 + warm, bench.chars))?;
            }
        }
        for run in 0..bench.runs {
            let text = text(run as u64, bench.chars);
            // Alternate who goes first, so neither always runs right after the other.
            let mut order: Vec<usize> = (0..binaries.len()).collect();
            if run % 2 == 1 {
                order.reverse();
            }
            for slot in order {
                times[slot].push(add(binaries[slot].1, &palaces[slot], &bench.models, embedder, &text)?);
            }
        }
        let mut entry = serde_json::Map::new();
        for (slot, (role, _)) in binaries.iter().enumerate() {
            entry.insert(role.to_string(), summarize(&times[slot]));
            samples.insert(format!("{embedder}_{role}_ms"), json!(times[slot]));
        }
        if binaries.len() == 2 {
            let p50 = |values: &[f64]| {
                let mut sorted = values.to_vec();
                sorted.sort_by(f64::total_cmp);
                percentile(&sorted, 50.0)
            };
            entry.insert("baseline_p50_over_binary_p50".into(), json!(p50(&times[1]) / p50(&times[0])));
            if embedder != "none" {
                let ours = vectors(binaries[0].1, &palaces[0], &bench.models)?;
                let theirs = vectors(binaries[0].1, &palaces[1], &bench.models)?;
                let identical = ours.iter().filter(|(id, vector)| theirs.get(*id) == Some(*vector)).count();
                // Vectors of the same model from another precision are not
                // bit-identical but must stay within cosine 0.9999.
                let lowest = ours
                    .iter()
                    .filter_map(|(id, vector)| {
                        theirs.get(id).map(|other| mempalace_core::vector::cosine(vector, other))
                    })
                    .fold(f32::INFINITY, f32::min);
                entry.insert(
                    "vectors".into(),
                    json!({"binary": ours.len(), "baseline": theirs.len(), "bit_identical": identical,
                           "lowest_cosine": lowest}),
                );
                if identical != ours.len() || ours.len() != theirs.len() {
                    note(&format!(
                        "{embedder}: {identical} of {} vectors bit-identical to the baseline's (lowest cosine {lowest})",
                        ours.len()
                    ));
                }
            }
        }
        summary.insert(embedder.clone(), Value::Object(entry));
    }
    summary.insert("runs".into(), json!(bench.runs));
    summary.insert("text_chars".into(), json!(bench.chars));
    Ok((Value::Object(summary), Value::Object(samples)))
}

#[allow(clippy::print_stderr)]
fn note(text: &str) {
    eprintln!("{text}");
}
