//! The CPU backend: memory is host memory, work runs in order as it is recorded, fences are
//! signalled at once. It is also the reference the other backends are tested against.

pub(crate) mod wgsl;

use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::base::par::*;

use super::timer::{Clock, Span, Timing};
use super::{Backend, Block, Mapped, Memory, UserArg, UserSource};
use crate::base::dtype::KernelLanguage;
use crate::{BackendKind, DeviceInfo, DeviceType, Error, Features, Limits, Result};

/// The CPU device: its only state is whether it was destroyed.
#[derive(Default)]
pub(crate) struct CpuDevice {
    destroyed: std::sync::atomic::AtomicBool,
}

impl CpuDevice {
    /// Refuse every later call (`Device::destroy`).
    pub(crate) fn destroy(&self) {
        self.destroyed
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// `DEVICE_LOST` once destroyed.
    pub(crate) fn check_healthy(&self) -> Result<()> {
        if self.destroyed.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Error::DeviceLost(
                "the cpu device was destroyed (`Device::destroy`): open a device again to continue"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// Host memory of one block, in 32-bit words so every 4-byte dtype is aligned.
pub(crate) type CpuMemory = RwLock<Vec<u32>>;

/// Bytes of memory the host has, where the platform tells.
fn host_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn cpu_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|n| n.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// What the CPU device reports.
pub(crate) fn info() -> DeviceInfo {
    let memory = host_memory();
    let threads = crate::base::par::current_num_threads();
    // One allocation may take 3/4 of physical memory: more would only end in swapping or the
    // out-of-memory killer, not in an error the caller can handle.
    let max_buffer = memory.map_or(
        if cfg!(target_pointer_width = "32") {
            1 << 31
        } else {
            1 << 34
        },
        |m| m / 4 * 3,
    );
    DeviceInfo {
        index: 0,
        name: format!(
            "{} ({threads} thread{})",
            cpu_name(),
            if threads == 1 { "" } else { "s" }
        ),
        backend: BackendKind::Cpu,
        device_type: DeviceType::Cpu,
        api: "host".into(),
        driver: format!("unicompute {}", env!("CARGO_PKG_VERSION")),
        limits: Limits {
            max_buffer_size: max_buffer,
            max_storage_binding_size: max_buffer,
            max_uniform_binding_size: max_buffer,
            // WGSL kernels run a workgroup's invocations together, one value per invocation
            // for each expression: the limits of a large GPU keep that memory bounded.
            max_workgroup_size: [1024, 1024, 64],
            max_invocations_per_workgroup: 1024,
            max_workgroups: [65_535; 3],
            max_workgroup_storage_size: u32::MAX,
            max_storage_buffers_per_kernel: u32::MAX,
            storage_offset_alignment: 4,
            max_loop_iterations: None,
        },
        features: Features {
            f16: true,
            timestamps: false,
            subgroups: true,
            int64: true,
        }, // in user WGSL kernels (the executor)
        memory_total: memory,
        compute_capability: None,
        threads: Some(threads),
    }
}

fn memory(buf: &Arc<Block>) -> Result<&CpuMemory> {
    match buf.memory() {
        Memory::Cpu(m) => Ok(m),
        _ => Err(Error::Internal(
            "a non-cpu buffer reached the cpu backend".into(),
        )),
    }
}

/// The block's words, for reading.
pub(crate) fn read_guard(buf: &Arc<Block>) -> Result<RwLockReadGuard<'_, Vec<u32>>> {
    Ok(memory(buf)?.read().unwrap_or_else(|e| e.into_inner()))
}

/// The block's words, for writing.
pub(crate) fn write_guard(buf: &Arc<Block>) -> Result<RwLockWriteGuard<'_, Vec<u32>>> {
    Ok(memory(buf)?.write().unwrap_or_else(|e| e.into_inner()))
}

fn byte_range(offset: u64, bytes: u64) -> std::ops::Range<usize> {
    offset as usize..(offset + bytes) as usize
}

/// The CPU backend: host memory, work run as it is recorded.
pub(crate) struct Cpu;

/// A CPU queue: work runs as it is recorded, so there is no state.
pub(crate) struct CpuBatch;

/// Captured CPU work: none exists, since the CPU backend runs work as it is recorded and has
/// nothing to keep for a replay.
pub(crate) enum NoGraph {}

/// A CPU fence: work had finished when it was submitted.
#[derive(Clone)]
pub(crate) struct Done;

impl Backend for Cpu {
    type Adapter = ();
    type Device = CpuDevice;
    type Memory = CpuMemory;
    type Batch = CpuBatch;
    type Fence = Done;
    /// A WGSL kernel for the executor of naga's IR (`wgsl/`).
    type Program = wgsl::WgslProgram;
    type Graph = NoGraph;

    async fn enumerate() -> Vec<(DeviceInfo, ())> {
        vec![(info(), ())]
    }

    async fn open(_: (), _: &DeviceInfo) -> Result<CpuDevice> {
        Ok(CpuDevice::default())
    }

    /// Zero-filled host memory, or an error if the host cannot provide it.
    fn alloc(_: &CpuDevice, bytes: u64) -> Result<CpuMemory> {
        let words = usize::try_from(bytes.div_ceil(4))
            .map_err(|_| Error::Invalid(format!("{bytes} bytes exceed the address space")))?;
        let mut v = Vec::new();
        v.try_reserve_exact(words)
            .map_err(|e| Error::Device(format!("host allocation of {bytes} bytes failed: {e}")))?;
        v.resize(words, 0u32);
        Ok(RwLock::new(v))
    }

    fn fill_now(_: &CpuDevice, mem: &CpuMemory, bytes: u64, word: u32) -> Result<()> {
        let mut g = mem.write().unwrap_or_else(|e| e.into_inner());
        let end = ((bytes / 4) as usize).min(g.len());
        g[..end].fill(word);
        Ok(())
    }

    fn allocations_are_zeroed(_: &CpuDevice) -> bool {
        true
    }

    fn native_f16(_: &CpuDevice) -> bool {
        false
    }

    fn memory_free(_: &CpuDevice) -> Option<u64> {
        None
    }

    /// The op kernels are the CPU bodies, built with the crate.
    fn kernels_compiled(_: &CpuDevice) -> Option<usize> {
        None
    }

    /// WGSL kernels, run by the executor; CUDA C is for CUDA devices.
    fn user_program(_: &CpuDevice, k: &UserSource<'_>) -> Option<Result<Self::Program>> {
        (k.language == KernelLanguage::Wgsl).then(|| wgsl::compile(k.source, k.entry, k.constants))
    }

    fn maintain(_: &CpuDevice) {}

    fn wait_idle(_: &CpuDevice) {}

    fn destroy(dev: &CpuDevice) {
        dev.destroy();
    }

    fn check_healthy(dev: &CpuDevice) -> Result<()> {
        dev.check_healthy()
    }

    fn batch(_: &CpuDevice) -> CpuBatch {
        CpuBatch
    }

    fn write(
        _: &CpuBatch,
        _: &CpuDevice,
        dst: &Arc<Block>,
        offset: u64,
        data: &[u8],
    ) -> Result<()> {
        let mut g = write_guard(dst)?;
        bytemuck::cast_slice_mut::<u32, u8>(&mut g)[byte_range(offset, data.len() as u64)]
            .copy_from_slice(data);
        Ok(())
    }

    fn copy(
        _: &CpuBatch,
        _: &CpuDevice,
        src: &Arc<Block>,
        src_offset: u64,
        dst: &Arc<Block>,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        if src.id() == dst.id() {
            let mut g = write_guard(dst)?;
            let b = bytemuck::cast_slice_mut::<u32, u8>(&mut g);
            b.copy_within(byte_range(src_offset, bytes), dst_offset as usize);
            return Ok(());
        }
        let s = read_guard(src)?;
        let mut d = write_guard(dst)?;
        let to = &mut bytemuck::cast_slice_mut::<u32, u8>(&mut d)[byte_range(dst_offset, bytes)];
        let from = &bytemuck::cast_slice::<u32, u8>(&s)[byte_range(src_offset, bytes)];
        // Large copies in parallel: one thread does not saturate memory bandwidth.
        to.par_chunks_mut(1 << 20)
            .zip(from.par_chunks(1 << 20))
            .for_each(|(t, f)| t.copy_from_slice(f));
        Ok(())
    }

    /// Runs the kernel to completion, as every CPU launch does.
    fn launch_user(
        _: &CpuBatch,
        _: &CpuDevice,
        program: &Self::Program,
        args: &[UserArg<'_>],
        workgroups: [u32; 3],
        _: [u32; 3],
    ) -> Result<()> {
        wgsl::run(program, args, workgroups)
    }

    /// The host clock around the launch, which runs as it is recorded.
    fn timed(
        _: &CpuBatch,
        _: &CpuDevice,
        epoch: web_time::Instant,
        record: impl FnOnce() -> Result<()>,
    ) -> Result<(Timing, Clock)> {
        let t0 = web_time::Instant::now();
        record()?;
        Ok((Timing::Ready(Some(Span::since(epoch, t0))), Clock::Host))
    }

    fn captures(_: &CpuDevice) -> Result<()> {
        Err(Error::Unsupported {
            backend: crate::BackendKind::Cpu,
            what: "capturing work for replay: the cpu backend runs each op as it is called, so \
                there is no recorded work to keep (call the ops again, or capture on a webgpu or \
                cuda device)"
                .into(),
        })
    }

    fn begin_capture(_: &CpuBatch, dev: &CpuDevice) -> Result<()> {
        Self::captures(dev)
    }

    fn end_capture(_: &CpuBatch, _: &CpuDevice, _: bool) -> Result<Option<NoGraph>> {
        Ok(None)
    }

    fn replay(_: &CpuBatch, _: &CpuDevice, graph: &Arc<NoGraph>) -> Result<()> {
        match **graph {}
    }

    fn submit(_: &CpuBatch, _: &CpuDevice) -> Result<Done> {
        Ok(Done)
    }

    fn wait_for(_: &CpuBatch, dev: &CpuDevice, _: &Done) -> Result<()> {
        dev.check_healthy()
    }

    /// Lend the bytes in place.
    async fn read<R>(
        _: &CpuBatch,
        _: &CpuDevice,
        src: &Arc<Block>,
        offset: u64,
        bytes: u64,
        take: impl FnOnce(Mapped<'_>) -> R,
    ) -> Result<R> {
        let g = read_guard(src)?;
        Ok(take(Mapped::Host(
            &bytemuck::cast_slice::<u32, u8>(&g)[byte_range(offset, bytes)],
        )))
    }

    fn is_signalled(_: &Done, _: &CpuDevice) -> bool {
        true
    }

    async fn wait(_: &Done, _: &CpuDevice) -> Result<()> {
        Ok(())
    }

    fn elapsed(_: &Done, _: &Done, _: &CpuDevice) -> Option<Result<std::time::Duration>> {
        None
    }
}
