//! Captured work on CUDA: a CUDA graph made by stream capture, with what its nodes use. The
//! graph holds the blocks its kernels and copies read and write, and the pinned host bytes of
//! its writes, for as long as it lives; each replay holds the graph until it has run.

use std::sync::Mutex;

use cudarc::driver::{result, CudaGraph, CudaStream};

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
        CudaWork { exec: graph.map(|g| Mutex::new(Exec(g))), _retained: retained }
    }

    /// Launch one run on `stream`.
    pub(super) fn launch(&self, dev: &CudaDevice, stream: &CudaStream) -> Result<()> {
        let Some(exec) = &self.exec else {
            return Ok(());
        };
        let exec = lock(exec);
        // SAFETY: the graph's nodes use only blocks and pinned bytes this value holds, and the
        // replaying queue holds this value until the run has finished.
        unsafe { result::graph::launch(exec.0.cu_graph_exec(), stream.cu_stream()) }.map_err(|e| dev.fail("launching a CUDA graph", e))
    }
}
