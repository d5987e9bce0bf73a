//! Convolution and pooling on CUDA: conv.cu, a grid-stride loop over the outputs.

use super::{Conv2d, Conv2dGeometry, Pool2d};
#[cfg(test)]
use crate::hal::cuda::Specialisation;
use crate::hal::cuda::{CudaBatch, CudaDevice, CudaSource};
use crate::hal::OpContext;
use crate::ops::common::cuda::{
    blocks, cuda_params, epilogue_defines, index_type, operand, specialise, BLOCK,
};
use crate::Result;

static SOURCE: CudaSource = CudaSource {
    name: "conv.cu",
    text: include_str!("conv.cu"),
    preludes: &[
        crate::ops::common::cuda::COMMON,
        crate::ops::common::cuda::ACTIVATION,
        ConvParams::DECL,
    ],
};

cuda_params! {
    /// conv.cu's parameters (pool2d_main reads the same).
    struct ConvParams {
        n: u64,
        c: u64,
        h: u64,
        w: u64,
        o: u64,
        kh: u64,
        kw: u64,
        oh: u64,
        ow: u64,
        stride: [u64; 2],
        pad: [u64; 2],
        /// Padding after the last row and column (pooling, and a transposed convolution's crop;
        /// a convolution's is `pad`).
        pad_end: [u64; 2],
        dilation: [u64; 2],
        groups: u64,
    }
}

impl ConvParams {
    fn new(g: &Conv2dGeometry) -> Self {
        let sizes = [g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.oh, g.ow].map(|v| v as u64);
        let pair = |p: [usize; 2]| p.map(|v| v as u64);
        let [n, c, h, w, o, kh, kw, oh, ow] = sizes;
        ConvParams {
            n,
            c,
            h,
            w,
            o,
            kh,
            kw,
            oh,
            ow,
            stride: pair(g.stride),
            pad: pair(g.padding),
            pad_end: pair(g.pad_end),
            dilation: pair(g.dilation),
            groups: g.groups as u64,
        }
    }
}

/// conv2d (`conv2d_main`) or its transpose (`conv_transpose2d_main`) with its bias and
/// activation epilogue.
pub(super) fn conv2d(
    op: &Conv2d<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let (x, weight, bias, out) = (op.x, op.weight, op.bias, op.out);
    let n = out.layout.numel();
    let mut defines = epilogue_defines(&bias, op.act).to_vec();
    defines.push(index_type(
        n.max(x.layout.numel()).max(weight.layout.numel()),
    ));
    let entry = if op.transposed {
        "conv_transpose2d_main"
    } else {
        "conv2d_main"
    };
    let f = dev.program(specialise(&SOURCE, entry, defines))?;
    let bias_ptr = bias.as_ref().map_or(Ok(0), operand)?;
    let mut held = vec![x.buf, weight.buf, out.buf];
    held.extend(bias.iter().map(|o| o.buf));
    let pointers = [operand(&x)?, operand(&weight)?, bias_ptr, operand(&out)?];
    q.launch(
        dev,
        &f,
        (blocks(dev, n, BLOCK as usize), 1, 1),
        (BLOCK, 1, 1),
        &pointers,
        &ConvParams::new(&op.geometry),
        &held,
    )
}

/// Max or average pooling (`pool2d_main`).
pub(super) fn pool2d(
    op: &Pool2d<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let (x, out) = (op.x, op.out);
    let n = out.layout.numel();
    let defines = vec![
        ("POOL", op.code().to_string()),
        index_type(n.max(x.layout.numel())),
    ];
    let f = dev.program(specialise(&SOURCE, "pool2d_main", defines))?;
    q.launch(
        dev,
        &f,
        (blocks(dev, n, BLOCK as usize), 1, 1),
        (BLOCK, 1, 1),
        &[operand(&x)?, operand(&out)?],
        &ConvParams::new(&op.geometry),
        &[x.buf, out.buf],
    )
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let mut all = Vec::new();
    for idx in [index_type(0), index_type(usize::MAX >> 1)] {
        for on in [false, true] {
            for entry in ["conv2d_main", "conv_transpose2d_main"] {
                let act = ("ACT", if on { "12" } else { "0" }.to_string());
                all.push(specialise(
                    &SOURCE,
                    entry,
                    vec![("HAS_BIAS", u32::from(on).to_string()), act, idx.clone()],
                ));
            }
        }
        for pool in 0..3 {
            all.push(specialise(
                &SOURCE,
                "pool2d_main",
                vec![("POOL", pool.to_string()), idx.clone()],
            ));
        }
    }
    all
}
