//! `Slice`: starts, ends, axes and steps (attributes before opset 10, inputs from it), with
//! ONNX's clamping of out-of-range and negative bounds.

use super::shape::host_gather;
use super::{one, Ctx};
use crate::base::error::Result;
use crate::onnx::value::{HostTensor, Val};
use crate::Tensor;

/// The positions one axis of `len` keeps, in order.
fn picks(start: i64, end: i64, step: i64, len: usize) -> Vec<i64> {
    let n = len as i64;
    let norm = |v: i64| if v < 0 { v.saturating_add(n) } else { v };
    let (start, end) = if step > 0 {
        (norm(start).clamp(0, n), norm(end).clamp(0, n))
    } else {
        (norm(start).clamp(0, n - 1), norm(end).clamp(-1, n - 1))
    };
    let mut out = Vec::new();
    let mut i = start;
    while (step > 0 && i < end) || (step < 0 && i > end) {
        out.push(i);
        i += step;
    }
    out
}

/// Each sliced axis with the positions it keeps.
fn plan(c: &Ctx<'_>, shape: &[usize]) -> Result<Vec<(usize, Vec<i64>)>> {
    let list = |name: &str, i: usize| -> Result<Option<Vec<i64>>> {
        if c.opset < 10 {
            c.int_list(name)
        } else {
            c.ints(i)
        }
    };
    let starts = list("starts", 1)?.ok_or_else(|| c.error("starts are missing".into()))?;
    let ends = list("ends", 2)?.ok_or_else(|| c.error("ends are missing".into()))?;
    let axes = list("axes", 3)?.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = if c.opset < 10 { None } else { c.ints(4)? };
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if [ends.len(), axes.len(), steps.len()]
        .iter()
        .any(|&n| n != starts.len())
    {
        return Err(c.error(format!(
            "starts {starts:?}, ends {ends:?}, axes {axes:?} and steps {steps:?} differ in length"
        )));
    }
    let mut out = Vec::new();
    for i in 0..starts.len() {
        let axis = c.axis(axes[i], shape.len())?;
        if steps[i] == 0 {
            return Err(c.error(format!("step {i} is 0")));
        }
        out.push((axis, picks(starts[i], ends[i], steps[i], shape[axis])));
    }
    Ok(out)
}

pub(super) fn slice(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let plan = plan(c, c.input(0)?.shape()?)?;
    if let Val::Host(h) = c.input(0)? {
        let mut h = h.clone();
        for (axis, p) in plan {
            h = host_gather(c, &h, axis, &HostTensor::i64(vec![p.len()], p))?;
        }
        return Ok(vec![Val::Host(h)]);
    }
    let mut x = c.tensor(0)?;
    for (axis, p) in plan {
        x = take(c, &x, axis, &p)?;
    }
    one(x)
}

/// `x` at positions `p` of `axis`: a view for a run of consecutive ones, else a gather.
fn take(c: &Ctx<'_>, x: &Tensor, axis: usize, p: &[i64]) -> Result<Tensor> {
    let consecutive = p.windows(2).all(|w| w[1] == w[0] + 1);
    match p.first() {
        None => x.slice(axis, 0..0),
        Some(&first) if consecutive => {
            let first = first as usize;
            x.slice(axis, first..first + p.len())
        }
        Some(_) => {
            // i32 indices: webgpu adapters without shader-int64 take them too.
            let p: Vec<i32> = p.iter().map(|&v| v as i32).collect();
            let idx = Tensor::from_slice(c.device, &p, &[p.len()])?;
            crate::ops::gather::gather(c.queue, x, axis, &idx)
        }
    }
}
