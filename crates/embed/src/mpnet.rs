//! all-mpnet-base-v2 in-process: a larger sentence-transformers model
//! (12 layers, 768 dimensions, about 8× MiniLM's arithmetic per token),
//! offered as a choice for palaces that favour retrieval quality over
//! filing speed (`--embedder mpnet`). Tokenize (`<s>` … `</s>`), encode,
//! mean-pool, normalise, as sentence-transformers does: inputs truncated
//! at 384 tokens. f32 on every CPU (the AMX path has no relative-position
//! attention bias).

use std::path::Path;

use rayon::prelude::*;

use mempalace_core::vector::normalize;

use crate::bert::{Bert, BertConfig};
use crate::files::{MPNET, MPNET_ID, check};
use crate::weights::Weights;
use crate::wordpiece::WordPiece;
use crate::{EmbedError, EmbedResult, Embedder};

/// Longest input in tokens, `<s>` and `</s>` included (sentence-transformers'
/// `max_seq_length` for this model).
pub const MAX_TOKENS: usize = 384;

/// The MPNet encoder with its tokenizer.
pub struct Mpnet {
    bert: Bert,
    tokenizer: WordPiece,
    max_tokens: usize,
}

impl Mpnet {
    /// Loads the model from a folder holding model.safetensors,
    /// tokenizer.json and config.json (`mempalace model fetch --model mpnet`).
    pub fn load(folder: &Path) -> EmbedResult<Self> {
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
        bert.transpose_f32();
        let tokenizer = WordPiece::from_tokenizer_json(&folder.join("tokenizer.json"))?;
        let max_tokens = MAX_TOKENS.min(bert.max_positions());
        tracing::debug!(total_ms = started.elapsed().as_secs_f64() * 1e3, "MPNet loaded");
        Ok(Self { bert, tokenizer, max_tokens })
    }

    /// Token ids of each text, `<s>` … `</s>`, truncated.
    pub fn tokenize(&self, texts: &[&str]) -> Vec<Vec<u32>> {
        texts.par_iter().map(|text| self.tokenizer.encode_with_special(text, self.max_tokens)).collect()
    }
}

impl Embedder for Mpnet {
    fn model_id(&self) -> &str {
        MPNET_ID
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
