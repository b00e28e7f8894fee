//! Building the configured embedding provider for commands that need one.
//!
//! A missing local model is not an error: the command goes on without
//! vectors (keyword search only) after one clear warning that says how to
//! get the model. A remote provider is wrapped with the cooldown.

use std::sync::Arc;

use anyhow::Result;
use mempalace_embed::Embedder;
use mempalace_embed::files::{minilm_dir, mpnet_dir, static_dir};
use mempalace_embed::minilm::{MiniLm, Precision};
use mempalace_embed::mpnet::Mpnet;
use mempalace_embed::static_model::StaticModel;

use crate::settings::{EmbedderKind, Settings};

/// The settings for a process that embeds one short text (`add` of a text
/// that fits one drawer, `search`, `inject`): the default MiniLM (and
/// MPNet) maps a layout of its weights kept next to it, f16 panels where
/// the CPU has AVX-512 ([`Precision::for_one_text`]), instead of
/// computing a layout fast multiplies want (f32) or packing the weights for
/// the AMX unit (bf16), which costs such a process 40–80 ms at load, more
/// than either saves on one text. The vectors are the same under the same
/// model id (cosine ≥ 0.9999), so nothing filed either way needs embedding
/// again.
pub fn for_one_text(settings: &Settings) -> Settings {
    let mut settings = settings.clone();
    settings.embedder = match settings.embedder {
        EmbedderKind::MiniLm => EmbedderKind::MiniLmOneText,
        EmbedderKind::Mpnet => EmbedderKind::MpnetOneText,
        other => other,
    };
    settings
}

/// The configured provider, or `None` (with a warning) when its model files
/// are missing or the embedder is `none`.
pub fn build(settings: &Settings) -> Result<Option<Arc<dyn Embedder>>> {
    match settings.embedder {
        EmbedderKind::None => Ok(None),
        EmbedderKind::MiniLm | EmbedderKind::MiniLmF32 | EmbedderKind::MiniLmOneText | EmbedderKind::MiniLmInt8 => {
            let folder = minilm_dir(&settings.model_dir);
            let precision = match settings.embedder {
                EmbedderKind::MiniLmInt8 => Precision::Int8,
                EmbedderKind::MiniLmF32 => Precision::F32,
                EmbedderKind::MiniLmOneText => Precision::for_one_text(&folder),
                _ => Precision::for_this_cpu(),
            };
            local(
                MiniLm::load_with(&folder, precision),
                "Working without vectors: drawers are filed and found by keywords only; after fetching, \
                 `mempalace reembed` adds the vectors",
            )
        }
        EmbedderKind::Mpnet | EmbedderKind::MpnetOneText => {
            let precision = if settings.embedder == EmbedderKind::MpnetOneText {
                Precision::for_one_text(&mpnet_dir(&settings.model_dir))
            } else {
                Precision::for_this_cpu()
            };
            local(
                Mpnet::load_with(&mpnet_dir(&settings.model_dir), precision),
                "Working without vectors: drawers are filed and found by keywords only; after \
                 `mempalace model fetch --model mpnet`, `mempalace reembed` adds the vectors",
            )
        }
        EmbedderKind::Static => local(
            StaticModel::load(&static_dir(&settings.model_dir)),
            "Working without vectors; `mempalace model distill` builds the static model",
        ),
        EmbedderKind::OpenAi | EmbedderKind::Ollama => remote(settings),
    }
}

/// A local model, or `None` with a warning that says what goes on without
/// it and what to run (a missing model is not an error).
fn local<E: Embedder + 'static>(
    loaded: mempalace_embed::EmbedResult<E>,
    without: &str,
) -> Result<Option<Arc<dyn Embedder>>> {
    match loaded {
        Ok(model) => Ok(Some(Arc::new(model))),
        Err(error) => {
            tracing::warn!("{error}. {without}");
            Ok(None)
        }
    }
}

#[cfg(feature = "remote")]
fn remote(settings: &Settings) -> Result<Option<Arc<dyn Embedder>>> {
    use mempalace_embed::remote::{Protocol, RemoteConfig, RemoteEmbedder, Secret};
    use mempalace_embed::resilient::Resilient;
    let Some(endpoint) = &settings.remote_embed else {
        return Err(super::UserError(
            "no embedding endpoint configured; set MEMPALACE_EMBED_BASE_URL (or embed_base_url in config.json)".into(),
        )
        .into());
    };
    let protocol = if settings.embedder == EmbedderKind::Ollama { Protocol::Ollama } else { Protocol::OpenAi };
    let mut config = RemoteConfig::new(protocol, endpoint.base_url.clone(), endpoint.model.clone());
    config.api_key = endpoint.api_key.clone().map(Secret::new);
    Ok(Some(Arc::new(Resilient::new(RemoteEmbedder::new(config)))))
}

#[cfg(not(feature = "remote"))]
fn remote(settings: &Settings) -> Result<Option<Arc<dyn Embedder>>> {
    Err(super::UserError(format!(
        "the {:?} embedder (endpoint {}) needs remote provider support, which this build leaves out; \
         rebuild with `cargo build --release --features remote`, or use --embedder minilm",
        settings.embedder,
        settings.remote_embed.as_ref().map_or("not set", |endpoint| endpoint.base_url.as_str())
    ))
    .into())
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::settings::{Overrides, resolve};

    #[test]
    fn one_text_processes_run_the_default_minilm_in_f32_and_keep_any_chosen_embedder() {
        let home = tempfile::tempdir().unwrap();
        let with = |embedder: Option<EmbedderKind>| {
            let flags = Overrides { embedder, ..Overrides::default() };
            resolve(&BTreeMap::new(), Some(home.path()), &flags).unwrap()
        };
        assert_eq!(with(None).embedder, EmbedderKind::MiniLm, "the default");
        assert_eq!(for_one_text(&with(None)).embedder, EmbedderKind::MiniLmOneText);
        assert_eq!(for_one_text(&with(Some(EmbedderKind::Mpnet))).embedder, EmbedderKind::MpnetOneText);
        for chosen in [EmbedderKind::MiniLmF32, EmbedderKind::MiniLmInt8, EmbedderKind::Static, EmbedderKind::None] {
            assert_eq!(for_one_text(&with(Some(chosen))).embedder, chosen, "{chosen:?} is kept");
        }
    }
}
