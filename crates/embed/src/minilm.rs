//! all-MiniLM-L6-v2 in-process: tokenize, encode, mean-pool, normalise.
//!
//! Matches the sentence-transformers model (and ChromaDB's ONNX function
//! the Python MemPalace uses): inputs truncated at 256 tokens, mean pooling
//! over the attention mask, L2 normalisation. Texts are sorted by token
//! count and batched so each batch pads to nearly its own length; batches
//! are capped by a token budget so memory stays flat.

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use tokenizers::{PaddingParams, Tokenizer, TruncationParams};

use mempalace_core::vector::normalize;

use crate::bert::{Bert, BertConfig, batch_tensors, mean_pool};
use crate::files::{MINILM_ID, check_minilm};
use crate::{EmbedError, EmbedResult, Embedder};

/// Longest input in tokens, [CLS] and [SEP] included (sentence-transformers'
/// `max_seq_length` for this model).
pub const MAX_TOKENS: usize = 256;

/// Most texts in one forward pass.
const MAX_BATCH_ROWS: usize = 32;
/// Most (padded) tokens in one forward pass; bounds activation memory.
const MAX_BATCH_TOKENS: usize = 32 * 128;

/// The MiniLM encoder with its tokenizer.
pub struct MiniLm {
    bert: Bert,
    tokenizer: Tokenizer,
    device: Device,
}

fn inference(error: impl std::fmt::Display) -> EmbedError {
    EmbedError::Inference(error.to_string())
}

/// Loads a tokenizer.json, truncating at `max_tokens` and not padding (the
/// file ships with fixed padding to 128, which we do per batch instead).
pub fn load_tokenizer(path: &Path, max_tokens: usize) -> EmbedResult<Tokenizer> {
    let mut tokenizer =
        Tokenizer::from_file(path).map_err(|error| EmbedError::ModelInvalid(format!("{}: {error}", path.display())))?;
    tokenizer
        .with_truncation(Some(TruncationParams { max_length: max_tokens, ..TruncationParams::default() }))
        .map_err(|error| EmbedError::ModelInvalid(format!("truncation: {error}")))?;
    tokenizer.with_padding(None::<PaddingParams>);
    Ok(tokenizer)
}

impl MiniLm {
    /// Loads the model from a folder holding model.safetensors,
    /// tokenizer.json and config.json.
    pub fn load(folder: &Path) -> EmbedResult<Self> {
        check_minilm(folder)?;
        let config_text = std::fs::read_to_string(folder.join("config.json"))
            .map_err(|error| EmbedError::ModelMissing(format!("config.json: {error}")))?;
        let config: BertConfig = serde_json::from_str(&config_text)
            .map_err(|error| EmbedError::ModelInvalid(format!("config.json: {error}")))?;
        let weights = std::fs::read(folder.join("model.safetensors"))
            .map_err(|error| EmbedError::ModelMissing(format!("model.safetensors: {error}")))?;
        let device = Device::Cpu;
        let vb = VarBuilder::from_buffered_safetensors(weights, DType::F32, &device)
            .map_err(|error| EmbedError::ModelInvalid(format!("model.safetensors: {error}")))?;
        let bert = Bert::load(vb, &config).map_err(|error| EmbedError::ModelInvalid(error.to_string()))?;
        let tokenizer = load_tokenizer(&folder.join("tokenizer.json"), MAX_TOKENS)?;
        Ok(Self { bert, tokenizer, device })
    }

    /// Token ids of each text, [CLS] … [SEP], truncated.
    pub fn tokenize(&self, texts: &[&str]) -> EmbedResult<Vec<Vec<u32>>> {
        let encodings = self.tokenizer.encode_batch_fast(texts.to_vec(), true).map_err(inference)?;
        Ok(encodings.into_iter().map(|encoding| encoding.get_ids().to_vec()).collect())
    }

    /// The tokenizer (the static model reuses it).
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// Hidden width.
    pub fn hidden_size(&self) -> usize {
        self.bert.hidden_size()
    }

    /// Mean-pooled, unnormalised vectors of token-id rows, computed in
    /// length-sorted batches; returned in input order.
    pub fn pooled(&self, rows: &[Vec<u32>]) -> EmbedResult<Vec<Vec<f32>>> {
        self.pooled_with_batch(rows, MAX_BATCH_ROWS)
    }

    /// [`MiniLm::pooled`] with at most `max_rows` rows per forward pass.
    pub fn pooled_with_batch(&self, rows: &[Vec<u32>], max_rows: usize) -> EmbedResult<Vec<Vec<f32>>> {
        let mut order: Vec<usize> = (0..rows.len()).collect();
        order.sort_by_key(|&index| rows[index].len());
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); rows.len()];
        let mut start = 0;
        while start < order.len() {
            // Rows are sorted by length, so the last row of a batch sets its width.
            let mut end = start + 1;
            while end < order.len()
                && end - start < max_rows
                && (end - start + 1) * rows[order[end]].len() <= MAX_BATCH_TOKENS
            {
                end += 1;
            }
            let batch: Vec<Vec<u32>> = order[start..end].iter().map(|&index| rows[index].clone()).collect();
            let vectors = self.forward_pooled(&batch)?;
            for (&index, vector) in order[start..end].iter().zip(vectors) {
                out[index] = vector;
            }
            start = end;
        }
        Ok(out)
    }

    fn forward_pooled(&self, batch: &[Vec<u32>]) -> EmbedResult<Vec<Vec<f32>>> {
        let (ids, mask) = batch_tensors(batch, &self.device).map_err(inference)?;
        let hidden = self.bert.forward(&ids, &mask).map_err(inference)?;
        let pooled: Tensor = mean_pool(&hidden, &mask).map_err(inference)?;
        pooled.to_vec2::<f32>().map_err(inference)
    }
}

impl Embedder for MiniLm {
    fn model_id(&self) -> &str {
        MINILM_ID
    }

    fn dim(&self) -> usize {
        self.bert.hidden_size()
    }

    fn embed_batch(&self, texts: &[&str]) -> EmbedResult<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let rows = self.tokenize(texts)?;
        let mut vectors = self.pooled(&rows)?;
        for vector in &mut vectors {
            normalize(vector);
        }
        Ok(vectors)
    }
}
