//! Index selection (gather) along an axis, and `flip`, a gather: 32-bit words of any dtype
//! move (i64 as pairs of them).

backend_modules!();

use super::cost::OpCost;
use super::{backends, launch, Lift, OpRequest, Operand};
use crate::{DType, Error, Queue, Result, Tensor};

/// What gather does with an index outside `[-len, len)` of its axis (indices in `[-len, 0)`
/// count from the end, as in numpy, ONNX and PyTorch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IndexMode {
    /// The next read on the queue by the thread that recorded the gather (or its replay, in
    /// a capture), or its `Queue::finish`, fails with `INVALID`, naming the first offending
    /// position (the output there is 0; later reads return it).
    #[default]
    Error,
    /// The nearest end of the axis (numpy's `take(mode='clip')`, after negative indices).
    Clip,
    /// 0 (of the element's dtype).
    Fill,
}

impl IndexMode {
    /// The kernels' code: 0 error, 1 clip, 2 fill.
    fn code(self) -> u32 {
        match self {
            IndexMode::Error => 0,
            IndexMode::Clip => 1,
            IndexMode::Fill => 2,
        }
    }

    /// The mode named `name`: `error`, `clip` or `fill`.
    pub fn from_name(name: &str) -> Option<IndexMode> {
        [
            ("error", IndexMode::Error),
            ("clip", IndexMode::Clip),
            ("fill", IndexMode::Fill),
        ]
        .into_iter()
        .find_map(|(n, m)| (n == name).then_some(m))
    }
}

/// The entry of an axis of `len` that index `v` picks: `v`, or `len + v` for `v` in
/// `[-len, 0)`; outside `[-len, len)`, the nearest end under [`IndexMode::Clip`] (none on an
/// empty axis), else none. The kernels of every backend follow it.
pub fn resolve_index(v: i64, len: usize, mode: IndexMode) -> Option<usize> {
    let len = i64::try_from(len).unwrap_or(i64::MAX);
    let t = if v < 0 { v.checked_add(len)? } else { v };
    if (0..len).contains(&t) {
        return Some(t as usize);
    }
    (mode == IndexMode::Clip && len > 0).then(|| if t < 0 { 0 } else { (len - 1) as usize })
}

/// Select entries of `x` along `axis` by `indices` (i32, u32 or i64, of any rank), as numpy's
/// `take` and ONNX's Gather: the result's shape is `x`'s with `axis` replaced by the indices'
/// shape. Negative indices count from the end; one outside `[-len, len)` makes this thread's
/// next read on `queue` fail with `INVALID` ([`IndexMode::Error`]; [`gather_with`] takes the
/// others).
pub fn gather(queue: &Queue, x: &Tensor, axis: usize, indices: &Tensor) -> Result<Tensor> {
    gather_with(queue, x, axis, indices, IndexMode::Error)
}

/// [`gather`] with `mode` deciding what an index outside `[-len, len)` gives.
pub fn gather_with(
    queue: &Queue,
    x: &Tensor,
    axis: usize,
    indices: &Tensor,
    mode: IndexMode,
) -> Result<Tensor> {
    // The kernels move 32-bit words: 16- and 8-bit values travel widened (exactly).
    let lift = Lift::words("gather", &[x])?;
    lift.down(
        queue,
        gather_words(queue, &lift.up(queue, x)?, axis, indices, mode)?,
    )
}

/// The index kind the kernels take for `indices`' dtype (0 u32, 1 i32, 2 i64), or an error
/// naming `op`.
pub(crate) fn index_kind(op: &'static str, indices: &Tensor) -> Result<u32> {
    Ok(match indices.dtype() {
        DType::U32 => 0,
        DType::I32 => 1,
        DType::I64 => 2,
        other => {
            return Err(Error::DType {
                op,
                expected: "i32, u32 or i64 indices".into(),
                got: other.to_string(),
            })
        }
    })
}

fn gather_words(
    queue: &Queue,
    x: &Tensor,
    axis: usize,
    indices: &Tensor,
    mode: IndexMode,
) -> Result<Tensor> {
    queue.device().check_same(x.device(), "gather input")?;
    queue
        .device()
        .check_same(indices.device(), "gather indices")?;
    let kind = index_kind("gather", indices)?;
    let shape = x.shape();
    if axis >= shape.len() {
        return Err(Error::OutOfRange(format!(
            "gather axis {axis} of a rank-{} tensor: expected an axis below {}",
            shape.len(),
            shape.len()
        )));
    }
    let count = indices.numel();
    let out_shape = [&shape[..axis], indices.shape(), &shape[axis + 1..]].concat();
    let out = Tensor::uninit(queue, &out_shape, x.dtype())?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let x = x.contiguous_on(queue)?;
    let flat = indices.contiguous_on(queue)?.reshape(&[count])?;
    let flat = if kind == 2 {
        super::common::words::flat_words(&flat)
    } else {
        flat
    };
    let status = match mode {
        IndexMode::Error => {
            let key = format!("gather {:?} of {shape:?} along {axis}", indices.shape());
            Some(queue.check_word(key, out_of_range(indices.shape(), shape, axis))?)
        }
        _ => None,
    };
    // 8-byte elements move as two words each: the inner extent counts words.
    let words = x.dtype().size() / 4;
    let (outer, len, inner) = (
        shape[..axis].iter().product(),
        shape[axis],
        shape[axis + 1..].iter().product::<usize>() * words,
    );
    let (x, o) = if words == 2 {
        use super::common::words::flat_words;
        (flat_words(&x), flat_words(&out))
    } else {
        (x, out.clone())
    };
    let status = status.as_ref().map(Tensor::operand);
    launch(
        queue,
        &Gather {
            x: x.operand(),
            indices: flat.operand(),
            kind,
            outer,
            len,
            inner,
            count,
            mode,
            status,
            out: o.operand(),
        },
        None,
    )?;
    Ok(out)
}

/// The message of an index outside its axis, from its flat position in `indices`.
fn out_of_range(indices: &[usize], x: &[usize], axis: usize) -> crate::runtime::checks::Describe {
    let (indices, x, len) = (indices.to_vec(), x.to_vec(), x[axis]);
    std::sync::Arc::new(move |flat| {
        let mut at = vec![0; indices.len()];
        let mut rest = flat as usize;
        for (a, &n) in at.iter_mut().zip(&indices).rev() {
            (*a, rest) = (rest % n.max(1), rest / n.max(1));
        }
        format!(
            "gather: the index at {at:?} of indices {indices:?} is outside [-{len}, {len}), axis \
                {axis} of {x:?}: expected an index in that range (IndexMode Clip or Fill choose \
                another answer)"
        )
    })
}

/// The extent of `axis` of `x`, or an error naming `op`.
pub(crate) fn extent(op: &str, x: &Tensor, axis: usize) -> Result<usize> {
    x.shape().get(axis).copied().ok_or_else(|| {
        Error::OutOfRange(format!(
            "{op} axis {axis} of a rank-{} tensor: expected an axis below {}",
            x.rank(),
            x.rank()
        ))
    })
}

/// `x` with its elements along `axis` in reverse order (numpy's `flip`): a gather.
pub fn flip(queue: &Queue, x: &Tensor, axis: usize) -> Result<Tensor> {
    let n = extent("flip", x, axis)?;
    let last = u32::try_from(n).map_err(|_| Error::Limit {
        what: "elements along a flipped axis".into(),
        value: n as u64,
        limit: "u32 indices",
        max: u32::MAX.into(),
    })?;
    let order: Vec<u32> = (0..last).rev().collect();
    gather_with(
        queue,
        x,
        axis,
        &Tensor::from_slice(queue.device(), &order, &[n])?,
        IndexMode::Fill,
    )
}

/// `out[o, j, i] = x[o, t, i]` for contiguous `x: [outer, len, inner]`, where `t` is
/// [`resolve_index`] of `indices[j]` (`kind` 0 u32, 1 i32, 2 i64 as word pairs, low first);
/// where it gives none, the output is 0, and in [`IndexMode::Error`] the kernel lowers the
/// `status` word to the least such `j`.
pub(crate) struct Gather<'a> {
    pub x: Operand<'a>,
    pub indices: Operand<'a>,
    pub kind: u32,
    pub outer: usize,
    pub len: usize,
    pub inner: usize,
    pub count: usize,
    pub mode: IndexMode,
    pub status: Option<Operand<'a>>,
    pub out: Operand<'a>,
}

impl OpRequest for Gather<'_> {
    fn cost(&self) -> OpCost {
        let bytes = self.out.layout.numel() as u64 * 8 + self.indices.layout.numel() as u64 * 4;
        OpCost {
            bytes,
            ..OpCost::simple("gather", &[&self.x, &self.indices, &self.out], 0)
        }
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        [&self.x, &self.indices, &self.out]
            .into_iter()
            .chain(self.status.as_ref())
            .collect()
    }

    backends!(gather);
}

/// The gather ops as methods, recorded on the device's default queue.
impl Tensor {
    /// Entries along `axis` picked by `indices` (see [`super::gather::gather`]).
    pub fn gather(&self, axis: usize, indices: &Tensor) -> Result<Tensor> {
        gather(&self.device().queue(), self, axis, indices)
    }
    /// [`Tensor::gather`] with `mode` for indices outside the axis (see [`gather_with`]).
    pub fn gather_with(&self, axis: usize, indices: &Tensor, mode: IndexMode) -> Result<Tensor> {
        gather_with(&self.device().queue(), self, axis, indices, mode)
    }
    /// The elements along `axis` in reverse order (see [`super::gather::flip`]).
    pub fn flip(&self, axis: usize) -> Result<Tensor> {
        flip(&self.device().queue(), self, axis)
    }
}
