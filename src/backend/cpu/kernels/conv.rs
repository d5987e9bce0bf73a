//! 2-D convolution as im2col + GEMM per image and group (images in parallel, or the GEMM
//! split across threads when images are few), and 2-D pooling (channel planes in parallel).

use rayon::prelude::*;

use super::{out_words, read_guard, write_guard};
use crate::ops::{Conv2dGeometry, Operand, PoolKind, UnaryOp};
use crate::Result;

/// Input row or column of output position `o`, kernel tap `k`, or `None` in the padding.
fn input_index(o: usize, k: usize, stride: usize, dilation: usize, pad: usize, extent: usize) -> Option<usize> {
    (o * stride + k * dilation).checked_sub(pad).filter(|&i| i < extent)
}

pub(super) fn conv2d(x: Operand<'_>, weight: Operand<'_>, bias: Option<Operand<'_>>, act: Option<UnaryOp>, out: Operand<'_>, g: Conv2dGeometry) -> Result<()> {
    let (xg, wg) = (read_guard(x.buf)?, read_guard(weight.buf)?);
    let bg = bias.map(|b| read_guard(b.buf)).transpose()?;
    let mut os = write_guard(out.buf)?;
    let xf: &[f32] = &bytemuck::cast_slice(&xg)[x.layout.offset..];
    let wf: &[f32] = &bytemuck::cast_slice(&wg)[weight.layout.offset..];
    let bf: Option<&[f32]> = bg.as_ref().zip(bias).map(|(g, b)| &bytemuck::cast_slice(g)[b.layout.offset..]);
    let of: &mut [f32] = bytemuck::cast_slice_mut(out_words(&mut os, &out));
    let (cg, og) = (g.c / g.groups, g.o / g.groups);
    let (k, cols) = (cg * g.kh * g.kw, g.oh * g.ow);
    let threads = rayon::current_num_threads();
    let gemm_threads = if g.n >= threads { 1 } else { threads };
    of.par_chunks_mut((g.o * cols).max(1)).enumerate().for_each(|(nb, image)| {
        let mut col = vec![0.0f32; k * cols];
        for grp in 0..g.groups {
            for ci in 0..cg {
                let plane = &xf[(nb * g.c + grp * cg + ci) * g.h * g.w..][..g.h * g.w];
                for ky in 0..g.kh {
                    for kx in 0..g.kw {
                        let r = (ci * g.kh + ky) * g.kw + kx;
                        let dst = &mut col[r * cols..(r + 1) * cols];
                        for oy in 0..g.oh {
                            let iy = input_index(oy, ky, g.stride[0], g.dilation[0], g.padding[0], g.h);
                            for ox in 0..g.ow {
                                let ix = input_index(ox, kx, g.stride[1], g.dilation[1], g.padding[1], g.w);
                                dst[oy * g.ow + ox] = match (iy, ix) {
                                    (Some(iy), Some(ix)) => plane[iy * g.w + ix],
                                    _ => 0.0,
                                };
                            }
                        }
                    }
                }
            }
            let w_group = &wf[grp * og * k..(grp + 1) * og * k];
            let c_group = &mut image[grp * og * cols..(grp + 1) * og * cols];
            // SAFETY: the slices hold og x k, k x cols and og x cols row-major matrices.
            unsafe { super::sgemm(og, cols, k, 1.0, w_group.as_ptr(), [k as isize, 1], col.as_ptr(), [cols as isize, 1], c_group.as_mut_ptr(), gemm_threads) };
        }
        if bf.is_some() || act.is_some() {
            for (oc, row) in image.chunks_mut(cols.max(1)).enumerate() {
                let b = bf.map_or(0.0, |b| b[oc]);
                for v in row {
                    let y = *v + b;
                    *v = act.map_or(y, |f| f.eval(y));
                }
            }
        }
    });
    Ok(())
}

pub(super) fn pool2d(kind: PoolKind, x: Operand<'_>, out: Operand<'_>, g: Conv2dGeometry) -> Result<()> {
    let xg = read_guard(x.buf)?;
    let mut os = write_guard(out.buf)?;
    let xf: &[f32] = &bytemuck::cast_slice(&xg)[x.layout.offset..];
    let of: &mut [f32] = bytemuck::cast_slice_mut(out_words(&mut os, &out));
    let window = (g.kh * g.kw) as f32;
    of.par_chunks_mut((g.oh * g.ow).max(1)).enumerate().for_each(|(p, o)| {
        let plane = &xf[p * g.h * g.w..][..g.h * g.w];
        for oy in 0..g.oh {
            for ox in 0..g.ow {
                let taps = (0..g.kh).flat_map(|ky| (0..g.kw).map(move |kx| (ky, kx))).filter_map(|(ky, kx)| {
                    let iy = input_index(oy, ky, g.stride[0], 1, g.padding[0], g.h)?;
                    let ix = input_index(ox, kx, g.stride[1], 1, g.padding[1], g.w)?;
                    Some(plane[iy * g.w + ix])
                });
                o[oy * g.ow + ox] = match kind {
                    PoolKind::Max => taps.fold(f32::NEG_INFINITY, |m, v| if m.is_nan() || v.is_nan() { f32::NAN } else { m.max(v) }),
                    PoolKind::Avg => taps.sum::<f32>() / window,
                };
            }
        }
    });
    Ok(())
}
