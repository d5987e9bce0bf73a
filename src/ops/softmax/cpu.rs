//! The row-statistics ops on the CPU: rows in parallel, each by its epilogue's row function.

use crate::base::par::*;

use super::RowStats;
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::{out_words, SharedOut, CHUNK};
use crate::ops::common::math;
use crate::Result;

/// Every row of `op`, in parallel: contiguous rows in place; strided rows gathered one at a
/// time; rows across the output's last axes (`out_steps.col` > 1) a block of rows at a time,
/// whose results are then written across the block.
pub(super) fn rows(op: &RowStats<'_>) -> Result<()> {
    let (x, out, rows, cols, nb) = (op.x, op.out, op.rows, op.cols, op.nb);
    let xs = read_guard(x.buf)?;
    let mut os = write_guard(out.buf)?;
    let xf: &[f32] = &bytemuck::cast_slice(&xs)[x.layout.offset..];
    let of: &mut [f32] = bytemuck::cast_slice_mut(out_words(&mut os, &out));
    let (row, steps) = (op.epilogue.cpu, op.x_steps);
    let gather_into = |r: usize, src: &mut [f32]| {
        let base = (r / nb) * steps.a + (r % nb) * steps.b;
        for (j, v) in src.iter_mut().enumerate() {
            *v = xf[base + j * steps.col];
        }
    };
    let gather = |r: usize, src: &mut Vec<f32>| {
        src.resize(cols, 0.0);
        gather_into(r, src);
    };
    // The output is contiguous: with the axis not last, block k of `cols * inner` elements
    // holds rows k * inner.. (k + 1) * inner, row i of them at i, i + inner, ...
    let inner = op.out_steps.col;
    if inner != 1 {
        across(
            of,
            [cols, inner],
            &|r, src: &mut [f32]| gather_into(r, src),
            row,
        );
    } else if steps == op.out_steps {
        of.par_chunks_mut(cols)
            .zip(xf[..rows * cols].par_chunks(cols))
            .for_each(|(o, r)| row(r, o));
    } else {
        of.par_chunks_mut(cols)
            .enumerate()
            .for_each_init(Vec::new, |src, (r, o)| {
                gather(r, src);
                row(src, o);
            });
    }
    Ok(())
}

/// The rows of a contiguous output whose axis is not last (`cols` elements `inner` apart,
/// blocks of `cols * inner`), in tasks of rows side by side: each gathers its rows with
/// `gather` into scratch rows, applies `row` to each, and writes the results across.
fn across(
    of: &mut [f32],
    [cols, inner]: [usize; 2],
    gather: &(impl Fn(usize, &mut [f32]) + Sync),
    row: fn(&[f32], &mut [f32]),
) {
    let per = (CHUNK / cols.max(1)).clamp(1, inner.max(1));
    let pieces = inner.div_ceil(per);
    let blocks = of.len() / (cols * inner).max(1);
    let target = SharedOut(of.as_mut_ptr());
    let scratch = || (vec![0.0; per * cols], vec![0.0; per * cols]);
    (0..blocks * pieces)
        .into_par_iter()
        .for_each_init(scratch, |(src, dst), t| {
            let (k, i0) = (t / pieces, t % pieces * per);
            let n = per.min(inner - i0);
            for (i, (s, d)) in src
                .chunks_mut(cols)
                .zip(dst.chunks_mut(cols))
                .take(n)
                .enumerate()
            {
                gather(k * inner + i0 + i, s);
                row(s, d);
            }
            for j in 0..cols {
                let at = k * cols * inner + j * inner + i0;
                // SAFETY: within `of` (block k, column j, rows i0..i0 + n of inner); each task
                // writes only its own rows' elements.
                let out = unsafe { std::slice::from_raw_parts_mut(target.at(at), n) };
                for (i, o) in out.iter_mut().enumerate() {
                    *o = dst[i * cols + j];
                }
            }
        });
}

/// Softmax of one row, vectorised (see [`math::softmax`]).
pub(super) fn softmax_row(src: &[f32], dst: &mut [f32]) {
    math::softmax(src, dst);
}
