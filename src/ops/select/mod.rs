//! `where` selection, `cond ? a : b` with broadcasting, moving 32-bit words of any dtype
//! (i64 as pairs of them).

backend_modules!();

use super::cost::OpCost;
use super::{backends, launch, Lift, OpRequest, Operand};
use crate::base::layout::{broadcast_shapes, check_rank};
use crate::{DType, Error, Queue, Result, Tensor};

/// `cond ? a : b` elementwise with numpy broadcasting of all three. `cond` is bool (as
/// ONNX's Where takes it) or of any other dtype (true where non-zero; NaN counts as true);
/// `a` and `b` share any dtype.
pub fn where_(queue: &Queue, cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    // The kernels move 32-bit words: 16- and 8-bit values travel widened (exactly).
    // An i64 condition as u32 words, non-zero exactly where the integer is.
    let cond = if cond.dtype() == DType::I64 {
        low_or_max(queue, cond)?
    } else {
        super::widen(queue, cond)?
    };
    let lift = Lift::words("where", &[a, b])?;
    lift.down(
        queue,
        where_words(queue, &cond, &lift.up(queue, a)?, &lift.up(queue, b)?)?,
    )
}

fn where_words(queue: &Queue, cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    for (what, t) in [("where condition", cond), ("where a", a), ("where b", b)] {
        queue.device().check_same(t.device(), what)?;
    }
    if a.dtype() != b.dtype() {
        return Err(Error::DType {
            op: "where",
            expected: format!("b of a's dtype {}", a.dtype()),
            got: b.dtype().to_string(),
        });
    }
    let shape = broadcast_shapes(
        "where",
        &broadcast_shapes("where", cond.shape(), a.shape())?,
        b.shape(),
    )?;
    check_rank("where", &shape)?;
    let (c, a, b) = (
        cond.broadcast_to(&shape)?,
        a.broadcast_to(&shape)?,
        b.broadcast_to(&shape)?,
    );
    let out = Tensor::uninit(queue, &shape, a.dtype())?;
    if out.numel() == 0 {
        return Ok(out);
    }
    // i64 values move as both their words, the condition read for each.
    let w = super::common::words::as_words("where", &[&c, &a, &b, &out])?;
    launch(
        queue,
        &Where {
            cond: w[0].operand(),
            cond_dtype: c.dtype(),
            a: w[1].operand(),
            b: w[2].operand(),
            out: w[3].operand(),
        },
        None,
    )?;
    Ok(out)
}

/// Each element of the i64 view `t` as a u32: its low word where its high word is 0, else
/// `u32::MAX` (non-zero exactly where `t` is). Words moved by `where`, no 64-bit arithmetic.
fn low_or_max(queue: &Queue, t: &Tensor) -> Result<Tensor> {
    use super::common::words::word_of;
    where_words(
        queue,
        &word_of(t, 1),
        &Tensor::from_slice(queue.device(), &[u32::MAX], &[1])?,
        &word_of(t, 0),
    )
}

/// `out = cond != 0 ? a : b`; all three strided views broadcast to the output's shape.
pub(crate) struct Where<'a> {
    pub cond: Operand<'a>,
    pub cond_dtype: DType,
    pub a: Operand<'a>,
    pub b: Operand<'a>,
    pub out: Operand<'a>,
}

impl OpRequest for Where<'_> {
    fn cost(&self) -> OpCost {
        OpCost::simple("where", &[&self.cond, &self.a, &self.b, &self.out], 0)
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        vec![&self.cond, &self.a, &self.b, &self.out]
    }

    backends!(where_);
}

/// The `where` op as a method, recorded on the device's default queue.
impl Tensor {
    /// `self ? a : b` elementwise with broadcasting; `self` is the condition (see
    /// [`super::select::where_`]).
    pub fn select(&self, a: &Tensor, b: &Tensor) -> Result<Tensor> {
        where_(&self.device().queue(), self, a, b)
    }
}
