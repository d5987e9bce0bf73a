//! `MatMulNBits` (`com.microsoft`): a matrix product with block-quantised weights, as
//! onnxruntime's `matmul_nbits_quantizer` and the model builders for small LLMs write it.
//! The weights are dequantised on the device with the op API, then multiplied; a kernel that
//! reads the packed weights directly is the next step (the optimisation issue).

use super::{one, op, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::value::Val;
use crate::onnx::Node;
use crate::ops::concat::concat;
use crate::ops::UnaryOp;
use crate::{DType, Tensor};

/// The operators of this file, in the `com.microsoft` domain.
pub(super) const OPS: &[OpDef] = &[op("MatMulNBits", matmul_nbits).refusing(nbits_refusal)];

/// What `MatMulNBits` cannot take: other widths than 4 and 8 bits, or `g_idx` (act-order
/// quantisation).
fn nbits_refusal(node: &Node) -> Option<String> {
    let bits = node.attrs.int("bits").ok().flatten().copied().unwrap_or(4);
    if bits != 4 && bits != 8 {
        return Some(format!("bits = {bits}: only 4 and 8 are supported"));
    }
    let g_idx = node.inputs.get(4).is_some_and(Option::is_some);
    g_idx.then(|| "input 4 (g_idx) is given: act-order quantisation is not supported".into())
}

/// The attributes that fix the weights' layout.
struct Layout {
    /// The product's inner extent.
    k: usize,
    /// Its output extent.
    n: usize,
    /// Bits per weight (4 or 8).
    bits: usize,
    /// Weights per block (one scale and zero point each).
    block: usize,
}

impl Layout {
    /// The node's layout, checked.
    fn of(c: &Ctx<'_>) -> Result<Layout> {
        let positive = |name: &str, default: i64| -> Result<usize> {
            let v = c.int(name, default)?;
            usize::try_from(v)
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| c.error(format!("{name} = {v}: expected a positive integer")))
        };
        let block = positive("block_size", 0)?;
        if block < 16 || !block.is_power_of_two() {
            return Err(c.error(format!(
                "block_size = {block}: expected a power of two, at least 16"
            )));
        }
        Ok(Layout {
            k: positive("K", 0)?,
            n: positive("N", 0)?,
            bits: positive("bits", 4)?,
            block,
        })
    }

    /// Blocks along K.
    fn blocks(&self) -> usize {
        self.k.div_ceil(self.block)
    }

    /// Bytes per block.
    fn blob(&self) -> usize {
        self.block * self.bits / 8
    }
}

/// `MatMulNBits`: `A · dequant(B)ᵀ (+ bias)`, `B` holding `N` rows of `K` quantised weights
/// in blocks, each weight `(q - zero_point) * scale` of its block.
fn matmul_nbits(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let l = Layout::of(c)?;
    let a = c.tensor(0)?;
    if a.shape().last() != Some(&l.k) {
        return Err(c.error(format!(
            "A has shape {:?}: expected its last axis to be K = {}",
            a.shape(),
            l.k
        )));
    }
    let w = weights(c, &l)?.cast(a.dtype())?;
    let mut y = a.matmul(&w.permute(&[1, 0])?)?;
    if let Some(bias) = c.opt_tensor(5)? {
        y = y.add(&bias)?;
    }
    one(y)
}

/// The dequantised weights, [N, K] in f32.
fn weights(c: &Ctx<'_>, l: &Layout) -> Result<Tensor> {
    let (n, blocks) = (l.n, l.blocks());
    let b = c.tensor(1)?;
    if b.dtype() != DType::U8 || b.shape() != [n, blocks, l.blob()] {
        return Err(c.error(format!(
            "B is {:?} {:?}: expected u8 [{n}, {blocks}, {}] (N, blocks of K, bytes per block)",
            b.dtype(),
            b.shape(),
            l.blob()
        )));
    }
    let q = unpack(&b, l.bits)?;
    let scales = per_block(c, &c.tensor(2)?, "scales", n, blocks)?;
    let w = q.sub(&zero_points(c, l)?)?.mul(&scales)?;
    w.reshape(&[n, blocks * l.block])?.slice(1, 0..l.k)
}

/// Unsigned `bits`-bit values packed in the bytes of `b` (low nibble first), as f32 with
/// the last axis `8 / bits` times longer.
fn unpack(b: &Tensor, bits: usize) -> Result<Tensor> {
    let f = b.cast(DType::F32)?;
    if bits == 8 {
        return Ok(f);
    }
    let high = f.div_scalar(16.0f32.into())?.unary(UnaryOp::Floor)?;
    let low = f.sub(&high.mul_scalar(16.0f32.into())?)?;
    let mut shape = b.shape().to_vec();
    let rank = shape.len();
    shape.push(1);
    let (low, high) = (low.reshape(&shape)?, high.reshape(&shape)?);
    let pairs = concat(&b.device().queue(), &[&low, &high], rank)?;
    shape.pop();
    if let Some(last) = shape.last_mut() {
        *last *= 2;
    }
    pairs.reshape(&shape)
}

/// The zero points, [N, blocks, 1] in f32: input 3 (packed like B, or of the scales' type),
/// else the middle of the range, `2^(bits - 1)`.
fn zero_points(c: &Ctx<'_>, l: &Layout) -> Result<Tensor> {
    let (n, blocks) = (l.n, l.blocks());
    let Some(zp) = c.opt_tensor(3)? else {
        let mid = f64::from(1u32 << (l.bits - 1));
        return Tensor::full(c.device, &[n, blocks, 1], mid, DType::F32);
    };
    if zp.dtype() != DType::U8 {
        return per_block(c, &zp, "zero_points", n, blocks);
    }
    let per_row = (blocks * l.bits).div_ceil(8);
    if zp.numel() != n * per_row {
        return Err(c.error(format!(
            "zero_points (u8) has {} elements: expected N · ceil(blocks · bits / 8) = {}",
            zp.numel(),
            n * per_row
        )));
    }
    let unpacked = unpack(&zp.reshape(&[n, per_row])?, l.bits)?;
    unpacked.slice(1, 0..blocks)?.reshape(&[n, blocks, 1])
}

/// A per-block input (scales, or zero points of the scales' type) as [N, blocks, 1] in f32.
fn per_block(c: &Ctx<'_>, t: &Tensor, what: &str, n: usize, blocks: usize) -> Result<Tensor> {
    if t.numel() != n * blocks || !t.dtype().is_float() {
        return Err(c.error(format!(
            "{what} is {:?} {:?}: expected {} floats (N · blocks of K)",
            t.dtype(),
            t.shape(),
            n * blocks
        )));
    }
    t.reshape(&[n, blocks, 1])?.cast(DType::F32)
}
