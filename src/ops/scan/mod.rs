//! Cumulative sums along an axis (ONNX's CumSum with its options): floats in f32, integers
//! in their own type, wrapping.

backend_modules!();

use super::cost::OpCost;
use super::elementwise::check_f32;
use super::gather::{extent, flip};
use super::{backends, launch, Lift, OpRequest, Operand};
use crate::{DType, Error, Queue, Result, Tensor};

/// Cumulative sum of `x` along `axis`: `out[.., j, ..] = sum of x[.., 0..=j, ..]`. Floats
/// sum in f32 (f16 / bf16 lifted); i32, u32 and i64 in their own type, wrapping as numpy's do.
pub fn cumsum(queue: &Queue, x: &Tensor, axis: usize) -> Result<Tensor> {
    if x.dtype().is_integer() {
        return cumsum_values(queue, x, axis);
    }
    let lift = Lift::of("cumsum", &[x])?;
    lift.down(queue, cumsum_values(queue, &lift.up(queue, x)?, axis)?)
}

/// Options of [`cumsum_with`]: ONNX CumSum's attributes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CumsumOptions {
    /// Leave each element out of its own sum: the first sum is 0.
    pub exclusive: bool,
    /// Sum from the end of the axis towards its start.
    pub reverse: bool,
}

/// Cumulative sum along `axis` as ONNX's CumSum: with `exclusive` each element's sum leaves
/// it out (the first is 0), with `reverse` the sums run from the end. Exact: the inclusive
/// scan of [`cumsum`] on `x` flipped along the axis (for `reverse`), shifted by one element
/// behind a zero (for `exclusive`), never a difference (which would turn inf - inf into NaN).
pub fn cumsum_with(
    queue: &Queue,
    x: &Tensor,
    axis: usize,
    options: CumsumOptions,
) -> Result<Tensor> {
    let n = extent("cumsum", x, axis)?;
    let x = if options.reverse {
        flip(queue, x, axis)?
    } else {
        x.clone()
    };
    let mut y = cumsum(queue, &x, axis)?;
    if options.exclusive && n > 0 {
        let mut one = y.shape().to_vec();
        one[axis] = 1;
        let zeros = Tensor::zeros(queue.device(), &one, y.dtype())?;
        y = super::concat::concat(queue, &[&zeros, &y.slice(axis, 0..n - 1)?], axis)?;
    }
    if options.reverse {
        flip(queue, &y, axis)
    } else {
        Ok(y)
    }
}

/// The cumulative sum of f32, i32, u32 or i64 values.
fn cumsum_values(queue: &Queue, x: &Tensor, axis: usize) -> Result<Tensor> {
    let dtype = x.dtype();
    if !dtype.is_integer() {
        check_f32(queue, "cumsum", x)?;
    }
    queue.device().check_same(x.device(), "cumsum")?;
    let shape = x.shape();
    if axis >= shape.len() {
        return Err(Error::OutOfRange(format!(
            "cumsum axis {axis} of a rank-{} tensor: expected an axis below {}",
            shape.len(),
            shape.len()
        )));
    }
    let x = x.contiguous_on(queue)?;
    let out = Tensor::uninit(queue, shape, dtype)?;
    if out.numel() > 0 {
        let (outer, len, inner) = (
            shape[..axis].iter().product(),
            shape[axis],
            shape[axis + 1..].iter().product(),
        );
        launch(
            queue,
            &Cumsum {
                x: x.operand(),
                dtype,
                outer,
                len,
                inner,
                out: out.operand(),
            },
            None,
        )?;
    }
    Ok(out)
}

/// `out[o, j, i] = sum over t <= j of x[o, t, i]` for a contiguous `[outer, len, inner]` input.
pub(crate) struct Cumsum<'a> {
    pub x: Operand<'a>,
    /// The values' dtype: f32, i32, u32 or i64 (integer sums wrap).
    pub dtype: DType,
    pub outer: usize,
    pub len: usize,
    pub inner: usize,
    pub out: Operand<'a>,
}

impl OpRequest for Cumsum<'_> {
    fn cost(&self) -> OpCost {
        OpCost {
            dtype: self.dtype,
            ..OpCost::simple(
                "cumsum",
                &[&self.x, &self.out],
                self.x.layout.numel() as u64,
            )
        }
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        vec![&self.x, &self.out]
    }

    backends!(cumsum);
}

/// The cumulative sums as methods, recorded on the device's default queue.
impl Tensor {
    /// Cumulative sum along `axis` (see [`super::scan::cumsum`]).
    pub fn cumsum(&self, axis: usize) -> Result<Tensor> {
        cumsum(&self.device().queue(), self, axis)
    }
    /// Cumulative sum with ONNX's options (see [`super::scan::cumsum_with`]).
    pub fn cumsum_with(&self, axis: usize, options: CumsumOptions) -> Result<Tensor> {
        cumsum_with(&self.device().queue(), self, axis, options)
    }
}
