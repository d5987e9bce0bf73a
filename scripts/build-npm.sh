#!/usr/bin/env bash
# Packs the npm package: npm/unicompute-<version>.tgz. `npm pack` runs the package's prepack
# script, scripts/build-wasm-pkg.sh, which builds the wasm and its JS glue into npm/pkg/, so
# a plain `npm pack` in npm/ does the same.
set -euo pipefail
cd "$(dirname "$0")/../npm"
rm -f unicompute-*.tgz
npm pack --silent
