//! Library errors as JavaScript `Error`s with a machine-readable `code`.

use wasm_bindgen::JsValue;

/// `e` as a JS `Error`: the message says what was wrong and what was expected, `code` is the
/// stable name of the kind (`SHAPE`, `DTYPE`, `SHADER`, ...). (The npm package makes it a
/// `UnicomputeError` and writes the Rust names in it, `broadcast_to`, the JS way.)
pub(crate) fn js_error(e: crate::Error) -> JsValue {
    let error = js_sys::Error::new(&e.to_string());
    // Setting a property on a fresh Error object cannot fail.
    let _ = js_sys::Reflect::set(&error, &"code".into(), &e.code().into());
    error.into()
}

/// A JS value as a message shows it: as JSON (`"two"`, `2`, `[8]`), else by its type.
pub(crate) fn js_repr(value: &JsValue) -> String {
    js_sys::JSON::stringify(value)
        .ok()
        .and_then(|s| s.as_string())
        .unwrap_or_else(|| value.js_typeof().as_string().unwrap_or_default())
}

/// A JS `Error` for bad arguments that never reached the library.
pub(crate) fn invalid(message: String) -> JsValue {
    js_error(crate::Error::Invalid(message))
}

/// A JS number as a size: a whole number in `0..2^32` (JS would otherwise wrap it silently,
/// 2^32 to 0 and -1 to 2^32 - 1, on the way into the wasm).
fn whole(value: f64) -> Option<u32> {
    (value.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&value)).then_some(value as u32)
}

/// The error for `what`, which is `value` where a size belongs. `{value}` writes -1 as JS
/// does (Rust's `{:?}` would write -1.0).
fn not_whole(what: &str, value: f64) -> JsValue {
    js_error(crate::Error::Invalid(format!(
        "{what} is {value}: expected a whole number from 0 to {}",
        u32::MAX
    )))
}

/// JS numbers as sizes (a shape, dimensions, workgroup counts), each as [`whole`] takes it; an
/// error names the entry (`shape[1] is -1`).
pub(crate) fn sizes(what: &str, values: &[f64]) -> Result<Vec<u32>, JsValue> {
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| whole(v).ok_or_else(|| not_whole(&format!("{what}[{i}]"), v)))
        .collect()
}

/// [`sizes`] as `usize`.
pub(crate) fn usizes(what: &str, values: &[f64]) -> Result<Vec<usize>, JsValue> {
    Ok(sizes(what, values)?
        .into_iter()
        .map(|n| n as usize)
        .collect())
}

/// One JS number as a size or axis ([`whole`]'s rules).
pub(crate) fn usize_of(what: &str, value: f64) -> Result<usize, JsValue> {
    whole(value)
        .map(|n| n as usize)
        .ok_or_else(|| not_whole(what, value))
}

/// An axis of a rank-`rank` tensor from JS: a whole number, negative ones counting from the
/// end (`-1` is the last axis), as in numpy, TF.js and ONNX. One past either end is an
/// `OUT_OF_RANGE` error here or in the op.
pub(crate) fn axis_of(rank: usize, value: f64) -> Result<usize, JsValue> {
    if value < 0.0 && value.fract() == 0.0 {
        let from_end = rank as f64 + value;
        return if from_end >= 0.0 {
            Ok(from_end as usize)
        } else {
            Err(js_error(crate::Error::OutOfRange(format!(
                "axis {value} of a rank-{rank} tensor: expected an axis in [-{rank}, {rank})"
            ))))
        };
    }
    usize_of("axis", value)
}
