//! The TypeScript declarations of the plain objects and values the JS API takes and returns,
//! added to the generated `.d.ts`. The functions that take or return them name them with
//! `unchecked_param_type` / `unchecked_return_type`, so `tsc --strict` checks their uses. The
//! unions of op names are generated from the op tables (`ops.rs`).

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = r#"
/** The stable kind of an error (`error.code`); `INTERNAL` is a bug of unicompute (please report it);
 * `MODEL` a malformed or unsupported ONNX file. */
export type ErrorCode = 'NO_DEVICE' | 'UNSUPPORTED' | 'SHAPE' | 'DTYPE' | 'OUT_OF_RANGE' | 'LIMIT' | 'SHADER' | 'LAUNCH' | 'DEVICE_MISMATCH' | 'DEVICE' | 'DEVICE_LOST' | 'INVALID' | 'INTERNAL' | 'MODEL';
/**
 * The page's `GPUDevice` where the program has WebGPU's types (lib.dom of TypeScript 7, or
 * `@webgpu/types`), else any object: the package declares none of its own, so none clash.
 */
export type GPUDeviceLike = typeof globalThis extends { GPUDevice: { prototype: infer T } } ? T : object;
/** A `GPUBuffer` where the program has WebGPU's types (see `GPUDeviceLike`). */
export type GPUBufferLike = typeof globalThis extends { GPUBuffer: { prototype: infer T } } ? T : { readonly size: number };
/** `tensorFromGPUBuffer`'s options. */
export interface GPUTensorOptions {
  dtype?: DTypeName;
  /** Where the elements start in the buffer (0 by default). */
  byteOffset?: number;
}
/** An element type. */
export type DType = 'f32' | 'i32' | 'u32' | 'f16' | 'bf16' | 'i64' | 'bool' | 'u8' | 'i8';
/** An element type as an argument: also by the names TF.js and onnxruntime-web use. */
export type DTypeName =
  | DType | 'float32' | 'int32' | 'uint32' | 'float16' | 'bfloat16' | 'int64' | 'uint8' | 'int8';
/** A backend's name. */
export type BackendName = 'cpu' | 'webgpu' | 'cuda';
/** Elements as JS holds them: f32 (and f16 / bf16 read back widened), i32, u32, i64, u8 and
 * bool (0 or 1, as onnxruntime-web holds them), i8. */
export type ElementArray =
  | Float32Array | Int32Array | Uint32Array | BigInt64Array | Uint8Array | Int8Array;
/** What a device reports. */
export interface DeviceInfo {
  name: string;
  backend: BackendName;
  type: string;
  /** Threads of the CPU backend. */
  threads?: number;
  limits: { maxBufferSize: number; maxStorageBindingSize: number; maxInvocationsPerWorkgroup: number; maxLoopIterations?: number };
  features: { f16: boolean; timestamps: boolean; subgroups: boolean; int64: boolean };
}
/** The memory pool's statistics (`device.memoryStats()`). */
export interface MemoryStats {
  bytesLive: number;
  bytesCached: number;
  allocations: number;
  poolHits: number;
  peakBytesLive: number;
}
/** `device.memory()`: the pool's statistics and the count of live tensors (as `tf.memory()`). */
export interface MemoryInfo extends MemoryStats {
  /** Tensors of this device made and not yet disposed, freed by a scope or collected. */
  numTensors: number;
}
/** A choice the library made (a device, a variant, a fallback) and why. */
export interface Decision {
  op: string;
  choice: string;
  reason: string;
  /** Measured times of the candidates in microseconds, where the choice was measured. */
  timesUs?: Record<string, number>;
}
/** What autotuning one op's shape class found. */
export interface TuneResult {
  op: string;
  class: string;
  problem: string;
  choice: string;
  default: string;
  timesUs: Record<string, number>;
}
/** One launch the profiler recorded. */
export interface LaunchRecord {
  op: string;
  shapes: number[][];
  dtype: string;
  bytes: number;
  flops: number;
  variant: string | null;
  reason: string | null;
  queue: number;
  clock: 'timestamp-query' | 'cuda-event' | 'host' | 'host-serialised' | 'none';
  hostStartUs: number;
  deviceStartUs: number | null;
  deviceUs: number | null;
}
/** One read back to the host the profiler recorded. */
export interface ReadRecord {
  queue: number;
  bytes: number;
  hostStartUs: number;
  waitUs: number;
  copyUs: number;
}
/** The profiler's totals of one op. */
export interface OpSummary {
  op: string;
  count: number;
  timed: number;
  totalS: number;
  meanS: number;
  bytes: number;
  flops: number;
  rate: number;
  unit: string;
  variants: Record<string, number>;
}
/**
 * An execution policy (all keys optional; unknown keys are an `INVALID` error naming them).
 * The policy JSON of the Rust API spells `tuneCache` and `cacheLimitBytes` in snake_case;
 * a JSON string passed to `init` keeps that spelling.
 */
export interface Policy {
  backends?: BackendName[];
  selection?: 'auto' | 'ranked' | 'order';
  precision?: 'f32' | 'tf32' | 'bf16' | 'f16';
  variants?: { matmul?: string; reduce?: string };
  fallback?: boolean;
  tuneCache?: string;
  pool?: { cacheLimitBytes?: number };
}
/** One binding of a user kernel, as reflected from its source. */
export interface BindingInfo {
  group: number;
  binding: number;
  name: string;
  kind: 'storage-read' | 'storage-read-write' | 'uniform' | 'scalar';
  /** The element type of an array binding, where it has one. */
  dtype: DType | null;
  /** The fewest bytes a buffer bound here must hold. */
  minBytes: number;
  /** Whether the binding ends in a runtime-sized array. */
  runtimeSized: boolean;
}
/** Plain numbers as tensor data: an array, or nested arrays of one length per level. */
export type NestedNumbers = number[] | NestedNumbers[];
/** Options of `maxPool2d` and `avgPool2d` (ONNX's MaxPool and AveragePool): `kernel` and `stride` a size or `[rows, columns]` (stride = kernel by default), `padding` a size, `[rows, columns]` or `[top, left, bottom, right]` (each at most half the window; 0 by default). */
export interface PoolOptions {
  kernel: number | [number, number];
  stride?: number | [number, number];
  padding?: number | [number, number] | [number, number, number, number];
  /**
   * Spacing of the window's taps, a size or `[rows, columns]` (1 by default): a window of
   * `k` spans `(k - 1) * dilation + 1`.
   */
  dilation?: number | [number, number];
  /** Average pooling: divide by the window within the padded input, not by the taps within the input (false by default, as ONNX). */
  countIncludePad?: boolean;
  /** Round the output extents up, keeping a last partial window that starts within the input or its top / left padding. */
  ceilMode?: boolean;
}
/** Options of the binary ops (`add`, `sub`, `mul`, `div`, `binary`): an activation fused into the kernel. */
export interface BinaryOptions {
  activation?: UnaryName;
}
"#;
