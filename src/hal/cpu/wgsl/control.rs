//! Divergent control flow under lane masks: `if`, `switch`, loops, `return`, calls of the
//! module's own functions, and atomics (applied lane by lane, in lane order).

use naga::{AtomicFunction, Expression as E, Handle, SwitchValue};

use super::exec::{Exec, Exit, Frame, Value};
use super::lanes::Lanes;
use crate::{Error, Result};

fn or(into: &mut [bool], from: &[bool]) {
    for (a, b) in into.iter_mut().zip(from) {
        *a |= *b;
    }
}

impl Exec<'_, '_, '_> {
    /// `if`: each branch for the lanes that take it; afterwards the lanes still active in either.
    pub(super) fn branch(
        &mut self,
        frame: &mut Frame<'_>,
        condition: Handle<E>,
        accept: &naga::Block,
        reject: &naga::Block,
        mask: &mut [bool],
    ) -> Result<()> {
        let c = &frame.lanes(condition)?.words;
        if super::lanes::all(mask.iter().zip(c).map(|(&m, &c)| !m || c != 0)) {
            // Every active lane takes the accept branch (a bounds check that all pass).
            return self.block(frame, accept, mask);
        }
        let mut yes: Vec<bool> = mask.iter().zip(c).map(|(&m, &c)| m && c != 0).collect();
        let mut no: Vec<bool> = mask.iter().zip(c).map(|(&m, &c)| m && c == 0).collect();
        self.block(frame, accept, &mut yes)?;
        self.block(frame, reject, &mut no)?;
        for (m, (y, n)) in mask.iter_mut().zip(yes.iter().zip(&no)) {
            *m = *y || *n;
        }
        Ok(())
    }

    /// `switch`: each case for the lanes whose selector it matches (or that fall through into it).
    pub(super) fn switch(
        &mut self,
        frame: &mut Frame<'_>,
        selector: Handle<E>,
        cases: &[naga::SwitchCase],
        mask: &mut [bool],
    ) -> Result<()> {
        let sel: Vec<u32> = frame.lanes(selector)?.column(0).collect();
        let value = |v: &SwitchValue| match *v {
            SwitchValue::I32(x) => Some(x as u32),
            SwitchValue::U32(x) => Some(x),
            SwitchValue::Default => None,
        };
        let listed: Vec<u32> = cases.iter().filter_map(|c| value(&c.value)).collect();
        let n = mask.len();
        frame.exits.push(Exit {
            is_loop: false,
            broke: vec![false; n],
            continued: vec![false; n],
        });
        let (mut done, mut falling) = (vec![false; n], vec![false; n]);
        for case in cases {
            let mut m: Vec<bool> = (0..n)
                .map(|l| {
                    falling[l]
                        || (mask[l]
                            && value(&case.value)
                                .map_or(!listed.contains(&sel[l]), |v| v == sel[l]))
                })
                .collect();
            self.block(frame, &case.body, &mut m)?;
            if case.fall_through {
                falling = m;
            } else {
                or(&mut done, &m);
                falling = vec![false; n];
            }
        }
        let exit = frame
            .exits
            .pop()
            .ok_or_else(|| Error::Internal("lost a switch".into()))?;
        or(&mut done, &falling);
        or(&mut done, &exit.broke);
        mask.copy_from_slice(&done);
        Ok(())
    }

    /// A loop: the body, then the continuing block, until every lane has broken out.
    pub(super) fn repeat(
        &mut self,
        frame: &mut Frame<'_>,
        body: &naga::Block,
        continuing: &naga::Block,
        break_if: Option<Handle<E>>,
        mask: &mut [bool],
    ) -> Result<()> {
        let n = mask.len();
        frame.exits.push(Exit {
            is_loop: true,
            broke: vec![false; n],
            continued: vec![false; n],
        });
        let mut active = mask.to_vec();
        while active.iter().any(|&a| a) {
            self.block(frame, body, &mut active)?;
            let exit = frame
                .exits
                .last_mut()
                .ok_or_else(|| Error::Internal("lost a loop".into()))?;
            or(&mut active, &exit.continued);
            exit.continued.fill(false);
            self.block(frame, continuing, &mut active)?;
            if let Some(b) = break_if {
                self.ensure(frame, b)?;
                let stop: Vec<bool> = frame.lanes(b)?.column(0).map(|w| w != 0).collect();
                let exit = frame
                    .exits
                    .last_mut()
                    .ok_or_else(|| Error::Internal("lost a loop".into()))?;
                for l in 0..n {
                    if active[l] && stop[l] {
                        exit.broke[l] = true;
                        active[l] = false;
                    }
                }
            }
        }
        let exit = frame
            .exits
            .pop()
            .ok_or_else(|| Error::Internal("lost a loop".into()))?;
        mask.copy_from_slice(&exit.broke);
        Ok(())
    }

    /// `return`: the lanes in `mask` keep their value and stop.
    pub(super) fn ret(
        &mut self,
        frame: &mut Frame<'_>,
        value: Option<Handle<E>>,
        mask: &mut [bool],
    ) -> Result<()> {
        if let Some(v) = value {
            let v = frame.lanes(v)?.clone();
            let ret = frame
                .ret
                .get_or_insert_with(|| Lanes::zeros(v.count(), v.width));
            for (l, &m) in mask.iter().enumerate() {
                if m {
                    ret.lane_mut(l).copy_from_slice(v.lane(l));
                }
            }
        }
        mask.fill(false);
        // Lanes that return also leave every loop and switch they are in.
        Ok(())
    }

    /// A call of one of the module's functions for the lanes in `mask`.
    pub(super) fn call_statement(
        &mut self,
        frame: &mut Frame<'_>,
        function: Handle<naga::Function>,
        arguments: &[Handle<E>],
        result: Option<Handle<E>>,
        mask: &mut [bool],
    ) -> Result<()> {
        let args = arguments
            .iter()
            .map(|&a| frame.get(a).cloned())
            .collect::<Result<Vec<Value>>>()?;
        let mut lanes = mask.to_vec();
        let value = self.call(Some(function), args, &mut lanes)?;
        if let Some(r) = result {
            let v = value.ok_or_else(|| Error::Internal("a function returned no value".into()))?;
            frame.values[r.index()] = Some(Value::Lanes(v));
        }
        Ok(())
    }

    /// An atomic read-modify-write for the lanes in `mask`, one lane after another.
    pub(super) fn atomic(
        &mut self,
        frame: &mut Frame<'_>,
        pointer: Handle<E>,
        fun: &AtomicFunction,
        value: Handle<E>,
        result: Option<Handle<E>>,
        mask: &mut [bool],
    ) -> Result<()> {
        let kind = self.kind(frame, value);
        let ptr = frame.ptr(pointer)?.clone();
        let v = frame.lanes(value)?.clone();
        let compare = match fun {
            AtomicFunction::Exchange { compare: Some(c) } => Some(frame.lanes(*c)?.clone()),
            _ => None,
        };
        let (old, exchanged) = self
            .memories()
            .atomic(&ptr, fun, kind, &v, compare.as_ref(), mask);
        if let Some(r) = result {
            let out = match compare {
                // `atomicCompareExchangeWeak` gives { old_value, exchanged }.
                Some(_) => Lanes {
                    width: 2,
                    words: old
                        .words
                        .iter()
                        .zip(&exchanged.words)
                        .flat_map(|(&o, &e)| [o, e])
                        .collect(),
                },
                None => old,
            };
            frame.values[r.index()] = Some(Value::Lanes(out));
        }
        Ok(())
    }
}
