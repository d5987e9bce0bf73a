#!/usr/bin/env bash
# The native model benchmark: `unicompute run` beside onnxruntime's CPU provider (PyPI, 2
# intra-op threads) and tract (a Rust ONNX runtime, benches/peers/tract, one thread) on the
# same model bytes and inputs, each model measured in alternating rounds (scripts/
# bench_models.py says how). Prints a Markdown table and writes target/bench-models.json.
#
#   scripts/bench-models.sh [MODEL...]   # default: every model below
#   BACKENDS="cpu webgpu" ROUNDS=3 RUNS=20 WARMUP=3 THREADS=2 scripts/bench-models.sh yolov8n
#
# Models are fetched or made, with onnxruntime's outputs, by scripts/onnx-models.sh
# --prepare into .onnx/models/. Builds the CLI and the tract peer (release) first; the peer
# builds into $TRACT_TARGET (default target/peers), once.
set -euo pipefail
cd "$(dirname "$0")/.."
models=("$@")
[ ${#models[@]} -eq 0 ] && models=(squeezenet resnet50 mobilenetv2 yolov8n minilm minilm-fused
    silero-vad)
cargo build --release --quiet --bin unicompute
tract_target=${TRACT_TARGET:-$PWD/target/peers}
(cd benches/peers/tract && CARGO_TARGET_DIR=$tract_target cargo build --release --quiet)
export TRACT_PEER=$tract_target/release/tract-peer
MODELS="${models[*]}" scripts/onnx-models.sh --prepare
mkdir -p target
PYTHONPATH=.onnx/py python3 scripts/bench_models.py run target/bench-models.json "${models[@]}"
