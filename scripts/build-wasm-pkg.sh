#!/usr/bin/env bash
# Builds the wasm parts of the npm package (run by `npm pack` in npm/, as its prepack script;
# scripts/build-npm.sh packs):
#   - npm/pkg/: the library for wasm32 with the `wasm-release` profile (cuda is never built
#     for wasm, see build.rs), without the CLI, with 128-bit SIMD (.cargo/config.toml);
#   - npm/pkg-threads/: the same with wasm threads (atomics, shared memory) and the `threads`
#     feature: the CPU backend's rayon pool on Web Workers (wasm-bindgen-rayon), for the
#     `unicompute/threads` entry. Rebuilding std with atomics needs a nightly toolchain with
#     rust-src (installed here through rustup when missing), in its own target directory;
#   - wasm-bindgen's ES module glue (`--target web`, with weak references so a tensor the
#     program forgets is freed by a FinalizationRegistry);
#   - wasm-opt -Oz from the npm package `binaryen` when npx can fetch it.
# Needs the wasm32 target and wasm-bindgen-cli at the Cargo.lock version (scripts/test.sh
# installs both).
set -euo pipefail
cd "$(dirname "$0")/.."
features=(--lib --target wasm32-unknown-unknown --profile wasm-release --no-default-features)

cargo build "${features[@]}" --features webgpu
if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "== installing a nightly toolchain (for the threads build)" >&2
    rustup toolchain install nightly --profile minimal --component rust-src >&2
elif ! rustup component list --toolchain nightly --installed | grep -q '^rust-src'; then
    echo "== adding rust-src to the nightly toolchain (for the threads build)" >&2
    rustup component add rust-src --toolchain nightly >&2
fi
# Shared memory imported by every worker, up to the 4 GiB a wasm32 address reaches, and the
# thread-local storage entry points wasm-bindgen's thread support calls.
shared="-C link-arg=--shared-memory -C link-arg=--import-memory -C link-arg=--max-memory=4294967296"
tls="-C link-arg=--export=__wasm_init_tls -C link-arg=--export=__tls_size -C link-arg=--export=__tls_align -C link-arg=--export=__tls_base"
RUSTFLAGS="-C target-feature=+atomics,+bulk-memory,+mutable-globals,+simd128 $shared $tls" \
    cargo +nightly build --quiet -Z build-std=panic_abort,std "${features[@]}" --features webgpu,threads --target-dir target/threads

# Glue and size for one build: wasm-bindgen <wasm> <out dir>.
glue() {
    rm -rf "$2"
    wasm-bindgen --target web --weak-refs --out-dir "$2" --out-name unicompute "$1"
    if npx --yes -p binaryen@132 wasm-opt --version >/dev/null 2>&1; then
        npx --yes -p binaryen@132 wasm-opt -Oz --enable-simd --enable-threads --enable-bulk-memory --enable-nontrapping-float-to-int \
            --enable-sign-ext --enable-mutable-globals --enable-reference-types "$2/unicompute_bg.wasm" -o "$2/unicompute_bg.wasm"
    fi
    rm -f "$2/.gitignore" "$2/package.json"
    echo "$2: wasm $(stat -c %s "$2/unicompute_bg.wasm") bytes, $(gzip -9c "$2/unicompute_bg.wasm" | wc -c) gzipped" >&2
}
glue target/wasm32-unknown-unknown/wasm-release/unicompute.wasm npm/pkg
glue target/threads/wasm32-unknown-unknown/wasm-release/unicompute.wasm npm/pkg-threads
