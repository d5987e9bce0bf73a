//! The op catalogue on wgpu: each [`OpCall`] becomes one or more built-in kernel launches.
//! The parameter layouts written here are documented at the top of each shader file.

use std::sync::Arc;

use super::pipelines::{self as shaders, Builtin, WgslSource, MATMUL_LOADS_SCALAR, MATMUL_LOADS_VEC4, STORE_F16, STORE_F32};
use super::queue::{Bind, GpuQueue};
use super::split;
use super::GpuDevice;
use crate::backend::OpContext;
use crate::buffer::BufferInner;
use crate::base::layout::{Layout, MAX_RANK};
use crate::ops::{OpCall, Operand, UnaryOp};
use crate::{DType, Error, Result};

pub(crate) fn builtin(source: &'static WgslSource, entry: &'static str, constants: Vec<(&'static str, u32)>) -> Builtin {
    Builtin { source, entry, constants, prelude: Vec::new() }
}

/// The storage-dtype declarations of elementwise.wgsl / matmul.wgsl for `dtype`.
pub(crate) fn store(dev: &GpuDevice, dtype: DType) -> Result<&'static str> {
    match dtype {
        DType::F32 => Ok(STORE_F32),
        DType::F16 if dev.device.features().contains(wgpu::Features::SHADER_F16) => Ok(STORE_F16),
        other => Err(Error::Device(format!("internal: no {other} storage for the elementwise and matmul kernels on this adapter"))),
    }
}

/// A tile configuration of matmul.wgsl.
pub(crate) struct MatmulVariant {
    /// Name users and policies select it by.
    pub name: &'static str,
    /// Output rows and columns per workgroup.
    pub tile: [usize; 2],
    /// The WGSL constants prepended to matmul.wgsl.
    pub constants: &'static str,
    /// Its entry point: `matmul_main` (tiles in workgroup memory) or `matmul_direct_main`
    /// (no workgroup memory or barriers: software adapters).
    pub entry: &'static str,
}

/// The matmul tile configurations: 256 invocations per workgroup for the default 64x64
/// (4x4 per invocation), 32x32 (2x2) for small or skinny products, 128x64 (8x4) for large;
/// `direct`, 64 invocations of 4x4 reading A and B from memory, for software adapters.
pub(crate) const MATMUL_VARIANTS: [MatmulVariant; 4] = [
    MatmulVariant { name: "tile64", tile: [64, 64], constants: "const TM: u32 = 64u; const TN: u32 = 64u; const RM: u32 = 4u; const RN: u32 = 4u;", entry: "matmul_main" },
    MatmulVariant { name: "tile32", tile: [32, 32], constants: "const TM: u32 = 32u; const TN: u32 = 32u; const RM: u32 = 2u; const RN: u32 = 2u;", entry: "matmul_main" },
    MatmulVariant { name: "tile128x64", tile: [128, 64], constants: "const TM: u32 = 128u; const TN: u32 = 64u; const RM: u32 = 8u; const RN: u32 = 4u;", entry: "matmul_main" },
    MatmulVariant { name: "direct", tile: [16, 64], constants: "const TM: u32 = 16u; const TN: u32 = 64u; const RM: u32 = 4u; const RN: u32 = 4u;", entry: "matmul_direct_main" },
];

/// The default tile configuration for an `m x n` output on `dev`, and why: `direct` on
/// software adapters (unless [`crate::DeviceOptions::software_kernels`] is off), else 128x64
/// tiles for large outputs (1.3x the GFLOP/s of 64x64 on lavapipe at 256 and 1024), 32x32
/// when 64x64 tiles would leave fewer than 16 workgroups, else 64x64. (`"auto"` in a policy
/// tunes per device.)
pub(crate) fn default_matmul_variant(dev: &GpuDevice, options: &crate::DeviceOptions, m: usize, n: usize) -> (&'static str, &'static str) {
    if dev.software && options.software_kernels {
        ("direct", "the default on software adapters (no workgroup memory or barriers; 512^3: 7x the speed of tile128x64 on SwiftShader, 3.4x on lavapipe)")
    } else if m >= 256 && n >= 256 {
        ("tile128x64", "the default for outputs of at least 256 x 256")
    } else if m.div_ceil(64) * n.div_ceil(64) < 16 {
        ("tile32", "the default when 64 x 64 tiles would give fewer than 16 workgroups")
    } else {
        ("tile64", "the default for mid-sized outputs")
    }
}

/// The variant named `name`, or the default for an `m x n` output.
fn matmul_variant(dev: &GpuDevice, cx: &OpContext<'_>, name: Option<&str>, m: usize, n: usize) -> Result<&'static MatmulVariant> {
    let name = name.unwrap_or(default_matmul_variant(dev, cx.options, m, n).0);
    MATMUL_VARIANTS.iter().find(|v| v.name == name).ok_or_else(|| {
        let names: Vec<&str> = MATMUL_VARIANTS.iter().map(|v| v.name).collect();
        Error::Invalid(format!("unknown webgpu matmul variant `{name}`: expected one of {names:?}"))
    })
}

/// Whether the device runs the software adapters' kernel variants (see
/// [`crate::DeviceOptions::software_kernels`]).
pub(crate) fn software_kernels(dev: &GpuDevice, cx: &OpContext<'_>) -> bool {
    dev.software && cx.options.software_kernels
}

/// Workgroup grid for `groups` workgroups of a 1-D problem: a 2-D grid past the per-dimension
/// limit.
pub(crate) fn grid_1d(dev: &GpuDevice, groups: u64) -> Result<[u32; 3]> {
    let max = u64::from(dev.limits.max_compute_workgroups_per_dimension);
    if groups <= max {
        return Ok([groups as u32, 1, 1]);
    }
    let y = groups.div_ceil(max);
    if y > max {
        return Err(Error::Limit { what: "workgroups of one launch".into(), value: groups, limit: "max_compute_workgroups_per_dimension squared", max: max * max });
    }
    Ok([max as u32, y as u32, 1])
}

pub(crate) fn u32_of(what: &str, v: usize) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::Limit { what: what.into(), value: v as u64, limit: "u32 indexing of the webgpu kernels", max: u32::MAX.into() })
}

/// Error unless every element of `o` is reachable through one storage binding.
pub(crate) fn check_binding(dev: &GpuDevice, o: &Operand<'_>) -> Result<()> {
    let bytes = o.layout.end() as u64 * 4;
    let max = dev.limits.max_storage_buffer_binding_size;
    if bytes > max {
        let what = format!(
            "the end of a {}-element view within its buffer, in bytes (webgpu kernels bind a buffer from its start, so a view far into a large buffer reaches this far)",
            o.layout.numel()
        );
        return Err(Error::Limit { what, value: bytes, limit: "max_storage_binding_size", max });
    }
    Ok(())
}

/// `[offset, strides padded to MAX_RANK]` of a view.
pub(crate) fn view_words(l: &Layout) -> Result<Vec<u32>> {
    let mut w = vec![u32_of("tensor offset", l.offset)?];
    for d in 0..MAX_RANK {
        w.push(u32_of("tensor stride", l.strides.get(d).copied().unwrap_or(0))?);
    }
    Ok(w)
}

/// Parameters of elementwise.wgsl / copy.wgsl: n, rank, output offset, shape, input views.
pub(crate) fn elementwise_params(out: &Operand<'_>, inputs: &[&Operand<'_>]) -> Result<Vec<u32>> {
    let l = out.layout;
    let mut p = vec![u32_of("element count", l.numel())?, l.shape.len() as u32, u32_of("output offset", l.offset)?];
    for d in 0..MAX_RANK {
        p.push(u32_of("tensor extent", l.shape.get(d).copied().unwrap_or(1))?);
    }
    for x in inputs {
        p.extend(view_words(x.layout)?);
    }
    Ok(p)
}

pub(crate) fn run_op(q: &GpuQueue, dev: &GpuDevice, cx: &OpContext<'_>, call: OpCall<'_>) -> Result<()> {
    match call {
        OpCall::Matmul { a, b, bias, act, out, m, n, k, variant, dtype } => matmul(q, dev, cx, [a, b, out], bias, act, [m, n, k], (variant, dtype)),
    }
}

/// A kernel that takes rows whole (`PASS` 0) or, where the device ends long loops early, in
/// chunks: `PASS` 1 stores statistics per (row, chunk), `PASS` 2 merges them and writes.
pub(crate) struct RowPasses {
    pub source: &'static WgslSource,
    pub entry: &'static str,
    /// The software adapters' entry point (one invocation per (row, chunk), no barriers), if
    /// the file has one.
    pub serial_entry: Option<&'static str>,
    pub constants: Vec<(&'static str, u32)>,
    /// WGSL prepended to the file (see [`Builtin::prelude`]).
    pub prelude: Vec<&'static str>,
    /// The binding of the statistics and their f32 words per (row, chunk).
    pub stats: (u32, usize),
}

/// Launch `kernel` over `rows` rows of `cols`: one workgroup per (row, chunk), or with the
/// software adapters' kernels one invocation per (row, chunk), with `params` followed by the
/// columns per chunk and the chunks per row.
pub(crate) fn row_passes(q: &GpuQueue, dev: &GpuDevice, cx: &OpContext<'_>, kernel: RowPasses, [rows, cols]: [usize; 2], mut params: Vec<u32>, binds: &[(u32, Bind<'_>)]) -> Result<()> {
    let serial = kernel.serial_entry.filter(|_| software_kernels(dev, cx));
    let chunk = match serial {
        Some(_) => split::serial_row_chunk(dev.max_loop_iterations, rows, cols),
        None => split::row_chunk(dev.max_loop_iterations, cols),
    };
    let chunks = chunk.map_or(1, |c| cols.div_ceil(c));
    params.extend([u32_of("columns", chunk.unwrap_or(cols))?, u32_of("chunks", chunks)?]);
    let per_group = if serial.is_some() { 64 } else { 1 };
    let grid = grid_1d(dev, (rows * chunks).div_ceil(per_group) as u64)?;
    let entry = serial.unwrap_or(kernel.entry);
    let pipeline = |pass: u32| {
        let mut constants = kernel.constants.clone();
        constants.push(("PASS", pass));
        dev.builtin(Builtin { prelude: kernel.prelude.clone(), ..builtin(kernel.source, entry, constants) })
    };
    let (stats_at, words) = kernel.stats;
    let mut binds = binds.to_vec();
    if chunks == 1 {
        binds.push((stats_at, Bind::SpareWrite));
        return q.dispatch(dev, pipeline(0), &params, &binds, grid);
    }
    let stats = split_temp(dev, cx, rows * chunks * words)?;
    binds.push((stats_at, Bind::Mem(&stats)));
    q.dispatch(dev, pipeline(1), &params, &binds, grid)?;
    q.dispatch(dev, pipeline(2), &params, &binds, grid)
}

/// Temporary device memory for intermediate results.
pub(crate) fn temp(cx: &OpContext<'_>, elements: usize) -> Result<Arc<BufferInner>> {
    (cx.temp)((elements * 4) as u64)
}

/// [`temp`] of f32 values that one storage binding must reach, for the work a device with a
/// loop-iteration limit splits across launches: an error past the binding limit.
pub(crate) fn split_temp(dev: &GpuDevice, cx: &OpContext<'_>, elements: usize) -> Result<Arc<BufferInner>> {
    let bytes = elements as u64 * 4;
    let max = dev.limits.max_storage_buffer_binding_size;
    if bytes > max {
        return Err(Error::Limit { what: "temporary of a launch split for the loop-iteration limit, in bytes".into(), value: bytes, limit: "max_storage_buffer_binding_size", max });
    }
    temp(cx, elements)
}

/// matmul.wgsl's parameters (see its header) for `[a, b, out]` with the batch of each
/// dispatch, its k range and flags (`[4]`, `[31..34]`) left at 0.
fn matmul_params([a, b, out]: [&Operand<'_>; 3], bias: Option<&Operand<'_>>, [m, n, k]: [usize; 3]) -> Result<Vec<u32>> {
    let r = out.layout.shape.len();
    let batch_rank = r - 2;
    let mut params = vec![
        u32_of("m", m)?,
        u32_of("n", n)?,
        u32_of("k", k)?,
        batch_rank as u32,
        0,
        u32_of("offset", a.layout.offset)?,
        u32_of("stride", a.layout.strides[r - 2])?,
        u32_of("stride", a.layout.strides[r - 1])?,
        u32_of("offset", b.layout.offset)?,
        u32_of("stride", b.layout.strides[r - 2])?,
        u32_of("stride", b.layout.strides[r - 1])?,
        u32_of("offset", out.layout.offset)?,
    ];
    for source in [&out.layout.shape, &a.layout.strides, &b.layout.strides] {
        for &v in &source[..batch_rank] {
            params.push(u32_of("batch extent or stride", v)?);
        }
        params.resize(params.len() + MAX_RANK - 2 - batch_rank, 0);
    }
    params.push(bias.map_or(Ok(0), |o| u32_of("offset", o.layout.offset))?);
    params.extend([0, 0, 0]);
    Ok(params)
}

#[allow(clippy::too_many_arguments)]
fn matmul(
    q: &GpuQueue,
    dev: &GpuDevice,
    cx: &OpContext<'_>,
    [a, b, out]: [Operand<'_>; 3],
    bias: Option<Operand<'_>>,
    act: Option<UnaryOp>,
    [m, n, k]: [usize; 3],
    (variant, dtype): (Option<&str>, DType),
) -> Result<()> {
    let variant = matmul_variant(dev, cx, variant, m, n)?;
    for o in [&a, &b, &out] {
        check_binding(dev, o)?;
    }
    let r = out.layout.shape.len();
    let mut params = matmul_params([&a, &b, &out], bias.as_ref(), [m, n, k])?;
    let max = dev.limits.max_compute_workgroups_per_dimension as usize;
    let [tm, tn] = variant.tile;
    let (gx, gy) = (n.div_ceil(tn), m.div_ceil(tm));
    if gx > max || gy > max {
        return Err(Error::Limit {
            what: format!("matmul output {m}x{n} in {tm}x{tn} tiles per dimension"),
            value: gx.max(gy) as u64,
            limit: "max_compute_workgroups_per_dimension",
            max: max as u64,
        });
    }
    let batches = out.layout.numel() / (m * n);
    let constants = vec![("HAS_BIAS", u32::from(bias.is_some())), ("ACT", act.map_or(0, |f| f.code()))];
    // vec4 tile loads when every vec4 lies inside one row of A (along k) and of B (along n).
    let rows_of_vec4 = |o: &Operand<'_>, inner: usize| {
        o.layout.strides[r - 1] == 1 && inner % 4 == 0 && o.layout.offset % 4 == 0 && o.layout.strides[..r - 1].iter().all(|s| s % 4 == 0)
    };
    let vec4 = rows_of_vec4(&a, k) && rows_of_vec4(&b, n);
    let loads = if vec4 { MATMUL_LOADS_VEC4 } else { MATMUL_LOADS_SCALAR };
    let pipeline = dev.builtin(Builtin { source: &shaders::MATMUL, entry: variant.entry, constants, prelude: vec![store(dev, dtype)?, variant.constants, loads] });
    // Where the device ends long loops early, k in pieces with f32 sums kept in between.
    let pieces = if variant.entry == "matmul_direct_main" {
        split::matmul_direct_k(dev.max_loop_iterations, vec4, k)
    } else {
        split::matmul_k(dev.max_loop_iterations, variant.tile, vec4, k)
    };
    let partial = if pieces.len() > 1 { Some(split_temp(dev, cx, batches * m * n)?) } else { None };
    let binds = [
        (1, Bind::Mem(a.buf)),
        (2, Bind::Mem(b.buf)),
        (3, Bind::Mem(out.buf)),
        (4, bias.as_ref().map_or(Bind::SpareRead, |o| Bind::Mem(o.buf))),
        (5, partial.as_ref().map_or(Bind::SpareWrite, Bind::Mem)),
    ];
    let mut first = 0;
    while first < batches {
        let count = (batches - first).min(max);
        params[4] = u32_of("batch", first)?;
        for (i, range) in pieces.iter().enumerate() {
            (params[31], params[32], params[33]) = (range[0] as u32, range[1] as u32, split::flags(i, pieces.len()));
            q.dispatch(dev, pipeline.clone(), &params, &binds, [gx as u32, gy as u32, count as u32])?;
        }
        first += count;
    }
    Ok(())
}
