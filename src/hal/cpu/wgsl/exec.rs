//! Statements, run for every invocation of a workgroup at once under a mask of the lanes
//! still active: an `if` runs each branch for the lanes that take it, a loop runs until every
//! lane has left it, and `break`, `continue` and `return` take lanes out of the mask until
//! the construct they leave is done. Barriers need nothing more: the lanes run in lockstep.

use std::ops::Range;

use naga::{AddressSpace, BuiltIn, Expression as E, Handle, Statement as S};

use super::lanes::Lanes;
use super::memory::{Memories, PerLane, Ptr, Space, Words};
use super::reuse::Reuse;
use super::WgslProgram;
use crate::{Error, Result};

/// A value: numbers (or a composite) per lane, or a pointer per lane.
#[derive(Clone, Debug)]
pub(super) enum Value {
    Lanes(Lanes),
    Ptr(Ptr),
}

/// One call of a function: its expressions' values, arguments and variables.
pub(super) struct Frame<'f> {
    pub function: &'f naga::Function,
    pub info: &'f naga::valid::FunctionInfo,
    /// Which expressions keep their value through the call, and which share another's.
    pub reuse: &'f Reuse,
    pub values: Vec<Option<Value>>,
    pub args: Vec<Value>,
    /// Whether this is the entry point's call, whose arguments (built-ins) are made where its
    /// expressions read them rather than passed in `args`.
    pub entry: bool,
    /// Where this call's function variables start on the executor's stack of them.
    pub local_base: usize,
    /// The value each lane returned.
    pub ret: Option<Lanes>,
    /// The innermost loop or switch last: lanes that left it by `break` (and, for loops,
    /// lanes waiting at `continue`).
    pub exits: Vec<Exit>,
}

/// Lanes leaving a loop or switch.
pub(super) struct Exit {
    pub is_loop: bool,
    pub broke: Vec<bool>,
    pub continued: Vec<bool>,
}

fn internal(what: &str) -> Error {
    Error::Internal(format!("the cpu WGSL executor {what}"))
}

impl Frame<'_> {
    /// The value of expression `h`, evaluated already.
    pub fn get(&self, h: Handle<E>) -> Result<&Value> {
        self.values[self.reuse.slot[h.index()].index()]
            .as_ref()
            .ok_or_else(|| internal("read an expression before evaluating it"))
    }

    /// The numbers of expression `h`.
    pub fn lanes(&self, h: Handle<E>) -> Result<&Lanes> {
        match self.get(h)? {
            Value::Lanes(l) => Ok(l),
            Value::Ptr(_) => Err(internal("took a pointer for a value")),
        }
    }

    /// The pointer of expression `h`.
    pub fn ptr(&self, h: Handle<E>) -> Result<&Ptr> {
        match self.get(h)? {
            Value::Ptr(p) => Ok(p),
            Value::Lanes(_) => Err(internal("took a value for a pointer")),
        }
    }
}

/// One workgroup's run of a program.
pub(super) struct Exec<'p, 'a, 'b> {
    pub prog: &'p WgslProgram,
    pub lanes: usize,
    pub bound: &'b [(Handle<naga::GlobalVariable>, Words<'a>)],
    /// Each `var<workgroup>` variable: one copy per running workgroup, one after another.
    workgroup: Vec<Vec<u32>>,
    /// Words of one copy of each `var<workgroup>` variable.
    workgroup_width: Vec<usize>,
    private: Vec<PerLane>,
    /// The function variables of every call in progress, innermost last: a pointer to one
    /// (`Space::Local`) stays valid in the calls it is passed to.
    locals: Vec<PerLane>,
    /// Index of each global variable in `bound`, `workgroup` or `private`.
    slots: Vec<Option<Space>>,
    /// The workgroups running, numbered in x, then y, then z.
    range: Range<usize>,
    /// The launch's workgroup count.
    workgroups: [u32; 3],
}

/// Run workgroups `range` (numbered in x, then y, then z) of a launch of `workgroups`
/// together, their invocations side by side as one set of lanes.
pub(super) fn workgroups(
    prog: &WgslProgram,
    bound: &[(Handle<naga::GlobalVariable>, Words<'_>)],
    range: Range<usize>,
    workgroups: [u32; 3],
) -> Result<()> {
    let mut exec = Exec::new(prog, bound, range, workgroups)?;
    let mut mask = vec![true; exec.lanes];
    // The entry point's arguments (built-ins) are made when its expressions first read them.
    exec.call(None, Vec::new(), &mut mask).map(drop)
}

impl<'p, 'a, 'b> Exec<'p, 'a, 'b> {
    fn new(
        prog: &'p WgslProgram,
        bound: &'b [(Handle<naga::GlobalVariable>, Words<'a>)],
        range: Range<usize>,
        workgroups: [u32; 3],
    ) -> Result<Self> {
        let lanes = prog.invocations() * range.len();
        let mut exec = Exec {
            prog,
            lanes,
            bound,
            workgroup: Vec::new(),
            workgroup_width: Vec::new(),
            private: Vec::new(),
            locals: Vec::new(),
            slots: Vec::new(),
            range,
            workgroups,
        };
        exec.allocate()?;
        Ok(exec)
    }

    /// Give each global variable its memory: a bound buffer, zeroed workgroup memory, or a
    /// private copy per lane holding its initial value.
    fn allocate(&mut self) -> Result<()> {
        for (h, var) in self.prog.module.global_variables.iter() {
            let words = self.prog.words(var.ty);
            let slot = match var.space {
                AddressSpace::Uniform | AddressSpace::Storage { .. } => self
                    .bound
                    .iter()
                    .position(|(v, _)| *v == h)
                    .map(Space::Binding),
                AddressSpace::WorkGroup => {
                    self.workgroup.push(vec![0; words * self.range.len()]);
                    self.workgroup_width.push(words);
                    Some(Space::Workgroup(self.workgroup.len() - 1))
                }
                AddressSpace::Private => {
                    let mut copy = PerLane::new(self.lanes, words);
                    if let Some(init) = var.init {
                        let value = self.constant(init)?;
                        let value =
                            super::half::in_memory(&self.prog.module.types[var.ty].inner, value);
                        for lane in copy.words.chunks_mut(words.max(1)) {
                            lane[..value.len().min(words)]
                                .copy_from_slice(&value[..value.len().min(words)]);
                        }
                    }
                    self.private.push(copy);
                    Some(Space::Private(self.private.len() - 1))
                }
                _ => None,
            };
            self.slots.push(slot);
        }
        Ok(())
    }

    /// The memory of global variable `g`.
    pub(super) fn space_of(&self, g: Handle<naga::GlobalVariable>) -> Result<Space> {
        self.slots[g.index()].ok_or_else(|| internal("used a variable that is not bound"))
    }

    /// Where each lane's pointer to the start of `space` points: its workgroup's copy of a
    /// `var<workgroup>` variable, word 0 of anything else.
    pub(super) fn origin(&self, space: Space) -> Vec<u32> {
        let Space::Workgroup(v) = space else {
            return super::lanes::zeroed(self.lanes);
        };
        let size = self.prog.invocations().max(1);
        super::lanes::collect((0..self.lanes).map(|l| (l / size * self.workgroup_width[v]) as u32))
    }

    /// The memories the running calls see.
    pub(super) fn memories(&mut self) -> Memories<'a, '_> {
        Memories {
            bound: self.bound,
            workgroup: &mut self.workgroup,
            private: &mut self.private,
            locals: &mut self.locals,
        }
    }

    /// The entry point's argument `a`: a built-in, or a struct of built-ins.
    pub(super) fn argument(&self, a: &naga::FunctionArgument) -> Result<Value> {
        if let Some(naga::Binding::BuiltIn(b)) = a.binding {
            return self.builtin(b).map(Value::Lanes);
        }
        let naga::TypeInner::Struct { ref members, span } = self.prog.module.types[a.ty].inner
        else {
            return Err(internal("met an entry-point argument without a built-in"));
        };
        let mut out = Lanes::zeros(self.lanes, span as usize / 4);
        for m in members {
            let Some(naga::Binding::BuiltIn(b)) = m.binding else {
                return Err(internal("met a struct member without a built-in"));
            };
            let v = self.builtin(b)?;
            for l in 0..self.lanes {
                let at = m.offset as usize / 4;
                out.lane_mut(l)[at..at + v.width].copy_from_slice(v.lane(l));
            }
        }
        Ok(Value::Lanes(out))
    }

    /// Built-in `b` of every lane.
    fn builtin(&self, b: BuiltIn) -> Result<Lanes> {
        let width = match b {
            BuiltIn::LocalInvocationId | BuiltIn::GlobalInvocationId | BuiltIn::WorkGroupId => 3,
            BuiltIn::LocalInvocationIndex => 1,
            BuiltIn::NumWorkGroups => return Ok(Lanes::splat(self.lanes, &self.workgroups)),
            other => {
                return self
                    .subgroup_builtin(other)
                    .ok_or_else(|| internal(&format!("met built-in {other:?}")))
            }
        };
        if width == 1 {
            let size = self.prog.invocations() as u32;
            let words = super::lanes::collect(self.range.clone().flat_map(|_| 0..size));
            return Ok(Lanes { width: 1, words });
        }
        let columns = [0, 1, 2].map(|c| self.builtin_component(b, c));
        let words = super::lanes::collect(
            (0..self.lanes).flat_map(|l| columns.iter().map(move |c| c.words[l])),
        );
        Ok(Lanes { width: 3, words })
    }

    /// Component `c` (x, y or z) of the vector built-in `b` (`local_invocation_id`,
    /// `global_invocation_id` or `workgroup_id`) in every lane: `gid.x` without the rest of `gid`.
    pub(super) fn builtin_component(&self, b: BuiltIn, c: usize) -> Lanes {
        let [sx, sy, sz] = self.prog.size;
        let [nx, ny, _] = self.workgroups.map(|n| n as usize);
        let mut words = super::lanes::empty();
        words.reserve(self.lanes);
        for w in self.range.clone() {
            let g = [w % nx, w / nx % ny, w / (nx * ny)].map(|n| n as u32);
            // Each lane's id: `origin` plus `step` times its local id.
            let (origin, step) = match b {
                BuiltIn::GlobalInvocationId => ([g[0] * sx, g[1] * sy, g[2] * sz][c], 1),
                BuiltIn::WorkGroupId => (g[c], 0),
                _ => (0, 1),
            };
            for z in 0..sz {
                for y in 0..sy {
                    match c {
                        0 => words.extend((0..sx).map(|x| origin + x * step)),
                        1 => words.extend(std::iter::repeat_n(origin + y * step, sx as usize)),
                        _ => words.extend(std::iter::repeat_n(origin + z * step, sx as usize)),
                    }
                }
            }
        }
        Lanes { width: 1, words }
    }

    /// Run the module's function `which` (`None`: the entry point) for the lanes in `mask`
    /// with `args`; each lane's return value.
    pub(super) fn call(
        &mut self,
        which: Option<Handle<naga::Function>>,
        args: Vec<Value>,
        mask: &mut [bool],
    ) -> Result<Option<Lanes>> {
        let prog = self.prog;
        let (function, info, reuse) = match which {
            None => (
                &prog.module.entry_points[prog.entry].function,
                prog.info.get_entry_point(prog.entry),
                &prog.entry_reuse,
            ),
            Some(f) => (
                &prog.module.functions[f],
                &prog.info[f],
                &prog.reuse[f.index()],
            ),
        };
        let local_base = self.locals.len();
        let mut frame = Frame {
            function,
            info,
            reuse,
            values: vec![None; function.expressions.len()],
            args,
            entry: which.is_none(),
            local_base,
            ret: None,
            exits: Vec::new(),
        };
        for (_, local) in function.local_variables.iter() {
            let words = self.prog.words(local.ty);
            let mut copy = PerLane::new(self.lanes, words);
            if let Some(init) = local.init {
                self.ensure(&mut frame, init)?;
                let v = frame.lanes(init)?;
                let inner = &self.prog.module.types[local.ty].inner;
                for l in 0..self.lanes {
                    let lane = super::half::in_memory(inner, v.lane(l).to_vec());
                    let n = lane.len().min(words);
                    copy.words[l * words..l * words + n].copy_from_slice(&lane[..n]);
                }
            }
            self.locals.push(copy);
        }
        let mut active = mask.to_vec();
        let ran = self.block(&mut frame, &function.body, &mut active);
        self.locals.truncate(local_base);
        ran.map(|()| frame.ret)
    }

    /// Run `block` for the lanes in `mask`, which loses the lanes that break, continue or return.
    pub(super) fn block(
        &mut self,
        frame: &mut Frame<'_>,
        block: &naga::Block,
        mask: &mut [bool],
    ) -> Result<()> {
        for statement in block.iter() {
            if !mask.iter().any(|&m| m) {
                break;
            }
            self.statement(frame, statement, mask)?;
        }
        Ok(())
    }

    /// `*pointer = value` in the lanes of `mask`.
    fn store(
        &mut self,
        frame: &mut Frame<'_>,
        pointer: Handle<E>,
        value: Handle<E>,
        mask: &[bool],
    ) -> Result<()> {
        // The value is taken out of the frame for the store (no copy), then put back.
        let value = frame.reuse.slot[value.index()];
        let v = frame.values[value.index()]
            .take()
            .ok_or_else(|| internal("stored an expression before evaluating it"))?;
        if let Value::Lanes(ref lanes) = v {
            if let Some((_, lone)) =
                super::half::pointee(&self.prog.module, self.ty(frame, pointer))
            {
                self.memories()
                    .store_halves(frame.ptr(pointer)?, lanes, lone, mask);
            } else if frame.reuse.direct[pointer.index()] {
                self.store_direct(frame, pointer, lanes, mask)?;
            } else {
                self.memories().store(frame.ptr(pointer)?, lanes, mask);
            }
        }
        frame.values[value.index()] = Some(v);
        Ok(())
    }

    fn statement(&mut self, frame: &mut Frame<'_>, statement: &S, mask: &mut [bool]) -> Result<()> {
        for h in reads(statement) {
            if !frame.reuse.direct[h.index()] {
                self.ensure(frame, h)?;
            }
        }
        match *statement {
            S::Emit(ref range) => {
                for h in range.clone() {
                    self.emit(frame, h)?;
                }
            }
            S::Block(ref b) => self.block(frame, b, mask)?,
            S::If {
                condition,
                ref accept,
                ref reject,
            } => self.branch(frame, condition, accept, reject, mask)?,
            S::Switch {
                selector,
                ref cases,
            } => self.switch(frame, selector, cases, mask)?,
            S::Loop {
                ref body,
                ref continuing,
                break_if,
            } => self.repeat(frame, body, continuing, break_if, mask)?,
            S::Break => leave(frame, mask, false)?,
            S::Continue => leave(frame, mask, true)?,
            S::Return { value } => self.ret(frame, value, mask)?,
            S::ControlBarrier(_) | S::MemoryBarrier(_) => {}
            S::Store { pointer, value } => self.store(frame, pointer, value, mask)?,
            S::Call {
                function,
                ref arguments,
                result,
            } => self.call_statement(frame, function, arguments, result, mask)?,
            S::Atomic {
                pointer,
                ref fun,
                value,
                result,
            } => self.atomic(frame, pointer, fun, value, result, mask)?,
            S::WorkGroupUniformLoad { pointer, result } => {
                let v = self.load(frame, pointer, result)?;
                frame.values[result.index()] = Some(Value::Lanes(v));
            }
            S::SubgroupCollectiveOperation {
                op,
                collective_op,
                argument,
                result,
            } => self.collective(frame, op, collective_op, argument, result, mask)?,
            S::SubgroupBallot { result, predicate } => {
                self.ballot(frame, predicate, result, mask)?
            }
            S::SubgroupGather {
                ref mode,
                argument,
                result,
            } => self.gather(frame, mode, argument, result, mask)?,
            _ => {
                return Err(internal(&format!(
                    "met a statement it does not run: {statement:?}"
                )))
            }
        }
        Ok(())
    }
}

/// The expressions `statement` reads directly (the ones not emitted, such as variables, are
/// evaluated before it runs).
pub(super) fn reads(statement: &S) -> Vec<Handle<E>> {
    match *statement {
        S::If { condition, .. } => vec![condition],
        S::Switch { selector, .. } => vec![selector],
        S::Return { value } => value.into_iter().collect(),
        S::Store { pointer, value } => vec![pointer, value],
        S::Call { ref arguments, .. } => arguments.clone(),
        S::Atomic {
            pointer,
            ref fun,
            value,
            ..
        } => {
            let compare = match *fun {
                naga::AtomicFunction::Exchange { compare } => compare,
                _ => None,
            };
            [Some(pointer), Some(value), compare]
                .into_iter()
                .flatten()
                .collect()
        }
        S::WorkGroupUniformLoad { pointer, .. } => vec![pointer],
        S::SubgroupCollectiveOperation { argument, .. } => vec![argument],
        S::SubgroupBallot { predicate, .. } => predicate.into_iter().collect(),
        S::SubgroupGather {
            ref mode, argument, ..
        } => {
            let index = match *mode {
                naga::GatherMode::Broadcast(i)
                | naga::GatherMode::Shuffle(i)
                | naga::GatherMode::ShuffleDown(i) => Some(i),
                naga::GatherMode::ShuffleUp(i)
                | naga::GatherMode::ShuffleXor(i)
                | naga::GatherMode::QuadBroadcast(i) => Some(i),
                naga::GatherMode::BroadcastFirst | naga::GatherMode::QuadSwap(_) => None,
            };
            [Some(argument), index].into_iter().flatten().collect()
        }
        _ => Vec::new(),
    }
}

/// `break` (or `continue`) for the lanes in `mask`: they wait at the innermost loop or switch
/// (`continue`: the innermost loop) until it is done.
fn leave(frame: &mut Frame<'_>, mask: &mut [bool], to_continuing: bool) -> Result<()> {
    let exit = if to_continuing {
        frame.exits.iter_mut().rev().find(|e| e.is_loop)
    } else {
        frame.exits.last_mut()
    };
    let exit = exit.ok_or_else(|| internal("met a break outside a loop or switch"))?;
    let set = if to_continuing {
        &mut exit.continued
    } else {
        &mut exit.broke
    };
    for (s, m) in set.iter_mut().zip(mask.iter_mut()) {
        *s |= *m;
        *m = false;
    }
    Ok(())
}
