//! Casts, `where`, gather (indexing.wgsl) and cumulative sums (scan.wgsl) on wgpu.

use super::{Cast, Cumsum, Gather, Where};
use crate::ops::common::webgpu::{builtin, check_binding, grid_1d, row_passes, strided_words, u32_of, val, wgsl_params, RowPasses, StridedWords, COMMON};
#[cfg(test)]
use crate::ops::common::webgpu::{VAL_F32, VAL_I32, VAL_U32};
#[cfg(test)]
use crate::hal::webgpu::Builtin;
use crate::hal::webgpu::{Bind, GpuDevice, GpuQueue, WgslSource};
use crate::hal::OpContext;
use crate::{Error, Result};

static INDEXING: WgslSource = WgslSource { name: "indexing.wgsl", text: crate::ops::common::wgsl_file!("indexing/indexing.wgsl"), preludes: &[COMMON, StridedWords::DECL, GatherWords::DECL] };
static SCAN: WgslSource = WgslSource { name: "scan.wgsl", text: crate::ops::common::wgsl_file!("indexing/scan.wgsl"), preludes: &[COMMON, ScanWords::DECL] };

wgsl_params! {
    /// gather_main's parameters (indexing.wgsl).
    struct GatherWords: G {
        /// The input as [outer, len, inner], and the number of indices.
        outer: u32,
        len: u32,
        inner: u32,
        count: u32,
        /// Offsets of the input, the indices and the output.
        x: u32,
        indices: u32,
        out: u32,
        /// The word written for an index out of range.
        fill: u32,
    }
}

wgsl_params! {
    /// scan.wgsl's parameters.
    struct ScanWords: P {
        /// The input as [outer, len, inner].
        outer: u32,
        len: u32,
        inner: u32,
        /// Offsets of the input and output.
        x: u32,
        out: u32,
        /// Elements per chunk and chunks per line.
        chunk_len: u32,
        chunks: u32,
    }
}

/// `out = x` converted from `from` to `to`.
pub(super) fn cast(op: &Cast<'_>, q: &GpuQueue, dev: &GpuDevice, _: &OpContext<'_>) -> Result<()> {
    let (x, out) = (op.x, op.out);
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    if op.to.size() == 2 && out.layout.offset % 2 != 0 {
        return Err(Error::Device("internal: a 16-bit cast output starts inside a word".into()));
    }
    let pipeline = dev.pipeline(builtin(&INDEXING, "cast_main", vec![("FROM", op.from.code()), ("TO", op.to.code())]));
    // A 16-bit output is written a word (two elements) per invocation.
    let grid = grid_1d(dev, out.layout.numel().div_ceil(4 / op.to.size()).div_ceil(256) as u64)?;
    // Auto layouts hold only the bindings an entry point uses.
    let binds = [(1, Bind::Mem(x.buf)), (4, Bind::Mem(out.buf))];
    q.launch(dev, pipeline, strided_words(&out, &[&x])?.words(), &binds, grid)
}

/// `out = cond ? a : b`.
pub(super) fn where_(op: &Where<'_>, q: &GpuQueue, dev: &GpuDevice, _: &OpContext<'_>) -> Result<()> {
    let (cond, a, b, out) = (op.cond, op.a, op.b, op.out);
    for o in [&cond, &a, &b, &out] {
        check_binding(dev, o)?;
    }
    let constants = vec![("COND_F32", u32::from(op.cond_dtype == crate::DType::F32))];
    let pipeline = dev.pipeline(builtin(&INDEXING, "where_main", constants));
    let grid = grid_1d(dev, out.layout.numel().div_ceil(256) as u64)?;
    let binds = [(1, Bind::Mem(cond.buf)), (2, Bind::Mem(a.buf)), (3, Bind::Mem(b.buf)), (4, Bind::Mem(out.buf))];
    q.launch(dev, pipeline, strided_words(&out, &[&cond, &a, &b])?.words(), &binds, grid)
}

/// Entries of `x` along an axis picked by `indices` (`fill` where out of range).
pub(super) fn gather(op: &Gather<'_>, q: &GpuQueue, dev: &GpuDevice, _: &OpContext<'_>) -> Result<()> {
    let (x, indices, out) = (op.x, op.indices, op.out);
    for o in [&x, &indices, &out] {
        check_binding(dev, o)?;
    }
    let params = GatherWords {
        outer: u32_of("outer", op.outer)?,
        len: u32_of("length", op.len)?,
        inner: u32_of("inner", op.inner)?,
        count: u32_of("count", op.count)?,
        x: u32_of("offset", x.layout.offset)?,
        indices: u32_of("offset", indices.layout.offset)?,
        out: u32_of("offset", out.layout.offset)?,
        fill: op.fill,
    };
    let pipeline = dev.pipeline(builtin(&INDEXING, "gather_main", vec![("SIGNED", u32::from(op.signed))]));
    let grid = grid_1d(dev, out.layout.numel().div_ceil(256) as u64)?;
    let binds = [(1, Bind::Mem(x.buf)), (2, Bind::Mem(indices.buf)), (4, Bind::Mem(out.buf))];
    q.launch(dev, pipeline, params.words(), &binds, grid)
}

/// Cumulative sums along each (outer, inner) line, as row passes.
pub(super) fn cumsum(op: &Cumsum<'_>, q: &GpuQueue, dev: &GpuDevice, cx: &OpContext<'_>) -> Result<()> {
    let (x, out) = (op.x, op.out);
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    let words = ScanWords {
        outer: u32_of("outer", op.outer)?,
        len: u32_of("length", op.len)?,
        inner: u32_of("inner", op.inner)?,
        x: u32_of("offset", x.layout.offset)?,
        out: u32_of("offset", out.layout.offset)?,
        chunk_len: 0,
        chunks: 0,
    };
    let params = |chunk_len, chunks| ScanWords { chunk_len, chunks, ..words }.words().to_vec();
    let passes = RowPasses { source: &SCAN, entry: "cumsum_main", serial_entry: None, constants: vec![], prelude: vec![val(op.dtype)?], stats: (3, 1) };
    row_passes(q, dev, cx, passes, [op.outer * op.inner, op.len], params, &[(1, Bind::Mem(x.buf)), (2, Bind::Mem(out.buf))])
}

/// Every specialisation.
#[cfg(test)]
pub(super) fn builtins() -> Vec<Builtin> {
    let mut all = Vec::new();
    for from in 0..5 {
        for to in 0..5 {
            all.push(builtin(&INDEXING, "cast_main", vec![("FROM", from), ("TO", to)]));
        }
    }
    for on in [0, 1] {
        all.push(builtin(&INDEXING, "where_main", vec![("COND_F32", on)]));
        all.push(builtin(&INDEXING, "gather_main", vec![("SIGNED", on)]));
    }
    for prelude in [VAL_F32, VAL_I32, VAL_U32] {
        all.extend((0..3).map(|pass| Builtin { prelude: vec![prelude], ..builtin(&SCAN, "cumsum_main", vec![("PASS", pass)]) }));
    }
    all
}
