//! Tensors by rule from JS (`device.ones`, `full`, `arange`, `randomUniform`,
//! `randomNormal`), plain JS arrays as tensor data, n-ary concat, and binary ops with a
//! number operand (the npm package's `x.mul(2)` calls `binaryScalar`).

use wasm_bindgen::prelude::*;

use super::device::JsDevice;
use super::error::{axis_of, invalid, js_error, usizes};
use super::options::{Options, TensorArgs};
use super::tensor::{dtype_named, JsTensor};
use crate::ops::constructors::from_f64;
use crate::ops::BinaryOp;
use crate::{DType, Device, Tensor};

fn wrap(r: crate::Result<Tensor>) -> Result<JsTensor, JsValue> {
    r.map(JsTensor::from).map_err(js_error)
}

/// The dtype named `name`, f32 when undefined.
fn dtype_or_f32(name: Option<String>) -> Result<DType, JsValue> {
    name.as_deref()
        .map(dtype_named)
        .transpose()
        .map(|d| d.unwrap_or(DType::F32))
}

/// The `seed` option: a whole number from 0 to 2^53, or when absent one drawn from
/// `Math.random()`.
fn seed_of(o: &Options, method: &str) -> Result<u64, JsValue> {
    match o.number("seed")? {
        Some(s) if s.fract() == 0.0 && (0.0..=9_007_199_254_740_992.0).contains(&s) => Ok(s as u64),
        Some(s) => Err(invalid(format!(
            "{method}: option `seed` is {s}: expected a whole number from 0 to 2^53"
        ))),
        None => Ok((js_sys::Math::random() * 9_007_199_254_740_992.0) as u64),
    }
}

/// The numbers of a plain JS array, nested arrays flattened row-major, and the shape the
/// nesting gives (ragged nesting or a non-number is `INVALID`).
fn flatten(data: &JsValue) -> Result<(Vec<f64>, Vec<usize>), JsValue> {
    let mut shape = Vec::new();
    let mut level = data.clone();
    while js_sys::Array::is_array(&level) {
        let items = js_sys::Array::from(&level);
        shape.push(items.length() as usize);
        level = items.get(0);
    }
    let mut values = Vec::new();
    collect(data, &shape, &mut values)?;
    Ok((values, shape))
}

/// Append the numbers of `data`, whose extents must be `shape`, to `out`.
fn collect(data: &JsValue, shape: &[usize], out: &mut Vec<f64>) -> Result<(), JsValue> {
    let Some((&len, inner)) = shape.split_first() else {
        let v = data.as_f64().ok_or_else(|| {
            invalid(format!(
                "tensor: the data array holds {data:?}: expected numbers (or nested arrays \
                 of numbers; i64 values as a BigInt64Array)"
            ))
        })?;
        out.push(v);
        return Ok(());
    };
    let fits = js_sys::Array::is_array(data) && js_sys::Array::from(data).length() as usize == len;
    if !fits {
        return Err(invalid(format!(
            "tensor: the nested data arrays are ragged ({data:?} where an array of {len} \
             belongs): expected every array of one level to have the same length"
        )));
    }
    for item in js_sys::Array::from(data).iter() {
        collect(&item, inner, out)?;
    }
    Ok(())
}

/// A tensor on `device` from a plain (possibly nested) JS array of numbers, of `shape` (by
/// default the nesting's) and `dtype` (f32 by default; whole numbers for integer dtypes).
pub(super) fn from_array(
    device: &Device,
    data: &JsValue,
    shape: Option<&[usize]>,
    dtype: Option<DType>,
) -> Result<Tensor, JsValue> {
    let (values, nested) = flatten(data)?;
    let shape = shape.unwrap_or(&nested);
    from_f64(
        device,
        "tensor",
        &values,
        shape,
        dtype.unwrap_or(DType::F32),
    )
    .map_err(js_error)
}

#[wasm_bindgen(js_class = Device)]
impl JsDevice {
    /// A tensor of `shape` and `dtype` (`'f32'` by default) filled with ones.
    pub fn ones(&self, shape: Vec<f64>, dtype: Option<String>) -> Result<JsTensor, JsValue> {
        let shape = usizes("shape", &shape)?;
        wrap(Tensor::ones(&self.inner, &shape, dtype_or_f32(dtype)?))
    }

    /// A tensor of `shape` and `dtype` (`'f32'` by default) with every element `value` (a
    /// whole number in range for integer dtypes, else `INVALID` / `OUT_OF_RANGE`).
    pub fn full(
        &self,
        shape: Vec<f64>,
        value: f64,
        dtype: Option<String>,
    ) -> Result<JsTensor, JsValue> {
        let shape = usizes("shape", &shape)?;
        wrap(Tensor::full(
            &self.inner,
            &shape,
            value,
            dtype_or_f32(dtype)?,
        ))
    }

    /// `start, start + step, ...` below `stop` (numpy's `arange`: `ceil((stop - start) /
    /// step)` elements); with one number, `0, 1, ...` below it. `step` is 1 by default (0 is
    /// `INVALID`), `dtype` `'f32'`.
    pub fn arange(
        &self,
        start: f64,
        stop: Option<f64>,
        step: Option<f64>,
        dtype: Option<String>,
    ) -> Result<JsTensor, JsValue> {
        let (start, stop) = match stop {
            Some(stop) => (start, stop),
            None => (0.0, start),
        };
        let dtype = dtype_or_f32(dtype)?;
        wrap(Tensor::arange(
            &self.inner,
            start,
            stop,
            step.unwrap_or(1.0),
            dtype,
        ))
    }

    /// Seeded values uniform in `[low, high)` (`{ low: 0, high: 1, seed, dtype: 'f32' }`;
    /// integer dtypes round down). The same `seed` gives the same values on every backend
    /// (SplitMix64, computed on the host); without one, a seed comes from `Math.random()`.
    #[wasm_bindgen(js_name = randomUniform)]
    pub fn random_uniform(
        &self,
        shape: Vec<f64>,
        options: Option<JsValue>,
    ) -> Result<JsTensor, JsValue> {
        let o = Options::new("randomUniform", options, &["low", "high", "seed", "dtype"])?;
        let bounds = [
            o.number("low")?.unwrap_or(0.0),
            o.number("high")?.unwrap_or(1.0),
        ];
        let dtype = dtype_or_f32(o.text("dtype", "a dtype name such as 'f32'")?)?;
        let shape = usizes("shape", &shape)?;
        let seed = seed_of(&o, "randomUniform")?;
        wrap(Tensor::random_uniform(
            &self.inner,
            &shape,
            bounds,
            seed,
            dtype,
        ))
    }

    /// Seeded normal values (`{ mean: 0, std: 1, seed, dtype: 'f32' }`, a float dtype):
    /// SplitMix64 and Box–Muller on the host, the same for a seed on every backend; without
    /// a seed, one comes from `Math.random()`.
    #[wasm_bindgen(js_name = randomNormal)]
    pub fn random_normal(
        &self,
        shape: Vec<f64>,
        options: Option<JsValue>,
    ) -> Result<JsTensor, JsValue> {
        let o = Options::new("randomNormal", options, &["mean", "std", "seed", "dtype"])?;
        let moments = [
            o.number("mean")?.unwrap_or(0.0),
            o.number("std")?.unwrap_or(1.0),
        ];
        let dtype = dtype_or_f32(o.text("dtype", "a dtype name such as 'f32'")?)?;
        let shape = usizes("shape", &shape)?;
        let seed = seed_of(&o, "randomNormal")?;
        wrap(Tensor::random_normal(
            &self.inner,
            &shape,
            moments,
            seed,
            dtype,
        ))
    }
}

#[wasm_bindgen(js_class = Tensor)]
impl JsTensor {
    /// `op(this, value)` with the number `value` in this tensor's dtype (the npm package's
    /// binary methods call this for a number operand); `{ activation }` as for tensors.
    #[wasm_bindgen(js_name = binaryScalar)]
    pub fn binary_scalar(
        &self,
        #[wasm_bindgen(unchecked_param_type = "BinaryName")] op: &str,
        value: f64,
        options: Option<JsValue>,
    ) -> Result<JsTensor, JsValue> {
        let op = BinaryOp::from_name(op).ok_or_else(|| {
            invalid(format!(
                "unknown binary op `{op}`: expected add, sub, mul, div, minimum, maximum or pow"
            ))
        })?;
        let x = self.inner();
        let what = format!("{} of a tensor and a number", op.name());
        let s = from_f64(x.device(), &what, &[value], &[], x.dtype()).map_err(js_error)?;
        let o = Options::new(op.name(), options, &["activation"])?;
        wrap(match o.activation()? {
            Some(act) => x.binary_act(op, act, &s),
            None => x.binary(op, &s),
        })
    }

    /// This tensor followed by the tensors of `others` (in the order they were set), joined
    /// along `axis` (negative counts from the end): the npm package's `concat` calls this.
    #[wasm_bindgen(js_name = concatWith)]
    pub fn concat_with(&self, others: &TensorArgs, axis: f64) -> Result<JsTensor, JsValue> {
        let x = self.inner();
        let mut all = vec![x];
        all.extend(others.all());
        wrap(Tensor::concat(&all, axis_of(x.rank(), axis)?))
    }
}
