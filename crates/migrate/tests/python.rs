//! Reading palaces written by the Python MemPalace, including the ways
//! they break: a vector index that is gone, and writes still in ChromaDB's
//! queue that never reached the metadata segment.

// Tests take their setup (model directory, shared data, servers) from the
// environment that scripts/test.sh prepares.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use mempalace_core::WorkspaceId;
use mempalace_migrate::{convert, read};

fn fixture(name: &str) -> PathBuf {
    let shared = std::env::var_os("MEMPALACE_SHARED_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"));
    let dir = shared.join("fixtures/mempalace-python").join(name).join("dot-mempalace");
    assert!(dir.is_dir(), "{} is missing; set MEMPALACE_SHARED_DIR to the shared data folder", dir.display());
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::write(&target, std::fs::read(entry.path()).unwrap()).unwrap();
        }
    }
}

#[test]
fn the_fixture_reads_completely() {
    let source = read(&fixture("alex")).unwrap();
    assert_eq!(source.drawers.len(), 277);
    assert_eq!((source.entities.len(), source.triples.len(), source.tunnels.len()), (5, 3, 1));
    assert!(source.identity.as_deref().unwrap().starts_with("I am Atlas"));
    assert!(source.problems.is_empty(), "{:?}", source.problems);
    let converted = convert(&source, &WorkspaceId::default_workspace(), chrono::Utc::now());
    assert_eq!(converted.drawers.len(), 277);
    assert!(converted.problems.is_empty(), "{:?}", converted.problems);
}

#[test]
fn queued_writes_that_never_reached_the_segment_are_replayed() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture("alex"), dir.path());
    let chroma = dir.path().join("palace/chroma.sqlite3");
    {
        let conn = rusqlite::Connection::open(&chroma).unwrap();
        // The last two writes (the gripper drawer and the diary entry) stay
        // in the queue only, as when the writer stopped before applying them.
        conn.execute_batch(
            "DELETE FROM embedding_metadata WHERE id IN (SELECT id FROM embeddings WHERE embedding_id IN \
               (SELECT id FROM embeddings_queue WHERE seq_id > 282));
             DELETE FROM embeddings WHERE embedding_id IN (SELECT id FROM embeddings_queue WHERE seq_id > 282);
             UPDATE max_seq_id SET seq_id = 282 WHERE seq_id = 284;",
        )
        .unwrap();
    }
    let source = read(dir.path()).unwrap();
    assert_eq!(source.drawers.len(), 277, "{:?}", source.problems);
    let gripper = source.drawers.iter().find(|d| d.id == "drawer_lab_gripper_858f95377cf37d14ab1d69fa").unwrap();
    assert_eq!(
        gripper.document,
        "The gripper works best at 12.5 N because the force sensor was recalibrated on Tuesday."
    );
    assert_eq!(gripper.metadata["added_by"], "atlas");
    assert!(source.problems.iter().any(|p| p.detail.contains("2 queued writes")), "{:?}", source.problems);
}

#[test]
fn a_folder_without_a_palace_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let error = read(dir.path()).unwrap_err().to_string();
    assert!(error.contains("chroma.sqlite3") && error.contains("--source"), "{error}");
}
