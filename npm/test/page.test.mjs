// Loads the Vite-built page (npm/test/page/) in headless Chromium with WebGPU through
// playwright-core, checks the numbers the page computed against a host reference, and takes a
// screenshot. Usage: node page.test.mjs <url> <screenshot.png>. Run by scripts/test-npm.sh.
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

const [url, shot] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--enable-unsafe-webgpu', '--no-sandbox'] });
/** Load the page with `query`, check its numbers, and return what it reports. */
async function checkPage(query) {
  const page = await browser.newPage();
  const logs = [];
  page.on('console', (m) => logs.push(m.text()));
  await page.goto(url + query);
  await page.waitForSelector('body[data-done="yes"]', { timeout: 60_000 });
  const { backend, reason, result, error } = await page.evaluate(() => ({ ...document.body.dataset }));
  assert.equal(error, undefined, `the page (${query || 'auto'}) failed: ${error}\n${logs.join('\n')}`);
  const n = 64;
  const data = Float32Array.from({ length: n * n }, (_, i) => ((i * 37) % 101) / 50 - 1);
  const got = JSON.parse(result);
  for (let i = 0; i < n * n; i += 97) {
    let want = 0;
    for (let k = 0; k < n; k++) want += data[Math.floor(i / n) * n + k] * data[k * n + (i % n)];
    want = Math.max(want, 0);
    assert.ok(Math.abs(got[i] - want) < 1e-4 * (1 + Math.abs(want)), `element ${i}: ${got[i]}, expected ${want}`);
  }
  return { page, backend, reason, logs };
}

try {
  // 'auto' picks a device and says why (in headless Chromium: SwiftShader timed against the CPU).
  const auto = await checkPage('');
  assert.ok(auto.reason.length > 0, 'auto says why');
  console.log(`page: auto picked ${auto.backend}: ${auto.reason}`);
  // WebGPU by name.
  const gpu = await checkPage('?backend=webgpu');
  if (process.env.UNICOMPUTE_REQUIRE_WEBGPU === '1') assert.equal(gpu.backend, 'webgpu', gpu.logs.join('\n'));
  await gpu.page.screenshot({ path: shot });
  console.log(`page: ok on ${gpu.backend} (screenshot ${shot})`);
} finally {
  await browser.close();
}
