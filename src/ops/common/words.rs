//! 64-bit elements moved as pairs of 32-bit words: copies, `where` and gather of i64 tensors
//! run the word kernels of every backend over views with a trailing dimension of two words
//! (low word first), so data movement needs no 64-bit arithmetic (nor `shader-int64`).

use crate::base::layout::{Layout, MAX_RANK};
use crate::{DType, Error, Result, Tensor};

/// Views of one shape as u32 words: each `(tensor, pair)` gets a trailing dimension of 2,
/// its strides and offset doubled where `pair` (the tensor holds 8-byte elements), else a
/// trailing stride of 0 (a 4-byte tensor, such as a condition, read for both words).
/// Neighbouring dimensions that every view steps through as one are merged, so the rank
/// stays within [`MAX_RANK`] where the layouts allow (else a `SHAPE` error).
pub(crate) fn pair_views(op: &'static str, views: &[(&Tensor, bool)]) -> Result<Vec<Tensor>> {
    let layouts: Vec<Layout> = views
        .iter()
        .map(|&(t, pair)| {
            let k = if pair { 2 } else { 1 };
            let mut strides: Vec<usize> = t.layout.strides.iter().map(|s| s * k).collect();
            strides.push(usize::from(pair));
            Layout { shape: t.layout.shape.iter().copied().chain([2]).collect(), strides, offset: t.layout.offset * k }
        })
        .collect();
    let merged = merge_dims(layouts);
    if merged[0].shape.len() > MAX_RANK {
        return Err(Error::shape(op, format!("an i64 view of shape {:?} moves as words of rank {}: expected a view whose dimensions merge to rank {MAX_RANK} (make it contiguous first)", views[0].0.shape(), merged[0].shape.len())));
    }
    let tensor = |(&(t, pair), layout): (&(&Tensor, bool), Layout)| {
        let dtype = if pair { DType::U32 } else { t.dtype };
        Tensor { inner: t.inner.clone(), device: t.device.clone(), dtype, layout }
    };
    Ok(views.iter().zip(merged).map(tensor).collect())
}

/// `layouts` (one shape) with each pair of neighbouring dimensions merged where every layout
/// steps through them as one (`stride[d] == stride[d + 1] * shape[d + 1]`).
fn merge_dims(mut layouts: Vec<Layout>) -> Vec<Layout> {
    let mut d = layouts[0].shape.len() - 1;
    while d > 0 {
        let joint = layouts.iter().all(|l| l.strides[d - 1] == l.strides[d] * l.shape[d]);
        if joint {
            for l in &mut layouts {
                l.shape[d - 1] *= l.shape[d];
                l.strides[d - 1] = l.strides[d];
                l.shape.remove(d);
                l.strides.remove(d);
            }
        }
        d -= 1;
    }
    layouts
}
