//! The `k` largest or smallest elements along an axis, sorted, with their indices (ONNX's
//! TopK): each element counts the elements of its row that rank before it and, if fewer
//! than `k` do, writes itself and its index at that rank. Fully parallel, no sort.

backend_modules!();

use super::cost::OpCost;
use super::elementwise::check_f32;
use super::gather::extent;
use super::{backends, launch, Lift, OpRequest, Operand};
use crate::{DType, Error, Queue, Result, Tensor};

/// The `k` largest (or, without `largest`, smallest) elements of `x` along `axis`, sorted
/// (largest first, or smallest first), and their indices (u32) along the axis: the axis
/// becomes `k` long in both. Ties go to the lower index, as ONNX's TopK asks. NaN ranks above
/// every number, as numpy's sort and PyTorch's `topk` order it: first among the largest, last
/// among the smallest; -0 and +0 are equal. Every dtype: f16 / bf16 compared in f32, bool, u8
/// and i8 widened (exactly); i64 needs `shader-int64` on webgpu. A `k` past the axis's length
/// is `OUT_OF_RANGE`.
pub fn topk(
    queue: &Queue,
    x: &Tensor,
    k: usize,
    axis: usize,
    largest: bool,
) -> Result<(Tensor, Tensor)> {
    let len = extent("topk", x, axis)?;
    if k > len {
        return Err(Error::OutOfRange(format!(
            "topk: k = {k} along axis {axis} of {:?}: expected at most {len}",
            x.shape()
        )));
    }
    if u32::try_from(len).is_err() {
        return Err(Error::Limit {
            what: "topk: the length of the axis".into(),
            value: len as u64,
            limit: "u32 indices",
            max: u32::MAX.into(),
        });
    }
    let lift = Lift::words("topk", &[x])?;
    let (values, indices) = topk_values(queue, &lift.up(queue, x)?, k, axis, largest)?;
    Ok((lift.down(queue, values)?, indices))
}

/// [`topk`] of f32, i32, u32 or i64 values.
fn topk_values(
    queue: &Queue,
    x: &Tensor,
    k: usize,
    axis: usize,
    largest: bool,
) -> Result<(Tensor, Tensor)> {
    let dtype = x.dtype();
    if !dtype.is_integer() {
        check_f32(queue, "topk", x)?;
    }
    queue.device().check_same(x.device(), "topk")?;
    let shape = x.shape();
    let mut out_shape = shape.to_vec();
    out_shape[axis] = k;
    let values = Tensor::uninit(queue, &out_shape, dtype)?;
    let indices = Tensor::uninit(queue, &out_shape, DType::U32)?;
    if values.numel() > 0 {
        let x = x.contiguous_on(queue)?;
        launch(
            queue,
            &Topk {
                x: x.operand(),
                dtype,
                outer: shape[..axis].iter().product(),
                len: shape[axis],
                inner: shape[axis + 1..].iter().product(),
                k,
                largest,
                values: values.operand(),
                indices: indices.operand(),
            },
            None,
        )?;
    }
    Ok((values, indices))
}

/// The `k` first elements by rank along the middle axis of a contiguous `[outer, len, inner]`
/// input, into contiguous `[outer, k, inner]` values and u32 indices.
pub(crate) struct Topk<'a> {
    pub x: Operand<'a>,
    /// The values' dtype: f32, i32, u32 or i64.
    pub dtype: DType,
    pub outer: usize,
    pub len: usize,
    pub inner: usize,
    pub k: usize,
    /// Largest first (else smallest first).
    pub largest: bool,
    pub values: Operand<'a>,
    pub indices: Operand<'a>,
}

impl OpRequest for Topk<'_> {
    fn cost(&self) -> OpCost {
        // One comparison per pair of elements of a row.
        let n = self.x.layout.numel() as u64;
        OpCost {
            dtype: self.dtype,
            ..OpCost::simple(
                "topk",
                &[&self.x, &self.values, &self.indices],
                n * self.len as u64,
            )
        }
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        vec![&self.x, &self.values, &self.indices]
    }

    backends!(topk);
}

/// TopK as a method, recorded on the device's default queue.
impl Tensor {
    /// The `k` largest (or smallest) elements along `axis`, sorted, and their u32 indices
    /// (see [`super::topk::topk`]).
    pub fn topk(&self, k: usize, axis: usize, largest: bool) -> Result<(Tensor, Tensor)> {
        topk(&self.device().queue(), self, k, axis, largest)
    }
}
