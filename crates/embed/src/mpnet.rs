//! all-mpnet-base-v2 in-process: a larger sentence-transformers model
//! (12 layers, 768 dimensions, about 8× MiniLM's arithmetic per token),
//! offered as a choice for palaces that favour retrieval quality over
//! filing speed (`--embedder mpnet`). Tokenize (`<s>` … `</s>`), encode,
//! mean-pool, normalise, as sentence-transformers does: inputs truncated
//! at 384 tokens. By default the dense products run in bf16 on the AMX
//! unit where the CPU has one (attention stays f32, for its relative
//! bias), else f32; the same vectors (one model id). The weights are read
//! in place for a process that embeds one text; int8 dense layers (a model
//! id of its own) where the CPU has AVX-512 VNNI.

use std::path::Path;

use rayon::prelude::*;

use mempalace_core::vector::normalize;

use crate::bert::{Bert, BertConfig};
use crate::files::{MPNET, MPNET_ID, check};
use crate::minilm::Precision;
use crate::weights::Weights;
use crate::wordpiece::WordPiece;
use crate::{EmbedError, EmbedResult, Embedder};

/// Longest input in tokens, `<s>` and `</s>` included (sentence-transformers'
/// `max_seq_length` for this model).
pub const MAX_TOKENS: usize = 384;

/// Model id of the int8 variant.
pub const MPNET_INT8_ID: &str = "all-mpnet-base-v2-int8";

/// The MPNet encoder with its tokenizer.
pub struct Mpnet {
    bert: Bert,
    tokenizer: WordPiece,
    max_tokens: usize,
    precision: Precision,
}

impl Mpnet {
    /// Loads the model from a folder holding model.safetensors,
    /// tokenizer.json and config.json (`mempalace model fetch --model mpnet`),
    /// with [`Precision::for_this_cpu`].
    pub fn load(folder: &Path) -> EmbedResult<Self> {
        Self::load_with(folder, Precision::for_this_cpu())
    }

    /// Loads the model with the given precision: [`Precision::F32`],
    /// [`Precision::Bf16`] (needs AMX) and [`Precision::F32InPlace`] (for
    /// one short text) give the same vectors; [`Precision::Int8`] (needs
    /// AVX-512 VNNI) has its own model id.
    pub fn load_with(folder: &Path, precision: Precision) -> EmbedResult<Self> {
        match precision {
            Precision::Bf16 if !crate::amx::available() => {
                return Err(EmbedError::ModelInvalid(
                    "the bf16 MPNet needs a CPU with AMX (and Linux permission to use it), which this one lacks; \
                     use --embedder mpnet"
                        .into(),
                ));
            }
            Precision::Int8 if !crate::kernels::has_vnni() => {
                return Err(EmbedError::ModelInvalid(
                    "the int8 MPNet needs a CPU with AVX-512 VNNI, which this one lacks; use --embedder mpnet".into(),
                ));
            }
            _ => {}
        }
        let started = std::time::Instant::now();
        check(&MPNET, folder)?;
        let config_text = std::fs::read_to_string(folder.join("config.json"))
            .map_err(|error| EmbedError::ModelMissing(format!("config.json: {error}")))?;
        let config: BertConfig = serde_json::from_str(&config_text)
            .map_err(|error| EmbedError::ModelInvalid(format!("config.json: {error}")))?;
        if config.model_type != "mpnet" {
            return Err(EmbedError::ModelInvalid(format!(
                "{}: config.json describes a {:?} model, not mpnet; run `mempalace model fetch --model mpnet --force`",
                folder.display(),
                config.model_type
            )));
        }
        let mut bert = Weights::read(&folder.join("model.safetensors"))?.with(|root| Bert::load(root, &config))?;
        match precision {
            Precision::F32 => crate::transposed::load_or_make(&mut bert, folder),
            Precision::Int8 => bert.quantize_int8(),
            Precision::Bf16 => bert.pack_bf16()?,
            Precision::F32InPlace => {}
        }
        let tokenizer = WordPiece::from_tokenizer_json(&folder.join("tokenizer.json"))?;
        let max_tokens = MAX_TOKENS.min(bert.max_positions());
        tracing::debug!(total_ms = started.elapsed().as_secs_f64() * 1e3, ?precision, "MPNet loaded");
        Ok(Self { bert, tokenizer, max_tokens, precision })
    }

    /// Token ids of each text, `<s>` … `</s>`, truncated.
    pub fn tokenize(&self, texts: &[&str]) -> Vec<Vec<u32>> {
        texts.par_iter().map(|text| self.tokenizer.encode_with_special(text, self.max_tokens)).collect()
    }
}

impl Embedder for Mpnet {
    fn model_id(&self) -> &str {
        if self.precision == Precision::Int8 { MPNET_INT8_ID } else { MPNET_ID }
    }

    fn dim(&self) -> usize {
        self.bert.hidden_size()
    }

    fn embed_batch(&self, texts: &[&str]) -> EmbedResult<Vec<Vec<f32>>> {
        if texts.is_empty() {
            return Ok(Vec::new());
        }
        let mut vectors = self.bert.pooled_in_passes(&self.tokenize(texts));
        for vector in &mut vectors {
            normalize(vector);
        }
        Ok(vectors)
    }
}
