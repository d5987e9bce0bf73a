// The page in interop/ (bundled by test-npm.sh with esbuild) in headless Chromium with WebGPU:
// unicompute opens on the page's GPUDevice, its own kernel's buffer becomes a tensor without a
// copy (a rewrite of the buffer shows in the tensor), and results come back through the
// tensor's GPUBuffer with the page's own copy and map, the same numbers as `read()`.
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
  const n = 1000;
  const want = Array.from({ length: n }, (_, i) => Math.max(i * 0.5 * 2, 0) - 1);
  assert.deepEqual(JSON.parse(d.viaTheirs), want, "read through the page's own WebGPU code");
  assert.deepEqual(JSON.parse(d.viaOurs), want, 'read through read()');
  assert.deepEqual(JSON.parse(d.rewritten), Array(n).fill(9), "the tensor aliases the page's buffer: its rewrite shows");
  assert.equal(Number(d.tail), 3 * (n - 100), 'a tensor from a byte offset');
  assert.deepEqual(JSON.parse(d.lentBack), Array.from({ length: n }, (_, i) => i), "the library's own GPUDevice, used by the page");
  assert.equal(d.refused, 'SHAPE,INVALID,INVALID', 'too small, misaligned, no STORAGE usage: refused');
  assert.equal(d.pageErrors, '0', "the page's onuncapturederror saw no error");
  console.log("interop: unicompute opened on the page's GPUDevice and computed on its GPUBuffer without a copy; results read back through the page's own WebGPU code");
} finally {
  await browser.close();
  server.close();
}
