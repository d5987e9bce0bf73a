//! Matmul and linear: vectors, batches, broadcasting, transposed views, long k, operands
//! past the storage binding limit, single and batched, and thin products (few rows or columns).

use crate::common::{assert_close, gather, name, per_backend, random, read, tensor};
use unicompute::ops;
use unicompute::{BackendChoice, Device, DeviceOptions, UnaryOp};

fn matmul_takes_vectors_as_numpy_does(d: &Device) {
    // (a shape, b shape, result shape); a 1-D a is a row, a 1-D b a column, and that axis goes.
    let cases: [(&[usize], &[usize], &[usize]); 5] = [
        (&[2, 3], &[3], &[2]),
        (&[3], &[3, 4], &[4]),
        (&[3], &[3], &[]),
        (&[2, 5, 3], &[3], &[2, 5]),
        (&[3], &[2, 3, 4], &[2, 4]),
    ];
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
                        f64::from(x[ab * m * k + i * k + t]) * f64::from(y[bb * k * n + t * n + j])
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
per_backend!(matmul_takes_vectors_as_numpy_does);

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

fn matmul_2d_batched_and_broadcast(d: &Device) {
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
    // The default choice, then every named kernel variant of the backend.
    let variants = std::iter::once(None).chain(ops::matmul::variants(d).into_iter().map(Some));
    for variant in variants {
        for (i, c) in cases.iter().enumerate() {
            let (na, nb): (usize, usize) = (c.batch_a.iter().product(), c.batch_b.iter().product());
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
per_backend!(matmul_2d_batched_and_broadcast);

fn matmul_of_transposed_views_needs_no_copy(d: &Device) {
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
per_backend!(matmul_of_transposed_views_needs_no_copy);

fn linear_fuses_bias_and_activation(d: &Device) {
    // (x shape, n): rank 2 and 3 inputs, primes, sizes off the 64-wide tiles.
    let cases: &[(&[usize], usize)] = &[
        (&[1, 1], 1),
        (&[7, 13], 5),
        (&[65, 129], 67),
        (&[2, 3, 31], 17),
    ];
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
per_backend!(linear_fuses_bias_and_activation);

/// f64 reference of `a @ b` for one `[m, k]` x `[k, n]` product given by element functions.
fn product_reference(
    [m, n, k]: [usize; 3],
    a: impl Fn(usize, usize) -> f32,
    b: impl Fn(usize, usize) -> f32,
) -> Vec<f64> {
    let mut out = Vec::with_capacity(m * n);
    for i in 0..m {
        for j in 0..n {
            out.push(
                (0..k)
                    .map(|p| f64::from(a(i, p)) * f64::from(b(p, j)))
                    .sum(),
            );
        }
    }
    out
}

/// Products large enough that the cpu backend cuts one product into blocks for its threads:
/// by columns (`n >= m`, m of 1 included) or by rows, with sizes off the block widths, a batch
/// of one, and A and B as transposed views (strided reads at block offsets).
fn products_cut_into_blocks_match_reference(d: &Device) {
    // (batch, m, n, k); each m n k is past the cpu backend's split threshold (589,824).
    let cases: &[(&[usize], usize, usize, usize)] = &[
        (&[], 37, 401, 97),
        (&[1], 389, 61, 53),
        (&[], 1, 4099, 149),
        (&[2], 131, 173, 29),
    ];
    for (c, &(batch, m, n, k)) in cases.iter().enumerate() {
        let seed = 4100 + c as u64 * 2;
        let count: usize = batch.iter().product();
        let a = random(seed, count * m * k, -1.0, 1.0);
        let b = random(seed + 1, count * k * n, -1.0, 1.0);
        for transposed in [false, true] {
            // Stored as [.., k, m] and [.., n, k] when transposed, read through `.t()`.
            let stored = |rows: usize, cols: usize| {
                let dims = if transposed {
                    [cols, rows]
                } else {
                    [rows, cols]
                };
                batch.iter().copied().chain(dims).collect::<Vec<usize>>()
            };
            let view = |data: &[f32], rows: usize, cols: usize| {
                let t = tensor(d, data, &stored(rows, cols));
                if transposed {
                    t.t().unwrap()
                } else {
                    t
                }
            };
            let got = read(&view(&a, m, k).matmul(&view(&b, k, n)).unwrap());
            let mut want = Vec::with_capacity(count * m * n);
            for bi in 0..count {
                let (ao, bo) = (bi * m * k, bi * k * n);
                let at = |i: usize, p: usize| match transposed {
                    true => a[ao + p * m + i],
                    false => a[ao + i * k + p],
                };
                let bt = |p: usize, j: usize| match transposed {
                    true => b[bo + j * k + p],
                    false => b[bo + p * n + j],
                };
                want.extend(product_reference([m, n, k], at, bt));
            }
            let what = format!(
                "matmul {batch:?} [{m}, {k}] x [{k}, {n}] transposed {transposed} on {} seed {}",
                name(d),
                seed
            );
            assert_close(&got, &want, 1e-4, 1e-5 * k as f64, &what);
        }
    }
}
per_backend!(products_cut_into_blocks_match_reference);

/// Thin products (the cpu backend's unpacked loops take up to 8 rows, or 8 columns, in groups
/// of 4, k in blocks of 512): rows and columns 1 to 9 against a wide side of primes, k of 1
/// and primes, each of A and B plain or a transposed view, and a batch.
fn thin_products_match_reference(d: &Device) {
    // (batch, m, n, k)
    let mut cases: Vec<(usize, usize, usize, usize)> = Vec::new();
    for few in [1, 2, 3, 4, 5, 7, 8, 9] {
        cases.push((1, few, 131, 97));
        cases.push((1, 67, few, 29));
    }
    cases.extend([
        (1, 1, 1, 1),
        (1, 1, 7, 1),
        (1, 3, 1, 53),
        (3, 2, 67, 17),
        (2, 61, 5, 1),
        // k past the loops' blocks of 512.
        (1, 3, 37, 1031),
        (1, 37, 2, 1031),
    ]);
    for (c, &(count, m, n, k)) in cases.iter().enumerate() {
        let seed = 4400 + c as u64 * 2;
        let a = random(seed, count * m * k, -1.0, 1.0);
        let b = random(seed + 1, count * k * n, -1.0, 1.0);
        // Stored as [count, cols, rows] when transposed, read through `.t()`.
        let view = |data: &[f32], rows: usize, cols: usize, transposed: bool| {
            if transposed {
                tensor(d, data, &[count, cols, rows]).t().unwrap()
            } else {
                tensor(d, data, &[count, rows, cols])
            }
        };
        for (ta, tb) in [(false, false), (false, true), (true, false), (true, true)] {
            let got = read(&view(&a, m, k, ta).matmul(&view(&b, k, n, tb)).unwrap());
            let mut want = Vec::with_capacity(count * m * n);
            for bi in 0..count {
                let (ao, bo) = (bi * m * k, bi * k * n);
                let at = |i: usize, p: usize| match ta {
                    true => a[ao + p * m + i],
                    false => a[ao + i * k + p],
                };
                let bt = |p: usize, j: usize| match tb {
                    true => b[bo + j * k + p],
                    false => b[bo + p * n + j],
                };
                want.extend(product_reference([m, n, k], at, bt));
            }
            let what = format!(
                "matmul [{count}, {m}, {k}] x [{count}, {k}, {n}] transposed {ta} {tb} on {} \
                 seed {seed}",
                name(d)
            );
            assert_close(&got, &want, 1e-4, 1e-5 * k as f64, &what);
        }
    }
}
per_backend!(thin_products_match_reference);

/// A linear layer cut into blocks (by columns, then by rows) with its bias and each unary op
/// as the activation: the activation of the layer without one, in f64.
fn linear_blocks_apply_every_activation(d: &Device) {
    // (x shape, n): m n k past the cpu backend's split threshold.
    linear_applies_every_activation(d, &[(&[37, 97], 401), (&[1, 389, 53], 61)], 4200);
}
per_backend!(linear_blocks_apply_every_activation);

/// Thin linear layers (the cpu backend's unpacked loops: 8 rows or fewer, or as many
/// outputs), with their bias and each activation.
fn thin_linears_apply_every_activation(d: &Device) {
    let cases: &[(&[usize], usize)] = &[
        (&[1, 128], 521),
        (&[3, 67], 131),
        (&[8, 97], 1),
        (&[1, 9, 31], 67),
        (&[131, 29], 7),
        (&[2, 5, 1], 9),
    ];
    linear_applies_every_activation(d, cases, 4300);
}
per_backend!(thin_linears_apply_every_activation);

/// Linear layers of inputs `xs` and `n` outputs (weights read transposed) against f64, plain
/// and with each unary op as the activation; seeds from `seed0`.
fn linear_applies_every_activation(d: &Device, cases: &[(&[usize], usize)], seed0: u64) {
    let q = d.queue();
    for (c, &(xs, n)) in cases.iter().enumerate() {
        let k = xs[xs.len() - 1];
        let rows: usize = xs[..xs.len() - 1].iter().product();
        let seed = seed0 + c as u64 * 3;
        // Pre-activations of about unit size: the ops' accurate domain.
        let x = random(seed, rows * k, -1.0, 1.0);
        let w = random(seed + 1, n * k, -0.3, 0.3); // stored [n, k], used as w.t()
        let bias = random(seed + 2, n, -1.0, 1.0);
        let (xt, wt, bt) = (
            tensor(d, &x, xs),
            tensor(d, &w, &[n, k]),
            tensor(d, &bias, &[n]),
        );
        let linear = |act| ops::matmul::linear(&q, &xt, &wt.t().unwrap(), Some(&bt), act);
        let plain = read(&linear(None).unwrap());
        let mut want: Vec<f64> = (0..rows * n)
            .map(|i| {
                let (r, j) = (i / n, i % n);
                let dot: f64 = (0..k)
                    .map(|p| f64::from(x[r * k + p]) * f64::from(w[j * k + p]))
                    .sum();
                dot + f64::from(bias[j])
            })
            .collect();
        let what = format!("linear {xs:?} x [{k}, {n}] bias on {} seed {seed}", name(d));
        assert_close(&plain, &want, 1e-4, 1e-4, &what);
        for op in UnaryOp::ALL {
            let got = read(&linear(Some(op)).unwrap());
            // The op of the layer's own f32 sums: ops like round and sign jump where f32 and
            // f64 sums may part.
            want = plain.iter().map(|&v| op.eval(f64::from(v))).collect();
            let what = format!("{what} act {}", op.name());
            assert_close(&got, &want, 1e-4, 1e-5, &what);
        }
    }
}

fn matmul_of_ones_counts_k_past_the_loop_limit(d: &Device) {
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
per_backend!(matmul_of_ones_counts_k_past_the_loop_limit);

fn matmul_and_linear_with_k_of_70_000(d: &Device) {
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
        let got =
            read(&ops::matmul::linear(&d.queue(), &xt, &wt.t().unwrap(), Some(&bt), act).unwrap());
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
per_backend!(matmul_and_linear_with_k_of_70_000);

/// The binding limit of [`products_past_the_binding_limit_run_in_pieces`]: 16 KiB, so that
/// operands of a few thousand elements split as VGG-19's 411 MB weight does on lavapipe.
const SMALL_BINDING: u64 = 16 << 10;

/// `d`'s backend opened again with storage bindings of at most [`SMALL_BINDING`] bytes.
fn with_small_bindings(d: &Device) -> Device {
    let options = DeviceOptions {
        poison_uninitialized: true,
        max_binding_size: Some(SMALL_BINDING),
        ..DeviceOptions::default()
    };
    Device::open_with(BackendChoice::Backend(d.backend()), options).unwrap()
}

/// Products whose operands exceed the binding limit (lowered to 16 KiB by
/// `DeviceOptions::max_binding_size`) give the f64 reference: a linear layer with a [300, 97]
/// weight read transposed (split along n, as Gemm's `transB` weights are), with bias and
/// relu, and a [70, 90] @ [90, 150] product whose A, B and C each pass the limit (split along
/// m, n and k).
fn products_past_the_binding_limit_run_in_pieces(d: &Device) {
    let d = &with_small_bindings(d);
    let (m, n, k) = (5, 300, 97);
    let (x, w, bias) = (
        random(71, m * k, -1.0, 1.0),
        random(72, n * k, -1.0, 1.0),
        random(73, n, -1.0, 1.0),
    );
    let (xt, wt, bt) = (
        tensor(d, &x, &[m, k]),
        tensor(d, &w, &[n, k]),
        tensor(d, &bias, &[n]),
    );
    let got = read(
        &xt.linear(&wt.t().unwrap(), Some(&bt), Some(UnaryOp::Relu))
            .unwrap(),
    );
    let wk = gather(&w, &[k, n], &[1, k], 0);
    let case = MatmulCase {
        batch_a: &[],
        batch_b: &[],
        m,
        n,
        k,
    };
    let want: Vec<f64> = (matmul_reference(&x, &wk, &case).iter().enumerate())
        .map(|(i, v)| (v + f64::from(bias[i % n])).max(0.0))
        .collect();
    assert_close(
        &got,
        &want,
        1e-4,
        1e-4,
        &format!("linear [5, 97] x [97, 300] on {}", name(d)),
    );
    let case = MatmulCase {
        batch_a: &[],
        batch_b: &[],
        m: 70,
        n: 150,
        k: 90,
    };
    let (a, b) = (
        random(74, 70 * 90, -1.0, 1.0),
        random(75, 90 * 150, -1.0, 1.0),
    );
    let got = read(
        &tensor(d, &a, &[70, 90])
            .matmul(&tensor(d, &b, &[90, 150]))
            .unwrap(),
    );
    let what = format!("matmul [70, 90] x [90, 150] on {}", name(d));
    assert_close(&got, &matmul_reference(&a, &b, &case), 1e-4, 1e-4, &what);
}
per_backend!(products_past_the_binding_limit_run_in_pieces);

/// f64 `a @ b` for dense `a` of shape `sa` (`[.., m, k]`) and `b` of shape `sb` (`[.., k, n]`)
/// of one rank, whose batch dimensions broadcast by numpy's rules (an extent of 1 repeats).
fn broadcast_reference(a: &[f32], sa: &[usize], b: &[f32], sb: &[usize]) -> Vec<f64> {
    let r = sa.len();
    let (m, k, n) = (sa[r - 2], sa[r - 1], sb[r - 1]);
    let batch: Vec<usize> = (0..r - 2).map(|d| sa[d].max(sb[d])).collect();
    // The first element of an operand's matrix at a batch index, for its batch shape `s`.
    let start = |s: &[usize], index: &[usize], size: usize| {
        let at = |(&i, &e): (&usize, &usize)| if e == 1 { 0 } else { i };
        index
            .iter()
            .zip(s)
            .map(at)
            .zip(s)
            .fold(0, |o, (i, e)| o * e + i)
            * size
    };
    let mut out = Vec::new();
    for flat in 0..batch.iter().product() {
        let mut index = vec![0; r - 2];
        let mut rest = flat;
        for d in (0..r - 2).rev() {
            (index[d], rest) = (rest % batch[d], rest / batch[d]);
        }
        let ao = start(&sa[..r - 2], &index, m * k);
        let bo = start(&sb[..r - 2], &index, k * n);
        out.extend((0..m * n).map(|e| {
            let (i, j) = (e / n, e % n);
            (0..k)
                .map(|p| f64::from(a[ao + i * k + p]) * f64::from(b[bo + p * n + j]))
                .sum::<f64>()
        }));
    }
    out
}

/// Batched products past the binding limit (16 KiB), outputs poisoned, give the f64
/// reference: boxes of ten and one whole products along the first batch dimension ([11, 4, 9,
/// 11] @ [11, 10], B broadcast); boxes of four and one along the second, one index of the first
/// each ([7, 1, 13, 29] at an offset @ [5, 29, 31] read transposed, each broadcast along one
/// batch dimension); and a linear layer over [3, 7, 97] with the [300, 97] weight read
/// transposed, bias and relu, whose products each pass the limit (in boxes of m, n and k).
fn batched_products_past_the_binding_limit_run_in_pieces(d: &Device) {
    let d = &with_small_bindings(d);
    let (a, b) = (
        random(81, 11 * 4 * 99, -1.0, 1.0),
        random(82, 110, -1.0, 1.0),
    );
    let got = tensor(d, &a, &[11, 4, 9, 11])
        .matmul(&tensor(d, &b, &[11, 10]))
        .unwrap();
    let want = broadcast_reference(&a, &[11, 4, 9, 11], &b, &[1, 1, 11, 10]);
    let what = format!("matmul [11, 4, 9, 11] x [11, 10] on {}", name(d));
    assert_close(&read(&got), &want, 1e-4, 1e-4, &what);

    let (a, b) = (
        random(83, 8 * 377, -1.0, 1.0),
        random(84, 5 * 899, -1.0, 1.0),
    );
    let at = tensor(d, &a, &[8, 1, 13, 29]).slice(0, 1..8).unwrap();
    let bt = tensor(d, &b, &[5, 31, 29]).permute(&[0, 2, 1]).unwrap();
    let got = read(&at.matmul(&bt).unwrap());
    let bk = gather(&b, &[5, 29, 31], &[899, 1, 29], 0);
    let want = broadcast_reference(&a[377..], &[7, 1, 13, 29], &bk, &[1, 5, 29, 31]);
    let what = format!("matmul [7, 1, 13, 29] x [5, 29, 31] on {}", name(d));
    assert_close(&got, &want, 1e-4, 1e-4, &what);

    let (x, w, bias) = (
        random(85, 3 * 7 * 97, -1.0, 1.0),
        random(86, 300 * 97, -1.0, 1.0),
        random(87, 300, -1.0, 1.0),
    );
    let (xt, wt, bt) = (
        tensor(d, &x, &[3, 7, 97]),
        tensor(d, &w, &[300, 97]),
        tensor(d, &bias, &[300]),
    );
    let got = read(
        &xt.linear(&wt.t().unwrap(), Some(&bt), Some(UnaryOp::Relu))
            .unwrap(),
    );
    let wk = gather(&w, &[97, 300], &[1, 97], 0);
    let want: Vec<f64> = (broadcast_reference(&x, &[3, 7, 97], &wk, &[1, 97, 300]).iter())
        .enumerate()
        .map(|(i, v)| (v + f64::from(bias[i % 300])).max(0.0))
        .collect();
    let what = format!("linear [3, 7, 97] x [97, 300] on {}", name(d));
    assert_close(&got, &want, 1e-4, 1e-4, &what);
}
per_backend!(batched_products_past_the_binding_limit_run_in_pieces);

/// On webgpu, with bindings of at most 16 KiB, a weight whose 16 rows already pass the limit
/// is an error giving the bytes of the smallest piece and the limit.
#[test]
fn a_matmul_too_large_for_any_piece_says_why() {
    let Some(d) = crate::common::webgpu() else {
        return;
    };
    let d = &with_small_bindings(d);
    let wide = tensor(d, &random(76, 16 * 5000, -1.0, 1.0), &[16, 5000]);
    let x = tensor(d, &random(77, 5000, -1.0, 1.0), &[1, 5000]);
    let e = x.matmul(&wide.t().unwrap()).unwrap_err().to_string();
    // 16 rows of 16 columns of B span (15 * 5000 + 16) * 4 bytes.
    let why = [
        "matmul operand B",
        "300064",
        "max_storage_binding_size",
        "16384",
    ];
    assert!(why.iter().all(|w| e.contains(w)), "{e}");
}
