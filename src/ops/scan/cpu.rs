//! Cumulative sums on the CPU, one `[len, inner]` block per task.

use crate::base::par::*;

use super::Cumsum;
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::{integer_bits, put_integer};
use crate::{DType, Result};

/// Cumulative sums along the middle axis of a contiguous `[outer, len, inner]` input.
pub(super) fn cumsum(op: &Cumsum<'_>) -> Result<()> {
    match op.dtype {
        // Floats sum in f64; integers as their bits in a u64, wrapping (the low 32 bits of a
        // 32-bit type's sum are its wrapping sum, the same bits for i32 and u32).
        DType::F32 => scan(
            op,
            1,
            0.0,
            |a, x, e| a + f64::from(f32::from_bits(x[e])),
            |o, a| o[0] = (a as f32).to_bits(),
        ),
        d => {
            let wide = d == DType::I64;
            scan(
                op,
                if wide { 2 } else { 1 },
                0u64,
                |a, x, e| a.wrapping_add(integer_bits(x, e, wide)),
                put_integer,
            )
        }
    }
}

/// Each task scans one `[len, inner]` block of elements of `per` words, inner columns side
/// by side: the running value starts at `zero`, takes element `e` of the block's words with
/// `add`, and `finish` writes each output's words from it.
fn scan<A: Copy + Send + Sync>(
    op: &Cumsum<'_>,
    per: usize,
    zero: A,
    add: impl Fn(A, &[u32], usize) -> A + Sync,
    finish: impl Fn(&mut [u32], A) + Sync,
) -> Result<()> {
    let (x, out, n, inner) = (op.x, op.out, op.outer * op.len * op.inner, op.inner.max(1));
    let xs = read_guard(x.buf)?;
    let mut os = write_guard(out.buf)?;
    let xv = &xs[x.layout.offset * per..][..n * per];
    let ov = &mut os[out.layout.offset * per..][..n * per];
    let block = (op.len * inner).max(1) * per;
    ov.par_chunks_mut(block)
        .zip(xv.par_chunks(block))
        .for_each(|(o, x)| {
            let (mut acc, mut column) = (vec![zero; inner], 0);
            for (e, dst) in o.chunks_mut(per).enumerate() {
                acc[column] = add(acc[column], x, e);
                finish(dst, acc[column]);
                column = if column + 1 == inner { 0 } else { column + 1 };
            }
        });
    Ok(())
}
