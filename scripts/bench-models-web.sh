#!/usr/bin/env bash
# The browser model benchmark (web/bench/models.html): unicompute's InferenceSession (webgpu,
# and the CPU backend inside the wasm on one thread and, through `unicompute/threads`, on
# $THREADS) beside onnxruntime-web (webgpu, and wasm on one thread and on $THREADS) in headless
# Chromium, on the same model bytes and inputs, each model measured in alternating rounds
# (web/bench/run-models.mjs says how). Packs the npm package, installs it and
# onnxruntime-web into web/bench/, serves the page cross-origin isolated with the models, and
# prints Markdown tables, then the JSON (also written to target/bench-models-web.json).
#
#   scripts/bench-models-web.sh [MODEL...]   # default: every model of scripts/bench-models.sh
#   ENGINES="unicompute-cpu ort-wasm" ROUNDS=2 RUNS=20 WARMUP=3 THREADS=2 \
#       scripts/bench-models-web.sh silero-vad
#
# Models are fetched or made, with onnxruntime's outputs, by scripts/onnx-models.sh --prepare
# into .onnx/models/; MODELS_DIR=DIR takes them from DIR as they are instead. NPM_TGZ=FILE
# installs that packed package instead of packing one (scripts/build-npm.sh). Needs what
# scripts/test.sh installs (Chromium, Node, the wasm toolchain).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(squeezenet resnet50 mobilenetv2 yolov8n minilm minilm-fused
    silero-vad)
if [ -z "${MODELS_DIR:-}" ]; then
    MODELS="${models[*]}" "$repo/scripts/onnx-models.sh" --prepare
    MODELS_DIR=$repo/.onnx/models
fi
if [ -z "${NPM_TGZ:-}" ]; then
    "$repo/scripts/build-npm.sh"
    NPM_TGZ=$(ls "$repo"/npm/unicompute-*.tgz)
fi
cd "$repo/web/bench"
npm install --silent --no-audit --no-fund
npm install --silent --no-audit --no-fund --no-save "$NPM_TGZ"
port=${PORT:-8732}
node serve.mjs "$port" "$MODELS_DIR" >/dev/null &
server=$!
trap 'kill $server 2>/dev/null' EXIT
for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/"$port") 2>/dev/null && break; sleep 0.1; done
mkdir -p "$repo/target"
node run-models.mjs "http://127.0.0.1:$port/" "$MODELS_DIR" "$repo/target/bench-models-web.json" \
    "${models[@]}"
