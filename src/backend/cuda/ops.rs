//! The op catalogue on CUDA: each [`OpCall`] becomes launches of `kernels/*.cu` (or a cuBLAS
//! GEMM). The `#[repr(C)]` parameter structs here mirror those at the top of each kernel file.

use std::sync::Arc;

use cudarc::driver::DeviceRepr;

use super::compile::{self as sources, Builtin, CudaSource};
use super::queue::{address, CudaQueue};
use super::{blas, CudaDevice};
use crate::backend::OpContext;
use crate::buffer::BufferInner;
use crate::base::layout::Layout;
use crate::ops::{OpCall, Operand, UnaryOp};
use crate::{Error, Result};

/// Threads per block of the 1-D kernels.
pub(crate) const BLOCK: u32 = 256;
/// Batch dimensions matmul.cu addresses.
const MAX_BATCH_RANK: usize = 6;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct BiasActParams {
    n_total: u64,
    cols: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct MatmulParams {
    m: u64,
    n: u64,
    k: u64,
    a_row: u64,
    a_col: u64,
    b_row: u64,
    b_col: u64,
    batches: u64,
    batch_rank: u32,
    pad: u32,
    batch_shape: [u64; MAX_BATCH_RANK],
    a_batch: [u64; MAX_BATCH_RANK],
    b_batch: [u64; MAX_BATCH_RANK],
}

// SAFETY: plain #[repr(C)] structs of integers and floats, laid out like their C twins.
unsafe impl DeviceRepr for BiasActParams {}
unsafe impl DeviceRepr for MatmulParams {}

/// `[n0, n1, ..]` padded with `fill` to `N` entries.
pub(crate) fn padded<const N: usize>(values: &[usize], fill: u64) -> [u64; N] {
    let mut out = [fill; N];
    for (o, &v) in out.iter_mut().zip(values) {
        *o = v as u64;
    }
    out
}

/// The `IDX` definition: 32-bit indexing when every index of the launch fits, with room for
/// one grid-stride step past the end (at most 65,535 blocks of 256 threads, under 2^25).
pub(crate) fn index_type(largest: usize) -> (&'static str, String) {
    let ty = if (largest as u64) + (1 << 25) < u64::from(u32::MAX) { "unsigned int" } else { "unsigned long long" };
    ("IDX", ty.to_string())
}

/// Elements of a view counted from its first element (what a kernel indexes).
pub(crate) fn extent(l: &Layout) -> usize {
    l.end().saturating_sub(l.offset)
}

pub(crate) fn kernel(source: &'static CudaSource, entry: &'static str, defines: Vec<(&'static str, String)>) -> Builtin {
    Builtin { source, entry, defines, prelude: "" }
}

/// Blocks for a grid-stride loop over `items`.
pub(crate) fn blocks(dev: &CudaDevice, items: usize, per_block: usize) -> u32 {
    let wanted = items.div_ceil(per_block).max(1);
    wanted.min(dev.sm_count as usize * 32).min(65_535) as u32
}

pub(crate) fn operand(o: &Operand<'_>) -> Result<u64> {
    address(o.buf, o.layout.offset)
}

pub(crate) fn run_op(q: &CudaQueue, dev: &CudaDevice, cx: &OpContext<'_>, call: OpCall<'_>) -> Result<()> {
    match call {
        OpCall::Matmul { dtype, .. } if dtype != crate::DType::F32 => {
            Err(Error::Device(format!("internal: the cuda kernels compute on f32 storage, not {dtype}")))
        }
        OpCall::Matmul { a, b, bias, act, out, m, n, k, variant, .. } => matmul(q, dev, cx, [a, b, out], (bias, act), [m, n, k], variant),
    }
}

/// matmul on cuBLAS (then bias and activation in one pass), or matmul.cu where cuBLAS cannot
/// take the layout or the `kernel` variant was asked for.
fn matmul(q: &CudaQueue, dev: &CudaDevice, cx: &OpContext<'_>, [a, b, out]: [Operand<'_>; 3], (bias, act): (Option<Operand<'_>>, Option<UnaryOp>), [m, n, k]: [usize; 3], variant: Option<&str>) -> Result<()> {
    let precision = cx.options.matmul_precision;
    if variant == Some("cublas") && !blas::available() {
        return Err(Error::Unsupported { backend: crate::BackendKind::Cuda, what: "matmul variant `cublas`: libcublas was not found".into() });
    }
    if variant != Some("kernel") && blas::matmul(q, dev, &a, &b, &out, m, n, k, precision)? {
        q.retain_used(dev, &[a.buf, b.buf, out.buf])?;
        // cuBLAS has no epilogue: bias and activation in one pass over the output.
        return if bias.is_some() || act.is_some() { bias_act(q, dev, &out, bias, act, n) } else { Ok(()) };
    }
    matmul_kernel(q, dev, [a, b, out], bias, act, [m, n, k])
}

/// Temporary device memory for intermediate results.
pub(crate) fn temp(cx: &OpContext<'_>, elements: usize) -> Result<Arc<BufferInner>> {
    (cx.temp)((elements.max(1) * 4) as u64)
}

/// Epilogue defines of matmul.cu.
pub(crate) fn epilogue_defines(bias: &Option<Operand<'_>>, act: Option<UnaryOp>) -> [(&'static str, String); 2] {
    [("HAS_BIAS", u32::from(bias.is_some()).to_string()), ("ACT", act.map_or(0, |f| f.code()).to_string())]
}

/// `out = act(out + bias)` in place over a contiguous `[rows, cols]` output.
fn bias_act(q: &CudaQueue, dev: &CudaDevice, out: &Operand<'_>, bias: Option<Operand<'_>>, act: Option<UnaryOp>, cols: usize) -> Result<()> {
    let total = out.layout.numel();
    let mut defines = epilogue_defines(&bias, act).to_vec();
    defines.push(index_type(total));
    let f = dev.builtin(kernel(&sources::MATMUL, "bias_act_main", defines))?;
    let p = BiasActParams { n_total: total as u64, cols: cols as u64 };
    let bias_ptr = bias.as_ref().map_or(Ok(0), operand)?;
    let mut held = vec![out.buf];
    held.extend(bias.iter().map(|o| o.buf));
    q.launch_builtin(dev, &f, (blocks(dev, total, BLOCK as usize), 1, 1), (BLOCK, 1, 1), &[operand(out)?, bias_ptr], &p, &held)
}

fn matmul_kernel(q: &CudaQueue, dev: &CudaDevice, [a, b, out]: [Operand<'_>; 3], bias: Option<Operand<'_>>, act: Option<UnaryOp>, [m, n, k]: [usize; 3]) -> Result<()> {
    let r = out.layout.shape.len();
    let batch_rank = r - 2;
    if batch_rank > MAX_BATCH_RANK {
        return Err(Error::Limit { what: "matmul batch dimensions".into(), value: batch_rank as u64, limit: "batch rank of kernels/matmul.cu", max: MAX_BATCH_RANK as u64 });
    }
    let (gx, gy) = (n.div_ceil(64), m.div_ceil(64));
    if gy > 65_535 {
        return Err(Error::Limit { what: format!("matmul rows {m} in 64-row tiles"), value: gy as u64, limit: "grid y of kernels/matmul.cu", max: 65_535 });
    }
    let batches = out.layout.numel() / (m * n).max(1);
    let largest = out.layout.numel().max(extent(a.layout)).max(extent(b.layout));
    let mut defines = epilogue_defines(&bias, act).to_vec();
    defines.push(index_type(largest));
    let f = dev.builtin(kernel(&sources::MATMUL, "matmul_main", defines))?;
    let (sa, sb) = (&a.layout.strides, &b.layout.strides);
    let p = MatmulParams {
        m: m as u64,
        n: n as u64,
        k: k as u64,
        a_row: sa[r - 2] as u64,
        a_col: sa[r - 1] as u64,
        b_row: sb[r - 2] as u64,
        b_col: sb[r - 1] as u64,
        batches: batches as u64,
        batch_rank: batch_rank as u32,
        pad: 0,
        batch_shape: padded(&out.layout.shape[..batch_rank], 1),
        a_batch: padded(&sa[..batch_rank], 0),
        b_batch: padded(&sb[..batch_rank], 0),
    };
    let grid = (gx as u32, gy as u32, batches.clamp(1, 65_535) as u32);
    let bias_ptr = bias.as_ref().map_or(Ok(0), operand)?;
    let mut held = vec![a.buf, b.buf, out.buf];
    held.extend(bias.iter().map(|o| o.buf));
    q.launch_builtin(dev, &f, grid, (16, 16, 1), &[operand(&a)?, operand(&b)?, bias_ptr, operand(&out)?], &p, &held)
}
