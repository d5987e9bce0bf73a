//! Reductions on the CPU, floats accumulated in f64 and integers in their own type (a sum
//! wraps), rows (or long rows' chunks) in parallel.

use crate::base::par::*;

use super::{Reduce, ReduceOp};
use crate::ops::common::math::sum_lanes;
use crate::ops::common::cpu::{elements, out_elements, out_words, Stored, CHUNK};
use crate::hal::cpu::{read_guard, write_guard};
use crate::{DType, Result};

/// Reduce the middle axis of a contiguous `[outer, len, inner]` input.
pub(super) fn reduce(call: &Reduce<'_>) -> Result<()> {
    match call.dtype {
        DType::I32 => return reduce_integers::<u32>(call, 0x8000_0000),
        DType::U32 => return reduce_integers::<u32>(call, 0),
        DType::I64 => return reduce_integers::<[u32; 2]>(call, 1 << 63),
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

/// An integer type as the CPU stores it, read as unsigned bits: an i32 or i64 with its sign
/// bit flipped orders as its value does, so max, min and argmax compare keys, and a sum adds
/// the plain bits (wrapping, the same bits for signed and unsigned types).
trait Keyed: Stored {
    /// The unsigned type of the bits.
    type Key: num_traits::PrimInt + num_traits::WrappingAdd + Send + Sync;
    /// The bits of a stored element.
    fn key(self) -> Self::Key;
    /// The stored element of bits.
    fn from_key(k: Self::Key) -> Self;
}

impl Keyed for u32 {
    type Key = u32;
    fn key(self) -> u32 {
        self
    }
    fn from_key(k: u32) -> u32 {
        k
    }
}

impl Keyed for [u32; 2] {
    type Key = u64;
    fn key(self) -> u64 {
        self.get() as u64
    }
    fn from_key(k: u64) -> [u32; 2] {
        Self::put(k as i64)
    }
}

/// `op` over integers given as order keys (see [`Keyed`]): `(value, index)`, the index
/// meaningful for argmax (the first largest). A sum wraps; a mean never comes here
/// (integers are cast first).
fn fold_integers<K: num_traits::PrimInt + num_traits::WrappingAdd>(op: ReduceOp, values: impl Iterator<Item = K>, flip: K) -> (K, usize) {
    let mut acc = if op == ReduceOp::Min { K::max_value() } else { K::zero() };
    let mut best = 0;
    for (i, v) in values.enumerate() {
        match op {
            // The sum of the values themselves: undo the key's flip.
            ReduceOp::Sum | ReduceOp::Mean => acc = acc.wrapping_add(&(v ^ flip)),
            ReduceOp::Max => acc = acc.max(v),
            ReduceOp::Min => acc = acc.min(v),
            ReduceOp::Argmax if v > acc || i == 0 => (acc, best) = (v, i),
            ReduceOp::Argmax => {}
        }
    }
    (if matches!(op, ReduceOp::Sum | ReduceOp::Mean) { acc } else { acc ^ flip }, best)
}

/// [`reduce`] of i32, u32 or i64 values, one loop for all: each value is read as a key
/// ([`Keyed`]; i32 as u32 words with `flip` the sign bit). Argmax writes u32 indices, the
/// other ops values of the input's type.
fn reduce_integers<S: Keyed>(call: &Reduce<'_>, flip: S::Key) -> Result<()> {
    let (x, out) = (call.x, call.out);
    let xs = read_guard(x.buf)?;
    let mut os = write_guard(out.buf)?;
    let xw: &[S] = &elements::<S>(&xs)[x.layout.offset..];
    let (len, inner) = (call.len, call.inner);
    let at = |g: usize, j: usize| xw[(g / inner) * len * inner + g % inner + j * inner].key() ^ flip;
    if call.op == ReduceOp::Argmax {
        fill_integers(call, out_elements::<u32>(&mut os, &out), at, flip, |(_, idx)| idx as u32);
    } else {
        fill_integers(call, out_elements::<S>(&mut os, &out), at, flip, |(v, _)| S::from_key(v));
    }
    Ok(())
}

/// Each output of [`reduce_integers`], `encode`d from its `(value, index)`: one output per
/// task, or a few long rows in chunks whose partial results combine in order.
fn fill_integers<K, O>(call: &Reduce<'_>, outputs: &mut [O], at: impl Fn(usize, usize) -> K + Sync, flip: K, encode: impl Fn((K, usize)) -> O + Sync)
where
    K: num_traits::PrimInt + num_traits::WrappingAdd + Send + Sync,
    O: Send,
{
    let (op, len) = (call.op, call.len);
    if call.outer * call.inner >= crate::base::par::current_num_threads() || len <= CHUNK {
        outputs.par_iter_mut().enumerate().for_each(|(g, o)| *o = encode(fold_integers(op, (0..len).map(|j| at(g, j)), flip)));
        return;
    }
    for (g, o) in outputs.iter_mut().enumerate() {
        let partials: Vec<(K, usize)> = (0..len.div_ceil(CHUNK))
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
}
