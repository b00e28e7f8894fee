//! Cleaning a search query an agent wrote.
//!
//! Agents sometimes paste their whole prompt, system reminders included,
//! into the query; embedding that finds nothing useful. Short queries pass
//! through. A long one is reduced, in order of preference, to its last
//! question, its last substantial line, or its tail (the MemPalace rule, so
//! both behave alike).

/// Longest query kept as it is.
pub const SAFE_QUERY_CHARS: usize = 200;
/// Longest cleaned query.
pub const MAX_QUERY_CHARS: usize = 250;
/// Shortest useful candidate.
const MIN_CANDIDATE_CHARS: usize = 10;

/// How a query was cleaned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Short enough: unchanged (only trimmed).
    Passthrough,
    /// The last question in the text.
    QuestionExtraction,
    /// The last line of at least ten characters.
    TailSentence,
    /// The last 250 characters.
    TailTruncation,
}

impl Method {
    /// The name MemPalace reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passthrough => "passthrough",
            Self::QuestionExtraction => "question_extraction",
            Self::TailSentence => "tail_sentence",
            Self::TailTruncation => "tail_truncation",
        }
    }
}

/// A cleaned query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sanitized {
    /// The query to search with.
    pub clean: String,
    /// How it was obtained.
    pub method: Method,
    /// Characters before cleaning (after trimming).
    pub original_chars: usize,
}

impl Sanitized {
    /// Whether the query was changed beyond trimming.
    pub fn changed(&self) -> bool {
        self.method != Method::Passthrough
    }
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

fn tail(text: &str, n: usize) -> String {
    let count = chars(text);
    text.chars().skip(count.saturating_sub(n)).collect::<String>().trim().to_string()
}

fn strip_quotes(text: &str) -> &str {
    let mut text = text.trim();
    loop {
        let stripped =
            ['"', '\''].iter().find_map(|q| text.strip_prefix(*q).and_then(|t| t.strip_suffix(*q))).map(str::trim);
        match stripped {
            Some(inner) if !inner.is_empty() => text = inner,
            _ => break,
        }
    }
    text.trim_start_matches(['"', '\'']).trim_end_matches(['"', '\'']).trim()
}

fn is_sentence_end(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | '。' | '！' | '？' | '\n')
}

fn trim_candidate(candidate: &str) -> String {
    let candidate = strip_quotes(candidate);
    if chars(candidate) <= MAX_QUERY_CHARS {
        return candidate.to_string();
    }
    candidate
        .split(is_sentence_end)
        .map(strip_quotes)
        .rev()
        .find(|s| (MIN_CANDIDATE_CHARS..=MAX_QUERY_CHARS).contains(&chars(s)))
        .map_or_else(|| tail(candidate, MAX_QUERY_CHARS), str::to_string)
}

/// Cleans a query (see the module documentation).
pub fn sanitize_query(query: &str) -> Sanitized {
    let q = query.trim();
    let original_chars = chars(q);
    if original_chars <= SAFE_QUERY_CHARS {
        return Sanitized { clean: q.to_string(), method: Method::Passthrough, original_chars };
    }
    let lines: Vec<&str> = q.split('\n').map(str::trim).filter(|l| !l.is_empty()).collect();
    let ends_in_question = |line: &str| {
        let line = line.trim_end().trim_end_matches(['"', '\'']).trim_end();
        line.ends_with('?') || line.ends_with('？')
    };
    let question = lines.iter().rev().find(|l| ends_in_question(l)).map(|l| l.to_string()).or_else(|| {
        q.split(['.', '!', '。', '！', '\n'])
            .rev()
            .find(|s| s.contains('?') || s.contains('？'))
            .map(|s| s.trim().to_string())
    });
    if let Some(question) = question.filter(|q| chars(q) >= MIN_CANDIDATE_CHARS) {
        let clean = if chars(&question) > MAX_QUERY_CHARS { trim_candidate(&question) } else { question };
        return Sanitized { clean, method: Method::QuestionExtraction, original_chars };
    }
    for line in lines.iter().rev().filter(|l| chars(l) >= MIN_CANDIDATE_CHARS) {
        let candidate = trim_candidate(line);
        if chars(&candidate) >= MIN_CANDIDATE_CHARS {
            return Sanitized { clean: candidate, method: Method::TailSentence, original_chars };
        }
    }
    Sanitized { clean: tail(q, MAX_QUERY_CHARS), method: Method::TailTruncation, original_chars }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_queries_pass_through_trimmed() {
        let s = sanitize_query("  why did the deploy fail?  ");
        assert_eq!((s.clean.as_str(), s.method), ("why did the deploy fail?", Method::Passthrough));
    }

    #[test]
    fn a_pasted_prompt_becomes_its_last_question() {
        let prompt = format!(
            "{}\nSome context line that is long enough.\nWhat database did we pick for the backend?\nthanks",
            "<system-reminder>".repeat(20)
        );
        let s = sanitize_query(&prompt);
        assert_eq!(s.method, Method::QuestionExtraction);
        assert_eq!(s.clean, "What database did we pick for the backend?");
        assert!(s.changed());
    }

    #[test]
    fn without_a_question_the_last_line_or_tail_is_used() {
        let text = format!("{}\nthe migration to postgres finished yesterday", "x ".repeat(150));
        let s = sanitize_query(&text);
        assert_eq!(
            (s.clean.as_str(), s.method),
            ("the migration to postgres finished yesterday", Method::TailSentence)
        );
        let blob = "y".repeat(600);
        let s = sanitize_query(&blob);
        assert_eq!(s.method, Method::TailSentence);
        assert_eq!(s.clean.chars().count(), MAX_QUERY_CHARS);
        let short_lines = "ab\n".repeat(120);
        assert_eq!(sanitize_query(&short_lines).method, Method::TailTruncation);
    }

    proptest::proptest! {
        #[test]
        fn any_query_cleans_within_bounds(text in "\\PC{0,600}") {
            let s = sanitize_query(&text);
            proptest::prop_assert!(s.clean.chars().count() <= MAX_QUERY_CHARS.max(SAFE_QUERY_CHARS));
        }
    }
}
