//! Direct element access: `buffer[i]` where `buffer` is a bound buffer of scalars and the
//! pointer is only ever loaded from or stored to. Such a pointer is never built (found once
//! at compile time); each load or store computes its element's word from the index and
//! gathers or scatters in one pass over the lanes, with the clamping of `access.rs`.

use crate::hal::wgsl_overrides::array_length;
use naga::{AddressSpace, Expression as E, Handle, Module, Statement as S, TypeInner};

use super::exec::{Exec, Frame, Value};
use super::lanes::Lanes;
use super::memory::{Space, Words};
use crate::{Error, Result};

/// Which of `function`'s expressions are pointers to a bound buffer's scalar element that
/// only loads and stores use.
pub(super) fn direct(
    module: &Module,
    info: &naga::valid::FunctionInfo,
    function: &naga::Function,
) -> Vec<bool> {
    let n = function.expressions.len();
    let mut other_use = vec![false; n];
    for (_, e) in function.expressions.iter() {
        let _ = super::eval::for_operands(e, |o| {
            if !matches!(*e, E::Load { pointer } if pointer == o) {
                other_use[o.index()] = true;
            }
            Ok(())
        });
    }
    mark_statement_uses(&function.body, &mut other_use);
    function
        .expressions
        .iter()
        .map(|(h, e)| !other_use[h.index()] && is_buffer_scalar(module, info, function, h, e))
        .collect()
}

/// Every expression a statement of `block` reads, but the pointer of a store.
fn mark_statement_uses(block: &naga::Block, other_use: &mut [bool]) {
    for statement in block.iter() {
        let mut mark = |h: Handle<E>| other_use[h.index()] = true;
        match *statement {
            S::Store { value, .. } => mark(value),
            S::Block(ref b) => mark_statement_uses(b, other_use),
            S::If {
                condition,
                ref accept,
                ref reject,
            } => {
                mark(condition);
                mark_statement_uses(accept, other_use);
                mark_statement_uses(reject, other_use);
            }
            S::Switch {
                selector,
                ref cases,
            } => {
                mark(selector);
                cases
                    .iter()
                    .for_each(|c| mark_statement_uses(&c.body, other_use));
            }
            S::Loop {
                ref body,
                ref continuing,
                break_if,
            } => {
                break_if.into_iter().for_each(&mut mark);
                mark_statement_uses(body, other_use);
                mark_statement_uses(continuing, other_use);
            }
            ref other => super::exec::reads(other).into_iter().for_each(mark),
        }
    }
}

/// Whether `e` is `buffer[index]` into a bound buffer that is an array of one-word elements
/// (not a vector: `v[i]` of a `var<uniform> v: vec4<u32>` takes the general path).
fn is_buffer_scalar(
    module: &Module,
    info: &naga::valid::FunctionInfo,
    function: &naga::Function,
    h: Handle<E>,
    e: &E,
) -> bool {
    let E::Access { base, .. } = *e else {
        return false;
    };
    let E::GlobalVariable(g) = function.expressions[base] else {
        return false;
    };
    let var = &module.global_variables[g];
    let bound = matches!(
        var.space,
        AddressSpace::Storage { .. } | AddressSpace::Uniform
    ) && matches!(module.types[var.ty].inner, TypeInner::Array { .. });
    let scalar = match *info[h].ty.inner_with(&module.types) {
        TypeInner::Pointer { base, .. } => {
            let inner = &module.types[base].inner;
            matches!(*inner, TypeInner::Scalar(s) | TypeInner::Atomic(s) if s.width == 4)
        }
        TypeInner::ValuePointer {
            size: None, scalar, ..
        } => scalar.width == 4,
        _ => false,
    };
    bound && scalar
}

/// Where each lane's element of a direct access lies: its word, clamped as `access.rs` clamps.
struct Element<'v> {
    space: usize,
    indices: &'v [u32],
    stride: usize,
    /// The last element the index may reach.
    last: usize,
}

impl Element<'_> {
    /// The word of lane `l`'s element.
    #[inline(always)]
    fn word(&self, l: usize) -> usize {
        (self.indices[l] as usize).min(self.last) * self.stride
    }

    /// The words the lanes reach when they are consecutive elements of a buffer of `len`
    /// words, all within it (`buffer[g.x]` in a 1-D launch): one slice, no clamping.
    fn run(&self, len: usize) -> Option<std::ops::Range<usize>> {
        let first = *self.indices.first()? as usize;
        let end = first.checked_add(self.indices.len())?;
        // In u64: indices near u32::MAX must not wrap around to look consecutive.
        let consecutive = super::lanes::all(
            self.indices
                .iter()
                .enumerate()
                .map(|(k, &i)| u64::from(i) == first as u64 + k as u64),
        );
        (self.stride == 1 && end - 1 <= self.last && end <= len && consecutive)
            .then_some(first..end)
    }
}

impl Exec<'_, '_, '_> {
    /// The element that direct access `pointer` reaches in each lane.
    fn element<'v>(&mut self, frame: &'v mut Frame<'_>, pointer: Handle<E>) -> Result<Element<'v>> {
        let E::Access { base, index } = frame.function.expressions[pointer] else {
            return Err(Error::Internal(
                "the cpu WGSL executor took a direct access for another expression".into(),
            ));
        };
        // The buffer, by its variable: its pointer is never built.
        let E::GlobalVariable(g) = frame.function.expressions[base] else {
            return Err(Error::Internal(
                "the cpu WGSL executor took a direct access not into a variable".into(),
            ));
        };
        self.ensure(frame, index)?;
        let (count, stride) =
            match *self.composite(frame, base) {
                TypeInner::Array { base, size, stride } => {
                    let count = array_length(&self.prog.module, size).map(|n| n as usize);
                    (count, self.prog.stride(base, stride))
                }
                _ => return Err(Error::Internal(
                    "the cpu WGSL executor took a direct access into something other than an array"
                        .into(),
                )),
            };
        let Space::Binding(space) = self.space_of(g)? else {
            return Err(Error::Internal(
                "a direct access outside a bound buffer".into(),
            ));
        };
        let len = self.bound[space].1.len();
        let last = count.unwrap_or(len / stride.max(1)).saturating_sub(1);
        let Value::Lanes(i) = frame.get(index)? else {
            return Err(Error::Internal("an index that is a pointer".into()));
        };
        Ok(Element {
            space,
            indices: &i.words,
            stride,
            last,
        })
    }

    /// A load through direct access `pointer`.
    pub(super) fn load_direct(
        &mut self,
        frame: &mut Frame<'_>,
        pointer: Handle<E>,
    ) -> Result<Lanes> {
        let lanes = self.lanes;
        let bound = self.bound;
        let at = self.element(frame, pointer)?;
        let words = match &bound[at.space].1 {
            Words::Read(w) => match at.run(w.len()) {
                Some(run) => super::lanes::copied(&w[run]),
                None if w.is_empty() => super::lanes::zeroed(lanes),
                None => super::lanes::collect((0..lanes).map(|l| w[at.word(l).min(w.len() - 1)])),
            },
            Words::Write(w) if !w.is_empty() => super::lanes::collect((0..lanes).map(|l| {
                w[at.word(l).min(w.len() - 1)].load(std::sync::atomic::Ordering::Relaxed)
            })),
            _ => super::lanes::zeroed(lanes),
        };
        Ok(Lanes { width: 1, words })
    }

    /// A store of `value` through direct access `pointer` for the lanes in `mask`.
    pub(super) fn store_direct(
        &mut self,
        frame: &mut Frame<'_>,
        pointer: Handle<E>,
        value: &Lanes,
        mask: &[bool],
    ) -> Result<()> {
        let bound = self.bound;
        let at = self.element(frame, pointer)?;
        if let Words::Write(w) = &bound[at.space].1 {
            if let (Some(run), true) = (at.run(w.len()), super::lanes::all(mask.iter().copied())) {
                w[run]
                    .iter()
                    .zip(&value.words)
                    .for_each(|(cell, &v)| cell.store(v, std::sync::atomic::Ordering::Relaxed));
                return Ok(());
            }
            for (l, (&v, _)) in value
                .words
                .iter()
                .zip(mask)
                .enumerate()
                .filter(|(_, (_, &m))| m)
            {
                if let Some(cell) = w.get(at.word(l)) {
                    cell.store(v, std::sync::atomic::Ordering::Relaxed);
                }
            }
        }
        Ok(())
    }
}
