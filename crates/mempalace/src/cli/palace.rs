//! `init`, `status` and `doctor`: the palace as a whole.
//!
//! `init` also takes the Python MemPalace's flags: `--lang` is kept in
//! config.json (`entity_languages`), `--auto-mine` mines the project after
//! writing its `mempalace.yaml` (`mempalace_feed::mine`, projects mode);
//! the LLM flags, `--backend`, `--daemon` and `--direct` are accepted and
//! change nothing (there is no LLM path, only our stores, and no daemon).

use std::io::{BufRead, IsTerminal};
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Args;
use mempalace_core::name::normalize_wing_name;
use mempalace_core::project::ProjectConfig;
use mempalace_engine::consolidate::CONSOLIDATE;
use mempalace_engine::work::{ENRICH, MAINTAIN, PROCESS};
use mempalace_engine::{DoctorReport, Palace};
use mempalace_store::{HealthCheck, PipelineCounts};
use serde_json::json;

use mempalace_feed::{MineOptions, Mode};

use super::{Access, Unhealthy, UserError, open_palace, with_embedder};
use crate::output;
use crate::settings::{self, Settings};

/// Arguments of `init`.
#[derive(Debug, Args)]
pub struct InitArgs {
    /// A project directory: writes DIR/mempalace.yaml (wing and rooms) for `mempalace mine`.
    pub dir: Option<PathBuf>,
    /// Accept the proposed rooms without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Mine DIR (its documents, as `mempalace mine DIR`) right after writing mempalace.yaml.
    #[arg(long)]
    pub auto_mine: bool,
    /// Comma-separated language codes for entity detection (e.g. en,pt-br), kept as entity_languages in
    /// ~/.mempalace/config.json (the Python MemPalace's setting; extraction here does not read it yet).
    #[arg(long, value_name = "CODES")]
    pub lang: Option<String>,
    /// Accepted for the Python MemPalace; there is no LLM path here (init is heuristic).
    #[arg(long, hide = true)]
    pub llm: bool,
    /// Accepted for the Python MemPalace (init is always heuristic here).
    #[arg(long, hide = true)]
    pub no_llm: bool,
    /// Accepted for the Python MemPalace; ignored.
    #[arg(long, hide = true)]
    pub llm_provider: Option<String>,
    /// Accepted for the Python MemPalace; ignored.
    #[arg(long, hide = true)]
    pub llm_model: Option<String>,
    /// Accepted for the Python MemPalace; ignored.
    #[arg(long, hide = true)]
    pub llm_endpoint: Option<String>,
    /// Accepted for the Python MemPalace; ignored.
    #[arg(long, hide = true)]
    pub llm_api_key: Option<String>,
    /// Accepted for the Python MemPalace; nothing is sent anywhere.
    #[arg(long, hide = true)]
    pub accept_external_llm: bool,
    /// Accepted for the Python MemPalace; the store is chosen by --palace or --store.
    #[arg(long, hide = true)]
    pub backend: Option<String>,
    /// Accepted for the Python MemPalace's write routing; no effect.
    #[arg(long, hide = true, conflicts_with = "direct")]
    pub daemon: bool,
    /// Accepted for the Python MemPalace's write routing; no effect.
    #[arg(long, hide = true)]
    pub direct: bool,
}

impl InitArgs {
    fn wants_llm(&self) -> bool {
        self.llm
            || self.llm_provider.is_some()
            || self.llm_model.is_some()
            || self.llm_endpoint.is_some()
            || self.llm_api_key.is_some()
            || self.accept_external_llm
    }
}

/// `--lang` as a list: blank items dropped, `en` when nothing is left.
fn languages(codes: &str) -> Vec<String> {
    let list: Vec<String> = codes.split(',').map(str::trim).filter(|c| !c.is_empty()).map(str::to_string).collect();
    if list.is_empty() { vec!["en".to_string()] } else { list }
}

/// Arguments of `status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print the documented JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Arguments of `doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Only check; do not rebuild derived data.
    #[arg(long)]
    pub check_only: bool,
    /// Print the documented JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// Accepted for compatibility with `mempalace repair --yes`; doctor never asks.
    #[arg(long, short = 'y', hide = true)]
    pub yes: bool,
}

pub fn init(settings: &Settings, args: InitArgs) -> Result<()> {
    if args.auto_mine && args.dir.is_none() {
        return Err(UserError("--auto-mine needs the project directory: mempalace init DIR --auto-mine".into()).into());
    }
    if args.wants_llm() && !args.no_llm {
        output::note("mempalace-rs has no LLM path yet: init runs heuristics-only (the --llm flags are ignored)");
    }
    if let Some(backend) = &args.backend {
        output::note(format!(
            "--backend {backend} is ignored: the palace is stored in SQLite (--palace) or PostgreSQL (--store postgres://…)"
        ));
    }
    let palace = open_palace(settings, Access::Create)?;
    let taxonomy = palace.taxonomy()?;
    output::line(format!("palace ready at {} ({} drawers)", settings.location(), taxonomy.total_drawers))?;
    if let Some(codes) = &args.lang {
        let list = languages(codes);
        let path = settings::save_entity_languages(settings.home.as_deref(), &list)?;
        output::line(format!("languages: {} (saved as entity_languages in {})", list.join(", "), path.display()))?;
    }
    let Some(dir) = args.dir.clone() else { return Ok(()) };
    write_project_config(&dir, args.yes)?;
    if args.auto_mine {
        auto_mine(settings, &dir)?;
    } else {
        output::line(format!("next: mempalace mine {}", dir.display()))?;
    }
    Ok(())
}

/// Mines the project folder with the defaults of `mempalace mine DIR`.
fn auto_mine(settings: &Settings, dir: &std::path::Path) -> Result<()> {
    let palace = with_embedder(open_palace(settings, Access::Create)?, settings)?;
    let options = MineOptions::new(Mode::Projects);
    let report = mempalace_feed::mine(&palace, Some(dir), settings.home.as_deref(), &options, &mut |_, _, _| {})?;
    output::line(format!(
        "mined {}: {} files read, {} drawers added, {} unchanged ({:.1} s)",
        dir.display(),
        report.read,
        report.drawers_added,
        report.drawers_unchanged,
        report.seconds
    ))?;
    for problem in report.failed.iter().take(10) {
        output::note(format!("failed: {} — {}", problem.file, problem.error));
    }
    Ok(())
}

/// Writes DIR/mempalace.yaml (asking first on a terminal unless `yes`);
/// an existing one is kept.
fn write_project_config(dir: &std::path::Path, yes: bool) -> Result<()> {
    if !dir.is_dir() {
        return Err(
            UserError(format!("{} is not a directory; pass the project folder to describe", dir.display())).into()
        );
    }
    let yaml_path = dir.join("mempalace.yaml");
    if yaml_path.exists() {
        output::line(format!("kept existing {}", yaml_path.display()))?;
        return Ok(());
    }
    let dir = dir.canonicalize().with_context(|| format!("resolving {}", dir.display()))?;
    let name = dir.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
    let wing = normalize_wing_name(&name);
    let wing = if mempalace_core::Wing::parse(&wing).is_ok() { wing } else { "project".to_string() };
    let mut folders = Vec::new();
    for entry in std::fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))? {
        let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
        if entry.file_type().map(|kind| kind.is_dir()).unwrap_or(false) {
            folders.push(entry.file_name().to_string_lossy().into_owned());
        }
    }
    let config = ProjectConfig::propose(&wing, &folders);
    if !yes && std::io::stdin().is_terminal() {
        output::note(format!("wing: {}", config.wing));
        for room in &config.rooms {
            output::note(format!("  room {:<20} {}", room.name, room.description));
        }
        output::note("write mempalace.yaml with these rooms? [Y/n] ");
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if answer.trim().eq_ignore_ascii_case("n") || answer.trim().eq_ignore_ascii_case("no") {
            output::line("skipped mempalace.yaml")?;
            return Ok(());
        }
    }
    std::fs::write(&yaml_path, config.to_yaml()).with_context(|| format!("writing {}", yaml_path.display()))?;
    output::line(format!("wrote {} (wing {}, {} rooms)", yaml_path.display(), config.wing, config.rooms.len()))?;
    Ok(())
}

pub fn status(palace: &Palace, args: StatusArgs) -> Result<()> {
    let status = palace.status()?;
    let taxonomy = &status.taxonomy;
    let limits = workspace_limits(palace)?;
    if args.json {
        let (wings, rooms) = mempalace_mcp::shapes::wing_and_room_counts(taxonomy);
        let nested = mempalace_mcp::shapes::taxonomy(taxonomy);
        output::json(&json!({
            "palace_path": status.storage.location,
            "backend": status.storage.backend,
            "schema_version": status.storage.schema_version,
            "workspace": status.workspace.as_str(),
            "total_drawers": taxonomy.total_drawers,
            "wings": wings,
            "rooms": rooms,
            "taxonomy": nested,
            "pipeline": mempalace_mcp::shapes::PipelineShape::of(&status.pipeline),
            "limits": limits.as_ref().map(|rows| rows.iter().map(|(name, used, limit)| {
                (name.to_string(), json!({"used": used, "limit": limit}))
            }).collect::<serde_json::Map<_, _>>()),
        }))?;
        return Ok(());
    }
    // The Python MemPalace's layout, so scripts that read it keep working.
    let rule = "=".repeat(55);
    let mut text = format!("\n{rule}\n  MemPalace Status — {} drawers\n{rule}\n\n", taxonomy.total_drawers);
    for (wing_name, wing) in &taxonomy.wings {
        text.push_str(&format!("  WING: {wing_name}\n"));
        let mut rooms: Vec<(&String, &u64)> = wing.rooms.iter().collect();
        rooms.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (room, count) in rooms {
            text.push_str(&format!("    ROOM: {room:20} {count:5} drawers\n"));
        }
        text.push('\n');
    }
    text.push_str(&format!("{rule}\n\n"));
    text.push_str(&cold_path_text(&status.pipeline));
    if let Some(rows) = limits {
        text.push_str("\n  Limits (used of limit)\n");
        for (name, used, limit) in rows {
            let used = used.map_or_else(|| "-".to_string(), |u| u.to_string());
            let limit = limit.map_or_else(|| "unlimited".to_string(), |l| l.to_string());
            text.push_str(&format!("    {name:<20} {used:>10} of {limit}\n"));
        }
    }
    Ok(output::text(text)?)
}

/// One limit: its name, what is used (none for a rate) and the limit.
type LimitRow = (&'static str, Option<u64>, Option<u64>);

/// The workspace's stored limits with what it uses (docs/tenancy.md), or
/// `None` when no limits are stored for it.
fn workspace_limits(palace: &Palace) -> Result<Option<Vec<LimitRow>>> {
    let Some(limits) = palace.store().limits(palace.workspace())? else { return Ok(None) };
    let usage = palace.store().usage(palace.workspace())?;
    Ok(Some(limits.rows(&usage).to_vec()))
}

/// The "Cold path" block of `status`, after MemPalace's layout: drawers per
/// state (raw with its live claims), per tier, hidden ones, memories, and
/// the last recorded run of each periodic job.
fn cold_path_text(counts: &PipelineCounts) -> String {
    use mempalace_core::{DrawerState, DrawerStatus};
    let mut text = String::from("  Cold path\n");
    let mut row = |label: &str, value: String| text.push_str(&format!("    {label:<13} {value}\n"));
    row("raw", format!("{} ({} claimed)", counts.state(DrawerState::Raw), counts.claimed));
    for state in [DrawerState::Processed, DrawerState::Merged, DrawerState::Failed] {
        row(state.as_str(), counts.state(state).to_string());
    }
    let tiers: Vec<String> = counts.by_tier.iter().map(|(tier, n)| format!("{} {n}", tier.as_str())).collect();
    row("by tier", tiers.join(", "));
    for status in [DrawerStatus::Superseded, DrawerStatus::Invalidated, DrawerStatus::Archived] {
        row(status.as_str(), counts.status(status).to_string());
    }
    row("memories", counts.memories.to_string());
    // The known periodic jobs first, then any other job that recorded a run.
    let mut jobs: Vec<&str> = vec![PROCESS.name, ENRICH.name, CONSOLIDATE.name, MAINTAIN.name];
    for run in &counts.last_runs {
        if !jobs.contains(&run.job.as_str()) {
            jobs.push(&run.job);
        }
    }
    for (index, job) in jobs.iter().enumerate() {
        let label = if index == 0 { "last runs" } else { "" };
        let value = match counts.last_runs.iter().find(|run| run.job == *job) {
            Some(run) => format!(
                "{job:<11} {} by {}{}",
                mempalace_core::time::format_timestamp(&run.started_at),
                run.holder,
                if run.finished { "" } else { " (not finished)" }
            ),
            None => format!("{job:<11} none recorded"),
        };
        row(label, value);
    }
    text.push('\n');
    text
}

fn check_json(check: &HealthCheck) -> serde_json::Value {
    json!({"name": check.name, "ok": check.ok, "derived": check.derived, "detail": check.detail})
}

fn report_json(report: &DoctorReport) -> serde_json::Value {
    json!({
        "healthy": report.healthy(),
        "palace_path": report.storage.location,
        "backend": report.storage.backend,
        "schema_version": report.storage.schema_version,
        "size_bytes": report.storage.size_bytes,
        "drawers_before": report.drawers_before,
        "drawers_after": report.drawers_after,
        "checks": report.checks.iter().map(check_json).collect::<Vec<_>>(),
        "repaired": report.repaired,
        "checks_after_repair": report.checks_after_repair.as_ref().map(|checks| checks.iter().map(check_json).collect::<Vec<_>>()),
    })
}

pub fn doctor(palace: &Palace, args: DoctorArgs) -> Result<()> {
    let report = palace.doctor(!args.check_only)?;
    if args.json {
        output::json(&report_json(&report))?;
    } else {
        let mut text = format!(
            "palace {} (schema {}, {} bytes, {} drawers)\n",
            report.storage.location,
            report.storage.schema_version,
            report.storage.size_bytes.unwrap_or(0),
            report.drawers_before
        );
        for check in &report.checks {
            text.push_str(&format!(
                "  {} {:<14} {}\n",
                if check.ok { "ok  " } else { "FAIL" },
                check.name,
                check.detail
            ));
        }
        if let Some(after) = &report.checks_after_repair {
            text.push_str("rebuilt derived data; after the rebuild:\n");
            for check in after {
                text.push_str(&format!(
                    "  {} {:<14} {}\n",
                    if check.ok { "ok  " } else { "FAIL" },
                    check.name,
                    check.detail
                ));
            }
        }
        text.push_str(if report.healthy() { "healthy\n" } else { "problems remain\n" });
        output::text(text)?;
    }
    if report.healthy() { Ok(()) } else { Err(Unhealthy.into()) }
}
