//! Caching allocator: device memory is kept in size classes and reused instead of freed.
//! Past the cache limit, the blocks freed longest ago go back to the backend first.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use crate::base::signal::lock;
use crate::hal::Memory;

/// Memory usage of one device, as seen by its pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Bytes in blocks currently handed out (rounded up to their size class).
    pub bytes_live: u64,
    /// Bytes in freed blocks kept for reuse.
    pub bytes_cached: u64,
    /// Blocks allocated from the backend so far.
    pub allocations: u64,
    /// Requests served from the cache instead of the backend.
    pub pool_hits: u64,
    /// Highest `bytes_live` seen.
    pub peak_bytes_live: u64,
}

/// Smallest block the pool hands out.
const MIN_BLOCK: u64 = 256;

/// Round a request up to its size class: powers of two split into quarter steps
/// (256, 320, 384, 448, 512, 640, ...), so no block wastes more than 25 %.
pub(crate) fn size_class(bytes: u64) -> u64 {
    if bytes <= MIN_BLOCK {
        return MIN_BLOCK;
    }
    let pow = 63 - (bytes - 1).leading_zeros(); // 2^pow < bytes <= 2^(pow+1)
    let step = (1u64 << pow) / 4;
    bytes.div_ceil(step) * step
}

/// The pool of one device.
pub(crate) struct Pool {
    state: Mutex<PoolState>,
    cache_limit: u64,
}

struct PoolState {
    /// Cached blocks of each class with the order they were freed in, oldest first.
    free: HashMap<u64, VecDeque<(u64, Memory)>>,
    /// The next block's place in that order.
    next_stamp: u64,
    stats: MemoryStats,
}

impl Pool {
    /// A pool that keeps at most `cache_limit` bytes of freed blocks.
    pub fn new(cache_limit: u64) -> Self {
        Pool {
            state: Mutex::new(PoolState {
                free: HashMap::new(),
                next_stamp: 0,
                stats: MemoryStats::default(),
            }),
            cache_limit,
        }
    }

    /// Take a cached block of exactly `class` bytes, if one is free (the last one freed).
    pub fn take(&self, class: u64) -> Option<Memory> {
        let mut st = lock(&self.state);
        let (_, mem) = st.free.get_mut(&class)?.pop_back()?;
        st.stats.pool_hits += 1;
        st.stats.bytes_cached -= class;
        st.mark_live(class);
        Some(mem)
    }

    /// Record that a fresh block of `class` bytes came from the backend.
    pub fn note_allocation(&self, class: u64) {
        let mut st = lock(&self.state);
        st.stats.allocations += 1;
        st.mark_live(class);
    }

    /// Return a block whose every queued use has finished. It is kept for reuse if it fits
    /// under the cache limit, after freeing the blocks cached longest ago as needed: a block
    /// just freed is the likeliest to be asked for again (a loop's next step).
    pub fn release(&self, class: u64, mem: Memory) {
        let mut evicted = Vec::new();
        let mut st = lock(&self.state);
        st.stats.bytes_live -= class;
        if class > self.cache_limit {
            return; // `mem` drops here and the backend frees it.
        }
        while st.stats.bytes_cached + class > self.cache_limit {
            match st.evict_oldest() {
                Some(mem) => evicted.push(mem),
                None => break,
            }
        }
        st.stats.bytes_cached += class;
        let stamp = st.next_stamp;
        st.next_stamp += 1;
        st.free.entry(class).or_default().push_back((stamp, mem));
        drop(st);
        // The backend frees the evicted blocks here, outside the lock.
        drop(evicted);
    }

    /// Free every cached block.
    pub fn trim(&self) {
        let mut st = lock(&self.state);
        st.free.clear();
        st.stats.bytes_cached = 0;
    }

    /// Current statistics.
    pub fn stats(&self) -> MemoryStats {
        lock(&self.state).stats
    }
}

impl PoolState {
    /// Remove the block cached longest ago, if any.
    fn evict_oldest(&mut self) -> Option<Memory> {
        let class = *self
            .free
            .iter()
            .filter_map(|(class, blocks)| Some((blocks.front()?.0, class)))
            .min()?
            .1;
        let (_, mem) = self.free.get_mut(&class)?.pop_front()?;
        self.stats.bytes_cached -= class;
        Some(mem)
    }

    fn mark_live(&mut self, class: u64) {
        self.stats.bytes_live += class;
        self.stats.peak_bytes_live = self.stats.peak_bytes_live.max(self.stats.bytes_live);
    }
}

impl crate::hal::Recycle for Pool {
    fn recycle(&self, class: u64, mem: Memory) {
        self.release(class, mem);
    }
}

/// The owner of memory the library wraps but does not own (a page's `GPUBuffer`): on drop
/// the memory is let go, neither pooled nor destroyed.
#[cfg(target_arch = "wasm32")]
pub(crate) struct Borrowed;

#[cfg(target_arch = "wasm32")]
impl crate::hal::Recycle for Borrowed {
    fn recycle(&self, _class: u64, mem: Memory) {
        drop(mem);
    }
}

#[cfg(test)]
mod tests {
    use super::size_class;

    #[test]
    fn size_classes_waste_at_most_a_quarter() {
        assert_eq!(size_class(1), 256);
        assert_eq!(size_class(257), 320);
        assert_eq!(size_class(1024), 1024);
        assert_eq!(size_class(1025), 1280);
        for b in [300u64, 5000, 123_457, 10_000_001] {
            let c = size_class(b);
            assert!(c >= b && (c as f64) <= b as f64 * 1.25 + 64.0, "{b} -> {c}");
        }
    }
}
