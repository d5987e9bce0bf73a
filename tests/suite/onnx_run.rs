//! ONNX's own backend node tests run through a `Session` on every device: each test whose
//! operators the runner supports must give the test's expected outputs (ONNX's tolerances:
//! 1e-3 relative, 1e-7 absolute). Tests refused at load are counted by reason and printed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::{devices, name, per_backend, random, read, tensor};
use crate::onnx_load::{data_files, graph, light_models, model_tests, node_tests, relu_model};
use unicompute::onnx::{
    proto, Constant, Dim, HostData, HostTensor, IoInfo, Model, Passes, Sequence, Session,
    SessionOptions, Val,
};
use unicompute::{BackendKind, Device, Tensor};

/// What one node test gave on one device.
enum Outcome {
    Passed,
    /// Refused at load, with the reason.
    Refused(String),
    Failed(String),
}

/// The graph passes these tests load models with: every one, unless `UNICOMPUTE_PASSES`
/// says `none` or names passes to turn off (`fold,fuse`), so that the same tests check the
/// graphs as the files have them.
pub(crate) fn passes() -> Passes {
    match std::env::var("UNICOMPUTE_PASSES").as_deref() {
        Err(_) | Ok("") | Ok("all") => Passes::all(),
        Ok("none") => Passes::none(),
        Ok(names) => (names.split(',')).fold(Passes::all(), |p, n| p.without(n.trim())),
    }
}

/// Runs the node test in `dir` on `d`: float inputs fed on the device, as users feed them
/// (integer and boolean ones as [`Val::from_constant`] makes them). On devices that capture
/// work the test runs three times, the third a replay (docs/src/onnx.md), and the first and
/// third runs are checked.
fn run_test(d: &Device, dir: &Path) -> Outcome {
    let options = SessionOptions {
        passes: passes(),
        ..SessionOptions::default()
    };
    let session = match Session::from_path(d, dir.join("model.onnx"), options) {
        Ok(s) => s,
        Err(e) => return Outcome::Refused(e.to_string()),
    };
    let inputs = session.inputs();
    let feeds: Result<Vec<(&str, Val)>, _> = (inputs.iter().zip(data_files(dir, "input_")))
        .map(|(info, file)| stored(d, info, &file).map(|v| (info.name.as_str(), v)))
        .collect();
    let feeds = match feeds {
        Ok(f) => f,
        Err(e) => return Outcome::Failed(format!("feeds: {e}")),
    };
    let runs = if d.backend() == BackendKind::Cpu {
        1
    } else {
        3
    };
    for run in 0..runs {
        let outputs = match session.run_values(feeds.clone()) {
            Ok(o) => o,
            Err(e) => return Outcome::Failed(format!("run {run}: {e}")),
        };
        if run == 1 {
            continue;
        }
        if let Err(why) = check_outputs(&session, &outputs, dir) {
            return Outcome::Failed(format!("run {run}: {why}"));
        }
    }
    Outcome::Passed
}

/// A run's outputs against the test's expected ones.
fn check_outputs(session: &Session, outputs: &[(String, Val)], dir: &Path) -> Result<(), String> {
    let expected = data_files(dir, "output_");
    if outputs.len() != expected.len() || expected.is_empty() {
        let n = expected.len();
        return Err(format!("{} outputs for {n} expected", outputs.len()));
    }
    for (((out, val), info), file) in outputs.iter().zip(session.outputs()).zip(&expected) {
        check_output(val, &info, file).map_err(|why| format!("{out}: {why}"))?;
    }
    Ok(())
}

/// A float tensor on the device where a device holds its type; other values as they are.
fn on_device(d: &Device, v: Val) -> Val {
    match v {
        Val::Host(h) if matches!(h.data, HostData::F32(_)) => match h.upload(d) {
            Ok(t) => Val::Device(t),
            Err(_) => Val::Host(h),
        },
        v => v,
    }
}

/// The value the test data file `file` holds for `info` on `d`: a tensor (a float one on the
/// device), or a sequence of tensors (a `SequenceProto`) where the model declares one.
fn stored(d: &Device, info: &IoInfo, file: &Path) -> unicompute::Result<Val> {
    let bytes = std::fs::read(file).unwrap();
    if !info.sequence {
        return Ok(on_device(
            d,
            Val::from_constant(&Constant::decode(bytes)?, d)?,
        ));
    }
    let tensors = Constant::decode_sequence(bytes)?;
    let elem = (info.elem.or(tensors.first().map(|c| c.elem))).ok_or_else(|| {
        unicompute::Error::Invalid(format!("no element type for the sequence '{}'", info.name))
    })?;
    let items = tensors.iter().map(|c| Val::from_constant(c, d));
    Ok(Val::Seq(Sequence::new(
        elem,
        items.collect::<Result<_, _>>()?,
    )?))
}

/// An output against the tensor or sequence of tensors stored in `file`.
fn check_output(got: &Val, info: &IoInfo, file: &Path) -> Result<(), String> {
    let bytes = std::fs::read(file).unwrap();
    let host = |v: &Val| v.host().map_err(|e| format!("reading back: {e}"));
    match (got, info.sequence) {
        (Val::Seq(s), true) => {
            let want = Constant::decode_sequence(bytes).map_err(|e| e.to_string())?;
            if s.len() != want.len() {
                return Err(format!("{} tensors, expected {}", s.len(), want.len()));
            }
            for (k, (g, w)) in s.items().iter().zip(&want).enumerate() {
                compare(&host(g)?, w).map_err(|why| format!("tensor {k}: {why}"))?;
            }
            Ok(())
        }
        (v, false) if v.as_seq().is_none() => {
            let want = Constant::decode(bytes).map_err(|e| e.to_string())?;
            compare(&host(v)?, &want)
        }
        (_, sequence) => {
            let what = |seq: bool| if seq { "a sequence" } else { "a tensor" };
            let got = what(got.as_seq().is_some());
            Err(format!("gave {got}; the model declares {}", what(sequence)))
        }
    }
}

/// `got` against the expected tensor, within ONNX's default tolerances.
fn compare(got: &HostTensor, want: &unicompute::onnx::Constant) -> Result<(), String> {
    if got.shape != want.dims {
        return Err(format!("shape {:?}, expected {:?}", got.shape, want.dims));
    }
    let want = Val::from_constant(want, &devices()[0])
        .and_then(|v| v.host())
        .map_err(|e| e.to_string())?;
    for (i, (g, w)) in got.to_f64().iter().zip(want.to_f64()).enumerate() {
        let close = g == &w || (g - w).abs() <= 1e-7 + 1e-3 * w.abs() || (g.is_nan() && w.is_nan());
        if !close {
            return Err(format!("element {i} is {g}, expected {w}"));
        }
    }
    Ok(())
}

/// The operator a refusal names, or the start of its message.
fn reason(text: &str) -> String {
    match text.find(" cannot run: ") {
        Some(_) => text
            .split(" (")
            .nth(1)
            .and_then(|s| s.split(')').next())
            .map_or(text.to_string(), |op| format!("unsupported op {op}")),
        None => text.chars().take(80).collect(),
    }
}

/// What a set of tests gave on every device.
struct Results {
    /// The passes and the refusals by reason, per device.
    report: String,
    /// The reasons of the refusals at load, over all devices.
    refused: Vec<String>,
    /// What failed, where and why.
    failures: Vec<String>,
}

/// Runs each test folder on every device.
fn run_tests(tests: &[PathBuf]) -> Results {
    let (mut report, mut failures, mut refusals) = (String::new(), Vec::new(), Vec::new());
    for d in devices() {
        let (mut passed, mut refused) = (0, BTreeMap::<String, usize>::new());
        for dir in tests {
            let test = dir.file_name().unwrap().to_string_lossy().into_owned();
            match run_test(d, dir) {
                Outcome::Passed => passed += 1,
                Outcome::Refused(why) => *refused.entry(reason(&why)).or_default() += 1,
                Outcome::Failed(why) => failures.push(format!("{test} on {}: {why}", name(d))),
            }
        }
        let refused_total: usize = refused.values().sum();
        refusals.extend(refused.keys().cloned());
        report += &format!(
            "{}: {passed} passed, {refused_total} refused at load\n",
            name(d)
        );
        for (why, n) in refused {
            report += &format!("  {n:4} {why}\n");
        }
    }
    Results {
        report,
        refused: refusals,
        failures,
    }
}

#[test]
fn node_tests_of_supported_operators_pass() {
    let Results {
        report, failures, ..
    } = run_tests(&node_tests());
    println!("{report}");
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Why the onnx wheel's model tests may be refused: string tensors and training (`Gradient`):
/// what the runner does not have.
const MODEL_TEST_GAPS: [&str; 2] = ["string tensor", "Gradient"];

/// The onnx wheel's `pytorch-converted`, `pytorch-operator` and `simple` models give their
/// stored outputs; those refused at load are refused for a known gap.
#[test]
fn model_tests_of_the_onnx_wheel_pass() {
    let tests = model_tests();
    let r = run_tests(&tests);
    println!("{} model tests\n{}", tests.len(), r.report);
    let failures = r.failures;
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let unknown = (r.refused.iter()).find(|why| !MODEL_TEST_GAPS.iter().any(|g| why.contains(g)));
    assert!(unknown.is_none(), "refused: {unknown:?}\n{}", r.report);
}

/// ONNX's input for a light model (its runner's `generate_dummy_data`): `arange(n) / n` in
/// the input's shape, open extents 1.
fn dummy_input(d: &Device, info: &IoInfo) -> Tensor {
    let shape: Vec<usize> = (info.shape.as_deref().unwrap_or_default().iter())
        .map(|dim| if let Dim::Fixed(n) = dim { *n } else { 1 })
        .collect();
    let n: usize = shape.iter().product();
    let data: Vec<f32> = (0..n).map(|i| (i as f64 / n as f64) as f32).collect();
    tensor(d, &data, &shape)
}

/// The input of the Softmax that gives a model's first output, if one gives it.
fn softmax_logits(model: &Model) -> Option<String> {
    let g = &model.graph;
    let out = *g.outputs.first()?;
    let node =
        (g.nodes.iter()).find(|n| n.op == "Softmax" && n.outputs.first() == Some(&Some(out)))?;
    Some(g.values[(*node.inputs.first()?)?].name.clone())
}

/// What a light model gave on a device: its output, and the logits of its final Softmax.
struct Ran {
    output: HostTensor,
    logits: Option<HostTensor>,
}

/// Runs a light model on `d`, asking also for the logits of its final Softmax.
fn run_light(d: &Device, model: &Path) -> Result<Ran, Outcome> {
    let parsed = Model::from_path(model).map_err(|e| Outcome::Refused(e.to_string()))?;
    let logits = softmax_logits(&parsed);
    let output = parsed.graph.values[parsed.graph.outputs[0]].name.clone();
    let options = SessionOptions {
        outputs: Some(
            [Some(output), logits.clone()]
                .into_iter()
                .flatten()
                .collect(),
        ),
        passes: passes(),
        ..SessionOptions::default()
    };
    let session = Session::load(d, parsed, options).map_err(|e| Outcome::Refused(e.to_string()))?;
    let inputs: Vec<(String, Tensor)> = (session.inputs().iter())
        .map(|i| (i.name.clone(), dummy_input(d, i)))
        .collect();
    let feeds: Vec<(&str, &Tensor)> = inputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let outputs = (session.run(&feeds)).map_err(|e| Outcome::Failed(format!("run: {e}")))?;
    let mut host = outputs.into_iter().map(|(_, t)| Val::Device(t).host());
    let mut next = || {
        host.next()
            .transpose()
            .map_err(|e| Outcome::Failed(e.to_string()))
    };
    Ok(Ran {
        output: next()?.ok_or_else(|| Outcome::Failed("no output".into()))?,
        logits: next()?,
    })
}

/// Runs a light model on `d` against its stored output. Where the output is the softmax of
/// logits so large that one unit in their last place moves it past the tolerance (the light
/// SqueezeNet's are near 6.8e9, whose ulp is 512: the stored output is uniform only where
/// every class rounds alike), the logits are held to `cpu_logits`, the cpu's, instead.
/// Returns the outcome and the logits.
fn run_light_model(
    d: &Device,
    model: &Path,
    cpu_logits: Option<&HostTensor>,
) -> (Outcome, Option<HostTensor>) {
    let ran = match run_light(d, model) {
        Ok(ran) => ran,
        Err(outcome) => return (outcome, None),
    };
    let stem = model.file_stem().unwrap().to_string_lossy().into_owned();
    let stored = std::fs::read(model.with_file_name(format!("{stem}_output_0.pb"))).unwrap();
    let want = Constant::decode(stored).unwrap();
    let outcome = match (compare(&ran.output, &want), &ran.logits, cpu_logits) {
        (Ok(()), ..) => Outcome::Passed,
        (Err(why), Some(got), Some(cpu)) if ill_conditioned(cpu) => match close_to(got, cpu) {
            Ok(()) => Outcome::Passed,
            Err(logits) => Outcome::Failed(format!("{why}; its logits: {logits}")),
        },
        (Err(why), ..) => Outcome::Failed(why),
    };
    (outcome, ran.logits)
}

/// Whether one ulp of the largest logit changes a softmax by more than [`compare`] allows.
fn ill_conditioned(logits: &HostTensor) -> bool {
    let largest = logits.to_f64().iter().fold(0.0f64, |m, v| m.max(v.abs()));
    largest * f64::from(f32::EPSILON) > 1e-3
}

/// `got` within 1e-5 of the largest of `want` (f32 sums of thousands of products).
fn close_to(got: &HostTensor, want: &HostTensor) -> Result<(), String> {
    let (got, want) = (got.to_f64(), want.to_f64());
    let largest = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if got.len() != want.len() {
        return Err(format!("{} logits, expected {}", got.len(), want.len()));
    }
    match (got.iter().zip(&want)).position(|(g, w)| (g - w).abs() > 1e-5 * largest) {
        Some(i) => Err(format!("logit {i} is {}, the cpu's {}", got[i], want[i])),
        None => Ok(()),
    }
}

/// The light model zoo (ResNet-50, VGG-19, DenseNet-121, ...: real architectures whose weights
/// are constants) gives the outputs stored beside each model, on every device (AlexNet's,
/// VGG-19's and ZFNet-512's fully connected weights pass lavapipe's storage binding limit:
/// their matmuls run in pieces). Models refused at load are printed with the reason.
#[test]
fn light_models_give_their_stored_outputs() {
    let (mut report, mut failures) = (String::new(), Vec::new());
    let mut cpu_logits = BTreeMap::new();
    for d in devices() {
        let mut passed = Vec::new();
        for model in light_models() {
            let stem = model
                .file_stem()
                .unwrap()
                .to_string_lossy()
                .replace("light_", "");
            let (outcome, logits) = run_light_model(d, &model, cpu_logits.get(&stem));
            if d.info().backend == BackendKind::Cpu {
                cpu_logits.extend(logits.map(|l| (stem.clone(), l)));
            }
            match outcome {
                Outcome::Passed => passed.push(stem),
                Outcome::Refused(why) => report += &format!("  {stem} not run: {}\n", reason(&why)),
                Outcome::Failed(why) => failures.push(format!("{stem} on {}: {why}", name(d))),
            }
        }
        report += &format!("{}: passed {}\n", name(d), passed.join(", "));
    }
    println!("{report}");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ANCHOR: session (included by docs/src/onnx.md)
/// A model run through a session on every device: `y = relu(x)`.
fn run_relu(d: &Device, x: &Tensor) -> unicompute::Result<Tensor> {
    let session = Session::from_bytes(d, relu_model(|_| {}), SessionOptions::default())?;
    assert_eq!(session.inputs()[0].name, "x");
    let mut outputs = session.run(&[("x", x)])?;
    let (name, y) = outputs.remove(0);
    assert_eq!(name, "y");
    Ok(y)
}
// ANCHOR_END: session

fn a_session_runs_a_model_on_every_device(d: &Device) {
    let x = random(41, 3 * 257, -2.0, 2.0);
    let y = read(&run_relu(d, &tensor(d, &x, &[3, 257])).unwrap());
    let want: Vec<f32> = x.iter().map(|v| v.max(0.0)).collect();
    assert_eq!(y, want, "on {}", name(d));
}
per_backend!(a_session_runs_a_model_on_every_device);

/// `relu_model` with `x` and `y` of shape `[batch, 3]`.
pub(crate) fn relu_of_batches() -> Vec<u8> {
    relu_model(|m| {
        let g = graph(m);
        for info in g.input.iter_mut().chain(&mut g.output) {
            let Some(proto::type_proto::Value::TensorType(t)) =
                info.r#type.as_mut().and_then(|t| t.value.as_mut())
            else {
                unreachable!("relu_model's values are tensors")
            };
            let dim = |v| proto::tensor_shape_proto::Dimension {
                value: Some(v),
                ..Default::default()
            };
            use proto::tensor_shape_proto::dimension::Value;
            t.shape = Some(proto::TensorShapeProto {
                dim: vec![
                    dim(Value::DimParam("batch".into())),
                    dim(Value::DimValue(3)),
                ],
            });
        }
    })
}

/// `free_dims` fixes a named dimension at load: the inputs and outputs report it, feeds of
/// that extent run and others are refused; a name the model lacks is ignored.
fn free_dimension_overrides_fix_named_extents(d: &Device) {
    let batch = vec![Dim::Symbol("batch".into()), Dim::Fixed(3)];
    let open = Session::from_bytes(d, relu_of_batches(), SessionOptions::default()).unwrap();
    assert_eq!(open.inputs()[0].shape, Some(batch));
    let options = SessionOptions {
        free_dims: vec![("batch".into(), 2), ("sequence".into(), 7)],
        ..SessionOptions::default()
    };
    let fixed = Session::from_bytes(d, relu_of_batches(), options).unwrap();
    let two = Some(vec![Dim::Fixed(2), Dim::Fixed(3)]);
    assert_eq!(
        (
            fixed.inputs()[0].shape.clone(),
            fixed.outputs()[0].shape.clone()
        ),
        (two.clone(), two)
    );
    let x = random(43, 6, -2.0, 2.0);
    let y = read(&fixed.run(&[("x", &tensor(d, &x, &[2, 3]))]).unwrap()[0].1);
    let want: Vec<f32> = x.iter().map(|v| v.max(0.0)).collect();
    assert_eq!(y, want, "on {}", name(d));
    let four = tensor(d, &random(44, 12, -2.0, 2.0), &[4, 3]);
    assert!(open.run(&[("x", &four)]).is_ok(), "on {}", name(d));
    let e = fixed.run(&[("x", &four)]).err().unwrap().to_string();
    assert!(
        e.contains("input 'x' has shape [4, 3]: expected [2, 3]"),
        "{e}"
    );
}
per_backend!(free_dimension_overrides_fix_named_extents);

#[test]
fn sessions_refuse_what_they_cannot_run_at_load_and_bad_feeds_at_run() {
    let d = &devices()[0];
    let load = |bytes| Session::from_bytes(d, bytes, SessionOptions::default());
    let e = load(relu_model(|m| {
        graph(m).node[0].op_type = Some("Frobnicate".into())
    }));
    let text = e.err().unwrap().to_string();
    assert!(
        text.contains("node '' (Frobnicate) of domain ai.onnx (opset 13)"),
        "{text}"
    );
    let e = load(relu_model(|m| {
        graph(m).node[0].domain = Some("com.example".into())
    }));
    assert!(e
        .err()
        .unwrap()
        .to_string()
        .contains("of domain com.example"));
    let session = load(relu_model(|_| {})).unwrap();
    let x = tensor(d, &[1.0, -1.0], &[2]);
    let text = session.run(&[("nope", &x)]).unwrap_err().to_string();
    assert!(text.contains("no input 'nope'; it has: x"), "{text}");
    let text = session.run(&[]).unwrap_err().to_string();
    assert!(text.contains("input 'x' is not given"), "{text}");
    let whole = Tensor::from_slice(d, &[1i32, -1], &[2]).unwrap();
    let e = session.run(&[("x", &whole)]).unwrap_err();
    assert_eq!(e.code(), "DTYPE", "{e}");
    assert!(e.to_string().contains("expected f32 for input 'x'"), "{e}");
    // The session still runs after the refused feeds.
    assert_eq!(read(&session.run(&[("x", &x)]).unwrap()[0].1), [1.0, 0.0]);
}

/// A shape fed as a device tensor reaches `Reshape` on the host: the session reads it back
/// and runs the node again, without the operator ever waiting for the device.
fn a_shape_fed_on_the_device_is_read_back(d: &Device) {
    let bytes = relu_model(|m| {
        let g = graph(m);
        g.node[0].op_type = Some("Reshape".into());
        g.node[0].input.push("shape".into());
        let mut shape = g.input[0].clone();
        shape.name = Some("shape".into());
        if let Some(proto::type_proto::Value::TensorType(t)) =
            shape.r#type.as_mut().and_then(|t| t.value.as_mut())
        {
            t.elem_type = Some(7); // int64
        }
        g.input.push(shape);
    });
    let session = Session::from_bytes(d, bytes, SessionOptions::default()).unwrap();
    let x = random(43, 2 * 3 * 5, -1.0, 1.0);
    let shape = Tensor::from_slice(d, &[5i64, -1], &[2]).unwrap();
    let out = session
        .run(&[("x", &tensor(d, &x, &[2, 3, 5])), ("shape", &shape)])
        .unwrap();
    assert_eq!(out[0].1.shape(), &[5, 6], "on {}", name(d));
    assert_eq!(read(&out[0].1), x, "on {}", name(d));
}
per_backend!(a_shape_fed_on_the_device_is_read_back);

/// An output an operator does not compute (Dropout's mask) is refused at load only when
/// something uses it.
#[test]
fn an_output_not_computed_is_refused_only_when_used() {
    let d = &devices()[0];
    let dropout = |m: &mut unicompute::onnx::proto::ModelProto| {
        let node = &mut graph(m).node[0];
        node.op_type = Some("Dropout".into());
        node.output.push("mask".into());
    };
    let session = Session::from_bytes(d, relu_model(dropout), SessionOptions::default()).unwrap();
    let x = tensor(d, &[1.0, -1.0], &[2]);
    assert_eq!(read(&session.run(&[("x", &x)]).unwrap()[0].1), [1.0, -1.0]);
    let mask_wanted = SessionOptions {
        outputs: Some(vec!["y".into(), "mask".into()]),
        ..SessionOptions::default()
    };
    let e = Session::from_bytes(d, relu_model(dropout), mask_wanted)
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("(Dropout): output 1 is not computed yet"),
        "{e}"
    );
}

/// docs/src/onnx.md lists the supported operators (of both domains) as `onnx::supported()`
/// names them.
#[test]
fn the_book_lists_the_supported_operators() {
    let page = include_str!("../../docs/src/onnx.md");
    // Every list between the markers (the default domain's, then com.microsoft's).
    let lists: Vec<&str> = page
        .split("<!-- onnx-ops:begin -->")
        .skip(1)
        .filter_map(|rest| rest.split("<!-- onnx-ops:end -->").next())
        .collect();
    assert!(
        !lists.is_empty(),
        "docs/src/onnx.md has the onnx-ops markers"
    );
    let mut listed: Vec<&str> = lists
        .iter()
        .flat_map(|list| list.split(|c: char| !c.is_alphanumeric()))
        .filter(|w| !w.is_empty())
        .collect();
    listed.sort_unstable();
    listed.dedup();
    assert_eq!(
        listed,
        unicompute::onnx::supported(),
        "update the list in docs/src/onnx.md"
    );
}
