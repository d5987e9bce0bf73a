//! Convolution and pooling on wgpu: conv.wgsl, launched over the kernel taps in boxes where
//! the device ends long loops early.

use super::{Conv2d, Conv2dGeometry, Pool2d};
use crate::ops::common::webgpu::{builtin, check_binding, grid_1d, u32_of};
#[cfg(test)]
use crate::hal::webgpu::Builtin;
use crate::ops::common::split;
use crate::hal::webgpu::{Bind, GpuDevice, GpuQueue, WgslSource};
use crate::hal::OpContext;
use crate::Result;

static SOURCE: WgslSource = WgslSource { name: "conv.wgsl", text: include_str!("conv.wgsl"), preludes: crate::ops::common::webgpu::WITH_ACTIVATION };

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

/// Parameters of conv.wgsl up to the tap ranges.
fn params(g: &Conv2dGeometry, offsets: [usize; 4]) -> Result<Vec<u32>> {
    let sizes = [g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.oh, g.ow, g.stride[0], g.stride[1], g.padding[0], g.padding[1], g.dilation[0], g.dilation[1], g.groups];
    sizes.iter().chain(&offsets).map(|&v| u32_of("convolution size or offset", v)).collect()
}

/// conv.wgsl launches over the tap boxes `taps` (see [`split::conv_taps`]), accumulating in
/// the output: `params` up to the tap ranges, which this appends with the flags.
fn launch_taps(q: &GpuQueue, dev: &GpuDevice, pipeline: wgpu::ComputePipeline, mut params: Vec<u32>, taps: &[[[usize; 2]; 3]], binds: &[(u32, Bind<'_>)], grid: [u32; 3]) -> Result<()> {
    let at = params.len();
    params.resize(at + 7, 0);
    for (i, tap_box) in taps.iter().enumerate() {
        for (d, range) in tap_box.iter().enumerate() {
            params[at + 2 * d] = u32_of("kernel tap", range[0])?;
            params[at + 2 * d + 1] = u32_of("kernel tap", range[1])?;
        }
        params[at + 6] = split::flags(i, taps.len());
        q.launch(dev, pipeline.clone(), &params, binds, grid)?;
    }
    Ok(())
}

/// Every entry point (the module is the same for every override).
#[cfg(test)]
pub(super) fn builtins() -> Vec<Builtin> {
    ["conv2d_main", "pool2d_main"].into_iter().map(|e| builtin(&SOURCE, e, vec![])).collect()
}
