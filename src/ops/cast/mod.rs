//! Dtype casts of every dtype (i64's through kernels of their own where the values change),
//! and the same-dtype copies of 16-bit views that the copy family asks for.

backend_modules!();

use super::cost::OpCost;
use super::{backends, launch, OpRequest, Operand};
use crate::{DType, Queue, Result, Tensor};

/// Convert `bits` (one element of dtype `from`, 16- and 8-bit types in the low bits) to dtype
/// `to`, as Rust's `as` does: floats to integers truncate toward zero and saturate (f32 300.7
/// gives u8 255 and i8 127, -1.5 gives u8 0), NaN becomes 0; between integer types the low
/// bits are kept (i32 -> u32 keeps the bits, i32 300 -> u8 44, u8 200 -> i8 -56). Anything to
/// bool is `x != 0` (NaN is true); bool is 0 or 1. Everything else goes through f32: integers
/// round to the nearest f32, f32 rounds to nearest-even f16 / bf16 (overflow gives inf), and
/// f16 / bf16 widen exactly. For i64 see [`cast_bits64`].
pub fn cast_bits(bits: u32, from: DType, to: DType) -> u32 {
    cast_bits64(u64::from(bits), from, to) as u32
}

/// The value of integer (or bool) element `bits` of dtype `from`, or none for a float.
fn int_value(bits: u64, from: DType) -> Option<i64> {
    match from {
        DType::I32 => Some(i64::from(bits as u32 as i32)),
        DType::U32 => Some(i64::from(bits as u32)),
        DType::I64 => Some(bits as i64),
        DType::U8 => Some(i64::from(bits as u8)),
        DType::I8 => Some(i64::from(bits as u8 as i8)),
        DType::Bool => Some(i64::from(bits as u8 != 0)),
        DType::F32 | DType::F16 | DType::BF16 => None,
    }
}

/// [`cast_bits`] for elements of up to 64 bits (i64 whole, others in the low bits): between
/// integer types as Rust's `as` (i64 -> i32 / u32 keeps the low 32 bits, i32 sign-extends
/// and u32 zero-extends to i64); i64 -> float rounds to the nearest f32 (then f16 / bf16);
/// float -> i64 truncates toward zero and saturates, NaN becomes 0.
pub fn cast_bits64(bits: u64, from: DType, to: DType) -> u64 {
    use half::{bf16, f16};
    if from == to {
        return bits;
    }
    let f = match (from, int_value(bits, from)) {
        (DType::F32, _) => f32::from_bits(bits as u32),
        (DType::F16, _) => f16::from_bits(bits as u16).to_f32(),
        (DType::BF16, _) => bf16::from_bits(bits as u16).to_f32(),
        (_, Some(i)) if to == DType::Bool => return u64::from(i != 0),
        (_, Some(i)) if !to.is_float() => {
            let mask = if to == DType::I64 {
                u64::MAX
            } else {
                (1 << (8 * to.size())) - 1
            };
            return i as u64 & mask;
        }
        (_, i) => i.unwrap_or(0) as f32,
    };
    match to {
        DType::F32 => f.to_bits().into(),
        DType::I32 => u64::from((f as i32) as u32),
        DType::U32 => u64::from(f as u32),
        DType::I64 => (f as i64) as u64,
        DType::F16 => f16::from_f32(f).to_bits().into(),
        DType::BF16 => bf16::from_f32(f).to_bits().into(),
        DType::Bool => u64::from(f != 0.0),
        DType::U8 => u64::from(f as u8),
        DType::I8 => u64::from(f as i8 as u8),
    }
}

/// `x` converted to `dtype` (see [`cast_bits`] for the rules). A view of the same dtype is
/// copied as is.
pub fn cast(queue: &Queue, x: &Tensor, dtype: DType) -> Result<Tensor> {
    queue.device().check_same(x.device(), "cast")?;
    let out = Tensor::uninit(queue, x.shape(), dtype)?;
    if x.dtype() == dtype && dtype.size() == 8 {
        // Moved as words: no 64-bit arithmetic needed.
        let w = super::common::words::as_words("cast", &[x, &out])?;
        let (x, o) = (w[0].operand(), w[1].operand());
        launch(
            queue,
            &Cast {
                x,
                from: DType::U32,
                to: DType::U32,
                out: o,
            },
            None,
        )?;
    } else if out.numel() > 0 {
        launch(
            queue,
            &Cast {
                x: x.operand(),
                from: x.dtype(),
                to: dtype,
                out: out.operand(),
            },
            None,
        )?;
    }
    Ok(out)
}

/// Each element of `x` (strided, with the output's shape) converted from `from` to `to`, as
/// [`cast_bits`] does; a same-dtype cast copies 16-bit views.
pub(crate) struct Cast<'a> {
    pub x: Operand<'a>,
    pub from: DType,
    pub to: DType,
    pub out: Operand<'a>,
}

impl OpRequest for Cast<'_> {
    fn cost(&self) -> OpCost {
        let (x, out) = (&self.x, &self.out);
        let bytes = super::cost::distinct(x) * self.from.size() as u64
            + out.layout.numel() as u64 * self.to.size() as u64;
        OpCost {
            name: format!("cast_{}", self.to),
            dtype: self.from,
            bytes,
            ..OpCost::simple("", &[x, out], 0)
        }
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        vec![&self.x, &self.out]
    }

    backends!(cast);
}

/// The cast op as a method, recorded on the device's default queue.
impl Tensor {
    /// This tensor converted to `dtype` (see [`super::cast::cast`]).
    pub fn cast(&self, dtype: DType) -> Result<Tensor> {
        cast(&self.device().queue(), self, dtype)
    }
}
