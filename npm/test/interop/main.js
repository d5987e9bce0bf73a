// A page that owns its GPUDevice and opens unicompute on it: it fills a GPUBuffer with its own
// compute pipeline, unicompute wraps that buffer as a tensor (no copy) and computes on it, the
// page rewrites the buffer and the tensor sees the new contents, and the page reads results
// back through the tensor's GPUBuffer with its own copy and map. A second device, unicompute's
// own, is used the other way round (`device.gpuDevice`). The numbers land in
// `document.body.dataset` for interop.test.mjs.
import { init } from 'unicompute';

/** The page's own kernel: `out[i] = f32(i) * 0.5`. */
const FILL = `
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x < arrayLength(&out)) { out[id.x] = f32(id.x) * 0.5; }
}`;

/** Fill a new buffer of `n` floats with the page's kernel. */
function fill(gpu, n) {
  const buffer = gpu.createBuffer({ size: n * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  const pipeline = gpu.createComputePipeline({ layout: 'auto', compute: { module: gpu.createShaderModule({ code: FILL }), entryPoint: 'main' } });
  const bind = gpu.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer } }] });
  const encoder = gpu.createCommandEncoder();
  const pass = encoder.beginComputePass();
  pass.setPipeline(pipeline);
  pass.setBindGroup(0, bind);
  pass.dispatchWorkgroups(Math.ceil(n / 64));
  pass.end();
  gpu.queue.submit([encoder.finish()]);
  return buffer;
}

/** Read `byteLength` bytes of `buffer` from `byteOffset` with the page's own copy and map. */
async function readBack(gpu, { buffer, byteOffset, byteLength }) {
  const staging = gpu.createBuffer({ size: byteLength, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const encoder = gpu.createCommandEncoder();
  encoder.copyBufferToBuffer(buffer, byteOffset, staging, 0, byteLength);
  gpu.queue.submit([encoder.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const out = new Float32Array(staging.getMappedRange().slice(0));
  staging.destroy();
  return out;
}

/** What `fn` throws: its code, or 'none'. */
function refusal(fn) {
  try {
    fn();
  } catch (e) {
    return e.code;
  }
  return 'none';
}

const status = document.getElementById('status');
try {
  const adapter = await navigator.gpu.requestAdapter();
  const gpu = await adapter.requestDevice();
  let pageErrors = 0;
  gpu.onuncapturederror = () => { pageErrors += 1; };
  const device = await init({ gpuDevice: gpu });
  if (device.gpuDevice !== gpu) throw new Error('device.gpuDevice is not the page\'s GPUDevice');
  const n = 1000;
  const theirs = fill(gpu, n);
  const x = device.tensorFromGPUBuffer(theirs, [n]);
  const one = device.tensor(new Float32Array([1]), [1]);
  const y = x.add(x, { activation: 'relu' }).sub(one); // i - 1
  const viaTheirs = await readBack(gpu, y.gpuBuffer());
  const viaOurs = await y.read();
  // The page overwrites its buffer: the tensor aliases it, so a new op sees the new values.
  gpu.queue.writeBuffer(theirs, 0, new Float32Array(n).fill(3));
  const rewritten = await x.mul(x).read(); // 9 everywhere
  // The last 900 elements, from byte 400: no copy either.
  const tail = await device.tensorFromGPUBuffer(theirs, [n - 100], 'f32', 400).sum().read();
  const refused = refusal(() => device.tensorFromGPUBuffer(theirs, [n + 1]));
  const misaligned = refusal(() => device.tensorFromGPUBuffer(theirs, [4], 'f32', 2));
  const noStorage = refusal(() => device.tensorFromGPUBuffer(gpu.createBuffer({ size: 16, usage: GPUBufferUsage.COPY_SRC }), [4]));
  x.free();
  theirs.destroy();
  // unicompute's own device, lent to the page.
  const own = await init('webgpu');
  const ownGpu = own.gpuDevice;
  if (!(ownGpu instanceof GPUDevice) || ownGpu === gpu) throw new Error(`device.gpuDevice is ${ownGpu}: expected the library's own GPUDevice`);
  const lent = own.tensorFromGPUBuffer(fill(ownGpu, n), [n]).mul(own.tensor(new Float32Array([2]), [1]));
  const lentBack = await readBack(ownGpu, lent.gpuBuffer());
  Object.assign(document.body.dataset, {
    viaTheirs: JSON.stringify(Array.from(viaTheirs)),
    viaOurs: JSON.stringify(Array.from(viaOurs)),
    rewritten: JSON.stringify(Array.from(rewritten)),
    tail: String(tail[0]),
    lentBack: JSON.stringify(Array.from(lentBack)),
    refused: [refused, misaligned, noStorage].join(','),
    pageErrors: String(pageErrors),
    done: 'yes',
  });
  status.textContent = 'done';
} catch (e) {
  status.textContent = `failed: ${e.message}`;
  Object.assign(document.body.dataset, { error: `${e.code}: ${e.message}`, done: 'yes' });
}
