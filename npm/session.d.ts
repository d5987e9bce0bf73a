// Typings of ONNX sessions (npm/session.js), as onnxruntime-web types its `InferenceSession`
// and `Tensor`; `unicompute` and `unicompute/ort` export them.
import type { Device, MemoryPlan, Tensor, ValueMetadata } from './pkg/unicompute.js';

/** An element type by onnxruntime-web's name. */
export type HostType = 'float32' | 'float64' | 'float16' | 'int8' | 'uint8' | 'bool' | 'int16' | 'uint16' | 'int32' | 'uint32' | 'int64' | 'uint64';
/** The typed array a HostTensor of type `T` keeps its data in (float16 as its bits). */
export type HostArrayOf<T extends HostType> = T extends 'float32' ? Float32Array : T extends 'float64' ? Float64Array : T extends 'float16' | 'uint16' ? Uint16Array : T extends 'int8' ? Int8Array : T extends 'uint8' | 'bool' ? Uint8Array : T extends 'int16' ? Int16Array : T extends 'int32' ? Int32Array : T extends 'uint32' ? Uint32Array : T extends 'int64' ? BigInt64Array : BigUint64Array;
/** The type a typed array's data is taken as when no type is given. */
export type HostTypeOf<A> = A extends Float32Array ? 'float32' : A extends Float64Array ? 'float64' : A extends Int8Array ? 'int8' : A extends Uint8Array ? 'uint8' : A extends Int16Array ? 'int16' : A extends Uint16Array ? 'uint16' : A extends Int32Array ? 'int32' : A extends Uint32Array ? 'uint32' : A extends BigInt64Array ? 'int64' : A extends BigUint64Array ? 'uint64' : A extends readonly boolean[] ? 'bool' : A extends readonly bigint[] ? 'int64' : 'float32';

/**
 * A tensor in host memory, as onnxruntime-web's `Tensor` (which `unicompute/ort` exports it
 * as): `new HostTensor('float32', data, [1, 3])`, or `new HostTensor(data, dims)`.
 */
export declare class HostTensor<T extends HostType = HostType> {
  constructor(type: T, data: HostArrayOf<T> | readonly number[] | readonly bigint[] | readonly boolean[] | { readonly BYTES_PER_ELEMENT: 2; readonly length: number }, dims?: readonly number[]);
  constructor(data: HostArrayOf<T> | readonly number[] | readonly bigint[] | readonly boolean[], dims?: readonly number[]);
  /** The element type. */
  readonly type: T;
  /** The elements, row-major (float16 as a Uint16Array of its bits). */
  readonly data: HostArrayOf<T>;
  /** The extents (frozen). */
  readonly dims: readonly number[];
  /** How many elements. */
  readonly size: number;
  /** Where the data is: host memory. */
  readonly location: 'cpu';
  /** The data, as a promise. */
  getData(): Promise<HostArrayOf<T>>;
  /** The same data with other `dims` (no copy). */
  reshape(dims: readonly number[]): HostTensor<T>;
  /** Let go of the data. */
  dispose(): void;
}

/** onnxruntime-web's execution providers that run here ('wasm' and 'cpu' are the CPU backend); 'webnn' and 'webgl' are skipped. */
export type ExecutionProvider = 'webgpu' | 'wasm' | 'cpu' | 'webnn' | 'webgl' | 'xnnpack';

/** `InferenceSession.create`'s options: onnxruntime-web's, plus `device`. */
export interface InferenceSessionOptions {
  /** Tried in order; the first that opens runs the model. None given: unicompute picks ('auto'). */
  executionProviders?: readonly (ExecutionProvider | { name: ExecutionProvider })[];
  /** 'cpu' (HostTensors, by default) or 'device' (unicompute Tensors, left on the device). */
  preferredOutputLocation?: 'cpu' | 'device';
  /** A unicompute Device to run on, instead of `executionProviders`. */
  device?: Device;
  /** Not supported in JS yet (a non-empty list is refused). */
  externalData?: readonly unknown[];
  /**
   * Extents fixed at load for named dimensions (`{ batch: 1 }`), whole numbers: the metadata
   * shows them and feeds are held to them; names the model lacks are ignored.
   */
  freeDimensionOverrides?: Readonly<Record<string, number>>;
  /** Hold the large f32 weights in f16 on the device: half their memory and upload. */
  f16Weights?: boolean;
  /** onnxruntime-web's tuning, threading and logging options: taken, and change nothing. */
  intraOpNumThreads?: number;
  interOpNumThreads?: number;
  graphOptimizationLevel?: 'disabled' | 'basic' | 'extended' | 'all';
  enableCpuMemArena?: boolean;
  enableMemPattern?: boolean;
  executionMode?: 'sequential' | 'parallel';
  optimizedModelFilePath?: string;
  enableProfiling?: boolean;
  profileFilePrefix?: string;
  logId?: string;
  logSeverityLevel?: 0 | 1 | 2 | 3 | 4;
  logVerbosityLevel?: number;
  enableGraphCapture?: boolean;
  extra?: Record<string, unknown>;
}

/** A feed: a HostTensor, anything shaped like onnxruntime-web's Tensor, or a unicompute Tensor. */
export type Feed = HostTensor | { readonly type: string; readonly data: unknown; readonly dims: readonly number[] } | Tensor;
/** What a model is loaded from: a URL or path (fetched; read from disk in Node), or its bytes. */
export type ModelSource = string | URL | Uint8Array | ArrayBuffer | ArrayBufferView;

/** A model loaded on a device, as onnxruntime-web's `InferenceSession`; `Out` is what runs give. */
export declare class InferenceSession<Out = HostTensor> {
  private constructor();
  /** Load a model whose outputs stay on the device as unicompute Tensors. */
  static create(model: ModelSource, options: InferenceSessionOptions & { preferredOutputLocation: 'device' }): Promise<InferenceSession<Tensor>>;
  /** Load a model (every operator is checked now; a `MODEL` error names what cannot run). */
  static create(model: ModelSource, options?: InferenceSessionOptions): Promise<InferenceSession<HostTensor>>;
  /** Load a model from part of a buffer. */
  static create(buffer: ArrayBufferLike, byteOffset: number, byteLength?: number, options?: InferenceSessionOptions): Promise<InferenceSession<HostTensor>>;
  /** The device that runs the model. */
  readonly device: Device;
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly inputMetadata: readonly ValueMetadata[];
  readonly outputMetadata: readonly ValueMetadata[];
  /**
   * Run on `feeds` (every input by name); the outputs by name, or the ones `fetches` names.
   * onnxruntime-web's run options are taken and change nothing.
   */
  run(feeds: Record<string, Feed>, fetches?: readonly string[] | Record<string, unknown>, options?: Record<string, unknown>): Promise<Record<string, Out>>;
  /**
   * Where a run's memory goes, in bytes, planned from the first run (undefined before it):
   * the weights, the intermediates placed by liveness in arenas (`peak`), beside the most
   * live at once and their sum without reuse.
   */
  memoryPlan(): MemoryPlan | undefined;
  /** Free the model's weights; later runs are errors. */
  release(): Promise<void>;
}
