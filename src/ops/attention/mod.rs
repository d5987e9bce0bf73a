//! Scaled dot-product attention: `softmax(q k^T * scale + mask) v` per batch and head, with
//! an optional causal mask. Kernels use an online softmax over tiles of keys, so the
//! `[lq, lk]` score matrix is never stored, however long the sequences. Software adapters
//! (SwiftShader, llvmpipe) run it as its parts where the scores fit (see `by_parts`).

backend_modules!();

use super::cost::OpCost;
use super::elementwise::binary;
use super::elementwise::check_f32;
use super::matmul::matmul;
use super::softmax::softmax;
use super::BinaryOp;
use super::{backends, launch, Lift, OpRequest, Operand};
use crate::{DType, DeviceType, Error, Queue, Result, Tensor};

/// Largest head dimension (of `q`/`k`, and of `v`) the kernels hold on chip.
pub const MAX_HEAD_DIM: usize = 256;

/// Options of [`attention`].
#[derive(Debug, Clone, Copy, Default)]
pub struct AttentionParams<'a> {
    /// Added to the scores before the softmax; broadcastable to `[batch, heads, lq, lk]`
    /// (e.g. `[lq, lk]`); `-inf` masks a key out.
    pub mask: Option<&'a Tensor>,
    /// Query `i` attends only to keys `j <= i` (top-left aligned, as PyTorch's `is_causal`).
    pub causal: bool,
    /// Score scale; `None` means `1 / sqrt(head dim)`.
    pub scale: Option<f32>,
}

/// Attention of `q: [batch, heads, lq, d]` over `k: [batch, heads, lk, d]` and
/// `v: [batch, heads, lk, dv]`, giving `[batch, heads, lq, dv]`. Inputs may be strided views
/// (e.g. heads split out of a `[batch, seq, heads, d]` projection by a permute). A query row
/// whose keys are all masked out (every score `-inf`, or no keys at all) is 0, as in ONNX's
/// Attention; a NaN score makes its row NaN.
pub fn attention(
    queue: &Queue,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    p: AttentionParams<'_>,
) -> Result<Tensor> {
    if let Some(dtype) = native_16bit(queue, [q, k, v], &p) {
        match attention_in(queue, [q, k, v], p, dtype) {
            // The tensor-core kernel cannot take these operands: widened to f32 below.
            Err(Error::Unsupported { .. }) => {}
            done => return done,
        }
    }
    let lift = Lift::of(
        "attention",
        &[Some(q), Some(k), Some(v), p.mask]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>(),
    )?;
    let mask = p.mask.map(|t| lift.up(queue, t)).transpose()?;
    let params = AttentionParams {
        mask: mask.as_ref(),
        ..p
    };
    let (q, k, v) = (lift.up(queue, q)?, lift.up(queue, k)?, lift.up(queue, v)?);
    lift.down(
        queue,
        attention_in(queue, [&q, &k, &v], params, DType::F32)?,
    )
}

/// The 16-bit dtype attention computes in as stored, where the backend can: q, k and v all f16
/// or all bf16, and no mask.
fn native_16bit(queue: &Queue, [q, k, v]: [&Tensor; 3], p: &AttentionParams<'_>) -> Option<DType> {
    let dtype = q.dtype();
    let wanted = matches!(dtype, DType::F16 | DType::BF16)
        && k.dtype() == dtype
        && v.dtype() == dtype
        && p.mask.is_none();
    (wanted && queue.device().shared.backend.native_16bit_attention()).then_some(dtype)
}

/// `[batch, heads, queries, keys, q/k head dimension, v head dimension]` of an attention of
/// `q`, `k` and `v`; an error unless they are f32 rank-4 tensors of matching shapes whose head
/// dimensions the kernels take. `dtype` is what the kernel computes in: f32, or the inputs'
/// f16 or bf16, which [`native_16bit`] has checked.
fn attention_dims(queue: &Queue, [q, k, v]: [&Tensor; 3], dtype: DType) -> Result<[usize; 6]> {
    for t in [q, k, v] {
        if dtype == DType::F32 {
            check_f32(queue, "attention", t)?;
        }
        if t.rank() != 4 {
            return Err(Error::shape(
                "attention",
                format!(
                    "got q {:?}, k {:?}, v {:?}: expected rank-4 [batch, heads, seq, dim] tensors",
                    q.shape(),
                    k.shape(),
                    v.shape()
                ),
            ));
        }
    }
    let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
    let (b, h, lq, d) = (qs[0], qs[1], qs[2], qs[3]);
    let (lk, dv) = (ks[2], vs[3]);
    if ks[..2] != qs[..2] || vs[..2] != qs[..2] {
        return Err(Error::shape(
            "attention",
            format!(
                "batch and heads differ: q {qs:?}, k {ks:?}, \
            v {vs:?}: expected equal [batch, heads]"
            ),
        ));
    }
    if ks[3] != d {
        return Err(Error::shape(
            "attention",
            format!(
                "q has head dimension {d} but k has {}: expected equal",
                ks[3]
            ),
        ));
    }
    if vs[2] != lk {
        return Err(Error::shape(
            "attention",
            format!("k has {lk} keys but v has {}: expected equal", vs[2]),
        ));
    }
    for (what, n) in [("q/k head dimension", d), ("v head dimension", dv)] {
        if n > MAX_HEAD_DIM {
            return Err(Error::Limit {
                what: format!("attention {what}"),
                value: n as u64,
                limit: "MAX_HEAD_DIM of the attention kernels",
                max: MAX_HEAD_DIM as u64,
            });
        }
    }
    Ok([b, h, lq, lk, d, dv])
}

/// Attention of tensors of `dtype` (f32, or f16 / bf16 computed as stored).
fn attention_in(
    queue: &Queue,
    [q, k, v]: [&Tensor; 3],
    p: AttentionParams<'_>,
    dtype: DType,
) -> Result<Tensor> {
    let [b, h, lq, lk, d, dv] = attention_dims(queue, [q, k, v], dtype)?;
    let scale = p.scale.unwrap_or(1.0 / (d.max(1) as f32).sqrt());
    if !scale.is_finite() {
        return Err(Error::Invalid(format!(
            "attention scale is {scale}: expected a finite value"
        )));
    }
    let mask = match p.mask {
        Some(m) => {
            check_f32(queue, "attention mask", m)?;
            Some(m.broadcast_to(&[b, h, lq, lk]).map_err(|_| {
                Error::shape(
                    "attention",
                    format!(
                        "mask has shape {:?}: expected one that \
                    broadcasts to [{b}, {h}, {lq}, {lk}]",
                        m.shape()
                    ),
                )
            })?)
        }
        None => None,
    };
    if dtype == DType::F32 && by_parts(queue, [b, h, lq, lk, d], &p) {
        return attention_by_parts(queue, [q, k, v], scale);
    }
    let out = Tensor::uninit(queue, &[b, h, lq, dv], dtype)?;
    if out.numel() > 0 {
        let mask = mask.as_ref().map(Tensor::operand);
        launch(
            queue,
            &Attention {
                q: q.operand(),
                k: k.operand(),
                v: v.operand(),
                mask,
                out: out.operand(),
                dims: [b, h, lq, lk, d, dv],
                scale,
                causal: p.causal,
                dtype,
            },
            None,
        )?;
    }
    Ok(out)
}

/// Score elements up to which [`by_parts`] may store the scores (64 MiB of f32).
const PARTS_MAX_SCORES: usize = 1 << 24;

/// Whether to run attention as matmul, softmax, matmul: on software adapters (unless
/// [`crate::DeviceOptions::software_kernels`] is off), whose barrier-free matmul and softmax
/// kernels beat the fused kernel's walk over the keys one at a time per query row
/// (attention [1, 8, 256, 64] on SwiftShader in Chromium: 344 ms fused), when the
/// `[batch, heads, lq, lk]` scores fit in [`PARTS_MAX_SCORES`] and there is no mask and no
/// causal masking (the softmax op makes a row of `-inf` NaN; attention makes it 0).
fn by_parts(queue: &Queue, [b, h, lq, lk, d]: [usize; 5], p: &AttentionParams<'_>) -> bool {
    let device = queue.device();
    let scores = b
        .checked_mul(h)
        .and_then(|n| n.checked_mul(lq))
        .and_then(|n| n.checked_mul(lk));
    device.info().device_type == DeviceType::SoftwareGpu
        && device.shared.options.software_kernels
        && !p.causal
        && p.mask.is_none()
        && lk > 0
        && d > 0
        && scores.is_some_and(|n| n <= PARTS_MAX_SCORES)
}

/// `softmax((q * scale) k^T) v` by the matmul, elementwise and softmax ops.
fn attention_by_parts(queue: &Queue, [q, k, v]: [&Tensor; 3], scale: f32) -> Result<Tensor> {
    let scale = Tensor::from_slice(queue.device(), &[scale], &[1])?;
    let scores = matmul(queue, &binary(queue, BinaryOp::Mul, q, &scale)?, &k.t()?)?;
    matmul(queue, &softmax(queue, &scores)?, v)
}

/// Scaled dot-product attention. `q`, `k`, `v` and `mask` (broadcast to `[b, h, lq, lk]`)
/// are strided rank-4 views; `out` is contiguous `[b, h, lq, dv]`; `dims` is
/// `[b, h, lq, lk, d, dv]`. Every operand is f32, or every one but the mask (then absent) is
/// f16 or bf16 where the backend's `native_16bit_attention` says so.
pub(crate) struct Attention<'a> {
    pub q: Operand<'a>,
    pub k: Operand<'a>,
    pub v: Operand<'a>,
    pub mask: Option<Operand<'a>>,
    pub out: Operand<'a>,
    pub dims: [usize; 6],
    pub scale: f32,
    pub causal: bool,
    pub dtype: DType,
}

impl OpRequest for Attention<'_> {
    fn operands(&self) -> Vec<&Operand<'_>> {
        let mut ops = vec![&self.q, &self.k, &self.v];
        ops.extend(self.mask.as_ref());
        ops.push(&self.out);
        ops
    }

    fn cost(&self) -> OpCost {
        let [b, h, lq, lk, d, dv] = self.dims.map(|n| n as u64);
        let flops = 2 * b * h * lq * lk * (d + dv);
        OpCost::typed("attention", &self.operands(), flops, self.dtype)
    }

    backends!(attention);
}

/// The attention ops as methods, recorded on the device's default queue.
impl Tensor {
    /// Scaled dot-product attention with `self` as the queries (see
    /// [`super::attention::attention`]).
    pub fn attention(&self, k: &Tensor, v: &Tensor, params: AttentionParams<'_>) -> Result<Tensor> {
        attention(&self.device().queue(), self, k, v, params)
    }
}
