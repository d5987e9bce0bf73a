//! Data parallelism for the CPU kernels: rayon's parallel iterators, or, in the one-thread
//! wasm build (no `threads` feature: a browser gives it no threads), the same calls on std's
//! sequential iterators, so that build carries no thread pool (a sixth of its size).

#[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
pub(crate) use rayon::{current_num_threads, prelude::*};

#[cfg(all(target_arch = "wasm32", not(feature = "threads")))]
pub(crate) use sequential::*;

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
