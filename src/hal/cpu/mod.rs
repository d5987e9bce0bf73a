//! The CPU backend: memory is host memory, work runs in order as it is recorded, fences are
//! signalled at once. It is also the reference the other backends are tested against.


use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use rayon::prelude::*;


use super::Memory;
use crate::hal::Block;
use crate::{BackendKind, DeviceInfo, DeviceType, Error, Features, Limits, Result};

/// The CPU device: its only state is whether it was destroyed.
#[derive(Default)]
pub(crate) struct CpuDevice {
    destroyed: std::sync::atomic::AtomicBool,
}

impl CpuDevice {
    /// Refuse every later call (`Device::destroy`).
    pub(crate) fn destroy(&self) {
        self.destroyed.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// `DEVICE_LOST` once destroyed.
    pub(crate) fn check_healthy(&self) -> Result<()> {
        if self.destroyed.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Error::DeviceLost("the cpu device was destroyed (`Device::destroy`): open a device again to continue".into()));
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
        .and_then(|s| s.lines().find(|l| l.starts_with("model name")).and_then(|l| l.split(':').nth(1)).map(|n| n.trim().to_string()))
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// What the CPU device reports.
pub(crate) fn info() -> DeviceInfo {
    let memory = host_memory();
    let threads = rayon::current_num_threads();
    // One allocation may take 3/4 of physical memory: more would only end in swapping or the
    // out-of-memory killer, not in an error the caller can handle.
    let max_buffer = memory.map_or(if cfg!(target_pointer_width = "32") { 1 << 31 } else { 1 << 34 }, |m| m / 4 * 3);
    DeviceInfo {
        index: 0,
        name: format!("{} ({threads} thread{})", cpu_name(), if threads == 1 { "" } else { "s" }),
        backend: BackendKind::Cpu,
        device_type: DeviceType::Cpu,
        api: "host".into(),
        driver: format!("unicompute {}", env!("CARGO_PKG_VERSION")),
        limits: Limits {
            max_buffer_size: max_buffer,
            max_storage_binding_size: max_buffer,
            max_uniform_binding_size: max_buffer,
            max_workgroup_size: [u32::MAX; 3],
            max_invocations_per_workgroup: u32::MAX,
            max_workgroups: [u32::MAX; 3],
            max_workgroup_storage_size: u32::MAX,
            max_storage_buffers_per_kernel: u32::MAX,
            storage_offset_alignment: 4,
            max_loop_iterations: None,
        },
        features: Features { f16: false, timestamps: false, subgroups: false },
        memory_total: memory,
        compute_capability: None,
        threads: Some(threads),
    }
}

/// Zero-filled host memory, or an error if the host cannot provide it.
pub(crate) fn alloc(bytes: u64) -> Result<CpuMemory> {
    let words = usize::try_from(bytes.div_ceil(4)).map_err(|_| Error::Invalid(format!("{bytes} bytes exceed the address space")))?;
    let mut v = Vec::new();
    v.try_reserve_exact(words)
        .map_err(|e| Error::Device(format!("host allocation of {bytes} bytes failed: {e}")))?;
    v.resize(words, 0u32);
    Ok(RwLock::new(v))
}

fn memory(buf: &Arc<Block>) -> Result<&CpuMemory> {
    match buf.memory() {
        Memory::Cpu(m) => Ok(m),
        #[allow(unreachable_patterns)]
        _ => Err(Error::Device("internal: a non-cpu buffer reached the cpu backend".into())),
    }
}

pub(crate) fn read_guard(buf: &Arc<Block>) -> Result<RwLockReadGuard<'_, Vec<u32>>> {
    Ok(memory(buf)?.read().unwrap_or_else(|e| e.into_inner()))
}

pub(crate) fn write_guard(buf: &Arc<Block>) -> Result<RwLockWriteGuard<'_, Vec<u32>>> {
    Ok(memory(buf)?.write().unwrap_or_else(|e| e.into_inner()))
}

fn byte_range(offset: u64, bytes: u64) -> std::ops::Range<usize> {
    offset as usize..(offset + bytes) as usize
}

pub(crate) fn write(dst: &Arc<Block>, offset: u64, data: &[u8]) -> Result<()> {
    let mut g = write_guard(dst)?;
    bytemuck::cast_slice_mut::<u32, u8>(&mut g)[byte_range(offset, data.len() as u64)].copy_from_slice(data);
    Ok(())
}

/// Fill the first `bytes` of a block with `word`.
pub(crate) fn fill(mem: &CpuMemory, bytes: u64, word: u32) {
    let mut g = mem.write().unwrap_or_else(|e| e.into_inner());
    let end = ((bytes / 4) as usize).min(g.len());
    g[..end].fill(word);
}

pub(crate) fn copy(src: &Arc<Block>, src_offset: u64, dst: &Arc<Block>, dst_offset: u64, bytes: u64) -> Result<()> {
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
    to.par_chunks_mut(1 << 20).zip(from.par_chunks(1 << 20)).for_each(|(t, f)| t.copy_from_slice(f));
    Ok(())
}

/// Lend `bytes` bytes at `offset` of `src` to `take`, in place.
pub(crate) fn read<R>(src: &Arc<Block>, offset: u64, bytes: u64, take: impl FnOnce(super::Mapped<'_>) -> R) -> Result<R> {
    let g = read_guard(src)?;
    Ok(take(super::Mapped::Host(&bytemuck::cast_slice::<u32, u8>(&g)[byte_range(offset, bytes)])))
}
