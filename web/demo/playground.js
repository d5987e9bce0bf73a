// The WGSL playground: compile the editor's kernel on the device `auto` opens (WebGPU, or the
// CPU backend's WGSL executor), bind generated inputs
// (from the kernel's reflected bindings), run it, show the read-write buffers, and put compile
// errors at their line and column in the editor.
import { init } from 'unicompute';

const DEFAULT_SOURCE = `// y = 2 x + y over n elements (x generated, y starting at zero, p.n the element count)
struct Params { n: u32 }
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    if (id.x < p.n) {
        y[id.x] = 2.0 * x[id.x] + y[id.x];
    }
}
`;
/** The generated input element `i` of a read-only binding. */
const generated = (i) => ((i % 13) - 6) * 0.5;

const $ = (id) => document.getElementById(id);
let devicePromise;

/** Show line numbers beside the editor, `errorLine` (1-based) marked. */
function gutter(errorLine = 0) {
  const lines = $('source').value.split('\n').length;
  $('gutter').innerHTML = Array.from({ length: lines }, (_, i) => (i + 1 === errorLine ? `<span class="error">${i + 1}</span>` : String(i + 1))).join('\n');
}

/** Set the status line; `kind` is 'ok', 'error' or ''. */
function status(text, kind) {
  Object.assign($('kernel-status'), { textContent: text, className: `status ${kind}` });
}

/** One buffer per reflected binding: generated inputs, zeroed outputs, the count in a uniform. */
function buffersFor(device, kernel, n) {
  return kernel.bindings.map((b) => {
    const words = Math.max(n, Math.ceil(b.minBytes / 4));
    const Typed = b.dtype === 'i32' ? Int32Array : b.dtype === 'u32' ? Uint32Array : Float32Array;
    if (b.kind === 'uniform') return device.buffer(Uint32Array.from({ length: Math.max(4, Math.ceil(b.minBytes / 4)) }, (_, i) => (i === 0 ? n : 0)));
    if (b.kind === 'storage-read') return device.buffer(Typed.from({ length: words }, (_, i) => generated(i)));
    return device.buffer(new Typed(words));
  });
}

/** Compile and run the editor's kernel; show the outputs or the error. */
async function run() {
  // The device `auto` opens: WebGPU, or the CPU backend, whose executor runs WGSL too.
  const device = await (devicePromise ??= init('auto'));
  const n = Number($('elements').value);
  const kernel = device.kernel($('source').value, $('entry').value);
  const buffers = buffersFor(device, kernel, n);
  try {
    const [wx] = kernel.workgroupSize;
    const queue = device.queue();
    queue.launch(kernel, buffers, [Math.ceil(n / wx), 1, 1]);
    await queue.submit().wait();
    const outputs = [];
    for (const [i, b] of kernel.bindings.entries()) {
      if (b.kind === 'storage-read-write') outputs.push({ name: b.name, values: Array.from((await buffers[i].read()).slice(0, 12)) });
    }
    return outputs;
  } finally {
    buffers.forEach((b) => b.dispose());
    kernel.dispose();
  }
}

/** Wire the editor, the run button and the error button. */
export function setupPlayground() {
  const source = $('source');
  source.value = DEFAULT_SOURCE;
  gutter();
  source.addEventListener('input', () => gutter());
  $('break-kernel').addEventListener('click', () => {
    source.value = source.value.replace('2.0 * x[id.x] + y[id.x]', '2.0 * x[id.x] + z[id.x]');
    gutter();
  });
  $('run-kernel').addEventListener('click', async () => {
    $('run-kernel').disabled = true;
    status('running…', '');
    try {
      const outputs = await run();
      gutter();
      $('kernel-output').textContent = outputs.map((o) => `${o.name}[0..12] = ${o.values.map((v) => +v.toFixed(4)).join(', ')}`).join('\n');
      status(`ran over ${$('elements').value} elements on ${(await devicePromise).backend}`, 'ok');
      Object.assign(document.body.dataset, { kernel: 'ok', kernelResult: JSON.stringify(outputs) });
    } catch (e) {
      $('kernel-output').textContent = '';
      if (e.code === 'SHADER') {
        gutter(e.line);
        const lines = source.value.split('\n');
        const at = lines.slice(0, e.line - 1).reduce((s, l) => s + l.length + 1, 0) + Math.max(e.column - 1, 0);
        source.focus();
        source.setSelectionRange(at, Math.min(at + 1, source.value.length));
        status(`line ${e.line}, column ${e.column}: ${e.message}`, 'error');
      } else {
        status(`${e.code ?? 'ERROR'}: ${e.message}`, 'error');
      }
      Object.assign(document.body.dataset, { kernel: 'error', kernelError: `${e.code}:${e.line ?? ''}:${e.column ?? ''}` });
    } finally {
      $('run-kernel').disabled = false;
    }
  });
}
