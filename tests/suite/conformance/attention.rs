//! Attention against a naive reference: masks, causal masking, 65,537 keys.

use crate::common::{assert_close, gather, name, per_backend, random, read, tensor};
use unicompute::ops;
use unicompute::ops::softmax::reference_row;
use unicompute::ops::AttentionParams;
use unicompute::{DType, Device, Tensor};

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

fn attention_matches_naive_reference(d: &Device) {
    // [b, h, lq, lk, d, dv]
    let cases: &[[usize; 6]] = &[
        [1, 1, 1, 1, 1, 1],
        [2, 3, 7, 13, 16, 8],
        [1, 2, 300, 1000, 64, 64],
        [1, 1, 5, 70, 200, 256],
    ];
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
        for (causal, with_mask) in [(false, false), (true, false), (false, true), (true, true)] {
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
per_backend!(attention_matches_naive_reference, variants);

/// Attention of `q`, `k`, `v` under additive mask `mask` on `d`, read back.
fn masked(d: &Device, [q, k, v]: [&Tensor; 3], mask: &Tensor, causal: bool) -> Vec<f32> {
    let params = AttentionParams {
        mask: Some(mask),
        causal,
        scale: None,
    };
    read(&ops::attention::attention(&d.queue(), q, k, v, params).unwrap())
}

/// Masks whose keys are not adjacent in memory: a transposed view (keys `lq` apart) and a
/// `[lq, 1]` column broadcast over the keys (stride 0), against the same mask materialised.
fn attention_masks_of_strided_layouts(d: &Device) {
    let dims = [1, 2, 11, 37, 8, 5];
    let [b, h, lq, lk, hd, dv] = dims;
    let seed = 1300;
    let (q, k, v) = attention_inputs(seed, dims);
    let (qt, kt, vt) = (
        tensor(d, &q, &[b, h, lq, hd]),
        tensor(d, &k, &[b, h, lk, hd]),
        tensor(d, &v, &[b, h, lk, dv]),
    );
    // Stored [lk, lq] (some keys masked out, never a whole row), read through `.t()`.
    let mut stored = random(seed + 3, lk * lq, -2.0, 2.0);
    for (n, m) in stored.iter_mut().enumerate() {
        if n % 5 == 2 && n / lq != 0 {
            *m = f32::NEG_INFINITY;
        }
    }
    let transposed = gather(&stored, &[lq, lk], &[1, lq], 0);
    let column = random(seed + 4, lq, -2.0, 2.0);
    let broadcast: Vec<f32> = column.iter().flat_map(|&c| vec![c; lk]).collect();
    let cases = [
        (
            "transposed",
            tensor(d, &stored, &[lk, lq]).t().unwrap(),
            transposed,
        ),
        ("column", tensor(d, &column, &[lq, 1]), broadcast),
    ];
    for (what, mt, mask) in cases {
        for causal in [false, true] {
            let got = masked(d, [&qt, &kt, &vt], &mt, causal);
            let scale = 1.0 / (hd as f64).sqrt();
            let want = attention_reference(&q, &k, &v, Some(&mask), dims, scale, causal);
            let what = format!(
                "attention {dims:?} {what} mask causal {causal} on {}",
                name(d)
            );
            assert_close(&got, &want, 1e-4, 1e-5, &what);
        }
    }
}
per_backend!(attention_masks_of_strided_layouts, variants);

/// Query rows whose keys are all masked out, by the mask alone or by the mask and causal
/// masking together, and attention over no keys at all, give 0 (ONNX), on every device and
/// variant; the other rows still match the reference.
fn attention_rows_with_every_key_masked_are_zero(d: &Device) {
    // [b, h, lq, lk, d, dv]: keys past one tile of 64; no keys.
    let cases: &[[usize; 6]] = &[[2, 3, 6, 70, 8, 5], [1, 2, 3, 0, 4, 5]];
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
            let got = masked(d, [&qt, &kt, &vt], &mt, causal);
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
per_backend!(attention_rows_with_every_key_masked_are_zero, variants);

fn attention_over_65_537_keys(d: &Device) {
    // [b, h, lq, lk, d, dv]
    let cases: &[[usize; 6]] = &[[1, 1, 3, 65_537, 4, 4], [1, 2, 2, 65_537, 8, 72]];
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
            let got = read(&ops::attention::attention(&d.queue(), &qt, &kt, &vt, params).unwrap());
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
per_backend!(attention_over_65_537_keys, variants);

/// Seeded `[b, h, seq, dim]` values in `dtype`, and the same values widened to f32.
fn half_tensor(d: &Device, seed: u64, shape: [usize; 4], dtype: DType) -> (Tensor, Vec<f32>) {
    let n = shape.iter().product();
    let t = (tensor(d, &random(seed, n, -1.0, 1.0), &shape).cast(dtype)).unwrap();
    let wide = read(&t.cast(DType::F32).unwrap());
    (t, wide)
}

/// f16 and bf16 attention (the tensor cores on cuda, f32 elsewhere) against the f64 reference
/// of the same 16-bit values: sizes that are not multiples of the kernels' 64-row and 64-key
/// tiles, causal or not, head dimensions from 16 to 128 and one the tensor-core kernel refuses
/// (40: widened to f32), and a view with its columns offset by two elements.
fn attention_of_16_bit_floats_matches_f64(d: &Device) {
    let cases: &[[usize; 5]] = &[
        [1, 1, 1, 1, 16],
        [2, 3, 67, 130, 64],
        [1, 2, 200, 70, 128],
        [1, 1, 5, 9, 40],
        [1, 2, 33, 129, 80],
    ];
    for dtype in [DType::F16, DType::BF16] {
        // One rounding of the probabilities and one of the output.
        let atol = if dtype == DType::F16 { 2e-3 } else { 8e-3 };
        for (c, &[b, h, lq, lk, hd]) in cases.iter().enumerate() {
            let seed = 1900 + 10 * c as u64;
            let (qt, q) = half_tensor(d, seed, [b, h, lq, hd], dtype);
            // k sits in columns 2.. of a wider tensor: rows 4-byte aligned, not 16-byte.
            let (wide_k, _) = half_tensor(d, seed + 1, [b, h, lk, hd + 2], dtype);
            let kt = wide_k.slice(3, 2..hd + 2).unwrap();
            let k = read(&kt.cast(DType::F32).unwrap());
            let (vt, v) = half_tensor(d, seed + 2, [b, h, lk, hd], dtype);
            for causal in [false, true] {
                let params = AttentionParams {
                    mask: None,
                    causal,
                    scale: Some(0.5),
                };
                let got = ops::attention::attention(&d.queue(), &qt, &kt, &vt, params).unwrap();
                assert_eq!(got.dtype(), dtype);
                let got = read(&got.cast(DType::F32).unwrap());
                let dims = [b, h, lq, lk, hd, hd];
                let want = attention_reference(&q, &k, &v, None, dims, 0.5, causal);
                let what = format!("{dtype} attention {dims:?} causal {causal} on {}", name(d));
                assert_close(&got, &want, 0.0, atol, &what);
            }
        }
    }
}
per_backend!(attention_of_16_bit_floats_matches_f64);
