// unicompute's side of the benchmark: the workloads through the npm package's JS API, on its
// `webgpu` or `cpu` device, and where the time of one run goes.
import { init } from './node_modules/unicompute/index.js';

/** The unicompute engines of the page. */
export const OURS = ['unicompute-webgpu', 'unicompute-cpu'];

/** Open the device of `engine` ('unicompute-webgpu' or 'unicompute-cpu'). */
export async function loadOurs(engine) {
  const backend = engine.replace('unicompute-', '');
  const device = await init(backend);
  if (device.backend !== backend) throw new Error(`no ${backend} device: ${device.fallbackReason ?? device.selectionReason}`);
  return device;
}

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
      return { record_ms: t1 - t0, read_ms: t2 - t1, ...phases(profile.launches()) };
    } finally {
      device.disableProfiler();
    }
  };
  const dispose = () => Object.values(tensors).forEach((t) => t.free());
  return { run, breakdown, dispose };
}

/**
 * From the profiler's records: the kernels' device time (timestamp queries on webgpu, the host
 * clock on cpu) and the phases of the read back.
 */
function phases(launches) {
  const out = { kernel_ms: 0 };
  for (const l of launches) {
    const ms = (l.device_us ?? 0) / 1e3;
    if (l.op.startsWith('read:')) out[`${l.op.slice(5).trim().replaceAll(' ', '_')}_ms`] = ms;
    else out.kernel_ms += ms;
  }
  return out;
}
