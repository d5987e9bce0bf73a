//! ONNX's scatter operators through a session: indices fed on the device, and a `reduction`
//! the library lacks refused at load (the node tests `test_scatter*` cover the rest).

use unicompute::onnx::{Session, SessionOptions};
use unicompute::{Device, Tensor};

use crate::common::{assert_close, name, per_backend, random, read, tensor};
use crate::onnx_recur::{attr, info, model, node, FLOAT, INT64};

/// A one-node model `y = op(data, indices, updates)` with `reduction`.
fn scatter_model(op: &str, reduction: &str) -> Vec<u8> {
    let mut n = node(op, "put", &["data", "indices", "updates"], &["y"]);
    n.attribute.push(attr("reduction", 3, |a| {
        a.s = Some(reduction.as_bytes().to_vec().into())
    }));
    let g = unicompute::onnx::proto::GraphProto {
        node: vec![n],
        input: vec![
            info("data", FLOAT),
            info("indices", INT64),
            info("updates", FLOAT),
        ],
        output: vec![info("y", FLOAT)],
        ..Default::default()
    };
    model(g, 18)
}

fn scatter_nd_adds_duplicates_in_a_session(d: &Device) {
    let s = Session::from_bytes(
        d,
        scatter_model("ScatterND", "add"),
        SessionOptions::default(),
    )
    .unwrap();
    let data = random(61, 4 * 3, -1.0, 1.0);
    let updates = random(62, 5 * 3, -1.0, 1.0);
    // Rows 2, 0, 2 (again, from the end), 3 and 2: the three updates of row 2 all add.
    let idx = [2i64, 0, -2, 3, 2];
    let mut want: Vec<f64> = data.iter().map(|&v| v.into()).collect();
    for (t, &i) in idx.iter().enumerate() {
        let row = i.rem_euclid(4) as usize;
        for c in 0..3 {
            want[row * 3 + c] += f64::from(updates[t * 3 + c]);
        }
    }
    let (x, u) = (tensor(d, &data, &[4, 3]), tensor(d, &updates, &[5, 3]));
    let i = Tensor::from_slice(d, &idx, &[5, 1]).unwrap();
    let y = &s
        .run(&[("data", &x), ("indices", &i), ("updates", &u)])
        .unwrap()[0]
        .1;
    assert_close(
        &read(y),
        &want,
        1e-6,
        1e-6,
        &format!("ScatterND add on {}", name(d)),
    );
}
per_backend!(scatter_nd_adds_duplicates_in_a_session);

fn unknown_reductions_are_refused_at_load(d: &Device) {
    for op in ["ScatterElements", "ScatterND"] {
        let e = Session::from_bytes(d, scatter_model(op, "sum"), SessionOptions::default())
            .err()
            .unwrap_or_else(|| panic!("{op} with reduction 'sum' loaded"));
        let msg = e.to_string();
        assert!(
            msg.contains("reduction 'sum'") && msg.contains("put"),
            "{op}: {msg}"
        );
    }
}
per_backend!(unknown_reductions_are_refused_at_load);
