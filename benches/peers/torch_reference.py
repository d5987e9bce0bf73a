#!/usr/bin/env python3
"""PyTorch's numbers for the ops `unicompute bench --backend cuda` measures, on the same GPU
and sizes, so the two can be put side by side (issue 15's table).

    python3 benches/peers/torch_reference.py [--size N] [--row-len N] [--matmul-size N]
        [--attention B,H,S,D] [--causal] [--attention-dtype bf16] [--conv N,C,H,W,O]
        [--json] [--unicompute bench.json ...]

The sizes mean what they mean to `unicompute bench`: --size elements of the elementwise
inputs (and of the row ops, as [size / row_len, row_len]), --matmul-size the matrix edge,
--attention and --conv the attention and conv2d cases. Device times come from CUDA events:
medians of repetitions after warm-up. Reports device-to-device copy GB/s (the roofline),
relu / gelu / add / gelu(a + b) (eager: two kernels) / softmax / layer_norm / sum GB/s,
matmul TFLOP/s in f32 (TF32 off), TF32 and bf16, scaled_dot_product_attention and conv2d
(cuDNN, TF32 off) TFLOP/s, and the host cost per op of 1,000 small adds, issued eagerly
and replayed as a CUDA graph.

With --unicompute (the `--json` output of one or more `unicompute bench` runs on the same
GPU), prints both side by side: each op's rate, PyTorch's, and the ratio.
"""
import argparse
import json
import statistics
import time

import torch
import torch.nn.functional as F


def median_ms(fn, reps=20, warmup=5):
    """Median device time of `fn()` in milliseconds, from CUDA events around each call."""
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


def bandwidth(results, copy_gbps, name, fn, bytes_moved):
    gbps = bytes_moved / median_ms(fn) / 1e6
    results[name] = {"gbps": gbps, "percent_of_copy": 100 * gbps / copy_gbps}


def memory_bound(args, dev, results):
    n = args.size
    x, y = torch.randn(n, device=dev), torch.randn(n, device=dev)
    out = torch.empty_like(x)
    copy_gbps = 2 * 4 * n / median_ms(lambda: out.copy_(x)) / 1e6
    results["copy_gbps"] = copy_gbps
    rows = x.view(-1, args.row_len)
    for name, fn, moved in [
        ("relu", lambda: torch.clamp(x, min=0, out=out), 2 * 4 * n),
        ("exp", lambda: torch.exp(x, out=out), 2 * 4 * n),
        ("gelu", lambda: F.gelu(x), 2 * 4 * n),
        ("add", lambda: torch.add(x, y, out=out), 3 * 4 * n),
        # Eager PyTorch: the sum and the gelu are two kernels; the bytes counted are the
        # fused op's (two inputs read, one output written), as unicompute counts them.
        ("add_gelu", lambda: F.gelu(x + y), 3 * 4 * n),
        ("softmax", lambda: torch.softmax(rows, dim=-1), 2 * 4 * n),
        ("layer_norm", lambda: F.layer_norm(rows, (args.row_len,)), 2 * 4 * n),
        ("sum", lambda: x.sum(), 4 * n),
    ]:
        bandwidth(results, copy_gbps, name, fn, moved)


def matmuls(args, dev, results):
    e = args.matmul_size
    flops = 2 * e**3
    a, b = torch.randn(e, e, device=dev), torch.randn(e, e, device=dev)
    torch.backends.cuda.matmul.allow_tf32 = False
    results["sgemm_tflops"] = flops / median_ms(lambda: a @ b) / 1e9
    torch.backends.cuda.matmul.allow_tf32 = True
    results["tf32_tflops"] = flops / median_ms(lambda: a @ b) / 1e9
    torch.backends.cuda.matmul.allow_tf32 = False
    ab, bb = a.bfloat16(), b.bfloat16()
    results["bf16_tflops"] = flops / median_ms(lambda: ab @ bb) / 1e9


def attention_and_conv(args, dev, results):
    b, h, s, d = args.attention
    dtype = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}[args.attention_dtype]
    q, k, v = (torch.randn(b, h, s, d, device=dev, dtype=dtype) for _ in range(3))
    flops = 4 * b * h * s * s * d // (2 if args.causal else 1)
    ms = median_ms(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=args.causal))
    results["attention_tflops"] = flops / ms / 1e9
    n, c, hh, ww, o = args.conv
    x, w = torch.randn(n, c, hh, ww, device=dev), torch.randn(o, c, 3, 3, device=dev)
    torch.backends.cudnn.benchmark = True
    torch.backends.cudnn.allow_tf32 = False
    ms = median_ms(lambda: F.conv2d(x, w, padding=1))
    results["conv2d_tflops"] = 2 * n * o * hh * ww * c * 9 / ms / 1e9


def chain(dev, results, length=1000, reps=20):
    """Host microseconds per op of `length` adds of [1024]: eager, and one CUDA graph replay."""
    x, y = torch.randn(1024, device=dev), torch.randn(1024, device=dev)

    def run():
        t = x
        for _ in range(length):
            t = t + y
        return t

    def host_us(fn):
        times = []
        for _ in range(reps):
            torch.cuda.synchronize()
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        torch.cuda.synchronize()
        return statistics.median(times) / length * 1e6

    run()
    results["chain_us_per_op"] = host_us(run)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        run()  # warm-up on a side stream, as torch.cuda.graph asks
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    results["chain_replay_us_per_op"] = host_us(graph.replay)


# unicompute bench op name -> (this script's key, the unit of both).
PAIRS = {
    "relu": ("relu", "GB/s"), "exp": ("exp", "GB/s"), "gelu": ("gelu", "GB/s"), "add": ("add", "GB/s"),
    "add_gelu": ("add_gelu", "GB/s"), "softmax": ("softmax", "GB/s"), "layer_norm": ("layer_norm", "GB/s"),
    "sum": ("sum", "GB/s"), "attention": ("attention_tflops", "GFLOP/s"), "conv2d": ("conv2d_tflops", "GFLOP/s"),
    "chain": ("chain_us_per_op", "us/op"), "chain_replay": ("chain_replay_us_per_op", "us/op"),
}
MATMUL_KEYS = {"f32": "sgemm_tflops", "tf32": "tf32_tflops", "bf16": "bf16_tflops"}


def torch_rate(results, key):
    """PyTorch's figure in unicompute's unit (GB/s, GFLOP/s, us/op)."""
    v = results[key]
    if isinstance(v, dict):
        return v["gbps"]
    return v * 1e3 if key.endswith("tflops") else v


def side_by_side(results, reports):
    """Rows of op, shape, unicompute's rate, PyTorch's, and their ratio (>1: unicompute ahead).
    A matmul is paired with PyTorch's in the precision of the report's device (bf16 for bf16
    matrices)."""
    rows = []
    for report in reports:
        # bf16 matrices pair with PyTorch's bf16 GEMM whatever the policy's precision.
        dtype = report.get("config", {}).get("matmul_dtype", "f32")
        precision = dtype if dtype == "bf16" else report.get("matmul_precision", "f32")
        for r in report["results"]:
            name = r["name"].split("@")[0]
            if name == "matmul" and precision in MATMUL_KEYS:
                key, unit = MATMUL_KEYS[precision], "GFLOP/s"
            elif name in PAIRS:
                key, unit = PAIRS[name]
            else:
                continue
            ours, theirs = r["rate"], torch_rate(results, key)
            ratio = theirs / ours if unit == "us/op" else ours / theirs
            label = f'{r["name"]} ({precision})' if name == "matmul" else r["name"]
            rows.append((label, r["shape"], f"{ours:.4g} {unit}", f"{theirs:.4g} {unit}", f"{ratio:.2f}x"))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1 << 24, help="elements of the elementwise and row-op inputs")
    parser.add_argument("--row-len", type=int, default=1024, help="row length of softmax and layer_norm")
    parser.add_argument("--matmul-size", type=int, default=4096, help="matrix edge")
    parser.add_argument("--attention", type=lambda s: [int(v) for v in s.split(",")], default=[1, 8, 512, 64], help="B,H,S,D")
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--attention-dtype", choices=["f32", "f16", "bf16"], default="f32")
    parser.add_argument("--conv", type=lambda s: [int(v) for v in s.split(",")], default=[1, 32, 56, 56, 32], help="N,C,H,W,O")
    parser.add_argument("--unicompute", nargs="*", default=[], help="`unicompute bench --json` outputs to compare with")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if len(args.attention) != 4 or len(args.conv) != 5:
        parser.error("--attention takes B,H,S,D and --conv N,C,H,W,O")
    dev = torch.device("cuda")
    results = {"device": torch.cuda.get_device_name(), "torch": torch.__version__}
    memory_bound(args, dev, results)
    matmuls(args, dev, results)
    attention_and_conv(args, dev, results)
    chain(dev, results)
    if args.json:
        print(json.dumps(results, indent=2))
    else:
        for k, v in results.items():
            print(f"{k:24} {v}")
    reports = []
    for path in args.unicompute:
        with open(path) as f:
            reports.append(json.load(f)["report"])
    if reports:
        print("\n| op | shape | unicompute | PyTorch | unicompute / PyTorch |\n|---|---|---|---|---|")
        for row in side_by_side(results, reports):
            print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
