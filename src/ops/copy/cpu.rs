//! Copies on the CPU: contiguous outputs in parallel chunks, strided ones in order.

use crate::base::par::*;

use super::ViewCopy;
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::{offsets_from, out_words, CHUNK};
use crate::Result;

pub(super) fn copy(op: &ViewCopy<'_>) -> Result<()> {
    let (x, out) = (op.x, op.out);
    if x.buf.id() == out.buf.id() {
        // Distinct views of one block (the op layer rules out overlap): gather first.
        let values: Vec<u32> = {
            let xs = read_guard(x.buf)?;
            x.layout.offsets().map(|i| xs[i]).collect()
        };
        let mut os = write_guard(out.buf)?;
        for (v, o) in values.into_iter().zip(out.layout.offsets()) {
            os[o] = v;
        }
        return Ok(());
    }
    let xs = read_guard(x.buf)?;
    let mut os = write_guard(out.buf)?;
    if out.layout.is_contiguous() {
        out_words(&mut os, &out)
            .par_chunks_mut(CHUNK)
            .enumerate()
            .for_each(|(c, chunk)| {
                for (o, xi) in chunk.iter_mut().zip(offsets_from(x.layout, c * CHUNK)) {
                    *o = xs[xi];
                }
            });
    } else {
        for (xi, o) in x.layout.offsets().zip(out.layout.offsets()) {
            os[o] = xs[xi];
        }
    }
    Ok(())
}
