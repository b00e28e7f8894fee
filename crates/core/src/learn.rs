//! robotmem's `learn` path for short insights (seed 1 "Auto-Classification
//! Pipeline"): category, confidence estimate, scope (files and entities) and
//! tags from the nine-dimension taxonomy. All regex, sub-millisecond, no LLM.

use std::sync::OnceLock;

use regex::{Regex, RegexBuilder};

/// The tag taxonomy: nine dimensions, each a root with its children
/// (seed 1 "Tag Taxonomy"; `parent = None` for the roots).
pub const TAXONOMY: &[(&str, &[&str])] = &[
    (
        "metacognition",
        &["reasoning", "cognitive_bias", "decision_framework", "mental_model", "assumption", "uncertainty"],
    ),
    (
        "capability",
        &[
            "build",
            "debug",
            "design",
            "review",
            "architecture",
            "testing",
            "deployment",
            "refactor",
            "performance",
            "security",
        ],
    ),
    ("domain", &["cs_fundamentals", "ai_ml", "finance", "robotics", "web", "data", "devops", "hardware"]),
    ("technique", &["patterns", "anti_patterns", "recipes", "workflow", "tooling", "configuration"]),
    ("timing", &["when_to_start", "when_to_stop", "when_to_switch"]),
    ("boundary", &["tradeoff", "constraint", "not_applicable", "limitation", "risk"]),
    ("experience", &["war_story", "postmortem", "gotcha", "root_cause", "lesson", "observation"]),
    ("self_defect", &["hallucination", "sycophancy", "overengineering", "laziness", "overconfidence"]),
    ("reflection", &["accuracy_calibration", "behavior_rule", "preference", "feedback", "improvement"]),
];

/// The parent dimension of a tag, `Some("")` for a root, `None` for a tag
/// outside the taxonomy.
pub fn tag_parent(tag: &str) -> Option<&'static str> {
    for (root, children) in TAXONOMY {
        if *root == tag {
            return Some("");
        }
        if children.contains(&tag) {
            return Some(root);
        }
    }
    None
}

/// Categories in priority order (the first rule that matches wins), each
/// with its markers. `observation` is the fallback.
const CATEGORY_RULES: &[(&str, &str)] = &[
    ("postmortem", r"\b(post-?mortem|incident|outage|what went wrong|lessons? learned)\b"),
    ("gotcha", r"\b(gotcha|watch out|careful|beware|pitfall|caveat|surprisingly|unexpectedly|note to self|trap)\b"),
    (
        "constraint",
        r"\b(must not|must never|never|cannot|can't|do not exceed|at most|at least|maximum|minimum|limit(ed)? to|required|only works)\b",
    ),
    ("root_cause", r"\b(because|due to|caused by|root cause|the reason|as a result|since the)\b"),
    ("decision", r"\b(decided|chose|choose|going with|instead of|switch(ed)? to|opted)\b"),
    ("preference", r"\b(prefer|prefers|preferred|rather|favou?rite|likes?)\b"),
    ("procedure", r"(\bfirst\b.*\bthen\b|\bstep \d|\bhow to\b|\brun `|\bto do this\b)"),
];

/// Tags inferred from keywords, besides the category's own tag.
const TAG_RULES: &[(&str, &str)] = &[
    ("debug", r"\b(debug|bug|error|fix(ed)?|traceback|crash)\b"),
    ("testing", r"\b(test|tests|testing|assert|coverage)\b"),
    ("deployment", r"\b(deploy|deployed|release|rollout|production)\b"),
    ("performance", r"\b(latency|throughput|slow|fast|performance|ms\b|memory usage)"),
    ("security", r"\b(security|auth|token|secret|password|vulnerab)"),
    ("architecture", r"\b(architecture|design|module|layer|interface)\b"),
    ("robotics", r"\b(robot|gripper|grasp|sensor|actuator|joint|lidar|arm|torque)\b"),
    ("ai_ml", r"\b(model|llm|embedding|training|inference|neural)\b"),
    ("tradeoff", r"\b(trade-?off|at the cost of|versus|vs\.?)\b"),
    ("configuration", r"\b(config|configuration|setting|flag|env var|parameter)\b|\w+=\S+"),
    ("uncertainty", r"\b(maybe|might|probably|not sure|perhaps|i think|unclear)\b"),
    ("lesson", r"\b(lesson|learned|takeaway|next time)\b"),
];

fn regex(pattern: &str) -> Regex {
    RegexBuilder::new(pattern)
        .case_insensitive(true)
        .build()
        .unwrap_or_else(|error| panic!("built-in pattern {pattern:?} must compile: {error}"))
}

struct Rules {
    categories: Vec<(&'static str, Regex)>,
    tags: Vec<(&'static str, Regex)>,
    causal: Regex,
    specific: Regex,
    hedge: Regex,
    file: Regex,
    entity: Regex,
}

fn rules() -> &'static Rules {
    static RULES: OnceLock<Rules> = OnceLock::new();
    RULES.get_or_init(|| Rules {
        categories: CATEGORY_RULES.iter().map(|(name, pattern)| (*name, regex(pattern))).collect(),
        tags: TAG_RULES.iter().map(|(name, pattern)| (*name, regex(pattern))).collect(),
        causal: regex(r"\b(because|due to|caused by|so that|therefore|as a result|since)\b"),
        specific: regex(r"\d+(\.\d+)?\s?[a-zA-Z%]{1,4}\b|\b\w+=\S+|`[^`]+`"),
        hedge: regex(r"\b(maybe|might|probably|not sure|perhaps|i think|i guess|possibly)\b"),
        file: regex(r"(?:\.{0,2}/)?(?:[\w.-]+/)+[\w.-]+\.[a-zA-Z0-9]{1,6}\b|\b[\w-]+\.(?:rs|py|go|ts|tsx|js|jsx|md|toml|yaml|yml|json|sh|c|h|cpp|hpp|java|kt|sql|txt|cfg|ini)\b"),
        // Case matters here (camelCase), so this one is not case-insensitive.
        entity: Regex::new(
            r"`([^`]{1,60})`|\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b|\b([a-z]+[A-Z][A-Za-z0-9]*)\b|\b([A-Za-z_][\w.]*)\s*=",
        )
        .expect("built-in entity pattern compiles"),
    })
}

/// What `learn` infers from an insight.
#[derive(Debug, Clone, PartialEq)]
pub struct Insight {
    /// Category (robotmem): postmortem, gotcha, constraint, root_cause,
    /// decision, preference, procedure or observation.
    pub category: &'static str,
    /// Estimated confidence, 0.3–0.95.
    pub confidence: f64,
    /// File paths mentioned.
    pub scope_files: Vec<String>,
    /// Identifiers mentioned (snake_case, camelCase, `code`, `name=`).
    pub scope_entities: Vec<String>,
    /// Tags from the taxonomy, sorted, the category's own first.
    pub tags: Vec<String>,
}

/// Base confidence of an explicitly taught insight.
pub const BASE_CONFIDENCE: f64 = 0.8;

/// Classifies an insight.
pub fn analyze(text: &str) -> Insight {
    let rules = rules();
    let category =
        rules.categories.iter().find(|(_, pattern)| pattern.is_match(text)).map_or("observation", |(name, _)| *name);

    let scope_files: Vec<String> = dedup(rules.file.find_iter(text).map(|m| m.as_str().to_string()));
    let scope_entities: Vec<String> =
        dedup(rules.entity.captures_iter(text).filter_map(|captures| {
            (1..=4).find_map(|group| captures.get(group)).map(|m| m.as_str().trim().to_string())
        }))
        .into_iter()
        .filter(|entity| !scope_files.iter().any(|file| file.contains(entity.as_str())) && !entity.is_empty())
        .collect();

    let mut confidence = BASE_CONFIDENCE;
    if !scope_files.is_empty() || rules.specific.is_match(text) {
        confidence += 0.05;
    }
    if rules.causal.is_match(text) {
        confidence += 0.05;
    }
    if rules.hedge.is_match(text) {
        confidence -= 0.15;
    }
    let confidence = confidence.clamp(0.3, 0.95);

    let mut tags = vec![category_tag(category).to_string()];
    let mut extra: Vec<String> = rules
        .tags
        .iter()
        .filter(|(_, pattern)| pattern.is_match(text))
        .map(|(name, _)| name.to_string())
        .filter(|tag| !tags.contains(tag))
        .collect();
    extra.sort();
    tags.extend(extra);
    Insight { category, confidence, scope_files, scope_entities, tags }
}

/// The taxonomy tag a category files under.
pub fn category_tag(category: &str) -> &'static str {
    match category {
        "postmortem" => "postmortem",
        "gotcha" => "gotcha",
        "constraint" => "constraint",
        "root_cause" => "root_cause",
        "decision" => "decision_framework",
        "preference" => "preference",
        "procedure" => "recipes",
        _ => "observation",
    }
}

fn dedup(items: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for item in items {
        if !out.contains(&item) {
            out.push(item);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_example() {
        let insight = analyze("grip_force=12.5N works best because sensor was calibrated");
        assert_eq!(insight.category, "root_cause");
        assert!((insight.confidence - 0.90).abs() < 1e-9, "{}", insight.confidence);
        assert_eq!(insight.scope_entities, vec!["grip_force"]);
        assert!(insight.scope_files.is_empty());
        assert_eq!(insight.tags[0], "root_cause");
    }

    #[test]
    fn categories_files_and_hedges() {
        let gotcha = analyze("Watch out: src/store/sqlite.rs holds the write lock across the whole import");
        assert_eq!(gotcha.category, "gotcha");
        assert_eq!(gotcha.scope_files, vec!["src/store/sqlite.rs"]);
        let hedged = analyze("maybe the robot arm overheats in the afternoon");
        assert_eq!(hedged.category, "observation");
        assert!(hedged.confidence < BASE_CONFIDENCE);
        assert!(hedged.tags.contains(&"robotics".to_string()) && hedged.tags.contains(&"uncertainty".to_string()));
        assert_eq!(analyze("Never exceed 20 N on the gripper").category, "constraint");
        assert_eq!(analyze("Postmortem: the outage came from a full disk").category, "postmortem");
        assert_eq!(analyze("We decided to use `maxRetries` of 3").scope_entities, vec!["maxRetries"]);
    }

    #[test]
    fn every_produced_tag_is_in_the_taxonomy() {
        for text in [
            "debug the deploy config",
            "first build then test",
            "model inference is slow",
            "a trade-off",
            "we decided to go with rust",
            "I prefer tabs",
        ] {
            for tag in analyze(text).tags {
                assert!(tag_parent(&tag).is_some(), "{tag} is not in the taxonomy");
            }
        }
        let tag_count: usize = TAXONOMY.iter().map(|(_, children)| children.len()).sum();
        assert_eq!(TAXONOMY.len(), 9);
        assert!(tag_count >= 50);
    }
}
