"""Real ONNX models checked against onnxruntime's CPU provider (scripts/onnx-models.sh).

    onnx_models.py prepare DIR [NAME=N | INPUT:N,N...]...  # seeded inputs, ORT's outputs
    onnx_models.py compare DIR BACKEND...  # unicompute's outputs (DIR/BACKEND/) against ORT's

DIR holds model.onnx. `prepare` writes DIR/inputs/NAME.npy (a `/` in NAME a folder; float inputs uniform in [-1, 1)
from seed 0; NAME=N sets a named extent, INPUT:N,N an input's whole shape, other open extents
are 1; `sr` is 16000; an input already there, as scripts/minilm.py writes them, is kept) and
DIR/expected/NAME.npy. `compare` prints one
line per backend with the largest absolute and relative differences, and fails where an
element is off by more than 1e-5 + 1e-4 * |expected|."""

import pathlib
import sys

import numpy as np
import onnxruntime as ort

RTOL, ATOL = 1e-4, 1e-5
TYPES = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(int32)": np.int32}
# Inputs whose values must be real ones, not random: Silero VAD's sample rate.
FIXED = {"sr": 16000}


def safe(name):
    """A name as `unicompute run --save` writes it."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def prepare(folder, dims, shapes):
    session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    feeds = {}
    for i in session.get_inputs():
        shape = [d if isinstance(d, int) else dims.get(d, 1) for d in i.shape]
        shape = shapes.get(i.name, shape)
        dtype = TYPES[i.type]
        given = folder / "inputs" / f"{i.name}.npy"
        if given.exists():
            value = np.load(given)
        elif i.name in FIXED:
            value = np.full(shape, FIXED[i.name], dtype)
        else:
            value = rng.uniform(-1.0, 1.0, shape).astype(dtype)
        feeds[i.name] = value
    for sub in ("inputs", "expected"):
        (folder / sub).mkdir(exist_ok=True)
    for name, value in feeds.items():
        path = folder / "inputs" / f"{name}.npy"
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, value)
    names = [o.name for o in session.get_outputs()]
    for name, value in zip(names, session.run(names, feeds)):
        np.save(folder / "expected" / f"{safe(name)}.npy", value)


def compare(folder, backends):
    ok = True
    for backend in backends:
        worst_abs = worst_rel = 0.0
        bad = []
        for want_file in sorted((folder / "expected").glob("*.npy")):
            want = np.load(want_file).astype(np.float64)
            got_file = folder / backend / want_file.name
            if not got_file.exists():
                bad.append(f"{want_file.stem}: no output")
                continue
            got = np.load(got_file).astype(np.float64)
            if got.shape != want.shape:
                bad.append(f"{want_file.stem}: shape {got.shape}, expected {want.shape}")
                continue
            diff = np.abs(got - want)
            worst_abs = max(worst_abs, float(diff.max(initial=0.0)))
            rel = diff / np.maximum(np.abs(want), 1e-30)
            worst_rel = max(worst_rel, float(rel.max(initial=0.0)))
            off = diff > ATOL + RTOL * np.abs(want)
            if off.any():
                i = int(np.argmax(off.reshape(-1)))
                bad.append(f"{want_file.stem}: {int(off.sum())} elements off, first at {i}: "
                           f"{got.reshape(-1)[i]} vs {want.reshape(-1)[i]}")
        status = "ok" if not bad else "FAILED: " + "; ".join(bad)
        print(f"{folder.name:12} {backend:7} max abs {worst_abs:.3e}  max rel {worst_rel:.3e}  "
              f"{status}")
        ok = ok and not bad
    return ok


def main():
    command, folder = sys.argv[1], pathlib.Path(sys.argv[2])
    if command == "prepare":
        args = sys.argv[3:]
        dims = {k: int(v) for k, v in (a.split("=") for a in args if "=" in a)}
        pairs = (a.split(":") for a in args if ":" in a)
        shapes = {k: [int(n) for n in v.split(",")] for k, v in pairs}
        prepare(folder, dims, shapes)
    elif not compare(folder, sys.argv[3:]):
        sys.exit(1)


if __name__ == "__main__":
    main()
