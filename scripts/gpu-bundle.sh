#!/usr/bin/env bash
# Packs what a GPU machine without Rust needs to check the CUDA and wgpu-on-Vulkan backends:
# the release test binaries, the CLI and a runner script, into .gpu/ (git-ignored).
# Copy .gpu/ to the machine and run `.gpu/run.sh` there; it runs every test with
# UNICOMPUTE_REQUIRE_CUDA=1 and UNICOMPUTE_REQUIRE_WEBGPU=1, then the benchmark table of
# issue 15 at its sizes on cuda and on wgpu-Vulkan, and PyTorch's numbers at the same sizes
# beside them (benches/peers/torch_reference.py) when torch is installed. `.gpu/run.sh bench`
# runs the benchmarks alone. The JSON of each run is left in .gpu/results/.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .gpu && mkdir -p .gpu/tests
cargo build --release --bin unicompute
cargo test --release --no-run --message-format=json 2>/dev/null \
    | python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] != ["bin"]:
        print(m["executable"])' \
    | while read -r exe; do
        # tests/cli.rs runs the CLI from this machine's target/ and stays here.
        case "$(basename "$exe")" in cli-*) ;; *) cp "$exe" .gpu/tests/ ;; esac
    done
cp target/release/unicompute .gpu/
cp benches/peers/torch_reference.py .gpu/
cat > .gpu/run.sh <<'RUN'
#!/usr/bin/env bash
# Runs on the GPU machine from the directory that holds it (see scripts/gpu-bundle.sh).
cd "$(dirname "$0")"
export UNICOMPUTE_REQUIRE_CUDA=1 UNICOMPUTE_REQUIRE_WEBGPU=1 XDG_RUNTIME_DIR=$(mktemp -d)
# NVRTC and cuBLAS: from the CUDA toolkit, else from the pip wheels PyTorch brings.
for d in /usr/local/cuda/lib64 $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, sub, "lib") for p in nvidia.__path__ for sub in os.listdir(p)))' 2>/dev/null); do
    [ -d "$d" ] && LD_LIBRARY_PATH="$d:${LD_LIBRARY_PATH:-}"
done
export LD_LIBRARY_PATH
./unicompute info
status=0
if [ "${1:-}" != bench ]; then
    for t in tests/*; do echo "== $t"; "$t" --test-threads=4 || status=1; done
fi
# Issue 15's table: 256 MiB elementwise operands, [8192, 8192] row ops, 8192^3 matmuls in each
# precision, causal bf16 attention [8, 16, 4096, 128], ResNet-50's 3x3 conv (conv2_x, batch
# 32) and the chain of 1,000 small ops recorded and replayed; wgpu-Vulkan at 4096^3.
mkdir -p results
sizes=(--size 67108864 --row-len 8192 --attention 8,16,4096,128 --causal --attention-dtype bf16 --conv 32,64,56,56,64)
run() { out=$1; shift; ./unicompute bench "$@" --json > "results/$out.json" && echo "results/$out.json" || { echo "bench $out failed" >&2; status=1; }; }
run cuda --backend cuda "${sizes[@]}" --op relu --op gelu --op add --op add_gelu --op softmax --op layer_norm \
    --op attention --op conv2d --op chain --op chain_replay --op chain_done --op chain_replay_done
for p in f32 tf32 bf16; do
    echo "{\"backends\": [\"cuda\"], \"precision\": \"$p\"}" > "results/policy-$p.json"
    run "matmul-$p" --policy "results/policy-$p.json" --matmul-size 8192 --op matmul
done
run vulkan --backend webgpu --size 67108864 --matmul-size 4096 --op add --op relu --op matmul
python3 torch_reference.py "${sizes[@]}" --matmul-size 8192 \
    --unicompute results/cuda.json results/matmul-f32.json results/matmul-tf32.json results/matmul-bf16.json || true
python3 torch_reference.py --size 67108864 --matmul-size 4096 --unicompute results/vulkan.json || true
exit $status
RUN
chmod +x .gpu/run.sh
echo ".gpu/ ready: $(du -sh .gpu | cut -f1)"
