//! Scaled dot-product attention, one query row per task: scores in f64, softmax, weighted sum.

use rayon::prelude::*;

use super::{out_words, read_guard, write_guard};
use crate::layout::Layout;
use crate::ops::Operand;
use crate::Result;

/// Offset of `[b, h, i, j]` in a rank-4 view.
fn at(l: &Layout, idx: [usize; 4]) -> usize {
    l.offset + idx.iter().zip(&l.strides).map(|(i, s)| i * s).sum::<usize>()
}

pub(super) fn attention(
    [q, k, v]: [Operand<'_>; 3],
    mask: Option<Operand<'_>>,
    out: Operand<'_>,
    [_b, h, lq, lk, d, dv]: [usize; 6],
    scale: f32,
    causal: bool,
) -> Result<()> {
    let (qg, kg, vg) = (read_guard(q.buf)?, read_guard(k.buf)?, read_guard(v.buf)?);
    let mg = mask.map(|m| read_guard(m.buf)).transpose()?;
    let mut os = write_guard(out.buf)?;
    let (qf, kf, vf): (&[f32], &[f32], &[f32]) = (bytemuck::cast_slice(&qg), bytemuck::cast_slice(&kg), bytemuck::cast_slice(&vg));
    let mf: Option<&[f32]> = mg.as_ref().map(|g| bytemuck::cast_slice(g));
    let of: &mut [f32] = bytemuck::cast_slice_mut(out_words(&mut os, &out));
    of.par_chunks_mut(dv.max(1)).enumerate().for_each(|(row, o)| {
        let (bh, i) = (row / lq, row % lq);
        let (b, hh) = (bh / h, bh % h);
        let keys = if causal { lk.min(i + 1) } else { lk };
        let scores: Vec<f64> = (0..keys)
            .map(|j| {
                let dot: f64 = (0..d).map(|t| f64::from(qf[at(q.layout, [b, hh, i, t])]) * f64::from(kf[at(k.layout, [b, hh, j, t])])).sum();
                let s = dot * f64::from(scale);
                match (mf, &mask) {
                    (Some(m), Some(mo)) => s + f64::from(m[at(mo.layout, [b, hh, i, j])]),
                    _ => s,
                }
            })
            .collect();
        let max = scores.iter().copied().fold(f64::NEG_INFINITY, |m, s| if s.is_nan() || m.is_nan() { f64::NAN } else { m.max(s) });
        let weights: Vec<f64> = scores.iter().map(|s| if max == f64::NEG_INFINITY { 0.0 } else { (s - max).exp() }).collect();
        let total: f64 = weights.iter().sum();
        for (c, o) in o.iter_mut().enumerate() {
            let acc: f64 = weights.iter().enumerate().map(|(j, w)| w * f64::from(vf[at(v.layout, [b, hh, j, c])])).sum();
            *o = (acc / total) as f32;
        }
    });
    Ok(())
}
