import type { Device } from './pkg/unicompute.js';

export { Device, Tensor } from './pkg/unicompute.js';

/**
 * Open a device: 'auto' (the WebGPU adapter if there is one, else the CPU backend inside the
 * wasm; `device.fallbackReason` says why), 'webgpu' or 'cpu'. Rejects with an `Error` whose
 * `code` says what went wrong.
 */
export function init(backend?: 'auto' | 'webgpu' | 'cpu'): Promise<Device>;
