//! ONNX sequences through a session on every device: split, erased, inserted into, read and
//! joined again against references computed here, on the device and on the host; sequences
//! fed and given back by `run_values`; and malformed use (positions out of range, mixed
//! element types, a sequence where a tensor belongs) as errors naming what was wrong.

use unicompute::onnx::proto::{self, GraphProto, NodeProto, ValueInfoProto};
use unicompute::onnx::{ElemType, HostTensor, Sequence, Session, SessionOptions, Val};
use unicompute::{Device, Tensor};

use crate::common::{assert_close, devices, name, per_backend, random, read, tensor};
use crate::onnx_recur::{info, int64s, int_attr, model, node, FLOAT, INT64};

/// A value declared a sequence of `elem` tensors.
fn seq_info(name: &str, elem: i32) -> ValueInfoProto {
    let tensor = info(name, elem).r#type;
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(proto::TypeProto {
            value: Some(proto::type_proto::Value::SequenceType(Box::new(
                proto::type_proto::Sequence {
                    elem_type: tensor.map(Box::new),
                },
            ))),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// `n` with the INT attributes `attrs`.
fn with(mut n: NodeProto, attrs: &[(&str, i64)]) -> NodeProto {
    n.attribute
        .extend(attrs.iter().map(|&(name, v)| int_attr(name, v)));
    n
}

/// X `[5, 7, 3]` split along axis 1 into 2, 3 and 2; the middle part erased (at -2); Y
/// `[5, 4, 3]` inserted in front; then its length, its parts joined along axis 1 and its
/// last part (at -1). Also X split along axis 2 without keeping it and stacked again on a
/// new axis 2, and X's shape (on the host) split into scalars and joined.
fn round_trip_model() -> Vec<u8> {
    let nodes = vec![
        with(
            node("SplitToSequence", "cut", &["x", "sizes"], &["parts"]),
            &[("axis", 1)],
        ),
        node("SequenceErase", "drop", &["parts", "minus2"], &["kept"]),
        node("SequenceInsert", "put", &["kept", "y", "zero"], &["all"]),
        node("SequenceLength", "count", &["all"], &["len"]),
        with(
            node("ConcatFromSequence", "join", &["all"], &["joined"]),
            &[("axis", 1)],
        ),
        node("SequenceAt", "last", &["all", "minus1"], &["at"]),
        with(
            node("SplitToSequence", "planes", &["x"], &["p"]),
            &[("axis", 2), ("keepdims", 0)],
        ),
        with(
            node("ConcatFromSequence", "stack", &["p"], &["stacked"]),
            &[("axis", -1), ("new_axis", 1)],
        ),
        node("Shape", "shape", &["x"], &["dims"]),
        node("SplitToSequence", "dims_cut", &["dims"], &["each"]),
        with(
            node(
                "ConcatFromSequence",
                "dims_join",
                &["each"],
                &["dims_again"],
            ),
            &[("axis", 0)],
        ),
    ];
    let g = GraphProto {
        node: nodes,
        initializer: vec![
            int64s("sizes", &[3], &[2, 3, 2]),
            int64s("minus2", &[], &[-2]),
            int64s("minus1", &[], &[-1]),
            int64s("zero", &[], &[0]),
        ],
        input: vec![info("x", FLOAT), info("y", FLOAT)],
        output: ["joined", "at", "stacked"]
            .iter()
            .map(|n| info(n, FLOAT))
            .chain(["len", "dims_again"].iter().map(|n| info(n, INT64)))
            .collect(),
        ..Default::default()
    };
    model(g, 24)
}

/// `x [a, b, c]` at the positions `cols` of axis 1, as f64.
fn columns(x: &[f32], [a, b, c]: [usize; 3], cols: std::ops::Range<usize>) -> Vec<f64> {
    let mut out = Vec::new();
    for i in 0..a {
        for j in cols.clone() {
            out.extend(x[(i * b + j) * c..][..c].iter().map(|&v| f64::from(v)));
        }
    }
    out
}

fn sequences_split_edit_and_join_as_the_reference(d: &Device) {
    let s = Session::from_bytes(d, round_trip_model(), SessionOptions::default()).unwrap();
    let (x, y) = (
        random(71, 5 * 7 * 3, -2.0, 2.0),
        random(72, 5 * 4 * 3, -2.0, 2.0),
    );
    let feeds = [
        ("x", &tensor(d, &x, &[5, 7, 3])),
        ("y", &tensor(d, &y, &[5, 4, 3])),
    ];
    let out = s.run(&feeds).unwrap();
    let what = |o: &str| format!("{o} on {}", name(d));
    // [y | x[:, 0..2] | x[:, 5..7]] along axis 1, row by row.
    let mut joined = Vec::new();
    for i in 0..5 {
        joined.extend(y[i * 12..][..12].iter().map(|&v| f64::from(v)));
        joined.extend(columns(&x[i * 21..][..21], [1, 7, 3], 0..2));
        joined.extend(columns(&x[i * 21..][..21], [1, 7, 3], 5..7));
    }
    assert_eq!(out[0].1.shape(), [5, 8, 3], "{}", what("joined"));
    assert_close(&read(&out[0].1), &joined, 0.0, 0.0, &what("joined"));
    assert_eq!(out[1].1.shape(), [5, 2, 3], "{}", what("at"));
    let last = columns(&x, [5, 7, 3], 5..7);
    assert_close(&read(&out[1].1), &last, 0.0, 0.0, &what("at"));
    assert_eq!(out[2].1.shape(), [5, 7, 3], "{}", what("stacked"));
    let x64: Vec<f64> = x.iter().map(|&v| v.into()).collect();
    assert_close(&read(&out[2].1), &x64, 0.0, 0.0, &what("stacked"));
    assert_eq!(
        out[3].1.to_vec_blocking::<i64>().unwrap(),
        [3],
        "{}",
        what("len")
    );
    let dims = out[4].1.to_vec_blocking::<i64>().unwrap();
    assert_eq!(dims, [5, 7, 3], "{}", what("dims_again"));
}
per_backend!(sequences_split_edit_and_join_as_the_reference);

/// `ys = SequenceInsert(xs, t, 1)` and `cat = ConcatFromSequence(ys, axis 0)`: a sequence
/// input and a sequence output.
fn fed_sequence_model() -> Vec<u8> {
    let g = GraphProto {
        node: vec![
            node("SequenceInsert", "put", &["xs", "t", "one"], &["ys"]),
            with(
                node("ConcatFromSequence", "join", &["ys"], &["cat"]),
                &[("axis", 0)],
            ),
        ],
        initializer: vec![int64s("one", &[], &[1])],
        input: vec![seq_info("xs", FLOAT), info("t", FLOAT)],
        output: vec![seq_info("ys", FLOAT), info("cat", FLOAT)],
        ..Default::default()
    };
    model(g, 13)
}

fn sequences_are_fed_and_given_back_by_run_values(d: &Device) {
    let s = Session::from_bytes(d, fed_sequence_model(), SessionOptions::default()).unwrap();
    assert!(s.inputs()[0].sequence && !s.inputs()[1].sequence);
    assert!(s.outputs()[0].sequence && !s.outputs()[1].sequence);
    let rows = [3usize, 1, 2];
    let data: Vec<Vec<f32>> = (rows.iter().enumerate())
        .map(|(k, &r)| random(80 + k as u64, r * 5, -1.0, 1.0))
        .collect();
    let items: Vec<Val> = (data.iter().zip(rows))
        .map(|(v, r)| Val::Device(tensor(d, v, &[r, 5])))
        .collect();
    let xs = Sequence::new(ElemType::F32, items[..2].to_vec()).unwrap();
    let feeds = vec![("xs", Val::Seq(xs.clone())), ("t", items[2].clone())];
    let out = s.run_values(feeds).unwrap();
    let Val::Seq(ys) = &out[0].1 else {
        panic!("ys is not a sequence on {}", name(d))
    };
    let order = [0, 2, 1];
    assert_eq!(ys.len(), 3, "on {}", name(d));
    let mut cat = Vec::new();
    for (item, &k) in ys.items().iter().zip(&order) {
        let want: Vec<f64> = data[k].iter().map(|&v| v.into()).collect();
        let got = item.tensor(d).unwrap();
        assert_eq!(got.shape(), [rows[k], 5], "on {}", name(d));
        assert_close(&read(&got), &want, 0.0, 0.0, &format!("ys on {}", name(d)));
        cat.extend(want);
    }
    let got = out[1].1.tensor(d).unwrap();
    assert_close(&read(&got), &cat, 0.0, 0.0, &format!("cat on {}", name(d)));
    // The tensor API gives no sequence, and each input takes only its own kind.
    let t = items[2].tensor(d).unwrap();
    let e = s.run(&[("xs", &t), ("t", &t)]).unwrap_err().to_string();
    assert!(e.contains("input 'xs' is a sequence in the model"), "{e}");
    let e = (s.run_values(vec![("xs", Val::Seq(xs.clone())), ("t", Val::Seq(xs))]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("input 't' is a tensor in the model"), "{e}");
}
per_backend!(sequences_are_fed_and_given_back_by_run_values);

/// A model of `nodes` over the float inputs `inputs` and the sequence input `xs`, giving the
/// float output `out`.
fn case(nodes: Vec<NodeProto>, inputs: &[&str], out: &str) -> Vec<u8> {
    let mut input = vec![seq_info("xs", FLOAT)];
    input.extend(
        inputs
            .iter()
            .map(|&n| info(n, if n == "i" { INT64 } else { FLOAT })),
    );
    let g = GraphProto {
        node: nodes,
        input,
        output: vec![info(out, FLOAT)],
        ..Default::default()
    };
    model(g, 13)
}

/// The error running `bytes` on `xs` (three f32 tensors) and the float tensor `f` (and the
/// i64 scalar `i` where the model takes it).
fn run_error(d: &Device, bytes: Vec<u8>, i: i64) -> String {
    let s = Session::from_bytes(d, bytes, SessionOptions::default()).unwrap();
    let t = |seed| Val::Device(tensor(d, &random(seed, 6, -1.0, 1.0), &[2, 3]));
    let xs = Sequence::new(ElemType::F32, vec![t(91), t(92), t(93)]).unwrap();
    let mut feeds = vec![("xs", Val::Seq(xs)), ("f", t(94))];
    let names: Vec<String> = s.inputs().into_iter().map(|i| i.name).collect();
    if names.iter().any(|n| n == "i") {
        feeds.push(("i", Val::Host(HostTensor::i64(vec![], vec![i]))));
    }
    let e = s.run_values(feeds).expect_err("a malformed use ran");
    e.to_string()
}

#[test]
fn malformed_sequence_use_is_an_error_naming_what_was_wrong() {
    let d = &devices()[0];
    let at = case(
        vec![node("SequenceAt", "at", &["xs", "i"], &["y"])],
        &["f", "i"],
        "y",
    );
    let e = run_error(d, at.clone(), 3);
    assert!(
        e.contains("(SequenceAt): position 3 is outside a sequence of 3 tensors"),
        "{e}"
    );
    assert!(e.contains("expected one in [-3, 2]"), "{e}");
    let e = run_error(d, at, -4);
    assert!(e.contains("position -4 is outside"), "{e}");
    let bad_insert = case(
        vec![
            with(node("Cast", "c", &["f"], &["n"]), &[("to", 6)]),
            node("SequenceInsert", "put", &["xs", "n"], &["s"]),
            node("SequenceAt", "at", &["s", "i"], &["y"]),
        ],
        &["f", "i"],
        "y",
    );
    let e = run_error(d, bad_insert, 0);
    assert!(
        e.contains("(SequenceInsert)") && e.contains("float tensors") && e.contains("int32"),
        "{e}"
    );
    let e = run_error(
        d,
        case(vec![node("Relu", "r", &["xs"], &["y"])], &["f"], "y"),
        0,
    );
    assert!(
        e.contains("(Relu): input 0 is a sequence of 3 float tensors; expected a tensor"),
        "{e}"
    );
    let len = case(
        vec![node("SequenceLength", "n", &["f"], &["y"])],
        &["f"],
        "y",
    );
    let e = run_error(d, len, 0);
    assert!(
        e.contains("input 0 is a tensor of shape [2, 3]; expected a sequence"),
        "{e}"
    );
    let mixed = case(
        vec![
            with(node("Cast", "c", &["f"], &["n"]), &[("to", 6)]),
            node("SequenceConstruct", "make", &["f", "n"], &["s"]),
            node("ConcatFromSequence", "join", &["s"], &["y"]),
        ],
        &["f"],
        "y",
    );
    let e = run_error(d, mixed, 0);
    assert!(
        e.contains("(SequenceConstruct): input 1") && e.contains("int32"),
        "{e}"
    );
    let erase_empty = case(
        vec![
            node("SequenceEmpty", "none", &[], &["s"]),
            node("SequenceErase", "drop", &["s"], &["t"]),
            with(
                node("ConcatFromSequence", "join", &["t"], &["y"]),
                &[("axis", 0)],
            ),
        ],
        &["f"],
        "y",
    );
    let e = run_error(d, erase_empty, 0);
    assert!(e.contains("(SequenceErase): the sequence is empty"), "{e}");
    let split = case(
        vec![
            with(
                node("SplitToSequence", "cut", &["f", "sizes"], &["s"]),
                &[("axis", 1)],
            ),
            with(
                node("ConcatFromSequence", "join", &["s"], &["y"]),
                &[("axis", 1)],
            ),
        ],
        &["f", "sizes"],
        "y",
    );
    let e = run_error(d, with_sizes(split), 0);
    assert!(e.contains("does not divide an axis of 3"), "{e}");
}

/// The model's input `sizes` made the constant `[1, 1]` (adding up to 2, not 3).
fn with_sizes(mut bytes: Vec<u8>) -> Vec<u8> {
    edit(&mut bytes, |g| {
        g.input.retain(|i| i.name.as_deref() != Some("sizes"));
        g.initializer.push(int64s("sizes", &[2], &[1, 1]));
    });
    bytes
}

/// `bytes`, a model, with its graph changed by `change`.
fn edit(bytes: &mut Vec<u8>, change: impl FnOnce(&mut GraphProto)) {
    use prost::Message;
    let mut m = proto::ModelProto::decode(bytes.as_slice()).unwrap();
    change(m.graph.as_mut().unwrap());
    *bytes = m.encode_to_vec();
}

/// A sequence refuses a tensor of another element type when it is made or grows, and a
/// position past its end.
#[test]
fn a_sequence_holds_tensors_of_one_element_type() {
    let d = &devices()[0];
    let f = Val::Device(tensor(d, &[1.0, 2.0], &[2]));
    let n = Val::Device(Tensor::from_slice(d, &[1i32, 2], &[2]).unwrap());
    let e = Sequence::new(ElemType::F32, vec![f.clone(), n]).unwrap_err();
    assert_eq!(e.code(), "DTYPE", "{e}");
    assert!(
        e.to_string().contains("float tensors") && e.to_string().contains("int32"),
        "{e}"
    );
    let mut s = Sequence::new(ElemType::F32, vec![f.clone()]).unwrap();
    let e = s.insert(2, f.clone()).unwrap_err();
    assert_eq!(e.code(), "OUT_OF_RANGE", "{e}");
    let e = s
        .insert(0, Val::Seq(Sequence::empty(ElemType::F32)))
        .unwrap_err();
    assert!(e.to_string().contains("cannot hold a sequence"), "{e}");
    assert_eq!(s.remove(1).unwrap_err().code(), "OUT_OF_RANGE");
    let e = Val::Seq(s).tensor(d).unwrap_err().to_string();
    assert!(
        e.contains("a sequence of 1 float tensors; expected a tensor"),
        "{e}"
    );
}
