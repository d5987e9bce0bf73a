//! The element types an ONNX file can name, and which of them the library's tensors hold.

use crate::base::dtype::DType;
use crate::base::error::{Error, Result};

/// The element type of an ONNX value, as the file states it (`TensorProto.DataType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ElemType {
    /// 32-bit float.
    F32,
    /// 64-bit float.
    F64,
    /// 16-bit IEEE float.
    F16,
    /// bfloat16.
    BF16,
    /// Signed integers of 8, 16, 32 and 64 bits.
    I8,
    /// 16-bit signed integer.
    I16,
    /// 32-bit signed integer.
    I32,
    /// 64-bit signed integer.
    I64,
    /// Unsigned integers of 8, 16, 32 and 64 bits.
    U8,
    /// 16-bit unsigned integer.
    U16,
    /// 32-bit unsigned integer.
    U32,
    /// 64-bit unsigned integer.
    U64,
    /// A boolean, one byte per element in the file.
    Bool,
    /// A byte string (tokenizer inputs, labels).
    String,
}

/// ONNX's `DataType` codes, in the order of its enum.
const CODES: &[(i32, ElemType)] = &[
    (1, ElemType::F32),
    (2, ElemType::U8),
    (3, ElemType::I8),
    (4, ElemType::U16),
    (5, ElemType::I16),
    (6, ElemType::I32),
    (7, ElemType::I64),
    (8, ElemType::String),
    (9, ElemType::Bool),
    (10, ElemType::F16),
    (11, ElemType::F64),
    (12, ElemType::U32),
    (13, ElemType::U64),
    (16, ElemType::BF16),
];

impl ElemType {
    /// The type of ONNX's `DataType` code `code`; complex, 8-bit, 4-bit and 2-bit float and
    /// integer types are refused, naming them.
    pub fn from_code(code: i32) -> Result<ElemType> {
        if let Some(&(_, t)) = CODES.iter().find(|(c, _)| *c == code) {
            return Ok(t);
        }
        let name = match code {
            0 => "UNDEFINED",
            14 | 15 => "a complex type",
            17..=20 | 24 => "a float8 type",
            21 | 22 | 25 | 26 => "a 4-bit or 2-bit integer type",
            23 => "FLOAT4E2M1",
            _ => "an unknown type",
        };
        Err(Error::Model(format!(
            "element type code {code} is {name}; supported: float, double, float16, \
             bfloat16, (u)int8/16/32/64, bool and string"
        )))
    }

    /// ONNX's name of the type (`tensor(float)` says `float`).
    pub fn name(self) -> &'static str {
        match self {
            ElemType::F32 => "float",
            ElemType::F64 => "double",
            ElemType::F16 => "float16",
            ElemType::BF16 => "bfloat16",
            ElemType::I8 => "int8",
            ElemType::I16 => "int16",
            ElemType::I32 => "int32",
            ElemType::I64 => "int64",
            ElemType::U8 => "uint8",
            ElemType::U16 => "uint16",
            ElemType::U32 => "uint32",
            ElemType::U64 => "uint64",
            ElemType::Bool => "bool",
            ElemType::String => "string",
        }
    }

    /// Bytes per element in a `raw_data` field (strings have none).
    pub fn size(self) -> usize {
        match self {
            ElemType::I8 | ElemType::U8 | ElemType::Bool => 1,
            ElemType::F16 | ElemType::BF16 | ElemType::I16 | ElemType::U16 => 2,
            ElemType::F32 | ElemType::I32 | ElemType::U32 => 4,
            ElemType::F64 | ElemType::I64 | ElemType::U64 => 8,
            ElemType::String => 0,
        }
    }

    /// The integer `v` as this integer type holds it: the low bits kept (two's complement)
    /// for 8-, 16- and 32-bit types, bool `v != 0`; others (floats too) as it is.
    pub fn wrap(self, v: i64) -> i64 {
        match self {
            ElemType::Bool => i64::from(v != 0),
            ElemType::I8 => i64::from(v as i8),
            ElemType::U8 => i64::from(v as u8),
            ElemType::I16 => i64::from(v as i16),
            ElemType::U16 => i64::from(v as u16),
            ElemType::I32 => i64::from(v as i32),
            ElemType::U32 => i64::from(v as u32),
            _ => v,
        }
    }

    /// The float `f` converted to this integer type as the device casts do: truncated
    /// toward zero and saturated (NaN 0); bool `f != 0` (NaN true).
    pub fn saturate(self, f: f32) -> i64 {
        match self {
            ElemType::Bool => i64::from(f != 0.0),
            ElemType::I8 => i64::from(f as i8),
            ElemType::U8 => i64::from(f as u8),
            ElemType::I16 => i64::from(f as i16),
            ElemType::U16 => i64::from(f as u16),
            ElemType::I32 => i64::from(f as i32),
            ElemType::U32 => i64::from(f as u32),
            ElemType::U64 => f as u64 as i64,
            _ => f as i64,
        }
    }

    /// The type a tensor of library dtype `dtype` holds.
    pub fn from_dtype(dtype: DType) -> ElemType {
        match dtype {
            DType::F32 => ElemType::F32,
            DType::F16 => ElemType::F16,
            DType::BF16 => ElemType::BF16,
            DType::I32 => ElemType::I32,
            DType::U32 => ElemType::U32,
            DType::I64 => ElemType::I64,
            DType::Bool => ElemType::Bool,
            DType::U8 => ElemType::U8,
            DType::I8 => ElemType::I8,
        }
    }

    /// The library dtype that holds this type as it is, if one does.
    pub fn dtype(self) -> Option<DType> {
        match self {
            ElemType::F32 => Some(DType::F32),
            ElemType::F16 => Some(DType::F16),
            ElemType::BF16 => Some(DType::BF16),
            ElemType::I32 => Some(DType::I32),
            ElemType::U32 => Some(DType::U32),
            ElemType::I64 => Some(DType::I64),
            ElemType::Bool => Some(DType::Bool),
            ElemType::U8 => Some(DType::U8),
            ElemType::I8 => Some(DType::I8),
            _ => None,
        }
    }
}

impl std::fmt::Display for ElemType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
