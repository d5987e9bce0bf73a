#!/usr/bin/env python3
"""numpy's numbers for the ops `unicompute bench --backend cpu` measures, on the same machine
and sizes, so the CPU backend can be compared with numpy (OpenBLAS) side by side.

    python3 benches/peers/numpy_reference.py [--size 16777216] [--matmul-size 1024] [--reps 7]

Reports median seconds after warm-up and GB/s (bytes read + written) or GFLOP/s, with numpy's
own threads (OpenBLAS uses every core for matmul; elementwise ops are single-threaded).
"""
import argparse

import numpy as np

from timing import median_seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1 << 24)
    parser.add_argument("--matmul-size", type=int, default=1024)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    n, e = args.size, args.matmul_size
    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, n).astype(np.float32)
    y = rng.uniform(-2, 2, n).astype(np.float32)
    out = np.empty_like(x)
    rows = x.reshape(-1, 1024)
    cases = [
        ("copy", lambda: np.copyto(out, x), 8 * n, "GB/s"),
        ("relu", lambda: np.maximum(x, 0, out=out), 8 * n, "GB/s"),
        ("exp", lambda: np.exp(x, out=out), 8 * n, "GB/s"),
        ("add", lambda: np.add(x, y, out=out), 12 * n, "GB/s"),
        ("sum", lambda: x.sum(), 4 * n, "GB/s"),
        ("softmax", lambda: np.exp(rows - rows.max(axis=1, keepdims=True)) / np.exp(rows - rows.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True), 8 * n, "GB/s"),
    ]
    a = rng.uniform(-1, 1, (e, e)).astype(np.float32)
    b = rng.uniform(-1, 1, (e, e)).astype(np.float32)
    cases.append(("matmul", lambda: a @ b, 2 * e**3, "GFLOP/s"))
    print(f"numpy {np.__version__}")
    for name, fn, work, unit in cases:
        s = median_seconds(fn, args.reps)
        print(f"{name:8} {s * 1e3:9.2f} ms  {work / s / 1e9:8.2f} {unit}")


if __name__ == "__main__":
    main()
