//! Scatter on CUDA: scatter.cu, one thread per line of updates (ScatterElements) or per
//! element of a slice (ScatterND), each walking its updates in order.

use super::{Form, Scatter};
use crate::base::layout::contiguous_strides;
#[cfg(test)]
use crate::hal::cuda::Specialisation;
use crate::hal::cuda::{CudaBatch, CudaDevice, CudaSource};
use crate::hal::OpContext;
use crate::ops::common::cuda::{
    blocks, cuda_params, index_type, operand, padded, specialise, typed_operand, val, BLOCK,
};
use crate::Result;

static SOURCE: CudaSource = CudaSource {
    name: "scatter.cu",
    text: include_str!("scatter.cu"),
    preludes: &[
        crate::ops::common::cuda::COMMON,
        crate::ops::common::cuda::INDEX,
        ScatterParams::DECL,
    ],
};

cuda_params! {
    /// scatter.cu's parameters (the fields of `ScatterWords` in webgpu.rs).
    struct ScatterParams {
        lines: u64,
        len: u64,
        inner: u64,
        /// Index tuples (nd).
        count: u64,
        axis_len: u64,
        axis_stride: u64,
        kind: u32,
        reduction: u32,
        rank: u32,
        pad: u32,
        shape: [u64; 8],
        strides: [u64; 8],
    }
}

/// The updates met into `out` (`scatter_elements_main` or `scatter_nd_main`).
pub(super) fn scatter(
    op: &Scatter<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let mut p = ScatterParams {
        kind: op.kind,
        reduction: op.reduction.code(),
        ..ScatterParams::default()
    };
    let entry = match &op.form {
        Form::Elements { data, shape, axis } => {
            let mut lines = shape.clone();
            lines[*axis] = 1;
            (p.len, p.inner) = (
                shape[*axis] as u64,
                shape[axis + 1..].iter().product::<usize>() as u64,
            );
            p.lines = lines.iter().product::<usize>() as u64;
            let ds = contiguous_strides(data);
            (p.shape, p.strides) = (padded(&lines, 1), padded(&ds, 0));
            (p.axis_len, p.axis_stride) = (data[*axis] as u64, ds[*axis] as u64);
            p.rank = shape.len() as u32;
            "scatter_elements_main"
        }
        Form::Nd { data, depth, count } => {
            p.inner = data[*depth..].iter().product::<usize>() as u64;
            (p.lines, p.count, p.rank) = (p.inner, *count as u64, *depth as u32);
            (p.shape, p.strides) = (
                padded(&data[..*depth], 1),
                padded(&contiguous_strides(data), 0),
            );
            "scatter_nd_main"
        }
    };
    let largest = [&op.out, &op.indices, &op.updates]
        .iter()
        .map(|o| o.layout.numel())
        .max()
        .unwrap_or(0);
    let defines = vec![val(op.dtype)?, index_type(largest)];
    let f = dev.program(specialise(&SOURCE, entry, defines))?;
    let pointers = [
        typed_operand(&op.out, op.dtype)?,
        operand(&op.indices)?,
        typed_operand(&op.updates, op.dtype)?,
    ];
    q.launch(
        dev,
        &f,
        (blocks(dev, p.lines as usize, BLOCK as usize), 1, 1),
        (BLOCK, 1, 1),
        &pointers,
        &p,
        &[op.out.buf, op.indices.buf, op.updates.buf],
    )
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let mut all = Vec::new();
    for idx in [index_type(0), index_type(usize::MAX >> 1)] {
        for entry in ["scatter_elements_main", "scatter_nd_main"] {
            for val in ["float", "int", "unsigned", "i64"] {
                let defines = vec![("VAL", val.to_string()), idx.clone()];
                all.push(specialise(&SOURCE, entry, defines));
            }
        }
    }
    all
}
