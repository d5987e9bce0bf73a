//! Elementwise ops: unary math and activations, binary arithmetic with numpy broadcasting,
//! binary ops fused with an activation, and binary ops with a number operand and the
//! `std::ops` operators (`scalar.rs`).

use num_traits::Float;

backend_modules!();
mod logic;
mod scalar;

use super::cost::OpCost;
use super::{backends, launch, native_f16, Lift, OpRequest, Operand};
use crate::base::layout::{broadcast_shapes, check_rank};
use crate::{DType, Error, Queue, Result, Tensor};

pub(crate) mod table;

table::unary_ops!(crate::ops::elementwise::table::unary_enum);
table::binary_ops!(crate::ops::elementwise::table::binary_enum);
/// The CPU kernels' per-op dispatch, for the families that run these ops on the CPU too.
pub(crate) use cpu::{binary_arms, unary_arms, unary_fn, with_binary, with_unary};
pub(crate) use table::{binary_ops, unary_ops};

impl UnaryOp {
    /// Every op's name, for messages: `neg, abs, ... or hardswish`.
    pub fn names() -> String {
        let names: Vec<&str> = Self::ALL.iter().map(|op| op.name()).collect();
        let (last, rest) = names.split_last().map_or(("", &[][..]), |(l, r)| (*l, r));
        format!("{} or {last}", rest.join(", "))
    }

    /// Look an op up by [`name`](UnaryOp::name).
    pub fn from_name(name: &str) -> Option<UnaryOp> {
        Self::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Code that kernels switch on (0 means "no activation").
    pub fn code(self) -> u32 {
        self as u32
    }
}

/// GELU with the exact erf; 1 + erf(z) = erfc(-z) keeps full relative precision for
/// negative `x`.
fn gelu_erf<F: Float + Erfc>(x: F) -> F {
    let half = F::from(0.5).unwrap_or_else(F::zero);
    half * x * (-x * F::from(std::f64::consts::FRAC_1_SQRT_2).unwrap_or_else(F::zero)).erfc()
}

/// GELU's tanh approximation; 1 + tanh(z) = 2 sigmoid(2z), likewise free of cancellation.
fn gelu_tanh<F: Float>(x: F) -> F {
    let c = F::from(0.797_884_560_802_865_4).unwrap_or_else(F::zero); // sqrt(2/pi)
    let k = F::from(0.044_715).unwrap_or_else(F::zero);
    let z = c * (x + k * x * x * x);
    x * sigmoid(z + z)
}

/// NaN if `a` or `b` is NaN, else `m`.
fn nan_or<F: Float>(a: F, b: F, m: F) -> F {
    if a.is_nan() || b.is_nan() {
        F::nan()
    } else {
        m
    }
}

/// 1 if `b`, else 0: the value of a comparison or logical op.
fn truth<F: Float>(b: bool) -> F {
    if b {
        F::one()
    } else {
        F::zero()
    }
}

/// [`truth`] for integers.
fn int_truth<I: Integer>(b: bool) -> I {
    if b {
        I::one()
    } else {
        I::zero()
    }
}

/// `x` rounded to the nearest integer, a half to the even neighbour (ONNX Round, numpy's
/// `round`): `2 * round(x / 2)` at a half, where `x / 2` is exact.
fn round_half_even<F: Float>(x: F) -> F {
    let half = F::from(0.5).unwrap_or_else(F::zero);
    if (x - x.trunc()).abs() == half {
        (x * half).round() / half
    } else {
        x.round()
    }
}

fn sigmoid<F: Float>(x: F) -> F {
    F::one() / (F::one() + (-x).exp())
}

/// The error function and its complement, for the precisions the library computes in.
pub trait Erfc {
    /// erfc(self) = 1 - erf(self)
    fn erfc(self) -> Self;
    /// erf(self)
    fn erf(self) -> Self;
}

impl Erfc for f32 {
    fn erfc(self) -> f32 {
        libm::erfcf(self)
    }

    fn erf(self) -> f32 {
        libm::erff(self)
    }
}

impl Erfc for f64 {
    fn erfc(self) -> f64 {
        libm::erfc(self)
    }

    fn erf(self) -> f64 {
        libm::erf(self)
    }
}

impl BinaryOp {
    /// Look an op up by [`name`](BinaryOp::name).
    pub fn from_name(name: &str) -> Option<BinaryOp> {
        Self::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Code that kernels switch on.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// Whether the op is a comparison or a logical op, whose result is bool.
    pub fn is_logic(self) -> bool {
        self.code() >= BinaryOp::Equal.code()
    }
}

/// The integer element types of integer arithmetic: i32, u32 and i64.
pub trait Integer:
    num_traits::PrimInt
    + num_traits::WrappingAdd
    + num_traits::WrappingSub
    + num_traits::WrappingMul
    + bytemuck::Pod
    + Send
    + Sync
{
}
impl Integer for i32 {}
impl Integer for u32 {}
impl Integer for i64 {}

/// `a^b` on integers, as [`BinaryOp::eval_int`] defines it.
fn int_pow<I: Integer>(a: I, b: I) -> I {
    let (zero, one) = (I::zero(), I::one());
    if b < zero {
        let odd = b & one == one;
        return match a {
            a if a == one => one,
            a if a.wrapping_add(&one) == zero => {
                if odd {
                    a
                } else {
                    one
                }
            }
            _ => zero,
        };
    }
    let (mut result, mut base, mut e) = (one, a, b);
    while e != zero {
        if e & one == one {
            result = result.wrapping_mul(&base);
        }
        base = base.wrapping_mul(&base);
        e = e >> 1;
    }
    result
}

/// `op(x)` elementwise, recorded on `queue`. `x` may be any strided view; the result is
/// contiguous (f16 / bf16 inputs compute in f32, see the dtype notes of the crate).
pub fn unary(queue: &Queue, op: UnaryOp, x: &Tensor) -> Result<Tensor> {
    if native_f16(queue, &[x]) {
        return unary_in(queue, op, x, DType::F16);
    }
    let lift = Lift::of(op.name(), &[x])?;
    lift.down(queue, unary_in(queue, op, &lift.up(queue, x)?, DType::F32)?)
}

/// `op(x)` with `x` and the result stored as `dtype` (f32, or native f16).
fn unary_in(queue: &Queue, op: UnaryOp, x: &Tensor, dtype: DType) -> Result<Tensor> {
    check_dtype(queue, op.name(), x, dtype)?;
    let out = Tensor::uninit(queue, x.shape(), dtype)?;
    launch(
        queue,
        &Unary {
            op,
            x: x.operand(),
            out: out.operand(),
            dtype,
        },
        None,
    )?;
    Ok(out)
}

/// `op(a, b)` elementwise with numpy broadcasting, recorded on `queue`. u8 and i8 operands
/// compute widened (their arithmetic wraps, as numpy's); arithmetic on bool is refused. The
/// comparisons and logical ops ([`BinaryOp::is_logic`]) give bool for operands of any dtype.
pub fn binary(queue: &Queue, op: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary_fused(queue, op, None, a, b)
}

/// `op` over every tensor of `inputs` (at least one) with numpy broadcasting across all of
/// them: ONNX's Sum, Max and Min for `Add`, `Max` and `Min` (and `Mul`), recorded as one
/// binary launch per further input. The other binary ops are refused: their order matters.
pub fn nary(queue: &Queue, op: BinaryOp, inputs: &[&Tensor]) -> Result<Tensor> {
    if !matches!(
        op,
        BinaryOp::Add | BinaryOp::Mul | BinaryOp::Min | BinaryOp::Max
    ) {
        let what = format!(
            "an n-ary {} (the order of its inputs would matter): expected add, mul, \
            minimum or maximum",
            op.name()
        );
        return Err(Error::Invalid(what));
    }
    let (first, rest) = inputs.split_first().ok_or_else(|| {
        Error::Invalid(format!(
            "{} of no tensors: expected at least one",
            op.name()
        ))
    })?;
    let mut acc = first.contiguous_on(queue)?;
    for t in rest {
        acc = binary(queue, op, &acc, t)?;
    }
    Ok(acc)
}

/// `act(op(a, b))` in one kernel: a binary op fused with an activation.
pub fn binary_act(
    queue: &Queue,
    op: BinaryOp,
    act: UnaryOp,
    a: &Tensor,
    b: &Tensor,
) -> Result<Tensor> {
    binary_fused(queue, op, Some(act), a, b)
}

fn binary_fused(
    queue: &Queue,
    op: BinaryOp,
    act: Option<UnaryOp>,
    a: &Tensor,
    b: &Tensor,
) -> Result<Tensor> {
    if let (true, Some(f)) = (op.is_logic(), act) {
        return Err(Error::Invalid(format!(
            "{} fused after {}: expected no activation after a comparison or logical op \
            (its result is bool)",
            f.name(),
            op.name()
        )));
    }
    if !op.is_logic() && (a.dtype() == DType::Bool || b.dtype() == DType::Bool) {
        return Err(Error::DType {
            op: op.name(),
            expected: "numbers: arithmetic on bool is refused (use the logical ops, or cast \
                the bools to a number first)"
                .into(),
            got: "bool".into(),
        });
    }
    let values = if native_f16(queue, &[a, b]) {
        binary_in(queue, op, act, a, b, DType::F16)?
    } else {
        // 16-bit floats compute in f32, bool / u8 / i8 in u32 / i32 (wrapping arithmetic
        // keeps its low byte).
        let lift = Lift::words(op.name(), &[a, b])?;
        let (a, b) = (lift.up(queue, a)?, lift.up(queue, b)?);
        let wide = match integer_operands(op, act, &a, &b)? {
            Some(dtype) => binary_in(queue, op, None, &a, &b, dtype)?,
            None => binary_in(queue, op, act, &a, &b, DType::F32)?,
        };
        if op.is_logic() {
            wide
        } else {
            lift.down(queue, wide)?
        }
    };
    if op.is_logic() {
        super::cast::cast(queue, &values, DType::Bool)
    } else {
        Ok(values)
    }
}

/// The integer dtype (i32, u32 or i64) of integer arithmetic, when an operand is an integer:
/// both must be of it, and no activation follows (activations are float functions).
fn integer_operands(
    op: BinaryOp,
    act: Option<UnaryOp>,
    a: &Tensor,
    b: &Tensor,
) -> Result<Option<DType>> {
    let integer = |d: DType| d.is_integer();
    let (da, db) = (a.dtype(), b.dtype());
    if !integer(da) && !integer(db) {
        return Ok(None);
    }
    if da != db {
        let expected = format!(
            "operands of one dtype (integer arithmetic does not promote): the first is {da}"
        );
        return Err(Error::DType {
            op: op.name(),
            expected,
            got: db.to_string(),
        });
    }
    if let Some(f) = act {
        return Err(Error::DType {
            op: f.name(),
            expected: "f32 (activations are float functions; apply none to integers)".into(),
            got: da.to_string(),
        });
    }
    Ok(Some(da))
}

/// `act(op(a, b))` with the operands and the result stored as `dtype` (f32, native f16, or
/// an integer type for integer arithmetic).
fn binary_in(
    queue: &Queue,
    op: BinaryOp,
    act: Option<UnaryOp>,
    a: &Tensor,
    b: &Tensor,
    dtype: DType,
) -> Result<Tensor> {
    check_dtype(queue, op.name(), a, dtype)?;
    check_dtype(queue, op.name(), b, dtype)?;
    let shape = broadcast_shapes(op.name(), a.shape(), b.shape())?;
    check_rank(op.name(), &shape)?;
    let (a, b) = (a.broadcast_to(&shape)?, b.broadcast_to(&shape)?);
    let out = Tensor::uninit(queue, &shape, dtype)?;
    launch(
        queue,
        &Binary {
            op,
            act,
            a: a.operand(),
            b: b.operand(),
            out: out.operand(),
            dtype,
        },
        None,
    )?;
    Ok(out)
}

/// Error unless `t` holds `dtype` (f32 or native f16) on the queue's device.
fn check_dtype(queue: &Queue, op: &'static str, t: &Tensor, dtype: DType) -> Result<()> {
    if dtype == DType::F32 {
        return check_f32(queue, op, t);
    }
    queue.device().check_same(t.device(), op)?;
    if t.dtype() != dtype {
        return Err(Error::DType {
            op,
            expected: dtype.to_string(),
            got: t.dtype().to_string(),
        });
    }
    Ok(())
}

/// Error unless `t` holds f32 (the dtype of the math ops) on the queue's device.
pub(crate) fn check_f32(queue: &Queue, op: &'static str, t: &Tensor) -> Result<()> {
    queue.device().check_same(t.device(), op)?;
    if t.dtype() != DType::F32 {
        return Err(Error::DType {
            op,
            expected: "f32 (or f16 / bf16, computed in f32)".into(),
            got: t.dtype().to_string(),
        });
    }
    Ok(())
}

/// `out = op(x)`; `x` is strided with the output's shape. `dtype` is the storage dtype of `x`
/// and `out`: f32, or f16 where the backend has native f16 storage.
pub(crate) struct Unary<'a> {
    pub op: UnaryOp,
    pub x: Operand<'a>,
    pub out: Operand<'a>,
    pub dtype: DType,
}

impl OpRequest for Unary<'_> {
    fn cost(&self) -> OpCost {
        let bytes = (super::cost::distinct(&self.x) + self.out.layout.numel() as u64)
            * self.dtype.size() as u64;
        OpCost {
            dtype: self.dtype,
            bytes,
            ..OpCost::simple(
                self.op.name(),
                &[&self.x, &self.out],
                self.out.layout.numel() as u64,
            )
        }
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        vec![&self.x, &self.out]
    }

    backends!(unary);
}

/// `out = act(op(a, b))`; `a` and `b` are already broadcast (stride 0) to the output shape.
pub(crate) struct Binary<'a> {
    pub op: BinaryOp,
    pub act: Option<UnaryOp>,
    pub a: Operand<'a>,
    pub b: Operand<'a>,
    pub out: Operand<'a>,
    /// Storage dtype of every operand, as for [`Unary`].
    pub dtype: DType,
}

impl OpRequest for Binary<'_> {
    fn cost(&self) -> OpCost {
        let name = match self.act {
            Some(f) => format!("{}_{}", self.op.name(), f.name()),
            None => self.op.name().into(),
        };
        let distinct = super::cost::distinct(&self.a)
            + super::cost::distinct(&self.b)
            + self.out.layout.numel() as u64;
        let simple = OpCost::simple(
            &name,
            &[&self.a, &self.b, &self.out],
            self.out.layout.numel() as u64,
        );
        OpCost {
            dtype: self.dtype,
            bytes: distinct * self.dtype.size() as u64,
            ..simple
        }
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        vec![&self.a, &self.b, &self.out]
    }

    backends!(binary);
}

/// The elementwise ops as methods, recorded on the device's default queue.
impl Tensor {
    /// Elementwise unary op.
    pub fn unary(&self, op: UnaryOp) -> Result<Tensor> {
        unary(&self.device().queue(), op, self)
    }
    /// Elementwise binary op with broadcasting.
    pub fn binary(&self, op: BinaryOp, other: &Tensor) -> Result<Tensor> {
        binary(&self.device().queue(), op, self, other)
    }
    /// `act(op(self, other))` in one kernel (see [`super::elementwise::binary_act`]).
    pub fn binary_act(&self, op: BinaryOp, act: UnaryOp, other: &Tensor) -> Result<Tensor> {
        binary_act(&self.device().queue(), op, act, self, other)
    }
    /// `self + other`
    pub fn add(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Add, other)
    }
    /// `self - other`
    pub fn sub(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Sub, other)
    }
    /// `self * other`
    pub fn mul(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Mul, other)
    }
    /// `self / other`
    pub fn div(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Div, other)
    }
}
