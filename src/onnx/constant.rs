//! Tensors stored in the file (initializers, `Constant` nodes, tensor attributes): their
//! element type, dims and little-endian bytes, checked against each other.

use std::path::Path;

use prost::bytes::Bytes;

use super::elem::ElemType;
use super::proto::{SequenceProto, TensorProto};
use crate::base::error::{Error, Result};

/// A tensor whose data the file holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Constant {
    /// The element type.
    pub elem: ElemType,
    /// The extent of each axis (none for a scalar).
    pub dims: Vec<usize>,
    /// The elements, little-endian and packed; a view of the file's bytes where the file
    /// stores them raw. Empty for strings.
    pub bytes: Bytes,
    /// The elements of a string tensor.
    pub strings: Vec<Bytes>,
}

impl Constant {
    /// The tensor in `bytes`, a serialised `TensorProto` (as ONNX's test data `.pb` files).
    pub fn decode(bytes: impl Into<Bytes>) -> Result<Constant> {
        let t = <TensorProto as prost::Message>::decode(bytes.into())
            .map_err(|e| Error::Model(format!("not a TensorProto: {e}")))?;
        from_proto(&t, None)
    }

    /// The tensors of `bytes`, a serialised `SequenceProto` (ONNX's test data for a sequence
    /// value), in order; a sequence of anything but tensors is an error.
    pub fn decode_sequence(bytes: impl Into<Bytes>) -> Result<Vec<Constant>> {
        let s = <SequenceProto as prost::Message>::decode(bytes.into())
            .map_err(|e| Error::Model(format!("not a SequenceProto: {e}")))?;
        // SequenceProto.DataType: 0 undefined, 1 tensor.
        let elem_type = s.elem_type.unwrap_or(0);
        if elem_type > 1 || !s.sparse_tensor_values.is_empty() || !s.sequence_values.is_empty() {
            return Err(Error::Model(format!(
                "the sequence holds values of kind {elem_type} (SequenceProto.DataType); \
                 expected tensors (1)"
            )));
        }
        s.tensor_values
            .iter()
            .map(|t| from_proto(t, None))
            .collect()
    }

    /// How many elements the dims hold.
    pub fn numel(&self) -> usize {
        self.dims.iter().product()
    }

    /// The elements as i64, for the integer types (shapes, axes, indices).
    pub fn to_i64(&self) -> Result<Vec<i64>> {
        let b = &self.bytes;
        let v = match self.elem {
            ElemType::I64 => b
                .chunks_exact(8)
                .map(|c| i64::from_le_bytes(le(c)))
                .collect(),
            ElemType::I32 => b
                .chunks_exact(4)
                .map(|c| i32::from_le_bytes(le(c)) as i64)
                .collect(),
            ElemType::U32 => b
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(le(c)) as i64)
                .collect(),
            ElemType::I16 => b
                .chunks_exact(2)
                .map(|c| i16::from_le_bytes(le(c)) as i64)
                .collect(),
            ElemType::U16 => b
                .chunks_exact(2)
                .map(|c| u16::from_le_bytes(le(c)) as i64)
                .collect(),
            ElemType::I8 => b.iter().map(|&x| x as i8 as i64).collect(),
            ElemType::U8 | ElemType::Bool => b.iter().map(|&x| x as i64).collect(),
            other => {
                return Err(Error::Model(format!(
                    "expected an integer tensor, got {other}"
                )))
            }
        };
        Ok(v)
    }
}

/// `N` bytes of a chunk of exactly `N`.
pub(super) fn le<const N: usize>(chunk: &[u8]) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(chunk);
    out
}

/// The constant `t` holds; `dir` is where external data files are looked for (none when the
/// model came as bytes).
pub fn from_proto(t: &TensorProto, dir: Option<&Path>) -> Result<Constant> {
    let name = t.name.as_deref().unwrap_or("");
    let elem = ElemType::from_code(t.data_type.unwrap_or(0)).map_err(|e| context(e, name))?;
    let dims = dims(&t.dims).map_err(|e| context(e, name))?;
    let numel = dims
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .ok_or_else(|| context(Error::Model("its dims overflow".into()), name))?;
    let mut c = Constant {
        elem,
        dims,
        bytes: Bytes::new(),
        strings: Vec::new(),
    };
    if elem == ElemType::String {
        c.strings = t.string_data.clone();
        return check_len(c.strings.len(), numel, name).map(|()| c);
    }
    c.bytes = if t.data_location == Some(1) {
        external(t, dir).map_err(|e| context(e, name))?
    } else if let Some(raw) = &t.raw_data {
        raw.clone()
    } else {
        typed_fields(t, elem)
    };
    check_len(c.bytes.len(), numel * elem.size(), name)?;
    Ok(c)
}

/// Dims as extents, refusing negative ones.
pub fn dims(raw: &[i64]) -> Result<Vec<usize>> {
    raw.iter()
        .map(|&d| {
            usize::try_from(d)
                .map_err(|_| Error::Model(format!("dims {raw:?} hold {d}; expected dims ≥ 0")))
        })
        .collect()
}

/// The error `e`, saying which tensor it is about.
fn context(e: Error, name: &str) -> Error {
    match e {
        Error::Model(m) => Error::Model(format!("tensor '{name}': {m}")),
        other => other,
    }
}

/// Refuses data whose length is not what the dims and type say.
fn check_len(got: usize, expected: usize, name: &str) -> Result<()> {
    if got == expected {
        return Ok(());
    }
    Err(Error::Model(format!(
        "tensor '{name}' has {got} bytes (or strings) of data; its dims and type need {expected}"
    )))
}

/// The elements of the typed fields (`float_data`, `int32_data`, …), as little-endian bytes.
fn typed_fields(t: &TensorProto, elem: ElemType) -> Bytes {
    let mut out = Vec::new();
    match elem {
        ElemType::F32 => t
            .float_data
            .iter()
            .for_each(|x| out.extend(x.to_le_bytes())),
        ElemType::F64 => t
            .double_data
            .iter()
            .for_each(|x| out.extend(x.to_le_bytes())),
        ElemType::I64 => t
            .int64_data
            .iter()
            .for_each(|x| out.extend(x.to_le_bytes())),
        ElemType::U64 => t
            .uint64_data
            .iter()
            .for_each(|x| out.extend(x.to_le_bytes())),
        ElemType::U32 => t
            .uint64_data
            .iter()
            .for_each(|&x| out.extend((x as u32).to_le_bytes())),
        ElemType::I32 => t
            .int32_data
            .iter()
            .for_each(|x| out.extend(x.to_le_bytes())),
        // 8- and 16-bit types (and f16/bf16 bit patterns) sit in int32_data, one per element.
        _ => {
            let size = elem.size();
            t.int32_data
                .iter()
                .for_each(|x| out.extend(&x.to_le_bytes()[..size]));
        }
    }
    Bytes::from(out)
}

/// The bytes of an initializer stored in a file beside the model (`external_data`).
fn external(t: &TensorProto, dir: Option<&Path>) -> Result<Bytes> {
    let entry = |key: &str| {
        t.external_data
            .iter()
            .find(|e| e.key.as_deref() == Some(key))
            .and_then(|e| e.value.clone())
    };
    let location = entry("location")
        .ok_or_else(|| Error::Model("external data without a `location`".into()))?;
    let number = |key: &str| -> Result<Option<u64>> {
        entry(key)
            .map(|v| {
                v.parse()
                    .map_err(|_| Error::Model(format!("external `{key}` is {v:?}")))
            })
            .transpose()
    };
    let (offset, length) = (number("offset")?.unwrap_or(0), number("length")?);
    let dir = dir.ok_or_else(|| {
        Error::Model(format!(
            "its data is in the external file {location:?}; load the model from its path \
             (Session::load_path) so that the file can be found beside it"
        ))
    })?;
    let inside = Path::new(&location)
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)));
    if !inside {
        return Err(Error::Model(format!(
            "external data location {location:?} leaves the model's folder; expected a \
             relative path inside it"
        )));
    }
    read_range(&dir.join(&location), offset, length)
}

/// `length` bytes (or the rest) of the file at `path` from `offset`.
#[cfg(not(target_arch = "wasm32"))]
fn read_range(path: &Path, offset: u64, length: Option<u64>) -> Result<Bytes> {
    use std::io::{Read, Seek, SeekFrom};
    let fail = |e: std::io::Error| Error::Model(format!("external data {}: {e}", path.display()));
    let mut file = std::fs::File::open(path).map_err(fail)?;
    let size = file.metadata().map_err(fail)?.len();
    let length = length.unwrap_or(size.saturating_sub(offset));
    if offset.checked_add(length).is_none_or(|end| end > size) {
        return Err(Error::Model(format!(
            "external data {}: bytes {offset}..{offset}+{length} asked for, the file has {size}",
            path.display()
        )));
    }
    file.seek(SeekFrom::Start(offset)).map_err(fail)?;
    let mut out = vec![0; length as usize];
    file.read_exact(&mut out).map_err(fail)?;
    Ok(Bytes::from(out))
}

/// In the browser there are no files beside the model.
#[cfg(target_arch = "wasm32")]
fn read_range(path: &Path, _offset: u64, _length: Option<u64>) -> Result<Bytes> {
    Err(Error::Model(format!(
        "its data is in the external file {}, and in wasm there are no files: \
         save the model with its weights inside",
        path.display()
    )))
}
