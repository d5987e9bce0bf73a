//! Thin products: `C = scale * A @ B` with at most [`THIN`] rows of A or columns of B (a
//! vector times a matrix, an LSTM's gates, a convolution over a few positions), computed from
//! the operands where they lie, without the `gemm` crate's packing (which costs more than
//! such a product's arithmetic). Few columns run as the transpose, `Cᵀ = Bᵀ Aᵀ`. The few
//! rows go in groups of up to four: with the wide operand's rows contiguous, each of its rows
//! is read once and multiply-added into the group's output rows ([`axpy`]); with its columns
//! contiguous, each column is read once and dotted with the group's rows ([`dots`]). The
//! loops run in the widest x86-64 build the CPU has, plainly elsewhere. Not built for wasm
//! (7.1 kB of the download, gzipped, for a gain not measured there).

use std::cell::Cell;

use super::math::{self, x86_run, x86_twins};

/// Most rows of A (or columns of B) that make a product thin.
pub(crate) const THIN: usize = 8;

/// Rows per group: their sums fill half of AVX-512's registers.
const GROUP: usize = 4;

/// Most of k summed in registers before the sums go to the output: long sums then round
/// about as the `gemm` crate's blocked ones do.
const DEPTH: usize = 512;

/// Output columns per block of [`axpy`]: four AVX-512 registers a row.
const WIDE: usize = 64;

/// Lanes of each of [`dots`]' sums: one AVX-512 register.
const LANES: usize = 16;

/// Columns of the wide operand that [`dots`] reads at once.
const COLS: usize = 4;

thread_local! {
    /// The few rows, packed contiguous for [`dots`] when they are not, kept between products
    /// (taken out while in use).
    static PACKED: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
}

/// One product in its thin orientation: `rows` x `k` A (the few rows), `k` x `wide` B and
/// `rows` x `wide` C, each a pointer and [row, column] strides in elements; `add` when C
/// holds the sums of earlier blocks of k.
#[derive(Clone, Copy)]
struct Thin {
    rows: usize,
    wide: usize,
    k: usize,
    scale: f32,
    add: bool,
    a: (*const f32, [isize; 2]),
    b: (*const f32, [isize; 2]),
    c: (*mut f32, [isize; 2]),
}

/// `C = scale * A @ B` for row-major `C` (`m x n`, leading dimension `ldc`) and strided `A`
/// (`m x k`) and `B` (`k x n`) when the product is thin and its wide operand has unit stride
/// along one axis; false, with nothing written, when not.
///
/// # Safety
/// As [`super::cpu::sgemm`]'s.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn product(
    [m, n, k]: [usize; 3],
    scale: f32,
    a: *const f32,
    [a_rs, a_cs]: [isize; 2],
    b: *const f32,
    [b_rs, b_cs]: [isize; 2],
    c: *mut f32,
    ldc: usize,
) -> bool {
    let ldc = ldc as isize;
    let thin = if m <= THIN {
        Thin {
            rows: m,
            wide: n,
            k,
            scale,
            add: false,
            a: (a, [a_rs, a_cs]),
            b: (b, [b_rs, b_cs]),
            c: (c, [ldc, 1]),
        }
    } else if n <= THIN {
        Thin {
            rows: n,
            wide: m,
            k,
            scale,
            add: false,
            a: (b, [b_cs, b_rs]),
            b: (a, [a_cs, a_rs]),
            c: (c, [1, ldc]),
        }
    } else {
        return false;
    };
    let [b_rs, b_cs] = thin.b.1;
    if b_cs != 1 && b_rs != 1 {
        return false;
    }
    // SAFETY: the caller's.
    unsafe { blocks(thin) };
    true
}

/// Runs `t` in groups of up to [`GROUP`] rows and blocks of up to [`DEPTH`] of k, the first
/// block writing the output, the others adding to it.
///
/// # Safety
/// The views of `t` hold every element they reach.
unsafe fn blocks(t: Thin) {
    let ([a_rs, a_cs], [b_rs, b_cs], [c_rs, _]) = (t.a.1, t.b.1, t.c.1);
    for k0 in (0..t.k.max(1)).step_by(DEPTH) {
        for r0 in (0..t.rows).step_by(GROUP) {
            // SAFETY: rows r0.. and k0.. of A, rows k0.. of B and rows r0.. of C are parts
            // of the views.
            let group = unsafe {
                Thin {
                    rows: GROUP.min(t.rows - r0),
                    k: DEPTH.min(t.k - k0),
                    add: k0 > 0,
                    a: (t.a.0.offset(r0 as isize * a_rs + k0 as isize * a_cs), t.a.1),
                    b: (t.b.0.offset(k0 as isize * b_rs), t.b.1),
                    c: (t.c.0.offset(r0 as isize * c_rs), t.c.1),
                    ..t
                }
            };
            // SAFETY: the caller's.
            unsafe {
                if b_cs == 1 {
                    axpy(group);
                } else {
                    dots(group);
                }
            }
        }
    }
}

/// Stores `v` times the product's scale at `at`, or adds it there after the first block of k.
///
/// # Safety
/// `at` must be an element of the product's output.
#[inline(always)]
unsafe fn put(t: &Thin, at: *mut f32, v: f32) {
    // SAFETY: the caller's.
    unsafe {
        if t.add {
            *at += v * t.scale;
        } else {
            *at = v * t.scale;
        }
    }
}

/// Calls `$f::<FUSED, R>($t)` for the group's row count `R` (1 to [`GROUP`]).
macro_rules! by_rows {
    ($f:ident::<$fused:literal>($t:expr)) => {
        match $t.rows {
            1 => $f::<$fused, 1>($t),
            2 => $f::<$fused, 2>($t),
            3 => $f::<$fused, 3>($t),
            _ => $f::<$fused, 4>($t),
        }
    };
}

/// The group's product with B's rows contiguous: per block of [`WIDE`] output columns, each
/// row of B multiply-added into the block's sums of every row.
///
/// # Safety
/// The views of `t` hold every element they reach.
unsafe fn axpy(t: Thin) {
    x86_run!(axpy_fused(t));
    // SAFETY: the caller's.
    unsafe { by_rows!(axpy_rows::<false>(t)) }
}

x86_twins! {
    /// [`axpy`] with fused multiply-adds.
    fn axpy_fused(t: Thin) {
        // SAFETY: the caller's.
        unsafe { by_rows!(axpy_rows::<true>(t)) }
    }
}

/// [`axpy`] for `R` rows: blocks of [`WIDE`] columns, then of [`LANES`], then single ones,
/// each of a constant width, so that the compiler keeps their sums in registers.
///
/// # Safety
/// As [`axpy`]'s.
#[inline(always)]
unsafe fn axpy_rows<const FUSED: bool, const R: usize>(t: Thin) {
    let wide = t.wide - t.wide % WIDE;
    let lanes = t.wide - t.wide % LANES;
    // SAFETY: the caller's; each block's columns lie in the output.
    unsafe {
        for j0 in (0..wide).step_by(WIDE) {
            axpy_block::<FUSED, R, WIDE>(t, j0);
        }
        for j0 in (wide..lanes).step_by(LANES) {
            axpy_block::<FUSED, R, LANES>(t, j0);
        }
        for j0 in lanes..t.wide {
            axpy_block::<FUSED, R, 1>(t, j0);
        }
    }
}

/// Output columns `j0..j0 + W` of the group's `R` rows.
///
/// # Safety
/// As [`axpy`]'s, with the columns in the output.
#[inline(always)]
unsafe fn axpy_block<const FUSED: bool, const R: usize, const W: usize>(t: Thin, j0: usize) {
    let ((a, [a_rs, a_cs]), (b, [b_rs, _]), (c, [c_rs, c_cs])) = (t.a, t.b, t.c);
    let mut sums = [[0.0f32; W]; R];
    for p in 0..t.k as isize {
        // SAFETY: row p of B holds columns j0..j0 + W, contiguous.
        let row = unsafe { load::<W>(b.offset(p * b_rs + j0 as isize)) };
        for (i, sum) in sums.iter_mut().enumerate() {
            // SAFETY: (i, p) lies in the group's A.
            let x = unsafe { *a.offset(i as isize * a_rs + p * a_cs) };
            for (s, y) in sum.iter_mut().zip(row) {
                *s = math::madd::<FUSED>(x, y, *s);
            }
        }
    }
    for (i, sum) in sums.iter().enumerate() {
        for (j, &v) in sum.iter().enumerate() {
            // SAFETY: (i, j0 + j) lies in the group's output.
            unsafe {
                put(
                    &t,
                    c.offset(i as isize * c_rs + (j0 + j) as isize * c_cs),
                    v,
                )
            };
        }
    }
}

/// The sum of `s`'s lanes, halving: a few vector adds rather than a chain of scalar ones.
#[inline(always)]
fn lane_sum(mut s: [f32; LANES]) -> f32 {
    let mut half = LANES / 2;
    while half > 0 {
        for l in 0..half {
            s[l] += s[l + half];
        }
        half /= 2;
    }
    s[0]
}

/// The `N` contiguous elements at `p`, read in one go.
///
/// # Safety
/// `p` must point at `N` readable elements.
#[inline(always)]
unsafe fn load<const N: usize>(p: *const f32) -> [f32; N] {
    // SAFETY: the caller's.
    unsafe { p.cast::<[f32; N]>().read_unaligned() }
}

/// The group's product with B's columns contiguous: per [`COLS`] columns of B, their dot
/// products with each row of A (packed contiguous first if its rows are not).
///
/// # Safety
/// The views of `t` hold every element they reach.
unsafe fn dots(t: Thin) {
    let (a, [a_rs, a_cs]) = t.a;
    let mut packed = PACKED.take();
    let t = if a_cs == 1 {
        t
    } else {
        packed.clear();
        for i in 0..t.rows as isize {
            // SAFETY: (i, p) lies in the group's A.
            packed.extend((0..t.k as isize).map(|p| unsafe { *a.offset(i * a_rs + p * a_cs) }));
        }
        Thin {
            a: (packed.as_ptr(), [t.k as isize, 1]),
            ..t
        }
    };
    // SAFETY: the caller's, with A now contiguous along k.
    unsafe { dots_rows(t) };
    PACKED.set(packed);
}

/// [`dots`] on rows of A contiguous along k.
///
/// # Safety
/// As [`dots`]'.
unsafe fn dots_rows(t: Thin) {
    x86_run!(dots_fused(t));
    // SAFETY: the caller's.
    unsafe { by_rows!(dots_cols::<false>(t)) }
}

x86_twins! {
    /// [`dots_rows`] with fused multiply-adds.
    fn dots_fused(t: Thin) {
        // SAFETY: the caller's.
        unsafe { by_rows!(dots_cols::<true>(t)) }
    }
}

/// The sums, lane by lane, of `rows[i][q] * cols[j][q]` over `q` below `whole` (a multiple
/// of [`LANES`]), held in registers: returned, so that the loop stores none of them.
///
/// # Safety
/// Each row and column must hold `whole` readable elements.
#[inline(always)]
unsafe fn lane_sums<const FUSED: bool, const R: usize>(
    rows: [*const f32; R],
    cols: [*const f32; COLS],
    whole: usize,
) -> [[[f32; LANES]; COLS]; R] {
    let mut sums = [[[0.0f32; LANES]; COLS]; R];
    for q in (0..whole).step_by(LANES) {
        // SAFETY: the caller's; q + LANES <= whole.
        let ys: [[f32; LANES]; COLS] = std::array::from_fn(|j| unsafe { load(cols[j].add(q)) });
        for (sums, row) in sums.iter_mut().zip(rows) {
            // SAFETY: as above.
            let x: [f32; LANES] = unsafe { load(row.add(q)) };
            for (sum, y) in sums.iter_mut().zip(&ys) {
                for (s, (&x, &y)) in sum.iter_mut().zip(x.iter().zip(y)) {
                    *s = math::madd::<FUSED>(x, y, *s);
                }
            }
        }
    }
    sums
}

/// [`dots_rows`] for `R` rows: [`COLS`] columns of B at a time, each lane of each sum over
/// every [`LANES`]-th element of k, then the lanes and the rest of k added up.
///
/// # Safety
/// As [`dots`]'.
#[inline(always)]
unsafe fn dots_cols<const FUSED: bool, const R: usize>(t: Thin) {
    let ((a, [a_rs, _]), (b, [_, b_cs]), (c, [c_rs, c_cs])) = (t.a, t.b, t.c);
    let k = t.k;
    let whole = k - k % LANES;
    // SAFETY: row i of A lies in the group's A.
    let rows: [*const f32; R] = std::array::from_fn(|i| unsafe { a.offset(i as isize * a_rs) });
    for j0 in (0..t.wide).step_by(COLS) {
        let width = COLS.min(t.wide - j0);
        // Columns past the last repeat the group's first.
        let at = |j: usize| j0 + if j < width { j } else { 0 };
        // SAFETY: column `at(j)` of B lies in B.
        let cols: [*const f32; COLS] =
            std::array::from_fn(|j| unsafe { b.offset(at(j) as isize * b_cs) });
        // SAFETY: rows of A and columns of B hold k contiguous elements.
        let sums = unsafe { lane_sums::<FUSED, R>(rows, cols, whole) };
        for (i, (sum, row)) in sums.iter().zip(rows).enumerate() {
            for (j, (&s, col)) in sum.iter().zip(cols).enumerate().take(width) {
                // SAFETY: as above, for the rest of k.
                let rest: f32 = (whole..k)
                    .map(|p| unsafe { *row.add(p) * *col.add(p) })
                    .sum();
                let v = lane_sum(s) + rest;
                // SAFETY: (i, j0 + j) lies in the group's output.
                unsafe {
                    put(
                        &t,
                        c.offset(i as isize * c_rs + (j0 + j) as isize * c_cs),
                        v,
                    )
                };
            }
        }
    }
}
