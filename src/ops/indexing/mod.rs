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

/// What gather does with an index outside `[-len, len)` of its axis (indices in `[-len, 0)`
/// count from the end, as in numpy, ONNX and PyTorch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IndexMode {
    /// The next read on the queue by the thread that recorded the gather fails with
    /// `INVALID`, naming the first offending position (the output there is 0; later reads
    /// return it). Refused inside a capture, which makes no read.
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
        [("error", IndexMode::Error), ("clip", IndexMode::Clip), ("fill", IndexMode::Fill)]
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
pub fn gather_with(queue: &Queue, x: &Tensor, axis: usize, indices: &Tensor, mode: IndexMode) -> Result<Tensor> {
    // The kernels move 32-bit words: 16-bit values travel widened to f32 (exactly).
    let lift = Lift::of("gather", &[x])?;
    lift.down(queue, gather_words(queue, &lift.up(queue, x)?, axis, indices, mode)?)
}

/// Each element of the i64 view `t` as a u32: its low word where its high word is 0, else
/// `u32::MAX` (non-zero exactly where `t` is). Words moved by `where`, no 64-bit arithmetic.
fn low_or_max(queue: &Queue, t: &Tensor) -> Result<Tensor> {
    use super::common::words::word_of;
    where_words(queue, &word_of(t, 1), &Tensor::from_slice(queue.device(), &[u32::MAX], &[1])?, &word_of(t, 0))
}

fn gather_words(queue: &Queue, x: &Tensor, axis: usize, indices: &Tensor, mode: IndexMode) -> Result<Tensor> {
    queue.device().check_same(x.device(), "gather input")?;
    queue.device().check_same(indices.device(), "gather indices")?;
    let kind = match indices.dtype() {
        DType::U32 => 0,
        DType::I32 => 1,
        DType::I64 => 2,
        other => return Err(Error::DType { op: "gather", expected: "i32, u32 or i64 indices".into(), got: other.to_string() }),
    };
    let shape = x.shape();
    if axis >= shape.len() {
        return Err(Error::OutOfRange(format!("gather axis {axis} of a rank-{} tensor: expected an axis below {}", shape.len(), shape.len())));
    }
    let count = indices.numel();
    let out_shape = [&shape[..axis], indices.shape(), &shape[axis + 1..]].concat();
    let out = Tensor::uninit(queue, &out_shape, x.dtype())?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let x = x.contiguous_on(queue)?;
    let flat = indices.contiguous_on(queue)?.reshape(&[count])?;
    let flat = if kind == 2 { super::common::words::flat_words(&flat) } else { flat };
    let status = match mode {
        IndexMode::Error => Some(queue.check_word("gather in mode Error (the next read reports its indices; use Clip or Fill in a capture)", out_of_range(indices.shape(), shape, axis))?),
        _ => None,
    };
    // 8-byte elements move as two words each: the inner extent counts words.
    let words = x.dtype().size() / 4;
    let (outer, len, inner) = (shape[..axis].iter().product(), shape[axis], shape[axis + 1..].iter().product::<usize>() * words);
    let (x, o) = if words == 2 {
        use super::common::words::flat_words;
        (flat_words(&x), flat_words(&out))
    } else {
        (x, out.clone())
    };
    let status = status.as_ref().map(Tensor::operand);
    launch(queue, &Gather { x: x.operand(), indices: flat.operand(), kind, outer, len, inner, count, mode, status, out: o.operand() }, None)?;
    Ok(out)
}

/// The message of an index outside its axis, from its flat position in `indices`.
fn out_of_range(indices: &[usize], x: &[usize], axis: usize) -> crate::runtime::checks::Describe {
    let (indices, x, len) = (indices.to_vec(), x.to_vec(), x[axis]);
    Box::new(move |flat| {
        let mut at = vec![0; indices.len()];
        let mut rest = flat as usize;
        for (a, &n) in at.iter_mut().zip(&indices).rev() {
            (*a, rest) = (rest % n.max(1), rest / n.max(1));
        }
        format!(
            "gather: the index at {at:?} of indices {indices:?} is outside [-{len}, {len}), axis {axis} of {x:?}: expected an index in that range (IndexMode Clip or Fill choose another answer)"
        )
    })
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
    gather_with(queue, x, axis, &Tensor::from_slice(queue.device(), &order, &[n])?, IndexMode::Fill)
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

impl Launch for Gather<'_> {
    fn cost(&self) -> OpCost {
        let bytes = self.out.layout.numel() as u64 * 8 + self.indices.layout.numel() as u64 * 4;
        OpCost { bytes, ..OpCost::simple("gather", &[&self.x, &self.indices, &self.out], 0) }
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        [&self.x, &self.indices, &self.out].into_iter().chain(self.status.as_ref()).collect()
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
    /// [`Tensor::gather`] with `mode` for indices outside the axis (see [`gather_with`]).
    pub fn gather_with(&self, axis: usize, indices: &Tensor, mode: IndexMode) -> Result<Tensor> {
        gather_with(&self.device().queue(), self, axis, indices, mode)
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
