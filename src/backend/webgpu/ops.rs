//! The op catalogue on wgpu: each [`OpCall`] becomes one or more built-in kernel launches.
//! The parameter layouts written here are documented at the top of each shader file.

use std::sync::Arc;

use super::pipelines::{self as shaders, Builtin, WgslSource, MATMUL_LOADS_SCALAR, MATMUL_LOADS_VEC4, REDUCE_WITH_SUBGROUPS, REDUCE_WITH_TREE, STORE_F16, STORE_F32};
use super::queue::{Bind, GpuQueue};
use super::split;
use super::GpuDevice;
use crate::backend::OpContext;
use crate::buffer::BufferInner;
use crate::base::layout::{Layout, MAX_RANK};
use crate::ops::{BinaryOp, Conv2dGeometry, NormKind, OpCall, Operand, ReduceOp, UnaryOp};
use crate::{DType, Error, Result};

/// Elements each reduction workgroup combines per pass (256 threads x 4).
const REDUCE_CHUNK: usize = 1024;
/// Elements each invocation of the `serial` reduction combines per pass.
const REDUCE_SERIAL_CHUNK: usize = 32;

pub(crate) fn builtin(source: &'static WgslSource, entry: &'static str, constants: Vec<(&'static str, u32)>) -> Builtin {
    Builtin { source, entry, constants, prelude: Vec::new() }
}

/// The storage-dtype declarations of elementwise.wgsl / matmul.wgsl for `dtype`.
fn store(dev: &GpuDevice, dtype: DType) -> Result<&'static str> {
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

/// The reduction variants of this device: the workgroup `tree`, `subgroup` (subgroup
/// operations combine each workgroup's values) where the adapter has subgroups, and `serial`
/// (each invocation reduces a chunk alone: no workgroup memory, no barriers).
pub(crate) fn reduce_variants(dev: &GpuDevice) -> Vec<&'static str> {
    if dev.device.features().contains(wgpu::Features::SUBGROUP) {
        vec!["subgroup", "tree", "serial"]
    } else {
        vec!["tree", "serial"]
    }
}

/// Whether the device runs the software adapters' kernel variants (see
/// [`crate::DeviceOptions::software_kernels`]).
fn software_kernels(dev: &GpuDevice, cx: &OpContext<'_>) -> bool {
    dev.software && cx.options.software_kernels
}

/// The reduction variant this device runs unless told otherwise, and why: `serial` on
/// software adapters, else `subgroup` where the adapter has subgroups and `use_subgroups` is
/// on, else `tree`.
pub(crate) fn default_reduce_variant(dev: &GpuDevice, options: &crate::DeviceOptions) -> (&'static str, String) {
    if dev.software && options.software_kernels {
        return ("serial", "the default on software adapters, which run each workgroup's SIMD groups as coroutines on a CPU thread, switching at every barrier (DeviceOptions::software_kernels)".into());
    }
    let use_subgroups = options.use_subgroups;
    if use_subgroups && reduce_variants(dev).contains(&"subgroup") {
        ("subgroup", "the default (DeviceOptions::use_subgroups is true)".into())
    } else {
        ("tree", format!("the default (DeviceOptions::use_subgroups is {use_subgroups}{})", if use_subgroups { ", but the adapter has no subgroups" } else { "" }))
    }
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
fn view_words(l: &Layout) -> Result<Vec<u32>> {
    let mut w = vec![u32_of("tensor offset", l.offset)?];
    for d in 0..MAX_RANK {
        w.push(u32_of("tensor stride", l.strides.get(d).copied().unwrap_or(0))?);
    }
    Ok(w)
}

/// Parameters of elementwise.wgsl / copy.wgsl: n, rank, output offset, shape, input views.
fn elementwise_params(out: &Operand<'_>, inputs: &[&Operand<'_>]) -> Result<Vec<u32>> {
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

/// Whether an elementwise launch can take four elements per invocation (the vec4 entry
/// points of elementwise.wgsl): the element count, the output offset and every operand
/// offset multiples of 4, the output contiguous, each operand contiguous or a repeated block
/// whose period is a multiple of 4.
fn vec4_elementwise(out: &Operand<'_>, inputs: &[&Operand<'_>]) -> bool {
    use crate::base::layout::Access;
    let whole = |o: &Operand<'_>| o.layout.offset % 4 == 0;
    out.layout.numel() % 4 == 0
        && out.layout.is_contiguous()
        && whole(out)
        && inputs.iter().all(|x| {
            whole(x)
                && match x.layout.access() {
                    Access::Contiguous => true,
                    Access::Repeated { period } => period % 4 == 0,
                    Access::Strided => false,
                }
        })
}

pub(crate) fn run_op(q: &GpuQueue, dev: &GpuDevice, cx: &OpContext<'_>, call: OpCall<'_>) -> Result<()> {
    match call {
        OpCall::Unary { op, x, out, dtype } => unary(q, dev, op, x, out, dtype),
        OpCall::Binary { op, act, a, b, out, dtype } => binary(q, dev, op, act, [a, b, out], dtype),
        OpCall::Copy { x, out } => {
            check_binding(dev, &x)?;
            check_binding(dev, &out)?;
            let contiguous = out.layout.is_contiguous();
            let pipeline = dev.builtin(builtin(&shaders::COPY, "copy_main", vec![("OUT_CONTIGUOUS", u32::from(contiguous))]));
            let grid = grid_1d(dev, out.layout.numel().div_ceil(256) as u64)?;
            let mut params = elementwise_params(&out, &[&x])?;
            params.extend(view_words(out.layout)?);
            q.dispatch(dev, pipeline, &params, &[(1, Bind::Mem(x.buf)), (2, Bind::Mem(out.buf))], grid)
        }
        OpCall::Cast { x, from, to, out } => cast(q, dev, x, (from, to), out),
        OpCall::Where { cond, cond_dtype, a, b, out } => {
            for o in [&cond, &a, &b, &out] {
                check_binding(dev, o)?;
            }
            let constants = vec![("COND_F32", u32::from(cond_dtype == crate::DType::F32))];
            let pipeline = dev.builtin(builtin(&shaders::INDEXING, "where_main", constants));
            let grid = grid_1d(dev, out.layout.numel().div_ceil(256) as u64)?;
            let binds = [(1, Bind::Mem(cond.buf)), (2, Bind::Mem(a.buf)), (3, Bind::Mem(b.buf)), (4, Bind::Mem(out.buf))];
            q.dispatch(dev, pipeline, &elementwise_params(&out, &[&cond, &a, &b])?, &binds, grid)
        }
        OpCall::Gather { x, indices, signed, outer, len, inner, count, fill, out } => gather(q, dev, [x, indices, out], signed, [outer, len, inner, count], fill),
        OpCall::Cumsum { x, outer, len, inner, out } => {
            check_binding(dev, &x)?;
            check_binding(dev, &out)?;
            let params = vec![u32_of("outer", outer)?, u32_of("length", len)?, u32_of("inner", inner)?, u32_of("offset", x.layout.offset)?, u32_of("offset", out.layout.offset)?];
            let kernel = RowPasses { source: &shaders::SCAN, entry: "cumsum_main", serial_entry: None, constants: vec![], prelude: vec![], stats: (3, 1) };
            row_passes(q, dev, cx, kernel, [outer * inner, len], params, &[(1, Bind::Mem(x.buf)), (2, Bind::Mem(out.buf))])
        }
        OpCall::Reduce { op, x, outer, len, inner, out, variant } => reduce(q, dev, cx, op, x, [outer, len, inner], out, variant),
        OpCall::Norm { kind, x, weight, bias, rows, cols, eps, act, out } => norm(q, dev, cx, kind, [x, out], [weight, bias], [rows, cols], (eps, act)),
        OpCall::Conv2d { x, weight, bias, act, out, geometry } => conv2d(q, dev, [x, weight, out], bias, act, geometry),
        OpCall::Pool2d { kind, x, out, geometry } => {
            check_binding(dev, &x)?;
            check_binding(dev, &out)?;
            let pipeline = dev.builtin(builtin(&shaders::CONV, "pool2d_main", vec![("POOL", kind as u32)]));
            let grid = grid_1d(dev, out.layout.numel().div_ceil(256) as u64)?;
            let params = conv_params(&geometry, [x.layout.offset, 0, 0, out.layout.offset])?;
            let taps = split::conv_taps(dev.max_loop_iterations, 1, geometry.kh, geometry.kw);
            conv_dispatches(q, dev, pipeline, params, &taps, &[(1, Bind::Mem(x.buf)), (4, Bind::Mem(out.buf))], grid)
        }
        OpCall::Attention { q: query, k: key, v: value, mask, out, dims, scale, causal } => attention(q, dev, cx, [query, key, value, out], mask, dims, (scale, causal)),
        OpCall::Matmul { a, b, bias, act, out, m, n, k, variant, dtype } => matmul(q, dev, cx, [a, b, out], bias, act, [m, n, k], (variant, dtype)),
    }
}

/// `out = op(x)`: unary_main, or unary_vec4_main over whole vec4s.
fn unary(q: &GpuQueue, dev: &GpuDevice, op: UnaryOp, x: Operand<'_>, out: Operand<'_>, dtype: DType) -> Result<()> {
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    let access = x.layout.access();
    let constants = vec![("OP", op.code()), ("A_MODE", access.code())];
    let (entry, per) = if vec4_elementwise(&out, &[&x]) { ("unary_vec4_main", 4) } else { ("unary_main", 1) };
    let pipeline = dev.builtin(Builtin { prelude: vec![store(dev, dtype)?], ..builtin(&shaders::ELEMENTWISE, entry, constants) });
    let grid = grid_1d(dev, (out.layout.numel() / per).div_ceil(256) as u64)?;
    let mut params = elementwise_params(&out, &[&x])?;
    params.resize(29, 0);
    params.extend([u32_of("period", access.period())?, 0]);
    q.dispatch(dev, pipeline, &params, &[(1, Bind::Mem(x.buf)), (3, Bind::Mem(out.buf))], grid)
}

/// `out = act(op(a, b))` over broadcast operands: binary_main, or binary_vec4_main.
#[allow(clippy::too_many_arguments)]
fn binary(q: &GpuQueue, dev: &GpuDevice, op: BinaryOp, act: Option<UnaryOp>, [a, b, out]: [Operand<'_>; 3], dtype: DType) -> Result<()> {
    for o in [&a, &b, &out] {
        check_binding(dev, o)?;
    }
    let (a_access, b_access) = (a.layout.access(), b.layout.access());
    let constants = vec![("OP", op.code()), ("ACT", act.map_or(0, |f| f.code())), ("A_MODE", a_access.code()), ("B_MODE", b_access.code())];
    let (entry, per) = if vec4_elementwise(&out, &[&a, &b]) { ("binary_vec4_main", 4) } else { ("binary_main", 1) };
    let pipeline = dev.builtin(Builtin { prelude: vec![store(dev, dtype)?], ..builtin(&shaders::ELEMENTWISE, entry, constants) });
    let grid = grid_1d(dev, (out.layout.numel() / per).div_ceil(256) as u64)?;
    let binds = [(1, Bind::Mem(a.buf)), (2, Bind::Mem(b.buf)), (3, Bind::Mem(out.buf))];
    let mut params = elementwise_params(&out, &[&a, &b])?;
    params.extend([u32_of("period", a_access.period())?, u32_of("period", b_access.period())?]);
    q.dispatch(dev, pipeline, &params, &binds, grid)
}

/// `out = x` converted from `from` to `to`.
fn cast(q: &GpuQueue, dev: &GpuDevice, x: Operand<'_>, (from, to): (DType, DType), out: Operand<'_>) -> Result<()> {
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    if to.size() == 2 && out.layout.offset % 2 != 0 {
        return Err(Error::Device("internal: a 16-bit cast output starts inside a word".into()));
    }
    let pipeline = dev.builtin(builtin(&shaders::INDEXING, "cast_main", vec![("FROM", from.code()), ("TO", to.code())]));
    // A 16-bit output is written a word (two elements) per invocation.
    let grid = grid_1d(dev, out.layout.numel().div_ceil(4 / to.size()).div_ceil(256) as u64)?;
    // Auto layouts hold only the bindings an entry point uses.
    let binds = [(1, Bind::Mem(x.buf)), (4, Bind::Mem(out.buf))];
    q.dispatch(dev, pipeline, &elementwise_params(&out, &[&x])?, &binds, grid)
}

/// Entries of `x` along an axis picked by `indices` (`fill` where out of range).
#[allow(clippy::too_many_arguments)]
fn gather(q: &GpuQueue, dev: &GpuDevice, [x, indices, out]: [Operand<'_>; 3], signed: bool, [outer, len, inner, count]: [usize; 4], fill: u32) -> Result<()> {
    for o in [&x, &indices, &out] {
        check_binding(dev, o)?;
    }
    let params = [
        u32_of("outer", outer)?,
        u32_of("length", len)?,
        u32_of("inner", inner)?,
        u32_of("count", count)?,
        u32_of("offset", x.layout.offset)?,
        u32_of("offset", indices.layout.offset)?,
        u32_of("offset", out.layout.offset)?,
        fill,
    ];
    let pipeline = dev.builtin(builtin(&shaders::INDEXING, "gather_main", vec![("SIGNED", u32::from(signed))]));
    let grid = grid_1d(dev, out.layout.numel().div_ceil(256) as u64)?;
    let binds = [(1, Bind::Mem(x.buf)), (2, Bind::Mem(indices.buf)), (4, Bind::Mem(out.buf))];
    q.dispatch(dev, pipeline, &params, &binds, grid)
}

/// Layer or RMS norm of each row, with optional scale, shift and activation.
#[allow(clippy::too_many_arguments)]
fn norm(q: &GpuQueue, dev: &GpuDevice, cx: &OpContext<'_>, kind: NormKind, [x, out]: [Operand<'_>; 2], [weight, bias]: [Option<Operand<'_>>; 2], [rows, cols]: [usize; 2], (eps, act): (f32, Option<UnaryOp>)) -> Result<()> {
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    let offset = |o: &Option<Operand<'_>>| o.as_ref().map_or(Ok(0), |o| u32_of("offset", o.layout.offset));
    let params = vec![
        u32_of("rows", rows)?,
        u32_of("columns", cols)?,
        u32_of("offset", x.layout.offset)?,
        u32_of("offset", out.layout.offset)?,
        offset(&weight)?,
        offset(&bias)?,
        eps.to_bits(),
    ];
    let constants = vec![
        ("KIND", kind.code()),
        ("HAS_WEIGHT", u32::from(weight.is_some())),
        ("HAS_BIAS", u32::from(bias.is_some())),
        ("ACT", act.map_or(0, |f| f.code())),
    ];
    let binds = [
        (1, Bind::Mem(x.buf)),
        (2, weight.as_ref().map_or(Bind::SpareRead, |w| Bind::Mem(w.buf))),
        (3, bias.as_ref().map_or(Bind::SpareRead, |b| Bind::Mem(b.buf))),
        (4, Bind::Mem(out.buf)),
    ];
    let kernel = RowPasses { source: &shaders::NORM, entry: "norm_main", serial_entry: Some("norm_serial_main"), constants, prelude: vec![], stats: (5, 3) };
    row_passes(q, dev, cx, kernel, [rows, cols], params, &binds)
}

/// 2-D convolution (conv2d_main), with optional bias and activation.
fn conv2d(q: &GpuQueue, dev: &GpuDevice, [x, weight, out]: [Operand<'_>; 3], bias: Option<Operand<'_>>, act: Option<UnaryOp>, geometry: Conv2dGeometry) -> Result<()> {
    for o in [&x, &weight, &out] {
        check_binding(dev, o)?;
    }
    let offsets = [x.layout.offset, weight.layout.offset, bias.as_ref().map_or(0, |b| b.layout.offset), out.layout.offset];
    // Four output channels per invocation where each group's come in fours.
    let ocb = if (geometry.o / geometry.groups) % 4 == 0 { 4 } else { 1 };
    let constants = vec![("HAS_BIAS", u32::from(bias.is_some())), ("ACT", act.map_or(0, |f| f.code())), ("OCB", ocb as u32)];
    let pipeline = dev.builtin(builtin(&shaders::CONV, "conv2d_main", constants));
    let bias_bind = bias.as_ref().map_or(Bind::SpareRead, |b| Bind::Mem(b.buf));
    let binds = [(1, Bind::Mem(x.buf)), (2, Bind::Mem(weight.buf)), (3, bias_bind), (4, Bind::Mem(out.buf))];
    // Invocations: blocks of `ocb` channels by rows by blocks of four columns.
    let invocations = geometry.n * (geometry.o / ocb) * geometry.oh * geometry.ow.div_ceil(4);
    let grid = grid_1d(dev, invocations.div_ceil(256) as u64)?;
    let taps = split::conv_taps(dev.max_loop_iterations, geometry.c / geometry.groups, geometry.kh, geometry.kw);
    conv_dispatches(q, dev, pipeline, conv_params(&geometry, offsets)?, &taps, &binds, grid)
}

/// Fused attention (attention_main, or attention_serial_main on software adapters).
#[allow(clippy::too_many_arguments)]
fn attention(q: &GpuQueue, dev: &GpuDevice, cx: &OpContext<'_>, [query, key, value, out]: [Operand<'_>; 4], mask: Option<Operand<'_>>, [b, h, lq, lk, d, dv]: [usize; 6], (scale, causal): (f32, bool)) -> Result<()> {
    for o in [&query, &key, &value, &out] {
        check_binding(dev, o)?;
    }
    let mut params = vec![u32_of("batch x heads", b * h)?, u32_of("heads", h)?, u32_of("queries", lq)?, u32_of("keys", lk)?, d as u32, dv as u32, scale.to_bits(), u32::from(causal)];
    for o in [Some(&query), Some(&key), Some(&value), mask.as_ref()] {
        match o {
            Some(o) => {
                check_binding(dev, o)?;
                params.push(u32_of("offset", o.layout.offset)?);
                for &s in &o.layout.strides {
                    params.push(u32_of("stride", s)?);
                }
            }
            None => params.extend([0; 5]),
        }
    }
    params.push(u32_of("offset", out.layout.offset)?);
    let serial = software_kernels(dev, cx);
    let entry = if serial { "attention_serial_main" } else { "attention_main" };
    let pipeline = dev.builtin(builtin(&shaders::ATTENTION, entry, vec![("HAS_MASK", u32::from(mask.is_some()))]));
    // The mask binding is in the layout even when HAS_MASK is off.
    let mask_bind = mask.as_ref().map_or(Bind::SpareRead, |m| Bind::Mem(m.buf));
    let binds = [(1, Bind::Mem(query.buf)), (2, Bind::Mem(key.buf)), (3, Bind::Mem(value.buf)), (4, mask_bind), (5, Bind::Mem(out.buf))];
    attention_dispatches(q, dev, cx, (pipeline, serial), params, &binds, [b * h * lq, lk, d, dv])
}

/// Parameters of conv.wgsl up to the tap ranges.
fn conv_params(g: &Conv2dGeometry, offsets: [usize; 4]) -> Result<Vec<u32>> {
    let sizes = [g.n, g.c, g.h, g.w, g.o, g.kh, g.kw, g.oh, g.ow, g.stride[0], g.stride[1], g.padding[0], g.padding[1], g.dilation[0], g.dilation[1], g.groups];
    sizes.iter().chain(&offsets).map(|&v| u32_of("convolution size or offset", v)).collect()
}

/// conv.wgsl launches over the tap boxes `taps` (see [`split::conv_taps`]), accumulating in
/// the output: `params` up to the tap ranges, which this appends with the flags.
fn conv_dispatches(q: &GpuQueue, dev: &GpuDevice, pipeline: wgpu::ComputePipeline, mut params: Vec<u32>, taps: &[[[usize; 2]; 3]], binds: &[(u32, Bind<'_>)], grid: [u32; 3]) -> Result<()> {
    let at = params.len();
    params.resize(at + 7, 0);
    for (i, tap_box) in taps.iter().enumerate() {
        for (d, range) in tap_box.iter().enumerate() {
            params[at + 2 * d] = u32_of("kernel tap", range[0])?;
            params[at + 2 * d + 1] = u32_of("kernel tap", range[1])?;
        }
        params[at + 6] = split::flags(i, taps.len());
        q.dispatch(dev, pipeline.clone(), &params, binds, grid)?;
    }
    Ok(())
}

/// attention.wgsl launches over the key ranges of [`split::attention_keys`] (or, for the
/// software adapters' `attention_serial_main`, one invocation per row, of
/// [`split::attention_serial_keys`]), the running softmax state kept between them in a
/// temporary: `params` up to the key range, which this appends with the flags.
fn attention_dispatches(
    q: &GpuQueue,
    dev: &GpuDevice,
    cx: &OpContext<'_>,
    (pipeline, serial): (wgpu::ComputePipeline, bool),
    mut params: Vec<u32>,
    binds: &[(u32, Bind<'_>)],
    [rows, lk, d, dv]: [usize; 4],
) -> Result<()> {
    let keys = if serial { split::attention_serial_keys(dev.max_loop_iterations, lk, d, dv) } else { split::attention_keys(dev.max_loop_iterations, lk, d) };
    let state = if keys.len() > 1 { Some(split_temp(dev, cx, rows * (dv + 2))?) } else { None };
    let mut binds = binds.to_vec();
    binds.push((6, state.as_ref().map_or(Bind::SpareWrite, Bind::Mem)));
    let grid = grid_1d(dev, if serial { rows.div_ceil(64) } else { rows } as u64)?;
    let at = params.len();
    params.resize(at + 3, 0);
    for (i, range) in keys.iter().enumerate() {
        params[at] = u32_of("key", range[0])?;
        params[at + 1] = u32_of("key", range[1])?;
        params[at + 2] = split::flags(i, keys.len());
        q.dispatch(dev, pipeline.clone(), &params, &binds, grid)?;
    }
    Ok(())
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
fn temp(cx: &OpContext<'_>, elements: usize) -> Result<Arc<BufferInner>> {
    (cx.temp)((elements * 4) as u64)
}

/// [`temp`] of f32 values that one storage binding must reach, for the work a device with a
/// loop-iteration limit splits across launches: an error past the binding limit.
fn split_temp(dev: &GpuDevice, cx: &OpContext<'_>, elements: usize) -> Result<Arc<BufferInner>> {
    let bytes = elements as u64 * 4;
    let max = dev.limits.max_storage_buffer_binding_size;
    if bytes > max {
        return Err(Error::Limit { what: "temporary of a launch split for the loop-iteration limit, in bytes".into(), value: bytes, limit: "max_storage_buffer_binding_size", max });
    }
    temp(cx, elements)
}

#[allow(clippy::too_many_arguments)]
fn reduce(q: &GpuQueue, dev: &GpuDevice, cx: &OpContext<'_>, op: ReduceOp, x: Operand<'_>, [outer, len, inner]: [usize; 3], out: Operand<'_>, variant: Option<&str>) -> Result<()> {
    check_binding(dev, &x)?;
    check_binding(dev, &out)?;
    let argmax = op == ReduceOp::Argmax;
    let scale = if op == ReduceOp::Mean { 1.0 / len as f32 } else { 1.0 };
    let variant = match variant {
        Some(v) => v,
        None => default_reduce_variant(dev, cx.options).0,
    };
    if !reduce_variants(dev).contains(&variant) {
        return Err(Error::Unsupported { backend: crate::BackendKind::WebGpu, what: format!("reduce variant `{variant}` on this adapter (it has {:?})", reduce_variants(dev)) });
    }
    let serial = variant == "serial";
    let (chunk, per_group) = if serial { (REDUCE_SERIAL_CHUNK, 64) } else { (REDUCE_CHUNK, 1) };
    // The current pass's input: values (and, after the first pass, argmax indices).
    let mut values = x.buf.clone();
    let mut indices: Option<Arc<BufferInner>> = None;
    let (mut offset, mut outer, mut len, mut inner) = (x.layout.offset, outer, len, inner);
    loop {
        let chunks = len.div_ceil(chunk);
        let rows = outer * inner;
        let last = chunks == 1;
        let (out_values, out_indices, out_offset) = if last {
            if argmax {
                (Some(temp(cx, rows)?), Some(out.buf.clone()), out.layout.offset)
            } else {
                (Some(out.buf.clone()), None, out.layout.offset)
            }
        } else {
            (Some(temp(cx, rows * chunks)?), if argmax { Some(temp(cx, rows * chunks)?) } else { None }, 0)
        };
        let out_values = out_values.ok_or_else(|| Error::Device("internal: reduction without an output".into()))?;
        let params = [
            u32_of("rows", outer)?,
            u32_of("reduced length", len)?,
            u32_of("inner length", inner)?,
            chunk as u32,
            u32_of("chunks", chunks)?,
            u32_of("offset", offset)?,
            u32_of("offset", out_offset)?,
            (if last { scale } else { 1.0 }).to_bits(),
        ];
        let first = indices.is_none();
        let constants = vec![("OP", op.code()), ("FIRST", first as u32)];
        let combine = if variant == "subgroup" { REDUCE_WITH_SUBGROUPS.to_vec() } else { REDUCE_WITH_TREE.to_vec() };
        let entry = if serial { "reduce_serial_main" } else { "reduce_main" };
        let pipeline = dev.builtin(Builtin { prelude: combine, ..builtin(&shaders::REDUCE, entry, constants) });
        let binds = [
            (1, Bind::Mem(&values)),
            (2, indices.as_ref().map_or(Bind::SpareRead, Bind::Mem)),
            (3, Bind::Mem(&out_values)),
            (4, out_indices.as_ref().map_or(Bind::SpareWrite, Bind::Mem)),
        ];
        q.dispatch(dev, pipeline, &params, &binds, grid_1d(dev, (rows * chunks).div_ceil(per_group) as u64)?)?;
        if last {
            return Ok(());
        }
        values = out_values;
        indices = out_indices;
        (offset, outer, len, inner) = (0, rows, chunks, 1);
    }
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
