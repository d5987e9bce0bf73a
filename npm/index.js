// unicompute for JavaScript, on one thread: `init()` loads the wasm once (in browsers and
// workers by URL, in Node from the file), then opens a device. `unicompute/threads`
// (threads.js) is the same API with the CPU backend on Web Workers.
import * as wasm from './pkg/unicompute.js';
import { bind } from './api.js';
import { sessionClass } from './session.js';

export { Buffer, Device, Fence, Graph, Kernel, Profile, Queue, Tensor } from './pkg/unicompute.js';
export { UnicomputeError } from './api.js';
export { HostTensor } from './session.js';

const oneThread = 'the `unicompute` entry is the one-thread build (import `unicompute/threads` in a cross-origin-isolated page for more)';
export const { init, listDevices } = bind(wasm, new URL('./pkg/unicompute_bg.wasm', import.meta.url), oneThread);
/** ONNX models, as onnxruntime-web's `InferenceSession` (npm/session.js). */
export const InferenceSession = sessionClass(wasm, init);
