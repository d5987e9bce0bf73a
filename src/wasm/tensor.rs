//! The JS `Tensor`: shape, dtype, async reads back to typed arrays, and the op catalogue.

use wasm_bindgen::prelude::*;

use super::error::{axis_of, invalid, js_error, usize_of};
use super::gpu::{JsBuffer, TypedBuffer};
use super::options::{Options, TensorArgs};
use crate::ops::gather::IndexMode;
use crate::ops::{BinaryOp, NormKind, NormParams, ReduceOp, UnaryOp};
use crate::{Buffer, DType, Tensor};

/// A tensor on a device. Call `dispose()` when done (or free it with a scope): the garbage
/// collector frees a forgotten one only when it runs, which may be late, since it does not see
/// the device memory behind the small JS object.
#[wasm_bindgen(js_name = Tensor)]
pub struct JsTensor {
    inner: Tensor,
}

impl From<Tensor> for JsTensor {
    fn from(inner: Tensor) -> Self {
        JsTensor { inner }
    }
}

/// Norm parameters from `{ eps, activation }` and the scale and shift tensors.
fn norm_params<'a>(
    o: &Options,
    weight: Option<&'a Tensor>,
    bias: Option<&'a Tensor>,
) -> Result<NormParams<'a>, JsValue> {
    Ok(NormParams {
        weight,
        bias,
        eps: o.number("eps")?.map_or(1e-5, |e| e as f32),
        act: o.activation()?,
    })
}

/// What `value` is, for an error message: its constructor's name and length.
fn describe(value: &JsValue) -> String {
    let name = constructor_name(value);
    let length = js_sys::Reflect::get(value, &"length".into())
        .ok()
        .and_then(|l| l.as_f64());
    match (name, length) {
        (Some(n), Some(l)) => format!("a {n} of {l} elements"),
        (Some(n), None) => format!("a {n}"),
        _ => super::error::js_repr(value),
    }
}

/// The elements of `t`, row-major, in a new `ArrayBuffer`.
async fn array_buffer(t: &Tensor) -> Result<JsValue, JsValue> {
    t.read_array_buffer()
        .await
        .map(JsValue::from)
        .map_err(js_error)
}

/// The dtype called `name` (`"f32"`, `"i32"`, `"u32"`, `"f16"`, `"bf16"`, `"i64"`, `"bool"`,
/// `"u8"`, `"i8"`), or by the name TF.js and onnxruntime-web use (`"float32"`, `"int32"`,
/// `"uint32"`, `"float16"`, `"bfloat16"`, `"int64"`, `"uint8"`, `"int8"`).
pub(super) fn dtype_named(name: &str) -> Result<DType, JsValue> {
    DType::ALL
        .into_iter()
        .find(|d| d.name() == name || d.long_name() == name)
        .ok_or_else(|| {
            invalid(format!(
            "unknown dtype `{name}`: expected f32, i32, u32, f16, bf16, i64, bool, u8 or i8 (or \
             float32, int32, uint32, float16, bfloat16, int64, uint8, int8)"
        ))
        })
}

/// A tensor of `shape` on `device` holding a copy of the typed array `data`; a `Uint16Array`
/// holds the bits of `dtype` (f16 or bf16), a `Float16Array` f16, a `Uint8Array` u8 (or bool
/// where `dtype` says so: non-zero bytes are true), an `Int8Array` i8.
pub(super) fn from_js(
    device: &crate::Device,
    data: &JsValue,
    shape: &[usize],
    dtype: Option<DType>,
) -> Result<Tensor, JsValue> {
    let t = if let Some(a) = data.dyn_ref::<js_sys::Float32Array>() {
        Tensor::from_slice(device, &a.to_vec(), shape)
    } else if let Some(a) = data.dyn_ref::<js_sys::Int32Array>() {
        Tensor::from_slice(device, &a.to_vec(), shape)
    } else if let Some(a) = data.dyn_ref::<js_sys::Uint32Array>() {
        Tensor::from_slice(device, &a.to_vec(), shape)
    } else if let Some(a) = data.dyn_ref::<js_sys::BigInt64Array>() {
        from_i64_array(device, a, shape)?
    } else if let Some(a) = data.dyn_ref::<js_sys::Uint8Array>() {
        let bytes = a.to_vec();
        match dtype {
            Some(DType::Bool) => {
                let bools: Vec<bool> = bytes.iter().map(|&b| b != 0).collect();
                Tensor::from_bools(device, &bools, shape)
            }
            _ => Tensor::from_slice(device, &bytes, shape),
        }
    } else if let Some(a) = data.dyn_ref::<js_sys::Int8Array>() {
        Tensor::from_slice(device, &a.to_vec(), shape)
    } else if constructor_name(data).as_deref() == Some("Float16Array") {
        let halves: Vec<half::f16> = bits16(data)?
            .into_iter()
            .map(half::f16::from_bits)
            .collect();
        Tensor::from_slice(device, &halves, shape)
    } else if let Some(a) = data.dyn_ref::<js_sys::Uint16Array>() {
        from_u16_array(device, a, shape, dtype)?
    } else {
        return Err(invalid(format!(
            "tensor data is {}: expected a Float32Array, Int32Array, Uint32Array, BigInt64Array \
             (i64), Uint8Array (u8, bool), Int8Array, Float16Array, or a Uint16Array of f16 or \
             bf16 bits",
            describe(data)
        )));
    };
    t.map_err(js_error)
}

/// The name of `data`'s constructor (`Float16Array` has no js-sys type yet).
fn constructor_name(data: &JsValue) -> Option<String> {
    js_sys::Reflect::get(data, &"constructor".into())
        .ok()
        .and_then(|c| js_sys::Reflect::get(&c, &"name".into()).ok())
        .and_then(|n| n.as_string())
}

/// The 16-bit words of a typed array of 2-byte elements, read through its buffer.
fn bits16(data: &JsValue) -> Result<Vec<u16>, JsValue> {
    let get = |key: &str| {
        js_sys::Reflect::get(data, &key.into())
            .ok()
            .and_then(|v| v.as_f64())
            .unwrap_or(0.0) as u32
    };
    let buffer = js_sys::Reflect::get(data, &"buffer".into())?;
    let words = js_sys::Uint16Array::new_with_byte_offset_and_length(
        &buffer,
        get("byteOffset"),
        get("length"),
    );
    Ok(words.to_vec())
}

/// An i64 tensor from a `BigInt64Array`: the values' words (low first), uploaded as u32 and
/// viewed as i64.
fn from_i64_array(
    device: &crate::Device,
    a: &js_sys::BigInt64Array,
    shape: &[usize],
) -> Result<crate::Result<Tensor>, JsValue> {
    let length = a.length().checked_mul(2).ok_or_else(|| {
        invalid(format!(
            "tensor data is {}: too many elements for wasm memory",
            describe(a)
        ))
    })?;
    let words =
        js_sys::Uint32Array::new_with_byte_offset_and_length(&a.buffer(), a.byte_offset(), length)
            .to_vec();
    Ok(Tensor::from_slice(device, &words, &[words.len()])
        .and_then(|w| crate::ops::common::words::words_as_i64(&w, shape)))
}

/// An f16 or bf16 tensor from a `Uint16Array` of its bits; `dtype` says which.
fn from_u16_array(
    device: &crate::Device,
    a: &js_sys::Uint16Array,
    shape: &[usize],
    dtype: Option<DType>,
) -> Result<crate::Result<Tensor>, JsValue> {
    let bits = a.to_vec().into_iter();
    match dtype {
        Some(DType::F16) => {
            let v: Vec<half::f16> = bits.map(half::f16::from_bits).collect();
            Ok(Tensor::from_slice(device, &v, shape))
        }
        Some(DType::BF16) => {
            let v: Vec<half::bf16> = bits.map(half::bf16::from_bits).collect();
            Ok(Tensor::from_slice(device, &v, shape))
        }
        _ => Err(invalid(
            "tensor data is a Uint16Array: give the dtype its bits are, 'f16' or 'bf16'".into(),
        )),
    }
}

fn wrap(r: crate::Result<Tensor>) -> Result<JsTensor, JsValue> {
    r.map(JsTensor::from).map_err(js_error)
}

impl JsTensor {
    /// Pooling of `kind` (`method` names it in errors) by a window size or an options object.
    fn pool(
        &self,
        kind: crate::ops::PoolKind,
        method: &'static str,
        options: JsValue,
    ) -> Result<JsTensor, JsValue> {
        let p = match options.as_f64() {
            Some(size) => {
                let k = usize_of("size", size)?;
                crate::ops::PoolOptions::new([k, k])
            }
            None => {
                let keys = [
                    "kernel",
                    "stride",
                    "padding",
                    "dilation",
                    "countIncludePad",
                    "ceilMode",
                ];
                let o = Options::new(method, Some(options), &keys)?;
                let kernel = o.pair("kernel")?.ok_or_else(|| {
                    invalid(format!(
                        "{method}: no `kernel`: expected a size or [rows, columns]"
                    ))
                })?;
                crate::ops::PoolOptions {
                    kernel,
                    stride: o.pair("stride")?.unwrap_or(kernel),
                    padding: o.sides("padding")?.unwrap_or([0; 4]),
                    dilation: o.pair("dilation")?.unwrap_or([1, 1]),
                    count_include_pad: o.flag("countIncludePad")?.unwrap_or(false),
                    ceil_mode: o.flag("ceilMode")?.unwrap_or(false),
                }
            }
        };
        wrap(self.inner.pool2d_with(kind, p))
    }

    /// A norm over the trailing `axes` option's count of axes.
    fn norm(
        &self,
        kind: NormKind,
        o: &Options,
        params: NormParams<'_>,
    ) -> Result<JsTensor, JsValue> {
        let axes = o
            .number("axes")?
            .map(|a| usize_of("axes", a))
            .transpose()?
            .unwrap_or(1);
        wrap(crate::ops::norm::norm_trailing(
            &self.inner.device().queue(),
            kind,
            &self.inner,
            axes,
            params,
        ))
    }
}

#[wasm_bindgen(js_class = Tensor)]
impl JsTensor {
    /// `new Tensor(...)` is refused, naming what makes tensors: a device, or for
    /// onnxruntime-web's host tensor, `HostTensor`.
    #[wasm_bindgen(constructor, skip_typescript)]
    pub fn new() -> Result<JsTensor, JsValue> {
        Err(invalid(
            "new Tensor(): a device makes tensors (device.tensor(data, shape)); for \
             onnxruntime-web's Tensor (type, data, dims) use HostTensor, or unicompute/ort's Tensor"
                .into(),
        ))
    }

    /// Extent of each dimension (the npm package makes it a frozen array of numbers).
    #[wasm_bindgen(getter, unchecked_return_type = "readonly number[]")]
    pub fn shape(&self) -> Vec<u32> {
        self.inner.shape().iter().map(|&n| n as u32).collect()
    }

    /// Element type: `"f32"`, `"i32"`, `"u32"`, `"f16"`, `"bf16"`, `"i64"`, `"bool"`, `"u8"`
    /// or `"i8"`.
    #[wasm_bindgen(getter, unchecked_return_type = "DType")]
    pub fn dtype(&self) -> String {
        self.inner.dtype().to_string()
    }

    /// The elements, row-major, as a `Float32Array` (f32, and f16 / bf16 widened on the
    /// device), `Int32Array`, `Uint32Array`, `BigInt64Array` (i64), `Uint8Array` (u8, and bool
    /// as 0 / 1) or `Int8Array`: one copy from where they lie
    /// (a mapped GPU buffer, or the CPU backend's memory) into the array. Resolves when the device
    /// is done.
    #[wasm_bindgen(unchecked_return_type = "ElementArray")]
    pub async fn read(&self) -> Result<JsValue, JsValue> {
        let t = &self.inner;
        Ok(match t.dtype() {
            DType::I32 => js_sys::Int32Array::new(&array_buffer(t).await?).into(),
            DType::U32 => js_sys::Uint32Array::new(&array_buffer(t).await?).into(),
            DType::I64 => js_sys::BigInt64Array::new(&array_buffer(t).await?).into(),
            DType::U8 | DType::Bool => js_sys::Uint8Array::new(&array_buffer(t).await?).into(),
            DType::I8 => js_sys::Int8Array::new(&array_buffer(t).await?).into(),
            DType::F32 => js_sys::Float32Array::new(&array_buffer(t).await?).into(),
            DType::F16 | DType::BF16 => {
                let wide = t.cast(DType::F32).map_err(js_error)?;
                js_sys::Float32Array::new(&array_buffer(&wide).await?).into()
            }
        })
    }

    /// The bits of an f16 or bf16 tensor's elements, row-major, as a `Uint16Array` (no
    /// widening: `read()` gives them as f32). Other dtypes reject with code `DTYPE`.
    #[wasm_bindgen(js_name = read16)]
    pub async fn read_16(&self) -> Result<js_sys::Uint16Array, JsValue> {
        let t = &self.inner;
        let bytes = match t.dtype() {
            DType::F16 | DType::BF16 => array_buffer(t).await?,
            other => {
                return Err(js_error(crate::Error::DType {
                    op: "read16",
                    expected: "f16 or bf16 (read() gives other dtypes)".into(),
                    got: other.name().into(),
                }))
            }
        };
        Ok(js_sys::Uint16Array::new(&bytes))
    }

    /// The elements into `dst`, which must be the typed array `read()` would give (a
    /// `Float32Array` for f32, f16 and bf16, `Int32Array`, `Uint32Array`, `BigInt64Array`,
    /// `Uint8Array` for u8 and bool, `Int8Array`) with
    /// exactly as many elements; resolves to `dst`. One copy, as `read()`; reusing one array across
    /// reads also spares the first touch of a new array's pages, most of a large read's host time
    /// in Chromium.
    #[wasm_bindgen(js_name = readInto, unchecked_return_type = "ElementArray")]
    pub async fn read_into(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ElementArray")] dst: JsValue,
    ) -> Result<JsValue, JsValue> {
        let t = &self.inner;
        let wide = match t.dtype() {
            DType::F16 | DType::BF16 => t.cast(DType::F32).map_err(js_error)?,
            _ => t.clone(),
        };
        let (kind, fits) = match wide.dtype() {
            DType::I32 => ("Int32Array", dst.is_instance_of::<js_sys::Int32Array>()),
            DType::U32 => ("Uint32Array", dst.is_instance_of::<js_sys::Uint32Array>()),
            DType::I64 => (
                "BigInt64Array",
                dst.is_instance_of::<js_sys::BigInt64Array>(),
            ),
            DType::U8 | DType::Bool => ("Uint8Array", dst.is_instance_of::<js_sys::Uint8Array>()),
            DType::I8 => ("Int8Array", dst.is_instance_of::<js_sys::Int8Array>()),
            _ => ("Float32Array", dst.is_instance_of::<js_sys::Float32Array>()),
        };
        let length = js_sys::Reflect::get(&dst, &"length".into())
            .ok()
            .and_then(|l| l.as_f64());
        if !fits || length != Some(t.numel() as f64) {
            return Err(invalid(format!(
                "readInto: got {}: expected a {kind} of {} elements (the tensor's)",
                describe(&dst),
                t.numel()
            )));
        }
        let len = u32::try_from(t.numel() * wide.dtype().size()).map_err(|_| {
            invalid(format!(
                "readInto: {} elements are more than one typed array holds",
                t.numel()
            ))
        })?;
        let offset = js_sys::Reflect::get(&dst, &"byteOffset".into())?
            .as_f64()
            .unwrap_or(0.0) as u32;
        let bytes = js_sys::Uint8Array::new_with_byte_offset_and_length(
            &js_sys::Reflect::get(&dst, &"buffer".into())?,
            offset,
            len,
        );
        wide.read_into_js(&bytes).await.map_err(js_error)?;
        Ok(dst)
    }

    /// The browser's `GPUBuffer` holding this (contiguous) tensor, as `{ buffer, byteOffset,
    /// byteLength }`, once the work recorded on it is submitted, so the page's own WebGPU
    /// submissions come after it. It is the tensor's pooled memory: valid while the tensor
    /// lives (not after `free()`), and not the page's to destroy. A strided view rejects with
    /// `INVALID` (call `contiguous()`), a CPU tensor with `UNSUPPORTED`.
    #[wasm_bindgen(js_name = gpuBuffer, unchecked_return_type = "{ buffer: GPUBufferLike; \
        byteOffset: number; byteLength: number }")]
    pub fn gpu_buffer(&self) -> Result<JsValue, JsValue> {
        let (buffer, offset, bytes) = self.inner.gpu_buffer_js().map_err(js_error)?;
        let out = js_sys::Object::new();
        for (key, value) in [
            ("buffer", buffer),
            ("byteOffset", (offset as f64).into()),
            ("byteLength", (bytes as f64).into()),
        ] {
            js_sys::Reflect::set(&out, &key.into(), &value)?;
        }
        Ok(out.into())
    }

    /// The elements as a `Buffer` to bind to a user kernel (f32, i32 or u32): the tensor's own
    /// memory when it is contiguous, shared (what a kernel writes there, the tensor holds),
    /// else a contiguous copy. Other dtypes are a `DTYPE` error (`cast()` first).
    #[wasm_bindgen(js_name = toBuffer)]
    pub fn to_buffer(&self) -> Result<JsBuffer, JsValue> {
        let dtype = self.inner.dtype();
        if !matches!(dtype, DType::F32 | DType::I32 | DType::U32) {
            return Err(js_error(crate::Error::DType {
                op: "toBuffer",
                expected: "f32, i32 or u32 (cast() first)".into(),
                got: dtype.name().into(),
            }));
        }
        let c = self.inner.contiguous().map_err(js_error)?;
        let (block, device, offset, len) = (
            c.inner.clone(),
            c.device.clone(),
            c.layout.offset,
            c.numel(),
        );
        let inner = match dtype {
            DType::F32 => TypedBuffer::F32(Buffer::from_inner(block, device, offset, len)),
            DType::I32 => TypedBuffer::I32(Buffer::from_inner(block, device, offset, len)),
            _ => TypedBuffer::U32(Buffer::from_inner(block, device, offset, len)),
        };
        Ok(JsBuffer { inner })
    }

    /// The same elements in a new contiguous tensor (this one if it already is).
    pub fn contiguous(&self) -> Result<JsTensor, JsValue> {
        wrap(self.inner.contiguous())
    }

    /// A view with another shape of the same number of elements.
    pub fn reshape(&self, shape: Vec<f64>) -> Result<JsTensor, JsValue> {
        wrap(self.inner.reshape(&super::error::usizes("shape", &shape)?))
    }

    /// Elements `start..end` along `axis` (a view).
    pub fn slice(&self, axis: f64, start: f64, end: f64) -> Result<JsTensor, JsValue> {
        let (axis, start, end) = (
            axis_of(self.inner.rank(), axis)?,
            usize_of("start", start)?,
            usize_of("end", end)?,
        );
        wrap(self.inner.slice(axis, start..end))
    }

    /// This tensor broadcast to `shape` as numpy does (a view: no copy).
    #[wasm_bindgen(js_name = broadcastTo)]
    pub fn broadcast_to(&self, shape: Vec<f64>) -> Result<JsTensor, JsValue> {
        wrap(
            self.inner
                .broadcast_to(&super::error::usizes("shape", &shape)?),
        )
    }

    /// The last two dimensions swapped (a view).
    pub fn transpose(&self) -> Result<JsTensor, JsValue> {
        wrap(self.inner.t())
    }

    /// A unary op or activation by name (`UnaryName`, from the op table: `exp`, `gelu_tanh`,
    /// ...).
    pub fn unary(
        &self,
        #[wasm_bindgen(unchecked_param_type = "UnaryName")] op: &str,
    ) -> Result<JsTensor, JsValue> {
        let op = UnaryOp::from_name(op).ok_or_else(|| {
            invalid(format!(
                "unknown unary op `{op}`: expected {}",
                UnaryOp::names()
            ))
        })?;
        wrap(self.inner.unary(op))
    }

    /// A binary op by name (`add`, `sub`, `mul`, `div`, `minimum`, `maximum`, `pow`),
    /// broadcasting; `{ activation }` applies a unary op in the same kernel.
    pub fn binary(
        &self,
        #[wasm_bindgen(unchecked_param_type = "BinaryName")] op: &str,
        other: &JsTensor,
        options: Option<JsValue>,
    ) -> Result<JsTensor, JsValue> {
        let op = BinaryOp::from_name(op).ok_or_else(|| {
            invalid(format!(
                "unknown binary op `{op}`: expected add, sub, mul, div, minimum, maximum or pow"
            ))
        })?;
        self.binary_op(op, other, options)
    }

    /// `this + other`, broadcasting; `{ activation: 'relu' }` fuses an activation.
    pub fn add(&self, other: &JsTensor, options: Option<JsValue>) -> Result<JsTensor, JsValue> {
        self.binary_op(BinaryOp::Add, other, options)
    }

    /// `this - other`, broadcasting; `{ activation }` fuses an activation.
    pub fn sub(&self, other: &JsTensor, options: Option<JsValue>) -> Result<JsTensor, JsValue> {
        self.binary_op(BinaryOp::Sub, other, options)
    }

    /// `this * other`, broadcasting; `{ activation }` fuses an activation.
    pub fn mul(&self, other: &JsTensor, options: Option<JsValue>) -> Result<JsTensor, JsValue> {
        self.binary_op(BinaryOp::Mul, other, options)
    }

    /// `this / other`, broadcasting; `{ activation }` fuses an activation.
    pub fn div(&self, other: &JsTensor, options: Option<JsValue>) -> Result<JsTensor, JsValue> {
        self.binary_op(BinaryOp::Div, other, options)
    }

    /// A view with the dimensions reordered (`dims` is a permutation).
    pub fn permute(&self, dims: Vec<f64>) -> Result<JsTensor, JsValue> {
        wrap(self.inner.permute(&super::error::usizes("dims", &dims)?))
    }

    /// Cumulative sum along `axis`; `{ exclusive, reverse }` as ONNX's CumSum (each element
    /// left out of its own sum; sums from the end).
    pub fn cumsum(&self, axis: f64, options: Option<JsValue>) -> Result<JsTensor, JsValue> {
        let o = Options::new("cumsum", options, &["exclusive", "reverse"])?;
        let options = crate::ops::CumsumOptions {
            exclusive: o.flag("exclusive")?.unwrap_or(false),
            reverse: o.flag("reverse")?.unwrap_or(false),
        };
        wrap(
            self.inner
                .cumsum_with(axis_of(self.inner.rank(), axis)?, options),
        )
    }

    /// Layer norm's statistics over the last `axes` axes (`{ axes, eps }`: 1 and 1e-5 by
    /// default): `[mean, invStdDev]`, each shaped as this tensor with those axes kept as 1
    /// (ONNX's LayerNormalization outputs, for training).
    #[wasm_bindgen(js_name = layerNormStats, unchecked_return_type = "[Tensor, Tensor]")]
    pub fn layer_norm_stats(&self, options: Option<JsValue>) -> Result<js_sys::Array, JsValue> {
        let o = Options::new("layerNormStats", options, &["axes", "eps"])?;
        let axes = o
            .number("axes")?
            .map(|a| usize_of("axes", a))
            .transpose()?
            .unwrap_or(1);
        let eps = o.number("eps")?.map_or(1e-5, |e| e as f32);
        let (mean, inv_std) = self.inner.layer_norm_stats(axes, eps).map_err(js_error)?;
        Ok([JsTensor::from(mean), JsTensor::from(inv_std)]
            .into_iter()
            .map(JsValue::from)
            .collect())
    }

    /// The `k` largest (with `largest: false`, smallest) elements along `axis` (the last by
    /// default), sorted, ties to the lower index and NaN above every number, with their u32
    /// indices: `[values, indices]` (ONNX's TopK).
    #[wasm_bindgen(unchecked_return_type = "[Tensor, Tensor]")]
    pub fn topk(&self, k: f64, options: Option<JsValue>) -> Result<js_sys::Array, JsValue> {
        let o = Options::new("topk", options, &["axis", "largest"])?;
        let axis = axis_of(self.inner.rank(), o.number("axis")?.unwrap_or(-1.0))?;
        let largest = o.flag("largest")?.unwrap_or(true);
        let (values, indices) = (self.inner)
            .topk(usize_of("k", k)?, axis, largest)
            .map_err(js_error)?;
        Ok([JsTensor::from(values), JsTensor::from(indices)]
            .into_iter()
            .map(JsValue::from)
            .collect())
    }

    /// The index (u32) along `axis` of the largest element, or with `min` the smallest; among
    /// equal ones the first, or with `last` the last (the npm package's `argmax` and `argmin`
    /// call this).
    #[wasm_bindgen(js_name = "__argReduce", skip_typescript)]
    pub fn arg_reduce(&self, axis: f64, min: bool, last: bool) -> Result<JsTensor, JsValue> {
        wrap(self.inner.arg_reduce(
            axis_of(self.inner.rank(), axis)?,
            crate::ops::ArgOptions { min, last },
        ))
    }

    /// RMS normalisation over the last `axes` axes (1 by default; the npm package's
    /// `rmsNorm(options)` calls this: optional `weight`, and `{ eps, activation, axes }`; eps
    /// defaults to 1e-5).
    #[wasm_bindgen(js_name = "__rmsNorm", skip_typescript)]
    pub fn rms_norm_with(
        &self,
        tensors: &TensorArgs,
        options: Option<JsValue>,
    ) -> Result<JsTensor, JsValue> {
        let o = Options::new("rmsNorm", options, &["eps", "activation", "weight", "axes"])?;
        self.norm(
            NormKind::Rms,
            &o,
            norm_params(&o, tensors.get("weight"), None)?,
        )
    }

    /// Layer normalisation over the last `axes` axes (1 by default; the npm package's
    /// `layerNorm(options)` calls this: optional `weight` and `bias` in the shape of those
    /// axes, and `{ eps, activation, axes }`).
    #[wasm_bindgen(js_name = "__layerNorm", skip_typescript)]
    pub fn layer_norm_with(
        &self,
        tensors: &TensorArgs,
        options: Option<JsValue>,
    ) -> Result<JsTensor, JsValue> {
        let o = Options::new(
            "layerNorm",
            options,
            &["eps", "activation", "weight", "bias", "axes"],
        )?;
        self.norm(
            NormKind::Layer,
            &o,
            norm_params(&o, tensors.get("weight"), tensors.get("bias"))?,
        )
    }

    /// A linear layer `act(this @ weight + bias)` in one kernel (the npm package's
    /// `linear(weight, { bias, activation })` calls this).
    #[wasm_bindgen(js_name = "__linear", skip_typescript)]
    pub fn linear_with(
        &self,
        weight: &JsTensor,
        tensors: &TensorArgs,
        options: Option<JsValue>,
    ) -> Result<JsTensor, JsValue> {
        let o = Options::new("linear", options, &["bias", "activation"])?;
        wrap(
            self.inner
                .linear(&weight.inner, tensors.get("bias"), o.activation()?),
        )
    }

    /// Scaled dot-product attention with `this` as the queries `[batch, heads, lq, d]` (the
    /// npm package's `attention(k, v, { causal, scale, mask })` calls this).
    #[wasm_bindgen(js_name = "__attention", skip_typescript)]
    pub fn attention_with(
        &self,
        k: &JsTensor,
        v: &JsTensor,
        tensors: &TensorArgs,
        options: Option<JsValue>,
    ) -> Result<JsTensor, JsValue> {
        let o = Options::new("attention", options, &["causal", "scale", "mask"])?;
        let params = crate::ops::AttentionParams {
            mask: tensors.get("mask"),
            causal: o.flag("causal")?.unwrap_or(false),
            scale: o.number("scale")?.map(|s| s as f32),
        };
        wrap(self.inner.attention(&k.inner, &v.inner, params))
    }

    /// 2-D convolution of `[n, c, h, w]` by `[o, c / groups, kh, kw]` (the npm package's
    /// `conv2d(weight, { stride, padding, dilation, groups, bias, activation })` calls this).
    /// Stride, padding and dilation are a number or `[rows, columns]` (defaults 1, 0, 1).
    #[wasm_bindgen(js_name = "__conv2d", skip_typescript)]
    pub fn conv2d_with(
        &self,
        weight: &JsTensor,
        tensors: &TensorArgs,
        options: Option<JsValue>,
    ) -> Result<JsTensor, JsValue> {
        let o = Options::new(
            "conv2d",
            options,
            &[
                "stride",
                "padding",
                "dilation",
                "groups",
                "bias",
                "activation",
            ],
        )?;
        let params = crate::ops::Conv2dParams {
            bias: tensors.get("bias"),
            stride: o.pair("stride")?.unwrap_or([1, 1]),
            padding: o.pair("padding")?.unwrap_or([0, 0]),
            dilation: o.pair("dilation")?.unwrap_or([1, 1]),
            groups: o.size("groups")?.unwrap_or(1),
            act: o.activation()?,
        };
        wrap(self.inner.conv2d(&weight.inner, params))
    }

    /// 2-D transposed convolution of `[n, c, h, w]` by `[c, o / groups, kh, kw]` (the npm
    /// package's `convTranspose2d(weight, { stride, padding, outputPadding, dilation, groups,
    /// bias, activation })` calls this). Stride, output padding and dilation are a number or
    /// `[rows, columns]` (defaults 1, 0, 1); padding, cropped from the full output, a number,
    /// `[rows, columns]` or `[top, left, bottom, right]` (default 0).
    #[wasm_bindgen(js_name = "__convTranspose2d", skip_typescript)]
    pub fn conv_transpose2d_with(
        &self,
        weight: &JsTensor,
        tensors: &TensorArgs,
        options: Option<JsValue>,
    ) -> Result<JsTensor, JsValue> {
        let keys = [
            "stride",
            "padding",
            "outputPadding",
            "dilation",
            "groups",
            "bias",
            "activation",
        ];
        let o = Options::new("convTranspose2d", options, &keys)?;
        let params = crate::ops::ConvTranspose2dParams {
            bias: tensors.get("bias"),
            stride: o.pair("stride")?.unwrap_or([1, 1]),
            padding: o.sides("padding")?.unwrap_or([0; 4]),
            output_padding: o.pair("outputPadding")?.unwrap_or([0, 0]),
            dilation: o.pair("dilation")?.unwrap_or([1, 1]),
            groups: o.size("groups")?.unwrap_or(1),
            act: o.activation()?,
        };
        wrap(self.inner.conv_transpose2d(&weight.inner, params))
    }

    /// Max pooling: `size` for `size x size` windows with stride = size, or options
    /// `{ kernel, stride, padding, dilation, ceilMode }` (kernel, stride and dilation a number
    /// or `[rows, columns]`; stride = kernel and dilation 1 by default; padding a number,
    /// `[rows, columns]` or `[top, left, bottom, right]`, each at most half the window), ONNX's
    /// MaxPool.
    #[wasm_bindgen(js_name = maxPool2d)]
    pub fn max_pool2d(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number | PoolOptions")] options: JsValue,
    ) -> Result<JsTensor, JsValue> {
        self.pool(crate::ops::PoolKind::Max, "maxPool2d", options)
    }

    /// Average pooling, as `maxPool2d`; `{ countIncludePad }` divides by the window within
    /// the padded input rather than by the taps within the input (the default, as ONNX's
    /// AveragePool).
    #[wasm_bindgen(js_name = avgPool2d)]
    pub fn avg_pool2d(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number | PoolOptions")] options: JsValue,
    ) -> Result<JsTensor, JsValue> {
        self.pool(crate::ops::PoolKind::Avg, "avgPool2d", options)
    }

    /// Entries along `axis` picked by `indices` (i32, u32 or i64, any rank; negative ones
    /// count from the end). `{ mode }` for indices outside the axis: `'error'` (the default:
    /// the next read rejects with `INVALID`), `'clip'` or `'fill'` (0).
    pub fn gather(
        &self,
        axis: f64,
        indices: &JsTensor,
        options: Option<JsValue>,
    ) -> Result<JsTensor, JsValue> {
        let o = Options::new("gather", options, &["mode"])?;
        let mode = match o.text("mode", "'error', 'clip' or 'fill'")? {
            None => IndexMode::Error,
            Some(name) => IndexMode::from_name(&name).ok_or_else(|| {
                invalid(format!(
                    "gather: option `mode` is {name:?}: expected 'error', 'clip' or 'fill'"
                ))
            })?,
        };
        wrap(
            self.inner
                .gather_with(axis_of(self.inner.rank(), axis)?, &indices.inner, mode),
        )
    }

    /// A copy with `updates` met into it at `indices` along `axis` (ONNX's ScatterElements:
    /// indices and updates of one shape; an index outside the axis skips its update).
    /// `{ reduction }`: 'none' (the default: the last of duplicates wins), 'add', 'mul',
    /// 'max' or 'min'.
    #[wasm_bindgen(js_name = scatterElements)]
    pub fn scatter_elements(
        &self,
        axis: f64,
        indices: &JsTensor,
        updates: &JsTensor,
        options: Option<JsValue>,
    ) -> Result<JsTensor, JsValue> {
        let reduction = scatter_reduction("scatterElements", options)?;
        let axis = axis_of(self.inner.rank(), axis)?;
        wrap(
            self.inner
                .scatter_elements(&indices.inner, &updates.inner, axis, reduction),
        )
    }

    /// A copy with the update slices met into it at the index tuples of `indices` (ONNX's
    /// ScatterND; a tuple with an index outside its axis skips its update). `{ reduction }`
    /// as `scatterElements`.
    #[wasm_bindgen(js_name = scatterND)]
    pub fn scatter_nd(
        &self,
        indices: &JsTensor,
        updates: &JsTensor,
        options: Option<JsValue>,
    ) -> Result<JsTensor, JsValue> {
        let reduction = scatter_reduction("scatterND", options)?;
        wrap(
            self.inner
                .scatter_nd(&indices.inner, &updates.inner, reduction),
        )
    }

    /// `this ? a : b` elementwise (this is the condition, bool or non-zero), broadcasting.
    pub fn select(&self, a: &JsTensor, b: &JsTensor) -> Result<JsTensor, JsValue> {
        wrap(self.inner.select(&a.inner, &b.inner))
    }

    /// `not this` (true where zero): a bool tensor.
    #[wasm_bindgen(js_name = logicalNot)]
    pub fn logical_not(&self) -> Result<JsTensor, JsValue> {
        wrap(self.inner.logical_not())
    }

    /// Where a float tensor is NaN: a bool tensor.
    #[wasm_bindgen(js_name = isNaN)]
    pub fn isnan(&self) -> Result<JsTensor, JsValue> {
        wrap(self.inner.isnan())
    }

    /// Where a float tensor is infinite (`+inf` unless `positive` is false, `-inf` unless
    /// `negative` is false): a bool tensor.
    #[wasm_bindgen(js_name = isInf)]
    pub fn isinf(
        &self,
        positive: Option<bool>,
        negative: Option<bool>,
    ) -> Result<JsTensor, JsValue> {
        let (p, n) = (positive.unwrap_or(true), negative.unwrap_or(true));
        wrap(self.inner.isinf(p, n))
    }

    /// Matrix product (batched, broadcasting).
    pub fn matmul(&self, other: &JsTensor) -> Result<JsTensor, JsValue> {
        wrap(self.inner.matmul(&other.inner))
    }

    /// `max(x, 0)`.
    pub fn relu(&self) -> Result<JsTensor, JsValue> {
        wrap(self.inner.relu())
    }

    /// Softmax over `axis` (the last when undefined; the npm package also takes `{ axis }`).
    pub fn softmax(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number | { axis?: number }")] axis: Option<f64>,
    ) -> Result<JsTensor, JsValue> {
        match axis {
            Some(a) => wrap(self.inner.softmax_axis(axis_of(self.inner.rank(), a)?)),
            None => wrap(self.inner.softmax()),
        }
    }

    /// Log-softmax over `axis` (the last when undefined; the npm package also takes
    /// `{ axis }`), fused: small probabilities keep their logs.
    #[wasm_bindgen(js_name = logSoftmax)]
    pub fn log_softmax(
        &self,
        #[wasm_bindgen(unchecked_param_type = "number | { axis?: number }")] axis: Option<f64>,
    ) -> Result<JsTensor, JsValue> {
        match axis {
            Some(a) => wrap(self.inner.log_softmax_axis(axis_of(self.inner.rank(), a)?)),
            None => wrap(self.inner.log_softmax()),
        }
    }

    /// A reduction by name (`sum`, `mean`, `max`, `min`, `argmax`, `prod`) over `axis`, or over
    /// everything when `axis` is undefined (the npm package's `reduce(op, options)` calls
    /// this).
    #[wasm_bindgen(js_name = "__reduce", skip_typescript)]
    pub fn reduce(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ReduceName")] op: &str,
        axis: Option<f64>,
    ) -> Result<JsTensor, JsValue> {
        let op = reduce_op(op)?;
        wrap(
            self.inner
                .reduce(op, axis.map(|a| axis_of(self.inner.rank(), a)).transpose()?),
        )
    }

    /// A reduction by name over the axes `axes` together (every axis when empty), keeping them
    /// as extents of 1 when `keepDims`; with `emptyIdentity` the max and min of nothing are
    /// −inf and +inf (ONNX) instead of an error (numpy). (The positional form of
    /// `reduce(op, { axis, keepDims, emptyIdentity })`, kept for older programs.)
    #[wasm_bindgen(js_name = reduceAxes)]
    pub fn reduce_axes(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ReduceName")] op: &str,
        axes: Vec<f64>,
        keep_dims: bool,
        empty_identity: Option<bool>,
    ) -> Result<JsTensor, JsValue> {
        let op = reduce_op(op)?;
        let axes = axes
            .into_iter()
            .map(|a| axis_of(self.inner.rank(), a))
            .collect::<Result<Vec<_>, _>>()?;
        if empty_identity == Some(true) {
            return wrap(crate::ops::reduce::reduce_axes_with_identity(
                &self.inner.device().queue(),
                op,
                &self.inner,
                &axes,
                keep_dims,
            ));
        }
        wrap(self.inner.reduce_axes(op, &axes, keep_dims))
    }

    /// This tensor converted to `dtype` (`"f32"`, `"i32"`, `"u32"`, `"f16"`, `"bf16"`).
    pub fn cast(
        &self,
        #[wasm_bindgen(unchecked_param_type = "DTypeName")] dtype: &str,
    ) -> Result<JsTensor, JsValue> {
        wrap(self.inner.cast(dtype_named(dtype)?))
    }
}

impl JsTensor {
    /// The library tensor.
    pub(crate) fn inner(&self) -> &Tensor {
        &self.inner
    }

    /// `op(this, other)`, with the `{ activation }` of `options` fused into the kernel.
    fn binary_op(
        &self,
        op: BinaryOp,
        other: &JsTensor,
        options: Option<JsValue>,
    ) -> Result<JsTensor, JsValue> {
        let o = Options::new(op.name(), options, &["activation"])?;
        wrap(match o.activation()? {
            Some(act) => self.inner.binary_act(op, act, &other.inner),
            None => self.inner.binary(op, &other.inner),
        })
    }
}

/// The reduction named `name`, or an error listing the names.
fn reduce_op(name: &str) -> Result<ReduceOp, JsValue> {
    ReduceOp::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = ReduceOp::ALL.iter().map(|op| op.name()).collect();
        invalid(format!(
            "unknown reduction `{name}`: expected one of {}",
            names.join(", ")
        ))
    })
}

/// The `{ reduction }` option of the scatter methods (`method`), 'none' by default.
fn scatter_reduction(
    method: &'static str,
    options: Option<JsValue>,
) -> Result<crate::ops::ScatterReduction, JsValue> {
    let o = Options::new(method, options, &["reduction"])?;
    let expected = "'none', 'add', 'mul', 'max' or 'min'";
    match o.text("reduction", expected)? {
        None => Ok(crate::ops::ScatterReduction::None),
        Some(name) => crate::ops::ScatterReduction::from_name(&name).ok_or_else(|| {
            invalid(format!(
                "{method}: option `reduction` is {name:?}: expected {expected}"
            ))
        }),
    }
}
