// The peer engines unicompute is measured beside: TensorFlow.js (WebGPU backend) and ONNX
// Runtime Web (WebGPU and wasm execution providers), loaded from node_modules as served by
// serve.mjs. Each computes a workload of workloads.js from inputs already on its device, and
// each run ends with the whole output read back into a JS typed array.
//
// Loading: TF.js has no self-contained ES module build (its ESM files import bare specifiers),
// so its UMD builds are injected as classic <script> tags (they set globalThis.tf). ORT is
// imported as ES modules: ort.webgpu.min.mjs (the package's 'onnxruntime-web/webgpu' build: the
// native WebGPU EP, asyncify wasm) for 'ort-webgpu' and ort.wasm.min.mjs (plain SIMD/threads
// wasm) for 'ort-wasm'. The ORT module is imported once per thread count, with a query string
// making each import a fresh module instance, since ort.env.wasm.numThreads only takes effect
// when an instance's wasm starts.

import { WORKLOADS, permute } from './workloads.js';
import { buildModel } from './onnx.js';

/** The peer engines: 'tfjs-webgpu', 'ort-webgpu', 'ort-wasm' (one thread) and 'ort-wasm-threads'. */
export const PEERS = ['tfjs-webgpu', 'ort-webgpu', 'ort-wasm', 'ort-wasm-threads'];

const TFJS = ['/node_modules/@tensorflow/tfjs-core/dist/tf-core.min.js', '/node_modules/@tensorflow/tfjs-backend-webgpu/dist/tf-backend-webgpu.min.js'];
const ORT_DIST = '/node_modules/onnxruntime-web/dist/';
const ORT_BUILD = { 'ort-webgpu': 'ort.webgpu.min.mjs', 'ort-wasm': 'ort.wasm.min.mjs' };

/** Loaded peers: `${peer}/${threads}` -> Promise of the library (tf or an ort module). */
const loaded = new Map();
/** Per peer, the key of the instance loadPeer loaded last (the one preparePeer uses). */
const current = new Map();

/**
 * Load the libraries and backend for `peer` (once); `threads` for ort-wasm-threads
 * (ort.env.wasm.numThreads). Throws an Error saying why if unavailable.
 */
export async function loadPeer(peer, { threads = 1 } = {}) {
  if (!PEERS.includes(peer)) throw new Error(`unknown peer '${peer}'`);
  // TF.js is one global; ort-webgpu runs its kernels on the GPU, so one wasm thread does.
  const n = peer === 'ort-wasm-threads' ? threads : 1;
  const base = peer === 'ort-wasm-threads' ? 'ort-wasm' : peer;
  const key = base === 'ort-wasm' ? `${base}/${n}` : base;
  if (!loaded.has(key)) {
    const lib = (base === 'tfjs-webgpu' ? loadTfjs() : loadOrt(base, n)).catch((e) => {
      loaded.delete(key);
      throw new Error(`${peer}: ${e?.message ?? e}`);
    });
    loaded.set(key, lib);
  }
  current.set(peer, key);
  return loaded.get(key);
}

/** A classic script, appended to the document once it has loaded. */
function script(src) {
  return new Promise((resolve, reject) => {
    const el = document.createElement('script');
    el.src = src;
    el.onload = resolve;
    el.onerror = () => reject(new Error(`could not load ${src}`));
    document.head.append(el);
  });
}

/** TF.js core and its WebGPU backend, made the current backend. */
async function loadTfjs() {
  if (!navigator.gpu) throw new Error('WebGPU is not available in this browser');
  if (!globalThis.tf?.version_core) await script(TFJS[0]);
  if (!globalThis.tf.findBackendFactory?.('webgpu')) await script(TFJS[1]);
  const tf = globalThis.tf;
  if (!(await tf.setBackend('webgpu'))) throw new Error('the TF.js WebGPU backend did not initialize (no adapter?)');
  await tf.ready();
  return tf;
}

/** An ORT instance for `peer`, checked by running a one-node model once. */
async function loadOrt(peer, threads) {
  if (peer === 'ort-webgpu' && !navigator.gpu) throw new Error('WebGPU is not available in this browser');
  if (threads > 1 && !globalThis.crossOriginIsolated) throw new Error('threads need a cross-origin isolated page (serve.mjs)');
  const ort = await import(`${ORT_DIST}${ORT_BUILD[peer]}?threads=${threads}`);
  ort.env.wasm.wasmPaths = ORT_DIST;
  ort.env.wasm.numThreads = threads;
  const session = await ort.InferenceSession.create(buildModel('add_relu', { n: 4 }), { executionProviders: [ep(peer)] });
  const x = new ort.Tensor('float32', new Float32Array([1, -2, 3, -4]), [4]);
  const { y } = await session.run({ a: x, b: x });
  if (y.data[2] !== 6 || y.data[3] !== 0) throw new Error('a trial model gave a wrong answer');
  await session.release();
  return ort;
}

const ep = (peer) => (peer === 'ort-webgpu' ? 'webgpu' : 'wasm');

/**
 * Prepare `workload` (a key of WORKLOADS) at `sizes` with `inputs` (from WORKLOADS[w].inputs(sizes)) on `peer`:
 * upload the inputs to the device (not timed), build model/session (not timed), and return
 * { run: async () => Float32Array (one full computation ending with a complete read back of the output, row-major in
 *   WORKLOADS[w].outShape(sizes), NCHW for conv2d), dispose: () => void }
 */
export async function preparePeer(peer, workload, sizes, inputs) {
  if (!WORKLOADS[workload]) throw new Error(`unknown workload '${workload}'`);
  // The instance loadPeer loaded last for `peer` (so ort-wasm at its `threads`), else a default one.
  const lib = await (loaded.get(current.get(peer)) ?? loadPeer(peer));
  return peer === 'tfjs-webgpu' ? prepareTfjs(lib, workload, sizes, inputs) : prepareOrt(lib, peer, workload, sizes, inputs);
}

/** The TF.js graph of each workload, from input tensors (conv2d: NHWC x, [r, r, c, k] w) to the output. */
const TF_GRAPHS = {
  matmul: (tf, { a, b }) => tf.matMul(a, b),
  softmax: (tf, { x }) => tf.softmax(x),
  /** TF.js has no layer norm op: moments over the last axis, then (x - mean) / sqrt(var + eps). */
  layer_norm: (tf, { x }) => {
    const { mean, variance } = tf.moments(x, -1, true);
    return tf.mul(tf.sub(x, mean), tf.rsqrt(tf.add(variance, 1e-5)));
  },
  add_relu: (tf, { a, b }) => tf.relu(tf.add(a, b)),
  sum: (tf, { x }) => tf.sum(x, -1),
  /** NHWC convolution, then an NCHW output transposed on the GPU (what a user wanting NCHW would do). */
  conv2d: (tf, { x, w }, { pad, stride }) => tf.transpose(tf.conv2d(x, w, stride, pad, 'NHWC'), [0, 3, 1, 2]),
  attention: (tf, { q, k, v }, { d }) => tf.matMul(tf.softmax(tf.mul(tf.matMul(q, k, false, true), 1 / Math.sqrt(d))), v),
  chain: (tf, { a, b }, { len }) => {
    let t = a;
    for (let i = 0; i < len; i++) t = tf.add(t, b);
    return t;
  },
  chain_replay: () => {
    throw new Error('TF.js has no capture and replay of recorded ops (see the chain workload)');
  },
};

/** TF.js: input tensors created and uploaded to the GPU once; each run a tidy graph and `data()`. */
export async function prepareTfjs(tf, workload, sizes, inputs) {
  const host = { ...inputs };
  if (workload === 'conv2d') {
    // TF.js convolves NHWC input with an [r, r, c, k] filter: reorder before timing.
    host.x = { shape: [0, 2, 3, 1].map((p) => inputs.x.shape[p]), data: permute(inputs.x.data, inputs.x.shape, [0, 2, 3, 1]) };
    host.w = { shape: [2, 3, 1, 0].map((p) => inputs.w.shape[p]), data: permute(inputs.w.data, inputs.w.shape, [2, 3, 1, 0]) };
  }
  const t = {};
  for (const [name, { shape, data }] of Object.entries(host)) t[name] = tf.tensor(data, shape, 'float32');
  // tf.tensor keeps data on the CPU until first use (and small ops on CPU-resident inputs run on
  // the CPU): upload now with the WebGPU backend's own uploadToGPU, and wait for the copies.
  const backend = tf.backend();
  for (const x of Object.values(t)) backend.uploadToGPU(x.dataId);
  if (backend.commandEncoder) backend.submitQueue(); // staging copies were recorded, not yet submitted
  await backend.device.queue.onSubmittedWorkDone();
  return {
    run: async () => {
      const y = tf.tidy(() => TF_GRAPHS[workload](tf, t, sizes));
      try {
        return await y.data();
      } finally {
        y.dispose();
      }
    },
    dispose: () => Object.values(t).forEach((x) => x.dispose()),
  };
}

/**
 * ORT: a session of the model from onnx.js. On WebGPU the inputs are uploaded once into GPU
 * buffers (ort.Tensor.fromGpuBuffer on ORT's own device); the output stays at its default
 * location, the CPU, so `session.run` itself reads it back completely. On wasm the inputs are
 * CPU tensors, copied into the wasm heap by each run (there is no other place to keep them).
 */
async function prepareOrt(ort, peer, workload, sizes, inputs) {
  const session = await ort.InferenceSession.create(buildModel(workload, sizes), { executionProviders: [ep(peer)], graphOptimizationLevel: 'all' });
  const feeds = {}, buffers = [];
  for (const [name, { shape, data }] of Object.entries(inputs)) {
    if (peer === 'ort-webgpu') {
      const device = ort.env.webgpu.device; // ORT's device, known once a WebGPU session exists
      const buffer = device.createBuffer({ size: Math.ceil(data.byteLength / 16) * 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
      device.queue.writeBuffer(buffer, 0, data);
      buffers.push(buffer);
      feeds[name] = ort.Tensor.fromGpuBuffer(buffer, { dataType: 'float32', dims: shape });
    } else {
      feeds[name] = new ort.Tensor('float32', data, shape);
    }
  }
  if (buffers.length) await ort.env.webgpu.device.queue.onSubmittedWorkDone();
  const output = session.outputNames[0];
  return {
    run: async () => {
      const y = (await session.run(feeds))[output];
      return y.location === 'cpu' ? y.data : await y.getData(true);
    },
    dispose: () => {
      session.release().catch(() => {});
      buffers.forEach((b) => b.destroy());
    },
  };
}
