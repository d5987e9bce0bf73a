//! Matmul: the `gemm` crate per batch, batches in parallel (or one product split across the
//! threads when batches are few), with the bias / activation epilogue per block of rows.

use crate::base::par::*;

use super::{Matmul, UnaryOp};
use crate::base::layout::Layout;
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::{check_within, out_words, sgemm};
use crate::{DType, Error, Result};

/// Offset of batch entry `index` in a layout whose last two dimensions are the matrix.
fn batch_offset(layout: &Layout, mut index: usize) -> usize {
    let batch_rank = layout.shape.len() - 2;
    let mut off = layout.offset;
    for d in (0..batch_rank).rev() {
        off += (index % layout.shape[d]) * layout.strides[d];
        index /= layout.shape[d];
    }
    off
}

/// A raw pointer that may cross threads (tasks only read through it).
#[derive(Clone, Copy)]
struct SendPtr(*const f32);
// SAFETY: shared reads of memory that outlives the tasks.
unsafe impl Send for SendPtr {}
unsafe impl Sync for SendPtr {}

/// `act(row + bias)` over the rows of a block of C, while it is in cache.
fn epilogue(rows: &mut [f32], n: usize, bias: Option<&[f32]>, act: Option<UnaryOp>) {
    if bias.is_none() && act.is_none() {
        return;
    }
    for row in rows.chunks_mut(n) {
        for (j, v) in row.iter_mut().enumerate() {
            let y = bias.map_or(*v, |b| *v + b[j]);
            *v = act.map_or(y, |f| f.eval(y));
        }
    }
}

pub(super) fn matmul(op: &Matmul<'_>) -> Result<()> {
    if op.dtype != DType::F32 {
        return Err(Error::Internal(format!(
            "the cpu kernels compute on f32 storage, not {}",
            op.dtype
        )));
    }
    let (a, b, bias, act, out) = (op.a, op.b, op.bias, op.act, op.out);
    let (m, n, k) = (op.m, op.n, op.k);
    let (ag, bg) = (read_guard(a.buf)?, read_guard(b.buf)?);
    let biasg = bias.map(|o| read_guard(o.buf)).transpose()?;
    let mut os = write_guard(out.buf)?;
    let (af, bf): (&[f32], &[f32]) = (bytemuck::cast_slice(&ag), bytemuck::cast_slice(&bg));
    let bias: Option<&[f32]> = biasg
        .as_ref()
        .zip(bias)
        .map(|(g, o)| &bytemuck::cast_slice(g)[o.layout.offset..o.layout.offset + n]);
    let of: &mut [f32] = bytemuck::cast_slice_mut(out_words(&mut os, &out));
    if k == 0 {
        of.fill(0.0);
        of.par_chunks_mut(n.max(1))
            .for_each(|row| epilogue(row, n, bias, act));
        return Ok(());
    }
    check_within("matmul", &[(a.layout, af), (b.layout, bf)])?;
    let r = a.layout.shape.len();
    let a_strides = [
        a.layout.strides[r - 2] as isize,
        a.layout.strides[r - 1] as isize,
    ];
    let b_strides = [
        b.layout.strides[r - 2] as isize,
        b.layout.strides[r - 1] as isize,
    ];
    let threads = crate::base::par::current_num_threads();
    let batches = of.len() / (m * n).max(1);
    let inner_threads = if batches >= threads { 1 } else { threads };
    let (pa, pb) = (SendPtr(af.as_ptr()), SendPtr(bf.as_ptr()));
    of.par_chunks_mut((m * n).max(1))
        .enumerate()
        .for_each(|(bi, c)| {
            let (ao, bo) = (batch_offset(a.layout, bi), batch_offset(b.layout, bi));
            let (pa, pb) = (pa, pb);
            // SAFETY: batch `bi` of A is the [m, k] view at `ao` with A's matrix strides, which
            // lies inside A's layout, and `check_within` proved that layout inside `af` (likewise B
            // in `bf`); `c` is one m x n block of the output.
            unsafe {
                sgemm(
                    m,
                    n,
                    k,
                    1.0,
                    pa.0.add(ao),
                    a_strides,
                    pb.0.add(bo),
                    b_strides,
                    c.as_mut_ptr(),
                    n,
                    inner_threads,
                )
            };
            c.par_chunks_mut(64 * n.max(1))
                .for_each(|rows| epilogue(rows, n, bias, act));
        });
    Ok(())
}
