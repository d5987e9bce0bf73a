//! The row-statistics ops on the CPU: rows in parallel, each by its epilogue's row function.

use crate::base::par::*;

use super::RowStats;
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::out_words;
use crate::ops::common::math;
use crate::Result;

/// Every row of `op`, in parallel.
pub(super) fn rows(op: &RowStats<'_>) -> Result<()> {
    let (x, out, rows, cols) = (op.x, op.out, op.rows, op.cols);
    let xs = read_guard(x.buf)?;
    let mut os = write_guard(out.buf)?;
    let xf: &[f32] = &bytemuck::cast_slice(&xs)[x.layout.offset..x.layout.offset + rows * cols];
    let of: &mut [f32] = bytemuck::cast_slice_mut(out_words(&mut os, &out));
    let row = op.epilogue.cpu;
    of.par_chunks_mut(cols.max(1)).zip(xf.par_chunks(cols.max(1))).for_each(|(o, r)| row(r, o));
    Ok(())
}

/// Softmax of one row, vectorised (see [`math::softmax`]).
pub(super) fn softmax_row(src: &[f32], dst: &mut [f32]) {
    math::softmax(src, dst);
}
