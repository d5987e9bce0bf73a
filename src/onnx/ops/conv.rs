//! Convolution and pooling over one to three spatial axes (1-D runs as 2-D with a height of
//! 1, 3-D on 2-D ops: see `depth`), with ONNX's explicit or automatic (`SAME_*`, `VALID`)
//! padding.

use super::pad::{pad_tensor, Mode};
use super::{depth, one, op, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::value::Val;
use crate::onnx::Node;
use crate::ops::conv::{conv2d, conv2d_into, pool2d_with};
use crate::ops::{Conv2dParams, PoolKind, PoolOptions, ReduceOp, UnaryOp};
use crate::Tensor;

/// The convolution and pooling operators.
pub(super) const OPS: &[OpDef] = &[
    op("Conv", |c| conv(c, None)).refusing(conv_refusal),
    op("MaxPool", |c| pool(c, PoolKind::Max)).refusing(pool_refusal),
    op("AveragePool", |c| pool(c, PoolKind::Avg)).refusing(pool_refusal),
    op("GlobalAveragePool", |c| global(c, ReduceOp::Mean)),
    op("GlobalMaxPool", |c| global(c, ReduceOp::Max)),
];

/// Why a `Conv` node cannot run: more than three spatial axes, or a geometry attribute out
/// of range.
pub(super) fn conv_refusal(node: &Node) -> Option<String> {
    let kernel = node.attrs.ints("kernel_shape").ok().flatten();
    if let Some(k) = kernel.filter(|k| k.len() > 3) {
        return Some(format!("{}-D convolution; 1-D to 3-D run", k.len()));
    }
    ints_refusal(node, &[])
}

/// Why a convolution's or pooling's geometry attributes cannot be taken: a stride or
/// dilation below 1, or a negative value of `pads` or of the attributes `nonnegative` names.
pub(super) fn ints_refusal(node: &Node, nonnegative: &[&str]) -> Option<String> {
    let limits = [("strides", 1), ("dilations", 1), ("pads", 0)];
    let all = limits
        .into_iter()
        .chain(nonnegative.iter().map(|&n| (n, 0)));
    all.filter_map(|(name, least)| {
        let v = node.attrs.ints(name).ok().flatten()?;
        let bad = v.iter().any(|&x| x < least);
        bad.then(|| format!("{name} {v:?}: expected values ≥ {least}"))
    })
    .next()
}

/// Why a pooling node cannot run: more than three spatial axes, padding past half the window
/// (what the library's pooling takes), or a stride or dilation below 1.
fn pool_refusal(node: &Node) -> Option<String> {
    let a = &node.attrs;
    if let Some(why) = ints_refusal(node, &[]) {
        return Some(why);
    }
    let kernel = a.ints("kernel_shape").ok().flatten()?;
    if kernel.is_empty() || kernel.len() > 3 {
        return Some(format!("{}-D pooling; 1-D to 3-D run", kernel.len()));
    }
    let pads = a.ints("pads").ok().flatten().cloned().unwrap_or_default();
    let k = kernel.len();
    let past_half = pads.iter().enumerate().any(|(i, &p)| p > kernel[i % k] / 2);
    past_half.then(|| format!("pads {pads:?} pass half the window {kernel:?}"))
}

/// The geometry of one node per spatial axis: the window, stride, dilation and the padding
/// before and after.
struct Window {
    kernel: Vec<usize>,
    stride: Vec<usize>,
    dilation: Vec<usize>,
    pads: Vec<(usize, usize)>,
}

/// The last two spatial axes (height and width) of one to three: 1-D lifts with a leading
/// axis of `one`.
pub(super) fn lift2<T: Copy>(v: &[T], one: T) -> [T; 2] {
    match v {
        [] => [one, one],
        [x] => [one, *x],
        [.., y, x] => [*y, *x],
    }
}

/// The node's window over input spatial extents `dims` and kernel extents `kernel`.
fn window(c: &Ctx<'_>, dims: &[usize], kernel: &[usize]) -> Result<Window> {
    let k = kernel.len();
    if dims.len() != k {
        return Err(c.error(format!(
            "a {k}-D window over {} spatial axes: expected one extent per axis",
            dims.len()
        )));
    }
    let (stride, dilation) = (
        positive_list(c, "strides", k)?,
        positive_list(c, "dilations", k)?,
    );
    // Saturating: a window too large for the input is the library op's error to give.
    let eff: Vec<usize> = (0..k)
        .map(|i| {
            kernel[i]
                .saturating_sub(1)
                .saturating_mul(dilation[i])
                .saturating_add(1)
        })
        .collect();
    let auto = c.string("auto_pad", "NOTSET")?;
    let pads: Vec<(usize, usize)> = match auto.as_str() {
        "NOTSET" => {
            let p = int_list(c, "pads", 2 * k, 0)?;
            (0..k).map(|i| (p[i], p[i + k])).collect()
        }
        "VALID" => vec![(0, 0); k],
        "SAME_UPPER" | "SAME_LOWER" => (0..k)
            .map(|i| {
                let out = dims[i].div_ceil(stride[i]);
                let reach = out.saturating_sub(1).saturating_mul(stride[i]);
                let total = reach.saturating_add(eff[i]).saturating_sub(dims[i]);
                let small = total / 2;
                if auto == "SAME_UPPER" {
                    (small, total - small)
                } else {
                    (total - small, small)
                }
            })
            .collect(),
        other => return Err(c.error(format!("auto_pad '{other}' is not a known mode"))),
    };
    Ok(Window {
        kernel: kernel.to_vec(),
        stride,
        dilation,
        pads,
    })
}

/// An INTS attribute of `len` values ≥ 0, or `len` copies of `default` without it.
pub(super) fn int_list(c: &Ctx<'_>, name: &str, len: usize, default: usize) -> Result<Vec<usize>> {
    let Some(v) = c.int_list(name)? else {
        return Ok(vec![default; len]);
    };
    if v.len() != len || v.iter().any(|&x| x < 0) {
        return Err(c.error(format!("{name} {v:?}: expected {len} values ≥ 0")));
    }
    Ok(v.iter().map(|&x| x as usize).collect())
}

/// An INTS attribute of `len` values ≥ 1, or `len` ones without it.
pub(super) fn positive_list(c: &Ctx<'_>, name: &str, len: usize) -> Result<Vec<usize>> {
    let v = int_list(c, name, len, 1)?;
    if v.contains(&0) {
        return Err(c.error(format!("{name} {v:?}: expected {len} values ≥ 1")));
    }
    Ok(v)
}

/// Input `i` (`x` with `[n, c, ..]`, or a weight) as `[_, _, h, w]`: a 1-D one gains a
/// height of 1; one of another rank than 3 or 4 is an error.
pub(super) fn planar(c: &Ctx<'_>, t: Tensor, i: usize) -> Result<Tensor> {
    match *t.shape() {
        [a, b, w] => t.reshape(&[a, b, 1, w]),
        [_, _, _, _] => Ok(t),
        _ => Err(c.error(format!(
            "input {i} of rank {}: expected 1 or 2 spatial axes",
            t.rank()
        ))),
    }
}

/// `y` back to the input's rank (a 1-D op's height of 1 dropped).
pub(super) fn output(c: &Ctx<'_>, y: Tensor) -> Result<Vec<Val>> {
    if c.input(0)?.shape()?.len() == 3 {
        let s = y.shape().to_vec();
        return one(y.reshape(&[s[0], s[1], s[3]])?);
    }
    one(y)
}

/// `Conv`: x `[n, c, ..]` by w `[o, c / group, ..]` plus an optional bias `[o]`, then `act`
/// in the same kernel where given (`FusedConv`).
pub(super) fn conv(c: &Ctx<'_>, act: Option<UnaryOp>) -> Result<Vec<Val>> {
    let (x, w) = (c.tensor(0)?, c.tensor(1)?);
    let (dims, kernel) = (spatial(&x), spatial(&w));
    let win = window(c, &dims, &kernel)?;
    let (bias, groups) = (c.opt_tensor(2)?, c.int("group", 1)?.max(1) as usize);
    let params = |padding| Conv2dParams {
        bias: bias.as_ref(),
        stride: lift2(&win.stride, 1),
        padding,
        dilation: lift2(&win.dilation, 1),
        groups,
        act,
    };
    if dims.len() == 3 {
        // Every padding explicit: each output depth then takes every depth tap.
        let x = zero_padded(c, x, &win.pads)?;
        let depth = [win.stride[0], win.dilation[0]];
        return one(depth::conv3d(c, &x, &w, depth, params([0, 0]))?);
    }
    let (x, w) = (planar(c, x, 0)?, planar(c, w, 1)?);
    let pads = lift2(&win.pads, (0, 0));
    if pads.iter().all(|(b, a)| b == a) {
        return conv2d_to(c, [&x, &w], params(pads.map(|p| p.0)));
    }
    let x = zero_padded(c, x, &pads)?;
    conv2d_to(c, [&x, &w], params([0, 0]))
}

/// The 2-D convolution of `x` by `w` written into the run's destination for this node where
/// it fits ([`Ctx::dest`]), else into an output of its own.
fn conv2d_to(c: &Ctx<'_>, [x, w]: [&Tensor; 2], p: Conv2dParams<'_>) -> Result<Vec<Val>> {
    if let Some(out) = c.dest {
        if conv2d_into(c.queue, [x, w], p, out)? {
            return one(out.clone());
        }
    }
    output(c, conv2d(c.queue, x, w, p)?)
}

/// `x` `[n, c, ..]` with zeros before and after its spatial axes, as `pads` says.
fn zero_padded(c: &Ctx<'_>, x: Tensor, pads: &[(usize, usize)]) -> Result<Tensor> {
    let sides: Vec<(usize, i64, i64)> = (pads.iter().enumerate())
        .map(|(i, &(before, after))| (i + 2, before as i64, after as i64))
        .collect();
    pad_tensor(c, x, &sides, Mode::Constant(0.0))
}

/// `MaxPool` / `AveragePool` over one to three spatial axes.
fn pool(c: &Ctx<'_>, kind: PoolKind) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let kernel = c
        .int_list("kernel_shape")?
        .ok_or_else(|| c.error("kernel_shape is missing".into()))?;
    let kernel: Vec<usize> = kernel.iter().map(|&k| k.max(1) as usize).collect();
    let win = window(c, &spatial(&x), &kernel)?;
    let (count_include_pad, ceil_mode) = (
        c.int("count_include_pad", 0)? != 0,
        c.int("ceil_mode", 0)? != 0,
    );
    let options =
        |[kernel, stride, dilation]: [[usize; 2]; 3],
         [(top, bottom), (left, right)]: [(usize, usize); 2]| PoolOptions {
            kernel,
            stride,
            padding: [top, left, bottom, right],
            dilation,
            count_include_pad,
            ceil_mode,
        };
    let plane = options(
        [win.kernel.as_slice(), &win.stride, &win.dilation].map(|v| lift2(v, 1)),
        lift2(&win.pads, (0, 0)),
    );
    if let ([kd, _, _], [sd, _, _], [dd, _, _], [pd, _, _]) = (
        &win.kernel[..],
        &win.stride[..],
        &win.dilation[..],
        &win.pads[..],
    ) {
        let depth = options([[*kd, 1], [*sd, 1], [*dd, 1]], [*pd, (0, 0)]);
        return one(depth::pool3d(c, kind, &x, plane, depth)?);
    }
    output(c, pool2d_with(c.queue, kind, &planar(c, x, 0)?, plane)?)
}

/// The spatial extents of `t`, `[n, c, ..]` (none for a rank below 3).
pub(super) fn spatial(t: &Tensor) -> Vec<usize> {
    t.shape().get(2..).unwrap_or_default().to_vec()
}

fn global(c: &Ctx<'_>, op: ReduceOp) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let axes: Vec<usize> = (2..x.rank()).collect();
    one(crate::ops::reduce::reduce_axes_with_identity(
        c.queue, op, &x, &axes, true,
    )?)
}
