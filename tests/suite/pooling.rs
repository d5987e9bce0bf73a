//! Max and average pooling with a window, stride, padding and dilation per axis (ONNX's MaxPool
//! and AveragePool: `[top, left, bottom, right]` pads, `count_include_pad`, `ceil_mode`) on every
//! device against an f64 reference, on odd shapes with poisoned outputs.

use unicompute::ops::{Pool2dParams, PoolKind, PoolOptions};

use crate::common::{assert_close, devices, expect_err, name, per_backend, random, read, tensor};
use unicompute::Device;

/// Output extent of one axis, as ONNX and PyTorch define it: a window of `k` taps `d` apart.
fn extent(input: usize, [k, s, d]: [usize; 3], [before, after]: [usize; 2], ceil: bool) -> usize {
    let span = input + before + after - ((k - 1) * d + 1);
    let e = if ceil { span.div_ceil(s) } else { span / s } + 1;
    if ceil && (e - 1) * s >= input + before {
        e - 1
    } else {
        e
    }
}

/// The input coordinates of one axis's window at `o`, `[k, s, d]` and padding `before`, and
/// whether each lies within the padded input (ONNX's reference counts those with
/// `count_include_pad`; the others are a `ceil_mode` window's overhang).
fn window(o: usize, [k, s, d]: [usize; 3], before: usize, padded: usize) -> Vec<(isize, bool)> {
    (0..k)
        .map(|j| o * s + j * d)
        .map(|i| (i as isize - before as isize, i < padded))
        .collect()
}

/// Pooling of `x: [n, c, h, w]` in f64, and the output shape.
fn reference(x: &[f32], xs: [usize; 4], kind: PoolKind, p: &PoolOptions) -> (Vec<f64>, Vec<usize>) {
    let [n, c, h, w] = xs;
    let [top, left, bottom, right] = p.padding;
    let rows = [p.kernel[0], p.stride[0], p.dilation[0]];
    let cols = [p.kernel[1], p.stride[1], p.dilation[1]];
    let oh = extent(h, rows, [top, bottom], p.ceil_mode);
    let ow = extent(w, cols, [left, right], p.ceil_mode);
    let mut out = Vec::new();
    for plane in 0..n * c {
        for oy in 0..oh {
            for ox in 0..ow {
                let ys = window(oy, rows, top, h + top + bottom);
                let xs = window(ox, cols, left, w + left + right);
                let mut taps = Vec::new();
                for &(iy, _) in &ys {
                    for &(ix, _) in &xs {
                        if (0..h as isize).contains(&iy) && (0..w as isize).contains(&ix) {
                            taps.push(f64::from(x[plane * h * w + iy as usize * w + ix as usize]));
                        }
                    }
                }
                out.push(match kind {
                    PoolKind::Max if taps.iter().any(|v| v.is_nan()) => f64::NAN,
                    PoolKind::Max => taps.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
                    PoolKind::Avg => {
                        let divisor = if p.count_include_pad {
                            let inside = |t: &[(isize, bool)]| t.iter().filter(|v| v.1).count();
                            (inside(&ys) * inside(&xs)) as f64
                        } else {
                            taps.len() as f64
                        };
                        taps.iter().sum::<f64>() / divisor
                    }
                });
            }
        }
    }
    (out, vec![n, c, oh, ow])
}

fn options(kernel: [usize; 2], stride: [usize; 2], padding: [usize; 4]) -> PoolOptions {
    PoolOptions {
        stride,
        padding,
        ..PoolOptions::new(kernel)
    }
}

#[test]
fn windows_strides_and_pads_per_axis_match_the_reference() {
    let cases: &[([usize; 4], PoolOptions)] = &[
        ([2, 3, 7, 9], options([3, 2], [2, 3], [1, 0, 1, 1])),
        ([1, 5, 11, 6], options([2, 3], [1, 2], [0, 1, 1, 0])),
        ([3, 2, 5, 5], options([5, 5], [1, 1], [2, 2, 2, 2])),
        ([1, 1, 13, 4], options([4, 1], [3, 1], [2, 0, 1, 0])),
        ([1, 2, 45, 50], options([31, 29], [7, 5], [15, 14, 3, 9])),
        // SqueezeNet's first: odd rows split into two stride phases; rows narrower than
        // their stride.
        ([1, 3, 111, 111], options([3, 3], [2, 2], [0, 0, 0, 0])),
        ([2, 2, 7, 2], options([2, 1], [2, 3], [0, 0, 0, 0])),
        ([1, 2, 5, 3], options([2, 2], [1, 5], [0, 0, 1, 0])),
    ];
    check_cases(cases, 2900, 7);
}

/// Dilation 2 and 3 (per axis, with strides, pads and `ceil_mode`): the windows' taps, the
/// output extents and the averages' divisors as ONNX's reference has them.
#[test]
fn dilated_windows_match_the_reference() {
    let dilated = |kernel, stride, padding, dilation| PoolOptions {
        dilation,
        ..options(kernel, stride, padding)
    };
    let cases: &[([usize; 4], PoolOptions)] = &[
        ([2, 3, 9, 11], dilated([3, 2], [2, 3], [1, 0, 1, 1], [2, 3])),
        ([1, 5, 13, 7], dilated([2, 3], [1, 2], [0, 1, 1, 0], [3, 2])),
        ([3, 2, 7, 8], dilated([3, 3], [1, 1], [1, 1, 1, 1], [2, 2])),
        ([1, 1, 17, 5], dilated([4, 2], [3, 1], [2, 0, 1, 1], [3, 3])),
        (
            [1, 2, 23, 19],
            dilated([5, 4], [2, 3], [2, 2, 1, 2], [3, 2]),
        ),
        ([2, 1, 4, 6], dilated([2, 2], [2, 2], [1, 1, 1, 1], [3, 2])),
    ];
    check_cases(cases, 3100, 11);
}

fn the_old_symmetric_parameters_count_the_padding(d: &Device) {
    let xs = [2, 3, 7, 8];
    let x = random(2950, xs.iter().product(), -2.0, 2.0);
    let xt = tensor(d, &x, &xs);
    let old = Pool2dParams {
        kernel: [3, 2],
        stride: Some([2, 3]),
        padding: [1, 1],
    };
    let p = PoolOptions {
        count_include_pad: true,
        ..options([3, 2], [2, 3], [1, 1, 1, 1])
    };
    for kind in [PoolKind::Max, PoolKind::Avg] {
        let (want, _) = reference(&x, xs, kind, &p);
        let got = read(&xt.pool2d(kind, old).unwrap());
        assert_close(&got, &want, 1e-5, 1e-6, &format!("{kind:?} on {}", name(d)));
    }
}
per_backend!(the_old_symmetric_parameters_count_the_padding);

fn bad_geometries_are_errors(d: &Device) {
    let x = tensor(d, &[1.0; 2 * 5 * 6], &[1, 2, 5, 6]);
    let pool = |p: PoolOptions| x.pool2d_with(PoolKind::Avg, p);
    expect_err(
        pool(options([3, 3], [1, 1], [0, 0, 2, 0])),
        "INVALID",
        &["padding 2", "half"],
        d,
    );
    expect_err(
        pool(options([0, 3], [1, 1], [0; 4])),
        "INVALID",
        &["kernel 0"],
        d,
    );
    expect_err(
        pool(options([2, 2], [1, 0], [0; 4])),
        "INVALID",
        &["stride 0"],
        d,
    );
    expect_err(
        pool(options([2, 7], [1, 1], [0; 4])),
        "SHAPE",
        &["spans 7"],
        d,
    );
    let dilated = |dilation| PoolOptions {
        dilation,
        ..options([2, 3], [1, 1], [0; 4])
    };
    expect_err(pool(dilated([1, 0])), "INVALID", &["dilation 0"], d);
    expect_err(pool(dilated([5, 1])), "SHAPE", &["spans 6"], d);
    expect_err(pool(dilated([1, usize::MAX])), "SHAPE", &["overflows"], d);
}
per_backend!(bad_geometries_are_errors);

/// A column stride far past the row, as a fuzzed geometry has: one window per row on the
/// cpu (which once reserved scratch of the stride's size, 2^42 words here, and aborted).
#[test]
fn a_stride_far_past_the_row_takes_one_window() {
    let d = &devices()[0];
    let x = random(2950, 15, -3.0, 3.0);
    let p = options([1, 2], [1, 1 << 42], [0, 0, 0, 0]);
    let got = tensor(d, &x, &[1, 1, 3, 5]).pool2d_with(PoolKind::Max, p);
    let want: Vec<f64> = x.chunks(5).map(|r| f64::from(r[0].max(r[1]))).collect();
    assert_close(
        &read(&got.unwrap()),
        &want,
        0.0,
        0.0,
        &format!("on {}", name(d)),
    );
}

/// Max and average pooling of each case (seeds from `seed`, one NaN at `c * nan_step`), with
/// and without `count_include_pad` and `ceil_mode`, against the reference on every device.
fn check_cases(cases: &[([usize; 4], PoolOptions)], seed: u64, nan_step: usize) {
    for d in devices() {
        for (c, (xs, base)) in cases.iter().enumerate() {
            let mut x = random(seed + c as u64, xs.iter().product(), -3.0, 3.0);
            let at = c * nan_step % x.len();
            x[at] = f32::NAN;
            let xt = tensor(d, &x, xs);
            for kind in [PoolKind::Max, PoolKind::Avg] {
                for (include, ceil) in [(false, false), (true, false), (false, true), (true, true)]
                {
                    let p = PoolOptions {
                        count_include_pad: include,
                        ceil_mode: ceil,
                        ..*base
                    };
                    let (want, shape) = reference(&x, *xs, kind, &p);
                    let got = xt.pool2d_with(kind, p).unwrap();
                    assert_eq!(got.shape(), &shape[..], "{kind:?} {p:?} on {}", name(d));
                    let what = format!("{kind:?} {p:?} of {xs:?} on {}", name(d));
                    assert_close(&read(&got), &want, 1e-5, 1e-6, &what);
                }
            }
        }
    }
}
