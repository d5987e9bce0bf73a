//! Layer and RMS norms on CUDA: norm.cu, one block per row.

use super::Norm;
#[cfg(test)]
use crate::hal::cuda::Specialisation;
use crate::hal::cuda::{CudaBatch, CudaDevice, CudaSource};
use crate::hal::OpContext;
use crate::ops::common::cuda::{cuda_params, extent, index_type, operand, specialise, BLOCK};
use crate::ops::Operand;
use crate::Result;

static SOURCE: CudaSource = CudaSource {
    name: "norm.cu",
    text: include_str!("norm.cu"),
    preludes: &[
        crate::ops::common::cuda::COMMON,
        crate::ops::common::cuda::ACTIVATION,
        NormParams::DECL,
    ],
};

cuda_params! {
    /// norm.cu's parameters.
    struct NormParams {
        rows: u64,
        cols: u64,
        /// Rows per first index and the input's `Steps`.
        nb: u64,
        x_a: u64,
        x_b: u64,
        x_col: u64,
        eps: f32,
        pad: u32,
    }
}

/// Layer or RMS norm of rows with optional weight, bias and activation (`norm_main`).
pub(super) fn norm(
    op: &Norm<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let (x, out, weight, bias) = (op.x, op.out, op.weight, op.bias);
    let defines = vec![
        ("KIND", op.kind.code().to_string()),
        ("ACT", op.act.map_or(0, |f| f.code()).to_string()),
        ("HAS_WEIGHT", u32::from(weight.is_some()).to_string()),
        ("HAS_BIAS", u32::from(bias.is_some()).to_string()),
        index_type((op.rows * op.cols).max(extent(x.layout))),
    ];
    let s = op.x_steps;
    let p = NormParams {
        rows: op.rows as u64,
        cols: op.cols as u64,
        nb: op.nb as u64,
        x_a: s.a as u64,
        x_b: s.b as u64,
        x_col: s.col as u64,
        eps: op.eps,
        pad: 0,
    };
    let optional = |o: &Option<Operand<'_>>| o.as_ref().map_or(Ok(0), operand);
    let pointers = [
        operand(&x)?,
        optional(&weight)?,
        optional(&bias)?,
        operand(&out)?,
    ];
    let f = dev.program(match row_vecs(op, pointers) {
        Some(vecs) => specialise(&SOURCE, "norm_cached_main", cached(defines, vecs)),
        None => specialise(&SOURCE, "norm_main", defines),
    })?;
    let mut held = vec![x.buf, out.buf];
    held.extend(weight.iter().chain(bias.iter()).map(|o| o.buf));
    q.launch(
        dev,
        &f,
        (op.rows.clamp(1, 65_535) as u32, 1, 1),
        (BLOCK, 1, 1),
        &pointers,
        &p,
        &held,
    )
}

/// Float4s per thread that norm_cached_main holds for `op` (a power of two), where each row
/// is contiguous and every operand 16-byte aligned (unused pointers are 0), and the row fits
/// in registers.
fn row_vecs(op: &Norm<'_>, pointers: [u64; 4]) -> Option<usize> {
    let s = op.x_steps;
    let aligned =
        [op.cols, s.a, s.b].iter().all(|v| v % 4 == 0) && pointers.iter().all(|p| p % 16 == 0);
    let vecs = op.cols.div_ceil(4 * BLOCK as usize).next_power_of_two();
    (aligned && s.col == 1 && op.cols > 0 && vecs <= MAX_ROW_VECS).then_some(vecs)
}

/// The most float4s per thread norm_cached_main holds: rows of up to 16,384 elements.
const MAX_ROW_VECS: usize = 16;

fn cached(mut defines: Vec<(&'static str, String)>, vecs: usize) -> Vec<(&'static str, String)> {
    defines.push(("ROW_VECS", vecs.to_string()));
    defines
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let mut all = Vec::new();
    let flag = |name: &'static str, on: bool| (name, u32::from(on).to_string());
    for idx in [index_type(0), index_type(usize::MAX >> 1)] {
        for on in [false, true] {
            let act = ("ACT", if on { "12" } else { "0" }.to_string());
            for kind in 0..2 {
                let defines = vec![
                    ("KIND", kind.to_string()),
                    act.clone(),
                    flag("HAS_WEIGHT", on),
                    flag("HAS_BIAS", on),
                    idx.clone(),
                ];
                all.push(specialise(&SOURCE, "norm_main", defines.clone()));
                for vecs in [1, MAX_ROW_VECS] {
                    let cached = cached(defines.clone(), vecs);
                    all.push(specialise(&SOURCE, "norm_cached_main", cached));
                }
            }
        }
    }
    all
}
