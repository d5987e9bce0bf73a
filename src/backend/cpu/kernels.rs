//! CPU kernels for the op catalogue. Elementwise math runs in f32 through the ops' own
//! scalar definitions; reductions and softmax accumulate in f64; matmul uses `matrixmultiply`.

use super::{read_guard, write_guard};
use crate::layout::Layout;
use crate::ops::{OpCall, Operand, ReduceOp, UnaryOp};
use crate::Result;

/// Bind `$f` to the scalar function of unary op `$op` with the op fixed per match arm, so
/// the loop in `$body` inlines its math instead of dispatching on the op per element.
macro_rules! with_unary {
    ($op:expr, |$f:ident| $body:expr) => {
        with_unary!(@arms $op, $f, $body, [Neg, Abs, Exp, Log, Sqrt, Rsqrt, Sin, Cos, Tanh, Sigmoid, Relu, GeluErf, GeluTanh, Silu])
    };
    (@arms $op:expr, $f:ident, $body:expr, [$($v:ident),*]) => {
        match $op {
            $(UnaryOp::$v => {
                let $f = |x: f32| UnaryOp::$v.eval(x);
                $body
            })*
        }
    };
}

/// Run one op to completion.
pub(crate) fn run_op(call: OpCall<'_>) -> Result<()> {
    match call {
        OpCall::Unary { op, x, out } => {
            let xs = read_guard(x.buf)?;
            let mut os = write_guard(out.buf)?;
            let xf: &[f32] = bytemuck::cast_slice(&xs);
            let of = out_slice(&mut os, out);
            if x.layout.is_contiguous() {
                let src = &xf[x.layout.offset..];
                with_unary!(op, |f| for (o, &v) in of.iter_mut().zip(src) {
                    *o = f(v);
                });
            } else {
                for (o, xi) in of.iter_mut().zip(x.layout.offsets()) {
                    *o = op.eval(xf[xi]);
                }
            }
        }
        OpCall::Binary { op, act, a, b, out } => {
            let (ag, bg) = (read_guard(a.buf)?, read_guard(b.buf)?);
            let mut os = write_guard(out.buf)?;
            let (af, bf): (&[f32], &[f32]) = (bytemuck::cast_slice(&ag), bytemuck::cast_slice(&bg));
            let of = out_slice(&mut os, out);
            let apply = |x: f32, y: f32| {
                let v = op.eval(x, y);
                act.map_or(v, |f| f.eval(v))
            };
            if a.layout.is_contiguous() && b.layout.is_contiguous() {
                for ((o, &x), &y) in of.iter_mut().zip(&af[a.layout.offset..]).zip(&bf[b.layout.offset..]) {
                    *o = apply(x, y);
                }
            } else {
                for ((o, ai), bi) in of.iter_mut().zip(a.layout.offsets()).zip(b.layout.offsets()) {
                    *o = apply(af[ai], bf[bi]);
                }
            }
        }
        OpCall::Copy { x, out } => {
            let xs = read_guard(x.buf)?;
            let mut os = write_guard(out.buf)?;
            let start = out.layout.offset;
            for (o, xi) in os[start..start + out.layout.numel()].iter_mut().zip(x.layout.offsets()) {
                *o = xs[xi];
            }
        }
        OpCall::Reduce { op, x, outer, len, inner, out } => {
            let xs = read_guard(x.buf)?;
            let mut os = write_guard(out.buf)?;
            let xf: &[f32] = &bytemuck::cast_slice(&xs)[x.layout.offset..];
            let start = out.layout.offset;
            for o in 0..outer {
                for i in 0..inner {
                    let base = o * len * inner + i;
                    let (v, idx) = op.reference((0..len).map(|j| f64::from(xf[base + j * inner])));
                    os[start + o * inner + i] = if op == ReduceOp::Argmax { idx as u32 } else { (v as f32).to_bits() };
                }
            }
        }
        OpCall::Softmax { x, rows, cols, out } => {
            let xs = read_guard(x.buf)?;
            let mut os = write_guard(out.buf)?;
            let xf: &[f32] = &bytemuck::cast_slice(&xs)[x.layout.offset..];
            let of = out_slice(&mut os, out);
            for r in 0..rows {
                let row = &xf[r * cols..(r + 1) * cols];
                let max = row.iter().fold(f32::NEG_INFINITY, |m, &v| if v.is_nan() || m.is_nan() { f32::NAN } else { m.max(v) });
                let sum: f64 = row.iter().map(|&v| f64::from((v - max).exp())).sum();
                let inv = (1.0 / sum) as f32;
                for (o, &v) in of[r * cols..(r + 1) * cols].iter_mut().zip(row) {
                    *o = (v - max).exp() * inv;
                }
            }
        }
        OpCall::Matmul { a, b, out, m, n, k } => matmul(a, b, out, m, n, k)?,
    }
    Ok(())
}

/// The output's elements as f32 (outputs are contiguous).
fn out_slice<'g>(words: &'g mut [u32], out: Operand<'_>) -> &'g mut [f32] {
    let start = out.layout.offset;
    bytemuck::cast_slice_mut(&mut words[start..start + out.layout.numel()])
}

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

fn matmul(a: Operand<'_>, b: Operand<'_>, out: Operand<'_>, m: usize, n: usize, k: usize) -> Result<()> {
    let (ag, bg) = (read_guard(a.buf)?, read_guard(b.buf)?);
    let mut os = write_guard(out.buf)?;
    let (af, bf): (&[f32], &[f32]) = (bytemuck::cast_slice(&ag), bytemuck::cast_slice(&bg));
    let of = out_slice(&mut os, out);
    let r = a.layout.shape.len();
    let (rsa, csa) = (a.layout.strides[r - 2] as isize, a.layout.strides[r - 1] as isize);
    let (rsb, csb) = (b.layout.strides[r - 2] as isize, b.layout.strides[r - 1] as isize);
    let batches = out.layout.numel() / (m * n);
    for bi in 0..batches {
        let (ao, bo) = (batch_offset(a.layout, bi), batch_offset(b.layout, bi));
        let c = &mut of[bi * m * n..(bi + 1) * m * n];
        if k == 0 {
            c.fill(0.0);
            continue;
        }
        // SAFETY: every index the GEMM touches lies inside the layouts' extents, which the op
        // layer derived from tensors whose views lie inside their buffers; `c` is m*n long.
        unsafe {
            matrixmultiply::sgemm(
                m,
                k,
                n,
                1.0,
                af.as_ptr().add(ao),
                rsa,
                csa,
                bf.as_ptr().add(bo),
                rsb,
                csb,
                0.0,
                c.as_mut_ptr(),
                n as isize,
                1,
            );
        }
    }
    Ok(())
}
