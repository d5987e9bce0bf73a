// A page with its own WebGPU code working on unicompute's device: it fills a GPUBuffer with
// its own compute pipeline, unicompute turns that into a tensor and computes on it, and the
// page reads the result back through the tensor's GPUBuffer with its own copy and map.
// The numbers land in `document.body.dataset` for interop.test.mjs.
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
  const buffer = gpu.createBuffer({ size: n * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
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

const status = document.getElementById('status');
try {
  const device = await init('webgpu');
  const gpu = device.gpuDevice;
  if (!(gpu instanceof GPUDevice)) throw new Error(`device.gpuDevice is ${gpu}: expected the GPUDevice`);
  const n = 1000;
  const theirs = fill(gpu, n);
  const x = device.tensorFromGPUBuffer(theirs, [n]);
  const y = x.add(x, { activation: 'relu' }).sub(device.tensor(new Float32Array([1]), [1])); // i - 1, then max(., -1)
  const viaTheirs = await readBack(gpu, y.gpuBuffer());
  const viaOurs = await y.read();
  const refused = (() => {
    try {
      device.tensorFromGPUBuffer(theirs, [n + 1]);
    } catch (e) {
      return e.code;
    }
    return 'none';
  })();
  Object.assign(document.body.dataset, { viaTheirs: JSON.stringify(Array.from(viaTheirs)), viaOurs: JSON.stringify(Array.from(viaOurs)), refused, done: 'yes' });
  status.textContent = 'done';
} catch (e) {
  status.textContent = `failed: ${e.message}`;
  Object.assign(document.body.dataset, { error: `${e.code}: ${e.message}`, done: 'yes' });
}
