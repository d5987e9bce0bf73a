//! Comparisons and logical ops as `Tensor` methods, all giving bool tensors: the logic rows of
//! the binary op table ([`BinaryOp::is_logic`]), `logical_not`, and `isnan` / `isinf`, which
//! compare the bits of f32 values (never `x != x`, which compilers may fold).

use super::BinaryOp;
use crate::{DType, Error, Result, Tensor};

/// Comparisons and logical ops, recorded on the device's default queue. Operands broadcast
/// as numpy's and may be of any dtype (both of one); the result is bool.
impl Tensor {
    /// `self == other`.
    pub fn equal(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Equal, other)
    }
    /// `self < other`.
    pub fn less(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Less, other)
    }
    /// `self <= other`.
    pub fn less_equal(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::LessEqual, other)
    }
    /// `self > other`.
    pub fn greater(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Greater, other)
    }
    /// `self >= other`.
    pub fn greater_equal(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::GreaterEqual, other)
    }
    /// `self and other`, each true where non-zero.
    pub fn logical_and(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::And, other)
    }
    /// `self or other`, each true where non-zero.
    pub fn logical_or(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Or, other)
    }
    /// `self xor other`, each true where non-zero.
    pub fn logical_xor(&self, other: &Tensor) -> Result<Tensor> {
        self.binary(BinaryOp::Xor, other)
    }
    /// `not self`: true where `self` is zero.
    pub fn logical_not(&self) -> Result<Tensor> {
        self.binary_scalar(BinaryOp::Equal, 0.0)
    }

    /// Where a float tensor is NaN (bool; f16 / bf16 widened to f32 first, exactly).
    pub fn isnan(&self) -> Result<Tensor> {
        let bits = float_bits(self, "isnan")?;
        // NaN: the bits above +inf's and below -0's, or above -inf's.
        let positive = bits
            .binary_scalar(BinaryOp::Greater, f64::from(0x7f80_0000u32))?
            .logical_and(&bits.binary_scalar(BinaryOp::Less, f64::from(0x8000_0000u32))?)?;
        positive.logical_or(&bits.binary_scalar(BinaryOp::Greater, f64::from(0xff80_0000u32))?)
    }

    /// Where a float tensor is infinite (bool), counting `+inf` if `positive` and `-inf` if
    /// `negative` (ONNX IsInf's `detect_positive` and `detect_negative`).
    pub fn isinf(&self, positive: bool, negative: bool) -> Result<Tensor> {
        let bits = float_bits(self, "isinf")?;
        let pos = bits.binary_scalar(BinaryOp::Equal, f64::from(0x7f80_0000u32))?;
        let neg = bits.binary_scalar(BinaryOp::Equal, f64::from(0xff80_0000u32))?;
        match (positive, negative) {
            (true, true) => pos.logical_or(&neg),
            (true, false) => Ok(pos),
            (false, true) => Ok(neg),
            (false, false) => pos.logical_and(&neg),
        }
    }
}

/// The f32 bits of a float tensor `t` as a u32 view (16-bit floats widened first).
fn float_bits(t: &Tensor, op: &'static str) -> Result<Tensor> {
    if !t.dtype().is_float() {
        return Err(Error::DType {
            op,
            expected: "a float tensor (f32, f16 or bf16)".into(),
            got: t.dtype().to_string(),
        });
    }
    let f = match t.dtype() {
        DType::F32 => t.clone(),
        _ => t.cast(DType::F32)?,
    };
    Ok(f.retyped(DType::U32))
}
