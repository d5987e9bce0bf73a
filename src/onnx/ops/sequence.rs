//! Sequences of tensors: made (`SequenceEmpty`, `SequenceConstruct`, `SplitToSequence`),
//! read (`SequenceAt`, `SequenceLength`, `ConcatFromSequence`), changed (`SequenceInsert`,
//! `SequenceErase`, each giving a new sequence) and mapped (`SequenceMap`, a subgraph run at
//! each position). Tensors join and leave sequences as they are, on the device or the host;
//! split parts are views of the input, and joining them runs the op API's concat.

use super::shape::{host_concat, host_gather};
use super::{flow, op, Ctx, OpDef};
use crate::base::error::{Error, Result};
use crate::onnx::elem::ElemType;
use crate::onnx::graph::{Graph, Node};
use crate::onnx::plan::run_body;
use crate::onnx::value::{HostTensor, Sequence, Val};
use crate::Tensor;

/// The sequence operators.
pub(super) const OPS: &[OpDef] = &[
    op("SequenceEmpty", empty),
    op("SequenceConstruct", construct),
    op("SequenceAt", at),
    op("SequenceInsert", insert),
    op("SequenceErase", erase),
    op("SequenceLength", length),
    op("SplitToSequence", split_to_sequence),
    op("ConcatFromSequence", concat_from_sequence),
    flow("SequenceMap", |c| Box::pin(map(c)))
        .outputs(usize::MAX)
        .refusing(check_map),
];

/// `s` as the node's output.
fn out(s: Sequence) -> Result<Vec<Val>> {
    Ok(vec![Val::Seq(s)])
}

/// A sequence's error (a tensor of another element type, a position past its end) about
/// this node.
fn about(c: &Ctx<'_>, e: Error) -> Error {
    c.error(e.to_string())
}

/// `SequenceEmpty`: no tensor, of element type `dtype` (float by default).
fn empty(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let code = c.int("dtype", 1)?;
    let elem = i32::try_from(code)
        .map_err(|_| c.error(format!("dtype {code} is not an ONNX element type")))
        .and_then(|code| ElemType::from_code(code).map_err(|e| about(c, e)))?;
    out(Sequence::empty(elem))
}

/// `SequenceConstruct`: the inputs in order, all of the first one's element type.
fn construct(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let elem = c.input(0)?.elem()?;
    let mut s = Sequence::empty(elem);
    for i in 0..c.inputs.len() {
        let item = c.input(i)?.clone();
        s.push(item)
            .map_err(|e| c.error(format!("input {i}: {e} (input 0's element type)")))?;
    }
    out(s)
}

/// Input `i`, a position in a sequence of `len` tensors (negative counts from the end), as
/// an index: of a tensor, or with `end` also one past the last (where an insertion may go).
fn position(c: &Ctx<'_>, i: usize, len: usize, end: bool) -> Result<usize> {
    let h = c.host(i)?;
    let p = match (h.elem, h.to_i64().as_slice()) {
        (ElemType::I32 | ElemType::I64, &[p]) => p,
        (elem, v) => {
            return Err(c.error(format!(
                "the position is a {elem} tensor of {} elements; expected one int32 or int64",
                v.len()
            )))
        }
    };
    let n = len as i64;
    let last = if end { n } else { n - 1 };
    if len == 0 && !end {
        return Err(c.error(format!(
            "position {p} in an empty sequence; it holds no tensor"
        )));
    }
    if p < -n || p > last {
        return Err(c.error(format!(
            "position {p} is outside a sequence of {len} tensors; expected one in [{}, {last}]",
            -n
        )));
    }
    Ok((if p < 0 { p + n } else { p }) as usize)
}

/// `SequenceAt`: the tensor at a position.
fn at(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let s = c.sequence(0)?;
    let p = position(c, 1, s.len(), false)?;
    Ok(vec![s.items()[p].clone()])
}

/// `SequenceInsert`: the sequence with a tensor inserted at a position (the end by default).
fn insert(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let mut s = c.sequence(0)?.clone();
    let item = c.input(1)?.clone();
    let p = match c.opt(2) {
        Some(_) => position(c, 2, s.len(), true)?,
        None => s.len(),
    };
    s.insert(p, item).map_err(|e| about(c, e))?;
    out(s)
}

/// `SequenceErase`: the sequence without the tensor at a position (the last by default).
fn erase(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let mut s = c.sequence(0)?.clone();
    let p = match c.opt(1) {
        Some(_) => position(c, 1, s.len(), false)?,
        None if s.is_empty() => {
            return Err(c.error("the sequence is empty; it has no tensor to erase".into()))
        }
        None => s.len() - 1,
    };
    s.remove(p).map_err(|e| about(c, e))?;
    out(s)
}

/// `SequenceLength`: how many tensors, as an int64 scalar.
fn length(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let n = c.sequence(0)?.len() as i64;
    Ok(vec![Val::Host(HostTensor::i64(vec![], vec![n]))])
}

/// The extents of `SplitToSequence`'s parts along an axis of `n`: `split` as sizes (a
/// scalar: parts of that size, the last smaller where it does not divide `n`), else parts
/// of 1.
fn part_sizes(c: &Ctx<'_>, n: usize) -> Result<Vec<usize>> {
    let Some(split) = c.opt_host(1)? else {
        return Ok(vec![1; n]);
    };
    let sizes = split.to_i64();
    if let Some(&bad) = sizes.iter().find(|&&v| v < 0) {
        return Err(c.error(format!(
            "split {sizes:?} holds {bad}; expected sizes of 0 or more"
        )));
    }
    match (split.shape.as_slice(), sizes.as_slice()) {
        ([], &[each]) if each > 0 => {
            let each = each as usize;
            Ok((0..n.div_ceil(each))
                .map(|i| each.min(n - i * each))
                .collect())
        }
        ([], _) => Err(c.error(format!("split is {sizes:?}; expected a positive scalar"))),
        ([_], _) if sizes.iter().sum::<i64>() == n as i64 => {
            Ok(sizes.iter().map(|&v| v as usize).collect())
        }
        (shape, _) => Err(c.error(format!(
            "split {sizes:?} (shape {shape:?}) does not divide an axis of {n}; expected a \
             scalar, or sizes adding up to {n}"
        ))),
    }
}

/// `SplitToSequence`: input 0 cut along `axis` into parts (see [`part_sizes`]); without
/// `split` and with `keepdims` 0, the parts lose the axis.
fn split_to_sequence(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.input(0)?;
    let shape = x.shape()?.to_vec();
    if shape.is_empty() {
        return Err(c.error("the input is a scalar; expected a tensor of rank 1 or more".into()));
    }
    let axis = c.axis(c.int("axis", 0)?, shape.len())?;
    let sizes = part_sizes(c, shape[axis])?;
    let squeeze = c.opt(1).is_none() && c.int("keepdims", 1)? == 0;
    let mut part_shape = shape.clone();
    if squeeze {
        part_shape.remove(axis);
    }
    let mut s = Sequence::empty(x.elem()?);
    let mut start = 0;
    for n in sizes {
        let part = match x {
            Val::Host(h) => {
                let picks: Vec<i64> = (start..start + n).map(|p| p as i64).collect();
                let idx = HostTensor::i64(vec![n], picks);
                let part = host_gather(c, h, axis, &idx)?;
                Val::Host(if squeeze {
                    HostTensor {
                        shape: part_shape.clone(),
                        ..part
                    }
                } else {
                    part
                })
            }
            v => {
                let part = v.tensor(c.device)?.slice(axis, start..start + n)?;
                Val::Device(if squeeze {
                    part.reshape(&part_shape)?
                } else {
                    part
                })
            }
        };
        s.push(part).map_err(|e| about(c, e))?;
        start += n;
    }
    out(s)
}

/// `ConcatFromSequence`: the tensors joined along `axis`, or with `new_axis` 1 stacked on a
/// new axis there; all of one shape but on the axis they join along.
fn concat_from_sequence(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let s = c.sequence(0)?;
    let axis = (c.attrs().int("axis")?.copied())
        .ok_or_else(|| c.error("it has no 'axis' attribute, which it needs".into()))?;
    let stack = c.int("new_axis", 0)? != 0;
    let Some(first) = s.items().first() else {
        return Err(c.error("the sequence is empty; expected at least one tensor".into()));
    };
    let rank = first.shape()?.len();
    if rank == 0 && !stack {
        return Err(c.error(
            "the tensors are scalars; expected rank 1 or more, or new_axis 1 to stack them".into(),
        ));
    }
    let axis = c.axis(axis, rank + usize::from(stack))?;
    let mut shapes = Vec::with_capacity(s.len());
    for item in s.items() {
        let mut shape = item.shape()?.to_vec();
        if stack {
            shape.insert(axis, 1);
        }
        shapes.push(shape);
    }
    let like = |a: &[usize], b: &[usize]| {
        a.len() == b.len() && (0..a.len()).all(|i| i == axis || a[i] == b[i])
    };
    if let Some(k) = shapes.iter().position(|sh| !like(sh, &shapes[0])) {
        return Err(c.error(format!(
            "tensor {k} has shape {:?}; expected {:?} (tensor 0's) on every axis but {axis}",
            s.items()[k].shape()?,
            s.items()[0].shape()?
        )));
    }
    let hosts: Vec<HostTensor> = (s.items().iter().zip(&shapes))
        .filter_map(|(v, shape)| {
            let h = v.as_host()?;
            Some(HostTensor {
                shape: shape.clone(),
                ..h.clone()
            })
        })
        .collect();
    if hosts.len() == s.len() {
        return Ok(vec![Val::Host(host_concat(&hosts, axis))]);
    }
    let tensors = (s.items().iter().zip(&shapes))
        .map(|(v, shape)| v.tensor(c.device)?.reshape(shape))
        .collect::<Result<Vec<Tensor>>>()?;
    let refs: Vec<&Tensor> = tensors.iter().collect();
    super::one(crate::ops::concat::concat(c.queue, &refs, axis)?)
}

/// The subgraph of `SequenceMap`, if the node has one.
fn map_body(node: &Node) -> Option<&Graph> {
    node.attrs.graph("body").ok().flatten().map(|g| &**g)
}

/// `SequenceMap`'s body takes one value per input of the node and gives one per output.
fn check_map(node: &Node) -> Option<String> {
    let Some(body) = map_body(node) else {
        return Some("it has no GRAPH attribute 'body'".into());
    };
    if body.inputs.len() != node.inputs.len() || body.outputs.len() < node.outputs.len() {
        return Some(format!(
            "its body takes {} inputs and gives {} outputs; the node has {} and {}",
            body.inputs.len(),
            body.outputs.len(),
            node.inputs.len(),
            node.outputs.len()
        ));
    }
    None
}

/// `SequenceMap`: the body run at each position of input 0, on the tensors there of the
/// sequence inputs (each as long as input 0) and on the tensor inputs as they are; output
/// `j` is the sequence of the body's outputs `j`. The body's runs are awaited.
async fn map(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let len = c.sequence(0)?.len();
    let (body, _) = c.body("body")?;
    for i in 1..c.inputs.len() {
        if let Val::Seq(s) = c.value(i)? {
            if s.len() != len {
                return Err(c.error(format!(
                    "input {i} holds {} tensors; expected {len}, as input 0",
                    s.len()
                )));
            }
        }
    }
    let mut outputs: Vec<Vec<Val>> = vec![Vec::with_capacity(len); body.outputs.len()];
    for p in 0..len {
        let inputs = (0..c.inputs.len())
            .map(|i| match c.value(i)? {
                Val::Seq(s) => Ok(s.items()[p].clone()),
                v => Ok(v.clone()),
            })
            .collect::<Result<Vec<Val>>>()?;
        let results = run_body(c, "body", inputs).await?;
        for (list, v) in outputs.iter_mut().zip(results) {
            list.push(v);
        }
    }
    let mut sequences = Vec::with_capacity(outputs.len());
    for (j, items) in outputs.into_iter().enumerate() {
        let declared = body.values[body.outputs[j]].elem;
        let elem = match (declared, items.first()) {
            (Some(e), _) => e,
            (None, Some(v)) => v.elem()?,
            (None, None) => {
                return Err(c.error(format!(
                    "the input sequence is empty and the body declares no element type for \
                     output {j}"
                )))
            }
        };
        sequences.push(Val::Seq(
            Sequence::new(elem, items).map_err(|e| about(c, e))?,
        ));
    }
    Ok(sequences)
}
