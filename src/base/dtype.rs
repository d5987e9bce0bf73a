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
    /// `shader-int64` (elsewhere its data moves, but arithmetic is `UNSUPPORTED`).
    I64,
}

impl DType {
    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 | DType::BF16 => 2,
            DType::I64 => 8,
        }
    }

    /// Whether this is an integer type (i32, u32, i64): the dtypes of integer arithmetic.
    pub fn is_integer(self) -> bool {
        matches!(self, DType::I32 | DType::U32 | DType::I64)
    }

    /// Whether this is a floating-point type.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::BF16)
    }

    /// Code that kernels switch on: 0 f32, 1 i32, 2 u32, 3 f16, 4 bf16, 5 i64.
    pub fn code(self) -> u32 {
        match self {
            DType::F32 => 0,
            DType::I32 => 1,
            DType::U32 => 2,
            DType::F16 => 3,
            DType::BF16 => 4,
            DType::I64 => 5,
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
        }
    }

    /// Lower-case name, as WGSL spells the scalar type.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::I32 => "i32",
            DType::U32 => "u32",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::I64 => "i64",
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
