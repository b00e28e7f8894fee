//! `schedule`: mining on a timer (seed 3). `add`/`drop` keep the sources in
//! `~/.mempalace/schedule.json`; `install` writes and loads a systemd user
//! timer, a launchd agent or a cron line (whichever the machine has) that
//! runs `mempalace schedule run`; `remove` unloads and deletes it;
//! `status` shows the sources, the timer and the last run. The files'
//! text comes from `mempalace_feed::schedule`; this module writes them and
//! talks to `systemctl`, `launchctl` and `crontab`.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use clap::{Subcommand, ValueEnum};
use mempalace_engine::Palace;
use mempalace_feed::Mode;
use mempalace_feed::schedule::{
    Backend, Installed, Interval, Job, LAUNCHD_LABEL, LastRun, ScheduleFile, ScheduledSource, UNIT_NAME, crontab_with,
    render_cron, render_launchd, render_systemd, run_sources,
};
use serde_json::json;

use super::UserError;
use super::mine::ModeArg;
use crate::output;
use crate::settings::Settings;

/// Which scheduler to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// launchd on macOS, a systemd user timer where `systemctl --user` works, else cron.
    Auto,
    /// A systemd user timer.
    Systemd,
    /// A launchd user agent.
    Launchd,
    /// A line in the user's crontab.
    Cron,
}

/// `schedule`.
#[derive(Debug, Subcommand)]
pub enum ScheduleCommand {
    /// Add a source for the scheduled runs to mine (replaces an earlier entry for the same path).
    Add {
        /// A project folder, a folder or file of transcripts (--mode convos), opencode's database.
        path: PathBuf,
        /// What the files are.
        #[arg(long, value_enum, default_value = "projects")]
        mode: ModeArg,
        /// Wing for its drawers.
        #[arg(long)]
        wing: Option<String>,
        /// Also remove the drawers of its files that are deleted or now gitignored.
        #[arg(long)]
        sync: bool,
    },
    /// Stop mining a source (its drawers stay).
    Drop {
        /// The source as added.
        path: PathBuf,
    },
    /// Write and load the timer that runs `mempalace schedule run`.
    Install {
        /// How often: daily, weekly, hourly, Nm (N dividing 60) or Nh (N dividing 24).
        #[arg(long, default_value = "daily")]
        every: String,
        /// The scheduler.
        #[arg(long, value_enum, default_value = "auto")]
        backend: BackendArg,
        /// Print the files (or cron line) instead of installing them.
        #[arg(long)]
        print: bool,
    },
    /// Unload and delete the timer (the sources and the palace stay).
    Remove,
    /// The sources, the timer and the last run.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Mine every source now, one after the other (what the timer runs).
    Run {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// Where the schedule keeps its state.
struct Paths {
    home: PathBuf,
}

impl Paths {
    fn new(settings: &Settings) -> Result<Self> {
        let home = settings.home.clone().ok_or_else(|| {
            UserError(
                "HOME is not set: the schedule lives in ~/.mempalace/schedule.json and the timer in your home".into(),
            )
        })?;
        Ok(Self { home })
    }

    fn file(&self) -> PathBuf {
        self.home.join(".mempalace").join("schedule.json")
    }

    fn lock(&self) -> PathBuf {
        self.home.join(".mempalace").join("schedule.lock")
    }

    fn log(&self) -> PathBuf {
        self.home.join(".mempalace").join("logs").join("schedule.log")
    }

    fn systemd_dir(&self) -> PathBuf {
        self.home.join(".config").join("systemd").join("user")
    }

    fn launchd_plist(&self) -> PathBuf {
        self.home.join("Library").join("LaunchAgents").join(format!("{LAUNCHD_LABEL}.plist"))
    }

    fn load(&self) -> Result<ScheduleFile> {
        let path = self.file();
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|error| {
                UserError(format!("{} is not a schedule file ({error}); fix it or move it aside", path.display()))
                    .into()
            }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(ScheduleFile::default()),
            Err(error) => Err(error).with_context(|| format!("reading {}", path.display())),
        }
    }

    fn save(&self, schedule: &ScheduleFile) -> Result<()> {
        let text = serde_json::to_string_pretty(schedule)? + "\n";
        write_private(&self.file(), &text)
    }
}

/// Writes a file whole (a temporary file renamed over it), readable by
/// its owner only: it may hold the palace's database URL.
fn write_private(path: &Path, text: &str) -> Result<()> {
    let dir = path.parent().context("a file without a folder")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let staging = dir.join(format!(".{}.tmp", path.file_name().and_then(|n| n.to_str()).unwrap_or("file")));
    std::fs::write(&staging, text).with_context(|| format!("writing {}", staging.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&staging, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("restricting {}", staging.display()))?;
    }
    std::fs::rename(&staging, path).with_context(|| format!("replacing {}", path.display()))
}

fn mode_of(mode: ModeArg) -> Result<Mode> {
    Ok(match mode {
        ModeArg::Projects => Mode::Projects,
        ModeArg::Convos => Mode::Convos,
        ModeArg::Opencode => Mode::Opencode,
        ModeArg::Extract => bail!(UserError("--mode extract is not supported (see `mempalace mine --help`)".into())),
    })
}

/// Runs the command. `open` opens the palace (with its embedder) for `run`;
/// `job_env` is what a scheduled job keeps of this environment.
pub fn run(
    settings: &Settings,
    command: ScheduleCommand,
    job_env: Vec<(String, String)>,
    open: impl FnOnce() -> Result<Palace>,
) -> Result<()> {
    let paths = Paths::new(settings)?;
    match command {
        ScheduleCommand::Add { path, mode, wing, sync } => {
            let path = std::path::absolute(&path).with_context(|| format!("resolving {}", path.display()))?;
            let source = ScheduledSource { path, mode: mode_of(mode)?, wing, sync };
            source.check()?;
            if let Some(wing) = &source.wing {
                mempalace_core::Wing::parse(wing)?;
            }
            let mut schedule = paths.load()?;
            schedule.sources.retain(|s| s.path != source.path);
            output::line(format!(
                "Scheduled: {} ({}{}{}).",
                source.path.display(),
                source.mode.as_str(),
                source.wing.as_deref().map(|w| format!(", wing {w}")).unwrap_or_default(),
                if source.sync { ", with sync" } else { "" }
            ))?;
            schedule.sources.push(source);
            paths.save(&schedule)?;
            if schedule.installed.is_none() {
                output::note("No timer yet: `mempalace schedule install` runs the sources on a timer.");
            }
            Ok(())
        }
        ScheduleCommand::Drop { path } => {
            let absolute = std::path::absolute(&path).unwrap_or(path.clone());
            let mut schedule = paths.load()?;
            let before = schedule.sources.len();
            schedule.sources.retain(|s| s.path != absolute && s.path != path);
            if schedule.sources.len() == before {
                bail!(UserError(format!(
                    "{} is not a scheduled source; `mempalace schedule status` lists them",
                    path.display()
                )));
            }
            paths.save(&schedule)?;
            output::line(format!("No longer scheduled: {} (its drawers stay).", absolute.display()))?;
            Ok(())
        }
        ScheduleCommand::Install { every, backend, print } => {
            let every = Interval::parse(&every).map_err(UserError)?;
            install(settings, &paths, every, backend, print, job_env)
        }
        ScheduleCommand::Remove => remove(&paths),
        ScheduleCommand::Status { json } => status(&paths, json),
        ScheduleCommand::Run { json } => run_now(&paths, json, open),
    }
}

/// What the timer runs: this program with the palace it was installed for.
fn job(settings: &Settings, paths: &Paths, mut env: Vec<(String, String)>) -> Result<Job> {
    let program = std::env::current_exe().context("finding this program's path")?;
    let mut args = Vec::new();
    match &settings.database_url {
        Some(url) => {
            // Not on the command line (visible to every user): in the job's
            // environment, whose file only its owner reads.
            env.retain(|(key, _)| key != "MEMPALACE_DATABASE_URL");
            env.push(("MEMPALACE_DATABASE_URL".into(), url.clone()));
        }
        None => {
            let palace = std::path::absolute(&settings.palace_file).unwrap_or_else(|_| settings.palace_file.clone());
            args.extend(["--palace".to_string(), palace.display().to_string()]);
        }
    }
    if settings.workspace.as_str() != mempalace_core::WorkspaceId::DEFAULT {
        args.extend(["--workspace".to_string(), settings.workspace.as_str().to_string()]);
    }
    let models = std::path::absolute(&settings.model_dir).unwrap_or_else(|_| settings.model_dir.clone());
    args.extend(["--model-dir".to_string(), models.display().to_string(), "schedule".into(), "run".into()]);
    Ok(Job { program, args, env, log: paths.log() })
}

/// Runs a program, failing with what it printed.
fn call(program: &str, args: &[&str], stdin: Option<&str>) -> Result<String> {
    let mut command = Command::new(program);
    command.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    if stdin.is_some() {
        command.stdin(Stdio::piped());
    }
    let mut child = command.spawn().with_context(|| format!("running {program}"))?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes()).with_context(|| format!("writing to {program}"))?;
    }
    let output = child.wait_with_output().with_context(|| format!("waiting for {program}"))?;
    if !output.status.success() {
        bail!(
            "`{program} {}` failed ({}): {}",
            args.join(" "),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn works(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// The scheduler this machine has.
fn detect() -> Result<Backend> {
    if cfg!(target_os = "macos") {
        return Ok(Backend::Launchd);
    }
    if works("systemctl", &["--user", "show-environment"]) {
        return Ok(Backend::Systemd);
    }
    if works("crontab", &["-l"]) || Command::new("crontab").arg("-l").output().is_ok() {
        return Ok(Backend::Cron);
    }
    bail!(UserError(
        "no scheduler found: `systemctl --user` does not answer and there is no crontab command; install cron, or \
         run `mempalace schedule install --backend systemd --print` and put the job into your own scheduler"
            .into()
    ))
}

fn install(
    settings: &Settings,
    paths: &Paths,
    every: Interval,
    backend: BackendArg,
    print: bool,
    job_env: Vec<(String, String)>,
) -> Result<()> {
    let backend = match backend {
        BackendArg::Auto => detect()?,
        BackendArg::Systemd => Backend::Systemd,
        BackendArg::Launchd => Backend::Launchd,
        BackendArg::Cron => Backend::Cron,
    };
    let mut schedule = paths.load()?;
    if schedule.sources.is_empty() && !print {
        bail!(UserError(
            "nothing to schedule yet: add a source first (`mempalace schedule add ~/projects/app`, or `… --mode \
             convos ~/.claude/projects`)"
                .into()
        ));
    }
    let job = job(settings, paths, job_env)?;
    if let Some(previous) = &schedule.installed
        && previous.backend != backend
        && !print
    {
        bail!(UserError(format!(
            "a {} timer is installed; `mempalace schedule remove` it before installing a {} one",
            previous.backend.as_str(),
            backend.as_str()
        )));
    }
    let files = match backend {
        Backend::Systemd => {
            let (service, timer) = render_systemd(&job, every);
            let dir = paths.systemd_dir();
            let (service_path, timer_path) =
                (dir.join(format!("{UNIT_NAME}.service")), dir.join(format!("{UNIT_NAME}.timer")));
            if print {
                output::line(format!("# {}\n{service}\n# {}\n{timer}", service_path.display(), timer_path.display()))?;
                return Ok(());
            }
            write_private(&service_path, &service)?;
            write_private(&timer_path, &timer)?;
            let loaded = call("systemctl", &["--user", "daemon-reload"], None)
                .and_then(|_| call("systemctl", &["--user", "enable", "--now", &format!("{UNIT_NAME}.timer")], None));
            if let Err(error) = loaded {
                bail!(UserError(format!(
                    "wrote {} and {}, but loading them failed: {error:#}; in a session with a user manager run \
                     `systemctl --user daemon-reload && systemctl --user enable --now {UNIT_NAME}.timer` (on a \
                     headless machine also `loginctl enable-linger $USER`)",
                    service_path.display(),
                    timer_path.display()
                )));
            }
            vec![service_path, timer_path]
        }
        Backend::Launchd => {
            let plist = render_launchd(&job, every);
            let path = paths.launchd_plist();
            if print {
                output::line(format!("# {}\n{plist}", path.display()))?;
                return Ok(());
            }
            write_private(&path, &plist)?;
            std::fs::create_dir_all(paths.log().parent().context("log folder")?)?;
            let domain = format!("gui/{}", call("id", &["-u"], None)?.trim());
            // Replacing an earlier load: bootout of nothing fails, harmlessly.
            let _ = call("launchctl", &["bootout", &format!("{domain}/{LAUNCHD_LABEL}")], None);
            call("launchctl", &["bootstrap", &domain, &path.display().to_string()], None)
                .map_err(|error| UserError(format!("wrote {}, but launchctl refused it: {error:#}", path.display())))?;
            vec![path]
        }
        Backend::Cron => {
            let line = render_cron(&job, every);
            if print {
                output::line(&line)?;
                return Ok(());
            }
            std::fs::create_dir_all(paths.log().parent().context("log folder")?)?;
            let current = current_crontab()?;
            call("crontab", &["-"], Some(&crontab_with(&current, Some(&line))))
                .map_err(|error| UserError(format!("crontab refused the new line: {error:#}")))?;
            Vec::new()
        }
    };
    schedule.installed = Some(Installed {
        backend,
        every,
        files: files.clone(),
        at: mempalace_core::time::format_timestamp(&chrono::Utc::now()),
    });
    paths.save(&schedule)?;
    output::line(format!(
        "Installed a {} timer ({every}) for {} source(s); it runs `{} {}`.",
        backend.as_str(),
        schedule.sources.len(),
        job.program.display(),
        job.args.join(" ")
    ))?;
    for file in files {
        output::note(format!("wrote {}", file.display()));
    }
    Ok(())
}

/// The user's crontab (empty when there is none).
fn current_crontab() -> Result<String> {
    let output = Command::new("crontab").arg("-l").output().context("running crontab -l (is cron installed?)")?;
    if output.status.success() {
        return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    if stderr.contains("no crontab") {
        return Ok(String::new());
    }
    bail!("crontab -l failed: {}", stderr.trim())
}

fn remove(paths: &Paths) -> Result<()> {
    let mut schedule = paths.load()?;
    let Some(installed) = schedule.installed.take() else {
        output::line("No timer is installed.")?;
        return Ok(());
    };
    match installed.backend {
        Backend::Systemd => {
            if let Err(error) = call("systemctl", &["--user", "disable", "--now", &format!("{UNIT_NAME}.timer")], None)
            {
                output::note(format!("systemctl could not disable the timer ({error:#}); removing its files anyway"));
            }
            for file in &installed.files {
                remove_file(file)?;
            }
            let _ = call("systemctl", &["--user", "daemon-reload"], None);
        }
        Backend::Launchd => {
            if let Ok(uid) = call("id", &["-u"], None) {
                let _ = call("launchctl", &["bootout", &format!("gui/{}/{LAUNCHD_LABEL}", uid.trim())], None);
            }
            for file in &installed.files {
                remove_file(file)?;
            }
        }
        Backend::Cron => {
            let current = current_crontab()?;
            call("crontab", &["-"], Some(&crontab_with(&current, None)))?;
        }
    }
    paths.save(&schedule)?;
    output::line(format!(
        "Removed the {} timer; the sources stay in {}.",
        installed.backend.as_str(),
        paths.file().display()
    ))?;
    Ok(())
}

fn remove_file(file: &Path) -> Result<()> {
    match std::fs::remove_file(file) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error).with_context(|| format!("removing {}", file.display())),
    }
}

fn status(paths: &Paths, json: bool) -> Result<()> {
    let schedule = paths.load()?;
    let present: Vec<bool> = schedule.installed.iter().flat_map(|i| i.files.iter().map(|f| f.exists())).collect();
    if json {
        return Ok(output::json(&json!({
            "sources": schedule.sources,
            "installed": schedule.installed,
            "files_present": present.iter().all(|p| *p),
            "last_run": schedule.last_run,
            "file": paths.file(),
        }))?);
    }
    if schedule.sources.is_empty() {
        output::line("No sources: `mempalace schedule add PATH [--mode convos]` adds one.")?;
    }
    for source in &schedule.sources {
        output::line(format!(
            "  {}  ({}{}{})",
            source.path.display(),
            source.mode.as_str(),
            source.wing.as_deref().map(|w| format!(", wing {w}")).unwrap_or_default(),
            if source.sync { ", sync" } else { "" }
        ))?;
    }
    match &schedule.installed {
        Some(installed) => {
            output::line(format!(
                "Timer: {} every {} (installed {}).",
                installed.backend.as_str(),
                installed.every,
                installed.at
            ))?;
            if present.iter().any(|p| !p) {
                output::line("  Some of its files are gone: run `mempalace schedule install` again.")?;
            }
        }
        None => output::line("Timer: none (`mempalace schedule install`).")?,
    }
    match &schedule.last_run {
        Some(run) => {
            let failed = run.sources.iter().filter(|s| s.error.is_some()).count();
            output::line(format!(
                "Last run: {} ({:.1} s), {} source(s), {failed} failed.",
                run.started,
                run.seconds,
                run.sources.len()
            ))?;
            for source in run.sources.iter().filter(|s| s.error.is_some()) {
                output::line(format!("  {}: {}", source.path.display(), source.error.as_deref().unwrap_or("")))?;
            }
        }
        None => output::line("Last run: never.")?,
    }
    Ok(())
}

fn run_now(paths: &Paths, json: bool, open: impl FnOnce() -> Result<Palace>) -> Result<()> {
    let lock_path = paths.lock();
    std::fs::create_dir_all(lock_path.parent().context("lock folder")?)?;
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .with_context(|| format!("opening {}", lock_path.display()))?;
    match lock.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            output::note("an earlier scheduled run is still going; this one is skipped");
            return Ok(());
        }
        Err(std::fs::TryLockError::Error(error)) => {
            return Err(error).with_context(|| format!("locking {}", lock_path.display()));
        }
    }
    let schedule = paths.load()?;
    if schedule.sources.is_empty() {
        output::note("no scheduled sources (`mempalace schedule add PATH`)");
        return Ok(());
    }
    let started_at = chrono::Utc::now();
    let started = std::time::Instant::now();
    let palace = open()?;
    let sources = run_sources(&palace, Some(&paths.home), &schedule.sources);
    let run = LastRun {
        started: mempalace_core::time::format_timestamp(&started_at),
        seconds: started.elapsed().as_secs_f64(),
        sources,
    };
    // Read again: `add` may have run meanwhile.
    let mut latest = paths.load()?;
    latest.last_run = Some(run.clone());
    paths.save(&latest)?;
    if json {
        output::json(&run)?;
    } else {
        for source in &run.sources {
            match &source.error {
                None => output::line(format!(
                    "{}: {} read, {} added, {} removed",
                    source.path.display(),
                    source.read,
                    source.added,
                    source.removed
                ))?,
                Some(error) => output::line(format!("{}: failed: {error}", source.path.display()))?,
            }
        }
    }
    let failed: Vec<&str> = run.sources.iter().filter(|s| s.error.is_some()).filter_map(|s| s.path.to_str()).collect();
    if !failed.is_empty() {
        bail!(UserError(format!(
            "{} of {} scheduled sources failed ({}); the others were mined",
            failed.len(),
            run.sources.len(),
            failed.join(", ")
        )));
    }
    Ok(())
}
