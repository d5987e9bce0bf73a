// Drives the model page (models.html) in headless Chromium: every model on every engine, in
// rounds, the engines in turn (each round starts one engine later), each measurement in a
// fresh browser context. The figures are the medians over the rounds; the outputs of the
// first round are compared with onnxruntime-web wasm's (one thread) and with the native
// onnxruntime CPU outputs stored beside the model (expected/). Prints Markdown tables and the
// JSON, which it also writes to `out.json`. Usage (scripts/bench-models-web.sh serves the page):
//   node run-models.mjs <page folder url> <models folder> <out.json> MODEL...
// Environment: ENGINES (default all six), ROUNDS (2), RUNS (20), WARMUP (3), THREADS (2),
// BUDGET (seconds the warm-ups and runs of one measurement may take after its first run, 60:
// a slow engine makes fewer runs, at least one), TIMEOUT (seconds a whole measurement may take,
// 900) and CHROMIUM (default /usr/bin/chromium).
import { readFile, readdir, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { fromBase64, numbers, parseNpy } from './npy.js';

const [base, modelsDir, jsonPath, ...models] = process.argv.slice(2);
if (!models.length) throw new Error('usage: node run-models.mjs <page folder url> <models folder> <out.json> MODEL...');
const env = (key, fallback) => process.env[key] || fallback;
const choice = {
  engines: env('ENGINES', 'unicompute-webgpu unicompute-cpu unicompute-cpu-threads ort-webgpu ort-wasm ort-wasm-threads').split(/[\s,]+/),
  rounds: Number(env('ROUNDS', 2)),
  runs: Number(env('RUNS', 20)),
  warmup: Number(env('WARMUP', 3)),
  threads: Number(env('THREADS', 2)),
  budget_s: Number(env('BUDGET', 60)),
  timeout_s: Number(env('TIMEOUT', 900)),
};
/** The onnxruntime-web engine each of ours is compared with (the same kind of device). */
const RIVAL = { 'unicompute-webgpu': 'ort-webgpu', 'unicompute-cpu': 'ort-wasm', 'unicompute-cpu-threads': 'ort-wasm-threads' };
/** The engine whose outputs the others are compared with. */
const REFERENCE = 'ort-wasm';
/** The figures that are medians over the rounds. */
const FIGURES = ['load_ms', 'create_ms', 'first_ms', 'median_ms', 'p90_ms', 'wasm_growth_bytes', 'wasm_heap_bytes', 'gpu_peak_bytes', 'pool_peak_bytes'];

const browser = await chromium.launch({
  executablePath: env('CHROMIUM', '/usr/bin/chromium'),
  args: ['--enable-unsafe-webgpu', '--enable-features=Vulkan', '--no-sandbox', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
});
const loadStart = loadavg();
try {
  const adapter = await adapterInfo();
  const rounds = {};
  const records = [];
  for (const model of models) {
    for (let r = 0; r < choice.rounds; r++) {
      const order = choice.engines.map((_, i) => choice.engines[(i + r) % choice.engines.length]);
      for (const engine of order) {
        const one = await measure(model, engine, r === 0);
        ((rounds[model] ??= {})[engine] ??= []).push(one);
        console.error(`${model} ${engine} round ${r + 1}: ${one.error ? `error: ${one.error}` : `median ${one.median_ms.toFixed(2)} ms`}`);
      }
    }
    records.push(...(await summarize(model, rounds[model])));
    console.error(rows(records.filter((r) => r.model === model)).map((r) => `| ${r.join(' | ')} |`).join('\n'));
  }
  const result = { choice, adapter, browser: browser.version(), load_average: [loadStart, loadavg()], records, rounds: stripOutputs(rounds) };
  printTables(result);
  await writeFile(jsonPath, JSON.stringify(result, null, 1));
  console.log(JSON.stringify({ choice, adapter, records }));
} finally {
  await browser.close();
}

/** What WebGPU adapter the pages get (vendor, architecture, device, description), or null. */
async function adapterInfo() {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    await page.goto(`${base}models.html?engine=none`);
    return await page.evaluate(async () => {
      const info = (await navigator.gpu?.requestAdapter())?.info;
      return info ? { vendor: info.vendor, architecture: info.architecture, device: info.device, description: info.description } : null;
    });
  } finally {
    await context.close();
  }
}

/** One measurement of `model` on `engine` in a fresh context: the page's result or `{ error }`. */
async function measure(model, engine, outputs) {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const logs = [];
    page.on('console', (m) => m.type() === 'error' && logs.push(m.text()));
    page.on('pageerror', (e) => logs.push(e.message));
    const { runs, warmup, threads, budget_s: budget } = choice;
    const query = new URLSearchParams({ model, engine, runs, warmup, threads, budget, outputs: outputs ? 1 : 0 });
    await page.goto(`${base}models.html?${query}`);
    await page.waitForSelector('body[data-done="yes"]', { timeout: choice.timeout_s * 1e3, state: 'attached' });
    const error = await page.evaluate(() => document.body.dataset.error);
    if (error) return { error: [error, ...logs].join(' | ').slice(0, 300) };
    return await page.evaluate(() => window.benchResult);
  } catch (e) {
    return { error: String(e?.message ?? e).split('\n')[0].slice(0, 300) };
  } finally {
    await context.close();
  }
}

/** Each engine's record of `model`: the medians over its rounds and its outputs' differences. */
async function summarize(model, byEngine) {
  const expected = await expectedOutputs(model);
  const reference = outputsOf(byEngine[REFERENCE]?.[0]);
  return choice.engines.map((engine) => {
    const ok = byEngine[engine].filter((r) => !r.error);
    const record = { model, engine };
    if (!ok.length) return { ...record, error: byEngine[engine][0].error };
    if (ok.length < byEngine[engine].length) record.failed_rounds = byEngine[engine].length - ok.length;
    for (const key of ['backend', 'device', 'threads']) if (ok[0][key] !== undefined) record[key] = ok[0][key];
    record.runs = Math.min(...ok.map((r) => r.runs_done));
    for (const key of FIGURES) {
      const values = ok.map((r) => r[key]).filter((v) => typeof v === 'number');
      if (values.length) record[key] = median(values);
    }
    const got = outputsOf(byEngine[engine][0]);
    if (got && reference) record.max_abs_diff = difference(got, reference);
    if (got && expected) record.max_abs_diff_native = difference(savedNames(got), expected);
    return record;
  });
}

/** A page result's outputs as `{ name: { type, dims, values } }`, or undefined. */
function outputsOf(result) {
  if (!result?.outputs) return undefined;
  return Object.fromEntries(Object.entries(result.outputs).map(([name, { type, dims, data }]) => [name, { type, dims, values: numbers(type, fromBase64(type, data)) }]));
}

/** `outputs` by the names their files in expected/ have (other than [A-Za-z0-9._-] as `_`). */
function savedNames(outputs) {
  return Object.fromEntries(Object.entries(outputs).map(([name, value]) => [name.replace(/[^A-Za-z0-9._-]/g, '_'), value]));
}

/** The native onnxruntime outputs in expected/ (by savedNames), or undefined. */
async function expectedOutputs(model) {
  const folder = join(modelsDir, model, 'expected');
  const files = await readdir(folder).catch(() => []);
  const outputs = {};
  for (const file of files.filter((f) => f.endsWith('.npy'))) {
    const { type, dims, data } = parseNpy(await readFile(join(folder, file)));
    outputs[file.slice(0, -4)] = { type, dims, values: numbers(type, data) };
  }
  return Object.keys(outputs).length ? outputs : undefined;
}

/** The largest |got - want| over every output of `want`, or a string saying what differs. */
function difference(got, want) {
  let worst = 0;
  for (const [name, w] of Object.entries(want)) {
    const g = got[name];
    if (!g) return `no output ${name}`;
    if (g.dims.join() !== w.dims.join()) return `${name}: dims [${g.dims}] vs [${w.dims}]`;
    for (let i = 0; i < w.values.length; i++) {
      const [a, b] = [g.values[i], w.values[i]];
      // NaN against a number, or infinities of opposite signs, count as infinitely far.
      if (a !== b && !(Number.isNaN(a) && Number.isNaN(b))) worst = Math.max(worst, Math.abs(a - b) || Infinity);
    }
  }
  return worst;
}

/** The median of `xs` (of an even count, the mean of the middle two). */
function median(xs) {
  const sorted = [...xs].sort((a, b) => a - b), half = sorted.length / 2;
  return Number.isInteger(half) ? (sorted[half - 1] + sorted[half]) / 2 : sorted[Math.floor(half)];
}

/** The rounds without the outputs (they are large). */
function stripOutputs(rounds) {
  const strip = ({ outputs, ...rest }) => rest;
  return Object.fromEntries(Object.entries(rounds).map(([m, byEngine]) => [m, Object.fromEntries(Object.entries(byEngine).map(([e, rs]) => [e, rs.map(strip)]))]));
}

/** A number to 3 significant digits (anything else as it is, or empty). */
function fmt(x) {
  return typeof x !== 'number' ? (x ?? '') : String(Number(x.toPrecision(3)));
}

/** The main table's rows of `records` (those of one model, or all). */
function rows(records) {
  const mb = (x) => (typeof x === 'number' && x > 0 ? (x / 2 ** 20).toFixed(1) : '-');
  const diff = (x) => (typeof x === 'number' ? x.toExponential(1) : (x ?? ''));
  const at = (model, engine) => records.find((r) => r.model === model && r.engine === engine);
  return records.map((r) => {
    if (r.error) return [r.model, r.engine, `error: ${r.error.slice(0, 120)}`, ...Array(11).fill('')];
    const rival = at(r.model, RIVAL[r.engine]);
    const ratio = rival?.median_ms ? `${fmt(rival.median_ms / r.median_ms)}x` : '';
    return [r.model, r.engine, r.threads ?? '', r.runs, fmt(r.load_ms), fmt(r.create_ms), fmt(r.first_ms), fmt(r.median_ms), fmt(r.p90_ms), ratio,
      mb(r.wasm_growth_bytes), r.engine.includes('webgpu') ? mb(r.gpu_peak_bytes) : '-', diff(r.max_abs_diff), diff(r.max_abs_diff_native)];
  });
}

/** The notes, the main table and the Silero VAD per-chunk table, in Markdown. */
function printTables({ adapter, records, load_average: [start, end] }) {
  const soft = /swiftshader|llvmpipe|lavapipe|software/i.test(JSON.stringify(adapter ?? {}));
  console.log(`\nWebGPU adapter: ${adapter ? Object.values(adapter).filter(Boolean).join(', ') : 'none'}${soft ? ' (a CPU emulating a GPU: the webgpu figures are not GPU speed)' : ''}`);
  console.log(`${choice.rounds} rounds of ${choice.warmup} warm-ups and ${choice.runs} runs (fewer where they would take over ${choice.budget_s} s: 'runs' says how many); medians over the rounds. Threads: ${choice.threads}.`);
  console.log(`${availableParallelism()} logical CPUs; load average (1, 5, 15 min) at the start: ${start.map((x) => x.toFixed(1)).join(', ')}; at the end: ${end.map((x) => x.toFixed(1)).join(', ')}.`);
  table(['model', 'engine', 'threads', 'runs', 'load ms', 'create ms', 'first ms', 'median ms', 'p90 ms', 'vs ORT', 'wasm heap +MB', 'GPU buffers MB',
    `max abs diff vs ${REFERENCE}`, 'vs ORT native'], rows(records));
  const vad = records.filter((r) => r.model === 'silero-vad' && !r.error);
  if (vad.length) {
    console.log('\nSilero VAD, one 512-sample chunk (32 ms of 16 kHz audio) per run: the per-run overhead');
    table(['engine', 'median ms', 'p90 ms', 'x real time'], vad.map((r) => [r.engine, fmt(r.median_ms), fmt(r.p90_ms), fmt(32 / r.median_ms)]));
  }
}

/** Print `rows` under `head` as a Markdown table. */
function table(head, rows) {
  console.log(`\n| ${head.join(' | ')} |\n|${head.map(() => '---').join('|')}|`);
  for (const r of rows) console.log(`| ${r.join(' | ')} |`);
}
