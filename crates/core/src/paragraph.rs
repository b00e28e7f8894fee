//! Memory files cut into paragraphs, and the text edits that write a
//! palace change back into one (seed 2, "Writing Memory (L0)": GoClaw's
//! `MEMORY.md` and `memory/*.md` are chunked by paragraph boundaries, at
//! most 1,000 characters per chunk).
//!
//! A paragraph is a run of non-blank lines; blank lines inside a fenced
//! code block (```` ``` ```` or `~~~`) do not end it. Its text is the exact
//! bytes of the file between its first and last non-whitespace character,
//! so a paragraph can be found again in the file and replaced in place. A
//! paragraph over [`MAX_PARAGRAPH_CHARS`] is cut at the last line break
//! that fits, else at the last space, else at the limit.
//!
//! Pure: text in, byte ranges and new text out. Reading and writing the
//! files is `mempalace-feed`'s (`memory` module).

/// Most characters in one paragraph chunk (seed 2: "max 1,000 chars per chunk").
pub const MAX_PARAGRAPH_CHARS: usize = 1_000;

/// One paragraph chunk of a memory file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Paragraph {
    /// Byte offset of its first character (never whitespace).
    pub start: usize,
    /// Byte offset just past its last character (never whitespace).
    pub end: usize,
    /// Line (1-based) of its first character.
    pub line_start: u32,
    /// Line (1-based) of its last character.
    pub line_end: u32,
}

impl Paragraph {
    /// Its text in `source`, the text it was cut from.
    pub fn text<'a>(&self, source: &'a str) -> &'a str {
        &source[self.start..self.end]
    }
}

/// The paragraph chunks of a Markdown text, in order: never empty, never
/// longer than [`MAX_PARAGRAPH_CHARS`] characters, never overlapping, and
/// together holding every non-whitespace character of the text.
pub fn paragraphs(text: &str) -> Vec<Paragraph> {
    let line_starts = line_starts(text);
    let mut blocks: Vec<(usize, usize)> = Vec::new();
    let mut block: Option<(usize, usize)> = None;
    let mut in_fence = false;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let line_end = offset + line.len();
        let trimmed = line.trim();
        if trimmed.is_empty() && !in_fence {
            blocks.extend(block.take());
        } else {
            block = Some(match block {
                Some((start, _)) => (start, line_end),
                None => (offset, line_end),
            });
            if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
                in_fence = !in_fence;
            }
        }
        offset = line_end;
    }
    blocks.extend(block);
    let mut out = Vec::new();
    for (start, end) in blocks {
        let Some((start, end)) = trimmed_range(text, start, end) else { continue };
        for (start, end) in split_long(text, start, end) {
            out.push(Paragraph {
                start,
                end,
                line_start: line_of(&line_starts, start),
                line_end: line_of(&line_starts, end - 1),
            });
        }
    }
    out
}

/// `text` with `paragraph` replaced by `replacement` (trimmed of
/// surrounding whitespace; the file's own whitespace around the paragraph
/// stays).
pub fn replace_paragraph(text: &str, paragraph: &Paragraph, replacement: &str) -> String {
    let mut out = String::with_capacity(text.len() + replacement.len());
    out.push_str(&text[..paragraph.start]);
    out.push_str(replacement.trim());
    out.push_str(&text[paragraph.end..]);
    out
}

/// `text` without `paragraph`: a paragraph that starts its line goes with
/// its indentation and the blank lines after it; one cut out of a long line
/// goes with the spaces after it.
pub fn remove_paragraph(text: &str, paragraph: &Paragraph) -> String {
    let bytes = text.as_bytes();
    let mut from = paragraph.start;
    while from > 0 && matches!(bytes[from - 1], b' ' | b'\t') {
        from -= 1;
    }
    let starts_line = from == 0 || bytes[from - 1] == b'\n';
    if !starts_line {
        from = paragraph.start;
    }
    let next = text[paragraph.end..].find(|c: char| !c.is_whitespace()).map(|at| paragraph.end + at);
    let to = match next {
        None if starts_line => text.len(),
        None => horizontal_end(text, paragraph.end),
        Some(next) if starts_line && text[paragraph.end..next].contains('\n') => {
            text[..next].rfind('\n').map_or(next, |at| at + 1)
        }
        Some(next) if starts_line => next,
        Some(_) => horizontal_end(text, paragraph.end),
    };
    let mut out = String::with_capacity(text.len());
    out.push_str(&text[..from]);
    out.push_str(&text[to..]);
    if to == text.len() {
        // The last paragraph went: end the file on one line break.
        let kept = out.trim_end().len();
        out.truncate(kept);
        if !out.is_empty() {
            out.push('\n');
        }
    }
    out
}

/// `text` with `addition` (trimmed) as a new last paragraph, one blank line
/// after the text before it; the result ends with a line break.
pub fn append_paragraph(text: &str, addition: &str) -> String {
    let before = text.trim_end();
    let mut out = String::with_capacity(before.len() + addition.len() + 3);
    out.push_str(before);
    if !before.is_empty() {
        out.push_str("\n\n");
    }
    out.push_str(addition.trim());
    out.push('\n');
    out
}

/// Byte offsets at which each line starts.
fn line_starts(text: &str) -> Vec<usize> {
    std::iter::once(0).chain(text.match_indices('\n').map(|(at, _)| at + 1)).collect()
}

/// The 1-based line of a byte offset.
fn line_of(line_starts: &[usize], offset: usize) -> u32 {
    u32::try_from(line_starts.partition_point(|&start| start <= offset)).unwrap_or(u32::MAX)
}

/// `start..end` without the whitespace at either end; `None` when nothing is left.
fn trimmed_range(text: &str, start: usize, end: usize) -> Option<(usize, usize)> {
    let slice = &text[start..end];
    let trimmed_start = slice.len() - slice.trim_start().len();
    let trimmed = slice.trim();
    (!trimmed.is_empty()).then(|| (start + trimmed_start, start + trimmed_start + trimmed.len()))
}

/// Past the spaces and tabs at `at`.
fn horizontal_end(text: &str, at: usize) -> usize {
    at + text[at..].len() - text[at..].trim_start_matches([' ', '\t']).len()
}

/// Cuts a trimmed range into chunks of at most [`MAX_PARAGRAPH_CHARS`].
fn split_long(text: &str, start: usize, end: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = start;
    loop {
        let rest = &text[at..end];
        // The byte offset after MAX characters, if the rest is longer.
        let Some((limit, _)) = rest.char_indices().nth(MAX_PARAGRAPH_CHARS) else {
            out.push((at, end));
            return out;
        };
        let window = &rest[..limit];
        let has_text_before = |cut: usize| window[..cut].chars().any(|c| !c.is_whitespace());
        let cut = window
            .rfind('\n')
            .filter(|&cut| has_text_before(cut))
            .or_else(|| window.rfind(char::is_whitespace).filter(|&cut| has_text_before(cut)))
            .unwrap_or(limit);
        let piece_end = at + window[..cut].trim_end().len();
        out.push((at, piece_end));
        let after = at + cut;
        at = after + text[after..end].len() - text[after..end].trim_start().len();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn texts(text: &str) -> Vec<&str> {
        paragraphs(text).iter().map(|p| p.text(text)).collect()
    }

    #[test]
    fn blank_lines_separate_paragraphs_and_lines_are_counted_from_one() {
        let text = "# Memory\nUser prefers dark mode.\n\n  \nDeploys happen on Fridays.\r\n\n- a\n- b\n";
        assert_eq!(texts(text), vec!["# Memory\nUser prefers dark mode.", "Deploys happen on Fridays.", "- a\n- b"]);
        let lines: Vec<(u32, u32)> = paragraphs(text).iter().map(|p| (p.line_start, p.line_end)).collect();
        assert_eq!(lines, vec![(1, 2), (5, 5), (7, 8)]);
    }

    #[test]
    fn a_fenced_block_keeps_its_blank_lines() {
        let text = "Setup:\n```sh\nmake\n\nmake test\n```\n\nAfter.";
        assert_eq!(texts(text), vec!["Setup:\n```sh\nmake\n\nmake test\n```", "After."]);
    }

    #[test]
    fn long_paragraphs_are_cut_at_lines_then_spaces() {
        let line = "word ".repeat(150); // 750 characters
        let text = format!("{}\n{}", line.trim_end(), line.trim_end());
        let cut = texts(&text);
        assert_eq!(cut, vec![line.trim_end(), line.trim_end()], "cut at the line break");
        let long = "word ".repeat(500);
        let cut = texts(&long);
        assert_eq!(cut.len(), 3);
        assert!(cut.iter().all(|t| t.chars().count() <= MAX_PARAGRAPH_CHARS && t.starts_with("word")));
        let solid = "x".repeat(2_500);
        assert_eq!(texts(&solid).iter().map(|t| t.len()).collect::<Vec<_>>(), vec![1_000, 1_000, 500]);
    }

    #[test]
    fn edits_replace_remove_and_append_paragraphs() {
        let text = "A one.\n\n  B two.\n\nC three.\n";
        let found = paragraphs(text);
        assert_eq!(replace_paragraph(text, &found[1], " B changed. \n"), "A one.\n\n  B changed.\n\nC three.\n");
        assert_eq!(remove_paragraph(text, &found[1]), "A one.\n\nC three.\n");
        assert_eq!(remove_paragraph(text, &found[0]), "  B two.\n\nC three.\n");
        assert_eq!(remove_paragraph(text, &found[2]), "A one.\n\n  B two.\n");
        assert_eq!(remove_paragraph("Only.", &paragraphs("Only.")[0]), "");
        assert_eq!(append_paragraph(text, "D four."), "A one.\n\n  B two.\n\nC three.\n\nD four.\n");
        assert_eq!(append_paragraph("", " D four. "), "D four.\n");
        assert!(paragraphs("").is_empty() && paragraphs(" \n\t\n").is_empty());
    }

    fn non_whitespace(text: &str) -> String {
        text.chars().filter(|c| !c.is_whitespace()).collect()
    }

    proptest! {
        #[test]
        fn paragraphs_cover_the_text_in_order_within_the_limit(
            text in "([a-z]{1,12}|[ \\t]{1,3}|\n|\r\n|\n\n|```|~~~|# |é|中|[a-z]{300,700})*"
        ) {
            let found = paragraphs(&text);
            let mut previous_end = 0;
            let mut covered = String::new();
            for paragraph in &found {
                let chunk = paragraph.text(&text);
                prop_assert!(paragraph.start >= previous_end, "ordered, not overlapping");
                prop_assert!(!chunk.is_empty() && chunk.trim() == chunk, "trimmed and not empty: {chunk:?}");
                prop_assert!(chunk.chars().count() <= MAX_PARAGRAPH_CHARS);
                prop_assert_eq!(paragraph.line_start as usize, text[..paragraph.start].matches('\n').count() + 1);
                prop_assert_eq!(paragraph.line_end as usize, text[..paragraph.end].matches('\n').count() + 1);
                covered.push_str(chunk);
                previous_end = paragraph.end;
            }
            prop_assert_eq!(non_whitespace(&covered), non_whitespace(&text));
        }

        #[test]
        fn edits_touch_only_their_paragraph(
            text in "([a-z]{1,12}|[ \\t]{1,3}|\n|\n\n|```|é|[a-z]{300,700})*",
            pick in any::<prop::sample::Index>(),
        ) {
            let found = paragraphs(&text);
            prop_assume!(!found.is_empty());
            let paragraph = found[pick.index(found.len())];
            prop_assert_eq!(replace_paragraph(&text, &paragraph, paragraph.text(&text)), text.clone());
            let removed = remove_paragraph(&text, &paragraph);
            let expected = format!(
                "{}{}",
                non_whitespace(&text[..paragraph.start]),
                non_whitespace(&text[paragraph.end..])
            );
            prop_assert_eq!(non_whitespace(&removed), expected);
            // An unclosed fence would swallow the addition; backticks aside,
            // the addition is the last paragraph.
            if !text.contains('`') {
                let appended = append_paragraph(&text, "zz new");
                prop_assert_eq!(paragraphs(&appended).last().map(|p| p.text(&appended)), Some("zz new"));
            }
        }
    }
}
