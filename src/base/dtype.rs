//! Element types that buffers and tensors can hold.

use std::fmt;

/// Runtime element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit IEEE float.
    F32,
    /// 32-bit signed integer.
    I32,
    /// 32-bit unsigned integer.
    U32,
    /// 16-bit IEEE float (`half::f16`): stored in 16 bits, computed in f32 by the ops.
    F16,
    /// bfloat16 (`half::bf16`): stored in 16 bits, computed in f32 by the ops.
    BF16,
    /// 64-bit signed integer: on cpu and cuda; on webgpu only where the adapter has
    /// `shader-int64` (elsewhere its data moves, casts and compares, but the rest of its
    /// arithmetic is `UNSUPPORTED`).
    I64,
    /// Boolean, one byte holding 0 or 1 (any non-zero byte reads as true). Make and read
    /// such tensors with `Tensor::from_bools` and `Tensor::to_bools`.
    Bool,
    /// 8-bit unsigned integer: stored 4 to a word, computed widened to u32.
    U8,
    /// 8-bit signed integer: stored 4 to a word, computed widened to i32.
    I8,
}

impl DType {
    /// Every dtype, in the order of their kernel codes ([`DType::code`]).
    pub const ALL: [DType; 9] = [
        DType::F32,
        DType::I32,
        DType::U32,
        DType::F16,
        DType::BF16,
        DType::I64,
        DType::Bool,
        DType::U8,
        DType::I8,
    ];

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::I64 => 8,
            DType::Bool | DType::U8 | DType::I8 => 1,
        }
    }

    /// Whether this is an integer type (i32, u32, i64): the dtypes of integer arithmetic
    /// kernels (u8 and i8 compute widened to them, see [`DType::wide`]).
    pub fn is_integer(self) -> bool {
        matches!(self, DType::I32 | DType::U32 | DType::I64)
    }

    /// The dtype the ops compute a narrow dtype in, which holds each of its values exactly:
    /// f32 for f16 and bf16, u32 for bool and u8, i32 for i8; any other dtype itself.
    pub fn wide(self) -> DType {
        match self {
            DType::F16 | DType::BF16 => DType::F32,
            DType::Bool | DType::U8 => DType::U32,
            DType::I8 => DType::I32,
            other => other,
        }
    }

    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::BF16)
    }

    /// Code that kernels switch on: 0 f32, 1 i32, 2 u32, 3 f16, 4 bf16, 5 i64, 6 bool, 7 u8,
    /// 8 i8.
    pub fn code(self) -> u32 {
        match self {
            DType::F32 => 0,
            DType::I32 => 1,
            DType::U32 => 2,
            DType::F16 => 3,
            DType::BF16 => 4,
            DType::I64 => 5,
            DType::Bool => 6,
            DType::U8 => 7,
            DType::I8 => 8,
        }
    }

    /// The name TensorFlow.js and ONNX Runtime Web give it (`"float32"`, `"bfloat16"`),
    /// which the JS API takes too.
    pub fn long_name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::I32 => "int32",
            DType::U32 => "uint32",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::I64 => "int64",
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I8 => "int8",
        }
    }

    /// Lower-case name, as WGSL spells the scalar type (`u8` and `i8` as Rust does).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I64 => "i64",
            DType::Bool => "bool",
            DType::U8 => "u8",
            DType::I8 => "i8",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Rust type that can live in a [`Buffer`](crate::Buffer): plain old data with a [`DType`].
pub trait Element: bytemuck::Pod + Send + Sync + fmt::Debug + 'static {
    /// The runtime dtype of this element type.
    const DTYPE: DType;
}

impl Element for f32 {
    const DTYPE: DType = DType::F32;
}
impl Element for i32 {
    const DTYPE: DType = DType::I32;
}
impl Element for u32 {
    const DTYPE: DType = DType::U32;
}
impl Element for i64 {
    const DTYPE: DType = DType::I64;
}
impl Element for u8 {
    const DTYPE: DType = DType::U8;
}
impl Element for i8 {
    const DTYPE: DType = DType::I8;
}
impl Element for half::f16 {
    const DTYPE: DType = DType::F16;
}
impl Element for half::bf16 {
    const DTYPE: DType = DType::BF16;
}

/// A scalar kernel argument.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    /// `float`
    F32(f32),
    /// `int`
    I32(i32),
    /// `unsigned int`
    U32(u32),
}

impl Scalar {
    /// Its element type.
    pub fn dtype(self) -> DType {
        match self {
            Scalar::F32(_) => DType::F32,
            Scalar::I32(_) => DType::I32,
            Scalar::U32(_) => DType::U32,
        }
    }
}

/// The language a user kernel is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelLanguage {
    /// WGSL, run by `webgpu` devices.
    Wgsl,
    /// CUDA C, compiled by NVRTC for `cuda` devices.
    Cuda,
}
