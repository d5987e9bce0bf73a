//! Queues record writes, copies and kernel launches and submit them in batches.

use std::sync::Arc;

use crate::hal::timer::Clock;
use crate::hal::Block;
use crate::hal::{BackendDevice, BatchImpl, FenceImpl, Mapped, Recorder};
use crate::profile::{LaunchRecord, Profiler, ReadRecord};
use crate::runtime::checks::{Checks, Describe, Pending, Word, NOTHING_FOUND, PAGE_BYTES};
use crate::runtime::graph::Recording;
use crate::{Buffer, Device, Element, Error, Fence, Result};

/// An ordered stream of device work. Work is recorded and sent to the device in batches:
/// at [`submit`](Queue::submit), when a read needs it, or when a batch grows large.
///
/// Cloning gives another handle to the same queue.
#[derive(Clone)]
pub struct Queue {
    pub(crate) device: Device,
    pub(crate) shared: Arc<QueueShared>,
}

pub(crate) struct QueueShared {
    pub imp: BatchImpl,
    /// Process-unique id (the profiler's track per queue).
    pub id: u64,
    /// Records this queue's launches instead of the device's profiler (autotuning's timer).
    pub profiler: Option<Profiler>,
    /// Who may record now, and what the queue captures for a [`Graph`](crate::Graph).
    pub recording: Recording,
    /// Device-side checks of launches, reported by the next read (and by `finish`).
    pub checks: Checks,
}

impl QueueShared {
    pub(crate) fn new(backend: &BackendDevice, profiler: Option<Profiler>) -> Self {
        QueueShared {
            imp: BatchImpl::new(backend),
            id: crate::base::id::next_id(),
            profiler,
            recording: Recording::default(),
            checks: Checks::default(),
        }
    }
}

impl Recorder for QueueShared {
    /// While the queue captures, its captured work has not run: the fence of the work before
    /// the capture.
    fn flush(&self, dev: &BackendDevice) -> Result<FenceImpl> {
        if let Some(before) = self.recording.before_capture() {
            return Ok(before);
        }
        self.imp.submit(dev)
    }
}

impl Queue {
    /// The device this queue feeds.
    pub fn device(&self) -> &Device {
        &self.device
    }

    pub(crate) fn backend(&self) -> &BackendDevice {
        &self.device.shared.backend
    }

    /// The buffer is this device's, and the device is not lost.
    fn check_buffer<T: Element>(&self, buf: &Buffer<T>, what: &str) -> Result<()> {
        self.device.check_same(&buf.device, what)?;
        self.backend().check_healthy()
    }

    /// Record a write of `data` into `dst` (lengths must match).
    pub fn write<T: Element>(&self, dst: &Buffer<T>, data: &[T]) -> Result<()> {
        self.check_buffer(dst, "write destination")?;
        let _turn = self.turn()?;
        if data.len() != dst.len() {
            return Err(Error::shape(
                "write",
                format!(
                    "{} elements for a buffer view of {}: expected equal lengths",
                    data.len(),
                    dst.len()
                ),
            ));
        }
        if data.is_empty() {
            return Ok(());
        }
        self.order_after_other_queues(&[&dst.inner])?;
        self.shared.imp.write(
            self.backend(),
            &dst.inner,
            dst.byte_offset(),
            bytemuck::cast_slice(data),
        )
    }

    /// Record a fill of the whole of `block` with `word`, after the work recorded so far (a
    /// block this queue's unfinished work still uses, reused for its later work).
    pub(crate) fn fill(&self, block: &Arc<Block>, word: u32) -> Result<()> {
        let _turn = self.turn()?;
        self.shared.imp.fill(self.backend(), block, word)
    }

    /// Record a device-to-device copy of `src` into `dst` (lengths must match; the views may
    /// be in the same memory block but must not overlap).
    pub fn copy<T: Element>(&self, src: &Buffer<T>, dst: &Buffer<T>) -> Result<()> {
        self.check_buffer(src, "copy source")?;
        self.check_buffer(dst, "copy destination")?;
        let _turn = self.turn()?;
        if src.len() != dst.len() {
            return Err(Error::shape(
                "copy",
                format!(
                    "source has {} elements, destination {}: expected equal lengths",
                    src.len(),
                    dst.len()
                ),
            ));
        }
        let (s, d) = (src.byte_offset(), dst.byte_offset());
        let n = src.byte_len();
        if src.inner.id() == dst.inner.id() && s < d + n && d < s + n {
            return Err(Error::Invalid(format!(
                "copy between overlapping views (bytes {s}.. and \
                {d}.., {n} bytes each): expected disjoint ranges"
            )));
        }
        if n == 0 {
            return Ok(());
        }
        self.order_after_other_queues(&[&src.inner, &dst.inner])?;
        self.shared
            .imp
            .copy(self.backend(), &src.inner, s, &dst.inner, d, n)
    }

    /// Order this queue's next work after every other queue's recorded use of `buffers`
    /// (per-buffer hazard tracking, like wgpu's within one queue): the other queue's pending
    /// work is submitted and this queue waits for it (cuda: the stream waits on its event;
    /// webgpu runs submissions in order; cpu runs work as it is recorded, so there is nothing
    /// to do). An explicit [`wait_for`](Queue::wait_for) is cheaper where the user knows.
    /// While the queue captures, the blocks are noted for the replays, which order themselves.
    fn order_after_other_queues(&self, buffers: &[&Arc<Block>]) -> Result<()> {
        if matches!(self.shared.imp, BatchImpl::Cpu(_)) {
            return Ok(());
        }
        if self
            .shared
            .recording
            .captured(|c| c.note_blocks(buffers))
            .is_some()
        {
            return Ok(());
        }
        for b in buffers {
            if let Some(other) = crate::runtime::buffer::note_use(b, &self.shared) {
                let fence = other.flush(self.backend())?;
                self.shared.imp.wait_for(self.backend(), &fence)?;
            }
        }
        Ok(())
    }

    /// The profiler that records this queue's launches.
    pub(crate) fn profiler(&self) -> &Profiler {
        self.shared
            .profiler
            .as_ref()
            .unwrap_or(&self.device.shared.profiler)
    }

    /// Process-unique id of the queue (the track it gets in a profiler trace).
    pub fn id(&self) -> u64 {
        self.shared.id
    }

    /// Record one launch that reads or writes `blocks`: checked against a lost device,
    /// ordered after other queues' use of the blocks, and, while a profiler records, timed
    /// and described by `describe` (given the clock that timed it and the host start).
    /// While the queue captures, the launch is noted for the graph and not timed.
    /// (Trait objects: one copy of this path and of the backends' timing serves every caller.)
    pub(crate) fn record_launch(
        &self,
        blocks: &[&Arc<Block>],
        run: &mut dyn FnMut() -> Result<()>,
        describe: &dyn Fn(Clock, f64) -> LaunchRecord,
    ) -> Result<()> {
        self.backend().check_healthy()?;
        let _turn = self.turn()?;
        if self
            .shared
            .recording
            .captured(|c| c.note_launch(blocks, describe(Clock::None, 0.0)))
            .is_some()
        {
            return run();
        }
        self.order_after_other_queues(blocks)?;
        let profiler = self.profiler();
        if !profiler.is_enabled() {
            return run();
        }
        let host_start = profiler.now_us();
        let (timing, clock) = self
            .shared
            .imp
            .timed(self.backend(), profiler.epoch(), run)?;
        profiler.push(describe(clock, host_start), timing);
        Ok(())
    }

    /// Send everything recorded so far to the device. The fence signals when it has finished.
    pub fn submit(&self) -> Result<Fence> {
        self.backend().check_healthy()?;
        let _turn = self.turn()?;
        self.check_not_capturing("submitting")?;
        let imp = self.shared.imp.submit(self.backend())?;
        Ok(Fence {
            device: self.device.clone(),
            imp,
        })
    }

    /// Make work recorded on this queue from now on start only after `fence` has signalled.
    /// (`webgpu` has one hardware queue that runs submissions in order, and `cpu` runs work
    /// as it is recorded, so there this only checks that the fence is from the same device.)
    pub fn wait_for(&self, fence: &Fence) -> Result<()> {
        self.device.check_same(&fence.device, "fence")?;
        let _turn = self.turn()?;
        self.check_not_capturing("waiting for a fence")?;
        self.shared.imp.wait_for(self.backend(), &fence.imp)
    }

    /// Read `src` back to the host after all work recorded on this queue.
    pub async fn read<T: Element>(&self, src: &Buffer<T>) -> Result<Vec<T>> {
        self.read_mapped(src, |bytes| {
            let mut out = vec![T::zeroed(); src.len()];
            bytes.copy_to(bytemuck::cast_slice_mut(&mut out));
            out
        })
        .await
    }

    /// Read `bytes` bytes at `offset` of `block` (memory of this queue's device) after all
    /// work recorded on this queue, with one copy from where they lie (the mapped GPU
    /// buffer, or the CPU backend's memory): into `dst`, a JS view of exactly that many
    /// bytes, or (`None`) into a new JS `ArrayBuffer`, returned. Every typed array of the JS
    /// API is read through here; the future is boxed so that this path is compiled once,
    /// not into each caller.
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn read_js<'a>(
        &'a self,
        block: &'a Arc<Block>,
        offset: u64,
        bytes: u64,
        dst: Option<&'a js_sys::Uint8Array>,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Option<js_sys::ArrayBuffer>>> + 'a>,
    > {
        Box::pin(self.read_extent(block, offset, bytes, move |m| match dst {
            Some(d) => {
                m.copy_to_js(d);
                None
            }
            None => Some(m.to_array_buffer()),
        }))
    }

    /// Submit every queue's recorded work on `blocks`, and this queue's: what the device runs
    /// next comes after it (the page's own WebGPU submissions, for instance).
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn submit_uses_of(&self, blocks: &[&Arc<Block>]) -> Result<()> {
        self.order_after_other_queues(blocks)?;
        self.submit().map(drop)
    }

    /// Lend the bytes of `src`, once read, to `take` (see [`read_extent`](Queue::read_extent)).
    async fn read_mapped<T: Element, R>(
        &self,
        src: &Buffer<T>,
        take: impl FnOnce(Mapped<'_>) -> R,
    ) -> Result<R> {
        self.check_buffer(src, "read source")?;
        self.read_extent(&src.inner, src.byte_offset(), src.byte_len(), take)
            .await
    }

    /// Lend `bytes` bytes at `offset` of `block`, once read, to `take`; the profiler records
    /// the wait and the copy. No bytes lend an empty slice, without touching the device.
    async fn read_extent<R>(
        &self,
        block: &Arc<Block>,
        offset: u64,
        bytes: u64,
        take: impl FnOnce(Mapped<'_>) -> R,
    ) -> Result<R> {
        let (mut take, mut out) = (Some(take), None);
        self.read_lent(block, offset, bytes, &mut |m| {
            out = take.take().map(|f| f(m))
        })
        .await?;
        out.ok_or_else(|| Error::Internal("a read lent its bytes to no one".into()))
    }

    /// [`read_extent`](Queue::read_extent) through one `dyn` function: every read of every
    /// type, and of the checks' status words, shares one copy of the backends' read path
    /// (the wasm's size).
    async fn read_lent(
        &self,
        block: &Arc<Block>,
        offset: u64,
        bytes: u64,
        take: &mut dyn FnMut(Mapped<'_>),
    ) -> Result<()> {
        self.backend().check_healthy()?;
        // Natively the turn is held through the read, so that no capture begins between its
        // checks and its copy; a browser's one thread cannot interleave them.
        let turn = self.turn()?;
        self.check_not_capturing("reading")?;
        #[cfg(target_arch = "wasm32")]
        drop(turn);
        #[cfg(not(target_arch = "wasm32"))]
        let _turn = turn;
        if bytes == 0 {
            take(Mapped::Host(&[]));
            return Ok(());
        }
        self.order_after_other_queues(&[block])?;
        let profiler = self.profiler();
        let start = profiler.now_us();
        let mut copy_us = 0.0;
        self.read_now(block, offset, bytes, &mut |m| {
            let t0 = profiler.now_us();
            take(m);
            copy_us = profiler.now_us() - t0;
        })
        .await?;
        if profiler.is_enabled() {
            let wait_us = profiler.now_us() - start - copy_us;
            profiler.push_read(ReadRecord {
                queue: self.id(),
                bytes,
                host_start_us: start,
                wait_us,
                copy_us,
            });
        }
        self.report_checks().await
    }

    /// The backend's read of `bytes` at `offset` of `block`, after this queue's work.
    async fn read_now(
        &self,
        block: &Arc<Block>,
        offset: u64,
        bytes: u64,
        take: &mut dyn FnMut(Mapped<'_>),
    ) -> Result<()> {
        self.shared
            .imp
            .read(self.backend(), block, offset, bytes, take)
            .await
    }

    /// Make the launch recorded next check something on the device: a status word, holding
    /// "nothing found", for the kernel to lower to the first offending position; the next read
    /// on this queue by this thread (or `finish`) fails with `describe`'s message if it did.
    /// Launches with the same `key` give the same message for the same position: until a read
    /// reports them they share one word (the least finding of them all). In a capture the word
    /// is the graph's, and each replay's next read reports it.
    pub(crate) fn check_word(&self, key: String, describe: Describe) -> Result<crate::Tensor> {
        // Filled at once, outside any queue's work, so a capture's replays never refill it.
        let alloc = || {
            let init = crate::runtime::device::Init::Filled(NOTHING_FOUND);
            self.device.alloc(PAGE_BYTES, init, None)
        };
        let recording = &self.shared.recording;
        let word = match recording.captured(|_| ()) {
            Some(()) => recording
                .captured(|c| c.check_word(key, describe, alloc))
                .unwrap_or_else(|| {
                    Err(Error::Internal("a capture ended while it recorded".into()))
                }),
            None => self.shared.checks.word(key, describe, alloc),
        }?;
        let at = (word.offset() / 4) as usize;
        let status = Buffer::<u32>::from_inner(word.page, self.device.clone(), at, 1);
        crate::Tensor::from_buffer(&status, &[1])
    }

    /// Read the status words of this thread's launches recorded before (their work has run:
    /// a read of this queue waited for it) and fail with the first finding; the words that
    /// held one are set back to "nothing found".
    async fn report_checks(&self) -> Result<()> {
        let mine = self.shared.checks.mine();
        if mine.is_empty() {
            return Ok(());
        }
        let values = self.read_words(&mine).await?;
        let mut found = None;
        for (p, &value) in mine.iter().zip(&values) {
            if let Some(e) = p.word.finding(value) {
                let (page, offset) = (&p.word.page, p.word.offset());
                let nothing = NOTHING_FOUND.to_le_bytes();
                self.shared
                    .imp
                    .write(self.backend(), page, offset, &nothing)?;
                found = found.or(Some(e));
            }
        }
        self.shared.checks.reported(&mine);
        found.map_or(Ok(()), Err)
    }

    /// The values of `words`, with one read of each page they are on.
    async fn read_words(&self, words: &[Pending]) -> Result<Vec<u32>> {
        let mut values = vec![NOTHING_FOUND; words.len()];
        let mut pages: Vec<&Word> = Vec::new();
        for p in words {
            if !pages.iter().any(|w| w.page.id() == p.word.page.id()) {
                pages.push(&p.word);
            }
        }
        for page in pages {
            let on: Vec<usize> = (0..words.len())
                .filter(|&i| words[i].word.page.id() == page.page.id())
                .collect();
            let last = on
                .iter()
                .map(|&i| words[i].word.offset())
                .max()
                .unwrap_or(0);
            let mut bytes = vec![0u8; last as usize + 4];
            self.read_now(&page.page, 0, last + 4, &mut |m| m.copy_to(&mut bytes))
                .await?;
            for i in on {
                let at = words[i].word.offset() as usize;
                values[i] =
                    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
            }
        }
        Ok(values)
    }

    /// Blocking twin of [`read`](Queue::read) (not available in browsers).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read_blocking<T: Element>(&self, src: &Buffer<T>) -> Result<Vec<T>> {
        pollster::block_on(self.read(src))
    }

    /// Submit and wait until the device has finished everything recorded so far; like a
    /// read, fails with the first finding of this thread's checked launches (gather's
    /// `IndexMode::Error`).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn finish(&self) -> Result<()> {
        self.submit()?.wait_blocking()?;
        let _turn = self.turn()?;
        pollster::block_on(self.report_checks())
    }
}
