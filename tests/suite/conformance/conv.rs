//! Convolution and pooling against naive references, and long convolution windows.

use crate::common::{assert_close, name, per_backend, random, read, tensor};
use unicompute::ops::{Conv2dParams, ConvTranspose2dParams, Pool2dParams, PoolKind};
use unicompute::{Device, UnaryOp};

/// `[n, c, h, w]` input, `[o, c / groups, kh, kw]` weight, stride, padding, dilation, groups.
type ConvCase = (
    [usize; 4],
    [usize; 4],
    [usize; 2],
    [usize; 2],
    [usize; 2],
    usize,
);

fn conv2d_matches_naive_reference(d: &Device) {
    let cases: &[ConvCase] = &[
        ([1, 1, 1, 1], [1, 1, 1, 1], [1, 1], [0, 0], [1, 1], 1),
        ([2, 3, 7, 9], [5, 3, 3, 3], [1, 1], [1, 1], [1, 1], 1),
        ([1, 4, 11, 13], [6, 2, 3, 5], [2, 3], [1, 2], [2, 1], 2),
        ([1, 6, 8, 8], [6, 1, 3, 3], [1, 1], [1, 1], [1, 1], 6),
        // Depthwise (the CPU's direct path): two outputs per channel, strides, dilation.
        ([2, 5, 13, 11], [10, 1, 3, 5], [2, 1], [1, 2], [2, 1], 5),
        ([1, 7, 9, 9], [7, 1, 3, 3], [2, 2], [0, 0], [1, 1], 7),
        ([1, 3, 32, 31], [16, 3, 3, 3], [2, 2], [0, 0], [1, 1], 1),
        // Four output channels per group, two batches: blocks of four channels per invocation.
        ([2, 4, 9, 10], [8, 2, 3, 3], [1, 1], [1, 1], [1, 2], 2),
    ];
    for (c, &(xs, ws, stride, padding, dilation, groups)) in cases.iter().enumerate() {
        let seed = 1300 + 10 * c as u64;
        let x = random(seed, xs.iter().product(), -1.0, 1.0);
        let w = random(seed + 1, ws.iter().product(), -1.0, 1.0);
        let bias = random(seed + 2, ws[0], -1.0, 1.0);
        let (xt, wt, bt) = (
            tensor(d, &x, &xs),
            tensor(d, &w, &ws),
            tensor(d, &bias, &[ws[0]]),
        );
        let [n, ch, h, wd] = xs;
        let [o, cg, kh, kw] = ws;
        let oh = (h + 2 * padding[0] - dilation[0] * (kh - 1) - 1) / stride[0] + 1;
        let ow = (wd + 2 * padding[1] - dilation[1] * (kw - 1) - 1) / stride[1] + 1;
        for (with_bias, act) in [(false, None), (true, Some(UnaryOp::Relu))] {
            let params = Conv2dParams {
                bias: with_bias.then_some(&bt),
                stride,
                padding,
                dilation,
                groups,
                act,
            };
            let got = read(&xt.conv2d(&wt, params).unwrap());
            let mut want = Vec::with_capacity(n * o * oh * ow);
            for nb in 0..n {
                for oc in 0..o {
                    let g = oc / (o / groups);
                    for oy in 0..oh {
                        for ox in 0..ow {
                            let mut acc = if with_bias { f64::from(bias[oc]) } else { 0.0 };
                            for ci in 0..cg {
                                for ky in 0..kh {
                                    for kx in 0..kw {
                                        let iy = (oy * stride[0] + ky * dilation[0]) as isize
                                            - padding[0] as isize;
                                        let ix = (ox * stride[1] + kx * dilation[1]) as isize
                                            - padding[1] as isize;
                                        if iy < 0 || ix < 0 || iy >= h as isize || ix >= wd as isize
                                        {
                                            continue;
                                        }
                                        let xv = x[((nb * ch + g * cg + ci) * h + iy as usize)
                                            * wd
                                            + ix as usize];
                                        acc += f64::from(xv)
                                            * f64::from(w[((oc * cg + ci) * kh + ky) * kw + kx]);
                                    }
                                }
                            }
                            want.push(act.map_or(acc, |f: UnaryOp| f.eval(acc)));
                        }
                    }
                }
            }
            assert_close(
                &got,
                &want,
                1e-4,
                1e-5,
                &format!(
                    "conv2d x {xs:?} w {ws:?} case {c} bias {with_bias} on {} seed {seed}",
                    name(d)
                ),
            );
        }
    }
}
per_backend!(conv2d_matches_naive_reference);

/// A pooling case: `[n, c, h, w]`, window, stride, padding.
type PoolCase = ([usize; 4], [usize; 2], Option<[usize; 2]>, [usize; 2]);

fn pooling_matches_naive_reference(d: &Device) {
    // The last with 80,000 taps per output: past llvmpipe's loop limit.
    let cases: &[PoolCase] = &[
        ([1, 1, 1, 1], [1, 1], None, [0, 0]),
        ([2, 3, 8, 9], [2, 2], None, [0, 0]),
        ([1, 2, 7, 11], [3, 3], Some([1, 2]), [1, 1]),
        ([1, 1, 5, 5], [3, 2], Some([2, 1]), [1, 0]),
        ([1, 2, 3, 70_001], [2, 40_000], Some([1, 30_000]), [0, 0]),
    ];
    for (c, &(xs, kernel, stride, padding)) in cases.iter().enumerate() {
        let x = random(1400 + c as u64, xs.iter().product(), -3.0, 3.0);
        let xt = tensor(d, &x, &xs);
        let s = stride.unwrap_or(kernel);
        let [n, ch, h, w] = xs;
        let oh = (h + 2 * padding[0] - kernel[0]) / s[0] + 1;
        let ow = (w + 2 * padding[1] - kernel[1]) / s[1] + 1;
        for kind in [PoolKind::Max, PoolKind::Avg] {
            let got = read(
                &xt.pool2d(
                    kind,
                    Pool2dParams {
                        kernel,
                        stride,
                        padding,
                    },
                )
                .unwrap(),
            );
            let mut want = Vec::new();
            for plane in 0..n * ch {
                for oy in 0..oh {
                    for ox in 0..ow {
                        let mut taps = Vec::new();
                        for ky in 0..kernel[0] {
                            for kx in 0..kernel[1] {
                                let iy = (oy * s[0] + ky) as isize - padding[0] as isize;
                                let ix = (ox * s[1] + kx) as isize - padding[1] as isize;
                                if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < w {
                                    taps.push(f64::from(
                                        x[(plane * h + iy as usize) * w + ix as usize],
                                    ));
                                }
                            }
                        }
                        want.push(match kind {
                            PoolKind::Max => taps.iter().copied().fold(f64::NEG_INFINITY, f64::max),
                            PoolKind::Avg => {
                                taps.iter().sum::<f64>() / (kernel[0] * kernel[1]) as f64
                            }
                        });
                    }
                }
            }
            assert_close(
                &got,
                &want,
                1e-5,
                1e-6,
                &format!("{kind:?} pool {xs:?} case {c} on {}", name(d)),
            );
        }
    }
}
per_backend!(pooling_matches_naive_reference);

/// Direct convolution in f64 (no padding, stride and dilation 1, one group) plus bias, then
/// ReLU.
fn conv_reference(
    x: &[f32],
    w: &[f32],
    bias: &[f32],
    [_, c, h, wd]: [usize; 4],
    [o, _, kh, kw]: [usize; 4],
) -> Vec<f64> {
    let (oh, ow) = (h - kh + 1, wd - kw + 1);
    let mut out = Vec::with_capacity(o * oh * ow);
    for oc in 0..o {
        for oy in 0..oh {
            for ox in 0..ow {
                let mut acc = f64::from(bias[oc]);
                for ci in 0..c {
                    for ky in 0..kh {
                        for kx in 0..kw {
                            acc += f64::from(x[(ci * h + oy + ky) * wd + ox + kx])
                                * f64::from(w[((oc * c + ci) * kh + ky) * kw + kx]);
                        }
                    }
                }
                out.push(acc.max(0.0));
            }
        }
    }
    out
}

fn conv2d_with_70_000_taps_per_output(d: &Device) {
    // c * kh * kw past 65,535: many channels, then one long kernel row; and an output large
    // enough that the cpu's im2col goes in column tiles (27 x 158,404 > 2^22).
    let cases: &[([usize; 4], [usize; 4])] = &[
        ([1, 7_800, 5, 6], [2, 7_800, 3, 3]),
        ([1, 1, 2, 70_005], [2, 1, 1, 70_000]),
        ([1, 3, 400, 400], [2, 3, 3, 3]),
    ];
    for (c, &(xs, ws)) in cases.iter().enumerate() {
        let seed = 1740 + 10 * c as u64;
        let x = random(seed, xs.iter().product(), -1.0, 1.0);
        let w = random(seed + 1, ws.iter().product(), -1.0, 1.0);
        let bias = random(seed + 2, ws[0], -1.0, 1.0);
        let (xt, wt, bt) = (
            tensor(d, &x, &xs),
            tensor(d, &w, &ws),
            tensor(d, &bias, &[ws[0]]),
        );
        let params = Conv2dParams {
            bias: Some(&bt),
            act: Some(UnaryOp::Relu),
            ..Default::default()
        };
        let got = read(&xt.conv2d(&wt, params).unwrap());
        let what = format!(
            "conv2d x {xs:?} w {ws:?} bias relu on {} seed {seed}",
            name(d)
        );
        assert_close(
            &got,
            &conv_reference(&x, &w, &bias, xs, ws),
            1e-4,
            1e-3,
            &what,
        );
    }
}
per_backend!(conv2d_with_70_000_taps_per_output);

/// A transposed convolution case: `[n, c, h, w]` input, `[c, o / groups, kh, kw]` weight,
/// stride, padding `[top, left, bottom, right]`, output padding, dilation, groups.
type TransposedCase = (
    [usize; 4],
    [usize; 4],
    [usize; 2],
    [usize; 4],
    [usize; 2],
    [usize; 2],
    usize,
);

/// A transposed convolution in f64, written as the scatter that defines it: input `i` under
/// tap `k` lands on output `i * stride + k * dilation - pad`, then the bias and activation.
/// Gives the output and its `[oh, ow]`.
fn conv_transpose_reference(
    x: &[f32],
    w: &[f32],
    bias: Option<&[f32]>,
    act: Option<UnaryOp>,
    &(xs, ws, stride, pads, out_pad, dilation, groups): &TransposedCase,
) -> (Vec<f64>, [usize; 2]) {
    let ([n, c, h, wd], [_, og, kh, kw]) = (xs, ws);
    let (o, cg) = (og * groups, c / groups);
    let full =
        |i: usize, input: usize, k: usize| (input - 1) * stride[i] + (k - 1) * dilation[i] + 1;
    let oh = full(0, h, kh) + out_pad[0] - pads[0] - pads[2];
    let ow = full(1, wd, kw) + out_pad[1] - pads[1] - pads[3];
    let mut out = vec![0.0f64; n * o * oh * ow];
    for nb in 0..n {
        for ci in 0..c {
            let g = ci / cg;
            for j in 0..og {
                let oc = g * og + j;
                for (iy, ix, ky, kx) in (0..h).flat_map(|iy| {
                    (0..wd).flat_map(move |ix| {
                        (0..kh).flat_map(move |ky| (0..kw).map(move |kx| (iy, ix, ky, kx)))
                    })
                }) {
                    let y = (iy * stride[0] + ky * dilation[0]) as isize - pads[0] as isize;
                    let xo = (ix * stride[1] + kx * dilation[1]) as isize - pads[1] as isize;
                    if y < 0 || xo < 0 || y >= oh as isize || xo >= ow as isize {
                        continue;
                    }
                    let xv = f64::from(x[((nb * c + ci) * h + iy) * wd + ix]);
                    let wv = f64::from(w[((ci * og + j) * kh + ky) * kw + kx]);
                    out[((nb * o + oc) * oh + y as usize) * ow + xo as usize] += xv * wv;
                }
            }
        }
    }
    for (i, v) in out.iter_mut().enumerate() {
        let b = bias.map_or(0.0, |b| f64::from(b[i / (oh * ow) % o]));
        *v = act.map_or(*v + b, |f| f.eval(*v + b));
    }
    (out, [oh, ow])
}

/// The transposed convolutions checked against the scatter reference: odd shapes, strides,
/// padding, output padding, dilation and groups.
const TRANSPOSED_CASES: [TransposedCase; 7] = [
    (
        [1, 1, 1, 1],
        [1, 1, 1, 1],
        [1, 1],
        [0; 4],
        [0, 0],
        [1, 1],
        1,
    ),
    // Two images, stride 2 with output padding.
    (
        [2, 3, 5, 7],
        [3, 2, 3, 3],
        [2, 2],
        [1, 1, 1, 1],
        [1, 1],
        [1, 1],
        1,
    ),
    // Asymmetric padding, stride 3, dilation 2, two groups.
    (
        [1, 4, 7, 5],
        [4, 3, 2, 3],
        [3, 2],
        [0, 2, 1, 0],
        [2, 1],
        [2, 1],
        2,
    ),
    // 1-D as a height of 1.
    (
        [1, 1, 1, 13],
        [1, 5, 1, 4],
        [1, 3],
        [0, 1, 0, 2],
        [0, 0],
        [1, 1],
        1,
    ),
    // Depthwise.
    (
        [3, 6, 4, 4],
        [6, 1, 3, 3],
        [2, 2],
        [1, 1, 1, 1],
        [1, 1],
        [1, 1],
        6,
    ),
    // 300 output channels: more than a workgroup of outputs per position.
    (
        [1, 2, 3, 5],
        [2, 150, 2, 2],
        [2, 2],
        [0; 4],
        [0, 0],
        [1, 1],
        2,
    ),
    // Dilation 3 over rows, output padding past the stride.
    (
        [1, 3, 11, 2],
        [3, 2, 5, 1],
        [1, 2],
        [2, 0, 2, 0],
        [3, 1],
        [3, 1],
        1,
    ),
];

fn conv_transpose2d_matches_the_scatter_reference(d: &Device) {
    for (c, case) in TRANSPOSED_CASES.iter().enumerate() {
        let &(xs, ws, stride, padding, output_padding, dilation, groups) = case;
        let seed = 1800 + 10 * c as u64;
        let x = random(seed, xs.iter().product(), -1.0, 1.0);
        let w = random(seed + 1, ws.iter().product(), -1.0, 1.0);
        let o = ws[1] * groups;
        let bias = random(seed + 2, o, -1.0, 1.0);
        let (xt, wt, bt) = (
            tensor(d, &x, &xs),
            tensor(d, &w, &ws),
            tensor(d, &bias, &[o]),
        );
        for (with_bias, act) in [(false, None), (true, Some(UnaryOp::Relu))] {
            let params = ConvTranspose2dParams {
                bias: with_bias.then_some(&bt),
                stride,
                padding,
                output_padding,
                dilation,
                groups,
                act,
            };
            let got = xt.conv_transpose2d(&wt, params).unwrap();
            let b = with_bias.then_some(bias.as_slice());
            let (want, [oh, ow]) = conv_transpose_reference(&x, &w, b, act, case);
            let what = format!(
                "conv_transpose2d x {xs:?} w {ws:?} case {c} bias {with_bias} on {} seed {seed}",
                name(d)
            );
            assert_eq!(got.shape(), &[xs[0], o, oh, ow], "{what}");
            assert_close(&read(&got), &want, 1e-4, 1e-5, &what);
        }
    }
}
per_backend!(conv_transpose2d_matches_the_scatter_reference);

fn conv_transpose2d_with_70_000_taps_per_output(d: &Device) {
    // Past llvmpipe's loop limit: many input channels (7,800 x 9 taps), then one long kernel
    // column (7,000 rows).
    let cases: &[TransposedCase] = &[
        (
            [1, 7_800, 3, 2],
            [7_800, 2, 3, 3],
            [1, 1],
            [0; 4],
            [0, 0],
            [1, 1],
            1,
        ),
        (
            [1, 1, 2, 1],
            [1, 2, 7_000, 1],
            [1, 1],
            [1, 0, 2, 0],
            [0, 0],
            [1, 1],
            1,
        ),
    ];
    for (c, case) in cases.iter().enumerate() {
        let &(xs, ws, stride, padding, output_padding, dilation, groups) = case;
        let seed = 1900 + 10 * c as u64;
        let x = random(seed, xs.iter().product(), -1.0, 1.0);
        let w = random(seed + 1, ws.iter().product(), -1.0, 1.0);
        let bias = random(seed + 2, ws[1], -1.0, 1.0);
        let (xt, wt, bt) = (
            tensor(d, &x, &xs),
            tensor(d, &w, &ws),
            tensor(d, &bias, &[ws[1]]),
        );
        let params = ConvTranspose2dParams {
            bias: Some(&bt),
            stride,
            padding,
            output_padding,
            dilation,
            groups,
            act: Some(UnaryOp::Relu),
        };
        let got = read(&xt.conv_transpose2d(&wt, params).unwrap());
        let want = conv_transpose_reference(&x, &w, Some(&bias), Some(UnaryOp::Relu), case).0;
        let what = format!(
            "conv_transpose2d x {xs:?} w {ws:?} on {} seed {seed}",
            name(d)
        );
        assert_close(&got, &want, 1e-4, 1e-3, &what);
    }
}
per_backend!(conv_transpose2d_with_70_000_taps_per_output);
