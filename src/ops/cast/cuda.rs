//! Casts on CUDA: cast.cu, a grid-stride loop over the output's elements (or words).

use super::Cast;
#[cfg(test)]
use crate::hal::cuda::Specialisation;
use crate::hal::cuda::{device_memory, CudaBatch, CudaDevice, CudaSource};
use crate::hal::OpContext;
use crate::ops::common::cuda::{blocks, cuda_params, index_type, padded, specialise, BLOCK};
use crate::{Error, Result};

static SOURCE: CudaSource = CudaSource {
    name: "cast.cu",
    text: include_str!("cast.cu"),
    preludes: &[crate::ops::common::cuda::COMMON, CastParams::DECL],
};

cuda_params! {
    /// cast.cu's parameters: the output's shape, the source view's strides and offset.
    struct CastParams {
        n: u64,
        rank: u32,
        pad: u32,
        shape: [u64; 8],
        strides: [u64; 8],
        offset: u64,
    }
}

/// `out = x as to` (`cast_main`); 16- and 8-bit views may start inside a word.
pub(super) fn cast(
    op: &Cast<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let (x, from, to, out) = (op.x, op.from, op.to, op.out);
    let n = out.layout.numel();
    if out.layout.offset % (4 / to.size()).max(1) != 0 {
        return Err(Error::Internal(
            "a narrow cast output starts inside a word".into(),
        ));
    }
    let defines = vec![
        ("FROM", from.code().to_string()),
        ("TO", to.code().to_string()),
        index_type(n.max(x.layout.end())),
    ];
    let f = dev.program(specialise(&SOURCE, "cast_main", defines))?;
    let p = CastParams {
        n: n as u64,
        rank: out.layout.shape.len() as u32,
        shape: padded(&out.layout.shape, 1),
        strides: padded(&x.layout.strides, 0),
        offset: x.layout.offset as u64,
        ..Default::default()
    };
    // The source as its block base (its view may start inside a word) plus the offset.
    let src = device_memory(x.buf)?.ptr;
    let dst = device_memory(out.buf)?.ptr + (out.layout.offset * to.size()) as u64;
    q.launch(
        dev,
        &f,
        (
            blocks(dev, n.div_ceil((4 / to.size()).max(1)), BLOCK as usize),
            1,
            1,
        ),
        (BLOCK, 1, 1),
        &[src, dst],
        &p,
        &[x.buf, out.buf],
    )
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let mut all = Vec::new();
    for idx in [index_type(0), index_type(usize::MAX >> 1)] {
        for from in 0..9 {
            for to in 0..9 {
                all.push(specialise(
                    &SOURCE,
                    "cast_main",
                    vec![
                        ("FROM", from.to_string()),
                        ("TO", to.to_string()),
                        idx.clone(),
                    ],
                ));
            }
        }
    }
    all
}
