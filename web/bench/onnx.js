// A tiny ONNX model encoder: protobuf wire format written by hand, just enough to build the
// single-graph float32 models of the benchmark's workloads (workloads.js) at run time, at the
// sizes the page picks. Opset 17 (LayerNormalization's first), IR version 8.

import { WORKLOADS } from './workloads.js';

const OPSET = 17;
const IR_VERSION = 8;
const FLOAT = 1, INT64 = 7; // TensorProto.DataType
const ATTR = { FLOAT: 1, INT: 2, INTS: 7 }; // AttributeProto.AttributeType
const utf8 = new TextEncoder();

/** Concatenates byte chunks (arrays of bytes or Uint8Arrays) into one Uint8Array. */
function cat(chunks) {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** A base-128 varint; negative integers as 64-bit two's complement (10 bytes), as int64 wants. */
function varint(v) {
  let x = BigInt.asUintN(64, BigInt(v));
  const out = [];
  while (x >= 0x80n) {
    out.push(Number(x & 0x7fn) | 0x80);
    x >>= 7n;
  }
  out.push(Number(x));
  return out;
}

// Fields: `field` is the protobuf field number; each returns the encoded bytes.
const key = (field, wire) => varint(field * 8 + wire);
/** A varint field (int32, int64, enum). */
const int = (field, v) => cat([key(field, 0), varint(v)]);
/** A 32-bit float field. */
const f32 = (field, v) => cat([key(field, 5), new Uint8Array(new Float32Array([v]).buffer)]);
/** A length-delimited field holding `bytes`. */
const bytes = (field, b) => cat([key(field, 2), varint(b.length), b]);
/** A string field. */
const str = (field, s) => bytes(field, utf8.encode(s));
/** An embedded message made of the encoded fields `parts`. */
const msg = (field, parts) => bytes(field, cat(parts));

/** AttributeProto: an int, a list of ints or a float. */
const attr = {
  int: (name, v) => [str(1, name), int(3, v), int(20, ATTR.INT)],
  ints: (name, vs) => [str(1, name), ...vs.map((v) => int(8, v)), int(20, ATTR.INTS)],
  float: (name, v) => [str(1, name), f32(2, v), int(20, ATTR.FLOAT)],
};

/** NodeProto: `op` from the default domain, with attributes (each a list of AttributeProto fields). */
function node(op, inputs, outputs, attrs = []) {
  return [...inputs.map((s) => str(1, s)), ...outputs.map((s) => str(2, s)), str(3, `${op}_${outputs[0]}`), str(4, op), ...attrs.map((a) => msg(5, a))];
}

/** TensorProto (an initializer) of `dims` with `data` (a Float32Array or BigInt64Array) as raw little-endian bytes. */
function tensor(name, dims, data) {
  const type = data instanceof BigInt64Array ? INT64 : FLOAT;
  return [...dims.map((d) => int(1, d)), int(2, type), str(8, name), bytes(9, new Uint8Array(data.buffer, data.byteOffset, data.byteLength))];
}

/** ValueInfoProto of a float32 tensor of fixed `shape`. */
function valueInfo(name, shape) {
  const dims = shape.map((d) => msg(1, [int(1, d)]));
  return [str(1, name), msg(2, [msg(1, [int(1, FLOAT), msg(2, dims)])])];
}

/** ModelProto of one graph: `nodes`, `inits` (initializers), `inputs`/`outputs` ({ name: shape }). */
function model(nodes, inits, inputs, outputs) {
  const graph = [
    ...nodes.map((n) => msg(1, n)),
    str(2, 'bench'),
    ...inits.map((t) => msg(5, t)),
    ...Object.entries(inputs).map(([n, s]) => msg(11, valueInfo(n, s))),
    ...Object.entries(outputs).map(([n, s]) => msg(12, valueInfo(n, s))),
  ];
  return cat([int(1, IR_VERSION), str(2, 'unicompute-bench'), msg(7, graph), msg(8, [int(2, OPSET)])]);
}

/** The input shapes of each workload (as in WORKLOADS[name].inputs, without making the data). */
const INPUT_SHAPES = {
  matmul: ({ m, k, n }) => ({ a: [m, k], b: [k, n] }),
  softmax: ({ rows, cols }) => ({ x: [rows, cols] }),
  layer_norm: ({ rows, cols }) => ({ x: [rows, cols] }),
  add_relu: ({ n }) => ({ a: [n], b: [n] }),
  sum: ({ rows, cols }) => ({ x: [rows, cols] }),
  conv2d: ({ n, c, h, w, k, r }) => ({ x: [n, c, h, w], w: [k, c, r, r] }),
  attention: ({ b, h, s, d }) => ({ q: [b, h, s, d], k: [b, h, s, d], v: [b, h, s, d] }),
  chain: ({ n }) => ({ a: [n], b: [n] }),
  chain_replay: ({ n }) => ({ a: [n], b: [n] }),
};

/** `len` Adds of `b` in a row, from `a` to the output. */
const chainGraph = ({ len }) => ({ nodes: Array.from({ length: len }, (_, i) => node('Add', [i === 0 ? 'a' : `t${i}`, 'b'], [i === len - 1 ? 'y' : `t${i + 1}`])) });

/** Nodes and initializers per workload; graph inputs are named as in workloads.js, the output is 'y'. */
const GRAPHS = {
  matmul: () => ({ nodes: [node('MatMul', ['a', 'b'], ['y'])] }),
  softmax: () => ({ nodes: [node('Softmax', ['x'], ['y'], [attr.int('axis', -1)])] }),
  layer_norm: ({ cols }) => ({
    nodes: [node('LayerNormalization', ['x', 'scale', 'bias'], ['y'], [attr.int('axis', -1), attr.float('epsilon', 1e-5)])],
    inits: [tensor('scale', [cols], new Float32Array(cols).fill(1)), tensor('bias', [cols], new Float32Array(cols))],
  }),
  add_relu: () => ({ nodes: [node('Add', ['a', 'b'], ['t']), node('Relu', ['t'], ['y'])] }),
  sum: () => ({
    nodes: [node('ReduceSum', ['x', 'axes'], ['y'], [attr.int('keepdims', 0)])],
    inits: [tensor('axes', [1], new BigInt64Array([-1n]))],
  }),
  conv2d: ({ r, pad, stride }) => ({
    nodes: [node('Conv', ['x', 'w'], ['y'], [
      attr.ints('kernel_shape', [r, r]), attr.ints('pads', [pad, pad, pad, pad]), attr.ints('strides', [stride, stride]),
    ])],
  }),
  /** softmax(q kᵀ / sqrt(d)) v from standard ops. */
  attention: ({ d }) => ({
    nodes: [
      node('Transpose', ['k'], ['kt'], [attr.ints('perm', [0, 1, 3, 2])]),
      node('MatMul', ['q', 'kt'], ['scores']),
      node('Mul', ['scores', 'scale'], ['scaled']),
      node('Softmax', ['scaled'], ['p'], [attr.int('axis', -1)]),
      node('MatMul', ['p', 'v'], ['y']),
    ],
    inits: [tensor('scale', [], new Float32Array([1 / Math.sqrt(d)]))],
  }),
  chain: chainGraph,
  chain_replay: chainGraph,
};

/** The serialized ONNX model (ModelProto bytes) of workload `name` (a key of WORKLOADS) at `sizes`. */
export function buildModel(name, sizes) {
  if (!GRAPHS[name]) throw new Error(`no ONNX model for workload '${name}'`);
  const { nodes, inits = [] } = GRAPHS[name](sizes);
  return model(nodes, inits, INPUT_SHAPES[name](sizes), { y: WORKLOADS[name].outShape(sizes) });
}
