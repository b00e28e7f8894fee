//! Test data for the workspace's tests, in two layers.
//!
//! * **Repository fixtures** (`fixtures/` at the repository root): small
//!   files in each input format's real shape, written for these tests —
//!   transcripts of every format the miner reads, a Python MemPalace palace
//!   as SQL text, LoCoMo- and LongMemEval-shaped datasets, MiniLM reference
//!   vectors. Every test that needs data has a version on these, so the
//!   suite passes on a bare clone.
//! * **Shared real data**: the team's folder of real samples, the LoCoMo
//!   development split and palaces written by the Python MemPalace. It is
//!   never copied into the repository (LoCoMo is CC BY-NC). It is found
//!   through `MEMPALACE_SHARED_DIR`, else as `../shared` beside the
//!   repository. The tests that read it live in modules named `real_data`,
//!   so the layer can be left out as a whole with
//!   `cargo test -- --skip real_data::`; `scripts/test.sh` does exactly that
//!   when no shared folder is found, and says which layers ran. A
//!   `real_data` test run without the data fails, naming what to do: it
//!   never passes without having checked anything.

// Test support: where the data is comes from the environment that
// scripts/test.sh prepares (MEMPALACE_SHARED_DIR).
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

/// The repository's root folder.
pub fn repo_root() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    root.canonicalize().unwrap_or(root)
}

/// A file or folder under the repository's `fixtures/`; panics when it is
/// missing (a fixture is part of the repository).
pub fn fixture(relative: &str) -> PathBuf {
    let path = repo_root().join("fixtures").join(relative);
    assert!(path.exists(), "repository fixture {} is missing", path.display());
    path
}

/// The shared real-data folder, if there is one: `MEMPALACE_SHARED_DIR`
/// when set (it must then exist), else `../shared` beside the repository
/// when it holds `fixtures/` or `bench/`.
pub fn shared_dir() -> Option<PathBuf> {
    match std::env::var_os("MEMPALACE_SHARED_DIR").filter(|v| !v.is_empty()) {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            assert!(
                dir.is_dir(),
                "MEMPALACE_SHARED_DIR={} is not a folder; point it at the shared data (holding fixtures/ and bench/) \
                 or unset it",
                dir.display()
            );
            Some(dir)
        }
        None => {
            let beside = repo_root().join("../shared");
            (beside.join("fixtures").is_dir() || beside.join("bench").is_dir()).then_some(beside)
        }
    }
}

/// A path in the shared real data, for the tests of the real-data layer
/// (modules named `real_data`). Panics, saying what to do, when there is no
/// shared folder or the path is not in it.
pub fn shared(relative: &str) -> PathBuf {
    let Some(dir) = shared_dir() else {
        panic!(
            "this real-data test needs the shared data folder: set MEMPALACE_SHARED_DIR to it (it holds fixtures/ \
             and bench/) or put it beside the repository as ../shared; to run only the repository fixtures, leave \
             this layer out with `cargo test -- --skip real_data::` (scripts/test.sh does so when none is found)"
        )
    };
    let path = dir.join(relative);
    assert!(path.exists(), "{} is missing from the shared data folder {}", relative, dir.display());
    path
}

/// Whether a Python palace keeps ChromaDB's vector-index folders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorIndex {
    /// The folders of the VECTOR segments exist (their files are empty:
    /// nothing reads them).
    Present,
    /// They are gone, as after an index was quarantined or deleted.
    Missing,
}

/// Builds the Python MemPalace home folder of `fixtures/mempalace-python/`
/// (a `~/.mempalace` with `palace/chroma.sqlite3`, `knowledge_graph.sqlite3`,
/// `identity.txt`, `tunnels.json`, `config.json`, …) inside `into`: each
/// `*.sql` file is run into the SQLite file of the same name
/// (`*.sqlite3`), other files are copied. Returns the home folder.
pub fn python_palace(into: &Path, index: VectorIndex) -> PathBuf {
    let home = into.join("dot-mempalace");
    materialise(&fixture("mempalace-python/dot-mempalace"), &home);
    let chroma = rusqlite::Connection::open(home.join("palace/chroma.sqlite3")).expect("open the built chroma.sqlite3");
    let segments: Vec<String> = chroma
        .prepare("SELECT id FROM segments WHERE scope = 'VECTOR'")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("read the segments");
    if index == VectorIndex::Present {
        for segment in segments {
            let folder = home.join("palace").join(segment);
            std::fs::create_dir_all(&folder).expect("create a vector-index folder");
            for file in ["data_level0.bin", "header.bin", "length.bin", "link_lists.bin"] {
                std::fs::write(folder.join(file), b"").expect("write a vector-index file");
            }
        }
    }
    home
}

/// Builds opencode's database (`opencode.db`) from
/// `fixtures/transcripts/opencode/opencode.sql` inside `into`.
pub fn opencode_db(into: &Path) -> PathBuf {
    let path = into.join("opencode.db");
    run_sql(&fixture("transcripts/opencode/opencode.sql"), &path);
    path
}

fn run_sql(script: &Path, database: &Path) {
    let sql = std::fs::read_to_string(script).expect("read an SQL fixture");
    let conn = rusqlite::Connection::open(database).expect("create an SQLite file");
    // As Python's sqlite3 (which wrote the originals) runs: foreign keys not
    // enforced. ChromaDB's own schema has `segments` reference a table
    // `collection` that does not exist.
    conn.execute_batch("PRAGMA foreign_keys = OFF;").expect("set foreign_keys");
    conn.execute_batch(&sql).unwrap_or_else(|e| panic!("{}: {e}", script.display()));
}

fn materialise(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create a fixture folder");
    for entry in std::fs::read_dir(from).expect("read a fixture folder") {
        let entry = entry.expect("fixture entry");
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            materialise(&path, &to.join(&name));
        } else if let Some(stem) = name.strip_suffix(".sql") {
            run_sql(&path, &to.join(format!("{stem}.sqlite3")));
        } else {
            std::fs::copy(&path, to.join(&name)).expect("copy a fixture file");
        }
    }
}
