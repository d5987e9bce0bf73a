//! Device memory blocks and pinned host staging buffers.

use std::sync::{Arc, Mutex};

use cudarc::driver::{result, CudaContext};

use super::driver_error;
use crate::base::signal::lock;
use crate::{Error, Result};

/// One block of device memory (`cuMemAlloc`), freed on drop.
pub(crate) struct DeviceMemory {
    /// Device address of the block's first byte.
    pub ptr: u64,
    ctx: Arc<CudaContext>,
}

impl DeviceMemory {
    pub(crate) fn new(ctx: &Arc<CudaContext>, bytes: u64) -> Result<Self> {
        ctx.bind_to_thread()
            .map_err(|e| Error::Device(format!("binding the CUDA context: {}", driver_error(e))))?;
        let size = usize::try_from(bytes)
            .map_err(|_| Error::Invalid(format!("{bytes} bytes exceed the address space")))?;
        // SAFETY: the context is current on this thread; the block is freed exactly once, on drop.
        let ptr = unsafe { result::malloc_sync(size) }.map_err(|e| {
            let free = ctx
                .mem_get_info()
                .map(|(free, total)| format!(" ({free} of {total} bytes free)"))
                .unwrap_or_default();
            Error::Device(format!(
                "allocating {bytes} bytes of device memory failed: {}{free}",
                driver_error(e)
            ))
        })?;
        Ok(DeviceMemory {
            ptr,
            ctx: ctx.clone(),
        })
    }
}

impl Drop for DeviceMemory {
    /// The pool drops a block only once no queued work uses it; the free waits while a
    /// stream captures.
    fn drop(&mut self) {
        super::graph::release(super::graph::Release::Device {
            ptr: self.ptr,
            ctx: self.ctx.clone(),
        });
    }
}

/// Page-locked host memory (`cuMemHostAlloc`), which the GPU copies from and to at full
/// speed and asynchronously.
pub(crate) struct PinnedBuffer {
    ptr: *mut u8,
    len: usize,
    ctx: Arc<CudaContext>,
}

// SAFETY: the buffer is plain host memory owned by this value; access goes through
// `&self` / `&mut self`.
unsafe impl Send for PinnedBuffer {}
unsafe impl Sync for PinnedBuffer {}

impl PinnedBuffer {
    fn new(ctx: &Arc<CudaContext>, len: usize) -> Result<Self> {
        ctx.bind_to_thread()
            .map_err(|e| Error::Device(format!("binding the CUDA context: {}", driver_error(e))))?;
        // SAFETY: the context is current; the memory is freed once, on drop.
        let ptr = unsafe { result::malloc_host(len, 0) }.map_err(|e| {
            Error::Device(format!(
                "allocating {len} bytes of pinned host memory failed: {}",
                driver_error(e)
            ))
        })?;
        Ok(PinnedBuffer {
            ptr: ptr.cast(),
            len,
            ctx: ctx.clone(),
        })
    }

    /// Capacity in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The first `n` bytes. The caller makes sure no copy into them is in flight.
    pub(crate) fn bytes(&self, n: usize) -> &[u8] {
        // SAFETY: `ptr` points to `len` bytes owned by self; `n <= len` is checked by slicing.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
            .get(..n)
            .unwrap_or(&[])
    }

    /// The first `n` bytes, writable. The caller makes sure no copy from them is in flight.
    pub(crate) fn bytes_mut(&mut self, n: usize) -> &mut [u8] {
        // SAFETY: as in `bytes`, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
            .get_mut(..n)
            .unwrap_or(&mut [])
    }
}

impl Drop for PinnedBuffer {
    /// No copy is in flight (the staging pool gets buffers back only after their copies
    /// finished); the free waits while a stream captures.
    fn drop(&mut self) {
        super::graph::release(super::graph::Release::Host {
            ptr: self.ptr as usize,
            ctx: self.ctx.clone(),
        });
    }
}

/// Reuses pinned buffers, since pinning memory costs far more than copying through it.
pub(crate) struct StagingPool {
    free: Mutex<Vec<PinnedBuffer>>,
}

/// Transfers up to this size go through pinned staging; larger ones copy from pageable
/// memory, which the driver stages itself.
pub(crate) const STAGING_MAX: usize = 64 << 20;
/// Pinned bytes kept for reuse.
const STAGING_CACHE: usize = 256 << 20;

impl StagingPool {
    pub(crate) fn new() -> Self {
        StagingPool {
            free: Mutex::new(Vec::new()),
        }
    }

    /// A buffer of at least `len` bytes.
    pub(crate) fn take(&self, ctx: &Arc<CudaContext>, len: usize) -> Result<PinnedBuffer> {
        {
            let mut free = lock(&self.free);
            if let Some(i) = (0..free.len())
                .filter(|&i| free[i].len() >= len)
                .min_by_key(|&i| free[i].len())
            {
                return Ok(free.swap_remove(i));
            }
        }
        PinnedBuffer::new(ctx, len.next_power_of_two().max(1 << 20))
    }

    /// Return a buffer whose copies have finished.
    pub(crate) fn give_back(&self, buffer: PinnedBuffer) {
        let mut free = lock(&self.free);
        let cached: usize = free.iter().map(PinnedBuffer::len).sum();
        if cached + buffer.len() <= STAGING_CACHE {
            free.push(buffer);
        }
    }
}
