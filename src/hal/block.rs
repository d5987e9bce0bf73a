//! One block of device memory as the backends see it: the memory, the bytes asked for, its
//! size class and an id. It goes back to its owner (the runtime's pool) when the last
//! reference goes, with the queue that recorded its last use. Queues hold its memory for
//! every recorded use until the device has finished it (see [`Held`]), so the memory is
//! never freed under running work, while the block itself may go back before that work has
//! run: later work of that queue, which runs after it, may reuse the memory at once.

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
    /// Take back `mem` of size class `class`, last used by the recorder (or capture) of id
    /// `user`: recorded work may still hold the memory (then more than one reference to it
    /// exists) until it has run.
    fn recycle(&self, class: u64, mem: Arc<Memory>, user: Option<u64>);
}

/// The last recorder of a use of a block: its id and a handle.
pub(crate) type LastUser = Option<(u64, Weak<dyn Recorder>)>;

/// What recorded work (or a graph of captured work) holds of a block until the device has
/// run it: its memory. The block may go back to its owner meanwhile; its memory is then
/// handed only to later work recorded after that work (see [`Recycle`]).
#[derive(Clone)]
pub(crate) struct Held {
    _memory: Arc<Memory>,
}

impl Held {
    /// What work recorded now holds of `block`.
    pub(crate) fn of(block: &Block) -> Held {
        Held {
            _memory: block.mem.clone(),
        }
    }
}

/// One block of backend memory.
pub(crate) struct Block {
    mem: Arc<Memory>,
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
    /// `user` is the recorder the block is made for, whose recorded work may still use the
    /// memory (a block reused before that work has run): other recorders order their work
    /// after its work.
    pub(crate) fn new(
        mem: Arc<Memory>,
        class: u64,
        bytes: u64,
        owner: Arc<dyn Recycle>,
        user: LastUser,
    ) -> Self {
        let user_id = user.as_ref().map_or(0, |(id, _)| *id);
        Block {
            mem,
            class,
            bytes,
            owner,
            id: next_id(),
            last_user: Mutex::new(user),
            last_user_id: AtomicU64::new(user_id),
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

    /// The id of the recorder that recorded its last use (or that it was made for); 0: none.
    pub(crate) fn last_user_id(&self) -> u64 {
        self.last_user_id.load(Ordering::Acquire)
    }

    /// Bytes the block was allocated for (views end at or before this).
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The backend memory.
    pub(crate) fn memory(&self) -> &Memory {
        &self.mem
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
        let user = Some(*self.last_user_id.get_mut()).filter(|&id| id != 0);
        // The block's own reference goes right after: the pool counts holders when it hands
        // the memory out again, not now.
        self.owner.recycle(self.class, self.mem.clone(), user);
    }
}
