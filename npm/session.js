// ONNX models the way onnxruntime-web runs them: `InferenceSession.create(model, options)`,
// `session.run(feeds)` with tensors shaped like onnxruntime-web's (`HostTensor`: type, data,
// dims), `session.release()`. Code written for onnxruntime-web runs after changing its import
// to `unicompute/ort` (ort.js). The model runs on a unicompute device (webgpu, or the CPU
// backend inside the wasm); outputs can stay there as unicompute Tensors.

import { UnicomputeError, invalid, readLocal, toError } from './api.js';

/** What a value is, for a message: `null`, `number`, or an object's class (`Float64Array`). */
const kindOf = (v) => (v === null ? 'null' : typeof v === 'object' ? v.constructor?.name ?? 'object' : typeof v);

/** The typed array each onnxruntime-web element type keeps its data in. */
const ARRAYS = {
  float32: Float32Array,
  float64: Float64Array,
  float16: Uint16Array,
  int8: Int8Array,
  uint8: Uint8Array,
  bool: Uint8Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int32: Int32Array,
  uint32: Uint32Array,
  int64: BigInt64Array,
  uint64: BigUint64Array,
};

/** The element type a typed array holds (onnxruntime-web's inference from data). */
function typeOfArray(data) {
  if (typeof Float16Array === 'function' && data instanceof Float16Array) return 'float16';
  if (data instanceof Uint8ClampedArray) return 'uint8';
  const entry = Object.entries(ARRAYS).find(([type, A]) => type !== 'bool' && data instanceof A);
  if (entry) return entry[0];
  if (Array.isArray(data)) {
    if (data.every((v) => typeof v === 'boolean')) return 'bool';
    if (data.every((v) => typeof v === 'bigint')) return 'int64';
    if (data.every((v) => typeof v === 'number')) return 'float32';
  }
  throw invalid(`HostTensor: data is ${kindOf(data)}: expected a typed array, or an array of numbers, bigints or booleans`);
}

/** `data` (a typed array or plain array) as the typed array of `type`. */
function arrayOf(type, data) {
  const A = ARRAYS[type];
  if (!A) throw invalid(`HostTensor: type ${JSON.stringify(type)}: expected one of ${Object.keys(ARRAYS).join(', ')}`);
  if (type === 'float16' && typeof Float16Array === 'function' && data instanceof Float16Array) {
    return new Uint16Array(data.buffer, data.byteOffset, data.length);
  }
  if (data instanceof A && !(type !== 'uint8' && type !== 'bool' && data instanceof Uint8ClampedArray)) return data;
  if (!Array.isArray(data)) {
    throw invalid(`HostTensor: ${type} data is ${kindOf(data)}: expected a ${A.name} or an array`);
  }
  if (type === 'bool') return Uint8Array.from(data, (v) => (v ? 1 : 0));
  if (type === 'int64' || type === 'uint64') return A.from(data, (v) => BigInt(v));
  if (type === 'float16') throw invalid('HostTensor: float16 data from a plain array: expected a Uint16Array of float16 bits or a Float16Array');
  return A.from(data);
}

/** `dims` checked: whole numbers that multiply to `length`. */
function dimsOf(dims, length) {
  if (dims === undefined) return Object.freeze([length]);
  if (!Array.isArray(dims) || !dims.every((d) => Number.isInteger(d) && d >= 0)) {
    throw invalid(`HostTensor: dims are ${JSON.stringify(dims)}: expected an array of whole numbers`);
  }
  const size = dims.reduce((a, b) => a * b, 1);
  if (size !== length) throw invalid(`HostTensor: dims [${dims.join(', ')}] hold ${size} elements, but the data has ${length}`);
  return Object.freeze([...dims]);
}

/**
 * A tensor in host memory, as onnxruntime-web's `Tensor`: `new HostTensor('float32', data,
 * [1, 3])` or `new HostTensor(data, dims)` (the type from the typed array). `type`, `data`,
 * `dims`, `size`, `location` ('cpu'), `getData()`, `reshape(dims)` and `dispose()`.
 */
export class HostTensor {
  #data;

  /** `(type, data, dims?)` or `(data, dims?)`; dims default to `[data.length]`. */
  constructor(typeOrData, dataOrDims, maybeDims) {
    const typed = typeof typeOrData === 'string';
    const type = typed ? typeOrData : typeOfArray(typeOrData);
    const data = arrayOf(type, typed ? dataOrDims : typeOrData);
    /** The element type, by onnxruntime-web's name ('float32', 'int64', 'bool'...). */
    this.type = type;
    /** The extents (frozen). */
    this.dims = dimsOf(typed ? maybeDims : dataOrDims, data.length);
    /** How many elements. */
    this.size = data.length;
    /** Where the data is: always in host memory ('cpu'). */
    this.location = 'cpu';
    this.#data = data;
  }

  /** The elements, row-major, as the type's typed array (float16 as its bits, a Uint16Array). */
  get data() {
    if (this.#data === undefined) throw invalid('HostTensor.data: the tensor was disposed: expected one that is not');
    return this.#data;
  }

  /** The data, as a promise (as onnxruntime-web's `getData()`). */
  async getData() {
    return this.data;
  }

  /** The same data with other `dims` (no copy). */
  reshape(dims) {
    return new HostTensor(this.type, this.data, dims);
  }

  /** Let go of the data: later reads of `data` are errors. */
  dispose() {
    this.#data = undefined;
  }

  /** `HostTensor(float32, [1, 3])`. */
  toString() {
    return `HostTensor(${this.type}, [${this.dims.join(', ')}])`;
  }
}

/** What `InferenceSession.create` takes besides onnxruntime-web's options it ignores. */
const OWN_OPTIONS = ['executionProviders', 'preferredOutputLocation', 'device', 'externalData', 'freeDimensionOverrides', 'f16Weights'];
/** onnxruntime-web's session options that change nothing here (tuning, logging, threads). */
const IGNORED_OPTIONS = [
  'intraOpNumThreads', 'interOpNumThreads', 'graphOptimizationLevel',
  'enableCpuMemArena', 'enableMemPattern', 'executionMode', 'optimizedModelFilePath',
  'enableProfiling', 'profileFilePrefix', 'logId', 'logSeverityLevel', 'logVerbosityLevel',
  'enableGraphCapture', 'extra',
];
/** onnxruntime-web's execution providers, as the unicompute backend that stands in for each. */
const PROVIDERS = { webgpu: 'webgpu', wasm: 'cpu', cpu: 'cpu' };
/** Providers onnxruntime-web knows that no backend here stands in for: skipped, as there. */
const ABSENT = ['webnn', 'webgl', 'xnnpack'];

/** `options` of `create`, checked: unknown keys are refused, naming the ones it takes. */
function sessionOptions(options = {}) {
  if (options === null || typeof options !== 'object') throw invalid(`InferenceSession.create: options are ${kindOf(options)}: expected an object`);
  const known = [...OWN_OPTIONS, ...IGNORED_OPTIONS];
  const unknown = Object.keys(options).filter((k) => !known.includes(k));
  if (unknown.length) throw invalid(`InferenceSession.create: unknown option ${unknown.map((k) => JSON.stringify(k)).join(', ')}: expected some of ${known.join(', ')}`);
  const where = options.preferredOutputLocation ?? 'cpu';
  if (where !== 'cpu' && where !== 'device') {
    throw invalid(`InferenceSession.create: preferredOutputLocation is ${JSON.stringify(where)}: expected 'cpu' (HostTensors) or 'device' (unicompute Tensors, which stay on the GPU; they have no onnxruntime-web 'gpu-buffer' shape)`);
  }
  if (options.f16Weights !== undefined && typeof options.f16Weights !== 'boolean') throw invalid(`InferenceSession.create: f16Weights is ${kindOf(options.f16Weights)}: expected true or false`);
  if (options.externalData?.length) throw new UnicomputeError('InferenceSession.create: externalData: models with external data files cannot be loaded in JS yet: expected the weights inside the .onnx file', 'UNSUPPORTED');
  return { ...options, preferredOutputLocation: where };
}

/** The backends to try, in order, for `executionProviders` (all of ours when none is given). */
function backendsOf(providers) {
  if (providers === undefined) return ['auto'];
  if (!Array.isArray(providers)) throw invalid('InferenceSession.create: executionProviders is not an array: expected names such as [\'webgpu\', \'wasm\']');
  const backends = [];
  for (const p of providers) {
    const name = typeof p === 'string' ? p : p?.name;
    if (PROVIDERS[name]) backends.push(PROVIDERS[name]);
    else if (!ABSENT.includes(name)) throw invalid(`InferenceSession.create: execution provider ${JSON.stringify(name)}: expected 'webgpu', 'wasm' or 'cpu' (${ABSENT.join(', ')} are skipped)`);
  }
  if (!backends.length) throw new UnicomputeError(`InferenceSession.create: none of the execution providers [${providers.map((p) => JSON.stringify(p?.name ?? p)).join(', ')}] runs here: expected 'webgpu', 'wasm' or 'cpu'`, 'NO_DEVICE');
  return [...new Set(backends)];
}

/** The model's bytes from a URL or path (fetched; in Node, a path or file: URL is read). */
async function fetchModel(source) {
  const local = await readLocal(source);
  if (local) return new Uint8Array(local);
  const response = await fetch(source);
  if (!response.ok) throw invalid(`InferenceSession.create: fetching ${source} gave HTTP ${response.status}: expected the .onnx file`);
  return new Uint8Array(await response.arrayBuffer());
}

/** The model's bytes from `create`'s first arguments, with the options that follow them. */
async function modelOf(args) {
  const [model, second, third, fourth] = args;
  if (typeof model === 'string' || model instanceof URL) return [await fetchModel(model), second];
  if (ArrayBuffer.isView(model)) return [new Uint8Array(model.buffer, model.byteOffset, model.byteLength), second];
  if (model instanceof ArrayBuffer || (typeof SharedArrayBuffer === 'function' && model instanceof SharedArrayBuffer)) {
    if (typeof second !== 'number') return [new Uint8Array(model), second];
    return [new Uint8Array(model, second, typeof third === 'number' ? third : undefined), typeof third === 'number' ? fourth : third];
  }
  throw invalid(`InferenceSession.create: the model is ${kindOf(model)}: expected a URL, a path, or the file's bytes (Uint8Array or ArrayBuffer)`);
}

/**
 * The `InferenceSession` class over `wasm` (a wasm-bindgen build whose classes `api.js` has
 * patched), opening devices with `init`: one device per backend, shared by the sessions.
 */
export function sessionClass(wasm, init) {
  const devices = new Map();
  const deviceFor = (backend) => {
    if (!devices.has(backend)) devices.set(backend, init(backend).catch((e) => { devices.delete(backend); throw e; }));
    return devices.get(backend);
  };
  const open = async (options) => {
    if (options.device !== undefined) {
      if (!(options.device instanceof wasm.Device)) throw invalid(`InferenceSession.create: device is ${kindOf(options.device)}: expected a unicompute Device`);
      return options.device;
    }
    const reasons = [];
    for (const backend of backendsOf(options.executionProviders)) {
      try {
        return await deviceFor(backend);
      } catch (e) {
        reasons.push(`${backend}: ${e.message}`);
      }
    }
    throw new UnicomputeError(`InferenceSession.create: no device opened (${reasons.join('; ')})`, 'NO_DEVICE');
  };
  return makeSessionClass(wasm, open);
}

/** `feeds` (name → HostTensor, onnxruntime-web Tensor or unicompute Tensor) as device tensors. */
function upload(wasm, device, feeds, made) {
  if (feeds === null || typeof feeds !== 'object') throw invalid(`InferenceSession.run: feeds are ${kindOf(feeds)}: expected an object of tensors by input name`);
  const args = new wasm.TensorArgs();
  try {
    for (const [name, value] of Object.entries(feeds)) {
      if (value instanceof wasm.Tensor) {
        args.set(name, value);
        continue;
      }
      const t = hostToDevice(device, name, value);
      made.push(t);
      args.set(name, t);
    }
    return args;
  } catch (e) {
    args.free();
    throw e;
  }
}

/** The unicompute dtype that holds each element type a feed may have. */
const DTYPES = { float32: 'f32', float64: 'f32', float16: 'f16', int32: 'i32', uint32: 'u32', int64: 'i64', bool: 'bool', uint8: 'uint8', int8: 'int8' };

/** One host feed (`value`: type, data, dims) on `device`; doubles are computed in f32. */
function hostToDevice(device, name, value) {
  if (value === null || typeof value !== 'object' || typeof value.type !== 'string' || !Array.isArray(value.dims) || value.data === undefined) {
    throw invalid(`InferenceSession.run: feeds[${JSON.stringify(name)}] is ${kindOf(value)}: expected a HostTensor (type, data, dims) or a unicompute Tensor`);
  }
  const { type, data, dims } = value;
  const dtype = DTYPES[type];
  if (!dtype) throw new UnicomputeError(`InferenceSession.run: feeds[${JSON.stringify(name)}] is ${type}: expected one of ${Object.keys(DTYPES).join(', ')}`, 'DTYPE');
  const elements = type === 'float64' ? Float32Array.from(data) : data;
  return device.tensor(elements, [...dims], { dtype });
}

/** A device output as a HostTensor of the model's declared `type` (by the tensor's dtype if none). */
async function download(t, type) {
  const dims = [...t.shape];
  if (type === 'float16') return new HostTensor('float16', await t.read16(), dims);
  const data = await t.read();
  if (type === 'float64') return new HostTensor('float64', Float64Array.from(data), dims);
  return new HostTensor(type ?? typeOfArray(data), data, dims);
}

/**
 * The outputs `run`'s second argument asks for: an array of names, or an object keyed by
 * output names (onnxruntime-web's fetches); any other object is run options, so every output.
 */
function fetched(fetches, outputs) {
  const byName = fetches !== null && typeof fetches === 'object' && !Array.isArray(fetches);
  if (fetches === undefined || fetches === null) return outputs;
  const keys = byName ? Object.keys(fetches) : [];
  if (byName && (!keys.length || !keys.every((k) => outputs.includes(k)))) return outputs;
  const names = Array.isArray(fetches) ? fetches : Object.keys(fetches);
  const unknown = names.filter((n) => !outputs.includes(n));
  if (unknown.length) throw invalid(`InferenceSession.run: fetches ${unknown.map((n) => JSON.stringify(n)).join(', ')}: expected outputs of the model (${outputs.join(', ')})`);
  return names;
}

/** The InferenceSession class, its devices opened by `open(options)`. */
function makeSessionClass(wasm, open) {
  /**
   * A model loaded on a device, as onnxruntime-web's `InferenceSession`: `create`, `run`,
   * `release`, `inputNames`, `outputNames`, `inputMetadata` and `outputMetadata`; `device`
   * says which unicompute device runs it.
   */
  class InferenceSession {
    #session;
    #where;

    /** Use `InferenceSession.create`. */
    constructor(session, device, where) {
      this.#session = session;
      this.#where = where;
      /** The device that runs the model. */
      this.device = device;
      /** The input and output names, in the model's order. */
      this.inputNames = Object.freeze(session.inputMetadata.map((m) => m.name));
      this.outputNames = Object.freeze(session.outputMetadata.map((m) => m.name));
      /** Each input and output: `{ name, isTensor, type, shape }`. */
      this.inputMetadata = Object.freeze(session.inputMetadata);
      this.outputMetadata = Object.freeze(session.outputMetadata);
    }

    /**
     * Load a model: `create(urlOrPathOrBytes, options?)` or `create(arrayBuffer, byteOffset,
     * byteLength?, options?)`. Every operator is checked here; a model that cannot run is a
     * `MODEL` error naming its nodes. Options: `executionProviders` (tried in order: 'webgpu';
     * 'wasm' or 'cpu', the CPU backend; none given, unicompute picks), `preferredOutputLocation`
     * ('cpu', HostTensors; or 'device', unicompute Tensors), `device` (a unicompute Device to
     * use), `freeDimensionOverrides` (extents fixed at load for named dimensions, `{ batch: 1 }`:
     * `inputMetadata` and `outputMetadata` show them and feeds are held to them; names the
     * model lacks are ignored), `f16Weights` (true: the large f32 weights are held in f16 on
     * the device, half their memory and upload; outputs within f16's rounding of the weights);
     * onnxruntime-web's tuning and logging options are taken and change nothing.
     */
    static async create(...args) {
      try {
        const [bytes, given] = await modelOf(args);
        const options = sessionOptions(given);
        const device = await open(options);
        const session = wasm.Session.load(device, bytes, undefined, options.freeDimensionOverrides, options.f16Weights);
        return new InferenceSession(session, device, options.preferredOutputLocation);
      } catch (e) {
        throw toError(e, 'InferenceSession.create');
      }
    }

    /**
     * Run the model on `feeds` (every input by name: HostTensors, onnxruntime-web Tensors or
     * unicompute Tensors). Gives the outputs by name, or those `fetches` names (an array, or
     * an object's keys). onnxruntime-web's run options (the last argument) change nothing.
     */
    async run(feeds, fetches) {
      const session = this.#live('run');
      const made = [];
      try {
        const args = upload(wasm, this.device, feeds, made);
        let running;
        try {
          running = session.run(args); // takes the feeds now
        } finally {
          args.free();
        }
        return await this.#results(await running, fetches);
      } catch (e) {
        throw toError(e, 'InferenceSession.run');
      } finally {
        for (const t of made) t.dispose();
      }
    }

    /** The outputs by name: the wanted ones kept (read back for 'cpu'), the others freed. */
    async #results(outputs, fetches) {
      const wanted = fetched(fetches, this.outputNames);
      const result = {};
      try {
        for (const [i, meta] of this.outputMetadata.entries()) {
          if (!wanted.includes(meta.name)) continue;
          result[meta.name] = this.#where === 'device' ? outputs[i] : await download(outputs[i], meta.type);
        }
      } finally {
        for (const t of outputs) if (this.#where !== 'device' || !Object.values(result).includes(t)) t.dispose();
      }
      return result;
    }

    /**
     * Where a run's memory goes, in bytes, planned from the first run (undefined before it):
     * `{ weights, intermediates, arenas, peak, live, unshared }`.
     */
    memoryPlan() {
      return this.#live('memoryPlan').memoryPlan();
    }

    /** Free the model's weights on the device; later runs are errors. */
    async release() {
      this.#session?.free();
      this.#session = undefined;
    }

    /** The wasm session, or an error if released. */
    #live(method) {
      if (this.#session === undefined) throw invalid(`InferenceSession.${method}: the session was released: expected one that is not`);
      return this.#session;
    }

    /** `InferenceSession(webgpu, 1 input, 2 outputs)`. */
    toString() {
      return `InferenceSession(${this.device.backend}, ${this.inputNames.length} inputs, ${this.outputNames.length} outputs)`;
    }
  }
  return InferenceSession;
}
