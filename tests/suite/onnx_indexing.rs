//! ONNX's `GatherElements`, `GatherND`, `OneHot`, `NonZero` and `TopK` on every device
//! against references computed here: negative indices, batch dimensions, indices out of
//! range, inputs given on the device, and TopK's opset-1 form.

use unicompute::onnx::{Session, SessionOptions};
use unicompute::{DType, Device, Tensor};

use crate::common::{assert_close, name, per_backend, random, read, tensor};
use crate::onnx_recur::{info, int_attr, model, node, FLOAT, INT64};

/// A one-node model `y = op(data, indices)` with attribute `(attr, value)`.
pub(crate) fn indexing_model(op: &str, attr: &str, value: i64) -> Vec<u8> {
    let mut n = node(op, "pick", &["data", "indices"], &["y"]);
    n.attribute.push(int_attr(attr, value));
    let g = unicompute::onnx::proto::GraphProto {
        node: vec![n],
        input: vec![info("data", FLOAT), info("indices", INT64)],
        output: vec![info("y", FLOAT)],
        ..Default::default()
    };
    model(g, 13)
}

/// Runs `op` on `data` and i64 `indices` (on the device) and compares with `want`.
fn check(
    d: &Device,
    op: &str,
    attr: (&str, i64),
    data: (&[f32], &[usize]),
    idx: (&[i64], &[usize]),
    want: (&[f64], &[usize]),
) {
    let s = Session::from_bytes(
        d,
        indexing_model(op, attr.0, attr.1),
        SessionOptions::default(),
    )
    .unwrap();
    let x = tensor(d, data.0, data.1);
    let i = Tensor::from_slice(d, idx.0, idx.1).unwrap();
    let y = &s.run(&[("data", &x), ("indices", &i)]).unwrap()[0].1;
    let what = format!("{op} {attr:?} on {}", name(d));
    assert_eq!(y.shape(), want.1, "{what}");
    assert_close(&read(y), want.0, 0.0, 0.0, &what);
}

fn gather_elements_matches_the_reference(d: &Device) {
    let data = random(51, 3 * 4 * 5, -3.0, 3.0);
    let mut rng = fastrand::Rng::with_seed(52);
    let idx: Vec<i64> = (0..3 * 2 * 5).map(|_| rng.i64(-4..4)).collect();
    // out[i][j][k] = data[i][idx[i][j][k]][k], negative indices from the end.
    let want: Vec<f64> = (0..30)
        .map(|f| {
            let (i, k) = (f / 10, f % 5);
            let j = idx[f].rem_euclid(4) as usize;
            data[(i * 4 + j) * 5 + k].into()
        })
        .collect();
    check(
        d,
        "GatherElements",
        ("axis", -2),
        (&data, &[3, 4, 5]),
        (&idx, &[3, 2, 5]),
        (&want, &[3, 2, 5]),
    );
}
per_backend!(gather_elements_matches_the_reference);

fn gather_nd_matches_the_reference(d: &Device) {
    let data = random(53, 3 * 4 * 5, -3.0, 3.0);
    // batch_dims 0: tuples (a, b) pick rows data[a][b] of 5.
    let idx: [i64; 6] = [2, -1, 0, 3, -3, 1];
    let mut want = Vec::new();
    for t in idx.chunks(2) {
        let (a, b) = (t[0].rem_euclid(3) as usize, t[1].rem_euclid(4) as usize);
        want.extend(data[(a * 4 + b) * 5..][..5].iter().map(|&v| f64::from(v)));
    }
    check(
        d,
        "GatherND",
        ("batch_dims", 0),
        (&data, &[3, 4, 5]),
        (&idx, &[3, 2]),
        (&want, &[3, 5]),
    );
    // batch_dims 1: in batch entry n, tuple (b) picks data[n][b], 2 tuples each.
    let idx: [i64; 6] = [3, 0, -1, 2, 1, 1];
    let mut want = Vec::new();
    for (t, &b) in idx.iter().enumerate() {
        let (n, b) = (t / 2, b.rem_euclid(4) as usize);
        want.extend(data[(n * 4 + b) * 5..][..5].iter().map(|&v| f64::from(v)));
    }
    check(
        d,
        "GatherND",
        ("batch_dims", 1),
        (&data, &[3, 4, 5]),
        (&idx, &[3, 2, 1]),
        (&want, &[3, 2, 5]),
    );
}
per_backend!(gather_nd_matches_the_reference);

/// An index outside its axis is an error naming the node, not a read past the data.
#[test]
fn indexing_refuses_indices_outside_the_data() {
    let d = &crate::common::devices()[0];
    let s = Session::from_bytes(
        d,
        indexing_model("GatherElements", "axis", 0),
        SessionOptions::default(),
    )
    .unwrap();
    let x = tensor(d, &[1.0, 2.0, 3.0], &[3]);
    let i = Tensor::from_slice(d, &[0i64, 3], &[2]).unwrap();
    let e = s
        .run(&[("data", &x), ("indices", &i)])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("node 'pick' (GatherElements): index 3 is outside an axis of 3"),
        "{e}"
    );
}

/// A one-node model of `op` reading `inputs` (declared `FLOAT` but for those named in
/// `int64`) and writing `outputs`, with integer attributes `attrs`, importing `opset`.
fn one_node(
    op: &str,
    (inputs, int64): (&[&str], &[&str]),
    outputs: &[&str],
    attrs: &[(&str, i64)],
    opset: i64,
) -> Vec<u8> {
    let mut n = node(op, "it", inputs, outputs);
    n.attribute
        .extend(attrs.iter().map(|&(name, v)| int_attr(name, v)));
    let elem = |v: &&str| if int64.contains(v) { INT64 } else { FLOAT };
    let g = unicompute::onnx::proto::GraphProto {
        node: vec![n],
        input: inputs.iter().map(|v| info(v, elem(v))).collect(),
        output: outputs.iter().map(|v| info(v, elem(v))).collect(),
        ..Default::default()
    };
    model(g, opset)
}

/// OneHot with indices in range (negative ones from the end), out of range on either side
/// (all-off rows) and as floats (truncated), along the first, middle and last axis.
fn one_hot_matches_the_reference(d: &Device) {
    let idx: [i64; 8] = [0, 4, -1, -5, 5, -6, 2, 7];
    let depth = 5i64;
    let (off, on) = (-0.5f32, 3.0f32);
    for axis in [0i64, 1, -1] {
        // Indices [2, 4]; the output [2, 4] with `depth` inserted at `axis`.
        let at = if axis < 0 { 2 } else { axis as usize };
        let mut shape = vec![2, 4];
        shape.insert(at, depth as usize);
        let want: Vec<f64> = (0..40)
            .map(|f| {
                let mut rest = f;
                let mut pos = [0usize; 3];
                for a in (0..3).rev() {
                    pos[a] = rest % shape[a];
                    rest /= shape[a];
                }
                let others: Vec<usize> = (0..3).filter(|&a| a != at).map(|a| pos[a]).collect();
                let i = idx[others[0] * 4 + others[1]];
                let hit = (-depth..depth).contains(&i) && i.rem_euclid(depth) == pos[at] as i64;
                f64::from(if hit { on } else { off })
            })
            .collect();
        let values = tensor(d, &[off, on], &[2]);
        let depth_t = Tensor::from_slice(d, &[depth], &[1]).unwrap();
        for float in [false, true] {
            // The same indices as floats, with fractions that truncation drops.
            let (indices, int64): (Tensor, &[&str]) = if float {
                let f: Vec<f32> = idx
                    .iter()
                    .map(|&i| i as f32 + 0.75 * i.signum() as f32)
                    .collect();
                (tensor(d, &f, &[2, 4]), &["depth"])
            } else {
                (
                    Tensor::from_slice(d, &idx, &[2, 4]).unwrap(),
                    &["indices", "depth"],
                )
            };
            let bytes = one_node(
                "OneHot",
                (&["indices", "depth", "values"], int64),
                &["y"],
                &[("axis", axis)],
                11,
            );
            let s = Session::from_bytes(d, bytes, SessionOptions::default()).unwrap();
            let feeds = [
                ("indices", &indices),
                ("depth", &depth_t),
                ("values", &values),
            ];
            let y = &s.run(&feeds).unwrap()[0].1;
            let what = format!("OneHot along {axis}, float indices {float}, on {}", name(d));
            assert_eq!(y.shape(), shape, "{what}");
            assert_close(&read(y), &want, 0.0, 0.0, &what);
        }
    }
}
per_backend!(one_hot_matches_the_reference);

/// NonZero of a tensor computed on the device (read back by the session): positions in
/// row-major order, one row per axis; NaN counts, -0 does not.
fn nonzero_of_a_device_tensor(d: &Device) {
    let bytes = one_node("NonZero", (&["x"], &[]), &["y"], &[], 13);
    let s = Session::from_bytes(d, bytes, SessionOptions::default()).unwrap();
    let mut x = vec![0.0f32; 3 * 4 * 5];
    for (i, v) in [(1, 2.0), (7, -0.0), (19, f32::NAN), (33, -1.5), (59, 1e-30)] {
        x[i] = v;
    }
    let t = tensor(d, &x, &[3, 4, 5]);
    let y = &s.run(&[("x", &t)]).unwrap()[0].1;
    assert_eq!(
        (y.shape(), y.dtype()),
        (&[3, 4][..], DType::I64),
        "on {}",
        name(d)
    );
    let hits = [1usize, 19, 33, 59];
    let want: Vec<i64> = [20, 5, 1]
        .iter()
        .zip([3usize, 4, 5])
        .flat_map(|(&stride, n)| hits.iter().map(move |&h| (h / stride % n) as i64))
        .collect();
    assert_eq!(y.to_vec_blocking::<i64>().unwrap(), want, "on {}", name(d));
}
per_backend!(nonzero_of_a_device_tensor);

/// TopK of opset 1 takes `k` as an attribute; a node with neither the attribute nor the
/// input is refused at load.
fn top_k_of_opset_1_and_without_k(d: &Device) {
    let bytes = one_node(
        "TopK",
        (&["x"], &[]),
        &["v", "i"],
        &[("k", 2), ("axis", 0)],
        9,
    );
    let s = Session::from_bytes(d, bytes, SessionOptions::default()).unwrap();
    let t = tensor(d, &[3.0, -1.0, 3.0, 7.0, 0.5, 7.0], &[3, 2]);
    let out = s.run(&[("x", &t)]).unwrap();
    // Along axis 0, ties to the lower index.
    assert_eq!(
        read(&out[0].1),
        [3.0, 7.0, 3.0, 7.0],
        "values on {}",
        name(d)
    );
    let i = out[1].1.to_vec_blocking::<i64>().unwrap();
    assert_eq!(i, [0, 1, 1, 2], "indices on {}", name(d));
    let bytes = one_node("TopK", (&["x"], &[]), &["v", "i"], &[], 9);
    let e = Session::from_bytes(d, bytes, SessionOptions::default())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(e.contains("node 'it' (TopK)") && e.contains("no k"), "{e}");
}
per_backend!(top_k_of_opset_1_and_without_k);
