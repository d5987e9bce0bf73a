//! The row-statistics ops on wgpu: softmax.wgsl with the op's epilogue prepended.

use super::RowStats;
#[cfg(test)]
use super::Epilogue;
use crate::ops::common::webgpu::{check_binding, row_passes, u32_of, wgsl_params, RowPasses};
#[cfg(test)]
use crate::hal::webgpu::Builtin;
use crate::hal::webgpu::{Bind, GpuDevice, GpuQueue, WgslSource};
use crate::hal::OpContext;
use crate::Result;

/// The row kernels, which call the epilogue's `row_factor` and `finish`.
static SOURCE: WgslSource = WgslSource { name: "softmax.wgsl", text: crate::ops::common::wgsl_file!("softmax/softmax.wgsl"), preludes: &[crate::ops::common::webgpu::COMMON, SoftmaxWords::DECL] };

wgsl_params! {
    /// softmax.wgsl's parameters.
    struct SoftmaxWords: P {
        rows: u32,
        cols: u32,
        /// Offsets of the input and output.
        x: u32,
        out: u32,
        /// Columns per chunk and chunks per row.
        chunk_cols: u32,
        chunks: u32,
    }
}

/// The row passes of `op` (see [`row_passes`]).
pub(super) fn rows(op: &RowStats<'_>, q: &GpuQueue, dev: &GpuDevice, cx: &OpContext<'_>) -> Result<()> {
    let (x, out) = (op.x, op.out);
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    let (rows, cols, x_at, out_at) = (u32_of("rows", op.rows)?, u32_of("columns", op.cols)?, u32_of("offset", x.layout.offset)?, u32_of("offset", out.layout.offset)?);
    let params = |chunk_cols, chunks| SoftmaxWords { rows, cols, x: x_at, out: out_at, chunk_cols, chunks }.words().to_vec();
    let passes = RowPasses { source: &SOURCE, entry: "softmax_main", serial_entry: Some("softmax_serial_main"), constants: vec![], prelude: vec![op.epilogue.wgsl], stats: (3, 2) };
    row_passes(q, dev, cx, passes, [op.rows, op.cols], params, &[(1, Bind::Mem(x.buf)), (2, Bind::Mem(out.buf))])
}

/// Softmax's specialisations.
#[cfg(test)]
pub(super) fn builtins() -> Vec<Builtin> {
    with_epilogue(&super::SOFTMAX)
}

/// Every specialisation with `epilogue`.
#[cfg(test)]
pub(super) fn with_epilogue(epilogue: &'static Epilogue) -> Vec<Builtin> {
    let builtin = |entry, pass| Builtin { source: &SOURCE, entry, constants: vec![("PASS", pass)], prelude: vec![epilogue.wgsl] };
    ["softmax_main", "softmax_serial_main"].into_iter().flat_map(|e| (0..3).map(move |pass| builtin(e, pass))).collect()
}
