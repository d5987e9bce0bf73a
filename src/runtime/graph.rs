//! Capture and replay: [`Queue::capture`] keeps the work a closure records on a queue as a
//! [`Graph`], and [`Graph::replay`] sends all of it to the device again for the cost of one
//! launch. On cuda a graph is a CUDA graph (stream capture); on webgpu it is the captured
//! batch with its bind groups made once, encoded again at each replay. The cpu backend runs
//! each op as it is called and has nothing to capture.

use std::collections::HashSet;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::ThreadId;

use crate::base::signal::lock;
use crate::hal::timer::Clock;
use crate::hal::{Block, FenceImpl, GraphImpl};
use crate::profile::LaunchRecord;
use crate::runtime::checks::{Describe, Pages, Word};
use crate::{Error, Queue, Result};

/// What a queue has captured so far.
pub(crate) struct Capture {
    /// The thread that captures: the only one that records on the queue until it ends.
    thread: ThreadId,
    /// Marks the end of the work recorded before the capture began: what another queue
    /// waits for when it uses a block this queue used last.
    before: FenceImpl,
    /// The capture's own id, the last user of the blocks made inside for its work (see
    /// [`Recording::reuse_key`]): one freed inside goes only to later work of the capture,
    /// and its memory stays the graph's.
    key: u64,
    /// The blocks the captured work uses, each once (`seen`: their ids), that it did not
    /// make: whatever they held before matters to each replay, so the graph keeps them.
    blocks: Vec<Arc<Block>>,
    /// The blocks it made: each replay writes them before it reads them, so their memory
    /// may serve later captured work once they are freed; those alive at the end are kept.
    made: Vec<Weak<Block>>,
    seen: HashSet<u64>,
    launches: usize,
    bytes: u64,
    flops: u64,
    dtype: Option<String>,
    /// The status words of the captured checks (`runtime/checks.rs`), on pages of the
    /// capture's own, and those of the graphs it replays.
    pages: Pages,
    words: Vec<Word>,
}

impl Capture {
    /// A status word of the capture's own for a captured launch that checks `key`.
    pub(crate) fn check_word(
        &mut self,
        key: String,
        describe: Describe,
        alloc: impl FnOnce() -> Result<Arc<Block>>,
    ) -> Result<Word> {
        let word = self.pages.take(key, describe, alloc)?;
        self.words.push(word.clone());
        Ok(word)
    }

    /// Note one captured launch (as the profiler would describe it) on `blocks`.
    pub(crate) fn note_launch(&mut self, blocks: &[&Arc<Block>], record: LaunchRecord) {
        self.note_blocks(blocks);
        self.launches += 1;
        self.bytes += record.bytes;
        self.flops += record.flops;
        match &self.dtype {
            None => self.dtype = Some(record.dtype),
            Some(d) if *d != record.dtype => self.dtype = Some("mixed".into()),
            Some(_) => {}
        }
    }

    /// Note blocks the captured work reads or writes.
    pub(crate) fn note_blocks(&mut self, blocks: &[&Arc<Block>]) {
        for &b in blocks {
            if !self.seen.insert(b.id()) {
                continue;
            }
            match b.last_user_id() == self.key {
                true => self.made.push(Arc::downgrade(b)),
                false => self.blocks.push(b.clone()),
            }
        }
    }
}

/// Work captured on a queue by [`Queue::capture`], run again as a whole by
/// [`replay`](Graph::replay). A replay runs the same kernels on the same memory with the same
/// parameters: the tensors the capture returned hold each replay's results, and new inputs
/// go into the captured inputs' memory (`Queue::write`, or ops outside the graph) before the
/// replay. The graph keeps the memory it uses for as long as it lives.
pub struct Graph {
    queue: Queue,
    imp: GraphImpl,
    blocks: Vec<Arc<Block>>,
    launches: usize,
    bytes: u64,
    flops: u64,
    dtype: String,
    /// The status words of its checked launches, which each replay's next read reports.
    checks: Vec<Word>,
}

impl Graph {
    /// Record one run of the captured work on the queue it was captured on, after the work
    /// recorded there before (and after other queues' recorded use of its memory). While a
    /// profiler records, a replay is one launch named `graph`. The checks of its launches
    /// (gather's `IndexMode::Error`) are reported by this thread's next read of the queue.
    pub fn replay(&self) -> Result<()> {
        let q = &self.queue;
        let blocks: Vec<&Arc<Block>> = self.blocks.iter().collect();
        q.record_launch(
            &blocks,
            &mut || q.shared.imp.replay(q.backend(), &self.imp),
            &|clock, start| self.record(clock, start),
        )?;
        let words = &self.checks;
        if q.shared
            .recording
            .captured(|c| c.words.extend(words.iter().cloned()))
            .is_none()
        {
            q.shared.checks.replayed(words);
        }
        Ok(())
    }

    /// How many launches (ops' kernels, user kernels and replays of other graphs) the capture
    /// recorded.
    pub fn launches(&self) -> usize {
        self.launches
    }

    /// The queue the graph was captured on, which its replays run on.
    pub fn queue(&self) -> &Queue {
        &self.queue
    }

    /// The profiler's record of one replay.
    fn record(&self, clock: Clock, host_start_us: f64) -> LaunchRecord {
        let mut r = crate::profile::record(
            "graph".into(),
            Vec::new(),
            crate::DType::F32,
            self.bytes,
            self.flops,
            self.queue.id(),
            clock,
            host_start_us,
        );
        r.dtype = self.dtype.clone();
        r.variant = Some(format!("{} launches", self.launches));
        r
    }
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("queue", &self.queue.id())
            .field("launches", &self.launches)
            .field("blocks", &self.blocks.len())
            .finish()
    }
}

/// Who records on a queue: any number of threads at once or, while the queue captures, only
/// the capturing thread. Other threads wait until the capture ends, so none of their work
/// lands in the graph, and a capture begins only once the operations under way have ended.
#[derive(Default)]
pub(crate) struct Recording {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    capture: Option<Capture>,
    /// The threads of the operations recording now (outside a capture), one entry each.
    active: Vec<ThreadId>,
    /// The threads waiting on `changed`.
    waiting: usize,
}

thread_local! {
    /// The queues this thread captures on: (device id, queue id).
    static CAPTURING: std::cell::RefCell<Vec<(u64, u64)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// A thread's turn to record one operation on a queue.
pub(crate) struct Turn<'a> {
    recording: &'a Recording,
    /// Counted in `active` (false for the capturing thread).
    counted: bool,
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if self.counted {
            let me = std::thread::current().id();
            let mut s = self.recording.lock();
            if let Some(i) = s.active.iter().position(|&t| t == me) {
                s.active.swap_remove(i);
            }
            self.recording.notify(s);
        }
    }
}

impl Recording {
    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn wait<'a>(&self, mut guard: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        guard.waiting += 1;
        let mut guard = self.changed.wait(guard).unwrap_or_else(|e| e.into_inner());
        guard.waiting -= 1;
        guard
    }

    /// Wakes the threads waiting for a change of `state` (made under `guard`), if any: a
    /// wake-up is a system call even when no thread waits, and each operation's turn ends
    /// with one.
    fn notify(&self, guard: MutexGuard<'_, State>) {
        let waiting = guard.waiting > 0;
        drop(guard);
        if waiting {
            self.changed.notify_all();
        }
    }

    /// Wait until this thread may record, and hold the turn for one operation.
    pub(crate) fn turn(&self) -> Turn<'_> {
        let me = std::thread::current().id();
        let mut s = self.lock();
        loop {
            match &s.capture {
                Some(c) if c.thread == me => {
                    return Turn {
                        recording: self,
                        counted: false,
                    }
                }
                Some(_) => s = self.wait(s),
                None => {
                    s.active.push(me);
                    return Turn {
                        recording: self,
                        counted: true,
                    };
                }
            }
        }
    }

    /// `f` of the capture of this thread, if it captures on this queue.
    pub(crate) fn captured<R>(&self, f: impl FnOnce(&mut Capture) -> R) -> Option<R> {
        let me = std::thread::current().id();
        self.lock()
            .capture
            .as_mut()
            .filter(|c| c.thread == me)
            .map(f)
    }

    /// While the queue captures: the fence of the work before the capture.
    pub(crate) fn before_capture(&self) -> Option<FenceImpl> {
        self.lock().capture.as_ref().map(|c| c.before.clone())
    }

    /// The last user (see [`Pool::take`](crate::runtime::pool::Pool::take)) whose freed
    /// blocks work recorded now by this thread on the queue `queue` may reuse before their
    /// last use has run, and that a block made for it names: the queue, or while this thread
    /// captures on it, the capture; none while another thread captures. A `zeroed` block
    /// made inside a capture is zeroed once, at capture, not by the captured work: none.
    pub(crate) fn reuse_key(&self, queue: u64, zeroed: bool) -> Option<u64> {
        let me = std::thread::current().id();
        match &self.lock().capture {
            None => Some(queue),
            Some(c) if c.thread == me && !zeroed => Some(c.key),
            Some(_) => None,
        }
    }

    /// Begin capturing once no other operation records: `start` submits the work before and
    /// puts the backend queue in capture mode.
    fn begin(&self, start: impl FnOnce() -> Result<FenceImpl>) -> Result<()> {
        let me = std::thread::current().id();
        let mut s = self.lock();
        loop {
            match &s.capture {
                Some(c) if c.thread == me => {
                    return Err(Error::Invalid(
                        "a capture inside a capture \
                    of the same queue: end the first one, or capture on another queue"
                            .into(),
                    ))
                }
                Some(_) => s = self.wait(s),
                // Waiting for this thread's own operation (a read not yet awaited) would never end.
                None if s.active.contains(&me) => {
                    return Err(Error::Invalid(
                        "a capture begun while this thread has an operation \
                        under way on the queue (a read not yet awaited): finish it first"
                            .into(),
                    ))
                }
                None if !s.active.is_empty() => s = self.wait(s),
                None => break,
            }
        }
        let before = start()?;
        s.capture = Some(Capture {
            thread: me,
            before,
            key: crate::base::id::next_id(),
            blocks: Vec::new(),
            made: Vec::new(),
            seen: HashSet::new(),
            launches: 0,
            bytes: 0,
            flops: 0,
            dtype: None,
            pages: Pages::default(),
            words: Vec::new(),
        });
        Ok(())
    }

    /// End the capture; other threads may record again.
    fn end(&self) -> Option<Capture> {
        let mut s = self.lock();
        let capture = s.capture.take();
        self.notify(s);
        capture
    }
}

/// A capture in progress; dropping it before [`finish`](Ending::finish) (an error or a panic
/// in the recording closure) drops the captured work and leaves the queue as it was.
struct Ending<'a> {
    queue: &'a Queue,
    done: bool,
}

impl Ending<'_> {
    /// Stop capturing: the captured work and what it uses.
    fn finish(mut self, keep: bool) -> Result<Option<(GraphImpl, Capture)>> {
        self.done = true;
        end(self.queue, keep)
    }
}

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = end(self.queue, false);
        }
    }
}

/// Take the queue out of capture mode; the hal's graph (`keep`) with the capture's notes.
fn end(queue: &Queue, keep: bool) -> Result<Option<(GraphImpl, Capture)>> {
    let key = queue.capture_key();
    CAPTURING.with(|c| c.borrow_mut().retain(|&k| k != key));
    let imp = queue.shared.imp.end_capture(queue.backend(), keep);
    let capture = queue.shared.recording.end();
    Ok(imp?.zip(capture))
}

impl Queue {
    /// Capture the work `record` records on this queue instead of running it, and return it
    /// as a [`Graph`] with what `record` returned. Nothing runs until
    /// [`Graph::replay`]; the tensors made inside hold the results of each replay.
    ///
    /// Inside `record`, the queue records ops, user kernels, writes, copies and replays as
    /// usual, but cannot read, submit or wait for fences (the work has not run): those return
    /// `INVALID`, as does work on another queue of the same device from this thread (it would
    /// run at once, outside the graph; tensor methods record on the default queue, so capture
    /// that one). While it captures, other threads' work on this queue waits until the capture
    /// ends. What is not a recorded command happens once, at capture: memory made inside is
    /// zeroed (`Tensor::zeros`) then, not at each replay, so a zeroed tensor that the graph
    /// accumulates into keeps growing; zero it inside with a write instead. Memory the
    /// capture makes for its work and frees inside goes to later work of the capture only,
    /// then stays the graph's. Checked launches (gather in `IndexMode::Error`) check at every
    /// replay, and this thread's next read after a replay reports what it found, as after
    /// eager work. An error in
    /// `record` ends the capture and drops what it recorded; the queue stays usable. The cpu
    /// backend answers `UNSUPPORTED`: it runs each op as it is called, so there is no recorded work
    /// to keep.
    ///
    /// ```no_run
    /// # #[cfg(target_arch = "wasm32")] fn main() {}
    /// # #[cfg(not(target_arch = "wasm32"))]
    /// # fn main() -> unicompute::Result<()> {
    /// use unicompute::{BackendChoice, Buffer, Device, Tensor};
    /// let device = Device::open(BackendChoice::Auto)?;
    /// let input = Buffer::<f32>::zeros(&device, 1024)?;
    /// let x = Tensor::from_buffer(&input, &[1024])?;
    /// let (graph, y) = device.queue().capture(|_| x.relu()?.mul(&x))?;
    /// for step in 0..100 {
    ///     input.write(&vec![step as f32; 1024])?;
    ///     graph.replay()?;
    ///     let _values: Vec<f32> = y.to_vec_blocking()?;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn capture<R>(&self, record: impl FnOnce(&Queue) -> Result<R>) -> Result<(Graph, R)> {
        self.backend().check_healthy()?;
        self.backend().captures()?;
        self.shared.recording.begin(|| {
            let before = self.shared.imp.submit(self.backend())?;
            self.shared.imp.begin_capture(self.backend())?;
            Ok(before)
        })?;
        CAPTURING.with(|c| c.borrow_mut().push(self.capture_key()));
        let ending = Ending {
            queue: self,
            done: false,
        };
        let value = record(self);
        let ended = ending.finish(value.is_ok());
        let value = value?;
        let (imp, capture) =
            ended?.ok_or_else(|| Error::Internal("a capture ended without its graph".into()))?;
        let made = capture.made.iter().filter_map(Weak::upgrade);
        let blocks = capture.blocks.into_iter().chain(made).collect();
        let dtype = capture.dtype.unwrap_or_else(|| "-".into());
        Ok((
            Graph {
                queue: self.clone(),
                imp,
                blocks,
                launches: capture.launches,
                bytes: capture.bytes,
                flops: capture.flops,
                dtype,
                checks: capture.words,
            },
            value,
        ))
    }

    /// What [`CAPTURING`] holds for this queue.
    fn capture_key(&self) -> (u64, u64) {
        (self.device.shared.id, self.id())
    }

    /// Wait until this thread may record on this queue, and hold the turn for one operation.
    /// Refused while this thread captures another queue of the same device: the work would
    /// run at once, outside the graph, on memory the graph has not written yet. (Autotuning's
    /// timing queues, which work on their own memory, are exempt.)
    pub(crate) fn turn(&self) -> Result<Turn<'_>> {
        let (device, queue) = self.capture_key();
        let own_timing = self.shared.profiler.is_some();
        let other = CAPTURING.with(|c| {
            c.borrow()
                .iter()
                .find(|&&(d, q)| d == device && q != queue)
                .map(|&(_, q)| q)
        });
        match other {
            Some(q) if !own_timing => Err(Error::Invalid(format!(
                "work on queue {queue} while this thread captures queue {q} of the same device: it \
                    would run now, outside the graph; record it on the capturing queue (tensor \
                    methods record on the device's default queue, `device.queue()`)"
            ))),
            _ => Ok(self.shared.recording.turn()),
        }
    }

    /// The error of an operation a capture cannot hold, if this thread captures on this queue.
    pub(crate) fn check_not_capturing(&self, what: &str) -> Result<()> {
        match self.shared.recording.captured(|_| ()) {
            Some(()) => Err(Error::Invalid(format!(
                "{what} while the queue captures work for \
                replay: the captured work has not run; end the capture (return from the closure \
                given to capture) first"
            ))),
            None => Ok(()),
        }
    }
}
