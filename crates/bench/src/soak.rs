//! Soak: one palace under a sustained mixed load for a set time — MCP
//! streamable-HTTP clients issuing real tool calls against `mempalace
//! serve` and miners running `mempalace mine` on the same palace — with
//! the servers' memory sampled throughout and a consistency check at the
//! end (every acknowledged add is readable by its id, `doctor` is clean).
//!
//! On SQLite one server serves the palace directory; with a database URL
//! several servers share one PostgreSQL database and the clients are spread
//! across them (a drawer added through one server is read back through
//! another). The clients speak the protocol by hand over a blocking HTTP
//! client: `initialize` (the answer carries the `Mcp-Session-Id` header),
//! `notifications/initialized`, then `tools/call`; answers may come as
//! SSE frames, whose `data:` line holds the JSON-RPC message.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, anyhow, bail};
use serde_json::{Value, json};

use crate::corpus::{Rng, drawer_text};
use crate::report::percentile;

/// What the soak is asked to do.
#[derive(Debug, Clone)]
pub struct SoakParams {
    /// The mempalace binary.
    pub binary: PathBuf,
    /// Model directory (`--model-dir`).
    pub models: Option<PathBuf>,
    /// Embedder (`--embedder`).
    pub embedder: String,
    /// How long the load runs.
    pub duration: Duration,
    /// MCP HTTP clients.
    pub clients: usize,
    /// Concurrent miners.
    pub miners: usize,
    /// A PostgreSQL database to run on instead of a SQLite palace.
    pub database_url: Option<String>,
    /// Server processes on the PostgreSQL database (one on SQLite).
    pub servers: usize,
    /// How often the servers' RSS is sampled.
    pub sample_every: Duration,
}

/// Parses `90`, `90s`, `10m`, `1h` or `500ms`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| format!("{text:?}: use a number and s, m, h or ms, e.g. 10m"))?;
    let duration = match unit {
        "" | "s" => Duration::from_secs(number),
        "ms" => Duration::from_millis(number),
        "m" => Duration::from_secs(number * 60),
        "h" => Duration::from_secs(number * 3600),
        _ => return Err(format!("{text:?}: unknown unit {unit:?}; use s, m, h or ms, e.g. 10m")),
    };
    if duration.is_zero() {
        return Err(format!("{text:?}: the duration must be positive"));
    }
    Ok(duration)
}

/// A `mempalace serve` child, terminated (SIGTERM, then SIGKILL) when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    /// Asks the server to stop (SIGTERM) and waits up to 60 s; true when it exited 0.
    fn stop(&mut self) -> Result<bool> {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status.success());
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The palace all processes share, and how to run the binary on it.
struct Target {
    binary: PathBuf,
    home: PathBuf,
    /// `--palace DIR` or `--store URL`, plus the model flags.
    global: Vec<String>,
}

impl Target {
    fn command(&self) -> Command {
        let mut command = Command::new(&self.binary);
        command
            .env("HOME", &self.home)
            .env_remove("MEMPALACE_DATABASE_URL")
            .env_remove("MEMPALACE_PALACE_PATH")
            .args(&self.global)
            .stdin(Stdio::null());
        command
    }

    fn serve(&self, log: &Path) -> Result<Server> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let child = self
            .command()
            .args(["serve", "--mcp-http", &format!("127.0.0.1:{port}")])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log)?)
            .spawn()
            .context("starting mempalace serve")?;
        let server = Server { child, port };
        let deadline = Instant::now() + Duration::from_secs(120);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                bail!("mempalace serve did not listen on port {port} within 120 s; see {}", log.display());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(server)
    }
}

/// One MCP session over streamable HTTP.
struct Session {
    agent: ureq::Agent,
    url: String,
    session: String,
    next_id: u64,
}

/// A failed call: what went wrong, for the error list.
type CallError = String;

impl Session {
    fn open(port: u16) -> Result<Self> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(120)))
            .build()
            .into();
        let url = format!("http://127.0.0.1:{port}/mcp");
        let mut session = Self { agent, url, session: String::new(), next_id: 1 };
        let (headers_session, init) = session
            .post(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "mempalace-bench-soak", "version": "1"}}}))
            .map_err(|e| anyhow!("initialize: {e}"))?;
        session.session = headers_session.ok_or_else(|| anyhow!("initialize: no Mcp-Session-Id header"))?;
        if init.as_ref().and_then(|m| m.get("result")).is_none() {
            bail!("initialize: {init:?}");
        }
        session
            .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .map_err(|e| anyhow!("notifications/initialized: {e}"))?;
        Ok(session)
    }

    /// Posts one JSON-RPC message; returns the session header and the
    /// answer (None for a notification's 202).
    fn post(&mut self, message: &Value) -> Result<(Option<String>, Option<Value>), CallError> {
        let mut request = self
            .agent
            .post(&self.url)
            .header("Accept", "application/json, text/event-stream")
            .header("Content-Type", "application/json")
            .header("MCP-Protocol-Version", "2025-06-18");
        if !self.session.is_empty() {
            request = request.header("Mcp-Session-Id", &self.session);
        }
        let mut response = request.send(message.to_string()).map_err(|e| format!("HTTP: {e}"))?;
        let status = response.status().as_u16();
        let session = response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_string);
        let body = response.body_mut().read_to_string().map_err(|e| format!("reading the answer: {e}"))?;
        if status == 202 {
            return Ok((session, None));
        }
        if status != 200 {
            return Err(format!("HTTP {status}: {}", body.chars().take(300).collect::<String>()));
        }
        let id = message.get("id").cloned();
        // A JSON body, or SSE frames: the one whose data is the answer to `id`.
        let answer = std::iter::once(body.as_str())
            .chain(body.lines().filter_map(|l| l.strip_prefix("data:")))
            .filter_map(|text| serde_json::from_str::<Value>(text.trim()).ok())
            .find(|m| m.get("id") == id.as_ref())
            .ok_or_else(|| format!("no answer to request {id:?} in {}", body.chars().take(300).collect::<String>()))?;
        Ok((session, Some(answer)))
    }

    /// Calls a tool; the parsed JSON of its text result, or why it failed.
    fn call(&mut self, tool: &str, arguments: Value) -> Result<Value, CallError> {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}});
        let (_, answer) = self.post(&message)?;
        let answer = answer.ok_or("no answer")?;
        if let Some(error) = answer.get("error") {
            return Err(format!("JSON-RPC error {error}"));
        }
        let result = &answer["result"];
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        if result["isError"] == true {
            return Err(format!("tool error: {}", text.chars().take(300).collect::<String>()));
        }
        serde_json::from_str(text).map_err(|e| format!("result is not JSON ({e}): {text}"))
    }
}

/// What one client did.
#[derive(Default)]
struct ClientLog {
    /// Latencies per tool, in milliseconds.
    latencies: BTreeMap<String, Vec<f64>>,
    errors: Vec<String>,
    /// Drawer ids whose add was acknowledged.
    added: Vec<String>,
}

/// Subjects and objects the knowledge-graph calls draw from, so queries
/// find facts other clients added.
const ENTITIES: &[&str] = &["Orion Service", "Vega Pipeline", "Lyra Cache", "Atlas Gateway", "Nova Scheduler"];
const RELATIONS: &[&str] = &["depends_on", "replaced", "owned_by", "deployed_to"];

/// One client's loop: a fixed mix of calls until `stop`.
fn client(port: u16, number: usize, stop: &AtomicBool) -> ClientLog {
    let mut log = ClientLog::default();
    let mut session = match Session::open(port) {
        Ok(session) => session,
        Err(error) => {
            log.errors.push(format!("client {number}: {error:#}"));
            return log;
        }
    };
    let mut rng = Rng::new(0x50a4 + number as u64);
    let mut n = 0_u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        let roll = rng.below(100);
        let (tool, arguments) = match roll {
            0..=34 => {
                let query =
                    drawer_text(rng.below(5_000)).split_whitespace().skip(2).take(6).collect::<Vec<_>>().join(" ");
                ("mempalace_search", json!({"query": query, "limit": 5}))
            }
            35..=54 => {
                let content =
                    format!("Soak client {number} note {n}: {}", drawer_text(1_000_000 * (number as u64 + 1) + n));
                let room = ["decisions", "incidents", "notes"][rng.below(3) as usize];
                ("mempalace_add_drawer", json!({"wing": "soak", "room": room, "content": content}))
            }
            55..=64 => {
                let subject = ENTITIES[rng.below(ENTITIES.len() as u64) as usize];
                let object = format!("{} {}", ENTITIES[rng.below(ENTITIES.len() as u64) as usize], rng.below(50));
                let predicate = RELATIONS[rng.below(RELATIONS.len() as u64) as usize];
                ("mempalace_kg_add", json!({"subject": subject, "predicate": predicate, "object": object}))
            }
            65..=79 => {
                let entity = ENTITIES[rng.below(ENTITIES.len() as u64) as usize];
                ("mempalace_kg_query", json!({"entity": entity}))
            }
            80..=87 => ("mempalace_status", json!({})),
            88..=93 if !log.added.is_empty() => {
                let id = log.added[rng.below(log.added.len() as u64) as usize].clone();
                ("mempalace_get_drawer", json!({"drawer_id": id}))
            }
            _ => ("mempalace_list_drawers", json!({"wing": "soak", "limit": 10})),
        };
        let started = Instant::now();
        let result = session.call(tool, arguments);
        let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
        log.latencies.entry(tool.to_string()).or_default().push(elapsed_ms);
        match result {
            Ok(value) if tool == "mempalace_add_drawer" => match value["drawer_id"].as_str() {
                Some(id) if value["success"] == true => log.added.push(id.to_string()),
                _ => log.errors.push(format!("client {number}: add_drawer not filed: {value}")),
            },
            Ok(_) => {}
            Err(error) => log.errors.push(format!("client {number}: {tool}: {error}")),
        }
    }
    log
}

/// What one miner did.
#[derive(Default)]
struct MinerLog {
    runs: usize,
    drawers_added: u64,
    seconds: Vec<f64>,
    errors: Vec<String>,
}

/// Writes a fresh batch of Claude Code transcripts (every message unique).
fn write_batch(dir: &Path, miner: usize, batch: usize) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    for file in 0..4 {
        let mut text = String::new();
        for message in 0..8 {
            let index = 10_000_000_000 + (miner as u64) * 100_000_000 + (batch as u64) * 1_000 + file * 10 + message;
            let (kind, body) = if message % 2 == 0 {
                ("user", json!(drawer_text(index).chars().take(300).collect::<String>()))
            } else {
                ("assistant", json!([{"type": "text", "text": drawer_text(index)}]))
            };
            let uuid = format!("m{miner}-b{batch}-f{file}-{message}");
            let parent = (message > 0).then(|| format!("m{miner}-b{batch}-f{file}-{}", message - 1));
            let line = json!({"type": kind, "uuid": uuid, "parentUuid": parent,
                "sessionId": format!("soak-{miner}-{batch}-{file}"), "cwd": "/home/soak/project",
                "timestamp": "2026-01-05T10:00:00Z", "message": {"role": kind, "content": body}});
            text.push_str(&line.to_string());
            text.push('\n');
        }
        std::fs::write(dir.join(format!("session-{file}.jsonl")), text)?;
    }
    Ok(())
}

/// One miner's loop: a new batch of transcripts mined by the CLI, until `stop`.
fn miner(target: &Target, scratch: &Path, number: usize, stop: &AtomicBool) -> MinerLog {
    let mut log = MinerLog::default();
    let mut batch = 0;
    while !stop.load(Ordering::Relaxed) {
        batch += 1;
        let dir = scratch.join(format!("miner-{number}/batch-{batch}"));
        if let Err(error) = write_batch(&dir, number, batch) {
            log.errors.push(format!("miner {number}: writing batch {batch}: {error:#}"));
            break;
        }
        let started = Instant::now();
        let output = target
            .command()
            .arg("mine")
            .arg(&dir)
            .args(["--mode", "convos", "--json"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output();
        log.seconds.push(started.elapsed().as_secs_f64());
        log.runs += 1;
        match output {
            Ok(output) if output.status.success() => match serde_json::from_slice::<Value>(&output.stdout) {
                Ok(summary) => log.drawers_added += summary["drawers_added"].as_u64().unwrap_or(0),
                Err(error) => log.errors.push(format!("miner {number}: batch {batch}: mine --json: {error}")),
            },
            Ok(output) => log.errors.push(format!(
                "miner {number}: batch {batch}: mine exited {}: {}",
                output.status,
                String::from_utf8_lossy(&output.stderr).trim()
            )),
            Err(error) => log.errors.push(format!("miner {number}: starting mine: {error}")),
        }
    }
    log
}

/// One server's RSS samples: (seconds since the start, MiB).
type RssSamples = Vec<(f64, f64)>;

/// VmRSS of a process in MiB.
fn rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: f64 = status.lines().find(|l| l.starts_with("VmRSS:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// First, last and largest sample of one server's RSS, and whether it grew:
/// the mean of the last quarter of the run above the mean of the second
/// quarter (after warm-up: model loaded, caches filled) by more than 10 %.
fn rss_summary(samples: &[(f64, f64)]) -> Value {
    let values: Vec<f64> = samples.iter().map(|(_, mib)| *mib).collect();
    let mean = |part: &[f64]| if part.is_empty() { f64::NAN } else { part.iter().sum::<f64>() / part.len() as f64 };
    let quarter = values.len() / 4;
    let second = mean(&values[quarter..(2 * quarter).max(quarter)]);
    let last = mean(&values[values.len() - quarter.max(1).min(values.len())..]);
    json!({
        "samples": values.len(),
        "first_mib": values.first(),
        "last_mib": values.last(),
        "max_mib": values.iter().copied().fold(f64::NAN, f64::max),
        "second_quarter_mean_mib": second,
        "last_quarter_mean_mib": last,
        "grows": second.is_finite() && last > second * 1.10,
    })
}

/// The benchmark: summary and raw samples.
pub fn run(params: &SoakParams) -> Result<(Value, Value)> {
    let scratch = tempfile::Builder::new().prefix("mempalace-bench-soak-").tempdir()?;
    let home = scratch.path().join("home");
    std::fs::create_dir_all(&home)?;
    let mut global = match &params.database_url {
        Some(url) => vec!["--store".to_string(), url.clone()],
        None => vec!["--palace".to_string(), scratch.path().join("palace").display().to_string()],
    };
    if let Some(models) = &params.models {
        global.extend(["--model-dir".to_string(), models.display().to_string()]);
    }
    global.extend(["--embedder".to_string(), params.embedder.clone()]);
    let target = Target { binary: params.binary.clone(), home, global };
    let n_servers = if params.database_url.is_some() { params.servers.max(1) } else { 1 };

    // The palace is created (and, on PostgreSQL, its schema migrated) once
    // before the servers start, so they do not race to create it.
    let init = target.command().args(["init"]).output().context("mempalace init")?;
    if !init.status.success() {
        bail!("mempalace init failed: {}", String::from_utf8_lossy(&init.stderr));
    }
    let mut servers = Vec::new();
    for number in 0..n_servers {
        servers.push(target.serve(&scratch.path().join(format!("server-{number}.log")))?);
    }
    let ports: Vec<u16> = servers.iter().map(|s| s.port).collect();
    let pids: Vec<u32> = servers.iter().map(|s| s.child.id()).collect();

    let stop = Arc::new(AtomicBool::new(false));
    let rss: Arc<Mutex<Vec<RssSamples>>> = Arc::new(Mutex::new(vec![Vec::new(); n_servers]));
    let started = Instant::now();
    let (client_logs, miner_logs) = std::thread::scope(|scope| {
        let sampler = {
            let (stop, rss, pids) = (stop.clone(), rss.clone(), pids.clone());
            let every = params.sample_every;
            scope.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let at = started.elapsed().as_secs_f64();
                    for (index, pid) in pids.iter().enumerate() {
                        if let Some(mib) = rss_mib(*pid) {
                            rss.lock().expect("no sampler panics")[index].push((at, mib));
                        }
                    }
                    let next = Instant::now() + every;
                    while Instant::now() < next && !stop.load(Ordering::Relaxed) {
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            })
        };
        let clients: Vec<_> = (0..params.clients)
            .map(|number| {
                let (stop, port) = (stop.clone(), ports[number % ports.len()]);
                scope.spawn(move || client(port, number, &stop))
            })
            .collect();
        let miners: Vec<_> = (0..params.miners)
            .map(|number| {
                let (stop, target, scratch) = (stop.clone(), &target, scratch.path());
                scope.spawn(move || miner(target, scratch, number, &stop))
            })
            .collect();
        while started.elapsed() < params.duration {
            std::thread::sleep(Duration::from_millis(100));
        }
        stop.store(true, Ordering::Relaxed);
        let client_logs: Vec<ClientLog> = clients.into_iter().map(|h| h.join().expect("a client thread")).collect();
        let miner_logs: Vec<MinerLog> = miners.into_iter().map(|h| h.join().expect("a miner thread")).collect();
        sampler.join().expect("the sampler thread");
        (client_logs, miner_logs)
    });
    let elapsed = started.elapsed().as_secs_f64();

    // Consistency, while the servers still run: every acknowledged add is
    // read back by its id, through another server than the one that filed
    // it where there are several.
    let added: Vec<(usize, String)> = client_logs
        .iter()
        .enumerate()
        .flat_map(|(number, log)| log.added.iter().map(move |id| (number, id.clone())))
        .collect();
    let mut readers: Vec<Session> = ports.iter().map(|port| Session::open(*port)).collect::<Result<_>>()?;
    let mut missing = Vec::new();
    for (number, id) in &added {
        let reader = &mut readers[(number + 1) % ports.len()];
        match reader.call("mempalace_get_drawer", json!({"drawer_id": id})) {
            Ok(drawer) if drawer["drawer_id"].as_str() == Some(id.as_str()) => {}
            Ok(other) => missing.push(format!("{id}: {other}")),
            Err(error) => missing.push(format!("{id}: {error}")),
        }
    }
    let status = readers[0].call("mempalace_status", json!({})).map_err(|e| anyhow!("status: {e}"))?;
    let mut clean_exits = 0;
    for server in &mut servers {
        clean_exits += usize::from(server.stop()?);
    }
    let doctor = target.command().args(["doctor", "--json", "--check-only"]).output().context("mempalace doctor")?;
    let doctor_report: Value = serde_json::from_slice(&doctor.stdout).unwrap_or(Value::Null);
    let doctor_clean = doctor.status.success() && doctor_report["healthy"] == true;

    let mut per_tool: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for log in &client_logs {
        for (tool, samples) in &log.latencies {
            per_tool.entry(tool.clone()).or_default().extend(samples);
        }
    }
    let total_calls: usize = per_tool.values().map(Vec::len).sum();
    let tools: BTreeMap<String, Value> = per_tool
        .iter()
        .map(|(tool, samples)| {
            let mut sorted = samples.clone();
            sorted.sort_by(f64::total_cmp);
            (
                tool.clone(),
                json!({"calls": sorted.len(), "p50_ms": percentile(&sorted, 50.0),
                "p95_ms": percentile(&sorted, 95.0), "p99_ms": percentile(&sorted, 99.0), "max_ms": sorted.last()}),
            )
        })
        .collect();
    let mut all: Vec<f64> = per_tool.values().flatten().copied().collect();
    all.sort_by(f64::total_cmp);
    let errors: Vec<String> = client_logs
        .iter()
        .flat_map(|l| l.errors.iter())
        .chain(miner_logs.iter().flat_map(|l| l.errors.iter()))
        .cloned()
        .collect();
    let mine_ms: Vec<f64> = miner_logs.iter().flat_map(|l| l.seconds.iter().map(|s| s * 1000.0)).collect();
    let mined: u64 = miner_logs.iter().map(|l| l.drawers_added).sum();
    let failed_checks: Vec<&Value> = doctor_report["checks"]
        .as_array()
        .map(|checks| checks.iter().filter(|c| c["ok"] != true).collect())
        .unwrap_or_default();
    // Every filed drawer is still there: the adds and the mined drawers.
    let drawers_present = status["total_drawers"].as_u64().is_some_and(|n| n >= added.len() as u64 + mined);
    let rss = rss.lock().expect("the sampler has ended").clone();
    let summary = json!({
        "store": if params.database_url.is_some() { "postgres" } else { "sqlite" },
        "embedder": params.embedder,
        "servers": n_servers,
        "clients": params.clients,
        "miners": params.miners,
        "seconds": elapsed,
        "calls": total_calls,
        "calls_per_second": total_calls as f64 / elapsed,
        "all_calls": {"p50_ms": percentile(&all, 50.0), "p95_ms": percentile(&all, 95.0), "p99_ms": percentile(&all, 99.0)},
        "tools": tools,
        "mine": {"runs": miner_logs.iter().map(|l| l.runs).sum::<usize>(),
            "drawers_added": mined,
            "run": crate::report::summarize(&mine_ms)},
        "errors": errors.len(),
        "first_errors": errors.iter().take(20).collect::<Vec<_>>(),
        "rss": rss.iter().map(|samples| rss_summary(samples)).collect::<Vec<_>>(),
        "consistency": {
            "adds_acknowledged": added.len(),
            "adds_missing": missing.len(),
            "first_missing": missing.iter().take(20).collect::<Vec<_>>(),
            "total_drawers": status["total_drawers"],
            "every_filed_drawer_present": drawers_present,
            "servers_exited_cleanly": clean_exits,
            "doctor_clean": doctor_clean,
            "doctor_failed_checks": failed_checks,
        },
        "ok": errors.is_empty() && missing.is_empty() && doctor_clean && drawers_present && clean_exits == n_servers,
    });
    let samples = json!({
        "rss_mib": rss,
        "doctor": doctor_report,
        "server_logs": (0..n_servers)
            .map(|n| {
                let log = std::fs::read_to_string(scratch.path().join(format!("server-{n}.log"))).unwrap_or_default();
                let mut tail: Vec<String> = log.lines().rev().take(50).map(str::to_string).collect();
                tail.reverse();
                tail
            })
            .collect::<Vec<_>>(),
    });
    Ok((summary, samples))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_units_and_refuse_nonsense() {
        assert_eq!(parse_duration("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(parse_duration("45"), Ok(Duration::from_secs(45)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("ten minutes").is_err());
        assert!(parse_duration("10d").unwrap_err().contains("unknown unit"));
    }

    #[test]
    fn rss_growth_compares_the_last_quarter_with_the_second() {
        let flat: Vec<(f64, f64)> = (0..40).map(|i| (i as f64, if i < 5 { 50.0 } else { 200.0 })).collect();
        assert_eq!(rss_summary(&flat)["grows"], false, "warm-up growth is not a leak");
        let leak: Vec<(f64, f64)> = (0..40).map(|i| (i as f64, 100.0 + 5.0 * i as f64)).collect();
        assert_eq!(rss_summary(&leak)["grows"], true);
        assert_eq!(rss_summary(&leak)["max_mib"], 295.0);
    }
}
