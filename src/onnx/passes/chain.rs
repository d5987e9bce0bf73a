//! Connected groups of elementwise nodes made one `ai.unicompute` `Chain` node, which runs
//! them as one generated kernel (see `onnx::ops::chain`): unary operators, `Gelu`, binary
//! arithmetic of two inputs (broadcasting), `Cast` to a float type, and one-element float
//! constants as scalars. A group has one output; every other value it computes is read only
//! by its own nodes, and it reads at most [`MAX_INPUTS`] values besides its scalars.

use std::collections::HashMap;

use super::edit::{self, output, Uses};
use super::Cx;
use crate::base::error::Result;
use crate::onnx::graph::{Graph, Node, ValueId};
use crate::onnx::ops::chain::{attrs, lookup, Part, BINARY, DOMAIN, UNARY};
use crate::onnx::schedule::schedule;
use crate::onnx::ElemType;
use crate::ops::chain::{MAX_INPUTS, MAX_STEPS};

/// Makes every group of two or more elementwise nodes one `Chain` node; gives how many.
pub(super) fn run(g: &mut Graph, cx: &Cx<'_>) -> Result<usize> {
    // Opsets before 7 broadcast with an axis, which a chain does not.
    if cx.opset < 7 {
        return Ok(0);
    }
    let uses = Uses::of(g);
    let order = schedule(g)?.order;
    let ok: Vec<bool> = g.nodes.iter().map(|n| takes(g, n)).collect();
    let mut taken = vec![false; g.nodes.len()];
    let mut groups = Vec::new();
    for &root in order.iter().rev() {
        if !ok[root] || taken[root] {
            continue;
        }
        let members = grow(g, &uses, &ok, &taken, root);
        for &m in &members {
            taken[m] = true;
        }
        if members.len() >= 2 && !external(g, &members).is_empty() {
            groups.push(members);
        }
    }
    let mut dead = vec![false; g.nodes.len()];
    let at: HashMap<usize, usize> = order.iter().enumerate().map(|(i, &n)| (n, i)).collect();
    for mut members in groups.iter().cloned() {
        members.sort_by_key(|m| at.get(m).copied().unwrap_or(usize::MAX));
        let node = chain_node(g, &members);
        let Some(&last) = members.last() else {
            continue;
        };
        for &m in &members[..members.len() - 1] {
            dead[m] = true;
        }
        g.nodes[last] = node;
    }
    edit::remove(g, &dead)?;
    Ok(groups.len())
}

/// `root` and the nodes before it that only it and they read, while the group reads at most
/// [`MAX_INPUTS`] values and stays well within [`MAX_STEPS`].
fn grow(g: &Graph, uses: &Uses, ok: &[bool], taken: &[bool], root: usize) -> Vec<usize> {
    let mut members = vec![root];
    let mut added = true;
    while added {
        added = false;
        for k in 0..members.len() {
            for v in g.nodes[members[k]].inputs.iter().flatten().copied() {
                let Some(p) = edit::producer(g, v) else {
                    continue;
                };
                if !ok[p] || taken[p] || members.contains(&p) || 3 * members.len() >= MAX_STEPS {
                    continue;
                }
                let inside = uses
                    .readers(v)
                    .is_some_and(|r| r.iter().all(|n| members.contains(n)));
                if !inside {
                    continue;
                }
                members.push(p);
                if external(g, &members).len() > MAX_INPUTS {
                    members.pop();
                } else {
                    added = true;
                }
            }
        }
    }
    members
}

/// The values `members` read that none of them computes, scalars apart, in first-read order.
fn external(g: &Graph, members: &[usize]) -> Vec<ValueId> {
    let inside: Vec<ValueId> = members
        .iter()
        .filter_map(|&m| output(&g.nodes[m]))
        .collect();
    let mut out = Vec::new();
    for &m in members {
        for (v, scalar) in operands(g, &g.nodes[m]) {
            if scalar.is_none() && !inside.contains(&v) && !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

/// A one-element float constant a chain takes as a scalar.
#[derive(Clone, Copy)]
struct Scalar {
    /// Its value.
    value: f32,
    /// Its element type's ONNX code.
    code: i64,
    /// Its rank.
    rank: usize,
}

/// The inputs of elementwise node `n`, each with the scalar it is where it is a one-element
/// float constant of rank 0, or of a rank the other operand's (known) rank is no less than.
fn operands(g: &Graph, n: &Node) -> Vec<(ValueId, Option<Scalar>)> {
    let ins: Vec<ValueId> = n.inputs.iter().flatten().copied().collect();
    let rank = |v: ValueId| g.values[v].shape.as_ref().map(Vec::len);
    (ins.iter().enumerate())
        .map(|(i, &v)| {
            let other = (ins.len() == 2).then(|| ins[1 - i]);
            let scalar = edit::constant(g, v)
                .filter(|c| c.numel() == 1)
                .and_then(|c| {
                    let code = match c.elem {
                        ElemType::F32 => 1,
                        ElemType::F16 => 10,
                        ElemType::BF16 => 16,
                        _ => return None,
                    };
                    let r = c.dims.len();
                    let fits = r == 0 || other.and_then(rank).is_some_and(|o| o >= r);
                    let value = edit::scalar(g, v)? as f32;
                    (other.is_some() && fits).then_some(Scalar {
                        value,
                        code,
                        rank: r,
                    })
                });
            (v, scalar)
        })
        .collect()
}

/// Whether `n` is an elementwise node a chain takes: one output, every input given and no
/// constant input but float ones, and the operator's own attributes only.
fn takes(g: &Graph, n: &Node) -> bool {
    let given = n.inputs.iter().all(Option::is_some) && n.outputs.len() == 1;
    let floats = n.inputs.iter().flatten().all(|&v| {
        edit::constant(g, v)
            .is_none_or(|c| matches!(c.elem, ElemType::F32 | ElemType::F16 | ElemType::BF16))
    });
    let std = n.domain.is_empty() || n.domain == "ai.onnx";
    let bare = n.attrs.iter().next().is_none();
    let only = |name: &str| n.attrs.iter().all(|(a, _)| a == name);
    let fits = match n.inputs.len() {
        1 if std && lookup(UNARY, &n.op).is_some() => bare,
        1 if edit::is(n, "Gelu") => only("approximate") && gelu_form(n).is_some(),
        1 if edit::is(n, "Cast") => only("to") && cast_to(n).is_some(),
        2 => std && lookup(BINARY, &n.op).is_some() && bare,
        _ => false,
    };
    given && floats && fits && output(n).is_some()
}

/// 1 for `Gelu`'s tanh form, 0 for the erf one.
fn gelu_form(n: &Node) -> Option<i64> {
    match n.attrs.string("approximate").ok()?.map(String::as_str) {
        None | Some("none") => Some(0),
        Some("tanh") => Some(1),
        Some(_) => None,
    }
}

/// `Cast`'s `to`, where it is f32, f16 or bf16.
fn cast_to(n: &Node) -> Option<i64> {
    let to = *n.attrs.int("to").ok()??;
    let elem = ElemType::from_code(i32::try_from(to).ok()?).ok()?;
    matches!(elem, ElemType::F32 | ElemType::F16 | ElemType::BF16).then_some(to)
}

/// The `Chain` node of `members` (in run order, the output's last).
fn chain_node(g: &Graph, members: &[usize]) -> Node {
    let inputs = external(g, members);
    let mut at: HashMap<ValueId, i64> = (inputs.iter().enumerate())
        .map(|(i, &v)| (v, i as i64))
        .collect();
    let mut parts: Vec<Part> = Vec::new();
    let next = |parts: &Vec<Part>| (inputs.len() + parts.len()) as i64;
    for &m in members {
        let n = &g.nodes[m];
        let mut args = [-1; 2];
        for (k, (v, scalar)) in operands(g, n).into_iter().enumerate() {
            args[k] = match scalar {
                Some(c) => {
                    parts.push(Part {
                        op: "Constant".into(),
                        args: [-1, c.rank as i64],
                        int: c.code,
                        float: c.value,
                    });
                    next(&parts) - 1
                }
                None => at.get(&v).copied().unwrap_or(-1),
            };
        }
        let int = if edit::is(n, "Cast") {
            cast_to(n).unwrap_or(1)
        } else {
            gelu_form(n).unwrap_or(0)
        };
        parts.push(Part {
            op: n.op.clone(),
            args,
            int,
            float: 0.0,
        });
        if let Some(o) = output(n) {
            at.insert(o, next(&parts) - 1);
        }
    }
    let last = &g.nodes[members[members.len() - 1]];
    Node {
        name: last.name.clone(),
        op: "Chain".into(),
        domain: DOMAIN.into(),
        inputs: inputs.into_iter().map(Some).collect(),
        outputs: last.outputs.clone(),
        attrs: attrs(&parts),
    }
}
