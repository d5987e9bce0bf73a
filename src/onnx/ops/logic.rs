//! Comparisons, logical operators, `Where`, `IsNaN` and `IsInf`: bool results (ONNX's
//! `tensor(bool)`), on the host where every input is there (shape computations).

use super::math::{bin, broadcast_index};
use super::{one, op, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::elem::ElemType;
use crate::onnx::value::{HostData, HostTensor, Val};
use crate::ops::BinaryOp;

/// The logic operators.
pub(super) const OPS: &[OpDef] = &[
    op("Equal", |c| bin(c, BinaryOp::Equal)),
    op("Less", |c| bin(c, BinaryOp::Less)),
    op("LessOrEqual", |c| bin(c, BinaryOp::LessEqual)),
    op("Greater", |c| bin(c, BinaryOp::Greater)),
    op("GreaterOrEqual", |c| bin(c, BinaryOp::GreaterEqual)),
    op("And", |c| bin(c, BinaryOp::And)),
    op("Or", |c| bin(c, BinaryOp::Or)),
    op("Xor", |c| bin(c, BinaryOp::Xor)),
    op("Not", not),
    op("Where", where_),
    op("IsNaN", |c| one(c.tensor(0)?.isnan()?)),
    op("IsInf", is_inf),
];

fn not(c: &Ctx<'_>) -> Result<Vec<Val>> {
    if let Val::Host(h) = c.input(0)? {
        let data = HostData::I64(h.to_i64().iter().map(|&v| i64::from(v == 0)).collect());
        let elem = ElemType::Bool;
        return Ok(vec![Val::Host(HostTensor {
            elem,
            data,
            ..h.clone()
        })]);
    }
    one(c.tensor(0)?.logical_not()?)
}

/// `cond ? x : y` with broadcasting: on the host where all three are there.
fn where_(c: &Ctx<'_>) -> Result<Vec<Val>> {
    if let (Val::Host(k), Val::Host(x), Val::Host(y)) = (c.input(0)?, c.input(1)?, c.input(2)?) {
        return Ok(vec![Val::Host(host_where(k, x, y)?)]);
    }
    let (cond, x, y) = (c.tensor(0)?, c.tensor(1)?, c.tensor(2)?);
    one(cond.select(&x, &y)?)
}

fn host_where(cond: &HostTensor, x: &HostTensor, y: &HostTensor) -> Result<HostTensor> {
    use crate::base::layout::broadcast_shapes;
    let shape = broadcast_shapes(
        "Where",
        &broadcast_shapes("Where", &cond.shape, &x.shape)?,
        &y.shape,
    )?;
    let k = cond.to_f64();
    let pick = broadcast_index(&cond.shape, &shape)
        .into_iter()
        .zip(broadcast_index(&x.shape, &shape))
        .zip(broadcast_index(&y.shape, &shape))
        .map(|((ik, ix), iy)| (k[ik] != 0.0, ix, iy));
    let data = match (&x.data, &y.data) {
        (HostData::I64(a), HostData::I64(b)) => {
            HostData::I64(pick.map(|(t, i, j)| if t { a[i] } else { b[j] }).collect())
        }
        _ => {
            let (a, b) = (x.to_f64(), y.to_f64());
            let v = pick.map(|(t, i, j)| (if t { a[i] } else { b[j] }) as f32);
            HostData::F32(v.collect())
        }
    };
    Ok(HostTensor {
        elem: x.elem,
        shape,
        data,
    })
}

fn is_inf(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let positive = c.int("detect_positive", 1)? != 0;
    let negative = c.int("detect_negative", 1)? != 0;
    one(c.tensor(0)?.isinf(positive, negative)?)
}
