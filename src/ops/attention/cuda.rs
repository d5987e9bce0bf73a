//! Fused attention on CUDA: attention.cu (f32, one block per query row) and matrix.cu (f16 and
//! bf16 on the tensor cores, 64 query rows a block).

use super::Attention;
#[cfg(test)]
use crate::hal::cuda::Specialisation;
use crate::hal::cuda::{CudaBatch, CudaDevice, CudaSource};
use crate::hal::OpContext;
use crate::ops::common::cuda::{
    cuda_params, extent, index_type, operand, padded, specialise, typed_operand,
};
use crate::ops::Operand;
use crate::{BackendKind, DType, Error, Result};

static SOURCE: CudaSource = CudaSource {
    name: "attention.cu",
    text: include_str!("attention.cu"),
    preludes: &[
        crate::ops::common::cuda::COMMON,
        View4::DECL,
        AttentionParams::DECL,
    ],
};

static MATRIX: CudaSource = CudaSource {
    name: "matrix.cu",
    text: include_str!("matrix.cu"),
    preludes: &[
        crate::ops::common::cuda::COMMON,
        View4::DECL,
        AttentionParams::DECL,
    ],
};

/// Rows of queries one block of matrix.cu takes.
const MATRIX_ROWS: usize = 64;

/// Largest head dimension matrix.cu takes (its registers hold a row's outputs).
const MATRIX_MAX_HEAD: usize = 128;

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

/// Scaled dot-product attention: f32 by attention.cu, f16 and bf16 by matrix.cu.
pub(super) fn attention(
    op: &Attention<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    match op.dtype {
        DType::F32 => attention_f32(op, q, dev),
        _ => attention_16bit(op, q, dev),
    }
}

/// The largest index a kernel reaches in any operand.
fn largest_index(op: &Attention<'_>) -> usize {
    [
        Some(&op.q),
        Some(&op.k),
        Some(&op.v),
        op.mask.as_ref(),
        Some(&op.out),
    ]
    .into_iter()
    .flatten()
    .map(|o| extent(o.layout).max(o.layout.numel()))
    .max()
    .unwrap_or(0)
}

/// f32 attention, one block of 64 threads per query row (`attention_main`).
fn attention_f32(op: &Attention<'_>, q: &CudaBatch, dev: &CudaDevice) -> Result<()> {
    let (query, key, value, mask, out) = (op.q, op.k, op.v, op.mask, op.out);
    let [b, h, lq, ..] = op.dims;
    let largest = largest_index(op);
    let defines = vec![
        ("HAS_MASK", u32::from(mask.is_some()).to_string()),
        index_type(largest),
    ];
    let f = dev.program(specialise(&SOURCE, "attention_main", defines))?;
    let p = params(op);
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

/// The kernels' parameters of `op`.
fn params(op: &Attention<'_>) -> AttentionParams {
    let [b, h, lq, lk, d, dv] = op.dims;
    AttentionParams {
        bh: (b * h) as u64,
        heads: h as u64,
        lq: lq as u64,
        lk: lk as u64,
        d: d as u64,
        dv: dv as u64,
        scale: op.scale,
        causal: u32::from(op.causal),
        q: view4(Some(&op.q)),
        k: view4(Some(&op.k)),
        v: view4(Some(&op.v)),
        mask: view4(op.mask.as_ref()),
    }
}

/// f16 or bf16 attention on the tensor cores (`attention_matrix_main`); `Unsupported` where
/// matrix.cu cannot take the operands (the op then widens them to f32).
fn attention_16bit(op: &Attention<'_>, q: &CudaBatch, dev: &CudaDevice) -> Result<()> {
    let [b, h, lq, _, d, dv] = op.dims;
    let refused = |why: String| Error::Unsupported {
        backend: BackendKind::Cuda,
        what: format!("{} attention {why}", op.dtype),
    };
    if !dev.has_matrix_units() || op.mask.is_some() {
        return Err(refused("needs compute capability 8.0 and no mask".into()));
    }
    if d != dv || d == 0 || d % 16 != 0 || d > MATRIX_MAX_HEAD {
        return Err(refused(format!(
            "of head dimensions {d} and {dv}: the tensor-core kernel takes equal ones, \
             multiples of 16 up to {MATRIX_MAX_HEAD}"
        )));
    }
    let inputs = [&op.q, &op.k, &op.v];
    let pointers = [
        typed_operand(&op.q, op.dtype)?,
        typed_operand(&op.k, op.dtype)?,
        typed_operand(&op.v, op.dtype)?,
        typed_operand(&op.out, op.dtype)?,
    ];
    // Rows start at words (16 bytes apart for 8-element loads) with unit column stride.
    let aligned = |elems: usize| {
        (inputs.iter().zip(pointers)).all(|(o, ptr)| {
            let s = &o.layout.strides;
            s[3] == 1 && s[..3].iter().all(|n| n % elems == 0) && ptr % (2 * elems as u64) == 0
        })
    };
    if !aligned(2) {
        return Err(refused(
            "of views whose rows are not 4-byte aligned and dense".into(),
        ));
    }
    let blocks = lq.div_ceil(MATRIX_ROWS) * b * h;
    if blocks > i32::MAX as usize {
        return Err(refused(format!(
            "of {blocks} blocks of {MATRIX_ROWS} query rows"
        )));
    }
    let defines = vec![
        ("HEAD", d.to_string()),
        ("BF16", u32::from(op.dtype == DType::BF16).to_string()),
        ("VEC", u32::from(aligned(8)).to_string()),
        index_type(largest_index(op)),
    ];
    let f = dev.program(specialise(&MATRIX, "attention_matrix_main", defines))?;
    let held = [op.q.buf, op.k.buf, op.v.buf, op.out.buf];
    q.launch(
        dev,
        &f,
        (blocks as u32, 1, 1),
        (128, 1, 1),
        &pointers,
        &params(op),
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
        for head in ["16", "64", "128"] {
            for (bf16, vec) in [("0", "0"), ("1", "1")] {
                all.push(specialise(
                    &MATRIX,
                    "attention_matrix_main",
                    vec![
                        ("HEAD", head.into()),
                        ("BF16", bf16.into()),
                        ("VEC", vec.into()),
                        idx.clone(),
                    ],
                ));
            }
        }
    }
    all
}
