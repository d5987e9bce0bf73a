//! `Pad`: constant, edge, reflect and wrap modes, negative pads cropping; also the explicit
//! padding of convolutions whose pads differ between the two sides of an axis.

use super::{one, Ctx};
use crate::base::error::Result;
use crate::onnx::value::Val;
use crate::ops::gather::gather;
use crate::Tensor;

/// How the border is filled.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Mode {
    /// With a value.
    Constant(f64),
    /// With the nearest edge element.
    Edge,
    /// Mirrored, the edge not repeated.
    Reflect,
    /// From the other end.
    Wrap,
}

pub(super) fn pad(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let rank = x.rank();
    let (pads, value, axes) = if c.opset < 11 {
        (c.int_list("pads")?, f64::from(c.float("value", 0.0)?), None)
    } else {
        let value = c.opt_host(2)?;
        let value = value
            .and_then(|h| h.to_f64().first().copied())
            .unwrap_or(0.0);
        (c.ints(1)?, value, c.ints(3)?)
    };
    let pads = pads.ok_or_else(|| c.error("pads are missing".into()))?;
    let axes = match axes {
        Some(a) => a
            .iter()
            .map(|&a| c.axis(a, rank))
            .collect::<Result<Vec<_>>>()?,
        None => (0..rank).collect(),
    };
    if pads.len() != 2 * axes.len() {
        return Err(c.error(format!("{} pads for {} axes", pads.len(), axes.len())));
    }
    let mode = match c.string("mode", "constant")?.as_str() {
        "constant" => Mode::Constant(value),
        "edge" => Mode::Edge,
        "reflect" => Mode::Reflect,
        "wrap" => Mode::Wrap,
        other => {
            return Err(c.error(format!(
                "mode '{other}' is not constant, edge, reflect or wrap"
            )))
        }
    };
    let n = axes.len();
    let sides: Vec<(usize, i64, i64)> = (0..n).map(|i| (axes[i], pads[i], pads[i + n])).collect();
    one(pad_tensor(c, x, &sides, mode)?)
}

/// `x` padded by `(axis, before, after)` for each listed axis.
pub(super) fn pad_tensor(
    c: &Ctx<'_>,
    mut x: Tensor,
    sides: &[(usize, i64, i64)],
    mode: Mode,
) -> Result<Tensor> {
    for &(axis, before, after) in sides {
        x = pad_axis(c, x, axis, before, after, mode)?;
    }
    Ok(x)
}

fn pad_axis(
    c: &Ctx<'_>,
    x: Tensor,
    axis: usize,
    before: i64,
    after: i64,
    mode: Mode,
) -> Result<Tensor> {
    let n = x.shape()[axis] as i64;
    if before < 0 || after < 0 {
        let (start, end) = (before.min(0).abs(), n - after.min(0).abs());
        if start > end {
            return Err(c.error(format!(
                "pads {before}, {after} crop more than axis {axis} holds"
            )));
        }
        let x = x.slice(axis, start as usize..end as usize)?;
        return pad_axis(c, x, axis, before.max(0), after.max(0), mode);
    }
    if before == 0 && after == 0 {
        return Ok(x);
    }
    if let Mode::Constant(value) = mode {
        let side = |k: i64| -> Result<Tensor> {
            let mut shape = x.shape().to_vec();
            shape[axis] = k as usize;
            Tensor::full(c.device, &shape, value, x.dtype())
        };
        let (b, a) = (side(before)?, side(after)?);
        return crate::ops::concat::concat(c.queue, &[&b, &x, &a], axis);
    }
    if n == 0 {
        return Err(c.error(format!(
            "axis {axis} is empty; {mode:?} padding needs elements"
        )));
    }
    let idx: Vec<i32> = (-before..n + after)
        .map(|i| source(i, n, mode) as i32)
        .collect();
    gather(
        c.queue,
        &x,
        axis,
        &Tensor::from_slice(c.device, &idx, &[idx.len()])?,
    )
}

/// The element of an axis of `n` that position `i` (before, in or after it) copies.
fn source(i: i64, n: i64, mode: Mode) -> i64 {
    match mode {
        Mode::Edge | Mode::Constant(_) => i.clamp(0, n - 1),
        Mode::Wrap => i.rem_euclid(n),
        Mode::Reflect if n == 1 => 0,
        Mode::Reflect => {
            let j = i.rem_euclid(2 * (n - 1));
            if j < n {
                j
            } else {
                2 * (n - 1) - j
            }
        }
    }
}

impl std::fmt::Debug for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::Constant(_) => "constant",
            Mode::Edge => "edge",
            Mode::Reflect => "reflect",
            Mode::Wrap => "wrap",
        })
    }
}
