#!/usr/bin/env python3
"""ONNX Runtime's CPU provider (MLAS) on the ops and sizes of `unicompute bench --backend cpu`,
so the CPU backend can be compared with it side by side on the same machine.

    pip install onnxruntime onnx numpy
    python3 benches/peers/ort_reference.py [--size 16777216] [--matmul-size 1024] [--reps 7]
        [--threads N] [--ops softmax,layer_norm] [--json]

Each op is a one-node (or few-node) ONNX graph built here with onnx.helper, run with
`intra_op_num_threads = --threads` (default: every core, as unicompute's rayon pool) and all
graph optimisations on. Reports the median seconds after one warm-up run, and GB/s (bytes read
+ written, counted as `unicompute bench` counts them) or GFLOP/s under the same op names.
"""
import argparse
import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

from timing import median_seconds

ROW_COLS = 1024
ATTENTION = (1, 8, 512, 64)
CONV = (1, 32, 56, 56, 32)
F32 = TensorProto.FLOAT


def model(nodes, inputs, output_shape, initializers=()):
    """A graph of `nodes` over named f32 `inputs` ({name: shape}) with output `y`."""
    graph = helper.make_graph(
        nodes,
        "op",
        [helper.make_tensor_value_info(k, F32, list(v)) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", F32, list(output_shape))],
        initializer=list(initializers),
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)], ir_version=10)


def cases(n, e):
    """(name, model, input shapes, work, unit) for each op of the bench."""
    rows = n // ROW_COLS
    rc = (rows, ROW_COLS)
    unary = lambda op: (model([helper.make_node(op, ["x"], ["y"])], {"x": (n,)}, (n,)), {"x": (n,)}, 8 * n, "GB/s")
    b, h, l, d = ATTENTION
    nc, c, hh, ww, o = CONV
    ones = helper.make_tensor("scale", F32, [ROW_COLS], np.ones(ROW_COLS, np.float32))
    zeros = helper.make_tensor("bias", F32, [ROW_COLS], np.zeros(ROW_COLS, np.float32))
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    out = {
        "relu": unary("Relu"),
        "exp": unary("Exp"),
        "gelu": unary("Gelu"),
        "add": (model([helper.make_node("Add", ["a", "b"], ["y"])], {"a": (n,), "b": (n,)}, (n,)), {"a": (n,), "b": (n,)}, 12 * n, "GB/s"),
        "add_relu": (
            model([helper.make_node("Add", ["a", "b"], ["s"]), helper.make_node("Relu", ["s"], ["y"])], {"a": (n,), "b": (n,)}, (n,)),
            {"a": (n,), "b": (n,)}, 12 * n, "GB/s"),
        "sum": (model([helper.make_node("ReduceSum", ["x"], ["y"], keepdims=0)], {"x": (n,)}, ()), {"x": (n,)}, 4 * (n + 1), "GB/s"),
        "sum_last": (
            model([helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)], {"x": rc}, (rows,), [axes]),
            {"x": rc}, 4 * (rows * ROW_COLS + rows), "GB/s"),
        "softmax": (model([helper.make_node("Softmax", ["x"], ["y"], axis=-1)], {"x": rc}, rc), {"x": rc}, 8 * rows * ROW_COLS, "GB/s"),
        "layer_norm": (
            model([helper.make_node("LayerNormalization", ["x", "scale", "bias"], ["y"], axis=-1, epsilon=1e-5)], {"x": rc}, rc, [ones, zeros]),
            {"x": rc}, 8 * rows * ROW_COLS, "GB/s"),
        "matmul": (model([helper.make_node("MatMul", ["a", "b"], ["y"])], {"a": (e, e), "b": (e, e)}, (e, e)), {"a": (e, e), "b": (e, e)}, 2 * e**3, "GFLOP/s"),
        "linear": (
            model([helper.make_node("Gemm", ["a", "b", "c"], ["s"]), helper.make_node("Relu", ["s"], ["y"])], {"a": (e, e), "b": (e, e), "c": (e,)}, (e, e)),
            {"a": (e, e), "b": (e, e), "c": (e,)}, 2 * e**3, "GFLOP/s"),
        "attention": (
            model([
                helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
                helper.make_node("MatMul", ["q", "kt"], ["s0"]),
                helper.make_node("Mul", ["s0", "scale"], ["s"]),
                helper.make_node("Softmax", ["s"], ["p"], axis=-1),
                helper.make_node("MatMul", ["p", "v"], ["y"]),
            ], {"q": ATTENTION, "k": ATTENTION, "v": ATTENTION}, ATTENTION,
                [helper.make_tensor("scale", F32, [], [1.0 / np.sqrt(d)])]),
            {"q": ATTENTION, "k": ATTENTION, "v": ATTENTION}, 4 * b * h * l * l * d, "GFLOP/s"),
        "conv2d": (
            model([helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1, 1, 1])], {"x": (nc, c, hh, ww), "w": (o, c, 3, 3)}, (nc, o, hh, ww)),
            {"x": (nc, c, hh, ww), "w": (o, c, 3, 3)}, 2 * nc * o * hh * ww * c * 9, "GFLOP/s"),
    }
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=1 << 24)
    parser.add_argument("--matmul-size", type=int, default=1024)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--ops", default="", help="comma-separated op names (default: all)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    results = []
    wanted = [o for o in args.ops.split(",") if o]
    for name, (m, shapes, work, unit) in cases(args.size, args.matmul_size).items():
        if wanted and name not in wanted:
            continue
        onnx.checker.check_model(m)
        sess = ort.InferenceSession(m.SerializeToString(), options, providers=["CPUExecutionProvider"])
        feeds = {k: rng.uniform(-2, 2, v).astype(np.float32) for k, v in shapes.items()}
        s = median_seconds(lambda: sess.run(None, feeds), args.reps)
        results.append({"op": name, "seconds": s, "rate": work / s / 1e9, "unit": unit})
        if not args.json:
            print(f"{name:11} {s * 1e3:9.2f} ms  {work / s / 1e9:8.2f} {unit}", flush=True)
    if args.json:
        print(json.dumps({"peer": f"onnxruntime {ort.__version__} CPU", "threads": args.threads, "results": results}))
    else:
        print(f"onnxruntime {ort.__version__}, CPUExecutionProvider, {args.threads} threads")


if __name__ == "__main__":
    main()
