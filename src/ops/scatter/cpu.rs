//! Scatter on the CPU: every update in order, on one thread (updates meeting at one element
//! must apply in order; the kernels of the other backends walk them the same way).

use super::{Form, Scatter, ScatterReduction};
use crate::base::layout::contiguous_strides;
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::{index_value, integer_bits, put_integer};
use crate::ops::gather::{resolve_index, IndexMode};
use crate::{DType, Result};

pub(super) fn scatter(op: &Scatter<'_>) -> Result<()> {
    let per = if op.dtype == DType::I64 { 2 } else { 1 };
    let (is, us) = (read_guard(op.indices.buf)?, read_guard(op.updates.buf)?);
    let mut os = write_guard(op.out.buf)?;
    let words = &is[op.indices.layout.offset..];
    let upd = &us[op.updates.layout.offset * per..][..op.updates.layout.numel() * per];
    let out = &mut os[op.out.layout.offset * per..][..op.out.layout.numel() * per];
    let index = |j: usize, len: usize| resolve_index(index_value(words, op.kind, j), len, SKIP);
    let mut meet = |target: usize, update: usize| {
        let old = &mut out[target * per..(target + 1) * per];
        combine(
            op.dtype,
            op.reduction,
            old,
            &upd[update * per..(update + 1) * per],
        );
    };
    match &op.form {
        Form::Elements { data, shape, axis } => {
            let (ds, is) = (contiguous_strides(data), contiguous_strides(shape));
            for p in 0..op.updates.layout.numel() {
                let mut at = 0;
                for k in (0..shape.len()).filter(|&k| k != *axis) {
                    at += p / is[k] % shape[k] * ds[k];
                }
                if let Some(t) = index(p, data[*axis]) {
                    meet(at + t * ds[*axis], p);
                }
            }
        }
        Form::Nd { data, depth, count } => {
            let slice: usize = data[*depth..].iter().product();
            let ds = contiguous_strides(data);
            for t in 0..*count {
                let at: Option<usize> = (0..*depth)
                    .map(|c| index(t * depth + c, data[c]).map(|e| e * ds[c]))
                    .sum();
                if let Some(at) = at {
                    for s in 0..slice {
                        meet(at + s, t * slice + s);
                    }
                }
            }
        }
    }
    Ok(())
}

/// Out-of-range indices pick nothing: their updates are skipped.
const SKIP: IndexMode = IndexMode::Fill;

/// `old` (one element's words) met by `update` in the element's own type: f32, or an integer
/// wrapping (computed in i64, whose low bits are a 32-bit type's wrapping result).
fn combine(dtype: DType, reduction: ScatterReduction, old: &mut [u32], update: &[u32]) {
    use ScatterReduction as R;
    if reduction == R::None {
        old.copy_from_slice(update);
        return;
    }
    if dtype == DType::F32 {
        let (a, b) = (f32::from_bits(old[0]), f32::from_bits(update[0]));
        let nan = a.is_nan() || b.is_nan();
        old[0] = match reduction {
            R::Add => a + b,
            R::Mul => a * b,
            R::Max | R::Min if nan => f32::NAN,
            // As the kernels: the update where it is larger (smaller), else the element.
            R::Max if b > a => b,
            R::Min if b < a => b,
            _ => a,
        }
        .to_bits();
        return;
    }
    let value = |w: &[u32]| match dtype {
        DType::I32 => i64::from(w[0] as i32),
        DType::U32 => i64::from(w[0]),
        _ => integer_bits(w, 0, true) as i64,
    };
    let (a, b) = (value(old), value(update));
    let v = match reduction {
        R::Add => a.wrapping_add(b),
        R::Mul => a.wrapping_mul(b),
        R::Max => a.max(b),
        _ => a.min(b),
    };
    put_integer(old, v as u64);
}
