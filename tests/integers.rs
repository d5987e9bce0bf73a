//! Integer arithmetic on i32 and u32 on every available backend, against a reference computed
//! here in wide integers and wrapped (independent of the library's `BinaryOp::eval_int`):
//! seeded values over the whole range with the edge cases (MIN, MAX, 0, ±1) in every input,
//! numpy broadcasting, strided views, and outputs poisoned before the launch.
#![cfg(not(target_arch = "wasm32"))]

mod common;

use common::{devices, expect_err, name};
use unicompute::layout::Layout;
use unicompute::{BinaryOp, DType, Device, Element, ReduceOp, Tensor, UnaryOp};

/// One integer type under test: its values as i64, wrapping back into its range.
trait Int: Element + Copy + PartialEq + std::fmt::Debug {
    const EDGES: &'static [i64];
    const MIN: i64;
    const MAX: i64;
    fn wrap(v: i64) -> Self;
    fn wide(self) -> i64;
}

impl Int for i32 {
    const EDGES: &'static [i64] = &[i32::MIN as i64, i32::MIN as i64 + 1, -2, -1, 0, 1, 2, i32::MAX as i64];
    const MIN: i64 = i32::MIN as i64;
    const MAX: i64 = i32::MAX as i64;
    fn wrap(v: i64) -> i32 {
        v as i32
    }
    fn wide(self) -> i64 {
        i64::from(self)
    }
}

impl Int for u32 {
    const EDGES: &'static [i64] = &[0, 1, 2, 3, u32::MAX as i64 - 1, u32::MAX as i64];
    const MIN: i64 = 0;
    const MAX: i64 = u32::MAX as i64;
    fn wrap(v: i64) -> u32 {
        v as u32
    }
    fn wide(self) -> i64 {
        i64::from(self)
    }
}

/// `n` seeded values: the edge cases first, then uniform over `[lo, hi]`.
fn values<I: Int>(seed: u64, n: usize, lo: i64, hi: i64) -> Vec<I> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let edges = I::EDGES.iter().copied().filter(|v| (lo..=hi).contains(v));
    edges.chain(std::iter::repeat_with(|| rng.i64(lo..=hi))).take(n).map(I::wrap).collect()
}

/// `op(a, b)` as numpy's int32 / uint32 and WGSL compute it, in i128 and wrapped.
fn reference<I: Int>(op: BinaryOp, a: I, b: I) -> I {
    let (a, b) = (a.wide(), b.wide());
    let wrap = |v: i128| I::wrap(v as i64);
    match op {
        BinaryOp::Add => wrap(i128::from(a) + i128::from(b)),
        BinaryOp::Sub => wrap(i128::from(a) - i128::from(b)),
        BinaryOp::Mul => wrap(i128::from(a) * i128::from(b)),
        BinaryOp::Div if b == 0 => I::wrap(a),
        BinaryOp::Div => wrap(i128::from(a) / i128::from(b)),
        BinaryOp::Min => I::wrap(a.min(b)),
        BinaryOp::Max => I::wrap(a.max(b)),
        BinaryOp::Pow if b < 0 => I::wrap(match a {
            1 => 1,
            -1 if b % 2 != 0 => -1,
            -1 => 1,
            _ => 0,
        }),
        BinaryOp::Pow => (0..b).fold(I::wrap(1), |r, _| wrap(i128::from(r.wide()) * i128::from(a))),
    }
}

/// The elements of a view of `data`.
fn view<I: Int>(data: &[I], t: &Tensor) -> Vec<I> {
    let layout = Layout { shape: t.shape().to_vec(), strides: t.strides().to_vec(), offset: t.offset() };
    layout.offsets().map(|o| data[o]).collect()
}

/// Every binary op on `I` over broadcast shapes and a transposed view, on `d`.
fn check_binary<I: Int>(d: &Device) {
    let cases: &[(&[usize], &[usize])] = &[(&[1], &[13]), (&[257], &[257]), (&[5, 1, 7], &[1, 3, 1]), (&[2, 3, 4], &[4]), (&[3, 5, 11], &[3, 5, 11])];
    for (k, op) in BinaryOp::ALL.into_iter().enumerate() {
        for (c, &(sa, sb)) in cases.iter().enumerate() {
            let seed = (k * 10 + c) as u64;
            let (na, nb): (usize, usize) = (sa.iter().product(), sb.iter().product());
            let a: Vec<I> = values(seed, na, I::MIN, I::MAX);
            let b: Vec<I> = match op {
                BinaryOp::Pow => values(seed + 1000, nb, I::MIN.max(-3), 40),
                _ => values(seed + 1000, nb, I::MIN, I::MAX),
            };
            let (ta, tb) = (Tensor::from_slice(d, &a, sa).unwrap(), Tensor::from_slice(d, &b, sb).unwrap());
            // The last case reads `a` through a transposed view (strided addressing).
            let ta = if c == 4 { ta.permute(&[2, 1, 0]).unwrap().contiguous().unwrap().permute(&[2, 1, 0]).unwrap() } else { ta };
            let out = ta.binary(op, &tb).unwrap();
            assert_eq!(out.dtype(), I::DTYPE);
            let got = out.to_vec_blocking::<I>().unwrap();
            let shape = out.shape().to_vec();
            let av = view(&a, &Tensor::from_slice(d, &a, sa).unwrap().broadcast_to(&shape).unwrap());
            let bv = view(&b, &Tensor::from_slice(d, &b, sb).unwrap().broadcast_to(&shape).unwrap());
            for (i, ((&g, &x), &y)) in got.iter().zip(&av).zip(&bv).enumerate() {
                let want = reference(op, x, y);
                assert_eq!(g, want, "{} {} of {x:?} and {y:?} (element {i}, {sa:?} with {sb:?}, seed {seed}) on {}", I::DTYPE, op.name(), name(d));
            }
        }
    }
}

#[test]
fn integer_arithmetic_wraps_truncates_and_defines_division_by_zero() {
    for d in devices() {
        check_binary::<i32>(d);
        check_binary::<u32>(d);
    }
}

#[test]
fn integer_edge_cases_by_name() {
    for d in devices() {
        let t = |v: &[i32]| Tensor::from_slice(d, v, &[v.len()]).unwrap();
        let div = t(&[7, -7, 7, -7, i32::MIN, 5, 0]).div(&t(&[2, 2, -2, -2, -1, 0, 0])).unwrap();
        assert_eq!(div.to_vec_blocking::<i32>().unwrap(), [3, -3, -3, 3, i32::MIN, 5, 0], "truncation, MIN / -1, x / 0 on {}", name(d));
        let add = t(&[i32::MAX, i32::MIN]).add(&t(&[1, -1])).unwrap();
        assert_eq!(add.to_vec_blocking::<i32>().unwrap(), [i32::MIN, i32::MAX], "add wraps on {}", name(d));
        let pow = t(&[3, -2, 2, 1, -1, -1, 2, 0]).binary(BinaryOp::Pow, &t(&[4, 3, 31, -5, -3, -4, -1, 0])).unwrap();
        assert_eq!(pow.to_vec_blocking::<i32>().unwrap(), [81, -8, i32::MIN, 1, -1, 1, 0, 1], "pow on {}", name(d));
    }
}

#[test]
fn integer_arithmetic_refuses_mixed_dtypes_and_activations() {
    for d in devices() {
        let (i, f) = (Tensor::from_slice(d, &[1i32, 2], &[2]).unwrap(), Tensor::from_slice(d, &[1.0f32, 2.0], &[2]).unwrap());
        expect_err(i.add(&f), "DTYPE", &["add", "one dtype", "i32", "f32"], d);
        expect_err(f.mul(&i), "DTYPE", &["mul", "f32", "i32"], d);
        let u = i.cast(DType::U32).unwrap();
        expect_err(i.sub(&u), "DTYPE", &["sub", "i32", "u32"], d);
        expect_err(i.binary_act(BinaryOp::Add, UnaryOp::Relu, &i), "DTYPE", &["relu", "activations"], d);
    }
}

/// `op` over `values` in wide integers: `(value, index)`; a sum wrapped into `I`'s range.
fn reduce_reference<I: Int>(op: ReduceOp, values: &[I]) -> (I, usize) {
    let wide: Vec<i64> = values.iter().map(|v| v.wide()).collect();
    let first_of = |best: i64| wide.iter().position(|&v| v == best).unwrap_or(0);
    match op {
        ReduceOp::Sum => (I::wrap(wide.iter().fold(0i64, |s, &v| I::wrap(s + v).wide())), 0),
        ReduceOp::Max | ReduceOp::Argmax => {
            let best = wide.iter().copied().max().unwrap_or(I::MIN);
            (I::wrap(best), first_of(best))
        }
        ReduceOp::Min => (I::wrap(wide.iter().copied().min().unwrap_or(I::MAX)), 0),
        ReduceOp::Mean => unreachable!("the mean is checked in f64"),
    }
}

/// Every reduction of `I` over each axis and over everything, on `d`.
fn check_reductions<I: Int>(d: &Device) {
    // A prime-length middle axis, long rows past one workgroup's chunk, and one long row.
    let cases: &[&[usize]] = &[&[7], &[3, 131, 5], &[2, 5000], &[70_001]];
    for (c, &shape) in cases.iter().enumerate() {
        let n: usize = shape.iter().product();
        // Small values too, so that sums both stay in range and wrap.
        let x: Vec<I> = if c % 2 == 0 { values(c as u64, n, I::MIN, I::MAX) } else { values(c as u64, n, I::MIN.max(-50), 50) };
        let t = Tensor::from_slice(d, &x, shape).unwrap();
        let axes = (0..shape.len()).map(Some).chain([None]);
        for axis in axes {
            let (outer, len): (usize, usize) = match axis {
                Some(a) => (shape[..a].iter().product(), shape[a]),
                None => (1, n),
            };
            let inner = n / outer / len;
            let row = |g: usize| -> Vec<I> { (0..len).map(|j| x[(g / inner) * len * inner + g % inner + j * inner]).collect() };
            let ops = [ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min, ReduceOp::Argmax];
            for (op, variant) in ops.into_iter().flat_map(|op| d.variants("reduce").into_iter().map(move |v| (op, v))) {
                let what = format!("{} {} ({variant}) over {axis:?} of {shape:?} on {}", I::DTYPE, op.name(), name(d));
                let out = unicompute::ops::reduce::reduce_variant(&d.queue(), op, &t, axis, variant).unwrap();
                if op == ReduceOp::Argmax {
                    let got = out.to_vec_blocking::<u32>().unwrap();
                    let want: Vec<u32> = (0..outer * inner).map(|g| reduce_reference(op, &row(g)).1 as u32).collect();
                    assert_eq!(got, want, "{what}");
                } else {
                    assert_eq!(out.dtype(), I::DTYPE, "{what}");
                    let want: Vec<I> = (0..outer * inner).map(|g| reduce_reference(op, &row(g)).0).collect();
                    assert_eq!(out.to_vec_blocking::<I>().unwrap(), want, "{what}");
                }
            }
            let mean = t.reduce(ReduceOp::Mean, axis).unwrap();
            assert_eq!(mean.dtype(), DType::F32, "the mean of integers is a float");
            let want: Vec<f64> = (0..outer * inner).map(|g| row(g).iter().map(|v| v.wide() as f64).sum::<f64>() / len as f64).collect();
            // Each value is rounded to f32 first: an error of up to an f32 ulp of the largest.
            let atol = x.iter().map(|v| v.wide().unsigned_abs()).max().unwrap_or(0) as f64 * 2f64.powi(-23);
            common::assert_close(&mean.to_vec_blocking::<f32>().unwrap(), &want, 1e-5, atol.max(1e-3), &format!("{} mean over {axis:?} of {shape:?} on {}", I::DTYPE, name(d)));
        }
    }
}

#[test]
fn integer_reductions_wrap_and_keep_their_dtype() {
    for d in devices() {
        check_reductions::<i32>(d);
        check_reductions::<u32>(d);
    }
}

#[test]
fn integer_reductions_over_several_axes_and_empty_ones() {
    for d in devices() {
        let x: Vec<i32> = (0..60).map(|i| i * 7 - 200).collect();
        let t = Tensor::from_slice(d, &x, &[3, 4, 5]).unwrap();
        let sum = t.reduce_axes(ReduceOp::Sum, &[0, 2], true).unwrap();
        assert_eq!(sum.shape(), [1, 4, 1]);
        let want: Vec<i32> = (0..4).map(|j| (0..3).flat_map(|o| (0..5).map(move |i| o * 20 + j * 5 + i)).map(|at| x[at]).sum()).collect();
        assert_eq!(sum.to_vec_blocking::<i32>().unwrap(), want, "sum over axes 0 and 2 on {}", name(d));
        // A boolean mask stored as u32: any (max) and all (min) per row.
        let mask = Tensor::from_slice(d, &[0u32, 1, 0, 0, 0, 0, 1, 1, 1], &[3, 3]).unwrap();
        assert_eq!(mask.reduce(ReduceOp::Max, Some(1)).unwrap().to_vec_blocking::<u32>().unwrap(), [1, 0, 1], "any on {}", name(d));
        assert_eq!(mask.reduce(ReduceOp::Min, Some(1)).unwrap().to_vec_blocking::<u32>().unwrap(), [0, 0, 1], "all on {}", name(d));
        let empty = Tensor::from_slice(d, &[] as &[i32], &[2, 0]).unwrap();
        assert_eq!(empty.reduce(ReduceOp::Sum, Some(1)).unwrap().to_vec_blocking::<i32>().unwrap(), [0, 0], "the sum of nothing on {}", name(d));
        let onnx = unicompute::ops::reduce::reduce_axes_with_identity(&d.queue(), ReduceOp::Max, &empty, &[1], false).unwrap();
        assert_eq!(onnx.to_vec_blocking::<i32>().unwrap(), [i32::MIN, i32::MIN], "ONNX's max of nothing, in i32, on {}", name(d));
        expect_err(empty.reduce(ReduceOp::Max, Some(1)), "SHAPE", &["empty axis"], d);
    }
}

/// Inclusive cumulative sums of `I` along `axis` of `shape`, wrapping, in wide integers.
fn cumsum_reference<I: Int>(x: &[I], shape: &[usize], axis: usize) -> Vec<I> {
    let (len, inner) = (shape[axis], shape[axis + 1..].iter().product::<usize>());
    let mut out = x.to_vec();
    for at in 0..x.len() {
        if (at / inner) % len > 0 {
            out[at] = I::wrap(out[at - inner].wide() + x[at].wide());
        }
    }
    out
}

fn check_cumsum<I: Int>(d: &Device) {
    let cases: &[&[usize]] = &[&[1], &[257], &[3, 131, 5], &[2, 70_001]];
    for (c, &shape) in cases.iter().enumerate() {
        let n: usize = shape.iter().product();
        let x: Vec<I> = values(100 + c as u64, n, I::MIN, I::MAX);
        let t = Tensor::from_slice(d, &x, shape).unwrap();
        for axis in 0..shape.len() {
            let got = t.cumsum(axis).unwrap();
            assert_eq!(got.dtype(), I::DTYPE);
            let want = cumsum_reference(&x, shape, axis);
            assert_eq!(got.to_vec_blocking::<I>().unwrap(), want, "{} cumsum along {axis} of {shape:?} on {}", I::DTYPE, name(d));
        }
    }
    // ONNX's exclusive and reverse sums of [1, 2, 3, 4]: [9, 7, 4, 0].
    let t = Tensor::from_slice(d, &[1, 2, 3, 4].map(|v| I::wrap(v)), &[4]).unwrap();
    let options = unicompute::ops::indexing::CumsumOptions { exclusive: true, reverse: true };
    assert_eq!(t.cumsum_with(0, options).unwrap().to_vec_blocking::<I>().unwrap(), [9, 7, 4, 0].map(|v| I::wrap(v)), "exclusive reverse on {}", name(d));
}

#[test]
fn integer_cumsum_wraps_along_every_axis() {
    for d in devices() {
        check_cumsum::<i32>(d);
        check_cumsum::<u32>(d);
    }
}
