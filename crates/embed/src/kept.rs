//! Layouts of a model's dense weights computed from its own and kept next
//! to it.
//!
//! Two layouts ([`Layout`]) pay for their computation many times over:
//! the f32 path multiplies fastest with every dense weight transposed
//! (`[in, out]`, [`Bert::transpose_f32`]), and a process that embeds one
//! short text reads half the bytes with the weights rounded to f16 in
//! column panels ([`Bert::pack_f16`]). Computing either costs each process
//! that loads the model about 40 ms (MiniLM) to 300 ms (MPNet). The first
//! process that computes one writes it into the model folder as
//! `.transposed-f32-<bytes>-<mtime>.safetensors` or
//! `.panels-f16-<bytes>-<mtime>.safetensors` (a temporary name renamed
//! into place, so a reader never sees half a file); later processes map it
//! and read the weights in place. It is derived data: its name carries the
//! weights file's size and modification time, so replaced weights never
//! meet an old copy (and `model fetch` replaces the whole folder); deleting
//! it costs only the next load's computation; a folder that cannot be
//! written leaves every process to compute its own, as before.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::UNIX_EPOCH;

use crate::bert::Bert;
pub use crate::bert::Layout;
use crate::weights::{Weights, write};

fn prefix(layout: Layout) -> &'static str {
    match layout {
        Layout::TransposedF32 => ".transposed-f32-",
        Layout::PanelsF16 => ".panels-f16-",
    }
}

/// Where the weights in `layout` of the model in `folder` are kept; `None`
/// when its weights file cannot be looked at.
pub fn path(folder: &Path, layout: Layout) -> Option<PathBuf> {
    let meta = std::fs::metadata(folder.join("model.safetensors")).ok()?;
    let modified = meta.modified().ok()?.duration_since(UNIX_EPOCH).ok()?.as_nanos();
    Some(folder.join(format!("{}{}-{modified}.safetensors", prefix(layout), meta.len())))
}

/// Whether the model in `folder` has its weights in `layout` written.
pub fn present(folder: &Path, layout: Layout) -> bool {
    path(folder, layout).is_some_and(|path| path.is_file())
}

/// Whether a kept copy can be written into `folder` (a file created there
/// and removed).
pub fn writable(folder: &Path) -> bool {
    let probe = folder.join(format!(".probe-{}", std::process::id()));
    let created = std::fs::OpenOptions::new().write(true).create_new(true).open(&probe).is_ok();
    created && std::fs::remove_file(&probe).is_ok()
}

/// Gives `bert` the weights in `layout` kept for the model in `folder`
/// (mapped, read in place). False when there are none or they do not fit
/// this encoder, which is then unchanged.
pub fn load(bert: &mut Bert, folder: &Path, layout: Layout) -> bool {
    let Some(path) = path(folder, layout).filter(|path| path.is_file()) else { return false };
    // Every pass reads every weight: mapped with all pages present.
    match Weights::read_whole(&path).and_then(|weights| weights.with(|root| bert.use_kept(&root, layout))) {
        Ok(()) => true,
        Err(error) => {
            tracing::debug!(%error, path = %path.display(), "kept weights not used; computing them");
            false
        }
    }
}

/// Gives `bert` its weights in `layout`: mapped from the copy kept for the
/// model in `folder`, else computed ([`Bert::make`]) and kept.
pub fn load_or_make(bert: &mut Bert, folder: &Path, layout: Layout) {
    if !load(bert, folder, layout) {
        bert.make(layout);
        save(bert, folder, layout);
    }
}

/// Writes `bert`'s weights in `layout` (after [`Bert::make`]) for the
/// model in `folder`, and removes copies in that layout made for other
/// weights. Best effort: a failure (a read-only folder) is logged and
/// changes nothing.
pub fn save(bert: &Bert, folder: &Path, layout: Layout) {
    let Some(path) = path(folder, layout) else { return };
    // Unique within the process too: two threads may keep the same layout.
    static SAVES: AtomicUsize = AtomicUsize::new(0);
    let save = SAVES.fetch_add(1, Ordering::Relaxed);
    let temporary = folder.join(format!("{}{}-{save}.partial", prefix(layout), std::process::id()));
    let tensors = bert.kept_tensors(layout);
    let named: Vec<_> = tensors.iter().map(|(name, shape, data)| (name.as_str(), shape.clone(), *data)).collect();
    let written = write(&temporary, &named).and_then(|()| {
        std::fs::rename(&temporary, &path)
            .map_err(|error| crate::EmbedError::ModelMissing(format!("renaming {}: {error}", temporary.display())))
    });
    match written {
        Ok(()) => {
            tracing::debug!(path = %path.display(), "kept weights written");
            let current = path.file_name().map(std::ffi::OsStr::to_owned);
            for entry in std::fs::read_dir(folder).into_iter().flatten().flatten() {
                let name = entry.file_name();
                let stale = name.to_string_lossy().starts_with(prefix(layout))
                    && name.to_string_lossy().ends_with(".safetensors");
                if stale && Some(&name) != current.as_ref() {
                    let _ = std::fs::remove_file(entry.path());
                }
            }
        }
        Err(error) => {
            let _ = std::fs::remove_file(&temporary);
            tracing::debug!(%error, "kept weights not written; each process computes them");
        }
    }
}
