#!/usr/bin/env bash
# ONNX's backend node tests (one model.onnx per test, with inputs and expected outputs as
# TensorProto files) and its light model zoo, from the onnx 1.22.0 wheel on PyPI (the 1.23
# wheels dropped the test data). The wheel is pinned by its sha256 and kept in .onnx/ (ignored
# by git); its onnx/backend/test/data/ folders (node/, light/ and the model tests below) are
# unpacked once into .onnx/. The Rust tests
# (tests/suite/onnx_*.rs) and npm/test/onnx-node.mjs read them from there.
set -euo pipefail
cd "$(dirname "$0")/.."
wheel=onnx-1.22.0-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl
sha256=1d0a2bdb15eb2b3cb65c438f3423d9620d14fdce32f92380e6bb1b2e09568ef5
mkdir -p .onnx
if [ ! -f ".onnx/$wheel" ]; then
    echo "== onnx: downloading the onnx 1.22.0 wheel (19 MB) for its node tests"
    python3 -m pip download -q --no-deps --only-binary=:all: --dest .onnx \
        --python-version 3.11 --implementation cp --abi cp311 --platform manylinux_2_28_x86_64 \
        onnx==1.22.0
fi
if ! echo "$sha256  .onnx/$wheel" | sha256sum --check --quiet; then
    echo ".onnx/$wheel is not the pinned file (sha256 $sha256): delete it" >&2
    exit 1
fi
# node/: one folder per node test; light/: the light model zoo (light_*.onnx with
# light_*_output_0.pb, the output for ONNX's dummy input); pytorch-converted/,
# pytorch-operator/ and simple/: small models laid out as the node tests are.
for part in node light pytorch-converted pytorch-operator simple; do
    [ "$(cat ".onnx/$part/.verified" 2>/dev/null)" = "$sha256" ] && continue
    rm -rf ".onnx/$part" .onnx/.unpack
    python3 - ".onnx/$wheel" .onnx/.unpack "$part" <<'PY'
import sys, zipfile
wheel, dest, part = sys.argv[1:]
prefix = f"onnx/backend/test/data/{part}/"
with zipfile.ZipFile(wheel) as z:
    z.extractall(dest, [n for n in z.namelist() if n.startswith(prefix)])
PY
    mv ".onnx/.unpack/onnx/backend/test/data/$part" ".onnx/$part"
    rm -rf .onnx/.unpack
    echo "$sha256" > ".onnx/$part/.verified"
done
