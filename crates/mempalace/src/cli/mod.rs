//! The command-line surface: argument parsing, dispatch, and the mapping of
//! errors to exit codes.
//!
//! Each command parses its arguments into engine types, calls one engine
//! method and renders the result (text, or the documented JSON with
//! `--json`). Command names and flags follow the Python MemPalace CLI where
//! it has the command.

mod audit;
mod bench;
mod compress;
mod consolidate;
mod coordination;
mod daemon;
mod drawer;
mod embedder;
mod entities;
mod hallways;
mod hook;
mod identity;
mod instructions;
mod kg;
mod llm;
mod mcp;
mod memories;
mod memory_files;
mod migrate;
mod migrate_store;
mod migrate_wings;
mod mine;
mod model;
mod palace;
mod repair;
mod retrieve;
mod rooms;
mod rules;
mod schedule;
mod split;
mod sweep;
mod sync;
mod tenancy;
mod transfer;
mod update;
mod values;
mod wings;

mod work;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context as _, Result};
use clap::{Args, Parser, Subcommand};
use mempalace_core::classify::TierGates;
use mempalace_core::tenancy::Caller;
use mempalace_engine::tenancy::Tenancy;
use mempalace_engine::{EmbedderCell, EngineError, Palace};
use mempalace_sqlite::{SqliteOptions, SqliteStore};
use mempalace_store::StoreError;

use crate::settings::{self, EmbedderKind, Overrides, Settings};

/// Persistent memory for AI agents.
#[derive(Debug, Parser)]
#[command(name = "mempalace", version, about, propagate_version = true)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command accepts.
#[derive(Debug, Args)]
pub struct GlobalArgs {
    /// Palace directory (holding palace.db) or palace file. Default:
    /// $MEMPALACE_PALACE_PATH, else palace_path in ~/.mempalace/config.json,
    /// else ~/.mempalace/palace.
    #[arg(long, global = true, value_name = "DIR")]
    pub palace: Option<PathBuf>,
    /// Where the palace is stored: a PostgreSQL URL (postgres://user:pass@host/db, the scale-out
    /// backend) or a palace directory or file (as --palace). Default: $MEMPALACE_DATABASE_URL,
    /// else database_url in config.json, else the SQLite palace of --palace.
    #[arg(long, global = true, value_name = "URL|DIR")]
    pub store: Option<String>,
    /// Workspace within the palace (default: "default", or $MEMPALACE_WORKSPACE).
    #[arg(long, global = true, value_name = "ID")]
    pub workspace: Option<String>,
    /// Where model weights live (default: $MEMPALACE_MODEL_DIR, else
    /// ~/.local/share/mempalace/models).
    #[arg(long, global = true, value_name = "DIR")]
    pub model_dir: Option<PathBuf>,
    /// Embedding provider (default: minilm, or $MEMPALACE_EMBEDDER, or embedder in config.json).
    #[arg(long, global = true, value_enum, value_name = "NAME")]
    pub embedder: Option<settings::EmbedderKind>,
    /// Language-model endpoint for the jobs that can use one (default: $MEMPALACE_LLM_BASE_URL,
    /// else llm_base_url in config.json; none: every job runs deterministic). See docs/llm.md.
    #[arg(long, global = true, value_name = "URL")]
    pub llm_base_url: Option<String>,
    /// Language model asked by tasks without their own (default: $MEMPALACE_LLM_MODEL, else llm_model).
    #[arg(long, global = true, value_name = "NAME")]
    pub llm_model: Option<String>,
    /// Language-model protocol: openai (chat completions, the default) or ollama.
    #[arg(long, global = true, value_name = "NAME")]
    pub llm_provider: Option<String>,
    /// Use no language model in this run, whatever is configured.
    #[arg(long, global = true)]
    pub no_llm: bool,
    /// Act as the user or agent whose API token this file holds (default: $MEMPALACE_TOKEN; without
    /// either, as the palace's local operator). Tokens never go on the command line. See docs/tenancy.md.
    #[arg(long, global = true, value_name = "FILE")]
    pub token_file: Option<PathBuf>,
    /// More log output on stderr (-v info, -vv debug). $MEMPALACE_LOG takes a
    /// full filter such as "mempalace=debug".
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a palace, and with DIR, a mempalace.yaml describing that project.
    Init(palace::InitArgs),
    /// File one drawer (a verbatim memory) and print its id.
    Add(drawer::AddArgs),
    /// Show drawers per wing and room.
    Status(palace::StatusArgs),
    /// Search the palace: keywords and meaning combined.
    Search(retrieve::SearchArgs),
    /// Print the wake-up context for an agent: identity (L0) and essential story (L1).
    WakeUp(retrieve::WakeUpArgs),
    /// Print the latest drawers of a wing or room (L2).
    Recall(retrieve::RecallArgs),
    /// Print the memory section to inject into a prompt for a user message (or nothing).
    Inject(retrieve::InjectArgs),
    /// Extract memories from a conversation (transcript or user:/assistant: text): add, update or retract.
    Extract(memories::ExtractArgs),
    /// List the extracted memories a user sees: their own first, then the workspace's.
    Memories(memories::MemoriesArgs),
    /// Episodic summaries of ended sessions: list, show with drawers, search, write now.
    #[command(subcommand)]
    Episodes(consolidate::EpisodesCommand),
    /// Move faded drawers (importance decayed below 0.5, under 3 accesses) to the archive; --dry-run previews.
    Prune(consolidate::PruneArgs),
    /// The archive of pruned drawers: list, restore.
    #[command(subcommand)]
    Archive(consolidate::ArchiveCommand),
    /// Duplicate entities ("Postgres", "PostgreSQL"): dedup, merge, unmerge, aliases.
    #[command(subcommand)]
    Entities(entities::EntitiesCommand),
    /// Memory-type and room prototypes (centroids): recompute, list.
    #[command(subcommand)]
    Centroids(entities::CentroidsCommand),
    /// Show one drawer.
    Get(drawer::GetArgs),
    /// Delete a drawer: hide it (default, keeps it for review) or remove it with --hard.
    Delete(drawer::DeleteArgs),
    /// Show or set the identity text (L0) given to agents at wake-up.
    #[command(subcommand)]
    Identity(identity::IdentityCommand),
    /// Write the whole palace as JSONL (lossless, every workspace).
    Export(transfer::ExportArgs),
    /// Read a JSONL export into the palace (records already present are kept).
    Import(transfer::ImportArgs),
    /// The temporal knowledge graph: facts with validity windows.
    #[command(subcommand)]
    Kg(kg::KgCommand),
    /// The palace graph: rooms, wings, tunnels.
    #[command(subcommand)]
    Graph(kg::GraphCommand),
    /// Entity pairs that drawers of a wing mention together (hallways), strongest first.
    Hallways(hallways::HallwaysArgs),
    /// Mining on a timer: the sources, and a systemd timer, launchd agent or cron line that mines them.
    #[command(subcommand)]
    Schedule(schedule::ScheduleCommand),
    /// Fetch, distill and inspect embedding models.
    #[command(subcommand)]
    Model(model::ModelCommand),
    /// Give every drawer a vector of the configured embedder (resumable).
    Reembed(model::ReembedArgs),
    /// Mine a project (documents first) or conversations (transcripts, chat exports, opencode) into drawers.
    Mine(mine::MineArgs),
    /// Remove the drawers of mined files that no longer exist.
    Sync(sync::SyncArgs),
    /// GoClaw memory files (MEMORY.md, memory/*.md) as memory: sync both ways, list, read, add, edit.
    #[command(subcommand)]
    MemoryFiles(memory_files::MemoryFilesCommand),
    /// Agent harness hooks (Claude Code, Codex): mine the transcript, checkpoint the diary.
    #[command(subcommand)]
    Hook(hook::HookCommand),
    /// Retrieval-quality benchmarks through the real filing and search path.
    #[command(subcommand)]
    Bench(bench::BenchCommand),
    /// Bring a Python MemPalace palace over (drawers, diary, knowledge graph, identity, tunnels).
    MigrateFromPython(migrate::MigrateArgs),
    /// Copy a whole palace between stores: a SQLite palace and PostgreSQL, either way.
    MigrateStore(migrate_store::MigrateStoreArgs),
    /// Run the background jobs (cold-path processing, daily maintenance); many workers may share a palace.
    Work(work::WorkArgs),
    /// MCP: print the setup lines for Claude Code and Codex, or `mcp serve` on stdio.
    Mcp(mcp::McpArgs),
    /// Users and agents of a team palace (docs/tenancy.md).
    #[command(subcommand)]
    User(tenancy::UserCommand),
    /// API tokens: create (shown once), list, revoke.
    #[command(subcommand)]
    Token(tenancy::TokenCommand),
    /// Teams: a leader who writes, members who read.
    #[command(subcommand)]
    Team(tenancy::TeamCommand),
    /// Workspaces: create, grant roles, limits, the audit trail.
    #[command(subcommand)]
    Workspace(tenancy::WorkspaceCommand),
    /// Run the long-lived servers (for now: MCP over streamable HTTP).
    Serve(mcp::ServeArgs),
    /// Check the palace and rebuild derived indexes if needed. Never deletes user data.
    #[command(visible_alias = "repair")]
    Doctor(palace::DoctorArgs),
    /// Print instructions for agents (init, search, mine, help, status, audit); without a name, the list.
    // `help` is one of the guides, so clap's own help subcommand steps aside (`--help` still works).
    #[command(disable_help_subcommand = true)]
    Instructions(instructions::InstructionsArgs),
    /// Print the shared-brain rules block for an agent instruction file (CLAUDE.md, AGENTS.md, …).
    Rules(rules::RulesArgs),
    /// File every Claude Code message of a transcript (or folder) as its own drawer, once.
    Sweep(sweep::SweepArgs),
    /// AAAK-summarise drawers (kept in each drawer's context as `aaak`); report tokens before and after.
    Compress(compress::CompressArgs),
    /// Split transcript .txt files holding several Claude Code sessions into one file per session.
    Split(split::SplitArgs),
    /// Show the derived-index checks and vector coverage (read-only; `doctor` repairs).
    RepairStatus(repair::RepairStatusArgs),
    /// The Python MemPalace's ChromaDB version migration: explains that there is none here.
    Migrate(repair::MigrateArgs),
    /// Normalise wing names (lowercase, `-` and spaces to `_`), keeping drawer ids.
    MigrateWings(migrate_wings::MigrateWingsArgs),
    /// Score how well organised the palace is (rooms, naming, tunnels, knowledge graph).
    Audit(audit::AuditArgs),
    /// Propose a closed room set for a wing, then move its drawers to their nearest room.
    #[command(subcommand)]
    Rooms(rooms::RoomsCommand),
    /// Wing maintenance: split a transcript wing by source project.
    #[command(subcommand)]
    Wings(wings::WingsCommand),
    /// The installed version and how to update (mempalace never updates itself).
    #[command(subcommand)]
    Update(update::UpdateCommand),
    /// The Python MemPalace's daemon: not needed here (explains what to use).
    Daemon(daemon::DaemonArgs),
    /// The Python MemPalace's `palace set-embedder`: explains where the embedder lives here.
    Palace(daemon::PalaceArgs),
    /// The language model: show its settings (status), try it (test), switch it off or on for running processes.
    #[command(subcommand)]
    Llm(llm::LlmCommand),
    /// Agent coordination events — delegate work, wait for replies (MemPalace's RFC 003).
    #[command(subcommand)]
    Logstream(coordination::LogstreamCommand),
    /// Create or run complete agent tasks over the logstream.
    #[command(subcommand)]
    Task(coordination::TaskCommand),
    /// Exact artifact exchange for agent handoffs (MemPalace's RFC 003).
    #[command(subcommand)]
    Artifact(coordination::ArtifactCommand),
}

/// Exit codes other than 0 (documented in docs/cli.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Our fault: an internal error.
    Internal = 1,
    /// Bad arguments or input; fix them and retry.
    Usage = 2,
    /// The drawer, palace or file asked for does not exist.
    NotFound = 3,
    /// The palace stayed locked by another writer.
    Busy = 4,
    /// The palace file is not a palace, is damaged or is too new.
    BadPalace = 5,
    /// The disk refused (space, permissions).
    Io = 6,
    /// `doctor` found problems it could not repair.
    Unhealthy = 7,
    /// Something the command needs (an embedding model) is not available.
    Unavailable = 8,
    /// The caller's token or role does not allow this (docs/tenancy.md).
    Denied = 9,
}

/// An error the user can fix, raised by the CLI itself (bad stdin, bad file).
#[derive(Debug)]
pub struct UserError(pub String);

impl std::fmt::Display for UserError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UserError {}

/// Something the command needs is not available (exit 8): a language
/// model that is not configured or does not answer.
#[derive(Debug)]
pub struct Unavailable(pub String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unavailable {}

/// A command that has already said what it had to say (on stdout, as its
/// documented result) and ends with this exit status: `logstream wait`
/// after a timeout (2), a launched agent's own status, a `--json` refusal
/// printed as `{"error": …}`. `main` prints nothing more.
#[derive(Debug)]
pub struct Silent(pub u8);

impl std::fmt::Display for Silent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "exit status {}", self.0)
    }
}

impl std::error::Error for Silent {}

/// A `doctor` run that ended unhealthy.
#[derive(Debug)]
pub struct Unhealthy;

impl std::fmt::Display for Unhealthy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the palace has problems doctor could not repair (see above); restore from `mempalace export` output if needed")
    }
}

impl std::error::Error for Unhealthy {}

fn store_exit(error: &StoreError) -> Exit {
    match error {
        StoreError::Missing { .. } => Exit::NotFound,
        StoreError::NotAPalace { .. } | StoreError::SchemaTooNew { .. } | StoreError::Corrupt { .. } => Exit::BadPalace,
        StoreError::Busy { .. } => Exit::Busy,
        StoreError::Limit { .. } | StoreError::OverLimit(_) => Exit::Usage,
        StoreError::Denied { .. } => Exit::Denied,
        StoreError::InvalidData { .. } => Exit::BadPalace,
        StoreError::Io { .. } => Exit::Io,
        StoreError::Unreachable { .. } => Exit::Unavailable,
        StoreError::Backend { .. } => Exit::Internal,
    }
}

fn engine_exit(error: &EngineError) -> Exit {
    match error {
        EngineError::Invalid(_) => Exit::Usage,
        EngineError::NotFound { .. } | EngineError::RoomNotFound { .. } => Exit::NotFound,
        EngineError::Coordination(error) if error.is_not_found() => Exit::NotFound,
        EngineError::Coordination(_) => Exit::Usage,
        EngineError::Unavailable(_) => Exit::Unavailable,
        EngineError::Conflict(_) => Exit::Usage,
        EngineError::Store(error) => store_exit(error),
        EngineError::Unauthenticated(_) => Exit::Denied,
        EngineError::RateLimited { .. } => Exit::Busy,
    }
}

fn feed_exit(error: &mempalace_feed::FeedError) -> Exit {
    use mempalace_feed::FeedError;
    match error {
        FeedError::NotFound { .. } => Exit::NotFound,
        FeedError::Invalid(_) | FeedError::NothingMined(_) | FeedError::Unreadable { .. } => Exit::Usage,
        FeedError::Engine(error) => engine_exit(error),
    }
}

/// The exit code for an error chain: the first cause we classify decides.
pub fn exit_code(error: &anyhow::Error) -> Exit {
    for cause in error.chain() {
        if let Some(error) = cause.downcast_ref::<mempalace_feed::FeedError>() {
            return feed_exit(error);
        }
        if let Some(error) = cause.downcast_ref::<EngineError>() {
            return engine_exit(error);
        }
        if let Some(error) = cause.downcast_ref::<StoreError>() {
            return store_exit(error);
        }
        if let Some(error) = cause.downcast_ref::<mempalace_core::coordination::CoordinationError>() {
            return if error.is_not_found() { Exit::NotFound } else { Exit::Usage };
        }
        if cause.downcast_ref::<mempalace_core::ValidationError>().is_some() || cause.is::<UserError>() {
            return Exit::Usage;
        }
        if cause.is::<Unhealthy>() {
            return Exit::Unhealthy;
        }
        if cause.is::<Unavailable>() {
            return Exit::Unavailable;
        }
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::NotFound
        {
            return Exit::NotFound;
        }
    }
    Exit::Internal
}

/// Resolves settings from the environment snapshot and the flags. Every
/// mistake in them is the user's to fix (exit 2), never an internal error.
fn settings(global: &GlobalArgs, env: &BTreeMap<String, String>) -> Result<Settings> {
    let home = settings::home(env);
    let token = match &global.token_file {
        Some(path) => Some(std::fs::read_to_string(path).map_err(|error| {
            UserError(format!(
                "cannot read the token file {}: {error}; pass the file `token create` wrote",
                path.display()
            ))
        })?),
        None => None,
    };
    settings::resolve(
        env,
        home.as_deref(),
        &Overrides {
            palace: global.palace.clone(),
            store: global.store.clone(),
            workspace: global.workspace.clone(),
            model_dir: global.model_dir.clone(),
            embedder: global.embedder,
            llm_base_url: global.llm_base_url.clone(),
            llm_model: global.llm_model.clone(),
            llm_provider: global.llm_provider.clone(),
            no_llm: global.no_llm,
            token,
        },
    )
    .map_err(|error| UserError(format!("{error:#}")).into())
}

/// How a command needs the palace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Only reads; the palace must exist.
    Read,
    /// Changes existing data; the palace must exist.
    Update,
    /// Files new data; the palace is created when missing.
    Create,
}

/// How a process uses its SQLite connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Connections {
    /// A pool of readers beside the writer, so reads never wait for
    /// writes: servers, workers, every command by default.
    Pooled,
    /// Reads go to the writer connection while it is free (one connection,
    /// one schema parse): the commands hooks run often (`add`, `search`,
    /// `inject`, `hook`), one thread at a time.
    SharedWriter,
}

/// Opens the store named by the settings: PostgreSQL when a database URL
/// is set (migrated on connect, whatever the access), else the SQLite file.
fn open_store(
    settings: &Settings,
    access: Access,
    connections: Connections,
) -> Result<Arc<dyn mempalace_store::Store>> {
    if let Some(url) = &settings.database_url {
        return open_postgres(url);
    }
    let file = &settings.palace_file;
    if access == Access::Create
        && let Some(dir) = file.parent()
        && !dir.exists()
    {
        std::fs::create_dir_all(dir).with_context(|| format!("creating the palace directory {}", dir.display()))?;
    }
    if !file.exists()
        && let Some(dir) = file.parent()
        && dir.join("chroma.sqlite3").exists()
    {
        return Err(UserError(format!(
            "{} holds a Python MemPalace palace (chroma.sqlite3), not a mempalace-rs palace; \
             bring it over with `mempalace migrate-from-python`, or pass another --palace",
            dir.display()
        ))
        .into());
    }
    let options = SqliteOptions {
        create: access == Access::Create,
        busy_timeout: std::time::Duration::from_millis(settings.busy_timeout_ms),
        share_writer: connections == Connections::SharedWriter,
        ..SqliteOptions::default()
    };
    Ok(Arc::new(SqliteStore::open(file, options)?))
}

#[cfg(feature = "postgres")]
fn open_postgres(url: &str) -> Result<Arc<dyn mempalace_store::Store>> {
    Ok(Arc::new(mempalace_postgres::PgStore::open(url, mempalace_postgres::PgOptions::default())?))
}

#[cfg(not(feature = "postgres"))]
fn open_postgres(url: &str) -> Result<Arc<dyn mempalace_store::Store>> {
    Err(UserError(format!(
        "{} is a PostgreSQL palace, but this mempalace was built without PostgreSQL support; \
         rebuild with `cargo build --release --features postgres`, or use a palace file (--palace DIR)",
        mempalace_store::location::redact(url)
    ))
    .into())
}

/// Opens the palace named by the settings, with the process's language
/// model when one is configured (jobs that can use it do; the rest never
/// call it).
fn open_palace(settings: &Settings, access: Access) -> Result<Palace> {
    scope(settings, open_unscoped_with(settings, access, Connections::Pooled)?)
}

/// The palace without any caller's scope: the local operator's handle on a
/// single-user palace, and what `Tenancy` scopes for everyone else.
pub(crate) fn open_unscoped(settings: &Settings, access: Access) -> Result<Palace> {
    open_unscoped_with(settings, access, Connections::Pooled)
}

/// [`open_unscoped`] with the connections chosen.
fn open_unscoped_with(settings: &Settings, access: Access, connections: Connections) -> Result<Palace> {
    let store = open_store(settings, access, connections)?;
    let palace = Palace::new(store, settings.workspace.clone())
        .with_tier_gates(TierGates { high: settings.heuristic_high, low: settings.heuristic_low })
        .with_jobs(settings.jobs)
        .with_kg_limits(settings.kg_limits.0, settings.kg_limits.1);
    Ok(match llm::client(settings)? {
        Some(client) => palace.with_llm(client),
        None => palace,
    })
}

/// The caller of this run: the user or agent of `$MEMPALACE_TOKEN` /
/// `--token-file`, else the palace's local operator.
pub(crate) fn caller(settings: &Settings, tenancy: &Tenancy) -> Result<Caller> {
    Ok(match &settings.token {
        Some(token) => tenancy.authenticate(token.expose())?,
        None => Caller::Local,
    })
}

/// `palace` scoped to this run's caller (docs/tenancy.md): unchanged on a
/// single-user palace without a token.
fn scope(settings: &Settings, palace: Palace) -> Result<Palace> {
    let tenancy = Tenancy::new(palace);
    let caller = caller(settings, &tenancy)?;
    Ok(tenancy.scope(&caller, None)?)
}

/// Attaches the configured embedding provider (none when its model is
/// missing, after a warning).
pub(crate) fn with_embedder(palace: Palace, settings: &Settings) -> Result<Palace> {
    Ok(match embedder::build(settings)? {
        Some(embedder) => palace.with_embedder(embedder),
        None => palace,
    })
}

/// The palace with the configured embedder, a local model loading on its
/// own thread while the palace opens and the text is prepared (noise
/// filter, classification, extraction); only the embedding waits for it.
/// For the commands hooks run often (`add`, `search`, `inject`, `hook`),
/// where the load was most of the process's time; their reads share the
/// writer connection ([`Connections::SharedWriter`]). Vectors and warnings
/// are those of [`with_embedder`]: a missing local model is a warning in
/// both, and a remote provider (whose setup can fail the command) is built
/// in line as there.
pub(crate) fn open_with_embedder(settings: &Settings, access: Access) -> Result<Palace> {
    match settings.embedder {
        EmbedderKind::MiniLm
        | EmbedderKind::MiniLmF32
        | EmbedderKind::MiniLmOneText
        | EmbedderKind::MiniLmInt8
        | EmbedderKind::Mpnet
        | EmbedderKind::MpnetOneText
        | EmbedderKind::Static => {
            let for_loader = settings.clone();
            let cell = EmbedderCell::load_in_background(Box::new(move || {
                embedder::build(&for_loader).map_err(|error| format!("{error:#}"))
            }));
            Ok(one_command(settings, access)?.with_deferred_embedder(cell))
        }
        EmbedderKind::OpenAi | EmbedderKind::Ollama | EmbedderKind::None => {
            with_embedder(one_command(settings, access)?, settings)
        }
    }
}

/// The palace for one command run from one thread at a time: reads share
/// the writer connection ([`Connections::SharedWriter`]).
fn one_command(settings: &Settings, access: Access) -> Result<Palace> {
    scope(settings, open_unscoped_with(settings, access, Connections::SharedWriter)?)
}

/// Runs the parsed command line with an environment snapshot.
pub fn run(cli: Cli, env: &BTreeMap<String, String>) -> Result<()> {
    let settings = settings(&cli.global, env)?;
    tracing::debug!(palace = %settings.location(), workspace = %settings.workspace, "settings resolved");
    match cli.command {
        Command::Init(args) => palace::init(&settings, args),
        Command::Add(mut args) => {
            // The patterns filing uses compile beside the palace opening
            // and the model loading (about 15 ms of one process's work).
            if !args.raw {
                std::thread::spawn(|| {
                    mempalace_core::classify::prepare();
                    mempalace_core::extract::prepare();
                });
            }
            let text = drawer::read_text(std::mem::take(&mut args.text))?;
            let settings = if text.chars().count() <= mempalace_core::chunk::CHUNK_SIZE {
                embedder::for_one_text(&settings)
            } else {
                settings
            };
            drawer::add(&open_with_embedder(&settings, Access::Create)?, args, text)
        }
        Command::Status(args) => palace::status(&open_palace(&settings, Access::Read)?, args),
        Command::Get(args) => drawer::get(&open_palace(&settings, Access::Read)?, args),
        Command::Search(args) => {
            retrieve::search(&open_with_embedder(&embedder::for_one_text(&settings), Access::Read)?, args)
        }
        Command::WakeUp(args) => retrieve::wake_up(&open_palace(&settings, Access::Read)?, args),
        Command::Recall(args) => retrieve::recall(&open_palace(&settings, Access::Read)?, args),
        Command::Inject(args) => {
            retrieve::inject(&open_with_embedder(&embedder::for_one_text(&settings), Access::Read)?, args)
        }
        Command::Delete(args) => drawer::delete(&open_palace(&settings, Access::Update)?, args),
        Command::Identity(command) => identity::run(&settings, command),
        Command::Export(args) => transfer::export(&open_palace(&settings, Access::Read)?, args),
        Command::Import(args) => transfer::import(&settings, args),
        Command::Model(command) => model::run(&settings, command),
        Command::Mcp(args) => mcp::run(&settings, args),
        Command::User(command) => tenancy::user(&settings, command),
        Command::Token(command) => tenancy::token(&settings, command),
        Command::Team(command) => tenancy::team(&settings, command),
        Command::Workspace(command) => tenancy::workspace(&settings, command),
        Command::MigrateFromPython(args) => migrate::run(&settings, args),
        Command::MigrateStore(args) => migrate_store::run(&settings, args),
        Command::Work(args) => work::run(&with_embedder(open_palace(&settings, Access::Create)?, &settings)?, args),
        Command::Bench(command) => bench::run(&settings, command),
        Command::Hook(command) => hook::run(&settings, command),
        Command::Extract(args) => {
            memories::extract(&with_embedder(open_palace(&settings, Access::Create)?, &settings)?, args)
        }
        Command::Memories(args) => memories::list(&open_palace(&settings, Access::Read)?, args),
        Command::Episodes(command) => {
            let access = if matches!(command, consolidate::EpisodesCommand::Write { .. }) {
                Access::Create
            } else {
                Access::Read
            };
            consolidate::episodes(&with_embedder(open_palace(&settings, access)?, &settings)?, command)
        }
        Command::Prune(args) => consolidate::prune(&open_palace(&settings, Access::Update)?, args),
        Command::Archive(command) => consolidate::archive(&open_palace(&settings, Access::Update)?, command),
        Command::Entities(command) => {
            let access = if matches!(command, entities::EntitiesCommand::Aliases { .. }) {
                Access::Read
            } else {
                Access::Update
            };
            entities::entities(&open_palace(&settings, access)?, command)
        }
        Command::Centroids(command) => {
            let access =
                if matches!(command, entities::CentroidsCommand::List { .. }) { Access::Read } else { Access::Update };
            entities::centroids(&with_embedder(open_palace(&settings, access)?, &settings)?, command)
        }
        Command::Sync(args) => sync::run(&open_palace(&settings, Access::Update)?, args),
        Command::MemoryFiles(command) => {
            memory_files::run(&settings, command, |access| with_embedder(open_palace(&settings, access)?, &settings))
        }
        Command::Mine(args) => mine::run(
            &with_embedder(open_palace(&settings, Access::Create)?, &settings)?,
            args,
            settings.home.as_deref(),
        ),
        Command::Serve(args) => mcp::serve(&settings, args),
        Command::Hallways(args) => hallways::run(&open_palace(&settings, Access::Read)?, args),
        Command::Schedule(command) => schedule::run(&settings, command, settings::job_environment(env), || {
            with_embedder(open_palace(&settings, Access::Create)?, &settings)
        }),
        Command::Kg(command) => {
            let access = if matches!(command, kg::KgCommand::Add { .. }) { Access::Create } else { Access::Read };
            kg::run_kg(&open_palace(&settings, access)?, command)
        }
        Command::Graph(command) => {
            let access = if matches!(command, kg::GraphCommand::Tunnel(kg::TunnelCommand::Create { .. })) {
                Access::Create
            } else {
                Access::Read
            };
            kg::run_graph(&open_palace(&settings, access)?, command)
        }
        Command::Reembed(args) => {
            model::reembed(&with_embedder(open_palace(&settings, Access::Update)?, &settings)?, args)
        }
        Command::Doctor(args) => palace::doctor(&open_palace(&settings, Access::Update)?, args),
        Command::Instructions(args) => instructions::instructions(args),
        Command::Rules(args) => rules::rules(args),
        Command::Sweep(args) => sweep::run(&with_embedder(open_palace(&settings, Access::Create)?, &settings)?, args),
        Command::Compress(args) => compress::run(&open_palace(&settings, Access::Update)?, &settings, args),
        Command::Split(args) => split::run(&settings, args),
        Command::RepairStatus(args) => repair::repair_status(&open_palace(&settings, Access::Read)?, &settings, args),
        Command::Migrate(args) => repair::migrate(&settings, args),
        Command::MigrateWings(args) => migrate_wings::run(&open_palace(&settings, Access::Update)?, args),
        Command::Audit(args) => audit::run(&open_palace(&settings, Access::Read)?, &settings, args),
        Command::Rooms(command) => {
            // Only applying compares vectors; proposing reads text.
            let palace = match command {
                rooms::RoomsCommand::Propose(_) => open_palace(&settings, Access::Read)?,
                rooms::RoomsCommand::Apply(_) => with_embedder(open_palace(&settings, Access::Update)?, &settings)?,
            };
            rooms::run(&palace, &settings, command)
        }
        Command::Wings(command) => wings::run(&open_palace(&settings, Access::Update)?, &settings, command),
        Command::Update(command) => update::run(command),
        Command::Daemon(args) => daemon::daemon(args),
        Command::Palace(args) => daemon::palace(args),
        Command::Llm(command) => llm::run(&settings, command),
        Command::Logstream(command) => coordination::run_logstream(&settings, command),
        Command::Task(command) => coordination::run_task(&settings, command),
        Command::Artifact(command) => coordination::run_artifact(&settings, command),
    }
}

#[cfg(test)]
mod tests {
    /// clap checks a command table only when it is used; this checks all of
    /// it (duplicate names such as a `help` subcommand, conflicting flags).
    #[test]
    fn the_command_table_is_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
