//! Softmax over the last axis, overflow-safe (the row maximum is subtracted first), and the
//! row kernels it shares with the other functions of the same row statistics
//! ([`log_softmax`](super::log_softmax)): one launch per row pass keeps a running (maximum,
//! sum of `exp(x - maximum)`) and then writes `finish(x, max, row_factor(max, sum))`, two
//! functions each op supplies as its `Epilogue`.

backend_modules!();

use super::common::rows::{row_steps, Steps};
use super::cost::OpCost;
use super::elementwise::check_f32;
use super::{backends, launch, Lift, OpRequest, Operand};
use crate::{DType, Error, Queue, Result, Tensor};

/// What an op of the row statistics writes: `finish(x, max, row_factor(max, sum))` per
/// element, where a row with an infinite or NaN maximum gets a NaN factor.
pub(crate) struct Epilogue {
    /// Op name, for the profiler.
    pub name: &'static str,
    /// WGSL defining `fn row_factor(m: f32, sum: f32) -> f32` and
    /// `fn finish(v: f32, m: f32, factor: f32) -> f32`.
    #[cfg_attr(not(feature = "webgpu"), allow(dead_code))]
    pub wgsl: &'static str,
    /// CUDA C defining `float row_factor(float m, float sum)` and
    /// `float finish(float v, float m, float factor)` (`__device__` functions).
    #[cfg_attr(not(cuda_backend), allow(dead_code))]
    pub cuda: &'static str,
    /// The CPU row: `dst` from `src`, the same function.
    pub cpu: fn(&[f32], &mut [f32]),
}

/// Softmax's epilogue: `exp(x - max) / sum`.
static SOFTMAX: Epilogue = Epilogue {
    name: "softmax",
    wgsl:
        "fn row_factor(m: f32, sum: f32) -> f32 { return 1.0 / sum; }\nfn finish(v: f32, m: f32, \
        factor: f32) -> f32 { return exp(v - m) * factor; }",
    cuda:
        "__device__ __forceinline__ float row_factor(float m, float sum) { return 1.0f / sum; }\n\
           __device__ __forceinline__ float finish(float v, float m, float factor) { return expf(v \
           - m) * factor; }",
    cpu: cpu::softmax_row,
};

/// One launch of a row-statistics op over `rows` rows of `cols` elements, each operand's
/// rows where its [`Steps`] say (`nb` rows per first index).
pub(crate) struct RowStats<'a> {
    pub x: Operand<'a>,
    pub out: Operand<'a>,
    pub rows: usize,
    pub cols: usize,
    pub nb: usize,
    pub x_steps: Steps,
    pub out_steps: Steps,
    pub epilogue: &'static Epilogue,
}

impl OpRequest for RowStats<'_> {
    fn cost(&self) -> OpCost {
        OpCost::simple(
            self.epilogue.name,
            &[&self.x, &self.out],
            4 * self.x.layout.numel() as u64,
        )
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        vec![&self.x, &self.out]
    }

    backends!(rows);
}

/// `epilogue` over the rows of the last axis of `x` (f32, f16 and bf16 lifted to f32).
pub(crate) fn row_stats(queue: &Queue, x: &Tensor, epilogue: &'static Epilogue) -> Result<Tensor> {
    if x.rank() == 0 {
        return Err(Error::shape(
            epilogue.name,
            "got a rank-0 tensor: expected at least one dimension",
        ));
    }
    along_axis(queue, x, x.rank() - 1, epilogue)
}

/// `epilogue` along `axis` of `x`. The kernels read `x`'s rows where they lie, strided or
/// not (a copy only where the axes before or after `axis` do not flatten into one stride),
/// and write a contiguous result in `x`'s shape.
pub(crate) fn along_axis(
    queue: &Queue,
    x: &Tensor,
    axis: usize,
    epilogue: &'static Epilogue,
) -> Result<Tensor> {
    let op = epilogue.name;
    let rank = x.rank();
    if axis >= rank {
        return Err(Error::OutOfRange(format!(
            "{op}: axis {axis} of a rank-{rank} tensor {:?}: expected an axis below {rank}",
            x.shape()
        )));
    }
    let lift = Lift::of(op, &[x])?;
    let x = lift.up(queue, x)?;
    check_f32(queue, op, &x)?;
    let (x, (nb, x_steps, out_steps)) = match row_steps(x.shape(), x.strides(), axis) {
        Some(steps) => (x, steps),
        None => {
            let x = x.contiguous_on(queue)?;
            let steps = row_steps(x.shape(), x.strides(), axis)
                .ok_or_else(|| Error::Internal("a contiguous tensor's rows do not merge".into()))?;
            (x, steps)
        }
    };
    let cols = x.shape()[axis];
    let out = Tensor::uninit(queue, x.shape(), DType::F32)?;
    if out.numel() > 0 {
        let rows = out.numel() / cols;
        launch(
            queue,
            &RowStats {
                x: x.operand(),
                out: out.operand(),
                rows,
                cols,
                nb,
                x_steps,
                out_steps,
                epilogue,
            },
            None,
        )?;
    }
    lift.down(queue, out)
}

/// `exp(x - max) / sum(exp(x - max))` along the last axis of `x`.
pub fn softmax(queue: &Queue, x: &Tensor) -> Result<Tensor> {
    row_stats(queue, x, &SOFTMAX)
}

/// [`softmax`] along `axis`.
pub fn softmax_axis(queue: &Queue, x: &Tensor, axis: usize) -> Result<Tensor> {
    along_axis(queue, x, axis, &SOFTMAX)
}

/// Every WGSL specialisation of the row-statistics kernels with `epilogue` (the naga check).
#[cfg(all(test, feature = "webgpu"))]
pub(crate) fn wgsl_specialisations_with(
    epilogue: &'static Epilogue,
) -> Vec<crate::hal::webgpu::Specialisation> {
    webgpu::with_epilogue(epilogue)
}

/// Every CUDA specialisation of the row-statistics kernels with `epilogue` (the NVRTC check).
#[cfg(all(test, cuda_backend))]
pub(crate) fn cuda_specialisations_with(
    epilogue: &'static Epilogue,
) -> Vec<crate::hal::cuda::Specialisation> {
    cuda::with_epilogue(epilogue)
}

/// Reference softmax of one row in f64.
pub fn reference_row(row: &[f64]) -> Vec<f64> {
    let max = row.iter().copied().fold(f64::NEG_INFINITY, |m, v| {
        if v.is_nan() || m.is_nan() {
            f64::NAN
        } else {
            m.max(v)
        }
    });
    let exps: Vec<f64> = row.iter().map(|v| (v - max).exp()).collect();
    let sum: f64 = exps.iter().sum();
    exps.iter().map(|e| e / sum).collect()
}

/// The softmax ops as methods, recorded on the device's default queue.
impl Tensor {
    /// Softmax over the last axis.
    pub fn softmax(&self) -> Result<Tensor> {
        softmax(&self.device().queue(), self)
    }
    /// Softmax along `axis` (see [`softmax_axis`]).
    pub fn softmax_axis(&self, axis: usize) -> Result<Tensor> {
        softmax_axis(&self.device().queue(), self, axis)
    }
}
