//! Memory extraction without a model, scored on the two labelled sets
//! (`crates/core/tests/data/memory_extraction*.json`, written by hand
//! independently of the rules; the holdout was never used for tuning).
//! The figures go to BENCHMARKS.md ("Memory extraction"); the model path
//! is measured with `mempalace bench extract` against a live endpoint.

// The misses are shown on request (MEMPALACE_SHOW_MISSES), read from the
// environment like the other tests' setup.
#![allow(clippy::disallowed_methods)]
// The figures are printed for BENCHMARKS.md, on stderr (`--nocapture`).
#![allow(clippy::print_stderr)]

use std::path::PathBuf;

use mempalace_core::memory::extract_by_rules;
use mempalace_eval::extraction::{load, render, score};

fn set(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../core/tests/data").join(name)
}

#[test]
fn rule_based_extraction_on_the_labelled_sets() {
    let dev = load(&set("memory_extraction.json")).unwrap();
    let holdout = load(&set("memory_extraction_holdout.json")).unwrap();
    assert_eq!((dev.len(), holdout.len()), (40, 40));
    let dev_report = score(&dev, |case| Ok(extract_by_rules(&case.conversation, &case.existing)));
    let holdout_report = score(&holdout, |case| Ok(extract_by_rules(&case.conversation, &case.existing)));
    // Misses are shown for the dev set only: the holdout is read as figures.
    let show = std::env::var_os("MEMPALACE_SHOW_MISSES").is_some();
    eprintln!("dev set\n{}", render(&dev_report, show));
    eprintln!("holdout set\n{}", render(&holdout_report, false));
    // Regression bars a little under what the rules reach (BENCHMARKS.md):
    // the dev set is what they were tuned on; the holdout, written by the
    // same hand but never read while tuning, is the honest figure
    // (precision 0.667, recall 0.412 on 2026-11-26).
    assert!(dev_report.overall.precision() >= 0.95, "{}", render(&dev_report, false));
    assert!(dev_report.overall.recall() >= 0.95, "{}", render(&dev_report, false));
    assert!(holdout_report.overall.precision() >= 0.60, "{}", render(&holdout_report, false));
    assert!(holdout_report.overall.recall() >= 0.35, "{}", render(&holdout_report, false));
}
