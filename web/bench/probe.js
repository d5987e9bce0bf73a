// Memory probes of the model page (models.js), installed when this module is evaluated, before
// any engine loads: every WebAssembly.Memory a script makes (`new WebAssembly.Memory`, as
// threaded builds do) or an instance exports (as one-thread builds do), and the bytes of the
// GPU buffers made through `GPUDevice.createBuffer` less those destroyed. They see every engine
// alike, ours and onnxruntime-web's, without help from either. A buffer let go without
// `destroy()` counts as live until the page ends.

const memories = new Set();
/** Adds the memories among an instance's exports. */
const keepExports = (instance) => {
  for (const value of Object.values(instance.exports)) if (value instanceof WebAssembly.Memory) memories.add(value);
};

const { Memory, Instance, instantiate, instantiateStreaming } = WebAssembly;
WebAssembly.Memory = new Proxy(Memory, {
  construct(target, args, newTarget) {
    const memory = Reflect.construct(target, args, newTarget);
    memories.add(memory);
    return memory;
  },
});
WebAssembly.Instance = new Proxy(Instance, {
  construct(target, args, newTarget) {
    const instance = Reflect.construct(target, args, newTarget);
    keepExports(instance);
    return instance;
  },
});
WebAssembly.instantiate = async function (...args) {
  const made = await instantiate.apply(this, args);
  keepExports(made.instance ?? made);
  return made;
};
WebAssembly.instantiateStreaming = async function (...args) {
  const made = await instantiateStreaming.apply(this, args);
  keepExports(made.instance);
  return made;
};

const gpu = { live: 0, peak: 0, sizes: new WeakMap() };
if (globalThis.GPUDevice) {
  const { createBuffer } = GPUDevice.prototype;
  GPUDevice.prototype.createBuffer = function (descriptor) {
    const buffer = createBuffer.call(this, descriptor);
    gpu.sizes.set(buffer, descriptor.size);
    gpu.live += descriptor.size;
    gpu.peak = Math.max(gpu.peak, gpu.live);
    return buffer;
  };
  const { destroy } = GPUBuffer.prototype;
  GPUBuffer.prototype.destroy = function () {
    const size = gpu.sizes.get(this);
    if (size !== undefined) {
      gpu.sizes.delete(this);
      gpu.live -= size;
    }
    return destroy.call(this);
  };
}

/** The bytes of every wasm memory seen so far (a memory never shrinks, so also its peak). */
export const wasmBytes = () => [...memories].reduce((n, m) => n + m.buffer.byteLength, 0);

/** How many wasm memories were seen. */
export const wasmMemories = () => memories.size;

/** Start a new GPU peak from the bytes live now; returns them. */
export function resetGpuPeak() {
  gpu.peak = gpu.live;
  return gpu.live;
}

/** The most GPU buffer bytes live at once since resetGpuPeak. */
export const gpuPeak = () => gpu.peak;
