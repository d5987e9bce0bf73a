//! Reductions over one axis, several axes and all, arg-reductions and their ties.

use crate::common::{assert_close, name, per_backend, random, read, tensor};
use unicompute::ops;
use unicompute::{DType, Device, ReduceOp, Tensor};

fn reduce_reference(op: ReduceOp, x: &[f32], shape: &[usize], axis: Option<usize>) -> Vec<f64> {
    let (outer, len, inner) = match axis {
        None => (1, x.len(), 1),
        Some(a) => (
            shape[..a].iter().product(),
            shape[a],
            shape[a + 1..].iter().product::<usize>(),
        ),
    };
    let mut out = Vec::new();
    for o in 0..outer {
        for i in 0..inner {
            let (v, idx) =
                op.reference((0..len).map(|j| f64::from(x[o * len * inner + j * inner + i])));
            out.push(if op == ReduceOp::Argmax {
                idx as f64
            } else {
                v
            });
        }
    }
    out
}

/// Factors whose products stay finite and normal over the longest rows below: `v` in
/// [-10, 10) as `±e^(v / 1000)`, the sign of `v` kept.
fn near_one(x: &[f32]) -> Vec<f32> {
    x.iter().map(|&v| v.signum() * (v / 1000.0).exp()).collect()
}

fn reductions_over_each_axis_and_all(d: &Device) {
    let cases: &[(&[usize], Option<usize>)] = &[
        (&[1], None),
        (&[1000], None),
        (&[3, 1025, 5], Some(0)),
        (&[3, 1025, 5], Some(1)),
        (&[3, 1025, 5], Some(2)),
        (&[7, 3000], Some(1)),
        (&[4099], Some(0)),
        (&[100_003], None),
        (&[2, 70_001], Some(1)),
        (&[40_000, 3], Some(0)),
        (&[5, 2, 37], Some(2)),
    ];
    for v in d.variants("reduce") {
        let q = d.queue();
        for (k, op) in ReduceOp::ALL.into_iter().enumerate() {
            for (c, &(shape, axis)) in cases.iter().enumerate() {
                let seed = (k * 50 + c) as u64;
                let n: usize = shape.iter().product();
                let x = random(seed, n, -10.0, 10.0);
                let x = if op == ReduceOp::Prod {
                    near_one(&x)
                } else {
                    x
                };
                let out =
                    ops::reduce::reduce_variant(&q, op, &tensor(d, &x, shape), axis, v).unwrap();
                let got: Vec<f32> = if op == ReduceOp::Argmax {
                    out.to_vec_blocking::<u32>()
                        .unwrap()
                        .into_iter()
                        .map(|i| i as f32)
                        .collect()
                } else {
                    read(&out)
                };
                let want = reduce_reference(op, &x, shape, axis);
                assert_close(
                    &got,
                    &want,
                    1e-5,
                    1e-4,
                    &format!(
                        "{} {shape:?} axis {axis:?} on {} ({v}) seed {seed}",
                        op.name(),
                        name(d)
                    ),
                );
            }
        }
    }
}
per_backend!(reductions_over_each_axis_and_all);

fn argmax_picks_first_maximum_and_nan(d: &Device) {
    for v in d.variants("reduce") {
        let q = d.queue();
        let argmax = |x: &[f32], shape: &[usize], axis| {
            ops::reduce::reduce_variant(&q, ReduceOp::Argmax, &tensor(d, x, shape), axis, v)
                .unwrap()
                .to_vec_blocking::<u32>()
                .unwrap()
        };
        let x = [1.0f32, 5.0, 3.0, 5.0, 2.0, 0.0, f32::NAN, 9.0];
        assert_eq!(
            argmax(&x, &[2, 4], Some(1)),
            vec![1, 2],
            "argmax rows on {} ({v})",
            name(d)
        );
        // One long row, split into chunks by every backend: ties go to the first, NaN wins.
        let mut long = random(5, 100_003, -10.0, 10.0);
        long[70_000] = 20.0;
        long[90_000] = 20.0;
        assert_eq!(
            argmax(&long, &[long.len()], None)[0],
            70_000,
            "first of tied maxima on {} ({v})",
            name(d)
        );
        long[95_000] = f32::NAN;
        assert_eq!(
            argmax(&long, &[long.len()], None)[0],
            95_000,
            "NaN counts as largest on {} ({v})",
            name(d)
        );
    }
}
per_backend!(argmax_picks_first_maximum_and_nan);

fn sum_of_2_pow_24_elements_is_accurate(d: &Device) {
    let n = 1 << 24;
    let x = random(99, n, 0.0, 1.0);
    let want: f64 = x.iter().map(|&v| f64::from(v)).sum();
    for v in d.variants("reduce") {
        let q = d.queue();
        let t = tensor(d, &x, &[n]);
        let got = read(&ops::reduce::reduce_variant(&q, ReduceOp::Sum, &t, None, v).unwrap())[0];
        let rel = (f64::from(got) - want).abs() / want;
        assert!(
            rel < 1e-5,
            "sum of 2^24 on {} ({v}): {got} vs {want}, relative error {rel:e}",
            name(d)
        );
        let mean = read(&ops::reduce::reduce_variant(&q, ReduceOp::Mean, &t, None, v).unwrap())[0];
        let rel = (f64::from(mean) - want / n as f64).abs() / (want / n as f64);
        assert!(
            rel < 1e-5,
            "mean of 2^24 on {} ({v}): relative error {rel:e}",
            name(d)
        );
    }
}
per_backend!(sum_of_2_pow_24_elements_is_accurate);

/// The f64 reference of `op` over `axes` of a row-major `shape` (numpy's `axis=(..)`).
fn reduce_axes_reference(x: &[f32], shape: &[usize], axes: &[usize], op: ReduceOp) -> Vec<f64> {
    let kept: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
    let out_len: usize = kept.iter().map(|&a| shape[a]).product();
    let mut groups = vec![Vec::new(); out_len];
    for (i, &v) in x.iter().enumerate() {
        let (mut rem, mut index) = (i, vec![0; shape.len()]);
        for d in (0..shape.len()).rev() {
            index[d] = rem % shape[d];
            rem /= shape[d];
        }
        let o = kept.iter().fold(0, |acc, &a| acc * shape[a] + index[a]);
        groups[o].push(f64::from(v));
    }
    let pick = |(v, i): (f64, usize)| if op == ReduceOp::Argmax { i as f64 } else { v };
    groups
        .iter()
        .map(|g| pick(op.reference(g.iter().copied())))
        .collect()
}

fn reductions_over_several_axes_match_numpy(d: &Device) {
    let shape = [3, 4, 5, 2];
    let x = random(8400, shape.iter().product(), -4.0, 4.0);
    let cases: [&[usize]; 6] = [&[1, 3], &[3, 1], &[2, 3], &[0, 1], &[0, 1, 2, 3], &[]];
    let t = tensor(d, &x, &shape);
    for axes in cases {
        let all: Vec<usize> = if axes.is_empty() {
            (0..4).collect()
        } else {
            axes.to_vec()
        };
        let ops = [
            ReduceOp::Sum,
            ReduceOp::Mean,
            ReduceOp::Max,
            ReduceOp::Min,
            ReduceOp::Prod,
        ];
        for op in ops {
            let want = reduce_axes_reference(&x, &shape, &all, op);
            let got = t.reduce_axes(op, axes, false).unwrap();
            let kept: Vec<usize> = (0..4)
                .filter(|a| !all.contains(a))
                .map(|a| shape[a])
                .collect();
            assert_eq!(got.shape(), kept, "{} over {axes:?}", op.name());
            assert_close(
                &read(&got),
                &want,
                1e-5,
                1e-5,
                &format!("{} over {axes:?} on {}", op.name(), name(d)),
            );
            let kept_dims: Vec<usize> = (0..4)
                .map(|a| if all.contains(&a) { 1 } else { shape[a] })
                .collect();
            assert_eq!(
                t.reduce_axes(op, axes, true).unwrap().shape(),
                kept_dims,
                "keep_dims"
            );
        }
    }
    // Argmax over one axis, through the same entry.
    let got: Vec<u32> = t
        .reduce_axes(ReduceOp::Argmax, &[2], true)
        .unwrap()
        .to_vec_blocking()
        .unwrap();
    let want = reduce_axes_reference(&x, &shape, &[2], ReduceOp::Argmax);
    assert!(
        got.iter().zip(&want).all(|(&g, &w)| f64::from(g) == w),
        "argmax over axis 2 on {}",
        name(d)
    );
    for (bad, says) in [
        (&[1, 1][..], "twice"),
        (&[4][..], "axis 4"),
        (&[0, 2][..], "one axis"),
    ] {
        let op = if says == "one axis" {
            ReduceOp::Argmax
        } else {
            ReduceOp::Sum
        };
        let err = t.reduce_axes(op, bad, false).unwrap_err().to_string();
        assert!(err.contains(says), "{bad:?}: {err}");
    }
}
per_backend!(reductions_over_several_axes_match_numpy);

fn reductions_over_an_empty_axis_follow_numpy(d: &Device) {
    let empty = Tensor::zeros(d, &[3, 0, 2], DType::F32).unwrap();
    let sum = empty.reduce(ReduceOp::Sum, Some(1)).unwrap();
    assert_eq!(sum.shape(), [3, 2]);
    assert_eq!(read(&sum), [0.0; 6], "sum of nothing on {}", name(d));
    let mean = empty.reduce(ReduceOp::Mean, Some(1)).unwrap();
    assert!(
        read(&mean).iter().all(|v| v.is_nan()),
        "mean of nothing on {}",
        name(d)
    );
    assert_eq!(
        read(&empty.reduce(ReduceOp::Sum, None).unwrap()),
        [0.0],
        "sum of an empty tensor on {}",
        name(d)
    );
    let prod = empty.reduce(ReduceOp::Prod, Some(1)).unwrap();
    assert_eq!(
        (prod.shape(), read(&prod)),
        (&[3, 2][..], vec![1.0; 6]),
        "product of nothing on {}",
        name(d)
    );
    // Non-empty output rows of an empty input: the result has the other axes' shape.
    let wide = Tensor::zeros(d, &[0, 5], DType::F32).unwrap();
    assert_eq!(
        read(&wide.reduce(ReduceOp::Sum, Some(0)).unwrap()),
        [0.0; 5]
    );
    assert_eq!(wide.reduce(ReduceOp::Sum, Some(1)).unwrap().shape(), [0]);
    // numpy refuses the maximum of nothing; ONNX's identities are an explicit choice.
    assert!(empty.reduce(ReduceOp::Max, Some(1)).is_err());
    let q = d.queue();
    let max =
        ops::reduce::reduce_axes_with_identity(&q, ReduceOp::Max, &empty, &[1], true).unwrap();
    assert_eq!(
        (max.shape(), read(&max)),
        (&[3, 1, 2][..], vec![f32::NEG_INFINITY; 6]),
        "ONNX max of nothing on {}",
        name(d)
    );
    let min =
        ops::reduce::reduce_axes_with_identity(&q, ReduceOp::Min, &empty, &[0, 1], false).unwrap();
    assert_eq!(
        (min.shape(), read(&min)),
        (&[2][..], vec![f32::INFINITY; 2]),
        "ONNX min of nothing on {}",
        name(d)
    );
    let full = tensor(d, &[3.0, -1.0, 2.0], &[3]);
    assert_eq!(
        read(
            &ops::reduce::reduce_axes_with_identity(&q, ReduceOp::Min, &full, &[0], false).unwrap()
        ),
        [-1.0],
        "non-empty on {}",
        name(d)
    );
    assert!(
        ops::reduce::reduce_axes_with_identity(&q, ReduceOp::Max, &empty, &[5], false).is_err(),
        "a bad axis stays an error"
    );
}
per_backend!(reductions_over_an_empty_axis_follow_numpy);

fn argmin_and_last_ties_pick_the_right_index(d: &Device) {
    use unicompute::ops::ArgOptions;
    // Ties everywhere: rows of values from a small set.
    let (rows, cols) = (6, 41);
    let x: Vec<f32> = (0..rows * cols)
        .map(|i| ((i * 7919) % 5) as f32 - 2.0)
        .collect();
    let t = tensor(d, &x, &[rows, cols]);
    for (min, last) in [(true, false), (false, true), (true, true), (false, false)] {
        let got = t
            .arg_reduce(1, ArgOptions { min, last })
            .unwrap()
            .to_vec_blocking::<u32>()
            .unwrap();
        let want: Vec<u32> = x
            .chunks(cols)
            .map(|row| {
                let best = row.iter().cloned().fold(
                    if min {
                        f32::INFINITY
                    } else {
                        f32::NEG_INFINITY
                    },
                    |b, v| if min { b.min(v) } else { b.max(v) },
                );
                let mut hits = row
                    .iter()
                    .enumerate()
                    .filter(|(_, &v)| v == best)
                    .map(|(i, _)| i as u32);
                if last {
                    hits.next_back().unwrap()
                } else {
                    hits.next().unwrap()
                }
            })
            .collect();
        assert_eq!(got, want, "min {min} last {last} on {}", name(d));
    }
    // Along the first axis of a 3-D tensor, and a NaN counts as the extreme.
    let y = tensor(
        d,
        &[1.0, 5.0, f32::NAN, 0.0, -3.0, 5.0, 2.0, 2.0],
        &[2, 2, 2],
    );
    let got = y
        .arg_reduce(
            0,
            ArgOptions {
                min: true,
                last: true,
            },
        )
        .unwrap()
        .to_vec_blocking::<u32>()
        .unwrap();
    assert_eq!(
        got,
        vec![1, 1, 0, 0],
        "3-D argmin with the last tie on {}",
        name(d)
    );
}
per_backend!(argmin_and_last_ties_pick_the_right_index);

/// Products through zeros, negatives, NaN and infinities match the f64 reference exactly in
/// kind: rows of one element, of a prime length and past one workgroup's chunk, each with one
/// special placed in turn at its start, middle and end, on every variant.
fn products_of_zeros_negatives_and_specials(d: &Device) {
    let specials = [0.0, -0.0, -2.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY];
    for v in d.variants("reduce") {
        let q = d.queue();
        for (c, &len) in [1usize, 37, 3001].iter().enumerate() {
            let rows = 3 * specials.len();
            let mut x = near_one(&random(700 + c as u64, rows * len, -10.0, 10.0));
            for (r, row) in x.chunks_mut(len).enumerate() {
                let at = [0, len / 2, len - 1][r % 3];
                row[at] = specials[r / 3];
            }
            let t = tensor(d, &x, &[rows, len]);
            let got =
                read(&ops::reduce::reduce_variant(&q, ReduceOp::Prod, &t, Some(1), v).unwrap());
            let want = reduce_reference(ReduceOp::Prod, &x, &[rows, len], Some(1));
            assert_close(
                &got,
                &want,
                1e-4,
                1e-6,
                &format!("products of rows of {len} on {} ({v})", name(d)),
            );
            // The same rows as columns: the product over axis 0.
            let cols = t.permute(&[1, 0]).unwrap().contiguous().unwrap();
            let got =
                read(&ops::reduce::reduce_variant(&q, ReduceOp::Prod, &cols, Some(0), v).unwrap());
            assert_close(
                &got,
                &want,
                1e-4,
                1e-6,
                &format!("products of columns of {len} on {} ({v})", name(d)),
            );
        }
        // Zero times infinity is NaN; a zero alone is 0 and keeps the sign of the product.
        let t = tensor(d, &[0.0, f32::INFINITY, 2.0, -0.0, 3.0, 4.0], &[3, 2]);
        let got = read(&ops::reduce::reduce_variant(&q, ReduceOp::Prod, &t, Some(1), v).unwrap());
        assert!(
            got[0].is_nan() && got[1] == 0.0 && got[1].is_sign_negative() && got[2] == 12.0,
            "0 * inf, 2 * -0 and 3 * 4 on {} ({v}): {got:?}",
            name(d)
        );
    }
}
per_backend!(products_of_zeros_negatives_and_specials);

/// f16 and bf16 products accumulate in f32 and round once: rows past one workgroup's chunk,
/// whose 16-bit accumulation would drift far past one rounding.
fn products_of_16_bit_floats_round_once(d: &Device) {
    use unicompute::{bf16, f16};
    let (rows, len) = (5, 1031);
    for dtype in [DType::F16, DType::BF16] {
        let round = |v: f64| match dtype {
            DType::F16 => f16::from_f64(v).to_f64(),
            _ => bf16::from_f64(v).to_f64(),
        };
        // Half an ulp of the one rounding, and f32 accumulation over `len` factors.
        let rtol = if dtype == DType::F16 { 6e-4 } else { 4.5e-3 };
        let x: Vec<f32> = near_one(&random(7100, rows * len, -10.0, 10.0))
            .into_iter()
            .map(|v| round(f64::from(v)) as f32)
            .collect();
        let t = tensor(d, &x, &[rows, len]).cast(dtype).unwrap();
        let got = t.reduce(ReduceOp::Prod, Some(1)).unwrap();
        assert_eq!(got.dtype(), dtype, "the product of {dtype} is {dtype}");
        let want = reduce_reference(ReduceOp::Prod, &x, &[rows, len], Some(1));
        assert_close(
            &read(&got.cast(DType::F32).unwrap()),
            &want,
            rtol,
            0.0,
            &format!("{dtype} products of rows of {len} on {}", name(d)),
        );
    }
}
per_backend!(products_of_16_bit_floats_round_once);
