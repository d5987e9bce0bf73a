import type { Buffer, Device, Kernel, Tensor } from './pkg/unicompute.js';

export { Buffer, Device, Fence, Kernel, Queue, Tensor } from './pkg/unicompute.js';

/** A unary op's name, as an activation fused into an op's kernel. */
export type Activation = 'neg' | 'abs' | 'exp' | 'log' | 'sqrt' | 'rsqrt' | 'sin' | 'cos' | 'tanh' | 'sigmoid' | 'relu' | 'gelu' | 'gelu_tanh' | 'silu' | 'erf';
/** A size for both spatial axes, or `[rows, columns]`. */
export type Pair = number | [number, number];

declare module './pkg/unicompute.js' {
  interface Queue {
    /** Record a launch of `kernel` over `workgroups` with one buffer per binding. */
    launch(kernel: Kernel, buffers: Buffer[], workgroups: [number, number, number]): void;
  }
  interface Tensor {
    /** 2-D convolution of `[n, c, h, w]` by `[o, c / groups, kh, kw]` (stride 1, padding 0, dilation 1, groups 1 by default). */
    conv2d(weight: Tensor, options?: { stride?: Pair; padding?: Pair; dilation?: Pair; groups?: number; bias?: Tensor; activation?: Activation }): Tensor;
    /** `activation(this @ weight + bias)` in one kernel. */
    linear(weight: Tensor, options?: { bias?: Tensor; activation?: Activation }): Tensor;
    /** Layer normalisation over the last `axes` axes (1 and eps 1e-5 by default). */
    layerNorm(options?: { weight?: Tensor; bias?: Tensor; eps?: number; activation?: Activation; axes?: number }): Tensor;
    /** RMS normalisation over the last `axes` axes (1 and eps 1e-5 by default). */
    rmsNorm(options?: { weight?: Tensor; eps?: number; activation?: Activation; axes?: number }): Tensor;
    /** Scaled dot-product attention with this tensor as the queries `[batch, heads, lq, d]`. */
    attention(k: Tensor, v: Tensor, options?: { causal?: boolean; scale?: number; mask?: Tensor }): Tensor;
    /** `op` over this tensor and every one of `others`, broadcast together (ONNX's Sum, Max, Min). */
    nary(op: 'add' | 'mul' | 'minimum' | 'maximum', others: Tensor[]): Tensor;
  }
}

/** Every device this runtime offers (`{ name, backend, type, limits, features }`). */
export function listDevices(): Promise<Array<{ name: string; backend: string; type: string; threads?: number; limits: Record<string, number>; features: Record<string, boolean> }>>;

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
 * WebGPU the CPU; `device.selectionReason` says why), 'webgpu' or 'cpu'; or an object with the
 * backend, a policy to follow instead, and (with `unicompute/threads`) the CPU backend's thread
 * count, fixed by the first call. Rejects with an `Error` whose `code` says what went wrong.
 */
export function init(choice?: 'auto' | 'webgpu' | 'cpu' | { backend?: 'auto' | 'webgpu' | 'cpu'; policy?: Policy | string; threads?: number }): Promise<Device>;
