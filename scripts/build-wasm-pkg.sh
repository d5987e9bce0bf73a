#!/usr/bin/env bash
# Builds the wasm part of the npm package into npm/pkg/ (run by `npm pack` in npm/, as its
# prepack script; scripts/build-npm.sh packs):
#   - the library for wasm32 with the `wasm-release` profile (size-optimised; cuda is never
#     built for wasm, see build.rs), without the CLI, with 128-bit SIMD (.cargo/config.toml);
#   - wasm-bindgen's ES module glue (`--target web`, with weak references so a tensor the
#     program forgets is freed by a FinalizationRegistry) into npm/pkg/;
#   - wasm-opt -Oz from the npm package `binaryen` when npx can fetch it.
# Needs the wasm32 target and wasm-bindgen-cli at the Cargo.lock version (scripts/test.sh
# installs both).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --profile wasm-release --lib --target wasm32-unknown-unknown --no-default-features --features webgpu
rm -rf npm/pkg
wasm-bindgen --target web --weak-refs --out-dir npm/pkg --out-name unicompute target/wasm32-unknown-unknown/wasm-release/unicompute.wasm
if npx --yes -p binaryen@132 wasm-opt --version >/dev/null 2>&1; then
    npx --yes -p binaryen@132 wasm-opt -Oz --enable-simd --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext --enable-mutable-globals --enable-reference-types \
        npm/pkg/unicompute_bg.wasm -o npm/pkg/unicompute_bg.wasm
fi
rm -f npm/pkg/.gitignore npm/pkg/package.json
echo "wasm: $(stat -c %s npm/pkg/unicompute_bg.wasm) bytes, $(gzip -9c npm/pkg/unicompute_bg.wasm | wc -c) gzipped" >&2
