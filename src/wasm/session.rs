//! The JS side of an ONNX session: a model loaded on a device, its inputs and outputs with
//! onnxruntime-web's type names, and runs over device tensors. The npm package's
//! `InferenceSession` (npm/session.js) wraps it in onnxruntime-web's API.

use std::rc::Rc;

use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::device::JsDevice;
use super::error::{invalid, js_error, js_repr, usize_of};
use super::options::TensorArgs;
use super::tensor::JsTensor;
use crate::onnx::{Dim, ElemType, IoInfo, Session, SessionOptions};

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &str = r#"
/** An input or output of a model, as onnxruntime-web describes it: `type` is its element type
 * (`'float32'`, `'int64'`...) and `shape` its extents (a number, a named extent's name, or -1
 * for an open one); either is absent where the file leaves it out. */
export interface ValueMetadata {
  name: string;
  isTensor: true;
  type?: string;
  shape?: (number | string)[];
}
/** Where a session's run keeps its memory, in bytes, planned from its first run. */
export interface MemoryPlan {
  /** The weights held on the device. */
  weights: number;
  /** The intermediates' device blocks (views share their block's). */
  intermediates: number;
  /** Each arena's bytes: the intermediates placed by liveness. */
  arenas: number[];
  /** The arenas' bytes added up: the planned peak of intermediates. */
  peak: number;
  /** The most bytes of intermediates live at once. */
  live: number;
  /** The intermediates' bytes added up: a run without reuse. */
  unshared: number;
}
"#;

/// A model loaded on a device (`InferenceSession` in the npm package wraps it).
#[wasm_bindgen(js_name = Session)]
pub struct JsSession {
    /// Shared with the runs in flight, which hold no borrow of this object.
    inner: Rc<Session>,
}

/// onnxruntime-web's name for `elem` (`'float32'`, `'int64'`, `'bool'`): ONNX's own, but for
/// the two floats it names by their width.
fn js_type(elem: ElemType) -> &'static str {
    match elem {
        ElemType::F32 => "float32",
        ElemType::F64 => "float64",
        other => other.name(),
    }
}

/// `{ name, isTensor, type, shape }` as onnxruntime-web's metadata: a fixed extent is a
/// number, a named one its name, an open one -1; a shape or type the file leaves out is absent.
fn metadata(info: &IoInfo) -> JsValue {
    let o = js_sys::Object::new();
    // Setting properties on a fresh plain object cannot fail.
    let set = |k: &str, v: JsValue| {
        let _ = js_sys::Reflect::set(&o, &k.into(), &v);
    };
    set("name", info.name.as_str().into());
    set("isTensor", true.into());
    if let Some(elem) = info.elem {
        set("type", js_type(elem).into());
    }
    if let Some(dims) = &info.shape {
        let shape: js_sys::Array = dims
            .iter()
            .map(|d| match d {
                Dim::Fixed(n) => JsValue::from(*n as f64),
                Dim::Symbol(s) => JsValue::from(s.as_str()),
                Dim::Unknown => JsValue::from(-1),
            })
            .collect();
        set("shape", shape.into());
    }
    o.into()
}

/// onnxruntime-web's `freeDimensionOverrides` (`{ batch: 1 }`; undefined or null for none) as
/// [`SessionOptions::free_dims`]: anything but an object of whole numbers is an error that
/// names the entry.
fn free_dims(overrides: &JsValue) -> Result<Vec<(String, usize)>, JsValue> {
    const WHAT: &str = "InferenceSession.create: freeDimensionOverrides";
    if overrides.is_undefined() || overrides.is_null() {
        return Ok(Vec::new());
    }
    if !overrides.is_object() || js_sys::Array::is_array(overrides) {
        return Err(invalid(format!(
            "{WHAT} is {}: expected an object of extents by dimension name ({{ batch: 1 }})",
            js_repr(overrides)
        )));
    }
    let entries = js_sys::Object::entries(overrides.unchecked_ref());
    (entries.iter())
        .map(|entry| {
            let entry = js_sys::Array::from(&entry);
            let (name, value) = (entry.get(0).as_string().unwrap_or_default(), entry.get(1));
            let what = format!("{WHAT}.{name}");
            let extent = value.as_f64().ok_or_else(|| {
                invalid(format!(
                    "{what} is {}: expected a whole number",
                    js_repr(&value)
                ))
            })?;
            Ok((name, usize_of(&what, extent)?))
        })
        .collect()
}

#[wasm_bindgen(js_class = Session)]
impl JsSession {
    /// The model in `bytes` (a whole `.onnx` file) on `device`. Every operator is checked
    /// here: what the session cannot run is an error now, naming the nodes. `outputs`, if
    /// given, are the values a run computes instead of the model's outputs; `overrides`
    /// (onnxruntime-web's `freeDimensionOverrides`, `{ batch: 1 }`) fixes named extents;
    /// `f16Weights` holds the large f32 weights in f16 ([`SessionOptions::f16_weights`]).
    pub fn load(
        device: &JsDevice,
        bytes: Vec<u8>,
        outputs: Option<Vec<String>>,
        #[wasm_bindgen(unchecked_param_type = "Record<string, number> | undefined")]
        overrides: JsValue,
        #[wasm_bindgen(js_name = f16Weights)] f16_weights: Option<bool>,
    ) -> Result<JsSession, JsValue> {
        let options = SessionOptions {
            outputs,
            free_dims: free_dims(&overrides)?,
            f16_weights: f16_weights.unwrap_or(false),
            ..SessionOptions::default()
        };
        Session::from_bytes(&device.inner, bytes, options)
            .map(|inner| JsSession {
                inner: Rc::new(inner),
            })
            .map_err(js_error)
    }

    /// The model's inputs in order: `{ name, isTensor, type, shape }`.
    #[wasm_bindgen(getter, js_name = inputMetadata, unchecked_return_type = "ValueMetadata[]")]
    pub fn input_metadata(&self) -> js_sys::Array {
        self.inner.inputs().iter().map(metadata).collect()
    }

    /// The outputs a run gives, in order: `{ name, isTensor, type, shape }`.
    #[wasm_bindgen(getter, js_name = outputMetadata, unchecked_return_type = "ValueMetadata[]")]
    pub fn output_metadata(&self) -> js_sys::Array {
        self.inner.outputs().iter().map(metadata).collect()
    }

    /// Where a run's memory goes, planned from the first run (`undefined` before it), in
    /// bytes: `{ weights, intermediates, arenas, peak, live, unshared }`: the weights on the
    /// device; the intermediates' blocks; each arena's bytes and their sum, the planned peak;
    /// the most bytes live at once; their sum without reuse ([`Session::memory_plan`]).
    #[wasm_bindgen(js_name = memoryPlan, unchecked_return_type = "MemoryPlan | undefined")]
    pub fn memory_plan(&self) -> JsValue {
        let Some(plan) = self.inner.memory_plan() else {
            return JsValue::UNDEFINED;
        };
        let o = js_sys::Object::new();
        // Setting properties on a fresh plain object cannot fail.
        let set = |k: &str, v: JsValue| {
            let _ = js_sys::Reflect::set(&o, &k.into(), &v);
        };
        let arenas: js_sys::Array = plan
            .arenas
            .iter()
            .map(|&b| JsValue::from(b as f64))
            .collect();
        set("weights", (plan.weights_bytes as f64).into());
        set("intermediates", (plan.intermediates as f64).into());
        set("arenas", arenas.into());
        set("peak", (plan.peak_bytes() as f64).into());
        set("live", (plan.live_bytes as f64).into());
        set("unshared", (plan.unshared_bytes as f64).into());
        o.into()
    }

    /// Runs the model on `feeds` (every input, by name): a promise of the outputs, in order,
    /// as tensors on the device. Runs may overlap; each takes its feeds when called.
    #[wasm_bindgen(unchecked_return_type = "Promise<Tensor[]>")]
    pub fn run(&self, feeds: &TensorArgs) -> js_sys::Promise {
        let session = Rc::clone(&self.inner);
        let given: Vec<(String, crate::Tensor)> = feeds
            .named()
            .map(|(n, t)| (n.to_string(), t.clone()))
            .collect();
        wasm_bindgen_futures::future_to_promise(async move {
            let feeds: Vec<(&str, &crate::Tensor)> =
                given.iter().map(|(n, t)| (n.as_str(), t)).collect();
            let outputs = session.run_async(&feeds).await.map_err(js_error)?;
            Ok(outputs
                .into_iter()
                .map(|(_, t)| JsValue::from(JsTensor::from(t)))
                .collect::<js_sys::Array>()
                .into())
        })
    }
}
