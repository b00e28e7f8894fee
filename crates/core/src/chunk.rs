//! Splitting long text into drawer-sized chunks (seed 0 §3 step 2,
//! constants of seed 0 §10).
//!
//! Text of at most [`CHUNK_SIZE`] characters is one chunk. Longer text is cut
//! at sentence boundaries into chunks of at most `CHUNK_SIZE` characters;
//! each chunk after the first starts with about [`CHUNK_OVERLAP`] characters
//! of the previous one (whole sentences when they fit, else whole words), so
//! a fact that straddles a cut is still found. A single sentence longer than
//! a chunk is cut at word boundaries. Sizes count characters, not bytes.
//!
//! The miners' line-aware chunker (paragraph and line boundaries, line
//! numbers) is a different rule and lives with them.

/// Longest chunk, in characters (seed 0 §10 `AutoIngestChunkSize`).
pub const CHUNK_SIZE: usize = 800;
/// Characters repeated from the previous chunk (seed 0 §10 `AutoIngestChunkOverlap`).
pub const CHUNK_OVERLAP: usize = 100;

fn char_len(text: &str) -> usize {
    text.chars().count()
}

/// Splits text into sentences, keeping each sentence's trailing punctuation
/// and whitespace with it. Boundaries: `.`, `!`, `?` (and their CJK forms)
/// followed by whitespace or the end, and line breaks.
pub fn sentences(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((index, c)) = chars.next() {
        let terminal = matches!(c, '.' | '!' | '?' | '。' | '！' | '？' | '\n');
        if !terminal {
            continue;
        }
        let next = chars.peek().map(|&(_, next)| next);
        let cjk = matches!(c, '。' | '！' | '？');
        if c == '\n' || cjk || next.is_none_or(char::is_whitespace) {
            // Swallow the whitespace that follows, so it stays with this sentence.
            let mut end = index + c.len_utf8();
            while let Some(&(next_index, next_char)) = chars.peek() {
                if next_char.is_whitespace() {
                    end = next_index + next_char.len_utf8();
                    chars.next();
                } else {
                    break;
                }
            }
            out.push(&text[start..end]);
            start = end;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// Cuts `text` at word boundaries into pieces of at most `size` characters.
fn split_words(text: &str, size: usize) -> Vec<String> {
    let mut pieces = Vec::new();
    let mut current = String::new();
    for word in text.split_inclusive(char::is_whitespace) {
        if char_len(&current) + char_len(word) > size && !current.is_empty() {
            pieces.push(std::mem::take(&mut current));
        }
        if char_len(word) > size {
            // A "word" longer than a chunk (a URL, a base64 blob): hard cut.
            let chars: Vec<char> = word.chars().collect();
            for part in chars.chunks(size) {
                pieces.push(part.iter().collect());
            }
            continue;
        }
        current.push_str(word);
    }
    if !current.trim().is_empty() {
        pieces.push(current);
    }
    pieces
}

/// The tail of `chunk` to repeat at the start of the next one: whole
/// sentences totalling at most `overlap` characters, else the last words
/// that fit.
fn overlap_tail(chunk: &str, overlap: usize) -> String {
    let mut tail = String::new();
    for sentence in sentences(chunk).iter().rev() {
        if char_len(&tail) + char_len(sentence) > overlap {
            break;
        }
        tail.insert_str(0, sentence);
    }
    if !tail.is_empty() {
        return tail;
    }
    let mut words: Vec<&str> = Vec::new();
    let mut length = 0;
    for word in chunk.split_inclusive(char::is_whitespace).collect::<Vec<_>>().into_iter().rev() {
        if length + char_len(word) > overlap {
            break;
        }
        length += char_len(word);
        words.push(word);
    }
    words.into_iter().rev().collect()
}

/// Splits `text` into chunks of at most `size` characters with about
/// `overlap` characters of overlap (see the module rule).
pub fn chunk_text_with(text: &str, size: usize, overlap: usize) -> Vec<String> {
    if char_len(text) <= size {
        return vec![text.to_string()];
    }
    let mut units: Vec<String> = Vec::new();
    for sentence in sentences(text) {
        if char_len(sentence) > size - overlap.min(size / 2) {
            units.extend(split_words(sentence, size - overlap.min(size / 2)));
        } else {
            units.push(sentence.to_string());
        }
    }
    let mut chunks: Vec<String> = Vec::new();
    let mut current = String::new();
    for unit in units {
        // `current` always ends with new text here: a chunk is emitted just
        // before a unit is appended to its overlap tail.
        if char_len(&current) + char_len(&unit) > size && !current.is_empty() {
            let tail = overlap_tail(&current, overlap);
            chunks.push(std::mem::replace(&mut current, tail));
        }
        current.push_str(&unit);
    }
    if !current.trim().is_empty() {
        chunks.push(current);
    }
    chunks.into_iter().map(|chunk| chunk.trim().to_string()).filter(|chunk| !chunk.is_empty()).collect()
}

/// [`chunk_text_with`] with the seed's constants (800 / 100).
pub fn chunk_text(text: &str) -> Vec<String> {
    chunk_text_with(text, CHUNK_SIZE, CHUNK_OVERLAP)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn short_text_is_one_chunk_verbatim() {
        let text = "  A short memory with spacing.  ";
        assert_eq!(chunk_text(text), vec![text.to_string()]);
        let exactly = "x".repeat(CHUNK_SIZE);
        assert_eq!(chunk_text(&exactly).len(), 1);
    }

    #[test]
    fn sentences_keep_their_punctuation_and_break_on_cjk_and_newlines() {
        assert_eq!(sentences("One. Two! Three? Four"), vec!["One. ", "Two! ", "Three? ", "Four"]);
        assert_eq!(sentences("v1.2 is out. Yes"), vec!["v1.2 is out. ", "Yes"]);
        assert_eq!(sentences("第一句。第二句！"), vec!["第一句。", "第二句！"]);
        assert_eq!(sentences("line one\nline two"), vec!["line one\n", "line two"]);
    }

    #[test]
    fn long_text_splits_at_sentences_with_overlap() {
        let sentence = |i: usize| format!("Sentence number {i:02} talks about the gripper force calibration. ");
        let text: String = (0..40).map(sentence).collect();
        let chunks = chunk_text(&text);
        assert!(chunks.len() >= 4, "{}", chunks.len());
        for chunk in &chunks {
            assert!(char_len(chunk) <= CHUNK_SIZE, "{}", char_len(chunk));
            assert!(chunk.ends_with('.'), "cut at a sentence boundary: {chunk:?}");
        }
        for pair in chunks.windows(2) {
            // The next chunk starts with the last sentence of the previous one.
            let last_sentence = sentences(&pair[0]).last().unwrap().trim().to_string();
            assert!(pair[1].starts_with(&last_sentence), "overlap missing between {:?} and {:?}", pair[0], pair[1]);
            assert!(char_len(&last_sentence) <= CHUNK_OVERLAP);
        }
        // Every sentence survives somewhere.
        for i in 0..40 {
            assert!(chunks.iter().any(|c| c.contains(sentence(i).trim())), "sentence {i} lost");
        }
    }

    #[test]
    fn a_sentence_longer_than_a_chunk_is_cut_at_words() {
        let long = "word ".repeat(500);
        let chunks = chunk_text(&long);
        assert!(chunks.len() >= 3);
        assert!(chunks.iter().all(|c| char_len(c) <= CHUNK_SIZE && !c.starts_with(' ')));
        let blob = "z".repeat(2_000);
        assert!(chunk_text(&blob).iter().all(|c| char_len(c) <= CHUNK_SIZE));
    }

    proptest! {
        #[test]
        fn chunks_are_bounded_non_empty_and_cover_every_word(text in "[a-z .!?\n]{0,3000}") {
            let chunks = chunk_text(&text);
            if char_len(&text) > CHUNK_SIZE {
                for chunk in &chunks {
                    prop_assert!(char_len(chunk) <= CHUNK_SIZE);
                    prop_assert!(!chunk.trim().is_empty());
                }
                let joined = chunks.join(" ");
                for word in text.split_whitespace().filter(|w| w.len() < 40) {
                    prop_assert!(joined.contains(word), "{:?} lost", word);
                }
            }
        }
    }
}

/// Chunks shorter than this are dropped when they add no line of their own.
pub const MIN_CHUNK: usize = 50;

/// A piece of a document with the lines it spans (1-based, inclusive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineChunk {
    /// The text, verbatim.
    pub text: String,
    /// First line.
    pub line_start: u32,
    /// Last line.
    pub line_end: u32,
}

/// Cuts a document into chunks of at most [`CHUNK_SIZE`] characters at
/// paragraph boundaries, then line boundaries (a longer line is cut
/// hard); each chunk after the first starts with the last lines of the
/// one before, up to [`CHUNK_OVERLAP`] characters; a chunk shorter than
/// [`MIN_CHUNK`] is dropped only when all its lines are in other chunks.
pub fn chunk_lines(text: &str) -> Vec<LineChunk> {
    // Units: (line number, text) pieces no longer than CHUNK_SIZE.
    let mut units: Vec<(u32, String, bool)> = Vec::new(); // (line, text, paragraph break before)
    let mut blank_before = false;
    for (index, line) in text.lines().enumerate() {
        let number = index as u32 + 1;
        if line.trim().is_empty() {
            blank_before = true;
            continue;
        }
        let chars: Vec<char> = line.chars().collect();
        for (piece_index, piece) in chars.chunks(CHUNK_SIZE).enumerate() {
            units.push((number, piece.iter().collect(), blank_before && piece_index == 0));
        }
        blank_before = false;
    }
    let mut chunks: Vec<LineChunk> = Vec::new();
    let mut current: Vec<&(u32, String, bool)> = Vec::new();
    let size = |lines: &[&(u32, String, bool)]| lines.iter().map(|u| u.1.chars().count() + 1).sum::<usize>();
    let flush = |current: &[&(u32, String, bool)], chunks: &mut Vec<LineChunk>| {
        if let (Some(first), Some(last)) = (current.first(), current.last()) {
            chunks.push(LineChunk {
                text: current.iter().map(|u| u.1.as_str()).collect::<Vec<_>>().join("\n"),
                line_start: first.0,
                line_end: last.0,
            });
        }
    };
    let mut fresh = 0; // units in `current` that are not overlap
    for unit in &units {
        let would = size(&current) + unit.1.chars().count() + 1;
        // Prefer to end a chunk at a paragraph break once it is half full.
        let paragraph_end = unit.2 && size(&current) >= CHUNK_SIZE / 2;
        if fresh > 0 && (would > CHUNK_SIZE || paragraph_end) {
            flush(&current, &mut chunks);
            let mut overlap: Vec<&(u32, String, bool)> = Vec::new();
            for previous in current.iter().rev() {
                if size(&overlap) + previous.1.chars().count() + 1 > CHUNK_OVERLAP {
                    break;
                }
                overlap.insert(0, previous);
            }
            while !overlap.is_empty() && size(&overlap) + unit.1.chars().count() + 1 > CHUNK_SIZE {
                overlap.remove(0);
            }
            current = overlap;
            fresh = 0;
        }
        current.push(unit);
        fresh += 1;
    }
    if fresh > 0 {
        flush(&current, &mut chunks);
    }
    // A short chunk goes only when its lines are all in other chunks: the
    // minimum never costs text.
    let mut index = 0;
    while index < chunks.len() {
        let short = chunks[index].text.chars().count() < MIN_CHUNK;
        let (start, end) = (chunks[index].line_start, chunks[index].line_end);
        let covered = (start..=end).all(|line| {
            chunks.iter().enumerate().any(|(other, c)| other != index && c.line_start <= line && line <= c.line_end)
        });
        if short && covered && chunks.len() > 1 {
            chunks.remove(index);
        } else {
            index += 1;
        }
    }
    chunks
}

#[cfg(test)]
mod line_chunk_tests {
    use super::*;

    #[test]
    fn paragraphs_lines_and_overlap() {
        let paragraph = |n: usize| format!("{}\n", format!("Paragraph {n} sentence with some words. ").repeat(5));
        let text: String = (0..6).map(|n| format!("{}\n", paragraph(n))).collect();
        let chunks = chunk_lines(&text);
        assert!(chunks.len() >= 2, "{chunks:?}");
        assert!(chunks.iter().all(|c| c.text.chars().count() <= CHUNK_SIZE));
        assert_eq!(chunks[0].line_start, 1);
        assert!(chunks.windows(2).all(|w| w[1].line_start <= w[0].line_end + 2), "overlap or adjacency: {chunks:?}");
        assert_eq!(chunks.last().unwrap().line_end, 11);
        let single = chunk_lines("short note");
        assert_eq!(single, vec![LineChunk { text: "short note".into(), line_start: 1, line_end: 1 }]);
        let long_line = "x".repeat(2_000);
        let pieces = chunk_lines(&long_line);
        assert!(pieces.len() >= 3 && pieces.iter().all(|p| p.line_start == 1 && p.text.chars().count() <= CHUNK_SIZE));
        assert!(chunk_lines("\n\n  \n").is_empty());
    }

    proptest::proptest! {
        #[test]
        fn every_line_lands_in_a_chunk(lines in proptest::collection::vec("[a-z ]{0,120}", 0..60)) {
            let text = lines.join("\n");
            let chunks = chunk_lines(&text);
            for (i, line) in lines.iter().enumerate() {
                if !line.trim().is_empty() {
                    let n = i as u32 + 1;
                    proptest::prop_assert!(chunks.iter().any(|c| c.line_start <= n && n <= c.line_end), "line {} lost", n);
                }
            }
            proptest::prop_assert!(chunks.iter().all(|c| c.text.chars().count() <= CHUNK_SIZE && c.line_start <= c.line_end));
        }
    }
}
