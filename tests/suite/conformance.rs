//! Conformance table: every op on every available backend against an f64 reference, on
//! seeded random inputs, odd shapes and poisoned outputs (devices open with
//! `poison_uninitialized`, so an element a kernel misses reads as -1.1e36).

use crate::common::{
    assert_close, devices, devices_and_variants, expect_err, gather, name, random, read,
    still_works, tensor,
};
use unicompute::ops::gather::IndexMode;
use unicompute::ops::{self, softmax::reference_row};
use unicompute::ops::{
    AttentionParams, Conv2dParams, NormKind, NormParams, Pool2dParams, PoolKind,
};
use unicompute::{BinaryOp, DType, Device, ReduceOp, Tensor, UnaryOp};

/// Shapes with 1, primes, and sizes that are no multiple of the 256-wide workgroups.
const SHAPES: &[&[usize]] = &[&[1], &[7], &[257], &[3, 5, 11], &[2, 1, 131]];

/// Input range where `op` is defined and well conditioned.
fn domain(op: UnaryOp) -> (f32, f32) {
    match op {
        UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Rsqrt => (0.01, 10.0),
        UnaryOp::Exp => (-20.0, 20.0),
        _ => (-8.0, 8.0),
    }
}

#[test]
fn unary_ops_match_reference() {
    for d in devices() {
        let q = d.queue();
        for (k, op) in UnaryOp::ALL.into_iter().enumerate() {
            for (s, shape) in SHAPES.iter().enumerate() {
                let seed = (k * 100 + s) as u64;
                let n: usize = shape.iter().product();
                let (lo, hi) = domain(op);
                let x = random(seed, n, lo, hi);
                let got = read(&ops::elementwise::unary(&q, op, &tensor(d, &x, shape)).unwrap());
                let want: Vec<f64> = x.iter().map(|&v| op.eval(f64::from(v))).collect();
                assert_close(
                    &got,
                    &want,
                    2e-5,
                    1e-6,
                    &format!("{} {shape:?} on {} seed {seed}", op.name(), name(d)),
                );
            }
        }
    }
}

/// Distance from `got` to `want` in units in the last place of `want` rounded to f32.
fn ulps(got: f32, want: f64) -> f64 {
    let w = want as f32;
    let ulp = f64::from(f32::from_bits(w.abs().to_bits() + 1) - w.abs());
    (f64::from(got) - want).abs() / ulp
}

#[test]
fn sin_and_cos_are_within_2_ulp_far_from_zero() {
    use std::f32::consts::{FRAC_PI_2, PI, TAU};
    let mut x = random(8200, 4099, -1e4, 1e4);
    x.extend(random(8201, 1021, -10.0, 10.0));
    x.extend([
        0.0, 1e-20, FRAC_PI_2, PI, -PI, TAU, 100.0, 355.0, 9999.999, -1e4,
    ]);
    for d in devices() {
        for op in [UnaryOp::Sin, UnaryOp::Cos] {
            let got = read(&tensor(d, &x, &[x.len()]).unary(op).unwrap());
            let worst = got
                .iter()
                .zip(&x)
                .map(|(&g, &v)| (ulps(g, op.eval(f64::from(v))), v))
                .fold((0.0, 0.0f32), |a, b| if b.0 > a.0 { b } else { a });
            assert!(
                worst.0 <= 2.0,
                "{} on {}: {} ulp at x = {}",
                op.name(),
                name(d),
                worst.0,
                worst.1
            );
        }
    }
}

#[test]
fn erf_keeps_its_precision_near_zero_and_saturates() {
    // Near zero erf(x) ~ 1.13 x, where 1 - erfc(x) would lose every digit.
    let mut x = random(8100, 301, -1e-3, 1e-3);
    x.extend(random(8101, 301, -0.7, 0.7));
    x.extend(random(8102, 97, -6.0, 6.0));
    x.extend([
        0.0,
        -0.0,
        0.49999997,
        0.5,
        -0.5,
        1e-30,
        20.0,
        -20.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ]);
    let want: Vec<f64> = x.iter().map(|&v| libm::erf(f64::from(v))).collect();
    for d in devices() {
        let got = read(&tensor(d, &x, &[x.len()]).unary(UnaryOp::Erf).unwrap());
        assert_close(&got, &want, 1e-6, 1e-30, &format!("erf on {}", name(d)));
    }
}

#[test]
fn nary_sum_max_and_min_broadcast_across_every_input() {
    let shapes: [&[usize]; 3] = [&[2, 1, 3], &[4, 1], &[3]];
    let data: Vec<Vec<f32>> = shapes
        .iter()
        .enumerate()
        .map(|(i, s)| random(8300 + i as u64, s.iter().product(), -3.0, 3.0))
        .collect();
    // The broadcast result [2, 4, 3]: element (i, j, k) reads a[i, 0, k], b[j, 0], c[k].
    let at = |i: usize, j: usize, k: usize| {
        [
            f64::from(data[0][i * 3 + k]),
            f64::from(data[1][j]),
            f64::from(data[2][k]),
        ]
    };
    for d in devices() {
        let q = d.queue();
        let ts: Vec<Tensor> = shapes
            .iter()
            .zip(&data)
            .map(|(s, x)| tensor(d, x, s))
            .collect();
        let refs: Vec<&Tensor> = ts.iter().collect();
        for (op, f) in [
            (
                BinaryOp::Add,
                (|v: [f64; 3]| v.iter().sum()) as fn([f64; 3]) -> f64,
            ),
            (BinaryOp::Max, |v| {
                v.iter().cloned().fold(f64::MIN, f64::max)
            }),
            (BinaryOp::Min, |v| {
                v.iter().cloned().fold(f64::MAX, f64::min)
            }),
        ] {
            let got = ops::elementwise::nary(&q, op, &refs).unwrap();
            assert_eq!(got.shape(), [2, 4, 3]);
            let want: Vec<f64> = (0..2)
                .flat_map(|i| (0..4).flat_map(move |j| (0..3).map(move |k| (i, j, k))))
                .map(|(i, j, k)| f(at(i, j, k)))
                .collect();
            assert_close(
                &read(&got),
                &want,
                1e-6,
                1e-6,
                &format!("n-ary {} on {}", op.name(), name(d)),
            );
        }
        assert_eq!(
            read(&ops::elementwise::nary(&q, BinaryOp::Max, &refs[2..]).unwrap()),
            data[2],
            "one input is itself"
        );
        let err = ops::elementwise::nary(&q, BinaryOp::Sub, &refs)
            .unwrap_err()
            .to_string();
        assert!(err.contains("order of its inputs would matter"), "{err}");
        assert!(ops::elementwise::nary(&q, BinaryOp::Add, &[])
            .unwrap_err()
            .to_string()
            .contains("at least one"));
    }
}

#[test]
fn unary_on_strided_views() {
    for d in devices() {
        let x = random(7, 6 * 35, -3.0, 3.0);
        let t = tensor(d, &x, &[6, 5, 7])
            .permute(&[2, 0, 1])
            .unwrap()
            .slice(1, 1..5)
            .unwrap();
        let got = read(&t.unary(UnaryOp::Tanh).unwrap());
        let view = gather(&x, t.shape(), t.strides(), t.offset());
        let want: Vec<f64> = view.iter().map(|&v| f64::from(v).tanh()).collect();
        assert_close(
            &got,
            &want,
            2e-5,
            1e-6,
            &format!("tanh of a permuted slice on {}", name(d)),
        );
    }
}

#[test]
fn binary_ops_broadcast_like_numpy() {
    let cases: &[(&[usize], &[usize], &[usize])] = &[
        (&[1], &[13], &[13]),
        (&[257], &[257], &[257]),
        (&[5, 1, 7], &[1, 3, 1], &[5, 3, 7]),
        (&[4, 1], &[4, 6], &[4, 6]),
        (&[2, 3, 4], &[4], &[2, 3, 4]),
    ];
    for d in devices() {
        let q = d.queue();
        for (k, op) in BinaryOp::ALL.into_iter().enumerate() {
            for (c, &(sa, sb, so)) in cases.iter().enumerate() {
                let seed = (k * 10 + c) as u64;
                let (na, nb): (usize, usize) = (sa.iter().product(), sb.iter().product());
                let (lo, hi) = if op == BinaryOp::Pow {
                    (0.2, 3.0)
                } else {
                    (-4.0, 4.0)
                };
                let (a, b) = (random(seed, na, lo, hi), random(seed + 1000, nb, -3.0, 3.0));
                let got = read(
                    &ops::elementwise::binary(&q, op, &tensor(d, &a, sa), &tensor(d, &b, sb))
                        .unwrap(),
                );
                // Reference broadcast: index both inputs with stride 0 on broadcast dims.
                let ta = tensor(&devices()[0], &a, sa).broadcast_to(so).unwrap();
                let tb = tensor(&devices()[0], &b, sb).broadcast_to(so).unwrap();
                let av = gather(&a, so, ta.strides(), 0);
                let bv = gather(&b, so, tb.strides(), 0);
                let want: Vec<f64> = av
                    .iter()
                    .zip(&bv)
                    .map(|(&x, &y)| op.eval(f64::from(x), f64::from(y)))
                    .collect();
                assert_close(
                    &got,
                    &want,
                    2e-5,
                    1e-6,
                    &format!(
                        "{} {sa:?} with {sb:?} on {} seed {seed}",
                        op.name(),
                        name(d)
                    ),
                );
            }
        }
    }
}

#[test]
fn pow_of_negative_bases_with_integer_exponents() {
    for d in devices() {
        let a = [-2.0f32, -3.0, -0.5, -2.0, 0.0, 0.0, 2.0];
        let b = [3.0f32, 2.0, -1.0, 0.5, 2.0, -1.0, 0.0];
        let got = read(
            &tensor(d, &a, &[7])
                .binary(BinaryOp::Pow, &tensor(d, &b, &[7]))
                .unwrap(),
        );
        let want: Vec<f64> = a
            .iter()
            .zip(&b)
            .map(|(&x, &y)| f64::from(x).powf(f64::from(y)))
            .collect();
        assert_close(&got, &want, 1e-5, 0.0, &format!("pow on {}", name(d)));
    }
}

#[test]
fn fused_binary_activation_matches_two_steps() {
    for d in devices() {
        let q = d.queue();
        for (k, act) in [
            UnaryOp::Relu,
            UnaryOp::GeluErf,
            UnaryOp::GeluTanh,
            UnaryOp::Silu,
            UnaryOp::Sigmoid,
        ]
        .into_iter()
        .enumerate()
        {
            let seed = 500 + k as u64;
            let (a, b) = (
                random(seed, 3 * 97, -4.0, 4.0),
                random(seed + 1, 97, -4.0, 4.0),
            );
            let got = read(
                &ops::elementwise::binary_act(
                    &q,
                    BinaryOp::Add,
                    act,
                    &tensor(d, &a, &[3, 97]),
                    &tensor(d, &b, &[97]),
                )
                .unwrap(),
            );
            let want: Vec<f64> = a
                .iter()
                .enumerate()
                .map(|(i, &x)| act.eval(f64::from(x) + f64::from(b[i % 97])))
                .collect();
            assert_close(
                &got,
                &want,
                2e-5,
                1e-6,
                &format!("add+{} on {} seed {seed}", act.name(), name(d)),
            );
        }
    }
}

#[test]
fn nan_and_inf_propagate() {
    let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.5, -2.5];
    for d in &devices_and_variants() {
        let x = tensor(d, &specials, &[5]);
        for op in [
            UnaryOp::Neg,
            UnaryOp::Abs,
            UnaryOp::Exp,
            UnaryOp::Relu,
            UnaryOp::Sqrt,
            UnaryOp::Tanh,
            UnaryOp::Sigmoid,
            UnaryOp::Log,
        ] {
            let got = read(&x.unary(op).unwrap());
            let want: Vec<f64> = specials.iter().map(|&v| op.eval(f64::from(v))).collect();
            assert_close(
                &got,
                &want,
                2e-5,
                1e-6,
                &format!("{} of NaN/inf on {}", op.name(), name(d)),
            );
        }
        let ones = tensor(d, &[2.0f32; 5], &[5]);
        for op in [
            BinaryOp::Add,
            BinaryOp::Mul,
            BinaryOp::Div,
            BinaryOp::Max,
            BinaryOp::Min,
        ] {
            let got = read(&x.binary(op, &ones).unwrap());
            let want: Vec<f64> = specials
                .iter()
                .map(|&v| op.eval(f64::from(v), 2.0))
                .collect();
            assert_close(
                &got,
                &want,
                1e-6,
                0.0,
                &format!("{} with NaN/inf on {}", op.name(), name(d)),
            );
        }
        let s = read(&x.sum(None).unwrap());
        assert!(s[0].is_nan(), "sum with a NaN on {} gave {}", name(d), s[0]);
        let m = read(&x.reduce(ReduceOp::Max, None).unwrap());
        assert!(m[0].is_nan(), "max with a NaN on {} gave {}", name(d), m[0]);
    }
}

#[test]
fn elementwise_past_one_dispatch_dimension() {
    // 65,535 workgroups of 256 is the largest one-dimensional dispatch: go past it.
    let n = 65_535 * 256 + 7;
    let a = random(42, n, -2.0, 2.0);
    let b = random(43, 1, 0.5, 1.5);
    for d in devices() {
        let got = read(
            &ops::elementwise::binary_act(
                &d.queue(),
                BinaryOp::Mul,
                UnaryOp::Relu,
                &tensor(d, &a, &[n]),
                &tensor(d, &b, &[1]),
            )
            .unwrap(),
        );
        let want: Vec<f64> = a
            .iter()
            .map(|&x| (f64::from(x) * f64::from(b[0])).max(0.0))
            .collect();
        assert_close(
            &got,
            &want,
            1e-6,
            0.0,
            &format!("mul+relu over {n} elements on {}", name(d)),
        );
    }
}

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

/// Every device with each of its reduction variants.
fn reduce_variants() -> Vec<(&'static Device, &'static str)> {
    devices()
        .iter()
        .flat_map(|d| d.variants("reduce").into_iter().map(move |v| (d, v)))
        .collect()
}

#[test]
fn reductions_over_each_axis_and_all() {
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
    for (d, v) in reduce_variants() {
        let q = d.queue();
        for (k, op) in ReduceOp::ALL.into_iter().enumerate() {
            for (c, &(shape, axis)) in cases.iter().enumerate() {
                let seed = (k * 50 + c) as u64;
                let n: usize = shape.iter().product();
                let x = random(seed, n, -10.0, 10.0);
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

#[test]
fn argmax_picks_first_maximum_and_nan() {
    for (d, v) in reduce_variants() {
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

#[test]
fn sum_of_2_pow_24_elements_is_accurate() {
    let n = 1 << 24;
    let x = random(99, n, 0.0, 1.0);
    let want: f64 = x.iter().map(|&v| f64::from(v)).sum();
    for (d, v) in reduce_variants() {
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

/// Rows of every length class (1, primes, past one workgroup's 256 and 1024, many rows) with
/// values far from zero, as `(shape, low, high)`.
const ROW_CASES: &[(&[usize], f32, f32)] = &[
    (&[1, 1], -1.0, 1.0),
    (&[3, 7], -5.0, 5.0),
    (&[5, 1000], 500.0, 1000.0),
    (&[2, 3, 257], -80.0, 80.0),
    (&[1, 4099], -3.0, 3.0),
    (&[1100, 300], -20.0, 20.0),
];

/// Rows of specials: a `+inf` or a NaN makes the whole row NaN (exp(inf - inf)), a row of
/// `-inf` too.
const SPECIAL_ROWS: [f32; 9] = [
    1.0,
    f32::INFINITY,
    2.0,
    0.5,
    f32::NAN,
    3.0,
    f32::NEG_INFINITY,
    f32::NEG_INFINITY,
    f32::NEG_INFINITY,
];

/// The f64 reference of `row` applied to each row of `x` (rows of `cols`).
fn by_rows(x: &[f32], cols: usize, row: fn(&[f64]) -> Vec<f64>) -> Vec<f64> {
    x.chunks(cols)
        .flat_map(|r| row(&r.iter().map(|&v| f64::from(v)).collect::<Vec<_>>()))
        .collect()
}

#[test]
fn log_softmax_is_overflow_safe_and_keeps_small_probabilities() {
    use unicompute::ops::log_softmax::reference_row as log_reference;
    for d in &devices_and_variants() {
        for (c, &(shape, lo, hi)) in ROW_CASES.iter().enumerate() {
            let x = random(c as u64 + 900, shape.iter().product(), lo, hi);
            let got = read(&tensor(d, &x, shape).log_softmax().unwrap());
            // (x - max) - log sum: rounded at the output's magnitude, not the input's.
            assert_close(
                &got,
                &by_rows(&x, *shape.last().unwrap(), log_reference),
                1e-5,
                1e-6,
                &format!("log_softmax {shape:?} in [{lo}, {hi}) on {}", name(d)),
            );
        }
        // ONNX's test_logsoftmax_large_number: both rows give the same, to f32's last bits.
        let x = [0.0, 1.0, 2.0, 3.0, 10_000.0, 10_001.0, 10_002.0, 10_003.0];
        let got = read(&tensor(d, &x, &[2, 4]).log_softmax().unwrap());
        let want = [-3.4401896, -2.4401896, -1.4401896, -0.44018966].repeat(2);
        assert_close(
            &got,
            &want,
            1e-6,
            0.0,
            &format!("log_softmax of large numbers on {}", name(d)),
        );
        // Probabilities of e^-100 are 0 after a softmax in f32; their logs are not.
        let x = [0.0, -100.0, -200.0, 50.0, f32::NEG_INFINITY, 49.0];
        let got = read(&tensor(d, &x, &[2, 3]).log_softmax().unwrap());
        assert_close(
            &got,
            &by_rows(&x, 3, log_reference),
            1e-6,
            1e-5,
            &format!("log_softmax of tiny probabilities on {}", name(d)),
        );
        let got = read(&tensor(d, &SPECIAL_ROWS, &[3, 3]).log_softmax().unwrap());
        let want = by_rows(&SPECIAL_ROWS, 3, log_reference);
        assert!(
            want.iter().all(|w| w.is_nan()),
            "the reference makes these rows NaN"
        );
        assert_close(
            &got,
            &want,
            0.0,
            0.0,
            &format!("log_softmax with +inf, NaN and all -inf on {}", name(d)),
        );
        // f16 in, f16 out (lifted to f32 and rounded back).
        let x16 = tensor(d, &x[..3], &[1, 3]).cast(DType::F16).unwrap();
        let got = read(&x16.log_softmax().unwrap().cast(DType::F32).unwrap());
        assert_close(
            &got,
            &by_rows(&x[..3], 3, log_reference),
            1e-3,
            0.0,
            &format!("log_softmax in f16 on {}", name(d)),
        );
    }
}

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

#[test]
fn reductions_over_several_axes_match_numpy() {
    let shape = [3, 4, 5, 2];
    let x = random(8400, shape.iter().product(), -4.0, 4.0);
    let cases: [&[usize]; 6] = [&[1, 3], &[3, 1], &[2, 3], &[0, 1], &[0, 1, 2, 3], &[]];
    for d in devices() {
        let t = tensor(d, &x, &shape);
        for axes in cases {
            let all: Vec<usize> = if axes.is_empty() {
                (0..4).collect()
            } else {
                axes.to_vec()
            };
            for op in [ReduceOp::Sum, ReduceOp::Mean, ReduceOp::Max, ReduceOp::Min] {
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
}

#[test]
fn reductions_over_an_empty_axis_follow_numpy() {
    for d in devices() {
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
        let min = ops::reduce::reduce_axes_with_identity(&q, ReduceOp::Min, &empty, &[0, 1], false)
            .unwrap();
        assert_eq!(
            (min.shape(), read(&min)),
            (&[2][..], vec![f32::INFINITY; 2]),
            "ONNX min of nothing on {}",
            name(d)
        );
        let full = tensor(d, &[3.0, -1.0, 2.0], &[3]);
        assert_eq!(
            read(
                &ops::reduce::reduce_axes_with_identity(&q, ReduceOp::Min, &full, &[0], false)
                    .unwrap()
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
}

#[test]
fn matmul_takes_vectors_as_numpy_does() {
    // (a shape, b shape, result shape); a 1-D a is a row, a 1-D b a column, and that axis goes.
    let cases: [(&[usize], &[usize], &[usize]); 5] = [
        (&[2, 3], &[3], &[2]),
        (&[3], &[3, 4], &[4]),
        (&[3], &[3], &[]),
        (&[2, 5, 3], &[3], &[2, 5]),
        (&[3], &[2, 3, 4], &[2, 4]),
    ];
    for d in devices() {
        for (c, &(sa, sb, so)) in cases.iter().enumerate() {
            let (x, y) = (
                random(8500 + c as u64, sa.iter().product(), -1.0, 1.0),
                random(8600 + c as u64, sb.iter().product(), -1.0, 1.0),
            );
            let got = tensor(d, &x, sa).matmul(&tensor(d, &y, sb)).unwrap();
            assert_eq!(got.shape(), so, "{sa:?} @ {sb:?}");
            // The reference with the vectors as matrices, then the added axes dropped.
            let a2: Vec<usize> = if sa.len() == 1 {
                vec![1, sa[0]]
            } else {
                sa.to_vec()
            };
            let b2: Vec<usize> = if sb.len() == 1 {
                vec![sb[0], 1]
            } else {
                sb.to_vec()
            };
            let (k, n) = (b2[b2.len() - 2], b2[b2.len() - 1]);
            let m = a2[a2.len() - 2];
            let (batches_a, batches_b) = (x.len() / (m * k), y.len() / (k * n));
            let batches = batches_a.max(batches_b);
            let want: Vec<f64> = (0..batches)
                .flat_map(|bt| (0..m).flat_map(move |i| (0..n).map(move |j| (bt, i, j))))
                .map(|(bt, i, j)| {
                    let (ab, bb) = (bt % batches_a, bt % batches_b);
                    (0..k)
                        .map(|t| {
                            f64::from(x[ab * m * k + i * k + t])
                                * f64::from(y[bb * k * n + t * n + j])
                        })
                        .sum()
                })
                .collect();
            assert_close(
                &read(&got),
                &want,
                1e-5,
                1e-6,
                &format!("{sa:?} @ {sb:?} on {}", name(d)),
            );
        }
    }
}

#[test]
fn softmax_and_log_softmax_along_any_axis() {
    use unicompute::ops::log_softmax::reference_row as log_reference;
    let shape = [3, 5, 4];
    let x = random(8700, 60, -6.0, 6.0);
    let strides = [20, 4, 1];
    for d in devices() {
        let t = tensor(d, &x, &shape);
        for axis in 0..3 {
            for (op, row) in [
                ("softmax", reference_row as fn(&[f64]) -> Vec<f64>),
                ("log_softmax", log_reference),
            ] {
                let got = if op == "softmax" {
                    t.softmax_axis(axis)
                } else {
                    t.log_softmax_axis(axis)
                }
                .unwrap();
                assert_eq!(got.shape(), shape);
                let got = read(&got);
                // Every fiber along `axis` against the reference row.
                let others: Vec<usize> = (0..3).filter(|&a| a != axis).collect();
                for i in 0..shape[others[0]] {
                    for j in 0..shape[others[1]] {
                        let base = i * strides[others[0]] + j * strides[others[1]];
                        let at: Vec<usize> =
                            (0..shape[axis]).map(|k| base + k * strides[axis]).collect();
                        let want = row(&at.iter().map(|&o| f64::from(x[o])).collect::<Vec<_>>());
                        let fiber: Vec<f32> = at.iter().map(|&o| got[o]).collect();
                        assert_close(
                            &fiber,
                            &want,
                            1e-5,
                            1e-6,
                            &format!("{op} along axis {axis} on {}", name(d)),
                        );
                    }
                }
            }
        }
        assert!(t
            .softmax_axis(3)
            .unwrap_err()
            .to_string()
            .contains("axis 3"));
    }
}

#[test]
fn softmax_of_strided_views_matches_reference() {
    // Views whose rows the kernels read in place: a transpose, a slice with a step between
    // rows, and a broadcast (stride 0); and one whose outer axes do not flatten (a copy).
    let x = random(8800, 4 * 6 * 9, -6.0, 6.0);
    for d in &devices_and_variants() {
        let t = tensor(d, &x, &[4, 6, 9]);
        let views = [
            t.permute(&[2, 0, 1]).unwrap(),
            t.slice(2, 1..8).unwrap(),
            t.slice(0, 1..2).unwrap().broadcast_to(&[3, 6, 9]).unwrap(),
            t.permute(&[1, 0, 2]).unwrap().slice(2, 2..5).unwrap(),
        ];
        for (v, view) in views.iter().enumerate() {
            let dense = read(&view.contiguous().unwrap());
            let shape = view.shape().to_vec();
            for axis in 0..3 {
                let got = read(&view.softmax_axis(axis).unwrap());
                let inner: usize = shape[axis + 1..].iter().product();
                let (len, outer) = (shape[axis], dense.len() / shape[axis] / inner);
                for r in 0..outer * inner {
                    let at: Vec<usize> = (0..len)
                        .map(|j| (r / inner) * len * inner + j * inner + r % inner)
                        .collect();
                    let want =
                        reference_row(&at.iter().map(|&o| f64::from(dense[o])).collect::<Vec<_>>());
                    let fiber: Vec<f32> = at.iter().map(|&o| got[o]).collect();
                    assert_close(
                        &fiber,
                        &want,
                        1e-5,
                        1e-6,
                        &format!("softmax of view {v} {shape:?} along {axis} on {}", name(d)),
                    );
                }
            }
        }
    }
}

#[test]
fn norms_of_strided_views_match_reference() {
    // Rows read in place: the last axis of a transpose, two trailing axes of a slice, a
    // broadcast; and trailing axes that do not merge into one stride (a copy first).
    let x = random(8810, 4 * 6 * 9, -3.0, 3.0);
    for d in &devices_and_variants() {
        let q = d.queue();
        let t = tensor(d, &x, &[4, 6, 9]);
        let views = [
            (t.permute(&[2, 0, 1]).unwrap(), 1),
            (t.slice(0, 1..3).unwrap(), 2),
            (
                t.slice(0, 1..2).unwrap().broadcast_to(&[3, 6, 9]).unwrap(),
                1,
            ),
            (t.permute(&[0, 2, 1]).unwrap(), 2),
        ];
        for (v, (view, axes)) in views.iter().enumerate() {
            let dense = read(&view.contiguous().unwrap());
            let cols: usize = view.shape()[view.rank() - axes..].iter().product();
            let w = random(8811 + v as u64, cols, 0.5, 1.5);
            let wt = tensor(d, &w, &view.shape()[view.rank() - axes..]);
            for kind in [NormKind::Layer, NormKind::Rms] {
                let got = ops::norm::norm_trailing(
                    &q,
                    kind,
                    view,
                    *axes,
                    NormParams {
                        weight: Some(&wt),
                        ..Default::default()
                    },
                )
                .unwrap();
                assert_eq!(got.shape(), view.shape());
                let want: Vec<f64> = dense
                    .chunks(cols)
                    .flat_map(|r| {
                        kind.reference_row(
                            &r.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(),
                            1e-5,
                        )
                        .into_iter()
                        .zip(&w)
                        .map(|(v, &w)| v * f64::from(w))
                        .collect::<Vec<_>>()
                    })
                    .collect();
                assert_close(
                    &read(&got),
                    &want,
                    1e-4,
                    1e-5,
                    &format!(
                        "{} of view {v} over {axes} axes on {}",
                        kind.name(),
                        name(d)
                    ),
                );
            }
        }
    }
}

#[test]
fn norms_over_trailing_axes_match_onnx() {
    let shape = [2, 3, 4, 5];
    let x = random(8800, 120, -3.0, 3.0);
    let w = random(8801, 20, 0.5, 1.5);
    let b = random(8802, 20, -1.0, 1.0);
    for d in devices() {
        let q = d.queue();
        let t = tensor(d, &x, &shape);
        let (wt, bt) = (tensor(d, &w, &[4, 5]), tensor(d, &b, &[4, 5]));
        for kind in [NormKind::Layer, NormKind::Rms] {
            // Over the last two axes: rows of 20.
            let got = ops::norm::norm_trailing(
                &q,
                kind,
                &t,
                2,
                NormParams {
                    weight: Some(&wt),
                    bias: Some(&bt),
                    ..Default::default()
                },
            )
            .unwrap();
            assert_eq!(got.shape(), shape);
            let want: Vec<f64> = x
                .chunks(20)
                .flat_map(|r| {
                    kind.reference_row(&r.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(), 1e-5)
                        .into_iter()
                        .enumerate()
                        .map(|(i, v)| v * f64::from(w[i]) + f64::from(b[i]))
                        .collect::<Vec<_>>()
                })
                .collect();
            assert_close(
                &read(&got),
                &want,
                1e-4,
                1e-5,
                &format!("{} over 2 axes on {}", kind.name(), name(d)),
            );
            // One trailing axis is the plain norm.
            let one = ops::norm::norm_trailing(&q, kind, &t, 1, NormParams::default()).unwrap();
            assert_eq!(
                read(&one),
                read(&ops::norm::norm(&q, kind, &t, NormParams::default()).unwrap())
            );
        }
        let err = ops::norm::norm_trailing(&q, NormKind::Layer, &t, 5, NormParams::default())
            .unwrap_err()
            .to_string();
        assert!(err.contains("5 trailing axes"), "{err}");
        let err = ops::norm::norm_trailing(
            &q,
            NormKind::Layer,
            &t,
            2,
            NormParams {
                weight: Some(&tensor(d, &w[..5], &[5])),
                ..Default::default()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("expected [4, 5]"), "{err}");
    }
}

#[test]
fn softmax_rows_are_overflow_safe() {
    for d in &devices_and_variants() {
        for (c, &(shape, lo, hi)) in ROW_CASES.iter().enumerate() {
            let n: usize = shape.iter().product();
            let x = random(c as u64 + 700, n, lo, hi);
            let got = read(&tensor(d, &x, shape).softmax().unwrap());
            let cols = *shape.last().unwrap();
            let want: Vec<f64> = x
                .chunks(cols)
                .flat_map(|r| reference_row(&r.iter().map(|&v| f64::from(v)).collect::<Vec<_>>()))
                .collect();
            assert_close(
                &got,
                &want,
                1e-4,
                1e-7,
                &format!("softmax {shape:?} in [{lo}, {hi}) on {}", name(d)),
            );
        }
        let row = tensor(
            d,
            &[f32::NEG_INFINITY, 0.0, 1.0, f32::NEG_INFINITY],
            &[1, 4],
        );
        let got = read(&row.softmax().unwrap());
        let want = reference_row(&[f64::NEG_INFINITY, 0.0, 1.0, f64::NEG_INFINITY]);
        assert_close(
            &got,
            &want,
            1e-5,
            1e-7,
            &format!("softmax with -inf on {}", name(d)),
        );
        let got = read(&tensor(d, &SPECIAL_ROWS, &[3, 3]).softmax().unwrap());
        let want = by_rows(&SPECIAL_ROWS, 3, reference_row);
        assert!(
            want.iter().all(|w| w.is_nan()),
            "the reference makes these rows NaN"
        );
        assert_close(
            &got,
            &want,
            0.0,
            0.0,
            &format!("softmax with +inf, NaN and all -inf on {}", name(d)),
        );
    }
}

/// One matmul case: batch dimensions of each operand and the matrix sizes.
struct MatmulCase {
    batch_a: &'static [usize],
    batch_b: &'static [usize],
    m: usize,
    n: usize,
    k: usize,
}

/// f64 reference; an operand without batch dimensions is broadcast over the batch.
fn matmul_reference(a: &[f32], b: &[f32], c: &MatmulCase) -> Vec<f64> {
    let (m, n, k) = (c.m, c.n, c.k);
    let batch = c
        .batch_a
        .iter()
        .product::<usize>()
        .max(c.batch_b.iter().product());
    let mut out = vec![0.0; batch * m * n];
    for bi in 0..batch {
        let ao = if c.batch_a.is_empty() { 0 } else { bi * m * k };
        let bo = if c.batch_b.is_empty() { 0 } else { bi * k * n };
        for i in 0..m {
            for j in 0..n {
                out[bi * m * n + i * n + j] = (0..k)
                    .map(|p| f64::from(a[ao + i * k + p]) * f64::from(b[bo + p * n + j]))
                    .sum();
            }
        }
    }
    out
}

#[test]
fn matmul_2d_batched_and_broadcast() {
    let cases = [
        MatmulCase {
            batch_a: &[],
            batch_b: &[],
            m: 1,
            n: 1,
            k: 1,
        },
        MatmulCase {
            batch_a: &[],
            batch_b: &[],
            m: 7,
            n: 13,
            k: 5,
        },
        MatmulCase {
            batch_a: &[],
            batch_b: &[],
            m: 65,
            n: 129,
            k: 67,
        },
        MatmulCase {
            batch_a: &[],
            batch_b: &[],
            m: 128,
            n: 64,
            k: 256,
        },
        MatmulCase {
            batch_a: &[3],
            batch_b: &[3],
            m: 33,
            n: 19,
            k: 17,
        },
        MatmulCase {
            batch_a: &[4],
            batch_b: &[],
            m: 9,
            n: 70,
            k: 31,
        },
        // Rows of whole vec4s (k and n multiples of 4): the webgpu vec4 tile loads.
        MatmulCase {
            batch_a: &[3],
            batch_b: &[3],
            m: 33,
            n: 20,
            k: 12,
        },
        MatmulCase {
            batch_a: &[2],
            batch_b: &[],
            m: 5,
            n: 8,
            k: 16,
        },
    ];
    for d in devices() {
        // The default choice, then every named kernel variant of the backend.
        let variants = std::iter::once(None).chain(ops::matmul::variants(d).into_iter().map(Some));
        for variant in variants {
            for (i, c) in cases.iter().enumerate() {
                let (na, nb): (usize, usize) =
                    (c.batch_a.iter().product(), c.batch_b.iter().product());
                let seed = 900 + i as u64;
                let a = random(seed, na * c.m * c.k, -1.0, 1.0);
                let b = random(seed + 1, nb * c.k * c.n, -1.0, 1.0);
                let sa: Vec<usize> = c.batch_a.iter().copied().chain([c.m, c.k]).collect();
                let sb: Vec<usize> = c.batch_b.iter().copied().chain([c.k, c.n]).collect();
                let (at, bt) = (tensor(d, &a, &sa), tensor(d, &b, &sb));
                let got = match variant {
                    Some(v) => read(&ops::matmul::matmul_variant(&d.queue(), &at, &bt, v).unwrap()),
                    None => read(&at.matmul(&bt).unwrap()),
                };
                let want = matmul_reference(&a, &b, c);
                let what = format!(
                    "matmul {sa:?} @ {sb:?} variant {variant:?} on {} seed {seed}",
                    name(d)
                );
                assert_close(&got, &want, 1e-4, 1e-5 * c.k as f64, &what);
            }
        }
    }
}

#[test]
fn matmul_of_transposed_views_needs_no_copy() {
    for d in devices() {
        let (m, n, k) = (37, 23, 41);
        let a = random(1, m * k, -1.0, 1.0);
        let bt = random(2, n * k, -1.0, 1.0); // stored as [n, k]
        let b_view = tensor(d, &bt, &[n, k]).t().unwrap();
        assert!(!b_view.is_contiguous());
        let got = read(&tensor(d, &a, &[m, k]).matmul(&b_view).unwrap());
        let b: Vec<f32> = gather(&bt, &[k, n], &[1, k], 0);
        let want = matmul_reference(
            &a,
            &b,
            &MatmulCase {
                batch_a: &[],
                batch_b: &[],
                m,
                n,
                k,
            },
        );
        assert_close(
            &got,
            &want,
            1e-4,
            1e-4,
            &format!("matmul with a transposed view on {}", name(d)),
        );
    }
}

#[test]
fn views_and_contiguous_copies() {
    for d in devices() {
        let x = random(3, 2 * 3 * 5, -1.0, 1.0);
        let t = tensor(d, &x, &[2, 3, 5]);
        let p = t.permute(&[2, 0, 1]).unwrap();
        assert_eq!(p.shape(), &[5, 2, 3]);
        let c = p.contiguous().unwrap();
        assert!(c.is_contiguous());
        assert_eq!(
            read(&c),
            gather(&x, &[5, 2, 3], &[1, 15, 5], 0),
            "permute+contiguous on {}",
            name(d)
        );
        let s = t.slice(2, 1..4).unwrap().reshape(&[6, 3]).unwrap();
        assert_eq!(
            read(&s),
            gather(&x, &[2, 3, 3], &[15, 5, 1], 1),
            "slice+reshape on {}",
            name(d)
        );
        let row = tensor(d, &x[..5], &[5]).broadcast_to(&[3, 5]).unwrap();
        let want: Vec<f32> = (0..3).flat_map(|_| x[..5].to_vec()).collect();
        assert_eq!(
            read(&row.contiguous().unwrap()),
            want,
            "broadcast+contiguous on {}",
            name(d)
        );
        let ints = Tensor::from_slice(d, &[1i32, -2, 3, -4, 5, -6], &[2, 3]).unwrap();
        assert_eq!(
            ints.t().unwrap().to_vec_blocking::<i32>().unwrap(),
            vec![1, -4, -2, 5, 3, -6],
            "i32 transpose on {}",
            name(d)
        );
    }
}

#[test]
fn layer_and_rms_norm_match_reference() {
    let cases: &[&[usize]] = &[
        &[1, 1],
        &[3, 7],
        &[5, 1000],
        &[2, 3, 257],
        &[1, 4099],
        &[1100, 300],
    ];
    let eps = 1e-5;
    for d in &devices_and_variants() {
        let q = d.queue();
        for kind in [NormKind::Layer, NormKind::Rms] {
            for (c, &shape) in cases.iter().enumerate() {
                let cols = shape[shape.len() - 1];
                let n: usize = shape.iter().product();
                let seed = 700 + c as u64 + 10 * kind.code() as u64;
                let x = random(seed, n, -3.0, 5.0); // off-centre, so subtracting the mean matters
                let (w, b) = (
                    random(seed + 1, cols, 0.5, 1.5),
                    random(seed + 2, cols, -1.0, 1.0),
                );
                let (wt, bt) = (tensor(d, &w, &[cols]), tensor(d, &b, &[cols]));
                for (affine, act) in [(false, None), (true, None), (true, Some(UnaryOp::GeluErf))] {
                    let params = NormParams {
                        weight: affine.then_some(&wt),
                        bias: affine.then_some(&bt),
                        eps,
                        act,
                    };
                    let got =
                        read(&ops::norm::norm(&q, kind, &tensor(d, &x, shape), params).unwrap());
                    let mut want = Vec::with_capacity(n);
                    for row in x.chunks(cols) {
                        let row: Vec<f64> = row.iter().map(|&v| f64::from(v)).collect();
                        for (j, y) in kind
                            .reference_row(&row, f64::from(eps))
                            .into_iter()
                            .enumerate()
                        {
                            let y = if affine {
                                y * f64::from(w[j]) + f64::from(b[j])
                            } else {
                                y
                            };
                            want.push(act.map_or(y, |f| f.eval(y)));
                        }
                    }
                    let what = format!(
                        "{} {shape:?} affine {affine} act {act:?} on {} seed {seed}",
                        kind.name(),
                        name(d)
                    );
                    assert_close(&got, &want, 1e-4, 1e-4, &what);
                }
            }
        }
    }
}

#[test]
fn linear_fuses_bias_and_activation() {
    // (x shape, n): rank 2 and 3 inputs, primes, sizes off the 64-wide tiles.
    let cases: &[(&[usize], usize)] = &[
        (&[1, 1], 1),
        (&[7, 13], 5),
        (&[65, 129], 67),
        (&[2, 3, 31], 17),
    ];
    for d in devices() {
        let q = d.queue();
        for (c, &(xs, n)) in cases.iter().enumerate() {
            let k = xs[xs.len() - 1];
            let rows: usize = xs[..xs.len() - 1].iter().product();
            let seed = 900 + c as u64 * 4;
            let x = random(seed, rows * k, -1.0, 1.0);
            let w = random(seed + 1, n * k, -1.0, 1.0); // stored [n, k] (PyTorch layout), used as w.t()
            let bias = random(seed + 2, n, -1.0, 1.0);
            let (xt, wt, bt) = (
                tensor(d, &x, xs),
                tensor(d, &w, &[n, k]),
                tensor(d, &bias, &[n]),
            );
            for (with_bias, act) in [
                (false, None),
                (true, None),
                (true, Some(UnaryOp::Relu)),
                (false, Some(UnaryOp::GeluTanh)),
            ] {
                let got = read(
                    &ops::matmul::linear(&q, &xt, &wt.t().unwrap(), with_bias.then_some(&bt), act)
                        .unwrap(),
                );
                let mut want = Vec::with_capacity(rows * n);
                for r in 0..rows {
                    for j in 0..n {
                        let mut v: f64 = (0..k)
                            .map(|p| f64::from(x[r * k + p]) * f64::from(w[j * k + p]))
                            .sum();
                        if with_bias {
                            v += f64::from(bias[j]);
                        }
                        want.push(act.map_or(v, |f| f.eval(v)));
                    }
                }
                let what = format!(
                    "linear {xs:?} x [{k}, {n}] bias {with_bias} act {act:?} on {} seed {seed}",
                    name(d)
                );
                assert_close(&got, &want, 1e-4, 1e-4, &what);
            }
        }
    }
}

#[test]
fn concat_along_every_axis_and_dtype() {
    for d in devices() {
        for axis in 0..3 {
            // Three parts of [2, 3, 5] with extents 1, 4 and 2 on `axis`; the middle one is a
            // permuted (strided) view.
            let extents = [1usize, 4, 2];
            let mut parts = Vec::new();
            let mut host = Vec::new();
            for (p, &e) in extents.iter().enumerate() {
                let mut shape = vec![2, 3, 5];
                shape[axis] = e;
                let n: usize = shape.iter().product();
                let data = random(1000 + 10 * axis as u64 + p as u64, n, -5.0, 5.0);
                let t = if p == 1 {
                    // Same values, stored transposed and viewed back.
                    let mut st = shape.clone();
                    st.swap(0, 2);
                    let stored: Vec<f32> =
                        gather(&data, &st, &[1, shape[2], shape[1] * shape[2]], 0);
                    tensor(d, &stored, &st).permute(&[2, 1, 0]).unwrap()
                } else {
                    tensor(d, &data, &shape)
                };
                host.push((data, shape));
                parts.push(t);
            }
            let refs: Vec<&Tensor> = parts.iter().collect();
            let got = read(&Tensor::concat(&refs, axis).unwrap());
            let mut out_shape = [2, 3, 5];
            out_shape[axis] = extents.iter().sum();
            let mut want = Vec::new();
            let outer: usize = out_shape[..axis].iter().product();
            for o in 0..outer {
                for (data, shape) in &host {
                    let block: usize = shape[axis..].iter().product();
                    want.extend(
                        data[o * block..(o + 1) * block]
                            .iter()
                            .map(|&v| f64::from(v)),
                    );
                }
            }
            assert_close(
                &got,
                &want,
                0.0,
                0.0,
                &format!("concat axis {axis} on {}", name(d)),
            );
        }
        let ints = [
            Tensor::from_slice(d, &[1i32, 2], &[1, 2]).unwrap(),
            Tensor::from_slice(d, &[3i32, 4, 5, 6], &[2, 2]).unwrap(),
        ];
        let got = Tensor::concat(&[&ints[0], &ints[1]], 0)
            .unwrap()
            .to_vec_blocking::<i32>()
            .unwrap();
        assert_eq!(got, vec![1, 2, 3, 4, 5, 6], "i32 concat on {}", name(d));
    }
}

#[test]
fn casts_follow_rust_as() {
    let floats = [
        0.0f32,
        -0.0,
        1.5,
        -1.5,
        2.9,
        -2.9,
        1e10,
        -1e10,
        4.2e9,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        16_777_215.0,
    ];
    let ints = [0i32, 1, -1, 7, -123_456, i32::MAX, i32::MIN, 16_777_215];
    for d in devices() {
        let f = tensor(d, &floats, &[floats.len()]);
        let i = Tensor::from_slice(d, &ints, &[ints.len()]).unwrap();
        let u = i.cast(DType::U32).unwrap();
        assert_eq!(
            f.cast(DType::I32)
                .unwrap()
                .to_vec_blocking::<i32>()
                .unwrap(),
            floats.map(|v| v as i32).to_vec(),
            "f32 -> i32 on {}",
            name(d)
        );
        assert_eq!(
            f.cast(DType::U32)
                .unwrap()
                .to_vec_blocking::<u32>()
                .unwrap(),
            floats.map(|v| v as u32).to_vec(),
            "f32 -> u32 on {}",
            name(d)
        );
        assert_eq!(
            u.to_vec_blocking::<u32>().unwrap(),
            ints.map(|v| v as u32).to_vec(),
            "i32 -> u32 on {}",
            name(d)
        );
        assert_eq!(
            u.cast(DType::I32)
                .unwrap()
                .to_vec_blocking::<i32>()
                .unwrap(),
            ints.to_vec(),
            "u32 -> i32 on {}",
            name(d)
        );
        // Integers up to 2^24 are exact in f32.
        let small = Tensor::from_slice(d, &[0i32, -5, 16_777_215, -16_777_215], &[2, 2]).unwrap();
        let got = small
            .t()
            .unwrap()
            .cast(DType::F32)
            .unwrap()
            .to_vec_blocking::<f32>()
            .unwrap();
        assert_eq!(
            got,
            vec![0.0, 16_777_215.0, -5.0, -16_777_215.0],
            "strided i32 -> f32 on {}",
            name(d)
        );
        let us = Tensor::from_slice(d, &[3u32, 16_777_215], &[2])
            .unwrap()
            .cast(DType::F32)
            .unwrap();
        assert_eq!(
            us.to_vec_blocking::<f32>().unwrap(),
            vec![3.0, 16_777_215.0],
            "u32 -> f32 on {}",
            name(d)
        );
    }
}

#[test]
fn where_selects_with_broadcasting() {
    for d in devices() {
        // cond [3, 1] (u32), a [3, 5], b [5] broadcast; and an f32 condition with -0.0 and NaN.
        let cond = Tensor::from_slice(d, &[1u32, 0, 7], &[3, 1]).unwrap();
        let a = random(60, 15, -1.0, 1.0);
        let b = random(61, 5, -1.0, 1.0);
        let got = read(
            &cond
                .select(&tensor(d, &a, &[3, 5]), &tensor(d, &b, &[5]))
                .unwrap(),
        );
        let want: Vec<f64> = (0..15)
            .map(|i| f64::from(if i / 5 != 1 { a[i] } else { b[i % 5] }))
            .collect();
        assert_close(&got, &want, 0.0, 0.0, &format!("where on {}", name(d)));
        let fc = tensor(d, &[0.0, -0.0, f32::NAN, 2.0], &[4]);
        let ones = Tensor::from_slice(d, &[1i32; 4], &[4]).unwrap();
        let zeros = Tensor::from_slice(d, &[0i32; 4], &[4]).unwrap();
        assert_eq!(
            fc.select(&ones, &zeros)
                .unwrap()
                .to_vec_blocking::<i32>()
                .unwrap(),
            vec![0, 0, 1, 1],
            "f32 condition on {}",
            name(d)
        );
    }
}

/// numpy's `take` with `mode` for what lies outside `[-len, len)` (`None`: the entry is
/// unset): `x` of `shape` along `axis` by `idx` of `idx_shape`.
fn take(x: &[f32], shape: &[usize], axis: usize, idx: &[i64], mode: IndexMode) -> Vec<f64> {
    let (outer, len, inner): (usize, usize, usize) = (
        shape[..axis].iter().product(),
        shape[axis],
        shape[axis + 1..].iter().product(),
    );
    let mut want = Vec::new();
    for o in 0..outer {
        for &j in idx {
            let t = unicompute::ops::gather::resolve_index(j, len, mode);
            want.extend(
                (0..inner).map(|i| t.map_or(0.0, |t| f64::from(x[(o * len + t) * inner + i]))),
            );
        }
    }
    want
}

#[test]
fn gather_counts_negative_indices_from_the_end_and_takes_any_rank() {
    for d in devices() {
        let shape = [3usize, 4, 5];
        let x = random(70, 60, -5.0, 5.0);
        let xt = tensor(d, &x, &shape);
        for axis in 0..3 {
            let len = shape[axis] as i64;
            // In range from either end, repeated, as a [2, 3] tensor: the axis becomes [2, 3].
            let idx = [len - 1, 0, -1, -len, 1, 0];
            let it = Tensor::from_slice(d, &idx.map(|v| v as i32), &[2, 3]).unwrap();
            let got = xt.gather(axis, &it).unwrap();
            let want_shape = [&shape[..axis], &[2, 3], &shape[axis + 1..]].concat();
            assert_eq!(
                got.shape(),
                &want_shape[..],
                "gather axis {axis} on {}",
                name(d)
            );
            let want = take(&x, &shape, axis, &idx, IndexMode::Error);
            assert_close(
                &read(&got),
                &want,
                0.0,
                0.0,
                &format!("gather axis {axis} on {}", name(d)),
            );
            // Outside [-len, len) either way: clipped to the nearest end, or 0.
            let far = [len, -len - 1, i32::MAX as i64, i32::MIN as i64, 2];
            for mode in [IndexMode::Clip, IndexMode::Fill] {
                let ft = Tensor::from_slice(d, &far.map(|v| v as i32), &[5]).unwrap();
                let got = read(&xt.gather_with(axis, &ft, mode).unwrap());
                let want = take(&x, &shape, axis, &far, mode);
                assert_close(
                    &got,
                    &want,
                    0.0,
                    0.0,
                    &format!("gather axis {axis} {mode:?} on {}", name(d)),
                );
            }
        }
        // A scalar index drops the axis; u32 indices.
        let one = Tensor::from_slice(d, &[-2i64], &[]).unwrap();
        assert_eq!(
            xt.gather(1, &one).unwrap().shape(),
            &[3, 5],
            "scalar index on {}",
            name(d)
        );
        let table = Tensor::from_slice(d, &[10u32, 11, 12, 13], &[4]).unwrap();
        let picks = Tensor::from_slice(d, &[3u32, 9, 0], &[3]).unwrap();
        let got = table
            .gather_with(0, &picks, IndexMode::Clip)
            .unwrap()
            .to_vec_blocking::<u32>()
            .unwrap();
        assert_eq!(got, vec![13, 13, 10], "u32 gather on {}", name(d));
    }
}

/// In IndexMode::Error (the default) an index outside its axis is never a silent value: the
/// next read on the queue fails with INVALID, naming the first offending position; that
/// read's data is not returned, the queue keeps working, and the finding is reported once.
/// In a capture, which makes no read, the mode is refused.
#[test]
fn gather_out_of_range_indices_fail_the_next_read() {
    for d in devices() {
        let x = tensor(d, &random(71, 2 * 70_001, -1.0, 1.0), &[2, 70_001]);
        for (idx, at) in [
            (vec![0i64, 70_000, -70_001, 70_001, 5], "[3]"),
            (vec![-70_002, 1], "[0]"),
        ] {
            let it = Tensor::from_slice(d, &idx, &[idx.len()]).unwrap();
            let y = x.gather(1, &it).unwrap();
            let e = y.to_vec_blocking::<f32>().unwrap_err();
            assert_eq!(e.code(), "INVALID", "{e} on {}", name(d));
            for needle in [at, "[-70001, 70001)", "axis 1"] {
                assert!(
                    e.to_string().contains(needle),
                    "{e}: expected {needle:?} on {}",
                    name(d)
                );
            }
            // Reported once: the data reads now, with 0 where the index was outside.
            let want = take(&read(&x), &[2, 70_001], 1, &idx, IndexMode::Fill);
            assert_close(
                &read(&y),
                &want,
                0.0,
                0.0,
                &format!("gather after its error on {}", name(d)),
            );
            still_works(d);
        }
        if d.backend() != unicompute::BackendKind::Cpu {
            let it = Tensor::from_slice(d, &[0u32], &[1]).unwrap();
            let r = d.queue().capture(|_| x.gather(1, &it));
            expect_err(
                r.map(drop),
                "INVALID",
                &["gather in mode Error", "Clip or Fill"],
                d,
            );
            let (graph, y) = d
                .queue()
                .capture(|_| x.gather_with(1, &it, IndexMode::Clip))
                .unwrap();
            graph.replay().unwrap();
            assert_eq!(
                read(&y),
                vec![read(&x)[0], read(&x)[70_001]],
                "a captured gather on {}",
                name(d)
            );
        }
    }
}

#[test]
fn cumsum_along_each_axis() {
    let cases: &[(&[usize], usize)] = &[
        (&[1], 0),
        (&[257], 0),
        (&[3, 1000], 1),
        (&[3, 1000], 0),
        (&[2, 5, 7], 1),
        (&[1, 70_001], 1),
    ];
    for d in devices() {
        for (c, &(shape, axis)) in cases.iter().enumerate() {
            let n: usize = shape.iter().product();
            let x = random(80 + c as u64, n, -1.0, 1.0);
            let got = read(&tensor(d, &x, shape).cumsum(axis).unwrap());
            let (outer, len, inner): (usize, usize, usize) = (
                shape[..axis].iter().product(),
                shape[axis],
                shape[axis + 1..].iter().product(),
            );
            let mut want = vec![0.0f64; n];
            for o in 0..outer {
                for i in 0..inner {
                    let mut acc = 0.0;
                    for j in 0..len {
                        let at = (o * len + j) * inner + i;
                        acc += f64::from(x[at]);
                        want[at] = acc;
                    }
                }
            }
            // Prefix sums of mixed signs: absolute error scales with the line length.
            assert_close(
                &got,
                &want,
                1e-5,
                1e-6 * len as f64,
                &format!("cumsum {shape:?} axis {axis} on {}", name(d)),
            );
        }
    }
}

#[test]
fn cumsum_exclusive_and_reverse_follow_onnx() {
    use unicompute::ops::CumsumOptions;
    let cases: &[(&[usize], usize)] = &[
        (&[1], 0),
        (&[7], 0),
        (&[3, 257], 1),
        (&[4, 5, 6], 0),
        (&[2, 3, 4], 2),
    ];
    for d in devices() {
        for (c, &(shape, axis)) in cases.iter().enumerate() {
            let n: usize = shape.iter().product();
            let x = random(90 + c as u64, n, -1.0, 1.0);
            let (outer, len, inner): (usize, usize, usize) = (
                shape[..axis].iter().product(),
                shape[axis],
                shape[axis + 1..].iter().product(),
            );
            for (exclusive, reverse) in [(false, true), (true, false), (true, true)] {
                let got = read(
                    &tensor(d, &x, shape)
                        .cumsum_with(axis, CumsumOptions { exclusive, reverse })
                        .unwrap(),
                );
                let mut want = vec![0.0f64; n];
                for o in 0..outer {
                    for i in 0..inner {
                        let at = |j: usize| (o * len + j) * inner + i;
                        let order: Vec<usize> = if reverse {
                            (0..len).rev().collect()
                        } else {
                            (0..len).collect()
                        };
                        let mut acc = 0.0;
                        for &j in &order {
                            if exclusive {
                                want[at(j)] = acc;
                                acc += f64::from(x[at(j)]);
                            } else {
                                acc += f64::from(x[at(j)]);
                                want[at(j)] = acc;
                            }
                        }
                    }
                }
                assert_close(&got, &want, 1e-5, 1e-6 * len as f64, &format!("cumsum {shape:?} axis {axis} exclusive {exclusive} reverse {reverse} on {}", name(d)));
            }
        }
        // Exclusive sums start at exactly 0, and infinities stay exact (no differences taken).
        let x = tensor(d, &[f32::INFINITY, 1.0, f32::NEG_INFINITY, 2.0], &[4]);
        let got = read(
            &x.cumsum_with(
                0,
                CumsumOptions {
                    exclusive: true,
                    reverse: false,
                },
            )
            .unwrap(),
        );
        assert_eq!(
            got[..2],
            [0.0, f32::INFINITY],
            "exclusive with infinities on {}",
            name(d)
        );
        assert!(got[3].is_nan(), "inf + -inf is NaN on {}", name(d));
        let got = read(
            &x.cumsum_with(
                0,
                CumsumOptions {
                    exclusive: true,
                    reverse: true,
                },
            )
            .unwrap(),
        );
        assert_eq!(got[2..], [2.0, 0.0], "reverse exclusive on {}", name(d));
    }
}

#[test]
fn layer_norm_statistics_match_onnx() {
    for d in devices() {
        for (c, (shape, axes)) in [
            (vec![3usize, 5, 7], 1usize),
            (vec![2, 3, 129], 2),
            (vec![1, 1000], 1),
            (vec![4, 2, 3, 5], 3),
        ]
        .into_iter()
        .enumerate()
        {
            let n: usize = shape.iter().product();
            // A large common offset: the two-pass variance keeps its precision.
            let x: Vec<f32> = random(95 + c as u64, n, -1.0, 1.0)
                .iter()
                .map(|v| v + 1000.0)
                .collect();
            let (mean, inv_std) = tensor(d, &x, &shape).layer_norm_stats(axes, 1e-5).unwrap();
            let group: usize = shape[shape.len() - axes..].iter().product();
            let kept: Vec<usize> = shape
                .iter()
                .enumerate()
                .map(|(i, &s)| if i >= shape.len() - axes { 1 } else { s })
                .collect();
            assert_eq!(
                (mean.shape(), inv_std.shape()),
                (&kept[..], &kept[..]),
                "shapes on {}",
                name(d)
            );
            let (mut want_mean, mut want_inv) = (Vec::new(), Vec::new());
            for g in x.chunks(group) {
                let m = g.iter().map(|&v| f64::from(v)).sum::<f64>() / group as f64;
                let var = g.iter().map(|&v| (f64::from(v) - m).powi(2)).sum::<f64>() / group as f64;
                want_mean.push(m);
                want_inv.push(1.0 / (var + 1e-5).sqrt());
            }
            assert_close(
                &read(&mean),
                &want_mean,
                1e-6,
                0.0,
                &format!("mean of {shape:?} over {axes} axes on {}", name(d)),
            );
            assert_close(
                &read(&inv_std),
                &want_inv,
                1e-4,
                0.0,
                &format!("inverse std of {shape:?} over {axes} axes on {}", name(d)),
            );
        }
        let x = tensor(d, &[1.0, 2.0], &[2]);
        assert!(
            x.layer_norm_stats(2, 1e-5).is_err() && x.layer_norm_stats(1, 0.0).is_err(),
            "bad axes and eps are errors on {}",
            name(d)
        );
    }
}

#[test]
fn argmin_and_last_ties_pick_the_right_index() {
    use unicompute::ops::ArgOptions;
    for d in devices() {
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
}

/// Naive attention in f64 with the full score matrix: `[b, h, lq, dv]`.
#[allow(clippy::too_many_arguments)]
fn attention_reference(
    q: &[f32],
    k: &[f32],
    v: &[f32],
    mask: Option<&[f32]>,
    [b, h, lq, lk, d, dv]: [usize; 6],
    scale: f64,
    causal: bool,
) -> Vec<f64> {
    let mut out = Vec::with_capacity(b * h * lq * dv);
    for bh in 0..b * h {
        for i in 0..lq {
            let scores: Vec<f64> = (0..lk)
                .map(|j| {
                    if causal && j > i {
                        return f64::NEG_INFINITY;
                    }
                    let dot: f64 = (0..d)
                        .map(|t| {
                            f64::from(q[(bh * lq + i) * d + t])
                                * f64::from(k[(bh * lk + j) * d + t])
                        })
                        .sum();
                    dot * scale + mask.map_or(0.0, |m| f64::from(m[i * lk + j]))
                })
                .collect();
            // Every key masked out (or none at all): 0, as ONNX defines it.
            if scores.iter().all(|&x| x == f64::NEG_INFINITY) {
                out.extend(std::iter::repeat_n(0.0, dv));
                continue;
            }
            let p = reference_row(&scores);
            for c in 0..dv {
                out.push(
                    (0..lk)
                        .map(|j| {
                            if p[j] == 0.0 {
                                0.0
                            } else {
                                p[j] * f64::from(v[(bh * lk + j) * dv + c])
                            }
                        })
                        .sum(),
                );
            }
        }
    }
    out
}

/// Seeded queries, keys and values for attention of `[b, h, lq, lk, d, dv]`.
fn attention_inputs(
    seed: u64,
    [b, h, lq, lk, hd, dv]: [usize; 6],
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    (
        random(seed, b * h * lq * hd, -1.0, 1.0),
        random(seed + 1, b * h * lk * hd, -1.0, 1.0),
        random(seed + 2, b * h * lk * dv, -1.0, 1.0),
    )
}

#[test]
fn attention_matches_naive_reference() {
    // [b, h, lq, lk, d, dv]
    let cases: &[[usize; 6]] = &[
        [1, 1, 1, 1, 1, 1],
        [2, 3, 7, 13, 16, 8],
        [1, 2, 300, 1000, 64, 64],
        [1, 1, 5, 70, 200, 256],
    ];
    for d in &devices_and_variants() {
        let q_ = d.queue();
        for (c, &dims) in cases.iter().enumerate() {
            let [b, h, lq, lk, hd, dv] = dims;
            let seed = 1100 + 10 * c as u64;
            let (q, k, v) = attention_inputs(seed, dims);
            // An additive [lq, lk] mask with some keys masked out (never a whole row).
            let mut mask = random(seed + 3, lq * lk, -2.0, 2.0);
            for (n, m) in mask.iter_mut().enumerate() {
                if n % 7 == 3 && n % lk != 0 {
                    *m = f32::NEG_INFINITY;
                }
            }
            let (qt, kt, vt) = (
                tensor(d, &q, &[b, h, lq, hd]),
                tensor(d, &k, &[b, h, lk, hd]),
                tensor(d, &v, &[b, h, lk, dv]),
            );
            let mt = tensor(d, &mask, &[lq, lk]);
            let scale = 1.0 / (hd as f64).sqrt();
            for (causal, with_mask) in [(false, false), (true, false), (false, true), (true, true)]
            {
                let params = AttentionParams {
                    mask: with_mask.then_some(&mt),
                    causal,
                    scale: None,
                };
                let got = read(&ops::attention::attention(&q_, &qt, &kt, &vt, params).unwrap());
                let want = attention_reference(
                    &q,
                    &k,
                    &v,
                    with_mask.then_some(&mask[..]),
                    dims,
                    scale,
                    causal,
                );
                assert_close(
                    &got,
                    &want,
                    1e-4,
                    1e-5,
                    &format!(
                        "attention {dims:?} causal {causal} mask {with_mask} on {} seed {seed}",
                        name(d)
                    ),
                );
            }
        }
        // Heads split out of a [b, seq, h, d] projection by a permute (strided q, k, v).
        let (b, s, h, hd) = (2, 9, 3, 8);
        let x = random(1200, b * s * h * hd, -1.0, 1.0);
        let xt = tensor(d, &x, &[b, s, h, hd])
            .permute(&[0, 2, 1, 3])
            .unwrap();
        let got = read(
            &xt.attention(
                &xt,
                &xt,
                AttentionParams {
                    causal: true,
                    ..Default::default()
                },
            )
            .unwrap(),
        );
        let packed = gather(&x, &[b, h, s, hd], &[s * h * hd, hd, h * hd, 1], 0);
        let want = attention_reference(
            &packed,
            &packed,
            &packed,
            None,
            [b, h, s, s, hd, hd],
            1.0 / (hd as f64).sqrt(),
            true,
        );
        assert_close(
            &got,
            &want,
            1e-4,
            1e-5,
            &format!("strided attention on {}", name(d)),
        );
    }
}

/// Query rows whose keys are all masked out, by the mask alone or by the mask and causal
/// masking together, and attention over no keys at all, give 0 (ONNX), on every device and
/// variant; the other rows still match the reference.
#[test]
fn attention_rows_with_every_key_masked_are_zero() {
    // [b, h, lq, lk, d, dv]: keys past one tile of 64; no keys.
    let cases: &[[usize; 6]] = &[[2, 3, 6, 70, 8, 5], [1, 2, 3, 0, 4, 5]];
    for d in &devices_and_variants() {
        for (c, &dims) in cases.iter().enumerate() {
            let [b, h, lq, lk, hd, dv] = dims;
            let seed = 1150 + 10 * c as u64;
            let (q, k, v) = attention_inputs(seed, dims);
            // Rows 0 and 3: every key masked. Row 2: keys 0..=2 masked, so that causal masking
            // hides the rest. Row 5: one key masked.
            let mut mask = random(seed + 3, lq * lk, -2.0, 2.0);
            for (n, m) in mask.iter_mut().enumerate() {
                let (i, j) = (n / lk.max(1), n % lk.max(1));
                if i == 0 || i == 3 || (i == 2 && j <= 2) || (i == 5 && j == 1) {
                    *m = f32::NEG_INFINITY;
                }
            }
            let (qt, kt, vt) = (
                tensor(d, &q, &[b, h, lq, hd]),
                tensor(d, &k, &[b, h, lk, hd]),
                tensor(d, &v, &[b, h, lk, dv]),
            );
            let mt = tensor(d, &mask, &[lq, lk]);
            for causal in [false, true] {
                let params = AttentionParams {
                    mask: Some(&mt),
                    causal,
                    scale: None,
                };
                let got =
                    read(&ops::attention::attention(&d.queue(), &qt, &kt, &vt, params).unwrap());
                let want = attention_reference(
                    &q,
                    &k,
                    &v,
                    Some(&mask),
                    dims,
                    1.0 / (hd as f64).sqrt(),
                    causal,
                );
                assert_close(
                    &got,
                    &want,
                    1e-4,
                    1e-5,
                    &format!(
                        "attention {dims:?} causal {causal}, masked rows, on {}",
                        name(d)
                    ),
                );
            }
        }
    }
}

/// `[n, c, h, w]` input, `[o, c / groups, kh, kw]` weight, stride, padding, dilation, groups.
type ConvCase = (
    [usize; 4],
    [usize; 4],
    [usize; 2],
    [usize; 2],
    [usize; 2],
    usize,
);

#[test]
fn conv2d_matches_naive_reference() {
    let cases: &[ConvCase] = &[
        ([1, 1, 1, 1], [1, 1, 1, 1], [1, 1], [0, 0], [1, 1], 1),
        ([2, 3, 7, 9], [5, 3, 3, 3], [1, 1], [1, 1], [1, 1], 1),
        ([1, 4, 11, 13], [6, 2, 3, 5], [2, 3], [1, 2], [2, 1], 2),
        ([1, 6, 8, 8], [6, 1, 3, 3], [1, 1], [1, 1], [1, 1], 6),
        ([1, 3, 32, 31], [16, 3, 3, 3], [2, 2], [0, 0], [1, 1], 1),
        // Four output channels per group, two batches: blocks of four channels per invocation.
        ([2, 4, 9, 10], [8, 2, 3, 3], [1, 1], [1, 1], [1, 2], 2),
    ];
    for d in devices() {
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
                                            if iy < 0
                                                || ix < 0
                                                || iy >= h as isize
                                                || ix >= wd as isize
                                            {
                                                continue;
                                            }
                                            let xv = x[((nb * ch + g * cg + ci) * h + iy as usize)
                                                * wd
                                                + ix as usize];
                                            acc += f64::from(xv)
                                                * f64::from(
                                                    w[((oc * cg + ci) * kh + ky) * kw + kx],
                                                );
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
}

/// A pooling case: `[n, c, h, w]`, window, stride, padding.
type PoolCase = ([usize; 4], [usize; 2], Option<[usize; 2]>, [usize; 2]);

#[test]
fn pooling_matches_naive_reference() {
    // The last with 80,000 taps per output: past llvmpipe's loop limit.
    let cases: &[PoolCase] = &[
        ([1, 1, 1, 1], [1, 1], None, [0, 0]),
        ([2, 3, 8, 9], [2, 2], None, [0, 0]),
        ([1, 2, 7, 11], [3, 3], Some([1, 2]), [1, 1]),
        ([1, 1, 5, 5], [3, 2], Some([2, 1]), [1, 0]),
        ([1, 2, 3, 70_001], [2, 40_000], Some([1, 30_000]), [0, 0]),
    ];
    for d in devices() {
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
                                    if iy >= 0 && ix >= 0 && (iy as usize) < h && (ix as usize) < w
                                    {
                                        taps.push(f64::from(
                                            x[(plane * h + iy as usize) * w + ix as usize],
                                        ));
                                    }
                                }
                            }
                            want.push(match kind {
                                PoolKind::Max => {
                                    taps.iter().copied().fold(f64::NEG_INFINITY, f64::max)
                                }
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
}

/// f32 values that exercise 16-bit rounding: ties, overflow, subnormals, infinities, NaN.
const ROUNDING_PROBES: [f32; 20] = [
    0.0,
    -0.0,
    1.0,
    -2.5,
    0.1,
    1.0 / 3.0,
    2049.0,
    2051.0,
    65504.0,
    65519.0,
    65520.0,
    1e6,
    6e-8,
    2.980_232_2e-8,
    1e-5,
    -3.5e-6,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::NAN,
    3.389_531_4e38,
];

#[test]
fn casts_to_and_from_16_bit_floats_round_like_half() {
    use unicompute::{bf16, f16};
    let same = |a: f32, b: f32| (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits();
    for d in devices() {
        let x = tensor(d, &ROUNDING_PROBES, &[ROUNDING_PROBES.len()]);
        let h = x.cast(DType::F16).unwrap();
        let hb: Vec<u16> = h
            .to_vec_blocking::<f16>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        let b = x.cast(DType::BF16).unwrap();
        let bb: Vec<u16> = b
            .to_vec_blocking::<bf16>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        for (i, &v) in ROUNDING_PROBES.iter().enumerate() {
            let (want_h, want_b) = (f16::from_f32(v), bf16::from_f32(v));
            assert!(
                same(f16::from_bits(hb[i]).to_f32(), want_h.to_f32()),
                "f32 {v:e} -> f16 on {}: {:#06x}, expected {:#06x}",
                name(d),
                hb[i],
                want_h.to_bits()
            );
            assert!(
                same(bf16::from_bits(bb[i]).to_f32(), want_b.to_f32()),
                "f32 {v:e} -> bf16 on {}: {:#06x}, expected {:#06x}",
                name(d),
                bb[i],
                want_b.to_bits()
            );
        }
        // Widening is exact, also from a strided view that starts inside a word.
        let back = read(&h.cast(DType::F32).unwrap());
        for (i, &v) in ROUNDING_PROBES.iter().enumerate() {
            assert!(
                same(back[i], f16::from_f32(v).to_f32()),
                "f16 -> f32 element {i} on {}",
                name(d)
            );
        }
        let odd = h
            .slice(0, 1..19)
            .unwrap()
            .reshape(&[3, 6])
            .unwrap()
            .t()
            .unwrap();
        let got = read(&odd.cast(DType::F32).unwrap());
        let want: Vec<f64> = gather(&back, &[6, 3], &[1, 6], 1)
            .iter()
            .map(|&v| f64::from(v))
            .collect();
        assert_close(
            &got,
            &want,
            0.0,
            0.0,
            &format!("strided f16 view -> f32 on {}", name(d)),
        );
        // Integers through f32; 16-bit to 16-bit (also a contiguous copy of a view).
        let ints = read(&b.cast(DType::I32).unwrap().cast(DType::F32).unwrap());
        for (i, &v) in ROUNDING_PROBES.iter().enumerate() {
            let want = bf16::from_f32(v).to_f32() as i32 as f32;
            assert_eq!(ints[i], want, "bf16 -> i32 element {i} on {}", name(d));
        }
        let hh: Vec<f16> = h
            .cast(DType::BF16)
            .unwrap()
            .cast(DType::F16)
            .unwrap()
            .to_vec_blocking()
            .unwrap();
        for (i, &v) in ROUNDING_PROBES.iter().enumerate() {
            let want = f16::from_f32(bf16::from_f32(f16::from_f32(v).to_f32()).to_f32()).to_f32();
            assert!(
                same(hh[i].to_f32(), want),
                "f16 -> bf16 -> f16 element {i} on {}",
                name(d)
            );
        }
        let view: Vec<f16> = odd.contiguous().unwrap().to_vec_blocking().unwrap();
        assert!(
            view.iter().zip(&got).all(|(v, &g)| same(v.to_f32(), g)),
            "contiguous copy of an f16 view on {}",
            name(d)
        );
    }
}

#[test]
fn ops_on_16_bit_floats_compute_in_f32_and_round_once() {
    use unicompute::{bf16, f16};
    for d in devices() {
        for dtype in [DType::F16, DType::BF16] {
            // Relative error of one rounding to the storage type (plus f32 arithmetic).
            let tol = if dtype == DType::F16 { 1.5e-3 } else { 1e-2 };
            let round = |v: f32| {
                if dtype == DType::F16 {
                    f16::from_f32(v).to_f32()
                } else {
                    bf16::from_f32(v).to_f32()
                }
            };
            let (m, k, n) = (7, 33, 5);
            let a: Vec<f32> = random(1500, m * k, -1.0, 1.0)
                .into_iter()
                .map(round)
                .collect();
            let b: Vec<f32> = random(1501, k * n, -1.0, 1.0)
                .into_iter()
                .map(round)
                .collect();
            let bias: Vec<f32> = random(1502, n, -1.0, 1.0).into_iter().map(round).collect();
            let at = tensor(d, &a, &[m, k]).cast(dtype).unwrap();
            let bt = tensor(d, &b, &[k, n]).cast(dtype).unwrap();
            let ct = tensor(d, &bias, &[n]).cast(dtype).unwrap();
            let what = |op: &str| format!("{op} in {dtype} on {}", name(d));
            // exp, broadcast add, matmul, softmax and layer norm, each result read back as f32.
            let exp = at.unary(UnaryOp::Exp).unwrap();
            assert_eq!(exp.dtype(), dtype);
            let want: Vec<f64> = a.iter().map(|&v| f64::from(v).exp()).collect();
            assert_close(
                &read(&exp.cast(DType::F32).unwrap()),
                &want,
                tol,
                0.0,
                &what("exp"),
            );
            let sum = at.matmul(&bt).unwrap().add(&ct).unwrap();
            let want: Vec<f64> = (0..m * n)
                .map(|i| {
                    (0..k)
                        .map(|p| f64::from(a[i / n * k + p]) * f64::from(b[p * n + i % n]))
                        .sum::<f64>()
                        + f64::from(bias[i % n])
                })
                .collect();
            assert_close(
                &read(&sum.cast(DType::F32).unwrap()),
                &want,
                tol,
                tol,
                &what("matmul + bias"),
            );
            let soft = read(&at.softmax().unwrap().cast(DType::F32).unwrap());
            let want: Vec<f64> = a
                .chunks(k)
                .flat_map(|r| reference_row(&r.iter().map(|&v| f64::from(v)).collect::<Vec<_>>()))
                .collect();
            assert_close(&soft, &want, tol, 1e-6, &what("softmax"));
            let norm = read(
                &at.layer_norm(NormParams::default())
                    .unwrap()
                    .cast(DType::F32)
                    .unwrap(),
            );
            let want: Vec<f64> = a
                .chunks(k)
                .flat_map(|r| {
                    NormKind::Layer
                        .reference_row(&r.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(), 1e-5)
                })
                .collect();
            assert_close(&norm, &want, tol, tol, &what("layer norm"));
            // Results round to nearest even once, overflowing to inf (f16) like `half`.
            let big = tensor(d, &[60000.0, 1e-4, -3.0], &[3]).cast(dtype).unwrap();
            let doubled = read(&big.add(&big).unwrap().cast(DType::F32).unwrap());
            let want: Vec<f64> = [60000.0f32, 1e-4, -3.0]
                .iter()
                .map(|&v| f64::from(round(round(round(v) + round(v)))))
                .collect();
            assert_close(&doubled, &want, 0.0, 0.0, &what("rounding of x + x"));
            // Mixing float dtypes is an error that names both.
            let e = at.add(&tensor(d, &a, &[m, k])).unwrap_err();
            assert_eq!(e.code(), "DTYPE", "{e}");
        }
    }
}

/// Every other op on f16 and bf16 inputs gives its f32 result rounded once: compared with the
/// same op on f32 tensors holding the same (16-bit representable) values.
#[test]
fn every_op_accepts_16_bit_floats() {
    use unicompute::{bf16, f16};
    type Case = (
        &'static str,
        Box<dyn Fn(&[&Tensor]) -> unicompute::Result<Tensor>>,
    );
    let cases: Vec<Case> = vec![
        (
            "rms_norm",
            Box::new(|t: &[&Tensor]| {
                t[0].rms_norm(NormParams {
                    weight: Some(t[1]),
                    ..Default::default()
                })
            }),
        ),
        ("sum", Box::new(|t: &[&Tensor]| t[0].sum(Some(1)))),
        (
            "argmax",
            Box::new(|t: &[&Tensor]| t[0].reduce(ReduceOp::Argmax, Some(1))),
        ),
        ("cumsum", Box::new(|t: &[&Tensor]| t[0].cumsum(1))),
        (
            "concat",
            Box::new(|t: &[&Tensor]| Tensor::concat(&[t[0], t[0]], 1)),
        ),
        (
            "gather",
            Box::new(|t: &[&Tensor]| {
                t[0].gather(1, &Tensor::from_slice(t[0].device(), &[3u32, 0, 7], &[3])?)
            }),
        ),
        (
            "where",
            Box::new(|t: &[&Tensor]| t[0].select(t[0], &t[0].unary(UnaryOp::Neg)?)),
        ),
        (
            "attention",
            Box::new(|t: &[&Tensor]| {
                let q = t[0].reshape(&[1, 2, 4, 8])?;
                q.attention(
                    &q,
                    &q,
                    AttentionParams {
                        causal: true,
                        ..Default::default()
                    },
                )
            }),
        ),
        (
            "conv2d",
            Box::new(|t: &[&Tensor]| {
                t[0].reshape(&[1, 2, 4, 8])?.conv2d(
                    t[2],
                    Conv2dParams {
                        padding: [1, 1],
                        ..Default::default()
                    },
                )
            }),
        ),
        (
            "max_pool2d",
            Box::new(|t: &[&Tensor]| {
                t[0].reshape(&[1, 2, 4, 8])?.pool2d(
                    PoolKind::Max,
                    Pool2dParams {
                        kernel: [2, 2],
                        stride: None,
                        padding: [0, 0],
                    },
                )
            }),
        ),
    ];
    for d in devices() {
        for dtype in [DType::F16, DType::BF16] {
            let round = |v: f32| {
                if dtype == DType::F16 {
                    f16::from_f32(v).to_f32()
                } else {
                    bf16::from_f32(v).to_f32()
                }
            };
            let tol = if dtype == DType::F16 { 2e-3 } else { 1.6e-2 };
            let data: Vec<Vec<f32>> = [(1600, 64), (1601, 8), (1602, 3 * 2 * 9)]
                .iter()
                .map(|&(seed, n)| random(seed, n, -1.0, 1.0).into_iter().map(round).collect())
                .collect();
            let shapes: [&[usize]; 3] = [&[8, 8], &[8], &[3, 2, 3, 3]];
            let wide: Vec<Tensor> = data
                .iter()
                .zip(shapes)
                .map(|(v, s)| tensor(d, v, s))
                .collect();
            let narrow: Vec<Tensor> = wide.iter().map(|t| t.cast(dtype).unwrap()).collect();
            for (op, f) in &cases {
                let want_t = f(&wide.iter().collect::<Vec<_>>()).unwrap();
                let got_t = f(&narrow.iter().collect::<Vec<_>>())
                    .unwrap_or_else(|e| panic!("{op} in {dtype} on {}: {e}", name(d)));
                let what = format!("{op} in {dtype} on {}", name(d));
                if want_t.dtype() == DType::U32 {
                    assert_eq!(
                        got_t.to_vec_blocking::<u32>().unwrap(),
                        want_t.to_vec_blocking::<u32>().unwrap(),
                        "{what}"
                    );
                    continue;
                }
                assert_eq!(got_t.dtype(), dtype, "{what}: result dtype");
                let want: Vec<f64> = read(&want_t)
                    .into_iter()
                    .map(|v| f64::from(round(v)))
                    .collect();
                assert_close(
                    &read(&got_t.cast(DType::F32).unwrap()),
                    &want,
                    tol,
                    tol,
                    &what,
                );
            }
        }
    }
}

// Long loops. Mesa's llvmpipe ends every loop of an invocation after 65,535 iterations in
// all (`Limits::max_loop_iterations`); the ops split their work there. These run on every
// device, and on lavapipe just below, at and past the limit.

#[test]
fn matmul_of_ones_counts_k_past_the_loop_limit() {
    for d in devices() {
        // The default variant just below, at and past the limit; every variant past it.
        let default = [65_535, 65_536, 65_537, 100_003].map(|k| (None, k));
        let named = ops::matmul::variants(d)
            .into_iter()
            .map(|v| (Some(v), 65_537));
        for (variant, k) in default.into_iter().chain(named) {
            let ones = vec![1.0; k];
            let (a, b) = (tensor(d, &ones, &[1, k]), tensor(d, &ones, &[k, 1]));
            let got = match variant {
                Some(v) => read(&ops::matmul::matmul_variant(&d.queue(), &a, &b, v).unwrap()),
                None => read(&a.matmul(&b).unwrap()),
            };
            assert_eq!(
                got,
                vec![k as f32],
                "ones[1, {k}] @ ones[{k}, 1] variant {variant:?} on {}",
                name(d)
            );
        }
    }
}

#[test]
fn matmul_and_linear_with_k_of_70_000() {
    // k odd (scalar tile loads) and k, n multiples of 4 (vec4 loads).
    let cases = [
        MatmulCase {
            batch_a: &[],
            batch_b: &[],
            m: 3,
            n: 5,
            k: 70_001,
        },
        MatmulCase {
            batch_a: &[2],
            batch_b: &[],
            m: 4,
            n: 8,
            k: 70_000,
        },
    ];
    for d in devices() {
        // The default variant on both cases, each named variant on one.
        let default = [(None, 0), (None, 1)];
        let named = ops::matmul::variants(d)
            .into_iter()
            .enumerate()
            .map(|(i, v)| (Some(v), i % 2));
        for (variant, i) in default.into_iter().chain(named) {
            let c = &cases[i];
            let seed = 1700 + i as u64;
            let na: usize = c.batch_a.iter().product();
            let a = random(seed, na * c.m * c.k, -1.0, 1.0);
            let b = random(seed + 1, c.k * c.n, -1.0, 1.0);
            let sa: Vec<usize> = c.batch_a.iter().copied().chain([c.m, c.k]).collect();
            let (at, bt) = (tensor(d, &a, &sa), tensor(d, &b, &[c.k, c.n]));
            let got = match variant {
                Some(v) => read(&ops::matmul::matmul_variant(&d.queue(), &at, &bt, v).unwrap()),
                None => read(&at.matmul(&bt).unwrap()),
            };
            let what = format!(
                "matmul {sa:?} @ [{}, {}] variant {variant:?} on {} seed {seed}",
                c.k,
                c.n,
                name(d)
            );
            assert_close(&got, &matmul_reference(&a, &b, c), 1e-4, 1e-3, &what);
        }
        // linear: bias and activation once, after the whole sum over k.
        let (rows, k, n, seed) = (2, 70_001, 3, 1710);
        let (x, w, bias) = (
            random(seed, rows * k, -1.0, 1.0),
            random(seed + 1, n * k, -1.0, 1.0),
            random(seed + 2, n, -1.0, 1.0),
        );
        let (xt, wt, bt) = (
            tensor(d, &x, &[rows, k]),
            tensor(d, &w, &[n, k]),
            tensor(d, &bias, &[n]),
        );
        for act in [None, Some(UnaryOp::GeluTanh)] {
            let got = read(
                &ops::matmul::linear(&d.queue(), &xt, &wt.t().unwrap(), Some(&bt), act).unwrap(),
            );
            let want: Vec<f64> = (0..rows * n)
                .map(|i| {
                    let v = (0..k)
                        .map(|p| f64::from(x[i / n * k + p]) * f64::from(w[i % n * k + p]))
                        .sum::<f64>()
                        + f64::from(bias[i % n]);
                    act.map_or(v, |f| f.eval(v))
                })
                .collect();
            assert_close(
                &got,
                &want,
                1e-4,
                1e-3,
                &format!(
                    "linear [{rows}, {k}] x [{k}, {n}] act {act:?} on {} seed {seed}",
                    name(d)
                ),
            );
        }
    }
}

#[test]
fn attention_over_65_537_keys() {
    // [b, h, lq, lk, d, dv]
    let cases: &[[usize; 6]] = &[[1, 1, 3, 65_537, 4, 4], [1, 2, 2, 65_537, 8, 72]];
    for d in &devices_and_variants() {
        for (c, &dims) in cases.iter().enumerate() {
            let [b, h, lq, lk, hd, dv] = dims;
            let seed = 1720 + 10 * c as u64;
            let (q, k, v) = attention_inputs(seed, dims);
            let mask = random(seed + 3, lq * lk, -2.0, 2.0);
            let (qt, kt, vt, mt) = (
                tensor(d, &q, &[b, h, lq, hd]),
                tensor(d, &k, &[b, h, lk, hd]),
                tensor(d, &v, &[b, h, lk, dv]),
                tensor(d, &mask, &[lq, lk]),
            );
            for with_mask in [false, true] {
                let params = AttentionParams {
                    mask: with_mask.then_some(&mt),
                    causal: false,
                    scale: None,
                };
                let got =
                    read(&ops::attention::attention(&d.queue(), &qt, &kt, &vt, params).unwrap());
                let want = attention_reference(
                    &q,
                    &k,
                    &v,
                    with_mask.then_some(&mask[..]),
                    dims,
                    1.0 / (hd as f64).sqrt(),
                    false,
                );
                assert_close(
                    &got,
                    &want,
                    1e-3,
                    1e-5,
                    &format!(
                        "attention {dims:?} mask {with_mask} on {} seed {seed}",
                        name(d)
                    ),
                );
            }
        }
    }
}

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

#[test]
fn conv2d_with_70_000_taps_per_output() {
    // c * kh * kw past 65,535: many channels, then one long kernel row; and an output large
    // enough that the cpu's im2col goes in column tiles (27 x 158,404 > 2^22).
    let cases: &[([usize; 4], [usize; 4])] = &[
        ([1, 7_800, 5, 6], [2, 7_800, 3, 3]),
        ([1, 1, 2, 70_005], [2, 1, 1, 70_000]),
        ([1, 3, 400, 400], [2, 3, 3, 3]),
    ];
    for d in devices() {
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
}

/// Rows of 9 million columns, and two rows of 4.5 million.
const LONG_ROWS: [[usize; 2]; 2] = [[1, 9_000_000], [2, 4_500_007]];

#[test]
fn softmax_and_norms_of_rows_of_9_million() {
    for d in &devices_and_variants() {
        for (c, shape) in LONG_ROWS.iter().enumerate() {
            let seed = 1760 + c as u64;
            let x = random(seed, shape[0] * shape[1], -3.0, 5.0);
            let xt = tensor(d, &x, shape);
            let rows = || {
                x.chunks(shape[1])
                    .map(|r| r.iter().map(|&v| f64::from(v)).collect::<Vec<f64>>())
            };
            let got = read(&xt.softmax().unwrap());
            let want: Vec<f64> = rows().flat_map(|r| reference_row(&r)).collect();
            assert_close(
                &got,
                &want,
                1e-4,
                0.0,
                &format!("softmax {shape:?} on {} seed {seed}", name(d)),
            );
            let got = read(&xt.log_softmax().unwrap());
            let want = by_rows(&x, shape[1], ops::log_softmax::reference_row);
            assert_close(
                &got,
                &want,
                1e-5,
                1e-5,
                &format!("log_softmax {shape:?} on {} seed {seed}", name(d)),
            );
            // Layer norm on the one row, RMS norm on the two.
            let kind = [NormKind::Layer, NormKind::Rms][c];
            let got = read(&ops::norm::norm(&d.queue(), kind, &xt, NormParams::default()).unwrap());
            let want: Vec<f64> = rows().flat_map(|r| kind.reference_row(&r, 1e-5)).collect();
            assert_close(
                &got,
                &want,
                1e-4,
                1e-4,
                &format!("{} {shape:?} on {} seed {seed}", kind.name(), name(d)),
            );
        }
    }
}

#[test]
fn cumsum_of_rows_of_9_million() {
    // Along rows of 9 million, along 4.5 million rows of a [4.5M, 2] (every other element).
    let cases: &[(&[usize], usize)] = &[(&[1, 9_000_000], 1), (&[4_500_003, 2], 0)];
    for d in devices() {
        for (c, &(shape, axis)) in cases.iter().enumerate() {
            let seed = 1770 + c as u64;
            let x = random(seed, shape[0] * shape[1], -1.0, 1.0);
            let got = read(&tensor(d, &x, shape).cumsum(axis).unwrap());
            let inner = if axis == 0 { shape[1] } else { 1 };
            let mut want = vec![0.0f64; x.len()];
            for line in 0..x.len() / shape[axis] {
                let (base, mut acc) = ((line / inner) * shape[axis] * inner + line % inner, 0.0);
                for j in 0..shape[axis] {
                    acc += f64::from(x[base + j * inner]);
                    want[base + j * inner] = acc;
                }
            }
            // Random walks of +-1 steps: absolute error grows with the line length.
            assert_close(
                &got,
                &want,
                1e-5,
                1e-6 * shape[axis] as f64,
                &format!("cumsum {shape:?} axis {axis} on {} seed {seed}", name(d)),
            );
        }
    }
}

#[test]
fn cumsum_keeps_infinities_and_nan_exact() {
    let inf = f32::INFINITY;
    let cases: &[(&[f32], &[f64])] = &[
        (&[inf, 1.0, 2.0], &[f64::INFINITY; 3]),
        (
            &[1.0, -inf, 2.0, inf],
            &[1.0, f64::NEG_INFINITY, f64::NEG_INFINITY, f64::NAN],
        ),
        (&[-inf, -inf, 3.0], &[f64::NEG_INFINITY; 3]),
    ];
    for d in devices() {
        for &(x, want) in cases {
            let got = read(&tensor(d, x, &[x.len()]).cumsum(0).unwrap());
            assert_close(
                &got,
                want,
                0.0,
                0.0,
                &format!("cumsum {x:?} on {}", name(d)),
            );
        }
        // A NaN and an inf inside long rows (mid-segment on the gpu): earlier entries stay
        // finite and exact, later ones are NaN / inf.
        for (special, at, n) in [(f32::NAN, 40_123, 70_001), (inf, 5_000_123, 9_000_000)] {
            let mut x = random(1780, n, -1.0, 1.0);
            x[at] = special;
            let got = read(&tensor(d, &x, &[n]).cumsum(0).unwrap());
            let mut acc = 0.0;
            let want: Vec<f64> = x
                .iter()
                .map(|&v| {
                    acc += f64::from(v);
                    acc
                })
                .collect();
            assert_close(
                &got,
                &want,
                1e-5,
                1e-6 * n as f64,
                &format!("cumsum of {n} with {special} at {at} on {}", name(d)),
            );
        }
    }
}
