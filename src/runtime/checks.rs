//! Checks that kernels make on the device, reported by the queue's next read. A kernel that
//! finds a problem (an index outside its axis in gather's `IndexMode::Error`) writes the
//! first offending position into a status word; the next read on the queue by the thread
//! that recorded the launch, once the work has run, reads the status words of that thread's
//! launches before it and fails with the first finding (other threads' reads are theirs).
//! Kernels cannot raise errors, and waiting for each launch would serialize the device, so
//! this is where such a result stops being silent.

use std::sync::{Arc, Mutex};

use crate::base::signal::lock;
use crate::hal::Block;
use crate::Error;

/// The status word's value while nothing was found.
pub(crate) const NOTHING_FOUND: u32 = u32::MAX;

/// Turns the first offending position into the error's message.
pub(crate) type Describe = Box<dyn Fn(u32) -> String + Send + Sync>;

/// One launch's status word (a u32 at `offset` bytes of `block`) and its message.
pub(crate) struct Check {
    /// The thread that recorded the launch.
    pub thread: std::thread::ThreadId,
    pub block: Arc<Block>,
    pub offset: u64,
    pub describe: Describe,
}

/// The checks of a queue's launches that no read has reported yet.
#[derive(Default)]
pub(crate) struct Checks(Mutex<Vec<Check>>);

impl Checks {
    /// Adds a launch's check.
    pub(crate) fn push(&self, check: Check) {
        lock(&self.0).push(check);
    }

    /// Takes the pending checks of the calling thread's launches, oldest first.
    pub(crate) fn take(&self) -> Vec<Check> {
        let me = std::thread::current().id();
        let mut all = lock(&self.0);
        let (mine, others) = std::mem::take(&mut *all)
            .into_iter()
            .partition(|c| c.thread == me);
        *all = others;
        mine
    }
}

/// The error of a status word, if it holds a finding.
pub(crate) fn finding(check: &Check, word: u32) -> Option<Error> {
    (word != NOTHING_FOUND).then(|| Error::Invalid((check.describe)(word)))
}
