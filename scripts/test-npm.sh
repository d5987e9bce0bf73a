#!/usr/bin/env bash
# Packs the npm package (scripts/build-npm.sh), installs the tarball into a fresh temporary
# project and uses it from Node: on the CPU fallback (npm/test/node.mjs; the README's first
# program, npm/test/first-program.mjs) and on WebGPU
# through the `webgpu` package with Chromium's SwiftShader Vulkan driver
# (npm/test/node-webgpu.mjs; with UNICOMPUTE_REQUIRE_WEBGPU=1 a missing adapter fails); and
# in a page bundled with Vite, loaded in headless Chromium through playwright-core, which
# checks the numbers and takes a screenshot (target/npm-page.png); and `unicompute/threads`
# on Web Workers in a cross-origin-isolated page (npm/test/threads.test.mjs); the same app
# built with esbuild and webpack 5 (npm/test/bundlers/); the typings under `tsc --strict`
# (npm/test/types.ts); a page's own WebGPU code sharing the device (npm/test/interop/); the
# demo page of web/ (npm/test/demo.test.mjs); the wasm size budget; and ONNX's own backend node
# tests for Gather, LogSoftmax and Attention, on the CPU backend and on WebGPU
# (npm/test/onnx-node.mjs, with the data of the onnx 1.22.0 wheel, cached in .onnx/); and
# `unicompute/ort` against onnxruntime-web on the same models (npm/test/ort-session.mjs).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
"$repo/scripts/build-npm.sh"

# The size budget: the package's wasm at most 1,221 kB (1,221,000 bytes) gzipped; the threads
# build, which only cross-origin-isolated pages load, also carries rayon's thread pool and a
# std built for threads, and is held to 1,261 kB. Each raise is deliberate and says what it
# bought: 700/740 kB held everything up to the CPU executor of WGSL kernels (naga's parser
# and validator, the largest crate in it, at 425 of 1,950 kB before gzip); 720/760 kB adds
# the page-device adoption and integer arithmetic; 730/770 kB adds the i64 dtype (2.3 kB)
# and the WGSL executor's speed work (6 kB: loads and stores straight from an index, batches
# of workgroups with workgroup memory, built-in components, reused lane vectors), which made
# a WGSL elementwise kernel in the wasm 2.2x and the tiled WGSL matmul 5x faster; and the
# geometric, bit-field and packing built-ins of WGSL in user kernels on the CPU (3.9 kB);
# 745/785 kB adds capture and replay (10.4 kB; 9.2 kB in the threads build: graphs of the
# captured batch with their bind groups, the queue's turns while a capture lasts and its
# refusals, `queue.capture`, `graph.replay` and `buffer.tensor` in JS), which cuts the host
# cost of a chain of small ops on webgpu 3-5x, and leaves 5 kB for what comes next;
# 748/788 kB adds gather without silent values (3.5 kB: negative and any-rank indices, i64
# indices in the kernels, `{ mode }`, the status words that a read reports, runtime/checks.rs;
# every read now shares one copy of the backends' read path, which paid for 2.5 kB of it).
# 790/830 kB adds user kernels as real ones are written (42 kB): override constants set at
# creation and resolved by naga's process_overrides (23.5 kB, nearly all of it naga's
# constant evaluation and revalidation: WebGPU's pipeline constants, and without them the CPU
# ran one invocation per workgroup of `@workgroup_size(wg)` and returned Ok), then f32
# matrices, f16, modf and frexp in the CPU executor, `enable subgroups;`, the refusal of
# immediates and the loop count on drivers that end long loops (18.5 kB).
# 791/830 kB adds the JS idioms' wasm side (1.1 kB; 0.9 kB in the threads build, which still
# fits): `tensor.toBuffer()`, which lets an op -> user kernel -> op pipeline stay on the
# device, `device.trim()`, which gives the pool's cached blocks back, and messages that show
# JS values as JS writes them; the rest of the idioms (options objects, UnicomputeError,
# scopes, camelCase records, frozen shapes) live in npm/api.js, outside the wasm.
# 801/841 kB adds numbers as operands of the binary ops, `ones`, `full`, `arange` and seeded
# `randomUniform` / `randomNormal` (SplitMix64 and Box-Muller on the host, with libm's f64
# log, sin and cos), plain arrays as data, n-ary `concat` and pooling with windows, strides
# and pads per axis (11.3 kB in both builds: 789,077 to 800,363 and 828,916 to 840,241).
# 805/846 kB: all of issue 29 merged (the JS idioms, the op table's generated TS unions and
# `opMethods`, the above): measured 803,278 and 844,054.
# 807/846 kB adds ONNX's LRN, outputs left uncomputed when nothing reads them, the cuda
# f16/bf16 matmul dispatch and the split of long functions (1.6 kB, not attributed item by
# item: 804,398 to 806,022; the threads build 844,364, still under 846 kB).
# 930/971 kB adds the ONNX runner to the wasm (120 kB: 805,971 to 925,827 and 844,571 to
# 966,065): the JS InferenceSession links the protobuf decoder, the graph layer and the
# operators' mappings. onnxruntime-web's smallest wasm is over ten times that.
# 975/1,015 kB adds the bool, u8 and i8 dtypes (48 kB: 925,827 to 974,032 and 966,065 to
# 1,014,145): 1-byte packing in the cast, copy, gather and where kernels the CPU executor
# also carries, eight comparison and logic rows of the op table, and ONNX's logic operators.
# 995/1,036 kB adds the com.microsoft operators of transformer models prepared for browsers
# (SkipLayerNormalization, SimplifiedLayerNormalization and its skip form, FastGelu, BiasGelu,
# QuickGelu, Attention, MultiHeadAttention, RotaryEmbedding), the floor, ceil, round and sign
# rows of the op table, and ONNX's Mod, DepthToSpace and SpaceToDepth (19 kB, measured
# together: 974,032 to 992,951 and 1,014,145 to 1,033,723).
# 1,072/1,113 kB adds the topk, scatter and transposed-convolution kernels (WGSL sources the
# CPU executor also carries) and the prod reduction, the matmul split past the binding
# limit, and ONNX's TopK, NonZero, OneHot, the scatter family, Einsum, ConvTranspose, 3-D
# convolution and pooling, opset 6, Shrink, EmbedLayerNormalization, GroupQueryAttention and
# MatMulNBits (75 kB, measured together: 992,951 to 1,067,570 and 1,033,723 to 1,108,578).
# 1,156/1,199 kB adds ONNX sequences, the graph passes (folding, BatchNormalization, GELU,
# LayerNorm, RMSNorm, Conv/Gemm fusion, elementwise chains) and FusedConv / FusedGemm /
# FusedMatMul, runs as replays, JS freeDimensionOverrides, the batched matmul split, i64
# casts and comparisons as 32-bit words, and the chain op's code generator and CPU loop
# (86 kB, measured together: 1,068,383 to 1,154,380 and 1,109,081 to 1,197,443).
# 1,197/1,242 kB adds the attention and transpose passes and the `ai.unicompute` Attention
# operator, passes inside subgraphs, the packed 4/8-bit qmatmul family (its WGSL the CPU
# executor also carries), the memory plan, f16 weights, kernels compiled at load and the
# load report, relu6, and the tiled CPU convolution and pooling (41 kB, measured together:
# 1,154,380 to 1,195,181 and 1,197,443 to 1,240,292).
# 1,208/1,247 kB adds control flow that awaits device reads (If/Loop/SequenceMap as futures:
# Silero VAD on webgpu in browsers), check words shared in pages and kept by captures, blocks
# reused within a batch, phase-split depthwise convolutions, split CPU matrix products with
# their epilogue, and the LSTM gates as chains (11 kB, measured together: 1,195,181 to
# 1,206,490 and 1,240,292 to 1,245,416).
# 1,210/1,249 kB adds the CPU bodies the model profiles asked for (1.3 kB: 1,207,766 to
# 1,209,105 and 1,246,844 to 1,247,728; measured one file at a time: copies as runs of the
# dimensions contiguous in both views 44 bytes, softmax rows side by side 102, gather blocks
# to a task 180, pooling rows split by stride phase about 600, conv valid columns once 47):
# with the native-only pool hand-over, SqueezeNet went from 8.3 to 6.6 ms and YOLOv8n from
# 29.6 to 24.6 ms on the CPU (2 cores).
# 1,211/1,250 kB adds depthwise output rows computed in place, four blocks at once (about
# 1.2 kB: 1,209,093 to 1,210,272, the threads build to 1,249,224): MobileNetV2 on the wasm CPU
# backend, 1 thread: 38.6 ms against onnxruntime-web's 31.9 before, 31.9 against 30.0 after
# (a page each).
# 1,212/1,251 kB adds convolution tiles that gather their own im2col columns beside the shared
# matrix, and last-axis gathers as words (1.3 kB: 1,210,272 to 1,211,539, the threads build to
# 1,250,730): the im2col buffer each thread keeps, which grows the wasm heap for good, falls
# from up to 16 MiB to a tile of at most 1 MiB wherever a convolution's columns split into
# tiles (natively, YOLOv8n's peak resident memory fell by 10 MB).
# 1,213/1,252 kB adds convolutions of at most 8 output positions gathered as each position's
# patch, and the count of threads waiting for a queue (589 bytes: 1,211,783 to 1,212,372, the
# threads build 1,250,695 to 1,251,728): Silero VAD in Node on the wasm CPU backend, medians
# of 3,000 runs after 1,500 warm-ups, alternated three times: 0.45-0.51 ms before, 0.27-0.37
# after.
# 1,214/1,253 kB adds GPU buffers destroyed when the library lets them go (pooled blocks,
# upload and staging buffers, a capture's own) and constants folded on a CPU twin in a
# browser whose session runs on the GPU (1.0 kB: 1,212,373 to 1,213,410, the threads build
# 1,251,726 to 1,251,909): in a page, SqueezeNet's GPU buffers peaked at 28.2 MB before and
# 15.4 after (onnxruntime-web 19.0), its wasm heap at 18.5 and 13.0 MB.
# 1,215/1,255 kB adds pointwise convolutions run as matmul.wgsl's product on webgpu (1.1 kB:
# 1,213,079 to 1,214,141, the threads build 1,252,559 to 1,254,553): MobileNetV2 in a page
# on SwiftShader, 2.9-3.1 s before, 1.5-1.8 s after (onnxruntime-web 2.7-4.4 s).
# 1,221/1,261 kB adds convolutions that write straight into the Concat joining them, and
# three smaller runner and chain changes (5.6 kB: 1,214,141 to 1,219,754, the threads build
# 1,254,553 to 1,260,040). The joins are 5.2 kB of it (`twiggy diff` of the named builds: the
# run's early outputs and their slices, `conv2d_into` and `concat_into`, a second capture at
# load): natively SqueezeNet's Concats took 0.67 ms of its per-node profile before and 0.03
# after; in a page its run moved within this machine's noise. The rest: a run reading the
# constants from the plan (Silero VAD natively 0.227 to 0.210 ms), a Concat input joined
# twice copied through its own (a webgpu validation error before), squares in chains.
for budget in "npm/pkg/unicompute_bg.wasm 1221000" "npm/pkg-threads/unicompute_bg.wasm 1261000"; do
    set -- $budget
    size=$(gzip -9 -c "$repo/$1" | wc -c)
    echo "$1: $size bytes gzipped (budget $2)"
    if [ "$size" -gt "$2" ]; then
        echo "$1 is over its size budget" >&2
        exit 1
    fi
done
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
npm init -y >/dev/null
npm install --silent --no-audit --no-fund "$repo"/npm/unicompute-*.tgz webgpu@0.6 vite@5 playwright-core@1.49 \
    esbuild@0.24 webpack@5 webpack-cli@5 typescript@5 typescript7@npm:typescript@7 @webgpu/types@0.1 \
    @tensorflow/tfjs-core@4.22.0 @tensorflow/tfjs-backend-webgpu@4.22.0 onnx-proto@8.0.1 \
    onnxruntime-web@1.30.0
cp "$repo"/npm/test/*.mjs .
# The typings: a program using every export passes `tsc --strict` with lib.dom, under
# TypeScript 5 (whose lib.dom has no WebGPU: the program brings @webgpu/types) and 7 (whose
# lib.dom has it: the package must not declare it again).
cp "$repo"/npm/test/types.ts "$repo"/npm/test/tsconfig.json .
./node_modules/typescript/bin/tsc -p tsconfig.json --types @webgpu/types
./node_modules/typescript7/bin/tsc -p tsconfig.json
echo "types: tsc --strict --noEmit passes on npm/test/types.ts with TypeScript 5 and 7"
node node.mjs
node api.mjs
node first-program.mjs   # the README's first JS program
# Tensors left to the garbage collector are freed (gc() called by the test).
node --expose-gc gc.mjs

# ONNX's backend node tests (npm/test/onnx-node.mjs), from the pinned onnx 1.22.0 wheel
# (scripts/onnx-data.sh unpacks them into .onnx/node/).
"$repo/scripts/onnx-data.sh"
onnx_tests="$repo/.onnx/node"
node onnx-node.mjs "$onnx_tests" cpu
# `unicompute/ort` runs a program written for onnxruntime-web, beside onnxruntime-web itself
# (the oracle) on the same models and inputs (npm/test/ort-session.mjs): the light model zoo,
# and YOLOv8n where scripts/onnx-models.sh has fetched it (scripts/test.sh runs it first).
yolo="$repo/.onnx/models/yolov8n/model.onnx"
node ort-session.mjs "$repo/.onnx/light" "$yolo" cpu

icd=/usr/lib/chromium/vk_swiftshader_icd.json
if [ -f "$icd" ]; then
    VK_ICD_FILENAMES="$icd" node node-webgpu.mjs
    VK_ICD_FILENAMES="$icd" node onnx-node.mjs "$onnx_tests" webgpu
    VK_ICD_FILENAMES="$icd" node ort-session.mjs "$repo/.onnx/light" "$yolo" webgpu
elif [ "${UNICOMPUTE_REQUIRE_WEBGPU:-}" = 1 ]; then
    echo "UNICOMPUTE_REQUIRE_WEBGPU=1 but $icd (Debian's chromium) is missing" >&2
    exit 1
else
    echo "SKIPPING Node + WebGPU: $icd (Debian's chromium) is missing"
fi

# ONNX models in headless Chromium: unicompute on WebGPU and on the wasm CPU beside
# onnxruntime-web on the same page (npm/test/ort-page.html).
cp "$repo"/npm/test/ort-page.html .
cp "$repo/.onnx/light/light_squeezenet.onnx" squeezenet.onnx
page_models=(squeezenet.onnx)
if [ -f "$yolo" ]; then cp "$yolo" yolov8n.onnx; page_models+=(yolov8n.onnx); fi
node ort-page.test.mjs "${page_models[@]}"

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

# Other bundlers build the same app from the installed package, and it computes in headless
# Chromium: esbuild (which does not copy the wasm: the build copies it and the app passes its
# URL to init) and webpack 5 (which emits it as an asset by itself).
cp -r "$repo/npm/test/bundlers" .
(
    cd bundlers
    ../node_modules/.bin/esbuild esbuild.js --bundle --format=esm --platform=browser --target=es2022 \
        --outfile=dist-esbuild/main.js --log-level=warning
    cp ../node_modules/unicompute/pkg/unicompute_bg.wasm index.html dist-esbuild/
    ../node_modules/.bin/webpack --config webpack.config.cjs --no-stats
    cp index.html dist-webpack/
)
node bundlers/bundle.test.mjs esbuild bundlers/dist-esbuild
node bundlers/bundle.test.mjs webpack bundlers/dist-webpack

# A page's own WebGPU code and unicompute on one GPUDevice (npm/test/interop/): bundled with
# esbuild, the wasm where the package looks for it by default.
cp -r "$repo/npm/test/interop" .
mkdir -p interop-dist/pkg
./node_modules/.bin/esbuild interop/main.js --bundle --format=esm --platform=browser --target=es2022 \
    --outfile=interop-dist/main.js --log-level=warning
cp interop/index.html interop-dist/
cp node_modules/unicompute/pkg/unicompute_bg.wasm interop-dist/pkg/
node interop.test.mjs interop-dist

# The demo page (web/): built with Vite from the installed package beside the benchmark files
# it shares, then clicked through in headless Chromium (screenshots in target/demo-*.png).
mkdir -p demo-site/bench
cp -r "$repo/web/index.html" "$repo/web/vite.config.js" "$repo/web/demo" demo-site/
cp "$repo"/web/bench/{workloads,ours,peers,onnx}.js demo-site/bench/
./node_modules/.bin/vite build demo-site --logLevel warn
node demo.test.mjs demo-site/dist "$repo/target"
