//! Elementwise operators: the library's unary and binary ops, n-ary folds, and the
//! activations with parameters composed from them.

use super::{one, op, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::elem::ElemType;
use crate::onnx::legacy::legacy_axis;
use crate::onnx::value::{HostData, HostTensor, Val};
use crate::onnx::Node;
use crate::ops::elementwise::{binary, nary, unary};
use crate::ops::{BinaryOp, UnaryOp};
use crate::{DType, Tensor};

/// The elementwise operators.
pub(super) const OPS: &[OpDef] = &[
    op("Abs", |c| un(c, UnaryOp::Abs)),
    op("Neg", |c| un(c, UnaryOp::Neg)),
    op("Exp", |c| un(c, UnaryOp::Exp)),
    op("Log", |c| un(c, UnaryOp::Log)),
    op("Sqrt", |c| un(c, UnaryOp::Sqrt)),
    op("Sin", |c| un(c, UnaryOp::Sin)),
    op("Cos", |c| un(c, UnaryOp::Cos)),
    op("Tanh", |c| un(c, UnaryOp::Tanh)),
    op("Sigmoid", |c| un(c, UnaryOp::Sigmoid)),
    op("Relu", |c| un(c, UnaryOp::Relu)),
    op("Erf", |c| un(c, UnaryOp::Erf)),
    op("Softplus", |c| un(c, UnaryOp::Softplus)),
    op("HardSwish", |c| un(c, UnaryOp::Hardswish)),
    op("Floor", |c| un(c, UnaryOp::Floor)),
    op("Ceil", |c| un(c, UnaryOp::Ceil)),
    op("Round", |c| un(c, UnaryOp::Round)),
    op("Sign", |c| un(c, UnaryOp::Sign)),
    op("Mod", modulo),
    op("Gelu", gelu),
    op("Reciprocal", |c| {
        one(c.tensor(0)?.scalar_binary(1.0, BinaryOp::Div)?)
    }),
    op("Identity", |c| Ok(vec![c.value(0)?.clone()])),
    op("Dropout", |c| Ok(vec![c.input(0)?.clone()])).refusing(training),
    op("Add", |c| bin(c, BinaryOp::Add)),
    op("Sub", |c| bin(c, BinaryOp::Sub)),
    op("Mul", |c| bin(c, BinaryOp::Mul)),
    op("Div", |c| bin(c, BinaryOp::Div)),
    op("Pow", |c| bin(c, BinaryOp::Pow)),
    op("Max", |c| fold(c, BinaryOp::Max)),
    op("Min", |c| fold(c, BinaryOp::Min)),
    op("Sum", |c| fold(c, BinaryOp::Add)),
    op("Mean", mean),
    op("LeakyRelu", leaky_relu),
    op("Elu", elu),
    op("Selu", selu),
    op("HardSigmoid", hard_sigmoid),
    op("Shrink", shrink),
    op("PRelu", prelu),
    op("Clip", clip),
];

/// `op` of input 0: on the host where the input is there (shape arithmetic).
fn un(c: &Ctx<'_>, op: UnaryOp) -> Result<Vec<Val>> {
    if let Val::Host(h) = c.input(0)? {
        let data = match &h.data {
            HostData::F32(v) => {
                HostData::F32(v.iter().map(|&x| op.eval(f64::from(x)) as f32).collect())
            }
            HostData::I64(v) => HostData::I64(match op {
                UnaryOp::Neg => v.iter().map(|x| h.elem.wrap(x.wrapping_neg())).collect(),
                UnaryOp::Abs => v.iter().map(|x| h.elem.wrap(x.wrapping_abs())).collect(),
                UnaryOp::Sign => v.iter().map(|x| x.signum()).collect(),
                UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => v.clone(),
                _ => return one(unary(c.queue, op, &c.tensor(0)?)?),
            }),
        };
        return Ok(vec![Val::Host(HostTensor { data, ..h.clone() })]);
    }
    let x = c.tensor(0)?;
    if op == UnaryOp::Sign && !x.dtype().is_float() {
        // Exact: the f32 of an integer has its sign.
        let sign = unary(c.queue, op, &x.cast(DType::F32)?)?;
        return one(sign.cast(x.dtype())?);
    }
    one(unary(c.queue, op, &x)?)
}

/// `Mod`, broadcasting: `a - trunc(a / b) * b`, the sign of `a` (C's fmod) with `fmod = 1`;
/// with `fmod = 0` (ONNX allows it for integers only; floats take it too) a non-zero
/// remainder whose sign differs from `b`'s gets `b` added, the sign of `b` (Python's `%`).
/// Integers divide with the library's rules, so `x mod 0 = x` in both modes (no panic, no
/// error: a kernel cannot refuse one element) and `MIN mod -1 = 0`. Floats round `a / b`
/// before the truncation (a quotient within an ulp below an integer may truncate to it, and
/// the product rounds), and `x mod ±inf` is NaN rather than C's `x`.
fn modulo(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let fmod = c.int("fmod", 0)?;
    if !(0..=1).contains(&fmod) {
        return Err(c.error(format!("fmod is {fmod}; expected 0 or 1")));
    }
    let (a, b) = (c.tensor(0)?, c.tensor(1)?);
    if a.dtype() != b.dtype() {
        return Err(c.error(format!(
            "the operands are {} and {}; expected one dtype",
            a.dtype(),
            b.dtype()
        )));
    }
    let mut q = a.binary(BinaryOp::Div, &b)?;
    if a.dtype().is_float() {
        let negative = q.binary_scalar(BinaryOp::Less, 0.0)?;
        q = negative.select(&q.unary(UnaryOp::Ceil)?, &q.unary(UnaryOp::Floor)?)?;
    }
    let r = a.binary(BinaryOp::Sub, &q.binary(BinaryOp::Mul, &b)?)?;
    if fmod == 1 {
        return one(r);
    }
    let below = |t: &Tensor| t.binary_scalar(BinaryOp::Less, 0.0);
    let above = |t: &Tensor| t.binary_scalar(BinaryOp::Greater, 0.0);
    let differ = below(&r)?.binary(BinaryOp::And, &above(&b)?)?.binary(
        BinaryOp::Or,
        &above(&r)?.binary(BinaryOp::And, &below(&b)?)?,
    )?;
    one(differ.select(&r.binary(BinaryOp::Add, &b)?, &r)?)
}

/// `op` of inputs 0 and 1, broadcasting: on the host where both are there (shape
/// arithmetic); `Pow` takes its exponent in the base's dtype.
pub(super) fn bin(c: &Ctx<'_>, op: BinaryOp) -> Result<Vec<Val>> {
    let axis = (c.opset < 7).then(|| legacy_axis(c.node)).flatten();
    if let (Val::Host(a), Val::Host(b), None) = (c.input(0)?, c.input(1)?, axis) {
        return Ok(vec![Val::Host(host_binary(op, a, b)?)]);
    }
    let (a, mut b) = (c.tensor(0)?, c.tensor(1)?);
    if let Some(axis) = axis {
        b = aligned_at(c, &b, c.axis(axis, a.rank())?, a.rank())?;
    }
    if op == BinaryOp::Pow && b.dtype() != a.dtype() {
        b = b.cast(a.dtype())?;
    }
    one(binary(c.queue, op, &a, &b)?)
}

/// `b` lined up with the axes of a rank-`rank` input from `axis` on (opset 6's `broadcast`
/// with an `axis`): trailing axes of extent 1 added.
fn aligned_at(c: &Ctx<'_>, b: &Tensor, axis: usize, rank: usize) -> Result<Tensor> {
    let Some(trailing) = rank.checked_sub(axis + b.rank()) else {
        return Err(c.error(format!(
            "input 1 of rank {} does not fit at axis {axis} of a rank-{rank} input",
            b.rank()
        )));
    };
    let mut shape = b.shape().to_vec();
    shape.resize(shape.len() + trailing, 1);
    b.reshape(&shape)
}

/// `op(a, b)` on the host with numpy's broadcasting, in `a`'s element type (integers
/// wrapping into it), or bool for the comparisons and logical ops.
pub(super) fn host_binary(op: BinaryOp, a: &HostTensor, b: &HostTensor) -> Result<HostTensor> {
    let shape = crate::base::layout::broadcast_shapes(op.name(), &a.shape, &b.shape)?;
    let (ia, ib) = (
        broadcast_index(&a.shape, &shape),
        broadcast_index(&b.shape, &shape),
    );
    let elem = if op.is_logic() {
        ElemType::Bool
    } else {
        a.elem
    };
    let data = match (&a.data, &b.data) {
        (HostData::I64(x), HostData::I64(y)) => HostData::I64(
            ia.iter()
                .zip(&ib)
                .map(|(&i, &j)| elem.wrap(op.eval_int(x[i], y[j])))
                .collect(),
        ),
        _ if op.is_logic() => {
            let (x, y) = (a.to_f64(), b.to_f64());
            let v = ia
                .iter()
                .zip(&ib)
                .map(|(&i, &j)| op.eval(x[i], y[j]) as i64);
            HostData::I64(v.collect())
        }
        _ => {
            let (x, y) = (a.to_f64(), b.to_f64());
            let v = ia
                .iter()
                .zip(&ib)
                .map(|(&i, &j)| op.eval(x[i], y[j]) as f32)
                .collect();
            HostData::F32(v)
        }
    };
    Ok(HostTensor { elem, shape, data })
}

/// For each element of `out` (row-major), the element of a tensor of `shape` broadcast to it.
pub(super) fn broadcast_index(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let pad = out.len() - shape.len();
    let mut strides = vec![0; out.len()];
    let mut step = 1;
    for i in (0..shape.len()).rev() {
        strides[i + pad] = if shape[i] == 1 { 0 } else { step };
        step *= shape[i];
    }
    let n: usize = out.iter().product();
    (0..n)
        .map(|mut flat| {
            let mut at = 0;
            for i in (0..out.len()).rev() {
                at += (flat % out[i]) * strides[i];
                flat /= out[i];
            }
            at
        })
        .collect()
}

/// Every input combined with `op`, broadcasting.
fn fold(c: &Ctx<'_>, op: BinaryOp) -> Result<Vec<Val>> {
    let tensors = (0..c.inputs.len())
        .map(|i| c.tensor(i))
        .collect::<Result<Vec<_>>>()?;
    match tensors.as_slice() {
        [only] => Ok(vec![Val::Device(only.clone())]),
        _ => one(nary(c.queue, op, &tensors.iter().collect::<Vec<_>>())?),
    }
}

fn mean(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let sum = fold(c, BinaryOp::Add)?.remove(0).tensor(c.device)?;
    one(sum.mul_scalar(1.0 / c.inputs.len() as f64)?)
}

/// `Gelu` (opset 20): the erf form, or the tanh one with `approximate = "tanh"`.
fn gelu(c: &Ctx<'_>) -> Result<Vec<Val>> {
    match c.string("approximate", "none")?.as_str() {
        "none" => un(c, UnaryOp::GeluErf),
        "tanh" => un(c, UnaryOp::GeluTanh),
        other => Err(c.error(format!(
            "approximate is '{other}'; expected 'none' or 'tanh'"
        ))),
    }
}

/// Dropout runs for inference only: the input as it is; its mask output (bool) and
/// training mode are refused.
fn training(node: &Node) -> Option<String> {
    node.inputs.get(2).is_some_and(Option::is_some).then(|| {
        "its training_mode input is given; only inference (the input as it is) runs".into()
    })
}

/// `relu(x) - alpha * relu(-x)`.
pub(super) fn leaky(x: &Tensor, alpha: f64) -> Result<Tensor> {
    let neg = x.unary(UnaryOp::Neg)?.unary(UnaryOp::Relu)?;
    x.unary(UnaryOp::Relu)?
        .binary(BinaryOp::Sub, &neg.mul_scalar(alpha)?)
}

fn leaky_relu(c: &Ctx<'_>) -> Result<Vec<Val>> {
    one(leaky(&c.tensor(0)?, c.float("alpha", 0.01)?.into())?)
}

/// `alpha * (exp(min(x, 0)) - 1) + relu(x)`.
fn elu_of(x: &Tensor, alpha: f64) -> Result<Tensor> {
    let low = x.binary_scalar(BinaryOp::Min, 0.0)?.unary(UnaryOp::Exp)?;
    low.affine(alpha, -alpha)?
        .binary(BinaryOp::Add, &x.unary(UnaryOp::Relu)?)
}

fn elu(c: &Ctx<'_>) -> Result<Vec<Val>> {
    one(elu_of(&c.tensor(0)?, c.float("alpha", 1.0)?.into())?)
}

fn selu(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let alpha = c.float("alpha", 1.673_263_2)?;
    let gamma = c.float("gamma", 1.050_701)?;
    one(elu_of(&c.tensor(0)?, alpha.into())?.mul_scalar(gamma.into())?)
}

/// `max(0, min(1, alpha * x + beta))`.
fn hard_sigmoid(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let (alpha, beta) = (c.float("alpha", 0.2)?, c.float("beta", 0.5)?);
    let y = c.tensor(0)?.affine(alpha.into(), beta.into())?;
    one(y
        .binary_scalar(BinaryOp::Min, 1.0)?
        .binary_scalar(BinaryOp::Max, 0.0)?)
}

/// `Shrink`: `x + bias` below `-lambd`, `x - bias` above `lambd`, else 0.
fn shrink(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let (bias, lambd) = (c.float("bias", 0.0)?, c.float("lambd", 0.5)?);
    let (bias, lambd) = (f64::from(bias), f64::from(lambd));
    let zero = Tensor::full(c.device, &[], 0.0, x.dtype())?;
    let above = x.binary_scalar(BinaryOp::Greater, lambd)?;
    let high = above.select(&x.binary_scalar(BinaryOp::Sub, bias)?, &zero)?;
    let below = x.binary_scalar(BinaryOp::Less, -lambd)?;
    one(below.select(&x.binary_scalar(BinaryOp::Add, bias)?, &high)?)
}

/// `relu(x) - slope * relu(-x)`, the slope broadcast.
fn prelu(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let (x, mut slope) = (c.tensor(0)?, c.tensor(1)?);
    if c.opset < 7 && slope.rank() == 1 && slope.numel() > 1 && x.rank() > 1 {
        // Opset 6 applies a vector of slopes per channel (axis 1), not along the last axis.
        slope = aligned_at(c, &slope, 1, x.rank())?;
    }
    let neg = x.unary(UnaryOp::Neg)?.unary(UnaryOp::Relu)?;
    one(x
        .unary(UnaryOp::Relu)?
        .binary(BinaryOp::Sub, &neg.binary(BinaryOp::Mul, &slope)?)?)
}

/// `Clip`: bounds as attributes before opset 11, as optional inputs from it.
fn clip(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let mut x = c.tensor(0)?;
    let (low, high) = if c.opset < 11 {
        let low = c.attrs().float("min")?.map(|v| f64::from(*v));
        (low, c.attrs().float("max")?.map(|v| f64::from(*v)))
    } else {
        let bound = |i| -> Result<Option<f64>> {
            Ok(c.opt_host(i)?.and_then(|h| h.to_f64().first().copied()))
        };
        (bound(1)?, bound(2)?)
    };
    if let Some(low) = low {
        x = x.binary_scalar(BinaryOp::Max, low)?;
    }
    if let Some(high) = high {
        x = x.binary_scalar(BinaryOp::Min, high)?;
    }
    one(x)
}
