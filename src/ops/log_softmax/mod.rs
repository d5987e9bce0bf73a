//! Log-softmax over the last axis, `(x - max) - log(sum(exp(x - max)))`, fused: the softmax
//! row kernels with this op's epilogue, so each row is read in one launch per pass and no
//! softmax is rounded and then logged (which loses the small probabilities).

use super::softmax::{along_axis, row_stats, Epilogue};
use crate::ops::common::math::{exp, map, max_lanes, sum_lanes, twin};
use crate::{Queue, Result, Tensor};

/// What the row kernels write for log-softmax.
static EPILOGUE: Epilogue = Epilogue {
    name: "log_softmax",
    wgsl: crate::ops::common::wgsl_file!("log_softmax/log_softmax.wgsl"),
    cuda: include_str!("log_softmax.cu"),
    cpu: row,
};

/// `log(softmax(x))` along the last axis of `x`, overflow-safe. A row holding `+inf` or NaN,
/// or only `-inf`, gives NaN, as softmax does.
pub fn log_softmax(queue: &Queue, x: &Tensor) -> Result<Tensor> {
    row_stats(queue, x, &EPILOGUE)
}

/// [`log_softmax`] along `axis`.
pub fn log_softmax_axis(queue: &Queue, x: &Tensor, axis: usize) -> Result<Tensor> {
    along_axis(queue, x, axis, &EPILOGUE)
}

impl Tensor {
    /// Log-softmax over the last axis (see [`log_softmax`]).
    pub fn log_softmax(&self) -> Result<Tensor> {
        log_softmax(&self.device().queue(), self)
    }
    /// Log-softmax along `axis` (see [`log_softmax_axis`]).
    pub fn log_softmax_axis(&self, axis: usize) -> Result<Tensor> {
        log_softmax_axis(&self.device().queue(), self, axis)
    }
}

/// One row on the CPU: the maximum, the exponentials summed in f64, then
/// `(x - max) - ln sum` (the max first: `max + ln sum` would round at the max's magnitude).
fn row(src: &[f32], dst: &mut [f32]) {
    let max = max_lanes(src);
    map(src, dst, twin!(F => move |v: f32| exp::<F>(v - max)));
    let lse = if max.is_finite() {
        sum_lanes(dst).ln() as f32
    } else {
        f32::NAN
    };
    for (o, &v) in dst.iter_mut().zip(src) {
        *o = (v - max) - lse;
    }
}

/// Reference log-softmax of one row in f64.
pub fn reference_row(row: &[f64]) -> Vec<f64> {
    let max = row.iter().copied().fold(f64::NEG_INFINITY, |m, v| {
        if v.is_nan() || m.is_nan() {
            f64::NAN
        } else {
            m.max(v)
        }
    });
    let sum: f64 = row.iter().map(|v| (v - max).exp()).sum();
    row.iter().map(|v| v - max - sum.ln()).collect()
}

/// The row kernels' WGSL specialisations with this epilogue.
#[cfg(all(test, feature = "webgpu"))]
pub(crate) fn wgsl_specialisations() -> Vec<crate::hal::webgpu::Specialisation> {
    super::softmax::wgsl_specialisations_with(&EPILOGUE)
}

/// The row kernel's CUDA specialisations with this epilogue.
#[cfg(all(test, cuda_backend))]
pub(crate) fn cuda_specialisations() -> Vec<crate::hal::cuda::Specialisation> {
    super::softmax::cuda_specialisations_with(&EPILOGUE)
}
