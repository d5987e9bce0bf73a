//! Layer and RMS norms: strided views, trailing axes, statistics.

use crate::common::{assert_close, name, per_backend, random, read, tensor};
use unicompute::ops;
use unicompute::ops::{NormKind, NormParams};
use unicompute::{Device, UnaryOp};

fn norms_of_strided_views_match_reference(d: &Device) {
    // Rows read in place: the last axis of a transpose, two trailing axes of a slice, a
    // broadcast; and trailing axes that do not merge into one stride (a copy first).
    let x = random(8810, 4 * 6 * 9, -3.0, 3.0);
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
                    kind.reference_row(&r.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(), 1e-5)
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
per_backend!(norms_of_strided_views_match_reference, variants);

fn norms_over_trailing_axes_match_onnx(d: &Device) {
    let shape = [2, 3, 4, 5];
    let x = random(8800, 120, -3.0, 3.0);
    let w = random(8801, 20, 0.5, 1.5);
    let b = random(8802, 20, -1.0, 1.0);
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
per_backend!(norms_over_trailing_axes_match_onnx);

fn layer_and_rms_norm_match_reference(d: &Device) {
    let cases: &[&[usize]] = &[
        &[1, 1],
        &[3, 7],
        &[5, 1000],
        &[2, 3, 257],
        &[1, 4099],
        &[1100, 300],
        // Aligned rows that CUDA holds in registers: a float4 per thread or fewer, 8 and 16.
        &[3, 12],
        &[7, 8192],
        &[2, 16384],
    ];
    let eps = 1e-5;
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
                let got = read(&ops::norm::norm(&q, kind, &tensor(d, &x, shape), params).unwrap());
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
per_backend!(layer_and_rms_norm_match_reference, variants);

fn layer_norm_statistics_match_onnx(d: &Device) {
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
per_backend!(layer_norm_statistics_match_onnx);
