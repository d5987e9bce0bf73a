//! Scatter (ScatterElements and ScatterND) against an f64 reference that applies every update
//! in row-major order: random data, duplicate, negative and out-of-range indices, every
//! reduction, odd shapes, i32 and i64 indices, f32 / f16 / i32 / i64 / bool data, and walks
//! longer than a lavapipe launch's loop budget.

use crate::common::{assert_close, expect_err, name, per_backend, random, read, tensor};
use unicompute::layout::contiguous_strides;
use unicompute::ops::ScatterReduction;
use unicompute::{DType, Device, Tensor};

/// The entry index `v` picks on an axis of `len` (negatives from the end), if inside.
fn entry(v: i64, len: usize) -> Option<usize> {
    let t = if v < 0 { v + len as i64 } else { v };
    (0..len as i64).contains(&t).then_some(t as usize)
}

/// ScatterElements in f64: each update (row-major) met into `data` by `r`; out-of-range
/// indices skipped.
fn elements_reference(
    data: &[f64],
    d: &[usize],
    idx: &[i64],
    shape: &[usize],
    upd: &[f64],
    axis: usize,
    r: ScatterReduction,
) -> Vec<f64> {
    let mut out = data.to_vec();
    let (ds, is) = (contiguous_strides(d), contiguous_strides(shape));
    for (p, (&v, &u)) in idx.iter().zip(upd).enumerate() {
        let Some(t) = entry(v, d[axis]) else { continue };
        let at: usize = (0..d.len())
            .map(|k| if k == axis { t } else { p / is[k] % shape[k] } * ds[k])
            .sum();
        out[at] = r.eval(out[at], u);
    }
    out
}

/// ScatterND in f64: each tuple of `depth` indices (in order) picks a slice met by its update
/// slice; a tuple with an index out of range is skipped.
fn nd_reference(
    data: &[f64],
    d: &[usize],
    idx: &[i64],
    depth: usize,
    upd: &[f64],
    r: ScatterReduction,
) -> Vec<f64> {
    let mut out = data.to_vec();
    let ds = contiguous_strides(d);
    let slice: usize = d[depth..].iter().product();
    for t in 0..upd.len() / slice.max(1) {
        let at: Option<usize> = (0..depth)
            .map(|c| entry(idx[t * depth + c], d[c]).map(|e| e * ds[c]))
            .sum();
        if let Some(at) = at {
            for s in 0..slice {
                out[at + s] = r.eval(out[at + s], upd[t * slice + s]);
            }
        }
    }
    out
}

/// `n` seeded indices in `[lo, hi)`.
fn indices(seed: u64, n: usize, lo: i64, hi: i64) -> Vec<i64> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n).map(|_| rng.i64(lo..hi)).collect()
}

/// `idx` on `d` as i64 (`wide`) or i32 indices.
fn index_tensor(d: &Device, idx: &[i64], shape: &[usize], wide: bool) -> Tensor {
    if wide {
        Tensor::from_slice(d, idx, shape).unwrap()
    } else {
        let narrow: Vec<i32> = idx.iter().map(|&v| v as i32).collect();
        Tensor::from_slice(d, &narrow, shape).unwrap()
    }
}

/// Data values for reduction `r`: factors near 1 for mul (products of duplicates stay near 1).
fn values(seed: u64, n: usize, r: ScatterReduction) -> Vec<f32> {
    let v = random(seed, n, -1.0, 1.0);
    match r {
        ScatterReduction::Mul => v.iter().map(|x| 1.0 + x / 4.0).collect(),
        _ => v.iter().map(|x| x * 5.0).collect(),
    }
}

fn f64s(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| f64::from(x)).collect()
}

fn scatter_elements_matches_the_reference(d: &Device) {
    // (data, indices / updates, axis): lines longer and shorter than the axis, indices
    // narrower than the data on other axes, extents of 1 and primes.
    let cases: &[(&[usize], &[usize], usize)] = &[
        (&[1], &[1], 0),
        (&[7], &[13], 0),
        (&[3, 5], &[2, 5], 0),
        (&[3, 5], &[3, 4], 1),
        (&[2, 3, 67], &[2, 2, 131], 2),
        (&[5, 1, 3], &[9, 1, 2], 0),
        (&[4, 31, 3], &[3, 40, 3], 1),
    ];
    for (c, &(ds, is, axis)) in cases.iter().enumerate() {
        let (n, m) = (ds.iter().product::<usize>(), is.iter().product::<usize>());
        let len = ds[axis] as i64;
        // Duplicates (more indices than entries), negatives and a few out of range.
        let idx = indices(c as u64, m, -len - 2, len + 2);
        for r in ScatterReduction::ALL {
            let seed = 100 * c as u64 + r as u64;
            let (x, u) = (values(seed, n, r), values(seed + 50, m, r));
            let want = elements_reference(&f64s(&x), ds, &idx, is, &f64s(&u), axis, r);
            for wide in [false, true] {
                let got = tensor(d, &x, ds)
                    .scatter_elements(
                        &index_tensor(d, &idx, is, wide),
                        &tensor(d, &u, is),
                        axis,
                        r,
                    )
                    .unwrap();
                let what = format!(
                    "scatter_elements {ds:?} {is:?} axis {axis} {r:?} i64 {wide} on {}",
                    name(d)
                );
                assert_close(&read(&got), &want, 1e-5, 1e-5, &what);
            }
        }
    }
}
per_backend!(scatter_elements_matches_the_reference);

fn scatter_nd_matches_the_reference(d: &Device) {
    // (data, indices): tuples of every depth from 0 to the rank, leading axes of rank 1 to 3.
    let cases: &[(&[usize], &[usize])] = &[
        (&[1], &[1, 1]),
        (&[5, 7, 3], &[4, 2]),
        (&[5, 7, 3], &[11, 3]),
        (&[5, 7, 3], &[2, 3, 1]),
        (&[5, 7, 3], &[2, 0]),
        (&[13], &[29, 1]),
        (&[2, 67], &[3, 1]),
    ];
    for (c, &(ds, is)) in cases.iter().enumerate() {
        let depth = is[is.len() - 1];
        let us: Vec<usize> = [&is[..is.len() - 1], &ds[depth..]].concat();
        let (n, m) = (ds.iter().product::<usize>(), us.iter().product::<usize>());
        // Each index drawn for its own axis, some negative or out of range.
        let tuples: usize = is[..is.len() - 1].iter().product();
        let mut idx = Vec::new();
        for t in 0..tuples {
            for (k, &len) in ds[..depth].iter().enumerate() {
                let len = len as i64;
                idx.extend(indices(
                    (c * 1000 + t * 10 + k) as u64,
                    1,
                    -len - 1,
                    len + 1,
                ));
            }
        }
        for r in ScatterReduction::ALL {
            let seed = 500 + 100 * c as u64 + r as u64;
            let (x, u) = (values(seed, n, r), values(seed + 50, m, r));
            let want = nd_reference(&f64s(&x), ds, &idx, depth, &f64s(&u), r);
            for wide in [false, true] {
                let got = tensor(d, &x, ds)
                    .scatter_nd(&index_tensor(d, &idx, is, wide), &tensor(d, &u, &us), r)
                    .unwrap();
                let what = format!("scatter_nd {ds:?} {is:?} {r:?} i64 {wide} on {}", name(d));
                assert_close(&read(&got), &want, 1e-5, 1e-5, &what);
            }
        }
    }
}
per_backend!(scatter_nd_matches_the_reference);

fn scatter_takes_integer_data(d: &Device) {
    let (ds, is) = ([4usize, 9], [4usize, 12]);
    let idx = indices(7, 48, -10, 10);
    let ints: Vec<i64> = indices(8, 36, -20, 20);
    let ups: Vec<i64> = indices(9, 48, -3, 4);
    let f = |v: &[i64]| v.iter().map(|&x| x as f64).collect::<Vec<_>>();
    for r in ScatterReduction::ALL {
        let want = elements_reference(&f(&ints), &ds, &idx, &is, &f(&ups), 1, r);
        let i = index_tensor(d, &idx, &is, false);
        // i64 values past 32 bits stay exact (scaled by 2^33 but for mul, which the scale
        // would take past 64 bits).
        let shift = if r == ScatterReduction::Mul { 0 } else { 33 };
        let big: Vec<i64> = ints.iter().map(|&v| v << shift).collect();
        let big_up: Vec<i64> = ups.iter().map(|&v| v << shift).collect();
        let got = Tensor::from_slice(d, &big, &ds).unwrap().scatter_elements(
            &i,
            &Tensor::from_slice(d, &big_up, &is).unwrap(),
            1,
            r,
        );
        let want_big: Vec<i64> = want.iter().map(|&v| (v as i64) << shift).collect();
        match got {
            Ok(t) => assert_eq!(
                t.to_vec_blocking::<i64>().unwrap(),
                want_big,
                "i64 {r:?} on {}",
                name(d)
            ),
            // Adapters without shader-int64 refuse i64 arithmetic, naming it.
            Err(e) => assert!(e.to_string().contains("shader-int64"), "i64 {r:?}: {e}"),
        }
        if r == ScatterReduction::None {
            // i64 ScatterND under none moves word pairs: every adapter takes it.
            let rows = Tensor::from_slice(d, &[-1i64, 2, 3, 0, 7], &[5, 1]).unwrap();
            let got = Tensor::from_slice(d, &big, &ds)
                .unwrap()
                .scatter_nd(
                    &rows,
                    &Tensor::from_slice(d, &big_up[..45], &[5, 9]).unwrap(),
                    r,
                )
                .unwrap();
            // Row 3 takes the last of its two updates (update 2); row 7 is outside: skipped.
            let mut want = big.clone();
            want[27..36].copy_from_slice(&big_up[18..27]);
            want[18..27].copy_from_slice(&big_up[9..18]);
            want[..9].copy_from_slice(&big_up[27..36]);
            assert_eq!(
                got.to_vec_blocking::<i64>().unwrap(),
                want,
                "i64 nd on {}",
                name(d)
            );
        }
        let narrow = |v: &[i64]| v.iter().map(|&x| x as i32).collect::<Vec<_>>();
        let got = Tensor::from_slice(d, &narrow(&ints), &ds)
            .unwrap()
            .scatter_elements(
                &i,
                &Tensor::from_slice(d, &narrow(&ups), &is).unwrap(),
                1,
                r,
            )
            .unwrap();
        let want32: Vec<i32> = want.iter().map(|&v| v as i32).collect();
        assert_eq!(
            got.to_vec_blocking::<i32>().unwrap(),
            want32,
            "i32 {r:?} on {}",
            name(d)
        );
    }
}
per_backend!(scatter_takes_integer_data);

fn scatter_takes_half_and_bool_data_and_u32_indices(d: &Device) {
    let (ds, is) = ([4usize, 9], [4usize, 12]);
    // u32 indices: the negative draws wrap past the axis and are skipped.
    let raw: Vec<u32> = indices(10, 48, -3, 10).iter().map(|&v| v as u32).collect();
    let idx: Vec<i64> = raw.iter().map(|&v| i64::from(v)).collect();
    let i = Tensor::from_slice(d, &raw, &is).unwrap();
    let h = |v: &[f32]| {
        v.iter()
            .map(|&x| half::f16::from_f32(x))
            .collect::<Vec<_>>()
    };
    let back = |v: &[half::f16]| v.iter().map(|x| x.to_f64()).collect::<Vec<_>>();
    for r in ScatterReduction::ALL {
        // f16 data: computed in f32, rounded once.
        let (x, u) = (values(11, 36, r), values(12, 48, r));
        let want = elements_reference(&back(&h(&x)), &ds, &idx, &is, &back(&h(&u)), 1, r);
        let got = Tensor::from_slice(d, &h(&x), &ds)
            .unwrap()
            .scatter_elements(&i, &Tensor::from_slice(d, &h(&u), &is).unwrap(), 1, r)
            .unwrap();
        assert_eq!(got.dtype(), DType::F16);
        let got: Vec<f32> = (got.to_vec_blocking::<half::f16>().unwrap().iter())
            .map(|v| v.to_f32())
            .collect();
        let what = format!("f16 {r:?} on {}", name(d));
        assert_close(&got, &want, 2e-3, 2e-3, &what);
    }
    // bool masks: set with reduction none.
    let mask = Tensor::from_slice(d, &[0u8; 6], &[6])
        .unwrap()
        .cast(DType::Bool)
        .unwrap();
    let on = Tensor::from_slice(d, &[1u8, 1, 0], &[3])
        .unwrap()
        .cast(DType::Bool)
        .unwrap();
    let at = Tensor::from_slice(d, &[4i64, -6, 9], &[3, 1]).unwrap();
    let got = mask.scatter_nd(&at, &on, ScatterReduction::None).unwrap();
    assert_eq!(
        got.to_bools_blocking().unwrap(),
        [true, false, false, false, true, false],
        "bool scatter_nd on {}",
        name(d)
    );
}
per_backend!(scatter_takes_half_and_bool_data_and_u32_indices);

fn duplicates_apply_in_order_and_out_of_range_indices_skip(d: &Device) {
    let x = tensor(d, &[1.0, 2.0, 3.0, 4.0], &[4]);
    // Under none the last of duplicates wins; 4, -5 and 1 << 40 are outside and skipped.
    let idx = Tensor::from_slice(d, &[1i64, 4, 1, -5, -1, 1 << 40, 1], &[7]).unwrap();
    let u = tensor(d, &[10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0], &[7]);
    let got = x
        .scatter_elements(&idx, &u, 0, ScatterReduction::None)
        .unwrap();
    assert_eq!(
        read(&got),
        [1.0, 16.0, 3.0, 14.0],
        "last wins on {}",
        name(d)
    );
    let got = x
        .scatter_elements(&idx, &u, 0, ScatterReduction::Add)
        .unwrap();
    assert_eq!(read(&got), [1.0, 40.0, 3.0, 18.0], "adds on {}", name(d));
    // NaN wins max and min, either way round.
    let nan = tensor(d, &[f32::NAN, 1.0], &[2]);
    let i = Tensor::from_slice(d, &[0i32, 1], &[2]).unwrap();
    let u = tensor(d, &[5.0, f32::NAN], &[2]);
    for r in [ScatterReduction::Max, ScatterReduction::Min] {
        let got = read(&nan.scatter_elements(&i, &u, 0, r).unwrap());
        assert!(
            got.iter().all(|v| v.is_nan()),
            "{r:?} with NaN on {}: {got:?}",
            name(d)
        );
    }
}
per_backend!(duplicates_apply_in_order_and_out_of_range_indices_skip);

fn walks_past_a_launch_loop_budget(d: &Device) {
    // 70,001 updates on one line (lavapipe splits the walk across launches), every one at
    // index 0 or 1: a running sum and a last-wins.
    let n = 70_001;
    let idx: Vec<i32> = (0..n).map(|j| (j % 2) as i32).collect();
    let u = random(31, n, -1.0, 1.0);
    let i = Tensor::from_slice(d, &idx, &[1, n]).unwrap();
    let x = tensor(d, &[0.5, 0.25, 2.0], &[1, 3]);
    let ut = tensor(d, &u, &[1, n]);
    let sum = read(
        &x.scatter_elements(&i, &ut, 1, ScatterReduction::Add)
            .unwrap(),
    );
    let want = elements_reference(
        &[0.5, 0.25, 2.0],
        &[1, 3],
        &i64s(&idx),
        &[1, n],
        &f64s(&u),
        1,
        ScatterReduction::Add,
    );
    assert_close(
        &sum,
        &want,
        1e-5,
        1e-6 * n as f64,
        &format!("long add on {}", name(d)),
    );
    let last = read(
        &x.scatter_elements(&i, &ut, 1, ScatterReduction::None)
            .unwrap(),
    );
    assert_eq!(
        last,
        [u[n - 1], u[n - 2], 2.0],
        "long last-wins on {}",
        name(d)
    );
    // 40,000 index tuples of depth 2 into [3, 5].
    let t = 40_000;
    let tuples: Vec<i64> = (0..t)
        .flat_map(|k| [(k % 3) as i64, (k % 5) as i64 - 5])
        .collect();
    let u = random(32, t, -1.0, 1.0);
    let x = random(33, 15, -1.0, 1.0);
    let got = tensor(d, &x, &[3, 5])
        .scatter_nd(
            &Tensor::from_slice(d, &tuples, &[t, 2]).unwrap(),
            &tensor(d, &u, &[t]),
            ScatterReduction::Add,
        )
        .unwrap();
    let want = nd_reference(
        &f64s(&x),
        &[3, 5],
        &tuples,
        2,
        &f64s(&u),
        ScatterReduction::Add,
    );
    // About 2,700 f32 additions per element.
    assert_close(
        &read(&got),
        &want,
        1e-5,
        5e-3,
        &format!("long nd add on {}", name(d)),
    );
}
per_backend!(walks_past_a_launch_loop_budget);

/// i32 indices as i64, for the reference.
fn i64s(v: &[i32]) -> Vec<i64> {
    v.iter().map(|&x| i64::from(x)).collect()
}

fn bad_scatters_are_refused(d: &Device) {
    let x = tensor(d, &[0.0; 6], &[2, 3]);
    let i = Tensor::from_slice(d, &[0i32; 6], &[2, 3]).unwrap();
    let u = tensor(d, &[1.0; 6], &[2, 3]);
    let none = ScatterReduction::None;
    expect_err(x.scatter_elements(&i, &u, 2, none), "SHAPE", &["axis 2"], d);
    let short = tensor(d, &[1.0; 3], &[3]);
    expect_err(
        x.scatter_elements(&i, &short, 1, none),
        "SHAPE",
        &["updates [3]"],
        d,
    );
    let wide = Tensor::from_slice(d, &[0i32; 8], &[2, 4]).unwrap();
    let wide_u = tensor(d, &[1.0; 8], &[2, 4]);
    expect_err(
        x.scatter_elements(&wide, &wide_u, 0, none),
        "SHAPE",
        &["[2, 4]"],
        d,
    );
    let fi = tensor(d, &[0.0; 6], &[2, 3]);
    expect_err(
        x.scatter_elements(&fi, &u, 1, none),
        "DTYPE",
        &["i32, u32 or i64"],
        d,
    );
    let iu = Tensor::from_slice(d, &[1i32; 6], &[2, 3]).unwrap();
    expect_err(x.scatter_elements(&i, &iu, 1, none), "DTYPE", &["f32"], d);
    let nd = Tensor::from_slice(d, &[0i32; 3], &[1, 3]).unwrap();
    expect_err(x.scatter_nd(&nd, &u, none), "SHAPE", &["[1, 3]"], d);
    let nd = Tensor::from_slice(d, &[0i32; 2], &[2, 1]).unwrap();
    expect_err(
        x.scatter_nd(&nd, &short, none),
        "SHAPE",
        &["updates [3]"],
        d,
    );
    assert_eq!(
        ScatterReduction::from_name("mul"),
        Some(ScatterReduction::Mul)
    );
    assert_eq!(ScatterReduction::from_name("sum"), None);
}
per_backend!(bad_scatters_are_refused);
