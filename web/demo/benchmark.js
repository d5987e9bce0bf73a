// The live benchmark: the workloads of the browser benchmark (../bench/workloads.js, with the
// same inputs, references and rules) at small sizes, on unicompute's WebGPU and CPU devices and
// on TensorFlow.js's WebGPU backend, drawn as a chart of the median milliseconds.
import { init } from 'unicompute';
import { WORKLOADS, check } from '../bench/workloads.js';
import { prepareOurs } from '../bench/ours.js';
import { drawBars } from './chart.js';

/** Sizes small enough for a software adapter to finish in seconds. */
const SIZES = {
  matmul: { m: 128, k: 128, n: 128 },
  softmax: { rows: 256, cols: 256 },
  layer_norm: { rows: 256, cols: 256 },
  add_relu: { n: 1 << 16 },
  sum: { rows: 256, cols: 256 },
  conv2d: { n: 1, c: 8, h: 16, w: 16, k: 8, r: 3, pad: 1, stride: 1 },
  attention: { b: 1, h: 2, s: 64, d: 32 },
};
const ENGINES = ['unicompute-webgpu', 'unicompute-cpu', 'tfjs-webgpu'];
const $ = (id) => document.getElementById(id);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** TF.js core with its WebGPU backend (bundled), or why it cannot run here. */
async function loadTfjs() {
  if (!navigator.gpu) throw new Error('no WebGPU in this browser');
  const tf = await import('@tensorflow/tfjs-core');
  await import('@tensorflow/tfjs-backend-webgpu');
  if (!(await tf.setBackend('webgpu'))) throw new Error('the TF.js WebGPU backend did not start');
  await tf.ready();
  return tf;
}

/** Open each engine; one that cannot open is reported in its results. */
async function openEngines() {
  const open = async (engine) => {
    if (engine === 'tfjs-webgpu') return { tf: await loadTfjs() };
    const backend = engine === 'unicompute-webgpu' ? 'webgpu' : 'cpu';
    const device = await init(backend);
    if (device.backend !== backend) throw new Error(`no ${backend} device: ${device.fallbackReason}`);
    return { device };
  };
  return Object.fromEntries(await Promise.all(ENGINES.map(async (e) => [e, await open(e).catch((err) => ({ error: String(err?.message ?? err) }))])));
}

/** One engine on one workload: checked once, then the median of `runs` timed runs. */
async function measure(engine, opened, workload, runs) {
  if (opened.error) return { error: opened.error };
  const sizes = SIZES[workload];
  const inputs = WORKLOADS[workload].inputs(sizes);
  const { prepareTfjs } = opened.tf ? await import('../bench/peers.js') : {};
  const runner = opened.device ? await prepareOurs(opened.device, workload, sizes, inputs) : await prepareTfjs(opened.tf, workload, sizes, inputs);
  try {
    const err = check(workload, sizes, inputs, await runner.run());
    if (!(err < 1e-3)) return { error: `wrong result (relative error ${err})` };
    // Pages that are not cross-origin isolated get a coarse clock (0.1 ms): each sample times
    // as many runs as take 2 ms, so fast workloads do not round to zero.
    const times = [];
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      let reps = 0;
      do {
        await runner.run();
        reps += 1;
      } while (performance.now() - t0 < 2);
      times.push((performance.now() - t0) / reps);
    }
    return { ms: median(times) };
  } finally {
    runner.dispose();
  }
}

/** Run every engine on every workload, redrawing the chart as results come in. */
async function runAll(runs) {
  const engines = await openEngines();
  const results = {};
  for (const workload of Object.keys(SIZES)) {
    results[workload] = {};
    for (const engine of ENGINES) {
      $('bench-status').textContent = `${workload} on ${engine}…`;
      results[workload][engine] = await measure(engine, engines[engine], workload, runs).catch((e) => ({ error: String(e?.message ?? e) }));
      drawBars($('chart'), results, ENGINES);
    }
  }
  for (const { device } of Object.values(engines)) device?.dispose();
  return results;
}

/** The results as a text table (ms, or why an engine could not run). */
function table(results) {
  const cell = (r) => (r.ms !== undefined ? r.ms.toFixed(2).padStart(9) : `  ${r.error}`);
  const head = `${'workload'.padEnd(12)}${ENGINES.map((e) => e.padStart(19)).join('')}`;
  return [head, ...Object.entries(results).map(([w, byEngine]) => `${w.padEnd(12)}${ENGINES.map((e) => cell(byEngine[e]).padStart(19)).join('')}`)].join('\n');
}

/** Wire the benchmark button. */
export function setupBenchmark() {
  $('run-bench').addEventListener('click', async () => {
    $('run-bench').disabled = true;
    try {
      const results = await runAll(Number($('runs').value));
      $('bench-table').textContent = `median ms per run (lower is better)\n${table(results)}`;
      $('bench-status').textContent = 'done';
      Object.assign(document.body.dataset, { bench: 'done', benchResult: JSON.stringify(results) });
    } catch (e) {
      $('bench-status').textContent = `failed: ${e.message}`;
      document.body.dataset.bench = 'error';
    } finally {
      $('run-bench').disabled = false;
    }
  });
}
