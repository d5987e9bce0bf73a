//! 2-D convolution (NCHW, with stride, padding, dilation and groups, and an optional fused
//! bias and activation), its transpose ([`conv_transpose2d`]) and 2-D max / average pooling.

backend_modules!();
mod transpose;

pub(crate) use transpose::Axis as TransposedAxis;
pub use transpose::{conv_transpose2d, ConvTranspose2dParams};

use super::cost::OpCost;
use super::elementwise::check_f32;
use super::{backends, launch, Lift, OpRequest, Operand, UnaryOp};
use crate::{DType, Error, Queue, Result, Tensor};

/// Sizes of one convolution or pooling, all worked out and checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conv2dGeometry {
    /// Batch size.
    pub n: usize,
    /// Input channels.
    pub c: usize,
    /// Input height and width.
    pub h: usize,
    /// Input width.
    pub w: usize,
    /// Output channels (pooling: `c`).
    pub o: usize,
    /// Kernel height.
    pub kh: usize,
    /// Kernel width.
    pub kw: usize,
    /// Output height.
    pub oh: usize,
    /// Output width.
    pub ow: usize,
    /// Stride (rows, columns).
    pub stride: [usize; 2],
    /// Zero padding before the first row and column (top, left); for a transposed
    /// convolution, the outputs cropped there.
    pub padding: [usize; 2],
    /// Padding after the last row and column (bottom, right): `padding` for convolutions;
    /// for a transposed convolution, the outputs cropped there (its output padding is in
    /// `oh` and `ow`).
    pub pad_end: [usize; 2],
    /// Kernel dilation (rows, columns).
    pub dilation: [usize; 2],
    /// Channel groups (pooling: `c`, each channel on its own).
    pub groups: usize,
}

/// Options of [`conv2d`]; the default is stride 1, no padding, no dilation, one group.
#[derive(Debug, Clone, Copy)]
pub struct Conv2dParams<'a> {
    /// Per-output-channel bias `[o]`, added in the kernel.
    pub bias: Option<&'a Tensor>,
    /// Stride (rows, columns), each >= 1.
    pub stride: [usize; 2],
    /// Zero padding on each side (rows, columns).
    pub padding: [usize; 2],
    /// Dilation (rows, columns), each >= 1.
    pub dilation: [usize; 2],
    /// Channel groups: `c` and `o` must be multiples of it.
    pub groups: usize,
    /// Activation applied in the kernel, after the bias.
    pub act: Option<UnaryOp>,
}

impl Default for Conv2dParams<'_> {
    fn default() -> Self {
        Conv2dParams {
            bias: None,
            stride: [1, 1],
            padding: [0, 0],
            dilation: [1, 1],
            groups: 1,
            act: None,
        }
    }
}

/// Output extent of one spatial axis, or an error naming the geometry. Sizes come from the
/// user, so the arithmetic is checked: a padding or dilation too large for `usize` is an
/// error, never a wrapped extent.
fn out_extent(
    op: &'static str,
    axis: &str,
    input: usize,
    kernel: usize,
    stride: usize,
    pad: usize,
    dilation: usize,
) -> Result<usize> {
    if kernel == 0 || stride == 0 || dilation == 0 {
        return Err(Error::Invalid(format!(
            "{op}: {axis} kernel {kernel}, stride {stride}, dilation \
            {dilation}: expected each >= 1"
        )));
    }
    let too_large = |what: &str| {
        Error::shape(
            op,
            format!(
                "{axis}: {what} overflows (input {input}, kernel {kernel}, stride \
            {stride}, padding {pad}, dilation {dilation}): expected a geometry whose sizes fit in \
            {} bits",
                usize::BITS
            ),
        )
    };
    let span = dilation
        .checked_mul(kernel - 1)
        .and_then(|s| s.checked_add(1))
        .ok_or_else(|| too_large("the dilated kernel span"))?;
    let padded = pad
        .checked_mul(2)
        .and_then(|p| p.checked_add(input))
        .ok_or_else(|| too_large("the padded input"))?;
    if span > padded {
        return Err(Error::shape(
            op,
            format!(
                "{axis}: the kernel spans {span} but the padded input \
            is {padded}: expected a kernel that fits"
            ),
        ));
    }
    Ok((padded - span) / stride + 1)
}

/// `act(conv2d(x, weight) + bias)` for `x: [n, c, h, w]` and `weight: [o, c / groups, kh, kw]`,
/// giving `[n, o, oh, ow]`.
pub fn conv2d(queue: &Queue, x: &Tensor, weight: &Tensor, p: Conv2dParams<'_>) -> Result<Tensor> {
    lifted(queue, "conv2d", [x, weight], p.bias, |x, weight, bias| {
        let params = Conv2dParams { bias, ..p };
        conv2d_f32(queue, x, weight, params)
    })
}

/// `f` of `x`, `weight` and `bias` in f32: f16 / bf16 inputs lifted, the result brought back.
fn lifted(
    queue: &Queue,
    op: &'static str,
    [x, weight]: [&Tensor; 2],
    bias: Option<&Tensor>,
    f: impl FnOnce(&Tensor, &Tensor, Option<&Tensor>) -> Result<Tensor>,
) -> Result<Tensor> {
    let inputs: Vec<&Tensor> = [Some(x), Some(weight), bias]
        .into_iter()
        .flatten()
        .collect();
    let lift = Lift::of(op, &inputs)?;
    let bias = bias.map(|t| lift.up(queue, t)).transpose()?;
    let (x, weight) = (lift.up(queue, x)?, lift.up(queue, weight)?);
    lift.down(queue, f(&x, &weight, bias.as_ref())?)
}

/// `bias`, if any, checked to be f32 of shape `[o]` and made contiguous.
fn checked_bias(
    queue: &Queue,
    op: &'static str,
    bias: Option<&Tensor>,
    o: usize,
) -> Result<Option<Tensor>> {
    let Some(b) = bias else {
        return Ok(None);
    };
    check_f32(queue, op, b)?;
    if b.shape() != [o] {
        return Err(Error::shape(
            op,
            format!(
                "bias has shape {:?}: expected [{o}] (the output channels)",
                b.shape()
            ),
        ));
    }
    b.contiguous_on(queue).map(Some)
}

/// The geometry of a conv2d of `x` by `weight` with `p`; an error unless their shapes, the
/// groups and the output extents fit together.
fn conv2d_geometry(x: &Tensor, weight: &Tensor, p: &Conv2dParams<'_>) -> Result<Conv2dGeometry> {
    let (xs, ws) = (x.shape(), weight.shape());
    if xs.len() != 4 || ws.len() != 4 {
        return Err(Error::shape(
            "conv2d",
            format!(
                "got x {xs:?} and weight {ws:?}: expected x [n, \
            c, h, w] and weight [o, c / groups, kh, kw]"
            ),
        ));
    }
    let (n, c, h, w) = (xs[0], xs[1], xs[2], xs[3]);
    let (o, kh, kw) = (ws[0], ws[2], ws[3]);
    let groups = p.groups;
    if groups == 0 || c % groups != 0 || o % groups != 0 {
        return Err(Error::Invalid(format!(
            "conv2d: {groups} groups with {c} input and {o} output \
            channels: expected groups >= 1 dividing both"
        )));
    }
    if ws[1] != c / groups {
        return Err(Error::shape(
            "conv2d",
            format!(
                "weight {ws:?} has {} input channels per group: \
            expected {} (c {c} / groups {groups})",
                ws[1],
                c / groups
            ),
        ));
    }
    let oh = out_extent(
        "conv2d",
        "height",
        h,
        kh,
        p.stride[0],
        p.padding[0],
        p.dilation[0],
    )?;
    let ow = out_extent(
        "conv2d",
        "width",
        w,
        kw,
        p.stride[1],
        p.padding[1],
        p.dilation[1],
    )?;
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
        padding: p.padding,
        pad_end: p.padding,
        dilation: p.dilation,
        groups,
    })
}

fn conv2d_f32(queue: &Queue, x: &Tensor, weight: &Tensor, p: Conv2dParams<'_>) -> Result<Tensor> {
    check_f32(queue, "conv2d", x)?;
    check_f32(queue, "conv2d", weight)?;
    let geometry = conv2d_geometry(x, weight, &p)?;
    let bias = checked_bias(queue, "conv2d", p.bias, geometry.o)?;
    run_conv(queue, [x, weight], bias.as_ref(), p.act, geometry, false)
}

/// [`conv2d`] of f32 tensors written into `out`, a contiguous f32 view of the output's shape
/// (a Concat's slice: `onnx::joins`); `false`, with nothing recorded, where the inputs are
/// not f32 or `out` is not such a view.
pub(crate) fn conv2d_into(
    queue: &Queue,
    [x, weight]: [&Tensor; 2],
    p: Conv2dParams<'_>,
    out: &Tensor,
) -> Result<bool> {
    let tensors = [Some(x), Some(weight), p.bias, Some(out)];
    if tensors.iter().flatten().any(|t| t.dtype() != DType::F32) || !out.is_contiguous() {
        return Ok(false);
    }
    let g = conv2d_geometry(x, weight, &p)?;
    if out.shape() != [g.n, g.o, g.oh, g.ow] {
        return Ok(false);
    }
    for t in [x, weight, out] {
        check_f32(queue, "conv2d", t)?;
    }
    let bias = checked_bias(queue, "conv2d", p.bias, g.o)?;
    record_conv(queue, [x, weight], bias.as_ref(), p.act, (g, false), out)?;
    Ok(true)
}

/// Records a convolution (`transposed`: a transposed one) of `geometry`, already checked,
/// into a new `[n, o, oh, ow]` output.
fn run_conv(
    queue: &Queue,
    [x, weight]: [&Tensor; 2],
    bias: Option<&Tensor>,
    act: Option<UnaryOp>,
    geometry: Conv2dGeometry,
    transposed: bool,
) -> Result<Tensor> {
    let Conv2dGeometry { n, o, oh, ow, .. } = geometry;
    let op = if transposed {
        "conv_transpose2d"
    } else {
        "conv2d"
    };
    crate::base::layout::checked_numel(op, &[n, o, oh, ow])?;
    let out = Tensor::uninit(queue, &[n, o, oh, ow], DType::F32)?;
    record_conv(queue, [x, weight], bias, act, (geometry, transposed), &out)?;
    Ok(out)
}

/// Records a convolution of `geometry` (`transposed`: a transposed one), already checked,
/// into `out`, a contiguous f32 view of its `[n, o, oh, ow]` output.
fn record_conv(
    queue: &Queue,
    [x, weight]: [&Tensor; 2],
    bias: Option<&Tensor>,
    act: Option<UnaryOp>,
    (geometry, transposed): (Conv2dGeometry, bool),
    out: &Tensor,
) -> Result<()> {
    let (x, weight) = (x.contiguous_on(queue)?, weight.contiguous_on(queue)?);
    if out.numel() > 0 {
        let conv = Conv2d {
            x: x.operand(),
            weight: weight.operand(),
            bias: bias.map(Tensor::operand),
            act,
            out: out.operand(),
            geometry,
            transposed,
        };
        launch(queue, &conv, None)?;
    }
    Ok(())
}

/// Pooling kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PoolKind {
    /// Largest value of the window (padding never wins; NaN propagates).
    Max = 0,
    /// Mean of the window: over the taps within the input, or with
    /// [`PoolOptions::count_include_pad`] over the taps within the padded input.
    Avg = 1,
}

/// Options of [`pool2d`]: a symmetric padding, and an average that counts the padding
/// (PyTorch's default). [`PoolOptions`] has every ONNX option.
#[derive(Debug, Clone, Copy)]
pub struct Pool2dParams {
    /// Window (rows, columns).
    pub kernel: [usize; 2],
    /// Stride; `None` means the window size.
    pub stride: Option<[usize; 2]>,
    /// Padding on each side, at most half the window.
    pub padding: [usize; 2],
}

/// Options of [`pool2d_with`], as ONNX's MaxPool and AveragePool attributes for two spatial
/// axes. [`PoolOptions::new`] gives stride = window, no padding, floor rounding, and an
/// average over the taps within the input (ONNX's defaults).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolOptions {
    /// Window (rows, columns), each >= 1.
    pub kernel: [usize; 2],
    /// Stride (rows, columns), each >= 1.
    pub stride: [usize; 2],
    /// Padding `[top, left, bottom, right]` (ONNX's `pads` order), each at most half the
    /// window along its axis.
    pub padding: [usize; 4],
    /// Spacing of the window's taps (rows, columns), each >= 1: a window of `k` taps spans
    /// `(k - 1) * dilation + 1` input positions (ONNX's `dilations`).
    pub dilation: [usize; 2],
    /// Average pooling: divide by the window's taps within the padded input (ONNX's
    /// `count_include_pad = 1`, PyTorch's default) instead of those within the input alone.
    pub count_include_pad: bool,
    /// Round the output extents up (ONNX's and PyTorch's `ceil_mode`): a last, partial window
    /// is kept when it starts within the input or its top / left padding.
    pub ceil_mode: bool,
}

impl PoolOptions {
    /// Windows of `kernel`, stride = window, no padding, no dilation, floor rounding.
    pub fn new(kernel: [usize; 2]) -> Self {
        PoolOptions {
            kernel,
            stride: kernel,
            padding: [0; 4],
            dilation: [1, 1],
            count_include_pad: false,
            ceil_mode: false,
        }
    }
}

impl From<Pool2dParams> for PoolOptions {
    fn from(p: Pool2dParams) -> Self {
        let [y, x] = p.padding;
        PoolOptions {
            kernel: p.kernel,
            stride: p.stride.unwrap_or(p.kernel),
            padding: [y, x, y, x],
            dilation: [1, 1],
            count_include_pad: true,
            ceil_mode: false,
        }
    }
}

/// Max or average pooling of `x: [n, c, h, w]`, giving `[n, c, oh, ow]`, with a symmetric
/// padding counted in averages (see [`pool2d_with`] for every option).
pub fn pool2d(queue: &Queue, kind: PoolKind, x: &Tensor, p: Pool2dParams) -> Result<Tensor> {
    pool2d_with(queue, kind, x, p.into())
}

/// Max or average pooling of `x: [n, c, h, w]` with ONNX's options, giving `[n, c, oh, ow]`:
/// along each axis `(h + top + bottom - ((kh - 1) * dilation + 1)) / stride + 1` windows,
/// rounded down, or up with `ceil_mode` (then a window that would start past the input and its
/// top padding is dropped). An average divides by the window's taps within the input, or with
/// `count_include_pad` within the padded input; a window whose dilated taps all miss the input
/// gives NaN (average) or -inf (max).
pub fn pool2d_with(queue: &Queue, kind: PoolKind, x: &Tensor, p: PoolOptions) -> Result<Tensor> {
    if x.dtype().size() == 1 && kind == PoolKind::Max {
        // u8, i8 and bool values are exact in f32, as is their maximum.
        let wide = pool2d_f32(queue, kind, &super::cast::cast(queue, x, DType::F32)?, p)?;
        return super::cast::cast(queue, &wide, x.dtype());
    }
    let lift = Lift::of("pool2d", &[x])?;
    lift.down(queue, pool2d_f32(queue, kind, &lift.up(queue, x)?, p)?)
}

/// The output extent of one pooled axis of `input` (see [`pool2d_with`]): `[kernel, stride,
/// dilation]` and the padding `[before, after]` of that axis.
fn pool_extent(
    op: &'static str,
    axis: &str,
    input: usize,
    [kernel, stride, dilation]: [usize; 3],
    [before, after]: [usize; 2],
    ceil: bool,
) -> Result<usize> {
    if kernel == 0 || stride == 0 || dilation == 0 {
        return Err(Error::Invalid(format!(
            "{op}: {axis} kernel {kernel}, stride {stride}, dilation {dilation}: expected each \
             >= 1"
        )));
    }
    for (side, pad) in [("before", before), ("after", after)] {
        if pad > kernel / 2 {
            return Err(Error::Invalid(format!(
                "{op}: {axis} padding {pad} {side} the input for a window of {kernel}: \
                 expected at most half the window"
            )));
        }
    }
    // The pads are at most half the window, so this cannot overflow unless `input` does.
    let padded = input
        .checked_add(before + after)
        .ok_or_else(|| Error::shape(op, format!("{axis}: the padded input {input} overflows")))?;
    let window = dilation
        .checked_mul(kernel - 1)
        .and_then(|s| s.checked_add(1))
        .ok_or_else(|| {
            Error::shape(
                op,
                format!("{axis}: the window of {kernel} dilated by {dilation} overflows"),
            )
        })?;
    if window > padded {
        return Err(Error::shape(
            op,
            format!(
                "{axis}: the window spans {window} but the padded input is {padded}: \
                 expected a window that fits"
            ),
        ));
    }
    let span = padded - window;
    let mut extent = if ceil {
        span.div_ceil(stride)
    } else {
        span / stride
    } + 1;
    if ceil && (extent - 1) * stride >= input + before {
        extent -= 1;
    }
    Ok(extent)
}

fn pool2d_f32(queue: &Queue, kind: PoolKind, x: &Tensor, p: PoolOptions) -> Result<Tensor> {
    let op = match kind {
        PoolKind::Max => "max_pool2d",
        PoolKind::Avg => "avg_pool2d",
    };
    check_f32(queue, op, x)?;
    let xs = x.shape();
    if xs.len() != 4 {
        return Err(Error::shape(
            op,
            format!("got x {xs:?}: expected [n, c, h, w]"),
        ));
    }
    let (n, c, h, w) = (xs[0], xs[1], xs[2], xs[3]);
    let [top, left, bottom, right] = p.padding;
    let rows = [p.kernel[0], p.stride[0], p.dilation[0]];
    let oh = pool_extent(op, "height", h, rows, [top, bottom], p.ceil_mode)?;
    let cols = [p.kernel[1], p.stride[1], p.dilation[1]];
    let ow = pool_extent(op, "width", w, cols, [left, right], p.ceil_mode)?;
    crate::base::layout::checked_numel(op, &[n, c, oh, ow])?;
    let geometry = Conv2dGeometry {
        n,
        c,
        h,
        w,
        o: c,
        kh: p.kernel[0],
        kw: p.kernel[1],
        oh,
        ow,
        stride: p.stride,
        padding: [top, left],
        pad_end: [bottom, right],
        dilation: p.dilation,
        groups: c,
    };
    let x = x.contiguous_on(queue)?;
    let out = Tensor::uninit(queue, &[n, c, oh, ow], DType::F32)?;
    if out.numel() > 0 {
        let count_include_pad = p.count_include_pad;
        let pool = Pool2d {
            kind,
            count_include_pad,
            x: x.operand(),
            out: out.operand(),
            geometry,
        };
        launch(queue, &pool, None)?;
    }
    Ok(out)
}

/// `out = act(conv2d(x, weight) + bias)`, or with `transposed` `act(conv_transpose2d(x,
/// weight) + bias)`; `x`, `weight`, `bias` and `out` contiguous.
pub(crate) struct Conv2d<'a> {
    pub x: Operand<'a>,
    /// `[o, c / groups, kh, kw]`, or transposed `[c, o / groups, kh, kw]`.
    pub weight: Operand<'a>,
    pub bias: Option<Operand<'a>>,
    pub act: Option<UnaryOp>,
    pub out: Operand<'a>,
    pub geometry: Conv2dGeometry,
    /// A transposed convolution: each output sums the inputs whose taps land on it.
    pub transposed: bool,
}

impl OpRequest for Conv2d<'_> {
    fn operands(&self) -> Vec<&Operand<'_>> {
        let mut ops = vec![&self.x, &self.weight];
        ops.extend(self.bias.as_ref());
        ops.push(&self.out);
        ops
    }

    fn cost(&self) -> OpCost {
        let g = &self.geometry;
        // Each tap multiplies one input by one weight for every channel of the group: an
        // output's per input channel, or a transposed input's per output channel.
        let (name, positions) = if self.transposed {
            (
                "conv_transpose2d",
                g.n * g.c * g.h * g.w * (g.o / g.groups.max(1)),
            )
        } else {
            ("conv2d", g.n * g.o * g.oh * g.ow * (g.c / g.groups.max(1)))
        };
        let flops = 2 * (positions * g.kh * g.kw) as u64;
        OpCost::simple(name, &self.operands(), flops)
    }

    backends!(conv2d);
}

/// Max or average pooling of a contiguous `x` into a contiguous `out`.
pub(crate) struct Pool2d<'a> {
    pub kind: PoolKind,
    /// Average pooling: divide by the window within the padded input, not the input alone.
    pub count_include_pad: bool,
    pub x: Operand<'a>,
    pub out: Operand<'a>,
    pub geometry: Conv2dGeometry,
}

impl OpRequest for Pool2d<'_> {
    fn cost(&self) -> OpCost {
        let name = if self.kind == PoolKind::Max {
            "max_pool2d"
        } else {
            "avg_pool2d"
        };
        let window = (self.geometry.kh * self.geometry.kw) as u64;
        OpCost::simple(
            name,
            &[&self.x, &self.out],
            self.out.layout.numel() as u64 * window,
        )
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        vec![&self.x, &self.out]
    }

    backends!(pool2d);
}

impl Pool2d<'_> {
    /// The kernels' `POOL`: 0 max, 1 average over the window within the padded input, 2
    /// average over the taps within the input.
    pub(crate) fn code(&self) -> u32 {
        match (self.kind, self.count_include_pad) {
            (PoolKind::Max, _) => 0,
            (PoolKind::Avg, true) => 1,
            (PoolKind::Avg, false) => 2,
        }
    }
}

/// The conv ops as methods, recorded on the device's default queue.
impl Tensor {
    /// 2-D convolution of this `[n, c, h, w]` input (see [`super::conv::conv2d`]).
    pub fn conv2d(&self, weight: &Tensor, params: Conv2dParams<'_>) -> Result<Tensor> {
        conv2d(&self.device().queue(), self, weight, params)
    }
    /// 2-D transposed convolution of this `[n, c, h, w]` input (see
    /// [`super::conv::conv_transpose2d`]).
    pub fn conv_transpose2d(
        &self,
        weight: &Tensor,
        params: ConvTranspose2dParams<'_>,
    ) -> Result<Tensor> {
        conv_transpose2d(&self.device().queue(), self, weight, params)
    }
    /// 2-D max or average pooling (see [`super::conv::pool2d`]).
    pub fn pool2d(&self, kind: PoolKind, params: Pool2dParams) -> Result<Tensor> {
        pool2d(&self.device().queue(), kind, self, params)
    }
    /// 2-D max or average pooling with ONNX's options (see [`super::conv::pool2d_with`]).
    pub fn pool2d_with(&self, kind: PoolKind, options: PoolOptions) -> Result<Tensor> {
        pool2d_with(&self.device().queue(), kind, self, options)
    }
}
