//! The JS `Tensor`: shape, dtype, async reads back to typed arrays, and the op catalogue.

use wasm_bindgen::prelude::*;

use super::error::{invalid, js_error, usize_of};
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

/// The unary op named `name`, if one is given.
fn activation(name: Option<String>) -> Result<Option<UnaryOp>, JsValue> {
    name.map(|a| UnaryOp::from_name(&a).ok_or_else(|| invalid(format!("unknown activation `{a}`: expected a unary op name such as relu or gelu")))).transpose()
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
    pub fn reshape(&self, shape: Vec<f64>) -> Result<JsTensor, JsValue> {
        wrap(self.inner.reshape(&super::error::usizes("shape", &shape)?))
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

    /// `this - other`, broadcasting.
    pub fn sub(&self, other: &JsTensor) -> Result<JsTensor, JsValue> {
        wrap(self.inner.sub(&other.inner))
    }

    /// `this / other`, broadcasting.
    pub fn div(&self, other: &JsTensor) -> Result<JsTensor, JsValue> {
        wrap(self.inner.div(&other.inner))
    }

    /// A view with the dimensions reordered (`dims` is a permutation).
    pub fn permute(&self, dims: Vec<f64>) -> Result<JsTensor, JsValue> {
        wrap(self.inner.permute(&super::error::usizes("dims", &dims)?))
    }

    /// Cumulative sum along `axis`.
    pub fn cumsum(&self, axis: f64) -> Result<JsTensor, JsValue> {
        wrap(self.inner.cumsum(usize_of("axis", axis)?))
    }

    /// RMS normalisation over the last axis (`eps` defaults to 1e-5).
    #[wasm_bindgen(js_name = rmsNorm)]
    pub fn rms_norm(&self, eps: Option<f32>) -> Result<JsTensor, JsValue> {
        wrap(self.inner.rms_norm(NormParams { eps: eps.unwrap_or(1e-5), ..NormParams::default() }))
    }

    /// A linear layer `act(this @ weight)`; `act` names a unary op (e.g. `"relu"`).
    pub fn linear(&self, weight: &JsTensor, act: Option<String>) -> Result<JsTensor, JsValue> {
        wrap(self.inner.linear(&weight.inner, None, activation(act)?))
    }

    /// A linear layer `act(this @ weight + bias)` in one kernel.
    #[wasm_bindgen(js_name = linearBias)]
    pub fn linear_bias(&self, weight: &JsTensor, bias: &JsTensor, act: Option<String>) -> Result<JsTensor, JsValue> {
        wrap(self.inner.linear(&weight.inner, Some(&bias.inner), activation(act)?))
    }

    /// Scaled dot-product attention with `this` as the queries `[batch, heads, lq, d]`.
    pub fn attention(&self, k: &JsTensor, v: &JsTensor, causal: Option<bool>) -> Result<JsTensor, JsValue> {
        wrap(self.inner.attention(&k.inner, &v.inner, crate::ops::AttentionParams { causal: causal.unwrap_or(false), ..Default::default() }))
    }

    /// 2-D convolution of `[n, c, h, w]` by `[o, c / groups, kh, kw]`, with `padding` on
    /// each side and `stride` (both default 0 and 1).
    pub fn conv2d(&self, weight: &JsTensor, padding: Option<f64>, stride: Option<f64>) -> Result<JsTensor, JsValue> {
        let (p, s) = (usize_of("padding", padding.unwrap_or(0.0))?, usize_of("stride", stride.unwrap_or(1.0))?);
        wrap(self.inner.conv2d(&weight.inner, crate::ops::Conv2dParams { padding: [p, p], stride: [s, s], ..Default::default() }))
    }

    /// Max pooling over `size x size` windows (stride = size).
    #[wasm_bindgen(js_name = maxPool2d)]
    pub fn max_pool2d(&self, size: f64) -> Result<JsTensor, JsValue> {
        let k = usize_of("size", size)?;
        wrap(self.inner.pool2d(crate::ops::PoolKind::Max, crate::ops::Pool2dParams { kernel: [k, k], stride: None, padding: [0, 0] }))
    }

    /// Average pooling over `size x size` windows (stride = size).
    #[wasm_bindgen(js_name = avgPool2d)]
    pub fn avg_pool2d(&self, size: f64) -> Result<JsTensor, JsValue> {
        let k = usize_of("size", size)?;
        wrap(self.inner.pool2d(crate::ops::PoolKind::Avg, crate::ops::Pool2dParams { kernel: [k, k], stride: None, padding: [0, 0] }))
    }

    /// `this` and `other` joined along `axis`.
    pub fn concat(&self, other: &JsTensor, axis: f64) -> Result<JsTensor, JsValue> {
        wrap(Tensor::concat(&[&self.inner, &other.inner], usize_of("axis", axis)?))
    }

    /// Entries along `axis` picked by `indices` (an i32 or u32 tensor).
    pub fn gather(&self, axis: f64, indices: &JsTensor) -> Result<JsTensor, JsValue> {
        wrap(self.inner.gather(usize_of("axis", axis)?, &indices.inner))
    }

    /// `this ? a : b` elementwise (this is the condition), broadcasting.
    pub fn select(&self, a: &JsTensor, b: &JsTensor) -> Result<JsTensor, JsValue> {
        wrap(self.inner.select(&a.inner, &b.inner))
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
    pub fn reduce(&self, op: &str, axis: Option<f64>) -> Result<JsTensor, JsValue> {
        let op = ReduceOp::from_name(op).ok_or_else(|| {
            invalid(format!(
                "unknown reduction `{op}`: expected sum, mean, max, min or argmax"
            ))
        })?;
        wrap(self.inner.reduce(op, axis.map(|a| usize_of("axis", a)).transpose()?))
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
