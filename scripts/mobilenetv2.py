"""MobileNetV2 (1.0, 224x224: torchvision's geometry) with seeded weights, for
scripts/bench-models.sh.

    mobilenetv2.py DIR   # DIR/model.onnx and DIR/inputs/input.npy

The graph is the one `torch.onnx.export` gives for torchvision's `mobilenet_v2` in eval mode
(opset 13): each Conv's BatchNormalization folded into its weight and bias, ReLU6 as Clip(0, 6),
depthwise convolutions as grouped Conv, the residual Adds of the inverted residual blocks,
then GlobalAveragePool, Flatten and Gemm. Weights are normal(0, sqrt(2 / fan_in)) scaled by
0.5 so that activations stay in range over the 52 convolutions, biases normal(0, 0.05)."""

import pathlib
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# Inverted residual blocks: expansion t, output channels c, repeats n, first stride s.
BLOCKS = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
          (6, 160, 3, 2), (6, 320, 1, 1)]
CLASSES, SIZE = 1000, 224


class Net:
    """Nodes and initializers with fresh names."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, value):
        """An initializer holding `value`."""
        self.count += 1
        name = f"onnx::Const_{self.count}"
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def op(self, op_type, inputs, **attrs):
        """One node with one fresh output, which it returns."""
        self.count += 1
        out = f"/{op_type}_{self.count}_output_0"
        self.nodes.append(helper.make_node(op_type, inputs, [out], f"/{op_type}_{self.count}",
                                           **attrs))
        return out

    def conv(self, x, c_in, c_out, k, stride=1, groups=1, relu6=True):
        """Conv (BatchNorm folded in) and, unless `relu6` is false, Clip(0, 6)."""
        fan_in = c_in // groups * k * k
        w = self.rng.normal(0, 0.5 * np.sqrt(2 / fan_in), (c_out, c_in // groups, k, k))
        b = self.rng.normal(0, 0.05, c_out)
        y = self.op("Conv", [x, self.const(w.astype(np.float32)),
                             self.const(b.astype(np.float32))],
                    kernel_shape=[k, k], strides=[stride, stride], group=groups,
                    pads=[k // 2] * 4, dilations=[1, 1])
        if relu6:
            y = self.op("Clip", [y, self.const(np.float32(0)), self.const(np.float32(6))])
        return y

    def block(self, x, c_in, c_out, t, stride):
        """An inverted residual block: expand, depthwise, project, and the shortcut."""
        hidden = c_in * t
        y = self.conv(x, c_in, hidden, 1) if t != 1 else x
        y = self.conv(y, hidden, hidden, 3, stride, groups=hidden)
        y = self.conv(y, hidden, c_out, 1, relu6=False)
        return self.op("Add", [x, y]) if stride == 1 and c_in == c_out else y


def model():
    """The exported model."""
    n = Net(0)
    x = n.conv("input", 3, 32, 3, 2)
    c = 32
    for t, c_out, repeats, stride in BLOCKS:
        for i in range(repeats):
            x = n.block(x, c, c_out, t, stride if i == 0 else 1)
            c = c_out
    x = n.conv(x, c, 1280, 1)
    x = n.op("Flatten", [n.op("GlobalAveragePool", [x])], axis=1)
    w = n.rng.normal(0, 0.02, (CLASSES, 1280)).astype(np.float32)
    b = n.rng.normal(0, 0.05, CLASSES).astype(np.float32)
    n.nodes.append(helper.make_node("Gemm", [x, n.const(w), n.const(b)], ["output"],
                                    "/classifier/Gemm", alpha=1.0, beta=1.0, transB=1))
    graph = helper.make_graph(
        n.nodes, "main_graph",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, CLASSES])], n.inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="pytorch", producer_version="2.1.0")
    onnx.checker.check_model(m, full_check=True)
    return m


def main():
    """Writes the model and a seeded input in [-1, 1)."""
    folder = pathlib.Path(sys.argv[1])
    (folder / "inputs").mkdir(parents=True, exist_ok=True)
    onnx.save(model(), folder / "model.onnx")
    x = np.random.default_rng(1).uniform(-1, 1, (1, 3, SIZE, SIZE)).astype(np.float32)
    np.save(folder / "inputs" / "input.npy", x)


if __name__ == "__main__":
    main()
