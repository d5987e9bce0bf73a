// The package's typings: the generated classes (pkg/unicompute.d.ts) with what npm/api.js
// adds to them, and the dtype carried in a tensor's type so `read()` gives the right array.
// No WebGPU declarations of its own: `GPUDeviceLike` and `GPUBufferLike` take lib.dom's
// (TypeScript 7's has WebGPU, 5.x's has not) or @webgpu/types' where the program has them.
import type { BackendName, BinaryName, BinaryOptions, Buffer, DeviceInfo, DType, DTypeName, ElementArray, ErrorCode, GPUDeviceLike, Kernel, MemoryInfo, NestedNumbers, Policy, ReduceName, Tensor, UnaryName } from './pkg/unicompute.js';

export { Buffer, Device, Fence, Graph, Kernel, Profile, Queue, Tensor } from './pkg/unicompute.js';
export { HostTensor, InferenceSession } from './session.js';
export type { ExecutionProvider, Feed, HostArrayOf, HostType, HostTypeOf, InferenceSessionOptions, ModelSource } from './session.js';
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
  GPUBufferLike,
  GPUDeviceLike,
  GPUTensorOptions,
  LaunchRecord,
  MemoryInfo,
  MemoryPlan,
  MemoryStats,
  NestedNumbers,
  OpSummary,
  Policy,
  PoolOptions,
  ReadRecord,
  ReduceName,
  TuneResult,
  UnaryName,
  ValueMetadata,
} from './pkg/unicompute.js';

/** What every throw and rejection of the package is; `code` says what kind of failure. */
export declare class UnicomputeError extends Error {
  constructor(message: string, code: ErrorCode, options?: { cause?: unknown });
  readonly name: 'UnicomputeError';
  code: ErrorCode;
  /** Where a `SHADER` error is (1-based), for kernels. */
  line?: number;
  column?: number;
}

/** A tensor whose dtype is known to the type checker (what factories and most ops return). */
export type TensorOf<D extends DType> = Tensor & { readonly dtype: D };
/** The typed array `read()` gives for dtype `D` (f16 and bf16 are read widened to f32). */
export type ArrayOf<D extends DType> = D extends 'f32' | 'f16' | 'bf16' ? Float32Array : D extends 'i32' ? Int32Array : D extends 'u32' ? Uint32Array : D extends 'u8' | 'bool' ? Uint8Array : D extends 'i8' ? Int8Array : BigInt64Array;
/** The canonical dtype of a name (`'float32'` is `'f32'`). */
export type Canonical<N extends DTypeName> = N extends 'float32' ? 'f32' : N extends 'float16' ? 'f16' : N extends 'bfloat16' ? 'bf16' : N extends 'int32' ? 'i32' : N extends 'uint32' ? 'u32' : N extends 'int64' ? 'i64' : N extends 'uint8' ? 'u8' : N extends 'int8' ? 'i8' : N;
/** The dtype a mean gives: integers average to f32. */
type MeanOf<D extends DType> = D extends 'i32' | 'u32' | 'i64' ? 'f32' : D;
/** A shape: `t.shape` (frozen) or any array of whole numbers. */
export type Shape = readonly number[];
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
/** How a scatter's update meets the element it lands on. */
export type ScatterReduction = 'none' | 'add' | 'mul' | 'max' | 'min';
/** A `Float16Array` (where the runtime has one). */
type Float16Like = { readonly BYTES_PER_ELEMENT: 2; readonly length: number };

declare module './pkg/unicompute.js' {
  interface Tensor {
    /** The elements, row-major, as the typed array of the dtype (f16 and bf16 widened to f32). The tensor may be disposed while the read is in flight. */
    read<D extends DType>(this: TensorOf<D>): Promise<ArrayOf<D>>;
    /** The elements into `dst` (the array `read()` would give, of as many elements); resolves to `dst`. */
    readInto<D extends DType>(this: TensorOf<D>, dst: ArrayOf<D>): Promise<ArrayOf<D>>;
    /** `Tensor(f32, [2, 3])`; also what `console.log` shows in Node. */
    toString(): string;
    /** `this + other`, broadcasting, with an optional activation in the same kernel; a number `other` is taken in this tensor's dtype (whole for integer dtypes), as for every binary op. */
    add<D extends DType>(this: TensorOf<D>, other: Tensor | number, options?: BinaryOptions): TensorOf<D>;
    /** `this - other`, broadcasting. */
    sub<D extends DType>(this: TensorOf<D>, other: Tensor | number, options?: BinaryOptions): TensorOf<D>;
    /** `this * other`, broadcasting. */
    mul<D extends DType>(this: TensorOf<D>, other: Tensor | number, options?: BinaryOptions): TensorOf<D>;
    /** `this / other`, broadcasting. */
    div<D extends DType>(this: TensorOf<D>, other: Tensor | number, options?: BinaryOptions): TensorOf<D>;
    /** A binary op by name, broadcasting. */
    binary<D extends DType>(this: TensorOf<D>, op: BinaryName, other: Tensor | number, options?: BinaryOptions): TensorOf<D>;
    /** The elementwise minimum, broadcasting. */
    minimum<D extends DType>(this: TensorOf<D>, other: Tensor | number, options?: BinaryOptions): TensorOf<D>;
    /** The elementwise maximum, broadcasting. */
    maximum<D extends DType>(this: TensorOf<D>, other: Tensor | number, options?: BinaryOptions): TensorOf<D>;
    /** `this ** other`, broadcasting. */
    pow<D extends DType>(this: TensorOf<D>, other: Tensor | number, options?: BinaryOptions): TensorOf<D>;
    /** `this == other`, broadcasting: a bool tensor (any dtype in, both of one). */
    equal(other: Tensor | number): TensorOf<'bool'>;
    /** `this < other`, broadcasting: a bool tensor. */
    less(other: Tensor | number): TensorOf<'bool'>;
    /** `this <= other`, broadcasting: a bool tensor. */
    lessEqual(other: Tensor | number): TensorOf<'bool'>;
    /** `this > other`, broadcasting: a bool tensor. */
    greater(other: Tensor | number): TensorOf<'bool'>;
    /** `this >= other`, broadcasting: a bool tensor. */
    greaterEqual(other: Tensor | number): TensorOf<'bool'>;
    /** `this and other` (non-zero is true), broadcasting: a bool tensor. */
    logicalAnd(other: Tensor | number): TensorOf<'bool'>;
    /** `this or other` (non-zero is true), broadcasting: a bool tensor. */
    logicalOr(other: Tensor | number): TensorOf<'bool'>;
    /** `this xor other` (non-zero is true), broadcasting: a bool tensor. */
    logicalXor(other: Tensor | number): TensorOf<'bool'>;
    /** A unary op by name. */
    unary<D extends DType>(this: TensorOf<D>, op: UnaryName): TensorOf<D>;
    /** `-x`. */
    neg<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** `|x|`. */
    abs<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** `e^x`. */
    exp<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** The natural logarithm. */
    log<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** The square root. */
    sqrt<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** `1 / sqrt(x)`. */
    rsqrt<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** The sine. */
    sin<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** The cosine. */
    cos<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** The hyperbolic tangent. */
    tanh<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** `1 / (1 + e^-x)`. */
    sigmoid<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** `max(x, 0)`. */
    relu<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** GELU with erf. */
    gelu<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** GELU with the tanh approximation. */
    geluTanh<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** `x * sigmoid(x)`. */
    silu<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** The error function. */
    erf<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** `ln(1 + e^x)`, without overflow for large `x` (ONNX Softplus). */
    softplus<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** `x * relu6(x + 3) / 6` (ONNX HardSwish). */
    hardswish<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** Largest integer `<= x` (ONNX Floor). */
    floor<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** Smallest integer `>= x` (ONNX Ceil). */
    ceil<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** Nearest integer, halves to the even one (ONNX Round). */
    round<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** 1, -1, or `x` itself for ±0 (ONNX Sign). */
    sign<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** A reduction by name over `{ axis, keepDims, emptyIdentity }` (a number: the axis). */
    reduce(op: ReduceName, options?: number | ReduceOptions): Tensor;
    /** The sum over `axis` (every axis by default; a number or an array), keeping reduced axes as extents of 1 with `keepDims`. */
    sum<D extends DType>(this: TensorOf<D>, options?: ReduceOptions): TensorOf<D>;
    /** The mean (as `sum`); integers average to f32. */
    mean<D extends DType>(this: TensorOf<D>, options?: ReduceOptions): TensorOf<MeanOf<D>>;
    /** The maximum (as `sum`). */
    max<D extends DType>(this: TensorOf<D>, options?: ReduceOptions): TensorOf<D>;
    /** The minimum (as `sum`). */
    min<D extends DType>(this: TensorOf<D>, options?: ReduceOptions): TensorOf<D>;
    /** The product (as `sum`; 1 over nothing); integers wrap. */
    prod<D extends DType>(this: TensorOf<D>, options?: ReduceOptions): TensorOf<D>;
    /** The position (u32) of the first maximum along `axis` (every axis, flattened, by default); `last` takes the last of equal ones. */
    argmax(options?: ArgOptions): TensorOf<'u32'>;
    /** The position (u32) of the first minimum (as `argmax`). */
    argmin(options?: ArgOptions): TensorOf<'u32'>;
    /** Softmax over `{ axis }` (the last by default; a number is the axis). */
    softmax<D extends DType>(this: TensorOf<D>, options?: number | { axis?: number }): TensorOf<D>;
    /** Log-softmax over `{ axis }` (the last by default; a number is the axis). */
    logSoftmax<D extends DType>(this: TensorOf<D>, options?: number | { axis?: number }): TensorOf<D>;
    /** A view with another shape of the same number of elements. */
    reshape<D extends DType>(this: TensorOf<D>, shape: Shape): TensorOf<D>;
    /** Elements `start..end` along `axis` (a view). */
    slice<D extends DType>(this: TensorOf<D>, axis: number, start: number, end: number): TensorOf<D>;
    /** This tensor broadcast to `shape` (a view). */
    broadcastTo<D extends DType>(this: TensorOf<D>, shape: Shape): TensorOf<D>;
    /** The last two dimensions swapped (a view). */
    transpose<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** A view with the dimensions reordered. */
    permute<D extends DType>(this: TensorOf<D>, dims: Shape): TensorOf<D>;
    /** The same elements in a contiguous tensor. */
    contiguous<D extends DType>(this: TensorOf<D>): TensorOf<D>;
    /** Matrix product (batched, broadcasting). */
    matmul<D extends DType>(this: TensorOf<D>, other: Tensor): TensorOf<D>;
    /** This tensor converted to `dtype`. */
    cast<N extends DTypeName>(dtype: N): TensorOf<Canonical<N>>;
    /** `this ? a : b` elementwise (this is the condition), broadcasting. */
    select<D extends DType>(a: TensorOf<D>, b: Tensor): TensorOf<D>;
    /** Layer norm's `[mean, invStdDev]` over the last `axes` axes (ONNX's LayerNormalization outputs), each with those axes kept as 1. */
    layerNormStats(options?: { axes?: number; eps?: number }): [Tensor, Tensor];
    /** The `k` largest (`largest: false`: smallest) elements along `axis` (the last by default), sorted, ties to the lower index and NaN above every number, with their u32 indices (ONNX's TopK). */
    topk<D extends DType>(this: TensorOf<D>, k: number, options?: { axis?: number; largest?: boolean }): [TensorOf<D>, TensorOf<'u32'>];
    /** Entries along `axis` picked by `indices` (i32, u32 or i64, any rank; negative ones count from the end); `mode` for indices outside the axis: 'error' (the default: the next read rejects with `INVALID`), 'clip' or 'fill' (0). */
    gather<D extends DType>(this: TensorOf<D>, axis: number, indices: Tensor, options?: { mode?: 'error' | 'clip' | 'fill' }): TensorOf<D>;
    /** A copy with `updates` met into it at `indices` (i32, u32 or i64) along `axis` (ONNX's ScatterElements: indices and updates of one shape; negative indices count from the end, one outside the axis skips its update); `reduction` 'none' (the default: the last of duplicates wins), 'add', 'mul', 'max' or 'min'. */
    scatterElements<D extends DType>(this: TensorOf<D>, axis: number, indices: Tensor, updates: TensorOf<D>, options?: { reduction?: ScatterReduction }): TensorOf<D>;
    /** A copy with the update slices met into it at the index tuples (the last axis) of `indices` (ONNX's ScatterND; a tuple with an index outside its axis skips its update); `reduction` as `scatterElements`. */
    scatterND<D extends DType>(this: TensorOf<D>, indices: Tensor, updates: TensorOf<D>, options?: { reduction?: ScatterReduction }): TensorOf<D>;
    /** The cumulative sum along `axis`; `exclusive` leaves each element out of its own sum, `reverse` sums from the end (ONNX's CumSum). */
    cumsum<D extends DType>(this: TensorOf<D>, axis: number, options?: { exclusive?: boolean; reverse?: boolean }): TensorOf<D>;
    /** An f16 tensor's elements as a `Float16Array` (runtimes that have the type; else `UNSUPPORTED`: use `read16()`). */
    readFloat16(): Promise<{ readonly length: number; readonly BYTES_PER_ELEMENT: 2; [index: number]: number }>;
    /** 2-D convolution of `[n, c, h, w]` by `[o, c / groups, kh, kw]` (stride 1, padding 0, dilation 1, groups 1 by default). */
    conv2d<D extends DType>(this: TensorOf<D>, weight: Tensor, options?: { stride?: Pair; padding?: Pair; dilation?: Pair; groups?: number; bias?: Tensor; activation?: Activation }): TensorOf<D>;
    /** 2-D transposed convolution of `[n, c, h, w]` by `[c, o / groups, kh, kw]`: `[n, o, (h - 1) * stride + (kh - 1) * dilation + 1 + outputPadding - top - bottom, ...]` (stride 1, padding 0, outputPadding 0, dilation 1, groups 1 by default; padding, cropped from the full output, is a number, `[rows, columns]` or `[top, left, bottom, right]`). */
    convTranspose2d<D extends DType>(this: TensorOf<D>, weight: Tensor, options?: { stride?: Pair; padding?: Pair | [number, number, number, number]; outputPadding?: Pair; dilation?: Pair; groups?: number; bias?: Tensor; activation?: Activation }): TensorOf<D>;
    /** `activation(this @ weight + bias)` in one kernel. */
    linear<D extends DType>(this: TensorOf<D>, weight: Tensor, options?: { bias?: Tensor; activation?: Activation }): TensorOf<D>;
    /** Layer normalisation over the last `axes` axes (1 and eps 1e-5 by default). */
    layerNorm<D extends DType>(this: TensorOf<D>, options?: { weight?: Tensor; bias?: Tensor; eps?: number; activation?: Activation; axes?: number }): TensorOf<D>;
    /** RMS normalisation over the last `axes` axes (1 and eps 1e-5 by default). */
    rmsNorm<D extends DType>(this: TensorOf<D>, options?: { weight?: Tensor; eps?: number; activation?: Activation; axes?: number }): TensorOf<D>;
    /** Scaled dot-product attention with this tensor as the queries `[batch, heads, lq, d]`; a row whose keys are all masked out is 0 (ONNX). */
    attention<D extends DType>(this: TensorOf<D>, k: Tensor, v: Tensor, options?: { causal?: boolean; scale?: number; mask?: Tensor }): TensorOf<D>;
    /** `op` over this tensor and every one of `others`, broadcast together (ONNX's Sum, Max, Min). */
    nary<D extends DType>(this: TensorOf<D>, op: 'add' | 'mul' | 'minimum' | 'maximum', others: Tensor[]): TensorOf<D>;
    /** Free the wasm memory now (again: nothing); `using` does it at the end of the block. */
    dispose(): void;
    /** This tensor and `others` joined along `axis` (0 by default; negative counts from the end): one copy per input. */
    concat(others: Tensor | Tensor[], axis?: number): Tensor;
  }
  interface Device {
    /** A tensor holding a copy of `data` with `shape`, converted to `dtype` (on the device). */
    tensor<N extends DTypeName>(data: ElementArray | Uint16Array | Float16Like, shape: Shape, options: N | { dtype: N }): TensorOf<Canonical<N>>;
    /** A tensor holding a copy of `data` with `shape`, of the data's dtype. */
    tensor(data: Float32Array, shape: Shape, options?: { dtype?: undefined }): TensorOf<'f32'>;
    tensor(data: Int32Array, shape: Shape, options?: { dtype?: undefined }): TensorOf<'i32'>;
    tensor(data: Uint32Array, shape: Shape, options?: { dtype?: undefined }): TensorOf<'u32'>;
    tensor(data: BigInt64Array, shape: Shape, options?: { dtype?: undefined }): TensorOf<'i64'>;
    tensor(data: Float16Like, shape: Shape, options?: { dtype?: undefined }): TensorOf<'f16'>;
    /** Plain numbers, possibly nested (the shape by default their nesting), in `dtype` ('f32' by default; whole numbers for integer dtypes). */
    tensor<N extends DTypeName = 'f32'>(data: NestedNumbers, shape?: Shape, options?: N | { dtype?: N }): TensorOf<Canonical<N>>;
    /** `tensors` (at least one, of one dtype, equal but along `axis`) joined along `axis` (0 by default; negative counts from the end). */
    concat<D extends DType>(tensors: TensorOf<D>[], axis?: number): TensorOf<D>;
    /** A tensor of ones of `shape` and `dtype` ('f32' by default). */
    ones<N extends DTypeName = 'f32'>(shape: Shape, dtype?: N): TensorOf<Canonical<N>>;
    /** A tensor of `shape` and `dtype` ('f32' by default) with every element `value`. */
    full<N extends DTypeName = 'f32'>(shape: Shape, value: number, dtype?: N): TensorOf<Canonical<N>>;
    /** numpy's `arange`: `start, start + step, ...` below `stop`; with one number, `0, 1, ...` below it. */
    arange<N extends DTypeName = 'f32'>(start: number, stop?: number, step?: number, dtype?: N): TensorOf<Canonical<N>>;
    /** Seeded values uniform in `[low, high)` (0 and 1 by default; SplitMix64, the same for a seed on every backend; without a seed, one from `Math.random()`). */
    randomUniform<N extends DTypeName = 'f32'>(shape: Shape, options?: { low?: number; high?: number; seed?: number; dtype?: N }): TensorOf<Canonical<N>>;
    /** Seeded normal values (mean 0, std 1 by default; SplitMix64 and Box–Muller), in a float dtype. */
    randomNormal<N extends DTypeName = 'f32'>(shape: Shape, options?: { mean?: number; std?: number; seed?: number; dtype?: N }): TensorOf<Canonical<N>>;
    /** A tensor of zeros of `shape` and `dtype` (f32 by default). */
    zeros<N extends DTypeName = 'f32'>(shape: Shape, options?: N | { dtype?: N }): TensorOf<Canonical<N>>;
    /** `Device(cpu, "wasm32 (1 thread)")`; also what `console.log` shows in Node. */
    toString(): string;
    /** The pool's statistics and the count of this device's live tensors (`numTensors`), as `tf.memory()`. */
    memory(): MemoryInfo;
    /**
     * Run `fn` (synchronous) and free every tensor of this device it made, by any method,
     * except those it returns (a tensor, or tensors in arrays and plain objects), which pass to
     * the enclosing scope of the device.
     */
    scope<T>(fn: () => T): T;
    /**
     * Compile the WGSL compute entry point `entry`; `constants` sets the shader's `override`s
     * by name or `@id` (as WebGPU's pipeline constants), the others take their defaults. It
     * runs on WebGPU and on the CPU backend (an executor of the kernel's IR in the wasm).
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
    /**
     * Record a launch of `kernel` over `workgroups` with one binding per entry: a Buffer, or a
     * Tensor (f32, i32, u32; bound in place when contiguous, so the kernel's writes land in it).
     */
    launch(kernel: Kernel, bindings: (Buffer | Tensor)[], workgroups: readonly [number, number, number]): void;
  }
}

/** Every device this runtime offers: the CPU, then WebGPU where the runtime has it. */
export function listDevices(): Promise<DeviceInfo[]>;

/** `init`'s options. */
export interface InitOptions {
  /** Which backend ('auto' by default); or give `policy` instead (both are refused). */
  backend?: 'auto' | BackendName;
  /** A policy (object or JSON text) to open the device by, instead of `backend`. */
  policy?: Policy | string;
  /** With `unicompute/threads` in a cross-origin-isolated context: the CPU backend's thread count (fixed by the first call that loads the wasm; elsewhere above 1 warns). */
  threads?: number;
  /** Where the wasm is, for bundlers that do not copy it next to the module (fixed by the first call that loads it). */
  wasm?: WasmSource;
  /**
   * The page's own `GPUDevice` to open on (a webgpu device; leave out `policy`): its buffers
   * then become tensors without a copy (`device.tensorFromGPUBuffer`). The page keeps its
   * `onuncapturederror`; `device.destroy()` destroys this `GPUDevice` too.
   */
  gpuDevice?: GPUDeviceLike;
}

/**
 * Open a device: 'auto' (a hardware WebGPU adapter; with a software one such as SwiftShader,
 * whichever of WebGPU and the CPU backend inside the wasm runs the heavy ops faster; without
 * WebGPU the CPU; `device.selectionReason` says why), 'webgpu' or 'cpu'; or `InitOptions`.
 * Rejects with a `UnicomputeError` whose `code` says what went wrong.
 */
export function init(choice?: 'auto' | 'webgpu' | 'cpu' | InitOptions): Promise<import('./pkg/unicompute.js').Device>;
