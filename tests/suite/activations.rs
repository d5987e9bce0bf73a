//! The activations ONNX models need beyond the first ones: softplus, hardswish and relu6, on
//! every device against the f64 reference, on odd shapes, at large |x|, with specials, in f16 and
//! bf16, and fused after a binary op.

use crate::common::{assert_close, devices, name, per_backend, random, read, tensor};
use unicompute::Device;
use unicompute::{bf16, f16, BinaryOp, DType, Tensor, UnaryOp};

/// Shapes with 1, primes, and sizes that are no multiple of the 256-wide workgroups.
const SHAPES: &[&[usize]] = &[&[1], &[7], &[257], &[3, 5, 11], &[2, 1, 131]];

/// A unary op's `Tensor` method.
type Method = fn(&Tensor) -> unicompute::Result<Tensor>;

/// The new activations, each through its method and by name.
const OPS: [(UnaryOp, Method); 3] = [
    (UnaryOp::Softplus, Tensor::softplus),
    (UnaryOp::Hardswish, Tensor::hardswish),
    (UnaryOp::Relu6, Tensor::relu6),
];

/// `op` of `x` (f32) in f64.
fn reference(op: UnaryOp, x: &[f32]) -> Vec<f64> {
    x.iter().map(|&v| op.eval(f64::from(v))).collect()
}

fn softplus_and_hardswish_match_reference(d: &Device) {
    for (k, (op, method)) in OPS.into_iter().enumerate() {
        for (s, shape) in SHAPES.iter().enumerate() {
            let seed = (9_000 + k * 100 + s) as u64;
            let x = random(seed, shape.iter().product(), -8.0, 8.0);
            let t = tensor(d, &x, shape);
            let what = format!("{} {shape:?} on {} seed {seed}", op.name(), name(d));
            assert_close(
                &read(&method(&t).unwrap()),
                &reference(op, &x),
                2e-5,
                1e-6,
                &what,
            );
            assert_close(
                &read(&t.unary(op).unwrap()),
                &reference(op, &x),
                2e-5,
                1e-6,
                &what,
            );
        }
    }
}
per_backend!(softplus_and_hardswish_match_reference);

/// Softplus keeps its relative precision where `ln(1 + e^x)` is tiny (very negative x: e^x
/// itself) and does not overflow where e^x would (large x: x itself).
#[test]
fn softplus_is_stable_at_large_magnitudes() {
    let mut x = random(9_100, 131, -30.0, -10.0);
    x.extend(random(9_101, 131, 10.0, 90.0));
    x.extend([-87.0, -1e4, -1e30, 100.0, 1e4, 1e30, 3e38, -3e38]);
    let want = reference(UnaryOp::Softplus, &x);
    for d in devices() {
        let got = read(&tensor(d, &x, &[x.len()]).softplus().unwrap());
        // No absolute slack: tiny results must be right relative to their size (a subnormal
        // result, e^-87 and below, may flush to zero on a GPU).
        let atol = f64::from(f32::MIN_POSITIVE);
        assert_close(
            &got,
            &want,
            2e-5,
            atol,
            &format!("softplus at large |x| on {}", name(d)),
        );
    }
}

#[test]
fn specials_propagate() {
    let x = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        -3.0,
        3.0,
        -2.5,
        0.0,
        -0.0,
    ];
    for d in devices() {
        let t = tensor(d, &x, &[x.len()]);
        for (op, method) in OPS {
            let what = format!("{} of specials on {}", op.name(), name(d));
            assert_close(
                &read(&method(&t).unwrap()),
                &reference(op, &x),
                1e-5,
                0.0,
                &what,
            );
        }
    }
}

/// On f16 and bf16 the result is the f32 result of the 16-bit inputs, rounded once.
fn sixteen_bit_floats(d: &Device) {
    for dtype in [DType::F16, DType::BF16] {
        let round = |v: f32| match dtype {
            DType::F16 => f16::from_f32(v).to_f32(),
            _ => bf16::from_f32(v).to_f32(),
        };
        let tol = if dtype == DType::F16 { 2e-3 } else { 1.6e-2 };
        for (op, method) in OPS {
            let x: Vec<f32> = random(9_200, 3 * 67, -8.0, 8.0)
                .into_iter()
                .map(round)
                .collect();
            let narrow = tensor(d, &x, &[3, 67]).cast(dtype).unwrap();
            let got_t = method(&narrow).unwrap();
            assert_eq!(got_t.dtype(), dtype, "{} keeps {dtype}", op.name());
            let got = read(&got_t.cast(DType::F32).unwrap());
            let what = format!("{} in {dtype} on {}", op.name(), name(d));
            assert_close(&got, &reference(op, &x), tol, tol * 1e-2, &what);
        }
    }
}
per_backend!(sixteen_bit_floats);

/// Fused after a binary op in one kernel, as every unary op can be.
#[test]
fn fused_after_a_binary_op() {
    let (a, b) = (
        random(9_300, 3 * 97, -6.0, 6.0),
        random(9_301, 97, -6.0, 6.0),
    );
    for d in devices() {
        let (ta, tb) = (tensor(d, &a, &[3, 97]), tensor(d, &b, &[97]));
        for (op, _) in OPS {
            let got = read(&ta.binary_act(BinaryOp::Add, op, &tb).unwrap());
            let want: Vec<f64> = a
                .iter()
                .enumerate()
                .map(|(i, &x)| op.eval(f64::from(x) + f64::from(b[i % 97])))
                .collect();
            let what = format!("add+{} on {}", op.name(), name(d));
            assert_close(&got, &want, 2e-5, 1e-6, &what);
        }
    }
}
