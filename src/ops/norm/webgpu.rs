//! Layer and RMS norms on wgpu: norm.wgsl as row passes.

use super::Norm;
use crate::ops::common::webgpu::{check_binding, row_passes, u32_of, RowPasses};
#[cfg(test)]
use crate::hal::webgpu::Builtin;
#[cfg(test)]
use crate::ops::common::webgpu::builtin;
use crate::hal::webgpu::{Bind, GpuDevice, GpuQueue, WgslSource};
use crate::hal::OpContext;
use crate::ops::Operand;
use crate::Result;

static SOURCE: WgslSource = WgslSource { name: "norm.wgsl", text: include_str!("norm.wgsl"), preludes: crate::ops::common::webgpu::WITH_ACTIVATION };

/// Layer or RMS norm of each row, with optional scale, shift and activation.
pub(super) fn norm(op: &Norm<'_>, q: &GpuQueue, dev: &GpuDevice, cx: &OpContext<'_>) -> Result<()> {
    let (x, out, weight, bias) = (op.x, op.out, op.weight, op.bias);
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    let offset = |o: &Option<Operand<'_>>| o.as_ref().map_or(Ok(0), |o| u32_of("offset", o.layout.offset));
    let params = vec![
        u32_of("rows", op.rows)?,
        u32_of("columns", op.cols)?,
        u32_of("offset", x.layout.offset)?,
        u32_of("offset", out.layout.offset)?,
        offset(&weight)?,
        offset(&bias)?,
        op.eps.to_bits(),
    ];
    let constants = vec![
        ("KIND", op.kind.code()),
        ("HAS_WEIGHT", u32::from(weight.is_some())),
        ("HAS_BIAS", u32::from(bias.is_some())),
        ("ACT", op.act.map_or(0, |f| f.code())),
    ];
    let binds = [
        (1, Bind::Mem(x.buf)),
        (2, weight.as_ref().map_or(Bind::SpareRead, |w| Bind::Mem(w.buf))),
        (3, bias.as_ref().map_or(Bind::SpareRead, |b| Bind::Mem(b.buf))),
        (4, Bind::Mem(out.buf)),
    ];
    let passes = RowPasses { source: &SOURCE, entry: "norm_main", serial_entry: Some("norm_serial_main"), constants, prelude: vec![], stats: (5, 3) };
    row_passes(q, dev, cx, passes, [op.rows, op.cols], params, &binds)
}

/// Every specialisation (the module is the same for every override, so one per entry).
#[cfg(test)]
pub(super) fn builtins() -> Vec<Builtin> {
    ["norm_main", "norm_serial_main"].into_iter().map(|e| builtin(&SOURCE, e, vec![])).collect()
}
