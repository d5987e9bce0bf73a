//! `where` on CUDA: select.cu, a grid-stride loop over the output's elements.

use super::Where;
#[cfg(test)]
use crate::hal::cuda::Specialisation;
use crate::hal::cuda::{CudaBatch, CudaDevice, CudaSource};
use crate::hal::OpContext;
use crate::ops::common::cuda::{
    blocks, cuda_params, extent, index_type, operand, padded, specialise, BLOCK,
};
use crate::Result;

static SOURCE: CudaSource = CudaSource {
    name: "select.cu",
    text: include_str!("select.cu"),
    preludes: &[crate::ops::common::cuda::COMMON, SelectParams::DECL],
};

cuda_params! {
    /// select.cu's parameters: the output's shape and the strides of the condition, `a` and
    /// `b` views.
    struct SelectParams {
        n: u64,
        rank: u32,
        pad: u32,
        shape: [u64; 8],
        strides: [[u64; 8]; 3],
    }
}

/// `out = cond ? a : b` (`where_main`).
pub(super) fn where_(
    op: &Where<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let (cond, a, b, out) = (op.cond, op.a, op.b, op.out);
    let n = out.layout.numel();
    let largest = [&cond, &a, &b]
        .iter()
        .map(|o| extent(o.layout))
        .fold(n, usize::max);
    let defines = vec![
        (
            "COND_F32",
            u32::from(op.cond_dtype == crate::DType::F32).to_string(),
        ),
        index_type(largest),
    ];
    let f = dev.program(specialise(&SOURCE, "where_main", defines))?;
    let mut p = SelectParams {
        n: n as u64,
        rank: out.layout.shape.len() as u32,
        shape: padded(&out.layout.shape, 1),
        ..Default::default()
    };
    for (slot, v) in p.strides.iter_mut().zip([&cond, &a, &b]) {
        *slot = padded(&v.layout.strides, 0);
    }
    let pointers = [operand(&cond)?, operand(&a)?, operand(&b)?, operand(&out)?];
    q.launch(
        dev,
        &f,
        (blocks(dev, n, BLOCK as usize), 1, 1),
        (BLOCK, 1, 1),
        &pointers,
        &p,
        &[cond.buf, a.buf, b.buf, out.buf],
    )
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let mut all = Vec::new();
    for idx in [index_type(0), index_type(usize::MAX >> 1)] {
        for on in ["0", "1"] {
            all.push(specialise(
                &SOURCE,
                "where_main",
                vec![("COND_F32", on.into()), idx.clone()],
            ));
        }
    }
    all
}
