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

use crate::bert::Bert;
use crate::files::{MPNET, MPNET_ID};
use crate::minilm::{Precision, embed, load_encoder, tokenize};
use crate::wordpiece::WordPiece;
use crate::{EmbedResult, Embedder};

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
    /// [`Precision::Bf16`] (needs AMX), [`Precision::F32InPlace`] and
    /// [`Precision::F16`] (for one short text) give the same vectors; [`Precision::Int8`] (needs
    /// AVX-512 VNNI) has its own model id.
    pub fn load_with(folder: &Path, precision: Precision) -> EmbedResult<Self> {
        let (bert, tokenizer) = load_encoder(folder, &MPNET, "mpnet", "mpnet", precision)?;
        let max_tokens = MAX_TOKENS.min(bert.max_positions());
        Ok(Self { bert, tokenizer, max_tokens, precision })
    }

    /// Token ids of each text, `<s>` … `</s>`, truncated.
    pub fn tokenize(&self, texts: &[&str]) -> Vec<Vec<u32>> {
        tokenize(&self.tokenizer, texts, self.max_tokens)
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
        Ok(embed(&self.bert, &self.tokenizer, texts, self.max_tokens))
    }

    fn context_that_fits<'a>(&self, context: &'a str, text: &str) -> &'a str {
        // The input opens and closes with a special token.
        self.tokenizer.context_that_fits(self.max_tokens.saturating_sub(2), context, text)
    }
}
