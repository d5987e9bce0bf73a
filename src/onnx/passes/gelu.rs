//! GELU as exporters spell it in primitives, made one `Gelu` node (opset 20's, which the
//! session runs at every opset): the erf form `x * 0.5 * (1 + erf(x / sqrt 2))` (the division
//! also a product by `1 / sqrt 2`, the halving before, after or beside `1 + erf`) and the
//! tanh form `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x³)))` (the cube a `Pow` or two
//! products), operands of each product and sum in either order.

use std::f64::consts::{FRAC_1_SQRT_2, FRAC_2_PI, SQRT_2};

use super::edit::{self, beside, input, near, next, other, output, producer, Uses};
use super::Cx;
use crate::base::error::Result;
use crate::onnx::attr::{Attr, Attrs};
use crate::onnx::graph::{Graph, ValueId};

/// Makes every GELU it finds one node; gives how many.
pub(super) fn run(g: &mut Graph, _: &Cx<'_>) -> Result<usize> {
    let uses = Uses::of(g);
    let mut dead = vec![false; g.nodes.len()];
    let mut count = 0;
    for core in 0..g.nodes.len() {
        let Some((x, mut nodes, last, tanh)) = matched(g, &uses, core) else {
            continue;
        };
        nodes.push(core);
        if nodes.iter().chain([&last]).any(|&i| dead[i]) {
            continue;
        }
        for i in nodes {
            dead[i] = true;
        }
        let n = &mut g.nodes[last];
        n.op = "Gelu".into();
        n.domain = String::new();
        n.inputs = vec![Some(x)];
        n.attrs = Attrs::default();
        if tanh {
            n.attrs = Attrs::default().with("approximate", Attr::String("tanh".into()));
        }
        count += 1;
    }
    edit::remove(g, &dead)?;
    Ok(count)
}

/// For an `Erf` or `Tanh` node `core`, the GELU around it: its input `x`, the nodes it
/// replaces but the last, the last (which becomes the `Gelu`) and whether it is the tanh form.
fn matched(g: &Graph, uses: &Uses, core: usize) -> Option<(ValueId, Vec<usize>, usize, bool)> {
    let n = &g.nodes[core];
    let tanh = edit::is(n, "Tanh");
    let (x, mut nodes) = if tanh {
        tanh_head(g, uses, core)?
    } else if edit::is(n, "Erf") {
        erf_head(g, uses, core)?
    } else {
        return None;
    };
    let (rest, last) = tail(g, uses, output(n)?, x)?;
    nodes.extend(rest);
    Some((x, nodes, last, tanh))
}

/// The node that alone feeds input 0 of node `n`.
fn feeding(g: &Graph, uses: &Uses, n: usize) -> Option<usize> {
    let v = input(&g.nodes[n], 0)?;
    producer(g, v).filter(|_| uses.sole(v) == Some(n))
}

/// `x / sqrt 2` or `x * (1 / sqrt 2)` feeding `Erf` node `e`: `x`, and that node.
fn erf_head(g: &Graph, uses: &Uses, e: usize) -> Option<(ValueId, Vec<usize>)> {
    let p = feeding(g, uses, e)?;
    let n = &g.nodes[p];
    let x = if edit::is(n, "Div") {
        input(n, 0).filter(|_| input(n, 1).is_some_and(|d| near(g, d, SQRT_2)))?
    } else if edit::is(n, "Mul") {
        beside(g, n, FRAC_1_SQRT_2)?
    } else {
        return None;
    };
    Some((x, vec![p]))
}

/// `sqrt(2 / pi) * (x + 0.044715 x³)` feeding `Tanh` node `t`: `x`, and its nodes.
fn tanh_head(g: &Graph, uses: &Uses, t: usize) -> Option<(ValueId, Vec<usize>)> {
    let p = feeding(g, uses, t)?;
    let pn = &g.nodes[p];
    let inner = beside(g, pn, FRAC_2_PI.sqrt()).filter(|_| edit::is(pn, "Mul"))?;
    let q = producer(g, inner).filter(|_| uses.sole(inner) == Some(p))?;
    let qn = &g.nodes[q];
    if !edit::is(qn, "Add") {
        return None;
    }
    let [a, b] = [input(qn, 0)?, input(qn, 1)?];
    let (x, cube) = [(a, b), (b, a)]
        .into_iter()
        .find_map(|(x, c)| Some((x, cubed(g, uses, c, x, q)?)))?;
    let mut nodes = vec![p, q];
    nodes.extend(cube);
    Some((x, nodes))
}

/// The nodes of `v = 0.044715 x³` (only node `reader` reading it), the cube `Pow(x, 3)` or
/// `x * x * x`.
fn cubed(g: &Graph, uses: &Uses, v: ValueId, x: ValueId, reader: usize) -> Option<Vec<usize>> {
    let k = producer(g, v).filter(|_| uses.sole(v) == Some(reader))?;
    let kn = &g.nodes[k];
    let c3 = beside(g, kn, 0.044715).filter(|_| edit::is(kn, "Mul"))?;
    let p3 = producer(g, c3).filter(|_| uses.sole(c3) == Some(k))?;
    let pn = &g.nodes[p3];
    if edit::is(pn, "Pow") {
        let cube = input(pn, 0) == Some(x) && input(pn, 1).is_some_and(|e| near(g, e, 3.0));
        return cube.then(|| vec![k, p3]);
    }
    let xx = other(pn, x).filter(|_| edit::is(pn, "Mul"))?;
    let sq = producer(g, xx).filter(|_| uses.sole(xx) == Some(p3))?;
    let sn = &g.nodes[sq];
    let square = edit::is(sn, "Mul") && sn.inputs == [Some(x), Some(x)];
    square.then(|| vec![k, p3, sq])
}

/// `x * 0.5 * (1 + c)` after `c` (erf or tanh), in the orders exporters write: the nodes it
/// replaces but the last, and the last.
fn tail(g: &Graph, uses: &Uses, c: ValueId, x: ValueId) -> Option<(Vec<usize>, usize)> {
    let add = next(g, uses, c, "Add")?;
    if !near(g, other(&g.nodes[add], c)?, 1.0) {
        return None;
    }
    let a = output(&g.nodes[add])?;
    let m1 = next(g, uses, a, "Mul")?;
    let o = other(&g.nodes[m1], a)?;
    if o == x || near(g, o, 0.5) {
        // (x * (1 + c)) * 0.5, or ((1 + c) * 0.5) * x.
        let m1_out = output(&g.nodes[m1])?;
        let m2 = next(g, uses, m1_out, "Mul")?;
        let rest = other(&g.nodes[m2], m1_out)?;
        let fits = if o == x {
            near(g, rest, 0.5)
        } else {
            rest == x
        };
        return fits.then(|| (vec![add, m1], m2));
    }
    // (x * 0.5) * (1 + c).
    let h = producer(g, o).filter(|_| uses.sole(o) == Some(m1))?;
    let hn = &g.nodes[h];
    let halved = edit::is(hn, "Mul") && beside(g, hn, 0.5) == Some(x);
    halved.then(|| (vec![add, h], m1))
}
