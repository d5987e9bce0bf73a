//! Integer arithmetic on i32, u32 and i64 on every available backend, against a reference
//! computed here in wide integers (i128) and wrapped (independent of the library's `BinaryOp::eval_int`):
//! seeded values over the whole range with the edge cases (MIN, MAX, 0, ±1) in every input,
//! numpy broadcasting, strided views, and outputs poisoned before the launch.

use crate::common::{self, devices, expect_err, name, per_backend};
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
    const EDGES: &'static [i64] = &[
        i32::MIN as i64,
        i32::MIN as i64 + 1,
        -2,
        -1,
        0,
        1,
        2,
        i32::MAX as i64,
    ];
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

impl Int for i64 {
    const EDGES: &'static [i64] = &[
        i64::MIN,
        i64::MIN + 1,
        -2,
        -1,
        0,
        1,
        2,
        i64::MAX - 1,
        i64::MAX,
    ];
    const MIN: i64 = i64::MIN;
    const MAX: i64 = i64::MAX;
    fn wrap(v: i64) -> i64 {
        v
    }
    fn wide(self) -> i64 {
        self
    }
}

/// `a + b` in i128, wrapped into `I`.
fn wrapping_sum<I: Int>(a: I, b: I) -> I {
    I::wrap((i128::from(a.wide()) + i128::from(b.wide())) as i64)
}

/// `a * b` in i128, wrapped into `I`.
fn wrapping_product<I: Int>(a: I, b: I) -> I {
    I::wrap((i128::from(a.wide()) * i128::from(b.wide())) as i64)
}

/// The devices that compute on i64 (`features.int64`); a webgpu device without
/// `shader-int64` is checked to refuse that arithmetic with `UNSUPPORTED` naming the feature.
fn int64_devices() -> Vec<&'static Device> {
    let mut with = Vec::new();
    for d in devices() {
        if d.info().features.int64 {
            with.push(d);
        } else {
            check_refused(d);
        }
    }
    with
}

/// i64 arithmetic, reductions and cumsum refused with `UNSUPPORTED` naming `shader-int64` on
/// `d`, a webgpu device without the feature (casts, comparisons and mean run there as words:
/// int64_words.rs).
fn check_refused(d: &Device) {
    let t = Tensor::from_slice(d, &[1i64, -2, i64::MAX], &[3]).unwrap();
    assert_eq!(
        t.to_vec_blocking::<i64>().unwrap(),
        [1, -2, i64::MAX],
        "i64 data moves without shader-int64 on {}",
        name(d)
    );
    expect_err(t.add(&t), "UNSUPPORTED", &["shader-int64", "add", "i64"], d);
    expect_err(
        t.reduce(ReduceOp::Sum, None),
        "UNSUPPORTED",
        &["shader-int64"],
        d,
    );
    expect_err(t.cumsum(0), "UNSUPPORTED", &["shader-int64"], d);
}

/// The webgpu adapters of this machine, each opened with output poisoning and without
/// `shader-int64` (`DeviceOptions::use_int64` off).
fn adapters_without_int64() -> Vec<Device> {
    let options = unicompute::DeviceOptions {
        poison_uninitialized: true,
        use_int64: false,
        ..unicompute::DeviceOptions::default()
    };
    let webgpu = unicompute::devices()
        .into_iter()
        .filter(|i| i.backend == unicompute::BackendKind::WebGpu);
    webgpu
        .map(|i| Device::open_with(unicompute::BackendChoice::Index(i.index), options).unwrap())
        .collect()
}

/// On adapters without `shader-int64`: the arithmetic refused, the data moving whole.
#[test]
fn i64_without_shader_int64_moves_and_refuses_arithmetic() {
    for d in adapters_without_int64() {
        check_refused(&d);
        check_moves(&d);
    }
}

/// `n` seeded values: the edge cases first, then uniform over `[lo, hi]`.
fn values<I: Int>(seed: u64, n: usize, lo: i64, hi: i64) -> Vec<I> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let edges = I::EDGES.iter().copied().filter(|v| (lo..=hi).contains(v));
    edges
        .chain(std::iter::repeat_with(|| rng.i64(lo..=hi)))
        .take(n)
        .map(I::wrap)
        .collect()
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
        BinaryOp::Pow => (0..b).fold(I::wrap(1), |r, _| {
            wrap(i128::from(r.wide()) * i128::from(a))
        }),
        logic => unreachable!("{} is conformance/bytes.rs's", logic.name()),
    }
}

/// The elements of a view of `data`.
fn view<I: Int>(data: &[I], t: &Tensor) -> Vec<I> {
    let layout = Layout {
        shape: t.shape().to_vec(),
        strides: t.strides().to_vec(),
        offset: t.offset(),
    };
    layout.offsets().map(|o| data[o]).collect()
}

/// Every binary op on `I` over broadcast shapes and a transposed view, on `d`.
fn check_binary<I: Int>(d: &Device) {
    let cases: &[(&[usize], &[usize])] = &[
        (&[1], &[13]),
        (&[257], &[257]),
        (&[5, 1, 7], &[1, 3, 1]),
        (&[2, 3, 4], &[4]),
        (&[3, 5, 11], &[3, 5, 11]),
    ];
    // The logic ops (bool results) are conformance/bytes.rs's.
    let ops = BinaryOp::ALL.into_iter().filter(|op| !op.is_logic());
    for (k, op) in ops.enumerate() {
        for (c, &(sa, sb)) in cases.iter().enumerate() {
            let seed = (k * 10 + c) as u64;
            let (na, nb): (usize, usize) = (sa.iter().product(), sb.iter().product());
            let a: Vec<I> = values(seed, na, I::MIN, I::MAX);
            let b: Vec<I> = match op {
                BinaryOp::Pow => values(seed + 1000, nb, I::MIN.max(-3), 40),
                _ => values(seed + 1000, nb, I::MIN, I::MAX),
            };
            let (ta, tb) = (
                Tensor::from_slice(d, &a, sa).unwrap(),
                Tensor::from_slice(d, &b, sb).unwrap(),
            );
            // The last case reads `a` through a transposed view (strided addressing).
            let ta = if c == 4 {
                ta.permute(&[2, 1, 0])
                    .unwrap()
                    .contiguous()
                    .unwrap()
                    .permute(&[2, 1, 0])
                    .unwrap()
            } else {
                ta
            };
            let out = ta.binary(op, &tb).unwrap();
            assert_eq!(out.dtype(), I::DTYPE);
            let got = out.to_vec_blocking::<I>().unwrap();
            let shape = out.shape().to_vec();
            let av = view(
                &a,
                &Tensor::from_slice(d, &a, sa)
                    .unwrap()
                    .broadcast_to(&shape)
                    .unwrap(),
            );
            let bv = view(
                &b,
                &Tensor::from_slice(d, &b, sb)
                    .unwrap()
                    .broadcast_to(&shape)
                    .unwrap(),
            );
            for (i, ((&g, &x), &y)) in got.iter().zip(&av).zip(&bv).enumerate() {
                let want = reference(op, x, y);
                assert_eq!(
                    g,
                    want,
                    "{} {} of {x:?} and {y:?} (element {i}, {sa:?} with {sb:?}, seed {seed}) on {}",
                    I::DTYPE,
                    op.name(),
                    name(d)
                );
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
    for d in int64_devices() {
        check_binary::<i64>(d);
    }
}

fn integer_edge_cases_by_name(d: &Device) {
    let t = |v: &[i32]| Tensor::from_slice(d, v, &[v.len()]).unwrap();
    let div = t(&[7, -7, 7, -7, i32::MIN, 5, 0])
        .div(&t(&[2, 2, -2, -2, -1, 0, 0]))
        .unwrap();
    assert_eq!(
        div.to_vec_blocking::<i32>().unwrap(),
        [3, -3, -3, 3, i32::MIN, 5, 0],
        "truncation, MIN / -1, x / 0 on {}",
        name(d)
    );
    let add = t(&[i32::MAX, i32::MIN]).add(&t(&[1, -1])).unwrap();
    assert_eq!(
        add.to_vec_blocking::<i32>().unwrap(),
        [i32::MIN, i32::MAX],
        "add wraps on {}",
        name(d)
    );
    let pow = t(&[3, -2, 2, 1, -1, -1, 2, 0])
        .binary(BinaryOp::Pow, &t(&[4, 3, 31, -5, -3, -4, -1, 0]))
        .unwrap();
    assert_eq!(
        pow.to_vec_blocking::<i32>().unwrap(),
        [81, -8, i32::MIN, 1, -1, 1, 0, 1],
        "pow on {}",
        name(d)
    );
}
per_backend!(integer_edge_cases_by_name);

fn integer_arithmetic_refuses_mixed_dtypes_and_activations(d: &Device) {
    let (i, f) = (
        Tensor::from_slice(d, &[1i32, 2], &[2]).unwrap(),
        Tensor::from_slice(d, &[1.0f32, 2.0], &[2]).unwrap(),
    );
    expect_err(i.add(&f), "DTYPE", &["add", "one dtype", "i32", "f32"], d);
    expect_err(f.mul(&i), "DTYPE", &["mul", "f32", "i32"], d);
    let u = i.cast(DType::U32).unwrap();
    expect_err(i.sub(&u), "DTYPE", &["sub", "i32", "u32"], d);
    expect_err(
        i.binary_act(BinaryOp::Add, UnaryOp::Relu, &i),
        "DTYPE",
        &["relu", "activations"],
        d,
    );
}
per_backend!(integer_arithmetic_refuses_mixed_dtypes_and_activations);

/// `op` over `values` in wide integers: `(value, index)`; a sum or product wrapped into `I`'s
/// range.
fn reduce_reference<I: Int>(op: ReduceOp, values: &[I]) -> (I, usize) {
    let wide: Vec<i64> = values.iter().map(|v| v.wide()).collect();
    let first_of = |best: i64| wide.iter().position(|&v| v == best).unwrap_or(0);
    match op {
        ReduceOp::Sum => (
            values.iter().fold(I::wrap(0), |s, &v| wrapping_sum(s, v)),
            0,
        ),
        ReduceOp::Max | ReduceOp::Argmax => {
            let best = wide.iter().copied().max().unwrap_or(I::MIN);
            (I::wrap(best), first_of(best))
        }
        ReduceOp::Min => (I::wrap(wide.iter().copied().min().unwrap_or(I::MAX)), 0),
        ReduceOp::Prod => (
            values
                .iter()
                .fold(I::wrap(1), |p, &v| wrapping_product(p, v)),
            0,
        ),
        ReduceOp::Mean => unreachable!("the mean is checked in f64"),
    }
}

/// The rows of `x` (row-major `shape`) along `axis` (every element with `None`), numbered
/// (outer, inner) with inner fastest, as the reductions give their results.
fn rows_along<I: Int>(x: &[I], shape: &[usize], axis: Option<usize>) -> Vec<Vec<I>> {
    let n = x.len();
    let (outer, len): (usize, usize) = match axis {
        Some(a) => (shape[..a].iter().product(), shape[a]),
        None => (1, n),
    };
    let inner = n / outer / len;
    (0..outer * inner)
        .map(|g| {
            (0..len)
                .map(|j| x[(g / inner) * len * inner + g % inner + j * inner])
                .collect()
        })
        .collect()
}

/// `op` over `axis` of `t`, which holds `x`, by every reduce variant of `d` against the
/// reference in wide integers.
fn check_op<I: Int>(d: &Device, t: &Tensor, x: &[I], op: ReduceOp, axis: Option<usize>) {
    let rows = rows_along(x, t.shape(), axis);
    for variant in d.variants("reduce") {
        let what = format!(
            "{} {} ({variant}) over {axis:?} of {:?} on {}",
            I::DTYPE,
            op.name(),
            t.shape(),
            name(d)
        );
        let out =
            unicompute::ops::reduce::reduce_variant(&d.queue(), op, t, axis, variant).unwrap();
        if op == ReduceOp::Argmax {
            let got = out.to_vec_blocking::<u32>().unwrap();
            let want: Vec<u32> = (rows.iter())
                .map(|r| reduce_reference(op, r).1 as u32)
                .collect();
            assert_eq!(got, want, "{what}");
        } else {
            assert_eq!(out.dtype(), I::DTYPE, "{what}");
            let want: Vec<I> = rows.iter().map(|r| reduce_reference(op, r).0).collect();
            assert_eq!(out.to_vec_blocking::<I>().unwrap(), want, "{what}");
        }
    }
}

/// Every reduction of `I` over each axis and over everything, on `d`.
fn check_reductions<I: Int>(d: &Device) {
    // A prime-length middle axis, long rows past one workgroup's chunk, and one long row.
    let cases: &[&[usize]] = &[&[7], &[3, 131, 5], &[2, 5000], &[70_001]];
    for (c, &shape) in cases.iter().enumerate() {
        let n: usize = shape.iter().product();
        // Small values too, so that sums both stay in range and wrap.
        let x: Vec<I> = if c % 2 == 0 {
            values(c as u64, n, I::MIN, I::MAX)
        } else {
            values(c as u64, n, I::MIN.max(-50), 50)
        };
        let t = Tensor::from_slice(d, &x, shape).unwrap();
        // Products of odd values: a product of many random integers would hold enough factors
        // of 2 to wrap to 0.
        let odd: Vec<I> = x.iter().map(|v| I::wrap(v.wide() | 1)).collect();
        let t_odd = Tensor::from_slice(d, &odd, shape).unwrap();
        let axes = (0..shape.len()).map(Some).chain([None]);
        for axis in axes {
            for op in [
                ReduceOp::Sum,
                ReduceOp::Max,
                ReduceOp::Min,
                ReduceOp::Argmax,
            ] {
                check_op(d, &t, &x, op, axis);
            }
            check_op(d, &t_odd, &odd, ReduceOp::Prod, axis);
            let mean = t.reduce(ReduceOp::Mean, axis).unwrap();
            assert_eq!(mean.dtype(), DType::F32, "the mean of integers is a float");
            let want: Vec<f64> = (rows_along(&x, shape, axis).iter())
                .map(|r| r.iter().map(|v| v.wide() as f64).sum::<f64>() / r.len() as f64)
                .collect();
            // Each value is rounded to f32 first: an error of up to an f32 ulp of the largest.
            let atol = x.iter().map(|v| v.wide().unsigned_abs()).max().unwrap_or(0) as f64
                * 2f64.powi(-23);
            common::assert_close(
                &mean.to_vec_blocking::<f32>().unwrap(),
                &want,
                1e-5,
                atol.max(1e-3),
                &format!(
                    "{} mean over {axis:?} of {shape:?} on {}",
                    I::DTYPE,
                    name(d)
                ),
            );
        }
    }
}

#[test]
fn integer_reductions_wrap_and_keep_their_dtype() {
    for d in devices() {
        check_reductions::<i32>(d);
        check_reductions::<u32>(d);
    }
    for d in int64_devices() {
        check_reductions::<i64>(d);
    }
}

fn integer_reductions_over_several_axes_and_empty_ones(d: &Device) {
    let x: Vec<i32> = (0..60).map(|i| i * 7 - 200).collect();
    let t = Tensor::from_slice(d, &x, &[3, 4, 5]).unwrap();
    let sum = t.reduce_axes(ReduceOp::Sum, &[0, 2], true).unwrap();
    assert_eq!(sum.shape(), [1, 4, 1]);
    let want: Vec<i32> = (0..4)
        .map(|j| {
            (0..3)
                .flat_map(|o| (0..5).map(move |i| o * 20 + j * 5 + i))
                .map(|at| x[at])
                .sum()
        })
        .collect();
    assert_eq!(
        sum.to_vec_blocking::<i32>().unwrap(),
        want,
        "sum over axes 0 and 2 on {}",
        name(d)
    );
    // A boolean mask stored as u32: any (max) and all (min) per row.
    let mask = Tensor::from_slice(d, &[0u32, 1, 0, 0, 0, 0, 1, 1, 1], &[3, 3]).unwrap();
    assert_eq!(
        mask.reduce(ReduceOp::Max, Some(1))
            .unwrap()
            .to_vec_blocking::<u32>()
            .unwrap(),
        [1, 0, 1],
        "any on {}",
        name(d)
    );
    assert_eq!(
        mask.reduce(ReduceOp::Min, Some(1))
            .unwrap()
            .to_vec_blocking::<u32>()
            .unwrap(),
        [0, 0, 1],
        "all on {}",
        name(d)
    );
    let empty = Tensor::from_slice(d, &[] as &[i32], &[2, 0]).unwrap();
    assert_eq!(
        empty
            .reduce(ReduceOp::Sum, Some(1))
            .unwrap()
            .to_vec_blocking::<i32>()
            .unwrap(),
        [0, 0],
        "the sum of nothing on {}",
        name(d)
    );
    let onnx = unicompute::ops::reduce::reduce_axes_with_identity(
        &d.queue(),
        ReduceOp::Max,
        &empty,
        &[1],
        false,
    )
    .unwrap();
    assert_eq!(
        onnx.to_vec_blocking::<i32>().unwrap(),
        [i32::MIN, i32::MIN],
        "ONNX's max of nothing, in i32, on {}",
        name(d)
    );
    expect_err(
        empty.reduce(ReduceOp::Max, Some(1)),
        "SHAPE",
        &["empty axis"],
        d,
    );
}
per_backend!(integer_reductions_over_several_axes_and_empty_ones);

/// Byte-sized products wrap in their dtype (200 * 3 * 7 = 4200 = 104 mod 256; -128 * -1 * 3
/// = 384 = -128 in i8), and the product of bools is "all".
fn byte_sized_and_bool_products_wrap(d: &Device) {
    let bytes = Tensor::from_slice(d, &[200u8, 3, 7, 255, 255, 2], &[2, 3]).unwrap();
    let signed = Tensor::from_slice(d, &[-128i8, -1, 3, 5, -7, 2], &[2, 3]).unwrap();
    let flags = [true, true, true, true, false, true];
    let bools = Tensor::from_bools(d, &flags, &[2, 3]).unwrap();
    let prod = |t: &Tensor| t.reduce(ReduceOp::Prod, Some(1)).unwrap();
    assert_eq!(
        prod(&bytes).to_vec_blocking::<u8>().unwrap(),
        [104, 2],
        "u8 on {}",
        name(d)
    );
    assert_eq!(
        prod(&signed).to_vec_blocking::<i8>().unwrap(),
        [-128, -70],
        "i8 on {}",
        name(d)
    );
    let all = prod(&bools);
    assert_eq!(all.dtype(), DType::Bool, "bool products are bool");
    assert_eq!(
        all.cast(DType::U8)
            .unwrap()
            .to_vec_blocking::<u8>()
            .unwrap(),
        [1, 0],
        "bool product on {}",
        name(d)
    );
}
per_backend!(byte_sized_and_bool_products_wrap);

/// Inclusive cumulative sums of `I` along `axis` of `shape`, wrapping, in wide integers.
fn cumsum_reference<I: Int>(x: &[I], shape: &[usize], axis: usize) -> Vec<I> {
    let (len, inner) = (shape[axis], shape[axis + 1..].iter().product::<usize>());
    let mut out = x.to_vec();
    for at in 0..x.len() {
        if (at / inner) % len > 0 {
            out[at] = wrapping_sum(out[at - inner], x[at]);
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
            assert_eq!(
                got.to_vec_blocking::<I>().unwrap(),
                want,
                "{} cumsum along {axis} of {shape:?} on {}",
                I::DTYPE,
                name(d)
            );
        }
    }
    // ONNX's exclusive and reverse sums of [1, 2, 3, 4]: [9, 7, 4, 0].
    let t = Tensor::from_slice(d, &[1, 2, 3, 4].map(|v| I::wrap(v)), &[4]).unwrap();
    let options = unicompute::ops::scan::CumsumOptions {
        exclusive: true,
        reverse: true,
    };
    assert_eq!(
        t.cumsum_with(0, options)
            .unwrap()
            .to_vec_blocking::<I>()
            .unwrap(),
        [9, 7, 4, 0].map(|v| I::wrap(v)),
        "exclusive reverse on {}",
        name(d)
    );
}

#[test]
fn integer_cumsum_wraps_along_every_axis() {
    for d in devices() {
        check_cumsum::<i32>(d);
        check_cumsum::<u32>(d);
    }
    for d in int64_devices() {
        check_cumsum::<i64>(d);
    }
}

#[test]
fn i64_edge_cases_by_name() {
    for d in int64_devices() {
        let t = |v: &[i64]| Tensor::from_slice(d, v, &[v.len()]).unwrap();
        let div = t(&[7, -7, 7, -7, i64::MIN, 5, 0, i64::MIN])
            .div(&t(&[2, 2, -2, -2, -1, 0, 0, 1]))
            .unwrap();
        assert_eq!(
            div.to_vec_blocking::<i64>().unwrap(),
            [3, -3, -3, 3, i64::MIN, 5, 0, i64::MIN],
            "truncation, MIN / -1, x / 0 on {}",
            name(d)
        );
        let add = t(&[i64::MAX, i64::MIN, 1 << 40])
            .add(&t(&[1, -1, 1 << 40]))
            .unwrap();
        assert_eq!(
            add.to_vec_blocking::<i64>().unwrap(),
            [i64::MIN, i64::MAX, 1 << 41],
            "add wraps on {}",
            name(d)
        );
        let mul = t(&[1 << 32, i64::MAX, 3_000_000_000])
            .mul(&t(&[1 << 32, 2, 3_000_000_000]))
            .unwrap();
        assert_eq!(
            mul.to_vec_blocking::<i64>().unwrap(),
            [0, -2, 9_000_000_000_000_000_000],
            "mul wraps on {}",
            name(d)
        );
        let pow = t(&[3, -2, 2, 1, -1, -1, 2, 0, 10])
            .binary(BinaryOp::Pow, &t(&[4, 3, 63, -5, -3, -4, -1, 0, 18]))
            .unwrap();
        assert_eq!(
            pow.to_vec_blocking::<i64>().unwrap(),
            [81, -8, i64::MIN, 1, -1, 1, 0, 1, 1_000_000_000_000_000_000],
            "pow on {}",
            name(d)
        );
        let (lo, hi) = (t(&[5, i64::MIN, -3]), t(&[-5, i64::MAX, -3]));
        assert_eq!(
            lo.binary(BinaryOp::Min, &hi)
                .unwrap()
                .to_vec_blocking::<i64>()
                .unwrap(),
            [-5, i64::MIN, -3],
            "minimum on {}",
            name(d)
        );
        assert_eq!(
            lo.binary(BinaryOp::Max, &hi)
                .unwrap()
                .to_vec_blocking::<i64>()
                .unwrap(),
            [5, i64::MAX, -3],
            "maximum on {}",
            name(d)
        );
        let big = t(&[i64::MAX, i64::MAX, 3]);
        assert_eq!(
            big.reduce(ReduceOp::Sum, None)
                .unwrap()
                .to_vec_blocking::<i64>()
                .unwrap(),
            [i64::MAX.wrapping_add(i64::MAX).wrapping_add(3)],
            "sum wraps in i64 on {}",
            name(d)
        );
        let i = Tensor::from_slice(d, &[1i32, 2], &[2]).unwrap();
        expect_err(t(&[1, 2]).add(&i), "DTYPE", &["add", "i64", "i32"], d);
        expect_err(t(&[1, 2]).relu(), "DTYPE", &["relu"], d);
    }
}

/// Rust's `as` from i64 to `dtype`, and from each dtype's values to i64, against casts
/// written here; over the edges and seeded values of the whole range.
#[test]
fn i64_casts_follow_rust_as() {
    use unicompute::{bf16, f16};
    let x: Vec<i64> = values(7, 301, i64::MIN, i64::MAX)
        .into_iter()
        .chain([1 << 24, (1 << 24) + 1, -(1 << 53) - 1, 65_519, 65_521])
        .collect();
    let f: Vec<f32> = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        9.3e18,
        -9.3e18,
        9.2e18,
        -0.5,
        2.9,
        -2.9,
        1e10,
        0.0,
    ]
    .into_iter()
    .chain(common::random(3, 200, -1e19, 1e19))
    .collect();
    let i: Vec<i32> = values(8, 100, i64::from(i32::MIN), i64::from(i32::MAX));
    let u: Vec<u32> = values(9, 100, 0, i64::from(u32::MAX));
    for d in int64_devices() {
        let tx = Tensor::from_slice(d, &x, &[x.len()]).unwrap();
        let to = |dtype: DType| tx.cast(dtype).unwrap();
        assert_eq!(
            to(DType::I64).to_vec_blocking::<i64>().unwrap(),
            x,
            "i64 -> i64 on {}",
            name(d)
        );
        assert_eq!(
            to(DType::I32).to_vec_blocking::<i32>().unwrap(),
            x.iter().map(|&v| v as i32).collect::<Vec<_>>(),
            "i64 -> i32 on {}",
            name(d)
        );
        assert_eq!(
            to(DType::U32).to_vec_blocking::<u32>().unwrap(),
            x.iter().map(|&v| v as u32).collect::<Vec<_>>(),
            "i64 -> u32 on {}",
            name(d)
        );
        let bits = |v: Vec<f32>| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(to(DType::F32).to_vec_blocking::<f32>().unwrap()),
            bits(x.iter().map(|&v| v as f32).collect()),
            "i64 -> f32 on {}",
            name(d)
        );
        let want16: Vec<f16> = x.iter().map(|&v| f16::from_f32(v as f32)).collect();
        assert_eq!(
            to(DType::F16).to_vec_blocking::<f16>().unwrap(),
            want16,
            "i64 -> f16 on {}",
            name(d)
        );
        let want_b: Vec<bf16> = x.iter().map(|&v| bf16::from_f32(v as f32)).collect();
        assert_eq!(
            to(DType::BF16).to_vec_blocking::<bf16>().unwrap(),
            want_b,
            "i64 -> bf16 on {}",
            name(d)
        );
        let from = |t: Tensor| {
            t.cast(DType::I64)
                .unwrap()
                .to_vec_blocking::<i64>()
                .unwrap()
        };
        assert_eq!(
            from(Tensor::from_slice(d, &f, &[f.len()]).unwrap()),
            f.iter().map(|&v| v as i64).collect::<Vec<_>>(),
            "f32 -> i64 on {}",
            name(d)
        );
        assert_eq!(
            from(Tensor::from_slice(d, &i, &[i.len()]).unwrap()),
            i.iter().map(|&v| i64::from(v)).collect::<Vec<_>>(),
            "i32 -> i64 on {}",
            name(d)
        );
        assert_eq!(
            from(Tensor::from_slice(d, &u, &[u.len()]).unwrap()),
            u.iter().map(|&v| i64::from(v)).collect::<Vec<_>>(),
            "u32 -> i64 on {}",
            name(d)
        );
        let h: Vec<f16> = f.iter().map(|&v| f16::from_f32(v)).collect();
        assert_eq!(
            from(Tensor::from_slice(d, &h, &[h.len()]).unwrap()),
            h.iter().map(|v| v.to_f32() as i64).collect::<Vec<_>>(),
            "f16 -> i64 on {}",
            name(d)
        );
        // A strided source: every other element of a transposed view.
        let view = Tensor::from_slice(d, &x[..300], &[20, 15])
            .unwrap()
            .t()
            .unwrap()
            .slice(0, 1..15)
            .unwrap();
        let want: Vec<f32> = (1..15)
            .flat_map(|c| (0..20).map(move |r| r * 15 + c))
            .map(|at| x[at] as f32)
            .collect();
        assert_eq!(
            bits(
                view.cast(DType::F32)
                    .unwrap()
                    .to_vec_blocking::<f32>()
                    .unwrap()
            ),
            bits(want),
            "strided i64 -> f32 on {}",
            name(d)
        );
    }
}

/// Copies, `where`, gather, flip and concat move i64 elements whole on every device (as pairs
/// of words, with or without `shader-int64`), from transposed, sliced and broadcast views.
fn i64_data_moves_whole_on_every_device(d: &Device) {
    check_moves(d);
}
per_backend!(i64_data_moves_whole_on_every_device);

/// Copies, `where`, gather, flip and concat of i64 on `d`, against the elements picked here.
fn check_moves(d: &Device) {
    let (x, y): (Vec<i64>, Vec<i64>) = (
        values(11, 7 * 13, i64::MIN, i64::MAX),
        values(12, 13, i64::MIN, i64::MAX),
    );
    let x = &x[..];
    let tx = Tensor::from_slice(d, x, &[7, 13]).unwrap();
    assert_eq!(
        tx.to_vec_blocking::<i64>().unwrap(),
        x,
        "round trip on {}",
        name(d)
    );
    // Transposed then copied: element (c, r) is x[r * 13 + c].
    let tt = tx.t().unwrap().contiguous().unwrap();
    let want: Vec<i64> = (0..13)
        .flat_map(|c| (0..7).map(move |r| r * 13 + c))
        .map(|at| x[at])
        .collect();
    assert_eq!(
        tt.to_vec_blocking::<i64>().unwrap(),
        want,
        "transposed copy on {}",
        name(d)
    );
    let sliced = tx.slice(1, 3..10).unwrap().contiguous().unwrap();
    let want: Vec<i64> = (0..7)
        .flat_map(|r| (3..10).map(move |c| r * 13 + c))
        .map(|at| x[at])
        .collect();
    assert_eq!(
        sliced.to_vec_blocking::<i64>().unwrap(),
        want,
        "sliced copy on {}",
        name(d)
    );
    // where: a broadcast row of y against x, by a u32 and an i64 condition.
    let cond: Vec<u32> = (0..7 * 13).map(|i| (i % 3 == 0) as u32).collect();
    let tc = Tensor::from_slice(d, &cond, &[7, 13]).unwrap();
    let ty = Tensor::from_slice(d, &y, &[13]).unwrap();
    let want: Vec<i64> = (0..7 * 13)
        .map(|i| if cond[i] != 0 { x[i] } else { y[i % 13] })
        .collect();
    assert_eq!(
        tc.select(&tx, &ty)
            .unwrap()
            .to_vec_blocking::<i64>()
            .unwrap(),
        want,
        "where on {}",
        name(d)
    );
    // An i64 condition: true wherever the value is non-zero (also past the low word).
    let c64 = Tensor::from_slice(d, &[0i64, 1 << 32, -1, 0, i64::MIN, 2], &[6]).unwrap();
    let (ones, zeros) = (
        Tensor::from_slice(d, &[1u32], &[1]).unwrap(),
        Tensor::from_slice(d, &[0u32], &[1]).unwrap(),
    );
    assert_eq!(
        c64.select(&ones, &zeros)
            .unwrap()
            .to_vec_blocking::<u32>()
            .unwrap(),
        [0, 1, 1, 0, 1, 1],
        "an i64 condition on {}",
        name(d)
    );
    // gather along each axis: negative indices from the end, out-of-range ones giving 0
    // (IndexMode::Fill).
    let fill = unicompute::ops::gather::IndexMode::Fill;
    let idx = Tensor::from_slice(d, &[6i32, 0, -1, 3, 7], &[5]).unwrap();
    let g0 = tx
        .gather_with(0, &idx, fill)
        .unwrap()
        .to_vec_blocking::<i64>()
        .unwrap();
    let want: Vec<i64> = [Some(6), Some(0), Some(6), Some(3), None]
        .iter()
        .flat_map(|&r| (0..13).map(move |c| r.map_or(0, |r: usize| x[r * 13 + c])))
        .collect();
    assert_eq!(g0, want, "gather along 0 on {}", name(d));
    let g1 = tx
        .gather_with(1, &idx, fill)
        .unwrap()
        .to_vec_blocking::<i64>()
        .unwrap();
    let want: Vec<i64> = (0..7)
        .flat_map(|r| [6, 0, 12, 3, 7].into_iter().map(move |c| x[r * 13 + c]))
        .collect();
    assert_eq!(g1, want, "gather along 1 on {}", name(d));
    // i64 indices past u32 (out of range) and negative, without 64-bit arithmetic.
    let idx64 =
        Tensor::from_slice(d, &[12i64, 1 << 32, -1, 0, (1 << 32) + 3, -13, -14], &[7]).unwrap();
    let picks = [Some(12), None, Some(12), Some(0), None, Some(0), None];
    let want: Vec<i64> = (0..7)
        .flat_map(|r| picks.map(|c| c.map_or(0, |c| x[r * 13 + c])))
        .collect();
    assert_eq!(
        tx.gather_with(1, &idx64, fill)
            .unwrap()
            .to_vec_blocking::<i64>()
            .unwrap(),
        want,
        "gather by i64 indices on {}",
        name(d)
    );
    let flipped = tx.flip(1).unwrap().to_vec_blocking::<i64>().unwrap();
    let want: Vec<i64> = (0..7)
        .flat_map(|r| (0..13).rev().map(move |c| x[r * 13 + c]))
        .collect();
    assert_eq!(flipped, want, "flip on {}", name(d));
    let joined = Tensor::concat(&[&tx, &ty.reshape(&[1, 13]).unwrap()], 0).unwrap();
    assert_eq!(
        joined.to_vec_blocking::<i64>().unwrap(),
        x.iter().chain(&y).copied().collect::<Vec<_>>(),
        "concat along 0 on {}",
        name(d)
    );
    let joined = Tensor::concat(&[&tx, &tx.slice(1, 0..2).unwrap()], 1).unwrap();
    let want: Vec<i64> = (0..7)
        .flat_map(|r| (0..15).map(move |c| x[r * 13 + c % 13]))
        .collect();
    assert_eq!(
        joined.to_vec_blocking::<i64>().unwrap(),
        want,
        "concat along 1 on {}",
        name(d)
    );
}

#[test]
fn i64_reductions_over_several_axes_and_empty_ones() {
    for d in int64_devices() {
        let x: Vec<i64> = (0..60)
            .map(|i| (i - 30) * 1_000_000_007 * 1_000_003)
            .collect();
        let t = Tensor::from_slice(d, &x, &[3, 4, 5]).unwrap();
        let sum = t.reduce_axes(ReduceOp::Sum, &[0, 2], true).unwrap();
        assert_eq!(sum.shape(), [1, 4, 1]);
        let want: Vec<i64> = (0..4)
            .map(|j| {
                (0..3)
                    .flat_map(|o| (0..5).map(move |i| o * 20 + j * 5 + i))
                    .map(|at| x[at])
                    .sum()
            })
            .collect();
        assert_eq!(
            sum.to_vec_blocking::<i64>().unwrap(),
            want,
            "sum over axes 0 and 2 on {}",
            name(d)
        );
        let max = t.reduce_axes(ReduceOp::Max, &[1], false).unwrap();
        let want: Vec<i64> = (0..3)
            .flat_map(|o| (0..5).map(move |i| (o, i)))
            .map(|(o, i)| (0..4).map(|j| x[o * 20 + j * 5 + i]).max().unwrap())
            .collect();
        assert_eq!(
            max.to_vec_blocking::<i64>().unwrap(),
            want,
            "max over axis 1 on {}",
            name(d)
        );
        let empty = Tensor::from_slice(d, &[] as &[i64], &[2, 0]).unwrap();
        assert_eq!(
            empty
                .reduce(ReduceOp::Sum, Some(1))
                .unwrap()
                .to_vec_blocking::<i64>()
                .unwrap(),
            [0, 0],
            "the sum of nothing on {}",
            name(d)
        );
        let onnx = unicompute::ops::reduce::reduce_axes_with_identity(
            &d.queue(),
            ReduceOp::Min,
            &empty,
            &[1],
            false,
        )
        .unwrap();
        assert_eq!(
            onnx.to_vec_blocking::<i64>().unwrap(),
            [i64::MAX, i64::MAX],
            "ONNX's min of nothing, in i64, on {}",
            name(d)
        );
        expect_err(
            empty.reduce(ReduceOp::Max, Some(1)),
            "SHAPE",
            &["empty axis"],
            d,
        );
        let mean = t.reduce(ReduceOp::Mean, Some(2)).unwrap();
        assert_eq!(mean.dtype(), DType::F32, "the mean of i64 is f32");
    }
}

/// argmin of integers (as the argmax of `!x`, exact at MIN and MAX) and gather by i64
/// indices, out-of-range ones (past i32 too) giving 0.
#[test]
fn integer_argmin_and_i64_indices() {
    for d in int64_devices() {
        let x: Vec<i64> = vec![5, i64::MIN, 7, i64::MIN, i64::MAX, -1, 0, i64::MAX];
        let t = Tensor::from_slice(d, &x, &[2, 4]).unwrap();
        let first = unicompute::ops::reduce::arg_reduce(
            &d.queue(),
            &t,
            1,
            unicompute::ops::reduce::ArgOptions {
                min: true,
                last: false,
            },
        )
        .unwrap();
        assert_eq!(
            first.to_vec_blocking::<u32>().unwrap(),
            [1, 1],
            "argmin of i64 on {}",
            name(d)
        );
        let last = unicompute::ops::reduce::arg_reduce(
            &d.queue(),
            &t,
            1,
            unicompute::ops::reduce::ArgOptions {
                min: true,
                last: true,
            },
        )
        .unwrap();
        assert_eq!(
            last.to_vec_blocking::<u32>().unwrap(),
            [3, 1],
            "last argmin of i64 on {}",
            name(d)
        );
        let u = Tensor::from_slice(d, &[3u32, 0, u32::MAX, 0], &[4]).unwrap();
        let got = unicompute::ops::reduce::arg_reduce(
            &d.queue(),
            &u,
            0,
            unicompute::ops::reduce::ArgOptions {
                min: true,
                last: true,
            },
        )
        .unwrap();
        assert_eq!(
            got.to_vec_blocking::<u32>().unwrap(),
            [3],
            "last argmin of u32 on {}",
            name(d)
        );
        let i = Tensor::from_slice(d, &[3i32, i32::MIN, i32::MAX, i32::MIN], &[4]).unwrap();
        let got = unicompute::ops::reduce::arg_reduce(
            &d.queue(),
            &i,
            0,
            unicompute::ops::reduce::ArgOptions {
                min: true,
                last: false,
            },
        )
        .unwrap();
        assert_eq!(
            got.to_vec_blocking::<u32>().unwrap(),
            [1],
            "argmin of i32 on {}",
            name(d)
        );
        let idx = Tensor::from_slice(
            d,
            &[3i64, 0, -1, 4, 1 << 32, i64::MIN, i64::MAX, 2, -4, -5],
            &[10],
        )
        .unwrap();
        let got = t
            .gather_with(1, &idx, unicompute::ops::gather::IndexMode::Fill)
            .unwrap()
            .to_vec_blocking::<i64>()
            .unwrap();
        let picks = [
            Some(3),
            Some(0),
            Some(3),
            None,
            None,
            None,
            None,
            Some(2),
            Some(0),
            None,
        ];
        let want: Vec<i64> = (0..2)
            .flat_map(|r| picks.map(|c| c.map_or(0, |c| x[r * 4 + c])))
            .collect();
        assert_eq!(got, want, "gather by i64 indices on {}", name(d));
    }
}
