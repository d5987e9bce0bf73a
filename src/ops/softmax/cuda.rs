//! The row-statistics ops on CUDA: softmax.cu with the op's epilogue prepended.

use super::{Epilogue, RowStats};
use crate::hal::cuda::{CudaBatch, CudaDevice, CudaSource, Specialisation};
use crate::hal::OpContext;
use crate::ops::common::cuda::{cuda_params, extent, index_type, operand, BLOCK};
use crate::Result;

/// The row specialise, which calls the epilogue's `row_factor` and `finish`.
static SOURCE: CudaSource = CudaSource {
    name: "softmax.cu",
    text: include_str!("softmax.cu"),
    preludes: &[crate::ops::common::cuda::COMMON, SoftmaxParams::DECL],
};

cuda_params! {
    /// softmax.cu's parameters.
    struct SoftmaxParams {
        rows: u64,
        cols: u64,
        /// Rows per first index, and each operand's `Steps`.
        nb: u64,
        x_a: u64,
        x_b: u64,
        x_col: u64,
        out_a: u64,
        out_b: u64,
        out_col: u64,
    }
}

/// One block per row (grid-stride past 65,535 rows).
pub(super) fn rows(
    op: &RowStats<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let (xs, os) = (op.x_steps, op.out_steps);
    let reach = extent(op.x.layout).max(op.rows * op.cols);
    let p = SoftmaxParams {
        rows: op.rows as u64,
        cols: op.cols as u64,
        nb: op.nb as u64,
        x_a: xs.a as u64,
        x_b: xs.b as u64,
        x_col: xs.col as u64,
        out_a: os.a as u64,
        out_b: os.b as u64,
        out_col: os.col as u64,
    };
    let pointers = [operand(&op.x)?, operand(&op.out)?];
    let f = dev.program(match row_vecs(op, pointers) {
        Some(vecs) => cached(op.epilogue, vecs, index_type(reach)),
        None => specialise(op.epilogue, index_type(reach)),
    })?;
    let grid = (op.rows.clamp(1, 65_535) as u32, 1, 1);
    q.launch(
        dev,
        &f,
        grid,
        (BLOCK, 1, 1),
        &pointers,
        &p,
        &[op.x.buf, op.out.buf],
    )
}

/// Float4s per thread that softmax_cached_main holds for `op` (a power of two), where each
/// row is contiguous and 16-byte aligned in both operands and fits in registers.
fn row_vecs(op: &RowStats<'_>, pointers: [u64; 2]) -> Option<usize> {
    let (xs, os) = (op.x_steps, op.out_steps);
    let aligned = [op.cols, xs.a, xs.b, os.a, os.b].iter().all(|v| v % 4 == 0)
        && pointers.iter().all(|p| p % 16 == 0);
    let vecs = op.cols.div_ceil(4 * BLOCK as usize).next_power_of_two();
    (aligned && xs.col == 1 && os.col == 1 && op.cols > 0 && vecs <= MAX_ROW_VECS).then_some(vecs)
}

/// The most float4s per thread softmax_cached_main holds: rows of up to 16,384 elements.
const MAX_ROW_VECS: usize = 16;

fn specialise(epilogue: &'static Epilogue, idx: (&'static str, String)) -> Specialisation {
    Specialisation {
        source: &SOURCE,
        entry: "softmax_main",
        defines: vec![idx],
        prelude: epilogue.cuda,
        generated: None,
    }
}

fn cached(epilogue: &'static Epilogue, vecs: usize, idx: (&'static str, String)) -> Specialisation {
    let defines = vec![idx, ("ROW_VECS", vecs.to_string())];
    let entry = "softmax_cached_main";
    Specialisation {
        source: &SOURCE,
        entry,
        defines,
        prelude: epilogue.cuda,
        generated: None,
    }
}

/// Softmax's specialisations.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    with_epilogue(&super::SOFTMAX)
}

/// Every specialisation with `epilogue`.
#[cfg(test)]
pub(super) fn with_epilogue(epilogue: &'static Epilogue) -> Vec<Specialisation> {
    let mut all = Vec::new();
    for idx in [index_type(0), index_type(usize::MAX >> 1)] {
        all.push(specialise(epilogue, idx.clone()));
        all.extend([1, MAX_ROW_VECS].map(|vecs| cached(epilogue, vecs, idx.clone())));
    }
    all
}
