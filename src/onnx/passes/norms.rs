//! Normalisations over the last axis as exporters spell them in primitives, made one node:
//!
//! - `layernorm`: `d = x - ReduceMean(x)`, `d / Sqrt(ReduceMean(d²) + eps)`, then `* gamma`
//!   and `+ beta` where there, becomes `LayerNormalization` (the square a `Pow` or a product);
//! - `rmsnorm`: `x / Sqrt(ReduceMean(x²) + eps)` (or `x * Reciprocal(..)`, or `x * (1 / ..)`),
//!   then `* gamma` where there, becomes `RMSNormalization`.
//!
//! `gamma` and `beta` must be constants of one axis: the new node's scale and bias.

use super::edit::{self, input, next, other, output, scalar, Uses};
use super::Cx;
use crate::base::error::Result;
use crate::onnx::attr::{Attr, Attrs};
use crate::onnx::graph::{Graph, Node, ValueId};

/// A normalisation found: its input, epsilon, the nodes it replaces but the last, the last
/// (which becomes the normalisation) and its scale and bias.
struct Found {
    x: ValueId,
    eps: f64,
    nodes: Vec<usize>,
    last: usize,
    gamma: Option<ValueId>,
    beta: Option<ValueId>,
}

/// Makes every layer normalisation it finds one `LayerNormalization`; gives how many.
pub(super) fn layer(g: &mut Graph, _: &Cx<'_>) -> Result<usize> {
    rewrite(g, "LayerNormalization", layer_at)
}

/// Makes every RMS normalisation it finds one `RMSNormalization`; gives how many.
pub(super) fn rms(g: &mut Graph, _: &Cx<'_>) -> Result<usize> {
    rewrite(g, "RMSNormalization", rms_at)
}

/// Rewrites what `find` finds from each node as one `op` node.
fn rewrite(
    g: &mut Graph,
    op: &str,
    find: fn(&Graph, &Uses, usize) -> Option<Found>,
) -> Result<usize> {
    let uses = Uses::of(g);
    let mut dead = vec![false; g.nodes.len()];
    let mut count = 0;
    for start in 0..g.nodes.len() {
        let Some(f) = find(g, &uses, start) else {
            continue;
        };
        if f.nodes.iter().chain([&f.last]).any(|&i| dead[i]) {
            continue;
        }
        for &i in &f.nodes {
            dead[i] = true;
        }
        let n = &mut g.nodes[f.last];
        n.op = op.into();
        n.domain = String::new();
        n.inputs = vec![Some(f.x), f.gamma];
        if f.beta.is_some() {
            n.inputs.push(f.beta);
        }
        n.attrs = Attrs::default()
            .with("axis", Attr::Int(-1))
            .with("epsilon", Attr::Float(f.eps as f32));
        count += 1;
    }
    edit::remove(g, &dead)?;
    Ok(count)
}

/// Whether `n` is a `ReduceMean` over its input's last axis alone, keeping it; `rank` is
/// the rank of the input where the graph says it (an axis counted from the front needs it).
fn last_axis_mean(g: &Graph, n: &Node, rank: Option<usize>) -> bool {
    let keep = n
        .attrs
        .int("keepdims")
        .ok()
        .flatten()
        .is_none_or(|&k| k != 0);
    let axes = match n.attrs.ints("axes").ok().flatten() {
        Some(a) => Some(a.clone()),
        None => input(n, 1)
            .and_then(|v| edit::constant(g, v))
            .and_then(|c| c.to_i64().ok()),
    };
    let last = match axes.as_deref() {
        Some([-1]) => true,
        Some(&[a]) => rank.is_some_and(|r| a == r as i64 - 1),
        _ => false,
    };
    edit::is(n, "ReduceMean") && keep && last
}

/// Whether `n` squares `v`: `Pow(v, 2)` or `v * v`.
fn squares(g: &Graph, n: &Node, v: ValueId) -> bool {
    let pow = edit::is(n, "Pow")
        && input(n, 0) == Some(v)
        && input(n, 1).is_some_and(|e| edit::near(g, e, 2.0));
    pow || (edit::is(n, "Mul") && n.inputs == [Some(v), Some(v)])
}

/// The rank of value `v`, where the graph declares its shape.
fn rank(g: &Graph, v: ValueId) -> Option<usize> {
    g.values[v].shape.as_ref().map(Vec::len)
}

/// `Sqrt(ReduceMean(sq) + eps)` after square node `sq` of a value of rank `r`: epsilon, the
/// nodes, and the root.
fn root_of_mean(
    g: &Graph,
    uses: &Uses,
    sq: usize,
    r: Option<usize>,
) -> Option<(f64, [usize; 3], ValueId)> {
    let s = output(&g.nodes[sq])?;
    let r = uses
        .sole(s)
        .filter(|&m| last_axis_mean(g, &g.nodes[m], r))?;
    let m = output(&g.nodes[r])?;
    let add = next(g, uses, m, "Add")?;
    let eps = scalar(g, other(&g.nodes[add], m)?)?;
    let sqrt = next(g, uses, output(&g.nodes[add])?, "Sqrt")?;
    Some((eps, [r, add, sqrt], output(&g.nodes[sqrt])?))
}

/// A constant of one axis that binary node `n` applies to `y` (the other input), if `n` is
/// an `op` node and alone reads `y`.
fn affine(g: &Graph, uses: &Uses, y: ValueId, op: &str) -> Option<(usize, ValueId)> {
    let n = next(g, uses, y, op)?;
    let c = other(&g.nodes[n], y)?;
    edit::constant(g, c)
        .is_some_and(|k| k.dims.len() == 1)
        .then_some((n, c))
}

/// The layer normalisation whose `ReduceMean` of `x` is node `r1`.
fn layer_at(g: &Graph, uses: &Uses, r1: usize) -> Option<Found> {
    let n = &g.nodes[r1];
    let (x, mean) = (input(n, 0)?, output(n)?);
    if !last_axis_mean(g, n, rank(g, x)) {
        return None;
    }
    let sub = next(g, uses, mean, "Sub")?;
    if g.nodes[sub].inputs != [Some(x), Some(mean)] {
        return None;
    }
    let d = output(&g.nodes[sub])?;
    let readers = uses.readers(d)?;
    let [a, b] = readers[..] else {
        return None;
    };
    let (sq, div) = if squares(g, &g.nodes[a], d) {
        (a, b)
    } else {
        (b, a)
    };
    let squared = squares(g, &g.nodes[sq], d);
    let (eps, root, s) = root_of_mean(g, uses, sq, rank(g, x)).filter(|_| squared)?;
    let dn = &g.nodes[div];
    if !edit::is(dn, "Div") || dn.inputs != [Some(d), Some(s)] || uses.sole(s) != Some(div) {
        return None;
    }
    let mut nodes = vec![r1, sub, sq];
    nodes.extend(root);
    let mut f = Found {
        x,
        eps,
        nodes,
        last: div,
        gamma: None,
        beta: None,
    };
    scaled(g, uses, &mut f, true)?;
    Some(f)
}

/// `f` taking the `* gamma` (and where `bias`, `+ beta`) after its last node, where there.
fn scaled(g: &Graph, uses: &Uses, f: &mut Found, bias: bool) -> Option<()> {
    let y = output(&g.nodes[f.last])?;
    if let Some((m, gamma)) = affine(g, uses, y, "Mul") {
        f.nodes.push(f.last);
        f.last = m;
        f.gamma = Some(gamma);
    }
    let y = output(&g.nodes[f.last])?;
    if let Some((a, beta)) = affine(g, uses, y, "Add").filter(|_| bias) {
        f.nodes.push(f.last);
        f.last = a;
        f.beta = Some(beta);
    }
    Some(())
}

/// The RMS normalisation whose square of `x` is node `sq`.
fn rms_at(g: &Graph, uses: &Uses, sq: usize) -> Option<Found> {
    let x = input(&g.nodes[sq], 0)?;
    if !squares(g, &g.nodes[sq], x) {
        return None;
    }
    let (eps, root, s) = root_of_mean(g, uses, sq, rank(g, x))?;
    let mut nodes = vec![sq];
    nodes.extend(root);
    let d = uses.sole(s)?;
    let dn = &g.nodes[d];
    let last = if edit::is(dn, "Div") && dn.inputs == [Some(x), Some(s)] {
        d
    } else {
        // x * Reciprocal(s), or x * (1 / s).
        let inverse = edit::is(dn, "Reciprocal")
            || (edit::is(dn, "Div")
                && input(dn, 1) == Some(s)
                && input(dn, 0).is_some_and(|one| edit::near(g, one, 1.0)));
        let r = output(dn).filter(|_| inverse)?;
        let m = next(g, uses, r, "Mul")?;
        if other(&g.nodes[m], r) != Some(x) {
            return None;
        }
        nodes.push(d);
        m
    };
    let mut f = Found {
        x,
        eps,
        nodes,
        last,
        gamma: None,
        beta: None,
    };
    scaled(g, uses, &mut f, false)?;
    Some(f)
}
