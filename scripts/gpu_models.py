"""The ONNX model table's models, made small enough to travel to a GPU machine
(scripts/gpu-bundle.sh packs them, scripts/gpu-run.sh's `models` part unpacks them).

    gpu_models.py pack MODELS_DIR OUT.tar.xz NAME...   # skeletons and inputs of each model
    gpu_models.py unpack IN.tar.xz MODELS_DIR          # the filled models and ORT's outputs

`pack` writes, for each model of MODELS_DIR (NAME/model.onnx, NAME/inputs/), a weight-free
skeleton: every float or float16 initializer (subgraphs' too) of at least 1,024 elements loses
its data and keeps its shape, type and, in its doc_string, the mean and standard deviation of
its values; everything else (integer shapes, small tensors, Constant nodes) stays exact. The
skeletons and the inputs go into one xz-compressed tar. `unpack` fills each removed tensor
with normal(mean, std) values (numpy's default_rng, seeded by the tensor's name), writes
NAME/model.onnx and NAME/inputs/, and onnxruntime's CPU outputs on them as NAME/expected/
(scripts/onnx_models.py's `prepare`); it fails if any output is not finite. Timings do not
depend on the weights' values, and the outputs are compared with onnxruntime's on the same
filled model."""

import json
import pathlib
import sys
import tarfile
import tempfile
import zlib

import numpy as np
import onnx
from onnx import numpy_helper

from onnx_models import prepare

MIN_ELEMENTS = 1024
FLOATS = (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16)
# How a stripped tensor's doc_string starts; its mean and std follow as JSON.
SKELETON = "gpu_models skeleton: "


def graphs(graph):
    """`graph` and every subgraph of its nodes' attributes, depth first."""
    yield graph
    for node in graph.node:
        for attr in node.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                yield from graphs(sub)


def initializers(model):
    """Every initializer of the model, subgraphs' included."""
    return [t for g in graphs(model.graph) for t in g.initializer]


def strip(tensor):
    """Removes a large float tensor's data, keeping its mean and std in its doc_string."""
    if tensor.data_type not in FLOATS or np.prod(tensor.dims) < MIN_ELEMENTS:
        return
    values = numpy_helper.to_array(tensor).astype(np.float64)
    stats = {"mean": float(values.mean()), "std": float(values.std())}
    for field in ("raw_data", "float_data", "int32_data"):
        tensor.ClearField(field)
    tensor.doc_string = SKELETON + json.dumps(stats)


def fill(tensor):
    """Gives a stripped tensor seeded normal(mean, std) values; leaves others as they are."""
    if not tensor.doc_string.startswith(SKELETON):
        return
    stats = json.loads(tensor.doc_string[len(SKELETON):])
    rng = np.random.default_rng(zlib.crc32(tensor.name.encode()))
    values = rng.normal(stats["mean"], stats["std"], tuple(tensor.dims))
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type)
    tensor.CopyFrom(numpy_helper.from_array(values.astype(dtype), tensor.name))


def pack(models, out, names):
    """Each named model's skeleton (NAME/skeleton.onnx) and inputs into the tar `out`."""
    with tarfile.open(out, "w:xz", preset=6) as tar, tempfile.TemporaryDirectory() as tmp:
        for name in names:
            model = onnx.load(models / name / "model.onnx")
            for tensor in initializers(model):
                strip(tensor)
            skeleton = pathlib.Path(tmp) / f"{name}.onnx"
            onnx.save(model, skeleton)
            tar.add(skeleton, f"{name}/skeleton.onnx")
            tar.add(models / name / "inputs", f"{name}/inputs")


def unpack(archive, models):
    """Each model of the tar, filled, with onnxruntime's outputs; fails on non-finite ones."""
    with tarfile.open(archive) as tar:
        tar.extractall(models, filter="data")
    for folder in sorted(p.parent for p in models.glob("*/skeleton.onnx")):
        model = onnx.load(folder / "skeleton.onnx")
        for tensor in initializers(model):
            fill(tensor)
        onnx.save(model, folder / "model.onnx")
        (folder / "skeleton.onnx").unlink()
        prepare(folder, {}, {})
        for out in sorted((folder / "expected").glob("*.npy")):
            if not np.isfinite(np.load(out)).all():
                sys.exit(f"{folder.name}: onnxruntime's output {out.stem} is not finite")
        print(f"{folder.name}: filled, onnxruntime's outputs finite")


def main():
    """The command line."""
    command, args = sys.argv[1], [pathlib.Path(a) for a in sys.argv[2:]]
    if command == "pack":
        pack(args[0], args[1], [str(a) for a in args[2:]])
    elif command == "unpack":
        unpack(args[0], args[1])
    else:
        sys.exit(f"unknown command '{command}': pack or unpack")


if __name__ == "__main__":
    main()
