//! A model whose control flow is steered by values computed on the device, as Silero VAD's
//! `If` is by its sample-rate input: every condition and the trip count come from an int64
//! input `k` or from data, so a session reads each back from the device inside a subgraph.
//! Shared by the suite (`onnx_recur`) and the browser suite (`tests/wasm.rs`), which build
//! it and check it against [`reference`].

use prost::Message;
use unicompute::onnx::proto::{
    self, AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto, ValueInfoProto,
};

const FLOAT: i32 = 1;
const INT64: i32 = 7;
const BOOL: i32 = 9;

/// The length of `x` and `w`: a prime.
pub const N: usize = 13;

/// The loop stops once the sum of its accumulator reaches this.
pub const LIMIT: f32 = 20.0;

/// A value declared with element type `elem` and no shape.
pub fn info(name: &str, elem: i32) -> ValueInfoProto {
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(proto::TypeProto {
            value: Some(proto::type_proto::Value::TensorType(
                proto::type_proto::Tensor {
                    elem_type: Some(elem),
                    shape: None,
                },
            )),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn stored(name: &str, elem: i32, dims: &[i64], raw: Vec<u8>) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        data_type: Some(elem),
        dims: dims.to_vec(),
        raw_data: Some(raw.into()),
        ..Default::default()
    }
}

fn node(op: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto {
        name: Some(outputs[0].into()),
        op_type: Some(op.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

/// A node with one attribute of ONNX type code `kind`, set by `set`.
fn with(
    mut n: NodeProto,
    name: &str,
    kind: i32,
    set: impl FnOnce(&mut AttributeProto),
) -> NodeProto {
    let mut a = AttributeProto {
        name: Some(name.into()),
        r#type: Some(kind),
        ..Default::default()
    };
    set(&mut a);
    n.attribute.push(a);
    n
}

fn constant(out: &str, t: TensorProto) -> NodeProto {
    with(node("Constant", &[], &[out]), "value", 4, |a| a.t = Some(t))
}

fn graph(nodes: Vec<NodeProto>, inputs: Vec<ValueInfoProto>, outputs: &[&str]) -> GraphProto {
    GraphProto {
        node: nodes,
        input: inputs,
        output: outputs.iter().map(|o| info(o, 0)).collect(),
        ..Default::default()
    }
}

/// `If` with branches `then` and `other`, reading `cond`, giving `out`.
fn if_node(cond: &str, out: &str, then: GraphProto, other: GraphProto) -> NodeProto {
    let n = with(node("If", &[cond], &[out]), "then_branch", 5, |a| {
        a.g = Some(then)
    });
    with(n, "else_branch", 5, |a| a.g = Some(other))
}

/// The model: `y = k > 0 ? loop(k < 5 ? x * w : x + w) : -x`, where the loop adds `x` to its
/// accumulator at most `k` times, stopping after an iteration that leaves its sum at
/// [`LIMIT`] or more. `k > 0` and `k < 5` are computed on the device from the fed `k`, and the
/// loop's condition from the accumulator; the trip count is `k` itself.
pub fn model(w: &[f32]) -> Vec<u8> {
    let i64s = |name: &str, v: i64| stored(name, INT64, &[], v.to_le_bytes().to_vec());
    let body = graph(
        vec![
            node("Add", &["acc_in", "x"], &["acc_out"]),
            with(
                node("ReduceSum", &["acc_out"], &["total"]),
                "keepdims",
                2,
                |a| a.i = Some(0),
            ),
            constant(
                "limit",
                stored("limit", FLOAT, &[], LIMIT.to_le_bytes().to_vec()),
            ),
            node("Less", &["total", "limit"], &["cond_out"]),
        ],
        vec![
            info("i", INT64),
            info("cond_in", BOOL),
            info("acc_in", FLOAT),
        ],
        &["cond_out", "acc_out"],
    );
    let small = graph(vec![node("Mul", &["x", "w"], &["xw"])], vec![], &["xw"]);
    let large = graph(vec![node("Add", &["x", "w"], &["xpw"])], vec![], &["xpw"]);
    let looped = with(node("Loop", &["k", "go", "t"], &["acc"]), "body", 5, |a| {
        a.g = Some(body)
    });
    let then = graph(
        vec![
            constant("five", i64s("five", 5)),
            node("Less", &["k", "five"], &["is_small"]),
            if_node("is_small", "t", small, large),
            constant("go", stored("go", BOOL, &[], vec![1])),
            looped,
        ],
        vec![],
        &["acc"],
    );
    let other = graph(vec![node("Neg", &["x"], &["neg"])], vec![], &["neg"]);
    let main = GraphProto {
        node: vec![
            constant("zero", i64s("zero", 0)),
            node("Greater", &["k", "zero"], &["positive"]),
            if_node("positive", "y", then, other),
        ],
        initializer: vec![stored(
            "w",
            FLOAT,
            &[N as i64],
            w.iter().flat_map(|v| v.to_le_bytes()).collect(),
        )],
        input: vec![info("x", FLOAT), info("k", INT64)],
        output: vec![info("y", FLOAT)],
        ..Default::default()
    };
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![proto::OperatorSetIdProto {
            domain: None,
            version: Some(13),
        }],
        graph: Some(main),
        ..Default::default()
    }
    .encode_to_vec()
}

/// The model's output on `x`, `w` and `k`, in f64, and how many iterations the loop ran.
pub fn reference(x: &[f32], w: &[f32], k: i64) -> (Vec<f64>, i64) {
    let x: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
    if k <= 0 {
        return (x.iter().map(|v| -v).collect(), 0);
    }
    let mut acc: Vec<f64> = (x.iter().zip(w))
        .map(|(a, &b)| {
            if k < 5 {
                a * f64::from(b)
            } else {
                a + f64::from(b)
            }
        })
        .collect();
    let mut i = 0;
    let mut go = true;
    while go && i < k {
        for (a, v) in acc.iter_mut().zip(&x) {
            *a += v;
        }
        go = acc.iter().sum::<f64>() < f64::from(LIMIT);
        i += 1;
    }
    (acc, i)
}
