//! Views and copies, concat, casts, where and gather.

use crate::common::{
    assert_close, expect_err, gather, name, per_backend, random, read, still_works, tensor,
};
use unicompute::ops::gather::IndexMode;
use unicompute::{DType, Device, Tensor};

fn views_and_contiguous_copies(d: &Device) {
    let x = random(3, 2 * 3 * 5, -1.0, 1.0);
    let t = tensor(d, &x, &[2, 3, 5]);
    let p = t.permute(&[2, 0, 1]).unwrap();
    assert_eq!(p.shape(), &[5, 2, 3]);
    let c = p.contiguous().unwrap();
    assert!(c.is_contiguous());
    assert_eq!(
        read(&c),
        gather(&x, &[5, 2, 3], &[1, 15, 5], 0),
        "permute+contiguous on {}",
        name(d)
    );
    let s = t.slice(2, 1..4).unwrap().reshape(&[6, 3]).unwrap();
    assert_eq!(
        read(&s),
        gather(&x, &[2, 3, 3], &[15, 5, 1], 1),
        "slice+reshape on {}",
        name(d)
    );
    let row = tensor(d, &x[..5], &[5]).broadcast_to(&[3, 5]).unwrap();
    let want: Vec<f32> = (0..3).flat_map(|_| x[..5].to_vec()).collect();
    assert_eq!(
        read(&row.contiguous().unwrap()),
        want,
        "broadcast+contiguous on {}",
        name(d)
    );
    let ints = Tensor::from_slice(d, &[1i32, -2, 3, -4, 5, -6], &[2, 3]).unwrap();
    assert_eq!(
        ints.t().unwrap().to_vec_blocking::<i32>().unwrap(),
        vec![1, -4, -2, 5, 3, -6],
        "i32 transpose on {}",
        name(d)
    );
}
per_backend!(views_and_contiguous_copies);

/// Views whose innermost dimension is contiguous (a heads permute, a slice of the last axis,
/// a broadcast over rows), larger than one parallel chunk of the cpu copy and with rows that
/// straddle chunks, copied to contiguous tensors.
fn copies_of_views_with_contiguous_rows(d: &Device) {
    let shape = [3, 37, 11, 29];
    let x = random(7, shape.iter().product(), -1.0, 1.0);
    let t = tensor(d, &x, &shape);
    let cases = [
        (
            "permute",
            t.permute(&[0, 2, 1, 3]).unwrap(),
            gather(&x, &[3, 11, 37, 29], &[11_803, 29, 319, 1], 0),
        ),
        (
            "slice",
            t.slice(3, 3..20).unwrap(),
            gather(&x, &[3, 37, 11, 17], &[11_803, 319, 29, 1], 3),
        ),
        (
            "broadcast",
            tensor(d, &x[..29], &[1, 29])
                .broadcast_to(&[1201, 29])
                .unwrap(),
            gather(&x, &[1201, 29], &[0, 1], 0),
        ),
    ];
    for (what, view, want) in cases {
        let got = view.contiguous().unwrap();
        assert!(got.is_contiguous());
        assert_eq!(read(&got), want, "{what} copied on {}", name(d));
    }
}
per_backend!(copies_of_views_with_contiguous_rows);

/// The concat along `axis` of the device `parts`, read back, and of their `host` values and
/// shapes (`outer` blocks each) in f64.
fn concat_and_reference(
    parts: &[Tensor],
    host: &[(Vec<f32>, Vec<usize>)],
    axis: usize,
    outer: usize,
) -> (Vec<f32>, Vec<f64>) {
    let refs: Vec<&Tensor> = parts.iter().collect();
    let got = read(&Tensor::concat(&refs, axis).unwrap());
    let mut want = Vec::new();
    for o in 0..outer {
        for (data, shape) in host {
            let block: usize = shape[axis..].iter().product();
            want.extend(
                data[o * block..(o + 1) * block]
                    .iter()
                    .map(|&v| f64::from(v)),
            );
        }
    }
    (got, want)
}

fn concat_along_every_axis_and_dtype(d: &Device) {
    for axis in 0..3 {
        // Three parts of [2, 3, 5] with extents 1, 4 and 2 on `axis`; the middle one is a
        // permuted (strided) view.
        let extents = [1usize, 4, 2];
        let mut parts = Vec::new();
        let mut host = Vec::new();
        for (p, &e) in extents.iter().enumerate() {
            let mut shape = vec![2, 3, 5];
            shape[axis] = e;
            let n: usize = shape.iter().product();
            let data = random(1000 + 10 * axis as u64 + p as u64, n, -5.0, 5.0);
            let t = if p == 1 {
                // Same values, stored transposed and viewed back.
                let mut st = shape.clone();
                st.swap(0, 2);
                let stored: Vec<f32> = gather(&data, &st, &[1, shape[2], shape[1] * shape[2]], 0);
                tensor(d, &stored, &st).permute(&[2, 1, 0]).unwrap()
            } else {
                tensor(d, &data, &shape)
            };
            host.push((data, shape));
            parts.push(t);
        }
        let outer: usize = [2, 3, 5][..axis].iter().product();
        let (got, want) = concat_and_reference(&parts, &host, axis, outer);
        assert_close(
            &got,
            &want,
            0.0,
            0.0,
            &format!("concat axis {axis} on {}", name(d)),
        );
    }
    let ints = [
        Tensor::from_slice(d, &[1i32, 2], &[1, 2]).unwrap(),
        Tensor::from_slice(d, &[3i32, 4, 5, 6], &[2, 2]).unwrap(),
    ];
    let got = Tensor::concat(&[&ints[0], &ints[1]], 0)
        .unwrap()
        .to_vec_blocking::<i32>()
        .unwrap();
    assert_eq!(got, vec![1, 2, 3, 4, 5, 6], "i32 concat on {}", name(d));
}
per_backend!(concat_along_every_axis_and_dtype);

/// Concats whose parts copy as long runs: along the last axis (runs of 8 or more, an output
/// strided between them), and along axis 1 of parts past one cpu task (32,768 elements), one
/// image or two; one part a permuted view.
fn concat_of_long_runs(d: &Device) {
    let cases: [(&[usize], usize, &[usize]); 3] = [
        (&[3, 5, 0], 2, &[9, 17, 8]),
        (&[1, 0, 12_289], 1, &[2, 3]),
        (&[2, 0, 20_011], 1, &[1, 2]),
    ];
    for (c, (base, axis, extents)) in cases.into_iter().enumerate() {
        let mut parts = Vec::new();
        let mut host = Vec::new();
        for (p, &e) in extents.iter().enumerate() {
            let mut shape = base.to_vec();
            shape[axis] = e;
            let data = random(
                1100 + 10 * c as u64 + p as u64,
                shape.iter().product(),
                -5.0,
                5.0,
            );
            let t = if p == 0 && c == 0 {
                // Stored as [5, 3, e] and viewed back.
                let stored = gather(&data, &[5, 3, e], &[e, 5 * e, 1], 0);
                tensor(d, &stored, &[5, 3, e]).permute(&[1, 0, 2]).unwrap()
            } else {
                tensor(d, &data, &shape)
            };
            host.push((data, shape));
            parts.push(t);
        }
        let outer: usize = base[..axis].iter().product();
        let (got, want) = concat_and_reference(&parts, &host, axis, outer);
        let what = format!("concat of {extents:?} along {axis} on {}", name(d));
        assert_close(&got, &want, 0.0, 0.0, &what);
    }
}
per_backend!(concat_of_long_runs);

fn casts_follow_rust_as(d: &Device) {
    let floats = [
        0.0f32,
        -0.0,
        1.5,
        -1.5,
        2.9,
        -2.9,
        1e10,
        -1e10,
        4.2e9,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        16_777_215.0,
    ];
    let ints = [0i32, 1, -1, 7, -123_456, i32::MAX, i32::MIN, 16_777_215];
    let f = tensor(d, &floats, &[floats.len()]);
    let i = Tensor::from_slice(d, &ints, &[ints.len()]).unwrap();
    let u = i.cast(DType::U32).unwrap();
    assert_eq!(
        f.cast(DType::I32)
            .unwrap()
            .to_vec_blocking::<i32>()
            .unwrap(),
        floats.map(|v| v as i32).to_vec(),
        "f32 -> i32 on {}",
        name(d)
    );
    assert_eq!(
        f.cast(DType::U32)
            .unwrap()
            .to_vec_blocking::<u32>()
            .unwrap(),
        floats.map(|v| v as u32).to_vec(),
        "f32 -> u32 on {}",
        name(d)
    );
    assert_eq!(
        u.to_vec_blocking::<u32>().unwrap(),
        ints.map(|v| v as u32).to_vec(),
        "i32 -> u32 on {}",
        name(d)
    );
    assert_eq!(
        u.cast(DType::I32)
            .unwrap()
            .to_vec_blocking::<i32>()
            .unwrap(),
        ints.to_vec(),
        "u32 -> i32 on {}",
        name(d)
    );
    // Integers up to 2^24 are exact in f32.
    let small = Tensor::from_slice(d, &[0i32, -5, 16_777_215, -16_777_215], &[2, 2]).unwrap();
    let got = small
        .t()
        .unwrap()
        .cast(DType::F32)
        .unwrap()
        .to_vec_blocking::<f32>()
        .unwrap();
    assert_eq!(
        got,
        vec![0.0, 16_777_215.0, -5.0, -16_777_215.0],
        "strided i32 -> f32 on {}",
        name(d)
    );
    let us = Tensor::from_slice(d, &[3u32, 16_777_215], &[2])
        .unwrap()
        .cast(DType::F32)
        .unwrap();
    assert_eq!(
        us.to_vec_blocking::<f32>().unwrap(),
        vec![3.0, 16_777_215.0],
        "u32 -> f32 on {}",
        name(d)
    );
}
per_backend!(casts_follow_rust_as);

fn where_selects_with_broadcasting(d: &Device) {
    // cond [3, 1] (u32), a [3, 5], b [5] broadcast; and an f32 condition with -0.0 and NaN.
    let cond = Tensor::from_slice(d, &[1u32, 0, 7], &[3, 1]).unwrap();
    let a = random(60, 15, -1.0, 1.0);
    let b = random(61, 5, -1.0, 1.0);
    let got = read(
        &cond
            .select(&tensor(d, &a, &[3, 5]), &tensor(d, &b, &[5]))
            .unwrap(),
    );
    let want: Vec<f64> = (0..15)
        .map(|i| f64::from(if i / 5 != 1 { a[i] } else { b[i % 5] }))
        .collect();
    assert_close(&got, &want, 0.0, 0.0, &format!("where on {}", name(d)));
    let fc = tensor(d, &[0.0, -0.0, f32::NAN, 2.0], &[4]);
    let ones = Tensor::from_slice(d, &[1i32; 4], &[4]).unwrap();
    let zeros = Tensor::from_slice(d, &[0i32; 4], &[4]).unwrap();
    assert_eq!(
        fc.select(&ones, &zeros)
            .unwrap()
            .to_vec_blocking::<i32>()
            .unwrap(),
        vec![0, 0, 1, 1],
        "f32 condition on {}",
        name(d)
    );
}
per_backend!(where_selects_with_broadcasting);

/// numpy's `take` with `mode` for what lies outside `[-len, len)` (`None`: the entry is
/// unset): `x` of `shape` along `axis` by `idx` of `idx_shape`.
fn take(x: &[f32], shape: &[usize], axis: usize, idx: &[i64], mode: IndexMode) -> Vec<f64> {
    let (outer, len, inner): (usize, usize, usize) = (
        shape[..axis].iter().product(),
        shape[axis],
        shape[axis + 1..].iter().product(),
    );
    let mut want = Vec::new();
    for o in 0..outer {
        for &j in idx {
            let t = unicompute::ops::gather::resolve_index(j, len, mode);
            want.extend(
                (0..inner).map(|i| t.map_or(0.0, |t| f64::from(x[(o * len + t) * inner + i]))),
            );
        }
    }
    want
}

fn gather_counts_negative_indices_from_the_end_and_takes_any_rank(d: &Device) {
    let shape = [3usize, 4, 5];
    let x = random(70, 60, -5.0, 5.0);
    let xt = tensor(d, &x, &shape);
    for axis in 0..3 {
        let len = shape[axis] as i64;
        // In range from either end, repeated, as a [2, 3] tensor: the axis becomes [2, 3].
        let idx = [len - 1, 0, -1, -len, 1, 0];
        let it = Tensor::from_slice(d, &idx.map(|v| v as i32), &[2, 3]).unwrap();
        let got = xt.gather(axis, &it).unwrap();
        let want_shape = [&shape[..axis], &[2, 3], &shape[axis + 1..]].concat();
        assert_eq!(
            got.shape(),
            &want_shape[..],
            "gather axis {axis} on {}",
            name(d)
        );
        let want = take(&x, &shape, axis, &idx, IndexMode::Error);
        assert_close(
            &read(&got),
            &want,
            0.0,
            0.0,
            &format!("gather axis {axis} on {}", name(d)),
        );
        // Outside [-len, len) either way: clipped to the nearest end, or 0.
        let far = [len, -len - 1, i32::MAX as i64, i32::MIN as i64, 2];
        for mode in [IndexMode::Clip, IndexMode::Fill] {
            let ft = Tensor::from_slice(d, &far.map(|v| v as i32), &[5]).unwrap();
            let got = read(&xt.gather_with(axis, &ft, mode).unwrap());
            let want = take(&x, &shape, axis, &far, mode);
            assert_close(
                &got,
                &want,
                0.0,
                0.0,
                &format!("gather axis {axis} {mode:?} on {}", name(d)),
            );
        }
    }
    // A scalar index drops the axis; u32 indices.
    let one = Tensor::from_slice(d, &[-2i64], &[]).unwrap();
    assert_eq!(
        xt.gather(1, &one).unwrap().shape(),
        &[3, 5],
        "scalar index on {}",
        name(d)
    );
    let table = Tensor::from_slice(d, &[10u32, 11, 12, 13], &[4]).unwrap();
    let picks = Tensor::from_slice(d, &[3u32, 9, 0], &[3]).unwrap();
    let got = table
        .gather_with(0, &picks, IndexMode::Clip)
        .unwrap()
        .to_vec_blocking::<u32>()
        .unwrap();
    assert_eq!(got, vec![13, 13, 10], "u32 gather on {}", name(d));
}
per_backend!(gather_counts_negative_indices_from_the_end_and_takes_any_rank);

/// Gathers of few elements per outer index over many outer indices (the cpu takes several
/// to a task): along the last axis and the middle one.
fn gather_over_many_outer_indices(d: &Device) {
    let shape = [200usize, 211, 13];
    let x = random(75, shape.iter().product(), -5.0, 5.0);
    let xt = tensor(d, &x, &shape);
    for (axis, idx) in [(2, vec![12i64, 0, 5]), (1, vec![210, 3])] {
        let it = Tensor::from_slice(
            d,
            &idx.iter().map(|&v| v as i32).collect::<Vec<_>>(),
            &[idx.len()],
        );
        let got = read(&xt.gather(axis, &it.unwrap()).unwrap());
        let want = take(&x, &shape, axis, &idx, IndexMode::Error);
        assert_close(
            &got,
            &want,
            0.0,
            0.0,
            &format!("gather axis {axis} on {}", name(d)),
        );
    }
}
per_backend!(gather_over_many_outer_indices);

/// In IndexMode::Error (the default) an index outside its axis is never a silent value: the
/// next read on the queue fails with INVALID, naming the first offending position; that
/// read's data is not returned, the queue keeps working, and the finding is reported once.
/// In a capture each replay checks, and the read after it reports (`replays_check_gathers`).
fn gather_out_of_range_indices_fail_the_next_read(d: &Device) {
    let x = tensor(d, &random(71, 2 * 70_001, -1.0, 1.0), &[2, 70_001]);
    for (idx, at) in [
        (vec![0i64, 70_000, -70_001, 70_001, 5], "[3]"),
        (vec![-70_002, 1], "[0]"),
    ] {
        let it = Tensor::from_slice(d, &idx, &[idx.len()]).unwrap();
        let y = x.gather(1, &it).unwrap();
        let e = y.to_vec_blocking::<f32>().unwrap_err();
        assert_eq!(e.code(), "INVALID", "{e} on {}", name(d));
        for needle in [at, "[-70001, 70001)", "axis 1"] {
            assert!(
                e.to_string().contains(needle),
                "{e}: expected {needle:?} on {}",
                name(d)
            );
        }
        // Reported once: the data reads now, with 0 where the index was outside.
        let want = take(&read(&x), &[2, 70_001], 1, &idx, IndexMode::Fill);
        assert_close(
            &read(&y),
            &want,
            0.0,
            0.0,
            &format!("gather after its error on {}", name(d)),
        );
        still_works(d);
    }
    if d.backend() != unicompute::BackendKind::Cpu {
        replays_check_gathers(d, &x);
        let it = Tensor::from_slice(d, &[0u32], &[1]).unwrap();
        let (graph, y) = d
            .queue()
            .capture(|_| x.gather_with(1, &it, IndexMode::Clip))
            .unwrap();
        graph.replay().unwrap();
        assert_eq!(
            read(&y),
            vec![read(&x)[0], read(&x)[70_001]],
            "a captured gather on {}",
            name(d)
        );
    }
}
per_backend!(gather_out_of_range_indices_fail_the_next_read);

/// A captured gather of `x: [2, 70001]` in IndexMode::Error, replayed on indices written into
/// the captured ones: in range, each replay's output is the eager gather's and numpy's; out of
/// range, the read after the replay fails naming the position (then reads the data, 0 there),
/// and the next replay in range reads fine.
fn replays_check_gathers(d: &Device, x: &Tensor) {
    let xs = read(x);
    let picks = unicompute::Buffer::from_slice(d, &[0i64, 0, 0]).unwrap();
    let it = Tensor::from_buffer(&picks, &[3]).unwrap();
    let (graph, y) = d.queue().capture(|_| x.gather(1, &it)).unwrap();
    for (idx, at) in [
        (vec![70_000i64, -1, 4], None),
        (vec![3, -70_001, 70_001], Some("[2]")),
        (vec![-70_002, 70_001, 8], Some("[0]")),
        (vec![-70_001, 9, 69_999], None),
    ] {
        picks.write(&idx).unwrap();
        graph.replay().unwrap();
        let what = format!("replay on {idx:?} on {}", name(d));
        if let Some(at) = at {
            let e = y.to_vec_blocking::<f32>().unwrap_err();
            assert_eq!(e.code(), "INVALID", "{e}: {what}");
            for needle in [at, "[-70001, 70001)", "axis 1"] {
                assert!(
                    e.to_string().contains(needle),
                    "{e}: expected {needle:?}, {what}"
                );
            }
        } else {
            let eager = x
                .gather(1, &Tensor::from_slice(d, &idx, &[3]).unwrap())
                .unwrap();
            assert_eq!(read(&y), read(&eager), "{what} against eager");
        }
        let want = take(&xs, &[2, 70_001], 1, &idx, IndexMode::Fill);
        assert_close(&read(&y), &want, 0.0, 0.0, &what);
    }
    still_works(d);
}

/// Checked gathers that no read follows (timed runs) take no more device memory however many
/// run: launches with the same shapes share one status word until a read reports it. The one
/// bad index among them is reported by the next read, once.
#[test]
fn checked_gathers_that_are_never_read_take_no_more_memory() {
    // Devices of this test's own, so that no other test's memory counts.
    for d in crate::common::open_devices() {
        let x = tensor(&d, &random(81, 3 * 11, -1.0, 1.0), &[3, 11]);
        let good = Tensor::from_slice(&d, &[4i64, -11, 10, 0, 7], &[5]).unwrap();
        let bad = Tensor::from_slice(&d, &[2i64, 9, -12, 11, 0], &[5]).unwrap();
        let run = |n: usize, idx: &Tensor| {
            for _ in 0..n {
                drop(x.gather(1, idx).unwrap());
            }
            d.queue().submit().unwrap().wait_blocking().unwrap();
        };
        run(20, &good);
        let before = d.memory_stats().bytes_live;
        run(300, &good);
        run(1, &bad);
        run(300, &good);
        let after = d.memory_stats().bytes_live;
        assert_eq!(
            after,
            before,
            "bytes live after 601 gathers on {}",
            name(&d)
        );
        let y = x.gather(1, &good).unwrap();
        expect_err(
            y.to_vec_blocking::<f32>(),
            "INVALID",
            &["[2]", "[-11, 11)", "axis 1"],
            &d,
        );
        let want = take(&read(&x), &[3, 11], 1, &[4, -11, 10, 0, 7], IndexMode::Fill);
        assert_close(&read(&y), &want, 0.0, 0.0, &format!("on {}", name(&d)));
    }
}
