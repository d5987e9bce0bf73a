//! The indexing operators. `GatherElements` and `GatherND`: the rows each index picks are
//! found on the host from the indices (read back where the device holds them), then one
//! gather moves them, on the device or, for host data, on the host. `NonZero`: the positions
//! of the non-zero elements, found on the host (their count is the output's shape). `OneHot`:
//! the indices compared with the positions along a new axis, on the device.

use super::{one, op, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::value::{HostData, HostTensor, Val};
use crate::ops::{BinaryOp, UnaryOp};
use crate::{DType, Tensor};

/// The indexing operators.
pub(super) const OPS: &[OpDef] = &[
    op("GatherElements", gather_elements),
    op("GatherND", gather_nd),
    op("NonZero", nonzero),
    op("OneHot", one_hot),
];

/// Index `i` into an axis of `len` (negative from the end), or an error naming it.
fn resolve(c: &Ctx<'_>, i: i64, len: usize) -> Result<usize> {
    let j = if i < 0 { i + len as i64 } else { i };
    usize::try_from(j)
        .ok()
        .filter(|&j| j < len)
        .ok_or_else(|| c.error(format!("index {i} is outside an axis of {len}")))
}

/// Row-major strides of `shape`.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut out = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        out[i] = out[i + 1] * shape[i + 1];
    }
    out
}

/// `GatherElements`: `out[i] = data[i with axis replaced by indices[i]]`, of the indices'
/// shape.
fn gather_elements(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let shape = c.input(0)?.shape()?.to_vec();
    let idx = c.host(1)?;
    if idx.shape.len() != shape.len() {
        return Err(c.error(format!(
            "indices {:?} and data {shape:?} differ in rank",
            idx.shape
        )));
    }
    let axis = c.axis(c.int("axis", 0)?, shape.len())?;
    let (ds, is) = (strides(&shape), strides(&idx.shape));
    let mut rows = Vec::with_capacity(idx.to_i64().len());
    for (flat, &v) in idx.to_i64().iter().enumerate() {
        let mut at = 0;
        for k in 0..shape.len() {
            let i = flat / is[k] % idx.shape[k];
            let i = if k == axis {
                resolve(c, v, shape[k])?
            } else if i < shape[k] {
                i
            } else {
                return Err(c.error(format!(
                    "indices {:?} exceed data {shape:?} on axis {k}",
                    idx.shape
                )));
            };
            at += i * ds[k];
        }
        rows.push(at);
    }
    take(c, &[shape.iter().product(), 1], &rows, idx.shape.clone())
}

/// `GatherND` with `batch_dims`: each index tuple (the indices' last axis) picks a slice of
/// `data` within its batch entry; the output is the indices' leading shape and the slice's.
fn gather_nd(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let shape = c.input(0)?.shape()?.to_vec();
    let idx = c.host(1)?;
    let b = usize::try_from(c.int("batch_dims", 0)?)
        .map_err(|_| c.error("batch_dims is negative".into()))?;
    let q = idx.shape.len();
    let m = idx.shape.last().copied().unwrap_or(0);
    if q == 0 || b >= q || b + m > shape.len() || idx.shape[..b] != shape[..b] {
        return Err(c.error(format!(
            "indices {:?} with batch_dims {b} do not index data {shape:?}",
            idx.shape
        )));
    }
    let slice: usize = shape[b + m..].iter().product();
    let per_batch: usize = shape[b..b + m].iter().product();
    let tuples = idx.shape[..q - 1].iter().product::<usize>();
    let per_batch_tuples = tuples / idx.shape[..b].iter().product::<usize>().max(1);
    let ds = strides(&shape[b..b + m]);
    let values = idx.to_i64();
    let mut rows = Vec::with_capacity(tuples);
    for t in 0..tuples {
        let mut at = (t / per_batch_tuples.max(1)) * per_batch;
        for k in 0..m {
            at += resolve(c, values[t * m + k], shape[b + k])? * ds[k];
        }
        rows.push(at);
    }
    let mut out = idx.shape[..q - 1].to_vec();
    out.extend(&shape[b + m..]);
    let total: usize = shape.iter().product();
    take(c, &[total / slice.max(1), slice], &rows, out)
}

/// Rows `rows` of input 0 viewed as `[rows, len]`, shaped `shape`.
fn take(c: &Ctx<'_>, view: &[usize], rows: &[usize], shape: Vec<usize>) -> Result<Vec<Val>> {
    if let Val::Host(h) = c.input(0)? {
        let len = view[1];
        let pick = |v: &[i64]| -> Vec<i64> {
            rows.iter()
                .flat_map(|&r| v[r * len..(r + 1) * len].iter().copied())
                .collect()
        };
        let data = match &h.data {
            HostData::I64(v) => HostData::I64(pick(v)),
            HostData::F32(v) => {
                let bits: Vec<i64> = v.iter().map(|x| i64::from(x.to_bits())).collect();
                HostData::F32(
                    pick(&bits)
                        .iter()
                        .map(|&b| f32::from_bits(b as u32))
                        .collect(),
                )
            }
        };
        return Ok(vec![Val::Host(HostTensor {
            elem: h.elem,
            shape,
            data,
        })]);
    }
    let x = c.tensor(0)?;
    if rows.is_empty() || view[1] == 0 {
        return one(Tensor::zeros(c.device, &shape, x.dtype())?);
    }
    if view[0] > i32::MAX as usize {
        return Err(c.error(format!("{} rows: more than i32 positions hold", view[0])));
    }
    // i32 positions: webgpu adapters without shader-int64 take them too.
    let p: Vec<i32> = rows.iter().map(|&r| r as i32).collect();
    let idx = Tensor::from_slice(c.device, &p, &[p.len()])?;
    let got = crate::ops::gather::gather(c.queue, &x.reshape(view)?, 0, &idx)?;
    one(got.reshape(&shape)?)
}

/// `NonZero`: the row-major positions of the non-zero elements (NaN counts, -0 does not) as
/// i64 `[rank, count]`, one row per axis, on the host. A scalar is taken as a 1-D tensor of
/// one element, as onnxruntime (and numpy) take it.
fn nonzero(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let x = c.host(0)?;
    let shape = if x.shape.is_empty() {
        vec![1]
    } else {
        x.shape.clone()
    };
    let hits: Vec<usize> = match &x.data {
        HostData::F32(v) => (0..v.len()).filter(|&i| v[i] != 0.0).collect(),
        HostData::I64(v) => (0..v.len()).filter(|&i| v[i] != 0).collect(),
    };
    let st = strides(&shape);
    let (st, shape) = (&st, &shape);
    let positions = (0..shape.len())
        .flat_map(|a| hits.iter().map(move |&h| (h / st[a] % shape[a]) as i64))
        .collect();
    let out = HostTensor::i64(vec![shape.len(), hits.len()], positions);
    Ok(vec![Val::Host(out)])
}

/// The largest depth [`one_hot`] takes: its positions are compared as f32, exact up to 2^24.
const MAX_DEPTH: i64 = 1 << 24;

/// `OneHot`: `values[1]` (on) where an index equals the position along the new axis `axis`
/// (default -1, the last), else `values[0]` (off), in the dtype of `values`. Negative indices
/// count from `depth`; indices outside `[-depth, depth)` give only off values; float indices
/// are truncated toward zero first (NaN matches nothing), and `depth` (a scalar of any
/// numeric type) too. The
/// indices, unsqueezed at `axis`, are compared with `0..depth` along it (broadcast, in f32).
fn one_hot(c: &Ctx<'_>) -> Result<Vec<Val>> {
    let given = c.host(1)?.to_i64();
    let depth = match given[..] {
        [d] if (0..=MAX_DEPTH).contains(&d) => d,
        _ => {
            return Err(c.error(format!(
                "depth is {given:?}: expected one number from 0 to 2^24"
            )))
        }
    };
    let values = c.tensor(2)?;
    if values.numel() != 2 {
        return Err(c.error(format!(
            "values has shape {:?}: expected the two values [off, on]",
            values.shape()
        )));
    }
    // The indices in f32, truncated: on the host where they are (no 64-bit kernels for i64).
    let idx = match c.input(0)? {
        Val::Host(h) => {
            let f: Vec<f32> = h.to_f64().iter().map(|v| v.trunc() as f32).collect();
            Tensor::from_slice(c.device, &f, &h.shape)?
        }
        Val::Device(t) if t.dtype().is_float() => {
            // sign(x) floor(|x|): NaN stays NaN (it matches no position), as on the host.
            let t = t.cast(DType::F32)?;
            let whole = t.unary(UnaryOp::Abs)?.unary(UnaryOp::Floor)?;
            whole.binary(BinaryOp::Mul, &t.unary(UnaryOp::Sign)?)?
        }
        v => v.tensor(c.device)?.cast(DType::F32)?,
    };
    let rank = idx.rank();
    let axis = c.axis(c.int("axis", -1)?, rank + 1)?;
    let negative = idx.binary_scalar(BinaryOp::Less, 0.0)?;
    let idx = negative.select(&idx.add_scalar(depth as f64)?, &idx)?;
    let mut shape = idx.shape().to_vec();
    shape.insert(axis, 1);
    let mut along = vec![1; rank + 1];
    along[axis] = depth as usize;
    let positions = Tensor::arange(c.device, 0.0, depth as f64, 1.0, DType::F32)?;
    let hit = idx
        .reshape(&shape)?
        .binary(BinaryOp::Equal, &positions.reshape(&along)?)?;
    let values = values.reshape(&[2])?;
    let (off, on) = (values.slice(0, 0..1)?, values.slice(0, 1..2)?);
    one(hit.select(&on.reshape(&[])?, &off.reshape(&[])?)?)
}
