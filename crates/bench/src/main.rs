//! `mempalace-bench`: benchmarks that drive the real binary and engine.
//!
//! Each subcommand measures one area, prints its summary as JSON on stdout
//! and records the run under `bench/results/` (STYLE §8). Benchmarks are
//! run on purpose, never as part of the test suite.

mod add;
mod corpus;
mod embed;
mod mine;
mod palace;
mod report;
mod search;
mod soak;
mod stores;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "mempalace-bench", about = "Benchmarks of mempalace")]
struct Cli {
    /// The mempalace binary to drive.
    #[arg(long, global = true, default_value = "target/release/mempalace")]
    binary: PathBuf,
    /// Where run directories are written.
    #[arg(long, global = true, default_value = "bench/results")]
    results: PathBuf,
    #[command(subcommand)]
    command: Bench,
}

#[derive(Debug, Subcommand)]
enum Bench {
    /// `status` latency on a large palace and `import` throughput (no embedding).
    Palace {
        /// Drawers in the palace `status` is timed on.
        #[arg(long, default_value_t = 100_000)]
        status_drawers: u64,
        /// Timed `status` runs.
        #[arg(long, default_value_t = 50)]
        status_runs: usize,
        /// Drawers in the timed import.
        #[arg(long, default_value_t = 10_000)]
        import_drawers: u64,
        /// Timed imports.
        #[arg(long, default_value_t = 5)]
        import_runs: usize,
        /// Keep the palaces in DIR (default: a temporary directory).
        #[arg(long, value_name = "DIR")]
        scratch: Option<PathBuf>,
    },
    /// Latency of one `mempalace add` process (spawn to exit), as hooks run
    /// it: per embedder, optionally against a baseline binary run
    /// interleaved, whose vectors are then compared bit for bit.
    Add {
        /// Model directory (as `mempalace --model-dir`).
        #[arg(long, env = "MEMPALACE_MODEL_DIR")]
        models: PathBuf,
        /// A second `mempalace` binary (e.g. the previous revision's) timed in the same loop.
        #[arg(long)]
        baseline: Option<PathBuf>,
        /// Embedders to time (`none`: the fixed cost without a model).
        #[arg(long, value_delimiter = ',', default_values_t = ["minilm".to_string(), "none".to_string()])]
        embedders: Vec<String>,
        /// Timed adds per binary and embedder.
        #[arg(long, default_value_t = 30)]
        runs: usize,
        /// Characters per text.
        #[arg(long, default_value_t = 200)]
        chars: usize,
    },
    /// Embedding throughput and latency of the local providers, and peak RSS.
    Embed {
        /// Model directory (as `mempalace --model-dir`).
        #[arg(long, env = "MEMPALACE_MODEL_DIR")]
        models: PathBuf,
        /// The shared data folder (spec, seeds, LoCoMo).
        #[arg(long, default_value_os_t = default_shared())]
        shared: PathBuf,
        /// Chunks in the MiniLM throughput run.
        #[arg(long, default_value_t = 1_000)]
        chunks: usize,
        /// Chunks in the peak-RSS run.
        #[arg(long, default_value_t = 10_000)]
        rss_chunks: usize,
    },
    /// Hybrid search latency at several palace sizes, wake-up latency, ingestion rate.
    Search {
        /// Model directory (as `mempalace --model-dir`).
        #[arg(long, env = "MEMPALACE_MODEL_DIR")]
        models: PathBuf,
        /// The shared data folder.
        #[arg(long, default_value_os_t = default_shared())]
        shared: PathBuf,
        /// Palace sizes for the MiniLM runs.
        #[arg(long, value_delimiter = ',', default_values_t = [10_000u64, 100_000])]
        sizes: Vec<u64>,
        /// Palace size for the static-model run (0 skips it).
        #[arg(long, default_value_t = 1_000_000)]
        static_size: u64,
        /// Timed searches per palace.
        #[arg(long, default_value_t = 100)]
        runs: usize,
        /// Chunks in the MiniLM ingestion run (20× as many for the static model).
        #[arg(long, default_value_t = 300)]
        ingest_chunks: usize,
    },
    /// Search latency of the same palace on SQLite and on PostgreSQL, in one run.
    Stores {
        /// Model directory (as `mempalace --model-dir`).
        #[arg(long, env = "MEMPALACE_MODEL_DIR")]
        models: PathBuf,
        /// A PostgreSQL database with pgvector (the bench uses a schema of its own in it).
        #[arg(long, env = "MEMPALACE_BENCH_DATABASE_URL")]
        database_url: String,
        /// Drawers in the palace.
        #[arg(long, default_value_t = 100_000)]
        size: u64,
        /// Timed searches per store and scenario.
        #[arg(long, default_value_t = 200)]
        runs: usize,
        /// Keep the PostgreSQL schema afterwards, for a look with psql.
        #[arg(long)]
        keep_schema: bool,
    },
    /// Mining throughput of a synthetic transcript corpus, peak RSS, re-run time.
    Mine {
        /// Model directory (as `mempalace --model-dir`).
        #[arg(long, env = "MEMPALACE_MODEL_DIR")]
        models: PathBuf,
        /// Transcript files.
        #[arg(long, default_value_t = 1_000)]
        files: usize,
        /// Messages per file.
        #[arg(long, default_value_t = 10)]
        messages: usize,
        /// Embedders to compare.
        #[arg(long, value_delimiter = ',', default_values_t = ["static".to_string(), "minilm".to_string()])]
        embedders: Vec<String>,
    },
    /// A sustained mixed load on one palace: MCP HTTP clients and miners
    /// for a set time; throughput, latency per tool, errors, server RSS over
    /// time and a consistency check at the end.
    Soak {
        /// How long the load runs (`90s`, `10m`, `1h`).
        #[arg(long, default_value = "30s", value_parser = soak::parse_duration)]
        duration: std::time::Duration,
        /// MCP streamable-HTTP clients.
        #[arg(long, default_value_t = 8)]
        clients: usize,
        /// Concurrent `mempalace mine` runs, each on fresh transcripts.
        #[arg(long, default_value_t = 2)]
        miners: usize,
        /// Model directory (as `mempalace --model-dir`).
        #[arg(long, env = "MEMPALACE_MODEL_DIR")]
        models: Option<PathBuf>,
        /// The embedder of the servers and miners (as `mempalace --embedder`).
        #[arg(long, default_value = "minilm")]
        embedder: String,
        /// Run on this PostgreSQL database (empty; it is filled) instead of a fresh SQLite palace.
        #[arg(long)]
        database_url: Option<String>,
        /// Server processes sharing the PostgreSQL database (one on SQLite).
        #[arg(long, default_value_t = 3)]
        servers: usize,
        /// Seconds between RSS samples of each server.
        #[arg(long, default_value_t = 5)]
        sample_seconds: u64,
    },
    /// (internal) the child process of the RSS measurement.
    #[command(hide = true)]
    EmbedRss {
        #[arg(long)]
        models: PathBuf,
        #[arg(long)]
        shared: PathBuf,
        #[arg(long)]
        chunks: usize,
        /// The int8 model instead of f32.
        #[arg(long)]
        int8: bool,
    },
}

/// Default location of the shared benchmark data, next to the repository.
fn default_shared() -> PathBuf {
    PathBuf::from("../shared")
}

#[allow(clippy::print_stdout)]
fn main() -> Result<()> {
    let cli = Cli::parse();
    // Recorded with the results, so each run says how it was made.
    let command_line = report::portable_command(&std::env::args().collect::<Vec<_>>(), &report::checkout());
    match cli.command {
        Bench::Palace { status_drawers, status_runs, import_drawers, import_runs, scratch } => {
            let bench = palace::PalaceBench {
                binary: cli.binary,
                status_drawers,
                status_runs,
                import_drawers,
                import_runs,
                scratch,
            };
            let (summary, samples) = palace::run(&bench)?;
            let dir = report::write(&cli.results, "palace", &command_line, &summary, &samples)?;
            println!("{}", serde_json::to_string_pretty(&summary)?);
            println!("recorded in {}", dir.display());
        }
        Bench::Add { models, baseline, embedders, runs, chars } => {
            let bench = add::AddBench { binary: cli.binary, baseline, models, embedders, runs, chars };
            let (summary, samples) = add::run(&bench)?;
            let dir = report::write(&cli.results, "add", &command_line, &summary, &samples)?;
            println!("{}", serde_json::to_string_pretty(&summary)?);
            println!("recorded in {}", dir.display());
        }
        Bench::Embed { models, shared, chunks, rss_chunks } => {
            let (summary, samples) = embed::run(&models, &shared, chunks, rss_chunks)?;
            let dir = report::write(&cli.results, "embed", &command_line, &summary, &samples)?;
            println!("{}", serde_json::to_string_pretty(&summary)?);
            println!("recorded in {}", dir.display());
        }
        Bench::Search { models, shared, sizes, static_size, runs, ingest_chunks } => {
            let (summary, samples) = search::run(&models, &shared, &sizes, static_size, runs, ingest_chunks)?;
            let dir = report::write(&cli.results, "search", &command_line, &summary, &samples)?;
            println!("{}", serde_json::to_string_pretty(&summary)?);
            println!("recorded in {}", dir.display());
        }
        Bench::Stores { models, database_url, size, runs, keep_schema } => {
            let (summary, samples) = stores::run(&models, &database_url, size, runs, keep_schema)?;
            let dir = report::write(&cli.results, "stores", &command_line, &summary, &samples)?;
            println!("{}", serde_json::to_string_pretty(&summary)?);
            println!("recorded in {}", dir.display());
        }
        Bench::Mine { models, files, messages, embedders } => {
            let (summary, samples) = mine::run(&cli.binary, &models, files, messages, &embedders)?;
            let dir = report::write(&cli.results, "mine", &command_line, &summary, &samples)?;
            println!("{}", serde_json::to_string_pretty(&summary)?);
            println!("recorded in {}", dir.display());
        }
        Bench::Soak { duration, clients, miners, models, embedder, database_url, servers, sample_seconds } => {
            let params = soak::SoakParams {
                binary: cli.binary,
                models,
                embedder,
                duration,
                clients,
                miners,
                database_url,
                servers,
                sample_every: std::time::Duration::from_secs(sample_seconds.max(1)),
            };
            let (summary, samples) = soak::run(&params)?;
            let dir = report::write(&cli.results, "soak", &command_line, &summary, &samples)?;
            println!("{}", serde_json::to_string_pretty(&summary)?);
            println!("recorded in {}", dir.display());
            if summary["ok"] != true {
                anyhow::bail!("the soak failed: errors, missing adds, an unclean exit or doctor findings (see above)");
            }
        }
        Bench::EmbedRss { models, shared, chunks, int8 } => {
            println!("{}", embed::rss_child(&models, &shared, chunks, int8)?);
        }
    }
    Ok(())
}
