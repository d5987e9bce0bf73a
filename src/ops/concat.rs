//! Concatenation along one axis, for any dtype: each input is copied into its slice of the
//! output (a strided view when the axis is not the first).

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
    let out = Tensor::uninit(queue, &shape, first.dtype())?;
    let mut start = 0;
    for t in tensors {
        let len = t.shape()[axis];
        let part = out.slice(axis, start..start + len)?;
        if part.numel() > 0 {
            super::copy::copy_into(queue, t, &part)?;
        }
        start += len;
    }
    Ok(out)
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
