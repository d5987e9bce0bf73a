// Every export of the package in use, type-checked with `tsc --strict --noEmit` by
// scripts/test-npm.sh against the installed tarball (npm/test/tsconfig.json). It is never
// run: what it checks is that the typings describe the API as a program uses it.
import {
  type Activation,
  type BackendName,
  type BindingInfo,
  type BinaryName,
  type BinaryOptions,
  type Decision,
  type DeviceInfo,
  type DType,
  type DTypeName,
  type ElementArray,
  type ErrorCode,
  type GPUTensorOptions,
  type InitOptions,
  type LaunchRecord,
  type MemoryInfo,
  type MemoryStats,
  type NestedNumbers,
  type OpSummary,
  type Policy,
  type PoolOptions,
  type ReadRecord,
  type ReduceName,
  type ArgOptions,
  type ReduceOptions,
  type Shape,
  type TensorOf,
  type TuneResult,
  type UnaryName,
  type WasmSource,
  type ExecutionProvider,
  type Feed,
  type HostArrayOf,
  type HostType,
  type HostTypeOf,
  type InferenceSessionOptions,
  type ModelSource,
  type MemoryPlan,
  type ValueMetadata,
  Buffer,
  HostTensor,
  InferenceSession,
  Device,
  Fence,
  Kernel,
  Profile,
  Queue,
  Tensor,
  UnicomputeError,
  init,
  listDevices,
} from 'unicompute';
import * as threads from 'unicompute/threads';
import * as ort from 'unicompute/ort';

const SAXPY = `
override wg = 64;
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(wg)
fn main(@builtin(global_invocation_id) id: vec3<u32>) { y[id.x] += 2.0 * x[id.x]; }
`;

async function devices(): Promise<Device> {
  const list: DeviceInfo[] = await listDevices();
  const backends: BackendName[] = list.map((d) => d.backend);
  const limit: number | undefined = list[0]?.limits.maxLoopIterations;
  console.log(backends, limit, list[0]?.features.f16);
  const wasm: WasmSource = new URL('./unicompute_bg.wasm', import.meta.url);
  const policy: Policy = { backends: ['webgpu', 'cpu'], selection: 'auto', variants: { matmul: 'auto' }, fallback: true, pool: { cacheLimitBytes: 1 << 28 } };
  const options: InitOptions = { policy, wasm };
  const device: Device = await init(options);
  const other: Device = await init('cpu');
  const threaded = await threads.init({ backend: 'cpu', threads: 2 });
  console.log(device.backend, device.name, device.selectionReason, device.fallbackReason ?? '', other.info().type, threaded.info().threads);
  const stats: MemoryStats = device.memoryStats();
  const decisions: Decision[] = device.decisions();
  const chosen: Required<Policy> = device.policy;
  console.log(stats.peakBytesLive, decisions[0]?.timesUs, chosen.selection, chosen.tuneCache, chosen.pool.cacheLimitBytes);
  return device;
}

async function tensors(device: Device): Promise<void> {
  const a: Tensor = device.tensor(new Float32Array([1, 2, 3, 4, 5, 6]), [2, 3]);
  const b = device.tensor(new Float32Array([1, 0, 0, 1, 1, 1]), [3, 2]);
  const shape: Shape = a.shape;
  const dims: readonly number[] = b.shape;
  const dtype: DType = a.dtype;
  const asTfjs: DTypeName = 'float32';
  const halved: Tensor = device.tensor(new Float32Array([1]), [1], asTfjs).cast('float16');
  const act: Activation = 'gelu';
  const unary: UnaryName = 'exp';
  const binary: BinaryName = 'maximum';
  const reduce: ReduceName = 'mean';
  const fused: BinaryOptions = { activation: act };
  const c = a.matmul(b).relu().add(device.tensor(new Float32Array([1, 1]), [2]), fused).unary(unary);
  const d = c.binary(binary, c).sub(c).mul(c, { activation: 'relu' }).div(c).softmax().logSoftmax(0);
  const e = d.reduce(reduce, 1).reduceAxes('sum', [0], true).cast('f16').cast('f32');
  const n = a.layerNorm({ eps: 1e-5, axes: 1 }).rmsNorm({ activation: 'silu' }).linear(b, { activation: 'gelu_tanh' });
  const img = device.tensor(new Float32Array(2 * 3 * 8 * 8), [2, 3, 8, 8]);
  const w = device.tensor(new Float32Array(4 * 3 * 3 * 3), [4, 3, 3, 3]);
  const conv = img.conv2d(w, { stride: 1, padding: [1, 1], dilation: 1, groups: 1, bias: device.tensor(new Float32Array(4), [4]), activation: 'relu' });
  const wt = device.tensor(new Float32Array(4 * 2 * 3 * 3), [4, 2, 3, 3]);
  const upsampled = conv.convTranspose2d(wt, { stride: 2, padding: [1, 1, 0, 0], outputPadding: 1, dilation: [1, 1], groups: 1, bias: device.tensor(new Float32Array(2), [2]), activation: 'relu' });
  const pooled = conv.maxPool2d(2).avgPool2d(2);
  const q = device.tensor(new Float32Array(2 * 4 * 8), [1, 2, 4, 8]);
  const att = q.attention(q, q, { causal: true, scale: 0.5 });
  const moved = a.reshape([3, 2]).transpose().permute([1, 0]).concat(a, 0).cumsum(0).slice(1, 0, 2).broadcastTo([1, 4, 2]);
  const picked = a.gather(1, device.tensor(new Int32Array([2, 0]), [2])).select(a, a);
  const clipped = a.gather(0, device.tensor(new Int32Array([-1, 9]), [2]), { mode: 'clip' });
  const summed = a.nary('add', [a, a]);
  const out: ElementArray = await e.read();
  const into: ElementArray = await n.readInto(new Float32Array(n.shape.reduce((x, y) => x * y, 1)));
  console.log(shape, dtype, halved.dtype, out, into, pooled.shape, upsampled.shape, att.shape, moved.shape, picked.shape, clipped.shape, summed.shape);
  for (const t of [a, b, c, d, e, n, img, w, conv, wt, upsampled, pooled, q, att, moved, picked, clipped, summed]) t.free();
}

async function moreOps(device: Device): Promise<void> {
  const x = device.tensor(new Float32Array([0.5, 1, 2, 4]), [2, 2]);
  const all: Tensor[] = [x.neg(), x.abs(), x.exp(), x.log(), x.sqrt(), x.rsqrt(), x.sin(), x.cos(), x.tanh(), x.sigmoid(), x.gelu(), x.geluTanh(), x.silu(), x.erf(), x.softplus(), x.hardswish(), x.floor(), x.ceil(), x.round(), x.sign()];
  const pair: Tensor[] = [x.minimum(x), x.maximum(x, { activation: 'relu' }), x.pow(x)];
  const options: ReduceOptions = { axis: [0, 1], keepDims: true };
  const reduced: Tensor[] = [x.sum(), x.mean({ axis: 0 }), x.max(options), x.min({ keepDims: true }), x.argmax({ axis: 1 }), x.argmin({ last: true } satisfies ArgOptions), x.cumsum(1, { exclusive: true, reverse: true }), ...x.layerNormStats({ axes: 1 })];
  const half = device.tensor(new Uint16Array([0x3c00, 0x4000]), [2], 'f16');
  const bits: Uint16Array = await half.read16();
  const widened: ElementArray = await device.tensor(new Float32Array([1, 2]), [2], 'bf16').read();
  const f16 = await half.readFloat16();
  console.log(bits[0], widened[0], f16.length, f16[0]);
  const longs: ElementArray = await device.tensor(new BigInt64Array([1n, -2n]), [2], 'i64').sum().read();
  const int64: boolean = device.info().features.int64;
  console.log(longs[0], int64);
  const kept: { total: Tensor } = device.scope(() => ({ total: x.exp().add(x).sum() }));
  {
    using scratch = device.tensor(new Float32Array(8), [8]);
    console.log(scratch.shape, kept.total.shape);
  }
  for (const t of [...all, ...pair, ...reduced, half, x, kept.total]) t.dispose();
}

async function buffersQueuesKernels(device: Device): Promise<void> {
  const x: Buffer = device.buffer(new Float32Array(64).fill(1));
  const y = device.buffer(new Float32Array(64));
  y.write(new Float32Array(64).fill(3));
  const kernel: Kernel = device.kernel(SAXPY, 'main');
  const tuned: Kernel = device.kernel(SAXPY, 'main', { constants: { wg: 32 } });
  tuned.free();
  const [wx]: readonly number[] = kernel.workgroupSize;
  const reflected: BindingInfo[] = kernel.bindings;
  console.log(reflected.map((b) => `${b.group}:${b.binding} ${b.name} ${b.kind} ${b.dtype ?? '-'} ${b.minBytes}`));
  const queue: Queue = device.newQueue();
  queue.launch(kernel, [x, y], [64 / (wx ?? 64), 1, 1]);
  const fence: Fence = queue.submit();
  await fence.wait();
  const ys: ElementArray = await y.read();
  console.log(fence.signalled, kernel.bindingCount, x.length, x.dtype, ys[0], device.queue());
}

// GPUBufferUsage's flags by value: TypeScript 7's lib.dom declares WebGPU's interfaces but not
// that constant (@webgpu/types does).
const [STORAGE, COPY_SRC] = [0x80, 0x04];

function interop(device: Device): void {
  const gpu: GPUDevice | undefined = device.gpuDevice;
  const zeros: Tensor = device.zeros([4], 'f16').contiguous();
  if (gpu) {
    const theirs: GPUBuffer = gpu.createBuffer({ size: 16, usage: STORAGE | COPY_SRC });
    const t = device.tensorFromGPUBuffer(theirs, [4], 'f32', 0);
    const options: GPUTensorOptions = { dtype: 'float16', byteOffset: 8 };
    const half = device.tensorFromGPUBuffer(theirs, dims(t), options);
    half.dispose();
    const { buffer, byteOffset, byteLength }: { buffer: GPUBuffer; byteOffset: number; byteLength: number } = t.exp().gpuBuffer();
    console.log(buffer.size, byteOffset, byteLength);
  }
  zeros.dispose();
}

function dims(t: Tensor): number[] {
  return [...t.shape];
}

async function adopting(gpu: GPUDevice): Promise<Tensor> {
  const device: Device = await init({ gpuDevice: gpu });
  return device.tensorFromGPUBuffer(gpu.createBuffer({ size: 8, usage: STORAGE }), [4], 'f16');
}

async function profiling(device: Device): Promise<void> {
  device.enableProfiler();
  await device.tensor(new Float32Array(4), [2, 2]).matmul(device.tensor(new Float32Array(4), [2, 2])).read();
  const profile: Profile = await device.takeProfile();
  device.disableProfiler();
  const launches: LaunchRecord[] = profile.launches();
  const reads: ReadRecord[] = profile.reads();
  const summary: OpSummary[] = profile.summary();
  console.log(launches[0]?.clock, reads[0]?.copyUs, reads[0]?.waitUs, launches[0]?.hostStartUs, launches[0]?.deviceStartUs, launches[0]?.deviceUs, summary[0]?.totalS, summary[0]?.meanS, summary[0]?.rate, profile.table(), profile.chromeTrace(), profile.deviceSeconds);
  const tuned: TuneResult = await device.tune('matmul', [64, 64, 64]);
  device.importTuneCache(device.tuneCache());
  console.log(tuned.choice, tuned.timesUs);
}

async function makers(device: Device): Promise<void> {
  const data: NestedNumbers = [[1, 2], [3, 4]];
  const m = device.tensor(data);
  const flat = device.tensor([1, 2, 3], [3], 'int32');
  const scaled: Tensor[] = [m.mul(2), m.add(0.5, { activation: 'relu' }), m.sub(1), m.div(4), m.minimum(0), m.maximum(1), m.pow(2), m.binary('add', 3), flat.mul(3)];
  const made: Tensor[] = [device.ones([2, 3], 'float16'), device.full([2], 7, 'i64'), device.arange(5), device.arange(0, 1, 0.25, 'f32')];
  const random: Tensor[] = [device.randomUniform([3], { low: -1, high: 1, seed: 7, dtype: 'f32' }), device.randomNormal([2, 2], { mean: 0, std: 2, seed: 1 }), device.randomUniform([2])];
  const joined: Tensor[] = [m.concat([m, m], -1), m.concat(m), device.concat([m, m, m], 0)];
  const img = device.tensor(new Float32Array(2 * 7 * 9), [1, 2, 7, 9]);
  const pool: PoolOptions = { kernel: [3, 2], stride: [2, 1], padding: [1, 0, 1, 1], dilation: [1, 2], countIncludePad: false, ceilMode: true };
  const pooled: Tensor[] = [img.maxPool2d(pool), img.avgPool2d({ kernel: 3, padding: 1 }), img.avgPool2d(2)];
  for (const t of [m, flat, img, ...scaled, ...made, ...random, ...joined, ...pooled]) t.dispose();
}

async function errors(device: Device): Promise<void> {
  try {
    device.kernel('fn broken(', 'main');
  } catch (e) {
    if (!(e instanceof UnicomputeError)) throw e;
    const code: ErrorCode = e.code;
    const name: 'UnicomputeError' = e.name;
    console.log(code, name, e.line, e.column, e.message);
  }
  const made = new UnicomputeError('mine', 'INVALID', { cause: 1 });
  console.log(made.code, made instanceof Error);
  device.destroy();
}


async function idioms(device: Device): Promise<void> {
  // read() typed by dtype, with no cast: by the data, by a dtype name (TF.js spellings too),
  // through ops, casts, reductions and views.
  const f: TensorOf<'f32'> = device.tensor(new Float32Array([1, 2, 3, 4]), [2, 2]);
  const floats: Float32Array = await f.exp().add(f, { activation: 'relu' }).softmax({ axis: -1 }).read();
  const ints: Int32Array = await device.tensor(new Int32Array([1, 2]), [2]).mul(f.cast('int32')).read();
  const words: Uint32Array = await f.argmax({ axis: 1 }).read();
  const longs: BigInt64Array = await device.zeros([2], { dtype: 'int64' }).sum().read();
  const halves: Float32Array = await device.tensor(new Float32Array([1]), [1], { dtype: 'float16' }).neg().read();
  const averaged: Float32Array = await device.tensor(new Uint32Array([1, 2]), [2]).mean().read();
  const unsigned: Uint32Array = await device.zeros([3], 'uint32').reshape([1, 3]).transpose().contiguous().read();
  const viewed: Float32Array = await f.slice(0, 0, 1).broadcastTo([2, 2]).permute([1, 0]).logSoftmax(0).read();
  const into: Float32Array = await f.readInto(new Float32Array(4));
  const any: ElementArray = await (f as Tensor).read();
  // @ts-expect-error: an f32 tensor reads as a Float32Array, never an Int32Array
  const notInts: Int32Array = await f.read();
  console.log(floats, ints, words, longs, halves, averaged, unsigned, viewed, into, any, notInts);
  const byName: Tensor = f.reduce('max', { axis: [0, 1], keepDims: true, emptyIdentity: true }).reduce('sum', 0);
  // Memory: live tensors, trimming the pool; printing.
  const memory: MemoryInfo = device.memory();
  device.trim();
  console.log(memory.numTensors, memory.bytesCached, memory.bytesLive, memory.poolHits, memory.allocations, String(f), f.toString(), device.toString(), byName.shape);
  // A tensor as a user kernel's binding, directly or as a Buffer sharing its memory.
  const kernel = device.kernel(SAXPY, 'main');
  const y: Buffer = f.toBuffer();
  device.queue().launch(kernel, [f, y], [1, 1, 1]);
  const graph = device.queue().capture(() => device.queue().launch(kernel, [f.toBuffer(), f], [1, 1, 1]));
  graph.replay();
  console.log(graph.launches, await y.read());
  for (const t of [f, byName, y, kernel, graph]) t.dispose();
}

const device = await devices();
await tensors(device);
await moreOps(device);
await makers(device);
await buffersQueuesKernels(device);
interop(device);
if (device.gpuDevice) console.log((await adopting(device.gpuDevice)).shape);
await profiling(device);
await idioms(device);
await errors(device);

/** ONNX sessions, as onnxruntime-web code writes them (`ort`), and with unicompute's types. */
async function sessions(device: Device, model: ModelSource): Promise<void> {
  ort.env.wasm.numThreads = 1;
  const session = await ort.InferenceSession.create(model, { executionProviders: ['webgpu', 'wasm'] });
  const input = new ort.Tensor('float32', new Float32Array(6), [2, 3]);
  const results = await session.run({ [session.inputNames[0]]: input });
  const first: ort.Tensor = results[session.outputNames[0]];
  const data = first.data as Float32Array;
  console.log(first.type, first.dims, data[0], await first.getData());
  await session.release();

  const providers: ExecutionProvider[] = ['wasm'];
  const options: InferenceSessionOptions = { executionProviders: providers, graphOptimizationLevel: 'all' };
  const host = await InferenceSession.create(new ArrayBuffer(8), 0, 8, options);
  const meta: readonly ValueMetadata[] = host.inputMetadata;
  const type: HostType = 'int64';
  const ids: HostTensor<'int64'> = new HostTensor(type as 'int64', BigInt64Array.from([1n]), [1]);
  const bits: HostArrayOf<'float16'> = new Uint16Array(2);
  const inferred: HostTypeOf<Int32Array> = 'int32';
  const feeds: Record<string, Feed> = { ids, half: new HostTensor('float16', bits), inferred: new HostTensor(new Int32Array(2)) };
  const byName = await host.run(feeds, ['out'], { logSeverityLevel: 3 });
  const out: HostTensor = byName.out;
  console.log(meta[0]?.shape, out.dims, inferred, host.device.backend, String(out.reshape([1, -1])));
  const overrides = { batch: 1, sequence: 128 } as const;
  const plan: MemoryPlan | undefined = host.memoryPlan();
  console.log(plan?.peak, plan?.arenas.length, plan?.weights);
  const onDevice = await InferenceSession.create(model, { device, preferredOutputLocation: 'device', freeDimensionOverrides: overrides, f16Weights: true });
  const kept: Tensor = (await onDevice.run({ x: device.ones([2]) })).y;
  console.log(await kept.read());
  kept.dispose();
  await Promise.all([host.release(), onDevice.release()]);
}
await sessions(device, 'model.onnx');
