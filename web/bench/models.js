// The model page's measurement: one ONNX model on one engine per page load, so that each
// engine starts from a fresh page (its own wasm heap and GPU buffers, and onnxruntime-web's
// thread count, which only takes effect when its wasm starts). The query says what:
//   model    a folder under /models/ (serve.mjs's model root): model.onnx, inputs/NAME.npy
//   engine   unicompute-webgpu, unicompute-cpu, unicompute-cpu-threads, ort-webgpu,
//            ort-wasm or ort-wasm-threads
//   runs, warmup, threads (default 20, 3, 2); budget: seconds after the first run that the
//            warm-ups and runs may take (default 60; at least one run); outputs=1 sends the
//            outputs back too
// It measures loading the engine (our init; onnxruntime-web's first session, of a one-node
// model), creating the session, the first run, then `runs` runs after `warmup` more, each run
// from host tensors to the outputs in JS typed arrays; and the memory probe.js sees. The result
// is `window.benchResult`; `document.body.dataset.done` is set when it is complete.
import { gpuPeak, resetGpuPeak, wasmBytes, wasmMemories } from './probe.js';
import { parseNpy, toBase64 } from './npy.js';
import { loadPeer } from './peers.js';

const q = new URLSearchParams(location.search);
const choice = {
  model: q.get('model'),
  engine: q.get('engine'),
  runs: Number(q.get('runs') ?? 20),
  warmup: Number(q.get('warmup') ?? 3),
  threads: Number(q.get('threads') ?? 2),
  budget: Number(q.get('budget') ?? 60),
  outputs: q.get('outputs') === '1',
};
const status = (text) => (document.getElementById('status').textContent = text);

/** Each engine's loader: the library (`InferenceSession`), its host tensor class, session options. */
const ENGINES = {
  'unicompute-webgpu': () => loadOurs('./node_modules/unicompute/index.js', 'webgpu'),
  'unicompute-cpu': () => loadOurs('./node_modules/unicompute/index.js', 'cpu'),
  'unicompute-cpu-threads': () => loadOurs('./node_modules/unicompute/threads.js', { backend: 'cpu', threads: choice.threads }),
  'ort-webgpu': () => loadOrt('ort-webgpu', 'webgpu'),
  'ort-wasm': () => loadOrt('ort-wasm', 'wasm'),
  'ort-wasm-threads': () => loadOrt('ort-wasm-threads', 'wasm'),
};

/** unicompute from `entry`, its device opened by `init(how)`; sessions run on that device. */
async function loadOurs(entry, how) {
  const lib = await import(entry);
  const device = await lib.init(how);
  const backend = how.backend ?? how;
  if (device.backend !== backend) throw new Error(`no ${backend} device: ${device.fallbackReason ?? device.selectionReason}`);
  const info = device.info();
  return {
    lib,
    Tensor: lib.HostTensor,
    options: { device },
    about: { device: info.name, backend: device.backend, threads: info.threads },
    pool: () => device.memoryStats().peakBytesLive,
  };
}

/** onnxruntime-web (peers.js loads it and runs a one-node model once) on the provider `ep`. */
async function loadOrt(peer, ep) {
  const lib = await loadPeer(peer, { threads: choice.threads });
  return { lib, Tensor: lib.Tensor, options: { executionProviders: [ep] }, about: { threads: lib.env.wasm.numThreads } };
}

/** The model's feeds: inputs/NAME.npy for each input NAME (a `/` in it is a folder). */
async function feedsOf(session, Tensor) {
  const feeds = {};
  for (const name of session.inputNames) {
    const path = name.split('/').map(encodeURIComponent).join('/');
    const response = await fetch(`/models/${choice.model}/inputs/${path}.npy`);
    if (!response.ok) throw new Error(`input ${name}: HTTP ${response.status} for inputs/${name}.npy`);
    const { type, dims, data } = parseNpy(await response.arrayBuffer());
    feeds[name] = new Tensor(type, data, dims);
  }
  return feeds;
}

/** Milliseconds that `f` takes, and what it gave. */
async function timed(f) {
  const start = performance.now();
  const value = await f();
  return [performance.now() - start, value];
}

/** The engine's whole measurement of the model. */
async function measure() {
  if (!ENGINES[choice.engine]) throw new Error(`engine ${choice.engine}: expected one of ${Object.keys(ENGINES).join(', ')}`);
  const response = await fetch(`/models/${choice.model}/model.onnx`);
  if (!response.ok) throw new Error(`model ${choice.model}: HTTP ${response.status} for /models/${choice.model}/model.onnx`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  status(`${choice.engine}: loading`);
  const [load, engine] = await timed(ENGINES[choice.engine]);
  const { lib, Tensor, options } = engine;
  const [heap, gpu] = [wasmBytes(), resetGpuPeak()];
  status(`${choice.engine}: ${choice.model}: creating the session`);
  const [create, session] = await timed(() => lib.InferenceSession.create(bytes, options));
  const feeds = await feedsOf(session, Tensor);
  const [first, outputs] = await timed(() => session.run(feeds));
  status(`${choice.engine}: ${choice.model}: ${choice.warmup} warm-ups, ${choice.runs} runs`);
  // The budget cuts the warm-ups and runs short (after one run) on a slow engine.
  const deadline = performance.now() + choice.budget * 1e3;
  let warmups = 0;
  for (; warmups < choice.warmup && performance.now() < deadline; warmups++) await session.run(feeds);
  const times = [];
  while (times.length < choice.runs && (!times.length || performance.now() < deadline)) {
    times.push((await timed(() => session.run(feeds)))[0]);
  }
  times.sort((a, b) => a - b);
  const result = {
    ...choice,
    ...engine.about,
    warmups_done: warmups,
    runs_done: times.length,
    load_ms: load,
    create_ms: create,
    first_ms: first,
    median_ms: times[Math.floor(times.length / 2)],
    p90_ms: times[Math.ceil(times.length * 0.9) - 1],
    times_ms: times,
    wasm_heap_bytes: wasmBytes(),
    wasm_growth_bytes: wasmBytes() - heap,
    wasm_memories: wasmMemories(),
    gpu_peak_bytes: gpuPeak() - gpu,
    pool_peak_bytes: engine.pool?.(),
  };
  if (choice.outputs) {
    result.outputs = Object.fromEntries(Object.entries(outputs).map(([name, t]) => [name, { type: t.type, dims: [...t.dims], data: toBase64(t.data) }]));
  }
  await session.release();
  return result;
}

try {
  window.benchResult = await measure();
  status('done');
} catch (e) {
  document.body.dataset.error = `${e?.code ?? ''} ${e?.message ?? e}`.trim();
  status(`failed: ${document.body.dataset.error}`);
} finally {
  document.body.dataset.done = 'yes';
}
