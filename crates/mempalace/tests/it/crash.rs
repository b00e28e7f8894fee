//! Crash matrix, mining and store migration (issue 21): the command is
//! killed with SIGKILL mid-run, on both stores; the palace then opens and
//! passes `doctor`, and running the command again finishes the work, ending
//! in exactly the state of an uninterrupted run.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::harness::{Sandbox, Store, on_both};

/// 120 transcripts of 25 exchanges each, every line distinct.
fn transcripts(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    for file in 0..120 {
        let mut text = String::new();
        for turn in 0..25 {
            text.push_str(&format!(
                "> Question {turn} of session {file}: how should the greenhouse sensor {file}-{turn} be calibrated?\n\
                 Calibrate sensor {file}-{turn} against the reference probe at {turn} degrees, then log offset {file}.\n\n"
            ));
        }
        std::fs::write(dir.join(format!("session-{file:03}.txt")), text).unwrap();
    }
}

/// Runs `args` on `sandbox`, kills it with SIGKILL once the palace holds at
/// least `at_least` drawers; returns how many it held just before.
fn kill_midway(sandbox: &Sandbox, args: &[&str], at_least: u64) -> u64 {
    let mut child = sandbox.cmd(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn");
    let started = Instant::now();
    let seen = loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("{args:?} finished ({status}) before it could be killed; make the input bigger");
        }
        let status = sandbox.run(&["status", "--json"]);
        if status.status.success()
            && let Ok(value) = serde_json::from_slice::<serde_json::Value>(&status.stdout)
        {
            let seen = value["total_drawers"].as_u64().unwrap_or(0);
            if seen >= at_least {
                break seen;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(120), "{args:?} filed too slowly to test");
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().expect("SIGKILL");
    assert!(!child.wait().unwrap().success(), "killed before it finished");
    seen
}

fn healthy(sandbox: &Sandbox) {
    let doctor = sandbox.json(&["doctor", "--json", "--check-only"]);
    assert_eq!(doctor["healthy"], true, "{doctor}");
}

/// `mine --mode convos` killed mid-run: nothing half-filed, and mining
/// again gives exactly what one uninterrupted run gives.
fn a_killed_mine_resumes_to_the_same_palace(store: Store) {
    let reference = Sandbox::on(store).with_static_model();
    let data = reference.path("transcripts");
    transcripts(&data);
    let clean = reference.mine(&data);
    let expected = reference.total();
    assert!(expected >= 1_000, "{clean}");

    let sandbox = Sandbox::on(store).with_static_model();
    let data = sandbox.path("transcripts");
    transcripts(&data);
    let seen = kill_midway(&sandbox, &["mine", data.to_str().unwrap(), "--mode", "convos"], 100);
    healthy(&sandbox);
    let after_kill = sandbox.total();
    assert!(after_kill >= seen && after_kill < expected, "{after_kill} drawers after the kill, {expected} in all");
    sandbox.mine(&data);
    healthy(&sandbox);
    assert_eq!(sandbox.total(), expected, "mining again finishes the work, without duplicates");
    let search = sandbox.top("calibrate sensor 7-3 against the reference probe");
    assert!(search.to_string().contains("sensor 7-3"), "{search}");
}

/// `migrate-store` killed mid-copy: the destination opens clean, and the
/// copy run again holds every drawer of the source once.
fn a_killed_store_migration_resumes(store: Store) {
    let source = Sandbox::on(store).with_static_model();
    let data = source.path("transcripts");
    transcripts(&data);
    source.mine(&data);
    let expected = source.total();

    // The destination is a SQLite palace beside the source.
    let destination = Sandbox::new().with_static_model();
    let from = source.location();
    let to = destination.palace().display().to_string();
    let mut child = source
        .bare(&["migrate-store", "--from", &from, "--to", &to])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn migrate-store");
    // Kill as soon as the destination holds a first batch.
    let started = Instant::now();
    let killed = loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("migrate-store finished ({status}) before it could be killed; make the source bigger");
        }
        let status = destination.run(&["status", "--json"]);
        let copied = serde_json::from_slice::<serde_json::Value>(&status.stdout)
            .ok()
            .and_then(|v| v["total_drawers"].as_u64())
            .unwrap_or(0);
        if copied > 0 {
            child.kill().expect("SIGKILL");
            break !child.wait().unwrap().success();
        }
        assert!(started.elapsed() < Duration::from_secs(120), "migrate-store too slow to test");
        std::thread::sleep(Duration::from_millis(5));
    };
    assert!(killed, "migrate-store was killed mid-copy");
    healthy(&destination);
    assert!(destination.total() < expected, "the copy was interrupted");
    let again = source.bare(&["migrate-store", "--from", &from, "--to", &to]).output().unwrap();
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    healthy(&destination);
    assert_eq!(destination.total(), expected, "the copy completes, every drawer once");
}

on_both!(a_killed_mine_resumes_to_the_same_palace, a_killed_store_migration_resumes);

/// Sends SIGTERM to `child` and waits for it to exit, at most `within`.
fn terminate(child: &mut std::process::Child, within: Duration) -> std::process::ExitStatus {
    let pid = child.id().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(started.elapsed() < within, "still running {within:?} after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Seed 0's shutdown order for the background jobs: on SIGTERM `work` (and
/// `serve` with its workers) lets the running job end — its claims
/// completed, none left under a live lease — starts no new one, and exits 0
/// well within a service manager's stop timeout.
#[test]
fn workers_stop_cleanly_on_sigterm() {
    let sandbox = Sandbox::new().with_static_model();
    let data = sandbox.path("transcripts");
    transcripts(&data);
    sandbox.mine(&data);
    let raw = |sandbox: &Sandbox| sandbox.json(&["status", "--json"])["pipeline"].clone();
    assert!(raw(&sandbox)["by_state"]["raw"].as_u64().unwrap_or(0) > 1_000, "{}", raw(&sandbox));

    let mut work = sandbox.cmd(&["work"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("spawn work");
    // Let it claim and process some drawers.
    let started = Instant::now();
    loop {
        let pipeline = raw(&sandbox);
        if pipeline["by_state"]["processed"].as_u64().unwrap_or(0) > 0 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "work processed nothing: {pipeline}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = terminate(&mut work, Duration::from_secs(30));
    assert!(status.success(), "work exits 0 on SIGTERM: {status:?}");
    let pipeline = raw(&sandbox);
    assert_eq!(pipeline["claimed"].as_u64(), Some(0), "no claim is left under a live lease: {pipeline}");
    healthy(&sandbox);

    // The server with its workers: the same, after the HTTP side stops.
    let mut server = sandbox.serve("127.0.0.1", &[], &[]);
    std::thread::sleep(Duration::from_millis(500));
    let status = terminate(&mut server.child, Duration::from_secs(30));
    assert!(status.success(), "serve exits 0 on SIGTERM: {status:?}");
    assert_eq!(raw(&sandbox)["claimed"].as_u64(), Some(0));
    healthy(&sandbox);
}
