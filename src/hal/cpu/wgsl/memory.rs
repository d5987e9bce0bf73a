//! Where a WGSL kernel's pointers point on the CPU: the bound buffers (shared by the
//! workgroups running in parallel: read-write ones as atomic words), the workgroup's own
//! memory, and each invocation's private and function variables. Every access is clamped
//! into its memory, as WebGPU's robust buffer access allows: never outside it.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

use naga::AtomicFunction;

use super::lanes::{Kind, Lanes};

/// The words of one bound buffer.
pub(super) enum Words<'a> {
    /// Storage read or uniform.
    Read(&'a [u32]),
    /// Storage read_write: any workgroup may write any word, so every access is atomic.
    Write(&'a [AtomicU32]),
}

impl Words<'_> {
    pub fn len(&self) -> usize {
        match self {
            Words::Read(w) => w.len(),
            Words::Write(w) => w.len(),
        }
    }

    fn get(&self, i: usize) -> u32 {
        match self {
            Words::Read(w) => w[i],
            Words::Write(w) => w[i].load(Relaxed),
        }
    }
}

/// Which memory a pointer points into.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Space {
    /// The `n`th bound buffer of the launch.
    Binding(usize),
    /// The workgroup variable `n` (shared by the workgroup's invocations).
    Workgroup(usize),
    /// The private variable `n` (one copy per invocation).
    Private(usize),
    /// The function variable `n` of the calls in progress, counted from the outermost call's
    /// first (one copy per invocation).
    Local(usize),
}

/// A pointer per invocation: a memory, and a word offset into it per lane (for per-invocation
/// memories, into the lane's own copy).
#[derive(Clone, Debug)]
pub(super) struct Ptr {
    pub space: Space,
    pub offsets: Vec<u32>,
    /// Whether every lane points to the start of its own copy of a whole variable (every
    /// offset 0 for per-invocation memories).
    pub whole: bool,
}

impl Drop for Ptr {
    fn drop(&mut self) {
        super::lanes::spare(std::mem::take(&mut self.offsets));
    }
}

/// Memory with one copy per invocation: `width` words for each lane.
pub(super) struct PerLane {
    pub width: usize,
    pub words: Vec<u32>,
}

impl PerLane {
    pub fn new(lanes: usize, width: usize) -> PerLane {
        PerLane {
            width,
            words: vec![0; lanes * width],
        }
    }

    /// Index of word `offset` of lane `l`, clamped into the lane's copy.
    fn at(&self, l: usize, offset: u32) -> usize {
        l * self.width + (offset as usize).min(self.width.saturating_sub(1))
    }
}

/// The memories one invocation group sees.
pub(super) struct Memories<'a, 'b> {
    pub bound: &'b [(naga::Handle<naga::GlobalVariable>, Words<'a>)],
    pub workgroup: &'b mut [Vec<u32>],
    pub private: &'b mut [PerLane],
    pub locals: &'b mut [PerLane],
}

impl Memories<'_, '_> {
    /// Words of `space` (of each lane's copy, for per-lane memories).
    pub fn len(&self, space: Space) -> usize {
        match space {
            Space::Binding(b) => self.bound[b].1.len(),
            Space::Workgroup(v) => self.workgroup[v].len(),
            Space::Private(v) => self.private[v].width,
            Space::Local(v) => self.locals[v].width,
        }
    }

    /// `width` words at `ptr` for every lane.
    pub fn load(&self, ptr: &Ptr, width: usize) -> Lanes {
        // The commonest cases: a scalar from a buffer or from workgroup memory (a tile's
        // element), each offset clamped into it, straight into the lanes.
        let words = match (ptr.space, width) {
            (Space::Binding(b), 1) => match &self.bound[b].1 {
                Words::Read(w) => Some(scalars(&ptr.offsets, w.len(), |i| w[i])),
                Words::Write(w) => Some(scalars(&ptr.offsets, w.len(), |i| w[i].load(Relaxed))),
            },
            (Space::Workgroup(v), 1) => Some(scalars(&ptr.offsets, self.workgroup[v].len(), |i| {
                self.workgroup[v][i]
            })),
            _ => None,
        };
        if let Some(words) = words {
            return Lanes { width: 1, words };
        }
        if let (Space::Local(v) | Space::Private(v), true) = (ptr.space, ptr.whole) {
            let copy = if matches!(ptr.space, Space::Local(_)) {
                &self.locals[v]
            } else {
                &self.private[v]
            };
            if copy.width == width {
                // A whole variable (a scalar counter, an accumulator): its words as they are.
                return Lanes {
                    width,
                    words: super::lanes::copied(&copy.words),
                };
            }
        }
        let mut out = Lanes::zeros(ptr.offsets.len(), width);
        if let Space::Binding(b) = ptr.space {
            // The common case, one match for all lanes.
            match &self.bound[b].1 {
                Words::Read(words) => {
                    gather(&mut out, &ptr.offsets, width, words.len(), |i| words[i])
                }
                Words::Write(words) => gather(&mut out, &ptr.offsets, width, words.len(), |i| {
                    words[i].load(Relaxed)
                }),
            }
            return out;
        }
        if let Space::Workgroup(v) = ptr.space {
            let words = &self.workgroup[v];
            gather(&mut out, &ptr.offsets, width, words.len(), |i| words[i]);
            return out;
        }
        if let Space::Local(v) | Space::Private(v) = ptr.space {
            let copy = if matches!(ptr.space, Space::Local(_)) {
                &self.locals[v]
            } else {
                &self.private[v]
            };
            gather_per_lane(&mut out, copy, &ptr.offsets, width);
            return out;
        }
        for (l, &off) in ptr.offsets.iter().enumerate() {
            for (c, o) in out.lane_mut(l).iter_mut().enumerate() {
                *o = self.word(ptr.space, l, off + c as u32);
            }
        }
        out
    }

    pub(super) fn word(&self, space: Space, l: usize, offset: u32) -> u32 {
        let clamp = |len: usize| (offset as usize).min(len.saturating_sub(1));
        match space {
            Space::Binding(b) if self.bound[b].1.len() == 0 => 0,
            Space::Binding(b) => self.bound[b].1.get(clamp(self.bound[b].1.len())),
            Space::Workgroup(v) => self.workgroup[v]
                .get(clamp(self.workgroup[v].len()))
                .copied()
                .unwrap_or(0),
            Space::Private(v) => self.private[v]
                .words
                .get(self.private[v].at(l, offset))
                .copied()
                .unwrap_or(0),
            Space::Local(v) => self.locals[v]
                .words
                .get(self.locals[v].at(l, offset))
                .copied()
                .unwrap_or(0),
        }
    }

    /// Store `value` at `ptr` for the lanes in `mask`; writes outside the memory are dropped.
    pub fn store(&mut self, ptr: &Ptr, value: &Lanes, mask: &[bool]) {
        if let (Space::Binding(b), 1) = (ptr.space, value.width) {
            // The common case, one match for all lanes.
            if let Words::Write(words) = &self.bound[b].1 {
                for ((&off, &w), _) in ptr
                    .offsets
                    .iter()
                    .zip(&value.words)
                    .zip(mask)
                    .filter(|(_, &m)| m)
                {
                    if let Some(cell) = words.get(off as usize) {
                        cell.store(w, Relaxed);
                    }
                }
            }
            return;
        }
        if let (Space::Local(v) | Space::Private(v), 1) = (ptr.space, value.width) {
            let copy = if matches!(ptr.space, Space::Local(_)) {
                &mut self.locals[v]
            } else {
                &mut self.private[v]
            };
            let width = copy.width;
            if width == 1 && ptr.whole && mask.iter().all(|&m| m) {
                copy.words.copy_from_slice(&value.words);
                return;
            }
            if width == 1 && ptr.whole {
                // A scalar variable: one select per lane, no offsets.
                for ((cell, &w), &m) in copy.words.iter_mut().zip(&value.words).zip(mask) {
                    *cell = if m { w } else { *cell };
                }
                return;
            }
            for ((lane, (&off, &w)), _) in copy
                .words
                .chunks_exact_mut(width.max(1))
                .zip(ptr.offsets.iter().zip(&value.words))
                .zip(mask)
                .filter(|(_, &m)| m)
            {
                if let Some(cell) = lane.get_mut(off as usize) {
                    *cell = w;
                }
            }
            return;
        }
        if let (Space::Workgroup(v), 1) = (ptr.space, value.width) {
            let words = &mut self.workgroup[v];
            for ((&off, &w), _) in ptr
                .offsets
                .iter()
                .zip(&value.words)
                .zip(mask)
                .filter(|(_, &m)| m)
            {
                if let Some(cell) = words.get_mut(off as usize) {
                    *cell = w;
                }
            }
            return;
        }
        for (l, &off) in ptr.offsets.iter().enumerate() {
            if !mask[l] {
                continue;
            }
            for (c, &w) in value.lane(l).iter().enumerate() {
                self.set(ptr.space, l, off + c as u32, w);
            }
        }
    }

    pub(super) fn set(&mut self, space: Space, l: usize, offset: u32, w: u32) {
        let i = offset as usize;
        match space {
            Space::Binding(b) => {
                if let Words::Write(words) = &self.bound[b].1 {
                    if let Some(cell) = words.get(i) {
                        cell.store(w, Relaxed);
                    }
                }
            }
            Space::Workgroup(v) => {
                if let Some(cell) = self.workgroup[v].get_mut(i) {
                    *cell = w;
                }
            }
            Space::Private(v) if i < self.private[v].width => {
                let at = self.private[v].at(l, offset);
                self.private[v].words[at] = w;
            }
            Space::Local(v) if i < self.locals[v].width => {
                let at = self.locals[v].at(l, offset);
                self.locals[v].words[at] = w;
            }
            Space::Private(_) | Space::Local(_) => {}
        }
    }

    /// Apply `fun` with `value` at `ptr` for each lane in `mask`, in lane order, returning the
    /// old values (and, for a compare-exchange, whether it exchanged).
    pub fn atomic(
        &mut self,
        ptr: &Ptr,
        fun: &AtomicFunction,
        kind: Kind,
        value: &Lanes,
        compare: Option<&Lanes>,
        mask: &[bool],
    ) -> (Lanes, Lanes) {
        let lanes = ptr.offsets.len();
        let (mut old, mut exchanged) = (Lanes::zeros(lanes, 1), Lanes::zeros(lanes, 1));
        for (l, &off) in ptr.offsets.iter().enumerate() {
            if !mask[l] {
                continue;
            }
            let (v, cmp) = (value.lane(l)[0], compare.map(|c| c.lane(l)[0]));
            let (prev, done) = self.update(ptr.space, off, |x| apply(fun, kind, x, v, cmp));
            old.lane_mut(l)[0] = prev;
            exchanged.lane_mut(l)[0] = u32::from(done);
        }
        (old, exchanged)
    }

    /// Replace the word at `offset` of shared memory by `f(old)` (if it gives one) atomically;
    /// the old word, and whether it was replaced.
    pub(super) fn update(
        &mut self,
        space: Space,
        offset: u32,
        f: impl Fn(u32) -> Option<u32>,
    ) -> (u32, bool) {
        let i = offset as usize;
        match space {
            Space::Binding(b) => match &self.bound[b].1 {
                Words::Write(words) => match words.get(i) {
                    Some(cell) => match cell.fetch_update(Relaxed, Relaxed, &f) {
                        Ok(old) => (old, true),
                        Err(old) => (old, false),
                    },
                    None => (0, false),
                },
                Words::Read(_) => (0, false),
            },
            Space::Workgroup(v) => match self.workgroup[v].get_mut(i) {
                Some(cell) => {
                    let old = *cell;
                    let new = f(old);
                    *cell = new.unwrap_or(old);
                    (old, new.is_some())
                }
                None => (0, false),
            },
            // WGSL has atomics only in storage and workgroup memory.
            Space::Private(_) | Space::Local(_) => (0, false),
        }
    }
}

/// Each lane's `width` words from `offsets` into its own copy of a private or local
/// variable, each word's offset clamped into the copy.
#[inline]
fn gather_per_lane(out: &mut Lanes, copy: &PerLane, offsets: &[u32], width: usize) {
    let last = copy.width.saturating_sub(1);
    if width == 1 && copy.width > 0 {
        for ((o, &off), lane) in out
            .words
            .iter_mut()
            .zip(offsets)
            .zip(copy.words.chunks_exact(copy.width))
        {
            *o = lane[(off as usize).min(last)];
        }
        return;
    }
    for (l, (o, &off)) in out.words.chunks_mut(width.max(1)).zip(offsets).enumerate() {
        for (c, o) in o.iter_mut().enumerate() {
            *o = copy
                .words
                .get(l * copy.width + (off as usize + c).min(last))
                .copied()
                .unwrap_or(0);
        }
    }
}

/// The word at each lane's offset, clamped below `len` (zeros from an empty memory).
#[inline(always)]
fn scalars(offsets: &[u32], len: usize, word: impl Fn(usize) -> u32) -> Vec<u32> {
    match len.checked_sub(1) {
        Some(last) => super::lanes::collect(offsets.iter().map(|&o| word((o as usize).min(last)))),
        None => super::lanes::zeroed(offsets.len()),
    }
}

/// `width` words from each lane's offset into `out`, each index clamped below `len` (nothing
/// read from an empty memory).
#[inline(always)]
fn gather(out: &mut Lanes, offsets: &[u32], width: usize, len: usize, word: impl Fn(usize) -> u32) {
    if len == 0 {
        return;
    }
    let last = len - 1;
    if width == 1 {
        for (o, &off) in out.words.iter_mut().zip(offsets) {
            *o = word((off as usize).min(last));
        }
        return;
    }
    for (o, &off) in out.words.chunks_mut(width.max(1)).zip(offsets) {
        for (c, o) in o.iter_mut().enumerate() {
            *o = word((off as usize + c).min(last));
        }
    }
}

/// The new value of an atomic word `x` after `fun` with operand `v` (`None`: unchanged).
fn apply(fun: &AtomicFunction, kind: Kind, x: u32, v: u32, compare: Option<u32>) -> Option<u32> {
    let signed = kind == Kind::I32;
    Some(match fun {
        AtomicFunction::Add => x.wrapping_add(v),
        AtomicFunction::Subtract => x.wrapping_sub(v),
        AtomicFunction::And => x & v,
        AtomicFunction::ExclusiveOr => x ^ v,
        AtomicFunction::InclusiveOr => x | v,
        AtomicFunction::Min if signed => (x as i32).min(v as i32) as u32,
        AtomicFunction::Min => x.min(v),
        AtomicFunction::Max if signed => (x as i32).max(v as i32) as u32,
        AtomicFunction::Max => x.max(v),
        AtomicFunction::Exchange { compare: None } => v,
        AtomicFunction::Exchange { compare: Some(_) } => return (Some(x) == compare).then_some(v),
    })
}
