// The page in interop/ (bundled by test-npm.sh with esbuild) in headless Chromium with WebGPU:
// its own kernel's buffer becomes a tensor, and the result comes back through the tensor's
// GPUBuffer with the page's own copy and map, the same numbers as `read()`.
// Usage: node interop.test.mjs <folder>.
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { serve } from './serve-static.mjs';

const server = await serve(process.argv[2]);
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--enable-unsafe-webgpu', '--no-sandbox'] });
try {
  const page = await browser.newPage();
  const logs = [];
  page.on('console', (m) => logs.push(m.text()));
  await page.goto(server.url);
  await page.waitForSelector('body[data-done="yes"]', { timeout: 60_000 });
  const d = await page.evaluate(() => ({ ...document.body.dataset }));
  assert.equal(d.error, undefined, `${d.error}\n${logs.join('\n')}`);
  const want = Array.from({ length: 1000 }, (_, i) => Math.max(i * 0.5 * 2, 0) - 1);
  assert.deepEqual(JSON.parse(d.viaTheirs), want, "read through the page's own WebGPU code");
  assert.deepEqual(JSON.parse(d.viaOurs), want, 'read through read()');
  assert.equal(d.refused, 'SHAPE', 'a buffer too small for the shape is refused');
  console.log("interop: the page's GPUBuffer became a tensor, and the result read back through its own WebGPU code");
} finally {
  await browser.close();
  server.close();
}
