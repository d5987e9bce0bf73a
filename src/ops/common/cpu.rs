//! What the ops' CPU bodies share, one op family per folder. Work is split into chunks that
//! rayon runs in parallel (sequentially where there are no threads, as in plain wasm).
//! Elementwise math runs in f32 through the ops' own scalar definitions; reductions and
//! softmax accumulate in f64; matmul, convolution and attention use the `gemm` crate, or
//! natively for thin products `thin.rs`'s loops.

#[cfg(not(target_arch = "wasm32"))]
use super::thin;
use crate::base::layout::{Access, Layout};
use crate::ops::Operand;
use crate::{Error, Result};

/// An error unless every view lies inside the words it reads from: checked before the
/// unsafe GEMM calls, which rely on it (every tensor's view satisfies it, see
/// [`Layout::lies_within`]; this keeps a broken invariant from becoming a wild read).
pub(crate) fn check_within(op: &str, views: &[(&Layout, &[f32])]) -> Result<()> {
    for (i, (layout, memory)) in views.iter().enumerate() {
        if !layout.lies_within(memory.len()) {
            return Err(Error::Internal(format!(
                "{op} operand {i} ({layout:?}) reaches past its {} elements",
                memory.len()
            )));
        }
    }
    Ok(())
}

/// `C = scale * A @ B` for row-major `C` (`m x n`, leading dimension `ldc`) and strided `A`
/// (`m x k`) and `B` (`k x n`): natively, thin products on one thread without packing (see
/// `thin.rs`), others on the `gemm` crate. `threads > 1` splits the product itself (for
/// callers not already running in parallel).
///
/// # Safety
/// Every element the strides reach must lie inside the pointed-to memory, and `c` must reach
/// `(m - 1) * ldc + n` elements.
#[allow(clippy::too_many_arguments)]
pub(crate) unsafe fn sgemm(
    m: usize,
    n: usize,
    k: usize,
    scale: f32,
    a: *const f32,
    [a_rs, a_cs]: [isize; 2],
    b: *const f32,
    [b_rs, b_cs]: [isize; 2],
    c: *mut f32,
    ldc: usize,
    threads: usize,
) {
    // Not in wasm, where its loops would be 7.1 kB more of the download (gzipped).
    // SAFETY: the caller's.
    #[cfg(not(target_arch = "wasm32"))]
    if threads <= 1
        && unsafe { thin::product([m, n, k], scale, a, [a_rs, a_cs], b, [b_rs, b_cs], c, ldc) }
    {
        return;
    }
    #[cfg(any(not(target_arch = "wasm32"), feature = "threads"))]
    let parallelism = if threads > 1 {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    // The one-thread wasm build has no threads, and gemm there no rayon.
    #[cfg(all(target_arch = "wasm32", not(feature = "threads")))]
    let parallelism = {
        let _ = threads;
        gemm::Parallelism::None
    };
    // dst := alpha * dst + beta * lhs * rhs, with dst not read.
    gemm::gemm(
        m,
        n,
        k,
        c,
        1,
        ldc as isize,
        false,
        a,
        a_cs,
        a_rs,
        b,
        b_cs,
        b_rs,
        0.0,
        scale,
        false,
        false,
        false,
        parallelism,
    );
}

/// Initialises `gemm`'s once-computed state (its cache sizes) on this thread. Its first use
/// from two threads at once makes one of them wait, and a browser's main thread cannot wait
/// (`Atomics.wait` traps there), so the threads build calls this before its pool works.
#[cfg(all(target_arch = "wasm32", feature = "threads"))]
pub(crate) fn prepare_gemm() {
    // Past gemm's paths for small products, which do not read its cache sizes.
    const M: usize = 65;
    const K: usize = 4;
    let ones = vec![1.0f32; M * K];
    let mut out = vec![0.0f32; M * M];
    let (p, a_strides, c) = (ones.as_ptr(), [K as isize, 1], out.as_mut_ptr());
    // SAFETY: `ones` holds a row-major M x K and K x M matrix, `out` an M x M one.
    unsafe { sgemm(M, M, K, 1.0, p, a_strides, p, [M as isize, 1], c, M, 1) };
}

/// The start of an output that parallel tasks share, each writing only its own disjoint part
/// of it (which its caller's SAFETY comment shows).
#[derive(Clone, Copy)]
pub(crate) struct SharedOut<T>(pub *mut T);

// SAFETY: tasks write disjoint parts (see the type's notes).
unsafe impl<T> Send for SharedOut<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for SharedOut<T> {}

impl<T> SharedOut<T> {
    /// Element `i` (a method, so closures capture the whole `Send` wrapper).
    pub(crate) fn at(self, i: usize) -> *mut T {
        self.0.wrapping_add(i)
    }
}

/// Elements per parallel task: large enough to amortise scheduling, small enough to balance.
pub(crate) const CHUNK: usize = 1 << 15;

/// Integer element `i` of `words` as its bits: an i64 (`wide`) from its two words, a 32-bit
/// one zero-extended.
#[inline]
pub(crate) fn integer_bits(words: &[u32], i: usize, wide: bool) -> u64 {
    if wide {
        u64::from(words[2 * i]) | u64::from(words[2 * i + 1]) << 32
    } else {
        u64::from(words[i])
    }
}

/// Index `j` of `words` (`kind` 0 u32, 1 i32, 2 i64 as word pairs, low first), as the
/// gather and scatter kernels read their indices.
#[inline]
pub(crate) fn index_value(words: &[u32], kind: u32, j: usize) -> i64 {
    match kind {
        0 => i64::from(words[j]),
        1 => i64::from(words[j] as i32),
        _ => integer_bits(words, j, true) as i64,
    }
}

/// Store `bits` as one integer element in `dst` (its one or two words, low first).
#[inline]
pub(crate) fn put_integer(dst: &mut [u32], bits: u64) {
    dst[0] = bits as u32;
    if let Some(high) = dst.get_mut(1) {
        *high = (bits >> 32) as u32;
    }
}

/// The output's words (outputs are contiguous).
pub(crate) fn out_words<'g>(words: &'g mut [u32], out: &Operand<'_>) -> &'g mut [u32] {
    let start = out.layout.offset;
    &mut words[start..start + out.layout.numel()]
}

/// Offsets of a view's elements from row-major element `start` on, by the cheapest route.
pub(crate) enum Offsets<I> {
    Contiguous(std::ops::Range<usize>),
    Repeated {
        base: usize,
        period: usize,
        at: usize,
    },
    Strided(I),
}

impl<I: Iterator<Item = usize>> Iterator for Offsets<I> {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        match self {
            Offsets::Contiguous(r) => r.next(),
            Offsets::Repeated { base, period, at } => {
                let o = *base + *at;
                *at += 1;
                if *at == *period {
                    *at = 0;
                }
                Some(o)
            }
            Offsets::Strided(it) => it.next(),
        }
    }
}

/// The longest contiguous run (at most `max` elements) of a view's elements from row-major
/// element `i` on, or `None` if the view is not laid out in runs (general strides).
pub(crate) fn run_from<'a>(data: &'a [f32], l: &Layout, i: usize, max: usize) -> Option<&'a [f32]> {
    let (at, len) = match l.access() {
        Access::Contiguous => (l.offset + i, max),
        Access::Repeated { period } => (l.offset + i % period, max.min(period - i % period)),
        Access::Strided => return None,
    };
    data.get(at..at + len)
}

pub(crate) fn offsets_from(l: &Layout, start: usize) -> Offsets<impl Iterator<Item = usize> + '_> {
    match l.access() {
        Access::Contiguous => Offsets::Contiguous(l.offset + start..l.offset + l.numel()),
        Access::Repeated { period } => Offsets::Repeated {
            base: l.offset,
            period,
            at: start % period,
        },
        Access::Strided => Offsets::Strided(l.offsets_from(start)),
    }
}
