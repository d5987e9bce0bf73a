//! Binary ops with a number for one operand (`x.add_scalar(2.0)`, `&x * 2.0`, `1.0 - &x`)
//! and the `std::ops` operators on tensors, which return `Result<Tensor>` as candle's do.
//!
//! The number becomes a one-element tensor of the other operand's dtype (one small upload
//! recorded on the queue, never a read back), broadcast by the binary kernels with stride 0:
//! the same launch as a tensor operand, so every backend and dtype that has the op has its
//! scalar form. For an integer dtype the number must be whole and in the dtype's range.

use std::ops::{Add, Div, Mul, Neg, Sub};

use super::{BinaryOp, UnaryOp};
use crate::{Result, Tensor};

/// `value` as a rank-0 tensor of `like`'s dtype on its device (errors name `op`).
fn scalar_for(like: &Tensor, op: BinaryOp, value: f64) -> Result<Tensor> {
    let what = format!("{} of a tensor and a scalar", op.name());
    crate::ops::constructors::from_f64(like.device(), &what, &[value], &[], like.dtype())
}

/// Binary ops with a number as one operand.
impl Tensor {
    /// `op(self, value)` elementwise, `value` taken in this tensor's dtype (whole and in range
    /// for an integer dtype, else `INVALID` / `OUT_OF_RANGE`).
    pub fn binary_scalar(&self, op: BinaryOp, value: f64) -> Result<Tensor> {
        self.binary(op, &scalar_for(self, op, value)?)
    }

    /// `op(value, self)` elementwise: the number first (`1 - x`, `1 / x`).
    pub fn scalar_binary(&self, value: f64, op: BinaryOp) -> Result<Tensor> {
        scalar_for(self, op, value)?.binary(op, self)
    }

    /// `self + value`.
    pub fn add_scalar(&self, value: f64) -> Result<Tensor> {
        self.binary_scalar(BinaryOp::Add, value)
    }

    /// `self - value`.
    pub fn sub_scalar(&self, value: f64) -> Result<Tensor> {
        self.binary_scalar(BinaryOp::Sub, value)
    }

    /// `self * value`.
    pub fn mul_scalar(&self, value: f64) -> Result<Tensor> {
        self.binary_scalar(BinaryOp::Mul, value)
    }

    /// `self / value`.
    pub fn div_scalar(&self, value: f64) -> Result<Tensor> {
        self.binary_scalar(BinaryOp::Div, value)
    }

    /// `self * mul + add` (candle's `affine`), as two launches.
    pub fn affine(&self, mul: f64, add: f64) -> Result<Tensor> {
        self.mul_scalar(mul)?.add_scalar(add)
    }
}

/// `-x`: the negation kernel for floats, `0 - x` for integers (wrapping, as integer
/// arithmetic does).
fn negate(x: &Tensor) -> Result<Tensor> {
    if !x.dtype().is_float() {
        x.scalar_binary(0.0, BinaryOp::Sub)
    } else {
        x.unary(UnaryOp::Neg)
    }
}

impl Neg for &Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        negate(self)
    }
}

impl Neg for Tensor {
    type Output = Result<Tensor>;
    fn neg(self) -> Result<Tensor> {
        negate(&self)
    }
}

/// One `std::ops` trait over tensors, by value and by reference, and with `f64` and `f32`
/// numbers on either side.
macro_rules! operator {
    ($trait:ident, $method:ident, $op:expr) => {
        impl $trait<&Tensor> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                self.binary($op, rhs)
            }
        }
        impl $trait<Tensor> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                self.binary($op, &rhs)
            }
        }
        impl $trait<&Tensor> for Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                self.binary($op, rhs)
            }
        }
        impl $trait<Tensor> for Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                self.binary($op, &rhs)
            }
        }
        operator!(@number $trait, $method, $op, f64);
        operator!(@number $trait, $method, $op, f32);
    };
    (@number $trait:ident, $method:ident, $op:expr, $n:ty) => {
        impl $trait<$n> for &Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: $n) -> Result<Tensor> {
                self.binary_scalar($op, f64::from(rhs))
            }
        }
        impl $trait<$n> for Tensor {
            type Output = Result<Tensor>;
            fn $method(self, rhs: $n) -> Result<Tensor> {
                self.binary_scalar($op, f64::from(rhs))
            }
        }
        impl $trait<&Tensor> for $n {
            type Output = Result<Tensor>;
            fn $method(self, rhs: &Tensor) -> Result<Tensor> {
                rhs.scalar_binary(f64::from(self), $op)
            }
        }
        impl $trait<Tensor> for $n {
            type Output = Result<Tensor>;
            fn $method(self, rhs: Tensor) -> Result<Tensor> {
                rhs.scalar_binary(f64::from(self), $op)
            }
        }
    };
}

operator!(Add, add, BinaryOp::Add);
operator!(Sub, sub, BinaryOp::Sub);
operator!(Mul, mul, BinaryOp::Mul);
operator!(Div, div, BinaryOp::Div);
