//! Cumulative sums: along each axis, exclusive and reversed, long rows, specials.

use crate::common::{assert_close, name, per_backend, random, read, tensor};
use unicompute::Device;

fn cumsum_along_each_axis(d: &Device) {
    let cases: &[(&[usize], usize)] = &[
        (&[1], 0),
        (&[257], 0),
        (&[3, 1000], 1),
        (&[3, 1000], 0),
        (&[2, 5, 7], 1),
        (&[1, 70_001], 1),
    ];
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
per_backend!(cumsum_along_each_axis);

fn cumsum_exclusive_and_reverse_follow_onnx(d: &Device) {
    use unicompute::ops::CumsumOptions;
    let cases: &[(&[usize], usize)] = &[
        (&[1], 0),
        (&[7], 0),
        (&[3, 257], 1),
        (&[4, 5, 6], 0),
        (&[2, 3, 4], 2),
    ];
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
            assert_close(
                &got,
                &want,
                1e-5,
                1e-6 * len as f64,
                &format!(
                    "cumsum {shape:?} axis {axis} exclusive {exclusive} reverse {reverse} on {}",
                    name(d)
                ),
            );
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
per_backend!(cumsum_exclusive_and_reverse_follow_onnx);

fn cumsum_of_rows_of_9_million(d: &Device) {
    // Along rows of 9 million, along 4.5 million rows of a [4.5M, 2] (every other element).
    let cases: &[(&[usize], usize)] = &[(&[1, 9_000_000], 1), (&[4_500_003, 2], 0)];
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
per_backend!(cumsum_of_rows_of_9_million);

fn cumsum_keeps_infinities_and_nan_exact(d: &Device) {
    let inf = f32::INFINITY;
    let cases: &[(&[f32], &[f64])] = &[
        (&[inf, 1.0, 2.0], &[f64::INFINITY; 3]),
        (
            &[1.0, -inf, 2.0, inf],
            &[1.0, f64::NEG_INFINITY, f64::NEG_INFINITY, f64::NAN],
        ),
        (&[-inf, -inf, 3.0], &[f64::NEG_INFINITY; 3]),
    ];
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
per_backend!(cumsum_keeps_infinities_and_nan_exact);
