//! HTML answers as plain text (Google Takeout keeps Gemini's answers as
//! HTML): tags out, block elements on lines of their own, a blank line
//! after paragraphs, headings and lists, list items as `- `,
//! `<script>`/`<style>` dropped with their content, entities decoded, runs
//! of blank lines collapsed. Not a full HTML parser — it never fails, and
//! text that merely contains `<` (`a < b`) is kept.

/// Elements whose start and end break a line.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "br",
    "hr",
    "li",
    "ul",
    "ol",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "blockquote",
    "table",
    "tr",
    "section",
    "article",
    "header",
    "footer",
];

/// Elements whose end leaves a blank line (a paragraph break).
const PARAGRAPHS: &[&str] = &["p", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "table", "ul", "ol"];

/// Ends the current line unless it is already ended.
fn line_break(out: &mut String) {
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
}

/// Elements dropped with everything inside them.
const DROPPED: &[&str] = &["script", "style", "head"];

/// The text of an HTML fragment.
pub fn html_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(start) = rest.find('<') {
        out.push_str(&decode_entities(&rest[..start]));
        let after = &rest[start + 1..];
        let Some((name, closing, tag_len)) = tag(after) else {
            // Not a tag: a literal `<`.
            out.push('<');
            rest = after;
            continue;
        };
        rest = &after[tag_len..];
        if !closing && DROPPED.contains(&name.as_str()) {
            let end = format!("</{name}");
            let lower = rest.to_ascii_lowercase();
            rest = match lower.find(&end) {
                Some(at) => rest[at..].find('>').map_or("", |close| &rest[at + close + 1..]),
                None => "",
            };
            continue;
        }
        if name == "br" {
            out.push('\n');
        } else if name == "li" && !closing {
            line_break(&mut out);
            out.push_str("- ");
        } else if name == "td" || name == "th" {
            if closing {
                out.push_str(" | ");
            }
        } else if closing && PARAGRAPHS.contains(&name.as_str()) {
            line_break(&mut out);
            out.push('\n');
        } else if BLOCKS.contains(&name.as_str()) {
            line_break(&mut out);
        }
    }
    out.push_str(&decode_entities(rest));
    tidy(&out)
}

/// A tag at the start of `text` (just after its `<`): its lowercase name,
/// whether it closes, and its length up to and including `>`. `None` when
/// `text` does not start a tag.
fn tag(text: &str) -> Option<(String, bool, usize)> {
    if let Some(comment) = text.strip_prefix("!--") {
        let end = comment.find("-->").map_or(text.len(), |at| at + 3 + 3);
        return Some((String::from("!--"), false, end));
    }
    let (closing, body) = match text.strip_prefix('/') {
        Some(body) => (true, body),
        None => (false, text),
    };
    let first = body.chars().next()?;
    if !(first.is_ascii_alphabetic() || first == '!') {
        return None;
    }
    let end = text.find('>')?;
    let name: String = body
        .chars()
        .skip_while(|c| *c == '!')
        .take_while(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect();
    Some((name, closing, end + 1))
}

/// Decodes numeric entities and the named ones answers use (markup,
/// spaces, dashes, quotes, a few symbols); others are kept as written.
pub fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        let decoded = after.find(';').filter(|end| *end <= 10).and_then(|end| {
            let name = &after[..end];
            let character = match name {
                "amp" => Some('&'),
                "lt" => Some('<'),
                "gt" => Some('>'),
                "quot" => Some('"'),
                "apos" | "#39" => Some('\''),
                "nbsp" => Some(' '),
                "ndash" => Some('–'),
                "mdash" => Some('—'),
                "hellip" => Some('…'),
                "lsquo" => Some('‘'),
                "rsquo" => Some('’'),
                "ldquo" => Some('“'),
                "rdquo" => Some('”'),
                "laquo" => Some('«'),
                "raquo" => Some('»'),
                "bull" => Some('•'),
                "middot" => Some('·'),
                "deg" => Some('°'),
                "times" => Some('×'),
                "euro" => Some('€'),
                "pound" => Some('£'),
                "copy" => Some('©'),
                "reg" => Some('®'),
                "trade" => Some('™'),
                _ => name.strip_prefix('#').and_then(|number| {
                    let code = match number.strip_prefix(['x', 'X']) {
                        Some(hex) => u32::from_str_radix(hex, 16).ok(),
                        None => number.parse().ok(),
                    };
                    code.and_then(char::from_u32)
                }),
            };
            character.map(|c| (c, end))
        });
        match decoded {
            Some((character, end)) => {
                out.push(character);
                rest = &after[end + 1..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Trailing spaces off every line, at most one blank line in a row, no
/// blank lines at either end.
fn tidy(text: &str) -> String {
    let mut lines: Vec<&str> = Vec::new();
    for line in text.lines().map(str::trim_end) {
        if line.trim().is_empty() && lines.last().is_none_or(|last| last.trim().is_empty()) {
            continue;
        }
        lines.push(line);
    }
    while lines.last().is_some_and(|l| l.trim().is_empty()) {
        lines.pop();
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_become_readable_text() {
        let html = "<h2>Cleaning</h2><p>Use <strong>vinegar</strong> &amp; water:</p><ul><li>Fill</li><li>Run &gt; 2 cycles</li></ul><script>alert(1)</script><p>Done&#8212;rinse.</p>";
        assert_eq!(html_text(html), "Cleaning\n\nUse vinegar & water:\n\n- Fill\n- Run > 2 cycles\n\nDone—rinse.");
    }

    #[test]
    fn a_lone_angle_bracket_is_text() {
        assert_eq!(html_text("<p>if a < b and 3<4</p>"), "if a < b and 3<4");
        assert_eq!(html_text("x &unknown; y &#xZZ; z &"), "x &unknown; y &#xZZ; z &");
        assert_eq!(html_text("<!-- note --><p>kept</p>"), "kept");
    }

    proptest::proptest! {
        /// Never panics; markup-free text comes out as it went in (tidied).
        #[test]
        fn any_fragment_is_handled(html in "(<(p|li|b|script|/p|/script|br/|!--)>|[a-z <>&;#0-9\n]){0,80}") {
            let text = html_text(&html);
            if !html.contains('<') && !html.contains('&') {
                proptest::prop_assert_eq!(text, tidy(&html));
            }
        }
    }
}
