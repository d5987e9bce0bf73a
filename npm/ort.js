// onnxruntime-web's API over unicompute: code written for `onnxruntime-web` runs after
// changing `import * as ort from 'onnxruntime-web'` to `import * as ort from 'unicompute/ort'`.
// `Tensor` here is the host tensor (type, data, dims), as there; unicompute's own device
// `Tensor` comes from the main entry. `env` takes onnxruntime-web's settings and changes
// nothing (unicompute picks threads and loads its wasm itself).
export { HostTensor as Tensor, InferenceSession, UnicomputeError } from './index.js';

/** onnxruntime-web's global settings, taken so that code setting them runs; none applies here. */
export const env = { wasm: {}, webgpu: {}, webgl: {}, logLevel: 'warning', debug: false, versions: {} };
