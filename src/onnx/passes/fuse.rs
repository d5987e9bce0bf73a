//! A layer with constant weights and what follows it made one node the library runs as one
//! kernel with an epilogue: a `Conv` and an `Add` of a constant per-channel bias become a
//! `Conv` with that bias; a `MatMul` by a constant `[k, n]` matrix and an `Add` of a constant
//! `[n]` bias become a `FusedGemm` (of `A` of any rank from 1); and then an activation the
//! kernels apply (`Relu`, `Sigmoid`, `Tanh`, `HardSwish`, `Gelu`, `Clip` to `[0, 6]`, and
//! `x * Sigmoid(x)`, SiLU) after a `Conv`, `Gemm` or such `MatMul` makes it a `com.microsoft`
//! `FusedConv` or `FusedGemm` with that `activation` (see `onnx::ops::microsoft::fused`).

use super::edit::{self, input, other, output, Uses};
use super::Cx;
use crate::base::error::Result;
use crate::onnx::attr::Attr;
use crate::onnx::graph::{Graph, Node, ValueId};
use crate::onnx::ElemType;

/// What follows a layer: the bias, the activation's name, the nodes taken and the last.
struct Tail {
    bias: Option<ValueId>,
    act: Option<&'static str>,
    nodes: Vec<usize>,
    last: usize,
}

/// Fuses every layer it can with its bias and activation; gives how many.
pub(super) fn run(g: &mut Graph, _: &Cx<'_>) -> Result<usize> {
    let uses = Uses::of(g);
    let mut dead = vec![false; g.nodes.len()];
    let mut count = 0;
    for l in 0..g.nodes.len() {
        let Some(kind) = layer(g, l) else {
            continue;
        };
        let Some(t) = tail(g, &uses, l, kind) else {
            continue;
        };
        if t.nodes.iter().any(|&i| dead[i]) || dead[l] {
            continue;
        }
        let out = output(&g.nodes[t.last]);
        let Some(bias) = bias_of(g, l, kind, t.bias) else {
            continue;
        };
        for &i in &t.nodes {
            dead[i] = true;
        }
        let n = &mut g.nodes[l];
        n.inputs.resize(3, None);
        n.inputs[2] = bias.or(n.inputs[2]);
        if kind == Kind::MatMul || t.act.is_some() {
            n.op = if kind == Kind::Conv {
                "FusedConv"
            } else {
                "FusedGemm"
            }
            .into();
            n.domain = "com.microsoft".into();
        }
        if let Some(act) = t.act {
            let attrs = std::mem::take(&mut n.attrs).with("activation", Attr::String(act.into()));
            // onnxruntime's parameters: FusedConv's list, FusedGemm's alpha and beta.
            n.attrs = match (act, kind) {
                ("Clip", Kind::Conv) => {
                    attrs.with("activation_params", Attr::Floats(vec![0.0, 6.0]))
                }
                ("Clip", _) => attrs
                    .with("activation_alpha", Attr::Float(0.0))
                    .with("activation_beta", Attr::Float(6.0)),
                _ => attrs,
            };
        }
        if let Some(out) = out {
            edit::write_to(g, l, out);
        }
        count += 1;
    }
    edit::remove(g, &dead)?;
    Ok(count)
}

/// The layers fused.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Conv,
    Gemm,
    MatMul,
}

/// The kind of node `l`, if it is a layer this pass fuses: a `Conv`, a `Gemm`, or a `MatMul`
/// by a constant float `[k, n]` matrix; with one output.
fn layer(g: &Graph, l: usize) -> Option<Kind> {
    let n = &g.nodes[l];
    if n.outputs.len() != 1 {
        return None;
    }
    if edit::is(n, "Conv") {
        return Some(Kind::Conv);
    }
    if edit::is(n, "Gemm") {
        return Some(Kind::Gemm);
    }
    let w = input(n, 1).and_then(|w| edit::constant(g, w))?;
    let float = matches!(w.elem, ElemType::F32 | ElemType::F16 | ElemType::BF16);
    (edit::is(n, "MatMul") && w.dims.len() == 2 && float).then_some(Kind::MatMul)
}

/// The bias `Add` and activation after layer `l`, where there is either.
fn tail(g: &Graph, uses: &Uses, l: usize, kind: Kind) -> Option<Tail> {
    let mut y = output(&g.nodes[l])?;
    let mut t = Tail {
        bias: None,
        act: None,
        nodes: Vec::new(),
        last: l,
    };
    let fresh = kind != Kind::Gemm || input(&g.nodes[l], 2).is_none();
    if let Some(a) = edit::next(g, uses, y, "Add").filter(|_| fresh) {
        let b = other(&g.nodes[a], y)?;
        if channel_bias(g, l, kind, b) {
            t.bias = Some(b);
            t.nodes.push(a);
            t.last = a;
            y = output(&g.nodes[a])?;
        }
    }
    if let Some((act, nodes, last)) = activation(g, uses, y) {
        t.act = Some(act);
        t.nodes.extend(nodes);
        t.last = last;
    }
    (t.last != l && (t.act.is_some() || kind != Kind::Gemm)).then_some(t)
}

/// Whether `b` is a constant that adds per output channel of layer `l`: `[o]` padded with
/// ones to at most the output's rank after a `Conv` (the `o` at the channel axis), `[n]`
/// after a product.
fn channel_bias(g: &Graph, l: usize, kind: Kind, b: ValueId) -> bool {
    let n = &g.nodes[l];
    let (Some(c), Some(w)) = (
        edit::constant(g, b),
        input(n, 1).and_then(|w| edit::constant(g, w)),
    ) else {
        return false;
    };
    let dims = &c.dims;
    match kind {
        Kind::Conv => {
            // The output has the weights' rank; axis i of the bias lands on axis
            // rank - len + i of it.
            let (rank, len) = (w.dims.len(), dims.len());
            let channel = |i: usize| rank - len + i == 1;
            len <= rank
                && (0..len).all(|i| dims[i] == 1 || channel(i))
                && w.dims.first() == Some(&c.numel())
        }
        Kind::MatMul => dims.len() == 1 && w.dims.get(1) == dims.first(),
        Kind::Gemm => {
            let trans = n
                .attrs
                .int("transB")
                .ok()
                .flatten()
                .is_some_and(|&t| t != 0);
            let beta = n
                .attrs
                .float("beta")
                .ok()
                .flatten()
                .is_none_or(|&b| b == 1.0);
            beta && dims.len() == 1 && w.dims.get(usize::from(!trans)) == dims.first()
        }
    }
}

/// The activation that alone reads `y`, by `FusedConv`'s name: its nodes but the last, and
/// the last.
fn activation(g: &Graph, uses: &Uses, y: ValueId) -> Option<(&'static str, Vec<usize>, usize)> {
    let readers = uses.readers(y)?;
    if let [a, b] = readers[..] {
        // x * Sigmoid(x).
        let (s, m) = if edit::is(&g.nodes[a], "Sigmoid") {
            (a, b)
        } else {
            (b, a)
        };
        let so = output(&g.nodes[s])?;
        let silu = edit::is(&g.nodes[s], "Sigmoid")
            && edit::next(g, uses, so, "Mul") == Some(m)
            && other(&g.nodes[m], so) == Some(y);
        return silu.then(|| ("Silu", vec![s, m], m));
    }
    let [r] = readers[..] else {
        return None;
    };
    let n = &g.nodes[r];
    let tanh = n
        .attrs
        .string("approximate")
        .ok()
        .flatten()
        .is_some_and(|a| a == "tanh");
    if edit::is(n, "Clip") && relu6(g, n) {
        return Some(("Clip", vec![r], r));
    }
    let act = match n.op.as_str() {
        _ if !(n.domain.is_empty() || n.domain == "ai.onnx") || n.inputs.len() != 1 => return None,
        "Relu" => "Relu",
        "Sigmoid" => "Sigmoid",
        "Tanh" => "Tanh",
        "HardSwish" => "HardSwish",
        "Gelu" if tanh => "GeluTanh",
        "Gelu" => "Gelu",
        _ => return None,
    };
    Some((act, vec![r], r))
}

/// Whether `Clip` node `n` bounds to exactly `[0, 6]` (the kernels' `relu6`): by constant
/// inputs (opset 11 on) or by its `min` and `max` attributes (before).
fn relu6(g: &Graph, n: &Node) -> bool {
    let attr = |name: &str| n.attrs.float(name).ok().flatten().map(|&v| f64::from(v));
    let bound = |i: usize, name: &str| match input(n, i) {
        Some(v) => edit::scalar(g, v),
        None => attr(name),
    };
    bound(1, "min") == Some(0.0) && bound(2, "max") == Some(6.0) && n.inputs.len() <= 3
}

/// The bias input the fused layer takes: the added one after a product; after a `Conv`, its
/// own plus the added one as a new `[o]` constant. `None` where they cannot be summed.
fn bias_of(g: &mut Graph, l: usize, kind: Kind, add: Option<ValueId>) -> Option<Option<ValueId>> {
    let Some(add) = add else {
        return Some(None);
    };
    if kind != Kind::Conv {
        return Some(Some(add));
    }
    let c = edit::constant(g, add).filter(|c| c.elem == ElemType::F32)?;
    let mut sum = edit::floats(c)?;
    if let Some(own) = input(&g.nodes[l], 2) {
        let b = edit::constant(g, own).and_then(edit::floats)?;
        if b.len() != sum.len() {
            return None;
        }
        sum.iter_mut().zip(b).for_each(|(s, b)| *s += b);
    }
    let name = format!("{}_bias", g.values[add].name);
    let n = sum.len();
    Some(Some(edit::add_constant(
        g,
        &name,
        edit::f32_constant(&[n], &sum),
    )))
}
