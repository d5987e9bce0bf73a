"""A BERT encoder of all-MiniLM-L6's geometry with seeded weights, for scripts/onnx-models.sh.

    minilm.py DIR plain   # DIR/model.onnx as torch.onnx.export writes HF BertModel (opset 14)
    minilm.py DIR fused   # the same after onnxruntime's transformer optimizer (com.microsoft)

Both also write DIR/inputs/*.npy: one sequence of 128 tokens, the last 37 of them padding.
The graph is the one the exporter gives (eager attention, transformers 4.3x): Gather
embeddings with sliced position ids, LayerNorm as ReduceMean/Sub/Pow/Sqrt/Div, per layer
Q/K/V MatMul+Add, Reshape to heads through Shape/Gather/Unsqueeze/Concat, Transpose, MatMul,
Div by sqrt(32), the extended mask `(1 - mask) * min_float` added, Softmax, the erf GELU,
and the pooler (Gather of the first token, MatMul+Add, Tanh). Weights are normal(0, 0.05),
embeddings normal(0, 0.02), LayerNorm gains 1 + normal(0, 0.05): as a trained model's."""

import collections
import pathlib
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LAYERS, HIDDEN, HEADS, INTER = 6, 384, 12, 1536
VOCAB, POSITIONS, TYPES = 30522, 512, 2
SEQ, PADDING, EPS = 128, 37, 1e-12
HEAD = HIDDEN // HEADS


class Graph:
    """Nodes and initializers, with fresh value names."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, value, name=None):
        """An initializer holding `value` (f32 unless it is an int64 array)."""
        self.count += 1
        name = name or f"onnx::Const_{self.count}"
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(self, name, shape, std, mean=0.0):
        """A seeded normal(mean, std) f32 initializer."""
        return self.const(self.rng.normal(mean, std, shape).astype(np.float32), name)

    def op(self, op_type, inputs, **attrs):
        """One node with one fresh output, which it returns."""
        self.count += 1
        out = f"/{op_type}_{self.count}_output_0"
        self.nodes.append(helper.make_node(op_type, inputs, [out], f"/{op_type}_{self.count}",
                                           **attrs))
        return out

    def scalar(self, v):
        """An f32 scalar initializer."""
        return self.const(np.array(v, np.float32))

    def ints(self, *v):
        """An int64 vector initializer."""
        return self.const(np.array(v, np.int64))

    def linear(self, x, name, n_in, n_out):
        """`x @ W^T + b` as the exporter writes nn.Linear: MatMul by the transposed weight."""
        w = self.weight(f"onnx::MatMul_{name}", (n_in, n_out), 0.05)
        b = self.weight(f"{name}.bias", (n_out,), 0.02)
        return self.op("Add", [b, self.op("MatMul", [x, w])])

    def layer_norm(self, x, name):
        """LayerNorm over the last axis, decomposed as opset 14 exports it."""
        mean = self.op("ReduceMean", [x], axes=[-1])
        d = self.op("Sub", [x, mean])
        var = self.op("ReduceMean", [self.op("Pow", [d, self.scalar(2.0)])], axes=[-1])
        std = self.op("Sqrt", [self.op("Add", [var, self.scalar(EPS)])])
        g = self.weight(f"{name}.weight", (HIDDEN,), 0.05, 1.0)
        b = self.weight(f"{name}.bias", (HIDDEN,), 0.05)
        return self.op("Add", [self.op("Mul", [self.op("Div", [d, std]), g]), b])

    def dim(self, x, i):
        """Extent `i` of `x` as a [1] int64: Shape, Gather, Unsqueeze."""
        at = self.op("Gather", [self.op("Shape", [x]), self.const(np.array(i, np.int64))],
                     axis=0)
        return self.op("Unsqueeze", [at, self.ints(0)])

    def heads(self, x, perm):
        """`[b, s, hidden]` viewed as `[b, s, heads, head]` and transposed by `perm`."""
        shape = self.op("Concat", [self.dim(x, 0), self.dim(x, 1), self.ints(HEADS),
                                   self.ints(HEAD)], axis=0)
        return self.op("Transpose", [self.op("Reshape", [x, shape])], perm=perm)

    def attention(self, x, mask, name):
        """BertSelfAttention: the heads' softmax(q k^T / sqrt(32) + mask) v, merged back."""
        q = self.heads(self.linear(x, f"{name}.query", HIDDEN, HIDDEN), [0, 2, 1, 3])
        k = self.heads(self.linear(x, f"{name}.key", HIDDEN, HIDDEN), [0, 2, 3, 1])
        v = self.heads(self.linear(x, f"{name}.value", HIDDEN, HIDDEN), [0, 2, 1, 3])
        scores = self.op("Div", [self.op("MatMul", [q, k]), self.scalar(np.sqrt(HEAD))])
        probs = self.op("Softmax", [self.op("Add", [scores, mask])], axis=-1)
        ctx = self.op("Transpose", [self.op("MatMul", [probs, v])], perm=[0, 2, 1, 3])
        shape = self.op("Concat", [self.dim(ctx, 0), self.dim(ctx, 1), self.ints(HIDDEN)],
                        axis=0)
        return self.op("Reshape", [ctx, shape])

    def gelu(self, x):
        """The erf GELU as torch exports it: `x * (1 + erf(x / sqrt 2)) * 0.5`."""
        erf = self.op("Erf", [self.op("Div", [x, self.scalar(1.4142135381698608)])])
        return self.op("Mul", [self.op("Mul", [x, self.op("Add", [erf, self.scalar(1.0)])]),
                               self.scalar(0.5)])

    def layer(self, x, mask, i):
        """BertLayer `i`: attention, its output projection and norm, then the feed-forward."""
        name = f"encoder.layer.{i}"
        a = self.attention(x, mask, f"{name}.attention.self")
        a = self.linear(a, f"{name}.attention.output.dense", HIDDEN, HIDDEN)
        x = self.layer_norm(self.op("Add", [a, x]), f"{name}.attention.output.LayerNorm")
        h = self.gelu(self.linear(x, f"{name}.intermediate.dense", HIDDEN, INTER))
        h = self.linear(h, f"{name}.output.dense", INTER, HIDDEN)
        return self.layer_norm(self.op("Add", [h, x]), f"{name}.output.LayerNorm")


def plain():
    """The exported model."""
    g = Graph(0)
    words = g.weight("embeddings.word_embeddings.weight", (VOCAB, HIDDEN), 0.02)
    positions = g.weight("embeddings.position_embeddings.weight", (POSITIONS, HIDDEN), 0.02)
    types = g.weight("embeddings.token_type_embeddings.weight", (TYPES, HIDDEN), 0.02)
    ids = g.const(np.arange(POSITIONS, dtype=np.int64)[None], "embeddings.position_ids")
    seq = g.dim("input_ids", 1)
    position_ids = g.op("Slice", [ids, g.ints(0), seq, g.ints(1), g.ints(1)])
    x = g.op("Add", [g.op("Gather", [words, "input_ids"]),
                     g.op("Gather", [types, "token_type_ids"])])
    x = g.op("Add", [x, g.op("Gather", [positions, position_ids])])
    x = g.layer_norm(x, "embeddings.LayerNorm")
    m = g.op("Unsqueeze", [g.op("Unsqueeze", ["attention_mask", g.ints(1)]), g.ints(2)])
    m = g.op("Sub", [g.scalar(1.0), g.op("Cast", [m], to=TensorProto.FLOAT)])
    mask = g.op("Mul", [m, g.scalar(np.finfo(np.float32).min)])
    for i in range(LAYERS):
        x = g.layer(x, mask, i)
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"], "/Identity"))
    first = g.op("Gather", ["last_hidden_state", g.const(np.array(0, np.int64))], axis=1)
    pooled = g.linear(first, "pooler.dense", HIDDEN, HIDDEN)
    g.nodes.append(helper.make_node("Tanh", [pooled], ["pooler_output"], "/pooler/Tanh"))
    dims = ["batch_size", "sequence_length"]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, dims)
              for n in ("input_ids", "attention_mask", "token_type_ids")]
    outputs = [
        helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, dims + [HIDDEN]),
        helper.make_tensor_value_info("pooler_output", TensorProto.FLOAT, ["batch_size", HIDDEN]),
    ]
    graph = helper.make_graph(g.nodes, "main_graph", inputs, outputs, g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)],
                              producer_name="pytorch", producer_version="2.1.0")
    onnx.checker.check_model(model, full_check=True)
    return model


def fused(model, folder):
    """`model` after onnxruntime's BERT optimizer; prints the operators it made."""
    from onnxruntime.transformers.optimizer import optimize_model

    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        path = pathlib.Path(tmp) / "plain.onnx"
        onnx.save(model, path)
        # opt_level 0: the Python fusions only (a positive level first runs onnxruntime's own
        # graph optimizer, which imports torch).
        opt = optimize_model(str(path), model_type="bert", num_heads=HEADS, hidden_size=HIDDEN,
                             opt_level=0)
    out = opt.model
    ops = collections.Counter(f"{n.domain or 'ai.onnx'}:{n.op_type}" for n in out.graph.node)
    print("minilm fused:", ", ".join(f"{k} x{v}" for k, v in sorted(ops.items())))
    return out


def inputs(folder):
    """One sequence: [CLS], seeded word ids, [SEP], then padding; two segments."""
    rng = np.random.default_rng(1)
    real = SEQ - PADDING
    ids = np.zeros((1, SEQ), np.int64)
    ids[0, 1:real - 1] = rng.integers(1000, VOCAB, real - 2)
    ids[0, 0], ids[0, real - 1] = 101, 102
    mask = (np.arange(SEQ) < real).astype(np.int64)[None]
    types = ((np.arange(SEQ) >= real // 2) & (np.arange(SEQ) < real)).astype(np.int64)[None]
    (folder / "inputs").mkdir(parents=True, exist_ok=True)
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
    for name, value in feeds.items():
        np.save(folder / "inputs" / f"{name}.npy", value)


def main():
    """Writes the variant the command line names."""
    folder, variant = pathlib.Path(sys.argv[1]), sys.argv[2]
    folder.mkdir(parents=True, exist_ok=True)
    model = plain()
    if variant == "fused":
        model = fused(model, folder)
    onnx.save(model, folder / "model.onnx")
    inputs(folder)


if __name__ == "__main__":
    main()
