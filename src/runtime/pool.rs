//! Caching allocator: device memory is kept in size classes and reused instead of freed.
//! Past the cache limit, the blocks freed longest ago go back to the backend first.
//!
//! A block comes back when its last view is dropped, possibly before the work recorded on
//! it has run (that work holds the memory meanwhile). It is then handed only to the queue
//! that recorded its last use, as on one in-order stream its later work runs after that
//! work (other queues ordered after it on their first use, through the block's last user);
//! once nothing holds it any more, to anyone. A block made inside a capture for its work goes
//! likewise to later work of the same capture only, then stays the graph's. So a queue's
//! peak, or a graph's memory, is its live set, not everything its unfinished work touched.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use crate::base::signal::lock;
use crate::hal::Memory;

/// Memory usage of one device, as seen by its pool.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryStats {
    /// Bytes in blocks currently handed out (rounded up to their size class). A block freed
    /// while queued work still uses it counts as cached, not live: that work's queue may
    /// reuse it at once.
    pub bytes_live: u64,
    /// Bytes in freed blocks kept for reuse (some perhaps still used by queued work).
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

/// A freed block: its place in the order of frees, its memory, and the id of the queue (or
/// capture) that recorded its last use.
struct Cached {
    stamp: u64,
    mem: Arc<Memory>,
    user: Option<u64>,
}

impl Cached {
    /// Whether work recorded under the last user `key` (a queue, or a capture) may have the
    /// block now: no recorded work holds its memory any more, or `key` recorded the last use
    /// (and records its later work after it).
    fn ready_for(&self, key: Option<u64>) -> bool {
        Arc::strong_count(&self.mem) == 1 || key.is_some() && self.user == key
    }
}

struct PoolState {
    /// Cached blocks of each class in the order they were freed in, oldest first.
    free: HashMap<u64, VecDeque<Cached>>,
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

    /// Take a cached block of exactly `class` bytes for work recorded under the last user
    /// `key` (a queue's id, or a capture's; `None`: work of no queue in particular), if one
    /// is free for it: the last one freed. Returns its memory and whether recorded work (of
    /// `key`) may still use it.
    pub fn take(&self, class: u64, key: Option<u64>) -> Option<(Arc<Memory>, bool)> {
        let mut st = lock(&self.state);
        let blocks = st.free.get_mut(&class)?;
        let at = blocks.iter().rposition(|c| c.ready_for(key))?;
        let cached = blocks.remove(at)?;
        st.stats.pool_hits += 1;
        st.stats.bytes_cached -= class;
        st.mark_live(class);
        // Only this pool and queued work hold the memory, and the work only lets go of it.
        let pending = Arc::strong_count(&cached.mem) > 1;
        Some((cached.mem, pending))
    }

    /// Record that a fresh block of `class` bytes came from the backend.
    pub fn note_allocation(&self, class: u64) {
        let mut st = lock(&self.state);
        st.stats.allocations += 1;
        st.mark_live(class);
    }

    /// Return a block last used by `user` (queued work may still hold its memory). It is kept
    /// for reuse if it fits under the cache limit, after letting go of the blocks cached
    /// longest ago as needed: a block just freed is the likeliest to be asked for again (a
    /// loop's next step). The backend frees memory let go of once no queued work holds it.
    pub fn release(&self, class: u64, mem: Arc<Memory>, user: Option<u64>) {
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
        st.free
            .entry(class)
            .or_default()
            .push_back(Cached { stamp, mem, user });
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
    fn evict_oldest(&mut self) -> Option<Arc<Memory>> {
        let class = *self
            .free
            .iter()
            .filter_map(|(class, blocks)| Some((blocks.front()?.stamp, class)))
            .min()?
            .1;
        let cached = self.free.get_mut(&class)?.pop_front()?;
        self.stats.bytes_cached -= class;
        Some(cached.mem)
    }

    fn mark_live(&mut self, class: u64) {
        self.stats.bytes_live += class;
        self.stats.peak_bytes_live = self.stats.peak_bytes_live.max(self.stats.bytes_live);
    }
}

impl crate::hal::Recycle for Pool {
    fn recycle(&self, class: u64, mem: Arc<Memory>, user: Option<u64>) {
        self.release(class, mem, user);
    }
}

/// The owner of memory the library wraps but does not own (a page's `GPUBuffer`): on drop
/// the memory is let go, neither pooled nor destroyed.
#[cfg(target_arch = "wasm32")]
pub(crate) struct Borrowed;

#[cfg(target_arch = "wasm32")]
impl crate::hal::Recycle for Borrowed {
    fn recycle(&self, _class: u64, mem: Arc<Memory>, _user: Option<u64>) {
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
