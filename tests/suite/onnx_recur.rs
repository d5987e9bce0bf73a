//! ONNX's recurrent operators (LSTM, GRU, RNN) and control flow (If, Loop) on every device:
//! small models built here with seeded weights, checked against references computed in f64
//! in this file, and nodes refused at load with a reason that names them.

use prost::Message;
use unicompute::onnx::proto::{
    self, AttributeProto, GraphProto, ModelProto, NodeProto, TensorProto,
};
use unicompute::onnx::{Session, SessionOptions};
use unicompute::{Device, Tensor};

use crate::common::{assert_close, name, per_backend, random, read, tensor};
use crate::flow_model::{self, N};

pub(crate) const FLOAT: i32 = 1;
const INT32: i32 = 6;
pub(crate) const INT64: i32 = 7;
pub(crate) const BOOL: i32 = 9;

pub(crate) use crate::flow_model::info;

/// A stored tensor of type code `elem` with little-endian `bytes`.
pub(crate) fn stored(name: &str, elem: i32, dims: &[usize], bytes: Vec<u8>) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        data_type: Some(elem),
        dims: dims.iter().map(|&d| d as i64).collect(),
        raw_data: Some(bytes.into()),
        ..Default::default()
    }
}

pub(crate) fn floats(name: &str, dims: &[usize], data: &[f32]) -> TensorProto {
    stored(
        name,
        FLOAT,
        dims,
        data.iter().flat_map(|v| v.to_le_bytes()).collect(),
    )
}

pub(crate) fn int64s(name: &str, dims: &[usize], data: &[i64]) -> TensorProto {
    stored(
        name,
        INT64,
        dims,
        data.iter().flat_map(|v| v.to_le_bytes()).collect(),
    )
}

pub(crate) fn node(op: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto {
        name: Some(name.into()),
        op_type: Some(op.into()),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

/// An attribute called `name` of ONNX type code `kind`, its value set by `set`.
pub(crate) fn attr(name: &str, kind: i32, set: impl FnOnce(&mut AttributeProto)) -> AttributeProto {
    let mut a = AttributeProto {
        name: Some(name.into()),
        r#type: Some(kind),
        ..Default::default()
    };
    set(&mut a);
    a
}

pub(crate) fn int_attr(name: &str, v: i64) -> AttributeProto {
    attr(name, 2, |a| a.i = Some(v))
}

pub(crate) fn graph_attr(name: &str, g: GraphProto) -> AttributeProto {
    attr(name, 5, |a| a.g = Some(g))
}

/// A `Constant` node giving `t`.
fn constant(out: &str, t: TensorProto) -> NodeProto {
    let mut n = node("Constant", out, &[], &[out]);
    n.attribute.push(attr("value", 4, |a| a.t = Some(t)));
    n
}

/// A model of `g` importing `opset`, as bytes.
pub(crate) fn model(g: GraphProto, opset: i64) -> Vec<u8> {
    ModelProto {
        ir_version: Some(8),
        opset_import: vec![proto::OperatorSetIdProto {
            domain: None,
            version: Some(opset),
        }],
        graph: Some(g),
        ..Default::default()
    }
    .encode_to_vec()
}

/// Which recurrence a case runs.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Cell {
    Lstm,
    Gru,
    Rnn,
}

impl Cell {
    fn op(self) -> &'static str {
        match self {
            Cell::Lstm => "LSTM",
            Cell::Gru => "GRU",
            Cell::Rnn => "RNN",
        }
    }

    fn gates(self) -> usize {
        match self {
            Cell::Lstm => 4,
            Cell::Gru => 3,
            Cell::Rnn => 1,
        }
    }
}

/// One recurrent node to run.
#[derive(Clone, Debug)]
struct Case {
    cell: Cell,
    direction: &'static str,
    seq: usize,
    batch: usize,
    input: usize,
    hidden: usize,
    bias: bool,
    initial: bool,
    lens: Option<Vec<i32>>,
    peepholes: bool,
    layout: i64,
    clip: Option<f32>,
    linear_before_reset: bool,
    input_forget: bool,
    /// The activations attribute, with its alphas and betas.
    acts: Option<(Vec<&'static str>, Vec<f32>, Vec<f32>)>,
    seed: u64,
}

impl Case {
    fn new(cell: Cell, direction: &'static str, seq: usize, batch: usize, hidden: usize) -> Case {
        Case {
            cell,
            direction,
            seq,
            batch,
            input: 5,
            hidden,
            bias: true,
            initial: false,
            lens: None,
            peepholes: false,
            layout: 0,
            clip: None,
            linear_before_reset: false,
            input_forget: false,
            acts: None,
            seed: 7,
        }
    }

    fn dirs(&self) -> usize {
        if self.direction == "bidirectional" {
            2
        } else {
            1
        }
    }
}

/// The seeded data of a case, in layout 0.
struct Data {
    x: Vec<f32>,
    w: Vec<f32>,
    r: Vec<f32>,
    b: Vec<f32>,
    p: Vec<f32>,
    h0: Vec<f32>,
    c0: Vec<f32>,
}

fn data(c: &Case) -> Data {
    let (d, g, h) = (c.dirs(), c.cell.gates(), c.hidden);
    let state = d * c.batch * h;
    Data {
        x: random(c.seed, c.seq * c.batch * c.input, -1.0, 1.0),
        w: random(c.seed + 1, d * g * h * c.input, -0.6, 0.6),
        r: random(c.seed + 2, d * g * h * h, -0.6, 0.6),
        b: random(c.seed + 3, d * 2 * g * h, -0.4, 0.4),
        p: random(c.seed + 4, d * 3 * h, -0.5, 0.5),
        h0: random(c.seed + 5, state, -0.8, 0.8),
        c0: random(c.seed + 6, state, -0.8, 0.8),
    }
}

/// `v` of layout-0 shape `[a, b, ...rest]` with its first two axes swapped.
fn swap01<T: Copy>(v: &[T], a: usize, b: usize) -> Vec<T> {
    let rest = v.len() / (a * b);
    let mut out = Vec::with_capacity(v.len());
    for j in 0..b {
        for i in 0..a {
            out.extend_from_slice(&v[(i * b + j) * rest..(i * b + j + 1) * rest]);
        }
    }
    out
}

/// The case's model: the weights stored, X, the initial states and the lengths as inputs.
fn recurrent_model(c: &Case, d: &Data) -> Vec<u8> {
    let (dirs, g, h) = (c.dirs(), c.cell.gates(), c.hidden);
    let mut n = node(c.cell.op(), "rec", &["X", "W", "R"], &["Y", "Y_h"]);
    let mut slot = |i: usize, name: &str| {
        n.input.resize(i.max(n.input.len()), String::new());
        n.input.insert(i, name.into());
        n.input.truncate(i + 1);
    };
    let mut inits = vec![
        floats("W", &[dirs, g * h, c.input], &d.w),
        floats("R", &[dirs, g * h, h], &d.r),
    ];
    let mut inputs = vec![info("X", FLOAT)];
    if c.bias {
        slot(3, "B");
        inits.push(floats("B", &[dirs, 2 * g * h], &d.b));
    }
    if c.lens.is_some() {
        slot(4, "lens");
        inputs.push(info("lens", INT32));
    }
    if c.initial {
        slot(5, "h0");
        inputs.push(info("h0", FLOAT));
        if c.cell == Cell::Lstm {
            slot(6, "c0");
            inputs.push(info("c0", FLOAT));
        }
    }
    if c.peepholes {
        slot(7, "P");
        inits.push(floats("P", &[dirs, 3 * h], &d.p));
    }
    recurrent_attrs(c, &mut n);
    let mut outputs = vec![info("Y", FLOAT), info("Y_h", FLOAT)];
    if c.cell == Cell::Lstm {
        n.output.push("Y_c".into());
        outputs.push(info("Y_c", FLOAT));
    }
    let g = GraphProto {
        node: vec![n],
        initializer: inits,
        input: inputs,
        output: outputs,
        ..Default::default()
    };
    model(g, 14)
}

fn recurrent_attrs(c: &Case, n: &mut NodeProto) {
    let a = &mut n.attribute;
    a.push(attr("direction", 3, |a| a.s = Some(c.direction.into())));
    a.push(int_attr("hidden_size", c.hidden as i64));
    a.push(int_attr("layout", c.layout));
    if let Some(clip) = c.clip {
        a.push(attr("clip", 1, |a| a.f = Some(clip)));
    }
    if c.linear_before_reset {
        a.push(int_attr("linear_before_reset", 1));
    }
    if c.input_forget {
        a.push(int_attr("input_forget", 1));
    }
    if let Some((names, alphas, betas)) = &c.acts {
        let names = names.iter().map(|s| s.to_string().into()).collect();
        a.push(attr("activations", 8, |a| a.strings = names));
        a.push(attr("activation_alpha", 6, |a| a.floats = alphas.clone()));
        a.push(attr("activation_beta", 6, |a| a.floats = betas.clone()));
    }
}

/// An activation function in f64, with the alpha and beta it took.
#[derive(Clone, Copy)]
struct Act(&'static str, f64, f64);

fn act(a: Act, x: f64) -> f64 {
    let Act(name, alpha, beta) = a;
    match name {
        "Sigmoid" => 1.0 / (1.0 + (-x).exp()),
        "Tanh" => x.tanh(),
        "Relu" => x.max(0.0),
        "Affine" => alpha * x + beta,
        "LeakyRelu" => {
            if x >= 0.0 {
                x
            } else {
                alpha * x
            }
        }
        "ThresholdedRelu" => {
            if x > alpha {
                x
            } else {
                0.0
            }
        }
        "ScaledTanh" => alpha * (beta * x).tanh(),
        "HardSigmoid" => (alpha * x + beta).clamp(0.0, 1.0),
        "Elu" => {
            if x >= 0.0 {
                x
            } else {
                alpha * (x.exp() - 1.0)
            }
        }
        "Softsign" => x / (1.0 + x.abs()),
        "Softplus" => x.exp().ln_1p(),
        other => panic!("no reference for {other}"),
    }
}

/// The case's activations per direction, alphas and betas taken in order by the functions
/// that have them, with ONNX's defaults after.
fn acts(c: &Case) -> Vec<Act> {
    let defaults: &[&'static str] = match c.cell {
        Cell::Lstm => &["Sigmoid", "Tanh", "Tanh"],
        Cell::Gru => &["Sigmoid", "Tanh"],
        Cell::Rnn => &["Tanh"],
    };
    let Some((names, alphas, betas)) = &c.acts else {
        return defaults
            .repeat(c.dirs())
            .iter()
            .map(|&n| Act(n, 0.0, 0.0))
            .collect();
    };
    let (mut al, mut be) = (alphas.iter(), betas.iter());
    let next = |it: &mut std::slice::Iter<f32>, d: f64| it.next().map_or(d, |&v| v.into());
    names
        .iter()
        .map(|&n| match n {
            "Affine" | "ScaledTanh" => Act(n, next(&mut al, 0.0), next(&mut be, 0.0)),
            "HardSigmoid" => Act(n, next(&mut al, 0.2), next(&mut be, 0.5)),
            "LeakyRelu" => Act(n, next(&mut al, 0.01), 0.0),
            "ThresholdedRelu" | "Elu" => Act(n, next(&mut al, 1.0), 0.0),
            _ => Act(n, 0.0, 0.0),
        })
        .collect()
}

/// The expected Y, Y_h and (LSTM) Y_c in layout 0, in f64: each batch entry stepped on its
/// own through its length.
fn reference(c: &Case, d: &Data) -> [Vec<f64>; 3] {
    let (dirs, bt, hd) = (c.dirs(), c.batch, c.hidden);
    let mut y = vec![0.0; c.seq * dirs * bt * hd];
    let (mut yh, mut yc) = (vec![0.0; dirs * bt * hd], vec![0.0; dirs * bt * hd]);
    let acts = acts(c);
    let funcs = acts.len() / dirs;
    for dir in 0..dirs {
        let reverse = c.direction == "reverse" || dir == 1;
        for b in 0..bt {
            let len = c.lens.as_ref().map_or(c.seq, |l| l[b] as usize);
            let at = (dir * bt + b) * hd;
            let pick =
                |v: &[f32]| -> Vec<f64> { v[at..at + hd].iter().map(|&x| f64::from(x)).collect() };
            let (mut h, mut cs) = if c.initial {
                (pick(&d.h0), pick(&d.c0))
            } else {
                (vec![0.0; hd], vec![0.0; hd])
            };
            for step in 0..len {
                let t = if reverse { len - 1 - step } else { step };
                let xt = &d.x[(t * bt + b) * c.input..][..c.input];
                let f = &acts[dir * funcs..(dir + 1) * funcs];
                (h, cs) = cell_step(c, d, dir, f, xt, &h, &cs);
                let out = ((t * dirs + dir) * bt + b) * hd;
                y[out..out + hd].copy_from_slice(&h);
            }
            yh[at..at + hd].copy_from_slice(&h);
            yc[at..at + hd].copy_from_slice(&cs);
        }
    }
    [y, yh, yc]
}

/// One step of one batch entry: the new `h` and `c`.
fn cell_step(
    c: &Case,
    d: &Data,
    dir: usize,
    f: &[Act],
    xt: &[f32],
    h: &[f64],
    cs: &[f64],
) -> (Vec<f64>, Vec<f64>) {
    let (g, hd) = (c.cell.gates(), c.hidden);
    let clip = |v: f64| c.clip.map_or(v, |t| v.clamp(-f64::from(t), f64::from(t)));
    let a = |k: usize, v: f64| act(f[k], clip(v));
    let x: Vec<f64> = xt.iter().map(|&v| v.into()).collect();
    let bias = |at: usize| if c.bias { f64::from(d.b[at]) } else { 0.0 };
    let row = |m: &[f32], at: usize, v: &[f64]| -> f64 {
        let m = &m[at..at + v.len()];
        m.iter().zip(v).map(|(&w, v)| f64::from(w) * v).sum()
    };
    // Row `j` of gate `k` of W·x, and of R·v, each with its bias.
    let wx = |k: usize, j: usize| {
        bias(dir * 2 * g * hd + k * hd + j) + row(&d.w, ((dir * g + k) * hd + j) * c.input, &x)
    };
    let rh = |k: usize, j: usize, v: &[f64]| {
        bias(dir * 2 * g * hd + (g + k) * hd + j) + row(&d.r, ((dir * g + k) * hd + j) * hd, v)
    };
    let p = |k: usize, row: usize| -> f64 {
        if c.peepholes {
            d.p[dir * 3 * hd + k * hd + row].into()
        } else {
            0.0
        }
    };
    match c.cell {
        Cell::Rnn => (
            (0..hd).map(|j| a(0, wx(0, j) + rh(0, j, h))).collect(),
            cs.to_vec(),
        ),
        Cell::Gru => {
            let z: Vec<f64> = (0..hd).map(|j| a(0, wx(0, j) + rh(0, j, h))).collect();
            let r: Vec<f64> = (0..hd).map(|j| a(0, wx(1, j) + rh(1, j, h))).collect();
            let rh_prod: Vec<f64> = r.iter().zip(h).map(|(r, h)| r * h).collect();
            let new = (0..hd).map(|j| {
                let inner = if c.linear_before_reset {
                    r[j] * rh(2, j, h)
                } else {
                    rh(2, j, &rh_prod)
                };
                let hh = a(1, wx(2, j) + inner);
                (1.0 - z[j]) * hh + z[j] * h[j]
            });
            (new.collect(), cs.to_vec())
        }
        Cell::Lstm => {
            let (mut hn, mut cn) = (vec![0.0; hd], vec![0.0; hd]);
            for j in 0..hd {
                let i = a(0, wx(0, j) + rh(0, j, h) + p(0, j) * cs[j]);
                let fg = if c.input_forget {
                    1.0 - i
                } else {
                    a(0, wx(2, j) + rh(2, j, h) + p(2, j) * cs[j])
                };
                cn[j] = fg * cs[j] + i * a(1, wx(3, j) + rh(3, j, h));
                let o = a(0, wx(1, j) + rh(1, j, h) + p(1, j) * cn[j]);
                // clip bounds the gates' inputs only (onnxruntime's reading).
                hn[j] = o * act(f[2], cn[j]);
            }
            (hn, cn)
        }
    }
}

/// `v` (layout 0, first axes `[a, b, ...]`) in layout `layout`.
fn laid_out(v: &[f64], layout: i64, a: usize, b: usize) -> Vec<f64> {
    if layout == 0 {
        v.to_vec()
    } else {
        swap01(v, a, b)
    }
}

/// Runs `c` on `dev` and checks every output against the reference.
fn check_case(dev: &Device, c: &Case) {
    let d = data(c);
    let session = Session::from_bytes(dev, recurrent_model(c, &d), SessionOptions::default())
        .unwrap_or_else(|e| panic!("{c:?}: {e}"));
    let (dirs, bt, hd) = (c.dirs(), c.batch, c.hidden);
    let lay = |v: &[f32], a, b| {
        if c.layout == 0 {
            v.to_vec()
        } else {
            swap01(v, a, b)
        }
    };
    let x = tensor(dev, &lay(&d.x, c.seq, bt), &seq_shape(c, c.input));
    let state_shape = if c.layout == 0 {
        [dirs, bt, hd]
    } else {
        [bt, dirs, hd]
    };
    let h0 = tensor(dev, &lay(&d.h0, dirs, bt), &state_shape);
    let c0 = tensor(dev, &lay(&d.c0, dirs, bt), &state_shape);
    let lens = c
        .lens
        .as_ref()
        .map(|l| Tensor::from_slice(dev, l, &[l.len()]).unwrap());
    let mut feeds = vec![("X", &x)];
    if let Some(l) = &lens {
        feeds.push(("lens", l));
    }
    if c.initial {
        feeds.push(("h0", &h0));
        if c.cell == Cell::Lstm {
            feeds.push(("c0", &c0));
        }
    }
    let out = session.run(&feeds).unwrap_or_else(|e| panic!("{c:?}: {e}"));
    let [y, yh, yc] = reference(c, &d);
    let mut y_shape = vec![c.seq, dirs, bt, hd];
    if c.layout == 1 {
        y_shape = vec![bt, c.seq, dirs, hd];
    }
    let want_y = if c.layout == 0 {
        y
    } else {
        batch_first_y(&y, c)
    };
    let what = format!("{c:?} on {}", name(dev));
    assert_eq!(out[0].1.shape(), y_shape.as_slice(), "{what}: Y");
    assert_close(&read(&out[0].1), &want_y, 1e-4, 2e-5, &format!("{what}: Y"));
    assert_eq!(out[1].1.shape(), &state_shape, "{what}: Y_h");
    let yh = laid_out(&yh, c.layout, dirs, bt);
    assert_close(&read(&out[1].1), &yh, 1e-4, 2e-5, &format!("{what}: Y_h"));
    if c.cell == Cell::Lstm {
        let yc = laid_out(&yc, c.layout, dirs, bt);
        assert_close(&read(&out[2].1), &yc, 1e-4, 2e-5, &format!("{what}: Y_c"));
    }
}

/// X's shape in the case's layout, `k` features per step.
fn seq_shape(c: &Case, k: usize) -> Vec<usize> {
    if c.layout == 0 {
        vec![c.seq, c.batch, k]
    } else {
        vec![c.batch, c.seq, k]
    }
}

/// Y `[seq, dirs, batch, hidden]` as layout 1 lays it out: `[batch, seq, dirs, hidden]`.
fn batch_first_y(y: &[f64], c: &Case) -> Vec<f64> {
    let (s, d, b, h) = (c.seq, c.dirs(), c.batch, c.hidden);
    let mut out = Vec::with_capacity(y.len());
    for bi in 0..b {
        for si in 0..s {
            for di in 0..d {
                let at = ((si * d + di) * b + bi) * h;
                out.extend_from_slice(&y[at..at + h]);
            }
        }
    }
    out
}

/// LSTM: every direction, odd sizes (hidden 1 and primes, batch 1 and 3, seq 1 and 7), with
/// and without initial states, lengths and peepholes, both layouts, clip, coupled gates and
/// activations with parameters.
fn lstm_matches_the_reference(dev: &Device) {
    let base = Case::new(Cell::Lstm, "forward", 7, 3, 7);
    let cases = [
        base.clone(),
        Case {
            direction: "bidirectional",
            input: 2,
            hidden: 3,
            initial: true,
            lens: Some(vec![7, 3, 1]),
            peepholes: true,
            clip: Some(0.9),
            seed: 11,
            ..base.clone()
        },
        Case {
            direction: "reverse",
            seq: 1,
            batch: 1,
            input: 1,
            hidden: 1,
            layout: 1,
            input_forget: true,
            bias: false,
            seed: 13,
            ..base.clone()
        },
        Case {
            direction: "reverse",
            hidden: 5,
            initial: true,
            lens: Some(vec![2, 7, 5]),
            layout: 1,
            peepholes: true,
            seed: 17,
            ..base.clone()
        },
        Case {
            direction: "bidirectional",
            hidden: 2,
            acts: Some((
                vec![
                    "HardSigmoid",
                    "LeakyRelu",
                    "Softsign",
                    "Sigmoid",
                    "ScaledTanh",
                    "Elu",
                ],
                vec![0.3, 0.1, 0.8, 0.7],
                vec![0.4, 1.3],
            )),
            seed: 19,
            ..base
        },
    ];
    for c in &cases {
        check_case(dev, c);
    }
}
per_backend!(lstm_matches_the_reference);

/// GRU: both `linear_before_reset` forms, every direction, lengths, initial state, layouts.
fn gru_matches_the_reference(dev: &Device) {
    let base = Case::new(Cell::Gru, "forward", 7, 3, 5);
    let cases = [
        Case {
            initial: true,
            ..base.clone()
        },
        Case {
            direction: "bidirectional",
            hidden: 1,
            linear_before_reset: true,
            lens: Some(vec![2, 7, 5]),
            layout: 1,
            seed: 23,
            ..base.clone()
        },
        Case {
            direction: "reverse",
            seq: 1,
            batch: 1,
            bias: false,
            linear_before_reset: true,
            seed: 29,
            ..base.clone()
        },
        Case {
            direction: "bidirectional",
            hidden: 3,
            initial: true,
            clip: Some(0.5),
            lens: Some(vec![0, 4, 7]),
            seed: 31,
            ..base
        },
    ];
    for c in &cases {
        check_case(dev, c);
    }
}
per_backend!(gru_matches_the_reference);

/// RNN: every direction, lengths, initial state, and activations with parameters.
fn rnn_matches_the_reference(dev: &Device) {
    let base = Case::new(Cell::Rnn, "bidirectional", 7, 3, 11);
    let cases = [
        Case {
            initial: true,
            lens: Some(vec![7, 1, 4]),
            ..base.clone()
        },
        Case {
            direction: "forward",
            seq: 1,
            batch: 1,
            hidden: 1,
            layout: 1,
            seed: 37,
            ..base.clone()
        },
        Case {
            hidden: 2,
            acts: Some((
                vec!["ThresholdedRelu", "Affine"],
                vec![0.1, 0.5],
                vec![-0.2],
            )),
            seed: 41,
            ..base.clone()
        },
        Case {
            direction: "reverse",
            hidden: 3,
            acts: Some((vec!["Softplus"], vec![], vec![])),
            seed: 43,
            ..base
        },
    ];
    for c in &cases {
        check_case(dev, c);
    }
}
per_backend!(rnn_matches_the_reference);

/// What a recurrent node cannot run is refused at load, naming the node and the reason.
#[test]
fn recurrent_nodes_refuse_what_they_cannot_run_at_load() {
    let dev = &crate::common::devices()[0];
    let c = Case::new(Cell::Lstm, "forward", 1, 1, 1);
    let d = data(&c);
    let acts = |names: Vec<&'static str>| Case {
        acts: Some((names, vec![], vec![])),
        ..c.clone()
    };
    let cases = [
        (
            "activation 'Swish' is unknown",
            acts(vec!["Sigmoid", "Swish", "Tanh"]),
        ),
        (
            "activation Affine needs its alpha",
            acts(vec!["Affine", "Tanh", "Tanh"]),
        ),
        (
            "direction 'sideways'",
            Case {
                direction: "sideways",
                ..c.clone()
            },
        ),
        (
            "layout 2; expected 0 or 1",
            Case {
                layout: 2,
                ..c.clone()
            },
        ),
    ];
    for (want, c) in cases {
        let e = Session::from_bytes(dev, recurrent_model(&c, &d), SessionOptions::default())
            .err()
            .unwrap_or_else(|| panic!("{c:?} loaded"))
            .to_string();
        assert!(e.contains("node 'rec' (LSTM): ") && e.contains(want), "{e}");
    }
}
/// A one-element bool constant.
fn bool_const(out: &str, v: bool) -> NodeProto {
    constant(out, stored(out, BOOL, &[], vec![u8::from(v)]))
}

/// `If` over a constant condition: the then branch scales `x` by the outer `w` and, in a
/// nested `If`, adds the outer `r = Relu(x)` computed by the main graph; the else branch
/// negates `x`.
fn if_model(cond: bool) -> Vec<u8> {
    let mut inner = node("If", "inner", &["t"], &["sum"]);
    inner.attribute = vec![
        graph_attr(
            "then_branch",
            branch(vec![node("Add", "add", &["scaled", "r"], &["s"])], "s"),
        ),
        graph_attr(
            "else_branch",
            branch(vec![node("Neg", "neg2", &["r"], &["n"])], "n"),
        ),
    ];
    let then = branch(
        vec![
            node("Mul", "mul", &["x", "w"], &["scaled"]),
            bool_const("t", true),
            inner,
        ],
        "sum",
    );
    let other = branch(vec![node("Neg", "neg", &["x"], &["neg_x"])], "neg_x");
    let mut choose = node("If", "choose", &["cond"], &["y"]);
    choose.attribute = vec![
        graph_attr("then_branch", then),
        graph_attr("else_branch", other),
    ];
    let g = GraphProto {
        node: vec![
            node("Relu", "relu", &["x"], &["r"]),
            bool_const("cond", cond),
            choose,
        ],
        initializer: vec![floats("w", &[5], &[0.5, -2.0, 3.0, 1.5, -0.25])],
        input: vec![info("x", FLOAT)],
        output: vec![info("y", FLOAT)],
        ..Default::default()
    };
    model(g, 13)
}

/// A subgraph of `nodes` giving `out`.
fn branch(nodes: Vec<NodeProto>, out: &str) -> GraphProto {
    GraphProto {
        node: nodes,
        output: vec![info(out, 0)],
        ..Default::default()
    }
}

fn if_takes_the_branch_its_condition_picks(dev: &Device) {
    let x = random(3, 10, -2.0, 2.0);
    let w = [0.5, -2.0, 3.0, 1.5, -0.25];
    for cond in [true, false] {
        let s = Session::from_bytes(dev, if_model(cond), SessionOptions::default()).unwrap();
        let xt = tensor(dev, &x, &[2, 5]);
        let y = read(&s.run(&[("x", &xt)]).unwrap()[0].1);
        let want: Vec<f64> = (x.iter().enumerate())
            .map(|(i, &v)| {
                let v = f64::from(v);
                if cond {
                    v * w[i % 5] + v.max(0.0)
                } else {
                    -v
                }
            })
            .collect();
        assert_close(
            &y,
            &want,
            1e-6,
            1e-7,
            &format!("If {cond} on {}", name(dev)),
        );
    }
}
per_backend!(if_takes_the_branch_its_condition_picks);

/// `Loop` with trip count `trips`: `acc += x * step` (`x` from outside, `step` the iteration
/// number as a float), scanning `acc` after each iteration; with `stop_after`, the body's
/// condition turns false after that iteration.
fn loop_model(trips: i64, stop_after: Option<i64>) -> Vec<u8> {
    let mut body_nodes = vec![
        node("Cast", "as_float", &["i"], &["i_f"]),
        node("Mul", "scale", &["x", "i_f"], &["xs"]),
        node("Add", "acc", &["acc_in", "xs"], &["acc_out"]),
        node("Identity", "scan", &["acc_out"], &["scan_out"]),
    ];
    body_nodes[0].attribute.push(int_attr("to", 1));
    match stop_after {
        Some(k) => {
            body_nodes.push(constant("k", int64s("k", &[], &[k])));
            body_nodes.push(node("Sub", "left", &["k", "i"], &["left"]));
            let mut cast = node("Cast", "to_bool", &["left"], &["cond_out"]);
            cast.attribute.push(int_attr("to", 9));
            body_nodes.push(cast);
        }
        None => body_nodes.push(node("Identity", "same", &["cond_in"], &["cond_out"])),
    }
    let body = GraphProto {
        node: body_nodes,
        input: vec![
            info("i", INT64),
            info("cond_in", BOOL),
            info("acc_in", FLOAT),
        ],
        output: vec![
            info("cond_out", BOOL),
            info("acc_out", FLOAT),
            info("scan_out", FLOAT),
        ],
        ..Default::default()
    };
    let mut lp = node("Loop", "loop", &["m", "go", "acc0"], &["acc", "scans"]);
    lp.attribute.push(graph_attr("body", body));
    let g = GraphProto {
        node: vec![
            constant("m", int64s("m", &[], &[trips])),
            bool_const("go", true),
            lp,
        ],
        input: vec![info("x", FLOAT), info("acc0", FLOAT)],
        output: vec![info("acc", FLOAT), info("scans", FLOAT)],
        ..Default::default()
    };
    model(g, 13)
}

fn loop_carries_values_and_stacks_scans(dev: &Device) {
    let x = random(5, 6, -1.0, 1.0);
    let acc0 = random(6, 6, -1.0, 1.0);
    // (trip count, iteration after which the condition is false, iterations run)
    for (trips, stop, runs) in [(5, None, 5), (10, Some(3), 4), (2, Some(6), 2)] {
        let s =
            Session::from_bytes(dev, loop_model(trips, stop), SessionOptions::default()).unwrap();
        let (xt, at) = (tensor(dev, &x, &[2, 3]), tensor(dev, &acc0, &[2, 3]));
        let out = s.run(&[("x", &xt), ("acc0", &at)]).unwrap();
        let mut acc: Vec<f64> = acc0.iter().map(|&v| v.into()).collect();
        let mut scans = Vec::new();
        for i in 0..runs {
            for (a, &v) in acc.iter_mut().zip(&x) {
                *a += f64::from(v) * i as f64;
            }
            scans.extend(acc.clone());
        }
        let what = format!("Loop {trips} {stop:?} on {}", name(dev));
        assert_eq!(out[1].1.shape(), &[runs, 2, 3], "{what}");
        assert_close(&read(&out[0].1), &acc, 1e-6, 1e-6, &what);
        assert_close(&read(&out[1].1), &scans, 1e-6, 1e-6, &what);
    }
}
per_backend!(loop_carries_values_and_stacks_scans);

/// Control flow steered by the device ([`crate::flow_model`], Silero's pattern): `If`
/// conditions computed on the device, one inside a branch, a `Loop` whose trip count is a fed
/// int64 and whose condition is computed from its accumulator. Each is read back where the
/// run awaits it, through `run_async` and the blocking `run`, on one session whose runs keep
/// their feeds' shapes but take other branches (so no run may replay another's).
fn control_flow_awaits_conditions_computed_on_the_device(dev: &Device) {
    let (x, w) = (random(47, N, 0.1, 1.0), random(53, N, -1.0, 1.0));
    let s = Session::from_bytes(dev, flow_model::model(&w), SessionOptions::default()).unwrap();
    let xt = tensor(dev, &x, &[N]);
    // k = 3 stops at its trip count, k = 7 at its condition: (k, iterations run)
    let mut ran = Vec::new();
    for k in [3, 7, -2, 3, 0, 7] {
        let kt = Tensor::from_slice(dev, &[k], &[]).unwrap();
        let feeds = [("x", &xt), ("k", &kt)];
        let (want, iterations) = flow_model::reference(&x, &w, k);
        let what = format!("k = {k} on {}", name(dev));
        let awaited = pollster::block_on(s.run_async(&feeds)).unwrap();
        assert_close(&read(&awaited[0].1), &want, 1e-5, 1e-6, &what);
        let blocking = s.run(&feeds).unwrap();
        assert_close(&read(&blocking[0].1), &want, 1e-5, 1e-6, &what);
        ran.push((k, iterations));
    }
    let stopped = ran[1].1;
    assert!(
        ran[0].1 == 3 && (1..7).contains(&stopped),
        "the loops' paths: {ran:?}"
    );
}
per_backend!(control_flow_awaits_conditions_computed_on_the_device);

/// A node inside a branch that the runner lacks is refused at load, named by its path.
#[test]
fn unsupported_nodes_inside_subgraphs_are_refused_at_load_by_path() {
    let dev = &crate::common::devices()[0];
    let mut m = ModelProto::decode(if_model(true).as_slice()).unwrap();
    let g = m.graph.as_mut().unwrap();
    let then = g.node[2].attribute[0].g.as_mut().unwrap();
    then.node[0].op_type = Some("Frobnicate".into());
    let inner = then.node[2].attribute[1].g.as_mut().unwrap();
    inner.node[0].op_type = Some("Wobble".into());
    let e = Session::from_bytes(dev, m.encode_to_vec(), SessionOptions::default())
        .err()
        .unwrap()
        .to_string();
    for want in [
        "2 node(s) this runner cannot run",
        "node 'choose' (If) › then_branch › node 'mul' (Frobnicate) of domain ai.onnx",
        "node 'choose' (If) › then_branch › node 'inner' (If) › else_branch › \
         node 'neg2' (Wobble)",
    ] {
        assert!(e.contains(want), "{e} should say {want}");
    }
    let lacks = unicompute::onnx::unsupported(
        &unicompute::onnx::Model::from_bytes(m.encode_to_vec()).unwrap(),
    );
    assert_eq!(
        lacks,
        [("Frobnicate".to_string(), 1), ("Wobble".to_string(), 1)]
    );
}
