//! What the ops' wgpu code shares: pipelines of built-in sources, launch grids, binding
//! checks, parameter words, row passes and temporaries.

use std::sync::Arc;

use super::split;
use crate::base::layout::{Layout, MAX_RANK};
use crate::hal::webgpu::{Bind, GpuBatch, GpuDevice, Specialisation, WgslSource};
use crate::hal::Block;
use crate::hal::OpContext;
use crate::ops::Operand;

/// Helpers every op WGSL file calls: the parameter words, view offsets, workgroup
/// indexing and float specials.
pub(crate) const COMMON: &str = crate::ops::common::wgsl_file!("common/common.wgsl");
/// `index_entry`, for the kernels that resolve indices held on the device (gather, scatter).
pub(crate) const INDEX: &str = crate::ops::common::wgsl_file!("common/index.wgsl");
/// The activation functions, for the files that apply one: `activation.wgsl`, then its
/// `unary_op` generated from the op table.
pub(crate) const ACTIVATION: &str = concat!(
    crate::ops::common::wgsl_file!("common/activation.wgsl"),
    "\n",
    crate::ops::elementwise::unary_ops!(crate::ops::elementwise::table::unary_wgsl)
);

/// The binary ops, for the files that apply one (elementwise, chain): `binary.wgsl`'s
/// helpers, then the `binary_op` and `int_op` generated from the op table (`VAL` declared by
/// the launch's prelude).
pub(crate) const BINARY: &str = concat!(
    crate::ops::common::wgsl_file!("common/binary.wgsl"),
    "\n",
    crate::ops::elementwise::binary_ops!(crate::ops::elementwise::table::binary_wgsl)
);

/// Storage dtype of the kernels that read and write `array<STORE>` (elementwise, matmul):
/// f32, or f16 (adapters with `shader-f16`), loaded into f32 and stored rounded to nearest even.
pub(crate) const STORE_F32: &str = "alias STORE = f32;\nfn to_store(v: f32) -> STORE { return v; }";
pub(crate) const STORE_F16: &str = "enable f16;\nalias STORE = f16;\nfn to_store(v: f32) -> STORE \
    { return f16(unpack2x16float(f32_to_f16(v)).x); }";
use crate::{DType, Error, Result};

/// Words a parameter field takes: `u32` and `f32` one, `[u32; N]` N.
macro_rules! wgsl_words {
    (u32) => {
        "1"
    };
    (f32) => {
        "1"
    };
    ([u32; $n:literal]) => {
        stringify!($n)
    };
}
pub(crate) use wgsl_words;

/// A `#[repr(C)]` struct of a WGSL file's parameter words, and the WGSL constants that name
/// each field's first word (`DECL`), generated from the same field list: `struct Words: P {
/// rows: u32, .. }` declares `const P_rows: u32 = 0u;`, so the shader reads `params[P_rows]`
/// and a view's strides from `P_x + 1u`. The file lists `DECL` among its preludes. The
/// kernels read the words from `params: array<u32>` (common.wgsl's view helpers index it at
/// run time); an `f32` field is read with `bitcast<f32>`.
macro_rules! wgsl_params {
    (
        $(#[$doc:meta])*
        $vis:vis struct $name:ident: $p:ident {
            $(#[$fdoc0:meta])* $f0:ident: $t0:tt
            $(, $(#[$fdoc:meta])* $f:ident: $t:tt)* $(,)?
        }
    ) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
        $vis struct $name {
            $(#[$fdoc0])* pub $f0: $t0,
            $($(#[$fdoc])* pub $f: $t),*
        }

        impl $name {
            /// The WGSL constants naming each field's first word.
            $vis const DECL: &'static str = concat!(
                "const ", stringify!($p), "_", stringify!($f0), ": u32 = 0u;\n",
                $crate::ops::common::webgpu::wgsl_params!(@after $p, $f0: $t0 $(, $f: $t)*)
            );

            /// The words, in field order.
            $vis fn words(&self) -> &[u32] {
                bytemuck::cast_slice(std::slice::from_ref(self))
            }
        }
    };
    (@after $p:ident, $prev:ident: $pt:tt, $f:ident: $t:tt $(, $rest:ident: $rt:tt)*) => {
        concat!(
            "const ", stringify!($p), "_", stringify!($f), ": u32 \
                = ", stringify!($p), "_", stringify!($prev), " + ",
            $crate::ops::common::webgpu::wgsl_words!($pt), "u;\n",
            $crate::ops::common::webgpu::wgsl_params!(@after $p, $f: $t $(, $rest: $rt)*)
        )
    };
    (@after $p:ident, $prev:ident: $pt:tt) => {
        ""
    };
}
pub(crate) use wgsl_params;

/// The value type `VAL` of the kernels that reduce, scan or do integer arithmetic, with what
/// they need of it: whether a value is NaN, the NaN itself, the lowest and highest values
/// (identities of max and min), and a value scaled by an f32 (a mean's last step; integers
/// are never scaled).
pub(crate) const VAL_F32: &str =
    "alias VAL = f32;\nfn val_nan(v: VAL) -> bool { return is_nan(v); \
    }\nfn val_nan_value() -> VAL { return nan_f32(); }\nfn val_lowest() -> VAL { return \
    neg_inf_f32(); }\nfn val_highest() -> VAL { return inf_f32(); }\nfn val_scaled(v: VAL, s: f32) \
    -> VAL { return v * s; }";
pub(crate) const VAL_I32: &str = "alias VAL = i32;\nfn val_nan(v: VAL) -> bool { return false; \
    }\nfn val_nan_value() -> VAL { return 0i; }\nfn val_lowest() -> VAL { return i32(-2147483648); \
    }\nfn val_highest() -> VAL { return 2147483647i; }\nfn val_scaled(v: VAL, s: f32) -> VAL { \
    return v; }";
pub(crate) const VAL_U32: &str = "alias VAL = u32;\nfn val_nan(v: VAL) -> bool { return false; \
    }\nfn val_nan_value() -> VAL { return 0u; }\nfn val_lowest() -> VAL { return 0u; }\nfn \
    val_highest() -> VAL { return 0xffffffffu; }\nfn val_scaled(v: VAL, s: f32) -> VAL { return v; \
    }";

pub(crate) const VAL_I64: &str = "alias VAL = i64;\nfn val_nan(v: VAL) -> bool { return false; \
    }\nfn val_nan_value() -> VAL { return 0li; }\nfn val_lowest() -> VAL { return \
    -9223372036854775807li - 1li; }\nfn val_highest() -> VAL { return 9223372036854775807li; }\nfn \
    val_scaled(v: VAL, s: f32) -> VAL { return v; }";

/// The `VAL` declarations for `dtype` (f32, i32, u32 or i64: see [`check_int64`]).
pub(crate) fn val(dtype: DType) -> Result<&'static str> {
    match dtype {
        DType::F32 => Ok(VAL_F32),
        DType::I32 => Ok(VAL_I32),
        DType::U32 => Ok(VAL_U32),
        // Browsers have no `shader-int64` (`check_int64` refuses i64 first): the wasm build
        // leaves the i64 kernels out.
        DType::I64 if cfg!(not(target_arch = "wasm32")) => Ok(VAL_I64),
        other => Err(Error::Internal(format!(
            "no {other} values in the reduction, scan and integer kernels"
        ))),
    }
}

/// An `UNSUPPORTED` error for `op` when one of `dtypes` is i64 and the adapter lacks
/// `shader-int64` (browsers, SwiftShader): i64 data still moves (copies, `where`, gather,
/// concat run on pairs of 32-bit words), casts and compares as words, but the rest of its
/// arithmetic needs 64-bit integers in WGSL.
pub(crate) fn check_int64(dev: &GpuDevice, op: &str, dtypes: &[DType]) -> Result<()> {
    if dtypes.contains(&DType::I64) && !dev.has_int64() {
        let what = format!(
            "{op} on i64 tensors: the adapter lacks `shader-int64` (i64 data still \
            moves; the cpu backend computes on it)"
        );
        return Err(Error::Unsupported {
            backend: crate::BackendKind::WebGpu,
            what,
        });
    }
    Ok(())
}

/// `source` with each override named in `constants` set to its value, as a test runs a
/// built-in on the CPU's WGSL executor (which takes overrides at their defaults): `bool`
/// overrides from 0 / 1, the others as `u32` literals.
#[cfg(all(test, not(target_arch = "wasm32")))]
pub(crate) fn with_overrides(mut source: String, constants: &[(&str, u32)]) -> String {
    for &(name, value) in constants {
        let head = format!("override {name}: ");
        let Some(at) = source.find(&head) else {
            continue;
        };
        let end = at + source[at..].find(';').unwrap_or(0);
        let ty = source[at + head.len()..]
            .split_whitespace()
            .next()
            .unwrap_or("u32")
            .to_string();
        let literal = if ty == "bool" {
            (value != 0).to_string()
        } else {
            format!("{value}u")
        };
        source.replace_range(at..end, &format!("{head}{ty} = {literal}"));
    }
    source
}

/// A buffer as [`run_on_cpu`] binds it: its block and length in bytes.
#[cfg(all(test, not(target_arch = "wasm32")))]
pub(crate) fn bound<T: crate::Element>(b: &crate::Buffer<T>) -> (&Arc<Block>, u64) {
    (&b.inner, b.byte_len())
}

/// A run of a built-in WGSL entry point on the CPU's WGSL executor (the hal's, as the ops may
/// not name the public kernel API), for the tests that check the built-in shaders against the
/// CPU kernels: `buffers` bound in (group, binding) order after the parameter words, over
/// the `groups` grid, once the device's queue has finished.
#[cfg(all(test, not(target_arch = "wasm32")))]
pub(crate) fn run_on_cpu(
    d: &crate::Device,
    source: &str,
    entry: &str,
    words: &[u32],
    buffers: &[(&Arc<Block>, u64)],
    groups: [u32; 3],
) -> Result<()> {
    let program = crate::hal::cpu::wgsl::compile(source, entry, &[])?;
    let params = crate::Buffer::from_slice(d, words)?;
    d.queue().finish()?;
    let all: Vec<(&Arc<Block>, u64)> = std::iter::once(bound(&params))
        .chain(buffers.iter().copied())
        .collect();
    let places = program.bindings();
    if places.len() != all.len() {
        return Err(Error::Invalid(format!(
            "{entry} binds {} buffers: {} given",
            places.len(),
            all.len()
        )));
    }
    let args: Vec<crate::hal::UserArg<'_>> = all
        .iter()
        .zip(&places)
        .map(
            |(&(block, byte_len), &(group, binding))| crate::hal::UserArg::Buffer {
                block,
                group,
                binding,
                byte_offset: 0,
                byte_len,
            },
        )
        .collect();
    crate::hal::cpu::wgsl::run(&program, &args, groups)
}

pub(crate) fn specialise(
    source: &'static WgslSource,
    entry: &'static str,
    constants: Vec<(&'static str, u32)>,
) -> Specialisation {
    Specialisation {
        source,
        entry,
        constants,
        prelude: Vec::new(),
        generated: None,
    }
}

/// The storage-dtype declarations of elementwise.wgsl / matmul.wgsl for `dtype`.
pub(crate) fn store(dev: &GpuDevice, dtype: DType) -> Result<&'static str> {
    match dtype {
        DType::F32 => Ok(STORE_F32),
        DType::F16 if dev.has_f16() => Ok(STORE_F16),
        other => Err(Error::Internal(format!(
            "no {other} storage for the elementwise and matmul kernels on this adapter"
        ))),
    }
}

/// Whether the device runs the software adapters' kernel variants (see
/// [`crate::DeviceOptions::software_kernels`]).
pub(crate) fn software_kernels(dev: &GpuDevice, cx: &OpContext<'_>) -> bool {
    dev.is_software() && cx.options.software_kernels
}

/// Workgroup grid for `groups` workgroups of a 1-D problem: a 2-D grid past the per-dimension
/// limit.
pub(crate) fn grid_1d(dev: &GpuDevice, groups: u64) -> Result<[u32; 3]> {
    let max = u64::from(dev.max_workgroups_per_dimension());
    if groups <= max {
        return Ok([groups as u32, 1, 1]);
    }
    let y = groups.div_ceil(max);
    if y > max {
        return Err(Error::Limit {
            what: "workgroups of one launch".into(),
            value: groups,
            limit: "max_compute_workgroups_per_dimension squared",
            max: max * max,
        });
    }
    Ok([max as u32, y as u32, 1])
}

pub(crate) fn u32_of(what: &str, v: usize) -> Result<u32> {
    u32::try_from(v).map_err(|_| Error::Limit {
        what: what.into(),
        value: v as u64,
        limit: "u32 indexing of the webgpu kernels",
        max: u32::MAX.into(),
    })
}

/// Error unless every element of `o` is reachable through one storage binding.
pub(crate) fn check_binding(dev: &GpuDevice, o: &Operand<'_>) -> Result<()> {
    let bytes = o.layout.end() as u64 * 4;
    let max = dev.max_binding_size();
    if bytes > max {
        let what = format!(
            "the end of a {}-element view within its buffer, in bytes (webgpu kernels bind a \
                buffer from its start, so a view far into a large buffer reaches this far)",
            o.layout.numel()
        );
        return Err(Error::Limit {
            what,
            value: bytes,
            limit: "max_storage_binding_size",
            max,
        });
    }
    Ok(())
}

wgsl_params! {
    /// The parameters of the kernels that walk strided views over one output shape
    /// (elementwise.wgsl, copy.wgsl, cast.wgsl, select.wgsl), named `S_<field>`.
    pub(crate) struct StridedWords: S {
        /// Elements of the output.
        n: u32,
        rank: u32,
        /// Offset of the output (contiguous).
        out: u32,
        /// The output's shape, padded with 1s.
        shape: [u32; 8],
        /// Views (offset, then the strides padded with 0s) of up to three operands, in the
        /// order the kernel names them; unused ones are zero.
        a: [u32; 9],
        b: [u32; 9],
        c: [u32; 9],
        /// Periods of `a` and `b` read as a repeated block (elementwise.wgsl's mode 2).
        a_period: u32,
        b_period: u32,
    }
}

// The parameter structs spell the rank as a literal: it must stay this.
const _: () = assert!(MAX_RANK == 8);

/// `[offset, strides padded to MAX_RANK]` of a view.
pub(crate) fn view_words(l: &Layout) -> Result<[u32; 9]> {
    let mut w = [0; 9];
    w[0] = u32_of("tensor offset", l.offset)?;
    for (d, &s) in l.strides.iter().enumerate() {
        w[d + 1] = u32_of("tensor stride", s)?;
    }
    Ok(w)
}

/// The strided kernels' parameters for `out` and up to three `inputs` (periods zero).
pub(crate) fn strided_words(out: &Operand<'_>, inputs: &[&Operand<'_>]) -> Result<StridedWords> {
    let l = out.layout;
    let mut shape = [1; 8];
    for (d, &n) in l.shape.iter().enumerate() {
        shape[d] = u32_of("tensor extent", n)?;
    }
    let mut views = [[0; 9]; 3];
    for (v, x) in views.iter_mut().zip(inputs) {
        *v = view_words(x.layout)?;
    }
    let [a, b, c] = views;
    let (n, out) = (
        u32_of("element count", l.numel())?,
        u32_of("output offset", l.offset)?,
    );
    Ok(StridedWords {
        n,
        rank: l.shape.len() as u32,
        out,
        shape,
        a,
        b,
        c,
        a_period: 0,
        b_period: 0,
    })
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
    /// WGSL prepended to the file (see [`Specialisation::prelude`]).
    pub prelude: Vec<&'static str>,
    /// The binding of the statistics and their f32 words per (row, chunk).
    pub stats: (u32, usize),
}

/// Launch `kernel` over `rows` rows of `cols`: one workgroup per (row, chunk), or with the
/// software adapters' kernels one invocation per (row, chunk), with the parameter words
/// `params` makes of the columns per chunk and the chunks per row.
pub(crate) fn row_passes(
    q: &GpuBatch,
    dev: &GpuDevice,
    cx: &OpContext<'_>,
    kernel: RowPasses,
    [rows, cols]: [usize; 2],
    params: impl FnOnce(u32, u32) -> Vec<u32>,
    binds: &[(u32, Bind<'_>)],
) -> Result<()> {
    let serial = kernel.serial_entry.filter(|_| software_kernels(dev, cx));
    let chunk = match serial {
        Some(_) => split::serial_row_chunk(dev.max_loop_iterations(), rows, cols),
        None => split::row_chunk(dev.max_loop_iterations(), cols),
    };
    let chunks = chunk.map_or(1, |c| cols.div_ceil(c));
    let params = params(
        u32_of("columns", chunk.unwrap_or(cols))?,
        u32_of("chunks", chunks)?,
    );
    let per_group = if serial.is_some() { 64 } else { 1 };
    let grid = grid_1d(dev, (rows * chunks).div_ceil(per_group) as u64)?;
    let entry = serial.unwrap_or(kernel.entry);
    let pipeline = |pass: u32| {
        let mut constants = kernel.constants.clone();
        constants.push(("PASS", pass));
        dev.pipeline(Specialisation {
            prelude: kernel.prelude.clone(),
            ..specialise(kernel.source, entry, constants)
        })
    };
    let (stats_at, words) = kernel.stats;
    let mut binds = binds.to_vec();
    if chunks == 1 {
        binds.push((stats_at, Bind::SpareWrite));
        return q.launch(dev, pipeline(0), &params, &binds, grid);
    }
    let stats = split_temp(dev, cx, rows * chunks * words)?;
    binds.push((stats_at, Bind::Mem(&stats)));
    q.launch(dev, pipeline(1), &params, &binds, grid)?;
    q.launch(dev, pipeline(2), &params, &binds, grid)
}

/// Temporary device memory for `elements` f32 values that one storage binding must reach, for the
/// work a device with a loop-iteration limit splits across launches: an error past the binding
/// limit.
pub(crate) fn split_temp(
    dev: &GpuDevice,
    cx: &OpContext<'_>,
    elements: usize,
) -> Result<Arc<Block>> {
    let bytes = elements as u64 * 4;
    let max = dev.max_binding_size();
    if bytes > max {
        return Err(Error::Limit {
            what: "temporary of a launch split for the loop-iteration limit, in bytes".into(),
            value: bytes,
            limit: "max_storage_buffer_binding_size",
            max,
        });
    }
    (cx.temp)(bytes)
}

/// A contiguous tensor's elements as the words they are stored in (16-bit ones two a word,
/// 8-bit ones four, i64 ones as two words, low first).
#[cfg(all(test, not(target_arch = "wasm32")))]
pub(crate) fn stored_words(t: &crate::Tensor) -> Vec<u32> {
    use crate::DType;
    let pack = |halves: Vec<u16>| -> Vec<u32> {
        let word = |c: &[u16]| u32::from(c[0]) | c.get(1).map_or(0, |&h| u32::from(h) << 16);
        halves.chunks(2).map(word).collect()
    };
    match t.dtype() {
        DType::F32 => t
            .to_vec_blocking::<f32>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect(),
        DType::I32 => t
            .to_vec_blocking::<i32>()
            .unwrap()
            .iter()
            .map(|&v| v as u32)
            .collect(),
        DType::U32 => t.to_vec_blocking::<u32>().unwrap(),
        DType::F16 => pack(
            t.to_vec_blocking::<half::f16>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect(),
        ),
        DType::BF16 => pack(
            t.to_vec_blocking::<half::bf16>()
                .unwrap()
                .iter()
                .map(|v| v.to_bits())
                .collect(),
        ),
        DType::I64 => t
            .to_vec_blocking::<i64>()
            .unwrap()
            .iter()
            .flat_map(|&v| [v as u32, (v >> 32) as u32])
            .collect(),
        DType::Bool | DType::U8 | DType::I8 => {
            let bytes = t.retyped(DType::U8).to_vec_blocking::<u8>().unwrap();
            let word = |c: &[u8]| c.iter().rev().fold(0u32, |w, &b| w << 8 | u32::from(b));
            bytes.chunks(4).map(word).collect()
        }
    }
}

/// `entry` of `source` on the CPU's WGSL executor over `inputs` (at bindings 1, 2, ...), the
/// output `out_words` long (poisoned) at the next binding, over `groups` workgroups.
#[cfg(all(test, not(target_arch = "wasm32")))]
pub(crate) fn run_words(
    d: &crate::Device,
    source: &str,
    entry: &str,
    params: &[u32],
    inputs: &[Vec<u32>],
    out_words: usize,
    groups: u32,
) -> Vec<u32> {
    let buffers: Vec<crate::Buffer<u32>> = inputs
        .iter()
        .map(|w| crate::Buffer::from_slice(d, w).unwrap())
        .collect();
    let out = crate::Buffer::from_slice(d, &vec![0x7fa5_a5a5u32; out_words]).unwrap();
    let bindings: Vec<_> = buffers.iter().map(bound).chain([bound(&out)]).collect();
    run_on_cpu(d, source, entry, params, &bindings, [groups, 1, 1]).unwrap();
    out.read_blocking().unwrap()
}
