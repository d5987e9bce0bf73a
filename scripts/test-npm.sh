#!/usr/bin/env bash
# Packs the npm package (scripts/build-npm.sh), installs the tarball into a fresh temporary
# project and uses it from Node: on the CPU fallback (npm/test/node.mjs) and on WebGPU
# through the `webgpu` package with Chromium's SwiftShader Vulkan driver
# (npm/test/node-webgpu.mjs; with UNICOMPUTE_REQUIRE_WEBGPU=1 a missing adapter fails).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
"$repo/scripts/build-npm.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm init -y >/dev/null
npm install --silent --no-audit --no-fund "$repo"/npm/unicompute-*.tgz webgpu@0.6
cp "$repo"/npm/test/*.mjs .
node node.mjs
icd=/usr/lib/chromium/vk_swiftshader_icd.json
if [ -f "$icd" ]; then
    VK_ICD_FILENAMES="$icd" node node-webgpu.mjs
elif [ "${UNICOMPUTE_REQUIRE_WEBGPU:-}" = 1 ]; then
    echo "UNICOMPUTE_REQUIRE_WEBGPU=1 but $icd (Debian's chromium) is missing" >&2
    exit 1
else
    echo "SKIPPING Node + WebGPU: $icd (Debian's chromium) is missing"
fi
