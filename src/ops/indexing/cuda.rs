//! Casts, `where`, gather (indexing.cu) and cumulative sums (scan.cu) on CUDA.

use super::{Cast, Cumsum, Gather, Where};
use crate::ops::common::cuda::{cuda_params, blocks, extent, index_type, builtin, operand, padded, typed_operand, val, BLOCK};
#[cfg(test)]
use crate::hal::cuda::Builtin;
use crate::hal::cuda::{device_memory, CudaDevice, CudaQueue, CudaSource};
use crate::hal::OpContext;
use crate::ops::Operand;
use crate::{Error, Result};

static INDEXING: CudaSource = CudaSource { name: "indexing.cu", text: include_str!("indexing.cu"), preludes: &[crate::ops::common::cuda::COMMON, ViewsParams::DECL, GatherParams::DECL] };
static SCAN: CudaSource = CudaSource { name: "scan.cu", text: include_str!("scan.cu"), preludes: &[crate::ops::common::cuda::COMMON, ScanParams::DECL] };

cuda_params! {
    /// indexing.cu's parameters of the view-walking kernels: the output's shape and up to
    /// three input views (strides; offsets for cast_main).
    struct ViewsParams {
        n: u64,
        rank: u32,
        pad: u32,
        shape: [u64; 8],
        strides: [[u64; 8]; 3],
        offsets: [u64; 3],
    }
}

cuda_params! {
    /// indexing.cu's parameters of gather_main.
    struct GatherParams {
        outer: u64,
        len: u64,
        inner: u64,
        count: u64,
        /// `IndexMode`'s code: 0 error, 1 clip, 2 fill.
        mode: u32,
        pad: u32,
    }
}

cuda_params! {
    /// scan.cu's parameters.
    struct ScanParams {
        outer: u64,
        len: u64,
        inner: u64,
    }
}


fn views_params(out: &Operand<'_>, inputs: &[&Operand<'_>]) -> ViewsParams {
    let mut p = ViewsParams { n: out.layout.numel() as u64, rank: out.layout.shape.len() as u32, shape: padded(&out.layout.shape, 1), ..Default::default() };
    for (slot, x) in p.strides.iter_mut().zip(inputs) {
        *slot = padded(&x.layout.strides, 0);
    }
    p
}

/// `out = x as to` (`cast_main`); 16-bit views may start inside a word.
pub(super) fn cast(op: &Cast<'_>, q: &CudaQueue, dev: &CudaDevice, _: &OpContext<'_>) -> Result<()> {
    let (x, from, to, out) = (op.x, op.from, op.to, op.out);
    let n = out.layout.numel();
    if to.size() == 2 && out.layout.offset % 2 != 0 {
        return Err(Error::Internal("a 16-bit cast output starts inside a word".into()));
    }
    let defines = vec![("FROM", from.code().to_string()), ("TO", to.code().to_string()), index_type(n.max(x.layout.end()))];
    let f = dev.program(builtin(&INDEXING, "cast_main", defines))?;
    let mut p = views_params(&out, &[&x]);
    p.offsets[0] = x.layout.offset as u64;
    // The source as its block base (its view may start inside a word) plus the offset.
    let src = device_memory(x.buf)?.ptr;
    let dst = device_memory(out.buf)?.ptr + (out.layout.offset * to.size()) as u64;
    q.launch(dev, &f, (blocks(dev, n.div_ceil((4 / to.size()).max(1)), BLOCK as usize), 1, 1), (BLOCK, 1, 1), &[src, dst], &p, &[x.buf, out.buf])
}

/// `out = cond ? a : b` (`where_main`).
pub(super) fn where_(op: &Where<'_>, q: &CudaQueue, dev: &CudaDevice, _: &OpContext<'_>) -> Result<()> {
    let (cond, a, b, out) = (op.cond, op.a, op.b, op.out);
    let n = out.layout.numel();
    let largest = [&cond, &a, &b].iter().map(|o| extent(o.layout)).fold(n, usize::max);
    let defines = vec![("COND_F32", u32::from(op.cond_dtype == crate::DType::F32).to_string()), index_type(largest)];
    let f = dev.program(builtin(&INDEXING, "where_main", defines))?;
    let p = views_params(&out, &[&cond, &a, &b]);
    let pointers = [operand(&cond)?, operand(&a)?, operand(&b)?, operand(&out)?];
    q.launch(dev, &f, (blocks(dev, n, BLOCK as usize), 1, 1), (BLOCK, 1, 1), &pointers, &p, &[cond.buf, a.buf, b.buf, out.buf])
}

/// `out = x` indexed along one axis by `indices` (`gather_main`).
pub(super) fn gather(op: &Gather<'_>, q: &CudaQueue, dev: &CudaDevice, _: &OpContext<'_>) -> Result<()> {
    let (x, indices, out) = (op.x, op.indices, op.out);
    let n = out.layout.numel();
    let defines = vec![("INDEX_KIND", op.kind.to_string()), index_type(n.max(op.outer * op.len * op.inner))];
    let f = dev.program(builtin(&INDEXING, "gather_main", defines))?;
    let p = GatherParams { outer: op.outer as u64, len: op.len as u64, inner: op.inner as u64, count: op.count as u64, mode: op.mode.code(), pad: 0 };
    // No status word but in mode 0 (error), which alone writes it: a null pointer.
    let status = op.status.as_ref().map(operand).transpose()?.unwrap_or(0);
    let pointers = [operand(&x)?, operand(&indices)?, operand(&out)?, status];
    let mut held = vec![x.buf, indices.buf, out.buf];
    held.extend(op.status.as_ref().map(|s| s.buf));
    q.launch(dev, &f, (blocks(dev, n, BLOCK as usize), 1, 1), (BLOCK, 1, 1), &pointers, &p, &held)
}

/// Cumulative sums, one block per (outer, inner) line (`cumsum_main`).
pub(super) fn cumsum(op: &Cumsum<'_>, q: &CudaQueue, dev: &CudaDevice, _: &OpContext<'_>) -> Result<()> {
    let (x, out) = (op.x, op.out);
    let f = dev.program(builtin(&SCAN, "cumsum_main", vec![val(op.dtype)?, index_type(op.outer * op.len * op.inner)]))?;
    let p = ScanParams { outer: op.outer as u64, len: op.len as u64, inner: op.inner as u64 };
    let grid = ((op.outer * op.inner).clamp(1, 65_535) as u32, 1, 1);
    q.launch(dev, &f, grid, (BLOCK, 1, 1), &[typed_operand(&x, op.dtype)?, typed_operand(&out, op.dtype)?], &p, &[x.buf, out.buf])
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn builtins() -> Vec<Builtin> {
    let mut all = Vec::new();
    let flag = |name: &'static str, on: bool| (name, u32::from(on).to_string());
    for idx in [index_type(0), index_type(usize::MAX >> 1)] {
        for from in 0..6 {
            for to in 0..6 {
                all.push(builtin(&INDEXING, "cast_main", vec![("FROM", from.to_string()), ("TO", to.to_string()), idx.clone()]));
            }
        }
        for on in [false, true] {
            all.push(builtin(&INDEXING, "where_main", vec![flag("COND_F32", on), idx.clone()]));
        }
        for kind in 0..3 {
            all.push(builtin(&INDEXING, "gather_main", vec![("INDEX_KIND", kind.to_string()), idx.clone()]));
        }
        for val in ["float", "int", "unsigned", "i64"] {
            all.push(builtin(&SCAN, "cumsum_main", vec![("VAL", val.to_string()), idx.clone()]));
        }
    }
    all
}
