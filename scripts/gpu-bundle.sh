#!/usr/bin/env bash
# Packs what a GPU machine without Rust needs to check the CUDA and wgpu-on-Vulkan backends
# into .gpu/ (git-ignored), small enough to travel with the device tool's working tree:
#   - the release test binaries that run anywhere (the library's unit tests and
#     tests/suite/), stripped and xz-compressed, and the CLI;
#   - Debian's Vulkan loader and glvnd libraries, unpacked there where they are missing;
#   - benches/peers/torch_reference.py, PyTorch's side of the table;
#   - the ONNX model table's six models as weight-free skeletons with their inputs
#     (models.tar.xz, 3.5 MB: scripts/gpu_models.py says how they are made and filled there),
#     and the scripts that fill and measure them (gpu_models.py, onnx_models.py,
#     bench_models.py);
#   - the tests' data (published WGSL kernels, ONNX's node tests) as data.tar.xz;
#   - .gpu/run.sh, which runs everything in order, each step under its own time limit, and
#     writes logs and results under $OUT (or .gpu/out) as it goes.
# cli/tests/cli.rs and tests/layers.rs stay here: they read this machine's target/ and src/.
#
#   scripts/gpu-bundle.sh                  # build and pack (22 MiB in all)
#   DRY=1 .gpu/run.sh                      # rehearse here: small sizes, CUDA not required
#   .gpu/run.sh [tests|bench|models]       # on the GPU machine: all steps, or one part
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .gpu && mkdir -p .gpu/bin .gpu/debs
cargo build --release --bin unicompute
cargo test --release --no-run --lib --test suite --message-format=json 2>/dev/null \
    | python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        print(m["target"]["name"], m["executable"])' \
    | while read -r name exe; do
        # The library's own unit tests are named after the crate; call them "lib".
        [ "$name" = unicompute ] && name=lib
        # Symbols kept (not debug info): backtraces name the functions.
        strip --strip-debug -o ".gpu/bin/$name" "$exe"
    done
strip -o .gpu/bin/unicompute "${CARGO_TARGET_DIR:-target}/release/unicompute"
xz -T0 -6 .gpu/bin/*
cp benches/peers/torch_reference.py .gpu/
# The models (scripts/onnx-models.sh --prepare fetches or makes them, once, into .onnx/models).
models=(squeezenet resnet50 mobilenetv2 yolov8n minilm silero-vad)
MODELS="${models[*]}" scripts/onnx-models.sh --prepare
PYTHONPATH=.onnx/py python3 scripts/gpu_models.py pack .onnx/models .gpu/models.tar.xz \
    "${models[@]}"
cp scripts/gpu_models.py scripts/onnx_models.py scripts/bench_models.py .gpu/
# The tests' data (scripts/corpus.sh, scripts/onnx-data.sh): published WGSL kernels, ONNX's
# node tests and light models (2.6 MB compressed) and the onnx wheel's model tests (4.6 MB).
scripts/corpus.sh >/dev/null
scripts/onnx-data.sh >/dev/null
tar -cf - .corpus -C .onnx node light pytorch-converted pytorch-operator simple |
    xz -T0 -6 >.gpu/data.tar.xz
lists=$(mktemp -d)
mkdir -p "$lists/partial"
apt_amd64=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 "-oDir::State::Lists=$lists")
apt-get "${apt_amd64[@]}" update -qq
# The NVIDIA Vulkan driver (libGLX_nvidia) also needs glvnd's dispatch libraries.
(cd .gpu/debs && apt-get "${apt_amd64[@]}" download libvulkan1 libglvnd0 libglx0 libgl1 \
    libegl1 libopengl0 libgles2 2>/dev/null)
rm -rf "$lists"
cp scripts/gpu-run.sh .gpu/run.sh
echo ".gpu/ ready: $(du -sh .gpu | cut -f1)"
