#!/usr/bin/env bash
# Packs the npm package (scripts/build-npm.sh), installs the tarball into a fresh temporary
# project and uses it from Node: on the CPU fallback (npm/test/node.mjs) and on WebGPU
# through the `webgpu` package with Chromium's SwiftShader Vulkan driver
# (npm/test/node-webgpu.mjs; with UNICOMPUTE_REQUIRE_WEBGPU=1 a missing adapter fails); and
# in a page bundled with Vite, loaded in headless Chromium through playwright-core, which
# checks the numbers and takes a screenshot (target/npm-page.png); and `unicompute/threads`
# on Web Workers in a cross-origin-isolated page (npm/test/threads.test.mjs).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
"$repo/scripts/build-npm.sh"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm init -y >/dev/null
npm install --silent --no-audit --no-fund "$repo"/npm/unicompute-*.tgz webgpu@0.6 vite@5 playwright-core@1.49
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

# unicompute/threads: the CPU backend on Web Workers in a cross-origin-isolated page gives the
# one-thread build's numbers exactly.
cp "$repo"/npm/test/threads.html .
node threads.test.mjs

cp -r "$repo/npm/test/page" .
./node_modules/.bin/vite build page --outDir ../dist --emptyOutDir --logLevel warn
# Started directly (not through npx), so the trap below stops the server itself.
./node_modules/.bin/vite preview --outDir dist --port 4873 --strictPort >vite.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/4873) 2>/dev/null && break; sleep 0.2; done
mkdir -p "$repo/target"
node page.test.mjs http://localhost:4873/ "$repo/target/npm-page.png"
