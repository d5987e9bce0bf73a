// unicompute's side of the benchmark: the workloads through the npm package's JS API, on an
// opened device, and where the time of one run goes. It imports nothing of the package (the
// page, bench.js, and the demo in web/ open the devices), so either can load it.

/**
 * The unicompute engines of the page: WebGPU, the CPU backend inside the wasm on one thread,
 * and on `threads` Web Workers (`unicompute/threads`; the page is cross-origin isolated).
 */
export const OURS = ['unicompute-webgpu', 'unicompute-cpu', 'unicompute-cpu-threads'];

/** The backend each engine opens. */
export const backendOf = (engine) => (engine === 'unicompute-webgpu' ? 'webgpu' : 'cpu');

/**
 * The computation of `workload` from uploaded tensors: returns the output tensor and the
 * intermediates to free after the read.
 */
const COMPUTE = {
  matmul: ({ a, b }) => [a.matmul(b)],
  softmax: ({ x }) => [x.softmax()],
  layer_norm: ({ x }) => [x.layerNorm({ eps: 1e-5 })],
  add_relu: ({ a, b }) => [a.add(b, { activation: 'relu' })],
  sum: ({ x }) => [x.reduce('sum', 1)],
  conv2d: ({ x, w }, s) => [x.conv2d(w, { padding: s.pad, stride: s.stride })],
  attention: ({ q, k, v }) => [q.attention(k, v)],
  chain: ({ a, b }, { len }) => {
    const made = [];
    for (let t = a, i = 0; i < len; i++) made.push((t = t.add(b)));
    return [made.pop(), ...made];
  },
};

/** Milliseconds since the page opened. */
const now = () => performance.now();

/**
 * Upload `inputs` to `device` and return `{ run, breakdown, dispose }`: `run()` computes
 * `workload` and reads the whole output back into a typed array; `breakdown()` does the same
 * once with the profiler on and says where the time went.
 */
export async function prepareOurs(device, workload, sizes, inputs) {
  const tensors = Object.fromEntries(Object.entries(inputs).map(([name, { shape, data }]) => [name, device.tensor(data, shape)]));
  // The uploads reach the device before any timing: one read of each input waits for it.
  for (const t of Object.values(tensors)) await t.read();
  if (workload === 'chain_replay') return prepareReplay(device, tensors, sizes);
  const compute = () => COMPUTE[workload](tensors, sizes);
  const run = async () => {
    const [out, ...rest] = compute();
    try {
      return await out.read();
    } finally {
      out.free();
      for (const t of rest) t.free();
    }
  };
  const breakdown = async () => {
    device.enableProfiler();
    try {
      const t0 = now();
      const [out, ...rest] = compute();
      const t1 = now();
      await out.read();
      const t2 = now();
      out.free();
      for (const t of rest) t.free();
      const profile = await device.takeProfile();
      return breakdownOf(t1 - t0, t2 - t1, profile, device.backend);
    } finally {
      device.disableProfiler();
    }
  };
  const dispose = () => Object.values(tensors).forEach((t) => t.free());
  return { run, breakdown, dispose };
}

/**
 * The chain captured once on the default queue (which tensor methods record on); a run is one
 * replay and the read of its output. The CPU backend cannot capture: it says so.
 */
function prepareReplay(device, tensors, sizes) {
  let made;
  const graph = device.queue().capture(() => {
    made = COMPUTE.chain(tensors, sizes);
  });
  return {
    run: async () => {
      graph.replay();
      return await made[0].read();
    },
    dispose: () => {
      graph.free();
      made.forEach((t) => t.free());
      Object.values(tensors).forEach((t) => t.free());
    },
  };
}

/**
 * Where one run's time went (ms), from the JS clock and the profiler:
 * - `record`: the op calls (on `cpu` they also run the kernels);
 * - `kernels`: the launches' device time (timestamp queries on webgpu, the host clock on cpu);
 * - `submit_to_mapped`: from the read's request until the bytes were mapped, less the kernels:
 *   submitting, the copy to a mappable staging buffer, mapping (webgpu);
 * - `copy_to_js`: the one copy from the mapped range (or the CPU backend's memory) into the
 *   returned typed array;
 * - `read_rest`: the remainder of `await read()` (promise resolution, the wasm boundary).
 */
function breakdownOf(recordMs, readMs, profile, backend) {
  const kernels = profile.launches().reduce((sum, l) => sum + (l.deviceUs ?? 0), 0) / 1e3;
  const reads = profile.reads();
  const wait = reads.reduce((sum, r) => sum + r.waitUs, 0) / 1e3;
  const copy = reads.reduce((sum, r) => sum + r.copyUs, 0) / 1e3;
  // webgpu runs the kernels after the read's submit, within its wait; cpu while recording.
  const inWait = backend === 'webgpu' ? kernels : 0;
  return {
    record_ms: recordMs,
    kernels_ms: kernels,
    submit_to_mapped_ms: Math.max(wait - inWait, 0),
    copy_to_js_ms: copy,
    read_rest_ms: Math.max(readMs - wait - copy, 0),
  };
}
