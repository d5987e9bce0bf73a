//! The runtime: opened devices with their memory pool and tune cache, queues (batching,
//! ordering across queues, profiling of launches), graphs (captured work, replayed), fences, typed
//! buffers, tensors (shaped, strided views of buffers) and the profiler. It names only the hal and
//! base; the ops build on it, and the methods that need the ops live above it (`ops/<op>/`,
//! `api/`).

pub(crate) mod buffer;
pub(crate) mod checks;
pub(crate) mod device;
pub(crate) mod fence;
pub(crate) mod graph;
pub(crate) mod pool;
pub mod profile;
pub(crate) mod queue;
pub(crate) mod tensor;
pub(crate) mod tune_cache;
