//! Convolution and pooling on wgpu: conv.wgsl, launched over the kernel taps in boxes where
//! the device ends long loops early.

use super::{Conv2d, Conv2dGeometry, Pool2d};
use crate::ops::common::webgpu::{builtin, check_binding, grid_1d, u32_of, wgsl_params, ACTIVATION, COMMON};
#[cfg(test)]
use crate::hal::webgpu::Builtin;
use crate::ops::common::split;
use crate::hal::webgpu::{Bind, GpuDevice, GpuQueue, WgslSource};
use crate::hal::OpContext;
use crate::Result;

static SOURCE: WgslSource = WgslSource { name: "conv.wgsl", text: crate::ops::common::wgsl_file!("conv/conv.wgsl"), preludes: &[COMMON, ACTIVATION, ConvWords::DECL] };

wgsl_params! {
    /// conv.wgsl's parameters.
    struct ConvWords: P {
        /// Input [n, c, h, w], output channels, kernel [kh, kw], output [oh, ow].
        n: u32,
        c: u32,
        h: u32,
        w: u32,
        o: u32,
        kh: u32,
        kw: u32,
        oh: u32,
        ow: u32,
        stride_y: u32,
        stride_x: u32,
        pad_y: u32,
        pad_x: u32,
        dilation_y: u32,
        dilation_x: u32,
        groups: u32,
        /// Offsets of the input, weight, bias (0 without) and output.
        x: u32,
        weight: u32,
        bias: u32,
        out: u32,
        /// The taps of one launch: ranges of input channels (within the group), ky and kx.
        ci: [u32; 2],
        ky: [u32; 2],
        kx: [u32; 2],
        /// Bit 0: continue from the partial sums in `out`; bit 1: finish.
        flags: u32,
    }
}

/// 2-D convolution (conv2d_main), with optional bias and activation.
pub(super) fn conv2d(op: &Conv2d<'_>, q: &GpuQueue, dev: &GpuDevice, _: &OpContext<'_>) -> Result<()> {
    let (x, weight, bias, out, g) = (op.x, op.weight, op.bias, op.out, &op.geometry);
    for o in [&x, &weight, &out] {
        check_binding(dev, o)?;
    }
    let offsets = [x.layout.offset, weight.layout.offset, bias.as_ref().map_or(0, |b| b.layout.offset), out.layout.offset];
    // Four output channels per invocation where each group's come in fours.
    let ocb = if (g.o / g.groups) % 4 == 0 { 4 } else { 1 };
    let constants = vec![("HAS_BIAS", u32::from(bias.is_some())), ("ACT", op.act.map_or(0, |f| f.code())), ("OCB", ocb as u32)];
    let pipeline = dev.pipeline(builtin(&SOURCE, "conv2d_main", constants));
    let bias_bind = bias.as_ref().map_or(Bind::SpareRead, |b| Bind::Mem(b.buf));
    let binds = [(1, Bind::Mem(x.buf)), (2, Bind::Mem(weight.buf)), (3, bias_bind), (4, Bind::Mem(out.buf))];
    // Invocations: blocks of `ocb` channels by rows by blocks of four columns.
    let invocations = g.n * (g.o / ocb) * g.oh * g.ow.div_ceil(4);
    let grid = grid_1d(dev, invocations.div_ceil(256) as u64)?;
    let taps = split::conv_taps(dev.max_loop_iterations, g.c / g.groups, g.kh, g.kw);
    launch_taps(q, dev, pipeline, params(g, offsets)?, &taps, &binds, grid)
}

/// Max or average pooling (pool2d_main).
pub(super) fn pool2d(op: &Pool2d<'_>, q: &GpuQueue, dev: &GpuDevice, _: &OpContext<'_>) -> Result<()> {
    let (x, out, g) = (op.x, op.out, &op.geometry);
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    let pipeline = dev.pipeline(builtin(&SOURCE, "pool2d_main", vec![("POOL", op.kind as u32)]));
    let grid = grid_1d(dev, out.layout.numel().div_ceil(256) as u64)?;
    let params = params(g, [x.layout.offset, 0, 0, out.layout.offset])?;
    let taps = split::conv_taps(dev.max_loop_iterations, 1, g.kh, g.kw);
    launch_taps(q, dev, pipeline, params, &taps, &[(1, Bind::Mem(x.buf)), (4, Bind::Mem(out.buf))], grid)
}

/// conv.wgsl's parameters without the taps, for the input, weight, bias and output `offsets`.
fn params(g: &Conv2dGeometry, offsets: [usize; 4]) -> Result<ConvWords> {
    let v = |v: usize| u32_of("convolution size or offset", v);
    Ok(ConvWords {
        n: v(g.n)?,
        c: v(g.c)?,
        h: v(g.h)?,
        w: v(g.w)?,
        o: v(g.o)?,
        kh: v(g.kh)?,
        kw: v(g.kw)?,
        oh: v(g.oh)?,
        ow: v(g.ow)?,
        stride_y: v(g.stride[0])?,
        stride_x: v(g.stride[1])?,
        pad_y: v(g.padding[0])?,
        pad_x: v(g.padding[1])?,
        dilation_y: v(g.dilation[0])?,
        dilation_x: v(g.dilation[1])?,
        groups: v(g.groups)?,
        x: v(offsets[0])?,
        weight: v(offsets[1])?,
        bias: v(offsets[2])?,
        out: v(offsets[3])?,
        ci: [0; 2],
        ky: [0; 2],
        kx: [0; 2],
        flags: 0,
    })
}

/// conv.wgsl launches over the tap boxes `taps` (see [`split::conv_taps`]), accumulating in
/// the output.
fn launch_taps(q: &GpuQueue, dev: &GpuDevice, pipeline: wgpu::ComputePipeline, mut params: ConvWords, taps: &[[[usize; 2]; 3]], binds: &[(u32, Bind<'_>)], grid: [u32; 3]) -> Result<()> {
    let range = |[begin, end]: [usize; 2]| Ok::<_, crate::Error>([u32_of("kernel tap", begin)?, u32_of("kernel tap", end)?]);
    for (i, &[ci, ky, kx]) in taps.iter().enumerate() {
        (params.ci, params.ky, params.kx) = (range(ci)?, range(ky)?, range(kx)?);
        params.flags = split::flags(i, taps.len());
        q.launch(dev, pipeline.clone(), params.words(), binds, grid)?;
    }
    Ok(())
}

/// Every entry point (the module is the same for every override).
#[cfg(test)]
pub(super) fn builtins() -> Vec<Builtin> {
    ["conv2d_main", "pool2d_main"].into_iter().map(|e| builtin(&SOURCE, e, vec![])).collect()
}
