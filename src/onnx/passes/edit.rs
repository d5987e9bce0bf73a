//! What the passes share: who reads each value, the constants and their numbers, new
//! constants, and the removal of the nodes a pass made dead with the values nothing refers to
//! any more.

use prost::bytes::Bytes;

use crate::base::error::{Error, Result};
use crate::onnx::constant::Constant;
use crate::onnx::graph::{Dim, Graph, Node, Origin, Value, ValueId};
use crate::onnx::schedule::reads;
use crate::onnx::value::{host_of, HostData};
use crate::onnx::ElemType;

/// Who reads each value of a graph: the nodes (a subgraph's reads count as its node's), and
/// whether the graph gives it out.
pub(super) struct Uses {
    readers: Vec<Vec<usize>>,
    output: Vec<bool>,
}

impl Uses {
    /// The uses in `g` as it is now.
    pub fn of(g: &Graph) -> Uses {
        let mut readers = vec![Vec::new(); g.values.len()];
        for (i, n) in g.nodes.iter().enumerate() {
            for v in reads(g, n) {
                readers[v].push(i);
            }
        }
        let mut output = vec![false; g.values.len()];
        for &v in &g.outputs {
            output[v] = true;
        }
        Uses { readers, output }
    }

    /// The node that alone reads `v` (once), where `v` is no output of the graph.
    pub fn sole(&self, v: ValueId) -> Option<usize> {
        match self.readers[v][..] {
            [n] if !self.output[v] => Some(n),
            _ => None,
        }
    }

    /// The nodes that read `v`, each once, where `v` is no graph output.
    pub fn readers(&self, v: ValueId) -> Option<Vec<usize>> {
        let mut r = self.readers[v].clone();
        r.dedup();
        (!self.output[v]).then_some(r)
    }
}

/// Whether `n` is the default domain's operator `op`.
pub(super) fn is(n: &Node, op: &str) -> bool {
    n.op == op && (n.domain.is_empty() || n.domain == "ai.onnx")
}

/// Input `i` of `n`, if given.
pub(super) fn input(n: &Node, i: usize) -> Option<ValueId> {
    n.inputs.get(i).copied().flatten()
}

/// Output 0 of `n`, if asked for.
pub(super) fn output(n: &Node) -> Option<ValueId> {
    n.outputs.first().copied().flatten()
}

/// The node whose output 0 `v` is.
pub(super) fn producer(g: &Graph, v: ValueId) -> Option<usize> {
    match g.values[v].origin {
        Origin::Node { node, slot: 0 } => Some(node),
        _ => None,
    }
}

/// The constant `v` is, if it is one.
pub(super) fn constant(g: &Graph, v: ValueId) -> Option<&Constant> {
    match &g.values[v].origin {
        Origin::Constant(c) => Some(c),
        _ => None,
    }
}

/// The elements of a float constant (f32, f64, f16, bf16) as f64.
pub(super) fn floats(c: &Constant) -> Option<Vec<f64>> {
    let host = host_of(c).ok()?;
    matches!(host.data, HostData::F32(_)).then(|| host.to_f64())
}

/// The one element of constant `v`, if it is a float or integer constant of one element.
pub(super) fn scalar(g: &Graph, v: ValueId) -> Option<f64> {
    let c = constant(g, v).filter(|c| c.numel() == 1)?;
    host_of(c).ok().map(|h| h.to_f64()[0])
}

/// An f32 constant of `dims` holding `data`.
pub(super) fn f32_constant(dims: &[usize], data: &[f64]) -> Constant {
    let bytes: Vec<u8> = data
        .iter()
        .flat_map(|&x| (x as f32).to_le_bytes())
        .collect();
    Constant {
        elem: ElemType::F32,
        dims: dims.to_vec(),
        bytes: Bytes::from(bytes),
        strings: Vec::new(),
    }
}

/// A new constant value named after `base` (made unique), holding `c`.
pub(super) fn add_constant(g: &mut Graph, base: &str, c: Constant) -> ValueId {
    let mut name = base.to_string();
    let mut k = 1;
    while g.find(&name).is_some() {
        name = format!("{base}_{k}");
        k += 1;
    }
    g.values.push(Value {
        name,
        elem: Some(c.elem),
        shape: Some(c.dims.iter().map(|&d| Dim::Fixed(d)).collect()),
        sequence: false,
        origin: Origin::Constant(c),
    });
    g.values.len() - 1
}

/// `g` without the nodes `dead` marks and without the values no node, input, output or
/// subgraph of what is left refers to; ids and producers renumbered.
pub(super) fn remove(g: &mut Graph, dead: &[bool]) -> Result<()> {
    let mut at = vec![None; g.nodes.len()];
    let nodes = std::mem::take(&mut g.nodes);
    for (i, n) in nodes.into_iter().enumerate() {
        if !dead.get(i).copied().unwrap_or(false) {
            at[i] = Some(g.nodes.len());
            g.nodes.push(n);
        }
    }
    let mut keep = vec![false; g.values.len()];
    for n in &g.nodes {
        for v in reads(g, n)
            .into_iter()
            .chain(n.outputs.iter().flatten().copied())
        {
            keep[v] = true;
        }
    }
    for &v in g.inputs.iter().chain(&g.outputs) {
        keep[v] = true;
    }
    let mut id = vec![None; g.values.len()];
    let values = std::mem::take(&mut g.values);
    for (i, mut v) in values.into_iter().enumerate() {
        if !(keep[i] || v.origin == Origin::Outer) {
            continue;
        }
        if let Origin::Node { node, slot } = v.origin {
            let node = at[node].ok_or_else(|| {
                Error::Internal(format!(
                    "a graph pass removed the node computing '{}'",
                    v.name
                ))
            })?;
            v.origin = Origin::Node { node, slot };
        }
        id[i] = Some(g.values.len());
        g.values.push(v);
    }
    let map = |v: &mut ValueId| -> Result<()> {
        *v = id[*v].ok_or_else(|| Error::Internal("a graph pass lost a value in use".into()))?;
        Ok(())
    };
    for n in &mut g.nodes {
        for v in n.inputs.iter_mut().chain(n.outputs.iter_mut()).flatten() {
            map(v)?;
        }
    }
    for v in g.inputs.iter_mut().chain(g.outputs.iter_mut()) {
        map(v)?;
    }
    Ok(())
}

/// Node `n`'s output 0 becomes `v` (which a removed node computed before).
pub(super) fn write_to(g: &mut Graph, n: usize, v: ValueId) {
    if let Some(slot) = g.nodes[n].outputs.first_mut() {
        *slot = Some(v);
    }
    g.values[v].origin = Origin::Node { node: n, slot: 0 };
}

/// The node of the default domain's `op` that alone reads `v`.
pub(super) fn next(g: &Graph, uses: &Uses, v: ValueId, op: &str) -> Option<usize> {
    uses.sole(v).filter(|&n| is(&g.nodes[n], op))
}

/// The input of two-input node `n` other than `v`, where `n` reads `v`.
pub(super) fn other(n: &Node, v: ValueId) -> Option<ValueId> {
    match n.inputs[..] {
        [Some(a), Some(b)] if a == v => Some(b),
        [Some(a), Some(b)] if b == v => Some(a),
        _ => None,
    }
}

/// Whether `v` is a one-element constant within 1e-4 (relative) of `want`.
pub(super) fn near(g: &Graph, v: ValueId, want: f64) -> bool {
    scalar(g, v).is_some_and(|x| (x - want).abs() <= 1e-4 * want.abs().max(1.0))
}

/// For two-input node `n`, the input that is not a one-element constant near `want` where
/// the other is.
pub(super) fn beside(g: &Graph, n: &Node, want: f64) -> Option<ValueId> {
    match n.inputs[..] {
        [Some(a), Some(b)] if near(g, b, want) => Some(a),
        [Some(a), Some(b)] if near(g, a, want) => Some(b),
        _ => None,
    }
}
