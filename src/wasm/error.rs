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

/// JS numbers as sizes (a shape, dimensions, workgroup counts): each must be a whole number in
/// `0..2^32`. JS would otherwise wrap them silently (2^32 to 0, -1 to 2^32 - 1) on the way
/// into the wasm.
pub(crate) fn sizes(what: &str, values: &[f64]) -> Result<Vec<u32>, JsValue> {
    values
        .iter()
        .map(|&v| {
            if v.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&v) {
                Ok(v as u32)
            } else {
                Err(js_error(crate::Error::Invalid(format!(
                    "{what} {values:?} holds {v}: expected whole numbers from 0 to {}",
                    u32::MAX
                ))))
            }
        })
        .collect()
}

/// [`sizes`] as `usize`.
pub(crate) fn usizes(what: &str, values: &[f64]) -> Result<Vec<usize>, JsValue> {
    Ok(sizes(what, values)?
        .into_iter()
        .map(|n| n as usize)
        .collect())
}

/// One JS number as a size or axis ([`sizes`]' rules).
pub(crate) fn usize_of(what: &str, value: f64) -> Result<usize, JsValue> {
    Ok(usizes(what, &[value])?[0])
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
