//! What the ops' CUDA code shares: launch geometry, index types, operand addresses,
//! parameter padding.

use crate::base::layout::{Layout, MAX_RANK};
use crate::hal::cuda::{address, CudaDevice, CudaSource, Specialisation};
use crate::ops::{Operand, UnaryOp};
use crate::Result;

/// Helpers every built-in CUDA file calls: integer types, grid-stride loops, strided offsets
/// and float specials.
pub(crate) const COMMON: &str = include_str!("common.cuh");
/// `index_entry`, for the kernels that resolve indices held on the device (gather, scatter).
pub(crate) const INDEX: &str = include_str!("index.cuh");
/// The activation functions, for the files that apply one: `UNARY_CASES` generated from the op
/// table, then `activation.cuh`, which switches over them.
pub(crate) const ACTIVATION: &str = concat!(
    crate::ops::elementwise::unary_ops!(crate::ops::elementwise::table::unary_cuda),
    include_str!("activation.cuh")
);

/// The binary ops, for the files that apply one (elementwise, chain): `BINARY_CASES` and
/// `INT_CASES` generated from the op table, then `binary.cuh`, whose `binary_op` switches
/// over the first.
pub(crate) const BINARY: &str = concat!(
    crate::ops::elementwise::binary_ops!(crate::ops::elementwise::table::binary_cuda),
    include_str!("binary.cuh")
);

/// The C type of a parameter field (`u64`, `u32`, `float`, or another parameter struct).
macro_rules! cuda_type {
    (u64) => {
        "u64"
    };
    (u32) => {
        "u32"
    };
    (f32) => {
        "float"
    };
    ($named:ident) => {
        stringify!($named)
    };
}
pub(crate) use cuda_type;

/// The `-D VAL=` definition of the kernels written over a value type (reductions, scans,
/// integer arithmetic) for `dtype`: the CUDA twin of `common::webgpu::val`.
pub(crate) fn val(dtype: crate::DType) -> crate::Result<(&'static str, String)> {
    let name = match dtype {
        crate::DType::F32 => "float",
        crate::DType::I32 => "int",
        crate::DType::U32 => "unsigned",
        crate::DType::I64 => "i64",
        other => {
            return Err(crate::Error::Internal(format!(
                "no {other} values in the reduction, scan and integer kernels"
            )))
        }
    };
    Ok(("VAL", name.to_string()))
}

/// The C declaration of one parameter field (scalars, arrays and arrays of arrays).
macro_rules! cuda_field {
    ($f:ident: [[$t:tt; $n:literal]; $m:literal]) => {
        concat!(
            "    ",
            $crate::ops::common::cuda::cuda_type!($t),
            " ",
            stringify!($f),
            "[",
            $m,
            "][",
            $n,
            "];\n"
        )
    };
    ($f:ident: [$t:tt; $n:literal]) => {
        concat!(
            "    ",
            $crate::ops::common::cuda::cuda_type!($t),
            " ",
            stringify!($f),
            "[",
            $n,
            "];\n"
        )
    };
    ($f:ident: $t:tt) => {
        concat!(
            "    ",
            $crate::ops::common::cuda::cuda_type!($t),
            " ",
            stringify!($f),
            ";\n"
        )
    };
}
pub(crate) use cuda_field;

/// A `#[repr(C)]` parameter struct passed by value to CUDA kernels, and its C declaration
/// (`DECL`) generated from the same field list, which the op prepends to its `.cu` source: the
/// two sides cannot drift apart. Arrays take literal lengths (C needs them).
macro_rules! cuda_params {
    ($(#[$doc:meta])* struct $name:ident { $($(#[$fdoc:meta])* $f:ident: $t:tt),* $(,)? }) => {
        $(#[$doc])*
        #[repr(C)]
        #[derive(Clone, Copy, Default)]
        pub(super) struct $name {
            $($(#[$fdoc])* pub $f: $t),*
        }

        // SAFETY: `#[repr(C)]` plain numbers (and other such structs), declared to the kernel
        // by `DECL`, generated from the same fields.
        unsafe impl $crate::hal::cuda::DeviceRepr for $name {}

        impl $name {
            /// The struct's C declaration.
            pub(super) const DECL: &'static str =
                concat!(
                    "struct ",
                    stringify!($name),
                    " {\n",
                    $($crate::ops::common::cuda::cuda_field!($f: $t),)*
                    "};\n"
                );
        }
    };
}
pub(crate) use cuda_params;

// The parameter structs spell array lengths as literals for C: they must stay these.
const _: () = assert!(MAX_RANK == 8);

/// Threads per block of the 1-D kernels.
pub(crate) const BLOCK: u32 = 256;

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
    let ty = if (largest as u64) + (1 << 25) < u64::from(u32::MAX) {
        "unsigned int"
    } else {
        "unsigned long long"
    };
    ("IDX", ty.to_string())
}

/// Elements of a view counted from its first element (what a kernel indexes).
pub(crate) fn extent(l: &Layout) -> usize {
    l.end().saturating_sub(l.offset)
}

pub(crate) fn specialise(
    source: &'static CudaSource,
    entry: &'static str,
    defines: Vec<(&'static str, String)>,
) -> Specialisation {
    Specialisation {
        source,
        entry,
        defines,
        prelude: "",
        generated: None,
    }
}

/// Blocks for a grid-stride loop over `items`.
pub(crate) fn blocks(dev: &CudaDevice, items: usize, per_block: usize) -> u32 {
    let wanted = items.div_ceil(per_block).max(1);
    wanted.min(dev.sm_count() as usize * 32).min(65_535) as u32
}

pub(crate) fn operand(o: &Operand<'_>) -> Result<u64> {
    address(o.buf, o.layout.offset)
}

/// Device address of element `offset` of a buffer of `dtype` elements (8-byte i64 included;
/// [`address`] counts 4-byte elements).
pub(crate) fn address_of(
    buf: &std::sync::Arc<crate::hal::Block>,
    offset: usize,
    dtype: crate::DType,
) -> Result<u64> {
    Ok(crate::hal::cuda::device_memory(buf)?.ptr + (offset * dtype.size()) as u64)
}

/// [`operand`] for a view of `dtype` elements.
pub(crate) fn typed_operand(o: &Operand<'_>, dtype: crate::DType) -> Result<u64> {
    address_of(o.buf, o.layout.offset, dtype)
}

/// The bias and activation `-D` definitions of the kernels with an epilogue (matmul.cu,
/// conv.cu).
pub(crate) fn epilogue_defines(
    bias: &Option<Operand<'_>>,
    act: Option<UnaryOp>,
) -> [(&'static str, String); 2] {
    [
        ("HAS_BIAS", u32::from(bias.is_some()).to_string()),
        ("ACT", act.map_or(0, |f| f.code()).to_string()),
    ]
}
