//! Crash matrix, mining and store migration (issue 21): the command is
//! killed with SIGKILL mid-run, on both stores; the palace then opens and
//! passes `doctor`, and running the command again finishes the work, ending
//! in exactly the state of an uninterrupted run.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::{Sandbox, Store, on_both};

/// 120 transcripts of 25 exchanges each, every line distinct.
fn transcripts(dir: &Path) {
    some_transcripts(dir, 120);
}

/// `files` transcripts of 25 exchanges each, every line distinct.
fn some_transcripts(dir: &Path, files: usize) {
    std::fs::create_dir_all(dir).unwrap();
    for file in 0..files {
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

/// Runs `command` with info logs and kills it with SIGKILL as soon as it
/// logs `marker` (its first batch committed). Polling the palace from
/// another process instead leaves a command with few batches time to
/// finish during one poll on a loaded machine; the log line comes from the
/// command itself, right after the commit.
fn kill_after_log(mut command: Command, marker: &str) {
    let mut child =
        command.env("MEMPALACE_LOG", "info").stdout(Stdio::null()).stderr(Stdio::piped()).spawn().expect("spawn");
    // Kept open until the kill, so the command never writes to a closed pipe.
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let started = Instant::now();
    loop {
        let Some(line) = stderr.next() else {
            panic!("the command finished without logging {marker:?}; make the input bigger");
        };
        if line.expect("a stderr line").contains(marker) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "too slow to test");
    }
    child.kill().expect("SIGKILL");
    assert!(!child.wait().unwrap().success(), "killed before it finished");
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
    // Killed as soon as the destination holds a first batch.
    kill_after_log(source.bare(&["migrate-store", "--from", &from, "--to", &to]), "migrate-store batch committed");
    healthy(&destination);
    assert!(destination.total() < expected, "the copy was interrupted");
    let again = source.bare(&["migrate-store", "--from", &from, "--to", &to]).output().unwrap();
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    healthy(&destination);
    assert_eq!(destination.total(), expected, "the copy completes, every drawer once");
}

on_both!(
    a_killed_mine_resumes_to_the_same_palace,
    a_killed_store_migration_resumes,
    killed_adds_keep_every_acknowledged_one,
    a_killed_import_resumes,
    a_killed_worker_loses_only_its_leased_batch,
    a_killed_python_migration_resumes,
    a_killed_reembed_resumes,
    a_killed_repair_leaves_the_palace_as_it_was_and_runs_again
);

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

/// The background jobs killed with SIGKILL while processing: what they
/// processed stays processed, the palace passes `doctor`, and a new worker
/// processes everything except a batch the dead worker had claimed, which
/// waits for its lease (`engine::work::CLAIM_LEASE`, 5 minutes) to end;
/// the store's `check_claims` covers taking it over then.
fn a_killed_worker_loses_only_its_leased_batch(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let data = sandbox.path("transcripts");
    transcripts(&data);
    sandbox.mine(&data);
    let pipeline = |sandbox: &Sandbox| sandbox.json(&["status", "--json"])["pipeline"].clone();
    let count = |value: &serde_json::Value, state: &str| value["by_state"][state].as_u64().unwrap_or(0);

    let mut work = sandbox
        .cmd(&["work", "--jobs", "process"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn work");
    let started = Instant::now();
    while count(&pipeline(&sandbox), "processed") == 0 {
        assert!(started.elapsed() < Duration::from_secs(120), "work processed nothing");
        std::thread::sleep(Duration::from_millis(50));
    }
    work.kill().expect("SIGKILL");
    work.wait().expect("reap");
    healthy(&sandbox);
    let killed = pipeline(&sandbox);
    let processed = count(&killed, "processed");
    assert!(processed > 0, "{killed}");

    let again = sandbox.cmd(&["work", "--once", "--jobs", "process"]).output().expect("run work again");
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    let done = pipeline(&sandbox);
    assert!(count(&done, "processed") >= processed, "nothing processed was lost: {killed} then {done}");
    let claimed = done["claimed"].as_u64().unwrap_or(0);
    // The kill may land between batches (nothing claimed) or inside one.
    assert_eq!(count(&done, "raw"), claimed, "only the dead worker's leased batch is left: {done}");
    healthy(&sandbox);
}

/// `doctor` killed with SIGKILL while it rebuilds damaged derived data
/// (right after the lexical index is rebuilt, inside its transaction): the
/// palace opens and is checked, no drawer is lost, and running `doctor`
/// again repairs it. The damage is written with SQL into the palace
/// (`psql` on PostgreSQL).
fn a_killed_repair_leaves_the_palace_as_it_was_and_runs_again(store: Store) {
    use std::io::BufRead as _;
    let postgres = matches!(store, Store::Postgres);
    let sandbox = Sandbox::on(store).with_static_model();
    let data = sandbox.path("transcripts");
    transcripts(&data);
    sandbox.mine(&data);
    let sql = |statement: &str| -> String {
        if postgres {
            let out = std::process::Command::new("psql")
                .args([sandbox.location().as_str(), "-v", "ON_ERROR_STOP=1", "-tAc", statement])
                .output()
                .expect("run psql");
            assert!(out.status.success(), "psql: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        } else {
            let db = rusqlite::Connection::open(sandbox.palace().join("palace.db")).unwrap();
            let mut query = db.prepare(statement).unwrap();
            let mut rows = query.raw_query();
            match rows.next().unwrap() {
                Some(row) => row.get::<_, i64>(0).map(|n| n.to_string()).unwrap_or_default(),
                None => String::new(),
            }
        }
    };
    // Counted from the rows: `status` reads the counts being damaged.
    let rows = || -> i64 { sql("SELECT count(*) FROM drawers").parse().unwrap() };
    let drawers = rows();
    sql("UPDATE room_counts SET drawers = drawers + 7");
    // `doctor --check-only` exits non-zero on problems; its JSON says which.
    let check = |sandbox: &Sandbox| {
        let out = sandbox.run(&["doctor", "--check-only", "--json"]);
        serde_json::from_slice::<serde_json::Value>(&out.stdout).expect("doctor's JSON")["healthy"].clone()
    };
    assert_eq!(check(&sandbox), false, "the damage is seen");

    let mut doctor = sandbox
        .cmd(&["doctor"])
        .env("MEMPALACE_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn doctor");
    let stderr = std::io::BufReader::new(doctor.stderr.take().unwrap());
    for line in stderr.lines() {
        if line.unwrap().contains("lexical index rebuilt") {
            break;
        }
    }
    let running = doctor.try_wait().unwrap().is_none();
    doctor.kill().expect("SIGKILL");
    doctor.wait().expect("reap");
    assert!(running, "the kill landed while the repair was running");
    // The palace opens and is checked (the repair is one transaction: it
    // is either undone or done, depending on how far it got), and no
    // drawer was lost or added.
    assert!(check(&sandbox).is_boolean());
    assert_eq!(rows(), drawers, "no drawer lost or added");

    let again = sandbox.json(&["doctor", "--json"]);
    assert_eq!(again["healthy"], true, "{again}");
    assert_eq!(check(&sandbox), true);
    assert_eq!(sandbox.total(), u64::try_from(drawers).unwrap(), "the counts are the rows' again");
}

/// `migrate-from-python` killed with SIGKILL mid-run, on the repository's
/// Python palace grown to 6,000 more drawers (rows written as ChromaDB
/// writes them): the palace passes `doctor`, and migrating again brings
/// every drawer over exactly once.
fn a_killed_python_migration_resumes(store: Store) {
    const EXTRA: u64 = 6_000;
    let sandbox = Sandbox::on(store).with_static_model();
    let source = mempalace_testdata::python_palace(sandbox.dir(), mempalace_testdata::VectorIndex::Present);
    {
        let chroma = rusqlite::Connection::open(source.join("palace/chroma.sqlite3")).unwrap();
        let segment: String = chroma
            .query_row(
                "SELECT segment_id FROM embeddings WHERE embedding_id LIKE 'drawer_rover_%' LIMIT 1",
                [],
                |row| row.get(0),
            )
            .unwrap();
        let first_row: i64 = chroma.query_row("SELECT max(id) FROM embeddings", [], |row| row.get(0)).unwrap();
        let tx = chroma.unchecked_transaction().unwrap();
        for n in 1..=EXTRA as i64 {
            let row = first_row + n;
            // Rows of the metadata segment (the write queue's entries,
            // replayed after `max_seq_id`, stay as they are).
            let seq = 100_000 + n;
            let id = format!("drawer_bulk_notes_{n:024x}");
            tx.execute(
                "INSERT INTO embeddings (id, segment_id, embedding_id, seq_id, created_at) \
                 VALUES (?1, ?2, ?3, ?4, '2026-11-20 18:00:00')",
                rusqlite::params![row, segment, id, seq],
            )
            .unwrap();
            let text = format!("Bulk note {n}: the greenhouse sensor {n} reads {} degrees at noon.", n % 40);
            for (key, value) in [
                ("chroma:document", text.as_str()),
                ("wing", "bulk"),
                ("room", "notes"),
                ("added_by", "mempalace"),
                ("filed_at", "2026-11-20T18:00:00.000000"),
            ] {
                tx.execute(
                    "INSERT INTO embedding_metadata (id, key, string_value) VALUES (?1, ?2, ?3)",
                    rusqlite::params![row, key, value],
                )
                .unwrap();
            }
        }
        tx.commit().unwrap();
    }
    let source_arg = source.to_str().unwrap();
    let planned = sandbox.json(&["migrate-from-python", "--source", source_arg, "--dry-run", "--json"]);
    let seen = kill_midway(&sandbox, &["migrate-from-python", "--source", source_arg], 100);
    assert!(seen < 7 + EXTRA, "killed before the end ({seen} drawers)");
    healthy(&sandbox);

    sandbox.ok(&["migrate-from-python", "--source", source_arg]);
    assert_eq!(sandbox.total(), 7 + EXTRA, "every drawer once; the dry run planned {planned}");
    assert_eq!(sandbox.json(&["status", "--json"])["wings"]["bulk"], EXTRA);
    healthy(&sandbox);
}

/// `add` killed at staggered moments, in a loop of adds: every add that
/// printed its id is in the palace, the palace passes `doctor`, and the
/// killed adds run again file their drawer once.
fn killed_adds_keep_every_acknowledged_one(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let fact = |n: u64| format!("Fact {n}: kiln {n} fires at {} degrees for glaze batch {n}", 1_000 + n);
    let mut acknowledged = Vec::new();
    let mut killed = Vec::new();
    for n in 0..40_u64 {
        let text = fact(n);
        let mut child = sandbox
            .cmd(&["add", "--wing", "crash", "--room", "adds", &text])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn add");
        if n % 4 == 3 {
            // From right after the start to well into the write.
            std::thread::sleep(Duration::from_millis(n * 4));
            let _ = child.kill();
        }
        let output = child.wait_with_output().unwrap();
        if output.status.success() {
            acknowledged.push((String::from_utf8_lossy(&output.stdout).trim().to_string(), n));
        } else {
            killed.push(n);
        }
    }
    assert!(!killed.is_empty(), "no add was killed before it finished; kill earlier");
    healthy(&sandbox);
    for (id, n) in &acknowledged {
        let drawer = sandbox.run(&["get", id]);
        assert!(drawer.status.success(), "acknowledged add {n} ({id}) is missing");
        assert!(String::from_utf8_lossy(&drawer.stdout).contains(&fact(*n)), "add {n} holds its text");
    }
    for n in &killed {
        sandbox.ok(&["add", "--wing", "crash", "--room", "adds", &fact(*n)]);
    }
    healthy(&sandbox);
    assert_eq!(sandbox.total(), 40, "every fact once, whether its first add was killed before or after its commit");
}

/// `import` of an export killed mid-run: the batches committed are there,
/// the palace passes `doctor`, and importing again completes the palace.
fn a_killed_import_resumes(store: Store) {
    let source = Sandbox::on(store).with_static_model();
    let data = source.path("transcripts");
    transcripts(&data);
    source.mine(&data);
    let expected = source.total();
    let export = source.path("palace.jsonl");
    source.ok(&["export", "--out", export.to_str().unwrap()]);

    let sandbox = Sandbox::on(store).with_static_model();
    let file = export.to_str().unwrap();
    kill_after_log(sandbox.cmd(&["import", file]), "import batch committed");
    healthy(&sandbox);
    assert!(sandbox.total() < expected, "the import was interrupted");
    sandbox.ok(&["import", file]);
    healthy(&sandbox);
    assert_eq!(sandbox.total(), expected, "importing again completes it, every drawer once");
    let search = sandbox.top("calibrate sensor 7-3 against the reference probe");
    assert!(search.to_string().contains("sensor 7-3"), "{search}");
}

/// Drawers with a MiniLM vector, from `repair-status`'s vector lines.
fn minilm_vectors(sandbox: &Sandbox) -> u64 {
    let report = sandbox.ok(&["repair-status"]);
    report
        .lines()
        .filter_map(|line| line.trim().strip_prefix("all-MiniLM-L6-v2 "))
        .filter_map(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// `reembed` to MiniLM killed mid-run: the batches committed keep their
/// vectors, the palace passes `doctor`, and running it again gives every
/// drawer a MiniLM vector.
fn a_killed_reembed_resumes(store: Store) {
    crate::harness::model_dir();
    let sandbox = Sandbox::on(store).with_static_model();
    let data = sandbox.path("transcripts");
    // 600 drawers: MiniLM in a debug build takes a while for each.
    some_transcripts(&data, 24);
    sandbox.mine(&data);
    let total = sandbox.total();
    assert_eq!(minilm_vectors(&sandbox), 0);

    let mut child = sandbox
        .cmd(&["reembed", "--batch", "16"])
        .env("MEMPALACE_EMBEDDER", "minilm")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn reembed");
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("reembed finished ({status}) before it could be killed; make the palace bigger");
        }
        if minilm_vectors(&sandbox) > 0 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(300), "reembed committed nothing in 300 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().expect("SIGKILL");
    assert!(!child.wait().unwrap().success());
    healthy(&sandbox);
    let partial = minilm_vectors(&sandbox);
    assert!(partial > 0 && partial < total, "{partial} of {total} re-embedded before the kill");
    let again = sandbox.cmd(&["reembed", "--batch", "16"]).env("MEMPALACE_EMBEDDER", "minilm").output().unwrap();
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    healthy(&sandbox);
    assert_eq!(minilm_vectors(&sandbox), total, "every drawer has its MiniLM vector");
}

/// Runs `args` on `sandbox` with the largest file it may write limited to
/// `kib` KiB (`ulimit -f`, SIGXFSZ ignored so a write past it fails with
/// EFBIG as on a full disk) — a full disk without mounting anything, so it
/// works unprivileged and in CI.
fn with_file_size_limit(sandbox: &Sandbox, kib: u64, args: &[&str]) -> std::process::Output {
    let mut command = std::process::Command::new("sh");
    command
        .args(["-c", &format!("trap '' XFSZ; ulimit -f {kib}; exec \"$0\" \"$@\"")])
        .arg(env!("CARGO_BIN_EXE_mempalace"))
        .args(sandbox.palace_args())
        .args(args)
        .env_clear()
        .envs(sandbox.envs())
        .stdin(Stdio::null());
    command.output().expect("run mempalace under a file-size limit")
}

/// A disk that fills up mid-mine: the CLI exits with the I/O code and says
/// what to do, nothing half-written stays (the palace passes `doctor`, the
/// drawers committed before are intact), and once there is room mining
/// again finishes the work.
#[test]
fn a_full_disk_stops_mining_cleanly() {
    let sandbox = Sandbox::new().with_static_model();
    sandbox.ok(&["add", "--wing", "before", "--room", "r", "The kiln log was started before the disk filled"]);
    let data = sandbox.path("transcripts");
    transcripts(&data);
    let size_kib = std::fs::metadata(sandbox.palace().join("palace.db")).unwrap().len() / 1024;
    let full = with_file_size_limit(&sandbox, size_kib + 256, &["mine", data.to_str().unwrap(), "--mode", "convos"]);
    let stderr = String::from_utf8_lossy(&full.stderr);
    assert_eq!(full.status.code(), Some(6), "the I/O exit code: {stderr}");
    assert!(stderr.contains("cannot write the palace") && stderr.contains("free space"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    healthy(&sandbox);
    let top = sandbox.top("when was the kiln log started");
    assert!(top.to_string().contains("before the disk filled"), "{top}");

    let reference = Sandbox::new().with_static_model();
    reference.ok(&["add", "--wing", "before", "--room", "r", "The kiln log was started before the disk filled"]);
    let reference_data = reference.path("transcripts");
    transcripts(&reference_data);
    reference.mine(&reference_data);
    sandbox.mine(&data);
    healthy(&sandbox);
    assert_eq!(sandbox.total(), reference.total(), "mining again with room finishes the work, without duplicates");
}

/// A palace its user may not write (root ignores file modes, so the
/// command runs as `nobody` through `setpriv`): writes exit with the I/O
/// code and say to make the palace writable; nothing changes.
#[test]
fn a_read_only_palace_refuses_writes_with_what_to_do() {
    use std::os::unix::fs::PermissionsExt as _;
    let sandbox = Sandbox::new().with_static_model();
    sandbox.ok(&["add", "--wing", "w", "--room", "r", "A fact filed while the palace was writable"]);
    let before = sandbox.total();
    // Checkpointed into palace.db: no WAL or shared-memory file left.
    sandbox.ok(&["doctor", "--check-only"]);
    let set_mode = |path: &std::path::Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    // `nobody` must reach the home and the palace through the test folder.
    set_mode(sandbox.dir(), 0o755);
    set_mode(&sandbox.home(), 0o755);
    for entry in std::fs::read_dir(sandbox.palace()).unwrap() {
        set_mode(&entry.unwrap().path(), 0o444);
    }
    set_mode(&sandbox.palace(), 0o555);
    let root = std::process::Command::new("id").arg("-u").output().unwrap().stdout == b"0\n";
    let mut command = if root {
        let mut command = std::process::Command::new("setpriv");
        command.args(["--reuid=65534", "--regid=65534", "--clear-groups", env!("CARGO_BIN_EXE_mempalace")]);
        command
    } else {
        std::process::Command::new(env!("CARGO_BIN_EXE_mempalace"))
    };
    let refused = command
        .args(sandbox.palace_args())
        .args(["add", "--wing", "w", "--room", "r", "A fact filed on a read-only palace"])
        .env_clear()
        .envs(sandbox.envs())
        .stdin(Stdio::null())
        .output()
        .expect("run mempalace as another user");
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(6), "the I/O exit code: {stderr}");
    assert!(stderr.contains("read-only") && stderr.contains("make both writable"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    set_mode(&sandbox.palace(), 0o755);
    for entry in std::fs::read_dir(sandbox.palace()).unwrap() {
        set_mode(&entry.unwrap().path(), 0o644);
    }
    healthy(&sandbox);
    assert_eq!(sandbox.total(), before, "nothing was written");
}
