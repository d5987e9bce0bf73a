// Opening unicompute on a page's own `GPUDevice` (`init({ gpuDevice })`).
//
// wgpu, under the library, has no call that takes a device it did not create: it asks
// `navigator.gpu.requestAdapter()` for an adapter and that adapter's `requestDevice()` for a
// device. For the one open, `navigator.gpu` answers with a stand-in adapter that describes the
// page's device (its features, limits and adapter info) and hands that very device back. The
// stand-in is an own property of `navigator.gpu`, removed as soon as the open ends.

/** An `INVALID` error for `init`'s `gpuDevice` option. */
const invalid = (message) => Object.assign(new Error(`init: gpuDevice: ${message}`), { code: 'INVALID' });

/** Reject options that cannot open on a page's device, before the wasm loads. */
export function checkAdoptable({ gpuDevice, backend, policy }) {
  if (gpuDevice === null || typeof gpuDevice !== 'object' || typeof gpuDevice.createBuffer !== 'function' || !gpuDevice.queue) {
    throw invalid(`${gpuDevice === null ? 'null' : typeof gpuDevice}: expected a GPUDevice`);
  }
  if ((backend !== undefined && backend !== 'webgpu') || policy !== undefined) {
    throw invalid(`the device is WebGPU: leave out backend ${JSON.stringify(backend ?? null)} and policy (or set backend 'webgpu')`);
  }
}

/** The page's adapter as wgpu reads it, from what the device tells of it. */
function standIn(gpuDevice) {
  const given = gpuDevice.adapterInfo ?? {};
  const info = {
    vendor: given.vendor ?? '',
    architecture: given.architecture ?? '',
    device: given.device ?? '',
    description: given.description ?? '',
    isFallbackAdapter: given.isFallbackAdapter ?? false,
    subgroupMinSize: given.subgroupMinSize ?? 0,
    subgroupMaxSize: given.subgroupMaxSize ?? 0,
  };
  return {
    features: gpuDevice.features,
    limits: gpuDevice.limits,
    info,
    isFallbackAdapter: info.isFallbackAdapter,
    requestDevice: async () => gpuDevice,
  };
}

/**
 * Open (with `open`, which opens a webgpu device) on `gpuDevice`. The page keeps its
 * `onuncapturederror` handler: the library's own moves to an event listener.
 */
export async function adopt(gpuDevice, open) {
  const gpu = globalThis.navigator?.gpu;
  if (!gpu) throw Object.assign(new Error('init: gpuDevice: this runtime has no navigator.gpu, which the library opens WebGPU through'), { code: 'UNSUPPORTED' });
  const pagesHandler = gpuDevice.onuncapturederror;
  const adapter = standIn(gpuDevice);
  // The page's own property of that name, if it set one, comes back afterwards.
  const pagesOwn = Object.getOwnPropertyDescriptor(gpu, 'requestAdapter');
  Object.defineProperty(gpu, 'requestAdapter', { value: async () => adapter, configurable: true, writable: true });
  let device;
  try {
    device = await open();
  } finally {
    if (pagesOwn) Object.defineProperty(gpu, 'requestAdapter', pagesOwn);
    else delete gpu.requestAdapter;
    const ours = gpuDevice.onuncapturederror;
    if (ours !== pagesHandler) {
      gpuDevice.onuncapturederror = pagesHandler;
      if (typeof ours === 'function') gpuDevice.addEventListener('uncapturederror', ours);
    }
  }
  if (device.gpuDevice !== gpuDevice) {
    device.free();
    throw Object.assign(new Error("init: gpuDevice: the library opened another device than the page's (wgpu's WebGPU backend changed how it opens)"), { code: 'INTERNAL' });
  }
  return device;
}
