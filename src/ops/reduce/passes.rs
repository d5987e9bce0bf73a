//! The multi-pass reduction both GPU backends run: each pass reduces chunks of every row to
//! one value per (row, chunk), into temporaries, until one chunk per row remains; an argmax
//! carries the winners' indices from pass to pass. A backend says how a row splits into
//! chunks and launches one pass.

use std::sync::Arc;

use super::{Reduce, ReduceOp};
use crate::hal::{Block, OpContext};
use crate::{Error, Result};

/// A memory block and an element offset into it.
pub(super) type At = (Arc<Block>, usize);

/// One pass of a reduction.
pub(super) struct Pass {
    /// The values to reduce: a contiguous `[outer, len, inner]` at an offset...
    pub values: At,
    /// ...and, after an argmax's first pass, the index each value stands for.
    pub indices: Option<Arc<Block>>,
    pub outer: usize,
    pub len: usize,
    pub inner: usize,
    /// Chunks each row splits into, of `chunk` elements (the last may be shorter).
    pub chunks: usize,
    pub chunk: usize,
    /// Where the pass writes values (`None`: an argmax's last pass, which writes indices only)...
    pub out_values: Option<At>,
    /// ...and indices (argmax only).
    pub out_indices: Option<At>,
    /// What the results are multiplied by: `1 / len` in a mean's last pass, else 1.
    pub scale: f32,
}

impl Pass {
    /// Whether this is the first pass (it reads the input, and an argmax numbers its elements).
    pub(super) fn first(&self) -> bool {
        self.indices.is_none()
    }

    /// Whether this pass writes the result.
    pub(super) fn last(&self) -> bool {
        self.chunks == 1
    }

    /// Every block the pass reads or writes.
    #[cfg_attr(not(cuda_backend), allow(dead_code))]
    pub(super) fn blocks(&self) -> Vec<&Arc<Block>> {
        let outs = self
            .out_values
            .iter()
            .chain(&self.out_indices)
            .map(|(b, _)| b);
        std::iter::once(&self.values.0)
            .chain(&self.indices)
            .chain(outs)
            .collect()
    }
}

/// Run `launch` for each pass of `call`; `split(rows, len)` gives a row's `(chunks, chunk)`.
pub(super) fn run(
    call: &Reduce<'_>,
    cx: &OpContext<'_>,
    split: impl Fn(usize, usize) -> (usize, usize),
    mut launch: impl FnMut(&Pass) -> Result<()>,
) -> Result<()> {
    let argmax = call.op == ReduceOp::Argmax;
    let temp = |elements: usize| -> Result<At> {
        Ok((
            (cx.temp)((elements.max(1) * call.dtype.size().max(4)) as u64)?,
            0,
        ))
    };
    let (mut values, mut indices) = ((call.x.buf.clone(), call.x.layout.offset), None);
    let (mut outer, mut len, mut inner) = (call.outer, call.len, call.inner);
    loop {
        let rows = outer * inner;
        let (chunks, chunk) = split(rows, len);
        let out = (call.out.buf.clone(), call.out.layout.offset);
        let (out_values, out_indices) = match (chunks == 1, argmax) {
            (true, false) => (Some(out), None),
            (true, true) => (None, Some(out)),
            (false, false) => (Some(temp(rows * chunks)?), None),
            (false, true) => (Some(temp(rows * chunks)?), Some(temp(rows * chunks)?)),
        };
        let scale = if chunks == 1 && call.op == ReduceOp::Mean {
            1.0 / call.len as f32
        } else {
            1.0
        };
        let pass = Pass {
            values,
            indices,
            outer,
            len,
            inner,
            chunks,
            chunk,
            out_values,
            out_indices,
            scale,
        };
        launch(&pass)?;
        if pass.last() {
            return Ok(());
        }
        values = pass
            .out_values
            .ok_or_else(|| Error::Internal("a reduction pass without values".into()))?;
        indices = pass.out_indices.map(|(b, _)| b);
        (outer, len, inner) = (rows, chunks, 1);
    }
}
