//! Unary, binary and n-ary elementwise ops, fused activations, NaN and infinities.

use crate::common::{assert_close, devices, gather, name, per_backend, random, read, tensor};
use unicompute::ops;
use unicompute::{BinaryOp, Device, ReduceOp, Tensor, UnaryOp};

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

fn unary_ops_match_reference(d: &Device) {
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
per_backend!(unary_ops_match_reference);

/// Distance from `got` to `want` in units in the last place of `want` rounded to f32.
fn ulps(got: f32, want: f64) -> f64 {
    let w = want as f32;
    let ulp = f64::from(f32::from_bits(w.abs().to_bits() + 1) - w.abs());
    (f64::from(got) - want).abs() / ulp
}

fn sin_and_cos_are_within_2_ulp_far_from_zero(d: &Device) {
    use std::f32::consts::{FRAC_PI_2, PI, TAU};
    let mut x = random(8200, 4099, -1e4, 1e4);
    x.extend(random(8201, 1021, -10.0, 10.0));
    x.extend([
        0.0, 1e-20, FRAC_PI_2, PI, -PI, TAU, 100.0, 355.0, 9999.999, -1e4,
    ]);
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
per_backend!(sin_and_cos_are_within_2_ulp_far_from_zero);

fn erf_keeps_its_precision_near_zero_and_saturates(d: &Device) {
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
    let got = read(&tensor(d, &x, &[x.len()]).unary(UnaryOp::Erf).unwrap());
    assert_close(&got, &want, 1e-6, 1e-30, &format!("erf on {}", name(d)));
}
per_backend!(erf_keeps_its_precision_near_zero_and_saturates);

fn nary_sum_max_and_min_broadcast_across_every_input(d: &Device) {
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
per_backend!(nary_sum_max_and_min_broadcast_across_every_input);

fn unary_on_strided_views(d: &Device) {
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
per_backend!(unary_on_strided_views);

fn binary_ops_broadcast_like_numpy(d: &Device) {
    let cases: &[(&[usize], &[usize], &[usize])] = &[
        (&[1], &[13], &[13]),
        (&[257], &[257], &[257]),
        (&[5, 1, 7], &[1, 3, 1], &[5, 3, 7]),
        (&[4, 1], &[4, 6], &[4, 6]),
        (&[2, 3, 4], &[4], &[2, 3, 4]),
    ];
    let q = d.queue();
    // The logic ops (bool results) are conformance/bytes.rs's.
    let ops = BinaryOp::ALL.into_iter().filter(|op| !op.is_logic());
    for (k, op) in ops.enumerate() {
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
                &ops::elementwise::binary(&q, op, &tensor(d, &a, sa), &tensor(d, &b, sb)).unwrap(),
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
per_backend!(binary_ops_broadcast_like_numpy);

fn pow_of_negative_bases_with_integer_exponents(d: &Device) {
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
per_backend!(pow_of_negative_bases_with_integer_exponents);

fn fused_binary_activation_matches_two_steps(d: &Device) {
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
per_backend!(fused_binary_activation_matches_two_steps);

fn nan_and_inf_propagate(d: &Device) {
    let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.5, -2.5];
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
per_backend!(nan_and_inf_propagate, variants);

fn elementwise_past_one_dispatch_dimension(d: &Device) {
    // 65,535 workgroups of 256 is the largest one-dimensional dispatch: go past it.
    let n = 65_535 * 256 + 7;
    let a = random(42, n, -2.0, 2.0);
    let b = random(43, 1, 0.5, 1.5);
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
per_backend!(elementwise_past_one_dispatch_dimension);
