//! The JS `Tensor`: shape, dtype, async reads back to typed arrays, and the op catalogue.

use wasm_bindgen::prelude::*;

use super::error::{invalid, js_error};
use crate::ops::{BinaryOp, NormParams, ReduceOp, UnaryOp};
use crate::{DType, Tensor};

/// A tensor on a device. Call `free()` when done, or leave it to the garbage collector.
#[wasm_bindgen(js_name = Tensor)]
pub struct JsTensor {
    inner: Tensor,
}

impl From<Tensor> for JsTensor {
    fn from(inner: Tensor) -> Self {
        JsTensor { inner }
    }
}

fn wrap(r: crate::Result<Tensor>) -> Result<JsTensor, JsValue> {
    r.map(JsTensor::from).map_err(js_error)
}

#[wasm_bindgen(js_class = Tensor)]
impl JsTensor {
    /// Extent of each dimension.
    #[wasm_bindgen(getter)]
    pub fn shape(&self) -> Vec<u32> {
        self.inner.shape().iter().map(|&n| n as u32).collect()
    }

    /// Element type: `"f32"`, `"i32"`, `"u32"`, `"f16"` or `"bf16"`.
    #[wasm_bindgen(getter)]
    pub fn dtype(&self) -> String {
        self.inner.dtype().to_string()
    }

    /// The elements, row-major, as a `Float32Array` (f32, and f16 / bf16 widened),
    /// `Int32Array` or `Uint32Array`. Never blocks: resolves when the device is done.
    pub async fn read(&self) -> Result<JsValue, JsValue> {
        let t = &self.inner;
        Ok(match t.dtype() {
            DType::I32 => {
                js_sys::Int32Array::from(&t.to_vec::<i32>().await.map_err(js_error)?[..]).into()
            }
            DType::U32 => {
                js_sys::Uint32Array::from(&t.to_vec::<u32>().await.map_err(js_error)?[..]).into()
            }
            DType::F32 => {
                js_sys::Float32Array::from(&t.to_vec::<f32>().await.map_err(js_error)?[..]).into()
            }
            DType::F16 | DType::BF16 => {
                let wide = t.cast(DType::F32).map_err(js_error)?;
                js_sys::Float32Array::from(&wide.to_vec::<f32>().await.map_err(js_error)?[..])
                    .into()
            }
        })
    }

    /// A view with another shape of the same number of elements.
    pub fn reshape(&self, shape: Vec<u32>) -> Result<JsTensor, JsValue> {
        wrap(
            self.inner
                .reshape(&shape.into_iter().map(|n| n as usize).collect::<Vec<_>>()),
        )
    }

    /// The last two dimensions swapped (a view).
    pub fn transpose(&self) -> Result<JsTensor, JsValue> {
        wrap(self.inner.t())
    }

    /// A unary op or activation by name: `neg`, `abs`, `exp`, `log`, `sqrt`, `rsqrt`, `sin`,
    /// `cos`, `tanh`, `sigmoid`, `relu`, `gelu`, `gelu_tanh`, `silu`.
    pub fn unary(&self, op: &str) -> Result<JsTensor, JsValue> {
        let op = UnaryOp::from_name(op).ok_or_else(|| invalid(format!("unknown unary op `{op}`: expected neg, abs, exp, log, sqrt, rsqrt, sin, cos, tanh, sigmoid, relu, gelu, gelu_tanh or silu")))?;
        wrap(self.inner.unary(op))
    }

    /// A binary op by name (`add`, `sub`, `mul`, `div`, `minimum`, `maximum`, `pow`), broadcasting.
    pub fn binary(&self, op: &str, other: &JsTensor) -> Result<JsTensor, JsValue> {
        let op = BinaryOp::from_name(op).ok_or_else(|| {
            invalid(format!(
                "unknown binary op `{op}`: expected add, sub, mul, div, minimum, maximum or pow"
            ))
        })?;
        wrap(self.inner.binary(op, &other.inner))
    }

    /// `this + other`, broadcasting.
    pub fn add(&self, other: &JsTensor) -> Result<JsTensor, JsValue> {
        wrap(self.inner.add(&other.inner))
    }

    /// `this * other`, broadcasting.
    pub fn mul(&self, other: &JsTensor) -> Result<JsTensor, JsValue> {
        wrap(self.inner.mul(&other.inner))
    }

    /// Matrix product (batched, broadcasting).
    pub fn matmul(&self, other: &JsTensor) -> Result<JsTensor, JsValue> {
        wrap(self.inner.matmul(&other.inner))
    }

    /// `max(x, 0)`.
    pub fn relu(&self) -> Result<JsTensor, JsValue> {
        wrap(self.inner.relu())
    }

    /// Softmax over the last axis.
    pub fn softmax(&self) -> Result<JsTensor, JsValue> {
        wrap(self.inner.softmax())
    }

    /// A reduction by name (`sum`, `mean`, `max`, `min`, `argmax`) over `axis`, or over
    /// everything when `axis` is undefined.
    pub fn reduce(&self, op: &str, axis: Option<u32>) -> Result<JsTensor, JsValue> {
        let op = ReduceOp::from_name(op).ok_or_else(|| {
            invalid(format!(
                "unknown reduction `{op}`: expected sum, mean, max, min or argmax"
            ))
        })?;
        wrap(self.inner.reduce(op, axis.map(|a| a as usize)))
    }

    /// Layer normalisation over the last axis (`eps` defaults to 1e-5).
    #[wasm_bindgen(js_name = layerNorm)]
    pub fn layer_norm(&self, eps: Option<f32>) -> Result<JsTensor, JsValue> {
        wrap(self.inner.layer_norm(NormParams {
            eps: eps.unwrap_or(1e-5),
            ..NormParams::default()
        }))
    }

    /// This tensor converted to `dtype` (`"f32"`, `"i32"`, `"u32"`, `"f16"`, `"bf16"`).
    pub fn cast(&self, dtype: &str) -> Result<JsTensor, JsValue> {
        let to = [DType::F32, DType::I32, DType::U32, DType::F16, DType::BF16]
            .into_iter()
            .find(|d| d.name() == dtype)
            .ok_or_else(|| {
                invalid(format!(
                    "unknown dtype `{dtype}`: expected f32, i32, u32, f16 or bf16"
                ))
            })?;
        wrap(self.inner.cast(to))
    }
}
