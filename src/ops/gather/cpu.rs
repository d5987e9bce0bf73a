//! Gather on the CPU, the blocks of several outer indices to a task.

use crate::base::par;

use super::{resolve_index, Gather};
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::{index_value, out_words, CHUNK};
use crate::Result;

pub(super) fn gather(op: &Gather<'_>) -> Result<()> {
    let (x, indices, out) = (op.x, op.indices, op.out);
    let (len, inner, count) = (op.len, op.inner, op.count);
    let (xs, is) = (read_guard(x.buf)?, read_guard(indices.buf)?);
    let per = if op.kind == 2 { 2 } else { 1 };
    let words = &is[indices.layout.offset..indices.layout.offset + count * per];
    let at: Vec<Option<usize>> = (0..count)
        .map(|j| resolve_index(index_value(words, op.kind, j), len, op.mode))
        .collect();
    if let (Some(status), Some(first)) = (op.status, at.iter().position(Option::is_none)) {
        let mut ss = write_guard(status.buf)?;
        let word = &mut out_words(&mut ss, &status)[0];
        *word = (*word).min(first as u32);
    }
    let mut os = write_guard(out.buf)?;
    let xw = &xs[x.layout.offset..];
    let rows = out_words(&mut os, &out);
    // Each task fills [count, inner] blocks of outer indices, enough for about CHUNK words.
    let block = (count * inner).max(1);
    let per = (CHUNK / block).max(1);
    par::chunks_mut(rows, block * per, |c, blocks| {
        for (b, block) in blocks.chunks_mut(block).enumerate() {
            let o = c * per + b;
            if inner == 1 {
                // Single words: copied as such, not as slices of one.
                let row = &xw[o * len..][..len];
                for (&t, dst) in at.iter().zip(block) {
                    *dst = t.map_or(0, |t| row[t]);
                }
                continue;
            }
            for (&t, dst) in at.iter().zip(block.chunks_mut(inner.max(1))) {
                match t {
                    Some(t) => {
                        dst.copy_from_slice(&xw[(o * len + t) * inner..(o * len + t + 1) * inner])
                    }
                    None => dst.fill(0),
                }
            }
        }
    });
    Ok(())
}
