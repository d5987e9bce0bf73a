// The packed npm package used from Node: `init()` falls back to the CPU backend inside the
// wasm (Node has no WebGPU unless something provides navigator.gpu), ops give the right
// numbers, and bad input throws Errors with a code. Run by scripts/test-npm.sh.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { init, Tensor } from 'unicompute';

// Where the wasm lives can be given (bundlers that do not copy it): a wrong kind of value is
// refused and loads nothing; bytes (read through the package's exports) load it.
await assert.rejects(init({ backend: 'cpu', wasm: 42 }), (e) => e.code === 'INVALID' && /wasm is number/.test(e.message));
const bytes = await readFile(new URL(import.meta.resolve('unicompute/unicompute_bg.wasm')));
const device = await init({ wasm: bytes });
assert.equal(device.backend, 'cpu', 'Node runs on the CPU backend');
assert.match(device.fallbackReason, /no WebGPU adapter/);

const a = device.tensor(new Float32Array([1, 2, 3, 4]), [2, 2]);
const b = device.tensor(new Float32Array([5, 6, 7, 8]), [2, 2]);
assert.ok(a instanceof Tensor);
assert.deepEqual(Array.from(await a.matmul(b).read()), [19, 22, 43, 50]);

// A policy object, the profiler and a Chrome trace from JS.
const tuned = await init({ policy: { backends: ['cpu'], variants: { matmul: 'auto' } } });
assert.equal(tuned.policy.variants.matmul, 'auto');
tuned.enableProfiler();
const x = tuned.tensor(Float32Array.from({ length: 35 }, (_, i) => i / 7 - 2), [5, 7]);
await x.matmul(x.transpose()).read();
const profile = await tuned.takeProfile();
const [launch] = profile.launches();
assert.equal(launch.op, 'matmul');
assert.equal(launch.flops, 2 * 5 * 5 * 7);
assert.ok(launch.deviceUs >= 0 && launch.reason.length > 0, JSON.stringify(launch));
assert.equal(JSON.parse(profile.chromeTrace()).traceEvents.filter((e) => e.ph === 'X').length, 1);
await assert.rejects(init({ policy: { colour: 1 } }), (e) => e.code === 'INVALID' && /colour/.test(e.message));
const soft = await a.softmax().read();
assert.ok(Math.abs(soft[1] - 1 / (1 + Math.exp(-1))) < 1e-6, `softmax ${soft}`);
assert.deepEqual(Array.from(await a.reduce('sum').read()), [10]);
// Several axes at once (keeping them as extents of 1), log-softmax and erf.
const cube = device.tensor(Float32Array.from({ length: 24 }, (_, i) => i), [2, 3, 4]);
const byRow = cube.sum({ axis: [0, 2], keepDims: true });
assert.deepEqual(Array.from(byRow.shape), [1, 3, 1]);
const rowSum = (j) => [0, 1].flatMap((i) => [0, 1, 2, 3].map((k) => i * 12 + j * 4 + k)).reduce((t, v) => t + v, 0);
assert.deepEqual(Array.from(await byRow.read()), [0, 1, 2].map(rowSum));
// Softmax along the first axis: each column of `cube` sums to 1.
const alongFirst = cube.softmax(0);
assert.deepEqual(Array.from(alongFirst.shape), [2, 3, 4]);
const cols = Array.from(await alongFirst.reduceAxes('sum', [0], false).read());
assert.ok(cols.every((v) => Math.abs(v - 1) < 1e-6), `softmax(0) columns ${cols}`);
// Layer norm over the last two axes: each block of 12 has mean 0 and variance ~1.
const blocks = Array.from(await cube.layerNorm({ axes: 2 }).read());
[0, 12].forEach((at) => {
  const blk = blocks.slice(at, at + 12);
  const m = blk.reduce((t, v) => t + v, 0) / 12;
  const v = blk.reduce((t, x) => t + (x - m) ** 2, 0) / 12;
  assert.ok(Math.abs(m) < 1e-5 && Math.abs(v - 1) < 1e-3, `layerNorm axes 2: mean ${m}, variance ${v}`);
});
assert.throws(() => cube.layerNorm({ axes: 4 }), (e) => e.code === 'OUT_OF_RANGE' && /4 trailing axes/.test(e.message));
// n-ary maximum over three broadcast inputs; one input is itself; ordered ops are refused.
const col = device.tensor(new Float32Array([2.5, -1]), [2, 1]);
const row3 = device.tensor(new Float32Array([0, 3]), [2]);
assert.deepEqual(Array.from(await a.nary('maximum', [col, row3]).read()), [2.5, 3, 3, 4]);
assert.deepEqual(Array.from(await a.nary('add', []).read()), [1, 2, 3, 4]);
assert.throws(() => a.nary('sub', [col]), (e) => e.code === 'INVALID' && /order/.test(e.message));
const logSoft = await a.logSoftmax().read();
const lse = (x, y) => Math.max(x, y) + Math.log(Math.exp(x - Math.max(x, y)) + Math.exp(y - Math.max(x, y)));
[1 - lse(1, 2), 2 - lse(1, 2), 3 - lse(3, 4), 4 - lse(3, 4)].forEach((w, i) => assert.ok(Math.abs(logSoft[i] - w) < 1e-6, `logSoftmax ${logSoft}`));
// erf(1..4) from the tables.
const erf = await a.unary('erf').read();
[0.8427007929497149, 0.9953222650189527, 0.9999779095030014, 0.9999999845827421].forEach((w, i) => assert.ok(Math.abs(erf[i] - w) < 1e-6, `erf ${erf}`));
assert.deepEqual(Array.from(await a.cast('f16').add(b.cast('f16')).read()), [6, 8, 10, 12]);
assert.deepEqual(Array.from(await device.tensor(new Int32Array([3, -1]), [2]).read()), [3, -1]);

const code = (fn) => {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof Error, 'errors are Error objects');
    return e.code;
  }
  assert.fail('expected an error');
};
assert.equal(code(() => device.tensor(new Float64Array(4), [2, 2])), 'INVALID');
assert.equal(code(() => device.tensor(new Float32Array(3), [2, 2])), 'SHAPE');
assert.equal(code(() => a.add(device.tensor(new Float32Array(6), [2, 3]))), 'SHAPE');
assert.equal(code(() => a.unary('nope')), 'INVALID');
await assert.rejects(init('quantum'), (e) => e.code === 'INVALID');
await assert.rejects(init({ backend: 'cpu', threads: 0 }), (e) => e.code === 'INVALID' && /threads/.test(e.message));
// In Node, unicompute/threads is the one-thread build (no cross-origin isolation there).
const threadsEntry = await import('unicompute/threads');
assert.equal((await threadsEntry.init({ backend: 'cpu', threads: 2 })).info().threads, 1);
// Fused ops and options objects, against values computed here.
const m = device.tensor(new Float32Array([-3, 1, 2, -4, 5, -6]), [2, 3]);
const ones = device.tensor(new Float32Array(6).fill(1), [2, 3]);
assert.deepEqual(Array.from(await m.add(ones, { activation: 'relu' }).read()), [0, 2, 3, 0, 6, 0]);
assert.deepEqual(Array.from(await m.mul(ones, { activation: 'abs' }).read()), [3, 1, 2, 4, 5, 6]);
const wT = device.tensor(new Float32Array([1, 0, 0, 1, 1, 1]), [3, 2]);
const bias = device.tensor(new Float32Array([10, -10]), [2]);
// m @ wT = [[-1, 3], [-10, -1]]; + bias = [[9, -7], [0, -11]]; relu -> [[9, 0], [0, 0]]
assert.deepEqual(Array.from(await m.linear(wT, { bias, activation: 'relu' }).read()), [9, 0, 0, 0]);
const ln = await m.layerNorm({ eps: 1e-5, activation: 'relu' }).read();
const row = [-3, 1, 2];
const mean = row.reduce((s, v) => s + v) / 3;
const inv = 1 / Math.sqrt(row.reduce((s, v) => s + (v - mean) ** 2, 0) / 3 + 1e-5);
row.forEach((v, i) => assert.ok(Math.abs(ln[i] - Math.max((v - mean) * inv, 0)) < 1e-5, `layerNorm ${ln}`));
// conv2d: a 1x1x3x3 input, a 2x2 kernel of ones, stride 1, padding 0, bias 1 -> window sums + 1.
const img = device.tensor(Float32Array.from({ length: 9 }, (_, i) => i), [1, 1, 3, 3]);
const k = device.tensor(new Float32Array(4).fill(1), [1, 1, 2, 2]);
const one = device.tensor(new Float32Array([1]), [1]);
assert.deepEqual(Array.from(await img.conv2d(k, { bias: one }).read()), [9, 13, 21, 25]);
assert.deepEqual(Array.from(await img.conv2d(k, { padding: [0, 1], stride: [1, 2] }).read()), [3, 12, 9, 24]);
assert.deepEqual(Array.from(await img.conv2d(k, { dilation: 2 }).read()), [16]);
// convTranspose2d: each input spreads over a 2x2 window of ones; stride 2 tiles them, and the
// padding crops the first row and column, the output padding adds a last column of zeros.
const up = device.tensor(new Float32Array([1, 2, 3, 4]), [1, 1, 2, 2]);
assert.deepEqual(Array.from(await up.convTranspose2d(k, { stride: 2, bias: one }).read()), [2, 2, 3, 3, 2, 2, 3, 3, 4, 4, 5, 5, 4, 4, 5, 5]);
assert.deepEqual(Array.from(await up.convTranspose2d(k).read()), [1, 3, 2, 4, 10, 6, 3, 7, 4]);
assert.deepEqual(Array.from(await up.convTranspose2d(k, { stride: 2, padding: [1, 1, 0, 0], outputPadding: [0, 1] }).read()), [1, 2, 2, 0, 3, 4, 4, 0, 3, 4, 4, 0]);
assert.equal(code(() => up.convTranspose2d(k, { outputPadding: 'one' })), 'INVALID');
// attention: causal makes the first query see only the first key.
const qkv = device.tensor(new Float32Array([1, 0, 0, 1]), [1, 1, 2, 2]);
const att = await qkv.attention(qkv, qkv, { causal: true }).read();
assert.deepEqual(Array.from(att.slice(0, 2)), [1, 0]);
assert.equal(code(() => m.add(ones, { activation: 'sparkle' })), 'INVALID');
assert.equal(code(() => m.add(ones, { activaton: 'relu' })), 'INVALID');
assert.equal(code(() => img.conv2d(k, { stride: [1, 2, 3] })), 'INVALID');
assert.equal(code(() => img.conv2d(k, { groups: -1 })), 'INVALID');
assert.equal(code(() => m.layerNorm(1e-5)), 'INVALID');
assert.throws(() => img.conv2d(k, { bias: 'not a tensor' }));
const into = new Float32Array(6);
assert.equal(await m.readInto(into), into);
assert.deepEqual(Array.from(into), [-3, 1, 2, -4, 5, -6]);
await assert.rejects(m.readInto(new Float32Array(5)), (e) => e.code === 'INVALID' && /Float32Array of 6/.test(e.message));
await assert.rejects(m.readInto(new Int32Array(6)), (e) => e.code === 'INVALID');
console.log('node: fused ops and options ok');
// The device still works after the errors.
assert.deepEqual(Array.from(await a.add(a).read()), [2, 4, 6, 8]);
a.free();
b.free();
console.log(`node: ok (${device.name})`);

// Buffers, queues, fences and user WGSL kernels from JS.
const buf = device.buffer(new Uint32Array([1, 2, 3]));
buf.write(new Uint32Array([4, 5, 6]));
assert.deepEqual(Array.from(await buf.read()), [4, 5, 6]);
assert.equal(code(() => buf.write(new Float32Array(3))), 'INVALID');
const fence = device.queue().submit();
await fence.wait();
assert.ok(fence.signalled);
// A WGSL kernel on the CPU backend (its executor of naga's IR): two workgroups of four.
const squares = device.kernel('@group(0) @binding(0) var<storage, read_write> y: array<u32>;\n@compute @workgroup_size(4)\nfn main(@builtin(global_invocation_id) g: vec3<u32>) { y[g.x] = g.x * g.x; }', 'main');
const ys = device.buffer(new Uint32Array(8).fill(7));
device.queue().launch(squares, [ys], [2, 1, 1]);
assert.deepEqual(Array.from(await ys.read()), [0, 1, 4, 9, 16, 25, 36, 49]);
const bad = (() => { try { device.kernel('fn main( {', 'main'); } catch (e) { return e; } })();
assert.equal(bad.code, 'SHADER');
assert.equal(bad.line, 1);
// The CPU backend runs each op as it is called: there is nothing to capture.
const captured = (() => { try { device.queue().capture(() => a.add(a)); } catch (e) { return e; } })();
assert.equal(captured.code, 'UNSUPPORTED');
assert.match(captured.message, /runs each op as it is called/);
console.log('node: buffers, queues, fences and kernel errors ok');
const { listDevices } = await import('unicompute');
const list = await listDevices();
assert.equal(list[0].backend, 'cpu');
const p = device.tensor(new Float32Array([1, 2, 3, 4]), [2, 2]);
const q = device.tensor(new Float32Array([5, 6, 7, 8]), [2, 2]);
assert.deepEqual(Array.from(await p.concat(q, 0).reduce('sum', 1).read()), [3, 7, 11, 15]);
// A freed tensor is an error, not a crash.
p.free();
assert.throws(() => p.add(q));
