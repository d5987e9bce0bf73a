//! Dtype casts, `where` selection, index selection (gather) along an axis, and cumulative
//! sums. Casts, `where` and gather move 32-bit words of any dtype (i64 as pairs of them, casts
//! of i64 through their own kernels).

backend_modules!();

use super::cost::OpCost;
use super::elementwise::check_f32;
use super::{backends, launch, Launch, Lift, Operand};
use crate::base::layout::{broadcast_shapes, check_rank};
use crate::{DType, Error, Queue, Result, Tensor};

/// Convert `bits` (one element of dtype `from`, 16-bit types in the low half) to dtype `to`,
/// as Rust's `as` does: floats to integers truncate toward zero and saturate, NaN becomes 0;
/// i32 <-> u32 keep the bits (two's complement). Everything else goes through f32: integers
/// round to the nearest f32, f32 rounds to nearest-even f16 / bf16 (overflow gives inf), and
/// f16 / bf16 widen exactly. For i64 see [`cast_bits64`].
pub fn cast_bits(bits: u32, from: DType, to: DType) -> u32 {
    cast_bits64(u64::from(bits), from, to) as u32
}

/// [`cast_bits`] for elements of up to 64 bits (i64 whole, others in the low bits): between
/// integer types as Rust's `as` (i64 -> i32 / u32 keeps the low 32 bits, i32 sign-extends
/// and u32 zero-extends to i64); i64 -> float rounds to the nearest f32 (then f16 / bf16);
/// float -> i64 truncates toward zero and saturates, NaN becomes 0.
pub fn cast_bits64(bits: u64, from: DType, to: DType) -> u64 {
    use half::{bf16, f16};
    if from == to {
        return bits;
    }
    let int = match from {
        DType::I32 => Some(i64::from(bits as u32 as i32)),
        DType::U32 => Some(i64::from(bits as u32)),
        DType::I64 => Some(bits as i64),
        _ => None,
    };
    let f = match (from, int) {
        (DType::F32, _) => f32::from_bits(bits as u32),
        (DType::F16, _) => f16::from_bits(bits as u16).to_f32(),
        (DType::BF16, _) => bf16::from_bits(bits as u16).to_f32(),
        (_, Some(i)) if to.is_integer() => return if to == DType::I64 { i as u64 } else { u64::from(i as u32) },
        (_, i) => i.unwrap_or(0) as f32,
    };
    match to {
        DType::F32 => f.to_bits().into(),
        DType::I32 => u64::from((f as i32) as u32),
        DType::U32 => u64::from(f as u32),
        DType::I64 => (f as i64) as u64,
        DType::F16 => f16::from_f32(f).to_bits().into(),
        DType::BF16 => bf16::from_f32(f).to_bits().into(),
    }
}

/// `x` converted to `dtype` (see [`cast_bits`] for the rules). A view of the same dtype is
/// copied as is.
pub fn cast(queue: &Queue, x: &Tensor, dtype: DType) -> Result<Tensor> {
    queue.device().check_same(x.device(), "cast")?;
    let out = Tensor::uninit(queue, x.shape(), dtype)?;
    if x.dtype() == dtype && dtype.size() == 8 {
        // Moved as words: no 64-bit arithmetic needed.
        super::copy::copy_into(queue, x, &out)?;
    } else if out.numel() > 0 {
        launch(queue, &Cast { x: x.operand(), from: x.dtype(), to: dtype, out: out.operand() }, None)?;
    }
    Ok(out)
}

/// `cond ? a : b` elementwise with numpy broadcasting of all three. `cond` is u32, i32, i64 or
/// f32 (true where non-zero; NaN counts as true); `a` and `b` share any dtype.
pub fn where_(queue: &Queue, cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    // The kernels move 32-bit words: 16-bit values travel widened to f32 (exactly).
    // An i64 condition as u32 words, non-zero exactly where the integer is.
    let cond = if cond.dtype() == DType::I64 { low_or_max(queue, cond)? } else { super::widen(queue, cond)? };
    let lift = Lift::of("where", &[a, b])?;
    lift.down(queue, where_words(queue, &cond, &lift.up(queue, a)?, &lift.up(queue, b)?)?)
}

fn where_words(queue: &Queue, cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    for (what, t) in [("where condition", cond), ("where a", a), ("where b", b)] {
        queue.device().check_same(t.device(), what)?;
    }
    if a.dtype() != b.dtype() {
        return Err(Error::DType { op: "where", expected: format!("b of a's dtype {}", a.dtype()), got: b.dtype().to_string() });
    }
    let shape = broadcast_shapes("where", &broadcast_shapes("where", cond.shape(), a.shape())?, b.shape())?;
    check_rank("where", &shape)?;
    let (c, a, b) = (cond.broadcast_to(&shape)?, a.broadcast_to(&shape)?, b.broadcast_to(&shape)?);
    let out = Tensor::uninit(queue, &shape, a.dtype())?;
    if out.numel() == 0 {
        return Ok(out);
    }
    // i64 values move as both their words, the condition read for each.
    let w = super::common::words::as_words("where", &[&c, &a, &b, &out])?;
    launch(queue, &Where { cond: w[0].operand(), cond_dtype: c.dtype(), a: w[1].operand(), b: w[2].operand(), out: w[3].operand() }, None)?;
    Ok(out)
}

/// The word a gather writes for an index outside `0..len`: NaN for f32, 0 for integers
/// (kernels cannot raise errors, and no memory outside `x` is read).
pub fn gather_fill(dtype: DType) -> u32 {
    if dtype == DType::F32 {
        0x7fc0_0000
    } else {
        0
    }
}

/// Select entries of `x` along `axis` by `indices` (a rank-1 i32, u32 or i64 tensor), like
/// `index_select`: the result has `x`'s shape with `axis` replaced by `indices.len()`.
/// An index outside `0..x.shape()[axis]` yields [`gather_fill`].
pub fn gather(queue: &Queue, x: &Tensor, axis: usize, indices: &Tensor) -> Result<Tensor> {
    // The kernels move 32-bit words: 16-bit values travel widened to f32 (exactly).
    let lift = Lift::of("gather", &[x])?;
    // i64 indices as u32 ones selecting the same entries (an index past u32 is out of range).
    let indices = if indices.dtype() == DType::I64 { low_or_max(queue, indices)? } else { indices.clone() };
    lift.down(queue, gather_words(queue, &lift.up(queue, x)?, axis, &indices)?)
}

/// Each element of the i64 view `t` as a u32: its low word where its high word is 0, else
/// `u32::MAX` (non-zero exactly where `t` is, and equal to it wherever it fits in u32). Words
/// moved by `where`, no 64-bit arithmetic.
fn low_or_max(queue: &Queue, t: &Tensor) -> Result<Tensor> {
    use super::common::words::word_of;
    where_words(queue, &word_of(t, 1), &Tensor::from_slice(queue.device(), &[u32::MAX], &[1])?, &word_of(t, 0))
}

fn gather_words(queue: &Queue, x: &Tensor, axis: usize, indices: &Tensor) -> Result<Tensor> {
    queue.device().check_same(x.device(), "gather input")?;
    queue.device().check_same(indices.device(), "gather indices")?;
    if !matches!(indices.dtype(), DType::I32 | DType::U32) {
        return Err(Error::DType { op: "gather", expected: "i32, u32 or i64 indices".into(), got: indices.dtype().to_string() });
    }
    if indices.rank() != 1 {
        return Err(Error::shape("gather", format!("indices have shape {:?}: expected rank 1", indices.shape())));
    }
    let shape = x.shape();
    if axis >= shape.len() {
        return Err(Error::OutOfRange(format!("gather axis {axis} of a rank-{} tensor: expected an axis below {}", shape.len(), shape.len())));
    }
    let count = indices.numel();
    let mut out_shape = shape.to_vec();
    out_shape[axis] = count;
    let (x, indices) = (x.contiguous_on(queue)?, indices.contiguous_on(queue)?);
    let out = Tensor::uninit(queue, &out_shape, x.dtype())?;
    if out.numel() > 0 {
        // 8-byte elements move as two words each: the inner extent counts words.
        let words = x.dtype().size() / 4;
        let (outer, len, inner) = (shape[..axis].iter().product(), shape[axis], shape[axis + 1..].iter().product::<usize>() * words);
        let fill = gather_fill(x.dtype());
        let (x, o) = if words == 2 {
            use super::common::words::flat_words;
            (flat_words(&x), flat_words(&out))
        } else {
            (x, out.clone())
        };
        launch(queue, &Gather { x: x.operand(), indices: indices.operand(), signed: indices.dtype() == DType::I32, outer, len, inner, count, fill, out: o.operand() }, None)?;
    }
    Ok(out)
}

/// Cumulative sum of `x` along `axis`: `out[.., j, ..] = sum of x[.., 0..=j, ..]`. Floats
/// sum in f32 (f16 / bf16 lifted); i32, u32 and i64 in their own type, wrapping as numpy's do.
pub fn cumsum(queue: &Queue, x: &Tensor, axis: usize) -> Result<Tensor> {
    if x.dtype().is_integer() {
        return cumsum_values(queue, x, axis);
    }
    let lift = Lift::of("cumsum", &[x])?;
    lift.down(queue, cumsum_values(queue, &lift.up(queue, x)?, axis)?)
}

/// The extent of `axis` of `x`, or an error naming `op`.
fn extent(op: &str, x: &Tensor, axis: usize) -> Result<usize> {
    x.shape().get(axis).copied().ok_or_else(|| Error::OutOfRange(format!("{op} axis {axis} of a rank-{} tensor: expected an axis below {}", x.rank(), x.rank())))
}

/// `x` with its elements along `axis` in reverse order (numpy's `flip`): a gather.
pub fn flip(queue: &Queue, x: &Tensor, axis: usize) -> Result<Tensor> {
    let n = extent("flip", x, axis)?;
    let last = u32::try_from(n).map_err(|_| Error::Limit { what: "elements along a flipped axis".into(), value: n as u64, limit: "u32 indices", max: u32::MAX.into() })?;
    let order: Vec<u32> = (0..last).rev().collect();
    gather(queue, x, axis, &Tensor::from_slice(queue.device(), &order, &[n])?)
}

/// Options of [`cumsum_with`]: ONNX CumSum's attributes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CumsumOptions {
    /// Leave each element out of its own sum: the first sum is 0.
    pub exclusive: bool,
    /// Sum from the end of the axis towards its start.
    pub reverse: bool,
}

/// Cumulative sum along `axis` as ONNX's CumSum: with `exclusive` each element's sum leaves
/// it out (the first is 0), with `reverse` the sums run from the end. Exact: the inclusive
/// scan of [`cumsum`] on `x` flipped along the axis (for `reverse`), shifted by one element
/// behind a zero (for `exclusive`), never a difference (which would turn inf - inf into NaN).
pub fn cumsum_with(queue: &Queue, x: &Tensor, axis: usize, options: CumsumOptions) -> Result<Tensor> {
    let n = extent("cumsum", x, axis)?;
    let x = if options.reverse { flip(queue, x, axis)? } else { x.clone() };
    let mut y = cumsum(queue, &x, axis)?;
    if options.exclusive && n > 0 {
        let mut one = y.shape().to_vec();
        one[axis] = 1;
        let zeros = Tensor::zeros(queue.device(), &one, y.dtype())?;
        y = super::concat::concat(queue, &[&zeros, &y.slice(axis, 0..n - 1)?], axis)?;
    }
    if options.reverse {
        flip(queue, &y, axis)
    } else {
        Ok(y)
    }
}

/// The cumulative sum of f32, i32, u32 or i64 values.
fn cumsum_values(queue: &Queue, x: &Tensor, axis: usize) -> Result<Tensor> {
    let dtype = x.dtype();
    if !dtype.is_integer() {
        check_f32(queue, "cumsum", x)?;
    }
    queue.device().check_same(x.device(), "cumsum")?;
    let shape = x.shape();
    if axis >= shape.len() {
        return Err(Error::OutOfRange(format!("cumsum axis {axis} of a rank-{} tensor: expected an axis below {}", shape.len(), shape.len())));
    }
    let x = x.contiguous_on(queue)?;
    let out = Tensor::uninit(queue, shape, dtype)?;
    if out.numel() > 0 {
        let (outer, len, inner) = (shape[..axis].iter().product(), shape[axis], shape[axis + 1..].iter().product());
        launch(queue, &Cumsum { x: x.operand(), dtype, outer, len, inner, out: out.operand() }, None)?;
    }
    Ok(out)
}

/// Each element of `x` (strided, with the output's shape) converted from `from` to `to`, as
/// [`cast_bits`] does; a same-dtype cast copies 16-bit views.
pub(crate) struct Cast<'a> {
    pub x: Operand<'a>,
    pub from: DType,
    pub to: DType,
    pub out: Operand<'a>,
}

impl Launch for Cast<'_> {
    fn cost(&self) -> OpCost {
        let (x, out) = (&self.x, &self.out);
        let bytes = super::cost::distinct(x) * self.from.size() as u64 + out.layout.numel() as u64 * self.to.size() as u64;
        OpCost { name: format!("cast_{}", self.to), dtype: self.from, bytes, ..OpCost::simple("", &[x, out], 0) }
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        vec![&self.x, &self.out]
    }

    backends!(cast);
}

/// `out = cond != 0 ? a : b`; all three strided views broadcast to the output's shape.
pub(crate) struct Where<'a> {
    pub cond: Operand<'a>,
    pub cond_dtype: DType,
    pub a: Operand<'a>,
    pub b: Operand<'a>,
    pub out: Operand<'a>,
}

impl Launch for Where<'_> {
    fn cost(&self) -> OpCost {
        OpCost::simple("where", &[&self.cond, &self.a, &self.b, &self.out], 0)
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        vec![&self.cond, &self.a, &self.b, &self.out]
    }

    backends!(where_);
}

/// `out[o, j, i] = x[o, indices[j], i]` for contiguous `x: [outer, len, inner]` and
/// `indices: [count]` (i32 when `signed`, else u32); an index outside `0..len` writes `fill`.
pub(crate) struct Gather<'a> {
    pub x: Operand<'a>,
    pub indices: Operand<'a>,
    pub signed: bool,
    pub outer: usize,
    pub len: usize,
    pub inner: usize,
    pub count: usize,
    pub fill: u32,
    pub out: Operand<'a>,
}

impl Launch for Gather<'_> {
    fn cost(&self) -> OpCost {
        let bytes = self.out.layout.numel() as u64 * 8 + self.indices.layout.numel() as u64 * 4;
        OpCost { bytes, ..OpCost::simple("gather", &[&self.x, &self.indices, &self.out], 0) }
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        vec![&self.x, &self.indices, &self.out]
    }

    backends!(gather);
}

/// `out[o, j, i] = sum over t <= j of x[o, t, i]` for a contiguous `[outer, len, inner]` input.
pub(crate) struct Cumsum<'a> {
    pub x: Operand<'a>,
    /// The values' dtype: f32, i32, u32 or i64 (integer sums wrap).
    pub dtype: DType,
    pub outer: usize,
    pub len: usize,
    pub inner: usize,
    pub out: Operand<'a>,
}

impl Launch for Cumsum<'_> {
    fn cost(&self) -> OpCost {
        OpCost { dtype: self.dtype, ..OpCost::simple("cumsum", &[&self.x, &self.out], self.x.layout.numel() as u64) }
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        vec![&self.x, &self.out]
    }

    backends!(cumsum);
}


/// The indexing ops as methods, recorded on the device's default queue.
impl Tensor {
    /// This tensor converted to `dtype` (see [`super::indexing::cast`]).
    pub fn cast(&self, dtype: DType) -> Result<Tensor> {
        cast(&self.device().queue(), self, dtype)
    }
    /// `self ? a : b` elementwise with broadcasting; `self` is the condition (see [`super::indexing::where_`]).
    pub fn select(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        where_(&self.device().queue(), self, a, b)
    }
    /// Entries along `axis` picked by `indices` (see [`super::indexing::gather`]).
    pub fn gather(&self, axis: usize, indices: &Tensor) -> Result<Tensor> {
        gather(&self.device().queue(), self, axis, indices)
    }
    /// Cumulative sum along `axis` (see [`super::indexing::cumsum`]).
    pub fn cumsum(&self, axis: usize) -> Result<Tensor> {
        cumsum(&self.device().queue(), self, axis)
    }
    /// Cumulative sum with ONNX's options (see [`super::indexing::cumsum_with`]).
    pub fn cumsum_with(&self, axis: usize, options: CumsumOptions) -> Result<Tensor> {
        cumsum_with(&self.device().queue(), self, axis, options)
    }
    /// The elements along `axis` in reverse order (see [`super::indexing::flip`]).
    pub fn flip(&self, axis: usize) -> Result<Tensor> {
        flip(&self.device().queue(), self, axis)
    }
}
