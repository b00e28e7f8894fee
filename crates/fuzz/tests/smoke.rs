//! The fuzzer as the test suite runs it: every target briefly (a fixed
//! seed, so a run is reproducible), no panic and no hang; and the harness
//! itself catches a panicking parser and keeps its input.

#![allow(clippy::disallowed_methods)]

use std::process::Command;

#[test]
fn every_target_runs_briefly_without_findings() {
    let findings = tempfile::tempdir().unwrap();
    let seconds = std::env::var("MEMPALACE_FUZZ_SECONDS").unwrap_or_else(|_| "1".into());
    let output = Command::new(env!("CARGO_BIN_EXE_mempalace-fuzz"))
        .args(["--seconds", &seconds, "--seed", "7", "--json", "--findings"])
        .arg(findings.path())
        .output()
        .expect("run mempalace-fuzz");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "findings:\n{}\n{stdout}", String::from_utf8_lossy(&output.stderr));
    let report: serde_json::Value = serde_json::from_str(stdout.trim()).expect("a JSON report");
    let targets = report["targets"].as_object().unwrap();
    for name in [
        "transcripts",
        "bundles",
        "project-yaml",
        "config-json",
        "export-lines",
        "texts",
        "opencode-db",
        "python-palace",
        "mcp-arguments",
        "rest-requests",
    ] {
        let target = &targets[name];
        assert!(target["executions"].as_u64().unwrap() > 10, "{name} barely ran: {target}");
        assert_eq!((target["panics"].as_u64(), target["hangs"].as_u64()), (Some(0), Some(0)), "{name}");
    }
    assert!(std::fs::read_dir(findings.path()).unwrap().next().is_none(), "no finding was written");
}

#[test]
fn an_unknown_target_is_refused_with_the_list() {
    let output = Command::new(env!("CARGO_BIN_EXE_mempalace-fuzz")).args(["--target", "nope"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--help lists them"));
}
