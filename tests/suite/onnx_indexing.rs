//! ONNX's `GatherElements` and `GatherND` on every device against references computed here,
//! with negative indices, batch dimensions, and indices given on the device.

use unicompute::onnx::{Session, SessionOptions};
use unicompute::{Device, Tensor};

use crate::common::{assert_close, name, per_backend, random, read, tensor};
use crate::onnx_recur::{info, int_attr, model, node, FLOAT, INT64};

/// A one-node model `y = op(data, indices)` with attribute `(attr, value)`.
fn indexing_model(op: &str, attr: &str, value: i64) -> Vec<u8> {
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
