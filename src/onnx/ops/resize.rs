//! `Resize` (and opset 10's `Upsample`-like form): nearest and linear modes, one axis at a
//! time (linear interpolation is separable), through gathers at positions computed on the
//! host with each coordinate transformation mode.

use super::{one, op, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::value::Val;
use crate::onnx::Node;
use crate::ops::gather::gather;
use crate::ops::BinaryOp;
use crate::Tensor;

/// The resizing operator.
pub(super) const OPS: &[OpDef] = &[op("Resize", resize).refusing(refusal)];

/// Why a `Resize` node cannot run: cubic mode, antialiasing, cropping.
fn refusal(node: &Node) -> Option<String> {
    let a = &node.attrs;
    let text = |name: &str| a.string(name).ok().flatten().cloned().unwrap_or_default();
    if text("mode") == "cubic" {
        return Some("cubic resizing is not supported yet".into());
    }
    if a.int("antialias").ok().flatten().is_some_and(|&v| v != 0) {
        return Some("antialiased resizing is not supported yet".into());
    }
    (text("coordinate_transformation_mode") == "tf_crop_and_resize")
        .then(|| "tf_crop_and_resize is not supported yet".into())
}

/// One axis to resize: its index, extents in and out, and the scale the coordinates use.
struct Axis {
    axis: usize,
    len: usize,
    out: usize,
    scale: f64,
}

fn resize(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let mut x = c.tensor(0)?;
    let linear = match c.string("mode", "nearest")?.as_str() {
        "nearest" => false,
        "linear" => true,
        other => return Err(c.error(format!("mode '{other}' is not nearest or linear"))),
    };
    for a in axes(c, x.shape())? {
        if a.out == a.len && a.scale == 1.0 {
            continue;
        }
        let coords: Vec<f64> = (0..a.out)
            .map(|o| source(c, &a, o))
            .collect::<Result<_>>()?;
        x = if linear {
            lerp(c, &x, &a, &coords)?
        } else {
            nearest(c, &x, &a, &coords)?
        };
    }
    one(x)
}

/// The resized axes with their output extents and scales, from `scales` or `sizes`.
fn axes(c: &Ctx<'_>, shape: &[usize]) -> Result<Vec<Axis>> {
    let rank = shape.len();
    let list = match c.int_list("axes")? {
        Some(a) => a
            .iter()
            .map(|&a| c.axis(a, rank))
            .collect::<Result<Vec<_>>>()?,
        None => (0..rank).collect(),
    };
    let (scales_at, sizes_at) = if c.opset < 11 {
        (1, usize::MAX)
    } else {
        (2, 3)
    };
    let floats =
        |i| -> Result<Vec<f64>> { Ok(c.opt_host(i)?.map(|h| h.to_f64()).unwrap_or_default()) };
    let sizes = c.ints(sizes_at)?.unwrap_or_default();
    let scales = floats(scales_at)?;
    if !sizes.is_empty() {
        let ratio: Vec<f64> = list
            .iter()
            .zip(&sizes)
            .map(|(&a, &s)| s as f64 / shape[a] as f64)
            .collect();
        let pick = match c.string("keep_aspect_ratio_policy", "stretch")?.as_str() {
            "not_larger" => ratio.iter().copied().fold(f64::INFINITY, f64::min),
            "not_smaller" => ratio.iter().copied().fold(0.0, f64::max),
            _ => return Ok(zip_axes(&list, shape, |i, _| (sizes[i] as usize, ratio[i]))),
        };
        let out = |len: usize| (len as f64 * pick).round() as usize;
        return Ok(zip_axes(&list, shape, |_, len| (out(len), pick)));
    }
    if scales.len() != list.len() {
        return Err(c.error(format!("{} scales for {} axes", scales.len(), list.len())));
    }
    Ok(zip_axes(&list, shape, |i, len| {
        ((len as f64 * scales[i]).floor() as usize, scales[i])
    }))
}

/// The axes of `list` with `(out, scale)` from `f(i, input extent)` for the `i`-th.
fn zip_axes(
    list: &[usize],
    shape: &[usize],
    f: impl Fn(usize, usize) -> (usize, f64),
) -> Vec<Axis> {
    list.iter()
        .enumerate()
        .map(|(i, &axis)| {
            let (out, scale) = f(i, shape[axis]);
            Axis {
                axis,
                len: shape[axis],
                out,
                scale,
            }
        })
        .collect()
}

/// The input coordinate output position `o` maps to.
fn source(c: &Ctx<'_>, a: &Axis, o: usize) -> Result<f64> {
    // ONNX's resized length is the scaled one, not rounded: `scale * len`.
    let (o, s, len, out) = (o as f64, a.scale, a.len as f64, a.out as f64);
    let scaled = s * len;
    Ok(
        match c
            .string("coordinate_transformation_mode", "half_pixel")?
            .as_str()
        {
            "half_pixel" => (o + 0.5) / s - 0.5,
            "half_pixel_symmetric" => {
                let adjust = out / scaled;
                let offset = len / 2.0 * (1.0 - adjust);
                offset + (o + 0.5) / s - 0.5
            }
            "pytorch_half_pixel" if scaled > 1.0 => (o + 0.5) / s - 0.5,
            "pytorch_half_pixel" => 0.0,
            "align_corners" if scaled > 1.0 => o * (len - 1.0) / (scaled - 1.0),
            "align_corners" => 0.0,
            "asymmetric" => o / s,
            other => return Err(c.error(format!("coordinate_transformation_mode '{other}'"))),
        },
    )
}

/// Positions `p` of `x`'s axis as a gather.
fn take(c: &Ctx<'_>, x: &Tensor, axis: usize, p: &[i32]) -> Result<Tensor> {
    gather(
        c.queue,
        x,
        axis,
        &Tensor::from_slice(c.device, p, &[p.len()])?,
    )
}

fn nearest(c: &Ctx<'_>, x: &Tensor, a: &Axis, coords: &[f64]) -> Result<Tensor> {
    let mode = c.string("nearest_mode", "round_prefer_floor")?;
    let last = a.len as f64 - 1.0;
    let p: Vec<i32> = coords
        .iter()
        .map(|&v| {
            let half = v.fract().abs() == 0.5;
            let r = match mode.as_str() {
                "floor" => v.floor(),
                "ceil" => v.ceil(),
                "round_prefer_ceil" if half => v.ceil(),
                "round_prefer_ceil" => v.round(),
                _ if half => v.floor(),
                _ => v.round(),
            };
            r.clamp(0.0, last) as i32
        })
        .collect();
    take(c, x, a.axis, &p)
}

/// `x0 + (x1 - x0) * w` between the two nearest positions, the edges repeated outside.
fn lerp(c: &Ctx<'_>, x: &Tensor, a: &Axis, coords: &[f64]) -> Result<Tensor> {
    let last = a.len as i64 - 1;
    let lo: Vec<i64> = coords.iter().map(|v| v.floor() as i64).collect();
    let clamp = |i: i64| i.clamp(0, last) as i32;
    let p0: Vec<i32> = lo.iter().map(|&i| clamp(i)).collect();
    let p1: Vec<i32> = lo.iter().map(|&i| clamp(i + 1)).collect();
    let w: Vec<f32> = coords
        .iter()
        .zip(&lo)
        .map(|(v, &i)| (v - i as f64) as f32)
        .collect();
    let mut shape = vec![1; x.rank()];
    shape[a.axis] = a.out;
    let w = Tensor::from_slice(c.device, &w, &shape)?.cast(x.dtype())?;
    let (x0, x1) = (take(c, x, a.axis, &p0)?, take(c, x, a.axis, &p1)?);
    x0.binary(
        BinaryOp::Add,
        &x1.binary(BinaryOp::Sub, &x0)?.binary(BinaryOp::Mul, &w)?,
    )
}
