//! onnxruntime's fused layers: `FusedConv` (a `Conv`, plus a residual `Z` where given, then an
//! activation), `FusedGemm` (a `Gemm`, then an activation) and `FusedMatMul` (a `MatMul` of
//! operands transposed in their last two axes, scaled by `alpha`). onnxruntime's optimizer
//! writes them, and so does this runner's `fuse` graph pass (`onnx::passes`).
//!
//! The activations are onnxruntime's (`Relu`, `Sigmoid`, `Tanh`, `LeakyRelu`, `Clip`,
//! `HardSigmoid`, with `FusedConv`'s `activation_params` or `FusedGemm`'s `activation_alpha`
//! and `activation_beta`), and, as this runner's extension for what its kernels fuse, `Silu`,
//! `Gelu` (the erf form), `GeluTanh` and `HardSwish`. Those of the library's activations run
//! inside the convolution's or product's kernel; `FusedGemm` with `A` of more than two axes
//! (`[.., m, k]` rows, untransposed) is also this runner's extension.

use super::super::conv::{conv as conv_op, conv_refusal};
use super::super::math::leaky;
use super::super::nn::gemm as gemm_op;
use super::super::{one, Ctx};
use crate::base::error::Result;
use crate::onnx::value::Val;
use crate::onnx::Node;
use crate::ops::matmul::{linear, matmul};
use crate::ops::{BinaryOp, UnaryOp};
use crate::Tensor;

/// An activation of a fused node.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Act {
    /// One of the library's, which its kernels apply in their epilogue.
    Unary(UnaryOp),
    /// `LeakyRelu` with its slope.
    Leaky(f64),
    /// `Clip` to `[min, max]`.
    Clip(f64, f64),
    /// `HardSigmoid`: `max(0, min(1, alpha x + beta))`.
    HardSigmoid(f64, f64),
}

/// The activation called `name` with parameters `p`, if it is one of the known ones.
fn act_of(name: &str, p: &[f64]) -> Option<Act> {
    let at = |i: usize, default: f64| p.get(i).copied().unwrap_or(default);
    Some(match name {
        "Relu" => Act::Unary(UnaryOp::Relu),
        "Sigmoid" => Act::Unary(UnaryOp::Sigmoid),
        "Tanh" => Act::Unary(UnaryOp::Tanh),
        "Silu" => Act::Unary(UnaryOp::Silu),
        "Gelu" => Act::Unary(UnaryOp::GeluErf),
        "GeluTanh" => Act::Unary(UnaryOp::GeluTanh),
        "HardSwish" => Act::Unary(UnaryOp::Hardswish),
        "LeakyRelu" => Act::Leaky(at(0, 0.01)),
        "Clip" => match (at(0, f64::NEG_INFINITY), at(1, f64::INFINITY)) {
            (low, high) if low == 0.0 && high == 6.0 => Act::Unary(UnaryOp::Relu6),
            (low, high) => Act::Clip(low, high),
        },
        "HardSigmoid" => Act::HardSigmoid(at(0, 0.2), at(1, 0.5)),
        _ => return None,
    })
}

/// The names [`act_of`] knows, for errors.
const ACTIVATIONS: &str =
    "Relu, Sigmoid, Tanh, LeakyRelu, Clip, HardSigmoid, Silu, Gelu, GeluTanh or HardSwish";

/// The node's activation: `None` where it names none.
fn activation(node: &Node) -> std::result::Result<Option<Act>, String> {
    let a = &node.attrs;
    let Some(name) = a.string("activation").ok().flatten() else {
        return Ok(None);
    };
    let params: Vec<f64> = match a.floats("activation_params").ok().flatten() {
        Some(p) => p.iter().map(|&v| f64::from(v)).collect(),
        None => ["activation_alpha", "activation_beta"]
            .iter()
            .map_while(|n| a.float(n).ok().flatten().map(|&v| f64::from(v)))
            .collect(),
    };
    match act_of(name, &params) {
        Some(act) => Ok(Some(act)),
        None => Err(format!("activation '{name}' is not one of {ACTIVATIONS}")),
    }
}

/// `act` applied to `y` outside a kernel.
fn apply(y: Tensor, act: Option<Act>) -> Result<Tensor> {
    match act {
        None => Ok(y),
        Some(Act::Unary(op)) => y.unary(op),
        Some(Act::Leaky(alpha)) => leaky(&y, alpha),
        Some(Act::Clip(low, high)) => y
            .binary_scalar(BinaryOp::Max, low)?
            .binary_scalar(BinaryOp::Min, high),
        Some(Act::HardSigmoid(alpha, beta)) => y
            .affine(alpha, beta)?
            .binary_scalar(BinaryOp::Min, 1.0)?
            .binary_scalar(BinaryOp::Max, 0.0),
    }
}

/// The activation of the node being run (checked at load).
fn act(c: &Ctx<'_>) -> Result<Option<Act>> {
    activation(c.node).map_err(|why| c.error(why))
}

/// Why a `FusedConv` cannot run: a `Conv`'s reasons, or an unknown activation.
pub(super) fn fused_conv_refusal(node: &Node) -> Option<String> {
    conv_refusal(node).or_else(|| activation(node).err())
}

/// `FusedConv`: `act(conv(X, W, B) + Z)`, the activation in the convolution's kernel where
/// there is no `Z` and the library has it.
pub(super) fn conv(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let act = act(c)?;
    let z = c.opt_tensor(3)?;
    if let (Some(Act::Unary(op)), None) = (act, &z) {
        return conv_op(c, Some(op));
    }
    let mut y = conv_op(c, None)?.remove(0).tensor(c.device)?;
    if let Some(z) = z {
        y = y.add(&z)?;
    }
    one(apply(y, act)?)
}

/// Why a `FusedGemm` cannot run: an unknown activation.
pub(super) fn gemm_refusal(node: &Node) -> Option<String> {
    activation(node).err()
}

/// `FusedGemm`: `act(alpha A' B' + beta C)`; one kernel for an untransposed `A` (of any rank,
/// as `MatMul` takes it), unit `alpha` and `beta` and a bias `C` of `[n]` or none.
pub(super) fn gemm(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let act = act(c)?;
    let (a, b, bias) = (c.tensor(0)?, c.tensor(1)?, c.opt_tensor(2)?);
    let unit = c.float("alpha", 1.0)? == 1.0 && (bias.is_none() || c.float("beta", 1.0)? == 1.0);
    let (trans_a, trans_b) = (c.int("transA", 0)? != 0, c.int("transB", 0)? != 0);
    let n = b.shape().get(usize::from(!trans_b)).copied();
    let row = bias
        .as_ref()
        .is_none_or(|t| t.rank() == 1 && Some(t.numel()) == n);
    if unit && !trans_a && a.rank() >= 1 && b.rank() == 2 && row {
        let w = if trans_b { b.permute(&[1, 0])? } else { b };
        let fused = match act {
            Some(Act::Unary(op)) => Some(op),
            _ => None,
        };
        // A vector is a row, as MatMul takes it, and gives a vector.
        let x = match a.rank() {
            1 => a.reshape(&[1, a.numel()])?,
            _ => a.clone(),
        };
        let mut y = linear(c.queue, &x, &w, bias.as_ref(), fused)?;
        if a.rank() == 1 {
            y = y.reshape(&[y.numel()])?;
        }
        return one(if fused.is_some() { y } else { apply(y, act)? });
    }
    let y = gemm_op(c)?.remove(0).tensor(c.device)?;
    one(apply(y, act)?)
}

/// Why a `FusedMatMul` cannot run: transposes of the batch axes, which onnxruntime's
/// optimizer writes for some layouts only.
pub(super) fn matmul_refusal(node: &Node) -> Option<String> {
    ["transBatchA", "transBatchB"].iter().find_map(|name| {
        let on = node.attrs.int(name).ok().flatten().is_some_and(|&v| v != 0);
        on.then(|| format!("{name} is set; expected 0"))
    })
}

/// `FusedMatMul`: `alpha A' B'`, `'` the swap of the last two axes where `transA` / `transB`
/// ask.
pub(super) fn fused_matmul(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let flip = |t: Tensor, name: &str| -> Result<Tensor> {
        if c.int(name, 0)? == 0 {
            return Ok(t);
        }
        let r = t.rank();
        if r < 2 {
            return Err(c.error(format!("{name} is set on an operand of rank {r}")));
        }
        let mut axes: Vec<usize> = (0..r).collect();
        axes.swap(r - 2, r - 1);
        t.permute(&axes)
    };
    let (a, b) = (flip(c.tensor(0)?, "transA")?, flip(c.tensor(1)?, "transB")?);
    let y = matmul(c.queue, &a, &b)?;
    let alpha = c.float("alpha", 1.0)?;
    one(if alpha == 1.0 {
        y
    } else {
        y.mul_scalar(alpha.into())?
    })
}
