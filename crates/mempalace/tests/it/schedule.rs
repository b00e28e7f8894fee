//! `schedule` (issue 22): sources kept in `~/.mempalace/schedule.json`, the
//! timer of each scheduler installed and removed, and the scheduled run.
//!
//! The schedulers' own programs are stand-ins on `PATH` that record how
//! they were called (`crontab` keeps a file, `systemctl` logs and can be
//! made to fail): a test machine has no user session manager and its
//! crontab is not ours to edit. What they are handed is checked with the
//! real validators: `systemd-analyze verify` for the units, Python's
//! `plistlib` for the launchd agent.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::harness::{Sandbox, Store, code, on_both, text};

/// Stand-ins for `crontab`, `systemctl`, `launchctl` and `id` in a folder
/// of the sandbox; they log every call to `HOME/calls.log`.
fn fake_tools(sandbox: &Sandbox) -> PathBuf {
    let bin = sandbox.dir().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let home = sandbox.home();
    let log = home.join("calls.log");
    let scripts = [
        (
            "crontab",
            format!(
                "#!/bin/sh\necho \"crontab $*\" >> '{log}'\nif [ \"$1\" = \"-l\" ]; then\n  if [ -f '{tab}' ]; then cat \
                 '{tab}'; else echo 'no crontab for tester' >&2; exit 1; fi\nelif [ \"$1\" = \"-\" ]; then cat > \
                 '{tab}'\nfi\n",
                log = log.display(),
                tab = home.join("crontab").display()
            ),
        ),
        (
            "systemctl",
            format!(
                "#!/bin/sh\necho \"systemctl $*\" >> '{log}'\nif [ -f '{fail}' ]; then echo 'Failed to connect to bus: No \
                 medium found' >&2; exit 1; fi\n",
                log = log.display(),
                fail = home.join("systemctl-fails").display()
            ),
        ),
        ("launchctl", format!("#!/bin/sh\necho \"launchctl $*\" >> '{}'\n", log.display())),
        ("id", "#!/bin/sh\necho 501\n".to_string()),
    ];
    for (name, script) in scripts {
        let path = bin.join(name);
        std::fs::write(&path, script).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    bin
}

/// The sandbox's command with the stand-ins first on `PATH`.
fn with_tools(sandbox: &Sandbox, bin: &Path, args: &[&str]) -> Command {
    let mut command = sandbox.cmd(args);
    command.env("PATH", format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default()));
    command
}

fn calls(sandbox: &Sandbox) -> String {
    std::fs::read_to_string(sandbox.home().join("calls.log")).unwrap_or_default()
}

fn project(sandbox: &Sandbox) -> PathBuf {
    let root = sandbox.dir().join("lab");
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(root.join("README.md"), "# Lab\n\nThe lab keeps its robots here.\n").unwrap();
    std::fs::write(root.join("docs/procedures.md"), "Balance the centrifuge before each run.\n").unwrap();
    std::fs::write(root.join("docs/gripper.md"), "The gripper's force limit is 12.5 N.\n").unwrap();
    root
}

/// Sources are checked when added (present, absolute, sync only of
/// folders and not of opencode), replaced by path, dropped; a timer needs
/// at least one.
#[test]
fn sources_are_checked_kept_and_dropped() {
    let sandbox = Sandbox::new();
    let root = project(&sandbox);
    let root_arg = root.to_str().unwrap();
    let missing = sandbox.run(&["schedule", "add", "/nowhere/at/all"]);
    assert_eq!(code(&missing), 3, "{}", text(&missing.stderr));
    let opencode = sandbox.run(&["schedule", "add", root_arg, "--mode", "opencode", "--sync"]);
    assert_eq!(code(&opencode), 2);
    assert!(text(&opencode.stderr).contains("nothing to sync"), "{}", text(&opencode.stderr));
    let file_sync = sandbox.run(&["schedule", "add", root.join("README.md").to_str().unwrap(), "--sync"]);
    assert_eq!(code(&file_sync), 2);

    let added = sandbox.ok(&["schedule", "add", root_arg, "--sync"]);
    assert!(added.contains(&format!("Scheduled: {root_arg} (projects, with sync).")), "{added}");
    sandbox.ok(&["schedule", "add", root_arg, "--mode", "convos", "--wing", "lab_chats"]);
    let status = sandbox.json(&["schedule", "status", "--json"]);
    assert_eq!(
        status["sources"],
        json!([{"path": root_arg, "mode": "convos", "wing": "lab_chats", "sync": false}]),
        "the same path is replaced: {status}"
    );
    assert_eq!(status["installed"], Value::Null);
    assert_eq!(status["last_run"], Value::Null);
    let bad_wing = sandbox.run(&["schedule", "add", root_arg, "--wing", "no spaces allowed/"]);
    assert_eq!(code(&bad_wing), 2, "{}", text(&bad_wing.stderr));

    sandbox.ok(&["schedule", "drop", root_arg]);
    assert_eq!(code(&sandbox.run(&["schedule", "drop", root_arg])), 2);
    let nothing = sandbox.run(&["schedule", "install", "--backend", "cron"]);
    assert_eq!(code(&nothing), 2);
    assert!(text(&nothing.stderr).contains("add a source first"), "{}", text(&nothing.stderr));
    let bad_interval = sandbox.run(&["schedule", "install", "--every", "7m", "--print", "--backend", "cron"]);
    assert_eq!(code(&bad_interval), 2);
    assert!(text(&bad_interval.stderr).contains("N dividing 60"), "{}", text(&bad_interval.stderr));
}

/// cron: the line joins the user's crontab without touching other lines,
/// is replaced (not doubled) by a second install, and `remove` takes out
/// only it. The job names this binary, the palace and the model folder.
#[test]
fn cron_line_is_installed_replaced_and_removed() {
    let sandbox = Sandbox::new().with_static_model();
    let bin = fake_tools(&sandbox);
    let root = project(&sandbox);
    sandbox.ok(&["schedule", "add", root.to_str().unwrap()]);
    let original = "MAILTO=ana\n0 1 * * * /usr/local/bin/backup.sh\n";
    std::fs::write(sandbox.home().join("crontab"), original).unwrap();

    for every in ["6h", "30m"] {
        let output = with_tools(&sandbox, &bin, &["schedule", "install", "--backend", "cron", "--every", every])
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
    }
    let tab = std::fs::read_to_string(sandbox.home().join("crontab")).unwrap();
    let lines: Vec<&str> = tab.lines().collect();
    assert_eq!(lines.len(), 3, "{tab}");
    assert_eq!(&lines[..2], &["MAILTO=ana", "0 1 * * * /usr/local/bin/backup.sh"]);
    let ours = lines[2];
    assert!(ours.starts_with("*/30 * * * * ") && ours.ends_with(" # mempalace schedule"), "{ours}");
    assert!(ours.contains(env!("CARGO_BIN_EXE_mempalace")), "{ours}");
    assert!(ours.contains(&format!("--palace {}", sandbox.palace().join("palace.db").display())), "{ours}");
    assert!(ours.contains("MEMPALACE_EMBEDDER=static") && ours.contains("--model-dir"), "{ours}");
    assert!(ours.contains("schedule run >> ") && ours.contains(".mempalace/logs/schedule.log 2>&1"), "{ours}");
    let status = sandbox.json(&["schedule", "status", "--json"]);
    assert_eq!(
        (status["installed"]["backend"].as_str(), status["installed"]["every"].as_str()),
        (Some("cron"), Some("30m"))
    );

    // The line runs as cron would run it (through sh), minus its schedule.
    let command = ours.splitn(6, ' ').nth(5).unwrap().trim_end_matches(" # mempalace schedule").replace(r"\%", "%");
    let ran = Command::new("sh").arg("-c").arg(&command).env_clear().env("HOME", sandbox.home()).status().unwrap();
    assert!(ran.success());
    let log = std::fs::read_to_string(sandbox.home().join(".mempalace/logs/schedule.log")).unwrap();
    assert!(log.contains("3 read, 3 added"), "{log}");

    let removed = with_tools(&sandbox, &bin, &["schedule", "remove"]).output().unwrap();
    assert!(removed.status.success(), "{}", text(&removed.stderr));
    assert_eq!(std::fs::read_to_string(sandbox.home().join("crontab")).unwrap(), original);
    assert_eq!(sandbox.json(&["schedule", "status", "--json"])["installed"], Value::Null);
    assert!(sandbox.ok(&["schedule", "remove"]).contains("No timer is installed."));
}

/// systemd: a service and a timer under `~/.config/systemd/user`, readable
/// by their owner only, that `systemd-analyze verify` accepts, loaded with
/// `daemon-reload` and `enable --now`; a user manager that cannot be
/// reached leaves the files and says what to run; `remove` disables and
/// deletes.
#[test]
fn systemd_timer_is_valid_loaded_and_removed() {
    let sandbox = Sandbox::new();
    let bin = fake_tools(&sandbox);
    let root = project(&sandbox);
    sandbox.ok(&["schedule", "add", root.to_str().unwrap()]);
    std::fs::write(sandbox.home().join("systemctl-fails"), "").unwrap();
    let refused = with_tools(&sandbox, &bin, &["schedule", "install", "--backend", "systemd", "--every", "15m"])
        .output()
        .unwrap();
    assert_eq!(code(&refused), 2);
    let stderr = text(&refused.stderr);
    assert!(stderr.contains("Failed to connect to bus") && stderr.contains("loginctl enable-linger"), "{stderr}");
    std::fs::remove_file(sandbox.home().join("systemctl-fails")).unwrap();

    let output = with_tools(&sandbox, &bin, &["schedule", "install", "--backend", "systemd", "--every", "15m"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let dir = sandbox.home().join(".config/systemd/user");
    let (service, timer) = (dir.join("mempalace-mine.service"), dir.join("mempalace-mine.timer"));
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(std::fs::metadata(&service).unwrap().permissions().mode() & 0o777, 0o600);
    let unit = std::fs::read_to_string(&service).unwrap();
    assert!(unit.contains(&format!("ExecStart={} --palace ", env!("CARGO_BIN_EXE_mempalace"))), "{unit}");
    assert!(std::fs::read_to_string(&timer).unwrap().contains("OnCalendar=*-*-* *:00/15:00"));
    let verify = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&timer)
        .arg(&service)
        .output()
        .expect("systemd-analyze (Debian: apt-get install systemd) checks the units; .ci/run installs it");
    assert!(verify.status.success(), "systemd-analyze verify: {}", text(&verify.stderr));
    let log = calls(&sandbox);
    assert!(
        log.contains("systemctl --user daemon-reload\nsystemctl --user enable --now mempalace-mine.timer"),
        "{log}"
    );

    let other = with_tools(&sandbox, &bin, &["schedule", "install", "--backend", "cron"]).output().unwrap();
    assert_eq!(code(&other), 2, "one timer at a time");
    assert!(text(&other.stderr).contains("schedule remove"), "{}", text(&other.stderr));

    let removed = with_tools(&sandbox, &bin, &["schedule", "remove"]).output().unwrap();
    assert!(removed.status.success(), "{}", text(&removed.stderr));
    assert!(!service.exists() && !timer.exists());
    assert!(calls(&sandbox).contains("systemctl --user disable --now mempalace-mine.timer"));
}

/// launchd: the agent printed for review is a property list Python's
/// plistlib reads, running this binary hourly in the background.
#[test]
fn launchd_agent_is_a_valid_property_list() {
    let sandbox = Sandbox::new();
    let output = sandbox.run(&["schedule", "install", "--backend", "launchd", "--every", "hourly", "--print"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let printed = text(&output.stdout);
    let plist = printed.split_once('\n').unwrap().1;
    let python = std::env::var("MEMPALACE_TEST_PYTHON").unwrap_or_else(|_| "python3".into());
    let mut child = Command::new(python)
        .args(["-c", "import json, plistlib, sys; print(json.dumps(plistlib.loads(sys.stdin.buffer.read())))"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3 reads the property list");
    use std::io::Write as _;
    child.stdin.take().unwrap().write_all(plist.as_bytes()).unwrap();
    let parsed = child.wait_with_output().unwrap();
    assert!(parsed.status.success(), "plistlib: {}\n{plist}", text(&parsed.stderr));
    let agent: Value = serde_json::from_slice(&parsed.stdout).unwrap();
    assert_eq!(agent["Label"], "dev.mempalace.mine");
    assert_eq!(agent["StartInterval"], 3600);
    assert_eq!(agent["ProcessType"], "Background");
    let args = agent["ProgramArguments"].as_array().unwrap();
    assert_eq!(args[0], env!("CARGO_BIN_EXE_mempalace"));
    assert_eq!(&args[args.len() - 2..], &[json!("schedule"), json!("run")]);
    assert!(
        !sandbox.home().join("Library").exists() && !sandbox.home().join(".mempalace/schedule.json").exists(),
        "--print writes nothing"
    );
}

/// The scheduled run mines every source (and syncs those that ask),
/// records the run, skips while an earlier one holds the lock, and when a
/// source fails still mines the others and exits 2 naming it.
fn the_scheduled_run_mines_syncs_and_reports(store: Store) {
    let sandbox = Sandbox::on(store);
    let root = project(&sandbox);
    let chats = sandbox.dir().join("chats");
    std::fs::create_dir_all(&chats).unwrap();
    std::fs::copy(mempalace_testdata::fixture("transcripts/text/supplier-call.txt"), chats.join("call.txt")).unwrap();
    sandbox.ok(&["schedule", "add", root.to_str().unwrap(), "--sync"]);
    sandbox.ok(&["schedule", "add", chats.to_str().unwrap(), "--mode", "convos", "--wing", "suppliers"]);

    let first = sandbox.json(&["schedule", "run", "--json"]);
    let added: Vec<u64> = first["sources"].as_array().unwrap().iter().map(|s| s["added"].as_u64().unwrap()).collect();
    assert_eq!(added, vec![3, 3], "{first}");
    assert_eq!(sandbox.json(&["status", "--json"])["wings"]["suppliers"], 3);
    let again = sandbox.json(&["schedule", "run", "--json"]);
    assert!(again["sources"].as_array().unwrap().iter().all(|s| s["added"] == 0), "{again}");

    std::fs::remove_file(root.join("docs/gripper.md")).unwrap();
    let synced = sandbox.json(&["schedule", "run", "--json"]);
    assert_eq!(synced["sources"][0]["removed"], 1, "sync removed the deleted file's drawer: {synced}");
    assert_eq!(sandbox.total(), 5);

    // An earlier run still going: this one does nothing.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(sandbox.home().join(".mempalace/schedule.lock"))
        .unwrap();
    lock.lock().unwrap();
    let skipped = sandbox.run(&["schedule", "run"]);
    assert!(skipped.status.success());
    assert!(text(&skipped.stderr).contains("still going"), "{}", text(&skipped.stderr));
    lock.unlock().unwrap();

    std::fs::remove_dir_all(&chats).unwrap();
    std::fs::write(root.join("docs/arm.md"), "The arm's reach is 850 mm.\n").unwrap();
    let failed = sandbox.run(&["schedule", "run"]);
    assert_eq!(code(&failed), 2);
    let stderr = text(&failed.stderr);
    assert!(stderr.contains("1 of 2 scheduled sources failed") && stderr.contains("chats"), "{stderr}");
    assert!(text(&failed.stdout).contains("1 added"), "the project was still mined: {}", text(&failed.stdout));
    let status = sandbox.ok(&["schedule", "status"]);
    assert!(status.contains("2 source(s), 1 failed") && status.contains("chats: "), "{status}");
}

on_both!(the_scheduled_run_mines_syncs_and_reports);
