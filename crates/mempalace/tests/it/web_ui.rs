//! The web UI (docs/web-ui.md) in a real browser, on both stores: a palace
//! filled with the CLI, `serve --mcp-http` with a token, and headless
//! Chromium (Debian's chromium and chromium-driver) driven through Selenium
//! by `tests/web/ui_test.py`: the token form, the map, a room's drawers,
//! search with the score breakdown, a result opened, edited, deleted and
//! restored, an entity's facts and timeline, the duplicates view, jobs and
//! an error's detail — asserting the page after each step, checking every
//! write through the REST API, and saving a screenshot per step under
//! `target/ui-screenshots/<store>/`, which this test checks are real PNGs.
//!
//! The Python is `$MEMPALACE_TEST_PYTHON`, the virtualenv scripts/test.sh
//! creates (with `selenium`); scripts/test.sh installs chromium and
//! chromium-driver from Debian when they are missing.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::{Sandbox, Store, call, on_both, text};

const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";

fn python() -> PathBuf {
    let python = std::env::var_os("MEMPALACE_TEST_PYTHON").map(PathBuf::from).unwrap_or_else(|| {
        panic!(
            "MEMPALACE_TEST_PYTHON is not set: run ./scripts/test.sh, which creates a virtualenv with selenium \
             and points this variable at its python"
        )
    });
    assert!(python.exists(), "MEMPALACE_TEST_PYTHON={} does not exist; rerun ./scripts/test.sh", python.display());
    python
}

fn driver_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/web/ui_test.py")
}

/// `target/ui-screenshots/<store>`, emptied.
fn screenshot_dir(store: Store) -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).parent().expect("the target directory").to_path_buf();
    let dir = target.join("ui-screenshots").join(match store {
        Store::Sqlite => "sqlite",
        Store::Postgres => "postgres",
    });
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("screenshot folder");
    dir
}

/// One id from `add`'s output.
fn added(stdout: &str) -> String {
    let ids: Vec<&str> = stdout.lines().map(str::trim).filter(|l| l.starts_with("drawer_")).collect();
    assert_eq!(ids.len(), 1, "one drawer filed: {stdout}");
    ids[0].to_string()
}

/// A plain HTTP/1.1 request on loopback; the whole response as text.
/// The page, its script and its style: served without a token, with the
/// content security policy, and free of anything that policy (or working
/// offline) forbids.
fn check_static_files(port: u16) {
    let page = call(port, "GET", "/", &[], None);
    assert_eq!(page.status, 200, "{}", page.body);
    let policy = page.header("content-security-policy").unwrap_or_default();
    assert!(policy.starts_with("default-src 'self'; script-src 'self'; style-src 'self'"), "{policy}");
    assert_eq!(page.header("x-frame-options").map(str::to_ascii_lowercase).as_deref(), Some("deny"));
    for (path, kind) in [("/ui/app.js", "text/javascript"), ("/ui/app.css", "text/css")] {
        let file = call(port, "GET", path, &[], None);
        let content_type = file.header("content-type").unwrap_or_default();
        assert!(file.status == 200 && content_type.contains(kind), "{path}: {} {content_type}", file.status);
    }
    let sources = [
        ("index.html", include_str!("../../../web/src/ui/index.html")),
        ("app.js", include_str!("../../../web/src/ui/app.js")),
        ("app.css", include_str!("../../../web/src/ui/app.css")),
    ];
    for (name, source) in sources {
        for forbidden in
            ["http://", "https://", "innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("]
        {
            assert!(
                !source.contains(forbidden),
                "{name} contains {forbidden:?}: the UI loads nothing from elsewhere and writes no markup from data"
            );
        }
    }
    let html = sources[0].1;
    assert!(!html.contains(" style=") && !html.contains("<style"), "no inline style in index.html");
    assert!(!html.contains("<script>") && html.contains("<script src=\"/ui/app.js\""), "no inline script");
    let inline_handler = html.split_whitespace().any(|word| {
        word.starts_with("on")
            && word.split_once('=').is_some_and(|(name, _)| name.chars().all(|c| c.is_ascii_lowercase()))
    });
    assert!(!inline_handler, "no inline event handler in index.html");
    assert!(!sources[1].1.contains(".style."), "app.js sets no inline style");
}

#[allow(
    clippy::print_stdout,
    reason = "the screenshots' paths and sizes are this test's report (cargo test shows them with --nocapture or on failure)"
)]
fn web_ui_in_headless_chromium(store: Store) {
    for tool in [CHROMIUM, CHROMEDRIVER] {
        assert!(
            Path::new(tool).exists(),
            "{tool} is missing: apt-get install chromium chromium-driver (scripts/test.sh does it as root)"
        );
    }
    let sandbox = Sandbox::on(store).with_static_model();

    // A palace filled through the CLI.
    let text_about_postgres =
        "We decided to move the orders service from MySQL to PostgreSQL in March 2024 because of JSONB support.";
    let drawer = added(&sandbox.ok(&["add", "--wing", "infra", "--room", "database", text_about_postgres]));
    sandbox.ok(&[
        "add",
        "--wing",
        "infra",
        "--room",
        "database",
        "The orders database runs PostgreSQL 16 on a single primary with one replica.",
    ]);
    sandbox.ok(&[
        "add",
        "--wing",
        "infra",
        "--room",
        "deploy",
        "Deploys go through the blue-green pipeline on Kubernetes; a rollback takes two minutes.",
    ]);
    sandbox.ok(&[
        "add",
        "--wing",
        "notes",
        "--room",
        "people",
        "Alice prefers code reviews in the morning and short pull requests.",
    ]);
    sandbox.ok(&[
        "add",
        "--wing",
        "notes",
        "--room",
        "people",
        "Bob owns the billing service and answers pages on weekends.",
    ]);
    // A near-duplicate filed raw, which the cold path merges (the duplicates view).
    sandbox.ok(&[
        "add",
        "--raw",
        "--wing",
        "notes",
        "--room",
        "people",
        "Alice prefers code reviews in the morning, and short pull requests.",
    ]);
    let processed = sandbox.ok(&["work", "--once", "--no-llm", "--jobs", "process"]);
    assert!(processed.contains("1 merged"), "{processed}");
    let got = sandbox.json(&["get", &drawer, "--json"]);
    assert!(got["entities"].to_string().contains("PostgreSQL"), "the extractor names PostgreSQL: {got}");
    for fact in [
        vec!["orders service", "uses", "MySQL", "--valid-from", "2019-01-01", "--valid-to", "2024-02-29"],
        vec!["orders service", "uses", "PostgreSQL", "--valid-from", "2024-03-01"],
        vec!["PostgreSQL", "replaced", "MySQL", "--valid-from", "2024-03-01"],
        vec!["analytics team", "uses", "PostgreSQL", "--valid-from", "2021-06-01", "--valid-to", "2023-12-31"],
    ] {
        let mut args = vec!["kg", "add"];
        args.extend(fact);
        sandbox.ok(&args);
    }

    // The server, with a token even on loopback, so the UI must ask for it.
    let token = "web-ui-test-token-6d1f0c";
    let server = sandbox.serve("127.0.0.1", &["--no-workers"], &[("MEMPALACE_MCP_HTTP_TOKEN", token)]);
    let port = server.port;
    check_static_files(port);
    let refused = call(port, "GET", "/api/v1/health", &[], None);
    assert_eq!(refused.status, 401, "the API needs the token: {}", refused.body);

    let out = screenshot_dir(store);
    let edited = "We moved the orders service from MySQL to PostgreSQL 16 in March 2024 for JSONB support (edited in the web UI).";
    let output = Command::new(python())
        .arg(driver_script())
        .args(["--url", &format!("http://127.0.0.1:{port}")])
        .arg("--out")
        .arg(&out)
        .args(["--token", token, "--drawer", &drawer, "--wing", "infra", "--room", "database"])
        .args(["--query", "why did the orders service move to PostgreSQL", "--edited", edited])
        .args(["--entity", "PostgreSQL", "--fact", "orders service|uses|PostgreSQL", "--expect-merged"])
        .args(["--chromium", CHROMIUM, "--chromedriver", CHROMEDRIVER])
        .env_clear()
        .envs(sandbox.envs())
        .output()
        .expect("run the browser test");
    let stdout = text(&output.stdout);
    print!("{stdout}");
    assert!(
        output.status.success() && stdout.lines().any(|l| l == "PASS"),
        "the browser test failed\n--- stdout\n{stdout}\n--- stderr\n{}\n--- server log\n{}",
        text(&output.stderr),
        std::fs::read_to_string(&server.log).unwrap_or_default()
    );

    // Every screenshot is a real PNG of a rendered page.
    let shots: Vec<(PathBuf, u64)> = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("SCREENSHOT "))
        .map(|rest| {
            let (path, size) = rest.rsplit_once(' ').expect("SCREENSHOT PATH SIZE");
            (PathBuf::from(path), size.parse().expect("size"))
        })
        .collect();
    let names: Vec<String> = shots.iter().map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    for step in ["map", "drawers", "search", "drawer", "edited", "deleted", "restored", "entity", "conflicts", "jobs"] {
        assert!(names.iter().any(|n| n.ends_with(&format!("-{step}.png"))), "a screenshot of {step}: {names:?}");
    }
    for (path, size) in &shots {
        assert!(path.starts_with(&out), "{} is under {}", path.display(), out.display());
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(bytes.len() as u64, *size, "{}", path.display());
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{} is a PNG", path.display());
        assert!(bytes.len() > 8_000, "{} holds a rendered page ({} bytes)", path.display(), bytes.len());
        // A 1280 × 800 window (its viewport, less the browser's own bars): the IHDR chunk's width and height.
        let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
        let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
        assert!(width >= 1200 && height >= 600, "{}: {width}×{height}", path.display());
        println!("screenshot {} ({} bytes, {width}×{height})", path.display(), bytes.len());
    }
}

on_both!(web_ui_in_headless_chromium);
