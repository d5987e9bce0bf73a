//! Scaled dot-product attention as exporters spell it (`nn.MultiheadAttention`, BERT-style
//! self-attention, `F.scaled_dot_product_attention`) made one `ai.unicompute` `Attention`
//! node (see `onnx::ops::attention`), which runs the library's fused kernel:
//!
//! `MatMul(q, kt)`, then products or quotients by one-element constants (also on `q` or `kt`
//! before it), then at most one `Add` of a mask and one `Where` of a condition and a
//! one-element constant of at most -1e9 (either branch, either order), then `Softmax` and
//! `MatMul(·, v)`.
//! Every intermediate is read by the next node alone. A mask or condition that is a constant
//! causal triangle (0 or true on and below the diagonal, at most -1e9 or false above) makes
//! the node causal, so the kernel skips the masked keys instead of reading a mask.

use super::edit::{self, input, output, producer, Uses};
use super::Cx;
use crate::base::error::Result;
use crate::onnx::attr::{Attr, Attrs};
use crate::onnx::graph::{Graph, Node, ValueId};
use crate::onnx::ops::chain::DOMAIN;
use crate::onnx::value::host_of;
use crate::onnx::ElemType;

/// Masked scores at most this are as good as `-inf` to the softmax.
const MASKED: f64 = -1e9;

/// An attention found: the nodes it replaces but the last `MatMul`, which becomes it.
#[derive(Default)]
struct Found {
    q: ValueId,
    kt: ValueId,
    v: ValueId,
    scale: f64,
    mask: Option<ValueId>,
    cond: Option<(ValueId, f64, bool)>,
    where_first: bool,
    axis: i64,
    nodes: Vec<usize>,
    last: usize,
}

/// Makes every attention it finds one node; gives how many.
pub(super) fn run(g: &mut Graph, cx: &Cx<'_>) -> Result<usize> {
    let uses = Uses::of(g);
    let mut dead = vec![false; g.nodes.len()];
    let mut count = 0;
    for mm in 0..g.nodes.len() {
        let Some(f) = found(g, &uses, mm, cx.opset) else {
            continue;
        };
        if f.nodes.iter().chain([&f.last]).any(|&i| dead[i]) {
            continue;
        }
        for &i in &f.nodes {
            dead[i] = true;
        }
        let causal = causal(g, &f);
        let n = &mut g.nodes[f.last];
        n.op = "Attention".into();
        n.domain = DOMAIN.into();
        n.inputs = vec![Some(f.q), Some(f.kt), Some(f.v), f.mask];
        let (fill, fill_on) = f.cond.map_or((0.0, false), |(_, x, on)| (x, on));
        if let Some((c, _, _)) = f.cond {
            n.inputs.push(Some(c));
        }
        n.attrs = Attrs::default()
            .with("scale", Attr::Float(f.scale as f32))
            .with("axis", Attr::Int(f.axis))
            .with("fill", Attr::Float(fill as f32))
            .with("fill_on", Attr::Int(fill_on.into()))
            .with("where_first", Attr::Int(f.where_first.into()))
            .with("causal", Attr::Int(causal.into()));
        count += 1;
    }
    edit::remove(g, &dead)?;
    Ok(count)
}

/// The one-element float constant of rank 0 or 1 that `v` is.
fn factor(g: &Graph, v: ValueId) -> Option<f64> {
    let c = edit::constant(g, v)?;
    let float = matches!(c.elem, ElemType::F32 | ElemType::F16 | ElemType::BF16);
    (float && c.dims.len() <= 1)
        .then(|| edit::scalar(g, v))
        .flatten()
}

/// What node `n` scales `s` by, where it is `s * k`, `k * s` or `s / k` for a constant `k`.
fn scaling(g: &Graph, n: usize, s: ValueId) -> Option<f64> {
    let node = &g.nodes[n];
    let [a, b] = [input(node, 0)?, input(node, 1)?];
    if edit::is(node, "Mul") {
        let k = if a == s { b } else { a };
        (a == s || b == s).then(|| factor(g, k)).flatten()
    } else if edit::is(node, "Div") && a == s {
        factor(g, b).filter(|&k| k != 0.0).map(|k| 1.0 / k)
    } else {
        None
    }
}

/// `v`, or what it scales where it is a product or quotient by a constant that only `reader`
/// reads: the value, the factor and the node.
fn prescaled(g: &Graph, uses: &Uses, v: ValueId, reader: usize) -> (ValueId, f64, Option<usize>) {
    let by = producer(g, v)
        .filter(|_| uses.sole(v) == Some(reader))
        .and_then(|p| {
            let n = &g.nodes[p];
            let x = [input(n, 0)?, input(n, 1)?]
                .into_iter()
                .find(|&x| edit::constant(g, x).is_none())?;
            Some((x, scaling(g, p, x)?, Some(p)))
        });
    by.unwrap_or((v, 1.0, None))
}

/// The attention whose first `MatMul` is node `mm`.
fn found(g: &Graph, uses: &Uses, mm: usize, opset: i64) -> Option<Found> {
    let n = &g.nodes[mm];
    if !edit::is(n, "MatMul") {
        return None;
    }
    let (q, sq, pq) = prescaled(g, uses, input(n, 0)?, mm);
    let (kt, sk, pk) = prescaled(g, uses, input(n, 1)?, mm);
    let mut f = Found {
        q,
        kt,
        scale: sq * sk,
        nodes: [Some(mm), pq, pk].into_iter().flatten().collect(),
        ..Found::default()
    };
    let mut s = output(n)?;
    let softmax = loop {
        let r = uses.sole(s)?;
        let node = &g.nodes[r];
        let masked = f.mask.is_some() || f.cond.is_some();
        if edit::is(node, "Softmax") {
            break r;
        } else if let Some(k) = scaling(g, r, s).filter(|_| !masked) {
            f.scale *= k;
        } else if edit::is(node, "Add") && f.mask.is_none() {
            f.mask = Some(edit::other(node, s).filter(|&m| m != s)?);
        } else if edit::is(node, "Where") && f.cond.is_none() {
            f.cond = Some(condition(g, node, s)?);
            f.where_first = f.mask.is_none();
        } else {
            return None;
        }
        f.nodes.push(r);
        s = output(node)?;
    };
    let sm = &g.nodes[softmax];
    let default = if opset >= 13 { -1 } else { 1 };
    f.axis = *sm.attrs.int("axis").ok()?.unwrap_or(&default);
    // Where the graph declares the scores' rank, a softmax over another axis is no attention.
    let rank = g.values[s].shape.as_ref().map(|d| d.len() as i64);
    if rank.is_some_and(|r| f.axis != -1 && f.axis != r - 1) {
        return None;
    }
    let p = output(sm)?;
    f.nodes.push(softmax);
    f.last = edit::next(g, uses, p, "MatMul")?;
    let last = &g.nodes[f.last];
    f.v = input(last, 1).filter(|_| input(last, 0) == Some(p))?;
    Some(f)
}

/// For `Where` node `node` of scores `s`: its condition, its one-element constant (at most
/// [`MASKED`], which the kernel may add to a score instead of putting it in its place) and
/// whether it takes that where the condition holds.
fn condition(g: &Graph, node: &Node, s: ValueId) -> Option<(ValueId, f64, bool)> {
    let [c, a, b] = [input(node, 0)?, input(node, 1)?, input(node, 2)?];
    if c == s {
        return None;
    }
    let (fill, on) = match (a == s, b == s) {
        (true, false) => (factor(g, b)?, false),
        (false, true) => (factor(g, a)?, true),
        _ => return None,
    };
    (fill <= MASKED).then_some((c, fill, on))
}

/// Whether the mask, or else the condition, of `f` is a constant causal triangle.
fn causal(g: &Graph, f: &Found) -> bool {
    let (v, keep) = match (f.mask, f.cond) {
        (_, Some((c, _, on))) => (c, Keep::Cond(!on)),
        (Some(m), None) => (m, Keep::Zero),
        _ => return false,
    };
    let Some(c) = edit::constant(g, v) else {
        return false;
    };
    let n = c.dims.len();
    if n < 2 || c.dims[..n - 2].iter().any(|&d| d != 1) {
        return false;
    }
    let (rows, cols) = (c.dims[n - 2], c.dims[n - 1]);
    let Ok(data) = host_of(c).map(|h| h.to_f64()) else {
        return false;
    };
    let is_bool = c.elem == ElemType::Bool;
    (0..rows * cols).all(|at| {
        let (i, j) = (at / cols, at % cols);
        let x = data[at];
        match keep {
            Keep::Zero => !is_bool && if j <= i { x == 0.0 } else { x <= MASKED },
            Keep::Cond(t) => is_bool && ((x != 0.0) == t) == (j <= i),
        }
    })
}

/// What a causal triangle holds on and below its diagonal: 0 (an additive mask), or the
/// condition's value that keeps the score.
#[derive(Clone, Copy)]
enum Keep {
    Zero,
    Cond(bool),
}
