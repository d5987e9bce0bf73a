//! The `com.microsoft` contrib operators (SkipLayerNormalization, the simplified norms,
//! EmbedLayerNormalization, the GELU variants, Attention, MultiHeadAttention and
//! GroupQueryAttention) on every device: one-node models built here with seeded inputs of odd
//! sizes, checked against references computed in f64 in this file (which agree with
//! onnxruntime 1.32 on the same cases).

use prost::Message;
use unicompute::onnx::proto::TensorProto;
use unicompute::onnx::proto::{self, AttributeProto, GraphProto, ModelProto, NodeProto};
use unicompute::onnx::{Session, SessionOptions};
use unicompute::{Device, Result, Tensor};

use crate::common::{assert_close, name, per_backend, random, read, tensor};
use crate::onnx_recur::{attr, floats, info, int64s, int_attr, node, FLOAT};

const INT32: i32 = 6;
const BATCH: usize = 2;
const SEQ: usize = 7;
const HIDDEN: usize = 12;
const HEADS: usize = 3;

/// A FLOAT attribute.
fn float_attr(name: &str, v: f32) -> AttributeProto {
    attr(name, 1, |a| a.f = Some(v))
}

/// An int32 initializer.
fn int32s(name: &str, dims: &[usize], data: &[i32]) -> TensorProto {
    TensorProto {
        name: Some(name.into()),
        data_type: Some(INT32),
        dims: dims.iter().map(|&d| d as i64).collect(),
        raw_data: Some(
            data.iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>()
                .into(),
        ),
        ..Default::default()
    }
}

/// A float graph input to feed: name, data and shape.
type Feed<'a> = (&'a str, Vec<f32>, Vec<usize>);

/// Runs `n` (of domain `com.microsoft`) on `feeds` (with int32 `inits`) and reads `outputs`.
fn run_node(
    d: &Device,
    n: NodeProto,
    feeds: &[Feed<'_>],
    inits: Vec<TensorProto>,
    outputs: &[&str],
) -> Vec<Vec<f32>> {
    let out = run_node_tensors(d, n, feeds, inits, outputs);
    out.iter().map(read).collect()
}

/// [`run_node`]'s outputs as tensors, of whatever dtype the node gives.
fn run_node_tensors(
    d: &Device,
    n: NodeProto,
    feeds: &[Feed<'_>],
    inits: Vec<TensorProto>,
    outputs: &[&str],
) -> Vec<Tensor> {
    let s = node_session(d, n, feeds, inits, outputs);
    let out = run_session(d, &s, feeds).unwrap_or_else(|e| panic!("{}: {e}", name(d)));
    outputs
        .iter()
        .map(|o| {
            let (_, t) = out.iter().find(|(n, _)| n == o).expect("output");
            t.clone()
        })
        .collect()
}

/// A session of the one-node model `n` (of domain `com.microsoft`) with graph inputs `feeds`
/// and int32 `inits`.
fn node_session(
    d: &Device,
    mut n: NodeProto,
    feeds: &[Feed<'_>],
    inits: Vec<TensorProto>,
    outputs: &[&str],
) -> Session {
    n.domain = Some("com.microsoft".into());
    let g = GraphProto {
        node: vec![n],
        initializer: inits,
        input: feeds.iter().map(|f| info(f.0, FLOAT)).collect(),
        output: outputs.iter().map(|o| info(o, FLOAT)).collect(),
        ..Default::default()
    };
    let import = |domain: Option<&str>, v| proto::OperatorSetIdProto {
        domain: domain.map(Into::into),
        version: Some(v),
    };
    let bytes = ModelProto {
        ir_version: Some(8),
        opset_import: vec![import(None, 17), import(Some("com.microsoft"), 1)],
        graph: Some(g),
        ..Default::default()
    }
    .encode_to_vec();
    Session::from_bytes(d, bytes, SessionOptions::default())
        .unwrap_or_else(|e| panic!("{}: {e}", name(d)))
}

/// Runs `s` on `feeds`, uploaded to `d`.
fn run_session(d: &Device, s: &Session, feeds: &[Feed<'_>]) -> Result<Vec<(String, Tensor)>> {
    let tensors: Vec<_> = feeds.iter().map(|f| tensor(d, &f.1, &f.2)).collect();
    let feeds: Vec<_> = feeds.iter().zip(&tensors).map(|(f, t)| (f.0, t)).collect();
    s.run(&feeds)
}

fn f64s(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| f64::from(x)).collect()
}

/// Rows of `h` normalised (layer or RMS), scaled by `gamma`, shifted by `beta`; with each
/// row's mean and `1 / std` (or `1 / rms`).
fn norm_rows(x: &[f64], gamma: &[f32], beta: Option<&[f32]>, eps: f64, rms: bool) -> [Vec<f64>; 3] {
    let h = gamma.len();
    let [mut y, mut means, mut invs] = [vec![], vec![], vec![]];
    for row in x.chunks(h) {
        let mean = if rms {
            0.0
        } else {
            row.iter().sum::<f64>() / h as f64
        };
        let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / h as f64;
        let inv = 1.0 / (var + eps).sqrt();
        for (i, v) in row.iter().enumerate() {
            let b = beta.map_or(0.0, |b| f64::from(b[i]));
            y.push((v - mean) * inv * f64::from(gamma[i]) + b);
        }
        means.push(mean);
        invs.push(inv);
    }
    [y, means, invs]
}

fn skip_layer_norm(d: &Device) {
    let n = BATCH * SEQ * HIDDEN;
    let (x, skip) = (random(1, n, -2.0, 2.0), random(2, n, -2.0, 2.0));
    let (gamma, beta, bias) = (
        random(3, HIDDEN, 0.5, 1.5),
        random(4, HIDDEN, -0.5, 0.5),
        random(5, HIDDEN, -0.5, 0.5),
    );
    let shape = vec![BATCH, SEQ, HIDDEN];
    let h = vec![HIDDEN];
    let sum: Vec<f64> = (0..n)
        .map(|i| f64::from(x[i]) + f64::from(skip[i]) + f64::from(bias[i % HIDDEN]))
        .collect();
    for rms in [false, true] {
        let (op, ins, outs): (_, &[&str], &[&str]) = if rms {
            (
                "SkipSimplifiedLayerNormalization",
                &["x", "s", "g", "bias"],
                &["y", "", "inv", "sum"],
            )
        } else {
            (
                "SkipLayerNormalization",
                &["x", "s", "g", "b", "bias"],
                &["y", "mean", "inv", "sum"],
            )
        };
        let mut nd = node(op, "sln", ins, outs);
        nd.attribute.push(float_attr("epsilon", 1e-5));
        let mut feeds = vec![
            ("x", x.clone(), shape.clone()),
            ("s", skip.clone(), shape.clone()),
            ("g", gamma.clone(), h.clone()),
            ("bias", bias.clone(), h.clone()),
        ];
        if !rms {
            feeds.push(("b", beta.clone(), h.clone()));
        }
        let wanted: Vec<&str> = outs.iter().copied().filter(|o| !o.is_empty()).collect();
        let got = run_node(d, nd, &feeds, vec![], &wanted);
        let beta_used = (!rms).then_some(&beta[..]);
        let [y, mean, inv] = norm_rows(&sum, &gamma, beta_used, 1e-5, rms);
        let what = format!("{op} on {}", name(d));
        assert_close(&got[0], &y, 1e-4, 1e-4, &what);
        let (inv_got, sum_got) = if rms {
            (&got[1], &got[2])
        } else {
            (&got[2], &got[3])
        };
        if !rms {
            assert_close(&got[1], &mean, 1e-4, 1e-4, &what);
        }
        assert_close(inv_got, &inv, 1e-4, 1e-4, &what);
        assert_close(sum_got, &sum, 1e-5, 1e-5, &what);
    }
}
per_backend!(skip_layer_norm);

/// SimplifiedLayerNormalization over the last two axes, in the default domain (as onnxruntime
/// defines it) and in `com.microsoft`.
fn simplified_layer_norm(d: &Device) {
    let n = BATCH * SEQ * HIDDEN;
    let x = random(6, n, -2.0, 2.0);
    let scale = random(7, SEQ * HIDDEN, 0.5, 1.5);
    let mut nd = node("SimplifiedLayerNormalization", "rms", &["x", "g"], &["y"]);
    nd.attribute.push(int_attr("axis", -2));
    let feeds = [
        ("x", x.clone(), vec![BATCH, SEQ, HIDDEN]),
        ("g", scale.clone(), vec![SEQ, HIDDEN]),
    ];
    let got = run_node(d, nd, &feeds, vec![], &["y"]);
    let [want, _, _] = norm_rows(&f64s(&x), &scale, None, 1e-5, true);
    assert_close(&got[0], &want, 1e-4, 1e-4, &format!("rms on {}", name(d)));
}
per_backend!(simplified_layer_norm);

fn gelu_erf(x: f64) -> f64 {
    0.5 * x * (1.0 + libm::erf(x / 2f64.sqrt()))
}

fn gelu_tanh(x: f64) -> f64 {
    let k = (2.0 / std::f64::consts::PI).sqrt();
    0.5 * x * (1.0 + (k * (x + 0.044715 * x * x * x)).tanh())
}

/// A GELU case: the operator, its inputs, its alpha, and the expected output.
type GeluCase<'a> = (&'a str, &'a [&'a str], Option<f32>, Vec<f64>);

/// FastGelu (with and without a bias), BiasGelu and QuickGelu (default and set alpha).
fn gelus(d: &Device) {
    let n = SEQ * HIDDEN;
    let (x, bias) = (random(8, n, -4.0, 4.0), random(9, HIDDEN, -1.0, 1.0));
    let shape = vec![SEQ, HIDDEN];
    let biased: Vec<f64> = (0..n)
        .map(|i| f64::from(x[i]) + f64::from(bias[i % HIDDEN]))
        .collect();
    let plain = f64s(&x);
    let feeds = [
        ("x", x.clone(), shape.clone()),
        ("b", bias.clone(), vec![HIDDEN]),
    ];
    let cases: [GeluCase<'_>; 5] = [
        (
            "FastGelu",
            &["x"],
            None,
            plain.iter().map(|&v| gelu_tanh(v)).collect(),
        ),
        (
            "FastGelu",
            &["x", "b"],
            None,
            biased.iter().map(|&v| gelu_tanh(v)).collect(),
        ),
        (
            "BiasGelu",
            &["x", "b"],
            None,
            biased.iter().map(|&v| gelu_erf(v)).collect(),
        ),
        (
            "QuickGelu",
            &["x"],
            None,
            plain
                .iter()
                .map(|&v| v / (1.0 + (-1.702 * v).exp()))
                .collect(),
        ),
        (
            "QuickGelu",
            &["x"],
            Some(0.5),
            plain
                .iter()
                .map(|&v| v / (1.0 + (-0.5 * v).exp()))
                .collect(),
        ),
    ];
    for (op, ins, alpha, want) in cases {
        let mut nd = node(op, "g", ins, &["y"]);
        nd.attribute.extend(alpha.map(|a| float_attr("alpha", a)));
        let used: Vec<_> = feeds
            .iter()
            .filter(|f| ins.contains(&f.0))
            .cloned()
            .collect();
        let got = run_node(d, nd, &used, vec![], &["y"]);
        assert_close(
            &got[0],
            &want,
            1e-4,
            1e-5,
            &format!("{op} {ins:?} on {}", name(d)),
        );
    }
}
per_backend!(gelus);

/// An EmbedLayerNormalization case: segments, a mask, position ids (`[b, s]`, `[1, s]` or
/// none) and epsilon (none: the default 1e-12).
#[derive(Clone, Copy, Debug)]
struct Embed {
    segments: bool,
    mask: bool,
    positions: Option<usize>,
    eps: Option<f32>,
}

/// Vocabulary, positions and segments of the EmbedLayerNormalization cases.
const WORDS: usize = 11;
const POSITIONS: usize = 9;
const SEGMENTS: usize = 3;

/// The seeded tables and ids the EmbedLayerNormalization cases share.
struct EmbedData {
    words: Vec<f32>,
    table: Vec<f32>,
    segs: Vec<f32>,
    gamma: Vec<f32>,
    beta: Vec<f32>,
    ids: Vec<i32>,
    seg_ids: Vec<i32>,
    mask: Vec<i32>,
}

impl EmbedData {
    /// The shared inputs, seeded; the mask has 0s and a 2 among its 1s.
    fn new() -> EmbedData {
        let n = BATCH * SEQ;
        EmbedData {
            words: random(20, WORDS * HIDDEN, -1.0, 1.0),
            table: random(21, POSITIONS * HIDDEN, -1.0, 1.0),
            segs: random(22, SEGMENTS * HIDDEN, -1.0, 1.0),
            gamma: random(23, HIDDEN, 0.5, 1.5),
            beta: random(24, HIDDEN, -0.5, 0.5),
            ids: (0..n).map(|i| ((i * 7 + 3) % WORDS) as i32).collect(),
            seg_ids: (0..n).map(|i| ((i * 5) % SEGMENTS) as i32).collect(),
            mask: (0..n).map(|i| [1, 1, 0, 2, 1][i % 5]).collect(),
        }
    }

    /// The position ids of case `e`: `[rows, seq]` of it, else 0 to seq - 1.
    fn positions(e: Embed) -> Vec<i32> {
        match e.positions {
            Some(rows) => (0..rows * SEQ)
                .map(|i| ((i * 4 + 1) % POSITIONS) as i32)
                .collect(),
            None => (0..SEQ as i32).collect(),
        }
    }

    /// Runs case `e` on `d`: its output, mask index and sum.
    fn run(&self, d: &Device, e: Embed) -> Vec<Tensor> {
        let mut inits = vec![int32s("ids", &[BATCH, SEQ], &self.ids)];
        let mut ins = vec!["ids", "", "w", "p", "", "g", "b", ""];
        let mut feeds = vec![
            ("w", self.words.clone(), vec![WORDS, HIDDEN]),
            ("p", self.table.clone(), vec![POSITIONS, HIDDEN]),
            ("g", self.gamma.clone(), vec![HIDDEN]),
            ("b", self.beta.clone(), vec![HIDDEN]),
        ];
        if e.segments {
            inits.push(int32s("seg", &[BATCH, SEQ], &self.seg_ids));
            feeds.push(("segs", self.segs.clone(), vec![SEGMENTS, HIDDEN]));
            (ins[1], ins[4]) = ("seg", "segs");
        }
        if e.mask {
            inits.push(int32s("m", &[BATCH, SEQ], &self.mask));
            ins[7] = "m";
        }
        if let Some(rows) = e.positions {
            inits.push(int32s("pos", &[rows, SEQ], &Self::positions(e)));
            ins.push("pos");
        }
        let mut nd = node("EmbedLayerNormalization", "eln", &ins, &["y", "mi", "sum"]);
        nd.attribute.extend(e.eps.map(|v| float_attr("epsilon", v)));
        run_node_tensors(d, nd, &feeds, inits, &["y", "mi", "sum"])
    }

    /// Case `e` in f64: the normalised sum, the mask index and the sum.
    fn reference(&self, e: Embed) -> (Vec<f64>, Vec<i32>, Vec<f64>) {
        let pos = Self::positions(e);
        let per_token = e.positions == Some(BATCH);
        let sum: Vec<f64> = (0..BATCH * SEQ * HIDDEN)
            .map(|at| {
                let (t, h) = (at / HIDDEN, at % HIDDEN);
                let p = pos[if per_token { t } else { t % SEQ }] as usize;
                let s = match e.segments {
                    true => f64::from(self.segs[self.seg_ids[t] as usize * HIDDEN + h]),
                    false => 0.0,
                };
                f64::from(self.words[self.ids[t] as usize * HIDDEN + h])
                    + f64::from(self.table[p * HIDDEN + h])
                    + s
            })
            .collect();
        let eps = f64::from(e.eps.unwrap_or(1e-12));
        let [y, _, _] = norm_rows(&sum, &self.gamma, Some(&self.beta), eps, false);
        let ones = |r: &[i32]| r.iter().filter(|&&v| v == 1).count() as i32;
        let counts = self
            .mask
            .chunks(SEQ)
            .map(|r| if e.mask { ones(r) } else { 0 })
            .collect();
        (y, counts, sum)
    }
}

/// EmbedLayerNormalization: word, position and segment embeddings summed and layer-normalised,
/// with the mask's count of ones per row (onnxruntime 1.32 counts the values equal to 1) and
/// the sum; with and without the optional inputs.
fn embed_layer_norm(d: &Device) {
    let data = EmbedData::new();
    let case = |segments, mask, positions, eps| Embed {
        segments,
        mask,
        positions,
        eps,
    };
    let cases = [
        case(true, true, Some(BATCH), Some(1e-5)),
        case(false, false, None, None),
        case(true, false, Some(1), Some(1e-3)),
    ];
    for e in cases {
        let got = data.run(d, e);
        let (y, counts, sum) = data.reference(e);
        let what = format!("{e:?} on {}", name(d));
        assert_close(&read(&got[0]), &y, 1e-4, 1e-4, &what);
        let mask_index = got[1].to_vec_blocking::<i32>().expect("mask_index");
        assert_eq!(mask_index, counts, "{what}");
        assert_close(&read(&got[2]), &sum, 1e-6, 1e-6, &what);
    }
}
per_backend!(embed_layer_norm);

/// Multi-head attention of `q [b, lq, hidden]` over `k`, `v [b, lk, hidden]` with an additive
/// `mask(b, i, j)` and causal flag, in f64; `[b, lq, hidden]`.
fn mha_reference(
    [q, k, v]: [&[f64]; 3],
    [b, lq, lk]: [usize; 3],
    causal: bool,
    mask: &dyn Fn(usize, usize, usize) -> f64,
) -> Vec<f64> {
    let dh = HIDDEN / HEADS;
    let scale = 1.0 / (dh as f64).sqrt();
    let mut out = vec![0.0; b * lq * HIDDEN];
    for (bi, h, i) in
        (0..b).flat_map(|bi| (0..HEADS).flat_map(move |h| (0..lq).map(move |i| (bi, h, i))))
    {
        let at = |t: &[f64], l: usize, j: usize, e: usize| t[(bi * l + j) * HIDDEN + h * dh + e];
        let scores: Vec<f64> = (0..lk)
            .map(|j| {
                let dot: f64 = (0..dh).map(|e| at(q, lq, i, e) * at(k, lk, j, e)).sum();
                let s = dot * scale + mask(bi, i, j);
                if causal && j > i {
                    f64::NEG_INFINITY
                } else {
                    s
                }
            })
            .collect();
        let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let w: Vec<f64> = scores.iter().map(|s| (s - top).exp()).collect();
        let total: f64 = w.iter().sum();
        for e in 0..dh {
            let o: f64 = (0..lk).map(|j| w[j] * at(v, lk, j, e)).sum();
            out[(bi * lq + i) * HIDDEN + h * dh + e] = o / total;
        }
    }
    out
}

/// The key lengths and `[b, keys]` 0/1 mask the attention cases use.
const LENGTHS: [i32; 2] = [5, 7];

fn key_mask(lk: usize) -> Vec<i32> {
    (0..BATCH * lk)
        .map(|at| i32::from(((at % lk) as i32) < LENGTHS[at / lk]))
        .collect()
}

/// A key mask case: none, `[b]` lengths or `[b, keys]` 0/1, as an int32 initializer `m`.
#[derive(Clone, Copy, Debug)]
enum Masked {
    No,
    Lengths,
    Ones,
}

impl Masked {
    fn init(self, lk: usize) -> Vec<TensorProto> {
        match self {
            Masked::No => vec![],
            Masked::Lengths => vec![int32s("m", &[BATCH], &LENGTHS)],
            Masked::Ones => vec![int32s("m", &[BATCH, lk], &key_mask(lk))],
        }
    }

    /// onnxruntime's additive mask: -10000 on the keys masked out.
    fn additive(self) -> impl Fn(usize, usize, usize) -> f64 {
        move |b, _, j| match self {
            Masked::No => 0.0,
            _ if (j as i32) < LENGTHS[b] => 0.0,
            _ => -10000.0,
        }
    }
}

/// `a [m, k] @ b [k, n] + bias [n]` in f64.
fn affine_rows(a: &[f32], b: &[f32], bias: &[f32], k: usize) -> Vec<f64> {
    let n = bias.len();
    (0..a.len() / k * n)
        .map(|at| {
            let (r, c) = (at / n, at % n);
            let dot: f64 = (0..k)
                .map(|e| f64::from(a[r * k + e]) * f64::from(b[e * n + c]))
                .sum();
            dot + f64::from(bias[c])
        })
        .collect()
}

/// Columns `from..from + HIDDEN` of rows of `3 * HIDDEN`.
fn columns(qkv: &[f64], from: usize) -> Vec<f64> {
    qkv.chunks(3 * HIDDEN)
        .flat_map(|r| r[from..from + HIDDEN].to_vec())
        .collect()
}

/// com.microsoft's Attention: the input projected by one weight matrix into query, key and
/// value; without a mask, with key lengths, with a 0/1 mask, causal, causal and masked.
fn packed_attention(d: &Device) {
    const IN: usize = 10;
    let x = random(10, BATCH * SEQ * IN, -1.0, 1.0);
    let w = random(11, IN * 3 * HIDDEN, -0.6, 0.6);
    let bias = random(12, 3 * HIDDEN, -0.3, 0.3);
    let qkv = affine_rows(&x, &w, &bias, IN);
    let (q, k, v) = (
        columns(&qkv, 0),
        columns(&qkv, HIDDEN),
        columns(&qkv, 2 * HIDDEN),
    );
    let feeds = [
        ("x", x.clone(), vec![BATCH, SEQ, IN]),
        ("w", w.clone(), vec![IN, 3 * HIDDEN]),
        ("b", bias.clone(), vec![3 * HIDDEN]),
    ];
    let cases = [
        (Masked::No, false),
        (Masked::Lengths, false),
        (Masked::Ones, false),
        (Masked::No, true),
        (Masked::Ones, true),
    ];
    for (masked, causal) in cases {
        let ins: &[&str] = match masked {
            Masked::No => &["x", "w", "b"],
            _ => &["x", "w", "b", "m"],
        };
        let mut nd = node("Attention", "att", ins, &["y"]);
        nd.attribute.push(int_attr("num_heads", HEADS as i64));
        nd.attribute
            .push(int_attr("unidirectional", i64::from(causal)));
        let got = run_node(d, nd, &feeds, masked.init(SEQ), &["y"]);
        let dims = [BATCH, SEQ, SEQ];
        let want = mha_reference([&q, &k, &v], dims, causal, &masked.additive());
        let what = format!("Attention {masked:?} causal {causal} on {}", name(d));
        assert_close(&got[0], &want, 1e-4, 1e-4, &what);
    }
}
per_backend!(packed_attention);

/// MultiHeadAttention of separate projections with a bias: cross attention over 9 keys
/// (unmasked, key lengths, a 0/1 mask) and causal self-attention.
fn multi_head_attention(d: &Device) {
    for (masked, causal) in [
        (Masked::No, false),
        (Masked::Lengths, false),
        (Masked::Ones, false),
        (Masked::No, true),
        (Masked::Ones, true),
    ] {
        let lk = if causal { SEQ } else { 9 };
        let q = random(13, BATCH * SEQ * HIDDEN, -1.0, 1.0);
        let (k, v) = (
            random(14, BATCH * lk * HIDDEN, -1.0, 1.0),
            random(15, BATCH * lk * HIDDEN, -1.0, 1.0),
        );
        let bias = random(16, 3 * HIDDEN, -0.3, 0.3);
        let add = |t: &[f32], part: usize| -> Vec<f64> {
            t.iter()
                .enumerate()
                .map(|(i, &e)| f64::from(e) + f64::from(bias[part * HIDDEN + i % HIDDEN]))
                .collect()
        };
        let (qb, kb, vb) = (add(&q, 0), add(&k, 1), add(&v, 2));
        let feeds = [
            ("q", q, vec![BATCH, SEQ, HIDDEN]),
            ("k", k, vec![BATCH, lk, HIDDEN]),
            ("v", v, vec![BATCH, lk, HIDDEN]),
            ("b", bias, vec![3 * HIDDEN]),
        ];
        let ins: &[&str] = match masked {
            Masked::No => &["q", "k", "v", "b"],
            _ => &["q", "k", "v", "b", "m"],
        };
        let mut nd = node("MultiHeadAttention", "mha", ins, &["y"]);
        nd.attribute.push(int_attr("num_heads", HEADS as i64));
        nd.attribute
            .push(int_attr("unidirectional", i64::from(causal)));
        let got = run_node(d, nd, &feeds, masked.init(lk), &["y"]);
        let want = mha_reference(
            [&qb, &kb, &vb],
            [BATCH, SEQ, lk],
            causal,
            &masked.additive(),
        );
        let what = format!(
            "MultiHeadAttention {masked:?} causal {causal} on {}",
            name(d)
        );
        assert_close(&got[0], &want, 1e-4, 1e-4, &what);
    }
}
per_backend!(multi_head_attention);

/// A GroupQueryAttention case: batch, new tokens, query and key/value heads, the past cache's
/// length (0: none), each entry's `seqlens_k`, `total_sequence_length`, and `scale`.
#[derive(Clone, Debug)]
struct Gqa {
    batch: usize,
    seq: usize,
    heads: usize,
    kv: usize,
    past: usize,
    lens: Vec<i32>,
    total: usize,
    scale: Option<f32>,
}

/// Head size of the GroupQueryAttention cases.
const GQA_HEAD: usize = 3;

/// GroupQueryAttention in f64 as onnxruntime 1.32's CPU kernel computes it (checked on these
/// cases): the output `[b, s, heads * d]` and the present key and value caches.
fn gqa_reference(g: &Gqa, [q, k, v]: [&[f32]; 3], past: [&[f32]; 2]) -> [Vec<f64>; 3] {
    let (d, t) = (GQA_HEAD, g.total.max(g.past));
    let (kw, qw) = (g.kv * d, g.heads * d);
    let mut present = [
        vec![0.0; g.batch * g.kv * t * d],
        vec![0.0; g.batch * g.kv * t * d],
    ];
    let mut out = vec![0.0; g.batch * g.seq * qw];
    for b in 0..g.batch {
        let first = g.seq == g.total;
        let cached = if first {
            0
        } else {
            g.lens[b] as usize + 1 - g.seq
        };
        for (cache, (new, old)) in present.iter_mut().zip([(k, past[0]), (v, past[1])]) {
            for (h, row, e) in (0..g.kv)
                .flat_map(|h| (0..cached + g.seq).flat_map(move |r| (0..d).map(move |e| (h, r, e))))
            {
                cache[((b * g.kv + h) * t + row) * d + e] = if row < cached {
                    f64::from(old[((b * g.kv + h) * g.past + row) * d + e])
                } else {
                    f64::from(new[((b * g.seq + row - cached) * kw) + h * d + e])
                };
            }
        }
        let scale = g.scale.map_or(1.0 / (d as f64).sqrt(), f64::from);
        for (h, i) in (0..g.heads).flat_map(|h| (0..g.seq).map(move |i| (h, i))) {
            let kh = h / (g.heads / g.kv);
            let key = |j: usize, e: usize| ((b * g.kv + kh) * t + j) * d + e;
            let scores: Vec<f64> = (0..=cached + i)
                .map(|j| {
                    let dot: f64 = (0..d)
                        .map(|e| {
                            f64::from(q[(b * g.seq + i) * qw + h * d + e]) * present[0][key(j, e)]
                        })
                        .sum();
                    dot * scale
                })
                .collect();
            let top = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let w: Vec<f64> = scores.iter().map(|s| (s - top).exp()).collect();
            let total: f64 = w.iter().sum();
            for e in 0..d {
                let o: f64 = w
                    .iter()
                    .enumerate()
                    .map(|(j, w)| w * present[1][key(j, e)])
                    .sum();
                out[(b * g.seq + i) * qw + h * d + e] = o / total;
            }
        }
    }
    let [pk, pv] = present;
    [out, pk, pv]
}

/// GroupQueryAttention: a first prompt, token generation with entries of different lengths
/// (a past cache of the total's length, and a longer one with one key/value head), and a
/// prompt after a cache with as many key/value heads as query heads and a set scale.
fn group_query_attention(d: &Device) {
    let case = |batch, seq, heads, kv, past, lens: &[i32], total, scale| Gqa {
        batch,
        seq,
        heads,
        kv,
        past,
        lens: lens.to_vec(),
        total,
        scale,
    };
    let cases = [
        case(2, 5, 4, 2, 0, &[4, 4], 5, None),
        case(2, 1, 4, 2, 6, &[3, 5], 6, None),
        case(2, 1, 4, 1, 8, &[2, 5], 6, None),
        case(1, 3, 4, 4, 4, &[6], 7, Some(0.3)),
    ];
    for (n, g) in cases.into_iter().enumerate() {
        let seed = 30 + 5 * n as u64;
        let (qw, kw) = (g.heads * GQA_HEAD, g.kv * GQA_HEAD);
        let q = random(seed, g.batch * g.seq * qw, -1.0, 1.0);
        let k = random(seed + 1, g.batch * g.seq * kw, -1.0, 1.0);
        let v = random(seed + 2, g.batch * g.seq * kw, -1.0, 1.0);
        let cache = g.batch * g.kv * g.past * GQA_HEAD;
        let (pk, pv) = (
            random(seed + 3, cache, -1.0, 1.0),
            random(seed + 4, cache, -1.0, 1.0),
        );
        let past_shape = vec![g.batch, g.kv, g.past, GQA_HEAD];
        let mut feeds = vec![
            ("q", q.clone(), vec![g.batch, g.seq, qw]),
            ("k", k.clone(), vec![g.batch, g.seq, kw]),
            ("v", v.clone(), vec![g.batch, g.seq, kw]),
        ];
        let (pk_name, pv_name) = if g.past > 0 { ("pk", "pv") } else { ("", "") };
        if g.past > 0 {
            feeds.push(("pk", pk.clone(), past_shape.clone()));
            feeds.push(("pv", pv.clone(), past_shape));
        }
        let ins = ["q", "k", "v", pk_name, pv_name, "lens", "total"];
        let mut nd = node(
            "GroupQueryAttention",
            "gqa",
            &ins,
            &["y", "pk_out", "pv_out"],
        );
        nd.attribute.push(int_attr("num_heads", g.heads as i64));
        nd.attribute.push(int_attr("kv_num_heads", g.kv as i64));
        nd.attribute.extend(g.scale.map(|s| float_attr("scale", s)));
        let inits = vec![
            int32s("lens", &[g.batch], &g.lens),
            int32s("total", &[], &[g.total as i32]),
        ];
        let got = run_node(d, nd, &feeds, inits, &["y", "pk_out", "pv_out"]);
        let want = gqa_reference(&g, [&q, &k, &v], [&pk, &pv]);
        let what = format!("{g:?} on {}", name(d));
        assert_close(&got[0], &want[0], 1e-4, 1e-5, &what);
        assert_close(&got[1], &want[1], 0.0, 0.0, &what);
        assert_close(&got[2], &want[2], 0.0, 0.0, &what);
    }
}
per_backend!(group_query_attention);

/// GroupQueryAttention's errors on inputs that contradict each other: a total length that is
/// neither the past cache's plus the new tokens nor within a fixed cache, `seqlens_k` of the
/// wrong length, and an entry whose keys would not fit the present cache.
fn group_query_attention_errors(d: &Device) {
    let (b, past, kw) = (2, 4, 2 * GQA_HEAD);
    let cases: [(&[i32], i32, &str); 3] = [
        (
            &[4, 4],
            6,
            "total_sequence_length 6: expected the past cache's 4 plus the 1",
        ),
        (&[3], 4, "seqlens_k has 1 entries: expected 2"),
        (
            &[3, 4],
            4,
            "4 cached keys, expected 0 to 4 (the past cache's) and at most 4 keys",
        ),
    ];
    for (lens, total, want) in cases {
        let feeds = [
            (
                "q",
                random(50, b * 4 * GQA_HEAD, -1.0, 1.0),
                vec![b, 1, 4 * GQA_HEAD],
            ),
            ("k", random(51, b * kw, -1.0, 1.0), vec![b, 1, kw]),
            ("v", random(52, b * kw, -1.0, 1.0), vec![b, 1, kw]),
            (
                "pk",
                random(53, b * kw * past, -1.0, 1.0),
                vec![b, 2, past, GQA_HEAD],
            ),
            (
                "pv",
                random(54, b * kw * past, -1.0, 1.0),
                vec![b, 2, past, GQA_HEAD],
            ),
        ];
        let ins = ["q", "k", "v", "pk", "pv", "lens", "total"];
        let mut nd = node("GroupQueryAttention", "gqa", &ins, &["y"]);
        nd.attribute.push(int_attr("num_heads", 4));
        nd.attribute.push(int_attr("kv_num_heads", 2));
        let inits = vec![
            int32s("lens", &[lens.len()], lens),
            int32s("total", &[], &[total]),
        ];
        let s = node_session(d, nd, &feeds, inits, &["y"]);
        let e = run_session(d, &s, &feeds).expect_err("an error");
        assert!(e.to_string().contains(want), "{} on {}: {e}", want, name(d));
    }
}
per_backend!(group_query_attention_errors);

/// What the operators refuse at load, by reason.
fn refusals(d: &Device) {
    let mut past = node("Attention", "att", &["x", "w", "b", "", "past"], &["y"]);
    past.attribute.push(int_attr("num_heads", 3));
    let mut packed = node("MultiHeadAttention", "mha", &["qkv"], &["y"]);
    packed.attribute.push(int_attr("num_heads", 3));
    let mut rotary = node("GroupQueryAttention", "gqa", &["x", "w", "b"], &["y"]);
    for (name, v) in [("num_heads", 3), ("kv_num_heads", 3), ("do_rotary", 1)] {
        rotary.attribute.push(int_attr(name, v));
    }
    let segments = node(
        "EmbedLayerNormalization",
        "eln",
        &["x", "s", "w", "b", "", "g", "b"],
        &["y"],
    );
    let mean = node(
        "SkipSimplifiedLayerNormalization",
        "n",
        &["x", "s", "g"],
        &["y", "mean"],
    );
    let cases = [
        (past, "input 4 (a past key/value cache) is given"),
        (packed, "key or value is missing"),
        (mean, "output 1 (mean) is asked for"),
        (
            segments,
            "segment_ids (input 1) and segment_embedding (input 4)",
        ),
    ];
    for (mut n, want) in cases {
        n.domain = Some("com.microsoft".into());
        let g = GraphProto {
            node: vec![n],
            input: ["x", "w", "b", "past", "qkv", "s", "g"]
                .iter()
                .map(|v| info(v, FLOAT))
                .collect(),
            output: vec![info("y", FLOAT)],
            ..Default::default()
        };
        let bytes = ModelProto {
            ir_version: Some(8),
            opset_import: vec![proto::OperatorSetIdProto {
                domain: Some("com.microsoft".into()),
                version: Some(1),
            }],
            graph: Some(g),
            ..Default::default()
        }
        .encode_to_vec();
        let e = Session::from_bytes(d, bytes, SessionOptions::default())
            .err()
            .expect("refused");
        assert!(e.to_string().contains(want), "{e}");
    }
}
per_backend!(refusals);

/// A RotaryEmbedding case: interleaved, 4-D input (else 3-D), the cache's width, and
/// `num_heads` for a 3-D input (0: heads of twice the cache's width).
#[derive(Clone, Copy, Debug)]
struct Rotary {
    interleaved: bool,
    four: bool,
    half: usize,
    heads: i64,
}

/// The rotated input of a RotaryEmbedding case, in f64.
fn rotary_reference(r: Rotary, x: &[f32], ids: &[i64], [cos, sin]: [&[f32]; 2]) -> Vec<f64> {
    let dh = HIDDEN / HEADS;
    // (b, s, head, feature) → the index in the input.
    let at = |b: usize, s: usize, h: usize, e: usize| {
        if r.four {
            ((b * HEADS + h) * SEQ + s) * dh + e
        } else {
            (b * SEQ + s) * HIDDEN + h * dh + e
        }
    };
    let mut want = f64s(x);
    for (b, s, h) in
        (0..BATCH).flat_map(|b| (0..SEQ).flat_map(move |s| (0..HEADS).map(move |h| (b, s, h))))
    {
        let p = if r.four {
            ids[0] as usize + s
        } else {
            ids[b * SEQ + s] as usize
        };
        for i in 0..r.half {
            let (c, sn) = (
                f64::from(cos[p * r.half + i]),
                f64::from(sin[p * r.half + i]),
            );
            let (i1, i2) = if r.interleaved {
                (at(b, s, h, 2 * i), at(b, s, h, 2 * i + 1))
            } else {
                (at(b, s, h, i), at(b, s, h, i + r.half))
            };
            let (x1, x2) = (f64::from(x[i1]), f64::from(x[i2]));
            want[i1] = x1 * c - x2 * sn;
            want[i2] = x2 * c + x1 * sn;
        }
    }
    want
}

/// RotaryEmbedding of heads of 4 with positions per token or from an offset, as halves and as
/// pairs, over the whole head and over part of it.
fn rotary_embedding(d: &Device) {
    const ROWS: usize = 16;
    let dh = HIDDEN / HEADS;
    let cases = [
        Rotary {
            interleaved: false,
            four: false,
            half: 2,
            heads: 3,
        },
        Rotary {
            interleaved: true,
            four: false,
            half: 2,
            heads: 0,
        },
        Rotary {
            interleaved: true,
            four: true,
            half: 1,
            heads: 0,
        },
        Rotary {
            interleaved: false,
            four: true,
            half: 2,
            heads: 0,
        },
    ];
    for r in cases {
        let x = random(17, BATCH * SEQ * HIDDEN, -1.0, 1.0);
        let cos = random(18, ROWS * r.half, -1.0, 1.0);
        let sin = random(19, ROWS * r.half, -1.0, 1.0);
        let ids: Vec<i64> = if r.four {
            vec![3]
        } else {
            (0..BATCH * SEQ)
                .map(|i| ((i * 5 + 1) % ROWS) as i64)
                .collect()
        };
        let ids_shape = if r.four { vec![1] } else { vec![BATCH, SEQ] };
        let shape = if r.four {
            vec![BATCH, HEADS, SEQ, dh]
        } else {
            vec![BATCH, SEQ, HIDDEN]
        };
        let want = rotary_reference(r, &x, &ids, [&cos, &sin]);
        let mut nd = node(
            "RotaryEmbedding",
            "rope",
            &["x", "pos", "cos", "sin"],
            &["y"],
        );
        nd.attribute
            .push(int_attr("interleaved", i64::from(r.interleaved)));
        if r.heads > 0 {
            nd.attribute.push(int_attr("num_heads", r.heads));
        }
        if 2 * r.half < dh {
            nd.attribute
                .push(int_attr("rotary_embedding_dim", 2 * r.half as i64));
        }
        let inits = vec![
            int64s("pos", &ids_shape, &ids),
            floats("cos", &[ROWS, r.half], &cos),
            floats("sin", &[ROWS, r.half], &sin),
        ];
        let got = run_node(d, nd, &[("x", x, shape)], inits, &["y"]);
        assert_close(&got[0], &want, 1e-5, 1e-5, &format!("{r:?} on {}", name(d)));
    }
}
per_backend!(rotary_embedding);
