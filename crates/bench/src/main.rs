//! `mempalace-bench`: benchmarks that drive the real binary and engine.
//!
//! Each subcommand measures one area, prints its summary as JSON on stdout
//! and records the run under `bench/results/` (STYLE §8). Benchmarks are
//! run on purpose, never as part of the test suite.

mod corpus;
mod palace;
mod report;

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
}

#[allow(clippy::print_stdout)]
fn main() -> Result<()> {
    let cli = Cli::parse();
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
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
    }
    Ok(())
}
