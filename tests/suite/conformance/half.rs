//! f16 and bf16: casts round like `half`, and every op computes in f32, rounds once.

use crate::common::{assert_close, gather, name, per_backend, random, read, tensor};
use unicompute::ops::softmax::reference_row;
use unicompute::ops::{
    AttentionParams, Conv2dParams, ConvTranspose2dParams, NormKind, NormParams, Pool2dParams,
    PoolKind,
};
use unicompute::{DType, Device, ReduceOp, Tensor, UnaryOp};

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

fn casts_to_and_from_16_bit_floats_round_like_half(d: &Device) {
    use unicompute::{bf16, f16};
    let same = |a: f32, b: f32| (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits();
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
per_backend!(casts_to_and_from_16_bit_floats_round_like_half);

fn ops_on_16_bit_floats_compute_in_f32_and_round_once(d: &Device) {
    use unicompute::{bf16, f16};
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
per_backend!(ops_on_16_bit_floats_compute_in_f32_and_round_once);

/// 16-bit matmuls (cuBLAS multiplies them as stored on cuda; elsewhere they widen to f32) give
/// the f64 product rounded once: batched, with a broadcast batch and a transposed operand, in
/// odd sizes.
fn matmuls_of_16_bit_floats_round_once(d: &Device) {
    for dtype in [DType::F16, DType::BF16] {
        // Half an ulp of one rounding, and f32 accumulation over k terms of size at most 1.
        let rtol = if dtype == DType::F16 { 1e-3 } else { 4e-3 };
        let (batch, m, k, n) = (3, 17, 129, 31);
        let widen = |t: Tensor| read(&t.cast(DType::F32).unwrap());
        let a16 = tensor(d, &random(1510, batch * m * k, -1.0, 1.0), &[batch, m, k])
            .cast(dtype)
            .unwrap();
        // b is stored [n, k] and used through its transposed view, broadcast over the batch.
        let b16 = tensor(d, &random(1511, n * k, -1.0, 1.0), &[n, k])
            .cast(dtype)
            .unwrap();
        let (a, b) = (widen(a16.clone()), widen(b16.clone()));
        let got = a16.matmul(&b16.t().unwrap()).unwrap();
        assert_eq!((got.dtype(), got.shape()), (dtype, &[batch, m, n][..]));
        let want: Vec<f64> = (0..batch * m * n)
            .map(|i| {
                let (row, col) = (i / n, i % n);
                (0..k)
                    .map(|p| f64::from(a[row * k + p]) * f64::from(b[col * k + p]))
                    .sum()
            })
            .collect();
        let what = format!(
            "[{batch}, {m}, {k}] @ [{n}, {k}]^T in {dtype} on {}",
            name(d)
        );
        assert_close(&widen(got), &want, rtol, 1e-5 * k as f64, &what);
    }
}
per_backend!(matmuls_of_16_bit_floats_round_once);

/// Every other op on f16 and bf16 inputs gives its f32 result rounded once: compared with the
/// same op on f32 tensors holding the same (16-bit representable) values.
fn every_op_accepts_16_bit_floats(d: &Device) {
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
            "conv_transpose2d",
            Box::new(|t: &[&Tensor]| {
                t[0].reshape(&[1, 2, 4, 8])?.conv_transpose2d(
                    &t[2].reshape(&[2, 3, 3, 3])?,
                    ConvTranspose2dParams {
                        stride: [2, 1],
                        padding: [1, 0, 0, 1],
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
per_backend!(every_op_accepts_16_bit_floats);
