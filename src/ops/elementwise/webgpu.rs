//! Unary and binary ops on wgpu: elementwise.wgsl, four elements per invocation where the
//! layouts allow (the vec4 entry points); integer arithmetic in its own entry point.

use super::{Binary, Unary};
use crate::ops::common::webgpu::{builtin, check_binding, grid_1d, store, strided_words, u32_of, val, StridedWords, ACTIVATION, COMMON, STORE_F32, VAL_U32};
#[cfg(test)]
use crate::ops::common::webgpu::{STORE_F16, VAL_I32};
use crate::hal::webgpu::{Builtin, Bind, GpuDevice, GpuQueue, WgslSource};
use crate::hal::OpContext;
use crate::base::layout::Access;
use crate::ops::Operand;
use crate::{DType, Result};

static SOURCE: WgslSource = WgslSource { name: "elementwise.wgsl", text: crate::ops::common::wgsl_file!("elementwise/elementwise.wgsl"), preludes: &[COMMON, ACTIVATION, StridedWords::DECL] };

/// Whether an elementwise launch can take four elements per invocation (the vec4 entry
/// points): the element count, the output offset and every operand offset multiples of 4,
/// the output contiguous, each operand contiguous or a repeated block whose period is a
/// multiple of 4.
fn vec4(out: &Operand<'_>, inputs: &[&Operand<'_>]) -> bool {
    let whole = |o: &Operand<'_>| o.layout.offset % 4 == 0;
    out.layout.numel() % 4 == 0
        && out.layout.is_contiguous()
        && whole(out)
        && inputs.iter().all(|x| {
            whole(x)
                && match x.layout.access() {
                    Access::Contiguous => true,
                    Access::Repeated { period } => period % 4 == 0,
                    Access::Strided => false,
                }
        })
}

/// `out = op(x)`: unary_main, or unary_vec4_main over whole vec4s.
pub(super) fn unary(op: &Unary<'_>, q: &GpuQueue, dev: &GpuDevice, _: &OpContext<'_>) -> Result<()> {
    let (x, out) = (op.x, op.out);
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    let access = x.layout.access();
    let constants = vec![("OP", op.op.code()), ("A_MODE", access.code())];
    let (entry, per) = if vec4(&out, &[&x]) { ("unary_vec4_main", 4) } else { ("unary_main", 1) };
    let pipeline = dev.pipeline(Builtin { prelude: vec![store(dev, op.dtype)?, VAL_U32], ..builtin(&SOURCE, entry, constants) });
    let grid = grid_1d(dev, (out.layout.numel() / per).div_ceil(256) as u64)?;
    let params = StridedWords { a_period: u32_of("period", access.period())?, ..strided_words(&out, &[&x])? };
    q.launch(dev, pipeline, params.words(), &[(1, Bind::Mem(x.buf)), (3, Bind::Mem(out.buf))], grid)
}

/// `out = act(op(a, b))` over broadcast operands: binary_main, or binary_vec4_main.
pub(super) fn binary(op: &Binary<'_>, q: &GpuQueue, dev: &GpuDevice, _: &OpContext<'_>) -> Result<()> {
    let (a, b, out) = (op.a, op.b, op.out);
    for o in [&a, &b, &out] {
        check_binding(dev, o)?;
    }
    let (a_access, b_access) = (a.layout.access(), b.layout.access());
    let constants = vec![("OP", op.op.code()), ("ACT", op.act.map_or(0, |f| f.code())), ("A_MODE", a_access.code()), ("B_MODE", b_access.code())];
    let integer = matches!(op.dtype, DType::I32 | DType::U32);
    let (entry, per) = match (integer, vec4(&out, &[&a, &b])) {
        (true, _) => ("int_binary_main", 1),
        (false, true) => ("binary_vec4_main", 4),
        (false, false) => ("binary_main", 1),
    };
    let prelude = if integer { vec![STORE_F32, val(op.dtype)?] } else { vec![store(dev, op.dtype)?, VAL_U32] };
    let pipeline = dev.pipeline(Builtin { prelude, ..builtin(&SOURCE, entry, constants) });
    let grid = grid_1d(dev, (out.layout.numel() / per).div_ceil(256) as u64)?;
    let binds = [(1, Bind::Mem(a.buf)), (2, Bind::Mem(b.buf)), (3, Bind::Mem(out.buf))];
    let params = StridedWords { a_period: u32_of("period", a_access.period())?, b_period: u32_of("period", b_access.period())?, ..strided_words(&out, &[&a, &b])? };
    q.launch(dev, pipeline, params.words(), &binds, grid)
}

/// The module in both storage dtypes and both integer types.
#[cfg(test)]
pub(super) fn builtins() -> Vec<Builtin> {
    let preludes = [[STORE_F32, VAL_U32], [STORE_F16, VAL_U32], [STORE_F32, VAL_I32]];
    preludes.into_iter().map(|p| Builtin { prelude: p.to_vec(), ..builtin(&SOURCE, "unary_main", vec![]) }).collect()
}
