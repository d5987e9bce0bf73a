// The JS layer over one wasm-bindgen build of unicompute, shared by the package's entries:
// `unicompute` (index.js: one thread) and `unicompute/threads` (threads.js: the CPU backend on
// Web Workers). `bind` loads the wasm on first use and adds what the generated classes lack.

import { adopt, checkAdoptable } from './adopt.js';

/**
 * Call `call(tensors, rest)` with the tensor-valued keys `names` of `options` moved into a
 * TensorArgs (the wasm cannot read tensors out of a plain object) and the rest left as options.
 * Options that are not an object go through unchanged, for the wasm to reject with `INVALID`;
 * a tensor-valued key that holds no tensor is `INVALID` here, naming `method` and the key.
 */
function withTensors({ Tensor, TensorArgs }, method, options, names, call) {
  const tensors = new TensorArgs();
  try {
    if (options === null || typeof options !== 'object') return call(tensors, options);
    const rest = { ...options };
    for (const name of names) {
      const value = rest[name];
      if (value !== undefined && !(value instanceof Tensor)) {
        throw invalid(`${method}: option \`${name}\` is ${value === null ? 'null' : typeof value}: expected a Tensor`);
      }
      if (value !== undefined) tensors.set(name, value);
      delete rest[name];
    }
    return call(tensors, rest);
  } finally {
    tensors.free();
  }
}

/** What `value` is, for an error message. */
const what = (value) => (value === null ? 'null' : typeof value === 'object' ? value.constructor?.name ?? 'an object' : typeof value);

/**
 * Call `call(list)` with `tensors` (an array of Tensors) in a TensorArgs, in order; an entry
 * that is no Tensor is `INVALID`, naming `method` and its index.
 */
function withTensorList({ Tensor, TensorArgs }, method, tensors, call) {
  const list = new TensorArgs();
  try {
    tensors.forEach((t, i) => {
      if (!(t instanceof Tensor)) throw invalid(`${method}: tensor ${i} is ${what(t)}: expected a Tensor`);
      list.set(String(i), t);
    });
    return call(list);
  } finally {
    list.free();
  }
}

/**
 * Numbers as operands of the binary ops (`x.mul(2)`: the number in the tensor's dtype, whole
 * for integer dtypes), and `concat` of any number of tensors, on tensors and devices.
 */
function patchOperands({ Device, Tensor, TensorArgs }) {
  const operand = (op, other) => {
    if (!(other instanceof Tensor)) throw invalid(`${op}: the operand is ${what(other)}: expected a Tensor or a number`);
  };
  for (const op of ['add', 'sub', 'mul', 'div']) {
    const byTensor = Tensor.prototype[op];
    Tensor.prototype[op] = function binaryOperand(other, options) {
      if (typeof other === 'number') return this.binaryScalar(op, other, options);
      operand(op, other);
      return byTensor.call(this, other, options);
    };
  }
  const binary = Tensor.prototype.binary;
  Tensor.prototype.binary = function binaryByName(op, other, options) {
    if (typeof other === 'number') return this.binaryScalar(op, other, options);
    operand(op, other);
    return binary.call(this, op, other, options);
  };
  /** This tensor and `others` (a Tensor or an array of them) joined along `axis` (0 by default; negative counts from the end). */
  Tensor.prototype.concat = function concat(others, axis = 0) {
    const list = Array.isArray(others) ? others : [others];
    return withTensorList({ Tensor, TensorArgs }, 'concat', list, (l) => this.concatWith(l, axis));
  };
  /** `tensors` (a non-empty array) joined along `axis` (0 by default; negative counts from the end). */
  Device.prototype.concat = function concat(tensors, axis = 0) {
    if (!Array.isArray(tensors) || tensors.length === 0) throw invalid(`concat: got ${Array.isArray(tensors) ? 'an empty array' : what(tensors)}: expected a non-empty array of Tensors`);
    const [first, ...rest] = tensors;
    if (!(first instanceof Tensor)) throw invalid(`concat: tensor 0 is ${what(first)}: expected a Tensor`);
    return first.concat(rest, axis);
  };
}

/** The methods that take options objects (and lists of buffers), on the generated classes. */
function patch({ BindingList, Device, Queue, Tensor, TensorArgs }) {
  const args = (method, options, names, call) => withTensors({ Tensor, TensorArgs }, method, options, names, call);
  /** Record a launch of `kernel` over `workgroups` ([x, y, z]) with one buffer per binding. */
  Queue.prototype.launch = function launch(kernel, buffers, workgroups) {
    const list = new BindingList();
    try {
      for (const b of buffers) list.push(b);
      this.launchWith(kernel, list, workgroups);
    } finally {
      list.free();
    }
  };
  /** `conv2d(weight, { stride, padding, dilation, groups, bias, activation })`. */
  Tensor.prototype.conv2d = function conv2d(weight, options) {
    return args('conv2d', options, ['bias'], (t, o) => this.conv2dWith(weight, t, o));
  };
  /** `linear(weight, { bias, activation })`: `activation(this @ weight + bias)` in one kernel. */
  Tensor.prototype.linear = function linear(weight, options) {
    return args('linear', options, ['bias'], (t, o) => this.linearWith(weight, t, o));
  };
  /** `layerNorm({ weight, bias, eps, activation, axes })` over the last `axes` axes. */
  Tensor.prototype.layerNorm = function layerNorm(options) {
    return args('layerNorm', options, ['weight', 'bias'], (t, o) => this.layerNormWith(t, o));
  };
  /** `rmsNorm({ weight, eps, activation, axes })` over the last `axes` axes. */
  Tensor.prototype.rmsNorm = function rmsNorm(options) {
    return args('rmsNorm', options, ['weight'], (t, o) => this.rmsNormWith(t, o));
  };
  /** `attention(k, v, { causal, scale, mask })` with this tensor as the queries. */
  Tensor.prototype.attention = function attention(k, v, options) {
    return args('attention', options, ['mask'], (t, o) => this.attentionWith(k, v, t, o));
  };
  /**
   * `op` ('add', 'mul', 'minimum' or 'maximum') over this tensor and every one of `others`,
   * all broadcast together: ONNX's Sum, Max and Min. One binary launch per other tensor; the
   * intermediate results are freed. The other binary ops are refused: their order matters.
   */
  for (const [method, op] of Object.entries(UNARY_METHODS)) {
    Tensor.prototype[method] = function unaryMethod() {
      return this.unary(op);
    };
  }
  for (const op of ['minimum', 'maximum', 'pow']) {
    Tensor.prototype[op] = function binaryMethod(other, options) {
      return this.binary(op, other, options);
    };
  }
  for (const op of REDUCE_METHODS) {
    /** `op` over `{ axis, keepDims }`: every axis by default, one, or an array of them. */
    Tensor.prototype[op] = function reduceMethod(options) {
      if (options !== undefined && (options === null || typeof options !== 'object')) throw invalid(`${op}: options are ${options === null ? 'null' : typeof options}: expected { axis, keepDims }`);
      return reduceBy(this, op, options);
    };
  }
  for (const [name, min] of [['argmax', false], ['argmin', true]]) {
    /** The index of the extreme along `{ axis, keepDims, last }`. */
    Tensor.prototype[name] = function argMethod(options) {
      if (options !== undefined && (options === null || typeof options !== 'object')) throw invalid(`${name}: options are ${options === null ? 'null' : typeof options}: expected { axis, keepDims, last }`);
      return argBy(this, min, options);
    };
  }
  /** The f16 elements as a `Float16Array`, where the runtime has that type. */
  Tensor.prototype.readFloat16 = async function readFloat16() {
    if (typeof globalThis.Float16Array !== 'function') throw Object.assign(new Error('readFloat16: this runtime has no Float16Array: use read16() for the bits as a Uint16Array'), { code: 'UNSUPPORTED' });
    if (this.dtype !== 'f16') throw Object.assign(new Error(`readFloat16: the tensor is ${this.dtype}: expected f16`), { code: 'DTYPE' });
    const bits = await this.read16();
    return new globalThis.Float16Array(bits.buffer, bits.byteOffset, bits.length);
  };
  Tensor.prototype.nary = function nary(op, others) {
    if (!['add', 'mul', 'minimum', 'maximum'].includes(op)) {
      const e = new Error(`nary: \`${op}\` (the order of its inputs would matter): expected add, mul, minimum or maximum`);
      e.code = 'INVALID';
      throw e;
    }
    let acc = this.reshape(Array.from(this.shape));
    for (const t of others) {
      const next = acc.binary(op, t);
      acc.free();
      acc = next;
    }
    return acc;
  };
}

/** The unary ops that become methods of their own (`x.exp()`), by method name. */
const UNARY_METHODS = { neg: 'neg', abs: 'abs', exp: 'exp', log: 'log', sqrt: 'sqrt', rsqrt: 'rsqrt', sin: 'sin', cos: 'cos', tanh: 'tanh', sigmoid: 'sigmoid', gelu: 'gelu', geluTanh: 'gelu_tanh', silu: 'silu', erf: 'erf' };
/** The reductions that become methods taking `{ axis, keepDims }`. */
const REDUCE_METHODS = ['sum', 'mean', 'max', 'min'];

/** An `INVALID` error saying what was wrong and what was expected. */
const invalid = (message) => Object.assign(new Error(message), { code: 'INVALID' });

/** Refuse keys of `options` outside `allowed` (a misspelt key would change the answer). */
function onlyKeys(method, options, allowed) {
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) throw invalid(`${method}: unknown option \`${key}\`: expected one of ${allowed.join(', ')}`);
  }
}

/** Refuse an axis that is not a whole number (`'1'`, 1.5), or with `many` an array of them. */
function checkAxis(method, axis, many) {
  const whole = (a) => typeof a === 'number' && Number.isInteger(a);
  if (axis === undefined || whole(axis) || (many && Array.isArray(axis) && axis.every(whole))) return;
  const say = (a) => (typeof a === 'number' ? String(a) : typeof a);
  const got = Array.isArray(axis) ? `[${axis.map(say).join(', ')}]` : say(axis);
  throw invalid(`${method}: axis is ${got}: expected a whole number${many ? ' or an array of them' : ''}`);
}

/**
 * `op` over `axis` of `t`: every axis when it is undefined, one axis (a number) or several
 * (an array); `keepDims` keeps each reduced axis with extent 1; `emptyIdentity` makes the max
 * and min of nothing −inf and +inf (ONNX) instead of an error (numpy).
 */
function reduceBy(t, op, options = {}) {
  onlyKeys(op, options, ['axis', 'keepDims', 'emptyIdentity']);
  const { axis, keepDims = false, emptyIdentity = false } = options;
  checkAxis(op, axis, true);
  if (typeof keepDims !== 'boolean') throw invalid(`${op}: keepDims is ${typeof keepDims}: expected a boolean`);
  if (typeof emptyIdentity !== 'boolean') throw invalid(`${op}: emptyIdentity is ${typeof emptyIdentity}: expected a boolean`);
  const axes = axis === undefined ? Array.from(t.shape, (_, i) => i) : Array.isArray(axis) ? axis : [axis];
  if (emptyIdentity) return t.reduceAxes(op, axes, keepDims, true);
  if (axes.length === 1 && !keepDims && axis !== undefined) return t.reduce(op, axes[0]);
  if (axis === undefined && !keepDims) return t.reduce(op);
  return t.reduceAxes(op, axes, keepDims);
}

/**
 * `argmax` (or, `min`, `argmin`) of `t` along `axis` (one axis; by default every axis, the
 * tensor flattened first, as numpy does), the first of equal elements or with `last` the last;
 * `keepDims` keeps the axis with extent 1.
 */
function argBy(t, min, options = {}) {
  const name = min ? 'argmin' : 'argmax';
  onlyKeys(name, options, ['axis', 'keepDims', 'last']);
  const { axis, keepDims = false, last = false } = options;
  if (Array.isArray(axis)) throw invalid(`${name}: axis is an array: expected one axis (a number), or none for every axis`);
  checkAxis(name, axis, false);
  if (typeof keepDims !== 'boolean' || typeof last !== 'boolean') throw invalid(`${name}: keepDims and last must be booleans`);
  if (axis === undefined) {
    const flat = t.reshape([t.shape.reduce((a, b) => a * b, 1)]);
    const index = flat.argReduce(0, min, last);
    flat.free();
    return keepDims ? index.reshape(Array.from(t.shape, () => 1)) : index;
  }
  const index = t.argReduce(axis, min, last);
  if (!keepDims) return index;
  const shape = Array.from(t.shape);
  shape[axis < 0 ? axis + shape.length : axis] = 1;
  return index.reshape(shape);
}

/** The tensors a scope keeps: `value` itself, or those inside arrays and plain objects. */
function keptTensors(Tensor, value, out = new Set()) {
  if (value instanceof Tensor) out.add(value);
  else if (Array.isArray(value)) value.forEach((v) => keptTensors(Tensor, v, out));
  else if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) Object.values(value).forEach((v) => keptTensors(Tensor, v, out));
  return out;
}

/**
 * Ownership over the generated classes: `dispose()` (idempotent `free()`) on each, and
 * `device.scope(fn)`, which frees every tensor of that device made while `fn` runs except
 * those it returns. Every method that makes tensors or buffers (of tensors, devices and
 * buffers) is wrapped to note the device on its result and to register a tensor with the
 * innermost scope of its device.
 */
function patchOwnership({ Buffer, Device, Fence, Graph, Kernel, Profile, Queue, Tensor }) {
  for (const C of [Buffer, Device, Fence, Graph, Kernel, Profile, Queue, Tensor]) {
    /** Free the wasm memory now (again: nothing). */
    C.prototype.dispose = function dispose() {
      if (this.__wbg_ptr !== 0) this.free();
    };
    if (typeof Symbol.dispose === 'symbol') C.prototype[Symbol.dispose] = C.prototype.dispose;
  }
  // Open scopes, innermost last: { device, made }.
  const scopes = [];
  const DEVICE = Symbol('unicompute device');
  // The innermost scope of `t`'s device (of any device for a tensor of unknown device).
  const scopeOf = (t) => scopes.findLast((s) => t[DEVICE] === undefined || s.device === t[DEVICE]);
  const track = (value, device) => {
    for (const t of Array.isArray(value) ? value : [value]) {
      if (!(t instanceof Tensor || t instanceof Buffer)) continue;
      if (device !== undefined && t[DEVICE] === undefined) t[DEVICE] = device;
      if (t instanceof Tensor) scopeOf(t)?.made.add(t);
    }
    return value;
  };
  const wrap = (proto, name, deviceOf) => {
    const f = proto[name];
    proto[name] = function tracked(...args) {
      return track(f.apply(this, args), deviceOf(this));
    };
  };
  const skip = ['constructor', 'free', 'dispose', 'read', 'readInto', 'read16', 'scope'];
  for (const [C, deviceOf] of [[Tensor, (t) => t[DEVICE]], [Buffer, (b) => b[DEVICE]], [Device, (d) => d]]) {
    for (const name of Object.getOwnPropertyNames(C.prototype)) {
      const d = Object.getOwnPropertyDescriptor(C.prototype, name);
      if (typeof d.value === 'function' && !skip.includes(name)) wrap(C.prototype, name, deviceOf);
    }
  }
  /**
   * Run `fn` (synchronous: as TF.js's `tidy`, a scope cannot span an await) and free every
   * tensor of this device it made except the ones it returns (a tensor, or tensors in arrays
   * and plain objects), which pass to the enclosing scope of the device if there is one.
   */
  Device.prototype.scope = function scope(fn) {
    if (typeof fn !== 'function') throw invalid(`scope: got ${typeof fn}: expected a function`);
    const made = new Set();
    scopes.push({ device: this, made });
    let result;
    try {
      result = fn();
    } finally {
      scopes.splice(scopes.findLastIndex((s) => s.made === made), 1);
      const keep = result instanceof Promise ? new Set() : keptTensors(Tensor, result);
      for (const t of made) if (!keep.has(t)) t.dispose();
      for (const t of keep) track(t);
    }
    if (result instanceof Promise) throw invalid('scope: the function returned a Promise: a scope frees its tensors when the function returns, so it must be synchronous (read results after the scope)');
    return result;
  };
}

/** Whether this runs in Node (the wasm is read from the file, not fetched). */
const inNode = typeof process !== 'undefined' && !!process.versions?.node;

/**
 * What wasm-bindgen's loader takes for `source`: a `WebAssembly.Module`, bytes (an
 * `ArrayBuffer`, a typed array or a `Response`) or a promise of one go through; a URL or a
 * string is fetched (in Node, a `file:` URL or a path is read from disk). Anything else is an
 * `INVALID` error naming what was expected.
 */
async function wasmInput(source) {
  source = await source;
  const bytes = source instanceof ArrayBuffer || ArrayBuffer.isView(source) || (typeof Response !== 'undefined' && source instanceof Response);
  if (source instanceof WebAssembly.Module || bytes) return source;
  if (!(source instanceof URL || typeof source === 'string')) {
    const what = source === null ? 'null' : typeof source;
    throw Object.assign(new Error(`init: wasm is ${what}: expected a URL, a string URL, bytes (ArrayBuffer or typed array), a Response or a WebAssembly.Module`), { code: 'INVALID' });
  }
  if (!inNode) return source;
  const url = source instanceof URL ? source : new URL(source, `file://${process.cwd()}/`);
  if (url.protocol !== 'file:') return url;
  // Named through a variable so bundlers leave this Node-only import alone.
  const fsModule = 'node:fs/promises';
  const { readFile } = await import(/* @vite-ignore */ /* webpackIgnore: true */ fsModule);
  return readFile(url);
}

/** The pool's Web Workers, kept referenced for as long as the page lives. */
let workers = [];

/**
 * Start the CPU backend's pool of `n` threads: this one (worker 0: it computes the ops it
 * records) and `n - 1` module Web Workers (`worker`'s URL) that load `glue` (the threads
 * build's JS) on this module's shared memory and run the pool's other workers.
 */
async function startThreads(wasm, n, { glue, worker }) {
  const [module, memory] = wasm.threadShare();
  const spawn = () =>
    new Promise((resolve, reject) => {
      const w = new Worker(worker, { type: 'module' });
      w.onmessage = ({ data }) => (data.ready ? resolve(w) : reject(new Error(`a CPU backend thread failed to start: ${data.error}`)));
      w.onerror = (e) => reject(new Error(`a CPU backend thread failed to start: ${e.message}`));
      w.postMessage({ glue, module, memory });
    });
  workers = await Promise.all(Array.from({ length: n - 1 }, spawn));
  wasm.buildThreadPool(n);
}

/**
 * The API over `wasm`, the wasm-bindgen module whose binary is at `wasmUrl`: `{ init,
 * listDevices }`. With `threads` (`{ glue, worker }`: the URLs of the threads build's JS and
 * of worker.js), loading also starts the CPU backend's thread pool (of `init`'s `threads`, by
 * default one per logical core).
 */
export function bind(wasm, wasmUrl, threads = undefined) {
  patch(wasm);
  patchOperands(wasm);
  patchOwnership(wasm);
  let loading;
  const load = (count, source) => {
    loading ??= (async () => {
      await wasm.default({ module_or_path: await wasmInput(source ?? wasmUrl) });
      if (threads) {
        try {
          await startThreads(wasm, count ?? globalThis.navigator?.hardwareConcurrency ?? 1, threads);
        } catch (e) {
          // Without its pool the threads build runs every kernel on this thread (rayon's
          // fallback), as the one-thread build does; `device.info().threads` says 1.
          console.warn(`unicompute: the CPU backend runs on one thread: ${e.message}`);
        }
      }
    })();
    return loading;
  };

  /** Every device this runtime offers, as info objects: the CPU, then WebGPU if available. */
  async function listDevices() {
    await load();
    return wasm.listDevices();
  }

  /**
   * Open a device: 'auto' (a hardware WebGPU adapter; with a software adapter such as
   * SwiftShader, whichever of WebGPU and the CPU backend inside the wasm runs the heavy ops
   * faster, timed once; without WebGPU the CPU; `device.selectionReason` says why), 'webgpu' or
   * 'cpu'. Or an object `{ backend, policy, threads, wasm }`: a policy object or JSON (see the
   * README: backend order and selection, matmul precision, kernel variants, fallback) instead
   * of `backend`; with `unicompute/threads`, the CPU backend's thread count; and where the
   * wasm lives, for bundlers that do not copy it next to the module (a URL, bytes or a
   * compiled `WebAssembly.Module`; see `wasmInput`). Both are fixed by the first call that
   * loads the wasm.
   */
  async function init(choice = 'auto') {
    const options = choice !== null && typeof choice === 'object' ? choice : { backend: choice };
    onlyKeys('init', options, ['backend', 'policy', 'threads', 'wasm', 'gpuDevice']);
    const backend = options.backend;
    if (backend !== undefined && typeof backend !== 'string') {
      throw invalid(`init: backend is ${backend === null ? 'null' : typeof backend}: expected 'auto', 'webgpu' or 'cpu'`);
    }
    const n = options.threads;
    if (n !== undefined && !(Number.isInteger(n) && n >= 1)) {
      throw Object.assign(new Error(`init: threads is ${n}: expected a whole number of at least 1`), { code: 'INVALID' });
    }
    if (options.gpuDevice !== undefined) checkAdoptable(options);
    try {
      await load(n, options.wasm);
    } catch (e) {
      loading = undefined; // a later call may try again (with another `wasm`)
      throw e;
    }
    if (options.gpuDevice !== undefined) return adopt(options.gpuDevice, () => wasm.openDevice('webgpu'));
    // Both given: the wasm refuses with INVALID, rather than one being ignored.
    if (options.policy !== undefined) return wasm.openDevice(options.backend, options.policy);
    return wasm.openDevice(options.backend ?? 'auto');
  }

  return { init, listDevices };
}
