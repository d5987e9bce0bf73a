//! Copies on CUDA: copy.cu, a grid-stride loop over the elements.

use super::ViewCopy;
#[cfg(test)]
use crate::hal::cuda::Specialisation;
use crate::hal::cuda::{CudaBatch, CudaDevice, CudaSource};
use crate::hal::OpContext;
use crate::ops::common::cuda::{
    blocks, cuda_params, extent, index_type, operand, padded, specialise, BLOCK,
};
use crate::Result;

static SOURCE: CudaSource = CudaSource {
    name: "copy.cu",
    text: include_str!("copy.cu"),
    preludes: &[crate::ops::common::cuda::COMMON, CopyParams::DECL],
};

cuda_params! {
    /// copy.cu's parameters: the shape, and the source's and destination's strides.
    struct CopyParams {
        n: u64,
        rank: u32,
        pad: u32,
        shape: [u64; 8],
        strides: [u64; 8],
        out_strides: [u64; 8],
    }
}

pub(super) fn copy(
    op: &ViewCopy<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let (x, out) = (op.x, op.out);
    let n = out.layout.numel();
    let contiguous = u32::from(out.layout.is_contiguous()).to_string();
    let largest = n.max(extent(x.layout)).max(extent(out.layout));
    let f = dev.program(specialise(
        &SOURCE,
        "copy_main",
        vec![("OUT_CONTIGUOUS", contiguous), index_type(largest)],
    ))?;
    let p = CopyParams {
        n: n as u64,
        rank: out.layout.shape.len() as u32,
        shape: padded(&out.layout.shape, 1),
        strides: padded(&x.layout.strides, 0),
        out_strides: padded(&out.layout.strides, 0),
        ..Default::default()
    };
    q.launch(
        dev,
        &f,
        (blocks(dev, n, BLOCK as usize), 1, 1),
        (BLOCK, 1, 1),
        &[operand(&x)?, operand(&out)?],
        &p,
        &[x.buf, out.buf],
    )
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let mut all = Vec::new();
    for idx in [index_type(0), index_type(usize::MAX >> 1)] {
        for contiguous in ["0", "1"] {
            all.push(specialise(
                &SOURCE,
                "copy_main",
                vec![("OUT_CONTIGUOUS", contiguous.into()), idx.clone()],
            ));
        }
    }
    all
}
