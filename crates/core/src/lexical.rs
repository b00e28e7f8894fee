//! Text preparation for the lexical (BM25) index, shared by every backend.
//!
//! SQLite's `unicode61` tokenizer and PostgreSQL's `simple` parser split on
//! spaces and punctuation, so a run of Chinese characters would become one
//! giant token and a two-character word inside it could never match. We
//! segment CJK runs with jieba before the text reaches the index: documents
//! in search mode (every dictionary word and its sub-words, for recall),
//! queries in precise mode. Non-CJK text passes through untouched, and the
//! jieba dictionary is only loaded the first time CJK text is seen.
//!
//! Turning the prepared text into an FTS5 or tsquery expression is the
//! backend's job; this module only decides what the words are.

use std::borrow::Cow;
use std::sync::OnceLock;

use jieba_rs::Jieba;

fn jieba() -> &'static Jieba {
    static JIEBA: OnceLock<Jieba> = OnceLock::new();
    JIEBA.get_or_init(Jieba::new)
}

/// Whether a character belongs to a script written without spaces between
/// words (Han ideographs, kana, Hangul syllables are included so mixed text
/// is split at script changes).
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF      // Hiragana, Katakana
        | 0x3400..=0x4DBF    // CJK Extension A
        | 0x4E00..=0x9FFF    // CJK Unified Ideographs
        | 0xAC00..=0xD7AF    // Hangul syllables
        | 0xF900..=0xFAFF    // CJK Compatibility Ideographs
        | 0x20000..=0x2FA1F  // Extensions B–F, compatibility supplement
    )
}

fn has_cjk(text: &str) -> bool {
    text.chars().any(is_cjk)
}

/// How a CJK run is segmented.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Every dictionary word and its sub-words (documents).
    Search,
    /// The single best segmentation (queries).
    Precise,
}

fn segment(text: &str, mode: Mode) -> Cow<'_, str> {
    if !has_cjk(text) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() * 2);
    let mut rest = text;
    while !rest.is_empty() {
        let cjk_start = rest.find(is_cjk).unwrap_or(rest.len());
        out.push_str(&rest[..cjk_start]);
        rest = &rest[cjk_start..];
        if rest.is_empty() {
            break;
        }
        let cjk_end = rest.find(|c: char| !is_cjk(c)).unwrap_or(rest.len());
        let run = &rest[..cjk_end];
        let tokens = match mode {
            Mode::Search => jieba().cut_for_search(run, true),
            Mode::Precise => jieba().cut(run, true),
        };
        out.push(' ');
        for token in tokens {
            out.push_str(token.word);
            out.push(' ');
        }
        rest = &rest[cjk_end..];
    }
    Cow::Owned(out)
}

/// The text to put in the lexical index for a document.
pub fn index_text(text: &str) -> Cow<'_, str> {
    segment(text, Mode::Search)
}

/// The words of a query, lowercased, without punctuation: what a backend
/// turns into its own query syntax (an OR of quoted terms for FTS5).
pub fn query_terms(query: &str) -> Vec<String> {
    let segmented = segment(query, Mode::Precise);
    let mut terms: Vec<String> = Vec::new();
    for word in segmented.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
        if word.is_empty() {
            continue;
        }
        let word = word.to_lowercase();
        if !terms.contains(&word) {
            terms.push(word);
        }
    }
    terms
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin_text_passes_through_without_copying() {
        assert!(matches!(index_text("plain English text"), Cow::Borrowed(_)));
    }

    #[test]
    fn chinese_runs_are_split_into_words() {
        let indexed = index_text("我们决定使用数据库");
        let words: Vec<&str> = indexed.split_whitespace().collect();
        assert!(words.contains(&"数据库"), "{words:?}");
        assert!(words.contains(&"决定"), "{words:?}");
        // Search mode also offers the sub-word, so a query for it matches.
        assert!(words.contains(&"数据"), "{words:?}");
    }

    #[test]
    fn query_terms_use_precise_segmentation_and_dedup() {
        let terms = query_terms("使用 数据库? Postgres postgres!");
        assert_eq!(terms, vec!["使用", "数据库", "postgres"]);
    }

    #[test]
    fn mixed_script_text_keeps_latin_words_intact() {
        let indexed = index_text("部署到Kubernetes集群");
        let words: Vec<&str> = indexed.split_whitespace().collect();
        assert!(words.contains(&"Kubernetes"), "{words:?}");
        assert!(words.contains(&"集群"), "{words:?}");
    }
}
