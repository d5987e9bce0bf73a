//! Options objects of the JS API (`x.conv2d(w, { stride: 2, activation: 'relu' })`): unknown
//! keys and values of the wrong kind are `INVALID` errors that name the key and what it takes.

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::error::{invalid, js_repr, usize_of};
use super::tensor::JsTensor;
use crate::ops::UnaryOp;
use crate::Tensor;

/// The tensors among an op's options (`bias`, `weight`), handed to the wasm by the npm
/// package's wrappers: wasm-bindgen cannot read a tensor out of a plain JS object.
#[wasm_bindgen(js_name = TensorArgs)]
#[derive(Default)]
pub struct TensorArgs {
    named: Vec<(String, Tensor)>,
}

#[wasm_bindgen(js_class = TensorArgs)]
impl TensorArgs {
    /// An empty list.
    #[wasm_bindgen(constructor)]
    pub fn new() -> TensorArgs {
        TensorArgs::default()
    }

    /// Pass `tensor` as the option `name` (the tensor stays usable).
    pub fn set(&mut self, name: &str, tensor: &JsTensor) {
        self.named.push((name.to_string(), tensor.inner().clone()));
    }
}

impl TensorArgs {
    /// The tensor passed as `name`, if any.
    pub(crate) fn get(&self, name: &str) -> Option<&Tensor> {
        self.named.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }

    /// Every tensor passed with its name, in the order they were set.
    pub(crate) fn named(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.named.iter().map(|(n, t)| (n.as_str(), t))
    }

    /// Every tensor passed, in the order they were set.
    pub(crate) fn all(&self) -> impl Iterator<Item = &Tensor> {
        self.named.iter().map(|(_, t)| t)
    }
}

/// The options object passed to `method`, checked to hold only keys from `allowed`.
pub(crate) struct Options {
    method: &'static str,
    object: Option<js_sys::Object>,
}

impl Options {
    /// `value` (an object, or undefined / null for no options) as `method`'s options.
    pub(crate) fn new(
        method: &'static str,
        value: Option<JsValue>,
        allowed: &[&str],
    ) -> Result<Options, JsValue> {
        let Some(value) = value.filter(|v| !v.is_undefined() && !v.is_null()) else {
            return Ok(Options {
                method,
                object: None,
            });
        };
        let object = value.dyn_into::<js_sys::Object>().map_err(|v| {
            invalid(format!(
                "{method}: the options are {}: expected an object with keys from {allowed:?}",
                js_repr(&v)
            ))
        })?;
        for key in js_sys::Object::keys(&object).iter() {
            let key = key.as_string().unwrap_or_default();
            if !allowed.contains(&key.as_str()) {
                return Err(invalid(format!(
                    "{method}: unknown option `{key}`: expected one of {allowed:?}"
                )));
            }
        }
        Ok(Options {
            method,
            object: Some(object),
        })
    }

    /// The value under `key`, unless absent or undefined.
    fn get(&self, key: &str) -> Option<JsValue> {
        let object = self.object.as_ref()?;
        js_sys::Reflect::get(object, &key.into())
            .ok()
            .filter(|v| !v.is_undefined())
    }

    /// An error saying that `key` holds `value` where `expected` belongs.
    fn wrong(&self, key: &str, value: &JsValue, expected: &str) -> JsValue {
        invalid(format!(
            "{}: option `{key}` is {}: expected {expected}",
            self.method,
            js_repr(value)
        ))
    }

    /// A number option.
    pub(crate) fn number(&self, key: &str) -> Result<Option<f64>, JsValue> {
        self.get(key)
            .map(|v| v.as_f64().ok_or_else(|| self.wrong(key, &v, "a number")))
            .transpose()
    }

    /// A size per spatial axis (rows, columns): one number for both, or `[rows, columns]`.
    pub(crate) fn pair(&self, key: &str) -> Result<Option<[usize; 2]>, JsValue> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let what = format!("{}: option `{key}`", self.method);
        if let Some(n) = v.as_f64() {
            let n = usize_of(&what, n)?;
            return Ok(Some([n, n]));
        }
        if js_sys::Array::is_array(&v) {
            let items = js_sys::Array::from(&v);
            if let (2, Some(a), Some(b)) =
                (items.length(), items.get(0).as_f64(), items.get(1).as_f64())
            {
                return Ok(Some([usize_of(&what, a)?, usize_of(&what, b)?]));
            }
        }
        Err(self.wrong(key, &v, "a whole number or [rows, columns]"))
    }

    /// Padding `[top, left, bottom, right]`: one number for every side, `[rows, columns]`
    /// for both sides of each axis, or the four sides.
    pub(crate) fn sides(&self, key: &str) -> Result<Option<[usize; 4]>, JsValue> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let what = format!("{}: option `{key}`", self.method);
        if let Some(n) = v.as_f64() {
            return Ok(Some([usize_of(&what, n)?; 4]));
        }
        let items = js_sys::Array::is_array(&v).then(|| js_sys::Array::from(&v));
        let numbers: Option<Vec<f64>> = items.and_then(|a| a.iter().map(|x| x.as_f64()).collect());
        match numbers.as_deref() {
            Some(&[y, x]) => {
                let (y, x) = (usize_of(&what, y)?, usize_of(&what, x)?);
                Ok(Some([y, x, y, x]))
            }
            Some(&[t, l, b, r]) => Ok(Some([
                usize_of(&what, t)?,
                usize_of(&what, l)?,
                usize_of(&what, b)?,
                usize_of(&what, r)?,
            ])),
            _ => Err(self.wrong(
                key,
                &v,
                "a whole number, [rows, columns] or [top, left, bottom, right]",
            )),
        }
    }

    /// A whole-number option.
    pub(crate) fn size(&self, key: &str) -> Result<Option<usize>, JsValue> {
        self.number(key)?
            .map(|n| usize_of(&format!("{}: option `{key}`", self.method), n))
            .transpose()
    }

    /// A string option; `expected` says which strings it takes.
    pub(crate) fn text(&self, key: &str, expected: &str) -> Result<Option<String>, JsValue> {
        self.get(key)
            .map(|v| v.as_string().ok_or_else(|| self.wrong(key, &v, expected)))
            .transpose()
    }

    /// A boolean option.
    pub(crate) fn flag(&self, key: &str) -> Result<Option<bool>, JsValue> {
        self.get(key)
            .map(|v| {
                v.as_bool()
                    .ok_or_else(|| self.wrong(key, &v, "true or false"))
            })
            .transpose()
    }

    /// A record of numbers (`{ wg: 128, scale: 0.5 }`), as (key, value) pairs; booleans are
    /// 1 and 0, as WebGPU's pipeline constants take them.
    pub(crate) fn numbers(&self, key: &str) -> Result<Option<Vec<(String, f64)>>, JsValue> {
        let Some(v) = self.get(key) else {
            return Ok(None);
        };
        let expected = "an object of numbers by name, such as { wg: 128 }";
        let record = v
            .dyn_ref::<js_sys::Object>()
            .filter(|_| !js_sys::Array::is_array(&v))
            .ok_or_else(|| self.wrong(key, &v, expected))?;
        let mut out = Vec::new();
        for entry in js_sys::Object::entries(record).iter() {
            let pair = js_sys::Array::from(&entry);
            let name = pair.get(0).as_string().unwrap_or_default();
            let value = pair.get(1);
            let number = value
                .as_f64()
                .or_else(|| value.as_bool().map(|b| f64::from(u8::from(b))));
            let number = number.ok_or_else(|| {
                self.wrong(&format!("{key}.{name}"), &value, "a number or a boolean")
            })?;
            out.push((name, number));
        }
        Ok(Some(out))
    }

    /// The `activation` option: a unary op's name.
    pub(crate) fn activation(&self) -> Result<Option<UnaryOp>, JsValue> {
        let Some(v) = self.get("activation") else {
            return Ok(None);
        };
        let name = v.as_string().ok_or_else(|| {
            self.wrong(
                "activation",
                &v,
                "a unary op's name such as \"relu\" or \"gelu\"",
            )
        })?;
        UnaryOp::from_name(&name).map(Some).ok_or_else(|| {
            self.wrong(
                "activation",
                &v,
                &format!("a unary op's name: {}", UnaryOp::names()),
            )
        })
    }
}
