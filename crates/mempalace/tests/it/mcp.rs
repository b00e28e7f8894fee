//! The MCP server driven by the official Python MCP SDK (`tests/mcp/client.py`)
//! over stdio and streamable HTTP: every scenario runs the real binary on a
//! temporary palace, with the static embedding model so searches use
//! vectors without the cost of MiniLM in a debug build.
//!
//! The Python interpreter comes from `$MEMPALACE_TEST_PYTHON`, a virtualenv
//! with the `mcp` package that `scripts/test.sh` creates; without it these
//! tests fail and say how to set it up.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

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

struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Self {
        let sandbox = Self { dir: tempfile::tempdir().expect("tempdir") };
        std::fs::create_dir_all(sandbox.home()).expect("home");
        sandbox
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn palace(&self) -> PathBuf {
        self.dir.path().join("palace")
    }

    /// Runs one client scenario; panics with its output when it fails.
    fn scenario(&self, name: &str, extra: &[&str]) -> Output {
        let output = Command::new(python())
            .arg(client_script())
            .arg(name)
            .arg("--bin")
            .arg(env!("CARGO_BIN_EXE_mempalace"))
            .arg("--palace")
            .arg(self.palace())
            .args(extra)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("TEST_HOME", self.home())
            .env("MEMPALACE_MODEL_DIR", model_dir())
            .env("MEMPALACE_EMBEDDER", "static")
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

    /// Starts `serve --mcp-http` on a free port; the child is killed on drop.
    fn http_server(&self, bind: &str, token: Option<&str>) -> (Server, u16) {
        let port = TcpListener::bind("127.0.0.1:0").expect("free port").local_addr().expect("addr").port();
        let mut command = Command::new(env!("CARGO_BIN_EXE_mempalace"));
        command
            .env_clear()
            .env("HOME", self.home())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("MEMPALACE_MODEL_DIR", model_dir())
            .env("MEMPALACE_EMBEDDER", "static")
            .arg("--palace")
            .arg(self.palace())
            .args(["serve", "--mcp-http", &format!("{bind}:{port}")])
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(token) = token {
            command.env("MEMPALACE_MCP_HTTP_TOKEN", token);
        }
        let child = command.spawn().expect("start the HTTP server");
        let address: SocketAddr = format!("127.0.0.1:{port}").parse().expect("address");
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_err() {
            assert!(Instant::now() < deadline, "the HTTP server did not listen on {address} within 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        (Server(child), port)
    }
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Issue 6: initialize, the exact tool list, add → search, KG add → query →
/// invalidate → timeline, diary write → read, drawers, tunnels, graph and
/// the error cases, over stdio.
#[test]
fn stdio_round_trips_with_the_python_sdk() {
    let output = Sandbox::new().scenario("stdio", &[]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.lines().filter(|l| l.starts_with("ok ")).count() >= 50, "{stdout}");
}

/// Issue 6: the same over streamable HTTP on loopback.
#[test]
fn http_round_trips_with_the_python_sdk() {
    let sandbox = Sandbox::new();
    let (_server, port) = sandbox.http_server("127.0.0.1", None);
    sandbox.scenario("http", &["--url", &format!("http://127.0.0.1:{port}/mcp")]);
    sandbox.scenario("http-guards", &["--url", &format!("http://127.0.0.1:{port}/mcp")]);
}

/// Issue 6: off loopback the server refuses to start without a token, and
/// with one it refuses requests that lack it.
#[test]
fn http_off_loopback_requires_a_bearer_token() {
    let sandbox = Sandbox::new();
    let refused = Command::new(env!("CARGO_BIN_EXE_mempalace"))
        .env_clear()
        .env("HOME", sandbox.home())
        .arg("--palace")
        .arg(sandbox.palace())
        .args(["serve", "--mcp-http", "0.0.0.0:0"])
        .output()
        .expect("run");
    assert_eq!(refused.status.code(), Some(2), "{}", String::from_utf8_lossy(&refused.stderr));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("MEMPALACE_MCP_HTTP_TOKEN"));
    assert!(!sandbox.palace().exists(), "nothing is created when the server refuses to start");

    let (_server, port) = sandbox.http_server("0.0.0.0", Some("s3cret-token"));
    let url = format!("http://127.0.0.1:{port}/mcp");
    sandbox.scenario("http-unauthorized", &["--url", &url]);
    sandbox.scenario("http", &["--url", &url, "--token", "s3cret-token"]);
}

/// Issue 6: each profile lists exactly its tools.
#[test]
fn tool_profiles_list_exactly_their_tools() {
    Sandbox::new().scenario("profiles", &[]);
}

/// Issue 6: two stdio servers on one palace see each other's writes.
#[test]
fn two_stdio_servers_share_one_palace() {
    Sandbox::new().scenario("two-servers", &[]);
}

/// Issue 6: seed 0's memory_* tools.
#[test]
fn memory_tools_round_trip() {
    Sandbox::new().scenario("memory", &[]);
}

/// Issue 6: robotmem's tools: learn, recall with filters and spatial
/// order, perceptions, corrections, sessions with consolidation.
#[test]
fn robotmem_tools_round_trip() {
    Sandbox::new().scenario("robotmem", &[]);
}

/// `mempalace mcp` prints the setup lines.
#[test]
fn mcp_alone_prints_setup_commands() {
    let sandbox = Sandbox::new();
    let output = Command::new(env!("CARGO_BIN_EXE_mempalace"))
        .env_clear()
        .env("HOME", sandbox.home())
        .arg("--palace")
        .arg(sandbox.palace())
        .arg("mcp")
        .output()
        .expect("run");
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("claude mcp add mempalace -- ") && stdout.contains("mcp serve"), "{stdout}");
    assert!(stdout.contains("codex mcp add mempalace"), "{stdout}");
}
