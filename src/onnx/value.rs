//! The values a session passes between nodes: device tensors, or small host tensors for the
//! integer data that shape computations read (`Shape`, axes, indices), so those run on the
//! host without a round trip through the device.

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

/// A value of a running graph.
#[derive(Clone, Debug)]
pub enum Val {
    /// Data on the host.
    Host(HostTensor),
    /// A tensor on the session's device.
    Device(Tensor),
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
        let dtype = device_dtype(self.elem)?;
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
        let host = host_of(c)?;
        let limit = match host.data {
            HostData::I64(_) => HOST_LIMIT,
            HostData::F32(_) => HOST_FLOAT_LIMIT,
        };
        if c.numel() <= limit || device_dtype(c.elem).is_err() {
            return Ok(Val::Host(host));
        }
        host.upload(device).map(Val::Device)
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        match self {
            Val::Host(h) => &h.shape,
            Val::Device(t) => t.shape(),
        }
    }

    /// The value as a tensor on `device`.
    pub fn tensor(&self, device: &Device) -> Result<Tensor> {
        match self {
            Val::Host(h) => h.upload(device),
            Val::Device(t) => Ok(t.clone()),
        }
    }

    /// The value on the host, if it is there (no read).
    pub fn as_host(&self) -> Option<&HostTensor> {
        match self {
            Val::Host(h) => Some(h),
            Val::Device(_) => None,
        }
    }

    /// The value on the host (read back from the device where it is there).
    pub async fn to_host(&self) -> Result<HostTensor> {
        match self {
            Val::Host(h) => Ok(h.clone()),
            Val::Device(t) => HostTensor::download(t).await,
        }
    }

    /// Blocking twin of [`Val::to_host`] (not in browsers).
    #[cfg(not(target_arch = "wasm32"))]
    pub fn host(&self) -> Result<HostTensor> {
        pollster::block_on(self.to_host())
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
