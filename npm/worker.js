// One thread of the CPU backend's pool (`unicompute/threads`): a module Web Worker that
// instantiates the threads build on the page's shared memory, says it is ready, and then runs
// one rayon worker for good (src/wasm/threads.rs).
self.onmessage = async ({ data: { glue, module, memory } }) => {
  try {
    const wasm = await import(glue);
    await wasm.default({ module_or_path: module, memory });
    postMessage({ ready: true });
    wasm.poolWorker();
  } catch (e) {
    postMessage({ error: String(e?.stack ?? e) });
  }
};
