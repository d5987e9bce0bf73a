//! Convolutions on every device against an f64 reference with a fused bias and activation:
//! depthwise ones, which the CPU backend runs on input planes split by stride phase (strides 1
//! and 2 and mixed, padding, dilation, channel multipliers, widths 1 to 51, rows of 24 or
//! more computed in place, planes several to a task, a geometry too sparse to split), ones
//! of few input channels (its im2col, strided columns gathered in pairs), ones large
//! enough that each task gathers its own tile of im2col columns, dense ones computed
//! directly over split planes, and ones of a few output positions (each position's patch).

use unicompute::ops::Conv2dParams;
use unicompute::{Device, UnaryOp};

use crate::common::{assert_close, name, per_backend, random, read, tensor};

/// One convolution: `[n, c, h, w]`, `[o, kh, kw]`, groups, stride, padding, dilation.
struct Case {
    x: [usize; 4],
    k: [usize; 3],
    groups: usize,
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
}

impl Case {
    fn out(&self, a: usize) -> usize {
        let span = (self.k[1 + a] - 1) * self.dilation[a] + 1;
        (self.x[2 + a] + 2 * self.padding[a] - span) / self.stride[a] + 1
    }
}

/// `act(conv2d(x, w) + bias)` in f64, output by output.
fn reference(c: &Case, x: &[f32], w: &[f32], bias: &[f32], act: Option<UnaryOp>) -> Vec<f64> {
    let ([n, ci, h, wd], [o, kh, kw]) = (c.x, c.k);
    let (oh, ow, cg, og) = (c.out(0), c.out(1), ci / c.groups, o / c.groups);
    let mut out = vec![0.0; n * o * oh * ow];
    for (i, v) in out.iter_mut().enumerate() {
        let (nb, oc, oy, ox) = (i / (o * oh * ow), i / (oh * ow) % o, i / ow % oh, i % ow);
        let mut acc = f64::from(bias[oc]);
        for j in 0..cg * kh * kw {
            let (cj, ky, kx) = (j / (kh * kw), j / kw % kh, j % kw);
            let iy = (oy * c.stride[0] + ky * c.dilation[0]).checked_sub(c.padding[0]);
            let ix = (ox * c.stride[1] + kx * c.dilation[1]).checked_sub(c.padding[1]);
            if let (Some(iy), Some(ix)) = (iy.filter(|&v| v < h), ix.filter(|&v| v < wd)) {
                let plane = nb * ci + oc / og * cg + cj;
                acc +=
                    f64::from(x[(plane * h + iy) * wd + ix]) * f64::from(w[oc * cg * kh * kw + j]);
            }
        }
        *v = act.map_or(acc, |a| a.eval(acc));
    }
    out
}

/// Runs `case` with `act` on `d` and compares it with the reference.
fn check(d: &Device, c: &Case, act: Option<UnaryOp>, seed: u64) {
    let ([n, ci, h, wd], [o, kh, kw]) = (c.x, c.k);
    let x = random(seed, n * ci * h * wd, -2.0, 2.0);
    let w = random(seed + 1, o * ci / c.groups * kh * kw, -1.0, 1.0);
    let bias = random(seed + 2, o, -1.0, 1.0);
    let (tx, tw) = (
        tensor(d, &x, &c.x),
        tensor(d, &w, &[o, ci / c.groups, kh, kw]),
    );
    let tb = tensor(d, &bias, &[o]);
    let params = Conv2dParams {
        bias: Some(&tb),
        stride: c.stride,
        padding: c.padding,
        dilation: c.dilation,
        groups: c.groups,
        act,
    };
    let got = tx.conv2d(&tw, params).unwrap();
    let what = format!(
        "x {:?} k {:?} groups {} stride {:?} padding {:?} dilation {:?} act {:?} on {}",
        c.x,
        c.k,
        c.groups,
        c.stride,
        c.padding,
        c.dilation,
        act.map(|a| a.name()),
        name(d)
    );
    assert_eq!(got.shape(), &[n, o, c.out(0), c.out(1)][..], "{what}");
    // f32 sums of k terms round by up to about k ulps of their terms: past 256 terms, the
    // absolute tolerance grows with k.
    let k = ci / c.groups * kh * kw;
    let atol = 1e-5 * (k as f64 / 256.0).max(1.0);
    assert_close(
        &read(&got),
        &reference(c, &x, &w, &bias, act),
        1e-4,
        atol,
        &what,
    );
}

/// A case of `x`, kernel `k`, `groups`, then stride, padding and dilation.
fn case(x: [usize; 4], k: [usize; 3], groups: usize, geometry: [[usize; 2]; 3]) -> Case {
    let [stride, padding, dilation] = geometry;
    Case {
        x,
        k,
        groups,
        stride,
        padding,
        dilation,
    }
}

fn depthwise_matches_the_reference(d: &Device) {
    let cases = [
        case([1, 3, 13, 17], [3, 3, 3], 3, [[1, 1], [1, 1], [1, 1]]),
        case([2, 5, 7, 1], [5, 3, 3], 5, [[1, 1], [1, 1], [1, 1]]),
        case([1, 4, 17, 13], [8, 3, 3], 4, [[2, 2], [1, 1], [1, 1]]),
        case([1, 3, 7, 7], [3, 5, 5], 3, [[2, 2], [2, 2], [1, 1]]),
        case([1, 2, 13, 13], [6, 3, 3], 2, [[1, 1], [2, 2], [2, 2]]),
        case([1, 3, 16, 17], [3, 3, 5], 3, [[1, 2], [0, 2], [1, 1]]),
        case([1, 5, 6, 7], [5, 2, 2], 5, [[2, 2], [0, 0], [1, 1]]),
        case([1, 37, 29, 31], [37, 3, 3], 37, [[2, 2], [1, 1], [1, 1]]),
        case([3, 7, 4, 3], [7, 1, 1], 7, [[1, 1], [0, 0], [1, 1]]),
        // Rows of 24 or more, computed in place four at a time: rows left over (10 = 4 + 4
        // + 2, 7, 1), whole blocks only (32), a row's last block cut (24, 41, 30, and 49
        // under a dilated kernel, whose reads reach furthest into the slack).
        case([1, 3, 10, 24], [3, 3, 3], 3, [[1, 1], [1, 1], [1, 1]]),
        case([1, 2, 7, 41], [4, 3, 3], 2, [[1, 1], [1, 1], [1, 1]]),
        case([1, 3, 13, 64], [3, 3, 3], 3, [[2, 2], [1, 1], [1, 1]]),
        case([2, 2, 1, 51], [2, 1, 3], 2, [[1, 1], [0, 1], [2, 2]]),
        case([1, 3, 9, 59], [3, 5, 5], 3, [[1, 2], [2, 2], [1, 1]]),
        // Too sparse to split by stride phase: the row-by-row path.
        case(
            [1, 2, 2, 2],
            [2, 2, 2],
            2,
            [[1000, 1000], [1000, 1000], [1000, 1000]],
        ),
    ];
    for (i, c) in cases.iter().enumerate() {
        check(d, c, Some(UnaryOp::Relu6), 7_000 + 10 * i as u64);
    }
}
per_backend!(depthwise_matches_the_reference);

/// Every activation that models fuse into a convolution, and none.
const ACTS: [Option<UnaryOp>; 8] = [
    None,
    Some(UnaryOp::Relu),
    Some(UnaryOp::Relu6),
    Some(UnaryOp::Sigmoid),
    Some(UnaryOp::Silu),
    Some(UnaryOp::Tanh),
    Some(UnaryOp::Hardswish),
    Some(UnaryOp::Softplus),
];

fn depthwise_fuses_each_activation(d: &Device) {
    // Rows of 13 (computed flat) and of 37 (in place).
    let cases = [
        case([1, 3, 9, 13], [3, 3, 3], 3, [[2, 1], [1, 1], [1, 1]]),
        case([1, 3, 6, 37], [3, 3, 3], 3, [[1, 1], [1, 1], [1, 1]]),
    ];
    for (j, c) in cases.iter().enumerate() {
        for (i, act) in ACTS.into_iter().enumerate() {
            check(d, c, act, 7_200 + 100 * j as u64 + 10 * i as u64);
        }
    }
}
per_backend!(depthwise_fuses_each_activation);

fn few_input_channels_match_the_reference(d: &Device) {
    let cases = [
        case([1, 3, 23, 17], [16, 3, 3], 1, [[2, 2], [1, 1], [1, 1]]),
        case([1, 3, 13, 13], [7, 3, 3], 1, [[1, 1], [1, 1], [1, 1]]),
        case([2, 16, 9, 11], [13, 3, 3], 1, [[1, 1], [1, 1], [1, 1]]),
        case([1, 16, 17, 7], [32, 3, 3], 1, [[2, 2], [1, 1], [1, 1]]),
        case([1, 8, 11, 1], [9, 3, 3], 1, [[1, 1], [1, 1], [2, 1]]),
        case([1, 6, 13, 13], [10, 3, 3], 2, [[1, 1], [1, 1], [1, 1]]),
    ];
    for (i, c) in cases.iter().enumerate() {
        check(d, c, ACTS[1 + i % (ACTS.len() - 1)], 7_400 + 10 * i as u64);
    }
}
per_backend!(few_input_channels_match_the_reference);

/// Products split into tasks that each gather their own im2col columns (tiles of 384
/// columns and a last of 365; tiles within each of two images), one whose few columns are
/// gathered once and shared by tiles of rows (`k` 2,700), and images with two groups each.
/// Three output channels a group, or outputs a fifth narrower than their rows (`7 x 9` under
/// a `3 x 3` kernel), so that CPUs with AVX2 also take these paths, not the direct one.
fn gathered_tiles_match_the_reference(d: &Device) {
    let cases = [
        case([1, 64, 37, 41], [3, 3, 3], 1, [[1, 1], [1, 1], [1, 1]]),
        case([2, 64, 37, 41], [3, 3, 3], 1, [[1, 1], [1, 1], [1, 1]]),
        case([1, 300, 7, 9], [70, 3, 3], 1, [[1, 1], [0, 0], [1, 1]]),
        case([3, 20, 33, 35], [6, 5, 5], 2, [[2, 2], [2, 2], [1, 1]]),
    ];
    for (i, c) in cases.iter().enumerate() {
        check(d, c, ACTS[2 + i], 7_600 + 10 * i as u64);
    }
}
per_backend!(gathered_tiles_match_the_reference);

/// Dense convolutions that CPUs with AVX2 compute directly over split planes (128 terms or
/// more to each output): output channels past whole tiles (21 = 8 + 8 + 5), flat outputs
/// ending in tiles of two and one blocks, strides, dilations, a 5 x 5 kernel of two groups,
/// a strided 1 x 2 kernel, two images, and one large enough to split into tiles of channels
/// and outputs.
fn direct_convolutions_match_the_reference(d: &Device) {
    let cases = [
        case([1, 15, 29, 31], [21, 3, 3], 1, [[1, 1], [1, 1], [1, 1]]),
        case([2, 16, 37, 23], [16, 3, 3], 1, [[2, 2], [1, 1], [1, 1]]),
        case([1, 16, 19, 40], [12, 3, 3], 1, [[1, 1], [2, 2], [2, 2]]),
        case([1, 12, 17, 30], [8, 5, 5], 2, [[1, 2], [2, 2], [1, 1]]),
        case([1, 70, 15, 15], [40, 1, 2], 1, [[2, 2], [0, 0], [1, 1]]),
        case([1, 43, 9, 70], [4, 1, 3], 1, [[1, 1], [0, 1], [1, 3]]),
        case([1, 32, 64, 64], [64, 3, 3], 1, [[1, 1], [1, 1], [1, 1]]),
    ];
    for (i, c) in cases.iter().enumerate() {
        check(d, c, ACTS[i % ACTS.len()], 7_700 + 10 * i as u64);
    }
}
per_backend!(direct_convolutions_match_the_reference);

/// Convolutions of 1 to 8 output positions, whose products the CPU backend takes from each
/// position's patch (Silero VAD's): a 1-D kernel of 256 taps at stride 128 (a short-time
/// Fourier transform's), a padded 1-D one, taps in the padding of two strided images, a
/// dilated kernel, two groups, one position of 1,000 terms (sums in two blocks of `k`),
/// exactly 8 positions, and 9 (the im2col path).
fn few_position_convolutions_match_the_reference(d: &Device) {
    let cases = [
        case([1, 1, 1, 576], [34, 1, 256], 1, [[1, 128], [0, 0], [1, 1]]),
        case([1, 19, 1, 4], [16, 1, 3], 1, [[1, 1], [0, 1], [1, 1]]),
        case([2, 6, 3, 3], [7, 3, 3], 1, [[2, 2], [1, 1], [1, 1]]),
        case([1, 5, 7, 7], [9, 3, 3], 1, [[2, 2], [1, 1], [3, 3]]),
        case([1, 8, 4, 4], [6, 3, 3], 2, [[2, 1], [0, 1], [1, 1]]),
        case([1, 40, 5, 5], [13, 5, 5], 1, [[1, 1], [0, 0], [1, 1]]),
        case([1, 3, 3, 4], [5, 2, 1], 1, [[1, 1], [0, 0], [1, 1]]),
        case([1, 4, 5, 5], [3, 3, 3], 1, [[1, 1], [0, 0], [1, 1]]),
    ];
    for (i, c) in cases.iter().enumerate() {
        check(d, c, ACTS[i % ACTS.len()], 7_800 + 10 * i as u64);
    }
}
per_backend!(few_position_convolutions_match_the_reference);
