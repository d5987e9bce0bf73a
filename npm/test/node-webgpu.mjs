// The packed npm package on WebGPU in Node: the `webgpu` package (Dawn) provides
// navigator.gpu (run with Chromium's SwiftShader ICD, VK_ICD_FILENAMES=.../
// vk_swiftshader_icd.json). wgpu looks for navigator.gpu on a Window, so a stand-in Window
// global is installed too. Run by scripts/test-npm.sh.
import assert from 'node:assert/strict';
// ANCHOR: setup (included by docs/src/js/interop.md)
import { create, globals } from 'webgpu';

Object.assign(globalThis, globals);
globalThis.navigator = { gpu: create([]) };
globalThis.Window ??= class Window {};

const { init } = await import('unicompute');
// ANCHOR_END: setup
// SwiftShader is a fallback adapter: 'auto' times it against the CPU backend and says why.
const auto = await init();
assert.match(auto.selectionReason, /no hardware GPU.*webgpu.*cpu|no hardware GPU.*cpu.*webgpu/, auto.selectionReason);
console.log(`auto: ${auto.backend}: ${auto.selectionReason}`);
const device = await init('webgpu');
assert.equal(device.backend, 'webgpu');
const n = 67;
const data = Float32Array.from({ length: n * n }, (_, i) => ((i * 37) % 101) / 50 - 1);
const a = device.tensor(data, [n, n]);
const got = await a.matmul(a).read();
for (const [r, c] of [[0, 0], [3, 65], [66, 66]]) {
  let want = 0;
  for (let k = 0; k < n; k++) want += data[r * n + k] * data[k * n + c];
  assert.ok(Math.abs(got[r * n + c] - want) < 1e-4 * (1 + Math.abs(want)), `matmul[${r}, ${c}] = ${got[r * n + c]}, expected ${want}`);
}
const sum = (await a.reduce('sum').read())[0];
assert.ok(Math.abs(sum - data.reduce((s, v) => s + v, 0)) < 1e-3, `sum ${sum}`);
// A user WGSL kernel launched from JS on the buffers it reflects.
const kernel = device.kernel(`
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64) fn double(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x < arrayLength(&x)) { y[id.x] = 2.0 * x[id.x]; }
}`, 'double');
const xs = Float32Array.from({ length: 100 }, (_, i) => i - 50);
const [xb, yb] = [device.buffer(xs), device.buffer(new Float32Array(100))];
const queue = device.queue();
queue.launch(kernel, [xb, yb], [2, 1, 1]);
await queue.submit().wait();
assert.deepEqual(Array.from(await yb.read()), Array.from(xs, (v) => 2 * v));
const wrongCount = (() => { try { queue.launch(kernel, [xb], [1, 1, 1]); } catch (e) { return e.code; } })();
assert.equal(wrongCount, 'LAUNCH');
// Capture and replay: a chain recorded once over a buffer's tensor, replayed on new data.
{
  const inputs = device.buffer(new Float32Array(n));
  const x = inputs.tensor([n]);
  let y;
  const graph = queue.capture(() => { y = x.relu().mul(x).add(x); });
  assert.equal(graph.launches, 3);
  for (const round of [1, 2]) {
    const data = Float32Array.from({ length: n }, (_, i) => (((i + round * 7) * 29) % 61) / 10 - 3);
    inputs.write(data);
    graph.replay();
    const got = await y.read();
    for (let i = 0; i < n; i++) {
      const want = Math.fround(Math.fround(Math.max(data[i], 0) * data[i]) + data[i]);
      assert.equal(got[i], want, `replay ${round}: element ${i}`);
    }
  }
  const thrown = new Error('from the capture');
  assert.throws(() => queue.capture(() => { x.relu(); throw thrown; }), (e) => e === thrown);
  assert.throws(() => queue.capture(() => { queue.submit(); }), (e) => e.code === 'INVALID' && /captures work/.test(e.message));
  assert.throws(() => queue.capture(async () => { x.relu(); }), (e) => e.code === 'INVALID' && /returned a promise/.test(e.message));
  // The queue records as usual after those.
  assert.deepEqual(Array.from(await x.add(x).read()), Array.from(await inputs.read(), (v) => 2 * v));
  graph.dispose();
}
// i64 without shader-int64 (WebGPU in JS never has it): the data moves as words; arithmetic,
// reductions and cumsum reject with UNSUPPORTED naming the feature.
assert.equal(device.info().features.int64, false);
const MIN = -(2n ** 63n);
const longs = device.tensor(new BigInt64Array([1n, MIN, 2n ** 62n + 3n]), [3]);
assert.deepEqual(Array.from(await longs.read()), [1n, MIN, 2n ** 62n + 3n]);
assert.deepEqual(Array.from(await longs.concat(longs.slice(0, 1, 3), 0).read()), [1n, MIN, 2n ** 62n + 3n, MIN, 2n ** 62n + 3n]);
assert.deepEqual(Array.from(await longs.gather(0, device.tensor(new Int32Array([2, 0, 5]), [3]), { mode: 'fill' }).read()), [2n ** 62n + 3n, 1n, 0n]);
assert.deepEqual(Array.from(await device.tensor(new Uint32Array([0, 1, 0]), [3]).select(longs, longs.gather(0, device.tensor(new Int32Array([2, 2, 2]), [3]))).read()), [2n ** 62n + 3n, MIN, 2n ** 62n + 3n]);
assert.deepEqual(Array.from(await longs.gather(0, device.tensor(new BigInt64Array([2n, 2n ** 32n, -1n, 1n]), [4]), { mode: 'fill' }).read()), [2n ** 62n + 3n, 0n, 2n ** 62n + 3n, MIN], 'i64 indices');
// An index outside the axis in the default mode: the read rejects, naming its position.
await assert.rejects(longs.gather(0, device.tensor(new Int32Array([0, -4]), [2])).read(), (e) => e.code === 'INVALID' && /\[1\]/.test(e.message));
for (const op of [() => longs.add(longs), () => longs.sum(), () => longs.cumsum(0)]) {
  assert.throws(op, (e) => e.code === 'UNSUPPORTED' && /shader-int64/.test(e.message), String(op));
}
// Casts, comparisons, minimum and maximum run there as pairs of 32-bit words.
assert.deepEqual(Array.from(await longs.cast('f32').read()), [1, -(2 ** 63), 2 ** 62]);
assert.deepEqual(Array.from(await device.tensor(new Int32Array([-5, 7, 0]), [3]).cast('i64').read()), [-5n, 7n, 0n]);
const others = device.tensor(new BigInt64Array([2n, 0n, 5n]), [3]);
assert.deepEqual(Array.from(await longs.maximum(others).read()), [2n, 0n, 2n ** 62n + 3n]);
assert.deepEqual(Array.from(await longs.less(others).cast('i32').read()), [1, 1, 0]);
// Opened on the program's own GPUDevice, computing on its buffer without a copy.
const gpu = await (await navigator.gpu.requestAdapter()).requestDevice();
const adopted = await init({ gpuDevice: gpu });
assert.equal(adopted.gpuDevice, gpu);
const theirs = gpu.createBuffer({ size: 400, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
gpu.queue.writeBuffer(theirs, 0, xs);
const alias = adopted.tensorFromGPUBuffer(theirs, [100]);
assert.deepEqual(Array.from(await alias.neg().read()), Array.from(xs, (v) => -v));
gpu.queue.writeBuffer(theirs, 0, new Float32Array(100).fill(0.5));
assert.equal((await alias.sum().read())[0], 50, 'the tensor aliases the buffer: a rewrite shows');
// The library destroys the GPU buffers it lets go of (upload and read-back buffers, blocks
// its pool evicts) instead of leaving them to the garbage collector, and never the page's own.
const [deviceProto, bufferProto] = [Object.getPrototypeOf(gpu), Object.getPrototypeOf(theirs)];
const { createBuffer } = deviceProto;
const { destroy } = bufferProto;
const live = new Map();
deviceProto.createBuffer = function (descriptor) {
  const buffer = createBuffer.call(this, descriptor);
  live.set(buffer, descriptor.size);
  return buffer;
};
bufferProto.destroy = function () {
  live.delete(this);
  return destroy.call(this);
};
const big = new Float32Array(1 << 18); // 1 MiB
for (let i = 0; i < 20; i++) {
  const x = device.tensor(big.fill(i - 7), [big.length]);
  const y = x.add(x);
  const z = y.neg();
  const got = await z.read();
  assert.equal(got[big.length - 1], -2 * (i - 7));
  for (const t of [x, y, z]) t.dispose();
}
const liveBytes = [...live.values()].reduce((s, v) => s + v, 0);
assert.ok(liveBytes <= 6 << 20, `${liveBytes} bytes of the GPU buffers made in 20 runs of 1 MiB are not destroyed`);
Object.assign(deviceProto, { createBuffer });
Object.assign(bufferProto, { destroy });
alias.dispose();
gpu.pushErrorScope('validation');
gpu.queue.writeBuffer(theirs, 0, xs);
assert.equal(await gpu.popErrorScope(), null, "the page's buffer outlives the tensor that wrapped it");
console.log(`node + webgpu: ok (${device.name}; adopted the program's GPUDevice)`);
process.exit(0);
