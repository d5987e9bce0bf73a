// Where the time of a chain of small ops goes on WebGPU outside a browser: Node with Dawn (the
// `webgpu` package), 200 adds of 1,024 elements recorded op by op and the same chain captured
// once and replayed (`queue.capture`, `graph.replay`), each split into the recording and the
// read that submits it, runs the kernels and maps the result (medians of 20 runs).
// Usage, after `scripts/build-npm.sh` and `npm install` in web/bench/, on Chromium's
// SwiftShader ICD (or a GPU's Vulkan driver):
//   VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json node web/bench/chain-node.mjs
import { create, globals } from 'webgpu';

Object.assign(globalThis, globals);
globalThis.navigator = { gpu: create([]) };
globalThis.Window ??= class Window {}; // wgpu looks for navigator.gpu on a Window
const { init } = await import('../../npm/index.js');

const [n, len, runs] = [1024, 200, 20];
const device = await init('webgpu');
const inputs = device.buffer(new Float32Array(n).fill(1));
const a = inputs.tensor([n]);
const b = device.tensor(new Float32Array(n).fill(0.5), [n]);
await a.read();
const median = (xs) => [...xs].sort((x, y) => x - y)[xs.length >> 1];

/** Median ms of `record()` and of the read of what it returns, with `after()` once per run. */
async function measure(record, after = () => {}) {
  const rec = [], read = [];
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    const out = record();
    const t1 = performance.now();
    const got = await out.read();
    read.push(performance.now() - t1);
    rec.push(t1 - t0);
    if (got[0] !== 1 + 0.5 * len) throw new Error(`chain gave ${got[0]}, expected ${1 + 0.5 * len}`);
    after();
  }
  return [median(rec), median(read)];
}

let made = [];
const eager = await measure(
  () => {
    let t = a;
    for (let i = 0; i < len; i++) made.push((t = t.add(b)));
    return t;
  },
  () => {
    made.forEach((t) => t.free());
    made = [];
  },
);
let y;
const graph = device.queue().capture(() => {
  let t = a;
  for (let i = 0; i < len; i++) t = t.add(b);
  y = t;
});
const replayed = await measure(() => (graph.replay(), y));
console.log(`${len} adds of [${n}] on ${device.name || 'webgpu'}:`);
console.log(`  op by op:  record ${eager[0].toFixed(2)} ms (${((eager[0] / len) * 1e3).toFixed(2)} us/op), read ${eager[1].toFixed(2)} ms`);
console.log(`  replayed:  record ${replayed[0].toFixed(3)} ms, read ${replayed[1].toFixed(2)} ms`);
