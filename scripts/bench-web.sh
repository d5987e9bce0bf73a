#!/usr/bin/env bash
# The browser benchmark (web/bench/): unicompute's npm package beside TensorFlow.js (webgpu) and
# ONNX Runtime Web (webgpu and wasm) in one page in headless Chromium, with where unicompute's
# time goes. Packs the npm package, installs it and the peers into web/bench/, serves the page
# (cross-origin isolated) and drives it; prints Markdown tables, then the JSON (also written to
# target/bench-web.json). Options go to the page as its URL query, e.g.
#   scripts/bench-web.sh 'workloads=matmul,softmax&runs=5&sizes={"matmul":{"m":256,"k":256,"n":256}}'
# Needs what scripts/test.sh installs (Chromium, Node, the wasm toolchain).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
query="${1:-}"
"$repo/scripts/build-npm.sh"
cd "$repo/web/bench"
npm install --silent --no-audit --no-fund
npm install --silent --no-audit --no-fund --no-save "$repo"/npm/unicompute-*.tgz
port=8731
node serve.mjs "$port" >/dev/null &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
mkdir -p "$repo/target"
node run.mjs "http://127.0.0.1:$port/?run=1&$query" "$repo/target/bench-web.json"
