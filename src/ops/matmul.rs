//! Matrix multiplication: 2-D and batched, with numpy broadcasting of the batch dimensions.

use super::elementwise::check_f32;
use super::OpCall;
use crate::layout::{broadcast_shapes, check_rank};
use crate::{DType, Error, Queue, Result, Tensor};

/// `a @ b` for `a: [.., m, k]` and `b: [.., k, n]`; leading (batch) dimensions broadcast.
/// Either operand may be a strided view (e.g. a transpose) without a copy.
pub fn matmul(queue: &Queue, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    check_f32(queue, "matmul", a)?;
    check_f32(queue, "matmul", b)?;
    let (ra, rb) = (a.rank(), b.rank());
    if ra < 2 || rb < 2 {
        return Err(Error::shape(
            "matmul",
            format!("got shapes {:?} and {:?}: expected both of rank >= 2 ([.., m, k] @ [.., k, n])", a.shape(), b.shape()),
        ));
    }
    let (m, k) = (a.shape()[ra - 2], a.shape()[ra - 1]);
    let (k2, n) = (b.shape()[rb - 2], b.shape()[rb - 1]);
    if k != k2 {
        return Err(Error::shape(
            "matmul",
            format!("inner dimensions differ: {:?} @ {:?} has k = {k} vs {k2}, expected equal", a.shape(), b.shape()),
        ));
    }
    let batch = broadcast_shapes("matmul", &a.shape()[..ra - 2], &b.shape()[..rb - 2])?;
    let with = |x: usize, y: usize| batch.iter().copied().chain([x, y]).collect::<Vec<_>>();
    check_rank("matmul", &with(m, n))?;
    let a = a.broadcast_to(&with(m, k))?;
    let b = b.broadcast_to(&with(k, n))?;
    let out = Tensor::uninit(queue, &with(m, n), DType::F32)?;
    if out.numel() > 0 {
        queue.run_op(OpCall::Matmul { a: a.operand(), b: b.operand(), out: out.operand(), m, n, k })?;
    }
    Ok(out)
}
