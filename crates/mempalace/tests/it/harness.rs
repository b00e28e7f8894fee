//! The one harness of the binary's tests: a temporary home and palace per
//! test, on either store — a SQLite palace directory, or a schema of its own
//! on the test PostgreSQL server — and the real `mempalace` binary run there
//! with a clean environment (only `HOME`, `PATH` and what the test asks for).
//!
//! [`on_both!`] makes a `sqlite::…` and a `postgres::…` test of each
//! `fn NAME(Store)`, as the engine's tests do, so a command's behaviour is
//! stated once and both stores must meet it (the `postgres::…` tests exist
//! in builds with the `postgres` feature, as `--all-features` in
//! scripts/test.sh). PostgreSQL comes from
//! `MEMPALACE_TEST_DATABASE_URL` (scripts/test.sh starts a throwaway
//! cluster); without it those tests fail, unless `MEMPALACE_TEST_POSTGRES=skip`
//! asks to skip them.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use mempalace_postgres::testing::TestSchema;
use serde_json::Value;

/// Which store a test's palace lives in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Store {
    /// A palace directory (`--palace DIR`, holding `palace.db`).
    Sqlite,
    /// A schema of its own on the test server (`--store postgres://…`);
    /// only in a build with the `postgres` feature.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    Postgres,
}

/// A temporary home and palace for one test; the palace (directory or
/// schema) goes away with it.
pub struct Sandbox {
    dir: tempfile::TempDir,
    schema: Option<TestSchema>,
    envs: Vec<(String, String)>,
}

impl Sandbox {
    /// A SQLite palace, no embedding model (the home is empty, so none is found).
    pub fn new() -> Self {
        Self::on(Store::Sqlite)
    }

    /// A fresh palace on `store`, no embedding model. For PostgreSQL the
    /// test server must be configured (see [`on_both!`]).
    pub fn on(store: Store) -> Self {
        let schema = match store {
            Store::Sqlite => None,
            Store::Postgres => Some(TestSchema::on_test_server().expect(
                "a PostgreSQL sandbox needs MEMPALACE_TEST_DATABASE_URL (run the test through on_both!, which skips \
                 only when MEMPALACE_TEST_POSTGRES=skip)",
            )),
        };
        let sandbox = Self { dir: tempfile::tempdir().expect("tempdir"), schema, envs: Vec::new() };
        std::fs::create_dir_all(sandbox.home()).expect("home");
        sandbox
    }

    /// Uses the static embedding model of `MEMPALACE_MODEL_DIR` (fast in a
    /// debug build; searches still use vectors).
    pub fn with_static_model(mut self) -> Self {
        self.envs.push(("MEMPALACE_EMBEDDER".into(), "static".into()));
        if let Some(models) = std::env::var_os("MEMPALACE_MODEL_DIR") {
            self.envs.push(("MEMPALACE_MODEL_DIR".into(), models.to_string_lossy().into_owned()));
        }
        self
    }

    /// Sets a variable for every command of this sandbox.
    pub fn with_env(mut self, key: &str, value: &str) -> Self {
        self.envs.push((key.to_string(), value.to_string()));
        self
    }

    /// The temporary folder of the test (home, palace directory, files).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// `$HOME` of the commands.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// The SQLite palace directory (used on SQLite only).
    pub fn palace(&self) -> PathBuf {
        self.dir.path().join("palace")
    }

    /// A path in the test's folder.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The `--store` value naming this palace: the directory or the URL.
    #[cfg_attr(not(feature = "postgres"), allow(dead_code))]
    pub fn location(&self) -> String {
        match &self.schema {
            Some(schema) => schema.url.clone(),
            None => self.palace().display().to_string(),
        }
    }

    /// The palace arguments: `--palace DIR` or `--store URL`.
    pub fn palace_args(&self) -> Vec<String> {
        match &self.schema {
            Some(schema) => vec!["--store".into(), schema.url.clone()],
            None => vec!["--palace".into(), self.palace().display().to_string()],
        }
    }

    /// The environment every command of this sandbox gets.
    pub fn envs(&self) -> Vec<(String, String)> {
        let mut envs = vec![
            ("HOME".to_string(), self.home().display().to_string()),
            ("PATH".to_string(), std::env::var("PATH").unwrap_or_default()),
        ];
        envs.extend(self.envs.iter().cloned());
        envs
    }

    /// The binary with a clean environment, no palace argument.
    pub fn bare(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_mempalace"));
        command.env_clear().envs(self.envs()).args(args).stdin(Stdio::null());
        command
    }

    /// The binary on this sandbox's palace.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut command = self.bare(&[]);
        command.args(self.palace_args()).args(args);
        command
    }

    /// Runs to the end.
    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run mempalace")
    }

    /// Runs with `stdin` as standard input.
    pub fn run_with_stdin(&self, args: &[&str], stdin: &[u8]) -> Output {
        let mut child = self
            .cmd(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mempalace");
        child.stdin.take().expect("stdin").write_all(stdin).expect("write stdin");
        child.wait_with_output().expect("wait")
    }

    /// Runs and requires success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let output = self.run(args);
        assert!(output.status.success(), "mempalace {args:?} failed: {}", text(&output.stderr));
        text(&output.stdout)
    }

    /// Runs, requires success, parses stdout as JSON.
    pub fn json(&self, args: &[&str]) -> Value {
        let stdout = self.ok(args);
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("mempalace {args:?}: {e}: {stdout}"))
    }

    /// The palace's drawer count (`status --json`).
    pub fn total(&self) -> u64 {
        self.json(&["status", "--json"])["total_drawers"].as_u64().expect("total_drawers")
    }

    /// `mine PATH --mode convos --json`.
    pub fn mine(&self, path: &Path) -> Value {
        self.json(&["mine", path.to_str().expect("UTF-8 path"), "--mode", "convos", "--json"])
    }

    /// The top three search results.
    pub fn top(&self, query: &str) -> Value {
        self.json(&["search", query, "--results", "3", "--json"])["results"].clone()
    }
}

/// Bytes as text (lossy).
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The exit code of a process that exited normally.
pub fn code(output: &Output) -> i32 {
    output.status.code().expect("exited normally")
}

/// The model directory prepared by scripts/test.sh (MiniLM and the static model).
pub fn model_dir() -> PathBuf {
    let dir = std::env::var_os("MEMPALACE_MODEL_DIR").map(PathBuf::from).unwrap_or_else(|| {
        panic!("MEMPALACE_MODEL_DIR is not set; run ./scripts/test.sh (it fetches and distills the models)")
    });
    assert!(dir.join("all-MiniLM-L6-v2/model.safetensors").is_file(), "no MiniLM under {}", dir.display());
    dir
}

/// Makes `sqlite::NAME` and `postgres::NAME` tests of each `fn NAME(Store)`.
macro_rules! on_both {
    ($($name:ident),+ $(,)?) => {
        mod sqlite {
            $( #[test] fn $name() { super::$name($crate::harness::Store::Sqlite) } )+
        }
        #[cfg(feature = "postgres")]
        mod postgres {
            $(
                #[test]
                fn $name() {
                    if mempalace_postgres::testing::server().is_some() {
                        super::$name($crate::harness::Store::Postgres)
                    }
                }
            )+
        }
    };
}
pub(crate) use on_both;

/// A `mempalace serve --mcp-http` child process on a free port, killed
/// (and reaped) when dropped.
pub struct Server {
    /// The process.
    pub child: Child,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Its log (stderr, at info level).
    pub log: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits (up to `within`) until the server `child` logs, in the file
/// `log`, the address it listens on; returns its port. Binding port 0 and
/// reading the port back leaves no moment in which another test could take
/// a port picked for this one.
fn listening_port(child: &mut Child, log: &Path, within: Duration) -> u16 {
    let deadline = Instant::now() + within;
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let port = text
            .lines()
            .filter(|line| line.contains("listening:"))
            .find_map(|line| line.split_once("addr=")?.1.split_whitespace().next()?.parse::<SocketAddr>().ok());
        if let Some(address) = port {
            return address.port();
        }
        if let Some(status) = child.try_wait().expect("the server's status") {
            panic!("the server exited ({status}) before it listened:\n{text}");
        }
        assert!(Instant::now() < deadline, "the server did not listen within {within:?}:\n{text}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl Sandbox {
    /// Starts `serve --mcp-http BIND:0` and `extra` arguments with the
    /// extra environment `envs`, and waits (up to 60 s) until it listens
    /// on the port the system gave it (read from its log, `serve-N.log` in
    /// the sandbox, one per server).
    pub fn serve(&self, bind: &str, extra: &[&str], envs: &[(&str, &str)]) -> Server {
        static SERVERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let address = format!("{bind}:0");
        let mut args = vec!["serve", "--mcp-http", address.as_str()];
        args.extend_from_slice(extra);
        let log = self.path(&format!("serve-{}.log", SERVERS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)));
        let mut command = self.cmd(&args);
        command
            .env("MEMPALACE_LOG", "info")
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("the server's log file"));
        for (key, value) in envs {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("start mempalace serve");
        let port = listening_port(&mut child, &log, Duration::from_secs(60));
        Server { child, port, log }
    }
}

/// An HTTP answer.
pub struct Answer {
    /// Status code.
    pub status: u16,
    /// Headers, in order.
    pub headers: Vec<(String, String)>,
    /// Body (de-chunked).
    pub body: String,
}

impl Answer {
    /// The body as JSON.
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    /// A problem+json answer with `status`; returns its detail.
    pub fn problem(&self, status: u16) -> String {
        assert_eq!(self.status, status, "{}", self.body);
        assert_eq!(self.header("content-type"), Some("application/problem+json"), "{}", self.body);
        let problem = self.json();
        assert_eq!(problem["status"], status);
        assert!(problem["type"].as_str().unwrap().starts_with("/problems/"), "{problem}");
        problem["detail"].as_str().unwrap().to_string()
    }
}

/// One request; `headers` are added to Host, Connection and Content-Length.
pub fn call(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&str>) -> Answer {
    call_bytes(port, method, path, headers, body.unwrap_or("").as_bytes())
}

/// One request with any bytes as its body (invalid UTF-8, oversized). A
/// server may answer and close before reading all of a large body, so a
/// failed write is not an error: the answer is what counts.
pub fn call_bytes(port: u16, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Answer {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut request = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: 127.0.0.1:{port}\r\n"));
    }
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(request.as_bytes()).unwrap();
    let _ = stream.write_all(body);
    let mut raw = Vec::new();
    if let Err(error) = stream.read_to_end(&mut raw) {
        // A reset after the answer (the server closed with body unread).
        assert!(!raw.is_empty(), "no answer: {error}");
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines.next().unwrap().split_whitespace().nth(1).unwrap().parse().unwrap();
    let headers: Vec<(String, String)> =
        lines.filter_map(|l| l.split_once(':')).map(|(k, v)| (k.trim().to_string(), v.trim().to_string())).collect();
    let chunked = headers.iter().any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked { dechunk(rest) } else { rest.to_string() };
    Answer { status, headers, body }
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 {
            break;
        }
        out.push_str(&tail[..size]);
        rest = &tail[size + 2..];
    }
    out
}
