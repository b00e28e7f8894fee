//! The embedding benchmark (issue 3): throughput on real 800-character prose
//! chunks for each local provider, single short-query latency, and peak RSS
//! while embedding 10,000 chunks (measured in a child process so the
//! number is that of embedding alone).
//!
//! Prose comes from `../shared`: the spec and seed documents and the LoCoMo
//! conversations, read in place (never copied into the repository).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use mempalace_embed::Embedder;
use mempalace_embed::files::{minilm_dir, static_dir};
use mempalace_embed::minilm::{MiniLm, Precision};
use mempalace_embed::mpnet::Mpnet;
use mempalace_embed::static_model::StaticModel;
use serde_json::{Value, json};

use crate::report::summarize;

/// Splits text into chunks of about `size` characters at whitespace.
fn chunk(text: &str, size: usize, out: &mut Vec<String>) {
    let mut current = String::new();
    for word in text.split_whitespace() {
        if current.len() + word.len() + 1 > size && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(word);
    }
    if current.len() > size / 2 {
        out.push(current);
    }
}

/// Real prose chunks of about 800 characters, at least `n` of them (cycled
/// with a numeric prefix when the sources are shorter).
pub fn prose_chunks(shared: &Path, n: usize) -> Result<Vec<String>> {
    let mut chunks = Vec::new();
    let spec = shared.join("spec");
    let mut documents: Vec<PathBuf> = vec![spec.join("SPEC.md"), spec.join("STYLE.md")];
    let mut seeds: Vec<PathBuf> = std::fs::read_dir(spec.join("seeds"))
        .with_context(|| format!("reading {}", spec.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    seeds.sort();
    documents.extend(seeds);
    for path in documents {
        chunk(
            &std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?,
            800,
            &mut chunks,
        );
    }
    let locomo: Value = serde_json::from_str(
        &std::fs::read_to_string(shared.join("bench/locomo/locomo-dev.json")).context("reading LoCoMo")?,
    )?;
    let mut dialogue = String::new();
    for conversation in locomo.as_array().into_iter().flatten() {
        let Some(sessions) = conversation["conversation"].as_object() else { continue };
        for (key, turns) in sessions {
            if !key.starts_with("session_") || key.ends_with("date_time") {
                continue;
            }
            for turn in turns.as_array().into_iter().flatten() {
                if let (Some(speaker), Some(text)) = (turn["speaker"].as_str(), turn["text"].as_str()) {
                    dialogue.push_str(&format!("{speaker}: {text} "));
                }
            }
        }
    }
    chunk(&dialogue, 800, &mut chunks);
    if chunks.is_empty() {
        bail!("no prose found under {}", shared.display());
    }
    let base = chunks.len();
    let mut index = 0;
    while chunks.len() < n {
        let text = format!("({index}) {}", &chunks[index % base]);
        chunks.push(text.chars().take(800).collect());
        index += 1;
    }
    chunks.truncate(n.max(base.min(n)));
    Ok(chunks)
}

fn throughput(embedder: &dyn Embedder, chunks: &[String], batch: usize) -> Result<f64> {
    let refs: Vec<&str> = chunks.iter().map(String::as_str).collect();
    // Warm-up outside the timing.
    embedder.embed_batch(&refs[..refs.len().min(8)])?;
    let started = Instant::now();
    for part in refs.chunks(batch) {
        embedder.embed_batch(part)?;
    }
    Ok(chunks.len() as f64 / started.elapsed().as_secs_f64())
}

fn query_latency(embedder: &dyn Embedder, runs: usize) -> Result<Value> {
    let queries = ["what database did we pick", "gripper force", "who prefers dark mode", "deployment failure cause"];
    embedder.embed_one("warm up")?;
    let mut samples = Vec::with_capacity(runs);
    for i in 0..runs {
        let started = Instant::now();
        embedder.embed_one(queries[i % queries.len()])?;
        samples.push(started.elapsed().as_secs_f64() * 1e3);
    }
    Ok(summarize(&samples))
}

/// Two loads of one model as a one-text process uses them: query latency
/// measured alternately (this machine is noisy; a ratio from one loop is
/// what compares) and the cosine between their vectors on `sample`.
fn one_text_pair(base: &dyn Embedder, variant: &dyn Embedder, runs: usize, sample: &[&str]) -> Result<Value> {
    let queries = ["what database did we pick", "gripper force", "who prefers dark mode", "deployment failure cause"];
    base.embed_one("warm up")?;
    variant.embed_one("warm up")?;
    let (mut base_ms, mut variant_ms) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    for i in 0..runs {
        for (model, samples) in [(base, &mut base_ms), (variant, &mut variant_ms)] {
            let started = Instant::now();
            model.embed_one(queries[i % queries.len()])?;
            samples.push(started.elapsed().as_secs_f64() * 1e3);
        }
    }
    let cosines: Vec<f32> = base
        .embed_batch(sample)?
        .iter()
        .zip(variant.embed_batch(sample)?)
        .map(|(a, b)| mempalace_core::vector::cosine(a, &b))
        .collect();
    let (base_summary, variant_summary) = (summarize(&base_ms), summarize(&variant_ms));
    Ok(json!({
        "base_query_ms": base_summary,
        "variant_query_ms": variant_summary,
        "base_p50_over_variant_p50": base_summary["p50_ms"].as_f64().unwrap_or(f64::NAN)
            / variant_summary["p50_ms"].as_f64().unwrap_or(f64::NAN),
        "vs_base_cosine": {
            "min": cosines.iter().copied().fold(f32::INFINITY, f32::min),
            "mean": cosines.iter().sum::<f32>() / cosines.len().max(1) as f32,
            "n": cosines.len(),
        },
    }))
}

/// Peak resident memory of this process, in MiB (Linux `VmHWM`).
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Runs in a child process: embeds `n` chunks with the default MiniLM (or
/// int8) in batches and prints `{"peak_rss_mib": …, "chunks_per_s": …}`.
pub fn rss_child(models: &Path, shared: &Path, n: usize, int8: bool) -> Result<Value> {
    let chunks = prose_chunks(shared, n)?;
    // The default MiniLM (bf16 on AMX where the CPU has it, else f32).
    let precision = if int8 { Precision::Int8 } else { Precision::for_this_cpu() };
    let model = MiniLm::load_with(&minilm_dir(models), precision)?;
    let rate = throughput(&model, &chunks, 256)?;
    Ok(
        json!({"chunks": n, "precision": format!("{precision:?}"), "chunks_per_s": rate, "peak_rss_mib": peak_rss_mib()}),
    )
}

/// all-mpnet-base-v2, when its files are in the model directory: load
/// time, throughput and query latency in f32, with the weights in place
/// (one-text processes) and in int8 (where the CPU has VNNI), int8's
/// cosine to f32, and throughput as a share of MiniLM f32's.
fn mpnet(models: &Path, chunks: &[String], sample: &[&str], minilm_rate: f64) -> Result<Value> {
    let folder = mempalace_embed::files::mpnet_dir(models);
    if mempalace_embed::files::check(&mempalace_embed::files::MPNET, &folder).is_err() {
        return Ok(Value::Null);
    }
    let timed_load = |precision| -> Result<(Mpnet, f64)> {
        let started = Instant::now();
        let model = Mpnet::load_with(&folder, precision)?;
        Ok((model, started.elapsed().as_secs_f64() * 1e3))
    };
    let (f32_model, f32_load_ms) = timed_load(Precision::F32)?;
    // A tenth of the chunks: MPNet does about 8× MiniLM's work.
    let few = &chunks[..(chunks.len() / 10).max(16).min(chunks.len())];
    let rate = throughput(&f32_model, few, 64)?;
    let reference = f32_model.embed_batch(sample)?;
    let mut summary = json!({
        "f32": {"load_ms": f32_load_ms, "chunks_per_s": rate, "query_ms": query_latency(&f32_model, 30)?},
        "f32_share_of_minilm_f32_rate": rate / minilm_rate,
    });
    drop(f32_model);
    let (in_place, in_place_load_ms) = timed_load(Precision::F32InPlace)?;
    summary["f32_in_place"] = json!({"load_ms": in_place_load_ms, "query_ms": query_latency(&in_place, 30)?});
    if mempalace_embed::kernels::has_avx512() {
        // A one-text process: the weights in place (before) against the
        // kept f16 panels.
        let (f16, f16_load_ms) = timed_load(Precision::F16)?;
        let mut pair = one_text_pair(&in_place, &f16, 30, &sample[..sample.len().min(24)])?;
        pair["f16_load_ms"] = json!(f16_load_ms);
        summary["one_text_in_place_vs_f16"] = pair;
    }
    drop(in_place);
    if mempalace_embed::amx::available() {
        let (bf16, bf16_load_ms) = timed_load(Precision::Bf16)?;
        let vectors = bf16.embed_batch(sample)?;
        let cosines: Vec<f32> =
            reference.iter().zip(&vectors).map(|(a, b)| mempalace_core::vector::cosine(a, b)).collect();
        let rate = throughput(&bf16, few, 64)?;
        summary["bf16_amx"] = json!({
            "load_ms": bf16_load_ms,
            "chunks_per_s": rate,
            "share_of_minilm_f32_rate": rate / minilm_rate,
            "query_ms": query_latency(&bf16, 30)?,
            "vs_f32_cosine": {
                "min": cosines.iter().copied().fold(f32::INFINITY, f32::min),
                "mean": cosines.iter().sum::<f32>() / cosines.len() as f32,
                "n": cosines.len(),
            },
        });
    }
    if mempalace_embed::kernels::has_vnni() {
        let (int8, int8_load_ms) = timed_load(Precision::Int8)?;
        let vectors = int8.embed_batch(sample)?;
        let cosines: Vec<f32> =
            reference.iter().zip(&vectors).map(|(a, b)| mempalace_core::vector::cosine(a, b)).collect();
        summary["int8"] = json!({
            "load_ms": int8_load_ms,
            "chunks_per_s": throughput(&int8, few, 64)?,
            "query_ms": query_latency(&int8, 30)?,
            "vs_f32_cosine": {
                "min": cosines.iter().copied().fold(f32::INFINITY, f32::min),
                "mean": cosines.iter().sum::<f32>() / cosines.len() as f32,
                "n": cosines.len(),
            },
        });
    }
    Ok(summary)
}

/// Runs the benchmark; returns (summary, samples).
pub fn run(models: &Path, shared: &Path, chunks_n: usize, rss_chunks: usize) -> Result<(Value, Value)> {
    let chunks = prose_chunks(shared, chunks_n)?;
    let mean_chars = chunks.iter().map(|c| c.chars().count()).sum::<usize>() as f64 / chunks.len() as f64;
    let minilm = MiniLm::load_with(&minilm_dir(models), Precision::F32)?;
    let token_counts: Vec<usize> =
        minilm.tokenize(&chunks.iter().map(String::as_str).collect::<Vec<_>>()).iter().map(Vec::len).collect();
    let mean_tokens = token_counts.iter().sum::<usize>() as f64 / token_counts.len() as f64;
    let minilm_rate = throughput(&minilm, &chunks, 64)?;
    let minilm_query = query_latency(&minilm, 50)?;
    let int8 = MiniLm::load_with(&minilm_dir(models), Precision::Int8)?;
    let int8_rate = throughput(&int8, &chunks, 64)?;
    let int8_query = query_latency(&int8, 50)?;
    let sample: Vec<&str> = chunks.iter().take(200).map(String::as_str).collect();
    // A one-text process: the kept transposed f32 weights (before) against
    // the kept f16 panels.
    let one_text = if mempalace_embed::kernels::has_avx512() {
        let f16 = MiniLm::load_with(&minilm_dir(models), Precision::F16)?;
        one_text_pair(&minilm, &f16, 100, &sample)?
    } else {
        Value::Null
    };
    let f32_vectors = minilm.embed_batch(&sample)?;
    let int8_vectors = int8.embed_batch(&sample)?;
    let cosines: Vec<f32> =
        f32_vectors.iter().zip(&int8_vectors).map(|(a, b)| mempalace_core::vector::cosine(a, b)).collect();
    let int8_cosine_min = cosines.iter().copied().fold(f32::INFINITY, f32::min);
    let int8_cosine_mean = cosines.iter().sum::<f32>() / cosines.len() as f32;
    // The AMX path, where the CPU has it.
    let bf16 = if mempalace_embed::amx::available() {
        let model = MiniLm::load_with(&minilm_dir(models), Precision::Bf16)?;
        let rate = throughput(&model, &chunks, 64)?;
        let query = query_latency(&model, 50)?;
        let vectors = model.embed_batch(&sample)?;
        let cosines: Vec<f32> =
            f32_vectors.iter().zip(&vectors).map(|(a, b)| mempalace_core::vector::cosine(a, b)).collect();
        json!({
            "chunks_per_s": rate,
            "query_ms": query,
            "vs_f32_cosine": {
                "min": cosines.iter().copied().fold(f32::INFINITY, f32::min),
                "mean": cosines.iter().sum::<f32>() / cosines.len() as f32,
                "n": cosines.len(),
            },
        })
    } else {
        Value::Null
    };
    let mpnet = mpnet(models, &chunks, &sample, minilm_rate)?;
    let static_model = StaticModel::load(&static_dir(models))?;
    let static_chunks = prose_chunks(shared, 20_000)?;
    let static_rate = throughput(&static_model, &static_chunks, 1_000)?;
    let static_query = query_latency(&static_model, 200)?;

    let exe = std::env::current_exe()?;
    let output = Command::new(exe)
        .args(["embed-rss", "--models"])
        .arg(models)
        .arg("--shared")
        .arg(shared)
        .args(["--chunks", &rss_chunks.to_string()])
        .output()
        .context("running the RSS child")?;
    if !output.status.success() {
        bail!("RSS child failed: {}", String::from_utf8_lossy(&output.stderr));
    }
    let rss: Value = serde_json::from_slice(&output.stdout).context("RSS child output")?;
    let summary = json!({
        "chunks": chunks.len(),
        "mean_chars": mean_chars,
        "mean_tokens_minilm": mean_tokens,
        "minilm_f32_chunks_per_s": minilm_rate,
        "minilm_query_ms": minilm_query,
        "minilm_int8_chunks_per_s": int8_rate,
        "minilm_int8_query_ms": int8_query,
        "int8_vs_f32_cosine": {"min": int8_cosine_min, "mean": int8_cosine_mean, "n": cosines.len()},
        "minilm_bf16_amx": bf16,
        "minilm_one_text_f32_vs_f16": one_text,
        "mpnet": mpnet,
        "static_chunks_per_s": static_rate,
        "static_query_ms": static_query,
        "speedup_static_over_minilm": static_rate / minilm_rate,
        "minilm_10k": rss,
        "threads": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(0),
    });
    Ok((summary.clone(), summary))
}
