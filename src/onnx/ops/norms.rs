//! Normalisations over channels and groups (BatchNormalization for inference,
//! InstanceNormalization, GroupNormalization, LpNormalization, LRN) and Trilu's triangle mask.

use super::{one, op, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::value::Val;
use crate::onnx::Node;
use crate::ops::conv::pool2d_with;
use crate::ops::{BinaryOp, NormKind, NormParams, PoolKind, PoolOptions, ReduceOp, UnaryOp};
use crate::Tensor;

/// The channel normalisations and `Trilu`.
pub(super) const OPS: &[OpDef] = &[
    op("BatchNormalization", batch_norm).refusing(training),
    op("InstanceNormalization", instance_norm),
    op("GroupNormalization", group_norm),
    op("LpNormalization", lp_norm),
    op("LRN", lrn),
    op("Trilu", trilu),
];

/// BatchNormalization runs for inference only.
fn training(node: &Node) -> Option<String> {
    let on = node
        .attrs
        .int("training_mode")
        .ok()
        .flatten()
        .is_some_and(|&t| t != 0);
    on.then(|| "training_mode is set; only inference runs".into())
}

/// Local response normalisation across channels: `x / (bias + alpha / size * s)^beta`, where
/// `s` sums `x²` over the `size` channels around each (fewer at the edges). The sum is an
/// average pool of `x²` over a `[size, 1]` window of `[n, 1, c, rest]`, padding counted.
fn lrn(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let size = c.int("size", 0)?;
    let shape = x.shape().to_vec();
    if size < 1 || shape.len() < 2 {
        return Err(c.error(format!(
            "size {size} on shape {shape:?}: expected size >= 1 and an input [n, c, ...]"
        )));
    }
    let size = size as usize;
    let rest: usize = shape[2..].iter().product();
    let squares = x.mul(&x)?.reshape(&[shape[0], 1, shape[1], rest])?;
    let options = PoolOptions {
        kernel: [size, 1],
        stride: [1, 1],
        padding: [(size - 1) / 2, 0, size / 2, 0],
        dilation: [1, 1],
        count_include_pad: true,
        ceil_mode: false,
    };
    let mean = pool2d_with(c.queue, PoolKind::Avg, &squares, options)?.reshape(&shape)?;
    let (alpha, beta, bias) = (
        c.float("alpha", 1e-4)?,
        c.float("beta", 0.75)?,
        c.float("bias", 1.0)?,
    );
    let scale = mean.affine(alpha.into(), bias.into())?;
    let denominator = scale.binary_scalar(BinaryOp::Pow, beta.into())?;
    one(x.binary(BinaryOp::Div, &denominator)?)
}

/// A per-channel vector `[c]` shaped to broadcast over `[n, c, ...]` of rank `rank`.
fn per_channel(t: Tensor, rank: usize) -> Result<Tensor> {
    let mut shape = vec![1; rank.max(2) - 1];
    shape[0] = t.numel();
    t.reshape(&shape)
}

/// `(x - mean) * scale / sqrt(var + eps) + bias`, per channel.
fn batch_norm(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let eps = f64::from(c.float("epsilon", 1e-5)?);
    let [scale, bias, mean, var] = [1, 2, 3, 4].map(|i| c.tensor(i));
    let factor = var?
        .add_scalar(eps)?
        .unary(UnaryOp::Rsqrt)?
        .binary(BinaryOp::Mul, &scale?)?;
    // x * factor + (bias - mean * factor): the per-channel vectors first, then two passes
    // over x instead of three.
    let shift = bias?.binary(BinaryOp::Sub, &mean?.binary(BinaryOp::Mul, &factor)?)?;
    one(affine(x, factor, shift)?)
}

/// `y * scale + bias` per channel of `[n, c, ...]`.
fn affine(y: Tensor, scale: Tensor, bias: Tensor) -> Result<Tensor> {
    let r = y.rank();
    y.binary(BinaryOp::Mul, &per_channel(scale, r)?)?
        .binary(BinaryOp::Add, &per_channel(bias, r)?)
}

/// Normalised over the spatial axes of each `(n, c)`, then scaled per channel.
fn instance_norm(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    if x.rank() < 3 {
        return Err(c.error(format!(
            "a rank-{} input: expected [n, c, ...spatial]",
            x.rank()
        )));
    }
    let eps = c.float("epsilon", 1e-5)?;
    let params = NormParams {
        eps,
        ..NormParams::default()
    };
    let y = crate::ops::norm::norm_trailing(c.queue, NormKind::Layer, &x, x.rank() - 2, params)?;
    one(affine(y, c.tensor(1)?, c.tensor(2)?)?)
}

/// Normalised over each group of channels (with their spatial axes), then scaled per channel
/// (opset 21), or per group where the scale has one value per group (opset 18).
fn group_norm(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let shape = x.shape().to_vec();
    let groups = c.int("num_groups", 0)?;
    let channels = *shape.get(1).unwrap_or(&0);
    if groups < 1 || channels % groups as usize != 0 {
        return Err(c.error(format!("{groups} groups of {channels} channels")));
    }
    let g = groups as usize;
    let eps = c.float("epsilon", 1e-5)?;
    let params = NormParams {
        eps,
        ..NormParams::default()
    };
    let grouped = x.reshape(&[shape[0], g, shape[1..].iter().product::<usize>() / g])?;
    let y = crate::ops::norm::norm_trailing(c.queue, NormKind::Layer, &grouped, 1, params)?;
    let y = y.reshape(&shape)?;
    let widen = |t: Tensor| -> Result<Tensor> {
        if t.numel() == channels {
            return Ok(t);
        }
        // One value per group: each repeated for the group's channels.
        let each = channels / g;
        t.reshape(&[g, 1])?
            .broadcast_to(&[g, each])?
            .contiguous()?
            .reshape(&[channels])
    };
    one(affine(y, widen(c.tensor(1)?)?, widen(c.tensor(2)?)?)?)
}

/// `x / |x|_p` along `axis`, p 1 or 2 (a zero norm leaves the zeros).
fn lp_norm(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let axis = c.axis(c.int("axis", -1)?, x.rank())?;
    let norm = match c.int("p", 2)? {
        1 => x
            .unary(UnaryOp::Abs)?
            .reduce_axes(ReduceOp::Sum, &[axis], true)?,
        2 => {
            let squares = x.binary(BinaryOp::Mul, &x)?;
            squares
                .reduce_axes(ReduceOp::Sum, &[axis], true)?
                .unary(UnaryOp::Sqrt)?
        }
        p => return Err(c.error(format!("p is {p}; expected 1 or 2"))),
    };
    // A zero norm divides by 1, so an all-zero slice stays zero (as ONNX's reference).
    let ones = Tensor::full(c.device, &[1], 1.0, norm.dtype())?;
    let norm = crate::ops::select::where_(c.queue, &norm, &norm, &ones)?;
    one(x.binary(BinaryOp::Div, &norm)?)
}

/// The upper (or lower) triangle of the last two axes, from diagonal `k` on; zeros elsewhere.
fn trilu(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let r = x.rank();
    if r < 2 {
        return Err(c.error(format!("a rank-{r} input: expected at least 2 axes")));
    }
    let k = c.ints(1)?.and_then(|v| v.first().copied()).unwrap_or(0);
    let upper = c.int("upper", 1)? != 0;
    let (rows, cols) = (x.shape()[r - 2], x.shape()[r - 1]);
    let mask: Vec<u32> = (0..rows * cols)
        .map(|at| {
            let d = (at % cols) as i64 - (at / cols) as i64;
            u32::from(if upper { d >= k } else { d <= k })
        })
        .collect();
    let mask = Tensor::from_slice(c.device, &mask, &[rows, cols])?;
    let zeros = Tensor::zeros(c.device, &[1], x.dtype())?;
    one(crate::ops::select::where_(c.queue, &mask, &x, &zeros)?)
}
