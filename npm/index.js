// unicompute for JavaScript: `init()` loads the wasm module once (in browsers and workers by
// URL, in Node from the file), then opens a device.
import initWasm, { BindingList, listDevices as listDevicesLoaded, openDevice, Queue } from './pkg/unicompute.js';

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
