//! Reductions on CUDA: reduce.cu, over columns in one pass or over rows in passes.

use std::sync::Arc;

use cudarc::driver::DeviceRepr;

use super::{Reduce, ReduceOp};
use crate::ops::common::cuda::{blocks, index_type, builtin, operand, temp, BLOCK};
#[cfg(test)]
use crate::hal::cuda::Builtin;
use crate::hal::cuda::{address, CudaDevice, CudaQueue, CudaSource};
use crate::hal::OpContext;
use crate::hal::Block;
use crate::{Error, Result};

static SOURCE: CudaSource = CudaSource { name: "reduce.cu", text: include_str!("reduce.cu"), preludes: &[crate::ops::common::cuda::COMMON] };

/// reduce.cu's `ReduceParams`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Params {
    outer: u64,
    len: u64,
    inner: u64,
    chunk: u64,
    chunks: u64,
    scale: f32,
    write_values: u32,
}

// SAFETY: plain `#[repr(C)]` numbers, laid out as reduce.cu's `ReduceParams`.
unsafe impl DeviceRepr for Params {}

/// One pass over columns where they are many (`reduce_cols`), else passes of one block per
/// (row, chunk) (`reduce_rows`), enough chunks to fill the GPU when rows are few.
pub(super) fn reduce(call: &Reduce<'_>, q: &CudaQueue, dev: &CudaDevice, cx: &OpContext<'_>) -> Result<()> {
    let (op, x, out) = (call.op, call.x, call.out);
    let (outer, len, inner) = (call.outer, call.len, call.inner);
    let argmax = op == ReduceOp::Argmax;
    let scale = if op == ReduceOp::Mean { 1.0 / len as f32 } else { 1.0 };
    let idx = index_type(outer * len * inner);
    let op_define = ("OP", op.code().to_string());
    if inner >= 32 && outer * inner >= 64 * dev.sm_count as usize {
        // Many output columns: one thread each, coalesced reads, one pass.
        let f = dev.program(builtin(&SOURCE, "reduce_cols", vec![op_define, idx]))?;
        let p = Params { outer: outer as u64, len: len as u64, inner: inner as u64, chunk: len as u64, chunks: 1, scale, write_values: 1 };
        let (values, indices) = if argmax { (0, operand(&out)?) } else { (operand(&out)?, 0) };
        return q.launch(dev, &f, (blocks(dev, outer * inner, BLOCK as usize), 1, 1), (BLOCK, 1, 1), &[operand(&x)?, values, indices], &p, &[x.buf, out.buf]);
    }
    // Passes of one block per (row, chunk): enough chunks to fill the GPU when rows are few.
    let mut input: (Arc<Block>, usize) = (x.buf.clone(), x.layout.offset);
    let mut input_indices: Option<Arc<Block>> = None;
    let (mut outer, mut len, mut inner) = (outer, len, inner);
    loop {
        let rows = outer * inner;
        let chunks = (4 * dev.sm_count as usize).div_ceil(rows).clamp(1, len.div_ceil(2048).max(1));
        let chunk = len.div_ceil(chunks);
        let last = chunks == 1;
        let first = input_indices.is_none();
        let f = dev.program(builtin(&SOURCE, "reduce_rows", vec![op_define.clone(), ("FIRST", u32::from(first).to_string()), idx.clone()]))?;
        let (values, indices): (Option<Arc<Block>>, Option<Arc<Block>>) = match (last, argmax) {
            (true, _) => (None, None),
            (false, true) => (Some(temp(cx, rows * chunks)?), Some(temp(cx, rows * chunks)?)),
            (false, false) => (Some(temp(cx, rows * chunks)?), None),
        };
        let values_ptr = match (&values, last && argmax) {
            (Some(v), _) => address(v, 0)?,
            (None, true) => 0,
            (None, false) => operand(&out)?,
        };
        let indices_ptr = match (&indices, last && argmax) {
            (Some(i), _) => address(i, 0)?,
            (None, true) => operand(&out)?,
            (None, false) => 0,
        };
        let p = Params {
            outer: outer as u64,
            len: len as u64,
            inner: inner as u64,
            chunk: chunk as u64,
            chunks: chunks as u64,
            scale: if last { scale } else { 1.0 },
            write_values: u32::from(!(last && argmax)),
        };
        let in_ptr = address(&input.0, input.1)?;
        let in_idx = input_indices.as_ref().map_or(Ok(0), |i| address(i, 0))?;
        let mut held: Vec<&Arc<Block>> = vec![&input.0, out.buf];
        held.extend(input_indices.iter().chain(values.iter()).chain(indices.iter()));
        let grid = ((rows * chunks).clamp(1, 65_535) as u32, 1, 1);
        q.launch(dev, &f, grid, (BLOCK, 1, 1), &[in_ptr, in_idx, values_ptr, indices_ptr], &p, &held)?;
        if last {
            return Ok(());
        }
        input = (values.ok_or_else(|| Error::Device("internal: reduction pass without output".into()))?, 0);
        input_indices = indices;
        (outer, len, inner) = (rows, chunks, 1);
    }
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn builtins() -> Vec<Builtin> {
    let mut all = Vec::new();
    for idx in [index_type(0), index_type(usize::MAX >> 1)] {
        for op in ReduceOp::ALL {
            for first in ["0", "1"] {
                all.push(builtin(&SOURCE, "reduce_rows", vec![("OP", op.code().to_string()), ("FIRST", first.into()), idx.clone()]));
            }
            all.push(builtin(&SOURCE, "reduce_cols", vec![("OP", op.code().to_string()), idx.clone()]));
        }
    }
    all
}
