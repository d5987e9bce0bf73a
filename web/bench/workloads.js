// The workloads of the browser benchmark: their sizes, seeded inputs and an f64 reference for
// sampled output elements. Every engine (unicompute, TF.js, ONNX Runtime Web) gets the same
// inputs; layouts an engine needs instead (TF.js convolves NHWC) are made before timing.

/** A seeded generator of uniform floats in [-1, 1) (mulberry32). */
export function random(seed) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2147483648 - 1;
  };
}

/** `n` seeded uniform floats in [-1, 1). */
export function floats(n, seed) {
  const next = random(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = next();
  return out;
}

const prod = (shape) => shape.reduce((a, b) => a * b, 1);

/** Row-major strides of `shape`. */
function strides(shape) {
  const s = new Array(shape.length).fill(1);
  for (let i = shape.length - 2; i >= 0; i--) s[i] = s[i + 1] * shape[i + 1];
  return s;
}

/** The multi-index of flat offset `i` in `shape`. */
function unravel(i, shape) {
  const idx = new Array(shape.length);
  for (let d = shape.length - 1; d >= 0; d--) {
    idx[d] = i % shape[d];
    i = Math.floor(i / shape[d]);
  }
  return idx;
}

/** Mean and 1/sqrt(variance + eps) of `len` values of `x` from `start`, in f64. */
function rowStats(x, start, len, eps) {
  let mean = 0;
  for (let j = 0; j < len; j++) mean += x[start + j];
  mean /= len;
  let v = 0;
  for (let j = 0; j < len; j++) v += (x[start + j] - mean) ** 2;
  return { mean, inv: 1 / Math.sqrt(v / len + eps) };
}

/**
 * Each workload: `sizes` (the defaults; the page may change them), `inputs(sizes)` (name ->
 * { shape, data }), `outShape(sizes)`, `work(sizes)` ({ flops, bytes }: the rate's numerator)
 * and `reference(sizes, inputs, i)`: output element `i` (row-major) in f64.
 */
export const WORKLOADS = {
  matmul: {
    sizes: { m: 512, k: 512, n: 512 },
    inputs: ({ m, k, n }) => ({ a: { shape: [m, k], data: floats(m * k, 1) }, b: { shape: [k, n], data: floats(k * n, 2) } }),
    outShape: ({ m, n }) => [m, n],
    work: ({ m, k, n }) => ({ flops: 2 * m * k * n, bytes: 4 * (m * k + k * n + m * n) }),
    reference({ k, n }, { a, b }, i) {
      const r = Math.floor(i / n), c = i % n;
      let acc = 0;
      for (let j = 0; j < k; j++) acc += a.data[r * k + j] * b.data[j * n + c];
      return acc;
    },
  },
  softmax: {
    sizes: { rows: 1024, cols: 1024 },
    inputs: ({ rows, cols }) => ({ x: { shape: [rows, cols], data: floats(rows * cols, 3) } }),
    outShape: ({ rows, cols }) => [rows, cols],
    work: ({ rows, cols }) => ({ flops: 5 * rows * cols, bytes: 8 * rows * cols }),
    reference({ cols }, { x }, i) {
      const start = i - (i % cols);
      let max = -Infinity;
      for (let j = 0; j < cols; j++) max = Math.max(max, x.data[start + j]);
      let sum = 0;
      for (let j = 0; j < cols; j++) sum += Math.exp(x.data[start + j] - max);
      return Math.exp(x.data[i] - max) / sum;
    },
  },
  layer_norm: {
    sizes: { rows: 1024, cols: 1024 },
    inputs: ({ rows, cols }) => ({ x: { shape: [rows, cols], data: floats(rows * cols, 4) } }),
    outShape: ({ rows, cols }) => [rows, cols],
    work: ({ rows, cols }) => ({ flops: 8 * rows * cols, bytes: 8 * rows * cols }),
    /** No scale or shift (gamma = 1, beta = 0), eps = 1e-5. */
    reference({ cols }, { x }, i) {
      const { mean, inv } = rowStats(x.data, i - (i % cols), cols, 1e-5);
      return (x.data[i] - mean) * inv;
    },
  },
  add_relu: {
    sizes: { n: 1 << 22 },
    inputs: ({ n }) => ({ a: { shape: [n], data: floats(n, 5) }, b: { shape: [n], data: floats(n, 6) } }),
    outShape: ({ n }) => [n],
    work: ({ n }) => ({ flops: 2 * n, bytes: 12 * n }),
    reference: (_, { a, b }, i) => Math.max(a.data[i] + b.data[i], 0),
  },
  sum: {
    sizes: { rows: 2048, cols: 2048 },
    inputs: ({ rows, cols }) => ({ x: { shape: [rows, cols], data: floats(rows * cols, 7) } }),
    outShape: ({ rows }) => [rows],
    work: ({ rows, cols }) => ({ flops: rows * cols, bytes: 4 * rows * cols }),
    /** The sum of each row (the last axis). */
    reference({ cols }, { x }, i) {
      let acc = 0;
      for (let j = 0; j < cols; j++) acc += x.data[i * cols + j];
      return acc;
    },
  },
  conv2d: {
    sizes: { n: 1, c: 32, h: 56, w: 56, k: 32, r: 3, pad: 1, stride: 1 },
    inputs: ({ n, c, h, w, k, r }) => ({
      x: { shape: [n, c, h, w], data: floats(n * c * h * w, 8) },
      w: { shape: [k, c, r, r], data: floats(k * c * r * r, 9) },
    }),
    outShape: (s) => [s.n, s.k, convOut(s, s.h), convOut(s, s.w)],
    work: (s) => {
      const out = s.n * s.k * convOut(s, s.h) * convOut(s, s.w);
      return { flops: 2 * out * s.c * s.r * s.r, bytes: 4 * (s.n * s.c * s.h * s.w + s.k * s.c * s.r * s.r + out) };
    },
    /** NCHW input, KCRS weight (square r x r), zero padding `pad` on every side, no bias. */
    reference(s, { x, w }, i) {
      const [b, o, y, z] = unravel(i, [s.n, s.k, convOut(s, s.h), convOut(s, s.w)]);
      let acc = 0;
      for (let ch = 0; ch < s.c; ch++) {
        for (let dy = 0; dy < s.r; dy++) {
          for (let dx = 0; dx < s.r; dx++) {
            const iy = y * s.stride + dy - s.pad, ix = z * s.stride + dx - s.pad;
            if (iy < 0 || iy >= s.h || ix < 0 || ix >= s.w) continue;
            acc += x.data[((b * s.c + ch) * s.h + iy) * s.w + ix] * w.data[((o * s.c + ch) * s.r + dy) * s.r + dx];
          }
        }
      }
      return acc;
    },
  },
  /** `len` adds of a small vector in a row: what each op costs the host, beyond its kernel. */
  chain: {
    sizes: { n: 1024, len: 200 },
    inputs: ({ n }) => ({ a: { shape: [n], data: floats(n, 13) }, b: { shape: [n], data: floats(n, 14) } }),
    outShape: ({ n }) => [n],
    work: ({ n, len }) => ({ flops: n * len, bytes: 12 * n * len }),
    reference: ({ len }, { a, b }, i) => a.data[i] + len * b.data[i],
  },
  attention: {
    sizes: { b: 1, h: 8, s: 256, d: 64 },
    inputs: ({ b, h, s, d }) => ({
      q: { shape: [b, h, s, d], data: floats(b * h * s * d, 10) },
      k: { shape: [b, h, s, d], data: floats(b * h * s * d, 11) },
      v: { shape: [b, h, s, d], data: floats(b * h * s * d, 12) },
    }),
    outShape: ({ b, h, s, d }) => [b, h, s, d],
    work: ({ b, h, s, d }) => ({ flops: 4 * b * h * s * s * d, bytes: 16 * b * h * s * d }),
    /** softmax(q kᵀ / sqrt(d)) v per batch and head, not causal. */
    reference({ s, d }, { q, k, v }, i) {
      const row = Math.floor(i / d), col = i % d;
      const head = Math.floor(row / s) * s * d;
      const scores = new Float64Array(s);
      let max = -Infinity;
      for (let t = 0; t < s; t++) {
        let dot = 0;
        for (let j = 0; j < d; j++) dot += q.data[row * d + j] * k.data[head + t * d + j];
        scores[t] = dot / Math.sqrt(d);
        max = Math.max(max, scores[t]);
      }
      let sum = 0, acc = 0;
      for (let t = 0; t < s; t++) {
        const e = Math.exp(scores[t] - max);
        sum += e;
        acc += e * v.data[head + t * d + col];
      }
      return acc / sum;
    },
  },
};

/**
 * The chain again, run the way each engine runs a fixed sequence of ops fastest: unicompute
 * captures it once and replays it (`queue.capture`, `graph.replay`), ONNX Runtime runs its
 * model (one call for the whole graph, as for every workload); TF.js has no such path.
 */
WORKLOADS.chain_replay = { ...WORKLOADS.chain };

/** Output extent of a convolution along an input extent `len`. */
function convOut({ r, pad, stride }, len) {
  return Math.floor((len + 2 * pad - r) / stride) + 1;
}

/** The element count of `shape`. */
export const numel = prod;

/** `data` (row-major in `shape`) with its axes reordered by `perm` (e.g. NCHW -> NHWC). */
export function permute(data, shape, perm) {
  const outShape = perm.map((p) => shape[p]);
  const inStrides = strides(shape);
  const out = new Float32Array(data.length);
  for (let i = 0; i < out.length; i++) {
    const idx = unravel(i, outShape);
    let src = 0;
    for (let d = 0; d < perm.length; d++) src += idx[d] * inStrides[perm[d]];
    out[i] = data[src];
  }
  return out;
}

/**
 * Checks `got` (row-major, `WORKLOADS[name].outShape`) at 64 seeded sample positions against
 * the f64 reference; returns the largest error relative to (1 + |reference|).
 */
export function check(name, sizes, inputs, got) {
  const w = WORKLOADS[name];
  const n = prod(w.outShape(sizes));
  if (got.length !== n) throw new Error(`${name}: ${got.length} elements came back, expected ${n}`);
  const next = random(99);
  let worst = 0;
  for (let t = 0; t < 64; t++) {
    const i = Math.min(n - 1, Math.floor(((next() + 1) / 2) * n));
    const want = w.reference(sizes, inputs, i);
    worst = Math.max(worst, Math.abs(got[i] - want) / (1 + Math.abs(want)));
  }
  return worst;
}
