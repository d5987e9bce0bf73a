//! The CUDA backend's [`Backend`] implementation.

use std::sync::Arc;

use super::graph::CudaWork;
use super::{CudaBatch, CudaDevice, CudaFence, DeviceMemory, UserFunction};
use crate::base::dtype::KernelLanguage;
use crate::hal::timer::{Clock, Timing};
use crate::hal::{Backend, Block, FenceImpl, Mapped, UserArg, UserSource};
use crate::{DeviceInfo, Result};

/// The CUDA backend (cudarc): streams, events and NVRTC-compiled kernels.
pub(crate) struct Cuda;

impl Backend for Cuda {
    /// A device ordinal.
    type Adapter = usize;
    type Device = CudaDevice;
    type Memory = DeviceMemory;
    type Batch = CudaBatch;
    type Fence = CudaFence;
    type Program = UserFunction;
    type Graph = CudaWork;

    async fn enumerate() -> Vec<(DeviceInfo, usize)> {
        super::enumerate()
    }

    async fn open(ordinal: usize, info: &DeviceInfo) -> Result<CudaDevice> {
        CudaDevice::open(ordinal, info)
    }

    fn alloc(dev: &CudaDevice, bytes: u64) -> Result<DeviceMemory> {
        dev.alloc(bytes)
    }

    fn fill_now(dev: &CudaDevice, mem: &DeviceMemory, bytes: u64, word: u32) -> Result<()> {
        dev.fill_now(mem, bytes, word)
    }

    fn allocations_are_zeroed(_: &CudaDevice) -> bool {
        false
    }

    fn native_f16(_: &CudaDevice) -> bool {
        false
    }

    fn native_16bit_matmul(_: &CudaDevice) -> bool {
        super::blas::available()
    }

    fn native_16bit_attention(dev: &CudaDevice) -> bool {
        dev.has_matrix_units()
    }

    fn memory_free(dev: &CudaDevice) -> Option<u64> {
        dev.memory_free()
    }

    fn kernels_compiled(dev: &CudaDevice) -> Option<usize> {
        Some(dev.programs_loaded())
    }

    fn user_program(dev: &CudaDevice, k: &UserSource<'_>) -> Option<Result<UserFunction>> {
        Some(match k.language {
            KernelLanguage::Cuda => dev.compile_user(k.source, k.entry),
            KernelLanguage::Wgsl => dev.compile_wgsl(k.source, k.entry, k.constants),
        })
    }

    fn maintain(dev: &CudaDevice) {
        dev.maintain();
    }

    /// Reads and fence waits synchronise their own streams: nothing to wait for here.
    fn wait_idle(_: &CudaDevice) {}

    fn destroy(dev: &CudaDevice) {
        dev.destroy();
    }

    fn check_healthy(dev: &CudaDevice) -> Result<()> {
        dev.check_healthy()
    }

    fn batch(dev: &CudaDevice) -> CudaBatch {
        CudaBatch::new(dev)
    }

    fn write(
        q: &CudaBatch,
        dev: &CudaDevice,
        dst: &Arc<Block>,
        offset: u64,
        data: &[u8],
    ) -> Result<()> {
        q.write(dev, dst, offset, data)
    }

    fn copy(
        q: &CudaBatch,
        dev: &CudaDevice,
        src: &Arc<Block>,
        src_offset: u64,
        dst: &Arc<Block>,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        q.copy(dev, src, src_offset, dst, dst_offset, bytes)
    }

    fn launch_user(
        q: &CudaBatch,
        dev: &CudaDevice,
        program: &UserFunction,
        args: &[UserArg<'_>],
        workgroups: [u32; 3],
        block: [u32; 3],
    ) -> Result<()> {
        q.launch_user(dev, program, args, workgroups, block)
    }

    /// Between two events on the stream.
    fn timed(
        q: &CudaBatch,
        dev: &CudaDevice,
        _: web_time::Instant,
        record: impl FnOnce() -> Result<()>,
    ) -> Result<(Timing, Clock)> {
        let start = FenceImpl::Cuda(q.submit(dev)?);
        record()?;
        let end = FenceImpl::Cuda(q.submit(dev)?);
        Ok((Timing::Fences { start, end }, Clock::CudaEvent))
    }

    fn begin_capture(q: &CudaBatch, dev: &CudaDevice) -> Result<()> {
        q.begin_capture(dev)
    }

    fn end_capture(q: &CudaBatch, dev: &CudaDevice, keep: bool) -> Result<Option<CudaWork>> {
        q.end_capture(dev, keep)
    }

    fn replay(q: &CudaBatch, dev: &CudaDevice, graph: &Arc<CudaWork>) -> Result<()> {
        q.replay(dev, graph)
    }

    fn submit(q: &CudaBatch, dev: &CudaDevice) -> Result<CudaFence> {
        q.submit(dev)
    }

    fn wait_for(q: &CudaBatch, dev: &CudaDevice, fence: &CudaFence) -> Result<()> {
        q.wait_for(dev, fence)
    }

    async fn read<R>(
        q: &CudaBatch,
        dev: &CudaDevice,
        src: &Arc<Block>,
        offset: u64,
        bytes: u64,
        take: impl FnOnce(Mapped<'_>) -> R,
    ) -> Result<R> {
        q.read(dev, src, offset, bytes, take)
    }

    fn is_signalled(fence: &CudaFence, _: &CudaDevice) -> bool {
        fence.is_signalled()
    }

    async fn wait(fence: &CudaFence, dev: &CudaDevice) -> Result<()> {
        fence.wait(dev)
    }

    fn elapsed(
        start: &CudaFence,
        end: &CudaFence,
        _: &CudaDevice,
    ) -> Option<Result<std::time::Duration>> {
        Some(end.elapsed_since(start))
    }
}
