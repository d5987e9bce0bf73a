//! 2-D convolution as im2col + GEMM per image and group (images in parallel, or the GEMM
//! split across threads when images are few), its transpose (output rows in parallel, each
//! gathering the input rows that land on it), and 2-D pooling (channel planes in parallel).

use crate::base::par::*;

use super::{Conv2d, Conv2dGeometry, Pool2d};
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::{out_words, sgemm};
use crate::{Result, UnaryOp};

/// Input row or column of output position `o`, kernel tap `k`, or `None` in the padding.
fn input_index(
    o: usize,
    k: usize,
    stride: usize,
    dilation: usize,
    pad: usize,
    extent: usize,
) -> Option<usize> {
    (o * stride + k * dilation)
        .checked_sub(pad)
        .filter(|&i| i < extent)
}

/// Most elements of one im2col block: output positions are taken in tiles so that
/// `k x tile` stays within it (16 MiB), whatever the geometry.
const COL_BLOCK: usize = 1 << 22;

/// Row `r` = (channel, ky, kx) of the im2col matrix of one group over the output positions
/// `positions`: the input value under that tap for each, 0 in the padding.
fn im2col_row(
    planes: &[f32],
    r: usize,
    positions: std::ops::Range<usize>,
    mut dst: &mut [f32],
    g: &Conv2dGeometry,
) {
    let (ci, ky, kx) = (r / (g.kh * g.kw), r / g.kw % g.kh, r % g.kw);
    let plane = &planes[ci * g.h * g.w..][..g.h * g.w];
    let mut p = positions.start;
    while p < positions.end {
        let (oy, ox0) = (p / g.ow, p % g.ow);
        let ox1 = g.ow.min(ox0 + (positions.end - p));
        let (run, rest) = dst.split_at_mut(ox1 - ox0);
        match input_index(oy, ky, g.stride[0], g.dilation[0], g.padding[0], g.h) {
            Some(iy) => tap_run(&plane[iy * g.w..][..g.w], kx, ox0, run, g),
            None => run.fill(0.0),
        }
        (dst, p) = (rest, p + (ox1 - ox0));
    }
}

/// Output columns `ox0..ox0 + run.len()` of one output row under kernel column `kx`, read
/// from input row `in_row`. Unit strides copy the valid run whole.
fn tap_run(in_row: &[f32], kx: usize, ox0: usize, run: &mut [f32], g: &Conv2dGeometry) {
    if g.stride[1] != 1 {
        for (i, v) in run.iter_mut().enumerate() {
            *v = input_index(ox0 + i, kx, g.stride[1], g.dilation[1], g.padding[1], g.w)
                .map_or(0.0, |ix| in_row[ix]);
        }
        return;
    }
    // ix = ox + shift - pad lies in the row for ox in [lo, hi).
    let (shift, pad, ox1) = (kx * g.dilation[1], g.padding[1], ox0 + run.len());
    let lo = pad.saturating_sub(shift).clamp(ox0, ox1);
    let hi = (g.w + pad).saturating_sub(shift).clamp(lo, ox1);
    run[..lo - ox0].fill(0.0);
    if lo < hi {
        run[lo - ox0..hi - ox0].copy_from_slice(&in_row[lo + shift - pad..hi + shift - pad]);
    }
    run[hi - ox0..].fill(0.0);
}

/// The output of one (image, group) as `og x cols` row-major, shared by the tasks that write
/// its disjoint column tiles.
#[derive(Clone, Copy)]
struct Columns(*mut f32);

// SAFETY: each task writes only the columns of its own tile (see `conv2d`).
unsafe impl Send for Columns {}
// SAFETY: as above.
unsafe impl Sync for Columns {}

impl Columns {
    /// Column `c` of row 0 (a method, so closures capture the whole `Send` wrapper).
    fn at(self, c: usize) -> *mut f32 {
        self.0.wrapping_add(c)
    }
}

/// Output positions per task: at most a `COL_BLOCK` im2col block, and when images are fewer
/// than threads, small enough to give each thread about four tiles (each task builds its
/// im2col block in its own cache and runs a single-thread GEMM on it).
fn column_tile(k: usize, cols: usize, images: usize) -> usize {
    let threads = crate::base::par::current_num_threads();
    let tasks = if images >= threads { 1 } else { 4 * threads };
    cols.div_ceil(tasks)
        .next_multiple_of(16)
        .min(COL_BLOCK / k.max(1))
        .clamp(1, cols.max(1))
}

/// A convolution's f32 words: the input, the weight, the bias and the output, each from its
/// view's offset.
struct Words<'a> {
    x: &'a [f32],
    w: &'a [f32],
    bias: Option<&'a [f32]>,
    out: &'a mut [f32],
}

pub(super) fn conv2d(op: &Conv2d<'_>) -> Result<()> {
    let (x, weight, bias, out) = (op.x, op.weight, op.bias, op.out);
    let (xg, wg) = (read_guard(x.buf)?, read_guard(weight.buf)?);
    let bg = bias.map(|b| read_guard(b.buf)).transpose()?;
    let mut os = write_guard(out.buf)?;
    let xf: &[f32] = &bytemuck::cast_slice(&xg)[x.layout.offset..];
    let wf: &[f32] = &bytemuck::cast_slice(&wg)[weight.layout.offset..];
    let bf: Option<&[f32]> = bg
        .as_ref()
        .zip(bias)
        .map(|(g, b)| &bytemuck::cast_slice(g)[b.layout.offset..]);
    let of: &mut [f32] = bytemuck::cast_slice_mut(out_words(&mut os, &out));
    let words = Words {
        x: xf,
        w: wf,
        bias: bf,
        out: of,
    };
    if op.transposed {
        conv_transpose2d(op, words);
    } else {
        direct(op, words);
    }
    Ok(())
}

/// A convolution as im2col tiles times the weight, images and tiles in parallel.
fn direct(op: &Conv2d<'_>, words: Words<'_>) {
    let (act, g) = (op.act, op.geometry);
    let Words {
        x: xf,
        w: wf,
        bias: bf,
        out: of,
    } = words;
    let (cg, og) = (g.c / g.groups, g.o / g.groups);
    let (k, cols) = (cg * g.kh * g.kw, g.oh * g.ow);
    let tile = column_tile(k, cols, g.n);
    of.par_chunks_mut((g.o * cols).max(1))
        .enumerate()
        .for_each(|(nb, image)| {
            for grp in 0..g.groups {
                let planes = &xf[(nb * g.c + grp * cg) * g.h * g.w..][..cg * g.h * g.w];
                let w_group = &wf[grp * og * k..(grp + 1) * og * k];
                let c_group = Columns(image[grp * og * cols..(grp + 1) * og * cols].as_mut_ptr());
                (0..cols.div_ceil(tile))
                    .into_par_iter()
                    .for_each_init(Vec::new, |col, t| {
                        let (c0, width) = (t * tile, tile.min(cols - t * tile));
                        col.resize(k * width, 0.0);
                        for (r, dst) in col.chunks_mut(width).enumerate() {
                            im2col_row(planes, r, c0..c0 + width, dst, &g);
                        }
                        // SAFETY: w_group is og x k and col k x width, row-major; columns c0..c0 +
                        // width of the og x cols output block (leading dimension cols) are this
                        // task's alone.
                        unsafe {
                            sgemm(
                                og,
                                width,
                                k,
                                1.0,
                                w_group.as_ptr(),
                                [k as isize, 1],
                                col.as_ptr(),
                                [width as isize, 1],
                                c_group.at(c0),
                                cols,
                                1,
                            )
                        };
                    });
            }
            if bf.is_some() || act.is_some() {
                // Channels in parallel: one image's epilogue is the whole output at batch 1.
                (image.par_chunks_mut(cols.max(1)).enumerate())
                    .for_each(|(oc, row)| finish(row, bf.map_or(0.0, |b| b[oc]), act));
            }
        });
}

/// The epilogue of one output channel's `values`: `act(v + bias)`.
fn finish(values: &mut [f32], bias: f32, act: Option<UnaryOp>) {
    for v in values {
        let y = *v + bias;
        *v = act.map_or(y, |f| f.eval(y));
    }
}

/// Input position that output `o` reads through tap `k` of a transposed convolution:
/// `(o + pad - k * dilation) / stride` where that divides exactly and lies in the input.
fn transposed_index(
    o: usize,
    k: usize,
    stride: usize,
    dilation: usize,
    pad: usize,
    extent: usize,
) -> Option<usize> {
    let t = (o + pad).checked_sub(k * dilation)?;
    (t % stride == 0)
        .then_some(t / stride)
        .filter(|&i| i < extent)
}

/// A transposed convolution, output rows in parallel: each row adds up, input channel by
/// channel and kernel row by row, the input rows that land on it.
fn conv_transpose2d(op: &Conv2d<'_>, words: Words<'_>) {
    let (act, g) = (op.act, op.geometry);
    let Words {
        x: xf,
        w: wf,
        bias: bf,
        out: of,
    } = words;
    let (cg, og, taps) = (g.c / g.groups, g.o / g.groups, g.kh * g.kw);
    of.par_chunks_mut(g.ow.max(1))
        .enumerate()
        .for_each(|(r, row)| {
            let (oy, oc, nb) = (r % g.oh, r / g.oh % g.o, r / (g.oh * g.o));
            let (grp, j) = (oc / og, oc % og);
            row.fill(0.0);
            for ci in grp * cg..(grp + 1) * cg {
                let plane = &xf[(nb * g.c + ci) * g.h * g.w..][..g.h * g.w];
                let kernel = &wf[(ci * og + j) * taps..][..taps];
                for ky in 0..g.kh {
                    let (s, d, pad) = (g.stride[0], g.dilation[0], g.padding[0]);
                    if let Some(iy) = transposed_index(oy, ky, s, d, pad, g.h) {
                        let in_row = &plane[iy * g.w..][..g.w];
                        scatter_row(in_row, &kernel[ky * g.kw..][..g.kw], row, &g);
                    }
                }
            }
            finish(row, bf.map_or(0.0, |b| b[oc]), act);
        });
}

/// Adds input row `in_row` through kernel row `taps` to output row `row`: input column `ix`
/// lands under tap `kx` on output column `ix * stride + kx * dilation - left`.
fn scatter_row(in_row: &[f32], taps: &[f32], row: &mut [f32], g: &Conv2dGeometry) {
    let (stride, dilation, left) = (g.stride[1], g.dilation[1], g.padding[1]);
    for (kx, &wv) in taps.iter().enumerate() {
        let shift = kx * dilation;
        // The first input column whose output column is not cropped on the left.
        let first = left.saturating_sub(shift).div_ceil(stride);
        for (ix, &xv) in in_row.iter().enumerate().skip(first) {
            match row.get_mut(ix * stride + shift - left) {
                Some(o) => *o += wv * xv,
                None => break,
            }
        }
    }
}

/// The divisor of an average along one axis at output `o` (see `Pool2d::code`): the
/// window's taps `[k, stride, dilation]` within the padded input (`code` 1) or within the
/// input (`code` 2).
fn pool_count(
    code: u32,
    o: usize,
    [k, stride, dilation]: [usize; 3],
    pad: [usize; 2],
    n: usize,
) -> usize {
    // Padded coordinates: the input spans [pad[0], pad[0] + n), the padded input [0, n + both).
    let start = o * stride;
    let (low, high) = if code == 1 {
        (0, n + pad[0] + pad[1])
    } else {
        (pad[0], pad[0] + n)
    };
    (0..k)
        .map(|j| start + j * dilation)
        .filter(|&i| low <= i && i < high)
        .count()
}

pub(super) fn pool2d(op: &Pool2d<'_>) -> Result<()> {
    let (code, x, out, g) = (op.code(), op.x, op.out, op.geometry);
    let xg = read_guard(x.buf)?;
    let mut os = write_guard(out.buf)?;
    let xf: &[f32] = &bytemuck::cast_slice(&xg)[x.layout.offset..];
    let of: &mut [f32] = bytemuck::cast_slice_mut(out_words(&mut os, &out));
    of.par_chunks_mut((g.oh * g.ow).max(1))
        .enumerate()
        .for_each(|(p, o)| {
            let plane = &xf[p * g.h * g.w..][..g.h * g.w];
            for oy in 0..g.oh {
                let ys = [g.kh, g.stride[0], g.dilation[0]];
                let rows = pool_count(code, oy, ys, [g.padding[0], g.pad_end[0]], g.h);
                for ox in 0..g.ow {
                    let taps = (0..g.kh)
                        .flat_map(|ky| (0..g.kw).map(move |kx| (ky, kx)))
                        .filter_map(|(ky, kx)| {
                            let iy =
                                input_index(oy, ky, g.stride[0], g.dilation[0], g.padding[0], g.h)?;
                            let ix =
                                input_index(ox, kx, g.stride[1], g.dilation[1], g.padding[1], g.w)?;
                            Some(plane[iy * g.w + ix])
                        });
                    o[oy * g.ow + ox] = if code == 0 {
                        taps.fold(f32::NEG_INFINITY, |m, v| {
                            if m.is_nan() || v.is_nan() {
                                f32::NAN
                            } else {
                                m.max(v)
                            }
                        })
                    } else {
                        let xs = [g.kw, g.stride[1], g.dilation[1]];
                        let cols = pool_count(code, ox, xs, [g.padding[1], g.pad_end[1]], g.w);
                        taps.sum::<f32>() / (rows * cols) as f32
                    };
                }
            }
        });
    Ok(())
}
