// A page bundled with Vite that uses the packed npm package: a matmul on the browser's
// device (`?backend=` webgpu, cpu, or auto by default: WebGPU or the CPU backend, whichever
// `init()` picks, and why), the numbers shown on the page and in `document.body.dataset` for
// the test to check (npm/test/page.test.mjs).
import { init } from 'unicompute';

const status = document.getElementById('status');
try {
  const device = await init(new URLSearchParams(location.search).get('backend') ?? 'auto');
  const n = 64;
  const data = Float32Array.from({ length: n * n }, (_, i) => ((i * 37) % 101) / 50 - 1);
  const a = device.tensor(data, [n, n]);
  const c = await a.matmul(a).relu().read();
  const picks = [0, 1, 2 * n + 5, n * n - 1].map((i) => c[i]);
  document.getElementById('out').textContent =
    `backend: ${device.backend}\ndevice: ${device.name}\nwhy: ${device.selectionReason}\nrelu(A @ A) at 4 places: ${picks.map((v) => v.toFixed(4)).join(', ')}`;
  Object.assign(document.body.dataset, { backend: device.backend, reason: device.selectionReason, result: JSON.stringify(Array.from(c)), done: 'yes' });
  status.textContent = 'done';
} catch (e) {
  status.textContent = `failed: ${e.message} (${e.code})`;
  Object.assign(document.body.dataset, { error: `${e.code}: ${e.message}`, done: 'yes' });
}
