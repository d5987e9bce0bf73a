//! Reductions on the CPU, floats accumulated in f64 and integers in their own type (a sum
//! wraps), rows (or long rows' chunks) in parallel.

use crate::base::par::*;

use super::{Reduce, ReduceOp};
use crate::ops::common::math::sum_lanes;
use crate::ops::common::cpu::{out_words, CHUNK};
use crate::hal::cpu::{read_guard, write_guard};
use crate::{DType, Result};

/// Reduce the middle axis of a contiguous `[outer, len, inner]` input.
pub(super) fn reduce(call: &Reduce<'_>) -> Result<()> {
    if matches!(call.dtype, DType::I32 | DType::U32) {
        return reduce_integers(call);
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

/// `op` over 32-bit integers given as order keys (see [`reduce_integers`]): `(value, index)`,
/// the index meaningful for argmax (the first largest). A sum wraps; a mean never comes here
/// (integers are cast first).
fn fold_integers(op: ReduceOp, values: impl Iterator<Item = u32>, flip: u32) -> (u32, usize) {
    let mut acc = match op {
        ReduceOp::Sum | ReduceOp::Mean => 0,
        ReduceOp::Max | ReduceOp::Argmax => 0,
        ReduceOp::Min => u32::MAX,
    };
    let mut best = 0;
    for (i, v) in values.enumerate() {
        match op {
            // The sum of the values themselves: undo the key's flip.
            ReduceOp::Sum | ReduceOp::Mean => acc = acc.wrapping_add(v ^ flip),
            ReduceOp::Max => acc = acc.max(v),
            ReduceOp::Min => acc = acc.min(v),
            ReduceOp::Argmax if v > acc || i == 0 => (acc, best) = (v, i),
            ReduceOp::Argmax => {}
        }
    }
    (if matches!(op, ReduceOp::Sum | ReduceOp::Mean) { acc } else { acc ^ flip }, best)
}

/// [`reduce`] of i32 or u32 values, one loop for both: each value is read as an unsigned key
/// (an i32 with its sign bit flipped orders as its value does), so max, min and argmax
/// compare keys, and a sum adds the plain bits (wrapping, the same bits for either type).
/// One output per task, or a few long rows in chunks whose partial results combine in order.
fn reduce_integers(call: &Reduce<'_>) -> Result<()> {
    let (op, x, out) = (call.op, call.x, call.out);
    let (len, inner) = (call.len, call.inner);
    let flip = if call.dtype == DType::I32 { 0x8000_0000 } else { 0 };
    let xs = read_guard(x.buf)?;
    let mut os = write_guard(out.buf)?;
    let xw: &[u32] = &xs[x.layout.offset..];
    let outputs = out_words(&mut os, &out);
    let encode = |(v, idx): (u32, usize)| if op == ReduceOp::Argmax { idx as u32 } else { v };
    let at = |g: usize, j: usize| xw[(g / inner) * len * inner + g % inner + j * inner] ^ flip;
    if call.outer * inner >= crate::base::par::current_num_threads() || len <= CHUNK {
        outputs.par_iter_mut().enumerate().for_each(|(g, o)| *o = encode(fold_integers(op, (0..len).map(|j| at(g, j)), flip)));
        return Ok(());
    }
    for (g, o) in outputs.iter_mut().enumerate() {
        let partials: Vec<(u32, usize)> = (0..len.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let (j0, j1) = (c * CHUNK, ((c + 1) * CHUNK).min(len));
                let (v, idx) = fold_integers(op, (j0..j1).map(|j| at(g, j)), flip);
                (v, j0 + idx)
            })
            .collect();
        // Back to keys: extremes to be compared again, sums to be added as their bits.
        let keys = partials.iter().map(|p| p.0 ^ flip);
        let (v, best) = fold_integers(op, keys, flip);
        *o = encode((v, partials[best].1));
    }
    Ok(())
}
