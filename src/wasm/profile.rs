//! The JS API of policies, the profiler and autotuning: `device.policy`, `device.decisions()`,
//! `device.enableProfiler()` / `takeProfile()`, `device.tune(op, sizes)`.

use serde::Serialize;
use wasm_bindgen::prelude::*;

use super::device::JsDevice;
use super::error::{invalid, js_error};
use crate::choice::Problem;
use crate::{DType, Profile};

/// `value` as a plain JS object (through JSON: numbers, strings, arrays, objects).
fn to_js<T: Serialize>(value: &T) -> JsValue {
    serde_json::to_string(value)
        .ok()
        .and_then(|t| js_sys::JSON::parse(&t).ok())
        .unwrap_or(JsValue::NULL)
}

/// What the profiler recorded (see [`crate::Profile`]).
#[wasm_bindgen(js_name = Profile)]
pub struct JsProfile {
    inner: Profile,
}

#[wasm_bindgen(js_class = Profile)]
impl JsProfile {
    /// Every launch: `{ op, shapes, dtype, bytes, flops, variant, reason, queue, clock,
    /// hostStartUs, deviceStartUs, deviceUs }` (the npm package turns the Rust field names
    /// into camelCase).
    #[wasm_bindgen(unchecked_return_type = "LaunchRecord[]")]
    pub fn launches(&self) -> JsValue {
        to_js(&self.inner.launches)
    }

    /// Every read back to the host: `{ queue, bytes, hostStartUs, waitUs, copyUs }` (`waitUs`:
    /// submitting, the device finishing and copying to a mappable buffer, mapping; `copyUs`:
    /// the one copy into the returned typed array).
    #[wasm_bindgen(unchecked_return_type = "ReadRecord[]")]
    pub fn reads(&self) -> JsValue {
        to_js(&self.inner.reads)
    }

    /// Per-op totals: `{ op, count, timed, totalS, meanS, bytes, flops, rate, unit, variants }`.
    #[wasm_bindgen(unchecked_return_type = "OpSummary[]")]
    pub fn summary(&self) -> JsValue {
        to_js(&self.inner.summary())
    }

    /// The summary as a text table.
    pub fn table(&self) -> String {
        self.inner.table()
    }

    /// Chrome trace JSON (opens in Perfetto or chrome://tracing).
    #[wasm_bindgen(js_name = chromeTrace)]
    pub fn chrome_trace(&self) -> String {
        self.inner.chrome_trace()
    }

    /// Sum of the launches' device times, seconds.
    #[wasm_bindgen(getter, js_name = deviceSeconds)]
    pub fn device_seconds(&self) -> f64 {
        self.inner.device_seconds()
    }
}

#[wasm_bindgen(js_class = Device)]
impl JsDevice {
    /// The policy the device runs under, as a plain object.
    #[wasm_bindgen(getter, unchecked_return_type = "Required<Policy>")]
    pub fn policy(&self) -> JsValue {
        to_js(self.inner.policy())
    }

    /// How the device was chosen and the policy fallbacks taken: `[{ op, choice, reason, timesUs?
    /// }]`.
    #[wasm_bindgen(unchecked_return_type = "Decision[]")]
    pub fn decisions(&self) -> JsValue {
        to_js(&self.inner.decisions())
    }

    /// Record every launch from now on (device times from timestamp queries where the adapter
    /// has them, the host clock on the CPU backend).
    #[wasm_bindgen(js_name = enableProfiler)]
    pub fn enable_profiler(&self) {
        self.inner.profiler().enable();
    }

    /// Stop recording.
    #[wasm_bindgen(js_name = disableProfiler)]
    pub fn disable_profiler(&self) {
        self.inner.profiler().disable();
    }

    /// Take what the profiler recorded, once the device has timed the submitted launches.
    #[wasm_bindgen(js_name = takeProfile)]
    pub async fn take_profile(&self) -> JsProfile {
        JsProfile {
            inner: self.inner.take_profile().await,
        }
    }

    /// Time every variant of `op` (`"matmul"` with sizes `[m, n, k]` or `[batch, m, n, k]`;
    /// `"reduce"` with `[rows, length]`) and keep the fastest for its shape class in the tune
    /// cache (`localStorage` in pages), so ops under an `"auto"` policy variant run it.
    /// Resolves to `{ op, class, problem, choice, default, timesUs }`.
    #[wasm_bindgen(unchecked_return_type = "TuneResult")]
    pub async fn tune(
        &self,
        #[wasm_bindgen(unchecked_param_type = "'matmul' | 'reduce'")] op: String,
        sizes: Vec<f64>,
    ) -> Result<JsValue, JsValue> {
        let s = super::error::usizes("sizes", &sizes)?;
        let problem = match (op.as_str(), s.as_slice()) {
            ("matmul", &[m, n, k]) => Problem::Matmul {
                batch: 1,
                m,
                n,
                k,
                dtype: DType::F32,
            },
            ("matmul", &[batch, m, n, k]) => Problem::Matmul {
                batch,
                m,
                n,
                k,
                dtype: DType::F32,
            },
            ("reduce", &[rows, len]) => Problem::Reduce {
                outer: rows,
                len,
                inner: 1,
            },
            _ => {
                return Err(invalid(format!(
                    "tune: `{op}` with {} sizes: expected \"matmul\" with \
                [m, n, k] or [batch, m, n, k], or \"reduce\" with [rows, length]",
                    sizes.len()
                )))
            }
        };
        self.inner
            .tune(problem)
            .await
            .map(|r| to_js(&r))
            .map_err(js_error)
    }

    /// Every tuning and selection result the cache holds, as JSON text.
    #[wasm_bindgen(js_name = tuneCache)]
    pub fn tune_cache(&self) -> String {
        self.inner.tune_cache_json()
    }

    /// Add results saved from [`tuneCache`](JsDevice::tune_cache) (e.g. of an earlier visit).
    #[wasm_bindgen(js_name = importTuneCache)]
    pub fn import_tune_cache(&self, json: &str) -> Result<(), JsValue> {
        self.inner.import_tune_cache(json).map_err(js_error)
    }
}
