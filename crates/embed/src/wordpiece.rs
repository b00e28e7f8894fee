//! The BERT uncased tokenizer (normaliser, pre-tokeniser, WordPiece), as
//! MiniLM's `tokenizer.json` defines it, reimplemented for speed.
//!
//! It reproduces the Hugging Face pipeline exactly — the test suite checks
//! token ids against the `tokenizers` crate on real text and on random
//! Unicode — using the same Unicode tables (`unicode_categories`,
//! `unicode-normalization-alignments`):
//!
//! 1. clean: drop NUL, U+FFFD and control/format/private-use characters;
//!    whitespace becomes a space;
//! 2. CJK ideographs get spaces around them;
//! 3. accents stripped (NFD, then non-spacing marks removed) and lowercased;
//! 4. split on whitespace, each punctuation character its own word;
//! 5. WordPiece: greedy longest match, `##` continuations, `[UNK]` for words
//!    longer than 100 characters or with no segmentation.
//!
//! ASCII words take a fast path that skips the Unicode work. The static model
//! tokenizes with this at tens of thousands of texts per second; the HF
//! crate's general machinery (offsets, regex pre-tokenisation) is several
//! times slower for the same output.

use std::borrow::Cow;
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::path::Path;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use unicode_categories::UnicodeCategories;
use unicode_normalization_alignments::UnicodeNormalization;

use crate::{EmbedError, EmbedResult};

/// FxHash (rustc's hasher): fast for short keys; no untrusted-key flooding
/// concerns, the vocabulary is fixed.
#[derive(Default, Clone, Copy)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0_u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Vocabulary pieces and their ids: every piece's text in one buffer, found
/// through an open-addressing table of entry numbers. Building a
/// `HashMap<String, u32>` of BERT's 30,000 pieces took 7 ms of every process
/// that embeds (one allocation per piece, in a fresh thread's arena) and
/// freeing it 2–3 ms at exit; this is three allocations.
#[derive(Clone, Default)]
struct Pieces {
    /// The pieces' texts, one after another.
    text: String,
    /// Per entry: where its text ends in `text` (it starts where the
    /// previous one ends), and its id.
    entries: Vec<(u32, u32)>,
    /// The entry number at each piece's hash (linear probing), [`EMPTY`]
    /// where none; a power of two, at most half full.
    slots: Vec<u32>,
}

/// An empty slot of [`Pieces::slots`]. Not zero: a table of zeros comes
/// from the allocator as untouched zero pages, and every first write to
/// one of them after a read (each probe reads first) is a copy-on-write
/// fault with a TLB flush on every core the process runs on — 64 of them
/// for MiniLM's table, 2–3 ms of a loading thread on a 2-core VM. Filled
/// with this, the table's pages are written before they are read.
const EMPTY: u32 = u32::MAX;

impl Pieces {
    fn with_capacity(pieces: usize, bytes: usize) -> Self {
        Self {
            text: String::with_capacity(bytes),
            entries: Vec::with_capacity(pieces),
            slots: vec![EMPTY; (pieces * 2).next_power_of_two().max(16)],
        }
    }

    /// `piece`'s first slot among `slots` (a power of two): the hash's
    /// top bits, the well-mixed ones of a multiplicative hash.
    fn home(piece: &str, slots: usize) -> usize {
        let hash = BuildHasherDefault::<FxHasher>::default().hash_one(piece);
        (hash >> (64 - slots.trailing_zeros())) as usize
    }

    fn piece(&self, entry: usize) -> &str {
        let start = if entry == 0 { 0 } else { self.entries[entry - 1].0 as usize };
        &self.text[start..self.entries[entry].0 as usize]
    }

    /// The slot of `slots` holding `piece`, or the empty slot where it
    /// would go.
    fn slot_in(&self, slots: &[u32], piece: &str) -> usize {
        let mask = slots.len() - 1;
        let mut slot = Self::home(piece, slots.len());
        loop {
            match slots[slot] {
                EMPTY => return slot,
                n if self.piece(n as usize) == piece => return slot,
                _ => slot = (slot + 1) & mask,
            }
        }
    }

    fn slot(&self, piece: &str) -> usize {
        self.slot_in(&self.slots, piece)
    }

    /// Sets the id of `piece` (a piece given twice keeps its last id).
    fn insert(&mut self, piece: &str, id: u32) {
        if (self.entries.len() + 1) * 2 > self.slots.len() {
            self.grow();
        }
        let slot = self.slot(piece);
        match self.slots[slot] {
            EMPTY => {
                self.text.push_str(piece);
                let end = u32::try_from(self.text.len()).expect("a vocabulary under 4 GiB");
                let entry =
                    u32::try_from(self.entries.len()).ok().filter(|&n| n != EMPTY).expect("under 4 billion pieces");
                self.entries.push((end, id));
                self.slots[slot] = entry;
            }
            n => self.entries[n as usize].1 = id,
        }
    }

    fn grow(&mut self) {
        let mut slots = vec![EMPTY; self.slots.len() * 2];
        // The pieces are distinct: each finds an empty slot.
        for entry in 0..self.entries.len() {
            let slot = self.slot_in(&slots, self.piece(entry));
            slots[slot] = entry as u32;
        }
        self.slots = slots;
    }

    fn get(&self, piece: &str) -> Option<u32> {
        match self.slots[self.slot(piece)] {
            EMPTY => None,
            n => Some(self.entries[n as usize].1),
        }
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn iter(&self) -> impl Iterator<Item = (&str, u32)> {
        (0..self.entries.len()).map(|entry| (self.piece(entry), self.entries[entry].1))
    }
}

/// The tokenizer.
#[derive(Clone)]
pub struct WordPiece {
    /// Whole words and first pieces.
    starts: Pieces,
    /// Continuation pieces, stored without their `##`.
    continuations: Pieces,
    unk: u32,
    cls: u32,
    sep: u32,
    max_chars_per_word: usize,
    longest_piece: usize,
    /// The added tokens (`[CLS]`, `<s>`, `<mask>` …) that a text may
    /// spell out: Hugging Face takes them whole before anything else, so
    /// "a <s> b" holds MPNet's `<s>` id, not `<`, `s`, `>`.
    added: Vec<AddedToken>,
    /// The characters an added token can start with (both ASCII cases
    /// for a normalised one): a text holding none of them (nearly all)
    /// takes the plain path after one scan.
    added_first: Vec<char>,
}

/// An added token as a text may contain it.
#[derive(Clone)]
struct AddedToken {
    content: String,
    id: u32,
    /// Matched after normalisation (here: ASCII case-insensitively, the
    /// lowercasing that matters for such tokens), else exactly.
    normalized: bool,
}

/// The parts of a Hugging Face `tokenizer.json` read here; every other
/// section is skipped by the parser.
#[derive(Deserialize)]
struct TokenizerFile<'a> {
    #[serde(borrow)]
    model: ModelSection<'a>,
    #[serde(borrow)]
    normalizer: Option<NormalizerSection<'a>>,
    #[serde(borrow)]
    post_processor: Option<PostProcessorSection<'a>>,
    #[serde(borrow, default)]
    added_tokens: Vec<AddedSection<'a>>,
}

#[derive(Deserialize)]
struct AddedSection<'a> {
    id: u32,
    #[serde(borrow)]
    content: Cow<'a, str>,
    #[serde(default)]
    normalized: bool,
}

/// The tokens a `BertProcessing` or `RobertaProcessing` post-processor
/// puts around a text (MPNet: `<s>` … `</s>`); a `TemplateProcessing`
/// one (MiniLM) names none here, and `[CLS]` … `[SEP]` apply.
#[derive(Deserialize)]
struct PostProcessorSection<'a> {
    #[serde(borrow)]
    cls: Option<(Cow<'a, str>, u32)>,
    #[serde(borrow)]
    sep: Option<(Cow<'a, str>, u32)>,
}

#[derive(Deserialize)]
struct ModelSection<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow)]
    unk_token: Option<Cow<'a, str>>,
    #[serde(borrow)]
    continuing_subword_prefix: Option<Cow<'a, str>>,
    max_input_chars_per_word: Option<u64>,
    #[serde(borrow)]
    vocab: Option<Vocab<'a>>,
}

#[derive(Deserialize)]
struct NormalizerSection<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    lowercase: Option<bool>,
}

/// The vocabulary object as (token, id) pairs in file order; a token that
/// appears twice keeps its last id (as a JSON map read whole would).
struct Vocab<'a>(Vec<(Cow<'a, str>, u32)>);

impl<'de: 'a, 'a> Deserialize<'de> for Vocab<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Pairs;
        impl<'de> Visitor<'de> for Pairs {
            type Value = Vocab<'de>;

            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a map of tokens to ids")
            }

            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(32_768));
                while let Some(Token(token)) = map.next_key()? {
                    let id: u64 = map.next_value()?;
                    let id = u32::try_from(id).map_err(|_| serde::de::Error::custom("bad vocabulary id"))?;
                    pairs.push((token, id));
                }
                Ok(Vocab(pairs))
            }
        }
        deserializer.deserialize_map(Pairs)
    }
}

/// A token, borrowed from the file unless it holds an escape.
struct Token<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Token<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;
        impl<'de> Visitor<'de> for Text {
            type Value = Token<'de>;

            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a token")
            }

            fn visit_borrowed_str<E: serde::de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
                Ok(Token(Cow::Borrowed(text)))
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Self::Value, E> {
                Ok(Token(Cow::Owned(text.to_string())))
            }

            fn visit_string<E: serde::de::Error>(self, text: String) -> Result<Self::Value, E> {
                Ok(Token(Cow::Owned(text)))
            }
        }
        deserializer.deserialize_str(Text)
    }
}

/// The characters the added tokens start with, both ASCII cases for a
/// normalised one.
fn added_first(added: &[AddedToken]) -> Vec<char> {
    let mut first: Vec<char> = added
        .iter()
        .filter_map(|token| Some((token.content.chars().next()?, token.normalized)))
        .flat_map(
            |(c, normalized)| {
                if normalized { vec![c.to_ascii_lowercase(), c.to_ascii_uppercase()] } else { vec![c] }
            },
        )
        .collect();
    first.sort_unstable();
    first.dedup();
    first
}

/// Byte offset of the first ASCII-case-insensitive occurrence of `needle`.
fn find_ascii_case_insensitive(haystack: &str, needle: &str) -> Option<usize> {
    let (hay, pin) = (haystack.as_bytes(), needle.as_bytes());
    (0..=hay.len().checked_sub(pin.len())?)
        .find(|&at| haystack.is_char_boundary(at) && hay[at..at + pin.len()].eq_ignore_ascii_case(pin))
}

fn invalid(message: impl Into<String>) -> EmbedError {
    EmbedError::ModelInvalid(message.into())
}

fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

fn is_chinese_char(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0x20000..=0x2A6DF | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F | 0x2B920..=0x2CEAF | 0xF900..=0xFAFF | 0x2F800..=0x2FA1F)
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || c.is_punctuation()
}

impl WordPiece {
    /// Reads the WordPiece vocabulary and special tokens of a Hugging Face
    /// `tokenizer.json` (BERT normaliser with lowercasing expected).
    pub fn from_tokenizer_json(path: &Path) -> EmbedResult<Self> {
        let text =
            std::fs::read_to_string(path).map_err(|e| EmbedError::ModelMissing(format!("{}: {e}", path.display())))?;
        // Typed and borrowing: the file's other sections are skipped
        // unparsed and the 30,000 tokens are not built into a JSON tree
        // first (that took 23 ms of every process that embeds).
        let file: TokenizerFile<'_> =
            serde_json::from_str(&text).map_err(|e| invalid(format!("{}: {e}", path.display())))?;
        let model = file.model;
        if model.kind != "WordPiece" {
            return Err(invalid(format!("{}: model type {:?} is not WordPiece", path.display(), model.kind)));
        }
        if file.normalizer.as_ref().is_none_or(|n| n.kind != "BertNormalizer" || n.lowercase != Some(true)) {
            return Err(invalid(format!("{}: only the lowercasing BertNormalizer is supported", path.display())));
        }
        let prefix = model.continuing_subword_prefix.as_deref().unwrap_or("##");
        let vocab = model.vocab.ok_or_else(|| invalid("tokenizer.json has no vocabulary"))?.0;
        let bytes = vocab.iter().map(|(token, _)| token.len()).sum();
        let mut starts = Pieces::with_capacity(vocab.len(), bytes);
        let mut continuations = Pieces::with_capacity(vocab.len() / 4, bytes / 4);
        let mut longest_piece = 0;
        for (token, id) in vocab {
            match token.strip_prefix(prefix) {
                Some(rest) if !rest.is_empty() => {
                    longest_piece = longest_piece.max(rest.len());
                    continuations.insert(rest, id);
                }
                _ => {
                    longest_piece = longest_piece.max(token.len());
                    starts.insert(&token, id);
                }
            }
        }
        let special = |name: &str| starts.get(name).ok_or_else(|| invalid(format!("vocabulary has no {name}")));
        let unk_name = model.unk_token.as_deref().unwrap_or("[UNK]");
        let added: Vec<AddedToken> = file
            .added_tokens
            .into_iter()
            .filter(|token| !token.content.is_empty())
            .map(|token| AddedToken { content: token.content.into_owned(), id: token.id, normalized: token.normalized })
            .collect();
        let processor = file.post_processor.as_ref();
        let cls_name = processor.and_then(|p| p.cls.as_ref()).map_or("[CLS]", |(name, _)| name.as_ref());
        let sep_name = processor.and_then(|p| p.sep.as_ref()).map_or("[SEP]", |(name, _)| name.as_ref());
        Ok(Self {
            unk: special(unk_name)?,
            cls: special(cls_name)?,
            sep: special(sep_name)?,
            max_chars_per_word: model.max_input_chars_per_word.unwrap_or(100) as usize,
            longest_piece,
            starts,
            continuations,
            added_first: added_first(&added),
            added,
        })
    }

    /// The first added token in `text`: (byte offset, byte length, id),
    /// the leftmost, and the longest of those starting there.
    fn next_added(&self, text: &str) -> Option<(usize, usize, u32)> {
        let mut best: Option<(usize, usize, u32)> = None;
        for token in &self.added {
            let found = if token.normalized {
                find_ascii_case_insensitive(text, &token.content)
            } else {
                text.find(token.content.as_str())
            };
            if let Some(start) = found {
                let better = match best {
                    None => true,
                    Some((at, length, _)) => start < at || (start == at && token.content.len() > length),
                };
                if better {
                    best = Some((start, token.content.len(), token.id));
                }
            }
        }
        best
    }

    /// The `[UNK]` id.
    pub fn unk_id(&self) -> u32 {
        self.unk
    }

    /// The id of the token in front of a text (`[CLS]`; MPNet: `<s>`).
    pub fn cls_id(&self) -> u32 {
        self.cls
    }

    /// The id of the token after a text (`[SEP]`; MPNet: `</s>`).
    pub fn sep_id(&self) -> u32 {
        self.sep
    }

    /// Ids of the `[unusedN]` placeholder tokens, which no text produces.
    pub fn unused_ids(&self) -> Vec<u32> {
        let mut ids: Vec<u32> =
            self.starts.iter().filter(|(token, _)| token.starts_with("[unused")).map(|(_, id)| id).collect();
        ids.sort_unstable();
        ids
    }

    /// Number of distinct ids.
    pub fn vocab_size(&self) -> usize {
        self.starts.len() + self.continuations.len()
    }

    /// The end of `context` that fits before `text` in `window` tokens (a
    /// model's input less its special tokens): whole words, from the last
    /// back, while their tokens fit. Text is split at white space before
    /// anything else, so a word has the same tokens alone as in the whole
    /// input.
    pub fn context_that_fits<'a>(&self, window: usize, context: &'a str, text: &str) -> &'a str {
        let mut room = window.saturating_sub(self.encode(text, window).len());
        let mut start = context.len();
        for word in context.split_whitespace().rev() {
            let tokens = self.encode(word, room + 1).len();
            if tokens > room {
                break;
            }
            room -= tokens;
            // The word is a slice of the context: its offset there.
            start = word.as_ptr() as usize - context.as_ptr() as usize;
        }
        &context[start..]
    }

    /// Token ids of `text` without special tokens, at most `max` of them.
    /// An added token the text spells out (`[SEP]`, `<s>` …) is its id, as
    /// Hugging Face's tokenizer has it; the text around it is tokenized
    /// piece by piece.
    pub fn encode(&self, text: &str, max: usize) -> Vec<u32> {
        if self.added_first.is_empty() || !text.contains(self.added_first.as_slice()) {
            return self.encode_plain(text, max);
        }
        let mut ids = Vec::new();
        let mut rest = text;
        while ids.len() < max {
            let Some((start, length, id)) = self.next_added(rest) else { break };
            ids.extend(self.encode_plain(&rest[..start], max - ids.len()));
            if ids.len() < max {
                ids.push(id);
            }
            rest = &rest[start + length..];
        }
        if ids.len() < max {
            ids.extend(self.encode_plain(rest, max - ids.len()));
        }
        ids
    }

    /// [`WordPiece::encode`] of a text holding no added token.
    fn encode_plain(&self, text: &str, max: usize) -> Vec<u32> {
        let mut ids = Vec::with_capacity(text.len() / 4 + 1);
        let mut word = String::new();
        let mut normalized = String::new();
        for c in text.chars() {
            if ids.len() >= max {
                break;
            }
            if c.is_ascii() {
                if c.is_ascii_alphanumeric() {
                    word.push(c.to_ascii_lowercase());
                } else if c.is_ascii_punctuation() {
                    self.flush(&mut word, &mut ids);
                    word.push(c);
                    self.flush(&mut word, &mut ids);
                } else if matches!(c, ' ' | '\t' | '\n' | '\r') {
                    self.flush(&mut word, &mut ids);
                } else if c.is_ascii_control() {
                    // Dropped by the cleaning step (which removes control
                    // characters before mapping whitespace, so vertical tab
                    // and form feed vanish rather than separate words).
                } else {
                    word.push(c);
                }
                continue;
            }
            // Full Unicode path for one character.
            if c == '\u{FFFD}' || is_control(c) {
                continue;
            }
            if is_whitespace(c) {
                self.flush(&mut word, &mut ids);
                continue;
            }
            if is_chinese_char(c) {
                self.flush(&mut word, &mut ids);
                normalized.clear();
                push_normalized(c, &mut normalized);
                word.push_str(&normalized);
                self.flush(&mut word, &mut ids);
                continue;
            }
            normalized.clear();
            push_normalized(c, &mut normalized);
            for n in normalized.chars() {
                if is_whitespace(n) {
                    self.flush(&mut word, &mut ids);
                } else if is_punctuation(n) {
                    self.flush(&mut word, &mut ids);
                    word.push(n);
                    self.flush(&mut word, &mut ids);
                } else {
                    word.push(n);
                }
            }
        }
        self.flush(&mut word, &mut ids);
        ids.truncate(max);
        ids
    }

    /// Ids of `text` as the model sees it: `[CLS] … [SEP]`, at most `max`
    /// tokens in all.
    pub fn encode_with_special(&self, text: &str, max: usize) -> Vec<u32> {
        let mut ids = Vec::with_capacity(max.min(text.len() / 3 + 2));
        ids.push(self.cls);
        ids.extend(self.encode(text, max.saturating_sub(2)));
        ids.push(self.sep);
        ids
    }

    /// Appends the WordPiece ids of one pre-tokenized word and clears it.
    fn flush(&self, word: &mut String, ids: &mut Vec<u32>) {
        if word.is_empty() {
            return;
        }
        if word.chars().count() > self.max_chars_per_word {
            ids.push(self.unk);
            word.clear();
            return;
        }
        let start_len = ids.len();
        let mut start = 0;
        while start < word.len() {
            let map = if start == 0 { &self.starts } else { &self.continuations };
            let mut end = word.len().min(start + self.longest_piece);
            let mut found = None;
            while end > start {
                if word.is_char_boundary(end)
                    && let Some(id) = map.get(&word[start..end])
                {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            match found {
                Some(id) => {
                    ids.push(id);
                    start = end;
                }
                None => {
                    ids.truncate(start_len);
                    ids.push(self.unk);
                    break;
                }
            }
        }
        word.clear();
    }
}

/// One character through NFD, mark stripping and lowercasing.
fn push_normalized(c: char, out: &mut String) {
    let mut buffer = [0_u8; 4];
    for (decomposed, _) in (&*c.encode_utf8(&mut buffer)).nfd() {
        if decomposed.is_mark_nonspacing() {
            continue;
        }
        out.extend(decomposed.to_lowercase());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> WordPiece {
        let vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "hello", ",", "cafe", "中"];
        let map: serde_json::Map<String, serde_json::Value> =
            vocab.iter().enumerate().map(|(i, t)| (t.to_string(), serde_json::Value::from(i))).collect();
        let json = serde_json::json!({
            "normalizer": {"type": "BertNormalizer", "lowercase": true},
            "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                      "max_input_chars_per_word": 100, "vocab": map}
        });
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokenizer.json");
        std::fs::write(&path, json.to_string()).unwrap();
        WordPiece::from_tokenizer_json(&path).unwrap()
    }

    /// Added tokens a text spells out are taken whole, before anything
    /// else: exactly, or ASCII case-insensitively when normalised.
    #[test]
    fn added_tokens_in_the_text_are_their_ids() {
        let vocab = ["[PAD]", "<unk>", "[CLS]", "[SEP]", "un", "##aff", "##able", "hello", ",", "cafe", "[", "]"];
        let map: serde_json::Map<String, serde_json::Value> =
            vocab.iter().enumerate().map(|(i, t)| (t.to_string(), serde_json::Value::from(i))).collect();
        let json = serde_json::json!({
            "normalizer": {"type": "BertNormalizer", "lowercase": true},
            "model": {"type": "WordPiece", "unk_token": "<unk>", "vocab": map},
            "added_tokens": [
                {"id": 2, "content": "[CLS]", "normalized": false},
                {"id": 3, "content": "[SEP]", "normalized": false},
                {"id": 1, "content": "<unk>", "normalized": true},
            ]
        });
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokenizer.json");
        std::fs::write(&path, json.to_string()).unwrap();
        let wp = WordPiece::from_tokenizer_json(&path).unwrap();
        assert_eq!(wp.encode("hello[SEP]unaffable", 100), vec![7, 3, 4, 5, 6]);
        assert_eq!(wp.encode("hello <UNK> cafe [CLS]", 100), vec![7, 1, 9, 2]);
        assert_eq!(wp.encode("[sep] [CL S]", 100), vec![10, 1, 11, 10, 1, 1, 11], "exact only when not normalised");
        assert_eq!(wp.encode("hello [CLS] hello", 2), vec![7, 2]);
        assert_eq!(wp.encode("[CLS][CLS]", 1), vec![2]);
        assert_eq!(wp.encode_with_special("[SEP]", 10), vec![2, 3, 3]);
    }

    proptest::proptest! {
        /// The pieces table answers as a map would: the last id of each
        /// piece given, nothing for others, through growth from any start.
        #[test]
        fn pieces_answer_as_a_map_does(
            given in proptest::collection::vec(("[a-z#\\[\\]]{0,6}|\\PC{1,3}", 0_u32..50_000), 0..300),
            absent in proptest::collection::vec("[a-z#]{0,6}|\\PC{1,3}", 0..50),
            capacity in 0_usize..40,
        ) {
            let mut pieces = Pieces::with_capacity(capacity, 0);
            let mut map = std::collections::HashMap::new();
            for (piece, id) in &given {
                pieces.insert(piece, *id);
                map.insert(piece.clone(), *id);
            }
            proptest::prop_assert_eq!(pieces.len(), map.len());
            for (piece, id) in &map {
                proptest::prop_assert_eq!(pieces.get(piece), Some(*id));
            }
            for piece in absent.iter().filter(|piece| !map.contains_key(*piece)) {
                proptest::prop_assert_eq!(pieces.get(piece), None);
            }
            let listed: std::collections::HashMap<String, u32> =
                pieces.iter().map(|(piece, id)| (piece.to_string(), id)).collect();
            proptest::prop_assert_eq!(listed, map);
        }
    }

    #[test]
    fn greedy_longest_match_with_continuations() {
        let wp = tiny();
        assert_eq!(wp.encode("unaffable", 100), vec![4, 5, 6]);
        assert_eq!(wp.encode("Hello, UNAFFABLE!", 100), vec![7, 8, 4, 5, 6, 1]);
        assert_eq!(wp.encode("unknownword", 100), vec![1]);
        assert_eq!(wp.encode_with_special("hello", 3), vec![2, 7, 3]);
        assert_eq!(wp.encode_with_special("hello", 2), vec![2, 3]);
    }

    #[test]
    fn accents_cjk_and_controls_follow_the_bert_normaliser() {
        let wp = tiny();
        assert_eq!(wp.encode("Café", 100), vec![9]);
        assert_eq!(wp.encode("中中", 100), vec![10, 10]);
        assert_eq!(wp.encode("hel\u{0}lo\u{200B}", 100), vec![7]);
    }
}
