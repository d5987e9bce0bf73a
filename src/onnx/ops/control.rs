//! Control flow: `If` (one of two subgraphs, by a condition) and `Loop` (a subgraph run
//! while a trip count and a condition allow, its loop-carried values (tensors or sequences)
//! passed on and its scan outputs stacked). Subgraphs read the values of the graphs around
//! them by name; their nodes are checked at load with the main graph's. Both run as futures
//! the session awaits ([`super::Flow`]): a subgraph's run, and the device values a condition
//! or trip count is read back from, are awaited rather than waited for, as a browser needs.

use super::{flow, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::elem::ElemType;
use crate::onnx::graph::{Dim, Graph, Node};
use crate::onnx::plan::run_body;
use crate::onnx::value::{HostData, HostTensor, Val};

/// The control-flow operators.
pub(super) const OPS: &[OpDef] = &[
    flow("If", |c| Box::pin(if_(c)))
        .outputs(usize::MAX)
        .refusing(check_if),
    flow("Loop", |c| Box::pin(loop_(c)))
        .outputs(usize::MAX)
        .refusing(check_loop),
];

/// A condition's truth: one element, non-zero. A device value (a bool or number the device
/// computed) is read back.
fn truth(c: &Ctx<'_>, h: HostTensor, what: &str) -> Result<bool> {
    match h.to_f64().as_slice() {
        [x] => Ok(*x != 0.0),
        other => Err(c.error(format!(
            "{what} has {} elements (shape {:?}); expected one",
            other.len(),
            h.shape
        ))),
    }
}

async fn if_(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let branch = if truth(c, c.host(0)?, "the condition")? {
        "then_branch"
    } else {
        "else_branch"
    };
    run_body(c, branch, Vec::new()).await
}

/// The subgraph `name` of `node`, if it has one.
fn graph<'n>(node: &'n Node, name: &str) -> Option<&'n Graph> {
    node.attrs.graph(name).ok().flatten().map(|g| &**g)
}

/// `If` needs both branches, each giving as many outputs as the node has.
fn check_if(node: &Node) -> Option<String> {
    for name in ["then_branch", "else_branch"] {
        let Some(g) = graph(node, name) else {
            return Some(format!("it has no GRAPH attribute '{name}'"));
        };
        if g.outputs.len() != node.outputs.len() {
            return Some(format!(
                "{name} gives {} outputs; the node has {}",
                g.outputs.len(),
                node.outputs.len()
            ));
        }
    }
    None
}

/// `Loop`'s body takes the iteration number, the condition and N loop-carried values, and
/// gives the condition, the N values and K scan outputs; the node reads the trip count, the
/// condition and N initial values, and writes at most N + K outputs.
fn check_loop(node: &Node) -> Option<String> {
    let Some(body) = graph(node, "body") else {
        return Some("it has no GRAPH attribute 'body'".into());
    };
    let Some(carried) = body.inputs.len().checked_sub(2) else {
        return Some(format!(
            "its body takes {} inputs; expected the iteration number, the condition and \
             the loop-carried values",
            body.inputs.len()
        ));
    };
    if node.inputs.len() != 2 + carried {
        return Some(format!(
            "it has {} inputs; its body carries {carried} values, so expected {}",
            node.inputs.len(),
            2 + carried
        ));
    }
    if body.outputs.len() < 1 + carried || node.outputs.len() > body.outputs.len() - 1 {
        return Some(format!(
            "its body gives {} outputs for {carried} carried values and the node has {}",
            body.outputs.len(),
            node.outputs.len()
        ));
    }
    None
}

/// A host scalar of element type `elem`.
fn scalar(elem: ElemType, v: i64) -> Val {
    Val::Host(HostTensor {
        elem,
        shape: vec![],
        data: HostData::I64(vec![v]),
    })
}

async fn loop_(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let trips = match c.opt_host(0)? {
        Some(h) => match h.to_i64().as_slice() {
            [m] => Some(*m),
            _ => return Err(c.error("the trip count has more than one element".into())),
        },
        None => None,
    };
    let mut cond = match c.opt_host(1)? {
        Some(h) => truth(c, h, "the condition")?,
        None => true,
    };
    let mut carried = (2..c.inputs.len())
        .map(|i| c.value(i).cloned())
        .collect::<Result<Vec<Val>>>()?;
    let (body, _) = c.body("body")?;
    let n = carried.len();
    let mut scans: Vec<Vec<Val>> = vec![Vec::new(); body.outputs.len() - 1 - n];
    let mut i = 0;
    while cond && trips.is_none_or(|m| i < m) {
        let mut inputs = vec![scalar(ElemType::I64, i), scalar(ElemType::Bool, 1)];
        inputs.append(&mut carried);
        let mut out = run_body(c, "body", inputs).await?.into_iter();
        let next = out.next();
        let next = next.unwrap_or(scalar(ElemType::Bool, 0));
        cond = truth(c, next.to_host().await?, "the body's condition")?;
        carried = out.by_ref().take(n).collect();
        for (scan, v) in scans.iter_mut().zip(out) {
            scan.push(v);
        }
        i += 1;
    }
    let mut outputs = carried;
    for (k, scan) in scans.into_iter().enumerate() {
        outputs.push(stack(c, body, 1 + n + k, scan)?);
    }
    Ok(outputs)
}

/// A scan output's values of every iteration stacked on a new first axis; with no iteration,
/// an empty tensor of the shape the body declares for output `slot`.
fn stack(c: &Ctx<'_>, body: &Graph, slot: usize, parts: Vec<Val>) -> Result<Val> {
    let Some(first) = parts.first() else {
        let value = &body.values[body.outputs[slot]];
        let mut shape = vec![0];
        for d in value.shape.iter().flatten() {
            match d {
                Dim::Fixed(n) => shape.push(*n),
                _ => {
                    return Err(c.error(format!(
                        "the loop ran no iteration and scan output '{}' has no fixed shape",
                        value.name
                    )))
                }
            }
        }
        let elem = value.elem.unwrap_or(ElemType::F32);
        let data = match elem {
            ElemType::F32 | ElemType::F64 | ElemType::F16 | ElemType::BF16 => {
                HostData::F32(Vec::new())
            }
            _ => HostData::I64(Vec::new()),
        };
        return Ok(Val::Host(HostTensor { elem, shape, data }));
    };
    let each = (first.shape()).map_err(|e| c.error(format!("scan output {slot}: {e}")))?;
    let mut shape = vec![1];
    shape.extend(each);
    for p in &parts {
        if p.shape()? != each {
            return Err(c.error(format!(
                "scan output {slot} changes shape between iterations; expected {each:?} each time"
            )));
        }
    }
    let hosts: Vec<HostTensor> = parts
        .iter()
        .filter_map(Val::as_host)
        .map(|h| HostTensor {
            shape: shape.clone(),
            ..h.clone()
        })
        .collect();
    if hosts.len() == parts.len() {
        return Ok(Val::Host(super::shape::host_concat(&hosts, 0)));
    }
    let tensors = parts
        .iter()
        .map(|p| p.tensor(c.device)?.reshape(&shape))
        .collect::<Result<Vec<_>>>()?;
    let refs: Vec<&crate::Tensor> = tensors.iter().collect();
    Ok(Val::Device(crate::ops::concat::concat(c.queue, &refs, 0)?))
}
