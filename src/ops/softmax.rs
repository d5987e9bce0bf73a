//! Softmax over the last axis, overflow-safe (the row maximum is subtracted first).

use super::elementwise::check_f32;
use super::{Lift, OpCall};
use crate::{DType, Error, Queue, Result, Tensor};

/// `exp(x - max) / sum(exp(x - max))` along the last axis of `x`.
pub fn softmax(queue: &Queue, x: &Tensor) -> Result<Tensor> {
    let lift = Lift::of("softmax", &[x])?;
    lift.down(queue, softmax_f32(queue, &lift.up(queue, x)?)?)
}

fn softmax_f32(queue: &Queue, x: &Tensor) -> Result<Tensor> {
    check_f32(queue, "softmax", x)?;
    let Some(&cols) = x.shape().last() else {
        return Err(Error::shape("softmax", "got a rank-0 tensor: expected at least one dimension"));
    };
    let x = x.contiguous_on(queue)?;
    let out = Tensor::uninit(queue, x.shape(), DType::F32)?;
    if out.numel() > 0 {
        let rows = x.numel() / cols;
        queue.run_op(OpCall::Softmax { x: x.operand(), rows, cols, out: out.operand() })?;
    }
    Ok(out)
}

/// Reference softmax of one row in f64.
pub fn reference_row(row: &[f64]) -> Vec<f64> {
    let max = row.iter().copied().fold(f64::NEG_INFINITY, |m, v| if v.is_nan() || m.is_nan() { f64::NAN } else { m.max(v) });
    let exps: Vec<f64> = row.iter().map(|v| (v - max).exp()).collect();
    let sum: f64 = exps.iter().sum();
    exps.iter().map(|e| e / sum).collect()
}
