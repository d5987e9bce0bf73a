//! ONNX's ConvTranspose over one to three spatial axes (1-D runs as 2-D with a height of 1,
//! 3-D as 2-D per output depth), on the library's transposed convolution: explicit `pads`, or
//! the padding worked out from `output_shape` or `auto_pad`.

use super::conv::{int_list, ints_refusal, lift2, output, planar, positive_list, spatial};
use super::{depth, one, op, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::value::Val;
use crate::onnx::Node;
use crate::ops::conv::{conv_transpose2d, TransposedAxis};
use crate::ops::ConvTranspose2dParams;

/// The transposed convolution operator.
pub(super) const OPS: &[OpDef] =
    &[op("ConvTranspose", conv_transpose).refusing(conv_transpose_refusal)];

/// Why a `ConvTranspose` node cannot run: more than three spatial axes in any of its
/// attributes, a geometry attribute out of range, or an `auto_pad` it does not know.
fn conv_transpose_refusal(node: &Node) -> Option<String> {
    let a = &node.attrs;
    let axes = |name: &str, per_axis: usize| {
        let n = a.ints(name).ok().flatten().map_or(0, Vec::len);
        // output_shape may name the batch and channel extents too.
        let n = if name == "output_shape" && n > 3 {
            n - 2
        } else {
            n
        };
        n.div_ceil(per_axis)
    };
    let names = [
        ("kernel_shape", 1),
        ("strides", 1),
        ("dilations", 1),
        ("output_padding", 1),
        ("pads", 2),
        ("output_shape", 1),
    ];
    if let Some(k) = names.iter().map(|&(n, per)| axes(n, per)).find(|&k| k > 3) {
        return Some(format!("{k}-D transposed convolution; 1-D to 3-D run"));
    }
    if let Some(why) = ints_refusal(node, &["output_padding", "output_shape"]) {
        return Some(why);
    }
    let auto = a
        .string("auto_pad")
        .ok()
        .flatten()
        .map_or("NOTSET", String::as_str);
    let known = ["NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"].contains(&auto);
    (!known).then(|| format!("auto_pad '{auto}' is not a known mode"))
}

/// A `ConvTranspose` node's padding: per spatial axis the outputs cropped before and after,
/// and the output padding (ONNX's `output_padding`, plus what an `output_shape` past the
/// full output adds after it, as onnxruntime places it).
struct TransposedPads {
    /// Cropped before and after, per axis.
    pads: Vec<(usize, usize)>,
    /// Added after, per axis.
    output_padding: Vec<usize>,
}

/// The node's padding over input spatial extents `dims`, with `stride`, `dilation` and the
/// kernel extents `kernel`: explicit `pads`, or worked out from `output_shape` (by default,
/// with `auto_pad` SAME_*, the input extents times the strides) as the ONNX specification
/// says: the padding beyond that shape, its odd one after (SAME_UPPER) or before.
fn transposed_pads(
    c: &Ctx<'_>,
    dims: &[usize],
    [stride, dilation, kernel]: [&[usize]; 3],
) -> Result<TransposedPads> {
    let k = dims.len();
    let mut output_padding = int_list(c, "output_padding", k, 0)?;
    let auto = c.string("auto_pad", "NOTSET")?;
    let shape = c.int_list("output_shape")?;
    // In i128: extents and attributes below 2^63 cannot overflow it.
    let target: Option<Vec<i128>> = match (&shape, auto.as_str()) {
        (Some(s), _) => Some(
            s[s.len().saturating_sub(k)..]
                .iter()
                .map(|&e| e.into())
                .collect(),
        ),
        (None, "SAME_UPPER" | "SAME_LOWER") => Some(
            (0..k)
                .map(|i| dims[i] as i128 * stride[i] as i128)
                .collect(),
        ),
        _ => None,
    };
    let Some(target) = target else {
        let pads = match auto.as_str() {
            "VALID" => vec![(0, 0); k],
            _ => {
                let p = int_list(c, "pads", 2 * k, 0)?;
                (0..k).map(|i| (p[i], p[i + k])).collect()
            }
        };
        return Ok(TransposedPads {
            pads,
            output_padding,
        });
    };
    if target.len() != k || target.iter().any(|&t| t < 0) {
        return Err(c.error(format!(
            "output_shape {shape:?}: expected {k} spatial extents ≥ 0"
        )));
    }
    let size =
        |v: i128| usize::try_from(v).map_err(|_| c.error(format!("a padding of {v} overflows")));
    let mut pads = Vec::with_capacity(k);
    for i in 0..k {
        let span = |n: usize, step: usize| n.saturating_sub(1) as i128 * step as i128;
        let full = span(dims[i], stride[i]) + span(kernel[i], dilation[i]) + 1;
        let total = full + output_padding[i] as i128 - target[i];
        if total < 0 {
            // A shape past the full output: the extra outputs follow it.
            output_padding[i] = size(output_padding[i] as i128 - total)?;
            pads.push((0, 0));
            continue;
        }
        let (small, large) = (size(total / 2)?, size(total - total / 2)?);
        pads.push(if auto == "SAME_UPPER" {
            (small, large)
        } else {
            (large, small)
        });
    }
    Ok(TransposedPads {
        pads,
        output_padding,
    })
}

/// `ConvTranspose`: x `[n, c, ..]` by w `[c, o / group, ..]` plus an optional bias `[o]`.
fn conv_transpose(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let (x, w) = (c.tensor(0)?, c.tensor(1)?);
    let (dims, kernel) = (spatial(&x), spatial(&w));
    let k = dims.len();
    if !(1..=3).contains(&k) || kernel.len() != k {
        return Err(c.error(format!(
            "input {:?} and weight {:?}: expected 1 to 3 spatial axes in both",
            x.shape(),
            w.shape()
        )));
    }
    if let Some(shape) = c.int_list("kernel_shape")? {
        if shape.iter().map(|&e| e as usize).ne(kernel.iter().copied()) {
            return Err(c.error(format!(
                "kernel_shape {shape:?}: expected the weight's {kernel:?}"
            )));
        }
    }
    let (stride, dilation) = (
        positive_list(c, "strides", k)?,
        positive_list(c, "dilations", k)?,
    );
    let p = transposed_pads(c, &dims, [&stride, &dilation, &kernel])?;
    let pads = lift2(&p.pads, (0, 0));
    let bias = c.opt_tensor(2)?;
    let params = ConvTranspose2dParams {
        bias: bias.as_ref(),
        stride: lift2(&stride, 1),
        padding: [pads[0].0, pads[1].0, pads[0].1, pads[1].1],
        output_padding: lift2(&p.output_padding, 0),
        dilation: lift2(&dilation, 1),
        groups: c.int("group", 1)?.max(1) as usize,
        act: None,
    };
    if k == 3 {
        let depth = TransposedAxis {
            name: "depth",
            input: dims[0],
            kernel: kernel[0],
            stride: stride[0],
            dilation: dilation[0],
            pads: [p.pads[0].0, p.pads[0].1],
            output_padding: p.output_padding[0],
        };
        return one(depth::conv_transpose3d(c, &x, &w, &depth, params)?);
    }
    let (x, w) = (planar(c, x, 0)?, planar(c, w, 1)?);
    output(c, conv_transpose2d(c.queue, &x, &w, params)?)
}
