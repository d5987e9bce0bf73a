//! Matmul: the `gemm` crate, one thread per product; the products of a batch in parallel, or,
//! when batches are fewer than threads, each product cut into blocks of columns (or rows) that
//! run in parallel. Each task applies the bias / activation epilogue to its block while it is
//! in cache, vectorised.

use crate::base::par::{self, *};

use super::{Matmul, UnaryOp};
use crate::base::layout::Layout;
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::{check_within, out_words, sgemm};
use crate::ops::common::math;
use crate::ops::elementwise::with_unary;
use crate::{DType, Error, Result};

/// Products of fewer multiply-adds (`m n k`) run on one thread: a split costs more than it
/// saves (the `gemm` crate's own threading threshold).
const SPLIT_MIN: usize = 48 * 48 * 256;

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

/// A raw pointer that may cross threads: tasks read A and B through it, and write disjoint
/// blocks of C.
#[derive(Clone, Copy)]
struct SendPtr<T>(*mut T);
// SAFETY: the memory outlives the tasks; writes go to blocks no two tasks share.
unsafe impl<T> Send for SendPtr<T> {}
unsafe impl<T> Sync for SendPtr<T> {}

/// `act(row + bias)` over one row of a block of C, vectorised.
fn epilogue(row: &mut [f32], bias: Option<&[f32]>, act: Option<UnaryOp>) {
    if let Some(bias) = bias {
        row.iter_mut().zip(bias).for_each(|(v, b)| *v += b);
    }
    if let Some(op) = act {
        with_unary!(op, |f| math::map_in_place(row, f));
    }
}

/// How a task cuts its product: `rows` x `cols` blocks of the `m` x `n` output.
#[derive(Clone, Copy)]
struct Split {
    rows: usize,
    cols: usize,
}

impl Split {
    /// Blocks enough for the threads that `batches` products leave idle: one block per
    /// product when batches fill the threads or the product is small; else whole 16-column
    /// panels (the wider matrix packs once per block, so cut along it: columns when `n >= m`),
    /// or blocks of 8 rows.
    fn new(batches: usize, [m, n, k]: [usize; 3], threads: usize) -> Split {
        let parts = if batches >= threads || m * n * k < SPLIT_MIN {
            1
        } else {
            threads.div_ceil(batches.max(1))
        };
        let block = |extent: usize, unit: usize| extent.div_ceil(parts).next_multiple_of(unit);
        if n >= m {
            Split {
                rows: m.max(1),
                cols: block(n, 16).max(1),
            }
        } else {
            Split {
                rows: block(m, 8).max(1),
                cols: n.max(1),
            }
        }
    }

    /// Blocks per product of `m` x `n`.
    fn count(self, m: usize, n: usize) -> usize {
        m.div_ceil(self.rows) * n.div_ceil(self.cols)
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
            .for_each(|row| epilogue(row, bias, act));
        return Ok(());
    }
    check_within("matmul", &[(a.layout, af), (b.layout, bf)])?;
    let batches = of.len() / (m * n).max(1);
    let split = Split::new(batches, [m, n, k], current_num_threads());
    let blocks = split.count(m, n);
    // Tasks capture layouts, slices and pointers only (buffers are not Send on every target).
    let (al, bl) = (a.layout, b.layout);
    let (pa, pb) = (
        SendPtr(af.as_ptr().cast_mut()),
        SendPtr(bf.as_ptr().cast_mut()),
    );
    let pc = SendPtr(of.as_mut_ptr());
    par::tasks(batches * blocks, |task| {
        let (bi, blk) = (task / blocks, task % blocks);
        let per_row = n.div_ceil(split.cols);
        let (i0, j0) = ((blk / per_row) * split.rows, (blk % per_row) * split.cols);
        let (rows, cols) = (split.rows.min(m - i0), split.cols.min(n - j0));
        let (ao, bo) = (batch_offset(al, bi), batch_offset(bl, bi));
        let r = al.shape.len();
        let (a_rs, a_cs) = (al.strides[r - 2], al.strides[r - 1]);
        let (b_rs, b_cs) = (bl.strides[r - 2], bl.strides[r - 1]);
        let (pa, pb, pc) = (pa, pb, pc);
        // SAFETY: batch `bi` of A is the [m, k] view at `ao` with A's matrix strides, which lies
        // inside A's layout, and `check_within` proved that layout inside `af` (likewise B in
        // `bf`); rows `i0..i0 + rows` of it and columns `j0..j0 + cols` of B's are parts of
        // those views. The block of C at (i0, j0) lies in batch `bi`'s m x n output, and no
        // other task writes it.
        unsafe {
            let c = pc.0.add(bi * m * n + i0 * n + j0);
            sgemm(
                rows,
                cols,
                k,
                1.0,
                pa.0.add(ao + i0 * a_rs),
                [a_rs as isize, a_cs as isize],
                pb.0.add(bo + j0 * b_cs),
                [b_rs as isize, b_cs as isize],
                c,
                n,
                1,
            );
            if bias.is_some() || act.is_some() {
                for i in 0..rows {
                    let row = std::slice::from_raw_parts_mut(c.add(i * n), cols);
                    epilogue(row, bias.map(|b| &b[j0..j0 + cols]), act);
                }
            }
        }
    });
    Ok(())
}
