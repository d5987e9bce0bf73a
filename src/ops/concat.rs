//! Concatenation along one axis, for any dtype: each input is copied into its slice of the
//! output (a strided view when the axis is not the first), unless it already lies there (a
//! model run writes a Concat's inputs into their slices where it can: `onnx::joins`).

use super::Lift;
use crate::{Error, Queue, Result, Tensor};

/// Join `tensors` along `axis`. They must share dtype, device and rank, and agree on every
/// other axis.
pub fn concat(queue: &Queue, tensors: &[&Tensor], axis: usize) -> Result<Tensor> {
    // The copies move 32-bit words: 16- and 8-bit values travel widened (exactly).
    let lift = Lift::words("concat", tensors)?;
    let wide = tensors
        .iter()
        .map(|t| lift.up(queue, t))
        .collect::<Result<Vec<_>>>()?;
    lift.down(
        queue,
        concat_words(queue, &wide.iter().collect::<Vec<_>>(), axis)?,
    )
}

fn concat_words(queue: &Queue, tensors: &[&Tensor], axis: usize) -> Result<Tensor> {
    let shape = joined_shape(queue, tensors, axis)?;
    let out = Tensor::uninit(queue, &shape, tensors[0].dtype())?;
    copy_parts(queue, tensors, axis, &out)?;
    Ok(out)
}

/// [`concat`] into `out`, leaving alone each input that is already the view of its slice:
/// `false`, with nothing recorded, unless `out` has the joined shape and the inputs' dtype,
/// which is a 32-bit one.
pub(crate) fn concat_into(
    queue: &Queue,
    tensors: &[&Tensor],
    axis: usize,
    out: &Tensor,
) -> Result<bool> {
    let shape = joined_shape(queue, tensors, axis)?;
    if out.shape() != shape || out.dtype() != tensors[0].dtype() || out.dtype().size() != 4 {
        return Ok(false);
    }
    queue.device().check_same(out.device(), "concat output")?;
    copy_parts(queue, tensors, axis, out)?;
    Ok(true)
}

/// Copies each of `tensors` into its slice of `out` along `axis` where it is not that slice.
fn copy_parts(queue: &Queue, tensors: &[&Tensor], axis: usize, out: &Tensor) -> Result<()> {
    let mut start = 0;
    for t in tensors {
        let len = t.shape()[axis];
        let part = out.slice(axis, start..start + len)?;
        if part.numel() > 0 && !t.is_view(&part) {
            super::copy::copy_into(queue, t, &part)?;
        }
        start += len;
    }
    Ok(())
}

/// The shape of `tensors` joined along `axis`; an error unless there is at least one and they
/// share dtype and rank, lie on `queue`'s device, and agree on every axis but `axis`.
fn joined_shape(queue: &Queue, tensors: &[&Tensor], axis: usize) -> Result<Vec<usize>> {
    let Some(first) = tensors.first() else {
        return Err(Error::Invalid(
            "concat of no tensors: expected at least one".into(),
        ));
    };
    let rank = first.rank();
    if axis >= rank {
        return Err(Error::OutOfRange(format!(
            "concat axis {axis} of rank-{rank} tensors: expected an axis below {rank}"
        )));
    }
    let mut shape = first.shape().to_vec();
    shape[axis] = 0;
    for (i, t) in tensors.iter().enumerate() {
        queue.device().check_same(t.device(), "concat input")?;
        if t.dtype() != first.dtype() {
            return Err(Error::DType {
                op: "concat",
                expected: format!("{} (the dtype of input 0)", first.dtype()),
                got: format!("{} for input {i}", t.dtype()),
            });
        }
        let agrees = t.rank() == rank
            && t.shape()
                .iter()
                .zip(first.shape())
                .enumerate()
                .all(|(d, (a, b))| d == axis || a == b);
        if !agrees {
            return Err(Error::shape(
                "concat",
                format!(
                    "input {i} has shape {:?}, input 0 {:?}: expected equal shapes except on \
                    axis {axis}",
                    t.shape(),
                    first.shape()
                ),
            ));
        }
        shape[axis] = shape[axis].checked_add(t.shape()[axis]).ok_or_else(|| {
            Error::shape(
                "concat",
                format!(
                    "the inputs' extents along axis {axis} add up past {}: \
                expected a total that fits",
                    usize::MAX
                ),
            )
        })?;
    }
    Ok(shape)
}

/// The concat ops as methods, recorded on the device's default queue.
impl Tensor {
    /// Join `tensors` along `axis` (see [`super::concat::concat`]).
    pub fn concat(tensors: &[&Tensor], axis: usize) -> Result<Tensor> {
        let first = tensors
            .first()
            .ok_or_else(|| Error::Invalid("concat of no tensors: expected at least one".into()))?;
        concat(&first.device().queue(), tensors, axis)
    }
}
