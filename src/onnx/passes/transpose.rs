//! Transposes are views (a permute of the strides costs no copy, and the ops read strided
//! operands), so what a `Transpose` node still costs is its step: a `Transpose` of a
//! `Transpose` that only it reads becomes one `Transpose` of the composed permutation, and a
//! `Transpose` that then keeps the axes in order is dropped, its readers reading its input,
//! unless the graph gives it out or a subgraph reads it.

use super::edit::{self, input, output, producer, Uses};
use super::Cx;
use crate::base::error::Result;
use crate::onnx::attr::{Attr, Attrs};
use crate::onnx::graph::{Graph, Node, ValueId};
use crate::onnx::schedule::reads;

/// Merges and drops what transposes it can; gives how many nodes it removed.
pub(super) fn run(g: &mut Graph, _: &Cx<'_>) -> Result<usize> {
    let uses = Uses::of(g);
    let mut dead = vec![false; g.nodes.len()];
    for t in 0..g.nodes.len() {
        let Some((first, perm)) = composed(g, &uses, t).filter(|&(f, _)| !(dead[f] || dead[t]))
        else {
            continue;
        };
        dead[first] = true;
        let x = input(&g.nodes[first], 0);
        let n = &mut g.nodes[t];
        n.inputs = vec![x];
        n.attrs = Attrs::default().with("perm", Attr::Ints(perm));
    }
    let uses = Uses::of(g);
    for (t, gone) in dead.iter_mut().enumerate() {
        if *gone || !in_order(&g.nodes[t]) {
            continue;
        }
        let (Some(x), Some(y)) = (input(&g.nodes[t], 0), output(&g.nodes[t])) else {
            continue;
        };
        let Some(readers) = uses.readers(y).filter(|r| plain(g, r, y)) else {
            continue;
        };
        for r in readers {
            for v in g.nodes[r].inputs.iter_mut().flatten() {
                if *v == y {
                    *v = x;
                }
            }
        }
        *gone = true;
    }
    edit::remove(g, &dead)?;
    Ok(dead.iter().filter(|&&d| d).count())
}

/// A `Transpose` node's `perm`, where it gives one.
fn perm(n: &Node) -> Option<Vec<i64>> {
    let p = n.attrs.ints("perm").ok().flatten()?;
    edit::is(n, "Transpose").then(|| p.clone())
}

/// For `Transpose` node `t` of a `Transpose` that only `t` reads: that node and the
/// permutation of the two in one (axis `i` of the result is axis `first[second[i]]`).
fn composed(g: &Graph, uses: &Uses, t: usize) -> Option<(usize, Vec<i64>)> {
    let second = perm(&g.nodes[t])?;
    let v = input(&g.nodes[t], 0)?;
    let f = producer(g, v).filter(|_| uses.sole(v) == Some(t))?;
    let first = perm(&g.nodes[f])?;
    let at = |i: i64| usize::try_from(i).ok().and_then(|i| first.get(i).copied());
    let perm = second.iter().map(|&i| at(i)).collect::<Option<Vec<_>>>()?;
    (perm.len() == first.len()).then_some((f, perm))
}

/// Whether `n` is a `Transpose` keeping every axis in place.
fn in_order(n: &Node) -> bool {
    perm(n).is_some_and(|p| p.iter().enumerate().all(|(i, &a)| a == i as i64))
}

/// Whether `readers` read `v` as inputs only (no subgraph of theirs reads it).
fn plain(g: &Graph, readers: &[usize], v: ValueId) -> bool {
    readers.iter().all(|&r| {
        let n = &g.nodes[r];
        let direct = n.inputs.iter().filter(|&&i| i == Some(v)).count();
        reads(g, n).iter().filter(|&&i| i == v).count() == direct
    })
}
