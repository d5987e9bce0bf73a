// The JS layer over one wasm-bindgen build of unicompute, shared by the package's entries:
// `unicompute` (index.js: one thread) and `unicompute/threads` (threads.js: the CPU backend on
// Web Workers). `bind` loads the wasm on first use and adds what the generated classes lack:
// options objects, ownership (dispose, scopes, a live-tensor count), `UnicomputeError` for
// every failure, camelCase records, frozen shapes, and printing.

import { adopt, checkAdoptable } from './adopt.js';

/**
 * What every throw and rejection of the package is: `code` (an `ErrorCode`: 'SHAPE', 'DTYPE',
 * 'INVALID', ...) says what kind of failure, the message what was wrong and what was expected.
 */
export class UnicomputeError extends Error {
  /** An error of kind `code` saying `message`; `options.cause` as `Error`'s. */
  constructor(message, code, options) {
    super(message, options);
    this.code = code;
  }
}
Object.defineProperty(UnicomputeError.prototype, 'name', { value: 'UnicomputeError', configurable: true, writable: true });

/** An `INVALID` error saying what was wrong and what was expected. */
export const invalid = (message) => new UnicomputeError(message, 'INVALID');

/** A value as a message names it: `number 2`, `string "f32"`, `null`, `a Tensor`. */
function what(value) {
  if (value === null || value === undefined) return String(value);
  const name = value.constructor?.name;
  if (typeof value === 'object' || typeof value === 'function') return name && name !== 'Object' ? `a ${name}` : typeof value;
  return `${typeof value} ${JSON.stringify(String(value))}`.replace(/^(number|boolean|bigint) "(.*)"$/, '$1 $2');
}

/** Hidden internals on the generated prototypes: the raw wasm calls the public methods wrap. */
const RAW = Symbol('unicompute raw methods');
/** The device a tensor or buffer belongs to. */
const DEVICE = Symbol('unicompute device');
/** A device's open scopes (innermost last) and its live-tensor counter; a tensor's counter. */
const SCOPES = Symbol('unicompute scopes');
const COUNTER = Symbol('unicompute live tensors');
const COUNTED = Symbol('unicompute counted');
/** Reads in flight of a tensor or buffer, and whether it was disposed meanwhile. */
const READS = Symbol('unicompute reads in flight');
const DISPOSED = Symbol('unicompute disposed');
/** Whether `o` is a disposed object of the package (freed, or to be freed after its reads). */
const disposed = (o) => o?.__wbg_ptr === 0 || o?.[DISPOSED] === true;
/** A tensor's shape as a frozen array, made once. */
const SHAPE = Symbol('unicompute shape');

/** Tensors the garbage collector took: each lowers its device's live count. */
const collected = typeof FinalizationRegistry === 'function' ? new FinalizationRegistry((counter) => counter.n--) : { register() {}, unregister() {} };

/**
 * `e` (thrown or rejected by `method`, called with `args`) as a `UnicomputeError`: the
 * library's errors carry a `code` already; wasm-bindgen's own ("null pointer passed to rust",
 * "expected instance of Tensor", a borrowed value) become `INVALID` ones that say what to do,
 * and a trap of the wasm (a bug of the library) `INTERNAL`.
 */
export function toError(e, method, args = []) {
  if (e instanceof UnicomputeError) return e;
  if (e instanceof Error && typeof e.code === 'string') {
    e.message = e.message.replace(RUST_NAME, (_, head, name) => head + toCamel(name));
    return Object.setPrototypeOf(e, UnicomputeError.prototype);
  }
  const message = String(e?.message ?? e);
  const cause = { cause: e };
  if (/null pointer passed to rust/.test(message)) return new UnicomputeError(`${method}: an argument was disposed: expected live objects (dispose() them after their last use)`, 'INVALID', cause);
  const klass = /^expected instance of (\w+)$/.exec(message)?.[1];
  if (klass) {
    const got = args.find((a) => a !== undefined && typeof a !== 'string' && !(typeof a === 'object' && a?.__wbg_ptr !== undefined));
    return new UnicomputeError(`${method}: got ${what(got)}: expected a ${klass}`, 'INVALID', cause);
  }
  if (/borrowed|recursive use of an object/.test(message)) return new UnicomputeError(`${method}: the object is in use by a call still running: expected it free (wait for that call)`, 'INVALID', cause);
  if (e instanceof WebAssembly.RuntimeError) return new UnicomputeError(`${method}: internal error (a bug of unicompute, please report it): ${message}`, 'INTERNAL', cause);
  return new UnicomputeError(`${method}: ${message}`, 'INVALID', cause);
}

/** A Rust name in the library's messages (`shape mismatch in broadcast_to`, `the device limit max_buffer_size`). */
const RUST_NAME = /^((?:shape|dtype) mismatch in |.* the device limit )([a-z0-9]+(?:_[a-z0-9]+)+)/;
/** `broadcast_to` as JS spells it: `broadcastTo`. */
const toCamel = (name) => name.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());

/** `C.name` as a message starts: `Tensor`, `Device`. */
const className = (self) => self?.constructor?.name ?? 'object';

/**
 * `f` (the method `name` of a generated class) with every failure a `UnicomputeError`: a call
 * on a disposed object or with one is refused first, and `after(result, self)` runs on a
 * success (for a promise, on what it resolves to). Errors thrown by callbacks passed in (a
 * scope's or a capture's function) go through unchanged.
 */
function guarded(name, f, after) {
  return function guardedMethod(...args) {
    const method = `${className(this)}.${name}`;
    if (disposed(this)) throw invalid(`${method}: the ${className(this)} was disposed: expected one that is not (dispose() after the last use)`);
    const i = args.findIndex(disposed);
    if (i >= 0) throw invalid(`${method}: argument ${i + 1} (${what(args[i])}) was disposed: expected a live one`);
    let theirs; // errors the callbacks passed in threw
    const passed = !args.some((a) => typeof a === 'function')
      ? args
      : args.map((a) =>
          typeof a !== 'function'
            ? a
            : function callback(...inner) {
                try {
                  return a.apply(this, inner);
                } catch (e) {
                  (theirs ??= new Set()).add(e);
                  throw e;
                }
              },
        );
    let result;
    try {
      result = f.apply(this, passed);
    } catch (e) {
      throw theirs?.has(e) ? e : toError(e, method, args);
    }
    if (result instanceof Promise) {
      return result.then(
        (value) => (after ? after(value, this) : value),
        (e) => {
          throw toError(e, method, args);
        },
      );
    }
    return after ? after(result, this) : result;
  };
}

/** `value` with the Rust field names (`times_us`) as JS names (`timesUs`); records by name (`timesUs`, `variants`) keep their keys. */
function camel(value) {
  if (Array.isArray(value)) return value.map(camel);
  if (value === null || typeof value !== 'object') return value;
  const entries = Object.entries(value).map(([k, v]) => [toCamel(k), k === 'times_us' || k === 'variants' ? v : camel(v)]);
  return Object.fromEntries(entries);
}

/** A policy object's JS names (`tuneCache`, `cacheLimitBytes`) as the Rust ones; snake_case keys stay. */
function snake(value) {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const entries = Object.entries(value).map(([k, v]) => [k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`), k === 'variants' ? v : snake(v)]);
  return Object.fromEntries(entries);
}

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

/** Move the generated methods `names` of `proto` under `proto[RAW]`, off the public class. */
function hide(proto, names) {
  const raw = proto[RAW] ?? {};
  for (const name of names) {
    raw[name] = proto[name];
    delete proto[name];
  }
  Object.defineProperty(proto, RAW, { value: raw, configurable: true });
  return raw;
}

/** A dtype given as a name or as `{ dtype, ...more }` (the keys `more` returned too). */
function dtypeOption(method, options, more = []) {
  if (options === undefined || options === null) return {};
  if (typeof options === 'string') return { dtype: options };
  if (typeof options !== 'object') throw invalid(`${method}: options are ${what(options)}: expected a dtype name or { ${['dtype', ...more].join(', ')} }`);
  onlyKeys(method, options, ['dtype', ...more]);
  if (options.dtype !== undefined && typeof options.dtype !== 'string') throw invalid(`${method}: dtype is ${what(options.dtype)}: expected a dtype name such as 'float32'`);
  return options;
}

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
  const raw = hide(Tensor.prototype, ['binaryScalar', 'concatWith']);
  const operand = (op, other) => {
    if (!(other instanceof Tensor)) throw invalid(`${op}: the operand is ${what(other)}: expected a Tensor or a number`);
  };
  for (const op of ['add', 'sub', 'mul', 'div']) {
    const byTensor = Tensor.prototype[op];
    Tensor.prototype[op] = function binaryOperand(other, options) {
      if (typeof other === 'number') return raw.binaryScalar.call(this, op, other, options);
      operand(op, other);
      return byTensor.call(this, other, options);
    };
  }
  const binary = Tensor.prototype.binary;
  Tensor.prototype.binary = function binaryByName(op, other, options) {
    if (typeof other === 'number') return raw.binaryScalar.call(this, op, other, options);
    operand(op, other);
    return binary.call(this, op, other, options);
  };
  /** This tensor and `others` (a Tensor or an array of them) joined along `axis` (0 by default; negative counts from the end). */
  Tensor.prototype.concat = function concat(others, axis = 0) {
    const list = Array.isArray(others) ? others : [others];
    return withTensorList({ Tensor, TensorArgs }, 'concat', list, (l) => raw.concatWith.call(this, l, axis));
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
function patch({ BindingList, Buffer, Device, Kernel, Queue, Tensor, TensorArgs }) {
  const args = (method, options, names, call) => withTensors({ Tensor, TensorArgs }, method, options, names, call);
  const tensorRaw = hide(Tensor.prototype, ['__conv2d', '__convTranspose2d', '__linear', '__layerNorm', '__rmsNorm', '__attention', '__reduce', '__argReduce', 'softmax', 'logSoftmax']);
  const queueRaw = hide(Queue.prototype, ['__launch']);
  const deviceRaw = hide(Device.prototype, ['tensor', 'zeros', 'tensorFromGPUBuffer']);
  /**
   * Record a launch of `kernel` over `workgroups` ([x, y, z]) with one binding per entry of
   * `bindings`: a Buffer, or a Tensor (f32, i32, u32), bound in place when contiguous.
   */
  Queue.prototype.launch = function launch(kernel, bindings, workgroups) {
    if (!Array.isArray(bindings)) throw invalid(`launch: bindings are ${what(bindings)}: expected an array of Buffers and Tensors`);
    const list = new BindingList();
    const views = [];
    try {
      bindings.forEach((b, i) => {
        if (b instanceof Tensor) views.push((b = b.toBuffer()));
        else if (!(b instanceof Buffer)) throw invalid(`launch: binding ${i} is ${what(b)}: expected a Buffer or a Tensor`);
        if (disposed(b)) throw invalid(`launch: binding ${i} was disposed: expected a live Buffer or Tensor`);
        list.push(b);
      });
      queueRaw.__launch.call(this, kernel, list, workgroups);
    } finally {
      list.free();
      views.forEach((v) => v.free());
    }
  };
  /** `conv2d(weight, { stride, padding, dilation, groups, bias, activation })`. */
  Tensor.prototype.conv2d = function conv2d(weight, options) {
    return args('conv2d', options, ['bias'], (t, o) => tensorRaw.__conv2d.call(this, weight, t, o));
  };
  /** `convTranspose2d(weight, { stride, padding, outputPadding, dilation, groups, bias, activation })`. */
  Tensor.prototype.convTranspose2d = function convTranspose2d(weight, options) {
    return args('convTranspose2d', options, ['bias'], (t, o) => tensorRaw.__convTranspose2d.call(this, weight, t, o));
  };
  /** `linear(weight, { bias, activation })`: `activation(this @ weight + bias)` in one kernel. */
  Tensor.prototype.linear = function linear(weight, options) {
    return args('linear', options, ['bias'], (t, o) => tensorRaw.__linear.call(this, weight, t, o));
  };
  /** `layerNorm({ weight, bias, eps, activation, axes })` over the last `axes` axes. */
  Tensor.prototype.layerNorm = function layerNorm(options) {
    return args('layerNorm', options, ['weight', 'bias'], (t, o) => tensorRaw.__layerNorm.call(this, t, o));
  };
  /** `rmsNorm({ weight, eps, activation, axes })` over the last `axes` axes. */
  Tensor.prototype.rmsNorm = function rmsNorm(options) {
    return args('rmsNorm', options, ['weight'], (t, o) => tensorRaw.__rmsNorm.call(this, t, o));
  };
  /** `attention(k, v, { causal, scale, mask })` with this tensor as the queries. */
  Tensor.prototype.attention = function attention(k, v, options) {
    return args('attention', options, ['mask'], (t, o) => tensorRaw.__attention.call(this, k, v, t, o));
  };
  for (const name of ['softmax', 'logSoftmax']) {
    /** Softmax (or its log) over `{ axis }` (the last by default); a number is the axis. */
    Tensor.prototype[name] = function softmaxMethod(options) {
      if (options !== null && typeof options === 'object') {
        onlyKeys(name, options, ['axis']);
        options = options.axis;
      }
      if (options !== undefined) checkAxis(name, options, false);
      return tensorRaw[name].call(this, options);
    };
  }
  /** `device.tensor(data, shape, dtype | { dtype })`. */
  Device.prototype.tensor = function tensor(data, shape, options) {
    return deviceRaw.tensor.call(this, data, shape, dtypeOption('tensor', options).dtype);
  };
  /** `device.zeros(shape, dtype | { dtype })`. */
  Device.prototype.zeros = function zeros(shape, options) {
    return deviceRaw.zeros.call(this, shape, dtypeOption('zeros', options).dtype);
  };
  /** `device.tensorFromGPUBuffer(buffer, shape, { dtype, byteOffset })` (or `dtype, byteOffset`). */
  Device.prototype.tensorFromGPUBuffer = function tensorFromGPUBuffer(buffer, shape, options, byteOffset) {
    const o = dtypeOption('tensorFromGPUBuffer', options, ['byteOffset']);
    return deviceRaw.tensorFromGPUBuffer.call(this, buffer, shape, o.dtype, o.byteOffset ?? byteOffset);
  };
  /** A reduction by name over `{ axis, keepDims, emptyIdentity }` (or a number: the axis). */
  Tensor.prototype.reduce = function reduce(op, options) {
    return reduceBy(this, op, typeof options === 'number' ? { axis: options } : options);
  };
  for (const [name, min] of [['argmax', false], ['argmin', true]]) {
    /** The index of the extreme along `{ axis, keepDims, last }`. */
    Tensor.prototype[name] = function argMethod(options) {
      if (options !== undefined && (options === null || typeof options !== 'object')) throw invalid(`${name}: options are ${options === null ? 'null' : typeof options}: expected { axis, keepDims, last }`);
      return argBy(this, min, options);
    };
  }
  /** The f16 elements as a `Float16Array`, where the runtime has that type. */
  Tensor.prototype.readFloat16 = async function readFloat16() {
    if (typeof globalThis.Float16Array !== 'function') throw new UnicomputeError('readFloat16: this runtime has no Float16Array: use read16() for the bits as a Uint16Array', 'UNSUPPORTED');
    if (this.dtype !== 'f16') throw new UnicomputeError(`readFloat16: the tensor is ${this.dtype}: expected f16`, 'DTYPE');
    const bits = await this.read16();
    return new globalThis.Float16Array(bits.buffer, bits.byteOffset, bits.length);
  };
  /**
   * `op` ('add', 'mul', 'minimum' or 'maximum') over this tensor and every one of `others`,
   * all broadcast together: ONNX's Sum, Max and Min. One binary launch per other tensor; the
   * intermediate results are freed. The other binary ops are refused: their order matters.
   */
  Tensor.prototype.nary = function nary(op, others) {
    if (!['add', 'mul', 'minimum', 'maximum'].includes(op)) {
      throw invalid(`nary: \`${op}\` (the order of its inputs would matter): expected add, mul, minimum or maximum`);
    }
    let acc = this.reshape(Array.from(this.shape));
    for (const t of others) {
      const next = acc.binary(op, t);
      acc.free();
      acc = next;
    }
    return acc;
  };
  frozenArray(Tensor.prototype, 'shape', SHAPE);
  frozenArray(Kernel.prototype, 'workgroupSize');
}

/** The getter `name` of `proto` returning a frozen `number[]` (kept under `cache`, if given). */
function frozenArray(proto, name, cache) {
  const get = Object.getOwnPropertyDescriptor(proto, name).get;
  const make = (self) => Object.freeze(Array.from(get.call(self)));
  Object.defineProperty(proto, name, {
    configurable: true,
    get: cache ? function cached() { return (this[cache] ??= make(this)); } : function fresh() { return make(this); },
  });
}

/**
 * The methods of the op tables (`wasm.opMethods()`: family, method and op name in turn) that
 * the classes lack: `x.geluTanh()`, `x.minimum(y, options)`, `x.sum({ axis, keepDims })`.
 * Called once the wasm has loaded; each calls a wrapped method, so scopes see its result.
 */
function patchOps({ Tensor, opMethods }) {
  const made = {
    unary: (op) => function unaryMethod() {
      return this.unary(op);
    },
    binary: (op) => function binaryMethod(other, options) {
      return this.binary(op, other, options);
    },
    /** `op` over `{ axis, keepDims }`: every axis by default, one, or an array of them. */
    reduce: (op) => function reduceMethod(options) {
      if (options !== undefined && (options === null || typeof options !== 'object')) throw invalid(`${op}: options are ${options === null ? 'null' : typeof options}: expected { axis, keepDims }`);
      return reduceBy(this, op, options);
    },
  };
  const names = opMethods();
  for (let i = 0; i < names.length; i += 3) {
    const [family, method, op] = names.slice(i, i + 3);
    if (!(method in Tensor.prototype)) Tensor.prototype[method] = made[family](op);
  }
}

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
  const raw = t[RAW];
  const axes = axis === undefined ? Array.from(t.shape, (_, i) => i) : Array.isArray(axis) ? axis : [axis];
  if (emptyIdentity) return t.reduceAxes(op, axes, keepDims, true);
  if (axes.length === 1 && !keepDims && axis !== undefined) return raw.__reduce.call(t, op, axes[0]);
  if (axis === undefined && !keepDims) return raw.__reduce.call(t, op);
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
  const argReduce = (x, a) => t[RAW].__argReduce.call(x, a, min, last);
  const shape = Array.from(t.shape);
  let index;
  if (axis === undefined) {
    const flat = t.reshape([shape.reduce((a, b) => a * b, 1)]);
    index = argReduce(flat, 0);
    flat.free();
    shape.fill(1);
  } else {
    index = argReduce(t, axis);
    shape[axis < 0 ? axis + shape.length : axis] = 1;
  }
  if (!keepDims) return index;
  const kept = index.reshape(shape);
  index.free();
  return kept;
}

/** The tensors a scope keeps: `value` itself, or those inside arrays and plain objects. */
function keptTensors(Tensor, value, out = new Set()) {
  if (value instanceof Tensor) out.add(value);
  else if (Array.isArray(value)) value.forEach((v) => keptTensors(Tensor, v, out));
  else if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) Object.values(value).forEach((v) => keptTensors(Tensor, v, out));
  return out;
}

/** What some methods' results become in JS: records with camelCase keys. */
const RESULTS = {
  Device: { decisions: camel, tune: camel, policy: camel },
  Profile: { launches: camel, reads: camel, summary: camel },
};

/**
 * Ownership and errors over the generated classes: `dispose()` (idempotent `free()`) on each;
 * every method and getter guarded (`guarded`); every result that is a tensor or buffer noted
 * with its device, counted live until freed or collected (`device.memory().numTensors`), and
 * registered with the innermost open scope of its device (`device.scope(fn)`).
 */
function patchOwnership(wasm) {
  const { Tensor } = wasm;
  const classes = ['Buffer', 'Device', 'Fence', 'Graph', 'Kernel', 'Profile', 'Queue', 'Session', 'Tensor'];
  const track = (value, device) => {
    for (const t of Array.isArray(value) ? value : [value]) {
      if (!(t instanceof Tensor || t instanceof wasm.Buffer)) continue;
      if (device !== undefined && t[DEVICE] === undefined) t[DEVICE] = device;
      const d = t[DEVICE];
      if (!(t instanceof Tensor) || d === undefined) continue;
      if (!t[COUNTED]) {
        t[COUNTED] = d[COUNTER] ??= { n: 0 };
        t[COUNTED].n++;
        collected.register(t, t[COUNTED], t);
      }
      d[SCOPES]?.at(-1)?.add(t);
    }
    return value;
  };
  const skip = ['constructor', 'free', 'dispose', '__destroy_into_raw', 'scope'];
  deferFrees(wasm);
  // A session's runs give tensors of the device it was loaded on.
  const load = wasm.Session.load;
  wasm.Session.load = function loadOn(device, ...rest) {
    const session = load.call(this, device, ...rest);
    session[DEVICE] = device;
    return session;
  };
  for (const name of classes) {
    const C = wasm[name];
    const deviceOf = name === 'Device' ? (d) => d : (o) => o[DEVICE];
    for (const key of Object.getOwnPropertyNames(C.prototype)) {
      if (skip.includes(key)) continue;
      const d = Object.getOwnPropertyDescriptor(C.prototype, key);
      const convert = RESULTS[name]?.[key];
      const after = (result, self) => track(convert ? convert(result) : result, deviceOf(self));
      if (typeof d.value === 'function') d.value = guarded(key, d.value, after);
      else if (d.get) d.get = guarded(key, d.get, after);
      Object.defineProperty(C.prototype, key, d);
    }
    const free = C.prototype.free;
    /**
     * Free the wasm memory now, or once the reads in flight are done (TF.js's order: a read
     * started before `dispose()` finishes); the tensor no longer counts as live.
     */
    C.prototype.free = function freeNow() {
      if (this[COUNTED]) {
        this[COUNTED].n--;
        this[COUNTED] = undefined;
        collected.unregister(this);
      }
      if (this[READS] > 0) {
        this[DISPOSED] = true;
        return;
      }
      try {
        free.call(this);
      } catch (e) {
        throw toError(e, `${name}.free`);
      }
    };
    /** Free the wasm memory now (again: nothing). */
    C.prototype.dispose = function dispose() {
      if (!disposed(this)) this.free();
    };
    if (typeof Symbol.dispose === 'symbol') C.prototype[Symbol.dispose] = C.prototype.dispose;
  }
  patchDevice(wasm);
  /** `Tensor(f32, [2, 3])`: the dtype and shape (`String(t)`, `console.log(t)` in Node). */
  Tensor.prototype.toString = function toString() {
    return disposed(this) ? 'Tensor(disposed)' : `Tensor(${this.dtype}, [${this.shape.join(', ')}])`;
  };
  /** `Device(cpu, "wasm32 (1 thread)")`: the backend and name. */
  wasm.Device.prototype.toString = function toString() {
    return disposed(this) ? 'Device(disposed)' : `Device(${this.backend}, ${JSON.stringify(this.name)})`;
  };
  for (const C of [Tensor, wasm.Device]) C.prototype[Symbol.for('nodejs.util.inspect.custom')] = C.prototype.toString;
}

/**
 * The reads of tensors and buffers counted while in flight, so that `free()` meanwhile waits
 * for them (wasm-bindgen holds the object borrowed until an async method ends).
 */
function deferFrees({ Buffer, Tensor }) {
  for (const [C, names] of [[Tensor, ['read', 'read16', 'readInto']], [Buffer, ['read']]]) {
    for (const name of names) {
      const read = C.prototype[name];
      C.prototype[name] = function counted(...args) {
        const promise = read.apply(this, args);
        this[READS] = (this[READS] ?? 0) + 1;
        const done = () => {
          if (--this[READS] === 0 && this[DISPOSED]) C.prototype.free.call(this);
        };
        promise.then(done, done);
        return promise;
      };
    }
  }
}

/** `device.scope(fn)` and `device.memory()`. */
function patchDevice({ Device, Tensor }) {
  /**
   * Run `fn` (synchronous: as TF.js's `tidy`, a scope cannot span an await) and free every
   * tensor of this device it made, by any method, except the ones it returns (a tensor, or
   * tensors in arrays and plain objects), which pass to the enclosing scope of the device if
   * there is one. Each device has its own stack of scopes.
   */
  Device.prototype.scope = function scope(fn) {
    if (typeof fn !== 'function') throw invalid(`scope: got ${what(fn)}: expected a function`);
    const made = new Set();
    const scopes = (this[SCOPES] ??= []);
    scopes.push(made);
    let result;
    try {
      result = fn();
    } finally {
      scopes.splice(scopes.lastIndexOf(made), 1);
      const keep = result instanceof Promise ? new Set() : keptTensors(Tensor, result);
      for (const t of made) if (!keep.has(t)) t.dispose();
      for (const t of keep) scopes.at(-1)?.add(t);
    }
    if (result instanceof Promise) {
      result.catch(() => {}); // refused below: its own failure is not left unhandled
      throw invalid('scope: the function returned a Promise: a scope frees its tensors when the function returns, so it must be synchronous (read results after the scope)');
    }
    return result;
  };
  /**
   * The pool's statistics and `numTensors`, this device's tensors not yet disposed, freed by a
   * scope or collected (a leak shows as a count that grows), as `tf.memory()`.
   */
  Device.prototype.memory = function memory() {
    return { ...this.memoryStats(), numTensors: this[COUNTER]?.n ?? 0 };
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
    const got = source === null ? 'null' : typeof source;
    throw invalid(`init: wasm is ${got}: expected a URL, a string URL, bytes (ArrayBuffer or typed array), a Response or a WebAssembly.Module`);
  }
  return (await readLocal(source)) ?? (inNode ? new URL(source, `file://${process.cwd()}/`) : source);
}

/**
 * In Node, the bytes of `source` (a path, or a `file:` URL as a URL or string, relative to the
 * working directory) read from disk; otherwise (a browser, or another scheme) null: fetch it.
 */
export async function readLocal(source) {
  if (!inNode) return null;
  const url = source instanceof URL ? source : new URL(source, `file://${process.cwd()}/`);
  if (url.protocol !== 'file:') return null;
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

/** The generated modules already patched (both entries may load the one-thread build). */
const patched = new WeakSet();

/** `init`'s options, checked: contradictions are refused, naming both. */
function initOptions(choice) {
  const options = choice !== null && typeof choice === 'object' ? choice : { backend: choice };
  onlyKeys('init', options, ['backend', 'policy', 'threads', 'wasm', 'gpuDevice']);
  const { backend, policy, threads: n } = options;
  if (backend !== undefined && typeof backend !== 'string') {
    throw invalid(`init: backend is ${backend === null ? 'null' : typeof backend}: expected 'auto', 'webgpu' or 'cpu'`);
  }
  if (n !== undefined && !(Number.isInteger(n) && n >= 1)) throw invalid(`init: threads is ${n}: expected a whole number of at least 1`);
  if (options.gpuDevice !== undefined) checkAdoptable(options);
  if (backend !== undefined && policy !== undefined) {
    throw invalid(`init: backend ${JSON.stringify(backend)} and a policy given: give either a backend or a policy (whose \`backends\` list picks one), not both`);
  }
  return options;
}

/**
 * The API over `wasm`, the wasm-bindgen module whose binary is at `wasmUrl`: `{ init,
 * listDevices }`. `threads` is `{ glue, worker }` (the URLs of the threads build's JS and of
 * worker.js) where the CPU backend's pool can start, so loading starts it (of `init`'s
 * `threads`, by default one per logical core); otherwise a string saying why it cannot, which
 * a `threads` above 1 prints as a warning.
 */
export function bind(wasm, wasmUrl, threads) {
  if (!patched.has(wasm.Tensor)) {
    patched.add(wasm.Tensor);
    patch(wasm);
    patchOperands(wasm);
    patchOwnership(wasm);
  }
  let loading;
  let running = 1;
  const load = (count, source) => {
    loading ??= (async () => {
      await wasm.default({ module_or_path: await wasmInput(source ?? wasmUrl) });
      patchOps(wasm);
      if (typeof threads === 'string') {
        if (count > 1) console.warn(`unicompute: init asked for ${count} threads, but ${threads}: the CPU backend runs on one thread`);
        return;
      }
      try {
        running = count ?? globalThis.navigator?.hardwareConcurrency ?? 1;
        await startThreads(wasm, running, threads);
      } catch (e) {
        // Without its pool the threads build runs every kernel on this thread (rayon's
        // fallback), as the one-thread build does; `device.info().threads` says 1.
        running = 1;
        console.warn(`unicompute: the CPU backend runs on one thread: ${e.message}`);
      }
    })();
    return loading;
  };

  /** Every device this runtime offers, as info objects: the CPU, then WebGPU if available. */
  async function listDevices() {
    try {
      await load();
      return await wasm.listDevices();
    } catch (e) {
      throw toError(e, 'listDevices');
    }
  }

  /**
   * Open a device: 'auto' (a hardware WebGPU adapter; with a software adapter such as
   * SwiftShader, whichever of WebGPU and the CPU backend inside the wasm runs the heavy ops
   * faster, timed once; without WebGPU the CPU; `device.selectionReason` says why), 'webgpu' or
   * 'cpu'. Or an object `{ backend, policy, threads, wasm, gpuDevice }`: a policy (object or
   * JSON; see the book's docs/src/policy.md) instead of `backend`; with `unicompute/threads`,
   * the CPU backend's thread count; and where the wasm lives, for bundlers that do not copy it
   * next to the module (a URL, bytes or
   * a compiled `WebAssembly.Module`; see `wasmInput`). Both are fixed by the first call that
   * loads the wasm: a later `threads` other than the running count is refused. Quiet: it
   * prints nothing, except a warning when `threads` above 1 cannot be honoured.
   */
  async function init(choice = 'auto') {
    try {
      const options = initOptions(choice);
      const n = options.threads;
      const started = loading !== undefined;
      try {
        await load(n, options.wasm);
      } catch (e) {
        loading = undefined; // a later call may try again (with another `wasm`)
        throw e;
      }
      if (started && n !== undefined && typeof threads !== 'string' && n !== running) {
        throw invalid(`init: threads is ${n}, but the CPU backend already runs ${running} (fixed by the first init): leave out threads or give ${running}`);
      }
      if (options.gpuDevice !== undefined) return await adopt(options.gpuDevice, () => wasm.openDevice('webgpu'));
      const policy = options.policy !== null && typeof options.policy === 'object' ? snake(options.policy) : options.policy;
      if (policy !== undefined) return await wasm.openDevice(undefined, policy);
      return await wasm.openDevice(options.backend ?? 'auto');
    } catch (e) {
      throw toError(e, 'init');
    }
  }

  return { init, listDevices };
}
