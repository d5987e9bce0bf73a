//! Layer / RMS normalisation of rows, statistics in f64, rows in parallel.

use rayon::prelude::*;

use super::{out_words, read_guard, write_guard, sum_f64};
use crate::ops::{NormKind, Operand, UnaryOp};
use crate::Result;

/// The columns of an optional `[cols]` operand.
fn row_of<'g>(words: &'g Option<std::sync::RwLockReadGuard<'_, Vec<u32>>>, o: Option<Operand<'_>>, cols: usize) -> Option<&'g [f32]> {
    let (g, o) = (words.as_ref()?, o?);
    Some(&bytemuck::cast_slice(g)[o.layout.offset..o.layout.offset + cols])
}

#[allow(clippy::too_many_arguments)]
pub(super) fn norm(
    kind: NormKind,
    x: Operand<'_>,
    weight: Option<Operand<'_>>,
    bias: Option<Operand<'_>>,
    [rows, cols]: [usize; 2],
    eps: f32,
    act: Option<UnaryOp>,
    out: Operand<'_>,
) -> Result<()> {
    let xs = read_guard(x.buf)?;
    let (wg, bg) = (weight.map(|w| read_guard(w.buf)).transpose()?, bias.map(|b| read_guard(b.buf)).transpose()?);
    let mut os = write_guard(out.buf)?;
    let xf: &[f32] = &bytemuck::cast_slice(&xs)[x.layout.offset..x.layout.offset + rows * cols];
    let (w, b) = (row_of(&wg, weight, cols), row_of(&bg, bias, cols));
    let of: &mut [f32] = bytemuck::cast_slice_mut(out_words(&mut os, &out));
    let n = cols as f64;
    of.par_chunks_mut(cols).zip(xf.par_chunks(cols)).for_each(|(o, row)| {
        let mean = if kind == NormKind::Layer { sum_f64(row) / n } else { 0.0 };
        let ss: f64 = row.iter().map(|&v| (f64::from(v) - mean) * (f64::from(v) - mean)).sum();
        let inv = 1.0 / (ss / n + f64::from(eps)).sqrt();
        for (j, (o, &v)) in o.iter_mut().zip(row).enumerate() {
            let mut y = ((f64::from(v) - mean) * inv) as f32;
            if let Some(w) = w {
                y *= w[j];
            }
            if let Some(b) = b {
                y += b[j];
            }
            *o = act.map_or(y, |f| f.eval(y));
        }
    });
    Ok(())
}
