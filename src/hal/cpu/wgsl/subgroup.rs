//! Subgroup operations: a workgroup's lanes in subgroups of [`SUBGROUP_SIZE`] consecutive
//! lanes (by `local_invocation_index`, as GPUs form warps), each operation over the lanes of
//! one subgroup still active. Collective operations combine in lane order; a gather from a
//! lane outside the subgroup or not active gives 0 (WGSL leaves it indeterminate).

use naga::{
    CollectiveOperation as C, Expression as E, GatherMode as G, Handle, SubgroupOperation as Op,
};

use super::exec::{Exec, Frame, Value};
use super::lanes::{Kind, Lanes};
use crate::Result;

/// Lanes per subgroup (a warp's 32).
pub(super) const SUBGROUP_SIZE: usize = 32;

/// `a op b` on the words of one component of `kind`.
fn combine(op: Op, kind: Kind, a: u32, b: u32) -> u32 {
    let (fa, fb) = (f32::from_bits(a), f32::from_bits(b));
    let (ia, ib) = (a as i32, b as i32);
    match (op, kind) {
        (Op::Add, Kind::F32) => (fa + fb).to_bits(),
        (Op::Add, _) => a.wrapping_add(b),
        (Op::Mul, Kind::F32) => (fa * fb).to_bits(),
        (Op::Mul, _) => a.wrapping_mul(b),
        (Op::Min, Kind::F32) => fa.min(fb).to_bits(),
        (Op::Min, Kind::I32) => ia.min(ib) as u32,
        (Op::Min, _) => a.min(b),
        (Op::Max, Kind::F32) => fa.max(fb).to_bits(),
        (Op::Max, Kind::I32) => ia.max(ib) as u32,
        (Op::Max, _) => a.max(b),
        (Op::And | Op::All, _) => a & b,
        (Op::Or | Op::Any, _) => a | b,
        (Op::Xor, _) => a ^ b,
    }
}

/// What an exclusive scan gives the first lane: the identity of `op` (scans are of add and mul).
fn identity(op: Op, kind: Kind) -> u32 {
    match (op, kind) {
        (Op::Mul, Kind::F32) => 1f32.to_bits(),
        (Op::Mul | Op::All, _) => 1,
        _ => 0,
    }
}

impl Exec<'_, '_, '_> {
    /// The built-ins of subgroups for every lane, if `b` is one.
    pub(super) fn subgroup_builtin(&self, b: naga::BuiltIn) -> Option<Lanes> {
        let lanes = self.lanes as u32;
        let size = SUBGROUP_SIZE as u32;
        let words: Vec<u32> = match b {
            naga::BuiltIn::SubgroupSize => vec![size; self.lanes],
            naga::BuiltIn::SubgroupInvocationId => (0..lanes).map(|l| l % size).collect(),
            naga::BuiltIn::SubgroupId => (0..lanes).map(|l| l / size).collect(),
            naga::BuiltIn::NumSubgroups => vec![lanes.div_ceil(size); self.lanes],
            _ => return None,
        };
        Some(Lanes { width: 1, words })
    }

    /// `subgroupAdd`, `subgroupInclusiveMul`, `subgroupAll`, ...: `op` over each subgroup's
    /// active lanes, reduced or scanned.
    pub(super) fn collective(
        &mut self,
        frame: &mut Frame<'_>,
        op: Op,
        collective: C,
        argument: Handle<E>,
        result: Handle<E>,
        mask: &[bool],
    ) -> Result<()> {
        let kind = self.kind(frame, argument);
        let x = frame.lanes(argument)?.clone();
        let mut out = Lanes::zeros(self.lanes, x.width);
        for start in (0..self.lanes).step_by(SUBGROUP_SIZE) {
            let members: Vec<usize> = (start..(start + SUBGROUP_SIZE).min(self.lanes))
                .filter(|&l| mask[l])
                .collect();
            for c in 0..x.width {
                let mut acc: Option<u32> = None;
                for &l in &members {
                    let before = acc.unwrap_or_else(|| identity(op, kind));
                    let now = acc.map_or(x.lane(l)[c], |a| combine(op, kind, a, x.lane(l)[c]));
                    out.lane_mut(l)[c] = if collective == C::ExclusiveScan {
                        before
                    } else {
                        now
                    };
                    acc = Some(now);
                }
                if collective == C::Reduce {
                    members
                        .iter()
                        .for_each(|&l| out.lane_mut(l)[c] = acc.unwrap_or(0));
                }
            }
        }
        frame.values[result.index()] = Some(Value::Lanes(out));
        Ok(())
    }

    /// `subgroupBallot(predicate)`: bit `i` of the first word for each active lane `i` of the
    /// subgroup whose predicate holds (without one, each active lane).
    pub(super) fn ballot(
        &mut self,
        frame: &mut Frame<'_>,
        predicate: Option<Handle<E>>,
        result: Handle<E>,
        mask: &[bool],
    ) -> Result<()> {
        let votes: Vec<bool> = match predicate {
            Some(p) => frame
                .lanes(p)?
                .column(0)
                .zip(mask)
                .map(|(v, &m)| m && v != 0)
                .collect(),
            None => mask.to_vec(),
        };
        let mut out = Lanes::zeros(self.lanes, 4);
        for start in (0..self.lanes).step_by(SUBGROUP_SIZE) {
            let end = (start + SUBGROUP_SIZE).min(self.lanes);
            let bits = (start..end)
                .filter(|&l| votes[l])
                .fold(0u32, |b, l| b | 1 << (l - start));
            (start..end).for_each(|l| out.lane_mut(l)[0] = bits);
        }
        frame.values[result.index()] = Some(Value::Lanes(out));
        Ok(())
    }

    /// `subgroupBroadcast`, `subgroupShuffle*`, `quad*`: each lane's value from the lane the
    /// mode names.
    pub(super) fn gather(
        &mut self,
        frame: &mut Frame<'_>,
        mode: &G,
        argument: Handle<E>,
        result: Handle<E>,
        mask: &[bool],
    ) -> Result<()> {
        let x = frame.lanes(argument)?.clone();
        let index = |h: Handle<E>| -> Result<Vec<u32>> { Ok(frame.lanes(h)?.column(0).collect()) };
        let lanes = self.lanes;
        let first = |l: usize| {
            (l / SUBGROUP_SIZE * SUBGROUP_SIZE..lanes)
                .find(|&k| mask[k])
                .unwrap_or(l)
        };
        let sources: Vec<usize> = match *mode {
            G::BroadcastFirst => (0..lanes).map(first).collect(),
            G::Broadcast(i) | G::Shuffle(i) => index(i)?
                .iter()
                .enumerate()
                .map(|(l, &i)| l / SUBGROUP_SIZE * SUBGROUP_SIZE + i as usize)
                .collect(),
            G::ShuffleDown(d) => index(d)?
                .iter()
                .enumerate()
                .map(|(l, &d)| l.wrapping_add(d as usize))
                .collect(),
            G::ShuffleUp(d) => index(d)?
                .iter()
                .enumerate()
                .map(|(l, &d)| l.wrapping_sub(d as usize))
                .collect(),
            G::ShuffleXor(m) => index(m)?
                .iter()
                .enumerate()
                .map(|(l, &m)| l ^ (m as usize % SUBGROUP_SIZE))
                .collect(),
            G::QuadBroadcast(i) => index(i)?
                .iter()
                .enumerate()
                .map(|(l, &i)| (l & !3) + i as usize % 4)
                .collect(),
            G::QuadSwap(dir) => (0..lanes).map(|l| l ^ (dir as usize + 1)).collect(),
        };
        let mut out = Lanes::zeros(lanes, x.width);
        for (l, &s) in sources.iter().enumerate() {
            if mask[l] && s < lanes && s / SUBGROUP_SIZE == l / SUBGROUP_SIZE && mask[s] {
                out.lane_mut(l).copy_from_slice(x.lane(s));
            }
        }
        frame.values[result.index()] = Some(Value::Lanes(out));
        Ok(())
    }
}
