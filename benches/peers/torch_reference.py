#!/usr/bin/env python3
"""PyTorch's numbers for the ops `unicompute bench --backend cuda` measures, on the same GPU
and sizes, so the two can be put side by side (issue 3's GPU check).

    python3 benches/peers/torch_reference.py [--size 4194304] [--matmul-size 4096] [--json]

Reports device-to-device copy GB/s (the roofline), elementwise / softmax GB/s as a
percentage of it, and matmul TFLOP/s in f32 (TF32 off), TF32 and bf16. Times with CUDA
events, median of repetitions after warm-up.
"""
import argparse
import json
import statistics

import torch


def median_ms(fn, reps=20, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=1 << 24, help="elements of elementwise / softmax inputs")
    parser.add_argument("--matmul-size", type=int, default=4096, help="matrix edge")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    dev = torch.device("cuda")
    n = args.size
    x = torch.randn(n, device=dev)
    y = torch.randn(n, device=dev)
    out = torch.empty_like(x)
    rows = x.view(-1, 1024)
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}

    copy_ms = median_ms(lambda: out.copy_(x))
    copy_gbps = 2 * 4 * n / copy_ms / 1e6
    results["copy_gbps"] = copy_gbps
    for name, fn, bytes_moved in [
        ("relu", lambda: torch.clamp(x, min=0, out=out), 2 * 4 * n),
        ("exp", lambda: torch.exp(x, out=out), 2 * 4 * n),
        ("add", lambda: torch.add(x, y, out=out), 3 * 4 * n),
        ("softmax", lambda: torch.softmax(rows, dim=-1), 2 * 4 * n),
        ("sum", lambda: x.sum(), 4 * n),
    ]:
        ms = median_ms(fn)
        gbps = bytes_moved / ms / 1e6
        results[name] = {"gbps": gbps, "percent_of_copy": 100 * gbps / copy_gbps}

    e = args.matmul_size
    flops = 2 * e**3
    a = torch.randn(e, e, device=dev)
    b = torch.randn(e, e, device=dev)
    torch.backends.cuda.matmul.allow_tf32 = False
    results["sgemm_tflops"] = flops / median_ms(lambda: a @ b) / 1e9
    torch.backends.cuda.matmul.allow_tf32 = True
    results["tf32_tflops"] = flops / median_ms(lambda: a @ b) / 1e9
    torch.backends.cuda.matmul.allow_tf32 = False
    ab, bb = a.bfloat16(), b.bfloat16()
    results["bf16_tflops"] = flops / median_ms(lambda: ab @ bb) / 1e9

    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for k, v in results.items():
            print(f"{k:14} {v}")


if __name__ == "__main__":
    main()
