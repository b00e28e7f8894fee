//! A BERT encoder on candle tensors, enough for all-MiniLM-L6-v2.
//!
//! Written here rather than taken from candle-transformers to keep the
//! dependency small and the hot path in view: embeddings → `n` layers of
//! self-attention and feed-forward with post-layer-norm → last hidden state.
//! Weight names are the Hugging Face ones (`embeddings.word_embeddings.weight`,
//! `encoder.layer.{i}.attention.self.query.weight`, …), with or without a
//! `bert.` prefix. Pooling and normalisation belong to the caller.

use candle_core::{D, DType, Device, Module, Tensor};
use candle_nn::{Embedding, LayerNorm, Linear, VarBuilder};
use serde::Deserialize;

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
    /// Token-type vocabulary.
    pub type_vocab_size: usize,
    /// Layer-norm epsilon.
    pub layer_norm_eps: f64,
    /// Activation; only "gelu" (exact, erf) is supported.
    pub hidden_act: String,
}

struct Layer {
    query: Linear,
    key: Linear,
    value: Linear,
    attention_output: Linear,
    attention_norm: LayerNorm,
    intermediate: Linear,
    output: Linear,
    output_norm: LayerNorm,
}

/// The encoder.
pub struct Bert {
    word_embeddings: Embedding,
    position_embeddings: Tensor,
    token_type_row: Tensor,
    embedding_norm: LayerNorm,
    layers: Vec<Layer>,
    heads: usize,
    head_dim: usize,
    hidden: usize,
}

fn linear(vb: &VarBuilder, name: &str, input: usize, output: usize) -> candle_core::Result<Linear> {
    candle_nn::linear(input, output, vb.pp(name))
}

fn layer_norm(vb: &VarBuilder, name: &str, size: usize, eps: f64) -> candle_core::Result<LayerNorm> {
    candle_nn::layer_norm(size, eps, vb.pp(name))
}

impl Bert {
    /// Builds the encoder from weights in `vb`.
    pub fn load(vb: VarBuilder, config: &BertConfig) -> candle_core::Result<Self> {
        if config.hidden_act != "gelu" {
            candle_core::bail!("unsupported activation {:?}; only \"gelu\" is implemented", config.hidden_act);
        }
        let vb = if vb.contains_tensor("embeddings.word_embeddings.weight") { vb } else { vb.pp("bert") };
        let hidden = config.hidden_size;
        let eps = config.layer_norm_eps;
        let embeddings = vb.pp("embeddings");
        let word_embeddings = candle_nn::embedding(config.vocab_size, hidden, embeddings.pp("word_embeddings"))?;
        let position_embeddings =
            embeddings.get((config.max_position_embeddings, hidden), "position_embeddings.weight")?;
        let token_type = embeddings.get((config.type_vocab_size, hidden), "token_type_embeddings.weight")?;
        // Every input here has token type 0, so its embedding is one row.
        let token_type_row = token_type.get(0)?;
        let embedding_norm = layer_norm(&embeddings, "LayerNorm", hidden, eps)?;
        let mut layers = Vec::with_capacity(config.num_hidden_layers);
        for index in 0..config.num_hidden_layers {
            let layer = vb.pp(format!("encoder.layer.{index}"));
            let attention = layer.pp("attention");
            layers.push(Layer {
                query: linear(&attention, "self.query", hidden, hidden)?,
                key: linear(&attention, "self.key", hidden, hidden)?,
                value: linear(&attention, "self.value", hidden, hidden)?,
                attention_output: linear(&attention, "output.dense", hidden, hidden)?,
                attention_norm: layer_norm(&attention, "output.LayerNorm", hidden, eps)?,
                intermediate: linear(&layer, "intermediate.dense", hidden, config.intermediate_size)?,
                output: linear(&layer, "output.dense", config.intermediate_size, hidden)?,
                output_norm: layer_norm(&layer, "output.LayerNorm", hidden, eps)?,
            });
        }
        let heads = config.num_attention_heads;
        Ok(Self {
            word_embeddings,
            position_embeddings,
            token_type_row,
            embedding_norm,
            layers,
            heads,
            head_dim: hidden / heads,
            hidden,
        })
    }

    /// Hidden width.
    pub fn hidden_size(&self) -> usize {
        self.hidden
    }

    /// Runs the encoder. `input_ids` is `[batch, seq]` (u32), `mask` is
    /// `[batch, seq]` (f32, 1 for tokens, 0 for padding). Returns the last
    /// hidden state `[batch, seq, hidden]`.
    pub fn forward(&self, input_ids: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
        let (batch, seq) = input_ids.dims2()?;
        let positions = self.position_embeddings.narrow(0, 0, seq)?;
        let mut x =
            self.word_embeddings.forward(input_ids)?.broadcast_add(&positions)?.broadcast_add(&self.token_type_row)?;
        x = self.embedding_norm.forward(&x)?;
        // Additive attention bias: 0 for tokens, a large negative for padding.
        let bias = ((mask.ones_like()? - mask)? * -1.0e4)?.reshape((batch, 1, 1, seq))?;
        let scale = 1.0 / (self.head_dim as f64).sqrt();
        for layer in &self.layers {
            let split = |t: Tensor| -> candle_core::Result<Tensor> {
                t.reshape((batch, seq, self.heads, self.head_dim))?.transpose(1, 2)?.contiguous()
            };
            let q = split(layer.query.forward(&x)?)?;
            let k = split(layer.key.forward(&x)?)?;
            let v = split(layer.value.forward(&x)?)?;
            let scores = (q.matmul(&k.t()?)? * scale)?.broadcast_add(&bias)?;
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            let context = probs.matmul(&v)?.transpose(1, 2)?.reshape((batch, seq, self.hidden))?;
            let attended = layer.attention_output.forward(&context)?;
            x = layer.attention_norm.forward(&(attended + &x)?)?;
            let inner = layer.intermediate.forward(&x)?.gelu_erf()?;
            let out = layer.output.forward(&inner)?;
            x = layer.output_norm.forward(&(out + &x)?)?;
        }
        Ok(x)
    }
}

/// Mean of the hidden states over the unmasked positions: `[batch, hidden]`.
pub fn mean_pool(hidden: &Tensor, mask: &Tensor) -> candle_core::Result<Tensor> {
    let mask3 = mask.unsqueeze(D::Minus1)?;
    let summed = hidden.broadcast_mul(&mask3)?.sum(1)?;
    let counts = mask.sum_keepdim(1)?.clamp(1e-9, f64::MAX)?;
    summed.broadcast_div(&counts)
}

/// Builds `[batch, seq]` id and mask tensors from rows of token ids, padding
/// with id 0 to the longest row.
pub fn batch_tensors(rows: &[Vec<u32>], device: &Device) -> candle_core::Result<(Tensor, Tensor)> {
    let seq = rows.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let mut ids = Vec::with_capacity(rows.len() * seq);
    let mut mask = Vec::with_capacity(rows.len() * seq);
    for row in rows {
        ids.extend_from_slice(row);
        mask.extend(std::iter::repeat_n(1.0_f32, row.len()));
        ids.extend(std::iter::repeat_n(0, seq - row.len()));
        mask.extend(std::iter::repeat_n(0.0_f32, seq - row.len()));
    }
    let ids = Tensor::from_vec(ids, (rows.len(), seq), device)?;
    let mask = Tensor::from_vec(mask, (rows.len(), seq), device)?.to_dtype(DType::F32)?;
    Ok((ids, mask))
}
