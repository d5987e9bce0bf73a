//! Captured work on CUDA: a CUDA graph made by stream capture, with what its nodes use. The
//! graph holds the blocks its kernels and copies read and write, the pinned host bytes of its
//! writes and its user kernels' modules for as long as it lives; each replay holds the graph
//! until it has run.
//!
//! While any stream captures, nothing may synchronise a whole device or context (CUDA
//! invalidates the capture): freeing device or pinned memory and destroying a cuBLAS handle
//! may, so [`release`] defers them until the last capture has ended.

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

/// Streams capturing now, in this process.
static CAPTURES: AtomicUsize = AtomicUsize::new(0);
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
        }
    }
}

/// Release `what` now, or once no stream captures.
pub(crate) fn release(what: Release) {
    let mut deferred = lock(&DEFERRED);
    if CAPTURES.load(Ordering::Acquire) > 0 {
        deferred.push(what);
        return;
    }
    drop(deferred);
    what.run();
}

/// A stream begins capturing.
pub(super) fn capture_begins() {
    let _deferred = lock(&DEFERRED);
    CAPTURES.fetch_add(1, Ordering::AcqRel);
}

/// A stream has stopped capturing: the last one releases what was deferred.
pub(super) fn capture_ends() {
    let ready = {
        let mut deferred = lock(&DEFERRED);
        match CAPTURES.fetch_sub(1, Ordering::AcqRel) {
            1 => std::mem::take(&mut *deferred),
            _ => Vec::new(),
        }
    };
    for what in ready {
        what.run();
    }
}
