//! The op catalogue on CUDA: each [`OpCall`] becomes launches of `kernels/*.cu` (or a cuBLAS
//! GEMM). The `#[repr(C)]` parameter structs here mirror those at the top of each kernel file.

use std::sync::Arc;

use cudarc::driver::DeviceRepr;

use super::compile::{self as sources, Builtin, CudaSource};
use super::queue::{address, CudaQueue};
use super::{blas, CudaDevice};
use crate::backend::OpContext;
use crate::buffer::BufferInner;
use crate::base::layout::{Layout, MAX_RANK};
use crate::ops::{BinaryOp, Conv2dGeometry, NormKind, OpCall, Operand, ReduceOp, UnaryOp};
use crate::{DType, Error, Result};

/// Threads per block of the 1-D kernels.
pub(crate) const BLOCK: u32 = 256;
/// Batch dimensions matmul.cu addresses.
const MAX_BATCH_RANK: usize = 6;

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct ElementwiseParams {
    n: u64,
    rank: u32,
    pad: u32,
    shape: [u64; MAX_RANK],
    a_strides: [u64; MAX_RANK],
    b_strides: [u64; MAX_RANK],
    a_period: u64,
    b_period: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CopyParams {
    n: u64,
    rank: u32,
    pad: u32,
    shape: [u64; MAX_RANK],
    strides: [u64; MAX_RANK],
    out_strides: [u64; MAX_RANK],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct ReduceParams {
    outer: u64,
    len: u64,
    inner: u64,
    chunk: u64,
    chunks: u64,
    scale: f32,
    write_values: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct ViewsParams {
    n: u64,
    rank: u32,
    pad: u32,
    shape: [u64; MAX_RANK],
    strides: [[u64; MAX_RANK]; 3],
    offsets: [u64; 3],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct GatherParams {
    outer: u64,
    len: u64,
    inner: u64,
    count: u64,
    fill: u32,
    pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct ScanParams {
    outer: u64,
    len: u64,
    inner: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct View4 {
    offset: u64,
    strides: [u64; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct AttentionParams {
    bh: u64,
    heads: u64,
    lq: u64,
    lk: u64,
    d: u64,
    dv: u64,
    scale: f32,
    causal: u32,
    q: View4,
    k: View4,
    v: View4,
    mask: View4,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct ConvParams {
    sizes: [u64; 9],
    stride: [u64; 2],
    pad: [u64; 2],
    dilation: [u64; 2],
    groups: u64,
}

impl ConvParams {
    fn new(g: &Conv2dGeometry) -> Self {
        let sizes = [g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.oh, g.ow].map(|v| v as u64);
        let pair = |p: [usize; 2]| p.map(|v| v as u64);
        ConvParams { sizes, stride: pair(g.stride), pad: pair(g.padding), dilation: pair(g.dilation), groups: g.groups as u64 }
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct BiasActParams {
    n_total: u64,
    cols: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct NormParams {
    rows: u64,
    cols: u64,
    eps: f32,
    pad: u32,
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
unsafe impl DeviceRepr for ElementwiseParams {}
unsafe impl DeviceRepr for CopyParams {}
unsafe impl DeviceRepr for ReduceParams {}
unsafe impl DeviceRepr for NormParams {}
unsafe impl DeviceRepr for BiasActParams {}
unsafe impl DeviceRepr for ViewsParams {}
unsafe impl DeviceRepr for GatherParams {}
unsafe impl DeviceRepr for ScanParams {}
unsafe impl DeviceRepr for AttentionParams {}
unsafe impl DeviceRepr for ConvParams {}

/// A rank-4 view relative to its first element (pointers arrive advanced to it).
fn view4(o: Option<&Operand<'_>>) -> View4 {
    o.map_or(View4::default(), |o| View4 { offset: 0, strides: padded(&o.layout.strides, 0) })
}

/// Parameters of the view-walking kernels of indexing.cu: the output's shape and up to three
/// input views.
fn views_params(out: &Operand<'_>, inputs: &[&Operand<'_>]) -> ViewsParams {
    let mut p = ViewsParams { n: out.layout.numel() as u64, rank: out.layout.shape.len() as u32, shape: padded(&out.layout.shape, 1), ..Default::default() };
    for (slot, x) in p.strides.iter_mut().zip(inputs) {
        *slot = padded(&x.layout.strides, 0);
    }
    p
}
unsafe impl DeviceRepr for MatmulParams {}

/// `[n0, n1, ..]` padded with `fill` to `N` entries.
fn padded<const N: usize>(values: &[usize], fill: u64) -> [u64; N] {
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
fn extent(l: &Layout) -> usize {
    l.end().saturating_sub(l.offset)
}

fn kernel(source: &'static CudaSource, entry: &'static str, defines: Vec<(&'static str, String)>) -> Builtin {
    Builtin { source, entry, defines, prelude: "" }
}

/// Blocks for a grid-stride loop over `items`.
fn blocks(dev: &CudaDevice, items: usize, per_block: usize) -> u32 {
    let wanted = items.div_ceil(per_block).max(1);
    wanted.min(dev.sm_count as usize * 32).min(65_535) as u32
}

pub(crate) fn operand(o: &Operand<'_>) -> Result<u64> {
    address(o.buf, o.layout.offset)
}

pub(crate) fn run_op(q: &CudaQueue, dev: &CudaDevice, cx: &OpContext<'_>, call: OpCall<'_>) -> Result<()> {
    match call {
        OpCall::Unary { dtype, .. } | OpCall::Binary { dtype, .. } | OpCall::Matmul { dtype, .. } if dtype != crate::DType::F32 => {
            Err(Error::Device(format!("internal: the cuda kernels compute on f32 storage, not {dtype}")))
        }
        OpCall::Unary { op, x, out, .. } => unary(q, dev, op, x, out),
        OpCall::Binary { op, act, a, b, out, .. } => binary(q, dev, (op, act), [a, b, out]),
        OpCall::Copy { x, out } => copy(q, dev, x, out),
        OpCall::Cast { x, from, to, out } => cast(q, dev, x, (from, to), out),
        OpCall::Where { cond, cond_dtype, a, b, out } => where_(q, dev, [cond, a, b, out], cond_dtype),
        OpCall::Gather { x, indices, signed, outer, len, inner, count, fill, out } => gather(q, dev, [x, indices, out], signed, [outer, len, inner, count], fill),
        OpCall::Cumsum { x, outer, len, inner, out } => {
            let f = dev.builtin(kernel(&sources::SCAN, "cumsum_main", vec![index_type(outer * len * inner)]))?;
            let p = ScanParams { outer: outer as u64, len: len as u64, inner: inner as u64 };
            let grid = ((outer * inner).clamp(1, 65_535) as u32, 1, 1);
            q.launch_builtin(dev, &f, grid, (BLOCK, 1, 1), &[operand(&x)?, operand(&out)?], &p, &[x.buf, out.buf])
        }
        OpCall::Reduce { op, x, outer, len, inner, out, .. } => reduce(q, dev, cx, op, x, [outer, len, inner], out),
        OpCall::Norm { kind, x, weight, bias, rows, cols, eps, act, out } => norm(q, dev, kind, [x, out], [weight, bias], [rows, cols], (eps, act)),
        OpCall::Conv2d { x, weight, bias, act, out, geometry } => conv2d(q, dev, [x, weight, out], (bias, act), geometry),
        OpCall::Pool2d { kind, x, out, geometry } => {
            let n = out.layout.numel();
            let defines = vec![("POOL", (kind as u32).to_string()), index_type(n.max(x.layout.numel()))];
            let f = dev.builtin(kernel(&sources::CONV, "pool2d_main", defines))?;
            q.launch_builtin(dev, &f, (blocks(dev, n, BLOCK as usize), 1, 1), (BLOCK, 1, 1), &[operand(&x)?, operand(&out)?], &ConvParams::new(&geometry), &[x.buf, out.buf])
        }
        OpCall::Attention { q: query, k: key, v: value, mask, out, dims, scale, causal } => attention(q, dev, [query, key, value, out], mask, dims, (scale, causal)),
        OpCall::Matmul { a, b, bias, act, out, m, n, k, variant, .. } => matmul(q, dev, cx, [a, b, out], (bias, act), [m, n, k], variant),
    }
}

/// `out = op(x)` over any view (elementwise.cu `unary_main`).
fn unary(q: &CudaQueue, dev: &CudaDevice, op: UnaryOp, x: Operand<'_>, out: Operand<'_>) -> Result<()> {
    let access = x.layout.access();
    let n = out.layout.numel();
    let f = dev.builtin(kernel(
        &sources::ELEMENTWISE,
        "unary_main",
        vec![("OP", op.code().to_string()), ("A_MODE", access.code().to_string()), index_type(n.max(extent(x.layout)))],
    ))?;
    let p = ElementwiseParams {
        n: n as u64,
        rank: out.layout.shape.len() as u32,
        shape: padded(&out.layout.shape, 1),
        a_strides: padded(&x.layout.strides, 0),
        a_period: access.period() as u64,
        ..Default::default()
    };
    q.launch_builtin(dev, &f, (blocks(dev, n, BLOCK as usize), 1, 1), (BLOCK, 1, 1), &[operand(&x)?, operand(&out)?], &p, &[x.buf, out.buf])
}

/// `out = act(op(a, b))` with broadcasting (elementwise.cu `binary_main`).
fn binary(q: &CudaQueue, dev: &CudaDevice, (op, act): (BinaryOp, Option<UnaryOp>), [a, b, out]: [Operand<'_>; 3]) -> Result<()> {
    let (a_access, b_access) = (a.layout.access(), b.layout.access());
    let n = out.layout.numel();
    let defines = vec![
        ("OP", op.code().to_string()),
        ("ACT", act.map_or(0, |f| f.code()).to_string()),
        ("A_MODE", a_access.code().to_string()),
        ("B_MODE", b_access.code().to_string()),
        index_type(n.max(extent(a.layout)).max(extent(b.layout))),
    ];
    let f = dev.builtin(kernel(&sources::ELEMENTWISE, "binary_main", defines))?;
    let p = ElementwiseParams {
        n: n as u64,
        rank: out.layout.shape.len() as u32,
        shape: padded(&out.layout.shape, 1),
        a_strides: padded(&a.layout.strides, 0),
        b_strides: padded(&b.layout.strides, 0),
        a_period: a_access.period() as u64,
        b_period: b_access.period() as u64,
        ..Default::default()
    };
    let pointers = [operand(&a)?, operand(&b)?, operand(&out)?];
    q.launch_builtin(dev, &f, (blocks(dev, n, BLOCK as usize), 1, 1), (BLOCK, 1, 1), &pointers, &p, &[a.buf, b.buf, out.buf])
}

/// A strided copy of `x` into `out` (copy.cu).
fn copy(q: &CudaQueue, dev: &CudaDevice, x: Operand<'_>, out: Operand<'_>) -> Result<()> {
    let n = out.layout.numel();
    let contiguous = u32::from(out.layout.is_contiguous()).to_string();
    let largest = n.max(extent(x.layout)).max(extent(out.layout));
    let f = dev.builtin(kernel(&sources::COPY, "copy_main", vec![("OUT_CONTIGUOUS", contiguous), index_type(largest)]))?;
    let p = CopyParams {
        n: n as u64,
        rank: out.layout.shape.len() as u32,
        shape: padded(&out.layout.shape, 1),
        strides: padded(&x.layout.strides, 0),
        out_strides: padded(&out.layout.strides, 0),
        ..Default::default()
    };
    q.launch_builtin(dev, &f, (blocks(dev, n, BLOCK as usize), 1, 1), (BLOCK, 1, 1), &[operand(&x)?, operand(&out)?], &p, &[x.buf, out.buf])
}

/// `out = x as to` (indexing.cu `cast_main`); 16-bit views may start inside a word.
fn cast(q: &CudaQueue, dev: &CudaDevice, x: Operand<'_>, (from, to): (DType, DType), out: Operand<'_>) -> Result<()> {
    let n = out.layout.numel();
    if to.size() == 2 && out.layout.offset % 2 != 0 {
        return Err(Error::Device("internal: a 16-bit cast output starts inside a word".into()));
    }
    let defines = vec![("FROM", from.code().to_string()), ("TO", to.code().to_string()), index_type(n.max(x.layout.end()))];
    let f = dev.builtin(kernel(&sources::INDEXING, "cast_main", defines))?;
    let mut p = views_params(&out, &[&x]);
    p.offsets[0] = x.layout.offset as u64;
    // The source as its block base (its view may start inside a word) plus the offset.
    let src = super::queue::device_memory(x.buf)?.ptr;
    let dst = super::queue::device_memory(out.buf)?.ptr + (out.layout.offset * to.size()) as u64;
    q.launch_builtin(dev, &f, (blocks(dev, n.div_ceil(4 / to.size()), BLOCK as usize), 1, 1), (BLOCK, 1, 1), &[src, dst], &p, &[x.buf, out.buf])
}

/// `out = cond ? a : b` (indexing.cu `where_main`).
fn where_(q: &CudaQueue, dev: &CudaDevice, [cond, a, b, out]: [Operand<'_>; 4], cond_dtype: DType) -> Result<()> {
    let n = out.layout.numel();
    let largest = [&cond, &a, &b].iter().map(|o| extent(o.layout)).fold(n, usize::max);
    let defines = vec![("COND_F32", u32::from(cond_dtype == crate::DType::F32).to_string()), index_type(largest)];
    let f = dev.builtin(kernel(&sources::INDEXING, "where_main", defines))?;
    let p = views_params(&out, &[&cond, &a, &b]);
    let pointers = [operand(&cond)?, operand(&a)?, operand(&b)?, operand(&out)?];
    q.launch_builtin(dev, &f, (blocks(dev, n, BLOCK as usize), 1, 1), (BLOCK, 1, 1), &pointers, &p, &[cond.buf, a.buf, b.buf, out.buf])
}

/// `out = x` indexed along one axis by `indices` (indexing.cu `gather_main`).
fn gather(q: &CudaQueue, dev: &CudaDevice, [x, indices, out]: [Operand<'_>; 3], signed: bool, [outer, len, inner, count]: [usize; 4], fill: u32) -> Result<()> {
    let n = out.layout.numel();
    let defines = vec![("SIGNED", u32::from(signed).to_string()), index_type(n.max(outer * len * inner))];
    let f = dev.builtin(kernel(&sources::INDEXING, "gather_main", defines))?;
    let p = GatherParams { outer: outer as u64, len: len as u64, inner: inner as u64, count: count as u64, fill, pad: 0 };
    let pointers = [operand(&x)?, operand(&indices)?, operand(&out)?];
    q.launch_builtin(dev, &f, (blocks(dev, n, BLOCK as usize), 1, 1), (BLOCK, 1, 1), &pointers, &p, &[x.buf, indices.buf, out.buf])
}

/// Layer or RMS norm of rows with optional weight, bias and activation (norm.cu).
fn norm(q: &CudaQueue, dev: &CudaDevice, kind: NormKind, [x, out]: [Operand<'_>; 2], [weight, bias]: [Option<Operand<'_>>; 2], [rows, cols]: [usize; 2], (eps, act): (f32, Option<UnaryOp>)) -> Result<()> {
    let defines = vec![
        ("KIND", kind.code().to_string()),
        ("ACT", act.map_or(0, |f| f.code()).to_string()),
        ("HAS_WEIGHT", u32::from(weight.is_some()).to_string()),
        ("HAS_BIAS", u32::from(bias.is_some()).to_string()),
        index_type(rows * cols),
    ];
    let f = dev.builtin(kernel(&sources::NORM, "norm_main", defines))?;
    let p = NormParams { rows: rows as u64, cols: cols as u64, eps, pad: 0 };
    let optional = |o: &Option<Operand<'_>>| o.as_ref().map_or(Ok(0), operand);
    let pointers = [operand(&x)?, optional(&weight)?, optional(&bias)?, operand(&out)?];
    let mut held = vec![x.buf, out.buf];
    held.extend(weight.iter().chain(bias.iter()).map(|o| o.buf));
    q.launch_builtin(dev, &f, (rows.clamp(1, 65_535) as u32, 1, 1), (BLOCK, 1, 1), &pointers, &p, &held)
}

/// conv2d with its bias and activation epilogue (conv.cu `conv2d_main`).
fn conv2d(q: &CudaQueue, dev: &CudaDevice, [x, weight, out]: [Operand<'_>; 3], (bias, act): (Option<Operand<'_>>, Option<UnaryOp>), geometry: Conv2dGeometry) -> Result<()> {
    let n = out.layout.numel();
    let mut defines = epilogue_defines(&bias, act).to_vec();
    defines.push(index_type(n.max(x.layout.numel()).max(weight.layout.numel())));
    let f = dev.builtin(kernel(&sources::CONV, "conv2d_main", defines))?;
    let bias_ptr = bias.as_ref().map_or(Ok(0), operand)?;
    let mut held = vec![x.buf, weight.buf, out.buf];
    held.extend(bias.iter().map(|o| o.buf));
    let pointers = [operand(&x)?, operand(&weight)?, bias_ptr, operand(&out)?];
    q.launch_builtin(dev, &f, (blocks(dev, n, BLOCK as usize), 1, 1), (BLOCK, 1, 1), &pointers, &ConvParams::new(&geometry), &held)
}

/// Scaled dot-product attention, one block per query row (attention.cu).
fn attention(q: &CudaQueue, dev: &CudaDevice, [query, key, value, out]: [Operand<'_>; 4], mask: Option<Operand<'_>>, [b, h, lq, lk, d, dv]: [usize; 6], (scale, causal): (f32, bool)) -> Result<()> {
    let largest = [Some(&query), Some(&key), Some(&value), mask.as_ref(), Some(&out)].into_iter().flatten().map(|o| extent(o.layout).max(o.layout.numel())).max().unwrap_or(0);
    let defines = vec![("HAS_MASK", u32::from(mask.is_some()).to_string()), index_type(largest)];
    let f = dev.builtin(kernel(&sources::ATTENTION, "attention_main", defines))?;
    let p = AttentionParams {
        bh: (b * h) as u64,
        heads: h as u64,
        lq: lq as u64,
        lk: lk as u64,
        d: d as u64,
        dv: dv as u64,
        scale,
        causal: u32::from(causal),
        q: view4(Some(&query)),
        k: view4(Some(&key)),
        v: view4(Some(&value)),
        mask: view4(mask.as_ref()),
    };
    let mask_ptr = mask.as_ref().map_or(Ok(0), operand)?;
    let pointers = [operand(&query)?, operand(&key)?, operand(&value)?, mask_ptr, operand(&out)?];
    let mut held = vec![query.buf, key.buf, value.buf, out.buf];
    held.extend(mask.iter().map(|o| o.buf));
    q.launch_builtin(dev, &f, ((b * h * lq).clamp(1, 65_535) as u32, 1, 1), (64, 1, 1), &pointers, &p, &held)
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
fn temp(cx: &OpContext<'_>, elements: usize) -> Result<Arc<BufferInner>> {
    (cx.temp)((elements.max(1) * 4) as u64)
}

#[allow(clippy::too_many_arguments)]
fn reduce(q: &CudaQueue, dev: &CudaDevice, cx: &OpContext<'_>, op: ReduceOp, x: Operand<'_>, [outer, len, inner]: [usize; 3], out: Operand<'_>) -> Result<()> {
    let argmax = op == ReduceOp::Argmax;
    let scale = if op == ReduceOp::Mean { 1.0 / len as f32 } else { 1.0 };
    let idx = index_type(outer * len * inner);
    let op_define = ("OP", op.code().to_string());
    if inner >= 32 && outer * inner >= 64 * dev.sm_count as usize {
        // Many output columns: one thread each, coalesced reads, one pass.
        let f = dev.builtin(kernel(&sources::REDUCE, "reduce_cols", vec![op_define, idx]))?;
        let p = ReduceParams { outer: outer as u64, len: len as u64, inner: inner as u64, chunk: len as u64, chunks: 1, scale, write_values: 1 };
        let (values, indices) = if argmax { (0, operand(&out)?) } else { (operand(&out)?, 0) };
        return q.launch_builtin(dev, &f, (blocks(dev, outer * inner, BLOCK as usize), 1, 1), (BLOCK, 1, 1), &[operand(&x)?, values, indices], &p, &[x.buf, out.buf]);
    }
    // Passes of one block per (row, chunk): enough chunks to fill the GPU when rows are few.
    let mut input: (Arc<BufferInner>, usize) = (x.buf.clone(), x.layout.offset);
    let mut input_indices: Option<Arc<BufferInner>> = None;
    let (mut outer, mut len, mut inner) = (outer, len, inner);
    loop {
        let rows = outer * inner;
        let chunks = (4 * dev.sm_count as usize).div_ceil(rows).clamp(1, len.div_ceil(2048).max(1));
        let chunk = len.div_ceil(chunks);
        let last = chunks == 1;
        let first = input_indices.is_none();
        let f = dev.builtin(kernel(&sources::REDUCE, "reduce_rows", vec![op_define.clone(), ("FIRST", u32::from(first).to_string()), idx.clone()]))?;
        let (values, indices): (Option<Arc<BufferInner>>, Option<Arc<BufferInner>>) = match (last, argmax) {
            (true, _) => (None, None),
            (false, true) => (Some(temp(cx, rows * chunks)?), Some(temp(cx, rows * chunks)?)),
            (false, false) => (Some(temp(cx, rows * chunks)?), None),
        };
        let values_ptr = match (&values, last && argmax) {
            (Some(v), _) => address(v, 0)?,
            (None, true) => 0,
            (None, false) => operand(&out)?,
        };
        let indices_ptr = match (&indices, last && argmax) {
            (Some(i), _) => address(i, 0)?,
            (None, true) => operand(&out)?,
            (None, false) => 0,
        };
        let p = ReduceParams {
            outer: outer as u64,
            len: len as u64,
            inner: inner as u64,
            chunk: chunk as u64,
            chunks: chunks as u64,
            scale: if last { scale } else { 1.0 },
            write_values: u32::from(!(last && argmax)),
        };
        let in_ptr = address(&input.0, input.1)?;
        let in_idx = input_indices.as_ref().map_or(Ok(0), |i| address(i, 0))?;
        let mut held: Vec<&Arc<BufferInner>> = vec![&input.0, out.buf];
        held.extend(input_indices.iter().chain(values.iter()).chain(indices.iter()));
        let grid = ((rows * chunks).clamp(1, 65_535) as u32, 1, 1);
        q.launch_builtin(dev, &f, grid, (BLOCK, 1, 1), &[in_ptr, in_idx, values_ptr, indices_ptr], &p, &held)?;
        if last {
            return Ok(());
        }
        input = (values.ok_or_else(|| Error::Device("internal: reduction pass without output".into()))?, 0);
        input_indices = indices;
        (outer, len, inner) = (rows, chunks, 1);
    }
}

/// Epilogue defines of matmul.cu.
fn epilogue_defines(bias: &Option<Operand<'_>>, act: Option<UnaryOp>) -> [(&'static str, String); 2] {
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
