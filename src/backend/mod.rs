//! The one seam between the API and the GPU APIs: allocation, writes, copies, fills, op and
//! kernel launches, submission, fences and reads. Only the modules below this one know a
//! GPU API; everything above works with these enums.
//!
//! The `cuda` backend has its place in [`BackendKind`](crate::BackendKind) already: without
//! it compiled in, no CUDA device is listed and opening one says why.

pub(crate) mod cpu;
#[cfg(feature = "webgpu")]
pub(crate) mod webgpu;

use std::sync::Arc;

use crate::buffer::BufferInner;
use crate::kernel::{Binding, Kernel};
use crate::ops::OpCall;
use crate::{BackendKind, DeviceInfo, Error, Queue, Result};

/// A device that can be opened.
pub(crate) struct Candidate {
    pub info: DeviceInfo,
    source: Source,
}

enum Source {
    Cpu,
    #[cfg(feature = "webgpu")]
    WebGpu(webgpu::Adapter),
}

impl Candidate {
    /// Open the device.
    pub fn open(self) -> Result<BackendDevice> {
        match self.source {
            Source::Cpu => Ok(BackendDevice::Cpu(cpu::CpuDevice)),
            #[cfg(feature = "webgpu")]
            Source::WebGpu(adapter) => Ok(BackendDevice::WebGpu(Box::new(webgpu::GpuDevice::open(adapter, &self.info)?))),
        }
    }
}

/// Every device this build can open, in a stable order: the CPU, then GPU adapters.
pub(crate) fn enumerate() -> Vec<Candidate> {
    let mut out = vec![Candidate { info: cpu::info(), source: Source::Cpu }];
    #[cfg(feature = "webgpu")]
    for (info, adapter) in webgpu::enumerate() {
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
        BackendKind::WebGpu if cfg!(feature = "webgpu") => {
            "no wgpu adapter with compute shaders was found (natively install a Vulkan, Metal or DX12 driver, e.g. \
             Mesa's lavapipe: `apt-get install mesa-vulkan-drivers`; in a browser enable WebGPU)"
                .into()
        }
        BackendKind::WebGpu => "this build has no webgpu backend: enable the cargo feature `webgpu`".into(),
        BackendKind::Cuda => "this build has no cuda backend: CUDA support is not compiled in".into(),
    }
}

/// An opened device of one backend.
pub(crate) enum BackendDevice {
    Cpu(cpu::CpuDevice),
    #[cfg(feature = "webgpu")]
    WebGpu(Box<webgpu::GpuDevice>),
}

/// One block of backend memory.
pub(crate) enum Memory {
    Cpu(cpu::CpuMemory),
    #[cfg(feature = "webgpu")]
    WebGpu(webgpu::GpuMemory),
}

/// A queue's backend state.
pub(crate) enum QueueImpl {
    Cpu,
    #[cfg(feature = "webgpu")]
    WebGpu(webgpu::GpuQueue),
}

/// A fence's backend state.
#[derive(Clone)]
pub(crate) enum FenceImpl {
    /// Work that had finished when it was submitted (the CPU runs work as it is recorded).
    Done,
    #[cfg(feature = "webgpu")]
    WebGpu(webgpu::GpuFence),
}

fn mismatch() -> Error {
    Error::Device("internal: a queue was used with a device of another backend".into())
}

impl BackendDevice {
    /// Allocate `bytes` of zero-filled memory.
    pub fn alloc(&self, bytes: u64) -> Result<Memory> {
        match self {
            BackendDevice::Cpu(_) => cpu::alloc(bytes).map(Memory::Cpu),
            #[cfg(feature = "webgpu")]
            BackendDevice::WebGpu(d) => Ok(Memory::WebGpu(d.alloc(bytes))),
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
            #[allow(unreachable_patterns)]
            _ => Err(Error::Device("internal: memory of another backend".into())),
        }
    }

    /// Let finished work release its buffers (never blocks).
    pub fn maintain(&self) {
        match self {
            BackendDevice::Cpu(_) => {}
            #[cfg(feature = "webgpu")]
            BackendDevice::WebGpu(d) => d.maintain(),
        }
    }

    /// An error if the device was lost or reported an error since the last check.
    pub fn check_healthy(&self) -> Result<()> {
        match self {
            BackendDevice::Cpu(_) => Ok(()),
            #[cfg(feature = "webgpu")]
            BackendDevice::WebGpu(d) => d.check_healthy(),
        }
    }
}

impl QueueImpl {
    pub fn new(backend: &BackendDevice) -> Self {
        match backend {
            BackendDevice::Cpu(_) => QueueImpl::Cpu,
            #[cfg(feature = "webgpu")]
            BackendDevice::WebGpu(_) => QueueImpl::WebGpu(webgpu::GpuQueue::default()),
        }
    }

    pub fn write(&self, dev: &BackendDevice, dst: &Arc<BufferInner>, offset: u64, data: &[u8]) -> Result<()> {
        match (self, dev) {
            (QueueImpl::Cpu, BackendDevice::Cpu(_)) => cpu::write(dst, offset, data),
            #[cfg(feature = "webgpu")]
            (QueueImpl::WebGpu(q), BackendDevice::WebGpu(d)) => q.write(d, dst, offset, data),
            #[allow(unreachable_patterns)]
            _ => Err(mismatch()),
        }
    }

    pub fn copy(&self, dev: &BackendDevice, src: &Arc<BufferInner>, src_offset: u64, dst: &Arc<BufferInner>, dst_offset: u64, bytes: u64) -> Result<()> {
        match (self, dev) {
            (QueueImpl::Cpu, BackendDevice::Cpu(_)) => cpu::copy(src, src_offset, dst, dst_offset, bytes),
            #[cfg(feature = "webgpu")]
            (QueueImpl::WebGpu(q), BackendDevice::WebGpu(d)) => q.copy(d, src, src_offset, dst, dst_offset, bytes),
            #[allow(unreachable_patterns)]
            _ => Err(mismatch()),
        }
    }

    pub fn run_op(&self, queue: &Queue, call: OpCall<'_>) -> Result<()> {
        match (self, &queue.device().shared.backend) {
            (QueueImpl::Cpu, BackendDevice::Cpu(_)) => cpu::run_op(call),
            #[cfg(feature = "webgpu")]
            (QueueImpl::WebGpu(q), BackendDevice::WebGpu(d)) => webgpu::ops::run_op(q, d, queue, call),
            #[allow(unreachable_patterns)]
            _ => Err(mismatch()),
        }
    }

    pub fn launch(&self, dev: &BackendDevice, kernel: &Kernel, bindings: &[Binding<'_>], workgroups: [u32; 3]) -> Result<()> {
        match (self, dev) {
            (QueueImpl::Cpu, BackendDevice::Cpu(_)) => {
                Err(Error::Unsupported { backend: BackendKind::Cpu, what: "user WGSL kernels need a webgpu device".into() })
            }
            #[cfg(feature = "webgpu")]
            (QueueImpl::WebGpu(q), BackendDevice::WebGpu(d)) => q.launch_kernel(d, kernel, bindings, workgroups),
            #[allow(unreachable_patterns)]
            _ => Err(mismatch()),
        }
    }

    pub fn submit(&self, dev: &BackendDevice) -> Result<FenceImpl> {
        match (self, dev) {
            (QueueImpl::Cpu, BackendDevice::Cpu(_)) => Ok(FenceImpl::Done),
            #[cfg(feature = "webgpu")]
            (QueueImpl::WebGpu(q), BackendDevice::WebGpu(d)) => q.submit(d).map(FenceImpl::WebGpu),
            #[allow(unreachable_patterns)]
            _ => Err(mismatch()),
        }
    }

    pub fn wait_for(&self, dev: &BackendDevice, _fence: &FenceImpl) -> Result<()> {
        // Both backends run submissions in order; see `Queue::wait_for`.
        dev.check_healthy()
    }

    pub async fn read(&self, dev: &BackendDevice, src: &Arc<BufferInner>, offset: u64, bytes: u64) -> Result<Vec<u8>> {
        match (self, dev) {
            (QueueImpl::Cpu, BackendDevice::Cpu(_)) => cpu::read(src, offset, bytes),
            #[cfg(feature = "webgpu")]
            (QueueImpl::WebGpu(q), BackendDevice::WebGpu(d)) => q.read(d, src, offset, bytes).await,
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
        }
    }

    pub async fn wait(&self, dev: &BackendDevice) -> Result<()> {
        match (self, dev) {
            (FenceImpl::Done, _) => Ok(()),
            #[cfg(feature = "webgpu")]
            (FenceImpl::WebGpu(f), BackendDevice::WebGpu(d)) => f.wait(d).await,
            #[allow(unreachable_patterns)]
            _ => Err(mismatch()),
        }
    }
}
