//! The transposed dense weights of a model, kept next to it.
//!
//! The f32 path multiplies fastest with every dense weight transposed
//! (`[in, out]`, [`Bert::transpose_f32`]); computing that copy costs each
//! process that loads the model about 40 ms (MiniLM) to 300 ms (MPNet).
//! The first process that computes it writes it into the model folder as
//! `.transposed-f32-<bytes>-<mtime>.safetensors` (a temporary name renamed
//! into place, so a reader never sees half a file); later processes map it
//! and read the weights in place, so a process that embeds one text gets
//! the fast layout without the copy. It is derived data: its name carries
//! the weights file's size and modification time, so replaced weights never
//! meet an old copy (and `model fetch` replaces the whole folder); deleting
//! it costs only the next load's copy; a folder that cannot be written
//! leaves every process to make its own copy, as before.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use crate::bert::Bert;
use crate::weights::{Weights, write_f32};

const PREFIX: &str = ".transposed-f32-";

/// Where the transposed weights of the model in `folder` are kept; `None`
/// when its weights file cannot be looked at.
pub fn path(folder: &Path) -> Option<PathBuf> {
    let meta = std::fs::metadata(folder.join("model.safetensors")).ok()?;
    let modified = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?.as_nanos();
    Some(folder.join(format!("{PREFIX}{}-{modified}.safetensors", meta.len())))
}

/// Whether the model in `folder` has its transposed weights written.
pub fn present(folder: &Path) -> bool {
    path(folder).is_some_and(|path| path.is_file())
}

/// Gives `bert` the transposed weights kept for the model in `folder`
/// (mapped, read in place). False when there are none or they do not fit
/// this encoder, which is then unchanged.
pub fn load(bert: &mut Bert, folder: &Path) -> bool {
    let Some(path) = path(folder).filter(|path| path.is_file()) else { return false };
    match Weights::read(&path).and_then(|weights| weights.with(|root| bert.use_transposed(&root))) {
        Ok(()) => true,
        Err(error) => {
            tracing::debug!(%error, path = %path.display(), "transposed weights not used; computing them");
            false
        }
    }
}

/// Gives `bert` its transposed weights: mapped from the copy kept for the
/// model in `folder`, else computed ([`Bert::transpose_f32`]) and kept.
pub fn load_or_make(bert: &mut Bert, folder: &Path) {
    if !load(bert, folder) {
        bert.transpose_f32();
        save(bert, folder);
    }
}

/// Writes `bert`'s transposed weights (after [`Bert::transpose_f32`]) for
/// the model in `folder`, and removes copies made for other weights. Best
/// effort: a failure (a read-only folder) is logged and changes nothing.
pub fn save(bert: &Bert, folder: &Path) {
    let Some(path) = path(folder) else { return };
    let temporary = folder.join(format!("{PREFIX}{}.partial", std::process::id()));
    let tensors = bert.transposed_tensors();
    let named: Vec<(&str, Vec<usize>, &[f32])> =
        tensors.iter().map(|(name, shape, values)| (name.as_str(), shape.clone(), *values)).collect();
    let written = write_f32(&temporary, &named).and_then(|()| {
        std::fs::rename(&temporary, &path)
            .map_err(|error| crate::EmbedError::ModelMissing(format!("renaming {}: {error}", temporary.display())))
    });
    match written {
        Ok(()) => {
            tracing::debug!(path = %path.display(), "transposed weights written");
            let current = path.file_name().map(std::ffi::OsStr::to_owned);
            for entry in std::fs::read_dir(folder).into_iter().flatten().flatten() {
                let name = entry.file_name();
                let stale =
                    name.to_string_lossy().starts_with(PREFIX) && name.to_string_lossy().ends_with(".safetensors");
                if stale && Some(&name) != current.as_ref() {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        Err(error) => {
            let _ = std::fs::remove_file(&temporary);
            tracing::debug!(%error, "transposed weights not written; each process copies them");
        }
    }
}
