//! `mempalace llm status|test|on|off` through the real binary, against the
//! scripted local chat server of `mempalace-llm`.

use std::process::Output;

use mempalace_llm::testing::{Reply, ScriptedServer};
use serde_json::{Value, json};

use crate::harness::{Sandbox, code, text};

fn run(sandbox: &Sandbox, envs: &[(&str, &str)], args: &[&str]) -> Output {
    let mut command = sandbox.cmd(args);
    for (key, value) in envs {
        command.env(key, value);
    }
    command.output().expect("run mempalace")
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {} / {}", text(&output.stdout), text(&output.stderr)))
}

fn openai_env(server: &ScriptedServer) -> Vec<(&'static str, String)> {
    vec![
        ("MEMPALACE_LLM_BASE_URL", format!("{}/v1", server.url())),
        ("MEMPALACE_LLM_MODEL", "small-model".into()),
        ("MEMPALACE_LLM_EXTRACT_MODEL", "big-model".into()),
        ("MEMPALACE_LLM_API_KEY", "sk-cli-secret".into()),
    ]
}

fn pairs<'a>(envs: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    envs.iter().map(|(key, value)| (*key, value.as_str())).collect()
}

#[test]
fn status_without_a_base_url_says_every_job_runs_deterministic() {
    let sandbox = Sandbox::new();
    let status = json_of(&run(&sandbox, &[], &["llm", "status", "--json"]));
    assert_eq!(status["state"], "not_configured");
    assert_eq!(status["kill_switch"]["present"], false);
    assert!(status.get("config").is_none());
    let output = run(&sandbox, &[], &["llm", "status"]);
    assert!(text(&output.stdout).contains("deterministic"), "{}", text(&output.stdout));

    let tested = run(&sandbox, &[], &["llm", "test"]);
    assert_eq!(code(&tested), 8);
    assert!(text(&tested.stderr).contains("MEMPALACE_LLM_BASE_URL"), "{}", text(&tested.stderr));
}

#[test]
fn status_shows_the_configuration_without_the_key_and_test_reports_the_answer() {
    let sandbox = Sandbox::new();
    let server = ScriptedServer::start();
    let envs = openai_env(&server);
    let status_output = run(&sandbox, &pairs(&envs), &["llm", "status", "--json"]);
    assert!(!text(&status_output.stdout).contains("sk-cli-secret"));
    let status = json_of(&status_output);
    assert_eq!(status["state"], "on");
    assert_eq!(status["config"]["provider"], "openai");
    assert_eq!(status["config"]["api_key"], true);
    assert_eq!(status["config"]["models"]["extract"], "big-model");
    assert_eq!(status["config"]["models"]["classify"], "small-model");
    assert_eq!(status["reachable"], Value::Null);
    assert_eq!(server.request_count(), 0, "status sends nothing");

    server.push(Reply::openai_with_usage(r#"{"ok": true}"#, 21, 4));
    let test = json_of(&run(&sandbox, &pairs(&envs), &["llm", "test", "--json"]));
    assert_eq!(test["ok"], true);
    assert_eq!(test["model"], "scripted-model");
    assert_eq!((test["prompt_tokens"].as_u64(), test["completion_tokens"].as_u64()), (Some(21), Some(4)));
    assert!(test["latency_ms"].is_u64());
    let seen = &server.requests()[0];
    assert_eq!(seen.path, "/v1/chat/completions");
    assert_eq!(seen.header("authorization"), Some("Bearer sk-cli-secret"));
    assert_eq!(seen.body["model"], "small-model", "the probe task uses the default model");
    assert_eq!(seen.body["response_format"]["json_schema"]["schema"]["required"], json!(["ok"]));

    let text_output = run(&sandbox, &pairs(&envs), &["llm", "test"]);
    assert!(text_output.status.success(), "{}", text(&text_output.stderr));
    assert!(text(&text_output.stdout).contains("answered in"), "{}", text(&text_output.stdout));
}

#[test]
fn test_speaks_ollama_when_the_flags_say_so() {
    let sandbox = Sandbox::new();
    let server = ScriptedServer::start();
    let args = ["--llm-provider", "ollama", "--llm-base-url", server.url(), "--llm-model", "llama3.2"];
    let mut command: Vec<&str> = args.to_vec();
    command.extend(["llm", "test", "--json"]);
    let test = json_of(&run(&sandbox, &[], &command));
    assert_eq!((test["ok"].as_bool(), test["prompt_tokens"].as_u64()), (Some(true), Some(13)));
    let seen = &server.requests()[0];
    assert_eq!((seen.path.as_str(), &seen.body["model"]), ("/api/chat", &json!("llama3.2")));
    assert_eq!(seen.body["format"]["required"], json!(["ok"]));
}

#[test]
fn a_failed_test_exits_8_with_what_to_do_and_never_the_key() {
    let sandbox = Sandbox::new();
    let server = ScriptedServer::start();
    let envs = openai_env(&server);
    server.push(Reply::json(401, &json!({"error": {"message": "Incorrect API key provided: sk-cli-secret"}})));
    let output = run(&sandbox, &pairs(&envs), &["llm", "test"]);
    assert_eq!(code(&output), 8);
    let stderr = text(&output.stderr);
    assert!(stderr.contains("HTTP 401") && stderr.contains("MEMPALACE_LLM_API_KEY"), "{stderr}");
    assert!(!stderr.contains("sk-cli-secret"), "{stderr}");

    server.push(Reply::status(200, "<html>not a model</html>"));
    let output = run(&sandbox, &pairs(&envs), &["llm", "test", "--json"]);
    assert_eq!(code(&output), 8);
    let report = json_of(&output);
    assert_eq!(report["ok"], false);
    assert!(report["hint"].as_str().unwrap().contains("provider"), "{report}");

    // A model that answers but not with the JSON asked for.
    server.push(Reply::openai("I cannot do that."));
    let output = run(&sandbox, &pairs(&envs), &["llm", "test", "--json"]);
    assert_eq!(code(&output), 8);
    assert_eq!(json_of(&output)["ok"], false);
}

#[test]
fn off_and_on_create_and_remove_the_marker_that_stops_every_call() {
    let sandbox = Sandbox::new();
    let server = ScriptedServer::start();
    let envs = openai_env(&server);
    let off = json_of(&run(&sandbox, &pairs(&envs), &["llm", "off", "--json"]));
    assert_eq!((off["state"].as_str(), off["changed"].as_bool()), (Some("switched_off"), Some(true)));
    let marker = sandbox.palace().join("llm.off");
    assert!(marker.is_file(), "the marker sits in the palace directory");
    assert_eq!(off["marker"], marker.display().to_string());
    assert_eq!(json_of(&run(&sandbox, &pairs(&envs), &["llm", "off", "--json"]))["changed"], false);

    assert_eq!(json_of(&run(&sandbox, &pairs(&envs), &["llm", "status", "--json"]))["state"], "switched_off");
    let output = run(&sandbox, &pairs(&envs), &["llm", "test"]);
    assert_eq!(code(&output), 8);
    assert!(text(&output.stderr).contains("llm on"), "{}", text(&output.stderr));
    assert_eq!(server.request_count(), 0, "switched off: no request");

    let on = run(&sandbox, &pairs(&envs), &["llm", "on"]);
    assert!(text(&on.stdout).contains("switched back on"), "{}", text(&on.stdout));
    assert!(!marker.exists());
    assert!(run(&sandbox, &pairs(&envs), &["llm", "test"]).status.success());
    assert_eq!(server.request_count(), 1);
}

#[test]
fn a_setting_switches_it_off_and_a_malformed_one_exits_2() {
    let sandbox = Sandbox::new();
    let server = ScriptedServer::start();
    let mut envs = openai_env(&server);
    envs.push(("MEMPALACE_LLM", "off".into()));
    let status = json_of(&run(&sandbox, &pairs(&envs), &["llm", "status", "--json"]));
    assert_eq!((status["state"].as_str(), status["reason"].as_str()), (Some("off"), Some("MEMPALACE_LLM=off")));
    assert_eq!(code(&run(&sandbox, &pairs(&envs), &["llm", "test"])), 8);
    let no_flag = run(&sandbox, &pairs(&openai_env(&server)), &["--no-llm", "llm", "status", "--json"]);
    assert_eq!(json_of(&no_flag)["reason"], "--no-llm");
    assert_eq!(server.request_count(), 0);

    let output = run(&sandbox, &[("MEMPALACE_LLM_BASE_URL", "http://127.0.0.1:9/v1")], &["status"]);
    assert_eq!(code(&output), 2);
    assert!(text(&output.stderr).contains("MEMPALACE_LLM_MODEL"), "{}", text(&output.stderr));
    let output = run(
        &sandbox,
        &[("MEMPALACE_LLM_PROVIDER", "claude"), ("MEMPALACE_LLM_BASE_URL", "http://x:1"), ("MEMPALACE_LLM_MODEL", "m")],
        &["llm", "status"],
    );
    assert_eq!(code(&output), 2);
}
