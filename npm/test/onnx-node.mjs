// ONNX's own backend node tests for Gather, LogSoftmax and Attention (onnx 1.22.0's
// onnx/backend/test/data/node/, which scripts/test-npm.sh takes from the wheel) run through the
// packed package's JS API, each output compared with the test's expected one. model.onnx (the
// node's attributes and opset) and the .pb tensors are decoded with `onnx-proto`. A test the API
// cannot express is listed with the reason, never skipped silently; the set of such tests is
// pinned, so a test that should map and does not fails. Run by scripts/test-npm.sh:
//   node onnx-node.mjs <node test dir> [cpu|webgpu]
import assert from 'node:assert/strict';
import { useDawn } from './dawn.mjs';
import { halfToFloat } from './half.mjs';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import onnxProto from 'onnx-proto';

const { onnx } = onnxProto;
const [root, backend = 'cpu'] = process.argv.slice(2);
if (!root || !['cpu', 'webgpu'].includes(backend)) {
  console.error('usage: node onnx-node.mjs <dir of ONNX node tests> [cpu|webgpu]');
  process.exit(2);
}
if (backend === 'webgpu') await useDawn();
const { init } = await import('unicompute');
const device = await init({ backend });
assert.equal(device.backend, backend);

/** The tests taken from onnx 1.22.0, by op, and how many of each its wheel holds. */
const OPS = [
  ['Gather', /^test_gather_(0|1|2d_indices|negative_indices)$/, 4],
  ['LogSoftmax', /^test_logsoftmax_/, 21],
  ['Attention', /^test_attention_/, 128],
];
/**
 * The Attention tests the API cannot express (every other selected test must pass): softcap,
 * the scores as a 4th output, and key padding lengths (opset 24's nonpad_kv_seqlen).
 */
const OUT_OF_SCOPE = /^test_attention_.*(softcap|qk_matmul|padded_kv)/;

/** Thrown by a mapping for what the API cannot express (checked before any op is called). */
class OutOfScope extends Error {}

const { DataType } = onnx.TensorProto;
const { AttributeType } = onnx.AttributeProto;

/** A TensorProto file as `{ dtype, dims, data }` (data: the typed array the API takes). */
function loadTensor(path) {
  const t = onnx.TensorProto.decode(readFileSync(path));
  const dims = t.dims.map(Number);
  // A copy: rawData is a Node Buffer, a view into a shared pool.
  const raw = t.rawData?.length ? new Uint8Array(t.rawData).buffer : null;
  let dtype;
  let data;
  switch (t.dataType) {
    case DataType.FLOAT:
      [dtype, data] = ['f32', raw ? new Float32Array(raw) : Float32Array.from(t.floatData)];
      break;
    case DataType.INT64:
      dtype = 'i64';
      data = raw ? new BigInt64Array(raw) : BigInt64Array.from(t.int64Data, (v) => BigInt(`${v}`));
      break;
    case DataType.BOOL:
      [dtype, data] = ['bool', raw ? new Uint8Array(raw) : Uint8Array.from(t.int32Data)];
      break;
    case DataType.FLOAT16: // the bits, in raw_data or in int32_data
      [dtype, data] = ['f16', raw ? new Uint16Array(raw) : Uint16Array.from(t.int32Data)];
      break;
    default:
      throw new Error(`${path}: TensorProto data type ${t.dataType} is not handled by this test`);
  }
  const count = dims.reduce((a, b) => a * b, 1);
  assert.equal(data.length, count, `${path}: ${data.length} elements for dims [${dims}]`);
  return { dtype, dims, data };
}

/** A node's attributes as `{ name: value }` (the kinds these ops have: int, float). */
function attributes(node) {
  const out = {};
  for (const a of node.attribute) {
    if (a.type === AttributeType.INT) out[a.name] = Number(a.i);
    else if (a.type === AttributeType.FLOAT) out[a.name] = a.f;
    else throw new Error(`attribute ${a.name} has type ${a.type}: not handled by this test`);
  }
  return out;
}

/** The ai.onnx opset a model imports. */
const opsetOf = (model) =>
  Number(model.opsetImport.find((o) => !o.domain || o.domain === 'ai.onnx').version);

/** A graph's inputs or outputs as `name:type[dims]`, to check an expanded model's signature. */
const signature = (values) => values.map((v) => {
  const t = v.type.tensorType;
  return `${v.name}:${t.elemType}[${t.shape.dim.map((d) => d.dimValue).join(',')}]`;
}).join(' ');

/**
 * A test's single node, its attributes and the model's opset. An `_expanded` test's model is
 * the op's function body inlined, on the same data: its node is the plain test's, whose graph
 * must have the same inputs and outputs.
 */
function loadNode(name) {
  const model = onnx.ModelProto.decode(readFileSync(`${root}/${name}/model.onnx`));
  const plain = name.replace(/_expanded(_ver\d+)?$/, '');
  const source = plain === name
    ? model
    : onnx.ModelProto.decode(readFileSync(`${root}/${plain}/model.onnx`));
  const g = source.graph;
  assert.equal(g.node.length, 1, `${plain}: expected a graph of one node`);
  for (const side of ['input', 'output']) {
    assert.equal(signature(model.graph[side]), signature(g[side]), `${name}: graph ${side}s`);
  }
  return { node: g.node[0], attrs: attributes(g.node[0]), opset: opsetOf(source), graph: g };
}

/** A tensor on the device holding `t` (`bool` as u32 0 and 1). */
function upload(t) {
  if (t.dtype === 'bool') return device.tensor(Uint32Array.from(t.data), t.dims);
  return device.tensor(t.data, t.dims, t.dtype === 'f16' ? 'f16' : undefined);
}

const size = (dims) => dims.reduce((a, b) => a * b, 1);

/** Gather: `data.gather(axis, indices)` (ONNX's default axis is 0). */
function gather({ attrs }, [data, indices]) {
  return [data.gather(attrs.axis ?? 0, indices)];
}

/**
 * LogSoftmax: from opset 13 over `axis` (-1 by default); before, the input is flattened to
 * 2-D at `axis` (1 by default) and the log-softmax taken over the second dimension.
 */
function logSoftmax({ attrs, opset }, [x]) {
  if (opset >= 13) return [x.logSoftmax(attrs.axis ?? -1)];
  const dims = Array.from(x.shape);
  const a = attrs.axis ?? 1;
  const axis = a < 0 ? a + dims.length : a;
  const flat = x.reshape([size(dims.slice(0, axis)), size(dims.slice(axis))]);
  return [flat.logSoftmax(1).reshape(dims)];
}

/** `[batch, seq, heads * d]` as the view `[batch, heads, seq, d]`. */
function splitHeads(t, heads) {
  const [b, s, hidden] = t.shape;
  return t.reshape([b, s, heads, hidden / heads]).permute([0, 2, 1, 3]);
}

/**
 * Attention (opset 23): `q.attention(k, v, { causal, scale, mask })`. 3-D inputs are split into
 * `q_num_heads` / `kv_num_heads` heads and the output joined back; past_key and past_value are
 * concatenated before the keys and values (the present_key and present_value outputs); with
 * fewer kv heads (GQA) each kv head is repeated for its group of query heads by `gather`; a
 * bool mask (true: attend) becomes 0 / -inf by `select`.
 */
function attention({ node, attrs, dtypes }, inputs) {
  const [q0, k0, v0, mask0, pastKey, pastValue, nonpad] = inputs;
  if (attrs.softcap) throw new OutOfScope('softcap: the API\'s attention has no score capping');
  if (node.output[3]) {
    throw new OutOfScope('qk_matmul_output: the API\'s attention does not return its scores');
  }
  if (nonpad) throw new OutOfScope('nonpad_kv_seqlen: the API\'s attention has no key lengths');
  const known = ['is_causal', 'scale', 'q_num_heads', 'kv_num_heads', 'qk_matmul_output_mode'];
  const unknown = Object.keys(attrs).filter((a) => !known.includes(a));
  if (unknown.length) throw new OutOfScope(`attributes ${unknown.join(', ')}: not in the API`);
  if (attrs.is_causal && pastKey) {
    throw new OutOfScope('is_causal with past_key: ONNX aligns it after the past keys, the ' +
      'API\'s causal mask at the top left');
  }
  const threeD = q0.shape.length === 3;
  const keys = (pastKey ? pastKey.shape[2] : 0) + k0.shape[threeD ? 1 : 2];
  const maskKeys = mask0?.shape[mask0.shape.length - 1];
  if (mask0 && maskKeys !== keys) {
    throw new OutOfScope(`attn_mask has ${maskKeys} columns for ${keys} keys: ONNX pads a ` +
      'shorter one with -inf');
  }
  let [q, k, v] = [q0, k0, v0];
  if (threeD) {
    q = splitHeads(q0, attrs.q_num_heads);
    k = splitHeads(k0, attrs.kv_num_heads);
    v = splitHeads(v0, attrs.kv_num_heads);
  }
  if (pastKey) k = pastKey.concat(k, 2);
  if (pastValue) v = pastValue.concat(v, 2);
  const [presentKey, presentValue] = [k, v];
  const [qHeads, kvHeads] = [q.shape[1], k.shape[1]];
  if (qHeads !== kvHeads) {
    assert.equal(qHeads % kvHeads, 0, `${qHeads} query heads for ${kvHeads} kv heads`);
    const group = qHeads / kvHeads;
    const ofHead = Int32Array.from({ length: qHeads }, (_, h) => Math.floor(h / group));
    const heads = device.tensor(ofHead, [qHeads]);
    [k, v] = [k.gather(1, heads), v.gather(1, heads)];
  }
  let mask = mask0;
  if (mask && dtypes[3] === 'bool') {
    const [zero, minusInf] = [0, -Infinity].map((x) => device.tensor(new Float32Array([x]), [1],
      q.dtype));
    mask = mask.select(zero, minusInf);
  }
  const options = { causal: !!attrs.is_causal };
  if (attrs.scale !== undefined) options.scale = attrs.scale;
  if (mask) options.mask = mask;
  let y = q.attention(k, v, options);
  if (threeD) {
    const [b, h, s, dv] = y.shape;
    y = y.permute([0, 2, 1, 3]).contiguous().reshape([b, s, h * dv]);
  }
  return [y, presentKey, presentValue];
}

const MAPPINGS = { Gather: gather, LogSoftmax: logSoftmax, Attention: attention };

/** The largest difference from `want`, and the first element off by more than `rtol`/`atol`. */
function compare(got, want, { rtol, atol }) {
  let maxDiff = 0;
  let bad = -1;
  for (let i = 0; i < want.length; i++) {
    const [g, w] = [got[i], want[i]];
    if (Object.is(g, w) || (Number.isNaN(g) && Number.isNaN(w))) continue;
    const d = Math.abs(g - w);
    if (!(d <= maxDiff)) maxDiff = Number.isNaN(d) ? Infinity : d;
    if (!(d <= atol + rtol * Math.abs(w)) && bad < 0) bad = i;
  }
  return { maxDiff, bad };
}

/** f32 outputs to ~1e-5; f16 ones (ONNX's reference computes in f16) to about 2 ulps. */
const TOLERANCE = { f32: { rtol: 1e-5, atol: 1e-6 }, f16: { rtol: 2e-3, atol: 1e-3 } };

/** The largest difference from the expected outputs, by op and dtype. */
const largest = new Map();

/** Run one test: `passed`, or `outOfScope` with the reason; a mismatch throws. */
async function runTest(name) {
  const { node, attrs, opset, graph } = loadNode(name);
  const map = MAPPINGS[node.opType];
  assert.ok(map, `${name}: op ${node.opType}`);
  const dir = `${root}/${name}/test_data_set_0`;
  const byName = new Map(graph.input.map((v, i) => [v.name, loadTensor(`${dir}/input_${i}.pb`)]));
  const given = node.input.map((n) => (n ? byName.get(n) : undefined));
  const inputs = given.map((t) => t && upload(t));
  const dtypes = given.map((t) => t?.dtype);
  let outputs;
  try {
    outputs = map({ node, attrs, opset, dtypes }, inputs);
  } catch (e) {
    if (e instanceof OutOfScope) return { outOfScope: e.message };
    throw e;
  }
  const operands = given.map((t) => (t ? `${t.dtype}[${t.dims}]` : '-'));
  const call = `${node.opType}(${JSON.stringify(attrs)}) on ${operands}`;
  for (const [i, out] of graph.output.entries()) {
    const want = loadTensor(`${dir}/output_${i}.pb`);
    assert.ok(TOLERANCE[want.dtype], `${name}: output ${out.name} is ${want.dtype}`);
    const got = outputs[node.output.indexOf(out.name)];
    assert.ok(got, `${name}: no tensor for output ${out.name}`);
    assert.deepEqual(Array.from(got.shape), want.dims, `${name}: ${out.name}'s shape (${call})`);
    const wanted = want.dtype === 'f16' ? Float32Array.from(want.data, halfToFloat) : want.data;
    const values = await got.read();
    const { maxDiff, bad } = compare(values, wanted, TOLERANCE[want.dtype]);
    const key = `${node.opType} ${want.dtype}`;
    largest.set(key, Math.max(largest.get(key) ?? 0, maxDiff));
    if (bad >= 0) {
      throw new Error(`${name}: ${out.name}[${bad}] is ${values[bad]}, expected ` +
        `${wanted[bad]} (max difference ${maxDiff}; ${call})`);
    }
  }
  return { passed: true };
}

const tests = readdirSync(root).filter((t) => OPS.some(([, re]) => re.test(t))).sort();
for (const [op, re, count] of OPS) {
  const found = tests.filter((t) => re.test(t)).length;
  assert.equal(found, count, `${found} ${op} tests in ${root}: onnx 1.22.0 has ${count}`);
}
let passed = 0;
const failed = [];
const outOfScope = new Map(); // reason -> test names
for (const name of tests) {
  assert.ok(existsSync(`${root}/${name}/test_data_set_0`), `${name}: no test_data_set_0`);
  try {
    const r = await runTest(name);
    if (r.passed) passed++;
    else outOfScope.set(r.outOfScope, [...(outOfScope.get(r.outOfScope) ?? []), name]);
  } catch (e) {
    failed.push(name);
    console.error(`FAILED ${e.message}`);
  }
}
const skipped = [...outOfScope.values()].flat();
console.log(`onnx node tests (${backend}): ${passed} passed, ${failed.length} failed, ` +
  `${skipped.length} out of scope:`);
const diffs = [...largest].map(([k, d]) => `${k} ${d.toPrecision(2)}`).join(', ');
console.log(`  largest differences from the expected outputs: ${diffs}`);
for (const [reason, names] of outOfScope) console.log(`  ${reason}: ${names.join(', ')}`);
assert.equal(failed.length, 0, `ONNX node tests failed on ${backend}: ${failed.join(', ')}`);
assert.deepEqual(skipped.sort(), tests.filter((t) => OUT_OF_SCOPE.test(t)),
  'the tests out of scope are exactly the softcap, qk_matmul_output and nonpad_kv_seqlen ones');
process.exit(0);
