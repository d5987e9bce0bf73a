//! Dense convolutions (several input channels to each output) computed directly over the
//! group's input planes split by stride phase (see `phases`), with no im2col matrix.
//!
//! In a split plane the input words of neighbouring outputs lie next to each other, for every
//! kernel tap (outputs `width` to a row, the columns past `ow` computed and dropped). So a
//! register tile of `R` output channels by `B` blocks of [`LANES`] outputs adds, per input
//! channel and tap, `B` vector loads times `R` broadcast weights: the product of a
//! `og x (cg * taps)` weight by an im2col matrix that is never written. Built for AVX-512
//! (8 x 3 tiles) and AVX2 (4 x 1), x86-64 only; other CPUs take the GEMM path.

use std::ops::Range;

use super::phases::{Phases, LANES};
use super::{finish, tiles, Columns, Conv2dGeometry, COLUMNS, GATHER_MIN};
use crate::base::par;
use crate::ops::common::math::{self, x86_twins, Simd};
use crate::UnaryOp;

/// One group's convolution on the direct path.
pub(super) struct Dense<'a> {
    /// The group's weights, `og x k` row-major (`k = cg * taps.len()`).
    w: &'a [f32],
    /// The group's biases, one per output channel.
    bias: Option<&'a [f32]>,
    /// The activation applied to each output.
    act: Option<UnaryOp>,
    /// Output channels and input channels of the group.
    og: usize,
    cg: usize,
    /// Where each kernel tap reads the first output's input in a split plane.
    taps: Vec<usize>,
    /// The split planes' layout.
    p: Phases,
    g: Conv2dGeometry,
    /// The build of the loops that runs (AVX-512 or AVX2).
    simd: Simd,
}

/// Fewest terms (`cg * taps`) of each output on the direct path: with fewer, storing each tile
/// costs more than its sums, and the GEMM path is faster (3 -> 16 channels, 3 x 3, stride 2,
/// 320 x 320: 0.33 ms by GEMM, 0.75 direct; with 147 terms, 7 x 7: 1.84 and 1.69).
const TERMS_MIN: usize = 128;

/// Most flat outputs computed per output kept, `[num, den]`: the columns past `ow` may be at
/// most a quarter of those computed (ResNet-50's `7 x 7` maps compute 64 for 49).
const FLAT_PER_KEPT: [usize; 2] = [4, 3];

impl<'a> Dense<'a> {
    /// The direct path for a group of `g` with weights `w` (`og x k`), or `None` where the
    /// GEMM path does better: 1 x 1 kernels (each term's inputs lie in another plane, with no
    /// neighbouring taps to share their cache lines: ResNet-50's strided 1 x 1 took 1.30 ms
    /// directly, 1.14 by GEMM), outputs of few terms or few channels, CPUs without AVX2,
    /// split planes too large, or too many dropped columns.
    pub(super) fn new(
        g: &Conv2dGeometry,
        w: &'a [f32],
        bias: Option<&'a [f32]>,
        act: Option<UnaryOp>,
    ) -> Option<Dense<'a>> {
        let (cg, og) = (g.c / g.groups, g.o / g.groups);
        let pointwise = g.kh * g.kw == 1;
        let simd = math::simd();
        let short = cg * g.kh * g.kw < TERMS_MIN;
        if pointwise || short || simd == Simd::Base || og < 4 {
            return None;
        }
        let p = Phases::new(g)?;
        let [num, den] = FLAT_PER_KEPT;
        if p.flat * den > g.oh * g.ow * num {
            return None;
        }
        let taps = (0..g.kh * g.kw)
            .map(|t| p.offset(t / g.kw, t % g.kw, g))
            .collect::<Vec<_>>();
        let k = cg * taps.len();
        // Each tap's reads of the flat outputs stay in its channel's split plane (see
        // `Phases::new`); the loops rely on it.
        assert!(taps.iter().all(|&t| t + p.flat <= p.plane) && w.len() >= og * k);
        let g = *g;
        Some(Dense {
            w,
            bias,
            act,
            og,
            cg,
            taps,
            p,
            g,
            simd,
        })
    }

    /// The group's outputs from its input `planes` (`cg x h x w`) into `out` (`og` planes of
    /// `oh x ow`): the planes split into this thread's buffer (in parallel), then tiles of
    /// output channels and flat outputs in parallel.
    pub(super) fn run(&self, planes: &[f32], out: Columns, images: usize) {
        let (g, p) = (&self.g, &self.p);
        let mut split = COLUMNS.take();
        split.resize(self.cg * p.plane, 0.0);
        let per = GATHER_MIN.div_ceil(p.plane).clamp(1, self.cg);
        par::chunks_mut(&mut split, per * p.plane, |t, dst| {
            for (i, sub) in dst.chunks_exact_mut(p.plane).enumerate() {
                let plane = &planes[(t * per + i) * g.h * g.w..][..g.h * g.w];
                p.split(plane, sub, g, false);
            }
        });
        let k = self.cg * self.taps.len();
        let [height, width] = tiles(self.og, p.flat, k, images);
        let across = p.flat.div_ceil(width);
        par::tasks(self.og.div_ceil(height) * across, |t| {
            let (r0, c0) = (t / across * height, t % across * width);
            let rows = r0..(r0 + height).min(self.og);
            self.task(&split, rows, c0..(c0 + width).min(p.flat), out);
        });
        COLUMNS.set(split);
    }

    /// Output channels `rows` at flat outputs `cols` (a range of whole blocks).
    fn task(&self, split: &[f32], rows: Range<usize>, cols: Range<usize>, out: Columns) {
        assert!(split.len() >= self.cg * self.p.plane && rows.end <= self.og);
        assert!(cols.start % LANES == 0 && cols.end % LANES == 0 && cols.end <= self.p.flat);
        // SAFETY: the reads stay in `split` and `w` (asserted here and in `new`); the
        // outputs of `rows` at `cols` are this task's alone.
        match self.simd {
            Simd::Avx512 => unsafe { task_fused::avx512::<8, 3>(self, split, rows, cols, out) },
            Simd::Avx2 => unsafe { task_fused::avx2::<4, 1>(self, split, rows, cols, out) },
            Simd::Base => unreachable!("Dense::new refuses CPUs without AVX2"),
        }
    }

    /// [`Dense::task`]'s loops: column by column of `B` blocks (fewer at the end), each
    /// through all the rows, so that the column's inputs stay in cache while the weights
    /// stream past in order.
    ///
    /// # Safety
    /// [`Dense::task`]'s assertions hold, and no other task writes these outputs.
    #[inline(always)]
    unsafe fn task_any<const R: usize, const B: usize>(
        &self,
        split: &[f32],
        rows: Range<usize>,
        cols: Range<usize>,
        out: Columns,
    ) {
        let mut f = cols.start;
        while f < cols.end {
            // `B` blocks, else two, else one: the column computed is the one skipped.
            let blocks = match (cols.end - f) / LANES {
                left if left >= B => B,
                left => left.min(2),
            };
            // SAFETY: the caller's, for the column's blocks.
            unsafe {
                match blocks {
                    2 if B != 2 => self.column::<R, 2>(split, rows.clone(), f, out),
                    1 if B != 1 => self.column::<R, 1>(split, rows.clone(), f, out),
                    _ => self.column::<R, B>(split, rows.clone(), f, out),
                }
            }
            f += blocks * LANES;
        }
    }

    /// Channels `rows` at flat outputs `f..f + C * LANES`: `R` channels at a time, then one.
    ///
    /// # Safety
    /// As [`Dense::task_any`], and the blocks lie in the task's columns.
    #[inline(always)]
    unsafe fn column<const R: usize, const C: usize>(
        &self,
        split: &[f32],
        rows: Range<usize>,
        f: usize,
        out: Columns,
    ) {
        let whole = rows.start + rows.len() / R * R;
        for oc in (rows.start..whole).step_by(R) {
            // SAFETY: the caller's.
            let mut sums = unsafe { self.sums::<R, C>(split, oc, f) };
            self.store(
                sums.as_flattened_mut().as_flattened_mut(),
                C * LANES,
                [oc, f],
                out,
            );
        }
        for oc in whole..rows.end {
            // SAFETY: as above.
            let mut sums = unsafe { self.sums::<1, C>(split, oc, f) };
            self.store(
                sums.as_flattened_mut().as_flattened_mut(),
                C * LANES,
                [oc, f],
                out,
            );
        }
    }

    /// The sums of channels `oc..oc + R` at flat outputs `f..f + B * LANES`: the bias plus,
    /// over the input channels and taps, the weight times the split plane's word, held in
    /// registers throughout.
    ///
    /// # Safety
    /// As [`Dense::task_any`], and the block lies in the task's columns.
    #[inline(always)]
    unsafe fn sums<const R: usize, const B: usize>(
        &self,
        split: &[f32],
        oc: usize,
        f: usize,
    ) -> [[[f32; LANES]; B]; R] {
        let (taps, k) = (self.taps.len(), self.cg * self.taps.len());
        let mut acc: [[[f32; LANES]; B]; R] =
            std::array::from_fn(|r| [[self.bias.map_or(0.0, |b| b[oc + r]); LANES]; B]);
        let (x, w) = (split.as_ptr(), self.w.as_ptr());
        for ci in 0..self.cg {
            let (base, wrow) = (ci * self.p.plane + f, oc * k + ci * taps);
            for (t, &at) in self.taps.iter().enumerate() {
                // SAFETY: `at + f + B * LANES` lies in channel ci's split plane (`new`'s
                // assertion), and row oc + R - 1 of `w` in its `og * k` words.
                let v: [[f32; LANES]; B] = std::array::from_fn(|b| unsafe {
                    x.add(base + at + b * LANES)
                        .cast::<[f32; LANES]>()
                        .read_unaligned()
                });
                for (r, acc) in acc.iter_mut().enumerate() {
                    // SAFETY: as above.
                    let wv = unsafe { *w.add(wrow + r * k + t) };
                    for (acc, v) in acc.iter_mut().zip(&v) {
                        for (a, &x) in acc.iter_mut().zip(v) {
                            *a = math::madd::<true>(wv, x, *a);
                        }
                    }
                }
            }
        }
        acc
    }

    /// Writes a tile's `sums` (channels from `oc`, `n` flat outputs each from `f`) to the
    /// output planes, activated, dropping the columns past `ow`.
    #[inline(always)]
    fn store(&self, sums: &mut [f32], n: usize, [oc, f]: [usize; 2], out: Columns) {
        finish(sums, 0.0, self.act);
        let (width, ow, plane) = (self.p.width, self.g.ow, self.g.oh * self.g.ow);
        for (r, row) in sums.chunks_exact(n).enumerate() {
            let mut at = f;
            while at < f + n {
                let (y, x) = (at / width, at % width);
                let next = (at - x + width).min(f + n);
                if x < ow && y < self.g.oh {
                    let run = &row[at - f..][..(next - at).min(ow - x)];
                    let dst = out.at((oc + r) * plane + y * ow + x);
                    // SAFETY: output channel oc + r at (y, x..) is this task's alone, and the
                    // run stays in the row (`x + run.len() <= ow`).
                    unsafe { std::ptr::copy_nonoverlapping(run.as_ptr(), dst, run.len()) };
                }
                at = next;
            }
        }
    }
}

x86_twins! {
    /// [`Dense::task_any`] with fused multiply-adds.
    fn task_fused<const R: usize, const B: usize>(
        d: &Dense<'_>,
        split: &[f32],
        rows: Range<usize>,
        cols: Range<usize>,
        out: Columns,
    ) {
        // SAFETY: the caller's.
        unsafe { d.task_any::<R, B>(split, rows, cols, out) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::common::cpu::SharedOut;

    /// `act(conv + bias)` of one image in f64, output by output.
    fn reference(g: &Conv2dGeometry, x: &[f32], w: &[f32], bias: &[f32]) -> Vec<f64> {
        let (cg, og) = (g.c / g.groups, g.o / g.groups);
        let mut out = vec![0.0; g.o * g.oh * g.ow];
        for (i, v) in out.iter_mut().enumerate() {
            let (oc, oy, ox) = (i / (g.oh * g.ow), i / g.ow % g.oh, i % g.ow);
            let mut acc = f64::from(bias[oc]);
            for j in 0..cg * g.kh * g.kw {
                let (cj, ky, kx) = (j / (g.kh * g.kw), j / g.kw % g.kh, j % g.kw);
                let iy = (oy * g.stride[0] + ky * g.dilation[0]).checked_sub(g.padding[0]);
                let ix = (ox * g.stride[1] + kx * g.dilation[1]).checked_sub(g.padding[1]);
                if let (Some(iy), Some(ix)) = (iy.filter(|&v| v < g.h), ix.filter(|&v| v < g.w)) {
                    let at = ((oc / og * cg + cj) * g.h + iy) * g.w + ix;
                    acc += f64::from(x[at]) * f64::from(w[oc * cg * g.kh * g.kw + j]);
                }
            }
            *v = acc.max(0.0);
        }
        out
    }

    /// Both builds' tiles (AVX-512's 8 x 3 and AVX2's 4 x 1, where the CPU has them) against
    /// an f64 sum: 13 channels (8 + 5 and 4 + 4 + 4 + 1), a strided, dilated, padded 3 x 3
    /// kernel whose flat outputs end in tiles of 2 and 1 blocks, poisoned outputs.
    #[test]
    fn both_builds_match_an_f64_sum() {
        let (c, o, h, w) = (15, 13, 23, 38);
        let g = Conv2dGeometry {
            n: 1,
            c,
            h,
            w,
            o,
            kh: 3,
            kw: 3,
            oh: 21,
            ow: 19,
            stride: [1, 2],
            padding: [1, 1],
            pad_end: [1, 1],
            dilation: [2, 1],
            groups: 1,
        };
        let mut seed = 7u32;
        let mut next = move || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1 << 24) as f32 * 2.0 - 1.0
        };
        let x: Vec<f32> = (0..c * h * w).map(|_| next()).collect();
        let wt: Vec<f32> = (0..o * c * 9).map(|_| next()).collect();
        let bias: Vec<f32> = (0..o).map(|_| next()).collect();
        let want = reference(&g, &x, &wt, &bias);
        let builds = [(Simd::Avx512, "avx512f"), (Simd::Avx2, "avx2")];
        let mut ran = 0;
        for (simd, feature) in builds {
            if feature == "avx512f" && !std::arch::is_x86_feature_detected!("avx512f")
                || !std::arch::is_x86_feature_detected!("avx2")
            {
                continue;
            }
            let Some(mut d) = Dense::new(&g, &wt, Some(&bias), Some(UnaryOp::Relu)) else {
                panic!("the direct path refused {g:?}");
            };
            d.simd = simd;
            let mut out = vec![f32::NAN; o * g.oh * g.ow];
            d.run(&x, SharedOut(out.as_mut_ptr()), 1);
            for (i, (&got, &want)) in out.iter().zip(&want).enumerate() {
                let close = (f64::from(got) - want).abs() <= 1e-5 * (1.0 + want.abs());
                assert!(close, "{feature}: output {i} is {got}, not {want}");
            }
            ran += 1;
        }
        assert!(ran > 0 || math::simd() == Simd::Base, "no build ran");
    }
}
