//! Data parallelism for the CPU kernels: rayon's parallel iterators, or, in the one-thread
//! wasm build (no `threads` feature: a browser gives it no threads), the same calls on std's
//! sequential iterators, so that build carries no thread pool (a sixth of its size).

#[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
pub(crate) use rayon::{current_num_threads, prelude::*};

#[cfg(all(target_arch = "wasm32", not(feature = "threads")))]
pub(crate) use sequential::*;

/// Calls `f` with each `size`-element chunk of `data` and its index, in the pool; a single
/// chunk runs on the calling thread, since handing one task to the pool only adds a wake-up
/// and a wait (several microseconds: most of a small kernel's time).
pub(crate) fn chunks_mut<T: Send>(
    data: &mut [T],
    size: usize,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) {
    if data.len() <= size {
        if !data.is_empty() {
            f(0, data);
        }
        return;
    }
    data.par_chunks_mut(size)
        .enumerate()
        .for_each(|(i, chunk)| f(i, chunk));
}

/// Calls `f` with each task index below `tasks`, in the pool; a single task runs on the
/// calling thread (see [`chunks_mut`]).
pub(crate) fn tasks(tasks: usize, f: impl Fn(usize) + Sync + Send) {
    if tasks == 1 {
        return f(0);
    }
    (0..tasks).into_par_iter().for_each(f);
}

/// Runs `f` on a thread of the pool (on the calling thread if it is one), so that the
/// parallel loops inside it split among the pool's threads directly: from another thread,
/// each loop hands its work to the pool and sleeps until it is done, a wake-up of the pool
/// and of the caller per loop. Costs one such hand-over itself. The pool's other threads stay
/// awake until `f` returns (see [`stay_awake`]).
#[cfg(not(target_arch = "wasm32"))]
pub(crate) fn on_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let done = std::sync::atomic::AtomicBool::new(false);
    let done = &done;
    rayon::scope(|s| {
        let host = rayon::current_thread_index();
        for _ in 1..current_num_threads() {
            s.spawn(move |_| stay_awake(done, host));
        }
        let _finished = Finished(done);
        f()
    })
}

/// Sets its flag when dropped: when the work it guards returns or panics.
#[cfg(not(target_arch = "wasm32"))]
struct Finished<'a>(&'a std::sync::atomic::AtomicBool);

#[cfg(not(target_arch = "wasm32"))]
impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// Keeps a thread of the pool taking the pool's work until `done`, where rayon would put it
/// to sleep after a few idle microseconds: waking it again costs the next parallel loop a
/// futex call and a reschedule (13% of MobileNetV2's run went to sleeping and waking). On the
/// host thread (`host`, which ran out of its own work and took this task) it returns at
/// once, since `done` waits on that thread's own work.
#[cfg(not(target_arch = "wasm32"))]
fn stay_awake(done: &std::sync::atomic::AtomicBool, host: Option<usize>) {
    if rayon::current_thread_index() == host {
        return;
    }
    while !done.load(std::sync::atomic::Ordering::Acquire) {
        if rayon::yield_now() != Some(rayon::Yield::Executed) {
            std::hint::spin_loop();
        }
    }
}

/// rayon's entry points the kernels use, on sequential iterators.
#[cfg(all(target_arch = "wasm32", not(feature = "threads")))]
mod sequential {
    /// One thread: the kernels' splits make one task.
    pub(crate) fn current_num_threads() -> usize {
        1
    }

    /// `par_chunks`, as `chunks`.
    pub(crate) trait ParallelSlice<T> {
        fn par_chunks(&self, size: usize) -> std::slice::Chunks<'_, T>;
    }

    impl<T> ParallelSlice<T> for [T] {
        fn par_chunks(&self, size: usize) -> std::slice::Chunks<'_, T> {
            self.chunks(size)
        }
    }

    /// `par_chunks_mut` and `par_iter_mut`, as `chunks_mut` and `iter_mut`.
    pub(crate) trait ParallelSliceMut<T> {
        fn par_chunks_mut(&mut self, size: usize) -> std::slice::ChunksMut<'_, T>;
        fn par_iter_mut(&mut self) -> std::slice::IterMut<'_, T>;
    }

    impl<T> ParallelSliceMut<T> for [T] {
        fn par_chunks_mut(&mut self, size: usize) -> std::slice::ChunksMut<'_, T> {
            self.chunks_mut(size)
        }

        fn par_iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
            self.iter_mut()
        }
    }

    /// `into_par_iter`, as `into_iter`.
    pub(crate) trait IntoParallelIterator: IntoIterator + Sized {
        fn into_par_iter(self) -> Self::IntoIter {
            self.into_iter()
        }
    }

    impl<I: IntoIterator> IntoParallelIterator for I {}

    /// `for_each_init`: one state for the whole (sequential) run.
    pub(crate) trait ForEachInit: Iterator + Sized {
        fn for_each_init<S>(self, init: impl Fn() -> S, f: impl Fn(&mut S, Self::Item)) {
            let mut state = init();
            for item in self {
                f(&mut state, item);
            }
        }
    }

    impl<I: Iterator> ForEachInit for I {}
}
