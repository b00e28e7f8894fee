//! Scheduled mining (seed 3): the sources a timer mines, how often, and
//! the timer's files for each scheduler — a systemd user timer, a launchd
//! agent, or a cron line.
//!
//! Rendering is pure: [`render_systemd`], [`render_launchd`] and
//! [`render_cron`] turn a [`Job`] (the program, its arguments and
//! environment, its log) and an [`Interval`] into file text, quoted for
//! each format (systemd's `%` specifiers and quotes, XML entities, the
//! shell and cron's `%`). [`run_sources`] is what the timer runs: each
//! configured source mined (and, when asked, synced) in turn, a failure
//! reported and the next source still mined. Installing the files and
//! talking to `systemctl`, `launchctl` or `crontab` is the binary's.
//!
//! The scheduled run never repairs or rebuilds anything: seed 3 warns that
//! an unattended repair once damaged live palaces.

use std::fmt;
use std::path::{Path, PathBuf};

use mempalace_engine::Palace;
use serde::{Deserialize, Serialize};

use crate::error::{FeedError, FeedResult};
use crate::sync::{SyncOptions, sync};
use crate::{MineOptions, Mode, mine};

/// The marker that ends the cron line this program owns.
pub const CRON_MARKER: &str = "# mempalace schedule";
/// The systemd units' and launchd agent's name.
pub const UNIT_NAME: &str = "mempalace-mine";
/// The launchd agent's label.
pub const LAUNCHD_LABEL: &str = "dev.mempalace.mine";

/// How often the timer fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Interval {
    /// Every N minutes, N dividing 60.
    Minutes(u32),
    /// Every N hours, N dividing 24.
    Hours(u32),
    /// Once a day, at 03:17 local time (a catch-up run after the machine
    /// was off, where the scheduler supports it).
    Daily,
    /// Once a week, Sunday 03:17.
    Weekly,
}

impl Interval {
    /// Parses `15m`, `2h`, `daily`, `weekly` (also `hourly`).
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim().to_lowercase();
        let bad = || {
            format!(
                "{text:?} is not an interval; use daily, weekly, hourly, Nm (N dividing 60: 5m, 15m, 30m) or Nh (N \
                 dividing 24: 1h, 6h, 12h)"
            )
        };
        match text.as_str() {
            "daily" => return Ok(Self::Daily),
            "weekly" => return Ok(Self::Weekly),
            "hourly" => return Ok(Self::Hours(1)),
            _ => {}
        }
        let (number, unit) = text.split_at(text.len().saturating_sub(1));
        let n: u32 = number.parse().map_err(|_| bad())?;
        match unit {
            "m" if n > 0 && n < 60 && 60 % n == 0 => Ok(Self::Minutes(n)),
            "h" if n > 0 && n < 24 && 24 % n == 0 => Ok(Self::Hours(n)),
            "h" if n == 24 => Ok(Self::Daily),
            _ => Err(bad()),
        }
    }

    /// Seconds between runs.
    pub fn seconds(self) -> u64 {
        match self {
            Self::Minutes(n) => u64::from(n) * 60,
            Self::Hours(n) => u64::from(n) * 3600,
            Self::Daily => 86_400,
            Self::Weekly => 7 * 86_400,
        }
    }

    /// systemd's `OnCalendar=` expression.
    fn on_calendar(self) -> String {
        match self {
            Self::Minutes(n) => format!("*-*-* *:00/{n}:00"),
            Self::Hours(n) => format!("*-*-* 00/{n}:00:00"),
            Self::Daily => "*-*-* 03:17:00".into(),
            Self::Weekly => "Sun *-*-* 03:17:00".into(),
        }
    }

    /// cron's five time fields.
    fn cron_fields(self) -> String {
        match self {
            Self::Minutes(1) => "* * * * *".into(),
            Self::Minutes(n) => format!("*/{n} * * * *"),
            Self::Hours(1) => "0 * * * *".into(),
            Self::Hours(n) => format!("0 */{n} * * *"),
            Self::Daily => "17 3 * * *".into(),
            Self::Weekly => "17 3 * * 0".into(),
        }
    }
}

impl fmt::Display for Interval {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Minutes(n) => write!(f, "{n}m"),
            Self::Hours(n) => write!(f, "{n}h"),
            Self::Daily => f.write_str("daily"),
            Self::Weekly => f.write_str("weekly"),
        }
    }
}

impl TryFrom<String> for Interval {
    type Error = String;
    fn try_from(text: String) -> Result<Self, String> {
        Self::parse(&text)
    }
}

impl From<Interval> for String {
    fn from(interval: Interval) -> Self {
        interval.to_string()
    }
}

/// Which scheduler runs the job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// A systemd user timer (Linux).
    Systemd,
    /// A launchd user agent (macOS).
    Launchd,
    /// A line in the user's crontab.
    Cron,
}

impl Backend {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Systemd => "systemd",
            Self::Launchd => "launchd",
            Self::Cron => "cron",
        }
    }
}

/// A source the timer mines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScheduledSource {
    /// The folder, file or database (absolute).
    pub path: PathBuf,
    /// How to mine it.
    pub mode: Mode,
    /// Wing for its drawers (default: as `mine` decides).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wing: Option<String>,
    /// Also remove the drawers of its files that are gone or now ignored
    /// (`sync --apply` scoped to the source's folder).
    #[serde(default)]
    pub sync: bool,
}

impl ScheduledSource {
    /// Checks a source before it is saved: the path exists and is
    /// absolute, and sync is asked only of file trees.
    pub fn check(&self) -> FeedResult<()> {
        if !self.path.is_absolute() {
            return Err(FeedError::Invalid(format!(
                "{} is relative; a scheduled run starts elsewhere, so give the absolute path",
                self.path.display()
            )));
        }
        if !self.path.exists() {
            return Err(FeedError::NotFound { what: "source", path: self.path.clone() });
        }
        if self.sync && self.mode == Mode::Opencode {
            return Err(FeedError::Invalid(
                "--sync removes the drawers of deleted files; opencode sessions live in its database, so there is \
                 nothing to sync: drop --sync"
                    .into(),
            ));
        }
        if self.sync && !self.path.is_dir() {
            return Err(FeedError::Invalid(format!(
                "--sync needs a folder (its files are checked); {} is a file",
                self.path.display()
            )));
        }
        Ok(())
    }
}

/// The installed timer, as recorded when it was installed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Installed {
    /// Its scheduler.
    pub backend: Backend,
    /// How often.
    pub every: Interval,
    /// The files written (the crontab for cron).
    pub files: Vec<PathBuf>,
    /// When (RFC 3339).
    pub at: String,
}

/// What one source's scheduled run did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceRun {
    /// The source.
    pub path: PathBuf,
    /// Drawers added.
    pub added: usize,
    /// Drawers replaced or removed (by mining or sync).
    pub removed: usize,
    /// Files read.
    pub read: usize,
    /// Why it failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The last scheduled run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastRun {
    /// When it started (RFC 3339).
    pub started: String,
    /// Seconds it took.
    pub seconds: f64,
    /// Per source.
    pub sources: Vec<SourceRun>,
}

/// `~/.mempalace/schedule.json`: the sources, the installed timer and the
/// last run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScheduleFile {
    /// What to mine.
    #[serde(default)]
    pub sources: Vec<ScheduledSource>,
    /// The timer, when installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed: Option<Installed>,
    /// The last run, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_run: Option<LastRun>,
}

/// What the timer runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    /// The program (absolute).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment it needs (the palace, the model folder).
    pub env: Vec<(String, String)>,
    /// Where its output goes (launchd and cron; systemd logs to the journal).
    pub log: PathBuf,
}

/// A word for systemd's `ExecStart=`: quoted when it holds a space, quote
/// or backslash; `%` doubled (systemd's specifier character).
fn systemd_word(word: &str) -> String {
    let escaped = word.replace('%', "%%");
    if escaped.chars().any(|c| c.is_whitespace() || c == '"' || c == '\'' || c == '\\' || c == ';')
        || escaped.is_empty()
    {
        format!("\"{}\"", escaped.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        escaped
    }
}

/// The systemd user service and timer (`mempalace-mine.service`,
/// `mempalace-mine.timer`).
pub fn render_systemd(job: &Job, every: Interval) -> (String, String) {
    let mut command = vec![systemd_word(&job.program.to_string_lossy())];
    command.extend(job.args.iter().map(|a| systemd_word(a)));
    let mut service = vec![
        "[Unit]".to_string(),
        "Description=mempalace: mine the scheduled sources into the palace".into(),
        "Documentation=https://github.com/mempalace-rs (docs/cli.md, schedule)".into(),
        String::new(),
        "[Service]".into(),
        "Type=oneshot".into(),
        format!("ExecStart={}", command.join(" ")),
    ];
    for (key, value) in &job.env {
        service.push(format!("Environment={}", systemd_word(&format!("{key}={value}"))));
    }
    service.extend(["Nice=10".to_string(), "IOSchedulingClass=idle".into(), String::new()]);
    let timer = [
        "[Unit]".to_string(),
        format!("Description=mempalace: mine the scheduled sources ({every})"),
        String::new(),
        "[Timer]".into(),
        format!("OnCalendar={}", every.on_calendar()),
        "Persistent=true".into(),
        "RandomizedDelaySec=30".into(),
        format!("Unit={UNIT_NAME}.service"),
        String::new(),
        "[Install]".into(),
        "WantedBy=timers.target".into(),
        String::new(),
    ];
    (service.join("\n"), timer.join("\n"))
}

fn xml(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// The launchd agent (`~/Library/LaunchAgents/dev.mempalace.mine.plist`).
pub fn render_launchd(job: &Job, every: Interval) -> String {
    let mut lines = vec![
        r#"<?xml version="1.0" encoding="UTF-8"?>"#.to_string(),
        r#"<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">"#
            .into(),
        r#"<plist version="1.0">"#.into(),
        "<dict>".into(),
        "  <key>Label</key>".into(),
        format!("  <string>{LAUNCHD_LABEL}</string>"),
        "  <key>ProgramArguments</key>".into(),
        "  <array>".into(),
        format!("    <string>{}</string>", xml(&job.program.to_string_lossy())),
    ];
    lines.extend(job.args.iter().map(|a| format!("    <string>{}</string>", xml(a))));
    lines.push("  </array>".into());
    if !job.env.is_empty() {
        lines.push("  <key>EnvironmentVariables</key>".into());
        lines.push("  <dict>".into());
        for (key, value) in &job.env {
            lines.push(format!("    <key>{}</key>", xml(key)));
            lines.push(format!("    <string>{}</string>", xml(value)));
        }
        lines.push("  </dict>".into());
    }
    match every {
        Interval::Daily | Interval::Weekly => {
            lines.push("  <key>StartCalendarInterval</key>".into());
            lines.push("  <dict>".into());
            if every == Interval::Weekly {
                lines.push("    <key>Weekday</key>".into());
                lines.push("    <integer>0</integer>".into());
            }
            lines.extend([
                "    <key>Hour</key>".to_string(),
                "    <integer>3</integer>".into(),
                "    <key>Minute</key>".into(),
                "    <integer>17</integer>".into(),
                "  </dict>".into(),
            ]);
        }
        _ => {
            lines.push("  <key>StartInterval</key>".into());
            lines.push(format!("  <integer>{}</integer>", every.seconds()));
        }
    }
    let log = xml(&job.log.to_string_lossy());
    lines.extend([
        "  <key>StandardOutPath</key>".to_string(),
        format!("  <string>{log}</string>"),
        "  <key>StandardErrorPath</key>".into(),
        format!("  <string>{log}</string>"),
        "  <key>ProcessType</key>".into(),
        "  <string>Background</string>".into(),
        "  <key>LowPriorityIO</key>".into(),
        "  <true/>".into(),
        "</dict>".into(),
        "</plist>".into(),
        String::new(),
    ]);
    lines.join("\n")
}

/// A word for the shell, single-quoted unless it is plain.
fn shell_word(word: &str) -> String {
    if !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:@,+".contains(c)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The crontab line, ending in [`CRON_MARKER`] so it can be found and
/// removed again. cron runs it with `sh`; `%` is escaped (cron turns a
/// bare one into a newline).
pub fn render_cron(job: &Job, every: Interval) -> String {
    let mut words: Vec<String> = job.env.iter().map(|(k, v)| shell_word(&format!("{k}={v}"))).collect();
    words.push(shell_word(&job.program.to_string_lossy()));
    words.extend(job.args.iter().map(|a| shell_word(a)));
    let command = format!("{} >> {} 2>&1", words.join(" "), shell_word(&job.log.to_string_lossy()));
    format!("{} {} {CRON_MARKER}", every.cron_fields(), command.replace('%', r"\%"))
}

/// A crontab with this program's line replaced by `line` (or removed
/// when `None`); other lines kept as they are.
pub fn crontab_with(current: &str, line: Option<&str>) -> String {
    let mut lines: Vec<&str> = current.lines().filter(|l| !l.trim_end().ends_with(CRON_MARKER)).collect();
    if let Some(line) = line {
        lines.push(line);
    }
    let mut text = lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    text
}

/// Mines each source in turn (and syncs those that ask for it); a
/// failing source is recorded and the others still run.
pub fn run_sources(palace: &Palace, home: Option<&Path>, sources: &[ScheduledSource]) -> Vec<SourceRun> {
    let mut runs = Vec::new();
    for source in sources {
        let mut run = SourceRun { path: source.path.clone(), added: 0, removed: 0, read: 0, error: None };
        let result = (|| -> FeedResult<()> {
            let mut options = MineOptions::new(source.mode);
            options.agent = "schedule".into();
            options.wing = source.wing.as_deref().map(mempalace_core::Wing::parse).transpose()?;
            let report = mine(palace, Some(&source.path), home, &options, &mut |_, _, _| {})?;
            run.added = report.drawers_added;
            run.removed = report.drawers_removed;
            run.read = report.read;
            if source.sync {
                let synced = sync(palace, &SyncOptions { wing: None, roots: vec![source.path.clone()], apply: true })?;
                run.removed += synced.removed_drawers;
            }
            Ok(())
        })();
        if let Err(error) = result {
            tracing::warn!(source = %source.path.display(), %error, "scheduled source failed");
            run.error = Some(error.to_string());
        }
        runs.push(run);
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Job {
        Job {
            program: PathBuf::from("/opt/mem palace/bin/mempalace"),
            args: vec!["--palace".into(), "/home/ana/50% notes".into(), "schedule".into(), "run".into()],
            env: vec![("MEMPALACE_MODEL_DIR".into(), "/home/ana/models & more".into())],
            log: PathBuf::from("/home/ana/.mempalace/logs/schedule.log"),
        }
    }

    #[test]
    fn intervals_parse_and_refuse_what_a_scheduler_cannot_keep() {
        assert_eq!(Interval::parse("15m"), Ok(Interval::Minutes(15)));
        assert_eq!(Interval::parse("6h"), Ok(Interval::Hours(6)));
        assert_eq!(Interval::parse("hourly"), Ok(Interval::Hours(1)));
        assert_eq!(Interval::parse("24h"), Ok(Interval::Daily));
        assert_eq!(Interval::parse(" Weekly "), Ok(Interval::Weekly));
        for bad in ["7m", "0m", "60m", "5h", "soon", "", "m", "-5m"] {
            assert!(Interval::parse(bad).is_err(), "{bad}");
        }
        for every in [Interval::Minutes(5), Interval::Hours(2), Interval::Daily, Interval::Weekly] {
            assert_eq!(Interval::parse(&every.to_string()), Ok(every));
        }
    }

    #[test]
    fn systemd_units_quote_words_and_specifiers() {
        let (service, timer) = render_systemd(&job(), Interval::Minutes(15));
        assert!(
            service
                .contains(r#"ExecStart="/opt/mem palace/bin/mempalace" --palace "/home/ana/50%% notes" schedule run"#),
            "{service}"
        );
        assert!(service.contains(r#"Environment="MEMPALACE_MODEL_DIR=/home/ana/models & more""#), "{service}");
        assert!(timer.contains("OnCalendar=*-*-* *:00/15:00") && timer.contains("Persistent=true"), "{timer}");
        assert!(timer.contains("WantedBy=timers.target"));
    }

    #[test]
    fn launchd_plist_escapes_and_schedules() {
        let plist = render_launchd(&job(), Interval::Daily);
        assert!(plist.contains("<string>/home/ana/models &amp; more</string>"), "{plist}");
        assert!(plist.contains("<key>StartCalendarInterval</key>") && plist.contains("<integer>17</integer>"));
        let hourly = render_launchd(&job(), Interval::Hours(1));
        assert!(hourly.contains("<key>StartInterval</key>\n  <integer>3600</integer>"), "{hourly}");
        // Balanced tags: every <dict>, <array> and <plist> closes.
        for tag in ["dict", "array", "plist"] {
            assert_eq!(plist.matches(&format!("<{tag}")).count(), plist.matches(&format!("</{tag}>")).count(), "{tag}");
        }
    }

    #[test]
    fn cron_line_is_shell_quoted_with_escaped_percent_and_replaceable() {
        let line = render_cron(&job(), Interval::Hours(6));
        assert_eq!(
            line,
            r#"0 */6 * * * 'MEMPALACE_MODEL_DIR=/home/ana/models & more' '/opt/mem palace/bin/mempalace' --palace '/home/ana/50\% notes' schedule run >> /home/ana/.mempalace/logs/schedule.log 2>&1 # mempalace schedule"#
        );
        let current = "MAILTO=ana\n0 1 * * * backup.sh\n*/5 * * * * old mempalace # mempalace schedule\n";
        assert_eq!(crontab_with(current, Some(&line)), format!("MAILTO=ana\n0 1 * * * backup.sh\n{line}\n"));
        assert_eq!(crontab_with(current, None), "MAILTO=ana\n0 1 * * * backup.sh\n");
        assert_eq!(crontab_with("", None), "");
    }

    #[test]
    fn the_schedule_file_round_trips_and_refuses_unknown_keys() {
        let file = ScheduleFile {
            sources: vec![ScheduledSource { path: "/p".into(), mode: Mode::Convos, wing: None, sync: true }],
            installed: Some(Installed {
                backend: Backend::Cron,
                every: Interval::Minutes(30),
                files: vec![],
                at: "2026-11-26T00:00:00Z".into(),
            }),
            last_run: None,
        };
        let text = serde_json::to_string(&file).unwrap();
        assert!(text.contains(r#""every":"30m""#) && text.contains(r#""mode":"convos""#), "{text}");
        assert_eq!(serde_json::from_str::<ScheduleFile>(&text).unwrap(), file);
        assert!(serde_json::from_str::<ScheduleFile>(r#"{"sources": [], "typo": 1}"#).is_err());
    }
}
