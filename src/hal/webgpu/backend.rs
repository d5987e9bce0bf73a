//! The wgpu backend's [`Backend`] implementation.

use std::sync::Arc;

use super::graph::GpuGraph;
use super::{Adapter, GpuBatch, GpuDevice, GpuFence, GpuMemory, UserPipeline};
use crate::base::dtype::KernelLanguage;
use crate::hal::timer::{Clock, PendingSpan, Timing};
use crate::hal::{Backend, Block, LoopCheck, Mapped, UserArg, UserSource};
use crate::{DeviceInfo, Result};

/// The wgpu backend: WebGPU in browsers, Vulkan, Metal, DX12 or GL natively.
pub(crate) struct WebGpu;

impl Backend for WebGpu {
    type Adapter = Adapter;
    type Device = GpuDevice;
    type Memory = GpuMemory;
    type Batch = GpuBatch;
    type Fence = GpuFence;
    type Program = UserPipeline;
    type Graph = GpuGraph;

    async fn enumerate() -> Vec<(DeviceInfo, Adapter)> {
        super::enumerate().await
    }

    async fn open(adapter: Adapter, info: &DeviceInfo) -> Result<GpuDevice> {
        GpuDevice::open(adapter, info).await
    }

    fn alloc(dev: &GpuDevice, bytes: u64) -> Result<GpuMemory> {
        dev.alloc(bytes)
    }

    fn fill_now(dev: &GpuDevice, mem: &GpuMemory, bytes: u64, word: u32) -> Result<()> {
        dev.fill_now(mem, bytes, word);
        Ok(())
    }

    fn allocations_are_zeroed(_: &GpuDevice) -> bool {
        true
    }

    fn native_f16(dev: &GpuDevice) -> bool {
        dev.device.features().contains(wgpu::Features::SHADER_F16)
    }

    fn memory_free(_: &GpuDevice) -> Option<u64> {
        None
    }

    fn kernels_compiled(dev: &GpuDevice) -> Option<usize> {
        Some(dev.pipelines_made())
    }

    fn user_program(dev: &GpuDevice, k: &UserSource<'_>) -> Option<Result<UserPipeline>> {
        (k.language == KernelLanguage::Wgsl)
            .then(|| dev.create_user_pipeline(k.source, k.entry, k.constants))
    }

    fn loop_check(program: &UserPipeline) -> Option<LoopCheck> {
        program.loop_check
    }

    fn maintain(dev: &GpuDevice) {
        dev.maintain();
    }

    fn wait_idle(dev: &GpuDevice) {
        #[cfg(not(target_arch = "wasm32"))]
        let _ = dev.device.poll(wgpu::PollType::wait_indefinitely());
        #[cfg(target_arch = "wasm32")]
        let _ = dev; // browsers cannot block
    }

    fn destroy(dev: &GpuDevice) {
        dev.destroy();
    }

    fn check_healthy(dev: &GpuDevice) -> Result<()> {
        dev.check_healthy()
    }

    fn batch(_: &GpuDevice) -> GpuBatch {
        GpuBatch::default()
    }

    fn write(
        q: &GpuBatch,
        dev: &GpuDevice,
        dst: &Arc<Block>,
        offset: u64,
        data: &[u8],
    ) -> Result<()> {
        q.write(dev, dst, offset, data)
    }

    fn copy(
        q: &GpuBatch,
        dev: &GpuDevice,
        src: &Arc<Block>,
        src_offset: u64,
        dst: &Arc<Block>,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        q.copy(dev, src, src_offset, dst, dst_offset, bytes)
    }

    fn launch_user(
        q: &GpuBatch,
        dev: &GpuDevice,
        program: &UserPipeline,
        args: &[UserArg<'_>],
        workgroups: [u32; 3],
        _: [u32; 3],
    ) -> Result<()> {
        q.launch_user(dev, program, args, workgroups)
    }

    /// Timestamp queries where the adapter has them; natively otherwise the host clock around
    /// a submit-and-wait of the launch alone; in a browser without them, no clock.
    fn timed(
        q: &GpuBatch,
        dev: &GpuDevice,
        epoch: web_time::Instant,
        record: impl FnOnce() -> Result<()>,
    ) -> Result<(Timing, Clock)> {
        if dev.has_timestamps() {
            let token = q.begin_span();
            record()?;
            let span = PendingSpan::new();
            q.end_span(token, span.clone());
            return Ok((Timing::Pending(span), Clock::TimestampQuery));
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            pollster::block_on(q.submit(dev)?.wait(dev))?;
            let t0 = web_time::Instant::now();
            record()?;
            pollster::block_on(q.submit(dev)?.wait(dev))?;
            Ok((
                Timing::Ready(Some(crate::hal::timer::Span::since(epoch, t0))),
                Clock::HostSerialised,
            ))
        }
        #[cfg(target_arch = "wasm32")]
        {
            let _ = epoch;
            record()?;
            Ok((Timing::Ready(None), Clock::None))
        }
    }

    fn begin_capture(q: &GpuBatch, dev: &GpuDevice) -> Result<()> {
        q.begin_capture(dev)
    }

    fn end_capture(q: &GpuBatch, dev: &GpuDevice, keep: bool) -> Result<Option<GpuGraph>> {
        q.end_capture(dev, keep)
    }

    fn replay(q: &GpuBatch, dev: &GpuDevice, graph: &Arc<GpuGraph>) -> Result<()> {
        q.replay(dev, graph)
    }

    fn submit(q: &GpuBatch, dev: &GpuDevice) -> Result<GpuFence> {
        q.submit(dev)
    }

    /// wgpu runs submissions in order: only the device's health is checked.
    fn wait_for(_: &GpuBatch, dev: &GpuDevice, _: &GpuFence) -> Result<()> {
        dev.check_healthy()
    }

    async fn read<R>(
        q: &GpuBatch,
        dev: &GpuDevice,
        src: &Arc<Block>,
        offset: u64,
        bytes: u64,
        take: impl FnOnce(Mapped<'_>) -> R,
    ) -> Result<R> {
        q.read(dev, src, offset, bytes, take).await
    }

    fn is_signalled(fence: &GpuFence, dev: &GpuDevice) -> bool {
        dev.maintain();
        fence.is_signalled()
    }

    async fn wait(fence: &GpuFence, dev: &GpuDevice) -> Result<()> {
        fence.wait(dev).await
    }

    /// Natively, timestamps that end each submission (adapters with timestamp queries).
    fn elapsed(
        start: &GpuFence,
        end: &GpuFence,
        dev: &GpuDevice,
    ) -> Option<Result<std::time::Duration>> {
        end.elapsed_since(start, dev)
    }
}
