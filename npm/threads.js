// unicompute with the CPU backend's kernels on several threads: Web Workers sharing the wasm
// memory (a build with wasm threads, npm/pkg-threads/). That needs SharedArrayBuffer, so a
// cross-origin-isolated page or worker (COOP + COEP headers); elsewhere (and in Node) this
// entry loads the one-thread build, and `init({ threads })` above 1 warns on the console that
// it runs one. `init({ backend, threads })` sets the thread count the first time;
// `device.info().threads` says how many run.
import { bind } from './api.js';
import { sessionClass } from './session.js';

export { UnicomputeError } from './api.js';
export { HostTensor } from './session.js';

const threaded = globalThis.crossOriginIsolated === true;
const wasm = threaded ? await import('./pkg-threads/unicompute.js') : await import('./pkg/unicompute.js');
const url = threaded ? new URL('./pkg-threads/unicompute_bg.wasm', import.meta.url) : new URL('./pkg/unicompute_bg.wasm', import.meta.url);

export const { Buffer, Device, Fence, Graph, Kernel, Profile, Queue, Tensor } = wasm;
const pool = { glue: new URL('./pkg-threads/unicompute.js', import.meta.url).href, worker: new URL('./worker.js', import.meta.url) };
const notIsolated = 'this context is not cross-origin isolated (no COOP and COEP headers; Node never is), so `unicompute/threads` loaded the one-thread build';
export const { init, listDevices } = bind(wasm, url, threaded ? pool : notIsolated);
/** ONNX models, as onnxruntime-web's `InferenceSession` (npm/session.js). */
export const InferenceSession = sessionClass(wasm, init);
