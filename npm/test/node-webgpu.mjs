// The packed npm package on WebGPU in Node: the `webgpu` package (Dawn) provides
// navigator.gpu (run with Chromium's SwiftShader ICD, VK_ICD_FILENAMES=.../
// vk_swiftshader_icd.json). wgpu looks for navigator.gpu on a Window, so a stand-in Window
// global is installed too. Run by scripts/test-npm.sh.
import assert from 'node:assert/strict';
import { create, globals } from 'webgpu';

Object.assign(globalThis, globals);
globalThis.navigator = { gpu: create([]) };
globalThis.Window ??= class Window {};

const { init } = await import('unicompute');
const device = await init();
assert.equal(device.backend, 'webgpu', `auto picks WebGPU (${device.fallbackReason ?? ''})`);
const n = 67;
const data = Float32Array.from({ length: n * n }, (_, i) => ((i * 37) % 101) / 50 - 1);
const a = device.tensor(data, [n, n]);
const got = await a.matmul(a).read();
for (const [r, c] of [[0, 0], [3, 65], [66, 66]]) {
  let want = 0;
  for (let k = 0; k < n; k++) want += data[r * n + k] * data[k * n + c];
  assert.ok(Math.abs(got[r * n + c] - want) < 1e-4 * (1 + Math.abs(want)), `matmul[${r}, ${c}] = ${got[r * n + c]}, expected ${want}`);
}
const sum = (await a.reduce('sum').read())[0];
assert.ok(Math.abs(sum - data.reduce((s, v) => s + v, 0)) < 1e-3, `sum ${sum}`);
console.log(`node + webgpu: ok (${device.name})`);
process.exit(0);
