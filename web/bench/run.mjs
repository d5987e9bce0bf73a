// Drives the benchmark page in headless Chromium (Debian's, with WebGPU through
// `--enable-unsafe-webgpu`) and prints a table and the JSON. Usage:
//   node run.mjs <page url with query> [result.json]
// scripts/bench-web.sh serves the page and builds the URL.
import { writeFile } from 'node:fs/promises';
import { chromium } from 'playwright-core';

const [url, jsonPath] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--enable-unsafe-webgpu', '--enable-features=Vulkan', '--no-sandbox', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
});
try {
  const page = await browser.newPage();
  page.on('console', (m) => m.type() === 'error' && console.error(`[page] ${m.text()}`));
  page.on('pageerror', (e) => console.error(`[page] ${e.message}`));
  await page.goto(url);
  let last = '';
  while (!(await page.evaluate(() => document.body.dataset.done))) {
    const status = await page.evaluate(() => document.getElementById('status').textContent);
    if (status !== last) console.error(status);
    last = status;
    await page.waitForTimeout(500);
  }
  const error = await page.evaluate(() => document.body.dataset.error);
  if (error) throw new Error(`the page failed: ${error}`);
  const result = await page.evaluate(() => window.benchResult);
  printTables(result);
  if (jsonPath) await writeFile(jsonPath, JSON.stringify(result, null, 1));
  console.log(JSON.stringify(result));
} finally {
  await browser.close();
}

/** The medians, ratios and breakdown as text tables. */
function printTables({ choice, results, ratios }) {
  const fmt = (x) => (x === undefined ? '-' : String(Number(x.toPrecision(3))));
  const cell = (w, e) => {
    const r = results.find((x) => x.workload === w && x.engine === e);
    return !r ? '' : r.error ? `error: ${r.error.slice(0, 60)}` : `${fmt(r.median_ms)} ms ${fmt(r.rate)} ${r.unit}`;
  };
  table(['workload', ...choice.engines], choice.workloads.map((w) => [w, ...choice.engines.map((e) => cell(w, e))]));
  table(['workload', 'ours', 'best rival', 'ours / best'], ratios.map((r) => [r.workload, r.ours, r.best, `${fmt(r.ratio)}x`]));
  const keys = [...new Set(results.flatMap((r) => Object.keys(r.breakdown ?? {})))];
  table(['workload', 'engine', ...keys], results.filter((r) => r.breakdown).map((r) => [r.workload, r.engine, ...keys.map((k) => fmt(r.breakdown[k]))]));
}

/** Print `rows` under `head` as a Markdown table. */
function table(head, rows) {
  console.log(`\n| ${head.join(' | ')} |\n|${head.map(() => '---').join('|')}|`);
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}
