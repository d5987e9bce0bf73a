//! Softmax and log-softmax: any axis, strided views, overflow, small probabilities,
//! and softmax and the norms on rows of 9 million.

use crate::common::{assert_close, name, per_backend, random, read, tensor};
use unicompute::ops;
use unicompute::ops::softmax::reference_row;
use unicompute::ops::{NormKind, NormParams};
use unicompute::{DType, Device, Tensor};

/// Rows of every length class (1, primes, past one workgroup's 256 and 1024, many rows) with
/// values far from zero, as `(shape, low, high)`.
const ROW_CASES: &[(&[usize], f32, f32)] = &[
    (&[1, 1], -1.0, 1.0),
    (&[3, 7], -5.0, 5.0),
    (&[5, 1000], 500.0, 1000.0),
    (&[2, 3, 257], -80.0, 80.0),
    (&[1, 4099], -3.0, 3.0),
    (&[1100, 300], -20.0, 20.0),
    // Aligned rows that CUDA holds in registers: 8 and 16 float4s per thread.
    (&[7, 8192], -30.0, 30.0),
    (&[2, 16384], -9.0, 9.0),
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

/// `op` of [`SPECIAL_ROWS`] as rows of 3, and of the same rows padded to 4 (CUDA's float4
/// rows) with a -inf: NaN wherever `reference` makes it so, which is everywhere.
fn special_rows_are_nan(
    d: &Device,
    what: &str,
    op: fn(&Tensor) -> unicompute::Result<Tensor>,
    reference: fn(&[f64]) -> Vec<f64>,
) {
    let padded: Vec<f32> = SPECIAL_ROWS
        .chunks(3)
        .flat_map(|r| r.iter().copied().chain([f32::NEG_INFINITY]))
        .collect();
    for (x, cols) in [(&SPECIAL_ROWS[..], 3), (&padded[..], 4)] {
        let got = read(&op(&tensor(d, x, &[3, cols])).unwrap());
        let want = by_rows(x, cols, reference);
        assert!(
            want.iter().all(|w| w.is_nan()),
            "the reference makes these rows NaN"
        );
        let case = format!(
            "{what} of [3, {cols}] with +inf, NaN and all -inf on {}",
            name(d)
        );
        assert_close(&got, &want, 0.0, 0.0, &case);
    }
}

fn log_softmax_is_overflow_safe_and_keeps_small_probabilities(d: &Device) {
    use unicompute::ops::log_softmax::reference_row as log_reference;
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
    special_rows_are_nan(d, "log_softmax", |t| t.log_softmax(), log_reference);
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
per_backend!(
    log_softmax_is_overflow_safe_and_keeps_small_probabilities,
    variants
);

fn softmax_and_log_softmax_along_any_axis(d: &Device) {
    use unicompute::ops::log_softmax::reference_row as log_reference;
    let shape = [3, 5, 4];
    let x = random(8700, 60, -6.0, 6.0);
    let strides = [20, 4, 1];
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
per_backend!(softmax_and_log_softmax_along_any_axis);

/// Softmax along an axis that is not last, over more rows side by side than one cpu task
/// takes (12,289 and 6,007 elements apart: a task of 3-element rows holds 10,922).
fn softmax_across_many_rows_side_by_side(d: &Device) {
    for (shape, axis) in [([2, 3, 12_289], 1), ([3, 2, 6_007], 0)] {
        let n = shape.iter().product();
        let x = random(8750 + axis as u64, n, -6.0, 6.0);
        let got = read(&tensor(d, &x, &shape).softmax_axis(axis).unwrap());
        let inner: usize = shape[axis + 1..].iter().product();
        let len = shape[axis];
        for r in 0..n / len {
            let at: Vec<usize> = (0..len)
                .map(|j| (r / inner) * len * inner + j * inner + r % inner)
                .collect();
            let want = reference_row(&at.iter().map(|&o| f64::from(x[o])).collect::<Vec<_>>());
            let fiber: Vec<f32> = at.iter().map(|&o| got[o]).collect();
            let what = format!("softmax of {shape:?} along {axis}, row {r}, on {}", name(d));
            assert_close(&fiber, &want, 1e-5, 1e-6, &what);
        }
    }
}
per_backend!(softmax_across_many_rows_side_by_side);

fn softmax_of_strided_views_matches_reference(d: &Device) {
    // Views whose rows the kernels read in place: a transpose, a slice with a step between
    // rows, and a broadcast (stride 0); and one whose outer axes do not flatten (a copy).
    let x = random(8800, 4 * 6 * 9, -6.0, 6.0);
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
per_backend!(softmax_of_strided_views_matches_reference, variants);

fn softmax_rows_are_overflow_safe(d: &Device) {
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
    special_rows_are_nan(d, "softmax", |t| t.softmax(), reference_row);
}
per_backend!(softmax_rows_are_overflow_safe, variants);

/// Rows of 9 million columns, and two rows of 4.5 million.
const LONG_ROWS: [[usize; 2]; 2] = [[1, 9_000_000], [2, 4_500_007]];

fn softmax_and_norms_of_rows_of_9_million(d: &Device) {
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
per_backend!(softmax_and_norms_of_rows_of_9_million, variants);
