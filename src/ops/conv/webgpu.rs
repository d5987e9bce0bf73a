//! Convolution and pooling on wgpu: conv.wgsl, launched over the kernel taps in boxes where
//! the device ends long loops early; pointwise convolutions as matmul.wgsl's product.

use super::{Conv2d, Conv2dGeometry, Pool2d};
use crate::base::layout::Layout;
#[cfg(test)]
use crate::hal::webgpu::Specialisation;
use crate::hal::webgpu::{Bind, GpuBatch, GpuDevice, Pipeline, WgslSource};
use crate::hal::OpContext;
use crate::ops::common::split;
use crate::ops::common::webgpu::{
    check_binding, grid_1d, specialise, u32_of, wgsl_params, ACTIVATION, COMMON,
};
use crate::ops::matmul::{with_row_bias, Matmul};
use crate::ops::Operand;
use crate::{DType, Result};

static SOURCE: WgslSource = WgslSource {
    name: "conv.wgsl",
    text: crate::ops::common::wgsl_file!("conv/conv.wgsl"),
    preludes: &[COMMON, ACTIVATION, ConvWords::DECL],
};

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
        /// Padding after the last row and column (pooling, and a transposed convolution's crop;
        /// a convolution's is `pad`).
        pad_end_y: u32,
        pad_end_x: u32,
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

/// 2-D convolution (conv2d_main) or transposed convolution (conv_transpose2d_main), with
/// optional bias and activation.
pub(super) fn conv2d(
    op: &Conv2d<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    cx: &OpContext<'_>,
) -> Result<()> {
    let (x, weight, bias, out, g) = (op.x, op.weight, op.bias, op.out, &op.geometry);
    for o in [&x, &weight, &out] {
        check_binding(dev, o)?;
    }
    if pointwise(op, q, dev, cx)? {
        return Ok(());
    }
    let offsets = [
        x.layout.offset,
        weight.layout.offset,
        bias.as_ref().map_or(0, |b| b.layout.offset),
        out.layout.offset,
    ];
    let mut constants = vec![
        ("HAS_BIAS", u32::from(bias.is_some())),
        ("ACT", op.act.map_or(0, |f| f.code())),
    ];
    let (entry, invocations) = if op.transposed {
        // The kernel works out `o + pad` and `k * dilation` in u32: both stay within the
        // full output, padding included.
        for (extent, axis) in [(g.oh, 0), (g.ow, 1)] {
            let full = extent + g.padding[axis] + g.pad_end[axis];
            u32_of("transposed convolution output with its padding", full)?;
        }
        ("conv_transpose2d_main", out.layout.numel())
    } else {
        // Four output channels per invocation where each group's come in fours; invocations:
        // blocks of `ocb` channels by rows by blocks of four columns.
        let ocb = if (g.o / g.groups) % 4 == 0 { 4 } else { 1 };
        constants.push(("OCB", ocb as u32));
        ("conv2d_main", g.n * (g.o / ocb) * g.oh * g.ow.div_ceil(4))
    };
    let pipeline = dev.pipeline(specialise(&SOURCE, entry, constants));
    let bias_bind = bias.as_ref().map_or(Bind::SpareRead, |b| Bind::Mem(b.buf));
    let binds = [
        (1, Bind::Mem(x.buf)),
        (2, Bind::Mem(weight.buf)),
        (3, bias_bind),
        (4, Bind::Mem(out.buf)),
    ];
    let grid = grid_1d(dev, invocations.div_ceil(256) as u64)?;
    let taps = split::conv_taps(dev.max_loop_iterations(), g.c / g.groups, g.kh, g.kw);
    launch_taps(q, dev, pipeline, params(g, offsets)?, &taps, &binds, grid)
}

/// A pointwise convolution (1 x 1, unit strides, no padding, one group) as matmul.wgsl's
/// product of the weight `[o, c]` by each image's input `[c, h * w]`, the bias one per row:
/// its vec4 loads read four input positions, or four weights, at once where conv.wgsl reads
/// one (MobileNetV2's 96 x 16 layer at 112 x 112: 26.7 against 66.6 ms on lavapipe).
/// `false`, with nothing recorded, where it does not apply: other convolutions, and rows not
/// in whole vec4s (with scalar loads the product is no faster: 1280 x 320 at 7 x 7, 44.8
/// against 34.8 ms).
fn pointwise(op: &Conv2d<'_>, q: &GpuBatch, dev: &GpuDevice, cx: &OpContext<'_>) -> Result<bool> {
    let g = &op.geometry;
    let (plane, k) = (g.h * g.w, g.c);
    let unit = g.kh == 1 && g.kw == 1 && g.stride == [1, 1] && g.groups == 1;
    let unpadded = g.padding == [0, 0] && g.pad_end == [0, 0];
    let vec4 = plane % 4 == 0 && k % 4 == 0;
    let operands = [&op.x, &op.weight, &op.out];
    let dense = operands.iter().all(|o| o.layout.is_contiguous());
    let aligned = [op.x.layout.offset, op.weight.layout.offset]
        .iter()
        .all(|o| o % 4 == 0);
    if op.transposed || !(unit && unpadded && vec4 && dense && aligned) {
        return Ok(false);
    }
    let layout = |shape: [usize; 3], strides: [usize; 3], offset| Layout {
        shape: shape.to_vec(),
        strides: strides.to_vec(),
        offset,
    };
    let a = layout([g.n, g.o, k], [0, k, 1], op.weight.layout.offset);
    let b = layout([g.n, k, plane], [k * plane, plane, 1], op.x.layout.offset);
    let c = layout(
        [g.n, g.o, plane],
        [g.o * plane, plane, 1],
        op.out.layout.offset,
    );
    let product = Matmul {
        a: Operand {
            buf: op.weight.buf,
            layout: &a,
        },
        b: Operand {
            buf: op.x.buf,
            layout: &b,
        },
        bias: op.bias,
        act: op.act,
        out: Operand {
            buf: op.out.buf,
            layout: &c,
        },
        m: g.o,
        n: plane,
        k,
        variant: None,
        dtype: DType::F32,
    };
    with_row_bias(&product, q, dev, cx)
}

/// Max or average pooling (pool2d_main).
pub(super) fn pool2d(
    op: &Pool2d<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let (x, out, g) = (op.x, op.out, &op.geometry);
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    let pipeline = dev.pipeline(specialise(
        &SOURCE,
        "pool2d_main",
        vec![("POOL", op.code())],
    ));
    let grid = grid_1d(dev, out.layout.numel().div_ceil(256) as u64)?;
    let params = params(g, [x.layout.offset, 0, 0, out.layout.offset])?;
    let taps = split::conv_taps(dev.max_loop_iterations(), 1, g.kh, g.kw);
    launch_taps(
        q,
        dev,
        pipeline,
        params,
        &taps,
        &[(1, Bind::Mem(x.buf)), (4, Bind::Mem(out.buf))],
        grid,
    )
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
        pad_end_y: v(g.pad_end[0])?,
        pad_end_x: v(g.pad_end[1])?,
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
fn launch_taps(
    q: &GpuBatch,
    dev: &GpuDevice,
    pipeline: Pipeline,
    mut params: ConvWords,
    taps: &[[[usize; 2]; 3]],
    binds: &[(u32, Bind<'_>)],
    grid: [u32; 3],
) -> Result<()> {
    let range = |[begin, end]: [usize; 2]| {
        Ok::<_, crate::Error>([u32_of("kernel tap", begin)?, u32_of("kernel tap", end)?])
    };
    for (i, &[ci, ky, kx]) in taps.iter().enumerate() {
        (params.ci, params.ky, params.kx) = (range(ci)?, range(ky)?, range(kx)?);
        params.flags = split::flags(i, taps.len());
        q.launch(dev, pipeline.clone(), params.words(), binds, grid)?;
    }
    Ok(())
}

/// Every entry point (the module is the same for every override).
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    ["conv2d_main", "conv_transpose2d_main", "pool2d_main"]
        .into_iter()
        .map(|e| specialise(&SOURCE, e, vec![]))
        .collect()
}

/// conv.wgsl's convolution (one and four output channels an invocation, groups, bias and
/// activation) and pooling (max and average) run by the CPU's WGSL executor, with the
/// parameter words this file writes, give the CPU kernels' results.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod on_the_cpu_executor {
    use super::*;
    use crate::ops::common::webgpu::{bound, run_on_cpu, with_overrides};
    use crate::ops::conv::{Conv2dParams, Pool2dParams, PoolKind};
    use crate::ops::UnaryOp;
    use crate::{BackendChoice, BackendKind, Buffer, Device, Tensor};

    fn values(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| ((i * 7919 + seed * 104_729) % 1999) as f32 / 1000.0 - 1.0)
            .collect()
    }

    fn assert_near(got: &[f32], want: &[f32], what: &str) {
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
                "{what}: element {i} is {g}, the CPU's {w}"
            );
        }
    }

    #[test]
    fn convolutions_and_pooling_match_the_cpu_kernels() {
        let d = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
        let (c, h, w) = (4usize, 7usize, 9usize);
        let xv = values(c * h * w, 1);
        let x = Tensor::from_slice(&d, &xv, &[1, c, h, w]).unwrap();
        for (o, groups) in [(8usize, 1usize), (6, 2)] {
            conv2d_matches(&d, (&x, &xv), [c, h, w], o, groups);
        }
        conv_transpose2d_matches(&d, (&x, &xv), [c, h, w]);
        for kind in [PoolKind::Max, PoolKind::Avg] {
            pool2d_matches(&d, (&x, &xv), [c, h, w], kind);
        }
    }

    /// conv2d.wgsl on the CPU's executor against the CPU kernel: `o` output channels in
    /// `groups` groups, 3x3, padding 1, with a bias and ReLU.
    fn conv2d_matches(
        d: &Device,
        (x, xv): (&Tensor, &[f32]),
        [c, h, w]: [usize; 3],
        o: usize,
        groups: usize,
    ) {
        let (wv, bv) = (values(o * (c / groups) * 9, 2), values(o, 3));
        let (weight, bias) = (
            Tensor::from_slice(d, &wv, &[o, c / groups, 3, 3]).unwrap(),
            Tensor::from_slice(d, &bv, &[o]).unwrap(),
        );
        let p = Conv2dParams {
            bias: Some(&bias),
            stride: [1, 1],
            padding: [1, 1],
            dilation: [1, 1],
            groups,
            act: Some(UnaryOp::Relu),
        };
        let want = x
            .conv2d(&weight, p)
            .unwrap()
            .to_vec_blocking::<f32>()
            .unwrap();
        let g = Conv2dGeometry {
            n: 1,
            c,
            h,
            w,
            o,
            kh: 3,
            kw: 3,
            oh: h,
            ow: w,
            stride: [1, 1],
            padding: [1, 1],
            pad_end: [1, 1],
            dilation: [1, 1],
            groups,
        };
        let mut words = params(&g, [0; 4]).unwrap();
        (words.ci, words.ky, words.kx, words.flags) =
            ([0, (c / groups) as u32], [0, 3], [0, 3], split::flags(0, 1));
        let ocb = if (o / groups) % 4 == 0 { 4 } else { 1 };
        let source = with_overrides(
            specialise(&SOURCE, "conv2d_main", vec![]).full_source(),
            &[
                ("HAS_BIAS", 1),
                ("ACT", UnaryOp::Relu.code()),
                ("OCB", ocb as u32),
            ],
        );
        let (xb, wb, bb) = (
            Buffer::from_slice(d, xv).unwrap(),
            Buffer::from_slice(d, &wv).unwrap(),
            Buffer::from_slice(d, &bv).unwrap(),
        );
        let out = Buffer::from_slice(d, &vec![-1.1e36f32; want.len()]).unwrap();
        let groups_launched = ((o / ocb) * h * w.div_ceil(4)).div_ceil(256) as u32;
        run_on_cpu(
            d,
            &source,
            "conv2d_main",
            words.words(),
            &[bound(&xb), bound(&wb), bound(&bb), bound(&out)],
            [groups_launched, 1, 1],
        )
        .unwrap();
        assert_near(
            &out.read_blocking().unwrap(),
            &want,
            &format!("conv2d to {o} channels in {groups} groups"),
        );
    }

    /// conv_transpose2d_main on the CPU's executor against the CPU kernel: 6 output channels
    /// in 2 groups, 3x2, stride [2, 3], dilation [1, 2], padding [1, 0, 2, 1], output padding
    /// [1, 2], with a bias and ReLU.
    fn conv_transpose2d_matches(d: &Device, (x, xv): (&Tensor, &[f32]), [c, h, w]: [usize; 3]) {
        let (o, groups, kh, kw) = (6usize, 2usize, 3usize, 2usize);
        let (wv, bv) = (values(c * (o / groups) * kh * kw, 4), values(o, 5));
        let (weight, bias) = (
            Tensor::from_slice(d, &wv, &[c, o / groups, kh, kw]).unwrap(),
            Tensor::from_slice(d, &bv, &[o]).unwrap(),
        );
        let p = crate::ops::ConvTranspose2dParams {
            bias: Some(&bias),
            stride: [2, 3],
            padding: [1, 0, 2, 1],
            output_padding: [1, 2],
            dilation: [1, 2],
            groups,
            act: Some(UnaryOp::Relu),
        };
        let y = x.conv_transpose2d(&weight, p).unwrap();
        let (oh, ow) = (y.shape()[2], y.shape()[3]);
        assert_eq!([oh, ow], [(h - 1) * 2 + 3 + 1 - 3, (w - 1) * 3 + 3 + 2 - 1]);
        let g = Conv2dGeometry {
            n: 1,
            c,
            h,
            w,
            o,
            kh,
            kw,
            oh,
            ow,
            stride: p.stride,
            padding: [1, 0],
            pad_end: [2, 1],
            dilation: p.dilation,
            groups,
        };
        let mut words = params(&g, [0; 4]).unwrap();
        (words.ci, words.ky, words.kx, words.flags) =
            ([0, (c / groups) as u32], [0, 3], [0, 2], split::flags(0, 1));
        let source = with_overrides(
            specialise(&SOURCE, "conv_transpose2d_main", vec![]).full_source(),
            &[("HAS_BIAS", 1), ("ACT", UnaryOp::Relu.code())],
        );
        let (xb, wb, bb) = (
            Buffer::from_slice(d, xv).unwrap(),
            Buffer::from_slice(d, &wv).unwrap(),
            Buffer::from_slice(d, &bv).unwrap(),
        );
        let want = y.to_vec_blocking::<f32>().unwrap();
        let out = Buffer::from_slice(d, &vec![-1.1e36f32; want.len()]).unwrap();
        run_on_cpu(
            d,
            &source,
            "conv_transpose2d_main",
            words.words(),
            &[bound(&xb), bound(&wb), bound(&bb), bound(&out)],
            [(want.len() as u32).div_ceil(256), 1, 1],
        )
        .unwrap();
        assert_near(&out.read_blocking().unwrap(), &want, "conv_transpose2d");
    }

    /// pool2d.wgsl on the CPU's executor against the CPU kernel: `kind`, 2x2, stride 2.
    fn pool2d_matches(
        d: &Device,
        (x, xv): (&Tensor, &[f32]),
        [c, h, w]: [usize; 3],
        kind: PoolKind,
    ) {
        let want = x
            .pool2d(
                kind,
                Pool2dParams {
                    kernel: [2, 2],
                    stride: None,
                    padding: [0, 0],
                },
            )
            .unwrap()
            .to_vec_blocking::<f32>()
            .unwrap();
        let g = Conv2dGeometry {
            n: 1,
            c,
            h,
            w,
            o: c,
            kh: 2,
            kw: 2,
            oh: h / 2,
            ow: w / 2,
            stride: [2, 2],
            padding: [0, 0],
            pad_end: [0, 0],
            dilation: [1, 1],
            groups: c,
        };
        let mut words = params(&g, [0; 4]).unwrap();
        (words.ci, words.ky, words.kx, words.flags) = ([0, 1], [0, 2], [0, 2], split::flags(0, 1));
        let source = with_overrides(
            specialise(&SOURCE, "pool2d_main", vec![]).full_source(),
            &[("POOL", kind as u32)],
        );
        let (xb, out) = (
            Buffer::from_slice(d, xv).unwrap(),
            Buffer::from_slice(d, &vec![-1.1e36f32; want.len()]).unwrap(),
        );
        run_on_cpu(
            d,
            &source,
            "pool2d_main",
            words.words(),
            &[bound(&xb), bound(&out)],
            [(want.len() as u32).div_ceil(256), 1, 1],
        )
        .unwrap();
        assert_near(
            &out.read_blocking().unwrap(),
            &want,
            &format!("{kind:?} pooling"),
        );
    }
}
