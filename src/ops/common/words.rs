//! 64-bit elements moved as pairs of 32-bit words: copies, `where` and gather of i64 tensors
//! run the word kernels of every backend over views with a trailing dimension of two words
//! (low word first), so data movement needs no 64-bit arithmetic (nor `shader-int64`).

use crate::base::layout::{Layout, MAX_RANK};
use crate::{DType, Error, Result, Tensor};

/// Views of one shape as the word kernels take them: unchanged unless one holds 8-byte
/// elements; then each gets a trailing dimension of 2, an 8-byte one as its u32 words (its
/// strides and offset doubled), a 4-byte one (such as a condition) read for both words
/// (stride 0). A view of rank [`MAX_RANK`] has no room for the pair: a `SHAPE` error.
pub(crate) fn as_words(op: &'static str, views: &[&Tensor]) -> Result<Vec<Tensor>> {
    if views.iter().all(|t| t.dtype.size() != 8) {
        return Ok(views.iter().map(|&t| t.clone()).collect());
    }
    let mut out = Vec::with_capacity(views.len());
    for &t in views {
        if t.rank() >= MAX_RANK {
            return Err(Error::shape(
                op,
                format!(
                    "an i64 view of rank {} moves as words of rank {}: \
                expected rank below {MAX_RANK}",
                    t.rank(),
                    t.rank() + 1
                ),
            ));
        }
        let pair = t.dtype.size() == 8;
        let k = if pair { 2 } else { 1 };
        let mut layout = Layout {
            shape: t.layout.shape.clone(),
            strides: t.layout.strides.iter().map(|s| s * k).collect(),
            offset: t.layout.offset * k,
        };
        layout.shape.push(2);
        layout.strides.push(usize::from(pair));
        let dtype = if pair { DType::U32 } else { t.dtype };
        out.push(Tensor {
            inner: t.inner.clone(),
            device: t.device.clone(),
            dtype,
            layout,
        });
    }
    Ok(out)
}

/// Word `k` (0 low, 1 high) of each element of an 8-byte view, as a u32 view.
pub(crate) fn word_of(t: &Tensor, k: usize) -> Tensor {
    let layout = Layout {
        shape: t.layout.shape.clone(),
        strides: t.layout.strides.iter().map(|s| s * 2).collect(),
        offset: t.layout.offset * 2 + k,
    };
    Tensor {
        inner: t.inner.clone(),
        device: t.device.clone(),
        dtype: DType::U32,
        layout,
    }
}

/// A contiguous tensor of 8-byte elements as its words, in one dimension.
pub(crate) fn flat_words(t: &Tensor) -> Tensor {
    let layout = Layout::contiguous(&[t.numel() * 2], t.layout.offset * 2);
    Tensor {
        inner: t.inner.clone(),
        device: t.device.clone(),
        dtype: DType::U32,
        layout,
    }
}

/// A contiguous u32 tensor of words as the i64 values they pair into (low word first), in
/// `shape`: a `SHAPE` error unless `shape` holds half as many elements.
#[cfg(target_arch = "wasm32")]
pub(crate) fn words_as_i64(words: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let numel = crate::base::layout::checked_numel("tensor", shape)?;
    if numel.checked_mul(2) != Some(words.numel()) || !words.is_contiguous() {
        return Err(Error::shape(
            "tensor",
            format!(
                "shape {shape:?} has {numel} elements but the data holds {}: expected equal counts",
                words.numel() / 2
            ),
        ));
    }
    Ok(Tensor {
        inner: words.inner.clone(),
        device: words.device.clone(),
        dtype: DType::I64,
        layout: Layout::contiguous(shape, words.layout.offset / 2),
    })
}
