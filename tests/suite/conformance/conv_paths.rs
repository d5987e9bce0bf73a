//! The convolution shapes the CPU backend runs by a path of their own, on every backend
//! against an f64 reference with each fused epilogue: 1 x 1 convolutions read as the GEMM's
//! matrix (one and several images, groups, more output channels than positions, more
//! positions than one column tile; on webgpu, those whose channels and positions come in
//! fours as matmul.wgsl's product, over several of its tiles), strided depthwise ones, and an
//! im2col matrix past one block of columns.

use crate::common::{assert_close, name, per_backend, random, read, tensor};
use unicompute::ops::Conv2dParams;
use unicompute::{Device, UnaryOp};

/// `[n, c, h, w]` input, `[o, c / groups, kh, kw]` weight, stride, padding, groups.
type Case = ([usize; 4], [usize; 4], [usize; 2], [usize; 2], usize);

/// The cases, odd-sized: pointwise first (the last two in fours of channels and positions),
/// then 1 x 1 with a stride or padding, depthwise with strides, and a 3 x 3 whose im2col
/// matrix (576 x 7,569) takes two blocks.
const CASES: [Case; 13] = [
    ([1, 37, 5, 7], [41, 37, 1, 1], [1, 1], [0, 0], 1),
    ([3, 5, 4, 3], [7, 5, 1, 1], [1, 1], [0, 0], 1),
    ([1, 6, 5, 5], [9, 2, 1, 1], [1, 1], [0, 0], 3),
    ([1, 67, 3, 3], [131, 67, 1, 1], [1, 1], [0, 0], 1),
    ([1, 19, 37, 29], [23, 19, 1, 1], [1, 1], [0, 0], 1),
    ([2, 20, 4, 37], [37, 20, 1, 1], [1, 1], [0, 0], 1),
    ([1, 4, 1, 4], [1, 4, 1, 1], [1, 1], [0, 0], 1),
    ([1, 5, 9, 11], [7, 5, 1, 1], [2, 2], [0, 0], 1),
    ([1, 3, 4, 5], [2, 3, 1, 1], [1, 1], [1, 1], 1),
    ([1, 13, 15, 17], [13, 1, 3, 3], [2, 2], [1, 1], 13),
    ([2, 3, 8, 7], [6, 1, 5, 5], [2, 3], [2, 2], 3),
    ([1, 11, 2, 3], [11, 1, 3, 3], [2, 2], [1, 1], 11),
    ([1, 64, 87, 87], [3, 64, 3, 3], [1, 1], [1, 1], 1),
];

/// `act(conv2d(x, w) + bias)` in f64, `[n, o, oh, ow]` row-major.
fn reference(x: &[f32], w: &[f32], bias: &[f32], case: Case, act: Option<UnaryOp>) -> Vec<f64> {
    let ([n, c, h, wd], [o, cg, kh, kw], stride, pad, groups) = case;
    let oh = (h + 2 * pad[0] - kh) / stride[0] + 1;
    let ow = (wd + 2 * pad[1] - kw) / stride[1] + 1;
    let mut out = Vec::with_capacity(n * o * oh * ow);
    for (nb, oc, oy, ox) in (0..n).flat_map(|nb| {
        (0..o)
            .flat_map(move |oc| (0..oh).flat_map(move |oy| (0..ow).map(move |ox| (nb, oc, oy, ox))))
    }) {
        let first = oc / (o / groups) * cg;
        let mut acc = f64::from(bias[oc]);
        for ci in 0..cg {
            for (ky, kx) in (0..kh).flat_map(|ky| (0..kw).map(move |kx| (ky, kx))) {
                let iy = (oy * stride[0] + ky).checked_sub(pad[0]).filter(|&i| i < h);
                let ix = (ox * stride[1] + kx)
                    .checked_sub(pad[1])
                    .filter(|&i| i < wd);
                if let (Some(iy), Some(ix)) = (iy, ix) {
                    let xv = x[((nb * c + first + ci) * h + iy) * wd + ix];
                    let wv = w[((oc * cg + ci) * kh + ky) * kw + kx];
                    acc += f64::from(xv) * f64::from(wv);
                }
            }
        }
        out.push(act.map_or(acc, |f| f.eval(acc)));
    }
    out
}

fn conv2d_paths_match_reference(d: &Device) {
    let acts = [
        None,
        Some(UnaryOp::Relu),
        Some(UnaryOp::Relu6),
        Some(UnaryOp::Silu),
    ];
    for (i, case) in CASES.into_iter().enumerate() {
        let (xs, ws, stride, padding, groups) = case;
        let seed = 4_700 + 10 * i as u64;
        // Inputs of +-2 so that the sums cross relu6's upper bound.
        let x = random(seed, xs.iter().product(), -2.0, 2.0);
        let w = random(seed + 1, ws.iter().product(), -1.0, 1.0);
        let bias = random(seed + 2, ws[0], -3.0, 3.0);
        let (xt, wt, bt) = (
            tensor(d, &x, &xs),
            tensor(d, &w, &ws),
            tensor(d, &bias, &[ws[0]]),
        );
        for act in acts {
            let params = Conv2dParams {
                bias: Some(&bt),
                stride,
                padding,
                groups,
                act,
                ..Conv2dParams::default()
            };
            let got = read(&xt.conv2d(&wt, params).unwrap());
            let what = format!(
                "conv2d x {xs:?} w {ws:?} {act:?} on {} seed {seed}",
                name(d)
            );
            assert_close(
                &got,
                &reference(&x, &w, &bias, case, act),
                1e-4,
                1e-4,
                &what,
            );
        }
    }
}
per_backend!(conv2d_paths_match_reference);
