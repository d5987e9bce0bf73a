//! How an op reaches a backend. Every op implements [`OpRequest`]: one method per backend and no
//! default methods, so the compiler asks each op for each backend's kernel (or an explicit
//! "unsupported" answer). [`launch`] is the one place that matches on the backend.

use std::sync::Arc;

use super::cost::OpCost;
use super::Operand;
use crate::hal::{BackendDevice, BatchImpl, BatchOf, Block, Cuda, DeviceOf, OpContext, WebGpu};
use crate::profile::{self, Decision};
use crate::runtime::device::Init;
use crate::{Error, Queue, Result};

/// A validated op, ready to run on any backend.
pub(crate) trait OpRequest {
    /// Name, shapes, bytes and FLOPs of the launch, for the profiler.
    fn cost(&self) -> OpCost;
    /// Every operand the launch reads or writes, inputs then outputs (for ordering across
    /// queues, and the profiler's shapes).
    fn operands(&self) -> Vec<&Operand<'_>>;
    /// Run on the CPU backend, to completion.
    fn cpu(&self) -> Result<()>;
    /// Record on a wgpu queue.
    fn webgpu(&self, q: &BatchOf<WebGpu>, dev: &DeviceOf<WebGpu>, cx: &OpContext<'_>)
        -> Result<()>;
    /// Record on a CUDA stream.
    fn cuda(&self, q: &BatchOf<Cuda>, dev: &DeviceOf<Cuda>, cx: &OpContext<'_>) -> Result<()>;
}

/// The backend methods of a [`OpRequest`] impl that hand the op to its folder's `cpu`, `webgpu`
/// and `cuda` modules: `backends!(name)` calls `cpu::name(self)`,
/// `webgpu::name(self, q, dev, cx)` and `cuda::name(self, q, dev, cx)`, so a missing
/// backend function is a compile error. An op without a kernel on some backend writes that
/// method itself, returning `Error::Unsupported`. In a build without a backend's feature its
/// method takes the stand-in types, which have no values.
macro_rules! backends {
    ($f:ident) => {
        fn cpu(&self) -> $crate::Result<()> {
            cpu::$f(self)
        }

        fn webgpu(
            &self,
            q: &$crate::hal::BatchOf<$crate::hal::WebGpu>,
            dev: &$crate::hal::DeviceOf<$crate::hal::WebGpu>,
            cx: &$crate::hal::OpContext<'_>,
        ) -> $crate::Result<()> {
            #[cfg(feature = "webgpu")]
            return webgpu::$f(self, q, dev, cx);
            #[cfg(not(feature = "webgpu"))]
            {
                let _ = (dev, cx);
                match *q {}
            }
        }

        fn cuda(
            &self,
            q: &$crate::hal::BatchOf<$crate::hal::Cuda>,
            dev: &$crate::hal::DeviceOf<$crate::hal::Cuda>,
            cx: &$crate::hal::OpContext<'_>,
        ) -> $crate::Result<()> {
            #[cfg(cuda_backend)]
            return cuda::$f(self, q, dev, cx);
            #[cfg(not(cuda_backend))]
            {
                let _ = (dev, cx);
                match *q {}
            }
        }
    };
}
pub(crate) use backends;

/// Record `op` on `queue`: ordered after other queues' use of its memory and, while a profiler
/// records, timed with its cost and the chooser's `decision` (which variant, and why).
pub(crate) fn launch(queue: &Queue, op: &dyn OpRequest, decision: Option<&Decision>) -> Result<()> {
    if op.operands().iter().all(|o| o.layout.numel() == 0) {
        // Nothing to read or write: no launch, whatever the empty views' other extents (an
        // extent past a kernel's u32 indexing is no reason to refuse zero elements).
        return Ok(());
    }
    let device = queue.device();
    let temp = |bytes: u64| device.alloc(bytes, Init::Overwritten, Some(queue));
    let cx = OpContext {
        options: &device.shared.options,
        temp: &temp,
    };
    let describe = |clock, host_start| {
        let cost = op.cost();
        let mut record = profile::record(
            cost.name,
            cost.shapes,
            cost.dtype,
            cost.bytes,
            cost.flops,
            queue.id(),
            clock,
            host_start,
        );
        record.variant = decision
            .map(|d| d.choice.clone())
            .or(cost.variant.map(String::from));
        record.reason = decision.map(|d| d.reason.clone());
        record
    };
    let blocks: Vec<&Arc<Block>> = op.operands().into_iter().map(|o| o.buf).collect();
    queue.record_launch(&blocks, &mut || on_backend(queue, op, &cx), &describe)
}

/// Run `op` with the backend of `queue`.
fn on_backend(queue: &Queue, op: &dyn OpRequest, cx: &OpContext<'_>) -> Result<()> {
    match (&queue.shared.imp, &queue.device().shared.backend) {
        (BatchImpl::Cpu(_), BackendDevice::Cpu(_)) => op.cpu(),
        (BatchImpl::WebGpu(q), BackendDevice::WebGpu(d)) => op.webgpu(q, d, cx),
        (BatchImpl::Cuda(q), BackendDevice::Cuda(d)) => op.cuda(q, d, cx),
        _ => Err(Error::Internal(
            "a queue was used with a device of another backend".into(),
        )),
    }
}
