//! Reductions on the CPU, floats accumulated in f64 and integers in their own type (a sum
//! wraps), rows (or long rows' chunks) in parallel.

use crate::base::par::*;

use super::{Reduce, ReduceOp};
use crate::ops::common::math::sum_lanes;
use crate::ops::common::cpu::{out_words, CHUNK};
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::elementwise::Integer;
use crate::{DType, Result};

/// Reduce the middle axis of a contiguous `[outer, len, inner]` input.
pub(super) fn reduce(call: &Reduce<'_>) -> Result<()> {
    match call.dtype {
        DType::I32 => return reduce_integers::<i32>(call),
        DType::U32 => return reduce_integers::<u32>(call),
        _ => {}
    }
    let (op, x, out) = (call.op, call.x, call.out);
    let (outer, len, inner) = (call.outer, call.len, call.inner);
    let xs = read_guard(x.buf)?;
    let mut os = write_guard(out.buf)?;
    let xf: &[f32] = &bytemuck::cast_slice(&xs)[x.layout.offset..];
    let outputs = out_words(&mut os, &out);
    let encode = |(v, idx): (f64, usize)| if op == ReduceOp::Argmax { idx as u32 } else { (v as f32).to_bits() };
    if inner == 1 && matches!(op, ReduceOp::Sum | ReduceOp::Mean) {
        // Contiguous rows: vectorised f64 sums, long rows split into parallel chunks.
        let scale = if op == ReduceOp::Mean { 1.0 / len as f64 } else { 1.0 };
        let rows = &xf[..outer * len];
        if outer >= crate::base::par::current_num_threads() {
            outputs.par_iter_mut().zip(rows.par_chunks(len)).for_each(|(o, row)| *o = encode((sum_lanes(row) * scale, 0)));
        } else {
            for (o, row) in outputs.iter_mut().zip(rows.chunks(len)) {
                let total: f64 = row.par_chunks(CHUNK).map(sum_lanes).sum();
                *o = encode((total * scale, 0));
            }
        }
        return Ok(());
    }
    if outer * inner >= crate::base::par::current_num_threads() || len <= CHUNK {
        outputs.par_iter_mut().enumerate().for_each(|(g, o)| {
            let base = (g / inner) * len * inner + g % inner;
            *o = encode(op.reference((0..len).map(|j| f64::from(xf[base + j * inner]))));
        });
        return Ok(());
    }
    // Few long rows: reduce chunks of each row in parallel, then combine the partials.
    let partial_op = if op == ReduceOp::Mean { ReduceOp::Sum } else { op };
    for (g, o) in outputs.iter_mut().enumerate() {
        let base = (g / inner) * len * inner + g % inner;
        let partials: Vec<(f64, usize)> = (0..len.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let (j0, j1) = (c * CHUNK, ((c + 1) * CHUNK).min(len));
                let (v, idx) = partial_op.reference((j0..j1).map(|j| f64::from(xf[base + j * inner])));
                (v, j0 + idx)
            })
            .collect();
        let (v, best) = partial_op.reference(partials.iter().map(|p| p.0));
        let v = if op == ReduceOp::Mean { v / len as f64 } else { v };
        *o = encode((v, partials[best].1));
    }
    Ok(())
}

/// `op` over integers in their own type: `(value, index)`, the index meaningful for argmax
/// (the first largest). A sum wraps; a mean never comes here (integers are cast first).
fn fold_integers<I: Integer>(op: ReduceOp, values: impl Iterator<Item = I>) -> (I, usize) {
    let mut acc = match op {
        ReduceOp::Sum | ReduceOp::Mean => I::zero(),
        ReduceOp::Max | ReduceOp::Argmax => I::min_value(),
        ReduceOp::Min => I::max_value(),
    };
    let mut best = 0;
    for (i, v) in values.enumerate() {
        match op {
            ReduceOp::Sum | ReduceOp::Mean => acc = acc.wrapping_add(&v),
            ReduceOp::Max => acc = acc.max(v),
            ReduceOp::Min => acc = acc.min(v),
            ReduceOp::Argmax if v > acc || i == 0 => (acc, best) = (v, i),
            ReduceOp::Argmax => {}
        }
    }
    (acc, best)
}

/// [`reduce`] of i32 or u32 values: one output per task, or a few long rows in chunks whose
/// partial results combine in order (wrapping addition, max and min are associative).
fn reduce_integers<I: Integer>(call: &Reduce<'_>) -> Result<()> {
    let (op, x, out) = (call.op, call.x, call.out);
    let (len, inner) = (call.len, call.inner);
    let xs = read_guard(x.buf)?;
    let mut os = write_guard(out.buf)?;
    let xi: &[I] = &bytemuck::cast_slice(&xs)[x.layout.offset..];
    let outputs = out_words(&mut os, &out);
    let encode = |(v, idx): (I, usize)| if op == ReduceOp::Argmax { idx as u32 } else { bytemuck::cast(v) };
    let at = |g: usize, j: usize| xi[(g / inner) * len * inner + g % inner + j * inner];
    if call.outer * inner >= crate::base::par::current_num_threads() || len <= CHUNK {
        outputs.par_iter_mut().enumerate().for_each(|(g, o)| *o = encode(fold_integers(op, (0..len).map(|j| at(g, j)))));
        return Ok(());
    }
    for (g, o) in outputs.iter_mut().enumerate() {
        let partials: Vec<(I, usize)> = (0..len.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let (j0, j1) = (c * CHUNK, ((c + 1) * CHUNK).min(len));
                let (v, idx) = fold_integers(op, (j0..j1).map(|j| at(g, j)));
                (v, j0 + idx)
            })
            .collect();
        let (v, best) = fold_integers(op, partials.iter().map(|p| p.0));
        *o = encode((v, partials[best].1));
    }
    Ok(())
}
