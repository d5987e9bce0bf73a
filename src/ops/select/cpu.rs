//! `where` on the CPU, chunks in parallel.

use crate::base::par::*;

use super::Where;
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::{offsets_from, out_words, CHUNK};
use crate::{DType, Result};

/// Whether a condition word is true: non-zero (for f32: not ±0, so NaN is true).
fn truthy(bits: u32, dtype: DType) -> bool {
    if dtype == DType::F32 {
        bits & 0x7fff_ffff != 0
    } else {
        bits != 0
    }
}

pub(super) fn where_(op: &Where<'_>) -> Result<()> {
    let (cond, cond_dtype, a, b, out) = (op.cond, op.cond_dtype, op.a, op.b, op.out);
    let (cs, as_, bs) = (
        read_guard(cond.buf)?,
        read_guard(a.buf)?,
        read_guard(b.buf)?,
    );
    let mut os = write_guard(out.buf)?;
    out_words(&mut os, &out)
        .par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(c, chunk)| {
            let start = c * CHUNK;
            let lanes = offsets_from(cond.layout, start)
                .zip(offsets_from(a.layout, start))
                .zip(offsets_from(b.layout, start));
            for (o, ((ci, ai), bi)) in chunk.iter_mut().zip(lanes) {
                *o = if truthy(cs[ci], cond_dtype) {
                    as_[ai]
                } else {
                    bs[bi]
                };
            }
        });
    Ok(())
}
