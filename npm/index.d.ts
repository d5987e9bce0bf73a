/// <reference types="@webgpu/types" />
import type { BackendName, BinaryName, BinaryOptions, Buffer, Device, DeviceInfo, DType, DTypeName, ElementArray, Kernel, NestedNumbers, Policy, Tensor, UnaryName } from './pkg/unicompute.js';

export { Buffer, Device, Fence, Graph, Kernel, Profile, Queue, Tensor } from './pkg/unicompute.js';
export type {
  BackendName,
  BindingInfo,
  BinaryName,
  BinaryOptions,
  Decision,
  DeviceInfo,
  DType,
  DTypeName,
  ElementArray,
  ErrorCode,
  LaunchRecord,
  MemoryStats,
  NestedNumbers,
  OpSummary,
  Policy,
  PoolOptions,
  ReadRecord,
  ReduceName,
  TuneResult,
  UnaryName,
  UnicomputeError,
} from './pkg/unicompute.js';

/** A unary op's name, as an activation fused into an op's kernel. */
export type Activation = UnaryName;
/** Where the wasm is, for `init({ wasm })`: its URL, its bytes, or the compiled module. */
export type WasmSource = URL | string | ArrayBuffer | ArrayBufferView | Response | WebAssembly.Module | Promise<URL | string | ArrayBuffer | ArrayBufferView | Response | WebAssembly.Module>;
/** Which axes a reduction takes (every axis by default), and whether to keep them as extents of 1. */
export interface ReduceOptions {
  axis?: number | number[];
  keepDims?: boolean;
  /** The max and min of nothing are −inf and +inf (ONNX) instead of an error (numpy). */
  emptyIdentity?: boolean;
}
/** Where `argmax` and `argmin` look (one axis; every axis, flattened, by default), and which of equal elements they name. */
export interface ArgOptions {
  axis?: number;
  keepDims?: boolean;
  last?: boolean;
}
/** A size for both spatial axes, or `[rows, columns]`. */
export type Pair = number | [number, number];

declare module './pkg/unicompute.js' {
  interface Tensor {
    /** `this + other`, broadcasting, with an optional activation in the same kernel; a number `other` is taken in this tensor's dtype (whole for integer dtypes), as for every binary op. */
    add(other: Tensor | number, options?: BinaryOptions): Tensor;
    /** `this - other`, broadcasting. */
    sub(other: Tensor | number, options?: BinaryOptions): Tensor;
    /** `this * other`, broadcasting. */
    mul(other: Tensor | number, options?: BinaryOptions): Tensor;
    /** `this / other`, broadcasting. */
    div(other: Tensor | number, options?: BinaryOptions): Tensor;
    /** A binary op by name, broadcasting. */
    binary(op: BinaryName, other: Tensor | number, options?: BinaryOptions): Tensor;
    /** The elementwise minimum, broadcasting. */
    minimum(other: Tensor | number, options?: BinaryOptions): Tensor;
    /** The elementwise maximum, broadcasting. */
    maximum(other: Tensor | number, options?: BinaryOptions): Tensor;
    /** `this ** other`, broadcasting. */
    pow(other: Tensor | number, options?: BinaryOptions): Tensor;
    /** `-x`. */
    neg(): Tensor;
    /** `|x|`. */
    abs(): Tensor;
    /** `e^x`. */
    exp(): Tensor;
    /** The natural logarithm. */
    log(): Tensor;
    /** The square root. */
    sqrt(): Tensor;
    /** `1 / sqrt(x)`. */
    rsqrt(): Tensor;
    /** The sine. */
    sin(): Tensor;
    /** The cosine. */
    cos(): Tensor;
    /** The hyperbolic tangent. */
    tanh(): Tensor;
    /** `1 / (1 + e^-x)`. */
    sigmoid(): Tensor;
    /** GELU with erf. */
    gelu(): Tensor;
    /** GELU with the tanh approximation. */
    geluTanh(): Tensor;
    /** `x * sigmoid(x)`. */
    silu(): Tensor;
    /** The error function. */
    erf(): Tensor;
    /** The sum over `axis` (every axis by default; a number or an array), keeping reduced axes as extents of 1 with `keepDims`. */
    sum(options?: ReduceOptions): Tensor;
    /** The mean (as `sum`). */
    mean(options?: ReduceOptions): Tensor;
    /** The maximum (as `sum`). */
    max(options?: ReduceOptions): Tensor;
    /** The minimum (as `sum`). */
    min(options?: ReduceOptions): Tensor;
    /** The position (u32) of the first maximum along `axis` (every axis, flattened, by default); `last` takes the last of equal ones. */
    argmax(options?: ArgOptions): Tensor;
    /** The position (u32) of the first minimum (as `argmax`). */
    argmin(options?: ArgOptions): Tensor;
    /** Layer norm's `[mean, invStdDev]` over the last `axes` axes (ONNX's LayerNormalization outputs), each with those axes kept as 1. */
    layerNormStats(options?: { axes?: number; eps?: number }): [Tensor, Tensor];
    /** Entries along `axis` picked by `indices` (i32, u32 or i64, any rank; negative ones count from the end); `mode` for indices outside the axis: 'error' (the default: the next read rejects with `INVALID`), 'clip' or 'fill' (0). */
    gather(axis: number, indices: Tensor, options?: { mode?: 'error' | 'clip' | 'fill' }): Tensor;
    /** The cumulative sum along `axis`; `exclusive` leaves each element out of its own sum, `reverse` sums from the end (ONNX's CumSum). */
    cumsum(axis: number, options?: { exclusive?: boolean; reverse?: boolean }): Tensor;
    /** An f16 tensor's elements as a `Float16Array` (runtimes that have the type; else `UNSUPPORTED`: use `read16()`). */
    readFloat16(): Promise<{ readonly length: number; readonly BYTES_PER_ELEMENT: 2; [index: number]: number }>;
    /** Free the wasm memory now (again: nothing); `using` does it at the end of the block. */
    dispose(): void;
    /** This tensor and `others` joined along `axis` (0 by default; negative counts from the end): one copy per input. */
    concat(others: Tensor | Tensor[], axis?: number): Tensor;
  }
  interface Device {
    /** `tensors` (at least one, of one dtype, equal but along `axis`) joined along `axis` (0 by default; negative counts from the end). */
    concat(tensors: Tensor[], axis?: number): Tensor;
    /** A tensor of ones of `shape` and `dtype` ('f32' by default). */
    ones(shape: number[], dtype?: DTypeName): Tensor;
    /** A tensor of `shape` and `dtype` ('f32' by default) with every element `value`. */
    full(shape: number[], value: number, dtype?: DTypeName): Tensor;
    /** numpy's `arange`: `start, start + step, ...` below `stop`; with one number, `0, 1, ...` below it. */
    arange(start: number, stop?: number, step?: number, dtype?: DTypeName): Tensor;
    /** Seeded values uniform in `[low, high)` (0 and 1 by default; SplitMix64, the same for a seed on every backend; without a seed, one from `Math.random()`). */
    randomUniform(shape: number[], options?: { low?: number; high?: number; seed?: number; dtype?: DTypeName }): Tensor;
    /** Seeded normal values (mean 0, std 1 by default; SplitMix64 and Box–Muller), in a float dtype. */
    randomNormal(shape: number[], options?: { mean?: number; std?: number; seed?: number; dtype?: DTypeName }): Tensor;
    /**
     * A tensor holding a copy of `data` with `shape` (by default `[data.length]`, or a nested
     * array's nesting); a `Uint16Array` holds the bits of `dtype` ('f16' or 'bf16'), a
     * `Float16Array` f16; another `dtype` than a typed array's converts on the device; plain
     * numbers are taken in `dtype` ('f32' by default; whole numbers for integer dtypes).
     */
    tensor(data: ElementArray | Uint16Array | { readonly BYTES_PER_ELEMENT: 2; readonly length: number } | NestedNumbers, shape?: number[] | Float64Array, dtype?: DTypeName): Tensor;
    /**
     * Run `fn` (synchronous) and free every tensor it made except those it returns (a tensor,
     * or tensors in arrays and plain objects), which pass to the enclosing scope.
     */
    scope<T>(fn: () => T): T;
    /**
     * Compile the WGSL compute entry point `entry`; `constants` sets the shader's `override`s
     * by name or `@id` (as WebGPU's pipeline constants), the others take their defaults.
     */
    kernel(source: string, entry: string, options?: { constants?: Record<string, number | boolean> }): Kernel;
    /** Free the wasm memory now (again: nothing). */
    dispose(): void;
  }
  interface Buffer {
    /** Free the wasm memory now (again: nothing). */
    dispose(): void;
  }
  interface Fence {
    /** Free the wasm memory now (again: nothing). */
    dispose(): void;
  }
  interface Graph {
    /** Free the wasm memory now (again: nothing). */
    dispose(): void;
  }
  interface Kernel {
    /** Free the wasm memory now (again: nothing). */
    dispose(): void;
  }
  interface Profile {
    /** Free the wasm memory now (again: nothing). */
    dispose(): void;
  }
  interface Queue {
    /** Free the wasm memory now (again: nothing). */
    dispose(): void;
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
    /** Scaled dot-product attention with this tensor as the queries `[batch, heads, lq, d]`; a row whose keys are all masked out is 0 (ONNX). */
    attention(k: Tensor, v: Tensor, options?: { causal?: boolean; scale?: number; mask?: Tensor }): Tensor;
    /** `op` over this tensor and every one of `others`, broadcast together (ONNX's Sum, Max, Min). */
    nary(op: 'add' | 'mul' | 'minimum' | 'maximum', others: Tensor[]): Tensor;
  }
}

/** Every device this runtime offers: the CPU, then WebGPU where the runtime has it. */
export function listDevices(): Promise<DeviceInfo[]>;

/** `init`'s options. */
export interface InitOptions {
  /** Which backend ('auto' by default); or give `policy` instead. */
  backend?: 'auto' | BackendName;
  /** A policy (object or JSON text) to open the device by, instead of `backend`. */
  policy?: Policy | string;
  /** With `unicompute/threads`: the CPU backend's thread count (fixed by the first call that loads the wasm). */
  threads?: number;
  /** Where the wasm is, for bundlers that do not copy it next to the module (fixed by the first call that loads it). */
  wasm?: WasmSource;
  /**
   * The page's own `GPUDevice` to open on (a webgpu device; leave out `policy`): its buffers
   * then become tensors without a copy (`device.tensorFromGPUBuffer`). The page keeps its
   * `onuncapturederror`; `device.destroy()` destroys this `GPUDevice` too.
   */
  gpuDevice?: GPUDevice;
}

/**
 * Open a device: 'auto' (a hardware WebGPU adapter; with a software one such as SwiftShader,
 * whichever of WebGPU and the CPU backend inside the wasm runs the heavy ops faster; without
 * WebGPU the CPU; `device.selectionReason` says why), 'webgpu' or 'cpu'; or `InitOptions`.
 * Rejects with a `UnicomputeError` whose `code` says what went wrong.
 */
export function init(choice?: 'auto' | 'webgpu' | 'cpu' | InitOptions): Promise<Device>;
