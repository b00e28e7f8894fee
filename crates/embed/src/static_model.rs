//! A static embedding model distilled from MiniLM, and its inference.
//!
//! Distillation follows model2vec (MinishLab): every vocabulary token is run
//! through the transformer alone, as `[CLS] token [SEP]`, and mean-pooled
//! over the three positions; the token vectors are reduced with PCA (256
//! dimensions by default), and each row is weighted by a SIF weight from its
//! Zipf rank (the vocabulary id order): `w = a / (a + p)`, with
//! `p = (1/(rank+2)) / Σ_{j=2}^{N+1} 1/j` and `a = 1e-4`. A text's vector is
//! the mean of its tokens' rows (no special tokens, unknown tokens dropped,
//! at most 512 tokens), L2-normalised. Embedding is a lookup and a sum:
//! thousands of times faster than the transformer, at some cost in quality.

use std::path::Path;

use mempalace_core::vector::normalize;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::files::{MINILM_ID, MINILM_SAFETENSORS_SHA256};
use crate::minilm::MiniLm;
use crate::pca::Pca;
use crate::wordpiece::WordPiece;
use crate::{EmbedError, EmbedResult, Embedder};

/// Default output width (model2vec's default `pca_dims`).
pub const DEFAULT_DIMS: usize = 256;
/// SIF coefficient (model2vec's default).
pub const SIF_COEFFICIENT: f64 = 1e-4;
/// Longest input in tokens.
pub const MAX_TOKENS: usize = 512;
/// Vocabulary ids per call while distilling (each row is three tokens).
const DISTILL_BATCH: usize = 2_048;

/// `config.json` of a static model folder.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StaticConfig {
    /// Id stored with its vectors.
    pub model_id: String,
    /// Vector width.
    pub dim: usize,
    /// Rows in the table (the tokenizer's vocabulary).
    pub vocab_size: usize,
    /// The transformer it was distilled from.
    pub source_model: String,
    /// SHA-256 of that transformer's weights.
    pub source_sha256: String,
    /// SIF coefficient used.
    pub sif_coefficient: f64,
    /// Share of the token vectors' variance the kept components explain.
    pub explained_variance: f64,
}

/// The model id of a static model of `dims` dimensions.
pub fn static_model_id(dims: usize) -> String {
    format!("{MINILM_ID}-static-d{dims}")
}

/// A token-vector table with its tokenizer.
pub struct StaticModel {
    /// In place in the mapped file: a text reads only its tokens' rows.
    table: crate::weights::Floats,
    config: StaticConfig,
    tokenizer: WordPiece,
}

impl StaticModel {
    /// Loads a folder written by [`distill`].
    pub fn load(folder: &Path) -> EmbedResult<Self> {
        let missing = |name: &str| {
            EmbedError::ModelMissing(format!(
                "{} is missing; run `mempalace model distill`",
                folder.join(name).display()
            ))
        };
        let config_text = std::fs::read_to_string(folder.join("config.json")).map_err(|_| missing("config.json"))?;
        let config: StaticConfig = serde_json::from_str(&config_text)
            .map_err(|error| EmbedError::ModelInvalid(format!("static config.json: {error}")))?;
        if !folder.join("model.safetensors").is_file() {
            return Err(missing("model.safetensors"));
        }
        let weights = crate::weights::Weights::read(&folder.join("model.safetensors"))?;
        let table = weights.with(|root| {
            if !root.contains("embeddings") {
                return Err(EmbedError::ModelInvalid("static model.safetensors has no `embeddings`".to_string()));
            }
            root.floats(&[config.vocab_size, config.dim], "embeddings")
        })?;
        if !folder.join("tokenizer.json").is_file() {
            return Err(missing("tokenizer.json"));
        }
        let tokenizer = WordPiece::from_tokenizer_json(&folder.join("tokenizer.json"))?;
        Ok(Self { table, config, tokenizer })
    }

    /// The folder's configuration.
    pub fn config(&self) -> &StaticConfig {
        &self.config
    }

    fn embed_ids(&self, ids: &[u32]) -> Vec<f32> {
        let dim = self.config.dim;
        let mut sum = vec![0.0_f32; dim];
        let mut count = 0_usize;
        for &id in ids {
            if id == self.tokenizer.unk_id() {
                continue;
            }
            let start = id as usize * dim;
            let Some(row) = self.table.get(start..start + dim) else { continue };
            for (s, x) in sum.iter_mut().zip(row) {
                *s += x;
            }
            count += 1;
        }
        if count > 0 {
            normalize(&mut sum);
        }
        sum
    }
}

impl Embedder for StaticModel {
    fn model_id(&self) -> &str {
        &self.config.model_id
    }

    fn dim(&self) -> usize {
        self.config.dim
    }

    fn embed_batch(&self, texts: &[&str]) -> EmbedResult<Vec<Vec<f32>>> {
        // Small batches are not worth a thread hand-off.
        if texts.len() < 64 {
            return Ok(texts.iter().map(|text| self.embed_ids(&self.tokenizer.encode(text, MAX_TOKENS))).collect());
        }
        Ok(texts.par_iter().map(|text| self.embed_ids(&self.tokenizer.encode(text, MAX_TOKENS))).collect())
    }

    fn context_that_fits<'a>(&self, context: &'a str, text: &str) -> &'a str {
        self.tokenizer.context_that_fits(MAX_TOKENS, context, text)
    }
}

/// SIF weight of the token at Zipf rank `rank` (0-based) in a vocabulary of `n`.
pub fn sif_weight(rank: usize, n: usize, a: f64) -> f64 {
    let normaliser: f64 = (2..n + 2).map(|j| 1.0 / j as f64).sum();
    let probability = (1.0 / (rank + 2) as f64) / normaliser;
    a / (a + probability)
}

/// What a distillation produced.
#[derive(Debug, Clone)]
pub struct DistillReport {
    /// The written configuration.
    pub config: StaticConfig,
    /// Seconds spent.
    pub seconds: f64,
}

/// Distills a static model from `minilm` into `out` (created or replaced).
pub fn distill(minilm: &MiniLm, tokenizer_json: &Path, dims: usize, out: &Path) -> EmbedResult<DistillReport> {
    let started = std::time::Instant::now();
    let tokenizer = minilm.tokenizer();
    let vocab_size = tokenizer.vocab_size();
    let (cls, sep) = (tokenizer.cls_id(), tokenizer.sep_id());
    let unused = tokenizer.unused_ids();
    let is_unused = |id: u32| unused.binary_search(&id).is_ok();

    let mut vectors: Vec<Vec<f32>> = Vec::with_capacity(vocab_size);
    let ids: Vec<u32> = (0..vocab_size as u32).collect();
    for chunk in ids.chunks(DISTILL_BATCH) {
        let rows: Vec<Vec<u32>> = chunk.iter().map(|&id| vec![cls, id, sep]).collect();
        vectors.extend(minilm.pooled(&rows)?);
        tracing::debug!(done = vectors.len(), vocab_size, "distilling token vectors");
    }
    let fitted_rows: Vec<Vec<f32>> =
        vectors.iter().enumerate().filter(|(id, _)| !is_unused(*id as u32)).map(|(_, v)| v.clone()).collect();
    let pca = Pca::fit(&fitted_rows, dims);
    let total_variance = pca.total_variance;
    let kept_variance: f64 = pca.variances.iter().sum();
    let dims = pca.components.len();
    let mut table = Vec::with_capacity(vocab_size * dims);
    for (id, vector) in vectors.iter().enumerate() {
        if is_unused(id as u32) {
            table.extend(std::iter::repeat_n(0.0_f32, dims));
            continue;
        }
        let weight = sif_weight(id, vocab_size, SIF_COEFFICIENT) as f32;
        table.extend(pca.project(vector).into_iter().map(|x| x * weight));
    }
    let config = StaticConfig {
        model_id: static_model_id(dims),
        dim: dims,
        vocab_size,
        source_model: MINILM_ID.to_string(),
        source_sha256: MINILM_SAFETENSORS_SHA256.to_string(),
        sif_coefficient: SIF_COEFFICIENT,
        explained_variance: if total_variance > 0.0 { (kept_variance / total_variance).min(1.0) } else { 0.0 },
    };
    write_folder(out, &table, &config, tokenizer_json)?;
    Ok(DistillReport { config, seconds: started.elapsed().as_secs_f64() })
}

fn write_folder(out: &Path, table: &[f32], config: &StaticConfig, tokenizer_json: &Path) -> EmbedResult<()> {
    let fail = |what: &str, error: &dyn std::fmt::Display| EmbedError::ModelMissing(format!("{what}: {error}"));
    let parent = out.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| fail("creating the model directory", &e))?;
    let staging = parent.join(format!(".staging-static-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    std::fs::create_dir_all(&staging).map_err(|e| fail("creating a staging folder", &e))?;
    crate::weights::write_f32(
        &staging.join("model.safetensors"),
        &[("embeddings", vec![config.vocab_size, config.dim], table)],
    )?;
    std::fs::copy(tokenizer_json, staging.join("tokenizer.json")).map_err(|e| fail("copying tokenizer.json", &e))?;
    let text = serde_json::to_string_pretty(config).map_err(|e| fail("encoding config.json", &e))?;
    std::fs::write(staging.join("config.json"), text).map_err(|e| fail("writing config.json", &e))?;
    if out.exists() {
        std::fs::remove_dir_all(out).map_err(|e| fail("replacing the old static model", &e))?;
    }
    std::fs::rename(&staging, out).map_err(|e| fail("moving the static model into place", &e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sif_weights_grow_with_rank() {
        let n = 30_522;
        let first = sif_weight(0, n, SIF_COEFFICIENT);
        let middle = sif_weight(2_000, n, SIF_COEFFICIENT);
        let last = sif_weight(n - 1, n, SIF_COEFFICIENT);
        assert!(first < middle && middle < last, "{first} {middle} {last}");
        assert!(last < 1.0 && first > 0.0);
        // Frequent tokens are strongly damped: rank 0 has p ≈ 0.5 / H.
        assert!(first < 0.01, "{first}");
    }
}
