// The benchmark page's driver: reads the choices (from the form, or the URL when a script drives
// the page), runs every engine on every workload and shows the medians, the ratios and where
// unicompute's time goes. `?run=1` starts at once; the result is also `window.benchResult` and
// `document.body.dataset.done` is set when it is complete.
import { WORKLOADS, check } from './workloads.js';
import * as one from './node_modules/unicompute/index.js';
import * as threaded from './node_modules/unicompute/threads.js';
import { OURS, backendOf, prepareOurs } from './ours.js';
import { PEERS, loadPeer, preparePeer } from './peers.js';

const ENGINES = [...OURS, ...PEERS];
/** The peers each of our engines is compared with (same kind of hardware). */
const RIVALS = { 'unicompute-webgpu': ['tfjs-webgpu', 'ort-webgpu'], 'unicompute-cpu': ['ort-wasm'], 'unicompute-cpu-threads': ['ort-wasm-threads'] };
const $ = (id) => document.getElementById(id);

/** The choices in the URL (`engines`, `workloads`, `sizes` as JSON, `runs`, `warmup`, `threads`). */
function fromUrl() {
  const q = new URLSearchParams(location.search);
  const list = (key, all) => (q.get(key) ? q.get(key).split(',') : all);
  const sizes = Object.fromEntries(Object.entries(WORKLOADS).map(([w, d]) => [w, { ...d.sizes }]));
  for (const [w, s] of Object.entries(JSON.parse(q.get('sizes') ?? '{}'))) Object.assign(sizes[w] ?? {}, s);
  return {
    engines: list('engines', ENGINES),
    workloads: list('workloads', Object.keys(WORKLOADS)),
    sizes,
    runs: Number(q.get('runs') ?? 10),
    warmup: Number(q.get('warmup') ?? 3),
    threads: Number(q.get('threads') ?? 1),
    run: q.get('run') === '1',
  };
}

/** Fill the form with `choice`. */
function showForm(choice) {
  const boxes = (id, all, on) => {
    for (const name of all) {
      const label = document.createElement('label');
      label.innerHTML = `<input type="checkbox" name="${id}" value="${name}" ${on.includes(name) ? 'checked' : ''}> ${name} `;
      $(id).append(label);
    }
  };
  boxes('engines', ENGINES, choice.engines);
  boxes('workloads', Object.keys(WORKLOADS), choice.workloads);
  $('sizes').value = JSON.stringify(choice.sizes, null, 1);
  for (const key of ['runs', 'warmup', 'threads']) $(key).value = choice[key];
}

/** The choices in the form. */
function fromForm() {
  const checked = (name) => [...document.querySelectorAll(`input[name=${name}]:checked`)].map((i) => i.value);
  return {
    engines: checked('engines'),
    workloads: checked('workloads'),
    sizes: JSON.parse($('sizes').value),
    runs: Number($('runs').value),
    warmup: Number($('warmup').value),
    threads: Number($('threads').value),
  };
}

/** Open the device of our `engine`. */
async function loadOurs(engine, { threads = 1 } = {}) {
  const backend = backendOf(engine);
  const device = engine === 'unicompute-cpu-threads' ? await threaded.init({ backend, threads }) : await one.init(backend);
  if (device.backend !== backend) throw new Error(`no ${backend} device: ${device.fallbackReason ?? device.selectionReason}`);
  return device;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Open every engine once; an engine that cannot load is reported, not fatal. */
async function loadEngines(choice) {
  const loaded = {};
  for (const engine of choice.engines) {
    try {
      loaded[engine] = OURS.includes(engine) ? { device: await loadOurs(engine, { threads: choice.threads }) } : (await loadPeer(engine, { threads: choice.threads }), {});
    } catch (e) {
      loaded[engine] = { error: String(e?.message ?? e) };
    }
  }
  return loaded;
}

/** One engine on one workload: correctness, then the median of the timed runs. */
async function measure(engine, loaded, workload, sizes, inputs, choice) {
  const w = WORKLOADS[workload];
  const base = { workload, engine, sizes };
  if (loaded.error) return { ...base, error: loaded.error };
  let runner;
  try {
    runner = loaded.device ? await prepareOurs(loaded.device, workload, sizes, inputs) : await preparePeer(engine, workload, sizes, inputs);
    const err = check(workload, sizes, inputs, await runner.run());
    if (!(err < 1e-3)) return { ...base, error: `wrong result: relative error ${err}` };
    for (let i = 1; i < choice.warmup; i++) await runner.run();
    const times = [];
    for (let i = 0; i < choice.runs; i++) {
      const t0 = performance.now();
      await runner.run();
      times.push(performance.now() - t0);
    }
    const ms = median(times);
    const { flops, bytes } = w.work(sizes);
    const compute = ['matmul', 'conv2d', 'attention'].includes(workload);
    const rate = compute ? flops / ms / 1e6 : bytes / ms / 1e6;
    const result = { ...base, median_ms: ms, rate, unit: compute ? 'GFLOP/s' : 'GB/s', max_rel_err: err };
    if (runner.breakdown) result.breakdown = await medianBreakdown(runner, 3);
    return result;
  } catch (e) {
    return { ...base, error: String(e?.message ?? e) };
  } finally {
    runner?.dispose();
  }
}

/** The per-field medians of `n` breakdowns of one run each. */
async function medianBreakdown(runner, n) {
  const all = [];
  for (let i = 0; i < n; i++) all.push(await runner.breakdown());
  return Object.fromEntries(Object.keys(all[0]).map((k) => [k, median(all.map((b) => b[k]))]));
}

/** Our rate over the best rival's, per engine of ours, for each workload. */
function ratios(results) {
  const out = [];
  for (const [ours, rivals] of Object.entries(RIVALS)) {
    for (const r of results.filter((x) => x.engine === ours && x.rate)) {
      const peers = results.filter((x) => x.workload === r.workload && rivals.includes(x.engine) && x.rate);
      if (peers.length === 0) continue;
      const best = peers.reduce((a, b) => (a.rate > b.rate ? a : b));
      out.push({ workload: r.workload, ours, best: best.engine, ratio: r.rate / best.rate });
    }
  }
  return out;
}

/** Draw the results table, the ratios and the breakdown. */
function show(results, choice) {
  const fmt = (x, d = 3) => (x === undefined ? '' : Number(x.toPrecision(d)));
  const rows = choice.workloads.map((w) => {
    const cells = choice.engines.map((e) => {
      const r = results.find((x) => x.workload === w && x.engine === e);
      if (!r) return '<td></td>';
      return r.error ? `<td class="err" title="${r.error.replaceAll('"', "'")}">error</td>` : `<td>${fmt(r.median_ms)} ms<br>${fmt(r.rate)} ${r.unit}</td>`;
    });
    return `<tr><td class="name">${w}</td>${cells.join('')}</tr>`;
  });
  $('results').innerHTML = `<tr><th>workload</th>${choice.engines.map((e) => `<th>${e}</th>`).join('')}</tr>${rows.join('')}`;
  const keys = [...new Set(results.flatMap((r) => Object.keys(r.breakdown ?? {})))];
  const brows = results.filter((r) => r.breakdown).map((r) => `<tr><td class="name">${r.workload}</td><td class="name">${r.engine}</td>${keys.map((k) => `<td>${fmt(r.breakdown[k])}</td>`).join('')}</tr>`);
  $('breakdown').innerHTML = `<tr><th>workload</th><th>engine</th>${keys.map((k) => `<th>${k}</th>`).join('')}</tr>${brows.join('')}`;
}

/** Run everything `choice` asks for. */
async function runAll(choice) {
  const loaded = await loadEngines(choice);
  const results = [];
  for (const workload of choice.workloads) {
    const sizes = choice.sizes[workload];
    const inputs = WORKLOADS[workload].inputs(sizes);
    for (const engine of choice.engines) {
      $('status').textContent = `running ${workload} on ${engine}...`;
      results.push(await measure(engine, loaded[engine], workload, sizes, inputs, choice));
      show(results, choice);
    }
  }
  const info = Object.fromEntries(Object.entries(loaded).filter(([, l]) => l.device).map(([e, l]) => [e, l.device.info()]));
  const out = { date: new Date().toISOString(), userAgent: navigator.userAgent, crossOriginIsolated, choice, devices: info, results, ratios: ratios(results) };
  $('json').textContent = JSON.stringify(out, null, 1);
  $('status').textContent = 'done';
  return out;
}

const initial = fromUrl();
showForm(initial);
$('form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  $('go').disabled = true;
  try {
    window.benchResult = await runAll(fromForm());
  } finally {
    $('go').disabled = false;
  }
});
if (initial.run) {
  runAll(initial)
    .then((r) => (window.benchResult = r))
    .catch((e) => (document.body.dataset.error = String(e?.stack ?? e)))
    .finally(() => (document.body.dataset.done = 'yes'));
}
