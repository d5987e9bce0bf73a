// ONNX models in headless Chromium: ort-page.html runs each model through unicompute's
// InferenceSession on WebGPU (SwiftShader here) and on the CPU backend inside the wasm, and
// through onnxruntime-web (wasm) on the same page, bytes and inputs; every output must agree
// with onnxruntime-web's. Serves the test project (the installed packages, the page and the
// models copied beside it). Usage: node ort-page.test.mjs model.onnx... Run by
// scripts/test-npm.sh.
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { serve } from './serve-static.mjs';

const models = process.argv.slice(2);
assert.ok(models.length, 'usage: node ort-page.test.mjs model.onnx...');
const { url, close } = await serve(process.cwd());
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--enable-unsafe-webgpu', '--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
try {
  const page = await browser.newPage();
  const logs = [];
  page.on('console', (m) => logs.push(m.text()));
  page.on('pageerror', (e) => logs.push(e.message));
  await page.goto(`${url}ort-page.html?models=${models.join(',')}`);
  await page.waitForSelector('body[data-done="yes"]', { timeout: 300_000 });
  const { report, error } = await page.evaluate(() => ({ ...document.body.dataset }));
  assert.equal(error, undefined, `the page failed: ${error}\n${logs.join('\n')}`);
  const ms = (t) => `${t.toFixed(0)} ms`;
  for (const row of JSON.parse(report)) {
    for (const [provider, tolerance] of [['webgpu', 1e-3], ['wasm', 1e-4]]) {
      const r = row[provider];
      assert.equal(typeof r.difference, 'number', `${row.model} on ${provider}: ${r.difference}`);
      assert.ok(r.difference <= tolerance, `${row.model} on ${provider} (${r.device}): largest difference ${r.difference} of the largest output, over ${tolerance}`);
      if (process.env.UNICOMPUTE_REQUIRE_WEBGPU === '1' && provider === 'webgpu') assert.equal(r.device, 'webgpu');
      console.log(`page: ${row.model} on ${r.device}: within ${r.difference.toExponential(1)} of onnxruntime-web; create ${ms(r.create)}, first run ${ms(r.first)}, median ${ms(r.median)} (onnxruntime-web wasm: ${ms(row.ort.create)}, ${ms(row.ort.first)}, ${ms(row.ort.median)})`);
    }
  }
} finally {
  await browser.close();
  close();
}
