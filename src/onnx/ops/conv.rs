//! Convolution and pooling over one or two spatial axes (1-D runs as 2-D with a height of
//! 1), with ONNX's explicit or automatic (`SAME_*`, `VALID`) padding.

use super::pad::{pad_tensor, Mode};
use super::{one, op, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::value::Val;
use crate::onnx::Node;
use crate::ops::conv::{conv2d, pool2d_with};
use crate::ops::{Conv2dParams, PoolKind, PoolOptions, ReduceOp};
use crate::Tensor;

/// The convolution and pooling operators.
pub(super) const OPS: &[OpDef] = &[
    op("Conv", conv).refusing(conv_refusal),
    op("MaxPool", |c| pool(c, PoolKind::Max)).refusing(pool_refusal),
    op("AveragePool", |c| pool(c, PoolKind::Avg)).refusing(pool_refusal),
    op("GlobalAveragePool", |c| global(c, ReduceOp::Mean)),
    op("GlobalMaxPool", |c| global(c, ReduceOp::Max)),
];

/// Why a `Conv` node cannot run: more than two spatial axes.
fn conv_refusal(node: &Node) -> Option<String> {
    let kernel = node.attrs.ints("kernel_shape").ok().flatten()?;
    (kernel.len() > 2).then(|| format!("{}-D convolution; 1-D and 2-D run", kernel.len()))
}

/// Why a pooling node cannot run: more than two spatial axes, dilations, or padding past
/// half the window (what the library's pooling takes).
fn pool_refusal(node: &Node) -> Option<String> {
    let a = &node.attrs;
    let kernel = a.ints("kernel_shape").ok().flatten()?;
    if kernel.is_empty() || kernel.len() > 2 {
        return Some(format!("{}-D pooling; 1-D and 2-D run", kernel.len()));
    }
    if a.ints("dilations")
        .ok()
        .flatten()
        .is_some_and(|d| d.iter().any(|&d| d != 1))
    {
        return Some("dilated pooling is not supported yet".into());
    }
    let pads = a.ints("pads").ok().flatten().cloned().unwrap_or_default();
    let k = kernel.len();
    let past_half = pads.iter().enumerate().any(|(i, &p)| p > kernel[i % k] / 2);
    past_half.then(|| format!("pads {pads:?} pass half the window {kernel:?}"))
}

/// The geometry of one node: per spatial axis the window (dilated), stride, dilation and
/// the padding before and after, lifted to two axes.
struct Window {
    kernel: [usize; 2],
    stride: [usize; 2],
    dilation: [usize; 2],
    pads: [(usize, usize); 2],
}

/// Two spatial axes from one or two: 1-D lifts with a leading axis of 1.
fn lift2<T: Copy>(v: &[T], one: T) -> [T; 2] {
    if v.len() == 1 {
        [one, v[0]]
    } else {
        [v[0], v[1]]
    }
}

/// The node's window over input spatial extents `dims` and kernel extents `kernel`.
fn window(c: &Ctx<'_>, dims: &[usize], kernel: &[usize]) -> Result<Window> {
    let k = kernel.len();
    let list = |name: &str| -> Result<Vec<usize>> {
        let v = c.int_list(name)?.unwrap_or_else(|| vec![1; k]);
        if v.len() != k || v.iter().any(|&x| x < 1) {
            return Err(c.error(format!("{name} {v:?}: expected {k} values ≥ 1")));
        }
        Ok(v.iter().map(|&x| x as usize).collect())
    };
    let (stride, dilation) = (list("strides")?, list("dilations")?);
    let eff: Vec<usize> = (0..k).map(|i| (kernel[i] - 1) * dilation[i] + 1).collect();
    let auto = c.string("auto_pad", "NOTSET")?;
    let pads: Vec<(usize, usize)> = match auto.as_str() {
        "NOTSET" => {
            let p = c.int_list("pads")?.unwrap_or_else(|| vec![0; 2 * k]);
            if p.len() != 2 * k || p.iter().any(|&x| x < 0) {
                return Err(c.error(format!("pads {p:?}: expected {} values ≥ 0", 2 * k)));
            }
            (0..k).map(|i| (p[i] as usize, p[i + k] as usize)).collect()
        }
        "VALID" => vec![(0, 0); k],
        "SAME_UPPER" | "SAME_LOWER" => (0..k)
            .map(|i| {
                let out = dims[i].div_ceil(stride[i]);
                let total = ((out - 1) * stride[i] + eff[i]).saturating_sub(dims[i]);
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
        kernel: lift2(kernel, 1),
        stride: lift2(&stride, 1),
        dilation: lift2(&dilation, 1),
        pads: lift2(&pads, (0, 0)),
    })
}

/// Input 0 as `[n, c, h, w]` (a 1-D input gains a height of 1), checked to have 1 or 2
/// spatial axes.
fn input4(c: &Ctx<'_>) -> Result<Tensor> {
    let x = c.tensor(0)?;
    match x.rank() {
        3 => {
            let s = x.shape();
            x.reshape(&[s[0], s[1], 1, s[2]])
        }
        4 => Ok(x),
        r => Err(c.error(format!(
            "a rank-{r} input: 1 or 2 spatial axes are supported"
        ))),
    }
}

/// `y` back to the input's rank (a 1-D op's height of 1 dropped).
fn output(c: &Ctx<'_>, y: Tensor) -> Result<Vec<Val>> {
    if c.input(0)?.shape().len() == 3 {
        let s = y.shape().to_vec();
        return one(y.reshape(&[s[0], s[1], s[3]])?);
    }
    one(y)
}

fn conv(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = input4(c)?;
    let w = c.tensor(1)?;
    let ws = w.shape().to_vec();
    let w = if ws.len() == 3 {
        w.reshape(&[ws[0], ws[1], 1, ws[2]])?
    } else {
        w
    };
    let spatial = &c.input(0)?.shape()[2..];
    let win = window(c, spatial, &ws[2..])?;
    let symmetric = win.pads.iter().all(|(b, a)| b == a);
    let x = if symmetric {
        x
    } else {
        let sides: Vec<(usize, i64, i64)> = (0..2)
            .map(|i| (i + 2, win.pads[i].0 as i64, win.pads[i].1 as i64))
            .collect();
        pad_tensor(c, x, &sides, Mode::Constant(0.0))?
    };
    let bias = c.opt_tensor(2)?;
    let params = Conv2dParams {
        bias: bias.as_ref(),
        stride: win.stride,
        padding: if symmetric {
            win.pads.map(|p| p.0)
        } else {
            [0, 0]
        },
        dilation: win.dilation,
        groups: c.int("group", 1)?.max(1) as usize,
        act: None,
    };
    output(c, conv2d(c.queue, &x, &w, params)?)
}

fn pool(c: &Ctx<'_>, kind: PoolKind) -> Result<Vec<Val>> {
    let x = input4(c)?;
    let kernel = c
        .int_list("kernel_shape")?
        .ok_or_else(|| c.error("kernel_shape is missing".into()))?;
    let kernel: Vec<usize> = kernel.iter().map(|&k| k.max(1) as usize).collect();
    let win = window(c, &c.input(0)?.shape()[2..], &kernel)?;
    if win.dilation != [1, 1] {
        return Err(c.error(format!(
            "dilations {:?} are not supported in pooling",
            win.dilation
        )));
    }
    let p = win.pads;
    let options = PoolOptions {
        kernel: win.kernel,
        stride: win.stride,
        padding: [p[0].0, p[1].0, p[0].1, p[1].1],
        count_include_pad: c.int("count_include_pad", 0)? != 0,
        ceil_mode: c.int("ceil_mode", 0)? != 0,
    };
    output(c, pool2d_with(c.queue, kind, &x, options)?)
}

fn global(c: &Ctx<'_>, op: ReduceOp) -> Result<Vec<Val>> {
    let x = c.tensor(0)?;
    let axes: Vec<usize> = (2..x.rank()).collect();
    one(crate::ops::reduce::reduce_axes_with_identity(
        c.queue, op, &x, &axes, true,
    )?)
}
