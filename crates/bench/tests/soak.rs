//! The soak benchmark as the test suite runs it: a few seconds, two MCP
//! HTTP clients and one miner on a SQLite palace with the static model —
//! no call fails, every acknowledged add is read back, the server exits
//! cleanly and `doctor` finds nothing.
//!
//! It drives the `mempalace` binary of the same target directory
//! (`target/debug/mempalace`), which scripts/test.sh builds before the
//! suite runs (`cargo build -p mempalace`).

#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;
use std::process::Command;

/// `target/debug/mempalace`, next to this test's `deps/` directory.
fn mempalace_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    let binary = exe.parent().and_then(|deps| deps.parent()).expect("target/debug/deps").join("mempalace");
    assert!(
        binary.is_file(),
        "{} is missing: run `cargo build -p mempalace` first (scripts/test.sh does)",
        binary.display()
    );
    binary
}

#[test]
fn a_short_soak_has_no_errors_and_a_consistent_palace() {
    let models = std::env::var("MEMPALACE_MODEL_DIR")
        .expect("MEMPALACE_MODEL_DIR is not set; run ./scripts/test.sh (it fetches and distills the models)");
    let results = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_mempalace-bench"))
        .arg("--binary")
        .arg(mempalace_binary())
        .arg("--results")
        .arg(results.path())
        .args(["soak", "--duration", "6s", "--clients", "2", "--miners", "1", "--embedder", "static"])
        .args(["--sample-seconds", "1", "--models", &models])
        .output()
        .expect("run mempalace-bench soak");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "soak failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let run = std::fs::read_dir(results.path()).unwrap().next().expect("a run directory").unwrap().path();
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["errors"], 0, "{summary}");
    assert!(summary["calls"].as_u64().unwrap() > 10, "the clients made calls: {summary}");
    let consistency = &summary["consistency"];
    assert!(consistency["adds_acknowledged"].as_u64().unwrap() > 0, "{summary}");
    assert_eq!(consistency["adds_missing"], 0, "{summary}");
    assert_eq!(consistency["doctor_clean"], true, "{summary}");
    assert_eq!(consistency["every_filed_drawer_present"], true, "{summary}");
    assert_eq!(consistency["servers_exited_cleanly"], 1, "{summary}");
    assert!(summary["mine"]["runs"].as_u64().unwrap() >= 1, "{summary}");
    assert!(summary["mine"]["drawers_added"].as_u64().unwrap() > 0, "the miner filed drawers: {summary}");
    assert!(summary["rss"][0]["samples"].as_u64().unwrap() >= 2, "RSS was sampled: {summary}");
    // Every tool of the mix was called and timed.
    for tool in ["mempalace_search", "mempalace_add_drawer", "mempalace_kg_query", "mempalace_status"] {
        assert!(summary["tools"][tool]["p50_ms"].as_f64().is_some(), "{tool} in {summary}");
    }
}
