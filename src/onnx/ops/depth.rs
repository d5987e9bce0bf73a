//! 3-D convolution, transposed convolution and pooling on the library's 2-D ops, over the
//! depth axis. An output depth of a convolution sums the 2-D convolutions of the input depths
//! under its depth taps; one of a transposed convolution, the 2-D transposed convolutions of
//! the input depths whose taps land on it: each one launch, with those depths (and the
//! weight's matching depth taps) stacked as channels within each group. A box window's
//! maximum, sum and number of taps factor over its axes, so 3-D pooling is 2-D pooling over
//! height and width, then over depth.

use super::Ctx;
use crate::base::error::Result;
use crate::ops::concat::concat;
use crate::ops::conv::{conv2d, conv_transpose2d, pool2d_with, TransposedAxis};
use crate::ops::{Conv2dParams, ConvTranspose2dParams, PoolKind, PoolOptions};
use crate::Tensor;

/// A 3-D convolution of `x: [n, c, d, h, w]`, already padded, by `w: [o, c / groups, kd, kh,
/// kw]`, giving `[n, o, od, oh, ow]`: `[stride, dilation]` over depth, `p` over height and
/// width.
pub(super) fn conv3d(
    c: &Ctx<'_>,
    x: &Tensor,
    w: &Tensor,
    [stride, dilation]: [usize; 2],
    p: Conv2dParams<'_>,
) -> Result<Tensor> {
    let (&[n, ch, d, h, wd], &[o, wcg, kd, kh, kw]) = (x.shape(), w.shape()) else {
        return Err(c.error(format!(
            "input {:?} and weight {:?}: expected both of rank 5",
            x.shape(),
            w.shape()
        )));
    };
    let g = p.groups;
    if g == 0 || ch % g != 0 || ch / g != wcg {
        return Err(c.error(format!(
            "input {:?}, weight {:?}, {g} groups: expected a weight [o, c / groups, ..] for \
             c input channels, a multiple of the groups",
            x.shape(),
            w.shape()
        )));
    }
    let span = kd
        .checked_sub(1)
        .and_then(|k| k.checked_mul(dilation)?.checked_add(1));
    let outputs = span
        .filter(|&s| s <= d)
        .and_then(|s| (d - s).checked_div(stride))
        .map(|q| q + 1);
    let Some(outputs) = outputs else {
        return Err(c.error(format!(
            "depth kernel {kd}, stride {stride}, dilation {dilation} over a padded depth of \
             {d}: expected a kernel and stride ≥ 1 whose dilated span fits the depth"
        )));
    };
    // The groups apart: x as [n, g, cg, d, h * w], w as [o, 1, cg, kd, kh * kw]; every
    // output depth takes every depth tap, so the stacked weight is the same for each.
    let xv = x.reshape(&[n, g, wcg, d, h * wd])?;
    let wv = w.reshape(&[o, 1, wcg, kd, kh * kw])?;
    let stacked = wcg * kd;
    let ws = depths(c, &wv, 0..kd, 2)?.reshape(&[o, stacked, kh, kw])?;
    let mut planes = Vec::new();
    for od in 0..outputs {
        let at = (0..kd).map(|k| od * stride + k * dilation);
        let xs = depths(c, &xv, at, 2)?.reshape(&[n, g * stacked, h, wd])?;
        let y = conv2d(c.queue, &xs, &ws, p)?;
        let &[_, _, oh, ow] = y.shape() else {
            return Err(c.error(format!("a 2-D convolution gave {:?}", y.shape())));
        };
        planes.push(y.reshape(&[n, o, 1, oh, ow])?);
    }
    concat(c.queue, &planes.iter().collect::<Vec<_>>(), 2)
}

/// A 3-D transposed convolution of `x: [n, c, d, h, w]` by `w: [c, o / groups, kd, kh, kw]`,
/// giving `[n, o, od, oh, ow]`: `depth` over depth, `p` over height and width.
pub(super) fn conv_transpose3d(
    c: &Ctx<'_>,
    x: &Tensor,
    w: &Tensor,
    depth: &TransposedAxis,
    p: ConvTranspose2dParams<'_>,
) -> Result<Tensor> {
    let (&[n, ch, d, h, wd], &[wc, og, kd, kh, kw]) = (x.shape(), w.shape()) else {
        return Err(c.error(format!(
            "input {:?} and weight {:?}: expected both of rank 5",
            x.shape(),
            w.shape()
        )));
    };
    let g = p.groups;
    if g == 0 || ch % g != 0 || wc != ch {
        return Err(c.error(format!(
            "input {:?}, weight {:?}, {g} groups: expected a weight [c, o / groups, ..] for \
             c input channels, a multiple of the groups",
            x.shape(),
            w.shape()
        )));
    }
    let cg = ch / g;
    // The groups apart: x as [n, g, cg, d, h * w], w as [g, cg, og, kd, kh * kw].
    let xv = x.reshape(&[n, g, cg, d, h * wd])?;
    let wv = w.reshape(&[g, cg, og, kd, kh * kw])?;
    let plane = p.output_shape(&[n, ch, h, wd], &[ch, og, kh, kw])?;
    let [_, o, oh, ow] = plane;
    let mut planes = Vec::new();
    for od in 0..depth.extent()? {
        let taps: Vec<(usize, usize)> = depth.taps(od).collect();
        let y = if taps.is_empty() {
            bias_plane(x, p.bias, plane)?
        } else {
            let stacked = ch * taps.len();
            let xs = depths(c, &xv, taps.iter().map(|t| t.0), 2)?;
            let ws = depths(c, &wv, taps.iter().map(|t| t.1), 1)?;
            let (xs, ws) = (
                xs.reshape(&[n, stacked, h, wd])?,
                ws.reshape(&[stacked, og, kh, kw])?,
            );
            conv_transpose2d(c.queue, &xs, &ws, p)?
        };
        planes.push(y.reshape(&[n, o, 1, oh, ow])?);
    }
    if planes.is_empty() {
        return Tensor::zeros(x.device(), &[n, o, 0, oh, ow], x.dtype());
    }
    concat(c.queue, &planes.iter().collect::<Vec<_>>(), 2)
}

/// The depths `at` of `t` (axis 3) joined along `axis`, the channels within a group.
fn depths(c: &Ctx<'_>, t: &Tensor, at: impl Iterator<Item = usize>, axis: usize) -> Result<Tensor> {
    let picked = at
        .map(|i| t.slice(3, i..i + 1))
        .collect::<Result<Vec<_>>>()?;
    concat(c.queue, &picked.iter().collect::<Vec<_>>(), axis)
}

/// An output plane no input lands on: the bias, or zeros without one.
fn bias_plane(x: &Tensor, bias: Option<&Tensor>, shape: [usize; 4]) -> Result<Tensor> {
    match bias {
        Some(b) => b.reshape(&[1, shape[1], 1, 1])?.broadcast_to(&shape),
        None => Tensor::zeros(x.device(), &shape, x.dtype()),
    }
}

/// 3-D max or average pooling of `x: [n, c, d, h, w]`: `plane` over height and width, then
/// `depth` (a window of one column) over depth.
pub(super) fn pool3d(
    c: &Ctx<'_>,
    kind: PoolKind,
    x: &Tensor,
    plane: PoolOptions,
    depth: PoolOptions,
) -> Result<Tensor> {
    let &[n, ch, d, h, w] = x.shape() else {
        return Err(c.error(format!("input {:?}: expected rank 5", x.shape())));
    };
    let y = pool2d_with(c.queue, kind, &x.reshape(&[n, ch * d, h, w])?, plane)?;
    let &[_, _, oh, ow] = y.shape() else {
        return Err(c.error(format!("pooled {:?}: expected rank 4", y.shape())));
    };
    let z = pool2d_with(c.queue, kind, &y.reshape(&[n, ch, d, oh * ow])?, depth)?;
    let od = z.shape().get(2).copied().unwrap_or(0);
    z.reshape(&[n, ch, od, oh, ow])
}
