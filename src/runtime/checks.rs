//! Checks that kernels make on the device, reported by the queue's next read (and by
//! `Queue::finish`). A kernel that finds a problem (an index outside its axis in gather's
//! `IndexMode::Error`) lowers a status word to the first offending position ("first finding
//! wins": `atomicMin` from "nothing found", `u32::MAX`); the next read on the queue by the
//! thread that recorded the launch, once the work has run, reads the status words of that
//! thread's launches before it and fails with the first finding (other threads' reads are
//! theirs). Kernels cannot raise errors, and waiting for each launch would serialize the
//! device, so this is where such a result stops being silent.
//!
//! Status words live in pages that the queue keeps: a word is taken for a launch and given
//! back once a read has reported it, and launches whose checks would say the same thing (the
//! same key) share the word while none of them has been reported, so work that is never read
//! (timed runs) takes no more words however long it runs. A capture takes its words from
//! pages of its own, which its graph keeps: each replay notes them for its thread's next
//! read, and a word that reported a finding is set back to "nothing found".

use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use crate::base::signal::lock;
use crate::hal::Block;
use crate::{Error, Result};

/// The status word's value while nothing was found.
pub(crate) const NOTHING_FOUND: u32 = u32::MAX;

/// Bytes from one status word to the next: webgpu binds storage at multiples of its offset
/// alignment, which is at most 256 bytes.
pub(crate) const STRIDE: u64 = 256;

/// Status words in a page.
const SLOTS: usize = 32;

/// The bytes of a page.
pub(crate) const PAGE_BYTES: u64 = SLOTS as u64 * STRIDE;

/// Turns the first offending position into the error's message.
pub(crate) type Describe = Arc<dyn Fn(u32) -> String + Send + Sync>;

/// One status word, at `slot` of `page`, and the message of its findings; launches with the
/// same `key` give the same message for the same position.
#[derive(Clone)]
pub(crate) struct Word {
    pub page: Arc<Block>,
    slot: usize,
    key: String,
    describe: Describe,
}

impl Word {
    /// The word's byte offset in its page.
    pub(crate) fn offset(&self) -> u64 {
        self.slot as u64 * STRIDE
    }

    /// The error of the word's value, if it holds a finding.
    pub(crate) fn finding(&self, value: u32) -> Option<Error> {
        (value != NOTHING_FOUND).then(|| Error::Invalid((self.describe)(value)))
    }

    /// Whether `other` is the same word.
    fn is(&self, other: &Word) -> bool {
        self.page.id() == other.page.id() && self.slot == other.slot
    }
}

/// Pages of status words filled with [`NOTHING_FOUND`], and which of their words are taken.
#[derive(Default)]
pub(crate) struct Pages(Vec<(Arc<Block>, u32)>);

impl Pages {
    /// A free word for `key`'s checks, from a new page (`alloc`, filled with
    /// [`NOTHING_FOUND`]) if every word is taken.
    pub(crate) fn take(
        &mut self,
        key: String,
        describe: Describe,
        alloc: impl FnOnce() -> Result<Arc<Block>>,
    ) -> Result<Word> {
        let free = self
            .0
            .iter()
            .position(|(_, used)| used.count_ones() < SLOTS as u32);
        let at = match free {
            Some(at) => at,
            None => {
                self.0.push((alloc()?, 0));
                self.0.len() - 1
            }
        };
        let (page, used) = &mut self.0[at];
        let slot = used.trailing_ones() as usize;
        *used |= 1 << slot;
        Ok(Word {
            page: page.clone(),
            slot,
            key,
            describe,
        })
    }

    /// Gives `word` back (it holds [`NOTHING_FOUND`]).
    fn give_back(&mut self, word: &Word) {
        if let Some((_, used)) = self.0.iter_mut().find(|(p, _)| p.id() == word.page.id()) {
            *used &= !(1 << word.slot);
        }
    }
}

/// A word that a read of `thread` reports; `owned`: the queue's, given back once reported
/// (a graph keeps its own).
#[derive(Clone)]
pub(crate) struct Pending {
    thread: ThreadId,
    pub word: Word,
    owned: bool,
}

/// The queue's pages and the words that no read has reported yet.
#[derive(Default)]
pub(crate) struct Checks(Mutex<State>);

#[derive(Default)]
struct State {
    pages: Pages,
    pending: Vec<Pending>,
}

impl Checks {
    /// The word for a launch of the calling thread that checks `key`: the one a pending
    /// launch with the same key already has, or a free one (`alloc` makes a page).
    pub(crate) fn word(
        &self,
        key: String,
        describe: Describe,
        alloc: impl FnOnce() -> Result<Arc<Block>>,
    ) -> Result<Word> {
        let thread = std::thread::current().id();
        let mut s = lock(&self.0);
        let shared = s
            .pending
            .iter()
            .find(|p| p.owned && p.thread == thread && p.word.key == key);
        if let Some(p) = shared {
            return Ok(p.word.clone());
        }
        let word = s.pages.take(key, describe, alloc)?;
        s.pending.push(Pending {
            thread,
            word: word.clone(),
            owned: true,
        });
        Ok(word)
    }

    /// Notes a replay's words (a graph's) for the calling thread's next read.
    pub(crate) fn replayed(&self, words: &[Word]) {
        let thread = std::thread::current().id();
        let mut s = lock(&self.0);
        for w in words {
            if !s.pending.iter().any(|p| p.thread == thread && p.word.is(w)) {
                s.pending.push(Pending {
                    thread,
                    word: w.clone(),
                    owned: false,
                });
            }
        }
    }

    /// The pending words of the calling thread, oldest first.
    pub(crate) fn mine(&self) -> Vec<Pending> {
        let me = std::thread::current().id();
        let s = lock(&self.0);
        s.pending
            .iter()
            .filter(|p| p.thread == me)
            .cloned()
            .collect()
    }

    /// Ends `reported` (read, and set back to [`NOTHING_FOUND`] where they held a finding):
    /// no longer pending, and the queue's words free again.
    pub(crate) fn reported(&self, reported: &[Pending]) {
        let mut s = lock(&self.0);
        for r in reported {
            s.pending
                .retain(|p| !(p.thread == r.thread && p.word.is(&r.word)));
            if r.owned {
                s.pages.give_back(&r.word);
            }
        }
    }
}
