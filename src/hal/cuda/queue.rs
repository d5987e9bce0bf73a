//! Queues are CUDA streams; work is issued as it is recorded. The memory of every buffer a
//! recorded command uses (and every pinned staging buffer) is held until an event recorded
//! after the command has completed, so it is never freed under running work; pooled memory
//! is reused meanwhile only by later work of the same stream, which runs after it.

use std::sync::{Arc, Mutex};

use cudarc::driver::{
    result, sys, CudaContext, CudaEvent, CudaFunction, CudaStream, DeviceRepr, DriverError,
    LaunchConfig, PushKernelArg,
};

use super::graph::CudaWork;
use super::memory::{PinnedBuffer, StagingPool, STAGING_MAX};
use super::{driver_error, CudaDevice, DeviceMemory, UserFunction};
use crate::base::dtype::Scalar;
use crate::base::signal::lock;
use crate::hal::UserArg;
use crate::hal::{Block, Held};
use crate::hal::{Mapped, Memory};
use crate::{Error, Result};

/// Recorded commands after which a queue records an event on its own and hands what they
/// hold to the device's retirement list...
const MAX_PENDING: usize = 1024;
/// ...or pinned staging bytes.
const MAX_PENDING_STAGING: usize = 64 << 20;
/// Pinned staging bytes in flight on a device before new transfers wait for old ones.
const MAX_STAGING_IN_FLIGHT: usize = 512 << 20;

/// What recorded work holds until it has run.
#[derive(Default)]
pub(crate) struct Retained {
    held: Vec<Held>,
    staging: Vec<PinnedBuffer>,
    staging_bytes: usize,
    commands: usize,
    /// Captured work replayed.
    graphs: Vec<Arc<CudaWork>>,
    /// User kernels launched: their modules stay loaded while the work (or a graph) runs.
    functions: Vec<CudaFunction>,
}

impl Drop for Retained {
    /// Unloading a module may synchronise its context: not while a stream captures.
    fn drop(&mut self) {
        let functions = std::mem::take(&mut self.functions);
        if !functions.is_empty() {
            super::graph::release_objects(functions);
        }
    }
}

struct InFlight {
    event: Arc<CudaEvent>,
    retained: Retained,
}

/// Work issued on any stream of a device whose resources are released once its event has
/// completed; also the device's pinned staging pool.
pub(crate) struct Retirement {
    in_flight: Mutex<Vec<InFlight>>,
    staging: StagingPool,
}

impl Retirement {
    pub(crate) fn new() -> Self {
        Retirement {
            in_flight: Mutex::new(Vec::new()),
            staging: StagingPool::new(),
        }
    }

    /// A pinned staging buffer of at least `len` bytes. Finished work returns its buffers
    /// first; past [`MAX_STAGING_IN_FLIGHT`] this waits for the oldest transfers.
    fn take_staging(
        &self,
        ctx: &Arc<CudaContext>,
        len: usize,
    ) -> std::result::Result<PinnedBuffer, DriverError> {
        self.poll()?;
        loop {
            let oldest = {
                let list = lock(&self.in_flight);
                let in_flight: usize = list.iter().map(|f| f.retained.staging_bytes).sum();
                if in_flight <= MAX_STAGING_IN_FLIGHT {
                    break;
                }
                list.iter()
                    .find(|f| f.retained.staging_bytes > 0)
                    .map(|f| f.event.clone())
            };
            match oldest {
                Some(event) => event.synchronize()?,
                None => break,
            }
            self.poll()?;
        }
        self.staging
            .take(ctx, len)
            .map_err(|_| DriverError(sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY))
    }

    fn push(&self, event: Arc<CudaEvent>, retained: Retained) {
        lock(&self.in_flight).push(InFlight { event, retained });
    }

    /// Release the resources of completed work (never blocks).
    pub(crate) fn poll(&self) -> std::result::Result<(), DriverError> {
        let mut error = None;
        let finished: Vec<InFlight> = {
            let mut list = lock(&self.in_flight);
            let (done, pending): (Vec<_>, Vec<_>) =
                list.drain(..)
                    .partition(|f| match f.event.try_is_complete() {
                        Ok(done) => done,
                        Err(e) => {
                            error = Some(e);
                            false
                        }
                    });
            *list = pending;
            done
        };
        // Outside the lock: dropping returns memory to the pools.
        for mut f in finished {
            for buffer in std::mem::take(&mut f.retained.staging) {
                self.staging.give_back(buffer);
            }
        }
        error.map_or(Ok(()), Err)
    }
}

/// A CUDA stream with the resources its recorded work holds.
pub(crate) struct CudaBatch {
    ctx: Arc<CudaContext>,
    retirement: Arc<Retirement>,
    /// Created on first use.
    stream: Mutex<Option<Arc<CudaStream>>>,
    pending: Mutex<Retained>,
    /// The stream is capturing: what is recorded is kept for a graph, never marked by events.
    capturing: std::sync::atomic::AtomicBool,
    /// cuBLAS handle bound to this stream, created on the first matmul.
    pub blas: Mutex<Option<super::blas::BlasHandle>>,
}

/// The device memory behind pooled memory.
pub(crate) fn device_memory(buf: &Arc<Block>) -> Result<&DeviceMemory> {
    match buf.memory() {
        Memory::Cuda(m) => Ok(m),
        _ => Err(Error::Internal(
            "a non-cuda buffer reached the cuda backend".into(),
        )),
    }
}

/// Device address of element `offset` (4-byte elements) of a buffer.
pub(crate) fn address(buf: &Arc<Block>, offset: usize) -> Result<u64> {
    Ok(device_memory(buf)?.ptr + offset as u64 * 4)
}

impl Drop for Retirement {
    fn drop(&mut self) {
        // The device is going away: let issued work finish before its memory is freed.
        for f in lock(&self.in_flight).iter() {
            let _ = f.event.synchronize();
        }
    }
}

impl CudaBatch {
    pub(crate) fn new(dev: &CudaDevice) -> Self {
        CudaBatch {
            ctx: dev.ctx.clone(),
            retirement: dev.retirement.clone(),
            stream: Mutex::new(None),
            pending: Mutex::new(Retained::default()),
            capturing: std::sync::atomic::AtomicBool::new(false),
            blas: Mutex::new(None),
        }
    }

    /// The stream, created on first use.
    pub(crate) fn stream(&self, dev: &CudaDevice) -> Result<Arc<CudaStream>> {
        let mut slot = lock(&self.stream);
        if let Some(s) = slot.as_ref() {
            return Ok(s.clone());
        }
        let stream = self
            .ctx
            .new_stream()
            .map_err(|e| dev.fail("creating a CUDA stream", e))?;
        *slot = Some(stream.clone());
        Ok(stream)
    }

    /// Note buffers and staging memory the command just issued uses.
    fn retain(
        &self,
        dev: &CudaDevice,
        held: impl IntoIterator<Item = Arc<Block>>,
        staging: Option<PinnedBuffer>,
    ) -> Result<()> {
        let full = {
            let mut p = lock(&self.pending);
            p.held.extend(held.into_iter().map(|b| Held::of(&b)));
            p.staging_bytes += staging.as_ref().map_or(0, PinnedBuffer::len);
            p.staging.extend(staging);
            p.commands += 1;
            (p.commands >= MAX_PENDING || p.staging_bytes >= MAX_PENDING_STAGING)
                && !self.is_capturing()
        };
        if full {
            self.mark(dev, false)?;
        }
        Ok(())
    }

    /// Record an event after everything issued so far and hand the held resources over to
    /// the device until it completes. `timing` events can measure elapsed time (fences).
    fn mark(&self, dev: &CudaDevice, timing: bool) -> Result<Arc<CudaEvent>> {
        let stream = self.stream(dev)?;
        let flags = if timing {
            sys::CUevent_flags::CU_EVENT_DEFAULT
        } else {
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING
        };
        let event = self
            .ctx
            .new_event(Some(flags))
            .map_err(|e| dev.fail("creating a CUDA event", e))?;
        // Hold the pending list while recording, so nothing issued after the event (by
        // another thread) is tied to it.
        let mut pending = lock(&self.pending);
        event
            .record(&stream)
            .map_err(|e| dev.fail("recording a CUDA event", e))?;
        let event = Arc::new(event);
        self.retirement
            .push(event.clone(), std::mem::take(&mut *pending));
        Ok(event)
    }

    fn is_capturing(&self) -> bool {
        self.capturing.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Hand what earlier work holds to the device, then capture the stream's work from now on
    /// (relaxed mode: ops may still allocate memory and compile kernels while it captures).
    /// The queue's cuBLAS handle is made first, outside the capture.
    pub(crate) fn begin_capture(&self, dev: &CudaDevice) -> Result<()> {
        let stream = self.stream(dev)?;
        super::blas::prepare(self, dev)?;
        self.mark(dev, false)?;
        super::graph::capture_begins();
        if let Err(e) =
            stream.begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED)
        {
            super::graph::capture_ends();
            return Err(dev.fail("beginning a CUDA graph capture", e));
        }
        self.capturing
            .store(true, std::sync::atomic::Ordering::Release);
        Ok(())
    }

    /// End the capture: the instantiated graph with what it uses (`keep`), or nothing.
    pub(crate) fn end_capture(&self, dev: &CudaDevice, keep: bool) -> Result<Option<CudaWork>> {
        let stream = self.stream(dev)?;
        let graph = stream.end_capture(sys::CUgraphInstantiate_flags(0));
        self.capturing
            .store(false, std::sync::atomic::Ordering::Release);
        super::graph::capture_ends();
        let mut retained = std::mem::take(&mut *lock(&self.pending));
        let graph = graph.map_err(|e| dev.fail("ending a CUDA graph capture", e))?;
        if !keep {
            // Nothing captured has run: the pinned bytes go back to the pool at once.
            for buffer in std::mem::take(&mut retained.staging) {
                self.retirement.staging.give_back(buffer);
            }
            return Ok(None);
        }
        Ok(Some(CudaWork::new(graph, retained)))
    }

    /// Launch one run of `graph`, held until it has run.
    pub(crate) fn replay(&self, dev: &CudaDevice, graph: &Arc<CudaWork>) -> Result<()> {
        let stream = self.stream(dev)?;
        self.bind(dev)?;
        graph.launch(dev, &stream)?;
        let full = {
            let mut p = lock(&self.pending);
            p.graphs.push(graph.clone());
            p.commands += 1;
            p.commands >= MAX_PENDING && !self.is_capturing()
        };
        if full {
            self.mark(dev, false)?;
        }
        Ok(())
    }

    fn bind(&self, dev: &CudaDevice) -> Result<()> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| dev.fail("binding the CUDA context", e))
    }

    pub(crate) fn write(
        &self,
        dev: &CudaDevice,
        dst: &Arc<Block>,
        offset: u64,
        data: &[u8],
    ) -> Result<()> {
        let stream = self.stream(dev)?;
        let ptr = device_memory(dst)?.ptr + offset;
        self.bind(dev)?;
        if self.is_capturing() && data.len() > STAGING_MAX {
            return Err(Error::Invalid(format!(
                "a write of {} bytes while the queue captures work for replay: a captured write \
                    keeps its bytes in pinned memory, at most {STAGING_MAX} bytes; write before \
                    the capture instead",
                data.len()
            )));
        }
        let staging = if data.len() <= STAGING_MAX {
            let mut pinned = self
                .retirement
                .take_staging(&self.ctx, data.len())
                .map_err(|e| dev.fail("taking pinned staging memory", e))?;
            pinned.bytes_mut(data.len()).copy_from_slice(data);
            // SAFETY: the destination range lies in the block; the pinned source stays alive
            // (retained) until the copy has run.
            unsafe { result::memcpy_htod_async(ptr, pinned.bytes(data.len()), stream.cu_stream()) }
                .map_err(|e| dev.fail("copying to the device", e))?;
            Some(pinned)
        } else {
            // SAFETY: from pageable memory the driver stages the data before returning.
            unsafe { result::memcpy_htod_async(ptr, data, stream.cu_stream()) }
                .map_err(|e| dev.fail("copying to the device", e))?;
            None
        };
        self.retain(dev, [dst.clone()], staging)
    }

    /// Fill the whole of `dst` (its size class) with `word`, in stream order.
    pub(crate) fn fill(&self, dev: &CudaDevice, dst: &Arc<Block>, word: u32) -> Result<()> {
        let stream = self.stream(dev)?;
        let ptr = device_memory(dst)?.ptr;
        self.bind(dev)?;
        // SAFETY: the block holds `capacity` bytes; the stream is this context's.
        unsafe {
            sys::cuMemsetD32Async(ptr, word, (dst.capacity() / 4) as usize, stream.cu_stream())
        }
        .result()
        .map_err(|e| dev.fail("filling device memory", e))?;
        self.retain(dev, [dst.clone()], None)
    }

    pub(crate) fn copy(
        &self,
        dev: &CudaDevice,
        src: &Arc<Block>,
        src_offset: u64,
        dst: &Arc<Block>,
        dst_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        let stream = self.stream(dev)?;
        let (s, d) = (
            device_memory(src)?.ptr + src_offset,
            device_memory(dst)?.ptr + dst_offset,
        );
        self.bind(dev)?;
        // SAFETY: both ranges lie in their blocks (checked by the caller) and do not overlap.
        unsafe { result::memcpy_dtod_async(d, s, bytes as usize, stream.cu_stream()) }
            .map_err(|e| dev.fail("copying on the device", e))?;
        self.retain(dev, [src.clone(), dst.clone()], None)
    }

    /// Launch an op kernel: device pointers, then the parameter struct by value.
    // The arguments are one launch's parts, each used once; a struct would only rename them.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn launch<P: DeviceRepr>(
        &self,
        dev: &CudaDevice,
        function: &CudaFunction,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        pointers: &[u64],
        params: &P,
        held: &[&Arc<Block>],
    ) -> Result<()> {
        let stream = self.stream(dev)?;
        let mut launch = stream.launch_builder(function);
        for p in pointers {
            launch.arg(p);
        }
        launch.arg(params);
        // SAFETY: the argument list matches the kernel's signature (the ops' `.cu` files and the
        // #[repr(C)] structs of ops.rs are kept in step) and every pointer lies in a live block.
        unsafe {
            launch.launch(LaunchConfig {
                grid_dim: grid,
                block_dim: block,
                shared_mem_bytes: 0,
            })
        }
        .map_err(|e| dev.fail("launching an op kernel", e))?;
        self.retain(dev, held.iter().map(|&b| b.clone()), None)
    }

    /// Hold `buffers` until the work just issued on this queue (by a library such as cuBLAS)
    /// has run.
    pub(crate) fn retain_used(&self, dev: &CudaDevice, buffers: &[&Arc<Block>]) -> Result<()> {
        self.retain(dev, buffers.iter().map(|&b| b.clone()), None)
    }

    /// Launch a user kernel with checked arguments (an empty grid does nothing, as on webgpu).
    pub(crate) fn launch_user(
        &self,
        dev: &CudaDevice,
        program: &UserFunction,
        args: &[UserArg<'_>],
        grid: [u32; 3],
        block: [u32; 3],
    ) -> Result<()> {
        if grid.contains(&0) {
            return Ok(());
        }
        let stream = self.stream(dev)?;
        let mut pointers = Vec::with_capacity(args.len());
        let mut held = Vec::with_capacity(args.len());
        for arg in args {
            if let UserArg::Buffer {
                block,
                byte_offset,
                byte_len,
                ..
            } = arg
            {
                pointers.push((device_memory(block)?.ptr + byte_offset, *byte_len));
                held.push((*block).clone());
            }
        }
        let mut launch = stream.launch_builder(&program.function);
        let mut next_pointer = pointers.iter();
        for arg in args {
            match arg {
                UserArg::Buffer { .. } => {
                    let (p, bytes) = next_pointer
                        .next()
                        .ok_or_else(|| Error::Internal("pointer list out of step".into()))?;
                    launch.arg(p);
                    if program.lengths {
                        launch.arg(bytes);
                    }
                    &mut launch
                }
                UserArg::Scalar {
                    value: Scalar::F32(v),
                    ..
                } => launch.arg(v),
                UserArg::Scalar {
                    value: Scalar::I32(v),
                    ..
                } => launch.arg(v),
                UserArg::Scalar {
                    value: Scalar::U32(v),
                    ..
                } => launch.arg(v),
            };
        }
        let cfg = LaunchConfig {
            grid_dim: (grid[0], grid[1], grid[2]),
            block_dim: (block[0], block[1], block[2]),
            shared_mem_bytes: 0,
        };
        // SAFETY: the arguments were checked against the kernel's parameter list.
        unsafe { launch.launch(cfg) }.map_err(|e| dev.fail("launching the kernel", e))?;
        lock(&self.pending).functions.push(program.function.clone());
        self.retain(dev, held, None)
    }

    pub(crate) fn submit(&self, dev: &CudaDevice) -> Result<CudaFence> {
        if self.is_capturing() {
            return Err(crate::hal::capture_refusal("submitting"));
        }
        Ok(CudaFence {
            event: self.mark(dev, true)?,
        })
    }

    pub(crate) fn wait_for(&self, dev: &CudaDevice, fence: &CudaFence) -> Result<()> {
        self.stream(dev)?
            .wait(&fence.event)
            .map_err(|e| dev.fail("ordering a stream after an event", e))
    }

    /// Copy `bytes` bytes at `offset` of `src` to the host after the recorded work and lend
    /// them to `take` (from pinned staging memory where they fit, else from pageable memory).
    pub(crate) fn read<R>(
        &self,
        dev: &CudaDevice,
        src: &Arc<Block>,
        offset: u64,
        bytes: u64,
        take: impl FnOnce(Mapped<'_>) -> R,
    ) -> Result<R> {
        if self.is_capturing() {
            return Err(crate::hal::capture_refusal("reading"));
        }
        let stream = self.stream(dev)?;
        let ptr = device_memory(src)?.ptr + offset;
        let n = bytes as usize;
        self.bind(dev)?;
        let mut pinned = if n <= STAGING_MAX {
            Some(
                self.retirement
                    .take_staging(&self.ctx, n)
                    .map_err(|e| dev.fail("taking pinned staging memory", e))?,
            )
        } else {
            None
        };
        let mut out = if pinned.is_some() {
            Vec::new()
        } else {
            vec![0u8; n]
        };
        match pinned.as_mut() {
            // SAFETY: the pinned buffer is not read (or freed) before the copy has completed.
            Some(p) => unsafe {
                result::memcpy_dtoh_async(p.bytes_mut(n), ptr, stream.cu_stream())
            },
            // SAFETY: `out` is not read (or freed) before the copy has completed.
            None => unsafe { result::memcpy_dtoh_async(&mut out, ptr, stream.cu_stream()) },
        }
        .map_err(|e| dev.fail("copying from the device", e))?;
        let finished = self
            .retain(dev, [src.clone()], None)
            .and_then(|()| self.mark(dev, false))
            .and_then(|event| {
                event
                    .synchronize()
                    .map_err(|e| dev.fail("waiting for the device", e))
            });
        if let Err(e) = finished {
            // Never free the destination under a running copy.
            let _ = stream.synchronize();
            return Err(e);
        }
        let taken = match pinned {
            Some(p) => {
                let taken = take(Mapped::Host(p.bytes(n)));
                self.retirement.staging.give_back(p);
                taken
            }
            None => take(Mapped::Host(&out)),
        };
        dev.maintain();
        dev.check_healthy()?;
        Ok(taken)
    }
}

impl Drop for CudaBatch {
    fn drop(&mut self) {
        // Destroying a cuBLAS handle synchronises the device: not while a stream captures.
        if let Some(handle) = lock(&self.blas).take() {
            super::graph::release(super::graph::Release::Blas {
                handle,
                ctx: self.ctx.clone(),
            });
        }
        // Work already issued keeps running: keep its buffers until it has.
        let pending = std::mem::take(&mut *lock(&self.pending));
        if pending.commands == 0 {
            return;
        }
        let stream = lock(&self.stream).clone();
        if let Some(stream) = stream {
            if let Ok(event) = self.ctx.new_event(None) {
                if event.record(&stream).is_ok() {
                    self.retirement.push(Arc::new(event), pending);
                    return;
                }
            }
            // No event could be recorded: wait for the stream instead of freeing under it.
            let _ = stream.synchronize();
        }
    }
}

/// A CUDA event recorded at submit (with timing enabled).
#[derive(Clone)]
pub(crate) struct CudaFence {
    pub event: Arc<CudaEvent>,
}

impl CudaFence {
    pub(crate) fn is_signalled(&self) -> bool {
        self.event.try_is_complete().unwrap_or(true)
    }

    pub(crate) fn wait(&self, dev: &CudaDevice) -> Result<()> {
        self.event
            .synchronize()
            .map_err(|e| dev.fail("waiting for the device", e))?;
        dev.maintain();
        dev.check_healthy()
    }

    /// Device time from `start` to this fence.
    pub(crate) fn elapsed_since(&self, start: &CudaFence) -> Result<std::time::Duration> {
        let ms = start
            .event
            .elapsed_ms(&self.event)
            .map_err(|e| Error::Device(format!("timing between events: {}", driver_error(e))))?;
        Ok(std::time::Duration::from_secs_f64(
            f64::from(ms.max(0.0)) / 1e3,
        ))
    }
}
