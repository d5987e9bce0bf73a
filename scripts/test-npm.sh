#!/usr/bin/env bash
# Packs the npm package (scripts/build-npm.sh), installs the tarball into a fresh temporary
# project and uses it from Node (npm/test/node.mjs).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
"$repo/scripts/build-npm.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm init -y >/dev/null
npm install --silent --no-audit --no-fund "$repo"/npm/unicompute-*.tgz
cp "$repo/npm/test/node.mjs" .
node node.mjs
