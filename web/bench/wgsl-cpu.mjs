// The CPU backend's WGSL executor inside the wasm (Node, one thread), beside the same
// backend's own ops: the elementwise add and the tiled 8x8 matmul of `benches/wgsl_cpu.rs`
// (the native twin of this script), each the median of 9 timed runs after 2 warm-ups.
// Usage, after `scripts/build-npm.sh`:  node web/bench/wgsl-cpu.mjs [add|matmul]
import { readFile } from 'node:fs/promises';
import { init } from '../../npm/index.js';

const ADD = await readFile(new URL('../../benches/wgsl/add.wgsl', import.meta.url), 'utf8');
const MATMUL = await readFile(new URL('../../tests/wgsl/tiled_matmul.wgsl', import.meta.url), 'utf8');

/** Median milliseconds of `f` over 9 runs after 2 warm-ups. */
async function median(f) {
  for (let i = 0; i < 2; i++) await f();
  const times = [];
  for (let i = 0; i < 9; i++) {
    const t0 = performance.now();
    await f();
    times.push(performance.now() - t0);
  }
  return times.sort((x, y) => x - y)[4];
}

const device = await init({ backend: 'cpu' });
const only = process.argv[2];
console.log(`${device.name} (wasm, one thread)`);

if (!only || only === 'add') {
  const n = 1 << 22;
  const data = Float32Array.from({ length: n }, (_, i) => (i % 1000) * 1e-3);
  const [ta, tb] = [device.tensor(data, [n]), device.tensor(data, [n])];
  const builtin = await median(async () => {
    const c = ta.add(tb);
    await c.read();
    c.free();
  });
  const [ba, bb, bc] = [device.buffer(data), device.buffer(data), device.buffer(new Float32Array(n))];
  const k = device.kernel(ADD, 'main');
  const wgsl = await median(async () => {
    device.queue().launch(k, [ba, bb, bc], [n / 256, 1, 1]);
    await bc.read();
  });
  const gbs = (ms) => (12 * n / ms / 1e6).toFixed(2);
  console.log(`add of ${n}: built-in ${builtin.toFixed(2)} ms (${gbs(builtin)} GB/s), WGSL ${wgsl.toFixed(2)} ms (${gbs(wgsl)} GB/s): ${(100 * builtin / wgsl).toFixed(1)} % of the built-in`);
}

if (!only || only === 'matmul') {
  const m = 256;
  const data = Float32Array.from({ length: m * m }, (_, i) => (i % 17) * 0.1);
  const [x, y] = [device.tensor(data, [m, m]), device.tensor(data, [m, m])];
  const builtin = await median(async () => {
    const z = x.matmul(y);
    await z.read();
    z.free();
  });
  const [ba, bc] = [device.buffer(data), device.buffer(new Float32Array(m * m))];
  const dims = device.buffer(new Uint32Array([m, m, m, 0]));
  const k = device.kernel(MATMUL, 'main');
  const wgsl = await median(async () => {
    device.queue().launch(k, [ba, ba, bc, dims], [m / 8, m / 8, 1]);
    await bc.read();
  });
  const gflops = (ms) => (2 * m ** 3 / ms / 1e6).toFixed(3);
  console.log(`matmul ${m}^3: built-in ${builtin.toFixed(2)} ms (${gflops(builtin)} GFLOP/s), WGSL 8x8 tiles ${wgsl.toFixed(2)} ms (${gflops(wgsl)} GFLOP/s): ${(100 * builtin / wgsl).toFixed(2)} % of the built-in`);
}
