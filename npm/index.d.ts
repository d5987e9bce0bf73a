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

/** An execution policy (all keys optional; unknown keys are an `INVALID` error naming them). */
export interface Policy {
  backends?: Array<'cuda' | 'webgpu' | 'cpu'>;
  selection?: 'auto' | 'ranked' | 'order';
  precision?: 'f32' | 'tf32' | 'bf16' | 'f16';
  variants?: { matmul?: string; reduce?: string };
  fallback?: boolean;
  tune_cache?: string;
  pool?: { cache_limit_bytes?: number };
}

/**
 * Open a device: 'auto' (a hardware WebGPU adapter; with a software one such as SwiftShader,
 * whichever of WebGPU and the CPU backend inside the wasm runs the heavy ops faster; without
 * WebGPU the CPU; `device.selectionReason` says why), 'webgpu' or 'cpu'; or the device a
 * policy prefers. Rejects with an `Error` whose `code` says what went wrong.
 */
export function init(backend?: 'auto' | 'webgpu' | 'cpu' | { policy: Policy | string }): Promise<Device>;
