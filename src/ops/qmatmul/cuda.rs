//! The quantised matmul on CUDA: qmatmul.cu, one warp per output column reading its packed
//! row's words, for one row of A (m = 1, `qmatmul_gemv`) or four (`qmatmul_tiled`).

use super::QMatmul;
#[cfg(test)]
use crate::hal::cuda::Specialisation;
use crate::hal::cuda::{CudaBatch, CudaDevice, CudaSource};
use crate::hal::OpContext;
use crate::ops::common::cuda::{cuda_params, operand, specialise};
use crate::{Error, Result};

static SOURCE: CudaSource = CudaSource {
    name: "qmatmul.cu",
    text: include_str!("qmatmul.cu"),
    preludes: &[crate::ops::common::cuda::COMMON, QMatmulParams::DECL],
};

cuda_params! {
    /// qmatmul.cu's parameters.
    struct QMatmulParams {
        m: u32,
        n: u32,
        k: u32,
        /// Blocks per row of weights and u32 words per block.
        blocks: u32,
        block_words: u32,
        /// Bytes of one row's packed zero points.
        zero_row: u32,
        /// The first row of A of this launch.
        first_row: u32,
        pad: u32,
    }
}

/// Output columns (warps) per block of threads.
const COLUMNS: usize = 4;

/// The entry point for `m` rows of A and the rows each block of threads takes.
fn entry(m: usize) -> (&'static str, usize) {
    if m == 1 {
        ("qmatmul_gemv", 1)
    } else {
        ("qmatmul_tiled", 4)
    }
}

pub(super) fn qmatmul(
    op: &QMatmul<'_>,
    q: &CudaBatch,
    dev: &CudaDevice,
    _: &OpContext<'_>,
) -> Result<()> {
    let small = |what: &str, v: usize| {
        u32::try_from(v).map_err(|_| Error::Invalid(format!("qmatmul: {what} = {v} passes u32")))
    };
    if op.m.checked_mul(op.k).is_none_or(|e| e > u32::MAX as usize) {
        return Err(Error::Invalid(format!(
            "qmatmul: A of {} x {} elements: expected at most 2^32 on CUDA",
            op.m, op.k
        )));
    }
    let (entry, rows) = entry(op.m);
    let defines = vec![
        ("BITS", op.bits.to_string()),
        ("ZERO", op.zero_mode.to_string()),
        ("HAS_BIAS", u32::from(op.bias.is_some()).to_string()),
    ];
    let f = dev.program(specialise(&SOURCE, entry, defines))?;
    let mut p = QMatmulParams {
        m: small("m", op.m)?,
        n: small("n", op.n)?,
        k: small("k", op.k)?,
        blocks: small("blocks", op.blocks())?,
        block_words: op.block_words() as u32,
        zero_row: small("zero-point bytes", op.zero_row_bytes())?,
        ..Default::default()
    };
    small("packed words", op.n * op.blocks() * op.block_words())?;
    let optional = |o: Option<&crate::ops::Operand<'_>>| o.map_or(Ok(0), operand);
    let pointers = [
        operand(&op.a)?,
        operand(&op.packed)?,
        operand(&op.scales)?,
        optional(op.zero.as_ref())?,
        optional(op.bias.as_ref())?,
        operand(&op.out)?,
    ];
    let mut held = vec![op.a.buf, op.packed.buf, op.scales.buf, op.out.buf];
    held.extend(op.zero.as_ref().map(|o| o.buf));
    held.extend(op.bias.as_ref().map(|o| o.buf));
    let gx = op.n.div_ceil(COLUMNS) as u32;
    let mut first = 0;
    while first < op.m {
        let groups = (op.m - first).div_ceil(rows).min(65_535);
        p.first_row = first as u32;
        let block = ((32 * COLUMNS) as u32, 1, 1);
        q.launch(dev, &f, (gx, groups as u32, 1), block, &pointers, &p, &held)?;
        first += groups * rows;
    }
    Ok(())
}

/// Every specialisation: both entry points, each width and zero-point mode, with and without
/// a bias.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let mut all = Vec::new();
    for entry in ["qmatmul_gemv", "qmatmul_tiled"] {
        for bits in ["4", "8"] {
            for zero in ["0", "1", "2"] {
                for bias in ["0", "1"] {
                    let defines = vec![
                        ("BITS", bits.into()),
                        ("ZERO", zero.into()),
                        ("HAS_BIAS", bias.into()),
                    ];
                    all.push(specialise(&SOURCE, entry, defines));
                }
            }
        }
    }
    all
}
