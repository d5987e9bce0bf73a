//! One block of device memory as the backends see it: the memory, the bytes asked for, its
//! size class and an id. It goes back to its owner (the runtime's pool) when the last
//! reference goes; queues hold a reference for every recorded use until the device has
//! finished it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use super::{BackendDevice, FenceImpl, Memory};
use crate::base::id::next_id;
use crate::base::signal::lock;
use crate::Result;

/// `Send + Sync` natively; nothing in wasm, where wgpu's browser objects are neither.
#[cfg(not(target_arch = "wasm32"))]
pub(crate) trait Shared: Send + Sync {}
#[cfg(not(target_arch = "wasm32"))]
impl<T: Send + Sync + ?Sized> Shared for T {}
/// `Send + Sync` natively; nothing in wasm, where wgpu's browser objects are neither.
#[cfg(target_arch = "wasm32")]
pub(crate) trait Shared {}
#[cfg(target_arch = "wasm32")]
impl<T: ?Sized> Shared for T {}

/// Whatever records uses of blocks (the runtime's queues), as ordering across them needs it.
pub(crate) trait Recorder: Shared {
    /// Submit everything recorded so far; the fence signals when the device has finished it.
    fn flush(&self, dev: &BackendDevice) -> Result<FenceImpl>;
}

/// Where a block's memory goes when the block is dropped (the runtime's pool).
pub(crate) trait Recycle: Shared {
    /// Take back `mem` of size class `class`.
    fn recycle(&self, class: u64, mem: Memory);
}

/// The last recorder of a use of a block: its id and a handle.
type LastUser = Option<(u64, Weak<dyn Recorder>)>;

/// One block of backend memory.
pub(crate) struct Block {
    mem: Option<Memory>,
    class: u64,
    /// Bytes asked for; no view reaches past them (the rest of the class is padding).
    bytes: u64,
    owner: Arc<dyn Recycle>,
    id: u64,
    last_user: Mutex<LastUser>,
    /// The id in `last_user` (0: none), read without the lock: a queue that records use
    /// after use of the same block (a graph's replay notes each of its blocks) skips the lock.
    last_user_id: AtomicU64,
}

impl Block {
    /// A block of `bytes` in memory `mem` of size class `class`, returned to `owner` on drop.
    pub(crate) fn new(mem: Memory, class: u64, bytes: u64, owner: Arc<dyn Recycle>) -> Self {
        Block {
            mem: Some(mem),
            class,
            bytes,
            owner,
            id: next_id(),
            last_user: Mutex::new(None),
            last_user_id: AtomicU64::new(0),
        }
    }

    /// Record the recorder `id` as the last user of the block, its handle made by `handle`
    /// only when the user changes; returns the previous user if it was another.
    pub(crate) fn swap_user(
        &self,
        id: u64,
        handle: impl FnOnce() -> Weak<dyn Recorder>,
    ) -> LastUser {
        if self.last_user_id.load(Ordering::Acquire) == id {
            return None;
        }
        let mut last = lock(&self.last_user);
        self.last_user_id.store(id, Ordering::Release);
        last.replace((id, handle()))
            .filter(|(previous, _)| *previous != id)
    }

    /// Bytes the block was allocated for (views end at or before this).
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The backend memory.
    pub(crate) fn memory(&self) -> &Memory {
        self.mem.as_ref().expect("memory is present until drop")
    }

    /// Capacity in bytes (the size class).
    pub(crate) fn capacity(&self) -> u64 {
        self.class
    }

    /// Process-unique id, used to detect aliasing.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        if let Some(mem) = self.mem.take() {
            self.owner.recycle(self.class, mem);
        }
    }
}
