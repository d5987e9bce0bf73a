//! Layer / RMS normalisation of rows, statistics in f64, rows in parallel (strided rows
//! gathered one at a time).

use crate::base::par::*;

use super::{Norm, NormKind};
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::out_words;
use crate::ops::common::math::{sum_lanes, x86_run, x86_twins};
use crate::ops::Operand;
use crate::Result;

/// The columns of an optional `[cols]` operand.
fn row_of<'g>(
    words: &'g Option<std::sync::RwLockReadGuard<'_, Vec<u32>>>,
    o: Option<Operand<'_>>,
    cols: usize,
) -> Option<&'g [f32]> {
    let (g, o) = (words.as_ref()?, o?);
    Some(&bytemuck::cast_slice(g)[o.layout.offset..o.layout.offset + cols])
}

pub(super) fn norm(op: &Norm<'_>) -> Result<()> {
    let (kind, x, weight, bias, out) = (op.kind, op.x, op.weight, op.bias, op.out);
    let (rows, cols, eps, act) = (op.rows, op.cols, op.eps, op.act);
    let xs = read_guard(x.buf)?;
    let (wg, bg) = (
        weight.map(|w| read_guard(w.buf)).transpose()?,
        bias.map(|b| read_guard(b.buf)).transpose()?,
    );
    let mut os = write_guard(out.buf)?;
    let xf: &[f32] = &bytemuck::cast_slice(&xs)[x.layout.offset..];
    let (w, b) = (row_of(&wg, weight, cols), row_of(&bg, bias, cols));
    let of: &mut [f32] = bytemuck::cast_slice_mut(out_words(&mut os, &out));
    let (nb, steps) = (op.nb, op.x_steps);
    // Rows in place where they are the contiguous [rows, cols]; else each gathered.
    let contiguous =
        steps.col == 1 && (rows == 1 || (steps.b == cols && (steps.a == nb * cols || rows == nb)));
    of.par_chunks_mut(cols)
        .enumerate()
        .for_each_init(Vec::new, |src: &mut Vec<f32>, (r, o)| {
            let base = (r / nb) * steps.a + (r % nb) * steps.b;
            let row = if contiguous {
                &xf[r * cols..(r + 1) * cols]
            } else {
                src.clear();
                src.extend((0..cols).map(|j| xf[base + j * steps.col]));
                &src[..]
            };
            norm_row(kind, row, eps, o);
            if let Some(w) = w {
                o.iter_mut().zip(w).for_each(|(o, w)| *o *= w);
            }
            if let Some(b) = b {
                o.iter_mut().zip(b).for_each(|(o, b)| *o += b);
            }
            if let Some(f) = act {
                o.iter_mut().for_each(|o| *o = f.eval(*o));
            }
        });
    Ok(())
}

/// `o = (row - mean) / sqrt(variance + eps)` (RMS: `row / sqrt(mean square + eps)`), with the
/// statistics in f64, vectorised (AVX2 or AVX-512 where present).
fn norm_row(kind: NormKind, row: &[f32], eps: f32, o: &mut [f32]) {
    x86_run!(norm_row_wide(kind, row, eps, o));
    norm_row_any(kind, row, eps, o);
}

x86_twins! {
    /// [`norm_row`]'s wide builds.
    fn norm_row_wide(kind: NormKind, row: &[f32], eps: f32, o: &mut [f32]) {
        norm_row_any(kind, row, eps, o);
    }
}

#[inline(always)]
fn norm_row_any(kind: NormKind, row: &[f32], eps: f32, o: &mut [f32]) {
    let n = row.len() as f64;
    let mean = if kind == NormKind::Layer {
        sum_lanes(row) / n
    } else {
        0.0
    };
    let mut lanes = [0.0f64; 8];
    let mut chunks = row.chunks_exact(8);
    for c in &mut chunks {
        let Ok(c) = <&[f32; 8]>::try_from(c) else {
            continue;
        };
        for i in 0..8 {
            let d = f64::from(c[i]) - mean;
            lanes[i] += d * d;
        }
    }
    let tail: f64 = chunks
        .remainder()
        .iter()
        .map(|&v| (f64::from(v) - mean) * (f64::from(v) - mean))
        .sum();
    let inv = 1.0 / ((lanes.iter().sum::<f64>() + tail) / n + f64::from(eps)).sqrt();
    for (o, &v) in o.iter_mut().zip(row) {
        *o = ((f64::from(v) - mean) * inv) as f32;
    }
}
