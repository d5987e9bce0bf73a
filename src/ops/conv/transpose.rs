//! 2-D transposed convolution (NCHW): conv2d's gradient with respect to its input, as the
//! upsampling layers of decoders and ONNX's ConvTranspose use it. Each output gathers the
//! inputs whose taps land on it, so no kernel needs atomics.

use super::{check_f32, checked_bias, lifted, run_conv, Conv2dGeometry};
use crate::ops::UnaryOp;
use crate::{Error, Queue, Result, Tensor};

/// Options of [`conv_transpose2d`]; the default is stride 1, no padding, no output padding,
/// no dilation, one group.
#[derive(Debug, Clone, Copy)]
pub struct ConvTranspose2dParams<'a> {
    /// Per-output-channel bias `[o]`, added in the kernel.
    pub bias: Option<&'a Tensor>,
    /// Stride (rows, columns), each >= 1: the input's positions lie this far apart in the
    /// output.
    pub stride: [usize; 2],
    /// Rows and columns cropped from the full output, `[top, left, bottom, right]` (ONNX's
    /// `pads` order; PyTorch's `padding` on both sides).
    pub padding: [usize; 4],
    /// Rows and columns added after the last ones (bottom, right), where only the bias and
    /// activation land unless the padding crops as many (ONNX's and PyTorch's
    /// `output_padding`).
    pub output_padding: [usize; 2],
    /// Dilation (rows, columns), each >= 1.
    pub dilation: [usize; 2],
    /// Channel groups: `c` must be a multiple of it.
    pub groups: usize,
    /// Activation applied in the kernel, after the bias.
    pub act: Option<UnaryOp>,
}

impl Default for ConvTranspose2dParams<'_> {
    fn default() -> Self {
        ConvTranspose2dParams {
            bias: None,
            stride: [1, 1],
            padding: [0; 4],
            output_padding: [0, 0],
            dilation: [1, 1],
            groups: 1,
            act: None,
        }
    }
}

impl ConvTranspose2dParams<'_> {
    /// The output shape `[n, o, oh, ow]` of a transposed convolution of an `x` of shape
    /// `[n, c, h, w]` by a `weight` of shape `[c, o / groups, kh, kw]`, or why they do not fit.
    pub fn output_shape(&self, x: &[usize], weight: &[usize]) -> Result<[usize; 4]> {
        let g = geometry(x, weight, self)?;
        Ok([g.n, g.o, g.oh, g.ow])
    }
}

/// `act(conv_transpose2d(x, weight) + bias)` for `x: [n, c, h, w]` and `weight: [c, o /
/// groups, kh, kw]`, giving `[n, o, oh, ow]` with `oh = (h - 1) * stride + (kh - 1) *
/// dilation + 1 + output_padding - top - bottom` (and `ow` alike): output row `oy` sums,
/// over the taps `ky`, input row `(oy + top - ky * dilation) / stride` where that divides
/// exactly and lies in the input. A 1-D transposed convolution is one of height 1.
pub fn conv_transpose2d(
    queue: &Queue,
    x: &Tensor,
    weight: &Tensor,
    p: ConvTranspose2dParams<'_>,
) -> Result<Tensor> {
    lifted(queue, OP, [x, weight], p.bias, |x, weight, bias| {
        check_f32(queue, OP, x)?;
        check_f32(queue, OP, weight)?;
        let geometry = geometry(x.shape(), weight.shape(), &p)?;
        let bias = checked_bias(queue, OP, bias, geometry.o)?;
        run_conv(queue, [x, weight], bias.as_ref(), p.act, geometry, true)
    })
}

/// The op's name in errors.
const OP: &str = "conv_transpose2d";

/// The geometry of a transposed convolution of an `xs` input by a `ws` weight with `p`; an
/// error unless their shapes, the groups and the output extents fit together.
fn geometry(xs: &[usize], ws: &[usize], p: &ConvTranspose2dParams<'_>) -> Result<Conv2dGeometry> {
    let (&[n, c, h, w], &[wc, og, kh, kw]) = (xs, ws) else {
        return Err(Error::shape(
            OP,
            format!(
                "got x {xs:?} and weight {ws:?}: expected x [n, c, h, w] and weight \
                 [c, o / groups, kh, kw]"
            ),
        ));
    };
    let groups = p.groups;
    if groups == 0 || c % groups != 0 {
        return Err(Error::Invalid(format!(
            "{OP}: {groups} groups with {c} input channels: expected groups >= 1 dividing them"
        )));
    }
    if wc != c {
        return Err(Error::shape(
            OP,
            format!("weight {ws:?} has {wc} input channels: expected {c}, x's channels"),
        ));
    }
    let o = og.checked_mul(groups).ok_or_else(|| {
        Error::shape(
            OP,
            format!("{og} output channels per group times {groups} groups overflows"),
        )
    })?;
    let [top, left, bottom, right] = p.padding;
    let axis = |name, i: usize, input, kernel, pads| Axis {
        name,
        input,
        kernel,
        stride: p.stride[i],
        dilation: p.dilation[i],
        pads,
        output_padding: p.output_padding[i],
    };
    let oh = axis("height", 0, h, kh, [top, bottom]).extent()?;
    let ow = axis("width", 1, w, kw, [left, right]).extent()?;
    Ok(Conv2dGeometry {
        n,
        c,
        h,
        w,
        o,
        kh,
        kw,
        oh,
        ow,
        stride: p.stride,
        padding: [top, left],
        pad_end: [bottom, right],
        dilation: p.dilation,
        groups,
    })
}

/// One spatial axis of a transposed convolution.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Axis {
    /// The axis in errors ("height").
    pub name: &'static str,
    pub input: usize,
    pub kernel: usize,
    pub stride: usize,
    pub dilation: usize,
    /// Cropped before the first and after the last output.
    pub pads: [usize; 2],
    pub output_padding: usize,
}

impl Axis {
    /// The `(input position, tap)` pairs that land on output position `out`: those with
    /// `out + before = input * stride + tap * dilation`.
    pub(crate) fn taps(&self, out: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let reach = out.saturating_add(self.pads[0]);
        (0..self.kernel).filter_map(move |k| {
            let t = reach.checked_sub(k.checked_mul(self.dilation)?)?;
            let i = t.checked_div(self.stride)?;
            (t % self.stride == 0 && i < self.input).then_some((i, k))
        })
    }

    /// The output extent, or an error naming the geometry. Sizes come from the user, so the
    /// arithmetic is checked: nothing wraps.
    pub(crate) fn extent(&self) -> Result<usize> {
        let Axis {
            name,
            input,
            kernel,
            stride,
            dilation,
            pads: [before, after],
            output_padding,
        } = *self;
        if kernel == 0 || stride == 0 || dilation == 0 || input == 0 {
            return Err(Error::shape(
                OP,
                format!(
                    "{name}: input {input}, kernel {kernel}, stride {stride}, dilation \
                     {dilation}: expected each >= 1"
                ),
            ));
        }
        let full = ((input - 1).checked_mul(stride))
            .zip((kernel - 1).checked_mul(dilation))
            .and_then(|(a, b)| {
                a.checked_add(b)?
                    .checked_add(output_padding)?
                    .checked_add(1)
            });
        let cropped = before.checked_add(after);
        let (Some(full), Some(cropped)) = (full, cropped) else {
            return Err(Error::shape(
                OP,
                format!(
                    "{name}: the output overflows (input {input}, kernel {kernel}, stride \
                     {stride}, dilation {dilation}, output padding {output_padding}, padding \
                     {before} + {after}): expected a geometry whose sizes fit in {} bits",
                    usize::BITS
                ),
            ));
        };
        full.checked_sub(cropped).ok_or_else(|| {
            Error::shape(
                OP,
                format!(
                    "{name}: padding {before} + {after} crops more than the full output of \
                     {full}: expected at most {full} in all"
                ),
            )
        })
    }
}
