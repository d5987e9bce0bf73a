//! CPU kernels for the op catalogue, one file per op family. Work is split into chunks that
//! rayon runs in parallel (sequentially where there are no threads, as in plain wasm).
//! Elementwise math runs in f32 through the ops' own scalar definitions; reductions and
//! softmax accumulate in f64; matmul uses `matrixmultiply` per block of rows.

mod attention;
mod conv;
mod elementwise;
mod indexing;
mod math;
mod matmul;
mod norm;
mod reduce;

use super::{read_guard, write_guard};
use crate::layout::{Access, Layout};
use crate::ops::{OpCall, Operand};
use crate::Result;

/// Elements per parallel task: large enough to amortise scheduling, small enough to balance.
const CHUNK: usize = 1 << 15;

/// Run one op to completion.
pub(crate) fn run_op(call: OpCall<'_>) -> Result<()> {
    match call {
        OpCall::Unary { op, x, out } => elementwise::unary(op, x, out),
        OpCall::Binary { op, act, a, b, out } => elementwise::binary(op, act, a, b, out),
        OpCall::Copy { x, out } => elementwise::copy(x, out),
        OpCall::Cast { x, from, to, out } => indexing::cast(x, from, to, out),
        OpCall::Where { cond, cond_dtype, a, b, out } => indexing::where_(cond, cond_dtype, a, b, out),
        OpCall::Gather { x, indices, signed, len, inner, count, fill, out, .. } => indexing::gather(x, indices, signed, [len, inner, count], fill, out),
        OpCall::Cumsum { x, outer, len, inner, out } => indexing::cumsum(x, [outer, len, inner], out),
        OpCall::Reduce { op, x, outer, len, inner, out } => reduce::reduce(op, x, [outer, len, inner], out),
        OpCall::Softmax { x, rows, cols, out } => reduce::softmax(x, rows, cols, out),
        OpCall::Conv2d { x, weight, bias, act, out, geometry } => conv::conv2d(x, weight, bias, act, out, geometry),
        OpCall::Pool2d { kind, x, out, geometry } => conv::pool2d(kind, x, out, geometry),
        OpCall::Attention { q, k, v, mask, out, dims, scale, causal } => attention::attention([q, k, v], mask, out, dims, scale, causal),
        OpCall::Norm { kind, x, weight, bias, rows, cols, eps, act, out } => norm::norm(kind, x, weight, bias, [rows, cols], eps, act, out),
        OpCall::Matmul { a, b, bias, act, out, m, n, k, .. } => matmul::matmul(a, b, bias, act, out, [m, n, k]),
    }
}

/// The output's words (outputs are contiguous).
fn out_words<'g>(words: &'g mut [u32], out: &Operand<'_>) -> &'g mut [u32] {
    let start = out.layout.offset;
    &mut words[start..start + out.layout.numel()]
}

/// Offsets of a view's elements from row-major element `start` on, by the cheapest route.
enum Offsets<I> {
    Contiguous(std::ops::Range<usize>),
    Repeated { base: usize, period: usize, at: usize },
    Strided(I),
}

impl<I: Iterator<Item = usize>> Iterator for Offsets<I> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        match self {
            Offsets::Contiguous(r) => r.next(),
            Offsets::Repeated { base, period, at } => {
                let o = *base + *at;
                *at += 1;
                if *at == *period {
                    *at = 0;
                }
                Some(o)
            }
            Offsets::Strided(it) => it.next(),
        }
    }
}

/// The longest contiguous run (at most `max` elements) of a view's elements from row-major
/// element `i` on, or `None` if the view is not laid out in runs (general strides).
fn run_from<'a>(data: &'a [f32], l: &Layout, i: usize, max: usize) -> Option<&'a [f32]> {
    let (at, len) = match l.access() {
        Access::Contiguous => (l.offset + i, max),
        Access::Repeated { period } => (l.offset + i % period, max.min(period - i % period)),
        Access::Strided => return None,
    };
    data.get(at..at + len)
}

/// Sum in f64 with eight independent accumulators (vectorisable, and more accurate than one
/// running sum).
fn sum_f64(xs: &[f32]) -> f64 {
    let mut lanes = [0.0f64; 8];
    let mut chunks = xs.chunks_exact(8);
    for c in &mut chunks {
        for (l, &v) in lanes.iter_mut().zip(c) {
            *l += f64::from(v);
        }
    }
    let tail: f64 = chunks.remainder().iter().map(|&v| f64::from(v)).sum();
    lanes.iter().sum::<f64>() + tail
}

fn offsets_from(l: &Layout, start: usize) -> Offsets<impl Iterator<Item = usize> + '_> {
    match l.access() {
        Access::Contiguous => Offsets::Contiguous(l.offset + start..l.offset + l.numel()),
        Access::Repeated { period } => Offsets::Repeated { base: l.offset, period, at: start % period },
        Access::Strided => Offsets::Strided(l.offsets_from(start)),
    }
}
