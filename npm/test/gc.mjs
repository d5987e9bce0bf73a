// Tensors left to the garbage collector are freed: 1,000 loop iterations each make two 1 MB
// tensors and dispose of neither, with `gc()` every 20 iterations (run with
// `node --expose-gc`); the live bytes and the live-tensor count stay bounded by what 20
// iterations make, and `trim()` gives the cached blocks back. Run by scripts/test-npm.sh.
import assert from 'node:assert/strict';
import { init } from 'unicompute';

assert.equal(typeof globalThis.gc, 'function', 'run with node --expose-gc');
const device = await init({ backend: 'cpu' });
const MB = 1 << 20;
const every = 20;
let peak = { bytesLive: 0, numTensors: 0 };
/**
 * Collect, and wait for the finalizers (each registry's run as tasks of their own after the
 * collection) until at most the last iteration's two tensors are live: a second at most.
 */
async function collect() {
  globalThis.gc();
  const settled = ({ bytesLive, numTensors }) => bytesLive <= 2 * MB && numTensors <= 2;
  for (let waits = 0; !settled(device.memory()) && waits < 100; waits++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
/** The loop, in a function of its own so that nothing of it stays referenced after. */
async function leave() {
  for (let i = 0; i < 1000; i++) {
    const t = device.tensor(new Float32Array(MB / 4).fill(i), [MB / 4]);
    t.exp(); // neither t nor its result is disposed
    if (i % every === every - 1) await collect();
    const m = device.memory();
    peak = { bytesLive: Math.max(peak.bytesLive, m.bytesLive), numTensors: Math.max(peak.numTensors, m.numTensors) };
  }
}
await leave();
// What one batch of iterations makes, and the last one's two tensors before it.
const bound = 2 * (every + 1) * MB;
assert.ok(peak.bytesLive <= bound, `at most ${bound} bytes live at once: ${peak.bytesLive}`);
assert.ok(peak.numTensors <= 2 * (every + 1), `at most ${2 * (every + 1)} tensors live: ${peak.numTensors}`);
await collect();
await new Promise((resolve) => setTimeout(resolve, 10));
const after = device.memory();
assert.deepEqual([after.bytesLive, after.numTensors], [0, 0], 'everything collected');
assert.ok(after.bytesCached <= bound, `the pool keeps what it reuses: ${after.bytesCached} bytes`);
device.trim();
assert.equal(device.memory().bytesCached, 0, 'trim gives the cached blocks back');
console.log(`gc: 1,000 iterations of 2 MB left to the garbage collector; at most ${peak.bytesLive / MB} MB and ${peak.numTensors} tensors live at once; all freed, then trimmed`);
