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

    /// Copy into `dst`, a JS view of exactly as many bytes.
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn copy_to_js(&self, dst: &js_sys::Uint8Array) {
        match self {
            Mapped::Host(bytes) => dst.copy_from(bytes),
            Mapped::Js(array) => dst.set(array, 0),
        }
    }

    /// Copy into a new JS `ArrayBuffer` of exactly these bytes. (A new array filled by `set`:
    /// Node's V8 copies 16 MiB that way in a sixth of the time of the typed-array constructor;
    /// in Chromium either way is dominated by the first touch of the new array's pages, about
    /// 8 ms for 16 MiB against 0.7 ms for the copy itself.)
    #[cfg(target_arch = "wasm32")]
    pub(crate) fn to_array_buffer(&self) -> js_sys::ArrayBuffer {
        match self {
            Mapped::Host(bytes) => {
                let out = js_sys::Uint8Array::new_with_length(bytes.len() as u32);
                out.copy_from(bytes);
                out.buffer()
            }
            Mapped::Js(array) => {
                let out = js_sys::Uint8Array::new_with_length(array.length());
                out.set(array, 0);
                out.buffer()
            }
        }
    }
}
