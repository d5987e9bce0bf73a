//! The CPU backend's rayon pool on Web Workers (the `threads` feature; the npm package's
//! `unicompute/threads`). The thread that starts the pool is its worker 0, so it works on the
//! ops it records instead of only waiting for them: a browser's main thread cannot block, so
//! a waiting main thread would spin and take a core from the pool. The other workers are Web
//! Workers (npm/worker.js) that instantiate this module on the shared memory and each run one
//! rayon worker for good.

use rayon::ThreadBuilder;
use wasm_bindgen::prelude::*;
use wasm_sync::{Condvar, Mutex};

use super::error::invalid;

/// Rayon's workers, from the pool's spawn handler to the Web Workers waiting to run them.
/// wasm_sync's lock spins on a browser's main thread, where waiting is an error.
static WAITING: Mutex<Vec<ThreadBuilder>> = Mutex::new(Vec::new());
static HANDED: Condvar = Condvar::new();

/// What a Web Worker needs to join: `[module, memory]` (this compiled module and its shared
/// memory).
#[wasm_bindgen(js_name = threadShare)]
pub fn thread_share() -> js_sys::Array {
    js_sys::Array::of2(&wasm_bindgen::module(), &wasm_bindgen::memory())
}

/// Make the global pool: `threads` in all, this thread as worker 0 and `threads - 1` rayon
/// workers for the Web Workers already waiting in [`pool_worker`] (rayon returns once every
/// worker runs).
#[wasm_bindgen(js_name = buildThreadPool)]
pub fn build_thread_pool(threads: usize) -> Result<(), JsValue> {
    if threads == 0 {
        return Err(invalid("threads is 0: expected at least 1".into()));
    }
    crate::ops::common::cpu::prepare_gemm();
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .use_current_thread()
        .spawn_handler(|thread| {
            WAITING
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(thread);
            HANDED.notify_all();
            Ok(())
        })
        .build_global()
        .map_err(|e| invalid(format!("starting {threads} threads: {e}")))
}

/// Wait (on a Web Worker, which may) for one of the pool's rayon workers and run it for good.
#[wasm_bindgen(js_name = poolWorker)]
pub fn pool_worker() {
    let mut waiting = WAITING.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if let Some(thread) = waiting.pop() {
            drop(waiting);
            thread.run();
            return;
        }
        waiting = HANDED.wait(waiting).unwrap_or_else(|e| e.into_inner());
    }
}
