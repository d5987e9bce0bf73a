//! ONNX sequences through a session on every device: split, erased, inserted into, read and
//! joined again against references computed here, on the device and on the host; sequences
//! fed and given back by `run_values`; and malformed use (positions out of range, mixed
//! element types, a sequence where a tensor belongs) as errors naming what was wrong.

use unicompute::onnx::proto::{self, GraphProto, NodeProto, TensorProto, ValueInfoProto};
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

/// A model of `nodes` with the constants `consts` over the sequence input `xs`, the float
/// input `f` and, where `with_i`, the int64 input `i`, giving the float output `y`.
fn case(nodes: Vec<NodeProto>, consts: Vec<TensorProto>, with_i: bool) -> Vec<u8> {
    let mut input = vec![seq_info("xs", FLOAT), info("f", FLOAT)];
    if with_i {
        input.push(info("i", INT64));
    }
    let g = GraphProto {
        node: nodes,
        initializer: consts,
        input,
        output: vec![info("y", FLOAT)],
        ..Default::default()
    };
    model(g, 13)
}

/// The error running `bytes` on `xs` (three f32 `[2, 3]` tensors), `f` (one more) and the
/// i64 scalar `i` where the model takes it.
fn run_error(d: &Device, bytes: Vec<u8>, i: i64) -> String {
    let s = Session::from_bytes(d, bytes, SessionOptions::default()).unwrap();
    let t = |seed| Val::Device(tensor(d, &random(seed, 6, -1.0, 1.0), &[2, 3]));
    let xs = Sequence::new(ElemType::F32, vec![t(91), t(92), t(93)]).unwrap();
    let mut feeds = vec![("xs", Val::Seq(xs)), ("f", t(94))];
    if s.inputs().len() == 3 {
        feeds.push(("i", Val::Host(HostTensor::i64(vec![], vec![i]))));
    }
    let e = s.run_values(feeds).expect_err("a malformed use ran");
    e.to_string()
}

#[test]
fn positions_and_kinds_of_values_are_checked_when_run() {
    let d = &devices()[0];
    let at = case(
        vec![node("SequenceAt", "at", &["xs", "i"], &["y"])],
        vec![],
        true,
    );
    let e = run_error(d, at.clone(), 3);
    let outside = "(SequenceAt): position 3 is outside a sequence of 3 tensors";
    assert!(
        e.contains(outside) && e.contains("expected one in [-3, 2]"),
        "{e}"
    );
    let e = run_error(d, at, -4);
    assert!(e.contains("position -4 is outside"), "{e}");
    let relu = case(vec![node("Relu", "r", &["xs"], &["y"])], vec![], false);
    let e = run_error(d, relu, 0);
    let seq = "(Relu): input 0 is a sequence of 3 float tensors; expected a tensor";
    assert!(e.contains(seq), "{e}");
    let len = case(
        vec![node("SequenceLength", "n", &["f"], &["y"])],
        vec![],
        false,
    );
    let e = run_error(d, len, 0);
    let tensor = "input 0 is a tensor of shape [2, 3]; expected a sequence";
    assert!(e.contains(tensor), "{e}");
    let erase_empty = case(
        vec![
            node("SequenceEmpty", "none", &[], &["s"]),
            node("SequenceErase", "drop", &["s"], &["t"]),
            with(
                node("ConcatFromSequence", "join", &["t"], &["y"]),
                &[("axis", 0)],
            ),
        ],
        vec![],
        false,
    );
    let e = run_error(d, erase_empty, 0);
    assert!(e.contains("(SequenceErase): the sequence is empty"), "{e}");
}

#[test]
fn element_types_and_split_sizes_are_checked_when_run() {
    let d = &devices()[0];
    let to_int32 = || with(node("Cast", "c", &["f"], &["n"]), &[("to", 6)]);
    let insert = case(
        vec![
            to_int32(),
            node("SequenceInsert", "put", &["xs", "n"], &["s"]),
            node("SequenceAt", "at", &["s", "i"], &["y"]),
        ],
        vec![],
        true,
    );
    let e = run_error(d, insert, 0);
    let types = e.contains("float tensors") && e.contains("int32");
    assert!(e.contains("(SequenceInsert)") && types, "{e}");
    let mixed = case(
        vec![
            to_int32(),
            node("SequenceConstruct", "make", &["f", "n"], &["s"]),
            with(
                node("ConcatFromSequence", "join", &["s"], &["y"]),
                &[("axis", 0)],
            ),
        ],
        vec![],
        false,
    );
    let e = run_error(d, mixed, 0);
    assert!(
        e.contains("(SequenceConstruct): input 1") && e.contains("int32"),
        "{e}"
    );
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
        vec![int64s("sizes", &[2], &[1, 1])],
        false,
    );
    let e = run_error(d, split, 0);
    assert!(
        e.contains("split [1, 1] (shape [2]) does not divide an axis of 3"),
        "{e}"
    );
}

/// Scalars have no axis to split or join along (stacking them on a new one is allowed).
#[test]
fn scalars_are_refused_where_an_axis_is_needed() {
    let d = &devices()[0];
    let sum = || {
        with(
            node("ReduceSum", "sum", &["f"], &["total"]),
            &[("keepdims", 0)],
        )
    };
    let split = case(
        vec![
            sum(),
            node("SplitToSequence", "cut", &["total"], &["s"]),
            with(
                node("ConcatFromSequence", "join", &["s"], &["y"]),
                &[("axis", 0)],
            ),
        ],
        vec![],
        false,
    );
    let e = run_error(d, split, 0);
    assert!(
        e.contains("(SplitToSequence): the input is a scalar"),
        "{e}"
    );
    let join = case(
        vec![
            sum(),
            node("SequenceConstruct", "make", &["total", "total"], &["s"]),
            with(
                node("ConcatFromSequence", "join", &["s"], &["y"]),
                &[("axis", 0)],
            ),
        ],
        vec![],
        false,
    );
    let e = run_error(d, join, 0);
    assert!(
        e.contains("(ConcatFromSequence): the tensors are scalars"),
        "{e}"
    );
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
