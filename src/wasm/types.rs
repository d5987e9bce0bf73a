//! The TypeScript declarations of the plain objects and values the JS API takes and returns,
//! added to the generated `.d.ts`. The functions that take or return them name them with
//! `unchecked_param_type` / `unchecked_return_type`, so `tsc --strict` checks their uses.

use wasm_bindgen::prelude::*;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = r#"
/** The stable kind of an error (`error.code`). */
export type ErrorCode = 'NO_DEVICE' | 'UNSUPPORTED' | 'SHAPE' | 'DTYPE' | 'OUT_OF_RANGE' | 'LIMIT' | 'SHADER' | 'LAUNCH' | 'DEVICE_MISMATCH' | 'DEVICE' | 'DEVICE_LOST' | 'INVALID' | 'INTERNAL';
/** What every rejection and throw of the API is: a message saying what was wrong and what was expected. */
export interface UnicomputeError extends Error {
  code: ErrorCode;
  /** Where a `SHADER` error is (1-based), for kernels. */
  line?: number;
  column?: number;
}
/** An element type. */
export type DType = 'f32' | 'i32' | 'u32' | 'f16' | 'bf16' | 'i64';
/** An element type as an argument: also by the names TF.js and onnxruntime-web use. */
export type DTypeName = DType | 'float32' | 'int32' | 'uint32' | 'float16' | 'bfloat16' | 'int64';
/** A backend's name. */
export type BackendName = 'cpu' | 'webgpu' | 'cuda';
/** Elements as JS holds them: f32 (and f16 / bf16 read back widened), i32, u32, i64. */
export type ElementArray = Float32Array | Int32Array | Uint32Array | BigInt64Array;
/** A unary op's name (also an activation fused into an op). */
export type UnaryName = 'neg' | 'abs' | 'exp' | 'log' | 'sqrt' | 'rsqrt' | 'sin' | 'cos' | 'tanh' | 'sigmoid' | 'relu' | 'gelu' | 'gelu_tanh' | 'silu' | 'erf';
/** A binary op's name. */
export type BinaryName = 'add' | 'sub' | 'mul' | 'div' | 'minimum' | 'maximum' | 'pow';
/** A reduction's name. */
export type ReduceName = 'sum' | 'mean' | 'max' | 'min' | 'argmax';
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
/** The memory pool's statistics. */
export interface MemoryStats {
  bytesLive: number;
  bytesCached: number;
  allocations: number;
  poolHits: number;
  peakBytesLive: number;
}
/** A choice the library made (a device, a variant, a fallback) and why. */
export interface Decision {
  op: string;
  choice: string;
  reason: string;
  /** Measured times of the candidates in microseconds, where the choice was measured. */
  times_us?: Record<string, number>;
}
/** What autotuning one op's shape class found. */
export interface TuneResult {
  op: string;
  class: string;
  problem: string;
  choice: string;
  default: string;
  times_us: Record<string, number>;
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
  host_start_us: number;
  device_start_us: number | null;
  device_us: number | null;
}
/** One read back to the host the profiler recorded. */
export interface ReadRecord {
  queue: number;
  bytes: number;
  host_start_us: number;
  wait_us: number;
  copy_us: number;
}
/** The profiler's totals of one op. */
export interface OpSummary {
  op: string;
  count: number;
  timed: number;
  total_s: number;
  mean_s: number;
  bytes: number;
  flops: number;
  rate: number;
  unit: string;
  variants: Record<string, number>;
}
/** An execution policy (all keys optional; unknown keys are an `INVALID` error naming them). */
export interface Policy {
  backends?: BackendName[];
  selection?: 'auto' | 'ranked' | 'order';
  precision?: 'f32' | 'tf32' | 'bf16' | 'f16';
  variants?: { matmul?: string; reduce?: string };
  fallback?: boolean;
  tune_cache?: string;
  pool?: { cache_limit_bytes?: number };
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
/** Options of the binary ops (`add`, `sub`, `mul`, `div`, `binary`): an activation fused into the kernel. */
export interface BinaryOptions {
  activation?: UnaryName;
}
"#;
