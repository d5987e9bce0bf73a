//! Wrapping a page's own `GPUBuffer` as device memory, without a copy.
//!
//! wgpu's WebGPU backend can hand its objects out (`as_webgpu`) but has no call that takes a
//! foreign buffer in. It makes every buffer with `GPUDevice.createBuffer`, so for the one
//! call that wraps, the device answers `createBuffer` with the page's buffer: an own property
//! of the `GPUDevice` object shadows its prototype's method and is removed right after. wgpu
//! then holds the page's buffer as its own; its `Buffer` never destroys on drop, so the buffer
//! stays the page's.

use wasm_bindgen::closure::Closure;
use wasm_bindgen::{JsCast, JsValue};

use super::{GpuDevice, GpuMemory};
use crate::{Error, Result};

/// `GPUBufferUsage.STORAGE`: what the kernels bind every operand as.
const STORAGE: u32 = 0x80;

/// A number property of a JS object, if it is one.
fn number(object: &JsValue, key: &str) -> Option<f64> {
    js_sys::Reflect::get(object, &key.into()).ok()?.as_f64()
}

/// `buffer` (a `GPUBuffer` made on this device) as device memory, and its size in bytes.
pub(crate) fn adopt_buffer(dev: &GpuDevice, buffer: &JsValue) -> Result<(GpuMemory, u64)> {
    let (Some(size), Some(usage)) = (number(buffer, "size"), number(buffer, "usage")) else {
        return Err(Error::Invalid(
            "tensorFromGPUBuffer: the buffer has no numeric `size` and \
            `usage`: expected a GPUBuffer"
                .into(),
        ));
    };
    let usage = usage as u32;
    if usage & STORAGE == 0 {
        return Err(Error::Invalid(format!(
            "tensorFromGPUBuffer: the buffer's usage is {usage:#x}: expected it to include \
                GPUBufferUsage.STORAGE (0x80), as kernels bind their operands as storage (and \
                COPY_SRC to read() it)"
        )));
    }
    let Some(device) = dev.device.as_webgpu() else {
        return Err(Error::Unsupported {
            backend: crate::BackendKind::WebGpu,
            what: "page GPU buffers on a native adapter: they need the browser's WebGPU".into(),
        });
    };
    let device: JsValue = device.clone().into();
    let key: JsValue = "createBuffer".into();
    let theirs = buffer.clone();
    let answer = Closure::once_into_js(move |_descriptor: JsValue| theirs);
    js_sys::Reflect::set(&device, &key, &answer).map_err(|e| {
        Error::Device(format!(
            "tensorFromGPUBuffer: cannot wrap the buffer: {e:?}"
        ))
    })?;
    let wrapped = dev.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("page's GPUBuffer"),
        size: size as u64,
        usage: wgpu::BufferUsages::from_bits_truncate(usage),
        mapped_at_creation: false,
    });
    let _ = js_sys::Reflect::delete_property(device.unchecked_ref::<js_sys::Object>(), &key);
    let same = wrapped
        .as_webgpu()
        .is_some_and(|b| JsValue::from(b.clone()) == *buffer);
    if !same {
        wrapped.destroy(); // a buffer of wgpu's own, made instead
        return Err(Error::Device(
            "tensorFromGPUBuffer: wgpu did not take the page's buffer (its \
            WebGPU backend changed): nothing was wrapped"
                .into(),
        ));
    }
    Ok((GpuMemory::Page(wrapped), size as u64))
}
