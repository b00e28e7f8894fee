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
fn spawn_workers(palace: mempalace_engine::Palace) -> Result<()> {
    std::thread::Builder::new().name("mempalace-work".into()).spawn(move || {
        let worker = format!("serve:{}", std::process::id());
        let jobs = [
            super::work::JobName::Process,
            super::work::JobName::Enrich,
            super::work::JobName::Consolidate,
            super::work::JobName::Maintain,
        ];
        if let Err(error) = super::work::run_forever(&palace, &jobs, &worker, false) {
            tracing::error!(error = %format!("{error:#}"), "background jobs stopped");
        }
    })?;
    Ok(())
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
            if !args.no_workers {
                spawn_workers(server.backend().palace().clone())?;
            }
            tracing::info!(tools = server.tool_names().len(), "MCP server on stdio");
            let served =
                runtime()?.block_on(mempalace_mcp::serve_stdio(server.clone())).context("serving MCP on stdio");
            // Input closed: file what was queued before exiting.
            server.shutdown();
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
    if !args.no_workers {
        spawn_workers(server.backend().palace().clone())?;
    }
    runtime()?.block_on(async move {
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
        served.map_err(|e| super::UserError(e.to_string()).into())
    })
}
