//! The straight-line code of a chain, for WGSL and CUDA C from the one [`Plan`]: a value
//! `v<n>` per input and step (numbered as the plan numbers them), each step a call of the op
//! tables' `unary_op` / `binary_op` with a constant code (which the compilers fold), a
//! 16-bit result rounded to its dtype. The two languages differ only in the spelling each
//! [`Dialect`] gives.

use super::plan::{scalar_f32, Plan};
use super::Step;
use crate::base::layout::Access;
use crate::{BinaryOp, DType, UnaryOp};

/// How one language spells the parts of a chain's code.
pub(super) struct Dialect {
    /// The declaration of f32 value `v<n>` as `expr`.
    pub decl: fn(usize, &str) -> String,
    /// `op(x)`.
    pub unary: fn(UnaryOp, &str) -> String,
    /// `op(a, b)`.
    pub binary: fn(BinaryOp, &str, &str) -> String,
    /// An f32 constant, exactly (NaN and the infinities included).
    pub literal: fn(f32) -> String,
    /// The element `i` of input `k` of `dtype`, addressed as `access` says, as an f32.
    pub load: fn(usize, DType, Access) -> String,
}

/// `x` rounded to `dtype` where that is 16-bit: the chain files' `round_f16` / `round_bf16`.
fn rounded(dtype: DType, x: String) -> String {
    match dtype {
        DType::F16 => format!("round_f16({x})"),
        DType::BF16 => format!("round_bf16({x})"),
        _ => x,
    }
}

/// The statements that compute every value of `plan` for element `i`, inputs addressed as
/// `access` says, one a line; the output is `v<plan.output()>`.
pub(super) fn statements(plan: &Plan, access: &[Access], d: &Dialect) -> Vec<String> {
    let mut lines: Vec<String> = access
        .iter()
        .enumerate()
        .map(|(k, &a)| (d.decl)(k, &(d.load)(k, plan.dtype(k), a)))
        .collect();
    let name = |v| format!("v{}", plan.index(v));
    for (i, step) in plan.steps().iter().enumerate() {
        let n = access.len() + i;
        let dtype = plan.dtype(n);
        let expr = match *step {
            Step::Unary(op, x) => rounded(dtype, (d.unary)(op, &name(x))),
            Step::Binary(op, a, b) => rounded(dtype, (d.binary)(op, &name(a), &name(b))),
            Step::Scalar(value, dtype) => (d.literal)(scalar_f32(value, dtype)),
            Step::Cast(x, _) => rounded(dtype, name(x)),
        };
        lines.push((d.decl)(n, &expr));
    }
    lines
}
