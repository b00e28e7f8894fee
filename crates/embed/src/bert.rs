//! A BERT encoder for all-MiniLM-L6-v2, on plain f32 buffers.
//!
//! Weights are read from the model's safetensors (Hugging Face names, with
//! or without a `bert.` prefix): the embedding tables in place in the
//! mapped file (a text touches only its own tokens' rows), and the dense
//! layers too, in PyTorch's `[out, in]` layout, which the multiply reads
//! transposed: a one-text process copies no weights at all (transposing
//! them cost such a process about half its load time). The int8 and bf16
//! paths convert from the same in-place weights. The forward pass packs the tokens of all texts of a pass into
//! one `[tokens, hidden]` matrix with no padding: the dense layers run as
//! one large multiply over every token (split over the cores by `gemm`),
//! and attention runs per text over its own length only (texts spread over
//! the cores), so no work is spent on padding and no mask is needed.
//! Buffers are allocated once per pass and reused by every layer.
//!
//! After [`Bert::pack_bf16`] (the default where the CPU has AMX) every
//! product runs on the AMX tile unit in bf16 (`crate::amx`), each step
//! writing the next multiply's bf16 input, with buffers kept from pass to
//! pass; f32 stays for softmax, GELU, layer norm and the residual stream.
//!
//! Pooling here is the mean over each text's tokens; normalisation is the
//! caller's.

use std::sync::Mutex;

use rayon::prelude::*;
use serde::Deserialize;

use crate::amx::{self, Bf16Matrix, Epilogue};
use crate::kernels::{self, Int8Matrix, View, matmul};
use crate::weights::{self, Data, Floats, Halves, Scope, Weights};
use crate::{EmbedError, EmbedResult};

/// The parts of a Hugging Face `config.json` the encoder needs.
#[derive(Debug, Clone, Deserialize)]
pub struct BertConfig {
    /// Vocabulary size.
    pub vocab_size: usize,
    /// Hidden width.
    pub hidden_size: usize,
    /// Number of layers.
    pub num_hidden_layers: usize,
    /// Attention heads per layer.
    pub num_attention_heads: usize,
    /// Feed-forward width.
    pub intermediate_size: usize,
    /// Longest position.
    pub max_position_embeddings: usize,
    /// Token-type vocabulary (BERT; MPNet has no token types).
    #[serde(default)]
    pub type_vocab_size: usize,
    /// Layer-norm epsilon.
    pub layer_norm_eps: f64,
    /// Activation; only "gelu" (exact, erf) is supported.
    pub hidden_act: String,
    /// "bert" (MiniLM) or "mpnet" (all-mpnet-base-v2: other weight
    /// names, positions counted from after the padding id, and a learned
    /// bias on attention by relative position).
    #[serde(default = "bert_model_type")]
    pub model_type: String,
    /// MPNet: the padding id, from which positions count.
    #[serde(default)]
    pub pad_token_id: usize,
    /// MPNet: buckets of the relative-position attention bias.
    #[serde(default)]
    pub relative_attention_num_buckets: usize,
}

fn bert_model_type() -> String {
    "bert".to_string()
}

/// MPNet's relative positions farther than this share the last bucket
/// (Hugging Face's `relative_position_bucket`, `max_distance`).
const RELATIVE_MAX_DISTANCE: usize = 128;

/// MPNet's attention bias by relative position: one value per head and
/// bucket, added to every layer's attention scores before the softmax.
struct RelativeBias {
    /// `[buckets, heads]`, as stored.
    table: Vec<f32>,
    /// Bucket of each relative position `key − query`, indexed by
    /// `key − query + longest − 1`.
    bucket_of: Vec<u16>,
    /// Longest sequence `bucket_of` covers.
    longest: usize,
    heads: usize,
}

impl RelativeBias {
    /// Hugging Face's `MPNetEncoder.relative_position_bucket` for one
    /// relative position (`key − query`), bidirectional: half the buckets
    /// for each sign, exact up to a quarter of them, logarithmic beyond.
    fn bucket(relative: i64, buckets: usize) -> u16 {
        let half = (buckets / 2) as i64;
        let n = -relative;
        let mut bucket = if n < 0 { half } else { 0 };
        let n = n.abs();
        let exact = half / 2;
        bucket += if n < exact {
            n
        } else {
            let scaled = ((n as f32 / exact as f32).ln() / (RELATIVE_MAX_DISTANCE as f32 / exact as f32).ln()
                * (half - exact) as f32) as i64;
            (exact + scaled).min(half - 1)
        };
        bucket as u16
    }

    fn new(table: Vec<f32>, buckets: usize, heads: usize, longest: usize) -> Self {
        let bucket_of = (0..2 * longest.max(1) - 1)
            .map(|index| Self::bucket(index as i64 - (longest as i64 - 1), buckets))
            .collect();
        Self { table, bucket_of, longest, heads }
    }

    /// Adds head `head`'s bias to a `[length, length]` score matrix.
    fn add(&self, scores: &mut [f32], length: usize, head: usize) {
        for (query, row) in scores.chunks_exact_mut(length).enumerate() {
            let first = self.longest - 1 - query;
            for (value, bucket) in row.iter_mut().zip(&self.bucket_of[first..first + length]) {
                *value += self.table[*bucket as usize * self.heads + head];
            }
        }
    }
}

/// What follows a dense layer's bias.
#[derive(Debug, Clone, Copy)]
enum Activation {
    None,
    Gelu,
}

/// Up to how many tokens a pass multiplies by dot products along the
/// weight's rows ([`kernels::dot_rows`]) instead of `gemm`, which reads
/// the `[out, in]` weight transposed. Measured on 2 cores: see BENCHMARKS,
/// "One `add` process".
const FEW_TOKENS: usize = 32;

/// Output rows per parallel task of the few-token multiply.
const ROW_BLOCK: usize = 96;

/// Most tokens in one forward pass of [`Bert::pooled_in_passes`]; bounds
/// activation memory (about 60 MB of buffers for MiniLM at this size,
/// 300 MB for MPNet).
const MAX_PASS_TOKENS: usize = 8_192;

/// A dense layer: its f32 weight as one or more `[part outputs, in]`
/// matrices (PyTorch's layout, read in place; the fused query/key/value
/// layer has three parts, whose outputs sit side by side), and once
/// converted, as one transposed `[in, out]` copy (`weight`, the fast layout
/// for `gemm`), its f16 column panels ([`kernels::pack_f16_panels`]) or
/// its int8 or bf16 (AMX) form.
struct Dense {
    parts: Vec<Floats>,
    weight: Floats,
    half: Option<Halves>,
    int8: Option<Int8Matrix>,
    bf16: Option<Bf16Matrix>,
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

/// A layout of the dense weights that is computed from the model's own
/// and kept in a file next to it ([`crate::kept`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// f32, each weight transposed to `[in, out]` ([`Bert::transpose_f32`]).
    TransposedF32,
    /// f16 column panels ([`Bert::pack_f16`]).
    PanelsF16,
}

struct Norm {
    gamma: Vec<f32>,
    beta: Vec<f32>,
}

struct Layer {
    qkv: Dense,
    attention_output: Dense,
    attention_norm: Norm,
    intermediate: Dense,
    output: Dense,
    output_norm: Norm,
}

/// The encoder.
pub struct Bert {
    word_embeddings: Floats,
    position_embeddings: Floats,
    /// Row of the position table for the first token (MPNet: the padding
    /// id + 1).
    position_offset: usize,
    /// MPNet's attention bias by relative position.
    relative_bias: Option<RelativeBias>,
    token_type_row: Vec<f32>,
    embedding_norm: Norm,
    layers: Vec<Layer>,
    hidden: usize,
    heads: usize,
    vocab: usize,
    max_positions: usize,
    eps: f32,
    /// Every product runs on the AMX unit (set with the bf16 weights).
    amx: bool,
    /// Buffers of the AMX path, kept from pass to pass: allocating ~15 KB
    /// per token afresh for every pass cost page faults worth a few percent
    /// of the time. A pass that finds them in use allocates its own.
    workspace: Mutex<AmxWorkspace>,
}

/// The AMX path's buffers: the f32 hidden states (`x`, `scratch`) and the
/// bf16 inputs of the multiplies (written by the step before, never by a
/// separate pass). The query/key/value and feed-forward products exist only
/// in bf16.
#[derive(Default)]
struct AmxWorkspace {
    x: Vec<f32>,
    scratch: Vec<f32>,
    /// f32 query/key/value and context rows, for attention in f32 (heads
    /// other than [`amx::HEAD_DIM`] wide, or MPNet's relative bias).
    qkv: Vec<f32>,
    context: Vec<f32>,
    x16: amx::Bf16Buffer,
    qkv16: amx::Bf16Buffer,
    context16: amx::Bf16Buffer,
    inner16: amx::Bf16Buffer,
}

fn values(vb: &Scope, shape: &[usize], name: &str) -> EmbedResult<Vec<f32>> {
    vb.get(shape, name)
}

/// Reads a PyTorch linear layer (`weight [out, in]`, in place).
fn dense(vb: &Scope, inputs: usize, outputs: usize) -> EmbedResult<Dense> {
    let weight = vb.floats(&[outputs, inputs], "weight")?;
    let bias = values(vb, &[outputs], "bias")?;
    Ok(Dense {
        parts: vec![weight],
        weight: Floats::from(Vec::new()),
        half: None,
        int8: None,
        bf16: None,
        bias,
        inputs,
        outputs,
    })
}

impl Dense {
    /// The weight as one `[in, out]` matrix (row-major), for the int8 and
    /// bf16 conversions.
    fn transposed(&self) -> Vec<f32> {
        let mut out = vec![0.0_f32; self.inputs * self.outputs];
        let part_outputs = self.outputs / self.parts.len().max(1);
        for (index, part) in self.parts.iter().enumerate() {
            weights::transpose(part, part_outputs, self.inputs, &mut out, self.outputs, index * part_outputs);
        }
        out
    }
}

/// A dense layer's AMX weights (the AMX path runs only after
/// [`Bert::pack_bf16`] packed every layer).
fn packed(dense: &Dense) -> &Bf16Matrix {
    dense.bf16.as_ref().expect("pack_bf16 packed every dense layer")
}

fn norm(vb: &Scope, size: usize) -> EmbedResult<Norm> {
    let gamma = values(vb, &[size], "weight").or_else(|_| values(vb, &[size], "gamma"))?;
    let beta = values(vb, &[size], "bias").or_else(|_| values(vb, &[size], "beta"))?;
    Ok(Norm { gamma, beta })
}

impl Bert {
    /// Reads the weights from `vb`.
    pub fn load(vb: Scope<'_>, config: &BertConfig) -> EmbedResult<Self> {
        if config.hidden_act != "gelu" {
            return Err(EmbedError::ModelInvalid(format!(
                "unsupported activation {:?}; only \"gelu\" is implemented",
                config.hidden_act
            )));
        }
        if !config.hidden_size.is_multiple_of(config.num_attention_heads) {
            return Err(EmbedError::ModelInvalid("hidden size is not a multiple of the head count".to_string()));
        }
        let mpnet = match config.model_type.as_str() {
            "bert" => false,
            "mpnet" => true,
            other => {
                return Err(EmbedError::ModelInvalid(format!(
                    "unsupported model type {other:?}; only \"bert\" and \"mpnet\" encoders are implemented"
                )));
            }
        };
        let prefix = if mpnet { "mpnet" } else { "bert" };
        let vb = if vb.contains("embeddings.word_embeddings.weight") { vb } else { vb.pp(prefix) };
        let hidden = config.hidden_size;
        let embeddings = vb.pp("embeddings");
        // Every input here has token type 0; MPNet has no token types.
        let token_type_row = if mpnet {
            vec![0.0; hidden]
        } else {
            values(&embeddings, &[config.type_vocab_size, hidden], "token_type_embeddings.weight")?[..hidden].to_vec()
        };
        let (query_key_value, attention_output, attention_norm) = if mpnet {
            (["attn.q", "attn.k", "attn.v"], "attn.o", "LayerNorm")
        } else {
            (["self.query", "self.key", "self.value"], "output.dense", "output.LayerNorm")
        };
        let position_offset = if mpnet { config.pad_token_id + 1 } else { 0 };
        let max_positions =
            config.max_position_embeddings.checked_sub(position_offset).filter(|&n| n > 0).ok_or_else(|| {
                EmbedError::ModelInvalid("config.json: no positions left after the padding id".to_string())
            })?;
        let relative_bias = if mpnet {
            let buckets = config.relative_attention_num_buckets;
            if buckets < 4 {
                return Err(EmbedError::ModelInvalid(format!(
                    "config.json: relative_attention_num_buckets {buckets} is too small for an MPNet encoder"
                )));
            }
            let table =
                values(&vb.pp("encoder"), &[buckets, config.num_attention_heads], "relative_attention_bias.weight")?;
            Some(RelativeBias::new(table, buckets, config.num_attention_heads, max_positions))
        } else {
            None
        };
        let layers = (0..config.num_hidden_layers)
            .map(|index| {
                let layer = vb.pp(&format!("encoder.layer.{index}"));
                let attention = layer.pp("attention");
                // Query, key and value make one [tokens, 3·hidden] output
                // (three multiplies, one per weight, side by side).
                let mut parts = Vec::with_capacity(3);
                let mut bias = Vec::with_capacity(3 * hidden);
                for name in query_key_value {
                    let scope = attention.pp(name);
                    parts.push(scope.floats(&[hidden, hidden], "weight")?);
                    bias.extend(values(&scope, &[hidden], "bias")?);
                }
                Ok(Layer {
                    qkv: Dense {
                        parts,
                        weight: Floats::from(Vec::new()),
                        half: None,
                        int8: None,
                        bf16: None,
                        bias,
                        inputs: hidden,
                        outputs: 3 * hidden,
                    },
                    attention_output: dense(&attention.pp(attention_output), hidden, hidden)?,
                    attention_norm: norm(&attention.pp(attention_norm), hidden)?,
                    intermediate: dense(&layer.pp("intermediate.dense"), hidden, config.intermediate_size)?,
                    output: dense(&layer.pp("output.dense"), config.intermediate_size, hidden)?,
                    output_norm: norm(&layer.pp("output.LayerNorm"), hidden)?,
                })
            })
            .collect::<EmbedResult<Vec<Layer>>>()?;
        // One row per token, anywhere in the table.
        let word_embeddings = embeddings.floats(&[config.vocab_size, hidden], "word_embeddings.weight")?;
        word_embeddings.expect_scattered_reads();
        Ok(Self {
            word_embeddings,
            position_embeddings: embeddings
                .floats(&[config.max_position_embeddings, hidden], "position_embeddings.weight")?,
            position_offset,
            relative_bias,
            token_type_row,
            embedding_norm: norm(&embeddings.pp("LayerNorm"), hidden)?,
            layers,
            hidden,
            heads: config.num_attention_heads,
            vocab: config.vocab_size,
            max_positions,
            eps: config.layer_norm_eps as f32,
            amx: false,
            workspace: Mutex::new(AmxWorkspace::default()),
        })
    }

    /// Copies every dense layer's weights transposed (`[in, out]`), the
    /// layout `gemm` multiplies fastest: five times faster on a short text
    /// than the weights in place, for 42 MB copied at load (about 40 ms on
    /// 2 cores). Frees nothing: the in-place weights are the file's.
    pub fn transpose_f32(&mut self) {
        self.layers.par_iter_mut().for_each(|layer| {
            for dense in [&mut layer.qkv, &mut layer.attention_output, &mut layer.intermediate, &mut layer.output] {
                dense.weight = Floats::from(dense.transposed());
                dense.parts = Vec::new();
            }
        });
    }

    /// Rounds every dense layer's weights to f16 in column panels
    /// ([`kernels::pack_f16_panels`]), which the forward pass then reads
    /// (the arithmetic stays f32): half the bytes of f32 to read for each
    /// text, vectors within cosine 0.9999 of f32's. Frees the f32 copies.
    pub fn pack_f16(&mut self) {
        self.layers.par_iter_mut().for_each(|layer| {
            for dense in [&mut layer.qkv, &mut layer.attention_output, &mut layer.intermediate, &mut layer.output] {
                let transposed = if dense.weight.is_empty() { dense.transposed() } else { dense.weight.to_vec() };
                dense.half = Some(Halves::from(kernels::pack_f16_panels(&transposed, dense.inputs, dense.outputs)));
                dense.parts = Vec::new();
                dense.weight = Floats::from(Vec::new());
            }
        });
    }

    /// The dense weights in `layout` (after [`Bert::make`] made them),
    /// named and shaped for [`Bert::use_kept`], to be written to a file.
    ///
    /// # Panics
    /// When the weights are not in that layout.
    pub fn kept_tensors(&self, layout: Layout) -> Vec<(String, Vec<usize>, Data<'_>)> {
        let mut tensors = Vec::with_capacity(self.layers.len() * 4);
        for (index, layer) in self.layers.iter().enumerate() {
            for (name, dense) in Self::dense_layers(layer) {
                let name = format!("layer.{index}.{name}");
                tensors.push(match layout {
                    Layout::TransposedF32 => {
                        assert!(!dense.weight.is_empty(), "transpose_f32 runs before kept_tensors");
                        (name, Self::kept_shape(dense, layout), Data::F32(&dense.weight))
                    }
                    Layout::PanelsF16 => {
                        let half = dense.half.as_deref().expect("pack_f16 runs before kept_tensors");
                        (name, Self::kept_shape(dense, layout), Data::F16(half))
                    }
                });
            }
        }
        tensors
    }

    /// A dense layer's tensor shape in a kept-weights file.
    fn kept_shape(dense: &Dense, layout: Layout) -> Vec<usize> {
        match layout {
            Layout::TransposedF32 => vec![dense.inputs, dense.outputs],
            Layout::PanelsF16 => vec![kernels::panels(dense.outputs), dense.inputs, kernels::PANEL],
        }
    }

    /// Computes the dense weights in `layout` ([`Bert::transpose_f32`] or
    /// [`Bert::pack_f16`]).
    pub fn make(&mut self, layout: Layout) {
        match layout {
            Layout::TransposedF32 => self.transpose_f32(),
            Layout::PanelsF16 => self.pack_f16(),
        }
    }

    /// Takes every dense layer's weights in `layout` from `root` (a file of
    /// [`Bert::kept_tensors`], mapped: read in place, nothing copied), as
    /// [`Bert::make`] would have computed them. Leaves the encoder
    /// unchanged when a tensor is missing or has another shape or type.
    ///
    /// # Errors
    /// When the file lacks a layer's tensor or has it in another shape or type.
    pub fn use_kept(&mut self, root: &Scope<'_>, layout: Layout) -> EmbedResult<()> {
        enum Found {
            F32(Floats),
            F16(Halves),
        }
        let mut found = Vec::with_capacity(self.layers.len() * 4);
        for (index, layer) in self.layers.iter().enumerate() {
            for (name, dense) in Self::dense_layers(layer) {
                let (name, shape) = (format!("layer.{index}.{name}"), Self::kept_shape(dense, layout));
                found.push(match layout {
                    Layout::TransposedF32 => Found::F32(root.floats(&shape, &name)?),
                    Layout::PanelsF16 => Found::F16(root.halves(&shape, &name)?),
                });
            }
        }
        let mut found = found.into_iter();
        for layer in &mut self.layers {
            for dense in [&mut layer.qkv, &mut layer.attention_output, &mut layer.intermediate, &mut layer.output] {
                match found.next() {
                    Some(Found::F32(weight)) => dense.weight = weight,
                    Some(Found::F16(half)) => dense.half = Some(half),
                    None => {}
                }
            }
        }
        Ok(())
    }

    /// A layer's dense layers with their names in a kept-weights file.
    fn dense_layers(layer: &Layer) -> [(&'static str, &Dense); 4] {
        [
            ("qkv", &layer.qkv),
            ("attention_output", &layer.attention_output),
            ("intermediate", &layer.intermediate),
            ("output", &layer.output),
        ]
    }

    /// Quantises every dense layer to int8 (per-column weights, per-token
    /// activations at run time). Attention stays f32. Frees the f32 weights.
    pub fn quantize_int8(&mut self) {
        self.layers.par_iter_mut().for_each(|layer| {
            for dense in [&mut layer.qkv, &mut layer.attention_output, &mut layer.intermediate, &mut layer.output] {
                dense.int8 = Some(Int8Matrix::quantize(&dense.transposed(), dense.inputs, dense.outputs));
                dense.parts = Vec::new();
            }
        });
    }

    /// Rounds every dense layer's weights to bf16 in the AMX tile layout
    /// (f32 accumulation); frees the f32 weights. From then on the forward
    /// pass runs every dense product on the AMX unit, and attention too
    /// when its heads are [`amx::HEAD_DIM`] wide and it has no relative
    /// bias (MiniLM); otherwise (MPNet) attention runs in f32 between them.
    /// The caller checks [`amx::available`] first.
    ///
    /// # Errors
    /// None today; kept for layouts the tile kernels cannot take.
    pub fn pack_bf16(&mut self) -> EmbedResult<()> {
        // The layers are independent: converted in parallel.
        self.layers.par_iter_mut().for_each(|layer| {
            for dense in [&mut layer.qkv, &mut layer.attention_output, &mut layer.intermediate, &mut layer.output] {
                dense.bf16 = Some(Bf16Matrix::pack(&dense.transposed(), dense.inputs, dense.outputs));
                dense.parts = Vec::new();
            }
        });
        self.amx = true;
        Ok(())
    }

    /// Hidden width.
    pub fn hidden_size(&self) -> usize {
        self.hidden
    }

    /// Longest sequence the position table allows.
    pub fn max_positions(&self) -> usize {
        self.max_positions
    }

    /// [`Bert::pooled`] over any number of rows, in passes of at most
    /// `MAX_PASS_TOKENS` tokens (a longer row makes a pass of its own), so
    /// memory stays flat however many texts are embedded.
    pub fn pooled_in_passes(&self, rows: &[Vec<u32>]) -> Vec<Vec<f32>> {
        let mut out = Vec::with_capacity(rows.len());
        let mut start = 0;
        while start < rows.len() {
            let mut end = start;
            let mut tokens = 0;
            while end < rows.len() && (end == start || tokens + rows[end].len() <= MAX_PASS_TOKENS) {
                tokens += rows[end].len();
                end += 1;
            }
            let pass: Vec<&[u32]> = rows[start..end].iter().map(Vec::as_slice).collect();
            out.extend(self.pooled(&pass));
            start = end;
        }
        out
    }

    /// Mean-pooled last hidden states of each row of token ids, in order.
    /// Rows must be non-empty, no longer than [`Bert::max_positions`], with
    /// ids below the vocabulary size (the tokenizer guarantees all three).
    pub fn pooled(&self, rows: &[&[u32]]) -> Vec<Vec<f32>> {
        let h = self.hidden;
        let lengths: Vec<usize> = rows.iter().map(|row| row.len().clamp(1, self.max_positions)).collect();
        let tokens: usize = lengths.iter().sum();
        let mut offsets = Vec::with_capacity(rows.len());
        let mut start = 0;
        for length in &lengths {
            offsets.push(start);
            start += length;
        }

        if self.amx {
            // A pass that finds the buffers in use (a concurrent caller)
            // works in its own.
            let mut fresh = AmxWorkspace::default();
            let mut guard = self.workspace.try_lock().ok();
            let workspace = guard.as_deref_mut().unwrap_or(&mut fresh);
            let mut x = std::mem::take(&mut workspace.x);
            x.resize(tokens * h, 0.0);
            self.embed_tokens(rows, &lengths, &offsets, &mut x);
            self.encode_amx(&mut x, tokens, &lengths, &offsets, workspace);
            let pooled = Self::mean_pool(&x, &lengths, &offsets, h);
            workspace.x = x;
            return pooled;
        }
        let mut x = vec![0.0_f32; tokens * h];
        self.embed_tokens(rows, &lengths, &offsets, &mut x);

        let threads = rayon::current_num_threads();
        let intermediate = self.layers.first().map_or(0, |layer| layer.intermediate.outputs);
        let mut qkv = vec![0.0_f32; tokens * 3 * h];
        let mut context = vec![0.0_f32; tokens * h];
        let mut scratch = vec![0.0_f32; tokens * h];
        let mut inner = vec![0.0_f32; tokens * intermediate];
        for layer in &self.layers {
            self.dense_then(&x, tokens, &layer.qkv, &mut qkv, threads, Activation::None);
            self.attention(&qkv, &lengths, &offsets, &mut context);

            self.dense(&context, tokens, &layer.attention_output, &mut scratch, threads);
            Self::residual_norm(&mut scratch, &x, &layer.attention_output.bias, &layer.attention_norm, h, self.eps);
            std::mem::swap(&mut x, &mut scratch);

            self.dense_then(&x, tokens, &layer.intermediate, &mut inner, threads, Activation::Gelu);
            self.dense(&inner, tokens, &layer.output, &mut scratch, threads);
            Self::residual_norm(&mut scratch, &x, &layer.output.bias, &layer.output_norm, h, self.eps);
            std::mem::swap(&mut x, &mut scratch);
        }

        Self::mean_pool(&x, &lengths, &offsets, h)
    }

    /// The embedding layer: word + position + token-type rows, layer-normed,
    /// into `x` (`[tokens, hidden]`).
    fn embed_tokens(&self, rows: &[&[u32]], lengths: &[usize], offsets: &[usize], x: &mut [f32]) {
        let h = self.hidden;
        for ((row, &length), &offset) in rows.iter().zip(lengths).zip(offsets) {
            for position in 0..length {
                let id = row.get(position).map_or(0, |&id| (id as usize).min(self.vocab - 1));
                let out = &mut x[(offset + position) * h..(offset + position + 1) * h];
                let word = &self.word_embeddings[id * h..(id + 1) * h];
                let row = self.position_offset + position;
                let pos = &self.position_embeddings[row * h..(row + 1) * h];
                for (((o, w), p), t) in out.iter_mut().zip(word).zip(pos).zip(&self.token_type_row) {
                    *o = w + p + t;
                }
            }
        }
        let norm_rows = 64 * h;
        x.par_chunks_mut(norm_rows).for_each(|chunk| {
            kernels::layer_norm(chunk, &self.embedding_norm.gamma, &self.embedding_norm.beta, self.eps)
        });
    }

    /// The mean of each text's rows.
    fn mean_pool(x: &[f32], lengths: &[usize], offsets: &[usize], h: usize) -> Vec<Vec<f32>> {
        lengths
            .iter()
            .zip(offsets)
            .map(|(&length, &offset)| {
                let mut mean = vec![0.0_f32; h];
                for token in x[offset * h..(offset + length) * h].chunks_exact(h) {
                    for (m, v) in mean.iter_mut().zip(token) {
                        *m += v;
                    }
                }
                for m in &mut mean {
                    *m /= length as f32;
                }
                mean
            })
            .collect()
    }

    /// The encoder layers on the AMX unit. Each multiply's epilogue (bias,
    /// GELU, residual + layer norm) writes the bf16 input of the next one
    /// while its rows are in cache, so no separate pass runs; attention
    /// reads bf16 rows and writes bf16 context rows.
    fn encode_amx(&self, x: &mut Vec<f32>, tokens: usize, lengths: &[usize], offsets: &[usize], ws: &mut AmxWorkspace) {
        let h = self.hidden;
        let threads = rayon::current_num_threads();
        let Some(first) = self.layers.first() else { return };
        let (h_stride, inner_stride) = (packed(&first.qkv).input_stride(), packed(&first.output).input_stride());
        let padded = amx::padded_rows(tokens);
        ws.scratch.resize(tokens * h, 0.0);
        ws.x16.reset(padded * h_stride);
        // Attention reads each text's rows up to its length rounded to 32,
        // so the last text needs spare rows (finite: zeros or old values).
        ws.qkv16.reset((padded + 32) * 3 * h);
        ws.context16.reset(padded * h_stride);
        ws.inner16.reset(padded * inner_stride);
        let rows = 64;
        ws.x16.as_mut_slice().par_chunks_mut(rows * h_stride).zip(x.par_chunks(rows * h)).for_each(|(to, from)| {
            amx::convert_rows(from, h, to, h_stride);
        });
        let scale = 1.0 / (amx::HEAD_DIM as f32).sqrt();
        let amx_attention = self.relative_bias.is_none() && h / self.heads == amx::HEAD_DIM;
        if !amx_attention {
            ws.qkv.resize(tokens * 3 * h, 0.0);
            ws.context.resize(tokens * h, 0.0);
        }
        for layer in &self.layers {
            if amx_attention {
                amx::matmul_then(
                    ws.x16.as_slice(),
                    tokens,
                    packed(&layer.qkv),
                    None,
                    threads,
                    Epilogue::Bias(&layer.qkv.bias),
                    ws.qkv16.as_mut_slice(),
                    3 * h,
                );
            } else {
                // Products on the AMX unit, attention in f32 (with the
                // relative bias), its context rounded to bf16 for the next
                // product.
                amx::matmul(ws.x16.as_slice(), tokens, packed(&layer.qkv), &mut ws.qkv, threads);
                ws.qkv.par_chunks_mut(64 * 3 * h).for_each(|chunk| kernels::add_bias(chunk, &layer.qkv.bias));
                self.attention(&ws.qkv, lengths, offsets, &mut ws.context);
                ws.context16
                    .as_mut_slice()
                    .par_chunks_mut(64 * h_stride)
                    .zip(ws.context.par_chunks(64 * h))
                    .for_each(|(to, from)| amx::convert_rows(from, h, to, h_stride));
            }
            if amx_attention {
                let qkv16 = ws.qkv16.as_slice();
                let mut slices: Vec<&mut [u16]> = Vec::with_capacity(lengths.len());
                let mut rest = &mut ws.context16.as_mut_slice()[..tokens * h];
                for &length in lengths {
                    let (head, tail) = rest.split_at_mut(length * h);
                    slices.push(head);
                    rest = tail;
                }
                slices.into_par_iter().zip(lengths.par_iter().zip(offsets.par_iter())).for_each_init(
                    amx::AttentionScratch::default,
                    |scratch, (out, (&length, &offset))| {
                        let text = &qkv16[offset * 3 * h..(offset + amx::attention_rows(length)) * 3 * h];
                        amx::attention(text, length, self.heads, scale, out, scratch);
                    },
                );
            }
            amx::matmul_then(
                ws.context16.as_slice(),
                tokens,
                packed(&layer.attention_output),
                Some(&mut ws.scratch),
                threads,
                Self::residual_norm_epilogue(x, &layer.attention_output.bias, &layer.attention_norm, self.eps),
                ws.x16.as_mut_slice(),
                h_stride,
            );
            std::mem::swap(x, &mut ws.scratch);

            amx::matmul_then(
                ws.x16.as_slice(),
                tokens,
                packed(&layer.intermediate),
                None,
                threads,
                Epilogue::BiasGelu(&layer.intermediate.bias),
                ws.inner16.as_mut_slice(),
                inner_stride,
            );
            amx::matmul_then(
                ws.inner16.as_slice(),
                tokens,
                packed(&layer.output),
                Some(&mut ws.scratch),
                threads,
                Self::residual_norm_epilogue(x, &layer.output.bias, &layer.output_norm, self.eps),
                ws.x16.as_mut_slice(),
                h_stride,
            );
            std::mem::swap(x, &mut ws.scratch);
        }
    }

    /// The epilogue `layer_norm(out + residual + bias)` of the AMX path.
    fn residual_norm_epilogue<'a>(residual: &'a [f32], bias: &'a [f32], norm: &'a Norm, eps: f32) -> Epilogue<'a> {
        Epilogue::ResidualNorm { residual, bias, gamma: &norm.gamma, beta: &norm.beta, eps }
    }

    /// `out = activation(input · weight + bias)`; the int8 path does the
    /// bias and activation while each row is still in cache.
    fn dense_then(
        &self,
        input: &[f32],
        tokens: usize,
        layer: &Dense,
        out: &mut [f32],
        threads: usize,
        act: Activation,
    ) {
        if let Some(int8) = &layer.int8 {
            let epilogue = match act {
                Activation::None => kernels::Epilogue::Bias(&layer.bias),
                Activation::Gelu => kernels::Epilogue::BiasGelu(&layer.bias),
            };
            kernels::int8_matmul_then(input, tokens, int8, out, threads, epilogue);
            return;
        }
        self.dense(input, tokens, layer, out, threads);
        let width = layer.outputs;
        match act {
            Activation::None => out.par_chunks_mut(64 * width).for_each(|chunk| kernels::add_bias(chunk, &layer.bias)),
            Activation::Gelu => out.par_chunks_mut(64 * width).for_each(|chunk| kernels::bias_gelu(chunk, &layer.bias)),
        }
    }

    /// `out[tokens, outputs] = input[tokens, inputs] · weight` (bias added
    /// by the caller), from the f16 panels when the layer has them (one
    /// short text: half the bytes to read), the transposed copy when it has one,
    /// else from the `[part outputs, in]` weights in place: dot products
    /// along their rows for a few tokens, `gemm` reading them transposed
    /// for more (each part writes its own columns of `out`).
    fn dense(&self, input: &[f32], tokens: usize, layer: &Dense, out: &mut [f32], threads: usize) {
        if let Some(half) = &layer.half {
            let (inputs, outputs) = (layer.inputs, layer.outputs);
            kernels::matmul_f16(
                &input[..tokens * inputs],
                tokens,
                inputs,
                half,
                outputs,
                &mut out[..tokens * outputs],
                threads,
            );
            return;
        }
        if let Some(int8) = &layer.int8 {
            kernels::int8_matmul(input, tokens, int8, out, threads);
            return;
        }
        if !layer.weight.is_empty() {
            matmul(
                input,
                View::dense(0, tokens, layer.inputs),
                &layer.weight,
                View::dense(0, layer.inputs, layer.outputs),
                out,
                View::dense(0, tokens, layer.outputs),
                1.0,
                false,
                threads,
            );
            return;
        }
        let part_outputs = layer.outputs / layer.parts.len().max(1);
        if tokens <= FEW_TOKENS {
            // Blocks of output rows in parallel, each dotted with every
            // token, then written into their columns.
            let mut by_output = vec![0.0_f32; layer.outputs * tokens];
            let x = &input[..tokens * layer.inputs];
            for (part, values) in layer.parts.iter().zip(by_output.chunks_mut(part_outputs * tokens)) {
                values
                    .par_chunks_mut(ROW_BLOCK * tokens)
                    .zip(part.par_chunks(ROW_BLOCK * layer.inputs))
                    .for_each(|(values, block)| kernels::dot_rows(x, layer.inputs, block, values));
            }
            for (o, values) in by_output.chunks_exact(tokens).enumerate() {
                for (t, value) in values.iter().enumerate() {
                    out[t * layer.outputs + o] = *value;
                }
            }
            return;
        }
        for (index, part) in layer.parts.iter().enumerate() {
            matmul(
                input,
                View::dense(0, tokens, layer.inputs),
                part,
                View { offset: 0, rows: layer.inputs, cols: part_outputs, row_stride: 1, col_stride: layer.inputs },
                out,
                View {
                    offset: index * part_outputs,
                    rows: tokens,
                    cols: part_outputs,
                    row_stride: layer.outputs,
                    col_stride: 1,
                },
                1.0,
                false,
                threads,
            );
        }
    }

    fn residual_norm(x: &mut [f32], residual: &[f32], bias: &[f32], norm: &Norm, h: usize, eps: f32) {
        x.par_chunks_mut(64 * h)
            .zip(residual.par_chunks(64 * h))
            .for_each(|(chunk, res)| kernels::add_bias_residual_norm(chunk, res, bias, &norm.gamma, &norm.beta, eps));
    }

    /// Self-attention of every text over its own tokens; writes `context`.
    fn attention(&self, qkv: &[f32], lengths: &[usize], offsets: &[usize], context: &mut [f32]) {
        let h = self.hidden;
        let head_dim = h / self.heads;
        let scale = 1.0 / (head_dim as f32).sqrt();
        let mut slices: Vec<&mut [f32]> = Vec::with_capacity(lengths.len());
        let mut rest = context;
        for &length in lengths {
            let (head, tail) = rest.split_at_mut(length * h);
            slices.push(head);
            rest = tail;
        }
        slices.into_par_iter().zip(lengths.par_iter().zip(offsets.par_iter())).for_each(|(out, (&length, &offset))| {
            let mut scores = vec![0.0_f32; length * length];
            for head in 0..self.heads {
                let q = View {
                    offset: offset * 3 * h + head * head_dim,
                    rows: length,
                    cols: head_dim,
                    row_stride: 3 * h,
                    col_stride: 1,
                };
                // Kᵀ: element (d, j) is dimension d of token j.
                let k_t = View {
                    offset: offset * 3 * h + h + head * head_dim,
                    rows: head_dim,
                    cols: length,
                    row_stride: 1,
                    col_stride: 3 * h,
                };
                matmul(qkv, q, qkv, k_t, &mut scores, View::dense(0, length, length), scale, false, 1);
                if let Some(bias) = &self.relative_bias {
                    bias.add(&mut scores, length, head);
                }
                kernels::softmax_rows(&mut scores, length);
                let v = View {
                    offset: offset * 3 * h + 2 * h + head * head_dim,
                    rows: length,
                    cols: head_dim,
                    row_stride: 3 * h,
                    col_stride: 1,
                };
                let dst = View { offset: head * head_dim, rows: length, cols: head_dim, row_stride: h, col_stride: 1 };
                matmul(&scores, View::dense(0, length, length), qkv, v, out, dst, 1.0, false, 1);
            }
        });
    }
}

/// Loads weights from safetensors bytes.
pub fn load_bert(weights: Vec<u8>, config: &BertConfig) -> EmbedResult<Bert> {
    Weights::from_bytes(weights, "model.safetensors")?.with(|root| Bert::load(root, config))
}

#[cfg(test)]
mod tests {
    use super::RelativeBias;

    /// Hugging Face's buckets for 32 buckets: keys before the query in
    /// 0–15, after it in 16–31; exact up to 7 positions, logarithmic to
    /// 128, the last bucket beyond.
    #[test]
    fn relative_position_buckets_follow_hugging_face() {
        let bucket = |relative| RelativeBias::bucket(relative, 32);
        assert_eq!([bucket(0), bucket(-1), bucket(-7), bucket(1), bucket(7)], [0, 1, 7, 17, 23]);
        // 8 + ⌊ln(n / 8) / ln(16) · 8⌋, capped at 15.
        assert_eq!(
            [bucket(-8), bucket(-11), bucket(-12), bucket(-100), bucket(-128), bucket(-500)],
            [8, 8, 9, 15, 15, 15]
        );
        assert_eq!([bucket(8), bucket(12), bucket(1000)], [24, 25, 31]);

        // The table added to scores: row `query`, column `key`.
        let table: Vec<f32> = (0..32).map(|b| b as f32).collect();
        let bias = RelativeBias::new(table, 32, 1, 16);
        let mut scores = vec![0.0_f32; 9];
        bias.add(&mut scores, 3, 0);
        assert_eq!(scores, [0.0, 17.0, 18.0, 1.0, 0.0, 17.0, 2.0, 1.0, 0.0]);
    }
}
