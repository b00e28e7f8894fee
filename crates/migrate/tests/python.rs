//! Reading palaces written by the Python MemPalace, including the ways
//! they break: a vector index that is gone, and writes still in ChromaDB's
//! queue that never reached the metadata segment. On the repository's
//! palace (`fixtures/mempalace-python/`, SQL text built into a temporary
//! folder) and, in the real-data layer, on palaces the Python MemPalace
//! 3.3.6 wrote (`MEMPALACE_SHARED_DIR`/fixtures/mempalace-python).

use std::collections::BTreeMap;
use std::path::Path;

use mempalace_core::WorkspaceId;
use mempalace_migrate::{convert, read};
use mempalace_testdata::{VectorIndex, python_palace};

const GRIPPER: &str = "drawer_lab_gripper_3e5a7c9b1d2f4e6a8c0b2d4f";
const DIARY: &str = "diary_wing_orion_20261120_174206481153_2c4e6a8b0d1f";

fn counts(pairs: &[(&str, &str, u64)]) -> BTreeMap<String, BTreeMap<String, u64>> {
    let mut out: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    for (wing, room, n) in pairs {
        *out.entry((*wing).into()).or_default().entry((*room).into()).or_default() += n;
    }
    out
}

/// Queue rows appended after the fixture's last write (seq 10).
fn enqueue(home: &Path, rows: &[(i64, i64, &str, Option<&str>)]) {
    let conn = rusqlite::Connection::open(home.join("palace/chroma.sqlite3")).unwrap();
    let topic: String = conn
        .query_row(
            "SELECT 'persistent://default/default/' || id FROM collections WHERE name = 'mempalace_drawers'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    for (seq, operation, id, metadata) in rows {
        conn.execute(
            "INSERT INTO embeddings_queue (seq_id, operation, topic, id, vector, encoding, metadata) \
             VALUES (?1, ?2, ?3, ?4, zeroblob(1536), 'FLOAT32', ?5)",
            rusqlite::params![seq, operation, topic, id, metadata],
        )
        .unwrap();
    }
}

#[test]
fn the_fixture_reads_completely() {
    let dir = tempfile::tempdir().unwrap();
    let home = python_palace(dir.path(), VectorIndex::Present);
    let source = read(&home).unwrap();
    // Six drawers in the metadata segment, and the diary entry whose write
    // is still only in the queue; the drawer added then deleted is not there.
    assert_eq!(source.drawers.len(), 7);
    assert_eq!(
        source.counts(),
        counts(&[
            ("greenhouse", "irrigation", 1),
            ("lab", "gripper", 1),
            ("lab_notes", "general", 2),
            ("rover", "planning", 2),
            ("wing_orion", "diary", 1)
        ])
    );
    assert_eq!((source.entities.len(), source.triples.len(), source.tunnels.len()), (5, 4, 1));
    assert_eq!(source.closets_skipped, 1);
    assert!(source.identity.as_deref().unwrap().starts_with("I am Orion"));
    // config.json names a palace_path on another machine: the palace beside it is read.
    assert_eq!(source.config.as_ref().unwrap()["palace_path"], "/home/alex/.mempalace/palace");
    assert_eq!(source.problems.len(), 1, "{:?}", source.problems);
    assert!(source.problems[0].detail.contains("1 queued writes had not reached the metadata segment"));
    let diary = source.drawers.iter().find(|d| d.id == DIARY).unwrap();
    assert_eq!(diary.document, "Zeroed the gripper force sensor with Alice; the egg test passes at 3.5 N.");
    assert_eq!(
        (diary.metadata["type"].as_str(), diary.metadata["agent"].as_str()),
        (Some("diary_entry"), Some("orion"))
    );
    let chunk = source.drawers.iter().find(|d| d.id == "drawer_lab_notes_general_0f1e2d3c4b5a69788796a5b4").unwrap();
    assert_eq!((chunk.metadata["line_start"].as_i64(), chunk.metadata["line_end"].as_i64()), (Some(7), Some(12)));
    assert_eq!(chunk.metadata["source_mtime"].as_f64(), Some(1795306322.96685));
    let expired = source.triples.iter().find(|t| t.object == "ros_1").unwrap();
    assert_eq!((expired.valid_from.as_deref(), expired.valid_to.as_deref()), (Some("2023-09-01"), Some("2025-02-28")));
    let extracted = source.triples.iter().find(|t| t.subject == "gripper").unwrap();
    assert_eq!(
        (extracted.confidence, extracted.source_file.as_deref()),
        (0.8, Some("/home/alex/projects/lab-notes/gripper.md"))
    );

    let converted = convert(&source, &WorkspaceId::default_workspace(), chrono::Utc::now());
    assert_eq!(converted.drawers.len(), 7);
    assert_eq!((converted.entities, converted.triples, converted.tunnels, converted.identity), (5, 4, 1, true));
    assert!(converted.problems.is_empty(), "{:?}", converted.problems);
}

#[test]
fn a_missing_vector_index_is_reported_not_needed() {
    let dir = tempfile::tempdir().unwrap();
    let source = read(&python_palace(dir.path(), VectorIndex::Missing)).unwrap();
    assert_eq!(source.drawers.len(), 7);
    assert!(
        source.problems.iter().any(|p| p.detail.contains("vector index folder is missing")),
        "{:?}",
        source.problems
    );
}

#[test]
fn queued_writes_that_never_reached_the_segment_are_replayed() {
    let dir = tempfile::tempdir().unwrap();
    let home = python_palace(dir.path(), VectorIndex::Present);
    {
        let conn = rusqlite::Connection::open(home.join("palace/chroma.sqlite3")).unwrap();
        // The gripper drawer (seq 9) stays in the queue only too, as when the
        // writer stopped before applying it.
        conn.execute_batch(&format!(
            "DELETE FROM embedding_metadata WHERE id IN (SELECT id FROM embeddings WHERE embedding_id = '{GRIPPER}');
             DELETE FROM embeddings WHERE embedding_id = '{GRIPPER}';
             UPDATE max_seq_id SET seq_id = 8 WHERE seq_id = 9;"
        ))
        .unwrap();
    }
    let source = read(&home).unwrap();
    assert_eq!(source.drawers.len(), 7, "{:?}", source.problems);
    let gripper = source.drawers.iter().find(|d| d.id == GRIPPER).unwrap();
    assert_eq!(
        gripper.document,
        "The gripper holds eggs without cracking them at 3.5 N, measured after the force sensor was zeroed on Monday."
    );
    assert_eq!(gripper.metadata["added_by"], "orion");
    assert!(source.problems.iter().any(|p| p.detail.contains("2 queued writes")), "{:?}", source.problems);
}

/// ChromaDB's operations replayed in order: an update changes the named
/// keys, a delete removes the drawer, an update of an absent id and an add
/// of a present id do nothing.
#[test]
fn queued_updates_and_deletes_apply_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let home = python_palace(dir.path(), VectorIndex::Present);
    enqueue(
        &home,
        &[
            (11, 1, "drawer_rover_planning_9b8e7d6c5a4f3e2d1c0b9a87", Some(r#"{"room":"calibration"}"#)),
            (12, 3, "drawer_greenhouse_irrigation_1a2b3c4d5e6f708192a3b4c5", None),
            (13, 1, "drawer_nowhere_x_000000000000000000000000", Some(r#"{"room":"ghost"}"#)),
            (
                14,
                0,
                GRIPPER,
                Some(r#"{"wing":"lab","room":"gripper","chroma:document":"a second add of the same id"}"#),
            ),
        ],
    );
    let source = read(&home).unwrap();
    assert_eq!(
        source.counts(),
        counts(&[
            ("lab", "gripper", 1),
            ("lab_notes", "general", 2),
            ("rover", "calibration", 1),
            ("rover", "planning", 1),
            ("wing_orion", "diary", 1)
        ])
    );
    let updated = source.drawers.iter().find(|d| d.id == "drawer_rover_planning_9b8e7d6c5a4f3e2d1c0b9a87").unwrap();
    assert!(updated.document.starts_with("> Write the calibration into the lab book"), "the text is kept");
    let gripper = source.drawers.iter().find(|d| d.id == GRIPPER).unwrap();
    assert!(gripper.document.starts_with("The gripper holds eggs"), "an add of a present id is refused");
    assert!(source.problems.iter().any(|p| p.detail.contains("5 queued writes")), "{:?}", source.problems);
}

#[test]
fn a_folder_without_a_palace_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let error = read(dir.path()).unwrap_err().to_string();
    assert!(error.contains("chroma.sqlite3") && error.contains("--source"), "{error}");
}

/// The same on the palaces the Python MemPalace 3.3.6 wrote.
mod real_data {
    use std::path::{Path, PathBuf};

    use mempalace_core::WorkspaceId;
    use mempalace_migrate::{convert, read};

    fn fixture(name: &str) -> PathBuf {
        mempalace_testdata::shared("fixtures/mempalace-python").join(name).join("dot-mempalace")
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
}
