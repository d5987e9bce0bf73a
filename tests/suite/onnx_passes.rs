//! The graph passes (`onnx::passes`) on every device: small models built here with seeded
//! weights and inputs of odd sizes, each checked for the nodes left after the passes and for
//! outputs equal to those of the same model run with the passes off. Folding computes on the
//! session's device with the session's own operators, so its outputs are equal to the bit;
//! the other passes reorder float arithmetic (a norm folded into weights, a bias added in a
//! kernel's epilogue, GELU and the norms as one kernel), within 1e-4 relative and 1e-5
//! absolute of the unrewritten graph's outputs, whose values are of order 1.

use prost::Message;
use unicompute::onnx::proto::{self, AttributeProto, GraphProto, ModelProto, NodeProto};
use unicompute::onnx::proto::{TensorProto, ValueInfoProto};
use unicompute::onnx::{Attr, Origin, Passes, Session, SessionOptions};
use unicompute::{Device, Tensor};

use crate::common::{devices, name, open_devices, random, read, tensor};
use crate::onnx_recur::{attr, floats, int64s, int_attr, stored, FLOAT};

/// A model to check: its nodes, weights, inputs (name and shape) and outputs.
pub(crate) struct Case {
    pub nodes: Vec<NodeProto>,
    pub weights: Vec<TensorProto>,
    pub inputs: Vec<(&'static str, Vec<usize>)>,
    pub outputs: Vec<&'static str>,
}

/// A node of `op` (of `com.microsoft` where the name says `ms.`) with `attrs`.
pub(crate) fn node(
    op: &str,
    inputs: &[&str],
    outputs: &[&str],
    attrs: Vec<AttributeProto>,
) -> NodeProto {
    let (domain, op) = match op.strip_prefix("ms.") {
        Some(op) => (Some("com.microsoft".to_string()), op),
        None => (None, op),
    };
    NodeProto {
        name: Some(format!("{op}_{}", outputs[0])),
        op_type: Some(op.into()),
        domain,
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        attribute: attrs,
        ..Default::default()
    }
}

/// A FLOAT attribute.
fn float_attr(name: &str, v: f32) -> AttributeProto {
    attr(name, 1, |a| a.f = Some(v))
}

/// An INTS attribute.
pub(crate) fn ints_attr(name: &str, v: &[i64]) -> AttributeProto {
    attr(name, 7, |a| a.ints = v.to_vec())
}

/// A float value declared with `dims` (none: no shape).
fn declared(name: &str, dims: Option<&[usize]>) -> ValueInfoProto {
    let shape = dims.map(|d| proto::TensorShapeProto {
        dim: (d.iter())
            .map(|&n| proto::tensor_shape_proto::Dimension {
                value: Some(proto::tensor_shape_proto::dimension::Value::DimValue(
                    n as i64,
                )),
                ..Default::default()
            })
            .collect(),
    });
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(proto::TypeProto {
            value: Some(proto::type_proto::Value::TensorType(
                proto::type_proto::Tensor {
                    elem_type: Some(FLOAT),
                    shape,
                },
            )),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Seeded weights in `[lo, hi)` of `dims`.
pub(crate) fn weights(name: &str, dims: &[usize], seed: u64, [lo, hi]: [f32; 2]) -> TensorProto {
    floats(name, dims, &random(seed, dims.iter().product(), lo, hi))
}

/// A one-element float constant.
fn scalar(name: &str, v: f32) -> TensorProto {
    floats(name, &[], &[v])
}

impl Case {
    /// The model as bytes: opset 17, and `com.microsoft`.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        let g = GraphProto {
            node: self.nodes.clone(),
            initializer: self.weights.clone(),
            input: (self.inputs.iter())
                .map(|(n, d)| declared(n, Some(d)))
                .collect(),
            output: self.outputs.iter().map(|o| declared(o, None)).collect(),
            ..Default::default()
        };
        let import = |domain: Option<&str>, v| proto::OperatorSetIdProto {
            domain: domain.map(Into::into),
            version: Some(v),
        };
        ModelProto {
            ir_version: Some(8),
            opset_import: vec![import(None, 17), import(Some("com.microsoft"), 1)],
            graph: Some(g),
            ..Default::default()
        }
        .encode_to_vec()
    }

    /// The model loaded on `d` with `passes`.
    fn session(&self, d: &Device, passes: Passes) -> Session {
        let options = SessionOptions {
            passes,
            ..SessionOptions::default()
        };
        Session::from_bytes(d, self.bytes(), options).unwrap_or_else(|e| panic!("{}: {e}", name(d)))
    }

    /// The outputs of `s` on the seeded inputs.
    pub(crate) fn run(&self, d: &Device, s: &Session) -> Vec<Vec<f32>> {
        let feeds: Vec<(&str, Tensor)> = (self.inputs.iter().enumerate())
            .map(|(i, (n, dims))| {
                let data = random(90 + i as u64, dims.iter().product(), -2.0, 2.0);
                (*n, tensor(d, &data, dims))
            })
            .collect();
        let named: Vec<(&str, &Tensor)> = feeds.iter().map(|(n, t)| (*n, t)).collect();
        let out = s.run(&named).unwrap_or_else(|e| panic!("{}: {e}", name(d)));
        out.iter().map(|(_, t)| read(t)).collect()
    }

    /// On every device: with `passes` the graph's operators are `ops` (in file order) and
    /// the outputs are those of the graph without passes, within `tol` (relative, absolute).
    /// Gives the sessions of the last device, passes on.
    fn check(&self, passes: Passes, ops: &[&str], tol: [f64; 2]) -> Session {
        let mut last = None;
        for d in devices() {
            let (on, off) = (
                self.session(d, passes.clone()),
                self.session(d, Passes::none()),
            );
            let left: Vec<&str> = on.graph().nodes.iter().map(|n| n.op.as_str()).collect();
            assert_eq!(left, ops, "{}: {:?}", name(d), on.optimised());
            assert_eq!(off.graph().nodes.len(), self.nodes.len());
            let (got, want) = (self.run(d, &on), self.run(d, &off));
            for (o, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g.len(), w.len(), "output {o}");
                for (i, (&g, &w)) in g.iter().zip(w).enumerate() {
                    let close =
                        (f64::from(g) - f64::from(w)).abs() <= tol[1] + tol[0] * f64::from(w).abs();
                    assert!(
                        close,
                        "{}: output {o}[{i}] is {g} with passes, {w} without",
                        name(d)
                    );
                }
            }
            last = Some(on);
        }
        last.expect("the cpu device")
    }
}

/// Within ONNX's float tolerances of the unrewritten graph.
const CLOSE: [f64; 2] = [1e-4, 1e-5];

/// How many rewrites the pass called `pass` made in `s`.
fn rewrites(s: &Session, pass: &str) -> usize {
    let r = s.optimised().iter().find(|r| r.pass == pass);
    r.unwrap_or_else(|| panic!("{pass} did not run")).rewrites
}

#[test]
fn fold_computes_constant_chains_at_load_and_leaves_large_results() {
    let case = Case {
        nodes: vec![
            node("Transpose", &["w"], &["wt"], vec![]),
            node("Mul", &["wt", "two"], &["w2"], vec![]),
            node("Neg", &["w2"], &["w3"], vec![]),
            node("MatMul", &["x", "w3"], &["y"], vec![]),
            // 4.4 MB broadcast from 8.4 kB: computed, and left a node.
            node("Add", &["col", "row"], &["big"], vec![]),
            // Its size set by its input's values: never folded.
            node("Expand", &["two", "shape"], &["twos"], vec![]),
            // A fill of a constant, bounded shape (a light model's weight): folded.
            node("ConstantOfShape", &["shape"], &["zeros"], vec![]),
        ],
        weights: vec![
            weights("w", &[7, 5], 1, [-1.0, 1.0]),
            scalar("two", 2.0),
            weights("col", &[1100, 1], 2, [-1.0, 1.0]),
            weights("row", &[1, 1000], 3, [-1.0, 1.0]),
            int64s("shape", &[2], &[2, 3]),
        ],
        inputs: vec![("x", vec![3, 5])],
        outputs: vec!["y", "big", "twos", "zeros"],
    };
    let left = ["MatMul", "Add", "Expand"];
    let s = case.check(Passes::all(), &left, [0.0, 0.0]);
    assert_eq!(rewrites(&s, "fold"), 4);
    let all = [
        "Transpose",
        "Mul",
        "Neg",
        "MatMul",
        "Add",
        "Expand",
        "ConstantOfShape",
    ];
    let off = case.check(
        Passes::all().without("fold").without("chain"),
        &all,
        [0.0, 0.0],
    );
    assert!(off.optimised().iter().all(|r| r.pass != "fold"));
}

/// A `BatchNormalization` of `x` into `y` with seeded statistics of `c` channels.
fn batch_norm(x: &str, y: &str, c: usize, seed: u64) -> (NodeProto, Vec<TensorProto>) {
    let names = ["scale", "bias", "mean", "var"].map(|s| format!("{y}_{s}"));
    let ranges = [[0.5, 1.5], [-1.0, 1.0], [-1.0, 1.0], [0.5, 2.0]];
    let stats = (names.iter().zip(ranges).enumerate())
        .map(|(i, (n, r))| weights(n, &[c], seed + i as u64, r))
        .collect();
    let inputs: Vec<&str> = names.iter().map(String::as_str).collect();
    let n = node(
        "BatchNormalization",
        &[&[x], &inputs[..]].concat(),
        &[y],
        vec![float_attr("epsilon", 1e-3)],
    );
    (n, stats)
}

#[test]
fn batchnorm_folds_into_conv_gemm_and_matmul_weights() {
    let (bn1, s1) = batch_norm("c", "y1", 5, 10);
    let (bn2, s2) = batch_norm("g", "y2", 5, 20);
    let (bn3, s3) = batch_norm("m", "y3", 5, 30);
    let gemm_attrs = vec![
        int_attr("transB", 1),
        float_attr("alpha", 0.7),
        float_attr("beta", 1.3),
    ];
    let mut case = Case {
        nodes: vec![
            node(
                "Conv",
                &["x", "w", "b"],
                &["c"],
                vec![ints_attr("pads", &[1, 1, 1, 1])],
            ),
            bn1,
            node("Gemm", &["x2", "wg", "cg"], &["g"], gemm_attrs),
            bn2,
            node("MatMul", &["x3", "wm"], &["m"], vec![]),
            bn3,
        ],
        weights: vec![
            weights("w", &[5, 3, 3, 3], 1, [-0.5, 0.5]),
            weights("b", &[5], 2, [-1.0, 1.0]),
            weights("wg", &[5, 6], 3, [-0.5, 0.5]),
            weights("cg", &[5], 4, [-1.0, 1.0]),
            weights("wm", &[6, 5], 5, [-0.5, 0.5]),
        ],
        inputs: vec![
            ("x", vec![2, 3, 9, 11]),
            ("x2", vec![4, 6]),
            ("x3", vec![4, 6]),
        ],
        outputs: vec!["y1", "y2", "y3"],
    };
    case.weights.extend([s1, s2, s3].concat());
    let s = case.check(Passes::all(), &["Conv", "Gemm", "Gemm"], CLOSE);
    assert_eq!(rewrites(&s, "batchnorm"), 3);
    // The conv's output asked for too: the norm stays.
    case.outputs.push("c");
    let kept = ["Conv", "BatchNormalization", "Gemm", "Gemm"];
    case.check(Passes::all(), &kept, CLOSE);
}

#[test]
fn fuse_makes_layers_with_bias_and_activation_one_node() {
    let case = Case {
        nodes: vec![
            node(
                "Conv",
                &["x", "w1"],
                &["c1"],
                vec![ints_attr("pads", &[1, 1, 1, 1])],
            ),
            node("Add", &["c1", "b1"], &["a1"], vec![]),
            node("Relu", &["a1"], &["y1"], vec![]),
            node("Conv", &["x", "w2", "b2"], &["c2"], vec![]),
            node("Sigmoid", &["c2"], &["s2"], vec![]),
            node("Mul", &["c2", "s2"], &["y2"], vec![]),
            node("MatMul", &["x3", "wm"], &["m"], vec![]),
            node("Add", &["m", "bm"], &["am"], vec![]),
            node("Tanh", &["am"], &["y3"], vec![]),
            node("Gemm", &["x4", "wg", "cg"], &["g"], vec![]),
            node("Relu", &["g"], &["y4"], vec![]),
            node("MatMul", &["x3", "wm5"], &["m5"], vec![]),
            node("Add", &["bm5", "m5"], &["y5"], vec![]),
            // Weights of +-2: sums past 6, which the fused relu6 must clip too.
            node("Conv", &["x", "w6", "b6"], &["c6"], vec![]),
            node("Clip", &["c6", "zero", "six"], &["y6"], vec![]),
        ],
        weights: vec![
            weights("w1", &[5, 3, 3, 3], 1, [-0.5, 0.5]),
            weights("b1", &[1, 5, 1, 1], 2, [-1.0, 1.0]),
            weights("w2", &[4, 3, 1, 1], 3, [-0.5, 0.5]),
            weights("b2", &[4], 4, [-1.0, 1.0]),
            weights("wm", &[6, 5], 5, [-0.5, 0.5]),
            weights("bm", &[5], 6, [-1.0, 1.0]),
            weights("wg", &[6, 5], 7, [-0.5, 0.5]),
            weights("cg", &[5], 8, [-1.0, 1.0]),
            weights("wm5", &[6, 7], 9, [-0.5, 0.5]),
            weights("bm5", &[7], 10, [-1.0, 1.0]),
            weights("w6", &[3, 3, 3, 3], 11, [-2.0, 2.0]),
            weights("b6", &[3], 12, [-1.0, 1.0]),
            scalar("zero", 0.0),
            scalar("six", 6.0),
        ],
        inputs: vec![
            ("x", vec![2, 3, 9, 11]),
            ("x3", vec![2, 3, 6]),
            ("x4", vec![4, 6]),
        ],
        outputs: vec!["y1", "y2", "y3", "y4", "y5", "y6"],
    };
    let fused = [
        "FusedConv",
        "FusedConv",
        "FusedGemm",
        "FusedGemm",
        "FusedGemm",
        "FusedConv",
    ];
    let s = case.check(Passes::all(), &fused, CLOSE);
    assert_eq!(rewrites(&s, "fuse"), 6);
    let acts: Vec<String> = (s.graph().nodes.iter())
        .map(|n| {
            n.attrs
                .string("activation")
                .unwrap()
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    assert_eq!(acts, ["Relu", "Silu", "Tanh", "Relu", "", "Clip"]);
}

#[test]
fn fuse_leaves_layers_whose_intermediates_are_read() {
    let case = Case {
        nodes: vec![
            node("Conv", &["x", "w"], &["c"], vec![]),
            node("Relu", &["c"], &["y"], vec![]),
            node("Sigmoid", &["c"], &["z"], vec![]),
        ],
        weights: vec![weights("w", &[4, 3, 2, 2], 1, [-0.5, 0.5])],
        inputs: vec![("x", vec![1, 3, 5, 7])],
        outputs: vec!["y", "z"],
    };
    case.check(Passes::all(), &["Conv", "Relu", "Sigmoid"], [0.0, 0.0]);
}

#[test]
fn gelu_recognises_the_erf_and_tanh_forms_in_export_orders() {
    let n = |op: &str, i: &[&str], o: &str| node(op, i, &[o], vec![]);
    let case = Case {
        nodes: vec![
            // x * (1 + erf(x / √2)) * 0.5
            n("Div", &["x", "sqrt2"], "a1"),
            n("Erf", &["a1"], "a2"),
            n("Add", &["a2", "one"], "a3"),
            n("Mul", &["x", "a3"], "a4"),
            n("Mul", &["a4", "half"], "ya"),
            // x * ((1 + erf(x · 1/√2)) * 0.5)
            n("Mul", &["x", "inv_sqrt2"], "b1"),
            n("Erf", &["b1"], "b2"),
            n("Add", &["one", "b2"], "b3"),
            n("Mul", &["b3", "half"], "b4"),
            n("Mul", &["x", "b4"], "yb"),
            // (x * 0.5) * (1 + erf(x / √2))
            n("Mul", &["x", "half"], "c0"),
            n("Div", &["x", "sqrt2"], "c1"),
            n("Erf", &["c1"], "c2"),
            n("Add", &["c2", "one"], "c3"),
            n("Mul", &["c0", "c3"], "yc"),
            // x * (1 + tanh(√(2/π) (x + 0.044715 x³))) * 0.5, the cube a Pow
            n("Pow", &["x", "three"], "d1"),
            n("Mul", &["k1", "d1"], "d2"),
            n("Add", &["x", "d2"], "d3"),
            n("Mul", &["d3", "k2"], "d4"),
            n("Tanh", &["d4"], "d5"),
            n("Add", &["d5", "one"], "d6"),
            n("Mul", &["x", "d6"], "d7"),
            n("Mul", &["d7", "half"], "yd"),
            // the same with x · x · x, the halving first
            n("Mul", &["x", "x"], "e0"),
            n("Mul", &["e0", "x"], "e1"),
            n("Mul", &["e1", "k1"], "e2"),
            n("Add", &["e2", "x"], "e3"),
            n("Mul", &["k2", "e3"], "e4"),
            n("Tanh", &["e4"], "e5"),
            n("Add", &["one", "e5"], "e6"),
            n("Mul", &["half", "x"], "eh"),
            n("Mul", &["eh", "e6"], "ye"),
            // Not a GELU: no halving.
            n("Div", &["x", "sqrt2"], "f1"),
            n("Erf", &["f1"], "f2"),
            n("Add", &["f2", "one"], "f3"),
            n("Mul", &["x", "f3"], "yf"),
        ],
        weights: vec![
            scalar("sqrt2", std::f32::consts::SQRT_2),
            scalar("inv_sqrt2", std::f32::consts::FRAC_1_SQRT_2),
            scalar("one", 1.0),
            scalar("half", 0.5),
            scalar("three", 3.0),
            scalar("k1", 0.044715),
            scalar("k2", (2.0 / std::f32::consts::PI).sqrt()),
        ],
        inputs: vec![("x", vec![3, 17])],
        outputs: vec!["ya", "yb", "yc", "yd", "ye", "yf"],
    };
    let left = [
        "Gelu", "Gelu", "Gelu", "Gelu", "Gelu", "Div", "Erf", "Add", "Mul",
    ];
    let s = case.check(Passes::all().without("chain"), &left, CLOSE);
    assert_eq!(rewrites(&s, "gelu"), 5);
    let tanh = (s.graph().nodes.iter())
        .filter(|n| {
            n.attrs
                .string("approximate")
                .unwrap()
                .is_some_and(|a| a == "tanh")
        })
        .count();
    assert_eq!(tanh, 2);
}

#[test]
fn norms_recognise_layer_and_rms_normalisation() {
    let n = |op: &str, i: &[&str], o: &str| node(op, i, &[o], vec![]);
    let mean = |i: &str, o: &str| node("ReduceMean", &[i], &[o], vec![ints_attr("axes", &[-1])]);
    let case = Case {
        nodes: vec![
            mean("x", "m1"),
            n("Sub", &["x", "m1"], "d1"),
            n("Pow", &["d1", "two"], "p1"),
            mean("p1", "v1"),
            n("Add", &["v1", "eps"], "e1"),
            n("Sqrt", &["e1"], "s1"),
            n("Div", &["d1", "s1"], "n1"),
            n("Mul", &["n1", "gamma"], "g1"),
            n("Add", &["g1", "beta"], "y1"),
            // d · d for the square, no beta
            mean("x", "m2"),
            n("Sub", &["x", "m2"], "d2"),
            n("Mul", &["d2", "d2"], "p2"),
            mean("p2", "v2"),
            n("Add", &["eps", "v2"], "e2"),
            n("Sqrt", &["e2"], "s2"),
            n("Div", &["d2", "s2"], "n2"),
            n("Mul", &["gamma", "n2"], "y2"),
            // RMS, the axis counted from the front
            n("Pow", &["x", "two"], "r1"),
            node(
                "ReduceMean",
                &["r1"],
                &["r2"],
                vec![ints_attr("axes", &[2])],
            ),
            n("Add", &["r2", "eps"], "r3"),
            n("Sqrt", &["r3"], "r4"),
            n("Div", &["x", "r4"], "r5"),
            n("Mul", &["r5", "gamma"], "y3"),
            // RMS by a reciprocal, no gamma
            n("Mul", &["x", "x"], "q1"),
            mean("q1", "q2"),
            n("Add", &["q2", "eps"], "q3"),
            n("Sqrt", &["q3"], "q4"),
            n("Reciprocal", &["q4"], "q5"),
            n("Mul", &["x", "q5"], "y4"),
        ],
        weights: vec![
            scalar("two", 2.0),
            scalar("eps", 1e-5),
            weights("gamma", &[24], 1, [0.5, 1.5]),
            weights("beta", &[24], 2, [-1.0, 1.0]),
        ],
        inputs: vec![("x", vec![2, 5, 24])],
        outputs: vec!["y1", "y2", "y3", "y4"],
    };
    let left = [
        "LayerNormalization",
        "LayerNormalization",
        "RMSNormalization",
        "RMSNormalization",
    ];
    let s = case.check(Passes::all(), &left, CLOSE);
    assert_eq!((rewrites(&s, "layernorm"), rewrites(&s, "rmsnorm")), (2, 2));
    // With layernorm off, the RMS norm of x - mean inside each is still found.
    let rms = [
        "ReduceMean",
        "Sub",
        "RMSNormalization",
        "Add",
        "ReduceMean",
        "Sub",
    ];
    let rms = [
        &rms[..],
        &["RMSNormalization", "RMSNormalization", "RMSNormalization"],
    ]
    .concat();
    case.check(Passes::all().without("layernorm"), &rms, CLOSE);
}

/// Runs `a` and `b` (equal inputs and outputs) with the passes off on every device: their
/// outputs agree within `tol`.
fn same(a: &Case, b: &Case, tol: [f64; 2]) {
    for d in devices() {
        let (sa, sb) = (a.session(d, Passes::none()), b.session(d, Passes::none()));
        let (ga, gb) = (a.run(d, &sa), b.run(d, &sb));
        for (x, y) in ga.iter().flatten().zip(gb.iter().flatten()) {
            let close =
                (f64::from(*x) - f64::from(*y)).abs() <= tol[1] + tol[0] * f64::from(*y).abs();
            assert!(close, "{}: {x} fused, {y} composed", name(d));
        }
        assert_eq!(
            ga.iter().map(Vec::len).sum::<usize>(),
            gb.iter().map(Vec::len).sum::<usize>()
        );
    }
}

#[test]
fn onnxruntime_fused_conv_equals_its_composition() {
    let conv_weights = vec![
        weights("w", &[4, 3, 3, 3], 1, [-0.5, 0.5]),
        weights("b", &[4], 2, [-1.0, 1.0]),
    ];
    let pads = || ints_attr("pads", &[1, 0, 1, 0]);
    let leaky = vec![
        pads(),
        attr("activation", 3, |a| a.s = Some("LeakyRelu".into())),
        attr("activation_params", 6, |a| a.floats = vec![0.2]),
    ];
    let conv_inputs = vec![("x", vec![2, 3, 7, 5]), ("z", vec![2, 4, 7, 3])];
    let fused_conv = Case {
        nodes: vec![node("ms.FusedConv", &["x", "w", "b", "z"], &["y"], leaky)],
        weights: conv_weights.clone(),
        inputs: conv_inputs.clone(),
        outputs: vec!["y"],
    };
    let composed_conv = Case {
        nodes: vec![
            node("Conv", &["x", "w", "b"], &["c"], vec![pads()]),
            node("Add", &["c", "z"], &["s"], vec![]),
            node("LeakyRelu", &["s"], &["y"], vec![float_attr("alpha", 0.2)]),
        ],
        weights: conv_weights,
        inputs: conv_inputs,
        outputs: vec!["y"],
    };
    same(&fused_conv, &composed_conv, CLOSE);
}

#[test]
fn onnxruntime_fused_products_equal_their_compositions() {
    let trans = vec![
        int_attr("transA", 1),
        int_attr("transB", 1),
        float_attr("alpha", 0.5),
    ];
    let mm_inputs = vec![("a", vec![2, 7, 3]), ("b", vec![5, 7])];
    let fused_mm = Case {
        nodes: vec![node("ms.FusedMatMul", &["a", "b"], &["y"], trans)],
        weights: vec![],
        inputs: mm_inputs.clone(),
        outputs: vec!["y"],
    };
    let composed_mm = Case {
        nodes: vec![
            node(
                "Transpose",
                &["a"],
                &["at"],
                vec![ints_attr("perm", &[0, 2, 1])],
            ),
            node("Transpose", &["b"], &["bt"], vec![]),
            node("MatMul", &["at", "bt"], &["p"], vec![]),
            node("Mul", &["p", "half"], &["y"], vec![]),
        ],
        weights: vec![scalar("half", 0.5)],
        inputs: mm_inputs,
        outputs: vec!["y"],
    };
    same(&fused_mm, &composed_mm, CLOSE);
    let gemm = || {
        vec![
            int_attr("transA", 1),
            float_attr("alpha", 0.8),
            float_attr("beta", 1.2),
        ]
    };
    let mut hard = gemm();
    hard.extend([
        attr("activation", 3, |a| a.s = Some("HardSigmoid".into())),
        float_attr("activation_alpha", 0.3),
        float_attr("activation_beta", 0.4),
    ]);
    let gemm_inputs = vec![("a", vec![6, 3]), ("b", vec![6, 5]), ("c", vec![5])];
    let fused_gemm = Case {
        nodes: vec![node("ms.FusedGemm", &["a", "b", "c"], &["y"], hard)],
        weights: vec![],
        inputs: gemm_inputs.clone(),
        outputs: vec!["y"],
    };
    let hs = vec![float_attr("alpha", 0.3), float_attr("beta", 0.4)];
    let composed_gemm = Case {
        nodes: vec![
            node("Gemm", &["a", "b", "c"], &["g"], gemm()),
            node("HardSigmoid", &["g"], &["y"], hs),
        ],
        weights: vec![],
        inputs: gemm_inputs,
        outputs: vec!["y"],
    };
    same(&fused_gemm, &composed_gemm, CLOSE);
}

#[test]
fn unknown_pass_names_and_activations_are_refused_at_load() {
    let d = &devices()[0];
    let case = Case {
        nodes: vec![node("Relu", &["x"], &["y"], vec![])],
        weights: vec![],
        inputs: vec![("x", vec![3])],
        outputs: vec!["y"],
    };
    let options = SessionOptions {
        passes: Passes::all().without("folding"),
        ..SessionOptions::default()
    };
    let err = Session::from_bytes(d, case.bytes(), options)
        .err()
        .expect("refused");
    assert!(err.to_string().contains("no graph pass 'folding'"), "{err}");
    let act = vec![attr("activation", 3, |a| a.s = Some("Swish".into()))];
    let bad = Case {
        nodes: vec![node("ms.FusedGemm", &["a", "b"], &["y"], act)],
        weights: vec![],
        inputs: vec![("a", vec![2, 3]), ("b", vec![3, 2])],
        outputs: vec!["y"],
    };
    let err = Session::from_bytes(d, bad.bytes(), SessionOptions::default())
        .err()
        .expect("refused");
    assert!(
        err.to_string().contains("activation 'Swish' is not one of"),
        "{err}"
    );
}

#[test]
fn chain_makes_elementwise_groups_one_node_and_keeps_values_read_outside() {
    let cast = |to: i64| vec![int_attr("to", to)];
    let case = Case {
        nodes: vec![
            node("Add", &["x", "y"], &["a"], vec![]),
            node("Mul", &["a", "half"], &["b"], vec![]),
            node("Sigmoid", &["b"], &["s"], vec![]),
            node("Cast", &["s"], &["h"], cast(10)),
            node("Cast", &["h"], &["c"], cast(1)),
            node("Sub", &["c", "z"], &["d"], vec![]),
            node("Pow", &["d", "two"], &["p"], vec![]),
            node("Relu", &["p"], &["y1"], vec![]),
            node("Softmax", &["a"], &["y3"], vec![]),
        ],
        weights: vec![scalar("half", 0.5), scalar("two", 2.0)],
        inputs: vec![("x", vec![3, 1, 7]), ("y", vec![5, 1]), ("z", vec![7])],
        outputs: vec!["y1", "s", "y3"],
    };
    // `a` is read by the Softmax and `s` is an output: each ends a group of its own.
    let s = case.check(Passes::all(), &["Add", "Chain", "Chain", "Softmax"], CLOSE);
    assert_eq!(rewrites(&s, "chain"), 2);
    let kept = Passes::all().without("chain");
    let ops: Vec<&str> = case.nodes.iter().map(|n| n.op_type()).collect();
    case.check(kept, &ops, [0.0, 0.0]);
}

/// A `Sum` of two inputs (ResNet's residual, before a `Relu`) joins a chain as an `Add`,
/// broadcasting; a `Sum` of three stays.
#[test]
fn chain_takes_a_sum_of_two_as_an_add() {
    let case = Case {
        nodes: vec![
            node("Sum", &["x", "y"], &["a"], vec![]),
            node("Relu", &["a"], &["y1"], vec![]),
            node("Sum", &["x", "y", "z"], &["y2"], vec![]),
        ],
        weights: vec![],
        inputs: vec![("x", vec![4, 1, 9]), ("y", vec![3, 9]), ("z", vec![9])],
        outputs: vec!["y1", "y2"],
    };
    let s = case.check(Passes::all(), &["Chain", "Sum"], CLOSE);
    assert_eq!(rewrites(&s, "chain"), 1);
}

#[test]
fn chain_of_integers_runs_its_steps_one_by_one() {
    let case = Case {
        nodes: vec![
            node("Add", &["a", "b"], &["s"], vec![]),
            node("Mul", &["s", "a"], &["m"], vec![]),
            node("Sub", &["m", "b"], &["y"], vec![]),
        ],
        weights: vec![],
        inputs: vec![("a", vec![3, 5]), ("b", vec![5])],
        outputs: vec!["y"],
    };
    let mut model = ModelProto::decode(case.bytes().as_slice()).unwrap();
    let graph = model.graph.as_mut().unwrap();
    for v in &mut graph.input {
        if let Some(proto::type_proto::Value::TensorType(t)) =
            v.r#type.as_mut().and_then(|t| t.value.as_mut())
        {
            t.elem_type = Some(6); // INT32
        }
    }
    let bytes = model.encode_to_vec();
    let a: Vec<i32> = (0..15).map(|i| i * 7 % 11 - 5).collect();
    let b: Vec<i32> = (0..5).map(|i| 3 - i * 2).collect();
    let want: Vec<i32> = (0..15)
        .map(|i| (a[i] + b[i % 5]) * a[i] - b[i % 5])
        .collect();
    for d in devices() {
        for passes in [Passes::all(), Passes::none()] {
            let options = SessionOptions {
                passes: passes.clone(),
                ..SessionOptions::default()
            };
            let s = Session::from_bytes(d, bytes.clone(), options).unwrap();
            let chained = s.graph().nodes.iter().all(|n| n.op == "Chain");
            assert_eq!(chained, passes == Passes::all(), "{}", name(d));
            let (ta, tb) = (
                Tensor::from_slice(d, &a, &[3, 5]).unwrap(),
                Tensor::from_slice(d, &b, &[5]).unwrap(),
            );
            let out = s.run(&[("a", &ta), ("b", &tb)]).unwrap();
            let got = out[0].1.to_vec_blocking::<i32>().unwrap();
            assert_eq!(got, want, "{}: passes {passes:?}", name(d));
        }
    }
}

/// A bool constant of `dims`.
fn bools(name: &str, dims: &[usize], data: &[bool]) -> TensorProto {
    stored(name, 9, dims, data.iter().map(|&b| u8::from(b)).collect())
}

/// Of an `n` × `n` score matrix, whether key `j` comes after query `i`, row by row.
fn above(n: usize) -> Vec<bool> {
    (0..n * n).map(|at| at % n > at / n).collect()
}

#[test]
fn attention_makes_scaled_masked_and_causal_attention_one_node() {
    let case = attention_case();
    let left = [
        &["Transpose", "Greater", "Cast", "Sub", "Mul", "Attention"][..],
        &[
            "Transpose",
            "Attention",
            "Transpose",
            "Attention",
            "Less",
            "Attention",
        ],
        &["Attention", "MatMul", "Softmax", "MatMul"],
    ]
    .concat();
    let s = case.check(Passes::all().without("chain"), &left, CLOSE);
    assert_eq!(rewrites(&s, "attention"), 5);
    let attrs: Vec<(i64, i64)> = (s.graph().nodes.iter())
        .filter(|n| n.op == "Attention")
        .map(|n| {
            let int = |a: &str| n.attrs.int(a).unwrap().copied().unwrap();
            (int("causal"), int("fill_on"))
        })
        .collect();
    assert_eq!(attrs, [(0, 0), (1, 0), (1, 1), (0, 0), (0, 0)]);
    let chained = [&left[..1], &["Greater", "Chain"], &left[5..]].concat();
    case.check(Passes::all(), &chained, CLOSE);
    // The four whose operands fit run the fused kernel, one launch each; the softmax over
    // axis 1 runs its nodes.
    for d in open_devices() {
        let options = SessionOptions {
            eager: true,
            ..SessionOptions::default()
        };
        let s = Session::from_bytes(&d, case.bytes(), options).unwrap();
        d.profiler().enable();
        case.run(&d, &s);
        let profile = d.take_profile_blocking();
        let fused = (profile.launches.iter())
            .filter(|l| l.op == "attention")
            .count();
        assert_eq!(fused, 4, "{}", name(&d));
    }
}

/// Six attention blocks ([`attention_nodes`]) with their constants and inputs.
fn attention_case() -> Case {
    let tri: Vec<f32> = (above(13).iter())
        .map(|&a| if a { f32::NEG_INFINITY } else { 0.0 })
        .collect();
    Case {
        nodes: attention_nodes(),
        weights: vec![
            scalar("sqrt5", 5f32.sqrt()),
            scalar("zero", 0.0),
            scalar("one", 1.0),
            scalar("big", -10000.0),
            scalar("eighth", 0.125),
            floats("tri", &[13, 13], &tri),
            scalar("root", 5f32.powf(-0.25)),
            bools("above", &[7, 7], &above(7)),
            scalar("ninf", f32::NEG_INFINITY),
            scalar("fill", -1e30),
        ],
        inputs: vec![
            ("qa", vec![2, 3, 7, 5]),
            ("ka", vec![2, 3, 7, 5]),
            ("va", vec![2, 3, 7, 5]),
            ("ma", vec![2, 1, 1, 7]),
            ("qb", vec![1, 3, 13, 64]),
            ("kb", vec![1, 3, 13, 64]),
            ("vb", vec![1, 3, 13, 5]),
            ("qc", vec![3, 7, 5]),
            ("kc", vec![3, 7, 5]),
            ("vc", vec![3, 7, 64]),
            ("qd", vec![2, 13, 5]),
            ("ktd", vec![2, 5, 13]),
            ("md", vec![2, 1, 13]),
            ("bias", vec![13, 13]),
            ("vd", vec![2, 13, 5]),
            ("qe", vec![3, 7, 5]),
            ("kte", vec![3, 5, 7]),
            ("ve", vec![3, 7, 5]),
            ("qf", vec![2, 3, 2]),
            ("ktf", vec![2, 2, 3]),
            ("vf", vec![2, 3, 2]),
        ],
        outputs: vec!["ya", "yb", "yc", "yd", "ye", "yf", "sf"],
    }
}

/// BERT's masked attention, a causal triangle, `scaled_dot_product_attention`'s form, a key
/// mask through `Where`, a softmax over another axis, and scores read besides.
fn attention_nodes() -> Vec<NodeProto> {
    let n = |op: &str, i: &[&str], o: &str| node(op, i, &[o], vec![]);
    let perm = |p: &[i64]| vec![ints_attr("perm", p)];
    let last = || vec![int_attr("axis", -1)];
    vec![
        // BERT: heads 3, sequence 7, head dim 5, a key mask made (1 - keep) * -10000.
        node("Transpose", &["ka"], &["kta"], perm(&[0, 1, 3, 2])),
        n("MatMul", &["qa", "kta"], "sa"),
        n("Div", &["sa", "sqrt5"], "sa1"),
        n("Greater", &["ma", "zero"], "ma1"),
        node("Cast", &["ma1"], &["ma2"], vec![int_attr("to", 1)]),
        n("Sub", &["one", "ma2"], "ma3"),
        n("Mul", &["ma3", "big"], "ma4"),
        n("Add", &["sa1", "ma4"], "sa2"),
        node("Softmax", &["sa2"], &["pa"], last()),
        n("MatMul", &["pa", "va"], "ya"),
        // Causal by an additive -inf triangle: heads 3, sequence 13, head dim 64, value 5.
        node("Transpose", &["kb"], &["ktb"], perm(&[0, 1, 3, 2])),
        n("MatMul", &["qb", "ktb"], "sb"),
        n("Mul", &["eighth", "sb"], "sb1"),
        n("Add", &["sb1", "tri"], "sb2"),
        node("Softmax", &["sb2"], &["pb"], last()),
        n("MatMul", &["pb", "vb"], "yb"),
        // scaled_dot_product_attention: rank 3, q and kt scaled, causal masked_fill.
        node("Transpose", &["kc"], &["ktc"], perm(&[0, 2, 1])),
        n("Mul", &["qc", "root"], "qc1"),
        n("Mul", &["ktc", "root"], "ktc1"),
        n("MatMul", &["qc1", "ktc1"], "sc"),
        n("Where", &["above", "ninf", "sc"], "sc1"),
        node("Softmax", &["sc1"], &["pc"], last()),
        n("MatMul", &["pc", "vc"], "yc"),
        // A key mask through Where(keep, s, fill), then an additive bias.
        n("MatMul", &["qd", "ktd"], "sd"),
        n("Less", &["md", "zero"], "md1"),
        n("Where", &["md1", "sd", "fill"], "sd1"),
        n("Add", &["sd1", "bias"], "sd2"),
        n("Softmax", &["sd2"], "pd"),
        n("MatMul", &["pd", "vd"], "yd"),
        // Softmax over axis 1, not the keys': rewritten, and run as its nodes.
        n("MatMul", &["qe", "kte"], "se"),
        node("Softmax", &["se"], &["pe"], vec![int_attr("axis", 1)]),
        n("MatMul", &["pe", "ve"], "ye"),
        // The scores read besides: left as they are.
        n("MatMul", &["qf", "ktf"], "sf"),
        n("Softmax", &["sf"], "pf"),
        n("MatMul", &["pf", "vf"], "yf"),
    ]
}

#[test]
fn transpose_merges_pairs_and_drops_those_keeping_the_order() {
    let t = |i: &str, o: &str, p: &[i64]| node("Transpose", &[i], &[o], vec![ints_attr("perm", p)]);
    let case = Case {
        nodes: vec![
            // Inverse of each other: both go, the MatMul reads x.
            t("x", "a", &[0, 2, 3, 1]),
            t("a", "b", &[0, 3, 1, 2]),
            node("MatMul", &["b", "w1"], &["y1"], vec![]),
            // Two become one: [1, 0, 3, 2].
            t("x", "c", &[1, 0, 2, 3]),
            t("c", "d", &[0, 1, 3, 2]),
            node("MatMul", &["d", "w2"], &["y2"], vec![]),
            // In order, but an output: kept.
            t("x", "e", &[0, 1, 2, 3]),
            // Read by two nodes: not merged.
            t("x", "f", &[0, 1, 3, 2]),
            t("f", "g", &[0, 1, 3, 2]),
            node("Neg", &["f"], &["h"], vec![]),
        ],
        weights: vec![],
        inputs: vec![
            ("x", vec![2, 3, 5, 7]),
            ("w1", vec![7, 4]),
            ("w2", vec![5, 3]),
        ],
        outputs: vec!["y1", "y2", "e", "g", "h"],
    };
    let left = [
        "MatMul",
        "Transpose",
        "MatMul",
        "Transpose",
        "Transpose",
        "Transpose",
        "Neg",
    ];
    let s = case.check(Passes::all(), &left, CLOSE);
    assert_eq!(rewrites(&s, "transpose"), 3);
    let merged = s.graph().nodes[1].attrs.ints("perm").unwrap().cloned();
    assert_eq!(merged, Some(vec![1, 0, 3, 2]));
}

/// A subgraph of `nodes` giving `out`.
fn body(nodes: Vec<NodeProto>, out: &str) -> GraphProto {
    GraphProto {
        node: nodes,
        output: vec![declared(out, None)],
        ..Default::default()
    }
}

/// A `Constant` node giving the one-element float `v`.
fn constant(out: &str, v: f32) -> NodeProto {
    let value = attr("value", 4, |a| a.t = Some(scalar(out, v)));
    node("Constant", &[], &[out], vec![value])
}

/// The ops of the subgraph `branch` of `s`'s node `n`, and whether it reads `v` from outside.
fn branch_ops(s: &Session, n: usize, branch: &str, v: &str) -> (Vec<String>, bool) {
    let Some(Attr::Graph(g)) = s.graph().nodes[n].attrs.get(branch) else {
        panic!("node {n} has no {branch}");
    };
    let ops = g.nodes.iter().map(|n| n.op.clone()).collect();
    let outer = g
        .find(v)
        .is_some_and(|id| g.values[id].origin == Origin::Outer);
    (ops, outer)
}

#[test]
fn fold_reaches_subgraphs_and_the_constants_they_read_from_outside() {
    // The then branch computes its matrix from the outer `w` and its own Constant, and its
    // nested If's then branch reads the outer `v` as it is; the else branch doubles `v`.
    let mut nested = node("If", &["flag"], &["z"], vec![]);
    nested.attribute = vec![
        attr("then_branch", 5, |a| {
            a.g = Some(body(
                vec![node("MatMul", &["x", "v"], &["xv"], vec![])],
                "xv",
            ))
        }),
        attr("else_branch", 5, |a| {
            a.g = Some(body(vec![node("Neg", &["x"], &["nx"], vec![])], "nx"))
        }),
    ];
    let then = body(
        vec![
            node("Transpose", &["w"], &["wt"], vec![]),
            constant("three", 3.0),
            node("Mul", &["wt", "three"], &["w3"], vec![]),
            node("MatMul", &["x", "w3"], &["y1"], vec![]),
            nested,
            node("Add", &["y1", "z"], &["y"], vec![]),
        ],
        "y",
    );
    let other = body(
        vec![
            node("Add", &["v", "v"], &["v2"], vec![]),
            node("MatMul", &["x", "v2"], &["y2"], vec![]),
        ],
        "y2",
    );
    let mut choose = node("If", &["flag"], &["out"], vec![]);
    choose.attribute = vec![
        attr("then_branch", 5, |a| a.g = Some(then)),
        attr("else_branch", 5, |a| a.g = Some(other)),
    ];
    for on in [true, false] {
        let case = Case {
            nodes: vec![choose.clone()],
            weights: vec![
                weights("w", &[7, 5], 4, [-1.0, 1.0]),
                weights("v", &[5, 7], 5, [-1.0, 1.0]),
                stored("flag", 9, &[], vec![u8::from(on)]),
            ],
            inputs: vec![("x", vec![3, 5])],
            outputs: vec!["out"],
        };
        let s = case.check(Passes::all(), &["If"], [0.0, 0.0]);
        // Transpose, the Constant and Mul; the else branch's Add.
        assert_eq!(rewrites(&s, "fold"), 4);
        let (then_ops, w_outside) = branch_ops(&s, 0, "then_branch", "w");
        assert_eq!(then_ops, ["MatMul", "If", "Add"]);
        assert!(!w_outside, "the then branch still reads w");
        assert_eq!(branch_ops(&s, 0, "else_branch", "v").0, ["MatMul"]);
        assert!(
            s.graph().find("w").is_none(),
            "w is kept, though nothing reads it"
        );
        let Some(Attr::Graph(then)) = s.graph().nodes[0].attrs.get("then_branch") else {
            panic!("no then branch");
        };
        let inner = then
            .nodes
            .iter()
            .position(|n| n.op == "If")
            .expect("the nested If");
        let Some(Attr::Graph(t)) = then.nodes[inner].attrs.get("then_branch") else {
            panic!("no nested then branch");
        };
        let id = t.find("v").expect("v in the nested branch");
        assert_eq!(
            t.values[id].origin,
            Origin::Outer,
            "v taken as the branch's own"
        );
    }
}

#[test]
fn fold_bounds_a_concat_by_the_sum_of_its_inputs() {
    // 4,099 x 4,099 elements multiplied pass the limit on inputs; their sum does not.
    let case = Case {
        nodes: vec![
            node("Concat", &["a", "b"], &["ab"], vec![int_attr("axis", 0)]),
            node("Add", &["x", "ab"], &["y"], vec![]),
        ],
        weights: vec![
            weights("a", &[4099], 6, [-1.0, 1.0]),
            weights("b", &[4099], 7, [-1.0, 1.0]),
        ],
        inputs: vec![("x", vec![8198])],
        outputs: vec!["y"],
    };
    let s = case.check(Passes::all(), &["Add"], [0.0, 0.0]);
    assert_eq!(rewrites(&s, "fold"), 1);
}
