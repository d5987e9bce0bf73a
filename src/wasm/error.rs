//! Library errors as JavaScript `Error`s with a machine-readable `code`.

use wasm_bindgen::JsValue;

/// `e` as a JS `Error`: the message says what was wrong and what was expected, `code` is the
/// stable name of the kind (`SHAPE`, `DTYPE`, `SHADER`, ...).
pub(crate) fn js_error(e: crate::Error) -> JsValue {
    let error = js_sys::Error::new(&e.to_string());
    // Setting a property on a fresh Error object cannot fail.
    let _ = js_sys::Reflect::set(&error, &"code".into(), &e.code().into());
    error.into()
}

/// A JS `Error` for bad arguments that never reached the library.
pub(crate) fn invalid(message: String) -> JsValue {
    js_error(crate::Error::Invalid(message))
}
