//! `MatMulNBits` (`com.microsoft`): a matrix product with block-quantised weights, as
//! onnxruntime's `matmul_nbits_quantizer` and the model builders for small LLMs write it.
//! It runs as the library's quantised matmul (`ops::qmatmul`), whose kernels read the packed
//! weights and dequantise them in registers.

use super::{one, op, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::value::Val;
use crate::onnx::Node;
use crate::ops::qmatmul::QuantWeights;
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
    let scales = c.tensor(2)?;
    check_per_block(c, &scales, "scales", n * blocks)?;
    let zero_points = c.opt_tensor(3)?;
    if let Some(zp) = &zero_points {
        check_zero_points(c, zp, &l)?;
    }
    let weights = QuantWeights {
        packed: &b,
        scales: &scales,
        zero_points: zero_points.as_ref(),
        k: l.k,
        bits: l.bits,
        block: l.block,
    };
    let bias = c.opt_tensor(5)?;
    one(a.qmatmul(&weights, bias.as_ref())?)
}

/// Error unless the zero points are packed u8 (`N · ceil(blocks · bits / 8)` bytes) or
/// floats, one per block.
fn check_zero_points(c: &Ctx<'_>, zp: &Tensor, l: &Layout) -> Result<()> {
    let (n, blocks) = (l.n, l.blocks());
    if zp.dtype() != DType::U8 {
        return check_per_block(c, zp, "zero_points", n * blocks);
    }
    let per_row = (blocks * l.bits).div_ceil(8);
    if zp.numel() != n * per_row {
        return Err(c.error(format!(
            "zero_points (u8) has {} elements: expected N · ceil(blocks · bits / 8) = {}",
            zp.numel(),
            n * per_row
        )));
    }
    Ok(())
}

/// Error unless a per-block input (scales, or zero points of the scales' type) holds
/// `count` floats (N · blocks of K).
fn check_per_block(c: &Ctx<'_>, t: &Tensor, what: &str, count: usize) -> Result<()> {
    if t.numel() != count || !t.dtype().is_float() {
        return Err(c.error(format!(
            "{what} is {:?} {:?}: expected {count} floats (N · blocks of K)",
            t.dtype(),
            t.shape(),
        )));
    }
    Ok(())
}
