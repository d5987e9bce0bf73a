//! Captured work on CUDA: a CUDA graph made by stream capture, with what its nodes use. The
//! graph holds the blocks its kernels and copies read and write, the pinned host bytes of its
//! writes and its user kernels' modules for as long as it lives; each replay holds the graph
//! until it has run.
//!
//! While any stream captures, nothing may synchronise a whole device or context (CUDA
//! invalidates the capture): freeing device or pinned memory, destroying a cuBLAS handle and
//! unloading a kernel module or a graph may, so [`release`] defers them until the last capture
//! has ended, and no capture begins while one runs (on an H200, a cuBLAS handle destroyed as a
//! capture began broke the capture, or crashed inside `cuCtxSynchronize`).

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cudarc::driver::{result, CudaContext, CudaGraph, CudaStream};

use super::queue::Retained;
use super::CudaDevice;
use crate::base::signal::lock;
use crate::Result;

/// An instantiated graph.
struct Exec(CudaGraph);

// SAFETY: CUDA lets graph handles be used from any thread as long as calls on one graph are
// serialised; `CudaWork` keeps `Exec` behind a mutex, so they are.
unsafe impl Send for Exec {}

/// A queue's captured work.
pub(crate) struct CudaWork {
    /// `None` when nothing was captured.
    exec: Option<Mutex<Exec>>,
    /// What the graph's nodes use, held for its life.
    _retained: Retained,
}

impl CudaWork {
    pub(super) fn new(graph: Option<CudaGraph>, retained: Retained) -> CudaWork {
        CudaWork {
            exec: graph.map(|g| Mutex::new(Exec(g))),
            _retained: retained,
        }
    }

    /// Launch one run on `stream` (its context bound to this thread).
    pub(super) fn launch(&self, dev: &CudaDevice, stream: &CudaStream) -> Result<()> {
        let Some(exec) = &self.exec else {
            return Ok(());
        };
        let exec = lock(exec);
        // SAFETY: the graph's nodes use only blocks and pinned bytes this value holds, and the
        // replaying queue holds this value until the run has finished.
        unsafe { result::graph::launch(exec.0.cu_graph_exec(), stream.cu_stream()) }
            .map_err(|e| dev.fail("launching a CUDA graph", e))
    }
}

impl Drop for CudaWork {
    /// Destroying a graph may synchronise its context: not while a stream captures.
    fn drop(&mut self) {
        if let Some(exec) = self.exec.take() {
            release_objects(exec);
        }
    }
}

/// Streams capturing now, in this process.
static CAPTURES: AtomicUsize = AtomicUsize::new(0);
thread_local! {
    /// This thread runs releases, holding the [`DEFERRED`] lock.
    static RELEASING: Cell<bool> = const { Cell::new(false) };
}

/// What [`release`] deferred until no stream captures.
static DEFERRED: Mutex<Vec<Release>> = Mutex::new(Vec::new());

/// Something whose release may synchronise the device.
pub(crate) enum Release {
    /// Device memory from `cuMemAlloc`.
    Device { ptr: u64, ctx: Arc<CudaContext> },
    /// Pinned host memory from `cuMemHostAlloc`.
    Host { ptr: usize, ctx: Arc<CudaContext> },
    /// A queue's cuBLAS handle (destroyed on drop, on its context).
    Blas {
        handle: super::blas::BlasHandle,
        ctx: Arc<CudaContext>,
    },
    /// Driver objects that bind their own context when dropped: kernel modules, graphs.
    Objects(Box<dyn Send>),
}

impl Release {
    fn run(self) {
        match self {
            Release::Device { ptr, ctx } => {
                if ctx.bind_to_thread().is_ok() {
                    // SAFETY: `ptr` came from cuMemAlloc and is freed once, here.
                    let _ = unsafe { result::free_sync(ptr) };
                }
            }
            Release::Host { ptr, ctx } => {
                if ctx.bind_to_thread().is_ok() {
                    // SAFETY: `ptr` came from cuMemHostAlloc and is freed once, here.
                    let _ = unsafe { result::free_host(ptr as *mut std::ffi::c_void) };
                }
            }
            Release::Blas { handle, ctx } => {
                let _ = ctx.bind_to_thread();
                drop(handle);
            }
            Release::Objects(what) => drop(what),
        }
    }
}

/// Release `what` now, or once no stream captures. A release that runs now holds the lock
/// that [`capture_begins`] takes, so that no capture begins while it may synchronise.
pub(crate) fn release(what: Release) {
    if RELEASING.with(Cell::get) {
        // Released by something this thread is releasing: the lock is held already.
        what.run();
        return;
    }
    let mut deferred = lock(&DEFERRED);
    if CAPTURES.load(Ordering::Acquire) > 0 {
        deferred.push(what);
        return;
    }
    run_held([what]);
    drop(deferred);
}

/// Drop `what`, driver objects that bind their own context (modules, graphs), now or once no
/// stream captures.
pub(crate) fn release_objects(what: impl Send + 'static) {
    release(Release::Objects(Box::new(what)));
}

/// Run releases while this thread holds the [`DEFERRED`] lock.
fn run_held(releases: impl IntoIterator<Item = Release>) {
    RELEASING.with(|r| r.set(true));
    for what in releases {
        what.run();
    }
    RELEASING.with(|r| r.set(false));
}

/// A stream begins capturing (once no release is running).
pub(super) fn capture_begins() {
    let _deferred = lock(&DEFERRED);
    CAPTURES.fetch_add(1, Ordering::AcqRel);
}

/// A stream has stopped capturing: the last one releases what was deferred.
pub(super) fn capture_ends() {
    let mut deferred = lock(&DEFERRED);
    if CAPTURES.fetch_sub(1, Ordering::AcqRel) == 1 {
        run_held(std::mem::take(&mut *deferred));
    }
}
