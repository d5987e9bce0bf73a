//! Fused attention on CUDA: attention.cu, one block per query row.

use super::Attention;
#[cfg(test)]
use crate::hal::cuda::Specialisation;
use crate::hal::cuda::{CudaBatch, CudaDevice, CudaSource};
use crate::hal::OpContext;
use crate::ops::common::cuda::{cuda_params, extent, index_type, operand, padded, specialise};
use crate::ops::Operand;
use crate::Result;

static SOURCE: CudaSource = CudaSource {
    name: "attention.cu",
    text: include_str!("attention.cu"),
    preludes: &[
        crate::ops::common::cuda::COMMON,
        View4::DECL,
        AttentionParams::DECL,
    ],
};

cuda_params! {
    /// attention.cu's view of a rank-4 operand: its strides (pointers arrive at its first
    /// element).
    struct View4 {
        offset: u64,
        strides: [u64; 4],
    }
}

cuda_params! {
    /// attention.cu's parameters.
    struct AttentionParams {
        bh: u64,
        heads: u64,
        lq: u64,
        lk: u64,
        d: u64,
        dv: u64,
        scale: f32,
        causal: u32,
        q: View4,
        k: View4,
        v: View4,
        mask: View4,
    }
}

fn view4(o: Option<&Operand<'_>>) -> View4 {
    o.map_or(View4::default(), |o| View4 {
        offset: 0,
        strides: padded(&o.layout.strides, 0),
    })
}

/// Scaled dot-product attention, one block of 64 threads per query row (`attention_main`).
pub(super) fn attention(
    op: &Attention<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let (query, key, value, mask, out) = (op.q, op.k, op.v, op.mask, op.out);
    let [b, h, lq, lk, d, dv] = op.dims;
    let largest = [
        Some(&query),
        Some(&key),
        Some(&value),
        mask.as_ref(),
        Some(&out),
    ]
    .into_iter()
    .flatten()
    .map(|o| extent(o.layout).max(o.layout.numel()))
    .max()
    .unwrap_or(0);
    let defines = vec![
        ("HAS_MASK", u32::from(mask.is_some()).to_string()),
        index_type(largest),
    ];
    let f = dev.program(specialise(&SOURCE, "attention_main", defines))?;
    let p = AttentionParams {
        bh: (b * h) as u64,
        heads: h as u64,
        lq: lq as u64,
        lk: lk as u64,
        d: d as u64,
        dv: dv as u64,
        scale: op.scale,
        causal: u32::from(op.causal),
        q: view4(Some(&query)),
        k: view4(Some(&key)),
        v: view4(Some(&value)),
        mask: view4(mask.as_ref()),
    };
    let mask_ptr = mask.as_ref().map_or(Ok(0), operand)?;
    let pointers = [
        operand(&query)?,
        operand(&key)?,
        operand(&value)?,
        mask_ptr,
        operand(&out)?,
    ];
    let mut held = vec![query.buf, key.buf, value.buf, out.buf];
    held.extend(mask.iter().map(|o| o.buf));
    q.launch(
        dev,
        &f,
        ((b * h * lq).clamp(1, 65_535) as u32, 1, 1),
        (64, 1, 1),
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
        for on in ["0", "1"] {
            all.push(specialise(
                &SOURCE,
                "attention_main",
                vec![("HAS_MASK", on.into()), idx.clone()],
            ));
        }
    }
    all
}
