//! Passes over subgraphs: a pass runs over a graph, then over the bodies its nodes hold (the
//! branches of `If`, the bodies of `Loop` and `Scan`, nested ones included). During the pass
//! a body takes the constants of the graphs around it that it reads as its own, so what it
//! computes from them alone folds; those it still reads afterwards are read from outside
//! again, and a graph drops the constants that no node or body of it reads any more.

use std::collections::HashMap;

use super::{edit, Cx, Pass};
use crate::base::error::Result;
use crate::onnx::attr::Attr;
use crate::onnx::constant::Constant;
use crate::onnx::graph::{Dim, Graph, Origin};
use crate::onnx::ElemType;

/// The values of the graphs around a body by name, the nearest graph's where names repeat:
/// `Some` for a constant.
type Visible = HashMap<String, Option<Constant>>;

/// A value of a body that reads a constant from outside, as it was before the pass: its name,
/// declared type and shape, and the constant it took.
struct Taken {
    name: String,
    elem: Option<ElemType>,
    shape: Option<Vec<Dim>>,
    constant: Constant,
}

/// Runs `pass` over `g` and every subgraph in it: how many rewrites in all.
pub(super) fn everywhere(g: &mut Graph, pass: Pass, cx: &Cx<'_>) -> Result<usize> {
    over(g, pass, cx, &Visible::new())
}

/// Runs `pass` over `g`, whose enclosing graphs hold `visible`, then over its bodies.
fn over(g: &mut Graph, pass: Pass, cx: &Cx<'_>, visible: &Visible) -> Result<usize> {
    let rewrites = pass(g, cx)?;
    let holds = |n: &crate::onnx::Node| n.attrs.iter().any(|(_, a)| matches!(a, Attr::Graph(_)));
    if !g.nodes.iter().any(holds) {
        return Ok(rewrites);
    }
    let mut inner = visible.clone();
    for v in g.values.iter().filter(|v| v.origin != Origin::Outer) {
        let constant = match &v.origin {
            Origin::Constant(c) => Some(c.clone()),
            _ => None,
        };
        inner.insert(v.name.clone(), constant);
    }
    let mut inside = 0;
    for body in g.nodes.iter_mut().flat_map(|n| n.attrs.graphs_mut()) {
        let taken = take(body, &inner);
        inside += over(body, pass, cx, &inner)?;
        give_back(body, taken);
    }
    if inside > 0 {
        edit::remove(g, &[])?;
    }
    Ok(rewrites + inside)
}

/// Makes each value `body` reads from outside that `visible` has as a constant that
/// constant; gives what they were.
fn take(body: &mut Graph, visible: &Visible) -> Vec<Taken> {
    let mut taken = Vec::new();
    for v in body.values.iter_mut().filter(|v| v.origin == Origin::Outer) {
        let Some(Some(c)) = visible.get(&v.name) else {
            continue;
        };
        taken.push(Taken {
            name: v.name.clone(),
            elem: v.elem,
            shape: v.shape.clone(),
            constant: c.clone(),
        });
        v.elem = Some(c.elem);
        v.shape = Some(c.dims.iter().map(|&d| Dim::Fixed(d)).collect());
        v.origin = Origin::Constant(c.clone());
    }
    taken
}

/// Makes the values [`take`] made constants that `body` still holds read from outside again.
fn give_back(body: &mut Graph, taken: Vec<Taken>) {
    for t in taken {
        let Some(id) = body.find(&t.name) else {
            continue;
        };
        let v = &mut body.values[id];
        if matches!(&v.origin, Origin::Constant(c) if *c == t.constant) {
            v.origin = Origin::Outer;
            v.elem = t.elem;
            v.shape = t.shape;
        }
    }
}
