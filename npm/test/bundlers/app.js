// The app each bundler test builds (esbuild.js, webpack.js): open a device, compute
// relu(A @ A) and put the numbers in `document.body.dataset` for bundle.test.mjs to check
// against its own reference.
import { init } from 'unicompute';

/** Run the app with `init`'s options (where the wasm lives, for esbuild). */
export async function run(options) {
  const status = document.getElementById('status');
  try {
    const device = await init({ backend: 'auto', ...options });
    const n = 48;
    const data = Float32Array.from({ length: n * n }, (_, i) => ((i * 37) % 101) / 50 - 1);
    const a = device.tensor(data, [n, n]);
    const c = await a.matmul(a).relu().read();
    Object.assign(document.body.dataset, { backend: device.backend, result: JSON.stringify(Array.from(c)), done: 'yes' });
    status.textContent = `done on ${device.backend}`;
  } catch (e) {
    status.textContent = `failed: ${e.message} (${e.code})`;
    Object.assign(document.body.dataset, { error: `${e.code}: ${e.message}`, done: 'yes' });
  }
}
