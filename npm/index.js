// unicompute for JavaScript: `init()` loads the wasm module once (in browsers and workers by
// URL, in Node from the file), then opens a device.
import initWasm, { BindingList, listDevices as listDevicesLoaded, openDevice, Queue, Tensor, TensorArgs } from './pkg/unicompute.js';

export { Buffer, Device, Fence, Kernel, Queue, Tensor } from './pkg/unicompute.js';

/**
 * Record a launch of `kernel` over `workgroups` ([x, y, z]) with one buffer per binding.
 * (The buffers stay usable: they are listed, not handed over.)
 */
Queue.prototype.launch = function launch(kernel, buffers, workgroups) {
  const list = new BindingList();
  try {
    for (const b of buffers) list.push(b);
    this.launchWith(kernel, list, workgroups);
  } finally {
    list.free();
  }
};

/**
 * Call `call(tensors, rest)` with the tensor-valued keys `names` of `options` moved into a
 * TensorArgs (the wasm cannot read tensors out of a plain object) and the rest left as options.
 * Options that are not an object go through unchanged, for the wasm to reject with `INVALID`.
 */
function withTensors(options, names, call) {
  const tensors = new TensorArgs();
  try {
    if (options === null || typeof options !== 'object') return call(tensors, options);
    const rest = { ...options };
    for (const name of names) {
      if (rest[name] !== undefined) tensors.set(name, rest[name]);
      delete rest[name];
    }
    return call(tensors, rest);
  } finally {
    tensors.free();
  }
}

/** `conv2d(weight, { stride, padding, dilation, groups, bias, activation })`. */
Tensor.prototype.conv2d = function conv2d(weight, options) {
  return withTensors(options, ['bias'], (t, o) => this.conv2dWith(weight, t, o));
};
/** `linear(weight, { bias, activation })`: `activation(this @ weight + bias)` in one kernel. */
Tensor.prototype.linear = function linear(weight, options) {
  return withTensors(options, ['bias'], (t, o) => this.linearWith(weight, t, o));
};
/** `layerNorm({ weight, bias, eps, activation })` over the last axis. */
Tensor.prototype.layerNorm = function layerNorm(options) {
  return withTensors(options, ['weight', 'bias'], (t, o) => this.layerNormWith(t, o));
};
/** `rmsNorm({ weight, eps, activation })` over the last axis. */
Tensor.prototype.rmsNorm = function rmsNorm(options) {
  return withTensors(options, ['weight'], (t, o) => this.rmsNormWith(t, o));
};
/** `attention(k, v, { causal, scale, mask })` with this tensor as the queries. */
Tensor.prototype.attention = function attention(k, v, options) {
  return withTensors(options, ['mask'], (t, o) => this.attentionWith(k, v, t, o));
};

let loading;

function load() {
  loading ??= (async () => {
    const url = new URL('./pkg/unicompute_bg.wasm', import.meta.url);
    if (typeof process !== 'undefined' && process.versions?.node) {
      // Named through a variable so bundlers leave this Node-only import alone.
      const fsModule = 'node:fs/promises';
      const { readFile } = await import(/* @vite-ignore */ fsModule);
      await initWasm({ module_or_path: await readFile(url) });
    } else {
      await initWasm({ module_or_path: url });
    }
  })();
  return loading;
}

/** Every device this runtime offers, as info objects: the CPU, then WebGPU if available. */
export async function listDevices() {
  await load();
  return listDevicesLoaded();
}

/**
 * Open a device: 'auto' (a hardware WebGPU adapter; with a software adapter such as
 * SwiftShader, whichever of WebGPU and the CPU backend inside the wasm runs the heavy ops
 * faster, timed once; without WebGPU the CPU; `device.selectionReason` says why), 'webgpu' or
 * 'cpu'. Or `init({ policy })` with a policy object (see the README): backend order and
 * selection, matmul precision, kernel variants ('auto' = autotuned), fallback.
 * @param {'auto' | 'webgpu' | 'cpu' | { policy: object | string }} [backend]
 */
export async function init(backend = 'auto') {
  await load();
  if (backend !== null && typeof backend === 'object') {
    return openDevice(undefined, backend.policy);
  }
  return openDevice(backend);
}
