//! Layer normalisation and RMS normalisation over the last axis, with optional affine
//! weights and an optional fused activation.

backend_modules!();

use super::common::rows::{merged, row_steps, Steps};
use super::cost::OpCost;
use super::elementwise::check_f32;
use super::{backends, launch, Lift, OpRequest, Operand, UnaryOp};
use crate::{DType, Error, Queue, Result, Tensor};

/// Which normalisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NormKind {
    /// `(x - mean) / sqrt(var + eps) * weight + bias`
    Layer = 0,
    /// `x / sqrt(mean(x^2) + eps) * weight` (a bias, if given, is added too)
    Rms = 1,
}

impl NormKind {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            NormKind::Layer => "layer_norm",
            NormKind::Rms => "rms_norm",
        }
    }

    /// Code that kernels switch on.
    pub fn code(self) -> u32 {
        self as u32
    }

    /// Reference of one row in f64, before weights and activation: the normalised values.
    pub fn reference_row(self, row: &[f64], eps: f64) -> Vec<f64> {
        let n = row.len() as f64;
        let (center, denom) = match self {
            NormKind::Layer => {
                let mean = row.iter().sum::<f64>() / n;
                let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
                (mean, (var + eps).sqrt())
            }
            NormKind::Rms => (
                0.0,
                (row.iter().map(|v| v * v).sum::<f64>() / n + eps).sqrt(),
            ),
        };
        row.iter().map(|v| (v - center) / denom).collect()
    }
}

/// Parameters of a normalisation (all optional parts off by default).
#[derive(Debug, Clone, Copy)]
pub struct NormParams<'a> {
    /// Per-column scale, shape `[cols]`.
    pub weight: Option<&'a Tensor>,
    /// Per-column shift, shape `[cols]`.
    pub bias: Option<&'a Tensor>,
    /// Added to the variance (or mean square) before the square root; must be > 0.
    pub eps: f32,
    /// Activation applied to the result in the same kernel.
    pub act: Option<UnaryOp>,
}

impl Default for NormParams<'_> {
    fn default() -> Self {
        NormParams {
            weight: None,
            bias: None,
            eps: 1e-5,
            act: None,
        }
    }
}

/// Normalise each row (the last axis) of `x`, then apply weight, bias and activation.
pub fn norm(queue: &Queue, kind: NormKind, x: &Tensor, p: NormParams<'_>) -> Result<Tensor> {
    norm_axes(queue, kind, x, 1, p)
}

/// [`norm`] over the last `axis_count` axes together, weight and bias `[cols]`.
fn norm_axes(
    queue: &Queue,
    kind: NormKind,
    x: &Tensor,
    axis_count: usize,
    p: NormParams<'_>,
) -> Result<Tensor> {
    let lift = Lift::of(
        kind.name(),
        &[Some(x), p.weight, p.bias]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>(),
    )?;
    let (weight, bias) = (
        p.weight.map(|t| lift.up(queue, t)).transpose()?,
        p.bias.map(|t| lift.up(queue, t)).transpose()?,
    );
    let params = NormParams {
        weight: weight.as_ref(),
        bias: bias.as_ref(),
        ..p
    };
    lift.down(
        queue,
        norm_f32(queue, kind, &lift.up(queue, x)?, axis_count, params)?,
    )
}

/// Normalise over the last `axis_count` axes of `x` together (ONNX's LayerNormalization with
/// `axis = rank - axis_count`), then apply weight and bias, each of the shape of those axes (or
/// flattened), and the activation.
pub fn norm_trailing(
    queue: &Queue,
    kind: NormKind,
    x: &Tensor,
    axis_count: usize,
    p: NormParams<'_>,
) -> Result<Tensor> {
    let shape = x.shape().to_vec();
    if axis_count == 0 || axis_count > shape.len() {
        return Err(Error::OutOfRange(format!(
            "{}: {axis_count} trailing axes of a rank-{} tensor {shape:?}: expected 1 to {}",
            kind.name(),
            shape.len(),
            shape.len()
        )));
    }
    let split = shape.len() - axis_count;
    let cols: usize = shape[split..].iter().product();
    let as_row = |what: &str, t: Option<&Tensor>| -> Result<Option<Tensor>> {
        let Some(t) = t else { return Ok(None) };
        if t.shape() != &shape[split..] && t.shape() != [cols] {
            return Err(Error::shape(
                kind.name(),
                format!(
                    "{what} has shape {:?}: expected {:?} (the normalised axes of {shape:?})",
                    t.shape(),
                    &shape[split..]
                ),
            ));
        }
        Ok(Some(t.contiguous_on(queue)?.reshape(&[cols])?))
    };
    let (weight, bias) = (as_row("weight", p.weight)?, as_row("bias", p.bias)?);
    norm_axes(
        queue,
        kind,
        x,
        axis_count,
        NormParams {
            weight: weight.as_ref(),
            bias: bias.as_ref(),
            ..p
        },
    )
}

/// The statistics layer norm over the last `axis_count` axes of `x` divides by, as ONNX's
/// LayerNormalization gives them (its `Mean` and `InvStdDev` outputs, for training): the mean
/// and `1 / sqrt(variance + eps)` of each group of normalised elements, shaped as `x` with the
/// normalised axes kept as extents of 1. Two passes (mean, then the mean square of the
/// deviations), so a large mean costs no precision.
pub fn layer_norm_stats(
    queue: &Queue,
    x: &Tensor,
    axis_count: usize,
    eps: f32,
) -> Result<(Tensor, Tensor)> {
    use super::elementwise::{binary, unary};
    use super::reduce::reduce_axes;
    use super::{BinaryOp, ReduceOp, UnaryOp};
    let rank = x.rank();
    if axis_count == 0 || axis_count > rank {
        return Err(Error::OutOfRange(format!(
            "layer_norm_stats: {axis_count} trailing axes of a \
            rank-{rank} tensor: expected 1 to {rank}"
        )));
    }
    if !(eps > 0.0 && eps.is_finite()) {
        return Err(Error::Invalid(format!(
            "layer_norm_stats: eps is {eps}: expected a finite value > 0"
        )));
    }
    let trailing: Vec<usize> = (rank - axis_count..rank).collect();
    let mean = reduce_axes(queue, ReduceOp::Mean, x, &trailing, true)?;
    let centered = binary(queue, BinaryOp::Sub, x, &mean)?;
    let square = binary(queue, BinaryOp::Mul, &centered, &centered)?;
    let variance = reduce_axes(queue, ReduceOp::Mean, &square, &trailing, true)?;
    let eps = Tensor::from_slice(queue.device(), &[eps], &[1])?.cast(variance.dtype())?;
    let inv_std = unary(
        queue,
        UnaryOp::Rsqrt,
        &binary(queue, BinaryOp::Add, &variance, &eps)?,
    )?;
    Ok((mean, inv_std))
}

/// Where `x`'s rows over its last `axis_count` axes lie, read in place where the axes merge into
/// one stride and the others into at most two groups; else from a contiguous copy.
fn rows_of(queue: &Queue, x: &Tensor, axis_count: usize) -> Result<(Tensor, usize, Steps)> {
    let split = x.rank() - axis_count;
    let geometry = |x: &Tensor| {
        let (shape, strides) = (x.shape(), x.strides());
        let step = merged(&shape[split..], &strides[split..])?;
        let cols = shape[split..].iter().product();
        let shape: Vec<usize> = shape[..split].iter().copied().chain([cols]).collect();
        let strides: Vec<usize> = strides[..split].iter().copied().chain([step]).collect();
        row_steps(&shape, &strides, split).map(|(nb, steps, _)| (nb, steps))
    };
    if let Some((nb, steps)) = geometry(x) {
        return Ok((x.clone(), nb, steps));
    }
    let x = x.contiguous_on(queue)?;
    let (nb, steps) = geometry(&x)
        .ok_or_else(|| Error::Internal("a contiguous tensor's rows do not merge".into()))?;
    Ok((x, nb, steps))
}

fn norm_f32(
    queue: &Queue,
    kind: NormKind,
    x: &Tensor,
    axis_count: usize,
    p: NormParams<'_>,
) -> Result<Tensor> {
    let op = kind.name();
    check_f32(queue, op, x)?;
    if x.rank() == 0 {
        return Err(Error::shape(
            op,
            "got a rank-0 tensor: expected at least one dimension",
        ));
    }
    let cols: usize = x.shape()[x.rank() - axis_count..].iter().product();
    if !(p.eps > 0.0 && p.eps.is_finite()) {
        return Err(Error::Invalid(format!(
            "{op}: eps is {}: expected a finite value > 0",
            p.eps
        )));
    }
    let mut affine = Vec::new();
    for (what, t) in [("weight", p.weight), ("bias", p.bias)] {
        if let Some(t) = t {
            check_f32(queue, op, t)?;
            if t.shape() != [cols] {
                return Err(Error::shape(
                    op,
                    format!(
                        "{what} has shape {:?}: expected [{cols}] (the last axis of {:?})",
                        t.shape(),
                        x.shape()
                    ),
                ));
            }
            affine.push(t.contiguous_on(queue)?);
        }
    }
    let (x, nb, x_steps) = rows_of(queue, x, axis_count)?;
    let out = Tensor::uninit(queue, x.shape(), DType::F32)?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let mut it = affine.iter();
    let weight = p.weight.and_then(|_| it.next()).map(Tensor::operand);
    let bias = p.bias.and_then(|_| it.next()).map(Tensor::operand);
    let rows = x.numel() / cols;
    launch(
        queue,
        &Norm {
            kind,
            x: x.operand(),
            nb,
            x_steps,
            weight,
            bias,
            rows,
            cols,
            eps: p.eps,
            act: p.act,
            out: out.operand(),
        },
        None,
    )?;
    Ok(out)
}

/// Layer / RMS normalisation of `rows` rows of `cols` elements of `x`, where its [`Steps`]
/// say (`nb` rows per first index), into a contiguous `[rows, cols]` output, then
/// `* weight + bias` (contiguous `[cols]`, each optional) and an optional activation.
pub(crate) struct Norm<'a> {
    pub kind: NormKind,
    pub x: Operand<'a>,
    pub nb: usize,
    pub x_steps: Steps,
    pub weight: Option<Operand<'a>>,
    pub bias: Option<Operand<'a>>,
    pub rows: usize,
    pub cols: usize,
    pub eps: f32,
    pub act: Option<UnaryOp>,
    pub out: Operand<'a>,
}

impl OpRequest for Norm<'_> {
    /// The input, the affine operands given, the output.
    fn operands(&self) -> Vec<&Operand<'_>> {
        let mut ops = vec![&self.x];
        ops.extend(self.weight.as_ref());
        ops.extend(self.bias.as_ref());
        ops.push(&self.out);
        ops
    }

    fn cost(&self) -> OpCost {
        OpCost::simple(
            self.kind.name(),
            &self.operands(),
            5 * self.x.layout.numel() as u64,
        )
    }

    backends!(norm);
}

/// The norm ops as methods, recorded on the device's default queue.
impl Tensor {
    /// Layer normalisation over the last axis (see [`super::norm::norm`]).
    pub fn layer_norm(&self, params: NormParams<'_>) -> Result<Tensor> {
        norm(&self.device().queue(), NormKind::Layer, self, params)
    }
    /// Layer norm's mean and inverse standard deviation over the last `axis_count` axes (see
    /// [`super::norm::layer_norm_stats`]).
    pub fn layer_norm_stats(&self, axis_count: usize, eps: f32) -> Result<(Tensor, Tensor)> {
        layer_norm_stats(&self.device().queue(), self, axis_count, eps)
    }
    /// RMS normalisation over the last axis (see [`super::norm::norm`]).
    pub fn rms_norm(&self, params: NormParams<'_>) -> Result<Tensor> {
        norm(&self.device().queue(), NormKind::Rms, self, params)
    }
}
