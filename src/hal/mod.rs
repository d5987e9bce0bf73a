//! The hardware layer: the only code that knows a GPU API. It allocates, writes, copies,
//! fills and reads memory blocks, compiles and launches programs, submits work and waits on
//! fences, for each backend (`cpu`, `webgpu`, `cuda`) behind the enums below.
//!
//! Rules of this layer (checked by `tests/layers.rs`):
//! - It names only `base` and itself: never an op, a `Queue`, a `Device`, a `Tensor`, a user
//!   `Kernel`, the pool, the chooser or the profiler. What it needs of them comes in as
//!   its own types ([`Block`] and its [`Recycle`] owner, the [`Recorder`] of a block's last
//!   use, [`UserProgram`] and [`UserArg`], [`OpContext`]).
//! - A built-in launch is a program (a WGSL source with its preludes and override constants,
//!   or a CUDA source with `-D` definitions), parameter words or a `#[repr(C)]` struct,
//!   bindings and a grid. Which program and which parameters is the ops' business
//!   (`src/ops/<op>/webgpu.rs`, `cuda.rs`); the CPU backend runs ops' own Rust bodies.
//! - Without the `cuda` (or `webgpu`) feature compiled in, the API stays the same: no such
//!   device is listed and opening one says why.

mod backend;
mod block;
pub(crate) mod cpu;
#[cfg(cuda_backend)]
pub(crate) mod cuda;
mod mapped;
#[cfg(not(all(feature = "webgpu", cuda_backend)))]
mod none;
mod source;
pub(crate) mod timer;
#[cfg(feature = "webgpu")]
pub(crate) mod webgpu;
pub(crate) mod wgsl_enables;
pub(crate) mod wgsl_overrides;
pub(crate) mod wgsl_subset;

use std::sync::Arc;

pub(crate) use backend::Backend;
pub(crate) use block::{Block, Held, LastUser, Recorder, Recycle};
pub(crate) use cpu::Cpu;
pub(crate) use mapped::Mapped;
pub(crate) use source::ProgramSource;

/// The CUDA backend, or its stand-in in a build without the `cuda` feature.
#[cfg(cuda_backend)]
pub(crate) use cuda::backend::Cuda;
/// The CUDA backend, or its stand-in in a build without the `cuda` feature.
#[cfg(not(cuda_backend))]
pub(crate) use none::Absent as Cuda;
/// The wgpu backend, or its stand-in in a build without the `webgpu` feature.
#[cfg(not(feature = "webgpu"))]
pub(crate) use none::Absent as WebGpu;
/// The wgpu backend, or its stand-in in a build without the `webgpu` feature.
#[cfg(feature = "webgpu")]
pub(crate) use webgpu::backend::WebGpu;

/// A backend's opened device.
pub(crate) type DeviceOf<B> = <B as Backend>::Device;
/// A backend's queue.
pub(crate) type BatchOf<B> = <B as Backend>::Batch;

use crate::base::dtype::{KernelLanguage, Scalar};
use crate::{BackendKind, DeviceInfo, Error, Result};
use timer::{Clock, Timing};

/// `$body` once per backend, with `$B` naming the backend and `$d` bound to `$dev`'s device.
macro_rules! on_device {
    ($dev:expr, |$B:ident, $d:ident| $body:expr) => {
        match $dev {
            BackendDevice::Cpu($d) => {
                type $B = Cpu;
                $body
            }
            BackendDevice::WebGpu($d) => {
                type $B = WebGpu;
                $body
            }
            BackendDevice::Cuda($d) => {
                type $B = Cuda;
                $body
            }
        }
    };
}

/// `$body` for a pair of one backend's values (`$x` of enum `$X`, `$y` of enum `$Y`), with
/// `$B` naming the backend; `$other` when the two belong to different backends.
macro_rules! on_pair {
    (
        $x:expr => $X:ident,
        $y:expr => $Y:ident,
        |$B:ident, $a:ident, $b:ident| $body:expr,
        else $other:expr
    ) => {
        match ($x, $y) {
            ($X::Cpu($a), $Y::Cpu($b)) => {
                type $B = Cpu;
                $body
            }
            ($X::WebGpu($a), $Y::WebGpu($b)) => {
                type $B = WebGpu;
                $body
            }
            ($X::Cuda($a), $Y::Cuda($b)) => {
                type $B = Cuda;
                $body
            }
            _ => $other,
        }
    };
}

/// A device that can be opened.
pub(crate) struct Candidate {
    pub info: DeviceInfo,
    adapter: Adapter,
}

/// What a backend's `enumerate` found.
enum Adapter {
    Cpu(<Cpu as Backend>::Adapter),
    WebGpu(<WebGpu as Backend>::Adapter),
    Cuda(<Cuda as Backend>::Adapter),
}

impl Candidate {
    /// Open the device.
    pub async fn open(self) -> Result<BackendDevice> {
        let info = &self.info;
        Ok(match self.adapter {
            Adapter::Cpu(a) => BackendDevice::Cpu(Cpu::open(a, info).await?),
            Adapter::WebGpu(a) => BackendDevice::WebGpu(Box::new(WebGpu::open(a, info).await?)),
            Adapter::Cuda(a) => BackendDevice::Cuda(Box::new(Cuda::open(a, info).await?)),
        })
    }
}

/// Every device this build can open, in a stable order: the CPU, then CUDA devices, then
/// wgpu adapters (in a browser: the one adapter WebGPU offers).
pub(crate) async fn enumerate() -> Vec<Candidate> {
    enumerate_through(BackendKind::WebGpu).await
}

/// The devices of [`enumerate`]'s list up to those of backend `last`, with the same indices:
/// asking for the CPU loads no GPU driver (Vulkan's loads a compiler of tens of megabytes).
pub(crate) async fn enumerate_through(last: BackendKind) -> Vec<Candidate> {
    let candidate = |(info, adapter)| Candidate { info, adapter };
    let mut out: Vec<Candidate> = Cpu::enumerate()
        .await
        .into_iter()
        .map(|(i, a)| (i, Adapter::Cpu(a)))
        .map(candidate)
        .collect();
    if last != BackendKind::Cpu {
        let cuda = Cuda::enumerate().await.into_iter();
        out.extend(cuda.map(|(i, a)| (i, Adapter::Cuda(a))).map(candidate));
    }
    if last == BackendKind::WebGpu {
        let wgpu = WebGpu::enumerate().await.into_iter();
        out.extend(wgpu.map(|(i, a)| (i, Adapter::WebGpu(a))).map(candidate));
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
            "this browser (or JS runtime) offers no WebGPU adapter: navigator.gpu is missing or \
                gave none (Chromium: enable WebGPU, e.g. --enable-unsafe-webgpu on Linux)"
                .into()
        }
        BackendKind::WebGpu if cfg!(feature = "webgpu") => {
            "no wgpu adapter with compute shaders was found (natively install a Vulkan, Metal or \
                DX12 driver, e.g. \
             Mesa's lavapipe: `apt-get install mesa-vulkan-drivers`; GL adapters are used only \
             with WGPU_BACKEND=gl, \
             as their compute returned wrong integer results on Mesa; in a browser enable WebGPU)"
                .into()
        }
        BackendKind::WebGpu => "this build has no webgpu backend: enable the cargo feature \
            `webgpu`"
            .into(),
        #[cfg(cuda_backend)]
        BackendKind::Cuda => cuda::missing_reason(),
        #[cfg(not(cuda_backend))]
        BackendKind::Cuda if cfg!(target_arch = "wasm32") => "CUDA is not available in \
            WebAssembly: use webgpu or cpu"
            .into(),
        #[cfg(not(cuda_backend))]
        BackendKind::Cuda => "this build has no cuda backend: enable the cargo feature \
            `cuda`"
            .into(),
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
    Cpu(Box<<Cpu as Backend>::Program>),
    WebGpu(<WebGpu as Backend>::Program),
    Cuda(<Cuda as Backend>::Program),
}

/// A user kernel as it is given to a backend to compile.
pub(crate) struct UserSource<'a> {
    /// WGSL or CUDA C.
    pub language: KernelLanguage,
    /// The source text.
    pub source: &'a str,
    /// The entry point's name.
    pub entry: &'a str,
    /// Values of WGSL overrides by name or `@id` (already checked against the source).
    pub constants: &'a [(&'a str, f64)],
}

/// Where the hidden status word of a user kernel whose loops are counted binds, and the
/// loop limit it watches (`webgpu/loop_check.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LoopCheck {
    pub group: u32,
    pub binding: u32,
    pub limit: u64,
}

impl UserProgram {
    /// Where the program's loop-count status word binds, if its loops are counted.
    pub(crate) fn loop_check(&self) -> Option<LoopCheck> {
        match self {
            UserProgram::WebGpu(p) => WebGpu::loop_check(p),
            UserProgram::Cpu(_) | UserProgram::Cuda(_) => None,
        }
    }
}

/// One argument of a user program launch, already checked against its reflection.
pub(crate) enum UserArg<'a> {
    /// `byte_len` bytes at `byte_offset` of `block`, bound at (`group`, `binding`).
    Buffer {
        block: &'a Arc<Block>,
        group: u32,
        binding: u32,
        byte_offset: u64,
        byte_len: u64,
    },
    /// A by-value parameter (CUDA) at position `binding` of the reflection.
    Scalar {
        binding: u32,
        #[cfg_attr(not(cuda_backend), allow(dead_code))]
        value: Scalar,
    },
}

/// An opened device of one backend.
pub(crate) enum BackendDevice {
    Cpu(DeviceOf<Cpu>),
    WebGpu(Box<DeviceOf<WebGpu>>),
    Cuda(Box<DeviceOf<Cuda>>),
}

/// One block of backend memory.
pub(crate) enum Memory {
    Cpu(<Cpu as Backend>::Memory),
    WebGpu(<WebGpu as Backend>::Memory),
    Cuda(<Cuda as Backend>::Memory),
}

/// A queue's backend state.
pub(crate) enum BatchImpl {
    Cpu(BatchOf<Cpu>),
    WebGpu(BatchOf<WebGpu>),
    Cuda(BatchOf<Cuda>),
}

/// A fence's backend state.
#[derive(Clone)]
pub(crate) enum FenceImpl {
    Cpu(<Cpu as Backend>::Fence),
    WebGpu(<WebGpu as Backend>::Fence),
    Cuda(<Cuda as Backend>::Fence),
}

/// Work captured on a queue, for replay.
pub(crate) enum GraphImpl {
    Cpu(Arc<<Cpu as Backend>::Graph>),
    WebGpu(Arc<<WebGpu as Backend>::Graph>),
    Cuda(Arc<<Cuda as Backend>::Graph>),
}

/// The error of an operation a queue cannot hold while it captures (a read, a submit).
pub(crate) fn capture_refusal(what: &str) -> Error {
    Error::Invalid(format!(
        "{what} while the queue captures work for replay: the captured work has \
        not run; end the capture first"
    ))
}

fn mismatch() -> Error {
    Error::Internal("a queue was used with a device of another backend".into())
}

impl BackendDevice {
    /// Allocate `bytes` of memory, zero-filled where
    /// [`allocations_are_zeroed`](Self::allocations_are_zeroed).
    pub fn alloc(&self, bytes: u64) -> Result<Memory> {
        match self {
            BackendDevice::Cpu(d) => Cpu::alloc(d, bytes).map(Memory::Cpu),
            BackendDevice::WebGpu(d) => WebGpu::alloc(d, bytes).map(Memory::WebGpu),
            BackendDevice::Cuda(d) => Cuda::alloc(d, bytes).map(Memory::Cuda),
        }
    }

    /// Whether f16 tensors can be read and written directly by the elementwise and matmul
    /// kernels (webgpu adapters with `shader-f16`); elsewhere ops widen them to f32 first.
    pub fn native_f16(&self) -> bool {
        on_device!(self, |B, d| B::native_f16(d))
    }

    /// Whether matmul multiplies f16 and bf16 matrices as stored (cuBLAS on cuda).
    pub fn native_16bit_matmul(&self) -> bool {
        on_device!(self, |B, d| B::native_16bit_matmul(d))
    }

    /// Whether attention computes on f16 and bf16 tensors as stored (tensor cores on cuda).
    pub fn native_16bit_attention(&self) -> bool {
        on_device!(self, |B, d| B::native_16bit_attention(d))
    }

    /// `Ok` where the device's queues capture work for replay, else why they cannot.
    pub fn captures(&self) -> Result<()> {
        on_device!(self, |B, d| B::captures(d))
    }

    /// Whether fresh allocations come zero-filled (CUDA's do not).
    pub fn allocations_are_zeroed(&self) -> bool {
        on_device!(self, |B, d| B::allocations_are_zeroed(d))
    }

    /// Bytes of device memory free now, where the backend can tell.
    pub fn memory_free(&self) -> Option<u64> {
        on_device!(self, |B, d| B::memory_free(d))
    }

    /// How many op kernels the device has compiled; `None` where it compiles none (cpu).
    pub fn kernels_compiled(&self) -> Option<usize> {
        on_device!(self, |B, d| B::kernels_compiled(d))
    }

    /// Fill the first `bytes` of `mem`, which no queued work uses, with `word` now.
    pub fn fill_now(&self, mem: &Memory, bytes: u64, word: u32) -> Result<()> {
        on_pair!(
            self => BackendDevice,
            mem => Memory,
            |B, d, m| B::fill_now(d, m, bytes, word),
            else Err(Error::Internal("memory of another backend".into()))
        )
    }

    /// Compile a user kernel; `None` if this backend does not run `language`.
    pub fn user_program(&self, kernel: &UserSource<'_>) -> Option<Result<UserProgram>> {
        Some(match self {
            BackendDevice::Cpu(d) => {
                Cpu::user_program(d, kernel)?.map(|p| UserProgram::Cpu(Box::new(p)))
            }
            BackendDevice::WebGpu(d) => WebGpu::user_program(d, kernel)?.map(UserProgram::WebGpu),
            BackendDevice::Cuda(d) => Cuda::user_program(d, kernel)?.map(UserProgram::Cuda),
        })
    }

    /// Let finished work release its buffers (never blocks).
    pub fn maintain(&self) {
        on_device!(self, |B, d| B::maintain(d))
    }

    /// Block until submitted work has finished and its callbacks have run (natively; a no-op
    /// in browsers and on backends that finish work synchronously when asked).
    pub fn wait_idle(&self) {
        on_device!(self, |B, d| B::wait_idle(d))
    }

    /// Release the device now; every later call answers `DEVICE_LOST`.
    pub fn destroy(&self) {
        on_device!(self, |B, d| B::destroy(d))
    }

    /// An error if the device was lost or reported an error since the last check.
    pub fn check_healthy(&self) -> Result<()> {
        on_device!(self, |B, d| B::check_healthy(d))
    }
}

/// The browser's WebGPU objects behind a webgpu device and its memory, for pages that mix
/// their own WebGPU code with the library's.
#[cfg(target_arch = "wasm32")]
impl BackendDevice {
    /// The `GPUDevice` of a webgpu device; `None` on other backends.
    pub fn gpu_device_js(&self) -> Option<wasm_bindgen::JsValue> {
        match self {
            #[cfg(feature = "webgpu")]
            BackendDevice::WebGpu(d) => d.device.as_webgpu().map(|g| g.clone().into()),
            _ => None,
        }
    }

    /// A page's `GPUBuffer` of this device as memory (no copy), and its size in bytes.
    pub fn adopt_gpu_buffer_js(&self, buffer: &wasm_bindgen::JsValue) -> Result<(Memory, u64)> {
        match self {
            #[cfg(feature = "webgpu")]
            BackendDevice::WebGpu(d) => {
                webgpu::adopt_buffer(d, buffer).map(|(m, bytes)| (Memory::WebGpu(m), bytes))
            }
            _ => Err(Error::Unsupported {
                backend: BackendKind::Cpu,
                what: "GPU buffers: they need a webgpu device".into(),
            }), // the one other backend in wasm
        }
    }
}

#[cfg(target_arch = "wasm32")]
impl Memory {
    /// The `GPUBuffer` of webgpu memory; `None` on other backends.
    pub fn gpu_buffer_js(&self) -> Option<wasm_bindgen::JsValue> {
        match self {
            #[cfg(feature = "webgpu")]
            Memory::WebGpu(b) => b.buffer().as_webgpu().map(|g| g.clone().into()),
            _ => None,
        }
    }
}

impl BatchImpl {
    /// A new queue on `backend`.
    #[allow(unreachable_code)] // a stand-in's arm: its queue has no value to wrap
    pub fn new(backend: &BackendDevice) -> Self {
        match backend {
            BackendDevice::Cpu(d) => BatchImpl::Cpu(Cpu::batch(d)),
            BackendDevice::WebGpu(d) => BatchImpl::WebGpu(WebGpu::batch(d)),
            BackendDevice::Cuda(d) => BatchImpl::Cuda(Cuda::batch(d)),
        }
    }

    /// Record a write of `data` at `offset` of `dst`.
    pub fn write(
        &self,
        dev: &BackendDevice,
        dst: &Arc<Block>,
        offset: u64,
        data: &[u8],
    ) -> Result<()> {
        on_pair!(
            self => BatchImpl,
            dev => BackendDevice,
            |B, q, d| B::write(q, d, dst, offset, data),
            else Err(mismatch())
        )
    }

    /// Record a fill of the whole of `dst` (its size class) with `word`.
    pub fn fill(&self, dev: &BackendDevice, dst: &Arc<Block>, word: u32) -> Result<()> {
        match (self, dev) {
            #[cfg(cuda_backend)]
            (BatchImpl::Cuda(q), BackendDevice::Cuda(d)) => q.fill(d, dst, word),
            // wgpu clears only to zero: the words travel like a write.
            _ => {
                let words = vec![word; (dst.capacity() / 4) as usize];
                self.write(dev, dst, 0, bytemuck::cast_slice(&words))
            }
        }
    }

    /// Record a copy of `bytes` bytes between blocks (or within one).
    pub fn copy(
        &self,
        dev: &BackendDevice,
        src: &Arc<Block>,
        src_offset: u64,
        dst: &Arc<Block>,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        on_pair!(
            self => BatchImpl,
            dev => BackendDevice,
            |B, q, d| B::copy(q, d, src, src_offset, dst, dst_offset, bytes),
            else Err(mismatch())
        )
    }

    /// Record a launch of a user program over `workgroups` workgroups (CUDA: blocks of
    /// `block` threads).
    pub fn launch(
        &self,
        dev: &BackendDevice,
        program: &UserProgram,
        args: &[UserArg<'_>],
        workgroups: [u32; 3],
        block: [u32; 3],
    ) -> Result<()> {
        match (self, dev, program) {
            (BatchImpl::Cpu(q), BackendDevice::Cpu(d), UserProgram::Cpu(p)) => {
                Cpu::launch_user(q, d, p, args, workgroups, block)
            }
            (BatchImpl::WebGpu(q), BackendDevice::WebGpu(d), UserProgram::WebGpu(p)) => {
                WebGpu::launch_user(q, d, p, args, workgroups, block)
            }
            (BatchImpl::Cuda(q), BackendDevice::Cuda(d), UserProgram::Cuda(p)) => {
                Cuda::launch_user(q, d, p, args, workgroups, block)
            }
            _ => Err(mismatch()),
        }
    }

    /// Run `record`, which records one launch, timed: say which clock times it and how its
    /// device time will be known (`epoch` is where host-clock spans start).
    pub fn timed(
        &self,
        dev: &BackendDevice,
        epoch: web_time::Instant,
        record: impl FnOnce() -> Result<()>,
    ) -> Result<(Timing, Clock)> {
        on_pair!(
            self => BatchImpl,
            dev => BackendDevice,
            |B, q, d| B::timed(q, d, epoch, record),
            else Err(mismatch())
        )
    }

    /// Keep what this queue records from now on for replay (its earlier work is submitted).
    pub fn begin_capture(&self, dev: &BackendDevice) -> Result<()> {
        on_pair!(
            self => BatchImpl,
            dev => BackendDevice,
            |B, q, d| B::begin_capture(q, d),
            else Err(mismatch())
        )
    }

    /// Stop capturing: the captured work (`keep`), or `None` where it is dropped.
    pub fn end_capture(&self, dev: &BackendDevice, keep: bool) -> Result<Option<GraphImpl>> {
        match (self, dev) {
            (BatchImpl::Cpu(q), BackendDevice::Cpu(d)) => {
                Ok(Cpu::end_capture(q, d, keep)?.map(|g| GraphImpl::Cpu(Arc::new(g))))
            }
            (BatchImpl::WebGpu(q), BackendDevice::WebGpu(d)) => {
                Ok(WebGpu::end_capture(q, d, keep)?.map(|g| GraphImpl::WebGpu(Arc::new(g))))
            }
            (BatchImpl::Cuda(q), BackendDevice::Cuda(d)) => {
                Ok(Cuda::end_capture(q, d, keep)?.map(|g| GraphImpl::Cuda(Arc::new(g))))
            }
            _ => Err(mismatch()),
        }
    }

    /// Record one run of `graph` (captured on a queue of `dev`).
    pub fn replay(&self, dev: &BackendDevice, graph: &GraphImpl) -> Result<()> {
        match (self, dev, graph) {
            (BatchImpl::Cpu(q), BackendDevice::Cpu(d), GraphImpl::Cpu(g)) => Cpu::replay(q, d, g),
            (BatchImpl::WebGpu(q), BackendDevice::WebGpu(d), GraphImpl::WebGpu(g)) => {
                WebGpu::replay(q, d, g)
            }
            (BatchImpl::Cuda(q), BackendDevice::Cuda(d), GraphImpl::Cuda(g)) => {
                Cuda::replay(q, d, g)
            }
            _ => Err(mismatch()),
        }
    }

    /// Submit the recorded work; the fence marks its end.
    pub fn submit(&self, dev: &BackendDevice) -> Result<FenceImpl> {
        match (self, dev) {
            (BatchImpl::Cpu(q), BackendDevice::Cpu(d)) => Cpu::submit(q, d).map(FenceImpl::Cpu),
            (BatchImpl::WebGpu(q), BackendDevice::WebGpu(d)) => {
                WebGpu::submit(q, d).map(FenceImpl::WebGpu)
            }
            (BatchImpl::Cuda(q), BackendDevice::Cuda(d)) => Cuda::submit(q, d).map(FenceImpl::Cuda),
            _ => Err(mismatch()),
        }
    }

    /// Order this queue's later work after `fence`.
    pub fn wait_for(&self, dev: &BackendDevice, fence: &FenceImpl) -> Result<()> {
        match (self, dev, fence) {
            (BatchImpl::Cpu(q), BackendDevice::Cpu(d), FenceImpl::Cpu(f)) => Cpu::wait_for(q, d, f),
            (BatchImpl::WebGpu(q), BackendDevice::WebGpu(d), FenceImpl::WebGpu(f)) => {
                WebGpu::wait_for(q, d, f)
            }
            (BatchImpl::Cuda(q), BackendDevice::Cuda(d), FenceImpl::Cuda(f)) => {
                Cuda::wait_for(q, d, f)
            }
            _ => Err(mismatch()),
        }
    }

    /// Read `bytes` bytes at `offset` of `src` after all recorded work, lending them to `take`
    /// where they lie once read (see [`Mapped`]).
    pub async fn read<R>(
        &self,
        dev: &BackendDevice,
        src: &Arc<Block>,
        offset: u64,
        bytes: u64,
        take: impl FnOnce(Mapped<'_>) -> R,
    ) -> Result<R> {
        on_pair!(
            self => BatchImpl,
            dev => BackendDevice,
            |B, q, d| B::read(q, d, src, offset, bytes, take).await,
            else Err(mismatch())
        )
    }
}

impl FenceImpl {
    /// Whether the work before this fence has finished (never blocks).
    pub fn is_signalled(&self, dev: &BackendDevice) -> bool {
        on_pair!(
            self => FenceImpl,
            dev => BackendDevice,
            |B, f, d| B::is_signalled(f, d),
            else true
        )
    }

    /// Device time from `start` to this fence (both of `dev`, a `backend` device), where the
    /// device has timers.
    pub fn elapsed_since(
        &self,
        start: &FenceImpl,
        dev: &BackendDevice,
        backend: BackendKind,
    ) -> Result<std::time::Duration> {
        let elapsed = match (start, self, dev) {
            (FenceImpl::Cpu(s), FenceImpl::Cpu(e), BackendDevice::Cpu(d)) => Cpu::elapsed(s, e, d),
            (FenceImpl::WebGpu(s), FenceImpl::WebGpu(e), BackendDevice::WebGpu(d)) => {
                WebGpu::elapsed(s, e, d)
            }
            (FenceImpl::Cuda(s), FenceImpl::Cuda(e), BackendDevice::Cuda(d)) => {
                Cuda::elapsed(s, e, d)
            }
            _ => Some(Err(mismatch())),
        };
        elapsed.unwrap_or_else(|| {
            Err(Error::Unsupported {
                backend,
                what: "device time between fences needs device timers: CUDA events on cuda, \
                    natively timestamp queries on webgpu (the adapter lacks them, or this is \
                    a browser)"
                    .into(),
            })
        })
    }

    /// Wait until the work before this fence has finished.
    pub async fn wait(&self, dev: &BackendDevice) -> Result<()> {
        on_pair!(
            self => FenceImpl,
            dev => BackendDevice,
            |B, f, d| B::wait(f, d).await,
            else Err(mismatch())
        )
    }
}
