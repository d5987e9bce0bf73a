//! Direct convolution over input planes split by stride phase: sub-plane (r, q) of a plane
//! holds the padded input at rows `a * sh + r` and columns `i * sw + q`, so every kernel tap
//! reads the outputs' inputs as one contiguous run, padding and strides included. Outputs are
//! computed `width` to a row (the columns past `ow` unused) in blocks of [`LANES`], each block
//! held in registers over all its taps: fused multiply-adds on the widest x86-64 build,
//! vectorised multiplies and adds elsewhere (wasm simd128 included).

use crate::ops::common::math::{self, x86_run, x86_twins};

use super::{place, valid_columns, Conv2dGeometry};

/// Outputs per block: one AVX-512 register, two AVX2 ones, four SSE2 or simd128 ones.
const LANES: usize = 16;

/// The layout of one input plane split by stride phase: `sh * sw` sub-planes of `rows x
/// width` words, each followed by slack so that every tap of the last block reads inside.
#[derive(Clone, Copy)]
pub(super) struct Phases {
    /// Rows of a sub-plane: the output rows and the kernel's extra span in row phases.
    rows: usize,
    /// Words of a sub-plane row, and of an output row in the flat outputs.
    pub width: usize,
    /// Words of one sub-plane with its slack.
    words: usize,
    /// Words of the whole split plane.
    pub plane: usize,
    /// Words of one channel's flat outputs, a multiple of `LANES`.
    pub flat: usize,
}

impl Phases {
    /// The layout for `g`, or `None` where the split plane would be much larger than the input
    /// and output planes (strides, padding or dilations far past the input).
    pub(super) fn new(g: &Conv2dGeometry) -> Option<Phases> {
        let extra =
            |k: usize, d: usize, s: usize| k.saturating_sub(1).checked_mul(d).map(|e| e / s);
        let width = g.ow.checked_add(extra(g.kw, g.dilation[1], g.stride[1])?)?;
        let rows = g.oh.checked_add(extra(g.kh, g.dilation[0], g.stride[0])?)?;
        let words = rows.checked_mul(width)?.checked_add(width + LANES)?;
        let plane = words.checked_mul(g.stride[0].checked_mul(g.stride[1])?)?;
        let flat = g.oh.checked_mul(width)?.next_multiple_of(LANES);
        let budget = (g.h * g.w).saturating_add(g.oh * g.ow).saturating_mul(4);
        (plane <= budget.saturating_add(1 << 12)).then_some(Phases {
            rows,
            width,
            words,
            plane,
            flat,
        })
    }

    /// Writes input `plane` (`h x w`) split into `dst` (`self.plane` words).
    pub(super) fn split(&self, plane: &[f32], dst: &mut [f32], g: &Conv2dGeometry) {
        let [sh, sw] = g.stride;
        for (s, sub) in dst.chunks_exact_mut(self.words).enumerate() {
            let (r, q) = (s / sw, s % sw);
            let (body, slack) = sub.split_at_mut(self.rows * self.width);
            slack.fill(0.0);
            // Column i holds padded column i * sw + q: the input under shift q, whose valid
            // columns are the same in every row.
            let span = valid_columns(q, self.width, g);
            for (a, row) in body.chunks_exact_mut(self.width).enumerate() {
                let iy = (a * sh + r)
                    .checked_sub(g.padding[0])
                    .filter(|&iy| iy < g.h);
                match iy {
                    Some(iy) => place(&plane[iy * g.w..][..g.w], span, 0, row, sw),
                    None => row.fill(0.0),
                }
            }
        }
    }

    /// Where tap (ky, kx) of the kernel reads the first output's input in a split plane.
    pub(super) fn offset(&self, ky: usize, kx: usize, g: &Conv2dGeometry) -> usize {
        let ([sh, sw], [dh, dw]) = (g.stride, g.dilation);
        let (r, a) = (ky * dh % sh, ky * dh / sh);
        let (q, i) = (kx * dw % sw, kx * dw / sw);
        (r * sw + q) * self.words + a * self.width + i
    }
}

/// One output channel's flat outputs `out` (a multiple of `LANES` long): position `f` is
/// `bias` plus, over `taps`, the tap's weight times `split[at + f]`.
pub(super) fn blocks(split: &[f32], taps: &[(usize, f32)], bias: f32, out: &mut [f32]) {
    x86_run!(blocks_fused(split, taps, bias, out));
    blocks_any::<false>(split, taps, bias, out);
}

x86_twins! {
    /// [`blocks`] with fused multiply-adds.
    fn blocks_fused(split: &[f32], taps: &[(usize, f32)], bias: f32, out: &mut [f32]) {
        blocks_any::<true>(split, taps, bias, out);
    }
}

/// The loop of [`blocks`]: each block's `LANES` sums stay in registers over the taps.
#[inline(always)]
fn blocks_any<const FUSED: bool>(split: &[f32], taps: &[(usize, f32)], bias: f32, out: &mut [f32]) {
    for (b, block) in out.chunks_exact_mut(LANES).enumerate() {
        let mut acc = [bias; LANES];
        for &(at, wv) in taps {
            let v = &split[at + b * LANES..][..LANES];
            for (a, &x) in acc.iter_mut().zip(v) {
                *a = math::madd::<FUSED>(wv, x, *a);
            }
        }
        block.copy_from_slice(&acc);
    }
}
