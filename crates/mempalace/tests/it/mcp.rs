//! The MCP server driven by the official Python MCP SDK (`tests/mcp/client.py`)
//! over stdio and streamable HTTP: every scenario runs the real binary on a
//! temporary palace on both stores, with the static embedding model so
//! searches use vectors without the cost of MiniLM in a debug build.
//!
//! The Python interpreter comes from `$MEMPALACE_TEST_PYTHON`, a virtualenv
//! with the `mcp` package that `scripts/test.sh` creates; without it these
//! tests fail and say how to set it up.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use crate::harness::{Sandbox, Store, on_both};

fn python() -> PathBuf {
    let python = std::env::var_os("MEMPALACE_TEST_PYTHON").map(PathBuf::from).unwrap_or_else(|| {
        panic!(
            "MEMPALACE_TEST_PYTHON is not set: run ./scripts/test.sh, which creates a virtualenv with the \
             Python MCP SDK (pip install mcp) and points this variable at its python"
        )
    });
    assert!(python.exists(), "MEMPALACE_TEST_PYTHON={} does not exist; rerun ./scripts/test.sh", python.display());
    python
}

fn model_dir() -> String {
    std::env::var("MEMPALACE_MODEL_DIR")
        .expect("MEMPALACE_MODEL_DIR is not set; run ./scripts/test.sh (it fetches and distills the models)")
}

fn client_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/client.py")
}

/// A sandbox whose server uses the static model.
fn sandbox(store: Store) -> Sandbox {
    model_dir();
    Sandbox::on(store).with_static_model()
}

/// Runs one client scenario against the sandbox's palace; panics with its
/// output when it fails.
fn scenario(sandbox: &Sandbox, name: &str, extra: &[&str]) -> Output {
    let output = Command::new(python())
        .arg(client_script())
        .arg(name)
        .arg("--bin")
        .arg(env!("CARGO_BIN_EXE_mempalace"))
        .args(sandbox.palace_args())
        .args(extra)
        .env_clear()
        .envs(sandbox.envs())
        .env("TEST_HOME", sandbox.home())
        .output()
        .expect("run the Python MCP client");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.lines().any(|l| l == "PASS"),
        "scenario {name} failed\n--- stdout\n{stdout}\n--- stderr\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Issue 6: initialize, the exact tool list, add → search, KG add → query →
/// invalidate → timeline, diary write → read, drawers, tunnels, graph and
/// the error cases, over stdio.
fn stdio_round_trips_with_the_python_sdk(store: Store) {
    let output = scenario(&sandbox(store), "stdio", &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.lines().filter(|l| l.starts_with("ok ")).count() >= 50, "{stdout}");
}

/// Issue 6: the same over streamable HTTP on loopback.
fn http_round_trips_with_the_python_sdk(store: Store) {
    let sandbox = sandbox(store);
    let server = sandbox.serve("127.0.0.1", &[], &[]);
    let port = server.port;
    scenario(&sandbox, "http", &["--url", &format!("http://127.0.0.1:{port}/mcp")]);
    scenario(&sandbox, "http-guards", &["--url", &format!("http://127.0.0.1:{port}/mcp")]);
    // Issue 22: the counters in Prometheus's text format.
    let answer = crate::harness::call(port, "GET", "/metrics", &[], None);
    assert_eq!(answer.status, 200, "{}", answer.body);
    let metrics = answer.body;
    for line in [
        "# TYPE mempalace_ingest_dropped_total counter",
        "mempalace_ingest_capacity 1024",
        "mempalace_ingest_workers 16",
        "mempalace_ingest_pending 0",
        "mempalace_embedder_settled 1",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in\n{metrics}");
    }
}

/// Issue 6: off loopback the server refuses to start without a token, and
/// with one it refuses requests that lack it.
#[test]
fn http_off_loopback_requires_a_bearer_token() {
    let sandbox = sandbox(Store::Sqlite);
    let refused = sandbox.run(&["serve", "--mcp-http", "0.0.0.0:0"]);
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("MEMPALACE_MCP_HTTP_TOKEN"));
    assert!(!sandbox.palace().exists(), "nothing is created when the server refuses to start");

    let server = sandbox.serve("0.0.0.0", &[], &[("MEMPALACE_MCP_HTTP_TOKEN", "s3cret-token")]);
    let port = server.port;
    let url = format!("http://127.0.0.1:{port}/mcp");
    scenario(&sandbox, "http-unauthorized", &["--url", &url]);
    scenario(&sandbox, "http", &["--url", &url, "--token", "s3cret-token"]);
}

/// Issue 6: each profile lists exactly its tools.
#[test]
fn tool_profiles_list_exactly_their_tools() {
    scenario(&sandbox(Store::Sqlite), "profiles", &[]);
}

/// Issue 6: two stdio servers on one palace see each other's writes.
fn two_stdio_servers_share_one_palace(store: Store) {
    scenario(&sandbox(store), "two-servers", &[]);
}

/// Issue 15: MemPalace 3.11's upkeep tools — kg_supersede, get_drawers,
/// delete_drawers, mine, sync, delete_by_source, checkpoint, hallways,
/// hook_settings, memories_filed_away, mesh_peers.
fn operations_tools_round_trip(store: Store) {
    scenario(&sandbox(store), "operations", &[]);
}

/// Issue 15: every tool of the Python MemPalace 3.11 (its `tools/list`,
/// recorded in `fixtures/mempalace-3.11/tools-list.json`) exists here with
/// its parameters, their types, no extra required ones, and its read-only
/// hint. With the installed MemPalace (`$MEMPALACE_TEST_REFERENCE_PYTHON`,
/// a virtualenv scripts/test.sh creates) the recording is checked against
/// the live server too.
#[test]
fn tool_schemas_match_the_python_mempalace() {
    let fixtures = mempalace_testdata::repo_root().join("fixtures");
    let reference = std::env::var("MEMPALACE_TEST_REFERENCE_PYTHON").unwrap_or_else(|_| {
        panic!(
            "MEMPALACE_TEST_REFERENCE_PYTHON is not set: run ./scripts/test.sh, which creates a virtualenv with \
             mempalace==3.11.0 (the Python MemPalace) and points this variable at its python"
        )
    });
    scenario(
        &sandbox(Store::Sqlite),
        "schema-diff",
        &["--fixtures", fixtures.to_str().unwrap(), "--reference-python", &reference],
    );
}

/// Issue 6: seed 0's memory_* tools.
fn memory_tools_round_trip(store: Store) {
    scenario(&sandbox(store), "memory", &[]);
}

/// Issue 18: GoClaw's memory files over stdio — memory_append, memory_get
/// (ranges, the user's own file first, errors), a palace edit written back,
/// a hand edit that refuses the next palace edit until `memory-files sync`,
/// a delete that takes the paragraph out of the file, and user_first search.
fn memory_files_round_trip(store: Store) {
    let sandbox = sandbox(store);
    let root = sandbox.path("agent");
    std::fs::create_dir_all(&root).unwrap();
    let sandbox = sandbox.with_env("MEMPALACE_MEMORY_DIR", &root.display().to_string());
    scenario(&sandbox, "memory-files", &[]);
}

/// Issue 17: memory_extract over stdio with a language model — the
/// scripted chat server of `mempalace-llm` — and the rules when its answer
/// cannot be read.
#[test]
fn memory_extraction_over_mcp_with_a_model() {
    use mempalace_llm::testing::{Reply, ScriptedServer};
    let server = ScriptedServer::start();
    server.push(Reply::openai(
        &serde_json::json!({"new": [
            {"entity_type": "fact", "entity_name": "home city", "observation": "Alex lives in Lisbon.", "scope": "user"},
            {"entity_type": "fact", "entity_name": "deploy tool", "observation": "The team deploys with Kamal.", "scope": "workspace"},
            {"entity_type": "mood", "entity_name": "x", "observation": "Happy.", "scope": "user"}
        ], "updates": [], "deletes": []})
        .to_string(),
    ));
    server.push(Reply::openai("I cannot answer that."));
    let sandbox = sandbox(Store::Sqlite)
        .with_env("MEMPALACE_LLM_BASE_URL", &format!("{}/v1", server.url()))
        .with_env("MEMPALACE_LLM_MODEL", "small-model");
    scenario(&sandbox, "memory-model", &[]);
    let asked = server.requests();
    assert_eq!(asked.len(), 2, "one call per extraction");
    assert_eq!(asked[0].body["response_format"]["json_schema"]["name"], "memory_extraction");
    assert!(asked[0].body["messages"][1]["content"].as_str().unwrap().contains("user: I just moved to Lisbon"));
    assert!(
        asked[1].body["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("[m1] (fact, user) home city: Alex lives in Lisbon."),
        "the second extraction is shown the memories the first filed"
    );
}

/// Issue 17: a stdio server runs the cold path itself, so what an agent
/// files is classified and its memories extracted without `work`.
#[test]
fn a_stdio_server_runs_the_cold_path() {
    let sandbox = sandbox(Store::Sqlite).with_env("MEMPALACE_PROCESS_EVERY_S", "1");
    scenario(&sandbox, "memory-workers", &[]);
}

/// Issue 6: robotmem's tools: learn, recall with filters and spatial
/// order, perceptions, corrections, sessions with consolidation.
fn robotmem_tools_round_trip(store: Store) {
    scenario(&sandbox(store), "robotmem", &[]);
}

/// A stdio server spoken to line by line, without an SDK: its process,
/// its input and its output lines.
struct RawServer {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
}

impl RawServer {
    fn start(mut command: Command) -> Self {
        use std::io::BufRead;
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the stdio server");
        let stdin = child.stdin.take().expect("stdin");
        let lines = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
        Self { child, stdin, lines }
    }
}

/// Issue 15: on stdio, calls sent back to back without waiting take effect
/// in the order sent (a search right after an add finds the drawer), and a
/// line that is not JSON gets a `-32700` reply, an array `-32600`; the
/// server goes on serving.
fn pipelined_stdio_calls_run_in_order_and_bad_lines_get_errors(store: Store) {
    use std::io::Write;
    let sandbox = sandbox(store);
    let RawServer { mut child, mut stdin, mut lines } =
        RawServer::start(sandbox.cmd(&["mcp", "serve", "--no-workers"]));
    let send = |stdin: &mut std::process::ChildStdin, line: &str| {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
    };
    send(
        &mut stdin,
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#,
    );
    let init: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    send(&mut stdin, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    // Everything below is sent before any answer is read.
    let mut sent = 0;
    for n in 0..5 {
        let add = serde_json::json!({"jsonrpc": "2.0", "id": 100 + n, "method": "tools/call", "params": {
            "name": "mempalace_add_drawer", "arguments": {"wing": "pipe", "room": "line",
            "content": format!("Pipelined fact number {n}: the zeppelin hangar door code is {}", 4000 + n)}}});
        let search = serde_json::json!({"jsonrpc": "2.0", "id": 200 + n, "method": "tools/call", "params": {
            "name": "mempalace_search", "arguments": {"query": format!("zeppelin hangar door code {}", 4000 + n),
            "wing": "pipe", "limit": 10}}});
        send(&mut stdin, &add.to_string());
        send(&mut stdin, &search.to_string());
        sent += 2;
    }
    send(&mut stdin, "{this is not json");
    send(&mut stdin, "[1, 2, 3]");
    send(
        &mut stdin,
        r#"{"jsonrpc":"2.0","id":999,"method":"tools/call","params":{"name":"mempalace_status","arguments":{}}}"#,
    );
    sent += 3;
    let mut answers = std::collections::HashMap::new();
    let mut errors = Vec::new();
    for _ in 0..sent {
        let line = lines.next().expect("an answer").expect("read");
        let message: serde_json::Value = serde_json::from_str(&line).expect("JSON");
        match message["id"].as_i64() {
            Some(id) => {
                answers.insert(id, message);
            }
            None => errors.push(message["error"]["code"].as_i64().unwrap()),
        }
    }
    errors.sort();
    assert_eq!(errors, vec![-32700, -32600], "a parse error and an invalid request");
    for n in 0..5 {
        let text = answers[&(200 + n)]["result"]["content"][0]["text"].as_str().unwrap().to_string();
        let found: serde_json::Value = serde_json::from_str(&text).unwrap();
        let texts: Vec<&str> =
            found["results"].as_array().unwrap().iter().map(|r| r["text"].as_str().unwrap()).collect();
        assert!(
            texts.iter().any(|t| t.contains(&format!("code is {}", 4000 + n))),
            "search {n} ran before the add sent before it: {texts:?}"
        );
    }
    assert!(answers[&999]["result"]["content"][0]["text"].as_str().unwrap().contains("total_drawers"));
    drop(stdin);
    assert!(child.wait().unwrap().success(), "the server ends cleanly when stdin closes");
}

/// Issue 22: background writes go through the server's bounded ingestion
/// pool. Sent back to back into a pool of one worker and a queue of one,
/// most are turned away with an error result saying so (and counted as
/// dropped in `memory_status`); every accepted one is in the palace once
/// the server has exited (stdin closed: the queue is drained first).
fn background_writes_have_back_pressure_and_survive_shutdown(store: Store) {
    use std::io::Write;
    let sandbox = sandbox(store);
    let mut command = sandbox.cmd(&["mcp", "serve", "--tools", "memory", "--no-workers"]);
    command.env("CRAWBL_AUTOINGEST_WORKERS", "1").env("CRAWBL_AUTOINGEST_CAPACITY", "1");
    let RawServer { mut child, mut stdin, mut lines } = RawServer::start(command);
    let mut send = |line: String| {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
    };
    send(r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#.into());
    lines.next().unwrap().unwrap();
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.into());
    const TURNS: i64 = 200;
    for n in 0..TURNS {
        send(
            serde_json::json!({"jsonrpc": "2.0", "id": n + 1, "method": "tools/call", "params": {
                "name": "memory_ingest_turn", "arguments": {"wing": "support",
                "user": format!("Ticket {n}: printer P-{n} on floor {} jams on A3 paper", n % 7),
                "assistant": format!("Replace the pickup roller of printer P-{n}; order part R-{}", 5000 + n)}}})
            .to_string(),
        );
    }
    send(
        r#"{"jsonrpc":"2.0","id":9999,"method":"tools/call","params":{"name":"memory_status","arguments":{}}}"#.into(),
    );
    let (mut accepted, mut refused) = (0, 0);
    let mut status = serde_json::Value::Null;
    for _ in 0..=TURNS {
        let message: serde_json::Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
        let result = &message["result"];
        let body: serde_json::Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
        if message["id"] == 9999 {
            status = body;
        } else if result["isError"] == true {
            assert!(body["error"].as_str().unwrap().contains("queue is full"), "{body}");
            refused += 1;
        } else {
            assert_eq!(body["queued"], true, "{body}");
            accepted += 1;
        }
    }
    assert!(refused > 0, "a queue of one cannot take {TURNS} turns sent at once");
    assert_eq!(accepted + refused, TURNS);
    let queue = &status["ingest_queue"];
    assert_eq!((queue["workers"].as_u64(), queue["capacity"].as_u64()), (Some(1), Some(1)), "{status}");
    assert_eq!(queue["dropped"].as_i64(), Some(refused), "{status}");
    assert_eq!(queue["submitted"].as_i64(), Some(accepted), "{status}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let wings = sandbox.json(&["status", "--json"])["wings"].clone();
    assert_eq!(wings["support"].as_i64(), Some(accepted), "every accepted turn was filed before exit: {wings}");
}

/// MemPalace 3.11's coordination tools between two server processes on one
/// palace: task_create → the worker's inbox (event_list to_agent) →
/// event_ack → a requester waiting in event_wait (since_event_id) woken by
/// the worker's patch_submit → artifact_get byte for byte; then every
/// refusal in MemPalace's words and shapes, flagged isError.
fn coordination_tools_round_trip(store: Store) {
    let output = scenario(&sandbox(store), "coordination", &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.lines().filter(|l| l.starts_with("ok ")).count() >= 70, "{stdout}");
}

/// `mempalace mcp` prints the setup lines.
#[test]
fn mcp_alone_prints_setup_commands() {
    let output = Sandbox::new().run(&["mcp"]);
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("claude mcp add mempalace -- ") && stdout.contains("mcp serve"), "{stdout}");
    assert!(stdout.contains("codex mcp add mempalace"), "{stdout}");
}

on_both!(
    background_writes_have_back_pressure_and_survive_shutdown,
    operations_tools_round_trip,
    pipelined_stdio_calls_run_in_order_and_bad_lines_get_errors,
    stdio_round_trips_with_the_python_sdk,
    http_round_trips_with_the_python_sdk,
    two_stdio_servers_share_one_palace,
    memory_tools_round_trip,
    memory_files_round_trip,
    robotmem_tools_round_trip,
    coordination_tools_round_trip,
);
