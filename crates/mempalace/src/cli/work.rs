//! `work`: the background jobs (cold-path `process`, `enrich`,
//! `consolidate`, daily `maintain`), run by as many processes as you like
//! on one palace.
//!
//! `process` runs in every worker at every minute tick and claims raw
//! drawers, so workers split the backlog and never process a drawer
//! twice. `maintain` runs once per day across all workers: the first to
//! reach the day's tick takes its lock (PostgreSQL advisory lock, or the
//! SQLite lease row) and records the tick; the others skip it. Ticks are
//! wall-clock aligned (whole periods since the epoch), so processes
//! started at different times agree on them.

use std::time::Duration;

use anyhow::Result;
use clap::{Args, ValueEnum};
use mempalace_engine::Palace;
use mempalace_engine::consolidate::{CONSOLIDATE, ConsolidateReport};
use mempalace_engine::work::{ENRICH, MAINTAIN, PROCESS, PeriodicJob, ProcessReport, tick_of, tick_start};
use serde_json::{Value, json};

use crate::output;

/// A job `work` can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum JobName {
    /// Classify and extract raw drawers (claims; every worker takes part).
    Process,
    /// Decay old, idle drawers, expire episodic summaries, archive faded drawers (once a day across workers).
    Maintain,
    /// Episodes of ended sessions, promotion of what recurs, dreaming when enabled (every 10 minutes).
    Consolidate,
    /// Entities and facts from the language model for important drawers it never read (every 10 minutes).
    Enrich,
}

/// `work`.
#[derive(Debug, Args)]
pub struct WorkArgs {
    /// Run each job once now and exit (process: until no raw drawer is left).
    #[arg(long)]
    once: bool,
    /// Jobs to run.
    #[arg(long, value_enum, value_delimiter = ',', default_values = ["process", "enrich", "consolidate", "maintain"])]
    jobs: Vec<JobName>,
    /// This worker's name in claims and job locks (default: HOST:PID).
    #[arg(long)]
    worker: Option<String>,
    /// Print what each run did as JSON (one object per line; with --once, one object).
    #[arg(long)]
    json: bool,
}

fn default_worker() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "host".into());
    format!("{host}:{}", std::process::id())
}

fn process_json(report: &ProcessReport) -> Value {
    json!({
        "claimed": report.claimed, "processed": report.processed.iter().map(|id| id.as_str()).collect::<Vec<_>>(),
        "retried": report.retried, "failed": report.failed, "lost": report.lost,
        "by_model": report.by_model, "model_fallback": report.model_fallback,
        "merged": report.merged, "clustered": report.clustered,
        "superseded": report.superseded.iter().map(|(old, new)| json!({"drawer": old.as_str(), "by": new.as_str()})).collect::<Vec<_>>(),
        "facts_ended": report.facts_ended,
        "memories": {"added": report.memories.0, "updated": report.memories.1, "retracted": report.memories.2},
    })
}

/// What a `consolidate` run did, as JSON.
pub fn consolidate_json(report: &ConsolidateReport) -> Value {
    json!({
        "episodes": report.episodes, "abstractive": report.abstractive, "promoted": report.promoted,
        "insights": report.insights, "dreamt_episodes": report.dreamt_episodes,
        "entities_merged": report.entities_merged,
        "model_fallback": report.model_fallback, "skipped": report.skipped,
    })
}

/// One line on a `consolidate` run.
fn consolidate_line(report: &Value) -> String {
    if let Some(why) = report["skipped"].as_str() {
        return format!("consolidate: skipped ({why})");
    }
    let by = match report["model_fallback"].as_str() {
        Some(why) => format!("{} by the language model, the rest extractive ({why})", report["abstractive"]),
        None => format!("{} by the language model", report["abstractive"]),
    };
    format!(
        "consolidate: {} episodes written ({by}), {} memories promoted, {} insights dreamt from {} episodes, {} \
         duplicate entities merged",
        report["episodes"],
        report["promoted"],
        report["insights"],
        report["dreamt_episodes"],
        report["entities_merged"]
    )
}

/// Runs one job now; the JSON of what it did.
fn run_job(palace: &Palace, job: JobName, worker: &str, stop: &Stop) -> Result<Value> {
    Ok(match job {
        JobName::Process => {
            let go_on = || !stop.requested();
            let report = palace.run_recorded(&PROCESS, worker, |palace| palace.process_while(worker, &go_on))?;
            tracing::info!(claimed = report.claimed, processed = report.processed.len(), "process ran");
            json!({"job": "process", "worker": worker, "report": process_json(&report)})
        }
        JobName::Enrich => match palace.run_periodic(&ENRICH, worker, |palace| palace.enrich_all())? {
            Some(report) => json!({"job": "enrich", "worker": worker, "ran": true, "examined": report.examined,
                "asked": report.asked, "enriched": report.enriched, "skipped": report.skipped}),
            None => json!({"job": "enrich", "worker": worker, "ran": false}),
        },
        JobName::Maintain => match palace.run_periodic(&MAINTAIN, worker, |palace| palace.maintain_all())? {
            Some(report) => json!({"job": "maintain", "worker": worker, "ran": true,
                "decayed": report.decayed, "expired": report.expired, "archived": report.archived,
                "centroids_trained": report.centroids_trained}),
            None => json!({"job": "maintain", "worker": worker, "ran": false}),
        },
        JobName::Consolidate => match palace.run_periodic(&CONSOLIDATE, worker, |palace| palace.consolidate_all())? {
            Some(report) => {
                json!({"job": "consolidate", "worker": worker, "ran": true, "report": consolidate_json(&report)})
            }
            None => json!({"job": "consolidate", "worker": worker, "ran": false}),
        },
    })
}

/// A job with the palace's period (settings may change the defaults).
fn period(palace: &Palace, job: JobName) -> PeriodicJob {
    palace.jobs().periodic(&match job {
        JobName::Process => PROCESS,
        JobName::Maintain => MAINTAIN,
        JobName::Enrich => ENRICH,
        JobName::Consolidate => CONSOLIDATE,
    })
}

/// Runs the jobs on their ticks until the process is stopped.
pub fn run_forever(palace: &Palace, jobs: &[JobName], worker: &str, json_lines: bool, stop: &Stop) -> Result<()> {
    let mut last_tick: Vec<Option<i64>> = vec![None; jobs.len()];
    loop {
        let now = palace.now();
        for (index, job) in jobs.iter().enumerate() {
            // A job that started runs to its end (its claims completed or
            // failed, its lock released); no new one starts after a stop.
            if stop.requested() {
                tracing::info!(worker, "background jobs stopped");
                return Ok(());
            }
            let tick = tick_of(now, period(palace, *job).every);
            if last_tick[index] == Some(tick) {
                continue;
            }
            last_tick[index] = Some(tick);
            match run_job(palace, *job, worker, stop) {
                Ok(done) if json_lines => output::json_line(&done)?,
                Ok(_) => {}
                // A failed run is retried at the next tick; the worker stays up.
                Err(error) => tracing::warn!(error = %format!("{error:#}"), job = ?job, "job failed"),
            }
        }
        let now = palace.now();
        let next = jobs
            .iter()
            .map(|job| tick_start(tick_of(now, period(palace, *job).every) + 1, period(palace, *job).every))
            .min()
            .unwrap_or(now);
        let wait = (next - now).to_std().unwrap_or(Duration::ZERO);
        if stop.wait(wait.min(Duration::from_secs(60)) + Duration::from_millis(5)) {
            tracing::info!(worker, "background jobs stopped");
            return Ok(());
        }
    }
}

/// A request to stop the background jobs, shared by the thread that
/// receives the signal and the worker loop.
#[derive(Debug, Default)]
pub struct Stop {
    requested: std::sync::Mutex<bool>,
    changed: std::sync::Condvar,
}

impl Stop {
    /// Asks the loop to stop after the job it is running.
    pub fn request(&self) {
        *self.requested.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.changed.notify_all();
    }

    /// Whether a stop was asked for.
    pub fn requested(&self) -> bool {
        *self.requested.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits `duration`, or less when a stop is asked for; true then.
    fn wait(&self, duration: Duration) -> bool {
        let guard = self.requested.lock().unwrap_or_else(|e| e.into_inner());
        let (guard, _) = self
            .changed
            .wait_timeout_while(guard, duration, |requested| !*requested)
            .unwrap_or_else(|e| e.into_inner());
        *guard
    }
}

/// Requests `stop` on SIGTERM or SIGINT (a thread of its own with a small
/// runtime for the signals).
fn stop_on_signals(stop: std::sync::Arc<Stop>) -> Result<()> {
    std::thread::Builder::new().name("mempalace-signals".into()).spawn(move || {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
        runtime.block_on(async {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
            }
        });
        tracing::info!("stopping: the running job finishes, no new one starts");
        stop.request();
    })?;
    Ok(())
}

/// One line on a `process` run: what was claimed and became of it, which
/// classifier decided, and what the review found.
fn process_line(report: &Value) -> String {
    let processed = report["processed"].as_array().map_or(0, Vec::len);
    let by = match report["model_fallback"].as_str() {
        Some(why) if report["by_model"] == 0 => format!("heuristic ({why})"),
        Some(why) => format!("{} by the language model, the rest heuristic ({why})", report["by_model"]),
        None => format!("{} by the language model", report["by_model"]),
    };
    let superseded = report["superseded"].as_array().map_or(0, Vec::len);
    format!(
        "process: {} claimed, {processed} processed ({by}), {} retried, {} failed; {} merged, {} clustered, \
         {superseded} superseded ({} facts ended); memories +{} ~{} -{}",
        report["claimed"],
        report["retried"],
        report["failed"],
        report["merged"],
        report["clustered"],
        report["facts_ended"],
        report["memories"]["added"],
        report["memories"]["updated"],
        report["memories"]["retracted"]
    )
}

/// Runs the command.
pub fn run(palace: &Palace, args: WorkArgs) -> Result<()> {
    let worker = args.worker.clone().unwrap_or_else(default_worker);
    if !args.once {
        tracing::info!(worker, jobs = ?args.jobs, "worker started");
        let stop = std::sync::Arc::new(Stop::default());
        stop_on_signals(std::sync::Arc::clone(&stop))?;
        return run_forever(palace, &args.jobs, &worker, args.json, &stop);
    }
    let mut runs = Vec::new();
    for job in &args.jobs {
        runs.push(run_job(palace, *job, &worker, &Stop::default())?);
    }
    let usage = palace.llm().and_then(|llm| llm.usage_report());
    if args.json {
        output::json(&json!({"worker": worker, "runs": runs, "llm": usage}))?;
    } else {
        for run in &runs {
            let line = match run["job"].as_str() {
                Some("process") => process_line(&run["report"]),
                Some("enrich") if run["ran"] == true => match run["skipped"].as_str() {
                    Some(why) => format!("enrich: {} looked at, {} enriched; {why}", run["examined"], run["enriched"]),
                    None => format!("enrich: {} looked at, {} enriched", run["examined"], run["enriched"]),
                },
                Some("enrich") => "enrich: already run for this tick by another worker".to_string(),
                Some("consolidate") if run["ran"] == true => consolidate_line(&run["report"]),
                Some("consolidate") => "consolidate: already run for this tick by another worker".to_string(),
                _ if run["ran"] == true => format!(
                    "maintain: {} drawers decayed, {} summaries expired, {} drawers archived, {} centroids trained",
                    run["decayed"], run["expired"], run["archived"], run["centroids_trained"]
                ),
                _ => "maintain: already run for today by another worker".to_string(),
            };
            output::line(line)?;
        }
        if let Some(usage) = usage.filter(|u| u["total"]["calls"].as_u64().unwrap_or(0) > 0) {
            let total = &usage["total"];
            output::line(format!(
                "language model: {} calls ({} failed), {} prompt + {} completion tokens, ${:.4}",
                total["calls"],
                total["failures"],
                total["prompt_tokens"],
                total["completion_tokens"],
                total["cost_usd"].as_f64().unwrap_or(0.0)
            ))?;
        }
    }
    Ok(())
}
