//! `Access` and `AccessIndex`: into the array, vector or struct a pointer points to (a new
//! pointer), or into a value (its words). Indices are clamped into fixed-size arrays and
//! vectors, and runtime-sized arrays end where their memory ends.

use std::borrow::Cow;

use crate::hal::wgsl_overrides::array_length;
use naga::{ArraySize, Expression as E, Handle, Scalar, TypeInner};

use super::eval::Index;
use super::exec::{Exec, Frame, Value};
use super::half::is_half;
use super::lanes::{collect, zeroed, Lanes};
use super::memory::Ptr;
use crate::{Error, Result};

/// Where the element at an index starts, in words, and how many words it takes; the
/// number of elements (`None`: runtime-sized).
struct Step {
    stride: usize,
    width: usize,
    count: Option<usize>,
    /// A struct member's fixed offset (constant indices into structs).
    member_offset: Option<usize>,
    /// Whether the element is a lone f16, which a pointer reaches by its offset in halves
    /// (half.rs): `stride` and `member_offset` then count halves.
    half: bool,
}

impl Exec<'_, '_, '_> {
    /// The step into the composite `inner` at constant index `i` (or any index).
    fn step(&self, inner: &TypeInner, i: Option<u32>) -> Result<Step> {
        let prog = self.prog;
        Ok(match *inner {
            TypeInner::Vector { size, scalar } => Step {
                stride: 1,
                width: 1,
                count: Some(size as usize),
                member_offset: None,
                half: scalar == Scalar::F16,
            },
            TypeInner::Matrix { columns, rows, .. } => {
                let stride = super::matrix::column_words(rows);
                Step {
                    stride,
                    width: rows as usize,
                    count: Some(columns as usize),
                    member_offset: None,
                    half: false,
                }
            }
            TypeInner::Array { base, size, stride } => {
                let count = array_length(&prog.module, size).map(|n| n as usize);
                if is_half(&prog.module.types[base].inner) {
                    return Ok(Step {
                        stride: 1,
                        width: 1,
                        count,
                        member_offset: None,
                        half: true,
                    });
                }
                Step {
                    stride: prog.stride(base, stride),
                    width: prog.words(base),
                    count,
                    member_offset: None,
                    half: false,
                }
            }
            TypeInner::Struct { ref members, .. } => {
                let m = i
                    .and_then(|i| members.get(i as usize))
                    .ok_or_else(|| Error::Internal("a struct indexed at run time".into()))?;
                let width = match prog.module.types[m.ty].inner {
                    TypeInner::Array {
                        size: ArraySize::Dynamic,
                        ..
                    } => 0,
                    ref t => prog.words_of(t),
                };
                let half = is_half(&prog.module.types[m.ty].inner);
                let offset = m.offset as usize / if half { 2 } else { 4 };
                Step {
                    stride: 0,
                    width,
                    count: None,
                    member_offset: Some(offset),
                    half,
                }
            }
            _ => {
                return Err(Error::Internal(format!(
                    "the cpu WGSL executor cannot index {inner:?}"
                )))
            }
        })
    }

    /// The pointee (for a pointer) or the type (for a value) of expression `base`.
    pub(super) fn composite<'f>(&'f self, frame: &'f Frame<'_>, base: Handle<E>) -> &'f TypeInner {
        match *self.ty(frame, base) {
            TypeInner::Pointer { base, .. } => &self.prog.module.types[base].inner,
            ref t => t,
        }
    }

    /// `base[index]` for expression `h`.
    pub(super) fn access(
        &mut self,
        frame: &mut Frame<'_>,
        base: Handle<E>,
        index: Index,
    ) -> Result<Value> {
        let constant = match index {
            Index::Constant(i) => Some(i),
            Index::Dynamic(_) => None,
        };
        let step = match *self.ty(frame, base) {
            TypeInner::ValuePointer {
                size: Some(size),
                scalar,
                ..
            } => Step {
                stride: 1,
                width: 1,
                count: Some(size as usize),
                member_offset: None,
                half: scalar == Scalar::F16,
            },
            _ => self.step(self.composite(frame, base), constant)?,
        };
        let indices: Cow<'_, [u32]> = match index {
            Index::Constant(_) => Cow::Borrowed(&[]),
            Index::Dynamic(e) => match frame.lanes(e)? {
                v if v.width == 1 => Cow::Borrowed(&v.words),
                v => Cow::Owned(v.column(0).collect()),
            },
        };
        match frame.get(base)? {
            Value::Ptr(p) => Ok(Value::Ptr(self.step_ptr(p, &step, &indices, index))),
            Value::Lanes(v) => Ok(Value::Lanes(step_lanes(
                v, &step, self.lanes, &indices, index,
            ))),
        }
    }

    /// `p[index]`: the pointer to the element (or member) `step` reaches in each lane.
    fn step_ptr(&mut self, p: &Ptr, step: &Step, indices: &[u32], index: Index) -> Ptr {
        // A lone f16 is reached in halves: the composite's offset, in words, doubled.
        let scale = if step.half { 2 } else { 1 };
        let len = self.memories().len(p.space) * scale as usize;
        let offsets = match step.member_offset {
            Some(m) => collect(
                p.offsets
                    .iter()
                    .map(|&off| off.saturating_mul(scale) + m as u32),
            ),
            None if step.half => {
                let halves = collect(p.offsets.iter().map(|&off| off.saturating_mul(2)));
                let offsets = step_pointer(&halves, step, len, indices, index);
                super::lanes::spare(halves);
                offsets
            }
            None => step_pointer(&p.offsets, step, len, indices, index),
        };
        Ptr {
            space: p.space,
            offsets,
            whole: false,
        }
    }

    /// `arrayLength(pointer)`: the elements of a runtime-sized array that its buffer holds.
    pub(super) fn array_length(
        &mut self,
        frame: &mut Frame<'_>,
        pointer: Handle<E>,
    ) -> Result<Lanes> {
        // Elements per word: two for an array of f16 (2-byte stride), else one per stride.
        let (stride, per_word) = match *self.composite(frame, pointer) {
            TypeInner::Array { base, .. } if is_half(&self.prog.module.types[base].inner) => (1, 2),
            TypeInner::Array { base, stride, .. } => (self.prog.stride(base, stride), 1),
            _ => {
                return Err(Error::Internal(
                    "arrayLength of something other than an array".into(),
                ))
            }
        };
        let p = frame.ptr(pointer)?;
        let len = self.memories().len(p.space);
        if p.whole {
            return Ok(Lanes::splat(
                self.lanes,
                &[(per_word * len / stride.max(1)) as u32],
            ));
        }
        let words = p
            .offsets
            .iter()
            .map(|&off| (per_word * len.saturating_sub(off as usize) / stride.max(1)) as u32)
            .collect();
        Ok(Lanes { width: 1, words })
    }
}

/// `v[index]` for a value of `lanes` lanes: the words `step` reaches in each lane.
fn step_lanes(v: &Lanes, step: &Step, lanes: usize, indices: &[u32], index: Index) -> Lanes {
    let at = |l: usize| match index {
        Index::Constant(i) => i,
        Index::Dynamic(_) => indices[l],
    };
    if step.width == 1 && !matches!(index, Index::Dynamic(_)) {
        // One component of each lane (`g.x`, a struct's scalar member).
        let start = step.member_offset.unwrap_or_else(|| {
            (at(0) as usize).min(step.count.unwrap_or(1).saturating_sub(1)) * step.stride
        });
        let words = if start < v.width {
            collect(v.words.chunks_exact(v.width).map(|w| w[start]))
        } else {
            zeroed(lanes)
        };
        return Lanes { width: 1, words };
    }
    let mut out = Lanes::zeros(lanes, step.width);
    for l in 0..lanes {
        let start = match step.member_offset {
            Some(m) => m,
            None => (at(l) as usize).min(step.count.unwrap_or(1).saturating_sub(1)) * step.stride,
        };
        let src = v.lane(l);
        let n = step.width.min(src.len().saturating_sub(start));
        out.lane_mut(l)[..n].copy_from_slice(&src[start..start + n]);
    }
    out
}

/// Each lane's pointer `offsets` moved to the element at its index (the constant one, or
/// `indices`), clamped into the array; a runtime-sized array ends where its memory of `len`
/// words ends.
fn step_pointer(
    offsets: &[u32],
    step: &Step,
    len: usize,
    indices: &[u32],
    index: Index,
) -> Vec<u32> {
    let stride = step.stride as u32;
    let len = len as u32;
    // One loop per case, so that each is a plain loop over the lanes.
    match (step.count, index) {
        (Some(n), Index::Constant(i)) => {
            let d = i.min(n.saturating_sub(1) as u32) * stride;
            collect(offsets.iter().map(|&off| off + d))
        }
        (Some(n), Index::Dynamic(_)) => {
            let last = n.saturating_sub(1) as u32;
            collect(
                offsets
                    .iter()
                    .zip(indices)
                    .map(|(&off, &i)| off + i.min(last) * stride),
            )
        }
        (None, Index::Constant(i)) => collect(offsets.iter().map(|&off| {
            off + i.min((len.saturating_sub(off) / stride.max(1)).saturating_sub(1)) * stride
        })),
        (None, Index::Dynamic(_)) if stride <= 1 => collect(
            offsets
                .iter()
                .zip(indices)
                .map(|(&off, &i)| off + i.min(len.saturating_sub(off).saturating_sub(1)) * stride),
        ),
        (None, Index::Dynamic(_)) => collect(offsets.iter().zip(indices).map(|(&off, &i)| {
            off + i.min((len.saturating_sub(off) / stride).saturating_sub(1)) * stride
        })),
    }
}
