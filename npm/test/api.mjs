// The JS API beyond the Rust one's shape: every unary and binary op as a method, reductions
// with `{ axis, keepDims }`, f16 in and out through Uint16Array (and Float16Array where the
// runtime has it), `dispose()`, `Symbol.dispose` (what `using` calls), and `device.scope(fn)`. Checked against values
// computed here, on the CPU backend. Run by scripts/test-npm.sh.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { inspect } from 'node:util';
import { init, Device, Queue, Tensor, UnicomputeError } from 'unicompute';

// The wasm as a compiled module (another way for bundlers to hand it over).
const module = await WebAssembly.compile(await readFile(new URL(import.meta.resolve('unicompute/unicompute_bg.wasm'))));
const device = await init({ backend: 'cpu', wasm: module });
const close = (got, want, what, tol = 1e-6) => want.forEach((w, i) => assert.ok(Math.abs(got[i] - w) <= tol * (1 + Math.abs(w)), `${what}: element ${i} is ${got[i]}, expected ${w}`));
const xs = [0.25, 0.5, 1.5, 2];
const x = device.tensor(new Float32Array(xs), [2, 2]);

// Every unary op as a method.
const unary = { neg: (v) => -v, abs: Math.abs, exp: Math.exp, log: Math.log, sqrt: Math.sqrt, rsqrt: (v) => 1 / Math.sqrt(v), sin: Math.sin, cos: Math.cos, tanh: Math.tanh, sigmoid: (v) => 1 / (1 + Math.exp(-v)), silu: (v) => v / (1 + Math.exp(-v)), relu: (v) => Math.max(v, 0), softplus: (v) => Math.max(v, 0) + Math.log1p(Math.exp(-Math.abs(v))), hardswish: (v) => (v <= -3 ? 0 : v >= 3 ? v : (v * (v + 3)) / 6), relu6: (v) => Math.min(Math.max(v, 0), 6), floor: Math.floor, ceil: Math.ceil, sign: Math.sign };
for (const [name, f] of Object.entries(unary)) close(await x[name]().read(), xs.map(f), name, 2e-6);
close(await x.gelu().read(), [0.1497, 0.3457, 1.3998, 1.9545], 'gelu', 1e-4);
close(await x.geluTanh().read(), [0.1497, 0.3457, 1.3996, 1.9546], 'geluTanh', 1e-4);
close(await x.erf().read(), [0.2763264, 0.5204999, 0.9661051, 0.9953223], 'erf', 1e-6);
// Binary ops by name as methods, with a fused activation.
const y = device.tensor(new Float32Array([1, 0.25]), [2]);
close(await x.minimum(y).read(), [0.25, 0.25, 1, 0.25], 'minimum');
close(await x.maximum(y).read(), [1, 0.5, 1.5, 2], 'maximum');
close(await x.pow(y, { activation: 'neg' }).read(), [-0.25, -(0.5 ** 0.25), -1.5, -(2 ** 0.25)], 'pow');

// Reductions with { axis, keepDims }: all axes, one, several; the shapes as numpy gives them.
const cube = device.tensor(Float32Array.from({ length: 24 }, (_, i) => i - 7), [2, 3, 4]);
const at = (i, j, k) => i * 12 + j * 4 + k - 7;
const shapeOf = (t) => Array.from(t.shape);
assert.deepEqual(Array.from(await cube.sum().read()), [Array.from({ length: 24 }, (_, i) => i - 7).reduce((s, v) => s + v)]);
assert.deepEqual(shapeOf(cube.sum({ keepDims: true })), [1, 1, 1]);
const max1 = cube.max({ axis: 1 });
assert.deepEqual(shapeOf(max1), [2, 4]);
assert.deepEqual(Array.from(await max1.read()), [0, 1].flatMap((i) => [0, 1, 2, 3].map((k) => at(i, 2, k))));
const mean02 = cube.mean({ axis: [0, 2], keepDims: true });
assert.deepEqual(shapeOf(mean02), [1, 3, 1]);
close(await mean02.read(), [0, 1, 2].map((j) => [0, 1].flatMap((i) => [0, 1, 2, 3].map((k) => at(i, j, k))).reduce((s, v) => s + v) / 8), 'mean over [0, 2]');
assert.deepEqual(Array.from(await cube.min({ axis: 2, keepDims: true }).read()), [0, 1].flatMap((i) => [0, 1, 2].map((j) => at(i, j, 0))));
assert.deepEqual(Array.from(await cube.argmax({ axis: 0 }).read()), new Array(12).fill(1));
assert.throws(() => cube.sum({ axis: 3 }), (e) => e.code === 'OUT_OF_RANGE');
// argmin and the last of equal elements; argmax over every axis flattens, as numpy does.
const ties = device.tensor(new Float32Array([3, 1, 1, 3, 2, 3]), [2, 3]);
assert.deepEqual(Array.from(await ties.argmin({ axis: 1 }).read()), [1, 1]);
assert.deepEqual(Array.from(await ties.argmin({ axis: 1, last: true }).read()), [2, 1]);
const lastMax = ties.argmax({ axis: 1, last: true, keepDims: true });
assert.deepEqual([Array.from(lastMax.shape), Array.from(await lastMax.read())], [[2, 1], [0, 2]]);
assert.deepEqual(Array.from(await ties.argmax({ last: true }).read()), [5]);
assert.throws(() => ties.argmax({ axis: [0, 1] }), (e) => e.code === 'INVALID');
// Layer norm's statistics (ONNX's Mean and InvStdDev outputs).
const [mean, invStd] = device.tensor(new Float32Array([1, 2, 3, 4, 10, 10, 10, 14]), [2, 4]).layerNormStats({ eps: 1e-5 });
assert.deepEqual(Array.from(mean.shape), [2, 1]);
close(await mean.read(), [2.5, 11], 'mean');
close(await invStd.read(), [1 / Math.sqrt(1.25 + 1e-5), 1 / Math.sqrt(3 + 1e-5)], 'inverse std', 1e-5);
// The max of nothing: an error as numpy has it, -inf as ONNX has it.
const nothing = device.zeros([2, 0]);
assert.throws(() => nothing.max({ axis: 1 }), (e) => e.code === 'SHAPE');
assert.deepEqual(Array.from(await nothing.max({ axis: 1, emptyIdentity: true }).read()), [-Infinity, -Infinity]);
assert.deepEqual(Array.from(await nothing.min({ emptyIdentity: true, keepDims: true }).read()), [Infinity]);
// cumsum as ONNX's CumSum.
const line = device.tensor(new Float32Array([1, 2, 3, 4]), [4]);
assert.deepEqual(Array.from(await line.cumsum(0, { exclusive: true }).read()), [0, 1, 3, 6]);
assert.deepEqual(Array.from(await line.cumsum(0, { reverse: true }).read()), [10, 9, 7, 4]);
assert.deepEqual(Array.from(await line.cumsum(0, { exclusive: true, reverse: true }).read()), [9, 7, 4, 0]);
assert.throws(() => line.cumsum(0, { backwards: true }), (e) => e.code === 'INVALID' && /backwards/.test(e.message));
assert.throws(() => cube.sum(2), (e) => e.code === 'INVALID' && /axis, keepDims/.test(e.message));
assert.throws(() => cube.sum({ keepDims: 'yes' }), (e) => e.code === 'INVALID' && /keepDims/.test(e.message));
// Misspelt keys and axes that are not numbers are refused, not ignored.
for (const [call, key] of [
  [() => cube.sum({ axis: 1, keepdims: true }), 'keepdims'],
  [() => cube.max({ dim: 0 }), 'dim'],
  [() => cube.sum({ axes: 1 }), 'axes'],
  [() => cube.mean({ axis: 0, keep_dims: true }), 'keep_dims'],
  [() => cube.argmax({ axis: 0, keepdims: true }), 'keepdims'],
  [() => cube.argmin({ dim: 1 }), 'dim'],
]) {
  assert.throws(call, (e) => e.code === 'INVALID' && e.message.includes(`\`${key}\``) && /expected one of axis, keepDims/.test(e.message));
}
// Negative axes count from the end, as in numpy, TF.js and ONNX.
const same = async (a, b, what) => assert.deepEqual([Array.from(a.shape), Array.from(await a.read())], [Array.from(b.shape), Array.from(await b.read())], what);
await same(cube.sum({ axis: -1 }), cube.sum({ axis: 2 }), 'sum over -1');
await same(cube.mean({ axis: [-1, 0], keepDims: true }), cube.mean({ axis: [2, 0], keepDims: true }), 'mean over [-1, 0]');
await same(cube.argmax({ axis: -2, keepDims: true }), cube.argmax({ axis: 1, keepDims: true }), 'argmax over -2');
await same(cube.softmax(-1), cube.softmax(2), 'softmax over -1');
await same(cube.cumsum(-3), cube.cumsum(0), 'cumsum over -3');
await same(cube.concat(cube, -1), cube.concat(cube, 2), 'concat along -1');
await same(cube.slice(-1, 1, 3), cube.slice(2, 1, 3), 'slice of -1');
await same(cube.gather(-2, device.tensor(new Int32Array([2, -3]), [2])), cube.gather(1, device.tensor(new Int32Array([2, 0]), [2])), 'gather along -2');
assert.throws(() => cube.sum({ axis: -4 }), (e) => e.code === 'OUT_OF_RANGE' && /\[-3, 3\)/.test(e.message));
assert.throws(() => cube.sum({ axis: '1' }), (e) => e.code === 'INVALID' && /axis is string/.test(e.message));
assert.throws(() => cube.min({ axis: [0, '2'] }), (e) => e.code === 'INVALID' && /axis is \[0, string\]/.test(e.message));
assert.throws(() => cube.argmax({ axis: 1.5 }), (e) => e.code === 'INVALID' && /axis is 1.5: expected a whole number/.test(e.message));

// f16 in and out: Uint16Array bits (with the dtype), read back as bits or widened.
const bits = new Uint16Array([0x3c00, 0xc000, 0x3555, 0x7bff]); // 1, -2, 0.33325195, 65504
const h = device.tensor(bits, [4], 'f16');
assert.equal(h.dtype, 'f16');
assert.deepEqual(Array.from(await h.read16()), Array.from(bits));
close(await h.read(), [1, -2, 0.33325195, 65504], 'f16 widened');
const doubled = await h.add(h).read16(); // 65504 * 2 overflows f16 to +inf (0x7c00)
assert.deepEqual(Array.from(doubled), [0x4000, 0xc400, 0x3955, 0x7c00]);
const b16 = device.tensor(new Uint16Array([0x3f80, 0x4049]), [2], 'bf16'); // 1, 3.140625
close(await b16.read(), [1, 3.140625], 'bf16 widened');
assert.deepEqual(Array.from(await device.tensor(new Float32Array([1, 3.14159]), [2], 'bf16').read16()), [0x3f80, 0x4049]);
assert.throws(() => device.tensor(new Uint16Array(2), [2]), (e) => e.code === 'INVALID' && /f16' or 'bf16/.test(e.message));
await assert.rejects(x.read16(), (e) => e.code === 'DTYPE');
if (typeof globalThis.Float16Array === 'function') {
  const f = await device.tensor(new globalThis.Float16Array([0.5, -4]), [2]).readFloat16();
  assert.deepEqual(Array.from(f), [0.5, -4]);
} else {
  await assert.rejects(h.readFloat16(), (e) => e.code === 'UNSUPPORTED' && /read16/.test(e.message));
}

// Ownership: dispose() (twice is fine), `using`, and scopes that free what they do not return.
const before = device.memoryStats().bytesLive;
const kept = device.scope(() => {
  const a = device.tensor(new Float32Array(1024).fill(1), [1024]);
  const b = a.exp().add(a).relu();
  return { result: b.sum(), also: [a.mul(a)] };
});
close(await kept.result.read(), [1024 * (Math.E + 1)], 'scope result', 1e-5);
close(await kept.also[0].read(), [1], 'scope result in an array', 0);
assert.throws(() => device.scope(() => { throw Object.assign(new Error('inside'), { code: 'MINE' }); }), (e) => e.code === 'MINE');
assert.throws(() => device.scope(async () => device.tensor(new Float32Array(4), [4])), (e) => e.code === 'INVALID' && /synchronous/.test(e.message));
const nested = device.scope(() => device.scope(() => x.exp()).neg());
close(await nested.read(), xs.map((v) => -Math.exp(v)), 'nested scopes', 2e-6);
for (const t of [kept.result, kept.also[0], nested]) t.dispose();
// Every maker's tensors (zeros, buffer.tensor) are freed by the scope of their own device;
// another device's tensors made inside it are not.
const other = await init({ backend: 'cpu' });
const shared = device.buffer(new Float32Array(16));
let made;
device.scope(() => {
  made = { zeros: device.zeros([4]), view: shared.tensor([4, 4]), mine: x.exp(), theirs: other.zeros([4]) };
});
for (const key of ['zeros', 'view', 'mine']) assert.equal(made[key].__wbg_ptr, 0, `scope frees ${key}`);
assert.deepEqual(Array.from(await made.theirs.read()), [0, 0, 0, 0], 'another device keeps its tensor');
const inner = other.scope(() => device.scope(() => other.zeros([2])));
assert.deepEqual(Array.from(await inner.read()), [0, 0], "a device's scope leaves the other device's");
for (const o of [made.theirs, inner, shared, other]) o.dispose();
await assert.rejects(init({ backend: 'cpu', policy: { backends: ['cpu'] } }), (e) => e.code === 'INVALID' && /not both/.test(e.message));
kept.result.dispose();
// What `using t = ...` does at the end of its block (Node 20 lacks the syntax).
const t = device.tensor(new Float32Array(4096), [4096]);
try {
  assert.equal(t.shape[0], 4096);
} finally {
  t[Symbol.dispose]();
}
assert.ok(device.memoryStats().bytesLive <= before, `scopes, dispose and using free what they made: ${device.memoryStats().bytesLive} bytes live, ${before} before`);
// WebGPU interop on the CPU backend: no GPUDevice, and GPU buffers are refused, saying why.
assert.equal(device.gpuDevice, undefined);
assert.throws(() => x.gpuBuffer(), (e) => e.code === 'UNSUPPORTED' && /webgpu device/.test(e.message));
assert.throws(() => device.tensorFromGPUBuffer({ size: 16 }, [4]), (e) => e.code === 'UNSUPPORTED');
await assert.rejects(init({ gpuDevice: {} }), (e) => e.code === 'INVALID' && /gpuDevice: object: expected a GPUDevice/.test(e.message));
await assert.rejects(init({ backend: 'cpu', gpuDevice: { createBuffer() {}, queue: {} } }), (e) => e.code === 'INVALID' && /leave out backend "cpu"/.test(e.message));
assert.deepEqual(Array.from(await device.zeros([3], 'i32').read()), [0, 0, 0]);
assert.deepEqual(Array.from(await x.transpose().contiguous().read()), [0.25, 1.5, 0.5, 2]);
// Views: slice and broadcastTo.
assert.deepEqual(Array.from(await cube.slice(2, 1, 3).slice(1, 2, 3).read()), [0, 1].flatMap((i) => [1, 2].map((k) => at(i, 2, k))));
const row = device.tensor(new Float32Array([1, 2, 3]), [3]).broadcastTo([2, 3]);
assert.deepEqual([Array.from(row.shape), Array.from(await row.read())], [[2, 3], [1, 2, 3, 1, 2, 3]]);
assert.throws(() => cube.slice(0, 1, 5), (e) => e.code === 'OUT_OF_RANGE' || e.code === 'SHAPE');
// Integer arithmetic and reductions with numpy's int32 / uint32 rules.
const ia = device.tensor(new Int32Array([2147483647, -7, 7, 0]), [4]);
const ib = device.tensor(new Int32Array([1, 2, 0, 5]), [4]);
assert.equal(ia.add(ib).dtype, 'i32');
assert.deepEqual(Array.from(await ia.add(ib).read()), [-2147483648, -5, 7, 5], 'add wraps');
assert.deepEqual(Array.from(await ia.div(ib).read()), [2147483647, -3, 7, 0], 'div truncates; x / 0 = x');
assert.deepEqual(Array.from(await ib.pow(ib).read()), [1, 4, 1, 3125]);
assert.deepEqual(Array.from(await ia.sum().read()), [2147483647]);
assert.deepEqual(Array.from(await ib.cumsum(0).read()), [1, 3, 3, 8]);
const mask = device.tensor(new Uint32Array([0, 1, 0, 0]), [2, 2]);
assert.deepEqual(Array.from(await mask.max({ axis: 1 }).read()), [1, 0], 'any of a u32 mask');
assert.throws(() => ia.add(x), (e) => e.code === 'DTYPE' && /one dtype/.test(e.message));
// i64 through BigInt64Array: numpy's int64 rules, exact over the whole range.
const MIN = -(2n ** 63n), MAX = 2n ** 63n - 1n;
const la = device.tensor(new BigInt64Array([MAX, MIN, -7n, 7n, 1n << 40n, MIN]), [6]);
const lb = device.tensor(new BigInt64Array([1n, -1n, 2n, 0n, 1n << 40n, -1n]), [6]);
assert.equal(la.dtype, 'i64');
assert.ok(device.info().features.int64, 'the cpu backend computes on i64');
const big = async (t) => Array.from(await t.read());
assert.ok((await la.read()) instanceof BigInt64Array);
assert.deepEqual(await big(la), [MAX, MIN, -7n, 7n, 1n << 40n, MIN], 'round trip');
assert.deepEqual(await big(la.add(lb)), [MIN, MAX, -5n, 7n, 1n << 41n, MAX], 'add wraps');
assert.deepEqual(await big(la.mul(lb)), [MAX, MIN, -14n, 0n, 0n, MIN], 'mul wraps');
assert.deepEqual(await big(la.div(lb)), [MAX, MIN, -3n, 7n, 1n, MIN], 'div truncates; x / 0 = x; MIN / -1 = MIN');
assert.deepEqual(await big(lb.pow(device.tensor(new BigInt64Array([63n, 2n, 62n, 3n, 1n, -3n]), [6]))), [1n, 1n, 2n ** 62n, 0n, 1n << 40n, -1n], 'pow');
assert.deepEqual(await big(la.minimum(lb)), [1n, MIN, -7n, 0n, 1n << 40n, MIN]);
assert.deepEqual(await big(la.sum()), [(MAX + MIN - 7n + 7n + (1n << 40n) + MIN) & (2n ** 64n - 1n)].map((v) => BigInt.asIntN(64, v)), 'sum wraps in i64');
assert.deepEqual(await big(la.max()), [MAX]);
assert.deepEqual(Array.from(await la.argmax().read()), [0]);
assert.deepEqual(Array.from(await la.argmin().read()), [1], 'argmin, the first MIN');
assert.deepEqual(await big(lb.cumsum(0)), [1n, 0n, 2n, 2n, 2n + (1n << 40n), 1n + (1n << 40n)]);
assert.deepEqual(await big(lb.cumsum(0, { exclusive: true, reverse: true })), [1n << 40n, (1n << 40n) + 1n, (1n << 40n) - 1n, (1n << 40n) - 1n, -1n, 0n]);
assert.equal(la.mean().dtype, 'f32');
assert.deepEqual(Array.from(await la.cast('i32').read()), [-1, 0, -7, 7, 0, 0], 'i64 -> i32 keeps the low word');
assert.deepEqual(Array.from(await la.cast('f32').read()), [2 ** 63, -(2 ** 63), -7, 7, 2 ** 40, -(2 ** 63)]);
assert.deepEqual(await big(device.tensor(new Float32Array([1e19, -1e19, NaN, -2.9]), [4]).cast('i64')), [MAX, MIN, 0n, -2n], 'f32 -> i64 saturates');
assert.deepEqual(await big(device.tensor(new Int32Array([-1, 5]), [2], 'i64')), [-1n, 5n], 'i32 -> i64 sign-extends');
// Data movement: transposed copies, slices, concat, where, gather (i64 indices too), flip.
const lm = device.tensor(BigInt64Array.from({ length: 6 }, (_, i) => BigInt(i) * (MAX / 5n)), [2, 3]);
const lmv = await big(lm);
assert.deepEqual(await big(lm.transpose().contiguous()), [0, 3, 1, 4, 2, 5].map((i) => lmv[i]));
assert.deepEqual(await big(lm.concat(lm.slice(1, 0, 1), 1)), [0, 1, 2, 0, 3, 4, 5, 3].map((i) => lmv[i]));
assert.deepEqual(await big(device.tensor(new Uint32Array([1, 0, 1]), [3]).select(lm, device.tensor(new BigInt64Array([-1n]), [1]))), [lmv[0], -1n, lmv[2], lmv[3], -1n, lmv[5]]);
assert.deepEqual(await big(lm.gather(1, device.tensor(new BigInt64Array([2n, 5n, -3n]), [3]), { mode: 'fill' })), [lmv[2], 0n, lmv[0], lmv[5], 0n, lmv[3]], 'gather by i64 indices');
assert.deepEqual(await big(lm.gather(1, device.tensor(new Int32Array([-1, 7]), [1, 2]), { mode: 'clip' })), [lmv[2], lmv[2], lmv[5], lmv[5]], 'gather, clipped');
await assert.rejects(lm.gather(1, device.tensor(new Int32Array([0, 3]), [2])).read(), (e) => e.code === 'INVALID' && /\[1\]/.test(e.message) && /\[-3, 3\)/.test(e.message));
assert.deepEqual(await big(lm.reduceAxes('sum', [0], true)), [lmv[0] + lmv[3], lmv[1] + lmv[4], BigInt.asIntN(64, lmv[2] + lmv[5])]);
const into = new BigInt64Array(6);
assert.equal(await lm.readInto(into), into);
assert.deepEqual(Array.from(into), lmv, 'readInto a BigInt64Array');
await assert.rejects(lm.readInto(new Int32Array(6)), (e) => e.code === 'INVALID' && /BigInt64Array of 6/.test(e.message));
assert.throws(() => la.add(ia), (e) => e.code === 'DTYPE' && /i64/.test(e.message));
assert.throws(() => device.tensor([1n, 2n], [2]), (e) => e.code === 'INVALID' && /BigInt64Array/.test(e.message));
// dtypes by the names TF.js and onnxruntime-web use, too; an unknown one lists both spellings.
assert.equal(device.tensor(new Float32Array([1.5, -2]), [2], 'float32').dtype, 'f32');
assert.deepEqual(Array.from(await device.tensor(new Float32Array([1.5, -2]), [2]).cast('int32').read()), [1, -2]);
assert.equal(device.tensor(new Float32Array([1, 2]), [2], 'float16').dtype, 'f16');
assert.equal(device.zeros([3], 'bfloat16').dtype, 'bf16');
assert.equal(device.tensor(new Float32Array([7]), [1]).cast('int64').dtype, 'i64');
assert.throws(() => device.zeros([2], 'float64'), (e) => e.code === 'INVALID' && /f32, i32/.test(e.message) && /float32/.test(e.message));
// A kernel's overrides set as WebGPU's pipeline constants: a workgroup size of 37 (a prime),
// over 3 workgroups, every invocation run; names the shader lacks and values that do not fit.
const IOTA = `override wg = 64;
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(wg)
fn main(@builtin(global_invocation_id) id: vec3u) { if (id.x < arrayLength(&out)) { out[id.x] = id.x + 1u; } }`;
const iota = device.kernel(IOTA, 'main', { constants: { wg: 37 } });
assert.deepEqual(Array.from(iota.workgroupSize), [37, 1, 1]);
assert.deepEqual(Array.from(device.kernel(IOTA, 'main').workgroupSize), [64, 1, 1]);
const counted = device.buffer(new Uint32Array(100).fill(7));
device.queue().launch(iota, [counted], [3, 1, 1]);
assert.deepEqual(Array.from(await counted.read()), Array.from({ length: 100 }, (_, i) => i + 1));
assert.throws(() => device.kernel(IOTA, 'main', { constants: { wgg: 8 } }), (e) => e.code === 'INVALID' && /`wgg`/.test(e.message) && /`wg`/.test(e.message));
assert.throws(() => device.kernel(IOTA, 'main', { constants: { wg: Infinity } }), (e) => e.code === 'INVALID' && /cannot hold/.test(e.message));
assert.throws(() => device.kernel(IOTA, 'main', { constants: { wg: '8' } }), (e) => e.code === 'INVALID' && /constants\.wg/.test(e.message));
// Every method that takes an options object refuses an unknown key, naming it and the keys it
// accepts, and a known key of the wrong type, naming the key: none is ignored.
const q4 = device.tensor(Float32Array.from({ length: 8 }, (_, i) => i / 8), [1, 1, 2, 4]);
const w1 = device.tensor(new Float32Array([2]), [1, 1, 1, 1]);
const optionsMethods = {
  add: [(o) => x.add(x, o), 'activation', { activation: 5 }],
  sub: [(o) => x.sub(x, o), 'activation', { activation: 'nope' }],
  mul: [(o) => x.mul(x, o), 'activation', { activation: true }],
  div: [(o) => x.div(x, o), 'activation', { activation: 1 }],
  binary: [(o) => x.binary('add', x, o), 'activation', { activation: [] }],
  minimum: [(o) => x.minimum(x, o), 'activation', { activation: 2 }],
  maximum: [(o) => x.maximum(x, o), 'activation', { activation: 2 }],
  pow: [(o) => x.pow(x, o), 'activation', { activation: 2 }],
  sum: [(o) => cube.sum(o), 'axis', { axis: '0' }],
  mean: [(o) => cube.mean(o), 'axis', { keepDims: 1 }],
  max: [(o) => cube.max(o), 'axis', { emptyIdentity: 'yes' }],
  min: [(o) => cube.min(o), 'axis', { axis: 0.5 }],
  argmax: [(o) => cube.argmax(o), 'axis', { last: 'yes' }],
  argmin: [(o) => cube.argmin(o), 'axis', { keepDims: 0 }],
  layerNormStats: [(o) => x.layerNormStats(o), 'axes', { eps: 'small' }],
  cumsum: [(o) => line.cumsum(0, o), 'exclusive', { reverse: 1 }],
  conv2d: [(o) => w1.conv2d(w1, o), 'stride', { stride: 'two' }],
  convTranspose2d: [(o) => w1.convTranspose2d(w1, o), 'outputPadding', { padding: [1, 2, 3] }],
  linear: [(o) => x.linear(x, o), 'bias', { bias: [1, 2] }],
  layerNorm: [(o) => x.layerNorm(o), 'eps', { weight: 3 }],
  rmsNorm: [(o) => x.rmsNorm(o), 'eps', { axes: 'last' }],
  attention: [(o) => q4.attention(q4, q4, o), 'causal', { causal: 'yes' }],
  gather: [(o) => x.gather(0, device.tensor(new Int32Array([1, -2]), [2]), o), 'mode', { mode: 'wrap' }],
  kernel: [(o) => device.kernel(IOTA, 'main', o), 'constants', { constants: [8] }],
};
for (const [method, [call, accepted, wrong]] of Object.entries(optionsMethods)) {
  // Each is fine without options (the table's calls are valid).
  call(undefined).free?.();
  assert.throws(() => call({ bogus: 1 }), (e) => e.code === 'INVALID' && e.message.includes('`bogus`') && e.message.includes(accepted), `${method}: an unknown key`);
  const [key] = Object.keys(wrong);
  assert.throws(() => call(wrong), (e) => e.code === 'INVALID' && e.message.includes(key), `${method}: ${key} of the wrong type`);
}
await assert.rejects(init({ backnd: 'cpu' }), (e) => e.code === 'INVALID' && /`backnd`/.test(e.message) && /backend, policy/.test(e.message));
await assert.rejects(init({ backend: 1 }), (e) => e.code === 'INVALID' && /backend is number/.test(e.message));
await assert.rejects(init({ threads: 'many' }), (e) => e.code === 'INVALID' && /threads/.test(e.message));

// JS idioms as TF.js and onnxruntime-web users write them.
// `shape` is a frozen number[] (JSON gives an array); the same array on every read.
const sh = device.tensor(new Float32Array(6), [2, 3]);
assert.ok(Array.isArray(sh.shape) && Object.isFrozen(sh.shape) && sh.shape === sh.shape);
assert.equal(JSON.stringify({ shape: sh.shape }), '{"shape":[2,3]}');
assert.deepEqual(sh.reshape(sh.shape.toReversed()).shape, [3, 2]);
assert.deepEqual(iota.workgroupSize, [37, 1, 1]);
assert.ok(Object.isFrozen(iota.workgroupSize));
// Tensors print their dtype and shape.
assert.equal(String(sh), 'Tensor(f32, [2, 3])');
assert.equal(inspect(device.zeros([4], 'int32')), 'Tensor(i32, [4])');
assert.match(inspect(device), /^Device\(cpu, ".+"\)$/);
// Optional arguments as one options object; the positional forms still work.
assert.equal(device.tensor(new Float32Array([1, 2]), [2], { dtype: 'float16' }).dtype, 'f16');
assert.equal(device.zeros([2], { dtype: 'uint32' }).dtype, 'u32');
assert.equal(device.zeros([2], {}).dtype, 'f32');
await same(cube.softmax({ axis: 1 }), cube.softmax(1), 'softmax({ axis })');
await same(cube.logSoftmax({ axis: -1 }), cube.logSoftmax(), 'logSoftmax({ axis })');
await same(cube.reduce('max', { axis: [0, 2], keepDims: true }), cube.reduceAxes('max', [0, 2], true), 'reduce by name');
await same(cube.reduce('sum', 1), cube.sum({ axis: 1 }), 'reduce with an axis number');
assert.throws(() => device.zeros([2], { dtyp: 'f32' }), (e) => e.code === 'INVALID' && /`dtyp`/.test(e.message) && /dtype/.test(e.message));
assert.throws(() => cube.softmax({ dim: 1 }), (e) => e.code === 'INVALID' && /`dim`/.test(e.message));
assert.throws(() => device.tensor(new Float32Array(2), [2], 5), (e) => e.code === 'INVALID' && /number 5/.test(e.message));
assert.throws(() => device.tensorFromGPUBuffer({ size: 16 }, [4], { dtype: 'f32', byteOffset: 0 }), (e) => e.code === 'UNSUPPORTED');
// The internal helpers are not on the public classes.
for (const C of [Device, Queue, Tensor]) {
  const names = Object.getOwnPropertyNames(C.prototype);
  assert.deepEqual(names.filter((n) => /With$|^__(?!destroy_into_raw$)|^argReduce$/.test(n)), [], `${C.name}'s methods: ${names}`);
}
// Every error is a UnicomputeError with a code, including wasm-bindgen's own.
const codes = ['NO_DEVICE', 'UNSUPPORTED', 'SHAPE', 'DTYPE', 'OUT_OF_RANGE', 'LIMIT', 'SHADER', 'LAUNCH', 'DEVICE_MISMATCH', 'DEVICE', 'DEVICE_LOST', 'INVALID', 'INTERNAL', 'MODEL'];
const isError = (code, pattern) => (e) => e instanceof UnicomputeError && e instanceof Error && e.name === 'UnicomputeError' && codes.includes(e.code) && e.code === code && pattern.test(e.message);
assert.throws(() => x.mul('2'), isError('INVALID', /the operand is string "2": expected a Tensor or a number/));
assert.throws(() => x.add(x, { activation: 'nope' }), isError('INVALID', /activation/));
assert.throws(() => device.zeros([2]).broadcastTo([3, 3]), isError('SHAPE', /broadcastTo/));
assert.throws(() => device.zeros([-1]), isError('INVALID', /shape\[0\] is -1: expected a whole number/));
assert.throws(() => x.add(device.tensor(new Float32Array(3), [3])), isError('SHAPE', /./));
assert.throws(() => device.kernel('fn main( {', 'main'), isError('SHADER', /./));
await assert.rejects(x.read16(), isError('DTYPE', /read16/));
await assert.rejects(init({ backend: 'tpu' }), (e) => e instanceof UnicomputeError && e.code === 'INVALID');
const gone = device.tensor(new Float32Array([1, 2]), [2]);
gone.dispose();
assert.throws(() => gone.exp(), isError('INVALID', /Tensor\.(exp|unary): the Tensor was disposed/));
assert.throws(() => gone.shape, isError('INVALID', /disposed/));
assert.throws(() => x.add(gone), isError('INVALID', /argument 1 \(a Tensor\) was disposed/));
await assert.rejects(async () => gone.read(), isError('INVALID', /disposed/));
assert.equal(String(gone), 'Tensor(disposed)');
gone.dispose(); // twice: nothing
// A Tensor as a kernel binding: bound in place, so an op -> kernel -> op pipeline stays on
// the device; a strided view is bound as a copy; other values are refused, naming the binding.
const SCALE = `@group(0) @binding(0) var<storage, read_write> v: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3u) { if (id.x < arrayLength(&v)) { v[id.x] = v[id.x] * 3.0 + 1.0; } }`;
const scale = device.kernel(SCALE, 'main');
const pre = device.tensor(Float32Array.from({ length: 100 }, (_, i) => i - 50), [10, 10]).abs();
device.queue().launch(scale, [pre], [2, 1, 1]);
assert.deepEqual(Array.from(await pre.neg().read()), Array.from({ length: 100 }, (_, i) => -(Math.abs(i - 50) * 3 + 1)));
const asBuffer = pre.toBuffer();
assert.equal(asBuffer.length, 100);
assert.equal(asBuffer.dtype, 'f32');
device.queue().launch(scale, [asBuffer], [2, 1, 1]);
assert.equal((await pre.read())[0], (50 * 3 + 1) * 3 + 1, 'toBuffer shares a contiguous tensor');
asBuffer.dispose();
const strided = pre.transpose();
device.queue().launch(scale, [strided], [2, 1, 1]);
assert.equal((await strided.read())[1], (40 * 3 + 1) * 3 + 1, 'a strided view is bound as a copy');
assert.throws(() => device.queue().launch(scale, [new Float32Array(4)], [1, 1, 1]), isError('INVALID', /binding 0 is a Float32Array: expected a Buffer or a Tensor/));
assert.throws(() => device.queue().launch(scale, [gone], [1, 1, 1]), isError('INVALID', /disposed/));
assert.throws(() => h.toBuffer(), isError('DTYPE', /toBuffer/));
// `read()` then `dispose()`: the read finishes, then the tensor is freed (as in TF.js).
const early = device.tensor(new Float32Array([4, 5, 6]), [3]).exp();
const pending = early.read();
early.dispose();
close(await pending, [4, 5, 6].map(Math.exp), 'read, then dispose', 2e-6);
const pending16 = h.reshape([2, 2]);
const bitsRead = pending16.read16();
pending16.dispose();
assert.deepEqual(Array.from(await bitsRead), Array.from(bits));
// An async scope is refused, and its read in flight still finishes.
let inFlight;
assert.throws(() => device.scope(() => { const t = device.tensor(new Float32Array([7]), [1]); inFlight = t.read(); return Promise.resolve(); }), isError('INVALID', /synchronous/));
assert.deepEqual(Array.from(await inFlight), [7]);
// Scopes free what every factory made, per device; numTensors counts live tensors.
const counted0 = device.memory().numTensors;
const buf = device.buffer(new Float32Array(8));
device.scope(() => {
  const a = device.tensor(new Float32Array(8), [8]);
  device.zeros([3]);
  buf.tensor([2, 4]).exp();
  a.toBuffer().tensor([8]);
  assert.equal(device.memory().numTensors, counted0 + 5);
});
assert.equal(device.memory().numTensors, counted0, 'the scope freed every tensor it made');
const leaked = [device.zeros([1]), device.zeros([1])];
assert.equal(device.memory().numTensors, counted0 + 2);
leaked.forEach((t) => t.dispose());
assert.equal(device.memory().numTensors, counted0);
buf.dispose();
const m = device.memory();
for (const key of ['bytesLive', 'bytesCached', 'allocations', 'poolHits', 'peakBytesLive', 'numTensors']) assert.equal(typeof m[key], 'number', key);
device.trim();
assert.equal(device.memory().bytesCached, 0, 'trim gives the cached blocks back');
// camelCase keys in every record returned to JS.
const keysOf = (v, out = new Set()) => {
  if (Array.isArray(v)) v.forEach((x) => keysOf(x, out));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.add(k) && k !== 'timesUs' && k !== 'variants' && keysOf(x, out);
  return out;
};
device.enableProfiler();
await x.exp().add(x).read();
const profile = await device.takeProfile();
const records = [profile.launches(), profile.reads(), profile.summary(), device.decisions(), device.policy, device.memory(), device.info()];
assert.ok(profile.launches().length > 0 && 'hostStartUs' in profile.launches()[0] && 'waitUs' in profile.reads()[0] && 'totalS' in profile.summary()[0]);
assert.deepEqual([...keysOf(records)].filter((k) => k.includes('_')), [], 'no snake_case key');
const tuned = await device.tune('reduce', [4, 64]);
assert.ok(tuned.timesUs && !('times_us' in tuned));
assert.equal((await init({ policy: { backends: ['cpu'], pool: { cacheLimitBytes: 4096 } } })).policy.pool.cacheLimitBytes, 4096, 'policy keys in camelCase');
assert.equal((await init({ policy: { backends: ['cpu'], tune_cache: 'off' } })).policy.tuneCache, 'off', 'and in snake_case');
// init is quiet, refuses contradictions naming them, and says when threads cannot be had.
const printed = [];
const saved = { info: console.info, log: console.log, warn: console.warn };
Object.assign(console, { info: (...a) => printed.push(a), log: (...a) => printed.push(a), warn: (...a) => printed.push(a) });
try {
  (await init()).dispose();
  (await init('auto')).dispose();
  assert.deepEqual(printed, [], 'init prints nothing');
  await assert.rejects(init({ backend: 'webgpu', policy: { backends: ['cpu'] } }), isError('INVALID', /backend "webgpu" and a policy/));
  const threads = await import('unicompute/threads');
  (await threads.init({ backend: 'cpu', threads: 2 })).dispose();
  assert.equal(printed.length, 1, 'one warning');
  assert.match(String(printed[0]), /2 threads, but this context is not cross-origin isolated/);
} finally {
  Object.assign(console, saved);
}
console.log('api: op methods, reductions with options, options checked on every method, kernel constants, f16 I/O, ownership, interop errors, integer arithmetic and i64, JS idioms (frozen shapes, options objects, UnicomputeError, tensors as bindings, read then dispose, scopes and numTensors, camelCase, quiet init) ok');
// Numbers as operands of every binary op, in the tensor's dtype (whole for integer dtypes).
const sx = device.tensor([[0.5, -1.5, 2], [3, 0.25, -4]]);
assert.deepEqual(Array.from(sx.shape), [2, 3]);
const sv = [0.5, -1.5, 2, 3, 0.25, -4];
close(await sx.mul(2).read(), sv.map((v) => v * 2), 'mul(2)');
close(await sx.add(0.5).read(), sv.map((v) => v + 0.5), 'add(0.5)');
close(await sx.sub(1.25).read(), sv.map((v) => v - 1.25), 'sub(1.25)');
close(await sx.div(4).read(), sv.map((v) => v / 4), 'div(4)');
close(await sx.minimum(0).read(), sv.map((v) => Math.min(v, 0)), 'minimum(0)');
close(await sx.maximum(1).read(), sv.map((v) => Math.max(v, 1)), 'maximum(1)');
close(await sx.abs().pow(2).read(), sv.map((v) => v * v), 'pow(2)');
close(await sx.binary('sub', 3, { activation: 'relu' }).read(), sv.map((v) => Math.max(v - 3, 0)), 'binary sub 3 relu');
const si = device.tensor([7, -3, 10], [3], 'int32');
assert.equal(si.dtype, 'i32');
assert.deepEqual(Array.from(await si.mul(3).read()), [21, -9, 30]);
assert.deepEqual(Array.from(await si.div(2).read()), [3, -1, 5]);
assert.throws(() => si.mul(2.5), (e) => e.code === 'INVALID' && /2\.5/.test(e.message) && /whole/.test(e.message));
assert.throws(() => sx.mul('2'), (e) => e.code === 'INVALID' && /mul: the operand is string/.test(e.message));
assert.throws(() => sx.add(null), (e) => e.code === 'INVALID' && /null/.test(e.message));
// Plain arrays as data: flat with a shape, nested with the shape they give, ragged refused.
assert.deepEqual(Array.from(await device.tensor([1, 2, 3, 4, 5, 6], [3, 2], 'i64').read()), [1n, 2n, 3n, 4n, 5n, 6n]);
assert.deepEqual(Array.from(device.tensor([[[1], [2]], [[3], [4]], [[5], [6]]]).shape), [3, 2, 1]);
assert.deepEqual(Array.from(device.tensor(new Float32Array(5)).shape), [5]);
assert.throws(() => device.tensor([[1, 2], [3]]), (e) => e.code === 'INVALID' && /ragged/.test(e.message));
assert.throws(() => device.tensor([1, 'a']), (e) => e.code === 'INVALID' && /numbers/.test(e.message));
assert.throws(() => device.tensor([1, 2, 3], [2]), (e) => e.code === 'SHAPE');
assert.throws(() => device.tensor([1.5], [1], 'u32'), (e) => e.code === 'INVALID' && /whole/.test(e.message));
// Constructors: ones, full, arange (numpy's length), seeded random (SplitMix64: the same seed
// gives the same values; checked here against the generator written out in JS).
assert.deepEqual(Array.from(await device.ones([2, 3], 'int32').read()), [1, 1, 1, 1, 1, 1]);
assert.deepEqual(Array.from(await device.full([3], -2.5).read()), [-2.5, -2.5, -2.5]);
assert.equal(device.full([2], 7, 'bfloat16').dtype, 'bf16');
assert.throws(() => device.full([2], 0.5, 'i32'), (e) => e.code === 'INVALID');
close(await device.arange(1.5, -2, -0.7).read(), [1.5, 0.8, 0.1, -0.6, -1.3], 'arange down', 1e-6);
assert.deepEqual(Array.from(await device.arange(5).read()), [0, 1, 2, 3, 4]);
assert.deepEqual(Array.from(await device.arange(-3, 9, 4, 'int32').read()), [-3, 1, 5]);
assert.deepEqual(Array.from(device.arange(3, 1).shape), [0]);
assert.throws(() => device.arange(0, 1, 0), (e) => e.code === 'INVALID' && /step/.test(e.message));
const mask64 = (1n << 64n) - 1n;
const splitmix = (seed, i) => {
  let z = (BigInt(seed) + (BigInt(i) + 1n) * 0x9e3779b97f4a7c15n) & mask64;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & mask64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & mask64;
  return z ^ (z >> 31n);
};
const unit = (seed, i) => Number(splitmix(seed, i) >> 11n) / 2 ** 53;
const uniform = device.randomUniform([3, 5], { low: -1, high: 3, seed: 42 });
close(await uniform.read(), Array.from({ length: 15 }, (_, i) => -1 + 4 * unit(42, i)), 'randomUniform', 1e-6);
assert.deepEqual(Array.from(await device.randomUniform([3, 5], { low: -1, high: 3, seed: 42 }).read()), Array.from(await uniform.read()));
assert.deepEqual(Array.from(await device.randomUniform([4], { high: 10, seed: 9, dtype: 'int32' }).read()), [0, 1, 2, 3].map((i) => Math.floor(10 * unit(9, i))));
const gauss = (seed, i) => {
  const p = i & ~1;
  const r = Math.sqrt(-2 * Math.log(1 - unit(seed, p)));
  const a = 2 * Math.PI * unit(seed, p + 1);
  return r * (i % 2 === 0 ? Math.cos(a) : Math.sin(a));
};
close(await device.randomNormal([7], { mean: 1, std: 2, seed: 5 }).read(), Array.from({ length: 7 }, (_, i) => 1 + 2 * gauss(5, i)), 'randomNormal', 1e-5);
assert.equal(device.randomNormal([2, 2]).shape.length, 2);
assert.throws(() => device.randomNormal([2], { seed: 1, dtype: 'int32' }), (e) => e.code === 'DTYPE');
assert.throws(() => device.randomUniform([2], { sede: 1 }), (e) => e.code === 'INVALID' && /sede/.test(e.message));
assert.throws(() => device.randomUniform([2], { seed: -1 }), (e) => e.code === 'INVALID' && /seed/.test(e.message));
// concat of many tensors, on a tensor and on the device, negative axes; mismatches refused.
const c1 = device.tensor([1, 2, 3, 4], [2, 2]);
const c2 = device.tensor([5, 6], [2, 1]);
const c3 = device.tensor([7, 8, 9, 10, 11, 12], [2, 3]);
assert.deepEqual(Array.from(await c1.concat([c2, c3], -1).read()), [1, 2, 5, 7, 8, 9, 3, 4, 6, 10, 11, 12]);
assert.deepEqual(Array.from(await device.concat([c3, c2, c1], 1).read()), [7, 8, 9, 5, 1, 2, 10, 11, 12, 6, 3, 4]);
assert.deepEqual(Array.from(device.concat([c1, c1, c1]).shape), [6, 2]);
assert.throws(() => device.concat([]), (e) => e.code === 'INVALID' && /non-empty/.test(e.message));
assert.throws(() => c1.concat([c2, 3], 1), (e) => e.code === 'INVALID' && /tensor 1 is number/.test(e.message));
assert.throws(() => c1.concat([si.reshape([3, 1]).slice(0, 0, 2)], 1), (e) => e.code === 'DTYPE');
assert.throws(() => c1.concat([c3], 0), (e) => e.code === 'SHAPE');
// Pooling with a window, stride and padding per axis (ONNX's MaxPool and AveragePool).
const img = device.tensor(Array.from({ length: 20 }, (_, i) => i), [1, 1, 4, 5]);
assert.deepEqual(Array.from(await img.maxPool2d(2).read()), [6, 8, 16, 18]);
const mp = img.maxPool2d({ kernel: [2, 3], stride: [2, 1], padding: [0, 1, 1, 0] });
assert.deepEqual(Array.from(mp.shape), [1, 1, 2, 4]);
assert.deepEqual(Array.from(await mp.read()), [6, 7, 8, 9, 16, 17, 18, 19]);
const ap = img.avgPool2d({ kernel: 3, stride: 2, padding: 1 });
close(await ap.read(), [3, 4.5, 6, 10.5, 12, 13.5], 'avgPool2d without the padding');
close(await img.avgPool2d({ kernel: 3, stride: 2, padding: 1, countIncludePad: true }).read(), [12, 27, 24, 63, 108, 81].map((v) => v / 9), 'avgPool2d with the padding');
assert.deepEqual(Array.from(await img.maxPool2d({ kernel: 2, ceilMode: true }).read()), [6, 8, 9, 16, 18, 19]);
assert.throws(() => img.maxPool2d({ kernel: 2, padding: 2 }), (e) => e.code === 'INVALID' && /half/.test(e.message));
assert.throws(() => img.avgPool2d({ stride: 2 }), (e) => e.code === 'INVALID' && /kernel/.test(e.message));
assert.throws(() => img.avgPool2d({ kernel: 2, pad: 1 }), (e) => e.code === 'INVALID' && /`pad`/.test(e.message));
console.log('api: numbers as operands, plain arrays, ones / full / arange / seeded random, n-ary concat and pooling options ok');
console.log('api: op methods, reductions with options, options checked on every method, kernel constants, f16 I/O, ownership, interop errors, integer arithmetic and i64 ok');
