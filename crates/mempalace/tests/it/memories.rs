//! Extracted memories and the cold path through the real binary: `extract`
//! and `memories` with the rules, `inject` offering a user's memories, and
//! `work` with a language model — the scripted local chat server of
//! `mempalace-llm` answering classification and extraction — including a
//! model answer that cannot be read, which sends the drawer down the
//! heuristic path and says so.

use mempalace_llm::testing::{Reply, ScriptedServer};
use serde_json::{Value, json};

use crate::harness::{Sandbox, Store, on_both, text};

const TALK: &str = "user: I live in Oslo and I always use pnpm.\nassistant: Noted!\nuser: In this repo we use Vitest for tests.\nassistant: Got it.\n";

fn extract_and_list_with_the_rules(store: Store) {
    let sandbox = Sandbox::on(store).with_static_model();
    let file = sandbox.path("talk.txt");
    std::fs::write(&file, TALK).unwrap();
    let file = file.display().to_string();
    let dry = sandbox.json(&["extract", &file, "--user", "alex", "--dry-run", "--json"]);
    let run = &dry["conversations"][0];
    assert_eq!((run["path"].as_str(), run["dry_run"].as_bool()), (Some("rules"), Some(true)));
    assert_eq!(run["rules_because"], "no language model is configured");
    let kinds: Vec<(&str, &str)> = run["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["decision"].as_str().unwrap(), d["scope"].as_str().unwrap()))
        .collect();
    assert_eq!(kinds, vec![("add", "user"), ("add", "user"), ("add", "workspace")], "{dry}");
    assert_eq!(sandbox.json(&["memories", "--user", "alex", "--json"])["count"], 0, "a dry run files nothing");

    let done = sandbox.json(&["extract", &file, "--user", "alex", "--json"]);
    assert!(
        done["conversations"][0]["decisions"].as_array().unwrap().iter().all(|d| d["outcome"] == "filed"),
        "{done}"
    );
    let alex = sandbox.json(&["memories", "--user", "alex", "--json"]);
    assert_eq!(alex["count"], 3);
    assert_eq!(alex["memories"][0]["owner"], "alex", "personal memories first");
    assert_eq!(alex["memories"][2]["scope"], "workspace");
    let sam = sandbox.json(&["memories", "--user", "sam", "--json"]);
    assert_eq!(sam["count"], 1, "another user sees the workspace's memory only: {sam}");

    // A later conversation updates the home city: the old memory is kept, superseded.
    let moved =
        sandbox.run_with_stdin(&["extract", "-", "--user", "alex"], b"user: Big news: I moved to Bergen last month.\n");
    assert!(moved.status.success(), "{}", text(&moved.stderr));
    let said = text(&moved.stdout);
    assert!(said.contains("decided by the rules") && said.contains("~ drawer_memories_fact_"), "{said}");
    let now: Vec<String> = sandbox.json(&["memories", "--user", "alex", "--json"])["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["observation"].as_str().unwrap().to_string())
        .collect();
    assert!(now.iter().any(|o| o.contains("Bergen")) && !now.iter().any(|o| o.contains("Oslo")), "{now:?}");

    // The injector offers the user's memories.
    let injected = sandbox.json(&[
        "inject",
        "Which package manager do I use, and where do I live now?",
        "--user",
        "alex",
        "--json",
    ]);
    let section = injected["section"].as_str().unwrap_or_default();
    assert!(section.contains("pnpm") && section.contains("Bergen"), "{injected}");
    assert_eq!(sandbox.json(&["inject", "ok thanks", "--user", "alex", "--json"])["trivial"], true);

    // Bad input: a clear error, nothing written.
    let nothing = sandbox.run_with_stdin(&["extract", "-"], b"assistant: hello there\n");
    assert_eq!(nothing.status.code(), Some(2));
    assert!(text(&nothing.stderr).contains("no conversation with a user's turn"), "{}", text(&nothing.stderr));
}

fn classification(id: usize, hall: &str, summary: &str) -> String {
    json!({"items": [{"id": id, "memory_type": "fact", "hall": hall, "importance": 0.9, "summary": summary,
        "entities": ["Oslo"], "triples": [{"subject": "Alex", "predicate": "lives in", "object": "Oslo"}]}]})
    .to_string()
}

fn work_with_a_model_classifies_extracts_and_falls_back_when_the_answer_is_unreadable(store: Store) {
    let server = ScriptedServer::start();
    let sandbox = Sandbox::on(store)
        .with_env("MEMPALACE_LLM_BASE_URL", &format!("{}/v1", server.url()))
        .with_env("MEMPALACE_LLM_MODEL", "small-model")
        .with_env("MEMPALACE_LLM_EXTRACT_MODEL", "big-model");
    let id = sandbox.ok(&[
        "add",
        "--wing",
        "chat",
        "--room",
        "talk",
        "--",
        "user: Alex here. I live in Oslo.\nassistant: Nice city!",
    ]);
    let id = id.trim().to_string();
    // The conversation's classification, then its extraction (the memory
    // it files has its type already and is not classified again).
    server.push(Reply::openai(&classification(0, "identity", "Alex lives in Oslo.")));
    server.push(Reply::openai(
        &json!({"new": [{"entity_type": "fact", "entity_name": "home city", "observation": "Alex lives in Oslo.",
            "scope": "workspace"}], "updates": [], "deletes": []})
        .to_string(),
    ));
    let work = sandbox.json(&["work", "--once", "--jobs", "process", "--json"]);
    let report = &work["runs"][0]["report"];
    assert_eq!(report["model_fallback"], Value::Null, "{work}");
    assert_eq!((report["claimed"].as_u64(), report["by_model"].as_u64()), (Some(1), Some(1)), "{work}");
    assert_eq!(report["memories"]["added"], 1, "{work}");
    assert_eq!(
        (work["llm"]["tasks"]["classify"]["calls"].as_u64(), work["llm"]["tasks"]["extract"]["calls"].as_u64()),
        (Some(1), Some(1)),
        "the process's usage is reported: {work}"
    );
    let drawer = sandbox.json(&["get", &id, "--json"]);
    assert_eq!(
        (drawer["pipeline_tier"].as_str(), drawer["hall"].as_str(), drawer["summary"].as_str()),
        (Some("llm"), Some("identity"), Some("Alex lives in Oslo.")),
        "{drawer}"
    );
    let asked = server.requests();
    assert_eq!(asked[0].body["model"], "small-model");
    assert_eq!(asked[0].body["response_format"]["json_schema"]["name"], "classification");
    assert_eq!(asked[1].body["model"], "big-model", "extraction has its own model");
    assert!(asked[1].body["messages"][1]["content"].as_str().unwrap().contains("user: Alex here. I live in Oslo."));
    let memories = sandbox.json(&["memories", "--json"]);
    assert_eq!(memories["memories"][0]["observation"], "Alex lives in Oslo.", "{memories}");
    let facts = sandbox.json(&["kg", "query", "Alex", "--json"]);
    assert!(facts.to_string().contains("lives_in"), "the model's fact, its predicate in snake_case: {facts}");

    // An unreadable answer: the drawer is classified heuristically, and the run says why.
    let other =
        sandbox.ok(&["add", "--wing", "chat", "--room", "talk", "--", "The deploy script lives in tools/deploy.sh."]);
    server.push(Reply::openai("Sorry, I can't help with that."));
    let work = sandbox.json(&["work", "--once", "--jobs", "process", "--json"]);
    let report = &work["runs"][0]["report"];
    assert!(report["model_fallback"].as_str().unwrap_or_default().contains("not the JSON"), "{work}");
    let drawer = sandbox.json(&["get", other.trim(), "--json"]);
    assert_eq!(drawer["pipeline_tier"], "heuristic");
    assert_eq!(drawer["state"], "processed", "a model failure never leaves the drawer unprocessed");
}

on_both!(
    extract_and_list_with_the_rules,
    work_with_a_model_classifies_extracts_and_falls_back_when_the_answer_is_unreadable
);

/// `bench extract` scores an extractor on a labelled set through the
/// engine's decision: the rules here, and a model through the scripted
/// server (its answers count as they are checked).
#[cfg(feature = "bench")]
#[test]
fn bench_extract_scores_the_rules_and_a_model() {
    let set = mempalace_testdata::repo_root().join("crates/core/tests/data/memory_extraction.json");
    let set = set.display().to_string();
    let sandbox = Sandbox::new();
    let rules = sandbox.json(&["bench", "extract", "--set", &set, "--rules"]);
    assert_eq!((rules["extractor"].as_str(), rules["cases"].as_u64()), (Some("rules"), Some(40)));
    assert_eq!(rules["overall"]["precision"], 1.0, "the dev set the rules were tuned on: {rules}");

    let server = ScriptedServer::start();
    // The first case (repo-uses-pnpm) expects one workspace memory holding "pnpm".
    server.push(Reply::openai(
        &json!({"new": [{"entity_type": "fact", "entity_name": "package manager",
            "observation": "This repo uses pnpm.", "scope": "workspace"}], "updates": [], "deletes": []})
        .to_string(),
    ));
    server.push(Reply::openai("not json at all"));
    let model = sandbox
        .cmd(&["bench", "extract", "--set", &set, "--limit", "2"])
        .env("MEMPALACE_LLM_BASE_URL", format!("{}/v1", server.url()))
        .env("MEMPALACE_LLM_MODEL", "small-model")
        .output()
        .unwrap();
    assert!(model.status.success(), "{}", text(&model.stderr));
    let model: Value = serde_json::from_slice(&model.stdout).unwrap();
    assert_eq!(model["extractor"], "small-model");
    assert_eq!(model["overall"]["tp"], 1, "{model}");
    assert_eq!(model["model_errors"], 1, "the unreadable answer is a failed case, not the rules' answer: {model}");
    let no_model = sandbox.run(&["bench", "extract", "--set", &set]);
    assert_eq!(no_model.status.code(), Some(2), "without a model and without --rules there is nothing to score");
}
