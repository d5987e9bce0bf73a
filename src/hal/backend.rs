//! [`Backend`]: the one list of primitives a backend provides. `cpu`, `webgpu` and `cuda`
//! implement it, and [`none::Absent`](super::none::Absent) stands in for a backend whose
//! cargo feature is off, so the hal's enums keep every variant in every build.
//!
//! The functions take the backend's own device, queue and memory; matching a device to its
//! queue is the enums' business (`hal/mod.rs`). A backend without some capability says so in
//! its answer (`None`, `Err(Unsupported)`), never by leaving a function out.

use std::future::Future;
use std::sync::Arc;

use super::timer::{Clock, Timing};
use super::{Block, LoopCheck, Mapped, UserArg, UserSource};
use crate::{DeviceInfo, Result};

/// The primitives of one backend: memory, queues, fences, user programs and timers.
pub(crate) trait Backend {
    /// What [`enumerate`](Self::enumerate) finds and [`open`](Self::open) opens.
    type Adapter;
    /// An opened device.
    type Device;
    /// One block of device memory.
    type Memory;
    /// A queue's recorded, not yet submitted work.
    type Batch;
    /// Marks the end of one submission.
    type Fence: Clone;
    /// A user kernel compiled for one device.
    type Program;
    /// Work captured on a queue, to be replayed (see [`begin_capture`](Self::begin_capture)).
    type Graph;

    /// The devices of this backend the system offers.
    fn enumerate() -> impl Future<Output = Vec<(DeviceInfo, Self::Adapter)>>;
    /// Open one of them (`info` is what [`enumerate`](Self::enumerate) said of it).
    fn open(
        adapter: Self::Adapter,
        info: &DeviceInfo,
    ) -> impl Future<Output = Result<Self::Device>>;

    /// `bytes` of memory, zero-filled where
    /// [`allocations_are_zeroed`](Self::allocations_are_zeroed).
    fn alloc(dev: &Self::Device, bytes: u64) -> Result<Self::Memory>;
    /// Fill the first `bytes` of `mem`, which no queued work uses, with `word` now.
    fn fill_now(dev: &Self::Device, mem: &Self::Memory, bytes: u64, word: u32) -> Result<()>;
    /// Whether fresh allocations come zero-filled.
    fn allocations_are_zeroed(dev: &Self::Device) -> bool;
    /// Whether kernels read and write f16 directly (elsewhere ops widen f16 to f32 first).
    fn native_f16(dev: &Self::Device) -> bool;
    /// Whether matmul multiplies f16 and bf16 matrices as they are stored (cuBLAS), with f32
    /// accumulation; elsewhere it widens them to f32 first.
    fn native_16bit_matmul(_dev: &Self::Device) -> bool {
        false
    }
    /// Whether attention computes on f16 and bf16 tensors as they are stored (tensor cores),
    /// with f32 scores; elsewhere it widens them to f32 first.
    fn native_16bit_attention(_dev: &Self::Device) -> bool {
        false
    }
    /// Bytes of device memory free now, where the backend can tell.
    fn memory_free(dev: &Self::Device) -> Option<u64>;
    /// How many op kernels the device has compiled (its pipeline or program cache's
    /// entries); `None` where op kernels are native code that compiles nothing (the CPU).
    fn kernels_compiled(dev: &Self::Device) -> Option<usize>;
    /// Compile a user kernel; `None` if this backend does not run `language`.
    fn user_program(dev: &Self::Device, kernel: &UserSource<'_>) -> Option<Result<Self::Program>>;
    /// Where a user program's loop-count status word binds, if its loops are counted.
    fn loop_check(_program: &Self::Program) -> Option<LoopCheck> {
        None
    }
    /// Let finished work release its buffers (never blocks).
    fn maintain(dev: &Self::Device);
    /// Block until submitted work and its callbacks have run, where the backend can block.
    fn wait_idle(dev: &Self::Device);
    /// Release the device now; every later call answers `DEVICE_LOST`.
    fn destroy(dev: &Self::Device);
    /// An error if the device was lost or reported an error since the last check.
    fn check_healthy(dev: &Self::Device) -> Result<()>;

    /// A new queue on `dev`.
    fn batch(dev: &Self::Device) -> Self::Batch;
    /// Record a write of `data` at `offset` of `dst`.
    fn write(
        q: &Self::Batch,
        dev: &Self::Device,
        dst: &Arc<Block>,
        offset: u64,
        data: &[u8],
    ) -> Result<()>;
    /// Record a copy of `bytes` bytes between blocks (or within one).
    fn copy(
        q: &Self::Batch,
        dev: &Self::Device,
        src: &Arc<Block>,
        src_offset: u64,
        dst: &Arc<Block>,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<()>;
    /// Record a launch of a user program over `workgroups` (CUDA: blocks of `block` threads).
    fn launch_user(
        q: &Self::Batch,
        dev: &Self::Device,
        program: &Self::Program,
        args: &[UserArg<'_>],
        workgroups: [u32; 3],
        block: [u32; 3],
    ) -> Result<()>;
    /// Run `record`, which records one launch, timed: which clock times it and how its device
    /// time will be known (`epoch` is where host-clock spans start).
    fn timed(
        q: &Self::Batch,
        dev: &Self::Device,
        epoch: web_time::Instant,
        record: impl FnOnce() -> Result<()>,
    ) -> Result<(Timing, Clock)>;
    /// `Ok` where `dev`'s queues capture work for replay, else why they cannot; asked before
    /// a capture waits for other threads' work, so a refusal never waits.
    fn captures(_dev: &Self::Device) -> Result<()> {
        Ok(())
    }
    /// Keep what `q` records from now on for replay instead of sending it to the device; `q`
    /// has nothing recorded and unsent (its earlier work was submitted).
    fn begin_capture(q: &Self::Batch, dev: &Self::Device) -> Result<()>;
    /// Stop capturing on `q`: the work recorded since [`begin_capture`](Self::begin_capture),
    /// or `None` where it was abandoned (`keep` false, after an error).
    fn end_capture(q: &Self::Batch, dev: &Self::Device, keep: bool) -> Result<Option<Self::Graph>>;
    /// Record one run of `graph` (captured on any queue of `dev`) on `q`.
    fn replay(q: &Self::Batch, dev: &Self::Device, graph: &Arc<Self::Graph>) -> Result<()>;
    /// Submit the recorded work; the fence marks its end.
    fn submit(q: &Self::Batch, dev: &Self::Device) -> Result<Self::Fence>;
    /// Order this queue's later work after `fence` (of any queue of `dev`).
    fn wait_for(q: &Self::Batch, dev: &Self::Device, fence: &Self::Fence) -> Result<()>;
    /// Read `bytes` bytes at `offset` of `src` after all recorded work, lending them to `take`
    /// where they lie once read.
    fn read<R>(
        q: &Self::Batch,
        dev: &Self::Device,
        src: &Arc<Block>,
        offset: u64,
        bytes: u64,
        take: impl FnOnce(Mapped<'_>) -> R,
    ) -> impl Future<Output = Result<R>>;

    /// Whether the work before `fence` has finished (never blocks).
    fn is_signalled(fence: &Self::Fence, dev: &Self::Device) -> bool;
    /// Wait until the work before `fence` has finished.
    fn wait(fence: &Self::Fence, dev: &Self::Device) -> impl Future<Output = Result<()>>;
    /// Device time from `start` to `end` (fences of `dev`); `None` where the backend or the
    /// device has no device timers.
    fn elapsed(
        start: &Self::Fence,
        end: &Self::Fence,
        dev: &Self::Device,
    ) -> Option<Result<std::time::Duration>>;
}
