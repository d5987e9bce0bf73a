//! Direct convolution and MaxPool over input planes split by stride phase: sub-plane (r, q)
//! of a plane holds the padded input at rows `a * sh + r` and columns `i * sw + q`, so every
//! kernel tap reads the outputs' inputs as one contiguous run, padding and strides included.
//! Outputs are computed in blocks of [`LANES`], several at once, each held in registers over
//! all its taps and folded with each (a multiply-add, or a maximum): fused multiply-adds on
//! the widest x86-64 build, vectorised multiplies and adds elsewhere (wasm simd128
//! included). Wide output rows are computed in place ([`rows`]); narrow ones
//! `width` to a row, the columns past `ow` unused, and copied out ([`blocks`]).

use crate::ops::common::math::{self, x86_run, x86_twins, Twin};

use super::{place, place_inside, valid_columns, Conv2dGeometry};

/// Outputs per block: one AVX-512 register, two AVX2 ones, four SSE2 or simd128 ones.
pub(super) const LANES: usize = 16;

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

    /// Writes input `plane` (`h x w`) split into `dst` (`self.plane` words), the padding
    /// zeros. With `refill`, only the input's words: the padding keeps what `dst` holds (the
    /// zeros of an earlier split of this layout, or a fill such as MaxPool's -inf).
    pub(super) fn split(&self, plane: &[f32], dst: &mut [f32], g: &Conv2dGeometry, refill: bool) {
        let [sh, sw] = g.stride;
        for (s, sub) in dst.chunks_exact_mut(self.words).enumerate() {
            let (r, q) = (s / sw, s % sw);
            let (body, slack) = sub.split_at_mut(self.rows * self.width);
            if !refill {
                slack.fill(0.0);
            }
            // Column i holds padded column i * sw + q: the input under shift q, whose valid
            // columns are the same in every row.
            let span = valid_columns(q, self.width, g);
            for (a, row) in body.chunks_exact_mut(self.width).enumerate() {
                let iy = (a * sh + r)
                    .checked_sub(g.padding[0])
                    .filter(|&iy| iy < g.h);
                match iy {
                    Some(iy) if refill => place_inside(&plane[iy * g.w..][..g.w], span, row, sw),
                    Some(iy) => place(&plane[iy * g.w..][..g.w], span, 0, row, sw),
                    None if refill => {}
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

/// Narrowest output rows computed in place ([`rows`]): the cut of a row's last block wastes
/// at most a third of the lanes the row computes; narrower rows go flat ([`blocks`]) and
/// are copied out.
const ROW_MIN: usize = 24;

/// Whether [`channel`] computes output rows of `ow` in place, without flat outputs.
pub(super) fn by_rows(ow: usize) -> bool {
    ow >= ROW_MIN
}

/// One output channel's plane `out`, in rows of `ow`: position (y, x) is `init` folded, over
/// `taps`, with each tap's weight and `split[at + y * width + x]` (`f(acc, weight, input)`:
/// a multiply-add for convolutions, a maximum for pooling). Rows of [`ROW_MIN`] or more are
/// computed in place ([`rows`]); narrower ones in `flat` ([`blocks`]; unused, and may be
/// empty, where [`by_rows`]) and copied out.
pub(super) fn channel<P: Fold, F: Fold>(
    split: &[f32],
    taps: &[(usize, f32)],
    init: f32,
    [width, ow]: [usize; 2],
    [flat, out]: [&mut [f32]; 2],
    f: Twin<P, F>,
) {
    if by_rows(ow) {
        return rows(split, taps, init, [width, ow], out, f);
    }
    blocks(split, taps, init, flat, f);
    for (row, from) in out.chunks_mut(ow).zip(flat.chunks(width)) {
        row.copy_from_slice(&from[..ow]);
    }
}

/// How a tap's weight and input join a sum: `f(acc, weight, input)`.
pub(super) trait Fold: Fn(f32, f32, f32) -> f32 + Copy {}
impl<T: Fn(f32, f32, f32) -> f32 + Copy> Fold for T {}

/// A convolution's fold: `acc + weight * input`, fused where built for FMA.
pub(super) fn multiply_add() -> Twin<impl Fold, impl Fold> {
    math::twin!(F => |a: f32, w: f32, x: f32| math::madd::<F>(w, x, a))
}

/// One output channel's flat outputs `out` (a multiple of `LANES` long): position `f` is
/// `init` folded over `taps` with `split[at + f]`.
fn blocks<P: Fold, F: Fold>(
    split: &[f32],
    taps: &[(usize, f32)],
    init: f32,
    out: &mut [f32],
    f: Twin<P, F>,
) {
    x86_run!(blocks_fused(split, taps, init, out, f.fused));
    blocks_any(split, taps, init, out, f.plain);
}

/// [`channel`]'s rows computed in place. A row's last block, where `ow` is not a multiple of
/// `LANES`, is computed whole and cut (its reads stay in the sub-plane's slack).
fn rows<P: Fold, F: Fold>(
    split: &[f32],
    taps: &[(usize, f32)],
    init: f32,
    sizes: [usize; 2],
    out: &mut [f32],
    f: Twin<P, F>,
) {
    x86_run!(rows_fused(split, taps, init, sizes, out, f.fused));
    rows_any(split, taps, init, sizes, out, f.plain);
}

x86_twins! {
    /// [`blocks`] built for AVX2 and AVX-512.
    fn blocks_fused(
        split: &[f32],
        taps: &[(usize, f32)],
        init: f32,
        out: &mut [f32],
        f: impl Fold,
    ) {
        blocks_any(split, taps, init, out, f);
    }
}

x86_twins! {
    /// [`rows`] built for AVX2 and AVX-512.
    fn rows_fused(
        split: &[f32],
        taps: &[(usize, f32)],
        init: f32,
        sizes: [usize; 2],
        out: &mut [f32],
        f: impl Fold,
    ) {
        rows_any(split, taps, init, sizes, out, f);
    }
}

/// Blocks computed at once: independent sums, so that the multiply-adds of one tap overlap
/// rather than wait for each other.
const AT_ONCE: usize = 4;

/// The loop of [`blocks`], `AT_ONCE` neighbouring blocks at a time.
#[inline(always)]
fn blocks_any(split: &[f32], taps: &[(usize, f32)], init: f32, out: &mut [f32], f: impl Fold) {
    let at = out.len() / (AT_ONCE * LANES) * AT_ONCE * LANES;
    let mut groups = out.chunks_exact_mut(AT_ONCE * LANES);
    for (i, group) in groups.by_ref().enumerate() {
        let sums = block_sums::<AT_ONCE>(split, taps, init, [i * AT_ONCE * LANES, LANES], f);
        for (block, sum) in group.chunks_exact_mut(LANES).zip(&sums) {
            block.copy_from_slice(sum);
        }
    }
    for (b, block) in groups.into_remainder().chunks_exact_mut(LANES).enumerate() {
        let [sum] = block_sums::<1>(split, taps, init, [at + b * LANES, LANES], f);
        block.copy_from_slice(&sum);
    }
}

/// The loop of [`rows`], `AT_ONCE` rows at a time.
#[inline(always)]
fn rows_any(
    split: &[f32],
    taps: &[(usize, f32)],
    init: f32,
    [width, ow]: [usize; 2],
    out: &mut [f32],
    f: impl Fold,
) {
    let first = out.len() / ow / AT_ONCE * AT_ONCE;
    let mut groups = out.chunks_exact_mut(AT_ONCE * ow);
    for (i, group) in groups.by_ref().enumerate() {
        row_group::<AT_ONCE>(split, taps, init, [width, ow], i * AT_ONCE, group, f);
    }
    for (i, row) in groups.into_remainder().chunks_exact_mut(ow).enumerate() {
        row_group::<1>(split, taps, init, [width, ow], first + i, row, f);
    }
}

/// Output rows `y..y + R` (`rows`, `R x ow`) of [`rows`], block by block across them.
#[inline(always)]
fn row_group<const R: usize>(
    split: &[f32],
    taps: &[(usize, f32)],
    init: f32,
    [width, ow]: [usize; 2],
    y: usize,
    rows: &mut [f32],
    f: impl Fold,
) {
    let whole = ow / LANES * LANES;
    for x in (0..whole).step_by(LANES) {
        let sums = block_sums::<R>(split, taps, init, [y * width + x, width], f);
        for (row, sum) in rows.chunks_exact_mut(ow).zip(&sums) {
            row[x..][..LANES].copy_from_slice(sum);
        }
    }
    if whole < ow {
        // A row's last block, cut.
        let sums = block_sums::<R>(split, taps, init, [y * width + whole, width], f);
        for (row, sum) in rows.chunks_exact_mut(ow).zip(&sums) {
            row[whole..].copy_from_slice(&sum[..ow - whole]);
        }
    }
}

/// `R` blocks of `LANES` outputs, the `i`-th from flat position `f + i * step`: `init`
/// folded, over `taps`, with the tap's weight and `split[at + ..]`, held in registers.
#[inline(always)]
fn block_sums<const R: usize>(
    split: &[f32],
    taps: &[(usize, f32)],
    init: f32,
    [f, step]: [usize; 2],
    fold: impl Fold,
) -> [[f32; LANES]; R] {
    let mut acc = [[init; LANES]; R];
    for &(at, wv) in taps {
        for (i, acc) in acc.iter_mut().enumerate() {
            let v = &split[at + f + i * step..][..LANES];
            for (a, &x) in acc.iter_mut().zip(v) {
                *a = fold(*a, wv, x);
            }
        }
    }
    acc
}
