// `unicompute/ort`: onnxruntime-web's API over unicompute (see ort.js).
export { HostTensor as Tensor, InferenceSession, UnicomputeError } from './index.js';
export type { ExecutionProvider, Feed, HostType, InferenceSessionOptions, ModelSource } from './index.js';

/** onnxruntime-web's global settings, taken so that code setting them runs; none applies here. */
export declare const env: {
  wasm: Record<string, unknown>;
  webgpu: Record<string, unknown>;
  webgl: Record<string, unknown>;
  logLevel: string;
  debug: boolean;
  versions: Record<string, string>;
};
