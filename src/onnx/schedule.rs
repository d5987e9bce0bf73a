//! The order a graph's nodes run in: only the nodes the outputs need, each after the nodes
//! whose values it reads, with the step after which each intermediate value can be freed.

use std::collections::VecDeque;

use super::attr::Attr;
use super::graph::{Graph, Node, Origin, ValueId};
use crate::base::error::{Error, Result};

/// A graph's run order.
#[derive(Clone, Debug, PartialEq)]
pub struct Schedule {
    /// The indices of the nodes to run, in order.
    pub order: Vec<usize>,
    /// For each value, the step (index into `order`) after which nothing reads it, so it
    /// can be freed; `None` for values that are kept: graph inputs, constants, outputs, values
    /// of enclosing graphs, and values never read.
    pub last_use: Vec<Option<usize>>,
    /// For each value, whether a scheduled node reads it or the graph gives it out; an
    /// output no one uses (Dropout's mask, say) need not be computed.
    pub used: Vec<bool>,
}

/// The values node `n` reads: its inputs and the enclosing-graph values its subgraphs read.
pub fn reads(g: &Graph, n: &Node) -> Vec<ValueId> {
    let mut out: Vec<ValueId> = n.inputs.iter().flatten().copied().collect();
    for (_, a) in n.attrs.iter() {
        if let Attr::Graph(body) = a {
            out.extend(captures(body).iter().filter_map(|name| g.find(name)));
        }
    }
    out
}

/// The names a subgraph reads from the graphs around it, its own subgraphs' included (a
/// name a nested subgraph reads that `body` does not define is read from further out).
pub fn captures(body: &Graph) -> Vec<String> {
    let mut names: Vec<String> = body
        .values
        .iter()
        .filter(|v| v.origin == Origin::Outer)
        .map(|v| v.name.clone())
        .collect();
    for n in &body.nodes {
        for (_, a) in n.attrs.iter() {
            if let Attr::Graph(inner) = a {
                names.extend(
                    captures(inner)
                        .into_iter()
                        .filter(|name| body.find(name).is_none()),
                );
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

/// The schedule of `g`: dead nodes left out, the rest in an order where every value is
/// written before it is read. A cycle is an error naming a node on it.
pub fn schedule(g: &Graph) -> Result<Schedule> {
    let producer = |v: ValueId| match g.values[v].origin {
        Origin::Node { node, .. } => Some(node),
        _ => None,
    };
    let deps: Vec<Vec<usize>> = g
        .nodes
        .iter()
        .map(|n| reads(g, n).into_iter().filter_map(producer).collect())
        .collect();
    let live = needed(g, &deps, producer);
    let order = topological(g, &deps, &live)?;
    let mut last_use = vec![None; g.values.len()];
    let mut used = vec![false; g.values.len()];
    for (step, &n) in order.iter().enumerate() {
        for v in reads(g, &g.nodes[n]) {
            used[v] = true;
            if producer(v).is_some() {
                last_use[v] = Some(step);
            }
        }
    }
    for &v in &g.outputs {
        last_use[v] = None;
        used[v] = true;
    }
    Ok(Schedule {
        order,
        last_use,
        used,
    })
}

/// Which nodes the graph's outputs need, following reads back from them.
fn needed(
    g: &Graph,
    deps: &[Vec<usize>],
    producer: impl Fn(ValueId) -> Option<usize>,
) -> Vec<bool> {
    let mut live = vec![false; g.nodes.len()];
    let mut stack: Vec<usize> = g.outputs.iter().filter_map(|&v| producer(v)).collect();
    while let Some(n) = stack.pop() {
        if !std::mem::replace(&mut live[n], true) {
            stack.extend(&deps[n]);
        }
    }
    live
}

/// Kahn's order of the live nodes, keeping file order among nodes that are ready together.
fn topological(g: &Graph, deps: &[Vec<usize>], live: &[bool]) -> Result<Vec<usize>> {
    let mut waiting: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut users = vec![Vec::new(); g.nodes.len()];
    for (n, ds) in deps.iter().enumerate() {
        for &d in ds {
            users[d].push(n);
        }
    }
    let mut ready: VecDeque<usize> = (0..g.nodes.len()).filter(|&n| waiting[n] == 0).collect();
    let mut order = Vec::new();
    while let Some(n) = ready.pop_front() {
        if live[n] {
            order.push(n);
        }
        for &u in &users[n] {
            waiting[u] -= 1;
            if waiting[u] == 0 {
                ready.push_back(u);
            }
        }
    }
    match (0..g.nodes.len()).find(|&n| live[n] && waiting[n] > 0) {
        Some(n) => Err(Error::Model(format!(
            "{} is on a cycle: it reads, through other nodes, a value it writes",
            g.nodes[n].label()
        ))),
        None => Ok(order),
    }
}
