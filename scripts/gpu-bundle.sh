#!/usr/bin/env bash
# Packs what a GPU machine without Rust needs to check the CUDA and wgpu-on-Vulkan backends:
# the release test binaries, the CLI and a runner script, into .gpu/ (git-ignored).
# Copy .gpu/ to the machine and run `.gpu/run.sh` there; it runs every test with
# UNICOMPUTE_REQUIRE_CUDA=1 and UNICOMPUTE_REQUIRE_WEBGPU=1, then the cuda bench and
# PyTorch's reference numbers (benches/peers/torch_reference.py) when torch is installed.
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
for t in tests/*; do echo "== $t"; "$t" --test-threads=4 || status=1; done
./unicompute bench --backend cuda
./unicompute bench --backend webgpu --op add --op softmax --op matmul || true
python3 torch_reference.py || true
exit $status
RUN
chmod +x .gpu/run.sh
echo ".gpu/ ready: $(du -sh .gpu | cut -f1)"
