//! The row-statistics ops on the CPU: rows in parallel, each by its epilogue's row function.

use crate::base::par::*;

use super::RowStats;
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::out_words;
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
    let gather = |r: usize, src: &mut Vec<f32>| {
        let base = (r / nb) * steps.a + (r % nb) * steps.b;
        src.clear();
        src.extend((0..cols).map(|j| xf[base + j * steps.col]));
    };
    // The output is contiguous: with the axis not last, block k of `cols * inner` elements
    // holds rows k * inner.. (k + 1) * inner, row i of them at i, i + inner, ...
    let inner = op.out_steps.col;
    if inner != 1 {
        of.par_chunks_mut(cols * inner)
            .enumerate()
            .for_each(|(k, block)| {
                let results: Vec<Vec<f32>> = (0..inner)
                    .into_par_iter()
                    .map(|i| {
                        let (mut src, mut dst) = (Vec::with_capacity(cols), vec![0.0; cols]);
                        gather(k * inner + i, &mut src);
                        row(&src, &mut dst);
                        dst
                    })
                    .collect();
                for (i, r) in results.iter().enumerate() {
                    for (j, &v) in r.iter().enumerate() {
                        block[j * inner + i] = v;
                    }
                }
            });
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

/// Softmax of one row, vectorised (see [`math::softmax`]).
pub(super) fn softmax_row(src: &[f32], dst: &mut [f32]) {
    math::softmax(src, dst);
}
