// The drop-in check of `unicompute/ort`: one program written for onnxruntime-web (`infer`
// below) runs with onnxruntime-web itself (its wasm backend, the oracle) and with
// `unicompute/ort`, on the same model bytes and the same seeded inputs, and the outputs must
// agree (type, dims, data). Then what onnxruntime-web users meet beyond the happy path: fetches,
// outputs left on the device, feeds that are unicompute tensors, refusals with their codes, and
// no tensor left behind. Run by scripts/test-npm.sh:
//   node ort-session.mjs <dir of the light model zoo> [yolov8n.onnx] [cpu|webgpu]
import assert from 'node:assert/strict';
import { useDawn } from './dawn.mjs';
import { halfToFloat } from './half.mjs';
import { existsSync, readFileSync } from 'node:fs';
import onnxProto from 'onnx-proto';

const [light, yolo, backend = 'cpu'] = process.argv.slice(2);
if (!light || !['cpu', 'webgpu'].includes(backend)) {
  console.error('usage: node ort-session.mjs <light model dir> [yolov8n.onnx] [cpu|webgpu]');
  process.exit(2);
}
if (backend === 'webgpu') await useDawn();
const oracle = await import('onnxruntime-web');
oracle.env.wasm.numThreads = 1;
const ours = await import('unicompute/ort');
const { HostTensor, InferenceSession, UnicomputeError } = await import('unicompute');
const provider = backend === 'cpu' ? 'wasm' : 'webgpu';

/** Seeded uniform numbers in [lo, hi) (a 32-bit LCG: the same inputs every run). */
function seeded(seed, n, lo, hi) {
  let s = seed >>> 0;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return lo + ((s >>> 8) / 2 ** 24) * (hi - lo);
  });
}

/**
 * A model run as onnxruntime-web's documentation writes it, with `ort` either package:
 * create, feed `ort.Tensor`s by input name, run, copy out each output, release.
 */
async function infer(ort, bytes, providers, inputs) {
  const session = await ort.InferenceSession.create(bytes, { executionProviders: providers });
  const feeds = {};
  for (const [name, { type, data, dims }] of Object.entries(inputs)) {
    feeds[name] = new ort.Tensor(type, data, dims);
  }
  const results = await session.run(feeds);
  const out = {};
  for (const name of session.outputNames) {
    const t = results[name];
    out[name] = { type: t.type, dims: [...t.dims], data: t.data };
  }
  await session.release();
  return out;
}

/** `got` matches `want` (each `{ type, dims, data }`): exact for integers, else within tolerance. */
function assertSame(got, want, what, rtol, atol) {
  assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort(), `${what}: output names`);
  let worst = 0;
  for (const name of Object.keys(want)) {
    const [g, w] = [got[name], want[name]];
    assert.equal(g.type, w.type, `${what} ${name}: type`);
    assert.deepEqual(g.dims, w.dims, `${what} ${name}: dims`);
    assert.equal(g.data.constructor.name, w.data.constructor.name, `${what} ${name}: data array`);
    if (typeof w.data[0] === 'bigint' || !w.type.startsWith('float')) {
      assert.deepEqual(g.data, w.data, `${what} ${name}: data`);
      continue;
    }
    const value = w.type === 'float16' ? halfToFloat : Number;
    const scale = w.data.reduce((m, v) => Math.max(m, Math.abs(value(v))), 0);
    for (let i = 0; i < w.data.length; i++) {
      const [a, b] = [value(g.data[i]), value(w.data[i])];
      const err = Math.abs(a - b);
      worst = Math.max(worst, err / (scale || 1));
      assert.ok(err <= rtol * Math.abs(b) + atol * scale, `${what} ${name}[${i}]: ${a} vs onnxruntime-web's ${b}`);
    }
  }
  return worst;
}

/** Seeded float inputs for each of the model's inputs, `dims` filling its open extents. */
async function floatInputs(bytes, fill) {
  const s = await InferenceSession.create(bytes, { executionProviders: ['wasm'] });
  const inputs = {};
  s.inputMetadata.forEach((m, k) => {
    const dims = m.shape.map((d) => (typeof d === 'number' && d >= 0 ? d : fill[d] ?? 1));
    const n = dims.reduce((a, b) => a * b, 1);
    inputs[m.name] = { type: 'float32', data: seeded(1 + k, n, 0, 1), dims };
  });
  await s.release();
  return inputs;
}

/** A small model the session's API paths need: int64 in and out, float16 out, an open extent. */
function smallModel() {
  const { onnx } = onnxProto;
  const { DataType } = onnx.TensorProto;
  const value = (name, elemType, dims) => ({
    name,
    type: { tensorType: { elemType, shape: { dim: dims.map((d) => (typeof d === 'string' ? { dimParam: d } : { dimValue: d })) } } },
  });
  const node = (opType, input, output, attribute = []) => ({ opType, input, output, attribute });
  const graph = {
    name: 'small',
    node: [
      node('Gather', ['x', 'idx'], ['g'], [{ name: 'axis', type: onnx.AttributeProto.AttributeType.INT, i: 1 }]),
      node('Cast', ['g'], ['half'], [{ name: 'to', type: onnx.AttributeProto.AttributeType.INT, i: DataType.FLOAT16 }]),
      node('Softmax', ['x'], ['soft']),
      node('Shape', ['x'], ['extents']),
    ],
    input: [value('x', DataType.FLOAT, ['batch', 5]), value('idx', DataType.INT64, [3])],
    output: [value('half', DataType.FLOAT16, ['batch', 3]), value('soft', DataType.FLOAT, ['batch', 5]), value('extents', DataType.INT64, [2])],
  };
  const model = onnx.ModelProto.create({ irVersion: 8, opsetImport: [{ domain: '', version: 17 }], graph });
  return onnx.ModelProto.encode(model).finish();
}
const smallInputs = {
  x: { type: 'float32', data: seeded(7, 7 * 5, -4, 4), dims: [7, 5] },
  idx: { type: 'int64', data: BigInt64Array.from([4n, 0n, 2n]), dims: [3] },
};

// 1. The same program on both runtimes.
const models = [
  ['small (Gather, Cast to f16, Softmax, Shape)', smallModel(), smallInputs],
  // The light zoo's SqueezeNet has constant weights (every output is 0.001): it checks that
  // its operators run and give the right types and dims; YOLOv8n's real weights check numbers.
  ['squeezenet (light zoo)', readFileSync(`${light}/light_squeezenet.onnx`)],
];
if (yolo && existsSync(yolo)) models.push(['yolov8n (nudenet)', readFileSync(yolo)]);
else console.log(`yolov8n: not run (no model at ${yolo}; scripts/onnx-models.sh fetches it)`);
const [rtol, atol] = backend === 'cpu' ? [1e-4, 1e-5] : [1e-3, 1e-4];
for (const [name, bytes, given] of models) {
  const inputs = given ?? (await floatInputs(bytes, { height: 320, width: 320 }));
  let t = performance.now();
  const want = await infer(oracle, bytes, ['wasm'], inputs);
  const theirs = performance.now() - t;
  t = performance.now();
  const got = await infer(ours, bytes, [provider], inputs);
  const mine = performance.now() - t;
  const worst = assertSame(got, want, `${name} on ${backend}`, rtol, atol);
  console.log(`${name}: ${backend} matches onnxruntime-web (wasm) within ${worst.toExponential(1)} of the largest output; ${mine.toFixed(0)} ms vs ${theirs.toFixed(0)} ms (create + one run)`);
}

// Constants fold at load on every backend: each of the light SqueezeNet's weights is a
// ConstantOfShape, held on the device as a weight rather than made again by every run. (A
// browser's GPU cannot give a value back while the model loads: the CPU folds there.)
{
  const squeeze = readFileSync(`${light}/light_squeezenet.onnx`);
  const session = await InferenceSession.create(squeeze, { executionProviders: [provider] });
  const image = new HostTensor('float32', new Float32Array(3 * 224 * 224), [1, 3, 224, 224]);
  await session.run({ [session.inputNames[0]]: image }); // the CPU plans from its first run
  const weights = session.memoryPlan()?.weights;
  assert.ok(weights > 4.9e6, `light SqueezeNet on ${backend}: ${weights} bytes of weights on the device, expected its 4.94 MB folded`);
  await session.release();
}

// 2. Beyond the happy path, on the package's own entry.
const bytes = smallModel();
const session = await InferenceSession.create(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength), 0, bytes.byteLength, { executionProviders: ['webnn', provider], graphOptimizationLevel: 'all' });
assert.equal(session.device.backend, backend, 'webnn is skipped, the next provider runs');
assert.deepEqual(session.inputNames, ['x', 'idx']);
assert.deepEqual(session.outputNames, ['half', 'soft', 'extents']);
assert.deepEqual(session.inputMetadata[0], { name: 'x', isTensor: true, type: 'float32', shape: ['batch', 5] });
const device = session.device;
const live = device.memory().numTensors;
const feeds = { x: new HostTensor('float32', smallInputs.x.data, [7, 5]), idx: new HostTensor(smallInputs.idx.data) };
const some = await session.run(feeds, ['extents']);
assert.deepEqual(Object.keys(some), ['extents'], 'fetches pick the outputs');
assert.deepEqual(some.extents.data, BigInt64Array.from([7n, 5n]));
assert.deepEqual(Object.keys(await session.run(feeds, { logSeverityLevel: 3 })), ['half', 'soft', 'extents'], 'run options are not fetches');
assert.equal(device.memory().numTensors, live, 'runs free their feeds and outputs');

// Feeds that are unicompute tensors, outputs that stay on the device.
const onDevice = await InferenceSession.create(bytes, { device, preferredOutputLocation: 'device' });
const x = device.tensor(smallInputs.x.data, [7, 5]);
const idx = device.tensor(smallInputs.idx.data, [3]);
const out = await onDevice.run({ x, idx });
const soft = await out.soft.read();
const host = await session.run({ x, idx });
assert.deepEqual(soft, host.soft.data, 'device outputs hold what host outputs do');
assert.equal(device.memory().numTensors, live + 5, 'the caller owns x, idx and the three outputs');
for (const t of [x, idx, ...Object.values(out)]) t.dispose();
assert.equal(device.memory().numTensors, live);

// Refusals, each with its code; the session still runs after them.
const refuses = async (f, code, pattern) => {
  await assert.rejects(f, (e) => e instanceof UnicomputeError && e.code === code && pattern.test(e.message), `${code} ${pattern}`);
};
await refuses(() => session.run({ x: feeds.x }), 'INVALID', /input 'idx' is not given/);
await refuses(() => session.run({ ...feeds, y: feeds.x }), 'INVALID', /no input 'y'/);
await refuses(() => session.run({ ...feeds, idx: new HostTensor('int32', [1, 2, 3]) }), 'DTYPE', /expected i64 for input 'idx'/);
await refuses(() => session.run({ ...feeds, x: 3 }), 'INVALID', /feeds\["x"\] is number: expected a HostTensor/);
await refuses(() => session.run(feeds, ['nope']), 'INVALID', /fetches "nope": expected outputs of the model \(half, soft, extents\)/);
await refuses(() => InferenceSession.create(bytes, { executionProviders: ['cuda'] }), 'INVALID', /execution provider "cuda"/);
await refuses(() => InferenceSession.create(bytes, { executionProviders: ['webnn'] }), 'NO_DEVICE', /none of the execution providers/);
await refuses(() => InferenceSession.create(bytes, { preferredOutputLocation: 'gpu-buffer' }), 'INVALID', /'device' \(unicompute Tensors/);
await refuses(() => InferenceSession.create(bytes, { sessionOption: 1 }), 'INVALID', /unknown option "sessionOption"/);
await refuses(() => InferenceSession.create(42), 'INVALID', /the model is number/);
await refuses(() => InferenceSession.create(bytes.slice(0, 40), { device }), 'MODEL', /./);
const unsupported = onnxProto.onnx.ModelProto.decode(bytes);
unsupported.graph.node[2].opType = 'Frobnicate';
await refuses(() => InferenceSession.create(onnxProto.onnx.ModelProto.encode(unsupported).finish(), { device }), 'MODEL', /Frobnicate/);
assert.deepEqual((await session.run(feeds, ['extents'])).extents.data, BigInt64Array.from([7n, 5n]), 'still runs');
await session.release();
await refuses(() => session.run(feeds), 'INVALID', /the session was released/);
await onDevice.release();

// freeDimensionOverrides fix the named extent at load, as in onnxruntime-web (the oracle, run
// with the same overrides): the metadata shows it, feeds of that extent give onnxruntime-web's
// outputs, others are refused; a name the model lacks is ignored.
const overrides = { batch: 7, sequence: 2 };
const fixed = await InferenceSession.create(bytes, { executionProviders: [provider], freeDimensionOverrides: overrides });
assert.deepEqual(fixed.inputMetadata[0], { name: 'x', isTensor: true, type: 'float32', shape: [7, 5] });
assert.deepEqual(fixed.outputMetadata.map((m) => m.shape), [[7, 3], [7, 5], [2]]);
const theirs = await oracle.InferenceSession.create(bytes, { executionProviders: ['wasm'], freeDimensionOverrides: overrides });
const asOracle = (results) => Object.fromEntries(Object.entries(results).map(([k, t]) => [k, { type: t.type, dims: [...t.dims], data: t.data }]));
const oracleFeeds = Object.fromEntries(Object.entries(smallInputs).map(([k, { type, data, dims }]) => [k, new oracle.Tensor(type, data, dims)]));
const fixedWorst = assertSame(asOracle(await fixed.run(feeds)), asOracle(await theirs.run(oracleFeeds)), `freeDimensionOverrides on ${backend}`, rtol, atol);
await theirs.release();
const four = new HostTensor('float32', seeded(8, 4 * 5, -4, 4), [4, 5]);
await refuses(() => fixed.run({ ...feeds, x: four }), 'SHAPE', /input 'x' has shape \[4, 5\]: expected \[7, 5\]/);
const open = await InferenceSession.create(bytes, { device });
assert.deepEqual(open.inputMetadata[0].shape, ['batch', 5], 'other sessions keep the named extent');
// The load's phases: each a time; the kernels compile at load where the extents are fixed, and
// are left to the first run, saying why, where one is open (on the CPU nothing compiles).
for (const [s, why] of [[fixed, null], [open, /input 'x' has the open extent 'batch'/]]) {
  const { kernelsCompiled, deferred, ...times } = s.loadPhases;
  assert.deepEqual(Object.keys(times), ['parse', 'optimise', 'upload', 'compile'], 'load phases');
  assert.ok(Object.values(times).every((ms) => Number.isFinite(ms) && ms >= 0), `load phases ${JSON.stringify(times)}`);
  assert.equal(kernelsCompiled === null, backend === 'cpu', `kernels compiled at load: ${kernelsCompiled}`);
  if (backend === 'cpu' || why === null) assert.equal(deferred, null);
  else assert.match(deferred, why);
}
await open.release();
const badOverrides = [
  [{ batch: -1 }, /freeDimensionOverrides\.batch is -1: expected a whole number/],
  [{ batch: 1.5 }, /freeDimensionOverrides\.batch is 1\.5: expected a whole number/],
  [{ batch: '7' }, /freeDimensionOverrides\.batch is "7": expected a whole number/],
  [{ batch: 2 ** 32 }, /freeDimensionOverrides\.batch is 4294967296: expected a whole number/],
  [[7], /freeDimensionOverrides is \[7\]: expected an object of extents by dimension name/],
  [7, /freeDimensionOverrides is 7: expected an object/],
];
for (const [given, pattern] of badOverrides) {
  await refuses(() => InferenceSession.create(bytes, { device, freeDimensionOverrides: given }), 'INVALID', pattern);
}
await fixed.release();
console.log(`freeDimensionOverrides on ${backend}: metadata, onnxruntime-web's outputs within ${fixedWorst.toExponential(1)}, shapes held, bad extents refused: ok`);

// HostTensor as onnxruntime-web's Tensor: types from data, checked dims, reshape, dispose.
assert.equal(new HostTensor([true, false]).type, 'bool');
assert.deepEqual(new HostTensor([true, false]).data, Uint8Array.from([1, 0]));
assert.equal(new HostTensor(new Int32Array(6), [2, 3]).reshape([3, 2]).dims.join(), '3,2');
assert.equal(String(new HostTensor('int64', [1, 2])), 'HostTensor(int64, [2])');
assert.throws(() => new HostTensor('float32', [1, 2, 3], [2, 2]), (e) => e.code === 'INVALID' && /hold 4 elements, but the data has 3/.test(e.message));
assert.throws(() => new HostTensor('complex64', [1]), (e) => e.code === 'INVALID' && /expected one of float32/.test(e.message));
const gone = new HostTensor([1, 2]);
gone.dispose();
assert.throws(() => gone.data, (e) => e.code === 'INVALID' && /disposed/.test(e.message));
assert.ok(ours.env.wasm && typeof ours.Tensor === 'function' && ours.Tensor === HostTensor);
const { Tensor: DeviceTensor } = await import('unicompute');
assert.throws(() => new DeviceTensor('float32', [1], [1]), (e) => e.code === 'INVALID' && /a device makes tensors.*use HostTensor/.test(e.message));
console.log(`unicompute/ort on ${backend}: the same program as onnxruntime-web, fetches, device outputs, refusals: ok`);
