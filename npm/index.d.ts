import type { Buffer, Device, Kernel } from './pkg/unicompute.js';

export { Buffer, Device, Fence, Kernel, Queue, Tensor } from './pkg/unicompute.js';

declare module './pkg/unicompute.js' {
  interface Queue {
    /** Record a launch of `kernel` over `workgroups` with one buffer per binding. */
    launch(kernel: Kernel, buffers: Buffer[], workgroups: [number, number, number]): void;
  }
}

/** Every device this runtime offers (`{ name, backend, type, limits, features }`). */
export function listDevices(): Promise<Array<{ name: string; backend: string; type: string; limits: Record<string, number>; features: Record<string, boolean> }>>;

/**
 * Open a device: 'auto' (the WebGPU adapter if there is one, else the CPU backend inside the
 * wasm; `device.fallbackReason` says why), 'webgpu' or 'cpu'. Rejects with an `Error` whose
 * `code` says what went wrong.
 */
export function init(backend?: 'auto' | 'webgpu' | 'cpu'): Promise<Device>;
