//! The hardware layer: the only code that knows a GPU API. It allocates, writes, copies,
//! fills and reads memory blocks, compiles and launches programs, submits work and waits on
//! fences, for each backend (`cpu`, `webgpu`, `cuda`) behind the enums below.
//!
//! Rules of this layer (checked by `tests/layers.rs`):
//! - It names only `base` and itself: never an op, a `Queue`, a `Device`, a `Tensor`, a user
//!   `Kernel`, the pool, the dispatcher or the profiler. What it needs of them comes in as
//!   its own types ([`Block`] and its [`Recycle`] owner, the [`Recorder`] of a block's last
//!   use, [`UserProgram`] and [`UserArg`], [`OpContext`]).
//! - A built-in launch is a program (a WGSL source with its preludes and override constants,
//!   or a CUDA source with `-D` definitions), parameter words or a `#[repr(C)]` struct,
//!   bindings and a grid. Which program and which parameters is the ops' business
//!   (`src/ops/<op>/webgpu.rs`, `cuda.rs`); the CPU backend runs ops' own Rust bodies.
//! - Without the `cuda` (or `webgpu`) feature compiled in, the API stays the same: no such
//!   device is listed and opening one says why.

mod block;
pub(crate) mod cpu;
mod mapped;
mod source;
pub(crate) mod timer;
#[cfg(cuda_backend)]
pub(crate) mod cuda;
#[cfg(feature = "webgpu")]
pub(crate) mod webgpu;

use std::sync::Arc;

pub(crate) use block::{Block, Recorder, Recycle};
pub(crate) use mapped::Mapped;
pub(crate) use source::ProgramSource;

use crate::base::dtype::{KernelLanguage, Scalar};
use timer::{Clock, Span, Timing};
use crate::{BackendKind, DeviceInfo, Error, Result};

/// A device that can be opened.
pub(crate) struct Candidate {
    pub info: DeviceInfo,
    source: Source,
}

enum Source {
    Cpu,
    #[cfg(feature = "webgpu")]
    WebGpu(webgpu::Adapter),
    #[cfg(cuda_backend)]
    Cuda(usize),
}

impl Candidate {
    /// Open the device.
    pub async fn open(self) -> Result<BackendDevice> {
        match self.source {
            Source::Cpu => Ok(BackendDevice::Cpu(cpu::CpuDevice::default())),
            #[cfg(feature = "webgpu")]
            Source::WebGpu(adapter) => Ok(BackendDevice::WebGpu(Box::new(webgpu::GpuDevice::open(adapter, &self.info).await?))),
            #[cfg(cuda_backend)]
            Source::Cuda(ordinal) => Ok(BackendDevice::Cuda(Box::new(cuda::CudaDevice::open(ordinal, &self.info)?))),
        }
    }
}

/// Every device this build can open, in a stable order: the CPU, then CUDA devices, then
/// wgpu adapters (in a browser: the one adapter WebGPU offers).
pub(crate) async fn enumerate() -> Vec<Candidate> {
    let mut out = vec![Candidate { info: cpu::info(), source: Source::Cpu }];
    #[cfg(cuda_backend)]
    for (info, ordinal) in cuda::enumerate() {
        out.push(Candidate { info, source: Source::Cuda(ordinal) });
    }
    #[cfg(feature = "webgpu")]
    for (info, adapter) in webgpu::enumerate().await {
        out.push(Candidate { info, source: Source::WebGpu(adapter) });
    }
    for (i, c) in out.iter_mut().enumerate() {
        c.info.index = i;
    }
    out
}

/// Why no device of `kind` can be opened.
pub(crate) fn missing_reason(kind: BackendKind) -> String {
    match kind {
        BackendKind::Cpu => "the cpu backend is always present".into(),
        BackendKind::WebGpu if cfg!(all(feature = "webgpu", target_arch = "wasm32")) => {
            "this browser (or JS runtime) offers no WebGPU adapter: navigator.gpu is missing or gave none (Chromium: enable WebGPU, e.g. --enable-unsafe-webgpu on Linux)".into()
        }
        BackendKind::WebGpu if cfg!(feature = "webgpu") => {
            "no wgpu adapter with compute shaders was found (natively install a Vulkan, Metal or DX12 driver, e.g. \
             Mesa's lavapipe: `apt-get install mesa-vulkan-drivers`; in a browser enable WebGPU)"
                .into()
        }
        BackendKind::WebGpu => "this build has no webgpu backend: enable the cargo feature `webgpu`".into(),
        #[cfg(cuda_backend)]
        BackendKind::Cuda => cuda::missing_reason(),
        #[cfg(not(cuda_backend))]
        BackendKind::Cuda if cfg!(target_arch = "wasm32") => "CUDA is not available in WebAssembly: use webgpu or cpu".into(),
        #[cfg(not(cuda_backend))]
        BackendKind::Cuda => "this build has no cuda backend: enable the cargo feature `cuda`".into(),
    }
}

/// What an op's backend code may ask of the layers above it, built by the queue for each
/// op: the device's options, and device memory for temporaries (written before it is read).
pub(crate) struct OpContext<'a> {
    /// The options the device was opened with.
    pub options: &'a crate::DeviceOptions,
    /// A block of at least this many bytes, from the device's pool.
    pub temp: &'a dyn Fn(u64) -> Result<Arc<Block>>,
}

/// A user kernel compiled for one device.
pub(crate) enum UserProgram {
    #[cfg(feature = "webgpu")]
    WebGpu(webgpu::UserPipeline),
    #[cfg(cuda_backend)]
    Cuda(cuda::UserFunction),
}

/// One argument of a user program launch, already checked against its reflection.
pub(crate) enum UserArg<'a> {
    /// `byte_len` bytes at `byte_offset` of `block`, bound at (`group`, `binding`).
    Buffer { block: &'a Arc<Block>, group: u32, binding: u32, byte_offset: u64, byte_len: u64 },
    /// A by-value parameter (CUDA) at position `binding` of the reflection.
    Scalar {
        binding: u32,
        #[cfg_attr(not(cuda_backend), allow(dead_code))]
        value: Scalar,
    },
}

/// An opened device of one backend.
pub(crate) enum BackendDevice {
    Cpu(cpu::CpuDevice),
    #[cfg(feature = "webgpu")]
    WebGpu(Box<webgpu::GpuDevice>),
    #[cfg(cuda_backend)]
    Cuda(Box<cuda::CudaDevice>),
}

/// One block of backend memory.
pub(crate) enum Memory {
    Cpu(cpu::CpuMemory),
    #[cfg(feature = "webgpu")]
    WebGpu(webgpu::GpuMemory),
    #[cfg(cuda_backend)]
    Cuda(cuda::DeviceMemory),
}

/// A queue's backend state.
pub(crate) enum QueueImpl {
    Cpu,
    #[cfg(feature = "webgpu")]
    WebGpu(webgpu::GpuQueue),
    #[cfg(cuda_backend)]
    Cuda(cuda::CudaQueue),
}

/// A fence's backend state.
#[derive(Clone)]
pub(crate) enum FenceImpl {
    /// Work that had finished when it was submitted (the CPU runs work as it is recorded).
    Done,
    #[cfg(feature = "webgpu")]
    WebGpu(webgpu::GpuFence),
    #[cfg(cuda_backend)]
    Cuda(cuda::CudaFence),
}

fn mismatch() -> Error {
    Error::Device("internal: a queue was used with a device of another backend".into())
}

impl BackendDevice {
    /// Allocate `bytes` of memory, zero-filled where [`allocations_are_zeroed`](Self::allocations_are_zeroed).
    pub fn alloc(&self, bytes: u64) -> Result<Memory> {
        match self {
            BackendDevice::Cpu(_) => cpu::alloc(bytes).map(Memory::Cpu),
            #[cfg(feature = "webgpu")]
            BackendDevice::WebGpu(d) => d.alloc(bytes).map(Memory::WebGpu),
            #[cfg(cuda_backend)]
            BackendDevice::Cuda(d) => d.alloc(bytes).map(Memory::Cuda),
        }
    }

    /// Whether f16 tensors can be read and written directly by the elementwise and matmul
    /// kernels (webgpu adapters with `shader-f16`); elsewhere ops widen them to f32 first.
    pub fn native_f16(&self) -> bool {
        match self {
            #[cfg(feature = "webgpu")]
            BackendDevice::WebGpu(d) => d.device.features().contains(wgpu::Features::SHADER_F16),
            _ => false,
        }
    }

    /// Whether fresh allocations come zero-filled (CUDA's do not).
    pub fn allocations_are_zeroed(&self) -> bool {
        match self {
            #[cfg(cuda_backend)]
            BackendDevice::Cuda(_) => false,
            _ => true,
        }
    }

    /// Bytes of device memory free now, where the backend can tell.
    pub fn memory_free(&self) -> Option<u64> {
        match self {
            #[cfg(cuda_backend)]
            BackendDevice::Cuda(d) => d.memory_free(),
            _ => None,
        }
    }

    /// Fill the first `bytes` of `mem`, which no queued work uses, with `word` now.
    pub fn fill_now(&self, mem: &Memory, bytes: u64, word: u32) -> Result<()> {
        match (self, mem) {
            (BackendDevice::Cpu(_), Memory::Cpu(m)) => {
                cpu::fill(m, bytes, word);
                Ok(())
            }
            #[cfg(feature = "webgpu")]
            (BackendDevice::WebGpu(d), Memory::WebGpu(b)) => {
                d.fill_now(b, bytes, word);
                Ok(())
            }
            #[cfg(cuda_backend)]
            (BackendDevice::Cuda(d), Memory::Cuda(m)) => d.fill_now(m, bytes, word),
            #[allow(unreachable_patterns)]
            _ => Err(Error::Device("internal: memory of another backend".into())),
        }
    }

    /// Compile a user kernel; `None` if this backend does not run `language`.
    pub fn user_program(&self, language: KernelLanguage, source: &str, entry: &str) -> Option<Result<UserProgram>> {
        let _ = (source, entry);
        match (self, language) {
            #[cfg(feature = "webgpu")]
            (BackendDevice::WebGpu(d), KernelLanguage::Wgsl) => Some(d.create_user_pipeline(source, entry).map(UserProgram::WebGpu)),
            #[cfg(cuda_backend)]
            (BackendDevice::Cuda(d), KernelLanguage::Cuda) => Some(d.compile_user(source, entry).map(UserProgram::Cuda)),
            _ => None,
        }
    }

    /// Let finished work release its buffers (never blocks).
    pub fn maintain(&self) {
        match self {
            BackendDevice::Cpu(_) => {}
            #[cfg(feature = "webgpu")]
            BackendDevice::WebGpu(d) => d.maintain(),
            #[cfg(cuda_backend)]
            BackendDevice::Cuda(d) => d.maintain(),
        }
    }

    /// Block until submitted work has finished and its callbacks have run (natively; a no-op
    /// in browsers and on backends that finish work synchronously when asked).
    pub fn wait_idle(&self) {
        #[cfg(all(feature = "webgpu", not(target_arch = "wasm32")))]
        if let BackendDevice::WebGpu(d) = self {
            let _ = d.device.poll(wgpu::PollType::wait_indefinitely());
        }
    }

    /// Release the device now; every later call answers `DEVICE_LOST`.
    pub fn destroy(&self) {
        match self {
            BackendDevice::Cpu(d) => d.destroy(),
            #[cfg(feature = "webgpu")]
            BackendDevice::WebGpu(d) => d.destroy(),
            #[cfg(cuda_backend)]
            BackendDevice::Cuda(d) => d.destroy(),
        }
    }

    /// An error if the device was lost or reported an error since the last check.
    pub fn check_healthy(&self) -> Result<()> {
        match self {
            BackendDevice::Cpu(d) => d.check_healthy(),
            #[cfg(feature = "webgpu")]
            BackendDevice::WebGpu(d) => d.check_healthy(),
            #[cfg(cuda_backend)]
            BackendDevice::Cuda(d) => d.check_healthy(),
        }
    }
}

impl QueueImpl {
    pub fn new(backend: &BackendDevice) -> Self {
        match backend {
            BackendDevice::Cpu(_) => QueueImpl::Cpu,
            #[cfg(feature = "webgpu")]
            BackendDevice::WebGpu(_) => QueueImpl::WebGpu(webgpu::GpuQueue::default()),
            #[cfg(cuda_backend)]
            BackendDevice::Cuda(d) => QueueImpl::Cuda(cuda::CudaQueue::new(d)),
        }
    }

    pub fn write(&self, dev: &BackendDevice, dst: &Arc<Block>, offset: u64, data: &[u8]) -> Result<()> {
        match (self, dev) {
            (QueueImpl::Cpu, BackendDevice::Cpu(_)) => cpu::write(dst, offset, data),
            #[cfg(feature = "webgpu")]
            (QueueImpl::WebGpu(q), BackendDevice::WebGpu(d)) => q.write(d, dst, offset, data),
            #[cfg(cuda_backend)]
            (QueueImpl::Cuda(q), BackendDevice::Cuda(d)) => q.write(d, dst, offset, data),
            #[allow(unreachable_patterns)]
            _ => Err(mismatch()),
        }
    }

    pub fn copy(&self, dev: &BackendDevice, src: &Arc<Block>, src_offset: u64, dst: &Arc<Block>, dst_offset: u64, bytes: u64) -> Result<()> {
        match (self, dev) {
            (QueueImpl::Cpu, BackendDevice::Cpu(_)) => cpu::copy(src, src_offset, dst, dst_offset, bytes),
            #[cfg(feature = "webgpu")]
            (QueueImpl::WebGpu(q), BackendDevice::WebGpu(d)) => q.copy(d, src, src_offset, dst, dst_offset, bytes),
            #[cfg(cuda_backend)]
            (QueueImpl::Cuda(q), BackendDevice::Cuda(d)) => q.copy(d, src, src_offset, dst, dst_offset, bytes),
            #[allow(unreachable_patterns)]
            _ => Err(mismatch()),
        }
    }

    /// Record a launch of a user program over `workgroups` workgroups (CUDA: blocks of
    /// `block` threads).
    pub fn launch(&self, dev: &BackendDevice, program: &UserProgram, args: &[UserArg<'_>], workgroups: [u32; 3], block: [u32; 3]) -> Result<()> {
        let _ = block;
        match (self, dev, program) {
            (QueueImpl::Cpu, BackendDevice::Cpu(_), _) => Err(Error::Unsupported { backend: BackendKind::Cpu, what: "user kernels need a webgpu or cuda device".into() }),
            #[cfg(feature = "webgpu")]
            (QueueImpl::WebGpu(q), BackendDevice::WebGpu(d), UserProgram::WebGpu(p)) => q.launch_user(d, p, args, workgroups),
            #[cfg(cuda_backend)]
            (QueueImpl::Cuda(q), BackendDevice::Cuda(d), UserProgram::Cuda(f)) => q.launch_user(d, &f.0, args, workgroups, block),
            #[allow(unreachable_patterns)]
            _ => Err(mismatch()),
        }
    }

    /// Run `record`, which records one launch, timed: say which clock times it and how its
    /// device time will be known (`epoch` is where host-clock spans start).
    pub fn timed(&self, dev: &BackendDevice, epoch: web_time::Instant, record: impl FnOnce() -> Result<()>) -> Result<(Timing, Clock)> {
        let host_span = |t0: web_time::Instant| Span { start_ns: t0.duration_since(epoch).as_secs_f64() * 1e9, dur_ns: t0.elapsed().as_secs_f64() * 1e9 };
        match (self, dev) {
            (QueueImpl::Cpu, _) => {
                let t0 = web_time::Instant::now();
                record()?;
                Ok((Timing::Ready(Some(host_span(t0))), Clock::Host))
            }
            #[cfg(feature = "webgpu")]
            (QueueImpl::WebGpu(q), BackendDevice::WebGpu(d)) if d.has_timestamps() => {
                let token = q.begin_span();
                record()?;
                let span = timer::PendingSpan::new();
                q.end_span(token, span.clone());
                Ok((Timing::Pending(span), Clock::TimestampQuery))
            }
            #[cfg(all(feature = "webgpu", not(target_arch = "wasm32")))]
            (QueueImpl::WebGpu(q), BackendDevice::WebGpu(d)) => {
                pollster::block_on(q.submit(d)?.wait(d))?;
                let t0 = web_time::Instant::now();
                record()?;
                pollster::block_on(q.submit(d)?.wait(d))?;
                Ok((Timing::Ready(Some(host_span(t0))), Clock::HostSerialised))
            }
            #[cfg(cuda_backend)]
            (QueueImpl::Cuda(q), BackendDevice::Cuda(d)) => {
                let start = FenceImpl::Cuda(q.submit(d)?);
                record()?;
                let end = FenceImpl::Cuda(q.submit(d)?);
                Ok((Timing::Fences { start, end }, Clock::CudaEvent))
            }
            #[allow(unreachable_patterns)]
            _ => {
                record()?;
                Ok((Timing::Ready(None), Clock::None))
            }
        }
    }

    pub fn submit(&self, dev: &BackendDevice) -> Result<FenceImpl> {
        match (self, dev) {
            (QueueImpl::Cpu, BackendDevice::Cpu(_)) => Ok(FenceImpl::Done),
            #[cfg(feature = "webgpu")]
            (QueueImpl::WebGpu(q), BackendDevice::WebGpu(d)) => q.submit(d).map(FenceImpl::WebGpu),
            #[cfg(cuda_backend)]
            (QueueImpl::Cuda(q), BackendDevice::Cuda(d)) => q.submit(d).map(FenceImpl::Cuda),
            #[allow(unreachable_patterns)]
            _ => Err(mismatch()),
        }
    }

    pub fn wait_for(&self, dev: &BackendDevice, fence: &FenceImpl) -> Result<()> {
        match (self, dev, fence) {
            #[cfg(cuda_backend)]
            (QueueImpl::Cuda(q), BackendDevice::Cuda(d), FenceImpl::Cuda(f)) => q.wait_for(d, f),
            // cpu and webgpu run submissions in order; see `Queue::wait_for`.
            _ => dev.check_healthy(),
        }
    }

    /// Read `bytes` bytes at `offset` of `src` after all recorded work, lending them to `take`
    /// where they lie once read (see [`Mapped`]).
    pub async fn read<R>(&self, dev: &BackendDevice, src: &Arc<Block>, offset: u64, bytes: u64, take: impl FnOnce(Mapped<'_>) -> R) -> Result<R> {
        match (self, dev) {
            (QueueImpl::Cpu, BackendDevice::Cpu(_)) => cpu::read(src, offset, bytes, take),
            #[cfg(feature = "webgpu")]
            (QueueImpl::WebGpu(q), BackendDevice::WebGpu(d)) => q.read(d, src, offset, bytes, take).await,
            #[cfg(cuda_backend)]
            (QueueImpl::Cuda(q), BackendDevice::Cuda(d)) => q.read(d, src, offset, bytes, take),
            #[allow(unreachable_patterns)]
            _ => Err(mismatch()),
        }
    }
}

impl FenceImpl {
    pub fn is_signalled(&self, dev: &BackendDevice) -> bool {
        match self {
            FenceImpl::Done => true,
            #[cfg(feature = "webgpu")]
            FenceImpl::WebGpu(f) => {
                dev.maintain();
                f.is_signalled()
            }
            #[cfg(cuda_backend)]
            FenceImpl::Cuda(f) => f.is_signalled(),
        }
    }

    /// Device time from `start` to this fence, where the backend has device timers.
    pub fn elapsed_since(&self, start: &FenceImpl, backend: BackendKind) -> Result<std::time::Duration> {
        match (self, start) {
            #[cfg(cuda_backend)]
            (FenceImpl::Cuda(end), FenceImpl::Cuda(start)) => end.elapsed_since(start),
            _ => Err(Error::Unsupported {
                backend,
                what: "device time between fences needs device timers: cuda has them; webgpu timestamp queries come with the profiler".into(),
            }),
        }
    }

    pub async fn wait(&self, dev: &BackendDevice) -> Result<()> {
        match (self, dev) {
            (FenceImpl::Done, _) => Ok(()),
            #[cfg(feature = "webgpu")]
            (FenceImpl::WebGpu(f), BackendDevice::WebGpu(d)) => f.wait(d).await,
            #[cfg(cuda_backend)]
            (FenceImpl::Cuda(f), BackendDevice::Cuda(d)) => f.wait(d),
            #[allow(unreachable_patterns)]
            _ => Err(mismatch()),
        }
    }
}
