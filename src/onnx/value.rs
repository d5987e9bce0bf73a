//! The values a session passes between nodes: device tensors, small host tensors for the
//! integer data that shape computations read (`Shape`, axes, indices), so those run on the
//! host without a round trip through the device, and sequences of tensors.

use half::{bf16, f16};

use super::constant::{le, Constant};
use super::elem::ElemType;
use crate::base::error::{Error, Result};
use crate::{DType, Device, Element, Tensor};

/// Integer constants up to this many elements stay on the host (shapes, axes, indices).
const HOST_LIMIT: usize = 4096;

/// Float constants up to this many elements stay on the host too: operators read such
/// numbers there (Clip's bounds, Pad's value, Resize's scales), and one on the device would
/// be read back, waiting for the device, on every run. An operator that wants one on the
/// device uploads it, as it does a small integer constant.
const HOST_FLOAT_LIMIT: usize = 16;

/// F32 constants of at least this many elements are held in f16 on the device when a session
/// asks for f16 weights (`SessionOptions::f16_weights`) and only layers read them (matrix
/// products, convolutions, attention): their weights, not biases or embedding tables.
pub const F16_WEIGHT_MIN: usize = 1024;

/// A value of a running graph.
#[derive(Clone, Debug)]
pub enum Val {
    /// Data on the host.
    Host(HostTensor),
    /// A tensor on the session's device.
    Device(Tensor),
    /// A sequence of tensors (ONNX's `seq(tensor)`).
    Seq(Sequence),
}

/// A sequence of tensors, each on the device or the host, all of one element type.
#[derive(Clone, Debug)]
pub struct Sequence {
    elem: ElemType,
    items: Vec<Val>,
}

/// A tensor held on the host: floats as f32, integers and booleans as i64.
#[derive(Clone, Debug, PartialEq)]
pub struct HostTensor {
    /// The ONNX element type it stands for.
    pub elem: ElemType,
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its elements, in row-major order.
    pub data: HostData,
}

/// The elements of a [`HostTensor`].
#[derive(Clone, Debug, PartialEq)]
pub enum HostData {
    /// Floating-point elements.
    F32(Vec<f32>),
    /// Integer and boolean elements.
    I64(Vec<i64>),
}

impl HostTensor {
    /// An i64 tensor of `shape`.
    pub fn i64(shape: Vec<usize>, data: Vec<i64>) -> HostTensor {
        HostTensor {
            elem: ElemType::I64,
            shape,
            data: HostData::I64(data),
        }
    }

    /// The elements as i64 (floats truncated).
    pub fn to_i64(&self) -> Vec<i64> {
        match &self.data {
            HostData::I64(v) => v.clone(),
            HostData::F32(v) => v.iter().map(|&x| x as i64).collect(),
        }
    }

    /// The elements as f64.
    pub fn to_f64(&self) -> Vec<f64> {
        match &self.data {
            HostData::I64(v) => v.iter().map(|&x| x as f64).collect(),
            HostData::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        }
    }

    /// The tensor on `device`, in the dtype that holds its element type.
    pub fn upload(&self, device: &Device) -> Result<Tensor> {
        self.upload_as(device, device_dtype(self.elem)?)
    }

    /// The tensor on `device` in `dtype`: floats rounded to it, integers truncated.
    fn upload_as(&self, device: &Device, dtype: DType) -> Result<Tensor> {
        match (&self.data, dtype) {
            (HostData::F32(v), DType::F16) => {
                let h: Vec<f16> = v.iter().map(|&x| f16::from_f32(x)).collect();
                Tensor::from_slice(device, &h, &self.shape)
            }
            (HostData::F32(v), DType::BF16) => {
                let h: Vec<bf16> = v.iter().map(|&x| bf16::from_f32(x)).collect();
                Tensor::from_slice(device, &h, &self.shape)
            }
            (HostData::F32(v), _) => Tensor::from_slice(device, v, &self.shape),
            (HostData::I64(v), DType::I32) => {
                let n: Vec<i32> = v.iter().map(|&x| x as i32).collect();
                Tensor::from_slice(device, &n, &self.shape)
            }
            (HostData::I64(v), DType::U32) => {
                let n: Vec<u32> = v.iter().map(|&x| x as u32).collect();
                Tensor::from_slice(device, &n, &self.shape)
            }
            (HostData::I64(v), DType::U8 | DType::Bool) => {
                let n: Vec<u8> = v.iter().map(|&x| x as u8).collect();
                Ok(Tensor::from_slice(device, &n, &self.shape)?.retyped(dtype))
            }
            (HostData::I64(v), DType::I8) => {
                let n: Vec<i8> = v.iter().map(|&x| x as i8).collect();
                Tensor::from_slice(device, &n, &self.shape)
            }
            (HostData::I64(v), _) => Tensor::from_slice(device, v, &self.shape),
        }
    }

    /// The tensor `t` read back from its device.
    pub async fn download(t: &Tensor) -> Result<HostTensor> {
        let shape = t.shape().to_vec();
        let (elem, data) = match t.dtype() {
            DType::F32 => (ElemType::F32, HostData::F32(read::<f32>(t).await?)),
            DType::F16 => {
                let v = read::<f16>(t).await?;
                (
                    ElemType::F16,
                    HostData::F32(v.iter().map(|x| x.to_f32()).collect()),
                )
            }
            DType::BF16 => {
                let v = read::<bf16>(t).await?;
                (
                    ElemType::BF16,
                    HostData::F32(v.iter().map(|x| x.to_f32()).collect()),
                )
            }
            DType::I32 => {
                let v = read::<i32>(t).await?;
                (
                    ElemType::I32,
                    HostData::I64(v.iter().map(|&x| x.into()).collect()),
                )
            }
            DType::U32 => {
                let v = read::<u32>(t).await?;
                (
                    ElemType::U32,
                    HostData::I64(v.iter().map(|&x| x.into()).collect()),
                )
            }
            DType::I64 => (ElemType::I64, HostData::I64(read::<i64>(t).await?)),
            DType::Bool | DType::U8 => {
                let v = read::<u8>(&t.retyped(DType::U8)).await?;
                (
                    ElemType::from_dtype(t.dtype()),
                    HostData::I64(v.iter().map(|&x| x.into()).collect()),
                )
            }
            DType::I8 => {
                let v = read::<i8>(t).await?;
                (
                    ElemType::I8,
                    HostData::I64(v.iter().map(|&x| x.into()).collect()),
                )
            }
        };
        Ok(HostTensor { elem, shape, data })
    }
}

/// `t`'s elements on the host.
async fn read<T: Element>(t: &Tensor) -> Result<Vec<T>> {
    t.to_vec().await
}

/// The device dtype for `elem`: doubles are computed in f32; types without a device dtype
/// (16-bit integers, u64, strings) are an error.
pub fn device_dtype(elem: ElemType) -> Result<DType> {
    match elem {
        ElemType::F64 => Ok(DType::F32),
        other => other
            .dtype()
            .ok_or_else(|| Error::Model(format!("{other} tensors cannot be held on a device yet"))),
    }
}

impl Val {
    /// The value `c` stored in the file: small integer data on the host, the rest on `device`.
    pub fn from_constant(c: &Constant, device: &Device) -> Result<Val> {
        Val::from_weight(c, device, false)
    }

    /// [`Val::from_constant`], but with `f16_weights` an f32 constant of at least
    /// [`F16_WEIGHT_MIN`] elements goes to the device in f16 (half the bytes to upload and
    /// hold; the session widens it where a node reads it).
    pub(crate) fn from_weight(c: &Constant, device: &Device, f16_weights: bool) -> Result<Val> {
        let host = host_of(c)?;
        let limit = match host.data {
            HostData::I64(_) => HOST_LIMIT,
            HostData::F32(_) => HOST_FLOAT_LIMIT,
        };
        if c.numel() <= limit || device_dtype(c.elem).is_err() {
            return Ok(Val::Host(host));
        }
        if f16_weights && c.elem == ElemType::F32 && c.numel() >= F16_WEIGHT_MIN {
            return host.upload_as(device, DType::F16).map(Val::Device);
        }
        host.upload(device).map(Val::Device)
    }

    /// The shape of a tensor (a sequence is an error).
    pub fn shape(&self) -> Result<&[usize]> {
        match self {
            Val::Host(h) => Ok(&h.shape),
            Val::Device(t) => Ok(t.shape()),
            Val::Seq(s) => Err(s.not_a_tensor()),
        }
    }

    /// The element type of a tensor (a sequence is an error): a device tensor's is the type
    /// its dtype holds.
    pub fn elem(&self) -> Result<ElemType> {
        match self {
            Val::Host(h) => Ok(h.elem),
            Val::Device(t) => Ok(ElemType::from_dtype(t.dtype())),
            Val::Seq(s) => Err(s.not_a_tensor()),
        }
    }

    /// The value as a tensor on `device` (a sequence is an error).
    pub fn tensor(&self, device: &Device) -> Result<Tensor> {
        match self {
            Val::Host(h) => h.upload(device),
            Val::Device(t) => Ok(t.clone()),
            Val::Seq(s) => Err(s.not_a_tensor()),
        }
    }

    /// The value on the host, if it is a tensor there (no read).
    pub fn as_host(&self) -> Option<&HostTensor> {
        match self {
            Val::Host(h) => Some(h),
            Val::Device(_) | Val::Seq(_) => None,
        }
    }

    /// The value, if it is a sequence.
    pub fn as_seq(&self) -> Option<&Sequence> {
        match self {
            Val::Seq(s) => Some(s),
            Val::Host(_) | Val::Device(_) => None,
        }
    }

    /// The tensor on the host (read back from the device where it is there; a sequence is
    /// an error).
    pub async fn to_host(&self) -> Result<HostTensor> {
        match self {
            Val::Host(h) => Ok(h.clone()),
            Val::Device(t) => HostTensor::download(t).await,
            Val::Seq(s) => Err(s.not_a_tensor()),
        }
    }

    /// Blocking twin of [`Val::to_host`] (not in browsers).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn host(&self) -> Result<HostTensor> {
        pollster::block_on(self.to_host())
    }
}

impl Sequence {
    /// An empty sequence of `elem` tensors.
    pub fn empty(elem: ElemType) -> Sequence {
        Sequence {
            elem,
            items: Vec::new(),
        }
    }

    /// The sequence of `items`, each a tensor of element type `elem`.
    pub fn new(elem: ElemType, items: Vec<Val>) -> Result<Sequence> {
        let mut s = Sequence::empty(elem);
        for item in items {
            s.push(item)?;
        }
        Ok(s)
    }

    /// The element type of its tensors.
    pub fn elem(&self) -> ElemType {
        self.elem
    }

    /// Its tensors, in order.
    pub fn items(&self) -> &[Val] {
        &self.items
    }

    /// How many tensors it holds.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether it holds no tensor.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// `item` added at the end.
    pub fn push(&mut self, item: Val) -> Result<()> {
        self.insert(self.items.len(), item)
    }

    /// `item` inserted before position `at` (at most [`Sequence::len`]): a tensor of the
    /// sequence's element type (a device tensor in the dtype that holds it), else an error.
    pub fn insert(&mut self, at: usize, item: Val) -> Result<()> {
        if at > self.items.len() {
            return Err(Error::OutOfRange(format!(
                "position {at} in a sequence of {} tensors; expected at most {}",
                self.items.len(),
                self.items.len()
            )));
        }
        let fits = match &item {
            Val::Host(h) => h.elem == self.elem,
            Val::Device(t) => device_dtype(self.elem).is_ok_and(|d| d == t.dtype()),
            Val::Seq(_) => {
                return Err(Error::Invalid(format!(
                    "a sequence cannot hold a sequence; expected a {} tensor",
                    self.elem
                )))
            }
        };
        if !fits {
            return Err(Error::DType {
                op: "sequence",
                expected: format!("{} tensors, as the sequence holds", self.elem),
                got: format!("a tensor of {}", item.elem()?),
            });
        }
        self.items.insert(at, item);
        Ok(())
    }

    /// The tensor at position `at` taken out, if the sequence has one there.
    pub fn remove(&mut self, at: usize) -> Result<Val> {
        if at >= self.items.len() {
            return Err(Error::OutOfRange(format!(
                "position {at} in a sequence of {} tensors",
                self.items.len()
            )));
        }
        Ok(self.items.remove(at))
    }

    /// The error for a sequence given where a tensor is expected.
    fn not_a_tensor(&self) -> Error {
        Error::Invalid(format!(
            "the value is a sequence of {} {} tensors; expected a tensor",
            self.items.len(),
            self.elem
        ))
    }
}

/// The constant's elements on the host.
pub fn host_of(c: &Constant) -> Result<HostTensor> {
    let b = &c.bytes;
    let floats = |size: usize, f: fn(&[u8]) -> f32| b.chunks_exact(size).map(f).collect();
    let data = match c.elem {
        ElemType::F32 => HostData::F32(floats(4, |x| f32::from_le_bytes(le(x)))),
        ElemType::F64 => HostData::F32(floats(8, |x| f64::from_le_bytes(le(x)) as f32)),
        ElemType::F16 => HostData::F32(floats(2, |x| f16::from_le_bytes(le(x)).to_f32())),
        ElemType::BF16 => HostData::F32(floats(2, |x| bf16::from_le_bytes(le(x)).to_f32())),
        ElemType::U64 => HostData::I64(
            b.chunks_exact(8)
                .map(|x| u64::from_le_bytes(le(x)) as i64)
                .collect(),
        ),
        ElemType::String => return Err(Error::Model("string tensors are not supported".into())),
        _ => HostData::I64(c.to_i64()?),
    };
    Ok(HostTensor {
        elem: c.elem,
        shape: c.dims.clone(),
        data,
    })
}
