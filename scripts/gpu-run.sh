#!/usr/bin/env bash
# The GPU machine's side of scripts/gpu-bundle.sh, copied to .gpu/run.sh; it needs no Rust.
#
#   .gpu/run.sh            # info, every test, the benchmark table beside PyTorch, the models
#   .gpu/run.sh tests      # info and the tests
#   .gpu/run.sh bench      # info and the table
#   .gpu/run.sh models     # info and the ONNX model table beside onnxruntime (16 threads)
#   .gpu/run.sh exec CMD   # info, then CMD with the same libraries and variables (from .gpu/)
#   DRY=1 .gpu/run.sh      # the rehearsal on a machine without a GPU: small sizes, and the
#                          # CUDA device not required (steps that need it fail, and say so);
#                          # the models run on cpu and webgpu, with the checkout's .onnx/py
#
# Each step runs under its own time limit and writes its log under $OUT (the device tool's
# folder; .gpu/out elsewhere) as it goes, so a run cut short still returns what was done.
# $OUT gets at most 8 files: summary.txt (one line a step), info.log, tests.log, bench.log,
# bench.jsonl (every bench run's JSON, a line each), ncu.log, torch.log, exec.log; the model
# table goes to bench.log and its JSON, a line, to bench.jsonl.
set -uo pipefail
cd "$(dirname "$0")"
part=${1:-all}
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT" bin-unpacked
export XDG_RUNTIME_DIR=$(mktemp -d)

# One step: a name, its log, a time limit in seconds, then the command.
step() {
    local name=$1 log=$2 limit=$3 start=$SECONDS rc
    shift 3
    echo "== $name (limit ${limit}s)" | tee -a "$OUT/$log"
    # Through bash, so that a step may be one of this script's functions (exported below).
    timeout -k 10 "$limit" bash -c '"$@"' "$name" "$@" 2>&1 | tee -a "$OUT/$log"
    rc=${PIPESTATUS[0]}
    echo "$name: rc=$rc in $((SECONDS - start))s" | tee -a "$OUT/summary.txt"
    [ "$rc" -eq 0 ] || status=1
}

unpack() {
    for f in bin/*.xz; do
        python3 -c 'import lzma, shutil, sys
with lzma.open(sys.argv[1]) as src, open(sys.argv[2], "wb") as dst: shutil.copyfileobj(src, dst)' \
            "$f" "bin-unpacked/$(basename "$f" .xz)"
    done
    chmod +x bin-unpacked/*
    mkdir -p data/onnx
    tar -xJf data.tar.xz -C data --transform 's,^\(node\|light\|pytorch-[a-z]*\|simple\),onnx/\1,'
    export UNICOMPUTE_CORPUS_DIR=$PWD/data/.corpus UNICOMPUTE_ONNX_DIR=$PWD/data/onnx
}

# Debian's Vulkan loader and glvnd libraries that the machine lacks, unpacked into sysroot/
# (the driver's own glvnd stays first where it has one), and the NVIDIA driver's manifest;
# what the loader will find goes to info.log.
vulkan() {
    local deb soname icd
    for deb in debs/*.deb; do
        case $(basename "$deb") in
            libvulkan1_*) soname=libvulkan.so.1 ;; libglvnd0_*) soname=libGLdispatch.so.0 ;;
            libglx0_*) soname=libGLX.so.0 ;; libgl1_*) soname=libGL.so.1 ;;
            libegl1_*) soname=libEGL.so.1 ;; libopengl0_*) soname=libOpenGL.so.0 ;;
            libgles2_*) soname=libGLESv2.so.2 ;; *) continue ;;
        esac
        ldconfig -p | awk '{print $1}' | grep -qx "$soname" && continue
        echo "== vulkan: $soname from $(basename "$deb")"
        dpkg -x "$deb" sysroot
    done >> "$OUT/info.log" 2>&1
    local lib=$PWD/sysroot/usr/lib/x86_64-linux-gnu
    [ -d "$lib" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$lib"
    [ -n "${DRY:-}" ] && return
    icd=$(ls /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd*.json \
        /usr/share/vulkan/icd.d/nvidia_icd*.json /etc/vulkan/icd.d/nvidia_icd*.json 2>/dev/null |
        head -1)
    [ -n "$icd" ] && export VK_DRIVER_FILES=$icd
    {
        echo "== vulkan: VK_DRIVER_FILES=${VK_DRIVER_FILES:-}"
        [ -n "$icd" ] && cat "$icd"
        ldconfig -p | grep -E 'libvulkan|libGLX|libGLdispatch|libEGL.so'
    } >> "$OUT/info.log" 2>&1
}

# NVRTC and cuBLAS from the CUDA toolkit, else from the pip wheels PyTorch brings.
cuda_libraries() {
    local d wheels
    wheels=$(python3 -c 'import nvidia, os
print(" ".join(os.path.join(p, s, "lib") for p in nvidia.__path__ for s in os.listdir(p)))' \
        2>/dev/null)
    [ -d /usr/local/cuda/bin ] && PATH="$PATH:/usr/local/cuda/bin"
    for d in /usr/local/nvidia/lib64 /usr/local/cuda/lib64 $wheels; do
        [ -d "$d" ] && LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
    done
    export LD_LIBRARY_PATH
}

# The library's unit tests, each in a process of its own, 8 at a time (NVRTC's compiles of
# every kernel and builtin shader are CI's checks and slow here: skipped), then each module
# of tests/suite/ in a process of its own (a crash or hang costs one module), within
# TEST_BUDGET seconds (default 180; TEST_MODULES=0 skips this); then the whole suite in one
# process, up to three times within AGAIN_BUDGET more seconds (default 90), each only with
# 75 s left. Without a webgpu device the tests still run on the others, and the step fails.
tests() {
    local deadline=$((SECONDS + ${TEST_BUDGET:-180})) module left
    if [ -z "${DRY:-}" ] && ! bin-unpacked/unicompute info | grep -q '^[0-9]  *webgpu'; then
        echo "tests: no webgpu device, so not required" | tee -a "$OUT/summary.txt"
        VK_LOADER_DEBUG=error,warn,driver bin-unpacked/unicompute info >> "$OUT/info.log" 2>&1
        unset UNICOMPUTE_REQUIRE_WEBGPU
        status=1
    fi
    step "tests: lib" tests.log 90 lib_tests
    [ "${TEST_MODULES:-1}" = 1 ] || deadline=$SECONDS
    for module in $(modules); do
        left=$((deadline - SECONDS))
        if [ "$left" -le 5 ]; then
            echo "tests: $module: no time left" | tee -a "$OUT/summary.txt"
            status=1
            continue
        fi
        [ "$left" -lt 120 ] || left=120
        step "tests: $module" tests.log "$left" module_tests "$module"
    done
    # Threads sharing the devices once crashed or hung
    # (docs/src/performance/2026-11-26-gpu-sessions.md): the whole suite again in one
    # process, a few times, while the budget lasts.
    for run in 1 2 3; do
        left=$((deadline + ${AGAIN_BUDGET:-90} - SECONDS))
        # A run takes 45-70 s on an H200; one cut short prints no failure's message.
        [ "$left" -ge 75 ] || break
        step "tests: whole suite on 8 threads, run $run" tests.log "$left" \
            watched bin-unpacked/suite --test-threads=8
    done
}

# The modules of tests/suite/, or none when TEST_MODULES=0 (the whole suite runs anyway).
modules() {
    [ "${TEST_MODULES:-1}" = 1 ] || return 0
    bin-unpacked/suite --list | sed -n 's/::.*: test$//p' | sort -u
}

# A command given HANG_S seconds (default 50): if it is still running then, cuda-gdb prints
# every thread's stack and the command is killed (rc 137).
watched() {
    local pid waited=0
    "$@" &
    pid=$!
    while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt "${HANG_S:-50}" ]; do
        sleep 1
        waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        echo "== hung after ${waited}s: $*; every thread's stack"
        command -v cuda-gdb >/dev/null &&
            timeout 60 cuda-gdb -q -batch -p "$pid" -ex 'thread apply all bt 12' 2>&1 |
            grep -E '^(Thread|#)' | head -150
        kill -9 "$pid"
    fi
    wait "$pid"
}

# One module of tests/suite/, watched. If it crashes or hangs, each of its tests runs alone,
# and one that crashes alone again under cuda-gdb, for a backtrace.
module_tests() {
    local name rc
    watched bin-unpacked/suite "$1::" --test-threads=8
    rc=$?
    [ "$rc" -ge 124 ] || return "$rc"
    echo "== $1: crashed or hung (rc=$rc); each test alone"
    for name in $(bin-unpacked/suite --list "$1::" | sed -n 's/: test$//p'); do
        timeout 30 bin-unpacked/suite --exact "$name" --test-threads=1 >/dev/null 2>&1
        rc=$?
        echo "$name: rc=$rc"
        [ "$rc" -ge 128 ] && [ "$rc" -ne 137 ] && command -v cuda-gdb >/dev/null &&
            timeout 60 cuda-gdb -q -batch -ex run -ex bt -ex 'info threads' \
                --args bin-unpacked/suite --exact "$name" --test-threads=1 2>&1 | tail -80
    done
    return 1
}

# Every unit test of the library alone, 8 at a time; fails if any fails.
lib_tests() {
    set -o pipefail
    bin-unpacked/lib --list | sed -n 's/: test$//p' |
        grep -v -e every_kernel_compiles_for -e every_builtin_shader_translates_to_cuda |
        xargs -P 8 -I{} bash -c 'lib_test "$1"' lib_test {}
}

# One unit test within 60 s: a line with its verdict, and its output if it failed.
lib_test() {
    local log rc
    log=$(timeout 60 bin-unpacked/lib --exact "$1" --nocapture 2>&1)
    rc=$?
    echo "$1: rc=$rc"
    [ "$rc" -eq 0 ] || { echo "$log"; return 1; }
}

# The GPU table (docs/src/performance/2026-11-26-h200.md): 256 MiB elementwise operands,
# [8192, 8192] row ops, 8192^3 matmuls in each precision, causal bf16 attention
# [8, 16, 4096, 128], ResNet-50's 3x3 conv (conv2_x, batch 32), the chain of 1,000 small
# ops eager and replayed; wgpu on Vulkan at 4096^3.
bench() {
    local sizes=(--size 67108864 --row-len 8192 --attention 8,16,4096,128 --causal
        --attention-dtype bf16 --conv 32,64,56,56,64)
    local matmul=8192 vk_matmul=4096 vk_size=67108864
    if [ -n "${DRY:-}" ]; then
        sizes=(--size 65536 --row-len 256 --attention 1,2,128,32 --causal --attention-dtype bf16
            --conv 1,8,16,16,8)
        matmul=128 vk_matmul=128 vk_size=65536
    fi
    local ops=(relu gelu add add_gelu softmax layer_norm attention conv2d
        chain chain_replay chain_done chain_replay_done)
    step "bench: cuda" bench.log 100 bench_json --backend cuda "${sizes[@]}" "${ops[@]/#/--op=}"
    # bf16: bf16 matrices (cuBLAS multiplies them as stored), beside PyTorch's bf16 GEMM.
    for p in f32 tf32 bf16; do
        echo "{\"backends\": [\"cuda\"], \"precision\": \"$p\"}" > "policy-$p.json"
        local dtype=f32
        [ "$p" = bf16 ] && dtype=bf16
        step "bench: matmul $p" bench.log 45 bench_json --policy "policy-$p.json" \
            --matmul-size "$matmul" --matmul-dtype "$dtype" --op matmul
    done
    step "bench: vulkan" bench.log 60 bench_json --backend webgpu --size "$vk_size" \
        --matmul-size "$vk_matmul" --op add --op relu --op add_gelu --op matmul
    [ -n "${DRY:-}" ] && return
    step "ncu: kernel times" ncu.log 90 ncu_kernels "${sizes[@]:0:4}"
    step "torch: cuda table" torch.log 90 python3 torch_reference.py "${sizes[@]}" \
        --matmul-size "$matmul" --unicompute bench-cuda.json bench-f32.json bench-tf32.json \
        bench-bf16.json
    step "torch: vulkan table" torch.log 60 python3 torch_reference.py --size "$vk_size" \
        --matmul-size "$vk_matmul" --unicompute bench-vulkan.json
}

# The ONNX model table (scripts/bench_models.py, one round): `unicompute run` on cuda and on
# webgpu (wgpu on Vulkan) beside onnxruntime's CPU provider with 16 intra-op threads, on the
# same model bytes and inputs: the skeletons of models.tar.xz filled by gpu_models.py, which
# also writes onnxruntime's outputs there that the max abs differences are taken against.
models() {
    local backends="cuda webgpu" threads=16 runs=20 warmup=3
    if [ -n "${DRY:-}" ]; then
        backends="cpu webgpu" threads=$(nproc) runs=2 warmup=0
    fi
    rm -rf models
    step "models: unpack" bench.log 40 python3 gpu_models.py unpack models.tar.xz models
    BACKENDS=$backends PEERS=ort THREADS=$threads RUNS=$runs WARMUP=$warmup ROUNDS=1 \
        MODELS_DIR=$PWD/models UNICOMPUTE_CLI=$PWD/bin-unpacked/unicompute \
        step "models: table" bench.log 120 models_json
}

# The model table of every model unpacked; its JSON, a line, to $OUT/bench.jsonl.
models_json() {
    python3 bench_models.py run models/table.json $(ls models) || return
    python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))))' \
        models/table.json >> "$OUT/bench.jsonl"
}

# The elementwise and row kernels' own durations and DRAM bytes from Nsight Compute's
# counters (where the machine has it), to tell a kernel's time from the bench's around it.
ncu_kernels() {
    local ncu
    ncu=$(command -v ncu ||
        ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
    [ -n "$ncu" ] || { echo "no ncu on this machine"; return 1; }
    "$ncu" --clock-control none -k 'regex:unary_main|binary_main|softmax|norm' -c 24 \
        --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
        bin-unpacked/unicompute bench --backend cuda "$@" --reps 1 --op relu --op add_gelu \
        --op softmax --op layer_norm
    # Each launch's device time beside the bench's own total.
    bin-unpacked/unicompute bench --backend cuda "$@" --op relu --op add --op softmax \
        --profile trace.json
}

# One bench run: its JSON goes to bench-<what>.json and, a line, to $OUT/bench.jsonl.
bench_json() {
    local what
    case "$*" in
        *policy-*) what=$(echo "$*" | sed 's/.*policy-\([a-z0-9]*\)\.json.*/\1/') ;;
        *webgpu*) what=vulkan ;;
        *) what=cuda ;;
    esac
    bin-unpacked/unicompute bench "$@" --json > "bench-$what.json" || return
    python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))))' \
        "bench-$what.json" >> "$OUT/bench.jsonl"
    cat "bench-$what.json"
}

export -f bench_json models_json ncu_kernels lib_tests lib_test module_tests watched
export OUT
status=0
unpack
vulkan
cuda_libraries
# The rehearsal's Python packages (onnx, onnxruntime): scripts/onnx-models.sh's.
[ -n "${DRY:-}" ] && [ -d ../.onnx/py ] && export PYTHONPATH=$PWD/../.onnx/py
if [ -z "${DRY:-}" ]; then
    export UNICOMPUTE_REQUIRE_CUDA=1 UNICOMPUTE_REQUIRE_WEBGPU=1 UNICOMPUTE_CRASH_BACKTRACE=1
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv \
        >> "$OUT/info.log" 2>&1
fi
step info info.log 60 bin-unpacked/unicompute info
case $part in
    all) tests; bench; models ;;
    tests) tests ;;
    bench) bench ;;
    models) models ;;
    exec) shift; step exec exec.log "${EXEC_LIMIT:-300}" "$@" ;;
    *) echo "unknown part '$part': all, tests, bench, models or exec" >&2; exit 2 ;;
esac
echo "== done: status $status" | tee -a "$OUT/summary.txt"
# What was unpacked goes, so that .gpu/ stays small enough to travel again after a rehearsal.
rm -rf bin-unpacked data sysroot models __pycache__
echo "== failures"
grep -h -e '^test .* FAILED$' -e 'panicked at' -e '^---- ' -e 'crashed or hung' \
    -e ': rc=[1-9]' "$OUT"/tests.log 2>/dev/null | head -60
echo "== summary"
cat "$OUT/summary.txt"
exit $status
