//! Bit-exact copies of 4-byte elements from a strided view into a view of the same shape:
//! contiguous, or a non-overlapping strided view such as a slice of a larger tensor (what
//! [`Tensor::contiguous`] and [`concat`](super::concat::concat) record).

backend_modules!();

use super::cost::OpCost;
use super::indexing::Cast;
use super::{backends, launch, Launch, Operand};
use crate::{Queue, Result, Tensor};

/// `out = x` for 4-byte elements of any dtype, `out` contiguous or a non-overlapping view.
pub(crate) struct ViewCopy<'a> {
    pub x: Operand<'a>,
    pub out: Operand<'a>,
}

impl Launch for ViewCopy<'_> {
    fn cost(&self) -> OpCost {
        OpCost::simple("copy", &[&self.x, &self.out], 0)
    }

    fn operands(&self) -> Vec<&Operand<'_>> {
        vec![&self.x, &self.out]
    }

    backends!(copy);
}

/// Record `out = x` (same shape and dtype; `out` fresh, or a view no other operand overlaps):
/// 4-byte elements by the copy kernels, 16-bit ones (two to a word) by the cast kernels.
pub(crate) fn copy_into(queue: &Queue, x: &Tensor, out: &Tensor) -> Result<()> {
    if out.numel() == 0 {
        return Ok(());
    }
    if x.dtype().size() == 4 {
        launch(queue, &ViewCopy { x: x.operand(), out: out.operand() }, None)
    } else {
        launch(queue, &Cast { x: x.operand(), from: x.dtype(), to: x.dtype(), out: out.operand() }, None)
    }
}

