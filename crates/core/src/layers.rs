//! Rendering of the 4-layer retrieval stack within its character budgets
//! (seed 0 §5, constants of §10), and the auto-injector's section and
//! trivial-message filter (seed 2).
//!
//! Inputs are already chosen (top drawers, search hits); this module only
//! decides how much of them fits and how it reads. Budgets count characters
//! (about four per token).

/// L0 budget: the identity is shown whole (never truncated).
pub const L0_BUDGET: usize = 400;
/// Drawers in the essential story.
pub const L1_MAX_DRAWERS: usize = 15;
/// Snippet length in L1.
pub const L1_SNIPPET: usize = 200;
/// L1 budget.
pub const L1_BUDGET: usize = 2_000;
/// Marker appended when L1 is cut.
pub const L1_TRUNCATION_MARKER: &str = "... (more in L3 search)";
/// Drawers in an L2 recall.
pub const L2_MAX_DRAWERS: usize = 10;
/// Snippet length in L2.
pub const L2_SNIPPET: usize = 300;
/// L2 budget.
pub const L2_BUDGET: usize = 1_200;
/// Default number of L3 search results.
pub const L3_DEFAULT_RESULTS: usize = 5;
/// Most L3 search results: the Python MemPalace's limit (its tools accept
/// 1–100), so an agent written for it is never refused; the 14,000-character
/// cap still bounds what comes back.
pub const L3_MAX_RESULTS: usize = 100;

/// How many results a search returns: 1 to [`L3_MAX_RESULTS`], default
/// [`L3_DEFAULT_RESULTS`]. Every surface (CLI, MCP, REST) parses its limit
/// into this one type, so they all accept and refuse the same numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResultLimit(usize);

impl ResultLimit {
    /// A limit; out of range is an error naming the range.
    pub fn new(value: i64) -> Result<Self, crate::ValidationError> {
        if value < 1 || value > L3_MAX_RESULTS as i64 {
            return Err(crate::ValidationError::OutOfRange {
                what: "limit",
                value: value as f64,
                min: 1.0,
                max: L3_MAX_RESULTS as f64,
            });
        }
        Ok(Self(value as usize))
    }

    /// A limit the code states itself (checked when compiled in a const
    /// context, else on use).
    pub const fn constant(value: usize) -> Self {
        assert!(value >= 1 && value <= L3_MAX_RESULTS, "a result limit is 1 to 100");
        Self(value)
    }

    /// The number.
    pub fn get(self) -> usize {
        self.0
    }
}

impl Default for ResultLimit {
    fn default() -> Self {
        Self(L3_DEFAULT_RESULTS)
    }
}
/// Hard cap on the characters of L3 output.
pub const L3_BUDGET: usize = 14_000;
/// Auto-injection budget in tokens (seed 2 `auto_inject_max_tokens`).
pub const INJECT_MAX_TOKENS: usize = 200;
/// Auto-injection relevance threshold (seed 2 `auto_inject_threshold`).
pub const INJECT_THRESHOLD: f64 = 0.3;
/// Characters per token for budgets.
pub const CHARS_PER_TOKEN: usize = 4;

/// A drawer as the layers show it.
#[derive(Debug, Clone, PartialEq)]
pub struct Snippet<'a> {
    /// Wing.
    pub wing: &'a str,
    /// Room.
    pub room: &'a str,
    /// Full text.
    pub text: &'a str,
    /// Source file, shown by its last path component.
    pub source: Option<&'a str>,
}

/// Whitespace collapsed and cut at a word boundary to at most `max`
/// characters, with "…" when cut.
pub fn snippet(text: &str, max: usize) -> String {
    let collapsed: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= max {
        return collapsed;
    }
    let cut: String = collapsed.chars().take(max.saturating_sub(1)).collect();
    let cut = match cut.rfind(' ') {
        Some(space) if space > cut.len() / 2 => cut[..space].to_string(),
        _ => cut,
    };
    format!("{cut}…")
}

fn source_name(source: Option<&str>) -> Option<&str> {
    let source = source?.trim_end_matches('/');
    let name = source.rsplit(['/', '\\']).next().unwrap_or(source);
    (!name.is_empty()).then_some(name)
}

/// L0: the identity, whole, or a pointer to how to set one.
pub fn render_l0(identity: Option<&str>) -> String {
    match identity {
        Some(text) => format!("## L0 — IDENTITY\n{text}"),
        None => {
            "## L0 — IDENTITY\nNo identity configured. Set one with `mempalace identity set \"I am …\"`.".to_string()
        }
    }
}

/// L1: the top drawers grouped by room (rooms alphabetically), 200-char
/// snippets, cut at the 2,000-character budget with the truncation marker.
pub fn render_l1(drawers: &[Snippet<'_>]) -> String {
    if drawers.is_empty() {
        return "## L1 — No memories yet.".to_string();
    }
    let mut order: Vec<usize> = (0..drawers.len().min(L1_MAX_DRAWERS)).collect();
    // Stable: within a room, the caller's (importance) order is kept.
    order.sort_by(|&a, &b| drawers[a].room.cmp(drawers[b].room));
    let mut out = String::from("## L1 — ESSENTIAL STORY");
    let mut current_room: Option<&str> = None;
    for index in order {
        let drawer = &drawers[index];
        let mut piece = String::new();
        if current_room != Some(drawer.room) {
            piece.push_str(&format!("\n\n[{}]", drawer.room));
        }
        piece.push_str(&format!("\n  - {}", snippet(drawer.text, L1_SNIPPET)));
        if let Some(name) = source_name(drawer.source) {
            piece.push_str(&format!("  ({name})"));
        }
        if out.chars().count() + piece.chars().count() > L1_BUDGET - L1_TRUNCATION_MARKER.len() - 1 {
            out.push('\n');
            out.push_str(L1_TRUNCATION_MARKER);
            return out;
        }
        current_room = Some(drawer.room);
        out.push_str(&piece);
    }
    out
}

/// L2: drawers of one wing (and room), 300-char snippets, within 1,200 characters.
pub fn render_l2(wing: &str, room: Option<&str>, drawers: &[Snippet<'_>]) -> String {
    let place = match room {
        Some(room) => format!("{wing}/{room}"),
        None => wing.to_string(),
    };
    let mut out = format!("## L2 — {place}");
    if drawers.is_empty() {
        out.push_str("\nNo drawers here.");
        return out;
    }
    for drawer in drawers.iter().take(L2_MAX_DRAWERS) {
        let mut piece = format!("\n  - [{}] {}", drawer.room, snippet(drawer.text, L2_SNIPPET));
        if let Some(name) = source_name(drawer.source) {
            piece.push_str(&format!("  ({name})"));
        }
        if out.chars().count() + piece.chars().count() > L2_BUDGET {
            break;
        }
        out.push_str(&piece);
    }
    out
}

/// How many results (of the given text lengths, best first) fit the L3
/// cap; at least one when there is any.
pub fn l3_fit(lengths: &[usize]) -> usize {
    let mut used = 0;
    for (index, length) in lengths.iter().enumerate() {
        if used + length > L3_BUDGET && index > 0 {
            return index;
        }
        used += length;
    }
    lengths.len()
}

/// Words that carry no topic (greetings, pronouns, fillers, auxiliaries).
const STOPWORDS: &[&str] = &[
    "a", "an", "the", "and", "or", "but", "so", "if", "of", "to", "in", "on", "at", "by", "for", "with", "from", "is",
    "are", "was", "were", "be", "been", "am", "do", "does", "did", "have", "has", "had", "it", "its", "this", "that",
    "these", "those", "i", "me", "my", "we", "us", "our", "you", "your", "he", "she", "they", "them", "hi", "hello",
    "hey", "thanks", "thank", "ok", "okay", "yes", "no", "yeah", "sure", "please", "just", "well", "what", "how",
    "why", "when", "where", "who", "can", "could", "would", "should", "will", "let", "lets", "good", "great", "nice",
    "cool", "morning", "evening", "bye", "lol", "right", "got", "know", "think",
];

/// Whether a lowercase word is a stopword (carries no topic).
pub fn is_stopword(word: &str) -> bool {
    STOPWORDS.contains(&word)
}

/// Seed 2 trivial filter: fewer than three meaningful words once stopwords
/// are removed. Trivial messages skip the memory lookup.
pub fn is_trivial(message: &str) -> bool {
    let meaningful = message
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|word| !word.is_empty())
        .filter(|word| !STOPWORDS.contains(&word.to_lowercase().as_str()))
        .count();
    meaningful < 3
}

/// The injected memory section: relevant memories (score ≥ threshold,
/// best first) as bullet lines within `max_tokens`; `None` when nothing
/// qualifies.
pub fn render_injection(memories: &[(&str, f64)], threshold: f64, max_tokens: usize) -> Option<String> {
    let budget = max_tokens * CHARS_PER_TOKEN;
    let header = "## Relevant memories";
    let mut out = String::from(header);
    for (text, score) in memories {
        if *score < threshold {
            continue;
        }
        let room_left = budget.saturating_sub(out.chars().count() + 3);
        if room_left < 40 {
            break;
        }
        out.push_str("\n- ");
        out.push_str(&snippet(text, room_left.min(L1_SNIPPET)));
    }
    (out.len() > header.len()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drawer<'a>(room: &'a str, text: &'a str) -> Snippet<'a> {
        Snippet { wing: "w", room, text, source: Some("/notes/gripper.md") }
    }

    #[test]
    fn snippets_are_cut_at_words_with_an_ellipsis() {
        assert_eq!(snippet("short   text\n here", 50), "short text here");
        let cut = snippet(&"word ".repeat(100), 50);
        assert!(cut.chars().count() <= 50 && cut.ends_with('…') && !cut.contains("wor…"), "{cut}");
    }

    #[test]
    fn l1_groups_by_room_alphabetically_and_respects_its_budget() {
        let drawers = [drawer("zeta", "last room"), drawer("alpha", "first room"), drawer("alpha", "second alpha")];
        let text = render_l1(&drawers);
        let alpha = text.find("[alpha]").unwrap();
        let zeta = text.find("[zeta]").unwrap();
        assert!(alpha < zeta, "{text}");
        assert!(text.find("first room").unwrap() < text.find("second alpha").unwrap(), "importance order kept");
        assert!(text.contains("(gripper.md)"));
        assert_eq!(text.matches("[alpha]").count(), 1);

        let long = "x ".repeat(300);
        let many: Vec<Snippet<'_>> = (0..15).map(|_| drawer("room", &long)).collect();
        let cut = render_l1(&many);
        assert!(cut.chars().count() <= L1_BUDGET, "{}", cut.chars().count());
        assert!(cut.ends_with(L1_TRUNCATION_MARKER));
        assert_eq!(render_l1(&[]), "## L1 — No memories yet.");
    }

    #[test]
    fn l2_fits_its_budget_and_l3_its_cap() {
        let long = "y ".repeat(300);
        let many: Vec<Snippet<'_>> = (0..10).map(|_| drawer("r", &long)).collect();
        let text = render_l2("w", Some("r"), &many);
        assert!(text.chars().count() <= L2_BUDGET);
        assert!(text.starts_with("## L2 — w/r"));
        assert_eq!(l3_fit(&[5_000, 5_000, 5_000]), 2);
        assert_eq!(l3_fit(&[20_000, 10]), 1, "one result always fits");
        assert_eq!(l3_fit(&[]), 0);
    }

    #[test]
    fn trivial_messages_and_injection() {
        assert!(is_trivial("hi there, thanks!"));
        assert!(is_trivial("ok"));
        assert!(!is_trivial("What database did we choose for the backend?"));
        let section = render_injection(
            &[("We chose PostgreSQL.", 0.9), ("irrelevant", 0.1)],
            INJECT_THRESHOLD,
            INJECT_MAX_TOKENS,
        )
        .unwrap();
        assert!(section.contains("PostgreSQL") && !section.contains("irrelevant"));
        assert!(render_injection(&[("x", 0.2)], INJECT_THRESHOLD, INJECT_MAX_TOKENS).is_none());
        let long: Vec<(&str, f64)> = (0..50).map(|_| ("a memory of moderate length about things", 0.9)).collect();
        let full = render_injection(&long, INJECT_THRESHOLD, INJECT_MAX_TOKENS).unwrap();
        assert!(full.chars().count() <= INJECT_MAX_TOKENS * CHARS_PER_TOKEN);
    }
}
