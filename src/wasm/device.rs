//! `init()` and the JS `Device`.

use wasm_bindgen::prelude::*;

use super::error::{invalid, js_error};
use super::gpu::{self, JsBuffer, JsKernel, JsQueue};
use super::tensor::JsTensor;
use crate::{BackendChoice, BackendKind, Device, Policy};

/// An opened device.
#[wasm_bindgen(js_name = Device)]
pub struct JsDevice {
    pub(crate) inner: Device,
    fallback: Option<String>,
}

/// Open a device: `"auto"` (the default), `"webgpu"` or `"cpu"`; or, with `policy` (a
/// [`crate::Policy`] as a JSON string or plain object), the device that policy prefers.
/// `"auto"` takes a hardware GPU when the browser offers one; with a software adapter
/// (SwiftShader: `isFallbackAdapter`) it times the heavy ops on WebGPU and on the CPU backend
/// inside the wasm and takes the faster (`device.selectionReason` says why, with the times);
/// without WebGPU it runs on the CPU (`device.fallbackReason` says why). (The npm package's
/// `init()` loads the wasm module, then calls this.)
#[wasm_bindgen(js_name = openDevice)]
pub async fn init(
    #[wasm_bindgen(unchecked_param_type = "'auto' | 'webgpu' | 'cpu' | undefined")] backend: Option<
        String,
    >,
    #[wasm_bindgen(unchecked_param_type = "Policy | string | undefined")] policy: Option<JsValue>,
) -> Result<JsDevice, JsValue> {
    let choice: BackendChoice = backend
        .as_deref()
        .unwrap_or("auto")
        .parse()
        .map_err(js_error)?;
    let policy = match policy.filter(|p| !p.is_undefined() && !p.is_null()) {
        Some(p) if choice != BackendChoice::Auto => {
            let _ = p;
            return Err(invalid(format!(
                "openDevice: give either a backend (`{}`) or a policy, not both",
                backend.unwrap_or_default()
            )));
        }
        Some(p) => Some(policy_from_js(&p)?),
        None => None,
    };
    let inner = match &policy {
        Some(p) => Device::open_with_policy_async(p).await,
        None => Device::open_async(choice).await,
    }
    .map_err(js_error)?;
    // Said by `device.fallbackReason`, not on the console: `init()` is quiet.
    let fallback =
        (choice == BackendChoice::Auto && inner.backend() == BackendKind::Cpu).then(|| {
            let why = inner
                .decisions()
                .first()
                .map(|d| d.reason.clone())
                .unwrap_or_default();
            format!("unicompute: running on the CPU backend: {why}")
        });
    Ok(JsDevice { inner, fallback })
}

/// A policy from a JSON string or a plain object.
fn policy_from_js(value: &JsValue) -> Result<Policy, JsValue> {
    let text = match value.as_string() {
        Some(text) => text,
        None => js_sys::JSON::stringify(value)
            .ok()
            .and_then(|s| s.as_string())
            .ok_or_else(|| invalid("policy: expected a JSON string or a plain object".into()))?,
    };
    Policy::from_json(&text).map_err(js_error)
}

/// Every device this build can open here, as `info()` objects (the CPU first, then the
/// browser's WebGPU adapter if it offers one).
#[wasm_bindgen(js_name = listDevices, unchecked_return_type = "DeviceInfo[]")]
pub async fn list_devices() -> js_sys::Array {
    crate::devices_async()
        .await
        .iter()
        .map(info_object)
        .collect()
}

/// A device's [`crate::DeviceInfo`] as a plain JS object.
fn info_object(info: &crate::DeviceInfo) -> JsValue {
    let (limits, features, out) = (
        js_sys::Object::new(),
        js_sys::Object::new(),
        js_sys::Object::new(),
    );
    set(&limits, "maxBufferSize", info.limits.max_buffer_size as f64);
    set(
        &limits,
        "maxStorageBindingSize",
        info.limits.max_storage_binding_size as f64,
    );
    set(
        &limits,
        "maxInvocationsPerWorkgroup",
        info.limits.max_invocations_per_workgroup,
    );
    if let Some(n) = info.limits.max_loop_iterations {
        set(&limits, "maxLoopIterations", n as f64);
    }
    set(&features, "f16", info.features.f16);
    set(&features, "timestamps", info.features.timestamps);
    set(&features, "subgroups", info.features.subgroups);
    set(&features, "int64", info.features.int64);
    set(&out, "name", info.name.clone());
    set(&out, "backend", info.backend.to_string());
    set(&out, "type", info.device_type.to_string());
    if let Some(n) = info.threads {
        set(&out, "threads", n as f64);
    }
    set(&out, "limits", limits);
    set(&out, "features", features);
    out.into()
}

/// Set `key` of `object` (setting a property on a plain object cannot fail).
fn set(object: &js_sys::Object, key: &str, value: impl Into<JsValue>) {
    let _ = js_sys::Reflect::set(object, &key.into(), &value.into());
}

#[wasm_bindgen(js_class = Device)]
impl JsDevice {
    /// The backend: `"webgpu"` or `"cpu"`.
    #[wasm_bindgen(getter, unchecked_return_type = "BackendName")]
    pub fn backend(&self) -> String {
        self.inner.backend().to_string()
    }

    /// The browser's `GPUDevice` behind a webgpu device (undefined on the CPU backend), for
    /// the page's own WebGPU work beside the library's: buffers it makes there can become
    /// tensors (`tensorFromGPUBuffer`), and `tensor.gpuBuffer()` hands out the library's.
    #[wasm_bindgen(getter, js_name = gpuDevice, unchecked_return_type = "GPUDeviceLike | \
        undefined")]
    pub fn gpu_device(&self) -> JsValue {
        self.inner.gpu_device_js().unwrap_or(JsValue::UNDEFINED)
    }

    /// A tensor of `shape` and `dtype` (`'f32'` by default) over `buffer`, a `GPUBuffer` of
    /// this device's `gpuDevice` (or of the device given to `init({ gpuDevice })`) with
    /// `STORAGE` usage (and `COPY_SRC` to `read()` it), from `byteOffset`. No copy: the tensor
    /// aliases the buffer, so ops read what the page's own work wrote to it before the op's
    /// work is submitted (`gpuBuffer()` or `read()` on a result submits it). The buffer stays
    /// the page's: dispose of the tensor and its pending results before destroying it.
    #[wasm_bindgen(js_name = tensorFromGPUBuffer)]
    pub fn tensor_from_gpu_buffer(
        &self,
        #[wasm_bindgen(unchecked_param_type = "GPUBufferLike")] buffer: &JsValue,
        shape: Vec<f64>,
        #[wasm_bindgen(unchecked_param_type = "DTypeName | GPUTensorOptions")] dtype: Option<
            String,
        >,
        #[wasm_bindgen(js_name = byteOffset)] byte_offset: Option<f64>,
    ) -> Result<JsTensor, JsValue> {
        let shape = super::error::usizes("shape", &shape)?;
        let dtype = dtype
            .as_deref()
            .map(super::tensor::dtype_named)
            .transpose()?
            .unwrap_or(crate::DType::F32);
        let offset = super::error::usize_of("byteOffset", byte_offset.unwrap_or(0.0))?;
        crate::Tensor::from_gpu_buffer_js(&self.inner, buffer, &shape, dtype, offset as u64)
            .map(JsTensor::from)
            .map_err(js_error)
    }

    /// A tensor of zeros of `shape` and `dtype` (`'f32'` by default; the npm package also takes
    /// `{ dtype }`).
    pub fn zeros(
        &self,
        shape: Vec<f64>,
        #[wasm_bindgen(unchecked_param_type = "DTypeName | { dtype?: DTypeName }")] dtype: Option<
            String,
        >,
    ) -> Result<JsTensor, JsValue> {
        let shape = super::error::usizes("shape", &shape)?;
        let dtype = dtype
            .as_deref()
            .map(super::tensor::dtype_named)
            .transpose()?
            .unwrap_or(crate::DType::F32);
        crate::Tensor::zeros(&self.inner, &shape, dtype)
            .map(JsTensor::from)
            .map_err(js_error)
    }

    /// Adapter or processor name.
    #[wasm_bindgen(getter)]
    pub fn name(&self) -> String {
        self.inner.info().name.clone()
    }

    /// Why `auto` runs on the CPU backend, if it does (no WebGPU, or WebGPU measured slower).
    #[wasm_bindgen(getter, js_name = fallbackReason)]
    pub fn fallback_reason(&self) -> Option<String> {
        self.fallback.clone()
    }

    /// Why this device was opened: asked for, the policy's order, or the measured times.
    #[wasm_bindgen(getter, js_name = selectionReason)]
    pub fn selection_reason(&self) -> String {
        self.inner
            .decisions()
            .first()
            .map(|d| d.reason.clone())
            .unwrap_or_default()
    }

    /// What the device reports: `{ name, backend, type, threads (cpu), limits: {...}, features:
    /// {...} }`.
    #[wasm_bindgen(unchecked_return_type = "DeviceInfo")]
    pub fn info(&self) -> JsValue {
        info_object(self.inner.info())
    }

    /// Pool statistics: `{ bytesLive, bytesCached, allocations, poolHits, peakBytesLive }`.
    #[wasm_bindgen(js_name = memoryStats, unchecked_return_type = "MemoryStats")]
    pub fn memory_stats(&self) -> JsValue {
        let s = self.inner.memory_stats();
        let out = js_sys::Object::new();
        set(&out, "bytesLive", s.bytes_live as f64);
        set(&out, "bytesCached", s.bytes_cached as f64);
        set(&out, "allocations", s.allocations as f64);
        set(&out, "poolHits", s.pool_hits as f64);
        set(&out, "peakBytesLive", s.peak_bytes_live as f64);
        out.into()
    }

    /// Give the pool's cached blocks back to the backend now (GPU buffers are destroyed; on
    /// the CPU backend the wasm allocator reuses the memory, but wasm memory never shrinks).
    pub fn trim(&self) {
        self.inner.trim_pool();
    }

    /// A buffer holding a copy of `data` (a `Float32Array`, `Int32Array` or `Uint32Array`).
    pub fn buffer(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Float32Array | Int32Array | Uint32Array")]
        data: &JsValue,
    ) -> Result<JsBuffer, JsValue> {
        gpu::buffer_from(&self.inner, data)
    }

    /// Compile the WGSL compute entry point `entry` for this device (webgpu runs it on the
    /// GPU, the CPU backend through its WGSL executor). `options.constants` sets the shader's
    /// `override`s by name or `@id` (`{ constants: { wg: 128 } }`, as WebGPU's pipeline
    /// `constants`); the others take their defaults. Invalid WGSL throws with code `SHADER`
    /// plus `line` and `column`.
    pub fn kernel(
        &self,
        source: &str,
        entry: &str,
        options: Option<JsValue>,
    ) -> Result<JsKernel, JsValue> {
        let options = super::options::Options::new("kernel", options, &["constants"])?;
        let constants = options.numbers("constants")?.unwrap_or_default();
        gpu::kernel_from(&self.inner, source, entry, &constants)
    }

    /// The device's default queue.
    pub fn queue(&self) -> JsQueue {
        JsQueue {
            inner: self.inner.queue(),
        }
    }

    /// Give the device's resources back now (WebGPU's `GPUDevice.destroy()`): every later
    /// call on it throws an error with code `DEVICE_LOST`; open a device again to continue.
    pub fn destroy(&self) {
        self.inner.destroy();
    }

    /// Another queue (ordered after the others' submissions on webgpu).
    #[wasm_bindgen(js_name = newQueue)]
    pub fn new_queue(&self) -> JsQueue {
        JsQueue {
            inner: self.inner.new_queue(),
        }
    }

    /// A tensor holding a copy of `data` with `shape` (whose sizes multiply to
    /// `data.length`; by default `[data.length]`, or for nested arrays their nesting): a
    /// `Float32Array`, `Int32Array`, `Uint32Array` or `BigInt64Array` (i64); a `Float16Array`
    /// (f16); a `Uint16Array` of f16 or bf16 bits, which needs `dtype` `'f16'` or `'bf16'`;
    /// or a plain array of numbers, possibly nested, taken in `dtype` (`'f32'` by default;
    /// whole numbers for integer dtypes). A `dtype` other than a typed array's converts on the
    /// device (`cast`); the npm package also takes `{ dtype }`.
    pub fn tensor(
        &self,
        #[wasm_bindgen(
            unchecked_param_type = "ElementArray | Uint16Array | { readonly BYTES_PER_ELEMENT: 2; \
                readonly length: number } | NestedNumbers"
        )]
        data: &JsValue,
        shape: Option<Vec<f64>>,
        #[wasm_bindgen(unchecked_param_type = "DTypeName | { dtype?: DTypeName }")] dtype: Option<
            String,
        >,
    ) -> Result<JsTensor, JsValue> {
        let shape = shape
            .map(|s| super::error::usizes("shape", &s))
            .transpose()?;
        let want = dtype
            .as_deref()
            .map(super::tensor::dtype_named)
            .transpose()?;
        if js_sys::Array::is_array(data) {
            let t = super::make::from_array(&self.inner, data, shape.as_deref(), want)?;
            return Ok(JsTensor::from(t));
        }
        let length = js_sys::Reflect::get(data, &"length".into())
            .ok()
            .and_then(|l| l.as_f64())
            .unwrap_or(0.0);
        let shape = shape.unwrap_or(vec![length as usize]);
        let t = super::tensor::from_js(&self.inner, data, &shape, want)?;
        match want {
            Some(d) if d != t.dtype() => t.cast(d),
            _ => Ok(t),
        }
        .map(JsTensor::from)
        .map_err(js_error)
    }
}
