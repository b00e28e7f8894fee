//! `bench locomo` and `bench longmemeval`: retrieval quality through the
//! product's own filing and search path (see `mempalace-eval`), each
//! conversation in a fresh temporary palace with the configured embedder.
//! The harness is built with the `bench` feature; without it the command
//! says how to get it.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

use crate::settings::Settings;

/// Benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// LoCoMo: turn- and session-level recall, nDCG, MRR, latency (original and audit-corrected evidence).
    Locomo(LocomoArgs),
    /// LongMemEval: MemPalace's session recall and the official recall_all / ndcg_any.
    Longmemeval(LongMemEvalArgs),
    /// Memory extraction on a labelled set: precision and recall of the configured language model (or --rules).
    Extract(ExtractArgs),
}

/// `bench extract`.
#[derive(Debug, Args)]
pub struct ExtractArgs {
    /// A labelled set (e.g. crates/core/tests/data/memory_extraction_holdout.json).
    #[arg(long)]
    set: PathBuf,
    /// Score the rules instead of the configured language model.
    #[arg(long)]
    rules: bool,
    /// Only the first N cases.
    #[arg(long)]
    limit: Option<usize>,
    /// Also write the report JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// `bench locomo`.
#[derive(Debug, Args)]
pub struct LocomoArgs {
    /// A LoCoMo-format file (e.g. ../shared/bench/locomo/locomo-dev.json).
    #[arg(long)]
    data: PathBuf,
    /// The audit's corrections (default: locomo-audit-errors-dev.json beside --data, when present).
    #[arg(long)]
    corrections: Option<PathBuf>,
    /// k values, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,5,10,20")]
    k: Vec<usize>,
    /// Fusion to compare with the default.
    #[arg(long, value_enum, default_value_t)]
    fusion: super::values::FusionArg,
    /// Only the first N conversations.
    #[arg(long)]
    limit: Option<usize>,
    /// Consolidate each conversation after filing it (episodes, promotion) and report episode search too.
    #[arg(long)]
    consolidate: bool,
    /// Also write the report JSON to this file.
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
    /// Also write each question's ranked hits (turn ids, score, length) to this file, one JSON object a line,
    /// for scripts/bench/hits.py. The deepest --k is how many hits are kept (e.g. --k 1,5,10,20,100).
    #[arg(long, value_name = "OUT")]
    hits: Option<PathBuf>,
}

/// `bench longmemeval`.
#[derive(Debug, Args)]
pub struct LongMemEvalArgs {
    /// A LongMemEval-format file.
    #[arg(long)]
    data: PathBuf,
    /// Also write the report JSON to this file.
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
}

/// Without the harness: says how to build it.
#[cfg(not(feature = "bench"))]
pub fn run(_: &Settings, _: BenchCommand) -> Result<()> {
    Err(super::UserError(
        "this mempalace was built without the benchmark harness; rebuild with \
         `cargo build --release --features bench`"
            .into(),
    )
    .into())
}

/// Runs a benchmark.
#[cfg(feature = "bench")]
pub fn run(settings: &Settings, command: BenchCommand) -> Result<()> {
    use std::sync::Arc;

    use anyhow::Context as _;
    use mempalace_engine::Palace;
    use mempalace_eval::{locomo, longmemeval};
    use mempalace_sqlite::{SqliteOptions, SqliteStore};
    use serde_json::Value;

    use super::UserError;
    use crate::output;

    if let BenchCommand::Extract(args) = command {
        return extract(settings, args);
    }
    let embedder = super::embedder::build(settings)?;
    let scratch = tempfile_dir()?;
    let mut made = 0_usize;
    let mut factory = || -> Result<Palace, String> {
        made += 1;
        let file = scratch.join(format!("palace-{made}.db"));
        let store = SqliteStore::open(&file, SqliteOptions { create: true, ..SqliteOptions::default() })
            .map_err(|e| e.to_string())?;
        let palace = Palace::new(Arc::new(store), settings.workspace.clone());
        Ok(match &embedder {
            Some(embedder) => palace.with_embedder(Arc::clone(embedder)),
            None => palace,
        })
    };
    let mut progress = |line: &str| output::note(line);
    let (report, out) = match command {
        BenchCommand::Locomo(args) => {
            let mut samples = locomo::load(&args.data)?;
            if let Some(limit) = args.limit {
                samples.truncate(limit);
            }
            let corrections_path = args.corrections.clone().or_else(|| {
                let sibling = args.data.with_file_name("locomo-audit-errors-dev.json");
                sibling.is_file().then_some(sibling)
            });
            let corrections = match &corrections_path {
                Some(path) => locomo::load_corrections(path)?,
                None => Default::default(),
            };
            if args.k.is_empty() || args.k.contains(&0) {
                return Err(UserError("--k takes positive numbers, e.g. --k 1,5,10".into()).into());
            }
            let mut report = locomo::run(
                &samples,
                &corrections,
                &mut factory,
                &locomo::Options {
                    ks: args.k.clone(),
                    fusion: args.fusion.into(),
                    consolidate: args.consolidate,
                    hits: args.hits.clone(),
                },
                &mut progress,
            )?;
            report["embedder"] = embedder.as_ref().map_or(Value::Null, |e| Value::from(e.model_id()));
            report["corrections"] = Value::from(corrections.len());
            report["fusion"] = Value::from(args.fusion.name());
            (report, args.json)
        }
        BenchCommand::Extract(_) => unreachable!("handled above"),
        BenchCommand::Longmemeval(args) => {
            let instances = longmemeval::load(&args.data)?;
            let mut report = longmemeval::run(&instances, &mut factory, &mut progress)?;
            report["embedder"] = embedder.as_ref().map_or(Value::Null, |e| Value::from(e.model_id()));
            (report, args.json)
        }
    };
    let _ = std::fs::remove_dir_all(&scratch);
    if let Some(path) = out {
        std::fs::write(&path, serde_json::to_string_pretty(&report)? + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    output::json(&report)?;
    Ok(())
}

#[cfg(feature = "bench")]
fn tempfile_dir() -> Result<PathBuf> {
    use anyhow::Context as _;

    let dir = std::env::temp_dir().join(format!(
        "mempalace-bench-{}-{}",
        std::process::id(),
        chrono::Utc::now().timestamp_micros()
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// `bench extract`: every case through the same decision the engine makes
/// (the model's checked answer, or the rules), scored.
#[cfg(feature = "bench")]
fn extract(settings: &Settings, args: ExtractArgs) -> Result<()> {
    use mempalace_engine::memories::{ExtractPath, decide};
    use mempalace_eval::extraction::{load, score};
    use serde_json::json;

    use crate::output;

    let mut cases = load(&args.set)?;
    if let Some(limit) = args.limit {
        cases.truncate(limit);
    }
    let llm = if args.rules { None } else { super::llm::client(settings)? };
    if !args.rules && llm.is_none() {
        return Err(super::UserError(
            "no language model is configured: set MEMPALACE_LLM_BASE_URL and MEMPALACE_LLM_MODEL (docs/llm.md), \
             or score the rules with --rules"
                .into(),
        )
        .into());
    }
    let started = std::time::Instant::now();
    let mut fell_back = 0;
    let mut done = 0;
    let total = cases.len();
    let report = score(&cases, |case| {
        let (path, decisions, _) = decide(llm.as_deref(), &case.conversation, &case.existing);
        done += 1;
        output::note(format!("case {done}/{total} {}: {} decision(s)", case.id, decisions.len()));
        match path {
            ExtractPath::Rules(why) if llm.is_some() => {
                fell_back += 1;
                Err(why)
            }
            _ => Ok(decisions),
        }
    });
    let counts = |c: &mempalace_eval::extraction::Counts| {
        json!({"precision": c.precision(), "recall": c.recall(), "f1": c.f1(),
            "tp": c.true_positives, "fp": c.false_positives, "fn": c.false_negatives})
    };
    let value = json!({
        "set": args.set.display().to_string(),
        "extractor": if args.rules { "rules".to_string() } else { llm.as_ref().map_or_else(String::new, |l| l.model_for(mempalace_core::llm::Task::Extract)) },
        "cases": total,
        "overall": counts(&report.overall),
        "by_kind": report.by_kind.iter().map(|(kind, c)| (kind.to_string(), counts(c))).collect::<serde_json::Map<_, _>>(),
        "entity_type_right": report.entity_type_right, "entity_type_of": report.entity_type_of,
        "model_errors": fell_back,
        "errors": report.errors.iter().map(|(case, why)| json!({"case": case, "error": why})).collect::<Vec<_>>(),
        "seconds": started.elapsed().as_secs_f64(),
    });
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&value)? + "\n")?;
    }
    output::json(&value)?;
    Ok(())
}
