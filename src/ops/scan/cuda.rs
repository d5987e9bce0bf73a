//! Cumulative sums on CUDA: scan.cu, one block per (outer, inner) line.

use super::Cumsum;
#[cfg(test)]
use crate::hal::cuda::Specialisation;
use crate::hal::cuda::{CudaBatch, CudaDevice, CudaSource};
use crate::hal::OpContext;
use crate::ops::common::cuda::{cuda_params, index_type, specialise, typed_operand, val, BLOCK};
use crate::Result;

static SOURCE: CudaSource = CudaSource {
    name: "scan.cu",
    text: include_str!("scan.cu"),
    preludes: &[crate::ops::common::cuda::COMMON, ScanParams::DECL],
};

cuda_params! {
    /// scan.cu's parameters.
    struct ScanParams {
        outer: u64,
        len: u64,
        inner: u64,
    }
}

/// Cumulative sums, one block per (outer, inner) line (`cumsum_main`).
pub(super) fn cumsum(
    op: &Cumsum<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let (x, out) = (op.x, op.out);
    let f = dev.program(specialise(
        &SOURCE,
        "cumsum_main",
        vec![val(op.dtype)?, index_type(op.outer * op.len * op.inner)],
    ))?;
    let p = ScanParams {
        outer: op.outer as u64,
        len: op.len as u64,
        inner: op.inner as u64,
    };
    let grid = ((op.outer * op.inner).clamp(1, 65_535) as u32, 1, 1);
    q.launch(
        dev,
        &f,
        grid,
        (BLOCK, 1, 1),
        &[typed_operand(&x, op.dtype)?, typed_operand(&out, op.dtype)?],
        &p,
        &[x.buf, out.buf],
    )
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let mut all = Vec::new();
    for idx in [index_type(0), index_type(usize::MAX >> 1)] {
        for val in ["float", "int", "unsigned", "i64"] {
            all.push(specialise(
                &SOURCE,
                "cumsum_main",
                vec![("VAL", val.to_string()), idx.clone()],
            ));
        }
    }
    all
}
