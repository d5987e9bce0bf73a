//! TopK: the k largest or smallest along an axis, sorted, ties to the lower index, NaN above
//! every number, against a stable sort on the host; every dtype, odd shapes, long rows.

use std::cmp::Ordering;

use crate::common::{devices, expect_err, name, per_backend, random, tensor};
use unicompute::{bf16, f16, DType, Device, Element, Tensor};

/// The order of two floats with NaN above every number (every NaN equal) and -0 equal to +0.
fn float_order(a: &f64, b: &f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(b).unwrap_or(Ordering::Equal),
    }
}

/// The expected values and indices of the top `k` along `axis` of `x` (row-major `shape`): a
/// stable sort of each row by `order` (reversed for `largest`), so ties keep the lower index.
fn reference<T: Copy>(
    x: &[T],
    shape: &[usize],
    axis: usize,
    k: usize,
    largest: bool,
    order: fn(&T, &T) -> Ordering,
) -> (Vec<T>, Vec<u32>) {
    let (len, inner) = (shape[axis], shape[axis + 1..].iter().product::<usize>());
    let outer: usize = shape[..axis].iter().product();
    let mut values = vec![None; outer * k * inner];
    let mut indices = vec![0u32; outer * k * inner];
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| o * len * inner + j * inner + i;
            let mut row: Vec<usize> = (0..len).collect();
            row.sort_by(|&a, &b| {
                let c = order(&x[at(a)], &x[at(b)]);
                if largest {
                    c.reverse()
                } else {
                    c
                }
            });
            for (rank, &j) in row.iter().take(k).enumerate() {
                let out = o * k * inner + rank * inner + i;
                values[out] = Some(x[at(j)]);
                indices[out] = j as u32;
            }
        }
    }
    (values.into_iter().flatten().collect(), indices)
}

/// `t`'s top `k` along `axis` on its device, read back, checked for shape and dtypes.
fn run<T: Element>(t: &Tensor, k: usize, axis: usize, largest: bool) -> (Vec<T>, Vec<u32>) {
    let (v, i) = t.topk(k, axis, largest).unwrap();
    let mut shape = t.shape().to_vec();
    shape[axis] = k;
    assert_eq!((v.shape(), i.shape()), (&shape[..], &shape[..]), "shapes");
    assert_eq!((v.dtype(), i.dtype()), (t.dtype(), DType::U32), "dtypes");
    (v.to_vec_blocking().unwrap(), i.to_vec_blocking().unwrap())
}

/// f32 values equal as values (NaN to NaN; -0 and +0 tie, so either may come first).
fn same_floats(got: &[f32], want: &[f32]) -> bool {
    got.len() == want.len()
        && got
            .iter()
            .zip(want)
            .all(|(g, w)| g == w || (g.is_nan() && w.is_nan()))
}

/// Seeded f32 values; with `ties`, drawn from a few values so that rows hold many ties.
fn values(seed: u64, n: usize, ties: bool) -> Vec<f32> {
    let x = random(seed, n, -10.0, 10.0);
    if ties {
        x.iter().map(|v| (v / 4.0).round()).collect()
    } else {
        x
    }
}

fn topk_of_floats_matches_a_stable_sort(d: &Device) {
    // (shape, axis, k): rows of 1, of primes, past a workgroup of 64, along every axis.
    let cases: &[(&[usize], usize, &[usize])] = &[
        (&[1], 0, &[0, 1]),
        (&[7], 0, &[1, 3, 7]),
        (&[3, 37, 5], 1, &[1, 5, 37]),
        (&[3, 37, 5], 0, &[2]),
        (&[3, 37, 5], 2, &[4]),
        (&[2, 131], 1, &[1, 64, 131]),
        (&[5, 2, 67], 2, &[67]),
        (&[1, 1, 1], 1, &[1]),
    ];
    for (c, &(shape, axis, ks)) in cases.iter().enumerate() {
        for ties in [false, true] {
            let n = shape.iter().product();
            let x = values(900 + c as u64, n, ties);
            let t = tensor(d, &x, shape);
            let wide: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
            for (&k, largest) in ks.iter().flat_map(|k| [(k, true), (k, false)]) {
                let what = format!(
                    "top {k} (largest {largest}) along {axis} of {shape:?}, ties {ties}, on {}",
                    name(d)
                );
                let (want_v, want_i) = reference(&wide, shape, axis, k, largest, float_order);
                let (got_v, got_i) = run::<f32>(&t, k, axis, largest);
                let want_v: Vec<f32> = want_v.iter().map(|&v| v as f32).collect();
                assert!(same_floats(&got_v, &want_v), "{what}: values {got_v:?}");
                assert_eq!(got_i, want_i, "{what}: indices");
            }
        }
    }
    // A strided view (the transpose of a [37, 6] tensor) along its last axis.
    let x = values(950, 37 * 6, true);
    let t = tensor(d, &x, &[37, 6]).t().unwrap();
    let host: Vec<f64> = (0..6 * 37)
        .map(|i| f64::from(x[(i % 37) * 6 + i / 37]))
        .collect();
    let (want_v, want_i) = reference(&host, &[6, 37], 1, 9, true, float_order);
    let (got_v, got_i) = run::<f32>(&t, 9, 1, true);
    let want_v: Vec<f32> = want_v.iter().map(|&v| v as f32).collect();
    assert!(
        same_floats(&got_v, &want_v),
        "transposed view on {}",
        name(d)
    );
    assert_eq!(got_i, want_i, "transposed view on {}", name(d));
}
per_backend!(topk_of_floats_matches_a_stable_sort);

fn nan_ranks_above_every_number_and_zeros_tie(d: &Device) {
    let (nan, inf) = (f32::NAN, f32::INFINITY);
    let x = [
        1.0, nan, -inf, 0.0, inf, -0.0, nan, 3.0, -2.0, 0.0, //
        -0.0, 5.0, nan, -inf, 2.0, inf, 0.0, -1.0, nan, -0.0,
    ];
    let t = tensor(d, &x, &[2, 10]);
    let wide: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    for k in [1, 3, 10] {
        for largest in [true, false] {
            let (want_v, want_i) = reference(&wide, &[2, 10], 1, k, largest, float_order);
            let (got_v, got_i) = run::<f32>(&t, k, 1, largest);
            let want_v: Vec<f32> = want_v.iter().map(|&v| v as f32).collect();
            let what = format!("top {k} (largest {largest}) on {}", name(d));
            assert!(same_floats(&got_v, &want_v), "{what}: {got_v:?}");
            assert_eq!(got_i, want_i, "{what}");
        }
    }
    // Spelled out: NaN first among the largest (the lower index first), last among the
    // smallest; -0 and +0 tie, the lower index first.
    assert_eq!(
        run::<f32>(&t, 3, 1, true).1,
        [1, 6, 4, 2, 8, 5],
        "on {}",
        name(d)
    );
    assert_eq!(
        run::<f32>(&t, 10, 1, false).1[..6],
        [2, 8, 3, 5, 9, 0],
        "on {}",
        name(d)
    );
}
per_backend!(nan_ranks_above_every_number_and_zeros_tie);

/// The top k of `x` (of dtype `T`, as i128 for the order) on `d` against the reference.
fn check_integers<T: Element + Copy + PartialEq + std::fmt::Debug + Into<i128>>(
    d: &Device,
    x: &[T],
    shape: &[usize],
) {
    let t = Tensor::from_slice(d, x, shape).unwrap();
    for axis in 0..shape.len() {
        for (k, largest) in [(1, true), (shape[axis], false), (shape[axis] / 2, true)] {
            let order = |a: &T, b: &T| Into::<i128>::into(*a).cmp(&(*b).into());
            let want = reference(x, shape, axis, k, largest, order);
            assert_eq!(
                run::<T>(&t, k, axis, largest),
                want,
                "{} top {k} (largest {largest}) along {axis} of {shape:?} on {}",
                t.dtype(),
                name(d)
            );
        }
    }
}

fn topk_of_every_integer_dtype(d: &Device) {
    let shape = [3, 29, 4];
    let n = 3 * 29 * 4;
    let mut rng = fastrand::Rng::with_seed(960);
    // Full ranges with their extremes, and few values (ties).
    let mut i32s: Vec<i32> = (0..n).map(|_| rng.i32(..)).collect();
    i32s[..4].copy_from_slice(&[i32::MIN, i32::MAX, 0, -1]);
    check_integers(d, &i32s, &shape);
    check_integers(d, &i32s.iter().map(|v| v % 5).collect::<Vec<_>>(), &shape);
    let u32s: Vec<u32> = (0..n).map(|_| rng.u32(..)).collect();
    check_integers(d, &u32s, &shape);
    let u8s: Vec<u8> = (0..n).map(|_| rng.u8(..)).collect();
    check_integers(d, &u8s, &shape);
    let i8s: Vec<i8> = (0..n).map(|_| rng.i8(..)).collect();
    check_integers(d, &i8s, &shape);
    if d.info().features.int64 {
        let mut i64s: Vec<i64> = (0..n).map(|_| rng.i64(..)).collect();
        i64s[..4].copy_from_slice(&[i64::MIN, i64::MAX, 1 << 40, -(1 << 40) - 1]);
        check_integers(d, &i64s, &shape);
    } else {
        let t = Tensor::from_slice(d, &[1i64, 2], &[2]).unwrap();
        expect_err(
            t.topk(1, 0, true),
            "UNSUPPORTED",
            &["topk", "shader-int64"],
            d,
        );
    }
    // Bool: the trues first (lowest indices first), as u8 0 / 1.
    let flags: Vec<u8> = (0..n).map(|i| u8::from(i % 3 == 1)).collect();
    let b = Tensor::from_slice(d, &flags, &shape)
        .unwrap()
        .cast(DType::Bool)
        .unwrap();
    let (v, i) = b.topk(5, 1, true).unwrap();
    let (want_v, want_i) = reference(&flags, &shape, 1, 5, true, u8::cmp);
    assert_eq!(v.dtype(), DType::Bool, "bool values stay bool");
    let got_v = v.cast(DType::U8).unwrap().to_vec_blocking::<u8>().unwrap();
    assert_eq!(
        (got_v, i.to_vec_blocking::<u32>().unwrap()),
        (want_v, want_i)
    );
}
per_backend!(topk_of_every_integer_dtype);

fn topk_of_16_bit_floats_compares_them_exactly(d: &Device) {
    let shape = [4, 53];
    let x = values(970, 4 * 53, true);
    for dtype in [DType::F16, DType::BF16] {
        let t = tensor(d, &x, &shape).cast(dtype).unwrap();
        // The values the 16-bit tensor holds, as f64.
        let held: Vec<f64> = match dtype {
            DType::F16 => t
                .to_vec_blocking::<f16>()
                .unwrap()
                .iter()
                .map(|v| v.to_f64())
                .collect(),
            _ => t
                .to_vec_blocking::<bf16>()
                .unwrap()
                .iter()
                .map(|v| v.to_f64())
                .collect(),
        };
        let (want_v, want_i) = reference(&held, &shape, 1, 17, true, float_order);
        let (v, i) = t.topk(17, 1, true).unwrap();
        assert_eq!(v.dtype(), dtype, "{dtype} values stay {dtype}");
        let got_v: Vec<f64> = v
            .cast(DType::F32)
            .unwrap()
            .to_vec_blocking::<f32>()
            .unwrap()
            .iter()
            .map(|&v| f64::from(v))
            .collect();
        assert_eq!(got_v, want_v, "{dtype} values on {}", name(d));
        assert_eq!(
            i.to_vec_blocking::<u32>().unwrap(),
            want_i,
            "{dtype} on {}",
            name(d)
        );
    }
}
per_backend!(topk_of_16_bit_floats_compares_them_exactly);

/// Rows longer than llvmpipe's loop limit (65,535 iterations): counted in pieces there.
fn topk_of_rows_past_the_loop_limit(d: &Device) {
    let len = 65_537;
    let x = values(980, len, false);
    let t = tensor(d, &x, &[1, len]);
    let wide: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    for (k, largest) in [(7, true), (3, false)] {
        let (want_v, want_i) = reference(&wide, &[1, len], 1, k, largest, float_order);
        let (got_v, got_i) = run::<f32>(&t, k, 1, largest);
        let want_v: Vec<f32> = want_v.iter().map(|&v| v as f32).collect();
        let what = format!(
            "top {k} (largest {largest}) of a row of {len} on {}",
            name(d)
        );
        assert_eq!((got_v, got_i), (want_v, want_i), "{what}");
    }
}
per_backend!(topk_of_rows_past_the_loop_limit);

#[test]
fn topk_refuses_a_k_past_the_axis_and_a_bad_axis() {
    for d in devices() {
        let t = tensor(d, &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]);
        expect_err(
            t.topk(4, 1, true),
            "OUT_OF_RANGE",
            &["k = 4", "at most 3"],
            d,
        );
        expect_err(t.topk(1, 2, true), "OUT_OF_RANGE", &["topk", "axis 2"], d);
        let (v, i) = t.topk(0, 0, false).unwrap();
        assert_eq!((v.shape(), i.shape()), (&[0, 3][..], &[0, 3][..]), "k = 0");
    }
}
