//! Copies on the CPU: contiguous outputs in parallel chunks (row by row where the source's
//! rows are runs too), strided ones in order.

use crate::base::par::*;

use super::ViewCopy;
use crate::base::layout::Layout;
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::{offsets_from, out_words, CHUNK};
use crate::Result;

/// Offset of the first element of row `r` (of the innermost dimension) of layout `l`.
fn row_offset(l: &Layout, mut r: usize) -> usize {
    let mut off = l.offset;
    for d in (0..l.shape.len().saturating_sub(1)).rev() {
        off += (r % l.shape[d]) * l.strides[d];
        r /= l.shape[d];
    }
    off
}

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
    let inner = x.layout.shape.last().copied().unwrap_or(1);
    if out.layout.is_contiguous() && x.layout.strides.last() == Some(&1) && inner > 1 {
        // Rows of the innermost dimension are runs in both views: copied as slices, whole
        // rows per chunk.
        let rows = (CHUNK / inner).max(1);
        out_words(&mut os, &out)
            .par_chunks_mut(rows * inner)
            .enumerate()
            .for_each(|(c, chunk)| {
                for (r, row) in chunk.chunks_mut(inner).enumerate() {
                    let at = row_offset(x.layout, c * rows + r);
                    row.copy_from_slice(&xs[at..at + inner]);
                }
            });
    } else if out.layout.is_contiguous() {
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
