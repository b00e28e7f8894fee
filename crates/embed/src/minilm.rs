//! all-MiniLM-L6-v2 in-process: tokenize, encode, mean-pool, normalise.
//!
//! Matches the sentence-transformers model (and ChromaDB's ONNX function
//! the Python MemPalace uses): inputs truncated at 256 tokens, mean pooling
//! over the attention mask, L2 normalisation. The encoder packs texts
//! without padding; passes are capped by a token budget so memory stays flat
//! however many texts are embedded.

use std::path::Path;

use rayon::prelude::*;

use mempalace_core::vector::normalize;

use crate::bert::{Bert, BertConfig, Layout};
use crate::files::{MINILM, MINILM_ID, ModelSpec, check};
use crate::weights::Weights;
use crate::wordpiece::WordPiece;
use crate::{EmbedError, EmbedResult, Embedder};

/// Longest input in tokens, [CLS] and [SEP] included (sentence-transformers'
/// `max_seq_length` for this model).
pub const MAX_TOKENS: usize = 256;

/// The MiniLM encoder with its tokenizer.
pub struct MiniLm {
    bert: Bert,
    tokenizer: WordPiece,
    max_tokens: usize,
    precision: Precision,
}

/// Arithmetic of the dense layers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// f32 throughout: matches the reference vectors (cosine ≥ 0.999).
    /// The dense weights transposed: mapped from the copy kept next to the
    /// model ([`crate::kept`]) when there is one, else copied at load
    /// (and that copy kept for the next process).
    F32,
    /// int8 dense layers with AVX-512 VNNI (attention in f32): about twice
    /// as fast, vectors within cosine ~0.99 of f32. A distinct model id, so
    /// its vectors are never compared with f32 ones.
    Int8,
    /// bf16 products on the AMX tile unit (dense layers and attention; f32
    /// accumulation, softmax, layer norm and GELU in f32): vectors within
    /// cosine 0.9999 of f32, so they share its model id. Needs AMX.
    Bf16,
    /// f32 with the dense weights read in place from the mapped file (no
    /// copy at load), for a process that embeds one short text: it loads
    /// about 40 ms faster than [`Precision::F32`] and embeds a short text
    /// a few milliseconds slower. The same arithmetic, so the same model id.
    F32InPlace,
    /// f32 arithmetic on the dense weights rounded to f16 in column panels
    /// ([`Bert::pack_f16`]), mapped from the copy kept next to the model
    /// ([`crate::kept`]; the first load makes it): for a process that
    /// embeds one short text, whose time goes into reading the weights,
    /// half the bytes of f32. Vectors within cosine 0.9999 of f32, so the
    /// same model id. Fast with AVX-512 only ([`Precision::for_one_text`]).
    F16,
}

impl Precision {
    /// The default: [`Precision::Bf16`] where AMX is available, else
    /// [`Precision::F32`]. Both give the same vectors (one model id).
    pub fn for_this_cpu() -> Self {
        if crate::amx::available() { Self::Bf16 } else { Self::F32 }
    }

    /// For a process that embeds one short text (a hook's `add`, `search`)
    /// with the model in `folder`: [`Precision::F16`] where the CPU has
    /// AVX-512 and the f16 panels are kept (or can be: the folder is
    /// writable), else [`Precision::F32`] with the kept transposed weights,
    /// else [`Precision::F32InPlace`]. Never a load that computes a layout
    /// it cannot keep for the next process.
    pub fn for_one_text(folder: &Path) -> Self {
        use crate::kept::{Layout, present, writable};
        if crate::kernels::has_avx512() && (present(folder, Layout::PanelsF16) || writable(folder)) {
            Self::F16
        } else if present(folder, Layout::TransposedF32) {
            Self::F32
        } else {
            Self::F32InPlace
        }
    }
}

/// Model id of the int8 variant.
pub const MINILM_INT8_ID: &str = "all-MiniLM-L6-v2-int8";

impl MiniLm {
    /// Loads the model from a folder holding model.safetensors,
    /// tokenizer.json and config.json, with [`Precision::for_this_cpu`].
    pub fn load(folder: &Path) -> EmbedResult<Self> {
        Self::load_with(folder, Precision::for_this_cpu())
    }

    /// Loads the model with the given precision. Int8 needs AVX-512 VNNI.
    pub fn load_with(folder: &Path, precision: Precision) -> EmbedResult<Self> {
        let (bert, tokenizer) = load_encoder(folder, &MINILM, "bert", "minilm", precision)?;
        let max_tokens = MAX_TOKENS.min(bert.max_positions());
        Ok(Self { bert, tokenizer, max_tokens, precision })
    }

    /// Token ids of each text, [CLS] … [SEP], truncated.
    pub fn tokenize(&self, texts: &[&str]) -> Vec<Vec<u32>> {
        tokenize(&self.tokenizer, texts, self.max_tokens)
    }

    /// The tokenizer (the static model reuses it).
    pub fn tokenizer(&self) -> &WordPiece {
        &self.tokenizer
    }

    /// Hidden width.
    pub fn hidden_size(&self) -> usize {
        self.bert.hidden_size()
    }

    /// Mean-pooled, unnormalised vectors of token-id rows, in input order
    /// ([`Bert::pooled_in_passes`]).
    pub fn pooled(&self, rows: &[Vec<u32>]) -> EmbedResult<Vec<Vec<f32>>> {
        Ok(self.bert.pooled_in_passes(rows))
    }
}

impl Embedder for MiniLm {
    fn model_id(&self) -> &str {
        match self.precision {
            Precision::F32 | Precision::Bf16 | Precision::F32InPlace | Precision::F16 => MINILM_ID,
            Precision::Int8 => MINILM_INT8_ID,
        }
    }

    fn dim(&self) -> usize {
        self.bert.hidden_size()
    }

    fn embed_batch(&self, texts: &[&str]) -> EmbedResult<Vec<Vec<f32>>> {
        Ok(embed(&self.bert, &self.tokenizer, texts, self.max_tokens))
    }

    fn context_that_fits<'a>(&self, context: &'a str, text: &str) -> &'a str {
        // The input opens and closes with a special token.
        self.tokenizer.context_that_fits(self.max_tokens.saturating_sub(2), context, text)
    }
}

/// Loads a sentence-transformers encoder of `model_type` ("bert" or
/// "mpnet") and its tokenizer from `folder`, whose files `spec` describes,
/// with `precision` (MiniLM's and MPNet's loader); `flag` is its
/// `--embedder` name, for the messages.
pub(crate) fn load_encoder(
    folder: &Path,
    spec: &ModelSpec,
    model_type: &str,
    flag: &str,
    precision: Precision,
) -> EmbedResult<(Bert, WordPiece)> {
    if precision == Precision::Int8 && !crate::kernels::has_vnni() {
        return Err(EmbedError::ModelInvalid(format!(
            "the int8 {} needs a CPU with AVX-512 VNNI, which this one lacks; use --embedder {flag}",
            spec.name
        )));
    }
    if precision == Precision::Bf16 && !crate::amx::available() {
        return Err(EmbedError::ModelInvalid(format!(
            "the bf16 {} needs a CPU with AMX (and Linux permission to use it), which this one lacks; use --embedder {flag}",
            spec.name
        )));
    }
    let started = std::time::Instant::now();
    check(spec, folder)?;
    let config_text = std::fs::read_to_string(folder.join("config.json"))
        .map_err(|error| EmbedError::ModelMissing(format!("config.json: {error}")))?;
    let config: BertConfig = serde_json::from_str(&config_text)
        .map_err(|error| EmbedError::ModelInvalid(format!("config.json: {error}")))?;
    if config.model_type != model_type {
        return Err(EmbedError::ModelInvalid(format!(
            "{}: config.json describes a {:?} model, not {model_type}; run `mempalace model fetch{} --force`",
            folder.display(),
            config.model_type,
            spec.fetch_args
        )));
    }
    // Mapped, not read: the word-embedding table (half the file) is
    // used in place, and only its rows for the tokens embedded are read.
    let mut bert = Weights::read(&folder.join("model.safetensors"))?.with(|root| Bert::load(root, &config))?;
    match precision {
        Precision::F32 => crate::kept::load_or_make(&mut bert, folder, Layout::TransposedF32),
        Precision::F16 => crate::kept::load_or_make(&mut bert, folder, Layout::PanelsF16),
        Precision::F32InPlace => {}
        Precision::Int8 => bert.quantize_int8(),
        Precision::Bf16 => bert.pack_bf16()?,
    }
    let weights_ms = started.elapsed().as_secs_f64() * 1e3;
    let tokenizer = WordPiece::from_tokenizer_json(&folder.join("tokenizer.json"))?;
    tracing::debug!(
        model = spec.name,
        weights_ms,
        total_ms = started.elapsed().as_secs_f64() * 1e3,
        ?precision,
        "encoder loaded"
    );
    Ok((bert, tokenizer))
}

/// Token ids of each text with the tokenizer's special tokens around it,
/// truncated at `max_tokens`.
pub(crate) fn tokenize(tokenizer: &WordPiece, texts: &[&str], max_tokens: usize) -> Vec<Vec<u32>> {
    texts.par_iter().map(|text| tokenizer.encode_with_special(text, max_tokens)).collect()
}

/// Normalised mean-pooled vectors of `texts`, in order.
pub(crate) fn embed(bert: &Bert, tokenizer: &WordPiece, texts: &[&str], max_tokens: usize) -> Vec<Vec<f32>> {
    if texts.is_empty() {
        return Vec::new();
    }
    let mut vectors = bert.pooled_in_passes(&tokenize(tokenizer, texts, max_tokens));
    for vector in &mut vectors {
        normalize(vector);
    }
    vectors
}
