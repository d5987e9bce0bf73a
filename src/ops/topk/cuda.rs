//! TopK on CUDA: topk.cu, a grid-stride loop over the elements, each counting its whole row
//! (CUDA has no loop limit to split it for).

use super::Topk;
#[cfg(test)]
use crate::hal::cuda::Specialisation;
use crate::hal::cuda::{CudaBatch, CudaDevice, CudaSource};
use crate::hal::OpContext;
use crate::ops::common::cuda::{
    blocks, cuda_params, index_type, operand, specialise, typed_operand, val, BLOCK,
};
use crate::Result;

static SOURCE: CudaSource = CudaSource {
    name: "topk.cu",
    text: include_str!("topk.cu"),
    preludes: &[crate::ops::common::cuda::COMMON, TopkParams::DECL],
};

cuda_params! {
    /// topk.cu's parameters.
    struct TopkParams {
        outer: u64,
        len: u64,
        inner: u64,
        k: u64,
    }
}

/// The `k` first elements of each row by rank (`topk_main`).
pub(super) fn topk(
    op: &Topk<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let n = op.outer * op.len * op.inner;
    let defines = vec![
        val(op.dtype)?,
        ("LARGEST", u32::from(op.largest).to_string()),
        index_type(n),
    ];
    let f = dev.program(specialise(&SOURCE, "topk_main", defines))?;
    let p = TopkParams {
        outer: op.outer as u64,
        len: op.len as u64,
        inner: op.inner as u64,
        k: op.k as u64,
    };
    let pointers = [
        typed_operand(&op.x, op.dtype)?,
        typed_operand(&op.values, op.dtype)?,
        operand(&op.indices)?,
    ];
    q.launch(
        dev,
        &f,
        (blocks(dev, n, BLOCK as usize), 1, 1),
        (BLOCK, 1, 1),
        &pointers,
        &p,
        &[op.x.buf, op.values.buf, op.indices.buf],
    )
}

/// Every specialisation: each value type and index width, largest and smallest first.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let mut all = Vec::new();
    for idx in [index_type(0), index_type(usize::MAX >> 1)] {
        for val in ["float", "int", "unsigned", "i64"] {
            for largest in ["0", "1"] {
                let defines = vec![
                    ("VAL", val.to_string()),
                    ("LARGEST", largest.to_string()),
                    idx.clone(),
                ];
                all.push(specialise(&SOURCE, "topk_main", defines));
            }
        }
    }
    all
}
