//! 2-D convolution as im2col + GEMM per image and group (images in parallel, or the GEMM
//! split across threads when images are few), or directly over input planes split by stride
//! phase (see `phases`): dense ones in register tiles of channels (see `dense`), depthwise
//! ones plane by plane;
//! its transpose (output rows in parallel, each gathering the input rows that land on it),
//! and 2-D pooling (channel planes in parallel).

#[cfg(target_arch = "x86_64")]
mod dense;
mod phases;

use crate::base::par::{self, *};

use phases::Phases;

use super::{Conv2d, Conv2dGeometry, Pool2d};
use crate::hal::cpu::{read_guard, write_guard};
use crate::ops::common::cpu::{out_words, sgemm, SharedOut, CHUNK};
use crate::ops::common::math;
use crate::ops::elementwise::with_unary;
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

/// Widest column tile of one GEMM task, so that its `rows x tile` output is still in cache
/// for the epilogue.
const COL_TILE: usize = 512;

/// Most elements of the im2col tile one task gathers (1 MiB): small enough that the tile is
/// still in the core's L2 cache when the GEMM reads it.
const GATHER_TILE: usize = 1 << 18;

/// Fewest multiply-adds worth splitting one GEMM over the threads, and fewest im2col
/// elements worth a task of their own: below them, handing work to the pool costs more
/// than it saves (Silero VAD's convolutions are a few thousand of each).
const SPLIT_MIN: usize = 48 * 48 * 256;
const GATHER_MIN: usize = 1 << 14;

/// Most elements of an im2col matrix gathered whole and shared by the tasks (16 MiB).
const SHARED_MAX: usize = 1 << 22;

/// Most output positions of a convolution whose product gathers each position's patch as a
/// row (`Gemm::patches`): so few make the product thin (`common::thin` when it is built), which
/// reads such rows where they lie. The im2col matrix would cost a row of divisions and
/// copies per kernel tap of each input channel: Silero VAD's convolutions, of 1 to 4
/// positions, spent as long gathering it as multiplying.
const PATCHES_MAX: usize = 8;

thread_local! {
    /// The im2col tile of the convolution tasks this thread runs, kept between runs (taken
    /// out while in use, so a task stolen meanwhile gets its own).
    static COLUMNS: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

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
    // The same columns are valid in every output row.
    let span = valid_columns(kx * g.dilation[1], g.ow, g);
    let mut p = positions.start;
    while p < positions.end {
        let (oy, ox0) = (p / g.ow, p % g.ow);
        let ox1 = g.ow.min(ox0 + (positions.end - p));
        let (run, rest) = dst.split_at_mut(ox1 - ox0);
        match input_index(oy, ky, g.stride[0], g.dilation[0], g.padding[0], g.h) {
            Some(iy) => place(&plane[iy * g.w..][..g.w], span, ox0, run, g.stride[1]),
            None => run.fill(0.0),
        }
        (dst, p) = (rest, p + (ox1 - ox0));
    }
}

/// The patch of output position `p` (`cg x kh x kw`, the weights' order) from one group's
/// `planes` into `row`: the input under each kernel tap, 0 in the padding.
fn patch(planes: &[f32], p: usize, row: &mut [f32], g: &Conv2dGeometry) {
    let (oy, ox) = (p / g.ow, p % g.ow);
    for (r, taps) in row.chunks_exact_mut(g.kw.max(1)).enumerate() {
        let (ci, ky) = (r / g.kh, r % g.kh);
        let Some(iy) = input_index(oy, ky, g.stride[0], g.dilation[0], g.padding[0], g.h) else {
            taps.fill(0.0);
            continue;
        };
        let in_row = &planes[(ci * g.h + iy) * g.w..][..g.w];
        for (kx, v) in taps.iter_mut().enumerate() {
            let ix = input_index(ox, kx, g.stride[1], g.dilation[1], g.padding[1], g.w);
            *v = ix.map_or(0.0, |ix| in_row[ix]);
        }
    }
}

/// The output columns `[lo, hi)` of a row of `len` whose input column, `shift` past the
/// kernel's first (`kx * dilation` for kernel column `kx`), lies in the input row, and the
/// input column of `lo`.
fn valid_columns(shift: usize, len: usize, g: &Conv2dGeometry) -> (usize, usize, usize) {
    let (s, pad) = (g.stride[1], g.padding[1]);
    // ix = ox * s + shift - pad lies in [0, w) for ox in [lo, hi).
    let lo = pad.saturating_sub(shift).div_ceil(s).min(len);
    let hi = (g.w + pad).saturating_sub(shift).div_ceil(s).clamp(lo, len);
    (lo, hi, (lo * s + shift).saturating_sub(pad))
}

/// Output columns `ox0..ox0 + run.len()` of one output row under a kernel column whose valid
/// columns are `span` (`valid_columns`' answer), read from input row `in_row` with column
/// stride `stride`, 0 in the padding.
fn place(
    in_row: &[f32],
    (first, hi, first_ix): (usize, usize, usize),
    ox0: usize,
    run: &mut [f32],
    stride: usize,
) {
    let hi = hi.clamp(ox0, ox0 + run.len());
    let lo = first.clamp(ox0, hi);
    run[..lo - ox0].fill(0.0);
    run[hi - ox0..].fill(0.0);
    let inside = &mut run[lo - ox0..hi - ox0];
    if !inside.is_empty() {
        // Not empty, so `first` <= `lo` (`first` past the run would leave it empty).
        copy_taps(in_row, first_ix + (lo - first) * stride, inside, stride);
    }
}

/// [`place`] of a whole output row (`ox0` 0) without its zeros: only the columns whose input
/// lies in the row.
fn place_inside(in_row: &[f32], span: (usize, usize, usize), run: &mut [f32], stride: usize) {
    let (first, hi, first_ix) = span;
    let hi = hi.min(run.len());
    copy_taps(in_row, first_ix, &mut run[first.min(hi)..hi], stride);
}

/// `inside[j] = in_row[ix + j * stride]`: the taps of one output run whose inputs all lie in
/// the row (`ix` is read only where `inside` is not empty).
fn copy_taps(in_row: &[f32], ix: usize, inside: &mut [f32], stride: usize) {
    if inside.is_empty() {
        return;
    }
    if stride == 1 {
        inside.copy_from_slice(&in_row[ix..ix + inside.len()]);
    } else if stride == 2 {
        // In pairs, so that the loop vectorises as shuffles; the last tap may have no pair.
        let pairs = in_row[ix..].chunks_exact(2);
        let n = pairs.len().min(inside.len());
        for (o, pair) in inside.iter_mut().zip(pairs) {
            *o = pair[0];
        }
        if let Some(o) = inside.get_mut(n) {
            *o = in_row[ix + 2 * n];
        }
    } else {
        let taps = in_row[ix..].iter().step_by(stride);
        inside.iter_mut().zip(taps).for_each(|(o, &v)| *o = v);
    }
}

/// `o = f(o, v)` for each output `o` of `row` and the input `v` under the column `shift` past
/// the kernel's first (outputs whose tap lies in the padding are left).
#[inline(always)]
fn tap_fold(
    in_row: &[f32],
    shift: usize,
    row: &mut [f32],
    g: &Conv2dGeometry,
    f: impl Fn(f32, f32) -> f32 + Copy,
) {
    let (lo, hi, ix) = valid_columns(shift, row.len(), g);
    let outs = &mut row[lo..hi];
    if outs.is_empty() {
        return;
    }
    if g.stride[1] == 1 {
        let len = outs.len();
        math::fold_into(outs, &in_row[ix..ix + len], f);
    } else {
        let taps = in_row[ix..].iter().step_by(g.stride[1]);
        outs.iter_mut().zip(taps).for_each(|(o, &v)| *o = f(*o, v));
    }
}

/// The output of one (image, group) as `og x cols` row-major, shared by the tasks that write
/// its disjoint tiles (see `Gemm::tiles`).
type Columns = SharedOut<f32>;

/// How one `rows x cols` GEMM splits into tasks, `[rows, columns]` of each: one task per
/// image when images are as many as threads, else about two per thread, the longer side
/// halved first. Columns go in tiles of at most `COL_TILE`, as many as a multiple of the
/// threads. Products of fewer than `SPLIT_MIN` multiply-adds (`k` each) stay one task.
fn tiles(rows: usize, cols: usize, k: usize, images: usize) -> [usize; 2] {
    let threads = current_num_threads();
    let mut tasks = wanted_tasks(rows * cols * k, images);
    let [mut height, mut width] = [rows.max(1), cols.max(1)];
    while tasks > 1 {
        if width >= height.max(32) {
            width = width.div_ceil(2).next_multiple_of(16);
        } else if height >= 16 {
            height = height.div_ceil(2).next_multiple_of(8);
        } else {
            break;
        }
        tasks /= 2;
    }
    if width > COL_TILE && rows * cols * k >= SPLIT_MIN {
        let count = cols.div_ceil(COL_TILE).next_multiple_of(threads);
        width = cols.div_ceil(count).next_multiple_of(16);
    }
    [height.min(rows.max(1)), width.min(cols.max(1))]
}

/// Tasks one product of `macs` multiply-adds wants: one per image when images are as many as
/// threads, one for products under `SPLIT_MIN`, else two per thread.
fn wanted_tasks(macs: usize, images: usize) -> usize {
    let threads = current_num_threads();
    if images >= threads || macs < SPLIT_MIN {
        1
    } else {
        2 * threads
    }
}

/// Whether the tasks of a product gather their own im2col columns: when its columns alone
/// split into the tasks it wants, each at least 64 wide (narrower tiles leave `gemm`'s
/// widest kernel part empty). Else tiles of rows would gather the same columns again
/// (ResNet-50's last layers: 49 columns, `k` 4,608), so one im2col matrix is gathered
/// first, in parallel, and shared, unless it would pass `SHARED_MAX` elements.
fn gathers_per_task(rows: usize, cols: usize, k: usize, images: usize) -> bool {
    cols.div_ceil(wanted_tasks(rows * cols * k, images)) >= 64 || k * cols > SHARED_MAX
}

/// The column tiles of a product whose tasks gather their own im2col columns (see
/// [`gathers_per_task`]): of about equal width (whole vectors of 16), at most
/// `gathered_width`, as many as a multiple of the threads; one tile where one task is wanted
/// and the columns fit in it.
fn gathered_tiles(rows: usize, cols: usize, k: usize, images: usize) -> [usize; 2] {
    let want = wanted_tasks(rows * cols * k, images);
    let needed = cols.div_ceil(gathered_width(k));
    let count = if want == 1 && needed <= 1 {
        1
    } else {
        needed.max(want).next_multiple_of(current_num_threads())
    };
    [
        rows.max(1),
        cols.div_ceil(count)
            .next_multiple_of(16)
            .clamp(1, cols.max(1)),
    ]
}

/// Widest column tile whose im2col columns (`k` each) one task gathers: as many whole blocks
/// of 64 columns (the widest of `gemm`'s kernels) as fit in `GATHER_TILE` elements, at least
/// one, at most `COL_TILE` columns.
fn gathered_width(k: usize) -> usize {
    (GATHER_TILE / k.max(1) / 64 * 64).clamp(64, COL_TILE)
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
    let g = op.geometry;
    if op.transposed {
        conv_transpose2d(op, words);
    } else if g.groups > 1 && g.c == g.groups {
        depthwise(op, words);
    } else {
        direct(op, words);
    }
    Ok(())
}

/// A convolution with one input channel per group (depthwise), input planes in parallel
/// (several to a task where they are small): each plane is split by stride phase (see
/// `phases`) into a buffer whose padding stays zero (only the input's words are written
/// again), then each of its output channels computed in vectorised blocks that start at the
/// bias and add every tap; the task's outputs are then activated at once. (The GEMM path
/// would run one GEMM of a single row per group: MobileNetV2's 960-group layers took 10 ms.)
fn depthwise(op: &Conv2d<'_>, words: Words<'_>) {
    let g = op.geometry;
    let Some(p) = Phases::new(&g) else {
        return depthwise_rows(op, words);
    };
    let Words { x, w, bias, out } = words;
    let (act, og, cols) = (op.act, (g.o / g.groups).max(1), (g.oh * g.ow).max(1));
    let tasks = 4 * current_num_threads();
    let per_task = (CHUNK / (og * cols)).clamp(1, (g.n * g.c).div_ceil(tasks).max(1));
    // The split plane, then the flat outputs where rows are not computed in place.
    let len = p.plane + if phases::by_rows(g.ow) { 0 } else { p.flat };
    let offsets: Vec<usize> = (0..g.kh * g.kw)
        .map(|tap| p.offset(tap / g.kw, tap % g.kw, &g))
        .collect();
    let init = || (vec![0.0; len], Vec::with_capacity(g.kh * g.kw));
    (out.par_chunks_mut(og * cols * per_task).enumerate()).for_each_init(
        init,
        |(buf, taps), (t, outs)| {
            let (split, flat) = buf.split_at_mut(p.plane);
            for (i, planes) in outs.chunks_mut(og * cols).enumerate() {
                let at = (t * per_task + i) * g.h * g.w;
                p.split(&x[at..][..g.h * g.w], split, &g, true);
                let ic = (t * per_task + i) % g.c;
                for (j, plane) in planes.chunks_mut(cols).enumerate() {
                    let oc = ic * og + j;
                    let kernel = &w[oc * g.kh * g.kw..][..g.kh * g.kw];
                    taps.clear();
                    taps.extend(offsets.iter().copied().zip(kernel.iter().copied()));
                    let b = bias.map_or(0.0, |b| b[oc]);
                    let sizes = [p.width, g.ow];
                    let fold = phases::multiply_add();
                    phases::channel(split, taps, b, sizes, [&mut *flat, plane], fold);
                }
            }
            if act.is_some() {
                finish(outs, 0.0, act);
            }
        },
    );
}

/// A depthwise convolution whose split planes would be too large (see `Phases::new`): each
/// output row starts at its bias and adds each tap's weight times the input row under it.
fn depthwise_rows(op: &Conv2d<'_>, words: Words<'_>) {
    let (act, g) = (op.act, op.geometry);
    let Words { x, w, bias, out } = words;
    let (og, taps, cols) = (g.o / g.groups, g.kh * g.kw, (g.oh * g.ow).max(1));
    par::chunks_mut(out, cols, |p, plane| {
        let (nb, oc) = (p / g.o, p % g.o);
        let input = &x[(nb * g.c + oc / og) * g.h * g.w..][..g.h * g.w];
        let weights = &w[oc * taps..][..taps];
        let b = bias.map_or(0.0, |b| b[oc]);
        for (oy, out_row) in plane.chunks_mut(g.ow.max(1)).enumerate() {
            out_row.fill(b);
            for ky in 0..g.kh {
                let at = input_index(oy, ky, g.stride[0], g.dilation[0], g.padding[0], g.h);
                let Some(iy) = at else { continue };
                let in_row = &input[iy * g.w..][..g.w];
                for kx in 0..g.kw {
                    let (wv, shift) = (weights[ky * g.kw + kx], kx * g.dilation[1]);
                    tap_fold(in_row, shift, out_row, &g, |o, v| o + wv * v);
                }
            }
        }
        if act.is_some() {
            finish(plane, 0.0, act);
        }
    });
}

/// A convolution as the weight times the input's im2col matrix, per image (in parallel) and
/// group: directly over split planes where `dense` takes it (x86-64 with AVX2), else a 1 x 1
/// convolution of unit stride and no padding reads its input as that matrix, and others
/// gather it tile by tile, each task its own (see `Gemm::tiles`).
fn direct(op: &Conv2d<'_>, words: Words<'_>) {
    let g = op.geometry;
    let Words { x, w, bias, out } = words;
    let (cg, og) = (g.c / g.groups, g.o / g.groups);
    let (k, cols) = (cg * g.kh * g.kw, g.oh * g.ow);
    let pointwise = g.kh == 1 && g.kw == 1 && g.stride == [1, 1] && g.padding == [0, 0];
    // Not `op` in the closure: in wasm its buffers are not `Sync`.
    let act = op.act;
    par::chunks_mut(out, (g.o * cols).max(1), |nb, image| {
        for grp in 0..g.groups {
            let planes = &x[(nb * g.c + grp * cg) * g.h * g.w..][..cg * g.h * g.w];
            let a = &w[grp * og * k..(grp + 1) * og * k];
            let c = SharedOut(image[grp * og * cols..(grp + 1) * og * cols].as_mut_ptr());
            let bias = bias.map(|b| &b[grp * og..(grp + 1) * og]);
            #[cfg(target_arch = "x86_64")]
            if let Some(d) = dense::Dense::new(&g, a, bias, act) {
                d.run(planes, c, g.n);
                continue;
            }
            let gemm = Gemm {
                a,
                og,
                k,
                bias,
                act,
                c,
                ldc: cols,
                images: g.n,
            };
            if pointwise {
                gemm.tiles(Source::Matrix(planes));
            } else if cols <= PATCHES_MAX {
                gemm.patches(planes, &g);
            } else if gathers_per_task(og, cols, k, g.n) {
                gemm.tiles(Source::Planes(planes, &g));
            } else {
                gemm.shared(planes, &g);
            }
        }
    });
}

/// The `k x ldc` right operand of one group's product: a matrix (a pointwise convolution's
/// input, or an im2col matrix gathered whole, see `Gemm::shared`), its transpose (each
/// output position's patch a row, see `Gemm::patches`), or the planes whose im2col columns
/// each task gathers for its own tile.
#[derive(Clone, Copy)]
enum Source<'a> {
    Matrix(&'a [f32]),
    Patches(&'a [f32]),
    Planes(&'a [f32], &'a Conv2dGeometry),
}

/// One group's product: `c = act(a b + bias)` for `a` of `og x k`, into the `og x ldc`
/// output `c`.
struct Gemm<'a> {
    a: &'a [f32],
    og: usize,
    k: usize,
    bias: Option<&'a [f32]>,
    act: Option<UnaryOp>,
    c: Columns,
    ldc: usize,
    images: usize,
}

impl Gemm<'_> {
    /// The product of `a` by `b`, in tiles of rows and columns in parallel, each a
    /// single-thread GEMM followed by its epilogue while the tile is in cache.
    fn tiles(&self, b: Source<'_>) {
        let (og, n, k) = (self.og, self.ldc, self.k);
        let [height, width] = match b {
            Source::Matrix(_) | Source::Patches(_) => tiles(og, n, k, self.images),
            Source::Planes(..) => gathered_tiles(og, n, k, self.images),
        };
        let across = n.div_ceil(width);
        par::tasks(og.div_ceil(height) * across, |t| {
            let (r0, c0) = (t / across * height, t % across * width);
            let (rows, w) = (height.min(og - r0), width.min(n - c0));
            match b {
                Source::Matrix(b) => self.tile([r0, rows], [c0, w], &b[c0..], [n, 1]),
                Source::Patches(b) => self.tile([r0, rows], [c0, w], &b[c0 * k..], [1, k]),
                Source::Planes(planes, g) => {
                    let mut col = COLUMNS.take();
                    col.resize(k * w, 0.0);
                    for (r, row) in col.chunks_mut(w).enumerate() {
                        im2col_row(planes, r, c0..c0 + w, row, g);
                    }
                    self.tile([r0, rows], [c0, w], &col, [w, 1]);
                    COLUMNS.set(col);
                }
            }
        });
    }

    /// The product with `b` the im2col matrix of `planes`, gathered first (rows in tasks of
    /// at least `GATHER_MIN` elements) into this thread's buffer.
    fn shared(&self, planes: &[f32], g: &Conv2dGeometry) {
        let (k, cols) = (self.k, self.ldc);
        let mut col = COLUMNS.take();
        col.resize(k * cols, 0.0);
        let per = GATHER_MIN.div_ceil(cols.max(1)).min(k).max(1);
        par::chunks_mut(&mut col, per * cols, |t, dst| {
            for (r, row) in dst.chunks_mut(cols.max(1)).enumerate() {
                im2col_row(planes, t * per + r, 0..cols, row, g);
            }
        });
        self.tiles(Source::Matrix(&col));
        COLUMNS.set(col);
    }

    /// The product with `b` the transposed im2col matrix of `planes`: each output
    /// position's patch (`k` inputs, in the order of the weights' rows) a row, gathered on
    /// this thread into its buffer.
    fn patches(&self, planes: &[f32], g: &Conv2dGeometry) {
        let mut rows = COLUMNS.take();
        rows.resize(self.k * self.ldc, 0.0);
        for (p, row) in rows.chunks_exact_mut(self.k.max(1)).enumerate() {
            patch(planes, p, row, g);
        }
        self.tiles(Source::Patches(&rows));
        COLUMNS.set(rows);
    }

    /// Output rows `r0..r0 + rows` and columns `c0..c0 + w` from `b`, whose element at row
    /// `p` and column `c0 + j` lies at `p * rs + j * cs`, then their epilogue.
    fn tile(&self, [r0, rows]: [usize; 2], [c0, w]: [usize; 2], b: &[f32], [rs, cs]: [usize; 2]) {
        let k = self.k;
        let reaches = k == 0 || w == 0 || b.len() > (k - 1) * rs + (w - 1) * cs;
        assert!(r0 + rows <= self.og && c0 + w <= self.ldc && reaches);
        // SAFETY: `a` is og x k, row-major, and `b` holds k rows by w columns at strides
        // rs, cs (asserted); rows r0.. and columns c0.. of the og x ldc output are this
        // task's alone.
        unsafe {
            sgemm(
                rows,
                w,
                k,
                1.0,
                self.a.as_ptr().add(r0 * k),
                [k as isize, 1],
                b.as_ptr(),
                [rs as isize, cs as isize],
                self.c.at(r0 * self.ldc + c0),
                self.ldc,
                1,
            )
        };
        if self.bias.is_none() && self.act.is_none() {
            return;
        }
        for r in r0..r0 + rows {
            let at = self.c.at(r * self.ldc + c0);
            // SAFETY: as above: row r, columns c0..c0 + w, are this task's.
            let row = unsafe { std::slice::from_raw_parts_mut(at, w) };
            finish(row, self.bias.map_or(0.0, |b| b[r]), self.act);
        }
    }
}

/// The epilogue of one output channel's `values`: `act(v + bias)`, vectorised.
fn finish(values: &mut [f32], bias: f32, act: Option<UnaryOp>) {
    let Some(op) = act else {
        values.iter_mut().for_each(|v| *v += bias);
        return;
    };
    with_unary!(op, |f| math::map_in_place(
        values,
        math::Twin {
            plain: |v: f32| (f.plain)(v + bias),
            fused: |v: f32| (f.fused)(v + bias),
        }
    ));
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

/// `o = f(o, v)` for each output `o` of `row` and each input `v` of `in_row` under a
/// kernel column (outputs whose tap lies in the padding are left). With a stride within the
/// row, `in_row` is first split into its stride phases in `split` (input column `ix` at
/// phase `ix % stride`, place `ix / stride`), so that each tap reads consecutive inputs
/// (vectorised).
#[inline(always)]
fn fold_taps(
    in_row: &[f32],
    split: &mut Vec<f32>,
    row: &mut [f32],
    g: &Conv2dGeometry,
    f: impl Fn(f32, f32) -> f32 + Copy,
) {
    let s = g.stride[1];
    // A stride past the row reads one column per tap: no split (its phases would be `s`
    // words, and a fuzzed stride is up to 2^62).
    if s == 1 || s > in_row.len() {
        for shift in (0..g.kw).map(|kx| kx * g.dilation[1]) {
            tap_fold(in_row, shift, row, g, f);
        }
        return;
    }
    let m = in_row.len().div_ceil(s);
    split.resize(s * m, 0.0);
    for (p, phase) in split.chunks_mut(m).enumerate() {
        let taps = in_row.iter().skip(p).step_by(s);
        phase.iter_mut().zip(taps).for_each(|(d, &v)| *d = v);
    }
    for shift in (0..g.kw).map(|kx| kx * g.dilation[1]) {
        let (lo, hi, ix) = valid_columns(shift, row.len(), g);
        if hi == lo {
            continue;
        }
        let phase = &split[ix % s * m + ix / s..][..hi - lo];
        math::fold_into(&mut row[lo..hi], phase, f);
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

/// The larger of `m` and `v`, NaN if either is. No branch returns `m` itself: a loop storing
/// `max_nan(dst, v)` to `dst` would then store only where `v` wins, which vectorises as a
/// masked store (`vmaskmovps`, microcoded on AMD's cores: MaxPool ran 3× slower).
#[inline(always)]
fn max_nan(m: f32, v: f32) -> f32 {
    if m.is_nan() || v.is_nan() {
        f32::NAN
    } else {
        m.max(v)
    }
}

/// MaxPool over planes split by stride phase (see `phases`), several planes to a task, as
/// depthwise convolutions are computed: the maximum over the taps in vectorised blocks. A
/// task's split buffer starts at -inf and each plane writes only its input words, so the
/// padding and a `ceil_mode` window's overhang never win; NaN wins. x86-64 only: in the wasm
/// it ran no faster than the row path (SqueezeNet in Node, 41 ms either way) and added 2.9 kB
/// to the gzipped download.
#[cfg(target_arch = "x86_64")]
fn max_pool(xf: &[f32], of: &mut [f32], g: &Conv2dGeometry, p: Phases) {
    let cols = (g.oh * g.ow).max(1);
    let tasks = 4 * current_num_threads();
    let per_task = (CHUNK / cols).clamp(1, (g.n * g.c).div_ceil(tasks).max(1));
    let len = p.plane + if phases::by_rows(g.ow) { 0 } else { p.flat };
    let taps: Vec<(usize, f32)> = (0..g.kh * g.kw)
        .map(|tap| (p.offset(tap / g.kw, tap % g.kw, g), 0.0))
        .collect();
    let fold = math::twin!(_F => |m: f32, _: f32, v: f32| max_nan(m, v));
    (of.par_chunks_mut(cols * per_task).enumerate()).for_each_init(
        || vec![f32::NEG_INFINITY; len],
        |buf, (t, outs)| {
            let (split, flat) = buf.split_at_mut(p.plane);
            for (i, plane) in outs.chunks_mut(cols).enumerate() {
                let at = (t * per_task + i) * g.h * g.w;
                p.split(&xf[at..][..g.h * g.w], split, g, true);
                let (sizes, init) = ([p.width, g.ow], f32::NEG_INFINITY);
                phases::channel(split, &taps, init, sizes, [&mut *flat, plane], fold);
            }
        },
    );
}

/// Pooling, channel planes in parallel (on x86-64, MaxPool over split planes where `Phases`
/// splits them, see `max_pool`): each output row first folds the input rows under the window into
/// one row (contiguous, so vectorised), then each kernel column of that row into the outputs
/// whose tap lies in the input (as depthwise convolutions do); averages then divide by their
/// count.
pub(super) fn pool2d(op: &Pool2d<'_>) -> Result<()> {
    let (code, x, out, g) = (op.code(), op.x, op.out, op.geometry);
    let xg = read_guard(x.buf)?;
    let mut os = write_guard(out.buf)?;
    let xf: &[f32] = &bytemuck::cast_slice(&xg)[x.layout.offset..];
    let of: &mut [f32] = bytemuck::cast_slice_mut(out_words(&mut os, &out));
    #[cfg(target_arch = "x86_64")]
    if let (0, Some(p)) = (code, Phases::new(&g)) {
        max_pool(xf, of, &g, p);
        return Ok(());
    }
    let init = if code == 0 { f32::NEG_INFINITY } else { 0.0 };
    of.par_chunks_mut((g.oh * g.ow).max(1))
        .enumerate()
        .for_each_init(<(Vec<f32>, Vec<f32>)>::default, |(rows, split), (p, o)| {
            let plane = &xf[p * g.h * g.w..][..g.h * g.w];
            for (oy, row) in o.chunks_mut(g.ow.max(1)).enumerate() {
                rows.clear();
                rows.resize(g.w, init);
                for ky in 0..g.kh {
                    let at = input_index(oy, ky, g.stride[0], g.dilation[0], g.padding[0], g.h);
                    let Some(iy) = at else { continue };
                    let in_row = &plane[iy * g.w..][..g.w];
                    if code == 0 {
                        math::fold_into(rows, in_row, max_nan);
                    } else {
                        math::fold_into(rows, in_row, |a, v| a + v);
                    }
                }
                row.fill(init);
                if code == 0 {
                    fold_taps(rows, split, row, &g, max_nan);
                } else {
                    fold_taps(rows, split, row, &g, |a, v| a + v);
                }
                if code != 0 {
                    let ys = [g.kh, g.stride[0], g.dilation[0]];
                    let count = pool_count(code, oy, ys, [g.padding[0], g.pad_end[0]], g.h);
                    let xs = [g.kw, g.stride[1], g.dilation[1]];
                    for (ox, v) in row.iter_mut().enumerate() {
                        let cols = pool_count(code, ox, xs, [g.padding[1], g.pad_end[1]], g.w);
                        *v /= (count * cols) as f32;
                    }
                }
            }
        });
    Ok(())
}
