//! `llm status|test|on|off`, and the process's one language-model client.
//!
//! Every palace this process opens shares one client (`client`), so the
//! concurrency cap, the cooldown, the accounting and the budget hold per
//! process, as docs/llm.md says. `status` shows the settings without a
//! network call; `test` sends one tiny request; `off`/`on` create and remove
//! the kill-switch marker `llm.off`, which running processes look at at most
//! once a second.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use mempalace_core::llm::{AnswerSchema, ChatRequest, Llm, LlmError, Message, Task, read_json};
use mempalace_llm::{LlmClient, LlmConfig};
use serde_json::{Value, json};

use super::{Silent, Unavailable, UserError};
use crate::output;
use crate::settings::{LlmSetting, Settings};

/// `llm`.
#[derive(Debug, Subcommand)]
pub enum LlmCommand {
    /// Show the provider, endpoint, models per task and the kill switch (no request is sent).
    Status(JsonArg),
    /// Send one tiny request and report latency, model and tokens, or the error and what to do.
    Test(JsonArg),
    /// Switch the language model off for every process of this palace (creates the llm.off marker).
    Off(JsonArg),
    /// Switch it back on (removes the llm.off marker).
    On(JsonArg),
}

/// `--json`.
#[derive(Debug, Args)]
pub struct JsonArg {
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

static CLIENT: Mutex<Option<Arc<LlmClient>>> = Mutex::new(None);

/// The process's client, built on first use; `None` when no model is
/// configured or it is switched off by a setting (every job then runs
/// deterministic, and says so once in the log).
pub fn client(settings: &Settings) -> Result<Option<Arc<dyn Llm>>> {
    let config = match &settings.llm {
        LlmSetting::On(config) => config,
        LlmSetting::NotConfigured => return Ok(None),
        LlmSetting::Off(reason) => {
            tracing::info!(reason, "the language model is off: jobs run deterministic");
            return Ok(None);
        }
    };
    let mut shared = CLIENT.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(client) = shared.as_ref() {
        return Ok(Some(Arc::clone(client) as Arc<dyn Llm>));
    }
    let client = Arc::new(LlmClient::new((**config).clone()).map_err(UserError)?);
    tracing::debug!(provider = %config.provider, base_url = config.shown_base_url(), "language model configured");
    *shared = Some(Arc::clone(&client));
    Ok(Some(client))
}

/// Runs the command.
pub fn run(settings: &Settings, command: LlmCommand) -> Result<()> {
    match command {
        LlmCommand::Status(args) => status(settings, args.json),
        LlmCommand::Test(args) => test(settings, args.json),
        LlmCommand::Off(args) => switch(settings, false, args.json),
        LlmCommand::On(args) => switch(settings, true, args.json),
    }
}

fn marker_present(settings: &Settings) -> bool {
    settings.llm_marker.as_ref().is_some_and(|path| path.exists())
}

fn config_json(config: &LlmConfig) -> Value {
    json!({
        "provider": config.provider.as_str(),
        "base_url": config.shown_base_url(),
        "endpoint": LlmConfig { base_url: config.endpoint_url(), ..config.clone() }.shown_base_url(),
        "api_key": config.api_key.is_some(),
        "model": config.model,
        "models": Task::ALL.iter().map(|task| (task.as_str().to_string(), json!(config.model_for(*task))))
            .collect::<serde_json::Map<_, _>>(),
        "timeout_s": config.timeout.as_secs_f64(),
        "max_concurrency": config.max_concurrency,
        "max_retries": config.max_retries,
        "prices": config.prices.map(|p| json!({"input_per_mtok": p.input_per_mtok, "output_per_mtok": p.output_per_mtok})),
        "budget_usd": config.budget_usd,
    })
}

fn status(settings: &Settings, as_json: bool) -> Result<()> {
    let present = marker_present(settings);
    let (state, reason) = match &settings.llm {
        LlmSetting::NotConfigured => ("not_configured", Some("no base URL is set".to_string())),
        LlmSetting::Off(reason) => ("off", Some(reason.clone())),
        LlmSetting::On(_) if present => ("switched_off", Some("the llm.off marker exists".to_string())),
        LlmSetting::On(_) => ("on", None),
    };
    let config = match &settings.llm {
        LlmSetting::On(config) => Some(config),
        _ => None,
    };
    let marker = settings.llm_marker.as_ref().map(|path| path.display().to_string());
    if as_json {
        let mut value = json!({
            "state": state,
            "reason": reason,
            "kill_switch": {"marker": marker, "present": present},
            "reachable": Value::Null,
        });
        if let Some(config) = config {
            value["config"] = config_json(config);
        }
        return Ok(output::json(&value)?);
    }
    let headline = match state {
        "on" => "on".to_string(),
        "not_configured" => "not configured: every job runs deterministic (set MEMPALACE_LLM_BASE_URL and \
                             MEMPALACE_LLM_MODEL to use one; docs/llm.md)"
            .to_string(),
        "off" => format!("off ({}): every job runs deterministic", reason.unwrap_or_default()),
        _ => "switched off by the kill switch: every job runs deterministic; `mempalace llm on` switches it back on"
            .to_string(),
    };
    output::line(format!("language model: {headline}"))?;
    if let Some(config) = config {
        output::line(format!("provider: {}", config.provider))?;
        output::line(format!("base URL: {}", config.shown_base_url()))?;
        output::line(format!("API key: {}", if config.api_key.is_some() { "set" } else { "not set" }))?;
        let models: Vec<String> = Task::ALL.iter().map(|task| format!("{task}={}", config.model_for(*task))).collect();
        output::line(format!("models: {}", models.join(", ")))?;
        output::line(format!(
            "limits: {} s per call, {} retries, {} calls in flight at most",
            config.timeout.as_secs_f64(),
            config.max_retries,
            config.max_concurrency
        ))?;
        let prices = match config.prices {
            Some(p) => format!("${} in / ${} out per million tokens", p.input_per_mtok, p.output_per_mtok),
            None => "no prices (tokens are counted, cost is not)".to_string(),
        };
        let budget = config.budget_usd.map_or("no budget".to_string(), |b| format!("budget ${b} per process"));
        output::line(format!("cost: {prices}; {budget}"))?;
    }
    match &marker {
        Some(path) => output::line(format!(
            "kill switch: {path} ({})",
            if present { "present: calls are refused" } else { "absent; `mempalace llm off` creates it" }
        ))?,
        None => output::line("kill switch: none (HOME is not set)")?,
    }
    if config.is_some() && state == "on" {
        output::line("reachable: unknown until `mempalace llm test`")?;
    }
    Ok(())
}

/// What to do about a failed test.
fn hint(error: &LlmError, config: &LlmConfig) -> String {
    match error {
        LlmError::Unreachable(_) => format!(
            "check that the server at {} is running and the base URL is right (MEMPALACE_LLM_BASE_URL / \
             llm_base_url); a slow model may need a longer llm_timeout_s",
            config.shown_base_url()
        ),
        LlmError::Provider(message) if message.contains("HTTP 401") || message.contains("HTTP 403") => {
            "check the API key (MEMPALACE_LLM_API_KEY / llm_api_key)".to_string()
        }
        LlmError::Provider(message) if message.contains("HTTP 404") => format!(
            "check the model name ({}) and the base URL's path (the request went to {})",
            config.model_for(Task::Probe),
            LlmConfig { base_url: config.endpoint_url(), ..config.clone() }.shown_base_url()
        ),
        LlmError::Provider(_) => "see the server's message; the provider (openai|ollama) may be wrong".to_string(),
        LlmError::Malformed(_) => "the endpoint answered, but not with a chat completion the model filled: check the \
                                   provider (openai|ollama), the base URL and the model"
            .to_string(),
        LlmError::Disabled(_) => "`mempalace llm on` removes the marker".to_string(),
        LlmError::CoolingDown { .. } | LlmError::Budget(_) | LlmError::NotConfigured => String::new(),
    }
}

fn test(settings: &Settings, as_json: bool) -> Result<()> {
    let fail = |error: String, hint: String| -> Result<()> {
        if as_json {
            output::json(&json!({"ok": false, "error": error, "hint": hint}))?;
            return Err(Silent(super::Exit::Unavailable as u8).into());
        }
        Err(Unavailable(if hint.is_empty() { error } else { format!("{error}; {hint}") }).into())
    };
    let config = match &settings.llm {
        LlmSetting::NotConfigured => {
            return fail(
                "no language model is configured".into(),
                "set MEMPALACE_LLM_BASE_URL and MEMPALACE_LLM_MODEL (or llm_base_url and llm_model in \
                 ~/.mempalace/config.json); see docs/llm.md"
                    .into(),
            );
        }
        LlmSetting::Off(reason) => {
            return fail(format!("the language model is off ({reason})"), "remove that setting to test it".into());
        }
        LlmSetting::On(config) => config,
    };
    let mut config = (**config).clone();
    // One attempt: the test reports the first problem at once.
    config.max_retries = 0;
    let client = LlmClient::new(config.clone()).map_err(UserError)?;
    let request = ChatRequest {
        task: Task::Probe,
        messages: vec![
            Message::system(
                "You are a connectivity check. Answer with the JSON object {\"ok\": true} and nothing else.",
            ),
            Message::user("Reply with {\"ok\": true}."),
        ],
        schema: Some(AnswerSchema {
            name: "probe",
            schema: json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
                           "additionalProperties": false}),
        }),
        temperature: 0.0,
        max_tokens: 20,
    };
    let started = Instant::now();
    let answer = client.chat(&request);
    let latency = started.elapsed();
    let answer = match answer {
        Ok(answer) => answer,
        Err(error) => {
            let hint = hint(&error, &config);
            return fail(error.to_string(), hint);
        }
    };
    let followed = read_json(&answer.text).is_ok_and(|value| value["ok"] == json!(true));
    let usage = client.usage();
    let report = json!({
        "ok": followed,
        "latency_ms": duration_ms(latency),
        "model": answer.model,
        "prompt_tokens": answer.usage.prompt_tokens,
        "completion_tokens": answer.usage.completion_tokens,
        "cost_usd": config.prices.map(|_| usage.spent_usd),
        "structured_output": usage.structured_output,
        "answer": answer.text,
    });
    if as_json {
        output::json(&report)?;
    } else {
        output::line(format!(
            "reachable: {} answered in {} ms ({} prompt + {} completion tokens; structured output: {})",
            answer.model,
            duration_ms(latency),
            answer.usage.prompt_tokens,
            answer.usage.completion_tokens,
            usage.structured_output
        ))?;
    }
    if !followed {
        let shown: String = answer.text.chars().take(120).collect();
        let message = format!(
            "the model answered {shown:?}, not the JSON asked for; jobs validate every answer and fall back to their \
             deterministic path, so choose a model that follows JSON instructions"
        );
        if as_json {
            return Err(Silent(super::Exit::Unavailable as u8).into());
        }
        return Err(Unavailable(message).into());
    }
    Ok(())
}

fn duration_ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

fn switch(settings: &Settings, on: bool, as_json: bool) -> Result<()> {
    let marker = settings.llm_marker.as_ref().ok_or_else(|| {
        UserError("HOME is not set, and a PostgreSQL palace keeps its llm.off marker in ~/.mempalace".into())
    })?;
    let was_present = marker.exists();
    if on && was_present {
        std::fs::remove_file(marker).with_context(|| format!("removing {}", marker.display()))?;
    } else if !on && !was_present {
        if let Some(dir) = marker.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let text = format!("switched off by `mempalace llm off` at {}\n", chrono::Utc::now().to_rfc3339());
        std::fs::write(marker, text).with_context(|| format!("creating {}", marker.display()))?;
    }
    let changed = was_present == on;
    let note = match &settings.llm {
        LlmSetting::Off(reason) if on => Some(format!("{reason} still keeps it off where that setting applies")),
        LlmSetting::NotConfigured if on => Some("no language model is configured, so none is called".to_string()),
        _ => None,
    };
    if as_json {
        return Ok(output::json(&json!({
            "state": if on { "on" } else { "switched_off" },
            "marker": marker.display().to_string(),
            "changed": changed,
            "note": note,
        }))?);
    }
    let line = match (on, changed) {
        (false, true) => format!(
            "language model switched off: {} created; running processes stop calling it within a second",
            marker.display()
        ),
        (false, false) => format!("language model already switched off ({} exists)", marker.display()),
        (true, true) => format!("language model switched back on: {} removed", marker.display()),
        (true, false) => format!("language model not switched off ({} is absent)", marker.display()),
    };
    output::line(line)?;
    if let Some(note) = note {
        output::line(format!("note: {note}"))?;
    }
    Ok(())
}
