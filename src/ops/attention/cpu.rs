//! Scaled dot-product attention in blocks of query rows: `S = Q K^T` and `O = P V` by SGEMM,
//! a softmax per row in between (sums in f64). Only a `[block, lk]` slice of the scores
//! exists at a time; blocks of every (batch, head) run in parallel.

use crate::base::par::*;

use super::Attention;
use crate::base::layout::Layout;
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::{check_within, out_words, sgemm};
use crate::ops::common::math;
use crate::Result;

/// Query rows per block.
const BLOCK: usize = 128;

/// Offset of `[b, h, i, j]` in a rank-4 view.
fn at(l: &Layout, idx: [usize; 4]) -> usize {
    l.offset
        + idx
            .iter()
            .zip(&l.strides)
            .map(|(i, s)| i * s)
            .sum::<usize>()
}

pub(super) fn attention(op: &Attention<'_>) -> Result<()> {
    let (q, k, v, mask, out, scale, causal) =
        (op.q, op.k, op.v, op.mask, op.out, op.scale, op.causal);
    let [_b, h, lq, lk, d, dv] = op.dims;
    let (qg, kg, vg) = (read_guard(q.buf)?, read_guard(k.buf)?, read_guard(v.buf)?);
    let mg = mask.map(|m| read_guard(m.buf)).transpose()?;
    let mut os = write_guard(out.buf)?;
    let (qf, kf, vf): (&[f32], &[f32], &[f32]) = (
        bytemuck::cast_slice(&qg),
        bytemuck::cast_slice(&kg),
        bytemuck::cast_slice(&vg),
    );
    let mf: Option<&[f32]> = mg.as_ref().map(|g| bytemuck::cast_slice(g));
    let of: &mut [f32] = bytemuck::cast_slice_mut(out_words(&mut os, &out));
    // The mask too: its rows are indexed below by the offsets its layout gives.
    let mut views = vec![(q.layout, qf), (k.layout, kf), (v.layout, vf)];
    views.extend(mask.zip(mf).map(|(m, mf)| (m.layout, mf)));
    check_within("attention", &views)?;
    // Tasks capture layouts and slices only (buffers are not Send on every target).
    let (ql, kl, vl, ml) = (q.layout, k.layout, v.layout, mask.map(|m| m.layout));
    // Tasks: one block of query rows of one (batch, head); its rows of the output.
    let blocks_per_head = lq.div_ceil(BLOCK);
    let tasks = block_tasks(of, lq, dv, blocks_per_head);
    // Each worker reuses its score and probability buffers from task to task.
    tasks.into_par_iter().for_each_init(
        || (Vec::new(), Vec::new()),
        |(s, p), (task, o)| {
            let (bh, i0) = (task / blocks_per_head, (task % blocks_per_head) * BLOCK);
            let (b, hh) = (bh / h, bh % h);
            let rows = o.len() / dv.max(1);
            let keys = if causal { lk.min(i0 + rows) } else { lk };
            // Every score is written below: by the GEMM, or as 0 when d = 0.
            s.resize(rows * keys.max(1), 0.0);
            p.resize(s.len(), 0.0);
            if d == 0 {
                s.fill(0.0);
            } else if keys > 0 {
                let (q_at, k_at) = (at(ql, [b, hh, i0, 0]), at(kl, [b, hh, 0, 0]));
                let (q_strides, kt_strides) = (
                    [ql.strides[2] as isize, ql.strides[3] as isize],
                    [kl.strides[3] as isize, kl.strides[2] as isize],
                );
                // SAFETY: [rows, d] of q from row i0 and [keys, d] of k lie inside their layouts,
                // which `check_within` proved inside `qf` and `kf`; s holds rows x keys.
                unsafe {
                    sgemm(
                        rows,
                        keys,
                        d,
                        scale,
                        qf.as_ptr().add(q_at),
                        q_strides,
                        kf.as_ptr().add(k_at),
                        kt_strides,
                        s.as_mut_ptr(),
                        keys,
                        1,
                    )
                };
            }
            // Query row i's mask: its elements, its first key's offset and the keys' stride.
            let mask = match (mf, ml) {
                (Some(m), Some(ml)) => {
                    Some(move |i: usize| (m, at(ml, [b, hh, i, 0]), ml.strides[3]))
                }
                _ => None,
            };
            probabilities(s, p, rows, keys, i0, causal, mask);
            if keys == 0 || dv == 0 {
                o.fill(0.0);
                return;
            }
            // SAFETY: `check_within` proved v's layout inside `vf`.
            unsafe { weighted_values(o, p, [rows, keys, dv], vf, vl, [b, hh]) };
        },
    );
    Ok(())
}

/// `o` = `p` (`rows` x `keys` probabilities) times the [`keys`, `dv`] values of (batch, head)
/// `bh` of v.
///
/// # Safety
///
/// v's layout `vl` lies inside `vf`.
unsafe fn weighted_values(
    o: &mut [f32],
    p: &[f32],
    [rows, keys, dv]: [usize; 3],
    vf: &[f32],
    vl: &Layout,
    [b, hh]: [usize; 2],
) {
    let v_strides = [vl.strides[2] as isize, vl.strides[3] as isize];
    // SAFETY: p is rows x keys; [keys, dv] of v lies inside its layout, which the caller
    // guarantees inside `vf`; o holds rows x dv.
    unsafe {
        sgemm(
            rows,
            dv,
            keys,
            1.0,
            p.as_ptr(),
            [keys as isize, 1],
            vf.as_ptr().add(at(vl, [b, hh, 0, 0])),
            v_strides,
            o.as_mut_ptr(),
            dv,
            1,
        )
    };
}

/// The tasks of an output of `lq` rows of `dv` per (batch, head): one block of [`BLOCK`] query
/// rows of one (batch, head) each, numbered, with its rows of the output.
fn block_tasks(
    of: &mut [f32],
    lq: usize,
    dv: usize,
    blocks_per_head: usize,
) -> Vec<(usize, &mut [f32])> {
    of.chunks_mut(lq * dv)
        .enumerate()
        .flat_map(|(bh, head)| {
            head.chunks_mut(BLOCK * dv)
                .enumerate()
                .map(move |(blk, o)| (bh * blocks_per_head + blk, o))
        })
        .collect()
}

/// The attention probabilities `p` of the `rows` score rows `s` (`keys` each) of query rows
/// `i0..`: the mask added (`mask(i)` gives row i's elements, offset and key stride, which
/// `check_within` proved in bounds), the keys a causal row does not see left out, softmax
/// over the rest; a row whose every key is masked out gets probabilities 0 (ONNX).
fn probabilities<'a>(
    s: &mut [f32],
    p: &mut [f32],
    rows: usize,
    keys: usize,
    i0: usize,
    causal: bool,
    mask: Option<impl Fn(usize) -> (&'a [f32], usize, usize)>,
) {
    for (r, (row, prob)) in s
        .chunks_mut(keys.max(1))
        .zip(p.chunks_mut(keys.max(1)))
        .enumerate()
        .take(rows)
    {
        let i = i0 + r;
        if let Some(mask) = mask.as_ref().filter(|_| keys > 0) {
            let (m, at, step) = mask(i);
            let row = &mut row[..keys];
            if step == 1 {
                row.iter_mut().zip(&m[at..]).for_each(|(x, v)| *x += v);
            } else {
                row.iter_mut()
                    .enumerate()
                    .for_each(|(j, x)| *x += m[at + j * step]);
            }
        }
        let visible = if causal { keys.min(i + 1) } else { keys };
        // Every key masked out: the row's output is 0 (ONNX).
        if row[..visible].iter().all(|&x| x == f32::NEG_INFINITY) {
            prob.fill(0.0);
            continue;
        }
        math::softmax(&row[..visible], &mut prob[..visible]);
        prob[visible..].fill(0.0);
    }
}
