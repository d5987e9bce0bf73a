//! Reductions on the CPU, floats accumulated in f64 and integers in their own type (a sum
//! wraps), rows (or long rows' chunks) in parallel.

use crate::base::par::*;

use super::{Reduce, ReduceOp};
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::{integer_bits, out_words, put_integer, CHUNK};
use crate::ops::common::math::sum_lanes;
use crate::{DType, Result};

/// Reduce the middle axis of a contiguous `[outer, len, inner]` input.
pub(super) fn reduce(call: &Reduce<'_>) -> Result<()> {
    if call.dtype.is_integer() {
        return reduce_integers(call);
    }
    let (op, x, out) = (call.op, call.x, call.out);
    let (outer, len, inner) = (call.outer, call.len, call.inner);
    let xs = read_guard(x.buf)?;
    let mut os = write_guard(out.buf)?;
    let xf: &[f32] = &bytemuck::cast_slice(&xs)[x.layout.offset..];
    let outputs = out_words(&mut os, &out);
    let encode = |(v, idx): (f64, usize)| {
        if op == ReduceOp::Argmax {
            idx as u32
        } else {
            (v as f32).to_bits()
        }
    };
    if inner == 1 && matches!(op, ReduceOp::Sum | ReduceOp::Mean) {
        // Contiguous rows: vectorised f64 sums, long rows split into parallel chunks.
        let scale = if op == ReduceOp::Mean {
            1.0 / len as f64
        } else {
            1.0
        };
        let rows = &xf[..outer * len];
        if outer >= crate::base::par::current_num_threads() {
            outputs
                .par_iter_mut()
                .zip(rows.par_chunks(len))
                .for_each(|(o, row)| *o = encode((sum_lanes(row) * scale, 0)));
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
    let partial_op = if op == ReduceOp::Mean {
        ReduceOp::Sum
    } else {
        op
    };
    for (g, o) in outputs.iter_mut().enumerate() {
        let base = (g / inner) * len * inner + g % inner;
        let partials: Vec<(f64, usize)> = (0..len.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let (j0, j1) = (c * CHUNK, ((c + 1) * CHUNK).min(len));
                let (v, idx) =
                    partial_op.reference((j0..j1).map(|j| f64::from(xf[base + j * inner])));
                (v, j0 + idx)
            })
            .collect();
        let (v, best) = partial_op.reference(partials.iter().map(|p| p.0));
        let v = if op == ReduceOp::Mean {
            v / len as f64
        } else {
            v
        };
        *o = encode((v, partials[best].1));
    }
    Ok(())
}

/// `op` over integers given as order keys (see [`reduce_integers`]): `(value, index)`, the
/// index meaningful for argmax (the first largest). A sum wraps; a mean never comes here
/// (integers are cast first).
fn fold_integers(op: ReduceOp, values: impl Iterator<Item = u64>, flip: u64) -> (u64, usize) {
    let mut acc = match op {
        ReduceOp::Min => u64::MAX,
        ReduceOp::Prod => 1,
        _ => 0,
    };
    let mut best = 0;
    for (i, v) in values.enumerate() {
        match op {
            // The sum and product of the values themselves: undo the key's flip. The low 32
            // bits of either are those of the 32-bit types' wrapping results.
            ReduceOp::Sum | ReduceOp::Mean => acc = acc.wrapping_add(v ^ flip),
            ReduceOp::Prod => acc = acc.wrapping_mul(v ^ flip),
            ReduceOp::Max => acc = acc.max(v),
            ReduceOp::Min => acc = acc.min(v),
            ReduceOp::Argmax if v > acc || i == 0 => (acc, best) = (v, i),
            ReduceOp::Argmax => {}
        }
    }
    (
        if matches!(op, ReduceOp::Sum | ReduceOp::Mean | ReduceOp::Prod) {
            acc
        } else {
            acc ^ flip
        },
        best,
    )
}

/// [`reduce`] of i32, u32 or i64 values, one loop for all: each value is read as an unsigned
/// 64-bit key (an i32 or i64 with its sign bit flipped orders as its value does), so max,
/// min and argmax compare keys, and a sum adds the plain bits (wrapping; the low 32 bits of a
/// 32-bit type's sum are its wrapping sum). Argmax writes u32 indices, the other ops values
/// of the input's dtype.
fn reduce_integers(call: &Reduce<'_>) -> Result<()> {
    let (x, out, wide) = (call.x, call.out, call.dtype == DType::I64);
    let flip: u64 = match call.dtype {
        DType::I32 => 1 << 31,
        DType::I64 => 1 << 63,
        _ => 0,
    };
    let per = if wide { 2 } else { 1 };
    let xs = read_guard(x.buf)?;
    let mut os = write_guard(out.buf)?;
    let xw: &[u32] = &xs[x.layout.offset * per..];
    let (len, inner) = (call.len, call.inner);
    let at = |g: usize, j: usize| {
        integer_bits(xw, (g / inner) * len * inner + g % inner + j * inner, wide) ^ flip
    };
    let results = fold_outputs(call, at, flip);
    let width = if call.op == ReduceOp::Argmax { 1 } else { per };
    let words = &mut os[out.layout.offset * width..][..results.len() * width];
    for (o, (v, idx)) in words.chunks_mut(width).zip(results) {
        put_integer(
            o,
            if call.op == ReduceOp::Argmax {
                idx as u64
            } else {
                v
            },
        );
    }
    Ok(())
}

/// Each output's `(value, index)` of [`reduce_integers`]: one output per task, or a few long
/// rows in chunks whose partial results combine in order.
fn fold_outputs(
    call: &Reduce<'_>,
    at: impl Fn(usize, usize) -> u64 + Sync,
    flip: u64,
) -> Vec<(u64, usize)> {
    let (op, len, outputs) = (call.op, call.len, call.outer * call.inner);
    if outputs >= crate::base::par::current_num_threads() || len <= CHUNK {
        return (0..outputs)
            .into_par_iter()
            .map(|g| fold_integers(op, (0..len).map(|j| at(g, j)), flip))
            .collect();
    }
    let combine = |g: usize| {
        let partials: Vec<(u64, usize)> = (0..len.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let (j0, j1) = (c * CHUNK, ((c + 1) * CHUNK).min(len));
                let (v, idx) = fold_integers(op, (j0..j1).map(|j| at(g, j)), flip);
                (v, j0 + idx)
            })
            .collect();
        // Back to keys: extremes to be compared again, sums and products to be combined as
        // their bits.
        let (v, best) = fold_integers(op, partials.iter().map(|p| p.0 ^ flip), flip);
        (v, partials[best].1)
    };
    (0..outputs).map(combine).collect()
}
