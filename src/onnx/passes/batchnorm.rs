//! `BatchNormalization` folded into the layer before it. With constant statistics the norm is
//! `y * s + t` per channel (`s = scale / sqrt(var + epsilon)`, `t = bias - mean * s`), so a
//! `Conv` (weights `[o, ..]`), `Gemm` or rank-2 `MatMul` (weights `[k, n]`, or `[n, k]` under
//! `transB`) with constant f32 weights whose output only the norm reads takes `s` into its
//! weights and `t` into its bias; a `MatMul` becomes a `Gemm` to have one.

use super::edit::{self, Uses};
use super::Cx;
use crate::base::error::Result;
use crate::onnx::attr::Attrs;
use crate::onnx::graph::{Graph, Node, ValueId};
use crate::onnx::ElemType;

/// Folds every norm it can into its layer; gives how many.
pub(super) fn run(g: &mut Graph, _: &Cx<'_>) -> Result<usize> {
    let uses = Uses::of(g);
    let mut dead = vec![false; g.nodes.len()];
    for (b, dead) in dead.iter_mut().enumerate() {
        let Some((layer, out, [s, t])) = matched(g, &uses, b) else {
            continue;
        };
        let done = match g.nodes[layer].op.as_str() {
            "Conv" => into_conv(g, layer, &s, &t),
            _ => into_product(g, layer, &s, &t),
        };
        if done.is_some() {
            edit::write_to(g, layer, out);
            *dead = true;
        }
    }
    edit::remove(g, &dead)?;
    Ok(dead.iter().filter(|&&d| d).count())
}

/// For node `b`, a norm of constant statistics whose input only it reads and a layer gives:
/// the layer, the norm's output, and its per-channel `s` and `t`.
fn matched(g: &Graph, uses: &Uses, b: usize) -> Option<(usize, ValueId, [Vec<f64>; 2])> {
    let n = &g.nodes[b];
    let a = &n.attrs;
    let training = a
        .int("training_mode")
        .ok()
        .flatten()
        .is_some_and(|&t| t != 0);
    let spatial = a.int("spatial").ok().flatten().is_some_and(|&s| s == 0);
    let extra = n.outputs.iter().skip(1).any(Option::is_some);
    if !edit::is(n, "BatchNormalization") || training || spatial || extra {
        return None;
    }
    let (x, out) = (edit::input(n, 0)?, edit::output(n)?);
    let layer = edit::producer(g, x).filter(|_| uses.sole(x) == Some(b))?;
    let l = &g.nodes[layer];
    let ok = ["Conv", "Gemm", "MatMul"].iter().any(|op| edit::is(l, op));
    if !ok || l.outputs.iter().skip(1).any(Option::is_some) {
        return None;
    }
    let stat = |i: usize| edit::constant(g, edit::input(n, i)?).and_then(edit::floats);
    let [scale, bias, mean, var] = [1, 2, 3, 4].map(stat);
    let (scale, bias, mean, var) = (scale?, bias?, mean?, var?);
    let eps = f64::from(a.float("epsilon").ok().flatten().copied().unwrap_or(1e-5));
    let c = scale.len();
    if [&bias, &mean, &var].iter().any(|v| v.len() != c) {
        return None;
    }
    let s: Vec<f64> = (0..c).map(|i| scale[i] / (var[i] + eps).sqrt()).collect();
    let t = (0..c).map(|i| bias[i] - mean[i] * s[i]).collect();
    Some((layer, out, [s, t]))
}

/// The f32 constant weights of input `i` of `n`, with their dims.
fn weights(g: &Graph, n: &Node, i: usize) -> Option<(Vec<usize>, Vec<f64>)> {
    let c = edit::constant(g, edit::input(n, i)?).filter(|c| c.elem == ElemType::F32)?;
    Some((c.dims.clone(), edit::floats(c)?))
}

/// A `Conv` with `s` taken into its weights' output channels and `t` into its bias.
fn into_conv(g: &mut Graph, layer: usize, s: &[f64], t: &[f64]) -> Option<()> {
    let n = &g.nodes[layer];
    let (dims, mut w) = weights(g, n, 1)?;
    let o = s.len();
    if dims.first() != Some(&o) {
        return None;
    }
    let mut bias = match edit::input(n, 2) {
        Some(b) => edit::constant(g, b).and_then(edit::floats)?,
        None => vec![0.0; o],
    };
    if bias.len() != o {
        return None;
    }
    let per = w.len() / o;
    for (i, x) in w.iter_mut().enumerate() {
        *x *= s[i / per];
    }
    for i in 0..o {
        bias[i] = bias[i] * s[i] + t[i];
    }
    let name = g.values[edit::input(n, 1)?].name.clone();
    let w = edit::add_constant(g, &format!("{name}_bn"), edit::f32_constant(&dims, &w));
    let b = edit::add_constant(
        g,
        &format!("{name}_bn_bias"),
        edit::f32_constant(&[o], &bias),
    );
    let n = &mut g.nodes[layer];
    n.inputs.resize(3, None);
    n.inputs[1] = Some(w);
    n.inputs[2] = Some(b);
    Some(())
}

/// A `Gemm` or rank-2 `MatMul` (made a `Gemm`) with `s` taken into its weights' columns and
/// `t` into its bias: `C' = (beta C s + t) / beta`.
fn into_product(g: &mut Graph, layer: usize, s: &[f64], t: &[f64]) -> Option<()> {
    let n = &g.nodes[layer];
    let gemm = edit::is(n, "Gemm");
    let int = |name: &str| n.attrs.int(name).ok().flatten().copied().unwrap_or(0);
    let float = |name| f64::from(n.attrs.float(name).ok().flatten().copied().unwrap_or(1.0));
    let rank2 = |v: Option<ValueId>| {
        v.is_some_and(|v| g.values[v].shape.as_ref().is_some_and(|s| s.len() == 2))
    };
    if (gemm && int("transA") != 0) || (!gemm && !rank2(edit::input(n, 0))) {
        return None;
    }
    let (trans, beta) = (
        gemm && int("transB") != 0,
        if gemm { float("beta") } else { 1.0 },
    );
    let (dims, mut w) = weights(g, n, 1)?;
    let cols = s.len();
    let [rows, width] = [dims.first().copied()?, dims.get(1).copied()?];
    let channels = if trans { rows } else { width };
    if dims.len() != 2 || channels != cols || beta == 0.0 {
        return None;
    }
    for (i, x) in w.iter_mut().enumerate() {
        *x *= s[if trans { i / width } else { i % width }];
    }
    let c = match edit::input(n, 2).filter(|_| gemm) {
        Some(c) => edit::constant(g, c).and_then(edit::floats)?,
        None => vec![0.0],
    };
    if c.len() != 1 && c.len() != cols {
        return None;
    }
    let bias: Vec<f64> = (0..cols)
        .map(|i| (beta * c[i % c.len()] * s[i] + t[i]) / beta)
        .collect();
    let name = g.values[edit::input(n, 1)?].name.clone();
    let w = edit::add_constant(g, &format!("{name}_bn"), edit::f32_constant(&dims, &w));
    let b = edit::add_constant(
        g,
        &format!("{name}_bn_bias"),
        edit::f32_constant(&[cols], &bias),
    );
    let n = &mut g.nodes[layer];
    if !gemm {
        n.op = "Gemm".into();
        n.attrs = Attrs::default();
    }
    n.inputs.resize(3, None);
    n.inputs[1] = Some(w);
    n.inputs[2] = Some(b);
    Some(())
}
