//! The client against the scripted local server: both protocols, structured
//! output and its fallback, retries, timeouts, cooldown, the concurrency
//! cap, the kill switch, the budget, and the API key kept out of sight.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mempalace_core::llm::{AnswerSchema, Message, read_json};
use mempalace_llm::testing::{Reply, ScriptedServer};
use mempalace_llm::{ChatRequest, Clock, Llm, LlmClient, LlmConfig, LlmError, Prices, Provider, Secret, Task};
use serde_json::json;

fn config(server: &ScriptedServer, provider: Provider) -> LlmConfig {
    let base = match provider {
        Provider::OpenAi => format!("{}/v1", server.url()),
        Provider::Ollama => server.url().to_string(),
    };
    let mut config = LlmConfig::new(provider, base, "small-model");
    config.initial_backoff = Duration::from_millis(10);
    config.timeout = Duration::from_secs(5);
    config
}

fn client(config: LlmConfig) -> LlmClient {
    LlmClient::new(config).expect("a valid config")
}

/// A clock tests move by hand, in whole seconds.
fn manual_clock() -> (Clock, Arc<AtomicU64>) {
    let base = Instant::now();
    let offset = Arc::new(AtomicU64::new(0));
    let moved = Arc::clone(&offset);
    (Arc::new(move || base + Duration::from_secs(moved.load(Ordering::SeqCst))), offset)
}

fn request(task: Task, schema: bool) -> ChatRequest {
    ChatRequest {
        task,
        messages: vec![Message::system("Answer in JSON."), Message::user("Is this a decision?")],
        schema: schema.then(|| AnswerSchema {
            name: "verdict",
            schema: json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
                           "additionalProperties": false}),
        }),
        temperature: 0.0,
        max_tokens: 50,
    }
}

#[test]
fn openai_answers_are_read_with_usage_counted_and_the_schema_and_key_sent() {
    let server = ScriptedServer::start();
    server.push(Reply::openai_with_usage(r#"{"ok": true}"#, 120, 30));
    let mut config = config(&server, Provider::OpenAi);
    config.api_key = Some(Secret::new("sk-test-key"));
    config.models.insert(Task::Extract, "big-model".into());
    config.prices = Some(Prices { input_per_mtok: 1.0, output_per_mtok: 2.0 });
    let client = client(config);

    let answer = client.chat(&request(Task::Classify, true)).unwrap();
    assert_eq!(answer.text, r#"{"ok": true}"#);
    assert_eq!(answer.model, "scripted-model");
    assert_eq!((answer.usage.prompt_tokens, answer.usage.completion_tokens), (120, 30));
    client.chat(&request(Task::Extract, false)).unwrap();

    let seen = server.requests();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[0].path, "/v1/chat/completions");
    assert_eq!(seen[0].header("authorization"), Some("Bearer sk-test-key"));
    assert_eq!(seen[0].body["model"], "small-model");
    assert_eq!(seen[0].body["temperature"], 0.0);
    assert_eq!(seen[0].body["max_tokens"], 50);
    assert_eq!(seen[0].body["messages"][0], json!({"role": "system", "content": "Answer in JSON."}));
    let format = &seen[0].body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(
        (format["json_schema"]["name"].as_str(), format["json_schema"]["strict"].as_bool()),
        (Some("verdict"), Some(true))
    );
    assert_eq!(format["json_schema"]["schema"]["required"], json!(["ok"]));
    assert_eq!(seen[1].body["model"], "big-model", "the task's own model");
    assert!(seen[1].body.get("response_format").is_none(), "no schema, no format");

    let usage = client.usage();
    assert_eq!(usage.tasks["classify"].calls, 1);
    assert_eq!((usage.tasks["classify"].prompt_tokens, usage.tasks["classify"].completion_tokens), (120, 30));
    assert_eq!(usage.total.calls, 2);
    assert_eq!(usage.total.prompt_tokens, 120 + 11);
    let expected = (120.0 * 1.0 + 30.0 * 2.0 + 11.0 * 1.0 + 7.0 * 2.0) / 1e6;
    assert!((usage.spent_usd - expected).abs() < 1e-12, "{} vs {expected}", usage.spent_usd);
    assert_eq!(usage.models["extract"], "big-model");
    assert_eq!(usage.models["classify"], "small-model");
    let report = serde_json::to_value(&usage).unwrap();
    assert_eq!(report["tasks"]["extract"]["calls"], 1);
    assert_eq!(client.usage_report().unwrap()["total"]["calls"], 2, "the report through the trait");
}

#[test]
fn ollama_answers_are_read_with_usage_counted_and_the_schema_sent_as_format() {
    let server = ScriptedServer::start();
    server.push(Reply::ollama_with_usage(r#"{"ok": false}"#, 40, 9));
    let client = client(config(&server, Provider::Ollama));
    let answer = client.chat(&request(Task::Enrich, true)).unwrap();
    assert_eq!(answer.text, r#"{"ok": false}"#);
    assert_eq!((answer.usage.prompt_tokens, answer.usage.completion_tokens), (40, 9));

    let seen = &server.requests()[0];
    assert_eq!(seen.path, "/api/chat");
    assert_eq!(seen.body["stream"], false);
    assert_eq!(seen.body["format"]["required"], json!(["ok"]));
    assert_eq!(seen.body["options"], json!({"temperature": 0.0, "num_predict": 50}));
    assert_eq!(seen.header("authorization"), None, "no key configured, none sent");
    assert_eq!(client.usage().tasks["enrich"].completion_tokens, 9);
}

#[test]
fn a_server_that_refuses_json_schema_is_asked_with_json_object_and_that_is_remembered() {
    let server = ScriptedServer::start();
    server.push(Reply::json(
        400,
        &json!({"error": {"message": "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.",
                          "type": "invalid_request_error"}}),
    ));
    server.push(Reply::openai(r#"{"ok": true}"#));
    server.push(Reply::openai(r#"{"ok": true}"#));
    let client = client(config(&server, Provider::OpenAi));

    client.chat(&request(Task::Classify, true)).unwrap();
    client.chat(&request(Task::Classify, true)).unwrap();
    let formats: Vec<_> = server.requests().iter().map(|r| r.body["response_format"]["type"].clone()).collect();
    assert_eq!(formats, [json!("json_schema"), json!("json_object"), json!("json_object")]);
    let usage = client.usage();
    assert_eq!(usage.structured_output, "json_object");
    assert_eq!((usage.total.calls, usage.total.failures), (2, 0), "the fallback is part of one call");

    // A server that takes no response_format at all ends at none.
    let server = ScriptedServer::start();
    let refusal = json!({"error": {"message": "response_format is not supported"}});
    server.push(Reply::json(400, &refusal));
    server.push(Reply::json(400, &refusal));
    server.push(Reply::openai(r#"{"ok": true}"#));
    let client = super_client(&server);
    client.chat(&request(Task::Classify, true)).unwrap();
    let seen = server.requests();
    assert_eq!(seen.len(), 3);
    assert!(seen[2].body.get("response_format").is_none());
    assert_eq!(client.usage().structured_output, "none");
}

fn super_client(server: &ScriptedServer) -> LlmClient {
    client(config(server, Provider::OpenAi))
}

#[test]
fn an_answer_wrapped_in_prose_or_a_fence_is_still_read_by_callers() {
    let server = ScriptedServer::start();
    server.push(Reply::openai("Sure, here it is:\n```json\n{\"ok\": true,}\n```\nAnything else?"));
    let client = super_client(&server);
    let answer = client.chat(&request(Task::Classify, true)).unwrap();
    assert_eq!(read_json(&answer.text).unwrap(), json!({"ok": true}));
}

#[test]
fn malformed_bodies_are_malformed_and_do_not_cool_the_client_down() {
    let server = ScriptedServer::start();
    server.push(Reply::status(200, "<html>gateway</html>"));
    server.push(Reply::json(200, &json!({"choices": [{"message": {"content": null}, "finish_reason": "length"}]})));
    server.push(Reply::openai(r#"{"ok": true}"#));
    let client = super_client(&server);
    assert!(matches!(client.chat(&request(Task::Classify, true)), Err(LlmError::Malformed(_))));
    let Err(LlmError::Malformed(why)) = client.chat(&request(Task::Classify, true)) else { panic!("not malformed") };
    assert!(why.contains("length"), "{why}");
    assert!(client.available(), "a bad answer is not an outage");
    client.chat(&request(Task::Classify, true)).unwrap();
    let usage = client.usage();
    assert_eq!((usage.total.calls, usage.total.failures), (3, 2));
    assert_eq!(server.request_count(), 3, "malformed answers are not retried");
}

#[test]
fn a_server_error_is_retried_and_the_call_succeeds() {
    let server = ScriptedServer::start();
    server.push(Reply::json(500, &json!({"error": {"message": "overloaded"}})));
    server.push(Reply::status(503, "unavailable"));
    server.push(Reply::openai(r#"{"ok": true}"#));
    let client = super_client(&server);
    client.chat(&request(Task::Classify, true)).unwrap();
    assert_eq!(server.request_count(), 3);
    let usage = client.usage();
    assert_eq!((usage.total.calls, usage.total.failures, usage.consecutive_failures), (1, 0, 0));

    // Beyond the retries: a provider error naming the status, and a cooldown.
    for _ in 0..3 {
        server.push(Reply::json(500, &json!({"error": {"message": "overloaded"}})));
    }
    let Err(LlmError::Provider(why)) = client.chat(&request(Task::Classify, true)) else {
        panic!("not a provider error")
    };
    assert!(why.contains("HTTP 500") && why.contains("overloaded") && why.contains("2 retries"), "{why}");
    assert_eq!(server.request_count(), 6);
    assert!(!client.available());
}

#[test]
fn retry_after_is_honoured() {
    let server = ScriptedServer::start();
    server.push(Reply::json(429, &json!({"error": {"message": "rate limited"}})).retry_after(1));
    server.push(Reply::openai(r#"{"ok": true}"#));
    let client = super_client(&server);
    let started = Instant::now();
    client.chat(&request(Task::Classify, true)).unwrap();
    assert!(started.elapsed() >= Duration::from_millis(950), "waited {:?}", started.elapsed());
    assert_eq!(server.request_count(), 2);

    // A Retry-After beyond the cap waits only the cap.
    server.push(Reply::status(429, "slow down").retry_after(3600));
    server.push(Reply::openai(r#"{"ok": true}"#));
    let mut capped = config(&server, Provider::OpenAi);
    capped.max_retry_after = Duration::from_millis(50);
    let started = Instant::now();
    client_ok(capped);
    assert!(started.elapsed() < Duration::from_secs(3), "waited {:?}", started.elapsed());
}

fn client_ok(config: LlmConfig) {
    client(config).chat(&request(Task::Classify, true)).unwrap();
}

#[test]
fn an_answer_slower_than_the_timeout_is_unreachable_and_counted() {
    let server = ScriptedServer::start();
    server.push(Reply::openai(r#"{"ok": true}"#).delayed(Duration::from_secs(3)));
    server.push(Reply::openai(r#"{"ok": true}"#).delayed(Duration::from_secs(3)));
    let mut config = config(&server, Provider::OpenAi);
    config.timeout = Duration::from_millis(300);
    config.max_retries = 1;
    let client = client(config);
    let started = Instant::now();
    let Err(LlmError::Unreachable(why)) = client.chat(&request(Task::Extract, true)) else { panic!("not unreachable") };
    assert!(why.contains("timed out") && why.contains("1 retries"), "{why}");
    assert!(started.elapsed() < Duration::from_secs(2), "took {:?}", started.elapsed());
    assert_eq!(server.request_count(), 2, "a timeout is retried");
    let usage = client.usage();
    assert_eq!((usage.tasks["extract"].calls, usage.tasks["extract"].failures), (1, 1));
    assert_eq!(usage.cooling_down_s, Some(60));
}

#[test]
fn repeated_failures_cool_the_client_down_without_reaching_the_server_and_a_success_resets_it() {
    let server = ScriptedServer::start();
    server.set_fallback(Reply::status(502, "bad gateway"));
    let (clock, offset) = manual_clock();
    let mut config = config(&server, Provider::OpenAi);
    config.max_retries = 0;
    let client = LlmClient::with_clock(config, clock).unwrap();

    assert!(matches!(client.chat(&request(Task::Classify, true)), Err(LlmError::Provider(_))));
    assert!(!client.available());
    assert_eq!(client.chat(&request(Task::Classify, true)), Err(LlmError::CoolingDown { remaining_s: 60 }));
    assert_eq!(server.request_count(), 1, "no request while cooling down");

    offset.store(61, Ordering::SeqCst);
    assert!(client.available());
    assert!(client.chat(&request(Task::Classify, true)).is_err());
    assert_eq!(client.cooldown_remaining().map(|left| left.as_secs()), Some(120), "the pause doubles");
    assert_eq!(server.request_count(), 2);

    offset.store(61 + 121, Ordering::SeqCst);
    server.set_fallback(Reply::openai(r#"{"ok": true}"#));
    client.chat(&request(Task::Classify, true)).unwrap();
    server.set_fallback(Reply::status(502, "bad gateway"));
    assert!(client.chat(&request(Task::Classify, true)).is_err());
    assert_eq!(client.cooldown_remaining().map(|left| left.as_secs()), Some(60), "the success reset the schedule");
    let usage = client.usage();
    assert_eq!((usage.total.calls, usage.total.failures, usage.total.refused), (4, 3, 1));

    // A request the server refuses as such (400) does not pause the client.
    let server = ScriptedServer::start();
    server.push(Reply::json(400, &json!({"error": {"message": "context length exceeded"}})));
    let client = super_client(&server);
    let Err(LlmError::Provider(why)) = client.chat(&request(Task::Classify, true)) else {
        panic!("not a provider error")
    };
    assert!(why.contains("HTTP 400") && why.contains("context length exceeded"), "{why}");
    assert_eq!(server.request_count(), 1, "a 4xx is not retried");
    assert!(client.available());
}

#[test]
fn calls_in_flight_never_exceed_the_cap() {
    let server = ScriptedServer::start();
    server.set_fallback(Reply::openai(r#"{"ok": true}"#).delayed(Duration::from_millis(150)));
    let mut config = config(&server, Provider::OpenAi);
    config.max_concurrency = 2;
    let client = Arc::new(client(config));
    let threads: Vec<_> = (0..6)
        .map(|_| {
            let client = Arc::clone(&client);
            std::thread::spawn(move || client.chat(&request(Task::Classify, false)).map(|_| ()))
        })
        .collect();
    for thread in threads {
        thread.join().unwrap().unwrap();
    }
    assert_eq!(server.request_count(), 6);
    assert_eq!(server.max_in_flight(), 2, "the cap is reached and never passed");
    assert_eq!(client.usage().in_flight, 0);
}

#[test]
fn the_kill_switch_file_disables_calls_without_a_request_until_it_is_removed() {
    let server = ScriptedServer::start();
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("llm.off");
    let (clock, offset) = manual_clock();
    let mut config = config(&server, Provider::OpenAi);
    config.kill_switch = Some(marker.clone());
    let client = LlmClient::with_clock(config, clock).unwrap();

    client.chat(&request(Task::Classify, true)).unwrap();
    std::fs::write(&marker, "").unwrap();
    offset.store(1, Ordering::SeqCst);
    let Err(LlmError::Disabled(why)) = client.chat(&request(Task::Classify, true)) else { panic!("not disabled") };
    assert!(why.contains("llm.off"), "{why}");
    assert!(!client.available());
    assert_eq!(server.request_count(), 1, "no request while switched off");
    assert!(client.usage().disabled);

    std::fs::remove_file(&marker).unwrap();
    assert!(client.chat(&request(Task::Classify, true)).is_err(), "the marker is looked at once a second at most");
    offset.store(2, Ordering::SeqCst);
    client.chat(&request(Task::Classify, true)).unwrap();
    assert_eq!(server.request_count(), 2);
    let usage = client.usage();
    assert_eq!((usage.total.calls, usage.total.refused, usage.consecutive_failures), (2, 2, 0));
}

#[test]
fn the_budget_stops_calls_once_spent() {
    let server = ScriptedServer::start();
    server.set_fallback(Reply::openai_with_usage(r#"{"ok": true}"#, 1_000, 1_000));
    let mut config = config(&server, Provider::OpenAi);
    // 1,000 + 1,000 tokens at $1 + $4 per million: $0.005 a call.
    config.prices = Some(Prices { input_per_mtok: 1.0, output_per_mtok: 4.0 });
    config.budget_usd = Some(0.012);
    let client = client(config);
    for _ in 0..3 {
        client.chat(&request(Task::Extract, false)).unwrap();
    }
    let Err(LlmError::Budget(why)) = client.chat(&request(Task::Extract, false)) else { panic!("not budget") };
    assert!(why.contains("0.01"), "{why}");
    assert!(!client.available());
    assert_eq!(server.request_count(), 3);
    let usage = client.usage();
    assert!((usage.spent_usd - 0.015).abs() < 1e-12);
    assert_eq!((usage.total.calls, usage.total.refused), (3, 1));
}

#[test]
fn the_api_key_never_shows_in_debug_output_or_errors() {
    let server = ScriptedServer::start();
    server.push(Reply::json(401, &json!({"error": {"message": "Incorrect API key provided: sk-live-123456."}})));
    let mut config = config(&server, Provider::OpenAi);
    config.api_key = Some(Secret::new("sk-live-123456"));
    let client = client(config);
    assert!(!format!("{client:?}").contains("sk-live-123456"));
    let error = client.chat(&request(Task::Classify, true)).unwrap_err();
    let shown = format!("{error} {error:?}");
    assert!(shown.contains("HTTP 401") && shown.contains("***"), "{shown}");
    assert!(!shown.contains("sk-live-123456"), "{shown}");
    assert_eq!(server.requests()[0].header("authorization"), Some("Bearer sk-live-123456"));
    assert!(!serde_json::to_string(&client.usage()).unwrap().contains("sk-live"));
    assert!(!client.available(), "a refused key pauses the client (every call would fail)");
}

#[test]
fn an_unreachable_server_is_unreachable() {
    let server = ScriptedServer::start();
    let base = server.url().to_string();
    drop(server);
    std::thread::sleep(Duration::from_millis(50));
    let mut config = LlmConfig::new(Provider::Ollama, base, "m");
    config.max_retries = 1;
    config.initial_backoff = Duration::from_millis(10);
    let client = client(config);
    assert!(matches!(client.chat(&request(Task::Probe, false)), Err(LlmError::Unreachable(_))));
}
