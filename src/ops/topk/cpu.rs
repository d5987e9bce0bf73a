//! TopK on the CPU: each row's elements sorted by an order key (a stable sort, so ties keep
//! the lower index first), the first `k` written; rows in parallel.

use std::cmp::Reverse;

use crate::base::par::*;

use super::Topk;
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::{integer_bits, put_integer};
use crate::{DType, Result};

/// The order key of one element's bits (its words, low first, in a u64): keys compare as the
/// values do, with NaN above everything (every NaN equal) and -0 equal to +0.
fn key(bits: u64, dtype: DType) -> u64 {
    match dtype {
        DType::F32 => {
            let v = f32::from_bits(bits as u32);
            if v.is_nan() {
                return u64::MAX;
            }
            // `+ 0.0` makes -0 into +0; a negative float orders reversed in its bits.
            let b = u64::from((v + 0.0).to_bits());
            if b >> 31 == 1 {
                0xffff_ffff - b
            } else {
                b | 1 << 31
            }
        }
        DType::I32 => bits ^ 1 << 31,
        DType::I64 => bits ^ 1 << 63,
        _ => bits,
    }
}

/// The `k` first elements by rank of each `[len]` row (strided by `inner`), as values of the
/// input's dtype and u32 indices.
pub(super) fn topk(op: &Topk<'_>) -> Result<()> {
    let wide = op.dtype == DType::I64;
    let per = if wide { 2 } else { 1 };
    let (len, inner, k) = (op.len, op.inner, op.k);
    // Plain values for the parallel closure: the op's operands are not `Sync` in wasm.
    let (largest, dtype) = (op.largest, op.dtype);
    let xs = read_guard(op.x.buf)?;
    let xw = &xs[op.x.layout.offset * per..];
    // Each row's (bits, index) of its first k, rows numbered (outer, inner).
    let rows: Vec<Vec<(u64, u32)>> = (0..op.outer * inner)
        .into_par_iter()
        .map(|r| {
            let base = (r / inner) * len * inner + r % inner;
            let mut row: Vec<(u64, u32)> = (0..len)
                .map(|j| (integer_bits(xw, base + j * inner, wide), j as u32))
                .collect();
            if largest {
                row.sort_by_key(|&(b, _)| Reverse(key(b, dtype)));
            } else {
                row.sort_by_key(|&(b, _)| key(b, dtype));
            }
            row.truncate(k);
            row
        })
        .collect();
    drop(xs);
    let mut vs = write_guard(op.values.buf)?;
    let mut is = write_guard(op.indices.buf)?;
    let values = &mut vs[op.values.layout.offset * per..];
    let indices = &mut is[op.indices.layout.offset..];
    for (r, row) in rows.iter().enumerate() {
        let base = (r / inner) * k * inner + r % inner;
        for (rank, &(bits, j)) in row.iter().enumerate() {
            let at = base + rank * inner;
            put_integer(&mut values[at * per..(at + 1) * per], bits);
            indices[at] = j;
        }
    }
    Ok(())
}
