//! Matrix products, row statistics (softmax, normalisation), reductions and scans.

use super::{one, op, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::graph::Node;
use crate::onnx::value::Val;
use crate::ops::{ArgOptions, BinaryOp, CumsumOptions, NormKind, NormParams, ReduceOp, UnaryOp};
use crate::{DType, Tensor};

/// The matrix, row and reduction operators.
pub(super) const OPS: &[OpDef] = &[
    op("MatMul", matmul),
    op("Gemm", gemm),
    op("Softmax", |c| rows(c, false)),
    op("LogSoftmax", |c| rows(c, true)),
    op("LayerNormalization", layer_norm).outputs(3),
    op("RMSNormalization", rms_norm),
    op("ReduceSum", |c| reduce(c, Reduction::Sum)),
    op("ReduceMean", |c| reduce(c, Reduction::Mean)),
    op("ReduceMax", |c| reduce(c, Reduction::Max)),
    op("ReduceMin", |c| reduce(c, Reduction::Min)),
    op("ReduceProd", |c| reduce(c, Reduction::Prod)),
    op("ReduceL1", |c| reduce(c, Reduction::L1)),
    op("ReduceL2", |c| reduce(c, Reduction::L2)),
    op("ReduceSumSquare", |c| reduce(c, Reduction::SumSquare)),
    op("ReduceLogSumExp", |c| reduce(c, Reduction::LogSumExp)),
    op("ReduceLogSum", |c| reduce(c, Reduction::LogSum)),
    op("ArgMax", |c| arg(c, false)),
    op("ArgMin", |c| arg(c, true)),
    op("CumSum", cumsum),
    op("TopK", top_k).outputs(2).refusing(top_k_refusal),
];

/// `MatMul` with numpy's rules: a 1-D operand gains an axis for the product and loses it.
fn matmul(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let (a, b) = (c.tensor(0)?, c.tensor(1)?);
    let a2 = if a.rank() == 1 {
        a.reshape(&[1, a.shape()[0]])?
    } else {
        a.clone()
    };
    let b2 = if b.rank() == 1 {
        b.reshape(&[b.shape()[0], 1])?
    } else {
        b.clone()
    };
    let y = crate::ops::matmul::matmul(c.queue, &a2, &b2)?;
    let mut shape = y.shape().to_vec();
    if b.rank() == 1 {
        shape.pop();
    }
    if a.rank() == 1 {
        shape.remove(shape.len() - 1 - usize::from(b.rank() != 1));
    }
    one(y.reshape(&shape)?)
}

/// `Gemm`: `alpha * A' B' + beta * C`, `'` a transpose where `transA` / `transB` ask.
pub(super) fn gemm(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let flip = |t: Tensor, name: &str| -> Result<Tensor> {
        Ok(if c.int(name, 0)? != 0 {
            t.permute(&[1, 0])?
        } else {
            t
        })
    };
    let (a, b) = (flip(c.tensor(0)?, "transA")?, flip(c.tensor(1)?, "transB")?);
    let (alpha, beta) = (c.float("alpha", 1.0)?, c.float("beta", 1.0)?);
    let mut y = crate::ops::matmul::matmul(c.queue, &a, &b)?;
    if alpha != 1.0 {
        y = y.mul_scalar(alpha.into())?;
    }
    if let Some(bias) = c.opt_tensor(2)? {
        let bias = if beta != 1.0 {
            bias.mul_scalar(beta.into())?
        } else {
            bias
        };
        y = y.binary(BinaryOp::Add, &bias)?;
    }
    one(y)
}

/// `Softmax` / `LogSoftmax`: over one axis (default -1) from opset 13; before it, over the
/// axes from `axis` on (default 1), as rows of the input flattened to 2-D there.
fn rows(c: &Ctx<'_>, log: bool) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let rank = x.rank();
    let of = |x: &Tensor, axis| {
        if log {
            crate::ops::log_softmax::log_softmax_axis(c.queue, x, axis)
        } else {
            crate::ops::softmax::softmax_axis(c.queue, x, axis)
        }
    };
    if c.opset >= 13 {
        return one(of(&x, c.axis(c.int("axis", -1)?, rank)?)?);
    }
    let axis = c.axis(c.int("axis", 1)?, rank)?;
    let shape = x.shape().to_vec();
    let rows: usize = shape[..axis].iter().product();
    let flat = x.reshape(&[rows, shape[axis..].iter().product()])?;
    one(of(&flat, 1)?.reshape(&shape)?)
}

/// `LayerNormalization` over the axes from `axis` on, with its optional statistics outputs.
fn layer_norm(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let axis = c.axis(c.int("axis", -1)?, x.rank())?;
    let count = x.rank() - axis;
    let eps = c.float("epsilon", 1e-5)?;
    let (scale, bias) = (c.opt_tensor(1)?, c.opt_tensor(2)?);
    let params = NormParams {
        weight: scale.as_ref(),
        bias: bias.as_ref(),
        eps,
        act: None,
    };
    let y = crate::ops::norm::norm_trailing(c.queue, NormKind::Layer, &x, count, params)?;
    let mut out = vec![Val::Device(y)];
    if c.node.outputs.iter().skip(1).any(Option::is_some) {
        let (mean, inv) = crate::ops::norm::layer_norm_stats(c.queue, &x, count, eps)?;
        out.extend([Val::Device(mean), Val::Device(inv)]);
    }
    Ok(out)
}

/// `RMSNormalization` (opset 23) over the axes from `axis` on, scaled.
fn rms_norm(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let axis = c.axis(c.int("axis", -1)?, x.rank())?;
    let scale = c.opt_tensor(1)?;
    let eps = c.float("epsilon", 1e-5)?;
    let params = NormParams {
        weight: scale.as_ref(),
        bias: None,
        eps,
        act: None,
    };
    one(crate::ops::norm::norm_trailing(
        c.queue,
        NormKind::Rms,
        &x,
        x.rank() - axis,
        params,
    )?)
}

/// The reductions, with those the library lacks composed from the ones it has.
#[derive(Clone, Copy, PartialEq)]
enum Reduction {
    Sum,
    Mean,
    Max,
    Min,
    Prod,
    L1,
    L2,
    SumSquare,
    LogSumExp,
    LogSum,
}

/// The reduced axes: an attribute, or (ReduceSum from opset 13, the others from 18) an input.
/// None given reduces every axis, or none with `noop_with_empty_axes`.
fn reduced_axes(c: &Ctx<'_>, sum: bool, rank: usize) -> Result<Option<Vec<usize>>> {
    let from_input = c.opset >= if sum { 13 } else { 18 };
    let axes = if from_input {
        c.ints(1)?
    } else {
        c.int_list("axes")?
    };
    match axes {
        Some(a) if !a.is_empty() => Ok(Some(
            a.iter()
                .map(|&a| c.axis(a, rank))
                .collect::<Result<Vec<_>>>()?,
        )),
        _ if c.int("noop_with_empty_axes", 0)? != 0 => Ok(None),
        _ => Ok(Some((0..rank).collect())),
    }
}

fn reduce(c: &Ctx<'_>, r: Reduction) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let Some(mut axes) = reduced_axes(c, r == Reduction::Sum, x.rank())? else {
        return one(x);
    };
    axes.sort_unstable();
    axes.dedup();
    let keep = c.int("keepdims", 1)? != 0;
    let by = |op, t: &Tensor, keep| {
        crate::ops::reduce::reduce_axes_with_identity(c.queue, op, t, &axes, keep)
    };
    one(match r {
        Reduction::Sum => by(ReduceOp::Sum, &x, keep)?,
        Reduction::Mean => by(ReduceOp::Mean, &x, keep)?,
        Reduction::Max => by(ReduceOp::Max, &x, keep)?,
        Reduction::Min => by(ReduceOp::Min, &x, keep)?,
        Reduction::Prod => by(ReduceOp::Prod, &x, keep)?,
        Reduction::L1 => by(ReduceOp::Sum, &x.unary(UnaryOp::Abs)?, keep)?,
        Reduction::LogSum => by(ReduceOp::Sum, &x, keep)?.unary(UnaryOp::Log)?,
        Reduction::SumSquare => by(ReduceOp::Sum, &x.binary(BinaryOp::Mul, &x)?, keep)?,
        Reduction::L2 => {
            by(ReduceOp::Sum, &x.binary(BinaryOp::Mul, &x)?, keep)?.unary(UnaryOp::Sqrt)?
        }
        Reduction::LogSumExp => {
            let m = by(ReduceOp::Max, &x, true)?;
            let e = x.binary(BinaryOp::Sub, &m)?.unary(UnaryOp::Exp)?;
            let s = by(ReduceOp::Sum, &e, true)?
                .unary(UnaryOp::Log)?
                .binary(BinaryOp::Add, &m)?;
            if keep {
                s
            } else {
                let shape: Vec<usize> = (0..x.rank())
                    .filter(|i| !axes.contains(i))
                    .map(|i| x.shape()[i])
                    .collect();
                s.reshape(&shape)?
            }
        }
    })
}

/// `ArgMax` / `ArgMin` as i64 indices.
fn arg(c: &Ctx<'_>, min: bool) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let axis = c.axis(c.int("axis", 0)?, x.rank())?;
    let last = c.int("select_last_index", 0)? != 0;
    let y = crate::ops::reduce::arg_reduce(c.queue, &x, axis, ArgOptions { min, last })?;
    let mut shape = x.shape().to_vec();
    if c.int("keepdims", 1)? != 0 {
        shape[axis] = 1;
    } else {
        shape.remove(axis);
    }
    one(y.cast(DType::I64)?.reshape(&shape)?)
}

fn cumsum(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let axis_value = c.ints(1)?.and_then(|a| a.first().copied()).unwrap_or(0);
    let axis = c.axis(axis_value, x.rank())?;
    let options = CumsumOptions {
        exclusive: c.int("exclusive", 0)? != 0,
        reverse: c.int("reverse", 0)? != 0,
    };
    one(crate::ops::scan::cumsum_with(c.queue, &x, axis, options)?)
}

/// Why a `TopK` node cannot run: no `k`, neither the attribute (opset 1) nor the input (10+).
fn top_k_refusal(node: &Node) -> Option<String> {
    let attribute = node.attrs.int("k").ok().flatten().is_some();
    let input = node.inputs.get(1).is_some_and(Option::is_some);
    (!attribute && !input).then(|| "no k: expected the attribute k or a second input".into())
}

/// `TopK`: the `k` largest (with `largest` 0, smallest) along `axis` (default -1), sorted,
/// and their i64 indices; ties go to the lower index, NaN ranks above every number (see
/// [`crate::ops::topk::topk`]). `k` is an attribute before opset 10 and a one-element input
/// (read on the host) from it; `sorted` 0 leaves the order open, and the output is sorted.
fn top_k(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let axis = c.axis(c.int("axis", -1)?, x.rank())?;
    let k = match c.opset {
        ..=9 => vec![c.int("k", -1)?],
        _ => c.ints(1)?.unwrap_or_default(),
    };
    let k = match k[..] {
        [one] => usize::try_from(one).ok(),
        _ => None,
    }
    .ok_or_else(|| c.error(format!("k is {k:?}: expected one number, 0 or more")))?;
    let largest = c.int("largest", 1)? != 0;
    let (values, indices) = crate::ops::topk::topk(c.queue, &x, k, axis, largest)?;
    Ok(vec![
        Val::Device(values),
        Val::Device(indices.cast(DType::I64)?),
    ])
}
