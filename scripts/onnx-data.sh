#!/usr/bin/env bash
# ONNX's backend node tests (one model.onnx per test, with inputs and expected outputs as
# TensorProto files), from the onnx 1.22.0 wheel on PyPI (the 1.23 wheels dropped the test
# data). The wheel is pinned by its sha256 and kept in .onnx/ (ignored by git); its
# onnx/backend/test/data/node/ folder is unpacked once into .onnx/node/. The Rust tests
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
if [ "$(cat .onnx/node/.verified 2>/dev/null)" != "$sha256" ]; then
    rm -rf .onnx/node .onnx/.unpack
    python3 - ".onnx/$wheel" .onnx/.unpack <<'PY'
import sys, zipfile
wheel, dest = sys.argv[1:]
prefix = "onnx/backend/test/data/node/"
with zipfile.ZipFile(wheel) as z:
    z.extractall(dest, [n for n in z.namelist() if n.startswith(prefix)])
PY
    mv .onnx/.unpack/onnx/backend/test/data/node .onnx/node
    rm -rf .onnx/.unpack
    echo "$sha256" > .onnx/node/.verified
fi
