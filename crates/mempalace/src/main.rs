//! The `mempalace` binary: parses the command line, sets up logging to
//! stderr, runs one command and turns its outcome into an exit code.
//!
//! Stdout carries only command results (and, later, MCP stdio frames); every
//! log line goes to stderr. A closed stdout pipe (`mempalace export | head`)
//! is a normal end, not an error.

mod cli;
mod output;
mod settings;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use tracing_subscriber::EnvFilter;

use crate::cli::{Cli, Exit};

/// Installs the stderr subscriber with the filter from the settings.
fn setup_logging(filter: EnvFilter) {
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .init();
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            || cause
                .downcast_ref::<serde_json::Error>()
                .is_some_and(|json| json.io_error_kind() == Some(std::io::ErrorKind::BrokenPipe))
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let env = settings::environment();
    match settings::log_filter(&env, cli.global.verbose) {
        Ok(filter) => setup_logging(filter),
        Err(error) => {
            output::note(format!("error: {error:#}"));
            return ExitCode::from(Exit::Usage as u8);
        }
    }
    match cli::run(cli, &env) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) if error.is::<cli::Silent>() => {
            ExitCode::from(error.downcast_ref::<cli::Silent>().map_or(Exit::Internal as u8, |silent| silent.0))
        }
        Err(error) => {
            let code = cli::exit_code(&error);
            if code == Exit::Internal {
                tracing::error!(error = format!("{error:?}"), "internal error");
            }
            output::note(format!("error: {error:#}"));
            ExitCode::from(code as u8)
        }
    }
}
