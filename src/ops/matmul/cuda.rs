//! Matmul on CUDA: cuBLAS (with a bias and activation pass after it), or matmul.cu where
//! cuBLAS cannot take the layout or the `kernel` variant is asked for.

use super::Matmul;
#[cfg(test)]
use crate::hal::cuda::Specialisation;
use crate::hal::cuda::{blas, CudaBatch, CudaDevice, CudaSource};
use crate::hal::OpContext;
use crate::ops::common::cuda::{
    blocks, cuda_params, epilogue_defines, extent, index_type, operand, padded, specialise, BLOCK,
};
use crate::ops::{Operand, UnaryOp};
use crate::{DType, Error, Result};

static SOURCE: CudaSource = CudaSource {
    name: "matmul.cu",
    text: include_str!("matmul.cu"),
    preludes: &[
        crate::ops::common::cuda::COMMON,
        crate::ops::common::cuda::ACTIVATION,
        MatmulParams::DECL,
        BiasActParams::DECL,
    ],
};

cuda_params! {
    /// matmul.cu's parameters of matmul_main (element strides; batch dimensions padded to 6).
    struct MatmulParams {
        m: u64,
        n: u64,
        k: u64,
        a_row: u64,
        a_col: u64,
        b_row: u64,
        b_col: u64,
        batches: u64,
        batch_rank: u32,
        pad: u32,
        batch_shape: [u64; 6],
        a_batch: [u64; 6],
        b_batch: [u64; 6],
    }
}

cuda_params! {
    /// matmul.cu's parameters of bias_act_main.
    struct BiasActParams {
        n_total: u64,
        cols: u64,
    }
}

// The batch arrays above are MAX_BATCH_RANK long.
const _: () = assert!(MAX_BATCH_RANK == 6);

/// Batch dimensions matmul.cu addresses.
const MAX_BATCH_RANK: usize = 6;

/// matmul on cuBLAS (then bias and activation in one pass), or matmul.cu where cuBLAS cannot
/// take the layout or the `kernel` variant was asked for.
pub(super) fn matmul(
    op: &Matmul<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    cx: &OpContext<'_>,
) -> Result<()> {
    if op.dtype != DType::F32 {
        return matmul_16bit(op, q, dev);
    }
    let (a, b, bias, act, out, variant) = (op.a, op.b, op.bias, op.act, op.out, op.variant);
    let (m, n, k) = (op.m, op.n, op.k);
    let precision = cx.options.matmul_precision;
    if variant == Some("cublas") && !blas::available() {
        return Err(Error::Unsupported {
            backend: crate::BackendKind::Cuda,
            what: "matmul variant `cublas`: libcublas was not found".into(),
        });
    }
    if variant != Some("kernel")
        && blas::matmul(
            q,
            dev,
            [(a.buf, a.layout), (b.buf, b.layout), (out.buf, out.layout)],
            [m, n, k],
            blas::Types::F32(precision),
        )?
    {
        q.retain_used(dev, &[a.buf, b.buf, out.buf])?;
        // cuBLAS has no epilogue: bias and activation in one pass over the output.
        return if bias.is_some() || act.is_some() {
            bias_act(q, dev, &out, bias, act, n)
        } else {
            Ok(())
        };
    }
    matmul_kernel(q, dev, [a, b, out], bias, act, [m, n, k])
}

/// f16 or bf16 matrices multiplied as stored on cuBLAS (f32 accumulation); `Unsupported` where
/// cuBLAS cannot take them (the op then widens them to f32).
fn matmul_16bit(op: &Matmul<'_>, q: &CudaBatch, dev: &CudaDevice) -> Result<()> {
    let (a, b, out) = (op.a, op.b, op.out);
    let refused = |why: &str| Error::Unsupported {
        backend: crate::BackendKind::Cuda,
        what: format!("{} matmul {why}", op.dtype),
    };
    if op.bias.is_some() || op.act.is_some() || op.variant == Some("kernel") {
        return Err(refused("with an epilogue or on the `kernel` variant"));
    }
    if !blas::matmul(
        q,
        dev,
        [(a.buf, a.layout), (b.buf, b.layout), (out.buf, out.layout)],
        [op.m, op.n, op.k],
        blas::Types::Half(op.dtype),
    )? {
        return Err(refused("in this layout, or without cuBLAS"));
    }
    q.retain_used(dev, &[a.buf, b.buf, out.buf])
}

/// `out = act(out + bias)` in place over a contiguous `[rows, cols]` output.
fn bias_act(
    q: &CudaBatch,
    dev: &CudaDevice,
    out: &Operand<'_>,
    bias: Option<Operand<'_>>,
    act: Option<UnaryOp>,
    cols: usize,
) -> Result<()> {
    let total = out.layout.numel();
    let mut defines = epilogue_defines(&bias, act).to_vec();
    defines.push(index_type(total));
    let f = dev.program(specialise(&SOURCE, "bias_act_main", defines))?;
    let p = BiasActParams {
        n_total: total as u64,
        cols: cols as u64,
    };
    let bias_ptr = bias.as_ref().map_or(Ok(0), operand)?;
    let mut held = vec![out.buf];
    held.extend(bias.iter().map(|o| o.buf));
    q.launch(
        dev,
        &f,
        (blocks(dev, total, BLOCK as usize), 1, 1),
        (BLOCK, 1, 1),
        &[operand(out)?, bias_ptr],
        &p,
        &held,
    )
}

fn matmul_kernel(
    q: &CudaBatch,
    dev: &CudaDevice,
    [a, b, out]: [Operand<'_>; 3],
    bias: Option<Operand<'_>>,
    act: Option<UnaryOp>,
    [m, n, k]: [usize; 3],
) -> Result<()> {
    let r = out.layout.shape.len();
    let batch_rank = r - 2;
    if batch_rank > MAX_BATCH_RANK {
        return Err(Error::Limit {
            what: "matmul batch dimensions".into(),
            value: batch_rank as u64,
            limit: "batch rank of matmul.cu",
            max: MAX_BATCH_RANK as u64,
        });
    }
    let (gx, gy) = (n.div_ceil(64), m.div_ceil(64));
    if gy > 65_535 {
        return Err(Error::Limit {
            what: format!("matmul rows {m} in 64-row tiles"),
            value: gy as u64,
            limit: "grid y of matmul.cu",
            max: 65_535,
        });
    }
    let batches = out.layout.numel() / (m * n).max(1);
    let largest = out
        .layout
        .numel()
        .max(extent(a.layout))
        .max(extent(b.layout));
    let mut defines = epilogue_defines(&bias, act).to_vec();
    defines.push(index_type(largest));
    let f = dev.program(specialise(&SOURCE, "matmul_main", defines))?;
    let (sa, sb) = (&a.layout.strides, &b.layout.strides);
    let p = MatmulParams {
        m: m as u64,
        n: n as u64,
        k: k as u64,
        a_row: sa[r - 2] as u64,
        a_col: sa[r - 1] as u64,
        b_row: sb[r - 2] as u64,
        b_col: sb[r - 1] as u64,
        batches: batches as u64,
        batch_rank: batch_rank as u32,
        pad: 0,
        batch_shape: padded(&out.layout.shape[..batch_rank], 1),
        a_batch: padded(&sa[..batch_rank], 0),
        b_batch: padded(&sb[..batch_rank], 0),
    };
    let grid = (gx as u32, gy as u32, batches.clamp(1, 65_535) as u32);
    let bias_ptr = bias.as_ref().map_or(Ok(0), operand)?;
    let mut held = vec![a.buf, b.buf, out.buf];
    held.extend(bias.iter().map(|o| o.buf));
    q.launch(
        dev,
        &f,
        grid,
        (16, 16, 1),
        &[operand(&a)?, operand(&b)?, bias_ptr, operand(&out)?],
        &p,
        &held,
    )
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let mut all = Vec::new();
    for idx in [index_type(0), index_type(usize::MAX >> 1)] {
        for on in [false, true] {
            let (bias, act) = (
                ("HAS_BIAS", u32::from(on).to_string()),
                ("ACT", if on { "12" } else { "0" }.to_string()),
            );
            all.push(specialise(
                &SOURCE,
                "matmul_main",
                vec![bias.clone(), act, idx.clone()],
            ));
            all.push(specialise(
                &SOURCE,
                "bias_act_main",
                vec![bias, ("ACT", "11".into()), idx.clone()],
            ));
        }
    }
    all
}
