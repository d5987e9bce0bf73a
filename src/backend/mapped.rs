//! Bytes read back from a device, lent where they lie once the device is done: in host memory,
//! or (webgpu in a browser) in the JS `ArrayBuffer` of a mapped `GPUBuffer`, which wasm code
//! can only copy out of. Readers take them with one copy into the array they return.

/// Bytes read back, lent for the one copy out.
pub(crate) enum Mapped<'a> {
    /// In host memory (the wasm's own memory inside a browser).
    Host(&'a [u8]),
    /// In a JS `ArrayBuffer`: the mapped range of a `GPUBuffer`.
    #[cfg(target_arch = "wasm32")]
    Js(js_sys::Uint8Array),
}

impl Mapped<'_> {
    /// Copy into `dst`, which has exactly as many bytes.
    pub(crate) fn copy_to(&self, dst: &mut [u8]) {
        match self {
            Mapped::Host(bytes) => dst.copy_from_slice(bytes),
            #[cfg(target_arch = "wasm32")]
            Mapped::Js(array) => array.copy_to(dst),
        }
    }

    /// Copy into a new JS `ArrayBuffer` of exactly these bytes.
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn to_array_buffer(&self) -> js_sys::ArrayBuffer {
        match self {
            Mapped::Host(bytes) => js_sys::Uint8Array::from(*bytes).buffer(),
            Mapped::Js(array) => array.slice(0, array.length()).buffer(),
        }
    }
}
