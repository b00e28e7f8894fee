//! `mcp` (setup lines, `mcp serve` on stdio) and `serve --mcp-http ADDR`;
//! both also run the background jobs of `work` (the cold path, so what
//! agents file is classified and its memories extracted), unless
//! `--no-workers`.
//!
//! The palace is opened (and created when missing) before the transport
//! starts; the embedding model loads on its own thread, so `initialize` is
//! answered at once and the first search waits for the model. Background
//! writes (`memory_ingest_turn`, `memory_add_drawer` with `background`) go
//! through the ingestion pool, which is drained before the process exits.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use clap::Args;
use mempalace_mcp::http::HttpOptions;
use mempalace_mcp::{Backend, EmbedderLoader, McpServer, Profile};

use super::{Access, open_unscoped};
use crate::output;
use crate::settings::Settings;

/// `mcp`.
#[derive(Debug, Args)]
pub struct McpArgs {
    #[command(subcommand)]
    command: Option<McpCommand>,
}

#[derive(Debug, clap::Subcommand)]
enum McpCommand {
    /// Serve MCP on stdin/stdout (what `claude mcp add` runs).
    Serve(StdioArgs),
}

/// `mcp serve`.
#[derive(Debug, Args)]
pub struct StdioArgs {
    #[command(flatten)]
    tools: ToolsArg,
    /// Do not run the background jobs (`mempalace work`: the cold path, enrich, maintain) in this process.
    #[arg(long)]
    no_workers: bool,
}

/// The tool profile.
#[derive(Debug, Args)]
pub struct ToolsArg {
    /// Tool set offered to clients.
    #[arg(long, value_enum, default_value_t)]
    tools: super::values::ToolProfile,
}

/// `serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Serve MCP over streamable HTTP at ADDR (e.g. 127.0.0.1:7878), path /mcp. Off loopback,
    /// $MEMPALACE_MCP_HTTP_TOKEN must be set.
    #[arg(long, value_name = "ADDR")]
    mcp_http: SocketAddr,
    #[command(flatten)]
    tools: ToolsArg,
    /// Do not run the background jobs (`mempalace work`) in this process.
    #[arg(long)]
    no_workers: bool,
    /// Extra Host name accepted off loopback (repeatable), e.g. memory.example.com.
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,
    /// Browser origin allowed to call the endpoint (repeatable), e.g. https://app.example.com:443.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    allowed_origins: Vec<String>,
}

/// The server over the palace, every call scoped to its caller
/// (docs/tenancy.md): on stdio the caller of `$MEMPALACE_TOKEN` (else the
/// local operator), over HTTP each request's own. The background jobs run
/// on the unscoped palace: they are the server's, not a caller's.
fn server(settings: &Settings, tools: &ToolsArg) -> Result<McpServer> {
    let profile = Profile::from(tools.tools);
    let palace = open_unscoped(settings, Access::Create)?;
    let for_loader = settings.clone();
    let loader: EmbedderLoader =
        Box::new(move || super::embedder::build(&for_loader).map_err(|error| format!("{error:#}")));
    let mut backend = Backend::new(palace, settings.location(), Some(loader)).with_ingest_pool(settings.ingest_pool);
    if let Some(home) = &settings.home {
        backend = backend.with_host(std::sync::Arc::new(crate::settings::UserFiles::new(home)));
    }
    if let Some(root) = super::memory_files::default_root(settings) {
        backend = backend.with_memory_root(root);
    }
    let backend = backend.with_tenancy();
    let tenancy = backend.tenancy().expect("tenancy was just attached");
    let caller = super::caller(settings, tenancy)?;
    // Refuse at start a caller without a role in the server's workspace.
    backend.scoped(&caller, None)?;
    Ok(McpServer::new(backend, profile).with_caller(caller))
}

/// Runs the background jobs of `work` on their own thread, with the
/// server's palace (its embedder included, so memories the cold path files
/// get vectors). Claims and job locks make any number of servers on one
/// palace safe.
fn spawn_workers(palace: mempalace_engine::Palace) -> Result<Workers> {
    let stop = Arc::new(super::work::Stop::default());
    let for_thread = Arc::clone(&stop);
    let thread = std::thread::Builder::new().name("mempalace-work".into()).spawn(move || {
        let worker = format!("serve:{}", std::process::id());
        let jobs = [
            super::work::JobName::Process,
            super::work::JobName::Enrich,
            super::work::JobName::Consolidate,
            super::work::JobName::Maintain,
        ];
        if let Err(error) = super::work::run_forever(&palace, &jobs, &worker, false, &for_thread) {
            tracing::error!(error = %format!("{error:#}"), "background jobs stopped");
        }
    })?;
    Ok(Workers { stop, thread })
}

/// The background jobs' thread and its stop request.
struct Workers {
    stop: Arc<super::work::Stop>,
    thread: std::thread::JoinHandle<()>,
}

/// How long a stopping server waits for the running job to finish (its
/// claims would otherwise wait for their lease to expire).
const WORKER_STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

impl Workers {
    /// Stops the jobs after the one running and waits for it, within
    /// [`WORKER_STOP_WAIT`].
    fn stop(self) {
        self.stop.request();
        let deadline = std::time::Instant::now() + WORKER_STOP_WAIT;
        while !self.thread.is_finished() {
            if std::time::Instant::now() >= deadline {
                tracing::warn!("a background job is still running; its claims return when their lease ends");
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = self.thread.join();
    }
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting the async runtime")
}

/// `mcp [serve]`.
pub fn run(settings: &Settings, args: McpArgs) -> Result<()> {
    match args.command {
        None => {
            let exe = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "mempalace".into());
            let palace = settings.palace_file.parent().map(|p| p.display().to_string()).unwrap_or_default();
            output::line("Add mempalace to your agent (stdio; the palace is created when missing):")?;
            output::line(format!("  claude mcp add mempalace -- {exe} --palace {palace} mcp serve"))?;
            output::line(format!("  codex mcp add mempalace -- {exe} --palace {palace} mcp serve"))?;
            output::line("Over HTTP (one server for many clients):")?;
            output::line(format!(
                "  {exe} --palace {palace} serve --mcp-http 127.0.0.1:7878   # then http://127.0.0.1:7878/mcp"
            ))?;
            output::line("Tool sets: --tools mempalace (default) | memory | robotmem | all")?;
            Ok(())
        }
        Some(McpCommand::Serve(args)) => {
            let server = server(settings, &args.tools)?;
            let workers = if args.no_workers { None } else { Some(spawn_workers(server.backend().palace().clone())?) };
            tracing::info!(tools = server.tool_names().len(), "MCP server on stdio");
            let served =
                runtime()?.block_on(mempalace_mcp::serve_stdio(server.clone())).context("serving MCP on stdio");
            // Input closed: file what was queued, then let the running job end.
            server.shutdown();
            if let Some(workers) = workers {
                workers.stop();
            }
            served
        }
    }
}

/// `serve --mcp-http ADDR`: MCP at `/mcp`, the REST API at `/api/v1`, the
/// web UI at `/` and `/metrics`, on one port.
pub fn serve(settings: &Settings, args: ServeArgs) -> Result<()> {
    let mut options = HttpOptions {
        addr: args.mcp_http,
        token: settings.mcp_http_token.clone(),
        allowed_hosts: args.allowed_hosts,
        allowed_origins: args.allowed_origins,
        user_tokens: false,
    };
    // Off loopback without the admin token, only an existing team palace
    // may serve (its users' tokens): decided before anything is created.
    if options.check().is_err() {
        options.user_tokens = match open_unscoped(settings, Access::Read) {
            Ok(palace) => mempalace_engine::tenancy::Tenancy::new(palace).is_shared()?,
            Err(_) => false,
        };
    }
    options.check().map_err(|e| super::UserError(e.to_string()))?;
    let server = server(settings, &args.tools)?;
    let workers = if args.no_workers { None } else { Some(spawn_workers(server.backend().palace().clone())?) };
    let served = runtime()?.block_on(async move {
        let shutdown = async {
            let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
            }
            tracing::info!("shutting down");
        };
        let policy = mempalace_web::BrowserPolicy {
            hosts: mempalace_mcp::http::allowed_hosts(&options),
            origins: options.allowed_origins.clone(),
        };
        let web = mempalace_web::router(server.backend().clone(), policy);
        let served = mempalace_mcp::http::serve_with(server.clone(), options, web, shutdown).await;
        // Stopped: file what was queued before exiting.
        let draining = server.clone();
        tokio::task::spawn_blocking(move || draining.shutdown()).await.context("filing the queued writes")?;
        served.map_err(|e| anyhow::Error::from(super::UserError(e.to_string())))
    });
    // Seed 0's order: stop accepting (above), file the queue (above), let
    // the running job end and release its claims, then close the stores.
    if let Some(workers) = workers {
        workers.stop();
    }
    served
}
