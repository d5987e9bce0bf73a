//! Matmul on wgpu: matmul.wgsl in tile configurations (the variants), with vec4 or scalar
//! tile loads, bias and activation in the epilogue.

use super::Matmul;
use crate::base::layout::MAX_RANK;
use std::sync::Arc;

use super::pieces::{self, Part, Reach};
use crate::hal::webgpu::{Bind, GpuBatch, GpuDevice, Pipeline, Specialisation, WgslSource};
use crate::hal::{Block, OpContext};
use crate::ops::common::split;
use crate::ops::common::webgpu::{split_temp, store, u32_of, wgsl_params, ACTIVATION, COMMON};
#[cfg(test)]
use crate::ops::common::webgpu::{STORE_F16, STORE_F32};
use crate::ops::Operand;
use crate::{Error, Result};

static SOURCE: WgslSource = WgslSource {
    name: "matmul.wgsl",
    text: crate::ops::common::wgsl_file!("matmul/matmul.wgsl"),
    preludes: &[COMMON, ACTIVATION, MatmulWords::DECL],
};

wgsl_params! {
    /// matmul.wgsl's parameters.
    struct MatmulWords: P {
        m: u32,
        n: u32,
        k: u32,
        /// Rank of the batch dimensions, and the first batch of this launch.
        batch_rank: u32,
        first_batch: u32,
        /// Offsets and the row and column strides of A, B and C (C's are contiguous).
        a: u32,
        a_row: u32,
        a_col: u32,
        b: u32,
        b_row: u32,
        b_col: u32,
        c: u32,
        /// C's row stride: n, or the whole product's n for a piece of it.
        c_row: u32,
        /// The batch shape, and A's and B's strides along it (padded with 0s).
        batch_shape: [u32; 6],
        a_batch: [u32; 6],
        b_batch: [u32; 6],
        /// Offset of the bias (0 without).
        bias: u32,
        /// The k range of this launch, and the k-split flags (see matmul.wgsl).
        k_range: [u32; 2],
        flags: u32,
    }
}

/// Tile loads of matmul.wgsl: one element at a time (any strides), or vec4 loads.
const LOADS_SCALAR: &str = crate::ops::common::wgsl_file!("matmul/matmul_loads_scalar.wgsl");
const LOADS_VEC4: &str = crate::ops::common::wgsl_file!("matmul/matmul_loads_vec4.wgsl");

/// A tile configuration of matmul.wgsl.
pub(super) struct Variant {
    /// Name users and policies select it by.
    pub name: &'static str,
    /// Output rows and columns per workgroup.
    pub tile: [usize; 2],
    /// The WGSL constants prepended to matmul.wgsl.
    pub constants: &'static str,
    /// Its entry point: `matmul_main` (tiles in workgroup memory) or `matmul_direct_main`
    /// (no workgroup memory or barriers: the default).
    pub entry: &'static str,
}

/// The matmul tile configurations: `direct`, the default, 64 invocations of 4x4 reading A and
/// B from memory; tiles in workgroup memory of 64x64 (256 invocations of 4x4), 32x32 (2x2)
/// and 128x64 (8x4).
pub(super) const VARIANTS: [Variant; 4] = [
    Variant {
        name: "tile64",
        tile: [64, 64],
        constants:
            "const TM: u32 = 64u; const TN: u32 = 64u; const RM: u32 = 4u; const RN: u32 = 4u;",
        entry: "matmul_main",
    },
    Variant {
        name: "tile32",
        tile: [32, 32],
        constants:
            "const TM: u32 = 32u; const TN: u32 = 32u; const RM: u32 = 2u; const RN: u32 = 2u;",
        entry: "matmul_main",
    },
    Variant {
        name: "tile128x64",
        tile: [128, 64],
        constants:
            "const TM: u32 = 128u; const TN: u32 = 64u; const RM: u32 = 8u; const RN: u32 = 4u;",
        entry: "matmul_main",
    },
    Variant {
        name: "direct",
        tile: [16, 64],
        constants:
            "const TM: u32 = 16u; const TN: u32 = 64u; const RM: u32 = 4u; const RN: u32 = 4u;",
        entry: "matmul_direct_main",
    },
];

/// The default tile configuration for an `m x n` output on `dev`, and why: `direct`, except
/// on software adapters with [`crate::DeviceOptions::software_kernels`] off, which run the
/// tiles in workgroup memory (tests, comparisons): 128x64 from 256 x 256 outputs, 32x32 when
/// 64x64 tiles would leave fewer than 16 workgroups, else 64x64. (`"auto"` in a policy tunes
/// per device.)
pub(super) fn default_variant(
    dev: &GpuDevice,
    options: &crate::DeviceOptions,
    m: usize,
    n: usize,
) -> (&'static str, &'static str) {
    if !dev.is_software() || options.software_kernels {
        (
            "direct",
            "the default (4.5-55x the tiled variants' speed from 256^3 to 4096^3 on an NVIDIA \
            H200 through Vulkan, 19.8 TFLOP/s at 4096^3; 512^3: 7x tile128x64 on SwiftShader, \
            3.4x on lavapipe)",
        )
    } else if m >= 256 && n >= 256 {
        (
            "tile128x64",
            "tiles in workgroup memory (software kernels off), for outputs of at least 256 x 256",
        )
    } else if m.div_ceil(64) * n.div_ceil(64) < 16 {
        (
            "tile32",
            "tiles in workgroup memory (software kernels off), when 64 x 64 tiles would give \
            fewer than 16 workgroups",
        )
    } else {
        ("tile64", "tiles in workgroup memory (software kernels off)")
    }
}

/// The variant named `name`, or the default for an `m x n` output.
fn variant(
    dev: &GpuDevice,
    cx: &OpContext<'_>,
    name: Option<&str>,
    m: usize,
    n: usize,
) -> Result<&'static Variant> {
    let name = name.unwrap_or(default_variant(dev, cx.options, m, n).0);
    VARIANTS.iter().find(|v| v.name == name).ok_or_else(|| {
        let names: Vec<&str> = VARIANTS.iter().map(|v| v.name).collect();
        Error::Invalid(format!(
            "unknown webgpu matmul variant `{name}`: expected one of {names:?}"
        ))
    })
}

/// matmul.wgsl's parameters for `[a, b, out]`, with the first batch, k range and flags of
/// each launch left at 0.
fn params(
    [a, b, out]: [&Operand<'_>; 3],
    bias: Option<&Operand<'_>>,
    [m, n, k]: [usize; 3],
) -> Result<MatmulWords> {
    let r = out.layout.shape.len();
    let batch_rank = r - 2;
    let batch = |v: &[usize]| -> Result<[u32; 6]> {
        let mut w = [0; 6];
        for (w, &v) in w.iter_mut().zip(&v[..batch_rank]) {
            *w = u32_of("batch extent or stride", v)?;
        }
        Ok(w)
    };
    let (sa, sb) = (&a.layout.strides, &b.layout.strides);
    Ok(MatmulWords {
        m: u32_of("m", m)?,
        n: u32_of("n", n)?,
        k: u32_of("k", k)?,
        batch_rank: batch_rank as u32,
        first_batch: 0,
        a: u32_of("offset", a.layout.offset)?,
        a_row: u32_of("stride", sa[r - 2])?,
        a_col: u32_of("stride", sa[r - 1])?,
        b: u32_of("offset", b.layout.offset)?,
        b_row: u32_of("stride", sb[r - 2])?,
        b_col: u32_of("stride", sb[r - 1])?,
        c: u32_of("offset", out.layout.offset)?,
        c_row: u32_of("n", n)?,
        batch_shape: batch(&out.layout.shape)?,
        a_batch: batch(sa)?,
        b_batch: batch(sb)?,
        bias: bias.map_or(Ok(0), |o| u32_of("offset", o.layout.offset))?,
        k_range: [0; 2],
        flags: 0,
    })
}

// MatmulWords spells the batch rank (MAX_RANK - 2) as a literal: it must stay this.
const _: () = assert!(MAX_RANK - 2 == 6);

/// Whether every vec4 of a tile load lies inside one row of `o` (of rank `r`, rows of `inner`
/// elements): vec4 tile loads when it holds for A (along k) and for B (along n).
fn rows_of_vec4(o: &Operand<'_>, r: usize, inner: usize) -> bool {
    o.layout.strides[r - 1] == 1
        && inner % 4 == 0
        && o.layout.offset % 4 == 0
        && o.layout.strides[..r - 1].iter().all(|s| s % 4 == 0)
}

/// How every launch of one matmul runs: its pipeline, tiles, parameter words and k split.
struct Plan {
    pipeline: Pipeline,
    variant: &'static Variant,
    /// The parameter words of the whole product.
    params: MatmulWords,
    vec4: bool,
}

impl Plan {
    /// Where the device ends long loops early, the pieces of a k range of `k` that each
    /// launch takes (with f32 sums kept in between); else the whole range.
    fn k_pieces(&self, dev: &GpuDevice, k: usize) -> Vec<[usize; 2]> {
        if self.variant.entry == "matmul_direct_main" {
            split::matmul_direct_k(dev.max_loop_iterations(), self.vec4, k)
        } else {
            split::matmul_k(dev.max_loop_iterations(), self.variant.tile, self.vec4, k)
        }
    }
}

/// The tiled (or, on software adapters, direct) matmul with its bias and activation
/// epilogue, in batches of at most a grid dimension and, where the device ends long loops
/// early, in pieces of k. A product whose operands do not fit one storage binding each runs
/// in pieces that do ([`split`]).
pub(super) fn matmul(
    op: &Matmul<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    cx: &OpContext<'_>,
) -> Result<()> {
    let plan = plan(op, false, dev, cx)?;
    let limit = binding_limit(dev, cx);
    if past(op, limit) {
        split(op, q, dev, cx, &plan, limit)
    } else {
        whole(op, q, dev, cx, &plan)
    }
}

/// [`matmul`] with `op.bias` holding one value per row of C (`[m]`: a pointwise
/// convolution's, one per output channel) instead of one per column. `false`, with nothing
/// recorded, where an operand lies past a storage binding (the pieces of [`split`] take
/// the bias along n).
pub(crate) fn with_row_bias(
    op: &Matmul<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    cx: &OpContext<'_>,
) -> Result<bool> {
    if past(op, binding_limit(dev, cx)) {
        return Ok(false);
    }
    whole(op, q, dev, cx, &plan(op, true, dev, cx)?)?;
    Ok(true)
}

/// How `op` runs: its variant, its pipeline (vec4 tile loads where both operands' rows
/// allow) and its parameter words; `bias_rows`: the bias is along m.
fn plan(op: &Matmul<'_>, bias_rows: bool, dev: &GpuDevice, cx: &OpContext<'_>) -> Result<Plan> {
    let (a, b, out) = (op.a, op.b, op.out);
    let (m, n, k) = (op.m, op.n, op.k);
    let variant = variant(dev, cx, op.variant, m, n)?;
    let r = out.layout.shape.len();
    let mut constants = vec![
        ("HAS_BIAS", u32::from(op.bias.is_some())),
        ("ACT", op.act.map_or(0, |f| f.code())),
    ];
    if bias_rows {
        constants.push(("BIAS_ROWS", 1));
    }
    let vec4 = rows_of_vec4(&a, r, k) && rows_of_vec4(&b, r, n);
    let loads = if vec4 { LOADS_VEC4 } else { LOADS_SCALAR };
    let pipeline = dev.pipeline(Specialisation {
        source: &SOURCE,
        entry: variant.entry,
        constants,
        prelude: vec![store(dev, op.dtype)?, variant.constants, loads],
        generated: None,
    });
    Ok(Plan {
        pipeline,
        variant,
        params: params([&a, &b, &out], op.bias.as_ref(), [m, n, k])?,
        vec4,
    })
}

/// The most bytes one storage binding may hold on `dev` (or the context's smaller limit).
fn binding_limit(dev: &GpuDevice, cx: &OpContext<'_>) -> u64 {
    (cx.options.max_binding_size.unwrap_or(u64::MAX)).min(dev.max_binding_size())
}

/// Whether an operand of `op` reaches past `limit` bytes of its buffer.
fn past(op: &Matmul<'_>, limit: u64) -> bool {
    let elem = op.dtype.size() as u64;
    [Some(&op.a), Some(&op.b), Some(&op.out), op.bias.as_ref()]
        .into_iter()
        .flatten()
        .any(|o| o.layout.end() as u64 * elem > limit)
}

/// Error unless a grid of `m x n` outputs in the variant's tiles fits the device.
fn grid(dev: &GpuDevice, variant: &Variant, m: usize, n: usize) -> Result<[u32; 2]> {
    let max = dev.max_workgroups_per_dimension() as usize;
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
    Ok([gx as u32, gy as u32])
}

/// The product with each buffer bound whole: batches of at most a grid dimension, each in
/// the plan's pieces of k.
fn whole(
    op: &Matmul<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    cx: &OpContext<'_>,
    plan: &Plan,
) -> Result<()> {
    let (m, n) = (op.m, op.n);
    let batches = op.out.layout.numel() / (m * n);
    let pieces = plan.k_pieces(dev, op.k);
    let partial = if pieces.len() > 1 {
        Some(split_temp(dev, cx, batches * m * n)?)
    } else {
        None
    };
    let binds = [
        (1, Bind::Mem(op.a.buf)),
        (2, Bind::Mem(op.b.buf)),
        (3, Bind::Mem(op.out.buf)),
        (
            4,
            op.bias
                .as_ref()
                .map_or(Bind::SpareRead, |o| Bind::Mem(o.buf)),
        ),
        (5, partial.as_ref().map_or(Bind::SpareWrite, Bind::Mem)),
    ];
    launch_batches(q, dev, plan, plan.params, &binds, batches)
}

/// Records the launches of `batches` products with the parameter words `params` (of which
/// each launch sets the first batch, k range and flags) and bindings `binds`: in chunks of at
/// most a grid dimension, each over the plan's pieces of k.
fn launch_batches(
    q: &GpuBatch,
    dev: &GpuDevice,
    plan: &Plan,
    mut params: MatmulWords,
    binds: &[(u32, Bind<'_>)],
    batches: usize,
) -> Result<()> {
    let (m, n) = (params.m as usize, params.n as usize);
    let [gx, gy] = grid(dev, plan.variant, m, n)?;
    let max = dev.max_workgroups_per_dimension() as usize;
    let pieces = plan.k_pieces(dev, params.k as usize);
    let mut first = 0;
    while first < batches {
        let count = (batches - first).min(max);
        params.first_batch = u32_of("batch", first)?;
        for (i, range) in pieces.iter().enumerate() {
            (params.k_range, params.flags) = (
                [range[0] as u32, range[1] as u32],
                split::flags(i, pieces.len()),
            );
            let grid = [gx, gy, count as u32];
            q.launch(dev, plan.pipeline.clone(), params.words(), binds, grid)?;
        }
        first += count;
    }
    Ok(())
}

/// Where each operand lies, as [`pieces::Reach`]es with strides along the batch dimensions,
/// then m, n and k: A, B, C, then the bias if there is one.
fn reaches(op: &Matmul<'_>) -> Vec<Reach> {
    let r = op.out.layout.shape.len();
    let (sa, sb, sc) = (
        &op.a.layout.strides,
        &op.b.layout.strides,
        &op.out.layout.strides,
    );
    let elem = op.dtype.size();
    let reach = |name, o: &Operand<'_>, batch: &[usize], inner: [usize; 3]| Reach {
        name,
        offset: o.layout.offset,
        strides: batch.iter().copied().chain(inner).collect(),
        elem,
    };
    let mut all = vec![
        reach("A", &op.a, &sa[..r - 2], [sa[r - 2], 0, sa[r - 1]]),
        reach("B", &op.b, &sb[..r - 2], [0, sb[r - 1], sb[r - 2]]),
        reach("C", &op.out, &sc[..r - 2], [op.n, 1, 0]),
    ];
    let none = vec![0; r - 2];
    all.extend(
        op.bias
            .as_ref()
            .map(|o| reach("the bias", o, &none, [0, 1, 0])),
    );
    all
}

/// The f32 sums of a split k (laid out as C), as a [`pieces::Reach`]: no larger than C in
/// f32, checked as such.
fn sums(op: &Matmul<'_>) -> Reach {
    let r = op.out.layout.shape.len();
    let batch = &op.out.layout.strides[..r - 2];
    Reach {
        name: "the f32 sums of a split k",
        offset: 0,
        strides: batch.iter().copied().chain([op.n, 1, 0]).collect(),
        elem: 4,
    }
}

/// A product too large for one binding per operand: boxes of whole products whose operands
/// each fit `limit` bytes ([`pieces::batch_boxes`]), a launch each; where one product alone
/// does not fit, each product in boxes of m, n and k ([`in_pieces`]).
fn split(
    op: &Matmul<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    cx: &OpContext<'_>,
    plan: &Plan,
    limit: u64,
) -> Result<()> {
    let r = op.out.layout.shape.len();
    let shape = &op.out.layout.shape[..r - 2];
    let mut reach = reaches(op);
    let operands = reach.len();
    // Boxes of whole products keep their f32 sums only where the loop limit splits k.
    if plan.k_pieces(dev, op.k).len() > 1 {
        reach.push(sums(op));
    }
    let align = dev.storage_offset_alignment();
    if let Some(boxes) = pieces::batch_boxes(&reach, shape, [op.m, op.n, op.k], limit, align) {
        return in_batches(op, q, dev, cx, plan, (&reach[..operands], boxes));
    }
    let first = vec![0; shape.len()];
    for i in 0..shape.iter().product() {
        let at = pieces::index(i, shape);
        let mut product: Vec<Reach> = (reach[..operands].iter()).map(|r| r.product(&at)).collect();
        // Each product's f32 sums start a temporary of their own.
        product.push(sums(op).product(&first));
        in_pieces(op, q, dev, cx, plan, limit, product)?;
    }
    Ok(())
}

/// The boxes of whole products of [`pieces::batch_boxes`]' `(axis, count)`, a launch over each
/// box's batches with each operand bound as the range of its buffer the box reaches (`reach`:
/// A, B, C and the bias, as [`reaches`] lists them).
fn in_batches(
    op: &Matmul<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    cx: &OpContext<'_>,
    plan: &Plan,
    (reach, (axis, count)): (&[Reach], (usize, usize)),
) -> Result<()> {
    let r = op.out.layout.shape.len();
    let shape = &op.out.layout.shape[..r - 2];
    let largest = count * shape[axis + 1..].iter().product::<usize>();
    let partial = (plan.k_pieces(dev, op.k).len() > 1)
        .then(|| split_temp(dev, cx, largest * op.m * op.n))
        .transpose()?;
    let align = dev.storage_offset_alignment();
    // Each box is a batch of its own: the dimensions from `axis` on, indexed from its start.
    let mut w = plan.params;
    w.batch_rank = (r - 2 - axis) as u32;
    let from = |words: [u32; 6]| -> [u32; 6] {
        let mut w = [0; 6];
        w[..r - 2 - axis].copy_from_slice(&words[axis..r - 2]);
        w
    };
    (w.batch_shape, w.a_batch, w.b_batch) = (from(w.batch_shape), from(w.a_batch), from(w.b_batch));
    for (at, extents) in pieces::batch_ranges(shape, axis, count) {
        let (at, len): (Vec<usize>, Vec<usize>) = (
            at.into_iter().chain([0; 3]).collect(),
            (extents.iter().copied())
                .chain([op.m, op.n, op.k])
                .collect(),
        );
        let parts: Vec<Part> = (reach.iter()).map(|r| r.part(&at, &len, align)).collect();
        w.batch_shape[0] = u32_of("batch extent", extents[axis])?;
        let binds = bind_parts(op, &mut w, &parts, partial.as_ref())?;
        launch_batches(q, dev, plan, w, &binds, extents.iter().product())?;
    }
    Ok(())
}

/// One product too large for one binding per operand, in boxes of m, n and k whose operands
/// (`reach`: the product's A, B, C, the bias if any, then the f32 sums of a split k, with
/// strides along m, n and k) each fit `limit` bytes ([`pieces::box_extents`]), each operand
/// bound as the range of its buffer the box reaches. The boxes along k of one output box add
/// up their f32 sums in a temporary, as the loop-limit split of k does.
fn in_pieces(
    op: &Matmul<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    cx: &OpContext<'_>,
    plan: &Plan,
    limit: u64,
    mut reach: Vec<Reach>,
) -> Result<()> {
    let (m, n, k) = (op.m, op.n, op.k);
    let len = pieces::box_extents(&reach, [m, n, k], limit, dev.storage_offset_alignment())?;
    reach.pop();
    let split_k = k > len[2] || plan.k_pieces(dev, len[2]).len() > 1;
    let partial = split_k
        .then(|| split_temp(dev, cx, len[0] * len[1]))
        .transpose()?;
    for (m0, ml) in pieces::ranges(m, len[0]) {
        for (n0, nl) in pieces::ranges(n, len[1]) {
            let ks: Vec<([usize; 2], [usize; 2])> = (pieces::ranges(k, len[2]))
                .flat_map(|k| {
                    plan.k_pieces(dev, k.1)
                        .into_iter()
                        .map(move |r| (k.into(), r))
                })
                .collect();
            for (i, &([k0, kl], range)) in ks.iter().enumerate() {
                let piece = Piece {
                    at: [m0, n0, k0],
                    len: [ml, nl, kl],
                    range,
                    flags: split::flags(i, ks.len()),
                };
                launch_piece(op, q, dev, plan, (&reach, partial.as_ref()), piece)?;
            }
        }
    }
    Ok(())
}

/// One launch of a split product: the box at `at` of extents `len` (m, n, k), over `range`
/// of its k, with the k-split `flags`.
struct Piece {
    at: [usize; 3],
    len: [usize; 3],
    range: [usize; 2],
    flags: u32,
}

/// Records `piece`'s launch, each operand bound as the range of its buffer the box reaches
/// (`reach`: A, B, C and the bias, as [`reaches`] lists them), with the f32 sums of a split
/// k in `partial`.
fn launch_piece(
    op: &Matmul<'_>,
    q: &GpuBatch,
    dev: &GpuDevice,
    plan: &Plan,
    (reach, partial): (&[Reach], Option<&Arc<Block>>),
    piece: Piece,
) -> Result<()> {
    let align = dev.storage_offset_alignment();
    let parts: Vec<Part> = (reach.iter())
        .map(|r| r.part(&piece.at, &piece.len, align))
        .collect();
    let [ml, nl, kl] = piece.len;
    let mut w = plan.params;
    (w.m, w.n, w.k) = (u32_of("m", ml)?, u32_of("n", nl)?, u32_of("k", kl)?);
    w.k_range = [u32_of("k", piece.range[0])?, u32_of("k", piece.range[1])?];
    w.flags = piece.flags;
    let binds = bind_parts(op, &mut w, &parts, partial)?;
    let [gx, gy] = grid(dev, plan.variant, ml, nl)?;
    q.launch(dev, plan.pipeline.clone(), w.words(), &binds, [gx, gy, 1])
}

/// The bindings of a launch over part of the product: A, B, C and the bias as the ranges
/// `parts` (in that order) of their buffers, with their first elements written into `w`, and
/// the f32 sums of a split k in `partial`.
fn bind_parts<'a>(
    op: &'a Matmul<'_>,
    w: &mut MatmulWords,
    parts: &[Part],
    partial: Option<&'a Arc<Block>>,
) -> Result<Vec<(u32, Bind<'a>)>> {
    let words = [&mut w.a, &mut w.b, &mut w.c, &mut w.bias];
    for (word, part) in words.into_iter().zip(parts) {
        *word = u32_of("offset", part.first)?;
    }
    let operands = [Some(&op.a), Some(&op.b), Some(&op.out), op.bias.as_ref()];
    let mut binds: Vec<(u32, Bind<'a>)> = (operands.into_iter().zip(1..))
        .map(|(o, i)| match (o, parts.get(i as usize - 1)) {
            (Some(o), Some(p)) => (i, Bind::Range(o.buf, p.start, p.len)),
            _ => (i, Bind::SpareRead),
        })
        .collect();
    binds.push((5, partial.map_or(Bind::SpareWrite, Bind::Mem)));
    Ok(binds)
}

/// Every tile configuration with each storage dtype and tile load.
#[cfg(test)]
pub(super) fn specialisations() -> Vec<Specialisation> {
    let mut all = Vec::new();
    for store in [STORE_F32, STORE_F16] {
        for loads in [LOADS_SCALAR, LOADS_VEC4] {
            all.extend(VARIANTS.iter().map(|v| Specialisation {
                source: &SOURCE,
                entry: v.entry,
                constants: vec![],
                prelude: vec![store, v.constants, loads],
                generated: None,
            }));
        }
    }
    all
}

/// matmul.wgsl (each tile configuration, scalar and vec4 loads, with a bias along the rows or
/// the columns and an activation) run by the CPU's WGSL executor, with the parameter words
/// this file writes, gives the CPU kernel's product.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod on_the_cpu_executor {
    use super::*;
    use crate::ops::common::webgpu::{bound, run_on_cpu, with_overrides};
    use crate::ops::UnaryOp;
    use crate::{BackendChoice, BackendKind, Buffer, Device, Tensor};

    /// The WGSL of `variant` with `loads`, its bias (along the rows with `rows`) and ReLU on.
    fn relu_bias_source(variant: &Variant, loads: &'static str, rows: bool) -> String {
        let source = Specialisation {
            source: &SOURCE,
            entry: variant.entry,
            constants: vec![],
            prelude: vec![STORE_F32, variant.constants, loads],
            generated: None,
        }
        .full_source();
        let overrides = [
            ("HAS_BIAS", 1),
            ("BIAS_ROWS", u32::from(rows)),
            ("ACT", UnaryOp::Relu.code()),
        ];
        with_overrides(source, &overrides)
    }

    #[test]
    fn matmul_matches_the_cpu_kernel() {
        let d = Device::open(BackendChoice::Backend(BackendKind::Cpu)).unwrap();
        let (m, n, k) = (13usize, 20usize, 12usize);
        let av: Vec<f32> = (0..m * k)
            .map(|i| ((i * 7919) % 101) as f32 / 50.0 - 1.0)
            .collect();
        let bv: Vec<f32> = (0..k * n)
            .map(|i| ((i * 104_729) % 97) as f32 / 48.0 - 1.0)
            .collect();
        let (a, b) = (
            Tensor::from_slice(&d, &av, &[m, k]).unwrap(),
            Tensor::from_slice(&d, &bv, &[k, n]).unwrap(),
        );
        let product = a.matmul(&b).unwrap().to_vec_blocking::<f32>().unwrap();
        let out = Tensor::zeros(&d, &[m, n], crate::DType::F32).unwrap();
        for rows in [false, true] {
            let biasv: Vec<f32> = (0..if rows { m } else { n })
                .map(|i| i as f32 / 10.0 - 1.0)
                .collect();
            let bias = Tensor::from_slice(&d, &biasv, &[biasv.len()]).unwrap();
            let want: Vec<f32> = (product.iter().enumerate())
                .map(|(i, v)| (v + biasv[if rows { i / n } else { i % n }]).max(0.0))
                .collect();
            let mut words = params(
                [&a.operand(), &b.operand(), &out.operand()],
                Some(&bias.operand()),
                [m, n, k],
            )
            .unwrap();
            (words.k_range, words.flags) = ([0, k as u32], split::flags(0, 1));
            for variant in &VARIANTS {
                for loads in [LOADS_SCALAR, LOADS_VEC4] {
                    let source = relu_bias_source(variant, loads, rows);
                    let buffers = [&av, &bv, &biasv].map(|v| Buffer::from_slice(&d, v).unwrap());
                    let (c, partial) = (
                        Buffer::from_slice(&d, &vec![-1.1e36f32; m * n]).unwrap(),
                        Buffer::<f32>::zeros(&d, 4).unwrap(),
                    );
                    let [ab, bb, biasb] = &buffers;
                    let bindings = [
                        bound(ab),
                        bound(bb),
                        bound(&c),
                        bound(biasb),
                        bound(&partial),
                    ];
                    let [tm, tn] = variant.tile;
                    let grid = [n.div_ceil(tn) as u32, m.div_ceil(tm) as u32, 1];
                    run_on_cpu(&d, &source, variant.entry, words.words(), &bindings, grid).unwrap();
                    let got = c.read_blocking().unwrap();
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
                            "{} with {} loads, bias along the {}: element {i} is {g}, the \
                            CPU's {w}",
                            variant.name,
                            if loads == LOADS_VEC4 {
                                "vec4"
                            } else {
                                "scalar"
                            },
                            if rows { "rows" } else { "columns" },
                        );
                    }
                }
            }
        }
    }
}
