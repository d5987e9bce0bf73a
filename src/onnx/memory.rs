//! The memory plan of a session: the intermediates of one run, each a device block live from
//! the step that wrote it to the last step that read it (or through its views), placed by
//! liveness at offsets in a few arenas, and the peak that placement needs beside the weights.
//!
//! Models rarely declare the shapes of their intermediates, so the sizes come from the
//! session's first run ([`Trace`]), which records the block each step wrote; the lifetimes
//! come from the schedule. Placement is greedy by size (the largest block first, each into
//! the smallest gap of the offsets free over its lifetime, else at an arena's end), as
//! TensorFlow Lite's and onnxruntime's planners place theirs.

use std::collections::{BTreeMap, HashSet};

use super::graph::{Graph, ValueId};
use super::schedule::Schedule;
use super::value::Val;

/// What a session's run holds on its device, planned from its first run
/// (`Session::memory_plan`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemoryPlan {
    /// Bytes of the weights (the graph's constants) held on the device.
    pub weights_bytes: u64,
    /// The device blocks of intermediates a run writes (a view shares its block's).
    pub intermediates: usize,
    /// Their bytes added up: what a run that reused nothing would hold.
    pub unshared_bytes: u64,
    /// The most bytes of intermediates live after one step: no placement needs less.
    pub live_bytes: u64,
    /// The bytes of each arena the intermediates are placed in; their sum is the planned
    /// peak ([`MemoryPlan::peak_bytes`]).
    pub arenas: Vec<u64>,
}

impl MemoryPlan {
    /// The planned peak of intermediates: the arenas' bytes added up.
    pub fn peak_bytes(&self) -> u64 {
        self.arenas.iter().sum()
    }
}

/// One device block a step of a run wrote.
#[derive(Clone, Copy, Debug)]
struct Written {
    /// The value it holds.
    value: ValueId,
    /// The step (index into the schedule's order) that wrote it.
    step: usize,
    /// The block's id (views of one block share it) and bytes.
    block: (u64, u64),
}

/// What one run of a graph wrote, for its memory plan: blocks the run did not allocate (the
/// feeds, the constants) are told apart from those its steps did.
#[derive(Debug, Default)]
pub(crate) struct Trace {
    /// The blocks of values present before the first step.
    outside: HashSet<u64>,
    /// The device values the steps wrote, in order.
    written: Vec<Written>,
    /// Whether a whole run was recorded.
    done: bool,
}

impl Trace {
    /// Notes the values of `env` before the run's first step as not the run's own.
    pub(crate) fn start(&mut self, env: &[Option<Val>]) {
        self.outside.extend(env.iter().filter_map(|v| match v {
            Some(Val::Device(t)) => Some(t.memory_block().0),
            _ => None,
        }));
    }

    /// Notes that step `step` wrote `val` as value `value`.
    pub(crate) fn wrote(&mut self, step: usize, value: ValueId, val: &Val) {
        if let Val::Device(t) = val {
            let block = t.memory_block();
            self.written.push(Written { value, step, block });
        }
    }

    /// Notes that the run reached its end.
    pub(crate) fn finish(&mut self) {
        self.done = true;
    }

    /// Whether a whole run was recorded.
    pub(crate) fn done(&self) -> bool {
        self.done
    }
}

/// One block to place: its bytes and the steps it is live through, both ends included.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Life {
    bytes: u64,
    first: usize,
    last: usize,
}

/// The plan of `g`'s run recorded in `trace` under `schedule`, with `weights_bytes` of
/// constants; offsets aligned to `align` bytes, arenas of at most `arena_limit` bytes (a block
/// larger than that has an arena of its own).
pub(crate) fn plan(
    g: &Graph,
    schedule: &Schedule,
    trace: &Trace,
    weights_bytes: u64,
    align: u64,
    arena_limit: u64,
) -> MemoryPlan {
    let lives = lives(g, schedule, trace);
    MemoryPlan {
        weights_bytes,
        intermediates: lives.len(),
        unshared_bytes: lives.iter().map(|l| l.bytes).sum(),
        live_bytes: live_bytes(&lives),
        arenas: place(&lives, align.max(1), arena_limit),
    }
}

/// The lifetime of each block the run's steps allocated: from the step that first wrote it
/// to the last read of any value in it; the graph's outputs live to the end of the run.
fn lives(g: &Graph, schedule: &Schedule, trace: &Trace) -> Vec<Life> {
    let end = schedule.order.len();
    let mut blocks: BTreeMap<u64, Life> = BTreeMap::new();
    for w in &trace.written {
        if trace.outside.contains(&w.block.0) {
            continue;
        }
        let last = match schedule.last_use[w.value] {
            _ if g.outputs.contains(&w.value) => end,
            Some(last) => last,
            None => w.step,
        };
        let life = blocks.entry(w.block.0).or_insert(Life {
            bytes: w.block.1,
            first: w.step,
            last,
        });
        life.last = life.last.max(last);
    }
    blocks.into_values().collect()
}

/// The most bytes of `lives` live at one step.
fn live_bytes(lives: &[Life]) -> u64 {
    let end = lives.iter().map(|l| l.last + 1).max().unwrap_or(0);
    let mut delta = vec![0i128; end + 1];
    for l in lives {
        delta[l.first] += i128::from(l.bytes);
        delta[l.last + 1] -= i128::from(l.bytes);
    }
    let mut live = 0i128;
    let mut most = 0i128;
    for d in delta {
        live += d;
        most = most.max(live);
    }
    u64::try_from(most).unwrap_or(0)
}

/// A block placed: its arena, offset and aligned bytes, and its lifetime.
struct Placed {
    arena: usize,
    offset: u64,
    bytes: u64,
    life: Life,
}

/// The arenas' bytes after placing `lives`, the largest first, each in the smallest gap
/// free over its lifetime among the blocks placed so far, else at the end of the first arena
/// it keeps under `limit`, else in a new arena.
fn place(lives: &[Life], align: u64, limit: u64) -> Vec<u64> {
    let mut order: Vec<&Life> = lives.iter().collect();
    order.sort_by_key(|l| (std::cmp::Reverse(l.bytes), l.first));
    let mut placed: Vec<Placed> = Vec::new();
    let mut arenas: Vec<u64> = Vec::new();
    for life in order {
        let bytes = life.bytes.next_multiple_of(align);
        let spot = (0..arenas.len()).find_map(|arena| {
            let offset = gap(&placed, arena, life, bytes)?;
            (offset + bytes <= limit).then_some((arena, offset))
        });
        let (arena, offset) = spot.unwrap_or_else(|| {
            arenas.push(0);
            (arenas.len() - 1, 0)
        });
        arenas[arena] = arenas[arena].max(offset + bytes);
        placed.push(Placed {
            arena,
            offset,
            bytes,
            life: *life,
        });
    }
    arenas
}

/// The offset in `arena` where `bytes` fit beside the blocks placed there whose lifetimes
/// overlap `life`: the smallest gap that holds them, else the end of those blocks.
fn gap(placed: &[Placed], arena: usize, life: &Life, bytes: u64) -> Option<u64> {
    let mut busy: Vec<(u64, u64)> = placed
        .iter()
        .filter(|p| p.arena == arena && p.life.first <= life.last && life.first <= p.life.last)
        .map(|p| (p.offset, p.offset + p.bytes))
        .collect();
    busy.sort_unstable();
    let mut best: Option<(u64, u64)> = None;
    let mut free_from = 0;
    for (start, end) in busy {
        if start >= free_from + bytes && best.is_none_or(|(_, size)| start - free_from < size) {
            best = Some((free_from, start - free_from));
        }
        free_from = free_from.max(end);
    }
    Some(best.map_or(free_from, |(offset, _)| offset))
}

#[cfg(test)]
mod tests {
    use super::{live_bytes, place, Life};

    fn life(bytes: u64, first: usize, last: usize) -> Life {
        Life { bytes, first, last }
    }

    #[test]
    fn blocks_share_offsets_when_their_lifetimes_do_not_meet() {
        // a [0,1] 1000, b [1,2] 500, c [2,3] 1000: c reuses a's offsets, b lies beside both.
        let lives = [life(1000, 0, 1), life(500, 1, 2), life(1000, 2, 3)];
        assert_eq!(place(&lives, 256, u64::MAX), vec![1024 + 512]);
        assert_eq!(live_bytes(&lives), 1500);
    }

    #[test]
    fn a_block_reuses_the_offsets_of_one_that_died() {
        // x and z live throughout; y between them dies at step 1; w (step 2) fits y's gap.
        let lives = [
            life(512, 0, 3),
            life(1024, 0, 1),
            life(2048, 0, 3),
            life(768, 2, 3),
        ];
        assert_eq!(place(&lives, 256, u64::MAX), vec![2048 + 1024 + 512]);
    }

    #[test]
    fn arenas_stay_under_their_limit() {
        let lives = [life(600, 0, 1), life(600, 0, 1), life(5000, 0, 0)];
        assert_eq!(place(&lives, 8, 1500), vec![5000, 1200]);
    }
}
