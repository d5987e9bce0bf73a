//! The session's own `ai.unicompute` `Attention` operator, which the `attention` graph pass
//! makes of scaled dot-product attention spelled in primitives: `MatMul(q, kt)`, a product by
//! `scale`, an additive mask and a `Where`, `Softmax`, `MatMul(·, v)`. It runs as the
//! library's fused [`attention`] (online softmax, the scores never stored) where the operands
//! fit it, and otherwise runs the nodes it stands for through the default domain's
//! operators, so it always gives what they give.
//!
//! Inputs: `query [.., lq, d]`, `key` transposed `[.., d, lk]`, `value [.., lk, dv]`, then an
//! optional additive mask and an optional `Where` condition. Attributes: `scale` (FLOAT, the
//! product of the scores' scales), `axis` (INT, the `Softmax`'s), `fill` (FLOAT, the `Where`'s
//! other branch), `fill_on` (INT, 1 where it takes `fill` where the condition holds, as
//! `masked_fill`), `where_first` (INT, 1 where the `Where` came before the mask's `Add`) and
//! `causal` (INT, 1 where the mask or condition given is the causal triangle: query `i` sees
//! keys `j <= i`).

use super::{one, op, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::attr::{Attr, Attrs};
use crate::onnx::value::{HostData, HostTensor, Val};
use crate::ops::attention::{attention, AttentionParams, MAX_HEAD_DIM};
use crate::{DType, Tensor};

/// The `ai.unicompute` attention operator.
pub(super) const OPS: &[OpDef] = &[op("Attention", run)];

/// The inputs of the mask and of the `Where` condition.
const MASK: usize = 3;
const COND: usize = 4;

/// Runs the fused kernel where the operands fit it, else the nodes one by one.
fn run(c: &Ctx<'_>) -> Result<Vec<Val>> {
    match fused(c)? {
        Some(t) => one(t),
        None => composed(c),
    }
}

/// The shape `a` and `b` broadcast to, numpy's way.
fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let r = a.len().max(b.len());
    let at = |s: &[usize], i: usize| (i + s.len()).checked_sub(r).map_or(1, |j| s[j]);
    (0..r)
        .map(|i| match (at(a, i), at(b, i)) {
            (x, y) if x == y || y == 1 => Some(x),
            (1, y) => Some(y),
            _ => None,
        })
        .collect()
}

/// `t` as a rank-4 view, ones put in front.
fn four(t: &Tensor) -> Result<Tensor> {
    let mut shape = vec![1; 4 - t.rank()];
    shape.extend_from_slice(t.shape());
    t.broadcast_to(&shape)
}

/// The scores' shape `[.., lq, lk]` where `q`, `kt` and `v` fit the fused kernel: f32, of
/// one rank from 2 to 4 with equal leading axes, head dimensions it takes.
fn scores_shape(q: &Tensor, kt: &Tensor, v: &Tensor) -> Option<Vec<usize>> {
    let r = q.rank();
    let f32s = [q, kt, v].iter().all(|t| t.dtype() == DType::F32);
    if !f32s || !(2..=4).contains(&r) || kt.rank() != r || v.rank() != r {
        return None;
    }
    let (qs, ks, vs) = (q.shape(), kt.shape(), v.shape());
    let lead = &qs[..r - 2];
    let [lq, d, lk, dv] = [qs[r - 2], qs[r - 1], ks[r - 1], vs[r - 1]];
    let fits = lead == &ks[..r - 2]
        && lead == &vs[..r - 2]
        && ks[r - 2] == d
        && vs[r - 2] == lk
        && [d, lk, lq].iter().all(|&n| n > 0)
        && d <= MAX_HEAD_DIM
        && dv <= MAX_HEAD_DIM;
    fits.then(|| [lead, &[lq, lk]].concat())
}

/// The fused attention of the node's inputs, or `None` where they do not fit the kernel.
fn fused(c: &Ctx<'_>) -> Result<Option<Tensor>> {
    let (q, kt, v) = (c.tensor(0)?, c.tensor(1)?, c.tensor(2)?);
    let Some(scores) = scores_shape(&q, &kt, &v) else {
        return Ok(None);
    };
    let r = scores.len();
    if c.axis(c.int("axis", -1)?, r)? != r - 1 {
        return Ok(None);
    }
    let Some((mask, causal)) = mask(c, &scores)? else {
        return Ok(None);
    };
    let params = AttentionParams {
        mask: mask.as_ref(),
        causal,
        scale: Some(c.float("scale", 1.0)?),
    };
    let k = four(&kt)?.t()?;
    let o = attention(c.queue, &four(&q)?, &k, &four(&v)?, params)?;
    let mut shape = scores[..r - 1].to_vec();
    shape.push(o.shape()[3]);
    Ok(Some(o.reshape(&shape)?))
}

/// The additive mask the fused kernel adds to scores of shape `scores`, and whether it masks
/// causally besides; `None` where a mask would not broadcast to the scores (the composed
/// nodes then broadcast the scores to it) or is not f32.
fn mask(c: &Ctx<'_>, scores: &[usize]) -> Result<Option<(Option<Tensor>, bool)>> {
    let r = scores.len();
    let triangle = |t: &Tensor| {
        let s = t.shape();
        let n = s.len();
        n >= 2 && s[..n - 2].iter().all(|&d| d == 1) && s[n - 2..] == scores[r - 2..]
    };
    let fits = |t: &Tensor| broadcast(t.shape(), scores).as_deref() == Some(scores);
    let causal_in =
        (c.int("causal", 0)? != 0).then(|| if c.opt(COND).is_some() { COND } else { MASK });
    let mut causal = false;
    let mut terms = Vec::new();
    for at in [MASK, COND] {
        let Some(t) = c.opt_tensor(at)? else {
            continue;
        };
        if !fits(&t) || (at == MASK && t.dtype() != DType::F32) {
            return Ok(None);
        }
        if causal_in == Some(at) && triangle(&t) {
            causal = true;
        } else if at == MASK {
            terms.push(t);
        } else {
            terms.push(where_mask(c, &t)?);
        }
    }
    let mask = match &terms[..] {
        [a, b] => Some(a.add(b)?),
        _ => terms.pop(),
    };
    Ok(Some((mask, causal)))
}

/// The `Where`'s condition as an additive mask: the fill where the `Where` takes it, else 0.
fn where_mask(c: &Ctx<'_>, cond: &Tensor) -> Result<Tensor> {
    let fill = Tensor::from_slice(c.device, &[c.float("fill", 0.0)?], &[])?;
    let zero = Tensor::from_slice(c.device, &[0.0f32], &[])?;
    let (a, b) = if c.int("fill_on", 0)? != 0 {
        (&fill, &zero)
    } else {
        (&zero, &fill)
    };
    crate::ops::select::where_(c.queue, cond, a, b)
}

/// A scalar of the element type of `like` holding `x`.
fn scalar(like: &Val, x: f32) -> Result<Val> {
    Ok(Val::Host(HostTensor {
        elem: like.elem()?,
        shape: Vec::new(),
        data: HostData::F32(vec![x]),
    }))
}

/// The nodes the operator stands for, run one by one by the default domain's operators.
fn composed(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let input = |i: usize| c.opt(i).cloned();
    let mut s = c.call("MatMul", vec![input(0), input(1)], Attrs::default())?;
    let scale = c.float("scale", 1.0)?;
    if scale != 1.0 {
        let k = scalar(&s, scale)?;
        s = c.call("Mul", vec![Some(s), Some(k)], Attrs::default())?;
    }
    let masked = |s: Val, cond: bool| -> Result<Val> {
        if cond {
            let fill = Some(scalar(&s, c.float("fill", 0.0)?)?);
            let (a, b) = if c.int("fill_on", 0)? != 0 {
                (fill, Some(s))
            } else {
                (Some(s), fill)
            };
            c.call("Where", vec![input(COND), a, b], Attrs::default())
        } else {
            c.call("Add", vec![Some(s), input(MASK)], Attrs::default())
        }
    };
    let mut steps = vec![false, true];
    if c.int("where_first", 0)? != 0 {
        steps.reverse();
    }
    for cond in steps {
        if c.opt(if cond { COND } else { MASK }).is_some() {
            s = masked(s, cond)?;
        }
    }
    let axis = Attrs::default().with("axis", Attr::Int(c.int("axis", -1)?));
    let p = c.call("Softmax", vec![Some(s)], axis)?;
    Ok(vec![c.call(
        "MatMul",
        vec![Some(p), input(2)],
        Attrs::default(),
    )?])
}
