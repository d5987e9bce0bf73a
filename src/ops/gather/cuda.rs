//! Gather on CUDA: gather.cu, a grid-stride loop over the output's words.

use super::Gather;
#[cfg(test)]
use crate::hal::cuda::Specialisation;
use crate::hal::cuda::{CudaBatch, CudaDevice, CudaSource};
use crate::hal::OpContext;
use crate::ops::common::cuda::{blocks, cuda_params, index_type, operand, specialise, BLOCK};
use crate::Result;

static SOURCE: CudaSource = CudaSource {
    name: "gather.cu",
    text: include_str!("gather.cu"),
    preludes: &[
        crate::ops::common::cuda::COMMON,
        crate::ops::common::cuda::INDEX,
        GatherParams::DECL,
    ],
};

cuda_params! {
    /// gather.cu's parameters.
    struct GatherParams {
        outer: u64,
        len: u64,
        inner: u64,
        count: u64,
        /// `IndexMode`'s code: 0 error, 1 clip, 2 fill.
        mode: u32,
        pad: u32,
    }
}

/// `out = x` indexed along one axis by `indices` (`gather_main`).
pub(super) fn gather(
    op: &Gather<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let (x, indices, out) = (op.x, op.indices, op.out);
    let n = out.layout.numel();
    let defines = vec![
        ("INDEX_KIND", op.kind.to_string()),
        index_type(n.max(op.outer * op.len * op.inner)),
    ];
    let f = dev.program(specialise(&SOURCE, "gather_main", defines))?;
    let p = GatherParams {
        outer: op.outer as u64,
        len: op.len as u64,
        inner: op.inner as u64,
        count: op.count as u64,
        mode: op.mode.code(),
        pad: 0,
    };
    // No status word but in mode 0 (error), which alone writes it: a null pointer.
    let status = op.status.as_ref().map(operand).transpose()?.unwrap_or(0);
    let pointers = [operand(&x)?, operand(&indices)?, operand(&out)?, status];
    let mut held = vec![x.buf, indices.buf, out.buf];
    held.extend(op.status.as_ref().map(|s| s.buf));
    q.launch(
        dev,
        &f,
        (blocks(dev, n, BLOCK as usize), 1, 1),
        (BLOCK, 1, 1),
        &pointers,
        &p,
        &held,
    )
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let mut all = Vec::new();
    for idx in [index_type(0), index_type(usize::MAX >> 1)] {
        for kind in 0..3 {
            all.push(specialise(
                &SOURCE,
                "gather_main",
                vec![("INDEX_KIND", kind.to_string()), idx.clone()],
            ));
        }
    }
    all
}
