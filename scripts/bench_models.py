"""The native model benchmark's driver (scripts/bench-models.sh runs it, and on a GPU
machine scripts/gpu-run.sh's `models` part).

    bench_models.py run OUT.json MODEL...   # every engine on each model, alternating
    bench_models.py ort DIR THREADS RUNS WARMUP   # one onnxruntime measurement (JSON line)

Engines: `unicompute run` ($UNICOMPUTE_CLI, default the release build's) on each backend of
$BACKENDS (default cpu), then the peers of $PEERS (default `ort tract`): onnxruntime's CPU
provider with $THREADS intra-op threads (default 2) and tract (benches/peers/tract, one
thread). Models are read from $MODELS_DIR (default .onnx/models). Each model is measured
$ROUNDS times (default 2), the engines in turn, each time in a fresh process: session-create
time (unicompute's load, its kernels compiled), first inference, then the median and 90th
percentile of $RUNS runs (default 20) after $WARMUP warm-ups (default 3), and the process's
peak resident memory. The figures are the medians over the rounds. unicompute's outputs are
compared with onnxruntime's (scripts/onnx_models.py's stored ones: max absolute difference).
Prints a Markdown table and writes the records to OUT.json."""

import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = pathlib.Path(os.environ.get("MODELS_DIR", ROOT / ".onnx" / "models"))
TARGET = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
CLI = pathlib.Path(os.environ.get("UNICOMPUTE_CLI", TARGET / "release" / "unicompute"))
TRACT = pathlib.Path(os.environ.get("TRACT_PEER", TARGET / "peers" / "release" / "tract-peer"))
RUNS = int(os.environ.get("RUNS", "20"))
WARMUP = int(os.environ.get("WARMUP", "3"))
ROUNDS = int(os.environ.get("ROUNDS", "2"))
THREADS = int(os.environ.get("THREADS", "2"))
BACKENDS = os.environ.get("BACKENDS", "cpu").split()
PEERS = os.environ.get("PEERS", "ort tract").split()


def ort(folder, threads, runs, warmup):
    """One onnxruntime measurement of the model in `folder`, printed as a JSON line."""
    import onnxruntime

    feeds = {name: np.load(f) for name, f in inputs(folder)}
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    start = time.perf_counter()
    session = onnxruntime.InferenceSession(str(folder / "model.onnx"), options,
                                           providers=["CPUExecutionProvider"])
    create = time.perf_counter() - start
    start = time.perf_counter()
    session.run(None, feeds)
    first = time.perf_counter() - start
    for _ in range(warmup):
        session.run(None, feeds)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append(time.perf_counter() - start)
    times.sort()
    print(json.dumps({"create_ms": create * 1e3, "first_ms": first * 1e3,
                      "median_ms": times[len(times) // 2] * 1e3,
                      "p90_ms": times[-(-len(times) * 9 // 10) - 1] * 1e3}))


def timed(cmd, env=None):
    """`cmd`'s standard output and its peak resident memory in MB (the kernel's account of the
    process, so no /usr/bin/time is needed)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen([str(c) for c in cmd], stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if child.returncode != 0:
        said = [line for line in stderr.splitlines() if line.strip()] or [
            f"exit status {child.returncode}"]
        raise RuntimeError(f"{pathlib.Path(str(cmd[0])).name} failed: {said[0]}")
    return stdout, usage.ru_maxrss / 1e3


def inputs(folder):
    """The model's inputs as (name, file): DIR/inputs/NAME.npy, a `/` in NAME a folder."""
    files = sorted((folder / "inputs").rglob("*.npy"))
    return [(str(f.relative_to(folder / "inputs").with_suffix("")), f) for f in files]


def feeds(folder):
    """The model's inputs as NAME=FILE arguments."""
    return [f"{name}={f}" for name, f in inputs(folder)]


def ours(folder, backend):
    """One `unicompute run` measurement, its outputs saved beside the model."""
    args = [CLI, "run", folder / "model.onnx", "--backend", backend, "--runs", RUNS,
            "--warmup", WARMUP, "--save", folder / backend]
    for f in feeds(folder):
        args += ["--input", f]
    out, rss = timed(args)
    ms = {k: float(v) for k, v in re.findall(r"^(load|first|median|p90):\s+([\d.]+) ms", out,
                                             re.M)}
    device = re.search(r"^memory: ([\d.]+) MB", out, re.M)
    return {"create_ms": ms["load"], "first_ms": ms["first"], "median_ms": ms["median"],
            "p90_ms": ms["p90"], "rss_mb": rss,
            "device_mb": float(device.group(1)) if device else None}


def peer(name, folder):
    """One measurement of onnxruntime or tract."""
    if name == "ort":
        cmd = [sys.executable, __file__, "ort", folder, THREADS, RUNS, WARMUP]
    else:
        cmd = [TRACT, folder / "model.onnx", RUNS, WARMUP] + feeds(folder)
    out, rss = timed(cmd, env={**os.environ, "OMP_NUM_THREADS": str(THREADS)})
    return {**json.loads(out.strip().splitlines()[-1]), "rss_mb": rss}


def max_diff(folder, backend):
    """The largest absolute difference of unicompute's outputs from onnxruntime's."""
    worst = 0.0
    for want in sorted((folder / "expected").glob("*.npy")):
        got = np.load(folder / backend / want.name)
        worst = max(worst, float(np.max(np.abs(got.astype(np.float64) - np.load(want)))))
    return worst


def measure(model):
    """Every engine on `model`, ROUNDS times in turn; the medians over the rounds."""
    folder = MODELS / model
    engines = [f"unicompute-{b}" for b in BACKENDS] + PEERS
    rounds = {e: [] for e in engines}
    for _ in range(ROUNDS):
        for e in engines:
            try:
                one = ours(folder, e[11:]) if e.startswith("unicompute") else peer(e, folder)
            except (RuntimeError, KeyError, ValueError) as err:
                one = {"error": str(err).strip().splitlines()[0][:160]}
            rounds[e].append(one)
    records = []
    for e, runs in rounds.items():
        ok = [r for r in runs if "error" not in r]
        rec = {"model": model, "engine": e}
        if not ok:
            rec["error"] = runs[0]["error"]
        for key in ("create_ms", "first_ms", "median_ms", "p90_ms", "rss_mb", "device_mb"):
            vals = [r[key] for r in ok if r.get(key) is not None]
            if vals:
                rec[key] = statistics.median(vals)
        if ok and e.startswith("unicompute"):
            rec["max_abs_diff"] = max_diff(folder, e[11:])
        records.append(rec)
    return records


def table(records):
    """The records as a Markdown table, with each engine's speed against onnxruntime's."""
    base = {r["model"]: r.get("median_ms") for r in records if r["engine"] == "ort"}
    lines = ["| model | engine | create ms | first ms | median ms | p90 ms | vs ORT "
             "| peak RSS MB | max abs diff |", "|" + "---|" * 9]
    fmt = lambda v, f="{:.1f}": "" if v is None else f.format(v)
    for r in records:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['engine']} | {r['error']} |" + " |" * 6)
            continue
        ratio = base.get(r["model"]) and base[r["model"]] / r["median_ms"]
        lines.append(
            f"| {r['model']} | {r['engine']} | {fmt(r.get('create_ms'))} "
            f"| {fmt(r.get('first_ms'))} | {fmt(r.get('median_ms'), '{:.2f}')} "
            f"| {fmt(r.get('p90_ms'), '{:.2f}')} | {fmt(ratio, '{:.2f}x')} "
            f"| {fmt(r.get('rss_mb'), '{:.0f}')} | {fmt(r.get('max_abs_diff'), '{:.1e}')} |")
    return "\n".join(lines)


def main():
    """The command line."""
    if sys.argv[1] == "ort":
        folder, threads, runs, warmup = sys.argv[2:6]
        ort(pathlib.Path(folder), int(threads), int(runs), int(warmup))
        return
    out, models = pathlib.Path(sys.argv[2]), sys.argv[3:]
    load = [os.getloadavg()[0]]
    print(f"load average at the start: {load[0]:.1f} ({os.cpu_count()} CPUs)", flush=True)
    records = []
    for model in models:
        records += measure(model)
        print(table([r for r in records if r["model"] == model]).split("\n", 2)[-1],
              flush=True)
    print(table(records))
    load.append(os.getloadavg()[0])
    print(f"load average at the end: {load[1]:.1f}")
    out.write_text(json.dumps({"runs": RUNS, "warmup": WARMUP, "rounds": ROUNDS,
                               "threads": THREADS, "backends": BACKENDS, "peers": PEERS,
                               "load_average": load, "records": records}, indent=1))


if __name__ == "__main__":
    main()
