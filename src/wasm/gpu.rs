//! The JS `Buffer`, `Kernel`, `Queue`, `Graph` and `Fence`: typed device memory, user WGSL
//! kernels (errors carry `line` and `column`), ordered streams of work, captured work replayed,
//! and completion.

use wasm_bindgen::prelude::*;

use super::error::{invalid, js_error};
use crate::{Binding, Buffer, Error, Fence, Graph, Kernel, Queue};

/// Device memory of one element type, made from and read back to a typed array.
#[wasm_bindgen(js_name = Buffer)]
pub struct JsBuffer {
    pub(crate) inner: TypedBuffer,
}

/// A buffer of one of the element types JS typed arrays hold (cheap to clone: a view).
#[derive(Clone)]
pub(crate) enum TypedBuffer {
    F32(Buffer<f32>),
    I32(Buffer<i32>),
    U32(Buffer<u32>),
}

impl TypedBuffer {
    fn binding(&self) -> Binding<'_> {
        match self {
            TypedBuffer::F32(b) => b.into(),
            TypedBuffer::I32(b) => b.into(),
            TypedBuffer::U32(b) => b.into(),
        }
    }
}

fn wrong_array(data: &JsValue) -> JsValue {
    invalid(format!(
        "buffer data is {}: expected a Float32Array, Int32Array or Uint32Array",
        data.js_typeof().as_string().unwrap_or_default()
    ))
}

/// A buffer holding a copy of `data`.
pub(crate) fn buffer_from(device: &crate::Device, data: &JsValue) -> Result<JsBuffer, JsValue> {
    let inner = if let Some(a) = data.dyn_ref::<js_sys::Float32Array>() {
        TypedBuffer::F32(Buffer::from_slice(device, &a.to_vec()).map_err(js_error)?)
    } else if let Some(a) = data.dyn_ref::<js_sys::Int32Array>() {
        TypedBuffer::I32(Buffer::from_slice(device, &a.to_vec()).map_err(js_error)?)
    } else if let Some(a) = data.dyn_ref::<js_sys::Uint32Array>() {
        TypedBuffer::U32(Buffer::from_slice(device, &a.to_vec()).map_err(js_error)?)
    } else {
        return Err(wrong_array(data));
    };
    Ok(JsBuffer { inner })
}

#[wasm_bindgen(js_class = Buffer)]
impl JsBuffer {
    /// Number of elements.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> usize {
        match &self.inner {
            TypedBuffer::F32(b) => b.len(),
            TypedBuffer::I32(b) => b.len(),
            TypedBuffer::U32(b) => b.len(),
        }
    }

    /// Element type: `"f32"`, `"i32"` or `"u32"`.
    #[wasm_bindgen(getter, unchecked_return_type = "'f32' | 'i32' | 'u32'")]
    pub fn dtype(&self) -> String {
        match &self.inner {
            TypedBuffer::F32(b) => b.dtype(),
            TypedBuffer::I32(b) => b.dtype(),
            TypedBuffer::U32(b) => b.dtype(),
        }
        .to_string()
    }

    /// A tensor of `shape` over this buffer's memory, without a copy: what `write` puts in
    /// the buffer, the tensor holds (the way to give a captured `Graph` new inputs).
    pub fn tensor(&self, shape: Vec<f64>) -> Result<super::tensor::JsTensor, JsValue> {
        let shape = super::error::usizes("shape", &shape)?;
        match &self.inner {
            TypedBuffer::F32(b) => crate::Tensor::from_buffer(b, &shape),
            TypedBuffer::I32(b) => crate::Tensor::from_buffer(b, &shape),
            TypedBuffer::U32(b) => crate::Tensor::from_buffer(b, &shape),
        }
        .map(Into::into)
        .map_err(js_error)
    }

    /// Overwrite the contents with `data` (the same typed array type and length).
    pub fn write(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Float32Array | Int32Array | Uint32Array")]
        data: &JsValue,
    ) -> Result<(), JsValue> {
        match &self.inner {
            TypedBuffer::F32(b) => b.write(
                &data
                    .dyn_ref::<js_sys::Float32Array>()
                    .ok_or_else(|| wrong_type(data, "Float32Array"))?
                    .to_vec(),
            ),
            TypedBuffer::I32(b) => b.write(
                &data
                    .dyn_ref::<js_sys::Int32Array>()
                    .ok_or_else(|| wrong_type(data, "Int32Array"))?
                    .to_vec(),
            ),
            TypedBuffer::U32(b) => b.write(
                &data
                    .dyn_ref::<js_sys::Uint32Array>()
                    .ok_or_else(|| wrong_type(data, "Uint32Array"))?
                    .to_vec(),
            ),
        }
        .map_err(js_error)
    }

    /// The contents as a typed array of the buffer's type (one copy into it), once the
    /// device is done.
    #[wasm_bindgen(unchecked_return_type = "Float32Array | Int32Array | Uint32Array")]
    pub async fn read(&self) -> Result<JsValue, JsValue> {
        Ok(match &self.inner {
            TypedBuffer::F32(b) => js_sys::Float32Array::new(
                &b.read_array_buffer()
                    .await
                    .map(JsValue::from)
                    .map_err(js_error)?,
            )
            .into(),
            TypedBuffer::I32(b) => js_sys::Int32Array::new(
                &b.read_array_buffer()
                    .await
                    .map(JsValue::from)
                    .map_err(js_error)?,
            )
            .into(),
            TypedBuffer::U32(b) => js_sys::Uint32Array::new(
                &b.read_array_buffer()
                    .await
                    .map(JsValue::from)
                    .map_err(js_error)?,
            )
            .into(),
        })
    }
}

fn wrong_type(data: &JsValue, expected: &str) -> JsValue {
    invalid(format!(
        "write data is {}: expected a {expected} (the buffer's element type)",
        data.js_typeof().as_string().unwrap_or_default()
    ))
}

/// A user WGSL kernel compiled for a device.
#[wasm_bindgen(js_name = Kernel)]
pub struct JsKernel {
    pub(crate) inner: Kernel,
}

/// Compile `source`'s compute entry point `entry` with its overrides set from `constants`.
/// Invalid WGSL rejects with an `Error` whose `code` is `SHADER` and whose `line` and
/// `column` locate the problem.
pub(crate) fn kernel_from(
    device: &crate::Device,
    source: &str,
    entry: &str,
    constants: &[(String, f64)],
) -> Result<JsKernel, JsValue> {
    let constants: Vec<(&str, f64)> = constants.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    match Kernel::from_wgsl_with(device, source, entry, &constants) {
        Ok(inner) => Ok(JsKernel { inner }),
        Err(e @ crate::Error::Shader { line, column, .. }) => {
            let error = js_error(e);
            let _ = js_sys::Reflect::set(&error, &"line".into(), &line.into());
            let _ = js_sys::Reflect::set(&error, &"column".into(), &column.into());
            Err(error)
        }
        Err(e) => Err(js_error(e)),
    }
}

#[wasm_bindgen(js_class = Kernel)]
impl JsKernel {
    /// The entry point's `@workgroup_size` (a frozen array in the npm package).
    #[wasm_bindgen(getter, js_name = workgroupSize, unchecked_return_type = "readonly number[]")]
    pub fn workgroup_size(&self) -> Vec<u32> {
        self.inner.info().workgroup_size.to_vec()
    }

    /// Number of bindings a launch takes, in (group, binding) order.
    #[wasm_bindgen(getter, js_name = bindingCount)]
    pub fn binding_count(&self) -> usize {
        self.inner.info().bindings.len()
    }

    /// The bindings as reflected from the source, in launch order: `{ group, binding, name,
    /// kind, dtype, minBytes, runtimeSized }`.
    #[wasm_bindgen(getter, unchecked_return_type = "BindingInfo[]")]
    pub fn bindings(&self) -> js_sys::Array {
        self.inner
            .info()
            .bindings
            .iter()
            .map(binding_object)
            .collect()
    }
}

/// One reflected binding as a plain JS object.
fn binding_object(b: &crate::BindingInfo) -> JsValue {
    let kind = match b.kind {
        crate::BindingKind::StorageRead => "storage-read",
        crate::BindingKind::StorageReadWrite => "storage-read-write",
        crate::BindingKind::Uniform => "uniform",
        crate::BindingKind::Scalar => "scalar",
    };
    let out = js_sys::Object::new();
    let set = |key: &str, value: JsValue| {
        let _ = js_sys::Reflect::set(&out, &key.into(), &value);
    };
    set("group", b.group.into());
    set("binding", b.binding.into());
    set("name", b.name.clone().into());
    set("kind", kind.into());
    set("dtype", b.dtype.map_or(JsValue::NULL, |d| d.name().into()));
    set("minBytes", (b.min_bytes as f64).into());
    set("runtimeSized", b.runtime_sized.into());
    out.into()
}

/// The buffers of one launch, in binding order (`Queue.launch` in the npm package builds it
/// from an array).
#[wasm_bindgen(js_name = BindingList)]
#[derive(Default)]
pub struct JsBindingList {
    buffers: Vec<TypedBuffer>,
}

#[wasm_bindgen(js_class = BindingList)]
impl JsBindingList {
    /// An empty list.
    #[wasm_bindgen(constructor)]
    pub fn new() -> JsBindingList {
        JsBindingList::default()
    }

    /// Append `buffer` (the buffer stays usable).
    pub fn push(&mut self, buffer: &JsBuffer) {
        self.buffers.push(buffer.inner.clone());
    }
}

/// An ordered stream of device work.
#[wasm_bindgen(js_name = Queue)]
pub struct JsQueue {
    pub(crate) inner: Queue,
}

#[wasm_bindgen(js_class = Queue)]
impl JsQueue {
    /// Record a launch of `kernel` over `workgroups` (`[x, y, z]`) with one buffer per binding;
    /// checked against the kernel's bindings and the device limits first.
    #[wasm_bindgen(js_name = "__launch", skip_typescript)]
    pub fn launch_with(
        &self,
        kernel: &JsKernel,
        buffers: &JsBindingList,
        workgroups: Vec<f64>,
    ) -> Result<(), JsValue> {
        let workgroups = super::error::sizes("workgroups", &workgroups)?;
        let &[x, y, z] = workgroups.as_slice() else {
            return Err(invalid(format!(
                "workgroups has {} entries: expected [x, y, z]",
                workgroups.len()
            )));
        };
        let bindings: Vec<Binding<'_>> = buffers.buffers.iter().map(TypedBuffer::binding).collect();
        self.inner
            .launch(&kernel.inner, &bindings, [x, y, z])
            .map_err(js_error)
    }

    /// Send what was recorded to the device; the fence signals when it is done.
    pub fn submit(&self) -> Result<JsFence, JsValue> {
        self.inner
            .submit()
            .map(|inner| JsFence { inner })
            .map_err(js_error)
    }

    /// Capture the work `record()` records on this queue as a `Graph` instead of running it
    /// (tensor methods record on the device's default queue, `device.queue()`). Keep the
    /// tensors made inside: each `graph.replay()` writes their results. Reads, `submit` and
    /// fence waits inside throw `INVALID`; an exception thrown by `record` ends the capture,
    /// drops what it recorded and is thrown again. The cpu backend throws `UNSUPPORTED`.
    pub fn capture(&self, record: &js_sys::Function) -> Result<JsGraph, JsValue> {
        let mut thrown = None;
        let captured = self
            .inner
            .capture(|_| match record.call0(&JsValue::UNDEFINED) {
                // What an async function records after its first await would land outside.
                Ok(v) if v.is_instance_of::<js_sys::Promise>() => Err(Error::Invalid(
                    "the capture's function returned a promise: a capture records \
                    synchronously, so work after an await would not be captured; pass a function \
                    that is not async"
                        .into(),
                )),
                Ok(_) => Ok(()),
                Err(e) => {
                    thrown = Some(e);
                    Err(Error::Invalid("the capture's function threw".into()))
                }
            });
        match (captured, thrown) {
            (_, Some(e)) => Err(e),
            (Ok((inner, ())), None) => Ok(JsGraph { inner }),
            (Err(e), None) => Err(js_error(e)),
        }
    }
}

/// Work captured by `queue.capture`, run again by `replay()` for the host cost of one launch.
#[wasm_bindgen(js_name = Graph)]
pub struct JsGraph {
    inner: Graph,
}

#[wasm_bindgen(js_class = Graph)]
impl JsGraph {
    /// Record one run of the captured work on its queue (sent with the queue's next batch).
    pub fn replay(&self) -> Result<(), JsValue> {
        self.inner.replay().map_err(js_error)
    }

    /// How many launches the capture recorded.
    #[wasm_bindgen(getter)]
    pub fn launches(&self) -> usize {
        self.inner.launches()
    }
}

/// Marks submitted work; `await fence.wait()` resolves when the device has finished it.
#[wasm_bindgen(js_name = Fence)]
pub struct JsFence {
    inner: Fence,
}

#[wasm_bindgen(js_class = Fence)]
impl JsFence {
    /// Whether the device has finished (never blocks).
    #[wasm_bindgen(getter)]
    pub fn signalled(&self) -> bool {
        self.inner.is_signalled()
    }

    /// Resolves once the device has finished the work.
    pub async fn wait(&self) -> Result<(), JsValue> {
        self.inner.wait().await.map_err(js_error)
    }
}
