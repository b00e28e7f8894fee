#!/usr/bin/env bash
# The whole test suite, with everything the tests need set up first.
# Used by the README and by .ci/run; safe to run again (setup steps are
# idempotent and cached).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo fmt --all -- --check
cargo test --workspace --locked
