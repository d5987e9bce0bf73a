//! The rounding unary ops ONNX models need (floor, ceil, round with halves to even, sign) on
//! every device, exactly against the f64 reference: seeded random inputs on odd shapes with
//! whole numbers and halves mixed in, and the specials.

use crate::common::{assert_close, name, per_backend, random, read, tensor};
use unicompute::{Device, Tensor, UnaryOp};

/// Shapes with 1, primes, and sizes that are no multiple of the 256-wide workgroups.
const SHAPES: &[&[usize]] = &[&[1], &[7], &[257], &[3, 5, 11], &[2, 1, 131]];

/// A unary op's `Tensor` method.
type Method = fn(&Tensor) -> unicompute::Result<Tensor>;

/// The rounding ops, each through its method and by name.
const OPS: [(UnaryOp, Method); 4] = [
    (UnaryOp::Floor, Tensor::floor),
    (UnaryOp::Ceil, Tensor::ceil),
    (UnaryOp::Round, Tensor::round),
    (UnaryOp::Sign, Tensor::sign),
];

/// `n` values in (-40, 40): every third one a multiple of 0.5 (whole numbers and halves,
/// where rounding decides ties), the rest random.
fn inputs(seed: u64, n: usize) -> Vec<f32> {
    let x = random(seed, n, -40.0, 40.0);
    x.iter()
        .enumerate()
        .map(|(i, &v)| {
            if i % 3 == 0 {
                (v * 2.0).trunc() / 2.0
            } else {
                v
            }
        })
        .collect()
}

fn rounding_matches_reference(d: &Device) {
    for (k, (op, method)) in OPS.into_iter().enumerate() {
        for (s, shape) in SHAPES.iter().enumerate() {
            let seed = (9_500 + k * 100 + s) as u64;
            let x = inputs(seed, shape.iter().product());
            let want: Vec<f64> = x.iter().map(|&v| op.eval(f64::from(v))).collect();
            let t = tensor(d, &x, shape);
            let what = format!("{} {shape:?} on {} seed {seed}", op.name(), name(d));
            assert_close(&read(&method(&t).unwrap()), &want, 0.0, 0.0, &what);
            assert_close(&read(&t.unary(op).unwrap()), &want, 0.0, 0.0, &what);
        }
    }
}
per_backend!(rounding_matches_reference);

/// Halves go to the even neighbour; infinities, zeros and NaN pass through.
fn rounding_specials(d: &Device) {
    let x = [
        0.5,
        1.5,
        2.5,
        -0.5,
        -1.5,
        -2.5,
        0.49999997,
        8_388_609.0,
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
    ];
    let t = tensor(d, &x, &[x.len()]);
    let round = read(&t.round().unwrap());
    assert_eq!(
        &round[..8],
        &[0.0, 2.0, 2.0, -0.0, -2.0, -2.0, 0.0, 8_388_609.0]
    );
    for (op, method) in OPS {
        let got = read(&method(&t).unwrap());
        for (i, (&g, &v)) in got.iter().zip(&x).enumerate() {
            let w = op.eval(f64::from(v)) as f32;
            let same = g == w || (g.is_nan() && w.is_nan());
            assert!(
                same,
                "{}({v}) is {g}, expected {w} (element {i}) on {}",
                op.name(),
                name(d)
            );
        }
    }
}
per_backend!(rounding_specials);
