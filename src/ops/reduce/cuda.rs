//! Reductions on CUDA: reduce.cu, over columns in one pass or over rows in passes.

use super::{passes, Reduce, ReduceOp};
#[cfg(test)]
use crate::hal::cuda::Specialisation;
use crate::hal::cuda::{address, CudaBatch, CudaDevice, CudaSource};
use crate::hal::OpContext;
use crate::ops::common::cuda::{
    address_of, blocks, cuda_params, index_type, operand, specialise, typed_operand, val, BLOCK,
};
use crate::Result;

static SOURCE: CudaSource = CudaSource {
    name: "reduce.cu",
    text: include_str!("reduce.cu"),
    preludes: &[
        crate::ops::common::cuda::COMMON,
        super::REDUCE_CUDA,
        ReduceParams::DECL,
    ],
};

cuda_params! {
    /// reduce.cu's parameters.
    struct ReduceParams {
        outer: u64,
        len: u64,
        inner: u64,
        chunk: u64,
        chunks: u64,
        scale: f32,
        write_values: u32,
    }
}

/// One pass over columns where they are many (`reduce_cols`), else passes of one block per
/// (row, chunk) (`reduce_rows`), enough chunks to fill the GPU when rows are few.
pub(super) fn reduce(
    call: &Reduce<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    cx: &OpContext<'_>,
) -> Result<()> {
    let op = call.op;
    let (outer, len, inner) = (call.outer, call.len, call.inner);
    let scale = if op == ReduceOp::Mean {
        1.0 / len as f32
    } else {
        1.0
    };
    let idx = index_type(outer * len * inner);
    let op_define = ("OP", op.code().to_string());
    let val = val(call.dtype)?;
    if inner >= 32 && outer * inner >= 64 * dev.sm_count() as usize {
        return reduce_cols(call, q, dev, scale, vec![op_define, val, idx]);
    }
    // Passes of one block per (row, chunk): enough chunks to fill the GPU when rows are few.
    let sms = dev.sm_count() as usize;
    let split = |rows: usize, len: usize| {
        let chunks = (4 * sms).div_ceil(rows).clamp(1, len.div_ceil(2048).max(1));
        (chunks, len.div_ceil(chunks))
    };
    passes::run(call, cx, split, |pass| {
        let f = dev.program(specialise(
            &SOURCE,
            "reduce_rows",
            vec![
                op_define.clone(),
                ("FIRST", u32::from(pass.first()).to_string()),
                val.clone(),
                idx.clone(),
            ],
        ))?;
        let at =
            |o: &Option<passes::At>| o.as_ref().map_or(Ok(0), |(b, offset)| address(b, *offset));
        let p = ReduceParams {
            outer: pass.outer as u64,
            len: pass.len as u64,
            inner: pass.inner as u64,
            chunk: pass.chunk as u64,
            chunks: pass.chunks as u64,
            scale: pass.scale,
            write_values: u32::from(pass.out_values.is_some()),
        };
        let in_idx = pass.indices.as_ref().map_or(Ok(0), |i| address(i, 0))?;
        let values_at = |o: &Option<passes::At>| {
            o.as_ref()
                .map_or(Ok(0), |(b, offset)| address_of(b, *offset, call.dtype))
        };
        let pointers = [
            address_of(&pass.values.0, pass.values.1, call.dtype)?,
            in_idx,
            values_at(&pass.out_values)?,
            at(&pass.out_indices)?,
        ];
        let grid = (
            (pass.outer * pass.inner * pass.chunks).clamp(1, 65_535) as u32,
            1,
            1,
        );
        q.launch(dev, &f, grid, (BLOCK, 1, 1), &pointers, &p, &pass.blocks())
    })
}

/// Many output columns: one thread each, coalesced reads, one pass (`reduce_cols`, specialised
/// with `defines`).
fn reduce_cols(
    call: &Reduce<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    scale: f32,
    defines: Vec<(&'static str, String)>,
) -> Result<()> {
    let (x, out) = (call.x, call.out);
    let (outer, len, inner) = (call.outer, call.len, call.inner);
    let argmax = call.op == ReduceOp::Argmax;
    let f = dev.program(specialise(&SOURCE, "reduce_cols", defines))?;
    let p = ReduceParams {
        outer: outer as u64,
        len: len as u64,
        inner: inner as u64,
        chunk: len as u64,
        chunks: 1,
        scale,
        write_values: 1,
    };
    let (values, indices) = if argmax {
        (0, operand(&out)?)
    } else {
        (typed_operand(&out, call.dtype)?, 0)
    };
    let pointers = [typed_operand(&x, call.dtype)?, values, indices];
    q.launch(
        dev,
        &f,
        (blocks(dev, outer * inner, BLOCK as usize), 1, 1),
        (BLOCK, 1, 1),
        &pointers,
        &p,
        &[x.buf, out.buf],
    )
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let mut all = Vec::new();
    for idx in [index_type(0), index_type(usize::MAX >> 1)] {
        for op in ReduceOp::ALL {
            for val in ["float", "int", "unsigned", "i64"] {
                let defines = |first: Option<&str>| {
                    let first = first.map(|f| ("FIRST", f.to_string()));
                    [
                        ("OP", op.code().to_string()),
                        ("VAL", val.to_string()),
                        idx.clone(),
                    ]
                    .into_iter()
                    .chain(first)
                    .collect()
                };
                all.push(specialise(&SOURCE, "reduce_rows", defines(Some("0"))));
                all.push(specialise(&SOURCE, "reduce_rows", defines(Some("1"))));
                all.push(specialise(&SOURCE, "reduce_cols", defines(None)));
            }
        }
    }
    all
}
