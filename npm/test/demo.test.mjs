// Clicks through the demo page (web/, built with Vite from the packed package) in headless
// Chromium: the device and auto's reason are shown; the playground's kernel runs and gives
// 2 x for the generated x; an inserted error is reported at its line and column, with the
// line marked in the editor; the benchmark draws its chart. Saves two screenshots and checks
// they are not blank. Usage: node demo.test.mjs <dist folder> <screenshot folder>.
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';
import { serve } from './serve-static.mjs';

const [folder, shots] = process.argv.slice(2);
const server = await serve(folder);
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--enable-unsafe-webgpu', '--no-sandbox'] });
const logs = [];
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  page.on('console', (m) => logs.push(m.text()));
  page.on('pageerror', (e) => logs.push(`page error: ${e.message}`));
  await page.goto(server.url);
  await page.waitForSelector('body[data-ready="yes"]', { timeout: 60_000 });
  const info = await page.textContent('#device-info');
  assert.match(info, /backend(cpu|webgpu)/, info);
  assert.match(info, /why.{10,}/, `auto says why: ${info}`);

  // The default kernel: y = 2 x + y with y starting at zero.
  await page.click('#run-kernel');
  await page.waitForSelector('body[data-kernel]', { timeout: 60_000 });
  const ran = await page.evaluate(() => ({ ...document.body.dataset }));
  assert.equal(ran.kernel, 'ok', `${await page.textContent('#kernel-status')}\n${logs.join('\n')}`);
  const [y] = JSON.parse(ran.kernelResult);
  assert.deepEqual(y.values, Array.from({ length: 12 }, (_, i) => 2 * (((i % 13) - 6) * 0.5)));

  // An error: reported at its line and column, the line marked in the gutter.
  await page.click('#break-kernel');
  await page.click('#run-kernel');
  await page.waitForSelector('body[data-kernel="error"]', { timeout: 60_000 });
  const status = await page.textContent('#kernel-status');
  assert.match(status, /^line 10, column \d+: .*z/, status);
  assert.equal(await page.textContent('#gutter .error'), '10');
  const playground = await page.locator('#playground').screenshot({ path: `${shots}/demo-playground.png` });

  // The benchmark: every workload on unicompute's two backends, drawn.
  await page.fill('#runs', '2');
  await page.click('#run-bench');
  await page.waitForSelector('body[data-bench="done"]', { timeout: 300_000 });
  const results = JSON.parse(await page.evaluate(() => document.body.dataset.benchResult));
  for (const [workload, byEngine] of Object.entries(results)) {
    for (const engine of ['unicompute-webgpu', 'unicompute-cpu']) assert.ok(byEngine[engine].ms > 0, `${workload} on ${engine}: ${JSON.stringify(byEngine[engine])}`);
  }
  const colours = await page.evaluate(() => {
    const c = document.getElementById('chart');
    const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    const seen = new Set();
    for (let i = 0; i < px.length; i += 4 * 7) seen.add(`${px[i]},${px[i + 1]},${px[i + 2]},${px[i + 3]}`);
    return seen.size;
  });
  assert.ok(colours >= 5, `the chart is drawn (${colours} colours on the canvas)`);
  const bench = await page.locator('#benchmark').screenshot({ path: `${shots}/demo-benchmark.png` });
  for (const [name, png] of [['playground', playground], ['benchmark', bench]]) assert.ok(png.length > 20_000, `the ${name} screenshot is not blank (${png.length} bytes)`);
  const tf = Object.values(results).map((r) => r['tfjs-webgpu']);
  console.log(`demo: device shown, kernel ran, error at ${status.slice(0, 20)}…, chart drawn (TF.js: ${tf.every((r) => r.ms) ? 'ran' : tf.find((r) => r.error)?.error}); screenshots in ${shots}`);
} catch (e) {
  console.error(logs.join('\n'));
  throw e;
} finally {
  await browser.close();
  server.close();
}
