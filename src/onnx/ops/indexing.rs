//! `GatherElements` and `GatherND`: the rows each index picks are found on the host from the
//! indices (read back where the device holds them), then one gather moves them, on the
//! device or, for host data, on the host.

use super::{one, op, Ctx, OpDef};
use crate::base::error::Result;
use crate::onnx::value::{HostData, HostTensor, Val};
use crate::Tensor;

/// The indexing operators.
pub(super) const OPS: &[OpDef] = &[
    op("GatherElements", gather_elements),
    op("GatherND", gather_nd),
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
    let shape = c.input(0)?.shape().to_vec();
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
    let shape = c.input(0)?.shape().to_vec();
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
