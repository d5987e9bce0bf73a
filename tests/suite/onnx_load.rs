//! Loading ONNX files: every model of ONNX's own node tests (scripts/onnx-data.sh puts them
//! in `.onnx/node/`) parses and schedules, its inputs and outputs agreeing with the test's
//! data files; malformed files are errors that say what is wrong, never panics.

use std::path::PathBuf;

use prost::Message;
use unicompute::onnx::proto::{self, GraphProto, ModelProto, NodeProto, TensorProto};
use unicompute::onnx::{schedule, Constant, ElemType, Model, Origin};
use unicompute::Error;

/// Where scripts/onnx-data.sh puts ONNX's test data: `$UNICOMPUTE_ONNX_DIR`, else `.onnx/`
/// in the repository (the GPU bundle carries it elsewhere).
pub const ONNX_DIR_ENV: &str = "UNICOMPUTE_ONNX_DIR";

/// The entries of a folder of ONNX's test data (`node`, `light`), sorted; missing data is a
/// failure that says how to get it.
fn onnx_data(part: &str) -> Vec<PathBuf> {
    let root = std::env::var_os(ONNX_DIR_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".onnx"));
    let dir = root.join(part);
    let list = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}; run scripts/onnx-data.sh", dir.display()));
    let mut entries: Vec<PathBuf> = list.map(|e| e.unwrap().path()).collect();
    entries.sort();
    entries
}

/// Limits the node tests to those whose folder name contains this text (while working on
/// one operator: `UNICOMPUTE_NODE_TESTS=scatter`).
pub const NODE_TESTS_ENV: &str = "UNICOMPUTE_NODE_TESTS";

/// The test folders of the parts of ONNX's test data, those `$UNICOMPUTE_NODE_TESTS` names
/// where it is set.
fn test_folders(parts: &[&str]) -> Vec<PathBuf> {
    let only = std::env::var(NODE_TESTS_ENV).unwrap_or_default();
    let named = |p: &PathBuf| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().contains(&only))
    };
    (parts.iter())
        .flat_map(|part| onnx_data(part))
        .filter(|p| p.is_dir() && named(p))
        .collect()
}

/// The node tests' folders.
pub(crate) fn node_tests() -> Vec<PathBuf> {
    test_folders(&["node"])
}

/// The model tests of the onnx wheel laid out as the node tests are (`pytorch-converted`,
/// `pytorch-operator`, `simple`).
pub(crate) fn model_tests() -> Vec<PathBuf> {
    test_folders(&["pytorch-converted", "pytorch-operator", "simple"])
}

/// The light model zoo's models (`light_*.onnx`, each beside its `light_*_output_0.pb`).
pub(crate) fn light_models() -> Vec<PathBuf> {
    let onnx = |p: &PathBuf| p.extension().is_some_and(|e| e == "onnx");
    onnx_data("light").into_iter().filter(onnx).collect()
}

/// The `.pb` files of a test's first data set starting with `prefix`, in order.
pub(crate) fn data_files(test: &std::path::Path, prefix: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(test.join("test_data_set_0"))
        .map(|d| d.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.file_name().unwrap().to_string_lossy().starts_with(prefix));
    files.sort_by_key(|p| {
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        name.rsplit('_').next().unwrap().parse::<usize>().unwrap()
    });
    files
}

/// The `.pb` files of a test's first data set starting with `prefix` that hold tensors,
/// decoded.
pub(crate) fn data(test: &std::path::Path, prefix: &str) -> Vec<Constant> {
    data_files(test, prefix)
        .iter()
        .filter_map(|p| Constant::decode(std::fs::read(p).unwrap()).ok())
        .collect()
}

/// Why a node test's model may be refused at load: element types the runner leaves out, or an
/// opset before 7.
fn refused_for_a_known_reason(e: &Error) -> bool {
    let text = e.to_string();
    [
        "float8",
        "4-bit",
        "FLOAT4E2M1",
        "complex",
        "local functions",
        "sparse",
        "supported: 6",
    ]
    .iter()
    .any(|r| text.contains(r))
}

#[test]
fn every_node_test_model_loads_and_schedules() {
    let (mut loaded, mut refused) = (0, Vec::new());
    for test in node_tests() {
        let name = test.file_name().unwrap().to_string_lossy().into_owned();
        let model = match Model::from_path(test.join("model.onnx")) {
            Ok(m) => m,
            Err(e) => {
                assert_eq!(e.code(), "MODEL", "{name}: {e}");
                assert!(refused_for_a_known_reason(&e), "{name}: {e}");
                refused.push(name);
                continue;
            }
        };
        check_against_data(&name, &test, &model);
        let plan = schedule(&model.graph).unwrap_or_else(|e| panic!("{name}: {e}"));
        check_schedule(&name, &model, &plan);
        loaded += 1;
    }
    // onnx 1.22.0 holds 1,765 node tests; those refused use float8/4-bit/complex types,
    // model-local functions or opsets before 7.
    assert!(
        loaded >= 1_500,
        "only {loaded} node test models loaded; refused: {refused:?}"
    );
}

/// The model's inputs and outputs match the test's data files in count and element type.
fn check_against_data(name: &str, test: &std::path::Path, model: &Model) {
    let g = &model.graph;
    let (inputs, outputs) = (data(test, "input_"), data(test, "output_"));
    if inputs.len() == g.inputs.len() {
        for (&v, c) in g.inputs.iter().zip(&inputs) {
            assert_eq!(
                g.values[v].elem,
                Some(c.elem),
                "{name}: input {}",
                g.values[v].name
            );
        }
    }
    if outputs.len() == g.outputs.len() {
        for (&v, c) in g.outputs.iter().zip(&outputs) {
            let declared = g.values[v].elem;
            assert!(
                declared.is_none() || declared == Some(c.elem),
                "{name}: output type"
            );
        }
    }
}

/// Every scheduled node runs after the nodes it reads from, and no value is freed before its
/// last reader.
fn check_schedule(name: &str, model: &Model, plan: &unicompute::onnx::Schedule) {
    let g = &model.graph;
    let mut step_of = vec![usize::MAX; g.nodes.len()];
    for (step, &n) in plan.order.iter().enumerate() {
        step_of[n] = step;
    }
    for (step, &n) in plan.order.iter().enumerate() {
        for v in g.nodes[n].inputs.iter().flatten() {
            if let Origin::Node { node, .. } = g.values[*v].origin {
                assert!(
                    step_of[node] < step,
                    "{name}: node {n} runs before its producer"
                );
                assert!(
                    plan.last_use[*v].is_none_or(|last| last >= step),
                    "{name}: freed early"
                );
            }
        }
    }
    for &v in &g.outputs {
        if let Origin::Node { node, .. } = g.values[v].origin {
            assert!(
                step_of[node] != usize::MAX,
                "{name}: an output's node is not scheduled"
            );
        }
    }
}

/// A one-node model `y = Relu(x)` over f32 [2, 3], as bytes, changed by `edit` first.
pub(crate) fn relu_model(edit: impl FnOnce(&mut ModelProto)) -> Vec<u8> {
    let info = |name: &str| proto::ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(proto::TypeProto {
            value: Some(proto::type_proto::Value::TensorType(
                proto::type_proto::Tensor {
                    elem_type: Some(1),
                    shape: None,
                },
            )),
            ..Default::default()
        }),
        ..Default::default()
    };
    let node = NodeProto {
        input: vec!["x".into()],
        output: vec!["y".into()],
        op_type: Some("Relu".into()),
        ..Default::default()
    };
    let mut m = ModelProto {
        ir_version: Some(8),
        opset_import: vec![proto::OperatorSetIdProto {
            domain: None,
            version: Some(13),
        }],
        graph: Some(GraphProto {
            node: vec![node],
            input: vec![info("x")],
            output: vec![info("y")],
            ..Default::default()
        }),
        ..Default::default()
    };
    edit(&mut m);
    m.encode_to_vec()
}

/// The error loading `bytes` gives; it must be a MODEL error.
fn load_error(bytes: Vec<u8>) -> String {
    let e = Model::from_bytes(bytes).expect_err("a malformed model loaded");
    assert_eq!(e.code(), "MODEL", "{e}");
    e.to_string()
}

// ANCHOR: load (included by docs/src/onnx.md)
#[test]
fn a_model_built_in_memory_loads() {
    let model = Model::from_bytes(relu_model(|_| {})).unwrap();
    assert_eq!(model.opset(""), Some(13));
    assert_eq!(model.opset("ai.onnx"), Some(13));
    let g = &model.graph;
    assert_eq!((g.nodes.len(), g.inputs.len(), g.outputs.len()), (1, 1, 1));
    assert_eq!(g.values[g.inputs[0]].elem, Some(ElemType::F32));
    assert_eq!(schedule(g).unwrap().order, vec![0]);
}
// ANCHOR_END: load

#[test]
fn malformed_models_are_errors_that_say_what_is_wrong() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"not a model".to_vec(), "not an ONNX model"),
        (relu_model(|m| m.graph = None), "has no graph"),
        (
            relu_model(|m| graph(m).node[0].input[0] = "z".into()),
            "reads 'z'",
        ),
        (
            relu_model(|m| graph(m).node[0].output[0] = "x".into()),
            "defined twice",
        ),
        (
            relu_model(|m| m.opset_import[0].version = Some(5)),
            "opset 5; supported: 6 to",
        ),
        (
            relu_model(|m| graph(m).initializer.push(bad_tensor(1, &[2, 2], 12))),
            "need 16",
        ),
        (
            relu_model(|m| graph(m).initializer.push(bad_tensor(1, &[-1], 0))),
            "dims ≥ 0",
        ),
        (
            relu_model(|m| graph(m).initializer.push(bad_tensor(19, &[1], 1))),
            "float8",
        ),
        (
            relu_model(|m| graph(m).initializer.push(external_tensor())),
            "external file",
        ),
    ];
    for (bytes, expected) in cases {
        let text = load_error(bytes);
        assert!(text.contains(expected), "{text:?} should say {expected:?}");
    }
}

/// The graph of a model being edited.
pub(crate) fn graph(m: &mut ModelProto) -> &mut GraphProto {
    m.graph.as_mut().unwrap()
}

/// An initializer `w` of type code `code` and `dims` with `len` bytes of raw data.
fn bad_tensor(code: i32, dims: &[i64], len: usize) -> TensorProto {
    TensorProto {
        name: Some("w".into()),
        data_type: Some(code),
        dims: dims.to_vec(),
        raw_data: Some(vec![0u8; len].into()),
        ..Default::default()
    }
}

/// An initializer whose data is in an external file.
fn external_tensor() -> TensorProto {
    TensorProto {
        name: Some("w".into()),
        data_type: Some(1),
        dims: vec![4],
        data_location: Some(1),
        external_data: vec![proto::StringStringEntryProto {
            key: Some("location".into()),
            value: Some("weights.bin".into()),
        }],
        ..Default::default()
    }
}

#[test]
fn a_cycle_is_an_error_naming_a_node_on_it() {
    let bytes = relu_model(|m| {
        let g = m.graph.as_mut().unwrap();
        g.node[0].input = vec!["b".into()];
        g.node[0].output = vec!["a".into()];
        g.node[0].name = Some("first".into());
        g.node.push(NodeProto {
            name: Some("second".into()),
            input: vec!["a".into()],
            output: vec!["b".into()],
            op_type: Some("Neg".into()),
            ..Default::default()
        });
        g.output[0].name = Some("b".into());
    });
    let model = Model::from_bytes(bytes).unwrap();
    let e = schedule(&model.graph).unwrap_err();
    assert!(e.to_string().contains("on a cycle"), "{e}");
}

#[test]
fn every_prefix_and_seeded_corruption_of_a_file_is_an_error_or_a_model() {
    let bytes = std::fs::read(node_tests()[0].join("model.onnx")).unwrap();
    for len in 0..bytes.len() {
        let _ = Model::from_bytes(bytes[..len].to_vec());
    }
    let mut rng = fastrand::Rng::with_seed(29);
    for _ in 0..2_000 {
        let mut b = bytes.clone();
        for _ in 0..3 {
            let at = rng.usize(..b.len());
            b[at] = rng.u8(..);
        }
        if let Err(e) = Model::from_bytes(b) {
            assert_eq!(e.code(), "MODEL", "{e}");
        }
    }
}

#[test]
fn external_data_is_read_beside_the_model() {
    let dir = std::env::temp_dir().join(format!("unicompute-onnx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let values = [1.5f32, -2.0, 3.25, 0.0];
    let mut file: Vec<u8> = vec![7; 8];
    file.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    std::fs::write(dir.join("weights.bin"), &file).unwrap();
    let mut t = external_tensor();
    t.external_data.push(proto::StringStringEntryProto {
        key: Some("offset".into()),
        value: Some("8".into()),
    });
    std::fs::write(
        dir.join("m.onnx"),
        relu_model(|m| m.graph.as_mut().unwrap().initializer.push(t)),
    )
    .unwrap();
    let model = Model::from_path(dir.join("m.onnx")).unwrap();
    let w = model.graph.find("w").unwrap();
    let Origin::Constant(c) = &model.graph.values[w].origin else {
        panic!("w is not a constant")
    };
    let got: Vec<f32> = c
        .bytes
        .chunks(4)
        .map(|b| f32::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(got, values);
    std::fs::remove_dir_all(&dir).unwrap();
}
