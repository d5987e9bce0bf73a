#!/usr/bin/env bash
# Real ONNX models with real weights, taken from public PyPI packages, run by `unicompute run`
# on each backend and checked against onnxruntime's CPU provider on the same seeded inputs
# (scripts/onnx_models.py: within 1e-4 relative and 1e-5 absolute). Also models of known
# geometries with seeded weights that scripts write: a BERT encoder of all-MiniLM-L6's
# (scripts/minilm.py), as exported and as onnxruntime's transformer optimizer fuses it, and
# MobileNetV2 (scripts/mobilenetv2.py); and, for the model benchmark, the onnx wheel's light
# SqueezeNet and ResNet-50 (scripts/onnx-data.sh). Models a session refuses at load are listed
# with the operators it lacks, not failed. Downloads (onnxruntime, onnx, the model packages;
# about 60 MB) and the made models (14-90 MB each) are kept in .onnx/ (ignored by git).
#
#   scripts/onnx-models.sh [BACKEND...]    # default: cpu webgpu; needs a release build of the
#                                          # CLI (cargo build --release --bin unicompute)
#   scripts/onnx-models.sh --prepare       # only fetch or make the models, inputs and
#                                          # onnxruntime's outputs (what bench-models.sh runs)
# MODELS="NAME..." picks models (default: all but the light ones, which the suite checks).
set -euo pipefail
cd "$(dirname "$0")/.."
prepare_only=0
[ "${1:-}" = --prepare ] && { prepare_only=1; shift; }
backends=("$@")
[ ${#backends[@]} -eq 0 ] && backends=(cpu webgpu)
bin=${CARGO_TARGET_DIR:-target}/release/unicompute
root=.onnx/models
py=.onnx/py
mkdir -p "$root"
# onnx: for scripts/minilm.py and the optimizer (the wheel scripts/onnx-data.sh keeps, if there).
pins=(onnxruntime==1.32.0 numpy==2.4.6 onnx==1.22.0)
if [ "$(cat "$py/.installed" 2>/dev/null)" != "${pins[*]}" ]; then
    echo "== onnx models: installing ${pins[*]} (PyPI) into $py"
    rm -rf "$py"
    python3 -m pip install -q --disable-pip-version-check --target "$py" --find-links .onnx \
        "${pins[@]}"
    echo "${pins[*]}" >"$py/.installed"
fi
# name, PyPI package, the model's path inside its wheel, then extents of its named
# dimensions (NAME=N) or inputs' shapes (INPUT:N,N) where 1 will not do. A package
# `make:SCRIPT` is a model scripts/SCRIPT makes, the third field its argument (it also writes
# the inputs); `light` is a model of the onnx wheel's light zoo, the third field its file.
models=(
    "yolov8n nudenet==3.4.2 nudenet/320n.onnx height=320 width=320"
    "silero-vad silero-vad==6.2.3 silero_vad/data/silero_vad.onnx input:1,512"
    "minilm make:minilm.py plain"
    "minilm-fused make:minilm.py fused"
    "mobilenetv2 make:mobilenetv2.py -"
    "squeezenet light light_squeezenet.onnx"
    "resnet50 light light_resnet50.onnx"
)
picked=${MODELS:-yolov8n silero-vad minilm minilm-fused mobilenetv2}
status=0
for entry in "${models[@]}"; do
    read -r name package member dims <<<"$entry"
    [[ " $picked " == *" $name "* ]] || continue
    dir=$root/$name
    script=scripts/${package#make:}
    if [[ $package == make:* ]] \
        && [ "$(cat "$dir/.made" 2>/dev/null)" != "$(sha256sum "$script" | cut -c1-16)" ]; then
        rm -rf "$dir"
        PYTHONPATH=$py python3 "$script" "$dir" "$member"
        sha256sum "$script" | cut -c1-16 >"$dir/.made"
    elif [ "$package" = light ] && [ ! -f "$dir/model.onnx" ]; then
        [ -f ".onnx/light/$member" ] || scripts/onnx-data.sh
        mkdir -p "$dir"
        cp ".onnx/light/$member" "$dir/model.onnx"
    elif [ ! -f "$dir/model.onnx" ]; then
        mkdir -p "$dir/wheel"
        python3 -m pip download -q --disable-pip-version-check --no-deps \
            --only-binary=:all: --dest "$dir/wheel" "$package"
        python3 -c 'import sys, zipfile; w, m, out = sys.argv[1:]
open(out, "wb").write(zipfile.ZipFile(w).read(m))' "$dir"/wheel/*.whl "$member" "$dir/model.onnx"
        rm -rf "$dir/wheel"
    fi
    # shellcheck disable=SC2086 # the extents are separate words
    [ -d "$dir/expected" ] || PYTHONPATH=$py python3 scripts/onnx_models.py prepare "$dir" $dims
    [ $prepare_only = 1 ] && continue
    feeds=()
    while IFS= read -r f; do
        rel=${f#"$dir"/inputs/}
        feeds+=(--input "${rel%.npy}=$f")
    done < <(find "$dir/inputs" -name '*.npy' | sort)
    ran=()
    for b in "${backends[@]}"; do
        rm -rf "${dir:?}/$b"
        if ! out=$("$bin" run "$dir/model.onnx" "${feeds[@]}" --backend "$b" \
            --runs 0 --save "$dir/$b" 2>&1); then
            if echo "$out" | grep -q "cannot run\|lacks"; then
                reason=$(echo "$out" | grep -v '^error: XDG' | tr '\n' ' ')
                echo "$name $b: refused at load: $reason"
                continue
            fi
            echo "$out"
            status=1
            continue
        fi
        ran+=("$b")
    done
    if [ ${#ran[@]} -gt 0 ]; then
        PYTHONPATH=$py python3 scripts/onnx_models.py compare "$dir" "${ran[@]}" || status=1
    fi
done
exit $status
