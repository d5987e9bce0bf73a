//! A Concat's inputs written in place. A convolution whose output a `Concat` joins writes it
//! straight into its slice of the Concat's output, which the run makes at the first such
//! step; the Concat then copies only its other inputs (SqueezeNet's fire modules join two
//! convolutions each: their copies took a tenth of its per-node profile on the CPU).
//!
//! The output's shape is the one the Concat's last run gave (the run at load that compiles
//! the kernels, else the first), so the slices are hints: an operator writes into one only
//! where it fits ([`Ctx::dest`](super::ops::Ctx)), and where the shapes changed since, the
//! convolutions write their own outputs and the Concat copies them as before.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use super::graph::{Graph, Origin};
use super::plan::Values;
use super::value::Val;
use crate::base::error::Result;
use crate::base::signal::lock;
use crate::{DType, Queue, Tensor};

/// The operators that write their output 0 into a view the run gives them.
const WRITERS: [&str; 2] = ["Conv", "FusedConv"];

/// What a step does for a Concat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Writes input `input` of the Concat that step `join` runs.
    Part { join: usize, input: usize },
    /// Runs a Concat along `axis` (as its node names it: negative counts from the end).
    Join { axis: i64 },
}

/// The f32 inputs' shapes that a Concat's last run joined, and its axis (from 0).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    inputs: Vec<Vec<usize>>,
    axis: usize,
}

/// A run's early output of one Concat, and where each input's slice starts along its axis.
pub(crate) struct Made {
    out: Tensor,
    axis: usize,
    starts: Vec<usize>,
}

/// The joins of a plan: each step's role, what each Concat's last run joined, and whether a
/// run saw shapes other than those noted before ([`Joins::learned`]).
pub(crate) struct Joins {
    roles: Vec<Option<Role>>,
    seen: Mutex<Vec<Option<Seen>>>,
    learned: AtomicBool,
}

impl Joins {
    /// The joins of `g` run in `order`, whose steps run the operators `ops`: every Concat
    /// with an input that a [`WRITERS`] node's output 0 is (a node writes for one Concat).
    /// None where `ops` does not name every step's operator (a plan that must not run).
    pub(crate) fn new(g: &Graph, order: &[usize], ops: &[&str]) -> Joins {
        let roles = if ops.len() == order.len() {
            roles(g, order, ops)
        } else {
            vec![None; order.len()]
        };
        Joins {
            roles,
            seen: Mutex::new(vec![None; order.len()]),
            learned: AtomicBool::new(false),
        }
    }

    /// Whether a run noted shapes unlike those before since the last call: a run made then
    /// (a capture) would make those Concats' outputs early where it had not.
    pub(crate) fn learned(&self) -> bool {
        self.learned.swap(false, Ordering::Relaxed)
    }

    /// A run's table of early outputs, empty.
    pub(crate) fn start(&self) -> Vec<Option<Made>> {
        (0..self.roles.len()).map(|_| None).collect()
    }

    /// Where step `step` may write its output 0: for a Concat its output made early (taken
    /// from `made`), for a node writing one of its inputs the slice of that input, the
    /// Concat's output made on `queue` first if this is its first such node.
    pub(crate) fn dest(
        &self,
        step: usize,
        made: &mut [Option<Made>],
        queue: &Queue,
    ) -> Result<Option<Tensor>> {
        match self.roles[step] {
            None => Ok(None),
            Some(Role::Join { .. }) => Ok(made[step].take().map(|m| m.out)),
            Some(Role::Part { join, input }) => {
                if made[join].is_none() {
                    made[join] = self.make(join, queue)?;
                }
                let Some(m) = &made[join] else {
                    return Ok(None);
                };
                let part = m.out.slice(m.axis, m.starts[input]..m.starts[input + 1]);
                Ok(part.ok())
            }
        }
    }

    /// The output of the Concat of step `join` as its last run had it, made on `queue`;
    /// none before its first run.
    fn make(&self, join: usize, queue: &Queue) -> Result<Option<Made>> {
        let Some(seen) = lock(&self.seen)[join].clone() else {
            return Ok(None);
        };
        let mut starts = vec![0];
        for s in &seen.inputs {
            starts.push(starts[starts.len() - 1] + s[seen.axis]);
        }
        let mut shape = seen.inputs[0].clone();
        shape[seen.axis] = starts[starts.len() - 1];
        let out = Tensor::uninit(queue, &shape, DType::F32)?;
        Ok(Some(Made {
            out,
            axis: seen.axis,
            starts,
        }))
    }

    /// Notes what the Concat of step `step` (a node reading `inputs` of `values`) joined, if
    /// it joined f32 tensors on the device, for the next run to make its output early.
    pub(crate) fn saw(&self, step: usize, inputs: &[Option<usize>], values: Values<'_>) {
        let Some(Role::Join { axis }) = self.roles[step] else {
            return;
        };
        let shape = |id: &Option<usize>| match id.and_then(|id| values.get(id)) {
            Some(Val::Device(t)) if t.dtype() == DType::F32 => Some(t.shape().to_vec()),
            _ => None,
        };
        let Some(shapes) = inputs.iter().map(shape).collect::<Option<Vec<_>>>() else {
            return;
        };
        let rank = shapes.first().map_or(0, Vec::len) as i64;
        let axis = if axis < 0 { axis + rank } else { axis };
        if !(0..rank).contains(&axis) || shapes.iter().any(|s| s.len() as i64 != rank) {
            return;
        }
        let seen = Seen {
            inputs: shapes,
            axis: axis as usize,
        };
        let mut all = lock(&self.seen);
        if all[step].as_ref() != Some(&seen) {
            all[step] = Some(seen);
            self.learned.store(true, Ordering::Relaxed);
        }
    }
}

/// Each step's role in [`Joins::new`]: `ops` names every step's operator.
fn roles(g: &Graph, order: &[usize], ops: &[&str]) -> Vec<Option<Role>> {
    let mut roles = vec![None; order.len()];
    let mut step_of = vec![None; g.nodes.len()];
    for (step, &n) in order.iter().enumerate() {
        step_of[n] = Some(step);
    }
    for (step, &n) in order.iter().enumerate() {
        let node = &g.nodes[n];
        let axis = node.attrs.int("axis").ok().flatten().copied();
        let (Some(axis), "Concat") = (axis, ops[step]) else {
            continue;
        };
        if node.inputs.iter().any(Option::is_none) {
            continue;
        }
        for (input, id) in node.inputs.iter().flatten().enumerate() {
            let Origin::Node { node: p, slot: 0 } = g.values[*id].origin else {
                continue;
            };
            let Some(at) = step_of[p].filter(|&at| WRITERS.contains(&ops[at])) else {
                continue;
            };
            if roles[at].is_none() {
                roles[at] = Some(Role::Part { join: step, input });
                roles[step] = Some(Role::Join { axis });
            }
        }
    }
    roles
}
