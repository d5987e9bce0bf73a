// Serves a bundled app's folder (an index.html, the bundle, the wasm), loads it in headless
// Chromium through playwright-core and checks relu(A @ A) against a reference computed here.
// Usage: node bundle.test.mjs <name> <folder>. Run by scripts/test-npm.sh for each bundler.
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { serve } from '../serve-static.mjs';

const [name, folder] = process.argv.slice(2);
const server = await serve(folder);
const url = server.url;
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--enable-unsafe-webgpu', '--no-sandbox'] });
try {
  const page = await browser.newPage();
  const logs = [];
  page.on('console', (m) => logs.push(m.text()));
  page.on('pageerror', (e) => logs.push(`page error: ${e.message}`));
  await page.goto(url);
  await page.waitForSelector('body[data-done="yes"]', { timeout: 60_000 });
  const { backend, result, error } = await page.evaluate(() => ({ ...document.body.dataset }));
  assert.equal(error, undefined, `${name}: the app failed: ${error}\n${logs.join('\n')}`);
  const n = 48;
  const data = Float32Array.from({ length: n * n }, (_, i) => ((i * 37) % 101) / 50 - 1);
  const got = JSON.parse(result);
  assert.equal(got.length, n * n);
  for (let i = 0; i < n * n; i++) {
    let want = 0;
    for (let k = 0; k < n; k++) want += data[Math.floor(i / n) * n + k] * data[k * n + (i % n)];
    want = Math.max(want, 0);
    assert.ok(Math.abs(got[i] - want) < 1e-4 * (1 + Math.abs(want)), `${name}: element ${i}: ${got[i]}, expected ${want}`);
  }
  console.log(`${name}: relu(A @ A) correct on ${backend}`);
} finally {
  await browser.close();
  server.close();
}
